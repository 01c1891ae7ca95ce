//! The pNFS file layout body and device address (RFC 8881 section 13.3).

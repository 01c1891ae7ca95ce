//! Callback operations and CB_COMPOUND (RFC 8881 section 20, RFC 7862 section 16).

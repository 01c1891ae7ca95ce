//! Session state machines (RFC 8881 section 2.10), sans-IO: slot tables and reply cache.

//! ONC RPC v2 messages and credentials (RFC 5531).

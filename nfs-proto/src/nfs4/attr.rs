//! Attributes: numbers, typed values and `fattr4` encoding (RFC 8881 section 5).

//! Record marking for RPC over TCP (RFC 5531 section 11).

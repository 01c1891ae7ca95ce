//! Protocol state, sans-IO: clients, sessions, leases and grace. Time is passed in (`now`),
//! connections are plain ids, and what must be written to disk comes back as values, so
//! every rule is tested without sockets or a store.

pub mod client;
pub mod grace;
pub mod lease;
pub mod session;

//! Test tools shared by every role's suites, so no test crate keeps its own copy:
//!
//! - a compound builder (SEQUENCE first, then the operations a test names);
//! - one raw NFSv4.1 test client (sessions, slots, the back channel) over any byte stream;
//! - an in-memory cluster: a metadata server and N data servers wired over in-process duplex
//!   streams, in the spirit of quinn-proto's `Pair`.
//!
//! Tests that involve more than one role (the MDS with its data servers) live in this crate's
//! `tests/`, so neither `mds` nor `data-server` depends on the other for its tests.

pub mod client;
pub mod cluster;
pub mod compound;
pub mod loopback;
pub mod ops;
pub mod prelude;

pub use client::{Client, Setup};
pub use compound::{Compound, Reply};

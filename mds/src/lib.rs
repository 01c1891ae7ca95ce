//! The metadata server (MDS): a complete NFSv4.1 server (RFC 8881) that owns the namespace and
//! all state, and (from the pNFS milestone on) hands out file layouts over the data servers.
//!
//! ```text
//!  net/ (tokio: connections, RPC records, backchannel)
//!    └─> compound/ (SEQUENCE first, current/saved filehandle, the op table)
//!          ├─> ops/ (one file per operation)
//!          ├─> state/ (clients, sessions, leases, grace, stateids, opens, locks)   sans-IO
//!          ├─> store/ (namespace, attributes, filehandles in redb; group commit)
//!          └─> pfs-core (file data)
//! ```
//!
//! State of this crate: being built (see the README); the modules below are filled in one by
//! one.
#![warn(missing_docs)]

pub mod callback;
pub mod compound;
pub mod config;
pub mod exports;
pub mod metrics;
pub mod ops;
pub mod server;
pub mod state;
pub mod store;

pub use config::Config;
pub use server::Mds;

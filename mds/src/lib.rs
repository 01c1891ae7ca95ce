//! The metadata server (MDS): a complete NFSv4.1 server (RFC 8881) that owns the namespace and
//! all state, and (from the pNFS milestone on) hands out file layouts over the data servers.
//!
//! ```text
//!  nfs-server (shared with the data servers: TCP service, COMPOUND engine, SEQUENCE and the
//!   │          reply cache, clients, sessions, leases, grace)
//!   └─> role (the MDS's hooks) ─> compound (current/saved filehandle) ─> ops/ (the op table)
//!          ├─> state/ (stateids, opens, locks, orphans)                      sans-IO
//!          ├─> store/ (namespace, attributes, filehandles in redb; group commit)
//!          ├─> pfs-core (file data of files without a stripe set)
//!          ├─> datapath (striped file data) ─> dsctl ─> data servers
//!          └─> devices (registry) ─> dsctl (control protocol) ─> data servers:
//!                dsobjects (sizes, truncates of striped files), removals (durable queue),
//!                settle (sizes of files written through layouts, across restarts)
//! ```
//!
//! State of this crate: being built (see the README); the modules below are filled in one by
//! one.
#![warn(missing_docs)]

pub mod compound;
pub mod config;
pub mod net;
pub mod ops;
pub mod pnfs;
pub mod server;
pub mod state;
pub mod store;

pub use config::Config;
/// The back channel, shared with the session layer (delegation and layout recalls use it).
pub use nfs_server::callback;
pub use server::Mds;

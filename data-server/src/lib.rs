//! The pNFS data server (RFC 8881 chapter 13, the file layout): an NFSv4.1 server for I/O
//! only. Clients reach it with the DS filehandles and the stateids their MDS gave them, and it
//! checks both alone, with keys the MDS shares with it (no round trip per I/O).
//!
//! ```text
//!  nfs-server (shared with the MDS: TCP service, COMPOUND engine, EXCHANGE_ID with
//!   │          EXCHGID4_FLAG_USE_PNFS_DS, sessions, SEQUENCE and the reply cache, leases)
//!   └─> DataServer as a Role (server.rs)
//!         └─> ops.rs: PUTFH, READ, WRITE, COMMIT, GETATTR, SECINFO_NO_NAME; the rest NOTSUPP
//!               ├─> DS filehandle check (cluster::ds_fh, MAC with the MDS's DS fh key)
//!               ├─> gate.rs: stateid check (MAC with the MDS's stateid key, epoch,
//!               │            revocations and access changes pushed by the MDS)
//!               └─> pfs-core ObjectStore: object (file id, stripe index)
//! ```
//!
//! The MDS hands a DS its [`DsKeys`] (stateid key, DS filehandle key, boot epoch), then keeps
//! it current: [`DataServer::set_keys`] after an MDS restart, [`DataServer::revoke`] to fence
//! a client or revoke its state, [`DataServer::set_access`] after an OPEN upgrade or
//! downgrade. [`control`] is where those calls come from: the control protocol's service.
//!
//! [`start()`] runs one data server of the cluster's configuration file
//! (`cluster::config`, which the MDS reads too): its object store, listeners and control
//! service, with no part of the MDS.

pub mod control;
pub mod ends;
pub mod gate;
pub mod ops;
pub mod server;
pub mod start;

pub use cluster::keys::DsKeys;
pub use gate::{Io, Revoked, StateidGate};
pub use server::{DataServer, DsCtx, DsError, DsOptions};
pub use start::{start, StartError, Started};

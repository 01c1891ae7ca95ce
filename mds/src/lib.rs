//! The metadata server (MDS): a complete NFSv4.1 server (RFC 8881, with the NFSv4.2 additions
//! of RFC 7862) that owns the namespace and all state and hands out file layouts over the
//! data servers.
//!
//! A map of the crate, by concern (a request enters at the top):
//!
//! ```text
//!  nfs-server (shared with the data servers: TCP service, COMPOUND engine, SEQUENCE and the
//!   │          reply cache, clients, sessions, leases, grace)
//!   └─> compound/   the MDS as a Role (role.rs), the per-COMPOUND context and permission
//!        │          checks (mod.rs), the exports and the pseudo file system (exports.rs)
//!        └─> ops/   one file per operation (open.rs, write.rs, layoutget.rs, ...) and the
//!             │     dispatch (mod.rs); attr, dir, fh, io, layout, space, xattr hold what
//!             │     related operations share
//!             ├─> state/  opens, locks, delegations and their recalls, layouts, orphans,
//!             │           server-side copies                                 (sans-IO tables)
//!             ├─> store/  namespace, attributes, filehandles, stripe sets, client records in
//!             │           redb; group commit
//!             ├─> pnfs/   the data servers: devices (registry), dsctl (control client),
//!             │           datapath (striped data through the MDS), dirlayout (placement),
//!             │           dsobjects and dsspace (sizes, truncates, space), fencing, notify,
//!             │           removals, settle, spacewatch
//!             └─> pfs-core  file data of files without a stripe set
//!  server/    the `Mds` itself (opening the stores, the listener, starting the tasks) and
//!             its three handles, each an `Arc` (as is the session layer's `Core`):
//!             namespace.rs (store, object store, exports, directory layouts), tables.rs
//!             (opens, layouts, copies: locked through methods; the recall deadline),
//!             pnfs.rs (devices, rings, removals, fencing, settler, space and device
//!             watches). Fields are private; services take the handles they use, work
//!             spawned for a request clones the `Arc`s it needs, and the background tasks
//!             (removals, fencing, settle, notify) hold `Weak`s of theirs, so dropping the
//!             `Mds` ends them. Outside ops/ and compound/ (the operations layer, whose
//!             context holds the server) only net/metrics.rs takes the whole server
//!  net/       the metrics endpoint
//!  config     the configuration file
//! ```
//!
//! Time: the server reads it, and waits on its protocol timers (lease reaper, recall
//! deadlines, grace, the settling rounds), only through the one clock its `Core` holds (`mds.core().now()`,
//! [`Mds::wall_time`] for the times the store records). [`Mds::open`] runs on the system's
//! clock; [`Mds::open_with`] takes another, e.g. a `nfs_server::ManualClock` in tests.
//!
//! docs/design.md walks a WRITE and an OPEN that creates through these files.

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
pub use server::{Mds, MdsOptions, MetadataStore, Namespace, Pnfs, StateTables};

//! The NFSv4.1 server machinery that the metadata server and the data servers share, so that a
//! data server has sessions, leases and exactly-once semantics from the same code as the MDS
//! (issue 5: "sessions (shared code with the MDS, not a copy)").
//!
//! ```text
//!  serve (tokio: TCP listener, the NFSv4 program, the lease reaper)
//!    ├─> auth_policy (AUTH_NONE and AUTH_SYS served; any other flavor MSG_DENIED/AUTH_ERROR)
//!    └─> compound::process (SEQUENCE first, reply cache, size limits, OP_ILLEGAL, the reply)
//!          ├─> session_ops (EXCHANGE_ID, CREATE_SESSION, DESTROY_SESSION, BIND_CONN_TO_SESSION,
//!          │                BACKCHANNEL_CTL, DESTROY_CLIENTID, RECLAIM_COMPLETE, SEQUENCE)
//!          │     └─> state/ (clients, sessions, leases, grace)                      sans-IO
//!          └─> nfs_proto's op table dispatch: the role's context as an OpHandler (one method
//!              per operation, NFS4ERR_NOTSUPP by default; a DS offers only ON_DS operations)
//!                MDS: namespace, opens, locks, I/O      DS: PUTFH, READ, WRITE, COMMIT, GETATTR
//! ```
//!
//! A server is a type implementing [`Role`]: it owns a [`Core`] (the session state behind one
//! lock, counters, identity, and the server's one [`Clock`]: every reading of the time and every
//! protocol timer of the engine and its role goes through it, so tests run leases, recalls and
//! grace on a [`ManualClock`]), runs its own operations, and answers the engine's hooks
//! (persist a confirmed client, release a removed client's state, say whether a client still
//! holds state, act when the grace period is over). [`serve_on`] runs it on a TCP listener;
//! [`StreamServer`] on byte streams handed over one by one (in-process connections in tests).
//!
//! Also here, because both roles need them: how every listener accepts connections
//! ([`accept`]: back-off on errors, a cap) and raises the descriptor limit they live under
//! ([`fd_limit`]), and what both do around the object store ([`io`]: blocking calls off the
//! async workers, the NFS status of a store error). The pNFS formats the two roles share
//! (stateids, DS filehandles, keys) are the `cluster` crate's: nothing in this machinery
//! needs them.

pub mod accept;
pub mod auth_policy;
pub mod callback;
pub mod clock;
pub mod compound;
pub mod core;
pub mod counters;
pub mod fd_limit;
pub mod io;
pub mod log_limit;
pub mod read_buffers;
pub mod refusals;
pub mod role;
pub mod serve;
pub mod session_ops;
pub mod state;
pub mod stream;

pub use crate::accept::{Acceptor, ServeLimits};
pub use crate::clock::{Clock, ManualClock, SharedClock, SystemClock};
pub use crate::core::{Core, CoreConfig, Identity, SessionState};
pub use crate::counters::Counters;
pub use crate::role::{principal_of, CompoundCtx, Role, SessionCtx, NOBODY};
pub use crate::serve::{serve_on, serve_rdma, Service};
pub use crate::stream::StreamServer;

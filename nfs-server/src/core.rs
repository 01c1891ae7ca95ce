//! What every server built on this crate holds: the client, session and grace state behind one
//! lock, the server's identity in EXCHANGE_ID, the operation counters, the connection
//! limits (per connection, and the cap, idle timeout and reply budget of the service) and the
//! rate-limited log of refusals, and the server's one [`Clock`](crate::clock::Clock). A role (MDS, DS) owns one [`Core`] and hands it out through
//! [`Role::core`](crate::Role::core).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use bytes::Bytes;
use nfs_proto::nfs4::{NfsImplId4, Nfstime4, ServerOwner4};
use nfs_proto::transport::ConnLimits;
use nfs_proto::xdr::Utf8String;
use tracing::info;

use crate::accept::ServeLimits;
use crate::clock::SharedClock;
use crate::counters::Counters;
use crate::log_limit::LogLimiter;
use crate::refusals::Refusals;
use crate::state::client::{ClientTable, ClientTableConfig};
use crate::state::grace::Grace;
use crate::state::session::{SessionLimits, SessionTable};

/// Clients, sessions and the grace period, behind one lock ([`Core::state`]).
///
/// Lock order: a role may take its own locks while holding this one (the engine calls
/// [`Role::client_has_state`](crate::Role::client_has_state) so), never the reverse.
pub struct SessionState {
    /// Client records and leases.
    pub clients: ClientTable,
    /// Sessions and their slot tables.
    pub sessions: SessionTable,
    /// The grace period after a restart (none on a data server: it keeps no state to
    /// reclaim).
    pub grace: Grace,
}

/// How a server identifies itself in EXCHANGE_ID (RFC 8881 sections 2.10.4 and 18.35.4).
///
/// Clients trunk two servers (share one client id, or one session, over their connections)
/// when scope and `so_major_id` match. Every server instance of a cluster (the MDS and each
/// data server, even on one host) therefore has an `so_major_id` of its own: were a DS to
/// answer with the MDS's, the Linux client would take it for another address of the MDS and
/// send the DS's I/O down the MDS's client (`nfs41_walk_client_list`), and two DSs sharing one
/// would have their objects mixed up.
#[derive(Clone, Debug)]
pub struct Identity {
    /// `eir_server_owner`.
    pub owner: ServerOwner4,
    /// `eir_server_scope`.
    pub scope: Bytes,
}

impl Identity {
    /// The server's implementation id (`eir_server_impl_id`).
    pub fn impl_id() -> Vec<NfsImplId4> {
        vec![NfsImplId4 {
            nii_domain: Utf8String::from("pnfs.rs"),
            nii_name: Utf8String::from(concat!("pnfs ", env!("CARGO_PKG_VERSION"))),
            nii_date: Nfstime4::default(),
        }]
    }
}

/// Everything a [`Core`] is built from.
#[derive(Clone, Debug)]
pub struct CoreConfig {
    /// The `EXCHGID4_FLAG_USE_*` role bits this server grants (RFC 8881 section 13.1).
    pub roles: u32,
    /// The lease period (RFC 8881 section 8.3). A data server's equals its MDS's: the Linux
    /// client takes the MDS's lease for its DS sessions and does not ask the DS.
    pub lease_time: Duration,
    /// The grace period after a restart, if clients of the previous boot may reclaim.
    pub grace_time: Duration,
    /// `co_ownerid`s of the clients confirmed before the restart (none: no grace period).
    pub previous_owners: Vec<Bytes>,
    /// This boot's epoch: the high 16 bits of its client ids, so that ids of an earlier boot
    /// are stale.
    pub boot_epoch: u16,
    /// The key that authenticates session ids.
    pub session_key: [u8; 32],
    /// Channel limits offered in CREATE_SESSION, and the caps on sessions.
    pub limits: SessionLimits,
    /// Most client records before a new owner's EXCHANGE_ID is refused
    /// ([`ClientTableConfig::max_clients`]).
    pub max_clients: usize,
    /// Per-connection limits of the TCP service.
    pub conn_limits: ConnLimits,
    /// The connection cap, idle timeout and reply budget of the TCP service.
    pub serve_limits: ServeLimits,
    /// The EXCHANGE_ID identity.
    pub identity: Identity,
}

/// The shared session layer of one server.
pub struct Core {
    state: Mutex<SessionState>,
    /// Operation counters.
    pub counters: Counters,
    /// Connections that carry callbacks, and back channel slots.
    pub backchannels: crate::callback::Backchannels,
    /// The EXCHANGE_ID identity.
    pub identity: Identity,
    /// Per-connection limits.
    pub conn_limits: ConnLimits,
    /// The connection cap, idle timeout and reply budget.
    pub serve_limits: ServeLimits,
    /// When this server started (for leases, grace and uptime).
    pub started: Instant,
    /// Refusals of peers, logged at a bounded rate.
    pub refusals: Refusals,
    /// Budget of log lines for EXCHANGE_ID and CREATE_SESSION refused at the caps on clients
    /// and sessions (any peer can provoke them), keyed by which cap.
    pub cap_log: LogLimiter<&'static str>,
    clock: SharedClock,
    next_conn: AtomicU64,
}

impl Core {
    /// The state of a fresh boot at `clock`'s now: no clients, and a grace period if clients
    /// of the previous boot may reclaim. Every reading of the time by the server and its role
    /// goes through `clock` ([`Core::clock`]).
    pub fn new(cfg: CoreConfig, clock: SharedClock) -> Self {
        let now = clock.now();
        if !cfg.previous_owners.is_empty() && !cfg.grace_time.is_zero() {
            info!(
                clients = cfg.previous_owners.len(),
                grace = cfg.grace_time.as_secs(),
                "grace period for reclaims"
            );
        }
        let state = SessionState {
            clients: ClientTable::new(ClientTableConfig {
                boot_epoch: cfg.boot_epoch,
                lease_time: cfg.lease_time,
                roles: cfg.roles,
                max_clients: cfg.max_clients,
            }),
            sessions: SessionTable::new(cfg.limits, cfg.session_key),
            grace: Grace::new(now, cfg.grace_time, cfg.previous_owners),
        };
        Self {
            state: Mutex::new(state),
            counters: Counters::default(),
            backchannels: Default::default(),
            identity: cfg.identity,
            conn_limits: cfg.conn_limits,
            serve_limits: cfg.serve_limits,
            started: now,
            refusals: Refusals::with_clock(clock.clone()),
            cap_log: LogLimiter::with_clock(4, Duration::from_secs(60), clock.clone()),
            clock,
            next_conn: AtomicU64::new(1),
        }
    }

    /// Locks the client, session and grace state. A panic while it was held (a bug) leaves
    /// the tables as they were at the panic; serving on is better than refusing every client.
    pub fn state(&self) -> MutexGuard<'_, SessionState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The server's clock: the one source of time of the engine and its role.
    pub fn clock(&self) -> &SharedClock {
        &self.clock
    }

    /// [`Clock::now`](crate::clock::Clock::now) of [`Core::clock`].
    pub fn now(&self) -> Instant {
        self.clock.now()
    }

    /// A fresh connection id for the network layer.
    pub fn next_conn_id(&self) -> u64 {
        self.next_conn.fetch_add(1, Ordering::Relaxed)
    }
}

//! The server: what it holds, the RPC entry point, and the TCP listener.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use nfs_proto::nfs4::{
    NfsOpnum4, NfsStat4, NFS4_PROGRAM, NFSPROC4_COMPOUND, NFSPROC4_NULL, NFS_V4,
};
use nfs_proto::rpc::AcceptStat;
use nfs_proto::transport::{
    self, CallHandler, Conn, ConnLimits, HandlerFuture, IncomingCall, Reply,
};
use pfs_core::{LocalStore, ObjectStore};
use tokio::net::TcpListener;
use tracing::{info, warn};

use crate::compound;
use crate::config::Config;
use crate::ops::session::SessionState;
use crate::state::open::StateTable;
use crate::state::stateid::StateidMinter;
use crate::store::{system_time_now, Store, StoreOptions};

/// Why the server could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// The data directory could not be made.
    #[error("data directory {0}: {1}")]
    DataDir(PathBuf, std::io::Error),
    /// The metadata store could not be opened.
    #[error("metadata store: {0}")]
    Store(#[from] crate::store::StoreError),
    /// The object store could not be opened.
    #[error("object store: {0}")]
    Objects(#[from] pfs_core::StoreError),
    /// The listening socket could not be bound.
    #[error("listen on {0}: {1}")]
    Listen(SocketAddr, std::io::Error),
}

/// Per-operation counters a user can read (`Mds::op_counts`).
#[derive(Default)]
pub struct Counters {
    ops: Mutex<BTreeMap<(u32, bool), u64>>,
    /// COMPOUNDs served.
    pub compounds: AtomicU64,
}

impl Counters {
    /// Counts one operation with its outcome.
    pub fn op(&self, op: NfsOpnum4, status: NfsStat4) {
        *self
            .ops
            .lock()
            .expect("counters")
            .entry((op.0, status.is_ok()))
            .or_default() += 1;
    }

    /// (operation, succeeded, count) for every operation seen.
    pub fn snapshot(&self) -> Vec<(NfsOpnum4, bool, u64)> {
        self.ops
            .lock()
            .expect("counters")
            .iter()
            .map(|(&(o, ok), &n)| (NfsOpnum4(o), ok, n))
            .collect()
    }

    /// How many times `op` ran (successfully or not).
    pub fn count(&self, op: NfsOpnum4) -> u64 {
        let m = self.ops.lock().expect("counters");
        m.get(&(op.0, true)).copied().unwrap_or(0) + m.get(&(op.0, false)).copied().unwrap_or(0)
    }
}

/// The metadata server.
pub struct Mds {
    /// Configuration.
    pub cfg: Config,
    /// Namespace and attributes.
    pub store: Store,
    /// File data.
    pub data: Arc<dyn ObjectStore>,
    /// Opens and locks.
    pub opens: Mutex<StateTable>,
    /// Clients, sessions, leases and grace.
    pub sessions: Mutex<SessionState>,
    /// Operation counters.
    pub counters: Counters,
    /// When this server started (for leases and grace).
    pub started: Instant,
    /// Connection ids.
    next_conn: AtomicU64,
}

impl Mds {
    /// Opens the stores under `cfg.data_dir` and builds the server state.
    pub fn open(cfg: Config) -> Result<Arc<Self>, StartError> {
        std::fs::create_dir_all(&cfg.data_dir)
            .map_err(|e| StartError::DataDir(cfg.data_dir.clone(), e))?;
        let store = Store::open(
            cfg.data_dir.join("metadata.redb"),
            &StoreOptions::default(),
            system_time_now(),
        )?;
        let data: Arc<dyn ObjectStore> = Arc::new(LocalStore::open(cfg.data_dir.join("data"))?);
        let epoch = store.boot_epoch() as u16;
        let minter = StateidMinter::new(*store.server_key(), epoch);
        let now = Instant::now();
        let sessions = SessionState::new(&cfg, &store, now);
        Ok(Arc::new(Self {
            opens: Mutex::new(StateTable::new(minter)),
            sessions: Mutex::new(sessions),
            cfg,
            store,
            data,
            counters: Counters::default(),
            started: now,
            next_conn: AtomicU64::new(1),
        }))
    }

    /// Binds the configured address and serves until the process ends.
    pub async fn serve(self: Arc<Self>) -> Result<(), StartError> {
        let addr = self.cfg.listen;
        let listener = TcpListener::bind(addr)
            .await
            .map_err(|e| StartError::Listen(addr, e))?;
        self.serve_on(listener).await;
        Ok(())
    }

    /// Serves connections accepted on `listener`.
    pub async fn serve_on(self: Arc<Self>, listener: TcpListener) {
        let limits = ConnLimits {
            max_fragment: self.cfg.limits.max_record as usize,
            max_record: self.cfg.limits.max_record as usize,
            max_in_flight: self.cfg.limits.max_slots as usize * 2,
        };
        tokio::spawn(crate::ops::session::reaper(self.clone()));
        loop {
            let (sock, peer) = match listener.accept().await {
                Ok(s) => s,
                Err(e) => {
                    warn!("accept: {e}");
                    continue;
                }
            };
            let _ = sock.set_nodelay(true);
            let local = sock.local_addr().unwrap_or(peer);
            let id = self.next_conn.fetch_add(1, Ordering::Relaxed);
            let (_conn, run) = transport::start(sock, id, peer, local, self.clone(), limits);
            tokio::spawn(async move {
                if let Err(e) = run.await {
                    info!(%peer, "connection closed: {e}");
                }
            });
        }
    }
}

impl CallHandler for Mds {
    fn handle(self: Arc<Self>, conn: Conn, call: IncomingCall) -> HandlerFuture {
        Box::pin(async move {
            if call.prog != NFS4_PROGRAM {
                return Reply::Accepted(AcceptStat::ProgUnavail);
            }
            if call.vers != NFS_V4 {
                return Reply::Accepted(AcceptStat::ProgMismatch {
                    low: NFS_V4,
                    high: NFS_V4,
                });
            }
            match call.proc_ {
                NFSPROC4_NULL => Reply::Success(Vec::new()),
                NFSPROC4_COMPOUND => {
                    self.counters.compounds.fetch_add(1, Ordering::Relaxed);
                    let header = compound::rpc_call_header_size(&call.cred, &call.verf);
                    compound::process(self.clone(), conn, call.cred, call.args, header).await
                }
                _ => Reply::Accepted(AcceptStat::ProcUnavail),
            }
        })
    }

    fn closed(&self, conn: &Conn) {
        self.sessions
            .lock()
            .expect("sessions")
            .sessions
            .connection_closed(conn.id());
    }
}

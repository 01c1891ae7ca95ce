//! The server: what it holds, the RPC entry point, and the TCP listener.

use std::collections::{BTreeMap, HashMap};
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
use crate::exports::Exports;
use crate::ops::session::SessionState;
use crate::state::open::StateTable;
use crate::state::stateid::StateidMinter;
use crate::store::{
    system_time_now, CreateSpec, Inode, NewObject, Store, StoreError, StoreOptions,
};

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
    /// The exports do not fit together, or an exported directory could not be made.
    #[error("{0}")]
    Exports(String),
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
    /// The exports and the pseudo file system joining them.
    pub exports: Exports,
    /// The file id of each export's root directory, resolved (and made, if missing) at start.
    export_roots: HashMap<u16, u64>,
    /// Times of the pseudo-fs nodes: this start (so their change attribute moves when the
    /// config may have changed).
    pseudo_time: nfs_proto::nfs4::Nfstime4,
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
    /// Connections that carry callbacks, and back channel slots.
    pub backchannels: crate::callback::Backchannels,
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
        let exports = Exports::new(&cfg.exports).map_err(|e| StartError::Exports(e.to_string()))?;
        let export_roots = make_export_dirs(&store, &exports)?;
        let epoch = store.boot_epoch() as u16;
        let minter = StateidMinter::new(*store.server_key(), epoch);
        let now = Instant::now();
        let sessions = SessionState::new(&cfg, &store, now);
        Ok(Arc::new(Self {
            opens: Mutex::new(StateTable::new(minter)),
            sessions: Mutex::new(sessions),
            cfg,
            exports,
            export_roots,
            pseudo_time: system_time_now(),
            store,
            data,
            counters: Counters::default(),
            backchannels: Default::default(),
            started: now,
            next_conn: AtomicU64::new(1),
        }))
    }

    /// The root directory of export `id` (NFS4ERR_STALE if it was removed, NFS4ERR_NOENT for
    /// an export the config does not have).
    pub fn export_root(&self, id: u16) -> Result<Inode, NfsStat4> {
        let fileid = self.export_root_fileid(id).ok_or(NfsStat4::NFS4ERR_NOENT)?;
        Ok(self.store.getattr(fileid)?)
    }

    /// The file id of export `id`'s root directory.
    pub fn export_root_fileid(&self, id: u16) -> Option<u64> {
        self.export_roots.get(&id).copied()
    }

    /// The attributes of a pseudo-fs node: a read-only directory owned by root, its link
    /// count from its subdirectories, its times this server's start.
    pub fn pseudo_inode(&self, fileid: u64) -> Option<Inode> {
        let node = self.exports.pseudo_by_fileid(fileid)?;
        let t = self.pseudo_time;
        Some(Inode {
            fileid,
            ftype: nfs_proto::nfs4::NfsFtype4::NF4DIR,
            mode: 0o555,
            uid: 0,
            gid: 0,
            nlink: 2 + self.exports.pseudo_children(node).count() as u32,
            size: 4096,
            space_used: 4096,
            atime: t,
            mtime: t,
            ctime: t,
            birth: t,
            change: (t.seconds as u64) << 30 | u64::from(t.nseconds),
            rdev: Default::default(),
            generation: 0,
            symlink: Default::default(),
            verifier: None,
            parent: 0,
        })
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

/// Resolves every export's directory in the namespace, making missing ones (and the
/// directories that junctions of other exports are grafted on, so that READDIR of the
/// covering export lists them), like `mkdir -p`. Runs the store's commits from a plain thread:
/// the server may be opened from inside an async runtime, where blocking on a commit is not
/// allowed.
fn make_export_dirs(store: &Store, exports: &Exports) -> Result<HashMap<u16, u64>, StartError> {
    let mkdir_p = |parent: u64, names: &[String]| -> Result<u64, StoreError> {
        let mut at = parent;
        for name in names {
            at = match store.lookup(at, name.as_bytes()) {
                Ok(i) => i.fileid,
                Err(StoreError::NoEnt) => {
                    let spec = CreateSpec {
                        object: NewObject::Directory,
                        mode: 0o755,
                        uid: 0,
                        gid: 0,
                    };
                    let pending = store.create(at, name.as_bytes(), spec, system_time_now());
                    std::thread::scope(|s| s.spawn(|| pending.wait()).join())
                        .map_err(|_| StoreError::Internal("mkdir thread"))??
                        .inode
                        .fileid
                }
                Err(e) => return Err(e),
            };
        }
        Ok(at)
    };
    let root = store.root()?.fileid;
    let mut roots = HashMap::new();
    for e in exports.all() {
        let fileid = mkdir_p(root, &e.path).map_err(|err| {
            StartError::Exports(format!("export {} path /{}: {err}", e.id, e.path.join("/")))
        })?;
        roots.insert(e.id, fileid);
    }
    for e in exports.all() {
        for (name, _) in exports.junctions(e.id) {
            mkdir_p(roots[&e.id], &[name.to_owned()]).map_err(|err| {
                StartError::Exports(format!("junction {name} in export {}: {err}", e.id))
            })?;
        }
    }
    Ok(roots)
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
        self.backchannels.forget(conn.id());
        self.sessions
            .lock()
            .expect("sessions")
            .sessions
            .connection_closed(conn.id());
    }
}

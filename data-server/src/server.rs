//! The data server: what it holds, its place as a [`Role`] of the shared NFSv4.1 server, and
//! the handles the control protocol uses (new keys, revocations, access changes, the object
//! store).

use std::io::Read;
use std::net::SocketAddr;
use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::Duration;

use bytes::Bytes;
use cluster::ds_fh::{DsFh, DsFhCodec};
use cluster::keys::DsKeys;
use cluster::stateid::Other;
use nfs_proto::nfs4::{Clientid4, NfsStat4, OpFlags, ServerOwner4, EXCHGID4_FLAG_USE_PNFS_DS};
use nfs_proto::rpc::Credential;
use nfs_proto::transport::{ConnLimits, Reply};
use nfs_server::clock::SharedClock;
use nfs_server::state::client::{PersistedClient, RemovedClient};
use nfs_server::state::session::SessionLimits;
use nfs_server::{CompoundCtx, Core, CoreConfig, Identity, Role, ServeLimits, SessionCtx};
use pfs_core::{LocalStore, ObjectStore};
use tokio::net::TcpListener;

use crate::ends::FileEnds;
use crate::gate::{Revoked, StateidGate};

/// How a data server runs. The cluster's topology config (listen addresses, backend, data
/// directory) is read by the binary, which builds this.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DsOptions {
    /// This data server's id in the cluster (the config's DS id). It names the server to
    /// clients (`so_major_id`) and makes its fsid.
    pub id: u32,
    /// The lease period: the MDS's. The Linux client gives its DS sessions the MDS's lease
    /// (`nfs4_init_ds_session`) and renews them at that pace, so a shorter DS lease would
    /// expire clients that did nothing wrong.
    pub lease_time: Duration,
    /// Largest RPC record accepted; a larger one closes the connection.
    pub max_record: u32,
    /// Largest READ or WRITE payload.
    pub max_io: u32,
    /// Most operations in one COMPOUND (`ca_maxoperations`).
    pub max_ops: u32,
    /// Slots per session (`ca_maxrequests`).
    pub max_slots: u32,
    /// Most client records (the config's `limits.max_clients`).
    pub max_clients: usize,
    /// Most sessions beyond each client's first (the config's `limits.max_sessions`).
    pub max_sessions: usize,
    /// The NFS service's connection cap, idle timeout and reply budget (the MDS's
    /// `limits:`); the control service takes the same.
    pub serve: ServeLimits,
    /// Every object is its whole file, at file offsets (sparse packing over the `shared`
    /// backend, where all stripes of a file are one file): an object's end is the file's,
    /// so READ says `eof` there itself. Otherwise (dense packing) the file's end comes
    /// from the MDS's hints (`crate::ends`).
    pub whole_file_objects: bool,
}

impl DsOptions {
    /// Data server `id` with the MDS's defaults (90 s lease, 4 MiB records, 1 MiB I/O, 64
    /// operations and slots, the default caps on clients and sessions, the default
    /// connection limits).
    pub fn new(id: u32) -> Self {
        Self {
            id,
            lease_time: Duration::from_secs(90),
            max_record: 4 << 20,
            max_io: 1 << 20,
            max_ops: 64,
            max_slots: 64,
            max_clients: nfs_server::state::client::DEFAULT_MAX_CLIENTS,
            max_sessions: nfs_server::state::session::DEFAULT_MAX_SESSIONS,
            serve: ServeLimits::default(),
            whole_file_objects: false,
        }
    }
}

/// Why a data server could not start.
#[derive(Debug, thiserror::Error)]
pub enum DsError {
    /// The random session key could not be read.
    #[error("reading /dev/urandom: {0}")]
    Random(std::io::Error),
    /// The object store could not be opened.
    #[error("object store: {0}")]
    Objects(#[from] pfs_core::StoreError),
    /// The listening socket could not be bound.
    #[error("listen on {0}: {1}")]
    Listen(SocketAddr, std::io::Error),
}

/// What changes when the MDS hands out new keys: the stateid checks and the filehandle key.
struct Checks {
    gate: StateidGate,
    fh: DsFhCodec,
}

/// A pNFS data server (RFC 8881 section 13.6): NFSv4.1 sessions from [`nfs_server`], and
/// PUTFH, READ, WRITE, COMMIT and GETATTR on the objects of one [`ObjectStore`].
pub struct DataServer {
    opts: DsOptions,
    core: Core,
    objects: Arc<dyn ObjectStore>,
    checks: RwLock<Checks>,
    /// Where files end, as the MDS last said (SIZE_HINT, TRUNCATE, REMOVE).
    ends: FileEnds,
}

/// A random key for this process's session ids, and a random epoch for its client ids: a DS
/// keeps no clients across restarts (a restarted DS answers its old client ids
/// STALE_CLIENTID and its old sessions BADSESSION, and the client makes new ones).
fn random_boot() -> Result<([u8; 32], u16), DsError> {
    let mut bytes = [0u8; 34];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut bytes))
        .map_err(DsError::Random)?;
    let mut key = [0u8; 32];
    key.copy_from_slice(&bytes[..32]);
    Ok((key, u16::from_be_bytes([bytes[32], bytes[33]])))
}

impl DataServer {
    /// A data server over `objects`, checking I/O with the MDS's `keys`, on the system's
    /// clock.
    pub fn new(
        opts: DsOptions,
        keys: DsKeys,
        objects: Arc<dyn ObjectStore>,
    ) -> Result<Arc<Self>, DsError> {
        Self::with_clock(opts, keys, objects, nfs_server::clock::system())
    }

    /// [`DataServer::new`] on `clock`: its leases and reaper run on that time (tests pass a
    /// [`ManualClock`](nfs_server::ManualClock)).
    pub fn with_clock(
        opts: DsOptions,
        keys: DsKeys,
        objects: Arc<dyn ObjectStore>,
        clock: SharedClock,
    ) -> Result<Arc<Self>, DsError> {
        let (session_key, epoch) = random_boot()?;
        let core = Core::new(core_config(&opts, &keys, session_key, epoch), clock);
        Ok(Arc::new(Self {
            core,
            objects,
            checks: RwLock::new(Checks {
                gate: StateidGate::new(&keys),
                fh: DsFhCodec::new(keys.fh_key),
            }),
            ends: FileEnds::default(),
            opts,
        }))
    }

    /// A data server storing its objects as files under `dir` (the `local` backend).
    pub fn open_local(
        opts: DsOptions,
        keys: DsKeys,
        dir: impl AsRef<std::path::Path>,
    ) -> Result<Arc<Self>, DsError> {
        let objects: Arc<dyn ObjectStore> = Arc::new(LocalStore::open(dir)?);
        Self::new(opts, keys, objects)
    }

    /// This server's options.
    pub fn options(&self) -> &DsOptions {
        &self.opts
    }

    /// The object store (the control protocol sizes, truncates and removes objects).
    pub fn objects(&self) -> &Arc<dyn ObjectStore> {
        &self.objects
    }

    /// The MDS restarted (or the DS learns its keys late): check with these from now on.
    /// Stateids of the MDS's old boot become `NFS4ERR_STALE_STATEID`, and the DS filehandles
    /// of its layouts `NFS4ERR_PNFS_NO_LAYOUT`.
    pub fn set_keys(&self, keys: &DsKeys) {
        let mut c = self.checks_mut();
        c.gate.set_keys(keys);
        c.fh = DsFhCodec::new(keys.fh_key);
    }

    /// Refuses the stateid `other` from now on (fencing, administrative revocation).
    pub fn revoke(&self, other: Other, why: Revoked) {
        self.checks_mut().gate.revoke(other, why);
    }

    /// Forgets a stateid the MDS freed (see [`StateidGate::forget`]).
    pub fn forget_stateid(&self, other: &Other) {
        self.checks_mut().gate.forget(other);
    }

    /// The share access of stateid `other` changed on the MDS (see
    /// [`StateidGate::set_access`]).
    pub fn set_access(&self, other: Other, access: u8) {
        self.checks_mut().gate.set_access(other, access);
    }

    /// The open and lock stateids with these counters were closed on the MDS (see
    /// [`StateidGate::close_counters`]).
    pub fn close_counters(&self, ranges: &[(u32, u32)]) {
        self.checks_mut().gate.close_counters(ranges);
    }

    /// Where files end in this server's objects, as far as it knows (see [`crate::ends`]).
    pub fn ends(&self) -> &FileEnds {
        &self.ends
    }

    /// Its NFS operations so far, by operation and status.
    pub fn counters(&self) -> &nfs_server::Counters {
        &self.core.counters
    }

    fn checks(&self) -> RwLockReadGuard<'_, Checks> {
        self.checks.read().unwrap_or_else(|e| e.into_inner())
    }

    fn checks_mut(&self) -> RwLockWriteGuard<'_, Checks> {
        self.checks.write().unwrap_or_else(|e| e.into_inner())
    }

    /// Checks the stateid of a READ or WRITE, then the layout of the object's handle (see
    /// `crate::gate`), under one lock.
    pub(crate) fn check_io(
        &self,
        fh: &DsFh,
        stateid: &nfs_proto::nfs4::Stateid4,
        io: crate::gate::Io,
    ) -> Result<(), NfsStat4> {
        self.checks().gate.check_io(stateid, io, fh)
    }

    /// Checks that a handle is of a live layout (GETATTR carries no stateid).
    pub(crate) fn check_layout(&self, fh: &DsFh) -> Result<(), NfsStat4> {
        self.checks().gate.check_layout(fh, false)
    }

    /// Checks that a COMMIT's handle is of a live RW layout (COMMIT carries no stateid).
    pub(crate) fn check_commit(&self, fh: &DsFh) -> Result<(), NfsStat4> {
        self.checks().gate.check_layout(fh, true)
    }

    /// Decodes a DS filehandle (`NFS4ERR_BADHANDLE` if it is not one of this cluster's).
    pub(crate) fn decode_fh(&self, fh: &nfs_proto::nfs4::NfsFh4) -> Result<DsFh, NfsStat4> {
        Ok(self.checks().fh.decode(fh)?)
    }

    /// Binds `addr` and serves until the task ends.
    pub async fn serve(self: Arc<Self>, addr: SocketAddr) -> Result<(), DsError> {
        let listener = TcpListener::bind(addr)
            .await
            .map_err(|e| DsError::Listen(addr, e))?;
        self.serve_on(listener).await;
        Ok(())
    }

    /// Serves connections accepted on `listener` (and expires leases) until the task ends.
    pub async fn serve_on(self: Arc<Self>, listener: TcpListener) {
        nfs_server::serve_on(self, listener).await;
    }
}

/// The session layer's settings: the DS role, the MDS's lease, no grace period (a DS keeps no
/// state a client could reclaim), a random epoch and session key, and an identity of its own.
fn core_config(opts: &DsOptions, keys: &DsKeys, session_key: [u8; 32], epoch: u16) -> CoreConfig {
    CoreConfig {
        roles: EXCHGID4_FLAG_USE_PNFS_DS,
        lease_time: opts.lease_time,
        grace_time: Duration::ZERO,
        previous_owners: Vec::new(),
        boot_epoch: epoch,
        session_key,
        limits: SessionLimits {
            max_request_size: opts.max_record,
            max_response_size: opts.max_record,
            max_operations: opts.max_ops,
            max_requests: opts.max_slots,
            max_sessions: opts.max_sessions,
            ..SessionLimits::default()
        },
        max_clients: opts.max_clients,
        conn_limits: ConnLimits {
            max_fragment: opts.max_record as usize,
            max_record: opts.max_record as usize,
            max_in_flight: opts.max_slots as usize * 2,
        },
        serve_limits: opts.serve,
        identity: identity(opts.id, keys),
    }
}

/// `so_major_id`: a MAC of the DS id under the cluster's DS filehandle key, so it is the
/// same across restarts of this DS, differs from every other DS's and from the MDS's, and
/// from the DSs of another cluster on the same host (see [`Identity`] for why it must). The
/// scope is the MDS's: one cluster, one namespace of filehandles.
fn identity(id: u32, keys: &DsKeys) -> Identity {
    let mut input = b"pnfs-rs DS server owner ".to_vec();
    input.extend_from_slice(&id.to_be_bytes());
    let mac = blake3::keyed_hash(&keys.fh_key, &input);
    Identity {
        owner: ServerOwner4 {
            so_minor_id: 0,
            so_major_id: Bytes::copy_from_slice(&mac.as_bytes()[..16]),
        },
        scope: Bytes::from_static(b"pnfs-rs"),
    }
}

/// The per-COMPOUND context of a data server: the session layer's part and the current
/// filehandle.
pub struct DsCtx {
    /// The server.
    pub ds: Arc<DataServer>,
    /// The session layer's part.
    pub session: SessionCtx,
    /// The current filehandle (set by PUTFH).
    pub fh: Option<DsFh>,
}

impl DsCtx {
    /// The current filehandle, or `NFS4ERR_NOFILEHANDLE`.
    pub fn fh(&self) -> Result<DsFh, NfsStat4> {
        self.fh.ok_or(NfsStat4::NFS4ERR_NOFILEHANDLE)
    }
}

impl CompoundCtx for DsCtx {
    fn session(&self) -> &SessionCtx {
        &self.session
    }

    fn session_mut(&mut self) -> &mut SessionCtx {
        &mut self.session
    }
}

/// The hooks do nothing: a DS holds no client state beside sessions (opens, locks and
/// layouts live on the MDS), writes no client records, and runs no grace period.
impl Role for DataServer {
    type Ctx = DsCtx;

    /// RFC 8881 section 13.6: a server that is only a data server answers anything but the
    /// data operations and the session operations with `NFS4ERR_NOTSUPP`.
    const OFFERED: OpFlags = OpFlags::ON_DS;

    fn core(&self) -> &Core {
        &self.core
    }

    fn begin(self: &Arc<Self>, session: SessionCtx, _cred: &Credential) -> Result<DsCtx, Reply> {
        Ok(DsCtx {
            ds: self.clone(),
            session,
            fh: None,
        })
    }

    fn client_has_state(&self, _clientid: Clientid4) -> bool {
        false
    }

    async fn persist_client(&self, _client: PersistedClient) -> Result<(), NfsStat4> {
        Ok(())
    }

    async fn release_client(self: &Arc<Self>, _client: &RemovedClient) {}
}

//! The data server's control service: what the MDS asks of it over the control protocol
//! (`nfs_proto::control`), applied to the object store and to the [`DataServer`]'s checks.
//!
//! ```text
//!   MDS ──REGISTER────> ControlService ──set_keys──────────> DsTarget: the DataServer's
//!       ──REVOKE──────>                ──revoke / forget───>   stateid and filehandle checks
//!       ──SET_ACCESS──>                ──set_access────────>   (StartOnRegister makes the
//!       ──OBJECT_SIZE / TRUNCATE / REMOVE ──> ObjectStore       DataServer on the first
//!       ──READ / WRITE / COMMIT ────────────> ObjectStore       REGISTER)
//!       ──ALLOCATE / DEALLOCATE / SEEK / OBJECT_SPACE ──> ObjectStore
//!       ──HEALTH──────> statfs, load, uptime
//! ```
//!
//! Every call is authenticated before anything else ([`nfs_proto::control`] module docs):
//! the MAC under the cluster secret, the MDS as caller, this data server's id and boot nonce
//! as target (but for HELLO, which tells the nonce), and a [`ReplayGuard`] against stale and
//! replayed calls; a refused call gets MSG_DENIED / AUTH_ERROR and changes nothing. The boot
//! nonce is drawn anew by every [`ControlService`], so calls captured before a restart are
//! refused after it although the replay cache starts empty. Refusals are logged at most
//! [`REFUSAL_LOG_BURST`] lines per peer address and [`REFUSAL_LOG_WINDOW`], since anyone who
//! reaches the port can cause them.
//! Arguments that do not decode get GARBAGE_ARGS, an unknown procedure PROC_UNAVAIL. Every
//! procedure is idempotent, so the MDS retries a failed call as a new call. REVOKE and
//! SET_ACCESS are applied before the reply, so the MDS answers the operation that needed
//! them only once this data server enforces them.
//!
//! READ, WRITE and COMMIT are the MDS's I/O for clients without a layout: they name an object
//! and carry no stateid (the MDS checked the client's; the call MAC shows the caller is the
//! MDS), and run on tokio's blocking pool like the NFS side's. WRITE data stays a slice of the
//! received record down to `pwritev`, READ data a buffer of its own up to the vectored write of
//! the reply.
//!
//! A data server can check no stateid before it has the MDS's keys, so `pnfs ds` starts its
//! control service first and its NFS service on the first REGISTER ([`StartOnRegister`]).

use std::collections::HashSet;
use std::fmt;
use std::io::{self, Read};
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use bytes::Bytes;
use cluster::keys::DsKeys;
use cluster::stateid::Other;
use nfs_proto::control::{
    unix_ms, BootNonce, CallStamp, ClusterKey, CtlAddr, CtlAuthError, CtlBackend, CtlCommitArgs,
    CtlCommitOk, CtlCommitRes, CtlCopyArgs, CtlCopyOk, CtlCopyRes, CtlCred, CtlDeallocateOk,
    CtlDeallocateRes, CtlDeallocated, CtlObject, CtlObjectSpace, CtlOpCount, CtlProc, CtlReadArgs,
    CtlReadOk, CtlReadRes, CtlRevokeReason, CtlSeekArgs, CtlSeekOk, CtlSeekRes, CtlSeekWhat,
    CtlSpaceArgs, CtlStat, CtlStatusRes, CtlWriteArgs, CtlWriteOk, CtlWriteRes, DsBoot, HealthOk,
    HealthRes, HelloOk, HelloRes, ObjectEnd, ObjectSizeArgs, ObjectSizeOk, ObjectSizeRes,
    ObjectSpaceArgs, ObjectSpaceOk, ObjectSpaceRes, RegisterArgs, RegisterOk, RegisterRes,
    RemoveArgs, RemoveOk, RemoveRes, ReplayGuard, RevokeArgs, SetAccessArgs, SizeHintArgs,
    TruncateArgs, MAX_CTL_COPY, MAX_CTL_IO, MAX_CTL_RECORD, MDS_NODE, PNFS_CTL_PROGRAM,
    PNFS_CTL_VERSION, REGISTER_SEAL_PURPOSE,
};
use nfs_proto::rpc::{AcceptStat, RejectedReply};
use nfs_proto::transport::{CallHandler, Conn, ConnLimits, HandlerFuture, IncomingCall, Reply};
use nfs_proto::xdr::{self, Xdr};
use nfs_server::clock::SharedClock;
use nfs_server::io::blocking;
use nfs_server::log_limit::LogLimiter;
use nfs_server::{Acceptor, ServeLimits};
use pfs_core::{Deallocated, ObjectId, ObjectStore, SeekWhat, Stability, StoreError};
use tokio::net::TcpListener;

use crate::gate::Revoked;
use crate::server::{DataServer, DsError, DsOptions};

/// What the control service changes on the NFS side of a data server.
pub trait DsTarget: Send + Sync + 'static {
    /// The MDS (re)registered: check with these keys from now on.
    fn set_keys(&self, keys: &DsKeys) -> Result<(), DsError>;
    /// Refuse `other` from now on.
    fn revoke(&self, other: Other, why: Revoked);
    /// Forget `other` (freed on the MDS: no client can show it again).
    fn forget(&self, other: &Other);
    /// The share access of `other` is now `access` (`OPEN4_SHARE_ACCESS_*` bits).
    fn set_access(&self, other: Other, access: u8);
    /// Refuse the open and lock stateids with these counters (inclusive ranges) from now
    /// on: closed or freed on the MDS.
    fn close_counters(&self, ranges: &[(u32, u32)]);
    /// Its NFS operations so far, by operation and status (for HEALTH).
    fn op_counts(&self) -> Vec<CtlOpCount>;
    /// Where files end in objects held here (SIZE_HINT). A target that answers no READ
    /// (tests) keeps nothing.
    fn learn_ends(&self, ends: &[ObjectEnd]) {
        let _ = ends;
    }
    /// These objects of `file` were truncated, as planned at change attribute `version`:
    /// where the file ends there is unknown until a newer hint.
    fn truncated(&self, file: u64, stripes: &[u32], version: u64) {
        let _ = (file, stripes, version);
    }
    /// These files were removed.
    fn removed(&self, files: &[u64]) {
        let _ = files;
    }
}

/// `counters` as HEALTH carries them.
fn op_counts_of(counters: &nfs_server::Counters) -> Vec<CtlOpCount> {
    counters
        .snapshot()
        .into_iter()
        .map(|(op, status, count)| CtlOpCount {
            op: op.0,
            status: status.0,
            count,
        })
        .collect()
}

impl DsTarget for DataServer {
    fn set_keys(&self, keys: &DsKeys) -> Result<(), DsError> {
        DataServer::set_keys(self, keys);
        Ok(())
    }

    fn revoke(&self, other: Other, why: Revoked) {
        DataServer::revoke(self, other, why);
    }

    fn forget(&self, other: &Other) {
        self.forget_stateid(other);
    }

    fn set_access(&self, other: Other, access: u8) {
        DataServer::set_access(self, other, access);
    }

    fn close_counters(&self, ranges: &[(u32, u32)]) {
        DataServer::close_counters(self, ranges);
    }

    fn op_counts(&self) -> Vec<CtlOpCount> {
        op_counts_of(self.counters())
    }

    fn learn_ends(&self, ends: &[ObjectEnd]) {
        self.ends().learn(ends);
    }

    fn truncated(&self, file: u64, stripes: &[u32], version: u64) {
        self.ends()
            .truncated(file, stripes.iter().copied(), version);
    }

    fn removed(&self, files: &[u64]) {
        for &f in files {
            self.ends().removed(f);
        }
    }
}

/// Makes the [`DataServer`] on the first REGISTER (it needs the MDS's keys to exist) and
/// hands it to `start`, which serves it (e.g. `tokio::spawn(ds.serve_on(listener))`); later
/// calls go to it.
pub struct StartOnRegister {
    opts: DsOptions,
    objects: Arc<dyn ObjectStore>,
    start: Box<dyn Fn(Arc<DataServer>) + Send + Sync>,
    ds: Mutex<Option<Arc<DataServer>>>,
    clock: SharedClock,
}

impl fmt::Debug for StartOnRegister {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StartOnRegister")
            .field("opts", &self.opts)
            .field("started", &self.data_server().is_some())
            .finish_non_exhaustive()
    }
}

impl StartOnRegister {
    /// A data server with these options over `objects`, handed to `start` once made.
    pub fn new(
        opts: DsOptions,
        objects: Arc<dyn ObjectStore>,
        start: impl Fn(Arc<DataServer>) + Send + Sync + 'static,
    ) -> Self {
        Self {
            opts,
            objects,
            start: Box::new(start),
            ds: Mutex::new(None),
            clock: nfs_server::clock::system(),
        }
    }

    /// The data server it makes runs on `clock` (tests pass a
    /// [`ManualClock`](nfs_server::ManualClock)).
    pub fn with_clock(mut self, clock: SharedClock) -> Self {
        self.clock = clock;
        self
    }

    /// The data server, once the MDS registered.
    pub fn data_server(&self) -> Option<Arc<DataServer>> {
        self.ds
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

impl DsTarget for StartOnRegister {
    fn set_keys(&self, keys: &DsKeys) -> Result<(), DsError> {
        let mut slot = self.ds.lock().unwrap_or_else(PoisonError::into_inner);
        match &*slot {
            Some(ds) => ds.set_keys(keys),
            None => {
                let ds = DataServer::with_clock(
                    self.opts.clone(),
                    keys.clone(),
                    self.objects.clone(),
                    self.clock.clone(),
                )?;
                *slot = Some(ds.clone());
                (self.start)(ds);
            }
        }
        Ok(())
    }

    // The control service refuses REVOKE and SET_ACCESS until a REGISTER succeeded, so the
    // data server exists whenever these are called.
    fn revoke(&self, other: Other, why: Revoked) {
        if let Some(ds) = self.data_server() {
            ds.revoke(other, why);
        }
    }

    fn forget(&self, other: &Other) {
        if let Some(ds) = self.data_server() {
            ds.forget_stateid(other);
        }
    }

    fn set_access(&self, other: Other, access: u8) {
        if let Some(ds) = self.data_server() {
            ds.set_access(other, access);
        }
    }

    fn close_counters(&self, ranges: &[(u32, u32)]) {
        if let Some(ds) = self.data_server() {
            ds.close_counters(ranges);
        }
    }

    fn op_counts(&self) -> Vec<CtlOpCount> {
        self.data_server()
            .map_or_else(Vec::new, |ds| op_counts_of(ds.counters()))
    }

    // Before the first REGISTER there is no data server, and the one made then knows no
    // ends: nothing to learn or forget.
    fn learn_ends(&self, ends: &[ObjectEnd]) {
        if let Some(ds) = self.data_server() {
            ds.learn_ends(ends);
        }
    }

    fn truncated(&self, file: u64, stripes: &[u32], version: u64) {
        if let Some(ds) = self.data_server() {
            DsTarget::truncated(&*ds, file, stripes, version);
        }
    }

    fn removed(&self, files: &[u64]) {
        if let Some(ds) = self.data_server() {
            DsTarget::removed(&*ds, files);
        }
    }
}

/// What a data server tells the MDS about itself and checks REGISTER against (its
/// configuration).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ControlConfig {
    /// Its id.
    pub ds_id: u32,
    /// Its lease time (the MDS's, from the shared configuration): REGISTER with another one
    /// is refused with `CTL_LEASE_MISMATCH`.
    pub lease_time: Duration,
    /// Its object store backend.
    pub backend: CtlBackend,
    /// Where clients reach its NFS service.
    pub addresses: Vec<SocketAddr>,
}

/// Source of "now" in milliseconds since 1970 (tests move it).
pub type Clock = Arc<dyn Fn() -> u64 + Send + Sync>;

/// Most log lines of refused control calls per peer address and [`REFUSAL_LOG_WINDOW`]
/// (then one line saying how many were left out): enough to diagnose a wrong secret or a
/// clock apart, too few for a hostile peer to fill the disk.
pub const REFUSAL_LOG_BURST: u32 = 5;
/// The window of [`REFUSAL_LOG_BURST`].
pub const REFUSAL_LOG_WINDOW: Duration = Duration::from_secs(60);

/// A fresh boot nonce: 16 bytes of `/dev/urandom`, so no two starts share one and nobody can
/// guess the next (a call signed for it in advance would pass).
fn random_boot_nonce() -> Result<BootNonce, DsError> {
    let mut boot = BootNonce::default();
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut boot))
        .map_err(DsError::Random)?;
    Ok(boot)
}

/// The control service of one data server: a [`CallHandler`] for connections from the MDS.
pub struct ControlService {
    cfg: ControlConfig,
    addresses: Vec<CtlAddr>,
    store: Arc<dyn ObjectStore>,
    target: Arc<dyn DsTarget>,
    key: ClusterKey,
    /// This data server's id and boot nonce: every call but HELLO must name both.
    boot: DsBoot,
    guard: Mutex<ReplayGuard>,
    /// Budget of log lines for refused calls, per peer address.
    refusals: LogLimiter<IpAddr>,
    /// The epoch of the MDS's last successful REGISTER.
    registered: Mutex<Option<u16>>,
    boot_verifier: [u8; 8],
    started: Instant,
    /// The server's clock (uptime, and the refusal log's windows).
    time: SharedClock,
    clock: Clock,
    /// Bytes COPY calls copied since start (HEALTH's `copy_bytes`).
    copy_bytes: AtomicU64,
}

impl fmt::Debug for ControlService {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ControlService")
            .field("cfg", &self.cfg)
            .field("registered", &self.registered_epoch())
            .finish_non_exhaustive()
    }
}

/// The universal address (RFC 5665) and netid of a socket address: `h1.h2.h3.h4.p1.p2` for
/// IPv4, the IPv6 text form with `.p1.p2` for IPv6.
pub fn universal_address(a: SocketAddr) -> CtlAddr {
    let (netid, ip) = match a {
        SocketAddr::V4(v) => ("tcp", v.ip().to_string()),
        SocketAddr::V6(v) => ("tcp6", v.ip().to_string()),
    };
    CtlAddr {
        netid: netid.into(),
        uaddr: format!("{ip}.{}.{}", a.port() >> 8, a.port() & 0xff).into(),
    }
}

/// The control status of a store error: the same number as its `nfsstat4`
/// ([`nfs_server::io::store_status`]), which `CtlStat` keeps for store errors so that the
/// MDS passes it on to its client unchanged.
fn store_stat(e: StoreError) -> CtlStat {
    CtlStat(nfs_server::io::store_status(&e).0)
}

fn encode<T: Xdr>(v: &T) -> Vec<Bytes> {
    vec![xdr::to_bytes(v)]
}

/// Encodes results whose payload (READ data) stays a piece of its own, not copied.
fn encode_pieces<T: Xdr>(v: &T) -> Vec<Bytes> {
    let mut e = xdr::Encoder::new();
    v.encode(&mut e);
    e.into_pieces()
}

fn object_id(o: CtlObject) -> ObjectId {
    ObjectId {
        file: o.file,
        stripe: o.stripe,
    }
}

fn status(status: CtlStat) -> CtlStatusRes {
    CtlStatusRes { status }
}

/// The host's one-minute load average times 1000, from `/proc/loadavg` (0 where unknown).
fn load_milli() -> u32 {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse::<f64>().ok())
        .map_or(0, |l| (l * 1000.0).clamp(0.0, f64::from(u32::MAX)) as u32)
}

impl ControlService {
    /// The service of the data server `cfg` describes, storing objects in `store`, driving
    /// `target`'s checks, authenticating with `key`. Its boot verifier is new (a fresh one
    /// per process start tells the MDS to send revocations and access changes again), and
    /// so is its boot nonce (calls made for another service, or one before a restart, are
    /// refused). Fails only if `/dev/urandom` cannot be read.
    pub fn new(
        cfg: ControlConfig,
        store: Arc<dyn ObjectStore>,
        target: Arc<dyn DsTarget>,
        key: ClusterKey,
    ) -> Result<Self, DsError> {
        Self::on_clock(cfg, store, target, key, nfs_server::clock::system())
    }

    /// [`ControlService::new`] on the server's `clock`: its uptime, its refusal log and the
    /// wall time it checks calls' stamps against all read `clock`.
    pub fn on_clock(
        cfg: ControlConfig,
        store: Arc<dyn ObjectStore>,
        target: Arc<dyn DsTarget>,
        key: ClusterKey,
        time: SharedClock,
    ) -> Result<Self, DsError> {
        let wall = time.clone();
        Ok(Self {
            boot: DsBoot {
                ds_id: cfg.ds_id,
                boot: random_boot_nonce()?,
            },
            refusals: LogLimiter::with_clock(REFUSAL_LOG_BURST, REFUSAL_LOG_WINDOW, time.clone()),
            addresses: cfg
                .addresses
                .iter()
                .copied()
                .map(universal_address)
                .collect(),
            cfg,
            store,
            target,
            key,
            guard: Mutex::new(ReplayGuard::default()),
            registered: Mutex::new(None),
            boot_verifier: pfs_core::new_write_verifier(),
            started: time.now(),
            time,
            clock: Arc::new(move || unix_ms(wall.wall())),
            copy_bytes: AtomicU64::new(0),
        })
    }

    /// Replaces the source of the wall time stamps are checked against (tests of clock
    /// skew).
    pub fn with_clock(mut self, clock: Clock) -> Self {
        self.clock = clock;
        self
    }

    /// The epoch of the MDS's last successful REGISTER.
    pub fn registered_epoch(&self) -> Option<u16> {
        *self
            .registered
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// This process's boot verifier.
    pub fn boot_verifier(&self) -> [u8; 8] {
        self.boot_verifier
    }

    /// The id and boot nonce calls must name (HELLO tells them).
    pub fn boot(&self) -> DsBoot {
        self.boot
    }

    /// Checks the credential: MAC, caller, target and boot (but for HELLO), freshness.
    fn authenticate(&self, call: &IncomingCall) -> Result<CtlCred, CtlAuthError> {
        let cred = self.key.verify_call(
            &call.cred.to_opaque(),
            call.prog,
            call.vers,
            call.proc_,
            &call.args,
        )?;
        if cred.node != MDS_NODE {
            return Err(CtlAuthError::WrongNode(cred.node));
        }
        // Before the replay cache, so calls of other boots do not fill it.
        if CtlProc(call.proc_) != CtlProc::CTLPROC_HELLO {
            self.boot.check(&cred)?;
        }
        self.guard
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .check(&cred, (self.clock)())?;
        Ok(cred)
    }

    /// Runs a blocking store operation off the async threads.
    async fn blocking<T: Send + 'static>(
        &self,
        f: impl FnOnce(&dyn ObjectStore) -> T + Send + 'static,
    ) -> Option<T> {
        let store = self.store.clone();
        tokio::task::spawn_blocking(move || f(&*store)).await.ok()
    }

    async fn dispatch(&self, proc_: CtlProc, stamp: CallStamp, args: Bytes) -> Reply {
        macro_rules! args {
            ($t:ty) => {
                match xdr::from_bytes::<$t>(args) {
                    Ok(a) => a,
                    Err(e) => {
                        tracing::warn!(proc = %proc_, error = %e, "control call with bad arguments");
                        return Reply::Accepted(AcceptStat::GarbageArgs);
                    }
                }
            };
        }
        let results = match proc_ {
            CtlProc::CTLPROC_NULL => {
                args!(());
                Vec::new()
            }
            CtlProc::CTLPROC_REGISTER => encode(&self.register(stamp, args!(RegisterArgs))),
            CtlProc::CTLPROC_OBJECT_SIZE => encode(&self.object_size(args!(ObjectSizeArgs)).await),
            CtlProc::CTLPROC_TRUNCATE => encode(&self.truncate(args!(TruncateArgs)).await),
            CtlProc::CTLPROC_SIZE_HINT => {
                let a = args!(SizeHintArgs);
                self.target.learn_ends(&a.ends);
                encode(&status(CtlStat::CTL_OK))
            }
            CtlProc::CTLPROC_REMOVE => encode(&self.remove(args!(RemoveArgs)).await),
            CtlProc::CTLPROC_REVOKE => encode(&self.revoke(args!(RevokeArgs))),
            CtlProc::CTLPROC_SET_ACCESS => encode(&self.set_access(args!(SetAccessArgs))),
            CtlProc::CTLPROC_READ => encode_pieces(&self.read(args!(CtlReadArgs)).await),
            CtlProc::CTLPROC_WRITE => encode(&self.write(args!(CtlWriteArgs)).await),
            CtlProc::CTLPROC_COMMIT => encode(&self.commit(args!(CtlCommitArgs)).await),
            CtlProc::CTLPROC_ALLOCATE => encode(&self.allocate(args!(CtlSpaceArgs)).await),
            CtlProc::CTLPROC_DEALLOCATE => encode(&self.deallocate(args!(CtlSpaceArgs)).await),
            CtlProc::CTLPROC_SEEK => encode(&self.seek(args!(CtlSeekArgs)).await),
            CtlProc::CTLPROC_OBJECT_SPACE => {
                encode(&self.object_space(args!(ObjectSpaceArgs)).await)
            }
            CtlProc::CTLPROC_COPY => encode(&self.copy(args!(CtlCopyArgs)).await),
            CtlProc::CTLPROC_CLONE => encode(&self.clone_range(args!(CtlCopyArgs)).await),
            CtlProc::CTLPROC_HEALTH => {
                args!(());
                encode(&self.health().await)
            }
            CtlProc::CTLPROC_HELLO => {
                args!(());
                encode(&HelloRes::Ok(HelloOk {
                    ds_id: self.boot.ds_id,
                    boot: self.boot.boot,
                }))
            }
            _ => return Reply::Accepted(AcceptStat::ProcUnavail),
        };
        Reply::Success(results)
    }

    fn register(&self, stamp: CallStamp, a: RegisterArgs) -> RegisterRes {
        if a.ds_id != self.cfg.ds_id {
            tracing::error!(
                asked = a.ds_id,
                me = self.cfg.ds_id,
                "REGISTER for another data server id: the MDS's configuration is wrong"
            );
            return RegisterRes::Err(CtlStat::CTL_WRONG_ID);
        }
        let Ok(mds_epoch) = u16::try_from(a.mds_epoch) else {
            return RegisterRes::Err(CtlStat::CTL_INVAL);
        };
        if u64::from(a.lease_time) != self.cfg.lease_time.as_secs() {
            tracing::error!(
                mds = a.lease_time,
                me = self.cfg.lease_time.as_secs(),
                "REGISTER with another lease time: the configurations differ"
            );
            return RegisterRes::Err(CtlStat::CTL_LEASE_MISMATCH);
        }
        let mut keys = [0u8; 64];
        keys[..32].copy_from_slice(&a.sealed_stateid_key);
        keys[32..].copy_from_slice(&a.sealed_fh_key);
        self.key.seal(stamp, REGISTER_SEAL_PURPOSE, &mut keys);
        let mut k = DsKeys {
            stateid_key: [0; 32],
            fh_key: [0; 32],
            mds_epoch,
        };
        k.stateid_key.copy_from_slice(&keys[..32]);
        k.fh_key.copy_from_slice(&keys[32..]);
        // Hold the registration lock across the change, so REVOKE and SET_ACCESS see the
        // new epoch only once the checks use the new keys.
        let mut registered = self
            .registered
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Err(e) = self.target.set_keys(&k) {
            tracing::error!(error = %e, "REGISTER: the data server could not start");
            return RegisterRes::Err(CtlStat::CTL_IO);
        }
        *registered = Some(mds_epoch);
        drop(registered);
        tracing::info!(ds = self.cfg.ds_id, mds_epoch, "registered with the MDS");
        RegisterRes::Ok(RegisterOk {
            ds_id: a.ds_id,
            boot_verifier: self.boot_verifier,
            write_verifier: self.store.verifier(),
            backend: self.cfg.backend,
            addresses: self.addresses.clone(),
        })
    }

    async fn object_size(&self, a: ObjectSizeArgs) -> ObjectSizeRes {
        let r = self
            .blocking(move |s| {
                a.objects
                    .iter()
                    .map(|o| {
                        s.size(ObjectId {
                            file: o.file,
                            stripe: o.stripe,
                        })
                    })
                    .collect::<Result<Vec<u64>, StoreError>>()
            })
            .await;
        match r {
            Some(Ok(sizes)) => ObjectSizeRes::Ok(ObjectSizeOk { sizes }),
            Some(Err(e)) => ObjectSizeRes::Err(store_stat(e)),
            None => ObjectSizeRes::Err(CtlStat::CTL_IO),
        }
    }

    async fn truncate(&self, a: TruncateArgs) -> CtlStatusRes {
        let mut seen = HashSet::new();
        if !a.sizes.iter().all(|s| seen.insert(s.stripe)) {
            return status(CtlStat::CTL_INVAL);
        }
        // Before the objects change: a READ from now on does not trust the old end.
        let stripes: Vec<u32> = a.sizes.iter().map(|s| s.stripe).collect();
        self.target.truncated(a.file, &stripes, a.version);
        let r = self
            .blocking(move |s| {
                a.sizes.iter().try_for_each(|t| {
                    s.truncate(
                        ObjectId {
                            file: a.file,
                            stripe: t.stripe,
                        },
                        t.size,
                    )
                })
            })
            .await;
        status(match r {
            Some(Ok(())) => CtlStat::CTL_OK,
            Some(Err(e)) => store_stat(e),
            None => CtlStat::CTL_IO,
        })
    }

    async fn remove(&self, a: RemoveArgs) -> RemoveRes {
        self.target.removed(&a.files);
        let r = self
            .blocking(move |s| {
                a.files
                    .iter()
                    .try_fold(0u64, |n, &f| s.remove_file(f).map(|k| n + u64::from(k)))
            })
            .await;
        match r {
            Some(Ok(objects_removed)) => RemoveRes::Ok(RemoveOk { objects_removed }),
            Some(Err(e)) => RemoveRes::Err(store_stat(e)),
            None => RemoveRes::Err(CtlStat::CTL_IO),
        }
    }

    /// READ: up to `count` bytes (at most [`MAX_CTL_IO`]) of the object, read until that much
    /// or the object's end, so a short reply always has `eof` (the rest of the range is a
    /// hole of the file, which the MDS fills with zeros).
    async fn read(&self, a: CtlReadArgs) -> CtlReadRes {
        let store = self.store.clone();
        let want = a.count.min(MAX_CTL_IO);
        let r = blocking(move || {
            let id = object_id(a.object);
            let first = store.read(id, a.offset, want)?;
            if first.eof || first.data.len() >= want as usize {
                return Ok(first);
            }
            // A backend may return less than asked before the end (a per-read cap): read on.
            let mut buf = bytes::BytesMut::from(&first.data[..]);
            let mut eof = false;
            while !eof && buf.len() < want as usize {
                let at = a.offset.saturating_add(buf.len() as u64);
                let more = store.read(id, at, want - buf.len() as u32)?;
                eof = more.eof || more.data.is_empty();
                buf.extend_from_slice(&more.data);
            }
            Ok(pfs_core::ReadDone {
                data: buf.freeze(),
                eof,
            })
        })
        .await;
        match r {
            Ok(done) => CtlReadRes::Ok(CtlReadOk {
                eof: done.eof,
                data: done.data,
            }),
            Err(s) => CtlReadRes::Err(CtlStat(s.0)),
        }
    }

    /// WRITE: the data at the offset, as durable as asked; the verifier is the store's after
    /// the write.
    async fn write(&self, a: CtlWriteArgs) -> CtlWriteRes {
        let Some(stable) = Stability::from_u32(a.stable) else {
            return CtlWriteRes::Err(CtlStat::CTL_INVAL);
        };
        if a.data.is_empty() {
            return CtlWriteRes::Ok(CtlWriteOk {
                count: 0,
                committed: Stability::FileSync.as_u32(),
                verifier: self.store.verifier(),
            });
        }
        let store = self.store.clone();
        let (id, offset, data) = (object_id(a.object), a.offset, a.data);
        match blocking(move || store.write(id, offset, &[data], stable)).await {
            Ok(done) => CtlWriteRes::Ok(CtlWriteOk {
                // At most MAX_CTL_IO, as the data was.
                count: u32::try_from(done.count).unwrap_or(u32::MAX),
                committed: done.committed.as_u32(),
                verifier: self.store.verifier(),
            }),
            Err(s) => CtlWriteRes::Err(CtlStat(s.0)),
        }
    }

    /// COMMIT: earlier writes to the object made durable; the verifier is the store's after.
    async fn commit(&self, a: CtlCommitArgs) -> CtlCommitRes {
        let store = self.store.clone();
        let (id, offset, len) = (object_id(a.object), a.offset, u64::from(a.count));
        match blocking(move || store.commit(id, offset, len)).await {
            Ok(()) => CtlCommitRes::Ok(CtlCommitOk {
                verifier: self.store.verifier(),
            }),
            Err(s) => CtlCommitRes::Err(CtlStat(s.0)),
        }
    }

    /// ALLOCATE: the range reserved (the object grown if it ends past its size), durably.
    async fn allocate(&self, a: CtlSpaceArgs) -> CtlStatusRes {
        let store = self.store.clone();
        let (id, offset, len) = (object_id(a.object), a.offset, a.length);
        status(
            match blocking(move || store.allocate(id, offset, len)).await {
                Ok(()) => CtlStat::CTL_OK,
                Err(s) => CtlStat(s.0),
            },
        )
    }

    /// DEALLOCATE: the range (clipped to the object's size) reads as zeros, durably; says
    /// how, so the MDS knows whether anything changed.
    async fn deallocate(&self, a: CtlSpaceArgs) -> CtlDeallocateRes {
        let store = self.store.clone();
        let (id, offset, len) = (object_id(a.object), a.offset, a.length);
        match blocking(move || store.deallocate(id, offset, len)).await {
            Ok(how) => CtlDeallocateRes::Ok(CtlDeallocateOk {
                how: match how {
                    Deallocated::Nothing => CtlDeallocated::CTL_DEALLOC_NOTHING,
                    Deallocated::HolePunched => CtlDeallocated::CTL_DEALLOC_PUNCHED,
                    Deallocated::ZerosWritten => CtlDeallocated::CTL_DEALLOC_ZEROED,
                },
            }),
            Err(s) => CtlDeallocateRes::Err(CtlStat(s.0)),
        }
    }

    /// SEEK: the object's next data or hole at or after the offset (`lseek`).
    async fn seek(&self, a: CtlSeekArgs) -> CtlSeekRes {
        let what = match a.what {
            CtlSeekWhat::CTL_SEEK_DATA => SeekWhat::Data,
            CtlSeekWhat::CTL_SEEK_HOLE => SeekWhat::Hole,
            _ => return CtlSeekRes::Err(CtlStat::CTL_INVAL),
        };
        let store = self.store.clone();
        let (id, offset) = (object_id(a.object), a.offset);
        match blocking(move || store.seek(id, offset, what)).await {
            Ok(found) => CtlSeekRes::Ok(CtlSeekOk {
                found: found.is_some(),
                offset: found.unwrap_or(0),
            }),
            Err(s) => CtlSeekRes::Err(CtlStat(s.0)),
        }
    }

    /// OBJECT_SPACE: each object's size and allocated bytes, in order.
    async fn object_space(&self, a: ObjectSpaceArgs) -> ObjectSpaceRes {
        let r = self
            .blocking(move |s| {
                a.objects
                    .iter()
                    .map(|&o| {
                        let id = object_id(o);
                        Ok(CtlObjectSpace {
                            size: s.size(id)?,
                            allocated: s.space_used(id)?,
                        })
                    })
                    .collect::<Result<Vec<_>, StoreError>>()
            })
            .await;
        match r {
            Some(Ok(objects)) => ObjectSpaceRes::Ok(ObjectSpaceOk { objects }),
            Some(Err(e)) => ObjectSpaceRes::Err(store_stat(e)),
            None => ObjectSpaceRes::Err(CtlStat::CTL_IO),
        }
    }

    /// COPY: at most [`MAX_CTL_COPY`] bytes from one object to another, durable before the
    /// reply (the store syncs the destination), holes kept.
    async fn copy(&self, a: CtlCopyArgs) -> CtlCopyRes {
        if a.count > MAX_CTL_COPY {
            return CtlCopyRes::Err(CtlStat::CTL_INVAL);
        }
        let store = self.store.clone();
        let (src, dst) = (object_id(a.src), object_id(a.dst));
        let (so, d, n) = (a.src_offset, a.dst_offset, a.count);
        match blocking(move || store.copy_range(src, dst, so, d, n)).await {
            Ok(copied) => {
                self.copy_bytes.fetch_add(copied, Ordering::Relaxed);
                CtlCopyRes::Ok(CtlCopyOk { copied })
            }
            Err(s) => CtlCopyRes::Err(CtlStat(s.0)),
        }
    }

    /// CLONE: reflink of a range, durable before the reply; `CTL_NOTSUPP` where the store
    /// cannot share blocks.
    async fn clone_range(&self, a: CtlCopyArgs) -> CtlStatusRes {
        let store = self.store.clone();
        let (src, dst) = (object_id(a.src), object_id(a.dst));
        let (so, d, n) = (a.src_offset, a.dst_offset, a.count);
        match blocking(move || store.clone_range(src, dst, so, d, n)).await {
            Ok(()) => status(CtlStat::CTL_OK),
            Err(s) => status(CtlStat(s.0)),
        }
    }

    /// The registration lock, if the MDS registered with `epoch`; else the status to answer.
    fn registered_as(&self, epoch: u32) -> Result<std::sync::MutexGuard<'_, Option<u16>>, CtlStat> {
        let registered = self
            .registered
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        match *registered {
            None => Err(CtlStat::CTL_NOT_REGISTERED),
            Some(e) if u32::from(e) != epoch => Err(CtlStat::CTL_STALE_EPOCH),
            Some(_) => Ok(registered),
        }
    }

    fn revoke(&self, a: RevokeArgs) -> CtlStatusRes {
        let why = |r: CtlRevokeReason| match r {
            CtlRevokeReason::CTL_REVOKED_ADMIN => Some(Revoked::Admin),
            CtlRevokeReason::CTL_REVOKED_EXPIRED => Some(Revoked::Expired),
            CtlRevokeReason::CTL_REVOKED_DELEG => Some(Revoked::Delegation),
            CtlRevokeReason::CTL_REVOKED_CLOSED => Some(Revoked::Closed),
            _ => None,
        };
        // Check everything before changing anything: a call is applied whole or not at all.
        let Some(revoke) = a
            .revoke
            .iter()
            .map(|r| why(r.why).map(|w| (r.other, w)))
            .collect::<Option<Vec<_>>>()
        else {
            return status(CtlStat::CTL_INVAL);
        };
        if a.closed.iter().any(|r| r.first > r.last) {
            return status(CtlStat::CTL_INVAL);
        }
        let _registered = match self.registered_as(a.mds_epoch) {
            Ok(g) => g,
            Err(s) => return status(s),
        };
        for other in &a.forget {
            self.target.forget(other);
        }
        for (other, why) in revoke {
            self.target.revoke(other, why);
        }
        if !a.closed.is_empty() {
            let ranges: Vec<(u32, u32)> = a.closed.iter().map(|r| (r.first, r.last)).collect();
            self.target.close_counters(&ranges);
        }
        status(CtlStat::CTL_OK)
    }

    fn set_access(&self, a: SetAccessArgs) -> CtlStatusRes {
        if a.changes.iter().any(|c| c.access == 0 || c.access > 3) {
            return status(CtlStat::CTL_INVAL);
        }
        let _registered = match self.registered_as(a.mds_epoch) {
            Ok(g) => g,
            Err(s) => return status(s),
        };
        for c in &a.changes {
            self.target.set_access(c.other, c.access as u8);
        }
        status(CtlStat::CTL_OK)
    }

    async fn health(&self) -> HealthRes {
        let fs = match self.blocking(|s| s.statfs()).await {
            Some(Ok(fs)) => fs,
            Some(Err(e)) => return HealthRes::Err(store_stat(e)),
            None => return HealthRes::Err(CtlStat::CTL_IO),
        };
        HealthRes::Ok(HealthOk {
            ds_id: self.cfg.ds_id,
            boot_verifier: self.boot_verifier,
            mds_epoch: self.registered_epoch().map(u32::from),
            space_total: fs.total,
            space_free: fs.free,
            space_avail: fs.avail,
            files_total: fs.files,
            files_free: fs.ffree,
            load_milli: load_milli(),
            uptime_s: self
                .time
                .now()
                .saturating_duration_since(self.started)
                .as_secs(),
            ops: self.target.op_counts(),
            copy_bytes: self.copy_bytes.load(Ordering::Relaxed),
        })
    }
}

impl CallHandler for ControlService {
    fn handle(self: Arc<Self>, conn: Conn, call: IncomingCall) -> HandlerFuture {
        Box::pin(async move {
            if call.prog != PNFS_CTL_PROGRAM {
                return Reply::Accepted(AcceptStat::ProgUnavail);
            }
            if call.vers != PNFS_CTL_VERSION {
                return Reply::Accepted(AcceptStat::ProgMismatch {
                    low: PNFS_CTL_VERSION,
                    high: PNFS_CTL_VERSION,
                });
            }
            let cred = match self.authenticate(&call) {
                Ok(c) => c,
                Err(e) => {
                    let peer = conn.peer();
                    if let Some(suppressed) = self.refusals.allow(peer.ip()) {
                        tracing::warn!(
                            %peer,
                            error = %e,
                            proc = call.proc_,
                            suppressed,
                            "control call refused"
                        );
                    }
                    return Reply::Denied(RejectedReply::AuthError(e.auth_stat()));
                }
            };
            match self
                .dispatch(CtlProc(call.proc_), CallStamp::from(&cred), call.args)
                .await
            {
                Reply::Success(mut results) => {
                    let mac = self.key.sign_reply(&cred.mac, &results);
                    results.push(mac);
                    Reply::Success(results)
                }
                other => other,
            }
        })
    }
}

/// Connection ids of the control service (for logs), apart from the NFS side's.
static NEXT_CONN: AtomicU64 = AtomicU64::new(1 << 40);

/// Limits of control connections: the largest call is a WRITE of `MAX_CTL_IO` (1 MiB) with
/// its headers, so a record over [`MAX_CTL_RECORD`] (1 MiB + 64 KiB) is refused before it is
/// read; with 64 calls in flight a connection holds at most about 68 MiB of requests.
pub const CONTROL_LIMITS: ConnLimits = ConnLimits {
    max_fragment: MAX_CTL_RECORD as usize,
    max_record: MAX_CTL_RECORD as usize,
    max_in_flight: 64,
};

/// Serves control connections accepted on `listener` until the task is dropped, with the
/// default connection limits ([`serve_with`]).
pub async fn serve(listener: TcpListener, service: Arc<ControlService>) -> io::Result<()> {
    serve_with(listener, service, ServeLimits::default()).await
}

/// Serves control connections accepted on `listener` until the task is dropped (it never
/// returns on its own: accept errors are waited out). The control port is open to any peer
/// until a call's MAC is checked, so it gets the NFS side's defences: a connection cap,
/// back-off on accept errors, an idle timeout (the MDS polls HEALTH every few seconds, so its
/// connections are never idle that long), and a reply budget in which each call reserves a
/// whole [`MAX_CTL_RECORD`].
pub async fn serve_with(
    listener: TcpListener,
    service: Arc<ControlService>,
    limits: ServeLimits,
) -> io::Result<()> {
    let policy = limits.policy(MAX_CTL_RECORD as usize);
    Acceptor::new(listener, "control", limits.max_connections)
        .serve_calls(service, CONTROL_LIMITS, policy, || {
            NEXT_CONN.fetch_add(1, Ordering::Relaxed)
        })
        .await;
    Ok(())
}

/// The control service over streams handed over one by one (the test kit's in-memory
/// cluster), with the limits and reply budget [`serve_with`] gives TCP connections.
pub fn stream_server(
    service: Arc<ControlService>,
    limits: ServeLimits,
) -> nfs_server::StreamServer<ControlService> {
    nfs_server::StreamServer::new(
        service,
        CONTROL_LIMITS,
        limits.policy(MAX_CTL_RECORD as usize),
        || NEXT_CONN.fetch_add(1, Ordering::Relaxed),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn universal_addresses_put_the_port_in_two_decimal_bytes() {
        let a = universal_address("127.0.0.1:20491".parse().unwrap());
        assert_eq!(
            (a.netid.as_str(), a.uaddr.as_str()),
            (Some("tcp"), Some("127.0.0.1.80.11"))
        );
        let a = universal_address("[fd00::4]:2049".parse().unwrap());
        assert_eq!(
            (a.netid.as_str(), a.uaddr.as_str()),
            (Some("tcp6"), Some("fd00::4.8.1"))
        );
    }
}

//! The data server's control service: what the MDS asks of it over the control protocol
//! (`nfs_proto::control`), and the state it leaves for the NFS side to read.
//!
//! ```text
//!   MDS ──REGISTER──> ControlService ──keys──────> ControlState ──keys()/is_revoked()──> NFS side
//!       ──REVOKE────>                ──revoked───>      ^                                 (stateid and
//!       ──OBJECT_SIZE / TRUNCATE / REMOVE ──> ObjectStore                                 filehandle checks)
//!       ──HEALTH────> statfs, load, ControlState::io_started() count
//! ```
//!
//! Every call is authenticated before anything else ([`nfs_proto::control`] module docs):
//! the MAC under the cluster secret, the MDS as caller, and a [`ReplayGuard`] against stale
//! and replayed calls; a refused call gets MSG_DENIED / AUTH_ERROR and changes nothing.
//! Arguments that do not decode get GARBAGE_ARGS, an unknown procedure PROC_UNAVAIL. Every
//! procedure is idempotent, so the MDS retries a failed call as a new call.

use std::collections::HashSet;
use std::fmt;
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::{Duration, Instant, SystemTime};

use bytes::Bytes;
use nfs_proto::control::{
    unix_ms, CallStamp, ClusterKey, CtlAddr, CtlAuthError, CtlBackend, CtlCred, CtlProc, CtlStat,
    CtlStatusRes, HealthOk, HealthRes, ObjectSizeArgs, ObjectSizeOk, ObjectSizeRes, RegisterArgs,
    RegisterOk, RegisterRes, RemoveArgs, RemoveOk, RemoveRes, ReplayGuard, RevokeArgs, RevokeOk,
    RevokeRes, StateOther, TruncateArgs, MDS_NODE, PNFS_CTL_PROGRAM, PNFS_CTL_VERSION,
    REGISTER_SEAL_PURPOSE,
};
use nfs_proto::rpc::{AcceptStat, RejectedReply};
use nfs_proto::transport::{
    self, CallHandler, Conn, ConnLimits, HandlerFuture, IncomingCall, Reply,
};
use nfs_proto::xdr::{self, Xdr};
use pfs_core::{ObjectId, ObjectStore, StoreError};
use tokio::net::TcpListener;

/// Most stateids a data server keeps revoked at once (about 30 MB): the MDS forgets
/// revocations once the stateids are freed, so the set stays far smaller; beyond the bound a
/// REVOKE fails with `CTL_TOO_MANY` and the MDS must not answer the conflicting operation.
pub const MAX_REVOKED: usize = 1 << 20;

/// What the MDS gives a data server so it can check I/O without asking (REGISTER):
/// stateid MACs, its own filehandles' MACs, which MDS boot the stateids belong to, and the
/// lease time its EXCHANGE_ID must report (the DS lease equals the MDS lease).
#[derive(Clone, PartialEq, Eq)]
pub struct DsKeys {
    /// Key of the MAC in a stateid's `other` field (docs/design.md, "Stateids").
    pub stateid_key: [u8; 32],
    /// Key of the MAC in data server filehandles (docs/design.md, "pNFS plan").
    pub fh_key: [u8; 32],
    /// The MDS boot epoch: a stateid of another epoch is stale.
    pub mds_epoch: u16,
    /// The MDS's lease time.
    pub lease_time: Duration,
}

impl fmt::Debug for DsKeys {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DsKeys")
            .field("mds_epoch", &self.mds_epoch)
            .field("lease_time", &self.lease_time)
            .finish_non_exhaustive()
    }
}

/// The stateids this data server must refuse: revoked layouts' and fenced clients' stateids,
/// by their `other` field, as the MDS pushed them (REVOKE). Reads are a hash lookup under a
/// read lock, taken on every I/O; writes come from the control service only.
#[derive(Debug)]
pub struct Revocations {
    set: RwLock<HashSet<StateOther>>,
    max: usize,
}

/// Why a revocation update was refused (nothing was applied).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TooManyRevoked {
    /// What the set would have held.
    pub would_hold: usize,
}

impl Revocations {
    /// An empty set holding at most `max` stateids.
    pub fn new(max: usize) -> Self {
        Self {
            set: RwLock::new(HashSet::new()),
            max,
        }
    }

    /// Whether a stateid with this `other` field is revoked.
    pub fn is_revoked(&self, other: &StateOther) -> bool {
        self.read().contains(other)
    }

    /// Stateids held.
    pub fn len(&self) -> usize {
        self.read().len()
    }

    /// True when nothing is revoked.
    pub fn is_empty(&self) -> bool {
        self.read().is_empty()
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, HashSet<StateOther>> {
        self.set.read().unwrap_or_else(PoisonError::into_inner)
    }

    /// Applies one REVOKE: with `replace` the set becomes `revoke`; otherwise `revoke` is
    /// added and `forget` dropped. All or nothing; returns the new size.
    pub fn apply(
        &self,
        replace: bool,
        revoke: &[StateOther],
        forget: &[StateOther],
    ) -> Result<usize, TooManyRevoked> {
        let mut set = self.set.write().unwrap_or_else(PoisonError::into_inner);
        if replace {
            let new: HashSet<StateOther> = revoke.iter().copied().collect();
            if new.len() > self.max {
                return Err(TooManyRevoked {
                    would_hold: new.len(),
                });
            }
            *set = new;
            return Ok(set.len());
        }
        // Count exactly (lists may repeat entries) before changing anything.
        let revoke_set: HashSet<&StateOther> = revoke.iter().collect();
        let forget_set: HashSet<&StateOther> =
            forget.iter().filter(|o| !revoke_set.contains(o)).collect();
        let adding = revoke_set.iter().filter(|o| !set.contains(**o)).count();
        let dropping = forget_set.iter().filter(|o| set.contains(**o)).count();
        let would_hold = set.len() + adding - dropping;
        if would_hold > self.max {
            return Err(TooManyRevoked { would_hold });
        }
        for o in forget {
            set.remove(o);
        }
        set.extend(revoke.iter().copied());
        Ok(set.len())
    }

    /// Forgets everything (a new MDS epoch: every older stateid is stale anyway).
    pub fn clear(&self) {
        self.set
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .clear();
    }
}

/// State the control service keeps and the NFS side reads: the keys (none before the first
/// REGISTER: the NFS side then answers I/O with NFS4ERR_DELAY), the revocation set, and a
/// count of I/O in flight for HEALTH.
#[derive(Debug)]
pub struct ControlState {
    ds_id: u16,
    boot_verifier: [u8; 8],
    started: Instant,
    keys: RwLock<Option<DsKeys>>,
    revoked: Revocations,
    in_flight: AtomicU32,
}

/// Counts one NFS request in flight while it lives ([`ControlState::io_started`]).
#[derive(Debug)]
pub struct IoInFlight<'a>(&'a AtomicU32);

impl Drop for IoInFlight<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

impl ControlState {
    /// State of data server `ds_id`, with a fresh boot verifier (unique per process start:
    /// the MDS re-sends revocations when it changes).
    pub fn new(ds_id: u16) -> Self {
        Self::with_max_revoked(ds_id, MAX_REVOKED)
    }

    /// As [`ControlState::new`] with another bound on the revocation set.
    pub fn with_max_revoked(ds_id: u16, max_revoked: usize) -> Self {
        Self {
            ds_id,
            boot_verifier: pfs_core::new_write_verifier(),
            started: Instant::now(),
            keys: RwLock::new(None),
            revoked: Revocations::new(max_revoked),
            in_flight: AtomicU32::new(0),
        }
    }

    /// This data server's id.
    pub fn ds_id(&self) -> u16 {
        self.ds_id
    }

    /// Differs on every process start.
    pub fn boot_verifier(&self) -> [u8; 8] {
        self.boot_verifier
    }

    /// The MDS's keys, once registered.
    pub fn keys(&self) -> Option<DsKeys> {
        self.keys
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Whether a stateid with this `other` field is revoked.
    pub fn is_revoked(&self, other: &StateOther) -> bool {
        self.revoked.is_revoked(other)
    }

    /// The revocation set.
    pub fn revocations(&self) -> &Revocations {
        &self.revoked
    }

    /// Call at the start of each NFS request; the count drops when the guard does.
    pub fn io_started(&self) -> IoInFlight<'_> {
        self.in_flight.fetch_add(1, Ordering::Relaxed);
        IoInFlight(&self.in_flight)
    }

    /// Installs new keys; a new MDS epoch empties the revocation set.
    fn register(&self, keys: DsKeys) {
        let mut k = self.keys.write().unwrap_or_else(PoisonError::into_inner);
        if k.as_ref().map(|k| k.mds_epoch) != Some(keys.mds_epoch) {
            self.revoked.clear();
        }
        *k = Some(keys);
    }
}

/// Source of "now" in milliseconds since 1970 (tests move it).
pub type Clock = Arc<dyn Fn() -> u64 + Send + Sync>;

/// The control service of one data server: a [`CallHandler`] for connections from the MDS.
pub struct ControlService {
    state: Arc<ControlState>,
    store: Arc<dyn ObjectStore>,
    key: ClusterKey,
    guard: Mutex<ReplayGuard>,
    backend: CtlBackend,
    addresses: Vec<CtlAddr>,
    clock: Clock,
}

impl fmt::Debug for ControlService {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ControlService")
            .field("ds_id", &self.state.ds_id)
            .field("backend", &self.backend)
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

fn store_stat(e: StoreError) -> CtlStat {
    CtlStat(e.nfs_status())
}

fn encode<T: Xdr>(v: &T) -> Vec<Bytes> {
    vec![xdr::to_bytes(v)]
}

/// The host's one-minute load average times 1000, from `/proc/loadavg` (0 where unknown).
fn load_milli() -> u32 {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse::<f64>().ok())
        .map_or(0, |l| (l * 1000.0).clamp(0.0, f64::from(u32::MAX)) as u32)
}

impl ControlService {
    /// The service of the data server whose state is `state`, storing objects in `store`
    /// (of kind `backend`), reachable by clients at `addresses`, authenticating with `key`.
    pub fn new(
        state: Arc<ControlState>,
        store: Arc<dyn ObjectStore>,
        backend: CtlBackend,
        addresses: &[SocketAddr],
        key: ClusterKey,
    ) -> Self {
        Self {
            state,
            store,
            key,
            guard: Mutex::new(ReplayGuard::default()),
            backend,
            addresses: addresses.iter().copied().map(universal_address).collect(),
            clock: Arc::new(|| unix_ms(SystemTime::now())),
        }
    }

    /// Replaces the clock (tests of clock skew).
    pub fn with_clock(mut self, clock: Clock) -> Self {
        self.clock = clock;
        self
    }

    /// The state shared with the NFS side.
    pub fn state(&self) -> &Arc<ControlState> {
        &self.state
    }

    /// Checks the credential: MAC, caller, freshness.
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
            CtlProc::CTLPROC_REMOVE => encode(&self.remove(args!(RemoveArgs)).await),
            CtlProc::CTLPROC_REVOKE => encode(&self.revoke(args!(RevokeArgs))),
            CtlProc::CTLPROC_HEALTH => {
                args!(());
                encode(&self.health().await)
            }
            _ => return Reply::Accepted(AcceptStat::ProcUnavail),
        };
        Reply::Success(results)
    }

    fn register(&self, stamp: CallStamp, a: RegisterArgs) -> RegisterRes {
        if a.ds_id != u32::from(self.state.ds_id) {
            tracing::error!(
                asked = a.ds_id,
                me = self.state.ds_id,
                "REGISTER for another data server id: the MDS's configuration is wrong"
            );
            return RegisterRes::Err(CtlStat::CTL_WRONG_ID);
        }
        let Ok(mds_epoch) = u16::try_from(a.mds_epoch) else {
            return RegisterRes::Err(CtlStat::CTL_INVAL);
        };
        if a.lease_time == 0 {
            return RegisterRes::Err(CtlStat::CTL_INVAL);
        }
        let mut keys = [0u8; 64];
        keys[..32].copy_from_slice(&a.sealed_stateid_key);
        keys[32..].copy_from_slice(&a.sealed_fh_key);
        self.key.seal(stamp, REGISTER_SEAL_PURPOSE, &mut keys);
        let (mut stateid_key, mut fh_key) = ([0u8; 32], [0u8; 32]);
        stateid_key.copy_from_slice(&keys[..32]);
        fh_key.copy_from_slice(&keys[32..]);
        self.state.register(DsKeys {
            stateid_key,
            fh_key,
            mds_epoch,
            lease_time: Duration::from_secs(u64::from(a.lease_time)),
        });
        tracing::info!(ds = self.state.ds_id, mds_epoch, "registered with the MDS");
        RegisterRes::Ok(RegisterOk {
            ds_id: a.ds_id,
            boot_verifier: self.state.boot_verifier,
            write_verifier: self.store.verifier(),
            backend: self.backend,
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
            return CtlStatusRes {
                status: CtlStat::CTL_INVAL,
            };
        }
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
        let status = match r {
            Some(Ok(())) => CtlStat::CTL_OK,
            Some(Err(e)) => store_stat(e),
            None => CtlStat::CTL_IO,
        };
        CtlStatusRes { status }
    }

    async fn remove(&self, a: RemoveArgs) -> RemoveRes {
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

    fn revoke(&self, a: RevokeArgs) -> RevokeRes {
        let Some(keys) = self.state.keys() else {
            return RevokeRes::Err(CtlStat::CTL_NOT_REGISTERED);
        };
        if a.mds_epoch != u32::from(keys.mds_epoch) {
            return RevokeRes::Err(CtlStat::CTL_STALE_EPOCH);
        }
        match self.state.revoked.apply(a.replace, &a.revoke, &a.forget) {
            Ok(n) => RevokeRes::Ok(RevokeOk { revoked: n as u32 }),
            Err(e) => {
                tracing::error!(
                    would_hold = e.would_hold,
                    "revocation set full: REVOKE refused"
                );
                RevokeRes::Err(CtlStat::CTL_TOO_MANY)
            }
        }
    }

    async fn health(&self) -> HealthRes {
        let fs = match self.blocking(|s| s.statfs()).await {
            Some(Ok(fs)) => fs,
            Some(Err(e)) => return HealthRes::Err(store_stat(e)),
            None => return HealthRes::Err(CtlStat::CTL_IO),
        };
        HealthRes::Ok(HealthOk {
            ds_id: u32::from(self.state.ds_id),
            boot_verifier: self.state.boot_verifier,
            mds_epoch: self.state.keys().map(|k| u32::from(k.mds_epoch)),
            space_total: fs.total,
            space_free: fs.free,
            space_avail: fs.avail,
            files_total: fs.files,
            files_free: fs.ffree,
            load_milli: load_milli(),
            io_in_flight: self.state.in_flight.load(Ordering::Relaxed),
            revoked: self.state.revoked.len() as u32,
            uptime_s: self.state.started.elapsed().as_secs(),
        })
    }
}

impl CallHandler for ControlService {
    fn handle(self: Arc<Self>, _conn: Conn, call: IncomingCall) -> HandlerFuture {
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
                    tracing::warn!(error = %e, proc = call.proc_, "control call refused");
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

/// Limits of control connections: calls are small (the largest list is 16384 stateids,
/// 192 KiB), so a record over 1 MiB is refused.
pub const CONTROL_LIMITS: ConnLimits = ConnLimits {
    max_fragment: 1 << 20,
    max_record: 1 << 20,
    max_in_flight: 64,
};

/// Serves control connections accepted on `listener` until the task is dropped (it never
/// returns on its own: accept errors are logged and retried).
pub async fn serve(listener: TcpListener, service: Arc<ControlService>) -> io::Result<()> {
    loop {
        let (stream, peer) = match listener.accept().await {
            Ok(s) => s,
            Err(e) => {
                // EMFILE and friends: back off instead of spinning.
                tracing::warn!(error = %e, "control accept failed");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let Ok(local) = stream.local_addr() else {
            continue;
        };
        let id = NEXT_CONN.fetch_add(1, Ordering::Relaxed);
        let (_conn, run) =
            transport::start(stream, id, peer, local, service.clone(), CONTROL_LIMITS);
        tokio::spawn(async move {
            if let Err(e) = run.await {
                tracing::info!(%peer, error = %e, "control connection ended");
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn o(n: u8) -> StateOther {
        [n; 12]
    }

    #[test]
    fn revocations_add_forget_and_replace_all_or_nothing() {
        let r = Revocations::new(3);
        assert_eq!(r.apply(false, &[o(1), o(2)], &[]), Ok(2));
        assert!(r.is_revoked(&o(1)) && !r.is_revoked(&o(3)));
        assert_eq!(r.apply(false, &[o(3)], &[o(1)]), Ok(2));
        assert!(!r.is_revoked(&o(1)));
        // Over the bound: nothing changes.
        assert_eq!(
            r.apply(false, &[o(4), o(5)], &[]),
            Err(TooManyRevoked { would_hold: 4 })
        );
        assert!(!r.is_revoked(&o(4)) && r.is_revoked(&o(2)));
        // Forgetting and revoking the same one at once keeps it revoked.
        assert_eq!(r.apply(false, &[o(2)], &[o(2)]), Ok(2));
        assert!(r.is_revoked(&o(2)));
        // Repeated entries count once.
        assert_eq!(r.apply(false, &[o(3), o(3)], &[o(2), o(2), o(7)]), Ok(1));
        assert_eq!(r.apply(false, &[o(2)], &[]), Ok(2));
        assert_eq!(r.apply(true, &[o(9)], &[]), Ok(1));
        assert!(r.is_revoked(&o(9)) && !r.is_revoked(&o(2)));
        assert!(r.apply(true, &[o(1), o(2), o(3), o(4)], &[]).is_err());
        assert!(r.is_revoked(&o(9)));
    }

    #[test]
    fn a_new_mds_epoch_empties_the_revocation_set_and_the_same_one_keeps_it() {
        let s = ControlState::new(1);
        let keys = |epoch| DsKeys {
            stateid_key: [1; 32],
            fh_key: [2; 32],
            mds_epoch: epoch,
            lease_time: Duration::from_secs(90),
        };
        s.register(keys(5));
        s.revocations().apply(false, &[o(1)], &[]).unwrap();
        s.register(keys(5));
        assert!(s.is_revoked(&o(1)));
        s.register(keys(6));
        assert!(!s.is_revoked(&o(1)));
        assert_eq!(s.keys().unwrap().mds_epoch, 6);
        assert!(!format!("{:?}", s.keys().unwrap()).contains("[1,"));
    }

    #[test]
    fn io_in_flight_counts_live_guards() {
        let s = ControlState::new(1);
        let a = s.io_started();
        let b = s.io_started();
        assert_eq!(s.in_flight.load(Ordering::Relaxed), 2);
        drop(a);
        drop(b);
        assert_eq!(s.in_flight.load(Ordering::Relaxed), 0);
    }

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

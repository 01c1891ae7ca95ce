//! The MDS's side of the control protocol: a client for one data server's control service
//! (`nfs_proto::control`; the server is `data_server::control`).
//!
//! ```text
//!   DsControl::connect(addr, id, key) ──TCP──> control service of data server `id`
//!     .hello()                   its id and boot nonce (asked before the first other call)
//!     .register(&Registration)   keys, epoch and lease out; id, boot verifier, addresses back
//!     .revoke, .set_access, .object_sizes, .truncate, .remove, .health, .null
//!     .read, .write, .commit     I/O through the MDS on the data server's objects
//!     .allocate, .deallocate, .seek, .object_space   space and extents of objects
//! ```
//!
//! Every call is signed with the cluster key and a fresh stamp naming the data server and its
//! boot nonce, and its results are accepted only if the reply's MAC verifies against that
//! call, so neither a peer without the secret nor a replayed or altered reply can feed the
//! MDS wrong sizes or acknowledgements, and no call is good for another data server or
//! another boot of this one. The boot nonce is learnt with HELLO before the first call; when
//! the data server refuses a call as made for another of its boots (AUTH_REJECTEDCRED: it
//! restarted behind this connection), the client asks HELLO again and makes the call once
//! more (the refused call changed nothing), so a restart never leaves it stuck. Calls
//! are bounded by a timeout; after a timeout or a closed connection the caller connects
//! again (every procedure is idempotent, so it may simply repeat the call). Lists longer than
//! one call may carry ([`MAX_CTL_LIST`]) are split into several calls.

use std::collections::BTreeMap;
use std::fmt;
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use bytes::Bytes;
use cluster::keys::DsKeys;
use nfs_proto::control::{
    unix_ms, AccessChange, BootNonce, CallStamp, ClusterKey, CtlAuthError, CtlCounterRange,
    CtlObject, CtlProc, CtlRevokeReason, CtlStat, CtlStatusRes, DsBoot, HealthOk, HealthRes,
    HelloOk, HelloRes, ObjectEnd, ObjectSizeArgs, ObjectSizeRes, RegisterArgs, RegisterOk,
    RegisterRes, RemoveArgs, RemoveRes, RevokeArgs, RevokedState, SetAccessArgs, SizeHintArgs,
    Stamper, StateOther, StripeSize, TruncateArgs, BOOT_NONCE_LEN, MAX_CTL_IO, MAX_CTL_LIST,
    MAX_CTL_RECORD, MDS_NODE, PNFS_CTL_PROGRAM, PNFS_CTL_VERSION, REGISTER_SEAL_PURPOSE,
};
use nfs_proto::rpc::{AcceptStat, AuthStat, RejectedReply};
use nfs_proto::transport::{self, CallError, Conn, ConnLimits, NoCalls};
use nfs_proto::xdr::{self, DecodeError, Xdr};
use nfs_server::clock::SharedClock;
use pfs_core::ObjectId;

use crate::pnfs::dsconnect::{Connected, DsConnector, TcpConnector};

mod objects;

pub use objects::Written;

/// How long a control call may take by default: long enough for a data server to fsync a
/// batch of truncates or removes on a busy disk, short enough that a dead one is noticed
/// well within a lease.
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(15);

/// Why a control call gave no result.
#[derive(Debug)]
pub enum CtlError {
    /// The connection could not be made.
    Connect(io::Error),
    /// No reply within the timeout (the connection may be wedged: reconnect).
    Timeout,
    /// The connection closed before the reply.
    Closed,
    /// The data server refused our credential (wrong cluster secret, or another data server
    /// at this address: AUTH_BADCRED; clocks apart by more than five minutes:
    /// AUTH_REJECTEDVERF; made for another of its boots even after HELLO: AUTH_REJECTEDCRED).
    Denied(AuthStat),
    /// Another RPC-level failure (PROG_UNAVAIL, GARBAGE_ARGS, ...).
    Rpc(String),
    /// A SUCCESS reply whose MAC does not verify: not from a holder of the secret, or not an
    /// answer to this call.
    BadReply(CtlAuthError),
    /// Results that do not decode.
    Decode(DecodeError),
    /// The procedure failed on the data server.
    Status(CtlStat),
    /// The data server answered with other facts than asked (another id at REGISTER, more
    /// data than asked at READ, ...).
    Mismatch(String),
    /// READ or WRITE data over `MAX_CTL_IO` bytes (a caller's mistake: nothing was sent).
    TooLong(usize),
}

impl fmt::Display for CtlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Connect(e) => write!(f, "connecting to the data server's control service: {e}"),
            Self::Timeout => f.write_str("control call timed out"),
            Self::Closed => f.write_str("control connection closed"),
            Self::Denied(s) => write!(f, "control call refused: {s}"),
            Self::Rpc(s) => write!(f, "control call failed: {s}"),
            Self::BadReply(e) => write!(f, "control reply rejected: {e}"),
            Self::Decode(e) => write!(f, "control reply does not decode: {e}"),
            Self::Status(s) => write!(f, "control procedure failed: {s}"),
            Self::Mismatch(s) => write!(f, "data server mismatch: {s}"),
            Self::TooLong(n) => write!(
                f,
                "{n} bytes of I/O in one control call (at most {MAX_CTL_IO})"
            ),
        }
    }
}

impl std::error::Error for CtlError {}

impl From<CallError> for CtlError {
    fn from(e: CallError) -> Self {
        match e {
            CallError::Closed => Self::Closed,
            CallError::Denied(RejectedReply::AuthError(s)) => Self::Denied(s),
            CallError::Denied(r) => Self::Rpc(format!("{r:?}")),
            CallError::Accepted(AcceptStat::GarbageArgs) => Self::Rpc("GARBAGE_ARGS".into()),
            CallError::Accepted(s) => Self::Rpc(format!("{s:?}")),
        }
    }
}

/// What REGISTER hands a data server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Registration {
    /// The id the configuration gives the data server at this address.
    pub ds_id: u16,
    /// The MDS's lease time in seconds (the data server refuses another one).
    pub lease_time: u32,
    /// The keys and boot epoch (`DsKeys::derive(server key, epoch)`).
    pub keys: DsKeys,
}

/// Why the MDS revokes a stateid (the data server answers I/O with the matching error).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RevokeReason {
    /// Administrative revocation or fencing: `NFS4ERR_ADMIN_REVOKED`.
    Admin,
    /// The client's lease expired: `NFS4ERR_EXPIRED`.
    Expired,
    /// A revoked delegation: `NFS4ERR_DELEG_REVOKED`.
    Delegation,
    /// Closed or freed on the MDS: `NFS4ERR_BAD_STATEID`, as the MDS answers it.
    Closed,
}

impl RevokeReason {
    fn wire(self) -> CtlRevokeReason {
        match self {
            Self::Admin => CtlRevokeReason::CTL_REVOKED_ADMIN,
            Self::Expired => CtlRevokeReason::CTL_REVOKED_EXPIRED,
            Self::Delegation => CtlRevokeReason::CTL_REVOKED_DELEG,
            Self::Closed => CtlRevokeReason::CTL_REVOKED_CLOSED,
        }
    }
}

/// Control calls sent, by data server and procedure (`pnfs_ctl_calls_total`): what the MDS's
/// background work (settling sizes, revoking stateids, removing objects) costs the data
/// servers, visible to an operator and countable by a test. One per registry
/// ([`crate::pnfs::devices::Devices`]), shared by every connection it makes, so counts
/// survive reconnections.
#[derive(Debug, Default)]
pub struct CallCounts(Mutex<BTreeMap<(u16, CtlProc), u64>>);

impl CallCounts {
    fn add(&self, ds: u16, proc_: CtlProc) {
        let mut m = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        *m.entry((ds, proc_)).or_default() += 1;
    }

    /// Calls of `proc_` sent to data server `ds`.
    pub fn get(&self, ds: u16, proc_: CtlProc) -> u64 {
        let m = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        m.get(&(ds, proc_)).copied().unwrap_or(0)
    }

    /// Every (data server, procedure) with its count, in that order.
    pub fn snapshot(&self) -> Vec<((u16, CtlProc), u64)> {
        let m = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        m.iter().map(|(&k, &n)| (k, n)).collect()
    }
}

/// Connection ids of control clients (for logs), apart from the NFS connections' ids.
static NEXT_CONN: AtomicU64 = AtomicU64::new(1 << 41);

/// A connection to one data server's control service (clones share it, and the boot nonce
/// learnt).
#[derive(Clone)]
pub struct DsControl {
    conn: Conn,
    ds_id: u16,
    key: Arc<ClusterKey>,
    stamper: Arc<Stamper>,
    timeout: Duration,
    /// Where the wall time of the calls' stamps comes from: the MDS's clock.
    clock: SharedClock,
    /// The data server's boot nonce, once HELLO told it; forgotten when a call is refused
    /// as made for another boot.
    boot: Arc<Mutex<Option<BootNonce>>>,
    /// Where calls are counted ([`DsControl::with_counts`]; its own otherwise).
    counts: Arc<CallCounts>,
}

impl fmt::Debug for DsControl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "DsControl({:?})", self.conn)
    }
}

impl DsControl {
    /// Connects to the control service of data server `ds_id` at `addr` (within `timeout`,
    /// which also bounds each call). Calls are signed for that data server only.
    pub async fn connect(
        addr: SocketAddr,
        ds_id: u16,
        key: Arc<ClusterKey>,
        timeout: Duration,
    ) -> Result<Self, CtlError> {
        Self::connect_with(&TcpConnector, addr, ds_id, key, timeout).await
    }

    /// [`DsControl::connect`] through `connector` (TCP in production, in-process streams
    /// in the test kit's cluster).
    pub async fn connect_with(
        connector: &dyn DsConnector,
        addr: SocketAddr,
        ds_id: u16,
        key: Arc<ClusterKey>,
        timeout: Duration,
    ) -> Result<Self, CtlError> {
        let Connected { stream, local } =
            tokio::time::timeout(timeout, connector.connect(addr, ds_id))
                .await
                .map_err(|_| CtlError::Timeout)?
                .map_err(CtlError::Connect)?;
        // Replies carry READ data of up to MAX_CTL_IO: records up to MAX_CTL_RECORD.
        let limits = ConnLimits {
            max_fragment: MAX_CTL_RECORD as usize,
            max_record: MAX_CTL_RECORD as usize,
            max_in_flight: 16,
        };
        let id = NEXT_CONN.fetch_add(1, Ordering::Relaxed);
        let (conn, run) = transport::start(stream, id, addr, local, Arc::new(NoCalls), limits);
        tokio::spawn(async move {
            if let Err(e) = run.await {
                tracing::info!(%addr, error = %e, "control connection to data server ended");
            }
        });
        Ok(Self {
            conn,
            ds_id,
            key,
            stamper: Arc::new(Stamper::new(MDS_NODE)),
            timeout,
            clock: nfs_server::clock::system(),
            boot: Arc::new(Mutex::new(None)),
            counts: Arc::default(),
        })
    }

    /// Counts this connection's calls in `counts` (the registry's).
    pub fn with_counts(mut self, counts: Arc<CallCounts>) -> Self {
        self.counts = counts;
        self
    }

    /// Stamps calls with `clock`'s wall time (the MDS's clock) instead of the system's.
    pub fn with_clock(mut self, clock: SharedClock) -> Self {
        self.clock = clock;
        self
    }

    /// The data server's address.
    pub fn peer(&self) -> SocketAddr {
        self.conn.peer()
    }

    /// True once the connection has closed (connect again).
    pub fn is_closed(&self) -> bool {
        self.conn.is_closed()
    }

    /// The data server boot calls are signed for, once learnt.
    pub fn boot(&self) -> Option<DsBoot> {
        let boot = *self.boot.lock().unwrap_or_else(PoisonError::into_inner);
        boot.map(|boot| DsBoot {
            ds_id: u32::from(self.ds_id),
            boot,
        })
    }

    /// Signs and sends one call whose arguments `build` encodes as pieces (the MAC covers
    /// them all); returns the verified results. Learns the boot nonce first if need be, and
    /// again (then calls once more) if the data server says the call was made for another
    /// of its boots.
    async fn call_raw(
        &self,
        proc_: CtlProc,
        build: impl Fn(&ClusterKey, CallStamp) -> Vec<Bytes>,
    ) -> Result<Bytes, CtlError> {
        let to = self.learnt_boot().await?;
        match self.call_to(to, proc_, &build).await {
            Err(CtlError::Denied(AuthStat::AUTH_REJECTEDCRED)) => {
                tracing::info!(
                    ds = self.ds_id,
                    peer = %self.peer(),
                    "data server refused a call as made for another of its boots (it \
                     restarted): asking its boot nonce again"
                );
                let to = self.learnt_boot().await?;
                self.call_to(to, proc_, &build).await
            }
            r => r,
        }
    }

    /// The boot to sign calls for: the one learnt, or HELLO's answer.
    async fn learnt_boot(&self) -> Result<DsBoot, CtlError> {
        match self.boot() {
            Some(b) => Ok(b),
            None => self.hello().await.map(|ok| DsBoot {
                ds_id: ok.ds_id,
                boot: ok.boot,
            }),
        }
    }

    /// One signed call for the data server boot `to`. A refusal as made for another boot
    /// forgets `to`, so the next call asks HELLO again.
    async fn call_to(
        &self,
        to: DsBoot,
        proc_: CtlProc,
        build: &impl Fn(&ClusterKey, CallStamp) -> Vec<Bytes>,
    ) -> Result<Bytes, CtlError> {
        let stamp = self.stamper.stamp(to, unix_ms(self.clock.wall()));
        let args = build(&self.key, stamp);
        self.counts.add(self.ds_id, proc_);
        let cred = self
            .key
            .sign_call(stamp, PNFS_CTL_PROGRAM, PNFS_CTL_VERSION, proc_.0, &args);
        let reply = tokio::time::timeout(
            self.timeout,
            self.conn.call(
                PNFS_CTL_PROGRAM,
                PNFS_CTL_VERSION,
                proc_.0,
                cred.clone(),
                args,
            ),
        )
        .await
        .map_err(|_| CtlError::Timeout)?;
        let body = match reply.map_err(CtlError::from) {
            Err(CtlError::Denied(AuthStat::AUTH_REJECTEDCRED)) => {
                let mut boot = self.boot.lock().unwrap_or_else(PoisonError::into_inner);
                if *boot == Some(to.boot) {
                    *boot = None;
                }
                return Err(CtlError::Denied(AuthStat::AUTH_REJECTEDCRED));
            }
            r => r?,
        };
        self.key.open_reply(&cred, body).map_err(CtlError::BadReply)
    }

    /// HELLO: which data server answers and its boot nonce, which later calls are signed
    /// for. Checks it is the data server we meant.
    pub async fn hello(&self) -> Result<HelloOk, CtlError> {
        let any = DsBoot {
            ds_id: u32::from(self.ds_id),
            boot: [0; BOOT_NONCE_LEN],
        };
        let results = self
            .call_to(any, CtlProc::CTLPROC_HELLO, &|_, _| {
                vec![xdr::to_bytes(&())]
            })
            .await?;
        match xdr::from_bytes::<HelloRes>(results).map_err(CtlError::Decode)? {
            HelloRes::Ok(ok) if ok.ds_id != u32::from(self.ds_id) => Err(CtlError::Mismatch(
                format!("asked data server {}, got {}", self.ds_id, ok.ds_id),
            )),
            HelloRes::Ok(ok) => {
                *self.boot.lock().unwrap_or_else(PoisonError::into_inner) = Some(ok.boot);
                Ok(ok)
            }
            HelloRes::Err(s) => Err(CtlError::Status(s)),
        }
    }

    async fn call<A: Xdr, R: Xdr>(&self, proc_: CtlProc, args: &A) -> Result<R, CtlError> {
        let results = self
            .call_raw(proc_, |_, _| vec![xdr::to_bytes(args)])
            .await?;
        xdr::from_bytes(results).map_err(CtlError::Decode)
    }

    /// NULL: an authenticated ping (the data server is up and shares our secret).
    pub async fn null(&self) -> Result<(), CtlError> {
        self.call::<(), ()>(CtlProc::CTLPROC_NULL, &()).await
    }

    /// REGISTER: hands the data server the keys (sealed), epoch and lease time; returns what
    /// it says of itself, after checking it is the data server we meant.
    pub async fn register(&self, r: &Registration) -> Result<RegisterOk, CtlError> {
        let results = self
            .call_raw(CtlProc::CTLPROC_REGISTER, |key, stamp| {
                let mut keys = [0u8; 64];
                keys[..32].copy_from_slice(&r.keys.stateid_key);
                keys[32..].copy_from_slice(&r.keys.fh_key);
                key.seal(stamp, REGISTER_SEAL_PURPOSE, &mut keys);
                let mut a = RegisterArgs {
                    ds_id: u32::from(r.ds_id),
                    mds_epoch: u32::from(r.keys.mds_epoch),
                    lease_time: r.lease_time,
                    sealed_stateid_key: [0; 32],
                    sealed_fh_key: [0; 32],
                };
                a.sealed_stateid_key.copy_from_slice(&keys[..32]);
                a.sealed_fh_key.copy_from_slice(&keys[32..]);
                vec![xdr::to_bytes(&a)]
            })
            .await?;
        match xdr::from_bytes::<RegisterRes>(results).map_err(CtlError::Decode)? {
            RegisterRes::Ok(ok) if ok.ds_id != u32::from(r.ds_id) => Err(CtlError::Mismatch(
                format!("asked data server {}, got {}", r.ds_id, ok.ds_id),
            )),
            RegisterRes::Ok(ok) => Ok(ok),
            RegisterRes::Err(s) => Err(CtlError::Status(s)),
        }
    }

    /// OBJECT_SIZE: the size of each object, in order (0 for a missing one).
    pub async fn object_sizes(&self, objects: &[ObjectId]) -> Result<Vec<u64>, CtlError> {
        self.per_object(
            CtlProc::CTLPROC_OBJECT_SIZE,
            objects,
            |objects| ObjectSizeArgs { objects },
            |res| match res {
                ObjectSizeRes::Ok(ok) => Ok(ok.sizes),
                ObjectSizeRes::Err(s) => Err(s),
            },
            "sizes",
        )
        .await
    }

    /// TRUNCATE: sets the sizes of `file`'s objects here, as `(stripe, size)` pairs; durable
    /// when this returns. `version` is the file's change attribute when the truncate was
    /// planned: the data server forgets where the file ends until a newer SIZE_HINT.
    pub async fn truncate(
        &self,
        file: u64,
        sizes: &[(u32, u64)],
        version: u64,
    ) -> Result<(), CtlError> {
        self.status_chunks(CtlProc::CTLPROC_TRUNCATE, sizes, |chunk| TruncateArgs {
            file,
            sizes: chunk
                .iter()
                .map(|&(stripe, size)| StripeSize { stripe, size })
                .collect(),
            version,
        })
        .await
    }

    /// SIZE_HINT: tells the data server where files end in its objects (advisory; see
    /// docs/design.md, "End of file on the data servers").
    pub async fn size_hint(&self, ends: &[ObjectEnd]) -> Result<(), CtlError> {
        self.status_chunks(CtlProc::CTLPROC_SIZE_HINT, ends, |chunk| SizeHintArgs {
            ends: chunk.to_vec(),
        })
        .await
    }

    /// REMOVE: deletes every object of these files here, durably; returns how many objects
    /// went. Files with none here are fine (retries after a crash).
    pub async fn remove(&self, files: &[u64]) -> Result<u64, CtlError> {
        let mut removed = 0;
        self.in_chunks(
            CtlProc::CTLPROC_REMOVE,
            files,
            |chunk| RemoveArgs {
                files: chunk.to_vec(),
            },
            |_, res| match res {
                RemoveRes::Ok(ok) => {
                    removed += ok.objects_removed;
                    Ok(())
                }
                RemoveRes::Err(s) => Err(CtlError::Status(s)),
            },
        )
        .await?;
        Ok(removed)
    }

    async fn status_call<A: Xdr>(&self, proc_: CtlProc, args: &A) -> Result<(), CtlError> {
        status_ok(self.call(proc_, args).await?)
    }

    /// Sends `items` in calls of at most [`MAX_CTL_LIST`] of them, in order, the arguments
    /// of each built by `args` from its chunk, and hands each chunk with its results to
    /// `take`; stops at the first failure (every procedure is idempotent: the caller may
    /// repeat the whole list). No call for an empty list.
    async fn in_chunks<T, A: Xdr, R: Xdr>(
        &self,
        proc_: CtlProc,
        items: &[T],
        args: impl Fn(&[T]) -> A,
        mut take: impl FnMut(&[T], R) -> Result<(), CtlError>,
    ) -> Result<(), CtlError> {
        for chunk in items.chunks(MAX_CTL_LIST as usize) {
            let results = self.call(proc_, &args(chunk)).await?;
            take(chunk, results)?;
        }
        Ok(())
    }

    /// [`Self::in_chunks`] for a procedure that answers only a status.
    async fn status_chunks<T, A: Xdr>(
        &self,
        proc_: CtlProc,
        items: &[T],
        args: impl Fn(&[T]) -> A,
    ) -> Result<(), CtlError> {
        self.in_chunks(proc_, items, args, |_, res| status_ok(res))
            .await
    }

    /// [`Self::in_chunks`] for a procedure that answers one `T` per object, in order:
    /// `args` wraps a chunk of objects, `answers` takes the list (or the failure) out of the
    /// results, whose length must be the chunk's (else a `Mismatch` naming `what` came back).
    async fn per_object<A: Xdr, R: Xdr, T>(
        &self,
        proc_: CtlProc,
        objects: &[ObjectId],
        args: impl Fn(Vec<CtlObject>) -> A,
        answers: impl Fn(R) -> Result<Vec<T>, CtlStat>,
        what: &str,
    ) -> Result<Vec<T>, CtlError> {
        let mut out = Vec::with_capacity(objects.len());
        self.in_chunks(
            proc_,
            objects,
            |chunk| args(chunk.iter().copied().map(ctl_object).collect()),
            |chunk, res| {
                let got = answers(res).map_err(CtlError::Status)?;
                if got.len() != chunk.len() {
                    return Err(CtlError::Mismatch(format!(
                        "{} {what} for {} objects",
                        got.len(),
                        chunk.len()
                    )));
                }
                out.extend(got);
                Ok(())
            },
        )
        .await?;
        Ok(out)
    }

    /// REVOKE: the data server refuses these stateids (by `other`, each with its reason)
    /// from the moment this returns, and forgets `forget` (stateids freed on the MDS). Send
    /// all of a fenced client's stateids in one call where they fit; longer lists go in
    /// several calls, each applied whole.
    pub async fn revoke(
        &self,
        mds_epoch: u16,
        revoke: &[(StateOther, RevokeReason)],
        forget: &[StateOther],
    ) -> Result<(), CtlError> {
        let max = MAX_CTL_LIST as usize;
        let (mut r, mut f) = (revoke, forget);
        loop {
            let (rc, rr) = r.split_at(r.len().min(max));
            let (fc, fr) = f.split_at(f.len().min(max));
            let args = RevokeArgs {
                mds_epoch: u32::from(mds_epoch),
                revoke: rc
                    .iter()
                    .map(|&(other, why)| RevokedState {
                        other,
                        why: why.wire(),
                    })
                    .collect(),
                forget: fc.to_vec(),
                closed: Vec::new(),
            };
            self.status_call(CtlProc::CTLPROC_REVOKE, &args).await?;
            (r, f) = (rr, fr);
            if r.is_empty() && f.is_empty() {
                return Ok(());
            }
        }
    }

    /// REVOKE of the open and lock stateids with these counters (inclusive ranges): closed
    /// or freed on the MDS. In several calls if there are more ranges than one call holds.
    pub async fn close_counters(
        &self,
        mds_epoch: u16,
        ranges: &[(u32, u32)],
    ) -> Result<(), CtlError> {
        self.status_chunks(CtlProc::CTLPROC_REVOKE, ranges, |chunk| RevokeArgs {
            mds_epoch: u32::from(mds_epoch),
            revoke: Vec::new(),
            forget: Vec::new(),
            closed: chunk
                .iter()
                .map(|&(first, last)| CtlCounterRange { first, last })
                .collect(),
        })
        .await
    }

    /// SET_ACCESS: after OPEN upgrades or downgrades, the share access (`OPEN4_SHARE_ACCESS_*`,
    /// 1..=3) the data server checks for each stateid, from the moment this returns.
    pub async fn set_access(
        &self,
        mds_epoch: u16,
        changes: &[(StateOther, u32)],
    ) -> Result<(), CtlError> {
        self.status_chunks(CtlProc::CTLPROC_SET_ACCESS, changes, |chunk| {
            SetAccessArgs {
                mds_epoch: u32::from(mds_epoch),
                changes: chunk
                    .iter()
                    .map(|&(other, access)| AccessChange { other, access })
                    .collect(),
            }
        })
        .await
    }

    /// HEALTH: space, load and state of the data server.
    pub async fn health(&self) -> Result<HealthOk, CtlError> {
        match self.call(CtlProc::CTLPROC_HEALTH, &()).await? {
            HealthRes::Ok(h) => Ok(h),
            HealthRes::Err(s) => Err(CtlError::Status(s)),
        }
    }
}

/// A status-only answer as a result.
fn status_ok(r: CtlStatusRes) -> Result<(), CtlError> {
    if r.status == CtlStat::CTL_OK {
        Ok(())
    } else {
        Err(CtlError::Status(r.status))
    }
}

fn ctl_object(o: ObjectId) -> CtlObject {
    CtlObject {
        file: o.file,
        stripe: o.stripe,
    }
}

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
//! MDS), and run where the NFS side's do (on the blocking pool unless the store is in
//! memory). WRITE data stays a slice of the received record down to `pwritev`, READ data a
//! buffer of its own up to the vectored write of the reply.
//!
//! A data server can check no stateid before it has the MDS's keys, so `pnfs ds` starts its
//! control service first and its NFS service on the first REGISTER ([`StartOnRegister`]).
//!
//! The procedures are in files by concern: `register` (REGISTER), `revoke` (REVOKE,
//! SET_ACCESS), `objects` (sizes, truncation, removal, space, copies), `mds_io` (READ, WRITE,
//! COMMIT) and `health` (HEALTH); `target` holds the [`DsTarget`] seam. This file authenticates
//! and dispatches.

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
use nfs_proto::nfs4::layout_files::{netaddr_from_socket_addr, rdma_netaddr_from_socket_addr};
use nfs_proto::rpc::{AcceptStat, RejectedReply};
use nfs_proto::transport::{CallHandler, Conn, ConnLimits, HandlerFuture, IncomingCall, Reply};
use nfs_proto::xdr::{self, Xdr};
use nfs_server::clock::SharedClock;
use nfs_server::io::{blocking, object_io, object_write};
use nfs_server::log_limit::LogLimiter;
use nfs_server::{Acceptor, ServeLimits};
use pfs_core::{Deallocated, ObjectId, ObjectStore, SeekWhat, Stability, StoreError};
use tokio::net::TcpListener;

use crate::gate::Revoked;
use crate::server::{DataServer, DsError, DsOptions};

mod health;
mod mds_io;
mod objects;
mod register;
mod revoke;
mod target;
#[cfg(test)]
mod tests;

pub use target::{DsTarget, StartOnRegister};

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
    /// Where clients reach its NFS over RDMA, when it listens there (reported after the TCP
    /// addresses with netid `rdma`/`rdma6`).
    pub rdma_addresses: Vec<SocketAddr>,
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
    CtlAddr::from(netaddr_from_socket_addr(a))
}

/// `a` as an RPC-over-RDMA address of a REGISTER reply (netid `rdma` or `rdma6`).
pub fn rdma_universal_address(a: SocketAddr) -> CtlAddr {
    CtlAddr::from(rdma_netaddr_from_socket_addr(a))
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
                .chain(
                    cfg.rdma_addresses
                        .iter()
                        .copied()
                        .map(rdma_universal_address),
                )
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

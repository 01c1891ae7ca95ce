//! The MDS's control client against a data server's control service, over in-process
//! streams (the client connects through a [`DsConnector`] of the test's own, as the
//! in-memory cluster's MDS does):
//! REGISTER, OBJECT_SIZE, TRUNCATE, REMOVE, REVOKE, SET_ACCESS, HEALTH, READ, WRITE, COMMIT,
//! HELLO and the boot nonce (learnt again when the data server restarts behind the
//! connection; a captured call replayed after a restart or to another data server is
//! refused), and what a wrong secret or a forged reply gets. The data server's NFS side is a recorder here; the control
//! service driving a real `DataServer` is tested in `data-server/tests/control.rs`.

use std::collections::HashMap;
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU16, Ordering};
use std::sync::{Arc, LazyLock, Mutex};
use std::time::Duration;

use bytes::Bytes;
use cluster::keys::DsKeys;
use data_server::control::{stream_server, ControlConfig, ControlService, DsTarget};
use data_server::{DsError, Revoked};
use mds::pnfs::dsconnect::{ConnectFuture, Connected, DsConnector};
use mds::pnfs::dsctl::{CtlError, DsControl, Registration, RevokeReason};
use nfs_proto::control::{
    ClusterKey, CtlBackend, CtlOpCount, CtlProc, CtlStat, StateOther, MAX_CTL_IO, MAX_CTL_LIST,
};
use nfs_proto::rpc::{AuthStat, MsgBody, RejectedReply, ReplyBody, RpcMsg};
use nfs_proto::transport::{
    self, CallHandler, Conn, ConnLimits, HandlerFuture, IncomingCall, Reply,
};
use nfs_server::ServeLimits;
use pfs_core::{LocalStore, ObjectId, ObjectStore, Stability};
use tokio::io::DuplexStream;
use tokio::task::AbortHandle;

const SECRET: [u8; 32] = *b"0123456789abcdef0123456789abcdef";
const DS_ID: u16 = 2;
const TIMEOUT: Duration = Duration::from_secs(10);

/// Serves one accepted connection (the server's end, the peer's address, its own address);
/// returns the task doing it.
type Serve = Box<dyn Fn(DuplexStream, SocketAddr, SocketAddr) -> AbortHandle + Send + Sync>;

/// In-process endpoints by address, in place of loopback listeners: the tests' data servers,
/// impostors and taps. Clients reach them with [`Net::dial`], or through [`Net`] as the
/// control client's [`DsConnector`].
#[derive(Default)]
struct Net(Mutex<HashMap<SocketAddr, (Serve, Vec<AbortHandle>)>>);

/// The one network of the test process (each endpoint has an address of its own).
static NET: LazyLock<Net> = LazyLock::new(Net::default);

/// Where the control clients connect from.
const CLIENT: SocketAddr = SocketAddr::new(
    std::net::IpAddr::V4(std::net::Ipv4Addr::new(198, 51, 100, 1)),
    1024,
);

impl Net {
    /// Serves connections to a new address with `serve`.
    fn listen(&self, serve: Serve) -> SocketAddr {
        static NEXT: AtomicU16 = AtomicU16::new(30_000);
        let addr = SocketAddr::from(([192, 0, 2, 1], NEXT.fetch_add(1, Ordering::Relaxed)));
        self.0.lock().unwrap().insert(addr, (serve, Vec::new()));
        addr
    }

    /// Stops serving `addr`: later connections are refused, and every one made ends.
    fn close(&self, addr: SocketAddr) {
        if let Some((_, tasks)) = self.0.lock().unwrap().remove(&addr) {
            tasks.iter().for_each(AbortHandle::abort);
        }
    }

    /// A new connection to `addr` (refused if nothing serves it).
    fn dial(&self, addr: SocketAddr) -> io::Result<DuplexStream> {
        let mut net = self.0.lock().unwrap();
        let (serve, tasks) = net
            .get_mut(&addr)
            .ok_or_else(|| io::Error::from(io::ErrorKind::ConnectionRefused))?;
        let (near, far) = tokio::io::duplex(4 << 20);
        tasks.push(serve(far, CLIENT, addr));
        Ok(near)
    }
}

impl DsConnector for Net {
    fn connect(&self, addr: SocketAddr, _ds_id: u16) -> ConnectFuture<'_> {
        let stream = self.dial(addr);
        Box::pin(async move {
            Ok(Connected {
                stream: Box::new(stream?),
                local: CLIENT,
            })
        })
    }
}

/// A control client of data server `ds_id` at `addr`, with the cluster key of `secret`.
async fn connect(addr: SocketAddr, ds_id: u16, secret: &[u8; 32]) -> Result<DsControl, CtlError> {
    DsControl::connect_with(
        &*NET,
        addr,
        ds_id,
        Arc::new(ClusterKey::from_secret(secret)),
        TIMEOUT,
    )
    .await
}

/// Serves each connection with `handler`, as `transport::start` over an accepted socket.
fn serve_calls<H: CallHandler>(handler: Arc<H>, limits: ConnLimits) -> Serve {
    Box::new(move |stream, peer, local| {
        let (c, run) = transport::start(stream, 1, peer, local, handler.clone(), limits);
        tokio::spawn(async move {
            let _c = c;
            let _ = run.await;
        })
        .abort_handle()
    })
}

/// What the control service did to the NFS side, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Event {
    Keys(DsKeys),
    Revoke(StateOther, Revoked),
    Forget(StateOther),
    Access(StateOther, u8),
    Closed(Vec<(u32, u32)>),
}

#[derive(Default)]
struct Recorder(Mutex<Vec<Event>>);

impl Recorder {
    fn take(&self) -> Vec<Event> {
        std::mem::take(&mut *self.0.lock().unwrap())
    }
}

impl DsTarget for Recorder {
    fn set_keys(&self, keys: &DsKeys) -> Result<(), DsError> {
        self.0.lock().unwrap().push(Event::Keys(keys.clone()));
        Ok(())
    }
    fn revoke(&self, other: StateOther, why: Revoked) {
        self.0.lock().unwrap().push(Event::Revoke(other, why));
    }
    fn forget(&self, other: &StateOther) {
        self.0.lock().unwrap().push(Event::Forget(*other));
    }
    fn set_access(&self, other: StateOther, access: u8) {
        self.0.lock().unwrap().push(Event::Access(other, access));
    }
    fn close_counters(&self, ranges: &[(u32, u32)]) {
        self.0.lock().unwrap().push(Event::Closed(ranges.to_vec()));
    }
    fn op_counts(&self) -> Vec<CtlOpCount> {
        // As if it had served seven READs and one WRITE refused for a bad stateid.
        vec![
            CtlOpCount {
                op: 25,
                status: 0,
                count: 7,
            },
            CtlOpCount {
                op: 38,
                status: 10025,
                count: 1,
            },
        ]
    }
}

struct Ds {
    addr: SocketAddr,
    nfs: Arc<Recorder>,
    service: Arc<ControlService>,
    store: Arc<LocalStore>,
    _dir: tempfile::TempDir,
}

/// A control service for data server `id` over a local store in `dir`, driving `nfs`.
fn service(id: u16, store: &Arc<LocalStore>, nfs: &Arc<Recorder>) -> Arc<ControlService> {
    Arc::new(
        ControlService::new(
            ControlConfig {
                ds_id: u32::from(id),
                lease_time: Duration::from_secs(90),
                backend: CtlBackend::CTL_BACKEND_LOCAL,
                addresses: vec!["127.0.0.1:20492".parse().unwrap()],
                rdma_addresses: vec![],
            },
            store.clone(),
            nfs.clone(),
            ClusterKey::from_secret(&SECRET),
        )
        .unwrap(),
    )
}

async fn start_ds() -> Ds {
    start_ds_in(DS_ID, tempfile::tempdir().unwrap()).await
}

/// Data server `id` over the objects in `dir` (a restart, if a data server used it before).
async fn start_ds_in(id: u16, dir: tempfile::TempDir) -> Ds {
    let store = Arc::new(LocalStore::open(dir.path()).unwrap());
    let nfs = Arc::new(Recorder::default());
    let service = service(id, &store, &nfs);
    // What a listener gives each connection: the service's limits and reply budget.
    let server = stream_server(service.clone(), ServeLimits::default());
    let addr = NET.listen(Box::new(move |stream, peer, local| {
        tokio::spawn(server.serve(stream, peer, local)).abort_handle()
    }));
    Ds {
        addr,
        nfs,
        service,
        store,
        _dir: dir,
    }
}

impl Ds {
    /// Stops listening; the connections made stay.
    fn stop_listening(&self) {
        NET.close(self.addr);
    }

    /// Stops it (every connection goes); returns its data directory for a restart.
    async fn stop(self) -> tempfile::TempDir {
        self.stop_listening();
        self._dir
    }
}

async fn client(ds: &Ds) -> DsControl {
    connect(ds.addr, DS_ID, &SECRET).await.unwrap()
}

fn registration(epoch: u16) -> Registration {
    Registration {
        ds_id: DS_ID,
        lease_time: 90,
        keys: DsKeys::derive(&[0x5a; 32], epoch),
    }
}

fn other(n: u32) -> StateOther {
    let mut o = [0u8; 12];
    o[..4].copy_from_slice(&n.to_be_bytes());
    o
}

#[tokio::test]
async fn register_hands_over_the_keys_and_the_data_server_says_who_it_is() {
    let ds = start_ds().await;
    let c = client(&ds).await;
    c.null().await.unwrap();
    assert_eq!(ds.service.registered_epoch(), None);
    let ok = c.register(&registration(7)).await.unwrap();
    assert_eq!(ok.ds_id, u32::from(DS_ID));
    assert_eq!(ok.boot_verifier, ds.service.boot_verifier());
    assert_eq!(ok.write_verifier, ds.store.verifier());
    assert_eq!(ok.backend, CtlBackend::CTL_BACKEND_LOCAL);
    assert_eq!(ok.addresses.len(), 1);
    assert_eq!(ok.addresses[0].netid.as_str(), Some("tcp"));
    assert_eq!(ok.addresses[0].uaddr.as_str(), Some("127.0.0.1.80.12"));
    assert_eq!(
        ds.nfs.take(),
        vec![Event::Keys(registration(7).keys)],
        "the keys arrive unsealed and whole"
    );
    assert_eq!(ds.service.registered_epoch(), Some(7));
}

#[tokio::test]
async fn register_for_another_id_or_lease_is_refused_and_installs_nothing() {
    let ds = start_ds().await;
    let c = client(&ds).await;
    let e = c
        .register(&Registration {
            ds_id: 3,
            ..registration(1)
        })
        .await
        .unwrap_err();
    assert!(matches!(e, CtlError::Status(CtlStat::CTL_WRONG_ID)), "{e}");
    let e = c
        .register(&Registration {
            lease_time: 60,
            ..registration(1)
        })
        .await
        .unwrap_err();
    assert!(
        matches!(e, CtlError::Status(CtlStat::CTL_LEASE_MISMATCH)),
        "{e}"
    );
    assert!(ds.nfs.take().is_empty());
    assert_eq!(ds.service.registered_epoch(), None);
}

#[tokio::test]
async fn object_sizes_truncate_and_remove_act_on_the_store() {
    let ds = start_ds().await;
    let c = client(&ds).await;
    let obj = |file, stripe| ObjectId { file, stripe };
    for (id, len) in [(obj(10, 0), 100usize), (obj(10, 1), 50), (obj(11, 0), 7)] {
        ds.store
            .write(id, 0, &[Bytes::from(vec![1u8; len])], Stability::FileSync)
            .unwrap();
    }
    let sizes = c
        .object_sizes(&[obj(10, 0), obj(10, 1), obj(11, 0), obj(12, 0)])
        .await
        .unwrap();
    assert_eq!(sizes, vec![100, 50, 7, 0]);

    c.truncate(10, &[(0, 30), (1, 4096)], 0).await.unwrap();
    assert_eq!(ds.store.size(obj(10, 0)).unwrap(), 30);
    assert_eq!(ds.store.size(obj(10, 1)).unwrap(), 4096);
    let e = c.truncate(10, &[(0, 1), (0, 2)], 0).await.unwrap_err();
    assert!(matches!(e, CtlError::Status(CtlStat::CTL_INVAL)), "{e}");
    assert_eq!(ds.store.size(obj(10, 0)).unwrap(), 30, "refused as a whole");
    let e = c.truncate(10, &[(0, u64::MAX)], 0).await.unwrap_err();
    assert!(matches!(e, CtlError::Status(CtlStat::CTL_FBIG)), "{e}");

    assert_eq!(c.remove(&[10, 99]).await.unwrap(), 2);
    assert_eq!(ds.store.size(obj(10, 0)).unwrap(), 0);
    assert_eq!(ds.store.size(obj(10, 1)).unwrap(), 0);
    assert_eq!(ds.store.size(obj(11, 0)).unwrap(), 7, "another file stays");
    assert_eq!(
        c.remove(&[10]).await.unwrap(),
        0,
        "a retried remove is fine"
    );

    // More objects than one call carries are split into several calls.
    let many: Vec<ObjectId> = (0..MAX_CTL_LIST + 5).map(|i| obj(11, i)).collect();
    let sizes = c.object_sizes(&many).await.unwrap();
    assert_eq!(sizes.len(), many.len());
    assert_eq!((sizes[0], sizes[1]), (7, 0));
}

#[tokio::test]
async fn write_read_and_commit_reach_the_object_with_the_pieces_sent_as_they_are() {
    let ds = start_ds().await;
    let c = client(&ds).await;
    let id = ObjectId {
        file: 20,
        stripe: 1,
    };
    // Pieces of one buffer that lie apart (a dense object's units of a client WRITE).
    let buf = Bytes::from((0..9000u32).map(|i| (i % 251) as u8).collect::<Vec<_>>());
    let pieces = [
        buf.slice(0..1000),
        buf.slice(3000..4000),
        buf.slice(8000..8003),
    ];
    let w = c.write(id, 64, Stability::Unstable, &pieces).await.unwrap();
    assert_eq!(w.count, 2003);
    assert_eq!(w.verifier, ds.store.verifier());
    let joined: Vec<u8> = pieces.concat();
    assert_eq!(ds.store.read(id, 64, 4096).unwrap().data, joined);

    let r = c.read(id, 0, 4096).await.unwrap();
    assert!(r.eof);
    assert_eq!(r.data.len(), 64 + 2003);
    assert_eq!(&r.data[64..], &joined[..]);
    let r = c.read(id, 100, 10).await.unwrap();
    assert_eq!((r.data.len(), r.eof), (10, false));
    assert_eq!(c.commit(id, 0, 0).await.unwrap(), ds.store.verifier());

    // More than one call carries is the caller's mistake, caught before sending.
    let e = c.read(id, 0, MAX_CTL_IO + 1).await.unwrap_err();
    assert!(matches!(e, CtlError::TooLong(_)), "{e}");
    let big = Bytes::from(vec![0u8; MAX_CTL_IO as usize]);
    let e = c
        .write(id, 0, Stability::FileSync, &[big.clone(), big.slice(..1)])
        .await
        .unwrap_err();
    assert!(matches!(e, CtlError::TooLong(_)), "{e}");
    // Exactly MAX_CTL_IO goes through, both ways.
    let w = c.write(id, 0, Stability::FileSync, &[big]).await.unwrap();
    assert_eq!((w.count, w.committed), (MAX_CTL_IO, Stability::FileSync));
    let r = c.read(id, 0, MAX_CTL_IO).await.unwrap();
    assert_eq!(r.data.len(), MAX_CTL_IO as usize);
    // A store error comes back as its status.
    let e = c
        .write(id, u64::MAX - 2, Stability::FileSync, &[buf.slice(..5)])
        .await
        .unwrap_err();
    assert!(matches!(e, CtlError::Status(CtlStat::CTL_FBIG)), "{e}");
}

#[tokio::test]
async fn revocations_and_access_changes_reach_the_nfs_side_before_the_call_returns() {
    let ds = start_ds().await;
    let c = client(&ds).await;
    let e = c
        .revoke(1, &[(other(1), RevokeReason::Admin)], &[])
        .await
        .unwrap_err();
    assert!(
        matches!(e, CtlError::Status(CtlStat::CTL_NOT_REGISTERED)),
        "{e}"
    );
    c.register(&registration(1)).await.unwrap();
    ds.nfs.take();
    c.revoke(
        1,
        &[
            (other(1), RevokeReason::Admin),
            (other(2), RevokeReason::Expired),
            (other(3), RevokeReason::Delegation),
        ],
        &[other(9)],
    )
    .await
    .unwrap();
    assert_eq!(
        ds.nfs.take(),
        vec![
            Event::Forget(other(9)),
            Event::Revoke(other(1), Revoked::Admin),
            Event::Revoke(other(2), Revoked::Expired),
            Event::Revoke(other(3), Revoked::Delegation),
        ]
    );
    c.set_access(1, &[(other(4), 3), (other(5), 1)])
        .await
        .unwrap();
    assert_eq!(
        ds.nfs.take(),
        vec![Event::Access(other(4), 3), Event::Access(other(5), 1)]
    );
    // Another epoch, or an access no open has: refused, nothing applied.
    let e = c
        .revoke(2, &[(other(6), RevokeReason::Admin)], &[])
        .await
        .unwrap_err();
    assert!(
        matches!(e, CtlError::Status(CtlStat::CTL_STALE_EPOCH)),
        "{e}"
    );
    let e = c
        .set_access(1, &[(other(7), 2), (other(8), 4)])
        .await
        .unwrap_err();
    assert!(matches!(e, CtlError::Status(CtlStat::CTL_INVAL)), "{e}");
    assert!(ds.nfs.take().is_empty());

    // A fenced client's stateids longer than one call go in several calls, all applied.
    let all: Vec<(StateOther, RevokeReason)> = (100..100 + MAX_CTL_LIST + 10)
        .map(|n| (other(n), RevokeReason::Admin))
        .collect();
    c.revoke(1, &all, &[]).await.unwrap();
    let got = ds.nfs.take();
    assert_eq!(got.len(), all.len());
    assert_eq!(
        got.last(),
        Some(&Event::Revoke(all.last().unwrap().0, Revoked::Admin))
    );

    // The MDS restarts and registers its new epoch.
    c.register(&registration(2)).await.unwrap();
    assert_eq!(ds.nfs.take(), vec![Event::Keys(registration(2).keys)]);
    c.revoke(2, &[(other(6), RevokeReason::Admin)], &[])
        .await
        .unwrap();
}

#[tokio::test]
async fn health_reports_space_registration_uptime_and_operations() {
    let ds = start_ds().await;
    let c = client(&ds).await;
    let h = c.health().await.unwrap();
    assert_eq!(h.ds_id, u32::from(DS_ID));
    assert_eq!(h.mds_epoch, None);
    assert_eq!(h.boot_verifier, ds.service.boot_verifier());
    let fs = ds.store.statfs().unwrap();
    assert_eq!(h.space_total, fs.total);
    assert!(h.space_avail <= h.space_total);
    assert!(h.uptime_s < 60);
    assert_eq!(h.ops, ds.nfs.op_counts());
    c.register(&registration(4)).await.unwrap();
    assert_eq!(c.health().await.unwrap().mds_epoch, Some(4));
}

#[tokio::test]
async fn a_client_with_the_wrong_secret_is_refused_and_changes_nothing() {
    let ds = start_ds().await;
    let wrong = connect(ds.addr, DS_ID, &[9u8; 32]).await.unwrap();
    for e in [
        wrong.null().await.unwrap_err(),
        wrong.register(&registration(1)).await.unwrap_err(),
        wrong.remove(&[1]).await.unwrap_err(),
    ] {
        assert!(matches!(e, CtlError::Denied(AuthStat::AUTH_BADCRED)), "{e}");
    }
    assert!(ds.nfs.take().is_empty());
    assert_eq!(ds.service.registered_epoch(), None);
}

/// A "data server" that answers every call SUCCESS with the given body: it knows no secret.
struct Impostor(Bytes);

impl CallHandler for Impostor {
    fn handle(self: Arc<Self>, _: Conn, _: IncomingCall) -> HandlerFuture {
        let body = self.0.clone();
        Box::pin(async move { Reply::Success(vec![body]) })
    }
}

#[tokio::test]
async fn replies_from_a_server_without_the_secret_are_not_believed() {
    // Results that would decode (an OK status and one size), then 32 bytes of fake MAC; and a
    // reply too short to hold a MAC at all.
    for body in [
        Bytes::from(
            [
                &[0u8; 4][..],
                &1u32.to_be_bytes(),
                &5u64.to_be_bytes(),
                &[7u8; 32],
            ]
            .concat(),
        ),
        Bytes::from_static(&[0; 8]),
    ] {
        let impostor = Arc::new(Impostor(body));
        let addr = NET.listen(serve_calls(impostor, ConnLimits::default()));
        let c = connect(addr, DS_ID, &SECRET).await.unwrap();
        let e = c.object_sizes(&[ObjectId::whole(1)]).await.unwrap_err();
        assert!(matches!(e, CtlError::BadReply(_)), "{e}");
    }
}

#[tokio::test]
async fn a_data_server_that_stopped_listening_is_a_connect_error() {
    let ds = start_ds().await;
    client(&ds).await.null().await.unwrap();
    ds.stop_listening();
    let e = connect(ds.addr, DS_ID, &SECRET).await.unwrap_err();
    assert!(matches!(e, CtlError::Connect(_)), "{e}");
}

#[tokio::test]
async fn a_client_for_another_data_server_id_is_told_so_at_hello() {
    let ds = start_ds().await;
    let c = connect(ds.addr, DS_ID + 1, &SECRET).await.unwrap();
    let e = c.remove(&[1]).await.unwrap_err();
    assert!(
        matches!(&e, CtlError::Mismatch(m) if m.contains("asked data server 3, got 2")),
        "{e}"
    );
    assert!(c.boot().is_none(), "nothing learnt");
    // REGISTER goes nowhere either.
    let e = c.register(&registration(1)).await.unwrap_err();
    assert!(matches!(e, CtlError::Mismatch(_)), "{e}");
    assert_eq!(ds.service.registered_epoch(), None);
}

/// Hands each call to the control service of the moment: a data server that restarts
/// behind a connection that stays (as through a proxy that reconnects upstream).
struct Swappable(Mutex<Arc<ControlService>>);

impl CallHandler for Swappable {
    fn handle(self: Arc<Self>, conn: Conn, call: IncomingCall) -> HandlerFuture {
        let service = self.0.lock().unwrap().clone();
        service.handle(conn, call)
    }
}

#[tokio::test]
async fn a_client_learns_the_boot_again_when_its_data_server_restarts_behind_the_connection() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(LocalStore::open(dir.path()).unwrap());
    let nfs = Arc::new(Recorder::default());
    let first = service(DS_ID, &store, &nfs);
    let swap = Arc::new(Swappable(Mutex::new(first.clone())));
    let addr = NET.listen(serve_calls(
        swap.clone(),
        data_server::control::CONTROL_LIMITS,
    ));
    let c = connect(addr, DS_ID, &SECRET).await.unwrap();
    c.register(&registration(1)).await.unwrap();
    assert_eq!(c.boot(), Some(first.boot()));
    let id = ObjectId {
        file: 30,
        stripe: 0,
    };
    store
        .write(id, 0, &[Bytes::from(vec![1u8; 100])], Stability::FileSync)
        .unwrap();

    // The data server restarts: a new boot nonce, no registration.
    let second = service(DS_ID, &store, &nfs);
    assert_ne!(second.boot(), first.boot());
    *swap.0.lock().unwrap() = second.clone();
    // The call made for the old boot is refused, the client asks HELLO and calls again.
    c.truncate(30, &[(0, 10)], 0).await.unwrap();
    assert_eq!(store.size(id).unwrap(), 10);
    assert_eq!(c.boot(), Some(second.boot()));
    // What the registry then sees: another boot verifier, not registered with our epoch.
    let h = c.health().await.unwrap();
    assert_eq!(h.boot_verifier, second.boot_verifier());
    assert_eq!(h.mds_epoch, None);
    c.register(&registration(1)).await.unwrap();
    assert_eq!(second.registered_epoch(), Some(1));
}

/// A relay to `upstream` that keeps a copy of every byte its clients send: what an attacker
/// on the MDS-to-DS link records.
fn tap(upstream: SocketAddr) -> (SocketAddr, Arc<Mutex<Vec<u8>>>) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let seen = Arc::new(Mutex::new(Vec::new()));
    let copy = seen.clone();
    let addr = NET.listen(Box::new(move |client, _, _| {
        let copy = copy.clone();
        tokio::spawn(async move {
            let server = NET.dial(upstream).unwrap();
            let (mut cr, mut cw) = tokio::io::split(client);
            let (mut sr, mut sw) = tokio::io::split(server);
            tokio::spawn(async move {
                let _ = tokio::io::copy(&mut sr, &mut cw).await;
            });
            let mut buf = vec![0u8; 64 << 10];
            while let Ok(n @ 1..) = cr.read(&mut buf).await {
                copy.lock().unwrap().extend_from_slice(&buf[..n]);
                if sw.write_all(&buf[..n]).await.is_err() {
                    return;
                }
            }
        })
        .abort_handle()
    }));
    (addr, seen)
}

/// The last record of a captured stream that calls `proc_`, as sent (record marks included).
fn captured_call(stream: &[u8], proc_: CtlProc) -> Vec<u8> {
    let (mut at, mut start, mut body) = (0, 0, Vec::new());
    let mut found = None;
    while at + 4 <= stream.len() {
        let mark = u32::from_be_bytes(stream[at..at + 4].try_into().unwrap());
        let len = (mark & 0x7fff_ffff) as usize;
        body.extend_from_slice(&stream[at + 4..at + 4 + len]);
        at += 4 + len;
        if mark & 0x8000_0000 != 0 {
            let (msg, _) = RpcMsg::decode_header(Bytes::from(std::mem::take(&mut body))).unwrap();
            if matches!(msg.body, MsgBody::Call(c) if c.proc_ == proc_.0) {
                found = Some(stream[start..at].to_vec());
            }
            start = at;
        }
    }
    found.expect("the call went over the tap")
}

/// Sends `record` as it is on a new connection to `addr`; returns how it was refused.
async fn replay(addr: SocketAddr, record: &[u8]) -> AuthStat {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut s = NET.dial(addr).unwrap();
    s.write_all(record).await.unwrap();
    let mark = tokio::time::timeout(TIMEOUT, s.read_u32())
        .await
        .expect("a reply")
        .unwrap();
    assert!(mark & 0x8000_0000 != 0, "one fragment");
    let mut body = vec![0u8; (mark & 0x7fff_ffff) as usize];
    s.read_exact(&mut body).await.unwrap();
    match RpcMsg::decode_header(Bytes::from(body)).unwrap().0.body {
        MsgBody::Reply(ReplyBody::Denied(RejectedReply::AuthError(stat))) => stat,
        other => panic!("expected AUTH_ERROR, got {other:?}"),
    }
}

#[tokio::test]
async fn a_truncate_of_the_mds_client_replayed_after_a_restart_or_elsewhere_is_refused() {
    let id = ObjectId { file: 7, stripe: 0 };
    let three_mib = || [Bytes::from(vec![0xab; 3 << 20])];
    let ds = start_ds().await;
    let other = start_ds_in(DS_ID + 1, tempfile::tempdir().unwrap()).await;
    for d in [&ds, &other] {
        d.store
            .write(id, 0, &three_mib(), Stability::FileSync)
            .unwrap();
    }
    let (tapped, seen) = tap(ds.addr);
    let c = connect(tapped, DS_ID, &SECRET).await.unwrap();
    c.truncate(7, &[(0, 0)], 0).await.unwrap();
    assert_eq!(ds.store.size(id).unwrap(), 0);
    let truncate = captured_call(&seen.lock().unwrap(), CtlProc::CTLPROC_TRUNCATE);
    ds.store
        .write(id, 0, &three_mib(), Stability::FileSync)
        .unwrap();

    assert_eq!(replay(other.addr, &truncate).await, AuthStat::AUTH_BADCRED);
    assert_eq!(other.store.size(id).unwrap(), 3 << 20);

    let ds = start_ds_in(DS_ID, ds.stop().await).await;
    assert_eq!(
        replay(ds.addr, &truncate).await,
        AuthStat::AUTH_REJECTEDCRED
    );
    assert_eq!(
        ds.store.size(id).unwrap(),
        3 << 20,
        "the object is untouched"
    );
    assert_eq!(
        ds.store.read(id, (3 << 20) - 1, 1).unwrap().data[..],
        [0xab]
    );
    // The MDS's next connection says HELLO and truncates as before.
    client(&ds).await.truncate(7, &[(0, 1)], 0).await.unwrap();
    assert_eq!(ds.store.size(id).unwrap(), 1);
}

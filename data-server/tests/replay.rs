//! Control calls captured on the MDS-to-DS link and sent again where they were not meant to
//! go, over in-process streams: to another data server with the same cluster secret, to another
//! data server with the same id, and to the same data server after a restart (a new control
//! service over the same data directory, with an empty replay cache). Each is refused with
//! its AUTH_ERROR and leaves objects and registration as they were; the normal path (HELLO,
//! then calls for the boot it tells) keeps working.

mod support;

use std::net::SocketAddr;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use cluster::keys::DsKeys;
use data_server::control::{ControlConfig, ControlService, StartOnRegister};
use data_server::DsOptions;
use nfs_proto::control::{
    unix_ms, CallStamp, ClusterKey, CtlBackend, CtlProc, CtlStat, CtlStatusRes, DsBoot, HelloRes,
    RegisterArgs, RegisterRes, StripeSize, TruncateArgs, BOOT_NONCE_LEN, MDS_NODE,
    PNFS_CTL_PROGRAM, PNFS_CTL_VERSION, REGISTER_SEAL_PURPOSE,
};
use nfs_proto::rpc::{AuthStat, MsgBody, RejectedReply, ReplyBody, RpcMsg};
use nfs_proto::transport::{self, Conn, ConnLimits, NoCalls};
use nfs_proto::xdr::{self, Xdr};
use nfs_server::{ServeLimits, StreamServer};
use pfs_core::{LocalStore, ObjectId, ObjectStore, Stability};
use testkit::cluster::{ds_control_addr, MDS_ADDR};
use tokio::io::{AsyncReadExt, AsyncWriteExt, DuplexStream};

const SECRET: [u8; 32] = [0x5c; 32];
const TIMEOUT: Duration = Duration::from_secs(10);
const THREE_MIB: usize = 3 << 20;
const OBJECT: ObjectId = ObjectId { file: 7, stripe: 0 };

fn key() -> ClusterKey {
    ClusterKey::from_secret(&SECRET)
}

/// The test's time, Unix milliseconds: a fixed instant, which calls are stamped with and the
/// control services' clock reads (no test reads the wall clock).
fn now_ms() -> u64 {
    unix_ms(std::time::UNIX_EPOCH + Duration::from_secs(1_800_000_000))
}

/// One data server "process": its control service over a local store in `dir`, reached over
/// in-process streams, starting its NFS side on REGISTER.
struct Ds {
    /// Where its control service is reached (it labels connections).
    addr: SocketAddr,
    service: Arc<ControlService>,
    target: Arc<StartOnRegister>,
    store: Arc<LocalStore>,
    server: StreamServer<ControlService>,
}

async fn start_ds(id: u32, dir: &Path) -> Ds {
    let store = Arc::new(LocalStore::open(dir).unwrap());
    // Nothing here reaches the NFS side: the data server it starts is only looked at.
    let target = Arc::new(StartOnRegister::new(
        DsOptions::new(id),
        store.clone(),
        |_| {},
    ));
    let service = Arc::new(
        ControlService::new(
            ControlConfig {
                ds_id: id,
                lease_time: Duration::from_secs(90),
                backend: CtlBackend::CTL_BACKEND_LOCAL,
                addresses: vec![],
                rdma_addresses: vec![],
            },
            store.clone(),
            target.clone(),
            key(),
        )
        .unwrap()
        .with_clock(Arc::new(now_ms)),
    );
    let server = data_server::control::stream_server(service.clone(), ServeLimits::default());
    Ds {
        addr: ds_control_addr(u16::try_from(id).unwrap()),
        service,
        target,
        store,
        server,
    }
}

impl Ds {
    /// A new connection to its control service, from the MDS's address.
    fn stream(&self) -> DuplexStream {
        support::stream_to(&self.server, SocketAddr::new(MDS_ADDR.ip(), 700), self.addr)
    }

    /// Stops answering (no new connection; the store stays on disk).
    async fn stop(self) {
        drop(self);
        tokio::task::yield_now().await;
    }

    fn fill(&self, byte: u8) {
        self.store
            .write(
                OBJECT,
                0,
                &[Bytes::from(vec![byte; THREE_MIB])],
                Stability::FileSync,
            )
            .unwrap();
    }

    /// The object's size and its first and last bytes.
    fn object(&self) -> (u64, Vec<u8>) {
        let size = self.store.size(OBJECT).unwrap();
        let first = self.store.read(OBJECT, 0, 1).unwrap().data;
        let last = self
            .store
            .read(OBJECT, size.saturating_sub(1), 1)
            .unwrap()
            .data;
        (size, [&first[..], &last[..]].concat())
    }
}

/// A relay to `upstream` for one connection that keeps a copy of every byte the client
/// sends: what an attacker on the MDS-to-DS link records. Returns the client's end.
async fn tap(upstream: &Ds) -> (DuplexStream, Arc<Mutex<Vec<u8>>>) {
    let (client, near) = tokio::io::duplex(1 << 20);
    let server = upstream.stream();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let copy = seen.clone();
    tokio::spawn(async move {
        let (mut cr, mut cw) = tokio::io::split(near);
        let (mut sr, mut sw) = tokio::io::split(server);
        tokio::spawn(async move {
            let _ = tokio::io::copy(&mut sr, &mut cw).await;
        });
        let mut buf = vec![0u8; 64 << 10];
        loop {
            let n = match cr.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => n,
            };
            copy.lock().unwrap().extend_from_slice(&buf[..n]);
            if sw.write_all(&buf[..n]).await.is_err() {
                return;
            }
        }
    });
    (client, seen)
}

/// The records of a captured byte stream (RFC 5531 record marking), each as sent (marks
/// included) and as its joined body.
fn records(mut stream: &[u8]) -> Vec<(Vec<u8>, Bytes)> {
    let mut out = Vec::new();
    let (mut raw, mut body) = (Vec::new(), Vec::new());
    while stream.len() >= 4 {
        let mark = u32::from_be_bytes(stream[..4].try_into().unwrap());
        let len = (mark & 0x7fff_ffff) as usize;
        raw.extend_from_slice(&stream[..4 + len]);
        body.extend_from_slice(&stream[4..4 + len]);
        stream = &stream[4 + len..];
        if mark & 0x8000_0000 != 0 {
            out.push((
                std::mem::take(&mut raw),
                Bytes::from(std::mem::take(&mut body)),
            ));
        }
    }
    out
}

/// The captured call of procedure `proc_` (the last one, if several), as sent.
fn captured(seen: &Mutex<Vec<u8>>, proc_: CtlProc) -> Vec<u8> {
    let stream = seen.lock().unwrap().clone();
    records(&stream)
        .into_iter()
        .filter(|(_, body)| {
            let (msg, _) = RpcMsg::decode_header(body.clone()).unwrap();
            matches!(msg.body, MsgBody::Call(c) if c.proc_ == proc_.0)
        })
        .map(|(raw, _)| raw)
        .last()
        .expect("the call went over the tap")
}

/// Sends `record` as it is on a new connection to `ds`; returns the reply's body.
async fn replay(ds: &Ds, record: &[u8]) -> ReplyBody {
    let mut s = ds.stream();
    s.write_all(record).await.unwrap();
    let read = async {
        let mut body = Vec::new();
        loop {
            let mark = s.read_u32().await.unwrap();
            let mut frag = vec![0u8; (mark & 0x7fff_ffff) as usize];
            s.read_exact(&mut frag).await.unwrap();
            body.extend_from_slice(&frag);
            if mark & 0x8000_0000 != 0 {
                return body;
            }
        }
    };
    let body = tokio::time::timeout(TIMEOUT, read).await.expect("a reply");
    let (msg, _) = RpcMsg::decode_header(Bytes::from(body)).unwrap();
    match msg.body {
        MsgBody::Reply(r) => r,
        MsgBody::Call(c) => panic!("a call back: {c:?}"),
    }
}

fn auth_error(r: ReplyBody) -> AuthStat {
    match r {
        ReplyBody::Denied(RejectedReply::AuthError(s)) => s,
        other => panic!("expected AUTH_ERROR, got {other:?}"),
    }
}

/// The test's MDS-side client: a connection and the boot it learnt with HELLO.
struct Mds {
    conn: Conn,
    to: DsBoot,
}

static NONCE: AtomicU64 = AtomicU64::new(1);

impl Mds {
    /// Connects over `stream` (to a data server, or a tap in front of one) and says HELLO to
    /// data server `ds_id`.
    async fn connect(stream: DuplexStream, ds_id: u32) -> Self {
        let addr = ds_control_addr(u16::try_from(ds_id).unwrap());
        let local = SocketAddr::new(MDS_ADDR.ip(), 700);
        let (conn, run) = transport::start(
            stream,
            1,
            addr,
            local,
            Arc::new(NoCalls),
            ConnLimits::default(),
        );
        tokio::spawn(run);
        let mut m = Self {
            conn,
            to: DsBoot {
                ds_id,
                boot: [0; BOOT_NONCE_LEN],
            },
        };
        let HelloRes::Ok(ok) = m.call(CtlProc::CTLPROC_HELLO, |_| ()).await else {
            panic!("HELLO refused")
        };
        assert_eq!(ok.ds_id, ds_id);
        m.to.boot = ok.boot;
        m
    }

    async fn call<A: Xdr, R: Xdr>(&self, proc_: CtlProc, build: impl FnOnce(CallStamp) -> A) -> R {
        let stamp = CallStamp {
            node: MDS_NODE,
            to: self.to,
            time_ms: now_ms(),
            nonce: NONCE.fetch_add(1, Ordering::Relaxed),
        };
        let args = xdr::to_bytes(&build(stamp));
        let cred = key().sign_call(
            stamp,
            PNFS_CTL_PROGRAM,
            PNFS_CTL_VERSION,
            proc_.0,
            std::slice::from_ref(&args),
        );
        let body = tokio::time::timeout(
            TIMEOUT,
            self.conn.call(
                PNFS_CTL_PROGRAM,
                PNFS_CTL_VERSION,
                proc_.0,
                cred.clone(),
                vec![args],
            ),
        )
        .await
        .expect("an answer")
        .expect("control call");
        xdr::from_bytes(key().open_reply(&cred, body).expect("reply MAC")).expect("results")
    }

    async fn truncate(&self, size: u64) -> CtlStat {
        let r: CtlStatusRes = self
            .call(CtlProc::CTLPROC_TRUNCATE, |_| TruncateArgs {
                file: OBJECT.file,
                sizes: vec![StripeSize {
                    stripe: OBJECT.stripe,
                    size,
                }],
                version: 0,
            })
            .await;
        r.status
    }

    async fn register(&self, epoch: u16) -> RegisterRes {
        let keys = DsKeys::derive(&[0x42; 32], epoch);
        self.call(CtlProc::CTLPROC_REGISTER, |stamp| {
            let mut k = [0u8; 64];
            k[..32].copy_from_slice(&keys.stateid_key);
            k[32..].copy_from_slice(&keys.fh_key);
            key().seal(stamp, REGISTER_SEAL_PURPOSE, &mut k);
            let mut a = RegisterArgs {
                ds_id: self.to.ds_id,
                mds_epoch: u32::from(epoch),
                lease_time: 90,
                sealed_stateid_key: [0; 32],
                sealed_fh_key: [0; 32],
            };
            a.sealed_stateid_key.copy_from_slice(&k[..32]);
            a.sealed_fh_key.copy_from_slice(&k[32..]);
            a
        })
        .await
    }
}

#[tokio::test]
async fn a_captured_truncate_is_refused_by_other_data_servers_and_after_a_restart() {
    let dirs: Vec<tempfile::TempDir> = (0..3).map(|_| tempfile::tempdir().unwrap()).collect();
    let a = start_ds(1, dirs[0].path()).await;
    // Data server 2 of the same cluster, and another data server 1 (another cluster with
    // the same secret, or a second process given the same id): both hold the secret.
    let b = start_ds(2, dirs[1].path()).await;
    let a_twin = start_ds(1, dirs[2].path()).await;
    for ds in [&a, &b, &a_twin] {
        ds.fill(0xab);
    }

    // The MDS truncates the file on data server 1; the tap records the call.
    let (tapped, seen) = tap(&a).await;
    let mds = Mds::connect(tapped, 1).await;
    assert_eq!(mds.truncate(0).await, CtlStat::CTL_OK);
    assert_eq!(a.store.size(OBJECT).unwrap(), 0);
    let truncate = captured(&seen, CtlProc::CTLPROC_TRUNCATE);
    // Later the file grows again.
    a.fill(0xcd);
    let grown = (THREE_MIB as u64, vec![0xcd, 0xcd]);
    assert_eq!(a.object(), grown);

    // Within the same boot the replay cache refuses it.
    assert_eq!(
        auth_error(replay(&a, &truncate).await),
        AuthStat::AUTH_REJECTEDVERF
    );
    // Another data server: made for data server 1, not for it.
    assert_eq!(
        auth_error(replay(&b, &truncate).await),
        AuthStat::AUTH_BADCRED
    );
    // Another data server with id 1: made for another boot.
    assert_eq!(
        auth_error(replay(&a_twin, &truncate).await),
        AuthStat::AUTH_REJECTEDCRED
    );
    for ds in [&b, &a_twin] {
        assert_eq!(ds.object(), (THREE_MIB as u64, vec![0xab, 0xab]));
    }

    // Data server 1 restarts over the same directory: its replay cache is empty, but the
    // call names the boot before.
    let old_boot = a.service.boot();
    a.stop().await;
    let a = start_ds(1, dirs[0].path()).await;
    assert_ne!(a.service.boot(), old_boot);
    assert_eq!(a.object(), grown);
    for _ in 0..2 {
        assert_eq!(
            auth_error(replay(&a, &truncate).await),
            AuthStat::AUTH_REJECTEDCRED
        );
    }
    assert_eq!(a.object(), grown, "the object is untouched");

    // The MDS, saying HELLO again, truncates as before.
    let mds = Mds::connect(a.stream(), 1).await;
    assert_eq!(mds.to, a.service.boot());
    assert_eq!(mds.truncate(5).await, CtlStat::CTL_OK);
    assert_eq!(a.store.size(OBJECT).unwrap(), 5);
}

#[tokio::test]
async fn a_captured_register_installs_nothing_after_a_restart_or_on_another_data_server() {
    let dirs: Vec<tempfile::TempDir> = (0..2).map(|_| tempfile::tempdir().unwrap()).collect();
    let a = start_ds(1, dirs[0].path()).await;
    let b = start_ds(2, dirs[1].path()).await;

    // An MDS of epoch 3 registers data server 1; the tap records the call (keys sealed).
    let (tapped, seen) = tap(&a).await;
    let old_mds = Mds::connect(tapped, 1).await;
    assert!(matches!(old_mds.register(3).await, RegisterRes::Ok(_)));
    assert_eq!(a.service.registered_epoch(), Some(3));
    let register = captured(&seen, CtlProc::CTLPROC_REGISTER);

    assert_eq!(
        auth_error(replay(&b, &register).await),
        AuthStat::AUTH_BADCRED
    );
    assert_eq!(b.service.registered_epoch(), None);
    assert!(b.target.data_server().is_none());

    // Data server 1 restarts: the old REGISTER cannot hand it the old epoch's keys.
    a.stop().await;
    let a = start_ds(1, dirs[0].path()).await;
    assert_eq!(
        auth_error(replay(&a, &register).await),
        AuthStat::AUTH_REJECTEDCRED
    );
    assert_eq!(a.service.registered_epoch(), None);
    assert!(
        a.target.data_server().is_none(),
        "no data server was started"
    );

    // The MDS of epoch 4 registers it the normal way.
    let mds = Mds::connect(a.stream(), 1).await;
    assert!(matches!(mds.register(4).await, RegisterRes::Ok(_)));
    assert_eq!(a.service.registered_epoch(), Some(4));
    assert!(a.target.data_server().is_some());
}

//! The control service over in-process streams: it starts and steers a real data server (REGISTER,
//! REVOKE and SET_ACCESS change what the DS's NFS side accepts), and at the RPC level what it
//! refuses (replays, stale or foreign credentials, other flavors), GARBAGE_ARGS and
//! PROC_UNAVAIL, and that hostile input never stops it from answering; READ, WRITE and COMMIT
//! on the object store, and the bounds on their data.

mod support;

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use data_server::control::{ControlConfig, ControlService, StartOnRegister};
use data_server::{DataServer, DsOptions};
use nfs_proto::control::{
    unix_ms, AccessChange, CallStamp, ClusterKey, CtlBackend, CtlCommitArgs, CtlCommitOk,
    CtlCommitRes, CtlCounterRange, CtlObject, CtlProc, CtlReadArgs, CtlReadOk, CtlReadRes,
    CtlRevokeReason, CtlStat, CtlStatusRes, CtlWriteArgs, CtlWriteRes, DsBoot, HelloRes,
    RegisterArgs, RegisterRes, RevokeArgs, RevokedState, SetAccessArgs, AUTH_PNFS_CTL,
    BOOT_NONCE_LEN, MAX_CTL_IO, MAX_CTL_RECORD, MDS_NODE, PNFS_CTL_PROGRAM, PNFS_CTL_VERSION,
    REGISTER_SEAL_PURPOSE,
};
use nfs_proto::nfs4::{NfsStat4, StableHow4, OPEN4_SHARE_ACCESS_READ};
use nfs_proto::rpc::{AcceptStat, AuthFlavor, AuthStat, OpaqueAuth};
use nfs_proto::transport::{self, CallError, Conn, ConnLimits, NoCalls};
use nfs_proto::xdr::{self, Xdr};
use nfs_server::{ServeLimits, Service, StreamServer};
use pfs_core::{NullStore, ObjectStore};
use testkit::client::denied;
use testkit::cluster::{client_addr, ds_control_addr, ds_nfs_addr, MDS_ADDR};
use tokio::io::{AsyncWriteExt, DuplexStream};

const SECRET: [u8; 32] = [0x33; 32];
const TIMEOUT: Duration = Duration::from_secs(10);

fn key() -> ClusterKey {
    ClusterKey::from_secret(&SECRET)
}

/// The test's time, Unix milliseconds: a fixed instant (calls are stamped with it, and the
/// control service's clock is it plus an offset the test moves), so no test reads the wall
/// clock and none depends on how fast it runs.
fn now_ms() -> u64 {
    unix_ms(std::time::UNIX_EPOCH + Duration::from_secs(1_800_000_000))
}

fn config() -> ControlConfig {
    ControlConfig {
        ds_id: 1,
        lease_time: Duration::from_secs(90),
        backend: CtlBackend::CTL_BACKEND_NULL,
        addresses: vec![],
        rdma_addresses: vec![],
    }
}

type Started = (Ctl, Arc<ControlService>, Arc<StartOnRegister>, Nfs);

/// The control service of data server 1, reached over in-process streams.
struct Ctl(StreamServer<ControlService>);

impl Ctl {
    /// A new connection to it, from the MDS's address.
    fn stream(&self) -> DuplexStream {
        support::stream_to(
            &self.0,
            SocketAddr::new(MDS_ADDR.ip(), 700),
            ds_control_addr(1),
        )
    }
}

/// Data server 1's NFS service, once REGISTER started it.
#[derive(Clone, Default)]
struct Nfs(Arc<std::sync::Mutex<Option<StreamServer<Service<DataServer>>>>>);

impl Nfs {
    /// A new connection to it from a client (it must have started).
    fn stream(&self) -> DuplexStream {
        let server = self.0.lock().unwrap();
        let server = server.as_ref().expect("the NFS service started");
        support::stream_to(server, client_addr(), ds_nfs_addr(1))
    }
}

/// A control service over a data server that starts on REGISTER (its NFS side served over
/// in-process streams too), with a clock the test can move (0: the test's [`now_ms`]).
async fn start_with(objects: Arc<dyn ObjectStore>, offset_ms: Arc<AtomicU64>) -> Started {
    let nfs = Nfs::default();
    let slot = nfs.clone();
    let target = Arc::new(StartOnRegister::new(
        DsOptions::new(1),
        objects.clone(),
        move |ds| {
            let mut slot = slot.0.lock().unwrap();
            if slot.is_none() {
                *slot = Some(StreamServer::for_role(ds));
            }
        },
    ));
    let clock = Arc::new(move || now_ms() + offset_ms.load(Ordering::Relaxed));
    let service = Arc::new(
        ControlService::new(config(), objects, target.clone(), key())
            .unwrap()
            .with_clock(clock),
    );
    let control = Ctl(data_server::control::stream_server(
        service.clone(),
        ServeLimits::default(),
    ));
    (control, service, target, nfs)
}

async fn start(offset_ms: Arc<AtomicU64>) -> (Ctl, Arc<ControlService>) {
    let (addr, service, _, _) = start_with(Arc::new(NullStore::new()), offset_ms).await;
    (addr, service)
}

/// A control connection and the data server boot its calls are for (learnt with HELLO).
struct Peer {
    conn: Conn,
    to: DsBoot,
}

impl std::ops::Deref for Peer {
    type Target = Conn;
    fn deref(&self) -> &Conn {
        &self.conn
    }
}

impl Peer {
    /// A stamp for a call to this data server's boot at `time_ms`.
    fn stamp_at(&self, time_ms: u64) -> CallStamp {
        stamp_to(self.to, time_ms)
    }
}

static NONCE: AtomicU64 = AtomicU64::new(1);

fn stamp_to(to: DsBoot, time_ms: u64) -> CallStamp {
    CallStamp {
        node: MDS_NODE,
        to,
        time_ms,
        nonce: NONCE.fetch_add(1, Ordering::Relaxed),
    }
}

/// Connects and asks HELLO which boot of data server 1 answers.
async fn connect(ctl: &Ctl) -> Peer {
    let (to, local) = (ds_control_addr(1), SocketAddr::new(MDS_ADDR.ip(), 700));
    let (conn, run) = transport::start(
        ctl.stream(),
        7,
        to,
        local,
        Arc::new(NoCalls),
        ConnLimits::default(),
    );
    tokio::spawn(run);
    let hello = DsBoot {
        ds_id: 1,
        boot: [0; BOOT_NONCE_LEN],
    };
    let stamp = stamp_to(hello, now_ms());
    let args = Bytes::new();
    let cred = signed(&key(), stamp, CtlProc::CTLPROC_HELLO, &args);
    let body = call(
        &conn,
        PNFS_CTL_PROGRAM,
        1,
        CtlProc::CTLPROC_HELLO.0,
        cred.clone(),
        args,
    )
    .await
    .expect("HELLO");
    let res: HelloRes = xdr::from_bytes(key().open_reply(&cred, body).unwrap()).unwrap();
    let HelloRes::Ok(ok) = res else {
        panic!("{res:?}")
    };
    assert_eq!(ok.ds_id, 1);
    Peer {
        conn,
        to: DsBoot {
            ds_id: ok.ds_id,
            boot: ok.boot,
        },
    }
}

async fn call(
    conn: &Conn,
    prog: u32,
    vers: u32,
    proc_: u32,
    cred: OpaqueAuth,
    args: Bytes,
) -> Result<Bytes, CallError> {
    tokio::time::timeout(TIMEOUT, conn.call(prog, vers, proc_, cred, vec![args]))
        .await
        .expect("the control service answers every call")
}

fn signed(k: &ClusterKey, stamp: CallStamp, proc_: CtlProc, args: &Bytes) -> OpaqueAuth {
    k.sign_call(
        stamp,
        PNFS_CTL_PROGRAM,
        PNFS_CTL_VERSION,
        proc_.0,
        std::slice::from_ref(args),
    )
}

fn register_args(ds_id: u32) -> Bytes {
    xdr::to_bytes(&RegisterArgs {
        ds_id,
        mds_epoch: 1,
        lease_time: 90,
        sealed_stateid_key: [0; 32],
        sealed_fh_key: [0; 32],
    })
}

#[tokio::test]
async fn a_replayed_call_is_refused_and_a_fresh_one_with_the_same_arguments_is_not() {
    let (server, service) = start(Arc::default()).await;
    let conn = connect(&server).await;
    let args = register_args(1);
    let cred = signed(
        &key(),
        conn.stamp_at(now_ms()),
        CtlProc::CTLPROC_REGISTER,
        &args,
    );
    let p = CtlProc::CTLPROC_REGISTER.0;
    let first = call(&conn, PNFS_CTL_PROGRAM, 1, p, cred.clone(), args.clone()).await;
    let results = key().open_reply(&cred, first.unwrap()).unwrap();
    assert!(!results.is_empty());
    assert_eq!(service.registered_epoch(), Some(1));
    // The same bytes again, on this connection and on another one.
    let again = call(&conn, PNFS_CTL_PROGRAM, 1, p, cred.clone(), args.clone()).await;
    assert_eq!(denied(again), AuthStat::AUTH_REJECTEDVERF);
    let other = connect(&server).await;
    let again = call(&other, PNFS_CTL_PROGRAM, 1, p, cred, args.clone()).await;
    assert_eq!(denied(again), AuthStat::AUTH_REJECTEDVERF);
    let fresh = signed(
        &key(),
        conn.stamp_at(now_ms()),
        CtlProc::CTLPROC_REGISTER,
        &args,
    );
    call(&other, PNFS_CTL_PROGRAM, 1, p, fresh, args)
        .await
        .unwrap();
}

#[tokio::test]
async fn calls_stamped_too_far_from_the_data_servers_clock_are_refused() {
    let offset = Arc::new(AtomicU64::new(0));
    let (server, _) = start(offset.clone()).await;
    let conn = connect(&server).await;
    let null = |t| {
        let args = Bytes::new();
        (
            signed(&key(), conn.stamp_at(t), CtlProc::CTLPROC_NULL, &args),
            args,
        )
    };
    for t in [now_ms() - 301_000, now_ms() + 301_000] {
        let (cred, args) = null(t);
        let r = call(&conn, PNFS_CTL_PROGRAM, 1, 0, cred, args).await;
        assert_eq!(denied(r), AuthStat::AUTH_REJECTEDVERF);
    }
    let (cred, args) = null(now_ms() - 200_000);
    call(&conn, PNFS_CTL_PROGRAM, 1, 0, cred.clone(), args.clone())
        .await
        .unwrap();
    // Ten minutes later on the data server's clock, the same call is stale, not replayable.
    offset.store(600_000, Ordering::Relaxed);
    let r = call(&conn, PNFS_CTL_PROGRAM, 1, 0, cred, args).await;
    assert_eq!(denied(r), AuthStat::AUTH_REJECTEDVERF);
}

#[tokio::test]
async fn credentials_without_the_secret_are_refused_with_their_auth_stat() {
    let (server, service) = start(Arc::default()).await;
    let conn = connect(&server).await;
    let args = register_args(1);
    let p = CtlProc::CTLPROC_REGISTER.0;
    let cases = [
        (OpaqueAuth::none(), AuthStat::AUTH_TOOWEAK),
        (
            OpaqueAuth::new(
                AuthFlavor::AUTH_SYS,
                xdr::to_bytes(&nfs_proto::rpc::AuthSysParms::default()),
            ),
            AuthStat::AUTH_TOOWEAK,
        ),
        (
            signed(
                &ClusterKey::from_secret(&[0x34; 32]),
                conn.stamp_at(now_ms()),
                CtlProc::CTLPROC_REGISTER,
                &args,
            ),
            AuthStat::AUTH_BADCRED,
        ),
        (
            OpaqueAuth::new(AUTH_PNFS_CTL, Bytes::from_static(&[0; 12])),
            AuthStat::AUTH_BADCRED,
        ),
        // Signed for another procedure: the MAC covers the procedure number.
        (
            signed(
                &key(),
                conn.stamp_at(now_ms()),
                CtlProc::CTLPROC_NULL,
                &args,
            ),
            AuthStat::AUTH_BADCRED,
        ),
        // A data server's node id: only the MDS commands data servers.
        (
            signed(
                &key(),
                CallStamp {
                    node: 3,
                    ..conn.stamp_at(now_ms())
                },
                CtlProc::CTLPROC_REGISTER,
                &args,
            ),
            AuthStat::AUTH_BADCRED,
        ),
        // Made for data server 2 (which has the same secret): not for this one.
        (
            signed(
                &key(),
                stamp_to(
                    DsBoot {
                        ds_id: 2,
                        ..conn.to
                    },
                    now_ms(),
                ),
                CtlProc::CTLPROC_REGISTER,
                &args,
            ),
            AuthStat::AUTH_BADCRED,
        ),
        // Made for another boot of this data server: learn the nonce again.
        (
            signed(
                &key(),
                stamp_to(
                    DsBoot {
                        boot: [0x77; BOOT_NONCE_LEN],
                        ..conn.to
                    },
                    now_ms(),
                ),
                CtlProc::CTLPROC_REGISTER,
                &args,
            ),
            AuthStat::AUTH_REJECTEDCRED,
        ),
    ];
    for (cred, want) in cases {
        let r = call(&conn, PNFS_CTL_PROGRAM, 1, p, cred, args.clone()).await;
        assert_eq!(denied(r), want);
    }
    assert_eq!(
        service.registered_epoch(),
        None,
        "nothing refused took effect"
    );
}

#[tokio::test]
async fn bad_arguments_procedures_programs_and_versions_get_their_rpc_errors() {
    let (server, service) = start(Arc::default()).await;
    let conn = connect(&server).await;
    let k = key();
    let accepted = |r: Result<Bytes, CallError>| match r {
        Err(CallError::Accepted(s)) => s,
        other => panic!("expected an accepted error, got {other:?}"),
    };
    // Correctly signed, but the arguments do not decode (short, trailing bytes, too long).
    let mut too_long = vec![0u8; 4];
    too_long.extend_from_slice(&100_000u32.to_be_bytes());
    for (proc_, args) in [
        (
            CtlProc::CTLPROC_REGISTER,
            Bytes::from_static(&[0, 0, 0, 1, 2]),
        ),
        (CtlProc::CTLPROC_NULL, Bytes::from_static(&[0, 0, 0, 0])),
        (CtlProc::CTLPROC_HEALTH, Bytes::from_static(&[1])),
        (CtlProc::CTLPROC_REMOVE, Bytes::from(too_long[4..].to_vec())),
        (CtlProc::CTLPROC_REVOKE, Bytes::from(too_long.clone())),
    ] {
        let cred = signed(&k, conn.stamp_at(now_ms()), proc_, &args);
        let r = call(&conn, PNFS_CTL_PROGRAM, 1, proc_.0, cred, args).await;
        assert_eq!(accepted(r), AcceptStat::GarbageArgs, "{proc_}");
    }
    assert_eq!(service.registered_epoch(), None);
    let args = Bytes::new();
    let cred = signed(&k, conn.stamp_at(now_ms()), CtlProc(99), &args);
    let r = call(&conn, PNFS_CTL_PROGRAM, 1, 99, cred, args.clone()).await;
    assert_eq!(accepted(r), AcceptStat::ProcUnavail);
    let r = call(&conn, 100003, 4, 0, OpaqueAuth::none(), args.clone()).await;
    assert_eq!(accepted(r), AcceptStat::ProgUnavail);
    let r = call(&conn, PNFS_CTL_PROGRAM, 2, 0, OpaqueAuth::none(), args).await;
    assert_eq!(accepted(r), AcceptStat::ProgMismatch { low: 1, high: 1 });
}

/// Makes a signed control call the way the MDS does and returns its verified results.
async fn ctl<A: Xdr, R: Xdr>(conn: &Peer, proc_: CtlProc, build: impl FnOnce(CallStamp) -> A) -> R {
    let stamp = conn.stamp_at(now_ms());
    let args = xdr::to_bytes(&build(stamp));
    let cred = signed(&key(), stamp, proc_, &args);
    let body = call(conn, PNFS_CTL_PROGRAM, 1, proc_.0, cred.clone(), args)
        .await
        .expect("control call");
    xdr::from_bytes(key().open_reply(&cred, body).expect("reply MAC")).expect("results")
}

fn sealed_register(stamp: CallStamp, keys: &data_server::DsKeys) -> RegisterArgs {
    let mut k = [0u8; 64];
    k[..32].copy_from_slice(&keys.stateid_key);
    k[32..].copy_from_slice(&keys.fh_key);
    key().seal(stamp, REGISTER_SEAL_PURPOSE, &mut k);
    let mut a = RegisterArgs {
        ds_id: 1,
        mds_epoch: u32::from(keys.mds_epoch),
        lease_time: 90,
        sealed_stateid_key: [0; 32],
        sealed_fh_key: [0; 32],
    };
    a.sealed_stateid_key.copy_from_slice(&k[..32]);
    a.sealed_fh_key.copy_from_slice(&k[32..]);
    a
}

#[tokio::test]
async fn the_data_server_starts_on_register_and_enforces_what_the_control_protocol_pushes() {
    use support::{Mds, MDS_EPOCH};
    use testkit::prelude::{last_status, putfh, read_op, write_op, Client, Setup};
    let dir = tempfile::tempdir().unwrap();
    let objects: Arc<dyn ObjectStore> = Arc::new(pfs_core::LocalStore::open(dir.path()).unwrap());
    let (server, _service, target, nfs) = start_with(objects, Arc::default()).await;
    assert!(
        target.data_server().is_none(),
        "no NFS service before the keys"
    );
    let conn = connect(&server).await;
    let keys = support::keys(MDS_EPOCH);
    let r: RegisterRes = ctl(&conn, CtlProc::CTLPROC_REGISTER, |st| {
        sealed_register(st, &keys)
    })
    .await;
    assert!(matches!(r, RegisterRes::Ok(_)), "{r:?}");
    assert!(target.data_server().is_some());

    // The made-up MDS of the support module mints with the same keys.
    let mut mds = Mds::new(MDS_EPOCH);
    let fh = mds.ds_fh(42, 0);
    let rw = mds.open_stateid(42, 3);
    let ro = mds.open_stateid(42, OPEN4_SHARE_ACCESS_READ as u8);
    let mut c = Client::over(
        nfs.stream(),
        ds_nfs_addr(1),
        Arc::new(NoCalls),
        &Setup::data_server("ctl"),
    )
    .await;
    let w = |sid| vec![putfh(&fh), write_op(sid, 0, StableHow4::FILE_SYNC4, b"x")];
    assert_eq!(last_status(&c.call(w(rw)).await), NfsStat4::NFS4_OK);
    assert_eq!(
        last_status(&c.call(w(ro)).await),
        NfsStat4::NFS4ERR_OPENMODE
    );

    // SET_ACCESS: the read-only open was upgraded on the MDS.
    let r: CtlStatusRes = ctl(&conn, CtlProc::CTLPROC_SET_ACCESS, |_| SetAccessArgs {
        mds_epoch: u32::from(MDS_EPOCH),
        changes: vec![AccessChange {
            other: ro.other,
            access: 3,
        }],
    })
    .await;
    assert_eq!(r.status, CtlStat::CTL_OK);
    assert_eq!(last_status(&c.call(w(ro)).await), NfsStat4::NFS4_OK);

    // REVOKE: the client is fenced; refused from the moment the reply arrives.
    let r: CtlStatusRes = ctl(&conn, CtlProc::CTLPROC_REVOKE, |_| RevokeArgs {
        mds_epoch: u32::from(MDS_EPOCH),
        revoke: vec![RevokedState {
            other: rw.other,
            why: CtlRevokeReason::CTL_REVOKED_ADMIN,
        }],
        forget: vec![],
        closed: vec![],
    })
    .await;
    assert_eq!(r.status, CtlStat::CTL_OK);
    assert_eq!(
        last_status(&c.call(w(rw)).await),
        NfsStat4::NFS4ERR_ADMIN_REVOKED
    );
    assert_eq!(
        last_status(&c.call(vec![putfh(&fh), read_op(rw, 0, 1)]).await),
        NfsStat4::NFS4ERR_ADMIN_REVOKED
    );
    // An unknown reason refuses the whole call.
    let r: CtlStatusRes = ctl(&conn, CtlProc::CTLPROC_REVOKE, |_| RevokeArgs {
        mds_epoch: u32::from(MDS_EPOCH),
        revoke: vec![
            RevokedState {
                other: ro.other,
                why: CtlRevokeReason::CTL_REVOKED_ADMIN,
            },
            RevokedState {
                other: ro.other,
                why: CtlRevokeReason(9),
            },
        ],
        forget: vec![],
        closed: vec![],
    })
    .await;
    assert_eq!(r.status, CtlStat::CTL_INVAL);
    assert_eq!(last_status(&c.call(w(ro)).await), NfsStat4::NFS4_OK);

    // Closed on the MDS, sent as a range of counters: refused as a stateid the MDS no
    // longer has; a range the other way round refuses the whole call.
    let counter = u32::from_be_bytes(ro.other[4..8].try_into().unwrap());
    let closing = |first, last| RevokeArgs {
        mds_epoch: u32::from(MDS_EPOCH),
        revoke: vec![],
        forget: vec![],
        closed: vec![CtlCounterRange { first, last }],
    };
    let r: CtlStatusRes = ctl(&conn, CtlProc::CTLPROC_REVOKE, |_| {
        closing(counter + 1, counter)
    })
    .await;
    assert_eq!(r.status, CtlStat::CTL_INVAL);
    assert_eq!(last_status(&c.call(w(ro)).await), NfsStat4::NFS4_OK);
    let r: CtlStatusRes = ctl(&conn, CtlProc::CTLPROC_REVOKE, |_| {
        closing(counter, counter + 100)
    })
    .await;
    assert_eq!(r.status, CtlStat::CTL_OK);
    assert_eq!(
        last_status(&c.call(vec![putfh(&fh), read_op(ro, 0, 1)]).await),
        NfsStat4::NFS4ERR_BAD_STATEID
    );

    // The MDS restarts: REGISTER with the new epoch makes the old stateids stale.
    let new_keys = support::keys(MDS_EPOCH + 1);
    let r: RegisterRes = ctl(&conn, CtlProc::CTLPROC_REGISTER, |st| {
        sealed_register(st, &new_keys)
    })
    .await;
    assert!(matches!(r, RegisterRes::Ok(_)), "{r:?}");
    assert_eq!(
        last_status(&c.call(w(ro)).await),
        NfsStat4::NFS4ERR_STALE_STATEID
    );
    let mut restarted = Mds::new(MDS_EPOCH + 1);
    let fresh = restarted.open_stateid(42, 3);
    // The handles of the old boot's layouts go with it.
    assert_eq!(
        last_status(&c.call(w(fresh)).await),
        NfsStat4::NFS4ERR_PNFS_NO_LAYOUT
    );
    let new_fh = restarted.ds_fh(42, 0);
    assert_eq!(
        last_status(
            &c.call(vec![
                putfh(&new_fh),
                write_op(fresh, 0, StableHow4::FILE_SYNC4, b"new")
            ])
            .await
        ),
        NfsStat4::NFS4_OK
    );
}

/// Deterministic pseudo-random bytes (xorshift), so a failure reproduces.
fn noise(seed: u64, len: usize) -> Vec<u8> {
    let mut x = seed | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

#[tokio::test]
async fn hostile_input_never_stops_the_service_from_answering() {
    let (server, _) = start(Arc::default()).await;
    let k = key();
    // Authenticated calls with random arguments for every procedure: each gets an answer
    // (a panicking handler would leave the call unanswered and trip the timeout).
    let conn = connect(&server).await;
    for seed in 0..300u64 {
        let proc_ = CtlProc((seed % 12) as u32);
        let args = Bytes::from(noise(seed, (seed as usize * 7) % 200));
        let cred = signed(&k, conn.stamp_at(now_ms()), proc_, &args);
        let _ = call(&conn, PNFS_CTL_PROGRAM, 1, proc_.0, cred, args).await;
    }
    // Random credential bodies.
    for seed in 0..100u64 {
        let cred = OpaqueAuth::new(
            AUTH_PNFS_CTL,
            Bytes::from(noise(seed, (seed as usize) % 120)),
        );
        let r = call(&conn, PNFS_CTL_PROGRAM, 1, 1, cred, Bytes::new()).await;
        assert_eq!(denied(r), AuthStat::AUTH_BADCRED);
    }
    // Raw garbage records on their own connections.
    for seed in 0..50u64 {
        let mut s = server.stream();
        let body = noise(seed, 8 + seed as usize * 13);
        let mut rec = (0x8000_0000u32 | body.len() as u32).to_be_bytes().to_vec();
        rec.extend_from_slice(&body);
        let _ = s.write_all(&rec).await;
        let _ = s.write_all(&noise(seed + 1000, 64)).await;
    }
    let args = Bytes::new();
    let cred = signed(&k, conn.stamp_at(now_ms()), CtlProc::CTLPROC_NULL, &args);
    let conn = connect(&server).await;
    let body = call(&conn, PNFS_CTL_PROGRAM, 1, 0, cred.clone(), args)
        .await
        .unwrap();
    assert!(k.open_reply(&cred, body).unwrap().is_empty());
}

/// A control service over a local object store (kept for the test to look into).
async fn start_local() -> (Ctl, Arc<pfs_core::LocalStore>, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(pfs_core::LocalStore::open(dir.path()).unwrap());
    let (server, _, _, _) = start_with(store.clone(), Arc::default()).await;
    (server, store, dir)
}

#[tokio::test]
async fn write_read_and_commit_act_on_the_object_store_without_a_registration() {
    let (server, store, _dir) = start_local().await;
    let conn = connect(&server).await;
    let object = CtlObject { file: 7, stripe: 1 };
    let id = pfs_core::ObjectId { file: 7, stripe: 1 };
    let data = Bytes::from(noise(1, 5000));
    let r: CtlWriteRes = ctl(&conn, CtlProc::CTLPROC_WRITE, |_| CtlWriteArgs {
        object,
        offset: 100,
        stable: 0,
        data: data.clone(),
    })
    .await;
    let CtlWriteRes::Ok(w) = r else {
        panic!("{r:?}")
    };
    assert_eq!(w.count, 5000);
    assert_eq!(w.verifier, store.verifier());
    assert_eq!(store.read(id, 100, 5000).unwrap().data, data);

    // READ: a hole before the data, then the data, to the object's end.
    let r: CtlReadRes = ctl(&conn, CtlProc::CTLPROC_READ, |_| CtlReadArgs {
        object,
        offset: 0,
        count: 8192,
    })
    .await;
    let CtlReadRes::Ok(got) = r else {
        panic!("{r:?}")
    };
    assert!(got.eof);
    assert_eq!(got.data.len(), 5100);
    assert_eq!(&got.data[..100], &[0u8; 100][..]);
    assert_eq!(got.data.slice(100..), data);
    // A missing object reads as empty.
    let r: CtlReadRes = ctl(&conn, CtlProc::CTLPROC_READ, |_| CtlReadArgs {
        object: CtlObject { file: 8, stripe: 0 },
        offset: 0,
        count: 10,
    })
    .await;
    assert_eq!(
        r,
        CtlReadRes::Ok(CtlReadOk {
            eof: true,
            data: Bytes::new()
        })
    );

    // COMMIT syncs the object and answers the verifier.
    let syncs = store.io_counts().fdatasync;
    let r: CtlCommitRes = ctl(&conn, CtlProc::CTLPROC_COMMIT, |_| CtlCommitArgs {
        object,
        offset: 0,
        count: 0,
    })
    .await;
    assert_eq!(
        r,
        CtlCommitRes::Ok(CtlCommitOk {
            verifier: store.verifier()
        })
    );
    assert!(store.io_counts().fdatasync > syncs);

    // A stable_how the RFC does not define writes nothing.
    let r: CtlWriteRes = ctl(&conn, CtlProc::CTLPROC_WRITE, |_| CtlWriteArgs {
        object: CtlObject { file: 9, stripe: 0 },
        offset: 0,
        stable: 3,
        data: Bytes::from_static(b"x"),
    })
    .await;
    assert_eq!(r, CtlWriteRes::Err(CtlStat::CTL_INVAL));
    assert_eq!(
        store
            .size(pfs_core::ObjectId { file: 9, stripe: 0 })
            .unwrap(),
        0
    );
    // A store error keeps its nfsstat4 number: past the largest offset is FBIG.
    let r: CtlWriteRes = ctl(&conn, CtlProc::CTLPROC_WRITE, |_| CtlWriteArgs {
        object,
        offset: u64::MAX - 1,
        stable: 2,
        data: Bytes::from_static(b"xyz"),
    })
    .await;
    assert_eq!(r, CtlWriteRes::Err(CtlStat::CTL_FBIG));
}

#[tokio::test]
async fn a_read_answers_at_most_the_maximum_and_is_short_only_at_the_objects_end() {
    let (server, store, _dir) = start_local().await;
    let conn = connect(&server).await;
    let id = pfs_core::ObjectId { file: 3, stripe: 0 };
    let max = MAX_CTL_IO as usize;
    store
        .write(
            id,
            0,
            &[Bytes::from(noise(2, max + 10))],
            pfs_core::Stability::Unstable,
        )
        .unwrap();
    let object = CtlObject { file: 3, stripe: 0 };
    let r: CtlReadRes = ctl(&conn, CtlProc::CTLPROC_READ, |_| CtlReadArgs {
        object,
        offset: 0,
        count: u32::MAX,
    })
    .await;
    let CtlReadRes::Ok(got) = r else {
        panic!("{r:?}")
    };
    assert_eq!((got.data.len(), got.eof), (max, false));
    let r: CtlReadRes = ctl(&conn, CtlProc::CTLPROC_READ, |_| CtlReadArgs {
        object,
        offset: max as u64,
        count: 100,
    })
    .await;
    let CtlReadRes::Ok(got) = r else {
        panic!("{r:?}")
    };
    assert_eq!((got.data.len(), got.eof), (10, true));
}

#[tokio::test]
async fn an_oversized_write_is_refused_without_writing_it_and_an_oversized_record_closes_the_connection(
) {
    let (server, store, _dir) = start_local().await;
    let conn = connect(&server).await;
    let object = CtlObject { file: 5, stripe: 0 };
    let id = pfs_core::ObjectId { file: 5, stripe: 0 };
    let garbage = |r: Result<Bytes, CallError>| match r {
        Err(CallError::Accepted(AcceptStat::GarbageArgs)) => {}
        other => panic!("expected GARBAGE_ARGS, got {other:?}"),
    };
    // One byte over MAX_CTL_IO, within the record limit: refused by the decoder's bound.
    let over = CtlWriteArgs::encode_gathered(
        object,
        0,
        2,
        &[Bytes::from(vec![1u8; MAX_CTL_IO as usize + 1])],
    );
    let over: Bytes = over.concat().into();
    let cred = signed(
        &key(),
        conn.stamp_at(now_ms()),
        CtlProc::CTLPROC_WRITE,
        &over,
    );
    garbage(
        call(
            &conn,
            PNFS_CTL_PROGRAM,
            1,
            CtlProc::CTLPROC_WRITE.0,
            cred,
            over,
        )
        .await,
    );
    // A length of 4 GiB with a few bytes behind it: refused on the bound, nothing reserved.
    let mut claim = xdr::to_bytes(&CtlWriteArgs {
        object,
        offset: 0,
        stable: 2,
        data: Bytes::from_static(b"abcd"),
    })
    .to_vec();
    let len_at = claim.len() - 8;
    claim[len_at..len_at + 4].copy_from_slice(&u32::MAX.to_be_bytes());
    let claim = Bytes::from(claim);
    let cred = signed(
        &key(),
        conn.stamp_at(now_ms()),
        CtlProc::CTLPROC_WRITE,
        &claim,
    );
    garbage(
        call(
            &conn,
            PNFS_CTL_PROGRAM,
            1,
            CtlProc::CTLPROC_WRITE.0,
            cred,
            claim,
        )
        .await,
    );
    assert_eq!(store.size(id).unwrap(), 0, "nothing was written");

    // A record over MAX_CTL_RECORD: the connection is closed on its header.
    let mut s = server.stream();
    let len = MAX_CTL_RECORD + 1;
    s.write_all(&(0x8000_0000u32 | len).to_be_bytes())
        .await
        .unwrap();
    let _ = s.write_all(&[0u8; 4096]).await;
    let mut buf = [0u8; 16];
    let n = tokio::time::timeout(TIMEOUT, tokio::io::AsyncReadExt::read(&mut s, &mut buf))
        .await
        .expect("the data server closes the connection");
    assert!(matches!(n, Ok(0) | Err(_)), "{n:?}");

    // A WRITE of exactly MAX_CTL_IO fits and lands.
    let r: CtlWriteRes = ctl(&conn, CtlProc::CTLPROC_WRITE, |_| CtlWriteArgs {
        object,
        offset: 0,
        stable: 0,
        data: Bytes::from(vec![2u8; MAX_CTL_IO as usize]),
    })
    .await;
    assert!(
        matches!(r, CtlWriteRes::Ok(w) if w.count == MAX_CTL_IO),
        "{r:?}"
    );
    assert_eq!(store.size(id).unwrap(), u64::from(MAX_CTL_IO));
}

//! The control service at the RPC level, over loopback TCP: what it refuses (replays, stale
//! or foreign credentials, other flavors), GARBAGE_ARGS and PROC_UNAVAIL, and that hostile
//! input never stops it from answering.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use bytes::Bytes;
use data_server::control::{ControlService, ControlState};
use nfs_proto::control::{
    unix_ms, CallStamp, ClusterKey, CtlBackend, CtlProc, RegisterArgs, AUTH_PNFS_CTL, MDS_NODE,
    PNFS_CTL_PROGRAM, PNFS_CTL_VERSION,
};
use nfs_proto::rpc::{AcceptStat, AuthFlavor, AuthStat, OpaqueAuth, RejectedReply};
use nfs_proto::transport::{self, CallError, Conn, ConnLimits, NoCalls};
use nfs_proto::xdr;
use pfs_core::NullStore;
use tokio::io::AsyncWriteExt;

const SECRET: [u8; 32] = [0x33; 32];
const TIMEOUT: Duration = Duration::from_secs(10);

fn key() -> ClusterKey {
    ClusterKey::from_secret(&SECRET)
}

fn now_ms() -> u64 {
    unix_ms(SystemTime::now())
}

/// A control service on loopback with a clock the test can move (0: the real clock).
async fn start(offset_ms: Arc<AtomicU64>) -> (SocketAddr, Arc<ControlState>) {
    let state = Arc::new(ControlState::new(1));
    let service = ControlService::new(
        state.clone(),
        Arc::new(NullStore::new()),
        CtlBackend::CTL_BACKEND_NULL,
        &[],
        key(),
    )
    .with_clock(Arc::new(move || {
        now_ms() + offset_ms.load(Ordering::Relaxed)
    }));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(data_server::control::serve(listener, Arc::new(service)));
    (addr, state)
}

async fn connect(addr: SocketAddr) -> Conn {
    let s = tokio::net::TcpStream::connect(addr).await.unwrap();
    let local = s.local_addr().unwrap();
    let (conn, run) = transport::start(s, 7, addr, local, Arc::new(NoCalls), ConnLimits::default());
    tokio::spawn(run);
    conn
}

static NONCE: AtomicU64 = AtomicU64::new(1);

fn stamp_at(time_ms: u64) -> CallStamp {
    CallStamp {
        node: MDS_NODE,
        time_ms,
        nonce: NONCE.fetch_add(1, Ordering::Relaxed),
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

fn denied(r: Result<Bytes, CallError>) -> AuthStat {
    match r {
        Err(CallError::Denied(RejectedReply::AuthError(s))) => s,
        other => panic!("expected AUTH_ERROR, got {other:?}"),
    }
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
    let (addr, state) = start(Arc::default()).await;
    let conn = connect(addr).await;
    let args = register_args(1);
    let cred = signed(&key(), stamp_at(now_ms()), CtlProc::CTLPROC_REGISTER, &args);
    let p = CtlProc::CTLPROC_REGISTER.0;
    let first = call(&conn, PNFS_CTL_PROGRAM, 1, p, cred.clone(), args.clone()).await;
    let results = key().open_reply(&cred, first.unwrap()).unwrap();
    assert!(!results.is_empty());
    assert!(state.keys().is_some());
    // The same bytes again, on this connection and on another one.
    let again = call(&conn, PNFS_CTL_PROGRAM, 1, p, cred.clone(), args.clone()).await;
    assert_eq!(denied(again), AuthStat::AUTH_REJECTEDVERF);
    let other = connect(addr).await;
    let again = call(&other, PNFS_CTL_PROGRAM, 1, p, cred, args.clone()).await;
    assert_eq!(denied(again), AuthStat::AUTH_REJECTEDVERF);
    let fresh = signed(&key(), stamp_at(now_ms()), CtlProc::CTLPROC_REGISTER, &args);
    call(&other, PNFS_CTL_PROGRAM, 1, p, fresh, args)
        .await
        .unwrap();
}

#[tokio::test]
async fn calls_stamped_too_far_from_the_data_servers_clock_are_refused() {
    let offset = Arc::new(AtomicU64::new(0));
    let (addr, _) = start(offset.clone()).await;
    let conn = connect(addr).await;
    let null = |t| {
        let args = Bytes::new();
        (
            signed(&key(), stamp_at(t), CtlProc::CTLPROC_NULL, &args),
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
    let (addr, state) = start(Arc::default()).await;
    let conn = connect(addr).await;
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
                stamp_at(now_ms()),
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
            signed(&key(), stamp_at(now_ms()), CtlProc::CTLPROC_NULL, &args),
            AuthStat::AUTH_BADCRED,
        ),
        // A data server's node id: only the MDS commands data servers.
        (
            signed(
                &key(),
                CallStamp {
                    node: 3,
                    ..stamp_at(now_ms())
                },
                CtlProc::CTLPROC_REGISTER,
                &args,
            ),
            AuthStat::AUTH_BADCRED,
        ),
    ];
    for (cred, want) in cases {
        let r = call(&conn, PNFS_CTL_PROGRAM, 1, p, cred, args.clone()).await;
        assert_eq!(denied(r), want);
    }
    assert!(state.keys().is_none(), "nothing refused took effect");
}

#[tokio::test]
async fn bad_arguments_procedures_programs_and_versions_get_their_rpc_errors() {
    let (addr, state) = start(Arc::default()).await;
    let conn = connect(addr).await;
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
        let cred = signed(&k, stamp_at(now_ms()), proc_, &args);
        let r = call(&conn, PNFS_CTL_PROGRAM, 1, proc_.0, cred, args).await;
        assert_eq!(accepted(r), AcceptStat::GarbageArgs, "{proc_}");
    }
    assert!(state.keys().is_none());
    let args = Bytes::new();
    let cred = signed(&k, stamp_at(now_ms()), CtlProc(99), &args);
    let r = call(&conn, PNFS_CTL_PROGRAM, 1, 99, cred, args.clone()).await;
    assert_eq!(accepted(r), AcceptStat::ProcUnavail);
    let r = call(&conn, 100003, 4, 0, OpaqueAuth::none(), args.clone()).await;
    assert_eq!(accepted(r), AcceptStat::ProgUnavail);
    let r = call(&conn, PNFS_CTL_PROGRAM, 2, 0, OpaqueAuth::none(), args).await;
    assert_eq!(accepted(r), AcceptStat::ProgMismatch { low: 1, high: 1 });
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
    let (addr, _) = start(Arc::default()).await;
    let k = key();
    // Authenticated calls with random arguments for every procedure: each gets an answer
    // (a panicking handler would leave the call unanswered and trip the timeout).
    let conn = connect(addr).await;
    for seed in 0..300u64 {
        let proc_ = CtlProc((seed % 8) as u32);
        let args = Bytes::from(noise(seed, (seed as usize * 7) % 200));
        let cred = signed(&k, stamp_at(now_ms()), proc_, &args);
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
        let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
        let body = noise(seed, 8 + seed as usize * 13);
        let mut rec = (0x8000_0000u32 | body.len() as u32).to_be_bytes().to_vec();
        rec.extend_from_slice(&body);
        let _ = s.write_all(&rec).await;
        let _ = s.write_all(&noise(seed + 1000, 64)).await;
    }
    let args = Bytes::new();
    let cred = signed(&k, stamp_at(now_ms()), CtlProc::CTLPROC_NULL, &args);
    let conn = connect(addr).await;
    let body = call(&conn, PNFS_CTL_PROGRAM, 1, 0, cred.clone(), args)
        .await
        .unwrap();
    assert!(k.open_reply(&cred, body).unwrap().is_empty());
}

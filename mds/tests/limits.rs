//! Caps on clients and sessions (`limits.max_clients`, `limits.max_sessions`), and the cost
//! of CREATE_SESSION with many clients, on the in-memory cluster's MDS alone.

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use nfs_proto::nfs4::*;
use nfs_proto::transport::Conn;
use testkit::cluster::{Cluster, ClusterBuilder};
use testkit::prelude::*;

/// How many EXCHANGE_ID + CREATE_SESSION pairs run at once while filling the table.
const IN_FLIGHT: usize = 64;
/// Connections they share.
const CONNS: usize = 8;

fn exchange_args(owner: &str, verifier: [u8; 8]) -> ExchangeIdArgs {
    ExchangeIdArgs {
        eia_clientowner: ClientOwner4 {
            co_verifier: verifier,
            co_ownerid: Bytes::copy_from_slice(owner.as_bytes()),
        },
        eia_flags: 0,
        eia_state_protect: StateProtect4A::None,
        eia_client_impl_id: vec![],
    }
}

/// EXCHANGE_ID: (client id, sequence id) or the error.
async fn exchange(conn: &Conn, owner: &str, verifier: [u8; 8]) -> Result<(u64, u32), NfsStat4> {
    let r = compound_on(
        conn,
        0,
        1,
        vec![NfsArgop4::ExchangeId(exchange_args(owner, verifier))],
    )
    .await
    .expect("rpc");
    match &r.resarray[0] {
        NfsResop4::ExchangeId(ExchangeIdRes::Ok(ok)) => Ok((ok.eir_clientid, ok.eir_sequenceid)),
        NfsResop4::ExchangeId(ExchangeIdRes::Err(e)) => Err(*e),
        other => panic!("unexpected result {other:?}"),
    }
}

/// CREATE_SESSION: the session id or the error.
async fn create_session(conn: &Conn, clientid: u64, seq: u32) -> Result<Sessionid4, NfsStat4> {
    let cs = CreateSessionArgs {
        csa_clientid: clientid,
        csa_sequence: seq,
        csa_flags: 0,
        csa_fore_chan_attrs: channel(),
        csa_back_chan_attrs: ChannelAttrs4 {
            ca_maxrequests: 2,
            ca_maxoperations: 4,
            ..channel()
        },
        csa_cb_program: testkit::client::CB_PROGRAM,
        csa_sec_parms: vec![CallbackSecParms4::AuthNone],
    };
    let r = compound_on(conn, 0, 1, vec![NfsArgop4::CreateSession(cs)])
        .await
        .expect("rpc");
    match &r.resarray[0] {
        NfsResop4::CreateSession(CreateSessionRes::Ok(ok)) => Ok(ok.csr_sessionid),
        NfsResop4::CreateSession(CreateSessionRes::Err(e)) => Err(*e),
        other => panic!("unexpected result {other:?}"),
    }
}

/// An MDS alone (metadata in memory, no grace) with these caps and this lease (seconds).
fn capped(max_clients: usize, max_sessions: usize, lease: u32) -> ClusterBuilder {
    Cluster::builder()
        .data_servers(0)
        .lease(lease)
        .configure(move |cfg| {
            cfg.limits.max_clients = max_clients;
            cfg.limits.max_sessions = max_sessions;
        })
}

/// SEQUENCE alone on slot 0 of `sid` with `seq`: renews the lease.
async fn renew(conn: &Conn, sid: Sessionid4, seq: u32) -> NfsStat4 {
    let r = compound_on(
        conn,
        0,
        1,
        vec![NfsArgop4::Sequence(SequenceArgs {
            sa_sessionid: sid,
            sa_sequenceid: seq,
            sa_slotid: 0,
            sa_highest_slotid: 0,
            sa_cachethis: false,
        })],
    )
    .await
    .expect("rpc");
    r.status
}

fn conns(s: &Cluster) -> Arc<Vec<Conn>> {
    Arc::new((0..CONNS).map(|_| s.conn()).collect())
}

/// Runs `f(i)` for every `i` in `range`, `IN_FLIGHT` at a time, each on one of `conns`.
async fn for_each<F, Fut, T>(conns: &Arc<Vec<Conn>>, range: std::ops::Range<usize>, f: F) -> Vec<T>
where
    F: Fn(Conn, usize) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = T> + Send + 'static,
    T: Send + 'static,
{
    let f = Arc::new(f);
    let next = Arc::new(std::sync::atomic::AtomicUsize::new(range.start));
    let end = range.end;
    let mut tasks = Vec::new();
    for w in 0..IN_FLIGHT {
        let (f, next, conns) = (f.clone(), next.clone(), conns.clone());
        tasks.push(tokio::spawn(async move {
            let mut out = Vec::new();
            loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                if i >= end {
                    return out;
                }
                out.push((i, f(conns[w % conns.len()].clone(), i).await));
            }
        }));
    }
    let mut all = Vec::new();
    for t in tasks {
        all.extend(t.await.unwrap());
    }
    all.sort_by_key(|(i, _)| *i);
    all.into_iter().map(|(_, t)| t).collect()
}

/// EXCHANGE_ID + CREATE_SESSION for owners `bulk-<i>`; the statuses.
async fn make_clients(
    conns: &Arc<Vec<Conn>>,
    range: std::ops::Range<usize>,
) -> Vec<Result<(u64, Sessionid4), NfsStat4>> {
    for_each(conns, range, |conn, i| async move {
        let owner = format!("bulk-{i}");
        let (id, seq) = exchange(&conn, &owner, [1; 8]).await?;
        let sid = create_session(&conn, id, seq).await?;
        Ok((id, sid))
    })
    .await
}

/// EXCHANGE_ID for `n` new owners (untimed), then their CREATE_SESSIONs, all in flight at
/// once: the time the CREATE_SESSIONs took. Real time on purpose: what is measured is the
/// server's work per CREATE_SESSION, which no virtual clock sees.
async fn time_create_sessions(conns: &Arc<Vec<Conn>>, tag: &str, n: usize) -> Duration {
    let tag = tag.to_string();
    let ids = for_each(conns, 0..n, move |conn, i| {
        let owner = format!("{tag}-{i}");
        async move { exchange(&conn, &owner, [2; 8]).await.expect("EXCHANGE_ID") }
    })
    .await;
    let ids = Arc::new(ids);
    let t0 = Instant::now();
    let ids2 = ids.clone();
    let done = for_each(conns, 0..n, move |conn, i| {
        let (id, seq) = ids2[i];
        async move { create_session(&conn, id, seq).await }
    })
    .await;
    let took = t0.elapsed();
    assert!(
        done.iter().all(Result::is_ok),
        "every CREATE_SESSION succeeded"
    );
    took
}

/// The number of clients the big test creates (or tries to), and its cap.
const CLIENTS: usize = 20_000;
const CAP: usize = 15_000;
/// How many CREATE_SESSIONs are timed at each size.
const TIMED: usize = 500;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twenty_thousand_clients_meet_the_cap_and_create_session_cost_stays_flat() {
    let s = capped(CAP, 100_000, 120).start().await;
    let mds = s.mds();
    let conns = conns(&s);
    let t_start = Instant::now();

    // 500 CREATE_SESSIONs with 10 clients there.
    let first = make_clients(&conns, 0..10).await;
    let veteran = first[0].expect("first client");
    let small = time_create_sessions(&conns, "small", TIMED).await;

    // Fill the table to 500 below the cap, then 500 more CREATE_SESSIONs, timed.
    let filled = 10 + TIMED;
    let fill = CAP - TIMED - filled;
    let made = make_clients(&conns, 10..10 + fill).await;
    assert!(made.iter().all(Result::is_ok), "all below the cap get in");
    let large = time_create_sessions(&conns, "large", TIMED).await;
    assert_eq!(mds.core().state().clients.len(), CAP);

    // The rest of the 20,000 are new owners past the cap: NFS4ERR_DELAY.
    let past = CLIENTS - CAP;
    let refused = for_each(&conns, 0..past, |conn, i| async move {
        exchange(&conn, &format!("past-{i}"), [3; 8]).await
    })
    .await;
    assert!(
        refused.iter().all(|r| *r == Err(NfsStat4::NFS4ERR_DELAY)),
        "{:?}",
        refused.iter().find(|r| **r != Err(NfsStat4::NFS4ERR_DELAY))
    );
    println!(
        "{CLIENTS} clients ({CAP} admitted, {past} refused) in {:?}",
        t_start.elapsed()
    );
    println!(
        "{TIMED} CREATE_SESSION (each confirming a new client): at 10 clients {small:?}, \
         at {} clients {large:?}",
        CAP - TIMED
    );
    assert!(
        large < small * 5 + Duration::from_millis(500),
        "CREATE_SESSION cost grew with the number of clients: {small:?} -> {large:?}"
    );
    assert_eq!(
        mds.store().clients().unwrap().len(),
        CAP,
        "each one persisted once"
    );

    // Clients the server knows still get in.
    let conn = s.conn();
    let (id, _) = exchange(&conn, "bulk-0", [1; 8]).await.expect("case 2");
    assert_eq!(id, veteran.0, "the same client id: nothing new");
    let (id2, seq) = exchange(&conn, "bulk-0", [1; 8]).await.unwrap();
    assert_eq!(id2, id);
    let second = create_session(&conn, id, seq).await;
    assert!(
        second.is_ok(),
        "a second session of a known client: {second:?}"
    );
    let (restarted, seq) = exchange(&conn, "bulk-1", [9; 8])
        .await
        .expect("a rebooted client (case 5) is not refused");
    create_session(&conn, restarted, seq)
        .await
        .expect("and its CREATE_SESSION confirms it");
    let r = compound_on(
        &s.conn(),
        0,
        1,
        vec![NfsArgop4::BindConnToSession(BindConnToSessionArgs {
            bctsa_sessid: veteran.1,
            bctsa_dir: ChannelDirFromClient4::CDFC4_FORE_OR_BOTH,
            bctsa_use_conn_in_rdma_mode: false,
        })],
    )
    .await
    .unwrap();
    assert_eq!(r.status, NfsStat4::NFS4_OK, "BIND_CONN_TO_SESSION: {r:?}");
    assert_eq!(
        exchange(&conn, "one-more", [1; 8]).await,
        Err(NfsStat4::NFS4ERR_DELAY)
    );
    assert_eq!(
        mds.core().state().clients.len(),
        CAP,
        "the restart replaced its record"
    );
}

#[tokio::test]
async fn unconfirmed_and_expired_clients_make_room_for_new_ones() {
    let clock = ManualClock::new();
    let s = capped(3, 100, 2).clock(clock.shared()).start().await;
    let conn = s.conn();
    let (a, seq) = exchange(&conn, "a", [1; 8]).await.unwrap();
    create_session(&conn, a, seq).await.unwrap();
    let (u, u_seq) = exchange(&conn, "unconfirmed", [1; 8]).await.unwrap();
    let (b, seq) = exchange(&conn, "b", [1; 8]).await.unwrap();
    let b_sid = create_session(&conn, b, seq).await.unwrap();

    // Full: the unconfirmed record is given up for a new owner.
    let (n, seq) = exchange(&conn, "n", [1; 8]).await.expect("room made");
    assert_eq!(
        create_session(&conn, u, u_seq).await,
        Err(NfsStat4::NFS4ERR_STALE_CLIENTID),
        "the evicted client must start again"
    );
    create_session(&conn, n, seq).await.unwrap();
    assert_eq!(
        exchange(&conn, "m", [1; 8]).await,
        Err(NfsStat4::NFS4ERR_DELAY),
        "three confirmed clients: no room"
    );

    // b stays alive; a and n fall silent and their leases run out.
    let t0 = clock.elapsed();
    let mut seq = 0;
    let m = loop {
        seq += 1;
        assert_eq!(renew(&conn, b_sid, seq).await, NfsStat4::NFS4_OK);
        match exchange(&conn, "m", [1; 8]).await {
            Ok(m) => break m,
            Err(e) => assert_eq!(e, NfsStat4::NFS4ERR_DELAY),
        }
        assert!(
            clock.elapsed() - t0 < Duration::from_secs(10),
            "no room made"
        );
        advance(&clock, Duration::from_millis(200)).await;
    };
    assert!(
        clock.elapsed() - t0 >= Duration::from_secs(1),
        "not before a lease ran out"
    );
    create_session(&conn, m.0, m.1).await.unwrap();
    seq += 1;
    assert_eq!(
        renew(&conn, b_sid, seq).await,
        NfsStat4::NFS4_OK,
        "b kept its place"
    );
    let (again, _) = exchange(&conn, "a", [1; 8]).await.unwrap();
    assert_ne!(again, a, "a expired: a new record");
}

#[tokio::test]
async fn sessions_past_the_caps_get_delay_and_a_first_session_never_does() {
    let s = capped(100, 2, 60).start().await;
    let conn = s.conn();
    let (a, mut seq) = exchange(&conn, "a", [1; 8]).await.unwrap();
    let mut next = || {
        let s = seq;
        seq += 1;
        s
    };
    create_session(&conn, a, next()).await.unwrap();
    create_session(&conn, a, next()).await.unwrap();
    let s3 = next();
    assert_eq!(
        create_session(&conn, a, s3).await,
        Err(NfsStat4::NFS4ERR_DELAY),
        "a third session past max_sessions 2"
    );
    let (b, b_seq) = exchange(&conn, "b", [1; 8]).await.unwrap();
    create_session(&conn, b, b_seq)
        .await
        .expect("a new client's first session is never refused");
    // The refusal was not cached: the same csa_sequence is a new request, refused again.
    assert_eq!(
        create_session(&conn, a, s3).await,
        Err(NfsStat4::NFS4ERR_DELAY)
    );

    // One client alone, with room in the table: 16 sessions, then NFS4ERR_DELAY.
    let s = capped(100, 1000, 60).start().await;
    let conn = s.conn();
    let (c, seq) = exchange(&conn, "c", [1; 8]).await.unwrap();
    let per_client = nfs_server::state::session::MAX_SESSIONS_PER_CLIENT as u32;
    for i in 0..per_client {
        create_session(&conn, c, seq + i).await.unwrap();
    }
    assert_eq!(
        create_session(&conn, c, seq + per_client).await,
        Err(NfsStat4::NFS4ERR_DELAY)
    );
}

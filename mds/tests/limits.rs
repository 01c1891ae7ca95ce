//! Caps on clients and sessions, and the cost of CREATE_SESSION with many clients, over real
//! loopback sockets.

mod support;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use nfs_proto::nfs4::*;
use nfs_proto::transport::Conn;
use support::*;

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
        csa_cb_program: support::callback::CB_PROGRAM,
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

async fn conns(addr: SocketAddr) -> Arc<Vec<Conn>> {
    let mut v = Vec::new();
    for _ in 0..CONNS {
        v.push(connect(addr).await);
    }
    Arc::new(v)
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
/// once: the time the CREATE_SESSIONs took.
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_session_cost_does_not_grow_with_the_number_of_clients() {
    let total: usize = std::env::var("LIMITS_CLIENTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2000);
    let dir = tempfile::tempdir().unwrap();
    let (_mds, addr) = start_mds(dir.path(), 0, 60).await;
    let conns = conns(addr).await;
    assert!(make_clients(&conns, 0..10).await.iter().all(Result::is_ok));
    let small = time_create_sessions(&conns, "small", 500).await;
    let t0 = Instant::now();
    let made = make_clients(&conns, 10..total).await;
    println!(
        "created {} clients in {:?}",
        made.iter().filter(|r| r.is_ok()).count(),
        t0.elapsed()
    );
    let large = time_create_sessions(&conns, "large", 500).await;
    println!("500 CREATE_SESSION at 10 clients: {small:?}; at {total} clients: {large:?}");
}

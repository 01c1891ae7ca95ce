//! Session behaviour against an in-process MDS, with a loopback TCP relay in between that a
//! test can cut: a request whose connection dies before its reply is re-sent on a new
//! connection bound with BIND_CONN_TO_SESSION, on the same slot and sequence id, and the
//! server answers it from its reply cache instead of running it twice. And an idle client
//! keeps its lease.

mod support;

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use client::{Client, ClientOptions, LockKind, OpenOptions};
use mds::Mds;
use nfs_proto::nfs4::NfsStat4;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use support::start_mds;

/// A relay from a loopback port to the server. When `swallow_next_reply` is set, the next
/// bytes the server sends back are dropped and both sides of that connection are closed:
/// the request reached the server, its reply never reaches the client.
struct Relay {
    addr: SocketAddr,
    swallow_next_reply: Arc<AtomicBool>,
    connections: Arc<AtomicU32>,
}

impl Relay {
    async fn start(server: SocketAddr) -> Relay {
        let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = l.local_addr().unwrap();
        let swallow = Arc::new(AtomicBool::new(false));
        let connections = Arc::new(AtomicU32::new(0));
        let (sw, n) = (swallow.clone(), connections.clone());
        tokio::spawn(async move {
            while let Ok((client, _)) = l.accept().await {
                n.fetch_add(1, Ordering::SeqCst);
                let Ok(upstream) = TcpStream::connect(server).await else {
                    continue;
                };
                let sw = sw.clone();
                tokio::spawn(async move {
                    let (mut cr, mut cw) = client.into_split();
                    let (mut ur, mut uw) = upstream.into_split();
                    let up = tokio::spawn(async move {
                        let _ = tokio::io::copy(&mut cr, &mut uw).await;
                    });
                    let mut buf = vec![0u8; 64 << 10];
                    loop {
                        let n = match ur.read(&mut buf).await {
                            Ok(0) | Err(_) => break,
                            Ok(n) => n,
                        };
                        if sw.swap(false, Ordering::SeqCst) {
                            break; // drop this reply and the connection
                        }
                        if cw.write_all(&buf[..n]).await.is_err() {
                            break;
                        }
                    }
                    up.abort();
                });
            }
        });
        Relay {
            addr,
            swallow_next_reply: swallow,
            connections,
        }
    }
}

fn counter(mds: &Mds, op: &str) -> u64 {
    let page = mds::net::metrics::render(mds, std::time::Instant::now());
    page.lines()
        .filter(|l| {
            l.starts_with("pnfs_ops_total{")
                && l.contains(&format!("op=\"{op}\""))
                && l.contains("status=\"ok\"")
        })
        .filter_map(|l| l.rsplit(' ').next()?.parse::<u64>().ok())
        .sum()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_whose_reply_is_lost_is_answered_from_the_reply_cache_on_a_new_connection() {
    let dir = tempfile::tempdir().unwrap();
    let (mds, addr) = start_mds(dir.path(), 10).await;
    let relay = Relay::start(addr).await;
    let c = Client::connect(relay.addr).await.unwrap();
    assert_eq!(relay.connections.load(Ordering::SeqCst), 1);
    let creates = counter(&mds, "OP_CREATE");
    // mkdir is not idempotent: run twice, the second would fail with NFS4ERR_EXIST.
    relay.swallow_next_reply.store(true, Ordering::SeqCst);
    c.mkdir("/once", 0o755)
        .await
        .expect("mkdir after a lost reply");
    assert_eq!(
        relay.connections.load(Ordering::SeqCst),
        2,
        "no new connection"
    );
    assert_eq!(counter(&mds, "OP_BIND_CONN_TO_SESSION"), 1);
    assert_eq!(
        counter(&mds, "OP_CREATE") - creates,
        1,
        "CREATE ran more than once"
    );
    assert!(c.stat("/once").await.unwrap().is_dir());
    // And the session goes on working on the new connection.
    let f = c.create("/once/f", 0o644).await.unwrap();
    f.write_at(0, bytes::Bytes::from_static(b"x"))
        .await
        .unwrap();
    f.close().await.unwrap();
    assert_eq!(c.stat("/once/f").await.unwrap().size, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_client_keeps_its_lease_and_its_locks() {
    let dir = tempfile::tempdir().unwrap();
    let (mds, addr) = start_mds(dir.path(), 2).await;
    let a = Client::connect(addr).await.unwrap();
    let b = Client::connect_with(addr, ClientOptions::default())
        .await
        .unwrap();
    let fa = a.create("/held", 0o644).await.unwrap();
    fa.lock(LockKind::Write, 0, 0).await.unwrap();
    let seqs = counter(&mds, "OP_SEQUENCE");
    // Three leases with nothing to do.
    tokio::time::sleep(Duration::from_secs(6)).await;
    assert!(
        counter(&mds, "OP_SEQUENCE") > seqs + 2,
        "no renewals while idle"
    );
    let fb = b.open("/held", &OpenOptions::read_write()).await.unwrap();
    let e = fb.try_lock(LockKind::Write, 0, 0).await.unwrap_err();
    assert!(
        e.is(NfsStat4::NFS4ERR_DENIED),
        "the idle client lost its lock: {e}"
    );
    fa.close().await.unwrap();
    fb.try_lock(LockKind::Write, 0, 0).await.unwrap();
    fb.close().await.unwrap();
}

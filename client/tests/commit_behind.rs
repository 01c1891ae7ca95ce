//! A long write's background COMMIT against an MDS in this process (no data servers: the
//! file's data goes through it), reached through a proxy that holds back the server's answer
//! to every COMMIT until the test lets it go: a disk whose sync takes long, which nothing on
//! loopback can otherwise produce. While a COMMIT hangs, the next writes still go out (the
//! stream does not stop for the sync), and once the bytes not known stable reach their bound
//! the writer waits instead of buffering more; let go, every byte lands.

mod support;

use std::collections::HashSet;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use client::{Client, ClientOptions, OpenOptions};
use futures::StreamExt;
use nfs_proto::nfs4::{Compound4Args, NfsArgop4};
use nfs_proto::record::RecordReader;
use nfs_proto::rpc::{MsgBody, RpcMsg};
use nfs_proto::transport::{records, write_record};
use nfs_proto::xdr::Decoder;
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};

use support::start_mds;

const KIB: usize = 1 << 10;

/// What the proxy saw, and the COMMIT answers it holds back.
#[derive(Default)]
struct Seen {
    /// XIDs of the calls that carry a COMMIT.
    commits: HashSet<u32>,
    /// WRITE bytes the client sent since its first COMMIT.
    written_after_commit: usize,
    /// COMMIT answers held back, while `hold` is set.
    held: Vec<Bytes>,
    hold: bool,
}

/// A proxy of one connection to the server.
struct Proxy {
    addr: SocketAddr,
    seen: Arc<Mutex<Seen>>,
    to_client: Arc<tokio::sync::Mutex<Option<OwnedWriteHalf>>>,
}

impl Proxy {
    async fn start(server: SocketAddr) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let proxy = Proxy {
            addr: listener.local_addr().unwrap(),
            seen: Arc::new(Mutex::new(Seen {
                hold: true,
                ..Seen::default()
            })),
            to_client: Arc::default(),
        };
        let (seen, to_client) = (proxy.seen.clone(), proxy.to_client.clone());
        tokio::spawn(async move {
            let (client, _) = listener.accept().await.unwrap();
            let (ur, uw) = TcpStream::connect(server).await.unwrap().into_split();
            let (cr, cw) = client.into_split();
            *to_client.lock().await = Some(cw);
            tokio::spawn(calls(cr, uw, seen.clone()));
            let mut replies = records(ur, RecordReader::default());
            while let Some(Ok(rec)) = replies.next().await {
                {
                    let mut s = seen.lock().unwrap();
                    let xid = RpcMsg::peek_xid(&rec).unwrap_or(0);
                    if s.hold && s.commits.contains(&xid) {
                        s.held.push(rec);
                        continue;
                    }
                }
                let mut w = to_client.lock().await;
                if write_record(w.as_mut().unwrap(), &[rec]).await.is_err() {
                    return;
                }
            }
        });
        proxy
    }

    /// Sends the held COMMIT answers on and holds no more.
    async fn release(&self) {
        let held = {
            let mut s = self.seen.lock().unwrap();
            s.hold = false;
            std::mem::take(&mut s.held)
        };
        let mut w = self.to_client.lock().await;
        for rec in held {
            write_record(w.as_mut().unwrap(), &[rec]).await.unwrap();
        }
    }

    fn held(&self) -> usize {
        self.seen.lock().unwrap().held.len()
    }

    fn written_after_commit(&self) -> usize {
        self.seen.lock().unwrap().written_after_commit
    }
}

/// The XID and operations of a COMPOUND call record; `None` for anything else.
fn compound_call(rec: Bytes) -> Option<(u32, Vec<NfsArgop4>)> {
    let (msg, body) = RpcMsg::decode_header(rec).ok()?;
    let MsgBody::Call(_) = msg.body else {
        return None;
    };
    let (args, _) = Compound4Args::decode_partial(&mut Decoder::new(body)).ok()?;
    Some((msg.xid, args.argarray))
}

/// Forwards the client's calls to the server, noting COMMITs and the WRITE bytes after one.
async fn calls(from: OwnedReadHalf, mut to: OwnedWriteHalf, seen: Arc<Mutex<Seen>>) {
    let mut calls = records(from, RecordReader::default());
    while let Some(Ok(rec)) = calls.next().await {
        if let Some((xid, ops)) = compound_call(rec.clone()) {
            let mut s = seen.lock().unwrap();
            for op in &ops {
                match op {
                    NfsArgop4::Commit(_) => {
                        s.commits.insert(xid);
                    }
                    NfsArgop4::Write(w) if !s.commits.is_empty() => {
                        s.written_after_commit += w.data.len();
                    }
                    _ => {}
                }
            }
        }
        if write_record(&mut to, &[rec]).await.is_err() {
            return;
        }
    }
}

/// Polls `f` every 10 ms for up to `limit`; whether it became true.
async fn within(limit: Duration, mut f: impl FnMut() -> bool) -> bool {
    let end = tokio::time::Instant::now() + limit;
    while tokio::time::Instant::now() < end {
        if f() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    f()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_go_on_while_a_background_commit_hangs_and_stop_at_the_bound() {
    let dir = tempfile::tempdir().unwrap();
    let (_mds, addr) = start_mds(dir.path(), 30).await;
    let proxy = Proxy::start(addr).await;
    // Sends of 256 KiB; a COMMIT once 512 KiB (half of `commit_every`) are sent unstable.
    let opts = ClientOptions {
        delegations: false,
        write_back: 256 * KIB,
        commit_every: 1024 * KIB,
        ..ClientOptions::default()
    };
    let c = Client::connect_with(proxy.addr, opts).await.unwrap();
    let f = c.create("/f", 0o644).await.unwrap();
    let data: Bytes = (0..16 * 1024 * KIB).map(|i| (i % 251) as u8).collect();
    let writer = {
        let data = data.clone();
        tokio::spawn(async move {
            for (i, chunk) in data.chunks(64 * KIB).enumerate() {
                f.write_at((i * 64 * KIB) as u64, data.slice_ref(chunk))
                    .await
                    .unwrap();
            }
            f
        })
    };
    assert!(
        within(Duration::from_secs(10), || proxy.held() > 0).await,
        "no COMMIT in the background while writing"
    );
    // The stream goes on past the hanging COMMIT: the next send (a COMMIT made inside the
    // send stopped it here, until the sync ended).
    assert!(
        within(Duration::from_secs(10), || proxy.written_after_commit()
            >= 256 * KIB)
        .await,
        "no WRITE after the COMMIT while it hangs ({} bytes)",
        proxy.written_after_commit()
    );
    // ... but not without end: the next send to reach the threshold waits for the running
    // COMMIT, so at most one more send's bytes and a full buffer are taken in.
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(proxy.held(), 1, "one COMMIT at a time");
    let after = proxy.written_after_commit();
    assert!(
        after <= 2 * 512 * KIB,
        "{after} bytes written after a COMMIT that has not answered"
    );
    assert!(!writer.is_finished(), "the writer took in the whole file");
    proxy.release().await;
    let f = writer.await.unwrap();
    f.close().await.unwrap();
    let r = c.open("/f", &OpenOptions::read()).await.unwrap();
    assert_eq!(r.read_to_end().await.unwrap(), data);
    r.close().await.unwrap();
    c.shutdown().await;
}

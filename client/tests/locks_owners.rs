//! POSIX byte-range locks for many lock owners (what a FUSE mount asks for its processes),
//! against a real MDS: owners of one client conflict with each other as two clients do and
//! share read locks; an owner's locks are the same through every File of a file; split,
//! merge, upgrade and downgrade follow POSIX (the fcntl sequence of
//! interop-tests/guest/locktest.py, which the Linux client passes against knfsd), on an MDS
//! alone and on a striped cluster; waits, interrupted waits, F_GETLK, releases, the last
//! close, and reclaim after an MDS restart.

mod support;

use std::net::SocketAddr;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use client::{Client, ClientOptions, Conflict, File, Holder, LockKind, OpenOptions};
use futures::FutureExt;
use mds::Mds;
use testkit::loopback::cluster::start_cluster;

use support::{mds_config, start_mds};
use LockKind::{Read, Write};

const EAGAIN: i32 = 11;
const EINTR: i32 = 4;
const EINVAL: i32 = 22;

/// The sum over all statuses of the MDS's count of `op` (`OP_LOCK`, ...).
fn ops(mds: &Mds, op: &str) -> u64 {
    let page = mds::net::metrics::render(mds, std::time::Instant::now());
    page.lines()
        .filter(|l| l.starts_with("pnfs_ops_total{") && l.contains(&format!("op=\"{op}\"")))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<u64>().ok())
        .sum()
}

/// The lock stateids the MDS keeps.
fn lock_stateids(mds: &Mds) -> u64 {
    let page = mds::net::metrics::render(mds, std::time::Instant::now());
    page.lines()
        .find_map(|l| l.strip_prefix("pnfs_stateids{kind=\"lock\"} "))
        .and_then(|n| n.parse().ok())
        .expect("no lock stateid gauge")
}

/// One side of a lock test: a process (lock owner `owner`) with `f` open on `path`.
struct Peer {
    c: Client,
    path: String,
    f: File,
    owner: u64,
}

impl Peer {
    async fn new(c: &Client, path: &str, owner: u64) -> Peer {
        let f = c.open(path, &OpenOptions::read_write()).await.unwrap();
        Peer {
            c: c.clone(),
            path: path.to_string(),
            f,
            owner,
        }
    }

    /// F_SETLK: Ok, or the errno.
    async fn lock(&self, kind: LockKind, offset: u64, len: u64) -> Result<(), i32> {
        self.f
            .lock_as(self.owner, kind, offset, len, false, || true)
            .await
            .map_err(|e| e.errno())
    }

    async fn unlock(&self, offset: u64, len: u64) {
        self.f.unlock_as(self.owner, offset, len).await.unwrap();
    }

    /// F_GETLK for a write lock.
    async fn test(&self, offset: u64, len: u64) -> Option<Conflict> {
        self.f
            .test_lock_as(self.owner, Write, offset, len)
            .await
            .unwrap()
    }

    /// Closes and opens again: the process's close releases its locks.
    async fn reopen(&mut self) {
        self.f.release_owner(self.owner).await.unwrap();
        let g = self
            .c
            .open(&self.path, &OpenOptions::read_write())
            .await
            .unwrap();
        std::mem::replace(&mut self.f, g).close().await.unwrap();
    }
}

/// locktest.py's `fcntl_suite`, step by step, with `a` seen from `b` as `a_is`.
async fn fcntl_suite(a: &Peer, b: &mut Peer, a_is: Holder) {
    let denied = Err(EAGAIN);
    assert_eq!(a.lock(Write, 0, 100).await, Ok(()));
    assert_eq!(
        b.lock(Write, 50, 100).await,
        denied,
        "overlapping write lock"
    );
    assert_eq!(
        b.lock(Read, 99, 1).await,
        denied,
        "read lock on the last locked byte"
    );
    assert_eq!(
        b.test(0, 10).await,
        Some(Conflict {
            kind: Write,
            offset: 0,
            len: 100,
            holder: a_is
        })
    );
    assert_eq!(
        b.lock(Write, 100, 100).await,
        Ok(()),
        "adjacent range is free"
    );
    a.unlock(0, 50).await; // split: a keeps 50..100
    assert_eq!(b.lock(Write, 0, 50).await, Ok(()));
    assert_eq!(b.lock(Write, 50, 1).await, denied);
    assert_eq!(
        b.test(50, 1).await.map(|c| (c.offset, c.len)),
        Some((50, 50))
    );
    a.unlock(0, 0).await; // len 0 = to the end of the file
    assert_eq!(b.test(50, 50).await, None);
    assert_eq!(b.lock(Write, 50, 50).await, Ok(()));
    b.unlock(0, 0).await;
    assert_eq!(a.lock(Read, 0, 100).await, Ok(()), "read locks share");
    assert_eq!(b.lock(Read, 0, 100).await, Ok(()));
    assert_eq!(
        a.lock(Write, 0, 100).await,
        denied,
        "upgrade refused while b reads"
    );
    b.unlock(0, 0).await;
    assert_eq!(a.lock(Write, 0, 100).await, Ok(()), "upgrade");
    assert_eq!(b.lock(Read, 0, 1).await, denied);
    assert_eq!(a.lock(Read, 0, 100).await, Ok(()), "downgrade");
    assert_eq!(b.lock(Read, 0, 1).await, Ok(()));
    b.unlock(0, 0).await;
    // A waiter is granted once the holder releases.
    let released = AtomicBool::new(false);
    let waiter = async {
        let r = b.f.lock_as(b.owner, Write, 10, 10, true, || true).await;
        (r.map_err(|e| e.errno()), released.load(Ordering::SeqCst))
    };
    let release = async {
        tokio::time::sleep(Duration::from_millis(400)).await;
        released.store(true, Ordering::SeqCst);
        a.unlock(0, 0).await;
    };
    let (got, ()) = tokio::join!(
        tokio::time::timeout(Duration::from_secs(10), waiter),
        release
    );
    assert_eq!(
        got.expect("the waiter was never granted"),
        (Ok(()), true),
        "granted, and only after the release"
    );
    assert_eq!(a.lock(Write, 10, 1).await, denied);
    b.reopen().await; // close releases every fcntl lock
    assert_eq!(a.lock(Write, 10, 1).await, Ok(()));
    a.unlock(0, 0).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_owners_of_one_client_pass_the_fcntl_suite_of_locktest_py() {
    let dir = tempfile::tempdir().unwrap();
    let (mds, addr) = start_mds(dir.path(), 10).await;
    let c = Client::connect(addr).await.unwrap();
    c.create("/f", 0o644).await.unwrap().close().await.unwrap();
    let a = Peer::new(&c, "/f", 1).await;
    let mut b = Peer::new(&c, "/f", 2).await;
    fcntl_suite(&a, &mut b, Holder::Owner(1)).await;
    a.f.close().await.unwrap();
    b.f.close().await.unwrap();
    assert_eq!(lock_stateids(&mds), 0, "lock state left on the server");
    c.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_clients_pass_the_fcntl_suite_on_a_striped_cluster() {
    let (_k, mds, addr) = start_cluster(3, |c| {
        c.lease_time = 10;
        c.cluster.layouts = true;
    })
    .await;
    let c1 = Client::connect(addr).await.unwrap();
    let c2 = Client::connect(addr).await.unwrap();
    assert!(c1.uses_pnfs(), "the cluster grants file layouts");
    let data = Bytes::from(vec![7u8; 3 << 20]);
    let f = c1.create("/striped", 0o644).await.unwrap();
    f.write_at(0, data.clone()).await.unwrap();
    f.close().await.unwrap();
    // The same u64 on two clients: two owners all the same.
    let a = Peer::new(&c1, "/striped", 1).await;
    let mut b = Peer::new(&c2, "/striped", 1).await;
    fcntl_suite(&a, &mut b, Holder::OtherClient).await;
    // Locked I/O through the layout.
    assert_eq!(b.lock(Write, 0, 0).await, Ok(()));
    b.f.write_at(1 << 20, Bytes::from_static(b"locked"))
        .await
        .unwrap();
    b.f.fsync().await.unwrap();
    b.unlock(0, 0).await;
    assert_eq!(a.lock(Read, 0, 0).await, Ok(()));
    a.f.revalidate().await.unwrap();
    assert_eq!(&a.f.read_at(1 << 20, 6).await.unwrap()[..], b"locked");
    a.f.close().await.unwrap();
    b.f.close().await.unwrap();
    assert_eq!(lock_stateids(&mds), 0, "lock state left on the server");
    c1.shutdown().await;
    c2.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_owner_has_one_set_of_locks_through_every_file_of_a_file() {
    let dir = tempfile::tempdir().unwrap();
    let (mds, addr) = start_mds(dir.path(), 10).await;
    let c = Client::connect(addr).await.unwrap();
    c.create("/f", 0o644).await.unwrap().close().await.unwrap();
    let f1 = c.open("/f", &OpenOptions::read_write()).await.unwrap();
    let f2 = c.open("/f", &OpenOptions::read_write()).await.unwrap();
    let other = c.open("/f", &OpenOptions::read_write()).await.unwrap();
    let try_other = |kind, off, len| other.lock_as(9, kind, off, len, false, || true);
    f1.lock_as(1, Write, 0, 100, false, || true).await.unwrap();
    // Through f2 the owner extends, and merges with, the lock f1 took.
    f2.lock_as(1, Write, 100, 100, false, || true)
        .await
        .unwrap();
    assert_eq!(
        other.test_lock_as(9, Read, 150, 1).await.unwrap(),
        Some(Conflict {
            kind: Write,
            offset: 0,
            len: 200,
            holder: Holder::Owner(1)
        })
    );
    assert_eq!(lock_stateids(&mds), 1, "one lock stateid for the owner");
    // Unlocked through f2 what f1 took.
    f2.unlock_as(1, 0, 50).await.unwrap();
    try_other(Write, 0, 50).await.unwrap();
    other.unlock_as(9, 0, 0).await.unwrap();
    // Closing f1 leaves the owner's locks (it holds them through f2 too).
    f1.close().await.unwrap();
    let e = try_other(Write, 60, 1).await.unwrap_err();
    assert_eq!(e.errno(), EAGAIN, "{e}");
    // Its release goes through whichever File.
    f2.release_owner(1).await.unwrap();
    try_other(Write, 0, 0).await.unwrap();
    other.release_owner(9).await.unwrap();
    assert_eq!(lock_stateids(&mds), 0);
    f2.close().await.unwrap();
    other.close().await.unwrap();
    c.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn f_getlk_names_an_owner_the_client_wide_owner_or_another_client() {
    let dir = tempfile::tempdir().unwrap();
    let (_mds, addr) = start_mds(dir.path(), 10).await;
    let c = Client::connect(addr).await.unwrap();
    let d = Client::connect(addr).await.unwrap();
    let f = c.create("/f", 0o644).await.unwrap();
    let g = d.open("/f", &OpenOptions::read_write()).await.unwrap();
    assert_eq!(f.test_lock_as(1, Write, 0, 0).await.unwrap(), None);
    f.lock_as(u64::MAX, Read, 10, 10, false, || true)
        .await
        .unwrap();
    f.lock(Write, 100, 100).await.unwrap();
    g.lock_as(7, Write, 1000, 1, false, || true).await.unwrap();
    let holder = |o: Option<Conflict>| o.map(|c| (c.holder, c.kind, c.offset, c.len));
    assert_eq!(
        holder(f.test_lock_as(1, Write, 0, 50).await.unwrap()),
        Some((Holder::Owner(u64::MAX), Read, 10, 10))
    );
    assert_eq!(
        f.test_lock_as(1, Read, 0, 50).await.unwrap(),
        None,
        "read locks share"
    );
    assert_eq!(
        holder(f.test_lock_as(1, Read, 150, 1).await.unwrap()),
        Some((Holder::Client, Write, 100, 100))
    );
    assert_eq!(
        holder(f.test_lock_as(1, Read, 1000, 0).await.unwrap()),
        Some((Holder::OtherClient, Write, 1000, 1))
    );
    // An owner's own locks are never in its way.
    assert_eq!(f.test_lock_as(u64::MAX, Write, 10, 10).await.unwrap(), None);
    // The client-wide owner and an owner conflict too.
    let e = f.lock_as(1, Write, 0, 0, false, || true).await.unwrap_err();
    assert_eq!(e.errno(), EAGAIN, "{e}");
    let e = f.try_lock(Write, 15, 1).await.unwrap_err();
    assert_eq!(e.errno(), EAGAIN, "{e}");
    f.close()
        .await
        .unwrap_or_else(|e| panic!("close with locks held: {e}"));
    g.close().await.unwrap();
    c.shutdown().await;
    d.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiter_is_granted_as_soon_as_another_owner_of_its_client_unlocks() {
    let dir = tempfile::tempdir().unwrap();
    let (_mds, addr) = start_mds(dir.path(), 10).await;
    let c = Client::connect(addr).await.unwrap();
    let f = c.create("/f", 0o644).await.unwrap();
    let g = c.open("/f", &OpenOptions::read_write()).await.unwrap();
    f.lock_as(1, Write, 0, 0, false, || true).await.unwrap();
    let released_at = std::sync::Mutex::new(None);
    let waiter = async {
        g.lock_as(2, Write, 100, 1, true, || true).await.unwrap();
        std::time::Instant::now()
    };
    let release = async {
        // Long enough for the waiter's pauses to have grown to most of a second.
        tokio::time::sleep(Duration::from_millis(1700)).await;
        f.unlock_as(1, 50, 100).await.unwrap();
        *released_at.lock().unwrap() = Some(std::time::Instant::now());
    };
    let (granted_at, ()) = tokio::join!(
        tokio::time::timeout(Duration::from_secs(10), waiter),
        release
    );
    let granted_at = granted_at.expect("never granted");
    let released_at = released_at.lock().unwrap().expect("released");
    assert!(
        granted_at.saturating_duration_since(released_at) < Duration::from_millis(300),
        "granted {:?} after the unlock",
        granted_at.saturating_duration_since(released_at)
    );
    // Owner 1 kept what it did not unlock.
    let e = g.lock_as(2, Read, 49, 1, false, || true).await.unwrap_err();
    assert_eq!(e.errno(), EAGAIN);
    f.close().await.unwrap();
    g.close().await.unwrap();
    c.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wait_told_to_stop_fails_with_eintr_and_leaves_no_lock() {
    let dir = tempfile::tempdir().unwrap();
    let (mds, addr) = start_mds(dir.path(), 10).await;
    let c = Client::connect(addr).await.unwrap();
    let f = c.create("/f", 0o644).await.unwrap();
    f.lock_as(1, Write, 0, 0, false, || true).await.unwrap();
    let asked = AtomicU32::new(0);
    let locks_before = ops(&mds, "OP_LOCK");
    let t0 = std::time::Instant::now();
    let e = f
        .lock_as(2, Read, 5, 5, true, || {
            asked.fetch_add(1, Ordering::SeqCst) < 10
        })
        .await
        .unwrap_err();
    assert_eq!(e.errno(), EINTR, "{e}");
    assert!(matches!(e, client::Error::Interrupted));
    let tries = ops(&mds, "OP_LOCK") - locks_before;
    assert!(
        (2..=6).contains(&tries),
        "{tries} tries in {:?}",
        t0.elapsed()
    );
    // Asked about every 50 ms, so stopped within about half a second, not a backoff later.
    assert!(t0.elapsed() < Duration::from_secs(2), "{:?}", t0.elapsed());
    // The waiter holds nothing: once 1 lets go, a third owner takes it all.
    f.release_owner(1).await.unwrap();
    f.lock_as(3, Write, 0, 0, false, || true).await.unwrap();
    f.release_owner(2).await.unwrap();
    f.release_owner(3).await.unwrap();
    assert_eq!(lock_stateids(&mds), 0);
    f.close().await.unwrap();
    c.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lock_whose_caller_gave_up_mid_request_is_recorded_and_released_with_its_owner() {
    let dir = tempfile::tempdir().unwrap();
    let (mds, addr) = start_mds(dir.path(), 10).await;
    let c = Client::connect(addr).await.unwrap();
    let f = c.create("/f", 0o644).await.unwrap();
    // The caller is gone as soon as the LOCK is sent (an interrupted FUSE request): one
    // poll, then the future is dropped. (A loaded machine may let the reply arrive within
    // that poll: then another owner tries.)
    let mut owner = 0;
    for o in 1..=20 {
        if f.lock_as(o, Write, 0, 10, true, || true)
            .now_or_never()
            .is_none()
        {
            owner = o;
            break;
        }
        f.release_owner(o).await.unwrap();
    }
    assert_ne!(owner, 0, "every LOCK was answered within one poll");
    let t0 = std::time::Instant::now();
    while lock_stateids(&mds) == 0 {
        assert!(
            t0.elapsed() < Duration::from_secs(5),
            "the LOCK never arrived"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // Granted on the server and known here: the owner's release frees it.
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(
        f.test_lock_as(99, Read, 0, 0)
            .await
            .unwrap()
            .map(|c| c.holder),
        Some(Holder::Owner(owner))
    );
    f.release_owner(owner).await.unwrap();
    assert_eq!(lock_stateids(&mds), 0);
    assert_eq!(f.test_lock_as(99, Write, 0, 0).await.unwrap(), None);
    f.close().await.unwrap();
    c.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn release_owner_frees_the_lock_state_and_sends_nothing_for_an_owner_without_locks() {
    let dir = tempfile::tempdir().unwrap();
    let (mds, addr) = start_mds(dir.path(), 10).await;
    let c = Client::connect(addr).await.unwrap();
    let f = c.create("/f", 0o644).await.unwrap();
    for owner in 1..=20 {
        f.lock_as(owner, Write, owner * 10, 5, false, || true)
            .await
            .unwrap();
        f.lock_as(owner, Read, owner * 10 + 5, 1, false, || true)
            .await
            .unwrap();
    }
    assert_eq!(lock_stateids(&mds), 20);
    for owner in 1..=20 {
        f.release_owner(owner).await.unwrap();
    }
    assert_eq!(lock_stateids(&mds), 0, "the server's lock state grew");
    let sent =
        |mds: &Mds| ["OP_LOCK", "OP_LOCKU", "OP_FREE_STATEID", "OP_LOCKT"].map(|op| ops(mds, op));
    let before = sent(&mds);
    f.release_owner(1).await.unwrap();
    f.release_owner(99).await.unwrap();
    f.unlock_as(2, 0, 0).await.unwrap();
    f.unlock(0, 0).await.unwrap();
    assert_eq!(sent(&mds), before, "a request for an owner holding nothing");
    // An unlock of everything an owner holds frees its state too.
    f.lock_as(5, Write, 0, 10, false, || true).await.unwrap();
    f.unlock_as(5, 20, 10).await.unwrap();
    assert_eq!(lock_stateids(&mds), 1, "an unlock of nothing held");
    f.unlock_as(5, 0, 5).await.unwrap();
    assert_eq!(lock_stateids(&mds), 1);
    f.unlock_as(5, 5, 5).await.unwrap();
    assert_eq!(lock_stateids(&mds), 0);
    f.close().await.unwrap();
    c.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_close_of_the_server_open_releases_the_locks_owners_still_hold_first() {
    let dir = tempfile::tempdir().unwrap();
    let (mds, addr) = start_mds(dir.path(), 10).await;
    let no_delegations = ClientOptions {
        delegations: false,
        ..ClientOptions::default()
    };
    let c = Client::connect_with(addr, no_delegations).await.unwrap();
    let d = Client::connect(addr).await.unwrap();
    let f = c.create("/f", 0o644).await.unwrap();
    f.lock_as(1, Write, 0, 10, false, || true).await.unwrap();
    f.lock_as(2, Read, 20, 10, false, || true).await.unwrap();
    f.lock(Write, 40, 10).await.unwrap();
    // CLOSE of an open whose lock-owners hold locks would fail with NFS4ERR_LOCKS_HELD.
    f.close().await.unwrap();
    assert_eq!(ops(&mds, "OP_CLOSE"), 1);
    assert_eq!(lock_stateids(&mds), 0);
    let g = d.open("/f", &OpenOptions::read_write()).await.unwrap();
    g.try_lock(Write, 0, 0).await.unwrap();
    g.close().await.unwrap();
    // Under a delegation the server open outlives the last File, and the owners' locks
    // with it (they are the caller's to release); they go when the open is CLOSEd.
    let f = d.open("/f", &OpenOptions::read_write()).await.unwrap();
    assert_eq!(d.stats().delegations_held, 1, "no delegation granted");
    f.lock_as(1, Write, 0, 10, false, || true).await.unwrap();
    f.lock_as(2, Read, 20, 10, false, || true).await.unwrap();
    f.close().await.unwrap();
    assert_eq!(lock_stateids(&mds), 2);
    d.return_delegations().await;
    assert_eq!(lock_stateids(&mds), 0);
    c.shutdown().await;
    d.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_range_past_the_last_offset_is_einval_and_sends_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (mds, addr) = start_mds(dir.path(), 10).await;
    let c = Client::connect(addr).await.unwrap();
    let f = c.create("/f", 0o644).await.unwrap();
    let e = f
        .lock_as(1, Write, u64::MAX - 1, 3, false, || true)
        .await
        .unwrap_err();
    assert_eq!(e.errno(), EINVAL, "{e}");
    assert_eq!(ops(&mds, "OP_LOCK"), 0);
    // The last byte itself can be locked, alone or to the end.
    f.lock_as(1, Write, u64::MAX - 1, 1, false, || true)
        .await
        .unwrap();
    f.lock_as(1, Write, u64::MAX - 1, 0, false, || true)
        .await
        .unwrap();
    f.close().await.unwrap();
    c.shutdown().await;
}

/// An MDS over a data directory on disk that can be stopped and started again on the same
/// loopback port (as a restarted server would be), on TCP for the client library.
struct RestartableMds {
    addr: SocketAddr,
    mds: Option<Arc<Mds>>,
    accept: Option<tokio::task::JoinHandle<()>>,
}

impl RestartableMds {
    async fn start(dir: &Path, lease: u32, grace: u32, addr: SocketAddr) -> RestartableMds {
        let mut cfg = mds_config(dir, lease);
        cfg.grace_time = grace;
        // The previous boot's store may still be closing.
        let t0 = std::time::Instant::now();
        let mds = loop {
            match Mds::open(cfg.clone()) {
                Ok(m) => break m,
                Err(e) if t0.elapsed() < Duration::from_secs(10) => {
                    eprintln!("opening the MDS again: {e}");
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                Err(e) => panic!("open the MDS: {e}"),
            }
        };
        mds.start_tasks();
        let listener = tokio::net::TcpListener::bind(addr).await.unwrap();
        let addr = listener.local_addr().unwrap();
        let server = nfs_server::StreamServer::for_role(mds.clone());
        // The connections are tasks of the set: dropping it (aborting this task) ends them.
        let accept = tokio::spawn(async move {
            let mut conns = tokio::task::JoinSet::new();
            while let Ok((s, peer)) = listener.accept().await {
                let _ = s.set_nodelay(true);
                let local = s.local_addr().unwrap_or(peer);
                conns.spawn(server.serve(s, peer, local));
            }
        });
        RestartableMds {
            addr,
            mds: Some(mds),
            accept: Some(accept),
        }
    }

    fn mds(&self) -> &Mds {
        self.mds.as_ref().unwrap()
    }

    /// Stops the server as a crash would (its connections close, nothing is handed over)
    /// and waits until it and its store are gone.
    async fn stop(&mut self) {
        if let Some(a) = self.accept.take() {
            a.abort();
            let _ = a.await;
        }
        let mds = self.mds.take().unwrap();
        let gone = Arc::downgrade(&mds);
        let parts = mds.downgrade();
        drop(mds);
        let t0 = std::time::Instant::now();
        while gone.strong_count() > 0 || !parts.is_gone() {
            assert!(t0.elapsed() < Duration::from_secs(10), "the MDS lingers");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn locks_are_reclaimed_after_an_mds_restart() {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_test_writer()
        .try_init();
    let dir = tempfile::tempdir().unwrap();
    let any = "127.0.0.1:0".parse().unwrap();
    let mut server = RestartableMds::start(dir.path(), 3, 0, any).await;
    let addr = server.addr;
    let c = Client::connect(addr).await.unwrap();
    c.create("/f", 0o644).await.unwrap().close().await.unwrap();
    let f1 = c.open("/f", &OpenOptions::read_write()).await.unwrap();
    let f2 = c.open("/f", &OpenOptions::read_write()).await.unwrap();
    f1.lock_as(1, Write, 0, 100, false, || true).await.unwrap();
    f1.unlock_as(1, 40, 20).await.unwrap(); // 0..40 and 60..100
    f2.lock_as(2, Read, 200, 0, false, || true).await.unwrap();
    f2.lock(Write, 150, 10).await.unwrap();

    server.stop().await;
    server = RestartableMds::start(dir.path(), 3, 4, addr).await;
    // The client finds out at its next request (or lease renewal), reclaims its open and
    // its owners' locks in the grace period; another client's locks wait for its end.
    let t0 = std::time::Instant::now();
    assert_eq!(
        f1.test_lock_as(9, Read, 0, 0)
            .await
            .unwrap()
            .map(|c| c.holder),
        Some(Holder::Owner(1)),
        "owner 1's lock was not reclaimed"
    );
    eprintln!("first answer after the restart in {:?}", t0.elapsed());
    let d = Client::connect(addr).await.unwrap();
    let g = d.open("/f", &OpenOptions::read_write()).await.unwrap();
    for (off, len, held) in [
        (0, 40, true),
        (40, 20, false),
        (60, 40, true),
        (150, 10, true),
        (200, 1, true),
        (100, 50, false),
    ] {
        let r = g.lock_as(1, Write, off, len, false, || true).await;
        assert_eq!(r.is_err(), held, "{off}+{len} after the restart: {r:?}");
        if let Err(e) = r {
            assert_eq!(e.errno(), EAGAIN, "{e}");
        }
    }
    g.release_owner(1).await.unwrap();
    assert_eq!(lock_stateids(server.mds()), 3, "one per owner of c");
    // The reclaimed state is the owners' own: they release it and the locks go.
    f2.unlock_as(1, 0, 0).await.unwrap();
    f2.release_owner(2).await.unwrap();
    f1.unlock(0, 0).await.unwrap();
    assert_eq!(lock_stateids(server.mds()), 0);
    g.lock_as(1, Write, 0, 0, false, || true).await.unwrap();
    g.close().await.unwrap();
    f1.close().await.unwrap();
    f2.close().await.unwrap();
    d.shutdown().await;
    c.shutdown().await;
    server.stop().await;
}

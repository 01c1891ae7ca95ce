//! Delegations with the MDS in the test process (RFC 8881 sections 10.2 to 10.5): opens that
//! stay local under a delegation, a recall that flushes and returns, CB_GETATTR, a revocation
//! after an ignored recall, the holder giving its delegation back before it changes the
//! file, and the switch that turns delegations off. The server's counters (its metrics page)
//! are read to prove what was and was not sent.

mod support;

use std::time::{Duration, Instant};

use bytes::Bytes;
use client::{Client, ClientOptions, Error, OpenOptions};
use mds::Mds;
use support::start_mds;

/// A metric of the server's page: the sum of the samples of `name` whose labels contain
/// every one of `labels` (`op="OP_OPEN"` and the like).
fn metric(mds: &Mds, name: &str, labels: &[&str]) -> u64 {
    let page = mds::net::metrics::render(mds, Instant::now());
    page.lines()
        .filter(|l| {
            (l.starts_with(&format!("{name}{{")) || l.starts_with(&format!("{name} ")))
                && labels.iter().all(|x| l.contains(x))
        })
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum::<f64>() as u64
}

/// OPs of one kind the server answered NFS4_OK.
fn ops(mds: &Mds, op: &str) -> u64 {
    metric(
        mds,
        "pnfs_ops_total",
        &[&format!("op=\"{op}\""), "status=\"ok\""],
    )
}

fn bytes(seed: u8, len: usize) -> Bytes {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
        .collect::<Vec<u8>>()
        .into()
}

/// Waits (up to `limit`) until `f` holds.
async fn until(limit: Duration, what: &str, mut f: impl FnMut() -> bool) {
    let t = Instant::now();
    while !f() {
        assert!(t.elapsed() < limit, "{what}: not within {limit:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_reopens_under_a_read_delegation_send_no_open_and_no_close() {
    let dir = tempfile::tempdir().unwrap();
    let (mds, addr) = start_mds(dir.path(), 10).await;
    let data = bytes(1, 100_000);
    let w = Client::connect(addr).await.unwrap();
    let f = w.create("/hot", 0o644).await.unwrap();
    f.write_at(0, data.clone()).await.unwrap();
    f.close().await.unwrap();
    w.shutdown().await;

    let c = Client::connect(addr).await.unwrap();
    let f = c.open("/hot", &OpenOptions::read()).await.unwrap();
    assert!(f.read_to_end().await.unwrap() == data);
    f.close().await.unwrap();
    assert_eq!(c.stats().delegations, 1, "{:?}", c.stats());
    let (opens, closes, reads) = (
        ops(&mds, "OP_OPEN"),
        ops(&mds, "OP_CLOSE"),
        ops(&mds, "OP_READ"),
    );
    let t = Instant::now();
    for i in 0..1000u64 {
        let f = c.open("/hot", &OpenOptions::read()).await.unwrap();
        let got = f.read_at(i * 97, 100).await.unwrap();
        assert!(got == data.slice(i as usize * 97..i as usize * 97 + 100));
        f.close().await.unwrap();
    }
    let took = t.elapsed();
    let s = c.stats();
    eprintln!(
        "1,000 re-opens in {took:?}: OPEN +{}, CLOSE +{}, READ +{}; {s:?}",
        ops(&mds, "OP_OPEN") - opens,
        ops(&mds, "OP_CLOSE") - closes,
        ops(&mds, "OP_READ") - reads
    );
    assert_eq!(ops(&mds, "OP_OPEN"), opens, "a re-open sent OPEN");
    assert_eq!(ops(&mds, "OP_CLOSE"), closes, "a close sent CLOSE");
    assert_eq!(
        ops(&mds, "OP_READ"),
        reads,
        "the read cache did not outlive the opens"
    );
    assert_eq!(s.delegated_opens, 1000);
    assert_eq!(s.delegations_held, 1);
    // Giving it back closes the open kept with it.
    c.return_delegations().await;
    assert_eq!(ops(&mds, "OP_CLOSE"), closes + 1);
    assert_eq!(c.stats().delegations_returned, 1);
    assert_eq!(c.stats().delegations_held, 0);
    c.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_recalled_write_delegation_is_flushed_before_it_goes_back_and_the_reader_sees_the_data() {
    let dir = tempfile::tempdir().unwrap();
    let (mds, addr) = start_mds(dir.path(), 10).await;
    let a = Client::connect(addr).await.unwrap();
    let fa = a.create("/w", 0o644).await.unwrap();
    let data = bytes(2, 300_000);
    fa.write_at(0, data.clone()).await.unwrap(); // buffered: nothing sent yet
    assert_eq!(a.stats().delegations, 1);
    assert_eq!(ops(&mds, "OP_WRITE"), 0);
    let b = Client::connect(addr).await.unwrap();
    let t = Instant::now();
    let fb = b.open("/w", &OpenOptions::read()).await.unwrap();
    eprintln!("B's open waited {:?} for the recall", t.elapsed());
    assert_eq!(fb.size(), 300_000);
    assert!(fb.read_to_end().await.unwrap() == data);
    let s = a.stats();
    assert_eq!(
        (
            s.delegations_recalled,
            s.delegations_returned,
            s.delegations_revoked
        ),
        (1, 1, 0),
        "{s:?}"
    );
    // A goes on without the delegation: its next writes use its open stateid.
    fa.write_at(300_000, bytes(3, 1000)).await.unwrap();
    fa.close().await.unwrap();
    let m = fb.revalidate().await.unwrap();
    assert_eq!(m.size, 301_000);
    fb.close().await.unwrap();
    let counts = |n: &str| metric(&mds, n, &[]);
    assert_eq!(counts("pnfs_delegations_granted_total"), 1);
    assert_eq!(counts("pnfs_delegations_recalled_total"), 1);
    assert_eq!(counts("pnfs_delegations_returned_total"), 1);
    assert_eq!(counts("pnfs_delegations_revoked_total"), 0);
    a.shutdown().await;
    b.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_clients_stat_sees_the_size_of_writes_the_holder_has_not_sent() {
    let dir = tempfile::tempdir().unwrap();
    let (mds, addr) = start_mds(dir.path(), 10).await;
    let a = Client::connect(addr).await.unwrap();
    let fa = a.create("/g", 0o644).await.unwrap();
    fa.write_at(0, bytes(4, 123_457)).await.unwrap();
    assert_eq!(ops(&mds, "OP_WRITE"), 0, "the write was sent");
    let b = Client::connect(addr).await.unwrap();
    let first = b.stat("/g").await.unwrap();
    assert_eq!(first.size, 123_457, "CB_GETATTR not answered with A's size");
    fa.write_at(200_000, bytes(5, 10)).await.unwrap();
    let second = b.stat("/g").await.unwrap();
    assert_eq!(second.size, 200_010);
    assert_ne!(
        second.change, first.change,
        "A's second write did not change the file"
    );
    // Nothing was recalled: A still holds its delegation.
    assert_eq!(metric(&mds, "pnfs_delegations_recalled_total", &[]), 0);
    assert_eq!(a.stats().delegations_held, 1);
    fa.close().await.unwrap();
    a.shutdown().await;
    b.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_ignores_a_recall_loses_the_delegation_and_its_unsent_writes() {
    let dir = tempfile::tempdir().unwrap();
    let lease = 2;
    let (mds, addr) = start_mds(dir.path(), lease).await;
    let a = Client::connect_with(
        addr,
        ClientOptions {
            ignore_recalls: true,
            ..ClientOptions::default()
        },
    )
    .await
    .unwrap();
    let fa = a.create("/ignored", 0o644).await.unwrap();
    fa.write_at(0, bytes(6, 5000)).await.unwrap();
    assert_eq!(a.stats().delegations_held, 1);
    let b = Client::connect(addr).await.unwrap();
    let t = Instant::now();
    let fb = b
        .open("/ignored", &OpenOptions::read_write())
        .await
        .unwrap();
    let waited = t.elapsed();
    eprintln!("B's open went through after {waited:?} (lease {lease} s)");
    assert!(
        waited >= Duration::from_millis(1500),
        "B did not wait for the revocation: {waited:?}"
    );
    assert_eq!(metric(&mds, "pnfs_delegations_revoked_total", &[]), 1);
    assert_eq!(metric(&mds, "pnfs_delegations_returned_total", &[]), 0);
    // A learns it from SEQUENCE (its lease renewals), tests and frees the stateid.
    until(Duration::from_secs(10), "A saw the revocation", || {
        a.stats().delegations_revoked == 1
    })
    .await;
    until(Duration::from_secs(5), "A freed the stateid", || {
        ops(&mds, "OP_FREE_STATEID") >= 1
    })
    .await;
    assert!(ops(&mds, "OP_TEST_STATEID") >= 1);
    let s = a.stats();
    assert_eq!(
        (s.delegations_recalled, s.delegations_held),
        (1, 0),
        "{s:?}"
    );
    // A's writes under the revoked delegation are not sent: its flush says so.
    let e = fa.fsync().await.unwrap_err();
    assert!(
        matches!(e, Error::DataLost { bytes: 5000, .. }),
        "not a data-lost error: {e}"
    );
    eprintln!("A's flush: {e}");
    assert_eq!(fb.size(), 0);
    assert_eq!(
        ops(&mds, "OP_WRITE"),
        0,
        "the lost writes reached the server"
    );
    // The file goes on working for both.
    fb.write_at(0, Bytes::from_static(b"B's")).await.unwrap();
    fb.close().await.unwrap();
    fa.close().await.unwrap();
    let g = a.open("/ignored", &OpenOptions::read()).await.unwrap();
    assert_eq!(&g.read_to_end().await.unwrap()[..], b"B's");
    g.close().await.unwrap();
    a.shutdown().await;
    b.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn opens_under_a_write_delegation_are_local_and_the_holders_own_remove_gives_it_back() {
    let dir = tempfile::tempdir().unwrap();
    let (mds, addr) = start_mds(dir.path(), 10).await;
    let c = Client::connect(addr).await.unwrap();
    c.create("/mine", 0o644)
        .await
        .unwrap()
        .close()
        .await
        .unwrap();
    let opens = ops(&mds, "OP_OPEN");
    for i in 0..10u64 {
        let f = c.open("/mine", &OpenOptions::read_write()).await.unwrap();
        f.write_at(i * 10, bytes(i as u8, 10)).await.unwrap();
        assert_eq!(f.size(), (i + 1) * 10);
        f.close().await.unwrap();
    }
    // Truncate under the delegation: no OPEN either.
    let f = c.open("/mine", &OpenOptions::create()).await.unwrap();
    assert_eq!(f.size(), 0);
    f.write_at(0, Bytes::from_static(b"kept")).await.unwrap();
    f.close().await.unwrap();
    assert_eq!(
        ops(&mds, "OP_OPEN"),
        opens,
        "a re-open under the delegation sent OPEN"
    );
    assert_eq!(c.stats().delegated_opens, 11);
    assert_eq!(c.stat("/mine").await.unwrap().size, 4);
    // Removing its own file, the holder gives the delegation back first (not recalled).
    c.remove("/mine").await.unwrap();
    let s = c.stats();
    assert_eq!(
        (
            s.delegations_returned,
            s.delegations_recalled,
            s.delegations_held
        ),
        (1, 0, 0),
        "{s:?}"
    );
    assert!(c.open("/mine", &OpenOptions::read()).await.is_err());
    c.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_delegations_off_every_open_goes_to_the_server() {
    let dir = tempfile::tempdir().unwrap();
    let (mds, addr) = start_mds(dir.path(), 10).await;
    let c = without_delegations(addr).await;
    c.create("/plain", 0o644)
        .await
        .unwrap()
        .close()
        .await
        .unwrap();
    let opens = ops(&mds, "OP_OPEN");
    for _ in 0..3 {
        c.open("/plain", &OpenOptions::read())
            .await
            .unwrap()
            .close()
            .await
            .unwrap();
    }
    assert_eq!(ops(&mds, "OP_OPEN"), opens + 3);
    assert_eq!(c.stats().delegations, 0);
    assert_eq!(metric(&mds, "pnfs_delegations_granted_total", &[]), 0);
    c.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_open_the_delegation_covers_but_the_server_open_does_not_upgrades_it_under_the_delegation(
) {
    let dir = tempfile::tempdir().unwrap();
    let (mds, addr) = start_mds(dir.path(), 10).await;
    let c = Client::connect(addr).await.unwrap();
    let write_only = OpenOptions {
        read: false,
        ..OpenOptions::create()
    };
    let w = c.open("/wo", &write_only).await.unwrap();
    w.write_at(0, Bytes::from_static(b"written")).await.unwrap();
    assert_eq!(c.stats().delegations_held, 1, "no write delegation");
    let opens = ops(&mds, "OP_OPEN");
    // Reading needs the open upgraded: one OPEN, with CLAIM_DELEG_CUR_FH (no conflict).
    let r = c.open("/wo", &OpenOptions::read()).await.unwrap();
    assert_eq!(ops(&mds, "OP_OPEN"), opens + 1);
    assert_eq!(&r.read_to_end().await.unwrap()[..], b"written");
    r.close().await.unwrap();
    // Now the server open covers both: no more OPENs.
    let r = c.open("/wo", &OpenOptions::read()).await.unwrap();
    r.close().await.unwrap();
    assert_eq!(ops(&mds, "OP_OPEN"), opens + 1);
    w.close().await.unwrap();
    assert_eq!(c.stats().delegated_opens, 2);
    c.shutdown().await;
}

/// Not about delegations as such: the Files of one file in one client share its server open,
/// so closing one leaves the other's state alone, and CLOSE goes with the last.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closing_one_of_two_files_of_a_file_leaves_the_other_open() {
    let dir = tempfile::tempdir().unwrap();
    let (mds, addr) = start_mds(dir.path(), 10).await;
    let c = without_delegations(addr).await;
    let a = c.create("/two", 0o644).await.unwrap();
    let b = c.open("/two", &OpenOptions::read_write()).await.unwrap();
    let closes = ops(&mds, "OP_CLOSE");
    a.write_at(0, Bytes::from_static(b"one")).await.unwrap();
    a.close().await.unwrap();
    assert_eq!(
        ops(&mds, "OP_CLOSE"),
        closes,
        "the first close ended the open"
    );
    let bad = metric(&mds, "pnfs_ops_total", &["NFS4ERR_BAD_STATEID"]);
    b.write_at(3, Bytes::from_static(b"two")).await.unwrap();
    b.fsync().await.unwrap();
    assert_eq!(
        metric(&mds, "pnfs_ops_total", &["NFS4ERR_BAD_STATEID"]),
        bad,
        "the second File's state was gone"
    );
    assert_eq!(b.size(), 6, "the Files of one file disagree on its size");
    b.close().await.unwrap();
    assert_eq!(ops(&mds, "OP_CLOSE"), closes + 1);
    assert_eq!(c.stat("/two").await.unwrap().size, 6);
    c.shutdown().await;
}

/// A client that asks for no delegations.
async fn without_delegations(addr: std::net::SocketAddr) -> Client {
    let opts = ClientOptions {
        delegations: false,
        ..ClientOptions::default()
    };
    Client::connect_with(addr, opts).await.unwrap()
}

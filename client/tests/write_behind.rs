//! Write-behind against a real server: 2,000 random overlapping writes with a small
//! write-back buffer and `commit_every` (so that background sends and COMMITs run while the
//! writer goes on) read back, by a fresh client, equal to a model of the writes; through an
//! MDS in this process alone, and on a file striped over three data servers.

mod support;

use std::net::SocketAddr;

use bytes::Bytes;
use client::{Client, ClientOptions, OpenOptions, Stats};

use support::start_mds;
use testkit::loopback::cluster::start_cluster;

const KIB: usize = 1 << 10;

/// Writes 2,000 random overlapping extents to a new file through `addr` with small parts
/// (background sends and COMMITs run while the writer goes on), and checks the file a fresh client
/// reads against a model of the writes; returns the writer's counters.
async fn overlapping_writes_match_a_model(addr: SocketAddr) -> Stats {
    let opts = ClientOptions {
        delegations: false,
        write_back: 64 * KIB,
        commit_every: 256 * KIB,
        ..ClientOptions::default()
    };
    let c = Client::connect_with(addr, opts).await.unwrap();
    let f = c.create("/f", 0o644).await.unwrap();
    let size = 2048 * KIB;
    let mut model = vec![0u8; size];
    // xorshift: the same writes every run.
    let mut x = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    for i in 0..2000u32 {
        let len = 1 + (next() % (40 * KIB as u64)) as usize;
        let at = (next() % (size - len) as u64) as usize;
        let fill = (i % 251) as u8 + 1;
        model[at..at + len].fill(fill);
        f.write_at(at as u64, Bytes::from(vec![fill; len]))
            .await
            .unwrap();
    }
    f.close().await.unwrap();
    let stats = c.stats();
    c.shutdown().await;
    let reader = Client::connect(addr).await.unwrap();
    let r = reader.open("/f", &OpenOptions::read()).await.unwrap();
    let got = r.read_to_end().await.unwrap();
    let end = model.iter().rposition(|&b| b != 0).map_or(0, |p| p + 1);
    assert_eq!(got.len(), end);
    assert!(
        got[..] == model[..end],
        "the file differs from the writes' model"
    );
    r.close().await.unwrap();
    reader.shutdown().await;
    stats
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn overlapping_writes_land_in_order_through_background_sends_and_commits() {
    let dir = tempfile::tempdir().unwrap();
    let (_mds, addr) = start_mds(dir.path(), 30).await;
    overlapping_writes_match_a_model(addr).await;
}

/// The same on a file striped over three data servers, as `pnfs server` keeps it: the sends
/// and COMMITs go to the data servers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn overlapping_writes_land_in_order_on_a_striped_file() {
    let (_k, _mds, addr) = start_cluster(3, |c| {
        c.lease_time = 10;
        c.cluster.layouts = true;
    })
    .await;
    let stats = overlapping_writes_match_a_model(addr).await;
    assert!(
        stats.ds_bytes_written > 0 && stats.mds_bytes_written == 0,
        "the writes went to the data servers: {stats:?}"
    );
}

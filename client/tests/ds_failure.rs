//! A data server killed under a client that wrote through it, on a file mirrored over two
//! of three data servers (flex files): the client waits for it once (its sessions retry
//! for 5 s), then sends what it wrote there through the MDS, and later calls to it fail at
//! once instead of waiting the 5 s again, until it answers. Every byte reads back.

use std::time::{Duration, Instant};

use bytes::Bytes;
use client::{Client, ClientOptions, OpenOptions};
use mds::config::LayoutType;
use testkit::loopback::cluster::start_cluster;

const MIB: usize = 1 << 20;

/// The data servers (ids) whose object directory holds `bytes` or more.
fn holding(dir: &std::path::Path, n: u16, bytes: u64) -> Vec<u16> {
    fn size_of(p: &std::path::Path) -> u64 {
        let Ok(entries) = std::fs::read_dir(p) else {
            return 0;
        };
        entries
            .flatten()
            .map(|e| match e.metadata() {
                Ok(m) if m.is_dir() => size_of(&e.path()),
                Ok(m) => m.len(),
                Err(_) => 0,
            })
            .sum()
    }
    (1..=n)
        .filter(|id| size_of(&dir.join(format!("ds{id}"))) >= bytes)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dead_data_server_is_waited_for_once() {
    let (mut k, _mds, addr) = start_cluster(3, |c| {
        c.lease_time = 30;
        c.cluster.layouts = true;
        c.cluster.layout.layout_type = LayoutType::FlexFiles;
        c.cluster.layout.mirrors = Some(2);
    })
    .await;
    let opts = ClientOptions {
        delegations: false,
        ..ClientOptions::default()
    };
    let c = Client::connect_with(addr, opts).await.unwrap();
    let f = c.create("/m", 0o644).await.unwrap();
    let data: Vec<u8> = (0..8 * MIB).map(|i| (i % 251) as u8).collect();
    // Sent UNSTABLE to both copies, not COMMITted.
    f.write_list(&[(0, Bytes::copy_from_slice(&data[..4 * MIB]))])
        .await
        .unwrap();
    let copies = holding(k.dir.path(), 3, 4 * MIB as u64);
    assert_eq!(copies.len(), 2, "two copies of 4 MiB: {copies:?}");
    k.kill(copies[0]);
    // The COMMIT to the dead copy waits for it (5 s of reconnects), then its writes go
    // through the MDS, to the copy that is left.
    let t = Instant::now();
    f.fsync().await.unwrap();
    let first = t.elapsed();
    // More writes through the layout that still names it, and their COMMIT: it was given
    // up on, so neither waits for it again.
    let t = Instant::now();
    f.write_list(&[(4 * MIB as u64, Bytes::copy_from_slice(&data[4 * MIB..]))])
        .await
        .unwrap();
    f.fsync().await.unwrap();
    let again = t.elapsed();
    eprintln!("first fsync {first:?}; the next write and fsync {again:?}");
    assert!(first >= Duration::from_secs(4), "{first:?}");
    assert!(
        again < Duration::from_millis(2500),
        "the dead data server was waited for again: {again:?}"
    );
    f.close().await.unwrap();
    c.shutdown().await;
    let reader = Client::connect(addr).await.unwrap();
    let r = reader.open("/m", &OpenOptions::read()).await.unwrap();
    assert!(
        r.read_to_end().await.unwrap() == data,
        "the file reads back"
    );
    r.close().await.unwrap();
    reader.shutdown().await;
}

//! The client against an MDS in this process that keeps file data itself (no data servers,
//! no layouts): namespace operations, I/O through the server, locks between two clients,
//! close-to-open and revalidate.

mod support;

use std::time::Duration;

use bytes::Bytes;
use client::{Client, ClientOptions, FileType, LockKind, OpenOptions};
use nfs_proto::nfs4::NfsStat4;

use support::start_mds;

fn pattern(len: usize, seed: u8) -> Bytes {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed) ^ (i >> 11) as u8)
        .collect::<Vec<u8>>()
        .into()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn namespace_operations_and_io_through_the_server_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let (_mds, addr) = start_mds(dir.path(), 10).await;
    let c = Client::connect(addr).await.unwrap();
    assert!(!c.uses_pnfs());
    c.mkdir("/d", 0o755).await.unwrap();
    let data = pattern(3 << 20 | 12345, 1);
    let f = c.create("/d/f", 0o644).await.unwrap();
    f.write_at(0, data.clone()).await.unwrap();
    f.close().await.unwrap();
    let st = c.stat("/d/f").await.unwrap();
    assert_eq!((st.file_type, st.size), (FileType::File, data.len() as u64));
    let g = c.open("/d/f", &OpenOptions::read()).await.unwrap();
    assert_eq!(g.read_to_end().await.unwrap(), data);
    assert_eq!(&g.read_at(5, 10).await.unwrap()[..], &data[5..15]);
    assert!(g.read_at(data.len() as u64, 10).await.unwrap().is_empty());
    g.close().await.unwrap();
    c.rename("/d/f", "/d/g").await.unwrap();
    c.link("/d/g", "/d/h").await.unwrap();
    c.symlink("g", "/d/s").await.unwrap();
    assert_eq!(c.readlink("/d/s").await.unwrap(), "g");
    let mut names: Vec<String> = c
        .readdir("/d")
        .await
        .unwrap()
        .into_iter()
        .map(|e| e.name)
        .collect();
    names.sort();
    assert_eq!(names, ["g", "h", "s"]);
    assert_eq!(c.stat("/d/g").await.unwrap().nlink, 2);
    c.truncate("/d/g", 100).await.unwrap();
    assert_eq!(c.stat("/d/h").await.unwrap().size, 100);
    for n in ["/d/g", "/d/h", "/d/s"] {
        c.remove(n).await.unwrap();
    }
    c.remove("/d").await.unwrap();
    let e = c.stat("/d").await.unwrap_err();
    assert_eq!(e.nfs_status(), Some(NfsStat4::NFS4ERR_NOENT), "{e}");
    assert!(e.to_string().contains("NFS4ERR_NOENT"), "{e}");
    c.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_io_of_a_thousand_extents_round_trips() {
    let dir = tempfile::tempdir().unwrap();
    let (_mds, addr) = start_mds(dir.path(), 10).await;
    let c = Client::connect(addr).await.unwrap();
    let f = c.create("/list", 0o644).await.unwrap();
    let extents: Vec<(u64, Bytes)> = (0..1000u64)
        .map(|i| {
            (
                i * 10_000 + (i % 7) * 13,
                pattern(100 + (i as usize % 50), i as u8),
            )
        })
        .collect();
    f.write_list(&extents).await.unwrap();
    f.fsync().await.unwrap();
    let want: Vec<(u64, u64)> = extents.iter().map(|(o, d)| (*o, d.len() as u64)).collect();
    let got = f.read_list(&want).await.unwrap();
    assert_eq!(got.len(), 1000);
    for ((_, d), g) in extents.iter().zip(&got) {
        assert_eq!(d, g);
    }
    f.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn close_to_open_revalidate_and_locks_between_two_clients() {
    let dir = tempfile::tempdir().unwrap();
    let (_mds, addr) = start_mds(dir.path(), 10).await;
    let a = Client::connect(addr).await.unwrap();
    let b = Client::connect(addr).await.unwrap();
    // Close-to-open.
    let fa = a.create("/shared", 0o644).await.unwrap();
    fa.write_at(0, Bytes::from_static(b"first")).await.unwrap();
    fa.close().await.unwrap();
    let fb = b.open("/shared", &OpenOptions::read_write()).await.unwrap();
    assert_eq!(&fb.read_to_end().await.unwrap()[..], b"first");
    // Write + fsync without close, seen after revalidate.
    let fa = a.open("/shared", &OpenOptions::read_write()).await.unwrap();
    fa.write_at(0, Bytes::from_static(b"second")).await.unwrap();
    fa.fsync().await.unwrap();
    // b's cached block is stale until it revalidates.
    assert_eq!(&fb.read_at(0, 5).await.unwrap()[..], b"first");
    let m = fb.revalidate().await.unwrap();
    assert_eq!(m.size, 6);
    assert_eq!(&fb.read_to_end().await.unwrap()[..], b"second");
    // Locks conflict, and are released by unlock.
    fa.lock(LockKind::Write, 0, 100).await.unwrap();
    let e = fb.try_lock(LockKind::Write, 50, 10).await.unwrap_err();
    assert!(e.is(NfsStat4::NFS4ERR_DENIED), "{e}");
    fb.try_lock(LockKind::Write, 100, 10).await.unwrap();
    fa.unlock(0, 100).await.unwrap();
    fb.try_lock(LockKind::Read, 0, 10).await.unwrap();
    fa.close().await.unwrap();
    fb.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lock_of_a_client_that_vanished_is_released_by_lease_expiry() {
    let dir = tempfile::tempdir().unwrap();
    let (_mds, addr) = start_mds(dir.path(), 2).await;
    let a = Client::connect(addr).await.unwrap();
    let b = Client::connect(addr).await.unwrap();
    let fa = a.create("/l", 0o644).await.unwrap();
    fa.lock(LockKind::Write, 0, 0).await.unwrap();
    let fb = b.open("/l", &OpenOptions::read_write()).await.unwrap();
    assert!(fb
        .try_lock(LockKind::Write, 0, 0)
        .await
        .unwrap_err()
        .is(NfsStat4::NFS4ERR_DENIED));
    // Client a goes away without a word (its renewal task stops with it).
    drop(fa);
    drop(a);
    let t0 = std::time::Instant::now();
    tokio::time::timeout(Duration::from_secs(20), fb.lock(LockKind::Write, 0, 0))
        .await
        .expect("lock not released by lease expiry")
        .unwrap();
    assert!(
        t0.elapsed() >= Duration::from_millis(500),
        "released too early: {:?}",
        t0.elapsed()
    );
    fb.close().await.unwrap();
    let _ = ClientOptions::default();
}

//! The Rust client's test suite, run against any NFSv4.1 server: our `pnfs server`
//! (`client_pnfs.rs`) and nfs-ganesha (`client_ganesha.rs`). Each check takes the server's
//! address and the directory to work in (`/` on ours, the pseudo path on ganesha's).
#![allow(dead_code)]

use std::net::SocketAddr;
use std::time::Duration;

use bytes::Bytes;
use client::{Client, LockKind, OpenOptions, Stats};
use nfs_proto::nfs4::NfsStat4;
use sha2::{Digest, Sha256};

/// A runtime for one test (two workers, as the CI machine has two cores).
pub(crate) fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// The sizes `copies_in_and_out_keep_their_sha256` copies: empty, tiny, around page and
/// stripe boundaries, and a large file.
pub(crate) const SIZES: &[u64] = &[0, 1, 4095, (1 << 20) + 1, (17 << 20) + 3, 256 << 20];

/// Byte `i` of test file `seed` (cheap to recompute chunk by chunk, different per file).
fn byte(seed: u64, i: u64) -> u8 {
    let x = i
        .wrapping_mul(0x9e37_79b9)
        .wrapping_add(seed.wrapping_mul(0x85eb_ca6b))
        ^ (i >> 13);
    (x ^ (x >> 7)) as u8
}

/// `len` bytes of file `seed` from `offset`.
pub(crate) fn chunk(seed: u64, offset: u64, len: usize) -> Bytes {
    (0..len as u64)
        .map(|i| byte(seed, offset + i))
        .collect::<Vec<u8>>()
        .into()
}

/// Writes a `size`-byte file in 4 MiB chunks and closes it; returns its sha256.
pub(crate) async fn put(c: &Client, path: &str, seed: u64, size: u64) -> [u8; 32] {
    let f = c
        .create(path, 0o644)
        .await
        .unwrap_or_else(|e| panic!("create {path}: {e}"));
    let mut h = Sha256::new();
    let mut off = 0;
    while off < size {
        let n = (size - off).min(4 << 20) as usize;
        let data = chunk(seed, off, n);
        h.update(&data);
        f.write_at(off, data)
            .await
            .unwrap_or_else(|e| panic!("write {path}@{off}: {e}"));
        off += n as u64;
    }
    f.close()
        .await
        .unwrap_or_else(|e| panic!("close {path}: {e}"));
    h.finalize().into()
}

/// Reads a file back in 4 MiB chunks; returns (size read, sha256).
pub(crate) async fn get(c: &Client, path: &str) -> (u64, [u8; 32]) {
    let f = c
        .open(path, &OpenOptions::read())
        .await
        .unwrap_or_else(|e| panic!("open {path}: {e}"));
    let size = f.size();
    let mut h = Sha256::new();
    let mut off = 0;
    while off < size {
        let n = (size - off).min(4 << 20);
        let data = f
            .read_at(off, n)
            .await
            .unwrap_or_else(|e| panic!("read {path}@{off}: {e}"));
        assert_eq!(data.len() as u64, n, "{path}: short read at {off}");
        h.update(&data);
        off += n;
    }
    f.close().await.unwrap();
    (off, h.finalize().into())
}

/// Copies files of every size in [`SIZES`] in and out, checking sha256 and size; returns
/// the client's counters.
pub(crate) async fn copies_in_and_out_keep_their_sha256(addr: SocketAddr, dir: &str) -> Stats {
    let c = Client::connect(addr).await.unwrap();
    for (i, &size) in SIZES.iter().enumerate() {
        let path = format!("{dir}/copy-{size}");
        let t = std::time::Instant::now();
        let sent = put(&c, &path, i as u64, size).await;
        let (got_size, back) = get(&c, &path).await;
        eprintln!("{path}: {size} B out and back in {:?}", t.elapsed());
        assert_eq!(got_size, size, "{path}");
        assert_eq!(back, sent, "{path}: sha256 differs");
        assert_eq!(c.stat(&path).await.unwrap().size, size);
    }
    let stats = c.stats();
    c.shutdown().await;
    stats
}

/// List I/O: 1,000 extents written in one call and read back in one call.
pub(crate) async fn list_io_of_a_thousand_extents_round_trips(addr: SocketAddr, dir: &str) {
    let c = Client::connect(addr).await.unwrap();
    let path = format!("{dir}/list-io");
    let f = c.create(&path, 0o644).await.unwrap();
    // Spread over 20 MiB so the extents fall on every stripe of a striped file.
    let extents: Vec<(u64, Bytes)> = (0..1000u64)
        .map(|i| {
            let off = i * 20_971 + (i % 13) * 7;
            (off, chunk(i, off, 64 + (i as usize * 37) % 3000))
        })
        .collect();
    f.write_list(&extents).await.unwrap();
    f.close().await.unwrap();
    let g = c.open(&path, &OpenOptions::read()).await.unwrap();
    let want: Vec<(u64, u64)> = extents.iter().map(|(o, d)| (*o, d.len() as u64)).collect();
    let got = g.read_list(&want).await.unwrap();
    assert_eq!(got.len(), extents.len());
    for ((off, d), g) in extents.iter().zip(&got) {
        assert!(d == g, "extent at {off} differs");
    }
    g.close().await.unwrap();
    c.shutdown().await;
}

/// Two clients: close-to-open, fsync + revalidate without close, locks that conflict.
pub(crate) async fn two_clients_see_each_others_data_and_locks(addr: SocketAddr, dir: &str) {
    let a = Client::connect(addr).await.unwrap();
    let b = Client::connect(addr).await.unwrap();
    let path = format!("{dir}/shared");
    // A writes and closes; B opens and sees the data.
    let fa = a.create(&path, 0o644).await.unwrap();
    fa.write_at(0, chunk(1, 0, 300_000)).await.unwrap();
    fa.close().await.unwrap();
    let fb = b.open(&path, &OpenOptions::read_write()).await.unwrap();
    assert!(fb.read_to_end().await.unwrap() == chunk(1, 0, 300_000));
    // A writes and fsyncs without closing; B revalidates and sees it.
    let fa = a.open(&path, &OpenOptions::read_write()).await.unwrap();
    fa.write_at(100_000, chunk(2, 100_000, 500_000))
        .await
        .unwrap();
    fa.fsync().await.unwrap();
    let m = fb.revalidate().await.unwrap();
    assert_eq!(m.size, 600_000);
    let all = fb.read_to_end().await.unwrap();
    assert!(all.slice(..100_000) == chunk(1, 0, 100_000));
    assert!(all.slice(100_000..) == chunk(2, 100_000, 500_000));
    // Byte-range locks conflict between the two and are released by unlock.
    fa.lock(LockKind::Write, 0, 1000).await.unwrap();
    let e = fb.try_lock(LockKind::Read, 500, 10).await.unwrap_err();
    assert!(e.is(NfsStat4::NFS4ERR_DENIED), "{e}");
    fb.try_lock(LockKind::Write, 1000, 10).await.unwrap();
    fa.unlock(0, 1000).await.unwrap();
    fb.try_lock(LockKind::Read, 0, 10).await.unwrap();
    fa.close().await.unwrap();
    fb.close().await.unwrap();
    a.shutdown().await;
    b.shutdown().await;
}

/// A lock held by another process (`pnfs lock --hold`) is released when that process is
/// killed: the server expires its lease and this client's waiting lock is granted.
pub(crate) async fn a_lock_is_released_when_its_holders_process_dies(
    addr: SocketAddr,
    dir: &str,
    lease: Duration,
) {
    let c = Client::connect(addr).await.unwrap();
    let path = format!("{dir}/locked");
    c.create(&path, 0o644).await.unwrap().close().await.unwrap();
    let url = format!("nfs://{addr}{path}");
    let bin = interop_tests::peers::pnfs_binary().unwrap();
    let mut holder = std::process::Command::new(&bin)
        .args(["lock", &url, "--hold", "600"])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Wait for "acquired" on its stderr.
    let stderr = holder.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        use std::io::BufRead;
        for line in std::io::BufReader::new(stderr)
            .lines()
            .map_while(Result::ok)
        {
            if line.contains("acquired") {
                let _ = tx.send(());
            }
        }
    });
    rx.recv_timeout(Duration::from_secs(30))
        .expect("pnfs lock did not acquire the lock");
    let f = c.open(&path, &OpenOptions::read_write()).await.unwrap();
    let e = f.try_lock(LockKind::Write, 0, 0).await.unwrap_err();
    assert!(e.is(NfsStat4::NFS4ERR_DENIED), "{e}");
    holder.kill().unwrap();
    holder.wait().unwrap();
    let t = std::time::Instant::now();
    tokio::time::timeout(
        lease * 3 + Duration::from_secs(10),
        f.lock(LockKind::Write, 0, 0),
    )
    .await
    .expect("the dead holder's lock was never released")
    .unwrap();
    eprintln!(
        "lock granted {:?} after its holder died (lease {lease:?})",
        t.elapsed()
    );
    f.close().await.unwrap();
    c.shutdown().await;
}

//! Server-side copy through the client library ([`client::File::copy_to`]) against an MDS in
//! this process that keeps file data itself (no data servers): a small copy answered at once,
//! a 16 MiB copy the server runs in the background and ends with CB_OFFLOAD, the same with the
//! CB_OFFLOAD lost (OFFLOAD_STATUS tells), and a copy between two exports that the server
//! cannot do (the caller is told to copy through the client). In each, no byte of the copy
//! goes through the client: its READ and WRITE byte counters stay where they were.
//! (Striped files over data servers: `tests/server_copy.rs` of the `pnfs` crate.)

mod support;

use std::time::Duration;

use bytes::Bytes;
use client::{Client, ClientOptions, OpenOptions, Stats};
use mds::config::{Access, ClientRule, ExportConfig};

use support::{mds_config, start_mds, start_mds_with};

const MIB: usize = 1 << 20;

/// Bytes that do not repeat with any short period (xorshift64*), different per `seed`.
fn noise(len: usize, seed: u64) -> Bytes {
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    let mut v = Vec::with_capacity(len + 8);
    while v.len() < len {
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        v.extend_from_slice(&x.wrapping_mul(0x2545_f491_4f6c_dd1d).to_le_bytes());
    }
    v.truncate(len);
    v.into()
}

/// The bytes that went through the client (READ and WRITE, to the MDS or data servers).
fn moved(s: &Stats) -> u64 {
    s.mds_bytes_read + s.mds_bytes_written + s.ds_bytes_read + s.ds_bytes_written
}

/// Writes `data` to a new file `path` and closes it.
async fn put(c: &Client, path: &str, data: &Bytes) {
    let f = c.create(path, 0o644).await.unwrap();
    f.write_at(0, data.clone()).await.unwrap();
    f.close().await.unwrap();
}

/// The whole file, read by a client of its own (a fresh view of the server).
async fn fetch(addr: std::net::SocketAddr, path: &str) -> Bytes {
    let c = Client::connect(addr).await.unwrap();
    let f = c.open(path, &OpenOptions::read()).await.unwrap();
    let b = f.read_to_end().await.unwrap();
    f.close().await.unwrap();
    c.shutdown().await;
    b
}

/// Copies `src` to a new file `dst` on the server; returns the client's counters before and
/// after the copy, and what the copy said.
async fn server_copy(c: &Client, src: &str, dst: &str) -> (Stats, Stats, client::Copied) {
    let s = c.open(src, &OpenOptions::read()).await.unwrap();
    let d = c.create(dst, 0o644).await.unwrap();
    let before = c.stats();
    let copied = s.copy_to(0, &d, 0, s.size()).await.unwrap();
    let after = c.stats();
    assert_eq!(
        d.size(),
        copied.bytes,
        "the destination's size grew with the copy"
    );
    s.close().await.unwrap();
    d.close().await.unwrap();
    (before, after, copied)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_small_copy_is_answered_at_once_and_moves_nothing_through_the_client() {
    let dir = tempfile::tempdir().unwrap();
    let (_mds, addr) = start_mds(dir.path(), 10).await;
    let c = Client::connect(addr).await.unwrap();
    let data = noise(MIB + 123, 1);
    put(&c, "/src", &data).await;
    let (before, after, copied) = server_copy(&c, "/src", "/dst").await;
    assert_eq!(copied.bytes, data.len() as u64);
    assert!(!copied.asynchronous, "1 MiB is copied before the reply");
    assert_eq!(moved(&after), moved(&before), "{before:?} -> {after:?}");
    assert_eq!(after.server_copies - before.server_copies, 1);
    assert_eq!(
        after.server_copy_bytes - before.server_copy_bytes,
        data.len() as u64
    );
    assert_eq!(after.server_copies_async, 0);
    assert!(fetch(addr, "/dst").await == data, "the copy differs");
    c.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_large_copy_runs_in_the_background_and_ends_with_cb_offload() {
    let dir = tempfile::tempdir().unwrap();
    let (mds, addr) = start_mds(dir.path(), 10).await;
    // Polling late: the CB_OFFLOAD must be what ends the wait.
    let c = Client::connect_with(
        addr,
        ClientOptions {
            offload_poll: Duration::from_secs(60),
            ..ClientOptions::default()
        },
    )
    .await
    .unwrap();
    let data = noise(16 * MIB + 5, 2);
    put(&c, "/big", &data).await;
    let (before, after, copied) = server_copy(&c, "/big", "/big.copy").await;
    assert_eq!(copied.bytes, data.len() as u64);
    assert!(copied.asynchronous, "16 MiB is copied in the background");
    assert_eq!(moved(&after), moved(&before), "{before:?} -> {after:?}");
    assert_eq!(
        (
            after.server_copies_async,
            after.offload_callbacks,
            after.offload_polls
        ),
        (1, 1, 0),
        "{after:?}"
    );
    assert_eq!(mds.copies().counters().bytes, data.len() as u64);
    assert!(fetch(addr, "/big.copy").await == data, "the copy differs");
    c.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_cb_offload_offload_status_tells_when_the_copy_ended() {
    let dir = tempfile::tempdir().unwrap();
    let (_mds, addr) = start_mds(dir.path(), 10).await;
    let c = Client::connect_with(
        addr,
        ClientOptions {
            ignore_offload_callbacks: true,
            offload_poll: Duration::from_millis(200),
            ..ClientOptions::default()
        },
    )
    .await
    .unwrap();
    let data = noise(16 * MIB, 3);
    put(&c, "/big", &data).await;
    let (before, after, copied) = server_copy(&c, "/big", "/big.copy").await;
    assert_eq!(copied.bytes, data.len() as u64);
    assert!(copied.asynchronous);
    assert_eq!(moved(&after), moved(&before), "{before:?} -> {after:?}");
    assert_eq!(after.offload_callbacks, 0, "{after:?}");
    assert!(after.offload_polls >= 1, "{after:?}");
    assert!(fetch(addr, "/big.copy").await == data, "the copy differs");
    c.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_copy_sees_buffered_writes_and_replaces_cached_bytes_of_the_destination() {
    let dir = tempfile::tempdir().unwrap();
    let (_mds, addr) = start_mds(dir.path(), 10).await;
    let c = Client::connect(addr).await.unwrap();
    let old = noise(3 * MIB, 4);
    put(&c, "/dst", &old).await;
    // The source's bytes are still in the client's write buffer when the copy is asked.
    let s = c.create("/src", 0o644).await.unwrap();
    let new = noise(MIB, 5);
    s.write_at(0, new.clone()).await.unwrap();
    let d = c.open("/dst", &OpenOptions::read_write()).await.unwrap();
    assert!(d.read_to_end().await.unwrap() == old, "cached now");
    // Into the middle of the destination, and past its end.
    let copied = s.copy_to(0, &d, MIB as u64, 0).await.unwrap();
    assert_eq!(copied.bytes, new.len() as u64);
    let copied = s.copy_to(512 << 10, &d, 3 * MIB as u64, 0).await.unwrap();
    assert_eq!(copied.bytes, (MIB / 2) as u64);
    let mut want = old.to_vec();
    want[MIB..2 * MIB].copy_from_slice(&new);
    want.extend_from_slice(&new[MIB / 2..]);
    assert_eq!(d.size(), want.len() as u64);
    assert!(
        d.read_to_end().await.unwrap() == want,
        "stale cache after the copy"
    );
    s.close().await.unwrap();
    d.close().await.unwrap();
    assert!(fetch(addr, "/dst").await == want);
    c.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_copy_between_exports_is_refused_so_the_caller_copies_itself() {
    let dir = tempfile::tempdir().unwrap();
    let export = |id: u16, name: &str| ExportConfig {
        id,
        path: format!("/vol/{name}"),
        pseudo: format!("/{name}"),
        clients: vec![ClientRule {
            network: "127.0.0.0/8".into(),
            access: Access::Rw,
            root_squash: false,
        }],
        delegations: None,
    };
    let cfg = mds::Config {
        exports: vec![export(1, "a"), export(2, "b")],
        ..mds_config(dir.path(), 10)
    };
    let (_mds, addr) = start_mds_with(cfg).await;
    let c = Client::connect(addr).await.unwrap();
    let data = noise(64 << 10, 6);
    put(&c, "/a/f", &data).await;
    let s = c.open("/a/f", &OpenOptions::read()).await.unwrap();
    let d = c.create("/b/f", 0o644).await.unwrap();
    let e = s.copy_to(0, &d, 0, 0).await.unwrap_err();
    assert!(e.is_no_server_copy(), "{e}");
    assert!(e.to_string().contains("COPY: NFS4ERR_XDEV"), "{e}");
    assert_eq!(c.stats().server_copies, 0);
    // Two clients: no server-side copy between them.
    let other = Client::connect(addr).await.unwrap();
    let d2 = other.create("/a/g", 0o644).await.unwrap();
    let e = s.copy_to(0, &d2, 0, 0).await.unwrap_err();
    assert!(!e.is_no_server_copy() && e.nfs_status().is_none(), "{e}");
    d2.close().await.unwrap();
    other.shutdown().await;
    s.close().await.unwrap();
    d.close().await.unwrap();
    c.shutdown().await;
}

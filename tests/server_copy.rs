//! Server-side copy against `pnfs server` (an MDS and three data servers, files striped
//! over them, dense packing, local backend) as a child process: through the client library
//! (a copy answered at once and a 16 MiB one run in the background and ended by CB_OFFLOAD)
//! and through `pnfs cp` (COPY within one server, `--no-server-copy`, and the fall-back to a
//! copy through the client when the server refuses: two exports). A server-side copy moves
//! no byte through the client (its counters) and the data servers copy their own objects
//! (the MDS's counters); the contents match by sha256.

mod support;

use std::time::{Duration, Instant};

use bytes::Bytes;
use client::{Client, OpenOptions, Stats};
use sha2::{Digest, Sha256};
use support::*;

const MIB: usize = 1 << 20;

fn sha256(b: &[u8]) -> String {
    Sha256::digest(b)
        .iter()
        .map(|x| format!("{x:02x}"))
        .collect()
}

/// The bytes that went through the client (READ and WRITE, to the MDS or data servers).
fn moved(s: &Stats) -> u64 {
    s.mds_bytes_read + s.mds_bytes_written + s.ds_bytes_read + s.ds_bytes_written
}

/// The metric `name` summed over its samples, once it reached `at_least` (the data servers'
/// counts reach the MDS with its HEALTH polls, every 2 s), or after 10 s.
fn metric_at_least(s: &Server, name: &str, at_least: f64) -> f64 {
    let t0 = Instant::now();
    loop {
        let v = metric_sum(&s.metrics(), name, &[]);
        if v >= at_least || t0.elapsed() > Duration::from_secs(10) {
            return v;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn library_copies_of_striped_files_move_no_bytes_through_the_client() {
    let s = Server::start();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let small = Bytes::from(noise(MIB + 77, 11));
    let big = Bytes::from(noise(16 * MIB + 4321, 12));
    rt.block_on(async {
        let c = Client::connect(s.addr()).await.unwrap();
        assert!(c.uses_pnfs());
        for (path, data) in [("/small", &small), ("/big", &big)] {
            let f = c.create(path, 0o644).await.unwrap();
            f.write_at(0, data.clone()).await.unwrap();
            f.close().await.unwrap();
        }
        let before = c.stats();
        for (src, dst, asynchronous) in [
            ("/small", "/small.copy", false),
            ("/big", "/big.copy", true),
        ] {
            let f = c.open(src, &OpenOptions::read()).await.unwrap();
            let g = c.create(dst, 0o644).await.unwrap();
            let copied = f.copy_to(0, &g, 0, 0).await.unwrap();
            assert_eq!(copied.bytes, f.size(), "{src}");
            assert_eq!(copied.asynchronous, asynchronous, "{src}");
            f.close().await.unwrap();
            g.close().await.unwrap();
        }
        let after = c.stats();
        assert_eq!(moved(&after), moved(&before), "{before:?} -> {after:?}");
        assert_eq!(after.server_copies - before.server_copies, 2);
        assert_eq!(after.server_copies_async - before.server_copies_async, 1);
        assert_eq!(
            after.server_copy_bytes - before.server_copy_bytes,
            (small.len() + big.len()) as u64
        );
        assert_eq!(after.offload_callbacks, 1, "{after:?}");
        c.shutdown().await;
        // A client of its own reads the copies back through the layouts.
        let r = Client::connect(s.addr()).await.unwrap();
        for (path, data) in [("/small.copy", &small), ("/big.copy", &big)] {
            let f = r.open(path, &OpenOptions::read()).await.unwrap();
            let got = f.read_to_end().await.unwrap();
            assert_eq!(sha256(&got), sha256(data), "{path}");
            f.close().await.unwrap();
        }
        r.shutdown().await;
    });
    let total = (small.len() + big.len()) as f64;
    let page = s.metrics();
    assert_eq!(
        metric_sum(&page, "pnfs_copy_bytes_total", &[]),
        total,
        "{page}"
    );
    assert_eq!(
        metric_sum(&page, "pnfs_copy_streamed_bytes_total", &[]),
        0.0,
        "the MDS streamed bytes: {page}"
    );
    assert_eq!(
        metric_at_least(&s, "pnfs_ds_copy_bytes_total", total),
        total,
        "the data servers copied every byte in place"
    );
}

/// `pnfs cp -v` of `src` to `dst` with `extra` arguments: its stderr (the counters).
fn cp_verbose(src: &str, dst: &str, extra: &[&str]) -> String {
    let mut args = vec!["cp", "-v", "--no-progress", src, dst];
    args.extend_from_slice(extra);
    let out = pnfs(&args);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "pnfs {args:?}: {stderr}");
    stderr
}

#[test]
fn pnfs_cp_within_one_server_copies_on_the_server_unless_told_not_to() {
    let s = Server::start();
    let data = noise(16 * MIB + 99, 13);
    let local = s.local("big.bin");
    std::fs::write(&local, &data).unwrap();
    ok(&["put", path_str(&local), &s.url("/big")]);
    let copies = |page: &str| metric_sum(page, "pnfs_copy_bytes_total", &[]);
    let mds_io = |page: &str| {
        metric_sum(page, "pnfs_ops_total", &[("op", "OP_READ")])
            + metric_sum(page, "pnfs_ops_total", &[("op", "OP_WRITE")])
    };
    let page0 = s.metrics();

    // The server copies: nothing through the client, nothing through the MDS.
    let stderr = cp_verbose(&s.url("/big"), &s.url("/copy"), &[]);
    assert!(
        stderr.contains("data servers: wrote 0 B, read 0 B; MDS: wrote 0 B, read 0 B"),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!(
            "server-side copies 1 ({} B, 1 in the background)",
            data.len()
        )),
        "{stderr}"
    );
    let page1 = s.metrics();
    assert_eq!(copies(&page1) - copies(&page0), data.len() as f64);
    assert_eq!(mds_io(&page1), mds_io(&page0), "READ/WRITE through the MDS");
    let cat = pnfs(&["cat", &s.url("/copy")]);
    assert!(cat.status.success());
    assert_eq!(sha256(&cat.stdout), sha256(&data));

    // Forced through the client: every byte read and written by it, no COPY.
    let stderr = cp_verbose(&s.url("/big"), &s.url("/copy2"), &["--no-server-copy"]);
    assert!(
        stderr.contains(&format!(
            "data servers: wrote {n} B, read {n} B",
            n = data.len()
        )),
        "{stderr}"
    );
    assert!(stderr.contains("server-side copies 0 (0 B"), "{stderr}");
    assert_eq!(copies(&s.metrics()), copies(&page1), "a COPY was sent");
    let cat = pnfs(&["cat", &s.url("/copy2")]);
    assert_eq!(sha256(&cat.stdout), sha256(&data));

    // --sha256 after a server-side copy reads both back and prints the digest.
    let out = ok(&["cp", "--sha256", &s.url("/big"), &s.url("/copy3")]);
    assert_eq!(
        out.split_whitespace().next(),
        Some(sha256(&data).as_str()),
        "{out}"
    );
    assert_eq!(
        copies(&s.metrics()) - copies(&page1),
        data.len() as f64,
        "the --sha256 copy was a server-side one"
    );
}

#[test]
fn pnfs_cp_falls_back_to_the_client_when_the_server_cannot_copy() {
    // Two exports of one server: COPY between them is NFS4ERR_XDEV.
    let s = Server::start_with(
        "exports:\n  - { id: 1, path: /vol/a, pseudo: /a }\n  - { id: 2, path: /vol/b, pseudo: /b }\n",
    );
    let data = noise(3 * MIB + 5, 14);
    let local = s.local("f.bin");
    std::fs::write(&local, &data).unwrap();
    ok(&["put", path_str(&local), &s.url("/a/f")]);
    let stderr = cp_verbose(&s.url("/a/f"), &s.url("/b/f"), &[]);
    assert!(
        stderr.contains("no server-side copy") && stderr.contains("NFS4ERR_XDEV"),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!("data servers: wrote {} B", data.len())),
        "{stderr}"
    );
    let cat = pnfs(&["cat", &s.url("/b/f")]);
    assert!(cat.status.success());
    assert_eq!(sha256(&cat.stdout), sha256(&data));
}

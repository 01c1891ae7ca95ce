//! The Rust client against `pnfs server` as a process (an MDS and three data servers on
//! loopback): copies of 0 B to 256 MiB with sha256 checks whose data goes to the data
//! servers, list I/O, two clients, locks released by lease expiry, a `pnfs cp` that
//! survives an MDS killed with SIGKILL, and (with the data servers as processes of their own)
//! writes and reads that survive one data server killed with SIGKILL.
//!
//! Needs the `pnfs` binary: `$PNFS_BINARY`, or `cargo build --release --bin pnfs` first.

mod client_suite;

use std::time::{Duration, Instant};

use interop_tests::peers::{PnfsCluster, PnfsOptions};

fn cluster(opts: &PnfsOptions) -> PnfsCluster {
    PnfsCluster::start_with(opts).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn copies_of_every_size_go_through_the_data_servers_and_keep_their_sha256() {
    let c = cluster(&PnfsOptions::default());
    let before = c.counters().unwrap();
    let stats = client_suite::rt().block_on(client_suite::copies_in_and_out_keep_their_sha256(
        c.mds_addr(),
        "",
    ));
    let total: u64 = client_suite::SIZES.iter().sum();
    eprintln!("client: {stats:?}");
    assert_eq!(stats.ds_bytes_written, total, "{stats:?}");
    assert_eq!(stats.ds_bytes_read, total, "{stats:?}");
    assert_eq!(
        stats.mds_bytes_written + stats.mds_bytes_read,
        0,
        "{stats:?}"
    );
    // The servers agree: every data server served WRITEs, READs and COMMITs; the MDS no
    // READ or WRITE. (The data servers' counts reach the MDS with its HEALTH polls.)
    let delta = |n: &interop_tests::peers::Counters, ds: &str, op: &str| {
        n.sum(
            "pnfs_ds_ops_total",
            &[("ds", ds), ("op", op), ("status", "ok")],
        ) - before.sum(
            "pnfs_ds_ops_total",
            &[("ds", ds), ("op", op), ("status", "ok")],
        )
    };
    let t = Instant::now();
    let after = loop {
        let n = c.counters().unwrap();
        let all = ["1", "2", "3"].iter().all(|ds| {
            ["OP_WRITE", "OP_READ", "OP_COMMIT"]
                .iter()
                .all(|op| delta(&n, ds, op) > 0.0)
        });
        if all || t.elapsed() > Duration::from_secs(20) {
            break n;
        }
        std::thread::sleep(Duration::from_millis(250));
    };
    for ds in ["1", "2", "3"] {
        for op in ["OP_WRITE", "OP_READ", "OP_COMMIT"] {
            assert!(
                delta(&after, ds, op) > 0.0,
                "data server {ds} served no {op}"
            );
        }
    }
    for op in ["OP_WRITE", "OP_READ"] {
        assert_eq!(
            after.sum("pnfs_ops_total", &[("op", op)]),
            0.0,
            "the MDS served {op}"
        );
    }
    assert!(
        after.sum(
            "pnfs_ops_total",
            &[("op", "OP_LAYOUTCOMMIT"), ("status", "ok")]
        ) > 0.0
    );
}

#[test]
fn list_io_of_a_thousand_extents_round_trips_through_the_layout() {
    let c = cluster(&PnfsOptions::default());
    client_suite::rt().block_on(client_suite::list_io_of_a_thousand_extents_round_trips(
        c.mds_addr(),
        "",
    ));
    // The data servers' counts reach the MDS with its HEALTH polls: wait for them.
    let t = Instant::now();
    let (writes, compounds) = loop {
        let n = c.counters().unwrap();
        let writes = n.sum("pnfs_ds_ops_total", &[("op", "OP_WRITE"), ("status", "ok")]);
        let compounds = n.sum(
            "pnfs_ds_ops_total",
            &[("op", "OP_SEQUENCE"), ("status", "ok")],
        );
        if writes >= 1000.0 || t.elapsed() > Duration::from_secs(20) {
            break (writes, compounds);
        }
        std::thread::sleep(Duration::from_millis(250));
    };
    eprintln!("data servers: {writes} WRITEs in {compounds} COMPOUNDs (with COMMITs and renewals)");
    assert!(writes >= 1000.0, "{writes} WRITEs for 1,000 extents");
    // 1,000 extents over 3 data servers in batches of up to 12 WRITEs per COMPOUND, and
    // as many READs: about 170 COMPOUNDs; one per extent would be 2,000.
    assert!(
        compounds < 400.0,
        "{compounds} COMPOUNDs: list I/O is not batched"
    );
}

#[test]
fn two_clients_see_each_others_data_and_locks() {
    let c = cluster(&PnfsOptions::default());
    client_suite::rt().block_on(client_suite::two_clients_see_each_others_data_and_locks(
        c.mds_addr(),
        "",
    ));
}

#[test]
fn a_lock_is_released_when_its_holders_process_dies() {
    let c = cluster(&PnfsOptions::default());
    let lease = Duration::from_secs(u64::from(c.options().lease_time));
    client_suite::rt().block_on(
        client_suite::a_lock_is_released_when_its_holders_process_dies(c.mds_addr(), "", lease),
    );
}

/// `pnfs cp --sha256` of a 512 MiB file while the server is killed with SIGKILL and
/// restarted: the copy completes (the client reconnects, gets a new session, reclaims its
/// open in the grace period and re-sends what was not committed) and the digests match.
#[test]
fn a_copy_survives_the_mds_killed_with_sigkill() {
    let mut c = cluster(&PnfsOptions {
        grace_time: 5,
        ..PnfsOptions::default()
    });
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src.bin");
    {
        use std::io::Write;
        let mut f = std::fs::File::create(&src).unwrap();
        for i in 0..128u64 {
            f.write_all(&client_suite::chunk(9, i << 22, 4 << 20))
                .unwrap();
        }
    }
    let url = format!("nfs://{}/restart.bin", c.mds_addr());
    let bin = interop_tests::peers::pnfs_binary().unwrap();
    let t0 = Instant::now();
    let mut cp = std::process::Command::new(&bin)
        .args(["cp", "--sha256", "--no-progress", "-v"])
        .arg(&src)
        .arg(&url)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Kill the server once the copy is under way: data in the data servers' objects.
    let started = Instant::now();
    loop {
        let stored: u64 = (1..=3).map(|id| dir_bytes(&c.ds_data_dir(id))).sum();
        if stored >= 64 << 20 {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the copy never started writing"
        );
        if cp.try_wait().unwrap().is_some() {
            panic!("the copy ended before the server could be killed; make the file larger");
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    c.kill9();
    let killed_at = t0.elapsed();
    std::thread::sleep(Duration::from_millis(500));
    c.restart().unwrap_or_else(|e| panic!("{e}"));
    let out = cp.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let stdout = String::from_utf8_lossy(&out.stdout);
    eprintln!(
        "killed at {killed_at:?}; copy done after {:?}\n{stdout}\n{stderr}",
        t0.elapsed()
    );
    assert!(out.status.success(), "pnfs cp failed: {stderr}");
    assert!(stdout.contains("restart.bin"), "no digest line: {stdout}");
    // `-v` prints the client's counters: "... re-sent writes N, ... recoveries N".
    let count = |what: &str| {
        stderr
            .split(what)
            .nth(1)
            .and_then(|s| s.split(|ch: char| !ch.is_ascii_digit()).next())
            .and_then(|s| s.parse::<u64>().ok())
            .unwrap_or(0)
    };
    assert!(
        count("recoveries ") >= 1,
        "the client never recovered: {stderr}"
    );
    // The data servers died with the MDS (one process): what they acknowledged UNSTABLE and
    // had not committed was sent again after their write verifiers changed.
    assert!(
        count("re-sent writes ") >= 1,
        "no write was re-sent: {stderr}"
    );
}

/// Bytes in the files under `dir` (the data servers' object stores).
fn dir_bytes(dir: &std::path::Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .filter_map(Result::ok)
        .map(|e| match e.metadata() {
            Ok(m) if m.is_dir() => dir_bytes(&e.path()),
            Ok(m) => m.len(),
            Err(_) => 0,
        })
        .sum()
}

/// Another client truncates a file this client holds an RW layout of: the MDS recalls the
/// layout, the client returns it once its I/O is done (nothing fenced), gets a new one for
/// its next write, and both clients then read the same bytes.
#[test]
fn a_recalled_layout_is_returned_and_the_writer_goes_on() {
    use client::{Client, OpenOptions};
    let c = cluster(&PnfsOptions::default());
    client_suite::rt().block_on(async {
        let a = Client::connect(c.mds_addr()).await.unwrap();
        let b = Client::connect(c.mds_addr()).await.unwrap();
        let fa = a.create("/recall", 0o644).await.unwrap();
        fa.write_at(0, client_suite::chunk(3, 0, 4 << 20))
            .await
            .unwrap();
        fa.fsync().await.unwrap();
        b.truncate("/recall", 1 << 20).await.unwrap();
        let t = Instant::now();
        while a.stats().recalls == 0 {
            assert!(
                t.elapsed() < Duration::from_secs(15),
                "no CB_LAYOUTRECALL reached the client"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let second = client_suite::chunk(4, 2 << 20, 1 << 20);
        fa.write_at(2 << 20, second.clone()).await.unwrap();
        fa.close().await.unwrap();
        let stats = a.stats();
        assert!(
            stats.layouts >= 2,
            "no new layout after the recall: {stats:?}"
        );
        let fb = b.open("/recall", &OpenOptions::read()).await.unwrap();
        let all = fb.read_to_end().await.unwrap();
        assert_eq!(all.len(), 3 << 20);
        assert!(all.slice(..1 << 20) == client_suite::chunk(3, 0, 1 << 20));
        assert!(
            all[1 << 20..2 << 20].iter().all(|&b| b == 0),
            "the truncated range is not a hole"
        );
        assert!(all.slice(2 << 20..) == second);
        fb.close().await.unwrap();
    });
    let n = c.counters().unwrap();
    assert!(n.sum("pnfs_layout_recalls_total", &[]) >= 1.0);
    assert_eq!(
        n.sum("pnfs_layouts_fenced_total", &[]),
        0.0,
        "the client was fenced"
    );
}

/// With `RUST_LOG` set, the client's tracing goes to the test's output (shown for a failing
/// test, or with `--nocapture`): the client's side of a data server failure.
fn trace_client() {
    if std::env::var_os("RUST_LOG").is_some() {
        let _ = tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
            .with_test_writer()
            .try_init();
    }
}

/// A cluster whose data servers run as processes of their own, so that one can die alone.
fn split_cluster() -> std::sync::Arc<std::sync::Mutex<PnfsCluster>> {
    std::sync::Arc::new(std::sync::Mutex::new(cluster(&PnfsOptions {
        split: true,
        ..PnfsOptions::default()
    })))
}

/// Kills data server `id` with SIGKILL now and starts it again `after` later from a thread
/// of its own (while the client goes on); the thread's result says when it was back.
fn kill_and_restart_ds(
    c: &std::sync::Arc<std::sync::Mutex<PnfsCluster>>,
    id: u16,
    after: Duration,
) -> std::thread::JoinHandle<Result<Duration, String>> {
    let t0 = Instant::now();
    c.lock()
        .unwrap()
        .kill9_ds(id)
        .unwrap_or_else(|e| panic!("{e}"));
    eprintln!("data server {id} killed");
    let c = c.clone();
    std::thread::spawn(move || {
        std::thread::sleep(after);
        let mut c = c.lock().unwrap_or_else(|p| p.into_inner());
        c.restart_ds(id).map_err(|e| e.to_string())?;
        eprintln!("data server {id} back after {:?}", t0.elapsed());
        Ok(t0.elapsed())
    })
}

/// Waits until `client`'s data servers acknowledged `bytes` of writes: a full write-back
/// buffer is sent in the background (write-behind), so a test that kills a data server
/// holding UNSTABLE writes first waits for them to be there.
async fn sent_to_data_servers(client: &client::Client, bytes: u64) {
    let t = Instant::now();
    while client.stats().ds_bytes_written < bytes {
        assert!(
            t.elapsed() < Duration::from_secs(30),
            "{bytes} B not acknowledged by the data servers in 30 s: {:?}",
            client.stats()
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// One client writes 48 MiB in 1 MiB `write_at`s (its write-back buffer 4 MiB, so data
/// goes out as it is written) with an fsync every 8 MiB; at 20 MiB data server 2 is killed
/// with SIGKILL, between two fsyncs, so it holds UNSTABLE writes nobody committed, and is
/// restarted `down` later. The client must finish without an error, and the file must read
/// back whole with a new open. Returns the writer's stats.
fn write_while_a_data_server_dies(name: &str, down: Duration) -> client::Stats {
    use client::{Client, ClientOptions, OpenOptions};
    trace_client();
    const MIB: u64 = 1 << 20;
    let c = split_cluster();
    let addr = c.lock().unwrap().mds_addr();
    let t0 = Instant::now();
    let (stats, restarted) = client_suite::rt().block_on(async {
        let client = Client::connect_with(
            addr,
            ClientOptions {
                write_back: 4 << 20,
                ..ClientOptions::default()
            },
        )
        .await
        .unwrap();
        let f = client.create(name, 0o644).await.unwrap();
        let mut restart = None;
        for i in 0..48u64 {
            if i == 20 {
                // (The buffer goes out in the background: the kill must find it acknowledged.)
                sent_to_data_servers(&client, 20 * MIB).await;
                restart = Some(kill_and_restart_ds(&c, 2, down));
            }
            let t = Instant::now();
            f.write_at(i * MIB, client_suite::chunk(11, i * MIB, MIB as usize))
                .await
                .unwrap_or_else(|e| panic!("write at {i} MiB: {e}"));
            if (i + 1) % 8 == 0 {
                f.fsync()
                    .await
                    .unwrap_or_else(|e| panic!("fsync at {} MiB: {e}", i + 1));
            }
            if t.elapsed() > Duration::from_millis(500) {
                eprintln!(
                    "{:>6.2} s: write of MiB {i} (and its fsync) took {:?}; {:?}",
                    t0.elapsed().as_secs_f64(),
                    t.elapsed(),
                    client.stats()
                );
            }
        }
        f.close().await.unwrap_or_else(|e| panic!("close: {e}"));
        let restarted = restart
            .expect("the data server was killed")
            .join()
            .unwrap()
            .unwrap_or_else(|e| panic!("restarting data server 2: {e}"));
        if down > Duration::from_secs(5) {
            // The client asks for a layout again at most every 5 s after a data server
            // failed (and a LAYOUTGET refused while it was down starts the pause again):
            // the rest of the file may have gone through the MDS before that. Past the
            // pause, a write (the same bytes again) must take a layout.
            tokio::time::sleep(Duration::from_millis(5500)).await;
            let f = client.open(name, &OpenOptions::read_write()).await.unwrap();
            f.write_at(47 * MIB, client_suite::chunk(11, 47 * MIB, MIB as usize))
                .await
                .unwrap_or_else(|e| panic!("write after the data server is back: {e}"));
            f.close().await.unwrap_or_else(|e| panic!("close: {e}"));
        }
        let stats = client.stats();
        let f = client.open(name, &OpenOptions::read()).await.unwrap();
        assert_eq!(f.size(), 48 * MIB);
        for i in 0..48u64 {
            let got = f.read_at(i * MIB, MIB).await.unwrap();
            assert!(
                got == client_suite::chunk(11, i * MIB, MIB as usize),
                "MiB {i} of the file differs from what was written"
            );
        }
        f.close().await.unwrap();
        client.shutdown().await;
        (stats, restarted)
    });
    eprintln!(
        "written and read back in {:?} (data server 2 back after {restarted:?}): fallbacks {}, \
         rewrites {}, mds_bytes_written {}, ds_bytes_written {}; {stats:?}",
        t0.elapsed(),
        stats.fallbacks,
        stats.rewrites,
        stats.mds_bytes_written,
        stats.ds_bytes_written,
    );
    assert!(
        stats.ds_bytes_written + stats.mds_bytes_written >= 48 * MIB,
        "{stats:?}"
    );
    stats
}

/// Data server 2 dies mid-write and is back 2 s later, within the client's patience for a
/// data server (5 s): the client reconnects, gets a new session there, and its COMMIT sees
/// the new write verifier, so the writes the dead server acknowledged UNSTABLE are sent
/// again (RFC 8881 section 18.32.3). On a slow machine the server may stay away longer and
/// the client fall back to the MDS instead; either way something is re-sent and no data is
/// lost.
#[test]
fn a_data_server_killed_mid_write_costs_no_data() {
    let stats = write_while_a_data_server_dies("/ds-dies", Duration::from_secs(2));
    assert!(
        stats.rewrites + stats.fallbacks >= 1,
        "nothing was re-sent after the data server died: {stats:?}"
    );
}

/// Data server 2 dies mid-write and stays away 8 s, longer than the client waits for a data
/// server (5 s): the client returns its layout and writes through the MDS (which waits for
/// the data server with NFS4ERR_DELAY, as the file is striped over it), then takes a layout
/// again; no data is lost.
#[test]
fn a_data_server_down_for_long_sends_the_writes_through_the_mds() {
    let stats = write_while_a_data_server_dies("/ds-down", Duration::from_secs(8));
    assert!(
        stats.fallbacks >= 1,
        "the client never fell back to the MDS: {stats:?}"
    );
    assert!(stats.mds_bytes_written > 0, "{stats:?}");
    assert!(
        stats.layouts >= 2,
        "no layout after the fall-back: {stats:?}"
    );
}

/// A file written before is read back in 1 MiB `read_at`s while data server 2 is killed
/// (after 8 MiB) and restarted `down` later: every read completes, through the MDS or after
/// the data server returns, with the bytes that were written. Returns the reader's stats.
fn read_while_a_data_server_dies(name: &str, down: Duration) -> client::Stats {
    use client::{Client, OpenOptions};
    trace_client();
    const MIB: u64 = 1 << 20;
    let c = split_cluster();
    let addr = c.lock().unwrap().mds_addr();
    let t0 = Instant::now();
    let (stats, restarted) = client_suite::rt().block_on(async {
        let writer = Client::connect(addr).await.unwrap();
        client_suite::put(&writer, name, 12, 24 * MIB).await;
        writer.shutdown().await;
        let client = Client::connect(addr).await.unwrap();
        let f = client.open(name, &OpenOptions::read()).await.unwrap();
        assert_eq!(f.size(), 24 * MIB);
        let mut restart = None;
        for i in 0..24u64 {
            if i == 8 {
                restart = Some(kill_and_restart_ds(&c, 2, down));
            }
            let got = f
                .read_at(i * MIB, MIB)
                .await
                .unwrap_or_else(|e| panic!("read at {i} MiB: {e}"));
            assert!(
                got == client_suite::chunk(12, i * MIB, MIB as usize),
                "MiB {i} of the file differs from what was written"
            );
        }
        f.close().await.unwrap();
        let restarted = restart
            .expect("the data server was killed")
            .join()
            .unwrap()
            .unwrap_or_else(|e| panic!("restarting data server 2: {e}"));
        let stats = client.stats();
        client.shutdown().await;
        (stats, restarted)
    });
    eprintln!(
        "read in {:?} (data server 2 back after {restarted:?}): fallbacks {}, mds_bytes_read \
         {}, ds_bytes_read {}; {stats:?}",
        t0.elapsed(),
        stats.fallbacks,
        stats.mds_bytes_read,
        stats.ds_bytes_read,
    );
    assert!(
        stats.ds_bytes_read + stats.mds_bytes_read >= 24 * MIB,
        "{stats:?}"
    );
    stats
}

/// Data server 2 dies mid-read and is back 2 s later: the reads wait for it (or go through
/// the MDS) and return the right bytes.
#[test]
fn a_data_server_killed_mid_read_costs_no_read() {
    read_while_a_data_server_dies("/ds-dies-reading", Duration::from_secs(2));
}

/// Data server 2 dies mid-read and stays away 8 s: the client reads through the MDS after
/// its 5 s of patience, and the bytes are right.
#[test]
fn a_data_server_down_for_long_sends_the_reads_through_the_mds() {
    let stats = read_while_a_data_server_dies("/ds-down-reading", Duration::from_secs(8));
    assert!(
        stats.fallbacks >= 1,
        "the client never fell back to the MDS: {stats:?}"
    );
    assert!(stats.mds_bytes_read > 0, "{stats:?}");
}

/// A file is written (8 MiB, UNSTABLE through the layout, not committed), data server 2 is
/// killed and back 2 s later, and the first 4 MiB are written again with other bytes. The
/// restart changed data server 2's write verifier, so the first writes it acknowledged must
/// be sent again, but only where nothing newer was written over them: the file reads back
/// with the new bytes in the first 4 MiB and the old ones after.
#[test]
fn a_data_server_restart_does_not_bring_back_overwritten_data() {
    use client::{Client, ClientOptions, OpenOptions};
    trace_client();
    const MIB: u64 = 1 << 20;
    let c = split_cluster();
    let addr = c.lock().unwrap().mds_addr();
    let stats = client_suite::rt().block_on(async {
        let client = Client::connect_with(
            addr,
            ClientOptions {
                write_back: 4 << 20,
                ..ClientOptions::default()
            },
        )
        .await
        .unwrap();
        let f = client.create("/overwritten", 0o644).await.unwrap();
        for i in 0..8u64 {
            f.write_at(i * MIB, client_suite::chunk(21, i * MIB, MIB as usize))
                .await
                .unwrap();
        }
        sent_to_data_servers(&client, 8 * MIB).await;
        let restart = kill_and_restart_ds(&c, 2, Duration::from_secs(2));
        for i in 0..4u64 {
            f.write_at(i * MIB, client_suite::chunk(22, i * MIB, MIB as usize))
                .await
                .unwrap_or_else(|e| panic!("write at {i} MiB: {e}"));
        }
        f.close().await.unwrap_or_else(|e| panic!("close: {e}"));
        restart
            .join()
            .unwrap()
            .unwrap_or_else(|e| panic!("restarting data server 2: {e}"));
        let stats = client.stats();
        let reader = Client::connect(addr).await.unwrap();
        let f = reader
            .open("/overwritten", &OpenOptions::read())
            .await
            .unwrap();
        assert_eq!(f.size(), 8 * MIB);
        for i in 0..8u64 {
            let seed = if i < 4 { 22 } else { 21 };
            let got = f.read_at(i * MIB, MIB).await.unwrap();
            assert!(
                got == client_suite::chunk(seed, i * MIB, MIB as usize),
                "MiB {i} does not hold the last bytes written there ({stats:?})"
            );
        }
        f.close().await.unwrap();
        stats
    });
    eprintln!("{stats:?}");
    // Data server 2 held some of 4..8 MiB unstable when it died: re-sent after its new
    // verifier (or, on a machine slow enough that it stayed away past the client's 5 s,
    // through the MDS).
    assert!(
        stats.rewrites + stats.fallbacks >= 1,
        "nothing was re-sent: {stats:?}"
    );
}

/// List I/O through the MDS (a client without layouts) of small extents while data server 2
/// is down for 2 s: the MDS answers NFS4ERR_DELAY for the extents it cannot reach; the
/// client re-sends those (only: the WRITEs before them in the same COMPOUND are done) until
/// the data server is back, and every extent reads back.
#[test]
fn list_io_through_the_mds_waits_out_a_data_server_restart() {
    use bytes::Bytes;
    use client::{Client, ClientOptions, OpenOptions};
    trace_client();
    let c = split_cluster();
    let addr = c.lock().unwrap().mds_addr();
    let no_layouts = ClientOptions {
        pnfs: false,
        ..ClientOptions::default()
    };
    client_suite::rt().block_on(async {
        let client = Client::connect_with(addr, no_layouts).await.unwrap();
        let f = client.create("/list-delay", 0o644).await.unwrap();
        // Extents on every stripe (1 MiB units over 3 data servers), many per COMPOUND.
        let extents: Vec<(u64, Bytes)> = (0..300u64)
            .map(|i| {
                let off = i * 40_000;
                (
                    off,
                    client_suite::chunk(i, off, 1000 + (i as usize % 9) * 100),
                )
            })
            .collect();
        f.write_list(&extents[..100]).await.unwrap();
        let restart = kill_and_restart_ds(&c, 2, Duration::from_secs(2));
        f.write_list(&extents[100..]).await.unwrap();
        f.close().await.unwrap();
        restart.join().unwrap().unwrap();
        let g = client
            .open("/list-delay", &OpenOptions::read())
            .await
            .unwrap();
        let want: Vec<(u64, u64)> = extents.iter().map(|(o, d)| (*o, d.len() as u64)).collect();
        let got = g.read_list(&want).await.unwrap();
        for ((off, d), g) in extents.iter().zip(&got) {
            assert!(d == g, "extent at {off} differs");
        }
        g.close().await.unwrap();
        let stats = client.stats();
        assert_eq!(stats.ds_bytes_written, 0, "{stats:?}");
    });
}

/// A client holding a lock when the MDS is killed with SIGKILL reclaims its open and its
/// lock in the restarted server's grace period: another client is still refused the range
/// afterwards, and gets it once the holder unlocks.
#[test]
fn opens_and_locks_are_reclaimed_after_an_mds_restart() {
    use client::{Client, LockKind, OpenOptions};
    use nfs_proto::nfs4::NfsStat4;
    trace_client();
    let mut c = cluster(&PnfsOptions {
        grace_time: 5,
        ..PnfsOptions::default()
    });
    let addr = c.mds_addr();
    let rt = client_suite::rt();
    let (a, fa) = rt.block_on(async {
        let a = Client::connect(addr).await.unwrap();
        let fa = a.create("/relock", 0o644).await.unwrap();
        fa.write_at(0, client_suite::chunk(5, 0, 10_000))
            .await
            .unwrap();
        fa.fsync().await.unwrap();
        fa.lock(LockKind::Write, 0, 0).await.unwrap();
        (a, fa)
    });
    c.kill9();
    c.restart().unwrap_or_else(|e| panic!("{e}"));
    rt.block_on(async {
        // The holder's next request finds its session gone and recovers.
        fa.write_at(10_000, client_suite::chunk(5, 10_000, 10_000))
            .await
            .unwrap();
        fa.fsync().await.unwrap();
        assert!(a.stats().recoveries >= 1, "{:?}", a.stats());
        let b = Client::connect(addr).await.unwrap();
        let fb = b.open("/relock", &OpenOptions::read_write()).await.unwrap();
        let e = fb.try_lock(LockKind::Write, 0, 0).await.unwrap_err();
        assert!(
            e.is(NfsStat4::NFS4ERR_DENIED),
            "the lock was not reclaimed: {e}"
        );
        fa.unlock(0, 0).await.unwrap();
        fb.try_lock(LockKind::Write, 0, 0).await.unwrap();
        assert!(fb.read_to_end().await.unwrap() == client_suite::chunk(5, 0, 20_000));
        fb.close().await.unwrap();
        fa.close().await.unwrap();
    });
    drop(rt);
}

/// The sha256 of a local file, by `sha256sum`.
fn sha256_of(path: &std::path::Path) -> String {
    let out = std::process::Command::new("sha256sum")
        .arg(path)
        .output()
        .expect("sha256sum");
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .next()
        .unwrap_or_default()
        .to_string()
}

/// The object files of `dir` (a data server's store) of exactly `size` bytes.
fn objects_of_size(dir: &std::path::Path, size: u64) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let Ok(m) = e.metadata() else { continue };
            if m.is_dir() {
                stack.push(e.path());
            } else if m.len() == size {
                out.push(e.path());
            }
        }
    }
    out
}

/// Issue 23 with the Rust client: flex files layouts with 2 mirrors over three data servers
/// as processes of their own. `pnfs cp --sha256` of a 128 MiB file writes both copies through
/// the layout; once 32 MiB are on a data server it is killed with SIGKILL and left down. The
/// copy must finish with the source's digest (the client reports the error in its
/// LAYOUTRETURN and writes through the MDS, which marks the dead copy stale), and a second
/// `pnfs cp --sha256` reads the file back whole while the data server is still down (from the
/// other copy). Started again, the data server gets its copy re-silvered by the MDS until
/// both objects have the file's sha256.
#[test]
fn a_mirrored_file_survives_a_data_server_killed_and_left_down() {
    let mut c = cluster(&PnfsOptions {
        split: true,
        mirrors: Some(2),
        ..PnfsOptions::default()
    });
    const SIZE: u64 = 128 << 20;
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src.bin");
    {
        use std::io::Write;
        let mut f = std::fs::File::create(&src).unwrap();
        for i in 0..(SIZE >> 22) {
            f.write_all(&client_suite::chunk(31, i << 22, 4 << 20))
                .unwrap();
        }
    }
    let want = sha256_of(&src);
    let url = format!("nfs://{}/mirrored.bin", c.mds_addr());
    let bin = interop_tests::peers::pnfs_binary().unwrap();
    let t0 = Instant::now();
    let cp = std::process::Command::new(&bin)
        .args(["cp", "--sha256", "--no-progress", "-v"])
        .arg(&src)
        .arg(&url)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The victim: a data server that already holds 32 MiB of a copy.
    let mut cp = cp;
    let victim = loop {
        if let Some(id) = (1..=3).find(|&id| dir_bytes(&c.ds_data_dir(id)) >= 32 << 20) {
            break id;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "the copy never started writing"
        );
        if cp.try_wait().unwrap().is_some() {
            panic!("the copy ended before a data server could be killed; make the file larger");
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    c.kill9_ds(victim).unwrap_or_else(|e| panic!("{e}"));
    let killed_at = t0.elapsed();
    let out = cp.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let stdout = String::from_utf8_lossy(&out.stdout);
    eprintln!(
        "data server {victim} killed at {killed_at:?}; copy done after {:?}\n{stdout}\n{stderr}",
        t0.elapsed()
    );
    assert!(out.status.success(), "pnfs cp failed: {stderr}");
    assert!(
        stdout.contains(&want),
        "the copy's digest is not the source's: {stdout}"
    );
    // Read back while the data server is still down: from the other copy.
    let back = dir.path().join("back.bin");
    let out = std::process::Command::new(&bin)
        .args(["cp", "--sha256", "--no-progress", "-v"])
        .arg(&url)
        .arg(&back)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "reading back failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains(&want), "read back: {stdout}");
    assert_eq!(sha256_of(&back), want);
    let n = c.counters().unwrap();
    let marked = n.sum("pnfs_mirror_copies_marked_stale_total", &[]);
    let reported = n.sum("pnfs_layout_io_errors_total", &[]);
    eprintln!("copies marked stale {marked}, errors reported {reported}");
    assert!(marked >= 1.0, "no copy was marked stale");
    assert!(reported >= 1.0, "the client reported no data server error");
    // The data server comes back: its copy is re-silvered.
    c.restart_ds(victim).unwrap_or_else(|e| panic!("{e}"));
    let t1 = Instant::now();
    loop {
        let n = c.counters().unwrap();
        if n.sum("pnfs_mirror_stale_copies", &[]) == 0.0 {
            eprintln!(
                "re-silvered in {:?}: {} B copied",
                t1.elapsed(),
                n.sum("pnfs_mirror_resilver_bytes_total", &[])
            );
            break;
        }
        assert!(
            t1.elapsed() < Duration::from_secs(120),
            "not re-silvered in 120 s"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let copies: Vec<_> = (1..=3)
        .flat_map(|id| objects_of_size(&c.ds_data_dir(id), SIZE))
        .collect();
    assert_eq!(copies.len(), 2, "{copies:?}");
    for p in &copies {
        assert_eq!(sha256_of(p), want, "{}", p.display());
    }
}

//! Our `pnfs server` as a process for the Rust client's tests (`interop_tests::peers`): it
//! starts on loopback ports of its own with three data servers, answers NFSv4.1, serves its
//! counters page, and survives SIGKILL and a restart over the same data directory.
//!
//! Needs the `pnfs` binary: `$PNFS_BINARY`, or `cargo build --release --bin pnfs` first.

mod support;

use std::time::{Duration, Instant};

use interop_tests::peers::{nfs_null, PnfsCluster, PnfsOptions};
use nfs_proto::nfs4::{NfsStat4, EXCHGID4_FLAG_USE_PNFS_MDS};
use support::block_on;

/// The MDS answers EXCHANGE_ID (with the pNFS MDS role: layouts are on), the three data
/// servers answer NULL on their own ports, and the counters page parses, counts the session
/// set-up and shows all three data servers up.
#[test]
fn pnfs_server_answers_nfsv41_and_its_counters_page_parses() {
    let t = Instant::now();
    let cluster = PnfsCluster::start().unwrap_or_else(|e| panic!("{e}"));
    eprintln!(
        "pnfs server: MDS {} ready after {:?}",
        cluster.mds_addr(),
        cluster.startup_time()
    );
    let ds = cluster.ds_addrs();
    assert_eq!(ds.len(), 3);
    for a in &ds {
        nfs_null(*a, Duration::from_secs(5))
            .unwrap_or_else(|e| panic!("data server {a}: {e}\n{}", cluster.log_tail()));
    }
    block_on(async {
        let mut c = support::client(cluster.mds_addr(), "pnfs-process-probe").await;
        assert_ne!(
            c.exchange.eir_flags & EXCHGID4_FLAG_USE_PNFS_MDS,
            0,
            "no pNFS MDS role: {:#x}",
            c.exchange.eir_flags
        );
        let root = c.lookup_path("/").await;
        c.create_and_write(&root, "probe", b"through the MDS").await;
    });
    let counters = cluster
        .counters()
        .unwrap_or_else(|e| panic!("{e}\n{}", cluster.log_tail()));
    assert!(
        counters
            .samples()
            .iter()
            .any(|s| s.name == "pnfs_ops_total"),
        "no pnfs_ops_total lines: {:#?}",
        counters.to_map()
    );
    for op in ["OP_EXCHANGE_ID", "OP_CREATE_SESSION", "OP_RECLAIM_COMPLETE"] {
        assert_eq!(
            counters.get("pnfs_ops_total", &[("op", op), ("status", "ok")]),
            Some(1.0),
            "{op}: {:#?}",
            counters.to_map()
        );
    }
    assert!(counters.sum("pnfs_ops_total", &[("op", "OP_WRITE"), ("status", "ok")]) >= 1.0);
    assert_eq!(
        counters.get("pnfs_data_servers", &[("state", "up")]),
        Some(3.0)
    );
    for id in ["1", "2", "3"] {
        assert_eq!(
            counters.get("pnfs_data_server_up", &[("ds", id)]),
            Some(1.0)
        );
    }
    // No grace configured by default: a test's first OPEN need not wait.
    assert_eq!(counters.get("pnfs_grace", &[]), Some(0.0));
    eprintln!("whole test: {:?}", t.elapsed());
}

/// SIGKILL leaves the ports closed; a restart over the same data directory and ports serves
/// again, within the configured grace period, with the file created before the kill.
#[test]
fn pnfs_server_killed_with_sigkill_restarts_over_its_data_and_answers_again() {
    let t = Instant::now();
    let mut cluster = PnfsCluster::start_with(&PnfsOptions {
        grace_time: 5,
        ..PnfsOptions::default()
    })
    .unwrap_or_else(|e| panic!("{e}"));
    let first = cluster.startup_time();
    let (mds, data) = (cluster.mds_addr(), cluster.data_dir().to_owned());
    // The first start is in grace too: wait it out before creating a file.
    let deadline = Instant::now() + Duration::from_secs(15);
    while cluster.counters().unwrap().get("pnfs_grace", &[]) != Some(0.0) {
        assert!(Instant::now() < deadline, "grace never ended");
        std::thread::sleep(Duration::from_millis(200));
    }
    block_on(async {
        let mut c = support::client(mds, "pnfs-process-before").await;
        let root = c.lookup_path("/").await;
        c.create_and_write(&root, "before-kill", b"durable").await;
    });

    let pid = cluster.pid().expect("running");
    let killed = Instant::now();
    cluster.kill9();
    assert!(!cluster.is_running());
    assert!(
        !std::path::Path::new(&format!("/proc/{pid}")).exists(),
        "process {pid} still exists after kill9"
    );
    assert!(
        nfs_null(mds, Duration::from_secs(1)).is_err(),
        "MDS answers after SIGKILL"
    );
    assert!(cluster.counters().is_err(), "counters served after SIGKILL");

    cluster.restart().unwrap_or_else(|e| panic!("restart: {e}"));
    let restarted = killed.elapsed();
    assert_eq!(
        (cluster.mds_addr(), cluster.data_dir()),
        (mds, data.as_path())
    );
    assert_ne!(cluster.pid(), Some(pid));
    let counters = cluster.counters().unwrap();
    assert_eq!(
        counters.get("pnfs_grace", &[]),
        Some(1.0),
        "restarted with grace_time 5 but not in grace"
    );
    assert_eq!(
        counters.get("pnfs_data_servers", &[("state", "up")]),
        Some(3.0)
    );
    block_on(async {
        let mut c = support::client(mds, "pnfs-process-after").await;
        let root = c.lookup_path("/").await;
        assert_eq!(
            c.lookup_status(&root, "before-kill").await,
            NfsStat4::NFS4_OK
        );
    });
    eprintln!(
        "first start {first:?}; kill9 to serving again {restarted:?} (restart {:?}); whole test {:?}",
        cluster.startup_time(),
        t.elapsed()
    );
}

/// In split mode the MDS and each data server are processes of their own with logs of their
/// own: one data server killed with SIGKILL stops answering while the MDS and the others go
/// on, and the MDS counts it down; restarted, it is back on the same port and counted up;
/// the whole cluster restarts too. A cluster in one process refuses to kill one data
/// server.
#[test]
fn a_split_cluster_loses_and_regains_one_data_server_alone() {
    let t = Instant::now();
    let mut cluster = PnfsCluster::start_with(&PnfsOptions {
        split: true,
        ..PnfsOptions::default()
    })
    .unwrap_or_else(|e| panic!("{e}"));
    let started = t.elapsed();
    let ds = cluster.ds_addrs();
    let pids: Vec<u32> = (1..=3)
        .map(|id| cluster.ds_pid(id).expect("running"))
        .collect();
    let mds_pid = cluster.pid().expect("running");
    assert!(!pids.contains(&mds_pid), "a data server in the MDS process");
    for id in 1..=3 {
        let log = std::fs::read_to_string(cluster.ds_log_file(id).unwrap()).unwrap();
        assert!(log.contains("serving NFS"), "data server {id}'s log: {log}");
    }
    let up = |c: &PnfsCluster, id: &str| {
        c.counters()
            .unwrap()
            .get("pnfs_data_server_up", &[("ds", id)])
    };

    cluster.kill9_ds(2).unwrap();
    assert!(!cluster.ds_is_running(2));
    assert!(cluster.ds_is_running(1) && cluster.ds_is_running(3));
    assert!(nfs_null(ds[1], Duration::from_secs(1)).is_err());
    for a in [cluster.mds_addr(), ds[0], ds[2]] {
        nfs_null(a, Duration::from_secs(2)).unwrap_or_else(|e| panic!("{a}: {e}"));
    }
    let deadline = Instant::now() + Duration::from_secs(15);
    while up(&cluster, "2") != Some(0.0) {
        assert!(
            Instant::now() < deadline,
            "the MDS never saw data server 2 die"
        );
        std::thread::sleep(Duration::from_millis(100));
    }

    let t = Instant::now();
    cluster.restart_ds(2).unwrap_or_else(|e| panic!("{e}"));
    let back = t.elapsed();
    assert_eq!(up(&cluster, "2"), Some(1.0));
    nfs_null(ds[1], Duration::from_secs(2)).unwrap();
    assert_ne!(cluster.ds_pid(2), Some(pids[1]));
    assert_eq!(cluster.pid(), Some(mds_pid), "the MDS was restarted too");
    assert!(cluster.is_running());

    cluster.restart().unwrap_or_else(|e| panic!("{e}"));
    assert!(cluster.is_running());
    assert_ne!(cluster.pid(), Some(mds_pid));
    assert!(
        cluster.log_tail().contains("ds3.log"),
        "{}",
        cluster.log_tail()
    );
    eprintln!("split cluster up in {started:?}; data server 2 back in {back:?}");

    let mut whole = PnfsCluster::start().unwrap_or_else(|e| panic!("{e}"));
    assert!(whole.kill9_ds(2).is_err());
    assert!(whole.ds_log_file(2).is_none());
}

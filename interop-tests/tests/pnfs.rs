//! Our server under the stock Linux client: the same workload as the knfsd control, and the
//! restart scenario (kill -9 under a write workload, restart, reclaim).

use std::path::{Path, PathBuf};

use interop_tests::guest::{assert_scenario_passes, Scenario, Server};

/// The `pnfs` binary to copy into the guest: `$PNFS_BINARY` (scripts/test.sh builds the
/// release binary and points here), else release if built, else debug.
fn pnfs_binary() -> PathBuf {
    if let Some(p) = std::env::var_os("PNFS_BINARY") {
        return PathBuf::from(p);
    }
    let target = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target");
    ["release", "debug"]
        .iter()
        .map(|profile| target.join(profile).join("pnfs"))
        .find(|p| p.exists())
        .expect("no target/release/pnfs or target/debug/pnfs: run `cargo build --release` first")
}

fn pnfs_scenario(name: &str, mount_options: &str) -> Scenario {
    Scenario {
        name: name.into(),
        server: Server::Pnfs {
            binary: pnfs_binary(),
            // The all-in-one server with its defaults, serving ./pnfs-data (in /srv).
            args: "server".into(),
            config: None,
            export: "/".into(),
        },
        mount_options: mount_options.into(),
        only: None,
        workload: "workload.sh".into(),
        extra_env: Vec::new(),
    }
}

/// The suite's longest checks (a bash regex for [`Scenario::skipping`]): a scenario that
/// shares its code paths with another leaves them to that one.
const LONG_CHECKS: &str = "^(fio_randwrite_verify_64MiB|tar_extract_diff|many_files_2000)$";

/// The restart scenario's server: short lease and grace (seconds), so that the client notices
/// the restart and the grace period ends within the scenario's few minutes under emulation.
///
/// Layouts are on, as in the default configuration: the clients write through layouts when
/// the MDS (and with it the in-process data servers) is killed. The restarted MDS takes the
/// LAYOUTCOMMITs the clients resend under the old boot's layout stateids, and settles the
/// sizes of files written through layouts with the data servers (`mds/src/settle.rs`); the
/// log shows both.
const RESTART_CONFIG: &str = "\
data_dir: /srv/pnfs-data
lease_time: 15
grace_time: 15
cluster:
  layouts: true
";

/// Issue 5's "pnfs-files" scenario: the all-in-one server (MDS and three data servers in the
/// guest) with vers=4.1. First issue 7's delegation checks (`deleg_recall_writer_open`,
/// `deleg_recall_writer_closed` in `workload.sh`): client 1 holds a write delegation, client
/// 2's OPEN gets NFS4ERR_DELAY while the MDS recalls it, client 1 returns it and client 2
/// reads client 1's bytes; the server's counters move by granted 1, recalled 1, returned 1,
/// revoked 0. Then the whole suite (with delegations on, the default), then the pNFS checks of
/// `workload.sh`: a 96 MiB file
/// leaves 32 MiB in each data server's objects and reads back intact on both clients (client 2
/// through the veth pair), both clients' mountstats show GETDEVICEINFO (and client 1's
/// LAYOUTCOMMIT), and the server's counters show every data server serving READs and WRITEs
/// while the MDS's own READ/WRITE stay at most 1% of theirs (mountstats cannot tell: the
/// Linux file layout driver counts data server I/O in the MDS mount's per-op statistics).
/// Then issue 21's RPC-over-RDMA run in the same boot ([`Scenario::with_rdma`] with
/// `RDMA_PNFS=1`): both clients mount `pnfs server` again with `proto=rdma,port=20049`
/// (soft-RoCE), show `xprt: rdma`, and pass the file checks once more (`rdma_*`), the layout
/// I/O going to the data servers' RDMA listeners.
#[test]
fn pnfs_files_v41_workload_suite() {
    let mut s = pnfs_scenario("pnfs-files", "vers=4.1").with_rdma();
    s.extra_env.push(("PNFS_CHECKS".into(), "1".into()));
    s.extra_env.push(("RDMA_PNFS".into(), "1".into()));
    // 500 creates over RDMA, not 2,000: each of the soft-RoCE client's unsent calls (see
    // `rdma::server::Nudge`) costs a quarter of a second, and CI's time is short.
    s.extra_env.push(("RDMA_MANY_FILES".into(), "500".into()));
    assert_scenario_passes(&s);
}

/// The suite with vers=4.2, the delegation checks included, with the server's data directory
/// (the MDS's and the three data servers' objects) on an XFS file system with reflink
/// (`SERVER_FS=xfs`, `guest/servers.sh`): issue 18's checks on striped files (O_DIRECT to the
/// end of file, fallocate and punch hole, SEEK_DATA/SEEK_HOLE, copy_file_range moving the
/// bytes between the data servers, `cp --reflink=always`), as knfsd-v4.2 runs them on XFS.
///
/// The three long checks of the suite (`fio_randwrite_verify_64MiB`, `tar_extract_diff`,
/// `many_files_2000`: 7 minutes of this scenario on a slow CI machine) are left out: the same
/// server with the same layouts runs them in `pnfs-files`, and vers=4.2 runs them through
/// flex files mirrors in `pnfs-flex-mirrors`; nothing in them differs between 4.1 and 4.2
/// the version the client speaks (4.2's operations have checks of their own here).
#[test]
fn pnfs_v42_workload_suite() {
    let mut s = pnfs_scenario("pnfs-v4.2", "vers=4.2").skipping(
        LONG_CHECKS,
        "run in pnfs-files (the same server and layouts, vers=4.1) and pnfs-flex-mirrors (vers=4.2)",
    );
    s.extra_env.push(("SERVER_FS".into(), "xfs".into()));
    assert_scenario_passes(&s);
}

/// Issue 4's restart check: `pnfs server` is killed with SIGKILL while the stock client writes
/// files with fsync, holds opens and an fcntl lock, and is started again over the same data
/// directory. The writers must finish without errors, every fsynced state must read back
/// intact after a remount, the server must log open and lock reclaims, and the lock held
/// across the restart must still block another client until it is released (guest/restart.sh).
#[test]
fn pnfs_v41_restart_after_kill9() {
    let mut s = pnfs_scenario("pnfs-v4.1-restart", "vers=4.1");
    s.server = Server::Pnfs {
        binary: pnfs_binary(),
        args: "server --config /scenario/pnfs.yaml".into(),
        config: Some(RESTART_CONFIG.into()),
        export: "/".into(),
    };
    s.workload = "restart.sh".into();
    assert_scenario_passes(&s);
}

/// The cluster of the data-server outage scenario: `pnfs mds` and three `pnfs ds` processes
/// (the default data servers) over one directory (the secret generated there on first start).
const CLUSTER_CONFIG: &str = "\
data_dir: /srv/pnfs-data
lease_time: 15
grace_time: 15
";

/// Issue 5's outage check: with both clients writing through their layouts with fsync, data
/// server 2 (its own process) is killed with SIGKILL and started again 5 s later. No writer
/// may see an error, and every fsynced state and a 24 MiB fsynced file must read back intact
/// after a remount (guest/dskill.sh).
#[test]
fn pnfs_files_v41_data_server_killed_and_restarted() {
    let mut s = pnfs_scenario("pnfs-files-dskill", "vers=4.1");
    s.server = Server::Pnfs {
        binary: pnfs_binary(),
        args: "mds --config /scenario/pnfs.yaml".into(),
        config: Some(CLUSTER_CONFIG.into()),
        export: "/".into(),
    };
    s.workload = "dskill.sh".into();
    s.extra_env.push(("PNFS_DS_IDS".into(), "1 2 3".into()));
    assert_scenario_passes(&s);
}

/// Issue 23's mirrored flex files: the cluster as processes (`pnfs mds`, `pnfs ds --id 1..3`),
/// flex files layouts with 2 mirrors, vers=4.2 on XFS with reflink. The suite passes (CLONE and
/// COPY into a new file go copy by copy on the data servers), then `workload.sh`'s mirror
/// checks: a 32 MiB file's copies on two data servers, none of it through the MDS; a data
/// server holding a copy is killed with SIGKILL in the middle of a 256 MiB `dd conv=fsync` and
/// left down: dd finishes, the sha256 matches, the MDS counted the client's error report and
/// marked the copy stale; the data server is started again and the MDS re-silvers the copy
/// until both objects have the file's sha256.
///
/// In CI since the layout names its own stateid as `ffds_stateid` (before, the stock
/// client's read of the 256 MiB file after the kill hung in three of five runs: it sent an
/// open stateid it had closed; docs/design.md, "Mirrors"); about 6.5 minutes.
#[test]
fn pnfs_flex_mirrors_v42_workload_and_data_server_killed() {
    let mut s = pnfs_scenario("pnfs-flex-mirrors", "vers=4.2").skipping(
        MIRRORED_ELSEWHERE,
        "run in pnfs-files: random 4 KiB writes and 2,000 creates meet nothing there that \
         tar_extract_diff (1,141 files through both mirrors) and the mirror checks do not",
    );
    s.server = Server::Pnfs {
        binary: pnfs_binary(),
        args: "mds --config /scenario/pnfs.yaml".into(),
        config: Some(MIRRORS_CONFIG.into()),
        export: "/".into(),
    };
    s.extra_env.push(("PNFS_DS_IDS".into(), "1 2 3".into()));
    s.extra_env.push(("SERVER_FS".into(), "xfs".into()));
    s.extra_env.push(("MIRROR_CHECKS".into(), "1".into()));
    assert_scenario_passes(&s);
}

/// The long checks `pnfs-flex-mirrors` leaves to `pnfs-files` (4 minutes on a slow CI
/// machine): its writes through two mirrors are shown by `tar_extract_diff` and the mirror
/// checks.
const MIRRORED_ELSEWHERE: &str = "^(fio_randwrite_verify_64MiB|many_files_2000)$";

/// The mirrored cluster: flex files layouts, two copies of every file.
const MIRRORS_CONFIG: &str = "\
data_dir: /srv/pnfs-data
lease_time: 15
grace_time: 15
cluster:
  layout:
    layout_type: flex_files
    mirrors: 2
";

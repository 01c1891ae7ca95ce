//! `pnfs mount` (the bundled client through FUSE) under the interop workload: the guest
//! suite's checks (`guest/checks.sh`: sizes with sha256, 2,000 files, renames, links,
//! unlink of an open file, attributes, flock and fcntl locks within a mount and between two,
//! close-to-open both ways, fsync, fio write+verify, a tree through tar, O_DIRECT) and the
//! FUSE mount's own (user xattrs, mmap, locks of a killed process, the revalidate ioctl,
//! 10,000 entries, statfs), client 1 and client 2 being two mounts by two client processes:
//!
//! - against `pnfs server` with three data servers (the bytes go to the data servers, as the
//!   mounts' counters show);
//! - against nfs-ganesha, which grants no layouts (the bytes go through the server).
//!
//! `PNFS_MOUNT_ONLY=<regex>` runs only the matching checks (for a run by hand).

use std::path::PathBuf;

use interop_tests::fuse::{counter, run_mount_workload, skip_without_fuse, summary, FuseMount};
use interop_tests::peers::{Ganesha, PnfsCluster};

const MIB: u64 = 1 << 20;

fn only() -> Option<String> {
    std::env::var("PNFS_MOUNT_ONLY")
        .ok()
        .filter(|s| !s.is_empty())
}

fn assert_all_passed(name: &str, r: &interop_tests::guest::Report) {
    eprintln!("{}", summary(name, r));
    let failed: Vec<String> = r
        .failures()
        .iter()
        .map(|c| format!("{}: {}", c.name, c.detail))
        .collect();
    assert!(
        r.all_passed(),
        "{name}: {} failed check(s){}:\n  {}",
        failed.len(),
        r.unfinished
            .as_ref()
            .map_or(String::new(), |u| format!(", {u} never finished")),
        failed.join("\n  ")
    );
}

/// Runs the workload on two mounts of `url` (`server` names it for the script and the
/// table), unmounts both (each must exit 0) and asserts every check passed; mount 1's log,
/// with its counters.
fn workload_on_two_mounts(name: &str, url: &str, server: &str, ds_dirs: &[PathBuf]) -> String {
    let c1 = FuseMount::start(url, "").expect("mount 1");
    let c2 = FuseMount::start(url, "").expect("mount 2");
    let r = run_mount_workload(c1.path(), c2.path(), server, ds_dirs, only().as_deref());
    let (s1, log1) = c1.unmount();
    let (s2, log2) = c2.unmount();
    assert_all_passed(name, &r);
    for (i, s, log) in [(1, s1, &log1), (2, s2, &log2)] {
        assert!(
            s.is_some_and(|s| s.success()),
            "mount {i} exit {s:?}: {log}"
        );
    }
    log1
}

#[test]
fn the_workload_passes_on_two_mounts_of_pnfs_server() {
    if skip_without_fuse("the mount workload on pnfs server") {
        return;
    }
    let server = PnfsCluster::start().expect("pnfs server");
    let url = format!("nfs://{}/", server.mds_addr());
    let ds_dirs: Vec<_> = (1..=3).map(|id| server.ds_data_dir(id)).collect();
    let log1 = workload_on_two_mounts("pnfs mount of pnfs server", &url, "pnfs", &ds_dirs);
    if only().is_some() {
        return;
    }
    // The bytes went to the data servers: client 1 wrote the suite's files there (64 MiB
    // in one file, 64 MiB of fio's, the rest small).
    let ds = counter(&log1, "data servers: wrote").expect("counters of mount 1");
    let mds = counter(&log1, "MDS: wrote").expect("counters of mount 1");
    eprintln!("mount 1 wrote {ds} B to the data servers and {mds} B through the MDS");
    assert!(ds >= 128 * MIB, "data servers got {ds} B: {log1}");
    assert!(mds * 100 <= ds, "the MDS got {mds} B of writes: {log1}");
    // copy_file_range went to the server (COPY), not through the client.
    let copies = counter(&log1, "server-side copies").expect("counters of mount 1");
    assert!(copies >= 1, "no server-side copy: {log1}");
}

#[test]
fn the_workload_passes_on_two_mounts_of_ganesha() {
    if skip_without_fuse("the mount workload on nfs-ganesha") {
        return;
    }
    let Some(g) = Ganesha::start_or_skip("the mount workload on nfs-ganesha") else {
        return;
    };
    let url = format!("nfs://{}{}", g.addr(), g.pseudo_path());
    workload_on_two_mounts("pnfs mount of nfs-ganesha", &url, "ganesha", &[]);
}

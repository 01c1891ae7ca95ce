//! The control: the whole workload against the Linux kernel's own server (knfsd) in the guest.
//! If these fail, the harness or the workload is broken, not our server.
//!
//! Both scenarios also run the RPC-over-RDMA control in the same boot ([`Scenario::with_rdma`]):
//! soft-RoCE on the guest's veth pair, knfsd listening on RDMA port 20049, and after the suite
//! over TCP both clients mount again with `proto=rdma,port=20049` (vers=4.1 in one, vers=4.2 in
//! the other), run the file checks again (`rdma_*`) and show `xprt: rdma` in their mountstats.

use interop_tests::guest::{assert_scenario_passes, Scenario};

#[test]
fn knfsd_v41_workload_suite() {
    assert_scenario_passes(&Scenario::knfsd("knfsd-v4.1", "vers=4.1").with_rdma());
}

/// With vers=4.2 the export is an XFS file system with reflink (`SERVER_FS=xfs`,
/// `guest/servers.sh`): the control for issue 18's checks (fallocate, punch hole,
/// SEEK_DATA/SEEK_HOLE, copy_file_range through COPY, `cp --reflink=always` through CLONE).
/// Two long checks no vers=4.2 scenario of our server runs are left to `knfsd-v4.1`.
#[test]
fn knfsd_v42_workload_suite() {
    let mut s = Scenario::knfsd("knfsd-v4.2", "vers=4.2")
        .with_rdma()
        .skipping(
            "^(fio_randwrite_verify_64MiB|many_files_2000)$",
            "no scenario of our server runs it with vers=4.2; knfsd-v4.1 is its control",
        );
    s.extra_env.push(("SERVER_FS".into(), "xfs".into()));
    assert_scenario_passes(&s);
}

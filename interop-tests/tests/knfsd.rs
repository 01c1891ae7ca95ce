//! The control: the whole workload against the Linux kernel's own server (knfsd) in the guest.
//! If these fail, the harness or the workload is broken, not our server.

use interop_tests::guest::{assert_scenario_passes, Scenario};

#[test]
fn knfsd_v41_workload_suite() {
    assert_scenario_passes(&Scenario::knfsd("knfsd-v4.1", "vers=4.1"));
}

#[test]
fn knfsd_v42_workload_suite() {
    assert_scenario_passes(&Scenario::knfsd("knfsd-v4.2", "vers=4.2"));
}

//! Our server under the stock Linux client: the same workload as the knfsd control.

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
    }
}

#[test]
fn pnfs_v41_workload_suite() {
    assert_scenario_passes(&pnfs_scenario("pnfs-v4.1", "vers=4.1"));
}

#[test]
fn pnfs_v42_workload_suite() {
    assert_scenario_passes(&pnfs_scenario("pnfs-v4.2", "vers=4.2"));
}

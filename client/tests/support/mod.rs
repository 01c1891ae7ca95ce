//! What the client's integration tests share: an MDS in the test process.
// Each test binary compiles this module and uses part of it.
#![allow(dead_code)]

use std::net::SocketAddr;
use std::sync::Arc;

use mds::{Config, Mds};

/// Starts an MDS over `dir` on a loopback port, without data servers (it keeps file data
/// itself and grants no layouts), with no grace period and a lease of `lease` seconds
/// (tests may use leases shorter than an operator may configure).
pub(crate) async fn start_mds(dir: &std::path::Path, lease: u32) -> (Arc<Mds>, SocketAddr) {
    start_mds_with(mds_config(dir, lease)).await
}

/// The configuration [`start_mds`] uses, for a test to change before [`start_mds_with`].
pub(crate) fn mds_config(dir: &std::path::Path, lease: u32) -> Config {
    Config {
        listen: "127.0.0.1:0".parse().unwrap(),
        data_dir: dir.to_path_buf(),
        grace_time: 0,
        lease_time: lease,
        cluster: mds::config::ClusterConfig {
            data_servers: Vec::new(),
            ..Default::default()
        },
        ..Config::default()
    }
}

/// Starts an MDS with `cfg` (its `listen` address is not used: a free loopback port is).
pub(crate) async fn start_mds_with(cfg: Config) -> (Arc<Mds>, SocketAddr) {
    let mds = Mds::open(cfg).expect("open mds");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(mds.clone().serve_on(listener));
    (mds, addr)
}

//! What the client's integration tests share: an MDS in the test process.

use std::net::SocketAddr;
use std::sync::Arc;

use mds::{Config, Mds};

/// Starts an MDS over `dir` on a loopback port, without data servers (it keeps file data
/// itself and grants no layouts), with no grace period and a lease of `lease` seconds
/// (tests may use leases shorter than an operator may configure).
pub async fn start_mds(dir: &std::path::Path, lease: u32) -> (Arc<Mds>, SocketAddr) {
    let cfg = Config {
        listen: "127.0.0.1:0".parse().unwrap(),
        data_dir: dir.to_path_buf(),
        grace_time: 0,
        lease_time: lease,
        cluster: mds::config::ClusterConfig {
            data_servers: Vec::new(),
            ..Default::default()
        },
        ..Config::default()
    };
    let mds = Mds::open(cfg).expect("open mds");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(mds.clone().serve_on(listener));
    (mds, addr)
}

//! Real servers on loopback ports, for the tests where the socket is the point or that have not
//! moved to the in-memory cluster: an MDS with its data under a temporary directory, data
//! servers each on a runtime of its own (so killing one drops its sockets as a dead process
//! would), and a cluster of both.

pub mod cluster;
pub mod ds;

use std::net::SocketAddr;
use std::sync::Arc;

use mds::{Config, Mds};
pub use nfs_server::ManualClock;

/// A running server and its data directory.
pub struct Server {
    /// The MDS.
    pub mds: Arc<Mds>,
    /// Where it listens.
    pub addr: SocketAddr,
    /// Its data directory.
    pub dir: tempfile::TempDir,
}

/// Starts a server on 127.0.0.1 with a fresh data directory (grace off, short lease).
pub async fn server() -> Server {
    let dir = tempfile::tempdir().expect("tempdir");
    server_in(dir).await
}

/// Starts a server over an existing data directory (for restart tests).
pub async fn server_in(dir: tempfile::TempDir) -> Server {
    let (mds, addr) = start_mds(dir.path(), 0, 10).await;
    Server { mds, addr, dir }
}

/// Starts a server over `dir` with the given grace and lease times (seconds): an MDS without
/// data servers, which keeps file data itself and grants no layouts (layout tests start a
/// cluster: `cluster::start_cluster`).
pub async fn start_mds(dir: &std::path::Path, grace: u32, lease: u32) -> (Arc<Mds>, SocketAddr) {
    start_with(Config {
        listen: "127.0.0.1:0".parse().unwrap(),
        data_dir: dir.to_path_buf(),
        grace_time: grace,
        lease_time: lease,
        cluster: mds::config::ClusterConfig {
            data_servers: Vec::new(),
            ..Default::default()
        },
        ..Config::default()
    })
    .await
}

/// Starts a server with this configuration on a loopback port of its own (not validated:
/// tests may use leases shorter than an operator may configure).
pub async fn start_with(cfg: Config) -> (Arc<Mds>, SocketAddr) {
    start_on(cfg, nfs_server::clock::system()).await
}

/// [`start_with`] on `clock`: the server's leases, grace period, recall deadlines and
/// reapers run on it (a [`ManualClock`] the test moves on instead of sleeping).
pub async fn start_on(cfg: Config, clock: nfs_server::SharedClock) -> (Arc<Mds>, SocketAddr) {
    let mds = Mds::open_on(cfg, clock).expect("open mds");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(mds.clone().serve_on(listener));
    (mds, addr)
}

/// Moving a manual clock on is not about sockets; it lives with the in-memory cluster.
pub use crate::cluster::advance;

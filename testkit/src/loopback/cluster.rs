//! A cluster on loopback sockets in one test process: data servers ([`super::ds::DsProc`]) and an MDS whose
//! device registry has registered them all.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use mds::{Config, Mds};

use super::ds::{cluster_config, DsProc, SECRET};

/// A running cluster: its data directory and data servers (dropped last, with the MDS's
/// runtime still up).
pub struct Cluster {
    /// The data directory of the MDS and (below it) of the data servers.
    pub dir: tempfile::TempDir,
    /// Data server `id` at index `id - 1`; `None` once killed.
    pub ds: Vec<Option<DsProc>>,
    /// The configuration they were started with.
    pub cfg: Config,
}

impl Cluster {
    /// Kills data server `id`.
    pub fn kill(&mut self, id: u16) {
        if let Some(d) = self.ds[usize::from(id) - 1].take() {
            d.kill();
        }
    }

    /// Starts data server `id` again (a new process: new boot verifier, same objects).
    pub fn restart(&mut self, id: u16) {
        self.kill(id);
        self.ds[usize::from(id) - 1] = Some(DsProc::start(&self.cfg, id, &SECRET));
    }
}

/// Starts `n` data servers and an MDS over a fresh directory, the configuration changed by
/// `f` first (it may drop data servers), and returns once the registry has every configured
/// data server up.
pub async fn start_cluster(n: u16, f: impl FnOnce(&mut Config)) -> (Cluster, Arc<Mds>, SocketAddr) {
    start_cluster_on(n, f, nfs_server::clock::system()).await
}

/// [`start_cluster`] with the MDS on `clock` (the data servers keep the system's: what the
/// tests move on is the MDS's leases, recall deadlines and revocations).
pub async fn start_cluster_on(
    n: u16,
    f: impl FnOnce(&mut Config),
    clock: nfs_server::SharedClock,
) -> (Cluster, Arc<Mds>, SocketAddr) {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = cluster_config(dir.path(), n, 30);
    f(&mut cfg);
    let ds = start_data_servers(&cfg);
    let (mds, addr) = start_registered_mds_on(&cfg, clock).await;
    (Cluster { dir, ds, cfg }, mds, addr)
}

/// [`start_cluster`] over an existing directory (a restart of the MDS and data servers).
pub async fn boot_cluster(
    dir: &std::path::Path,
    n: u16,
    f: impl FnOnce(&mut Config),
) -> (Vec<Option<DsProc>>, Config, Arc<Mds>, SocketAddr) {
    let mut cfg = cluster_config(dir, n, 30);
    f(&mut cfg);
    let ds = start_data_servers(&cfg);
    let (mds, addr) = start_registered_mds(&cfg).await;
    (ds, cfg, mds, addr)
}

/// Starts every data server of `cfg` (data server `id` at index `id - 1`).
pub fn start_data_servers(cfg: &Config) -> Vec<Option<DsProc>> {
    cfg.cluster
        .data_servers
        .iter()
        .map(|d| Some(DsProc::start(cfg, d.id, &SECRET)))
        .collect()
}

/// Starts the MDS of `cfg` and its device registry, and returns once every configured data
/// server is up (within 10 s).
pub async fn start_registered_mds(cfg: &Config) -> (Arc<Mds>, SocketAddr) {
    start_registered_mds_on(cfg, nfs_server::clock::system()).await
}

/// [`start_registered_mds`] on `clock`.
pub async fn start_registered_mds_on(
    cfg: &Config,
    clock: nfs_server::SharedClock,
) -> (Arc<Mds>, SocketAddr) {
    let (mds, addr) = super::start_on(cfg.clone(), clock).await;
    mds.devices().start();
    let t0 = Instant::now();
    while mds.devices().counts().0 < cfg.cluster.data_servers.len() {
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "data servers did not come up"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    (mds, addr)
}

//! A cluster in one test process: data servers, each on a tokio runtime of its own (so
//! killing one drops every socket it had, as the death of its process would), and an MDS
//! whose device registry registers them.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use data_server::control::{serve, ControlConfig, ControlService, StartOnRegister};
use data_server::DsOptions;
use mds::config::{ClusterConfig, DataServerConfig};
use mds::{Config, Mds};
use nfs_proto::control::{ClusterKey, CtlBackend};
use pfs_core::{LocalStore, ObjectStore};

pub const SECRET: [u8; 32] = *b"0123456789abcdef0123456789abcdef";
pub const LEASE: u32 = 30;

pub fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// A free loopback port (bound, read, released).
pub fn free_port() -> SocketAddr {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap()
}

/// A configuration with `n` data servers on free loopback ports under `dir`.
pub fn config(dir: &std::path::Path, n: u16) -> Config {
    Config {
        listen: "127.0.0.1:0".parse().unwrap(),
        data_dir: dir.to_path_buf(),
        lease_time: LEASE,
        cluster: ClusterConfig {
            secret: Some(hex(&SECRET)),
            data_servers: (1..=n)
                .map(|id| {
                    // An unspecified IP, as the all-in-one default: clients are told the
                    // address they reached the MDS by.
                    let port = free_port().port();
                    let mut d = DataServerConfig::new(id, SocketAddr::from(([0, 0, 0, 0], port)));
                    d.control = Some(free_port());
                    d
                })
                .collect(),
            ..ClusterConfig::default()
        },
        ..Config::default()
    }
}

/// One data server "process": its own runtime, control service and (after REGISTER) NFS
/// service.
pub struct DsProc {
    rt: Option<tokio::runtime::Runtime>,
    pub start: Arc<StartOnRegister>,
    pub service: Arc<ControlService>,
}

impl DsProc {
    pub fn start(cfg: &Config, id: u16, secret: &[u8]) -> Self {
        let d = cfg.cluster.data_server(id).unwrap().clone();
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let _enter = rt.enter();
        let bind = |addr: SocketAddr| {
            let s = tokio::net::TcpSocket::new_v4().unwrap();
            s.set_reuseaddr(true).unwrap();
            s.bind(addr).unwrap();
            s.listen(64).unwrap()
        };
        let nfs = Mutex::new(Some(bind(d.listen_addr())));
        let control = bind(d.control_addr().unwrap());
        let objects: Arc<dyn ObjectStore> =
            Arc::new(LocalStore::open(d.data_dir_in(&cfg.data_dir)).unwrap());
        let mut opts = DsOptions::new(u32::from(id));
        opts.lease_time = Duration::from_secs(u64::from(cfg.lease_time));
        let start = Arc::new(StartOnRegister::new(opts, objects.clone(), move |ds| {
            if let Some(l) = nfs.lock().unwrap().take() {
                tokio::spawn(ds.serve_on(l));
            }
        }));
        let service = Arc::new(ControlService::new(
            ControlConfig {
                ds_id: u32::from(id),
                lease_time: Duration::from_secs(u64::from(cfg.lease_time)),
                backend: CtlBackend::CTL_BACKEND_LOCAL,
                addresses: d.addresses.clone(),
            },
            objects,
            start.clone(),
            ClusterKey::from_secret(secret),
        ));
        rt.spawn(serve(control, service.clone()));
        drop(_enter);
        Self {
            rt: Some(rt),
            start,
            service,
        }
    }

    /// Kills it: every task and socket of its runtime goes.
    pub fn kill(mut self) {
        if let Some(rt) = self.rt.take() {
            rt.shutdown_background();
        }
    }
}

impl Drop for DsProc {
    fn drop(&mut self) {
        if let Some(rt) = self.rt.take() {
            rt.shutdown_background();
        }
    }
}

/// A running cluster: its data directory and data servers (dropped last, with the MDS's
/// runtime still up).
pub struct Cluster {
    pub dir: tempfile::TempDir,
    pub ds: Vec<Option<DsProc>>,
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
    let dir = tempfile::tempdir().unwrap();
    let (ds, cfg, mds, addr) = boot_cluster(dir.path(), n, f).await;
    (Cluster { dir, ds, cfg }, mds, addr)
}

/// [`start_cluster`] over an existing directory (a restart of the MDS and data servers).
pub async fn boot_cluster(
    dir: &std::path::Path,
    n: u16,
    f: impl FnOnce(&mut Config),
) -> (Vec<Option<DsProc>>, Config, Arc<Mds>, SocketAddr) {
    let mut cfg = config(dir, n);
    cfg.grace_time = 0;
    f(&mut cfg);
    let ds = cfg
        .cluster
        .data_servers
        .iter()
        .map(|d| Some(DsProc::start(&cfg, d.id, &SECRET)))
        .collect();
    let (mds, addr) = super::start_with(cfg.clone()).await;
    mds.devices.start();
    let t0 = Instant::now();
    while mds.devices.counts().0 < cfg.cluster.data_servers.len() {
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "data servers did not come up"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    (ds, cfg, mds, addr)
}

//! Data servers for MDS tests: each runs its control service (and, once the MDS registered,
//! its NFS service) on a tokio runtime of its own, so dropping or killing it drops every
//! socket, as the death of its process would.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use data_server::control::{serve, ControlConfig, ControlService, StartOnRegister};
use data_server::DsOptions;
use mds::config::{ClusterConfig, DataServerConfig};
use mds::Config;
use nfs_proto::control::{ClusterKey, CtlBackend};
use pfs_core::{LocalStore, ObjectStore};

/// The cluster secret of [`cluster_config`].
pub const SECRET: [u8; 32] = *b"0123456789abcdef0123456789abcdef";

pub fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// A free loopback port (bound, read, released).
pub fn free_port() -> SocketAddr {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap()
}

/// A configuration with `n` data servers on free loopback ports under `dir`, the MDS on a
/// loopback port of its own, no grace period, and this lease.
pub fn cluster_config(dir: &std::path::Path, n: u16, lease: u32) -> Config {
    Config {
        listen: "127.0.0.1:0".parse().unwrap(),
        data_dir: dir.to_path_buf(),
        lease_time: lease,
        grace_time: 0,
        cluster: ClusterConfig {
            secret: Some(hex(&SECRET)),
            data_servers: (1..=n)
                .map(|id| {
                    let mut d = DataServerConfig::new(id, free_port());
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
/// service, over a local object store under the MDS's data directory.
pub struct DsProc {
    rt: Option<tokio::runtime::Runtime>,
    pub start: Arc<StartOnRegister>,
    pub service: Arc<ControlService>,
    pub store: Arc<LocalStore>,
}

impl DsProc {
    /// Starts data server `id` of `cfg` with this cluster secret.
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
        let store = Arc::new(LocalStore::open(d.data_dir_in(&cfg.data_dir)).unwrap());
        let objects: Arc<dyn ObjectStore> = store.clone();
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
            store,
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

/// Waits (up to 10 s) until `f` holds; returns how long that took.
pub async fn until(what: &str, mut f: impl FnMut() -> bool) -> Duration {
    let t0 = Instant::now();
    while !f() {
        assert!(t0.elapsed() < Duration::from_secs(10), "timed out: {what}");
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    t0.elapsed()
}

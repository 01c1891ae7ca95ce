//! Data servers for the MDS's tests: each runs its control service (and, once the MDS
//! registers it, its NFS service) on a tokio runtime of its own, so killing it drops every
//! socket, as the death of its process would; its objects stay on disk for a restart.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use data_server::control::{serve, ControlConfig, ControlService, StartOnRegister};
use data_server::DsOptions;
use mds::config::{ClusterConfig, DataServerConfig};
use mds::Config;
use nfs_proto::control::{ClusterKey, CtlBackend};
use pfs_core::{LocalStore, ObjectId, ObjectStore};

/// The cluster secret of the tests' clusters.
pub const SECRET: [u8; 32] = *b"0123456789abcdef0123456789abcdef";

/// `b` in lower-case hex (the form of the secret in the configuration).
pub fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// A free loopback port for a data server to bind later. Not one the kernel hands out
/// (`bind(0)` and outgoing connections take ports of the ephemeral range, 32768 and up, so a
/// port read from `bind(0)` and released could be taken by a connection before the data
/// server binds it): ports below that range, each handed out once per test process, and
/// checked free on every address when handed out.
pub fn free_port() -> SocketAddr {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let start = (std::process::id() % 64) * 300;
    loop {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let port = u16::try_from(10_000 + (start + n) % 22_000).unwrap();
        let free = std::net::TcpListener::bind(("0.0.0.0", port)).is_ok()
            && std::net::TcpListener::bind(("127.0.0.1", port)).is_ok();
        if free {
            return SocketAddr::from(([127, 0, 0, 1], port));
        }
    }
}

/// An MDS configuration under `dir` with `n` data servers on free loopback ports (NFS and
/// control), the tests' secret and lease `lease` seconds; no grace period.
pub fn cluster_config(dir: &Path, n: u16, lease: u32) -> Config {
    Config {
        listen: "127.0.0.1:0".parse().unwrap(),
        data_dir: dir.to_path_buf(),
        lease_time: lease,
        grace_time: 0,
        cluster: ClusterConfig {
            secret: Some(hex(&SECRET)),
            data_servers: (1..=n)
                .map(|id| {
                    // An unspecified IP, as in the all-in-one default: GETDEVICEINFO tells
                    // clients the address they reached the MDS by.
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
/// service, over the `local` backend in its data directory of `cfg`.
pub struct DsProc {
    rt: Option<tokio::runtime::Runtime>,
    /// Starts its NFS service when the MDS registers it.
    pub start: Arc<StartOnRegister>,
    /// Its control service.
    pub service: Arc<ControlService>,
    /// Its object store.
    pub objects: Arc<dyn ObjectStore>,
    /// The same store, for its counters (`io_counts`).
    pub store: Arc<LocalStore>,
    /// Its data directory.
    pub data_dir: PathBuf,
}

impl DsProc {
    /// Starts data server `id` of `cfg` with the cluster secret `secret`.
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
        let data_dir = d.data_dir_in(&cfg.data_dir);
        let store = Arc::new(LocalStore::open(&data_dir).unwrap());
        let objects: Arc<dyn ObjectStore> = store.clone();
        let mut opts = DsOptions::new(u32::from(id));
        opts.lease_time = Duration::from_secs(u64::from(cfg.lease_time));
        let start = Arc::new(StartOnRegister::new(opts, objects.clone(), move |ds| {
            if let Some(l) = nfs.lock().unwrap().take() {
                tokio::spawn(ds.serve_on(l));
            }
        }));
        let service = Arc::new(
            ControlService::new(
                ControlConfig {
                    ds_id: u32::from(id),
                    lease_time: Duration::from_secs(u64::from(cfg.lease_time)),
                    backend: CtlBackend::CTL_BACKEND_LOCAL,
                    addresses: d.addresses.clone(),
                    rdma_addresses: vec![],
                },
                objects.clone(),
                start.clone(),
                ClusterKey::from_secret(secret),
            )
            .unwrap(),
        );
        rt.spawn(serve(control, service.clone()));
        drop(_enter);
        Self {
            rt: Some(rt),
            start,
            service,
            objects,
            store,
            data_dir,
        }
    }

    /// Kills it: every task and socket of its runtime goes (its objects stay on disk).
    pub fn kill(mut self) {
        if let Some(rt) = self.rt.take() {
            rt.shutdown_background();
        }
    }

    /// The size of object `(file, stripe)` here (0 when missing).
    pub fn object_size(&self, file: u64, stripe: u32) -> u64 {
        self.objects.size(ObjectId { file, stripe }).unwrap()
    }

    /// Whether object `(file, stripe)` exists in this data server's store.
    pub fn has_object(&self, file: u64, stripe: u32) -> bool {
        object_path(&self.data_dir, file, stripe).exists()
    }
}

/// Where the `local` backend under `data_dir` keeps object `(file, stripe)`.
pub fn object_path(data_dir: &Path, file: u64, stripe: u32) -> PathBuf {
    data_dir
        .join("objects")
        .join(ObjectId { file, stripe }.relative_path())
}

impl Drop for DsProc {
    fn drop(&mut self) {
        if let Some(rt) = self.rt.take() {
            rt.shutdown_background();
        }
    }
}

/// Waits (up to 10 s) until `f` holds.
pub async fn until(what: &str, f: impl FnMut() -> bool) -> Duration {
    until_within(what, Duration::from_secs(10), f).await
}

/// Waits (up to `limit`) until `f` holds; returns how long it took.
pub async fn until_within(what: &str, limit: Duration, mut f: impl FnMut() -> bool) -> Duration {
    let t0 = Instant::now();
    while !f() {
        assert!(t0.elapsed() < limit, "timed out: {what}");
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    t0.elapsed()
}

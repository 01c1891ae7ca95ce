//! An in-memory cluster: an MDS and N data servers in the test's own runtime, every
//! connection an in-process duplex stream, in the spirit of quinn-proto's `Pair`: no socket,
//! no port, no process; a test drives the whole cluster and can kill or crash its parts.
//!
//! ```text
//!  test ── connect_mds() ──duplex──> MDS (StreamServer) ── metadata: redb in memory or a file
//!    │                                 │ device registry ── Connector ──duplex──┐
//!    └─── connect_ds(id) ──duplex──> data server id <── control service <──────┘
//!                                      └─ objects: a crash-simulating store (or any store)
//! ```
//!
//! Each role is reached at a synthetic address (TEST-NET-1: the MDS at [`MDS_ADDR`], data
//! server `id` at [`ds_nfs_addr`]), which is what the MDS's configuration and GETDEVICEINFO
//! name; [`Cluster::connect_addr`] follows such an address. A data server's connections run
//! through relay tasks, so killing it closes them at both ends, as its process's death
//! would; its object store stays for a restart, and a crash-simulating store loses at a
//! crash what was not synced.

mod clients;
mod ds;
mod link;

use std::io;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use data_server::control::ControlService;
use data_server::DataServer;
use mds::config::{ClusterConfig, DataServerConfig};
use mds::pnfs::devices::DevicesOptions;
use mds::pnfs::dsconnect::DsConnector;
use mds::server::StartError;
use mds::{Config, Mds, MdsOptions, MetadataStore};
use nfs_server::{ManualClock, SharedClock};
use nfs_server::{Service, StreamServer};
use pfs_core::{CrashSimStore, ObjectStore};
use tokio::io::DuplexStream;

pub use ds::SECRET;
pub use link::{client_addr, ds_control_addr, ds_nfs_addr, MDS_ADDR};

use ds::{DsNode, DsStore, Nodes};
use link::Tasks;

/// Where the MDS keeps its metadata.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreKind {
    /// redb's in-memory backend; the MDS keeps file data in a crash-simulating store.
    Memory,
    /// redb in `<dir>/metadata.redb`, file data under `<dir>/data`, as in production.
    Redb(PathBuf),
}

/// Makes the object store of data server `id`.
type MakeStore = Box<dyn Fn(u16) -> Arc<dyn ObjectStore>>;

/// Changes the MDS's configuration.
type Configure = Box<dyn FnOnce(&mut Config)>;

/// Builds a [`Cluster`]: how many data servers, where the metadata lives, what the data
/// servers store objects in, and any change to the MDS's configuration.
pub struct ClusterBuilder {
    data_servers: u16,
    store: StoreKind,
    lease: u32,
    ds_store: Option<MakeStore>,
    configure: Vec<Configure>,
    devices: DevicesOptions,
    clock: Option<SharedClock>,
    registry: bool,
}

impl std::fmt::Debug for ClusterBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClusterBuilder")
            .field("data_servers", &self.data_servers)
            .field("store", &self.store)
            .field("lease", &self.lease)
            .finish_non_exhaustive()
    }
}

impl Default for ClusterBuilder {
    /// Three data servers over crash-simulating stores, metadata in memory, a 30 s lease,
    /// no grace period, and a device registry that polls and reconnects within
    /// milliseconds.
    fn default() -> Self {
        Self {
            data_servers: 3,
            store: StoreKind::Memory,
            lease: 30,
            ds_store: None,
            configure: Vec::new(),
            devices: DevicesOptions {
                poll: Duration::from_millis(200),
                backoff_min: Duration::from_millis(5),
                backoff_max: Duration::from_millis(100),
                call_timeout: Duration::from_secs(5),
            },
            clock: None,
            registry: true,
        }
    }
}

impl ClusterBuilder {
    /// `n` data servers, ids 1 to `n` (0: an MDS that keeps all file data itself).
    pub fn data_servers(mut self, n: u16) -> Self {
        self.data_servers = n;
        self
    }

    /// Where the MDS keeps its metadata.
    pub fn store(mut self, store: StoreKind) -> Self {
        self.store = store;
        self
    }

    /// The lease time, seconds.
    pub fn lease(mut self, seconds: u32) -> Self {
        self.lease = seconds;
        self
    }

    /// Data server `id` stores its objects in `f(id)` (default: a new [`CrashSimStore`]).
    pub fn ds_store(mut self, f: impl Fn(u16) -> Arc<dyn ObjectStore> + 'static) -> Self {
        self.ds_store = Some(Box::new(f));
        self
    }

    /// Changes the MDS's configuration once the cluster's part is filled in (the data
    /// servers' addresses and the secret; keep those).
    pub fn configure(mut self, f: impl FnOnce(&mut Config) + 'static) -> Self {
        self.configure.push(Box::new(f));
        self
    }

    /// The device registry's timing.
    pub fn devices(mut self, opts: DevicesOptions) -> Self {
        self.devices = opts;
        self
    }

    /// The clock the MDS and the data servers run on (default: the system's): a
    /// [`ManualClock`](nfs_server::ManualClock) lets a test run out leases, recall deadlines,
    /// revocations and grace periods by moving it on instead of sleeping. One clock for
    /// every role, so that the control protocol's call stamps agree.
    pub fn clock(mut self, clock: SharedClock) -> Self {
        self.clock = Some(clock);
        self
    }

    /// Leaves the MDS's device registry stopped at the first start: [`ClusterBuilder::start`]
    /// returns at once, and the test starts the registry (`k.mds().devices().start()`) to
    /// watch what it does from the beginning (its generations, a refused REGISTER).
    pub fn registry_stopped(mut self) -> Self {
        self.registry = false;
        self
    }

    /// Starts the data servers and the MDS, and returns once the MDS has registered every
    /// data server (within 10 s). Needs a tokio runtime.
    pub async fn start(mut self) -> Cluster {
        let cfg = self.config();
        let clock = self.clock.take().unwrap_or_else(nfs_server::clock::system);
        let nodes: Nodes = Arc::new(Mutex::new(
            (1..=self.data_servers)
                .map(|id| {
                    let store = match &self.ds_store {
                        Some(f) => DsStore {
                            objects: f(id),
                            crashsim: None,
                        },
                        None => {
                            let sim = Arc::new(CrashSimStore::new());
                            DsStore {
                                objects: sim.clone(),
                                crashsim: Some(sim),
                            }
                        }
                    };
                    DsNode::new(
                        id,
                        store,
                        Duration::from_secs(u64::from(self.lease)),
                        clock.clone(),
                    )
                })
                .collect(),
        ));
        for n in ds::lock(&nodes).iter_mut() {
            n.start();
        }
        let boot = MdsBoot {
            store: self.store.clone(),
            objects: Arc::new(CrashSimStore::new()),
            connector: Arc::new(ds::Connector(nodes.clone())),
            devices: self.devices,
            clock,
        };
        let mut cluster = Cluster {
            cfg,
            boot,
            running: None,
            mds_tasks: Tasks::default(),
            nodes,
        };
        cluster.start_mds(self.registry).await;
        cluster
    }

    fn config(&mut self) -> Config {
        let data_dir = match &self.store {
            StoreKind::Memory => PathBuf::from("/nonexistent/testkit-in-memory"),
            StoreKind::Redb(dir) => dir.clone(),
        };
        let mut cfg = Config {
            listen: MDS_ADDR,
            metrics_listen: None,
            data_dir,
            lease_time: self.lease,
            grace_time: 0,
            cluster: ClusterConfig {
                secret: Some(SECRET.iter().map(|b| format!("{b:02x}")).collect()),
                data_servers: (1..=self.data_servers)
                    .map(|id| {
                        let mut d = DataServerConfig::new(id, ds_nfs_addr(id));
                        d.control = Some(ds_control_addr(id));
                        d
                    })
                    .collect(),
                ..ClusterConfig::default()
            },
            ..Config::default()
        };
        for f in self.configure.drain(..) {
            f(&mut cfg);
        }
        cfg
    }
}

/// What the MDS is opened with, at start and at every restart.
struct MdsBoot {
    store: StoreKind,
    /// The MDS's own object store when its metadata is in memory.
    objects: Arc<CrashSimStore>,
    connector: Arc<ds::Connector>,
    devices: DevicesOptions,
    clock: SharedClock,
}

/// The MDS while it runs, and its server (whose drop stops the lease reaper).
struct RunningMds {
    mds: Arc<Mds>,
    server: StreamServer<Service<Mds>>,
}

/// A running in-memory cluster (see the module documentation). Dropping it ends every
/// connection and task it made.
pub struct Cluster {
    cfg: Config,
    boot: MdsBoot,
    running: Option<RunningMds>,
    /// The MDS's connections.
    mds_tasks: Tasks,
    nodes: Nodes,
}

impl std::fmt::Debug for Cluster {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cluster")
            .field("data_servers", &ds::lock(&self.nodes).len())
            .finish_non_exhaustive()
    }
}

impl Cluster {
    /// A cluster with the defaults of [`ClusterBuilder`].
    pub fn builder() -> ClusterBuilder {
        ClusterBuilder::default()
    }

    /// An MDS alone (no data servers: it keeps file data itself and grants no layouts),
    /// metadata in memory, a 10 s lease, no grace period: what suites of the MDS by itself
    /// start.
    pub async fn mds_alone() -> Cluster {
        Self::builder().data_servers(0).lease(10).start().await
    }

    /// Runs `test` on an MDS alone (file data in its own store), then on an MDS with the
    /// default three data servers (files striped over them, the data of the MDS's own READs
    /// and WRITEs going through the control protocol): the two places a file's data can
    /// live, for the suites of file I/O. Each run has a cluster of its own (10 s lease, no
    /// grace period).
    pub async fn alone_and_striped(test: impl AsyncFn(&Cluster)) {
        for data_servers in [0, 3] {
            let s = Self::builder()
                .data_servers(data_servers)
                .lease(10)
                .start()
                .await;
            eprintln!("with {data_servers} data servers");
            test(&s).await;
        }
    }

    /// The MDS's configuration.
    pub fn config(&self) -> &Config {
        &self.cfg
    }

    /// The MDS.
    pub fn mds(&self) -> &Arc<Mds> {
        &self.running().mds
    }

    fn running(&self) -> &RunningMds {
        self.running.as_ref().expect("the MDS is not running")
    }

    /// Opens the MDS, starts its tasks and (if `registry`) its device registry, and then
    /// waits (up to 10 s each) until every running data server is registered.
    async fn start_mds(&mut self, registry: bool) {
        let b = &self.boot;
        let opts = || MdsOptions {
            metadata: match b.store {
                StoreKind::Memory => MetadataStore::InMemory,
                StoreKind::Redb(_) => MetadataStore::Redb,
            },
            objects: match b.store {
                StoreKind::Memory => Some(b.objects.clone() as Arc<dyn ObjectStore>),
                StoreKind::Redb(_) => None,
            },
            connector: Some(b.connector.clone()),
            devices: b.devices,
            clock: Some(b.clock.clone()),
        };
        // The last handle of the previous boot may have gone on another thread, which may
        // still be closing its store: wait that out.
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        let mds = loop {
            match Mds::open_with(self.cfg.clone(), opts()) {
                Ok(mds) => break mds,
                Err(StartError::Store(e))
                    if e.is_already_open() && tokio::time::Instant::now() < deadline =>
                {
                    tokio::time::sleep(Duration::from_millis(1)).await
                }
                Err(e) => panic!("open the MDS: {e}"),
            }
        };
        mds.start_tasks();
        let server = StreamServer::for_role(mds.clone());
        self.running = Some(RunningMds { mds, server });
        if !registry {
            return;
        }
        self.mds().devices().start();
        let running: Vec<u16> = ds::lock(&self.nodes)
            .iter()
            .filter(|n| n.is_running())
            .map(|n| n.id)
            .collect();
        for id in running {
            self.until_up(id).await;
        }
    }

    /// Stops the MDS (its connections close, its tasks end, its store closes) and opens it
    /// again over the same metadata: needs [`StoreKind::Redb`], and no handle of the old
    /// MDS left with the test (drop clones of [`Cluster::mds`] first). Returns once every
    /// running data server is registered with the new boot.
    pub async fn restart_mds(&mut self) {
        assert!(
            matches!(self.boot.store, StoreKind::Redb(_)),
            "restart_mds needs the metadata in redb on disk"
        );
        self.stop_mds().await;
        self.start_mds(true).await;
    }

    /// [`Cluster::restart_mds`] with the configuration changed by `f` first (e.g. a grace
    /// period for the new boot).
    pub async fn restart_mds_with(&mut self, f: impl FnOnce(&mut Config)) {
        f(&mut self.cfg);
        self.restart_mds().await;
    }

    /// Stops the MDS and waits (up to 10 s) until it is gone and its store closed.
    pub async fn stop_mds(&mut self) {
        self.mds_tasks.abort_all();
        let Some(RunningMds { mds, server }) = self.running.take() else {
            return;
        };
        let gone = Arc::downgrade(&mds);
        // Its parts too: a recall or size hint spawned by the last requests holds the
        // handles it uses after the server is gone.
        let parts = mds.downgrade();
        drop((mds, server));
        self.until(
            "the MDS dropped (does the test still hold a clone?)",
            || gone.strong_count() == 0,
        )
        .await;
        self.until("the MDS's parts dropped", || parts.is_gone())
            .await;
    }

    /// A new connection to the MDS, from a client address of its own.
    pub fn connect_mds(&self) -> DuplexStream {
        let (client, end, relay) = link::pipe();
        self.mds_tasks.add(relay);
        self.mds_tasks.add(
            tokio::spawn(self.running().server.serve(end, client_addr(), MDS_ADDR)).abort_handle(),
        );
        client
    }

    /// How the MDS reaches the data servers' control services (for a control client of the
    /// test's own: [`DsControl::connect_with`](mds::pnfs::dsctl::DsControl::connect_with)).
    pub fn connector(&self) -> Arc<dyn DsConnector> {
        self.boot.connector.clone()
    }

    /// A new connection to data server `id`'s NFS service (refused while it is dead or not
    /// yet registered by the MDS).
    pub fn connect_ds(&self, id: u16) -> io::Result<DuplexStream> {
        self.node(id, |n| n.connect_nfs(client_addr()))
            .unwrap_or_else(|| Err(io::ErrorKind::ConnectionRefused.into()))
    }

    /// A new connection to whichever role serves NFS at `addr` (an address from
    /// GETDEVICEINFO, or [`MDS_ADDR`]).
    pub fn connect_addr(&self, addr: SocketAddr) -> io::Result<DuplexStream> {
        if addr == MDS_ADDR {
            return Ok(self.connect_mds());
        }
        match self.ds_id(addr) {
            Some(id) => self.connect_ds(id),
            None => Err(io::ErrorKind::ConnectionRefused.into()),
        }
    }

    /// The id of the data server serving NFS at `addr`.
    pub fn ds_id(&self, addr: SocketAddr) -> Option<u16> {
        ds::lock(&self.nodes)
            .iter()
            .find(|n| n.addr == addr)
            .map(|n| n.id)
    }

    /// Where data server `id` serves NFS: [`ds_nfs_addr`] unless it was restarted elsewhere
    /// ([`Cluster::restart_ds_at`]).
    pub fn ds_addr(&self, id: u16) -> SocketAddr {
        self.node(id, |n| n.addr).expect("no such data server")
    }

    /// Data server `id`'s NFS server, once registered.
    pub fn data_server(&self, id: u16) -> Option<Arc<DataServer>> {
        self.node(id, DsNode::data_server).flatten()
    }

    /// Data server `id`'s control service, while it runs.
    pub fn control_service(&self, id: u16) -> Option<Arc<ControlService>> {
        self.node(id, DsNode::control_service).flatten()
    }

    /// Data server `id`'s object store (it outlives the server).
    pub fn ds_objects(&self, id: u16) -> Arc<dyn ObjectStore> {
        self.node(id, |n| n.store.objects.clone())
            .expect("no such data server")
    }

    /// Data server `id`'s crash-simulating store (`None` if it was given another store).
    pub fn ds_crashsim(&self, id: u16) -> Option<Arc<CrashSimStore>> {
        self.node(id, |n| n.store.crashsim.clone()).flatten()
    }

    /// Kills data server `id`: its connections close at both ends (the MDS's control
    /// connection too), its sessions and tasks go; its objects stay.
    pub fn kill_ds(&self, id: u16) {
        self.node_mut(id, DsNode::kill);
    }

    /// Kills data server `id` and crashes its store: writes not synced are lost (the store
    /// must be the default crash-simulating one).
    pub fn crash_ds(&self, id: u16) {
        self.kill_ds(id);
        self.ds_crashsim(id)
            .expect("crash_ds needs a crash-simulating store")
            .crash();
    }

    /// Starts data server `id` again (killing it first if it runs): a new boot over the
    /// same objects. The MDS registers it again on its own ([`Cluster::until_up`]).
    pub fn restart_ds(&self, id: u16) {
        self.node_mut(id, DsNode::start);
    }

    /// Replaces data server `id` with a new one under the same id: killed, given an empty
    /// crash-simulating store (another identity: its disk replaced), started. Its objects
    /// are gone; the MDS learns it from the store's identity when it registers.
    pub fn replace_ds(&self, id: u16) {
        self.node_mut(id, |n| {
            n.kill();
            let sim = Arc::new(CrashSimStore::new());
            n.store = DsStore {
                objects: sim.clone(),
                crashsim: Some(sim),
            };
            n.start();
        });
    }

    /// [`Cluster::restart_ds`] with its NFS service at `addr` (its configuration changed: it
    /// registers from there, and the MDS tells clients the new address).
    pub fn restart_ds_at(&self, id: u16, addr: SocketAddr) {
        self.node_mut(id, |n| {
            n.addr = addr;
            n.start();
        });
    }

    /// Whether data server `id` runs.
    pub fn ds_running(&self, id: u16) -> bool {
        self.node(id, DsNode::is_running).unwrap_or(false)
    }

    /// Waits (up to 10 s) until the MDS has data server `id` registered and up, with a
    /// running NFS service.
    pub async fn until_up(&self, id: u16) {
        self.until(&format!("data server {id} up"), || {
            self.mds().devices().status(id).is_some_and(|s| s.up) && self.data_server(id).is_some()
        })
        .await;
    }

    /// Waits (up to 10 s) until the MDS sees data server `id` down.
    pub async fn until_down(&self, id: u16) {
        self.until(&format!("data server {id} down"), || {
            self.mds().devices().status(id).is_some_and(|s| !s.up)
        })
        .await;
    }

    /// Waits (up to 10 s of the runtime's clock) until `f` holds, panicking with `what`.
    pub async fn until(&self, what: &str, mut f: impl FnMut() -> bool) {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        while !f() {
            assert!(tokio::time::Instant::now() < deadline, "timed out: {what}");
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }

    fn node<T>(&self, id: u16, f: impl FnOnce(&DsNode) -> T) -> Option<T> {
        ds::lock(&self.nodes).iter().find(|n| n.id == id).map(f)
    }

    fn node_mut(&self, id: u16, f: impl FnOnce(&mut DsNode)) {
        let mut nodes = ds::lock(&self.nodes);
        f(nodes
            .iter_mut()
            .find(|n| n.id == id)
            .expect("no such data server"));
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        self.mds_tasks.abort_all();
        for n in ds::lock(&self.nodes).iter_mut() {
            n.kill();
        }
    }
}

/// Moves `clock` on by `d`, then lets the server's tasks it woke (the lease reaper, the
/// recall deadlines) run before the test goes on: they were woken first, so a few turns of
/// the test's runtime run them.
pub async fn advance(clock: &ManualClock, d: Duration) {
    clock.advance(d);
    for _ in 0..8 {
        tokio::task::yield_now().await;
    }
}

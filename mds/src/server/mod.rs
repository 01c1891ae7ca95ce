//! The server: what it holds (three subsystem handles: [`namespace`], [`tables`],
//! [`pnfs`]), the RPC entry point, and the TCP listener.

pub mod namespace;
pub mod pnfs;
pub mod tables;

pub use namespace::Namespace;
pub use pnfs::{Pnfs, RingBook};
pub use tables::StateTables;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Weak};
use std::time::Duration;

use bytes::Bytes;
use cluster::keys::DsKeys;
use nfs_proto::nfs4::{
    NfsStat4, Nfstime4, ServerOwner4, EXCHGID4_FLAG_USE_NON_PNFS, EXCHGID4_FLAG_USE_PNFS_MDS,
};
use nfs_proto::transport::ConnLimits;
use nfs_server::clock::SharedClock;
use nfs_server::state::session::SessionLimits;
use nfs_server::{Core, CoreConfig, Identity};
use pfs_core::{LocalStore, ObjectStore};
use tokio::net::TcpListener;

use crate::compound::exports::Exports;
use crate::config::Config;
use crate::state::layout::LayoutTable;
use crate::state::open::StateTable;
use crate::state::stateid::StateidMinter;
use crate::store::{nfstime, CreateSpec, Inode, NewObject, Store, StoreError, StoreOptions};

/// Why the server could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// The data directory could not be made.
    #[error("data directory {0}: {1}")]
    DataDir(PathBuf, std::io::Error),
    /// The metadata store could not be opened.
    #[error("metadata store: {0}")]
    Store(#[from] crate::store::StoreError),
    /// The object store could not be opened.
    #[error("object store: {0}")]
    Objects(#[from] pfs_core::StoreError),
    /// The exports do not fit together, or an exported directory could not be made.
    #[error("{0}")]
    Exports(String),
    /// The cluster section (its secret) could not be used.
    #[error("{0}")]
    Cluster(#[from] crate::config::ConfigError),
    /// The listening socket could not be bound.
    #[error("listen on {0}: {1}")]
    Listen(SocketAddr, std::io::Error),
}

/// The metadata server: its configuration, the session layer, and three subsystem handles.
///
/// Why handles and no public fields: each service takes only the part it works on (a
/// [`Namespace`], the [`StateTables`], the [`Pnfs`] side, the session layer's [`Core`]), so
/// what a module can touch is visible in its signature, and the server's parts can be
/// rearranged behind the accessors. The accessors named after the parts ([`Mds::store`],
/// [`Mds::devices`], ..) reach through the handles for the operations layer and the tests.
///
/// Why each handle is an `Arc`: the background tasks ([`Mds::start_tasks`]) and the work
/// spawned for a request (recalls, size hints) hold the handles they use, not the server.
/// The tasks hold them as `Weak`s and upgrade them only while they work (between rounds
/// they hold no strong handle), so that dropping the `Mds` still ends them.
pub struct Mds {
    // Declared in the order the parts were dropped in before they were grouped (the store
    // closes before the session layer and the device registry go).
    /// Configuration.
    cfg: Config,
    /// Names, attributes, file data, exports.
    ns: Arc<Namespace>,
    /// Opens, locks, delegations, layouts, copies.
    tables: Arc<StateTables>,
    /// The shared session layer: clients, sessions, leases, grace, counters.
    core: Arc<Core>,
    /// The data servers and the tasks that keep them in step.
    pnfs: Arc<Pnfs>,
}

/// Where the MDS keeps its metadata store.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum MetadataStore {
    /// In redb at `<data_dir>/metadata.redb` (production; survives a restart).
    #[default]
    Redb,
    /// In memory (tests): nothing on disk, gone with the server.
    InMemory,
}

/// How the MDS is built beyond its configuration: the parts the test kit's in-memory
/// cluster swaps. The default is what [`Mds::open`] builds.
#[derive(Default)]
pub struct MdsOptions {
    /// Where the metadata lives.
    pub metadata: MetadataStore,
    /// The object store of files without a stripe set; `None`: the `local` backend under
    /// `<data_dir>/data`.
    pub objects: Option<Arc<dyn ObjectStore>>,
    /// How the device registry reaches the data servers; `None`: TCP.
    pub connector: Option<Arc<dyn crate::pnfs::dsconnect::DsConnector>>,
    /// Timing of the device registry.
    pub devices: crate::pnfs::devices::DevicesOptions,
    /// The server's one source of time; `None`: the system's.
    pub clock: Option<SharedClock>,
}

impl std::fmt::Debug for MdsOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MdsOptions")
            .field("metadata", &self.metadata)
            .field("objects", &self.objects.is_some())
            .field("connector", &self.connector.is_some())
            .field("devices", &self.devices)
            .field("clock", &self.clock.is_some())
            .finish()
    }
}

impl Mds {
    /// Opens the stores under `cfg.data_dir` and builds the server state, on the system's
    /// clock.
    pub fn open(cfg: Config) -> Result<Arc<Self>, StartError> {
        Self::open_with(cfg, MdsOptions::default())
    }

    /// [`Mds::open`] on `clock`: the server's one source of time (leases, grace, recall
    /// deadlines and revocation, the reapers' periods, the times stored in the metadata).
    /// Tests pass a [`ManualClock`](nfs_server::ManualClock) and move it on instead of
    /// sleeping.
    pub fn open_on(cfg: Config, clock: SharedClock) -> Result<Arc<Self>, StartError> {
        Self::open_with(
            cfg,
            MdsOptions {
                clock: Some(clock),
                ..MdsOptions::default()
            },
        )
    }

    /// [`Mds::open`] with the parts `opts` names swapped. The data directory is made only
    /// when something is kept in it.
    pub fn open_with(cfg: Config, opts: MdsOptions) -> Result<Arc<Self>, StartError> {
        let clock = opts.clock.clone().unwrap_or_else(nfs_server::clock::system);
        let started = nfstime(clock.wall());
        if opts.metadata == MetadataStore::Redb || opts.objects.is_none() {
            std::fs::create_dir_all(&cfg.data_dir)
                .map_err(|e| StartError::DataDir(cfg.data_dir.clone(), e))?;
        }
        let store = match opts.metadata {
            MetadataStore::Redb => Store::open(
                cfg.data_dir.join("metadata.redb"),
                &StoreOptions::default(),
                started,
            )?,
            MetadataStore::InMemory => Store::open_in_memory(&StoreOptions::default(), started)?,
        };
        let data: Arc<dyn ObjectStore> = match opts.objects {
            Some(objects) => objects,
            None => Arc::new(LocalStore::open(cfg.data_dir.join("data"))?),
        };
        let exports = Exports::new(&cfg.exports).map_err(|e| StartError::Exports(e.to_string()))?;
        let export_roots = make_export_dirs(&store, &exports, started)?;
        let dir_layouts =
            crate::pnfs::dirlayout::DirLayouts::resolve(&store, &cfg, &export_roots, started)?;
        let epoch = store.boot_epoch() as u16;
        let minter =
            StateidMinter::new(DsKeys::derive(store.server_key(), epoch).stateid_key, epoch);
        // One counter for every kind (the clone shares it): the data servers keep closed
        // stateids of any kind as runs of counters.
        let layout_minter = minter.clone();
        let core = Core::new(core_config(&cfg, &store), clock.clone());
        let secret = if cfg.cluster.data_servers.is_empty() {
            None
        } else {
            Some(cfg.cluster.load_secret(&cfg.data_dir)?)
        };
        let ring_generation = if cfg.cluster.data_servers.is_empty() {
            0
        } else {
            let pending = store.adopt_ring(cfg.cluster.ring_order());
            std::thread::scope(|s| s.spawn(|| pending.wait()).join())
                .map_err(|_| StoreError::Internal("ring thread"))??
        };
        let rings = Arc::new(store.rings()?);
        let settler = crate::pnfs::settle::Settler::load(store.layout_writes()?);
        let mirrors = crate::pnfs::mirrors::Mirrors::load(store.stale_copies()?);
        let devices = crate::pnfs::devices::Devices::with_connector(
            cfg.cluster.clone(),
            secret.as_ref().map(|s| s.as_bytes()),
            DsKeys::derive(store.server_key(), epoch),
            cfg.lease_time,
            opts.devices,
            clock.clone(),
            opts.connector
                .unwrap_or_else(|| Arc::new(crate::pnfs::dsconnect::TcpConnector)),
        );
        let copies =
            crate::state::copies::Copies::new(store.server_key(), epoch, core.clock().clone());
        let store_check = (
            store.clone(),
            rings.clone(),
            cfg.exports
                .first()
                .map_or(crate::store::DEFAULT_EXPORT, |e| e.id),
        );
        let mds = Arc::new(Self {
            pnfs: Arc::new(Pnfs::new(
                devices,
                rings,
                cfg.cluster.clone(),
                ring_generation,
                settler,
                mirrors,
            )),
            tables: Arc::new(StateTables::new(
                StateTable::new(minter),
                LayoutTable::new(layout_minter),
                copies,
                recall_timeout(&cfg),
            )),
            core: Arc::new(core),
            cfg,
            ns: Arc::new(Namespace::new(
                store,
                data,
                exports,
                export_roots,
                dir_layouts,
                started,
            )),
        });
        let (store, rings, export) = store_check;
        mds.pnfs
            .devices()
            .on_store(crate::pnfs::replaced::store_check(
                store,
                rings,
                Arc::downgrade(&mds.pnfs),
                export,
            ));
        Ok(mds)
    }

    /// The server's clock ([`Core::clock`]).
    pub fn clock(&self) -> &SharedClock {
        self.core.clock()
    }

    /// The wall-clock time now on the server's clock, as the store keeps times.
    pub fn wall_time(&self) -> Nfstime4 {
        nfstime(self.core.clock().wall())
    }

    /// The configuration.
    pub fn cfg(&self) -> &Config {
        &self.cfg
    }

    /// The shared session layer.
    pub fn core(&self) -> &Arc<Core> {
        &self.core
    }

    /// The namespace handle.
    pub fn namespace(&self) -> &Arc<Namespace> {
        &self.ns
    }

    /// The state tables handle.
    pub fn tables(&self) -> &Arc<StateTables> {
        &self.tables
    }

    /// The pNFS handle.
    pub fn pnfs(&self) -> &Arc<Pnfs> {
        &self.pnfs
    }

    /// The server's handles held weakly, to tell when every one is gone: the server
    /// dropped, and no task or request still holding a part of it (the test kit waits for
    /// that before it opens the metadata store again).
    pub fn downgrade(&self) -> MdsGone {
        MdsGone {
            ns: Arc::downgrade(&self.ns),
            tables: Arc::downgrade(&self.tables),
            core: Arc::downgrade(&self.core),
            pnfs: Arc::downgrade(&self.pnfs),
        }
    }

    /// [`Namespace::store`].
    pub fn store(&self) -> &Store {
        self.ns.store()
    }

    /// [`Namespace::data`].
    pub fn data(&self) -> &Arc<dyn ObjectStore> {
        self.ns.data()
    }

    /// [`Namespace::exports`].
    pub fn exports(&self) -> &Exports {
        self.ns.exports()
    }

    /// [`StateTables::copies`].
    pub fn copies(&self) -> &Arc<crate::state::copies::Copies> {
        self.tables.copies()
    }

    /// [`Pnfs::devices`].
    pub fn devices(&self) -> &crate::pnfs::devices::Devices {
        self.pnfs.devices()
    }

    /// [`Pnfs::fencing`].
    pub fn fencing(&self) -> &crate::pnfs::fencing::Fencing {
        self.pnfs.fencing()
    }

    /// [`Pnfs::device_watch`].
    pub fn device_watch(&self) -> &crate::pnfs::notify::DeviceWatch {
        self.pnfs.device_watch()
    }

    /// [`Pnfs::ring`].
    pub fn ring(&self, generation: u32) -> Option<layouts::Ring> {
        self.pnfs.ring(generation)
    }

    /// [`Pnfs::device_ring`].
    pub fn device_ring(&self, generation: u32) -> Option<layouts::Ring> {
        self.pnfs.device_ring(generation)
    }

    /// [`Pnfs::ring_book`].
    pub fn ring_book(&self) -> RingBook {
        self.pnfs.ring_book()
    }

    /// Whether OPEN may grant delegations of files in `export` (`delegations`, overridden by
    /// the export's own `delegations`).
    pub fn delegations_enabled(&self, export: u16) -> bool {
        self.cfg
            .exports
            .iter()
            .find(|e| e.id == export)
            .and_then(|e| e.delegations)
            .unwrap_or(self.cfg.delegations)
    }

    /// [`Pnfs::stripe_servers`].
    pub fn stripe_servers(&self, set: &crate::store::StripeSet) -> Result<Vec<u16>, NfsStat4> {
        self.pnfs.stripe_servers(set)
    }

    /// [`Namespace::export_root`].
    pub fn export_root(&self, id: u16) -> Result<Inode, NfsStat4> {
        self.ns.export_root(id)
    }

    /// [`Namespace::export_root_fileid`].
    pub fn export_root_fileid(&self, id: u16) -> Option<u64> {
        self.ns.export_root_fileid(id)
    }

    /// [`Namespace::pseudo_inode`].
    pub fn pseudo_inode(&self, fileid: u64) -> Option<Inode> {
        self.ns.pseudo_inode(fileid)
    }

    /// Binds the configured address and serves until the process ends.
    pub async fn serve(self: Arc<Self>) -> Result<(), StartError> {
        let addr = self.cfg.listen;
        let listener = TcpListener::bind(addr)
            .await
            .map_err(|e| StartError::Listen(addr, e))?;
        self.serve_on(listener).await;
        Ok(())
    }

    /// Serves connections accepted on `listener` (and expires leases) for as long as the
    /// task runs. Starts the task that removes deleted files' objects from the data servers
    /// ([`crate::pnfs::removals`]), whose first pass sends what earlier boots left queued, the
    /// revocation and recall tasks ([`crate::pnfs::fencing`]), the task that settles the sizes of
    /// files written through layouts ([`crate::pnfs::settle`]), and the one that tells clients of
    /// devices whose data servers moved ([`crate::pnfs::notify`]).
    pub async fn serve_on(self: Arc<Self>, listener: TcpListener) {
        self.start_tasks();
        nfs_server::serve_on(self, listener).await;
    }

    /// Starts the tasks [`Mds::serve_on`] runs beside the connections, for a server whose
    /// connections come another way ([`nfs_server::StreamServer`]: the test kit's
    /// in-memory cluster). Call it once. Each task gets the handles it works on, as
    /// `Weak`s: dropping the server ends them.
    pub fn start_tasks(&self) {
        crate::pnfs::removals::Removals::start(&self.ns, &self.pnfs);
        crate::pnfs::fencing::Fencing::start(
            crate::pnfs::fencing::FencingParts::new(&self.ns, &self.tables, &self.core, &self.pnfs),
            self.cfg.lease_time,
        );
        crate::pnfs::settle::Settler::start(&self.ns, &self.tables, &self.pnfs, self.clock());
        crate::pnfs::notify::DeviceWatch::start(&self.core, &self.pnfs);
        crate::pnfs::mirrors::Mirrors::start(&self.ns, &self.tables, &self.core, &self.pnfs);
    }
}

/// The server's handles, held weakly: [`Mds::downgrade`].
#[derive(Clone, Debug)]
pub struct MdsGone {
    ns: Weak<Namespace>,
    tables: Weak<StateTables>,
    core: Weak<Core>,
    pnfs: Weak<Pnfs>,
}

impl MdsGone {
    /// Whether no strong handle of any part is left.
    pub fn is_gone(&self) -> bool {
        self.ns.strong_count() == 0
            && self.tables.strong_count() == 0
            && self.core.strong_count() == 0
            && self.pnfs.strong_count() == 0
    }
}

/// How long a holder has to return a recalled delegation or layout: one lease (RFC 8881
/// sections 10.4.6 and 12.5.5.1 let the server revoke after that; knfsd waits a lease too).
fn recall_timeout(cfg: &Config) -> Duration {
    Duration::from_secs(u64::from(cfg.lease_time.max(1)))
}

/// The session layer's settings from the configuration and the store: limits from
/// `config.limits`, the lease and grace times, the owners that may reclaim, this boot's
/// epoch, and the identity.
///
/// The role flag is `EXCHGID4_FLAG_USE_PNFS_MDS` when the MDS hands out layouts
/// (`cluster.layouts` with data servers, [`crate::config::ClusterConfig::grants_layouts`]),
/// else `EXCHGID4_FLAG_USE_NON_PNFS`; never both: the Linux client refuses a reply with both
/// (`nfs4_check_cl_exchange_flags`), and it loads a layout driver with either
/// (`set_pnfs_layoutdriver`).
fn core_config(cfg: &Config, store: &Store) -> CoreConfig {
    let l = &cfg.limits;
    let limits = SessionLimits {
        max_request_size: l.max_record,
        max_response_size: l.max_record,
        max_operations: l.max_ops,
        max_requests: l.max_slots,
        max_sessions: l.max_sessions,
        ..SessionLimits::default()
    };
    CoreConfig {
        roles: if cfg.cluster.grants_layouts() {
            EXCHGID4_FLAG_USE_PNFS_MDS
        } else {
            EXCHGID4_FLAG_USE_NON_PNFS
        },
        lease_time: Duration::from_secs(cfg.lease_time.into()),
        grace_time: Duration::from_secs(cfg.grace_time.into()),
        previous_owners: store
            .previous_clients()
            .iter()
            .map(|c| c.owner.clone())
            .collect(),
        boot_epoch: store.boot_epoch() as u16,
        session_key: *store.server_key(),
        limits,
        max_clients: l.max_clients,
        conn_limits: ConnLimits {
            max_fragment: l.max_record as usize,
            max_record: l.max_record as usize,
            max_in_flight: l.max_slots as usize * 2,
        },
        serve_limits: l.serve_limits(1),
        identity: Identity {
            // One server instance: the major id names it; clients trunk only with the same
            // one (see [`Identity`]). Derived from the server key, never a piece of it (the
            // key signs filehandles and is the root the DS keys derive from), and stable
            // across restarts like the key.
            owner: ServerOwner4 {
                so_minor_id: 0,
                so_major_id: Bytes::copy_from_slice(
                    &blake3::derive_key(MDS_OWNER_CONTEXT, store.server_key())[..16],
                ),
            },
            scope: Bytes::from_static(b"pnfs-rs"),
        },
    }
}

/// Context string of the MDS's `so_major_id` derivation (BLAKE3 `derive_key`): fixed forever.
const MDS_OWNER_CONTEXT: &str = "pnfs-rs 2026 MDS server owner";

/// A path component [`mkdir_p`] could not look up or make: the path up to it, and why.
#[derive(Debug, thiserror::Error)]
#[error("{at}: {error}")]
pub(crate) struct MkdirError {
    /// The path from the starting directory up to the failing component (`/a/b`).
    pub(crate) at: String,
    /// Why.
    pub(crate) error: StoreError,
}

/// Looks up `names` one by one from directory `parent`, making each missing one (a
/// directory, mode 0755, owned by root), like `mkdir -p`, and returns the last one's file id.
/// A component that exists but is not a directory is `StoreError::NotDir`. Runs the store's
/// commits from a plain thread: the server may be opened from inside an async runtime, where
/// blocking on a commit is not allowed.
pub(crate) fn mkdir_p(
    store: &Store,
    parent: u64,
    names: &[String],
    now: Nfstime4,
) -> Result<u64, MkdirError> {
    let mut at = parent;
    for (k, name) in names.iter().enumerate() {
        let fail = |error| MkdirError {
            at: format!("/{}", names[..=k].join("/")),
            error,
        };
        at = match store.lookup(at, name.as_bytes()) {
            Ok(i) if i.is_dir() => i.fileid,
            Ok(_) => return Err(fail(StoreError::NotDir)),
            Err(StoreError::NoEnt) => {
                let spec = CreateSpec {
                    object: NewObject::Directory,
                    mode: 0o755,
                    uid: 0,
                    gid: 0,
                };
                let pending = store.create(at, name.as_bytes(), spec, now);
                let made = std::thread::scope(|s| s.spawn(|| pending.wait()).join())
                    .map_err(|_| fail(StoreError::Internal("mkdir thread")))?
                    .map_err(fail)?;
                if !made.inode.is_dir() {
                    // Another creator's object of the name (not at start, but the helper
                    // is general).
                    return Err(fail(StoreError::NotDir));
                }
                made.inode.fileid
            }
            Err(e) => return Err(fail(e)),
        };
    }
    Ok(at)
}

/// Resolves every export's directory in the namespace, making missing ones (and the
/// directories that junctions of other exports are grafted on, so that READDIR of the
/// covering export lists them), with [`mkdir_p`].
fn make_export_dirs(
    store: &Store,
    exports: &Exports,
    now: Nfstime4,
) -> Result<HashMap<u16, u64>, StartError> {
    let root = store.root()?.fileid;
    let mut roots = HashMap::new();
    for e in exports.all() {
        let fileid = mkdir_p(store, root, &e.path, now).map_err(|err| {
            StartError::Exports(format!("export {} path /{}: {err}", e.id, e.path.join("/")))
        })?;
        roots.insert(e.id, fileid);
    }
    for e in exports.all() {
        for (name, _) in exports.junctions(e.id) {
            mkdir_p(store, roots[&e.id], &[name.to_owned()], now).map_err(|err| {
                StartError::Exports(format!("junction {name} in export {}: {err}", e.id))
            })?;
        }
    }
    Ok(roots)
}

//! The cluster's data servers: each a control service and (once the MDS registered it) an NFS
//! service, served over in-process streams, over an object store that outlives it (so a
//! restart finds its objects, and a crash-simulating store can lose what was not synced).
//! Also the MDS's connector, which reaches their control services the same way.

use std::io;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use data_server::control::{
    stream_server, ControlConfig, ControlService, DsTarget, StartOnRegister,
};
use data_server::{DataServer, DsOptions};
use mds::pnfs::dsconnect::{ConnectFuture, Connected, DsConnector};
use nfs_proto::control::{ClusterKey, CtlBackend};
use nfs_server::{ServeLimits, Service, SharedClock, StreamServer};
use pfs_core::{CrashSimStore, ObjectStore};
use tokio::io::DuplexStream;

use super::link::{self, Tasks};

/// The cluster secret.
pub const SECRET: [u8; 32] = *b"testkit cluster secret, 32 bytes";

/// One data server's object store, kept across its restarts.
pub(crate) struct DsStore {
    pub(crate) objects: Arc<dyn ObjectStore>,
    /// The same store when it simulates crashes.
    pub(crate) crashsim: Option<Arc<CrashSimStore>>,
}

/// A running data server: what dies with it.
struct Running {
    service: Arc<ControlService>,
    control: StreamServer<ControlService>,
    start: Arc<StartOnRegister>,
    /// Its NFS service, made when the MDS first registers it.
    nfs: Arc<Mutex<Option<StreamServer<Service<DataServer>>>>>,
    /// Its connections.
    tasks: Tasks,
}

/// A data server slot: its id, store and, while it runs, the server.
pub(crate) struct DsNode {
    pub(crate) id: u16,
    /// Where it serves NFS (what it tells the MDS at REGISTER): [`link::ds_nfs_addr`] unless
    /// it was restarted elsewhere.
    pub(crate) addr: SocketAddr,
    pub(crate) store: DsStore,
    lease: Duration,
    /// The clock it runs on (the cluster's, so that the MDS and the data servers agree).
    clock: SharedClock,
    running: Option<Running>,
}

impl DsNode {
    /// Data server `id` over `store`, with the MDS's lease and clock, not started.
    pub(crate) fn new(id: u16, store: DsStore, lease: Duration, clock: SharedClock) -> Self {
        Self {
            id,
            addr: link::ds_nfs_addr(id),
            store,
            lease,
            clock,
            running: None,
        }
    }

    /// Starts it (a new process: new boot verifier and nonce, no sessions, no keys until
    /// the MDS registers it). Needs a tokio runtime.
    pub(crate) fn start(&mut self) {
        self.kill();
        let mut opts = DsOptions::new(u32::from(self.id));
        opts.lease_time = self.lease;
        let nfs = Arc::new(Mutex::new(None));
        let slot = nfs.clone();
        let start = Arc::new(
            StartOnRegister::new(opts, self.store.objects.clone(), move |ds| {
                *slot.lock().unwrap_or_else(PoisonError::into_inner) =
                    Some(StreamServer::for_role(ds));
            })
            .with_clock(self.clock.clone()),
        );
        let service = Arc::new(
            ControlService::on_clock(
                ControlConfig {
                    ds_id: u32::from(self.id),
                    lease_time: self.lease,
                    backend: CtlBackend::CTL_BACKEND_LOCAL,
                    addresses: vec![self.addr],
                    rdma_addresses: vec![],
                },
                self.store.objects.clone(),
                start.clone() as Arc<dyn DsTarget>,
                ClusterKey::from_secret(&SECRET),
                self.clock.clone(),
            )
            .expect("control service"),
        );
        self.running = Some(Running {
            control: stream_server(service.clone(), ServeLimits::default()),
            service,
            start,
            nfs,
            tasks: Tasks::default(),
        });
    }

    /// Kills it: every connection closes at both ends, its tasks end; the store stays.
    pub(crate) fn kill(&mut self) {
        if let Some(r) = self.running.take() {
            r.tasks.abort_all();
        }
    }

    /// Whether it runs.
    pub(crate) fn is_running(&self) -> bool {
        self.running.is_some()
    }

    /// The NFS server, once the MDS registered this data server.
    pub(crate) fn data_server(&self) -> Option<Arc<DataServer>> {
        self.running.as_ref()?.start.data_server()
    }

    /// The control service, while it runs.
    pub(crate) fn control_service(&self) -> Option<Arc<ControlService>> {
        Some(self.running.as_ref()?.service.clone())
    }

    /// A connection to its NFS service from `peer`.
    pub(crate) fn connect_nfs(&self, peer: SocketAddr) -> io::Result<DuplexStream> {
        let refused = || io::Error::from(io::ErrorKind::ConnectionRefused);
        let r = self.running.as_ref().ok_or_else(refused)?;
        let nfs = r.nfs.lock().unwrap_or_else(PoisonError::into_inner);
        let server = nfs.as_ref().ok_or_else(refused)?;
        let (client, end, relay) = link::pipe();
        r.tasks.add(relay);
        r.tasks
            .add(tokio::spawn(server.serve(end, peer, self.addr)).abort_handle());
        Ok(client)
    }

    /// A connection to its control service from `peer`.
    pub(crate) fn connect_control(&self, peer: SocketAddr) -> io::Result<DuplexStream> {
        let r = self
            .running
            .as_ref()
            .ok_or_else(|| io::Error::from(io::ErrorKind::ConnectionRefused))?;
        let (client, end, relay) = link::pipe();
        r.tasks.add(relay);
        r.tasks.add(
            tokio::spawn(r.control.serve(end, peer, link::ds_control_addr(self.id))).abort_handle(),
        );
        Ok(client)
    }
}

/// The data servers, shared by the cluster and the MDS's connector.
pub(crate) type Nodes = Arc<Mutex<Vec<DsNode>>>;

/// Locks the data servers (a panicking test leaves them usable).
pub(crate) fn lock(nodes: &Nodes) -> std::sync::MutexGuard<'_, Vec<DsNode>> {
    nodes.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The MDS's way to the data servers' control services: an in-process connection to the
/// data server with that id and control address, refused while it is dead.
pub(crate) struct Connector(pub(crate) Nodes);

impl DsConnector for Connector {
    fn connect(&self, addr: SocketAddr, ds_id: u16) -> ConnectFuture<'_> {
        let local = link::mds_client_addr();
        let stream = lock(&self.0)
            .iter()
            .find(|n| n.id == ds_id && link::ds_control_addr(n.id) == addr)
            .ok_or_else(|| io::Error::from(io::ErrorKind::ConnectionRefused))
            .and_then(|n| n.connect_control(local));
        Box::pin(async move {
            Ok(Connected {
                stream: Box::new(stream?),
                local,
            })
        })
    }
}

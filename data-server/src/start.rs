//! One data server of the cluster's configuration file, from the file to a running server
//! (`pnfs ds --id N`, and each in-process data server of `pnfs server`):
//!
//! ```text
//!  cluster::Config ─> its entry in cluster.data_servers (by id)
//!    ├─> object store (backend local | null | shared)
//!    ├─> bind the NFS listener and the control listener (a busy port fails here, at start)
//!    └─> control service (the cluster secret) ─ first REGISTER from the MDS (its keys)
//!          └─> DataServer serving NFS on the bound listener
//! ```
//!
//! The data server checks nothing before the MDS hands it its keys, so its NFS service starts
//! on the MDS's first REGISTER ([`StartOnRegister`]).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use cluster::config::{Backend, Config, ConfigError};
use nfs_proto::control::{ClusterKey, CtlBackend};
use pfs_core::ObjectStore;

use crate::control::{serve_with, ControlConfig, ControlService, StartOnRegister};
use crate::server::{DsError, DsOptions};

/// Why data server `id` of a configuration could not start. The configuration's errors name
/// the field (`cluster.data_servers[id=N].field`).
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// No entry of `cluster.data_servers` has this id.
    #[error("bad configuration: cluster.data_servers has no data server with id {0}")]
    NoSuchServer(u16),
    /// The cluster secret could not be read (or generated).
    #[error("bad configuration: {0}")]
    Secret(#[from] ConfigError),
    /// The entry has no control address and none can be derived.
    #[error("bad configuration: {0}: no control address (set it)")]
    NoControlAddress(String),
    /// `backend: shared` without `shared_dir`.
    #[error("bad configuration: {0}: required by backend: shared")]
    NoSharedDir(String),
    /// The object store could not be opened at `path` (the configuration's `field`).
    #[error("{field} {}: {source}", path.display())]
    Objects {
        /// The configuration field naming the directory.
        field: String,
        /// The directory.
        path: PathBuf,
        /// What the store said.
        source: pfs_core::StoreError,
    },
    /// A listener could not be bound (`what`: which one, of which data server).
    #[error("{what}: listening on {addr}: {source}")]
    Listen {
        /// `data server N` or `data server N: control service`.
        what: String,
        /// The address.
        addr: SocketAddr,
        /// What the kernel said.
        source: std::io::Error,
    },
    /// The control service could not be made.
    #[error("data server {id}: control service: {source}")]
    Control {
        /// The data server's id.
        id: u16,
        /// Why.
        source: DsError,
    },
}

/// What a started data server serves besides TCP.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Started {
    /// NFS over RDMA: the address it listens on, or why it does not (turned off in the
    /// configuration, no RDMA device with that address, a build without rdma-core).
    pub rdma: Result<SocketAddr, String>,
}

/// Starts data server `id` of `cfg` on the current tokio runtime: its control service on its
/// `control_listen` address now, and its NFS service on its `listen` address (and on its
/// `rdma_listen` address when an RDMA device has it) once the MDS registers. The sockets are
/// bound before this returns, so a busy port is reported at start; RDMA that cannot listen
/// is not an error (the data server is then not told to clients as reachable over RDMA).
/// `cfg.limits.max_connections` is the cap of each of its two TCP listeners (the caller
/// resolves a `null` one against its process's descriptor limit first).
pub async fn start(cfg: &Config, id: u16) -> Result<Started, StartError> {
    let d = cfg
        .cluster
        .data_server(id)
        .ok_or(StartError::NoSuchServer(id))?;
    let field = |f: &str| format!("cluster.data_servers[id={id}].{f}");
    let secret = cfg.cluster.load_secret(&cfg.data_dir)?;
    let control_addr = d
        .control_listen_addr()
        .ok_or_else(|| StartError::NoControlAddress(field("control_listen")))?;
    let dir = d.data_dir_in(&cfg.data_dir);
    let opened = |f: &str, path: &std::path::Path| {
        let field = field(f);
        let path = path.to_path_buf();
        move |source| StartError::Objects {
            field,
            path,
            source,
        }
    };
    let (objects, backend): (Arc<dyn ObjectStore>, CtlBackend) = match d.backend {
        Backend::Local => (
            Arc::new(pfs_core::LocalStore::open(&dir).map_err(opened("data_dir", &dir))?),
            CtlBackend::CTL_BACKEND_LOCAL,
        ),
        Backend::Null => (
            Arc::new(pfs_core::NullStore::new()),
            CtlBackend::CTL_BACKEND_NULL,
        ),
        Backend::Shared => {
            let shared = d
                .shared_dir
                .as_ref()
                .ok_or_else(|| StartError::NoSharedDir(field("shared_dir")))?;
            (
                Arc::new(
                    pfs_core::SharedStore::open(shared).map_err(opened("shared_dir", shared))?,
                ),
                CtlBackend::CTL_BACKEND_SHARED,
            )
        }
    };
    let nfs_addr = d.listen_addr();
    let nfs = tokio::net::TcpListener::bind(nfs_addr)
        .await
        .map_err(|source| StartError::Listen {
            what: format!("data server {id}"),
            addr: nfs_addr,
            source,
        })?;
    let control = tokio::net::TcpListener::bind(control_addr)
        .await
        .map_err(|source| StartError::Listen {
            what: format!("data server {id}: control service"),
            addr: control_addr,
            source,
        })?;
    let rdma = match d.rdma_listen_addr() {
        None => Err("rdma_listen: null".to_string()),
        Some(addr) => {
            rdma::Listener::bind(addr, rdma_config(cfg)).map_err(|e| format!("{addr}: {e}"))
        }
    };
    let rdma_addresses = match &rdma {
        Ok(_) => d.rdma_addresses(),
        Err(why) => {
            tracing::info!(ds = id, "NFS over RDMA off: {why}");
            Vec::new()
        }
    };
    let started = Started {
        rdma: rdma.as_ref().map(|l| l.local_addr()).map_err(Clone::clone),
    };
    let lease = Duration::from_secs(u64::from(cfg.lease_time));
    let mut opts = DsOptions::new(u32::from(id));
    opts.lease_time = lease;
    opts.max_record = cfg.limits.max_record;
    opts.max_io = cfg.limits.max_io;
    opts.max_ops = cfg.limits.max_ops;
    opts.max_slots = cfg.limits.max_slots;
    opts.max_clients = cfg.limits.max_clients;
    opts.max_sessions = cfg.limits.max_sessions;
    opts.serve = cfg.limits.serve_limits(1);
    // Sparse packing over one shared file per file: each object is the whole file.
    opts.whole_file_objects = d.backend == Backend::Shared;
    let control_limits = opts.serve;
    let nfs = Mutex::new(Some((nfs, rdma.ok())));
    let start = Arc::new(StartOnRegister::new(opts, objects.clone(), move |ds| {
        let listeners = nfs.lock().unwrap_or_else(PoisonError::into_inner).take();
        if let Some((tcp, rdma)) = listeners {
            tracing::info!(ds = id, addr = %nfs_addr, "data server registered: serving NFS");
            // (serve_on starts the lease reaper that serve_rdma's sessions share.)
            tokio::spawn(ds.clone().serve_on(tcp));
            if let Some(l) = rdma {
                tracing::info!(ds = id, addr = %l.local_addr(), "serving NFS over RDMA");
                tokio::spawn(nfs_server::serve_rdma(ds, l));
            }
        }
    }));
    let service = Arc::new(
        ControlService::new(
            ControlConfig {
                ds_id: u32::from(id),
                lease_time: lease,
                backend,
                addresses: d.addresses.clone(),
                rdma_addresses,
            },
            objects,
            start,
            ClusterKey::from_secret(secret.as_bytes()),
        )
        .map_err(|source| StartError::Control { id, source })?,
    );
    tracing::info!(ds = id, control = %control_addr, nfs = %nfs_addr, dir = %dir.display(), "data server waiting for the MDS");
    tokio::spawn(async move {
        if let Err(e) = serve_with(control, service, control_limits).await {
            tracing::error!(ds = id, "control service ended: {e}");
        }
    });
    Ok(started)
}

/// The RDMA listener's sizes from `cfg` (its `rdma` section and `limits.max_io`): the same for
/// the MDS and every data server.
pub fn rdma_config(cfg: &Config) -> rdma::Config {
    let defaults = rdma::Config::default();
    rdma::Config {
        credits: cfg.rdma.credits,
        inline: cfg.rdma.inline,
        // A whole READ's data fits one pooled buffer (read into it, RDMA-written from it).
        chunk_buffer: defaults
            .chunk_buffer
            .max(cfg.limits.max_io as usize + (16 << 10)),
        chunk_buffers_kept: cfg.rdma.chunk_buffers,
        ..defaults
    }
}

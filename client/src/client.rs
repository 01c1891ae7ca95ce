//! [`Client`]: a connection to one NFSv4.1 server (our MDS, or any other), and the namespace
//! operations. Paths are absolute from the server's root (`/export/dir/file` on a server with
//! a pseudo file system, `/dir/file` on ours).
//!
//! This file holds the client's connection and shared state; the namespace operations are in
//! `namespace`, opening files in `open`, options in `options`, counters in `stats`.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures::future::BoxFuture;
use nfs_proto::nfs4::*;
use nfs_proto::xdr::Utf8String;

use crate::attr::{self, Metadata};
use crate::callback::{CallbackService, CallbackSink};
use crate::deleg::{self, Local, OpenTable};
use crate::error::{Error, Result};
use crate::file::{File, OpenFile};
use crate::offload::Offloads;
use crate::ops::{self, components, parent_and_name, putfh};
use crate::pnfs::Pnfs;
use crate::rpc::Credentials;
use crate::session::{Endpoint, EndpointConfig, Role, StateRecovery};

mod attr_cache;
mod handles;
mod namespace;
mod open;
mod options;
mod stats;
mod xattrs;

pub(crate) use handles::{check_name, At};
pub use handles::{DirEntryPlus, DirPage, Node, Special};
pub use options::{ClientOptions, DirEntry, LockKind, OpenOptions};
pub(crate) use stats::Counters;
pub use stats::Stats;
pub use xattrs::{XattrSet, MAX_XATTR_NAME, MAX_XATTR_VALUE};

/// The shared state behind a [`Client`] and its open files.
pub(crate) struct Inner {
    pub mds: Arc<Endpoint>,
    pub opts: ClientOptions,
    /// The open-owner and lock-owner of this client.
    pub owner: Bytes,
    pub counters: Counters,
    pub pnfs: Option<Arc<Pnfs>>,
    /// Bounds READ/WRITE RPCs in flight to the MDS (I/O through the MDS).
    pub mds_slots: Arc<tokio::sync::Semaphore>,
    /// Open files, for reclaim after the server lost them and for flushing before a
    /// delegation goes back.
    opens: Mutex<HashMap<u64, Weak<OpenFile>>>,
    next_open: AtomicU64,
    /// Attribute cache: filehandle -> (attributes, when fetched).
    attrs: Mutex<attr_cache::AttrCache>,
    /// This client's opens on the server, one per file, with their delegations.
    pub files: Mutex<OpenTable>,
    /// Paths of files opened under a delegation -> (filehandle, when last resolved): a
    /// re-open of one within the attribute timeout needs no request at all.
    pub names: Mutex<deleg::names::Names>,
    /// Files created under a delegation, by directory handle and name
    /// ([`deleg::Entries`]): their removal gives the delegation back in the REMOVE's COMPOUND.
    pub entries: Mutex<deleg::Entries>,
    /// A TEST_STATEID check of delegations and layouts is running (SEQUENCE said some
    /// recallable state was revoked).
    pub checking_revoked: AtomicBool,
    /// Asynchronous copies waiting for their CB_OFFLOAD.
    pub offloads: Offloads,
    /// The server's `xattr_support`, once asked ([`Client::supports_xattrs`]).
    pub xattr_support: xattrs::XattrSupport,
    /// This client, for the tasks that callbacks start.
    pub me: Weak<Inner>,
    _callbacks: Arc<CallbackService>,
}

/// A client of one NFSv4.1 server. Cheap to clone (all clones share the session and state).
///
/// ```no_run
/// # async fn demo() -> client::Result<()> {
/// use client::{Client, OpenOptions};
/// let c = Client::connect("127.0.0.1:2049".parse().unwrap()).await?;
/// let f = c.open("/data/out.bin", &OpenOptions::create()).await?;
/// f.write_at(0, bytes::Bytes::from_static(b"hello")).await?;
/// f.close().await?; // flushes, COMMITs, LAYOUTCOMMITs, returns the layout
/// let g = c.open("/data/out.bin", &OpenOptions::read()).await?;
/// assert_eq!(&g.read_at(0, 5).await?[..], b"hello");
/// g.close().await?;
/// c.shutdown().await;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Client {
    pub(crate) inner: Arc<Inner>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Client({})", self.inner.mds.addr())
    }
}

/// A random-enough 64-bit value: the clock, the process and a per-process counter, mixed.
pub(crate) fn unique() -> u64 {
    static N: AtomicU64 = AtomicU64::new(0);
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    let mut x = t
        ^ (u64::from(std::process::id()) << 32)
        ^ N.fetch_add(1, Ordering::Relaxed)
            .wrapping_mul(0x9e37_79b9_7f4a_7c15);
    // splitmix64 finaliser
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

impl Client {
    /// Connects to the server at `addr` with default options.
    pub async fn connect(addr: SocketAddr) -> Result<Client> {
        Self::connect_with(addr, ClientOptions::default()).await
    }

    /// Connects with these options: EXCHANGE_ID, CREATE_SESSION with a back channel,
    /// RECLAIM_COMPLETE. Each `Client` is a client of its own to the server (its own owner
    /// string): two in one process conflict on locks as two hosts would.
    pub async fn connect_with(addr: SocketAddr, opts: ClientOptions) -> Result<Client> {
        let id = unique();
        let owner = Bytes::from(format!(
            "pnfs-rs/{}/{}/{id:016x}",
            crate::rpc::hostname(),
            std::process::id()
        ));
        let callbacks = Arc::new(CallbackService::default());
        let cfg = EndpointConfig {
            addr,
            owner: owner.clone(),
            verifier: unique().to_be_bytes(),
            cred: opts.credentials.to_auth(),
            role: Role::Mds,
            slots: opts.slots,
            max_message: opts.io_size.saturating_add(64 << 10),
            rpc_timeout: opts.rpc_timeout,
            retry_limit: opts.retry_limit,
            transport: crate::rpc::Transport::of(&opts, opts.io_size.saturating_add(64 << 10)),
        };
        let mds = Endpoint::connect(cfg, Some(callbacks.clone())).await?;
        // The MDS role flag is not enough: some servers set it and hand out no layouts
        // (nfs-ganesha's VFS export says USE_PNFS_MDS with an empty fs_layout_types).
        let layout_type = if opts.pnfs && mds.server_flags() & EXCHGID4_FLAG_USE_PNFS_MDS != 0 {
            root_layout_type(&mds).await
        } else {
            None
        };
        let inner = Arc::new_cyclic(|weak: &Weak<Inner>| Inner {
            pnfs: layout_type
                .map(|ty| Pnfs::new(mds.clone(), ty, &opts, owner.clone(), weak.clone())),
            mds: mds.clone(),
            mds_slots: Arc::new(tokio::sync::Semaphore::new(opts.ds_in_flight.max(1))),
            opts,
            owner,
            counters: Counters::default(),
            opens: Mutex::new(HashMap::new()),
            next_open: AtomicU64::new(1),
            attrs: Mutex::default(),
            files: Mutex::new(HashMap::new()),
            names: Mutex::default(),
            entries: Mutex::new(deleg::Entries::default()),
            checking_revoked: AtomicBool::new(false),
            offloads: Offloads::default(),
            xattr_support: xattrs::XattrSupport::new(),
            me: weak.clone(),
            _callbacks: callbacks.clone(),
        });
        let recovery: Weak<dyn StateRecovery> = Arc::downgrade(&inner) as Weak<dyn StateRecovery>;
        mds.set_recovery(recovery);
        let sink: Weak<dyn CallbackSink> = Arc::downgrade(&inner) as Weak<dyn CallbackSink>;
        callbacks.set_sink(sink);
        mds.reclaim_complete().await?;
        Ok(Client { inner })
    }

    /// The server's address.
    pub fn server(&self) -> SocketAddr {
        self.inner.mds.addr()
    }

    /// True when the server is a pNFS MDS and this client uses its layouts.
    pub fn uses_pnfs(&self) -> bool {
        self.inner.pnfs.is_some()
    }

    /// What the client has done so far.
    pub fn stats(&self) -> Stats {
        self.inner.counters.snapshot(self.inner.delegations_held())
    }

    /// The lease time the server gave.
    pub fn lease(&self) -> Duration {
        self.inner.mds.lease()
    }

    /// Ends the session and the client id, after giving back every delegation (open files
    /// should be closed first; their state goes with the client id).
    pub async fn shutdown(&self) {
        self.inner.return_all().await;
        self.inner.mds.shutdown().await;
        if let Some(p) = &self.inner.pnfs {
            p.shutdown().await;
        }
    }

    /// Gives back every delegation this client holds (flushing the files' writes first):
    /// its opens and closes go to the server again until new delegations are granted.
    pub async fn return_delegations(&self) {
        self.inner.return_all().await;
    }

    /// Sends `ops` and fails with the first error.
    pub(crate) async fn run(&self, ops: Vec<NfsArgop4>) -> Result<Vec<NfsResop4>> {
        self.inner.mds.compound(ops).await?.ok()
    }

    /// Sends `ops` in minor version 2 (the NFSv4.2 operations: xattrs, ALLOCATE, SEEK, ...,
    /// which a server may refuse in a 4.1 COMPOUND) and fails with the first error. A server
    /// without NFSv4.2 answers the whole COMPOUND with NFS4ERR_MINOR_VERS_MISMATCH and no
    /// results: the error then names `op`, the operation that could not be sent, not
    /// SEQUENCE.
    pub(crate) async fn run_v42(
        &self,
        op: NfsOpnum4,
        ops: Vec<NfsArgop4>,
    ) -> Result<Vec<NfsResop4>> {
        let r = self.inner.mds.compound_minor(2, ops).await;
        match r.and_then(|r| r.ok()) {
            Err(Error::Nfs {
                status: NfsStat4::NFS4ERR_MINOR_VERS_MISMATCH,
                ..
            }) => Err(Error::Nfs {
                op,
                status: NfsStat4::NFS4ERR_MINOR_VERS_MISMATCH,
            }),
            r => r,
        }
    }

    /// PUTROOTFH and LOOKUPs of `parts`.
    fn walk(parts: &[&str]) -> Vec<NfsArgop4> {
        let mut ops = vec![NfsArgop4::PutRootFh];
        ops.extend(parts.iter().map(|p| ops::lookup(p)));
        ops
    }

    pub(crate) fn protocol(&self, what: &str) -> Error {
        Error::Protocol {
            addr: self.inner.mds.addr(),
            what: what.to_string(),
        }
    }
}

/// The layout type to ask the server for: LAYOUT4_FLEX_FILES when the root file system lists
/// it in `fs_layout_types` (as the Linux client prefers it: it can name mirrors), else
/// LAYOUT4_NFSV4_1_FILES when listed; `None`: no layouts.
async fn root_layout_type(mds: &Arc<Endpoint>) -> Option<Layouttype4> {
    let ops = vec![
        NfsArgop4::PutRootFh,
        NfsArgop4::GetAttr(GetAttrArgs {
            attr_request: Bitmap4::from_bits([nfs_proto::nfs4::attr::FATTR4_FS_LAYOUT_TYPES]),
        }),
    ];
    let r = mds.compound(ops).await.ok()?;
    let types = r.results.iter().find_map(|x| match x {
        NfsResop4::GetAttr(GetAttrRes::Ok(a)) => {
            nfs_proto::nfs4::attr::FileAttrs::from_fattr(&a.obj_attributes)
                .ok()
                .and_then(|f| f.fs_layout_types)
        }
        _ => None,
    })?;
    [
        Layouttype4::LAYOUT4_FLEX_FILES,
        Layouttype4::LAYOUT4_NFSV4_1_FILES,
    ]
    .into_iter()
    .find(|t| types.contains(t))
}

impl Inner {
    /// `meta`, fresh from a GETATTR of `fh`, with the size grown to what this client wrote
    /// through the data servers and has not LAYOUTCOMMITted yet
    /// ([`Pnfs::unreported_end`]).
    pub(crate) fn with_own_writes(&self, fh: &NfsFh4, mut meta: Metadata) -> Metadata {
        if let Some(p) = &self.pnfs {
            meta.size = meta.size.max(p.unreported_end(fh));
        }
        meta
    }

    /// Sends `setattr`, a SETATTR of `fh` that sets its size to `size`: this client's
    /// unreported writes past `size` are not counted in its view of the size from the
    /// moment it goes out ([`Pnfs::truncated`]), and again if it fails.
    pub(crate) async fn sizing<T>(
        &self,
        fh: &NfsFh4,
        size: Option<u64>,
        setattr: impl std::future::Future<Output = Result<T>>,
    ) -> Result<T> {
        let (Some(p), Some(size)) = (&self.pnfs, size) else {
            return setattr.await;
        };
        let before = p.truncated(fh, size);
        let r = setattr.await;
        if r.is_err() {
            p.not_truncated(fh, before);
        }
        r
    }

    pub(crate) fn remember_attrs(&self, fh: &NfsFh4, meta: &Metadata) {
        self.attrs.lock().unwrap_or_else(|p| p.into_inner()).store(
            fh,
            meta,
            Instant::now(),
            self.opts.attr_timeout,
        );
    }

    pub(crate) fn cached_attrs(&self, fh: &NfsFh4) -> Option<Metadata> {
        self.attrs.lock().unwrap_or_else(|p| p.into_inner()).get(
            fh,
            Instant::now(),
            self.opts.attr_timeout,
        )
    }

    pub(crate) fn forget_attrs(&self, fh: &NfsFh4) {
        self.attrs
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .forget(fh);
    }

    pub(crate) fn open_files(&self) -> Vec<Arc<OpenFile>> {
        let mut o = self.opens.lock().unwrap_or_else(|p| p.into_inner());
        o.retain(|_, w| w.strong_count() > 0);
        o.values().filter_map(Weak::upgrade).collect()
    }
}

impl StateRecovery for Inner {
    fn recover(&self, ep: Arc<Endpoint>, restarted: bool) -> BoxFuture<'static, ()> {
        let servers = self.server_opens();
        let files = self.open_files().len();
        let me = self.me.upgrade();
        Counters::add(&self.counters.recoveries, 1);
        Box::pin(async move {
            let Some(me) = me else { return };
            if let Some(p) = &me.pnfs {
                p.forget_layouts();
            }
            tracing::info!(opens = servers.len(), files, restarted, "reclaiming state");
            for so in servers {
                match me.reclaim_open(&so, &ep).await {
                    Ok(()) => me.reclaim_locks(&so, &ep).await,
                    Err(e) => tracing::warn!(path = %so.path, "reclaim failed: {e}"),
                }
            }
        })
    }

    fn some_state_revoked(&self, _ep: Arc<Endpoint>) -> BoxFuture<'static, ()> {
        let me = self
            .me
            .upgrade()
            .filter(|me| !me.checking_revoked.load(Ordering::Acquire));
        Box::pin(async move {
            if let Some(me) = me {
                me.check_revoked().await;
            }
        })
    }
}

impl CallbackSink for Inner {
    fn layout_recall(&self, args: &CbLayoutRecallArgs) -> NfsStat4 {
        match &self.pnfs {
            Some(p) => {
                let status = p.recall(args);
                if status == NfsStat4::NFS4_OK {
                    Counters::add(&self.counters.recalls, 1);
                }
                status
            }
            None => NfsStat4::NFS4ERR_NOMATCHING_LAYOUT,
        }
    }

    fn notify_deviceid(&self, args: &CbNotifyDeviceidArgs) -> NfsStat4 {
        if let Some(p) = &self.pnfs {
            p.device_changed(args);
        }
        NfsStat4::NFS4_OK
    }

    fn recall_delegation(&self, args: &CbRecallArgs) -> NfsStat4 {
        self.me
            .upgrade()
            .map_or(NfsStat4::NFS4ERR_BAD_STATEID, |me| me.cb_recall(args))
    }

    fn getattr(&self, args: &CbGetAttrArgs) -> CbGetAttrRes {
        self.cb_getattr(args)
    }

    fn offload(&self, args: &CbOffloadArgs) -> NfsStat4 {
        if self.opts.ignore_offload_callbacks {
            tracing::debug!("CB_OFFLOAD dropped (ignore_offload_callbacks)");
        } else {
            self.offloads
                .arrived(&args.coa_stateid, args.coa_offload_info.clone());
        }
        NfsStat4::NFS4_OK
    }
}

//! [`Client`]: a connection to one NFSv4.1 server (our MDS, or any other), and the namespace
//! operations. Paths are absolute from the server's root (`/export/dir/file` on a server with
//! a pseudo file system, `/dir/file` on ours).

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

/// How a [`Client`] behaves.
#[derive(Clone, Debug)]
pub struct ClientOptions {
    /// Who the requests are from.
    pub credentials: Credentials,
    /// Fore channel slots asked of each server (requests in flight per session).
    pub slots: u32,
    /// How long one reply may take before the connection is considered lost.
    pub rpc_timeout: Duration,
    /// How long to keep retrying through reconnects, NFS4ERR_DELAY and a server's grace
    /// period before an operation fails.
    pub retry_limit: Duration,
    /// How long cached attributes are trusted (the bounded attribute cache).
    pub attr_timeout: Duration,
    /// Dirty bytes buffered per open file before they are sent.
    pub write_back: usize,
    /// Ask the MDS for file layouts and do I/O straight to the data servers.
    pub pnfs: bool,
    /// RPCs in flight per data server.
    pub ds_in_flight: usize,
    /// Largest READ or WRITE (bytes); the session's limits may lower it.
    pub io_size: u32,
    /// Accept delegations (RFC 8881 section 10.4): OPEN leaves the choice to the server
    /// instead of saying WANT_NO_DELEG, and while one is held the file's opens and closes
    /// stay local and its attributes and read cache need no revalidation.
    pub delegations: bool,
    /// **Fault injection, for tests only.** Answer CB_RECALL with NFS4_OK and never return
    /// the delegation, as a client that lost its way would: the server then revokes it
    /// after about a lease (RFC 8881 section 10.4.5), which is what a test of that path
    /// needs to see. Never set it otherwise: other clients wait a lease for the file.
    pub ignore_recalls: bool,
    /// How long an asynchronous server-side copy waits for its CB_OFFLOAD before asking
    /// the server with OFFLOAD_STATUS (and again every as long until it ends): the back
    /// channel may be down, or the server may not send it.
    pub offload_poll: Duration,
    /// **Fault injection, for tests only.** Answer CB_OFFLOAD with NFS4_OK and drop it, as
    /// a back channel that loses it would: asynchronous copies then learn their outcome
    /// from OFFLOAD_STATUS.
    pub ignore_offload_callbacks: bool,
}

impl Default for ClientOptions {
    fn default() -> Self {
        Self {
            credentials: Credentials::of_process(),
            slots: 32,
            rpc_timeout: Duration::from_secs(60),
            retry_limit: Duration::from_secs(180),
            attr_timeout: Duration::from_secs(3),
            write_back: 32 << 20,
            pnfs: true,
            ds_in_flight: 8,
            io_size: 1 << 20,
            delegations: true,
            ignore_recalls: false,
            offload_poll: Duration::from_secs(5),
            ignore_offload_callbacks: false,
        }
    }
}

/// One entry of a directory.
#[derive(Clone, Debug)]
pub struct DirEntry {
    /// Its name.
    pub name: String,
    /// Its attributes (absent when the server could not give them).
    pub meta: Option<Metadata>,
}

/// Lock modes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LockKind {
    /// Shared (read) lock.
    Read,
    /// Exclusive (write) lock.
    Write,
}

/// How to open a file.
#[derive(Clone, Debug)]
pub struct OpenOptions {
    /// Open for reading.
    pub read: bool,
    /// Open for writing.
    pub write: bool,
    /// Create the file when missing.
    pub create: bool,
    /// Fail when the file exists (with `create`).
    pub exclusive: bool,
    /// Truncate to 0 on open (needs `write`).
    pub truncate: bool,
    /// Mode of a created file.
    pub mode: u32,
}

impl OpenOptions {
    /// Read-only.
    pub fn read() -> Self {
        Self {
            read: true,
            write: false,
            create: false,
            exclusive: false,
            truncate: false,
            mode: 0o644,
        }
    }

    /// Read-write, creating or truncating (as `O_RDWR|O_CREAT|O_TRUNC`).
    pub fn create() -> Self {
        Self {
            read: true,
            write: true,
            create: true,
            exclusive: false,
            truncate: true,
            mode: 0o644,
        }
    }

    /// Read-write of an existing file.
    pub fn read_write() -> Self {
        Self {
            write: true,
            ..Self::read()
        }
    }
}

/// What the client has done, for tests and `--verbose` output.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Bytes written through the MDS (WRITE to the MDS).
    pub mds_bytes_written: u64,
    /// Bytes read through the MDS.
    pub mds_bytes_read: u64,
    /// Bytes written to data servers.
    pub ds_bytes_written: u64,
    /// Bytes read from data servers.
    pub ds_bytes_read: u64,
    /// Layouts granted.
    pub layouts: u64,
    /// Writes re-sent after a write verifier changed.
    pub rewrites: u64,
    /// Times a data server failed and I/O went through the MDS instead.
    pub fallbacks: u64,
    /// Reads a data server sent to the MDS because it could not tell where the file ends.
    pub reads_at_end: u64,
    /// Layouts returned because the server recalled them.
    pub recalls: u64,
    /// Recoveries of state after the server lost it.
    pub recoveries: u64,
    /// Delegations granted (RFC 8881 section 10.4).
    pub delegations: u64,
    /// Delegations held now.
    pub delegations_held: u64,
    /// CB_RECALLs of a delegation held (answered, and the delegation returned unless
    /// `ignore_recalls` is set).
    pub delegations_recalled: u64,
    /// Delegations given back with DELEGRETURN (recalled, or given up by this client).
    pub delegations_returned: u64,
    /// Delegations the server revoked (or lost, outside a grace period).
    pub delegations_revoked: u64,
    /// Opens made under a delegation, with no OPEN sent.
    pub delegated_opens: u64,
    /// Server-side copies (COPY, RFC 7862 section 15.2) that ended well: their bytes moved
    /// inside the server and are in none of the byte counters above.
    pub server_copies: u64,
    /// Bytes those copies moved.
    pub server_copy_bytes: u64,
    /// Of `server_copies`, those the server ran asynchronously (ended by CB_OFFLOAD or
    /// found ended with OFFLOAD_STATUS).
    pub server_copies_async: u64,
    /// CB_OFFLOADs that ended a copy this client waited for.
    pub offload_callbacks: u64,
    /// OFFLOAD_STATUS requests sent while waiting for a CB_OFFLOAD.
    pub offload_polls: u64,
}

/// Counters behind [`Stats`].
#[derive(Default, Debug)]
pub(crate) struct Counters {
    pub mds_bytes_written: AtomicU64,
    pub mds_bytes_read: AtomicU64,
    pub ds_bytes_written: AtomicU64,
    pub ds_bytes_read: AtomicU64,
    pub layouts: AtomicU64,
    pub rewrites: AtomicU64,
    pub fallbacks: AtomicU64,
    pub reads_at_end: AtomicU64,
    pub recalls: AtomicU64,
    pub recoveries: AtomicU64,
    pub delegations: AtomicU64,
    pub delegations_recalled: AtomicU64,
    pub delegations_returned: AtomicU64,
    pub delegations_revoked: AtomicU64,
    pub delegated_opens: AtomicU64,
    pub server_copies: AtomicU64,
    pub server_copy_bytes: AtomicU64,
    pub server_copies_async: AtomicU64,
    pub offload_callbacks: AtomicU64,
    pub offload_polls: AtomicU64,
}

impl Counters {
    pub(crate) fn add(c: &AtomicU64, n: u64) {
        c.fetch_add(n, Ordering::Relaxed);
    }

    fn snapshot(&self, delegations_held: u64) -> Stats {
        let g = |c: &AtomicU64| c.load(Ordering::Relaxed);
        Stats {
            mds_bytes_written: g(&self.mds_bytes_written),
            mds_bytes_read: g(&self.mds_bytes_read),
            ds_bytes_written: g(&self.ds_bytes_written),
            ds_bytes_read: g(&self.ds_bytes_read),
            layouts: g(&self.layouts),
            rewrites: g(&self.rewrites),
            fallbacks: g(&self.fallbacks),
            reads_at_end: g(&self.reads_at_end),
            recalls: g(&self.recalls),
            recoveries: g(&self.recoveries),
            delegations: g(&self.delegations),
            delegations_held,
            delegations_recalled: g(&self.delegations_recalled),
            delegations_returned: g(&self.delegations_returned),
            delegations_revoked: g(&self.delegations_revoked),
            delegated_opens: g(&self.delegated_opens),
            server_copies: g(&self.server_copies),
            server_copy_bytes: g(&self.server_copy_bytes),
            server_copies_async: g(&self.server_copies_async),
            offload_callbacks: g(&self.offload_callbacks),
            offload_polls: g(&self.offload_polls),
        }
    }
}

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
    attrs: Mutex<HashMap<NfsFh4, (Metadata, Instant)>>,
    /// This client's opens on the server, one per file, with their delegations.
    pub files: Mutex<OpenTable>,
    /// Paths of files opened under a delegation -> (filehandle, when last resolved): a
    /// re-open of one within the attribute timeout needs no request at all.
    pub names: Mutex<HashMap<String, (NfsFh4, Instant)>>,
    /// A TEST_STATEID check of delegations and layouts is running (SEQUENCE said some
    /// recallable state was revoked).
    pub checking_revoked: AtomicBool,
    /// Asynchronous copies waiting for their CB_OFFLOAD.
    pub offloads: Offloads,
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
        };
        let mds = Endpoint::connect(cfg, Some(callbacks.clone())).await?;
        // The MDS role flag is not enough: some servers set it and hand out no layouts
        // (nfs-ganesha's VFS export says USE_PNFS_MDS with an empty fs_layout_types).
        let pnfs_ok = opts.pnfs
            && mds.server_flags() & EXCHGID4_FLAG_USE_PNFS_MDS != 0
            && root_has_file_layouts(&mds).await;
        let inner = Arc::new_cyclic(|weak: &Weak<Inner>| Inner {
            pnfs: pnfs_ok.then(|| Pnfs::new(mds.clone(), &opts, owner.clone(), weak.clone())),
            mds: mds.clone(),
            mds_slots: Arc::new(tokio::sync::Semaphore::new(opts.ds_in_flight.max(1))),
            opts,
            owner,
            counters: Counters::default(),
            opens: Mutex::new(HashMap::new()),
            next_open: AtomicU64::new(1),
            attrs: Mutex::new(HashMap::new()),
            files: Mutex::new(HashMap::new()),
            names: Mutex::new(HashMap::new()),
            checking_revoked: AtomicBool::new(false),
            offloads: Offloads::default(),
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

    /// PUTROOTFH and LOOKUPs of `parts`.
    fn walk(parts: &[&str]) -> Vec<NfsArgop4> {
        let mut ops = vec![NfsArgop4::PutRootFh];
        ops.extend(parts.iter().map(|p| ops::lookup(p)));
        ops
    }

    /// The filehandle of `path`.
    pub async fn lookup(&self, path: &str) -> Result<NfsFh4> {
        let mut ops = Self::walk(&components(path)?);
        ops.push(NfsArgop4::GetFh);
        ops::fh_of(&self.run(ops).await?)
    }

    /// Attributes of `path` (fresh from the server; the cache is refreshed with them).
    pub async fn stat(&self, path: &str) -> Result<Metadata> {
        let mut ops = Self::walk(&components(path)?);
        ops.extend([NfsArgop4::GetFh, ops::getattr()]);
        let r = self.run(ops).await?;
        let mut meta = ops::attrs_of(&r).ok_or_else(|| self.protocol("GETATTR without a type"))?;
        let fh = ops::fh_of(&r)?;
        // Under this client's own write delegation, its writes not yet sent count.
        if let Some(so) = self.inner.server_open(&fh) {
            let st = so.st();
            if st
                .deleg
                .as_ref()
                .is_some_and(|d| d.kind == deleg::DelegKind::Write)
            {
                meta.size = st.meta.size;
            }
        }
        self.inner.remember_attrs(&fh, &meta);
        Ok(meta)
    }

    /// Gives back this client's delegation of the file at `path`, if it holds one, before it
    /// changes the file's name or attributes (RFC 8881 section 10.4.4 lets a server recall
    /// even for the holder's own change; giving it back first spares the wait).
    async fn yield_path(&self, path: &str) {
        if let Some((fh, _)) = self.inner.bound_name(path) {
            self.inner.yield_delegation(&fh).await;
        }
    }

    pub(crate) fn protocol(&self, what: &str) -> Error {
        Error::Protocol {
            addr: self.inner.mds.addr(),
            what: what.to_string(),
        }
    }

    /// The entries of directory `path` (without `.` and `..`), with their attributes.
    pub async fn readdir(&self, path: &str) -> Result<Vec<DirEntry>> {
        let dir = self.lookup(path).await?;
        let mut out = Vec::new();
        let mut cookie = 0;
        let mut verf = [0u8; 8];
        loop {
            let r = self
                .run(vec![
                    putfh(&dir),
                    NfsArgop4::ReadDir(ReadDirArgs {
                        cookie,
                        cookieverf: verf,
                        dircount: 16 << 10,
                        maxcount: 64 << 10,
                        attr_request: attr::request(),
                    }),
                ])
                .await?;
            let ok = ops::find(&r, NfsOpnum4::OP_READDIR, |x| match x {
                NfsResop4::ReadDir(ReadDirRes::Ok(ok)) => Some(ok.clone()),
                _ => None,
            })?;
            verf = ok.cookieverf;
            let n = ok.reply.entries.len();
            for e in ok.reply.entries {
                cookie = e.cookie;
                out.push(DirEntry {
                    name: e.name.to_string(),
                    meta: Metadata::from_fattr(&e.attrs),
                });
            }
            if ok.reply.eof {
                return Ok(out);
            }
            if n == 0 {
                return Err(self.protocol("READDIR returned no entries and no eof"));
            }
        }
    }

    /// Makes directory `path`.
    pub async fn mkdir(&self, path: &str, mode: u32) -> Result<()> {
        let (parent, name) = parent_and_name(path)?;
        let mut ops = Self::walk(&parent);
        ops.push(NfsArgop4::Create(CreateArgs {
            objtype: Createtype4::Dir,
            objname: Utf8String::from(name),
            createattrs: attr::set(Some(mode), None),
        }));
        self.run(ops).await.map(drop)
    }

    /// Makes a symbolic link at `path` pointing to `target`.
    pub async fn symlink(&self, target: &str, path: &str) -> Result<()> {
        let (parent, name) = parent_and_name(path)?;
        let mut ops = Self::walk(&parent);
        ops.push(NfsArgop4::Create(CreateArgs {
            objtype: Createtype4::Lnk(Utf8String::from(target)),
            objname: Utf8String::from(name),
            createattrs: attr::set(Some(0o777), None),
        }));
        self.run(ops).await.map(drop)
    }

    /// The target of symbolic link `path`.
    pub async fn readlink(&self, path: &str) -> Result<String> {
        let mut ops = Self::walk(&components(path)?);
        ops.push(NfsArgop4::ReadLink);
        let r = self.run(ops).await?;
        ops::find(&r, NfsOpnum4::OP_READLINK, |x| match x {
            NfsResop4::ReadLink(ReadLinkRes::Ok(ok)) => Some(ok.link.to_string()),
            _ => None,
        })
    }

    /// Removes a file, a symbolic link or an empty directory.
    pub async fn remove(&self, path: &str) -> Result<()> {
        let (parent, name) = parent_and_name(path)?;
        self.yield_path(path).await;
        self.inner.unbind_names(path);
        let mut ops = Self::walk(&parent);
        ops.push(NfsArgop4::Remove(RemoveArgs {
            target: Utf8String::from(name),
        }));
        self.run(ops).await.map(drop)
    }

    /// Renames `from` to `to` (replacing `to` if it exists, as rename(2)).
    pub async fn rename(&self, from: &str, to: &str) -> Result<()> {
        let (fp, fname) = parent_and_name(from)?;
        let (tp, tname) = parent_and_name(to)?;
        self.yield_path(from).await;
        self.yield_path(to).await;
        self.inner.unbind_names(from);
        self.inner.unbind_names(to);
        let mut ops = Self::walk(&fp);
        ops.push(NfsArgop4::SaveFh);
        ops.extend(Self::walk(&tp));
        ops.push(NfsArgop4::Rename(RenameArgs {
            oldname: Utf8String::from(fname),
            newname: Utf8String::from(tname),
        }));
        self.run(ops).await.map(drop)
    }

    /// Makes `new` a hard link to `existing`.
    pub async fn link(&self, existing: &str, new: &str) -> Result<()> {
        let (np, nname) = parent_and_name(new)?;
        self.yield_path(existing).await;
        let mut ops = Self::walk(&components(existing)?);
        ops.push(NfsArgop4::SaveFh);
        ops.extend(Self::walk(&np));
        ops.push(NfsArgop4::Link(LinkArgs {
            newname: Utf8String::from(nname),
        }));
        self.run(ops).await.map(drop)
    }

    /// Sets the size of `path` (SETATTR size with the anonymous stateid).
    pub async fn truncate(&self, path: &str, size: u64) -> Result<()> {
        let fh = self.lookup(path).await?;
        self.inner.yield_delegation(&fh).await;
        self.setattr_size(&fh, Stateid4::ANONYMOUS, size).await
    }

    pub(crate) async fn setattr_size(
        &self,
        fh: &NfsFh4,
        stateid: Stateid4,
        size: u64,
    ) -> Result<()> {
        self.inner.forget_attrs(fh);
        self.run(vec![
            putfh(fh),
            NfsArgop4::SetAttr(SetAttrArgs {
                stateid,
                obj_attributes: attr::set(None, Some(size)),
            }),
        ])
        .await
        .map(drop)
    }

    /// Changes the permission bits of `path`.
    pub async fn chmod(&self, path: &str, mode: u32) -> Result<()> {
        let fh = self.lookup(path).await?;
        self.inner.yield_delegation(&fh).await;
        self.inner.forget_attrs(&fh);
        self.run(vec![
            putfh(&fh),
            NfsArgop4::SetAttr(SetAttrArgs {
                stateid: Stateid4::ANONYMOUS,
                obj_attributes: attr::set(Some(mode), None),
            }),
        ])
        .await
        .map(drop)
    }

    /// Creates (or truncates) `path` and opens it for reading and writing.
    pub async fn create(&self, path: &str, mode: u32) -> Result<File> {
        self.open(
            path,
            &OpenOptions {
                mode,
                ..OpenOptions::create()
            },
        )
        .await
    }

    /// Opens `path`. Close-to-open: the open fetches fresh attributes, and cached data of the
    /// file is dropped when its change attribute moved since it was cached. Under a
    /// delegation that covers the access (RFC 8881 section 10.4.1), the open is made here
    /// with no OPEN and no GETATTR (a LOOKUP when the path was resolved longer ago than the
    /// attribute timeout).
    pub async fn open(&self, path: &str, how: &OpenOptions) -> Result<File> {
        let (parent, name) = parent_and_name(path)?;
        let mut access = 0;
        if how.read {
            access |= OPEN4_SHARE_ACCESS_READ;
        }
        if how.write {
            access |= OPEN4_SHARE_ACCESS_WRITE;
        }
        if access == 0 {
            return Err(Error::Invalid(
                "open for neither reading nor writing".into(),
            ));
        }
        if !(how.create && how.exclusive) {
            if let Some(f) = self.open_delegated(path, access, how).await? {
                return Ok(f);
            }
        }
        let openhow = if how.create {
            let attrs = attr::set(Some(how.mode), (how.truncate && how.write).then_some(0));
            Openflag4::Create(if how.exclusive {
                Createhow4::Guarded(attrs)
            } else {
                Createhow4::Unchecked(attrs)
            })
        } else {
            Openflag4::NoCreate
        };
        let mut ops = Self::walk(&parent);
        ops.extend([
            NfsArgop4::Open(OpenArgs {
                seqid: 0,
                share_access: access | self.inner.want(),
                share_deny: OPEN4_SHARE_DENY_NONE,
                owner: ops::state_owner(&self.inner.owner),
                openhow,
                claim: OpenClaim4::Null(Utf8String::from(name)),
            }),
            NfsArgop4::GetFh,
            ops::getattr(),
        ]);
        let r = self.run(ops).await?;
        let ok = ops::find(&r, NfsOpnum4::OP_OPEN, |x| match x {
            NfsResop4::Open(OpenRes::Ok(ok)) => Some(ok.clone()),
            _ => None,
        })?;
        let fh = ops::fh_of(&r)?;
        let meta = ops::attrs_of(&r).ok_or_else(|| self.protocol("OPEN without attributes"))?;
        if meta.file_type == attr::FileType::Dir {
            return Err(Error::Nfs {
                op: NfsOpnum4::OP_OPEN,
                status: NfsStat4::NFS4ERR_ISDIR,
            });
        }
        // An existing file opened with truncate under NoCreate: set the size explicitly.
        let mut meta = meta;
        let truncate = how.truncate && how.write;
        if truncate && !how.create && meta.size != 0 {
            let stateid = deleg::granted(&ok.delegation)
                .filter(|d| d.1 == deleg::DelegKind::Write)
                .map_or(ok.stateid, |d| d.0);
            self.setattr_size(&fh, stateid, 0).await?;
            meta.size = 0;
        }
        self.inner.remember_attrs(&fh, &meta);
        let so = self.inner.opened(
            &fh,
            path,
            ok.stateid,
            access,
            meta,
            truncate,
            &ok.delegation,
        );
        Ok(self.new_file(so, access, path))
    }

    /// The open of `path` under a delegation this client holds on it, when one covers
    /// `access`; `None`: OPEN as usual.
    async fn open_delegated(
        &self,
        path: &str,
        access: u32,
        how: &OpenOptions,
    ) -> Result<Option<File>> {
        let Some((fh, fresh)) = self.inner.bound_name(path) else {
            return Ok(None);
        };
        if !fresh {
            // The name may stand for another file by now.
            match self.lookup(path).await {
                Ok(now) if now == fh => self.inner.rebind_name(path, &fh),
                _ => {
                    self.inner.unbind_names(path);
                    return Ok(None);
                }
            }
        }
        let so = match self.inner.open_local(&fh, access) {
            Local::Opened(so) => so,
            Local::Upgrade(so, delegated) => {
                // The delegation covers the access, the server open does not: upgrade it
                // under the delegation (CLAIM_DELEG_CUR_FH, RFC 8881 section 18.16.3), which
                // does not conflict with it.
                let r = self
                    .run(vec![
                        putfh(&fh),
                        NfsArgop4::Open(OpenArgs {
                            seqid: 0,
                            share_access: access | OPEN4_SHARE_ACCESS_WANT_NO_DELEG,
                            share_deny: OPEN4_SHARE_DENY_NONE,
                            owner: ops::state_owner(&self.inner.owner),
                            openhow: Openflag4::NoCreate,
                            claim: OpenClaim4::DelegCurFh(delegated),
                        }),
                    ])
                    .await
                    .and_then(|r| {
                        ops::find(&r, NfsOpnum4::OP_OPEN, |x| match x {
                            NfsResop4::Open(OpenRes::Ok(ok)) => Some(ok.stateid),
                            _ => None,
                        })
                    });
                match r {
                    Ok(stateid) => {
                        let mut st = so.st();
                        if stateid.other != st.stateid.other || stateid.seqid >= st.stateid.seqid {
                            st.stateid = stateid;
                        }
                        st.access |= access;
                    }
                    Err(e) => {
                        if self.inner.release(&so, None) {
                            let _ = self.inner.send_close(&so, None).await;
                        }
                        return Err(e);
                    }
                }
                so
            }
            Local::No => return Ok(None),
        };
        Counters::add(&self.inner.counters.delegated_opens, 1);
        let f = self.new_file(so.clone(), access, path);
        if how.truncate && how.write {
            if let Err(e) = f.set_len(0).await {
                let _ = f.close().await;
                return Err(e);
            }
        }
        Ok(Some(f))
    }

    /// A File of `so` (counted in its users already).
    fn new_file(&self, so: Arc<deleg::ServerOpen>, access: u32, path: &str) -> File {
        let id = self.inner.next_open.fetch_add(1, Ordering::Relaxed);
        let open = Arc::new(OpenFile::new(id, access, so, path.to_string()));
        self.inner
            .opens
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(id, Arc::downgrade(&open));
        File::new(self.clone(), open)
    }

    pub(crate) fn forget_open(&self, id: u64) {
        self.inner
            .opens
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&id);
    }
}

/// Whether the server's root file system lists LAYOUT4_NFSV4_1_FILES in `fs_layout_types`.
async fn root_has_file_layouts(mds: &Arc<Endpoint>) -> bool {
    let ops = vec![
        NfsArgop4::PutRootFh,
        NfsArgop4::GetAttr(GetAttrArgs {
            attr_request: Bitmap4::from_bits([nfs_proto::nfs4::attr::FATTR4_FS_LAYOUT_TYPES]),
        }),
    ];
    let Ok(r) = mds.compound(ops).await else {
        return false;
    };
    r.results.iter().any(|x| match x {
        NfsResop4::GetAttr(GetAttrRes::Ok(a)) => {
            nfs_proto::nfs4::attr::FileAttrs::from_fattr(&a.obj_attributes)
                .ok()
                .and_then(|f| f.fs_layout_types)
                .is_some_and(|t| t.contains(&Layouttype4::LAYOUT4_NFSV4_1_FILES))
        }
        _ => false,
    })
}

impl Inner {
    pub(crate) fn remember_attrs(&self, fh: &NfsFh4, meta: &Metadata) {
        let mut a = self.attrs.lock().unwrap_or_else(|p| p.into_inner());
        if a.len() > 4096 {
            let timeout = self.opts.attr_timeout;
            a.retain(|_, (_, t)| t.elapsed() < timeout);
        }
        a.insert(fh.clone(), (meta.clone(), Instant::now()));
    }

    pub(crate) fn cached_attrs(&self, fh: &NfsFh4) -> Option<Metadata> {
        let a = self.attrs.lock().unwrap_or_else(|p| p.into_inner());
        a.get(fh)
            .filter(|(_, t)| t.elapsed() < self.opts.attr_timeout)
            .map(|(m, _)| m.clone())
    }

    pub(crate) fn forget_attrs(&self, fh: &NfsFh4) {
        self.attrs
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(fh);
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
        let files = self.open_files();
        let me = self.me.upgrade();
        Counters::add(&self.counters.recoveries, 1);
        Box::pin(async move {
            let Some(me) = me else { return };
            if let Some(p) = &me.pnfs {
                p.forget_layouts();
            }
            tracing::info!(
                opens = servers.len(),
                files = files.len(),
                restarted,
                "reclaiming state"
            );
            for so in servers {
                if let Err(e) = me.reclaim_open(&so, &ep).await {
                    tracing::warn!(path = %so.path, "reclaim failed: {e}");
                }
            }
            for f in files {
                if let Err(e) = f.reclaim(&me, &ep).await {
                    tracing::warn!(path = %f.path, "reclaim failed: {e}");
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

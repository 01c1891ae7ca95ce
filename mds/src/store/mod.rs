//! The metadata store: namespace, attributes, filehandles and client records in redb, with
//! group commit.
//!
//! ```text
//!   callers (ops, state)                                   committer thread
//!   ─────────────────────                                  ─────────────────────────────────
//!   store.create(..) ──> job ──> channel ──┬──> take all queued jobs ──> one WriteTransaction
//!   store.remove(..) ──> job ──────────────┤      run each (a rejected job leaves no trace)
//!   store.setattr(..) ─> job ──────────────┘      commit once, Durability::Immediate (fsync)
//!        │                                        then send every job its result
//!        └── Pending<R>: .await or .wait()  <────────────────────────────────┘
//!
//!   store.lookup / getattr / readdir / resolve ──> ReadTransaction (concurrent, no waiting)
//! ```
//!
//! Every change a method acknowledges is durable before its [`Pending`] resolves (unless the
//! caller's task deferred durability to one [`Store::sync`] before its reply:
//! [`Store::defer_here`]), and changes submitted together share one fsync ([`commit`] explains batching and how a failing job is
//! kept from spoiling the others). Reads run on read transactions in the caller's thread and
//! see the last committed state.
//!
//! Layout on disk: [`schema`] (tables, versioned XDR records); filehandles: [`fh`]; extended
//! attributes (RFC 8276): `xattr`. Each open
//! increments the boot epoch kept in the store ([`Store::boot_epoch`]) and lists the client
//! records left by earlier boots ([`Store::previous_clients`]) for reclaim.
//!
//! Time is passed in (`now`) to every method that stamps times, so tests control the clock.

mod clients;
pub mod commit;
mod counters;
mod ds_stores;
mod error;
pub mod fh;
mod layout_writes;
mod ns;
mod removals;
mod rings;
pub mod schema;
mod stale_copies;
mod stripes;
mod types;
mod wal;
mod xattr;

#[cfg(test)]
mod tests;

use std::io::Read;
use std::path::Path;
use std::sync::Arc;

use bytes::Bytes;
use nfs_proto::nfs4::{NfsFh4, NfsFtype4, Nfstime4, Specdata4};
use redb::{Database, ReadTransaction, ReadableDatabase};

pub use clients::ClientRecord;
pub use commit::{CommitCounts, Deferral, Pending, Tbl, TblWrite, Txn};
pub use ds_stores::StoreReplaced;
pub use error::StoreError;
pub use fh::{DecodedFh, FhCodec, FhError, FhKind, DEFAULT_EXPORT};
pub use layout_writes::Settled;
pub use ns::check_name;
pub use removals::DsRemoval;
pub use schema::{FIRST_COOKIE, ROOT_FILEID};
pub use stripes::StripeSet;
pub use types::*;
pub use xattr::{
    check_xattr_name, XattrName, XattrNames, XattrSet, MAX_XATTR_LIST_LEN, MAX_XATTR_NAME_LEN,
    MAX_XATTR_VALUE_LEN,
};

use commit::Committer;
use schema::*;

/// The longest name a directory entry may have (`maxname`).
pub const MAX_NAME_LEN: usize = 255;
/// The longest symbolic link target stored.
pub const MAX_SYMLINK_LEN: usize = 4096;

/// The metadata store. Cheap to clone (a handle); all clones share one database and one
/// committer. Dropping the last clone waits for queued changes and closes the file.
#[derive(Clone)]
pub struct Store {
    inner: Arc<Inner>,
}

struct Inner {
    db: Arc<Database>,
    codec: FhCodec,
    server_key: [u8; 32],
    epoch: u64,
    previous: Vec<ClientRecord>,
    // Last: dropping it joins the committer thread, which holds the other database handle.
    committer: Committer,
}

impl core::fmt::Debug for Store {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Store")
            .field("boot_epoch", &self.inner.epoch)
            .finish_non_exhaustive()
    }
}

fn random_key() -> Result<[u8; 32], StoreError> {
    let mut key = [0u8; 32];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut key)?;
    Ok(key)
}

/// A wall-clock time as an `nfstime4` (times before 1970 as 1970), for the edge code that
/// calls the store: the server reads the time from its clock ([`crate::server::Mds::wall_time`])
/// and hands it in, so the store never reads the system's time itself.
pub fn nfstime(t: std::time::SystemTime) -> Nfstime4 {
    let d = t.duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    Nfstime4 {
        seconds: d.as_secs() as i64,
        nseconds: d.subsec_nanos(),
    }
}

impl Store {
    /// Opens (or creates) the store at `path`: creates the tables, the server key and the
    /// root directory the first time, increments the boot epoch every time, reads the client
    /// records of earlier boots, and starts the committer.
    pub fn open(
        path: impl AsRef<Path>,
        opts: &StoreOptions,
        now: Nfstime4,
    ) -> Result<Self, StoreError> {
        let path = path.as_ref();
        let db = Self::builder(opts).create(path)?;
        // The log's records first: everything after this reads the store as it was when the
        // last change was acknowledged.
        let log_path = wal::path_for(path);
        let replayed = wal::replay(&db, &log_path)?;
        if replayed > 0 {
            tracing::info!(
                records = replayed,
                "metadata store: write-ahead log replayed"
            );
        }
        let log = if opts.write_ahead_log {
            Some(wal::Wal::open(&log_path, opts.checkpoint_batches)?)
        } else {
            if replayed > 0 {
                std::fs::remove_file(&log_path)?;
            }
            None
        };
        Self::start(db, opts, now, log)
    }

    /// A store in memory (redb's in-memory backend), new and empty: for tests, which need
    /// no file and lose it all when the store goes (a restart of the MDS over it is not
    /// possible; open one on a file for that).
    pub fn open_in_memory(opts: &StoreOptions, now: Nfstime4) -> Result<Self, StoreError> {
        let db = Self::builder(opts).create_with_backend(redb::backends::InMemoryBackend::new())?;
        Self::start(db, opts, now, None)
    }

    fn builder(opts: &StoreOptions) -> redb::Builder {
        let mut b = redb::Builder::new();
        if let Some(c) = opts.cache_size {
            b.set_cache_size(c);
        }
        b
    }

    /// Initialises `db` ([`Store::init`]) and starts its committer.
    fn start(
        db: Database,
        opts: &StoreOptions,
        now: Nfstime4,
        log: Option<wal::Wal>,
    ) -> Result<Self, StoreError> {
        let (server_key, epoch, previous) = Self::init(&db, opts, now)?;
        let db = Arc::new(db);
        let committer = Committer::start(db.clone(), opts.max_batch, log)?;
        Ok(Self {
            inner: Arc::new(Inner {
                db,
                codec: FhCodec::new(server_key),
                server_key,
                epoch,
                previous,
                committer,
            }),
        })
    }

    /// First-open initialisation, the per-open epoch bump, and the check of the client owner
    /// index, in one durable transaction. Returns the key, the epoch and the client records.
    fn init(
        db: &Database,
        opts: &StoreOptions,
        now: Nfstime4,
    ) -> Result<([u8; 32], u64, Vec<ClientRecord>), StoreError> {
        use redb::ReadableTable;
        check_mode(opts.root_mode)?;
        let wtx = db.begin_write()?;
        let out = {
            let mut meta = wtx.open_table(META)?;
            let mut counters = wtx.open_table(COUNTERS)?;
            let mut inodes = wtx.open_table(INODES)?;
            wtx.open_table(DIRENTS)?;
            wtx.open_table(COOKIES)?;
            let client_table = wtx.open_table(CLIENTS)?;
            let mut client_owners = wtx.open_table(CLIENT_OWNERS)?;
            wtx.open_table(ORPHANS)?;
            wtx.open_table(XATTRS)?;
            wtx.open_table(XATTR_COOKIES)?;
            wtx.open_table(STRIPES)?;
            wtx.open_table(DS_REMOVALS)?;
            wtx.open_table(layout_writes::LAYOUT_WRITES)?;
            wtx.open_table(stale_copies::STALE_COPIES)?;
            wtx.open_table(ds_stores::DS_STORES)?;
            let format = meta.get(K_FORMAT)?.map(|g| g.value().to_vec());
            match format {
                None => {
                    meta.insert(K_FORMAT, &FORMAT_VERSION.to_be_bytes()[..])?;
                    meta.insert(K_SERVER_KEY, &random_key()?[..])?;
                    counters.insert(K_EPOCH, 0)?;
                    counters.insert(K_NEXT_FILEID, ROOT_FILEID + 1)?;
                    counters.insert(K_CHANGE, 1)?;
                    let root = InodeV1 {
                        ftype: NfsFtype4::NF4DIR,
                        mode: opts.root_mode,
                        uid: opts.root_uid,
                        gid: opts.root_gid,
                        nlink: 2,
                        size: ns::DIR_SIZE,
                        space_used: ns::DIR_SIZE,
                        atime: now,
                        mtime: now,
                        ctime: now,
                        birth: now,
                        change: 1,
                        rdev: Specdata4::default(),
                        generation: 1,
                        symlink: Bytes::new(),
                        verifier: None,
                        parent: 0,
                        next_cookie: FIRST_COOKIE,
                    };
                    inodes.insert(ROOT_FILEID, &root.encode()[..])?;
                }
                Some(v) => {
                    let v: [u8; 4] = v[..]
                        .try_into()
                        .map_err(|_| StoreError::Corrupt("format word"))?;
                    if u32::from_be_bytes(v) != FORMAT_VERSION {
                        return Err(StoreError::Format(u32::from_be_bytes(v)));
                    }
                }
            }
            let key: [u8; 32] = meta
                .get(K_SERVER_KEY)?
                .ok_or(StoreError::Corrupt("server key missing"))?
                .value()
                .try_into()
                .map_err(|_| StoreError::Corrupt("server key length"))?;
            let epoch = counters
                .get(K_EPOCH)?
                .ok_or(StoreError::Corrupt("boot epoch missing"))?
                .value()
                + 1;
            counters.insert(K_EPOCH, epoch)?;
            let previous = clients::list(&client_table)?;
            if clients::sync_owner_index(&previous, &mut client_owners)? {
                tracing::info!(clients = previous.len(), "client owner index rebuilt");
            }
            (key, epoch, previous)
        };
        wtx.commit()?;
        Ok(out)
    }

    /// This boot's epoch: 1 at the first open, one more at each open after. Stateids and
    /// client ids carry its low bits so that those of earlier boots are recognised as stale.
    pub fn boot_epoch(&self) -> u64 {
        self.inner.epoch
    }

    /// The 32-byte server secret (filehandle, stateid and session MACs). Stable across
    /// restarts of the same store.
    pub fn server_key(&self) -> &[u8; 32] {
        &self.inner.server_key
    }

    /// The filehandle codec keyed with the server key.
    pub fn fh_codec(&self) -> &FhCodec {
        &self.inner.codec
    }

    /// The filehandle of an object of the default export.
    pub fn fh(&self, inode: &Inode) -> NfsFh4 {
        self.inner
            .codec
            .encode(DEFAULT_EXPORT, inode.fileid, inode.generation)
    }

    /// Client records written before this boot (read at open): the clients that may reclaim.
    pub fn previous_clients(&self) -> &[ClientRecord] {
        &self.inner.previous
    }

    /// How many commits and jobs the committer has done so far.
    pub fn commit_stats(&self) -> CommitCounts {
        self.inner.committer.stats.snapshot()
    }

    /// Defers the durability of the changes the current tokio task makes from now on, until
    /// the returned guard is dropped: each is committed and visible at once, and
    /// [`Store::sync`] makes them all durable with one fsync (see [`commit`], "Deferred
    /// durability"). For a COMPOUND, which syncs before its reply; `None` outside a task.
    pub fn defer_here(&self) -> Option<Deferral> {
        self.inner.committer.defer_here()
    }

    /// Resolves once every change committed so far is durable (no fsync when it is already).
    /// Call it before acting outside the store on a change that may be deferred: deleting
    /// data, removing objects from data servers.
    pub fn sync(&self) -> Pending<()> {
        self.inner.committer.sync()
    }

    fn read(&self) -> Result<ReadTransaction, StoreError> {
        Ok(self.inner.db.begin_read()?)
    }

    /// The root directory of the default export.
    pub fn root(&self) -> Result<Inode, StoreError> {
        self.getattr(ROOT_FILEID)
    }

    /// An object's attributes; NFS4ERR_STALE if it is gone.
    pub fn getattr(&self, fileid: u64) -> Result<Inode, StoreError> {
        let r = self.read()?;
        Ok(load(&r.open_table(INODES)?, fileid)?.to_inode(fileid))
    }

    /// An object's attributes if `generation` is still its generation; else NFS4ERR_STALE.
    pub fn getattr_checked(&self, fileid: u64, generation: u32) -> Result<Inode, StoreError> {
        let i = self.getattr(fileid)?;
        if i.generation != generation {
            return Err(StoreError::Stale(fileid));
        }
        Ok(i)
    }

    /// PUTFH for an export object: NFS4ERR_BADHANDLE for a handle that is not ours (or is a
    /// pseudo-fs handle, which the caller resolves itself), NFS4ERR_STALE for one whose object
    /// is gone. Returns the export id with the object.
    pub fn resolve(&self, fh: &NfsFh4) -> Result<(u16, Inode), StoreError> {
        let d = self.inner.codec.decode(fh)?;
        if d.kind != FhKind::Object {
            return Err(StoreError::BadHandle(FhError::Kind(0)));
        }
        Ok((d.export, self.getattr_checked(d.fileid, d.generation)?))
    }

    /// LOOKUP (RFC 8881 section 18.13): the object `name` names in directory `dir`.
    pub fn lookup(&self, dir: u64, name: &[u8]) -> Result<Inode, StoreError> {
        check_name(name)?;
        let r = self.read()?;
        let inodes = r.open_table(INODES)?;
        let d = load(&inodes, dir)?;
        match d.ftype {
            NfsFtype4::NF4DIR => {}
            NfsFtype4::NF4LNK => return Err(StoreError::Symlink),
            _ => return Err(StoreError::NotDir),
        }
        let (child, _) =
            get_dirent(&r.open_table(DIRENTS)?, dir, name)?.ok_or(StoreError::NoEnt)?;
        Ok(load_linked(&inodes, child)?.to_inode(child))
    }

    /// LOOKUPP (RFC 8881 section 18.14): the parent of directory `dir`; NFS4ERR_NOENT at the
    /// root.
    pub fn lookupp(&self, dir: u64) -> Result<Inode, StoreError> {
        let r = self.read()?;
        let inodes = r.open_table(INODES)?;
        let d = load_dir(&inodes, dir)?;
        if dir == ROOT_FILEID || d.parent == 0 {
            return Err(StoreError::NoEnt);
        }
        Ok(load_linked(&inodes, d.parent)?.to_inode(d.parent))
    }

    /// READDIR (RFC 8881 section 18.23): up to `max_entries` entries after `cookie` (0: from
    /// the start). A cookie stays valid for as long as the directory exists, also across
    /// restarts and after its own entry is removed, so no cookie verifier is needed: callers
    /// may return an all-zero `cookieverf` and ignore the client's. Cookies 1 and 2, and
    /// cookies never handed out, are NFS4ERR_BAD_COOKIE.
    pub fn readdir(
        &self,
        dir: u64,
        cookie: u64,
        max_entries: usize,
    ) -> Result<ReadDir, StoreError> {
        let r = self.read()?;
        let inodes = r.open_table(INODES)?;
        let d = load_dir(&inodes, dir)?;
        if cookie != 0 && (cookie < FIRST_COOKIE || cookie >= d.next_cookie) {
            return Err(StoreError::BadCookie(cookie));
        }
        let start = if cookie == 0 { 0 } else { cookie + 1 };
        let cookies = r.open_table(COOKIES)?;
        let mut it = cookies.range((dir, start)..=(dir, u64::MAX))?;
        let mut entries = Vec::new();
        while entries.len() < max_entries {
            let Some(e) = it.next() else {
                return Ok(ReadDir { entries, eof: true });
            };
            let (k, v) = e?;
            let (_, cookie) = k.value();
            let (child, name) = v.value();
            entries.push(DirEntry {
                cookie,
                name: Bytes::copy_from_slice(name),
                inode: load_linked(&inodes, child)?.to_inode(child),
            });
        }
        let eof = it.next().is_none();
        Ok(ReadDir { entries, eof })
    }

    /// The store-wide change counter: at least the largest change attribute handed out so
    /// far (exactly that once this open handed one out; before, the ceiling on disk, which a
    /// restart may have left up to a block above it: [`counters`]).
    pub fn change_counter(&self) -> Result<u64, StoreError> {
        if let Some(last) = self.inner.committer.counters().last(counters::Seq::Change) {
            return Ok(last);
        }
        let r = self.read()?;
        r.open_table(COUNTERS)?
            .get(K_CHANGE)?
            .map(|g| g.value())
            .ok_or(StoreError::Corrupt("change counter missing"))
    }

    /// Client records now on disk (this boot's and any earlier ones not yet removed).
    pub fn clients(&self) -> Result<Vec<ClientRecord>, StoreError> {
        let r = self.read()?;
        clients::list(&r.open_table(CLIENTS)?)
    }

    /// Runs any change as a job of the committer (for tables other modules add). The job must
    /// do its checks before its first [`Tbl::write`] (see [`commit`]); it may run more than
    /// once, on the same state, if another job of its batch fails after writing.
    pub fn write<R, F>(&self, f: F) -> Pending<R>
    where
        F: FnMut(&Txn<'_>) -> Result<R, StoreError> + Send + 'static,
        R: Send + 'static,
    {
        self.inner.committer.submit(f)
    }

    /// CREATE of any type, or OPEN's create of a regular file, named `name` in `parent`.
    pub fn create(
        &self,
        parent: u64,
        name: &[u8],
        spec: CreateSpec,
        now: Nfstime4,
    ) -> Pending<Created> {
        self.create_then(parent, name, spec, now, |_, made| Ok(made))
    }

    /// The job of both creates ([`Store::create`], [`Store::create_file`]): the name
    /// checked, the create with this boot's generation, then `then` on what it made, in the
    /// same transaction.
    fn create_then<R, F>(
        &self,
        parent: u64,
        name: &[u8],
        spec: CreateSpec,
        now: Nfstime4,
        mut then: F,
    ) -> Pending<R>
    where
        F: FnMut(&Txn<'_>, Created) -> Result<R, StoreError> + Send + 'static,
        R: Send + 'static,
    {
        if let Err(e) = check_name(name) {
            return Pending::ready(Err(e));
        }
        let name = Bytes::copy_from_slice(name);
        let generation = self.inner.epoch as u32;
        self.write(move |tx| {
            let made = ns::create(tx, parent, &name, &spec, now, generation)?;
            then(tx, made)
        })
    }

    /// OPEN's create of a regular file with what goes with it, in one transaction (one
    /// commit, one fsync): the create, the times and size the client gave
    /// ([`NewFileExtras::attrs`]), and the stripe set of its directory's layout policy, which
    /// depends on the file id only the create allocates ([`NewFileExtras::stripes`]), with
    /// the layout-writes mark when asked ([`NewFileExtras::mark_layout_writes`]). An
    /// existing file (UNCHECKED4, or an exclusive create's retransmission) is returned as it
    /// is, with nothing applied.
    pub fn create_file(
        &self,
        parent: u64,
        name: &[u8],
        spec: CreateSpec,
        extras: NewFileExtras,
        now: Nfstime4,
    ) -> Pending<CreatedFile> {
        let epoch = self.boot_epoch();
        self.create_then(parent, name, spec, now, move |tx, mut made| {
            if !made.created {
                return Ok(CreatedFile {
                    made,
                    stripes: None,
                });
            }
            let fileid = made.inode.fileid;
            if !extras.attrs.is_empty() {
                made.inode = ns::setattr(tx, fileid, &extras.attrs, now)?.inode;
            }
            let mark = extras.mark_layout_writes.then_some(epoch);
            let stripes = match extras.stripes.as_ref().and_then(|plan| plan(fileid)) {
                Some(set) => Some(stripes::fix(tx, fileid, set, mark)?),
                None => None,
            };
            Ok(CreatedFile { made, stripes })
        })
    }

    /// LINK (RFC 8881 section 18.9): `name` in `dir` becomes another name of `fileid`.
    /// NFS4ERR_ISDIR for a directory, NFS4ERR_EXIST if the name is taken.
    pub fn link(&self, fileid: u64, dir: u64, name: &[u8], now: Nfstime4) -> Pending<Linked> {
        if let Err(e) = check_name(name) {
            return Pending::ready(Err(e));
        }
        let name = Bytes::copy_from_slice(name);
        self.write(move |tx| ns::link(tx, fileid, dir, &name, now))
    }

    /// REMOVE (RFC 8881 section 18.25): NFS4ERR_NOTEMPTY for a directory with entries.
    /// A regular file's last name leaves an orphan ([`Removed::orphan`]) for the caller to
    /// delete when no open holds it; with `unopened`, a striped one that no open holds is
    /// deleted in the same transaction instead ([`DeleteUnopened`], [`Removed::deleted`]).
    pub fn remove(
        &self,
        dir: u64,
        name: &[u8],
        now: Nfstime4,
        unopened: Option<DeleteUnopened>,
    ) -> Pending<Removed> {
        if let Err(e) = check_name(name) {
            return Pending::ready(Err(e));
        }
        let name = Bytes::copy_from_slice(name);
        let epoch = self.inner.epoch;
        self.write(move |tx| ns::remove(tx, dir, &name, now, epoch, unopened.as_ref()))
    }

    /// RENAME (RFC 8881 section 18.26): `src_name` in `src_dir` becomes `dst_name` in
    /// `dst_dir`. An existing target must be compatible (both directories, the target empty,
    /// or both non-directories), else NFS4ERR_EXIST; it is replaced atomically. Renaming a name
    /// onto itself or onto another link of the same file does nothing and succeeds. Moving a
    /// directory into its own subtree is NFS4ERR_INVAL.
    pub fn rename(
        &self,
        src_dir: u64,
        src_name: &[u8],
        dst_dir: u64,
        dst_name: &[u8],
        now: Nfstime4,
    ) -> Pending<Renamed> {
        if let Err(e) = check_name(src_name).and_then(|()| check_name(dst_name)) {
            return Pending::ready(Err(e));
        }
        let s = Bytes::copy_from_slice(src_name);
        let d = Bytes::copy_from_slice(dst_name);
        let epoch = self.inner.epoch;
        self.write(move |tx| ns::rename(tx, src_dir, &s, dst_dir, &d, now, epoch))
    }

    /// Deletes an orphan's inode (a regular file whose last name went, see
    /// [`Removed::orphan`]); call it when no open holds the file any more, after removing its
    /// data in the MDS's own object store, so that a crash in between leaves an orphan to
    /// find again rather than data nobody knows about. A file with a stripe set has objects on
    /// data servers too: `servers` names the data servers of its set, and they are queued for
    /// removal (table `ds_removals`, [`Store::ds_removals`]) in the same transaction that
    /// deletes the inode and the stripe set, so they are never forgotten. False (and nothing
    /// done) if `fileid` is not an orphan: not one yet (a failed REMOVE), not any more, or
    /// never.
    pub fn delete_orphan(
        &self,
        fileid: u64,
        servers: impl Fn(&StripeSet) -> Vec<u16> + Send + 'static,
    ) -> Pending<bool> {
        self.write(move |tx| ns::delete_orphan(tx, fileid, &servers))
    }

    /// The orphans now in the store, as (file id, boot epoch in which it lost its last
    /// name). Those of earlier boots are files that were open when the server stopped; opens
    /// do not survive a restart, so the server deletes each one no client reclaims an open of
    /// during the grace period.
    pub fn orphans(&self) -> Result<Vec<(u64, u64)>, StoreError> {
        use redb::ReadableTable;
        let r = self.read()?;
        let t = r.open_table(ORPHANS)?;
        let mut out = Vec::new();
        for e in t.iter()? {
            let (k, v) = e?;
            out.push((k.value(), v.value()));
        }
        Ok(out)
    }

    /// SETATTR of mode, owner, group, size and times. [`SetattrOutcome::old_size`] lets the
    /// caller truncate the data when the size shrank.
    pub fn setattr(&self, fileid: u64, attrs: SetAttrs, now: Nfstime4) -> Pending<SetattrOutcome> {
        self.write(move |tx| ns::setattr(tx, fileid, &attrs, now))
    }

    /// Records a WRITE (or LAYOUTCOMMIT) that reached byte `end`: the size grows to `end` if
    /// smaller; mtime, ctime and change move on.
    pub fn record_write(&self, fileid: u64, end: u64, now: Nfstime4) -> Pending<Inode> {
        self.write(move |tx| ns::record_write(tx, fileid, end, now))
    }

    /// Records a LAYOUTCOMMIT (RFC 8881 section 18.42.3): writes through the data servers
    /// reached byte `end`; the size grows to it if smaller, mtime becomes `mtime` (the
    /// client's, or `now`; `None` keeps it), ctime `now`, and the change attribute moves
    /// on, durably.
    pub fn record_layout_commit(
        &self,
        fileid: u64,
        end: u64,
        mtime: Option<Nfstime4>,
        now: Nfstime4,
    ) -> Pending<Inode> {
        self.write(move |tx| ns::record_write_at(tx, fileid, end, mtime, now))
    }

    /// Persists a confirmed client, replacing any record with the same client id or owner.
    pub fn put_client(&self, record: ClientRecord) -> Pending<()> {
        self.write(move |tx| clients::put(tx, &record))
    }

    /// Forgets a client (DESTROY_CLIENTID, lease expiry, or reclaim done under a new id).
    /// True if it was there.
    pub fn remove_client(&self, clientid: u64) -> Pending<bool> {
        self.write(move |tx| clients::remove(tx, clientid))
    }

    /// At the end of a grace period, forgets the clients of an earlier boot that did not
    /// reclaim (`owners`, from [`GraceEnd`](crate::state::grace::GraceEnd)): their state may
    /// since have been granted to others, so they must not reclaim it after another restart
    /// (RFC 8881 section 8.4.3). A record of this boot stays: that client came back and holds
    /// state of this boot. Returns how many records went.
    pub fn remove_unreclaimed(&self, owners: Vec<Bytes>) -> Pending<usize> {
        let epoch = self.inner.epoch;
        self.write(move |tx| clients::remove_owners_before(tx, &owners, epoch))
    }
}

use ns::check_mode;

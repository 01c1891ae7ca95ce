//! Objects as files under a local directory.

mod copy;
mod fdcache;
mod space;
#[cfg(test)]
mod tests;

use std::collections::{HashMap, HashSet};
use std::io::{IoSlice, IoSliceMut};
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use bytes::Bytes;
use rustix::fs::{AtFlags, FallocateFlags, Mode, OFlags};
use rustix::io::Errno;

use self::fdcache::FdCache;
use crate::error::{Result, StoreError};
use crate::id::{lock_index, stripe_in_leaf, ObjectId, WRITE_QUEUES};
use crate::lock;
use crate::store::{
    range_end, write_zeros, Deallocated, Fresh, FsStats, ObjectStore, ReadDone, ReadInto, SeekWhat,
    Stability, WriteDone,
};
use crate::verifier::{new_write_verifier, VerifierCell};

/// Linux's `IOV_MAX`: the most pieces one `pwritev` takes.
const IOV_MAX: usize = 1024;
/// Locks that serialize opening, creating and removing one object (by hash of its id).
const NAME_LOCKS: usize = 64;

/// Settings of a [`LocalStore`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalOptions {
    /// Largest object size accepted: writes or truncates beyond it fail with
    /// [`StoreError::TooBig`]. Clamped to `i64::MAX`, the largest `off_t`.
    pub max_object_size: u64,
    /// Most bytes one read returns (a longer read is answered short, as NFS READ allows), so a
    /// huge `count` from the network cannot make the store allocate gigabytes.
    pub max_read: u32,
    /// How many object files stay open between operations (least recently used are closed
    /// first); 0 opens and closes the file in every operation.
    pub open_files: usize,
    /// Use this write verifier instead of making a fresh one, e.g. the MDS's own, derived from
    /// its boot epoch. It must differ on every start.
    pub verifier: Option<[u8; 8]>,
}

impl Default for LocalOptions {
    fn default() -> Self {
        LocalOptions {
            max_object_size: i64::MAX as u64,
            max_read: 16 << 20,
            open_files: 256,
            verifier: None,
        }
    }
}

/// How many system calls of each kind a [`LocalStore`] made, for tests and benchmarks that
/// check the I/O path (one `pwritev` per WRITE, no sync for UNSTABLE).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct IoCounts {
    /// `openat` of object files (cache misses).
    pub opens: u64,
    /// `pwritev` calls, including retries after short writes.
    pub pwritev: u64,
    /// `pread` calls.
    pub pread: u64,
    /// `fdatasync` calls on object files.
    pub fdatasync: u64,
    /// `fsync` calls on fan-out directories (the first sync of a new object).
    pub dir_fsync: u64,
    /// `copy_file_range` calls (server-side copies).
    pub copy_file_range: u64,
}

#[derive(Debug, Default)]
struct Counters {
    opens: AtomicU64,
    pwritev: AtomicU64,
    pread: AtomicU64,
    fdatasync: AtomicU64,
    dir_fsync: AtomicU64,
    copy_file_range: AtomicU64,
}

fn bump(c: &AtomicU64) {
    c.fetch_add(1, Ordering::Relaxed);
}

/// A fan-out directory: `<a>` or `<a>/<b>` below `objects/`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Dir {
    Mid(u8),
    Leaf(u8, u8),
}

/// The mid directories this store made or found since it was opened, a bit each: a new leaf
/// directory's `mkdir` of its mid directory is then skipped, not answered with EEXIST (all
/// but the first 256 times). Directories are never removed, so a bit once set stays true.
#[derive(Debug, Default)]
struct KnownMids([AtomicU64; 4]);

impl KnownMids {
    fn contains(&self, a: u8) -> bool {
        self.0[usize::from(a / 64)].load(Ordering::Relaxed) & (1 << (a % 64)) != 0
    }

    fn insert(&self, a: u8) {
        self.0[usize::from(a / 64)].fetch_or(1 << (a % 64), Ordering::Relaxed);
    }
}

fn dirs_of(id: ObjectId) -> (Dir, Dir) {
    let (a, b) = (id.file as u8, (id.file >> 8) as u8);
    (Dir::Mid(a), Dir::Leaf(a, b))
}

fn dir_path(d: Dir) -> String {
    match d {
        Dir::Mid(a) => format!("{a:02x}"),
        Dir::Leaf(a, b) => format!("{a:02x}/{b:02x}"),
    }
}

/// Directory entries that may not be durable yet. A new object's entry in its leaf directory
/// (and a new directory's entry in its parent) is only durable once the parent directory is
/// fsynced, which `fdatasync` of the object does not promise; so the first stable write or
/// commit of a new object fsyncs the directories recorded here.
#[derive(Debug, Default)]
struct Unsynced {
    /// New objects, each with the ticket of its create (a remove and re-create gets a new one).
    objects: HashMap<ObjectId, u64>,
    /// New fan-out directories (directories are never removed, so once synced, always synced).
    dirs: HashSet<Dir>,
    next_ticket: u64,
}

impl Unsynced {
    /// Records `id` as unsynced with a new ticket unless it already is; the ticket when it
    /// was recorded now.
    fn record(&mut self, id: ObjectId) -> Option<u64> {
        self.next_ticket += 1;
        let t = self.next_ticket;
        match self.objects.entry(id) {
            std::collections::hash_map::Entry::Vacant(v) => Some(*v.insert(t)),
            std::collections::hash_map::Entry::Occupied(_) => None,
        }
    }
}

/// Where a store keeps its files, and what one file holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Naming {
    /// One file per object under `<root>/objects/` ([`ObjectId::relative_path`]); the store
    /// is the only writer of its root.
    PerObject,
    /// One file per file id under `<root>/files/` ([`shared_relative_path`]), shared by every
    /// stripe of the file and by every data server mounting the root: the `shared` backend.
    PerFile,
}

impl Naming {
    fn subdir(self) -> &'static str {
        match self {
            Naming::PerObject => "objects",
            Naming::PerFile => "files",
        }
    }

    /// The id a store works with: per-file naming folds every stripe into stripe 0, so the
    /// open-file cache, name locks and sync records treat them as the one file they are.
    fn key(self, id: ObjectId) -> ObjectId {
        match self {
            Naming::PerObject => id,
            Naming::PerFile => ObjectId::whole(id.file),
        }
    }

    fn path(self, id: ObjectId) -> String {
        match self {
            Naming::PerObject => id.relative_path(),
            Naming::PerFile => shared_relative_path(id.file),
        }
    }
}

/// Path of file `file` below `<shared_dir>/files/` for [`crate::SharedStore`]: the fan-out of
/// [`ObjectId::relative_path`] without the stripe suffix, e.g. file `0x0123456789abcdef` is
/// `ef/cd/0123456789abcdef`. An on-disk format, like the local one.
pub fn shared_relative_path(file: u64) -> String {
    format!(
        "{:02x}/{:02x}/{:016x}",
        file & 0xff,
        (file >> 8) & 0xff,
        file
    )
}

/// A read at or past an object's end, or of an object that does not exist.
const NOTHING_READ: ReadDone = ReadDone {
    data: Bytes::new(),
    eof: true,
};

/// Objects stored as files under `<root>/objects/` (path mapping: [`ObjectId::relative_path`]).
///
/// * **Zero-copy I/O.** A write hands its `Bytes` pieces to one `pwritev`; a read `pread`s into
///   a new zero-filled `BytesMut` (calloc'd, so large buffers come as fresh zero pages with no
///   memset) that is frozen and returned.
/// * **Durability.** UNSTABLE writes return after `pwritev`; DATA_SYNC and FILE_SYNC writes,
///   COMMIT, truncate and allocate call `fdatasync` before returning (it covers the size, and
///   the store keeps no other metadata: the MDS owns file attributes). COMMIT ignores its
///   range and syncs the whole object, which is more than asked. The first sync of a new
///   object also fsyncs its leaf directory (and any fan-out directory created for it); a
///   remove fsyncs the leaf directory. [`LocalStore::open`] calls `syncfs` once, so objects a
///   previous process created but never synced are durable before anything is acknowledged.
/// * **Verifier.** Fresh on every [`LocalStore::open`] (so each process start, and each open
///   within one process, gets another; see [`new_write_verifier`]), and replaced whenever an
///   `fdatasync` or `pwritev` fails with an I/O error: the kernel may have dropped unstable
///   pages, so clients must re-send them (as knfsd resets its verifier on writeback errors).
/// * **Open files.** Up to [`LocalOptions::open_files`] objects stay open in an LRU cache, so
///   a stream of WRITEs to one object costs one `pwritev` each, not open + write + close; a
///   cached descriptor also sees writeback errors that an `fdatasync` on a newly opened one
///   could miss. Opening, creating and removing one object are serialized, so a remove never
///   leaves a descriptor of the unlinked file in the cache.
/// * **One owner.** A root is used by one `LocalStore` at a time (one process): another
///   writer's removes would not evict this store's cached descriptors.
/// * **Deallocate** punches a hole (`fallocate(PUNCH_HOLE | KEEP_SIZE)`); where the file
///   system cannot (EOPNOTSUPP), it writes zeros and says so in [`Deallocated`].
#[derive(Debug)]
pub struct LocalStore {
    root: PathBuf,
    naming: Naming,
    objects: OwnedFd,
    opts: LocalOptions,
    cache: Mutex<FdCache>,
    names: [Mutex<()>; NAME_LOCKS],
    writes: [Mutex<()>; WRITE_QUEUES],
    unsynced: Mutex<Unsynced>,
    verifier: VerifierCell,
    /// `<root>/store.id` ([`crate::identity`]).
    identity: [u8; 16],
    counts: Counters,
    /// The objects directory is on a memory file system ([`on_memory_fs`]).
    in_memory: bool,
    known_mids: KnownMids,
    /// `preadv2(RWF_NOWAIT)` failed with EOPNOTSUPP: [`ObjectStore::read_into_now`] no
    /// longer tries.
    no_nowait: AtomicBool,
}

/// Whether the directory `dir` is on tmpfs or ramfs, where reads, writes and syncs only copy
/// memory ([`ObjectStore::in_memory`]). Unknown (`fstatfs` failed) counts as a device.
fn on_memory_fs(dir: &OwnedFd) -> bool {
    const TMPFS_MAGIC: u64 = 0x0102_1994;
    const RAMFS_MAGIC: u64 = 0x8584_58f6;
    // `f_type`'s integer type differs between architectures.
    #[allow(clippy::unnecessary_cast)]
    rustix::fs::fstatfs(dir).is_ok_and(|s| matches!(s.f_type as u64, TMPFS_MAGIC | RAMFS_MAGIC))
}

pub(crate) fn io_errno(e: std::io::Error) -> Errno {
    e.raw_os_error().map_or(Errno::IO, Errno::from_raw_os_error)
}

impl LocalStore {
    /// Opens (creating if needed) the store under `root` with default options.
    pub fn open(root: impl AsRef<Path>) -> Result<Self> {
        Self::open_with(root, LocalOptions::default())
    }

    /// Opens (creating if needed) the store under `root`.
    pub fn open_with(root: impl AsRef<Path>, opts: LocalOptions) -> Result<Self> {
        Self::open_named(root.as_ref(), opts, Naming::PerObject)
    }

    /// Opens (creating if needed) a store under `root` with the given file naming.
    pub(crate) fn open_named(root: &Path, mut opts: LocalOptions, naming: Naming) -> Result<Self> {
        let root = root.to_path_buf();
        let dir = root.join(naming.subdir());
        let fresh = !dir.exists();
        std::fs::create_dir_all(&dir)
            .map_err(|e| StoreError::from_errno("mkdir objects", io_errno(e), 0, 0))?;
        let open_dir = |p: &Path| {
            rustix::fs::open(
                p,
                OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
                Mode::empty(),
            )
            .map_err(|e| StoreError::from_errno("open objects", e, 0, 0))
        };
        let objects = open_dir(&dir)?;
        if fresh {
            rustix::fs::fsync(open_dir(&root)?)
                .map_err(|e| StoreError::from_errno("fsync root", e, 0, 0))?;
        }
        rustix::fs::syncfs(&objects).map_err(|e| StoreError::from_errno("syncfs", e, 0, 0))?;
        opts.max_object_size = opts.max_object_size.min(i64::MAX as u64);
        let verifier = VerifierCell::new(opts.verifier.unwrap_or_else(new_write_verifier));
        let identity = crate::identity::load_or_create(&root)?;
        tracing::debug!(root = %root.display(), verifier = ?verifier.get(), "object store open");
        let in_memory = on_memory_fs(&objects);
        Ok(LocalStore {
            root,
            naming,
            objects,
            cache: Mutex::new(FdCache::new(opts.open_files)),
            opts,
            names: std::array::from_fn(|_| Mutex::new(())),
            writes: std::array::from_fn(|_| Mutex::new(())),
            unsynced: Mutex::new(Unsynced::default()),
            verifier,
            identity,
            counts: Counters::default(),
            in_memory,
            known_mids: KnownMids::default(),
            no_nowait: AtomicBool::new(false),
        })
    }

    /// The directory this store was opened on.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// System calls made so far.
    pub fn io_counts(&self) -> IoCounts {
        let c = &self.counts;
        let g = |a: &AtomicU64| a.load(Ordering::Relaxed);
        IoCounts {
            opens: g(&c.opens),
            pwritev: g(&c.pwritev),
            pread: g(&c.pread),
            fdatasync: g(&c.fdatasync),
            dir_fsync: g(&c.dir_fsync),
            copy_file_range: g(&c.copy_file_range),
        }
    }

    fn name_lock(&self, id: ObjectId) -> &Mutex<()> {
        &self.names[lock_index(id, NAME_LOCKS)]
    }

    /// The lock a write to `id` holds while it copies its data in (that of its
    /// [`ObjectId::write_queue`]). A file system serializes buffered writes to one file
    /// anyway (the inode's lock, taken for the whole copy), and the kernel's waiters on that
    /// lock spin while its holder runs: with the 8 WRITEs in flight that a client keeps per
    /// data server, most of them to one object, the spinning was 7 % of a data server's CPU
    /// on tmpfs (issue 22). Waiting here sleeps instead; a caller on async workers waits for
    /// the queue before it calls, so that this wait never blocks a worker.
    fn write_lock(&self, id: ObjectId) -> MutexGuard<'_, ()> {
        lock(&self.writes[id.write_queue()])
    }

    fn open_at(&self, path: &str, flags: OFlags) -> rustix::io::Result<OwnedFd> {
        bump(&self.counts.opens);
        let flags = flags | OFlags::CLOEXEC | OFlags::NOFOLLOW;
        rustix::fs::openat(&self.objects, path, flags, Mode::from_raw_mode(0o600))
    }

    /// The object's open file: from the cache, else opened (created if `create`). `None` when
    /// the object does not exist and `create` is false.
    fn file(&self, id: ObjectId, create: bool) -> Result<Option<Arc<OwnedFd>>> {
        if let Some(fd) = lock(&self.cache).get(id) {
            return Ok(Some(fd));
        }
        let _name = lock(self.name_lock(id));
        if let Some(fd) = lock(&self.cache).get(id) {
            return Ok(Some(fd));
        }
        let path = self.naming.path(id);
        // A write to an object that is not open here is most often its first (a new file's
        // data): try to create it first, one `open` where asking whether it exists and then
        // creating it took two (three and two `mkdir`s in a new leaf directory).
        if create {
            if let Some(fd) = self.create(id, &path)? {
                return Ok(Some(self.cache_fd(id, fd)));
            }
        }
        let fd = match self.open_at(&path, OFlags::RDWR) {
            Ok(fd) if self.naming == Naming::PerFile => {
                // Another data server may have created the file without syncing its directory
                // entry yet: the first sync through this descriptor syncs the directories too.
                lock(&self.unsynced).record(id);
                fd
            }
            Ok(fd) => fd,
            Err(Errno::NOENT) if !create => return Ok(None),
            // Removed (by another data server sharing the directory) since it was found:
            // create it after all.
            Err(Errno::NOENT) => self.create(id, &path)?.ok_or(StoreError::Io {
                op: "create",
                errno: Errno::EXIST,
            })?,
            // A read-only file system still serves reads; such a descriptor is not cached.
            Err(Errno::ROFS) if !create => match self.open_at(&path, OFlags::RDONLY) {
                Ok(fd) => return Ok(Some(Arc::new(fd))),
                Err(Errno::NOENT) => return Ok(None),
                Err(e) => return Err(StoreError::from_errno("open", e, 0, 0)),
            },
            Err(e) => return Err(StoreError::from_errno("open", e, 0, 0)),
        };
        Ok(Some(self.cache_fd(id, fd)))
    }

    /// `fd`, now the open file of `id` in the cache.
    fn cache_fd(&self, id: ObjectId, fd: OwnedFd) -> Arc<OwnedFd> {
        let fd = Arc::new(fd);
        lock(&self.cache).insert(id, fd.clone());
        fd
    }

    /// Creates the object's file (and fan-out directories) if it does not exist; `None` if it
    /// does. The new directory entry is recorded as unsynced *before* it is made, so nobody
    /// can see the entry without the record (a record the object already had stays as it
    /// is). Called with the object's name lock held.
    fn create(&self, id: ObjectId, path: &str) -> Result<Option<OwnedFd>> {
        let ticket = lock(&self.unsynced).record(id);
        let flags = OFlags::RDWR | OFlags::CREATE | OFlags::EXCL;
        let result = match self.open_at(path, flags) {
            Err(Errno::NOENT) => self.make_dirs(id).and_then(|()| self.open_at(path, flags)),
            r => r,
        };
        match result {
            Ok(fd) => Ok(Some(fd)),
            Err(e) => {
                let mut u = lock(&self.unsynced);
                if ticket.is_some() && u.objects.get(&id) == ticket.as_ref() {
                    u.objects.remove(&id);
                }
                match e {
                    Errno::EXIST => Ok(None),
                    e => Err(StoreError::from_errno("create", e, 0, 0)),
                }
            }
        }
    }

    fn make_dirs(&self, id: ObjectId) -> rustix::io::Result<()> {
        let (mid, leaf) = dirs_of(id);
        for d in [mid, leaf] {
            let mid = match d {
                Dir::Mid(a) if self.known_mids.contains(a) => continue,
                Dir::Mid(a) => Some(a),
                Dir::Leaf(..) => None,
            };
            lock(&self.unsynced).dirs.insert(d);
            match rustix::fs::mkdirat(&self.objects, dir_path(d), Mode::from_raw_mode(0o700)) {
                Ok(()) | Err(Errno::EXIST) => {}
                Err(e) => return Err(e),
            }
            if let Some(a) = mid {
                self.known_mids.insert(a);
            }
        }
        Ok(())
    }

    /// Unlinks object `id` (a key of [`Naming::key`]) and forgets its descriptor; whether it
    /// existed. Not durable until its leaf directory is fsynced.
    fn unlink(&self, id: ObjectId) -> Result<bool> {
        let _name = lock(self.name_lock(id));
        lock(&self.cache).remove(id);
        match rustix::fs::unlinkat(&self.objects, self.naming.path(id), AtFlags::empty()) {
            Ok(()) => {}
            Err(Errno::NOENT) => return Ok(false),
            Err(e) => return Err(StoreError::from_errno("unlink", e, 0, 0)),
        }
        lock(&self.unsynced).objects.remove(&id);
        Ok(true)
    }

    fn fsync_dir(&self, d: Option<Dir>) -> Result<()> {
        match d {
            None => self.fsync_open_dir(&self.objects),
            Some(d) => {
                let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
                let fd = rustix::fs::openat(&self.objects, dir_path(d), flags, Mode::empty())
                    .map_err(|e| StoreError::from_errno("fsync dir", e, 0, 0))?;
                self.fsync_open_dir(&fd)
            }
        }
    }

    /// fsync of a directory this store has open (its entries made durable).
    fn fsync_open_dir(&self, dir: impl AsFd) -> Result<()> {
        bump(&self.counts.dir_fsync);
        rustix::fs::fsync(dir).map_err(|e| StoreError::from_errno("fsync dir", e, 0, 0))
    }

    /// Makes the object's directory entry durable if it is new (see [`Unsynced`]).
    fn sync_entries(&self, id: ObjectId) -> Result<()> {
        let (mid, leaf) = dirs_of(id);
        let (ticket, leaf_new, mid_new) = {
            let u = lock(&self.unsynced);
            let Some(&t) = u.objects.get(&id) else {
                return Ok(());
            };
            (t, u.dirs.contains(&leaf), u.dirs.contains(&mid))
        };
        self.fsync_dir(Some(leaf))?;
        if leaf_new {
            self.fsync_dir(Some(mid))?;
        }
        if mid_new {
            self.fsync_dir(None)?;
        }
        let mut u = lock(&self.unsynced);
        if u.objects.get(&id) == Some(&ticket) {
            u.objects.remove(&id);
        }
        if leaf_new {
            u.dirs.remove(&leaf);
        }
        if mid_new {
            u.dirs.remove(&mid);
        }
        Ok(())
    }

    /// `fdatasync` plus the directory entries of a new object. A failed sync may have dropped
    /// unstable pages, so it also replaces the verifier.
    fn sync(&self, id: ObjectId, fd: &OwnedFd) -> Result<()> {
        bump(&self.counts.fdatasync);
        if let Err(e) = rustix::fs::fdatasync(fd) {
            self.verifier.renew();
            tracing::error!(object = %id, error = %e, "fdatasync failed; write verifier renewed");
            return Err(StoreError::from_errno("fdatasync", e, 0, 0));
        }
        self.sync_entries(id)
    }

    fn pwritev_all(&self, fd: &OwnedFd, offset: u64, data: &[Bytes], total: u64) -> Result<()> {
        let mut slices: Vec<IoSlice<'_>> = data
            .iter()
            .filter(|b| !b.is_empty())
            .map(|b| IoSlice::new(b))
            .collect();
        let mut bufs: &mut [IoSlice<'_>] = &mut slices;
        let mut at = offset;
        while !bufs.is_empty() {
            bump(&self.counts.pwritev);
            let n_iov = bufs.len().min(IOV_MAX);
            match rustix::io::pwritev(fd, &bufs[..n_iov], at) {
                Ok(0) => {
                    return Err(StoreError::Io {
                        op: "pwritev",
                        errno: Errno::IO,
                    })
                }
                Ok(n) => {
                    at += n as u64;
                    IoSlice::advance_slices(&mut bufs, n);
                }
                Err(Errno::INTR) => {}
                Err(e) => {
                    let err = StoreError::from_errno("pwritev", e, offset, total);
                    if matches!(err, StoreError::Io { .. }) {
                        self.verifier.renew();
                    }
                    return Err(err);
                }
            }
        }
        Ok(())
    }

    fn file_size(fd: &OwnedFd) -> Result<u64> {
        let st = rustix::fs::fstat(fd).map_err(|e| StoreError::from_errno("fstat", e, 0, 0))?;
        Ok(st.st_size.max(0) as u64)
    }

    /// What a read of `len` bytes at `offset` of the object open as `fd` covers: the object's
    /// size and how many bytes to read (at most `max_read`); `None` at or past its end.
    fn read_span(&self, fd: &OwnedFd, offset: u64, len: u32) -> Result<Option<(u64, usize)>> {
        let size = Self::file_size(fd)?;
        if offset >= size {
            return Ok(None);
        }
        let want = (size - offset).min(u64::from(len.min(self.opts.max_read))) as usize;
        Ok(Some((size, want)))
    }

    fn must_create(&self, id: ObjectId) -> Result<Arc<OwnedFd>> {
        self.file(id, true)?.ok_or(StoreError::Io {
            op: "create",
            errno: Errno::NOENT,
        })
    }
}

impl ObjectStore for LocalStore {
    fn write(
        &self,
        id: ObjectId,
        offset: u64,
        data: &[Bytes],
        stable: Stability,
    ) -> Result<WriteDone> {
        let id = self.naming.key(id);
        let len = data
            .iter()
            .fold(0u64, |n, b| n.saturating_add(b.len() as u64));
        range_end(offset, len, self.opts.max_object_size)?;
        if len == 0 {
            return Ok(WriteDone {
                count: 0,
                committed: stable,
            });
        }
        let fd = self.must_create(id)?;
        {
            let _serial = self.write_lock(id);
            self.pwritev_all(&fd, offset, data, len)?;
        }
        if stable.is_stable() {
            self.sync(id, &fd)?;
        }
        Ok(WriteDone {
            count: len,
            committed: stable,
        })
    }

    fn read(&self, id: ObjectId, offset: u64, len: u32) -> Result<ReadDone> {
        self.read_into(id, offset, len, &mut Fresh::default())
    }

    fn read_into(
        &self,
        id: ObjectId,
        offset: u64,
        len: u32,
        into: &mut dyn ReadInto,
    ) -> Result<ReadDone> {
        let id = self.naming.key(id);
        let Some(fd) = self.file(id, false)? else {
            return Ok(NOTHING_READ);
        };
        let Some((size, want)) = self.read_span(&fd, offset, len)? else {
            return Ok(NOTHING_READ);
        };
        let buf = into.space(want);
        let mut got = 0;
        while got < want {
            bump(&self.counts.pread);
            match rustix::io::pread(&fd, &mut buf[got..], offset + got as u64) {
                Ok(0) => break,
                Ok(n) => got += n,
                Err(Errno::INTR) => {}
                Err(e) => return Err(StoreError::from_errno("pread", e, offset, want as u64)),
            }
        }
        let eof = got < want || offset + got as u64 >= size;
        Ok(ReadDone {
            data: into.freeze(got),
            eof,
        })
    }

    /// A read of an object in the open-file cache (opening one may wait for its directory's
    /// blocks) with `preadv2(RWF_NOWAIT)`, which returns what the page cache holds without
    /// waiting for the device or for the file's lock. Anything short of every byte asked
    /// for (a page not cached, EAGAIN, a kernel or file system without RWF_NOWAIT) is
    /// `None`: the caller reads again where waiting is fine.
    fn read_into_now(
        &self,
        id: ObjectId,
        offset: u64,
        len: u32,
        into: &mut dyn ReadInto,
    ) -> Option<Result<ReadDone>> {
        if self.no_nowait.load(Ordering::Relaxed) {
            return None;
        }
        let id = self.naming.key(id);
        let fd = lock(&self.cache).get(id)?;
        let (size, want) = match self.read_span(&fd, offset, len) {
            Ok(Some(span)) => span,
            Ok(None) => return Some(Ok(NOTHING_READ)),
            Err(e) => return Some(Err(e)),
        };
        let buf = into.space(want);
        bump(&self.counts.pread);
        let flags = rustix::io::ReadWriteFlags::NOWAIT;
        match rustix::io::preadv2(&*fd, &mut [IoSliceMut::new(buf)], offset, flags) {
            Ok(n) if n == want => Some(Ok(ReadDone {
                data: into.freeze(n),
                eof: offset + n as u64 >= size,
            })),
            Err(Errno::OPNOTSUPP) => {
                // This kernel or file system has no RWF_NOWAIT: not asked again.
                self.no_nowait.store(true, Ordering::Relaxed);
                None
            }
            _ => None,
        }
    }

    fn commit(&self, id: ObjectId, _offset: u64, _len: u64) -> Result<()> {
        let id = self.naming.key(id);
        match self.file(id, false)? {
            Some(fd) => self.sync(id, &fd),
            None => Ok(()),
        }
    }

    fn truncate(&self, id: ObjectId, size: u64) -> Result<()> {
        let id = self.naming.key(id);
        range_end(size, 0, self.opts.max_object_size)?;
        let Some(fd) = self.file(id, size > 0)? else {
            return Ok(());
        };
        rustix::fs::ftruncate(&*fd, size)
            .map_err(|e| StoreError::from_errno("ftruncate", e, size, 0))?;
        self.sync(id, &fd)
    }

    fn size(&self, id: ObjectId) -> Result<u64> {
        let id = self.naming.key(id);
        if let Some(fd) = lock(&self.cache).get(id) {
            return Self::file_size(&fd);
        }
        match rustix::fs::statat(
            &self.objects,
            self.naming.path(id),
            AtFlags::SYMLINK_NOFOLLOW,
        ) {
            Ok(st) => Ok(st.st_size.max(0) as u64),
            Err(Errno::NOENT) => Ok(0),
            Err(e) => Err(StoreError::from_errno("stat", e, 0, 0)),
        }
    }

    fn remove(&self, id: ObjectId) -> Result<()> {
        let id = self.naming.key(id);
        if self.unlink(id)? {
            self.fsync_dir(Some(dirs_of(id).1))?;
        }
        Ok(())
    }

    fn remove_file(&self, file: u64) -> Result<u32> {
        if self.naming == Naming::PerFile {
            let id = ObjectId::whole(file);
            let existed = rustix::fs::statat(
                &self.objects,
                self.naming.path(id),
                AtFlags::SYMLINK_NOFOLLOW,
            )
            .is_ok();
            self.remove(id)?;
            return Ok(u32::from(existed));
        }
        // Every stripe of a file lives in the same leaf directory (the fan-out uses only the
        // file id), so one directory listing finds them. The leaf is opened relative to the
        // objects directory: a path from `/` cost a walk of every component above it per
        // removed file (with `read_dir`, a tenth of the CPU of a data server removing files).
        let (_, leaf) = dirs_of(ObjectId::whole(file));
        let leaf_path = dir_path(leaf);
        let dir = match self.open_at(&leaf_path, OFlags::RDONLY | OFlags::DIRECTORY) {
            Ok(d) => d,
            Err(Errno::NOENT) => return Ok(0),
            Err(e) => return Err(StoreError::from_errno("open leaf directory", e, 0, 0)),
        };
        let mut ids = Vec::new();
        // `Dir::new` lists through this descriptor; `read_from` would open a second one (an
        // `fcntl`, an `openat` and a `close` more per file removed).
        let mut entries =
            rustix::fs::Dir::new(dir).map_err(|e| StoreError::from_errno("readdir", e, 0, 0))?;
        for entry in &mut entries {
            let entry = entry.map_err(|e| StoreError::from_errno("readdir", e, 0, 0))?;
            if let Some(stripe) = stripe_in_leaf(entry.file_name().to_bytes(), file) {
                ids.push(ObjectId { file, stripe });
            }
        }
        // One fsync of the leaf makes every unlink in it durable: a file with many stripes
        // here cost one directory fsync per object (a journal commit each on a disk).
        let mut removed = 0;
        for &id in &ids {
            removed += u32::from(self.unlink(id)?);
        }
        if removed > 0 {
            let dir = entries
                .fd()
                .map_err(|e| StoreError::from_errno("fsync dir", e, 0, 0))?;
            self.fsync_open_dir(dir)?;
        }
        Ok(ids.len() as u32)
    }

    fn allocate(&self, id: ObjectId, offset: u64, len: u64) -> Result<()> {
        let id = self.naming.key(id);
        range_end(offset, len, self.opts.max_object_size)?;
        if len == 0 {
            return Ok(());
        }
        let fd = self.must_create(id)?;
        rustix::fs::fallocate(&*fd, FallocateFlags::empty(), offset, len)
            .map_err(|e| StoreError::from_errno("fallocate", e, offset, len))?;
        self.sync(id, &fd)
    }

    fn deallocate(&self, id: ObjectId, offset: u64, len: u64) -> Result<Deallocated> {
        let id = self.naming.key(id);
        let Some(fd) = self.file(id, false)? else {
            return Ok(Deallocated::Nothing);
        };
        let end = offset.saturating_add(len).min(Self::file_size(&fd)?);
        if offset >= end {
            return Ok(Deallocated::Nothing);
        }
        let punch = FallocateFlags::PUNCH_HOLE | FallocateFlags::KEEP_SIZE;
        match rustix::fs::fallocate(&*fd, punch, offset, end - offset) {
            Ok(()) => self.sync(id, &fd).map(|()| Deallocated::HolePunched),
            Err(Errno::OPNOTSUPP) => write_zeros(self, id, offset, end - offset),
            Err(e) => Err(StoreError::from_errno("fallocate", e, offset, len)),
        }
    }

    fn seek(&self, id: ObjectId, offset: u64, what: SeekWhat) -> Result<Option<u64>> {
        let id = self.naming.key(id);
        let Some(fd) = self.file(id, false)? else {
            return Ok(None);
        };
        // lseek takes an off_t: an offset beyond it is past every object's end.
        if offset > i64::MAX as u64 {
            return Ok(None);
        }
        // The cached descriptor is shared, but nothing else uses its file position (reads
        // and writes are pread/pwritev), so moving it is harmless.
        let pos = match what {
            SeekWhat::Data => rustix::fs::SeekFrom::Data(offset),
            SeekWhat::Hole => rustix::fs::SeekFrom::Hole(offset),
        };
        match rustix::fs::seek(&*fd, pos) {
            Ok(at) => Ok(Some(at)),
            Err(Errno::NXIO) => Ok(None),
            Err(e) => Err(StoreError::from_errno("lseek", e, offset, 0)),
        }
    }

    fn space_used(&self, id: ObjectId) -> Result<u64> {
        let id = self.naming.key(id);
        let Some(fd) = self.file(id, false)? else {
            return Ok(0);
        };
        let st = rustix::fs::fstat(&*fd).map_err(|e| StoreError::from_errno("fstat", e, 0, 0))?;
        space::data_blocks(&fd, &st)
    }

    fn copy_range(
        &self,
        src: ObjectId,
        dst: ObjectId,
        src_off: u64,
        dst_off: u64,
        len: u64,
    ) -> Result<u64> {
        self.copy_objects(src, dst, src_off, dst_off, len)
    }

    fn clone_range(
        &self,
        src: ObjectId,
        dst: ObjectId,
        src_off: u64,
        dst_off: u64,
        len: u64,
    ) -> Result<()> {
        self.clone_objects(src, dst, src_off, dst_off, len)
    }

    fn verifier(&self) -> [u8; 8] {
        self.verifier.get()
    }

    fn identity(&self) -> [u8; 16] {
        self.identity
    }

    fn in_memory(&self) -> bool {
        self.in_memory
    }

    fn write_queue(&self, id: ObjectId) -> Option<usize> {
        Some(self.naming.key(id).write_queue())
    }

    fn statfs(&self) -> Result<FsStats> {
        let s = rustix::fs::fstatvfs(&self.objects)
            .map_err(|e| StoreError::from_errno("statvfs", e, 0, 0))?;
        let bytes = |blocks: u64| blocks.saturating_mul(s.f_frsize);
        Ok(FsStats {
            total: bytes(s.f_blocks),
            free: bytes(s.f_bfree),
            avail: bytes(s.f_bavail),
            files: s.f_files,
            ffree: s.f_ffree,
        })
    }
}

//! The `fuser::Filesystem` over the client's handle API, and mounting it.

use std::collections::HashMap;
use std::ffi::OsStr;
use std::io;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::SystemTime;

use bytes::Bytes;
use client::{Client, File, FileType as Kind, Metadata, Node, OpenOptions, SetAttrs, SetTime};
use fuser::{
    Config, Errno, FileAttr, FileHandle, FileType, FopenFlags, Generation, INodeNo, KernelConfig,
    LockOwner, MountOption, OpenFlags, RenameFlags, ReplyAttr, ReplyCreate, ReplyData,
    ReplyDirectory, ReplyEmpty, ReplyEntry, ReplyOpen, ReplyStatfs, ReplyWrite, ReplyXattr,
    Request, SessionACL, TimeOrNow, WriteFlags,
};
use tokio::runtime::Handle;

use crate::inodes::Inodes;
use crate::options::MountOptions;

/// The largest READ and WRITE the kernel sends (FUSE's limit; the library stripes them).
const MAX_IO: u32 = 1 << 20;
/// What one READDIR asks the server for.
const DIR_PAGE: u32 = 64 * 1024;

/// An open file of the mount.
struct Open {
    file: File,
    append: bool,
}

/// What the worker threads share.
struct Shared {
    client: Client,
    rt: Handle,
    opts: MountOptions,
    inodes: Mutex<Inodes>,
    files: Mutex<HashMap<u64, Arc<Open>>>,
    /// Cookie verifiers of open directories, by FUSE file handle.
    dirs: Mutex<HashMap<u64, [u8; 8]>>,
    /// The change attribute each file had when last opened (keep_cache decisions).
    changes: Mutex<HashMap<u64, u64>>,
    next_fh: AtomicU64,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn errno(e: client::Error) -> Errno {
    Errno::from_i32(e.errno())
}

/// Answers a call with nothing to return but success or the errno.
fn answer_empty(r: Result<(), Errno>, reply: ReplyEmpty) {
    match r {
        Ok(()) => reply.ok(),
        Err(e) => reply.error(e),
    }
}

fn name_of(name: &OsStr) -> Result<&str, Errno> {
    name.to_str().ok_or(Errno::EINVAL)
}

/// A numeric owner (`1000`, or `1000@domain`) as an id; names the server did not map are 0.
fn id_of(owner: &str) -> u32 {
    owner
        .split('@')
        .next()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0)
}

fn kind_of(k: &Kind) -> FileType {
    match k {
        Kind::File => FileType::RegularFile,
        Kind::Dir => FileType::Directory,
        Kind::Symlink => FileType::Symlink,
        // The only other objects this mount makes are fifos (mknod).
        Kind::Other => FileType::NamedPipe,
    }
}

fn time(t: Option<TimeOrNow>) -> Option<SetTime> {
    t.map(|t| match t {
        TimeOrNow::Now => SetTime::ServerNow,
        TimeOrNow::SpecificTime(t) => SetTime::At(t),
    })
}

impl Shared {
    fn attr(&self, m: &Metadata) -> FileAttr {
        let ino = lock(&self.inodes).ino_of(m.fileid);
        FileAttr {
            ino: INodeNo(ino),
            size: m.size,
            blocks: m.space_used.div_ceil(512),
            atime: m.atime,
            mtime: m.mtime,
            ctime: m.ctime,
            crtime: SystemTime::UNIX_EPOCH,
            kind: kind_of(&m.file_type),
            perm: (m.mode & 0o7777) as u16,
            nlink: m.nlink,
            uid: id_of(&m.owner),
            gid: id_of(&m.group),
            rdev: 0,
            blksize: MAX_IO,
            flags: 0,
        }
    }

    fn node(&self, ino: INodeNo) -> Result<Node, Errno> {
        lock(&self.inodes).get(ino.0).ok_or(Errno::ESTALE)
    }

    fn open_file(&self, fh: FileHandle) -> Result<Arc<Open>, Errno> {
        lock(&self.files).get(&fh.0).cloned().ok_or(Errno::EBADF)
    }

    /// An entry reply: one more lookup of `node`.
    fn entry(&self, node: &Node, meta: &Metadata, reply: ReplyEntry) {
        lock(&self.inodes).remember(node);
        let ttl = self.opts.attr_timeout;
        reply.entry(&ttl, &self.attr(meta), Generation(0));
    }

    /// Answers a call that makes or finds a name: its entry, or the errno.
    fn answer_entry(&self, r: Result<(Node, Metadata), Errno>, reply: ReplyEntry) {
        match r {
            Ok((node, meta)) => self.entry(&node, &meta, reply),
            Err(e) => reply.error(e),
        }
    }

    /// Attributes of `ino` as this client sees them: an open File of it knows writes not
    /// yet sent (the size), the server the rest.
    async fn getattr(&self, ino: INodeNo, fh: Option<FileHandle>) -> Result<Metadata, Errno> {
        let open = match fh {
            Some(fh) => self.open_file(fh).ok(),
            None => None,
        };
        if let Some(o) = open {
            return o.file.metadata().await.map_err(errno);
        }
        let node = self.node(ino)?;
        let mut m = self.client.getattr(&node).await.map_err(errno)?;
        let size = lock(&self.files)
            .values()
            .filter(|o| o.file.node() == node)
            .map(|o| o.file.size())
            .max();
        if let Some(s) = size {
            m.size = m.size.max(s);
        }
        Ok(m)
    }

    fn add_file(&self, file: File, append: bool) -> u64 {
        let fh = self.next_fh.fetch_add(1, Ordering::Relaxed);
        lock(&self.files).insert(fh, Arc::new(Open { file, append }));
        fh
    }

    /// Whether the kernel may keep its page cache of `ino`: its change attribute is the
    /// one of the last open (nothing changed it in between).
    fn keep_cache(&self, ino: u64, change: u64) -> FopenFlags {
        match lock(&self.changes).insert(ino, change) {
            Some(c) if c == change => FopenFlags::FOPEN_KEEP_CACHE,
            _ => FopenFlags::empty(),
        }
    }

    /// Sends every open file's writes and COMMITs them (before an unmount).
    async fn flush_all(&self) {
        let open: Vec<Arc<Open>> = lock(&self.files).values().cloned().collect();
        for o in open {
            if let Err(e) = o.file.fsync().await {
                tracing::warn!("flushing an open file before unmounting: {e}");
            }
        }
    }

    /// Closes every file the kernel left open (after an unmount).
    async fn close_all(&self) {
        let open: Vec<Arc<Open>> = lock(&self.files).drain().map(|(_, o)| o).collect();
        for o in open {
            close(o).await;
        }
    }
}

/// Closes `o` (flush, COMMIT, LAYOUTCOMMIT, CLOSE); a File still used elsewhere is only
/// flushed and closes when its last user drops it.
async fn close(o: Arc<Open>) {
    let r = match Arc::try_unwrap(o) {
        Ok(o) => o.file.close().await,
        Err(o) => o.file.fsync().await,
    };
    if let Err(e) = r {
        tracing::warn!("closing a file: {e}");
    }
}

/// The file system the kernel talks to.
struct PnfsFs(Arc<Shared>);

impl PnfsFs {
    fn run<F: std::future::Future>(&self, f: F) -> F::Output {
        self.0.rt.block_on(f)
    }
}

impl fuser::Filesystem for PnfsFs {
    fn init(&mut self, _req: &Request, config: &mut KernelConfig) -> io::Result<()> {
        let _ = config.set_max_write(MAX_IO);
        let _ = config.set_max_readahead(MAX_IO);
        Ok(())
    }

    fn lookup(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        let s = &self.0;
        let r = self.run(async {
            let dir = s.node(parent)?;
            s.client
                .lookup_in(&dir, name_of(name)?)
                .await
                .map_err(errno)
        });
        s.answer_entry(r, reply)
    }

    fn forget(&self, _req: &Request, ino: INodeNo, nlookup: u64) {
        lock(&self.0.inodes).forget(ino.0, nlookup);
    }

    fn getattr(&self, _req: &Request, ino: INodeNo, fh: Option<FileHandle>, reply: ReplyAttr) {
        let s = &self.0;
        match self.run(s.getattr(ino, fh)) {
            Ok(m) => reply.attr(&s.opts.attr_timeout, &s.attr(&m)),
            Err(e) => reply.error(e),
        }
    }

    fn setattr(
        &self,
        _req: &Request,
        ino: INodeNo,
        mode: Option<u32>,
        uid: Option<u32>,
        gid: Option<u32>,
        size: Option<u64>,
        atime: Option<TimeOrNow>,
        mtime: Option<TimeOrNow>,
        _ctime: Option<SystemTime>,
        fh: Option<FileHandle>,
        _crtime: Option<SystemTime>,
        _chgtime: Option<SystemTime>,
        _bkuptime: Option<SystemTime>,
        _flags: Option<fuser::BsdFileFlags>,
        reply: ReplyAttr,
    ) {
        let s = &self.0;
        let r = self.run(async {
            let node = s.node(ino)?;
            let open = fh.and_then(|fh| s.open_file(fh).ok());
            let mut set = SetAttrs {
                mode: mode.map(|m| m & 0o7777),
                uid,
                gid,
                size,
                atime: time(atime),
                mtime: time(mtime),
            };
            // A size change through an open File: its buffered writes go first and its
            // cached size follows.
            if let (Some(o), Some(len)) = (&open, size) {
                o.file.set_len(len).await.map_err(errno)?;
                set.size = None;
            }
            if set == SetAttrs::default() {
                return s.getattr(ino, fh).await;
            }
            s.client.setattr(&node, &set).await.map_err(errno)
        });
        match r {
            Ok(m) => reply.attr(&s.opts.attr_timeout, &s.attr(&m)),
            Err(e) => reply.error(e),
        }
    }

    fn readlink(&self, _req: &Request, ino: INodeNo, reply: ReplyData) {
        let s = &self.0;
        let r = self.run(async {
            let node = s.node(ino)?;
            s.client.readlink_node(&node).await.map_err(errno)
        });
        match r {
            Ok(t) => reply.data(t.as_bytes()),
            Err(e) => reply.error(e),
        }
    }

    fn mknod(
        &self,
        _req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        _rdev: u32,
        reply: ReplyEntry,
    ) {
        let s = &self.0;
        let perm = mode & !umask & 0o7777;
        let r = self.run(async {
            let dir = s.node(parent)?;
            let name = name_of(name)?;
            match mode & libc::S_IFMT {
                libc::S_IFIFO => s
                    .client
                    .mknod_fifo_in(&dir, name, perm)
                    .await
                    .map_err(errno),
                libc::S_IFREG => {
                    let how = OpenOptions {
                        exclusive: true,
                        truncate: false,
                        mode: perm,
                        ..OpenOptions::create()
                    };
                    let f = s.client.create_in(&dir, name, &how).await.map_err(errno)?;
                    let node = f.node();
                    let m = f.metadata().await.map_err(errno);
                    f.close().await.map_err(errno)?;
                    Ok((node, m?))
                }
                _ => Err(Errno::EPERM),
            }
        });
        s.answer_entry(r, reply)
    }

    fn mkdir(
        &self,
        _req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        reply: ReplyEntry,
    ) {
        let s = &self.0;
        let r = self.run(async {
            let dir = s.node(parent)?;
            s.client
                .mkdir_in(&dir, name_of(name)?, mode & !umask & 0o7777)
                .await
                .map_err(errno)
        });
        s.answer_entry(r, reply)
    }

    fn unlink(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        let s = &self.0;
        let r = self.run(async {
            let dir = s.node(parent)?;
            s.client
                .remove_in(&dir, name_of(name)?)
                .await
                .map_err(errno)
        });
        answer_empty(r, reply)
    }

    fn rmdir(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        let s = &self.0;
        let r = self.run(async {
            let dir = s.node(parent)?;
            s.client.rmdir_in(&dir, name_of(name)?).await.map_err(errno)
        });
        answer_empty(r, reply)
    }

    fn symlink(
        &self,
        _req: &Request,
        parent: INodeNo,
        link_name: &OsStr,
        target: &Path,
        reply: ReplyEntry,
    ) {
        let s = &self.0;
        let r = self.run(async {
            let dir = s.node(parent)?;
            let target = target.to_str().ok_or(Errno::EINVAL)?;
            s.client
                .symlink_in(&dir, name_of(link_name)?, target)
                .await
                .map_err(errno)
        });
        s.answer_entry(r, reply)
    }

    fn rename(
        &self,
        _req: &Request,
        parent: INodeNo,
        name: &OsStr,
        newparent: INodeNo,
        newname: &OsStr,
        flags: RenameFlags,
        reply: ReplyEmpty,
    ) {
        if !flags.is_empty() {
            // RENAME_NOREPLACE / RENAME_EXCHANGE have no NFSv4 operation.
            return reply.error(Errno::EINVAL);
        }
        let s = &self.0;
        let r = self.run(async {
            let from = s.node(parent)?;
            let to = s.node(newparent)?;
            s.client
                .rename_in(&from, name_of(name)?, &to, name_of(newname)?)
                .await
                .map_err(errno)
        });
        answer_empty(r, reply)
    }

    fn link(
        &self,
        _req: &Request,
        ino: INodeNo,
        newparent: INodeNo,
        newname: &OsStr,
        reply: ReplyEntry,
    ) {
        let s = &self.0;
        let r = self.run(async {
            let node = s.node(ino)?;
            let dir = s.node(newparent)?;
            let m = s
                .client
                .link_in(&node, &dir, name_of(newname)?)
                .await
                .map_err(errno)?;
            Ok::<_, Errno>((node, m))
        });
        s.answer_entry(r, reply)
    }

    fn open(&self, _req: &Request, ino: INodeNo, flags: OpenFlags, reply: ReplyOpen) {
        let s = &self.0;
        let f = flags.0;
        let r = self.run(async {
            let node = s.node(ino)?;
            let acc = f & libc::O_ACCMODE;
            let how = OpenOptions {
                read: acc != libc::O_WRONLY,
                write: acc != libc::O_RDONLY,
                create: false,
                exclusive: false,
                truncate: f & libc::O_TRUNC != 0,
                ..OpenOptions::read()
            };
            if how.write && s.opts.read_only {
                return Err(Errno::EROFS);
            }
            // OPEN fetches fresh attributes: the change attribute tells whether the
            // kernel's cached pages are still the file's.
            let file = s.client.open_node(&node, &how).await.map_err(errno)?;
            let m = file.metadata().await.map_err(errno);
            let m = match m {
                Ok(m) => m,
                Err(e) => {
                    let _ = file.close().await;
                    return Err(e);
                }
            };
            let keep = if how.truncate {
                s.keep_cache(ino.0, u64::MAX);
                FopenFlags::empty()
            } else {
                s.keep_cache(ino.0, m.change)
            };
            Ok((s.add_file(file, f & libc::O_APPEND != 0), keep))
        });
        match r {
            Ok((fh, keep)) => reply.opened(FileHandle(fh), keep),
            Err(e) => reply.error(e),
        }
    }

    fn create(
        &self,
        _req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        flags: i32,
        reply: ReplyCreate,
    ) {
        let s = &self.0;
        let r = self.run(async {
            if s.opts.read_only {
                return Err(Errno::EROFS);
            }
            let dir = s.node(parent)?;
            let acc = flags & libc::O_ACCMODE;
            let how = OpenOptions {
                read: acc != libc::O_WRONLY,
                write: true,
                create: true,
                exclusive: flags & libc::O_EXCL != 0,
                truncate: flags & libc::O_TRUNC != 0,
                mode: mode & !umask & 0o7777,
            };
            let file = s
                .client
                .create_in(&dir, name_of(name)?, &how)
                .await
                .map_err(errno)?;
            let node = file.node();
            let m = match file.metadata().await {
                Ok(m) => m,
                Err(e) => {
                    let _ = file.close().await;
                    return Err(errno(e));
                }
            };
            s.keep_cache(s.attr(&m).ino.0, m.change);
            Ok((node, m, s.add_file(file, flags & libc::O_APPEND != 0)))
        });
        match r {
            Ok((node, meta, fh)) => {
                lock(&s.inodes).remember(&node);
                reply.created(
                    &s.opts.attr_timeout,
                    &s.attr(&meta),
                    Generation(0),
                    FileHandle(fh),
                    FopenFlags::empty(),
                );
            }
            Err(e) => reply.error(e),
        }
    }

    fn read(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        size: u32,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyData,
    ) {
        let s = &self.0;
        let r = self.run(async {
            let o = s.open_file(fh)?;
            o.file.read_at(offset, u64::from(size)).await.map_err(errno)
        });
        match r {
            Ok(b) => reply.data(&b),
            Err(e) => reply.error(e),
        }
    }

    fn write(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        data: &[u8],
        _write_flags: WriteFlags,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyWrite,
    ) {
        let s = &self.0;
        let r = self.run(async {
            let o = s.open_file(fh)?;
            // O_APPEND: at the end as this client knows it (its own writes included), not
            // where the kernel's possibly stale size put it.
            let at = if o.append { o.file.size() } else { offset };
            o.file
                .write_at(at, Bytes::copy_from_slice(data))
                .await
                .map_err(errno)
        });
        match r {
            Ok(()) => reply.written(data.len() as u32),
            Err(e) => reply.error(e),
        }
    }

    fn flush(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        _lock_owner: LockOwner,
        reply: ReplyEmpty,
    ) {
        // close(2): the writes go out and are committed before close returns (FUSE's
        // release comes later, asynchronously), so another client's open sees them.
        let s = &self.0;
        let r = self.run(async {
            let o = s.open_file(fh)?;
            o.file.fsync().await.map_err(errno)
        });
        answer_empty(r, reply)
    }

    fn release(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        _flush: bool,
        reply: ReplyEmpty,
    ) {
        let s = &self.0;
        let o = lock(&s.files).remove(&fh.0);
        if let Some(o) = o {
            self.run(close(o));
        }
        reply.ok();
    }

    fn fsync(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        _datasync: bool,
        reply: ReplyEmpty,
    ) {
        let s = &self.0;
        let r = self.run(async {
            let o = s.open_file(fh)?;
            o.file.fsync().await.map_err(errno)
        });
        answer_empty(r, reply)
    }

    fn opendir(&self, _req: &Request, _ino: INodeNo, _flags: OpenFlags, reply: ReplyOpen) {
        let fh = self.0.next_fh.fetch_add(1, Ordering::Relaxed);
        lock(&self.0.dirs).insert(fh, [0; 8]);
        reply.opened(FileHandle(fh), FopenFlags::empty());
    }

    fn readdir(
        &self,
        _req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        mut reply: ReplyDirectory,
    ) {
        let s = &self.0;
        let verifier = if offset == 0 {
            [0; 8]
        } else {
            lock(&s.dirs).get(&fh.0).copied().unwrap_or([0; 8])
        };
        let r = self.run(async {
            let dir = s.node(ino)?;
            s.client
                .readdir_page(&dir, offset, verifier, DIR_PAGE)
                .await
                .map_err(errno)
        });
        let page = match r {
            Ok(p) => p,
            Err(e) => return reply.error(e),
        };
        lock(&s.dirs).insert(fh.0, page.verifier);
        let inodes = lock(&s.inodes);
        for e in &page.entries {
            let (ino, kind) = match &e.meta {
                Some(m) => (inodes.ino_of(m.fileid), kind_of(&m.file_type)),
                None => match &e.node {
                    Some(n) => (inodes.ino_of(n.fileid()), FileType::RegularFile),
                    None => (u64::MAX, FileType::RegularFile),
                },
            };
            // The offset is the server's cookie: the kernel's next readdir continues there.
            if reply.add(INodeNo(ino), e.cookie, kind, &e.name) {
                break;
            }
        }
        drop(inodes);
        reply.ok();
    }

    fn releasedir(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        _flags: OpenFlags,
        reply: ReplyEmpty,
    ) {
        lock(&self.0.dirs).remove(&fh.0);
        reply.ok();
    }

    // No extended attributes yet: ENOSYS tells the kernel once for all (it then answers
    // EOPNOTSUPP itself), rather than a request per write asking for security.capability.
    fn getxattr(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _name: &OsStr,
        _size: u32,
        reply: ReplyXattr,
    ) {
        reply.error(Errno::ENOSYS);
    }

    fn listxattr(&self, _req: &Request, _ino: INodeNo, _size: u32, reply: ReplyXattr) {
        reply.error(Errno::ENOSYS);
    }

    fn statfs(&self, _req: &Request, _ino: INodeNo, reply: ReplyStatfs) {
        let s = &self.0;
        match self.run(s.client.statfs()) {
            Ok(st) => {
                const BS: u64 = 4096;
                reply.statfs(
                    st.space_total / BS,
                    st.space_free / BS,
                    st.space_avail / BS,
                    st.files_total,
                    st.files_free,
                    BS as u32,
                    st.max_name,
                    BS as u32,
                );
            }
            Err(e) => reply.error(errno(e)),
        }
    }
}

/// A mounted file system: its session runs on its own thread until [`Mounted::unmount`]
/// or an outside `umount`.
pub struct Mounted {
    shared: Arc<Shared>,
    unmounter: fuser::SessionUnmounter,
    thread: Option<std::thread::JoinHandle<io::Result<()>>>,
    done: tokio::sync::watch::Receiver<bool>,
}

/// Mounts `root` of `client`'s server at `mountpoint`; the kernel's requests run on fuser's
/// threads, blocking on `rt` for the client's calls (so `rt` must not be the current
/// thread's runtime while it blocks in a call that waits for the mount).
pub fn mount(
    client: Client,
    root: Node,
    mountpoint: &Path,
    opts: MountOptions,
    rt: Handle,
) -> io::Result<Mounted> {
    let mut config = Config::default();
    config.mount_options = vec![
        MountOption::FSName(opts.fsname.clone()),
        MountOption::Subtype("pnfs".into()),
        MountOption::DefaultPermissions,
    ];
    if opts.read_only {
        config.mount_options.push(MountOption::RO);
    }
    if opts.allow_other {
        config.acl = SessionACL::All;
    }
    // Requests run in parallel (the library pipelines them): one thread per request the
    // kernel has outstanding, up to this many.
    config.n_threads = Some(8);
    let shared = Arc::new(Shared {
        client,
        rt,
        opts,
        inodes: Mutex::new(Inodes::new(root)),
        files: Mutex::new(HashMap::new()),
        dirs: Mutex::new(HashMap::new()),
        changes: Mutex::new(HashMap::new()),
        next_fh: AtomicU64::new(1),
    });
    let mut session = fuser::Session::new(PnfsFs(shared.clone()), mountpoint, &config)?;
    let unmounter = session.unmount_callable();
    let (tx, done) = tokio::sync::watch::channel(false);
    let thread = std::thread::Builder::new()
        .name("pnfs-fuse".into())
        .spawn(move || {
            let r = session.run();
            let _ = tx.send(true);
            r
        })?;
    Ok(Mounted {
        shared,
        unmounter,
        thread: Some(thread),
        done,
    })
}

impl Mounted {
    /// Returns when the file system was unmounted from outside (`umount`, `fusermount3 -u`).
    pub async fn unmounted(&mut self) {
        let _ = self.done.wait_for(|d| *d).await;
    }

    /// Sends and commits every open file's writes, unmounts (if still mounted), waits for
    /// the session to end and closes what the kernel left open.
    pub async fn unmount(mut self) -> io::Result<()> {
        self.shared.flush_all().await;
        let mut unmounter = self.unmounter;
        let thread = self.thread.take();
        let r = tokio::task::spawn_blocking(move || {
            let u = unmounter.unmount();
            let t = match thread {
                Some(t) => t
                    .join()
                    .unwrap_or_else(|_| Err(io::Error::other("the FUSE session panicked"))),
                None => Ok(()),
            };
            u.and(t)
        })
        .await
        .unwrap_or_else(|e| Err(io::Error::other(e)));
        self.shared.close_all().await;
        r
    }
}

//! The kernel's requests, one method each, handed to [`Shared`]'s operations by
//! [`PnfsFs::spawn`]: polled once on fuser's thread, and as a task on the client's runtime
//! when they must wait.

use std::ffi::OsStr;
use std::future::Future;
use std::io;
use std::path::Path;
use std::sync::Arc;
use std::time::SystemTime;

use fuser::{
    Errno, FileHandle, INodeNo, InitFlags, KernelConfig, LockOwner, OpenFlags, RenameFlags,
    ReplyAttr, ReplyCreate, ReplyData, ReplyDirectory, ReplyDirectoryPlus, ReplyEmpty, ReplyEntry,
    ReplyIoctl, ReplyLock, ReplyLseek, ReplyOpen, ReplyStatfs, ReplyWrite, ReplyXattr, Request,
    TimeOrNow, WriteFlags,
};
use tracing::Instrument;

use super::{answer_empty, attrs, errno, lock, name_of, names, xattrs, Shared, MAX_IO};

/// The file system the kernel talks to.
pub(crate) struct PnfsFs(pub(crate) Arc<Shared>);

impl PnfsFs {
    /// Runs request `op` on inode `ino`, in a span that names them (`RUST_LOG=mount=debug`
    /// shows every request and its errno): first here, on fuser's thread, as far as it goes
    /// without waiting (a write into the buffer, a read from the cache, attributes under a
    /// delegation answer at once, with no hand-off to another thread); what must wait for
    /// the network goes on as a task on the client's runtime, which polls it again with its
    /// own waker.
    fn spawn<Fut>(&self, op: &'static str, ino: INodeNo, f: impl FnOnce(Arc<Shared>) -> Fut)
    where
        Fut: Future<Output = ()> + Send + 'static,
    {
        let span = tracing::debug_span!("fuse", op, ino = ino.0);
        let mut task = Box::pin(f(self.0.clone()).instrument(span));
        let _runtime = self.0.rt.enter();
        let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
        if task.as_mut().poll(&mut cx).is_pending() {
            self.0.rt.spawn(task);
        }
    }
}

impl fuser::Filesystem for PnfsFs {
    fn init(&mut self, _req: &Request, config: &mut KernelConfig) -> io::Result<()> {
        let _ = config.set_max_write(MAX_IO);
        let _ = config.set_max_readahead(MAX_IO);
        // Byte-range locks and flock go to the server (else the kernel would lock only
        // among this mount's processes).
        // READDIRPLUS when the kernel sees a listing followed by stats (`ls -l`): the
        // entries' attributes come with the page, no LOOKUP each.
        let mut want = InitFlags::FUSE_POSIX_LOCKS
            | InitFlags::FUSE_FLOCK_LOCKS
            | InitFlags::FUSE_DO_READDIRPLUS
            | InitFlags::FUSE_READDIRPLUS_AUTO;
        if self.0.opts.writeback_cache {
            want |= InitFlags::FUSE_WRITEBACK_CACHE;
        }
        let offered = config.capabilities();
        if let Err(missing) = config.add_capabilities(want & offered) {
            tracing::warn!("the kernel refused FUSE capabilities {missing:?}");
        }
        if !offered.contains(want) {
            tracing::warn!(
                "the kernel does not offer FUSE capabilities {:?}",
                want - offered
            );
        }
        Ok(())
    }

    fn lookup(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        let name = name_of(name);
        self.spawn("lookup", parent, |s| async move {
            let r = s.lookup(parent, name).await;
            s.answer_entry(r, reply)
        });
    }

    fn forget(&self, _req: &Request, ino: INodeNo, nlookup: u64) {
        lock(&self.0.inodes).forget(ino.0, nlookup);
    }

    fn getattr(&self, _req: &Request, ino: INodeNo, fh: Option<FileHandle>, reply: ReplyAttr) {
        self.spawn("getattr", ino, |s| async move {
            let r = s.getattr(ino, fh).await;
            s.answer_attr(r, reply)
        });
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
        let set = attrs::Change {
            mode,
            uid,
            gid,
            size,
            atime,
            mtime,
        };
        self.spawn("setattr", ino, |s| async move {
            let r = s.setattr(ino, fh, set).await;
            s.answer_attr(r, reply)
        });
    }

    fn readlink(&self, _req: &Request, ino: INodeNo, reply: ReplyData) {
        self.spawn("readlink", ino, |s| async move {
            match s.readlink(ino).await {
                Ok(t) => reply.data(t.as_bytes()),
                Err(e) => reply.error(e),
            }
        });
    }

    fn mknod(
        &self,
        req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        rdev: u32,
        reply: ReplyEntry,
    ) {
        let (name, who) = (name_of(name), names::Maker::of(req));
        self.spawn("mknod", parent, |s| async move {
            let r = s.mknod(parent, name, (mode, rdev), umask, who).await;
            s.answer_entry(r, reply)
        });
    }

    fn mkdir(
        &self,
        req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        reply: ReplyEntry,
    ) {
        let (name, who) = (name_of(name), names::Maker::of(req));
        self.spawn("mkdir", parent, |s| async move {
            let r = s.mkdir(parent, name, mode & !umask & 0o7777, who).await;
            s.answer_entry(r, reply)
        });
    }

    fn unlink(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        let name = name_of(name);
        self.spawn("unlink", parent, |s| async move {
            answer_empty(s.unlink(parent, name).await, reply)
        });
    }

    fn rmdir(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        let name = name_of(name);
        self.spawn("rmdir", parent, |s| async move {
            answer_empty(s.rmdir(parent, name).await, reply)
        });
    }

    fn symlink(
        &self,
        req: &Request,
        parent: INodeNo,
        link_name: &OsStr,
        target: &Path,
        reply: ReplyEntry,
    ) {
        let (name, who) = (name_of(link_name), names::Maker::of(req));
        let target = target.to_str().map(str::to_owned).ok_or(Errno::EINVAL);
        self.spawn("symlink", parent, |s| async move {
            let r = s.symlink(parent, name, target, who).await;
            s.answer_entry(r, reply)
        });
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
        let (name, newname) = (name_of(name), name_of(newname));
        self.spawn("rename", parent, |s| async move {
            answer_empty(s.rename(parent, name, newparent, newname).await, reply)
        });
    }

    fn link(
        &self,
        _req: &Request,
        ino: INodeNo,
        newparent: INodeNo,
        newname: &OsStr,
        reply: ReplyEntry,
    ) {
        let newname = name_of(newname);
        self.spawn("link", ino, |s| async move {
            let r = s.link(ino, newparent, newname).await;
            s.answer_entry(r, reply)
        });
    }

    fn open(&self, _req: &Request, ino: INodeNo, flags: OpenFlags, reply: ReplyOpen) {
        self.spawn("open", ino, |s| async move {
            match s.open(ino, flags.0).await {
                Ok((fh, keep)) => reply.opened(FileHandle(fh), keep),
                Err(e) => {
                    tracing::debug!(errno = ?e, "failed");
                    reply.error(e)
                }
            }
        });
    }

    fn create(
        &self,
        req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        flags: i32,
        reply: ReplyCreate,
    ) {
        let (name, who) = (name_of(name), names::Maker::of(req));
        self.spawn("create", parent, |s| async move {
            s.create(parent, name, mode & !umask & 0o7777, flags, who, reply)
                .await
        });
    }

    fn read(
        &self,
        _req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        size: u32,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyData,
    ) {
        self.spawn("read", ino, |s| async move {
            match s.read(fh, offset, size).await {
                Ok(b) => reply.data(&b),
                Err(e) => {
                    tracing::debug!(errno = ?e, "failed");
                    reply.error(e)
                }
            }
        });
    }

    fn write(
        &self,
        _req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        data: &[u8],
        _write_flags: WriteFlags,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyWrite,
    ) {
        // The one copy of the payload: out of fuser's receive buffer, which the next
        // request reuses.
        let data = bytes::Bytes::copy_from_slice(data);
        self.spawn("write", ino, |s| async move {
            let n = data.len() as u32;
            match s.write(fh, offset, data).await {
                Ok(()) => reply.written(n),
                Err(e) => {
                    tracing::debug!(errno = ?e, "failed");
                    reply.error(e)
                }
            }
        });
    }

    fn flush(
        &self,
        _req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        lock_owner: LockOwner,
        reply: ReplyEmpty,
    ) {
        self.spawn("flush", ino, |s| async move {
            answer_empty(s.flush(fh, lock_owner.0).await, reply)
        });
    }

    fn release(
        &self,
        _req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        _flags: OpenFlags,
        lock_owner: Option<LockOwner>,
        _flush: bool,
        reply: ReplyEmpty,
    ) {
        self.spawn("release", ino, |s| async move {
            s.release(fh, lock_owner.map(|o| o.0)).await;
            reply.ok()
        });
    }

    fn fsync(
        &self,
        _req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        _datasync: bool,
        reply: ReplyEmpty,
    ) {
        self.spawn("fsync", ino, |s| async move {
            answer_empty(s.fsync(ino, fh).await, reply)
        });
    }

    fn getlk(
        &self,
        _req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        lock_owner: LockOwner,
        start: u64,
        end: u64,
        typ: i32,
        _pid: u32,
        reply: ReplyLock,
    ) {
        self.spawn("getlk", ino, |s| async move {
            s.getlk(fh, lock_owner.0, (start, end), typ, reply).await
        });
    }

    fn setlk(
        &self,
        _req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        lock_owner: LockOwner,
        start: u64,
        end: u64,
        typ: i32,
        pid: u32,
        sleep: bool,
        reply: ReplyEmpty,
    ) {
        self.spawn("setlk", ino, |s| async move {
            let r = s
                .setlk(fh, lock_owner.0, (start, end), typ, pid, sleep)
                .await;
            answer_empty(r, reply)
        });
    }

    fn fallocate(
        &self,
        _req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        length: u64,
        mode: i32,
        reply: ReplyEmpty,
    ) {
        self.spawn("fallocate", ino, |s| async move {
            answer_empty(s.fallocate(fh, offset, length, mode).await, reply)
        });
    }

    fn lseek(
        &self,
        _req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        offset: i64,
        whence: i32,
        reply: ReplyLseek,
    ) {
        self.spawn("lseek", ino, |s| async move {
            match s.lseek(fh, offset, whence).await {
                Ok(at) => reply.offset(at),
                Err(e) => reply.error(e),
            }
        });
    }

    fn copy_file_range(
        &self,
        _req: &Request,
        ino_in: INodeNo,
        fh_in: FileHandle,
        offset_in: u64,
        _ino_out: INodeNo,
        fh_out: FileHandle,
        offset_out: u64,
        len: u64,
        _flags: fuser::CopyFileRangeFlags,
        reply: ReplyWrite,
    ) {
        self.spawn("copy_file_range", ino_in, |s| async move {
            match s
                .copy_range((fh_in, offset_in), (fh_out, offset_out), len)
                .await
            {
                Ok(n) => reply.written(n),
                Err(e) => reply.error(e),
            }
        });
    }

    fn opendir(&self, _req: &Request, _ino: INodeNo, _flags: OpenFlags, reply: ReplyOpen) {
        let fh = self.0.opendir();
        reply.opened(FileHandle(fh), fuser::FopenFlags::empty());
    }

    fn readdir(
        &self,
        _req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        reply: ReplyDirectory,
    ) {
        self.spawn("readdir", ino, |s| async move {
            s.readdir(ino, fh, offset, reply).await
        });
    }

    fn readdirplus(
        &self,
        _req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        reply: ReplyDirectoryPlus,
    ) {
        self.spawn("readdirplus", ino, |s| async move {
            s.readdirplus(ino, fh, offset, reply).await
        });
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

    fn getxattr(&self, _req: &Request, ino: INodeNo, name: &OsStr, size: u32, reply: ReplyXattr) {
        match xattrs::user_name(name) {
            Some(Ok(name)) => self.spawn("getxattr", ino, |s| async move {
                s.getxattr(ino, name, size, reply).await
            }),
            Some(Err(e)) => reply.error(e),
            // Another namespace: nothing kept there.
            None => reply.error(Errno::ENODATA),
        }
    }

    fn setxattr(
        &self,
        _req: &Request,
        ino: INodeNo,
        name: &OsStr,
        value: &[u8],
        flags: i32,
        _position: u32,
        reply: ReplyEmpty,
    ) {
        match xattrs::user_name(name) {
            Some(Ok(name)) => {
                let value = bytes::Bytes::copy_from_slice(value);
                self.spawn("setxattr", ino, |s| async move {
                    answer_empty(s.setxattr(ino, name, value, flags).await, reply)
                })
            }
            Some(Err(e)) => reply.error(e),
            None => reply.error(Errno::EOPNOTSUPP),
        }
    }

    fn listxattr(&self, _req: &Request, ino: INodeNo, size: u32, reply: ReplyXattr) {
        self.spawn("listxattr", ino, |s| async move {
            s.listxattr(ino, size, reply).await
        });
    }

    fn removexattr(&self, _req: &Request, ino: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        match xattrs::user_name(name) {
            Some(Ok(name)) => self.spawn("removexattr", ino, |s| async move {
                answer_empty(s.removexattr(ino, name).await, reply)
            }),
            Some(Err(e)) => reply.error(e),
            None => reply.error(Errno::ENODATA),
        }
    }

    fn ioctl(
        &self,
        _req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        _flags: fuser::IoctlFlags,
        cmd: u32,
        _in_data: &[u8],
        _out_size: u32,
        reply: ReplyIoctl,
    ) {
        self.spawn("ioctl", ino, |s| async move {
            match s.ioctl(ino, fh, cmd).await {
                Ok(()) => reply.ioctl(0, &[]),
                Err(e) => {
                    tracing::debug!(errno = ?e, "failed");
                    reply.error(e)
                }
            }
        });
    }

    fn statfs(&self, _req: &Request, ino: INodeNo, reply: ReplyStatfs) {
        self.spawn("statfs", ino, |s| async move {
            let r = match s.node(ino) {
                Ok(node) => s.client.statfs(&node).await.map_err(errno),
                Err(e) => Err(e),
            };
            match r {
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
                Err(e) => reply.error(e),
            }
        });
    }
}

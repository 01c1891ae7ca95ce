//! Open files: open and create (close-to-open's revalidation), read and write through the
//! library's striping, flush at every close(2) (writes sent and COMMITted), fsync, release.

use std::sync::Arc;

use bytes::Bytes;
use client::{File, OpenOptions};
use fuser::{Errno, FileHandle, FopenFlags, Generation, INodeNo, ReplyCreate};

use super::names::Maker;
use super::{errno, lock, Shared};

/// An open file of the mount (one per FUSE file handle).
pub(crate) struct Open {
    pub(crate) file: File,
    append: bool,
}

/// Closes `o` (flush, COMMIT, LAYOUTCOMMIT, CLOSE); a File still used elsewhere is only
/// flushed and closes when its last user drops it.
pub(crate) async fn close(o: Arc<Open>) {
    let r = match Arc::try_unwrap(o) {
        Ok(o) => o.file.close().await,
        Err(o) => o.file.fsync().await,
    };
    if let Err(e) = r {
        tracing::warn!("closing a file: {e}");
    }
}

impl Shared {
    fn add_file(&self, file: File, append: bool) -> u64 {
        let fh = self.new_fh();
        lock(&self.files).insert(fh, Arc::new(Open { file, append }));
        fh
    }

    /// open(2) of an existing file: an OPEN (or a local open under a delegation), whose
    /// fresh change attribute says whether the kernel may keep its cached pages.
    pub(crate) async fn open(&self, ino: INodeNo, flags: i32) -> Result<(u64, FopenFlags), Errno> {
        let node = self.node(ino)?;
        let acc = flags & libc::O_ACCMODE;
        let how = OpenOptions {
            read: acc != libc::O_WRONLY,
            write: acc != libc::O_RDONLY,
            create: false,
            exclusive: false,
            truncate: flags & libc::O_TRUNC != 0,
            ..OpenOptions::read()
        };
        if how.write && self.opts.read_only {
            return Err(Errno::EROFS);
        }
        let file = self.client.open_node(&node, &how).await.map_err(errno)?;
        let m = match file.metadata().await {
            Ok(m) => m,
            Err(e) => {
                let _ = file.close().await;
                return Err(errno(e));
            }
        };
        let keep = if how.truncate {
            // The kernel truncates its own pages; what it caches next is new.
            lock(&self.changes).remove(&ino.0);
            false
        } else {
            self.same_change(ino.0, m.change)
        };
        if !keep {
            // The file changed (or may have) since the kernel last heard of it: its cached
            // size and times go too, not only its pages (which the kernel drops itself for
            // an open without FOPEN_KEEP_CACHE), or a read would stop at the old size.
            self.forget_in_kernel(ino, false).await?;
        }
        let keep = if keep {
            FopenFlags::FOPEN_KEEP_CACHE
        } else {
            FopenFlags::empty()
        };
        Ok((self.add_file(file, flags & libc::O_APPEND != 0), keep))
    }

    /// open(2) with O_CREAT of a name the kernel did not find.
    pub(crate) async fn create(
        &self,
        parent: INodeNo,
        name: Result<String, Errno>,
        mode: u32,
        flags: i32,
        who: Maker,
        reply: ReplyCreate,
    ) {
        let r = async {
            if self.opts.read_only {
                return Err(Errno::EROFS);
            }
            let dir = self.node(parent)?;
            let how = OpenOptions {
                read: flags & libc::O_ACCMODE != libc::O_WRONLY,
                write: true,
                create: true,
                exclusive: flags & libc::O_EXCL != 0,
                truncate: flags & libc::O_TRUNC != 0,
                mode,
            };
            let file = self
                .client
                .create_in(&dir, &name?, &how)
                .await
                .map_err(errno)?;
            let node = file.node();
            let made = match file.metadata().await {
                Ok(m) => self.give((node.clone(), m), who).await,
                Err(e) => Err(errno(e)),
            };
            let m = match made {
                Ok((_, m)) => m,
                Err(e) => {
                    let _ = file.close().await;
                    return Err(e);
                }
            };
            let ino = self.attr(&m).ino.0;
            self.same_change(ino, m.change);
            let fh = self.add_file(file, flags & libc::O_APPEND != 0);
            Ok((node, m, fh))
        }
        .await;
        match r {
            Ok((node, meta, fh)) => {
                lock(&self.inodes).remember(&node);
                reply.created(
                    &self.opts.attr_timeout,
                    &self.attr(&meta),
                    Generation(0),
                    FileHandle(fh),
                    FopenFlags::empty(),
                );
            }
            Err(e) => {
                tracing::debug!(errno = ?e, "failed");
                reply.error(e)
            }
        }
    }

    pub(crate) async fn read(
        &self,
        fh: FileHandle,
        offset: u64,
        size: u32,
    ) -> Result<Bytes, Errno> {
        let o = self.open_file(fh)?;
        o.file.read_at(offset, u64::from(size)).await.map_err(errno)
    }

    pub(crate) async fn write(
        &self,
        fh: FileHandle,
        offset: u64,
        data: Bytes,
    ) -> Result<(), Errno> {
        let o = self.open_file(fh)?;
        // O_APPEND: at the end as this client knows it (its own writes included), not
        // where the kernel's possibly stale size put it.
        let at = if o.append { o.file.size() } else { offset };
        o.file.write_at(at, data).await.map_err(errno)
    }

    /// close(2) of a descriptor: the writes go out and are committed before close returns
    /// (FUSE's release comes later, asynchronously), so another client's open sees them;
    /// and the closing process's byte-range locks on the file go (POSIX: any close of the
    /// file by the process drops them).
    pub(crate) async fn flush(&self, fh: FileHandle, lock_owner: u64) -> Result<(), Errno> {
        let o = self.open_file(fh)?;
        let synced = o.file.fsync().await.map_err(errno);
        self.drop_locks(&o, lock_owner).await;
        synced
    }

    /// The last descriptor of an open file went: its flock lock goes (the kernel names
    /// the open file description as its owner), then the File closes (LAYOUTCOMMIT,
    /// CLOSE).
    pub(crate) async fn release(&self, fh: FileHandle, flock_owner: Option<u64>) {
        let o = lock(&self.files).remove(&fh.0);
        if let Some(o) = o {
            if let Some(owner) = flock_owner {
                self.drop_locks(&o, owner).await;
            }
            close(o).await;
        }
    }

    /// fsync(2) and fdatasync(2): writes sent and COMMITted (LAYOUTCOMMIT with them); with
    /// `fsync_revalidate`, then the file's caches dropped (MPI-IO's second sync).
    pub(crate) async fn fsync(&self, ino: INodeNo, fh: FileHandle) -> Result<(), Errno> {
        let o = self.open_file(fh)?;
        o.file.fsync().await.map_err(errno)?;
        if self.opts.fsync_revalidate {
            self.revalidate(ino, &o).await?;
        }
        Ok(())
    }
}

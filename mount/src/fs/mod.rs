//! The `fuser::Filesystem` the kernel talks to, over the client's handle API.
//!
//! Every request is polled once on the fuser thread that read it, and what must wait goes on
//! as a task on the client's tokio runtime ([`PnfsFs`], `dispatch.rs`): a call that waits (a
//! lock held by another client, a recall, a slow data server) holds no thread, and the
//! kernel's parallel requests (reads ahead, writes of several files, lookups) run in
//! parallel.
//!
//! The operations live by concern: attributes in `attrs`, names in `names`, open files and
//! their I/O in `files`, space (fallocate, SEEK_DATA/HOLE, copy_file_range) in `space`,
//! directories in `dirs`, locks in `locks`, extended attributes in `xattrs`, the revalidate
//! ioctl in `revalidate`.

use std::collections::HashMap;
use std::ffi::OsStr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::SystemTime;

use client::{Client, FileType as Kind, Metadata, Node};
use fuser::{
    Errno, FileAttr, FileHandle, FileType, Generation, INodeNo, Notifier, ReplyAttr, ReplyEmpty,
    ReplyEntry,
};
use tokio::runtime::Handle;

use crate::inodes::Inodes;
use crate::options::MountOptions;
use crate::owners;

mod attrs;
mod dirs;
mod dispatch;
mod files;
mod locks;
mod names;
mod revalidate;
mod space;
mod xattrs;

pub(crate) use dispatch::PnfsFs;
pub(crate) use files::Open;

/// The largest READ and WRITE the kernel sends (FUSE's limit; the library stripes them).
pub(crate) const MAX_IO: u32 = 1 << 20;

/// What the request tasks share.
pub(crate) struct Shared {
    pub(crate) client: Client,
    pub(crate) rt: Handle,
    pub(crate) opts: MountOptions,
    /// The uid the client speaks to the server as (AUTH_SYS): when root, new files are
    /// given to the user who made them.
    pub(crate) uid: u32,
    inodes: Mutex<Inodes>,
    files: Mutex<HashMap<u64, Arc<Open>>>,
    /// Open directories' places in their listings, by FUSE file handle.
    dirs: Mutex<HashMap<u64, dirs::Listing>>,
    /// The change attribute each file had when last opened (keep_cache decisions).
    changes: Mutex<HashMap<u64, u64>>,
    next_fh: AtomicU64,
    /// The pid of each lock owner that took a lock (what F_GETLK reports of it).
    lockers: Mutex<HashMap<u64, u32>>,
    /// How to tell the kernel to drop what it cached of an inode (set once mounted).
    pub(crate) notifier: OnceLock<Notifier>,
}

pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

pub(crate) fn errno(e: client::Error) -> Errno {
    Errno::from_i32(e.errno())
}

/// Answers a call with nothing to return but success or the errno.
pub(crate) fn answer_empty(r: Result<(), Errno>, reply: ReplyEmpty) {
    match r {
        Ok(()) => reply.ok(),
        Err(e) => {
            tracing::debug!(errno = ?e, "failed");
            reply.error(e)
        }
    }
}

/// A name the server can take: NFSv4 names are UTF-8 (RFC 8881 section 14.4).
pub(crate) fn name_of(name: &OsStr) -> Result<String, Errno> {
    name.to_str().map(str::to_owned).ok_or(Errno::EINVAL)
}

/// Device numbers as the kernel takes them from FUSE (`new_encode_dev`: 12 bits of major,
/// 20 of minor).
pub(crate) fn encode_dev((major, minor): (u32, u32)) -> u32 {
    (minor & 0xff) | ((major & 0xfff) << 8) | ((minor & !0xff) << 12)
}

/// Device numbers of a FUSE `mknod` (`new_decode_dev`).
pub(crate) fn decode_dev(dev: u32) -> (u32, u32) {
    ((dev & 0xfff00) >> 8, (dev & 0xff) | ((dev >> 12) & 0xfff00))
}

pub(crate) fn kind_of(k: &Kind) -> FileType {
    match k {
        Kind::File => FileType::RegularFile,
        Kind::Dir => FileType::Directory,
        Kind::Symlink => FileType::Symlink,
        Kind::Fifo => FileType::NamedPipe,
        Kind::Socket => FileType::Socket,
        Kind::BlockDevice => FileType::BlockDevice,
        Kind::CharDevice => FileType::CharDevice,
        // A named-attribute directory, which no lookup of this mount reaches.
        Kind::Other => FileType::RegularFile,
    }
}

impl Shared {
    pub(crate) fn new(
        client: Client,
        root: Node,
        opts: MountOptions,
        rt: Handle,
        uid: u32,
    ) -> Self {
        Self {
            client,
            rt,
            opts,
            uid,
            inodes: Mutex::new(Inodes::new(root)),
            files: Mutex::new(HashMap::new()),
            dirs: Mutex::new(HashMap::new()),
            changes: Mutex::new(HashMap::new()),
            next_fh: AtomicU64::new(1),
            lockers: Mutex::new(HashMap::new()),
            notifier: OnceLock::new(),
        }
    }

    /// The kernel's view of attributes `m`.
    pub(crate) fn attr(&self, m: &Metadata) -> FileAttr {
        let ino = lock(&self.inodes).ino_of(m.fileid);
        self.attr_with(ino, m)
    }

    /// [`Self::attr`] for a file whose inode number is known.
    pub(crate) fn attr_with(&self, ino: u64, m: &Metadata) -> FileAttr {
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
            uid: owners::uid_of(&m.owner),
            gid: owners::gid_of(&m.group),
            rdev: encode_dev(m.rdev),
            blksize: MAX_IO,
            flags: 0,
        }
    }

    pub(crate) fn node(&self, ino: INodeNo) -> Result<Node, Errno> {
        lock(&self.inodes).get(ino.0).ok_or(Errno::ESTALE)
    }

    pub(crate) fn open_file(&self, fh: FileHandle) -> Result<Arc<Open>, Errno> {
        lock(&self.files).get(&fh.0).cloned().ok_or(Errno::EBADF)
    }

    /// The open files of `node` (one per FUSE file handle).
    pub(crate) fn opens_of(&self, node: &Node) -> Vec<Arc<Open>> {
        lock(&self.files)
            .values()
            .filter(|o| o.file.node() == *node)
            .cloned()
            .collect()
    }

    /// An entry reply: one more lookup of `node`.
    pub(crate) fn entry(&self, node: &Node, meta: &Metadata, reply: ReplyEntry) {
        lock(&self.inodes).remember(node);
        let ttl = self.opts.attr_timeout;
        reply.entry(&ttl, &self.attr(meta), Generation(0));
    }

    /// Answers a call that makes or finds a name: its entry, or the errno.
    pub(crate) fn answer_entry(&self, r: Result<(Node, Metadata), Errno>, reply: ReplyEntry) {
        match r {
            Ok((node, meta)) => self.entry(&node, &meta, reply),
            Err(e) => {
                tracing::debug!(errno = ?e, "failed");
                reply.error(e)
            }
        }
    }

    /// Answers a call that returns attributes.
    pub(crate) fn answer_attr(&self, r: Result<Metadata, Errno>, reply: ReplyAttr) {
        match r {
            Ok(m) => reply.attr(&self.opts.attr_timeout, &self.attr(&m)),
            Err(e) => {
                tracing::debug!(errno = ?e, "failed");
                reply.error(e)
            }
        }
    }

    pub(crate) fn new_fh(&self) -> u64 {
        self.next_fh.fetch_add(1, Ordering::Relaxed)
    }

    /// Remembers the change attribute `change` of inode `ino` at an open or a revalidation;
    /// whether it is the one remembered before (the kernel's cached pages are the file's).
    pub(crate) fn same_change(&self, ino: u64, change: u64) -> bool {
        lock(&self.changes).insert(ino, change) == Some(change)
    }

    /// Sends every open file's writes and COMMITs them (before an unmount).
    pub(crate) async fn flush_all(&self) {
        let open: Vec<Arc<Open>> = lock(&self.files).values().cloned().collect();
        for o in open {
            if let Err(e) = o.file.fsync().await {
                tracing::warn!("flushing an open file before unmounting: {e}");
            }
        }
    }

    /// Closes every file the kernel left open (after an unmount).
    pub(crate) async fn close_all(&self) {
        let open: Vec<Arc<Open>> = lock(&self.files).drain().map(|(_, o)| o).collect();
        for o in open {
            files::close(o).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_numbers_round_trip_the_kernels_encoding() {
        for (major, minor) in [(0, 0), (1, 2), (8, 17), (259, 3), (4095, 0xfffff)] {
            assert_eq!(decode_dev(encode_dev((major, minor))), (major, minor));
        }
        // As makedev(3) has it for small numbers: major 8, minor 1 is 0x801.
        assert_eq!(encode_dev((8, 1)), 0x801);
    }
}

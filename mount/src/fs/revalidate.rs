//! The revalidate ioctl (`PNFS_IOC_REVALIDATE`), and `fsync_revalidate`'s second half: what
//! NFS close-to-open cannot express, a reader's "show me what the others synced" without
//! closing the file (MPI-IO's second sync).

use fuser::{Errno, FileHandle, INodeNo};

use super::{errno, Open, Shared};
use crate::ioctl::PNFS_IOC_REVALIDATE;

impl Shared {
    pub(crate) async fn ioctl(&self, ino: INodeNo, fh: FileHandle, cmd: u32) -> Result<(), Errno> {
        match cmd {
            PNFS_IOC_REVALIDATE => {
                let o = self.open_file(fh)?;
                self.revalidate(ino, &o).await
            }
            _ => Err(Errno::ENOTTY),
        }
    }

    /// Drops what this mount caches of `o`'s file: the library's data and attributes of
    /// every open File of it (their writes are sent first, never dropped), then the
    /// kernel's pages and attributes of the inode. The next read goes to the server.
    pub(crate) async fn revalidate(&self, ino: INodeNo, o: &Open) -> Result<(), Errno> {
        let node = o.file.node();
        let mut change = None;
        for other in self.opens_of(&node) {
            let m = other.file.revalidate().await.map_err(errno)?;
            change = Some(m.change);
        }
        if let Some(c) = change {
            self.same_change(ino.0, c);
        }
        self.forget_in_kernel(ino, true).await
    }

    /// Tells the kernel to drop its attributes of `ino` (its size among them), and with
    /// `pages` its cached pages too.
    pub(crate) async fn forget_in_kernel(&self, ino: INodeNo, pages: bool) -> Result<(), Errno> {
        let Some(notifier) = self.notifier.get().cloned() else {
            return Ok(());
        };
        // (An offset of -1 keeps the pages.)
        let offset = if pages { 0 } else { -1 };
        // Synchronous in the kernel (the pages are gone when the write to /dev/fuse
        // returns), and dirty pages it holds come back as WRITEs first: off this task, so
        // those requests are served meanwhile.
        tokio::task::spawn_blocking(move || notifier.inval_inode(ino, offset, 0))
            .await
            .map_err(|_| Errno::EIO)?
            .map_err(|e| {
                tracing::warn!(
                    "the kernel refused to drop its cache of inode {}: {e}",
                    ino.0
                );
                Errno::EIO
            })
    }
}

//! `pnfs mount`: the bundled client as a POSIX file system through FUSE (`/dev/fuse`, the
//! `fuser` crate's pure-Rust mount: a direct mount(2) as root, the `fusermount3` helper
//! otherwise; no libfuse).
//!
//! The kernel's requests are answered by tasks on the client's tokio runtime, over the
//! library's handle API ([`client::Node`], [`client::File`]): a FUSE inode is a node (its
//! number is the server's file id, so `stat` and `readdir` agree), a FUSE file handle an
//! open [`client::File`]. Close-to-open as NFS clients do it: open revalidates and keeps the
//! kernel's page cache only when the file's change attribute did not move; `close` (FUSE
//! flush) sends the writes and COMMITs; release closes (LAYOUTCOMMIT, CLOSE).
//!
//! What close-to-open cannot say, "show me what the others synced" on a file kept open, is
//! the revalidate ioctl ([`ioctl::PNFS_IOC_REVALIDATE`], `include/pnfs_ioctl.h`, or
//! [`ioctl::revalidate`]), and with [`MountOptions::fsync_revalidate`] every fsync:
//! MPI-IO's SYNC-BARRIER-SYNC.
//!
//! - `fs/`: the file system by concern (attributes, names, files, directories, locks,
//!   revalidation);
//! - [`session`](mount): mounting and unmounting;
//! - `inodes`: inode numbers and the kernel's lookup counts;
//! - `owners`: NFSv4 owner strings as uids and gids;
//! - [`options`](MountOptions): `-o` options.

mod fs;
mod inodes;
pub mod ioctl;
mod options;
mod owners;
mod session;

pub use options::MountOptions;
pub use session::{mount, Mounted};

//! `pnfs mount`: the bundled client as a POSIX file system through FUSE (`/dev/fuse`, the
//! `fuser` crate's pure-Rust mount: a direct mount(2) as root, the `fusermount3` helper
//! otherwise; no libfuse).
//!
//! The kernel's requests run on fuser's worker threads, each blocking on the client's tokio
//! runtime for the library's handle API ([`client::Node`], [`client::File`]): a FUSE inode is
//! a node (its number is the server's file id, so `stat` and `readdir` agree), a FUSE file
//! handle an open [`client::File`]. Close-to-open as NFS clients do it: open revalidates and
//! keeps the kernel's page cache only when the file's change attribute did not move; `close`
//! (FUSE flush) sends the writes and COMMITs; release closes (LAYOUTCOMMIT, CLOSE).

mod fs;
mod inodes;
mod options;

pub use fs::{mount, Mounted};
pub use options::MountOptions;

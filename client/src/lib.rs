//! The bundled pNFS client: an async library that talks NFSv4.1 to any server (our MDS with
//! its data servers, or another server such as nfs-ganesha or knfsd), with pNFS file layouts
//! when the server hands them out.
//!
//! - [`Client`]: one client of one server. Sessions with a slot table of the server's size,
//!   re-sent requests on a lost connection (BIND_CONN_TO_SESSION, answered from the server's
//!   reply cache), lease renewal when idle, and recovery after a server restart (a new client
//!   id and session; opens and locks reclaimed in the grace period).
//! - Namespace operations by path: [`Client::stat`], [`Client::readdir`], [`Client::mkdir`],
//!   [`Client::remove`], [`Client::rename`], [`Client::link`], [`Client::symlink`],
//!   [`Client::truncate`].
//! - The same by filehandle, for a caller that keeps [`Node`]s as a file system keeps
//!   inodes (FUSE): [`Client::root`], [`Client::lookup_in`], [`Client::getattr`],
//!   [`Client::readdir_page`] (paged), [`Client::create_in`], [`Client::open_node`],
//!   [`Client::setattr`], [`Client::remove_in`], [`Client::rename_in`], [`Client::link_in`],
//!   [`Client::symlink_in`], [`Client::mkdir_in`], [`Client::rmdir_in`],
//!   [`Client::mknod_fifo_in`], [`Client::statfs`]; [`Error::errno`] for the reply. The path
//!   functions are these with a walk from the root in front.
//! - User extended attributes by filehandle (RFC 8276, sent in NFSv4.2 COMPOUNDs):
//!   [`Client::getxattr`], [`Client::setxattr`] (with [`XattrSet`]: create only, replace
//!   only, or either), [`Client::listxattrs`] (every page), [`Client::removexattr`], and
//!   [`Client::supports_xattrs`]; names without the `user.` prefix, Linux's limits
//!   ([`MAX_XATTR_NAME`], [`MAX_XATTR_VALUE`]) checked before sending.
//! - [`File`]: open, read, write, fsync (COMMIT), close; `revalidate`; list I/O
//!   ([`File::read_list`], [`File::write_list`]).
//! - Byte-range locks with POSIX semantics for many lock owners (a FUSE mount's processes and
//!   open file descriptions): [`File::lock_as`] (F_SETLK, and F_SETLKW with `wait`),
//!   [`File::unlock_as`], [`File::test_lock_as`] (F_GETLK, naming the [`Holder`] of a
//!   [`Conflict`]), [`File::release_owner`] (close, flock's release). Each owner is an NFS
//!   lock-owner of its own, so owners of one client conflict as two clients would; its locks
//!   are shared by the Files of the file, tracked here as ranges (split, merged, upgraded,
//!   downgraded as POSIX says), and reclaimed after a server restart. [`File::lock`],
//!   [`File::try_lock`] and [`File::unlock`] lock as one client-wide owner.
//! - pNFS: with an MDS that grants file layouts, READ/WRITE/COMMIT go to the data servers
//!   in parallel; LAYOUTCOMMIT and LAYOUTRETURN at close; CB_LAYOUTRECALL honoured; I/O
//!   falls back to the MDS when a data server fails.
//! - Server-side copy ([`File::copy_to`], COPY of RFC 7862): the bytes move inside the
//!   server (between its data servers); asynchronous copies end with CB_OFFLOAD, or are
//!   followed with OFFLOAD_STATUS when it does not come. [`Error::is_no_server_copy`] says
//!   when the server cannot, so the caller copies through the client instead.
//! - Space and holes (NFSv4.2, RFC 7862), what `fallocate(2)` and `lseek(2)` need:
//!   [`File::allocate`] (ALLOCATE: reserve, grow), [`File::deallocate`] (DEALLOCATE: punch a
//!   hole, size kept), [`File::seek`] (SEEK for [`Seek::Data`] or [`Seek::Hole`]). This
//!   client's writes land first; a server without them answers EOPNOTSUPP
//!   ([`Error::is_unsupported`]).
//! - Close-to-open: open fetches fresh attributes, close makes everything stable.
//! - Delegations (RFC 8881 section 10.4): while the server lets this client alone cache a
//!   file, re-opens and closes of it send nothing, its attributes and read cache need no
//!   revalidation, and its I/O uses the delegation stateid; a recall (CB_RECALL) flushes the
//!   file's writes and returns it, CB_GETATTR is answered with this client's size, and a
//!   revoked one is freed and forgotten (writes made under a revoked write delegation and
//!   not yet sent are reported lost, [`Error::DataLost`]). `ClientOptions::delegations`
//!   turns them off.
//!
//! ```no_run
//! # async fn demo() -> client::Result<()> {
//! use client::{Client, LockKind, OpenOptions};
//! let c = Client::connect("127.0.0.1:2049".parse().unwrap()).await?;
//! c.mkdir("/results", 0o755).await?;
//! let f = c.create("/results/run1.dat", 0o644).await?;
//! f.lock(LockKind::Write, 0, 0).await?;
//! f.write_list(&[(0, "header".into()), (1 << 20, "tail".into())]).await?;
//! f.fsync().await?; // COMMIT to every data server written, then LAYOUTCOMMIT
//! f.close().await?;
//!
//! let g = c.open("/results/run1.dat", &OpenOptions::read()).await?;
//! let parts = g.read_list(&[(0, 6), (1 << 20, 4)]).await?;
//! assert_eq!(&parts[1][..], b"tail");
//! g.revalidate().await?; // see what other clients synced since
//! g.close().await?;
//! c.shutdown().await;
//! # Ok(()) }
//! ```

mod attr;
mod callback;
mod client;
mod copy;
mod deleg;
mod error;
mod file;
mod io;
mod locks;
mod offload;
mod ops;
mod pnfs;
mod rpc;
mod session;
pub mod url;

pub use attr::{FileType, FsStats, Metadata, SetAttrs, SetTime};
pub use client::{
    Client, ClientOptions, DirEntry, DirEntryPlus, DirPage, LockKind, Node, OpenOptions, Special,
    Stats, XattrSet, MAX_XATTR_NAME, MAX_XATTR_VALUE,
};
pub use copy::Copied;
pub use error::{Error, Result};
pub use file::{File, Seek};
pub use locks::{Conflict, Holder};
pub use rpc::{rdma_stats, Credentials};

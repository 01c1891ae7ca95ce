//! The parallel file system core: where file data lives.
//!
//! Each regular file is a set of **objects**, one per data server in its stripe set (as in
//! PVFS2's metafile + datafiles); a file stored whole (the MDS serving data itself) is the
//! single object with stripe 0. An object is named by [`ObjectId`] `{ file, stripe }` and
//! needs no create: it appears on its first write ("creates touch only the MDS").
//!
//! ```text
//!   NFS WRITE payload (Bytes pieces)        NFS READ reply payload piece
//!            |                                         ^
//!            v                                         |
//!   ObjectStore::write(id, off, &[Bytes], stable)   ObjectStore::read(id, off, len) -> Bytes
//!            |   one pwritev, no staging copy          |   one pread into a fresh buffer
//!            v                                         |
//!   +--------------------+  +-----------+  +-------------------+  +-----------------------+
//!   | LocalStore         |  | NullStore |  | SharedStore       |  | CrashSimStore (tests) |
//!   | files under <root> |  | sizes only|  | one file per file |  | written/durable views |
//!   |                    |  |           |  | id on a cluster fs|  |                       |
//!   +--------------------+  +-----------+  +-------------------+  +-----------------------+
//! ```
//!
//! # Contract ([`ObjectStore`])
//! Methods are synchronous (async callers use `spawn_blocking`). A WRITE acknowledged as
//! DATA_SYNC or FILE_SYNC, and everything written before an acknowledged COMMIT, survives a
//! crash; UNSTABLE data may be lost, and then the [write verifier](ObjectStore::verifier) has
//! changed, so clients re-send what was not committed (RFC 8881 section 18.32.3). Truncate,
//! allocate, deallocate and remove are durable on return. A missing object reads like an
//! empty sparse file (size 0, reads empty with `eof`).
//!
//! # On-disk layout of [`LocalStore`]
//! ```text
//! <root>/objects/<file & 0xff>/<(file >> 8) & 0xff>/<file:016x>.<stripe>
//! e.g. file 0x0123456789abcdef, stripe 2 -> <root>/objects/ef/cd/0123456789abcdef.2
//! ```
//! Two levels of 256 directories each, keyed by the two lowest bytes of the file id (the bytes
//! a counter changes fastest), so consecutive files spread evenly and a leaf directory holds
//! about `files / 65536` entries. Names are lower-case hex, the stripe in decimal; an object
//! file's size is the object's size and holes are file holes. Directories are created on
//! demand (mode 0700, files 0600). See [`ObjectId::relative_path`].
//!
//! # On-disk layout of [`SharedStore`]
//! ```text
//! <shared_dir>/files/<file & 0xff>/<(file >> 8) & 0xff>/<file:016x>
//! ```
//! One file per file id, shared by all its stripes and all data servers (sparse packing:
//! object offset = file offset). See [`SharedStore`] for what the MDS must do differently.
//!
//! # Errors
//! [`StoreError`] names what failed in storage terms (no space, quota, read-only, too big,
//! not supported, an errno). The servers map it to their protocol's status beside the
//! protocol (`nfs_server::io::store_status`); this crate knows no protocol numbers.

// One `unsafe` block in the whole crate (Cargo.toml denies the rest): the FICLONERANGE ioctl
// (`local/copy.rs`), which rustix does not wrap; everything else stays safe.

mod crashsim;
mod error;
mod id;
mod identity;
mod local;
mod null;
mod shared;
mod store;
#[cfg(test)]
mod testsuite;
mod verifier;

use std::sync::{Mutex, MutexGuard, PoisonError};

pub use crashsim::{CrashSimStore, CRASHSIM_MAX_OBJECT_SIZE};
pub use error::{Result, StoreError};
pub use id::{ObjectId, WRITE_QUEUES};
pub use identity::{load_or_create as load_or_create_identity, new_identity, IDENTITY_FILE};
pub use local::{shared_relative_path, IoCounts, LocalOptions, LocalStore};
pub use null::{NullStore, NULL_MAX_READ};
pub use shared::SharedStore;
pub use store::{
    Deallocated, Fresh, FsStats, ObjectStore, ReadDone, ReadInto, SeekWhat, Stability, WriteDone,
};
pub use verifier::new_write_verifier;

/// Locks `m`, ignoring poisoning: every structure behind these mutexes is consistent between
/// statements, so a panic elsewhere must not turn into a panic here.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

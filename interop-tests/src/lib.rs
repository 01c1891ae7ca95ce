//! Tests against real peers.
//!
//! - [`guest`]: the stock Linux NFS client (and knfsd, as the control) in a qemu guest running
//!   Debian's kernel; the scenarios live in `tests/`.
//! - [`peers`]: real servers as child processes on loopback for the Rust client's tests:
//!   nfs-ganesha (a server we did not write) and our own `pnfs server`, with its counters.
//! - [`fuse`]: `pnfs mount` (the bundled client through FUSE) as a child process, and the
//!   guest suite's checks run on two such mounts (`host/mount-workload.sh`).

pub mod fuse;
pub mod guest;
pub mod peers;

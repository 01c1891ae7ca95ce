//! Tests against real peers.
//!
//! - [`guest`]: the stock Linux NFS client (and knfsd, as the control) in a qemu guest running
//!   Debian's kernel; the scenarios live in `tests/`.
//! - nfs-ganesha as a peer server for our client: not built yet.
#![warn(missing_docs)]

pub mod guest;

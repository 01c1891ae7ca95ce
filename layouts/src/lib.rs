//! pNFS layouts (no I/O): striping math now; layout policy and device addresses come with the
//! data servers.
//!
//! The file layout body itself (`nfsv4_1_file_layout4` and its device address) lives in
//! `nfs_proto::nfs4::layout_files`; this crate holds what both the MDS (to size and truncate
//! files) and the client (to send I/O to the right data server) compute from it.
#![warn(missing_docs)]

pub mod stripe;

pub use stripe::{Extent, Packing, StripeError, StripeMap};

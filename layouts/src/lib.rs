//! pNFS layouts (no I/O): striping math and devices (which data servers a layout names, at
//! which addresses).
//!
//! The file layout body itself (`nfsv4_1_file_layout4` and its device address) lives in
//! `nfs_proto::nfs4::layout_files`; this crate holds what both the MDS (to size and truncate
//! files) and the client (to send I/O to the right data server) compute from it.

pub mod device;
pub mod stripe;

pub use device::{DataServer, Device, DeviceError, Ring};
pub use stripe::{Extent, Packing, StripeError, StripeMap};

//! pNFS layouts (skeleton): layout bodies, device addresses, striping math and layout policy.
//!
//! Not built yet. The file layout body itself (`nfsv4_1_file_layout4` and its device address)
//! lives in `nfs_proto::nfs4::layout_files`; this crate gets the striping math (file offset to
//! data server index and object offset, dense and sparse packing) and the layout policy in the
//! pNFS issue.

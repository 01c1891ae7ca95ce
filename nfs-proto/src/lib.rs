//! # nfs-proto: the NFSv4.1/4.2 protocol, without I/O
//!
//! ```text
//!   TCP bytes ──> record (RFC 5531 §11 record marking) ──> rpc::RpcMsg (call or reply)
//!                                                              │ body (Bytes slice)
//!                                                              v
//!                       nfs4::Compound4Args / Compound4Res, nfs4::CbCompoundArgs / CbCompoundRes
//!                                                              │
//!                                 every op's args and results, fattr4 as a typed struct
//! ```
//!
//! * [`xdr`]: the codec. Every variable-length item is checked against the bytes left and its
//!   maximum before anything is allocated; opaque data decodes as slices of the input; bulk
//!   payloads encode as separate `Bytes` pieces for one vectored write.
//! * [`rpc`]: ONC RPC v2 call and reply messages and credentials (AUTH_NONE, AUTH_SYS, room
//!   for RPCSEC_GSS).
//! * [`record`]: record marking as a sans-IO reader with size caps; [`transport`] (feature
//!   `transport`) wraps it as a tokio codec and writes records with vectored writes.
//! * [`control`]: the control protocol between the MDS and its data servers (ONC RPC,
//!   authenticated with the cluster secret).
//! * [`nfs4`]: every NFSv4.1 (RFC 8881) and NFSv4.2 (RFC 7862) operation, callback, status code
//!   and attribute, and the file layout body.
//! * [`rdma`]: RPC-over-RDMA version 1 (RFC 8166) without verbs: the transport header and its
//!   chunk lists, credits, the connection private data (RFC 8797), and the NFS data that may
//!   move by RDMA (RFC 8267).
//!
//! The core does no I/O. Wire types derive [`xdr::Xdr`], which writes encoder, decoder and (for
//! tests, feature `arbitrary`) a proptest strategy from one declaration.

extern crate self as nfs_proto;

pub mod control;
pub mod nfs4;
pub mod rdma;
pub mod record;
pub mod rpc;
pub mod session;
#[cfg(feature = "transport")]
pub mod transport;
pub mod xdr;

#[cfg(test)]
mod testing;

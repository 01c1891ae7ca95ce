//! RPC-over-RDMA version 1 (RFC 8166, with the NFS binding of RFC 8267 and the private data of
//! RFC 8797) on rdma-core's verbs and RDMA connection manager.
//!
//! ```text
//!  server::Listener ── RDMA-CM listen (port 20049) ── per connection:
//!    endpoint::Endpoint   queue pair, one CQ + completion channel (tokio AsyncFd),
//!                         receive buffers posted as credits, a reaper task
//!    server::reader       receives ─> nfs_proto::rdma header checks ─> Read chunks pulled
//!                         into pool::Pool buffers ─> RPC records
//!    server::Sink         replies ─> reply::shape (READ data to Write chunks, the rest
//!                         inline or into the Reply chunk) ─> RDMA Writes + a Send
//!    nfs_proto::transport::start_records   the same call handling as TCP
//!  client::connect  the requester side: RDMA-CM connect with our private data, calls inline
//!                   or with Read chunks, a Reply chunk offered per call, credits respected;
//!                   its records and sink go to start_records as well
//! ```
//!
//! The wire formats and their checks are `nfs_proto::rdma`'s; this crate posts the work
//! requests. `verbs` is the only module with unsafe code.

pub mod client;
pub mod server;
pub mod verbs;

mod endpoint;
mod pieces;
mod pool;
mod reply;

pub use server::{listeners, Config, Listener, Stats};

/// The port knfsd and the Linux client use for NFS over RDMA (IANA "nfsrdma").
pub const NFS_RDMA_PORT: u16 = 20049;

//! RPC-over-RDMA version 1 (RFC 8166) as wire formats and rules, without I/O: the transport
//! header and its chunk lists, credits, the RDMA-CM private data (RFC 8797), and which NFS data
//! may move by a chunk (RFC 8267). A transport built on verbs later posts the Sends, Receives,
//! RDMA Reads and Writes; this module says what the bytes mean and what is allowed.
//!
//! ```text
//!  Receive buffer (one Send from the peer)
//!  +------------------------------------------+----------------------------------------+
//!  | transport header (RdmaHeader)            | RPC message (RDMA_MSG only), possibly  |
//!  | xid, vers = 1, credit, proc, chunk lists | reduced: DDP-eligible data in chunks   |
//!  +------------------------------------------+----------------------------------------+
//!  ^ RdmaHeader::decode_received(buf, side, limits) -> Received { header, header_len, rpc_message }
//!
//!  read list    requester memory the responder pulls (RDMA Read): WRITE data, or a whole
//!               Long Call at position zero (RDMA_NOMSG)
//!  write list   requester memory the responder fills (RDMA Write): READ data
//!  reply chunk  requester memory for a whole Long Reply (RDMA_NOMSG)
//! ```
//!
//! * [`RdmaHeader`], [`ChunkLists`], [`RdmaError`]: the XDR of RFC 8166 section 4.1.2.
//!   [`RdmaHeader::decode_received`] checks every count against [`Limits`] and the bytes left
//!   before allocating, and applies the receiver's rules for its [`Side`]; a refusal is a
//!   [`HeaderError`] whose [`HeaderError::action`] says whether to answer `RDMA_ERROR`
//!   (`ERR_VERS` or `ERR_CHUNK`), drop the message, or close the connection.
//! * [`RequesterCredits`], [`ResponderCredits`]: the credit grant on each side (section 3.3).
//! * [`PrivateData`], [`Thresholds`]: RFC 8797's connection private data and the inline
//!   thresholds it leads to.
//! * [`ddp`]: the DDP-eligible items of NFSv4 COMPOUND (RFC 8267).

mod chunks;
mod credits;
pub mod ddp;
mod error;
mod header;
mod private_data;
#[cfg(test)]
mod tests;

pub use chunks::{ChunkLists, Limits, RdmaSegment, ReadSegment, WriteChunk};
pub use credits::{CreditError, RequesterCredits, ResponderCredits};
pub use error::{ErrorAction, HeaderError, HeaderErrorKind, Side, Violation};
pub use header::{
    RdmaBody, RdmaErrcode, RdmaError, RdmaHeader, RdmaProc, Received, FIXED_HEADER_LEN,
    MIN_CHUNKED_HEADER_LEN, RPCRDMA_VERSION,
};
pub use private_data::{
    InlineSize, PrivateData, PrivateDataError, Thresholds, DEFAULT_INLINE_THRESHOLD,
    FLAG_REMOTE_INVALIDATION, MAX_INLINE_THRESHOLD, PRIVATE_DATA_FORMAT, PRIVATE_DATA_LEN,
    PRIVATE_DATA_VERSION,
};

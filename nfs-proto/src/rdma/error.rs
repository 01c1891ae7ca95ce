//! Why a received transport header was refused, and what the receiver does about it: answer
//! with `RDMA_ERROR` (a responder only), drop the message, or close the connection.

use core::fmt;

use bytes::Bytes;

use super::header::{RdmaBody, RdmaError, RdmaHeader, RdmaProc, RPCRDMA_VERSION};
use crate::xdr::{DecodeError, Encoder};

/// Which side of a connection received a message, which decides the rules it must follow and
/// who may answer an error. RPC-over-RDMA version 1 is asymmetric (RFC 8166 section 3.1): the
/// requester exposes memory and the responder moves data with RDMA Read and Write.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Side {
    /// The responder (an NFS server on its forward channel) receives calls. Chunk-free
    /// `RDMA_MSG` messages, such as backchannel replies, also pass a responder's rules.
    Responder,
    /// The requester (an NFS client) receives replies, and chunk-free `RDMA_MSG`
    /// backchannel calls.
    Requester,
}

/// A well-formed header that breaks a rule of RFC 8166 (or of the receiver's [`Limits`]).
/// Each variant names the section it comes from.
///
/// [`Limits`]: super::Limits
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Violation {
    /// A segment's `offset + length` wraps past 2^64 (section 3.4.3: a segment is one
    /// contiguous run of registered memory).
    SegmentWraps {
        /// The segment's offset.
        offset: u64,
        /// The segment's length.
        length: u32,
    },
    /// A Read chunk position that is not a multiple of four (section 3.4.5: positions are
    /// offsets of XDR items, which are 4-byte aligned).
    PositionNotAligned {
        /// The position.
        position: u32,
    },
    /// A Read chunk with more segments than [`Limits::max_chunk_segments`](super::Limits).
    ReadChunkTooLong {
        /// The chunk's position.
        position: u32,
        /// Its segments.
        segments: u32,
        /// The limit.
        max: u32,
    },
    /// The Read list describes more bytes than [`Limits::max_read_bytes`](super::Limits).
    ReadListTooLarge {
        /// Bytes in all Read segments.
        bytes: u64,
        /// The limit.
        max: u64,
    },
    /// An `RDMA_NOMSG` call without a Position-Zero Read chunk: the Call is nowhere
    /// (sections 3.5.3.1 and 4.5.2).
    NoMsgCallWithoutCall,
    /// An `RDMA_MSG` call that also has a Position-Zero Read chunk: the Call would be both
    /// inline and in the chunk (section 3.5.3.1 sends a Long Call as `RDMA_NOMSG`).
    MsgCallWithPositionZeroChunk,
    /// An `RDMA_NOMSG` reply without a Reply chunk holding the Reply (sections 3.5.3.2 and
    /// 4.5.2).
    NoMsgReplyWithoutReply,
    /// An `RDMA_MSG` reply whose Reply chunk holds data: the Reply would be both inline and in
    /// the chunk (section 3.5.3.2 sends a Long Reply as `RDMA_NOMSG`; Linux refuses it too).
    MsgReplyWithFilledReplyChunk,
    /// A reply with a Read list: a responder never exposes memory for the requester to pull
    /// (sections 3.1 and 4.3.1; only the requester posts Read chunks).
    ReadListInReply,
    /// An `RDMA_MSG` with fewer than four bytes after the chunk lists: no RPC message follows
    /// (section 4.2.4).
    NoRpcMessage,
    /// The XID of the RPC message differs from `rdma_xid` (sections 4.2.1 and 4.5.2).
    XidMismatch {
        /// The RPC message's XID.
        rpc_xid: u32,
    },
    /// A returned Write or Reply chunk that the call did not offer, or longer than offered
    /// (section 4.3.2). Checked by [`ChunkLists::check_reply_against`](super::ChunkLists).
    ReplyChunkNotOffered,
}

impl Violation {
    /// The RFC 8166 section the rule comes from, or `"limits"` for the receiver's own
    /// [`Limits`](super::Limits).
    pub fn section(&self) -> &'static str {
        match self {
            Self::SegmentWraps { .. } => "3.4.3",
            Self::PositionNotAligned { .. } => "3.4.5",
            Self::ReadChunkTooLong { .. } | Self::ReadListTooLarge { .. } => "limits",
            Self::NoMsgCallWithoutCall | Self::MsgCallWithPositionZeroChunk => "3.5.3.1",
            Self::NoMsgReplyWithoutReply | Self::MsgReplyWithFilledReplyChunk => "3.5.3.2",
            Self::ReadListInReply => "4.3.1",
            Self::NoRpcMessage => "4.2.4",
            Self::XidMismatch { .. } => "4.5.2",
            Self::ReplyChunkNotOffered => "4.3.2",
        }
    }
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Self::SegmentWraps { offset, length } => {
                write!(
                    f,
                    "segment at {offset:#x} of {length} bytes wraps past 2^64"
                )
            }
            Self::PositionNotAligned { position } => {
                write!(f, "read chunk position {position} is not a multiple of 4")
            }
            Self::ReadChunkTooLong {
                position,
                segments,
                max,
            } => write!(
                f,
                "read chunk at position {position} has {segments} segments, more than {max}"
            ),
            Self::ReadListTooLarge { bytes, max } => {
                write!(f, "read list of {bytes} bytes exceeds {max}")
            }
            Self::NoMsgCallWithoutCall => {
                f.write_str("RDMA_NOMSG call without a position-zero read chunk")
            }
            Self::MsgCallWithPositionZeroChunk => {
                f.write_str("RDMA_MSG call with a position-zero read chunk")
            }
            Self::NoMsgReplyWithoutReply => {
                f.write_str("RDMA_NOMSG reply with an empty reply chunk")
            }
            Self::MsgReplyWithFilledReplyChunk => {
                f.write_str("RDMA_MSG reply whose reply chunk holds data")
            }
            Self::ReadListInReply => f.write_str("reply with a read list"),
            Self::NoRpcMessage => f.write_str("RDMA_MSG without an RPC message"),
            Self::XidMismatch { rpc_xid } => {
                write!(f, "RPC message XID {rpc_xid:#010x} differs from rdma_xid")
            }
            Self::ReplyChunkNotOffered => {
                f.write_str("returned chunk does not match the chunk the call offered")
            }
        }?;
        match self.section() {
            "limits" => f.write_str(" (the receiver's limits)"),
            s => write!(f, " (RFC 8166 section {s})"),
        }
    }
}

/// What went wrong with a received header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum HeaderErrorKind {
    /// Shorter than the 16-byte fixed part (`rdma_xid`, `rdma_vers`, `rdma_credit`,
    /// `rdma_proc`; RFC 8166 section 4.2).
    Truncated {
        /// Bytes received.
        len: usize,
    },
    /// An `rdma_vers` other than 1 (sections 4.2.2 and 4.5.1). Nothing after it is read:
    /// another version's header has another layout.
    Version(u32),
    /// An `rdma_proc` this side does not take: an unknown value (section 4.5.2), the
    /// obsolete `RDMA_MSGP` (section 4.6.1) or `RDMA_DONE` (section 4.6.2), or `RDMA_ERROR`
    /// received by a responder (only responders send it).
    Proc(RdmaProc),
    /// The chunk lists, or an `RDMA_ERROR` body, are not valid XDR or exceed the receiver's
    /// limits (section 4.5.2).
    Xdr(DecodeError),
    /// Valid XDR that breaks a rule.
    Violation(Violation),
}

/// What the receiver of a bad header does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorAction {
    /// Answer with this `RDMA_ERROR` ([`HeaderError::reply`] encodes it). Only a responder
    /// answers: an error tells a requester that a call of its failed.
    Reply(RdmaError),
    /// Drop the message (a requester fails the call with the header's XID, if it has one).
    Discard,
    /// Close the connection: not even an XID came, so nothing can be answered or matched.
    Close,
}

/// A received header that was refused: which side received it, its XID when it had one, and
/// why. `Copy`, with static context, allocating nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HeaderError {
    /// The side that received the message.
    pub side: Side,
    /// `rdma_xid`, when the message had four bytes.
    pub xid: Option<u32>,
    /// What went wrong.
    pub kind: HeaderErrorKind,
}

impl HeaderError {
    /// What to do about it.
    ///
    /// * No XID (fewer than 4 bytes): close the connection.
    /// * A requester never answers (a reply cannot be answered): it drops the message.
    /// * A responder answers a wrong version with `ERR_VERS` (section 4.5.1), drops
    ///   `RDMA_DONE` silently (section 4.6.2) and `RDMA_ERROR` (it answers nothing of
    ///   its own), and answers everything else with `ERR_CHUNK`: an unknown or obsolete
    ///   procedure and any chunk-list error (sections 4.5.2 and 4.6.1), including a header
    ///   too short for its fixed fields whose version cannot be told (as Linux does).
    pub fn action(&self) -> ErrorAction {
        let Some(_) = self.xid else {
            return ErrorAction::Close;
        };
        if self.side == Side::Requester {
            return ErrorAction::Discard;
        }
        match self.kind {
            HeaderErrorKind::Version(_) => ErrorAction::Reply(RdmaError::Vers {
                low: RPCRDMA_VERSION,
                high: RPCRDMA_VERSION,
            }),
            HeaderErrorKind::Proc(RdmaProc::RDMA_DONE | RdmaProc::RDMA_ERROR) => {
                ErrorAction::Discard
            }
            _ => ErrorAction::Reply(RdmaError::Chunk),
        }
    }

    /// The `RDMA_ERROR` message to send when [`HeaderError::action`] says to reply, carrying
    /// the responder's current credit grant. An `ERR_VERS` answer echoes the requester's
    /// `rdma_vers` in its own header, as Linux's server does, so that a requester of another
    /// version still takes it for a reply it can parse; the version range it reports is 1..=1.
    pub fn reply(&self, credit: u32) -> Option<Bytes> {
        let (ErrorAction::Reply(err), Some(xid)) = (self.action(), self.xid) else {
            return None;
        };
        Some(match (err, self.kind) {
            (RdmaError::Vers { low, high }, HeaderErrorKind::Version(vers)) => {
                let mut e = Encoder::with_capacity(28);
                for w in [xid, vers, credit, RdmaProc::RDMA_ERROR.0, 1, low, high] {
                    e.put_u32(w);
                }
                e.into_bytes()
            }
            _ => crate::xdr::to_bytes(&RdmaHeader {
                xid,
                credit,
                body: RdmaBody::Error(err),
            }),
        })
    }
}

impl fmt::Display for HeaderError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("RPC-over-RDMA header")?;
        if let Some(xid) = self.xid {
            write!(f, " xid {xid:#010x}")?;
        }
        match self.kind {
            HeaderErrorKind::Truncated { len } => {
                write!(f, ": {len} bytes, shorter than the 16-byte fixed header")
            }
            HeaderErrorKind::Version(v) => {
                write!(f, ": version {v} is not supported (only {RPCRDMA_VERSION})")
            }
            HeaderErrorKind::Proc(p) => write!(f, ": procedure {p} not accepted here"),
            HeaderErrorKind::Xdr(e) => write!(f, ": {e}"),
            HeaderErrorKind::Violation(v) => write!(f, ": {v}"),
        }
    }
}

impl std::error::Error for HeaderError {}

//! The transport header (RFC 8166 section 4): fixed fields, procedures, the `RDMA_ERROR`
//! body, and [`RdmaHeader::decode_received`], which decodes and checks what a receive buffer
//! holds.

use bytes::Bytes;

use super::chunks::{ChunkLists, Limits};
use super::error::{HeaderError, HeaderErrorKind, Side, Violation};
use crate::xdr::{DecodeError, Decoder, Encoder, Xdr};
use crate::xdr_enum;

/// The only version this crate speaks (RFC 8166 section 4.2.2).
pub const RPCRDMA_VERSION: u32 = 1;

/// Bytes of the fixed header fields: `rdma_xid`, `rdma_vers`, `rdma_credit`, `rdma_proc`.
pub const FIXED_HEADER_LEN: usize = 16;

/// The smallest `RDMA_MSG` or `RDMA_NOMSG` header: the fixed fields and three empty lists.
pub const MIN_CHUNKED_HEADER_LEN: usize = FIXED_HEADER_LEN + 12;

xdr_enum! {
    /// The procedure of a transport header, `rdma_proc` (RFC 8166 section 4.2.4).
    #[doc(alias = "rdma_proc")]
    pub struct RdmaProc {
        /// An RPC message follows the header inline (possibly reduced by chunks).
        RDMA_MSG = 0,
        /// No RPC message follows: it travels in a Position-Zero Read chunk (a call) or the
        /// Reply chunk (a reply).
        RDMA_NOMSG = 1,
        /// Obsolete padded message (section 4.6.1): never sent; a responder answers it with
        /// `ERR_CHUNK`.
        RDMA_MSGP = 2,
        /// Obsolete (section 4.6.2): never sent; a receiver drops it silently.
        RDMA_DONE = 3,
        /// A responder's error report in place of a reply (section 4.5).
        RDMA_ERROR = 4,
    }
}

xdr_enum! {
    /// The error code of an `RDMA_ERROR` message, `rpc_rdma_errcode` (RFC 8166 section 4.5).
    #[doc(alias = "rpc_rdma_errcode")]
    pub struct RdmaErrcode {
        /// The responder does not speak the header's version (section 4.5.1).
        ERR_VERS = 1,
        /// The header could not be parsed, or no RPC-level reply is possible (sections 4.5.2
        /// and 4.5.3).
        ERR_CHUNK = 2,
    }
}

/// The body of an `RDMA_ERROR` message, `rpc_rdma_error` (RFC 8166 section 4.5).
#[doc(alias = "rpc_rdma_error")]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RdmaError {
    /// `ERR_VERS` and the versions the responder supports, inclusive.
    Vers {
        /// Lowest supported version.
        low: u32,
        /// Highest supported version.
        high: u32,
    },
    /// `ERR_CHUNK`.
    Chunk,
}

impl Xdr for RdmaError {
    fn encode(&self, enc: &mut Encoder) {
        match *self {
            Self::Vers { low, high } => {
                enc.put_u32(RdmaErrcode::ERR_VERS.0);
                enc.put_u32(low);
                enc.put_u32(high);
            }
            Self::Chunk => enc.put_u32(RdmaErrcode::ERR_CHUNK.0),
        }
    }
    fn decode(dec: &mut Decoder) -> Result<Self, DecodeError> {
        let at = dec.position();
        match RdmaErrcode(dec.get_u32()?) {
            RdmaErrcode::ERR_VERS => Ok(Self::Vers {
                low: dec.get_u32()?,
                high: dec.get_u32()?,
            }),
            RdmaErrcode::ERR_CHUNK => Ok(Self::Chunk),
            other => Err(DecodeError::bad_discriminant(other.0, at)),
        }
        .map_err(|e| e.context("rpc_rdma_error"))
    }
}

/// What follows the fixed fields, by procedure (`rdma_body`, RFC 8166 section 4.1.2). The
/// obsolete `RDMA_MSGP` and `RDMA_DONE` have no variant: nobody may send them (section 4.6),
/// so they decode as errors.
#[doc(alias = "rdma_body")]
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum RdmaBody {
    /// `RDMA_MSG`: chunk lists, then the RPC message inline.
    Msg(ChunkLists),
    /// `RDMA_NOMSG`: chunk lists and nothing after them.
    NoMsg(ChunkLists),
    /// `RDMA_ERROR`.
    Error(RdmaError),
}

impl RdmaBody {
    /// The procedure number.
    pub fn proc_(&self) -> RdmaProc {
        match self {
            Self::Msg(_) => RdmaProc::RDMA_MSG,
            Self::NoMsg(_) => RdmaProc::RDMA_NOMSG,
            Self::Error(_) => RdmaProc::RDMA_ERROR,
        }
    }
}

/// An RPC-over-RDMA version 1 transport header, `rdma_msg` (RFC 8166 section 4.2). Its
/// `rdma_vers` is always [`RPCRDMA_VERSION`]; the one message with another version, an
/// `ERR_VERS` answer echoing the requester's, is built by
/// [`HeaderError::reply`](super::HeaderError::reply).
#[doc(alias = "rdma_msg")]
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct RdmaHeader {
    /// `rdma_xid`: the XID of the RPC message this header carries (section 4.2.1).
    pub xid: u32,
    /// `rdma_credit`: credits requested (in a call) or granted (in a reply), section 3.3.1.
    pub credit: u32,
    /// The procedure and its body.
    pub body: RdmaBody,
}

/// A header decoded from a receive buffer by [`RdmaHeader::decode_received`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Received {
    /// The transport header.
    pub header: RdmaHeader,
    /// Its length: where the RPC message of an `RDMA_MSG` starts in the buffer.
    pub header_len: usize,
    /// The inline RPC message of an `RDMA_MSG`, a slice of the buffer (no copy); empty for
    /// `RDMA_NOMSG` and `RDMA_ERROR`, which end with the header.
    pub rpc_message: Bytes,
}

fn be32(b: &[u8], at: usize) -> Option<u32> {
    let w = b.get(at..at + 4)?;
    Some(u32::from_be_bytes([w[0], w[1], w[2], w[3]]))
}

impl RdmaHeader {
    /// The procedure number.
    pub fn proc_(&self) -> RdmaProc {
        self.body.proc_()
    }

    /// The chunk lists of an `RDMA_MSG` or `RDMA_NOMSG`.
    pub fn chunks(&self) -> Option<&ChunkLists> {
        match &self.body {
            RdmaBody::Msg(c) | RdmaBody::NoMsg(c) => Some(c),
            RdmaBody::Error(_) => None,
        }
    }

    /// The message to send: this header followed by the RPC message `pieces` (which are
    /// referenced, not copied), ready for one Send with a gather list.
    pub fn encode_with_message(&self, pieces: impl IntoIterator<Item = Bytes>) -> Vec<Bytes> {
        let mut enc = Encoder::new();
        self.encode(&mut enc);
        enc.put_pieces(pieces);
        enc.into_pieces()
    }

    /// Decodes and checks the transport header at the start of `buf`, a receive buffer that
    /// `side` got, within `limits`. Returns the header, its length and, for `RDMA_MSG`, the
    /// inline RPC message that follows it.
    ///
    /// Checked, in order (sections of RFC 8166):
    /// 1. the fixed fields are there (4.2) and `rdma_vers` is 1 (4.2.2, 4.5.1): nothing
    ///    after the version is read otherwise;
    /// 2. `rdma_proc` is `RDMA_MSG`, `RDMA_NOMSG` or (for a requester) `RDMA_ERROR`
    ///    (4.2.4, 4.5.2, 4.6);
    /// 3. the chunk lists are valid XDR within `limits`, every count checked against the
    ///    limit and the bytes left before anything is allocated (4.3, 4.5.2), and follow
    ///    [`ChunkLists::check`];
    /// 4. a call (`Side::Responder`): an `RDMA_NOMSG` has a Position-Zero Read chunk and an
    ///    `RDMA_MSG` has none (3.5.3.1);
    /// 5. a reply (`Side::Requester`): no Read list (4.3.1); an `RDMA_NOMSG` has a Reply chunk
    ///    holding data and an `RDMA_MSG` a Reply chunk holding none (3.5.3.2);
    /// 6. an `RDMA_NOMSG` or `RDMA_ERROR` ends with its header; an `RDMA_MSG` is followed by
    ///    an RPC message whose XID is `rdma_xid` (4.2.1, 4.5.2).
    ///
    /// What needs the RPC message or the call that a reply answers is the transport's:
    /// positions against the reassembled message (a mismatch is `GARBAGE_ARGS`, 4.5.2),
    /// returned chunks against offered ones ([`ChunkLists::check_reply_against`]).
    pub fn decode_received(
        buf: Bytes,
        side: Side,
        limits: &Limits,
    ) -> Result<Received, HeaderError> {
        let xid = be32(&buf, 0);
        let err = |kind| HeaderError { side, xid, kind };
        if let Some(vers) = be32(&buf, 4) {
            if vers != RPCRDMA_VERSION {
                return Err(err(HeaderErrorKind::Version(vers)));
            }
        }
        let (Some(xid), Some(credit), Some(proc_)) = (xid, be32(&buf, 8), be32(&buf, 12)) else {
            return Err(err(HeaderErrorKind::Truncated { len: buf.len() }));
        };
        let xdr = |e: DecodeError| err(HeaderErrorKind::Xdr(e));
        let violation = |v| err(HeaderErrorKind::Violation(v));
        let mut dec = Decoder::new(buf);
        dec.get_fixed_bytes(FIXED_HEADER_LEN).map_err(xdr)?;
        let body = match (RdmaProc(proc_), side) {
            (RdmaProc::RDMA_MSG | RdmaProc::RDMA_NOMSG, _) => {
                let lists = ChunkLists::decode_bounded(&mut dec, limits).map_err(xdr)?;
                lists.check(limits).map_err(violation)?;
                if proc_ == RdmaProc::RDMA_MSG.0 {
                    RdmaBody::Msg(lists)
                } else {
                    RdmaBody::NoMsg(lists)
                }
            }
            (RdmaProc::RDMA_ERROR, Side::Requester) => {
                RdmaBody::Error(RdmaError::decode(&mut dec).map_err(xdr)?)
            }
            (p, _) => return Err(err(HeaderErrorKind::Proc(p))),
        };
        check_side(&body, side).map_err(violation)?;
        let header_len = dec.position();
        let rpc_message = dec.take_rest();
        match &body {
            RdmaBody::Msg(_) => match be32(&rpc_message, 0) {
                None => return Err(violation(Violation::NoRpcMessage)),
                Some(rpc_xid) if rpc_xid != xid => {
                    return Err(violation(Violation::XidMismatch { rpc_xid }))
                }
                Some(_) => {}
            },
            _ if !rpc_message.is_empty() => {
                let trailing = crate::xdr::DecodeErrorKind::TrailingBytes(rpc_message.len());
                return Err(xdr(
                    DecodeError::new(trailing, header_len).context("rdma_msg")
                ));
            }
            _ => {}
        }
        Ok(Received {
            header: RdmaHeader { xid, credit, body },
            header_len,
            rpc_message,
        })
    }
}

/// The rules that depend on whether the message is a call or a reply.
fn check_side(body: &RdmaBody, side: Side) -> Result<(), Violation> {
    let (lists, nomsg) = match body {
        RdmaBody::Msg(l) => (l, false),
        RdmaBody::NoMsg(l) => (l, true),
        RdmaBody::Error(_) => return Ok(()),
    };
    match side {
        Side::Responder => match (nomsg, lists.has_position_zero_chunk()) {
            (true, false) => Err(Violation::NoMsgCallWithoutCall),
            (false, true) => Err(Violation::MsgCallWithPositionZeroChunk),
            _ => Ok(()),
        },
        Side::Requester => {
            if !lists.reads.is_empty() {
                return Err(Violation::ReadListInReply);
            }
            let reply_bytes = lists.reply.as_ref().map_or(0, |c| c.total_length());
            match (nomsg, reply_bytes) {
                (true, 0) => Err(Violation::NoMsgReplyWithoutReply),
                (false, 1..) => Err(Violation::MsgReplyWithFilledReplyChunk),
                _ => Ok(()),
            }
        }
    }
}

impl Xdr for RdmaHeader {
    const MIN_SIZE: usize = FIXED_HEADER_LEN + 4;
    fn encode(&self, enc: &mut Encoder) {
        enc.put_u32(self.xid);
        enc.put_u32(RPCRDMA_VERSION);
        enc.put_u32(self.credit);
        enc.put_u32(self.proc_().0);
        match &self.body {
            RdmaBody::Msg(l) | RdmaBody::NoMsg(l) => l.encode(enc),
            RdmaBody::Error(e) => e.encode(enc),
        }
    }
    /// The XDR of the header alone, within [`Limits::default`], without the rules of
    /// [`RdmaHeader::decode_received`]; the RPC message of an `RDMA_MSG` is left in `dec`.
    fn decode(dec: &mut Decoder) -> Result<Self, DecodeError> {
        let xid = dec.get_u32()?;
        let at = dec.position();
        if dec.get_u32()? != RPCRDMA_VERSION {
            return Err(DecodeError::new(
                crate::xdr::DecodeErrorKind::Invalid("rdma_vers is not 1"),
                at,
            )
            .context("rdma_msg"));
        }
        let credit = dec.get_u32()?;
        let at = dec.position();
        let body = match RdmaProc(dec.get_u32()?) {
            RdmaProc::RDMA_MSG => RdmaBody::Msg(ChunkLists::decode(dec)?),
            RdmaProc::RDMA_NOMSG => RdmaBody::NoMsg(ChunkLists::decode(dec)?),
            RdmaProc::RDMA_ERROR => RdmaBody::Error(RdmaError::decode(dec)?),
            p => return Err(DecodeError::bad_discriminant(p.0, at).context("rdma_body")),
        };
        Ok(Self { xid, credit, body })
    }
}

#[cfg(any(test, feature = "arbitrary"))]
mod arbitrary {
    use proptest::prelude::*;

    use super::*;

    impl Arbitrary for RdmaError {
        type Parameters = ();
        type Strategy = BoxedStrategy<Self>;
        fn arbitrary_with(_: ()) -> Self::Strategy {
            prop_oneof![
                Just(Self::Chunk),
                (any::<u32>(), any::<u32>()).prop_map(|(low, high)| Self::Vers { low, high }),
            ]
            .boxed()
        }
    }

    impl Arbitrary for RdmaBody {
        type Parameters = ();
        type Strategy = BoxedStrategy<Self>;
        fn arbitrary_with(_: ()) -> Self::Strategy {
            prop_oneof![
                any::<ChunkLists>().prop_map(Self::Msg),
                any::<ChunkLists>().prop_map(Self::NoMsg),
                any::<RdmaError>().prop_map(Self::Error),
            ]
            .boxed()
        }
    }

    impl Arbitrary for RdmaHeader {
        type Parameters = ();
        type Strategy = BoxedStrategy<Self>;
        fn arbitrary_with(_: ()) -> Self::Strategy {
            (any::<u32>(), any::<u32>(), any::<RdmaBody>())
                .prop_map(|(xid, credit, body)| Self { xid, credit, body })
                .boxed()
        }
    }
}

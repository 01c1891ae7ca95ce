//! Chunk lists (RFC 8166 section 4.3): the Read list, the Write list and the Reply chunk, with a
//! decoder that checks every count against the [`Limits`] and the bytes left before it
//! allocates, and the per-segment rules a receiver checks ([`ChunkLists::check`]).

use super::error::Violation;
use crate::xdr::{DecodeError, DecodeErrorKind, Decoder, Encoder, Xdr};

/// How much chunk-list complexity a receiver accepts. Anything beyond is refused while the
/// header is decoded, before memory is reserved for it, and a responder answers it with
/// `RDMA_ERROR`/`ERR_CHUNK`, the answer RFC 8267 ("Chunk List Complexity") names for chunk
/// lists a server cannot process.
///
/// The defaults accept what RFC 8267 (chunk list complexity, NFS version 4) says every NFSv4
/// server must: a Read list with a Position-Zero Read chunk and one more Read chunk, at most one
/// Write chunk, and up to sixteen segments in any chunk (the Linux client puts at most
/// `RPCRDMA_MAX_HDR_SEGS` in one: 8, 12 in newer kernels). Write chunks get headroom for a
/// COMPOUND with several READs. Data the responder must pull (the Read list) is capped at the TCP record cap
/// ([`crate::record::DEFAULT_MAX_RECORD`]), since a server reserves that memory before the
/// RDMA Reads; Write and Reply chunks are the requester's memory and only their segment
/// counts are capped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Most entries in the Read list, all positions together.
    pub max_read_segments: u32,
    /// Most bytes all Read segments together may describe.
    pub max_read_bytes: u64,
    /// Most Write chunks in the Write list.
    pub max_write_chunks: u32,
    /// Most segments in one chunk: a Read chunk (the Read segments of one position), a Write
    /// chunk or the Reply chunk.
    pub max_chunk_segments: u32,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_read_segments: 2 * 16,
            max_read_bytes: crate::record::DEFAULT_MAX_RECORD as u64,
            max_write_chunks: 8,
            max_chunk_segments: 16,
        }
    }
}

/// A plain RDMA segment (RFC 8166 section 3.4.3): `length` bytes of registered memory at
/// `offset` (a virtual address or an offset in the region), named by the steering tag `handle`.
#[doc(alias = "xdr_rdma_segment")]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct RdmaSegment {
    /// The registered memory handle (R_key).
    pub handle: u32,
    /// Length in bytes.
    pub length: u32,
    /// Virtual address or offset of the first byte.
    pub offset: u64,
}

impl RdmaSegment {
    /// Bytes a segment takes on the wire.
    pub const WIRE_LEN: usize = 16;

    /// The first byte past the segment, or `None` when `offset + length` overflows 64 bits
    /// (such a segment cannot name registered memory).
    pub fn end(&self) -> Option<u64> {
        self.offset.checked_add(u64::from(self.length))
    }
}

impl Xdr for RdmaSegment {
    const MIN_SIZE: usize = Self::WIRE_LEN;
    fn encode(&self, enc: &mut Encoder) {
        enc.put_u32(self.handle);
        enc.put_u32(self.length);
        enc.put_u64(self.offset);
    }
    fn decode(dec: &mut Decoder) -> Result<Self, DecodeError> {
        Ok(Self {
            handle: dec.get_u32()?,
            length: dec.get_u32()?,
            offset: dec.get_u64()?,
        })
    }
}

/// One entry of the Read list (RFC 8166 section 3.4.5): a segment of the requester's memory
/// that the responder pulls with RDMA Read, and the XDR position in the RPC Call where its data
/// belongs. The Read segments sharing a position form one Read chunk; position zero carries the
/// whole Call (a Position-Zero Read chunk, section 3.5.3.1).
#[doc(alias = "xdr_read_chunk")]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct ReadSegment {
    /// Offset of the chunk's data in the Call's XDR stream.
    pub position: u32,
    /// The memory to read.
    pub target: RdmaSegment,
}

impl Xdr for ReadSegment {
    const MIN_SIZE: usize = 4 + RdmaSegment::WIRE_LEN;
    fn encode(&self, enc: &mut Encoder) {
        enc.put_u32(self.position);
        self.target.encode(enc);
    }
    fn decode(dec: &mut Decoder) -> Result<Self, DecodeError> {
        Ok(Self {
            position: dec.get_u32()?,
            target: RdmaSegment::decode(dec)?,
        })
    }
}

/// A Write chunk (RFC 8166 section 3.4.6), also the shape of the Reply chunk (section 4.3.3):
/// a counted array of segments the responder fills with RDMA Write. In a reply the responder
/// returns it with each segment's length set to the bytes it wrote (section 4.3.2).
#[doc(alias = "xdr_write_chunk")]
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct WriteChunk {
    /// The segments, in order.
    pub segments: Vec<RdmaSegment>,
}

impl WriteChunk {
    /// Sum of the segment lengths (cannot overflow: at most 2^32 segments of 2^32 bytes).
    pub fn total_length(&self) -> u64 {
        self.segments.iter().map(|s| u64::from(s.length)).sum()
    }

    /// Reads a chunk of at most `max_segments` segments: the count is checked against the
    /// maximum and the bytes left before the segments are allocated.
    pub fn decode_bounded(dec: &mut Decoder, max_segments: u32) -> Result<Self, DecodeError> {
        let n = dec
            .get_length(max_segments, RdmaSegment::WIRE_LEN)
            .map_err(|e| e.context("xdr_write_chunk.target"))?;
        let mut segments = Vec::with_capacity(n);
        for _ in 0..n {
            segments.push(RdmaSegment::decode(dec)?);
        }
        Ok(Self { segments })
    }
}

impl Xdr for WriteChunk {
    fn encode(&self, enc: &mut Encoder) {
        enc.put_u32(self.segments.len() as u32);
        for s in &self.segments {
            s.encode(enc);
        }
    }
    fn decode(dec: &mut Decoder) -> Result<Self, DecodeError> {
        Self::decode_bounded(dec, Limits::default().max_chunk_segments)
    }
}

/// The three chunk lists of an `RDMA_MSG` or `RDMA_NOMSG` header (RFC 8166 section 4.3).
///
/// On the wire the Read and Write lists are XDR optional-data linked lists (a 1 before each
/// entry, a 0 after the last) and the Reply chunk is an optional Write chunk. Here they are
/// flat vectors; the decoder never recurses.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct ChunkLists {
    /// The Read list (section 4.3.1), in wire order.
    pub reads: Vec<ReadSegment>,
    /// The Write list (section 4.3.2): one Write chunk per DDP-eligible result, in order.
    pub writes: Vec<WriteChunk>,
    /// The Reply chunk (section 4.3.3).
    pub reply: Option<WriteChunk>,
}

impl ChunkLists {
    /// Whether all three lists are empty (a Short Message, RFC 8166 section 3.5.1).
    pub fn is_empty(&self) -> bool {
        self.reads.is_empty() && self.writes.is_empty() && self.reply.is_none()
    }

    /// Whether the Read list has a Position-Zero Read chunk, which carries a whole RPC Call
    /// (RFC 8166 section 3.5.3.1).
    pub fn has_position_zero_chunk(&self) -> bool {
        self.reads.iter().any(|r| r.position == 0)
    }

    /// The segments of the Read chunk at `position`, in wire order.
    pub fn read_chunk(&self, position: u32) -> impl Iterator<Item = &RdmaSegment> {
        self.reads
            .iter()
            .filter(move |r| r.position == position)
            .map(|r| &r.target)
    }

    /// The distinct positions of the Read chunks, ascending.
    pub fn read_positions(&self) -> Vec<u32> {
        let mut p: Vec<u32> = self.reads.iter().map(|r| r.position).collect();
        p.sort_unstable();
        p.dedup();
        p
    }

    /// Sum of the Read segment lengths: what a responder pulls.
    pub fn read_bytes(&self) -> u64 {
        self.reads.iter().map(|r| u64::from(r.target.length)).sum()
    }

    /// Reads the three lists within `limits`. A list entry is counted before it is decoded,
    /// so a list longer than its limit fails at the entry past the limit; a segment count is
    /// checked against the limit and the bytes left before the segments are allocated.
    pub fn decode_bounded(dec: &mut Decoder, limits: &Limits) -> Result<Self, DecodeError> {
        let mut reads = Vec::new();
        loop {
            let at = dec.position();
            if !dec.get_bool().map_err(|e| e.context("read list"))? {
                break;
            }
            if reads.len() >= limits.max_read_segments as usize {
                return Err(too_many(
                    reads.len(),
                    limits.max_read_segments,
                    at,
                    "read list",
                ));
            }
            reads.push(ReadSegment::decode(dec).map_err(|e| e.context("xdr_read_chunk"))?);
        }
        let mut writes = Vec::new();
        loop {
            let at = dec.position();
            if !dec.get_bool().map_err(|e| e.context("write list"))? {
                break;
            }
            if writes.len() >= limits.max_write_chunks as usize {
                return Err(too_many(
                    writes.len(),
                    limits.max_write_chunks,
                    at,
                    "write list",
                ));
            }
            writes.push(WriteChunk::decode_bounded(dec, limits.max_chunk_segments)?);
        }
        let reply = if dec.get_bool().map_err(|e| e.context("reply chunk"))? {
            Some(WriteChunk::decode_bounded(dec, limits.max_chunk_segments)?)
        } else {
            None
        };
        Ok(Self {
            reads,
            writes,
            reply,
        })
    }

    /// The rules every chunk list must follow, whoever sent it:
    ///
    /// * a segment names memory from `offset` to `offset + length`, which must not wrap past
    ///   2^64 (RFC 8166 section 3.4.3: a segment is a contiguous registered region);
    /// * a Read chunk's position is an offset in an XDR stream, where every item starts on a
    ///   4-byte boundary (RFC 8166 section 3.4.5, RFC 4506 section 3; Linux's server refuses
    ///   other positions too);
    /// * each Read chunk (the Read segments of one position) has at most
    ///   [`Limits::max_chunk_segments`] segments, and the Read list describes at most
    ///   [`Limits::max_read_bytes`] bytes.
    pub fn check(&self, limits: &Limits) -> Result<(), Violation> {
        let segments = self
            .reads
            .iter()
            .map(|r| &r.target)
            .chain(self.writes.iter().flat_map(|c| &c.segments))
            .chain(self.reply.iter().flat_map(|c| &c.segments));
        for s in segments {
            if s.end().is_none() {
                return Err(Violation::SegmentWraps {
                    offset: s.offset,
                    length: s.length,
                });
            }
        }
        for (i, r) in self.reads.iter().enumerate() {
            if r.position % 4 != 0 {
                return Err(Violation::PositionNotAligned {
                    position: r.position,
                });
            }
            // The first segment of each position counts its chunk (at most 32 entries: cheap).
            if self.reads[..i].iter().all(|p| p.position != r.position) {
                let count = self.read_chunk(r.position).count() as u32;
                if count > limits.max_chunk_segments {
                    return Err(Violation::ReadChunkTooLong {
                        position: r.position,
                        segments: count,
                        max: limits.max_chunk_segments,
                    });
                }
            }
        }
        let bytes = self.read_bytes();
        if bytes > limits.max_read_bytes {
            return Err(Violation::ReadListTooLarge {
                bytes,
                max: limits.max_read_bytes,
            });
        }
        Ok(())
    }

    /// Checks the chunk lists a responder returned in a reply against the ones the requester
    /// offered in the call (RFC 8166 section 4.3.2): the responder sends back the Write list
    /// and the Reply chunk with each segment's length updated to the bytes it wrote, so each
    /// returned chunk must be an offered chunk (same handles and offsets, no more segments) whose
    /// lengths did not grow. A reply may return fewer Write chunks than were offered.
    pub fn check_reply_against(&self, offered: &ChunkLists) -> Result<(), Violation> {
        if self.writes.len() > offered.writes.len() {
            return Err(Violation::ReplyChunkNotOffered);
        }
        let pairs = self.writes.iter().zip(&offered.writes);
        let reply = match (&self.reply, &offered.reply) {
            (None, _) => None,
            (Some(r), Some(o)) => Some((r, o)),
            (Some(_), None) => return Err(Violation::ReplyChunkNotOffered),
        };
        for (got, sent) in pairs.chain(reply) {
            if got.segments.len() > sent.segments.len() {
                return Err(Violation::ReplyChunkNotOffered);
            }
            for (g, s) in got.segments.iter().zip(&sent.segments) {
                if g.handle != s.handle || g.offset != s.offset || g.length > s.length {
                    return Err(Violation::ReplyChunkNotOffered);
                }
            }
        }
        Ok(())
    }
}

fn too_many(count: usize, max: u32, at: usize, what: &'static str) -> DecodeError {
    DecodeError::new(
        DecodeErrorKind::TooLong {
            len: (count as u32).saturating_add(1),
            max,
        },
        at,
    )
    .context(what)
}

impl Xdr for ChunkLists {
    const MIN_SIZE: usize = 12;
    fn encode(&self, enc: &mut Encoder) {
        for r in &self.reads {
            enc.put_bool(true);
            r.encode(enc);
        }
        enc.put_bool(false);
        for w in &self.writes {
            enc.put_bool(true);
            w.encode(enc);
        }
        enc.put_bool(false);
        self.reply.encode(enc);
    }
    /// Decodes within [`Limits::default`].
    fn decode(dec: &mut Decoder) -> Result<Self, DecodeError> {
        Self::decode_bounded(dec, &Limits::default())
    }
}

#[cfg(any(test, feature = "arbitrary"))]
mod arbitrary {
    use proptest::prelude::*;

    use super::*;

    impl Arbitrary for RdmaSegment {
        type Parameters = ();
        type Strategy = BoxedStrategy<Self>;
        fn arbitrary_with(_: ()) -> Self::Strategy {
            (any::<u32>(), any::<u32>(), any::<u64>())
                .prop_map(|(handle, length, offset)| Self {
                    handle,
                    length,
                    offset,
                })
                .boxed()
        }
    }

    impl Arbitrary for ReadSegment {
        type Parameters = ();
        type Strategy = BoxedStrategy<Self>;
        fn arbitrary_with(_: ()) -> Self::Strategy {
            (any::<u32>(), any::<RdmaSegment>())
                .prop_map(|(position, target)| Self { position, target })
                .boxed()
        }
    }

    impl Arbitrary for WriteChunk {
        type Parameters = ();
        type Strategy = BoxedStrategy<Self>;
        fn arbitrary_with(_: ()) -> Self::Strategy {
            proptest::collection::vec(any::<RdmaSegment>(), 0..=4)
                .prop_map(|segments| Self { segments })
                .boxed()
        }
    }

    /// Lists within [`Limits::default`], so that they decode.
    impl Arbitrary for ChunkLists {
        type Parameters = ();
        type Strategy = BoxedStrategy<Self>;
        fn arbitrary_with(_: ()) -> Self::Strategy {
            (
                proptest::collection::vec(any::<ReadSegment>(), 0..=4),
                proptest::collection::vec(any::<WriteChunk>(), 0..=3),
                any::<Option<WriteChunk>>(),
            )
                .prop_map(|(reads, writes, reply)| Self {
                    reads,
                    writes,
                    reply,
                })
                .boxed()
        }
    }
}

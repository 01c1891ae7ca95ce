use bytes::Bytes;
use proptest::prelude::*;

use super::*;
use crate::xdr::{self, DecodeErrorKind, Decoder, Xdr};

crate::roundtrip_tests!(
    rdma_segment: RdmaSegment,
    read_segment: ReadSegment,
    write_chunk: WriteChunk,
    chunk_lists: ChunkLists,
    rdma_error: RdmaError,
    rdma_header: RdmaHeader,
);

/// Big-endian words to bytes.
fn words(w: &[u32]) -> Bytes {
    w.iter()
        .flat_map(|w| w.to_be_bytes())
        .collect::<Vec<u8>>()
        .into()
}

fn seg(handle: u32, length: u32, offset: u64) -> RdmaSegment {
    RdmaSegment {
        handle,
        length,
        offset,
    }
}

fn received(buf: Bytes, side: Side) -> Result<Received, HeaderError> {
    RdmaHeader::decode_received(buf, side, &Limits::default())
}

fn refused(buf: Bytes, side: Side) -> HeaderError {
    received(buf, side).expect_err("must be refused")
}

fn violation(buf: Bytes, side: Side) -> Violation {
    match refused(buf, side).kind {
        HeaderErrorKind::Violation(v) => v,
        k => panic!("expected a violation, got {k:?}"),
    }
}

const XID: u32 = 0x1234_5678;

// ------------------------------------------------------------------------------------------------
// Golden bytes, written by hand from the XDR of RFC 8166 section 4.1.2
// ------------------------------------------------------------------------------------------------

#[test]
fn golden_short_call_without_chunks() {
    // xid, vers 1, credit 32, RDMA_MSG, no read list, no write list, no reply chunk; then the
    // RPC call, whose first word is the same xid.
    let buf = words(&[XID, 1, 32, 0, 0, 0, 0, XID, 0, 2]);
    let r = received(buf.clone(), Side::Responder).unwrap();
    let header = RdmaHeader {
        xid: XID,
        credit: 32,
        body: RdmaBody::Msg(ChunkLists::default()),
    };
    assert_eq!(r.header, header);
    assert_eq!(r.header_len, MIN_CHUNKED_HEADER_LEN);
    assert_eq!(r.rpc_message, buf.slice(28..));
    assert_eq!(r.rpc_message.as_ptr(), buf[28..].as_ptr(), "no copy");
    assert_eq!(xdr::to_bytes(&header), buf.slice(..28));
}

#[test]
fn golden_write_call_with_a_read_chunk() {
    // A WRITE whose 8 KiB of data the server pulls from two segments at XDR position 132.
    let buf = words(&[
        XID, 1, 64, 0, // fixed fields, RDMA_MSG
        1, 132, 0x1001, 4096, 0x7f00, 0x1000, // read segment 1
        1, 132, 0x1002, 4096, 0x7f00, 0x2000, // read segment 2
        0,      // end of the read list
        0,      // no write list
        0,      // no reply chunk
        XID, 0,
    ]);
    let r = received(buf.clone(), Side::Responder).unwrap();
    let lists = ChunkLists {
        reads: vec![
            ReadSegment {
                position: 132,
                target: seg(0x1001, 4096, 0x7f00_0000_1000),
            },
            ReadSegment {
                position: 132,
                target: seg(0x1002, 4096, 0x7f00_0000_2000),
            },
        ],
        ..Default::default()
    };
    assert_eq!(r.header.body, RdmaBody::Msg(lists.clone()));
    assert_eq!(r.header_len, 76);
    assert_eq!(lists.read_positions(), [132]);
    assert_eq!(lists.read_chunk(132).count(), 2);
    assert_eq!(lists.read_bytes(), 8192);
    assert_eq!(xdr::to_bytes(&r.header), buf.slice(..76));
}

#[test]
fn golden_read_call_with_a_write_chunk() {
    // A READ offering one Write chunk of two segments for its data.
    let buf = words(&[
        XID, 1, 64, 0, // fixed fields, RDMA_MSG
        0, // no read list
        1, 2, 0x2001, 65536, 0, 0x10000, 0x2002, 65536, 0, 0x20000, // one write chunk
        0,       // end of the write list
        0,       // no reply chunk
        XID,
    ]);
    let r = received(buf.clone(), Side::Responder).unwrap();
    let chunk = WriteChunk {
        segments: vec![seg(0x2001, 65536, 0x10000), seg(0x2002, 65536, 0x20000)],
    };
    assert_eq!(chunk.total_length(), 131072);
    let lists = ChunkLists {
        writes: vec![chunk],
        ..Default::default()
    };
    assert_eq!(r.header.body, RdmaBody::Msg(lists));
    assert_eq!(xdr::to_bytes(&r.header), buf.slice(..r.header_len));
}

#[test]
fn golden_long_call_and_long_reply() {
    // The whole call in a Position-Zero Read chunk, and a Reply chunk for the whole reply.
    let call = words(&[
        XID, 1, 8, 1, // fixed fields, RDMA_NOMSG
        1, 0, 0x3001, 2048, 0, 0x4000, 0, // PZRC, end of read list
        0, // no write list
        1, 1, 0x3002, 8192, 0, 0x8000, // reply chunk
    ]);
    let r = received(call.clone(), Side::Responder).unwrap();
    let lists = ChunkLists {
        reads: vec![ReadSegment {
            position: 0,
            target: seg(0x3001, 2048, 0x4000),
        }],
        writes: vec![],
        reply: Some(WriteChunk {
            segments: vec![seg(0x3002, 8192, 0x8000)],
        }),
    };
    assert_eq!(r.header.body, RdmaBody::NoMsg(lists.clone()));
    assert!(r.rpc_message.is_empty());
    assert_eq!(r.header_len, call.len());
    assert_eq!(xdr::to_bytes(&r.header), call);

    // The reply: RDMA_NOMSG, the Reply chunk returned with the 5000 bytes written.
    let reply = words(&[XID, 1, 16, 1, 0, 0, 1, 1, 0x3002, 5000, 0, 0x8000]);
    let r = received(reply.clone(), Side::Requester).unwrap();
    assert_eq!(r.header.credit, 16);
    let got = r.header.chunks().unwrap();
    assert_eq!(got.reply.as_ref().unwrap().total_length(), 5000);
    got.check_reply_against(&lists).unwrap();
    assert_eq!(xdr::to_bytes(&r.header), reply);
}

#[test]
fn golden_rdma_errors() {
    let vers = words(&[XID, 1, 1, 4, 1, 1, 1]);
    let r = received(vers.clone(), Side::Requester).unwrap();
    assert_eq!(
        r.header.body,
        RdmaBody::Error(RdmaError::Vers { low: 1, high: 1 })
    );
    assert_eq!(xdr::to_bytes(&r.header), vers);
    let chunk = words(&[XID, 1, 1, 4, 2]);
    let r = received(chunk.clone(), Side::Requester).unwrap();
    assert_eq!(r.header.body, RdmaBody::Error(RdmaError::Chunk));
    assert_eq!(xdr::to_bytes(&r.header), chunk);
    let unknown = refused(words(&[XID, 1, 1, 4, 3]), Side::Requester);
    assert!(matches!(
        unknown.kind,
        HeaderErrorKind::Xdr(e) if e.kind == DecodeErrorKind::BadDiscriminant(3)
    ));
}

// ------------------------------------------------------------------------------------------------
// Fixed fields and procedures
// ------------------------------------------------------------------------------------------------

#[test]
fn fewer_than_four_bytes_close_the_connection() {
    for n in 0..4 {
        let e = refused(Bytes::from(vec![0; n]), Side::Responder);
        assert_eq!(e.xid, None);
        assert_eq!(e.action(), ErrorAction::Close);
        assert_eq!(e.reply(1), None);
    }
}

#[test]
fn a_short_fixed_header_with_a_version_one_is_err_chunk() {
    let e = refused(words(&[XID, 1, 5]), Side::Responder);
    assert_eq!(e.kind, HeaderErrorKind::Truncated { len: 12 });
    assert_eq!(e.action(), ErrorAction::Reply(RdmaError::Chunk));
    let e = refused(words(&[XID, 1, 5]), Side::Requester);
    assert_eq!(e.action(), ErrorAction::Discard);
}

#[test]
fn another_version_is_answered_with_err_vers_echoing_it() {
    // Nothing after rdma_vers is read: the rest may have any layout.
    let e = refused(words(&[XID, 2]), Side::Responder);
    assert_eq!(e.kind, HeaderErrorKind::Version(2));
    assert_eq!(
        e.action(),
        ErrorAction::Reply(RdmaError::Vers { low: 1, high: 1 })
    );
    assert_eq!(e.reply(7).unwrap(), words(&[XID, 2, 7, 4, 1, 1, 1]));
    assert_eq!(
        e.to_string(),
        "RPC-over-RDMA header xid 0x12345678: version 2 is not supported (only 1)"
    );
}

#[test]
fn rdma_done_is_dropped_silently_and_rdma_msgp_answered_err_chunk() {
    let done = refused(words(&[XID, 1, 1, 3]), Side::Responder);
    assert_eq!(done.kind, HeaderErrorKind::Proc(RdmaProc::RDMA_DONE));
    assert_eq!(done.action(), ErrorAction::Discard);
    let msgp = words(&[XID, 1, 1, 2, 0, 1024, 0, 0, 0, XID]);
    let e = refused(msgp, Side::Responder);
    assert_eq!(e.kind, HeaderErrorKind::Proc(RdmaProc::RDMA_MSGP));
    assert_eq!(e.action(), ErrorAction::Reply(RdmaError::Chunk));
    let reply = e.reply(9).unwrap();
    assert_eq!(reply, words(&[XID, 1, 9, 4, 2]));
    // The requester takes the answer as an RDMA_ERROR for its call.
    let r = received(reply, Side::Requester).unwrap();
    assert_eq!((r.header.xid, r.header.credit), (XID, 9));
    assert_eq!(r.header.body, RdmaBody::Error(RdmaError::Chunk));
}

#[test]
fn an_unknown_procedure_is_err_chunk_and_an_error_to_a_responder_is_dropped() {
    let e = refused(words(&[XID, 1, 1, 5, 0, 0, 0]), Side::Responder);
    assert_eq!(e.kind, HeaderErrorKind::Proc(RdmaProc(5)));
    assert_eq!(e.action(), ErrorAction::Reply(RdmaError::Chunk));
    assert!(e.to_string().contains("procedure RdmaProc(5)"), "{e}");
    let e = refused(words(&[XID, 1, 1, 4, 2]), Side::Responder);
    assert_eq!(e.action(), ErrorAction::Discard);
    let e = refused(words(&[XID, 1, 1, 5]), Side::Requester);
    assert_eq!(e.action(), ErrorAction::Discard);
}

// ------------------------------------------------------------------------------------------------
// The receiver's rules
// ------------------------------------------------------------------------------------------------

#[test]
fn rdma_nomsg_call_needs_a_position_zero_chunk() {
    // Section 4.5.2's example: RDMA_NOMSG with all three lists absent.
    let buf = words(&[XID, 1, 1, 1, 0, 0, 0]);
    assert_eq!(
        violation(buf, Side::Responder),
        Violation::NoMsgCallWithoutCall
    );
    // A Reply chunk alone does not carry the call either.
    let buf = words(&[XID, 1, 1, 1, 0, 0, 1, 1, 7, 4096, 0, 0]);
    let e = refused(buf, Side::Responder);
    assert_eq!(e.action(), ErrorAction::Reply(RdmaError::Chunk));
    assert!(e.to_string().contains("section 3.5.3.1"), "{e}");
}

#[test]
fn rdma_msg_call_with_a_position_zero_chunk_is_refused() {
    let buf = words(&[XID, 1, 1, 0, 1, 0, 7, 512, 0, 0, 0, 0, 0, XID]);
    assert_eq!(
        violation(buf, Side::Responder),
        Violation::MsgCallWithPositionZeroChunk
    );
}

#[test]
fn rdma_nomsg_reply_needs_a_reply_chunk_with_data() {
    let none = words(&[XID, 1, 1, 1, 0, 0, 0]);
    assert_eq!(
        violation(none, Side::Requester),
        Violation::NoMsgReplyWithoutReply
    );
    let empty = words(&[XID, 1, 1, 1, 0, 0, 1, 1, 7, 0, 0, 0]);
    assert_eq!(
        violation(empty, Side::Requester),
        Violation::NoMsgReplyWithoutReply
    );
}

#[test]
fn rdma_msg_reply_may_return_its_reply_chunk_only_unused() {
    let unused = words(&[XID, 1, 1, 0, 0, 0, 1, 1, 7, 0, 0, 0, XID]);
    received(unused, Side::Requester).unwrap();
    let filled = words(&[XID, 1, 1, 0, 0, 0, 1, 1, 7, 4, 0, 0, XID]);
    assert_eq!(
        violation(filled, Side::Requester),
        Violation::MsgReplyWithFilledReplyChunk
    );
}

#[test]
fn a_reply_with_a_read_list_is_refused() {
    let buf = words(&[XID, 1, 1, 0, 1, 4, 7, 8, 0, 0, 0, 0, 0, XID]);
    let e = refused(buf, Side::Requester);
    assert_eq!(
        e.kind,
        HeaderErrorKind::Violation(Violation::ReadListInReply)
    );
    assert_eq!(
        e.action(),
        ErrorAction::Discard,
        "a requester never answers"
    );
}

#[test]
fn the_rpc_message_must_follow_rdma_msg_with_the_same_xid() {
    let buf = words(&[XID, 1, 1, 0, 0, 0, 0]);
    assert_eq!(violation(buf, Side::Responder), Violation::NoRpcMessage);
    let buf = words(&[XID, 1, 1, 0, 0, 0, 0, 0xdead_beef]);
    assert_eq!(
        violation(buf, Side::Responder),
        Violation::XidMismatch {
            rpc_xid: 0xdead_beef
        }
    );
}

#[test]
fn nothing_may_follow_rdma_nomsg_or_rdma_error() {
    let nomsg = words(&[XID, 1, 1, 1, 1, 0, 7, 64, 0, 0, 0, 0, 0, XID]);
    let e = refused(nomsg, Side::Responder);
    assert!(matches!(
        e.kind,
        HeaderErrorKind::Xdr(d) if d.kind == DecodeErrorKind::TrailingBytes(4) && d.offset == 52
    ));
    let error = words(&[XID, 1, 1, 4, 2, 0]);
    assert!(matches!(
        refused(error, Side::Requester).kind,
        HeaderErrorKind::Xdr(d) if d.kind == DecodeErrorKind::TrailingBytes(4)
    ));
}

#[test]
fn segments_must_not_wrap_and_positions_must_be_aligned() {
    let wraps = words(&[
        XID,
        1,
        1,
        0,
        0,
        1,
        1,
        7,
        16,
        u32::MAX,
        0xffff_fff8,
        0,
        0,
        XID,
    ]);
    assert_eq!(
        violation(wraps, Side::Responder),
        Violation::SegmentWraps {
            offset: u64::MAX - 7,
            length: 16
        }
    );
    let odd = words(&[XID, 1, 1, 0, 1, 6, 7, 16, 0, 0, 0, 0, 0, XID]);
    assert_eq!(
        violation(odd, Side::Responder),
        Violation::PositionNotAligned { position: 6 }
    );
}

#[test]
fn a_malformed_value_follows_word_is_err_chunk() {
    let e = refused(words(&[XID, 1, 1, 0, 2]), Side::Responder);
    assert!(matches!(e.kind, HeaderErrorKind::Xdr(d) if d.kind == DecodeErrorKind::BadBool(2)));
    assert_eq!(e.action(), ErrorAction::Reply(RdmaError::Chunk));
}

// ------------------------------------------------------------------------------------------------
// Limits and hostile lengths
// ------------------------------------------------------------------------------------------------

/// An RDMA_MSG call whose Read list has `n` segments at position 4 of `len` bytes each.
fn call_with_reads(n: u32, len: u32) -> Bytes {
    let mut w = vec![XID, 1, 1, 0];
    for i in 0..n {
        w.extend([1, 4, i, len, 0, i * 4096]);
    }
    w.extend([0, 0, 0, XID]);
    words(&w)
}

#[test]
fn limits_bound_every_list() {
    let limits = Limits::default();
    // The default Read list: 32 segments in all, 16 per chunk.
    let e = refused(call_with_reads(33, 8), Side::Responder);
    assert!(matches!(
        e.kind,
        HeaderErrorKind::Xdr(d) if d.kind == DecodeErrorKind::TooLong { len: 33, max: 32 }
            && d.offset == 16 + 32 * 24 && d.what == "read list"
    ));
    assert_eq!(
        violation(call_with_reads(17, 8), Side::Responder),
        Violation::ReadChunkTooLong {
            position: 4,
            segments: 17,
            max: 16
        }
    );
    let e = refused(call_with_reads(17, 8), Side::Responder);
    assert!(e.to_string().ends_with("(the receiver's limits)"), "{e}");
    received(call_with_reads(16, 8), Side::Responder).unwrap();
    // 4 MiB of Read segments at most.
    assert_eq!(
        violation(call_with_reads(2, 3 << 20), Side::Responder),
        Violation::ReadListTooLarge {
            bytes: 6 << 20,
            max: limits.max_read_bytes
        }
    );
    // Nine empty Write chunks, one more than the default.
    let mut w = vec![XID, 1, 1, 0, 0];
    w.extend([1, 0].repeat(9));
    w.extend([0, 0, XID]);
    let e = refused(words(&w), Side::Responder);
    assert!(matches!(
        e.kind,
        HeaderErrorKind::Xdr(d) if d.kind == DecodeErrorKind::TooLong { len: 9, max: 8 }
            && d.what == "write list"
    ));
    // A Reply chunk of 17 segments.
    let mut w = vec![XID, 1, 1, 0, 0, 0, 1, 17];
    w.extend([7, 0, 0, 0].repeat(17));
    w.push(XID);
    let e = refused(words(&w), Side::Responder);
    assert!(matches!(
        e.kind,
        HeaderErrorKind::Xdr(d) if d.kind == DecodeErrorKind::TooLong { len: 17, max: 16 }
            && d.offset == 28
    ));
}

#[test]
fn a_huge_segment_count_is_refused_before_allocating() {
    // Even with no limit of its own, a count must fit in the bytes left.
    let open = Limits {
        max_read_segments: u32::MAX,
        max_read_bytes: u64::MAX,
        max_write_chunks: u32::MAX,
        max_chunk_segments: u32::MAX,
    };
    for buf in [
        words(&[XID, 1, 1, 0, 0, 1, u32::MAX, 0, 0, XID]),
        words(&[XID, 1, 1, 0, 0, 0, 1, u32::MAX, XID]),
    ] {
        let e = RdmaHeader::decode_received(buf, Side::Responder, &open).unwrap_err();
        assert!(matches!(
            e.kind,
            HeaderErrorKind::Xdr(d) if matches!(
                d.kind, DecodeErrorKind::LengthBeyondInput { len: u32::MAX, .. })
        ));
        assert_eq!(e.action(), ErrorAction::Reply(RdmaError::Chunk));
    }
}

#[test]
fn every_traced_length_set_to_all_ones_fails_there() {
    let header = RdmaHeader {
        xid: XID,
        credit: 3,
        body: RdmaBody::Msg(ChunkLists {
            reads: vec![],
            writes: vec![
                WriteChunk {
                    segments: vec![seg(1, 2, 3)],
                },
                WriteChunk::default(),
            ],
            reply: Some(WriteChunk {
                segments: vec![seg(4, 5, 6), seg(7, 8, 9)],
            }),
        }),
    };
    let buf = xdr::to_bytes(&header);
    let mut d = Decoder::new(buf.clone()).with_length_trace();
    RdmaHeader::decode(&mut d).unwrap();
    let offsets = d.length_offsets().to_vec();
    assert_eq!(offsets.len(), 3);
    for off in offsets {
        let mut bad = buf.to_vec();
        bad[off..off + 4].copy_from_slice(&[0xff; 4]);
        let e = xdr::from_bytes::<RdmaHeader>(Bytes::from(bad)).unwrap_err();
        assert_eq!(e.offset, off);
        assert!(matches!(
            e.kind,
            DecodeErrorKind::TooLong {
                len: u32::MAX,
                max: 16
            }
        ));
    }
}

// ------------------------------------------------------------------------------------------------
// Properties
// ------------------------------------------------------------------------------------------------

/// A segment that does not wrap, of at most 1 MiB.
fn good_segment() -> impl Strategy<Value = RdmaSegment> {
    (any::<u32>(), 0..=1u32 << 20, 0..=u64::MAX / 2).prop_map(|(h, l, o)| seg(h, l, o))
}

fn good_chunk(segs: std::ops::RangeInclusive<usize>) -> impl Strategy<Value = WriteChunk> {
    proptest::collection::vec(good_segment(), segs).prop_map(|segments| WriteChunk { segments })
}

/// A call a responder accepts: an RDMA_MSG with its RPC message, or an RDMA_NOMSG with a
/// Position-Zero Read chunk.
fn good_call() -> impl Strategy<Value = (RdmaHeader, Bytes)> {
    let reads = proptest::collection::vec((1..=1024u32, good_segment()), 0..=3);
    (
        any::<u32>(),
        any::<u32>(),
        any::<bool>(),
        reads,
        good_segment(),
        proptest::collection::vec(good_chunk(0..=3), 0..=3),
        proptest::option::of(good_chunk(0..=3)),
        proptest::collection::vec(any::<u8>(), 0..=32),
    )
        .prop_map(|(xid, credit, nomsg, reads, pz, writes, reply, rest)| {
            let mut reads: Vec<_> = reads
                .into_iter()
                .map(|(p, target)| ReadSegment {
                    position: 4 * p,
                    target,
                })
                .collect();
            let mut rpc = Vec::new();
            if nomsg {
                reads.insert(
                    0,
                    ReadSegment {
                        position: 0,
                        target: pz,
                    },
                );
            } else {
                rpc.extend(xid.to_be_bytes());
                rpc.extend(rest);
            }
            let lists = ChunkLists {
                reads,
                writes,
                reply,
            };
            let body = if nomsg {
                RdmaBody::NoMsg(lists)
            } else {
                RdmaBody::Msg(lists)
            };
            (RdmaHeader { xid, credit, body }, Bytes::from(rpc))
        })
}

/// A reply a requester accepts.
fn good_reply() -> impl Strategy<Value = (RdmaHeader, Bytes)> {
    (
        any::<u32>(),
        any::<u32>(),
        0..3u8,
        proptest::collection::vec(good_chunk(0..=3), 0..=3),
        good_chunk(1..=3),
        any::<RdmaError>(),
        proptest::collection::vec(any::<u8>(), 0..=32),
    )
        .prop_map(|(xid, credit, kind, writes, mut reply, err, rest)| {
            let (body, rpc) = match kind {
                0 => {
                    // An inline reply returns its Reply chunk unused, if at all.
                    for s in &mut reply.segments {
                        s.length = 0;
                    }
                    let reply = (credit % 2 == 0).then_some(reply);
                    let mut rpc = xid.to_be_bytes().to_vec();
                    rpc.extend(rest);
                    let lists = ChunkLists {
                        reads: vec![],
                        writes,
                        reply,
                    };
                    (RdmaBody::Msg(lists), rpc)
                }
                1 => {
                    reply.segments[0].length = reply.segments[0].length.max(1);
                    let lists = ChunkLists {
                        reads: vec![],
                        writes,
                        reply: Some(reply),
                    };
                    (RdmaBody::NoMsg(lists), vec![])
                }
                _ => (RdmaBody::Error(err), vec![]),
            };
            (RdmaHeader { xid, credit, body }, Bytes::from(rpc))
        })
}

fn check_received(header: &RdmaHeader, rpc: &Bytes, side: Side) -> Result<(), TestCaseError> {
    let pieces = header.encode_with_message([rpc.clone()]);
    let buf: Bytes = pieces.concat().into();
    let hlen = buf.len() - rpc.len();
    let r = received(buf.clone(), side).map_err(|e| TestCaseError::fail(e.to_string()))?;
    prop_assert_eq!(&r.header, header);
    prop_assert_eq!(r.header_len, hlen);
    prop_assert_eq!(&r.rpc_message, rpc);
    // Every prefix that cuts the header or the RPC message's XID fails.
    let must_fail = if rpc.is_empty() { buf.len() } else { hlen + 4 };
    for n in 0..must_fail {
        prop_assert!(
            received(buf.slice(..n), side).is_err(),
            "prefix of {} bytes decoded",
            n
        );
    }
    Ok(())
}

proptest! {
    #[test]
    fn every_good_call_round_trips_and_its_prefixes_fail((header, rpc) in good_call()) {
        check_received(&header, &rpc, Side::Responder)?;
    }

    #[test]
    fn every_good_reply_round_trips_and_its_prefixes_fail((header, rpc) in good_reply()) {
        check_received(&header, &rpc, Side::Requester)?;
    }

    #[test]
    fn arbitrary_bytes_decode_canonically_or_fail_cleanly(
        w in proptest::collection::vec(prop_oneof![0..6u32, any::<u32>()], 0..40),
        responder: bool,
    ) {
        let mut w = w;
        if w.len() > 1 {
            w[1] = 1;
        }
        let buf = words(&w);
        let side = if responder { Side::Responder } else { Side::Requester };
        match received(buf.clone(), side) {
            Ok(r) => prop_assert_eq!(xdr::to_bytes(&r.header), buf.slice(..r.header_len)),
            Err(e) => {
                prop_assert!(!e.to_string().is_empty());
                if let Some(reply) = e.reply(1) {
                    let r = received(reply, Side::Requester);
                    prop_assert!(r.is_ok() || matches!(e.kind, HeaderErrorKind::Version(_)));
                }
            }
        }
    }
}

#[test]
fn a_returned_chunk_must_be_an_offered_one() {
    let offered = ChunkLists {
        reads: vec![],
        writes: vec![WriteChunk {
            segments: vec![seg(1, 4096, 0x1000), seg(2, 4096, 0x2000)],
        }],
        reply: Some(WriteChunk {
            segments: vec![seg(3, 1024, 0)],
        }),
    };
    let mut got = offered.clone();
    got.writes[0].segments[0].length = 100;
    got.writes[0].segments.truncate(1);
    got.reply = None;
    got.check_reply_against(&offered).unwrap();
    let mut longer = offered.clone();
    longer.writes[0].segments[1].length = 4097;
    assert_eq!(
        longer.check_reply_against(&offered),
        Err(Violation::ReplyChunkNotOffered)
    );
    let mut moved = offered.clone();
    moved.reply.as_mut().unwrap().segments[0].offset = 8;
    assert!(moved.check_reply_against(&offered).is_err());
    let mut extra = offered.clone();
    extra.writes.push(WriteChunk::default());
    assert!(extra.check_reply_against(&offered).is_err());
    let no_reply = ChunkLists {
        reply: None,
        ..offered.clone()
    };
    assert!(offered.check_reply_against(&no_reply).is_err());
}

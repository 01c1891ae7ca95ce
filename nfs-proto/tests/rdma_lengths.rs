//! Hostile lengths in RPC-over-RDMA transport headers: a segment count of 0xFFFFFFFF in every
//! counted position, and value-follows words that promise more list entries than the buffer
//! holds, must be refused cleanly (an `ERR_CHUNK` for a responder), and no header decode may
//! reserve more memory than its input could justify, even with no limits of its own.

#[path = "support/max_alloc.rs"]
mod max_alloc;

use bytes::Bytes;
use max_alloc::{largest, reset_largest};
use nfs_proto::rdma::{
    ErrorAction, HeaderErrorKind, Limits, RdmaError, RdmaHeader, Side, FIXED_HEADER_LEN,
};
use nfs_proto::xdr::{self, DecodeErrorKind, Decoder, Xdr};
use proptest::strategy::{Strategy, ValueTree};
use proptest::test_runner::{Config, TestRunner};

/// Limits that bound nothing: only the bytes left stop a count.
const OPEN: Limits = Limits {
    max_read_segments: u32::MAX,
    max_read_bytes: u64::MAX,
    max_write_chunks: u32::MAX,
    max_chunk_segments: u32::MAX,
};

/// What decoding a header of `len` bytes may take: each list entry is at least 16 bytes on the
/// wire and at most 32 in memory, and vectors at most double as they grow.
fn allocation_budget(len: usize) -> usize {
    4 * len + 1024
}

fn generated(cases: u32) -> Vec<Bytes> {
    let mut runner = TestRunner::new(Config::default());
    let strategy = proptest::arbitrary::any::<RdmaHeader>();
    (0..cases)
        .map(|_| xdr::to_bytes(&strategy.new_tree(&mut runner).unwrap().current()))
        .collect()
}

/// Decodes `buf` as both sides would, with no limits, and checks the allocation budget.
fn decode_within_budget(buf: &Bytes) -> [Result<(), HeaderErrorKind>; 2] {
    [Side::Responder, Side::Requester].map(|side| {
        reset_largest();
        let r = RdmaHeader::decode_received(buf.clone(), side, &OPEN);
        let largest = largest();
        assert!(
            largest <= allocation_budget(buf.len()),
            "a {largest}-byte allocation for a {}-byte header",
            buf.len()
        );
        r.map(|_| ()).map_err(|e| e.kind)
    })
}

#[test]
fn every_segment_count_set_to_all_ones_is_refused_there() {
    let mut positions = 0;
    for buf in generated(300) {
        let mut d = Decoder::new(buf.clone()).with_length_trace();
        RdmaHeader::decode(&mut d).unwrap();
        for &off in d.length_offsets() {
            positions += 1;
            let mut bad = buf.to_vec();
            bad[off..off + 4].copy_from_slice(&[0xff; 4]);
            let bad = Bytes::from(bad);
            for r in decode_within_budget(&bad) {
                // The count is refused at its own offset, unless a side's rule refused the
                // header before the lists were read (an RDMA_ERROR to a responder).
                match r {
                    Err(HeaderErrorKind::Xdr(e)) => {
                        assert_eq!(e.offset, off);
                        assert!(
                            matches!(
                                e.kind,
                                DecodeErrorKind::LengthBeyondInput { len: u32::MAX, .. }
                            ),
                            "{e}"
                        );
                    }
                    Err(HeaderErrorKind::Proc(_)) => {}
                    other => panic!("count at {off} not refused: {other:?}"),
                }
            }
            let e =
                RdmaHeader::decode_received(bad, Side::Responder, &Limits::default()).unwrap_err();
            if !matches!(e.kind, HeaderErrorKind::Proc(_)) {
                assert_eq!(e.action(), ErrorAction::Reply(RdmaError::Chunk));
            }
        }
    }
    assert!(positions > 300, "only {positions} counts were exercised");
}

#[test]
fn lists_that_promise_more_than_the_buffer_holds_are_refused() {
    // Every value-follows word of every list turned into "another entry follows", and every
    // buffer cut short: a decode ends with an error, never reading past the input.
    for buf in generated(200) {
        for at in (FIXED_HEADER_LEN..buf.len()).step_by(4) {
            if buf[at..at + 4] == [0, 0, 0, 0] {
                let mut bad = buf.to_vec();
                bad[at + 3] = 1;
                let _ = decode_within_budget(&Bytes::from(bad));
            }
        }
        for n in 0..buf.len() {
            for r in decode_within_budget(&buf.slice(..n)) {
                assert!(r.is_err(), "a {n}-byte prefix decoded");
            }
        }
    }
}

#[test]
fn a_buffer_full_of_read_segments_reserves_only_what_it_holds() {
    // 64 KiB of Read segments, more than any limit would let in: with no limits, the decoder
    // holds them all, reserving memory in proportion to the buffer.
    let mut w = vec![7u32, 1, 1, 1];
    let entries = 64 * 1024 / 24;
    for i in 0..entries {
        w.extend([1, 0, i, 16, 0, i * 16]);
    }
    w.extend([0, 0, 0]);
    let buf: Bytes = w
        .iter()
        .flat_map(|w| w.to_be_bytes())
        .collect::<Vec<u8>>()
        .into();
    reset_largest();
    let r = RdmaHeader::decode_received(buf.clone(), Side::Responder, &OPEN).unwrap();
    assert!(largest() <= allocation_budget(buf.len()));
    assert_eq!(r.header.chunks().unwrap().reads.len(), entries as usize);
    // The default limits refuse it at the 33rd segment.
    let e = RdmaHeader::decode_received(buf, Side::Responder, &Limits::default()).unwrap_err();
    assert!(matches!(
        e.kind,
        HeaderErrorKind::Xdr(d) if d.kind == DecodeErrorKind::TooLong { len: 33, max: 32 }
    ));
}

//! Hostile lengths: a length of 0xFFFFFFFF in every variable-length position of real and
//! generated messages must give a clean decode error at that very position, and no decode may
//! reserve more memory than its input could justify.

#[path = "support/max_alloc.rs"]
mod max_alloc;
#[path = "support/pcap.rs"]
mod pcap;

use std::collections::HashMap;
use std::path::PathBuf;

use bytes::Bytes;
use max_alloc::{largest, reset_largest};
use nfs_proto::nfs4::*;
use nfs_proto::rpc::{AcceptStat, MsgBody, ReplyBody, RpcMsg};
use nfs_proto::xdr::{self, DecodeError, DecodeErrorKind, Decoder, Xdr};
use proptest::strategy::{Strategy, ValueTree};
use proptest::test_runner::{Config, TestRunner};

/// What the typed representation may take for an input of `len` bytes: each element of the
/// widest list (an operation, about 200 bytes in memory) is at least 4 bytes on the wire.
fn allocation_budget(len: usize) -> usize {
    64 * len + 64 * 1024
}

/// What follows the RPC header of a message.
#[derive(Clone, Copy, Debug)]
enum Body {
    None,
    Compound,
    CompoundRes,
    CbCompound,
    CbCompoundRes,
}

/// Decodes a whole RPC record the way a peer would, recording every length prefix's offset.
fn decode(record: Bytes, body: Body) -> (Result<(), DecodeError>, Vec<usize>) {
    let mut d = Decoder::new(record).with_length_trace();
    let r = (|| {
        RpcMsg::decode(&mut d)?;
        match body {
            Body::None => {}
            Body::Compound => {
                Compound4Args::decode(&mut d)?;
            }
            Body::CompoundRes => {
                Compound4Res::decode(&mut d)?;
            }
            Body::CbCompound => {
                CbCompoundArgs::decode(&mut d)?;
            }
            Body::CbCompoundRes => {
                CbCompoundRes::decode(&mut d)?;
            }
        }
        d.finish()
    })();
    (r, d.length_offsets().to_vec())
}

/// Puts 0xFFFFFFFF at each length offset in turn and checks the decoder refuses it there,
/// within the allocation budget. Returns how many positions were checked.
fn corrupt_every_length(record: &Bytes, body: Body, what: &str) -> usize {
    let (ok, offsets) = decode(record.clone(), body);
    ok.unwrap_or_else(|e| panic!("{what}: the unmodified message must decode: {e}"));
    for &off in &offsets {
        let mut bad = record.to_vec();
        bad[off..off + 4].copy_from_slice(&[0xff; 4]);
        reset_largest();
        let (r, _) = decode(Bytes::from(bad), body);
        let largest = largest();
        let e = r.expect_err(what);
        assert_eq!(e.offset, off, "{what}: error at the corrupted length: {e}");
        assert!(
            matches!(
                e.kind,
                DecodeErrorKind::TooLong { len: u32::MAX, .. }
                    | DecodeErrorKind::LengthBeyondInput { len: u32::MAX, .. }
            ),
            "{what}: {e}"
        );
        assert!(!e.to_string().is_empty());
        assert!(
            largest <= allocation_budget(record.len()),
            "{what}: a {largest}-byte allocation for a {}-byte input",
            record.len()
        );
    }
    offsets.len()
}

#[test]
fn every_length_in_the_captures_is_checked() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data");
    let mut positions = 0;
    for file in [
        "linux-6.1-knfsd-v41-v42.rec",
        "linux-6.1-knfsd-pnfs-block.rec",
    ] {
        let records = pcap::read_records_file(dir.join(file)).unwrap();
        let mut procs: HashMap<(u32, u32), (u32, u32)> = HashMap::new();
        for (i, r) in records.iter().enumerate() {
            let rec = Bytes::from(r.data.clone());
            let (msg, _) = RpcMsg::decode_header(rec.clone()).unwrap();
            let body = match &msg.body {
                MsgBody::Call(c) => {
                    procs.insert((r.conn, msg.xid), (c.prog, c.proc_));
                    match (c.prog == NFS4_PROGRAM, c.proc_) {
                        (_, 0) => Body::None,
                        (true, _) => Body::Compound,
                        (false, _) => Body::CbCompound,
                    }
                }
                MsgBody::Reply(ReplyBody::Accepted(a)) if matches!(a.stat, AcceptStat::Success) => {
                    match procs[&(r.conn, msg.xid)] {
                        (_, 0) => Body::None,
                        (NFS4_PROGRAM, _) => Body::CompoundRes,
                        _ => Body::CbCompoundRes,
                    }
                }
                MsgBody::Reply(_) => Body::None,
            };
            positions += corrupt_every_length(&rec, body, &format!("{file} record {i}"));
        }
    }
    assert!(
        positions > 5000,
        "only {positions} length positions were exercised"
    );
}

fn generated<T: Xdr + proptest::arbitrary::Arbitrary + std::fmt::Debug>(body: Body, cases: u32) {
    let mut runner = TestRunner::new(Config {
        cases,
        ..Config::default()
    });
    let call = RpcMsg::call(
        7,
        NFS4_PROGRAM,
        NFS_V4,
        NFSPROC4_COMPOUND,
        Default::default(),
        Default::default(),
    );
    let reply = RpcMsg::reply_success(7, Default::default());
    let header = match body {
        Body::Compound | Body::CbCompound => call,
        _ => reply,
    };
    let strategy = proptest::arbitrary::any::<T>();
    for _ in 0..cases {
        let value = strategy.new_tree(&mut runner).unwrap().current();
        let mut e = xdr::Encoder::new();
        header.encode_with(&mut e, &value);
        let rec = e.into_bytes();
        corrupt_every_length(&rec, body, &format!("{value:?}"));
    }
}

#[test]
fn every_length_in_generated_messages_is_checked() {
    generated::<Compound4Args>(Body::Compound, 200);
    generated::<Compound4Res>(Body::CompoundRes, 200);
    generated::<CbCompoundArgs>(Body::CbCompound, 100);
    generated::<CbCompoundRes>(Body::CbCompoundRes, 100);
}

#[test]
fn a_huge_operation_count_reserves_nothing() {
    // tag "", minorversion 1, 0xFFFFFFFF operations, and nothing else.
    let rec = Bytes::from_static(&[0, 0, 0, 0, 0, 0, 0, 1, 0xff, 0xff, 0xff, 0xff]);
    reset_largest();
    let e = xdr::from_bytes::<Compound4Args>(rec).unwrap_err();
    assert_eq!(e.offset, 8);
    assert!(largest() < 4096);
}

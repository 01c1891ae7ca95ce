//! Golden tests from real traffic: every RPC record of the stock Linux client (6.1) talking
//! NFSv4.1 and 4.2 to knfsd (`../shared/captures/`, extracted into `tests/data/*.rec` by
//! `examples/extract_records.rs`) must decode without error and re-encode to the same bytes,
//! down to the typed attributes inside.

#[path = "support/pcap.rs"]
mod pcap;

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;

use bytes::Bytes;
use nfs_proto::nfs4::attr::FileAttrs;
use nfs_proto::nfs4::*;
use nfs_proto::rpc::{AcceptStat, MsgBody, ReplyBody, RpcMsg};
use nfs_proto::xdr::{self, Encoder, Xdr};

fn data(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name)
}

/// Decodes `body` as a `T` that must take all of it, and checks the encoding is identical.
fn round_trip<T: Xdr + std::fmt::Debug>(body: &Bytes, what: &str) -> T {
    let v = xdr::from_bytes::<T>(body.clone())
        .unwrap_or_else(|e| panic!("{what}: {e}\n{:02x?}", &body[..body.len().min(256)]));
    let again = xdr::to_bytes(&v);
    assert!(
        again == *body,
        "{what}: re-encoding differs\n decoded: {v:?}"
    );
    v
}

/// Every `fattr4` must decode into typed attributes and re-encode to the same bytes.
fn check_attrs(f: &Fattr4, what: &str, stats: &mut Stats) {
    let typed = FileAttrs::from_fattr(f).unwrap_or_else(|e| panic!("{what}: attributes: {e:?}"));
    assert_eq!(
        &typed.to_fattr_exact(&f.attrmask),
        f,
        "{what}: attributes re-encode"
    );
    stats.fattrs += 1;
}

#[derive(Default, Debug)]
struct Stats {
    calls: usize,
    replies: usize,
    compounds: usize,
    cb_compounds: usize,
    fattrs: usize,
    ops: BTreeMap<String, usize>,
}

fn check_call_attrs(args: &Compound4Args, stats: &mut Stats) {
    for op in &args.argarray {
        let what = format!("{:?}", op.opnum());
        match op {
            NfsArgop4::SetAttr(a) => check_attrs(&a.obj_attributes, &what, stats),
            NfsArgop4::Verify(a) => check_attrs(&a.obj_attributes, &what, stats),
            NfsArgop4::NVerify(a) => check_attrs(&a.obj_attributes, &what, stats),
            NfsArgop4::Create(a) => check_attrs(&a.createattrs, &what, stats),
            NfsArgop4::Open(a) => match &a.openhow {
                Openflag4::Create(Createhow4::Unchecked(f) | Createhow4::Guarded(f)) => {
                    check_attrs(f, &what, stats)
                }
                Openflag4::Create(Createhow4::Exclusive41(c)) => {
                    check_attrs(&c.cva_attrs, &what, stats)
                }
                _ => {}
            },
            _ => {}
        }
    }
}

fn check_reply_attrs(res: &Compound4Res, stats: &mut Stats) {
    for op in &res.resarray {
        let what = format!("{:?} reply", op.opnum());
        match op {
            NfsResop4::GetAttr(GetAttrRes::Ok(r)) => check_attrs(&r.obj_attributes, &what, stats),
            NfsResop4::ReadDir(ReadDirRes::Ok(r)) => {
                for e in &r.reply.entries {
                    check_attrs(&e.attrs, &what, stats);
                }
            }
            _ => {}
        }
    }
}

fn run_capture(file: &str) -> Stats {
    let records = pcap::read_records_file(data(file)).expect("read records");
    assert!(!records.is_empty());
    let mut stats = Stats::default();
    // (connection, xid, call sent by the client) -> (program, procedure)
    let mut calls: HashMap<(u32, u32, bool), (u32, u32)> = HashMap::new();
    for (i, r) in records.iter().enumerate() {
        let bytes = Bytes::from(r.data.clone());
        let what = format!("{file} record {i}");
        let (msg, body) =
            RpcMsg::decode_header(bytes.clone()).unwrap_or_else(|e| panic!("{what}: {e}"));
        let mut e = Encoder::new();
        msg.encode(&mut e);
        e.put_pieces([body.clone()]);
        assert_eq!(e.into_bytes(), bytes, "{what}: RPC header re-encodes");

        match &msg.body {
            MsgBody::Call(c) => {
                stats.calls += 1;
                calls.insert((r.conn, msg.xid, r.from_client), (c.prog, c.proc_));
                let is_nfs = c.prog == NFS4_PROGRAM && r.from_client;
                match (is_nfs, c.proc_) {
                    (true, NFSPROC4_COMPOUND) => {
                        let args: Compound4Args = round_trip(&body, &what);
                        for op in &args.argarray {
                            *stats.ops.entry(format!("{:?}", op.opnum())).or_default() += 1;
                        }
                        check_call_attrs(&args, &mut stats);
                        stats.compounds += 1;
                    }
                    (false, CB_COMPOUND) => {
                        round_trip::<CbCompoundArgs>(&body, &what);
                        stats.cb_compounds += 1;
                    }
                    (_, 0) => assert!(body.is_empty(), "{what}: NULL has no arguments"),
                    (_, p) => panic!("{what}: unexpected procedure {p} of program {}", c.prog),
                }
            }
            MsgBody::Reply(reply) => {
                stats.replies += 1;
                let &(prog, proc_) = calls
                    .get(&(r.conn, msg.xid, !r.from_client))
                    .unwrap_or_else(|| panic!("{what}: reply to an unseen call"));
                let ReplyBody::Accepted(acc) = reply else {
                    assert!(body.is_empty(), "{what}: a rejected reply has no body");
                    continue;
                };
                if !matches!(acc.stat, AcceptStat::Success) {
                    continue;
                }
                match (prog == NFS4_PROGRAM, proc_) {
                    (true, NFSPROC4_COMPOUND) => {
                        let res: Compound4Res = round_trip(&body, &what);
                        check_reply_attrs(&res, &mut stats);
                    }
                    (false, CB_COMPOUND) => {
                        round_trip::<CbCompoundRes>(&body, &what);
                    }
                    (_, 0) => assert!(body.is_empty(), "{what}: NULL has no results"),
                    (_, p) => panic!("{what}: unexpected procedure {p}"),
                }
            }
        }
    }
    assert_eq!(
        stats.calls, stats.replies,
        "{file}: every call has its reply"
    );
    eprintln!("{file}: {stats:#?}");
    stats
}

#[test]
fn knfsd_v41_v42_capture_round_trips() {
    let stats = run_capture("linux-6.1-knfsd-v41-v42.rec");
    assert_eq!(stats.calls, 566);
    assert!(
        stats.fattrs > 100,
        "typed attributes were exercised: {}",
        stats.fattrs
    );
    // The session life cycle and the operations the capture holds must all be there, or this
    // test would be checking less than it claims. (This capture has no READ, COMMIT or
    // READLINK calls.)
    for op in [
        "OP_EXCHANGE_ID",
        "OP_CREATE_SESSION",
        "OP_RECLAIM_COMPLETE",
        "OP_SEQUENCE",
        "OP_PUTROOTFH",
        "OP_LOOKUP",
        "OP_GETATTR",
        "OP_OPEN",
        "OP_WRITE",
        "OP_CLOSE",
        "OP_LINK",
        "OP_CREATE",
        "OP_RENAME",
        "OP_SETATTR",
        "OP_READDIR",
        "OP_LOCK",
        "OP_LOCKU",
        "OP_REMOVE",
        "OP_DESTROY_SESSION",
        "OP_DESTROY_CLIENTID",
    ] {
        assert!(
            stats.ops.contains_key(op),
            "{op} missing from the capture's calls"
        );
    }
}

#[test]
fn knfsd_pnfs_block_capture_round_trips() {
    let stats = run_capture("linux-6.1-knfsd-pnfs-block.rec");
    assert_eq!(stats.calls, 35);
    for op in ["OP_LAYOUTGET", "OP_GETDEVICEINFO", "OP_LAYOUTCOMMIT"] {
        assert!(
            stats.ops.contains_key(op),
            "{op} missing from the capture's calls"
        );
    }
}

//! A third-party check of our encoder: a realistic NFSv4.1/4.2 conversation (every forward
//! operation, every callback operation, NULL, CB_NULL and RPC error replies; see
//! `support/samples.rs`) is encoded with our types, decoded back and compared, written to a
//! pcap, and dissected by Wireshark's `tshark`, which must find nothing malformed, raise no
//! error-level expert info, list exactly our operations for every message and leave no byte
//! undissected, except where Wireshark itself is known to stop short ([`wireshark_gap`]).
//!
//! When `tshark` is not installed the Wireshark part is skipped with a note, unless
//! `PNFS_REQUIRE_TSHARK=1`, which makes it a failure. The pcap is left in
//! `target/tmp/tshark/nfs-samples.pcap` for inspection (`tshark -r ... -V`).
//!
//! Findings with tshark 4.0.17 (Debian 12):
//! * No malformed packet and no error-level expert info anywhere; every operation (3..75,
//!   ILLEGAL) and callback (3..15, CB_ILLEGAL) is known by name and listed as we sent it.
//! * Where Wireshark stops dissecting early, the bytes were checked against the RFC XDR and our
//!   encoding is right; see [`wireshark_gap`].
//! * Warnings only (not failures): Wireshark has no value dissector for ten attributes (see
//!   `NO_WIRESHARK_VALUE_DISSECTOR` in the samples; after one of them it skips the rest of the
//!   attribute list, so they get a GETATTR of their own), and it flags any stateid in a CLOSE
//!   reply as "deprecated" (RFC 7530 section 16.2.5) although the sample sends the special
//!   invalid stateid of RFC 8881 section 8.2.3 (all-ones seqid, zero other).

#[path = "support/pcap.rs"]
mod pcap;
#[path = "support/samples.rs"]
mod samples;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::process::Command;

use bytes::Bytes;
use nfs_proto::nfs4::{
    CbCompoundArgs, CbCompoundRes, Compound4Args, Compound4Res, NfsArgop4, NfsCbArgop4,
    NfsCbOpnum4, NfsOpnum4, COMPOUND_MAX_OPS,
};
use nfs_proto::rpc::{AcceptStat, AcceptedReply, MsgBody, ReplyBody, RpcMsg};
use nfs_proto::xdr::{from_bytes, Decoder, Encoder, Xdr};
use samples::{Body, Sample, NFS_CB_PROGRAM, NFS_CB_VERSION, NFS_PROGRAM, NFS_V4};

// ------------------------------------------------------------------------------------------------
// Encoding and decoding with our code
// ------------------------------------------------------------------------------------------------

/// The record of one sample: the RPC header and the body through `RpcMsg::encode_with`, the
/// encoder's pieces (payloads stay separate pieces) concatenated.
fn encode(s: &Sample) -> Vec<u8> {
    let mut enc = Encoder::new();
    match &s.body {
        Body::Void => s.header.encode_with(&mut enc, &()),
        Body::Compound(a) => s.header.encode_with(&mut enc, a),
        Body::CompoundRes(r) => s.header.encode_with(&mut enc, r),
        Body::CbCompound(a) => s.header.encode_with(&mut enc, a),
        Body::CbCompoundRes(r) => s.header.encode_with(&mut enc, r),
    }
    let len = enc.len();
    let pieces = enc.into_pieces();
    let record: Vec<u8> = pieces.iter().flat_map(|p| p.iter().copied()).collect();
    assert_eq!(record.len(), len, "{}: encoder length", s.what);
    assert_eq!(len % 4, 0, "{}: record not 4-byte aligned", s.what);
    record
}

/// What a call asked for, to know how to decode its reply.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Procedure {
    /// NULL or CB_NULL, or a program/version we do not serve: no body either way.
    Void,
    Compound,
    CbCompound,
}

fn procedure(prog: u32, vers: u32, proc_: u32) -> Procedure {
    match (prog, vers, proc_) {
        (NFS_PROGRAM, NFS_V4, 1) => Procedure::Compound,
        (NFS_CB_PROGRAM, NFS_CB_VERSION, 1) => Procedure::CbCompound,
        _ => Procedure::Void,
    }
}

fn decode_all<T: Xdr>(b: Bytes, what: &str) -> T {
    from_bytes::<T>(b).unwrap_or_else(|e| panic!("{what}: our decoder: {e}"))
}

/// Decodes a record with our decoders, the way a server (calls) or client (replies) would.
fn decode(record: &[u8], calls: &mut HashMap<u32, Procedure>, what: &str) -> (RpcMsg, Body) {
    let (msg, rest) = RpcMsg::decode_header(Bytes::copy_from_slice(record))
        .unwrap_or_else(|e| panic!("{what}: RPC header: {e}"));
    let kind = match &msg.body {
        MsgBody::Call(c) => {
            let p = procedure(c.prog, c.vers, c.proc_);
            assert!(calls.insert(msg.xid, p).is_none(), "{what}: xid reused");
            Some(p)
        }
        MsgBody::Reply(ReplyBody::Accepted(AcceptedReply {
            stat: AcceptStat::Success,
            ..
        })) => Some(
            *calls
                .get(&msg.xid)
                .unwrap_or_else(|| panic!("{what}: reply without call")),
        ),
        MsgBody::Reply(_) => None,
    };
    let is_call = msg.as_call().is_some();
    let body = match kind {
        Some(Procedure::Compound) if is_call => {
            // The server's path: partial decoding must find no failing operation.
            let mut dec = Decoder::new(rest.clone());
            let (args, err) = Compound4Args::decode_partial(&mut dec)
                .unwrap_or_else(|e| panic!("{what}: COMPOUND header: {e}"));
            assert_eq!(err, None, "{what}: COMPOUND argument decoding");
            dec.finish().unwrap();
            assert_eq!(decode_all::<Compound4Args>(rest, what), args);
            Body::Compound(args)
        }
        Some(Procedure::Compound) => {
            let mut dec = Decoder::new(rest);
            let res = Compound4Res::decode_bounded_ops(&mut dec, COMPOUND_MAX_OPS)
                .unwrap_or_else(|e| panic!("{what}: COMPOUND reply: {e}"));
            dec.finish().unwrap();
            Body::CompoundRes(res)
        }
        Some(Procedure::CbCompound) if is_call => {
            Body::CbCompound(decode_all::<CbCompoundArgs>(rest, what))
        }
        Some(Procedure::CbCompound) => Body::CbCompoundRes(decode_all::<CbCompoundRes>(rest, what)),
        Some(Procedure::Void) | None => {
            assert!(rest.is_empty(), "{what}: unexpected body");
            Body::Void
        }
    };
    (msg, body)
}

/// Encodes every sample, decodes it back and checks it is unchanged. Returns the records for
/// the pcap writer.
fn round_trip(samples: &[Sample]) -> Vec<(bool, Vec<u8>)> {
    let mut calls = HashMap::new();
    samples
        .iter()
        .map(|s| {
            let record = encode(s);
            let (header, body) = decode(&record, &mut calls, &s.what);
            assert_eq!(header, s.header, "{}: header round trip", s.what);
            assert_eq!(body, s.body, "{}: body round trip", s.what);
            (s.from_client, record)
        })
        .collect()
}

/// Every operation number of `ops` that appears in no call or no reply of `samples`.
fn missing(samples: &[Sample], ops: &[u32], of: impl Fn(&Sample) -> Vec<u32>) -> Vec<String> {
    let mut out = Vec::new();
    for (calls, side) in [(true, "call"), (false, "reply")] {
        let seen: BTreeSet<u32> = samples
            .iter()
            .filter(|s| s.is_call() == calls)
            .flat_map(&of)
            .collect();
        out.extend(
            ops.iter()
                .filter(|op| !seen.contains(op))
                .map(|op| format!("{op} in a {side}")),
        );
    }
    out
}

fn all_ops() -> Vec<u32> {
    NfsOpnum4::ALL.iter().map(|o| o.0).collect()
}

fn all_cb_ops() -> Vec<u32> {
    NfsCbOpnum4::ALL.iter().map(|o| o.0).collect()
}

#[test]
fn samples_round_trip_and_cover_every_operation() {
    let samples = samples::conversation();
    let records = round_trip(&samples);
    assert_eq!(records.len(), samples.len());

    // The op table (NfsArgop4) knows exactly the operations of NfsOpnum4, and the samples use
    // every one of them, and every callback, in a call and in a reply.
    for op in NfsOpnum4::ALL {
        let b = nfs_proto::xdr::to_bytes(&op.0);
        let decoded = NfsArgop4::decode(&mut Decoder::new(b));
        assert!(
            !matches!(decoded, Ok(NfsArgop4::Unknown(_))),
            "{op:?} not in the op table"
        );
    }
    for op in NfsCbOpnum4::ALL {
        let b = nfs_proto::xdr::to_bytes(&op.0);
        let decoded = NfsCbArgop4::decode(&mut Decoder::new(b));
        assert!(!matches!(decoded, Ok(NfsCbArgop4::Unknown(_))), "{op:?}");
    }
    let gaps = missing(&samples, &all_ops(), Sample::ops);
    assert!(gaps.is_empty(), "operations not covered: {gaps:?}");
    let gaps = missing(&samples, &all_cb_ops(), Sample::cb_ops);
    assert!(gaps.is_empty(), "callback operations not covered: {gaps:?}");

    // Callbacks go server -> client, their replies client -> server.
    for s in &samples {
        if let Some(call) = s.header.as_call() {
            assert_eq!(s.from_client, call.prog == NFS_PROGRAM, "{}", s.what);
        }
    }
}

// ------------------------------------------------------------------------------------------------
// tshark
// ------------------------------------------------------------------------------------------------

/// True when tshark runs. Without it the check is skipped with a note, or fails when
/// `PNFS_REQUIRE_TSHARK=1`.
fn have_tshark() -> bool {
    let ok = Command::new("tshark")
        .arg("-v")
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    if !ok {
        if std::env::var("PNFS_REQUIRE_TSHARK").as_deref() == Ok("1") {
            panic!(
                "PNFS_REQUIRE_TSHARK=1 but `tshark` could not be run: install Wireshark's \
                 tshark (e.g. `apt-get install tshark`) or unset PNFS_REQUIRE_TSHARK"
            );
        }
        eprintln!("note: tshark is not installed; skipping the Wireshark dissection check");
    }
    ok
}

/// Runs tshark with a private (empty) configuration directory, so that user preferences
/// cannot change the dissection, and (unless `args` is a `-G` report, which must come first)
/// the TCP/RPC reassembly preferences set explicitly.
fn tshark(config: &Path, args: &[&str]) -> String {
    let mut cmd = Command::new("tshark");
    cmd.env("WIRESHARK_CONFIG_DIR", config);
    if args.first() != Some(&"-G") {
        cmd.args(["-n", "-o", "tcp.desegment_tcp_streams:TRUE"])
            .args(["-o", "rpc.desegment_rpc_over_tcp:TRUE"])
            .args(["-o", "rpc.defragment_rpc_over_tcp:TRUE"]);
    }
    let out = cmd.args(args).output().expect("running tshark");
    assert!(
        out.status.success(),
        "tshark {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The values a field's value_string table names, from `tshark -G values`.
fn known_values(values: &str, field: &str) -> BTreeSet<u32> {
    values
        .lines()
        .filter_map(|l| {
            let cols: Vec<&str> = l.split('\t').collect();
            (cols.len() >= 4 && cols[0] == "V" && cols[1] == field)
                .then(|| cols[2].parse().ok())
                .flatten()
        })
        .collect()
}

/// xid of the control call with bytes after its last operation.
const CONTROL_TRAILING_XID: u32 = 0x0bad_0001;
/// xid of the control call cut short inside an operation.
const CONTROL_CUT_XID: u32 = 0x0bad_0002;

/// Where Wireshark 4.0.17 stops dissecting a message although our encoding follows the RFC
/// 8881 / RFC 7863 XDR: the index of the first such operation in the sample, and why. After
/// it, Wireshark shows the rest of the message as undissected "Data" (no error, no warning)
/// and lists no further operations. Each case was checked byte by byte against the XDR:
///
/// * SET_SSV (54), GET_DIR_DELEGATION (46) and WANT_DELEGATION (56), calls and replies, and
///   the CB_NOTIFY (6), CB_PUSH_DELEG (7), CB_RECALL_ANY (8), CB_RECALLABLE_OBJ_AVAIL (9),
///   CB_RECALL_SLOT (10), CB_WANTS_CANCELLED (12) and CB_NOTIFY_DEVICEID (14) calls: Wireshark
///   prints the operation's name and dissects nothing of it.
/// * OPEN reply with `OPEN_DELEGATE_NONE_EXT` and `WND4_CONTENTION` / `WND4_RESOURCE`: the
///   `open_none_delegation4` arms carry a bool (`ond_server_will_push_deleg` /
///   `ond_server_will_signal_avail`) that Wireshark does not read.
/// * LAYOUTGET reply `NFS4ERR_LAYOUTTRYLATER`: the `logr_will_signal_layout_avail` bool of
///   that arm is not read.
/// * GETDEVICEINFO reply `NFS4ERR_TOOSMALL`: the `gdir_mincount` of that arm is not read.
/// * WRITE_SAME call: Wireshark reads `app_data_block4` with a pre-RFC layout (after
///   `adb_offset` it shows a "Content index" and shifted fields) and leaves the pattern
///   undissected; RFC 7863's `app_data_block4` is offset, block size, block count, relative
///   offset of the block number, block number (count4), relative offset of the pattern,
///   pattern, which is what we encode.
///
/// A newer Wireshark that dissects these fully passes the test too.
fn wireshark_gap(s: &Sample) -> Option<(usize, &'static str)> {
    use nfs_proto::nfs4::{
        GetDeviceInfoRes, LayoutGetRes, NfsCbArgop4 as Cb, NfsResop4 as R, OpenDelegation4,
        OpenNoneDelegation4, OpenRes,
    };
    let not_dissected = "Wireshark 4.0 has no dissector for this operation";
    match &s.body {
        Body::Compound(a) => a.argarray.iter().enumerate().find_map(|(i, op)| match op {
            NfsArgop4::SetSsv(_)
            | NfsArgop4::GetDirDelegation(_)
            | NfsArgop4::WantDelegation(_) => Some((i, not_dissected)),
            NfsArgop4::WriteSame(_) => Some((i, "Wireshark 4.0 reads a pre-RFC app_data_block4")),
            _ => None,
        }),
        Body::CompoundRes(r) => r
            .resarray
            .iter()
            .enumerate()
            .find_map(|(i, res)| match res {
                R::SetSsv(_) | R::GetDirDelegation(_) | R::WantDelegation(_) => {
                    Some((i, not_dissected))
                }
                R::Open(OpenRes::Ok(ok))
                    if matches!(
                        ok.delegation,
                        OpenDelegation4::NoneExt(
                            OpenNoneDelegation4::Contention { .. }
                                | OpenNoneDelegation4::Resource { .. }
                        )
                    ) =>
                {
                    Some((
                        i,
                        "Wireshark 4.0 does not read the open_none_delegation4 bool",
                    ))
                }
                R::LayoutGet(LayoutGetRes::TryLater { .. }) => Some((
                    i,
                    "Wireshark 4.0 does not read logr_will_signal_layout_avail",
                )),
                R::GetDeviceInfo(GetDeviceInfoRes::TooSmall { .. }) => {
                    Some((i, "Wireshark 4.0 does not read gdir_mincount"))
                }
                _ => None,
            }),
        Body::CbCompound(a) => a
            .argarray
            .iter()
            .position(|op| {
                matches!(
                    op,
                    Cb::Notify(_)
                        | Cb::PushDeleg(_)
                        | Cb::RecallAny(_)
                        | Cb::RecallableObjAvail(_)
                        | Cb::RecallSlot(_)
                        | Cb::WantsCancelled(_)
                        | Cb::NotifyDeviceid(_)
                )
            })
            .map(|i| (i, not_dissected)),
        _ => None,
    }
}

/// What `tshark -V` shows of one frame.
#[derive(Debug, Default)]
struct Dissected<'a> {
    /// `(xid, is_call)` of the RPC message the frame completes.
    rpc: Option<(u32, bool)>,
    /// Operation numbers listed in the NFS (or NFS CB) operation list, in order.
    ops: Vec<u32>,
    /// Bytes of the message Wireshark left undissected ("Data (N bytes)").
    leftover: Option<usize>,
    /// Lines flagging malformed packets or error-level expert info.
    problems: Vec<usize>,
    lines: Vec<&'a str>,
}

/// The number in the last parentheses of a line: `Opcode: SEQUENCE (53)` -> 53.
fn last_number(line: &str) -> Option<u32> {
    let open = line.rfind('(')?;
    let close = line[open..].find(')')? + open;
    line[open + 1..close].parse().ok()
}

/// `tshark -V` output split per frame and parsed: frame number -> what it shows.
fn dissect(verbose: &str) -> BTreeMap<u32, Dissected<'_>> {
    let mut out: BTreeMap<u32, Dissected> = BTreeMap::new();
    let mut frame = 0;
    let mut in_nfs = false;
    for line in verbose.lines() {
        if let Some(n) = line
            .strip_prefix("Frame ")
            .and_then(|r| r.split(':').next())
            .and_then(|n| n.parse().ok())
        {
            frame = n;
        }
        let d = out.entry(frame).or_default();
        if !line.starts_with(' ') {
            in_nfs = line.starts_with("Network File System");
        }
        if let Some(rest) = line.strip_prefix("Remote Procedure Call, Type:") {
            let call = rest.starts_with("Call");
            let xid = rest
                .split("XID:0x")
                .nth(1)
                .and_then(|x| u32::from_str_radix(x.trim(), 16).ok())
                .unwrap_or_else(|| panic!("frame {frame}: RPC line {line:?}"));
            assert!(d.rpc.is_none(), "frame {frame} ends several RPC messages");
            d.rpc = Some((xid, call));
        }
        if in_nfs {
            // Operations are listed at exactly 8 spaces; deeper "Opcode:" lines are operation
            // bitmaps (EXCHANGE_ID's spo_must_enforce, for instance).
            if let Some(op) = line.strip_prefix("        Opcode: ") {
                if !op.starts_with(' ') {
                    d.ops
                        .push(last_number(op).unwrap_or_else(|| panic!("{line:?}")));
                }
            }
        }
        // Bytes left over after the NFS dissection: a "Data (N bytes)" item under the NFS
        // tree or at the top level.
        if let Some(rest) = line.trim_start().strip_prefix("Data (") {
            if d.rpc.is_some() && line.len() - line.trim_start().len() <= 4 {
                d.leftover = rest.split(' ').next().and_then(|n| n.parse().ok());
            }
        }
        if is_problem(line) {
            d.problems.push(d.lines.len());
        }
        d.lines.push(line);
    }
    out
}

fn is_problem(line: &str) -> bool {
    line.contains("Malformed") || line.contains("Expert Info (Error")
}

/// The frame's dissection around each problem line (20 lines before and after).
fn excerpt(d: &Dissected) -> String {
    let mut text = String::new();
    let mut shown = 0;
    for &h in &d.problems {
        let from = h.saturating_sub(20).max(shown);
        let to = (h + 20).min(d.lines.len());
        if from > shown {
            text.push_str("   ...\n");
        }
        for l in &d.lines[from..to] {
            text.push_str(l);
            text.push('\n');
        }
        shown = to;
    }
    text
}

#[test]
fn tshark_dissects_every_message_cleanly() {
    if !have_tshark() {
        return;
    }
    let samples = samples::conversation();
    let records = round_trip(&samples);
    let dir: PathBuf = Path::new(env!("CARGO_TARGET_TMPDIR")).join("tshark");
    let config = dir.join("wireshark-config");
    std::fs::create_dir_all(&config).unwrap();
    // Two deliberately broken calls at the end show that the checks below can fail: one with
    // 8 bytes after its last operation (must be seen as undissected), one cut short inside an
    // operation (must be seen as malformed).
    let mut records = records;
    let control = |what: &str| {
        let i = samples
            .iter()
            .position(|s| s.what == what)
            .unwrap_or_else(|| panic!("no sample {what:?}"));
        records[i].1.clone()
    };
    let mut trailing = control("ACCESS GETATTR");
    trailing[..4].copy_from_slice(&CONTROL_TRAILING_XID.to_be_bytes());
    trailing.extend_from_slice(&[0; 8]);
    let mut cut = control("LOOKUP GETFH GETATTR");
    cut[..4].copy_from_slice(&CONTROL_CUT_XID.to_be_bytes());
    cut.truncate(cut.len() - 6);
    records.push((true, trailing));
    records.push((true, cut));
    let file = dir.join("nfs-samples.pcap");
    pcap::write_pcap(&file, &records).unwrap();
    let path = file.to_str().unwrap();
    println!("wrote {} records to {path}", records.len());

    // Operations this Wireshark has a name for. An operation it does not know cannot be
    // dissected (its arguments cannot be delimited), so problems in messages that carry one
    // are reported but do not fail the test.
    let values = tshark(&config, &["-G", "values"]);
    let known_ops = known_values(&values, "nfs.opcode");
    let known_cb_ops = known_values(&values, "nfs.cb.operation");
    let unknown: Vec<u32> = all_ops()
        .into_iter()
        .filter(|o| !known_ops.contains(o))
        .chain(
            all_cb_ops()
                .into_iter()
                .filter(|o| !known_cb_ops.contains(o)),
        )
        .collect();
    if !unknown.is_empty() {
        eprintln!("note: this Wireshark does not know operations {unknown:?}");
    }
    let knows_all = |s: &Sample| {
        s.ops().iter().all(|o| known_ops.contains(o))
            && s.cb_ops().iter().all(|o| known_cb_ops.contains(o))
    };

    let verbose = tshark(&config, &["-r", path, "-V"]);
    assert!(verbose.contains("Network File System"), "no NFS dissected");
    let frames = dissect(&verbose);
    let by_message: HashMap<(u32, bool), u32> = frames
        .iter()
        .filter_map(|(&f, d)| d.rpc.map(|m| (m, f)))
        .collect();

    // The checks see the broken control calls.
    let control = |xid: u32| {
        let frame = by_message
            .get(&(xid, true))
            .unwrap_or_else(|| panic!("control call {xid:#x} not dissected"));
        (*frame, &frames[frame])
    };
    let (trailing_frame, trailing) = control(CONTROL_TRAILING_XID);
    assert_eq!(
        trailing.leftover,
        Some(8),
        "control: trailing bytes not seen"
    );
    let (cut_frame, cut) = control(CONTROL_CUT_XID);
    assert!(
        !cut.problems.is_empty(),
        "control: truncated call not flagged"
    );

    let mut failures = Vec::new();
    let mut seen_ops = BTreeSet::new();
    let mut seen_cb_ops = BTreeSet::new();
    let mut sample_frames = BTreeSet::from([trailing_frame, cut_frame]);
    for s in &samples {
        let Some(&frame) = by_message.get(&(s.header.xid, s.is_call())) else {
            failures.push(format!(
                "{}: xid {:#x} not dissected as RPC",
                s.what, s.header.xid
            ));
            continue;
        };
        sample_frames.insert(frame);
        let d = &frames[&frame];
        let ours = if matches!(s.body, Body::CbCompound(_) | Body::CbCompoundRes(_)) {
            seen_cb_ops.extend(d.ops.iter().map(|&o| (s.is_call(), o)));
            s.cb_ops()
        } else {
            seen_ops.extend(d.ops.iter().map(|&o| (s.is_call(), o)));
            s.ops()
        };
        let header = format!("---- frame {frame}: {}", s.what);
        if !knows_all(s) {
            if !d.problems.is_empty() || d.ops != ours {
                eprintln!(
                    "note: {header} carries an operation this Wireshark does not know; \
                     it lists {:?}\n{}",
                    d.ops,
                    excerpt(d)
                );
            }
            continue;
        }
        if !d.problems.is_empty() {
            failures.push(format!("{header}\n{}", excerpt(d)));
        }
        match wireshark_gap(s) {
            Some((i, why)) => {
                if d.ops != ours && d.ops[..] != ours[..=i] {
                    failures.push(format!(
                        "{header}: tshark lists operations {:?}, ours are {ours:?}",
                        d.ops
                    ));
                }
                if let Some(n) = d.leftover {
                    eprintln!("note: {header}: {n} bytes left undissected: {why}");
                }
            }
            None => {
                if d.ops != ours {
                    failures.push(format!(
                        "{header}: tshark lists operations {:?}, ours are {ours:?}",
                        d.ops
                    ));
                }
                if let Some(n) = d.leftover {
                    failures.push(format!(
                        "{header}: tshark leaves {n} bytes undissected:\n{}",
                        d.lines.join("\n")
                    ));
                }
            }
        }
    }
    // Frames that belong to no sample (TCP handshake, ACKs) must be clean too.
    for (frame, d) in &frames {
        if !sample_frames.contains(frame) && !d.problems.is_empty() {
            failures.push(format!("---- frame {frame}\n{}", excerpt(d)));
        }
    }
    assert!(
        failures.is_empty(),
        "tshark disagrees with our encoding in {} case(s) ({path}):\n{}",
        failures.len(),
        failures.join("\n")
    );

    // Every operation the installed Wireshark knows was seen in a call and in a reply.
    let mut not_seen = Vec::new();
    for call in [true, false] {
        let side = if call { "call" } else { "reply" };
        for o in all_ops() {
            if known_ops.contains(&o) && !seen_ops.contains(&(call, o)) {
                not_seen.push(format!("{o} in a {side}"));
            }
        }
        for o in all_cb_ops() {
            if known_cb_ops.contains(&o) && !seen_cb_ops.contains(&(call, o)) {
                not_seen.push(format!("CB {o} in a {side}"));
            }
        }
    }
    assert!(not_seen.is_empty(), "tshark saw no {not_seen:?}");
}

//! A third-party check of the RPC-over-RDMA transport header encoder: calls, replies and errors
//! of every shape (short, Read chunks, Write chunks, an empty Write chunk, a Long Call in a
//! Position-Zero Read chunk, a Long Reply in a Reply chunk, ERR_VERS, ERR_CHUNK) are encoded
//! with our types, decoded back by the side that receives them, sent as RoCE v2 packets (UDP
//! port 4791, an InfiniBand RC SEND Only each) in a pcap, and dissected by Wireshark's
//! `tshark`, whose RPCoRDMA dissector must read every field as we wrote it and find nothing
//! malformed. No capture of real RPC-over-RDMA traffic was at hand, so Wireshark is the
//! independent reader.
//!
//! Skipped with a note when `tshark` is not installed, unless `PNFS_REQUIRE_TSHARK=1`. The pcap
//! is left in `target/tmp/tshark/rpc-rdma.pcap` (`tshark -r ... -V`).
//!
//! Findings with tshark 4.0.17 (Debian 12): every field as encoded, nothing malformed. Wireshark
//! takes a Read chunk's position as an offset in the inline message (a position past its end
//! is "Malformed Packet"), which is what RFC 8166 section 3.4.5 means by it, so the samples'
//! positions lie within their messages.

#[path = "support/pcap.rs"]
mod pcap;

use std::path::{Path, PathBuf};
use std::process::Command;

use bytes::Bytes;
use nfs_proto::rdma::{
    ChunkLists, Limits, RdmaBody, RdmaError, RdmaHeader, RdmaSegment, ReadSegment, Side, WriteChunk,
};
use nfs_proto::rpc::RpcMsg;
use nfs_proto::xdr::{self, Encoder};

/// One message: who sends it, the transport header and the RPC message after it.
struct Sample {
    from_client: bool,
    header: RdmaHeader,
    rpc: Bytes,
}

fn seg(handle: u32, length: u32, offset: u64) -> RdmaSegment {
    RdmaSegment {
        handle,
        length,
        offset,
    }
}

/// An NFS NULL call (AUTH_NONE), 40 bytes.
fn null_call(xid: u32) -> Bytes {
    let mut e = Encoder::new();
    RpcMsg::call(xid, 100_003, 4, 0, Default::default(), Default::default())
        .encode_with(&mut e, &());
    e.into_bytes()
}

fn null_reply(xid: u32) -> Bytes {
    let mut e = Encoder::new();
    RpcMsg::reply_success(xid, Default::default()).encode_with(&mut e, &());
    e.into_bytes()
}

fn msg(xid: u32, credit: u32, lists: ChunkLists) -> RdmaHeader {
    RdmaHeader {
        xid,
        credit,
        body: RdmaBody::Msg(lists),
    }
}

fn samples() -> Vec<Sample> {
    let call = |xid, header| Sample {
        from_client: true,
        header,
        rpc: null_call(xid),
    };
    let reads = |position| {
        vec![
            ReadSegment {
                position,
                target: seg(0x1001, 4096, 0x7f00_0000_1000),
            },
            ReadSegment {
                position,
                target: seg(0x1002, 904, 0x7f00_0000_2000),
            },
        ]
    };
    let writes = vec![
        WriteChunk {
            segments: vec![seg(0x2001, 65536, 0x10000), seg(0x2002, 65536, 0x20000)],
        },
        WriteChunk::default(),
        WriteChunk {
            segments: vec![seg(0x2003, 1024, 0x30000)],
        },
    ];
    let reply_chunk = WriteChunk {
        segments: vec![seg(0x3002, 8192, 0x8000), seg(0x3003, 8192, 0xa000)],
    };
    let mut returned = writes.clone();
    returned[0].segments[0].length = 65536;
    returned[0].segments[1].length = 100;
    returned[2].segments[0].length = 0;
    let mut filled = reply_chunk.clone();
    filled.segments[1].length = 17;
    vec![
        call(1, msg(1, 32, ChunkLists::default())),
        call(
            2,
            msg(
                2,
                32,
                ChunkLists {
                    reads: reads(40),
                    ..Default::default()
                },
            ),
        ),
        call(
            3,
            msg(
                3,
                64,
                ChunkLists {
                    writes: writes.clone(),
                    ..Default::default()
                },
            ),
        ),
        Sample {
            from_client: true,
            header: RdmaHeader {
                xid: 4,
                credit: 64,
                body: RdmaBody::NoMsg(ChunkLists {
                    reads: {
                        let mut r = reads(0);
                        r.push(ReadSegment {
                            position: 36,
                            target: seg(0x1003, 12, 0x7f00_0000_3000),
                        });
                        r
                    },
                    writes: vec![],
                    reply: Some(reply_chunk.clone()),
                }),
            },
            rpc: Bytes::new(),
        },
        Sample {
            from_client: false,
            header: msg(
                3,
                128,
                ChunkLists {
                    writes: returned,
                    ..Default::default()
                },
            ),
            rpc: null_reply(3),
        },
        Sample {
            from_client: false,
            header: RdmaHeader {
                xid: 4,
                credit: 128,
                body: RdmaBody::NoMsg(ChunkLists {
                    reply: Some(filled),
                    ..Default::default()
                }),
            },
            rpc: Bytes::new(),
        },
        Sample {
            from_client: false,
            header: RdmaHeader {
                xid: 5,
                credit: 1,
                body: RdmaBody::Error(RdmaError::Vers { low: 1, high: 1 }),
            },
            rpc: Bytes::new(),
        },
        Sample {
            from_client: false,
            header: RdmaHeader {
                xid: 6,
                credit: 1,
                body: RdmaBody::Error(RdmaError::Chunk),
            },
            rpc: Bytes::new(),
        },
    ]
}

/// The Send of a sample: header and RPC message, checked to decode back on the receiving side.
fn encode(s: &Sample) -> Vec<u8> {
    let payload: Vec<u8> = s.header.encode_with_message([s.rpc.clone()]).concat();
    let side = if s.from_client {
        Side::Responder
    } else {
        Side::Requester
    };
    let r = RdmaHeader::decode_received(payload.clone().into(), side, &Limits::default())
        .unwrap_or_else(|e| panic!("xid {}: {e}", s.header.xid));
    assert_eq!(r.header, s.header);
    assert_eq!(r.rpc_message, s.rpc);
    payload
}

/// A RoCE v2 packet on raw IPv4: UDP to port 4791, an InfiniBand Base Transport Header for an
/// RC SEND Only to queue pair 0x11, the payload, and a (zero) invariant CRC.
fn roce_send(payload: &[u8], psn: u32, from_client: bool) -> Vec<u8> {
    let (client, server) = ([10, 0, 0, 1], [10, 0, 0, 2]);
    let (src, dst) = if from_client {
        (client, server)
    } else {
        (server, client)
    };
    let mut bth = vec![0x04, 0x00, 0xff, 0xff, 0x00, 0x00, 0x00, 0x11, 0x00];
    bth.extend_from_slice(&psn.to_be_bytes()[1..]);
    let udp_len = 8 + bth.len() + payload.len() + 4;
    let mut f = Vec::with_capacity(20 + udp_len);
    f.extend_from_slice(&[0x45, 0]);
    f.extend_from_slice(&((20 + udp_len) as u16).to_be_bytes());
    f.extend_from_slice(&[0, 0, 0x40, 0, 64, 17, 0, 0]);
    f.extend_from_slice(&src);
    f.extend_from_slice(&dst);
    let sum = pcap::internet_checksum(&f, 0);
    f[10..12].copy_from_slice(&sum.to_be_bytes());
    f.extend_from_slice(&49152u16.to_be_bytes());
    f.extend_from_slice(&4791u16.to_be_bytes());
    f.extend_from_slice(&(udp_len as u16).to_be_bytes());
    f.extend_from_slice(&[0, 0]);
    f.extend_from_slice(&bth);
    f.extend_from_slice(payload);
    f.extend_from_slice(&[0; 4]);
    f
}

/// What Wireshark should print for a sample, field by field (`-E occurrence=a -E aggregator=,`).
fn expected(h: &RdmaHeader) -> Vec<String> {
    let list = |v: Vec<String>| v.join(",");
    let hex32 = |v: u32| format!("0x{v:08x}");
    let mut out = vec![
        hex32(h.xid),
        "1".into(),
        h.credit.to_string(),
        h.proc_().0.to_string(),
    ];
    match &h.body {
        RdmaBody::Msg(l) | RdmaBody::NoMsg(l) => {
            let segments: Vec<&RdmaSegment> = l
                .reads
                .iter()
                .map(|r| &r.target)
                .chain(l.writes.iter().flat_map(|c| &c.segments))
                .chain(l.reply.iter().flat_map(|c| &c.segments))
                .collect();
            let counts = l.writes.iter().chain(&l.reply).map(|c| c.segments.len());
            out.extend([
                l.reads.len().to_string(),
                l.writes.len().to_string(),
                usize::from(l.reply.is_some()).to_string(),
                list(l.reads.iter().map(|r| r.position.to_string()).collect()),
                list(segments.iter().map(|s| hex32(s.handle)).collect()),
                list(segments.iter().map(|s| s.length.to_string()).collect()),
                list(
                    segments
                        .iter()
                        .map(|s| format!("0x{:016x}", s.offset))
                        .collect(),
                ),
                list(counts.map(|n| n.to_string()).collect()),
                String::new(),
                String::new(),
                String::new(),
            ]);
        }
        RdmaBody::Error(e) => {
            out.extend(std::iter::repeat_n(String::new(), 8));
            match *e {
                RdmaError::Vers { low, high } => {
                    out.extend(["1".into(), low.to_string(), high.to_string()])
                }
                RdmaError::Chunk => out.extend(["2".into(), String::new(), String::new()]),
            }
        }
    }
    out
}

const FIELDS: &[&str] = &[
    "rpcordma.xid",
    "rpcordma.version",
    "rpcordma.flow_control",
    "rpcordma.msg_type",
    "rpcordma.reads_count",
    "rpcordma.writes_count",
    "rpcordma.reply_count",
    "rpcordma.position",
    "rpcordma.rdma_handle",
    "rpcordma.rdma_length",
    "rpcordma.rdma_offset",
    "rpcordma.segment_count",
    "rpcordma.errcode",
    "rpcordma.vers_low",
    "rpcordma.vers_high",
    "_ws.malformed",
    "_ws.expert.severity",
];

fn have_tshark() -> bool {
    let ok = Command::new("tshark")
        .arg("-v")
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    if !ok {
        assert_ne!(
            std::env::var("PNFS_REQUIRE_TSHARK").as_deref(),
            Ok("1"),
            "PNFS_REQUIRE_TSHARK=1 but `tshark` could not be run"
        );
        eprintln!("note: tshark is not installed; skipping the Wireshark RPC-over-RDMA check");
    }
    ok
}

#[test]
fn tshark_reads_every_header_field_as_encoded() {
    let samples = samples();
    let frames: Vec<Vec<u8>> = samples
        .iter()
        .enumerate()
        .map(|(i, s)| roce_send(&encode(s), i as u32 + 1, s.from_client))
        .collect();
    // The golden shapes decode as RFC 8166's XDR says, whatever Wireshark thinks.
    assert_eq!(
        xdr::to_bytes(&samples[0].header),
        Bytes::from_static(&[
            0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 32, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0
        ])
    );
    if !have_tshark() {
        return;
    }
    let dir: PathBuf = Path::new(env!("CARGO_TARGET_TMPDIR")).join("tshark");
    let config = dir.join("rdma-config");
    std::fs::create_dir_all(&config).unwrap();
    let pcap_path = dir.join("rpc-rdma.pcap");
    std::fs::write(&pcap_path, pcap::pcap_bytes(pcap::LINKTYPE_RAW, &frames)).unwrap();
    let mut cmd = Command::new("tshark");
    cmd.env("WIRESHARK_CONFIG_DIR", &config)
        .args(["-n", "-r"])
        .arg(&pcap_path)
        .args(["-T", "fields", "-E", "occurrence=a", "-E", "aggregator=,"]);
    for f in FIELDS {
        cmd.args(["-e", f]);
    }
    let out = cmd.output().expect("running tshark");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), samples.len(), "{text}");
    for (s, line) in samples.iter().zip(lines) {
        let got: Vec<&str> = line.split('\t').collect();
        let mut want = expected(&s.header);
        want.extend([String::new(), String::new()]);
        assert_eq!(got, want, "xid {}: tshark read\n{line}", s.header.xid);
    }
}

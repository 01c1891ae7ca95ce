//! Tests of the packet plumbing in `tests/support/pcap.rs` and of the extracted records in
//! `tests/data/*.rec`.
//!
//! The tshark checks run when `tshark` is installed and are skipped (with a note) otherwise.
//! The checks against the original captures look in `$NFS_CAPTURES_DIR` (default
//! `/work/shared/captures`) and are skipped when the files are not there.

#[path = "support/pcap.rs"]
mod pcap;

use pcap::{
    Record, TcpFrameSpec, LINKTYPE_ETHERNET, LINKTYPE_LINUX_SLL, LINKTYPE_LINUX_SLL2, LINKTYPE_RAW,
    NFS_PORT, TCP_ACK, TCP_FIN, TCP_PSH, TCP_SYN,
};
use std::path::{Path, PathBuf};
use std::process::Command;

const CAPTURES: [&str; 2] = ["linux-6.1-knfsd-v41-v42", "linux-6.1-knfsd-pnfs-block"];

fn rec_path(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(format!("{name}.rec"))
}

fn capture_path(name: &str) -> Option<PathBuf> {
    let dir = std::env::var_os("NFS_CAPTURES_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/work/shared/captures"));
    let p = dir.join(format!("{name}.pcap"));
    if p.is_file() {
        Some(p)
    } else {
        eprintln!(
            "note: {} not found (set NFS_CAPTURES_DIR); skipping",
            p.display()
        );
        None
    }
}

fn msg_type(r: &Record) -> u32 {
    u32::from_be_bytes(r.data[4..8].try_into().unwrap())
}

fn xid(r: &Record) -> u32 {
    u32::from_be_bytes(r.data[0..4].try_into().unwrap())
}

// ------------------------------------------------------------------------------------------------
// The committed records
// ------------------------------------------------------------------------------------------------

#[test]
fn rec_files_hold_rpc_messages() {
    // (name, records, connections)
    let expected = [
        ("linux-6.1-knfsd-v41-v42", 1132, 2),
        ("linux-6.1-knfsd-pnfs-block", 70, 1),
    ];
    for (name, count, conns) in expected {
        let records = pcap::read_records_file(rec_path(name)).unwrap();
        assert_eq!(records.len(), count, "{name}");
        assert_eq!(
            records.iter().map(|r| r.conn).max().unwrap() + 1,
            conns,
            "{name}"
        );
        for (i, r) in records.iter().enumerate() {
            assert!(r.data.len() >= 8, "{name} record {i} too short");
            let t = msg_type(r);
            assert!(t == 0 || t == 1, "{name} record {i}: msg_type {t}");
            // The Linux client sends no callbacks' replies and knfsd sends no callbacks here:
            // calls go to the server, replies come back.
            assert_eq!(t == 0, r.from_client, "{name} record {i}: direction");
            if t == 0 {
                // rpcvers 2, program NFS (100003), version 4.
                let word = |k: usize| u32::from_be_bytes(r.data[k..k + 4].try_into().unwrap());
                assert_eq!((word(8), word(12), word(16)), (2, 100_003, 4), "{name} {i}");
            }
        }
        // Every call has exactly one reply, on the same connection, after it.
        let mut pending = std::collections::HashMap::new();
        for r in &records {
            if msg_type(r) == 0 {
                assert!(pending.insert((r.conn, xid(r)), ()).is_none());
            } else {
                assert!(
                    pending.remove(&(r.conn, xid(r))).is_some(),
                    "{name}: reply xid {:#x} without a call",
                    xid(r)
                );
            }
        }
        assert!(pending.is_empty(), "{name}: calls without a reply");
    }
}

#[test]
fn rec_files_match_captures() {
    for name in CAPTURES {
        let Some(p) = capture_path(name) else {
            continue;
        };
        let extracted = pcap::read_pcap_records(&p).unwrap();
        let stored = pcap::read_records_file(rec_path(name)).unwrap();
        assert!(extracted == stored, "{name}: regenerate the .rec file");
    }
}

// ------------------------------------------------------------------------------------------------
// tshark cross-checks
// ------------------------------------------------------------------------------------------------

fn tshark_available() -> bool {
    let ok = Command::new("tshark")
        .arg("-v")
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    if !ok {
        eprintln!("note: tshark not installed; skipping the tshark check");
    }
    ok
}

/// The RPC calls tshark dissects in a capture: `(destination port, xid)`, in frame order.
fn tshark_calls(path: &Path) -> Vec<(u16, u32)> {
    let out = Command::new("tshark")
        .arg("-r")
        .arg(path)
        .args(["-Y", "rpc.msgtyp == 0", "-T", "fields"])
        .args(["-e", "tcp.dstport", "-e", "rpc.msgtyp", "-e", "rpc.xid"])
        .output()
        .expect("running tshark");
    assert!(out.status.success(), "tshark failed on {}", path.display());
    let text = String::from_utf8(out.stdout).unwrap();
    let mut calls = Vec::new();
    for line in text.lines() {
        let cols: Vec<&str> = line.split('\t').collect();
        assert_eq!(cols.len(), 3, "tshark line {line:?}");
        let port: u16 = cols[0].parse().unwrap();
        // One frame may end several RPC messages: the fields list one value per message.
        let types: Vec<&str> = cols[1].split(',').collect();
        let xids: Vec<&str> = cols[2].split(',').collect();
        assert_eq!(types.len(), xids.len(), "tshark line {line:?}");
        for (t, x) in types.iter().zip(&xids) {
            if *t == "0" {
                let x = u32::from_str_radix(x.trim_start_matches("0x"), 16).unwrap();
                calls.push((port, x));
            }
        }
    }
    calls
}

fn our_calls(records: &[Record], port_of: impl Fn(&Record) -> u16) -> Vec<(u16, u32)> {
    records
        .iter()
        .filter(|r| msg_type(r) == 0)
        .map(|r| (port_of(r), xid(r)))
        .collect()
}

#[test]
fn call_count_matches_tshark() {
    if !tshark_available() {
        return;
    }
    for name in CAPTURES {
        let Some(p) = capture_path(name) else {
            continue;
        };
        let records = pcap::read_records_file(rec_path(name)).unwrap();
        let mut ours = our_calls(&records, |r| if r.from_client { NFS_PORT } else { 0 });
        let mut theirs = tshark_calls(&p);
        let client_calls = ours.iter().filter(|c| c.0 == NFS_PORT).count();
        let tshark_to_server = theirs.iter().filter(|c| c.0 == NFS_PORT).count();
        println!(
            "{name}: {client_calls} client->server calls; tshark: {} calls, {tshark_to_server} to port 2049",
            theirs.len()
        );
        assert_eq!(client_calls, theirs.len(), "{name}");
        assert_eq!(client_calls, tshark_to_server, "{name}");
        // Same xids too (tshark gives the client's port for server->client calls).
        for c in ours.iter_mut().chain(theirs.iter_mut()) {
            c.0 = u16::from(c.0 == NFS_PORT);
        }
        ours.sort_unstable();
        theirs.sort_unstable();
        assert_eq!(ours, theirs, "{name}");
    }
}

#[test]
fn written_pcap_dissects_cleanly() {
    if !tshark_available() {
        return;
    }
    let name = "linux-6.1-knfsd-v41-v42";
    let records = pcap::read_records_file(rec_path(name)).unwrap();
    let pairs: Vec<(bool, Vec<u8>)> = records
        .iter()
        .map(|r| (r.from_client, r.data.clone()))
        .collect();
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("{name}.written.pcap"));
    pcap::write_pcap(&out, &pairs).unwrap();

    let v = Command::new("tshark")
        .arg("-r")
        .arg(&out)
        .arg("-V")
        .output()
        .expect("running tshark");
    assert!(v.status.success(), "tshark -V failed");
    let text = String::from_utf8_lossy(&v.stdout);
    let bad: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("Malformed") || l.contains("Expert Info (Error"))
        .take(10)
        .collect();
    assert!(bad.is_empty(), "tshark complains:\n{}", bad.join("\n"));
    assert!(text.contains("Network File System"), "no NFS dissected");

    let mut theirs = tshark_calls(&out);
    let mut ours = our_calls(&records, |_| NFS_PORT);
    println!(
        "{name}: wrote {} records, tshark dissects {} calls",
        records.len(),
        theirs.len()
    );
    ours.sort_unstable();
    theirs.sort_unstable();
    assert_eq!(ours, theirs);
    if let Some(p) = capture_path(name) {
        assert_eq!(tshark_calls(&p).len(), theirs.len());
    }
}

// ------------------------------------------------------------------------------------------------
// Writer
// ------------------------------------------------------------------------------------------------

fn sample_records() -> Vec<(bool, Vec<u8>)> {
    let mut v = Vec::new();
    for i in 0..20u32 {
        let len = [0usize, 1, 8, 1447, 1448, 1449, 3000, 70_000][i as usize % 8];
        let data: Vec<u8> = (0..len).map(|k| (k as u32 * 7 + i) as u8).collect();
        v.push((i % 3 != 1, data));
    }
    v
}

#[test]
fn written_pcap_reads_back() {
    let input = sample_records();
    let bytes = pcap::build_pcap(&input);
    let records = pcap::extract_records(&bytes, NFS_PORT).unwrap();
    let got: Vec<(bool, Vec<u8>)> = records
        .iter()
        .map(|r| {
            assert_eq!(r.conn, 0);
            (r.from_client, r.data.clone())
        })
        .collect();
    assert_eq!(got, input);
}

#[test]
fn written_frames_are_consistent() {
    let input = sample_records();
    let capture = pcap::parse_pcap(&pcap::build_pcap(&input)).unwrap();
    assert_eq!(capture.linktype, LINKTYPE_ETHERNET);
    // next expected sequence number and highest ack, per direction (0 = from client).
    let mut next: [Option<u32>; 2] = [None, None];
    let mut flags_seen = Vec::new();
    for f in &capture.frames {
        let ip = &f.data[14..];
        // IPv4 header checksum verifies.
        assert_eq!(pcap::internet_checksum(&ip[..20], 0), 0);
        let seg = pcap::parse_frame(LINKTYPE_ETHERNET, &f.data)
            .unwrap()
            .unwrap();
        assert!(seg.payload.len() <= pcap::WRITE_MSS);
        // TCP checksum verifies.
        let tcp = &ip[20..];
        assert_eq!(
            pcap::tcp_checksum_v4([127, 0, 0, 1], [127, 0, 0, 1], tcp),
            0
        );
        let dir = usize::from(seg.dst_port != NFS_PORT);
        if let Some(n) = next[dir] {
            assert_eq!(seg.seq, n, "sequence numbers are contiguous");
        }
        if seg.flags & TCP_ACK != 0 {
            assert_eq!(Some(seg.ack), next[1 - dir], "ack is the peer's next seq");
        }
        let consumed = u32::from(seg.flags & (TCP_SYN | TCP_FIN) != 0);
        next[dir] = Some(seg.seq + seg.payload.len() as u32 + consumed);
        flags_seen.push(seg.flags);
    }
    assert_eq!(
        &flags_seen[..3],
        &[TCP_SYN, TCP_SYN | TCP_ACK, TCP_ACK],
        "three-way handshake"
    );
}

// ------------------------------------------------------------------------------------------------
// Reading: link types, byte orders, IPv6
// ------------------------------------------------------------------------------------------------

/// A pcap with the given header byte order and timestamp resolution.
fn custom_pcap(linktype: u32, frames: &[Vec<u8>], big_endian: bool, nanos: bool) -> Vec<u8> {
    let w32 = |out: &mut Vec<u8>, v: u32| {
        out.extend_from_slice(&if big_endian {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        })
    };
    let w16 = |out: &mut Vec<u8>, v: u16| {
        out.extend_from_slice(&if big_endian {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        })
    };
    let mut out = Vec::new();
    w32(&mut out, if nanos { 0xa1b2_3c4d } else { 0xa1b2_c3d4 });
    w16(&mut out, 2);
    w16(&mut out, 4);
    w32(&mut out, 0);
    w32(&mut out, 0);
    w32(&mut out, 65535);
    w32(&mut out, linktype);
    for (i, f) in frames.iter().enumerate() {
        w32(&mut out, 1000 + i as u32);
        w32(&mut out, 5);
        w32(&mut out, f.len() as u32);
        w32(&mut out, f.len() as u32);
        out.extend_from_slice(f);
    }
    out
}

/// Re-wraps an Ethernet/IPv4/TCP frame's TCP segment in Ethernet/IPv6 (with a hop-by-hop
/// extension header), ::1 to ::1.
fn to_ipv6(eth: &[u8]) -> Vec<u8> {
    let tcp = &eth[14 + 20..];
    let mut f = vec![0u8; 12];
    f.extend_from_slice(&0x86ddu16.to_be_bytes());
    f.extend_from_slice(&[0x60, 0, 0, 0]);
    f.extend_from_slice(&((tcp.len() + 8) as u16).to_be_bytes());
    f.extend_from_slice(&[0, 64]); // next header: hop-by-hop; hop limit
    let mut lo = [0u8; 16];
    lo[15] = 1;
    f.extend_from_slice(&lo);
    f.extend_from_slice(&lo);
    f.extend_from_slice(&[6, 0, 1, 4, 0, 0, 0, 0]); // hop-by-hop: next TCP, PadN
    f.extend_from_slice(tcp);
    f
}

#[test]
fn reads_all_link_types_and_byte_orders() {
    let input = sample_records();
    let eth = pcap::parse_pcap(&pcap::build_pcap(&input)).unwrap();
    let eth_frames: Vec<Vec<u8>> = eth.frames.iter().map(|f| f.data.clone()).collect();
    let ip = |f: &Vec<u8>| f[14..].to_vec();
    let variants: Vec<(&str, u32, Vec<Vec<u8>>)> = vec![
        ("ethernet", LINKTYPE_ETHERNET, eth_frames.clone()),
        (
            "ethernet+vlan",
            LINKTYPE_ETHERNET,
            eth_frames
                .iter()
                .map(|f| [&f[..12], &[0x81, 0x00, 0x00, 0x05], &f[12..]].concat())
                .collect(),
        ),
        ("raw", LINKTYPE_RAW, eth_frames.iter().map(ip).collect()),
        (
            "sll",
            LINKTYPE_LINUX_SLL,
            eth_frames
                .iter()
                .map(|f| {
                    let mut h = vec![0, 0, 3, 4, 0, 6, 0, 0, 0, 0, 0, 0, 0, 0, 8, 0];
                    h.extend_from_slice(&f[14..]);
                    h
                })
                .collect(),
        ),
        (
            "sll2",
            LINKTYPE_LINUX_SLL2,
            eth_frames
                .iter()
                .map(|f| {
                    let mut h = vec![8, 0, 0, 0, 0, 0, 0, 1, 3, 4, 0, 6];
                    h.extend_from_slice(&[0; 8]);
                    h.extend_from_slice(&f[14..]);
                    h
                })
                .collect(),
        ),
        (
            "ipv6",
            LINKTYPE_ETHERNET,
            eth_frames.iter().map(|f| to_ipv6(f)).collect(),
        ),
        (
            "raw ipv6",
            LINKTYPE_RAW,
            eth_frames
                .iter()
                .map(|f| to_ipv6(f)[14..].to_vec())
                .collect(),
        ),
    ];
    for (what, linktype, frames) in variants {
        for big_endian in [false, true] {
            for nanos in [false, true] {
                let bytes = custom_pcap(linktype, &frames, big_endian, nanos);
                let cap = pcap::parse_pcap(&bytes).unwrap();
                assert_eq!(cap.linktype, linktype);
                assert_eq!(cap.frames[1].ts_sec, 1001);
                assert_eq!(cap.frames[1].ts_nsec, if nanos { 5 } else { 5000 });
                let got: Vec<(bool, Vec<u8>)> = pcap::extract_records_from_capture(&cap, NFS_PORT)
                    .unwrap_or_else(|e| panic!("{what}: {e}"))
                    .into_iter()
                    .map(|r| (r.from_client, r.data))
                    .collect();
                assert_eq!(got, input, "{what} big_endian={big_endian} nanos={nanos}");
            }
        }
    }
}

#[test]
fn non_tcp_and_other_ports_are_ignored() {
    let mut frames = Vec::new();
    // ARP.
    let mut arp = vec![0u8; 12];
    arp.extend_from_slice(&[0x08, 0x06]);
    arp.extend_from_slice(&[0; 28]);
    frames.push(arp);
    // UDP.
    let mut udp = TcpFrameSpec {
        src: [10, 0, 0, 1],
        dst: [10, 0, 0, 2],
        src_port: 1,
        dst_port: 2049,
        seq: 0,
        ack: 0,
        flags: 0,
        window: 0,
        ip_id: 0,
    }
    .ethernet_frame(b"xx");
    udp[14 + 9] = 17;
    frames.push(udp);
    // TCP between other ports.
    frames.push(
        TcpFrameSpec {
            src: [10, 0, 0, 1],
            dst: [10, 0, 0, 2],
            src_port: 1000,
            dst_port: 80,
            seq: 1,
            ack: 0,
            flags: TCP_ACK,
            window: 100,
            ip_id: 1,
        }
        .ethernet_frame(b"GET / HTTP/1.0\r\n"),
    );
    let bytes = pcap::pcap_bytes(LINKTYPE_ETHERNET, &frames);
    assert_eq!(pcap::extract_records(&bytes, NFS_PORT).unwrap(), vec![]);
}

// ------------------------------------------------------------------------------------------------
// Reassembly
// ------------------------------------------------------------------------------------------------

/// Builds frames of one or more hand-made conversations.
struct Conv {
    client_port: u16,
    isn: [u32; 2],
}

impl Conv {
    fn frame(&self, from_client: bool, flags: u8, rel_seq: u32, payload: &[u8]) -> Vec<u8> {
        let d = usize::from(!from_client);
        TcpFrameSpec {
            src: [192, 168, 1, 10 + d as u8],
            dst: [192, 168, 1, 11 - d as u8],
            src_port: if from_client {
                self.client_port
            } else {
                NFS_PORT
            },
            dst_port: if from_client {
                NFS_PORT
            } else {
                self.client_port
            },
            seq: self.isn[d].wrapping_add(rel_seq),
            ack: 0,
            flags,
            window: 1000,
            ip_id: 0,
        }
        .ethernet_frame(payload)
    }

    /// Handshake frames; data then starts at relative sequence number 1.
    fn handshake(&self) -> Vec<Vec<u8>> {
        vec![
            self.frame(true, TCP_SYN, 0, &[]),
            self.frame(false, TCP_SYN | TCP_ACK, 0, &[]),
            self.frame(true, TCP_ACK, 1, &[]),
        ]
    }
}

fn marked(records: &[&[u8]]) -> Vec<u8> {
    records
        .iter()
        .flat_map(|r| pcap::mark_record(r, usize::MAX))
        .collect()
}

fn extract(frames: &[Vec<u8>]) -> pcap::Result<Vec<Record>> {
    pcap::extract_records(&pcap::pcap_bytes(LINKTYPE_ETHERNET, frames), NFS_PORT)
}

fn rec(conn: u32, from_client: bool, data: &[u8]) -> Record {
    Record {
        conn,
        from_client,
        data: data.to_vec(),
    }
}

#[test]
fn out_of_order_retransmitted_and_overlapping_segments() {
    // Sequence numbers wrap around during the stream.
    let c = Conv {
        client_port: 700,
        isn: [u32::MAX - 10, 5],
    };
    let a: Vec<u8> = (0..100u8).collect();
    let b: Vec<u8> = (100..150u8).collect();
    let stream = marked(&[&a, &b]); // 4+100+4+50 = 158 bytes
    let mut frames = c.handshake();
    // Segments [60,100), [0,60), [0,60) again, [50,110) (overlapping, carries the start of the
    // second record at 104), [100,158).
    frames.push(c.frame(true, TCP_ACK, 1 + 60, &stream[60..100]));
    frames.push(c.frame(true, TCP_ACK, 1, &stream[0..60]));
    frames.push(c.frame(true, TCP_ACK, 1, &stream[0..60]));
    frames.push(c.frame(true, TCP_ACK, 1 + 50, &stream[50..110]));
    frames.push(c.frame(true, TCP_ACK | TCP_PSH, 1 + 100, &stream[100..]));
    let reply = marked(&[b"reply"]);
    frames.push(c.frame(false, TCP_ACK | TCP_PSH, 1, &reply));
    let got = extract(&frames).unwrap();
    assert_eq!(
        got,
        vec![rec(0, true, &a), rec(0, true, &b), rec(0, false, b"reply")]
    );
}

#[test]
fn record_order_follows_first_byte() {
    let c = Conv {
        client_port: 701,
        isn: [1000, 2000],
    };
    let mut frames = c.handshake();
    let calls = marked(&[b"call-1", b"call-2"]);
    let (c1, c2) = calls.split_at(10);
    // call-1 in one frame; reply-1 and the start of call-2 ... interleave.
    frames.push(c.frame(true, TCP_ACK, 1, c1)); // frame 3: call-1 (10 bytes: 4 + 6)
    frames.push(c.frame(true, TCP_ACK, 11, &c2[..3])); // frame 4: first 3 bytes of call-2
    frames.push(c.frame(false, TCP_ACK, 1, &marked(&[b"reply-1", b"reply-2"]))); // frame 5
    frames.push(c.frame(true, TCP_ACK, 14, &c2[3..])); // frame 6: rest of call-2
    let got = extract(&frames).unwrap();
    assert_eq!(
        got,
        vec![
            rec(0, true, b"call-1"),
            rec(0, true, b"call-2"),
            rec(0, false, b"reply-1"),
            rec(0, false, b"reply-2"),
        ]
    );
}

#[test]
fn multi_fragment_records_are_joined() {
    let c = Conv {
        client_port: 702,
        isn: [7, 9],
    };
    let data: Vec<u8> = (0..=255u8).cycle().take(1000).collect();
    let stream = [pcap::mark_record(&data, 300), pcap::mark_record(b"", 10)].concat();
    assert_eq!(stream.len(), 4 * 4 + 1000 + 4);
    let mut frames = c.handshake();
    for (i, chunk) in stream.chunks(128).enumerate() {
        frames.push(c.frame(true, TCP_ACK, 1 + 128 * i as u32, chunk));
    }
    assert_eq!(
        extract(&frames).unwrap(),
        vec![rec(0, true, &data), rec(0, true, b"")]
    );
    let split = pcap::split_records(&stream).unwrap();
    assert_eq!(split, vec![(0, data.clone()), (1016, vec![])]);
}

#[test]
fn data_on_syn_and_capture_without_syn() {
    // Data on the SYN starts at ISN + 1.
    let c = Conv {
        client_port: 703,
        isn: [50, 60],
    };
    let m = marked(&[b"fast-open"]);
    let frames = vec![
        c.frame(true, TCP_SYN, 0, &m),
        c.frame(false, TCP_SYN | TCP_ACK, 0, &[]),
    ];
    assert_eq!(extract(&frames).unwrap(), vec![rec(0, true, b"fast-open")]);

    // No handshake captured: the stream starts at the lowest sequence number seen, even when
    // the first captured segment is a later one. Records come in the order their first bytes
    // were captured.
    let m = marked(&[b"first", b"second"]);
    let frames = vec![
        c.frame(true, TCP_ACK, 509, &m[9..]),
        c.frame(true, TCP_ACK, 500, &m[..9]),
    ];
    assert_eq!(
        extract(&frames).unwrap(),
        vec![rec(0, true, b"second"), rec(0, true, b"first")]
    );
}

#[test]
fn connections_are_numbered_and_reused_ports_split() {
    let c1 = Conv {
        client_port: 800,
        isn: [100, 200],
    };
    let c2 = Conv {
        client_port: 801,
        isn: [300, 400],
    };
    // Same address/port pair as c1 after a reconnect, new initial sequence numbers.
    let c3 = Conv {
        client_port: 800,
        isn: [5000, 6000],
    };
    let mut frames = c1.handshake();
    frames.extend(c2.handshake());
    frames.push(c2.frame(true, TCP_ACK, 1, &marked(&[b"c2"])));
    frames.push(c1.frame(true, TCP_ACK, 1, &marked(&[b"c1"])));
    frames.push(c1.frame(true, TCP_FIN | TCP_ACK, 7, &[]));
    frames.extend(c3.handshake());
    frames.push(c3.frame(true, TCP_ACK, 1, &marked(&[b"c3"])));
    frames.push(c3.frame(false, TCP_ACK, 1, &marked(&[b"r3"])));
    assert_eq!(
        extract(&frames).unwrap(),
        vec![
            rec(1, true, b"c2"),
            rec(0, true, b"c1"),
            rec(2, true, b"c3"),
            rec(2, false, b"r3"),
        ]
    );
}

#[test]
fn stream_errors() {
    let c = Conv {
        client_port: 704,
        isn: [0, 0],
    };
    let m = marked(&[b"abcdefgh"]);
    // A hole.
    let mut frames = c.handshake();
    frames.push(c.frame(true, TCP_ACK, 1, &m[..4]));
    frames.push(c.frame(true, TCP_ACK, 7, &m[6..]));
    let e = extract(&frames).unwrap_err();
    assert!(e.0.contains("not captured"), "{e}");
    // A retransmission with different bytes.
    let mut frames = c.handshake();
    frames.push(c.frame(true, TCP_ACK, 1, &m));
    frames.push(c.frame(true, TCP_ACK, 3, b"XX"));
    let e = extract(&frames).unwrap_err();
    assert!(e.0.contains("differ"), "{e}");
    // A stream that ends inside a record.
    let mut frames = c.handshake();
    frames.push(c.frame(true, TCP_ACK, 1, &m[..10]));
    let e = extract(&frames).unwrap_err();
    assert!(e.0.contains("only 6 bytes left"), "{e}");
    assert!(pcap::split_records(&[0x80, 0, 0]).is_err());
    assert!(pcap::split_records(&[0, 0, 0, 1, 9]).is_err());
}

// ------------------------------------------------------------------------------------------------
// Malformed input
// ------------------------------------------------------------------------------------------------

#[test]
fn malformed_pcaps_give_errors_not_panics() {
    assert!(pcap::parse_pcap(&[]).is_err());
    assert!(pcap::parse_pcap(&[0x0a, 0x0d, 0x0d, 0x0a]).is_err());
    let mut pcapng = vec![0x0a, 0x0d, 0x0d, 0x0a];
    pcapng.resize(64, 0);
    assert!(pcap::parse_pcap(&pcapng).unwrap_err().0.contains("pcapng"));

    let input: Vec<(bool, Vec<u8>)> = vec![(true, b"hello rpc".to_vec()), (false, vec![7; 40])];
    let good = pcap::build_pcap(&input);
    // Every truncation either parses or fails cleanly.
    for n in 0..good.len() {
        let _ = pcap::extract_records(&good[..n], NFS_PORT);
    }
    // Every single-byte corruption (several values), likewise.
    for i in 0..good.len() {
        for v in [0x00, 0x01, 0x45, 0x7f, 0x80, 0xff] {
            let mut bad = good.clone();
            bad[i] = v;
            let _ = pcap::extract_records(&bad, NFS_PORT);
        }
    }
    // Every frame cut short, under every link type.
    let cap = pcap::parse_pcap(&good).unwrap();
    for lt in [
        LINKTYPE_ETHERNET,
        LINKTYPE_RAW,
        LINKTYPE_LINUX_SLL,
        LINKTYPE_LINUX_SLL2,
        12345,
    ] {
        for f in &cap.frames {
            for n in 0..=f.data.len() {
                let _ = pcap::parse_frame(lt, &f.data[..n]);
            }
        }
    }
    // Specific header errors.
    let frame = &cap.frames[3].data;
    assert!(pcap::parse_frame(LINKTYPE_ETHERNET, &frame[..frame.len() - 1]).is_err());
    let mut bad = frame.clone();
    bad[14] = 0x44; // IHL 4
    assert!(pcap::parse_frame(LINKTYPE_ETHERNET, &bad).is_err());
    let mut bad = frame.clone();
    bad[14 + 20 + 12] = 0x40; // TCP data offset 16 bytes
    assert!(pcap::parse_frame(LINKTYPE_ETHERNET, &bad).is_err());
    let mut bad = frame.clone();
    bad[14 + 6] = 0x20; // more fragments
    assert!(pcap::parse_frame(LINKTYPE_ETHERNET, &bad).is_err());
    assert!(pcap::parse_frame(12345, frame).is_err());
}

// ------------------------------------------------------------------------------------------------
// Records file
// ------------------------------------------------------------------------------------------------

#[test]
fn records_file_round_trip_and_errors() {
    let records = vec![
        rec(0, true, b"abc"),
        rec(3, false, b""),
        rec(1, true, &[9; 300]),
    ];
    let bytes = pcap::encode_records(&records);
    assert_eq!(&bytes[..8], pcap::RECORDS_MAGIC);
    assert_eq!(
        &bytes[8..20],
        &[0, 0, 0, 0, 0, 0, 0, 0, 3, b'a', b'b', b'c']
    );
    assert_eq!(pcap::decode_records(&bytes).unwrap(), records);
    for n in 0..bytes.len() {
        let r = pcap::decode_records(&bytes[..n]);
        // Cuts at record boundaries are valid files; every other cut is an error.
        if let Ok(r) = r {
            assert!([8, 20, 29].contains(&n), "cut at {n} gave {r:?}");
        }
    }
    let mut bad = bytes.clone();
    bad[8] = 2;
    assert!(pcap::decode_records(&bad).is_err());
    let path = Path::new(env!("CARGO_TARGET_TMPDIR")).join("pcap_tools_round_trip.rec");
    pcap::write_records_file(&path, &records).unwrap();
    assert_eq!(pcap::read_records_file(&path).unwrap(), records);
}

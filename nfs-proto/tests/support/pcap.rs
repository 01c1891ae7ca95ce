//! Packet plumbing for the golden tests (std only, no dependencies).
//!
//! * Reading: classic pcap files ([`parse_pcap`]; both byte orders, microsecond and nanosecond
//!   magic) with link types Ethernet, Linux cooked (SLL and SLL2) and raw IP; IPv4, IPv6 and TCP
//!   ([`parse_frame`]); TCP reassembly by sequence number ([`reassemble`]); RPC record marking
//!   ([`split_records`]); all together in [`extract_records`] / [`read_pcap_records`]. Malformed
//!   input gives an [`Error`], never a panic.
//! * The records data file ([`encode_records`], [`decode_records`], [`write_records_file`],
//!   [`read_records_file`]), format described at [`RECORDS_MAGIC`].
//! * Writing: [`write_pcap`] / [`build_pcap`] put RPC records on one synthetic
//!   Ethernet/IPv4/TCP connection to 127.0.0.1:2049 that tshark reassembles and dissects.
//!
//! Include it with `#[path = "support/pcap.rs"] mod pcap;` (from `tests/`) or
//! `#[path = "../tests/support/pcap.rs"] mod pcap;` (from `examples/`).
#![allow(dead_code)]

use std::collections::HashMap;
use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::path::Path;

/// The NFS server port; records sent to it are "from the client".
pub(crate) const NFS_PORT: u16 = 2049;

/// pcap link type: Ethernet.
pub(crate) const LINKTYPE_ETHERNET: u32 = 1;
/// pcap link type: raw IPv4 or IPv6, no link header.
pub(crate) const LINKTYPE_RAW: u32 = 101;
/// pcap link type: Linux cooked capture v1 (`any` device).
pub(crate) const LINKTYPE_LINUX_SLL: u32 = 113;
/// pcap link type: Linux cooked capture v2.
pub(crate) const LINKTYPE_LINUX_SLL2: u32 = 276;

/// TCP flag FIN.
pub(crate) const TCP_FIN: u8 = 0x01;
/// TCP flag SYN.
pub(crate) const TCP_SYN: u8 = 0x02;
/// TCP flag RST.
pub(crate) const TCP_RST: u8 = 0x04;
/// TCP flag PSH.
pub(crate) const TCP_PSH: u8 = 0x08;
/// TCP flag ACK.
pub(crate) const TCP_ACK: u8 = 0x10;

/// Record marking: the last-fragment bit of a fragment header (RFC 5531 section 11).
pub(crate) const LAST_FRAGMENT: u32 = 0x8000_0000;
/// Record marking: the largest fragment length a header can carry.
pub(crate) const MAX_FRAGMENT: usize = 0x7fff_ffff;

/// Largest TCP payload per segment written by [`build_pcap`].
pub(crate) const WRITE_MSS: usize = 1448;

/// Anything that went wrong: malformed pcap, unsupported content, I/O.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Error(pub String);

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Error {}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Self {
        Error(format!("I/O error: {e}"))
    }
}

/// Result with [`Error`].
pub(crate) type Result<T> = std::result::Result<T, Error>;

fn err<T>(msg: impl Into<String>) -> Result<T> {
    Err(Error(msg.into()))
}

fn be16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}

fn be32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

// ------------------------------------------------------------------------------------------------
// Records
// ------------------------------------------------------------------------------------------------

/// One RPC record (call or reply) seen on an NFS connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Record {
    /// Connection index: 0, 1, ... in order of each connection's first frame.
    pub conn: u32,
    /// True when the record was sent to the server port (2049).
    pub from_client: bool,
    /// The record's bytes, record marking removed (fragments concatenated).
    pub data: Vec<u8>,
}

// ------------------------------------------------------------------------------------------------
// pcap reading
// ------------------------------------------------------------------------------------------------

/// One captured frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Frame {
    /// Timestamp, seconds.
    pub ts_sec: u32,
    /// Timestamp, nanoseconds (microsecond files are scaled up).
    pub ts_nsec: u32,
    /// Length of the frame on the wire (may exceed `data.len()` when the snap length cut it).
    pub orig_len: u32,
    /// The captured bytes, starting with the link-layer header.
    pub data: Vec<u8>,
}

/// A classic pcap file, parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Capture {
    /// Link-layer header type of every frame (`LINKTYPE_*`).
    pub linktype: u32,
    /// Snap length from the file header.
    pub snaplen: u32,
    /// The frames, in file order.
    pub frames: Vec<Frame>,
}

/// Parses a classic pcap file (not pcapng). Both byte orders, microsecond (`a1b2c3d4`) and
/// nanosecond (`a1b23c4d`) magic.
pub(crate) fn parse_pcap(bytes: &[u8]) -> Result<Capture> {
    if bytes.len() < 24 {
        return err(format!(
            "pcap: file too short for a header ({} bytes)",
            bytes.len()
        ));
    }
    let magic_le = u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
    let (big_endian, nanos) = match magic_le {
        0xa1b2_c3d4 => (false, false),
        0xa1b2_3c4d => (false, true),
        0xd4c3_b2a1 => (true, false),
        0x4d3c_b2a1 => (true, true),
        0x0a0d_0d0a => {
            return err("pcap: this is a pcapng file; convert it with `editcap -F pcap`")
        }
        m => return err(format!("pcap: bad magic {m:#010x}")),
    };
    let u32_at = |at: usize| {
        let a = [bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]];
        if big_endian {
            u32::from_be_bytes(a)
        } else {
            u32::from_le_bytes(a)
        }
    };
    let u16_at = |at: usize| {
        let a = [bytes[at], bytes[at + 1]];
        if big_endian {
            u16::from_be_bytes(a)
        } else {
            u16::from_le_bytes(a)
        }
    };
    let major = u16_at(4);
    if major != 2 {
        return err(format!("pcap: unsupported version {major}.{}", u16_at(6)));
    }
    let snaplen = u32_at(16);
    // The low 16 bits are the link type; the upper bits may carry FCS information.
    let linktype = u32_at(20) & 0xffff;
    let mut frames = Vec::new();
    let mut at = 24;
    while at < bytes.len() {
        if bytes.len() - at < 16 {
            return err(format!(
                "pcap: frame {} header truncated at offset {at}",
                frames.len()
            ));
        }
        let ts_sec = u32_at(at);
        let ts_frac = u32_at(at + 4);
        let incl_len = u32_at(at + 8) as usize;
        let orig_len = u32_at(at + 12);
        at += 16;
        if incl_len > bytes.len() - at {
            return err(format!(
                "pcap: frame {} claims {incl_len} bytes but only {} remain",
                frames.len(),
                bytes.len() - at
            ));
        }
        let ts_nsec = if nanos {
            ts_frac
        } else {
            ts_frac.saturating_mul(1000)
        };
        frames.push(Frame {
            ts_sec,
            ts_nsec,
            orig_len,
            data: bytes[at..at + incl_len].to_vec(),
        });
        at += incl_len;
    }
    Ok(Capture {
        linktype,
        snaplen,
        frames,
    })
}

/// Reads and parses a classic pcap file.
pub(crate) fn read_pcap(path: impl AsRef<Path>) -> Result<Capture> {
    let path = path.as_ref();
    let bytes =
        std::fs::read(path).map_err(|e| Error(format!("reading {}: {e}", path.display())))?;
    parse_pcap(&bytes).map_err(|e| Error(format!("{}: {e}", path.display())))
}

/// A TCP segment found in a frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TcpSegment<'a> {
    /// Source address.
    pub src: IpAddr,
    /// Destination address.
    pub dst: IpAddr,
    /// Source port.
    pub src_port: u16,
    /// Destination port.
    pub dst_port: u16,
    /// Sequence number.
    pub seq: u32,
    /// Acknowledgement number.
    pub ack: u32,
    /// Flags (`TCP_*`).
    pub flags: u8,
    /// TCP payload.
    pub payload: &'a [u8],
}

const ETHERTYPE_IPV4: u16 = 0x0800;
const ETHERTYPE_IPV6: u16 = 0x86dd;

/// Strips the link-layer header: `(ethertype, network-layer bytes)`, or `None` when the frame
/// is not IP.
fn link_payload(linktype: u32, frame: &[u8]) -> Result<Option<(u16, &[u8])>> {
    match linktype {
        LINKTYPE_ETHERNET => {
            if frame.len() < 14 {
                return err(format!("Ethernet frame too short ({} bytes)", frame.len()));
            }
            let mut ethertype = be16(frame, 12);
            let mut at = 14;
            // 802.1Q / 802.1ad / QinQ tags.
            while matches!(ethertype, 0x8100 | 0x88a8 | 0x9100) {
                if frame.len() < at + 4 {
                    return err("Ethernet VLAN tag truncated");
                }
                ethertype = be16(frame, at + 2);
                at += 4;
            }
            Ok(Some((ethertype, &frame[at..])))
        }
        LINKTYPE_LINUX_SLL => {
            if frame.len() < 16 {
                return err(format!("SLL frame too short ({} bytes)", frame.len()));
            }
            Ok(Some((be16(frame, 14), &frame[16..])))
        }
        LINKTYPE_LINUX_SLL2 => {
            if frame.len() < 20 {
                return err(format!("SLL2 frame too short ({} bytes)", frame.len()));
            }
            Ok(Some((be16(frame, 0), &frame[20..])))
        }
        LINKTYPE_RAW => match frame.first().map(|b| b >> 4) {
            Some(4) => Ok(Some((ETHERTYPE_IPV4, frame))),
            Some(6) => Ok(Some((ETHERTYPE_IPV6, frame))),
            Some(v) => err(format!("raw IP frame with IP version {v}")),
            None => err("empty raw IP frame"),
        },
        other => err(format!("unsupported pcap link type {other}")),
    }
    .map(|r| r.filter(|(t, _)| matches!(*t, ETHERTYPE_IPV4 | ETHERTYPE_IPV6)))
}

/// Parses one frame down to TCP. `Ok(None)` for frames that are not IP/TCP (ARP, UDP, ...);
/// an error for malformed or truncated IP/TCP headers, a truncated TCP payload, or IP
/// fragments carrying TCP (not supported).
pub(crate) fn parse_frame(linktype: u32, frame: &[u8]) -> Result<Option<TcpSegment<'_>>> {
    let Some((ethertype, ip)) = link_payload(linktype, frame)? else {
        return Ok(None);
    };
    let (src, dst, tcp) = if ethertype == ETHERTYPE_IPV4 {
        if ip.len() < 20 {
            return err(format!("IPv4 header truncated ({} bytes)", ip.len()));
        }
        if ip[0] >> 4 != 4 {
            return err(format!("IPv4 header with version {}", ip[0] >> 4));
        }
        let ihl = usize::from(ip[0] & 0x0f) * 4;
        if ihl < 20 || ihl > ip.len() {
            return err(format!(
                "IPv4 header length {ihl} invalid ({} bytes)",
                ip.len()
            ));
        }
        let total = usize::from(be16(ip, 2));
        // Total length 0: a segmentation-offload super-packet; take what was captured.
        let total = if total == 0 { ip.len() } else { total };
        if total < ihl {
            return err(format!("IPv4 total length {total} < header length {ihl}"));
        }
        if total > ip.len() {
            return err(format!(
                "IPv4 packet truncated: total length {total}, {} bytes captured",
                ip.len()
            ));
        }
        if ip[9] != 6 {
            return Ok(None);
        }
        let frag = be16(ip, 6);
        if frag & 0x2000 != 0 || frag & 0x1fff != 0 {
            return err("fragmented IPv4 packet carrying TCP (not supported)");
        }
        let src = IpAddr::V4(Ipv4Addr::new(ip[12], ip[13], ip[14], ip[15]));
        let dst = IpAddr::V4(Ipv4Addr::new(ip[16], ip[17], ip[18], ip[19]));
        (src, dst, &ip[ihl..total])
    } else {
        if ip.len() < 40 {
            return err(format!("IPv6 header truncated ({} bytes)", ip.len()));
        }
        if ip[0] >> 4 != 6 {
            return err(format!("IPv6 header with version {}", ip[0] >> 4));
        }
        let plen = usize::from(be16(ip, 4));
        // Payload length 0: jumbogram or offload super-packet; take what was captured.
        let end = if plen == 0 { ip.len() } else { 40 + plen };
        if end > ip.len() {
            return err(format!(
                "IPv6 packet truncated: length {end}, {} bytes captured",
                ip.len()
            ));
        }
        let mut a = [0u8; 16];
        a.copy_from_slice(&ip[8..24]);
        let src = IpAddr::V6(Ipv6Addr::from(a));
        a.copy_from_slice(&ip[24..40]);
        let dst = IpAddr::V6(Ipv6Addr::from(a));
        let mut next = ip[6];
        let mut at = 40;
        loop {
            match next {
                6 => break,
                // Hop-by-hop, routing, destination options.
                0 | 43 | 60 => {
                    if end - at < 8 {
                        return err("IPv6 extension header truncated");
                    }
                    let len = (usize::from(ip[at + 1]) + 1) * 8;
                    if end - at < len {
                        return err("IPv6 extension header truncated");
                    }
                    next = ip[at];
                    at += len;
                }
                // Authentication header.
                51 => {
                    if end - at < 8 {
                        return err("IPv6 AH header truncated");
                    }
                    let len = (usize::from(ip[at + 1]) + 2) * 4;
                    if end - at < len {
                        return err("IPv6 AH header truncated");
                    }
                    next = ip[at];
                    at += len;
                }
                44 => return err("fragmented IPv6 packet (not supported)"),
                _ => return Ok(None),
            }
        }
        (src, dst, &ip[at..end])
    };
    if tcp.len() < 20 {
        return err(format!("TCP header truncated ({} bytes)", tcp.len()));
    }
    let doff = usize::from(tcp[12] >> 4) * 4;
    if doff < 20 || doff > tcp.len() {
        return err(format!(
            "TCP header length {doff} invalid ({} bytes)",
            tcp.len()
        ));
    }
    Ok(Some(TcpSegment {
        src,
        dst,
        src_port: be16(tcp, 0),
        dst_port: be16(tcp, 2),
        seq: be32(tcp, 4),
        ack: be32(tcp, 8),
        flags: tcp[13],
        payload: &tcp[doff..],
    }))
}

// ------------------------------------------------------------------------------------------------
// TCP reassembly
// ------------------------------------------------------------------------------------------------

/// One direction of one TCP connection, reassembled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Stream {
    /// Connection index: 0, 1, ... in order of each connection's first frame.
    pub conn: u32,
    /// True for the direction towards the server port.
    pub from_client: bool,
    /// The bytes in sequence order, without gaps or duplicates.
    pub data: Vec<u8>,
    /// For each byte of `data`, the index of the first frame (in capture order) that carried it.
    pub first_frame: Vec<u32>,
}

#[derive(Default)]
struct Direction {
    /// Sequence number of the SYN, if one was seen.
    isn: Option<u32>,
    /// (sequence number of the first payload byte, frame index, payload).
    segments: Vec<(u32, u32, Vec<u8>)>,
}

struct Conn {
    /// [client -> server, server -> client].
    dirs: [Direction; 2],
}

type ConnKey = (IpAddr, u16, IpAddr, u16);

/// Reassembles every TCP connection that has `server_port` at one end, in both directions.
///
/// Segments are placed by sequence number: out-of-order segments are put in order,
/// retransmitted and overlapping bytes are kept once (an error if they differ), and a SYN
/// consumes one sequence number. A new SYN with a different initial sequence number on the
/// same address/port pair starts a new connection. Without a SYN the stream starts at the
/// lowest sequence number seen. A hole in a stream (bytes never captured) is an error.
///
/// Streams are returned ordered by connection index, client direction first; directions that
/// carried no payload are omitted.
pub(crate) fn reassemble(capture: &Capture, server_port: u16) -> Result<Vec<Stream>> {
    let mut conns: Vec<Conn> = Vec::new();
    let mut current: HashMap<ConnKey, usize> = HashMap::new();
    for (index, frame) in capture.frames.iter().enumerate() {
        let frame_no = index as u32;
        let seg = parse_frame(capture.linktype, &frame.data)
            .map_err(|e| Error(format!("frame {} (1-based): {e}", index + 1)))?;
        let Some(seg) = seg else { continue };
        let dir = if seg.dst_port == server_port {
            0
        } else if seg.src_port == server_port {
            1
        } else {
            continue;
        };
        let key = if dir == 0 {
            (seg.src, seg.src_port, seg.dst, seg.dst_port)
        } else {
            (seg.dst, seg.dst_port, seg.src, seg.src_port)
        };
        let syn = seg.flags & TCP_SYN != 0;
        let new_conn = match current.get(&key) {
            None => true,
            Some(&c) => {
                let d = &conns[c].dirs[dir];
                syn && match d.isn {
                    Some(isn) => isn != seg.seq,
                    None => !d.segments.is_empty(),
                }
            }
        };
        if new_conn {
            current.insert(key, conns.len());
            conns.push(Conn {
                dirs: [Direction::default(), Direction::default()],
            });
        }
        let d = &mut conns[current[&key]].dirs[dir];
        if syn {
            d.isn = Some(seg.seq);
        }
        if !seg.payload.is_empty() {
            let data_seq = seg.seq.wrapping_add(u32::from(syn));
            d.segments.push((data_seq, frame_no, seg.payload.to_vec()));
        }
    }

    let mut streams = Vec::new();
    for (c, conn) in conns.into_iter().enumerate() {
        for (dir, d) in conn.dirs.into_iter().enumerate() {
            if d.segments.is_empty() {
                continue;
            }
            let from_client = dir == 0;
            let what = format!(
                "connection {c} {}",
                if from_client {
                    "client->server"
                } else {
                    "server->client"
                }
            );
            let start = match d.isn {
                Some(isn) => isn.wrapping_add(1),
                None => {
                    let r = d.segments[0].0;
                    let min = d
                        .segments
                        .iter()
                        .map(|s| s.0.wrapping_sub(r) as i32)
                        .min()
                        .unwrap_or(0);
                    r.wrapping_add(min as u32)
                }
            };
            // (stream offset, frame, payload) with bytes before the stream start cut off.
            let mut placed: Vec<(u64, u32, &[u8])> = Vec::new();
            for (seq, frame_no, payload) in &d.segments {
                let rel = seq.wrapping_sub(start);
                if rel >= 0x8000_0000 {
                    let skip = (u32::MAX - rel) as usize + 1;
                    if skip < payload.len() {
                        placed.push((0, *frame_no, &payload[skip..]));
                    }
                } else {
                    placed.push((u64::from(rel), *frame_no, payload));
                }
            }
            placed.sort_by_key(|&(off, frame_no, _)| (off, frame_no));
            let mut data: Vec<u8> = Vec::new();
            for &(off, frame_no, payload) in &placed {
                let end = data.len() as u64;
                if off > end {
                    return err(format!(
                        "{what}: bytes {end}..{off} of the stream were not captured \
                         (next segment in frame {})",
                        frame_no + 1
                    ));
                }
                let off = off as usize;
                let overlap = (data.len() - off).min(payload.len());
                if data[off..off + overlap] != payload[..overlap] {
                    return err(format!(
                        "{what}: retransmitted bytes at stream offset {off} (frame {}) differ \
                         from the first copy",
                        frame_no + 1
                    ));
                }
                data.extend_from_slice(&payload[overlap..]);
            }
            let mut first_frame = vec![u32::MAX; data.len()];
            for &(off, frame_no, payload) in &placed {
                let off = off as usize;
                for f in &mut first_frame[off..off + payload.len()] {
                    *f = (*f).min(frame_no);
                }
            }
            streams.push(Stream {
                conn: c as u32,
                from_client,
                data,
                first_frame,
            });
        }
    }
    Ok(streams)
}

// ------------------------------------------------------------------------------------------------
// Record marking
// ------------------------------------------------------------------------------------------------

/// Splits a byte stream into RPC records (RFC 5531 section 11 record marking): each fragment
/// has a 4-byte big-endian header whose top bit marks the last fragment of a record and whose
/// other 31 bits give the fragment length; a record is its fragments concatenated.
///
/// Returns `(offset of the record's first header in the stream, record bytes)`. A stream that
/// ends inside a record is an error.
pub(crate) fn split_records(stream: &[u8]) -> Result<Vec<(usize, Vec<u8>)>> {
    let mut records = Vec::new();
    let mut at = 0;
    while at < stream.len() {
        let start = at;
        let mut record = Vec::new();
        loop {
            if stream.len() - at < 4 {
                return err(format!(
                    "record at stream offset {start}: fragment header at offset {at} truncated"
                ));
            }
            let header = be32(stream, at);
            let len = (header & !LAST_FRAGMENT) as usize;
            at += 4;
            if stream.len() - at < len {
                return err(format!(
                    "record at stream offset {start}: fragment of {len} bytes at offset {at}, \
                     only {} bytes left in the stream",
                    stream.len() - at
                ));
            }
            record.extend_from_slice(&stream[at..at + len]);
            at += len;
            if header & LAST_FRAGMENT != 0 {
                break;
            }
        }
        records.push((start, record));
    }
    Ok(records)
}

/// Adds record marking to one record: fragments of at most `max_fragment` bytes (clamped to
/// 1..=[`MAX_FRAGMENT`]), the last one flagged. An empty record is one empty last fragment.
pub(crate) fn mark_record(record: &[u8], max_fragment: usize) -> Vec<u8> {
    let max_fragment = max_fragment.clamp(1, MAX_FRAGMENT);
    let mut out = Vec::with_capacity(record.len() + 4 * (record.len() / max_fragment + 1));
    let mut rest = record;
    loop {
        let n = rest.len().min(max_fragment);
        let last = n == rest.len();
        let header = n as u32 | if last { LAST_FRAGMENT } else { 0 };
        out.extend_from_slice(&header.to_be_bytes());
        out.extend_from_slice(&rest[..n]);
        rest = &rest[n..];
        if last {
            return out;
        }
    }
}

// ------------------------------------------------------------------------------------------------
// Extraction
// ------------------------------------------------------------------------------------------------

/// Every RPC record of every TCP connection to `server_port` in a capture, ordered by the
/// capture position of each record's first byte (the first frame that carried it; ties, i.e.
/// several records starting in one frame, in stream order).
pub(crate) fn extract_records_from_capture(
    capture: &Capture,
    server_port: u16,
) -> Result<Vec<Record>> {
    let mut keyed = Vec::new();
    for stream in reassemble(capture, server_port)? {
        let what = format!(
            "connection {} {}",
            stream.conn,
            if stream.from_client {
                "client->server"
            } else {
                "server->client"
            }
        );
        let records = split_records(&stream.data).map_err(|e| Error(format!("{what}: {e}")))?;
        for (offset, data) in records {
            let frame = stream.first_frame[offset];
            keyed.push((
                (frame, stream.conn, !stream.from_client, offset),
                Record {
                    conn: stream.conn,
                    from_client: stream.from_client,
                    data,
                },
            ));
        }
    }
    keyed.sort_by_key(|(k, _)| *k);
    Ok(keyed.into_iter().map(|(_, r)| r).collect())
}

/// [`extract_records_from_capture`] on the bytes of a pcap file.
pub(crate) fn extract_records(pcap_bytes: &[u8], server_port: u16) -> Result<Vec<Record>> {
    extract_records_from_capture(&parse_pcap(pcap_bytes)?, server_port)
}

/// The RPC records of the NFS (port 2049) connections in a pcap file.
pub(crate) fn read_pcap_records(path: impl AsRef<Path>) -> Result<Vec<Record>> {
    let path = path.as_ref();
    extract_records_from_capture(&read_pcap(path)?, NFS_PORT)
        .map_err(|e| Error(format!("{}: {e}", path.display())))
}

// ------------------------------------------------------------------------------------------------
// Records data file
// ------------------------------------------------------------------------------------------------

/// The records data file (`.rec`): this 8-byte magic, then for each record in capture order:
///
/// | bytes | content |
/// |---|---|
/// | 1 | direction: 0 = client -> server, 1 = server -> client |
/// | 4 | connection index, big-endian u32 |
/// | 4 | record length N, big-endian u32 |
/// | N | the record without record marking |
///
/// and nothing after the last record.
pub(crate) const RECORDS_MAGIC: &[u8; 8] = b"RPCREC1\n";

/// Encodes records in the `.rec` format ([`RECORDS_MAGIC`]).
pub(crate) fn encode_records(records: &[Record]) -> Vec<u8> {
    let total: usize = records.iter().map(|r| 9 + r.data.len()).sum();
    let mut out = Vec::with_capacity(RECORDS_MAGIC.len() + total);
    out.extend_from_slice(RECORDS_MAGIC);
    for r in records {
        let len = u32::try_from(r.data.len()).expect("record longer than 4 GiB");
        out.push(u8::from(!r.from_client));
        out.extend_from_slice(&r.conn.to_be_bytes());
        out.extend_from_slice(&len.to_be_bytes());
        out.extend_from_slice(&r.data);
    }
    out
}

/// Decodes the `.rec` format ([`RECORDS_MAGIC`]).
pub(crate) fn decode_records(bytes: &[u8]) -> Result<Vec<Record>> {
    if !bytes.starts_with(RECORDS_MAGIC) {
        return err("records file: bad magic");
    }
    let mut at = RECORDS_MAGIC.len();
    let mut records = Vec::new();
    while at < bytes.len() {
        if bytes.len() - at < 9 {
            return err(format!(
                "records file: record {} header truncated at offset {at}",
                records.len()
            ));
        }
        let from_client = match bytes[at] {
            0 => true,
            1 => false,
            d => {
                return err(format!(
                    "records file: record {} has direction byte {d}",
                    records.len()
                ))
            }
        };
        let conn = be32(bytes, at + 1);
        let len = be32(bytes, at + 5) as usize;
        at += 9;
        if bytes.len() - at < len {
            return err(format!(
                "records file: record {} of {len} bytes truncated at offset {at}",
                records.len()
            ));
        }
        records.push(Record {
            conn,
            from_client,
            data: bytes[at..at + len].to_vec(),
        });
        at += len;
    }
    Ok(records)
}

/// Writes records to a `.rec` file.
pub(crate) fn write_records_file(path: impl AsRef<Path>, records: &[Record]) -> Result<()> {
    let path = path.as_ref();
    std::fs::write(path, encode_records(records))
        .map_err(|e| Error(format!("writing {}: {e}", path.display())))
}

/// Reads a `.rec` file.
pub(crate) fn read_records_file(path: impl AsRef<Path>) -> Result<Vec<Record>> {
    let path = path.as_ref();
    let bytes =
        std::fs::read(path).map_err(|e| Error(format!("reading {}: {e}", path.display())))?;
    decode_records(&bytes).map_err(|e| Error(format!("{}: {e}", path.display())))
}

// ------------------------------------------------------------------------------------------------
// pcap writing
// ------------------------------------------------------------------------------------------------

/// Addresses and header fields of one synthetic Ethernet/IPv4/TCP frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TcpFrameSpec {
    /// Source IPv4 address.
    pub src: [u8; 4],
    /// Destination IPv4 address.
    pub dst: [u8; 4],
    /// Source port.
    pub src_port: u16,
    /// Destination port.
    pub dst_port: u16,
    /// Sequence number.
    pub seq: u32,
    /// Acknowledgement number.
    pub ack: u32,
    /// Flags (`TCP_*`).
    pub flags: u8,
    /// Receive window.
    pub window: u16,
    /// IPv4 identification field.
    pub ip_id: u16,
}

/// The Internet checksum (RFC 1071) of `data`, starting from partial sum `sum`.
pub(crate) fn internet_checksum(data: &[u8], mut sum: u32) -> u16 {
    let mut chunks = data.chunks_exact(2);
    for c in &mut chunks {
        sum += u32::from(u16::from_be_bytes([c[0], c[1]]));
    }
    if let [last] = chunks.remainder() {
        sum += u32::from(*last) << 8;
    }
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// TCP checksum over the IPv4 pseudo-header and `segment` (TCP header with a zero checksum
/// field, plus payload).
pub(crate) fn tcp_checksum_v4(src: [u8; 4], dst: [u8; 4], segment: &[u8]) -> u16 {
    let mut pseudo = [0u8; 12];
    pseudo[..4].copy_from_slice(&src);
    pseudo[4..8].copy_from_slice(&dst);
    pseudo[9] = 6;
    pseudo[10..12].copy_from_slice(&(segment.len() as u16).to_be_bytes());
    let mut sum = 0u32;
    for c in pseudo.chunks_exact(2) {
        sum += u32::from(u16::from_be_bytes([c[0], c[1]]));
    }
    internet_checksum(segment, sum)
}

impl TcpFrameSpec {
    /// Builds the Ethernet frame (zero MAC addresses, as on loopback) carrying IPv4 (DF set,
    /// TTL 64, header checksum) and TCP (20-byte header, checksum) with `payload`.
    ///
    /// Panics if the payload does not fit one IPv4 packet.
    pub(crate) fn ethernet_frame(&self, payload: &[u8]) -> Vec<u8> {
        let total = 20 + 20 + payload.len();
        let total = u16::try_from(total).expect("payload too large for one IPv4 packet");
        let mut f = Vec::with_capacity(14 + usize::from(total));
        // Ethernet: destination, source, type.
        f.extend_from_slice(&[0; 12]);
        f.extend_from_slice(&ETHERTYPE_IPV4.to_be_bytes());
        // IPv4.
        let ip_start = f.len();
        f.extend_from_slice(&[0x45, 0]);
        f.extend_from_slice(&total.to_be_bytes());
        f.extend_from_slice(&self.ip_id.to_be_bytes());
        f.extend_from_slice(&0x4000u16.to_be_bytes()); // DF
        f.extend_from_slice(&[64, 6, 0, 0]); // TTL, protocol, checksum
        f.extend_from_slice(&self.src);
        f.extend_from_slice(&self.dst);
        let ip_sum = internet_checksum(&f[ip_start..ip_start + 20], 0);
        f[ip_start + 10..ip_start + 12].copy_from_slice(&ip_sum.to_be_bytes());
        // TCP.
        let tcp_start = f.len();
        f.extend_from_slice(&self.src_port.to_be_bytes());
        f.extend_from_slice(&self.dst_port.to_be_bytes());
        f.extend_from_slice(&self.seq.to_be_bytes());
        f.extend_from_slice(&self.ack.to_be_bytes());
        f.extend_from_slice(&[5 << 4, self.flags]);
        f.extend_from_slice(&self.window.to_be_bytes());
        f.extend_from_slice(&[0, 0, 0, 0]); // checksum, urgent pointer
        f.extend_from_slice(payload);
        let tcp_sum = tcp_checksum_v4(self.src, self.dst, &f[tcp_start..]);
        f[tcp_start + 16..tcp_start + 18].copy_from_slice(&tcp_sum.to_be_bytes());
        f
    }
}

/// A classic pcap file (little-endian, microsecond timestamps, snap length 262144) holding
/// `frames` of link type `linktype`, timestamped 100 microseconds apart.
pub(crate) fn pcap_bytes(linktype: u32, frames: &[Vec<u8>]) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend_from_slice(&0xa1b2_c3d4u32.to_le_bytes());
    out.extend_from_slice(&2u16.to_le_bytes());
    out.extend_from_slice(&4u16.to_le_bytes());
    out.extend_from_slice(&0u32.to_le_bytes()); // thiszone
    out.extend_from_slice(&0u32.to_le_bytes()); // sigfigs
    out.extend_from_slice(&262_144u32.to_le_bytes());
    out.extend_from_slice(&linktype.to_le_bytes());
    let base_sec = 1_700_000_000u32;
    for (i, frame) in frames.iter().enumerate() {
        let us = i as u64 * 100;
        let sec = base_sec + (us / 1_000_000) as u32;
        let usec = (us % 1_000_000) as u32;
        let len = u32::try_from(frame.len()).expect("frame longer than 4 GiB");
        out.extend_from_slice(&sec.to_le_bytes());
        out.extend_from_slice(&usec.to_le_bytes());
        out.extend_from_slice(&len.to_le_bytes());
        out.extend_from_slice(&len.to_le_bytes());
        out.extend_from_slice(frame);
    }
    out
}

/// Client port of the synthetic connection written by [`build_pcap`].
pub(crate) const WRITE_CLIENT_PORT: u16 = 797;
const WRITE_CLIENT_ISN: u32 = 0x1000_0000;
const WRITE_SERVER_ISN: u32 = 0x2000_0000;
/// The writer has the receiver acknowledge before more than this many bytes are in flight
/// (the window is 65535, unscaled).
const WRITE_MAX_IN_FLIGHT: u32 = 32 * 1024;

/// Builds synthetic TCP conversations frame by frame with consistent sequence numbers.
struct TcpWriter {
    frames: Vec<Vec<u8>>,
    /// Next sequence number of [client, server].
    next_seq: [u32; 2],
    /// Highest sequence number of [client, server] acknowledged by the peer.
    acked: [u32; 2],
    ip_id: [u16; 2],
}

impl TcpWriter {
    fn send(&mut self, side: usize, flags: u8, payload: &[u8]) {
        let peer = 1 - side;
        let ip = [127, 0, 0, 1];
        let ports = [WRITE_CLIENT_PORT, NFS_PORT];
        let spec = TcpFrameSpec {
            src: ip,
            dst: ip,
            src_port: ports[side],
            dst_port: ports[peer],
            seq: self.next_seq[side],
            ack: if flags & TCP_ACK != 0 {
                self.next_seq[peer]
            } else {
                0
            },
            flags,
            window: 65535,
            ip_id: self.ip_id[side],
        };
        self.frames.push(spec.ethernet_frame(payload));
        self.ip_id[side] = self.ip_id[side].wrapping_add(1);
        let consumed = payload.len() as u32 + u32::from(flags & (TCP_SYN | TCP_FIN) != 0);
        self.next_seq[side] = self.next_seq[side].wrapping_add(consumed);
        if flags & TCP_ACK != 0 {
            self.acked[peer] = self.next_seq[peer];
        }
    }

    fn send_data(&mut self, side: usize, data: &[u8]) {
        let chunks: Vec<&[u8]> = data.chunks(WRITE_MSS).collect();
        let n = chunks.len();
        for (i, chunk) in chunks.into_iter().enumerate() {
            let in_flight = self.next_seq[side].wrapping_sub(self.acked[side]);
            if in_flight + chunk.len() as u32 > WRITE_MAX_IN_FLIGHT {
                self.send(1 - side, TCP_ACK, &[]);
            }
            let push = if i + 1 == n { TCP_PSH } else { 0 };
            self.send(side, TCP_ACK | push, chunk);
        }
    }
}

/// A pcap (Ethernet) of one TCP connection between 127.0.0.1:797 and 127.0.0.1:2049 carrying
/// `records` (`(from_client, record bytes without marking)`) in order: a three-way handshake,
/// each record with a record-marking header in segments of at most [`WRITE_MSS`] bytes (the
/// receiver acknowledges before 32 KiB are in flight), and a FIN exchange. Sequence and
/// acknowledgement numbers and the IPv4 and TCP checksums are correct.
pub(crate) fn build_pcap(records: &[(bool, Vec<u8>)]) -> Vec<u8> {
    let mut w = TcpWriter {
        frames: Vec::new(),
        next_seq: [WRITE_CLIENT_ISN, WRITE_SERVER_ISN],
        acked: [WRITE_CLIENT_ISN, WRITE_SERVER_ISN],
        ip_id: [0x1000, 0x8000],
    };
    w.send(0, TCP_SYN, &[]);
    w.send(1, TCP_SYN | TCP_ACK, &[]);
    w.send(0, TCP_ACK, &[]);
    for (from_client, record) in records {
        let side = if *from_client { 0 } else { 1 };
        w.send_data(side, &mark_record(record, MAX_FRAGMENT));
    }
    w.send(0, TCP_FIN | TCP_ACK, &[]);
    w.send(1, TCP_FIN | TCP_ACK, &[]);
    w.send(0, TCP_ACK, &[]);
    pcap_bytes(LINKTYPE_ETHERNET, &w.frames)
}

/// Writes [`build_pcap`]`(records)` to `path`.
pub(crate) fn write_pcap(path: impl AsRef<Path>, records: &[(bool, Vec<u8>)]) -> Result<()> {
    let path = path.as_ref();
    std::fs::write(path, build_pcap(records))
        .map_err(|e| Error(format!("writing {}: {e}", path.display())))
}

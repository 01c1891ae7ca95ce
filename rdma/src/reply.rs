//! Shaping a reply for RPC-over-RDMA (RFC 8166 section 3.5, RFC 8267): which bytes of an
//! encoded COMPOUND reply are DDP-eligible data (READ's data, READLINK's target) that go to
//! the Write chunks the call offered, and what is left for the inline message or the Reply
//! chunk.
//!
//! A moved item leaves its XDR length word in the message and takes its bytes and their XDR
//! padding out (section 3.4.5, as Linux's server does): the requester puts the data back at
//! that place from its Write chunk.

use std::ops::Range;

use bytes::Bytes;
use nfs_proto::nfs4::{NfsOpnum4, NfsResop4, NfsStat4, ReadLinkRes, ReadRes};
use nfs_proto::rdma::WriteChunk;
use nfs_proto::rpc::{AcceptStat, MsgBody, ReplyBody, RpcMsg};
use nfs_proto::xdr::{Decoder, Utf8String, Xdr};

/// Most results a reply is searched through (a COMPOUND is bounded well below this by the
/// server's own limits).
const MAX_RESULTS: u32 = 1024;

/// The byte ranges of the DDP-eligible items of `reply` (a whole encoded RPC reply), in
/// order: each range is an item's data, after its length word, without padding. A reply that
/// is not a successful COMPOUND reply (a NULL reply, an error) has none.
#[cfg(test)]
pub(crate) fn ddp_items(reply: &Bytes) -> Vec<Range<usize>> {
    ddp_items_around(reply, &[]).unwrap_or_default()
}

/// A run of a reply left out of its staged copy: READ data already in registered memory,
/// which is RDMA-written from where it is. `at` is where it would be in the staged bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Gap {
    pub at: usize,
    pub len: usize,
}

/// The DDP-eligible items ([`ddp_items`]) of a reply of which `staged` holds everything but
/// the `gaps` (in order), as ranges of the whole reply. The gaps are not decoded: each must
/// sit exactly where a READ result's data does, with that length, or the answer is `None`
/// (the caller then stages the whole reply and decodes it without gaps).
pub(crate) fn ddp_items_around(staged: &Bytes, gaps: &[Gap]) -> Option<Vec<Range<usize>>> {
    let none = || gaps.is_empty().then(Vec::new);
    let Ok((msg, body)) = RpcMsg::decode_header(staged.clone()) else {
        return none();
    };
    match msg.body {
        MsgBody::Reply(ReplyBody::Accepted(a)) if a.stat == AcceptStat::Success => {}
        _ => return none(),
    }
    let body_at = staged.len() - body.len();
    let mut dec = Decoder::new(body);
    // COMPOUND4res: status, tag, then the counted results, decoded one at a time so that an
    // undecodable result (never ours) just ends the search.
    let (Ok(_status), Ok(_tag), Ok(count)) = (
        NfsStat4::decode(&mut dec),
        Utf8String::decode(&mut dec),
        dec.get_u32(),
    ) else {
        return none();
    };
    let mut items = Vec::new();
    // Gaps passed, and their bytes: a staged position plus `moved` is a reply position.
    let (mut next, mut moved) = (0, 0);
    for _ in 0..count.min(MAX_RESULTS) {
        if let Some(gap) = gaps.get(next) {
            if let Some(after) = read_data_at(&dec, body_at, *gap) {
                items.push(gap.at + moved..gap.at + moved + gap.len);
                moved += gap.len;
                next += 1;
                dec = after;
                continue;
            }
        }
        let Ok(res) = NfsResop4::decode(&mut dec) else {
            break;
        };
        let end = body_at + dec.position();
        if gaps.get(next).is_some_and(|g| g.at < end) {
            // A gap inside a result that is not a READ's data.
            return None;
        }
        let len = match &res {
            NfsResop4::Read(ReadRes::Ok(ok)) => ok.data.len(),
            NfsResop4::ReadLink(ReadLinkRes::Ok(ok)) => ok.link.len(),
            _ => continue,
        };
        // The item is the last field of its result: it ends, padded, where the result ends.
        let start = end - (len + pad(len)) + moved;
        items.push(start..start + len);
    }
    (next == gaps.len()).then_some(items)
}

/// The decoder past a successful READ result whose data is `gap` (its XDR padding, which
/// the encoder writes after the data, is in the staged bytes); `None` when the next result
/// is not that.
fn read_data_at(dec: &Decoder, body_at: usize, gap: Gap) -> Option<Decoder> {
    let mut look = dec.clone();
    let (op, status) = (look.get_u32().ok()?, look.get_u32().ok()?);
    if op != NfsOpnum4::OP_READ.0 || status != NfsStat4::NFS4_OK.0 {
        return None;
    }
    look.get_bool().ok()?;
    let len = look.get_u32().ok()? as usize;
    if len != gap.len || body_at + look.position() != gap.at {
        return None;
    }
    look.check_padding(len).ok()?;
    Some(look)
}

/// XDR padding after `len` bytes.
fn pad(len: usize) -> usize {
    (4 - len % 4) % 4
}

/// How a reply goes out: the items placed in Write chunks (with the bytes each chunk got),
/// and the ranges of the reply that remain, in order.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Shape {
    /// For each offered Write chunk, in order: the reply range written into it, if any.
    pub placed: Vec<Option<Range<usize>>>,
    /// The reply without the placed items (and their padding): ranges of the reply.
    pub rest: Vec<Range<usize>>,
}

impl Shape {
    /// Bytes left for the inline message or the Reply chunk.
    pub(crate) fn rest_len(&self) -> usize {
        self.rest.iter().map(|r| r.end - r.start).sum()
    }
}

/// Places the `items` of a reply of `len` bytes into the offered `writes`: the n-th item
/// goes to the n-th Write chunk when it fits there; an item without a chunk, or too large for
/// its chunk, stays in the message (RFC 8267: it then goes inline or in the Reply chunk).
pub(crate) fn shape(len: usize, items: &[Range<usize>], writes: &[WriteChunk]) -> Shape {
    let mut placed = vec![None; writes.len()];
    let mut rest = Vec::new();
    let mut at = 0;
    for (i, item) in items.iter().enumerate() {
        let Some(chunk) = writes.get(i) else {
            break;
        };
        if (item.end - item.start) as u64 > chunk.total_length() || item.end > len {
            continue;
        }
        let padded_end = (item.end + (4 - (item.end - item.start) % 4) % 4).min(len);
        if item.start > at {
            rest.push(at..item.start);
        }
        at = padded_end;
        placed[i] = Some(item.clone());
    }
    if at < len {
        rest.push(at..len);
    }
    Shape { placed, rest }
}

/// Splits `len` bytes over the segments of `chunk`, in order: (segment index, offset in the
/// data, bytes) for each segment that gets some. The caller checked that they fit.
pub(crate) fn spread(chunk: &WriteChunk, len: usize) -> Vec<(usize, usize, usize)> {
    let mut out = Vec::new();
    let mut done = 0usize;
    for (i, seg) in chunk.segments.iter().enumerate() {
        if done == len {
            break;
        }
        let n = (seg.length as usize).min(len - done);
        if n > 0 {
            out.push((i, done, n));
            done += n;
        }
    }
    out
}

/// `chunk` as returned in a reply: each segment's length set to the bytes written into it
/// (RFC 8166 section 4.3.2).
pub(crate) fn returned(chunk: &WriteChunk, written: usize) -> WriteChunk {
    let mut left = written;
    WriteChunk {
        segments: chunk
            .segments
            .iter()
            .map(|s| {
                let n = (s.length as usize).min(left);
                left -= n;
                nfs_proto::rdma::RdmaSegment {
                    length: n as u32,
                    ..*s
                }
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nfs_proto::nfs4::{Compound4Res, ReadResOk};
    use nfs_proto::rdma::RdmaSegment;
    use nfs_proto::rpc::OpaqueAuth;
    use nfs_proto::xdr::Encoder;

    /// A successful COMPOUND reply of `results`, as the pieces the encoder makes (large
    /// payloads on their own).
    fn pieces_with(results: Vec<NfsResop4>) -> Vec<Bytes> {
        let res = Compound4Res {
            status: NfsStat4::NFS4_OK,
            tag: Utf8String::from("t"),
            resarray: results,
        };
        let mut body = Encoder::new();
        res.encode(&mut body);
        let mut e = Encoder::new();
        RpcMsg::reply_success(7, OpaqueAuth::none()).encode_with_pieces(&mut e, body.into_pieces());
        e.into_pieces()
    }

    /// The same reply in one buffer.
    fn reply_with(results: Vec<NfsResop4>) -> Bytes {
        pieces_with(results).concat().into()
    }

    fn read(data: &[u8]) -> NfsResop4 {
        NfsResop4::Read(ReadRes::Ok(ReadResOk {
            eof: false,
            data: Bytes::copy_from_slice(data),
        }))
    }

    fn chunk(lens: &[u32]) -> WriteChunk {
        WriteChunk {
            segments: lens
                .iter()
                .map(|&length| RdmaSegment {
                    handle: 1,
                    length,
                    offset: 0,
                })
                .collect(),
        }
    }

    #[test]
    fn finds_read_data_of_every_size_and_alignment() {
        for n in [0usize, 1, 3, 4, 5, 511, 512, 513, 70_001] {
            let data: Vec<u8> = (0..n).map(|i| (i * 7 + 1) as u8).collect();
            let reply = reply_with(vec![
                NfsResop4::error(nfs_proto::nfs4::NfsOpnum4::OP_PUTROOTFH, NfsStat4::NFS4_OK),
                read(&data),
            ]);
            let items = ddp_items(&reply);
            assert_eq!(items.len(), 1, "{n}");
            assert_eq!(&reply[items[0].clone()], &data[..], "{n}");
            // The length word precedes the item.
            let at = items[0].start;
            assert_eq!(&reply[at - 4..at], &(n as u32).to_be_bytes());
        }
    }

    #[test]
    fn a_failed_read_or_a_null_reply_has_no_item() {
        let failed = reply_with(vec![NfsResop4::Read(ReadRes::Err(
            NfsStat4::NFS4ERR_ACCESS,
        ))]);
        assert!(ddp_items(&failed).is_empty());
        let mut e = Encoder::new();
        RpcMsg::reply_success(7, OpaqueAuth::none()).encode_with_pieces(&mut e, []);
        assert!(ddp_items(&e.into_bytes()).is_empty());
        assert!(ddp_items(&Bytes::from_static(b"junk")).is_empty());
    }

    #[test]
    fn a_placed_item_leaves_its_length_word_and_takes_its_padding() {
        let data = vec![9u8; 1001];
        let reply = reply_with(vec![read(&data)]);
        let items = ddp_items(&reply);
        let s = shape(reply.len(), &items, &[chunk(&[600, 600])]);
        assert_eq!(s.placed, vec![Some(items[0].clone())]);
        // 1001 bytes and 3 of padding are gone; the reply ended with the item.
        assert_eq!(s.rest_len(), reply.len() - 1004);
        assert_eq!(s.rest, vec![0..items[0].start]);
        assert_eq!(
            spread(&chunk(&[600, 600]), 1001),
            vec![(0, 0, 600), (1, 600, 401)]
        );
        let back = returned(&chunk(&[600, 600]), 1001);
        assert_eq!(back.segments[0].length, 600);
        assert_eq!(back.segments[1].length, 401);
    }

    /// `reply`'s pieces of at least `min` bytes left out of the staged bytes.
    fn staged_without(reply_pieces: &[Bytes], min: usize) -> (Bytes, Vec<Gap>) {
        let (mut staged, mut gaps) = (Vec::new(), Vec::new());
        for p in reply_pieces {
            if p.len() >= min {
                gaps.push(Gap {
                    at: staged.len(),
                    len: p.len(),
                });
            } else {
                staged.extend_from_slice(p);
            }
        }
        (Bytes::from(staged), gaps)
    }

    #[test]
    fn read_data_left_out_of_the_staged_copy_is_found_where_it_stands_in_the_reply() {
        for n in [512usize, 513, 4096, 70_001] {
            let data: Vec<u8> = (0..n).map(|i| (i * 7 + 1) as u8).collect();
            let results = vec![
                NfsResop4::error(nfs_proto::nfs4::NfsOpnum4::OP_PUTROOTFH, NfsStat4::NFS4_OK),
                read(&[5; 600]),
                read(&data),
            ];
            let pieces = pieces_with(results.clone());
            let whole: Bytes = pieces.concat().into();
            let (staged, gaps) = staged_without(&pieces, 512);
            assert_eq!(gaps.len(), 2, "{n}");
            let items = ddp_items_around(&staged, &gaps).unwrap_or_else(|| {
                panic!(
                    "{n}: {gaps:?} {:?}",
                    pieces.iter().map(Bytes::len).collect::<Vec<_>>()
                )
            });
            assert_eq!(items, ddp_items(&whole), "{n}");
            assert_eq!(&whole[items[1].clone()], &data[..], "{n}");
            // Only one left out: the same items.
            let (staged, gaps) = staged_without(&pieces, 1000.min(n));
            assert_eq!(
                ddp_items_around(&staged, &gaps),
                Some(ddp_items(&whole)),
                "{n}"
            );
        }
    }

    #[test]
    fn a_gap_that_is_not_read_data_where_it_stands_is_refused() {
        let pieces = pieces_with(vec![read(&[1; 1000])]);
        let (staged, gaps) = staged_without(&pieces, 512);
        let wrong = |g: Gap| ddp_items_around(&staged, &[g]);
        assert!(wrong(Gap {
            at: gaps[0].at,
            len: 999
        })
        .is_none());
        assert!(wrong(Gap {
            at: gaps[0].at - 4,
            len: 1000
        })
        .is_none());
        assert!(wrong(Gap {
            at: gaps[0].at + 4,
            len: 1000
        })
        .is_none());
        assert_eq!(ddp_items_around(&staged, &gaps).map(|i| i.len()), Some(1));
        // A READLINK's target left out is not READ data either.
        let link = NfsResop4::ReadLink(ReadLinkRes::Ok(nfs_proto::nfs4::ReadLinkResOk {
            link: "x".repeat(600).into(),
        }));
        let pieces = pieces_with(vec![link]);
        let (staged, gaps) = staged_without(&pieces, 512);
        if !gaps.is_empty() {
            assert!(ddp_items_around(&staged, &gaps).is_none());
        }
        // Not a COMPOUND reply at all.
        let g = Gap { at: 0, len: 4 };
        assert!(ddp_items_around(&Bytes::from_static(b"junk"), &[g]).is_none());
    }

    #[test]
    fn an_item_too_large_for_its_chunk_or_without_one_stays_inline() {
        let reply = reply_with(vec![read(&[1; 100]), read(&[2; 100])]);
        let items = ddp_items(&reply);
        assert_eq!(items.len(), 2);
        let s = shape(reply.len(), &items, &[chunk(&[50])]);
        assert_eq!(s.placed, vec![None]);
        assert_eq!(s.rest, vec![0..reply.len()]);
        // The second READ has no chunk: only the first moves.
        let s = shape(reply.len(), &items, &[chunk(&[100])]);
        assert_eq!(s.placed, vec![Some(items[0].clone())]);
        assert_eq!(s.rest_len(), reply.len() - 100);
    }
}

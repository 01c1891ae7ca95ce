//! Record marking for RPC over TCP (RFC 5531 section 11), without I/O.
//!
//! A record is sent as one or more fragments, each preceded by a 4-byte big-endian header: the
//! high bit marks the last fragment of the record, the low 31 bits give the fragment length.
//!
//! * [`RecordReader`] reassembles records from bytes as they arrive, with caps on the fragment
//!   and record sizes that are checked before any memory is reserved.
//! * [`record_header`] and [`frame_record`] build the framing for sending: the payload pieces
//!   are referenced, never copied, so the result can go out in one vectored write.

use core::fmt;

use bytes::{Buf, Bytes, BytesMut};

/// The last-fragment bit of a record-marking header.
pub const LAST_FRAGMENT: u32 = 0x8000_0000;

/// The longest fragment a header can describe (31 bits).
pub const MAX_FRAGMENT_LEN: usize = 0x7fff_ffff;

/// Default cap on one fragment in a [`RecordReader`]: 4 MiB.
pub const DEFAULT_MAX_FRAGMENT: usize = 4 << 20;

/// Default cap on a whole record in a [`RecordReader`]: 4 MiB (room for 1 MiB READ/WRITE
/// payloads with plenty to spare; raise it for larger I/O sizes).
pub const DEFAULT_MAX_RECORD: usize = 4 << 20;

/// The record-marking header for a fragment of `len` bytes.
///
/// # Panics
///
/// If `len` exceeds [`MAX_FRAGMENT_LEN`] (a caller bug: it does not fit in 31 bits).
pub fn record_header(len: u32, last: bool) -> [u8; 4] {
    assert!(
        len as usize <= MAX_FRAGMENT_LEN,
        "fragment length {len} does not fit in 31 bits"
    );
    let h = if last { len | LAST_FRAGMENT } else { len };
    h.to_be_bytes()
}

/// Frames `pieces` (already-encoded message parts, e.g. [`crate::xdr::Encoder::into_pieces`])
/// as one record: the result is a list of header and payload pieces to send in order. The
/// payload pieces are not copied: they are returned as they are, or as slices of themselves
/// where the record is split into several fragments of at most `max_fragment` bytes
/// (clamped to `1..=MAX_FRAGMENT_LEN`). Empty pieces are dropped. An empty record is one
/// empty last fragment.
pub fn frame_record(pieces: impl IntoIterator<Item = Bytes>, max_fragment: usize) -> Vec<Bytes> {
    let pieces: Vec<Bytes> = pieces.into_iter().filter(|p| !p.is_empty()).collect();
    let max = max_fragment.clamp(1, MAX_FRAGMENT_LEN);
    let total: usize = pieces.iter().map(Bytes::len).sum();
    let header = |len: usize, last: bool| Bytes::copy_from_slice(&record_header(len as u32, last));

    if total <= max {
        let mut out = Vec::with_capacity(pieces.len() + 1);
        out.push(header(total, true));
        out.extend(pieces);
        return out;
    }

    let mut out = Vec::with_capacity(pieces.len() + 2 * total.div_ceil(max));
    let mut left = total;
    let mut pieces = pieces.into_iter();
    let mut cur = Bytes::new();
    while left > 0 {
        let frag = left.min(max);
        left -= frag;
        out.push(header(frag, left == 0));
        let mut need = frag;
        while need > 0 {
            if cur.is_empty() {
                match pieces.next() {
                    Some(p) => cur = p,
                    None => break, // unreachable: `total` counts every piece
                }
            }
            let take = need.min(cur.len());
            out.push(cur.split_to(take));
            need -= take;
        }
    }
    out
}

/// Which size cap a record exceeded.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum RecordPart {
    /// One fragment.
    Fragment,
    /// The whole record (all fragments so far).
    Record,
}

/// A record-marking failure. The stream cannot be resynchronised after one: close the
/// connection.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[non_exhaustive]
pub enum RecordError {
    /// A fragment, or the record so far, is larger than the reader's cap.
    TooLarge {
        /// Whether the fragment cap or the record cap was exceeded.
        part: RecordPart,
        /// The fragment length from its header, or the record size so far including it.
        size: usize,
        /// The cap.
        limit: usize,
    },
}

impl fmt::Display for RecordError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Self::TooLarge {
                part: RecordPart::Fragment,
                size,
                limit,
            } => write!(
                f,
                "RPC record fragment of {size} bytes exceeds the limit of {limit} bytes"
            ),
            Self::TooLarge {
                part: RecordPart::Record,
                size,
                limit,
            } => write!(
                f,
                "RPC record of at least {size} bytes exceeds the limit of {limit} bytes"
            ),
        }
    }
}

impl std::error::Error for RecordError {}

impl From<RecordError> for std::io::Error {
    fn from(e: RecordError) -> Self {
        std::io::Error::new(std::io::ErrorKind::InvalidData, e)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// Waiting for a 4-byte fragment header.
    Header,
    /// Waiting for `len` bytes of fragment data.
    Data { len: usize, last: bool },
}

/// Reassembles records from a byte stream (RFC 5531 section 11), in the shape of tokio-util's
/// `LengthDelimitedCodec`: call [`RecordReader::decode`] with the bytes received so far; it
/// consumes what it can and returns each complete record.
///
/// A single-fragment record is returned as a slice of the input buffer (no copy); the
/// fragments of a multi-fragment record are joined into one buffer. Every fragment length is
/// checked against the fragment cap and the record cap before the reader reserves room for it.
#[derive(Debug)]
pub struct RecordReader {
    max_fragment: usize,
    max_record: usize,
    state: State,
    /// Earlier fragments of the current record.
    partial: BytesMut,
    /// A non-last fragment of the current record has been consumed.
    in_record: bool,
}

impl Default for RecordReader {
    fn default() -> Self {
        Self::new(DEFAULT_MAX_FRAGMENT, DEFAULT_MAX_RECORD)
    }
}

impl RecordReader {
    /// A reader refusing fragments over `max_fragment` bytes and records over `max_record`
    /// bytes.
    pub fn new(max_fragment: usize, max_record: usize) -> Self {
        Self {
            max_fragment,
            max_record,
            state: State::Header,
            partial: BytesMut::new(),
            in_record: false,
        }
    }

    /// The fragment cap.
    pub fn max_fragment(&self) -> usize {
        self.max_fragment
    }

    /// The record cap.
    pub fn max_record(&self) -> usize {
        self.max_record
    }

    /// True when part of a record has been consumed (a fragment header, or a non-last
    /// fragment) but the record is not complete: end of stream now means a truncated record.
    /// Bytes still in the caller's buffer are not counted.
    pub fn is_mid_record(&self) -> bool {
        self.in_record || self.state != State::Header
    }

    /// When the next fragment in `src` is a whole record of at least `min` bytes (a last
    /// fragment, no earlier fragment of the record consumed), consumes its 4-byte header and
    /// returns its length, within the caps: the caller reads the body (what `src` holds of it,
    /// then the rest from the stream) into memory of its own, e.g. a pooled receive buffer.
    /// `None` (nothing consumed) for anything else, which [`RecordReader::decode`] handles;
    /// an over-cap header is the same [`RecordError::TooLarge`] as there.
    pub fn take_large_record(
        &mut self,
        src: &mut BytesMut,
        min: usize,
    ) -> Result<Option<usize>, RecordError> {
        if self.state != State::Header || self.in_record {
            return Ok(None);
        }
        let Some(h) = src.get(..4) else {
            return Ok(None);
        };
        let h = u32::from_be_bytes([h[0], h[1], h[2], h[3]]);
        let len = (h & !LAST_FRAGMENT) as usize;
        if h & LAST_FRAGMENT == 0 || len < min {
            return Ok(None);
        }
        let limit = self.max_fragment.min(self.max_record);
        if len > limit {
            return Err(RecordError::TooLarge {
                part: if len > self.max_fragment {
                    RecordPart::Fragment
                } else {
                    RecordPart::Record
                },
                size: len,
                limit,
            });
        }
        src.advance(4);
        Ok(Some(len))
    }

    /// Consumes bytes from `src` and returns the next complete record, or `None` when more
    /// bytes are needed. Call again after a record is returned: `src` may hold more.
    ///
    /// On [`RecordError::TooLarge`] the offending header is left in `src` and nothing is
    /// reserved; the stream cannot continue.
    pub fn decode(&mut self, src: &mut BytesMut) -> Result<Option<Bytes>, RecordError> {
        loop {
            let (len, last) = match self.state {
                State::Data { len, last } => (len, last),
                State::Header => {
                    let Some(h) = src.get(..4) else {
                        return Ok(None);
                    };
                    let h = u32::from_be_bytes([h[0], h[1], h[2], h[3]]);
                    let len = (h & !LAST_FRAGMENT) as usize;
                    let last = h & LAST_FRAGMENT != 0;
                    if len > self.max_fragment {
                        return Err(RecordError::TooLarge {
                            part: RecordPart::Fragment,
                            size: len,
                            limit: self.max_fragment,
                        });
                    }
                    let size = self.partial.len().saturating_add(len);
                    if size > self.max_record {
                        return Err(RecordError::TooLarge {
                            part: RecordPart::Record,
                            size,
                            limit: self.max_record,
                        });
                    }
                    src.advance(4);
                    // Within the caps: make room for the whole fragment.
                    if len > src.len() {
                        src.reserve(len - src.len());
                    }
                    self.state = State::Data { len, last };
                    (len, last)
                }
            };
            if src.len() < len {
                return Ok(None);
            }
            let frag = src.split_to(len);
            self.state = State::Header;
            if !last {
                self.in_record = true;
                if self.partial.is_empty() {
                    self.partial = frag;
                } else {
                    self.partial.extend_from_slice(&frag);
                }
                continue;
            }
            self.in_record = false;
            let record = if self.partial.is_empty() {
                frag
            } else {
                self.partial.extend_from_slice(&frag);
                core::mem::take(&mut self.partial)
            };
            return Ok(Some(record.freeze()));
        }
    }
}

#[cfg(test)]
mod tests {
    use bytes::BufMut;
    use proptest::prelude::*;

    use super::*;

    fn concat(pieces: &[Bytes]) -> BytesMut {
        let mut out = BytesMut::new();
        for p in pieces {
            out.put_slice(p);
        }
        out
    }

    /// Feeds `wire` to a fresh reader in the given chunk boundaries; returns every record.
    fn feed(reader: &mut RecordReader, wire: &[u8], cuts: &[usize]) -> Vec<Bytes> {
        let mut buf = BytesMut::new();
        let mut out = Vec::new();
        let mut at = 0;
        for &cut in cuts.iter().chain([&wire.len()]) {
            buf.put_slice(&wire[at..cut]);
            at = cut;
            while let Some(r) = reader.decode(&mut buf).unwrap() {
                out.push(r);
            }
        }
        assert!(buf.is_empty());
        assert!(!reader.is_mid_record());
        out
    }

    fn sample_record(n: usize) -> Bytes {
        (0..n)
            .map(|i| (i * 7 + 3) as u8)
            .collect::<Vec<u8>>()
            .into()
    }

    #[test]
    fn header_bits() {
        assert_eq!(record_header(0, true), [0x80, 0, 0, 0]);
        assert_eq!(record_header(0x1234, false), [0, 0, 0x12, 0x34]);
        assert_eq!(
            record_header(MAX_FRAGMENT_LEN as u32, true),
            [0xff, 0xff, 0xff, 0xff]
        );
    }

    #[test]
    fn multi_fragment_record_split_at_every_byte() {
        let record = sample_record(50);
        // Three pieces, fragments of at most 16 bytes, then a second, single-fragment record.
        let pieces = [record.slice(..5), record.slice(5..40), record.slice(40..)];
        let mut framed = frame_record(pieces.iter().cloned(), 16);
        framed.extend(frame_record([Bytes::from_static(b"second")], 16));
        let wire = concat(&framed);
        assert_eq!(wire.len(), 50 + 4 * 4 + 6 + 4);
        for cut in 0..=wire.len() {
            let mut r = RecordReader::new(16, 64);
            let got = feed(&mut r, &wire, &[cut]);
            assert_eq!(
                got,
                vec![record.clone(), Bytes::from_static(b"second")],
                "cut {cut}"
            );
        }
        // One byte at a time.
        let mut r = RecordReader::new(16, 64);
        let cuts: Vec<usize> = (1..wire.len()).collect();
        assert_eq!(feed(&mut r, &wire, &cuts).len(), 2);
    }

    #[test]
    fn single_fragment_record_is_not_copied() {
        let wire = concat(&frame_record([Bytes::from_static(b"abcdefgh")], 1024));
        let mut buf = wire.clone();
        let base = buf.as_ptr() as usize;
        let rec = RecordReader::default().decode(&mut buf).unwrap().unwrap();
        assert_eq!(&rec[..], b"abcdefgh");
        assert_eq!(rec.as_ptr() as usize, base + 4);
    }

    #[test]
    fn zero_length_fragments() {
        let mut r = RecordReader::new(8, 8);
        let mut buf = BytesMut::from(&[0, 0, 0, 0][..]);
        assert_eq!(r.decode(&mut buf), Ok(None));
        assert!(
            r.is_mid_record(),
            "an empty non-last fragment starts a record"
        );
        buf.put_slice(&[0, 0, 0, 2, b'a', b'b', 0, 0, 0, 0, 0x80, 0, 0, 1, b'c']);
        assert_eq!(r.decode(&mut buf), Ok(Some(Bytes::from_static(b"abc"))));
        // An empty record.
        buf.put_slice(&[0x80, 0, 0, 0]);
        assert_eq!(r.decode(&mut buf), Ok(Some(Bytes::new())));
        assert!(!r.is_mid_record());
        assert!(buf.is_empty());
        // frame_record of nothing is one empty last fragment.
        let framed = frame_record([Bytes::new()], 8);
        assert_eq!(framed, vec![Bytes::from_static(&[0x80, 0, 0, 0])]);
    }

    #[test]
    fn over_limit_fragment_is_refused_before_reserving() {
        let mut r = RecordReader::new(64, 1 << 20);
        let mut buf = BytesMut::with_capacity(8);
        buf.put_slice(&record_header(0x7fff_0000, true));
        let e = r.decode(&mut buf).unwrap_err();
        assert_eq!(
            e,
            RecordError::TooLarge {
                part: RecordPart::Fragment,
                size: 0x7fff_0000,
                limit: 64
            }
        );
        assert_eq!(
            e.to_string(),
            "RPC record fragment of 2147418112 bytes exceeds the limit of 64 bytes"
        );
        assert!(buf.capacity() < 1024, "nothing reserved");
        assert_eq!(buf.len(), 4, "header left in place");
        // Asking again gives the same answer.
        assert_eq!(r.decode(&mut buf), Err(e));
    }

    #[test]
    fn over_limit_record_is_refused() {
        let rec = sample_record(100);
        let wire = concat(&frame_record([rec], 40));
        let mut r = RecordReader::new(40, 64);
        let mut buf = BytesMut::from(&wire[..]);
        let e = r.decode(&mut buf).unwrap_err();
        assert_eq!(
            e,
            RecordError::TooLarge {
                part: RecordPart::Record,
                size: 80,
                limit: 64
            }
        );
        assert_eq!(
            e.to_string(),
            "RPC record of at least 80 bytes exceeds the limit of 64 bytes"
        );
        let io: std::io::Error = e.into();
        assert_eq!(io.kind(), std::io::ErrorKind::InvalidData);
        // At the limit exactly, it passes.
        let rec = sample_record(64);
        let wire = concat(&frame_record([rec.clone()], 40));
        assert_eq!(feed(&mut RecordReader::new(40, 64), &wire, &[]), vec![rec]);
    }

    #[test]
    fn garbage_after_a_valid_record() {
        let rec = sample_record(12);
        let mut wire = concat(&frame_record([rec.clone()], 1024));
        wire.put_slice(&[0xff, 0xff, 0xff, 0xff, 1, 2, 3]);
        let mut r = RecordReader::new(1024, 1024);
        assert_eq!(r.decode(&mut wire), Ok(Some(rec.clone())));
        assert!(matches!(
            r.decode(&mut wire),
            Err(RecordError::TooLarge {
                part: RecordPart::Fragment,
                size: MAX_FRAGMENT_LEN,
                ..
            })
        ));
        // Garbage too short to be a header just waits; the caller sees leftover bytes at EOF.
        let mut wire = concat(&frame_record([rec.clone()], 1024));
        wire.put_slice(&[0x80, 0]);
        let mut r = RecordReader::new(1024, 1024);
        assert_eq!(r.decode(&mut wire), Ok(Some(rec)));
        assert_eq!(r.decode(&mut wire), Ok(None));
        assert_eq!(wire.len(), 2);
        assert!(!r.is_mid_record());
    }

    #[test]
    fn frame_record_splits_without_copying() {
        let a = sample_record(10);
        let b = sample_record(25);
        let framed = frame_record([a.clone(), Bytes::new(), b.clone()], 8);
        // Fragments 8, 8, 8, 8, 3 over 35 bytes; walk them and check every payload piece
        // points into `a` or `b`.
        let mut off = 0usize;
        let mut frags = Vec::new();
        let mut i = 0;
        while i < framed.len() {
            let h = u32::from_be_bytes(framed[i][..].try_into().unwrap());
            let len = (h & !LAST_FRAGMENT) as usize;
            frags.push((len, h & LAST_FRAGMENT != 0));
            i += 1;
            let mut got = 0;
            while got < len {
                let p = &framed[i];
                let src = if off < 10 { &a } else { &b };
                let at = if off < 10 { off } else { off - 10 };
                assert_eq!(p.as_ptr(), src[at..].as_ptr(), "piece not copied");
                got += p.len();
                off += p.len();
                i += 1;
            }
        }
        assert_eq!(
            frags,
            vec![(8, false), (8, false), (8, false), (8, false), (3, true)]
        );
        let mut expect = a.to_vec();
        expect.extend_from_slice(&b);
        let wire = concat(&framed);
        assert_eq!(
            feed(&mut RecordReader::new(8, 64), &wire, &[]),
            vec![Bytes::from(expect)]
        );
    }

    proptest! {
        #[test]
        fn records_survive_any_fragmentation_and_chunking(
            records in proptest::collection::vec(
                proptest::collection::vec(any::<u8>(), 0..200), 1..4),
            max_fragment in 1usize..64,
            cuts in proptest::collection::vec(any::<prop::sample::Index>(), 0..8),
        ) {
            let mut wire = BytesMut::new();
            for r in &records {
                let r = Bytes::from(r.clone());
                // Split each record into two pieces so pieces and fragments interleave.
                let mid = r.len() / 3;
                wire.put_slice(&concat(&frame_record([r.slice(..mid), r.slice(mid..)], max_fragment)));
            }
            let mut cuts: Vec<usize> = cuts.iter().map(|i| i.index(wire.len() + 1)).collect();
            cuts.sort_unstable();
            let got = feed(&mut RecordReader::new(max_fragment, 256), &wire, &cuts);
            let want: Vec<Bytes> = records.into_iter().map(Bytes::from).collect();
            prop_assert_eq!(got, want);
        }

        #[test]
        fn arbitrary_input_never_panics(
            input in proptest::collection::vec(any::<u8>(), 0..300),
            max_fragment in 0usize..64,
            max_record in 0usize..128,
        ) {
            let mut r = RecordReader::new(max_fragment, max_record);
            let mut buf = BytesMut::from(&input[..]);
            while let Ok(Some(rec)) = r.decode(&mut buf) {
                prop_assert!(rec.len() <= max_record);
            }
        }
    }
}

//! The XDR writer: header bytes in one `BytesMut`, bulk payloads kept aside as `Bytes` pieces.

use bytes::{BufMut, Bytes, BytesMut};

/// Payloads at least this long are kept as separate pieces rather than copied into the header
/// buffer; shorter ones cost less to copy than to track.
pub const PAYLOAD_PIECE_MIN: usize = 512;

const ZEROS: [u8; 4] = [0; 4];

/// Writes XDR items.
///
/// The result is a list of `Bytes` pieces: header runs interleaved with payload slices (READ
/// data straight from storage, for instance), ready for one vectored write. Nothing marked as
/// payload is copied.
#[derive(Debug, Default)]
pub struct Encoder {
    buf: BytesMut,
    pieces: Vec<Bytes>,
    len: usize,
}

impl Encoder {
    /// An empty encoder.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty encoder with room for `n` header bytes.
    pub fn with_capacity(n: usize) -> Self {
        Self {
            buf: BytesMut::with_capacity(n),
            ..Self::default()
        }
    }

    /// Total bytes written so far, pieces included.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when nothing has been written.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// An XDR unsigned int.
    pub fn put_u32(&mut self, v: u32) {
        self.buf.put_u32(v);
        self.len += 4;
    }

    /// An XDR int.
    pub fn put_i32(&mut self, v: i32) {
        self.put_u32(v as u32);
    }

    /// An XDR unsigned hyper.
    pub fn put_u64(&mut self, v: u64) {
        self.buf.put_u64(v);
        self.len += 8;
    }

    /// An XDR hyper.
    pub fn put_i64(&mut self, v: i64) {
        self.put_u64(v as u64);
    }

    /// An XDR bool.
    pub fn put_bool(&mut self, v: bool) {
        self.put_u32(v as u32);
    }

    fn pad(&mut self, n: usize) {
        let pad = (4 - n % 4) % 4;
        self.buf.put_slice(&ZEROS[..pad]);
        self.len += pad;
    }

    /// Fixed-length opaque data (no length prefix), padded to 4 bytes.
    pub fn put_fixed(&mut self, data: &[u8]) {
        self.buf.put_slice(data);
        self.len += data.len();
        self.pad(data.len());
    }

    /// Variable-length opaque data, copied into the header buffer.
    pub fn put_opaque(&mut self, data: &[u8]) {
        self.put_u32(data.len() as u32);
        self.put_fixed(data);
    }

    /// Variable-length opaque data that travels as its own piece when large (READ, WRITE and
    /// READLINK data): the bytes are referenced, not copied.
    pub fn put_payload(&mut self, data: &Bytes) {
        if data.len() < PAYLOAD_PIECE_MIN {
            return self.put_opaque(data);
        }
        self.put_u32(data.len() as u32);
        if !self.buf.is_empty() {
            self.pieces.push(self.buf.split().freeze());
        }
        self.pieces.push(data.clone());
        self.len += data.len();
        self.pad(data.len());
    }

    /// Appends raw, already-encoded bytes (no length, no padding).
    pub fn put_raw(&mut self, data: &[u8]) {
        debug_assert_eq!(data.len() % 4, 0, "raw XDR must be 4-byte aligned");
        self.buf.put_slice(data);
        self.len += data.len();
    }

    /// Appends already-encoded pieces without copying them.
    pub fn put_pieces(&mut self, pieces: impl IntoIterator<Item = Bytes>) {
        for p in pieces {
            if p.is_empty() {
                continue;
            }
            if !self.buf.is_empty() {
                self.pieces.push(self.buf.split().freeze());
            }
            self.len += p.len();
            self.pieces.push(p);
        }
    }

    /// The encoded message as pieces for a vectored write.
    pub fn into_pieces(mut self) -> Vec<Bytes> {
        if !self.buf.is_empty() {
            self.pieces.push(self.buf.freeze());
        }
        self.pieces
    }

    /// The encoded message as one contiguous buffer (copies when there are several pieces).
    pub fn into_bytes(self) -> Bytes {
        let len = self.len;
        let mut pieces = self.into_pieces();
        match pieces.len() {
            0 => Bytes::new(),
            1 => pieces.pop().expect("one piece"),
            _ => {
                let mut out = BytesMut::with_capacity(len);
                for p in pieces {
                    out.put_slice(&p);
                }
                out.freeze()
            }
        }
    }
}

//! The bounded, zero-copy XDR reader.

use bytes::Bytes;

use super::error::{DecodeError, DecodeErrorKind};

/// Reads XDR items from a `Bytes` buffer.
///
/// Every variable-length item is checked against the bytes left *before* anything is
/// allocated, and against the item's own maximum and the decoder's configured ceiling
/// ([`Decoder::with_max_len`]). Opaque data comes back as `Bytes` slices of the input: no copy.
#[derive(Debug, Clone)]
pub struct Decoder {
    buf: Bytes,
    pos: usize,
    max_len: u32,
    /// Offsets of every length prefix read, when tracing is on (tests use it to corrupt each
    /// length in turn).
    trace: Option<Vec<usize>>,
}

impl Decoder {
    /// A decoder over `buf`, with no ceiling beyond the input itself.
    pub fn new(buf: Bytes) -> Self {
        Self {
            buf,
            pos: 0,
            max_len: u32::MAX,
            trace: None,
        }
    }

    /// Caps every variable-length item (opaque, string or array count) at `max_len`.
    pub fn with_max_len(mut self, max_len: u32) -> Self {
        self.max_len = max_len;
        self
    }

    /// Records the offset of each length prefix read; see [`Decoder::length_offsets`].
    pub fn with_length_trace(mut self) -> Self {
        self.trace = Some(Vec::new());
        self
    }

    /// Offsets of the length prefixes read so far (empty unless tracing is on).
    pub fn length_offsets(&self) -> &[usize] {
        self.trace.as_deref().unwrap_or(&[])
    }

    /// Current offset in the input.
    pub fn position(&self) -> usize {
        self.pos
    }

    /// Bytes left.
    pub fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    /// Fails unless the whole input was consumed.
    pub fn finish(&self) -> Result<(), DecodeError> {
        match self.remaining() {
            0 => Ok(()),
            n => Err(DecodeError::new(
                DecodeErrorKind::TrailingBytes(n),
                self.pos,
            )),
        }
    }

    /// Takes the rest of the input as one slice (for bodies decoded later, e.g. RPC results).
    pub fn take_rest(&mut self) -> Bytes {
        let b = self.buf.slice(self.pos..);
        self.pos = self.buf.len();
        b
    }

    fn need(&self, n: usize) -> Result<(), DecodeError> {
        if self.remaining() < n {
            Err(DecodeError::new(
                DecodeErrorKind::Truncated {
                    needed: n,
                    remaining: self.remaining(),
                },
                self.pos,
            ))
        } else {
            Ok(())
        }
    }

    /// An XDR unsigned int.
    pub fn get_u32(&mut self) -> Result<u32, DecodeError> {
        self.need(4)?;
        let b = &self.buf[self.pos..self.pos + 4];
        self.pos += 4;
        Ok(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    /// The next XDR unsigned int, without consuming it.
    pub fn peek_u32(&self) -> Result<u32, DecodeError> {
        self.need(4)?;
        let b = &self.buf[self.pos..self.pos + 4];
        Ok(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    /// An XDR int.
    pub fn get_i32(&mut self) -> Result<i32, DecodeError> {
        self.get_u32().map(|v| v as i32)
    }

    /// An XDR unsigned hyper.
    pub fn get_u64(&mut self) -> Result<u64, DecodeError> {
        self.need(8)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(&self.buf[self.pos..self.pos + 8]);
        self.pos += 8;
        Ok(u64::from_be_bytes(a))
    }

    /// An XDR hyper.
    pub fn get_i64(&mut self) -> Result<i64, DecodeError> {
        self.get_u64().map(|v| v as i64)
    }

    /// An XDR bool: exactly 0 or 1.
    pub fn get_bool(&mut self) -> Result<bool, DecodeError> {
        let at = self.pos;
        match self.get_u32()? {
            0 => Ok(false),
            1 => Ok(true),
            v => Err(DecodeError::new(DecodeErrorKind::BadBool(v), at)),
        }
    }

    /// The zero padding after `len` bytes of data; public for a reader of data the input
    /// leaves out (RPC-over-RDMA's reply shaping decodes a reply without its READ data).
    pub fn check_padding(&mut self, len: usize) -> Result<(), DecodeError> {
        let pad = (4 - len % 4) % 4;
        self.need(pad)?;
        if self.buf[self.pos..self.pos + pad].iter().any(|&b| b != 0) {
            return Err(DecodeError::new(DecodeErrorKind::NonZeroPadding, self.pos));
        }
        self.pos += pad;
        Ok(())
    }

    /// Fixed-length opaque data of `n` bytes (plus padding), as a slice of the input.
    pub fn get_fixed_bytes(&mut self, n: usize) -> Result<Bytes, DecodeError> {
        let padded = n.checked_add(3).map(|v| v & !3).unwrap_or(usize::MAX);
        self.need(padded)?;
        let b = self.buf.slice(self.pos..self.pos + n);
        self.pos += n;
        self.check_padding(n)?;
        Ok(b)
    }

    /// Fixed-length opaque data into an array.
    pub fn get_fixed<const N: usize>(&mut self) -> Result<[u8; N], DecodeError> {
        let padded = (N + 3) & !3;
        self.need(padded)?;
        let mut a = [0u8; N];
        a.copy_from_slice(&self.buf[self.pos..self.pos + N]);
        self.pos += N;
        self.check_padding(N)?;
        Ok(a)
    }

    /// A length prefix for an item whose elements take at least `unit` bytes each (1 for
    /// opaque data, 4 or more for arrays): checked against `max`, the configured ceiling and
    /// the bytes left, before the caller allocates anything.
    pub fn get_length(&mut self, max: u32, unit: usize) -> Result<usize, DecodeError> {
        let at = self.pos;
        if let Some(t) = self.trace.as_mut() {
            t.push(at);
        }
        let len = self.get_u32()?;
        let max = max.min(self.max_len);
        if len > max {
            return Err(DecodeError::new(DecodeErrorKind::TooLong { len, max }, at));
        }
        let bytes = (len as usize).saturating_mul(unit.max(1));
        if bytes > self.remaining() {
            return Err(DecodeError::new(
                DecodeErrorKind::LengthBeyondInput {
                    len,
                    remaining: self.remaining(),
                },
                at,
            ));
        }
        Ok(len as usize)
    }

    /// Variable-length opaque data of at most `max` bytes, as a slice of the input.
    pub fn get_opaque(&mut self, max: u32) -> Result<Bytes, DecodeError> {
        let len = self.get_length(max, 1)?;
        self.get_fixed_bytes(len)
    }
}

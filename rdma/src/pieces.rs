//! Reading an RPC message that is still a list of pieces (an encoded call or reply before it
//! is sent), without joining them.

use bytes::Bytes;

/// The big-endian 32-bit word at byte `at` of the message `pieces` make, wherever the piece
/// boundaries fall; `None` past its end. (The XID is word 0, the message type word 4.)
pub(crate) fn word(pieces: &[Bytes], at: usize) -> Option<u32> {
    let mut b = [0u8; 4];
    let mut got = 0;
    let mut skip = at;
    for p in pieces {
        if skip >= p.len() {
            skip -= p.len();
            continue;
        }
        let n = (p.len() - skip).min(4 - got);
        b[got..got + n].copy_from_slice(&p[skip..skip + n]);
        got += n;
        skip = 0;
        if got == 4 {
            return Some(u32::from_be_bytes(b));
        }
    }
    None
}

/// The bytes `range` of the message `pieces` make, as slices of them (no copy).
pub(crate) fn slices(pieces: &[Bytes], range: std::ops::Range<usize>) -> Vec<Bytes> {
    let mut out = Vec::new();
    let mut at = 0;
    for p in pieces {
        let (start, end) = (range.start.max(at), range.end.min(at + p.len()));
        if start < end {
            out.push(p.slice(start - at..end - at));
        }
        at += p.len();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_are_read_across_pieces() {
        let pieces = vec![
            Bytes::from_static(&[0, 0]),
            Bytes::from_static(&[0, 7, 0]),
            Bytes::from_static(&[0, 0, 1, 9]),
        ];
        assert_eq!(word(&pieces, 0), Some(7));
        assert_eq!(word(&pieces, 4), Some(1));
        assert_eq!(word(&pieces, 6), None);
        let joined = |v: Vec<Bytes>| v.concat();
        assert_eq!(joined(slices(&pieces, 1..6)), [0, 0, 7, 0, 0]);
        assert_eq!(joined(slices(&pieces, 5..9)), [0, 0, 1, 9]);
        assert!(slices(&pieces, 3..3).is_empty());
    }
}

//! The record-marking reader against a plain reference parser, with the input delivered in
//! arbitrary chunks: same records, same error, no panic, no reservation beyond the caps.
#![no_main]

use bytes::BytesMut;
use libfuzzer_sys::fuzz_target;
use nfs_proto::record::RecordReader;

const MAX_FRAGMENT: usize = 64 * 1024;
const MAX_RECORD: usize = 256 * 1024;

/// Records of `input` and whether a cap was exceeded, parsed the obvious way.
fn reference(input: &[u8]) -> (Vec<Vec<u8>>, bool) {
    let mut out = Vec::new();
    let mut partial = Vec::new();
    let mut rest = input;
    while rest.len() >= 4 {
        let h = u32::from_be_bytes([rest[0], rest[1], rest[2], rest[3]]);
        let len = (h & 0x7fff_ffff) as usize;
        if len > MAX_FRAGMENT || partial.len() + len > MAX_RECORD {
            return (out, true);
        }
        if rest.len() - 4 < len {
            break;
        }
        partial.extend_from_slice(&rest[4..4 + len]);
        rest = &rest[4 + len..];
        if h & 0x8000_0000 != 0 {
            out.push(std::mem::take(&mut partial));
        }
    }
    (out, false)
}

fuzz_target!(|data: &[u8]| {
    let Some((&chunk, input)) = data.split_first() else { return };
    let chunk = usize::from(chunk).max(1);
    let (expected, expect_error) = reference(input);
    let mut reader = RecordReader::new(MAX_FRAGMENT, MAX_RECORD);
    let mut buf = BytesMut::new();
    let mut got = Vec::new();
    let mut failed = false;
    'feed: for piece in input.chunks(chunk) {
        buf.extend_from_slice(piece);
        loop {
            match reader.decode(&mut buf) {
                Ok(Some(r)) => got.push(r.to_vec()),
                Ok(None) => break,
                Err(_) => {
                    failed = true;
                    break 'feed;
                }
            }
        }
    }
    assert_eq!(got, expected);
    assert_eq!(failed, expect_error);
});

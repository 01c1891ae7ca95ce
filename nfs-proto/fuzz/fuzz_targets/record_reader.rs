//! The record-marking reader against a plain reference parser, with the input delivered in
//! arbitrary chunks: same records, same error, no panic, no reservation beyond the caps. Half
//! the inputs also take large records out through `take_large_record`, as the pooled
//! receive path does (`transport::records`), reading their bodies from what follows.
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
    // Odd chunk sizes also take records of at least 16 bytes out as large ones.
    let pooled = chunk % 2 == 1;
    let mut reader = RecordReader::new(MAX_FRAGMENT, MAX_RECORD);
    let mut buf = BytesMut::new();
    let mut got = Vec::new();
    let mut failed = false;
    // A large record being read: its length and what arrived of it.
    let mut large: Option<(usize, Vec<u8>)> = None;
    'feed: for piece in input.chunks(chunk) {
        buf.extend_from_slice(piece);
        loop {
            if let Some((len, body)) = &mut large {
                let take = (*len - body.len()).min(buf.len());
                body.extend_from_slice(&buf.split_to(take));
                if body.len() < *len {
                    break;
                }
                got.push(std::mem::take(body));
                large = None;
                continue;
            }
            if pooled {
                match reader.take_large_record(&mut buf, 16) {
                    Ok(Some(len)) => {
                        assert!(len >= 16 && len <= MAX_FRAGMENT.min(MAX_RECORD));
                        large = Some((len, Vec::with_capacity(len)));
                        continue;
                    }
                    Ok(None) => {}
                    Err(_) => {
                        failed = true;
                        break 'feed;
                    }
                }
            }
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

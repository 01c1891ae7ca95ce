//! RDMA-CM private data (RFC 8797): decoding never panics; what decodes re-encodes to the same
//! eight bytes but for the flag bits this version does not define; the negotiated inline
//! thresholds always lie between 1 KiB and 256 KiB and never exceed this side's own.
#![no_main]

use libfuzzer_sys::fuzz_target;
use nfs_proto::rdma::{
    InlineSize, PrivateData, Thresholds, DEFAULT_INLINE_THRESHOLD, FLAG_REMOTE_INVALIDATION,
    MAX_INLINE_THRESHOLD,
};

fuzz_target!(|data: &[u8]| {
    if let Ok(p) = PrivateData::decode(data) {
        let mut expected = [0u8; 8];
        expected.copy_from_slice(&data[..8]);
        expected[5] &= FLAG_REMOTE_INVALIDATION;
        assert_eq!(p.to_bytes(), expected);
    }
    let local = PrivateData {
        remote_invalidation: true,
        send_size: InlineSize::from_bytes(16 * 1024).unwrap(),
        recv_size: InlineSize::from_bytes(4 * 1024).unwrap(),
    };
    let (t, why) = Thresholds::negotiate(&local, Some(data));
    assert_eq!(why.is_none(), PrivateData::decode(data).is_ok());
    for v in [t.send, t.recv] {
        assert!((DEFAULT_INLINE_THRESHOLD..=MAX_INLINE_THRESHOLD).contains(&v));
    }
    assert!(t.send <= 16 * 1024 && t.recv <= 4 * 1024);
});

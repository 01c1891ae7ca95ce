use bytes::Bytes;
use proptest::prelude::*;

use super::*;

#[derive(Debug, Clone, PartialEq, Xdr)]
struct Sample {
    a: u32,
    b: i64,
    #[xdr(max = 8)]
    name: Utf8String,
    #[xdr(max = 16)]
    data: Bytes,
    list: Vec<u64>,
    opt: Option<bool>,
    fixed: [u8; 5],
}

#[derive(Debug, Clone, PartialEq, Xdr)]
enum SampleUnion {
    #[xdr(case = 0u32)]
    Void,
    #[xdr(case = 1u32)]
    One(u32),
    #[xdr(case = 2u32)]
    Two { x: u64, y: Bytes },
    #[xdr(default)]
    Other(u32),
}

proptest! {
    #[test]
    fn sample_round_trips(v in any::<Sample>()) {
        let b = to_bytes(&v);
        prop_assert_eq!(b.len() % 4, 0);
        prop_assert_eq!(from_bytes::<Sample>(b).unwrap(), v);
    }

    #[test]
    fn sample_union_round_trips(v in any::<SampleUnion>()) {
        let b = to_bytes(&v);
        prop_assert_eq!(b.len() % 4, 0);
        prop_assert_eq!(from_bytes::<SampleUnion>(b).unwrap(), v);
    }

    #[test]
    fn every_prefix_of_sample_fails(v in any::<Sample>()) {
        let b = to_bytes(&v);
        for n in 0..b.len() {
            prop_assert!(from_bytes::<Sample>(b.slice(..n)).is_err());
        }
    }
}

crate::roundtrip_tests!(
    string: Utf8String,
    optional: Option<u64>,
    array: Vec<i32>,
    fixed: [u8; 7],
    boolean: bool,
    hyper: i64,
);

#[test]
fn opaque_decodes_as_a_slice_of_the_input() {
    let input = Bytes::from_static(&[0, 0, 0, 3, b'a', b'b', b'c', 0]);
    let out = from_bytes::<Bytes>(input.clone()).unwrap();
    assert_eq!(&out[..], b"abc");
    assert_eq!(out.as_ptr(), input[4..].as_ptr(), "no copy");
}

#[test]
fn huge_length_is_refused_before_allocating() {
    let input = Bytes::from_static(&[0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0]);
    let e = from_bytes::<Vec<u64>>(input.clone()).unwrap_err();
    assert!(
        matches!(
            e.kind,
            DecodeErrorKind::LengthBeyondInput { len: u32::MAX, .. }
        ),
        "{e}"
    );
    assert_eq!(e.offset, 0);
    let e = from_bytes::<Bytes>(input).unwrap_err();
    assert!(matches!(e.kind, DecodeErrorKind::LengthBeyondInput { .. }));
}

#[test]
fn per_type_maximum_is_enforced_and_named() {
    let mut e = Encoder::new();
    e.put_u32(1);
    e.put_i64(2);
    e.put_opaque(b"toolongname");
    let b = e.into_bytes();
    let err = from_bytes::<Sample>(b).unwrap_err();
    assert_eq!(err.kind, DecodeErrorKind::TooLong { len: 11, max: 8 });
    assert_eq!(err.what, "Sample.name");
    assert_eq!(err.offset, 12);
    assert_eq!(
        err.to_string(),
        "decoding Sample.name at offset 12: length 11 exceeds the maximum 8"
    );
}

#[test]
fn configured_ceiling_caps_every_length() {
    let b = to_bytes(&Bytes::from_static(&[7; 100]));
    let mut d = Decoder::new(b).with_max_len(64);
    assert!(matches!(
        Bytes::decode(&mut d).unwrap_err().kind,
        DecodeErrorKind::TooLong { len: 100, max: 64 }
    ));
}

#[test]
fn nonzero_padding_and_bad_bool_are_errors() {
    let b = Bytes::from_static(&[0, 0, 0, 1, 9, 1, 0, 0]);
    assert_eq!(
        from_bytes::<Bytes>(b).unwrap_err().kind,
        DecodeErrorKind::NonZeroPadding
    );
    let b = Bytes::from_static(&[0, 0, 0, 2]);
    assert_eq!(
        from_bytes::<bool>(b).unwrap_err().kind,
        DecodeErrorKind::BadBool(2)
    );
}

#[test]
fn unknown_union_arm_goes_to_default_or_fails() {
    let b = to_bytes(&77u32);
    assert_eq!(
        from_bytes::<SampleUnion>(b).unwrap(),
        SampleUnion::Other(77)
    );
}

#[test]
fn large_payloads_are_separate_pieces() {
    let payload = Bytes::from(vec![5u8; 4099]);
    let mut e = Encoder::new();
    e.put_u32(9);
    e.put_payload(&payload);
    e.put_u32(10);
    assert_eq!(e.len(), 4 + 4 + 4100 + 4);
    let pieces = e.into_pieces();
    assert_eq!(pieces.len(), 3);
    assert_eq!(
        pieces[1].as_ptr(),
        payload.as_ptr(),
        "payload is referenced, not copied"
    );
    assert_eq!(&pieces[2][..], &[0, 0, 0, 0, 10]);
}

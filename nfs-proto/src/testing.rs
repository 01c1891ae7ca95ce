//! Test helpers shared by the protocol modules.

/// Generates, for each listed type, a proptest that encodes an arbitrary value, checks the
/// length is a multiple of 4, decodes it back to an equal value, and checks that every strict
/// prefix of the encoding fails to decode (a truncation test).
///
/// ```ignore
/// roundtrip_tests!(access_args: AccessArgs, access_res: AccessRes);
/// ```
#[macro_export]
#[doc(hidden)]
macro_rules! roundtrip_tests {
    ($($name:ident : $ty:ty),* $(,)?) => {
        $(
            ::proptest::proptest! {
                #[test]
                fn $name(v in ::proptest::arbitrary::any::<$ty>()) {
                    let b = $crate::xdr::to_bytes(&v);
                    ::proptest::prop_assert_eq!(b.len() % 4, 0, "length {} not a multiple of 4", b.len());
                    let back = $crate::xdr::from_bytes::<$ty>(b.clone());
                    ::proptest::prop_assert_eq!(back.as_ref(), Ok(&v));
                    for n in 0..b.len() {
                        ::proptest::prop_assert!(
                            $crate::xdr::from_bytes::<$ty>(b.slice(..n)).is_err(),
                            "prefix of {} bytes decoded", n
                        );
                    }
                }
            }
        )*
    };
}

//! XDR (RFC 4506) over `bytes`: bounded decoding, zero-copy opaque data, and the `Xdr` trait
//! that every wire type implements (usually through `#[derive(Xdr)]`).

mod decode;
mod encode;
mod error;

use bytes::Bytes;

pub use decode::Decoder;
pub use encode::{Encoder, PAYLOAD_PIECE_MIN};
pub use error::{DecodeError, DecodeErrorKind};
pub use nfs_proto_derive::Xdr;

/// A type with an XDR encoding.
pub trait Xdr: Sized {
    /// The fewest bytes any value of this type encodes to. Array decoding uses it to refuse a
    /// count that the bytes left cannot hold, before allocating.
    const MIN_SIZE: usize = 4;

    /// Appends the encoding of `self`.
    fn encode(&self, enc: &mut Encoder);

    /// Reads one value.
    fn decode(dec: &mut Decoder) -> Result<Self, DecodeError>;
}

/// A variable-length type (opaque, string, array) whose length can be capped by the protocol
/// (`opaque fh<NFS4_FHSIZE>`) on top of the decoder's own checks.
pub trait XdrBounded: Xdr {
    /// Reads one value of at most `max` bytes (opaque, string) or elements (array).
    fn decode_bounded(dec: &mut Decoder, max: u32) -> Result<Self, DecodeError>;
}

/// A value that can select an XDR union arm: integers, bools and the open enums of
/// [`xdr_enum!`](crate::xdr_enum).
pub trait Discriminant: Sized {
    /// The wire value.
    fn to_u32(&self) -> u32;
    /// From the wire value.
    fn from_u32(v: u32) -> Self;
    /// Writes the discriminant.
    fn encode_disc(&self, enc: &mut Encoder) {
        enc.put_u32(self.to_u32());
    }
}

impl Discriminant for u32 {
    fn to_u32(&self) -> u32 {
        *self
    }
    fn from_u32(v: u32) -> Self {
        v
    }
}

impl Discriminant for i32 {
    fn to_u32(&self) -> u32 {
        *self as u32
    }
    fn from_u32(v: u32) -> Self {
        v as i32
    }
}

impl Discriminant for bool {
    fn to_u32(&self) -> u32 {
        *self as u32
    }
    fn from_u32(v: u32) -> Self {
        v != 0
    }
}

/// Encodes `v` into one contiguous buffer.
pub fn to_bytes<T: Xdr>(v: &T) -> Bytes {
    let mut e = Encoder::new();
    v.encode(&mut e);
    e.into_bytes()
}

/// Decodes a `T` that must take the whole of `b`.
pub fn from_bytes<T: Xdr>(b: Bytes) -> Result<T, DecodeError> {
    let mut d = Decoder::new(b);
    let v = T::decode(&mut d)?;
    d.finish()?;
    Ok(v)
}

macro_rules! int_impl {
    ($t:ty, $put:ident, $get:ident, $min:expr) => {
        impl Xdr for $t {
            const MIN_SIZE: usize = $min;
            fn encode(&self, enc: &mut Encoder) {
                enc.$put(*self);
            }
            fn decode(dec: &mut Decoder) -> Result<Self, DecodeError> {
                dec.$get()
            }
        }
    };
}

int_impl!(u32, put_u32, get_u32, 4);
int_impl!(i32, put_i32, get_i32, 4);
int_impl!(u64, put_u64, get_u64, 8);
int_impl!(i64, put_i64, get_i64, 8);
int_impl!(bool, put_bool, get_bool, 4);

/// `void`.
impl Xdr for () {
    const MIN_SIZE: usize = 0;
    fn encode(&self, _: &mut Encoder) {}
    fn decode(_: &mut Decoder) -> Result<Self, DecodeError> {
        Ok(())
    }
}

/// Fixed-length opaque data, `opaque x[N]`.
impl<const N: usize> Xdr for [u8; N] {
    const MIN_SIZE: usize = (N + 3) & !3;
    fn encode(&self, enc: &mut Encoder) {
        enc.put_fixed(self);
    }
    fn decode(dec: &mut Decoder) -> Result<Self, DecodeError> {
        dec.get_fixed()
    }
}

/// Variable-length opaque data, `opaque x<>`, decoded as a slice of the input.
impl Xdr for Bytes {
    fn encode(&self, enc: &mut Encoder) {
        enc.put_opaque(self);
    }
    fn decode(dec: &mut Decoder) -> Result<Self, DecodeError> {
        dec.get_opaque(u32::MAX)
    }
}

impl XdrBounded for Bytes {
    fn decode_bounded(dec: &mut Decoder, max: u32) -> Result<Self, DecodeError> {
        dec.get_opaque(max)
    }
}

/// Variable-length array, `T x<>`.
impl<T: Xdr> Xdr for Vec<T> {
    fn encode(&self, enc: &mut Encoder) {
        enc.put_u32(self.len() as u32);
        for v in self {
            v.encode(enc);
        }
    }
    fn decode(dec: &mut Decoder) -> Result<Self, DecodeError> {
        Self::decode_bounded(dec, u32::MAX)
    }
}

impl<T: Xdr> XdrBounded for Vec<T> {
    fn decode_bounded(dec: &mut Decoder, max: u32) -> Result<Self, DecodeError> {
        // Every element takes at least MIN_SIZE bytes (at least 1 is assumed even for
        // zero-size elements), so the count is bounded by the input before we allocate.
        let n = dec.get_length(max, T::MIN_SIZE)?;
        let mut v = Vec::with_capacity(n.min(dec.remaining() / T::MIN_SIZE.max(1)));
        for _ in 0..n {
            v.push(T::decode(dec)?);
        }
        Ok(v)
    }
}

/// Optional data, `T *x`: a bool followed by the value when true.
impl<T: Xdr> Xdr for Option<T> {
    fn encode(&self, enc: &mut Encoder) {
        match self {
            None => enc.put_bool(false),
            Some(v) => {
                enc.put_bool(true);
                v.encode(enc);
            }
        }
    }
    fn decode(dec: &mut Decoder) -> Result<Self, DecodeError> {
        if dec.get_bool()? {
            Ok(Some(T::decode(dec)?))
        } else {
            Ok(None)
        }
    }
}

impl<T: Xdr> Xdr for Box<T> {
    const MIN_SIZE: usize = T::MIN_SIZE;
    fn encode(&self, enc: &mut Encoder) {
        (**self).encode(enc);
    }
    fn decode(dec: &mut Decoder) -> Result<Self, DecodeError> {
        T::decode(dec).map(Box::new)
    }
}

/// An XDR string (`utf8string`, `component4`, `linktext4`, ...), kept as the bytes that came on
/// the wire so that a name the client sent is never altered. RFC 8881 section 14 asks the
/// server to check UTF-8 where it matters; [`Utf8String::as_str`] does.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Utf8String(pub Bytes);

impl Utf8String {
    /// The string, if it is valid UTF-8.
    pub fn as_str(&self) -> Option<&str> {
        core::str::from_utf8(&self.0).ok()
    }

    /// The raw bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// True for the empty string.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl core::fmt::Debug for Utf8String {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "{:?}", String::from_utf8_lossy(&self.0))
    }
}

impl core::fmt::Display for Utf8String {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(&String::from_utf8_lossy(&self.0))
    }
}

impl From<&str> for Utf8String {
    fn from(s: &str) -> Self {
        Self(Bytes::copy_from_slice(s.as_bytes()))
    }
}

impl From<String> for Utf8String {
    fn from(s: String) -> Self {
        Self(Bytes::from(s))
    }
}

impl Xdr for Utf8String {
    fn encode(&self, enc: &mut Encoder) {
        enc.put_opaque(&self.0);
    }
    fn decode(dec: &mut Decoder) -> Result<Self, DecodeError> {
        dec.get_opaque(u32::MAX).map(Self)
    }
}

impl XdrBounded for Utf8String {
    fn decode_bounded(dec: &mut Decoder, max: u32) -> Result<Self, DecodeError> {
        dec.get_opaque(max).map(Self)
    }
}

#[cfg(any(test, feature = "arbitrary"))]
impl proptest::arbitrary::Arbitrary for Utf8String {
    type Parameters = ();
    type Strategy = proptest::strategy::BoxedStrategy<Self>;
    fn arbitrary_with(_: ()) -> Self::Strategy {
        use proptest::strategy::Strategy;
        "[a-zA-Z0-9._@-]{0,16}".prop_map(Utf8String::from).boxed()
    }
}

/// Declares an XDR `enum` as an open newtype over `u32` with named constants in the RFC's
/// spelling. An unknown value still decodes (and prints as a number), so the protocol layer
/// decides what an unknown value means, not the codec.
#[macro_export]
macro_rules! xdr_enum {
    (
        $(#[$meta:meta])*
        pub struct $name:ident {
            $( $(#[$cmeta:meta])* $cname:ident = $cval:expr, )*
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name(pub u32);

        #[allow(missing_docs)]
        impl $name {
            $( $(#[$cmeta])* pub const $cname: Self = Self($cval); )*

            /// Every named value.
            pub const ALL: &'static [Self] = &[$(Self::$cname,)*];

            /// The RFC name of this value, if it has one.
            pub fn name(self) -> Option<&'static str> {
                match self.0 {
                    $( v if v == $cval => Some(stringify!($cname)), )*
                    _ => None,
                }
            }
        }

        impl ::core::fmt::Debug for $name {
            fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                match self.name() {
                    Some(n) => f.write_str(n),
                    None => write!(f, "{}({})", stringify!($name), self.0),
                }
            }
        }

        impl ::core::fmt::Display for $name {
            fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                ::core::fmt::Debug::fmt(self, f)
            }
        }

        impl $crate::xdr::Xdr for $name {
            fn encode(&self, enc: &mut $crate::xdr::Encoder) {
                enc.put_u32(self.0);
            }
            fn decode(dec: &mut $crate::xdr::Decoder)
                -> ::core::result::Result<Self, $crate::xdr::DecodeError> {
                dec.get_u32().map(Self)
            }
        }

        impl $crate::xdr::Discriminant for $name {
            fn to_u32(&self) -> u32 {
                self.0
            }
            fn from_u32(v: u32) -> Self {
                Self(v)
            }
        }

        #[cfg(any(test, feature = "arbitrary"))]
        impl ::proptest::arbitrary::Arbitrary for $name {
            type Parameters = ();
            type Strategy = ::proptest::strategy::BoxedStrategy<Self>;
            fn arbitrary_with(_: ()) -> Self::Strategy {
                use ::proptest::strategy::Strategy as _;
                ::proptest::sample::select(Self::ALL).boxed()
            }
        }
    };
}

#[cfg(test)]
mod tests;

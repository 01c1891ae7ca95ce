//! Decode errors: a small `Copy` value with static context, allocated nowhere.

use core::fmt;

/// What went wrong while decoding.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DecodeErrorKind {
    /// The input ended before a fixed-size item was complete.
    Truncated {
        /// Bytes the item needs.
        needed: usize,
        /// Bytes left in the input.
        remaining: usize,
    },
    /// A length prefix claims more bytes (or elements) than are left in the input.
    LengthBeyondInput {
        /// The length on the wire.
        len: u32,
        /// Bytes left in the input.
        remaining: usize,
    },
    /// A length prefix exceeds the protocol's or the configured maximum for this item.
    TooLong {
        /// The length on the wire.
        len: u32,
        /// The maximum allowed.
        max: u32,
    },
    /// A union discriminant for which the type has no arm.
    BadDiscriminant(u32),
    /// An XDR `bool` that is neither 0 nor 1.
    BadBool(u32),
    /// Padding after opaque data that is not zero (RFC 4506 section 3 requires zeros).
    NonZeroPadding,
    /// A complete item was decoded but bytes remain where the message should end.
    TrailingBytes(usize),
    /// A value that is well-formed XDR but invalid for this type.
    Invalid(&'static str),
}

/// A decoding failure: what kind, which item was being decoded, and at which byte offset of the
/// input (counted from the start of the buffer the [`crate::xdr::Decoder`] was made from).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DecodeError {
    /// The kind of failure.
    pub kind: DecodeErrorKind,
    /// The innermost named item being decoded, e.g. `"Write4Args.data"`; empty if unknown.
    pub what: &'static str,
    /// Byte offset of the failing item in the input.
    pub offset: usize,
}

impl DecodeError {
    /// A new error without context.
    pub const fn new(kind: DecodeErrorKind, offset: usize) -> Self {
        Self {
            kind,
            what: "",
            offset,
        }
    }

    /// A union discriminant with no arm, found at `offset`.
    pub const fn bad_discriminant(disc: u32, offset: usize) -> Self {
        Self::new(DecodeErrorKind::BadDiscriminant(disc), offset)
    }

    /// Names the item being decoded, unless an inner item already named itself (the innermost
    /// name is the most useful one).
    pub fn context(mut self, what: &'static str) -> Self {
        if self.what.is_empty() {
            self.what = what;
        }
        self
    }
}

impl fmt::Display for DecodeErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Self::Truncated { needed, remaining } => {
                write!(f, "input truncated: need {needed} bytes, {remaining} left")
            }
            Self::LengthBeyondInput { len, remaining } => {
                write!(f, "length {len} exceeds the {remaining} bytes left")
            }
            Self::TooLong { len, max } => write!(f, "length {len} exceeds the maximum {max}"),
            Self::BadDiscriminant(d) => write!(f, "no union arm for discriminant {d}"),
            Self::BadBool(v) => write!(f, "bool value {v} is neither 0 nor 1"),
            Self::NonZeroPadding => write!(f, "non-zero padding bytes"),
            Self::TrailingBytes(n) => write!(f, "{n} trailing bytes after the message"),
            Self::Invalid(why) => write!(f, "invalid value: {why}"),
        }
    }
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = if self.what.is_empty() {
            "value"
        } else {
            self.what
        };
        write!(
            f,
            "decoding {what} at offset {}: {}",
            self.offset, self.kind
        )
    }
}

impl std::error::Error for DecodeError {}

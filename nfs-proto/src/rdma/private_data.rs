//! The RDMA-CM private data of RPC-over-RDMA version 1 (RFC 8797): eight bytes a peer puts in
//! its connection request or acceptance to advertise its inline thresholds and whether it
//! accepts Remote Invalidation.
//!
//! ```text
//!  0               1               2               3
//! +---------------+---------------+---------------+---------------+
//! |             format identifier 0xf6ab0e18                      |
//! +---------------+---------------+---------------+---------------+
//! |  version = 1  | flags (bit 0: |   send size   | receive size  |
//! |               | remote inval.)| KiB - 1       | KiB - 1       |
//! +---------------+---------------+---------------+---------------+
//! ```
//!
//! A peer that sends none, or something this format does not describe, gets the RFC 8166
//! defaults (1024-byte inline thresholds, no Remote Invalidation): private data is an optional
//! extension, so its absence or an unknown format is not an error for the connection.

use core::fmt;

/// The format identifier (RFC 8797; IANA RDMA-CM Private Data Identifiers registry).
pub const PRIVATE_DATA_FORMAT: u32 = 0xf6ab_0e18;

/// The only version of the format.
pub const PRIVATE_DATA_VERSION: u8 = 1;

/// Bytes of the format. RDMA-CM may deliver more (InfiniBand pads private data with zeros to
/// a fixed size); what follows is ignored.
pub const PRIVATE_DATA_LEN: usize = 8;

/// Flag bit: the sender accepts Send With Invalidate (Remote Invalidation).
pub const FLAG_REMOTE_INVALIDATION: u8 = 0x01;

/// The inline threshold of a peer that advertises none (RFC 8166 section 3.3.2), also the
/// smallest the private data can express.
pub const DEFAULT_INLINE_THRESHOLD: u32 = 1024;

/// The largest inline threshold the private data can express: 256 KiB.
pub const MAX_INLINE_THRESHOLD: u32 = 256 * 1024;

/// An inline size as the private data carries it: `(size / 1024) - 1` in one byte, so a
/// multiple of 1 KiB from 1 KiB to 256 KiB.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct InlineSize(u8);

impl InlineSize {
    /// The smallest size: 1 KiB.
    pub const MIN: Self = Self(0);
    /// The largest size: 256 KiB.
    pub const MAX: Self = Self(255);

    /// The size for a buffer of `bytes`: rounded down to a multiple of 1 KiB (advertising
    /// less than one has is safe, more is not) and capped at 256 KiB. `None` below 1 KiB,
    /// which RPC-over-RDMA does not allow.
    pub fn from_bytes(bytes: u32) -> Option<Self> {
        if bytes < DEFAULT_INLINE_THRESHOLD {
            return None;
        }
        Some(Self((bytes.min(MAX_INLINE_THRESHOLD) / 1024 - 1) as u8))
    }

    /// The size in bytes.
    pub fn bytes(self) -> u32 {
        (u32::from(self.0) + 1) * 1024
    }

    /// The byte on the wire.
    pub fn encoded(self) -> u8 {
        self.0
    }

    /// From the byte on the wire (every value is a valid size).
    pub fn from_encoded(v: u8) -> Self {
        Self(v)
    }
}

/// The contents of RPC-over-RDMA version 1 private data.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PrivateData {
    /// The sender accepts Send With Invalidate.
    pub remote_invalidation: bool,
    /// The largest message the sender sends inline.
    pub send_size: InlineSize,
    /// The size of the sender's Receive buffers: the largest message it accepts inline.
    pub recv_size: InlineSize,
}

/// Why received private data is not RPC-over-RDMA version 1 private data. The connection
/// goes on with the defaults ([`Thresholds::negotiate`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PrivateDataError {
    /// Fewer than eight bytes.
    TooShort {
        /// Bytes received.
        len: usize,
    },
    /// Another format identifier.
    UnknownFormat(u32),
    /// Another version of this format.
    UnsupportedVersion(u8),
}

impl fmt::Display for PrivateDataError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Self::TooShort { len } => write!(f, "{len} bytes of private data, fewer than 8"),
            Self::UnknownFormat(id) => {
                write!(f, "private data format {id:#010x} is not RPC-over-RDMA's")
            }
            Self::UnsupportedVersion(v) => write!(f, "private data version {v} is not 1"),
        }
    }
}

impl std::error::Error for PrivateDataError {}

impl PrivateData {
    /// The eight bytes to send. Flag bits other than Remote Invalidation are sent as zero.
    pub fn to_bytes(&self) -> [u8; PRIVATE_DATA_LEN] {
        let id = PRIVATE_DATA_FORMAT.to_be_bytes();
        let flags = if self.remote_invalidation {
            FLAG_REMOTE_INVALIDATION
        } else {
            0
        };
        [
            id[0],
            id[1],
            id[2],
            id[3],
            PRIVATE_DATA_VERSION,
            flags,
            self.send_size.encoded(),
            self.recv_size.encoded(),
        ]
    }

    /// Reads private data as received: the format identifier and version must match; flag bits
    /// this version does not define and bytes after the eighth are ignored.
    pub fn decode(data: &[u8]) -> Result<Self, PrivateDataError> {
        let Some(b) = data.get(..PRIVATE_DATA_LEN) else {
            return Err(PrivateDataError::TooShort { len: data.len() });
        };
        let id = u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
        if id != PRIVATE_DATA_FORMAT {
            return Err(PrivateDataError::UnknownFormat(id));
        }
        if b[4] != PRIVATE_DATA_VERSION {
            return Err(PrivateDataError::UnsupportedVersion(b[4]));
        }
        Ok(Self {
            remote_invalidation: b[5] & FLAG_REMOTE_INVALIDATION != 0,
            send_size: InlineSize::from_encoded(b[6]),
            recv_size: InlineSize::from_encoded(b[7]),
        })
    }
}

/// What a connection uses once both sides' private data is known.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Thresholds {
    /// The largest message to send inline: ours, no more than the peer receives.
    pub send: u32,
    /// The largest message to expect inline (the Receive buffer size to post): ours, no more
    /// than the peer sends.
    pub recv: u32,
    /// Whether the peer accepts Send With Invalidate.
    pub peer_remote_invalidation: bool,
}

impl Thresholds {
    /// Combines what this side advertised with what the peer sent (`None` when it sent
    /// nothing). Without valid peer private data the peer is taken to send and receive 1 KiB
    /// and not to accept Remote Invalidation; the reason it was not valid is returned beside,
    /// for the log.
    pub fn negotiate(local: &PrivateData, peer: Option<&[u8]>) -> (Self, Option<PrivateDataError>) {
        let (peer, why) = match peer.map(PrivateData::decode) {
            Some(Ok(p)) => (Some(p), None),
            Some(Err(e)) => (None, Some(e)),
            None => (None, None),
        };
        let (peer_send, peer_recv, inv) = match peer {
            Some(p) => (
                p.send_size.bytes(),
                p.recv_size.bytes(),
                p.remote_invalidation,
            ),
            None => (DEFAULT_INLINE_THRESHOLD, DEFAULT_INLINE_THRESHOLD, false),
        };
        let t = Self {
            send: local.send_size.bytes().min(peer_recv),
            recv: local.recv_size.bytes().min(peer_send),
            peer_remote_invalidation: inv,
        };
        (t, why)
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn sizes_are_kibibytes_minus_one_in_a_byte() {
        assert_eq!(InlineSize::from_bytes(1024).unwrap().encoded(), 0);
        assert_eq!(InlineSize::from_bytes(4096).unwrap().encoded(), 3);
        assert_eq!(InlineSize::from_bytes(4096 + 1023).unwrap().encoded(), 3);
        assert_eq!(InlineSize::from_bytes(256 * 1024).unwrap(), InlineSize::MAX);
        assert_eq!(InlineSize::from_bytes(1 << 30).unwrap(), InlineSize::MAX);
        assert_eq!(InlineSize::from_bytes(1023), None);
        assert_eq!(InlineSize::from_encoded(255).bytes(), 262_144);
        assert_eq!(InlineSize::MIN.bytes(), 1024);
    }

    #[test]
    fn golden_bytes_of_a_4k_peer_with_remote_invalidation() {
        let p = PrivateData {
            remote_invalidation: true,
            send_size: InlineSize::from_bytes(4096).unwrap(),
            recv_size: InlineSize::from_bytes(4096).unwrap(),
        };
        let b = [0xf6, 0xab, 0x0e, 0x18, 1, 1, 3, 3];
        assert_eq!(p.to_bytes(), b);
        assert_eq!(PrivateData::decode(&b), Ok(p));
    }

    #[test]
    fn every_prefix_fails_and_padding_is_ignored() {
        let b = PrivateData {
            remote_invalidation: false,
            send_size: InlineSize::MAX,
            recv_size: InlineSize::MIN,
        }
        .to_bytes();
        for n in 0..b.len() {
            assert_eq!(
                PrivateData::decode(&b[..n]),
                Err(PrivateDataError::TooShort { len: n })
            );
        }
        let mut padded = b.to_vec();
        padded.resize(92, 0);
        assert!(PrivateData::decode(&padded).is_ok());
    }

    #[test]
    fn other_formats_and_versions_are_refused_and_unknown_flags_ignored() {
        let mut b = [0xf6, 0xab, 0x0e, 0x19, 1, 0, 0, 0];
        assert_eq!(
            PrivateData::decode(&b),
            Err(PrivateDataError::UnknownFormat(0xf6ab0e19))
        );
        b[3] = 0x18;
        b[4] = 2;
        assert_eq!(
            PrivateData::decode(&b),
            Err(PrivateDataError::UnsupportedVersion(2))
        );
        b[4] = 1;
        b[5] = 0xfe;
        assert!(!PrivateData::decode(&b).unwrap().remote_invalidation);
    }

    #[test]
    fn thresholds_take_the_smaller_side_or_the_defaults() {
        let local = PrivateData {
            remote_invalidation: false,
            send_size: InlineSize::from_bytes(16384).unwrap(),
            recv_size: InlineSize::from_bytes(8192).unwrap(),
        };
        let peer = PrivateData {
            remote_invalidation: true,
            send_size: InlineSize::from_bytes(4096).unwrap(),
            recv_size: InlineSize::from_bytes(65536).unwrap(),
        }
        .to_bytes();
        let (t, why) = Thresholds::negotiate(&local, Some(&peer));
        assert_eq!(why, None);
        assert_eq!(
            t,
            Thresholds {
                send: 16384,
                recv: 4096,
                peer_remote_invalidation: true
            }
        );
        let defaults = Thresholds {
            send: 1024,
            recv: 1024,
            peer_remote_invalidation: false,
        };
        assert_eq!(Thresholds::negotiate(&local, None), (defaults, None));
        assert_eq!(
            Thresholds::negotiate(&local, Some(&[1, 2, 3])),
            (defaults, Some(PrivateDataError::TooShort { len: 3 }))
        );
    }

    proptest! {
        #[test]
        fn private_data_round_trips(inv: bool, send: u8, recv: u8) {
            let p = PrivateData {
                remote_invalidation: inv,
                send_size: InlineSize::from_encoded(send),
                recv_size: InlineSize::from_encoded(recv),
            };
            prop_assert_eq!(PrivateData::decode(&p.to_bytes()), Ok(p));
        }

        #[test]
        fn any_bytes_decode_or_fail_cleanly(data in proptest::collection::vec(any::<u8>(), 0..16)) {
            let local = PrivateData {
                remote_invalidation: true,
                send_size: InlineSize::MAX,
                recv_size: InlineSize::MAX,
            };
            let (t, _) = Thresholds::negotiate(&local, Some(&data));
            prop_assert!((DEFAULT_INLINE_THRESHOLD..=MAX_INLINE_THRESHOLD).contains(&t.send));
            prop_assert!((DEFAULT_INLINE_THRESHOLD..=MAX_INLINE_THRESHOLD).contains(&t.recv));
        }
    }
}

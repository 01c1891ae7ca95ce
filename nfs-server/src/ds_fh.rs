//! Data server filehandles: 32 bytes that name one object of one file (RFC 8881 section
//! 13.3: the filehandles of a file layout are the DS's, not the MDS's). The MDS makes them
//! for LAYOUTGET; a DS checks them with the key its MDS gave it ([`crate::keys::DsKeys`]).
//!
//! ```text
//!  byte  0      1      2..4           4..12          12..16        16..32
//!      +------+------+--------------+--------------+-------------+-----------------------------+
//!      | ver  | kind | stripe index | file id      | generation  | MAC: first 16 bytes of      |
//!      | = 1  | = 2  | u16 BE       | u64 BE       | u32 BE      | blake3::keyed_hash(DS fh    |
//!      |      |      |              |              |             |   key, bytes[0..16])        |
//!      +------+------+--------------+--------------+-------------+-----------------------------+
//! ```
//!
//! Same length and version byte as an MDS filehandle, kind 2 where MDS handles have 0 (pseudo
//! node) and 1 (object), and another key: an MDS handle never verifies as a DS handle, nor the
//! reverse. The object is `(file id, stripe index)`. The generation is covered by the MAC but
//! not checked by the DS, which does not know the file's: a DS keeps no namespace, so a
//! well-formed DS handle is never STALE there (objects of removed files are deleted by the
//! MDS through the control protocol). Another length, version or kind, or a MAC that does not
//! verify, is `NFS4ERR_BADHANDLE`.

use bytes::Bytes;
use nfs_proto::nfs4::{NfsFh4, NfsStat4};

/// Length of every DS filehandle.
pub const DS_FH_LEN: usize = 32;
/// The layout version in byte 0.
pub const DS_FH_VERSION: u8 = 1;
/// The kind byte of a DS filehandle.
pub const DS_FH_KIND: u8 = 2;

/// What a DS filehandle names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DsFh {
    /// The stripe index: which object of the file (`nflda_stripe_indices` order).
    pub stripe: u16,
    /// The file id (the MDS's inode number).
    pub fileid: u64,
    /// The file's generation when the layout was made.
    pub generation: u32,
}

/// Why bytes are not a DS filehandle: all are `NFS4ERR_BADHANDLE`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DsFhError {
    /// Not [`DS_FH_LEN`] bytes.
    #[error("DS filehandle of {0} bytes")]
    Length(usize),
    /// A layout version this code does not write.
    #[error("DS filehandle version {0}")]
    Version(u8),
    /// Not kind 2 (an MDS filehandle, say).
    #[error("filehandle kind {0} on a data server")]
    Kind(u8),
    /// The MAC does not verify: forged, corrupted, or of another cluster.
    #[error("DS filehandle MAC does not verify")]
    Mac,
}

impl From<DsFhError> for NfsStat4 {
    fn from(_: DsFhError) -> Self {
        NfsStat4::NFS4ERR_BADHANDLE
    }
}

/// Makes and checks DS filehandles with the DS filehandle key.
#[derive(Clone)]
pub struct DsFhCodec {
    key: [u8; 32],
}

impl std::fmt::Debug for DsFhCodec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("DsFhCodec { key: <secret> }")
    }
}

impl DsFhCodec {
    /// A codec keyed by `key` ([`crate::keys::DsKeys::fh_key`]).
    pub fn new(key: [u8; 32]) -> Self {
        Self { key }
    }

    fn mac(&self, head: &[u8]) -> [u8; 16] {
        let hash = blake3::keyed_hash(&self.key, head);
        let mut mac = [0u8; 16];
        mac.copy_from_slice(&hash.as_bytes()[..16]);
        mac
    }

    /// The handle of object `fh.stripe` of file `fh.fileid`.
    pub fn encode(&self, fh: DsFh) -> NfsFh4 {
        let mut b = [0u8; DS_FH_LEN];
        b[0] = DS_FH_VERSION;
        b[1] = DS_FH_KIND;
        b[2..4].copy_from_slice(&fh.stripe.to_be_bytes());
        b[4..12].copy_from_slice(&fh.fileid.to_be_bytes());
        b[12..16].copy_from_slice(&fh.generation.to_be_bytes());
        let mac = self.mac(&b[..16]);
        b[16..].copy_from_slice(&mac);
        NfsFh4(Bytes::copy_from_slice(&b))
    }

    /// Checks length, version, kind and MAC (compared without early exit), then reads the
    /// fields.
    pub fn decode(&self, fh: &NfsFh4) -> Result<DsFh, DsFhError> {
        let b: &[u8] = &fh.0;
        if b.len() != DS_FH_LEN {
            return Err(DsFhError::Length(b.len()));
        }
        if b[0] != DS_FH_VERSION {
            return Err(DsFhError::Version(b[0]));
        }
        if b[1] != DS_FH_KIND {
            return Err(DsFhError::Kind(b[1]));
        }
        let want = self.mac(&b[..16]);
        let diff = want.iter().zip(&b[16..]).fold(0u8, |d, (x, y)| d | (x ^ y));
        if diff != 0 {
            return Err(DsFhError::Mac);
        }
        Ok(DsFh {
            stripe: u16::from_be_bytes([b[2], b[3]]),
            fileid: u64::from_be_bytes([b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11]]),
            generation: u32::from_be_bytes([b[12], b[13], b[14], b[15]]),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const KEY: [u8; 32] = [5; 32];

    #[test]
    fn a_handle_decodes_to_what_was_encoded() {
        let c = DsFhCodec::new(KEY);
        let fh = DsFh {
            stripe: 2,
            fileid: 0x0123_4567_89ab_cdef,
            generation: 9,
        };
        let h = c.encode(fh);
        assert_eq!(h.0.len(), DS_FH_LEN);
        assert_eq!(&h.0[..4], &[1, 2, 0, 2]);
        assert_eq!(c.decode(&h), Ok(fh));
    }

    #[test]
    fn a_handle_of_another_cluster_is_refused() {
        let h = DsFhCodec::new(KEY).encode(DsFh {
            stripe: 0,
            fileid: 7,
            generation: 1,
        });
        assert_eq!(DsFhCodec::new([6; 32]).decode(&h), Err(DsFhError::Mac));
    }

    #[test]
    fn wrong_length_version_or_kind_is_refused_before_the_mac() {
        let c = DsFhCodec::new(KEY);
        let good = c.encode(DsFh {
            stripe: 1,
            fileid: 1,
            generation: 1,
        });
        assert_eq!(
            c.decode(&NfsFh4(good.0.slice(..31))),
            Err(DsFhError::Length(31))
        );
        let mut v = good.0.to_vec();
        v[0] = 2;
        assert_eq!(
            c.decode(&NfsFh4(Bytes::from(v.clone()))),
            Err(DsFhError::Version(2))
        );
        v[0] = 1;
        v[1] = 1;
        assert_eq!(
            c.decode(&NfsFh4(Bytes::from(v))),
            Err(DsFhError::Kind(1)),
            "an MDS object handle is not a DS handle"
        );
        assert_eq!(NfsStat4::from(DsFhError::Mac), NfsStat4::NFS4ERR_BADHANDLE);
    }

    #[test]
    fn debug_never_prints_the_key() {
        let s = format!("{:?}", DsFhCodec::new([0xcd; 32]));
        assert!(!s.contains("205"), "{s}");
    }

    proptest! {
        #[test]
        fn any_single_byte_change_is_refused(
            byte in 0usize..32, flip in 1u8..=255,
            stripe in any::<u16>(), fileid in any::<u64>(), generation in any::<u32>()
        ) {
            let c = DsFhCodec::new(KEY);
            let mut v = c.encode(DsFh { stripe, fileid, generation }).0.to_vec();
            v[byte] ^= flip;
            prop_assert!(c.decode(&NfsFh4(Bytes::from(v))).is_err());
        }

        #[test]
        fn handles_round_trip(stripe in any::<u16>(), fileid in any::<u64>(), generation in any::<u32>()) {
            let c = DsFhCodec::new(KEY);
            let fh = DsFh { stripe, fileid, generation };
            prop_assert_eq!(c.decode(&c.encode(fh)), Ok(fh));
        }
    }
}

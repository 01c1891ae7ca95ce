//! MDS filehandles: 32 bytes that name an object, survive restarts, and cannot be forged.
//!
//! ```text
//!  byte  0      1      2..4        4..12          12..16        16..32
//!      +------+------+-----------+--------------+-------------+-----------------------------+
//!      | ver  | kind | export id | file id      | generation  | MAC: first 16 bytes of      |
//!      | = 1  | 0/1  | u16 BE    | u64 BE       | u32 BE      | blake3::keyed_hash(key,     |
//!      |      |      |           |              |             |   bytes[0..16])             |
//!      +------+------+-----------+--------------+-------------+-----------------------------+
//! ```
//!
//! kind 0 is a node of the pseudo file system (RFC 8881 section 7.3), kind 1 an object of an
//! export. A handle of another length or version, an unknown kind, or a MAC that does not verify
//! is NFS4ERR_BADHANDLE; a well-formed handle whose file is gone (or whose generation differs) is
//! NFS4ERR_STALE, which only the store can tell ([`super::Store::resolve`]).

use bytes::Bytes;
use nfs_proto::nfs4::{NfsFh4, NfsStat4};

/// Length of every MDS filehandle.
pub const FH_LEN: usize = 32;
/// The layout version in byte 0.
pub const FH_VERSION: u8 = 1;
/// The export that holds the namespace of this store.
pub const DEFAULT_EXPORT: u16 = 1;

/// What a filehandle names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FhKind {
    /// A node of the pseudo file system that joins the exports (RFC 8881 section 7.3).
    Pseudo,
    /// A file system object of an export, stored in the metadata store.
    Object,
}

impl FhKind {
    fn to_byte(self) -> u8 {
        match self {
            Self::Pseudo => 0,
            Self::Object => 1,
        }
    }
}

/// The fields of a filehandle whose MAC verified.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DecodedFh {
    /// Pseudo-fs node or export object.
    pub kind: FhKind,
    /// Which export (or pseudo-fs) the file id belongs to.
    pub export: u16,
    /// The file id (the inode number; `fileid` attribute).
    pub fileid: u64,
    /// Guards against a file id that was reused; must equal the inode's.
    pub generation: u32,
}

/// Why a filehandle is not one of ours: all are NFS4ERR_BADHANDLE.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum FhError {
    /// Not [`FH_LEN`] bytes.
    #[error("filehandle of {0} bytes")]
    Length(usize),
    /// A layout version this server does not write.
    #[error("filehandle version {0}")]
    Version(u8),
    /// The MAC does not verify: forged, corrupted, or made with another server key.
    #[error("filehandle MAC does not verify")]
    Mac,
    /// A kind byte this server does not write (under a valid MAC: a newer server's handle).
    #[error("filehandle kind {0}")]
    Kind(u8),
}

impl From<FhError> for NfsStat4 {
    fn from(_: FhError) -> Self {
        NfsStat4::NFS4ERR_BADHANDLE
    }
}

/// Makes and checks filehandles with the server key kept in the store.
#[derive(Clone)]
pub struct FhCodec {
    key: [u8; 32],
}

impl core::fmt::Debug for FhCodec {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("FhCodec { key: <secret> }")
    }
}

impl FhCodec {
    /// A codec keyed by `key` (the server key: [`super::Store::server_key`]).
    pub fn new(key: [u8; 32]) -> Self {
        Self { key }
    }

    /// The handle of export object `fileid` (kind 1).
    pub fn encode(&self, export: u16, fileid: u64, generation: u32) -> NfsFh4 {
        self.encode_kind(FhKind::Object, export, fileid, generation)
    }

    /// The handle of any kind of node.
    pub fn encode_kind(&self, kind: FhKind, export: u16, fileid: u64, generation: u32) -> NfsFh4 {
        let mut b = [0u8; FH_LEN];
        b[0] = FH_VERSION;
        b[1] = kind.to_byte();
        b[2..4].copy_from_slice(&export.to_be_bytes());
        b[4..12].copy_from_slice(&fileid.to_be_bytes());
        b[12..16].copy_from_slice(&generation.to_be_bytes());
        let mac = self.mac(&b[..16]);
        b[16..].copy_from_slice(&mac);
        NfsFh4(Bytes::copy_from_slice(&b))
    }

    /// Checks length, version and MAC (in constant time), then reads the fields.
    pub fn decode(&self, fh: &NfsFh4) -> Result<DecodedFh, FhError> {
        let b: &[u8] = &fh.0;
        if b.len() != FH_LEN {
            return Err(FhError::Length(b.len()));
        }
        if b[0] != FH_VERSION {
            return Err(FhError::Version(b[0]));
        }
        let want = self.mac(&b[..16]);
        let diff = want.iter().zip(&b[16..]).fold(0u8, |d, (x, y)| d | (x ^ y));
        if diff != 0 {
            return Err(FhError::Mac);
        }
        let kind = match b[1] {
            0 => FhKind::Pseudo,
            1 => FhKind::Object,
            k => return Err(FhError::Kind(k)),
        };
        let word = |r: core::ops::Range<usize>| b[r].iter().fold(0u64, |a, &x| a << 8 | x as u64);
        Ok(DecodedFh {
            kind,
            export: word(2..4) as u16,
            fileid: word(4..12),
            generation: word(12..16) as u32,
        })
    }

    fn mac(&self, head: &[u8]) -> [u8; 16] {
        let h = blake3::keyed_hash(&self.key, head);
        let mut out = [0u8; 16];
        out.copy_from_slice(&h.as_bytes()[..16]);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn codec() -> FhCodec {
        FhCodec::new([7; 32])
    }

    #[test]
    fn handle_is_32_bytes_laid_out_as_documented() {
        let fh = codec().encode(0x0102, 0x0304_0506_0708_090a, 0x0b0c_0d0e);
        assert_eq!(
            &fh.0[..16],
            &[1, 1, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14]
        );
        let mac = blake3::keyed_hash(&[7; 32], &fh.0[..16]);
        assert_eq!(&fh.0[16..], &mac.as_bytes()[..16]);
    }

    #[test]
    fn pseudo_handles_decode_as_pseudo() {
        let c = codec();
        let fh = c.encode_kind(FhKind::Pseudo, 0, 1, 0);
        assert_eq!(c.decode(&fh).unwrap().kind, FhKind::Pseudo);
    }

    #[test]
    fn wrong_length_is_badhandle() {
        let c = codec();
        let fh = c.encode(1, 2, 3);
        for n in [0, 1, 16, 31, 33, 128] {
            let mut v = fh.0.to_vec();
            v.resize(n, 0);
            let e = c.decode(&NfsFh4(v.into())).unwrap_err();
            assert_eq!(e, FhError::Length(n));
            assert_eq!(NfsStat4::from(e), NfsStat4::NFS4ERR_BADHANDLE);
        }
    }

    #[test]
    fn wrong_version_is_badhandle() {
        let c = codec();
        let mut v = c.encode(1, 2, 3).0.to_vec();
        v[0] = 2;
        assert_eq!(
            c.decode(&NfsFh4(v.into())).unwrap_err(),
            FhError::Version(2)
        );
    }

    #[test]
    fn handle_from_another_server_key_is_badhandle() {
        let fh = FhCodec::new([8; 32]).encode(1, 2, 3);
        assert_eq!(codec().decode(&fh).unwrap_err(), FhError::Mac);
    }

    #[test]
    fn unknown_kind_under_a_valid_mac_is_badhandle() {
        let c = codec();
        let mut b = [0u8; 32];
        b[0] = 1;
        b[1] = 9;
        let mac = c.mac(&b[..16]);
        b[16..].copy_from_slice(&mac);
        let e = c.decode(&NfsFh4(Bytes::copy_from_slice(&b))).unwrap_err();
        assert_eq!(e, FhError::Kind(9));
    }

    #[test]
    fn debug_does_not_print_the_key() {
        assert!(!format!("{:?}", codec()).contains('7'));
    }

    proptest! {
        #[test]
        fn handles_round_trip(export: u16, fileid: u64, generation: u32) {
            let c = codec();
            let d = c.decode(&c.encode(export, fileid, generation)).unwrap();
            prop_assert_eq!(d, DecodedFh { kind: FhKind::Object, export, fileid, generation });
        }

        #[test]
        fn any_flipped_bit_is_refused(
            export: u16, fileid: u64, generation: u32, bit in 0usize..256
        ) {
            let c = codec();
            let mut v = c.encode(export, fileid, generation).0.to_vec();
            v[bit / 8] ^= 1 << (bit % 8);
            prop_assert!(c.decode(&NfsFh4(v.into())).is_err());
        }

        #[test]
        fn random_bytes_never_decode(v in proptest::collection::vec(any::<u8>(), 0..64)) {
            prop_assert!(codec().decode(&NfsFh4(v.into())).is_err());
        }
    }
}

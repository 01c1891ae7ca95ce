//! Data server filehandles: 56 bytes that name one object of one file, *for one layout*
//! (RFC 8881 section 13.3: the filehandles of a file layout are the DS's, not the MDS's).
//! The MDS makes them for LAYOUTGET; a DS checks them with the key its MDS gave it
//! ([`crate::keys::DsKeys`]).
//!
//! ```text
//!  byte  0      1      2..4      4..12     12..16      16       17..20   20..32     32..40    40..56
//!      +------+------+---------+---------+-----------+--------+--------+----------+---------+-----------+
//!      | ver  | kind | stripe  | file id | generation| iomode | zero   | layout   | client  | MAC: 16 B |
//!      | = 2  | = 2  | index   | u64 BE  | u32 BE    | 1 READ |        | stateid  | id (the | of keyed_ |
//!      |      |      | u16 BE  |         |           | 2 RW   |        | `other`  | MDS's)  | hash(DS fh|
//!      |      |      |         |         |           |        |        |          | u64 BE  | key,0..40)|
//!      +------+------+---------+---------+-----------+--------+--------+----------+---------+-----------+
//! ```
//!
//! **Why a handle is bound to a layout.** A data server cannot tell which client or file a
//! stateid was issued for (its `other` has room for a 4-byte MAC only, see
//! [`crate::stateid`]). If DS handles named only the object, a client that had read one file
//! (a READ layout gives its handles) could write it with a write stateid of any other file it
//! opened. So the MDS binds each handle, under a 128-bit MAC, to the layout it was handed out
//! in: the layout stateid, its client and its iomode. The data server then serves a READ only
//! through a live layout of this MDS boot and under a stateid of that client and file (the
//! stateid's MAC covers both, `crate::stateid`), and a WRITE or COMMIT only through an RW
//! layout; the MDS pushes every layout stateid that goes (returned,
//! closed with its file, recalled, revoked, its client gone) to the data servers as a closed
//! counter, so the handles die with the layout (`data_server::gate`). A layout is granted
//! only to a client with open, lock or delegation state of that file, and RW only with write
//! access: a handle is a capability for what the MDS allowed, for as long as it allows it.
//!
//! Same version byte position as an MDS filehandle, kind 2 where MDS handles have 0 (pseudo
//! node) and 1 (object), another length and another key: an MDS handle never verifies as a
//! DS handle, nor the reverse. The object is `(file id, stripe index)`. The generation is
//! covered by the MAC but not checked by the DS, which keeps no namespace. Another length,
//! version or kind, an iomode other than 1 or 2, nonzero padding, or a MAC that does not
//! verify, is `NFS4ERR_BADHANDLE`.

use bytes::Bytes;
use nfs_proto::nfs4::{NfsFh4, NfsStat4, NFS4_OTHER_SIZE};

/// Length of every DS filehandle.
pub const DS_FH_LEN: usize = 56;
/// The layout version in byte 0 (version 1, 32 bytes, named the object only).
pub const DS_FH_VERSION: u8 = 2;
/// The kind byte of a DS filehandle.
pub const DS_FH_KIND: u8 = 2;
/// Bytes covered by the MAC.
const HEAD: usize = 40;

/// What a DS filehandle names: one object, through one layout.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DsFh {
    /// The stripe index: which object of the file (`nflda_stripe_indices` order).
    pub stripe: u16,
    /// The file id (the MDS's inode number).
    pub fileid: u64,
    /// The file's generation when the layout was made.
    pub generation: u32,
    /// Whether the layout is RW (WRITE and COMMIT need it) rather than READ.
    pub rw: bool,
    /// The `other` of the layout stateid the handle was handed out under: the handle works
    /// while that layout lives.
    pub layout: [u8; NFS4_OTHER_SIZE],
    /// The MDS's client id of the layout's holder: the I/O stateid must be this client's.
    pub clientid: u64,
}

impl DsFh {
    /// Whose state the I/O stateid must be: this handle's client, this file.
    pub fn holder(&self) -> crate::stateid::Holder {
        crate::stateid::Holder {
            clientid: self.clientid,
            fileid: self.fileid,
        }
    }
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
    /// The MAC verifies but the iomode byte or the padding is not one this code writes.
    #[error("DS filehandle fields out of range")]
    Fields,
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

    /// The handle of object `fh.stripe` of file `fh.fileid` under layout `fh.layout`.
    pub fn encode(&self, fh: DsFh) -> NfsFh4 {
        let mut b = [0u8; DS_FH_LEN];
        b[0] = DS_FH_VERSION;
        b[1] = DS_FH_KIND;
        b[2..4].copy_from_slice(&fh.stripe.to_be_bytes());
        b[4..12].copy_from_slice(&fh.fileid.to_be_bytes());
        b[12..16].copy_from_slice(&fh.generation.to_be_bytes());
        b[16] = if fh.rw { 2 } else { 1 };
        b[20..32].copy_from_slice(&fh.layout);
        b[32..HEAD].copy_from_slice(&fh.clientid.to_be_bytes());
        let mac = self.mac(&b[..HEAD]);
        b[HEAD..].copy_from_slice(&mac);
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
        let want = self.mac(&b[..HEAD]);
        let diff = want
            .iter()
            .zip(&b[HEAD..])
            .fold(0u8, |d, (x, y)| d | (x ^ y));
        if diff != 0 {
            return Err(DsFhError::Mac);
        }
        let rw = match b[16] {
            1 => false,
            2 => true,
            _ => return Err(DsFhError::Fields),
        };
        if b[17..20] != [0, 0, 0] {
            return Err(DsFhError::Fields);
        }
        let mut layout = [0u8; NFS4_OTHER_SIZE];
        layout.copy_from_slice(&b[20..32]);
        let mut clientid = [0u8; 8];
        clientid.copy_from_slice(&b[32..HEAD]);
        Ok(DsFh {
            stripe: u16::from_be_bytes([b[2], b[3]]),
            fileid: u64::from_be_bytes([b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11]]),
            generation: u32::from_be_bytes([b[12], b[13], b[14], b[15]]),
            rw,
            layout,
            clientid: u64::from_be_bytes(clientid),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const KEY: [u8; 32] = [5; 32];
    const LAYOUT: [u8; NFS4_OTHER_SIZE] = [4, 0, 0, 1, 0, 0, 0, 9, 1, 2, 3, 4];

    fn fh(stripe: u16, fileid: u64, generation: u32, rw: bool) -> DsFh {
        DsFh {
            stripe,
            fileid,
            generation,
            rw,
            layout: LAYOUT,
            clientid: 0x0102_0304_0506_0708,
        }
    }

    #[test]
    fn a_handle_decodes_to_what_was_encoded() {
        let c = DsFhCodec::new(KEY);
        for rw in [false, true] {
            let fh = fh(2, 0x0123_4567_89ab_cdef, 9, rw);
            let h = c.encode(fh);
            assert_eq!(h.0.len(), DS_FH_LEN);
            assert_eq!(&h.0[..4], &[2, 2, 0, 2]);
            assert_eq!(h.0[16], if rw { 2 } else { 1 });
            assert_eq!(&h.0[20..32], &LAYOUT);
            assert_eq!(&h.0[32..40], &[1, 2, 3, 4, 5, 6, 7, 8]);
            assert_eq!(c.decode(&h), Ok(fh));
        }
    }

    #[test]
    fn a_handle_of_another_cluster_is_refused() {
        let h = DsFhCodec::new(KEY).encode(fh(0, 7, 1, true));
        assert_eq!(DsFhCodec::new([6; 32]).decode(&h), Err(DsFhError::Mac));
    }

    #[test]
    fn the_iomode_and_the_layout_are_under_the_mac() {
        let c = DsFhCodec::new(KEY);
        let read = c.encode(fh(0, 7, 1, false)).0.to_vec();
        let mut upgraded = read.clone();
        upgraded[16] = 2;
        assert_eq!(
            c.decode(&NfsFh4(Bytes::from(upgraded))),
            Err(DsFhError::Mac),
            "a READ layout's handle cannot be made an RW one"
        );
        let mut moved = read.clone();
        moved[31] ^= 1;
        assert_eq!(c.decode(&NfsFh4(Bytes::from(moved))), Err(DsFhError::Mac));
        let mut lent = read;
        lent[39] ^= 1;
        assert_eq!(
            c.decode(&NfsFh4(Bytes::from(lent))),
            Err(DsFhError::Mac),
            "nor another client's"
        );
    }

    #[test]
    fn wrong_length_version_or_kind_is_refused_before_the_mac() {
        let c = DsFhCodec::new(KEY);
        let good = c.encode(fh(1, 1, 1, true));
        assert_eq!(
            c.decode(&NfsFh4(good.0.slice(..32))),
            Err(DsFhError::Length(32)),
            "a version 1 handle (32 bytes) is refused"
        );
        let mut v = good.0.to_vec();
        v[0] = 1;
        assert_eq!(
            c.decode(&NfsFh4(Bytes::from(v.clone()))),
            Err(DsFhError::Version(1))
        );
        v[0] = 2;
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
            byte in 0usize..DS_FH_LEN, flip in 1u8..=255,
            stripe in any::<u16>(), fileid in any::<u64>(), generation in any::<u32>(),
            rw in any::<bool>()
        ) {
            let c = DsFhCodec::new(KEY);
            let mut v = c.encode(fh(stripe, fileid, generation, rw)).0.to_vec();
            v[byte] ^= flip;
            prop_assert!(c.decode(&NfsFh4(Bytes::from(v))).is_err());
        }

        #[test]
        fn handles_round_trip(
            stripe in any::<u16>(), fileid in any::<u64>(), generation in any::<u32>(),
            rw in any::<bool>(), layout in any::<[u8; NFS4_OTHER_SIZE]>(), clientid in any::<u64>()
        ) {
            let c = DsFhCodec::new(KEY);
            let fh = DsFh { stripe, fileid, generation, rw, layout, clientid };
            prop_assert_eq!(c.decode(&c.encode(fh)), Ok(fh));
        }
    }
}

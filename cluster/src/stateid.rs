//! Stateids: minting and checking the 12-byte `other` field, the seqid rules and the special
//! stateids (RFC 8881 sections 8.2.1 to 8.2.4). The MDS mints them; the MDS and the data
//! servers check them (a DS with the MDS's stateid key, see [`crate::keys::DsKeys`]).
//!
//! Layout of `other`:
//!
//! ```text
//!  byte 0     1        2..4            4..8                   8..12
//!  +------+--------+-------------+----------------------+------------------------------+
//!  | kind | access | boot epoch  | per-boot counter     | MAC: first 4 bytes of        |
//!  |      | 1 R 2 W| (u16 BE)    | (u32 BE)             | keyed_hash(stateid key,      |
//!  |      |        |             |                      |            bytes 0..8)       |
//!  +------+--------+-------------+----------------------+------------------------------+
//! ```
//!
//! The MAC covers the state's holder as well: the MDS's client id and the file (they are not
//! in `other`, only under its MAC). The MDS finds every stateid in its tables, which know
//! both, so it needs no MAC ([`StateidMinter::fields`]); a data server learns both from the
//! DS filehandle the I/O comes with, which the MDS bound to one client's layout of one file
//! under a 128-bit MAC (`crate::ds_fh`), and checks the stateid's MAC against them
//! ([`StateidMinter::verify`]): a stateid of another file or another client is
//! `NFS4ERR_BAD_STATEID` there as on the MDS. The stateid's own MAC is 4 bytes (there is no
//! room for more in `other`); the strong binding is the handle's, and the handle is what
//! grants I/O (a forged stateid would have to go with a live layout of that very client and
//! file). Stateids travel in the clear under AUTH_SYS: a client that sniffs another's
//! traffic can replay its handles and stateids together (it could as well forge its uid).
//!
//! The access byte is the access of the state when it was minted; `other` never changes
//! afterwards (section 8.2.2 keeps it across OPEN upgrades and OPEN_DOWNGRADE), so the MDS
//! decides on its table, and a data server on this byte unless the MDS told it otherwise.

use nfs_proto::nfs4::{NfsStat4, Stateid4, NFS4_OTHER_SIZE};

/// The `other` field of a stateid.
pub type Other = [u8; NFS4_OTHER_SIZE];

/// What kind of state a stateid stands for (byte 0 of `other`).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum StateidKind {
    /// Share reservation of an open-owner on a file (OPEN).
    Open = 1,
    /// Byte-range locks of a lock-owner on a file (LOCK).
    Lock = 2,
    /// A delegation.
    Delegation = 3,
    /// A layout.
    Layout = 4,
}

impl StateidKind {
    /// The kind in byte 0 of `other`, without checking the MAC: lets the compound layer send a
    /// stateid to the module that owns its kind.
    pub fn of(other: &Other) -> Option<Self> {
        match other[0] {
            1 => Some(Self::Open),
            2 => Some(Self::Lock),
            3 => Some(Self::Delegation),
            4 => Some(Self::Layout),
            _ => None,
        }
    }
}

/// Why a stateid is refused, each variant one `nfsstat4` (RFC 8881 section 8.2 and 15.1.5).
#[derive(Clone, Copy, PartialEq, Eq, Debug, thiserror::Error)]
pub enum StateidError {
    /// Not a stateid this server issued to this client, freed, closed, or a seqid from the
    /// future.
    #[error("bad stateid")]
    Bad,
    /// Issued by an earlier boot of the server.
    #[error("stateid of an earlier server instance")]
    Stale,
    /// The seqid is older than the current one (section 8.2.2).
    #[error("old stateid")]
    Old,
    /// The state was revoked because the client's lease expired.
    #[error("state expired with the lease")]
    Expired,
    /// The state was revoked by the administrator.
    #[error("state revoked by the administrator")]
    AdminRevoked,
    /// The delegation was revoked.
    #[error("delegation revoked")]
    DelegRevoked,
}

impl From<StateidError> for NfsStat4 {
    fn from(e: StateidError) -> Self {
        match e {
            StateidError::Bad => NfsStat4::NFS4ERR_BAD_STATEID,
            StateidError::Stale => NfsStat4::NFS4ERR_STALE_STATEID,
            StateidError::Old => NfsStat4::NFS4ERR_OLD_STATEID,
            StateidError::Expired => NfsStat4::NFS4ERR_EXPIRED,
            StateidError::AdminRevoked => NfsStat4::NFS4ERR_ADMIN_REVOKED,
            StateidError::DelegRevoked => NfsStat4::NFS4ERR_DELEG_REVOKED,
        }
    }
}

/// The special stateids (RFC 8881 section 8.2.3), recognised before any MAC check.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Special {
    /// All zeros: I/O without open state, subject to share reservations.
    Anonymous,
    /// All ones: READ may bypass share reservations; WRITE and SETATTR treat it as anonymous.
    Bypass,
    /// Seqid 1, other zero: the compound's current stateid, which the caller substitutes.
    Current,
    /// Seqid all ones, other zero: never valid; CLOSE returns it (section 18.2.4).
    Invalid,
}

/// Sorts a stateid into special or regular (RFC 8881 section 8.2.3). `Ok(None)` is a regular
/// stateid; an `other` of all zeros or all ones with any other seqid is `NFS4ERR_BAD_STATEID`.
pub fn classify(stateid: &Stateid4) -> Result<Option<Special>, StateidError> {
    if stateid.other == [0; NFS4_OTHER_SIZE] {
        return match stateid.seqid {
            0 => Ok(Some(Special::Anonymous)),
            1 => Ok(Some(Special::Current)),
            u32::MAX => Ok(Some(Special::Invalid)),
            _ => Err(StateidError::Bad),
        };
    }
    if stateid.other == [0xff; NFS4_OTHER_SIZE] {
        return match stateid.seqid {
            u32::MAX => Ok(Some(Special::Bypass)),
            _ => Err(StateidError::Bad),
        };
    }
    Ok(None)
}

/// Substitutes the compound's current stateid for the special "current" value (RFC 8881
/// section 16.2.3.1.2); any other stateid passes through. With no current stateid set, the
/// special value is `NFS4ERR_BAD_STATEID`.
pub fn resolve_current(
    stateid: &Stateid4,
    current: Option<&Stateid4>,
) -> Result<Stateid4, StateidError> {
    if *stateid == Stateid4::CURRENT {
        current.copied().ok_or(StateidError::Bad)
    } else {
        Ok(*stateid)
    }
}

/// The seqid after `seqid`: 1 follows `0xffffffff`, since 0 means "current" in requests (RFC
/// 8881 section 8.2.2).
pub fn next_seqid(seqid: u32) -> u32 {
    if seqid == u32::MAX {
        1
    } else {
        seqid + 1
    }
}

/// Compares the seqid a request carries with the state's current one (RFC 8881 section
/// 8.2.2): 0 means "the current one"; lower is `NFS4ERR_OLD_STATEID`; higher, a seqid the
/// server never issued, is `NFS4ERR_BAD_STATEID`. The comparison is plain (as knfsd's): right
/// after a wrap to 1 an old `0xffffffff` reads as from the future, which only turns an OLD into
/// a BAD for a client four billion changes behind.
pub fn check_seqid(requested: u32, current: u32) -> Result<(), StateidError> {
    if requested == 0 || requested == current {
        Ok(())
    } else if requested < current {
        Err(StateidError::Old)
    } else {
        Err(StateidError::Bad)
    }
}

/// The fields of a verified `other`.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct OtherFields {
    /// What the stateid stands for.
    pub kind: StateidKind,
    /// Access bits when minted (1 read, 2 write).
    pub access: u8,
    /// Boot epoch of the server instance that minted it.
    pub epoch: u16,
    /// Per-boot counter.
    pub counter: u32,
}

/// Whose state a stateid is: the MDS's client id and the file. Both are under the stateid's
/// MAC, not in it (see the module documentation).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct Holder {
    /// The MDS's client id.
    pub clientid: u64,
    /// The file id.
    pub fileid: u64,
}

/// The per-boot counter ran out: four billion stateids in one boot.
#[derive(Clone, Copy, PartialEq, Eq, Debug, thiserror::Error)]
#[error("stateid counter exhausted for this boot")]
pub struct CounterExhausted;

impl From<CounterExhausted> for NfsStat4 {
    fn from(_: CounterExhausted) -> Self {
        NfsStat4::NFS4ERR_SERVERFAULT
    }
}

/// Mints and verifies stateid `other` fields for one boot of the server.
///
/// Clones share one counter: the open/lock table, the delegation table and the layout table
/// each hold a clone, so a counter names one stateid of the boot whatever its kind. That is
/// what lets a data server keep every closed stateid (open, lock, delegation, layout) as runs
/// of counters ([`crate::counter_set`]) rather than one entry each. A data server builds one
/// from the MDS's stateid key and epoch to [`verify`](Self::verify) only.
#[derive(Clone)]
pub struct StateidMinter {
    key: [u8; 32],
    epoch: u16,
    next: std::sync::Arc<std::sync::atomic::AtomicU32>,
}

impl std::fmt::Debug for StateidMinter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print the key.
        f.debug_struct("StateidMinter")
            .field("epoch", &self.epoch)
            .field(
                "next",
                &self.next.load(std::sync::atomic::Ordering::Relaxed),
            )
            .finish_non_exhaustive()
    }
}

impl StateidMinter {
    /// A minter for the boot `epoch`, keyed by the stateid key (on the MDS derived from the
    /// server key kept in the metadata store: [`crate::keys::DsKeys::derive`]).
    pub fn new(key: [u8; 32], epoch: u16) -> Self {
        Self {
            key,
            epoch,
            next: std::sync::Arc::new(std::sync::atomic::AtomicU32::new(1)),
        }
    }

    /// The boot epoch stateids are minted with.
    pub fn epoch(&self) -> u16 {
        self.epoch
    }

    fn mac(&self, head: &[u8; 8], holder: Holder) -> [u8; 4] {
        let mut input = [0u8; 24];
        input[..8].copy_from_slice(head);
        input[8..16].copy_from_slice(&holder.clientid.to_be_bytes());
        input[16..].copy_from_slice(&holder.fileid.to_be_bytes());
        let hash = blake3::keyed_hash(&self.key, &input);
        let mut mac = [0u8; 4];
        mac.copy_from_slice(&hash.as_bytes()[..4]);
        mac
    }

    /// A fresh `other` for state of `kind` held by `holder`, with the access bits (`& 3`) a
    /// data server checks I/O against.
    pub fn mint(
        &mut self,
        kind: StateidKind,
        access: u8,
        holder: Holder,
    ) -> Result<Other, CounterExhausted> {
        use std::sync::atomic::Ordering;
        // The last value is never handed out, so nothing wraps.
        let counter = self
            .next
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_add(1))
            .map_err(|_| CounterExhausted)?;
        let mut head = [0u8; 8];
        head[0] = kind as u8;
        head[1] = access & 3;
        head[2..4].copy_from_slice(&self.epoch.to_be_bytes());
        head[4..8].copy_from_slice(&counter.to_be_bytes());
        let mut other = [0u8; NFS4_OTHER_SIZE];
        other[..8].copy_from_slice(&head);
        other[8..].copy_from_slice(&self.mac(&head, holder));
        Ok(other)
    }

    /// The counter of `other` if it is a stateid of this boot: what the MDS and the data
    /// servers keep of a closed one (runs of counters, `crate::counter_set`; the counter is
    /// unique across kinds, see [`StateidMinter`]). No MAC check: only for stateids the MDS
    /// itself names (its tables, the control protocol's pushes).
    pub fn counter_of(&self, other: &Other) -> Option<u32> {
        self.fields(other).ok().map(|f| f.counter)
    }

    /// Checks that `other` was minted with this key for `holder` (else
    /// `NFS4ERR_BAD_STATEID`: forged, or another client's or another file's) in this boot
    /// (else `NFS4ERR_STALE_STATEID`). Special stateids must be sorted out first with
    /// [`classify`]; here they are simply bad.
    pub fn verify(&self, other: &Other, holder: Holder) -> Result<OtherFields, StateidError> {
        let mut head = [0u8; 8];
        head.copy_from_slice(&other[..8]);
        let mac = self.mac(&head, holder);
        // Not secret-dependent timing in any useful way (4 bytes, and a forger learns only
        // accept/refuse), but compare without early exit anyway.
        let diff = mac
            .iter()
            .zip(&other[8..])
            .fold(0u8, |acc, (a, b)| acc | (a ^ b));
        if diff != 0 {
            return Err(StateidError::Bad);
        }
        self.fields(other)
    }

    /// The fields of `other` without its MAC: `NFS4ERR_BAD_STATEID` for a kind or access this
    /// code never mints, `NFS4ERR_STALE_STATEID` for another boot. For the MDS, whose tables
    /// are the authority on which stateids exist (a forged `other` is not in them), and for
    /// stateids the MDS pushes.
    pub fn fields(&self, other: &Other) -> Result<OtherFields, StateidError> {
        let kind = StateidKind::of(other).ok_or(StateidError::Bad)?;
        let access = other[1];
        if access & !3 != 0 {
            return Err(StateidError::Bad);
        }
        let epoch = u16::from_be_bytes([other[2], other[3]]);
        if epoch != self.epoch {
            return Err(StateidError::Stale);
        }
        Ok(OtherFields {
            kind,
            access,
            epoch,
            counter: u32::from_be_bytes([other[4], other[5], other[6], other[7]]),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const KEY: [u8; 32] = [7; 32];
    const H: Holder = Holder {
        clientid: 0x11,
        fileid: 0x22,
    };

    #[test]
    fn minted_stateid_verifies_with_its_fields() {
        let mut m = StateidMinter::new(KEY, 5);
        let o = m.mint(StateidKind::Lock, 3, H).unwrap();
        let f = m.verify(&o, H).unwrap();
        assert_eq!(f.kind, StateidKind::Lock);
        assert_eq!(f.access, 3);
        assert_eq!(f.epoch, 5);
        assert_eq!(f.counter, 1);
        assert_eq!(o[0], 2);
        assert_eq!(&o[2..4], &5u16.to_be_bytes());
    }

    #[test]
    fn another_client_or_file_does_not_verify_but_its_fields_read() {
        let mut m = StateidMinter::new(KEY, 5);
        let o = m.mint(StateidKind::Open, 3, H).unwrap();
        for other in [
            Holder {
                clientid: 0x12,
                ..H
            },
            Holder { fileid: 0x23, ..H },
        ] {
            assert_eq!(m.verify(&o, other), Err(StateidError::Bad), "{other:?}");
        }
        assert_eq!(m.fields(&o).map(|f| f.access), Ok(3));
        assert_eq!(
            StateidMinter::new(KEY, 6).fields(&o),
            Err(StateidError::Stale)
        );
    }

    #[test]
    fn clones_share_one_counter() {
        let mut a = StateidMinter::new(KEY, 5);
        let mut b = a.clone();
        let x = a.mint(StateidKind::Open, 3, H).unwrap();
        let y = b.mint(StateidKind::Layout, 0, H).unwrap();
        assert_ne!(a.counter_of(&x), a.counter_of(&y));
    }

    #[test]
    fn successive_mints_differ() {
        let mut m = StateidMinter::new(KEY, 1);
        let a = m.mint(StateidKind::Open, 1, H).unwrap();
        let b = m.mint(StateidKind::Open, 1, H).unwrap();
        assert_ne!(a, b);
    }

    #[test]
    fn a_verifier_that_never_minted_checks_the_minters_stateids() {
        // What a data server does: the MDS's key and epoch, no table.
        let mut mds = StateidMinter::new(KEY, 4);
        let o = mds.mint(StateidKind::Open, 2, H).unwrap();
        let ds = StateidMinter::new(KEY, 4);
        assert_eq!(ds.verify(&o, H).map(|f| f.access), Ok(2));
    }

    #[test]
    fn stateid_under_another_key_is_bad() {
        let mut m = StateidMinter::new(KEY, 1);
        let o = m.mint(StateidKind::Open, 1, H).unwrap();
        let other_server = StateidMinter::new([8; 32], 1);
        assert_eq!(other_server.verify(&o, H), Err(StateidError::Bad));
    }

    #[test]
    fn stateid_of_an_earlier_boot_is_stale() {
        let mut before = StateidMinter::new(KEY, 1);
        let o = before.mint(StateidKind::Open, 1, H).unwrap();
        let after = StateidMinter::new(KEY, 2);
        assert_eq!(after.verify(&o, H), Err(StateidError::Stale));
    }

    #[test]
    fn forged_epoch_is_bad_not_stale() {
        let mut m = StateidMinter::new(KEY, 2);
        let mut o = m.mint(StateidKind::Open, 1, H).unwrap();
        o[3] = 1;
        assert_eq!(m.verify(&o, H), Err(StateidError::Bad));
    }

    #[test]
    fn counter_exhaustion_is_an_error_not_a_wrap() {
        let mut m = StateidMinter::new(KEY, 1);
        m.next.store(u32::MAX, std::sync::atomic::Ordering::Relaxed);
        assert_eq!(
            m.mint(StateidKind::Open, 1, H),
            Err(CounterExhausted),
            "the last counter value is never handed out, so nothing wraps"
        );
        assert_eq!(m.mint(StateidKind::Open, 1, H), Err(CounterExhausted));
    }

    #[test]
    fn debug_never_prints_the_key() {
        let m = StateidMinter::new([0xab; 32], 1);
        let s = format!("{m:?}");
        assert!(!s.contains("171"), "{s}");
    }

    #[test]
    fn special_stateids_are_recognised() {
        assert_eq!(classify(&Stateid4::ANONYMOUS), Ok(Some(Special::Anonymous)));
        assert_eq!(classify(&Stateid4::BYPASS), Ok(Some(Special::Bypass)));
        assert_eq!(classify(&Stateid4::CURRENT), Ok(Some(Special::Current)));
        assert_eq!(classify(&Stateid4::INVALID), Ok(Some(Special::Invalid)));
        let regular = Stateid4 {
            seqid: 0,
            other: [1; 12],
        };
        assert_eq!(classify(&regular), Ok(None));
    }

    #[test]
    fn other_of_zeros_or_ones_with_another_seqid_is_bad() {
        for seqid in [2, 7, u32::MAX - 1] {
            let zeros = Stateid4 {
                seqid,
                other: [0; 12],
            };
            assert_eq!(classify(&zeros), Err(StateidError::Bad));
        }
        for seqid in [0, 1, 5] {
            let ones = Stateid4 {
                seqid,
                other: [0xff; 12],
            };
            assert_eq!(classify(&ones), Err(StateidError::Bad));
        }
    }

    #[test]
    fn current_stateid_is_replaced_by_the_compounds_or_is_bad() {
        let cur = Stateid4 {
            seqid: 4,
            other: [3; 12],
        };
        assert_eq!(resolve_current(&Stateid4::CURRENT, Some(&cur)), Ok(cur));
        assert_eq!(
            resolve_current(&Stateid4::CURRENT, None),
            Err(StateidError::Bad)
        );
        assert_eq!(
            resolve_current(&Stateid4::ANONYMOUS, Some(&cur)),
            Ok(Stateid4::ANONYMOUS)
        );
    }

    #[test]
    fn seqid_zero_means_current() {
        assert_eq!(check_seqid(0, 17), Ok(()));
    }

    #[test]
    fn lower_seqid_is_old_and_higher_is_bad() {
        assert_eq!(check_seqid(3, 3), Ok(()));
        assert_eq!(check_seqid(2, 3), Err(StateidError::Old));
        assert_eq!(check_seqid(4, 3), Err(StateidError::Bad));
    }

    #[test]
    fn seqid_wraps_from_max_to_one() {
        assert_eq!(next_seqid(1), 2);
        assert_eq!(next_seqid(u32::MAX), 1);
    }

    #[test]
    fn errors_map_to_their_status() {
        let pairs = [
            (StateidError::Bad, NfsStat4::NFS4ERR_BAD_STATEID),
            (StateidError::Stale, NfsStat4::NFS4ERR_STALE_STATEID),
            (StateidError::Old, NfsStat4::NFS4ERR_OLD_STATEID),
            (StateidError::Expired, NfsStat4::NFS4ERR_EXPIRED),
            (StateidError::AdminRevoked, NfsStat4::NFS4ERR_ADMIN_REVOKED),
            (StateidError::DelegRevoked, NfsStat4::NFS4ERR_DELEG_REVOKED),
        ];
        for (e, s) in pairs {
            assert_eq!(NfsStat4::from(e), s);
        }
    }

    proptest! {
        #[test]
        fn any_single_byte_change_is_refused(
            byte in 0usize..12, flip in 1u8..=255, access in 0u8..4
        ) {
            let mut m = StateidMinter::new(KEY, 3);
            let mut o = m.mint(StateidKind::Open, access, H).unwrap();
            o[byte] ^= flip;
            // A changed epoch or access byte could only be Stale or pass if the MAC still
            // matched; it does not.
            prop_assert_eq!(m.verify(&o, H), Err(StateidError::Bad));
        }

        #[test]
        fn random_others_do_not_verify(other in any::<[u8; 12]>()) {
            let m = StateidMinter::new(KEY, 3);
            // A 32-bit MAC: a random value passes with probability 2^-32.
            prop_assert!(m.verify(&other, H).is_err());
        }
    }
}

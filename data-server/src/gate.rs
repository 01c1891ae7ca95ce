//! The stateid check of every READ and WRITE, without a round trip to the MDS (RFC 8881
//! section 13.9.1; ARCHITECTURE.md "stateids a DS can check alone"). Sans-IO: the server
//! holds one behind a lock, the control protocol replaces its keys and feeds it revocations.
//!
//! ```text
//!  stateid ─> special? ──────────────────────> NFS4ERR_BAD_STATEID    (13.9.1: never on a DS)
//!          ─> MAC (MDS's stateid key) fails ─> NFS4ERR_BAD_STATEID    (forged)
//!          ─> layout stateid ────────────────> NFS4ERR_BAD_STATEID    (13.9.1: not for I/O)
//!          ─> other epoch than the MDS's ────> NFS4ERR_STALE_STATEID  (MDS restarted)
//!          ─> revoked by the MDS ────────────> NFS4ERR_ADMIN_REVOKED / EXPIRED / DELEG_REVOKED
//!                                               (closed on the MDS: NFS4ERR_BAD_STATEID)
//!          ─> WRITE, access without write ───> NFS4ERR_OPENMODE       (as on the MDS)
//!          ─> OK
//! ```
//!
//! **Special stateids.** RFC 8881 section 13.9.1 lists the stateids a client may send to a
//! data server (open, delegation, lock; "MUST NOT be a layout stateid") and ends "In no case
//! is the use of special stateid values allowed"; section 13.6 adds that a DS "MUST reject"
//! I/O from a client without a layout, and the anonymous stateid proves nothing about one. So
//! the anonymous, READ-bypass, current and invalid stateids are all `NFS4ERR_BAD_STATEID` here
//! (on a DS the compound never has a current stateid: no DS operation sets one). A client
//! without open state does its I/O through the MDS, which admits the anonymous stateid.
//!
//! **Access.** The access byte of `other` is the share access when the MDS minted the
//! stateid. An OPEN upgrade or OPEN_DOWNGRADE keeps `other` (RFC 8881 section 8.2.2), so the
//! MDS tells the DSs the new access of a stateid its clients may use here
//! ([`StateidGate::set_access`]); until then the minted access counts. READ is allowed under
//! any open, WRITE only with write access (the MDS's own rule: section 9.1.2 lets a client
//! with a write-only open read to fill partial pages). Section 13.9.1: "The stateid used for
//! I/O MUST have the same effect and be subject to the same validation on a data server as
//! it would if the I/O was being performed on the metadata server itself".
//!
//! **Seqid.** A client sends seqid 0 to a DS (section 13.9.1: "the most current version");
//! the DS does not know the current seqid anyway, so the seqid is not checked.
//!
//! **What a DS cannot know.** Which client a stateid belongs to (the MAC does not cover the
//! client: see `nfs_server::stateid`), which file, and whether it was closed or freed: the MDS
//! pushes revocations for the stateids that must stop working here (fencing a client that
//! does not return its layouts in time, state revoked by the administrator).

use std::collections::HashMap;

use nfs_proto::nfs4::{NfsStat4, Stateid4, OPEN4_SHARE_ACCESS_WRITE};
use nfs_server::counter_set::CounterSet;
use nfs_server::keys::DsKeys;
use nfs_server::stateid::{classify, Other, StateidError, StateidKind, StateidMinter};

/// What an I/O does with the data.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Io {
    /// READ.
    Read,
    /// WRITE.
    Write,
}

/// Why the MDS revoked a stateid; each is answered with its own status (RFC 8881 section
/// 15.1.5).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Revoked {
    /// Revoked by the server's administrator, or its client fenced for not returning a
    /// layout in time: `NFS4ERR_ADMIN_REVOKED`.
    Admin,
    /// The client's lease expired on the MDS: `NFS4ERR_EXPIRED`.
    Expired,
    /// A delegation the MDS revoked: `NFS4ERR_DELEG_REVOKED`.
    Delegation,
    /// Closed or freed on the MDS (CLOSE, FREE_STATEID): `NFS4ERR_BAD_STATEID`, as the MDS
    /// answers a stateid it no longer has (RFC 8881 section 13.9.1: I/O needs valid state).
    Closed,
}

impl From<Revoked> for StateidError {
    fn from(r: Revoked) -> Self {
        match r {
            Revoked::Admin => StateidError::AdminRevoked,
            Revoked::Expired => StateidError::Expired,
            Revoked::Delegation => StateidError::DelegRevoked,
            Revoked::Closed => StateidError::Bad,
        }
    }
}

/// The stateid checks of one data server for the MDS's current boot.
#[derive(Debug)]
pub struct StateidGate {
    verifier: StateidMinter,
    revoked: HashMap<Other, Revoked>,
    /// Counters of open and lock stateids closed on the MDS, as runs: a closed stateid is
    /// never minted again, and most are closed soon after they are minted, so this stays
    /// about as small as the set of live stateids however many files were opened.
    closed: CounterSet,
    access: HashMap<Other, u8>,
}

impl StateidGate {
    /// A gate checking the stateids the MDS with these keys mints.
    pub fn new(keys: &DsKeys) -> Self {
        Self {
            verifier: StateidMinter::new(keys.stateid_key, keys.mds_epoch),
            revoked: HashMap::new(),
            closed: CounterSet::new(),
            access: HashMap::new(),
        }
    }

    /// The MDS's boot epoch stateids must carry.
    pub fn epoch(&self) -> u16 {
        self.verifier.epoch()
    }

    /// New keys (the MDS restarted, or the DS learns them late). Revocations and access
    /// changes are of the MDS's old boot, whose stateids are all stale now: they are dropped
    /// when the epoch changes.
    pub fn set_keys(&mut self, keys: &DsKeys) {
        if keys.mds_epoch != self.verifier.epoch() {
            self.revoked.clear();
            self.closed.clear();
            self.access.clear();
        }
        self.verifier = StateidMinter::new(keys.stateid_key, keys.mds_epoch);
    }

    /// Refuses `other` from now on (the MDS pushes this before it answers the operation
    /// that needed the revocation). A closed open or lock stateid of this epoch is kept as
    /// its counter ([`StateidGate::close_counters`]).
    pub fn revoke(&mut self, other: Other, why: Revoked) {
        self.access.remove(&other);
        match self.verifier.open_or_lock_counter(&other) {
            Some(c) if why == Revoked::Closed => self.closed.insert(c),
            _ => {
                self.revoked.insert(other, why);
            }
        }
    }

    /// Refuses the open and lock stateids whose counters are in these inclusive ranges:
    /// closed or freed on the MDS (answered NFS4ERR_BAD_STATEID, as `Revoked::Closed`).
    pub fn close_counters(&mut self, ranges: &[(u32, u32)]) {
        for &(first, last) in ranges {
            self.closed.insert_range(first, last);
        }
    }

    /// How many runs of closed counters are kept (for operators).
    pub fn closed_runs(&self) -> usize {
        self.closed.range_count()
    }

    /// Forgets `other` entirely: the MDS freed it and it will never be shown again (keeps the
    /// revocation table from growing for the life of the MDS's boot).
    pub fn forget(&mut self, other: &Other) {
        self.revoked.remove(other);
        self.access.remove(other);
    }

    /// The share access (`OPEN4_SHARE_ACCESS_*` bits) of `other` changed on the MDS (OPEN
    /// upgrade, OPEN_DOWNGRADE).
    pub fn set_access(&mut self, other: Other, access: u8) {
        self.access.insert(other, access & 3);
    }

    /// How many stateids are revoked (for operators).
    pub fn revoked_count(&self) -> usize {
        self.revoked.len()
    }

    /// Checks the stateid of a READ or WRITE (see the module documentation for the order).
    pub fn check(&self, stateid: &Stateid4, io: Io) -> Result<(), NfsStat4> {
        if classify(stateid)?.is_some() {
            return Err(NfsStat4::NFS4ERR_BAD_STATEID);
        }
        let fields = self.verifier.verify(&stateid.other)?;
        if fields.kind == StateidKind::Layout {
            return Err(NfsStat4::NFS4ERR_BAD_STATEID);
        }
        if let Some(&why) = self.revoked.get(&stateid.other) {
            return Err(StateidError::from(why).into());
        }
        if matches!(fields.kind, StateidKind::Open | StateidKind::Lock)
            && self.closed.contains(fields.counter)
        {
            return Err(StateidError::from(Revoked::Closed).into());
        }
        let access = self
            .access
            .get(&stateid.other)
            .copied()
            .unwrap_or(fields.access);
        let granted = match io {
            Io::Read => access != 0,
            Io::Write => u32::from(access) & OPEN4_SHARE_ACCESS_WRITE != 0,
        };
        if granted {
            Ok(())
        } else {
            Err(NfsStat4::NFS4ERR_OPENMODE)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SERVER_KEY: [u8; 32] = [3; 32];
    const EPOCH: u16 = 12;

    fn keys(epoch: u16) -> DsKeys {
        DsKeys::derive(&SERVER_KEY, epoch)
    }

    /// What the MDS does: a minter with the same derived key.
    fn mds(epoch: u16) -> StateidMinter {
        StateidMinter::new(keys(epoch).stateid_key, epoch)
    }

    fn sid(other: Other) -> Stateid4 {
        Stateid4 { seqid: 0, other }
    }

    #[test]
    fn closed_open_and_lock_stateids_are_kept_as_runs_of_counters() {
        let mut m = mds(EPOCH);
        let mut gate = StateidGate::new(&keys(EPOCH));
        let opens: Vec<Other> = (0..1000)
            .map(|i| {
                m.mint(
                    if i % 3 == 0 {
                        StateidKind::Lock
                    } else {
                        StateidKind::Open
                    },
                    3,
                )
                .unwrap()
            })
            .collect();
        let live = m.mint(StateidKind::Open, 3).unwrap();
        for o in &opens {
            gate.revoke(*o, Revoked::Closed);
        }
        assert_eq!(gate.closed_runs(), 1);
        assert_eq!(gate.revoked_count(), 0);
        for o in &opens {
            assert_eq!(
                gate.check(&sid(*o), Io::Read),
                Err(NfsStat4::NFS4ERR_BAD_STATEID)
            );
        }
        assert_eq!(gate.check(&sid(live), Io::Write), Ok(()));
        // Ranges from the MDS (a resend after a data server restart) do the same.
        let mut fresh = StateidGate::new(&keys(EPOCH));
        let c = |o: &Other| u32::from_be_bytes(o[4..8].try_into().unwrap());
        fresh.close_counters(&[(c(&opens[0]), c(&opens[999]))]);
        assert_eq!(
            fresh.check(&sid(opens[500]), Io::Read),
            Err(NfsStat4::NFS4ERR_BAD_STATEID)
        );
        assert_eq!(fresh.check(&sid(live), Io::Read), Ok(()));
        // An admin revocation of a closed stateid keeps its own answer.
        gate.revoke(opens[3], Revoked::Admin);
        assert_eq!(
            gate.check(&sid(opens[3]), Io::Read),
            Err(NfsStat4::NFS4ERR_ADMIN_REVOKED)
        );
        // A new MDS boot forgets them.
        gate.set_keys(&keys(EPOCH + 1));
        assert_eq!(gate.closed_runs(), 0);
    }

    #[test]
    fn an_open_stateid_of_the_mds_allows_the_io_its_access_allows() {
        let mut m = mds(EPOCH);
        let gate = StateidGate::new(&keys(EPOCH));
        let rw = m.mint(StateidKind::Open, 3).unwrap();
        let ro = m.mint(StateidKind::Open, 1).unwrap();
        let wo = m.mint(StateidKind::Lock, 2).unwrap();
        assert_eq!(gate.check(&sid(rw), Io::Write), Ok(()));
        assert_eq!(gate.check(&sid(rw), Io::Read), Ok(()));
        assert_eq!(gate.check(&sid(ro), Io::Read), Ok(()));
        assert_eq!(
            gate.check(&sid(ro), Io::Write),
            Err(NfsStat4::NFS4ERR_OPENMODE)
        );
        assert_eq!(gate.check(&sid(wo), Io::Read), Ok(()), "section 9.1.2");
        assert_eq!(gate.check(&sid(wo), Io::Write), Ok(()));
    }

    #[test]
    fn the_seqid_is_not_checked() {
        let mut m = mds(EPOCH);
        let gate = StateidGate::new(&keys(EPOCH));
        let o = m.mint(StateidKind::Open, 3).unwrap();
        for seqid in [0, 1, 7, u32::MAX] {
            assert_eq!(gate.check(&Stateid4 { seqid, other: o }, Io::Read), Ok(()));
        }
    }

    #[test]
    fn every_special_stateid_is_bad_on_a_data_server() {
        let gate = StateidGate::new(&keys(EPOCH));
        for s in [
            Stateid4::ANONYMOUS,
            Stateid4::BYPASS,
            Stateid4::CURRENT,
            Stateid4::INVALID,
        ] {
            for io in [Io::Read, Io::Write] {
                assert_eq!(
                    gate.check(&s, io),
                    Err(NfsStat4::NFS4ERR_BAD_STATEID),
                    "{s:?}"
                );
            }
        }
    }

    #[test]
    fn a_forged_or_foreign_stateid_is_bad() {
        let gate = StateidGate::new(&keys(EPOCH));
        let mut m = mds(EPOCH);
        let mut forged = m.mint(StateidKind::Open, 1).unwrap();
        forged[1] = 3; // claim write access
        assert_eq!(
            gate.check(&sid(forged), Io::Write),
            Err(NfsStat4::NFS4ERR_BAD_STATEID)
        );
        let other_cluster = StateidMinter::new([4; 32], EPOCH)
            .mint(StateidKind::Open, 3)
            .unwrap();
        assert_eq!(
            gate.check(&sid(other_cluster), Io::Read),
            Err(NfsStat4::NFS4ERR_BAD_STATEID)
        );
    }

    #[test]
    fn a_layout_stateid_is_bad_for_io() {
        let gate = StateidGate::new(&keys(EPOCH));
        let layout = mds(EPOCH).mint(StateidKind::Layout, 3).unwrap();
        assert_eq!(
            gate.check(&sid(layout), Io::Read),
            Err(NfsStat4::NFS4ERR_BAD_STATEID)
        );
    }

    #[test]
    fn a_stateid_of_another_mds_boot_is_stale() {
        let gate = StateidGate::new(&keys(EPOCH));
        let old = mds(EPOCH - 1).mint(StateidKind::Open, 3).unwrap();
        assert_eq!(
            gate.check(&sid(old), Io::Read),
            Err(NfsStat4::NFS4ERR_STALE_STATEID)
        );
    }

    #[test]
    fn new_keys_make_the_old_boots_stateids_stale_and_the_new_ones_good() {
        let mut gate = StateidGate::new(&keys(EPOCH));
        let old = mds(EPOCH).mint(StateidKind::Open, 3).unwrap();
        gate.revoke(old, Revoked::Admin);
        gate.set_keys(&keys(EPOCH + 1));
        assert_eq!(gate.epoch(), EPOCH + 1);
        assert_eq!(gate.revoked_count(), 0, "the old boot's revocations go");
        assert_eq!(
            gate.check(&sid(old), Io::Read),
            Err(NfsStat4::NFS4ERR_STALE_STATEID)
        );
        let new = mds(EPOCH + 1).mint(StateidKind::Open, 3).unwrap();
        assert_eq!(gate.check(&sid(new), Io::Write), Ok(()));
    }

    #[test]
    fn a_revoked_stateid_gets_the_status_of_its_revocation() {
        let mut gate = StateidGate::new(&keys(EPOCH));
        let mut m = mds(EPOCH);
        let cases = [
            (Revoked::Admin, NfsStat4::NFS4ERR_ADMIN_REVOKED),
            (Revoked::Expired, NfsStat4::NFS4ERR_EXPIRED),
            (Revoked::Delegation, NfsStat4::NFS4ERR_DELEG_REVOKED),
            (Revoked::Closed, NfsStat4::NFS4ERR_BAD_STATEID),
        ];
        for (why, status) in cases {
            let o = m.mint(StateidKind::Open, 3).unwrap();
            assert_eq!(gate.check(&sid(o), Io::Write), Ok(()));
            gate.revoke(o, why);
            assert_eq!(gate.check(&sid(o), Io::Read), Err(status));
            gate.forget(&o);
            assert_eq!(gate.revoked_count(), 0);
        }
    }

    #[test]
    fn an_access_change_pushed_by_the_mds_overrides_the_minted_access() {
        let mut gate = StateidGate::new(&keys(EPOCH));
        let o = mds(EPOCH).mint(StateidKind::Open, 1).unwrap();
        gate.set_access(o, 3); // OPEN upgrade to read-write
        assert_eq!(gate.check(&sid(o), Io::Write), Ok(()));
        gate.set_access(o, 1); // OPEN_DOWNGRADE back to read
        assert_eq!(
            gate.check(&sid(o), Io::Write),
            Err(NfsStat4::NFS4ERR_OPENMODE)
        );
    }
}

//! The checks of every READ, WRITE and COMMIT, without a round trip to the MDS (RFC 8881
//! section 13.9.1; ARCHITECTURE.md "stateids a DS can check alone"). Sans-IO: the server
//! holds one behind a lock, the control protocol replaces its keys and feeds it revocations.
//!
//! ```text
//!  stateid ─> special? ──────────────────────> NFS4ERR_BAD_STATEID    (13.9.1: never on a DS)
//!  (READ,  ─> MAC (MDS's stateid key, over
//!   WRITE)     the handle's client and file)
//!              fails ────────────────────────> NFS4ERR_BAD_STATEID    (forged, another
//!                                                                      client's or file's)
//!          ─> the handle's own layout ───────> the layout check alone (a flex files
//!             stateid                            layout's `ffds_stateid`, RFC 8435 5.1)
//!          ─> another layout stateid ────────> NFS4ERR_BAD_STATEID    (13.9.1: not for I/O)
//!          ─> other epoch than the MDS's ────> NFS4ERR_STALE_STATEID  (MDS restarted)
//!          ─> revoked by the MDS ────────────> NFS4ERR_ADMIN_REVOKED / EXPIRED / DELEG_REVOKED
//!                                               (closed on the MDS: NFS4ERR_BAD_STATEID)
//!          ─> WRITE, access without write ───> NFS4ERR_OPENMODE       (as on the MDS)
//!  layout  ─> not of this MDS boot, returned,
//!  of the      closed, recalled or revoked ──> NFS4ERR_PNFS_NO_LAYOUT (13.6: no I/O without
//!  handle  ─> WRITE or COMMIT, READ layout ──> NFS4ERR_PNFS_NO_LAYOUT   a layout)
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
//! **The file and the client.** The DS filehandle carries, under a 128-bit MAC, the client,
//! the layout stateid it was handed out under and that layout's iomode (`cluster::ds_fh`);
//! the I/O stateid's MAC covers its client and file, checked against the handle's, so a
//! stateid of another file or another client is refused as on the MDS. The MDS grants a
//! layout of a file only to a client with state on that file (RW only with write access),
//! and pushes every layout stateid that goes, as it pushes closed open and lock stateids
//! ([`StateidGate::check_layout`]). So a client writes an object only through an RW layout
//! of that file that the MDS still counts as held, under a stateid of its own for that file;
//! a READ layout's handles, or a returned one's, with a valid write stateid of another file,
//! are refused.
//!
//! **Threat model.** Stateids and handles travel in the clear under AUTH_SYS: a client that
//! sniffs another client's traffic can replay both (it could as well forge its uid). What is
//! refused is everything a client can do with what the MDS gave *it*: handles of files it may
//! only read, handles of layouts it returned or lost, stateids closed, revoked, forged or of
//! another boot.

use std::collections::HashMap;

use cluster::counter_set::CounterSet;
use cluster::ds_fh::DsFh;
use cluster::keys::DsKeys;
use cluster::stateid::{classify, Holder, Other, StateidError, StateidKind, StateidMinter};
use nfs_proto::nfs4::{NfsStat4, Stateid4, OPEN4_SHARE_ACCESS_WRITE};

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
    /// Counters of stateids closed on the MDS (open and lock stateids closed or freed,
    /// delegations returned, layouts gone), as runs: a closed stateid is never minted again,
    /// and most are closed soon after they are minted, so this stays about as small as the
    /// set of live stateids however many files were opened.
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
    /// that needed the revocation). A closed stateid of this epoch is kept as its
    /// counter ([`StateidGate::close_counters`]).
    pub fn revoke(&mut self, other: Other, why: Revoked) {
        self.access.remove(&other);
        match self.verifier.counter_of(&other) {
            Some(c) if why == Revoked::Closed => self.closed.insert(c),
            _ => {
                self.revoked.insert(other, why);
            }
        }
    }

    /// Refuses the stateids whose counters are in these inclusive ranges: closed, freed or
    /// returned on the MDS (answered as `Revoked::Closed`).
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

    /// Checks the stateid of a READ or WRITE through a handle of `holder`'s layout (see the
    /// module documentation for the order).
    pub fn check(&self, stateid: &Stateid4, io: Io, holder: Holder) -> Result<(), NfsStat4> {
        if classify(stateid)?.is_some() {
            return Err(NfsStat4::NFS4ERR_BAD_STATEID);
        }
        let fields = self.verifier.verify(&stateid.other, holder)?;
        if fields.kind == StateidKind::Layout {
            return Err(NfsStat4::NFS4ERR_BAD_STATEID);
        }
        if let Some(&why) = self.revoked.get(&stateid.other) {
            return Err(StateidError::from(why).into());
        }
        if self.closed.contains(fields.counter) {
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

    /// Checks a READ or WRITE through handle `fh` under `stateid`: the stateid ([`Self::check`])
    /// unless it is the layout the handle is bound to, then the layout ([`Self::check_layout`]).
    /// A flex files layout names its own stateid for the I/O through it (the Linux driver sends
    /// `ffds_stateid` for the layout's whole life, outliving the open or delegation it was
    /// got under); the layout check, live and RW for a WRITE, is then the whole check. File
    /// layout clients never send a layout stateid (RFC 8881 section 13.9.1).
    pub fn check_io(&self, stateid: &Stateid4, io: Io, fh: &DsFh) -> Result<(), NfsStat4> {
        if stateid.other != fh.layout {
            self.check(stateid, io, fh.holder())?;
        }
        self.check_layout(fh, io == Io::Write)
    }

    /// Checks the layout a DS filehandle was handed out under (see the module documentation):
    /// of this MDS boot, not returned, closed or revoked, and RW for a WRITE or COMMIT
    /// (`write`). Everything else is `NFS4ERR_PNFS_NO_LAYOUT` (RFC 8881 section 13.6: a data
    /// server rejects I/O from a client without a layout); the Linux client answers it by
    /// dropping the layout and getting a new one, or doing the I/O through the MDS.
    pub fn check_layout(&self, fh: &DsFh, write: bool) -> Result<(), NfsStat4> {
        let gone = NfsStat4::NFS4ERR_PNFS_NO_LAYOUT;
        let fields = self
            .verifier
            .verify(&fh.layout, fh.holder())
            .map_err(|_| gone)?;
        let live = fields.kind == StateidKind::Layout
            && !self.closed.contains(fields.counter)
            && !self.revoked.contains_key(&fh.layout);
        if live && (fh.rw || !write) {
            Ok(())
        } else {
            Err(gone)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SERVER_KEY: [u8; 32] = [3; 32];
    const EPOCH: u16 = 12;
    /// The holder of the stateids and handles below.
    const H: Holder = Holder {
        clientid: 5,
        fileid: 9,
    };

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
                    H,
                )
                .unwrap()
            })
            .collect();
        let live = m.mint(StateidKind::Open, 3, H).unwrap();
        for o in &opens {
            gate.revoke(*o, Revoked::Closed);
        }
        assert_eq!(gate.closed_runs(), 1);
        assert_eq!(gate.revoked_count(), 0);
        for o in &opens {
            assert_eq!(
                gate.check(&sid(*o), Io::Read, H),
                Err(NfsStat4::NFS4ERR_BAD_STATEID)
            );
        }
        assert_eq!(gate.check(&sid(live), Io::Write, H), Ok(()));
        // Ranges from the MDS (a resend after a data server restart) do the same.
        let mut fresh = StateidGate::new(&keys(EPOCH));
        let c = |o: &Other| u32::from_be_bytes(o[4..8].try_into().unwrap());
        fresh.close_counters(&[(c(&opens[0]), c(&opens[999]))]);
        assert_eq!(
            fresh.check(&sid(opens[500]), Io::Read, H),
            Err(NfsStat4::NFS4ERR_BAD_STATEID)
        );
        assert_eq!(fresh.check(&sid(live), Io::Read, H), Ok(()));
        // An admin revocation of a closed stateid keeps its own answer.
        gate.revoke(opens[3], Revoked::Admin);
        assert_eq!(
            gate.check(&sid(opens[3]), Io::Read, H),
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
        let rw = m.mint(StateidKind::Open, 3, H).unwrap();
        let ro = m.mint(StateidKind::Open, 1, H).unwrap();
        let wo = m.mint(StateidKind::Lock, 2, H).unwrap();
        assert_eq!(gate.check(&sid(rw), Io::Write, H), Ok(()));
        assert_eq!(gate.check(&sid(rw), Io::Read, H), Ok(()));
        assert_eq!(gate.check(&sid(ro), Io::Read, H), Ok(()));
        assert_eq!(
            gate.check(&sid(ro), Io::Write, H),
            Err(NfsStat4::NFS4ERR_OPENMODE)
        );
        assert_eq!(gate.check(&sid(wo), Io::Read, H), Ok(()), "section 9.1.2");
        assert_eq!(gate.check(&sid(wo), Io::Write, H), Ok(()));
    }

    fn handle(layout: Other, rw: bool) -> DsFh {
        DsFh {
            stripe: 0,
            fileid: 9,
            generation: 1,
            rw,
            layout,
            clientid: H.clientid,
        }
    }

    #[test]
    fn a_handle_works_while_its_layout_lives_and_writes_need_an_rw_layout() {
        let mut m = mds(EPOCH);
        let mut gate = StateidGate::new(&keys(EPOCH));
        let layout = m.mint(StateidKind::Layout, 0, H).unwrap();
        let (read, rw) = (handle(layout, false), handle(layout, true));
        assert_eq!(gate.check_layout(&read, false), Ok(()));
        assert_eq!(gate.check_layout(&rw, true), Ok(()));
        assert_eq!(
            gate.check_layout(&read, true),
            Err(NfsStat4::NFS4ERR_PNFS_NO_LAYOUT),
            "a READ layout's handle does not write"
        );
        // Returned (or closed with the file): pushed as a closed counter.
        gate.revoke(layout, Revoked::Closed);
        assert_eq!(gate.revoked_count(), 0, "kept as a counter");
        for (h, w) in [(read, false), (rw, true), (rw, false)] {
            assert_eq!(
                gate.check_layout(&h, w),
                Err(NfsStat4::NFS4ERR_PNFS_NO_LAYOUT)
            );
        }
        // Revoked (fenced) layouts and layouts of another boot are gone too.
        let fenced = m.mint(StateidKind::Layout, 0, H).unwrap();
        gate.revoke(fenced, Revoked::Admin);
        assert_eq!(
            gate.check_layout(&handle(fenced, true), false),
            Err(NfsStat4::NFS4ERR_PNFS_NO_LAYOUT)
        );
        let old = mds(EPOCH - 1).mint(StateidKind::Layout, 0, H).unwrap();
        assert_eq!(
            gate.check_layout(&handle(old, true), false),
            Err(NfsStat4::NFS4ERR_PNFS_NO_LAYOUT)
        );
        // An open stateid is not a layout (the MDS never puts one in a handle).
        let open = m.mint(StateidKind::Open, 3, H).unwrap();
        assert_eq!(
            gate.check_layout(&handle(open, true), false),
            Err(NfsStat4::NFS4ERR_PNFS_NO_LAYOUT)
        );
    }

    #[test]
    fn a_layout_stateid_works_only_through_its_own_handles_and_as_the_layout_allows() {
        let mut m = mds(EPOCH);
        let mut gate = StateidGate::new(&keys(EPOCH));
        let layout = m.mint(StateidKind::Layout, 0, H).unwrap();
        let (read, rw) = (handle(layout, false), handle(layout, true));
        // A flex files layout's own stateid through its handles.
        assert_eq!(gate.check_io(&sid(layout), Io::Read, &read), Ok(()));
        assert_eq!(gate.check_io(&sid(layout), Io::Write, &rw), Ok(()));
        assert_eq!(
            gate.check_io(&sid(layout), Io::Write, &read),
            Err(NfsStat4::NFS4ERR_PNFS_NO_LAYOUT),
            "a READ layout does not write, whatever the stateid"
        );
        // Another layout's stateid (of this client and file) through this handle: refused as
        // any layout stateid is (RFC 8881 section 13.9.1).
        let other = m.mint(StateidKind::Layout, 0, H).unwrap();
        assert_eq!(
            gate.check_io(&sid(other), Io::Read, &read),
            Err(NfsStat4::NFS4ERR_BAD_STATEID)
        );
        // Returned or fenced: the handle is dead, and so is its stateid.
        gate.revoke(layout, Revoked::Admin);
        assert_eq!(
            gate.check_io(&sid(layout), Io::Read, &read),
            Err(NfsStat4::NFS4ERR_PNFS_NO_LAYOUT)
        );
        // Open stateids keep their own checks through a live handle.
        let live = m.mint(StateidKind::Layout, 0, H).unwrap();
        let ro = m.mint(StateidKind::Open, 1, H).unwrap();
        assert_eq!(
            gate.check_io(&sid(ro), Io::Write, &handle(live, true)),
            Err(NfsStat4::NFS4ERR_OPENMODE)
        );
    }

    #[test]
    fn a_stateid_of_another_file_or_client_is_bad_through_this_handle() {
        let mut m = mds(EPOCH);
        let gate = StateidGate::new(&keys(EPOCH));
        let mine = m.mint(StateidKind::Open, 3, H).unwrap();
        let other_file = m
            .mint(StateidKind::Open, 3, Holder { fileid: 10, ..H })
            .unwrap();
        let other_client = m
            .mint(StateidKind::Open, 3, Holder { clientid: 6, ..H })
            .unwrap();
        assert_eq!(gate.check(&sid(mine), Io::Write, H), Ok(()));
        for o in [other_file, other_client] {
            assert_eq!(
                gate.check(&sid(o), Io::Write, H),
                Err(NfsStat4::NFS4ERR_BAD_STATEID)
            );
        }
    }

    #[test]
    fn returned_delegations_and_layouts_share_the_runs_of_closed_opens() {
        let m = mds(EPOCH);
        let mut gate = StateidGate::new(&keys(EPOCH));
        // One counter space for every kind (the MDS's tables share a minter's clones).
        let (mut a, mut b, mut c) = (m.clone(), m.clone(), m);
        let mut all = Vec::new();
        for _ in 0..100 {
            all.push(a.mint(StateidKind::Open, 3, H).unwrap());
            all.push(b.mint(StateidKind::Layout, 0, H).unwrap());
            all.push(c.mint(StateidKind::Delegation, 1, H).unwrap());
        }
        for o in &all {
            gate.revoke(*o, Revoked::Closed);
        }
        assert_eq!(gate.closed_runs(), 1);
        assert_eq!(gate.revoked_count(), 0);
    }

    #[test]
    fn the_seqid_is_not_checked() {
        let mut m = mds(EPOCH);
        let gate = StateidGate::new(&keys(EPOCH));
        let o = m.mint(StateidKind::Open, 3, H).unwrap();
        for seqid in [0, 1, 7, u32::MAX] {
            assert_eq!(
                gate.check(&Stateid4 { seqid, other: o }, Io::Read, H),
                Ok(())
            );
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
                    gate.check(&s, io, H),
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
        let mut forged = m.mint(StateidKind::Open, 1, H).unwrap();
        forged[1] = 3; // claim write access
        assert_eq!(
            gate.check(&sid(forged), Io::Write, H),
            Err(NfsStat4::NFS4ERR_BAD_STATEID)
        );
        let other_cluster = StateidMinter::new([4; 32], EPOCH)
            .mint(StateidKind::Open, 3, H)
            .unwrap();
        assert_eq!(
            gate.check(&sid(other_cluster), Io::Read, H),
            Err(NfsStat4::NFS4ERR_BAD_STATEID)
        );
    }

    #[test]
    fn a_layout_stateid_is_bad_for_io() {
        let gate = StateidGate::new(&keys(EPOCH));
        let layout = mds(EPOCH).mint(StateidKind::Layout, 3, H).unwrap();
        assert_eq!(
            gate.check(&sid(layout), Io::Read, H),
            Err(NfsStat4::NFS4ERR_BAD_STATEID)
        );
    }

    #[test]
    fn a_stateid_of_another_mds_boot_is_stale() {
        let gate = StateidGate::new(&keys(EPOCH));
        let old = mds(EPOCH - 1).mint(StateidKind::Open, 3, H).unwrap();
        assert_eq!(
            gate.check(&sid(old), Io::Read, H),
            Err(NfsStat4::NFS4ERR_STALE_STATEID)
        );
    }

    #[test]
    fn new_keys_make_the_old_boots_stateids_stale_and_the_new_ones_good() {
        let mut gate = StateidGate::new(&keys(EPOCH));
        let old = mds(EPOCH).mint(StateidKind::Open, 3, H).unwrap();
        gate.revoke(old, Revoked::Admin);
        gate.set_keys(&keys(EPOCH + 1));
        assert_eq!(gate.epoch(), EPOCH + 1);
        assert_eq!(gate.revoked_count(), 0, "the old boot's revocations go");
        assert_eq!(
            gate.check(&sid(old), Io::Read, H),
            Err(NfsStat4::NFS4ERR_STALE_STATEID)
        );
        let new = mds(EPOCH + 1).mint(StateidKind::Open, 3, H).unwrap();
        assert_eq!(gate.check(&sid(new), Io::Write, H), Ok(()));
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
            let o = m.mint(StateidKind::Open, 3, H).unwrap();
            assert_eq!(gate.check(&sid(o), Io::Write, H), Ok(()));
            gate.revoke(o, why);
            assert_eq!(gate.check(&sid(o), Io::Read, H), Err(status));
            gate.forget(&o);
            assert_eq!(gate.revoked_count(), 0);
        }
    }

    #[test]
    fn an_access_change_pushed_by_the_mds_overrides_the_minted_access() {
        let mut gate = StateidGate::new(&keys(EPOCH));
        let o = mds(EPOCH).mint(StateidKind::Open, 1, H).unwrap();
        gate.set_access(o, 3); // OPEN upgrade to read-write
        assert_eq!(gate.check(&sid(o), Io::Write, H), Ok(()));
        gate.set_access(o, 1); // OPEN_DOWNGRADE back to read
        assert_eq!(
            gate.check(&sid(o), Io::Write, H),
            Err(NfsStat4::NFS4ERR_OPENMODE)
        );
    }
}

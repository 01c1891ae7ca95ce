//! Tests of open state and the table's stateid handling (open.rs).

use bytes::Bytes;
use nfs_proto::nfs4::*;

use super::*;

pub(crate) const KEY: [u8; 32] = [1; 32];
pub(crate) const EPOCH: u16 = 3;
pub(crate) const C1: u64 = 0x0003_0000_0000_0001;
pub(crate) const C2: u64 = 0x0003_0000_0000_0002;
pub(crate) const F: u64 = 100;
pub(crate) const G: u64 = 200;

const R: u32 = OPEN4_SHARE_ACCESS_READ;
const W: u32 = OPEN4_SHARE_ACCESS_WRITE;
const RW: u32 = OPEN4_SHARE_ACCESS_BOTH;
const DN: u32 = OPEN4_SHARE_DENY_NONE;
const DR: u32 = OPEN4_SHARE_DENY_READ;
const DW: u32 = OPEN4_SHARE_DENY_WRITE;

pub(crate) fn table() -> StateTable {
    StateTable::new(StateidMinter::new(KEY, EPOCH))
}

/// An owner as a request names it; the clientid field is garbage on purpose (it is ignored).
pub(crate) fn owner(name: &'static str) -> StateOwner4 {
    StateOwner4 {
        clientid: 0xdead,
        owner: Bytes::from_static(name.as_bytes()),
    }
}

pub(crate) fn open_ok(
    t: &mut StateTable,
    c: u64,
    f: u64,
    name: &'static str,
    access: u32,
    deny: u32,
) -> Stateid4 {
    t.open(c, f, &owner(name), access, deny).unwrap().stateid
}

fn current(s: Stateid4) -> Stateid4 {
    Stateid4 { seqid: 0, ..s }
}

#[test]
fn first_open_gets_seqid_one_posix_locking_and_no_delegation() {
    let mut t = table();
    let g = t.open(C1, F, &owner("a"), R, DN).unwrap();
    assert_eq!(g.stateid.seqid, 1);
    assert_eq!(StateidKind::of(&g.stateid.other), Some(StateidKind::Open));
    assert_eq!(g.rflags, OPEN4_RESULT_LOCKTYPE_POSIX);
    assert_eq!(g.delegation, OpenDelegation4::None);
    assert!(!g.upgraded);
    assert!(t.file_is_open(F));
}

#[test]
fn reopen_by_same_owner_unites_modes_and_bumps_seqid_keeping_other() {
    let mut t = table();
    let s1 = open_ok(&mut t, C1, F, "a", R, DN);
    let g = t.open(C1, F, &owner("a"), W, DW).unwrap();
    assert!(g.upgraded);
    assert_eq!(g.stateid.other, s1.other);
    assert_eq!(g.stateid.seqid, 2);
    assert_eq!(t.open_modes(C1, &g.stateid), Ok((RW, DW)));
}

#[test]
fn same_owner_name_on_another_file_or_client_is_another_open() {
    let mut t = table();
    let a = open_ok(&mut t, C1, F, "a", R, DN);
    let b = open_ok(&mut t, C1, G, "a", R, DN);
    let c = open_ok(&mut t, C2, F, "a", R, DN);
    assert_ne!(a.other, b.other);
    assert_ne!(a.other, c.other);
    assert_eq!(c.seqid, 1);
}

#[test]
fn deny_write_refuses_a_writer_of_another_client() {
    let mut t = table();
    open_ok(&mut t, C1, F, "a", R, DW);
    assert_eq!(
        t.open(C2, F, &owner("b"), W, DN),
        Err(StateError::ShareDenied)
    );
    // A reader that denies nothing still gets in.
    open_ok(&mut t, C2, F, "b", R, DN);
}

#[test]
fn a_writer_refuses_a_later_deny_write() {
    let mut t = table();
    open_ok(&mut t, C1, F, "a", W, DN);
    assert_eq!(
        t.open(C2, F, &owner("b"), R, DW),
        Err(StateError::ShareDenied)
    );
}

#[test]
fn another_owner_of_the_same_client_is_denied_too() {
    let mut t = table();
    open_ok(&mut t, C1, F, "a", RW, DR);
    assert_eq!(
        t.open(C1, F, &owner("b"), R, DN),
        Err(StateError::ShareDenied)
    );
}

#[test]
fn own_deny_does_not_block_own_upgrade() {
    let mut t = table();
    open_ok(&mut t, C1, F, "a", R, OPEN4_SHARE_DENY_BOTH);
    let g = t.open(C1, F, &owner("a"), W, DN).unwrap();
    assert_eq!(
        t.open_modes(C1, &g.stateid),
        Ok((RW, OPEN4_SHARE_DENY_BOTH))
    );
}

#[test]
fn refused_upgrade_changes_nothing() {
    let mut t = table();
    let a = open_ok(&mut t, C1, F, "a", R, DN);
    open_ok(&mut t, C2, F, "b", R, DW);
    assert_eq!(
        t.open(C1, F, &owner("a"), W, DN),
        Err(StateError::ShareDenied)
    );
    assert_eq!(t.open_modes(C1, &current(a)), Ok((R, DN)));
    assert_eq!(t.test_stateid(C1, &[a]), vec![NfsStat4::NFS4_OK]);
}

#[test]
fn open_with_no_access_or_unknown_bits_is_inval() {
    let mut t = table();
    for (access, deny) in [
        (0, DN),
        (R | 0x10, DN),
        (R | 0x0600, DN),
        (R, 4),
        (R | 0x4_0000, DN),
    ] {
        assert_eq!(
            t.open(C1, F, &owner("a"), access, deny),
            Err(StateError::Inval),
            "{access:#x} {deny:#x}"
        );
    }
    assert!(!t.file_is_open(F));
}

#[test]
fn want_bits_are_accepted_and_shape_the_delegation_answer() {
    let mut t = table();
    let cases = [
        (OPEN4_SHARE_ACCESS_WANT_NO_PREFERENCE, OpenDelegation4::None),
        (
            OPEN4_SHARE_ACCESS_WANT_NO_DELEG,
            OpenDelegation4::NoneExt(OpenNoneDelegation4::Other(
                WhyNoDelegation4::WND4_NOT_WANTED,
            )),
        ),
        (
            OPEN4_SHARE_ACCESS_WANT_CANCEL,
            OpenDelegation4::NoneExt(OpenNoneDelegation4::Other(WhyNoDelegation4::WND4_CANCELLED)),
        ),
        (
            OPEN4_SHARE_ACCESS_WANT_READ_DELEG
                | OPEN4_SHARE_ACCESS_WANT_SIGNAL_DELEG_WHEN_RESRC_AVAIL,
            OpenDelegation4::NoneExt(OpenNoneDelegation4::Resource {
                ond_server_will_signal_avail: false,
            }),
        ),
    ];
    for (want, deleg) in cases {
        let g = t.open(C1, F, &owner("a"), R | want, DN).unwrap();
        assert_eq!(g.delegation, deleg, "{want:#x}");
    }
    // The want bits never leak into the share reservation.
    let s = open_ok(&mut t, C1, F, "a", R, DN);
    assert_eq!(t.open_modes(C1, &s), Ok((R, DN)));
}

#[test]
fn downgrade_to_the_mode_of_an_earlier_open_succeeds() {
    let mut t = table();
    open_ok(&mut t, C1, F, "a", R, DN);
    let s = open_ok(&mut t, C1, F, "a", W, DN);
    let d = t.open_downgrade(C1, F, &s, R, DN).unwrap();
    assert_eq!((d.other, d.seqid), (s.other, 3));
    assert_eq!(t.open_modes(C1, &d), Ok((R, DN)));
}

#[test]
fn downgrade_to_a_union_of_earlier_opens_succeeds() {
    let mut t = table();
    open_ok(&mut t, C1, F, "a", R, DN);
    open_ok(&mut t, C1, F, "a", W, DN);
    let s = open_ok(&mut t, C1, F, "a", R, DW);
    // (RW, DN) is the union of the first two opens.
    let d = t.open_downgrade(C1, F, &s, RW, DN).unwrap();
    assert_eq!(t.open_modes(C1, &d), Ok((RW, DN)));
}

#[test]
fn downgrade_to_a_mode_never_opened_is_inval() {
    let mut t = table();
    let s = open_ok(&mut t, C1, F, "a", RW, DN);
    assert_eq!(t.open_downgrade(C1, F, &s, R, DN), Err(StateError::Inval));
}

#[test]
fn downgrade_needs_access_and_deny_from_the_same_opens() {
    let mut t = table();
    open_ok(&mut t, C1, F, "a", R, DN);
    let s = open_ok(&mut t, C1, F, "a", W, DW);
    // R came with DN, DW with W: no set of opens gives (R, DW).
    assert_eq!(t.open_downgrade(C1, F, &s, R, DW), Err(StateError::Inval));
    let d = t.open_downgrade(C1, F, &s, W, DW).unwrap();
    assert_eq!(t.open_modes(C1, &d), Ok((W, DW)));
}

#[test]
fn downgrade_to_more_than_is_open_is_inval() {
    let mut t = table();
    let s = open_ok(&mut t, C1, F, "a", R, DN);
    assert_eq!(t.open_downgrade(C1, F, &s, RW, DN), Err(StateError::Inval));
    assert_eq!(t.open_downgrade(C1, F, &s, R, DW), Err(StateError::Inval));
}

#[test]
fn downgrade_forgets_the_opens_it_drops() {
    let mut t = table();
    open_ok(&mut t, C1, F, "a", R, DN);
    let s = open_ok(&mut t, C1, F, "a", W, DN);
    let d = t.open_downgrade(C1, F, &s, R, DN).unwrap();
    assert_eq!(t.open_downgrade(C1, F, &d, W, DN), Err(StateError::Inval));
}

#[test]
fn downgrade_with_bad_bits_is_inval() {
    let mut t = table();
    let s = open_ok(&mut t, C1, F, "a", R, DN);
    for (a, d) in [(0, DN), (R | OPEN4_SHARE_ACCESS_WANT_NO_DELEG, DN), (R, 7)] {
        assert_eq!(t.open_downgrade(C1, F, &s, a, d), Err(StateError::Inval));
    }
}

#[test]
fn downgrade_lets_a_denied_writer_in() {
    let mut t = table();
    open_ok(&mut t, C1, F, "a", R, DN);
    let s = open_ok(&mut t, C1, F, "a", R, DW);
    assert_eq!(
        t.open(C2, F, &owner("b"), W, DN),
        Err(StateError::ShareDenied)
    );
    t.open_downgrade(C1, F, &s, R, DN).unwrap();
    open_ok(&mut t, C2, F, "b", W, DN);
}

#[test]
fn close_returns_the_invalid_stateid_and_the_open_is_gone() {
    let mut t = table();
    let s = open_ok(&mut t, C1, F, "a", R, DN);
    assert_eq!(t.close(C1, F, &s), Ok(Stateid4::INVALID));
    assert!(!t.file_is_open(F));
    assert!(!t.client_has_state(C1));
    assert_eq!(
        t.close(C1, F, &s),
        Err(StateError::Stateid(StateidError::Bad))
    );
    assert_eq!(
        t.test_stateid(C1, &[s]),
        vec![NfsStat4::NFS4ERR_BAD_STATEID]
    );
}

#[test]
fn a_client_has_a_file_open_until_its_last_owner_closes_it() {
    let mut t = table();
    let a = open_ok(&mut t, C1, F, "a", R, DN);
    let b = open_ok(&mut t, C1, F, "b", R, DN);
    open_ok(&mut t, C2, F, "c", R, DN);
    assert!(t.client_has_open(C1, F));
    assert!(!t.client_has_open(C1, G));
    t.close(C1, F, &a).unwrap();
    assert!(t.client_has_open(C1, F));
    t.close(C1, F, &b).unwrap();
    assert!(!t.client_has_open(C1, F));
    assert!(t.client_has_open(C2, F));
}

#[test]
fn close_releases_the_share_reservation() {
    let mut t = table();
    let s = open_ok(&mut t, C1, F, "a", R, OPEN4_SHARE_DENY_BOTH);
    t.close(C1, F, &s).unwrap();
    open_ok(&mut t, C2, F, "b", RW, DN);
}

#[test]
fn reopen_after_close_is_a_new_stateid() {
    let mut t = table();
    let s = open_ok(&mut t, C1, F, "a", R, DN);
    t.close(C1, F, &s).unwrap();
    let s2 = open_ok(&mut t, C1, F, "a", R, DN);
    assert_ne!(s.other, s2.other);
    assert_eq!(s2.seqid, 1);
}

#[test]
fn seqid_zero_is_current_older_is_old_and_newer_is_bad() {
    let mut t = table();
    let s1 = open_ok(&mut t, C1, F, "a", R, DN);
    let s2 = open_ok(&mut t, C1, F, "a", R, DN);
    let future = Stateid4 { seqid: 3, ..s2 };
    assert_eq!(
        t.close(C1, F, &s1),
        Err(StateError::Stateid(StateidError::Old))
    );
    assert_eq!(
        t.close(C1, F, &future),
        Err(StateError::Stateid(StateidError::Bad))
    );
    assert_eq!(t.close(C1, F, &current(s1)), Ok(Stateid4::INVALID));
}

#[test]
fn seqid_wraps_to_one_after_max() {
    let mut t = table();
    let s = open_ok(&mut t, C1, F, "a", R, DN);
    t.states.get_mut(&s.other).unwrap().seqid = u32::MAX;
    let s2 = open_ok(&mut t, C1, F, "a", R, DN);
    assert_eq!(s2.seqid, 1);
    assert_eq!(t.test_stateid(C1, &[s2]), vec![NfsStat4::NFS4_OK]);
}

#[test]
fn stateid_used_on_another_file_is_bad() {
    let mut t = table();
    let s = open_ok(&mut t, C1, F, "a", R, DN);
    assert_eq!(
        t.close(C1, G, &s),
        Err(StateError::Stateid(StateidError::Bad))
    );
    assert_eq!(
        t.check_io(C1, G, &s, Io::Read),
        Err(StateError::Stateid(StateidError::Bad))
    );
}

#[test]
fn stateid_shown_by_another_client_is_bad() {
    let mut t = table();
    let s = open_ok(&mut t, C1, F, "a", R, DN);
    assert_eq!(
        t.close(C2, F, &s),
        Err(StateError::Stateid(StateidError::Bad))
    );
    assert_eq!(
        t.test_stateid(C2, &[s]),
        vec![NfsStat4::NFS4ERR_BAD_STATEID]
    );
}

#[test]
fn stateid_of_an_earlier_boot_is_stale_but_tests_as_bad() {
    let mut before = StateidMinter::new(KEY, EPOCH - 1);
    let other = before
        .mint(
            StateidKind::Open,
            1,
            cluster::stateid::Holder {
                clientid: C1,
                fileid: F,
            },
        )
        .unwrap();
    let s = Stateid4 { seqid: 1, other };
    let mut t = table();
    assert_eq!(
        t.close(C1, F, &s),
        Err(StateError::Stateid(StateidError::Stale))
    );
    assert_eq!(
        NfsStat4::from(t.close(C1, F, &s).unwrap_err()),
        NfsStat4::NFS4ERR_STALE_STATEID
    );
    assert_eq!(
        t.test_stateid(C1, &[s]),
        vec![NfsStat4::NFS4ERR_BAD_STATEID]
    );
}

#[test]
fn io_needs_write_access_to_write_but_any_open_to_read() {
    let mut t = table();
    let r = open_ok(&mut t, C1, F, "r", R, DN);
    let w = open_ok(&mut t, C1, F, "w", W, DN);
    assert_eq!(t.check_io(C1, F, &r, Io::Read), Ok(()));
    assert_eq!(t.check_io(C1, F, &r, Io::Write), Err(StateError::OpenMode));
    assert_eq!(t.check_io(C1, F, &w, Io::Write), Ok(()));
    // RFC 8881 section 9.1.2: READ under a write-only open is allowed.
    assert_eq!(t.check_io(C1, F, &w, Io::Read), Ok(()));
    assert_eq!(
        NfsStat4::from(StateError::OpenMode),
        NfsStat4::NFS4ERR_OPENMODE
    );
}

#[test]
fn anonymous_io_is_locked_out_by_a_deny() {
    let mut t = table();
    assert_eq!(t.check_io(C2, F, &Stateid4::ANONYMOUS, Io::Write), Ok(()));
    open_ok(&mut t, C1, F, "a", R, DW);
    assert_eq!(t.check_io(C2, F, &Stateid4::ANONYMOUS, Io::Read), Ok(()));
    assert_eq!(
        t.check_io(C2, F, &Stateid4::ANONYMOUS, Io::Write),
        Err(StateError::Locked)
    );
    assert_eq!(NfsStat4::from(StateError::Locked), NfsStat4::NFS4ERR_LOCKED);
    // Another file is not affected.
    assert_eq!(t.check_io(C2, G, &Stateid4::ANONYMOUS, Io::Write), Ok(()));
}

#[test]
fn bypass_stateid_reads_past_deny_read_but_writes_like_anonymous() {
    let mut t = table();
    open_ok(&mut t, C1, F, "a", RW, OPEN4_SHARE_DENY_BOTH);
    assert_eq!(t.check_io(C2, F, &Stateid4::BYPASS, Io::Read), Ok(()));
    assert_eq!(
        t.check_io(C2, F, &Stateid4::ANONYMOUS, Io::Read),
        Err(StateError::Locked)
    );
    assert_eq!(
        t.check_io(C2, F, &Stateid4::BYPASS, Io::Write),
        Err(StateError::Locked)
    );
}

#[test]
fn unresolved_current_and_invalid_stateids_are_bad() {
    let t = table();
    for s in [Stateid4::CURRENT, Stateid4::INVALID] {
        assert_eq!(
            t.check_io(C1, F, &s, Io::Read),
            Err(StateError::Stateid(StateidError::Bad))
        );
    }
}

#[test]
fn test_stateid_reports_each_stateid_without_stopping() {
    let mut t = table();
    let s1 = open_ok(&mut t, C1, F, "a", R, DN);
    let s2 = open_ok(&mut t, C1, F, "a", R, DN);
    let g = open_ok(&mut t, C1, G, "a", R, DN);
    let closed = open_ok(&mut t, C1, F, "closed", R, DN);
    t.close(C1, F, &closed).unwrap();
    let got = t.test_stateid(
        C1,
        &[
            s2,
            s1,
            Stateid4 { seqid: 9, ..s2 },
            current(g),
            Stateid4::ANONYMOUS,
            Stateid4::BYPASS,
            Stateid4::CURRENT,
            closed,
        ],
    );
    use NfsStat4 as S;
    assert_eq!(
        got,
        vec![
            S::NFS4_OK,
            S::NFS4ERR_OLD_STATEID,
            S::NFS4ERR_BAD_STATEID,
            S::NFS4_OK,
            S::NFS4ERR_BAD_STATEID,
            S::NFS4ERR_BAD_STATEID,
            S::NFS4ERR_BAD_STATEID,
            S::NFS4ERR_BAD_STATEID,
        ]
    );
}

#[test]
fn free_stateid_of_an_open_is_locks_held() {
    let mut t = table();
    let s = open_ok(&mut t, C1, F, "a", R, DN);
    assert_eq!(t.free_stateid(C1, &s), Err(StateError::LocksHeld));
    assert_eq!(
        NfsStat4::from(StateError::LocksHeld),
        NfsStat4::NFS4ERR_LOCKS_HELD
    );
    assert_eq!(t.test_stateid(C1, &[s]), vec![NfsStat4::NFS4_OK]);
}

#[test]
fn free_stateid_of_a_special_or_unknown_stateid_is_bad() {
    let mut t = table();
    assert_eq!(
        t.free_stateid(C1, &Stateid4::ANONYMOUS),
        Err(StateError::Stateid(StateidError::Bad))
    );
    // An `other` the table does not hold, of this boot: bad; of another boot: stale, as
    // knfsd answers (the MDS decides by its tables, not by the MAC, whose holder it would
    // need to know first).
    let mut forged = Stateid4 {
        seqid: 1,
        other: [1; 12],
    };
    forged.other[2..4].copy_from_slice(&EPOCH.to_be_bytes());
    assert_eq!(
        t.free_stateid(C1, &forged),
        Err(StateError::Stateid(StateidError::Bad))
    );
    forged.other[2..4].copy_from_slice(&(EPOCH - 1).to_be_bytes());
    assert_eq!(
        t.free_stateid(C1, &forged),
        Err(StateError::Stateid(StateidError::Stale))
    );
}

#[test]
fn release_client_drops_its_opens_and_lets_others_in() {
    let mut t = table();
    let s = open_ok(&mut t, C1, F, "a", RW, OPEN4_SHARE_DENY_BOTH);
    open_ok(&mut t, C1, G, "a", R, DN);
    let other = open_ok(&mut t, C2, G, "b", R, DN);
    t.release_client(C1);
    assert!(!t.client_has_state(C1));
    assert!(!t.file_is_open(F));
    assert_eq!(
        t.test_stateid(C1, &[s]),
        vec![NfsStat4::NFS4ERR_BAD_STATEID]
    );
    open_ok(&mut t, C2, F, "b", RW, DN);
    assert_eq!(t.test_stateid(C2, &[other]), vec![NfsStat4::NFS4_OK]);
}

#[test]
fn revoked_state_answers_expired_or_admin_revoked_until_freed() {
    let mut t = table();
    let s = open_ok(&mut t, C1, F, "a", RW, OPEN4_SHARE_DENY_BOTH);
    let a = open_ok(&mut t, C2, G, "b", R, DN);
    t.revoke_client(C1, RevokeReason::Expired);
    t.revoke_client(C2, RevokeReason::Admin);
    assert_eq!(t.test_stateid(C1, &[s]), vec![NfsStat4::NFS4ERR_EXPIRED]);
    assert_eq!(
        t.test_stateid(C2, &[a]),
        vec![NfsStat4::NFS4ERR_ADMIN_REVOKED]
    );
    assert_eq!(
        t.check_io(C1, F, &s, Io::Read),
        Err(StateError::Stateid(StateidError::Expired))
    );
    assert_eq!(
        t.revoked_state(C1),
        RevokedState {
            expired: true,
            admin: false,
            recallable: false
        }
    );
    // The share reservation is gone at once.
    assert!(!t.file_is_open(F));
    open_ok(&mut t, C2, F, "b", RW, DN);
    // The revoked open is still state of the client until freed (even with an old seqid).
    assert!(t.client_has_state(C1));
    assert_eq!(t.free_stateid(C1, &s), Ok(()));
    assert_eq!(t.revoked_state(C1), RevokedState::default());
    assert!(!t.client_has_state(C1));
    assert_eq!(
        t.test_stateid(C1, &[s]),
        vec![NfsStat4::NFS4ERR_BAD_STATEID]
    );
}

#[test]
fn a_new_open_after_revocation_gets_a_fresh_stateid() {
    let mut t = table();
    let s = open_ok(&mut t, C1, F, "a", R, DN);
    t.revoke_client(C1, RevokeReason::Expired);
    let s2 = open_ok(&mut t, C1, F, "a", R, DN);
    assert_ne!(s.other, s2.other);
    assert_eq!(
        t.test_stateid(C1, &[s, s2]),
        vec![NfsStat4::NFS4ERR_EXPIRED, NfsStat4::NFS4_OK]
    );
}

#[test]
fn state_errors_map_to_their_status() {
    use NfsStat4 as S;
    let pairs = [
        (StateError::ShareDenied, S::NFS4ERR_SHARE_DENIED),
        (StateError::Inval, S::NFS4ERR_INVAL),
        (StateError::NotSupp, S::NFS4ERR_NOTSUPP),
        (
            StateError::Exhausted(CounterExhausted),
            S::NFS4ERR_SERVERFAULT,
        ),
        (
            StateError::Stateid(StateidError::Old),
            S::NFS4ERR_OLD_STATEID,
        ),
    ];
    for (e, s) in pairs {
        assert_eq!(NfsStat4::from(e), s);
    }
}

// ---------------------------------------------------------------------------------------------
// Orphans: files whose last name went while open

#[test]
fn an_orphan_is_released_by_the_last_close_only() {
    let mut t = table();
    let a = open_ok(&mut t, C1, F, "a", R, DN);
    let b = open_ok(&mut t, C2, F, "b", R, DN);
    assert_eq!(t.unlinked(F), OrphanFate::Kept);
    t.close(C1, F, &a).unwrap();
    assert!(t.take_released_orphans().is_empty(), "C2 still has it open");
    t.close(C2, F, &b).unwrap();
    assert_eq!(t.take_released_orphans(), [F]);
    assert!(t.orphan_is_reaping(F));
    assert_eq!(
        t.open(C1, F, &owner("a"), R, DN).unwrap_err(),
        StateError::Stale,
        "a file being deleted is not opened again"
    );
    t.orphan_reaped(F);
    assert!(!t.orphan_is_reaping(F));
}

#[test]
fn an_orphan_that_nobody_has_open_is_deleted_at_once() {
    let mut t = table();
    let s = open_ok(&mut t, C1, G, "a", R, DN);
    assert_eq!(t.unlinked(F), OrphanFate::Delete);
    assert!(t.orphan_is_reaping(F));
    t.close(C1, G, &s).unwrap();
    assert!(t.take_released_orphans().is_empty(), "G is no orphan");
}

#[test]
fn an_orphan_is_released_when_its_client_goes_or_is_revoked() {
    let mut t = table();
    open_ok(&mut t, C1, F, "a", RW, DN);
    open_ok(&mut t, C2, G, "b", RW, DN);
    assert_eq!(t.unlinked(F), OrphanFate::Kept);
    assert_eq!(t.unlinked(G), OrphanFate::Kept);
    t.release_client(C1);
    assert_eq!(t.take_released_orphans(), [F]);
    t.revoke_client(C2, RevokeReason::Expired);
    assert_eq!(t.take_released_orphans(), [G]);
}

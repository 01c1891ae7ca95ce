//! Tests of byte-range locks (lock.rs): the lock table alone, the LOCK/LOCKT/LOCKU operations
//! on the state table, and a property test against a per-byte model.

use bytes::Bytes;
use nfs_proto::nfs4::*;
use proptest::prelude::*;

use super::*;
use crate::state::open::tests::{open_ok, owner, table, C1, C2, F, G};
use crate::state::open::{Io, RevokeReason};

const R: u32 = OPEN4_SHARE_ACCESS_READ;
const RW: u32 = OPEN4_SHARE_ACCESS_BOTH;
const DN: u32 = OPEN4_SHARE_DENY_NONE;

fn range(start: u64, end: u64) -> ByteRange {
    ByteRange { start, end }
}

fn held(owner: u8, kind: LockKind, start: u64, end: u64) -> HeldLock<u8> {
    HeldLock {
        owner,
        kind,
        range: range(start, end),
    }
}

// ---- ranges ----

#[test]
fn length_zero_is_inval() {
    assert_eq!(ByteRange::from_wire(5, 0), Err(StateError::Inval));
}

#[test]
fn length_all_ones_locks_to_end_of_file() {
    assert_eq!(ByteRange::from_wire(7, u64::MAX), Ok(range(7, u64::MAX)));
    assert_eq!(range(7, u64::MAX).wire_length(), u64::MAX);
}

#[test]
fn range_whose_end_overflows_is_inval() {
    assert_eq!(ByteRange::from_wire(u64::MAX, 1), Err(StateError::Inval));
    assert_eq!(
        ByteRange::from_wire(2, u64::MAX - 1),
        Err(StateError::Inval)
    );
    // offset + length == NFS4_UINT64_MAX does not exceed it.
    assert_eq!(
        ByteRange::from_wire(1, u64::MAX - 1),
        Ok(range(1, u64::MAX - 1))
    );
}

#[test]
fn wire_length_round_trips() {
    let r = ByteRange::from_wire(10, 5).unwrap();
    assert_eq!(r, range(10, 14));
    assert_eq!(r.wire_length(), 5);
}

#[test]
fn unknown_lock_type_is_inval() {
    assert_eq!(LockKind::from_wire(NfsLockType4(9)), Err(StateError::Inval));
    assert_eq!(
        LockKind::from_wire(NfsLockType4::READW_LT),
        Ok(LockKind::Read)
    );
    assert_eq!(
        LockKind::from_wire(NfsLockType4::WRITEW_LT),
        Ok(LockKind::Write)
    );
}

// ---- the table alone ----

#[test]
fn write_locks_of_two_owners_conflict_where_they_overlap() {
    let mut t = LockTable::new();
    t.lock(1u8, LockKind::Write, range(0, 9)).unwrap();
    assert_eq!(
        t.lock(2, LockKind::Write, range(9, 20)),
        Err(held(1, LockKind::Write, 0, 9))
    );
    t.lock(2, LockKind::Write, range(10, 20)).unwrap();
}

#[test]
fn read_locks_share_but_exclude_writers() {
    let mut t = LockTable::new();
    t.lock(1u8, LockKind::Read, range(0, 9)).unwrap();
    t.lock(2, LockKind::Read, range(5, 15)).unwrap();
    assert!(t.lock(3, LockKind::Write, range(9, 9)).is_err());
    assert!(t.lock(1, LockKind::Write, range(0, 4)).is_ok());
    assert!(t.lock(1, LockKind::Write, range(0, 5)).is_err());
}

#[test]
fn same_owner_lock_replaces_the_overlapped_part() {
    let mut t = LockTable::new();
    t.lock(1u8, LockKind::Read, range(0, 99)).unwrap();
    t.lock(1, LockKind::Write, range(40, 59)).unwrap();
    assert_eq!(
        t.locks(),
        &[
            held(1, LockKind::Read, 0, 39),
            held(1, LockKind::Write, 40, 59),
            held(1, LockKind::Read, 60, 99),
        ]
    );
    // Downgrade in place merges back.
    t.lock(1, LockKind::Read, range(40, 59)).unwrap();
    assert_eq!(t.locks(), &[held(1, LockKind::Read, 0, 99)]);
}

#[test]
fn adjacent_locks_of_one_owner_and_kind_merge() {
    let mut t = LockTable::new();
    t.lock(1u8, LockKind::Write, range(0, 9)).unwrap();
    t.lock(1, LockKind::Write, range(20, 29)).unwrap();
    t.lock(1, LockKind::Write, range(10, 19)).unwrap();
    assert_eq!(t.locks(), &[held(1, LockKind::Write, 0, 29)]);
    // Another owner's adjacent lock does not merge.
    t.lock(2, LockKind::Write, range(30, u64::MAX)).unwrap();
    assert_eq!(t.locks().len(), 2);
}

#[test]
fn unlock_of_the_middle_splits_the_lock() {
    let mut t = LockTable::new();
    t.lock(1u8, LockKind::Write, range(0, u64::MAX)).unwrap();
    t.unlock(&1, &range(10, 19));
    assert_eq!(
        t.locks(),
        &[
            held(1, LockKind::Write, 0, 9),
            held(1, LockKind::Write, 20, u64::MAX)
        ]
    );
    // Unlocking what is not locked is fine, and another owner's locks stay.
    t.unlock(&2, &range(0, u64::MAX));
    assert_eq!(t.locks().len(), 2);
    t.unlock(&1, &range(0, u64::MAX));
    assert!(t.is_empty());
}

// ---- operations on the state table ----

fn new_lock(
    open: Stateid4,
    name: &'static str,
    kind: NfsLockType4,
    off: u64,
    len: u64,
) -> LockArgs {
    LockArgs {
        locktype: kind,
        reclaim: false,
        offset: off,
        length: len,
        locker: Locker4::OpenOwner(OpenToLockOwner4 {
            open_seqid: 77,
            open_stateid: open,
            lock_seqid: 88,
            lock_owner: owner(name),
        }),
    }
}

fn more_lock(lock: Stateid4, kind: NfsLockType4, off: u64, len: u64) -> LockArgs {
    LockArgs {
        locktype: kind,
        reclaim: false,
        offset: off,
        length: len,
        locker: Locker4::LockOwner(ExistLockOwner4 {
            lock_stateid: lock,
            lock_seqid: 99,
        }),
    }
}

fn unlock(lock: Stateid4, off: u64, len: u64) -> LockUArgs {
    LockUArgs {
        locktype: NfsLockType4::READ_LT,
        seqid: 5,
        lock_stateid: lock,
        offset: off,
        length: len,
    }
}

fn test(name: &'static str, kind: NfsLockType4, off: u64, len: u64) -> LockTArgs {
    LockTArgs {
        locktype: kind,
        offset: off,
        length: len,
        owner: owner(name),
    }
}

const WR: NfsLockType4 = NfsLockType4::WRITE_LT;
const RD: NfsLockType4 = NfsLockType4::READ_LT;

#[test]
fn first_lock_of_a_lock_owner_creates_a_lock_stateid() {
    let mut t = table();
    let o = open_ok(&mut t, C1, F, "o", RW, DN);
    let l = t.lock(C1, F, &new_lock(o, "l", WR, 0, 10)).unwrap();
    assert_eq!(l.seqid, 1);
    assert_eq!(StateidKind::of(&l.other), Some(StateidKind::Lock));
    assert_ne!(l.other, o.other);
    let l2 = t.lock(C1, F, &more_lock(l, WR, 20, 10)).unwrap();
    assert_eq!((l2.other, l2.seqid), (l.other, 2));
}

#[test]
fn open_to_lock_owner_again_reuses_the_lock_stateid() {
    let mut t = table();
    let o = open_ok(&mut t, C1, F, "o", RW, DN);
    let l = t.lock(C1, F, &new_lock(o, "l", WR, 0, 10)).unwrap();
    let l2 = t.lock(C1, F, &new_lock(o, "l", WR, 20, 10)).unwrap();
    assert_eq!((l2.other, l2.seqid), (l.other, 2));
}

#[test]
fn denied_first_lock_creates_no_lock_stateid() {
    let mut t = table();
    let a = open_ok(&mut t, C1, F, "a", RW, DN);
    let b = open_ok(&mut t, C2, F, "b", RW, DN);
    t.lock(C1, F, &new_lock(a, "la", WR, 0, 10)).unwrap();
    assert!(matches!(
        t.lock(C2, F, &new_lock(b, "lb", WR, 5, 1)),
        Err(StateError::Denied(_))
    ));
    // Closing b needs no LOCKU: lb has no lock stateid.
    assert_eq!(t.close(C2, F, &b), Ok(Stateid4::INVALID));
}

#[test]
fn conflict_reports_the_lock_and_its_real_client() {
    let mut t = table();
    let a = open_ok(&mut t, C1, F, "a", RW, DN);
    let b = open_ok(&mut t, C2, F, "b", RW, DN);
    t.lock(C1, F, &new_lock(a, "la", RD, 100, u64::MAX))
        .unwrap();
    let err = t.lock(C2, F, &new_lock(b, "lb", WR, 0, 200)).unwrap_err();
    assert_eq!(
        err,
        StateError::Denied(LockDenied {
            offset: 100,
            length: u64::MAX,
            locktype: RD,
            owner: StateOwner4 {
                clientid: C1,
                owner: Bytes::from_static(b"la"),
            },
        })
    );
    assert_eq!(NfsStat4::from(err), NfsStat4::NFS4ERR_DENIED);
    // A read lock alongside is fine.
    t.lock(C2, F, &new_lock(b, "lb", RD, 0, 200)).unwrap();
}

#[test]
fn lock_owners_of_the_same_client_conflict() {
    let mut t = table();
    let o = open_ok(&mut t, C1, F, "o", RW, DN);
    t.lock(C1, F, &new_lock(o, "l1", WR, 0, 10)).unwrap();
    assert!(matches!(
        t.lock(C1, F, &new_lock(o, "l2", WR, 0, 10)),
        Err(StateError::Denied(_))
    ));
}

#[test]
fn blocking_lock_types_are_answered_at_once() {
    let mut t = table();
    let a = open_ok(&mut t, C1, F, "a", RW, DN);
    let b = open_ok(&mut t, C2, F, "b", RW, DN);
    t.lock(C1, F, &new_lock(a, "la", NfsLockType4::WRITEW_LT, 0, 10))
        .unwrap();
    let err = t
        .lock(C2, F, &new_lock(b, "lb", NfsLockType4::READW_LT, 0, 10))
        .unwrap_err();
    let StateError::Denied(d) = err else {
        panic!("{err:?}")
    };
    assert_eq!(d.locktype, WR, "reported as the non-blocking type");
}

#[test]
fn lock_type_must_be_allowed_by_the_open() {
    let mut t = table();
    let r = open_ok(&mut t, C1, F, "r", R, DN);
    assert_eq!(
        t.lock(C1, F, &new_lock(r, "l", WR, 0, 10)),
        Err(StateError::OpenMode)
    );
    let w = open_ok(&mut t, C1, G, "w", OPEN4_SHARE_ACCESS_WRITE, DN);
    assert_eq!(
        t.lock(C1, G, &new_lock(w, "l", RD, 0, 10)),
        Err(StateError::OpenMode)
    );
    t.lock(C1, F, &new_lock(r, "l", RD, 0, 10)).unwrap();
}

#[test]
fn bad_ranges_and_types_are_inval_before_anything_changes() {
    let mut t = table();
    let o = open_ok(&mut t, C1, F, "o", RW, DN);
    for args in [
        new_lock(o, "l", WR, 0, 0),
        new_lock(o, "l", WR, u64::MAX - 1, 2),
        new_lock(o, "l", NfsLockType4(0), 0, 1),
    ] {
        assert_eq!(t.lock(C1, F, &args), Err(StateError::Inval));
    }
    assert_eq!(t.lockt(C1, F, &test("x", WR, 1, 0)), Err(StateError::Inval));
    assert_eq!(t.test_stateid(C1, &[o]), vec![NfsStat4::NFS4_OK]);
}

#[test]
fn wrong_stateid_kinds_and_files_are_bad_stateid() {
    let mut t = table();
    let o = open_ok(&mut t, C1, F, "o", RW, DN);
    let g = open_ok(&mut t, C1, G, "o", RW, DN);
    let l = t.lock(C1, F, &new_lock(o, "l", WR, 0, 10)).unwrap();
    let bad = Err(StateError::Stateid(StateidError::Bad));
    // An open stateid where a lock stateid belongs, and the reverse.
    assert_eq!(t.lock(C1, F, &more_lock(o, WR, 0, 1)), bad);
    assert_eq!(t.locku(C1, F, &unlock(o, 0, 1)), bad);
    assert_eq!(t.lock(C1, F, &new_lock(l, "l", WR, 0, 1)), bad);
    assert_eq!(t.close(C1, F, &l), bad);
    // The open of another file.
    assert_eq!(t.lock(C1, F, &new_lock(g, "l", WR, 0, 1)), bad);
    // The lock stateid on another file.
    assert_eq!(t.locku(C1, G, &unlock(l, 0, 1)), bad);
    // Another client's.
    assert_eq!(t.locku(C2, F, &unlock(l, 0, 1)), bad);
}

#[test]
fn lock_with_an_old_lock_stateid_is_old_stateid() {
    let mut t = table();
    let o = open_ok(&mut t, C1, F, "o", RW, DN);
    let l1 = t.lock(C1, F, &new_lock(o, "l", WR, 0, 10)).unwrap();
    t.lock(C1, F, &more_lock(l1, WR, 20, 10)).unwrap();
    assert_eq!(
        t.lock(C1, F, &more_lock(l1, WR, 40, 10)),
        Err(StateError::Stateid(StateidError::Old))
    );
    let l1_now = Stateid4 { seqid: 0, ..l1 };
    assert_eq!(
        t.lock(C1, F, &more_lock(l1_now, WR, 40, 10)).unwrap().seqid,
        3
    );
}

#[test]
fn lockt_excludes_the_owners_own_locks_only() {
    let mut t = table();
    let o = open_ok(&mut t, C1, F, "o", RW, DN);
    t.lock(C1, F, &new_lock(o, "l1", WR, 0, 10)).unwrap();
    assert_eq!(t.lockt(C1, F, &test("l1", WR, 0, 10)), Ok(()));
    let err = t.lockt(C1, F, &test("l2", RD, 5, 1)).unwrap_err();
    assert!(matches!(
        err,
        StateError::Denied(LockDenied {
            offset: 0,
            length: 10,
            ..
        })
    ));
    // The same owner name of another client is another owner.
    assert!(t.lockt(C2, F, &test("l1", RD, 5, 1)).is_err());
    // Outside the range, and on a file nobody locked, nothing conflicts; no open is needed.
    assert_eq!(t.lockt(C2, F, &test("x", WR, 10, u64::MAX)), Ok(()));
    assert_eq!(t.lockt(C2, G, &test("x", WR, 0, u64::MAX)), Ok(()));
}

#[test]
fn locku_splits_and_the_lock_stateid_survives_without_locks() {
    let mut t = table();
    let a = open_ok(&mut t, C1, F, "a", RW, DN);
    let b = open_ok(&mut t, C2, F, "b", RW, DN);
    let l = t.lock(C1, F, &new_lock(a, "la", WR, 0, 30)).unwrap();
    let l2 = t.locku(C1, F, &unlock(l, 10, 10)).unwrap();
    assert_eq!((l2.other, l2.seqid), (l.other, 2));
    let lb = t.lock(C2, F, &new_lock(b, "lb", WR, 10, 10)).unwrap();
    assert!(t.lock(C2, F, &more_lock(lb, WR, 20, 1)).is_err());
    let l3 = t.locku(C1, F, &unlock(l2, 0, u64::MAX)).unwrap();
    assert_eq!(t.test_stateid(C1, &[l3]), vec![NfsStat4::NFS4_OK]);
    // Still usable for another LOCK.
    t.lock(C1, F, &more_lock(l3, RD, 40, 1)).unwrap();
}

#[test]
fn free_stateid_of_a_lock_stateid_needs_its_locks_gone() {
    let mut t = table();
    let o = open_ok(&mut t, C1, F, "o", RW, DN);
    let l = t.lock(C1, F, &new_lock(o, "l", WR, 0, 10)).unwrap();
    assert_eq!(t.free_stateid(C1, &l), Err(StateError::LocksHeld));
    let l = t.locku(C1, F, &unlock(l, 0, 10)).unwrap();
    assert_eq!(t.free_stateid(C1, &l), Ok(()));
    assert_eq!(
        t.test_stateid(C1, &[l]),
        vec![NfsStat4::NFS4ERR_BAD_STATEID]
    );
    // A new open_to_lock_owner makes a new lock stateid.
    let l2 = t.lock(C1, F, &new_lock(o, "l", WR, 0, 10)).unwrap();
    assert_ne!(l2.other, l.other);
    // The open can be closed after unlocking.
    t.locku(C1, F, &unlock(l2, 0, u64::MAX)).unwrap();
    t.close(C1, F, &Stateid4 { seqid: 0, ..o }).unwrap();
}

#[test]
fn close_with_locks_held_fails_and_after_locku_frees_the_lock_stateid() {
    let mut t = table();
    let o = open_ok(&mut t, C1, F, "o", RW, DN);
    let l = t.lock(C1, F, &new_lock(o, "l", WR, 0, 10)).unwrap();
    assert_eq!(t.close(C1, F, &o), Err(StateError::LocksHeld));
    let l = t.locku(C1, F, &unlock(l, 0, 10)).unwrap();
    assert_eq!(t.close(C1, F, &o), Ok(Stateid4::INVALID));
    assert_eq!(
        t.test_stateid(C1, &[l]),
        vec![NfsStat4::NFS4ERR_BAD_STATEID]
    );
    assert!(!t.client_has_state(C1));
}

#[test]
fn io_with_a_lock_stateid_uses_its_opens_access() {
    let mut t = table();
    let r = open_ok(&mut t, C1, F, "r", R, DN);
    let l = t.lock(C1, F, &new_lock(r, "l", RD, 0, 10)).unwrap();
    assert_eq!(t.check_io(C1, F, &l, Io::Read), Ok(()));
    assert_eq!(t.check_io(C1, F, &l, Io::Write), Err(StateError::OpenMode));
    // An upgrade of the open shows through the lock stateid.
    open_ok(&mut t, C1, F, "r", OPEN4_SHARE_ACCESS_WRITE, DN);
    assert_eq!(t.check_io(C1, F, &l, Io::Write), Ok(()));
}

#[test]
fn io_is_not_blocked_by_byte_range_locks() {
    let mut t = table();
    let a = open_ok(&mut t, C1, F, "a", RW, DN);
    let b = open_ok(&mut t, C2, F, "b", RW, DN);
    t.lock(C1, F, &new_lock(a, "la", WR, 0, u64::MAX)).unwrap();
    assert_eq!(t.check_io(C2, F, &b, Io::Write), Ok(()));
}

#[test]
fn release_lock_owner_is_notsupp_in_4_1_and_in_4_0_needs_no_locks() {
    let mut t = table();
    let o = open_ok(&mut t, C1, F, "o", RW, DN);
    let l = t.lock(C1, F, &new_lock(o, "l", WR, 0, 10)).unwrap();
    assert_eq!(
        t.release_lock_owner(1, C1, &owner("l")),
        Err(StateError::NotSupp)
    );
    assert_eq!(
        t.release_lock_owner(0, C1, &owner("l")),
        Err(StateError::LocksHeld)
    );
    let l = t.locku(C1, F, &unlock(l, 0, 10)).unwrap();
    assert_eq!(t.release_lock_owner(0, C1, &owner("l")), Ok(()));
    assert_eq!(
        t.test_stateid(C1, &[l]),
        vec![NfsStat4::NFS4ERR_BAD_STATEID]
    );
    assert_eq!(t.release_lock_owner(0, C1, &owner("unknown")), Ok(()));
}

#[test]
fn release_client_drops_its_locks() {
    let mut t = table();
    let a = open_ok(&mut t, C1, F, "a", RW, DN);
    let b = open_ok(&mut t, C2, F, "b", RW, DN);
    t.lock(C1, F, &new_lock(a, "la", WR, 0, u64::MAX)).unwrap();
    t.release_client(C1);
    t.lock(C2, F, &new_lock(b, "lb", WR, 0, u64::MAX)).unwrap();
    assert!(!t.client_has_state(C1));
}

#[test]
fn revoked_locks_are_released_and_their_stateid_expired_until_freed() {
    let mut t = table();
    let a = open_ok(&mut t, C1, F, "a", RW, DN);
    let b = open_ok(&mut t, C2, F, "b", RW, DN);
    let l = t.lock(C1, F, &new_lock(a, "la", WR, 0, u64::MAX)).unwrap();
    t.revoke_client(C1, RevokeReason::Expired);
    t.lock(C2, F, &new_lock(b, "lb", WR, 0, u64::MAX)).unwrap();
    assert_eq!(
        t.locku(C1, F, &unlock(l, 0, 1)),
        Err(StateError::Stateid(StateidError::Expired))
    );
    assert_eq!(t.free_stateid(C1, &l), Ok(()));
    assert_eq!(t.free_stateid(C1, &a), Ok(()));
    assert!(!t.client_has_state(C1));
}

// ---- property test against a per-byte model ----

/// Bytes 0..=126 are modelled one by one; cell 127 stands for every byte from 127 to the end
/// of the file, which only to-end-of-file locks reach (offsets < 64, finite lengths <= 64).
const CELLS: usize = 128;

#[derive(Clone, Debug)]
enum Op {
    Lock(u8, LockKind, u64, u64),
    Unlock(u8, u64, u64),
    Test(u8, LockKind, u64, u64),
}

fn length() -> impl Strategy<Value = u64> {
    prop_oneof![4 => 1u64..=64, 1 => Just(u64::MAX)]
}

fn kind() -> impl Strategy<Value = LockKind> {
    prop_oneof![Just(LockKind::Read), Just(LockKind::Write)]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (0u8..3, kind(), 0u64..64, length()).prop_map(|(o, k, s, l)| Op::Lock(o, k, s, l)),
        1 => (0u8..3, 0u64..64, length()).prop_map(|(o, s, l)| Op::Unlock(o, s, l)),
        1 => (0u8..3, kind(), 0u64..64, length()).prop_map(|(o, k, s, l)| Op::Test(o, k, s, l)),
    ]
}

type Model = [[Option<LockKind>; CELLS]; 3];

fn cells(r: &ByteRange) -> std::ops::RangeInclusive<usize> {
    let end = if r.end == u64::MAX {
        CELLS - 1
    } else {
        assert!(
            r.end < CELLS as u64 - 1,
            "finite ranges stay below the tail"
        );
        r.end as usize
    };
    r.start as usize..=end
}

fn model_conflict(m: &Model, owner: u8, kind: LockKind, r: &ByteRange) -> bool {
    (0..3u8)
        .filter(|&o| o != owner)
        .any(|o| cells(r).any(|c| m[o as usize][c].is_some_and(|k| k.conflicts_with(kind))))
}

/// The model's locks as maximal runs, the form the table must keep.
fn model_runs(m: &Model) -> Vec<HeldLock<u8>> {
    let mut out = Vec::new();
    for (o, row) in m.iter().enumerate() {
        let mut c = 0;
        while c < CELLS {
            let Some(k) = row[c] else {
                c += 1;
                continue;
            };
            let start = c;
            while c < CELLS && row[c] == Some(k) {
                c += 1;
            }
            let end = if c == CELLS { u64::MAX } else { c as u64 - 1 };
            out.push(held(o as u8, k, start as u64, end));
        }
    }
    out.sort_by_key(|l| (l.range.start, l.range.end, l.owner));
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn lock_table_matches_a_per_byte_model(ops in proptest::collection::vec(op(), 1..60)) {
        let mut table = LockTable::<u8>::new();
        let mut model: Model = [[None; CELLS]; 3];
        for op in ops {
            match op {
                Op::Lock(o, k, s, l) => {
                    let r = ByteRange::from_wire(s, l).unwrap();
                    let conflict = model_conflict(&model, o, k, &r);
                    match table.lock(o, k, r) {
                        Ok(()) => {
                            prop_assert!(!conflict, "granted despite a conflict: {:?}", op);
                            for c in cells(&r) {
                                model[o as usize][c] = Some(k);
                            }
                        }
                        Err(h) => {
                            prop_assert!(conflict, "denied without a conflict: {:?}", op);
                            // The reported lock is real, someone else's, overlapping and
                            // conflicting.
                            prop_assert!(h.owner != o && h.range.overlaps(&r));
                            prop_assert!(h.kind.conflicts_with(k));
                            for c in cells(&h.range) {
                                prop_assert_eq!(model[h.owner as usize][c], Some(h.kind));
                            }
                        }
                    }
                }
                Op::Unlock(o, s, l) => {
                    let r = ByteRange::from_wire(s, l).unwrap();
                    table.unlock(&o, &r);
                    for c in cells(&r) {
                        model[o as usize][c] = None;
                    }
                }
                Op::Test(o, k, s, l) => {
                    let r = ByteRange::from_wire(s, l).unwrap();
                    prop_assert_eq!(
                        table.conflict(&o, k, &r).is_some(),
                        model_conflict(&model, o, k, &r)
                    );
                }
            }
            let mut got = table.locks().to_vec();
            got.sort_by_key(|l| (l.range.start, l.range.end, l.owner));
            prop_assert_eq!(got, model_runs(&model));
        }
    }
}

use super::*;
use nfs_server::{Clock, ManualClock};

fn table() -> DelegTable {
    DelegTable::new(StateidMinter::new([5; 32], 3))
}

fn fh(n: u8) -> NfsFh4 {
    NfsFh4(bytes::Bytes::from(vec![n; 8]))
}

const FILE: u64 = 42;
const A: u64 = 1;
const B: u64 = 2;

#[test]
fn a_read_delegation_conflicts_with_writers_only_and_never_with_its_holder() {
    let mut t = table();
    t.grant(A, FILE, fh(1), DelegType::Read, 7).unwrap();
    assert!(!t.conflicts(FILE, B, Need::Read));
    assert!(t.conflicts(FILE, B, Need::Write));
    assert!(!t.conflicts(FILE, A, Need::Write));
    assert!(!t.conflicts(FILE + 1, B, Need::Write));
}

#[test]
fn a_write_delegation_conflicts_with_every_other_client() {
    let mut t = table();
    t.grant(A, FILE, fh(1), DelegType::Write, 7).unwrap();
    assert!(t.conflicts(FILE, B, Need::Read));
    assert!(t.conflicts(FILE, B, Need::Write));
    assert!(!t.conflicts(FILE, A, Need::Read));
}

#[test]
fn a_recall_is_ordered_once_and_the_conflict_lasts_until_delegreturn() {
    let mut t = table();
    let now = ManualClock::new().now();
    let sid = t.grant(A, FILE, fh(1), DelegType::Write, 7).unwrap();
    let orders = t.recall(FILE, B, Need::Read, now, Duration::from_secs(5));
    assert_eq!(orders.len(), 1);
    assert_eq!(orders[0].stateid, sid);
    assert_eq!(orders[0].clientid, A);
    assert_eq!(orders[0].fh, fh(1));
    assert!(t
        .recall(FILE, B, Need::Read, now, Duration::from_secs(5))
        .is_empty());
    assert!(t.conflicts(FILE, B, Need::Read));
    // The holder may still use it while returning (opens under CLAIM_DELEG_CUR_FH).
    assert_eq!(t.check(A, FILE, &sid), Ok(DelegType::Write));
    t.delegreturn(A, FILE, &sid).unwrap();
    assert!(!t.conflicts(FILE, B, Need::Write));
    assert_eq!(t.check(A, FILE, &sid), Err(StateidError::Bad));
    let c = t.counts();
    assert_eq!(
        (c.granted_write, c.recalled, c.returned, c.revoked),
        (1, 1, 1, 0)
    );
    assert_eq!(c.held_write, 0);
}

#[test]
fn a_recall_not_answered_by_its_deadline_revokes_until_the_client_frees_it() {
    let mut t = table();
    let now = ManualClock::new().now();
    let sid = t.grant(A, FILE, fh(1), DelegType::Read, 7).unwrap();
    t.recall(FILE, B, Need::Write, now, Duration::from_secs(5));
    assert!(t.expired_recalls(now + Duration::from_secs(4)).is_empty());
    let revoked = t.expired_recalls(now + Duration::from_secs(5));
    assert_eq!(
        revoked,
        vec![RevokedDeleg {
            clientid: A,
            file: FILE,
            other: sid.other
        }]
    );
    assert!(!t.conflicts(FILE, B, Need::Write));
    assert!(t.has_revoked(A));
    assert_eq!(t.test_stateid(A, &sid), NfsStat4::NFS4ERR_DELEG_REVOKED);
    assert_eq!(
        t.delegreturn(A, FILE, &sid),
        Err(StateidError::DelegRevoked)
    );
    assert_eq!(t.free_stateid(A, &sid), Ok(()));
    assert!(!t.has_revoked(A));
    assert_eq!(t.test_stateid(A, &sid), NfsStat4::NFS4ERR_BAD_STATEID);
    assert_eq!(t.counts().revoked, 1);
}

#[test]
fn another_clients_or_a_forged_or_a_live_delegation_stateid_is_refused_by_free_and_return() {
    let mut t = table();
    let sid = t.grant(A, FILE, fh(1), DelegType::Read, 7).unwrap();
    assert_eq!(t.free_stateid(A, &sid), Err(NfsStat4::NFS4ERR_LOCKS_HELD));
    assert_eq!(t.delegreturn(B, FILE, &sid), Err(StateidError::Bad));
    assert_eq!(t.delegreturn(A, FILE + 1, &sid), Err(StateidError::Bad));
    let mut forged = sid;
    forged.other[6] ^= 1;
    assert_eq!(t.test_stateid(A, &forged), NfsStat4::NFS4ERR_BAD_STATEID);
    let future = Stateid4 { seqid: 2, ..sid };
    assert_eq!(t.delegreturn(A, FILE, &future), Err(StateidError::Bad));
    let other_boot = DelegTable::new(StateidMinter::new([5; 32], 2));
    assert_eq!(
        other_boot.test_stateid(A, &sid),
        NfsStat4::NFS4ERR_BAD_STATEID
    );
}

#[test]
fn releasing_a_client_drops_its_delegations_and_their_conflicts() {
    let mut t = table();
    t.grant(A, FILE, fh(1), DelegType::Write, 7).unwrap();
    t.grant(A, FILE + 1, fh(2), DelegType::Read, 7).unwrap();
    assert!(t.client_has_state(A));
    assert_eq!(t.release_client(A).len(), 2);
    assert!(!t.client_has_state(A));
    assert!(!t.conflicts(FILE, B, Need::Write));
    assert_eq!(t.counts().held_write + t.counts().held_read, 0);
}

#[test]
fn cb_getattr_answers_present_the_holders_size_and_a_larger_change_once_modified() {
    let mut t = table();
    let sid = t.grant(A, FILE, fh(1), DelegType::Write, 100).unwrap();
    assert_eq!(t.write_holder(FILE, B).map(|h| h.1), Some(sid.other));
    assert_eq!(t.write_holder(FILE, A), None);
    // Not modified: the holder reports the change it was granted with.
    assert_eq!(t.reported(&sid.other, 100, 0, 100), None);
    // Modified: size from the holder, change above the server's.
    let p = t.reported(&sid.other, 101, 4096, 100).unwrap();
    assert_eq!(
        p,
        Presented {
            size: 4096,
            change: 101
        }
    );
    // Asked again without a further change: the same values.
    assert_eq!(t.reported(&sid.other, 101, 4096, 100), Some(p));
    // Modified again: a larger change still.
    let q = t.reported(&sid.other, 105, 8192, 100).unwrap();
    assert_eq!(q.size, 8192);
    assert!(q.change > p.change);
}

const A2: u64 = 3;

#[test]
fn a_restarted_client_reclaims_its_previous_instances_delegation_under_a_fresh_stateid() {
    let mut t = table();
    let t0 = ManualClock::new().now();
    let old = t.grant(A, FILE, fh(1), DelegType::Write, 7).unwrap();
    let revoked = t.grant(A, FILE + 1, fh(2), DelegType::Read, 7).unwrap();
    t.revoke(&revoked.other);
    assert_eq!(t.carry_over(A, A2, t0 + Duration::from_secs(10)), 1);
    assert!(!t.client_has_state(A), "the old instance keeps nothing");
    assert!(!t.has_revoked(A));
    assert!(
        !t.client_has_state(A2),
        "nothing that keeps DESTROY_CLIENTID busy"
    );
    assert_eq!(t.client_delegations(A2).len(), 1);
    // Still in the way of others, but nothing to recall and nobody to ask.
    assert!(t.conflicts(FILE, B, Need::Read));
    assert!(t
        .recall(FILE, B, Need::Write, t0, Duration::from_secs(1))
        .is_empty());
    assert_eq!(t.write_holder(FILE, B), None);
    // Not held (usable) by anyone until reclaimed; the old stateid is dead.
    assert_eq!(t.held_by(A2, FILE), None);
    assert_eq!(t.check(A2, FILE, &old), Err(StateidError::Bad));
    assert_eq!(t.check(A, FILE, &old), Err(StateidError::Bad));
    assert_eq!(t.prev_kind(A2, FILE), Some(DelegType::Write));
    assert_eq!(t.prev_kind(B, FILE), None);
    assert_eq!(t.reclaim_prev(B, FILE, 8).unwrap(), None, "not B's");
    let (sid, kind) = t.reclaim_prev(A2, FILE, 8).unwrap().unwrap();
    assert_eq!(kind, DelegType::Write);
    assert_ne!(sid.other, old.other);
    assert_eq!(t.held_by(A2, FILE), Some((sid, DelegType::Write)));
    assert_eq!(t.check(A2, FILE, &sid), Ok(DelegType::Write));
    assert_eq!(t.reclaim_prev(A2, FILE, 8).unwrap(), None, "reclaimed once");
    // Now an ordinary delegation: recalled on conflict.
    assert_eq!(
        t.recall(FILE, B, Need::Read, t0, Duration::from_secs(1))
            .len(),
        1
    );
    assert_eq!(t.counts().held_write, 1);
}

#[test]
fn a_delegation_being_recalled_when_its_holder_restarts_keeps_its_recall_deadline() {
    let mut t = table();
    let t0 = ManualClock::new().now();
    t.grant(A, FILE, fh(1), DelegType::Read, 7).unwrap();
    t.grant(A, FILE + 1, fh(2), DelegType::Read, 7).unwrap();
    assert_eq!(
        t.recall(FILE, B, Need::Write, t0, Duration::from_secs(2))
            .len(),
        1
    );
    assert_eq!(t.carry_over(A, A2, t0 + Duration::from_secs(10)), 2);
    assert!(t.conflicts(FILE, B, Need::Write));
    assert_eq!(
        t.expired_prev(t0 + Duration::from_secs(2)),
        vec![(A2, FILE)]
    );
    assert!(!t.conflicts(FILE, B, Need::Write));
    assert!(t.conflicts(FILE + 1, B, Need::Write));
    assert_eq!(t.counts().revoked, 0);
}

#[test]
fn delegations_awaiting_reclaim_go_at_delegpurge_or_their_deadline_and_are_never_revoked() {
    let mut t = table();
    let t0 = ManualClock::new().now();
    t.grant(A, FILE, fh(1), DelegType::Write, 7).unwrap();
    t.grant(A, FILE + 1, fh(2), DelegType::Read, 7).unwrap();
    t.grant(A, FILE + 2, fh(3), DelegType::Read, 7).unwrap();
    assert_eq!(t.carry_over(A, A2, t0 + Duration::from_secs(10)), 3);
    let (kept, _) = t.reclaim_prev(A2, FILE + 2, 7).unwrap().unwrap();
    // The deadline drops what was not reclaimed, not what was.
    assert!(t.expired_prev(t0 + Duration::from_secs(9)).is_empty());
    let mut gone = t.expired_prev(t0 + Duration::from_secs(10));
    gone.sort();
    assert_eq!(gone, vec![(A2, FILE), (A2, FILE + 1)]);
    assert!(!t.conflicts(FILE, B, Need::Write));
    assert_eq!(t.counts().revoked, 0);
    assert_eq!(t.check(A2, FILE + 2, &kept), Ok(DelegType::Read));
    // DELEGPURGE: the same, at once; revoking a client forgets (not revokes) them.
    t.grant(A2, FILE, fh(1), DelegType::Write, 7).unwrap();
    t.grant(A2, FILE + 1, fh(2), DelegType::Read, 7).unwrap();
    assert_eq!(t.carry_over(A2, A, t0), 3);
    assert_eq!(t.purge_prev(A), 3);
    assert!(!t.client_has_state(A));
    t.grant(A, FILE, fh(1), DelegType::Write, 7).unwrap();
    t.carry_over(A, A2, t0 + Duration::from_secs(10));
    for (other, _) in t.client_delegations(A2) {
        assert_eq!(t.revoke(&other), None);
    }
    assert!(!t.has_revoked(A2));
    assert!(!t.client_has_state(A2));
    assert_eq!(t.counts().revoked, 0);
}

#[test]
fn the_deadline_check_looks_only_at_recalled_delegations_and_forgets_returned_ones() {
    let mut t = table();
    let now = ManualClock::new().now();
    for f in 0..1000 {
        t.grant(A, f, fh(1), DelegType::Write, 7).unwrap();
    }
    let returned = t.grant(A, FILE + 1000, fh(2), DelegType::Write, 7).unwrap();
    let kept = t.grant(A, FILE + 2000, fh(3), DelegType::Write, 7).unwrap();
    t.recall(FILE + 1000, B, Need::Read, now, Duration::from_secs(5));
    t.recall(FILE + 2000, B, Need::Read, now, Duration::from_secs(5));
    assert_eq!(t.timed.len(), 2);
    t.delegreturn(A, FILE + 1000, &returned).unwrap();
    // The returned one is not revoked, and leaves the set when looked at.
    let revoked = t.expired_recalls(now + Duration::from_secs(5));
    assert_eq!(revoked.len(), 1);
    assert_eq!(revoked[0].other, kept.other);
    assert!(t.timed.is_empty());
    assert!(t.expired_recalls(now + Duration::from_secs(60)).is_empty());
    assert_eq!(t.counts().held_write, 1000);
}

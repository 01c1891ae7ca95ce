//! The grace period after a restart (RFC 8881 section 8.4.2): clients of the previous boot
//! reclaim their opens and locks before anyone gets new ones.
//!
//! ```text
//!  boot ── store lists owners confirmed before the restart ──> Grace::new(now, grace_time, owners)
//!   in grace: reclaims from those owners OK, new opens/locks NFS4ERR_GRACE
//!   ends when grace_time has passed or every previous owner sent RECLAIM_COMPLETE
//!   -> poll_end() once: owners that never completed; their store records go
//! ```
//!
//! Previous clients are known by `co_ownerid` (their client ids were of the earlier boot);
//! clients of this boot by client id.

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

use bytes::Bytes;
use nfs_proto::nfs4::{Clientid4, NfsStat4};

/// Why a reclaim, a new lock, or RECLAIM_COMPLETE is refused.
#[derive(Clone, Copy, PartialEq, Eq, Debug, thiserror::Error)]
pub enum GraceError {
    /// New (non-reclaim) state during the grace period.
    #[error("in grace period")]
    Grace,
    /// A reclaim outside the grace period, from a client that was not a client of the
    /// previous boot, or after the client's RECLAIM_COMPLETE: no reclaim of this client will
    /// succeed.
    #[error("no grace for this reclaim")]
    NoGrace,
    /// This reclaim does not match what the client held (decided by the open and lock
    /// tables); other reclaims may still succeed.
    #[error("reclaim does not match previous state")]
    ReclaimBad,
    /// A second global RECLAIM_COMPLETE from the same client.
    #[error("reclaim already complete")]
    CompleteAlready,
}

impl From<GraceError> for NfsStat4 {
    fn from(e: GraceError) -> Self {
        match e {
            GraceError::Grace => NfsStat4::NFS4ERR_GRACE,
            GraceError::NoGrace => NfsStat4::NFS4ERR_NO_GRACE,
            GraceError::ReclaimBad => NfsStat4::NFS4ERR_RECLAIM_BAD,
            GraceError::CompleteAlready => NfsStat4::NFS4ERR_COMPLETE_ALREADY,
        }
    }
}

/// The end of the grace period, reported once by [`Grace::poll_end`].
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct GraceEnd {
    /// Owners of the previous boot that did not send RECLAIM_COMPLETE. Their old state may
    /// now conflict with new state, so they must not reclaim after another restart: delete
    /// their store records unless the record is of this boot (client id epoch) — a client
    /// that came back and was confirmed again holds new state it may reclaim next time.
    pub unreclaimed: Vec<Bytes>,
}

/// The grace period of this boot.
#[derive(Clone, Debug)]
pub struct Grace {
    /// When the period ends by time; `None` when there is no grace period at all.
    deadline: Option<Instant>,
    /// Owners of the previous boot -> whether they completed reclaim.
    previous: HashMap<Bytes, bool>,
    /// Previous owners that have not completed yet.
    remaining: usize,
    /// Clients of this boot that sent a global RECLAIM_COMPLETE.
    completed: HashSet<Clientid4>,
    reported: bool,
}

impl Grace {
    /// Starts the grace period at boot: `grace_time` long if the store knew clients of the
    /// previous boot (`previous_owners`, their `co_ownerid`s), none otherwise (or when
    /// `grace_time` is zero).
    pub fn new(
        now: Instant,
        grace_time: Duration,
        previous_owners: impl IntoIterator<Item = Bytes>,
    ) -> Self {
        let previous: HashMap<Bytes, bool> =
            previous_owners.into_iter().map(|o| (o, false)).collect();
        let deadline = (!previous.is_empty() && !grace_time.is_zero()).then(|| now + grace_time);
        Self {
            deadline,
            remaining: previous.len(),
            previous,
            completed: HashSet::new(),
            reported: false,
        }
    }

    /// Whether the grace period is still running at `now`.
    pub fn in_grace(&self, now: Instant) -> bool {
        self.deadline.is_some_and(|d| now < d) && self.remaining > 0
    }

    /// When the grace period ends by time, if it is running: when to call
    /// [`poll_end`](Self::poll_end).
    pub fn deadline(&self) -> Option<Instant> {
        self.deadline
    }

    /// Whether `ownerid` was a client of the previous boot.
    pub fn is_previous_client(&self, ownerid: &[u8]) -> bool {
        self.previous.contains_key(ownerid)
    }

    /// May this client reclaim (OPEN with CLAIM_PREVIOUS, LOCK with reclaim set)? RFC 8881
    /// section 8.4.2.1: only during grace (`NFS4ERR_NO_GRACE` after), only a client of the
    /// previous boot (else `NFS4ERR_NO_GRACE`: none of its reclaims can succeed), and not
    /// after its RECLAIM_COMPLETE (`NFS4ERR_NO_GRACE`, section 18.51.3).
    pub fn check_reclaim(
        &self,
        clientid: Clientid4,
        ownerid: &[u8],
        now: Instant,
    ) -> Result<(), GraceError> {
        if !self.in_grace(now)
            || !self.is_previous_client(ownerid)
            || self.completed.contains(&clientid)
        {
            return Err(GraceError::NoGrace);
        }
        Ok(())
    }

    /// Is the grace period over, so that state may be tested or granted? Not during grace:
    /// `NFS4ERR_GRACE` (RFC 8881 section 8.4.2). LOCKT asks this; OPEN and LOCK ask
    /// [`check_new_lock`](Self::check_new_lock).
    pub fn check_new_state(&self, now: Instant) -> Result<(), GraceError> {
        if self.in_grace(now) {
            return Err(GraceError::Grace);
        }
        Ok(())
    }

    /// May this client be granted a new (non-reclaim) open or lock? Not during grace, and
    /// not before the client's global RECLAIM_COMPLETE: RFC 8881 section 18.51.3 says a
    /// client with a new client ID MUST send it "before it does the first non-reclaim
    /// operation that obtains a lock", and "if non-reclaim locking operations are done before
    /// the RECLAIM_COMPLETE, an NFS4ERR_GRACE error will be returned" (knfsd does so too).
    pub fn check_new_lock(&self, clientid: Clientid4, now: Instant) -> Result<(), GraceError> {
        self.check_new_state(now)?;
        if !self.completed.contains(&clientid) {
            return Err(GraceError::Grace);
        }
        Ok(())
    }

    /// RECLAIM_COMPLETE (RFC 8881 section 18.51.3). With `rca_one_fs` it only concerns one
    /// file system, and this server keeps one grace period for all, so it is accepted and
    /// changes nothing. The global form is accepted once per client id
    /// (`NFS4ERR_COMPLETE_ALREADY` after), in grace or not; when every previous owner has
    /// sent it, the grace period ends.
    pub fn reclaim_complete(
        &mut self,
        clientid: Clientid4,
        ownerid: &[u8],
        one_fs: bool,
    ) -> Result<(), GraceError> {
        if one_fs {
            return Ok(());
        }
        if !self.completed.insert(clientid) {
            return Err(GraceError::CompleteAlready);
        }
        if let Some(done) = self.previous.get_mut(ownerid) {
            if !*done {
                *done = true;
                self.remaining -= 1;
            }
        }
        Ok(())
    }

    /// A client record of this boot is gone (expired or destroyed): forget its
    /// RECLAIM_COMPLETE so the set does not grow without bound.
    pub fn client_removed(&mut self, clientid: Clientid4) {
        self.completed.remove(&clientid);
    }

    /// Reports the end of the grace period once, after it has ended (by time or because every
    /// previous owner completed); `None` before and afterwards. Without a grace period there
    /// is nothing to report.
    pub fn poll_end(&mut self, now: Instant) -> Option<GraceEnd> {
        if self.reported || self.deadline.is_none() || self.in_grace(now) {
            return None;
        }
        self.reported = true;
        let mut unreclaimed: Vec<Bytes> = self
            .previous
            .iter()
            .filter(|(_, &done)| !done)
            .map(|(o, _)| o.clone())
            .collect();
        unreclaimed.sort();
        Some(GraceEnd { unreclaimed })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::{Clock, ManualClock};

    const GRACE: Duration = Duration::from_secs(90);

    fn owners(names: &[&'static str]) -> Vec<Bytes> {
        names
            .iter()
            .map(|n| Bytes::from_static(n.as_bytes()))
            .collect()
    }

    #[test]
    fn no_previous_clients_means_no_grace_period() {
        let t0 = ManualClock::new().now();
        let mut g = Grace::new(t0, GRACE, Vec::new());
        assert!(!g.in_grace(t0));
        assert_eq!(g.check_new_state(t0), Ok(()));
        assert_eq!(g.check_reclaim(1, b"a", t0), Err(GraceError::NoGrace));
        assert_eq!(g.poll_end(t0), None);
    }

    #[test]
    fn zero_grace_time_disables_grace() {
        let t0 = ManualClock::new().now();
        let g = Grace::new(t0, Duration::ZERO, owners(&["a"]));
        assert!(!g.in_grace(t0));
    }

    #[test]
    fn new_state_during_grace_is_nfs4err_grace() {
        let t0 = ManualClock::new().now();
        let g = Grace::new(t0, GRACE, owners(&["a"]));
        assert!(g.in_grace(t0));
        assert_eq!(g.check_new_state(t0), Err(GraceError::Grace));
        assert_eq!(NfsStat4::from(GraceError::Grace), NfsStat4::NFS4ERR_GRACE);
    }

    #[test]
    fn new_locks_wait_for_the_clients_reclaim_complete_even_without_grace() {
        let t0 = ManualClock::new().now();
        let mut g = Grace::new(t0, GRACE, Vec::new());
        assert_eq!(g.check_new_state(t0), Ok(()));
        assert_eq!(g.check_new_lock(7, t0), Err(GraceError::Grace));
        g.reclaim_complete(7, b"x", true).unwrap();
        assert_eq!(
            g.check_new_lock(7, t0),
            Err(GraceError::Grace),
            "one file system's completion is not the global one"
        );
        g.reclaim_complete(7, b"x", false).unwrap();
        assert_eq!(g.check_new_lock(7, t0), Ok(()));
        assert_eq!(g.check_new_lock(8, t0), Err(GraceError::Grace));
    }

    #[test]
    fn new_locks_wait_for_the_grace_period_even_after_reclaim_complete() {
        let t0 = ManualClock::new().now();
        let mut g = Grace::new(t0, GRACE, owners(&["a", "b"]));
        g.reclaim_complete(7, b"a", false).unwrap();
        assert_eq!(g.check_new_lock(7, t0), Err(GraceError::Grace));
        assert_eq!(g.check_new_lock(7, t0 + GRACE), Ok(()));
    }

    #[test]
    fn previous_client_may_reclaim_during_grace() {
        let t0 = ManualClock::new().now();
        let g = Grace::new(t0, GRACE, owners(&["a"]));
        assert_eq!(
            g.check_reclaim(7, b"a", t0 + Duration::from_secs(10)),
            Ok(())
        );
    }

    #[test]
    fn reclaim_from_a_client_not_of_the_previous_boot_is_no_grace() {
        let t0 = ManualClock::new().now();
        let g = Grace::new(t0, GRACE, owners(&["a"]));
        assert_eq!(g.check_reclaim(7, b"b", t0), Err(GraceError::NoGrace));
    }

    #[test]
    fn reclaim_after_grace_is_no_grace_and_new_state_allowed() {
        let t0 = ManualClock::new().now();
        let g = Grace::new(t0, GRACE, owners(&["a"]));
        let later = t0 + GRACE;
        assert_eq!(g.check_reclaim(7, b"a", later), Err(GraceError::NoGrace));
        assert_eq!(g.check_new_state(later), Ok(()));
        assert_eq!(
            NfsStat4::from(GraceError::NoGrace),
            NfsStat4::NFS4ERR_NO_GRACE
        );
    }

    #[test]
    fn reclaim_after_own_reclaim_complete_is_no_grace() {
        let t0 = ManualClock::new().now();
        let mut g = Grace::new(t0, GRACE, owners(&["a", "b"]));
        g.reclaim_complete(7, b"a", false).unwrap();
        assert!(g.in_grace(t0), "b has not completed");
        assert_eq!(g.check_reclaim(7, b"a", t0), Err(GraceError::NoGrace));
    }

    #[test]
    fn grace_ends_when_every_previous_client_completed() {
        let t0 = ManualClock::new().now();
        let mut g = Grace::new(t0, GRACE, owners(&["a", "b"]));
        g.reclaim_complete(1, b"a", false).unwrap();
        g.reclaim_complete(5, b"new", false).unwrap();
        assert!(g.in_grace(t0));
        assert_eq!(g.poll_end(t0), None);
        g.reclaim_complete(2, b"b", false).unwrap();
        assert!(!g.in_grace(t0));
        assert_eq!(g.check_new_state(t0), Ok(()));
        assert_eq!(
            g.poll_end(t0),
            Some(GraceEnd {
                unreclaimed: vec![]
            })
        );
        assert_eq!(g.poll_end(t0), None, "reported once");
    }

    #[test]
    fn grace_ends_by_time_listing_unreclaimed_owners() {
        let t0 = ManualClock::new().now();
        let mut g = Grace::new(t0, GRACE, owners(&["c", "a", "b"]));
        g.reclaim_complete(1, b"b", false).unwrap();
        assert_eq!(g.poll_end(t0 + GRACE - Duration::from_millis(1)), None);
        assert_eq!(g.deadline(), Some(t0 + GRACE));
        assert_eq!(
            g.poll_end(t0 + GRACE),
            Some(GraceEnd {
                unreclaimed: owners(&["a", "c"])
            })
        );
    }

    #[test]
    fn second_reclaim_complete_is_complete_already() {
        let t0 = ManualClock::new().now();
        let mut g = Grace::new(t0, GRACE, owners(&["a"]));
        assert_eq!(g.reclaim_complete(3, b"zzz", false), Ok(()));
        assert_eq!(
            g.reclaim_complete(3, b"zzz", false),
            Err(GraceError::CompleteAlready)
        );
        assert_eq!(
            NfsStat4::from(GraceError::CompleteAlready),
            NfsStat4::NFS4ERR_COMPLETE_ALREADY
        );
        // also outside any grace period
        let mut none = Grace::new(t0, GRACE, Vec::new());
        assert_eq!(none.reclaim_complete(3, b"x", false), Ok(()));
        assert_eq!(
            none.reclaim_complete(3, b"x", false),
            Err(GraceError::CompleteAlready)
        );
    }

    #[test]
    fn reclaim_complete_for_one_fs_changes_nothing() {
        let t0 = ManualClock::new().now();
        let mut g = Grace::new(t0, GRACE, owners(&["a"]));
        assert_eq!(g.reclaim_complete(3, b"a", true), Ok(()));
        assert_eq!(g.reclaim_complete(3, b"a", true), Ok(()));
        assert!(g.in_grace(t0));
        assert_eq!(g.check_reclaim(3, b"a", t0), Ok(()));
    }

    #[test]
    fn a_rebooted_previous_client_with_a_new_clientid_may_complete_again() {
        let t0 = ManualClock::new().now();
        let mut g = Grace::new(t0, GRACE, owners(&["a", "b"]));
        g.reclaim_complete(1, b"a", false).unwrap();
        g.client_removed(1);
        assert_eq!(g.reclaim_complete(2, b"a", false), Ok(()));
        assert!(g.in_grace(t0), "a counted once");
    }

    #[test]
    fn reclaim_bad_maps_to_its_status() {
        assert_eq!(
            NfsStat4::from(GraceError::ReclaimBad),
            NfsStat4::NFS4ERR_RECLAIM_BAD
        );
    }
}

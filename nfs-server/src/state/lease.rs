//! Client leases (RFC 8881 section 8.3): every client record has one lease, renewed by
//! SEQUENCE and by any operation that uses the client's state; a client whose lease runs out
//! loses its state.
//!
//! No courtesy period: when [`Leases::expired`] names a client, the caller removes the client
//! record (see [`ClientTable::expire`](super::client::ClientTable::expire)) and drops its
//! opens, locks and layouts.

use std::collections::{BTreeSet, HashMap};
use std::time::{Duration, Instant};

use nfs_proto::nfs4::Clientid4;

/// The lease deadlines of all clients, ordered by deadline so that finding the expired ones
/// costs only what is found.
#[derive(Clone, Debug)]
pub struct Leases {
    lease_time: Duration,
    deadline: HashMap<Clientid4, Instant>,
    by_deadline: BTreeSet<(Instant, Clientid4)>,
}

impl Leases {
    /// Leases of `lease_time` (the configured `lease_time`, reported to clients in the
    /// `lease_time` attribute).
    pub fn new(lease_time: Duration) -> Self {
        Self {
            lease_time,
            deadline: HashMap::new(),
            by_deadline: BTreeSet::new(),
        }
    }

    /// The lease period.
    pub fn lease_time(&self) -> Duration {
        self.lease_time
    }

    /// Starts or renews the client's lease: it now runs until `now + lease_time`. A renewal
    /// never moves a deadline backwards (a late-processed request with an older `now` does
    /// not shorten the lease).
    pub fn renew(&mut self, clientid: Clientid4, now: Instant) {
        let until = now + self.lease_time;
        if let Some(old) = self.deadline.get(&clientid).copied() {
            if old >= until {
                return;
            }
            self.by_deadline.remove(&(old, clientid));
        }
        self.deadline.insert(clientid, until);
        self.by_deadline.insert((until, clientid));
    }

    /// Forgets the client's lease (the client record is gone).
    pub fn remove(&mut self, clientid: Clientid4) {
        if let Some(old) = self.deadline.remove(&clientid) {
            self.by_deadline.remove(&(old, clientid));
        }
    }

    /// When the client's lease runs out, if it has one.
    pub fn expires_at(&self, clientid: Clientid4) -> Option<Instant> {
        self.deadline.get(&clientid).copied()
    }

    /// Whether the client's lease has run out at `now` (a client without a lease has none to
    /// run out).
    pub fn is_expired(&self, clientid: Clientid4, now: Instant) -> bool {
        self.deadline.get(&clientid).is_some_and(|&d| d <= now)
    }

    /// The clients whose lease has run out at `now`, earliest first. They stay listed until
    /// renewed or [`remove`](Self::remove)d.
    pub fn expired(&self, now: Instant) -> Vec<Clientid4> {
        self.by_deadline
            .iter()
            .take_while(|(d, _)| *d <= now)
            .map(|&(_, id)| id)
            .collect()
    }

    /// The earliest deadline: when the caller should next look for expired clients.
    pub fn next_expiry(&self) -> Option<Instant> {
        self.by_deadline.first().map(|&(d, _)| d)
    }

    /// How many clients hold a lease.
    pub fn len(&self) -> usize {
        self.deadline.len()
    }

    /// Whether no client holds a lease.
    pub fn is_empty(&self) -> bool {
        self.deadline.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::{Clock, ManualClock};

    const LEASE: Duration = Duration::from_secs(90);

    #[test]
    fn lease_runs_out_after_lease_time_without_renewal() {
        let t0 = ManualClock::new().now();
        let mut l = Leases::new(LEASE);
        l.renew(7, t0);
        assert!(l.expired(t0 + LEASE - Duration::from_millis(1)).is_empty());
        assert!(!l.is_expired(7, t0 + Duration::from_secs(89)));
        assert_eq!(l.expired(t0 + LEASE), vec![7]);
        assert!(l.is_expired(7, t0 + LEASE));
        assert_eq!(l.expires_at(7), Some(t0 + LEASE));
    }

    #[test]
    fn renewal_extends_the_lease() {
        let t0 = ManualClock::new().now();
        let mut l = Leases::new(LEASE);
        l.renew(1, t0);
        l.renew(1, t0 + Duration::from_secs(60));
        assert!(l.expired(t0 + LEASE).is_empty());
        assert_eq!(l.expired(t0 + Duration::from_secs(150)), vec![1]);
    }

    #[test]
    fn renewal_never_shortens_the_lease() {
        let t0 = ManualClock::new().now();
        let mut l = Leases::new(LEASE);
        l.renew(1, t0 + Duration::from_secs(10));
        l.renew(1, t0);
        assert_eq!(l.expires_at(1), Some(t0 + Duration::from_secs(100)));
        assert_eq!(l.len(), 1);
    }

    #[test]
    fn expired_lists_clients_earliest_first_and_removed_ones_not_at_all() {
        let t0 = ManualClock::new().now();
        let mut l = Leases::new(LEASE);
        l.renew(3, t0 + Duration::from_secs(2));
        l.renew(1, t0 + Duration::from_secs(1));
        l.renew(2, t0 + Duration::from_secs(3));
        l.renew(9, t0 + Duration::from_secs(500));
        assert_eq!(l.next_expiry(), Some(t0 + Duration::from_secs(91)));
        l.remove(2);
        assert_eq!(l.expired(t0 + Duration::from_secs(200)), vec![1, 3]);
        l.remove(1);
        l.remove(3);
        l.remove(9);
        assert!(l.is_empty());
        assert_eq!(l.next_expiry(), None);
    }

    #[test]
    fn unknown_client_has_no_lease_to_expire() {
        let l = Leases::new(LEASE);
        assert!(!l.is_expired(5, ManualClock::new().now()));
        assert_eq!(l.expires_at(5), None);
    }
}

//! Credit-based flow control (RFC 8166 section 3.3.1), one plain struct per side.
//!
//! A credit is one RDMA Send the responder has a posted Receive for. Every call carries the
//! requester's credit *request* (how many calls it would like in flight) and every reply the
//! responder's *grant*; each reply also acknowledges the call it answers. The requester must not
//! have more unanswered calls than the last grant it received, and starts every connection
//! with a grant of one (section 3.3.3). Neither struct does I/O or keeps time: the transport
//! calls them as it posts Sends and completes Receives.
//!
//! ```text
//!   requester                                         responder
//!   try_send() ── call, rdma_credit = credit_request() ──> on_call()      (in flight + 1)
//!   on_reply(grant) <── reply, rdma_credit = reply_credit() ─┘            (in flight - 1)
//! ```

use core::fmt;

/// A credit rule broken.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CreditError {
    /// The requester has as many calls in flight as it was granted: wait for a reply.
    Exhausted {
        /// The current grant.
        limit: u32,
    },
    /// The requester sent more calls than it was ever granted. The responder may close the
    /// connection, or answer the excess with an RPC-level error (section 3.3.1).
    Overrun {
        /// Calls received and not yet answered, this one included.
        in_flight: u32,
        /// The most the requester may have in flight.
        limit: u32,
    },
    /// A reply arrived with no call in flight.
    NothingInFlight,
}

impl fmt::Display for CreditError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Self::Exhausted { limit } => write!(f, "all {limit} RPC-over-RDMA credits in use"),
            Self::Overrun { in_flight, limit } => write!(
                f,
                "requester has {in_flight} calls in flight, more than the {limit} credits granted"
            ),
            Self::NothingInFlight => f.write_str("reply without a call in flight"),
        }
    }
}

impl std::error::Error for CreditError {}

/// The requester's side: how many calls it may send before the next reply.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RequesterCredits {
    /// The grant of the last reply, clamped to `1..=max`.
    limit: u32,
    /// Calls sent and not yet answered.
    in_flight: u32,
    /// The most calls this requester can have in flight (the Receives it posts for replies).
    max: u32,
}

impl RequesterCredits {
    /// A fresh connection's state: one credit until the first reply (section 3.3.3). `max`
    /// is the most calls this requester can have in flight (at least 1), which it also asks
    /// for.
    pub fn new(max: u32) -> Self {
        Self {
            limit: 1,
            in_flight: 0,
            max: max.max(1),
        }
    }

    /// The credit request to put in a call's `rdma_credit`.
    pub fn credit_request(&self) -> u32 {
        self.max
    }

    /// The current limit on calls in flight.
    pub fn limit(&self) -> u32 {
        self.limit
    }

    /// Calls sent and not yet answered.
    pub fn in_flight(&self) -> u32 {
        self.in_flight
    }

    /// Whether a call may be sent now.
    pub fn can_send(&self) -> bool {
        self.in_flight < self.limit
    }

    /// Takes a credit for a call about to be sent, or says to wait: a requester must not send
    /// unacknowledged calls in excess of the granted credit limit (section 3.3.1).
    pub fn try_send(&mut self) -> Result<(), CreditError> {
        if !self.can_send() {
            return Err(CreditError::Exhausted { limit: self.limit });
        }
        self.in_flight += 1;
        Ok(())
    }

    /// A reply (an `RDMA_ERROR` included) answered one of this requester's calls and carried
    /// `grant`. The new limit is the grant, but never zero (a responder must always leave a
    /// requester with no calls in flight at least one credit, section 3.3.1; Linux's client
    /// takes a zero as one so as not to deadlock) and never more than this requester can have
    /// in flight.
    pub fn on_reply(&mut self, grant: u32) -> Result<(), CreditError> {
        if self.in_flight == 0 {
            return Err(CreditError::NothingInFlight);
        }
        self.in_flight -= 1;
        self.limit = grant.clamp(1, self.max);
        Ok(())
    }

    /// The connection was lost: calls in flight are gone (they are sent again on the next
    /// connection), and the next connection starts with one credit (section 3.3.3).
    pub fn reset(&mut self) {
        self.limit = 1;
        self.in_flight = 0;
    }
}

/// The responder's side: the grant its replies carry and the calls it has in hand.
///
/// A requester learns a lowered grant only from a later reply, and the calls it sent before
/// are still on their way, so the responder accepts (and keeps Receives posted for) up to the
/// highest grant it has sent on the connection; before its first reply that is one (section
/// 3.3.3).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResponderCredits {
    /// What the next replies carry (at least 1).
    grant: u32,
    /// The most calls the requester may have in flight: the highest grant sent so far.
    ceiling: u32,
    /// Calls received and not yet answered.
    in_flight: u32,
}

impl ResponderCredits {
    /// A fresh connection whose replies will grant `grant` credits (at least 1).
    pub fn new(grant: u32) -> Self {
        Self {
            grant: grant.max(1),
            ceiling: 1,
            in_flight: 0,
        }
    }

    /// The grant the next replies carry.
    pub fn grant(&self) -> u32 {
        self.grant
    }

    /// The most calls the requester may have in flight now.
    pub fn ceiling(&self) -> u32 {
        self.ceiling
    }

    /// Calls received and not yet answered.
    pub fn in_flight(&self) -> u32 {
        self.in_flight
    }

    /// Changes the grant of the next replies (never below 1: a grant of zero would leave a
    /// requester unable to send, section 3.3.1). Lowering it does not lower what the
    /// requester may already have in flight.
    pub fn set_grant(&mut self, grant: u32) {
        self.grant = grant.max(1);
    }

    /// A call arrived. An overrun (more calls in flight than ever granted) is refused and not
    /// counted; the connection may be closed (section 3.3.1).
    pub fn on_call(&mut self) -> Result<(), CreditError> {
        if self.in_flight >= self.ceiling {
            return Err(CreditError::Overrun {
                in_flight: self.in_flight + 1,
                limit: self.ceiling,
            });
        }
        self.in_flight += 1;
        Ok(())
    }

    /// A reply (or an `RDMA_ERROR`) answering one call is about to be sent: returns the
    /// `rdma_credit` it carries.
    pub fn reply_credit(&mut self) -> u32 {
        self.in_flight = self.in_flight.saturating_sub(1);
        self.ceiling = self.ceiling.max(self.grant);
        self.grant
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_requester_starts_with_one_credit_and_follows_each_grant() {
        let mut r = RequesterCredits::new(32);
        assert_eq!(r.credit_request(), 32);
        r.try_send().unwrap();
        assert_eq!(r.try_send(), Err(CreditError::Exhausted { limit: 1 }));
        r.on_reply(8).unwrap();
        for _ in 0..8 {
            r.try_send().unwrap();
        }
        assert!(!r.can_send());
        r.on_reply(2).unwrap();
        assert_eq!((r.limit(), r.in_flight()), (2, 7));
        assert!(!r.can_send(), "a lowered grant holds back new calls");
    }

    #[test]
    fn a_zero_grant_counts_as_one_and_a_huge_one_as_the_requesters_maximum() {
        let mut r = RequesterCredits::new(4);
        r.try_send().unwrap();
        r.on_reply(0).unwrap();
        assert_eq!(r.limit(), 1);
        r.try_send().unwrap();
        r.on_reply(u32::MAX).unwrap();
        assert_eq!(r.limit(), 4);
        assert_eq!(r.on_reply(4), Err(CreditError::NothingInFlight));
    }

    #[test]
    fn a_lost_connection_starts_again_at_one_credit() {
        let mut r = RequesterCredits::new(16);
        r.try_send().unwrap();
        r.on_reply(16).unwrap();
        r.try_send().unwrap();
        r.reset();
        assert_eq!((r.limit(), r.in_flight()), (1, 0));
    }

    #[test]
    fn a_responder_accepts_one_call_before_its_first_grant() {
        let mut s = ResponderCredits::new(64);
        s.on_call().unwrap();
        assert_eq!(
            s.on_call(),
            Err(CreditError::Overrun {
                in_flight: 2,
                limit: 1
            })
        );
        assert_eq!(s.reply_credit(), 64);
        for _ in 0..64 {
            s.on_call().unwrap();
        }
        assert!(s.on_call().is_err());
    }

    #[test]
    fn a_lowered_grant_still_admits_calls_sent_under_the_old_one() {
        let mut s = ResponderCredits::new(8);
        s.on_call().unwrap();
        s.reply_credit();
        s.set_grant(2);
        for _ in 0..8 {
            s.on_call().unwrap();
        }
        assert_eq!(s.reply_credit(), 2);
        assert_eq!(s.ceiling(), 8);
        s.set_grant(0);
        assert_eq!(s.grant(), 1, "never a zero grant");
    }

    #[test]
    fn both_sides_agree_on_a_run_of_calls() {
        let mut req = RequesterCredits::new(8);
        let mut resp = ResponderCredits::new(4);
        let mut queue = std::collections::VecDeque::new();
        for round in 0..100u32 {
            while req.can_send() && queue.len() < 3 + (round % 5) as usize {
                req.try_send().unwrap();
                resp.on_call()
                    .expect("the requester never overruns the grant");
                queue.push_back(());
            }
            if queue.pop_front().is_some() {
                let grant = resp.reply_credit();
                req.on_reply(grant).unwrap();
            }
            if round == 50 {
                resp.set_grant(2);
            }
        }
        assert!(req.in_flight() <= 4);
    }
}

//! The memory a server may spend on replies it has not yet written: one budget shared by all
//! connections of a server, and a share of it per connection.
//!
//! A peer that sends calls and never reads the replies would otherwise make the server hold
//! every reply it computes (a pipeline of 1 MiB READs grew the server by ~75 MB per such
//! connection). Like knfsd, which reserves room for the largest reply before it runs a request
//! and stops receiving on a transport whose socket has no room to write, a call here reserves
//! the largest reply it may produce *before* it runs; the reservation shrinks to the real
//! reply once encoded and is released when the last byte of it has gone to the socket (or the
//! connection dropped it). A connection whose reservations would pass its share, or the server
//! past its whole budget, stops reading calls until replies drain: the peer sees TCP
//! back-pressure instead of the server growing.
//!
//! ```text
//!   reader: CALL ─> reserve(per_call) ─ wait while share full or budget full
//!   handler:        reply encoded ─> resize(reply bytes)
//!   writer:         reply written (or dropped) ─> release ─> wake waiting readers
//! ```
//!
//! Bounds: a connection holds at most `per_conn` bytes, or one call's reply when it holds
//! nothing else; a server at most `total`, plus one reply for each connection that holds
//! nothing else when it is full (plus the excess of replies larger than `per_call`: none when
//! `per_call` is the largest reply). That floor of one call per connection is what keeps a
//! server whose budget is filled by peers that do not read serving everyone else, one call at
//! a time per connection, until those peers are dropped (`ServerPolicy::idle_timeout`); the
//! connection cap bounds it.

use std::pin::pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use tokio::sync::Notify;

/// A server's budget of bytes of replies not yet written, shared by its connections (see the
/// module documentation).
#[derive(Debug)]
pub struct ReplyBudget {
    total: usize,
    per_conn: usize,
    per_call: usize,
    used: AtomicUsize,
    freed: Notify,
}

impl ReplyBudget {
    /// At most `total` bytes across connections and `per_conn` on one; each call reserves
    /// `per_call` (the largest reply it may produce) before it runs. Zero values are raised
    /// to one byte; `per_call` past `per_conn` or `total` still lets one call run at a time.
    pub fn new(total: usize, per_conn: usize, per_call: usize) -> Self {
        Self {
            total: total.max(1),
            per_conn: per_conn.max(1),
            per_call: per_call.max(1),
            used: AtomicUsize::new(0),
            freed: Notify::new(),
        }
    }

    /// Bytes reserved or queued now, across connections.
    pub fn used(&self) -> usize {
        self.used.load(Ordering::Acquire)
    }

    /// The whole budget.
    pub fn total(&self) -> usize {
        self.total
    }

    /// Takes `n` bytes if they fit (or nothing else is held).
    fn try_take(&self, n: usize) -> bool {
        let mut used = self.used.load(Ordering::Acquire);
        loop {
            if used != 0 && used.saturating_add(n) > self.total {
                return false;
            }
            match self.used.compare_exchange_weak(
                used,
                used + n,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => return true,
                Err(now) => used = now,
            }
        }
    }

    fn give_back(&self, n: usize) {
        if n > 0 {
            self.used.fetch_sub(n, Ordering::AcqRel);
            self.freed.notify_waiters();
        }
    }

    /// Waits until one call's reply fits in `share` and in the budget, and reserves it.
    pub(crate) async fn reserve(self: &Arc<Self>, share: &Arc<ConnShare>) -> Reservation {
        let n = self.per_call;
        loop {
            // Register for wake-ups before looking, so a release in between is not missed.
            let mut conn_freed = pin!(share.freed.notified());
            conn_freed.as_mut().enable();
            let held = share.held.load(Ordering::Acquire);
            if held != 0 && held.saturating_add(n) > self.per_conn {
                conn_freed.await;
                continue;
            }
            let mut freed = pin!(self.freed.notified());
            freed.as_mut().enable();
            // Only this connection's reader adds to its share, so the check above still holds.
            // A connection that holds nothing runs its call even past the budget: peers that
            // do not read can fill the budget, but not stop other clients from being served.
            if held == 0 {
                self.used.fetch_add(n, Ordering::AcqRel);
            }
            if held == 0 || self.try_take(n) {
                share.held.fetch_add(n, Ordering::AcqRel);
                return Reservation {
                    budget: self.clone(),
                    share: share.clone(),
                    bytes: n,
                };
            }
            freed.await;
        }
    }
}

/// One connection's part of a [`ReplyBudget`].
#[derive(Debug, Default)]
pub(crate) struct ConnShare {
    held: AtomicUsize,
    freed: Notify,
}

impl ConnShare {
    /// Bytes this connection holds (reserved for running calls, or replies queued).
    #[cfg(test)]
    pub(crate) fn held(&self) -> usize {
        self.held.load(Ordering::Acquire)
    }
}

/// Bytes of a [`ReplyBudget`] held for one reply, released when dropped (after the reply is
/// written, or when it is dropped unsent).
#[derive(Debug)]
pub(crate) struct Reservation {
    budget: Arc<ReplyBudget>,
    share: Arc<ConnShare>,
    bytes: usize,
}

impl Reservation {
    /// The reply turned out to be `bytes` long: hold that much. Growing past the reservation
    /// does not wait (the reply exists already); it only delays further calls.
    pub(crate) fn resize(&mut self, bytes: usize) {
        if bytes < self.bytes {
            let freed = self.bytes - bytes;
            self.bytes = bytes;
            self.release(freed);
        } else if bytes > self.bytes {
            let more = bytes - self.bytes;
            self.bytes = bytes;
            self.budget.used.fetch_add(more, Ordering::AcqRel);
            self.share.held.fetch_add(more, Ordering::AcqRel);
        }
    }

    fn release(&self, n: usize) {
        if n > 0 {
            self.share.held.fetch_sub(n, Ordering::AcqRel);
            self.share.freed.notify_waiters();
            self.budget.give_back(n);
        }
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        self.release(self.bytes);
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    async fn pending<F: std::future::Future>(f: F) -> bool {
        tokio::time::timeout(Duration::from_millis(50), f)
            .await
            .is_err()
    }

    /// `f`, which must not wait (a bound instead of a hung test).
    async fn at_once<F: std::future::Future>(f: F) -> F::Output {
        tokio::time::timeout(Duration::from_secs(5), f)
            .await
            .expect("reserved without waiting")
    }

    #[tokio::test]
    async fn a_connection_waits_for_its_share_then_for_the_budget() {
        let b = Arc::new(ReplyBudget::new(100, 40, 20));
        let (c1, c2, c3) = (
            Arc::new(ConnShare::default()),
            Arc::new(ConnShare::default()),
            Arc::new(ConnShare::default()),
        );
        let r1 = at_once(b.reserve(&c1)).await;
        let mut r2 = at_once(b.reserve(&c1)).await;
        assert_eq!((c1.held(), b.used()), (40, 40));
        // c1's share is full: its third call waits until its replies shrink or go.
        assert!(pending(b.reserve(&c1)).await);
        drop(r1);
        r2.resize(5);
        assert_eq!((c1.held(), b.used()), (5, 5));
        let r3 = at_once(b.reserve(&c1)).await;
        assert_eq!((c1.held(), b.used()), (25, 25));
        // Other connections use the rest of the budget, then wait for it.
        let r4 = at_once(b.reserve(&c2)).await;
        let r5 = at_once(b.reserve(&c2)).await;
        let r6 = at_once(b.reserve(&c3)).await;
        assert_eq!(b.used(), 85);
        assert!(pending(b.reserve(&c3)).await);
        // A connection that holds nothing still gets one call, past the budget.
        let c4 = Arc::new(ConnShare::default());
        let r8 = at_once(b.reserve(&c4)).await;
        assert_eq!(b.used(), 105);
        assert!(pending(b.reserve(&c4)).await);
        drop(r8);
        let waiting = tokio::spawn({
            let (b, c3) = (b.clone(), c3.clone());
            async move { b.reserve(&c3).await }
        });
        tokio::time::sleep(Duration::from_millis(20)).await;
        drop(r3);
        let r7 = at_once(waiting)
            .await
            .expect("released bytes wake the waiting connection");
        assert_eq!((c3.held(), b.used()), (40, 85));
        drop((r2, r4, r5, r6, r7));
        assert_eq!((c1.held(), c2.held(), c3.held(), b.used()), (0, 0, 0, 0));
    }

    #[tokio::test]
    async fn one_call_always_runs_and_a_larger_reply_is_counted() {
        // A share and a budget smaller than one reservation still let one call run at once.
        let b = Arc::new(ReplyBudget::new(10, 10, 50));
        let c = Arc::new(ConnShare::default());
        let mut r = at_once(b.reserve(&c)).await;
        assert_eq!(b.used(), 50);
        assert!(pending(b.reserve(&c)).await);
        r.resize(70);
        assert_eq!((c.held(), b.used()), (70, 70));
        drop(r);
        assert_eq!((c.held(), b.used()), (0, 0));
        let _r = at_once(b.reserve(&c)).await;
    }
}

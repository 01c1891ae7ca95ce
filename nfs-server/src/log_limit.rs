//! Logging at a bounded rate. A peer that is refused over and over (a bad control-protocol
//! MAC, a connection past the cap) or an accept loop that keeps failing (EMFILE) must not be
//! able to grow the server's log without bound: each kind of event gets a few lines per
//! window and per key (usually the peer's address), then a count of what was left out.
//!
//! ```text
//!  allow(key) ─> key's lines this window < burst? ─> yes: Some(suppressed so far) -> log it
//!                                                 └> no:  None (counted)          -> skip it
//! ```
//!
//! Fixed windows, not a token bucket: simpler to reason about ("at most `burst` lines per key
//! per window, plus `burst` lines for all keys past `MAX_KEYS`"), and the log says how many
//! lines it dropped when the key next gets through.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use crate::clock::{self, SharedClock};

/// Most keys tracked in one window; events of further keys share one budget, so a peer that
/// varies its address cannot grow the table either.
pub const MAX_KEYS: usize = 1024;

/// A per-key budget of log lines per window (see the module documentation).
#[derive(Debug)]
pub struct LogLimiter<K> {
    burst: u32,
    window: Duration,
    clock: SharedClock,
    state: Mutex<Window<K>>,
}

#[derive(Debug)]
struct Window<K> {
    start: Option<Instant>,
    keys: HashMap<K, Budget>,
    overflow: Budget,
}

#[derive(Debug, Default, Clone, Copy)]
struct Budget {
    lines: u32,
    suppressed: u64,
}

impl<K: Hash + Eq> LogLimiter<K> {
    /// At most `burst` lines per key every `window` of the system's time.
    pub fn new(burst: u32, window: Duration) -> Self {
        Self::with_clock(burst, window, clock::system())
    }

    /// At most `burst` lines per key every `window` of `clock`'s time.
    pub fn with_clock(burst: u32, window: Duration, clock: SharedClock) -> Self {
        Self {
            burst: burst.max(1),
            window,
            clock,
            state: Mutex::new(Window {
                start: None,
                keys: HashMap::new(),
                overflow: Budget::default(),
            }),
        }
    }

    /// Whether an event of `key` may be logged at `now`: `Some(n)` with the number of its
    /// events left out since its last logged one (say so in the line when `n > 0`), `None`
    /// when it must be left out.
    pub fn allow_at(&self, key: K, now: Instant) -> Option<u64> {
        let mut w = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let stale = w
            .start
            .is_none_or(|s| now.saturating_duration_since(s) >= self.window);
        if stale {
            // Counts of suppressed events carry over, so the next line can report them.
            w.start = Some(now);
            w.keys.retain(|_, b| b.suppressed > 0);
            if w.keys.len() > MAX_KEYS {
                w.keys.clear();
            }
            for b in w.keys.values_mut() {
                b.lines = 0;
            }
            w.overflow.lines = 0;
        }
        let full = w.keys.len() >= MAX_KEYS && !w.keys.contains_key(&key);
        let burst = self.burst;
        let b = if full {
            &mut w.overflow
        } else {
            w.keys.entry(key).or_default()
        };
        if b.lines < burst {
            b.lines += 1;
            Some(std::mem::take(&mut b.suppressed))
        } else {
            b.suppressed += 1;
            None
        }
    }

    /// The time now on this limiter's clock.
    pub fn now(&self) -> Instant {
        self.clock.now()
    }

    /// [`allow_at`](Self::allow_at) now.
    pub fn allow(&self, key: K) -> Option<u64> {
        self.allow_at(key, self.clock.now())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::{Clock, ManualClock};

    #[test]
    fn a_key_gets_its_burst_per_window_then_hears_how_many_were_left_out() {
        let l = LogLimiter::new(3, Duration::from_secs(60));
        let t = ManualClock::new().now();
        let got: Vec<_> = (0..10).map(|_| l.allow_at("peer", t)).collect();
        assert_eq!(&got[..3], &[Some(0), Some(0), Some(0)]);
        assert!(got[3..].iter().all(Option::is_none));
        // Another key has its own budget.
        assert_eq!(l.allow_at("other", t), Some(0));
        // The next window: the first line reports the 7 left out.
        let later = t + Duration::from_secs(61);
        assert_eq!(l.allow_at("peer", later), Some(7));
        assert_eq!(l.allow_at("peer", later), Some(0));
    }

    #[test]
    fn many_keys_share_one_overflow_budget_and_memory_stays_bounded() {
        let l = LogLimiter::new(2, Duration::from_secs(60));
        let t = ManualClock::new().now();
        let allowed = (0..100_000u32)
            .filter(|k| l.allow_at(*k, t).is_some())
            .count();
        assert_eq!(
            allowed,
            MAX_KEYS + 2,
            "one line per tracked key, 2 past them"
        );
        let w = l.state.lock().unwrap();
        assert!(w.keys.len() <= MAX_KEYS);
    }
}

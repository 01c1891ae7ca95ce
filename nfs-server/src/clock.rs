//! The one clock of a server: every reading of the time and every wait that measures protocol
//! time (lease expiry, recall deadlines, revocation, grace, the reapers' periods) goes through
//! a [`Clock`], injected at the engine ([`Core::clock`](crate::Core::clock)), so that a test can
//! run them on a [`ManualClock`] and move time on in microseconds instead of sleeping.
//!
//! Production runs on [`SystemClock`]: `std::time` for readings, `tokio::time` for waits.
//! This module is the only place in the servers that reads the system's time.
//!
//! Waits on the network (connect timeouts, how long a peer may take to answer) stay on tokio
//! time where they bound a socket rather than a protocol deadline.

use std::collections::BTreeMap;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant, SystemTime};

/// A wait on a [`Clock`]: ready once the clock reaches its deadline.
pub type Sleep = Pin<Box<dyn Future<Output = ()> + Send + 'static>>;

/// A source of time: a monotonic instant (deadlines, leases), the wall time (timestamps
/// stored or sent to clients) and waits until an instant.
pub trait Clock: Send + Sync + fmt::Debug + 'static {
    /// The monotonic time now.
    fn now(&self) -> Instant;

    /// The wall-clock time now.
    fn wall(&self) -> SystemTime;

    /// A future that completes once [`now`](Clock::now) reaches `deadline`.
    fn sleep_until(&self, deadline: Instant) -> Sleep;

    /// A future that completes once `d` has passed on this clock.
    fn sleep(&self, d: Duration) -> Sleep {
        self.sleep_until(self.now() + d)
    }
}

/// A clock as the servers hold it: shared and cheap to clone.
pub type SharedClock = Arc<dyn Clock>;

/// The system's clock: what a server runs on outside tests.
pub fn system() -> SharedClock {
    Arc::new(SystemClock)
}

/// Runs `fut` until it finishes or `d` passes on `clock`, whichever comes first; `Err` when
/// the time ran out (as `tokio::time::timeout`, on the server's clock).
pub async fn timeout<F: Future>(
    clock: &dyn Clock,
    d: Duration,
    fut: F,
) -> Result<F::Output, Elapsed> {
    let sleep = clock.sleep(d);
    tokio::select! {
        biased;
        out = fut => Ok(out),
        () = sleep => Err(Elapsed),
    }
}

/// The time given to [`timeout`] ran out.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("deadline elapsed")]
pub struct Elapsed;

/// `std::time` and `tokio::time`.
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Instant {
        Instant::now()
    }

    fn wall(&self) -> SystemTime {
        SystemTime::now()
    }

    fn sleep_until(&self, deadline: Instant) -> Sleep {
        Box::pin(tokio::time::sleep_until(deadline.into()))
    }
}

/// A clock that moves only when told ([`ManualClock::advance`]), for tests: leases run out,
/// recalls time out and grace periods end when the test says so, without waiting.
///
/// It starts at an arbitrary instant, and at the system's wall time when made
/// ([`ManualClock::new`]: a server on it still agrees with peers on the system clock, e.g. on
/// the control protocol's call stamps, as long as the test moves it less than their allowed
/// skew) or at a given one ([`ManualClock::starting_at`]). Clones share one time.
#[derive(Clone)]
pub struct ManualClock {
    inner: Arc<Manual>,
}

struct Manual {
    base: Instant,
    wall_base: SystemTime,
    state: Mutex<ManualState>,
}

#[derive(Default)]
struct ManualState {
    elapsed: Duration,
    next_id: u64,
    /// Pending sleeps by id: their deadline and the task to wake.
    sleepers: BTreeMap<u64, (Instant, Waker)>,
}

impl ManualClock {
    /// A clock whose wall time starts at the system's wall time now.
    pub fn new() -> Self {
        Self::starting_at(SystemTime::now())
    }

    /// A clock whose wall time starts at `wall`.
    pub fn starting_at(wall: SystemTime) -> Self {
        Self {
            inner: Arc::new(Manual {
                base: Instant::now(),
                wall_base: wall,
                state: Mutex::new(ManualState::default()),
            }),
        }
    }

    /// This clock as the servers take it.
    pub fn shared(&self) -> SharedClock {
        Arc::new(self.clone())
    }

    /// How far the clock has been moved since it started.
    pub fn elapsed(&self) -> Duration {
        self.inner.lock().elapsed
    }

    /// Moves the clock on by `d` and wakes every sleep whose deadline is now past.
    pub fn advance(&self, d: Duration) {
        let woken: Vec<Waker> = {
            let mut st = self.inner.lock();
            st.elapsed += d;
            let now = self.inner.base + st.elapsed;
            let due: Vec<u64> = st
                .sleepers
                .iter()
                .filter(|(_, (deadline, _))| *deadline <= now)
                .map(|(id, _)| *id)
                .collect();
            due.into_iter()
                .filter_map(|id| st.sleepers.remove(&id).map(|(_, w)| w))
                .collect()
        };
        for w in woken {
            w.wake();
        }
    }

    /// How many sleeps wait on this clock (tests use it to know a timer task is parked).
    pub fn sleepers(&self) -> usize {
        self.inner.lock().sleepers.len()
    }
}

impl Default for ManualClock {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for ManualClock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ManualClock")
            .field("elapsed", &self.elapsed())
            .finish()
    }
}

impl Manual {
    fn lock(&self) -> MutexGuard<'_, ManualState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn now(&self) -> Instant {
        self.base + self.lock().elapsed
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Instant {
        self.inner.now()
    }

    fn wall(&self) -> SystemTime {
        self.inner.wall_base + self.elapsed()
    }

    fn sleep_until(&self, deadline: Instant) -> Sleep {
        Box::pin(ManualSleep {
            clock: self.inner.clone(),
            deadline,
            id: None,
        })
    }
}

/// A sleep on a [`ManualClock`]: registered with the clock while pending, so that
/// [`ManualClock::advance`] wakes it; unregistered when dropped.
struct ManualSleep {
    clock: Arc<Manual>,
    deadline: Instant,
    id: Option<u64>,
}

impl Future for ManualSleep {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = &mut *self;
        let mut st = this.clock.lock();
        if this.clock.base + st.elapsed >= this.deadline {
            if let Some(id) = this.id.take() {
                st.sleepers.remove(&id);
            }
            return Poll::Ready(());
        }
        let id = match this.id {
            Some(id) => id,
            None => {
                let id = st.next_id;
                st.next_id += 1;
                this.id = Some(id);
                id
            }
        };
        st.sleepers.insert(id, (this.deadline, cx.waker().clone()));
        Poll::Pending
    }
}

impl Drop for ManualSleep {
    fn drop(&mut self) {
        if let Some(id) = self.id.take() {
            self.clock.lock().sleepers.remove(&id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_manual_clock_moves_only_when_advanced_and_its_wall_time_with_it() {
        let start = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        let c = ManualClock::starting_at(start);
        let t0 = c.now();
        let w0 = c.wall();
        assert_eq!(w0, start);
        assert_eq!(c.now(), t0);
        c.advance(Duration::from_secs(90));
        assert_eq!(c.now() - t0, Duration::from_secs(90));
        assert_eq!(
            c.wall().duration_since(w0).unwrap(),
            Duration::from_secs(90)
        );
        // Clones share the time.
        let shared = c.shared();
        c.advance(Duration::from_micros(1));
        assert_eq!(shared.now(), c.now());
    }

    #[tokio::test]
    async fn advancing_wakes_the_sleeps_that_are_due_and_only_those() {
        let c = ManualClock::new();
        let short = tokio::spawn(c.sleep(Duration::from_secs(5)));
        let long = tokio::spawn(c.sleep(Duration::from_secs(60)));
        while c.sleepers() < 2 {
            tokio::task::yield_now().await;
        }
        c.advance(Duration::from_secs(4));
        tokio::task::yield_now().await;
        assert!(!short.is_finished());
        c.advance(Duration::from_secs(1));
        short.await.unwrap();
        assert_eq!(c.sleepers(), 1);
        assert!(!long.is_finished());
        long.abort();
        let _ = long.await;
        assert_eq!(c.sleepers(), 0, "a dropped sleep leaves the clock");
    }

    #[tokio::test]
    async fn a_timeout_runs_out_on_the_clock_not_on_real_time() {
        let c = ManualClock::new();
        let shared = c.shared();
        let waiting = tokio::spawn(async move {
            timeout(
                &*shared,
                Duration::from_secs(30),
                std::future::pending::<()>(),
            )
            .await
        });
        while c.sleepers() < 1 {
            tokio::task::yield_now().await;
        }
        assert!(!waiting.is_finished());
        c.advance(Duration::from_secs(30));
        assert_eq!(waiting.await.unwrap(), Err(Elapsed));
        let done = timeout(&c, Duration::from_secs(1), async { 7 }).await;
        assert_eq!(done, Ok(7));
    }

    #[tokio::test]
    async fn the_system_clock_sleeps_on_tokio_time() {
        let c = SystemClock;
        let t0 = c.now();
        c.sleep(Duration::from_millis(1)).await;
        assert!(c.now() >= t0 + Duration::from_millis(1));
    }
}

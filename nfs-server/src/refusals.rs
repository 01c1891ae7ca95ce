//! The log of refusals on the NFS port. Any peer can make the server refuse it over and over
//! (a credential flavor it does not serve, an address no export admits), so each refusal is
//! logged at a bounded rate ([`LogLimiter`]): a few lines per peer address and kind of refusal
//! per window, then one line saying how many were left out. Keyed by IP, not by socket
//! address: a peer that reconnects gets a new port, not a new budget.

use std::fmt;
use std::net::IpAddr;
use std::time::{Duration, Instant};

use tracing::warn;

use crate::clock::SharedClock;
use crate::log_limit::LogLimiter;

/// Lines per peer and kind of refusal in each [`WINDOW`].
pub const BURST: u32 = 5;
/// The window of [`BURST`].
pub const WINDOW: Duration = Duration::from_secs(60);

/// What was refused; each kind has its own budget per peer, so that a flood of one kind does
/// not hide another.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum Refusal {
    /// A call whose credential flavor the NFS service does not serve
    /// ([`crate::auth_policy::check`]).
    Credential,
    /// A client no export admits (the MDS answers AUTH_TOOWEAK).
    NoExport,
    /// A client an export's access rules do not admit (NFS4ERR_ACCESS).
    ExportAccess,
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Credential => "RPC credential refused",
            Self::NoExport => "client refused: no export admits it",
            Self::ExportAccess => "client refused by an export's access rules",
        })
    }
}

/// Refusals of one server, logged at a bounded rate (see the module documentation).
#[derive(Debug)]
pub struct Refusals {
    limit: LogLimiter<(IpAddr, Refusal)>,
}

impl Default for Refusals {
    fn default() -> Self {
        Self::new(BURST, WINDOW)
    }
}

impl Refusals {
    /// At most `burst` lines per peer and kind every `window`.
    pub fn new(burst: u32, window: Duration) -> Self {
        Self {
            limit: LogLimiter::new(burst, window),
        }
    }

    /// The default budget ([`BURST`] per [`WINDOW`]) on `clock`'s time.
    pub fn with_clock(clock: SharedClock) -> Self {
        Self {
            limit: LogLimiter::with_clock(BURST, WINDOW, clock),
        }
    }

    /// Logs a refusal of `peer` with what it was (`detail`), unless its budget is spent.
    /// Returns whether a line was written (for tests).
    pub fn note(&self, peer: IpAddr, kind: Refusal, detail: fmt::Arguments<'_>) -> bool {
        self.note_at(peer, kind, detail, self.limit.now())
    }

    /// [`note`](Self::note) at `now`.
    pub fn note_at(
        &self,
        peer: IpAddr,
        kind: Refusal,
        detail: fmt::Arguments<'_>,
        now: Instant,
    ) -> bool {
        match self.limit.allow_at((peer, kind), now) {
            None => false,
            Some(0) => {
                warn!(%peer, "{kind}: {detail}");
                true
            }
            Some(suppressed) => {
                warn!(%peer, suppressed, "{kind}: {detail} ({suppressed} like it not logged)");
                true
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::{Clock, ManualClock};

    #[test]
    fn each_peer_and_kind_gets_its_own_bounded_budget() {
        let r = Refusals::new(2, Duration::from_secs(60));
        let t = ManualClock::new().now();
        let a: IpAddr = "192.0.2.1".parse().unwrap();
        let b: IpAddr = "192.0.2.2".parse().unwrap();
        let logged = (0..1000)
            .filter(|_| r.note_at(a, Refusal::Credential, format_args!("x"), t))
            .count();
        assert_eq!(logged, 2);
        assert!(r.note_at(b, Refusal::Credential, format_args!("x"), t));
        assert!(r.note_at(a, Refusal::NoExport, format_args!("x"), t));
        assert!(r.note_at(
            a,
            Refusal::Credential,
            format_args!("x"),
            t + Duration::from_secs(61)
        ));
    }
}

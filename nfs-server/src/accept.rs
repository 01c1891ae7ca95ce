//! Accepting connections without falling over, for every listener of the servers (the NFS
//! service of the MDS and of each data server, a data server's control service, the counters
//! page), and what a server allows the connections it accepts ([`ServeLimits`]).
//!
//! ```text
//!  accept() ─ok─> open < cap? ─yes─> (socket, peer, ConnSlot)   slot dropped: open - 1
//!     │                      └─no──> close it at once, log (rate-limited)
//!     └─err─> EMFILE/ENFILE/ENOBUFS/ENOMEM: sleep 10 ms, 20 ms, ... 1 s, log (rate-limited)
//!             other (a connection aborted before it was taken): sleep 1 ms, 2 ms, ... 1 s
//! ```
//!
//! At the descriptor limit `accept` fails at once with EMFILE and the listener stays readable,
//! so a loop that retries at once spins a core and, logging each failure, fills the disk
//! (tokio's `TcpListener::accept` documents this; knfsd sleeps too). Waiting lets
//! connections close meanwhile; the cap keeps the server from reaching the limit at all.

use std::io;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use nfs_proto::transport::{self, CallHandler, ConnLimits, ReplyBudget, ServerPolicy};
use rustix::io::Errno;
use tokio::net::{TcpListener, TcpStream};
use tracing::{info, warn};

use crate::log_limit::LogLimiter;

/// The longest wait between two accepts that fail.
pub const MAX_BACKOFF: Duration = Duration::from_secs(1);

/// Log lines per window and key (the errno, or the refused peer's address).
const LOG_BURST: u32 = 5;
const LOG_WINDOW: Duration = Duration::from_secs(60);

/// How a server treats the connections it accepts: the `limits:` section of the
/// configuration that is about connections rather than the protocol.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ServeLimits {
    /// Connections open at once; past it a new one is closed as soon as it is accepted.
    pub max_connections: usize,
    /// How long a connection without a session may sit idle before it is closed (`None`:
    /// never); see [`ServerPolicy::idle_timeout`].
    pub idle_timeout: Option<Duration>,
    /// Bytes of replies not yet written, across all connections ([`ReplyBudget`]).
    pub reply_budget: usize,
    /// Bytes of replies not yet written on one connection.
    pub connection_reply_budget: usize,
    /// What a call reserves before it runs: the largest reply of one READ (`max_io` plus
    /// room for the COMPOUND around it), not the largest record. Reserving `max_record`
    /// (4 MiB) for every call, small metadata calls included, left 8 calls running per
    /// connection and 64 per server; a reply larger than this (several READs in one
    /// COMPOUND) grows its reservation once it is encoded, before it is queued, so the
    /// budget still counts every byte waiting for a slow reader.
    pub call_reserve: usize,
}

/// Room for the COMPOUND around a READ's data in [`ServeLimits::call_reserve`].
pub const REPLY_HEADROOM: usize = 64 << 10;

impl Default for ServeLimits {
    /// The configuration's defaults, with a cap from this process's descriptor limit.
    fn default() -> Self {
        Self {
            max_connections: crate::fd_limit::auto_max_connections(crate::fd_limit::nofile(), 1),
            idle_timeout: Some(Duration::from_secs(360)),
            reply_budget: 256 << 20,
            connection_reply_budget: 32 << 20,
            call_reserve: (1 << 20) + REPLY_HEADROOM,
        }
    }
}

impl ServeLimits {
    /// The policy of one server's connections: a fresh reply budget for this server (every
    /// connection of it gets a clone of the policy) in which each call reserves `per_call`
    /// bytes before it runs.
    pub fn policy(&self, per_call: usize) -> ServerPolicy {
        ServerPolicy {
            reply_budget: Some(Arc::new(ReplyBudget::new(
                self.reply_budget,
                self.connection_reply_budget,
                per_call,
            ))),
            idle_timeout: self.idle_timeout,
        }
    }
}

/// A listener that backs off on errors and caps the connections open at once (see the module
/// documentation).
#[derive(Debug)]
pub struct Acceptor {
    listener: TcpListener,
    what: &'static str,
    max: usize,
    open: Arc<AtomicUsize>,
    backoff: Duration,
    errors: LogLimiter<i32>,
    refusals: LogLimiter<IpAddr>,
}

/// One accepted connection's place under the cap, given back when dropped: hold it for as
/// long as the connection is served.
#[derive(Debug)]
pub struct ConnSlot(Arc<AtomicUsize>);

impl Drop for ConnSlot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Whether `e` says the process or the system is out of descriptors or memory: nothing can
/// be accepted until something is freed.
fn out_of_resources(e: &io::Error) -> bool {
    Errno::from_io_error(e)
        .is_some_and(|n| [Errno::MFILE, Errno::NFILE, Errno::NOBUFS, Errno::NOMEM].contains(&n))
}

/// The wait after an accept error, given the one after the previous error in a row (zero
/// when the last accept succeeded).
pub fn next_backoff(previous: Duration, e: &io::Error) -> Duration {
    let first = if out_of_resources(e) {
        Duration::from_millis(10)
    } else {
        Duration::from_millis(1)
    };
    (previous * 2).clamp(first, MAX_BACKOFF)
}

impl Acceptor {
    /// Accepts on `listener` (named `what` in logs) with at most `max_connections` open.
    pub fn new(listener: TcpListener, what: &'static str, max_connections: usize) -> Self {
        Self {
            listener,
            what,
            max: max_connections.max(1),
            open: Arc::new(AtomicUsize::new(0)),
            backoff: Duration::ZERO,
            errors: LogLimiter::new(LOG_BURST, LOG_WINDOW),
            refusals: LogLimiter::new(LOG_BURST, LOG_WINDOW),
        }
    }

    /// Connections accepted and not yet given back.
    pub fn open_connections(&self) -> usize {
        self.open.load(Ordering::Acquire)
    }

    /// The next connection under the cap, with its slot. Never fails: errors are waited out
    /// and logged, connections past the cap closed and logged.
    pub async fn accept(&mut self) -> (TcpStream, SocketAddr, ConnSlot) {
        loop {
            match self.listener.accept().await {
                Ok((sock, peer)) => {
                    self.backoff = Duration::ZERO;
                    let open = self.open.load(Ordering::Acquire);
                    if open >= self.max {
                        if let Some(suppressed) = self.refusals.allow(peer.ip()) {
                            warn!(
                                listener = self.what,
                                %peer,
                                open,
                                suppressed,
                                "connection refused: at the cap (limits.max_connections)"
                            );
                        }
                        drop(sock);
                        continue;
                    }
                    self.open.fetch_add(1, Ordering::AcqRel);
                    return (sock, peer, ConnSlot(self.open.clone()));
                }
                Err(e) => {
                    self.backoff = next_backoff(self.backoff, &e);
                    let key = e.raw_os_error().unwrap_or(-1);
                    if let Some(suppressed) = self.errors.allow(key) {
                        warn!(
                            listener = self.what,
                            error = %e,
                            retry_in_ms = self.backoff.as_millis() as u64,
                            suppressed,
                            open = self.open_connections(),
                            "accept failed"
                        );
                    }
                    tokio::time::sleep(self.backoff).await;
                }
            }
        }
    }
}

impl Acceptor {
    /// Runs `handler` over every connection admitted, for as long as the task runs: each
    /// with `limits` and `policy` and an id from `next_id`, holding its slot until it ends.
    /// Connection ends are logged per peer at a bounded rate (a peer can end connections, or
    /// have them timed out, as fast as it opens them).
    pub async fn serve_calls<H: CallHandler>(
        mut self,
        handler: Arc<H>,
        limits: ConnLimits,
        policy: ServerPolicy,
        next_id: impl Fn() -> u64,
    ) {
        let ends = Arc::new(LogLimiter::<IpAddr>::new(LOG_BURST, LOG_WINDOW));
        let what = self.what;
        loop {
            let (sock, peer, slot) = self.accept().await;
            let _ = sock.set_nodelay(true);
            let local = sock.local_addr().unwrap_or(peer);
            let (_conn, run) = transport::start_with(
                sock,
                next_id(),
                peer,
                local,
                handler.clone(),
                limits,
                policy.clone(),
            );
            let ends = ends.clone();
            tokio::spawn(async move {
                if let Err(e) = run.await {
                    if let Some(suppressed) = ends.allow(peer.ip()) {
                        info!(listener = what, %peer, suppressed, "connection closed: {e}");
                    }
                }
                drop(slot);
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_grows_to_a_second_and_starts_higher_when_out_of_descriptors() {
        let emfile = io::Error::from_raw_os_error(Errno::MFILE.raw_os_error());
        let aborted = io::Error::from_raw_os_error(Errno::CONNABORTED.raw_os_error());
        let mut d = Duration::ZERO;
        let mut waits = Vec::new();
        for _ in 0..10 {
            d = next_backoff(d, &emfile);
            waits.push(d.as_millis());
        }
        assert_eq!(waits, [10, 20, 40, 80, 160, 320, 640, 1000, 1000, 1000]);
        assert_eq!(
            next_backoff(Duration::ZERO, &aborted),
            Duration::from_millis(1)
        );
        assert_eq!(
            next_backoff(Duration::from_millis(1), &aborted),
            Duration::from_millis(2)
        );
    }

    #[tokio::test]
    async fn past_the_cap_a_connection_is_closed_at_once_until_a_slot_is_freed() {
        use tokio::io::AsyncReadExt;
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let mut acc = Acceptor::new(listener, "test", 2);
        let c1 = TcpStream::connect(addr).await.unwrap();
        let (_s1, _, slot1) = acc.accept().await;
        let _c2 = TcpStream::connect(addr).await.unwrap();
        let (_s2, _, _slot2) = acc.accept().await;
        assert_eq!(acc.open_connections(), 2);
        // The third is accepted and closed: its client reads end-of-file.
        let mut c3 = TcpStream::connect(addr).await.unwrap();
        let accepting = tokio::spawn(async move {
            let got = acc.accept().await;
            (acc, got)
        });
        let mut buf = [0u8; 1];
        let n = tokio::time::timeout(Duration::from_secs(5), c3.read(&mut buf))
            .await
            .expect("closed at once")
            .unwrap_or(0);
        assert_eq!(n, 0);
        // A slot given back lets the next connection in.
        drop((c1, slot1));
        let _c4 = TcpStream::connect(addr).await.unwrap();
        let (acc, (_s4, _, _slot4)) = tokio::time::timeout(Duration::from_secs(5), accepting)
            .await
            .expect("accepted once a slot is free")
            .unwrap();
        assert_eq!(acc.open_connections(), 2);
    }
}

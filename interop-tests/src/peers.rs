//! Real NFSv4.1 servers on loopback, as peers for the Rust client's integration tests.
//!
//! Issue 6 asks that the client's tests pass against our own cluster *and* against a server we
//! did not write. This module starts both as child processes of the test, each in a temporary
//! directory of its own and on loopback ports of its own, so that tests running in parallel
//! threads do not see each other:
//!
//! - [`Ganesha`]: Debian's nfs-ganesha (`nfs-ganesha` + `nfs-ganesha-vfs`) serving one NFSv4.1
//!   export of a host directory through FSAL VFS. It grants no layouts, so a client does its
//!   I/O through the server; the test reads what arrived straight from
//!   [`Ganesha::export_dir`].
//! - [`PnfsCluster`]: our `pnfs server` binary (the MDS and three data servers in one process)
//!   with its counters page, which a test reads with [`PnfsCluster::counters`] to show where
//!   the data went, and which it can kill with SIGKILL and start again over the same data
//!   directory ([`PnfsCluster::kill9`], [`PnfsCluster::restart`]). In split mode
//!   ([`PnfsOptions::split`]) the MDS and each data server are processes of their own, and one
//!   data server can be killed and restarted alone ([`PnfsCluster::kill9_ds`],
//!   [`PnfsCluster::restart_ds`]).
//!
//! Both wait, when started, until the server answers an NFS NULL call ([`nfs_null`]) on its
//! port, and fail with the end of the server's log when it exits or never answers.
//!
//! Ports are picked below the kernel's ephemeral range
//! (`/proc/sys/net/ipv4/ip_local_port_range`): a port from there could be taken, between the
//! check that it is free and the server's bind, by any outgoing connection of a parallel test.
//! A start that still loses its port to another process is retried on fresh ports.
//!
//! Whether nfs-ganesha can run here is [`ganesha_unavailable_reason`]; a test that needs it
//! calls [`Ganesha::start_or_skip`], which skips with the reason unless `PNFS_REQUIRE_GANESHA`
//! is set (as `scripts/test.sh` does after installing the packages), and then fails instead,
//! like `PNFS_REQUIRE_INTEROP` for the qemu guest and `PNFS_REQUIRE_TSHARK` for tshark.

use std::fs;
use std::hash::{BuildHasher, Hasher};
use std::io::{self, Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, ExitStatus};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use bytes::Bytes;
use nfs_proto::nfs4::{NFS4_PROGRAM, NFSPROC4_NULL, NFS_V4};
use nfs_proto::record::frame_record;
use nfs_proto::rpc::{AcceptStat, MsgBody, OpaqueAuth, ReplyBody, RpcMsg};

mod counters;
mod ganesha;
mod pnfs;

pub use counters::{fetch_counters, Counters, Sample};
pub use ganesha::{ganesha_available, ganesha_unavailable_reason, Ganesha, GaneshaOptions};
pub use pnfs::{pnfs_binary, PnfsCluster, PnfsOptions};

/// How long a server may take from spawn to answering NFS NULL. nfs-ganesha answers in well
/// under a second and `pnfs server` in about one, but two cores shared with parallel builds
/// can stretch that.
pub const START_TIMEOUT: Duration = Duration::from_secs(20);

/// How many times a start is tried on fresh ports when another process took one of them.
const START_ATTEMPTS: u32 = 5;

/// How many lines of a server's log an error quotes.
const LOG_TAIL_LINES: usize = 40;

/// Why a peer could not be started or read.
#[derive(Debug, thiserror::Error)]
pub enum PeerError {
    /// The server's program is not installed (or cannot run as this user).
    #[error("{what} cannot run here: {why}")]
    Unavailable {
        /// Which server.
        what: &'static str,
        /// What is missing.
        why: String,
    },
    /// A file or directory of the harness could not be made or read.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// The server's program could not be started.
    #[error("starting {what}: {source}")]
    Spawn {
        /// The command.
        what: String,
        /// Why.
        source: io::Error,
    },
    /// The server exited, or did not answer in time, when started.
    #[error("{0}")]
    Start(Box<StartFailure>),
    /// No free loopback port was found.
    #[error("no free loopback port between {from} and {to}")]
    NoPort {
        /// The lowest port tried.
        from: u16,
        /// The highest port tried.
        to: u16,
    },
    /// The counters page could not be fetched or parsed.
    #[error("counters page at {addr}: {why}")]
    Metrics {
        /// The metrics address.
        addr: SocketAddr,
        /// What went wrong.
        why: String,
    },
    /// The harness was asked for something its setup cannot do (e.g. to kill one data
    /// server of a cluster that runs them all in one process).
    #[error("{0}")]
    Usage(String),
}

/// A server that did not come up: what happened, with the end of its log.
#[derive(Debug)]
pub struct StartFailure {
    /// Which server.
    pub what: &'static str,
    /// The address it was to serve.
    pub addr: SocketAddr,
    /// What went wrong.
    pub how: StartFailed,
    /// Its log file.
    pub log: PathBuf,
    /// The last lines of its log (and of its stderr, when that is a file of its own).
    pub tail: String,
}

/// How a start failed.
#[derive(Debug)]
pub enum StartFailed {
    /// The server exited before it answered on its port.
    Exited(ExitStatus),
    /// The server runs and answers but cannot be used (e.g. it could not bind its counters
    /// page, which it only warns about).
    Unusable(String),
    /// The server kept running but did not answer (or was not ready) in time.
    NoAnswer {
        /// How long the harness waited.
        waited: Duration,
        /// The last thing that went wrong while waiting.
        last: String,
    },
}

impl std::fmt::Display for StartFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (what, addr) = (self.what, self.addr);
        match &self.how {
            StartFailed::Exited(status) => {
                write!(f, "{what} exited ({status}) before it answered on {addr}")?
            }
            StartFailed::Unusable(why) => write!(f, "{what} on {addr} cannot be used: {why}")?,
            StartFailed::NoAnswer { waited, last } => write!(
                f,
                "{what} was not serving on {addr} after {:.1} s (last: {last})",
                waited.as_secs_f64()
            )?,
        }
        write!(
            f,
            "; the end of its log {}:\n{}",
            self.log.display(),
            self.tail
        )
    }
}

impl StartFailure {
    /// Whether it failed because a port was taken (by another process, between the check
    /// that it was free and the server's bind): worth another try on fresh ports.
    fn port_taken(&self) -> bool {
        !matches!(self.how, StartFailed::NoAnswer { .. })
            && self.tail.contains("Address already in use")
    }
}

pub(crate) fn io_err(path: &Path) -> impl FnOnce(io::Error) -> PeerError + '_ {
    move |source| PeerError::Io {
        path: path.to_owned(),
        source,
    }
}

// --- probing -----------------------------------------------------------------------------------

/// Sends an NFSv4 NULL call (RFC 8881 section 16.1) to `addr` on a new TCP connection and
/// waits up to `timeout` for a SUCCESS reply.
///
/// A connect alone would prove little: the kernel accepts connections into a listener's
/// backlog before the server runs its first request, and a port may belong to some other
/// program. A reply to NULL shows that an ONC RPC server of program 100003 version 4 is
/// serving there.
pub fn nfs_null(addr: SocketAddr, timeout: Duration) -> io::Result<()> {
    let invalid = |why: String| io::Error::new(io::ErrorKind::InvalidData, why);
    let mut s = TcpStream::connect_timeout(&addr, timeout)?;
    s.set_read_timeout(Some(timeout))?;
    s.set_write_timeout(Some(timeout))?;
    let xid = 0x4e55_4c4c; // "NULL"
    let call = RpcMsg::call(
        xid,
        NFS4_PROGRAM,
        NFS_V4,
        NFSPROC4_NULL,
        OpaqueAuth::none(),
        OpaqueAuth::none(),
    );
    for piece in frame_record(call.to_pieces(), usize::MAX) {
        s.write_all(&piece)?;
    }
    // The reply record, fragment by fragment (RFC 5531 section 11), capped: a NULL reply is
    // a few dozen bytes.
    let mut record = Vec::new();
    loop {
        let mut h = [0u8; 4];
        s.read_exact(&mut h)?;
        let h = u32::from_be_bytes(h);
        let len = (h & 0x7fff_ffff) as usize;
        if record.len() + len > 64 << 10 {
            return Err(invalid(format!(
                "a reply record of over 64 KiB to NULL from {addr}"
            )));
        }
        let start = record.len();
        record.resize(start + len, 0);
        s.read_exact(&mut record[start..])?;
        if h & 0x8000_0000 != 0 {
            break;
        }
    }
    let (msg, _) = RpcMsg::decode_header(Bytes::from(record))
        .map_err(|e| invalid(format!("reply to NULL from {addr}: {e}")))?;
    match msg.body {
        MsgBody::Reply(ReplyBody::Accepted(a)) if msg.xid == xid => match a.stat {
            AcceptStat::Success => Ok(()),
            other => Err(invalid(format!("{addr} answered NULL with {other:?}"))),
        },
        other => Err(invalid(format!(
            "{addr} answered NULL (xid {xid:#x}) with xid {:#x}: {other:?}",
            msg.xid
        ))),
    }
}

/// The last [`LOG_TAIL_LINES`] lines of the files that exist among `logs`, each under a
/// header naming it.
fn log_tail(logs: &[&Path]) -> String {
    let mut out = String::new();
    for path in logs {
        let Ok(bytes) = fs::read(path) else { continue };
        let text = String::from_utf8_lossy(&bytes);
        let lines: Vec<&str> = text.lines().collect();
        if lines.is_empty() {
            continue;
        }
        out.push_str(&format!("--- {}\n", path.display()));
        for l in &lines[lines.len().saturating_sub(LOG_TAIL_LINES)..] {
            out.push_str(l);
            out.push('\n');
        }
    }
    if out.is_empty() {
        out.push_str("(empty)\n");
    }
    out
}

/// Why a server that answers NULL is not ready yet.
enum NotReady {
    /// Not yet: poll again.
    Yet(String),
    /// Never will be (its log says why): give up now.
    Never(String),
}

/// Waits until `addr` answers [`nfs_null`] and then `ready` holds, polling both, unless
/// `child` exits first or `timeout` passes. The error quotes the end of `logs` (the first
/// is named as the log).
fn wait_until_serving(
    what: &'static str,
    child: &mut Child,
    addr: SocketAddr,
    logs: &[&Path],
    timeout: Duration,
    mut ready: impl FnMut() -> Result<(), NotReady>,
) -> Result<(), PeerError> {
    let start = Instant::now();
    let mut last = String::from("nothing tried yet");
    let mut answered = false;
    loop {
        if let Some(status) = child.try_wait().map_err(|source| PeerError::Spawn {
            what: what.into(),
            source,
        })? {
            return Err(PeerError::Start(Box::new(StartFailure {
                what,
                addr,
                how: StartFailed::Exited(status),
                log: logs[0].to_owned(),
                tail: log_tail(logs),
            })));
        }
        if !answered {
            match nfs_null(addr, Duration::from_secs(2)) {
                Ok(()) => answered = true,
                Err(e) => last = format!("NULL call: {e}"),
            }
        }
        if answered {
            match ready() {
                Ok(()) => return Ok(()),
                Err(NotReady::Yet(why)) => last = why,
                Err(NotReady::Never(why)) => {
                    return Err(PeerError::Start(Box::new(StartFailure {
                        what,
                        addr,
                        how: StartFailed::Unusable(why),
                        log: logs[0].to_owned(),
                        tail: log_tail(logs),
                    })))
                }
            }
        }
        if start.elapsed() >= timeout {
            return Err(PeerError::Start(Box::new(StartFailure {
                what,
                addr,
                how: StartFailed::NoAnswer {
                    waited: start.elapsed(),
                    last,
                },
                log: logs[0].to_owned(),
                tail: log_tail(logs),
            })));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

// --- ports -------------------------------------------------------------------------------------

/// Ports this process handed out: a server that has not bound its port yet must not get it
/// twice.
static HANDED_OUT: Mutex<Vec<u16>> = Mutex::new(Vec::new());

/// The range to pick server ports from: below the ephemeral range, where the kernel does not
/// pick local ports for outgoing connections.
fn port_range() -> (u16, u16) {
    let ephemeral_low = fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse::<u16>().ok())
        .unwrap_or(32768);
    if ephemeral_low > 12_000 {
        (10_000, ephemeral_low - 1)
    } else {
        // An unusual setup: the ephemeral range starts low. Above it is then the safe side.
        (61_000, 65_000)
    }
}

/// A loopback TCP port that is free now and was not handed out before by this process.
pub fn free_port() -> Result<u16, PeerError> {
    static CALLS: AtomicU32 = AtomicU32::new(0);
    let (from, to) = port_range();
    let mut handed = HANDED_OUT.lock().unwrap_or_else(|e| e.into_inner());
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u32(std::process::id());
    h.write_u32(CALLS.fetch_add(1, Ordering::Relaxed));
    let mut x = h.finish() | 1;
    let span = u64::from(to - from) + 1;
    for _ in 0..500 {
        // xorshift64: spread over the range without a dependency.
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let port = from + (x % span) as u16;
        if handed.contains(&port) {
            continue;
        }
        if TcpListener::bind((Ipv4Addr::LOCALHOST, port)).is_ok() {
            handed.push(port);
            return Ok(port);
        }
    }
    Err(PeerError::NoPort { from, to })
}

/// Whether the environment variable `name` asks for a failure instead of a skip: set, and
/// neither empty nor `0`.
fn required(name: &str) -> bool {
    std::env::var_os(name).is_some_and(|v| !v.is_empty() && v != "0")
}

pub(crate) fn is_root() -> bool {
    // The effective uid, from /proc (no libc dependency for one number).
    fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .and_then(|l| l.split_whitespace().nth(2).map(|u| u == "0"))
        })
        .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::{Command, Stdio};

    /// A child that runs `script` under `sh` with `$LOG` set to `log`.
    fn sh(script: &str, log: &Path) -> Child {
        Command::new("sh")
            .args(["-c", script])
            .env("LOG", log)
            .stdout(Stdio::null())
            .spawn()
            .unwrap()
    }

    #[test]
    fn a_server_that_exits_before_answering_is_reported_with_its_status_and_log_tail() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("server.log");
        let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, free_port().unwrap()));
        let mut child = sh(
            "for i in $(seq 1 60); do echo \"line $i\" >> \"$LOG\"; done; \
             echo 'FATAL: Address already in use' >> \"$LOG\"; exit 3",
            &log,
        );
        let e = wait_until_serving("fake", &mut child, addr, &[&log], START_TIMEOUT, || Ok(()))
            .unwrap_err();
        let PeerError::Start(f) = &e else {
            panic!("{e}")
        };
        let (StartFailed::Exited(status), tail) = (&f.how, &f.tail) else {
            panic!("{e}")
        };
        assert!(f.port_taken());
        assert_eq!(status.code(), Some(3));
        assert!(tail.contains("FATAL: Address already in use"), "{tail}");
        // The end only: the first lines are cut.
        assert!(
            tail.contains("line 60\n") && !tail.contains("line 10\n"),
            "{tail}"
        );
        assert!(e.to_string().contains("fake exited"), "{e}");
    }

    #[test]
    fn a_server_that_never_answers_is_reported_when_the_time_is_up() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("server.log");
        let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, free_port().unwrap()));
        let mut child = sh("echo 'still starting' >> \"$LOG\"; exec sleep 30", &log);
        let t = Instant::now();
        let r = wait_until_serving(
            "fake",
            &mut child,
            addr,
            &[&log],
            Duration::from_millis(300),
            || Ok(()),
        );
        let _ = child.kill();
        let _ = child.wait();
        let e = r.unwrap_err();
        let PeerError::Start(f) = &e else {
            panic!("{e}")
        };
        let (StartFailed::NoAnswer { last, .. }, tail) = (&f.how, &f.tail) else {
            panic!("{e}")
        };
        assert!(!f.port_taken());
        assert!(t.elapsed() < Duration::from_secs(5));
        assert!(last.contains("NULL call"), "{last}");
        assert!(tail.contains("still starting"), "{tail}");
    }

    #[test]
    fn the_ready_check_is_waited_for_after_the_null_call_answers() {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
        let addr = listener.local_addr().unwrap();
        std::thread::spawn(move || {
            serve_records(listener, |xid| {
                RpcMsg::reply_success(xid, OpaqueAuth::none())
            })
        });
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("server.log");
        let mut child = sh("exec sleep 30", &log);
        let mut polls = 0;
        let r = wait_until_serving("fake", &mut child, addr, &[&log], START_TIMEOUT, || {
            polls += 1;
            if polls < 3 {
                Err(NotReady::Yet(format!("{polls} of 3")))
            } else {
                Ok(())
            }
        });
        let _ = child.kill();
        let _ = child.wait();
        r.unwrap();
        assert_eq!(polls, 3);

        // A server whose log says it will never be ready is given up on at once.
        let mut child = sh("exec sleep 30", &log);
        let t = Instant::now();
        let r = wait_until_serving("fake", &mut child, addr, &[&log], START_TIMEOUT, || {
            Err(NotReady::Never("Address already in use".into()))
        });
        let _ = child.kill();
        let _ = child.wait();
        let Err(PeerError::Start(f)) = r else {
            panic!("{r:?}")
        };
        assert!(matches!(f.how, StartFailed::Unusable(_)), "{f}");
        assert!(t.elapsed() < Duration::from_secs(5));
    }

    /// Answers every record on every connection of `listener` with `reply(xid)`.
    fn serve_records(listener: TcpListener, reply: fn(u32) -> RpcMsg) {
        for sock in listener.incoming() {
            let Ok(mut sock) = sock else { return };
            std::thread::spawn(move || loop {
                let mut h = [0u8; 4];
                if sock.read_exact(&mut h).is_err() {
                    return;
                }
                let mut body = vec![0u8; (u32::from_be_bytes(h) & 0x7fff_ffff) as usize];
                if sock.read_exact(&mut body).is_err() {
                    return;
                }
                let xid = RpcMsg::peek_xid(&body).unwrap_or(0);
                for piece in frame_record(reply(xid).to_pieces(), usize::MAX) {
                    if sock.write_all(&piece).is_err() {
                        return;
                    }
                }
            });
        }
    }

    #[test]
    fn the_null_probe_tells_an_nfs_server_from_another_rpc_service_and_from_silence() {
        let ok = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
        let ok_addr = ok.local_addr().unwrap();
        std::thread::spawn(move || {
            serve_records(ok, |xid| RpcMsg::reply_success(xid, OpaqueAuth::none()))
        });
        nfs_null(ok_addr, Duration::from_secs(5)).unwrap();

        let other = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
        let other_addr = other.local_addr().unwrap();
        std::thread::spawn(move || serve_records(other, RpcMsg::reply_prog_unavail));
        let e = nfs_null(other_addr, Duration::from_secs(5)).unwrap_err();
        assert!(e.to_string().contains("ProgUnavail"), "{e}");

        let wrong_xid = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
        let wrong_addr = wrong_xid.local_addr().unwrap();
        std::thread::spawn(move || {
            serve_records(wrong_xid, |xid| {
                RpcMsg::reply_success(xid ^ 1, OpaqueAuth::none())
            })
        });
        assert!(nfs_null(wrong_addr, Duration::from_secs(5)).is_err());

        // Accepts and never answers: the probe gives up after its timeout.
        let silent = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
        let t = Instant::now();
        let e = nfs_null(silent.local_addr().unwrap(), Duration::from_millis(200)).unwrap_err();
        assert!(
            matches!(
                e.kind(),
                io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
            ),
            "{e:?}"
        );
        assert!(t.elapsed() < Duration::from_secs(5));
    }

    #[test]
    fn free_ports_are_distinct_bindable_and_below_the_ephemeral_range() {
        let (from, to) = port_range();
        let ports: Vec<u16> = (0..20).map(|_| free_port().unwrap()).collect();
        for (i, p) in ports.iter().enumerate() {
            assert!((from..=to).contains(p), "{p} outside {from}..={to}");
            assert!(!ports[..i].contains(p), "{p} handed out twice");
        }
        TcpListener::bind((Ipv4Addr::LOCALHOST, ports[0])).unwrap();
    }
}

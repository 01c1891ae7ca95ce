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
//!   directory ([`PnfsCluster::kill9`], [`PnfsCluster::restart`]).
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

use std::collections::BTreeMap;
use std::fs;
use std::hash::{BuildHasher, Hasher};
use std::io::{self, Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use bytes::Bytes;
use nfs_proto::nfs4::{NFS4_PROGRAM, NFSPROC4_NULL, NFS_V4};
use nfs_proto::record::frame_record;
use nfs_proto::rpc::{AcceptStat, MsgBody, OpaqueAuth, ReplyBody, RpcMsg};

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

fn io_err(path: &Path) -> impl FnOnce(io::Error) -> PeerError + '_ {
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

fn is_root() -> bool {
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

// --- nfs-ganesha -------------------------------------------------------------------------------

/// Where nfs-ganesha is installed.
#[derive(Debug, Clone)]
struct GaneshaInstall {
    /// `ganesha.nfsd`.
    binary: PathBuf,
    /// The directory holding `libfsalvfs.so`.
    plugins: PathBuf,
}

impl GaneshaInstall {
    /// Finds the daemon (`$PNFS_GANESHA_BINARY`, else on `PATH` or in `/usr/bin`,
    /// `/usr/sbin`) and the VFS FSAL (Debian's multiarch directory, or the upstream
    /// `/usr/lib64/ganesha`).
    fn find() -> Result<Self, String> {
        let binary = match std::env::var_os("PNFS_GANESHA_BINARY") {
            Some(b) => Some(PathBuf::from(b)),
            None => std::env::var_os("PATH")
                .map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
                .unwrap_or_default()
                .into_iter()
                .chain([PathBuf::from("/usr/bin"), PathBuf::from("/usr/sbin")])
                .map(|d| d.join("ganesha.nfsd"))
                .find(|p| p.is_file()),
        };
        let binary = binary.filter(|b| b.is_file()).ok_or_else(|| {
            "no ganesha.nfsd (apt-get install nfs-ganesha nfs-ganesha-vfs)".to_string()
        })?;
        let mut dirs: Vec<PathBuf> = fs::read_dir("/usr/lib")
            .map(|rd| {
                rd.filter_map(Result::ok)
                    .map(|e| e.path().join("ganesha"))
                    .collect()
            })
            .unwrap_or_default();
        dirs.sort();
        dirs.extend(["/usr/lib64/ganesha", "/usr/lib/ganesha"].map(PathBuf::from));
        let plugins = dirs
            .into_iter()
            .find(|d| d.join("libfsalvfs.so").is_file())
            .ok_or_else(|| {
                "no libfsalvfs.so, the VFS FSAL (apt-get install nfs-ganesha-vfs)".to_string()
            })?;
        if !is_root() {
            return Err("nfs-ganesha's VFS FSAL needs root (open_by_handle_at)".into());
        }
        Ok(Self { binary, plugins })
    }
}

/// Why nfs-ganesha cannot run here, if it cannot: the daemon or its VFS FSAL is not installed,
/// or this is not root.
pub fn ganesha_unavailable_reason() -> Option<String> {
    GaneshaInstall::find().err()
}

/// Whether nfs-ganesha can run here (see [`ganesha_unavailable_reason`]).
pub fn ganesha_available() -> bool {
    ganesha_unavailable_reason().is_none()
}

/// Settings of a [`Ganesha`] instance.
#[derive(Debug, Clone)]
pub struct GaneshaOptions {
    /// `NFSv4 { Lease_Lifetime }` in seconds (ganesha allows up to 120). Default 10: short,
    /// so that a test of lease expiry (a lock freed when its holder's process died) waits
    /// seconds, not the default minute.
    pub lease_lifetime: u32,
    /// Grant read and write delegations (`NFSv4 { Delegations }` and the export's
    /// `Delegations = rw`). Default off, ganesha's own default.
    pub delegations: bool,
}

impl Default for GaneshaOptions {
    fn default() -> Self {
        Self {
            lease_lifetime: 10,
            delegations: false,
        }
    }
}

/// A running nfs-ganesha with one NFSv4.1 export of a fresh host directory, on `127.0.0.1`
/// and a port of its own; killed (SIGKILL) and its directory removed on drop.
///
/// The configuration ([`Ganesha::config_file`]) makes it run in a container without rpcbind,
/// dbus or systemd, and these are the quirks of Debian's ganesha 4.3 met on the way:
///
/// - It serves NFSv4 without rpcbind: `Protocols = 4` and `Enable_NLM`, `Enable_RQUOTA`,
///   `Enable_UDP` off leave it only the NFS TCP socket. It still tries to register with
///   rpcbind and logs `Cannot register NFS V4 on TCP` (MAJ); harmless.
/// - Without a system bus it logs `dbus_bus_get failed` (CRIT) and runs without its D-Bus
///   admin interface; harmless. `Dbus_Name_Prefix` is set per instance so that on a host
///   with a bus two instances (or a system ganesha) do not fight over one name.
/// - `Active_krb5 = false` spares the `Cannot acquire credentials for principal nfs` error;
///   the backchannel's credential cache still logs `no usable keytab entry` (CRIT), harmless.
///   Its directory, `CCacheDir`, defaults to `/var/run/ganesha`, which ganesha makes if
///   missing; here it is in the temporary directory.
/// - `Bind_Addr = 127.0.0.1` gives an IPv6 socket bound to `::ffff:127.0.0.1`; a port
///   already taken is FATAL (`Error binding to V6 interface`, exit 2), which the harness
///   answers by trying fresh ports.
/// - With `-p` naming a pid file in the temporary directory, and `RecoveryRoot` and
///   `CCacheDir` there too, it writes nothing outside it (the recovery backend keeps a
///   directory per client under `recovery/v4recov/node0/`).
/// - `Graceless = true` skips the grace period at start (it logs `NFS Server skipping
///   GRACE`), so a test's first OPEN does not get NFS4ERR_GRACE. Nothing restarts a ganesha
///   over its recovery directory: reclaim is tested against `pnfs server`.
/// - `Minor_Versions = 1, 2`: NFSv4.0 is off, the client must speak 4.1 or 4.2.
/// - `Attr_Expiration_Time = 0`: ganesha's metadata cache would otherwise serve attributes up
///   to a minute old, so a file a test changes in [`Ganesha::export_dir`] on the host would
///   look unchanged to the client.
/// - No layouts, but misleading flags: EXCHANGE_ID answers with `EXCHGID4_FLAG_USE_PNFS_MDS`
///   and `EXCHGID4_FLAG_USE_PNFS_DS` set (flags `0x60001`) although `pnfs_mds` is off, while
///   `fs_layout_types` of the export is empty and LAYOUTGET fails with
///   NFS4ERR_LAYOUTUNAVAILABLE. A client must decide on `fs_layout_types` (RFC 8881 section
///   5.12.1) or LAYOUTGET's error, not on the EXCHANGE_ID flags, and do I/O through the
///   server (`tests/ganesha_peer.rs` checks the attribute and LAYOUTGET, and prints the
///   flags).
/// - It answers `maxread` and `maxwrite` of 64 MiB and `lease_time` as configured; the
///   session's fore channel is what the client asked for or less (checked by the test too).
/// - Delegations are off unless [`GaneshaOptions::delegations`] asks (ganesha's default).
/// - The VFS FSAL needs root and a file system with file handles (`name_to_handle_at`):
///   ext4, xfs, btrfs and tmpfs have them; an overlayfs without `nfs_export=on` does not.
/// - Small: about 8 MB resident and 11 threads per instance, ready in about 50 ms.
#[derive(Debug)]
pub struct Ganesha {
    child: Child,
    addr: SocketAddr,
    export: PathBuf,
    config: PathBuf,
    log: PathBuf,
    startup: Duration,
    // Last: removed after the child is killed (fields drop after `Drop::drop`).
    dir: tempfile::TempDir,
}

/// Counts instances in this process, for unique D-Bus names.
static GANESHA_SEQ: AtomicU32 = AtomicU32::new(0);

impl Ganesha {
    /// The pseudo path of the export: `PUTROOTFH; LOOKUP "export"` reaches it, and a URL is
    /// `nfs://127.0.0.1:<port>/export/...`.
    pub const PSEUDO_PATH: &'static str = "/export";

    /// Starts an instance with [`GaneshaOptions::default`].
    pub fn start() -> Result<Ganesha, PeerError> {
        Self::start_with(&GaneshaOptions::default())
    }

    /// For a test: starts an instance, or returns `None` after printing why when nfs-ganesha
    /// cannot run here.
    ///
    /// # Panics
    ///
    /// When `PNFS_REQUIRE_GANESHA` is set (to anything but empty or `0`) and nfs-ganesha cannot
    /// run here, and when it can but does not start (the message has the end of its log).
    pub fn start_or_skip(test: &str) -> Option<Ganesha> {
        if let Some(why) = ganesha_unavailable_reason() {
            assert!(
                !required("PNFS_REQUIRE_GANESHA"),
                "PNFS_REQUIRE_GANESHA is set but nfs-ganesha cannot run here: {why}"
            );
            eprintln!("note: skipping {test}: nfs-ganesha cannot run here: {why}");
            return None;
        }
        match Self::start() {
            Ok(g) => Some(g),
            Err(e) => panic!("{test}: {e}"),
        }
    }

    /// Starts an instance with these options; returns once it answers NFS NULL.
    pub fn start_with(opts: &GaneshaOptions) -> Result<Ganesha, PeerError> {
        let install = GaneshaInstall::find().map_err(|why| PeerError::Unavailable {
            what: "nfs-ganesha",
            why,
        })?;
        let mut attempt = 0;
        loop {
            attempt += 1;
            match Self::try_start(&install, opts) {
                // Another process took the port between the check and ganesha's bind.
                Err(PeerError::Start(f)) if attempt < START_ATTEMPTS && f.port_taken() => {
                    eprintln!("note: {}: a port was taken, trying fresh ones", f.what);
                }
                r => return r,
            }
        }
    }

    fn try_start(install: &GaneshaInstall, opts: &GaneshaOptions) -> Result<Ganesha, PeerError> {
        let dir = tempfile::Builder::new()
            .prefix("pnfs-ganesha-")
            .tempdir()
            .map_err(io_err(&std::env::temp_dir()))?;
        let export = dir.path().join("export");
        let recovery = dir.path().join("recovery");
        for d in [&export, &recovery] {
            fs::create_dir(d).map_err(io_err(d))?;
        }
        let port = free_port()?;
        let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
        let config = dir.path().join("ganesha.conf");
        let log = dir.path().join("ganesha.log");
        let stderr = dir.path().join("ganesha.stderr");
        let pid = dir.path().join("ganesha.pid");
        let seq = GANESHA_SEQ.fetch_add(1, Ordering::Relaxed);
        let text = ganesha_config(&GaneshaConfig {
            port,
            plugins: &install.plugins,
            export: &export,
            recovery: &recovery,
            ccache: &dir.path().join("ccache"),
            dbus_prefix: &format!("pnfstest{}x{seq}", std::process::id()),
            opts,
        });
        fs::write(&config, text).map_err(io_err(&config))?;
        let err_file = fs::File::create(&stderr).map_err(io_err(&stderr))?;
        let started = Instant::now();
        let mut child = Command::new(&install.binary)
            .arg("-F")
            .arg("-L")
            .arg(&log)
            .arg("-f")
            .arg(&config)
            .arg("-p")
            .arg(&pid)
            .stdin(Stdio::null())
            .stdout(err_file.try_clone().map_err(io_err(&stderr))?)
            .stderr(err_file)
            .spawn()
            .map_err(|source| PeerError::Spawn {
                what: install.binary.display().to_string(),
                source,
            })?;
        if let Err(e) = wait_until_serving(
            "nfs-ganesha",
            &mut child,
            addr,
            &[&log, &stderr],
            START_TIMEOUT,
            || Ok(()),
        ) {
            let _ = child.kill();
            let _ = child.wait();
            return Err(e);
        }
        Ok(Ganesha {
            child,
            addr,
            export,
            config,
            log,
            startup: started.elapsed(),
            dir,
        })
    }

    /// Where it serves NFS: `127.0.0.1:<port>`.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The exported directory on the host: what clients write shows here.
    pub fn export_dir(&self) -> &Path {
        &self.export
    }

    /// The export's place in the NFSv4 pseudo file system ([`Ganesha::PSEUDO_PATH`]).
    pub fn pseudo_path(&self) -> &str {
        Self::PSEUDO_PATH
    }

    /// The configuration file it was started with.
    pub fn config_file(&self) -> &Path {
        &self.config
    }

    /// Its log file (`-L`).
    pub fn log_file(&self) -> &Path {
        &self.log
    }

    /// The end of its log, for a failing test's message.
    pub fn log_tail(&self) -> String {
        log_tail(&[&self.log])
    }

    /// The temporary directory holding the export, configuration, log and recovery files.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// How long it took from spawn to answering NFS NULL.
    pub fn startup_time(&self) -> Duration {
        self.startup
    }

    /// Its process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Ganesha {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

struct GaneshaConfig<'a> {
    port: u16,
    plugins: &'a Path,
    export: &'a Path,
    recovery: &'a Path,
    ccache: &'a Path,
    dbus_prefix: &'a str,
    opts: &'a GaneshaOptions,
}

/// The configuration file: one NFSv4.1 export, loopback only, nothing that needs rpcbind,
/// dbus or systemd (see [`Ganesha`] for why each knob is there).
fn ganesha_config(c: &GaneshaConfig<'_>) -> String {
    let deleg = if c.opts.delegations {
        ("true", "rw")
    } else {
        ("false", "none")
    };
    format!(
        r#"# Written by interop-tests (peers.rs) for one test's instance.
NFS_CORE_PARAM {{
    NFS_Port = {port};
    Bind_Addr = 127.0.0.1;
    Protocols = 4;
    Enable_NLM = false;
    Enable_RQUOTA = false;
    Enable_UDP = false;
    Plugins_Dir = "{plugins}";
    Dbus_Name_Prefix = "{dbus}";
}}
NFS_KRB5 {{
    Active_krb5 = false;
    CCacheDir = "{ccache}";
}}
NFSv4 {{
    Graceless = true;
    Grace_Period = 1;
    Lease_Lifetime = {lease};
    Minor_Versions = 1, 2;
    Delegations = {deleg_core};
    RecoveryBackend = fs;
    RecoveryRoot = "{recovery}";
}}
EXPORT {{
    Export_Id = 1;
    Path = "{export}";
    Pseudo = "{pseudo}";
    Access_Type = RW;
    Squash = No_Root_Squash;
    SecType = sys;
    Protocols = 4;
    Transports = TCP;
    Delegations = {deleg_export};
    Attr_Expiration_Time = 0;
    FSAL {{
        Name = VFS;
    }}
}}
"#,
        port = c.port,
        plugins = c.plugins.display(),
        dbus = c.dbus_prefix,
        lease = c.opts.lease_lifetime,
        deleg_core = deleg.0,
        deleg_export = deleg.1,
        recovery = c.recovery.display(),
        ccache = c.ccache.display(),
        export = c.export.display(),
        pseudo = Ganesha::PSEUDO_PATH,
    )
}

// --- pnfs server -------------------------------------------------------------------------------

/// The `pnfs` binary: `$PNFS_BINARY` (scripts/test.sh builds the release binary and points
/// there), else the newer of the workspace's `target/release/pnfs` and `target/debug/pnfs`
/// (the newer one more likely has the code under test; `cargo test -p interop-tests` does
/// not build the root package's binary).
pub fn pnfs_binary() -> Result<PathBuf, PeerError> {
    if let Some(p) = std::env::var_os("PNFS_BINARY") {
        let p = PathBuf::from(p);
        return if p.is_file() {
            Ok(p)
        } else {
            Err(PeerError::Unavailable {
                what: "pnfs",
                why: format!("PNFS_BINARY={} is not a file", p.display()),
            })
        };
    }
    let target = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(|ws| ws.join("target"))
        .unwrap_or_else(|| PathBuf::from("target"));
    ["release", "debug"]
        .iter()
        .map(|profile| target.join(profile).join("pnfs"))
        .filter_map(|p| {
            let modified = fs::metadata(&p).and_then(|m| m.modified()).ok()?;
            Some((modified, p))
        })
        .max()
        .map(|(_, p)| p)
        .ok_or_else(|| PeerError::Unavailable {
            what: "pnfs",
            why: format!(
                "no {}/{{release,debug}}/pnfs: run `cargo build --release --bin pnfs` first \
                 (or set PNFS_BINARY)",
                target.display()
            ),
        })
}

/// Settings of a [`PnfsCluster`].
#[derive(Debug, Clone)]
pub struct PnfsOptions {
    /// `grace_time` in seconds: the grace period after each start, during which clients
    /// reclaim and new OPENs get NFS4ERR_GRACE. Default 0 (no grace) so that a test's first
    /// OPEN need not wait; a restart test sets a few seconds (e.g. 5) so its client can
    /// reclaim.
    pub grace_time: u32,
    /// `lease_time` in seconds; the configuration refuses less than 10. Default 10.
    pub lease_time: u32,
    /// How many data servers (ids 1..=n, each on loopback ports of its own). Default 3, as
    /// issue 6's tests ask; 0 runs the MDS alone, keeping file data itself.
    pub data_servers: u16,
    /// Whether the MDS hands out file layouts (`cluster.layouts`). Default true.
    pub layouts: bool,
    /// `cluster.layout.stripe_unit` in bytes (a multiple of 64); `None`: the server's
    /// default (1 MiB).
    pub stripe_unit: Option<u32>,
}

impl Default for PnfsOptions {
    fn default() -> Self {
        Self {
            grace_time: 0,
            lease_time: 10,
            data_servers: 3,
            layouts: true,
            stripe_unit: None,
        }
    }
}

/// One data server's ports.
#[derive(Debug, Clone, Copy)]
struct DsPorts {
    nfs: u16,
    control: u16,
}

/// A running `pnfs server` (the MDS and its data servers in one process) on loopback ports
/// of its own, over a temporary data directory; killed (SIGKILL) and its directory removed
/// on drop.
///
/// The process keeps its ports and data directory across [`PnfsCluster::kill9`] and
/// [`PnfsCluster::restart`], as an operator's restart would. Its stdout and stderr go to
/// [`PnfsCluster::log_file`] (appended across restarts); `RUST_LOG` of the test passes on.
#[derive(Debug)]
pub struct PnfsCluster {
    child: Option<Child>,
    binary: PathBuf,
    opts: PnfsOptions,
    mds: SocketAddr,
    metrics: SocketAddr,
    ds: Vec<DsPorts>,
    config: PathBuf,
    data: PathBuf,
    log: PathBuf,
    startup: Duration,
    // Last: removed after the child is killed.
    dir: tempfile::TempDir,
}

impl PnfsCluster {
    /// Starts a cluster with [`PnfsOptions::default`] (three data servers, no grace).
    pub fn start() -> Result<PnfsCluster, PeerError> {
        Self::start_with(&PnfsOptions::default())
    }

    /// Starts a cluster with these options; returns once the MDS answers NFS NULL and every
    /// data server is up (registered with the MDS and answering its HEALTH calls, as the
    /// counters page tells).
    pub fn start_with(opts: &PnfsOptions) -> Result<PnfsCluster, PeerError> {
        let binary = pnfs_binary()?;
        let mut attempt = 0;
        loop {
            attempt += 1;
            let mut c = Self::prepare(&binary, opts)?;
            match c.spawn() {
                Ok(()) => return Ok(c),
                // Another process took one of the ports between the check and the bind.
                Err(PeerError::Start(f)) if attempt < START_ATTEMPTS && f.port_taken() => {
                    eprintln!("note: {}: a port was taken, trying fresh ones", f.what);
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// Picks the ports, writes the configuration; starts nothing.
    fn prepare(binary: &Path, opts: &PnfsOptions) -> Result<PnfsCluster, PeerError> {
        let dir = tempfile::Builder::new()
            .prefix("pnfs-cluster-")
            .tempdir()
            .map_err(io_err(&std::env::temp_dir()))?;
        let data = dir.path().join("data");
        fs::create_dir(&data).map_err(io_err(&data))?;
        let local = |port| SocketAddr::from((Ipv4Addr::LOCALHOST, port));
        let mds = local(free_port()?);
        let metrics = local(free_port()?);
        let ds = (0..opts.data_servers)
            .map(|_| {
                Ok(DsPorts {
                    nfs: free_port()?,
                    control: free_port()?,
                })
            })
            .collect::<Result<Vec<_>, PeerError>>()?;
        let config = dir.path().join("pnfs.yaml");
        fs::write(&config, pnfs_config(opts, mds, metrics, &data, &ds)).map_err(io_err(&config))?;
        Ok(PnfsCluster {
            child: None,
            binary: binary.to_owned(),
            opts: opts.clone(),
            mds,
            metrics,
            ds,
            log: dir.path().join("pnfs.log"),
            config,
            data,
            startup: Duration::ZERO,
            dir,
        })
    }

    /// Starts the process and waits until it serves.
    fn spawn(&mut self) -> Result<(), PeerError> {
        let log = fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)
            .map_err(io_err(&self.log))?;
        let started = Instant::now();
        let mut child = Command::new(&self.binary)
            .arg("server")
            .arg("--config")
            .arg(&self.config)
            .current_dir(self.dir.path())
            .stdin(Stdio::null())
            .stdout(log.try_clone().map_err(io_err(&self.log))?)
            .stderr(log)
            .spawn()
            .map_err(|source| PeerError::Spawn {
                what: self.binary.display().to_string(),
                source,
            })?;
        let want = usize::from(self.opts.data_servers);
        let metrics = self.metrics;
        let log = self.log.clone();
        // This start's part of the log (it is appended across restarts).
        let log_from = fs::metadata(&log).map_or(0, |m| m.len() as usize);
        let ready = || {
            let c = fetch_counters(metrics).map_err(|e| {
                // A metrics address it could not bind is only a warning to `pnfs server`;
                // here it is fatal (another process may answer there).
                let this_start = fs::read(&log).map(|l| {
                    String::from_utf8_lossy(l.get(log_from..).unwrap_or(&[])).into_owned()
                });
                match this_start {
                    Ok(l) if l.contains("counters page not served") => {
                        NotReady::Never(format!("its counters page is not served: {e}"))
                    }
                    _ => NotReady::Yet(e.to_string()),
                }
            })?;
            let up = c.sum("pnfs_data_servers", &[("state", "up")]);
            if up as usize == want {
                Ok(())
            } else {
                Err(NotReady::Yet(format!("{up} of {want} data servers up")))
            }
        };
        if let Err(e) = wait_until_serving(
            "pnfs server",
            &mut child,
            self.mds,
            &[&self.log],
            START_TIMEOUT,
            ready,
        ) {
            let _ = child.kill();
            let _ = child.wait();
            return Err(e);
        }
        self.startup = started.elapsed();
        self.child = Some(child);
        Ok(())
    }

    /// Kills the server with SIGKILL, as a crash would, and reaps it. Nothing is flushed or
    /// closed: what survives is what the server had made durable. A no-op when it is not
    /// running.
    pub fn kill9(&mut self) {
        if let Some(mut child) = self.child.take() {
            // Child::kill is SIGKILL on Unix.
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts the server again over the same data directory, configuration and ports (after
    /// [`PnfsCluster::kill9`]; a running server is killed first), and waits as
    /// [`PnfsCluster::start_with`] does. Its grace period, if configured, begins now.
    pub fn restart(&mut self) -> Result<(), PeerError> {
        self.kill9();
        let mark = format!("--- restart at {:?}\n", std::time::SystemTime::now());
        if let Ok(mut f) = fs::OpenOptions::new().append(true).open(&self.log) {
            let _ = f.write_all(mark.as_bytes());
        }
        self.spawn()
    }

    /// Whether the process is running (it was started and has not exited).
    pub fn is_running(&mut self) -> bool {
        self.child
            .as_mut()
            .is_some_and(|c| matches!(c.try_wait(), Ok(None)))
    }

    /// Its process id, while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// The MDS's NFS address: where a client connects (`nfs://127.0.0.1:<port>/`).
    pub fn mds_addr(&self) -> SocketAddr {
        self.mds
    }

    /// The counters page's address (`GET /metrics`).
    pub fn metrics_addr(&self) -> SocketAddr {
        self.metrics
    }

    /// The NFS addresses of the data servers, by id (1, 2, ...): what GETDEVICEINFO tells.
    pub fn ds_addrs(&self) -> Vec<SocketAddr> {
        self.ds
            .iter()
            .map(|d| SocketAddr::from((Ipv4Addr::LOCALHOST, d.nfs)))
            .collect()
    }

    /// The server's data directory (metadata store; the data servers' objects in `ds<id>`).
    pub fn data_dir(&self) -> &Path {
        &self.data
    }

    /// The data directory of data server `id` (1-based): its objects.
    pub fn ds_data_dir(&self, id: u16) -> PathBuf {
        self.data.join(format!("ds{id}"))
    }

    /// The configuration file it runs with.
    pub fn config_file(&self) -> &Path {
        &self.config
    }

    /// The options it was started with.
    pub fn options(&self) -> &PnfsOptions {
        &self.opts
    }

    /// Its log file (stdout and stderr of every start).
    pub fn log_file(&self) -> &Path {
        &self.log
    }

    /// The end of its log, for a failing test's message.
    pub fn log_tail(&self) -> String {
        log_tail(&[&self.log])
    }

    /// How long the last start took from spawn to serving.
    pub fn startup_time(&self) -> Duration {
        self.startup
    }

    /// Reads the counters page now.
    pub fn counters(&self) -> Result<Counters, PeerError> {
        fetch_counters(self.metrics)
    }
}

impl Drop for PnfsCluster {
    fn drop(&mut self) {
        self.kill9();
    }
}

/// The YAML configuration of a cluster (fields of `mds::config`).
fn pnfs_config(
    opts: &PnfsOptions,
    mds: SocketAddr,
    metrics: SocketAddr,
    data: &Path,
    ds: &[DsPorts],
) -> String {
    let mut y = format!(
        "# Written by interop-tests (peers.rs) for one test's cluster.\n\
         listen: {mds}\n\
         metrics_listen: {metrics}\n\
         data_dir: {data:?}\n\
         lease_time: {lease}\n\
         grace_time: {grace}\n\
         cluster:\n  layouts: {layouts}\n",
        data = data.display().to_string(),
        lease = opts.lease_time,
        grace = opts.grace_time,
        layouts = opts.layouts,
    );
    if let Some(u) = opts.stripe_unit {
        y.push_str(&format!("  layout:\n    stripe_unit: {u}\n"));
    }
    if ds.is_empty() {
        y.push_str("  data_servers: []\n");
    } else {
        y.push_str("  data_servers:\n");
        for (i, d) in ds.iter().enumerate() {
            y.push_str(&format!(
                "    - id: {id}\n      addresses: [127.0.0.1:{nfs}]\n      listen: 127.0.0.1:{nfs}\n      control: 127.0.0.1:{control}\n",
                id = i + 1,
                nfs = d.nfs,
                control = d.control,
            ));
        }
    }
    y
}

// --- counters ----------------------------------------------------------------------------------

/// One sample of the counters page: `name{label="value",...} value`.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    /// The metric's name, e.g. `pnfs_ds_ops_total`.
    pub name: String,
    /// Its labels in the order of the page.
    pub labels: Vec<(String, String)>,
    /// Its value.
    pub value: f64,
}

impl Sample {
    /// The value of label `key`, if the sample has it.
    pub fn label(&self, key: &str) -> Option<&str> {
        self.labels
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// Whether the sample has every one of these labels with these values.
    pub fn matches(&self, labels: &[(&str, &str)]) -> bool {
        labels.iter().all(|(k, v)| self.label(k) == Some(*v))
    }
}

/// The samples of a counters page (Prometheus text exposition format, as `mds::metrics`
/// renders it), for tests that show where I/O went.
///
/// Operation labels carry the RFC's names: `op="OP_WRITE"`, and `status="ok"` or the
/// `NFS4ERR_` name. I/O through layouts counts in `pnfs_ds_ops_total{ds,op,status}` (from the
/// data servers' last HEALTH replies to the MDS, so it lags by up to one HEALTH round), I/O
/// through the MDS in `pnfs_ops_total{op,status}`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Counters {
    samples: Vec<Sample>,
}

impl Counters {
    /// Parses the page's body: `#` lines and blank lines are skipped; any other line must be
    /// `name value` or `name{labels} value` (an optional timestamp after the value is
    /// ignored).
    pub fn parse(text: &str) -> Result<Counters, String> {
        let samples = text
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
            .map(|(i, l)| {
                parse_sample(l.trim()).map_err(|why| format!("line {}: {why}: {l:?}", i + 1))
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Counters { samples })
    }

    /// Every sample, in page order.
    pub fn samples(&self) -> &[Sample] {
        &self.samples
    }

    /// The value of the sample named `name` with exactly these labels (in any order).
    pub fn get(&self, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
        self.samples
            .iter()
            .find(|s| s.name == name && s.labels.len() == labels.len() && s.matches(labels))
            .map(|s| s.value)
    }

    /// The sum of the samples named `name` that carry these labels (and any others):
    /// `sum("pnfs_ds_ops_total", &[("op", "OP_WRITE"), ("status", "ok")])` adds up every data
    /// server's successful WRITEs. 0 when none matches (a counter not yet incremented is
    /// absent from the page).
    pub fn sum(&self, name: &str, labels: &[(&str, &str)]) -> f64 {
        self.samples
            .iter()
            .filter(|s| s.name == name && s.matches(labels))
            .map(|s| s.value)
            .sum()
    }

    /// The samples as `name{labels}` (as on the page) to value: for printing, or for a lookup
    /// by the full series name.
    pub fn to_map(&self) -> BTreeMap<String, f64> {
        self.samples
            .iter()
            .map(|s| {
                let key = if s.labels.is_empty() {
                    s.name.clone()
                } else {
                    let l: Vec<String> =
                        s.labels.iter().map(|(k, v)| format!("{k}={v:?}")).collect();
                    format!("{}{{{}}}", s.name, l.join(","))
                };
                (key, s.value)
            })
            .collect()
    }
}

/// One sample line.
fn parse_sample(line: &str) -> Result<Sample, String> {
    let name_end = line
        .find(|c: char| c == '{' || c.is_whitespace())
        .ok_or("no value")?;
    let name = &line[..name_end];
    if name.is_empty()
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
    {
        return Err(format!("bad metric name {name:?}"));
    }
    let mut rest = &line[name_end..];
    let mut labels = Vec::new();
    if let Some(after) = rest.strip_prefix('{') {
        let mut chars = after.char_indices().peekable();
        let end = loop {
            // Skip separators; `}` ends the set.
            while let Some(&(_, c)) = chars.peek() {
                if c == ',' || c == ' ' {
                    chars.next();
                } else {
                    break;
                }
            }
            match chars.peek() {
                Some(&(i, '}')) => break i,
                None => return Err("unterminated labels".into()),
                _ => {}
            }
            let mut key = String::new();
            for (_, c) in chars.by_ref() {
                if c == '=' {
                    break;
                }
                key.push(c);
            }
            if key.is_empty() || key.contains(|c: char| !(c.is_ascii_alphanumeric() || c == '_')) {
                return Err(format!("bad label name {key:?}"));
            }
            if !matches!(chars.next(), Some((_, '"'))) {
                return Err(format!("label {key}: value not quoted"));
            }
            let mut value = String::new();
            loop {
                match chars.next() {
                    None => return Err(format!("label {key}: unterminated value")),
                    Some((_, '"')) => break,
                    Some((_, '\\')) => match chars.next() {
                        Some((_, 'n')) => value.push('\n'),
                        Some((_, c @ ('\\' | '"'))) => value.push(c),
                        other => return Err(format!("label {key}: bad escape {other:?}")),
                    },
                    Some((_, c)) => value.push(c),
                }
            }
            labels.push((key, value));
        };
        rest = &after[end + 1..];
    }
    let value = rest.split_whitespace().next().ok_or("no value")?;
    let value = match value {
        "+Inf" => f64::INFINITY,
        "-Inf" => f64::NEG_INFINITY,
        v => v.parse::<f64>().map_err(|_| format!("bad value {v:?}"))?,
    };
    Ok(Sample {
        name: name.to_owned(),
        labels,
        value,
    })
}

/// `GET /metrics HTTP/1.0` on `addr` (as `pnfs stats` does), parsed.
pub fn fetch_counters(addr: SocketAddr) -> Result<Counters, PeerError> {
    let fail = |why: String| PeerError::Metrics { addr, why };
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(5))
        .map_err(|e| fail(format!("connect: {e}")))?;
    s.set_read_timeout(Some(Duration::from_secs(10)))
        .and_then(|()| s.write_all(b"GET /metrics HTTP/1.0\r\n\r\n"))
        .map_err(|e| fail(format!("request: {e}")))?;
    let mut page = Vec::new();
    s.read_to_end(&mut page)
        .map_err(|e| fail(format!("reading: {e}")))?;
    let page = String::from_utf8(page).map_err(|_| fail("not UTF-8".into()))?;
    let (head, body) = page
        .split_once("\r\n\r\n")
        .ok_or_else(|| fail("no HTTP header".into()))?;
    let status = head.lines().next().unwrap_or("");
    if !status.starts_with("HTTP/1.0 200") && !status.starts_with("HTTP/1.1 200") {
        return Err(fail(format!("answered {status:?}")));
    }
    Counters::parse(body).map_err(fail)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_parse_labels_escapes_and_bare_samples() {
        let page = "# HELP pnfs_ops_total Operations.\n# TYPE pnfs_ops_total counter\n\
                    pnfs_ops_total{op=\"OP_WRITE\",status=\"ok\"} 7\n\
                    pnfs_ops_total{op=\"OP_WRITE\",status=\"NFS4ERR_GRACE\"} 2\n\
                    pnfs_ds_ops_total{ds=\"1\",op=\"OP_WRITE\",status=\"ok\"} 3\n\
                    pnfs_ds_ops_total{ds=\"2\",op=\"OP_WRITE\",status=\"ok\"} 4.5\n\
                    pnfs_ds_ops_total{ds=\"2\",op=\"OP_READ\",status=\"ok\"} 100\n\
                    odd{path=\"a\\\"b\\\\c\\nd\"} 1e3 1700000000\n\
                    pnfs_grace 0\n\n";
        let c = Counters::parse(page).unwrap();
        assert_eq!(c.samples().len(), 7);
        assert_eq!(
            c.sum("pnfs_ds_ops_total", &[("op", "OP_WRITE"), ("status", "ok")]),
            7.5
        );
        assert_eq!(c.sum("pnfs_ds_ops_total", &[("ds", "2")]), 104.5);
        assert_eq!(c.sum("pnfs_ops_total", &[("op", "OP_WRITE")]), 9.0);
        assert_eq!(c.sum("pnfs_ops_total", &[("op", "OP_READ")]), 0.0);
        assert_eq!(
            c.get("pnfs_ops_total", &[("status", "ok"), ("op", "OP_WRITE")]),
            Some(7.0)
        );
        // `get` wants the exact label set; `sum` any superset.
        assert_eq!(c.get("pnfs_ds_ops_total", &[("ds", "1")]), None);
        assert_eq!(c.get("pnfs_grace", &[]), Some(0.0));
        assert_eq!(c.samples()[5].label("path"), Some("a\"b\\c\nd"));
        assert_eq!(c.get("odd", &[("path", "a\"b\\c\nd")]), Some(1000.0));
        assert_eq!(
            c.to_map()
                .get("pnfs_ds_ops_total{ds=\"2\",op=\"OP_READ\",status=\"ok\"}"),
            Some(&100.0)
        );
    }

    #[test]
    fn counters_refuse_malformed_lines_naming_the_line() {
        for (bad, why) in [
            ("pnfs_x{op=\"a\"", "unterminated"),
            ("pnfs_x{op=a} 1", "not quoted"),
            ("pnfs_x{op=\"a} 1", "unterminated value"),
            ("pnfs_x 1x", "bad value"),
            ("pnfs_x", "no value"),
            ("pnfs_x{} ", "no value"),
            ("pn-fs 1", "bad metric name"),
            ("pnfs_x{o-p=\"a\"} 1", "bad label name"),
        ] {
            let e = Counters::parse(&format!("# c\n{bad}\n")).unwrap_err();
            assert!(e.starts_with("line 2: ") && e.contains(why), "{bad}: {e}");
        }
    }

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

    #[test]
    fn the_cluster_configuration_parses_as_mds_config_with_every_port_in_place() {
        let ds = [
            DsPorts {
                nfs: 11001,
                control: 11002,
            },
            DsPorts {
                nfs: 11003,
                control: 11004,
            },
        ];
        let y = pnfs_config(
            &PnfsOptions {
                grace_time: 5,
                stripe_unit: Some(65536),
                ..PnfsOptions::default()
            },
            "127.0.0.1:11000".parse().unwrap(),
            "127.0.0.1:11005".parse().unwrap(),
            Path::new("/tmp/some dir/data"),
            &ds,
        );
        let c = mds::Config::parse(&y).unwrap_or_else(|e| panic!("{e}\n{y}"));
        assert_eq!(c.listen, "127.0.0.1:11000".parse().unwrap());
        assert_eq!(c.metrics_listen, Some("127.0.0.1:11005".parse().unwrap()));
        assert_eq!(c.data_dir, Path::new("/tmp/some dir/data"));
        assert_eq!((c.grace_time, c.lease_time), (5, 10));
        assert!(c.cluster.layouts);
        assert_eq!(c.cluster.layout.stripe_unit, 65536);
        let d2 = c.cluster.data_server(2).unwrap();
        assert_eq!(d2.addresses, ["127.0.0.1:11003".parse().unwrap()]);
        assert_eq!(d2.listen_addr(), "127.0.0.1:11003".parse().unwrap());
        assert_eq!(d2.control_addr(), Some("127.0.0.1:11004".parse().unwrap()));
        assert_eq!(
            d2.data_dir_in(&c.data_dir),
            Path::new("/tmp/some dir/data/ds2")
        );
        assert_eq!(c.cluster.data_servers.len(), 2);

        let alone = pnfs_config(
            &PnfsOptions {
                data_servers: 0,
                ..PnfsOptions::default()
            },
            "127.0.0.1:11000".parse().unwrap(),
            "127.0.0.1:11005".parse().unwrap(),
            Path::new("/d"),
            &[],
        );
        let c = mds::Config::parse(&alone).unwrap_or_else(|e| panic!("{e}\n{alone}"));
        assert!(c.cluster.data_servers.is_empty());
    }
}

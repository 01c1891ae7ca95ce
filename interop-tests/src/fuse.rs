//! `pnfs mount` (the bundled client through FUSE) as a child process on this host, and the
//! interop workload run on two such mounts (`host/mount-workload.sh`: the guest suite's
//! checks, plus those only a FUSE mount has).
//!
//! A mount needs root and `/dev/fuse` ([`fuse_unavailable_reason`]); a test calls
//! [`FuseMount::start`] after [`skip_without_fuse`], which skips with the reason unless
//! `PNFS_REQUIRE_FUSE` is set (as `scripts/test.sh` sets it), like the other peers.

use std::fs;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use crate::guest::Report;
use crate::peers::{pnfs_binary, PeerError};

/// How long a mount may take to appear.
const MOUNT_TIMEOUT: Duration = Duration::from_secs(30);

/// Why `pnfs mount` cannot run here, if it cannot.
pub fn fuse_unavailable_reason() -> Option<String> {
    if !Path::new("/dev/fuse").exists() {
        return Some("no /dev/fuse".into());
    }
    if !crate::peers::is_root() {
        return Some("mounting needs root".into());
    }
    None
}

/// For a test: `true` (after printing why) when FUSE mounts cannot run here.
///
/// # Panics
///
/// When `PNFS_REQUIRE_FUSE` is set and they cannot.
pub fn skip_without_fuse(test: &str) -> bool {
    let Some(why) = fuse_unavailable_reason() else {
        return false;
    };
    assert!(
        std::env::var_os("PNFS_REQUIRE_FUSE").is_none_or(|v| v.is_empty() || v == "0"),
        "PNFS_REQUIRE_FUSE is set but {test} cannot mount: {why}"
    );
    eprintln!("note: skipping {test}: {why}");
    true
}

/// Whether `at` is a mount point now.
pub fn is_mounted(at: &Path) -> bool {
    let Ok(at) = at.canonicalize() else {
        return false;
    };
    fs::read_to_string("/proc/self/mountinfo")
        .unwrap_or_default()
        .lines()
        .any(|l| l.split(' ').nth(4) == at.to_str())
}

/// A running `pnfs mount -v URL DIR` of its own directory; unmounted (SIGTERM: dirty data
/// sent first) and its directory removed on drop.
#[derive(Debug)]
pub struct FuseMount {
    child: Option<Child>,
    at: PathBuf,
    log: PathBuf,
    // Last: removed after the unmount.
    _dir: tempfile::TempDir,
}

impl FuseMount {
    /// Mounts `url` with `-o options` (none if empty); returns once mounted.
    pub fn start(url: &str, options: &str) -> Result<FuseMount, PeerError> {
        let binary = pnfs_binary()?;
        let dir = tempfile::Builder::new()
            .prefix("pnfs-mount-")
            .tempdir()
            .map_err(|e| PeerError::Io {
                path: std::env::temp_dir(),
                source: e,
            })?;
        let at = dir.path().join("mnt");
        let log = dir.path().join("mount.log");
        fs::create_dir(&at).map_err(crate::peers::io_err(&at))?;
        let err = fs::File::create(&log).map_err(crate::peers::io_err(&log))?;
        let mut cmd = Command::new(&binary);
        cmd.args(["mount", "-v", url]).arg(&at);
        if !options.is_empty() {
            cmd.args(["-o", options]);
        }
        let child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(err)
            .spawn()
            .map_err(|e| PeerError::Unavailable {
                what: "pnfs mount",
                why: format!("{}: {e}", binary.display()),
            })?;
        let mut m = FuseMount {
            child: Some(child),
            at,
            log,
            _dir: dir,
        };
        let t = Instant::now();
        while !is_mounted(&m.at) {
            let exited = m.child.as_mut().and_then(|c| c.try_wait().ok().flatten());
            if exited.is_some() || t.elapsed() > MOUNT_TIMEOUT {
                return Err(PeerError::Unavailable {
                    what: "pnfs mount",
                    why: format!(
                        "{url} not mounted ({}): {}",
                        exited.map_or("timed out".into(), |s| s.to_string()),
                        m.log_text()
                    ),
                });
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Ok(m)
    }

    /// The mount point.
    pub fn path(&self) -> &Path {
        &self.at
    }

    /// What the mount process wrote so far (its counters come at the unmount, with -v).
    pub fn log_text(&self) -> String {
        fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// The mount process's pid.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// Unmounts with SIGTERM (dirty data sent and committed first); its exit status and log.
    pub fn unmount(mut self) -> (Option<ExitStatus>, String) {
        let status = self.stop();
        (status, self.log_text())
    }

    fn stop(&mut self) -> Option<ExitStatus> {
        let mut child = self.child.take()?;
        let _ = Command::new("kill")
            .arg("-TERM")
            .arg(child.id().to_string())
            .status();
        let t = Instant::now();
        loop {
            if let Ok(Some(s)) = child.try_wait() {
                return Some(s);
            }
            if t.elapsed() > Duration::from_secs(60) {
                let _ = child.kill();
                let _ = child.wait();
                // A kernel mount left by the killed process: detach it.
                let _ = Command::new("umount").arg("-l").arg(&self.at).status();
                return None;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for FuseMount {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A number after `label` in a mount's -v counters line (`data servers: wrote 123 B`).
pub fn counter(log: &str, label: &str) -> Option<u64> {
    let at = log.find(label)?;
    log[at + label.len()..]
        .split_whitespace()
        .next()
        .and_then(|n| n.parse().ok())
}

/// Runs `host/mount-workload.sh` with client 1 on `c1` and client 2 on `c2` (two mounts of
/// one server), `server` naming it (`pnfs`, `ganesha`), `ds_dirs` our server's data
/// server directories (none for another server); its lines go to stderr as they come
/// (the test's log), and are parsed into the guest suite's [`Report`].
pub fn run_mount_workload(
    c1: &Path,
    c2: &Path,
    server: &str,
    ds_dirs: &[PathBuf],
    only: Option<&str>,
) -> Report {
    // The checks keep scratch files at fixed paths in /tmp (they were written for a guest
    // of their own): one workload at a time in this process.
    static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("host/mount-workload.sh");
    let scratch = tempfile::tempdir().expect("a scratch directory");
    let binary = pnfs_binary().expect("the pnfs binary");
    let t = Instant::now();
    let mut child = Command::new("bash")
        .arg(&script)
        .env("M", c1)
        .env("C2M", c2)
        .env("SERVER", server)
        .env("PNFS", binary)
        .env("SRC", scratch.path())
        .env("ONLY", only.unwrap_or(""))
        .env(
            "DS_DIRS",
            ds_dirs
                .iter()
                .map(|d| d.display().to_string())
                .collect::<Vec<_>>()
                .join(" "),
        )
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("bash runs the mount workload");
    let out = child.stdout.take().expect("piped stdout");
    let mut lines = Vec::new();
    for line in BufReader::new(out).lines().map_while(Result::ok) {
        eprintln!("[{server} mount] {line}");
        lines.push(line);
    }
    let _ = child.wait();
    let mut report = Report::parse(lines.iter().map(String::as_str));
    report.elapsed = t.elapsed();
    report
}

/// The report as a table: every check, its time, and the detail of failures and of checks
/// whose figures are worth reading.
pub fn summary(name: &str, r: &Report) -> String {
    r.checks_table(
        name,
        &[
            "fio",
            "tar",
            "revalidate",
            "locks_released",
            "readdir",
            "mmap",
        ],
    )
}

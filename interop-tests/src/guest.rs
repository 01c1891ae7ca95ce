//! The stock Linux NFS client in a qemu guest.
//!
//! ```text
//!  cargo test ──> guest/build.sh ──> target/interop-guest/guest-<key>/   (built once, cached)
//!      │              debootstrap + Debian kernel + busybox initramfs      vmlinuz initrd.gz rootfs.ext4
//!      │
//!      └──> guest/run.sh <run dir> ──> qemu (TCG) ── serial console ──> Report
//!              scenario disk (/dev/vdb):              RUN <check>
//!              scenario.env, pnfs binary,             CHECK <check> PASS|FAIL <ms>ms <detail>
//!              guest-init.sh, workload.sh, ...        MOUNTSTAT <client> <op> <count>
//!                                                     SKIP <checks> <reason>
//!              (or restart.sh: kill -9 under load)
//! ```
//!
//! The guest build and the in-guest workload are shell scripts in `interop-tests/guest/` (they
//! drive debootstrap, mkfs and the guest's own tools, which is what shell is good at); this
//! module describes a [`Scenario`], runs it under a time limit and turns the console into a
//! [`Report`]. Why a guest at all: the host kernel has no NFS client, and the point is to test
//! the *stock* Linux client, pNFS layout drivers included.

use std::fmt::Write as _;
use std::io::{BufRead, BufReader, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{mpsc, Mutex};
use std::time::{Duration, Instant};

/// The server a scenario starts inside the guest.
#[derive(Clone, Debug)]
pub enum Server {
    /// The Linux kernel's own server, exporting `/srv/export` from the guest's ext4 root (or
    /// from an XFS image with `SERVER_FS=xfs` in [`Scenario::extra_env`]): the control that
    /// validates the harness and the workload.
    Knfsd,
    /// Our `pnfs` binary, copied onto the scenario disk and started as `/scenario/pnfs ARGS`
    /// from `/srv`.
    Pnfs {
        /// The binary on the host (`target/release/pnfs` or `target/debug/pnfs`).
        binary: PathBuf,
        /// Its arguments, e.g. `server --config /scenario/pnfs.yaml`.
        args: String,
        /// If set, written to `/scenario/pnfs.yaml` in the guest.
        config: Option<String>,
        /// The path clients mount.
        export: String,
    },
}

/// One run of the guest: a server, a mount, the workload.
#[derive(Clone, Debug)]
pub struct Scenario {
    /// A file-name-safe name; the run directory and console log are named after it.
    pub name: String,
    /// What serves NFS in the guest.
    pub server: Server,
    /// Client mount options, e.g. `vers=4.1`.
    pub mount_options: String,
    /// If set, only the checks whose names match this (bash) regex run, plus the mounts.
    pub only: Option<String>,
    /// The guest script that runs the checks: `workload.sh` (the suite) or `restart.sh` (the
    /// server is killed and restarted under load; needs [`Server::Pnfs`]).
    pub workload: String,
    /// More variables for the guest scripts, e.g. `PNFS_CHECKS=1` (the pNFS checks of
    /// `workload.sh`), `SERVER_FS=xfs` (the server's data on an XFS file system with
    /// reflink, made in the guest by `servers.sh`) or `RDMA=1` (see [`Scenario::with_rdma`]).
    pub extra_env: Vec<(String, String)>,
}

impl Scenario {
    /// The knfsd control scenario with these mount options.
    pub fn knfsd(name: &str, mount_options: &str) -> Self {
        Scenario {
            name: name.to_owned(),
            server: Server::Knfsd,
            mount_options: mount_options.to_owned(),
            only: None,
            workload: "workload.sh".to_owned(),
            extra_env: Vec::new(),
        }
    }

    /// This scenario with RPC-over-RDMA as well (`RDMA=1`): soft-RoCE (`rdma_rxe`) on the
    /// guest's veth pair before the server starts (check `rdma_up`), knfsd listening on RDMA
    /// port 20049 too, and after the suite over TCP both clients mount again with
    /// `proto=rdma,port=20049` and run the file checks once more (checks named `rdma_*`:
    /// `guest/workload.sh`). With [`Server::Pnfs`] the RDMA checks are skipped (a `SKIP` line)
    /// unless `RDMA_PNFS=1` is in [`Scenario::extra_env`] too (as `pnfs-files` has it).
    pub fn with_rdma(mut self) -> Self {
        self.extra_env.push(("RDMA".into(), "1".into()));
        self
    }

    /// This scenario without the checks whose names match `regex` (bash), because another
    /// scenario runs them over the same code paths: each is reported as skipped, with `why`
    /// (`SKIP_CHECKS` and `SKIP_WHY`, `guest/common.sh`). CI runs every scenario on a 2-core
    /// machine under emulation, where a minute of checks that show nothing new is a minute
    /// too many. `PNFS_INTEROP_ALL=1` runs them anyway.
    pub fn skipping(mut self, regex: &str, why: &str) -> Self {
        if std::env::var_os("PNFS_INTEROP_ALL").is_some_and(|v| v == "1") {
            return self;
        }
        self.extra_env.push(("SKIP_CHECKS".into(), regex.into()));
        self.extra_env.push(("SKIP_WHY".into(), why.into()));
        self
    }

    /// `scenario.env` for the guest (see `guest/guest-init.sh`).
    fn env(&self) -> String {
        let (server, export, server_dir, args) = match &self.server {
            Server::Knfsd => ("knfsd", "/srv/export", "/srv/export", ""),
            Server::Pnfs { args, export, .. } => ("pnfs", export.as_str(), "", args.as_str()),
        };
        // For a run by hand: `PNFS_INTEROP_ONLY=<regex>` narrows any scenario to some checks,
        // `PNFS_INTEROP_NFS_DEBUG=<rpcdebug flags>` turns on the client's debug messages
        // (`rpcdebug -m nfs -s <flags>`, e.g. `pnfs`), printed at the end of the run, and
        // `PNFS_INTEROP_RUST_LOG=<filter>` is our server's `RUST_LOG` (e.g.
        // `info,nfs_server::compound=debug`: every operation and its status), its whole log
        // then printed at the end of the run. `PNFS_INTEROP_RDMA=1` adds `RDMA=1` to any
        // scenario ([`Scenario::with_rdma`]) and `PNFS_INTEROP_RDMA_PNFS=1` adds `RDMA_PNFS=1`
        // (our server listens on RDMA port 20049: run the RDMA checks against it).
        let only = std::env::var("PNFS_INTEROP_ONLY")
            .ok()
            .or_else(|| self.only.clone())
            .unwrap_or_default();
        let nfs_debug = std::env::var("PNFS_INTEROP_NFS_DEBUG").unwrap_or_default();
        let mut env = String::new();
        let vars = [
            ("SERVER", server),
            ("MOUNT_OPTS", self.mount_options.as_str()),
            ("EXPORT", export),
            ("SERVER_DIR", server_dir),
            ("PNFS_ARGS", args),
            ("MODE", "run"),
            ("ONLY", only.as_str()),
            ("NFS_DEBUG", nfs_debug.as_str()),
            ("WORKLOAD", self.workload.as_str()),
        ];
        // (Unset, not empty: an empty RUST_LOG would silence the server.)
        let rust_log = std::env::var("PNFS_INTEROP_RUST_LOG").ok();
        let rust_log = rust_log
            .iter()
            .filter(|v| !v.is_empty())
            .map(|v| ("RUST_LOG", v.as_str()));
        let by_hand = [
            ("PNFS_INTEROP_RDMA", "RDMA"),
            ("PNFS_INTEROP_RDMA_PNFS", "RDMA_PNFS"),
        ]
        .into_iter()
        .filter(|(var, _)| std::env::var(var).is_ok_and(|v| v == "1"))
        .map(|(_, name)| (name, "1"));
        let extra = self.extra_env.iter().map(|(k, v)| (k.as_str(), v.as_str()));
        let extra = rust_log.chain(by_hand).chain(extra);
        for (k, v) in vars.into_iter().chain(extra) {
            // Single-quoted for the shell; a quote inside becomes '\''.
            let _ = writeln!(env, "{k}='{}'", v.replace('\'', r"'\''"));
        }
        env
    }
}

/// One workload check as the guest reported it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Check {
    /// The check's name, e.g. `write_read_64MiB`.
    pub name: String,
    /// Whether it passed.
    pub passed: bool,
    /// How long it took in the guest, in milliseconds.
    pub millis: Option<u64>,
    /// What the check printed (the reason, for a failure).
    pub detail: String,
}

/// What a guest run produced.
#[derive(Clone, Debug, Default)]
pub struct Report {
    /// Every check, in the order they ran.
    pub checks: Vec<Check>,
    /// `/proc/self/mountstats` per-op counts: `(client, op, count)`.
    pub mountstats: Vec<(String, String, u64)>,
    /// Checks the guest did not run, and why: `(checks, reason)`.
    pub skipped: Vec<(String, String)>,
    /// A check that started and never finished (the guest hung or died in it).
    pub unfinished: Option<String>,
    /// Whether the workload ran to its end.
    pub completed: bool,
    /// Wall time of the boot and run (not the guest build).
    pub elapsed: Duration,
    /// The whole console, cleaned, also saved next to the run directory.
    pub console_log: PathBuf,
}

impl Report {
    /// Parses the guest's console lines (already cleaned by [`clean_console_line`]).
    pub fn parse<'a>(lines: impl IntoIterator<Item = &'a str>) -> Report {
        let mut report = Report::default();
        for line in lines {
            let mut words = line.splitn(2, ' ');
            let (tag, rest) = (words.next().unwrap_or(""), words.next().unwrap_or(""));
            match tag {
                "RUN" => report.unfinished = Some(rest.trim().to_owned()),
                "CHECK" => {
                    let mut f = rest.splitn(3, ' ');
                    let name = f.next().unwrap_or("").to_owned();
                    let passed = f.next() == Some("PASS");
                    let rest = f.next().unwrap_or("");
                    let (millis, detail) = match rest.split_once(' ') {
                        Some((ms, d)) if ms.ends_with("ms") => (ms[..ms.len() - 2].parse().ok(), d),
                        _ => (None, rest),
                    };
                    if report.unfinished.as_deref() == Some(name.as_str()) {
                        report.unfinished = None;
                    }
                    report.checks.push(Check {
                        name,
                        passed,
                        millis,
                        detail: detail.trim().to_owned(),
                    });
                }
                "MOUNTSTAT" => {
                    let f: Vec<&str> = rest.split_whitespace().collect();
                    if let [client, op, count] = f[..] {
                        if let Ok(count) = count.parse() {
                            report
                                .mountstats
                                .push((client.to_owned(), op.to_owned(), count));
                        }
                    }
                }
                "SKIP" => {
                    let (what, why) = rest.split_once(' ').unwrap_or((rest, ""));
                    report
                        .skipped
                        .push((what.to_owned(), why.trim().to_owned()));
                }
                "WORKLOAD" if rest.trim() == "END" => report.completed = true,
                _ => {}
            }
        }
        report
    }

    /// The checks as a table under `title`: each one's time, and its detail when it failed
    /// or its name starts with one of `evidence` (checks whose figures are worth reading).
    pub fn checks_table(&self, title: &str, evidence: &[&str]) -> String {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "\n== {title} ({} checks, {:.0} s) ==",
            self.checks.len(),
            self.elapsed.as_secs_f64()
        );
        for c in &self.checks {
            let ms = c.millis.map(|m| format!("{:.1}s", m as f64 / 1000.0));
            let _ = write!(
                s,
                "  {} {:<32} {:>7}",
                if c.passed { "PASS" } else { "FAIL" },
                c.name,
                ms.unwrap_or_default()
            );
            if !c.passed || evidence.iter().any(|e| c.name.starts_with(e)) {
                let _ = write!(s, "  {}", truncate(&c.detail, 300));
            }
            s.push('\n');
        }
        for (what, why) in &self.skipped {
            let _ = writeln!(s, "  SKIP {what:<32}          {}", truncate(why, 300));
        }
        if let Some(u) = &self.unfinished {
            let _ = writeln!(s, "  HUNG {u} (never finished)");
        }
        if !self.completed {
            let _ = writeln!(s, "  the workload did not run to its end");
        }
        s
    }

    /// The checks that failed.
    pub fn failures(&self) -> Vec<&Check> {
        self.checks.iter().filter(|c| !c.passed).collect()
    }

    /// Whether every check passed and the workload ran to its end.
    pub fn all_passed(&self) -> bool {
        self.completed && self.unfinished.is_none() && self.failures().is_empty()
    }

    /// A table of every check and the mountstats counts.
    pub fn summary(&self, scenario: &Scenario) -> String {
        let mut s = self.checks_table(
            &format!("interop scenario {}", scenario.name),
            &[
                "fio",
                "tar",
                "restart",
                "deleg",
                "rdma_up",
                "rdma_verbs",
                "rdma_xprt",
                "rdma_fio",
            ],
        );
        for client in ["c1", "c2"] {
            let ops: Vec<String> = self
                .mountstats
                .iter()
                .filter(|(c, _, _)| c == client)
                .map(|(_, op, n)| format!("{op}={n}"))
                .collect();
            if !ops.is_empty() {
                let _ = writeln!(s, "  mountstats {client}: {}", ops.join(" "));
            }
        }
        let _ = writeln!(s, "  console log: {}", self.console_log.display());
        s
    }
}

fn truncate(s: &str, max: usize) -> &str {
    match s.char_indices().nth(max) {
        Some((i, _)) => &s[..i],
        None => s,
    }
}

/// Removes carriage returns, ANSI escape sequences and other control characters from one line
/// of serial console output.
pub fn clean_console_line(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len());
    let mut chars = raw.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\u{1b}' => match chars.peek() {
                // CSI: ESC [ parameters... final byte in @..~
                Some('[') => {
                    chars.next();
                    for c in chars.by_ref() {
                        if ('@'..='~').contains(&c) {
                            break;
                        }
                    }
                }
                // A two-character escape (ESC c, ESC 7, ...).
                Some(_) => {
                    chars.next();
                }
                None => {}
            },
            '\t' => out.push(' '),
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
    out
}

/// Errors of running the guest (a failing check is not an error: it is in the [`Report`]).
#[derive(Debug, thiserror::Error)]
pub enum GuestError {
    /// The guest build script failed (its own messages went to stderr).
    #[error("building the guest failed ({0}); see the [guest build] lines above")]
    Build(String),
    /// A script or qemu could not be started.
    #[error("cannot run {what}: {source}")]
    Spawn {
        /// What was being started.
        what: String,
        /// Why it failed.
        source: std::io::Error,
    },
    /// Preparing the run directory failed.
    #[error("preparing {path}: {source}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// Why it failed.
        source: std::io::Error,
    },
}

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> GuestError + '_ {
    move |source| GuestError::Io {
        path: path.to_owned(),
        source,
    }
}

/// The folder with the guest scripts.
pub fn scripts_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("guest")
}

/// The cache and run directory, `target/interop-guest` of the workspace unless
/// `PNFS_INTEROP_DIR` says otherwise (`build.sh` reads the same variable).
pub fn work_dir() -> PathBuf {
    match std::env::var_os("PNFS_INTEROP_DIR") {
        Some(d) => PathBuf::from(d),
        None => Path::new(env!("CARGO_MANIFEST_DIR"))
            .parent()
            .expect("interop-tests sits in the workspace")
            .join("target/interop-guest"),
    }
}

/// Why this machine cannot run the guest, if it cannot: qemu, root (for debootstrap and chroot
/// on a cold build). The tests skip with this reason unless `PNFS_REQUIRE_INTEROP` is set, as
/// `scripts/test.sh` does after installing what is missing.
pub fn unavailable_reason() -> Option<String> {
    let found = |tool: &str| {
        Command::new("sh")
            .args(["-c", &format!("command -v {tool}")])
            .stdout(Stdio::null())
            .status()
            .map(|s| s.success())
            .unwrap_or(false)
    };
    let mut missing: Vec<&str> = ["qemu-system-x86_64", "debootstrap", "mkfs.ext4", "cpio"]
        .into_iter()
        .filter(|t| !found(t))
        .collect();
    if !Path::new("/bin/busybox").exists() {
        missing.push("busybox");
    }
    if !missing.is_empty() {
        return Some(format!(
            "missing {} (./scripts/test.sh installs them)",
            missing.join(", ")
        ));
    }
    let uid = Command::new("id").arg("-u").output().ok()?;
    if String::from_utf8_lossy(&uid.stdout).trim() != "0" {
        return Some("building the guest needs root".into());
    }
    None
}

/// Builds the guest if it is not cached yet; returns its directory. Build progress goes to
/// stderr (the child's, so it shows even while the test harness captures output).
pub fn build() -> Result<PathBuf, GuestError> {
    let script = scripts_dir().join("build.sh");
    let out = Command::new(&script)
        .stderr(Stdio::inherit())
        .output()
        .map_err(|source| GuestError::Spawn {
            what: script.display().to_string(),
            source,
        })?;
    if !out.status.success() {
        return Err(GuestError::Build(out.status.to_string()));
    }
    Ok(PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()))
}

/// One guest at a time: two TCG guests on a small machine would only slow each other down.
static ONE_GUEST: Mutex<()> = Mutex::new(());

/// Builds the guest if needed, boots it on `scenario` and collects the report. The boot and
/// run are limited to `timeout`; on expiry qemu is killed and the report says which check hung.
pub fn run(scenario: &Scenario, timeout: Duration) -> Result<Report, GuestError> {
    let _one = ONE_GUEST.lock().unwrap_or_else(|e| e.into_inner());
    build()?;

    let runs = work_dir().join("runs");
    let dir = runs.join(&scenario.name);
    if dir.exists() {
        std::fs::remove_dir_all(&dir).map_err(io_err(&dir))?;
    }
    std::fs::create_dir_all(&dir).map_err(io_err(&dir))?;
    let env = dir.join("scenario.env");
    std::fs::write(&env, scenario.env()).map_err(io_err(&env))?;
    if let Server::Pnfs { binary, config, .. } = &scenario.server {
        let dest = dir.join("pnfs");
        std::fs::copy(binary, &dest).map_err(io_err(binary))?;
        if let Some(config) = config {
            let path = dir.join("pnfs.yaml");
            std::fs::write(&path, config).map_err(io_err(&path))?;
        }
    }

    let script = scripts_dir().join("run.sh");
    let start = Instant::now();
    let mut child = Command::new(&script)
        .arg(&dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|source| GuestError::Spawn {
            what: script.display().to_string(),
            source,
        })?;

    // The console arrives on a thread; this one watches the clock.
    let stdout = child.stdout.take().expect("piped stdout");
    let (tx, rx) = mpsc::channel();
    let reader = std::thread::spawn(move || {
        let mut reader = BufReader::new(stdout);
        let mut buf = Vec::new();
        loop {
            buf.clear();
            match reader.read_until(b'\n', &mut buf) {
                Ok(0) | Err(_) => break,
                Ok(_) => {
                    let line = clean_console_line(&String::from_utf8_lossy(&buf));
                    if tx.send(line).is_err() {
                        break;
                    }
                }
            }
        }
    });
    let mut console = Vec::new();
    let mut timed_out = false;
    loop {
        let left = timeout.saturating_sub(start.elapsed());
        match rx.recv_timeout(left.min(Duration::from_secs(1))) {
            Ok(line) => {
                if std::env::var_os("PNFS_INTEROP_ECHO").is_some() {
                    let _ = writeln!(std::io::stderr(), "guest| {line}");
                }
                console.push(line);
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
            Err(mpsc::RecvTimeoutError::Timeout) if left.is_zero() => {
                timed_out = true;
                let _ = child.kill();
                break;
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
        }
    }
    let _ = child.wait();
    let _ = reader.join();
    if timed_out {
        console.push(format!(
            "HARNESS: killed the guest after {} s",
            timeout.as_secs()
        ));
    }

    let mut report = Report::parse(console.iter().map(String::as_str));
    report.elapsed = start.elapsed();
    report.console_log = runs.join(format!("{}.console.log", scenario.name));
    let mut text = console.join("\n");
    text.push('\n');
    std::fs::write(&report.console_log, text).map_err(io_err(&report.console_log))?;
    Ok(report)
}

/// Runs `scenario` as a test: skips (with the reason) when this machine cannot run the guest
/// and `PNFS_REQUIRE_INTEROP` is unset, prints the table of checks, and panics listing every
/// failed check. The time limit is `PNFS_INTEROP_TIMEOUT` seconds (default 1200).
pub fn assert_scenario_passes(scenario: &Scenario) {
    if let Some(why) = unavailable_reason() {
        assert!(
            std::env::var_os("PNFS_REQUIRE_INTEROP").is_none(),
            "PNFS_REQUIRE_INTEROP is set but the interop guest cannot run here: {why}"
        );
        show(&format!(
            "note: skipping interop scenario {}: {why}\n",
            scenario.name
        ));
        return;
    }
    let timeout = std::env::var("PNFS_INTEROP_TIMEOUT")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1200);
    let report = match run(scenario, Duration::from_secs(timeout)) {
        Ok(report) => report,
        Err(e) => panic!("interop scenario {}: {e}", scenario.name),
    };
    show(&report.summary(scenario));
    if !report.all_passed() {
        let mut why: Vec<String> = report
            .failures()
            .iter()
            .map(|c| format!("{}: {}", c.name, truncate(&c.detail, 300)))
            .collect();
        if let Some(u) = &report.unfinished {
            why.push(format!("{u}: never finished (hung, or the guest died)"));
        } else if !report.completed {
            why.push("the workload did not run to its end".into());
        }
        panic!(
            "interop scenario {}: {} failed check(s) (console: {}):\n  {}",
            scenario.name,
            why.len(),
            report.console_log.display(),
            why.join("\n  ")
        );
    }
}

/// Writes to the test's stderr without going through the test harness's capture, so the check
/// table is part of the `cargo test` output whether the test passes or fails.
pub fn show(text: &str) {
    let mut err = std::io::stderr().lock();
    let _ = err.write_all(text.as_bytes());
    let _ = err.flush();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn console_lines_lose_escapes_and_carriage_returns() {
        let raw = "\u{1b}[0m\u{1b}[?25lCHECK a PASS 12ms ok\r\r\n";
        assert_eq!(clean_console_line(raw), "CHECK a PASS 12ms ok");
        assert_eq!(clean_console_line("x\u{1b}cy\tz"), "xy z");
    }

    #[test]
    fn report_parses_checks_mountstats_and_hangs() {
        let console = [
            "[    1.0] some kernel line",
            "RUN a",
            "CHECK a PASS 12ms fine",
            "RUN b",
            "CHECK b FAIL 3ms (exit 1) size: got '1', want '2'",
            "MOUNTSTAT c1 OPEN 7",
            "MOUNTSTAT c2 READ x",
            "SKIP rdma_checks no listener on port 20049",
            "RUN c",
        ];
        let r = Report::parse(console);
        assert_eq!(r.checks.len(), 2);
        assert_eq!(r.checks[0].millis, Some(12));
        assert!(r.checks[0].passed);
        assert!(!r.checks[1].passed);
        assert_eq!(r.checks[1].detail, "(exit 1) size: got '1', want '2'");
        assert_eq!(r.mountstats, vec![("c1".into(), "OPEN".into(), 7)]);
        assert_eq!(
            r.skipped,
            vec![("rdma_checks".into(), "no listener on port 20049".into())]
        );
        assert_eq!(r.unfinished.as_deref(), Some("c"));
        assert!(!r.completed);
        assert!(!r.all_passed());
    }

    #[test]
    fn scenario_env_quotes_values() {
        let mut s = Scenario::knfsd("k", "vers=4.1");
        s.only = Some("it's".into());
        let env = s.env();
        assert!(env.contains("MOUNT_OPTS='vers=4.1'\n"));
        assert!(env.contains(r"ONLY='it'\''s'"));
        assert!(env.contains("SERVER='knfsd'\n"));
        assert!(env.contains("WORKLOAD='workload.sh'\n"));
        assert!(Scenario::knfsd("k", "vers=4.1")
            .with_rdma()
            .env()
            .contains("RDMA='1'\n"));
    }
}

//! Our cluster as child processes on loopback ports: `pnfs server` (the MDS and its data
//! servers in one process), or in split mode `pnfs mds` and one `pnfs ds --id N` per data
//! server, so that a test can kill one data server alone.

use std::fs;
use std::io::Write;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::counters::{fetch_counters, Counters};
use super::{free_port, io_err, log_tail, wait_until_serving, NotReady, PeerError};
use super::{START_ATTEMPTS, START_TIMEOUT};

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
    /// Run the MDS (`pnfs mds`) and each data server (`pnfs ds --id N`) as processes of
    /// their own, over the same configuration, so that a test can kill one data server
    /// ([`PnfsCluster::kill9_ds`]) while the others and the MDS go on. Default false: one
    /// `pnfs server` process runs them all.
    pub split: bool,
    /// Flex files layouts with this many mirrors (`cluster.layout.layout_type: flex_files`,
    /// `mirrors`); `None`: file layouts, the default.
    pub mirrors: Option<u32>,
}

impl Default for PnfsOptions {
    fn default() -> Self {
        Self {
            grace_time: 0,
            lease_time: 10,
            data_servers: 3,
            layouts: true,
            stripe_unit: None,
            split: false,
            mirrors: None,
        }
    }
}

/// One data server's ports.
#[derive(Debug, Clone, Copy)]
struct DsPorts {
    nfs: u16,
    control: u16,
}

/// One child process of the cluster: its command line, its log file (stdout and stderr,
/// appended across restarts, with a mark at each restart) and, while it runs, the child.
#[derive(Debug)]
struct Proc {
    /// What it is, for errors: "pnfs server", "pnfs mds" or "pnfs ds".
    what: &'static str,
    /// Arguments after the binary.
    args: Vec<String>,
    log: PathBuf,
    child: Option<Child>,
}

impl Proc {
    fn new(what: &'static str, args: Vec<String>, log: PathBuf) -> Proc {
        Proc {
            what,
            args,
            log,
            child: None,
        }
    }

    /// Starts it (it must not be running), its output appended to its log; returns at once.
    fn spawn(&mut self, binary: &Path, cwd: &Path) -> Result<(), PeerError> {
        let log = fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)
            .map_err(io_err(&self.log))?;
        let child = Command::new(binary)
            .args(&self.args)
            .current_dir(cwd)
            .stdin(Stdio::null())
            .stdout(log.try_clone().map_err(io_err(&self.log))?)
            .stderr(log)
            .spawn()
            .map_err(|source| PeerError::Spawn {
                what: binary.display().to_string(),
                source,
            })?;
        self.child = Some(child);
        Ok(())
    }

    /// SIGKILL (`Child::kill` on Unix) and reap; a no-op when it is not running.
    fn kill9(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Whether it was started and has not exited.
    fn is_running(&mut self) -> bool {
        self.child
            .as_mut()
            .is_some_and(|c| matches!(c.try_wait(), Ok(None)))
    }

    /// How it ended, if it was started and has exited.
    fn exited(&mut self) -> Option<std::process::ExitStatus> {
        self.child
            .as_mut()
            .and_then(|c| c.try_wait().ok().flatten())
    }

    /// Marks a restart in its log, so the log tells one run from the next.
    fn mark_restart(&self) {
        let mark = format!("--- restart at {:?}\n", std::time::SystemTime::now());
        if let Ok(mut f) = fs::OpenOptions::new().append(true).open(&self.log) {
            let _ = f.write_all(mark.as_bytes());
        }
    }

    /// The length of its log now: where the next start's part begins.
    fn log_len(&self) -> usize {
        fs::metadata(&self.log).map_or(0, |m| m.len() as usize)
    }
}

/// Our cluster (an MDS and its data servers) on loopback ports of its own, over a temporary
/// data directory; killed (SIGKILL) and its directory removed on drop.
///
/// By default one `pnfs server` process runs the MDS and every data server; with
/// [`PnfsOptions::split`] the MDS (`pnfs mds`) and each data server (`pnfs ds --id N`) are
/// processes of their own, so that one data server can die alone
/// ([`PnfsCluster::kill9_ds`], [`PnfsCluster::restart_ds`]).
///
/// The processes keep their ports and data directories across [`PnfsCluster::kill9`] and
/// [`PnfsCluster::restart`], as an operator's restart would. Each one's stdout and stderr go
/// to a log file of its own ([`PnfsCluster::log_file`], [`PnfsCluster::ds_log_file`];
/// appended across restarts); `RUST_LOG` of the test passes on.
#[derive(Debug)]
pub struct PnfsCluster {
    /// The MDS (`pnfs mds`) or the whole server (`pnfs server`).
    mds_proc: Proc,
    /// In split mode, data server `i + 1`; else empty.
    ds_procs: Vec<Proc>,
    binary: PathBuf,
    opts: PnfsOptions,
    mds: SocketAddr,
    metrics: SocketAddr,
    ds: Vec<DsPorts>,
    config: PathBuf,
    data: PathBuf,
    startup: Duration,
    // Last: removed after the children are killed.
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
        let cfg = config.display().to_string();
        let (mds_proc, ds_procs) = if opts.split {
            let ds_procs = (1..=opts.data_servers)
                .map(|id| {
                    Proc::new(
                        "pnfs ds",
                        vec![
                            "ds".into(),
                            "--config".into(),
                            cfg.clone(),
                            "--id".into(),
                            id.to_string(),
                        ],
                        dir.path().join(format!("ds{id}.log")),
                    )
                })
                .collect();
            let mds_args = vec!["mds".into(), "--config".into(), cfg];
            (
                Proc::new("pnfs mds", mds_args, dir.path().join("mds.log")),
                ds_procs,
            )
        } else {
            let args = vec!["server".into(), "--config".into(), cfg];
            (
                Proc::new("pnfs server", args, dir.path().join("pnfs.log")),
                Vec::new(),
            )
        };
        Ok(PnfsCluster {
            mds_proc,
            ds_procs,
            binary: binary.to_owned(),
            opts: opts.clone(),
            mds,
            metrics,
            ds,
            config,
            data,
            startup: Duration::ZERO,
            dir,
        })
    }

    /// Every log file: the MDS's (or the server's) first, then the data servers'.
    fn logs(&self) -> Vec<&Path> {
        std::iter::once(&self.mds_proc)
            .chain(&self.ds_procs)
            .map(|p| p.log.as_path())
            .collect()
    }

    /// Starts every process (the data servers first: they wait for the MDS to register
    /// them) and waits until the MDS serves and every data server is up.
    fn spawn(&mut self) -> Result<(), PeerError> {
        let started = Instant::now();
        let log_from = self.mds_proc.log_len();
        for p in &mut self.ds_procs {
            p.spawn(&self.binary, self.dir.path())?;
        }
        if let Err(e) = self.mds_proc.spawn(&self.binary, self.dir.path()) {
            self.kill9();
            return Err(e);
        }
        let want = usize::from(self.opts.data_servers);
        let metrics = self.metrics;
        let mds_log = self.mds_proc.log.clone();
        let logs: Vec<PathBuf> = self.logs().into_iter().map(Path::to_owned).collect();
        let logs: Vec<&Path> = logs.iter().map(PathBuf::as_path).collect();
        let ds_procs = &mut self.ds_procs;
        let ready = || {
            for (i, p) in ds_procs.iter_mut().enumerate() {
                if let Some(status) = p.exited() {
                    return Err(NotReady::Never(format!(
                        "data server {} exited ({status})",
                        i + 1
                    )));
                }
            }
            let c = fetch_counters(metrics).map_err(|e| {
                // A metrics address it could not bind is only a warning to the server; here
                // it is fatal (another process may answer there).
                let this_start = fs::read(&mds_log).map(|l| {
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
        let child = self
            .mds_proc
            .child
            .as_mut()
            .expect("the MDS process was just spawned");
        let waited = wait_until_serving(
            self.mds_proc.what,
            child,
            self.mds,
            &logs,
            START_TIMEOUT,
            ready,
        );
        if let Err(e) = waited {
            self.kill9();
            return Err(e);
        }
        self.startup = started.elapsed();
        Ok(())
    }

    /// Kills every process of the cluster with SIGKILL, as a crash would, and reaps them.
    /// Nothing is flushed or closed: what survives is what the servers had made durable.
    /// A no-op for processes that are not running.
    pub fn kill9(&mut self) {
        self.mds_proc.kill9();
        for p in &mut self.ds_procs {
            p.kill9();
        }
    }

    /// Starts the cluster again over the same data directory, configuration and ports (after
    /// [`PnfsCluster::kill9`]; running processes are killed first), and waits as
    /// [`PnfsCluster::start_with`] does. Its grace period, if configured, begins now.
    pub fn restart(&mut self) -> Result<(), PeerError> {
        self.kill9();
        self.mds_proc.mark_restart();
        for p in &self.ds_procs {
            p.mark_restart();
        }
        self.spawn()
    }

    /// The process of data server `id` (1-based), in split mode.
    fn ds_proc(&mut self, id: u16) -> Result<&mut Proc, PeerError> {
        let split = self.opts.split;
        let n = self.ds_procs.len();
        usize::from(id)
            .checked_sub(1)
            .and_then(|i| self.ds_procs.get_mut(i))
            .ok_or_else(|| {
                PeerError::Usage(if split {
                    format!("no data server {id} (there are {n})")
                } else {
                    "the data servers run inside `pnfs server`: start the cluster with \
                     PnfsOptions::split to kill or restart one alone"
                        .into()
                })
            })
    }

    /// Kills data server `id` (1-based) alone with SIGKILL and reaps it; the MDS and the
    /// other data servers go on (the MDS marks it down at its next HEALTH poll). Split mode
    /// only ([`PnfsOptions::split`]).
    pub fn kill9_ds(&mut self, id: u16) -> Result<(), PeerError> {
        self.ds_proc(id)?.kill9();
        Ok(())
    }

    /// Starts data server `id` again over the same ports and directory (after
    /// [`PnfsCluster::kill9_ds`]; a running one is killed first) and waits until it is back:
    /// it answers NFS NULL (it serves NFS only once the MDS registered it again) and the
    /// MDS's counters page has `pnfs_data_server_up{ds="<id>"}` at 1. The MDS reconnects
    /// with a backoff of up to 5 s, so this takes as long. Split mode only.
    pub fn restart_ds(&mut self, id: u16) -> Result<(), PeerError> {
        let binary = self.binary.clone();
        let cwd = self.dir.path().to_owned();
        let metrics = self.metrics;
        self.ds_proc(id)?; // a data server of its own, or an error
        let addr = self.ds_addrs()[usize::from(id) - 1];
        let mds_log = self.mds_proc.log.clone();
        let p = self.ds_proc(id)?;
        p.kill9();
        p.mark_restart();
        p.spawn(&binary, &cwd)?;
        let ds_log = p.log.clone();
        let label = id.to_string();
        let ready = || {
            let c = fetch_counters(metrics).map_err(|e| NotReady::Yet(e.to_string()))?;
            if c.sum("pnfs_data_server_up", &[("ds", label.as_str())]) >= 1.0 {
                Ok(())
            } else {
                Err(NotReady::Yet(format!(
                    "the MDS does not count data server {id} up yet"
                )))
            }
        };
        let child = p.child.as_mut().expect("the data server was just spawned");
        let waited = wait_until_serving(
            p.what,
            child,
            addr,
            &[&ds_log, &mds_log],
            START_TIMEOUT,
            ready,
        );
        if waited.is_err() {
            p.kill9();
        }
        waited
    }

    /// Whether every process of the cluster is running (started and not exited).
    pub fn is_running(&mut self) -> bool {
        self.mds_proc.is_running() && self.ds_procs.iter_mut().all(Proc::is_running)
    }

    /// Whether data server `id` runs as a process of its own (split mode) and is running.
    pub fn ds_is_running(&mut self, id: u16) -> bool {
        self.ds_proc(id).is_ok_and(Proc::is_running)
    }

    /// The process id of the MDS (or of the whole server), while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.mds_proc.child.as_ref().map(Child::id)
    }

    /// The process id of data server `id`, while it runs as a process of its own.
    pub fn ds_pid(&self, id: u16) -> Option<u32> {
        let i = usize::from(id).checked_sub(1)?;
        self.ds_procs.get(i)?.child.as_ref().map(Child::id)
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

    /// The log file of the MDS (or of the whole server: stdout and stderr of every start).
    pub fn log_file(&self) -> &Path {
        &self.mds_proc.log
    }

    /// The log file of data server `id` in split mode (else `None`: its lines are in
    /// [`PnfsCluster::log_file`]).
    pub fn ds_log_file(&self, id: u16) -> Option<&Path> {
        let i = usize::from(id).checked_sub(1)?;
        self.ds_procs.get(i).map(|p| p.log.as_path())
    }

    /// The end of every process's log (the MDS's first), for a failing test's message.
    pub fn log_tail(&self) -> String {
        log_tail(&self.logs())
    }

    /// How long the last start of the whole cluster took from spawn to serving.
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

/// The YAML configuration of a cluster (fields of `cluster::config`).
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
    if opts.stripe_unit.is_some() || opts.mirrors.is_some() {
        y.push_str("  layout:\n");
    }
    if let Some(u) = opts.stripe_unit {
        y.push_str(&format!("    stripe_unit: {u}\n"));
    }
    if let Some(m) = opts.mirrors {
        y.push_str(&format!("    layout_type: flex_files\n    mirrors: {m}\n"));
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

#[cfg(test)]
mod tests {
    use super::*;

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
        let c = mds::config::parse(&y).unwrap_or_else(|e| panic!("{e}\n{y}"));
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
        let c = mds::config::parse(&alone).unwrap_or_else(|e| panic!("{e}\n{alone}"));
        assert!(c.cluster.data_servers.is_empty());
    }
}

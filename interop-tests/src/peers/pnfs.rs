//! `pnfs server` as a child process: the MDS and its data servers on loopback ports.

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

//! `pnfs`: the one binary (server, MDS, DS, client commands).

mod cli;
mod trim;

use std::path::PathBuf;

use anyhow::Context;
use clap::{Args, Parser, Subcommand};
use mds::{Config, Mds};
use tracing_subscriber::EnvFilter;

/// A pNFS (NFSv4.1) server and client.
#[derive(Parser)]
#[command(name = "pnfs", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Args)]
struct ServerArgs {
    /// YAML configuration (every field has a default; see mds::config).
    #[arg(long, short)]
    config: Option<PathBuf>,
}

#[derive(Args)]
struct DsArgs {
    /// YAML configuration shared with the MDS (its `cluster` section names this server).
    #[arg(long, short)]
    config: Option<PathBuf>,
    /// This data server's id in `cluster.data_servers`.
    #[arg(long)]
    id: u16,
}

#[derive(Subcommand)]
enum Command {
    /// Serve an all-in-one cluster from ./pnfs-data: the metadata server and every configured
    /// data server in this process (by default three, on ports 20491-20493); clients with
    /// layouts do their I/O straight to the data servers.
    Server(ServerArgs),
    /// Run the metadata server alone (it connects to the configured data servers).
    Mds(ServerArgs),
    /// Run one data server of the configuration.
    Ds(DsArgs),
    /// Print a running server's counters (its `metrics_listen` page).
    Stats(StatsArgs),
    #[command(flatten)]
    Client(cli::ClientCommand),
}

#[derive(Args)]
struct StatsArgs {
    /// The server's metrics address.
    #[arg(default_value = "127.0.0.1:9249")]
    addr: String,
    /// Print every line of the page, comments included (Prometheus text format).
    #[arg(long)]
    raw: bool,
}

/// Fetches the counters page and prints it: by default only the samples, aligned.
fn stats(a: &StatsArgs) -> anyhow::Result<()> {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(&a.addr)
        .with_context(|| format!("connecting to the metrics address {}", a.addr))?;
    s.set_read_timeout(Some(std::time::Duration::from_secs(10)))?;
    s.write_all(b"GET /metrics HTTP/1.0\r\n\r\n")?;
    let mut page = String::new();
    s.read_to_string(&mut page)?;
    let (head, body) = page
        .split_once("\r\n\r\n")
        .context("the metrics address did not answer HTTP")?;
    anyhow::ensure!(
        head.starts_with("HTTP/1.0 200"),
        "metrics page: {}",
        head.lines().next().unwrap_or("")
    );
    for line in body.lines() {
        if a.raw {
            println!("{line}");
        } else if !line.starts_with('#') {
            if let Some((name, value)) = line.rsplit_once(' ') {
                println!("{name:<60} {value:>12}");
            }
        }
    }
    Ok(())
}

fn load(config: &Option<PathBuf>) -> anyhow::Result<Config> {
    match config {
        Some(p) => Config::load(p).map_err(|e| anyhow::anyhow!("bad configuration: {e}")),
        None => Ok(Config::default()),
    }
}

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    if let Command::Client(cmd) = cli.command {
        // Client commands keep stdout for their output (`cat`): log warnings to stderr.
        tracing_subscriber::fmt()
            .with_env_filter(
                EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("warn")),
            )
            .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
            .with_writer(std::io::stderr)
            .init();
        return cli::run(cmd);
    }
    match run(cli) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("pnfs: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

fn run(cli: Cli) -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info")),
        )
        // Colour only on a terminal: logs redirected to a file stay plain text.
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stdout()))
        .init();
    if !matches!(cli.command, Command::Stats(_)) {
        raise_fd_limit();
        trim::start();
    }
    let (mut cfg, all_in_one) = match &cli.command {
        Command::Server(a) => (load(&a.config)?, true),
        Command::Mds(a) => (load(&a.config)?, false),
        Command::Stats(a) => return stats(a),
        // Handled in main before logging starts.
        Command::Client(_) => anyhow::bail!("a client command reached the server path"),
        Command::Ds(a) => {
            let mut cfg = load(&a.config)?;
            // Its NFS and control listeners.
            resolve_max_connections(&mut cfg, 2);
            let rt = tokio::runtime::Runtime::new().context("starting the async runtime")?;
            return rt.block_on(async move {
                start_ds(&cfg, a.id).await?;
                println!(
                    "pnfs: data server {} waiting for the MDS on its control address",
                    a.id
                );
                std::future::pending::<()>().await;
                Ok(())
            });
        }
    };
    // The MDS's listener, and each in-process data server's NFS and control listeners.
    let listeners = if all_in_one {
        1 + 2 * cfg.cluster.data_servers.len()
    } else {
        1
    };
    resolve_max_connections(&mut cfg, listeners);
    let rt = tokio::runtime::Runtime::new().context("starting the async runtime")?;
    rt.block_on(async move {
        let mds = Mds::open(cfg.clone()).context("opening the server's stores")?;
        if all_in_one {
            for d in &cfg.cluster.data_servers {
                start_ds(&cfg, d.id).await?;
            }
        }
        let listener = tokio::net::TcpListener::bind(cfg.listen)
            .await
            .with_context(|| format!("listening on {}", cfg.listen))?;
        let port = listener.local_addr()?.port();
        let host = if cfg.listen.ip().is_unspecified() {
            "127.0.0.1".to_string()
        } else {
            cfg.listen.ip().to_string()
        };
        let port_opt = if port == 2049 {
            String::new()
        } else {
            format!(",port={port}")
        };
        println!(
            "pnfs: serving NFSv4.1/4.2 on {} from {}",
            cfg.listen,
            cfg.data_dir.display()
        );
        println!("mount it with:  mount -t nfs -o vers=4.1{port_opt} {host}:/ /mnt");
        for d in &cfg.cluster.data_servers {
            let control = d
                .control_addr()
                .map_or_else(|| "none".to_string(), |a| a.to_string());
            println!(
                "data server {}:  NFS {} ({}), control {control}, {}",
                d.id,
                d.listen_addr(),
                if all_in_one {
                    "in this process"
                } else {
                    "run with `pnfs ds --id N`"
                },
                d.data_dir_in(&cfg.data_dir).display()
            );
        }
        mds.devices.start();
        if let Some(addr) = cfg.metrics_listen {
            match tokio::net::TcpListener::bind(addr).await {
                Ok(l) => {
                    println!("counters:       pnfs stats {addr}   (or GET http://{addr}/metrics)");
                    tokio::spawn(mds::net::metrics::serve_metrics(mds.clone(), l));
                }
                Err(e) => tracing::warn!("counters page not served: listen on {addr}: {e}"),
            }
        }
        mds.serve_on(listener).await;
        Ok(())
    })
}

/// Raises the soft descriptor limit to the hard one (every connection is a descriptor), and
/// says what it is.
fn raise_fd_limit() {
    match nfs_server::fd_limit::raise_nofile() {
        Ok(n) => tracing::info!(limit = n, "open file limit (RLIMIT_NOFILE)"),
        Err(e) => tracing::warn!(
            limit = nfs_server::fd_limit::nofile(),
            "could not raise the open file limit: {e}"
        ),
    }
}

/// Fixes `limits.max_connections` when the configuration leaves it to the descriptor limit:
/// an even share of it for each of the process's `listeners`.
fn resolve_max_connections(cfg: &mut Config, listeners: usize) {
    let limits = cfg.limits.serve_limits(listeners);
    if cfg.limits.max_connections.is_none() {
        tracing::info!(
            max_connections = limits.max_connections,
            listeners,
            "connection cap per listener (limits.max_connections)"
        );
    }
    cfg.limits.max_connections = Some(u32::try_from(limits.max_connections).unwrap_or(u32::MAX));
}

/// Starts data server `id` of `cfg` on the current runtime: its control service on its
/// `control_listen` address now, and its NFS service on its `listen` address once the MDS
/// registers (the data server checks nothing without the MDS's keys). Both sockets are bound
/// before this returns, so a busy port is reported at start.
async fn start_ds(cfg: &Config, id: u16) -> anyhow::Result<()> {
    use data_server::control::{serve_with, ControlConfig, ControlService, StartOnRegister};
    use mds::config::Backend;
    use nfs_proto::control::{ClusterKey, CtlBackend};
    use pfs_core::ObjectStore;
    use std::sync::{Arc, Mutex};

    let d = cfg.cluster.data_server(id).with_context(|| {
        format!("bad configuration: cluster.data_servers has no data server with id {id}")
    })?;
    let field = |f: &str| format!("cluster.data_servers[id={id}].{f}");
    let secret = cfg
        .cluster
        .load_secret(&cfg.data_dir)
        .map_err(|e| anyhow::anyhow!("bad configuration: {e}"))?;
    let control_addr = d.control_listen_addr().with_context(|| {
        format!(
            "bad configuration: {}: no control address (set it)",
            field("control_listen")
        )
    })?;
    let dir = d.data_dir_in(&cfg.data_dir);
    let (objects, backend): (Arc<dyn ObjectStore>, CtlBackend) = match d.backend {
        Backend::Local => (
            Arc::new(
                pfs_core::LocalStore::open(&dir)
                    .with_context(|| format!("{} {}", field("data_dir"), dir.display()))?,
            ),
            CtlBackend::CTL_BACKEND_LOCAL,
        ),
        Backend::Null => (
            Arc::new(pfs_core::NullStore::new()),
            CtlBackend::CTL_BACKEND_NULL,
        ),
        Backend::Shared => {
            let shared = d.shared_dir.as_ref().with_context(|| {
                format!(
                    "bad configuration: {}: required by backend: shared",
                    field("shared_dir")
                )
            })?;
            (
                Arc::new(
                    pfs_core::SharedStore::open(shared)
                        .with_context(|| format!("{} {}", field("shared_dir"), shared.display()))?,
                ),
                CtlBackend::CTL_BACKEND_SHARED,
            )
        }
    };
    let nfs_addr = d.listen_addr();
    let nfs = tokio::net::TcpListener::bind(nfs_addr)
        .await
        .with_context(|| format!("data server {id}: listening on {nfs_addr}"))?;
    let control = tokio::net::TcpListener::bind(control_addr)
        .await
        .with_context(|| {
            format!("data server {id}: control service: listening on {control_addr}")
        })?;
    let lease = std::time::Duration::from_secs(u64::from(cfg.lease_time));
    let mut opts = data_server::DsOptions::new(u32::from(id));
    opts.lease_time = lease;
    opts.max_record = cfg.limits.max_record;
    opts.max_io = cfg.limits.max_io;
    opts.max_ops = cfg.limits.max_ops;
    opts.max_slots = cfg.limits.max_slots;
    opts.max_clients = cfg.limits.max_clients;
    opts.max_sessions = cfg.limits.max_sessions;
    opts.serve = cfg.limits.serve_limits(1);
    // Sparse packing over one shared file per file: each object is the whole file.
    opts.whole_file_objects = d.backend == Backend::Shared;
    let control_limits = opts.serve;
    let nfs = Mutex::new(Some(nfs));
    let start = Arc::new(StartOnRegister::new(opts, objects.clone(), move |ds| {
        let listener = nfs
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        if let Some(l) = listener {
            tracing::info!(ds = id, addr = %nfs_addr, "data server registered: serving NFS");
            tokio::spawn(ds.serve_on(l));
        }
    }));
    let service = Arc::new(
        ControlService::new(
            ControlConfig {
                ds_id: u32::from(id),
                lease_time: lease,
                backend,
                addresses: d.addresses.clone(),
            },
            objects,
            start,
            ClusterKey::from_secret(secret.as_bytes()),
        )
        .with_context(|| format!("data server {id}: control service"))?,
    );
    tracing::info!(ds = id, control = %control_addr, nfs = %nfs_addr, dir = %dir.display(), "data server waiting for the MDS");
    tokio::spawn(async move {
        if let Err(e) = serve_with(control, service, control_limits).await {
            tracing::error!(ds = id, "control service ended: {e}");
        }
    });
    Ok(())
}

//! `pnfs`: the one binary (server, MDS, DS, client commands).

mod alloc;
mod cli;
mod rdma;

use std::path::PathBuf;

use anyhow::Context;
use clap::{Args, Parser, Subcommand};
use cluster::Config;
use mds::Mds;
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
    /// YAML configuration (every field has a default; see cluster::config).
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

/// The configuration for the MDS (`pnfs server`, `pnfs mds`): the shared file, and how its
/// exports nest into the MDS's namespace.
fn load(config: &Option<PathBuf>) -> anyhow::Result<Config> {
    match config {
        Some(p) => mds::config::load(p).map_err(|e| anyhow::anyhow!("bad configuration: {e}")),
        None => Ok(Config::default()),
    }
}

/// The configuration for a data server (`pnfs ds`): the shared file, without the MDS's
/// namespace (a data server has none).
fn load_for_ds(config: &Option<PathBuf>) -> anyhow::Result<Config> {
    match config {
        Some(p) => Config::load(p).map_err(|e| anyhow::anyhow!("bad configuration: {e}")),
        None => Ok(Config::default()),
    }
}

fn main() -> std::process::ExitCode {
    // As mount(8)'s helper for `mount -t fuse.pnfs` and fstab: a daemon mount.
    let argv: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let cli = match cli::mount::helper_args(&argv) {
        Some(args) => Cli::parse_from(args),
        None => Cli::parse(),
    };
    cli::mount::enter_daemon();
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
    }
    let (mut cfg, all_in_one) = match &cli.command {
        Command::Server(a) => (load(&a.config)?, true),
        Command::Mds(a) => (load(&a.config)?, false),
        Command::Stats(a) => return stats(a),
        // Handled in main before logging starts.
        Command::Client(_) => anyhow::bail!("a client command reached the server path"),
        Command::Ds(a) => {
            let mut cfg = load_for_ds(&a.config)?;
            // Its NFS and control listeners.
            resolve_max_connections(&mut cfg, 2);
            let rt = tokio::runtime::Runtime::new().context("starting the async runtime")?;
            return rt.block_on(async move {
                let started = data_server::start(&cfg, a.id).await?;
                let rdma = match started.rdma {
                    Ok(addr) => format!("NFS over RDMA on {addr}"),
                    Err(why) => format!("NFS over RDMA off ({why})"),
                };
                println!(
                    "pnfs: data server {} waiting for the MDS on its control address; {rdma}",
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
        let mut started = std::collections::HashMap::new();
        if all_in_one {
            for d in &cfg.cluster.data_servers {
                started.insert(d.id, data_server::start(&cfg, d.id).await?);
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
        let url = if port == 2049 {
            format!("nfs://{host}/")
        } else {
            format!("nfs://{host}:{port}/")
        };
        println!("or with pnfs:   pnfs mount {url} /mnt   (FUSE, the bundled pNFS client)");
        println!("try it:         pnfs put FILE {url}FILE; pnfs ls -l {url}");
        println!("{}", rdma::start_mds(&mds, &cfg, &host));
        for d in &cfg.cluster.data_servers {
            let control = d
                .control_addr()
                .map_or_else(|| "none".to_string(), |a| a.to_string());
            let rdma = match started.get(&d.id).map(|s| &s.rdma) {
                Some(Ok(a)) => format!(", RDMA {a}"),
                _ => String::new(),
            };
            println!(
                "data server {}:  NFS {}{rdma} ({}), control {control}, {}",
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
        mds.devices().start();
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

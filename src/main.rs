//! `pnfs`: the one binary (server, MDS, DS, client commands).

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

#[derive(Subcommand)]
enum Command {
    /// Serve an all-in-one cluster from ./pnfs-data (today: the metadata server, serving file
    /// data itself; data servers and layouts are the next milestone).
    Server(ServerArgs),
    /// Run the metadata server alone.
    Mds(ServerArgs),
    /// Run one data server (not built yet).
    Ds,
    /// Print a running server's counters (its `metrics_listen` page).
    Stats(StatsArgs),
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

fn load(args: &ServerArgs) -> anyhow::Result<Config> {
    match &args.config {
        Some(p) => Config::load(p).map_err(|e| anyhow::anyhow!("bad configuration: {e}")),
        None => Ok(Config::default()),
    }
}

fn main() -> std::process::ExitCode {
    match run() {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("pnfs: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

fn run() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info")),
        )
        // Colour only on a terminal: logs redirected to a file stay plain text.
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stdout()))
        .init();
    let cli = Cli::parse();
    let cfg = match &cli.command {
        Command::Server(a) | Command::Mds(a) => load(a)?,
        Command::Stats(a) => return stats(a),
        Command::Ds => anyhow::bail!(
            "the data server is not built yet (pNFS milestone); `pnfs server` serves data itself"
        ),
    };
    let rt = tokio::runtime::Runtime::new().context("starting the async runtime")?;
    rt.block_on(async move {
        let mds = Mds::open(cfg.clone()).context("opening the server's stores")?;
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
        if let Some(addr) = cfg.metrics_listen {
            match tokio::net::TcpListener::bind(addr).await {
                Ok(l) => {
                    println!("counters:       pnfs stats {addr}   (or GET http://{addr}/metrics)");
                    tokio::spawn(mds::metrics::serve_metrics(mds.clone(), l));
                }
                Err(e) => tracing::warn!("counters page not served: listen on {addr}: {e}"),
            }
        }
        mds.serve_on(listener).await;
        Ok(())
    })
}

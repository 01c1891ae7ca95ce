//! `pnfs`: the one binary (server, MDS, DS, client commands).

use clap::{Parser, Subcommand};

/// A pNFS (NFSv4.1) server and client.
#[derive(Parser)]
#[command(name = "pnfs", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Serve an all-in-one cluster (MDS and data servers) from ./pnfs-data.
    Server,
    /// Run the metadata server alone.
    Mds,
    /// Run one data server.
    Ds,
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let what = match cli.command {
        Command::Server => "the all-in-one server",
        Command::Mds => "the metadata server",
        Command::Ds => "the data server",
    };
    anyhow::bail!(
        "{what} is not built yet: this release has the protocol crate (nfs-proto) only; \
         see README.md for the state of each part"
    )
}

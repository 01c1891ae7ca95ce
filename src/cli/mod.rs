//! The client commands of `pnfs` (`ls`, `stat`, `cat`, `cp`, `put`, `get`, `rm`, `mkdir`, `mv`,
//! `lock`, `mount`, `bench`): each names files on a server by `nfs://host[:port]/path` URLs and
//! runs on the bundled client library.
//!
//! Exit codes, so scripts can tell failures apart: 0 success, 1 an NFS or I/O error (the
//! message names the URL and the server's status, `pnfs: nfs://h:20490/x: OPEN:
//! NFS4ERR_NOENT`), 2 a usage error (clap's own, or arguments that cannot go together), 3 a
//! `--sha256` mismatch. `lock -- COMMAND` exits with the command's code.

mod bench;
mod cp;
mod fsops;
mod listio;
mod lock;
mod ls;
pub(crate) mod mount;
mod rng;
mod size;

use std::collections::HashMap;
use std::fmt;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Subcommand};
use client::url::NfsUrl;
use client::{Client, ClientOptions, Credentials};

/// Exit code of an NFS or local I/O failure.
pub(crate) const EXIT_ERROR: u8 = 1;
/// Exit code of a usage error (the same as clap's).
pub(crate) const EXIT_USAGE: u8 = 2;
/// Exit code of a `--sha256` mismatch between source and destination.
pub(crate) const EXIT_MISMATCH: u8 = 3;

/// Options every client command takes.
#[derive(Args, Clone, Debug, Default)]
pub(crate) struct CommonOpts {
    /// User id the requests carry (AUTH_SYS) [default: this process's].
    #[arg(long)]
    pub uid: Option<u32>,
    /// Group id the requests carry [default: this process's].
    #[arg(long)]
    pub gid: Option<u32>,
    /// Do all I/O through the metadata server, without file layouts.
    #[arg(long)]
    pub no_pnfs: bool,
    /// At the end, print the client's counters on stderr (bytes to the data servers and to
    /// the MDS, layouts, fall-backs).
    #[arg(short, long)]
    pub verbose: bool,
    /// Reach the servers over RPC-over-RDMA (RFC 8166), as an nfs+rdma:// URL does: an
    /// nfs:// URL without a port goes to port 20049; data servers at their rdma addresses
    /// when the MDS lists some (TCP otherwise). Needs a binary built with rdma-core's headers.
    #[arg(long)]
    pub rdma: bool,
    /// With RDMA: register memory for each call instead of reusing registered buffers (no
    /// registration cache; for measurements).
    #[arg(long, hide = true)]
    pub rdma_no_cache: bool,
    /// Bytes written per open file that are buffered before they are sent (e.g. 8MiB): each
    /// half goes out once full, two at a time [default: 32MiB].
    #[arg(long, value_name = "SIZE", value_parser = size::parse_size)]
    pub write_back: Option<u64>,
    /// Bytes written per open file and not yet known stable that a long write keeps (past
    /// half of it they are COMMITted in the background and freed) [default: 64MiB]; with
    /// --write-back, what bounds a long write's memory.
    #[arg(long, value_name = "SIZE", value_parser = size::parse_size)]
    pub commit_every: Option<u64>,
}

/// `ls` arguments.
#[derive(Args, Debug)]
pub(crate) struct LsArgs {
    /// Long listing: type and mode, links, owner, group, size, modification time (UTC).
    #[arg(short)]
    pub long: bool,
    /// Directory (or file) to list.
    pub url: String,
    #[command(flatten)]
    pub common: CommonOpts,
}

/// `stat` and `cat` arguments.
#[derive(Args, Debug)]
pub(crate) struct UrlArgs {
    /// The file.
    pub url: String,
    #[command(flatten)]
    pub common: CommonOpts,
}

/// Options of the copying commands.
#[derive(Args, Clone, Debug, Default)]
pub(crate) struct CopyOpts {
    /// No progress bar (there is none anyway when stderr is not a terminal).
    #[arg(long)]
    pub no_progress: bool,
    /// Hash the source while copying and the destination by reading it back after close;
    /// fail (exit code 3) and print both digests when they differ.
    #[arg(long)]
    pub sha256: bool,
    /// Copy through this client even when both files are on one server (by default the
    /// server copies them itself, with NFSv4.2 COPY, and no byte goes through this client;
    /// a server that cannot gets the copy through the client anyway).
    #[arg(long)]
    pub no_server_copy: bool,
    #[command(flatten)]
    pub common: CommonOpts,
}

/// `cp` arguments.
#[derive(Args, Debug)]
pub(crate) struct CpArgs {
    /// Source: a local path or an nfs:// URL.
    pub src: String,
    /// Destination: a local path or an nfs:// URL (an existing directory receives the
    /// source's name).
    pub dst: String,
    #[command(flatten)]
    pub opts: CopyOpts,
}

/// `put` arguments.
#[derive(Args, Debug)]
pub(crate) struct PutArgs {
    /// Local file.
    pub local: PathBuf,
    /// Destination URL (an existing directory receives the file's name).
    pub url: String,
    #[command(flatten)]
    pub opts: CopyOpts,
}

/// `get` arguments.
#[derive(Args, Debug)]
pub(crate) struct GetArgs {
    /// Source URL.
    pub url: String,
    /// Local destination (an existing directory receives the file's name).
    pub local: PathBuf,
    #[command(flatten)]
    pub opts: CopyOpts,
}

/// `rm` arguments.
#[derive(Args, Debug)]
pub(crate) struct RmArgs {
    /// Remove directories and everything below them.
    #[arg(short, long)]
    pub recursive: bool,
    /// What to remove.
    #[arg(required = true)]
    pub urls: Vec<String>,
    #[command(flatten)]
    pub common: CommonOpts,
}

/// `mkdir` arguments.
#[derive(Args, Debug)]
pub(crate) struct MkdirArgs {
    /// Make missing parents too; an existing directory is no error.
    #[arg(short, long)]
    pub parents: bool,
    /// Permission bits, octal.
    #[arg(short, long, default_value = "755", value_parser = parse_mode)]
    pub mode: u32,
    /// Directories to make.
    #[arg(required = true)]
    pub urls: Vec<String>,
    #[command(flatten)]
    pub common: CommonOpts,
}

/// `mv` arguments.
#[derive(Args, Debug)]
pub(crate) struct MvArgs {
    /// What to rename.
    pub from: String,
    /// New name, on the same server (an existing directory receives the source's name).
    pub to: String,
    #[command(flatten)]
    pub common: CommonOpts,
}

/// `lock` arguments.
#[derive(Args, Debug)]
pub(crate) struct LockArgs {
    /// The file to lock (it must exist).
    pub url: String,
    /// A shared (read) lock instead of an exclusive one.
    #[arg(long)]
    pub read: bool,
    /// First byte of the range.
    #[arg(long, default_value_t = 0)]
    pub offset: u64,
    /// Bytes in the range; 0: to the end of the file, however large it grows.
    #[arg(long, default_value_t = 0)]
    pub len: u64,
    /// Hold the lock this many seconds, then release it.
    #[arg(long, value_name = "SECS", conflicts_with = "command")]
    pub hold: Option<u64>,
    /// Run this command while holding the lock (after `--`); exit with its code.
    #[arg(last = true, value_name = "COMMAND")]
    pub command: Vec<String>,
    #[command(flatten)]
    pub common: CommonOpts,
}

/// `mount` arguments.
#[derive(Args, Debug)]
pub(crate) struct MountArgs {
    /// The directory to mount: `nfs://host[:port]/path`.
    pub url: String,
    /// Where to mount it (an existing directory).
    pub mountpoint: PathBuf,
    /// Mount options, comma-separated; repeatable: `ro`, `allow_other`, `attr_timeout=SECS`,
    /// `uid=N`, `gid=N`, `nopnfs`, `write_back=SIZE`, `read_cache=SIZE`, `writeback_cache`,
    /// `fsync_revalidate`, `log=FILE` (docs/mount.md).
    #[arg(short = 'o', value_name = "OPTIONS")]
    pub options: Vec<String>,
    /// Return once mounted and serve it in the background (a daemon; what /etc/fstab's
    /// `mount.fuse.pnfs` does). Without it `pnfs mount` serves in the foreground until
    /// unmounted, SIGINT or SIGTERM.
    #[arg(long)]
    pub daemon: bool,
    #[command(flatten)]
    pub common: CommonOpts,
}

/// `revalidate` arguments.
#[derive(Args, Debug)]
pub(crate) struct RevalidateArgs {
    /// Files on a `pnfs mount`.
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
}

/// The client commands, flattened into `pnfs`'s subcommands.
#[derive(Subcommand, Debug)]
pub(crate) enum ClientCommand {
    /// List a directory on a server: `pnfs ls [-l] nfs://host[:port]/dir`.
    Ls(LsArgs),
    /// Print a file's attributes.
    Stat(UrlArgs),
    /// Write a file's contents to stdout.
    Cat(UrlArgs),
    /// Copy a file: local -> nfs://, nfs:// -> local, or nfs:// -> nfs:// (within one
    /// server the server copies, unless --no-server-copy).
    Cp(CpArgs),
    /// Copy a local file to a server.
    Put(PutArgs),
    /// Copy a file from a server to a local path.
    Get(GetArgs),
    /// Remove files (and with -r, directories and their contents).
    Rm(RmArgs),
    /// Make directories.
    Mkdir(MkdirArgs),
    /// Rename a file or directory on one server.
    Mv(MvArgs),
    /// Take a byte-range lock (waiting for it) and hold it for SECS, while a command runs, or
    /// until interrupted.
    Lock(LockArgs),
    /// Mount a server's directory through FUSE, in the foreground until unmounted
    /// (`umount`), SIGINT or SIGTERM.
    Mount(MountArgs),
    /// Drop the cached data and attributes of files on a `pnfs mount` (the
    /// PNFS_IOC_REVALIDATE ioctl), so their next reads see what other clients synced.
    Revalidate(RevalidateArgs),
    /// Benchmark a server (or compare two) through this client: sequential and random I/O,
    /// then creating, looking up and removing files; a table, JSON or a chart (docs/bench.md).
    Bench(Box<bench::BenchArgs>),
    /// List I/O check (for tests): one write_list of many small extents, one read_list of
    /// them, compared.
    #[command(hide = true)]
    ListIo(ListIoArgs),
}

/// `list-io` arguments.
#[derive(Args, Debug)]
pub(crate) struct ListIoArgs {
    /// The file to create (replaced).
    pub url: String,
    /// Extents in the list.
    #[arg(long, default_value_t = 1000)]
    pub extents: usize,
    /// Largest extent (bytes); extents are 1 to this long, 2x this apart.
    #[arg(long, default_value_t = 4096)]
    pub max_extent: u64,
    /// Seed of the extents and their bytes.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Also write the file's expected contents here.
    #[arg(long)]
    pub expect: Option<PathBuf>,
    #[command(flatten)]
    pub common: CommonOpts,
}

impl ClientCommand {
    fn common(&self) -> &CommonOpts {
        match self {
            Self::Ls(a) => &a.common,
            Self::Stat(a) | Self::Cat(a) => &a.common,
            Self::Cp(a) => &a.opts.common,
            Self::Put(a) => &a.opts.common,
            Self::Get(a) => &a.opts.common,
            Self::Rm(a) => &a.common,
            Self::Mkdir(a) => &a.common,
            Self::Mv(a) => &a.common,
            Self::Lock(a) => &a.common,
            Self::Mount(a) => &a.common,
            Self::ListIo(a) => &a.common,
            Self::Bench(a) => &a.common,
            // Local: it talks to the mount, not to a server.
            Self::Revalidate(_) => &NO_COMMON,
        }
    }
}

/// The options of a command that makes no client.
static NO_COMMON: CommonOpts = CommonOpts {
    uid: None,
    gid: None,
    no_pnfs: false,
    verbose: false,
    rdma: false,
    rdma_no_cache: false,
    write_back: None,
    commit_every: None,
};

fn parse_mode(s: &str) -> Result<u32, String> {
    u32::from_str_radix(s, 8)
        .ok()
        .filter(|m| *m <= 0o7777)
        .ok_or_else(|| format!("{s:?} is not an octal mode (0..7777)"))
}

/// Why a command failed: the message for stderr and the exit code.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Failure {
    /// Exit code ([`EXIT_ERROR`], [`EXIT_USAGE`], [`EXIT_MISMATCH`], or a command's).
    pub code: u8,
    /// What to print after `pnfs: ` (empty: print nothing, the cause was already shown).
    pub message: String,
}

impl Failure {
    /// A usage error.
    pub(crate) fn usage(message: impl Into<String>) -> Self {
        Self {
            code: EXIT_USAGE,
            message: message.into(),
        }
    }

    /// An error of the library about `what` (a URL, usually).
    pub(crate) fn nfs(what: impl fmt::Display, e: &client::Error) -> Self {
        Self {
            code: EXIT_ERROR,
            message: format!("{what}: {e}"),
        }
    }

    /// A local I/O error about `what`.
    pub(crate) fn io(what: impl fmt::Display, e: &std::io::Error) -> Self {
        Self {
            code: EXIT_ERROR,
            message: format!("{what}: {e}"),
        }
    }

    /// Any other failure with exit code 1.
    pub(crate) fn other(message: impl Into<String>) -> Self {
        Self {
            code: EXIT_ERROR,
            message: message.into(),
        }
    }
}

/// Result of a command.
pub(crate) type CmdResult<T = ()> = Result<T, Failure>;

/// Where a command's argument points: a local path or a file on a server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Location {
    /// A local file or directory.
    Local(PathBuf),
    /// A file or directory on a server.
    Nfs(NfsUrl),
}

impl Location {
    /// An `nfs://` URL (the scheme in any case) is a server's file; any other argument is a
    /// local path, except ones that look like a mistyped or foreign URL (`nfs:/x`,
    /// `http://...`), which are usage errors rather than surprising local files.
    pub(crate) fn parse(s: &str) -> CmdResult<Location> {
        let lower = s.to_ascii_lowercase();
        if lower.starts_with("nfs://") || lower.starts_with("nfs+rdma://") {
            return parse_url(s).map(Location::Nfs);
        }
        if lower.starts_with("nfs:") {
            return Err(Failure::usage(format!(
                "{s}: not an nfs:// URL (write nfs://host[:port]/path)"
            )));
        }
        if let Some((scheme, _)) = s.split_once("://") {
            let is_scheme = !scheme.is_empty()
                && scheme.starts_with(|c: char| c.is_ascii_alphabetic())
                && scheme
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c));
            if is_scheme {
                return Err(Failure::usage(format!(
                    "{s}: {scheme}:// URLs are not supported (nfs:// only; write ./{s} for a local path)"
                )));
            }
        }
        Ok(Location::Local(PathBuf::from(s)))
    }
}

/// Parses an argument that must be an `nfs://` URL (usage error otherwise).
pub(crate) fn parse_url(s: &str) -> CmdResult<NfsUrl> {
    let fixed = match (s.get(..6), s.get(..11)) {
        (Some(scheme), _) if scheme.eq_ignore_ascii_case("nfs://") => format!("nfs://{}", &s[6..]),
        (_, Some(scheme)) if scheme.eq_ignore_ascii_case("nfs+rdma://") => {
            format!("nfs+rdma://{}", &s[11..])
        }
        _ => s.to_string(),
    };
    NfsUrl::parse(&fixed).map_err(|e| Failure::usage(e.to_string()))
}

/// The last name of a server path (`None` for the root).
pub(crate) fn nfs_basename(path: &str) -> Option<&str> {
    path.split('/').rfind(|c| !c.is_empty())
}

/// `dir/name` on a server.
pub(crate) fn nfs_join(dir: &str, name: &str) -> String {
    format!("{}/{name}", dir.trim_end_matches('/'))
}

/// One client per server, made on first use with the command's options; all shut down at
/// the end (ending their sessions and client ids at once rather than at lease expiry).
pub(crate) struct Clients {
    opts: ClientOptions,
    verbose: bool,
    /// `--rdma`: every URL as nfs+rdma://.
    rdma: bool,
    by_addr: HashMap<SocketAddr, (NfsUrl, Client)>,
}

impl Clients {
    /// Clients with `common`'s credentials and pNFS choice.
    pub(crate) fn new(common: &CommonOpts) -> Self {
        let mut credentials = Credentials::of_process();
        if let Some(u) = common.uid {
            credentials.uid = u;
        }
        if let Some(g) = common.gid {
            credentials.gid = g;
        }
        let defaults = ClientOptions::default();
        let size = |n: Option<u64>, default: usize| {
            n.map_or(default, |n| usize::try_from(n).unwrap_or(usize::MAX))
        };
        let opts = ClientOptions {
            credentials,
            pnfs: !common.no_pnfs,
            rdma_registration_cache: !common.rdma_no_cache,
            write_back: size(common.write_back, defaults.write_back),
            commit_every: size(common.commit_every, defaults.commit_every),
            ..defaults
        };
        Self {
            opts,
            verbose: common.verbose,
            rdma: common.rdma,
            by_addr: HashMap::new(),
        }
    }

    /// Changes the options of the clients not made yet (a command whose own options say
    /// more than `CommonOpts`, as `mount -o`).
    pub(crate) fn tune(&mut self, f: impl FnOnce(&mut ClientOptions)) {
        f(&mut self.opts);
    }

    /// The client of `url`'s server (connecting on first use).
    pub(crate) async fn get(&mut self, url: &NfsUrl) -> CmdResult<Client> {
        let url = &self.effective(url);
        let addr = url.addr().map_err(|e| Failure::nfs(url, &e))?;
        if let Some((_, c)) = self.by_addr.get(&addr) {
            return Ok(c.clone());
        }
        let opts = ClientOptions {
            rdma: url.rdma,
            ..self.opts.clone()
        };
        let c = Client::connect_with(addr, opts)
            .await
            .map_err(|e| Failure::nfs(url.with_path("/"), &e))?;
        self.by_addr.insert(addr, (url.with_path("/"), c.clone()));
        Ok(c)
    }

    /// `url` as this command reaches it: over RDMA with `--rdma`.
    fn effective(&self, url: &NfsUrl) -> NfsUrl {
        if self.rdma {
            url.over_rdma()
        } else {
            url.clone()
        }
    }

    /// True when `a` and `b` are both files on one server (the same address): one client
    /// of that server holds both, and the server can copy between them.
    pub(crate) fn same_server(&self, a: &Location, b: &Location) -> bool {
        match (a, b) {
            (Location::Nfs(a), Location::Nfs(b)) => {
                match (self.effective(a).addr(), self.effective(b).addr()) {
                    (Ok(x), Ok(y)) => x == y,
                    _ => false,
                }
            }
            _ => false,
        }
    }

    /// Prints the counters (with `-v`) and ends every session.
    pub(crate) async fn finish(self) {
        for (url, c) in self.by_addr.into_values() {
            if self.verbose {
                let s = c.stats();
                eprintln!(
                    "pnfs: {url}: {} data servers: wrote {} B, read {} B; MDS: wrote {} B, \
                     read {} B; layouts {}, fall-backs to the MDS {}, re-sent writes {}, \
                     layout recalls {}, recoveries {}; delegations {} (recalled {}, \
                     returned {}, revoked {}), opens under a delegation {}; server-side \
                     copies {} ({} B, {} in the background)",
                    if c.uses_pnfs() { "pNFS," } else { "no pNFS," },
                    s.ds_bytes_written,
                    s.ds_bytes_read,
                    s.mds_bytes_written,
                    s.mds_bytes_read,
                    s.layouts,
                    s.fallbacks,
                    s.rewrites,
                    s.recalls,
                    s.recoveries,
                    s.delegations,
                    s.delegations_recalled,
                    s.delegations_returned,
                    s.delegations_revoked,
                    s.delegated_opens,
                    s.server_copies,
                    s.server_copy_bytes,
                    s.server_copies_async
                );
            }
            c.shutdown().await;
        }
        if self.verbose {
            if let Some(s) = client::rdma_stats() {
                eprintln!("pnfs: {s}");
            }
        }
    }
}

/// Runs a client command and says how the process should exit; prints the error, if any.
pub(crate) fn run(cmd: ClientCommand) -> ExitCode {
    // A library bug must not show as a Rust panic with a backtrace: one line, exit 1.
    std::panic::set_hook(Box::new(|info| {
        eprintln!("pnfs: internal error: {info}");
    }));
    match &cmd {
        ClientCommand::Revalidate(a) => return mount::revalidate(a),
        ClientCommand::Mount(a) if a.daemon && !mount::in_daemon() => return mount::daemonize(a),
        _ => {}
    }
    let rt = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("pnfs: starting the async runtime: {e}");
            return ExitCode::from(EXIT_ERROR);
        }
    };
    let mut clients = Clients::new(cmd.common());
    let result = rt.block_on(async {
        let r = dispatch(&cmd, &mut clients).await;
        clients.finish().await;
        r
    });
    // Background tasks of the library (lease renewal, callbacks) end with the runtime;
    // do not wait for connections the server keeps open.
    rt.shutdown_timeout(std::time::Duration::from_secs(1));
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(f) => {
            if !f.message.is_empty() {
                eprintln!("pnfs: {}", f.message);
            }
            ExitCode::from(f.code)
        }
    }
}

async fn dispatch(cmd: &ClientCommand, clients: &mut Clients) -> CmdResult {
    match cmd {
        ClientCommand::Ls(a) => ls::ls(clients, a).await,
        ClientCommand::Stat(a) => ls::stat(clients, a).await,
        ClientCommand::Cat(a) => fsops::cat(clients, a).await,
        ClientCommand::Cp(a) => {
            let src = Location::parse(&a.src)?;
            let dst = Location::parse(&a.dst)?;
            cp::copy(clients, src, dst, &a.opts).await
        }
        ClientCommand::Put(a) => {
            let dst = parse_url(&a.url)?;
            cp::copy(
                clients,
                Location::Local(a.local.clone()),
                Location::Nfs(dst),
                &a.opts,
            )
            .await
        }
        ClientCommand::Get(a) => {
            let src = parse_url(&a.url)?;
            cp::copy(
                clients,
                Location::Nfs(src),
                Location::Local(a.local.clone()),
                &a.opts,
            )
            .await
        }
        ClientCommand::Rm(a) => fsops::rm(clients, a).await,
        ClientCommand::Mkdir(a) => fsops::mkdir(clients, a).await,
        ClientCommand::Mv(a) => fsops::mv(clients, a).await,
        ClientCommand::Lock(a) => lock::lock(clients, a).await,
        ClientCommand::Mount(a) => mount::mount(clients, a).await,
        ClientCommand::Revalidate(_) => Err(Failure::other("revalidate runs without a client")),
        ClientCommand::ListIo(a) => listio::list_io(clients, a).await,
        ClientCommand::Bench(a) => bench::bench(clients, a).await,
    }
}

/// A client command line (without the program name) as `pnfs` parses it, for the tests of
/// each command's arguments.
#[cfg(test)]
pub(crate) fn parse_args(args: &[&str]) -> Result<ClientCommand, clap::Error> {
    #[derive(clap::Parser, Debug)]
    struct TestCli {
        #[command(subcommand)]
        cmd: ClientCommand,
    }
    <TestCli as clap::Parser>::try_parse_from(std::iter::once("pnfs").chain(args.iter().copied()))
        .map(|c| c.cmd)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<ClientCommand, clap::Error> {
        parse_args(args)
    }

    #[test]
    fn nfs_urls_are_server_files_and_everything_else_is_local() {
        let l = Location::parse("nfs://127.0.0.1:20490/a/b").unwrap();
        assert_eq!(
            l,
            Location::Nfs(NfsUrl {
                host: "127.0.0.1".into(),
                port: 20490,
                path: "/a/b".into(),
                rdma: false,
            })
        );
        let l = Location::parse("NFS://h/x").unwrap();
        assert!(matches!(l, Location::Nfs(u) if u.host == "h" && u.path == "/x"));
        let l = Location::parse("NFS+RDMA://h/x").unwrap();
        assert!(matches!(l, Location::Nfs(u) if u.rdma && u.port == 20049 && u.path == "/x"));
        for local in ["/tmp/x", "x", "./nfs://h/x", "host:/path", "a:b", "-"] {
            assert_eq!(
                Location::parse(local).unwrap(),
                Location::Local(PathBuf::from(local)),
                "{local}"
            );
        }
    }

    #[test]
    fn mistyped_and_foreign_urls_are_usage_errors() {
        for bad in [
            "nfs:/h/x",
            "nfs:h",
            "http://h/x",
            "nfs://h:port/x",
            "nfs://",
        ] {
            let f = Location::parse(bad).unwrap_err();
            assert_eq!(f.code, EXIT_USAGE, "{bad}");
            assert!(f.message.contains(bad.trim_end_matches('/')), "{f:?}");
        }
        assert_eq!(parse_url("/local").unwrap_err().code, EXIT_USAGE);
    }

    #[test]
    fn server_paths_split_and_join() {
        assert_eq!(nfs_basename("/a/b/"), Some("b"));
        assert_eq!(nfs_basename("/"), None);
        assert_eq!(nfs_join("/", "x"), "/x");
        assert_eq!(nfs_join("/d/", "x"), "/d/x");
    }

    #[test]
    fn nfs_errors_name_the_operation_and_status() {
        use nfs_proto::nfs4::{NfsOpnum4, NfsStat4};
        let e = client::Error::Nfs {
            op: NfsOpnum4::OP_OPEN,
            status: NfsStat4::NFS4ERR_NOENT,
        };
        let f = Failure::nfs("nfs://h:1/x", &e);
        assert_eq!(f.message, "nfs://h:1/x: OPEN: NFS4ERR_NOENT");
        assert_eq!(f.code, EXIT_ERROR);
    }

    #[test]
    fn lock_takes_a_command_after_a_double_dash_or_a_hold_time() {
        let ClientCommand::Lock(a) = parse(&[
            "lock",
            "nfs://h/f",
            "--read",
            "--offset",
            "10",
            "--len",
            "5",
            "--",
            "sh",
            "-c",
            "echo hi",
        ])
        .unwrap() else {
            panic!("not lock")
        };
        assert!(a.read);
        assert_eq!((a.offset, a.len, a.hold), (10, 5, None));
        assert_eq!(a.command, ["sh", "-c", "echo hi"]);
        let ClientCommand::Lock(a) = parse(&["lock", "nfs://h/f", "--hold", "0"]).unwrap() else {
            panic!("not lock")
        };
        assert_eq!(a.hold, Some(0));
        assert!(!a.read && a.command.is_empty());
        let e = parse(&["lock", "nfs://h/f", "--hold", "1", "--", "true"]).unwrap_err();
        assert_eq!(e.exit_code(), i32::from(EXIT_USAGE));
    }

    #[test]
    fn common_options_reach_every_command() {
        let ClientCommand::Put(a) = parse(&[
            "put",
            "f",
            "nfs://h/f",
            "--uid",
            "1000",
            "--gid",
            "100",
            "--no-pnfs",
            "-v",
            "--sha256",
            "--no-progress",
        ])
        .unwrap() else {
            panic!("not put")
        };
        let c = &a.opts.common;
        assert_eq!(
            (c.uid, c.gid, c.no_pnfs, c.verbose),
            (Some(1000), Some(100), true, true)
        );
        assert!(a.opts.sha256 && a.opts.no_progress);
        let clients = Clients::new(c);
        assert_eq!(clients.opts.credentials.uid, 1000);
        assert_eq!(clients.opts.credentials.gid, 100);
        assert!(!clients.opts.pnfs);
        let ClientCommand::Mkdir(m) =
            parse(&["mkdir", "-p", "-m", "700", "nfs://h/a", "nfs://h/b"]).unwrap()
        else {
            panic!("not mkdir")
        };
        assert_eq!((m.parents, m.mode, m.urls.len()), (true, 0o700, 2));
        assert!(parse(&["mkdir", "-m", "9", "nfs://h/a"]).is_err());
        assert!(parse(&["rm"]).is_err());
    }

    #[test]
    fn only_urls_of_one_server_address_are_one_server() {
        let ClientCommand::Cp(a) =
            parse(&["cp", "--no-server-copy", "nfs://h:1/a", "nfs://h:1/b"]).unwrap()
        else {
            panic!("not cp")
        };
        assert!(a.opts.no_server_copy);
        let clients = Clients::new(&CommonOpts::default());
        let at = |s: &str| Location::parse(s).unwrap();
        assert!(clients.same_server(
            &at("nfs://127.0.0.1:20490/a"),
            &at("nfs://127.0.0.1:20490/d/b")
        ));
        assert!(!clients.same_server(
            &at("nfs://127.0.0.1:20490/a"),
            &at("nfs://127.0.0.1:20491/a")
        ));
        assert!(!clients.same_server(&at("nfs://127.0.0.1:20490/a"), &at("local/a")));
    }

    #[test]
    fn mount_takes_a_url_a_mountpoint_and_options() {
        let ClientCommand::Mount(a) = parse(&[
            "mount",
            "nfs://h:20490/exp",
            "/mnt/p",
            "-o",
            "ro,attr_timeout=2",
            "--no-pnfs",
        ])
        .unwrap() else {
            panic!("not a mount");
        };
        assert_eq!(a.url, "nfs://h:20490/exp");
        assert_eq!(a.mountpoint, PathBuf::from("/mnt/p"));
        assert_eq!(a.options, ["ro,attr_timeout=2"]);
        assert!(a.common.no_pnfs);
        assert!(parse(&["mount", "nfs://h/exp"]).is_err());
    }
}

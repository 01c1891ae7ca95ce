//! `pnfs bench`'s arguments: the clap declaration, the phases and their names, sizes with
//! units, and the checks that need more than one argument.

use std::path::PathBuf;

use clap::Args;

use super::error::BenchError;
use crate::cli::size::parse_size;
use crate::cli::CommonOpts;

/// The size of each random request: 4 KiB, the page size applications' small I/O is made of.
pub(crate) const RAND_BLOCK: u64 = 4096;

/// `bench` arguments.
#[derive(Args, Debug)]
pub(crate) struct BenchArgs {
    /// The directory to benchmark in, `nfs://host[:port]/path` (server A). Everything is made
    /// in a fresh directory `pnfs-bench-<pid>-<n>` below it, removed at the end.
    pub url: String,
    /// A second server (B) to run alternately with A, phase by phase: the report shows both
    /// and the ratio A/B.
    #[arg(long, value_name = "URL2")]
    pub compare: Option<String>,
    /// Phases to run, comma-separated: seq-write, seq-read, rand-write, rand-read,
    /// meta-create, meta-stat, meta-remove, or the groups seq, rand, meta, all.
    #[arg(long, value_name = "PHASES", value_delimiter = ',', value_parser = parse_phases, default_value = "all")]
    pub only: Vec<PhaseGroup>,
    /// Size of the file of the sequential and random phases (bytes, or with K, KiB, M, MiB,
    /// G, GiB: all powers of 1024).
    #[arg(long, default_value = "256MiB", value_parser = parse_size)]
    pub size: u64,
    /// Request size of the sequential phases.
    #[arg(long, default_value = "1MiB", value_parser = parse_size)]
    pub block: u64,
    /// Requests of each random phase (4 KiB each).
    #[arg(long, default_value_t = 2000)]
    pub rand_ops: u64,
    /// Files made, looked up and removed by the metadata phases.
    #[arg(long, default_value_t = 1000)]
    pub files: u64,
    /// Bytes written into each file of meta-create (0: empty files; 4KiB is the other usual
    /// case).
    #[arg(long, default_value = "0", value_parser = parse_size)]
    pub file_size: u64,
    /// Concurrent tasks of the metadata phases, sharing one client (its session's slots).
    #[arg(long, default_value_t = 1)]
    pub tasks: u64,
    /// Runs of every phase; the report gives the median, minimum and maximum.
    #[arg(long, default_value_t = 3)]
    pub runs: u64,
    /// Seconds to wait between runs, after a run's files are removed (as ior's `-d`): a
    /// server that frees a removed file's space after its REMOVE's reply (ours, through its
    /// removal queue) does that before the next run is timed, not during it, and with
    /// `--compare` not during the other server's run either.
    #[arg(long, value_name = "SECONDS", default_value_t = 0.0, value_parser = parse_delay)]
    pub delay: f64,
    /// Processes of server A on this machine (pids, comma-separated: the MDS and its data
    /// servers when they run apart): the CPU they spend in each phase is reported beside the
    /// client's, read from /proc in hundredths of a second.
    #[arg(long, value_name = "PIDS", value_delimiter = ',')]
    pub server_pids: Vec<u32>,
    /// The processes of the server of `--compare` (B), as `--server-pids`.
    #[arg(long, value_name = "PIDS", value_delimiter = ',', requires = "compare")]
    pub compare_pids: Vec<u32>,
    /// Print a JSON document instead of the table (no progress lines either).
    #[arg(long)]
    pub json: bool,
    /// Also draw the results into this file: SVG or PNG, by its extension.
    #[arg(long, value_name = "FILE")]
    pub plot: Option<PathBuf>,
    /// Refuse delegations (OPEN asks WANT_NO_DELEG): every open and close goes to the
    /// server, as against a server that grants none. Shows what delegations change in the
    /// metadata phases when comparing with such a server.
    #[arg(long)]
    pub no_delegations: bool,
    /// No progress lines on stderr.
    #[arg(short, long)]
    pub quiet: bool,
    #[command(flatten)]
    pub common: CommonOpts,
}

/// `--delay`: seconds, 0 to one hour.
fn parse_delay(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(d) if (0.0..=3600.0).contains(&d) => Ok(d),
        _ => Err(format!("{s:?} is not a number of seconds from 0 to 3600")),
    }
}

/// One measured phase. Their order here is the order they run in within a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum Phase {
    /// The file written from start to end in `--block` requests, then fsync (COMMIT).
    SeqWrite,
    /// The file read from start to end in `--block` requests.
    SeqRead,
    /// `--rand-ops` 4 KiB writes at random aligned offsets of the file, then fsync.
    RandWrite,
    /// `--rand-ops` 4 KiB reads at random aligned offsets of the file.
    RandRead,
    /// `--files` files created (with `--file-size` bytes, COMMITted at close).
    MetaCreate,
    /// Each file looked up with its attributes (a LOOKUP and GETATTR: `stat(2)` uncached).
    MetaStat,
    /// Each file removed.
    MetaRemove,
}

impl Phase {
    /// Every phase, in running order.
    pub(crate) const ALL: [Phase; 7] = [
        Phase::SeqWrite,
        Phase::SeqRead,
        Phase::RandWrite,
        Phase::RandRead,
        Phase::MetaCreate,
        Phase::MetaStat,
        Phase::MetaRemove,
    ];

    /// Its name in `--only`, the table and the JSON document.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Phase::SeqWrite => "seq-write",
            Phase::SeqRead => "seq-read",
            Phase::RandWrite => "rand-write",
            Phase::RandRead => "rand-read",
            Phase::MetaCreate => "meta-create",
            Phase::MetaStat => "meta-stat",
            Phase::MetaRemove => "meta-remove",
        }
    }

    /// The unit of its throughput: MB/s (10^6 bytes a second), IOPS, or files/s.
    pub(crate) fn unit(self) -> &'static str {
        match self {
            Phase::SeqWrite | Phase::SeqRead => "MB/s",
            Phase::RandWrite | Phase::RandRead => "IOPS",
            Phase::MetaCreate | Phase::MetaStat | Phase::MetaRemove => "files/s",
        }
    }

    /// Whether it works on the data file (rather than the metadata directory).
    pub(crate) fn uses_data_file(self) -> bool {
        matches!(
            self,
            Phase::SeqWrite | Phase::SeqRead | Phase::RandWrite | Phase::RandRead
        )
    }

    /// Whether its timed part ends with making the data stable on the server.
    pub(crate) fn ends_with_commit(self) -> bool {
        matches!(self, Phase::SeqWrite | Phase::RandWrite)
    }
}

/// The phases one name of `--only` stands for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct PhaseGroup(pub Vec<Phase>);

/// One name of `--only`: a phase or a group of them.
fn parse_phases(s: &str) -> Result<PhaseGroup, String> {
    let group: &[Phase] = match s.trim().to_ascii_lowercase().as_str() {
        "all" => &Phase::ALL,
        "seq" => &[Phase::SeqWrite, Phase::SeqRead],
        "rand" => &[Phase::RandWrite, Phase::RandRead],
        "meta" => &[Phase::MetaCreate, Phase::MetaStat, Phase::MetaRemove],
        name => {
            return Phase::ALL
                .iter()
                .find(|p| p.name() == name)
                .map(|p| PhaseGroup(vec![*p]))
                .ok_or_else(|| {
                    format!(
                        "no phase {s:?} (phases: {}; groups: seq, rand, meta, all)",
                        Phase::ALL.map(Phase::name).join(", ")
                    )
                })
        }
    };
    Ok(PhaseGroup(group.to_vec()))
}

/// The checked settings of a run.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Settings {
    /// The phases to measure, in running order, each once.
    pub phases: Vec<Phase>,
    /// The data file's size.
    pub size: u64,
    /// Sequential request size.
    pub block: u64,
    /// Random requests per random phase.
    pub rand_ops: u64,
    /// Files of the metadata phases.
    pub files: u64,
    /// Bytes in each of them.
    pub file_size: u64,
    /// Tasks of the metadata phases.
    pub tasks: u64,
    /// Runs.
    pub runs: u64,
    /// The pause between runs (`--delay`).
    pub delay: std::time::Duration,
    /// The client refused delegations (`--no-delegations`).
    pub no_delegations: bool,
    /// Each server's processes whose CPU is measured (`--server-pids`, `--compare-pids`),
    /// in the order of the servers; empty for one measured from the client's side only.
    pub server_pids: Vec<Vec<u32>>,
}

/// Largest sequential request: more would only be cut by the library into I/O-size pieces,
/// and each request is one buffer in memory.
const MAX_BLOCK: u64 = 64 << 20;

impl Settings {
    /// The settings of `a`, or why they cannot work.
    pub(crate) fn from_args(a: &BenchArgs) -> Result<Settings, BenchError> {
        let mut phases: Vec<Phase> = a.only.iter().flat_map(|g| g.0.iter().copied()).collect();
        phases.sort();
        phases.dedup();
        let usage = |m: String| Err(BenchError::Usage(m));
        if phases.is_empty() {
            return usage("--only names no phase".into());
        }
        if a.runs == 0 {
            return usage("--runs must be at least 1".into());
        }
        if phases.iter().any(|p| p.uses_data_file()) {
            if a.block == 0 || a.block > MAX_BLOCK {
                return usage(format!(
                    "--block {} is out of range (1 byte to 64 MiB)",
                    a.block
                ));
            }
            if a.size == 0 {
                return usage("--size must be more than 0 for the seq and rand phases".into());
            }
        }
        if phases.contains(&Phase::RandWrite) || phases.contains(&Phase::RandRead) {
            if a.size < RAND_BLOCK {
                return usage(format!(
                    "--size {} is less than one 4 KiB random request (use --size 4KiB or more, \
                     or --only without rand)",
                    a.size
                ));
            }
            if a.rand_ops == 0 {
                return usage("--rand-ops must be at least 1".into());
            }
        }
        if phases.iter().any(|p| !p.uses_data_file()) {
            if a.files == 0 {
                return usage("--files must be at least 1 for the meta phases".into());
            }
            if a.tasks == 0 || a.tasks > 1024 {
                return usage(format!("--tasks {} is out of range (1 to 1024)", a.tasks));
            }
            if a.file_size > MAX_BLOCK {
                return usage(format!(
                    "--file-size {} is more than 64 MiB (the meta phases measure small files)",
                    a.file_size
                ));
            }
        }
        if let Some(p) = &a.plot {
            super::plot::Format::of(p)?;
        }
        for (flag, pids) in [
            ("--server-pids", &a.server_pids),
            ("--compare-pids", &a.compare_pids),
        ] {
            if let Some(p) = pids.iter().find(|&&p| super::cpu::cpu_of(p).is_none()) {
                return usage(format!("{flag}: no process {p} on this machine"));
            }
        }
        Ok(Settings {
            phases,
            size: a.size,
            block: a.block,
            rand_ops: a.rand_ops,
            files: a.files,
            file_size: a.file_size,
            tasks: a.tasks.min(a.files.max(1)),
            runs: a.runs,
            delay: std::time::Duration::from_secs_f64(a.delay),
            no_delegations: a.no_delegations,
            server_pids: vec![a.server_pids.clone(), a.compare_pids.clone()],
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::ClientCommand;

    fn args(v: &[&str]) -> Result<BenchArgs, clap::Error> {
        let v: Vec<&str> = std::iter::once("bench").chain(v.iter().copied()).collect();
        match crate::cli::parse_args(&v)? {
            ClientCommand::Bench(a) => Ok(*a),
            other => panic!("not bench: {other:?}"),
        }
    }

    #[test]
    fn defaults_are_every_phase_and_quick_sizes() {
        let a = args(&["nfs://h/"]).unwrap();
        let s = Settings::from_args(&a).unwrap();
        assert_eq!(s.phases, Phase::ALL);
        assert_eq!((s.size, s.block), (256 << 20, 1 << 20));
        assert_eq!((s.rand_ops, s.files, s.file_size), (2000, 1000, 0));
        assert_eq!((s.tasks, s.runs), (1, 3));
        assert!(!a.json && a.plot.is_none() && a.compare.is_none());
        assert!(!s.no_delegations);
        let a = args(&["nfs://h/", "--no-delegations", "--uid", "7", "-q"]).unwrap();
        assert!(Settings::from_args(&a).unwrap().no_delegations);
        assert_eq!(a.common.uid, Some(7));
        assert!(a.quiet);
    }

    #[test]
    fn only_takes_phases_and_groups_in_any_order_once_each() {
        let a = args(&["nfs://h/", "--only", "meta,seq-write", "--only", "seq"]).unwrap();
        let s = Settings::from_args(&a).unwrap();
        assert_eq!(
            s.phases,
            [
                Phase::SeqWrite,
                Phase::SeqRead,
                Phase::MetaCreate,
                Phase::MetaStat,
                Phase::MetaRemove
            ]
        );
        let e = args(&["nfs://h/", "--only", "seq-wrte"]).unwrap_err();
        assert!(e.to_string().contains("no phase \"seq-wrte\""), "{e}");
        assert_eq!(e.exit_code(), 2);
    }

    #[test]
    fn delay_is_seconds_between_runs_from_0_to_an_hour() {
        let s = Settings::from_args(&args(&["nfs://h/", "--delay", "1.5"]).unwrap()).unwrap();
        assert_eq!(s.delay, std::time::Duration::from_millis(1500));
        let s = Settings::from_args(&args(&["nfs://h/"]).unwrap()).unwrap();
        assert!(s.delay.is_zero());
        for bad in ["3601", "soon", "NaN", "inf"] {
            let e = args(&["nfs://h/", "--delay", bad]).unwrap_err();
            assert!(
                e.to_string().contains("seconds from 0 to 3600"),
                "{bad}: {e}"
            );
        }
    }

    #[test]
    fn arguments_that_cannot_work_are_usage_errors() {
        let bad = |v: &[&str]| {
            let a = args(v).unwrap();
            let e = Settings::from_args(&a).unwrap_err();
            assert_eq!(e.exit_code(), 2, "{v:?}: {e}");
            e.to_string()
        };
        assert!(bad(&["nfs://h/", "--runs", "0"]).contains("--runs"));
        assert!(bad(&["nfs://h/", "--size", "1KiB", "--only", "rand"]).contains("4 KiB"));
        assert!(bad(&["nfs://h/", "--block", "0"]).contains("--block"));
        assert!(bad(&["nfs://h/", "--files", "0", "--only", "meta"]).contains("--files"));
        assert!(bad(&["nfs://h/", "--tasks", "0"]).contains("--tasks"));
        assert!(bad(&["nfs://h/", "--plot", "x.pdf"]).contains("x.pdf"));
        // Settings a phase does not use are not checked for it.
        let a = args(&["nfs://h/", "--size", "0", "--only", "meta"]).unwrap();
        assert!(Settings::from_args(&a).is_ok());
        assert!(args(&["nfs://h/", "--size", "lots"]).is_err());
    }

    #[test]
    fn server_pids_must_be_processes_here_and_b_needs_compare() {
        let me = std::process::id().to_string();
        let a = args(&["nfs://h/", "--server-pids", &format!("{me},{me}")]).unwrap();
        let s = Settings::from_args(&a).unwrap();
        let me: u32 = me.parse().unwrap();
        assert_eq!(s.server_pids, [vec![me, me], vec![]]);
        let a = args(&["nfs://h/", "--server-pids", "0"]).unwrap();
        let e = Settings::from_args(&a).unwrap_err();
        assert!(e.to_string().contains("--server-pids: no process 0"), "{e}");
        assert!(args(&["nfs://h/", "--compare-pids", "1"]).is_err());
        let a = args(&[
            "nfs://h/",
            "--compare",
            "nfs://g/",
            "--compare-pids",
            &me.to_string(),
        ])
        .unwrap();
        assert_eq!(Settings::from_args(&a).unwrap().server_pids[1], [me]);
        assert!(args(&["nfs://h/", "--server-pids", "x"]).is_err());
    }

    #[test]
    fn more_tasks_than_files_are_as_many_as_files() {
        let a = args(&["nfs://h/", "--files", "3", "--tasks", "8"]).unwrap();
        assert_eq!(Settings::from_args(&a).unwrap().tasks, 3);
    }
}

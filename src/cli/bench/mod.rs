//! `pnfs bench URL [--compare URL2]`: a benchmark of an NFSv4.1 server through the bundled
//! client, as users run `juicefs bench` or ior and mdtest first: sequential and random I/O
//! on one file, then creating, looking up and removing many files (docs/bench.md).
//!
//! Any NFSv4.1 server can be measured, and two compared: the same client library talks to
//! both, so the difference is the servers'. With `--compare` the servers take turns phase
//! by phase (A then B for each phase of each run), so slow drifts of the machine (another
//! job, the page cache filling, thermal limits) fall on both alike.
//!
//! Every run of the data phases works on a file of its own, and every run of the metadata
//! phases in a directory of its own, all in a fresh directory `pnfs-bench-<pid>-<n>` below
//! each URL, removed at the end, also after an error or Ctrl-C.
//!
//! - [`settings`]: the arguments and phases; [`phases`]: the measurements; [`cpu`]: the
//!   CPU time they cost the client and the servers;
//! - [`stats`]: percentiles and median/min/max; [`report`]: the results as every output
//!   reads them;
//! - [`table`], [`json`], [`plot`]: the outputs; [`workdir`]: the directory on each server;
//!   [`error`]: what can go wrong.

mod cpu;
mod error;
mod json;
mod phases;
mod plot;
mod report;
mod settings;
mod stats;
mod table;
mod workdir;

use std::collections::BTreeMap;

use bytes::Bytes;
use client::Node;

pub(crate) use self::settings::BenchArgs;

use self::error::BenchError;
use self::phases::Measured;
use self::report::{PhaseResult, Report, ServerInfo, ServerRuns, Traffic};
use self::settings::{Phase, Settings};
use self::table::fmt_bytes;
use self::workdir::Target;
use super::{parse_url, Clients, CmdResult};

/// Runs the benchmark and prints its report.
pub(crate) async fn bench(clients: &mut Clients, a: &BenchArgs) -> CmdResult {
    let settings = Settings::from_args(a)?;
    let mut urls = vec![("A", parse_url(&a.url)?)];
    if let Some(b) = &a.compare {
        urls.push(("B", parse_url(b)?));
    }
    let progress = Progress(!(a.json || a.quiet));
    if a.no_delegations {
        clients.tune(|o| o.delegations = false);
    }
    let mut targets = Vec::new();
    for (label, url) in urls {
        progress.line(format_args!("{label}: connecting to {url}"));
        match Target::make(clients, label, url).await {
            Ok(t) => targets.push(t),
            Err(e) => {
                // The connect error is the one to report; a failed removal was printed.
                let _ = cleanup(&targets, &progress).await;
                return Err(e.into());
            }
        }
    }
    let outcome = tokio::select! {
        r = run_all(&targets, &settings, &progress) => r,
        _ = tokio::signal::ctrl_c() => Err(BenchError::Interrupted),
    };
    let cleaned = cleanup(&targets, &progress).await;
    let phases = outcome?;
    let report = Report {
        settings,
        servers: targets.iter().map(server_info).collect(),
        phases,
    };
    if a.json {
        print!("{}", json::render(&report));
    } else {
        print!("{}", table::render(&report));
    }
    if let Some(path) = &a.plot {
        plot::write(&report, path)?;
        progress.line(format_args!("chart written to {}", path.display()));
    }
    cleaned.map_err(Into::into)
}

/// Progress lines on stderr (unless `--json` or `--quiet`).
struct Progress(bool);

impl Progress {
    fn line(&self, what: std::fmt::Arguments<'_>) {
        if self.0 {
            eprintln!("pnfs bench: {what}");
        }
    }
}

/// Removes each target's directory; says so for each that could not be (and returns the
/// first such error).
async fn cleanup(targets: &[Target], progress: &Progress) -> Result<(), BenchError> {
    let mut first = Ok(());
    for t in targets {
        progress.line(format_args!("{}: removing {}", t.label, t.dir_url()));
        if let Err(e) = t.remove().await {
            eprintln!("pnfs bench: {e}");
            if first.is_ok() {
                first = Err(e);
            }
        }
    }
    first
}

/// The report's view of a target.
fn server_info(t: &Target) -> ServerInfo {
    let s = t.client.stats();
    ServerInfo {
        label: t.label.to_string(),
        url: t.url.to_string(),
        bench_dir: t.dir_url().to_string(),
        pnfs: t.client.uses_pnfs(),
        traffic: Traffic {
            ds_written: s.ds_bytes_written,
            ds_read: s.ds_bytes_read,
            mds_written: s.mds_bytes_written,
            mds_read: s.mds_bytes_read,
        },
    }
}

/// What a run has made on one server so far.
#[derive(Default)]
struct RunState {
    /// The run's data file exists (written by seq-write, or prepared untimed).
    data: bool,
    /// The run's metadata directory.
    meta_dir: Option<Node>,
    /// Its files exist (created and not removed yet).
    meta_files: bool,
}

/// One run: its number and what every phase of it uses.
struct Run<'a> {
    /// 0-based.
    n: u64,
    s: &'a Settings,
    /// The bytes the data phases write.
    payload: &'a Bytes,
    /// What meta-create writes into each file (`s.file_size` bytes).
    meta_payload: &'a Bytes,
    progress: &'a Progress,
}

impl Run<'_> {
    /// A progress line of this run.
    fn line(&self, what: std::fmt::Arguments<'_>) {
        self.progress
            .line(format_args!("run {}/{}: {what}", self.n + 1, self.s.runs));
    }
}

/// The names of run `run`'s data file and metadata directory.
fn data_name(run: u64) -> String {
    format!("data-{run}")
}

fn meta_dir_name(run: u64) -> String {
    format!("meta-{run}")
}

/// Every run of every phase on every target, interleaved (run by run, phase by phase,
/// target by target).
async fn run_all(
    targets: &[Target],
    s: &Settings,
    progress: &Progress,
) -> Result<Vec<PhaseResult>, BenchError> {
    let payload = super::rng::noise(
        s.block.max(s.file_size).max(settings::RAND_BLOCK) as usize,
        7,
    );
    let meta_payload = payload.slice(..s.file_size as usize);
    let mut results: BTreeMap<Phase, Vec<ServerRuns>> = BTreeMap::new();
    for n in 0..s.runs {
        let run = Run {
            n,
            s,
            payload: &payload,
            meta_payload: &meta_payload,
            progress,
        };
        let mut state: Vec<RunState> = targets.iter().map(|_| RunState::default()).collect();
        for &phase in &s.phases {
            for (i, t) in targets.iter().enumerate() {
                let st = &mut state[i];
                prepare(phase, t, st, &run).await?;
                run.line(format_args!(
                    "{} on {}: {}",
                    phase.name(),
                    t.label,
                    describe(phase, s)
                ));
                let pids = s.server_pids.get(i).map_or(&[][..], Vec::as_slice);
                let cpu = cpu::Start::now(pids);
                let mut m = measure(phase, t, st, &run).await?;
                m.cpu = cpu.spent();
                run.line(format_args!(
                    "{} on {}: {} {} in {:.2} s",
                    phase.name(),
                    t.label,
                    table::fmt_value(m.throughput(phase)),
                    phase.unit(),
                    m.elapsed.as_secs_f64()
                ));
                let per_target = results.entry(phase).or_insert_with(|| {
                    targets
                        .iter()
                        .map(|_| ServerRuns { runs: Vec::new() })
                        .collect()
                });
                per_target[i].runs.push(m);
            }
        }
        for (t, st) in targets.iter().zip(&mut state) {
            finish_run(t, st, s, n).await?;
        }
        if n + 1 < s.runs && !s.delay.is_zero() {
            run.line(format_args!(
                "waiting {:.1} s before the next run (--delay)",
                s.delay.as_secs_f64()
            ));
            tokio::time::sleep(s.delay).await;
        }
    }
    Ok(results
        .into_iter()
        .map(|(phase, servers)| PhaseResult { phase, servers })
        .collect())
}

/// What a phase does, for its progress line.
fn describe(phase: Phase, s: &Settings) -> String {
    match phase {
        Phase::SeqWrite => format!(
            "{} in {} writes, then fsync",
            fmt_bytes(s.size),
            fmt_bytes(s.block)
        ),
        Phase::SeqRead => format!("{} in {} reads", fmt_bytes(s.size), fmt_bytes(s.block)),
        Phase::RandWrite => format!("{} random 4 KiB writes, then fsync", s.rand_ops),
        Phase::RandRead => format!("{} random 4 KiB reads", s.rand_ops),
        Phase::MetaCreate => format!(
            "{} files of {} by {} task(s)",
            s.files,
            fmt_bytes(s.file_size),
            s.tasks
        ),
        Phase::MetaStat => format!("{} lookups by {} task(s)", s.files, s.tasks),
        Phase::MetaRemove => format!("{} removes by {} task(s)", s.files, s.tasks),
    }
}

/// Makes, untimed, what `phase` needs and no earlier phase of the run made: the data file
/// when seq-write is not measured, the metadata directory, and its files when meta-create
/// is not measured.
async fn prepare(
    phase: Phase,
    t: &Target,
    st: &mut RunState,
    run: &Run<'_>,
) -> Result<(), BenchError> {
    if phase.uses_data_file() {
        if phase != Phase::SeqWrite && !st.data {
            run.line(format_args!("{}: writing the data file (untimed)", t.label));
            phases::seq_write(t, &data_name(run.n), run.s, run.payload).await?;
            st.data = true;
        }
        return Ok(());
    }
    let dir = meta_dir(t, st, run.n).await?;
    if phase != Phase::MetaCreate && !st.meta_files {
        run.line(format_args!(
            "{}: creating {} files (untimed)",
            t.label, run.s.files
        ));
        phases::meta(
            Phase::MetaCreate,
            t,
            &dir,
            &meta_dir_name(run.n),
            run.s,
            run.meta_payload.clone(),
        )
        .await?;
        st.meta_files = true;
    }
    Ok(())
}

/// The run's metadata directory, made on first use.
async fn meta_dir(t: &Target, st: &mut RunState, run: u64) -> Result<Node, BenchError> {
    if let Some(dir) = &st.meta_dir {
        return Ok(dir.clone());
    }
    let name = meta_dir_name(run);
    let (dir, _) = t
        .client
        .mkdir_in(&t.dir, &name, 0o755)
        .await
        .map_err(|e| BenchError::nfs(t.url_of(&name), "making the metadata directory", e))?;
    st.meta_dir = Some(dir.clone());
    Ok(dir)
}

/// Measures `phase` (its prerequisites made).
async fn measure(
    phase: Phase,
    t: &Target,
    st: &mut RunState,
    run: &Run<'_>,
) -> Result<Measured, BenchError> {
    let (s, data) = (run.s, data_name(run.n));
    // The random offsets of run r are the same on both servers.
    let seed = run.n;
    match phase {
        Phase::SeqWrite => {
            let m = phases::seq_write(t, &data, s, run.payload).await?;
            st.data = true;
            Ok(m)
        }
        Phase::SeqRead => phases::seq_read(t, &data, s).await,
        Phase::RandWrite => phases::rand_write(t, &data, s, seed, run.payload).await,
        Phase::RandRead => phases::rand_read(t, &data, s, seed).await,
        Phase::MetaCreate | Phase::MetaStat | Phase::MetaRemove => {
            let dir = meta_dir(t, st, run.n).await?;
            let name = meta_dir_name(run.n);
            let m = phases::meta(phase, t, &dir, &name, s, run.meta_payload.clone()).await?;
            st.meta_files = phase != Phase::MetaRemove;
            Ok(m)
        }
    }
}

/// Removes, untimed, what run `run` made on `t` (its files when meta-remove did not).
async fn finish_run(
    t: &Target,
    st: &mut RunState,
    s: &Settings,
    run: u64,
) -> Result<(), BenchError> {
    if let Some(dir) = st.meta_dir.take() {
        let name = meta_dir_name(run);
        if st.meta_files {
            phases::meta(Phase::MetaRemove, t, &dir, &name, s, Bytes::new()).await?;
            st.meta_files = false;
        }
        t.client
            .rmdir_in(&t.dir, &name)
            .await
            .map_err(|e| BenchError::nfs(t.url_of(&name), "removing the metadata directory", e))?;
    }
    if std::mem::take(&mut st.data) {
        let name = data_name(run);
        t.client
            .remove_in(&t.dir, &name)
            .await
            .map_err(|e| BenchError::nfs(t.url_of(&name), "removing the data file", e))?;
    }
    Ok(())
}

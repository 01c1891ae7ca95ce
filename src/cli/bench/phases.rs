//! The measurements: each phase on one server, timed on the monotonic clock, with the time
//! of every request. Only the phase's own requests are inside the timed part: opening the
//! data file before and closing it after are not (they are one OPEN and one CLOSE against
//! hundreds of requests), the final fsync of a write phase is (data not yet stable on the
//! server has not been written in any sense a user relies on).
//!
//! How each phase uses the library, and so what its latencies are:
//!
//! - seq-write and seq-read go through the streaming path, [`File::write_at`] with its
//!   write-behind buffer and [`File::read_at`] with its read-ahead, as `pnfs cp` does: a
//!   request's latency is the time the call took, which is short while the library keeps
//!   ahead and long when it waits for the server. Throughput is what an application
//!   streaming a file gets.
//! - rand-write and rand-read send each 4 KiB request to the server and wait for its reply
//!   ([`File::write_list`] and [`File::read_list`] of one extent: one WRITE or READ, no
//!   cache), one at a time: the latency is the server's round trip, and IOPS at queue depth
//!   one.
//! - The meta phases are one call each (create: OPEN with create, the data if any, close
//!   with COMMIT; stat: LOOKUP with GETATTR; remove: REMOVE), spread over `--tasks` tasks on
//!   one client.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use client::{Client, File, Node, OpenOptions};

use super::cpu::Cpu;
use super::error::BenchError;
use super::settings::{Phase, Settings, RAND_BLOCK};
use super::workdir::Target;
use crate::cli::rng::Rng;

/// What one phase measured on one server in one run.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Measured {
    /// The timed part, from the first request to the last reply (and the final COMMIT's).
    pub elapsed: Duration,
    /// Requests (sequential and random phases) or files (metadata phases).
    pub ops: u64,
    /// Bytes moved (0 for stat and remove).
    pub bytes: u64,
    /// Each request's time, in the order they ended.
    pub latencies: Vec<Duration>,
    /// The final fsync's part of `elapsed` (write phases).
    pub commit: Option<Duration>,
    /// CPU the client and the server spent on the phase (its untimed open and close
    /// included), set by the caller ([`super::cpu`]).
    pub cpu: Cpu,
}

impl Measured {
    /// The phase's figure: MB/s (10^6 bytes a second) for the sequential phases, requests a
    /// second for the random ones, files a second for the metadata ones.
    pub(crate) fn throughput(&self, phase: Phase) -> f64 {
        let secs = self.elapsed.as_secs_f64().max(1e-9);
        match phase {
            Phase::SeqWrite | Phase::SeqRead => self.bytes as f64 / secs / 1e6,
            _ => self.ops as f64 / secs,
        }
    }
}

/// `count` offsets of 4 KiB requests inside a file of `size` bytes (at least 4 KiB): aligned
/// to 4 KiB, uniformly spread, from `seed`.
pub(crate) fn random_offsets(size: u64, count: u64, seed: u64) -> Vec<u64> {
    let slots = (size / RAND_BLOCK).max(1);
    let mut r = Rng::new(seed);
    (0..count)
        .map(|_| (r.next() % slots) * RAND_BLOCK)
        .collect()
}

/// Writes the data file `name` of `s.size` bytes in `s.block` requests with `payload`
/// (at least a block long), then fsync; the file is created (or truncated) first.
pub(crate) async fn seq_write(
    t: &Target,
    name: &str,
    s: &Settings,
    payload: &Bytes,
) -> Result<Measured, BenchError> {
    let what = Phase::SeqWrite.name();
    let err = |e| BenchError::nfs(t.url_of(name), what, e);
    let f = t
        .client
        .create_in(&t.dir, name, &OpenOptions::create())
        .await
        .map_err(err)?;
    let mut latencies = Vec::with_capacity(s.size.div_ceil(s.block) as usize);
    let start = Instant::now();
    let mut off = 0;
    while off < s.size {
        let n = s.block.min(s.size - off);
        let t0 = Instant::now();
        f.write_at(off, payload.slice(..n as usize))
            .await
            .map_err(err)?;
        latencies.push(t0.elapsed());
        off += n;
    }
    synced(f, start, latencies, s.size).await.map_err(err)
}

/// The end of a write phase: fsync inside the timed part (see the module documentation), then
/// close outside it.
async fn synced(
    f: File,
    start: Instant,
    latencies: Vec<Duration>,
    bytes: u64,
) -> Result<Measured, client::Error> {
    let c0 = Instant::now();
    f.fsync().await?;
    let commit = c0.elapsed();
    let elapsed = start.elapsed();
    f.close().await?;
    Ok(Measured {
        elapsed,
        ops: latencies.len() as u64,
        bytes,
        latencies,
        commit: Some(commit),
        cpu: Cpu::default(),
    })
}

/// Reads the data file `name` from start to end in `s.block` requests.
pub(crate) async fn seq_read(t: &Target, name: &str, s: &Settings) -> Result<Measured, BenchError> {
    let what = Phase::SeqRead.name();
    let err = |e| BenchError::nfs(t.url_of(name), what, e);
    let f = open(t, name, &OpenOptions::read()).await.map_err(err)?;
    let mut latencies = Vec::with_capacity(s.size.div_ceil(s.block) as usize);
    let start = Instant::now();
    let mut off = 0;
    while off < s.size {
        let n = s.block.min(s.size - off);
        let t0 = Instant::now();
        let got = f.read_at(off, n).await.map_err(err)?;
        latencies.push(t0.elapsed());
        check_len(t, name, what, off, got.len(), n)?;
        off += n;
    }
    let elapsed = start.elapsed();
    f.close().await.map_err(err)?;
    Ok(Measured {
        elapsed,
        ops: latencies.len() as u64,
        bytes: s.size,
        latencies,
        commit: None,
        cpu: Cpu::default(),
    })
}

/// `s.rand_ops` 4 KiB writes of `payload`'s first 4 KiB at the offsets of `seed`, each sent
/// and answered before the next, then fsync.
pub(crate) async fn rand_write(
    t: &Target,
    name: &str,
    s: &Settings,
    seed: u64,
    payload: &Bytes,
) -> Result<Measured, BenchError> {
    let what = Phase::RandWrite.name();
    let err = |e| BenchError::nfs(t.url_of(name), what, e);
    let f = open(t, name, &OpenOptions::read_write())
        .await
        .map_err(err)?;
    let chunk = payload.slice(..RAND_BLOCK as usize);
    let offsets = random_offsets(s.size, s.rand_ops, seed);
    let mut latencies = Vec::with_capacity(offsets.len());
    let start = Instant::now();
    for &off in &offsets {
        let t0 = Instant::now();
        f.write_list(&[(off, chunk.clone())]).await.map_err(err)?;
        latencies.push(t0.elapsed());
    }
    let bytes = offsets.len() as u64 * RAND_BLOCK;
    synced(f, start, latencies, bytes).await.map_err(err)
}

/// `s.rand_ops` 4 KiB reads at the offsets of `seed`, each from the server (no cache).
pub(crate) async fn rand_read(
    t: &Target,
    name: &str,
    s: &Settings,
    seed: u64,
) -> Result<Measured, BenchError> {
    let what = Phase::RandRead.name();
    let err = |e| BenchError::nfs(t.url_of(name), what, e);
    let f = open(t, name, &OpenOptions::read()).await.map_err(err)?;
    let offsets = random_offsets(s.size, s.rand_ops, seed);
    let mut latencies = Vec::with_capacity(offsets.len());
    let start = Instant::now();
    for &off in &offsets {
        let want = RAND_BLOCK.min(s.size - off);
        let t0 = Instant::now();
        let got = f.read_list(&[(off, want)]).await.map_err(err)?;
        latencies.push(t0.elapsed());
        let len = got.first().map_or(0, |b| b.len());
        check_len(t, name, what, off, len, want)?;
    }
    let elapsed = start.elapsed();
    f.close().await.map_err(err)?;
    Ok(Measured {
        elapsed,
        ops: offsets.len() as u64,
        bytes: offsets.len() as u64 * RAND_BLOCK,
        latencies,
        commit: None,
        cpu: Cpu::default(),
    })
}

async fn open(t: &Target, name: &str, how: &OpenOptions) -> client::Result<File> {
    t.client.create_in(&t.dir, name, how).await
}

fn check_len(
    t: &Target,
    name: &str,
    phase: &'static str,
    offset: u64,
    got: usize,
    want: u64,
) -> Result<(), BenchError> {
    if got as u64 == want {
        return Ok(());
    }
    Err(BenchError::ShortRead {
        url: t.url_of(name).to_string(),
        phase,
        offset,
        got: got as u64,
        want,
    })
}

/// The name of file `i` of the metadata phases.
pub(crate) fn meta_name(i: u64) -> String {
    format!("f{i:07}")
}

/// One metadata operation on file `name` of directory `dir`.
type MetaOp = Arc<
    dyn Fn(Client, Node, String) -> Pin<Box<dyn Future<Output = client::Result<()>> + Send>>
        + Send
        + Sync,
>;

/// The operation of a metadata phase; `payload` is what create writes into each file.
fn meta_op(phase: Phase, payload: Bytes) -> MetaOp {
    match phase {
        Phase::MetaStat => Arc::new(|c, dir, name| {
            Box::pin(async move { c.lookup_in(&dir, &name).await.map(|_| ()) })
        }),
        Phase::MetaRemove => {
            Arc::new(|c, dir, name| Box::pin(async move { c.remove_in(&dir, &name).await }))
        }
        // Creation (also of the files a stat or remove phase needs when meta-create is not
        // measured).
        _ => Arc::new(move |c, dir, name| {
            let payload = payload.clone();
            Box::pin(async move {
                let how = OpenOptions {
                    read: false,
                    ..OpenOptions::create()
                };
                let f = c.create_in(&dir, &name, &how).await?;
                if !payload.is_empty() {
                    f.write_at(0, payload).await?;
                }
                // Close sends the data and COMMITs it.
                f.close().await
            })
        }),
    }
}

/// Runs metadata phase `phase` on the `s.files` files of directory `dir` (of `t`'s
/// benchmark directory, named `dir_name` there), file i by task i mod `s.tasks`; each file
/// of create gets `payload`.
pub(crate) async fn meta(
    phase: Phase,
    t: &Target,
    dir: &Node,
    dir_name: &str,
    s: &Settings,
    payload: Bytes,
) -> Result<Measured, BenchError> {
    let op = meta_op(phase, payload.clone());
    let start = Instant::now();
    let mut tasks = Vec::with_capacity(s.tasks as usize);
    for task in 0..s.tasks {
        let (c, dir, op) = (t.client.clone(), dir.clone(), op.clone());
        let (files, tasks_n) = (s.files, s.tasks);
        tasks.push(tokio::spawn(async move {
            let mut latencies = Vec::with_capacity((files / tasks_n + 1) as usize);
            let mut i = task;
            while i < files {
                let name = meta_name(i);
                let t0 = Instant::now();
                if let Err(e) = op(c.clone(), dir.clone(), name.clone()).await {
                    return Err((name, e));
                }
                latencies.push(t0.elapsed());
                i += tasks_n;
            }
            Ok(latencies)
        }));
    }
    let mut latencies = Vec::with_capacity(s.files as usize);
    let mut first_error = None;
    for task in tasks {
        match task.await {
            Ok(Ok(l)) => latencies.extend(l),
            Ok(Err((name, e))) => {
                first_error.get_or_insert_with(|| {
                    BenchError::nfs(t.url_of(&format!("{dir_name}/{name}")), phase.name(), e)
                });
            }
            Err(e) => {
                first_error.get_or_insert_with(|| BenchError::Task(phase.name(), e.to_string()));
            }
        }
    }
    let elapsed = start.elapsed();
    if let Some(e) = first_error {
        return Err(e);
    }
    let bytes = if phase == Phase::MetaCreate {
        s.files * payload.len() as u64
    } else {
        0
    };
    Ok(Measured {
        elapsed,
        ops: s.files,
        bytes,
        latencies,
        commit: None,
        cpu: Cpu::default(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn random_offsets_are_aligned_inside_the_file_and_repeatable() {
        let size = 1 << 20;
        let a = random_offsets(size, 1000, 1);
        assert_eq!(
            a,
            random_offsets(size, 1000, 1),
            "the same seed, the same offsets"
        );
        assert_ne!(a, random_offsets(size, 1000, 2));
        assert!(a
            .iter()
            .all(|o| o % RAND_BLOCK == 0 && o + RAND_BLOCK <= size));
        // Spread over the file: 1000 draws from 256 slots hit most of them.
        let mut seen = a.clone();
        seen.sort_unstable();
        seen.dedup();
        assert!(seen.len() > 200, "{}", seen.len());
        // A file of 4 KiB plus a bit: every request at 0.
        assert!(random_offsets(4097, 10, 3).iter().all(|&o| o == 0));
    }

    #[test]
    fn throughput_is_in_the_phase_unit() {
        let m = Measured {
            elapsed: Duration::from_secs(2),
            ops: 100,
            bytes: 200_000_000,
            latencies: vec![],
            commit: None,
            cpu: Cpu::default(),
        };
        assert_eq!(m.throughput(Phase::SeqWrite), 100.0);
        assert_eq!(m.throughput(Phase::RandRead), 50.0);
        assert_eq!(m.throughput(Phase::MetaCreate), 50.0);
    }

    #[test]
    fn names_sort() {
        assert!(meta_name(9) < meta_name(10));
    }
}

//! The results of a benchmark as the table, the JSON document and the chart all read them:
//! per phase, per server, every run's measurement, with the summaries computed once here.

use std::time::Duration;

use super::cpu::Cpu;
use super::phases::Measured;
use super::settings::{Phase, Settings};
use super::stats::{ratio, Latency, Spread};

/// One server of the run, as the report names it.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct ServerInfo {
    /// `A`, or `B` for `--compare`'s.
    pub label: String,
    /// The URL given.
    pub url: String,
    /// The benchmark's directory there (removed at the end).
    pub bench_dir: String,
    /// True when the client used file layouts (I/O to the data servers).
    pub pnfs: bool,
    /// Bytes the client wrote and read through the data servers and the MDS over the whole
    /// benchmark, untimed parts included: where the bytes went.
    pub traffic: Traffic,
}

/// Where the client's bytes went.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Traffic {
    /// Written to data servers (through layouts).
    pub ds_written: u64,
    /// Read from data servers.
    pub ds_read: u64,
    /// Written through the MDS (or a server without layouts).
    pub mds_written: u64,
    /// Read through the MDS.
    pub mds_read: u64,
}

/// One phase on one server: every run.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct ServerRuns {
    /// The runs, in order.
    pub runs: Vec<Measured>,
}

impl ServerRuns {
    /// The phase's figure in each run.
    pub(crate) fn throughputs(&self, phase: Phase) -> Vec<f64> {
        self.runs.iter().map(|m| m.throughput(phase)).collect()
    }

    /// Median, minimum and maximum of the figure.
    pub(crate) fn spread(&self, phase: Phase) -> Option<Spread> {
        Spread::of(&self.throughputs(phase))
    }

    /// CPU per unit of work ([`cpu_unit`]) in each run, the client's or the server's
    /// (`side`); `None` when some run was not measured on that side.
    pub(crate) fn cpu_per_unit(
        &self,
        phase: Phase,
        side: fn(&Cpu) -> Option<Duration>,
    ) -> Option<Vec<f64>> {
        self.runs
            .iter()
            .map(|m| {
                let secs = side(&m.cpu)?.as_secs_f64();
                match phase {
                    Phase::SeqWrite | Phase::SeqRead if m.bytes > 0 => {
                        Some(secs / (m.bytes as f64 / GIB))
                    }
                    Phase::SeqWrite | Phase::SeqRead => None,
                    _ => Some(secs * 1e6 / m.ops.max(1) as f64),
                }
            })
            .collect()
    }

    /// CPU seconds of each run, the client's or the server's (`side`); `None` when some run
    /// was not measured on that side.
    pub(crate) fn cpu_seconds(&self, side: fn(&Cpu) -> Option<Duration>) -> Option<Vec<f64>> {
        self.runs
            .iter()
            .map(|m| side(&m.cpu).map(|d| d.as_secs_f64()))
            .collect()
    }

    /// Latency percentiles over every request of every run.
    pub(crate) fn latency(&self) -> Option<Latency> {
        let all: Vec<Duration> = self
            .runs
            .iter()
            .flat_map(|m| m.latencies.iter().copied())
            .collect();
        Latency::of(&all)
    }
}

/// Bytes in a gibibyte, the unit of the sequential phases' CPU figures.
const GIB: f64 = (1u64 << 30) as f64;

/// What a phase's CPU figures are per ([`ServerRuns::cpu_per_unit`]): CPU seconds per GiB
/// moved for the sequential phases (comparable with iperf3's), microseconds per request or
/// file for the others.
pub(crate) fn cpu_unit(phase: Phase) -> &'static str {
    match phase {
        Phase::SeqWrite | Phase::SeqRead => "s/GiB",
        Phase::RandWrite | Phase::RandRead => "us/req",
        Phase::MetaCreate | Phase::MetaStat | Phase::MetaRemove => "us/file",
    }
}

/// The client's side of a [`Cpu`], for [`ServerRuns::cpu_per_unit`].
pub(crate) fn client_side(c: &Cpu) -> Option<Duration> {
    c.client
}

/// The server's side of a [`Cpu`].
pub(crate) fn server_side(c: &Cpu) -> Option<Duration> {
    c.server
}

/// One phase: its results on each server, in the order of [`Report::servers`].
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct PhaseResult {
    /// Which.
    pub phase: Phase,
    /// Per server.
    pub servers: Vec<ServerRuns>,
}

impl PhaseResult {
    /// A's median over B's, with two servers.
    pub(crate) fn ratio(&self) -> Option<f64> {
        match self.servers.as_slice() {
            [a, b] => ratio(a.spread(self.phase)?.median, b.spread(self.phase)?.median),
            _ => None,
        }
    }
}

/// A whole benchmark.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Report {
    /// What was asked.
    pub settings: Settings,
    /// The servers (one, or two with `--compare`).
    pub servers: Vec<ServerInfo>,
    /// The phases run, in order.
    pub phases: Vec<PhaseResult>,
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::cli::bench::settings::Phase;

    /// A measurement of `ops` requests of `lat_ms` each (for the tests of every output).
    pub(crate) fn measured(secs: f64, ops: u64, bytes: u64, lat_ms: &[u64]) -> Measured {
        Measured {
            elapsed: Duration::from_secs_f64(secs),
            ops,
            bytes,
            latencies: lat_ms.iter().map(|&m| Duration::from_millis(m)).collect(),
            commit: None,
            cpu: Cpu::default(),
        }
    }

    /// `r` with its first server only.
    pub(crate) fn one_server(mut r: Report) -> Report {
        r.servers.truncate(1);
        for p in &mut r.phases {
            p.servers.truncate(1);
        }
        r
    }

    /// A report of two servers, two phases and three runs.
    pub(crate) fn sample() -> Report {
        let settings = Settings {
            phases: vec![Phase::SeqWrite, Phase::MetaCreate],
            size: 4 << 20,
            block: 1 << 20,
            rand_ops: 50,
            files: 20,
            file_size: 0,
            tasks: 1,
            runs: 3,
            delay: std::time::Duration::ZERO,
            no_delegations: false,
            server_pids: vec![Vec::new(), Vec::new()],
        };
        let server = |label: &str, port: u16, pnfs: bool| ServerInfo {
            label: label.into(),
            url: format!("nfs://127.0.0.1:{port}/"),
            bench_dir: format!("nfs://127.0.0.1:{port}/pnfs-bench-1-0"),
            pnfs,
            traffic: Traffic {
                ds_written: if pnfs { 12 << 20 } else { 0 },
                mds_written: if pnfs { 0 } else { 12 << 20 },
                ..Traffic::default()
            },
        };
        let mb = 4_000_000;
        let seq = |secs: [f64; 3]| ServerRuns {
            runs: secs
                .iter()
                .map(|&s| {
                    let mut m = measured(s, 4, mb, &[1, 2, 3, 4]);
                    m.commit = Some(Duration::from_millis(5));
                    m
                })
                .collect(),
        };
        let meta = |secs: [f64; 3]| ServerRuns {
            runs: secs.iter().map(|&s| measured(s, 20, 0, &[1; 20])).collect(),
        };
        Report {
            settings,
            servers: vec![server("A", 20490, true), server("B", 2049, false)],
            phases: vec![
                PhaseResult {
                    phase: Phase::SeqWrite,
                    // 40, 20 and 80 MB/s; and 10, 20, 40.
                    servers: vec![seq([0.1, 0.2, 0.05]), seq([0.4, 0.2, 0.1])],
                },
                PhaseResult {
                    phase: Phase::MetaCreate,
                    // 200, 100, 400 files/s; 100 each.
                    servers: vec![meta([0.1, 0.2, 0.05]), meta([0.2, 0.2, 0.2])],
                },
            ],
        }
    }

    #[test]
    fn summaries_over_runs_and_the_ratio_of_medians() {
        let r = sample();
        let seq = &r.phases[0];
        let close = |x: f64, y: f64| (x - y).abs() < 1e-9 * y.abs().max(1.0);
        let a = seq.servers[0].spread(Phase::SeqWrite).unwrap();
        assert!(
            close(a.median, 40.0) && close(a.min, 20.0) && close(a.max, 80.0),
            "{a:?}"
        );
        let b = seq.servers[1].spread(Phase::SeqWrite).unwrap();
        assert!(
            close(b.median, 20.0) && close(b.min, 10.0) && close(b.max, 40.0),
            "{b:?}"
        );
        assert!(close(seq.ratio().unwrap(), 2.0));
        let lat = seq.servers[0].latency().unwrap();
        assert_eq!(lat.samples, 12, "every request of every run");
        assert_eq!(lat.p50, Duration::from_millis(2));
        assert_eq!(lat.p99, Duration::from_millis(4));
        assert!(close(r.phases[1].ratio().unwrap(), 2.0));
        let one = PhaseResult {
            phase: Phase::SeqWrite,
            servers: vec![seq.servers[0].clone()],
        };
        assert_eq!(one.ratio(), None, "no ratio without a second server");
    }
}

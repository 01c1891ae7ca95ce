//! `pnfs bench --json`: the report as one JSON document for scripts and dashboards.
//!
//! The field names are a stable interface (documented in docs/bench.md); `format` names
//! the version of the layout, and a change that renames or removes a field would bump it.
//! Adding fields does not. Times are in seconds (`*_seconds`) or milliseconds
//! (`latency_ms`), sizes in bytes (`*_bytes`).

use serde::Serialize;

use super::report::{client_side, server_side, Report, ServerRuns};
use super::settings::{Phase, RAND_BLOCK};

/// The value of `format`.
pub(crate) const FORMAT: &str = "pnfs-bench/1";

#[derive(Serialize)]
struct Document<'a> {
    format: &'static str,
    settings: Settings<'a>,
    servers: Vec<Server<'a>>,
    phases: Vec<PhaseDoc<'a>>,
}

#[derive(Serialize)]
struct Settings<'a> {
    phases: Vec<&'a str>,
    size_bytes: u64,
    block_bytes: u64,
    rand_ops: u64,
    rand_block_bytes: u64,
    files: u64,
    file_size_bytes: u64,
    tasks: u64,
    runs: u64,
    delay_seconds: f64,
    no_delegations: bool,
}

#[derive(Serialize)]
struct Server<'a> {
    label: &'a str,
    url: &'a str,
    bench_dir: &'a str,
    pnfs: bool,
    ds_bytes_written: u64,
    ds_bytes_read: u64,
    mds_bytes_written: u64,
    mds_bytes_read: u64,
}

#[derive(Serialize)]
struct PhaseDoc<'a> {
    phase: &'static str,
    unit: &'static str,
    includes_commit: bool,
    results: Vec<ResultDoc<'a>>,
    ratio: Option<f64>,
}

#[derive(Serialize)]
struct ResultDoc<'a> {
    server: &'a str,
    median: Option<f64>,
    min: Option<f64>,
    max: Option<f64>,
    runs: Vec<f64>,
    ops_per_run: Vec<u64>,
    bytes_per_run: Vec<u64>,
    seconds_per_run: Vec<f64>,
    commit_seconds_per_run: Option<Vec<f64>>,
    client_cpu_seconds_per_run: Option<Vec<f64>>,
    server_cpu_seconds_per_run: Option<Vec<f64>>,
    latency_ms: Option<LatencyMs>,
}

#[derive(Serialize)]
struct LatencyMs {
    samples: usize,
    p50: f64,
    p90: f64,
    p99: f64,
    max: f64,
}

fn result<'a>(phase: Phase, server: &'a str, r: &ServerRuns) -> ResultDoc<'a> {
    let spread = r.spread(phase);
    let ms = |d: std::time::Duration| d.as_secs_f64() * 1e3;
    ResultDoc {
        server,
        median: spread.map(|s| s.median),
        min: spread.map(|s| s.min),
        max: spread.map(|s| s.max),
        runs: r.throughputs(phase),
        ops_per_run: r.runs.iter().map(|m| m.ops).collect(),
        bytes_per_run: r.runs.iter().map(|m| m.bytes).collect(),
        seconds_per_run: r.runs.iter().map(|m| m.elapsed.as_secs_f64()).collect(),
        commit_seconds_per_run: phase.ends_with_commit().then(|| {
            r.runs
                .iter()
                .map(|m| m.commit.map_or(0.0, |c| c.as_secs_f64()))
                .collect()
        }),
        client_cpu_seconds_per_run: r.cpu_seconds(client_side),
        server_cpu_seconds_per_run: r.cpu_seconds(server_side),
        latency_ms: r.latency().map(|l| LatencyMs {
            samples: l.samples,
            p50: ms(l.p50),
            p90: ms(l.p90),
            p99: ms(l.p99),
            max: ms(l.max),
        }),
    }
}

/// The report as a JSON document (pretty-printed, ending in a newline).
pub(crate) fn render(r: &Report) -> String {
    let s = &r.settings;
    let doc = Document {
        format: FORMAT,
        settings: Settings {
            phases: s.phases.iter().map(|p| p.name()).collect(),
            size_bytes: s.size,
            block_bytes: s.block,
            rand_ops: s.rand_ops,
            rand_block_bytes: RAND_BLOCK,
            files: s.files,
            file_size_bytes: s.file_size,
            tasks: s.tasks,
            runs: s.runs,
            delay_seconds: s.delay.as_secs_f64(),
            no_delegations: s.no_delegations,
        },
        servers: r
            .servers
            .iter()
            .map(|v| Server {
                label: &v.label,
                url: &v.url,
                bench_dir: &v.bench_dir,
                pnfs: v.pnfs,
                ds_bytes_written: v.traffic.ds_written,
                ds_bytes_read: v.traffic.ds_read,
                mds_bytes_written: v.traffic.mds_written,
                mds_bytes_read: v.traffic.mds_read,
            })
            .collect(),
        phases: r
            .phases
            .iter()
            .map(|ph| PhaseDoc {
                phase: ph.phase.name(),
                unit: ph.phase.unit(),
                includes_commit: ph.phase.ends_with_commit(),
                results: r
                    .servers
                    .iter()
                    .zip(&ph.servers)
                    .map(|(srv, runs)| result(ph.phase, &srv.label, runs))
                    .collect(),
                ratio: ph.ratio(),
            })
            .collect(),
    };
    // Serialising plain structs of numbers and strings cannot fail; NaN would be `null`.
    let mut text = serde_json::to_string_pretty(&doc).unwrap_or_else(|e| {
        serde_json::json!({ "format": FORMAT, "error": e.to_string() }).to_string()
    });
    text.push('\n');
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::bench::report::tests::{one_server, sample};
    use serde_json::Value;

    #[test]
    fn the_document_has_its_documented_shape() {
        let v: Value = serde_json::from_str(&render(&sample())).unwrap();
        assert_eq!(v["format"], "pnfs-bench/1");
        let s = &v["settings"];
        assert_eq!(s["phases"], serde_json::json!(["seq-write", "meta-create"]));
        for (k, want) in [
            ("size_bytes", 4 << 20),
            ("block_bytes", 1 << 20),
            ("rand_ops", 50),
            ("rand_block_bytes", 4096),
            ("files", 20),
            ("file_size_bytes", 0),
            ("tasks", 1),
            ("runs", 3),
        ] {
            assert_eq!(s[k], want, "{k}");
        }
        assert_eq!(s["no_delegations"], false);
        assert_eq!(s["delay_seconds"], 0.0);
        let servers = v["servers"].as_array().unwrap();
        assert_eq!(servers.len(), 2);
        assert_eq!(servers[0]["label"], "A");
        assert_eq!(servers[0]["url"], "nfs://127.0.0.1:20490/");
        assert_eq!(
            servers[0]["bench_dir"],
            "nfs://127.0.0.1:20490/pnfs-bench-1-0"
        );
        assert_eq!(servers[0]["pnfs"], true);
        assert_eq!(servers[0]["ds_bytes_written"], 12 << 20);
        assert_eq!(servers[1]["mds_bytes_written"], 12 << 20);
        for k in ["ds_bytes_read", "mds_bytes_read"] {
            assert!(servers[1][k].is_u64(), "{k}");
        }

        let phases = v["phases"].as_array().unwrap();
        assert_eq!(phases.len(), 2);
        let seq = &phases[0];
        assert_eq!(seq["phase"], "seq-write");
        assert_eq!(seq["unit"], "MB/s");
        assert_eq!(seq["includes_commit"], true);
        assert!((seq["ratio"].as_f64().unwrap() - 2.0).abs() < 1e-9);
        let a = &seq["results"][0];
        assert_eq!(a["server"], "A");
        assert!((a["median"].as_f64().unwrap() - 40.0).abs() < 1e-9);
        assert!((a["min"].as_f64().unwrap() - 20.0).abs() < 1e-9);
        assert!((a["max"].as_f64().unwrap() - 80.0).abs() < 1e-9);
        assert_eq!(a["runs"].as_array().unwrap().len(), 3);
        assert_eq!(a["ops_per_run"], serde_json::json!([4, 4, 4]));
        assert_eq!(a["bytes_per_run"][0], 4_000_000);
        assert!((a["seconds_per_run"][1].as_f64().unwrap() - 0.2).abs() < 1e-9);
        assert!((a["commit_seconds_per_run"][0].as_f64().unwrap() - 0.005).abs() < 1e-9);
        let l = &a["latency_ms"];
        assert_eq!(l["samples"], 12);
        for (k, want) in [("p50", 2.0), ("p90", 4.0), ("p99", 4.0), ("max", 4.0)] {
            assert!((l[k].as_f64().unwrap() - want).abs() < 1e-9, "{k}");
        }
        let meta = &phases[1];
        assert_eq!(meta["unit"], "files/s");
        assert_eq!(meta["includes_commit"], false);
        assert!(meta["results"][1]["commit_seconds_per_run"].is_null());
        assert_eq!(meta["results"][1]["server"], "B");
        for k in ["client_cpu_seconds_per_run", "server_cpu_seconds_per_run"] {
            assert!(a[k].is_null(), "{k}: nothing measured in the sample");
        }
    }

    #[test]
    fn cpu_seconds_are_per_run_and_null_for_a_side_not_measured() {
        let mut r = sample();
        for runs in &mut r.phases[0].servers {
            for (n, m) in runs.runs.iter_mut().enumerate() {
                m.cpu.client = Some(std::time::Duration::from_millis(10 * (n as u64 + 1)));
            }
        }
        let v: Value = serde_json::from_str(&render(&r)).unwrap();
        let a = &v["phases"][0]["results"][0];
        let got: Vec<f64> = a["client_cpu_seconds_per_run"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_f64().unwrap())
            .collect();
        assert_eq!(got, [0.01, 0.02, 0.03]);
        assert!(a["server_cpu_seconds_per_run"].is_null());
        assert!(v["phases"][1]["results"][0]["client_cpu_seconds_per_run"].is_null());
    }

    #[test]
    fn one_server_has_a_null_ratio() {
        let r = one_server(sample());
        let v: Value = serde_json::from_str(&render(&r)).unwrap();
        for p in v["phases"].as_array().unwrap() {
            assert!(p["ratio"].is_null());
            assert_eq!(p["results"].as_array().unwrap().len(), 1);
        }
    }
}

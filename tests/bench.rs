//! `pnfs bench` against `pnfs server` processes (an MDS and three data servers each, on
//! loopback): every phase measured, the bytes striped over the data servers, nothing left
//! in the export afterwards, `--compare` with a second server, the chart, and bad input.

mod support;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use support::*;

const PHASES: [&str; 7] = [
    "seq-write",
    "seq-read",
    "rand-write",
    "rand-read",
    "meta-create",
    "meta-stat",
    "meta-remove",
];

/// Tiny sizes: every phase, quickly.
const TINY: [&str; 8] = [
    "--size",
    "4MiB",
    "--files",
    "20",
    "--rand-ops",
    "50",
    "--runs",
    "1",
];

fn bench(args: &[&str]) -> std::process::Output {
    let mut all = vec!["bench"];
    all.extend_from_slice(args);
    pnfs(&all)
}

fn stdout_of(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr_of(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn json_of(out: &std::process::Output) -> Value {
    assert!(
        out.status.success(),
        "pnfs bench: {:?}\nstderr: {}",
        out.status,
        stderr_of(out)
    );
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", stdout_of(out)))
}

/// The export's root lists nothing.
fn assert_empty(s: &Server) {
    let listing = ok(&["ls", &s.url("/")]);
    assert!(
        listing.trim().is_empty(),
        "the benchmark left this behind: {listing}"
    );
}

/// Every phase of `doc`, in order, has one result per server with a throughput above 0
/// and latency percentiles.
fn assert_every_phase(doc: &Value, servers: usize) {
    let phases = doc["phases"].as_array().expect("phases");
    let names: Vec<&str> = phases
        .iter()
        .map(|p| p["phase"].as_str().unwrap())
        .collect();
    assert_eq!(names, PHASES);
    for p in phases {
        let results = p["results"].as_array().unwrap();
        assert_eq!(results.len(), servers, "{p}");
        for r in results {
            for k in ["median", "min", "max"] {
                let v = r[k].as_f64().unwrap_or_else(|| panic!("{k} in {r}"));
                assert!(v > 0.0, "{}: {k} = {v}", p["phase"]);
            }
            let l = &r["latency_ms"];
            assert!(l["samples"].as_u64().unwrap() > 0, "{p}");
            for k in ["p50", "p90", "p99", "max"] {
                assert!(l[k].as_f64().is_some(), "{k} in {l}");
            }
            assert!(l["p50"].as_f64() <= l["p99"].as_f64(), "{l}");
        }
        let commit = matches!(p["phase"].as_str(), Some("seq-write" | "rand-write"));
        assert_eq!(p["includes_commit"], commit, "{p}");
    }
}

/// The small-file path of issue 22, counted on the MDS's metrics: a 4 KiB file created,
/// written, closed, looked up and removed costs three COMPOUNDs (OPEN with its LAYOUTGET; the
/// stat's LOOKUP; the remove's DELEGRETURN, CLOSE and REMOVE in one, as the client knows the
/// file it created under that name and closed it under a write delegation), one FILE_SYNC
/// WRITE to a data server and no COMMIT, no LAYOUTRETURN (CLOSE returns a return-on-close
/// layout), no LAYOUTCOMMIT (the size of a file being removed does not matter), and two
/// commits of the metadata store, both durable (OPEN; the REMOVE, which deletes the file
/// nobody has open with its name): none deferred. Before issue 22: nine COMPOUNDs, a DS
/// COMMIT and 7.7 fsyncs.
#[test]
fn a_small_file_costs_three_round_trips_and_two_metadata_fsyncs() {
    const FILES: f64 = 40.0;
    let s = Server::start();
    let count = |page: &str, op: &str| metric_sum(page, "pnfs_ops_total", &[("op", op)]);
    let before = s.metrics();
    let out = bench(&[
        &s.url("/"),
        "--only",
        "meta",
        "--files",
        "40",
        "--file-size",
        "4KiB",
        "--runs",
        "1",
        "--json",
    ]);
    json_of(&out);
    let after = s.metrics();
    let delta = |op: &str| count(&after, op) - count(&before, op);
    let compounds = delta("OP_SEQUENCE");
    // Setting up and tearing down the session and the bench directory: a few more.
    assert!(
        compounds <= 3.0 * FILES + 20.0,
        "{compounds} COMPOUNDs for {FILES} files"
    );
    assert_eq!(delta("OP_LAYOUTGET"), FILES, "one per file, with its OPEN");
    assert_eq!(delta("OP_LAYOUTRETURN"), 0.0);
    assert_eq!(delta("OP_CLOSE"), FILES);
    assert_eq!(delta("OP_LAYOUTCOMMIT"), 0.0, "the files are removed");
    assert_eq!(
        delta("OP_LOOKUP"),
        FILES + 2.0,
        "the stat's, and the bench directory's"
    );
    let fsyncs = metric_sum(&after, "pnfs_store_commits_total", &[])
        - metric_sum(&before, "pnfs_store_commits_total", &[]);
    assert!(
        fsyncs <= 2.0 * FILES + 10.0,
        "{fsyncs} metadata fsyncs for {FILES} files"
    );
    // The settling of the files' sizes (none: deleted with their marks) and the removal of
    // their objects (one acknowledgement per data server and pass of the removal task, a
    // pass gathering 20 ms of removals) add a few, fewer than one per file however slow
    // the machine (before, every file cost two: its LAYOUTCOMMIT's and its orphan's).
    let deferred = metric_sum(&after, "pnfs_store_deferred_commits_total", &[])
        - metric_sum(&before, "pnfs_store_deferred_commits_total", &[]);
    assert!(
        deferred < FILES,
        "{deferred} deferred commits for {FILES} files"
    );
    // The data servers' counts reach the MDS with their HEALTH replies, every few seconds.
    let ds = |page: &str, op: &str| metric_sum(page, "pnfs_ds_ops_total", &[("op", op)]);
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let page = s.metrics();
        let writes = ds(&page, "OP_WRITE") - ds(&before, "OP_WRITE");
        if writes >= FILES {
            assert_eq!(writes, FILES, "one WRITE per file");
            assert_eq!(
                ds(&page, "OP_COMMIT") - ds(&before, "OP_COMMIT"),
                0.0,
                "FILE_SYNC: no COMMIT"
            );
            break;
        }
        assert!(Instant::now() < deadline, "{writes} WRITEs seen");
        std::thread::sleep(Duration::from_millis(500));
    }
}

#[test]
fn every_phase_against_a_striped_server_and_nothing_left_behind() {
    let s = Server::start();
    let mut args = vec![s.url("/")];
    args.extend(TINY.map(String::from));
    args.extend(["--json", "-v"].map(String::from));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = bench(&args);
    let doc = json_of(&out);
    assert_eq!(doc["format"], "pnfs-bench/1");
    assert_eq!(doc["settings"]["size_bytes"], 4 << 20);
    assert_eq!(doc["settings"]["files"], 20);
    assert_every_phase(&doc, 1);
    for p in doc["phases"].as_array().unwrap() {
        assert!(p["ratio"].is_null(), "no ratio without --compare: {p}");
    }
    let seq = &doc["phases"][0]["results"][0];
    assert_eq!(
        seq["ops_per_run"],
        serde_json::json!([4]),
        "4 MiB in 1 MiB writes"
    );
    assert_eq!(seq["bytes_per_run"], serde_json::json!([4 << 20]));
    assert!(seq["commit_seconds_per_run"][0].as_f64().unwrap() > 0.0);
    assert_eq!(
        doc["phases"][2]["results"][0]["ops_per_run"],
        serde_json::json!([50])
    );
    assert_eq!(
        doc["phases"][4]["results"][0]["ops_per_run"],
        serde_json::json!([20])
    );
    // JSON only on stdout; no progress lines with --json.
    let stderr = stderr_of(&out);
    assert!(!stderr.contains("run 1/1"), "{stderr}");

    // Through layouts, straight to the data servers: nothing written through the MDS.
    let server = &doc["servers"][0];
    assert_eq!(server["pnfs"], true, "{server}");
    assert!(
        server["ds_bytes_written"].as_u64().unwrap() >= 4 << 20,
        "{server}"
    );
    assert_eq!(server["mds_bytes_written"], 0, "{server}");
    assert_eq!(server["mds_bytes_read"], 0, "{server}");
    assert!(
        server["bench_dir"]
            .as_str()
            .unwrap()
            .starts_with(&s.url("/pnfs-bench-")),
        "{server}"
    );
    // Every data server took writes: the file was striped over all three (the MDS learns
    // their counts from their HEALTH replies, every few seconds).
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let page = s.metrics();
        let writes: Vec<f64> = (1..=3)
            .map(|ds| {
                metric_sum(
                    &page,
                    "pnfs_ds_ops_total",
                    &[("ds", &ds.to_string()), ("op", "OP_WRITE")],
                )
            })
            .collect();
        if writes.iter().all(|w| *w > 0.0) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "not every data server served WRITEs: {writes:?}"
        );
        std::thread::sleep(Duration::from_millis(500));
    }
    assert_empty(&s);

    // The other metadata case: 4 KiB files by four tasks, two runs, metadata only.
    let out = bench(&[
        &s.url("/"),
        "--only",
        "meta",
        "--files",
        "20",
        "--file-size",
        "4KiB",
        "--tasks",
        "4",
        "--runs",
        "2",
        "--json",
    ]);
    let doc = json_of(&out);
    let phases = doc["phases"].as_array().unwrap();
    let names: Vec<&str> = phases
        .iter()
        .map(|p| p["phase"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["meta-create", "meta-stat", "meta-remove"]);
    let create = &phases[0]["results"][0];
    assert_eq!(create["runs"].as_array().unwrap().len(), 2);
    assert_eq!(
        create["bytes_per_run"],
        serde_json::json!([20 * 4096, 20 * 4096])
    );
    assert_eq!(create["latency_ms"]["samples"], 40);
    assert_eq!(doc["settings"]["tasks"], 4);
    assert_empty(&s);

    // The table, with progress lines on stderr; stat and remove alone (the files they need
    // are made untimed). Then the CPU of each phase, the client's and the server's.
    let pid = s.pid().to_string();
    let out = bench(&[
        &s.url("/"),
        "--only",
        "meta-stat,meta-remove,seq-read",
        "--size",
        "2MiB",
        "--files",
        "10",
        "--runs",
        "1",
        "--server-pids",
        &pid,
    ]);
    let (stdout, stderr) = (stdout_of(&out), stderr_of(&out));
    assert!(out.status.success(), "{stderr}");
    let (figures, cpu) = stdout
        .split_once("CPU per GiB")
        .unwrap_or_else(|| panic!("no CPU table: {stdout}"));
    let rows_of = |t: &str| -> Vec<Vec<String>> {
        t.lines()
            .filter(|l| PHASES.iter().any(|p| l.starts_with(p)))
            .map(|l| l.split_whitespace().map(String::from).collect())
            .collect()
    };
    let rows = rows_of(figures);
    assert_eq!(rows.len(), 3, "{stdout}");
    assert!(rows[0][0] == "seq-read" && rows[2][0] == "meta-remove");
    assert!(stdout.contains("p50/p90/p99 ms"), "{stdout}");
    let cpu = rows_of(cpu);
    assert_eq!(cpu.len(), 3, "{stdout}");
    assert_eq!(cpu[0][..2], ["seq-read", "s/GiB"], "{stdout}");
    assert_eq!(cpu[1][..2], ["meta-stat", "us/file"], "{stdout}");
    for row in &cpu {
        // The client's and the server's figures: numbers (0 when a phase took less than
        // the kernel's hundredth of a second), not "-".
        for cell in &row[2..4] {
            assert!(cell.parse::<f64>().is_ok(), "{row:?}\n{stdout}");
        }
    }
    assert!(stderr.contains("run 1/1: meta-stat on A"), "{stderr}");
    assert!(stderr.contains("(untimed)"), "{stderr}");
    assert_empty(&s);

    // A URL naming a file: a clear error, exit 1, nothing made.
    let local = s.local("f");
    std::fs::write(&local, b"x").unwrap();
    ok(&["put", path_str(&local), &s.url("/f")]);
    let out = bench(&[&s.url("/f"), "--runs", "1"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr_of(&out).contains("not a directory"),
        "{}",
        stderr_of(&out)
    );
    ok(&["rm", &s.url("/f")]);
    assert_empty(&s);
}

#[test]
fn compare_runs_two_servers_side_by_side_and_draws_the_chart() {
    let (a, b) = (Server::start(), Server::start());
    let dir = tempfile::tempdir().unwrap();
    let svg = dir.path().join("bench.svg");
    let mut args = vec![a.url("/"), "--compare".into(), b.url("/")];
    args.extend(TINY.map(String::from));
    args.extend(["--json".into(), "--plot".into(), path_str(&svg).to_string()]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let doc = json_of(&bench(&args));
    assert_every_phase(&doc, 2);
    let servers = doc["servers"].as_array().unwrap();
    assert_eq!(servers[0]["label"], "A");
    assert_eq!(servers[0]["url"], a.url("/"));
    assert_eq!(servers[1]["label"], "B");
    assert_eq!(servers[1]["url"], b.url("/"));
    for p in doc["phases"].as_array().unwrap() {
        assert_eq!(p["results"][0]["server"], "A");
        assert_eq!(p["results"][1]["server"], "B");
        let ratio = p["ratio"]
            .as_f64()
            .unwrap_or_else(|| panic!("ratio in {p}"));
        let (ma, mb) = (
            p["results"][0]["median"].as_f64().unwrap(),
            p["results"][1]["median"].as_f64().unwrap(),
        );
        assert!((ratio - ma / mb).abs() < 1e-6 * ratio, "{p}");
    }
    let chart = std::fs::read_to_string(&svg).unwrap();
    assert!(
        chart.contains("<svg"),
        "not SVG: {}",
        &chart[..chart.len().min(200)]
    );
    for p in PHASES {
        assert!(chart.contains(p), "{p} not in the chart");
    }
    assert_empty(&a);
    assert_empty(&b);

    // The table: both servers' columns and the ratio; a PNG chart.
    let png = dir.path().join("bench.png");
    let out = bench(&[
        &a.url("/"),
        "--compare",
        &b.url("/"),
        "--only",
        "seq-write,meta-create",
        "--size",
        "2MiB",
        "--files",
        "10",
        "--runs",
        "1",
        "-q",
        "--plot",
        path_str(&png),
    ]);
    let stdout = stdout_of(&out);
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert!(stderr_of(&out).is_empty(), "-q: {}", stderr_of(&out));
    assert!(stdout.contains(&format!("A = {}", a.url("/"))), "{stdout}");
    assert!(stdout.contains(&format!("B = {}", b.url("/"))), "{stdout}");
    let head = stdout.lines().find(|l| l.starts_with("phase")).unwrap();
    for col in [
        "A median", "A min", "A max", "B median", "B min", "B max", "A/B",
    ] {
        assert!(head.contains(col), "{col} missing: {head}");
    }
    for phase in ["seq-write", "meta-create"] {
        let row = stdout.lines().find(|l| l.starts_with(phase)).unwrap();
        // phase, unit, 4 cells per server, the ratio.
        assert_eq!(row.split_whitespace().count(), 11, "{row}");
    }
    let bytes = std::fs::read(&png).unwrap();
    assert!(bytes.starts_with(b"\x89PNG\r\n\x1a\n"), "not a PNG");
    assert_empty(&a);
    assert_empty(&b);
}

#[test]
fn interrupted_runs_remove_their_directory() {
    let s = Server::start();
    // Large enough to be still writing when SIGINT comes.
    let mut child = Command::new(PNFS)
        .args(["bench", &s.url("/"), "--size", "2GiB", "--runs", "1"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let mut seen = Vec::new();
    loop {
        let line = rx
            .recv_timeout(Duration::from_secs(60))
            .unwrap_or_else(|_| panic!("no seq-write progress line: {seen:?}"));
        let started = line.contains("seq-write on A");
        seen.push(line);
        if started {
            break;
        }
    }
    // The directory is there while it runs.
    std::thread::sleep(Duration::from_millis(300));
    assert!(ok(&["ls", &s.url("/")]).contains("pnfs-bench-"));
    let _ = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status();
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("pnfs bench did not stop after SIGINT");
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let rest: Vec<String> = rx.try_iter().collect();
    assert_eq!(status.code(), Some(1), "{rest:?}");
    assert!(rest.iter().any(|l| l.contains("interrupted")), "{rest:?}");
    assert!(rest.iter().any(|l| l.contains("removing")), "{rest:?}");
    assert_empty(&s);
}

#[test]
fn bad_input_is_a_clear_error_not_a_panic() {
    let free = free_port();
    let unreachable = format!("nfs://127.0.0.1:{free}/");
    for (args, code, says) in [
        (vec!["http://127.0.0.1/"], 2, "not an nfs:// URL"),
        (vec!["nfs://"], 2, "nfs:"),
        (vec![unreachable.as_str()], 1, "connecting to"),
        (
            vec!["nfs://127.0.0.1/", "--compare", "ftp://x/"],
            2,
            "ftp://x/",
        ),
        (
            vec!["nfs://127.0.0.1/", "--only", "nope"],
            2,
            "no phase \"nope\"",
        ),
        (vec!["nfs://127.0.0.1/", "--size", "lots"], 2, "not a size"),
        (vec!["nfs://127.0.0.1/", "--runs", "0"], 2, "--runs"),
        (
            vec!["nfs://127.0.0.1/", "--plot", "x.pdf"],
            2,
            ".svg or .png",
        ),
        (
            vec!["nfs://127.0.0.1/", "--only", "rand", "--size", "1KiB"],
            2,
            "4 KiB",
        ),
    ] {
        let out = bench(&args);
        let stderr = stderr_of(&out);
        assert_eq!(out.status.code(), Some(code), "{args:?}: {stderr}");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
        assert!(stdout_of(&out).is_empty(), "{args:?}");
    }
}

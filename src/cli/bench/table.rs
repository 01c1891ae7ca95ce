//! The plain-text report on stdout: a few lines saying what was measured and how, then one
//! row per phase (with `--compare`, both servers side by side and the ratio A/B).

use std::fmt::Write;
use std::time::Duration;

use super::report::{client_side, cpu_unit, server_side, Report, ServerInfo};
use super::settings::{Phase, RAND_BLOCK};
use super::stats::Spread;

/// A figure with as many decimals as are worth reading: 3 significant digits below 100,
/// none above.
pub(crate) fn fmt_value(v: f64) -> String {
    let a = v.abs();
    if a >= 100.0 || a == 0.0 {
        format!("{v:.0}")
    } else if a >= 10.0 {
        format!("{v:.1}")
    } else if a >= 1.0 {
        format!("{v:.2}")
    } else if a >= 0.001 {
        format!("{v:.3}")
    } else {
        // Sub-microsecond latencies (a write into the client's buffer) stay visible.
        format!("{v:.4}")
    }
}

/// A latency in milliseconds, 3 significant digits (microseconds stay visible).
pub(crate) fn fmt_ms(d: Duration) -> String {
    fmt_value(d.as_secs_f64() * 1e3)
}

/// Bytes in the largest binary unit that divides them (`256 MiB`, `4 KiB`, `4097 B`).
pub(crate) fn fmt_bytes(n: u64) -> String {
    for (shift, unit) in [(40, "TiB"), (30, "GiB"), (20, "MiB"), (10, "KiB")] {
        if n >= 1 << shift && n.is_multiple_of(1 << shift) {
            return format!("{} {unit}", n >> shift);
        }
    }
    format!("{n} B")
}

/// Bytes moved, rounded to a readable unit (`268.4 MB`).
fn fmt_traffic(n: u64) -> String {
    match n {
        0 => "0 B".into(),
        n if n < 1_000_000 => format!("{:.1} kB", n as f64 / 1e3),
        n if n < 1_000_000_000 => format!("{:.1} MB", n as f64 / 1e6),
        n => format!("{:.2} GB", n as f64 / 1e9),
    }
}

/// Lays out `header` and `rows` in columns two spaces apart: the first `left` columns
/// aligned left (names), the others right (numbers).
pub(crate) fn grid(header: &[String], rows: &[Vec<String>], left: usize) -> String {
    let cols = header.len();
    let mut width = vec![0; cols];
    for row in std::iter::once(header).chain(rows.iter().map(Vec::as_slice)) {
        for (w, cell) in width.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    for row in std::iter::once(header).chain(rows.iter().map(Vec::as_slice)) {
        let mut line = String::new();
        for (i, (cell, w)) in row.iter().zip(&width).enumerate() {
            if i > 0 {
                line.push_str("  ");
            }
            if i < left {
                let _ = write!(line, "{cell:<w$}");
            } else {
                let _ = write!(line, "{cell:>w$}");
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// How a server's I/O went: through layouts to the data servers or through the server.
fn describe(s: &ServerInfo) -> String {
    let t = &s.traffic;
    if s.pnfs {
        format!(
            "pNFS: {} written and {} read at the data servers, {} and {} through the MDS",
            fmt_traffic(t.ds_written),
            fmt_traffic(t.ds_read),
            fmt_traffic(t.mds_written),
            fmt_traffic(t.mds_read)
        )
    } else {
        format!(
            "no layouts: {} written and {} read through the server",
            fmt_traffic(t.mds_written),
            fmt_traffic(t.mds_read)
        )
    }
}

/// The whole report as text.
pub(crate) fn render(r: &Report) -> String {
    let s = &r.settings;
    let mut out = String::new();
    for (i, srv) in r.servers.iter().enumerate() {
        let lead = if i == 0 { "pnfs bench:" } else { "" };
        let _ = writeln!(
            out,
            "{lead:<11} {} = {} ({})",
            srv.label,
            srv.url,
            describe(srv)
        );
    }
    let mut what = Vec::new();
    let has = |p: Phase| s.phases.contains(&p);
    if has(Phase::SeqWrite) || has(Phase::SeqRead) {
        what.push(format!(
            "sequential: a file of {} in {} requests",
            fmt_bytes(s.size),
            fmt_bytes(s.block)
        ));
    }
    if has(Phase::RandWrite) || has(Phase::RandRead) {
        what.push(format!(
            "random: {} x {} at queue depth 1",
            s.rand_ops,
            fmt_bytes(RAND_BLOCK)
        ));
    }
    if s.phases.iter().any(|p| !p.uses_data_file()) {
        what.push(format!(
            "metadata: {} files of {}, {} task{}",
            s.files,
            fmt_bytes(s.file_size),
            s.tasks,
            if s.tasks == 1 { "" } else { "s" }
        ));
    }
    let _ = writeln!(
        out,
        "{}; {} run{}{}",
        what.join("; "),
        s.runs,
        if s.runs == 1 { "" } else { "s" },
        if s.no_delegations {
            "; delegations refused"
        } else {
            ""
        }
    );
    let mut durable: Vec<String> = s
        .phases
        .iter()
        .filter(|p| p.ends_with_commit())
        .map(|p| p.name().to_string())
        .collect();
    if !durable.is_empty() {
        durable = vec![format!(
            "{} include{} the final fsync (COMMIT) in {} time",
            durable.join(" and "),
            if durable.len() == 1 { "s" } else { "" },
            if durable.len() == 1 { "its" } else { "their" }
        )];
    }
    if has(Phase::MetaCreate) && s.file_size > 0 {
        durable.push("meta-create COMMITs each file at close".into());
    }
    if !durable.is_empty() {
        let _ = writeln!(out, "durable: {}", durable.join("; "));
    }
    out.push_str(
        "median, min, max: over the runs; latency: percentiles over every request of every run, ms\n\n",
    );
    let compare = r.servers.len() > 1;
    let mut header = header_of(r, "unit", &["median", "min", "max", "p50/p90/p99 ms"]);
    if compare {
        header.push(format!("{}/{}", r.servers[0].label, r.servers[1].label));
    }
    let rows: Vec<Vec<String>> = r
        .phases
        .iter()
        .map(|ph| {
            let mut row = vec![ph.phase.name().to_string(), ph.phase.unit().to_string()];
            for runs in &ph.servers {
                match runs.spread(ph.phase) {
                    Some(sp) => row.extend([sp.median, sp.min, sp.max].map(fmt_value)),
                    None => row.extend(["-", "-", "-"].map(String::from)),
                }
                row.push(match runs.latency() {
                    Some(l) => format!("{}/{}/{}", fmt_ms(l.p50), fmt_ms(l.p90), fmt_ms(l.p99)),
                    None => "-".into(),
                });
            }
            if compare {
                row.push(ph.ratio().map_or("-".into(), |x| format!("{x:.2}")));
            }
            row
        })
        .collect();
    out.push_str(&grid(&header, &rows, 2));
    if let Some(cpu) = cpu_table(r) {
        out.push('\n');
        out.push_str(&cpu);
    }
    out
}

/// A table's header: `phase`, `unit`, then `columns` for each server, named with the
/// server's label in front when there are two (`A median`, ..., `B median`, ...).
fn header_of(r: &Report, unit: &str, columns: &[&str]) -> Vec<String> {
    let mut header: Vec<String> = vec!["phase".into(), unit.into()];
    for srv in &r.servers {
        header.extend(columns.iter().map(|c| match r.servers.len() {
            1 => c.to_string(),
            _ => format!("{} {c}", srv.label),
        }));
    }
    header
}

/// The CPU the phases cost, per GiB or per operation (medians over the runs): the client's
/// always, a server's when its processes were named. `None` when nothing was measured (no
/// `/proc`).
fn cpu_table(r: &Report) -> Option<String> {
    let measured = r.phases.iter().any(|ph| {
        ph.servers
            .iter()
            .any(|runs| runs.cpu_per_unit(ph.phase, client_side).is_some())
    });
    if !measured {
        return None;
    }
    let header = header_of(r, "cpu", &["client", "server"]);
    let rows: Vec<Vec<String>> = r
        .phases
        .iter()
        .map(|ph| {
            let mut row = vec![ph.phase.name().to_string(), cpu_unit(ph.phase).to_string()];
            for runs in &ph.servers {
                for side in [client_side, server_side] {
                    row.push(
                        runs.cpu_per_unit(ph.phase, side)
                            .and_then(|v| Spread::of(&v))
                            .map_or("-".into(), |sp| fmt_value(sp.median)),
                    );
                }
            }
            row
        })
        .collect();
    let mut out = String::from(
        "CPU per GiB (s/GiB) or per request or file (us), medians over the runs; client: this \
         process, server: its --server-pids or --compare-pids, from /proc in 1/100 s\n",
    );
    out.push_str(&grid(&header, &rows, 2));
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::bench::report::tests::{one_server, sample};

    #[test]
    fn figures_keep_three_significant_digits() {
        assert_eq!(fmt_value(812.34), "812");
        assert_eq!(fmt_value(12345.6), "12346");
        assert_eq!(fmt_value(42.26), "42.3");
        assert_eq!(fmt_value(1.234), "1.23");
        assert_eq!(fmt_value(0.0421), "0.042");
        assert_eq!(fmt_value(0.0), "0");
        assert_eq!(fmt_value(0.00042), "0.0004");
        assert_eq!(fmt_ms(Duration::from_micros(420)), "0.420");
        assert_eq!(fmt_ms(Duration::from_micros(1520)), "1.52");
        assert_eq!(fmt_bytes(256 << 20), "256 MiB");
        assert_eq!(fmt_bytes(4096), "4 KiB");
        assert_eq!(fmt_bytes(4097), "4097 B");
        assert_eq!(fmt_bytes(0), "0 B");
    }

    #[test]
    fn grid_aligns_names_left_and_numbers_right() {
        let h = ["phase", "unit", "median"].map(String::from);
        let rows = vec![
            ["seq-write", "MB/s", "812"].map(String::from).to_vec(),
            ["meta-stat", "files/s", "12346"].map(String::from).to_vec(),
        ];
        assert_eq!(
            grid(&h, &rows, 2),
            "phase      unit     median\n\
             seq-write  MB/s        812\n\
             meta-stat  files/s   12346\n"
        );
    }

    #[test]
    fn one_server_one_column_group() {
        let r = one_server(sample());
        let t = render(&r);
        let lines: Vec<&str> = t.lines().collect();
        assert!(
            lines[0].starts_with("pnfs bench: A = nfs://127.0.0.1:20490/ (pNFS: 12.6 MB written"),
            "{t}"
        );
        assert!(
            t.contains("sequential: a file of 4 MiB in 1 MiB requests"),
            "{t}"
        );
        assert!(
            t.contains("metadata: 20 files of 0 B, 1 task; 3 runs"),
            "{t}"
        );
        assert!(
            t.contains("durable: seq-write includes the final fsync (COMMIT) in its time"),
            "{t}"
        );
        let head = lines.iter().find(|l| l.starts_with("phase")).unwrap();
        assert_eq!(
            head.split_whitespace().collect::<Vec<_>>(),
            ["phase", "unit", "median", "min", "max", "p50/p90/p99", "ms"]
        );
        let seq = lines.iter().find(|l| l.starts_with("seq-write")).unwrap();
        assert_eq!(
            seq.split_whitespace().collect::<Vec<_>>(),
            [
                "seq-write",
                "MB/s",
                "40.0",
                "20.0",
                "80.0",
                "2.00/4.00/4.00"
            ]
        );
        assert!(!t.contains("A/B"));
    }

    #[test]
    fn cpu_is_a_table_of_its_own_per_gib_or_per_file() {
        let mut r = sample();
        assert!(!render(&r).contains("CPU per GiB"), "nothing measured");
        // A: client 0.1 s and server 0.3 s a run; B: client only.
        for ph in &mut r.phases {
            for (i, runs) in ph.servers.iter_mut().enumerate() {
                for m in &mut runs.runs {
                    m.cpu.client = Some(Duration::from_millis(100));
                    m.cpu.server = (i == 0).then(|| Duration::from_millis(300));
                }
            }
        }
        let t = render(&r);
        let lines: Vec<&str> = t.lines().collect();
        let at = lines
            .iter()
            .position(|l| l.starts_with("CPU per GiB"))
            .expect(&t);
        let words = |l: &str| l.split_whitespace().map(String::from).collect::<Vec<_>>();
        assert_eq!(
            words(lines[at + 1]),
            ["phase", "cpu", "A", "client", "A", "server", "B", "client", "B", "server"]
        );
        // 4,000,000 bytes a run: 0.1 s is 26.8 s per GiB.
        assert_eq!(
            words(lines[at + 2]),
            ["seq-write", "s/GiB", "26.8", "80.5", "26.8", "-"]
        );
        // 20 files a run: 0.1 s is 5,000 us a file.
        assert_eq!(
            words(lines[at + 3]),
            ["meta-create", "us/file", "5000", "15000", "5000", "-"]
        );
    }

    #[test]
    fn compare_puts_both_servers_side_by_side_with_the_ratio() {
        let t = render(&sample());
        assert!(
            t.contains("B = nfs://127.0.0.1:2049/ (no layouts: 12.6 MB written"),
            "{t}"
        );
        let lines: Vec<&str> = t.lines().collect();
        let head = lines.iter().find(|l| l.starts_with("phase")).unwrap();
        assert!(
            head.contains("A median") && head.contains("B median") && head.ends_with("A/B"),
            "{head}"
        );
        let meta = lines.iter().find(|l| l.starts_with("meta-create")).unwrap();
        assert_eq!(
            meta.split_whitespace().collect::<Vec<_>>(),
            [
                "meta-create",
                "files/s",
                "200",
                "100",
                "400",
                "1.00/1.00/1.00",
                "100",
                "100",
                "100",
                "1.00/1.00/1.00",
                "2.00"
            ]
        );
    }
}

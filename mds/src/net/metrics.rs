//! Counters an operator can read: the Prometheus text format over plain HTTP on
//! `metrics_listen` (default 127.0.0.1:9249; `pnfs stats` prints them). Operations by name
//! and status (the MDS's own, and each data server's from its HEALTH replies), COMPOUNDs, clients, sessions, open and lock state, grace, the data servers
//! and the queue of objects to remove from them, and the metadata store's commits (how well
//! group commit shares fsyncs).
//!
//! The HTTP side is deliberately tiny (one GET, answered and closed): it needs no dependency
//! and no configuration beyond the address, and a scraper or `curl` is all that talks to it.

use std::fmt::Write as _;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tracing::debug;

use nfs_proto::nfs4::{NfsOpnum4, NfsStat4};
use nfs_server::Acceptor;

use crate::server::Mds;

/// The largest request head read before answering (anything longer is cut off and answered).
const MAX_REQUEST: usize = 8192;

/// How long a scraper may take to send its request.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);

/// `{op="OP_READ",status="ok"}`: the labels of an operation count (a failure by its
/// NFS4ERR_ name).
fn op_labels(op: NfsOpnum4, status: NfsStat4) -> String {
    let name = op.name().map_or_else(|| op.0.to_string(), str::to_owned);
    let status = match status.name() {
        _ if status.is_ok() => "ok".to_owned(),
        Some(s) => s.to_owned(),
        None => status.0.to_string(),
    };
    format!("{{op=\"{name}\",status=\"{status}\"}}")
}

/// One counter of an RDMA listener's.
type RdmaCounter = fn(&rdma::Stats) -> &std::sync::atomic::AtomicU64;

/// The counters now, in the Prometheus text exposition format.
///
/// Takes the whole server, unlike the services: reporting on every part of it (the session
/// layer, the tables, the namespace's store, the data servers and their tasks) is what this
/// page is for.
pub fn render(mds: &Mds, now: Instant) -> String {
    let mut out = String::new();
    let mut metric = |name: &str, kind: &str, help: &str, samples: &[(String, u64)]| {
        let _ = writeln!(out, "# HELP pnfs_{name} {help}\n# TYPE pnfs_{name} {kind}");
        for (labels, v) in samples {
            let _ = writeln!(out, "pnfs_{name}{labels} {v}");
        }
    };
    let one = |v: u64| [(String::new(), v)];
    metric(
        "uptime_seconds",
        "gauge",
        "Seconds since this server started.",
        &one(now.saturating_duration_since(mds.core().started).as_secs()),
    );
    metric(
        "compounds_total",
        "counter",
        "COMPOUND requests served.",
        &one(mds
            .core()
            .counters
            .compounds
            .load(std::sync::atomic::Ordering::Relaxed)),
    );
    let ops: Vec<(String, u64)> = mds
        .core()
        .counters
        .snapshot()
        .into_iter()
        .map(|(op, status, n)| (op_labels(op, status), n))
        .collect();
    metric(
        "ops_total",
        "counter",
        "Operations by name and status (ok, or the NFS4ERR_ name).",
        &ops,
    );
    let (clients, sessions, grace) = {
        let s = mds.core().state();
        (
            s.clients.len() as u64,
            s.sessions.len() as u64,
            u64::from(s.grace.in_grace(now)),
        )
    };
    metric("clients", "gauge", "Client records.", &one(clients));
    metric("sessions", "gauge", "Sessions.", &one(sessions));
    metric(
        "grace",
        "gauge",
        "1 while the grace period after a restart lasts.",
        &one(grace),
    );
    let (opens, locks) = mds
        .tables()
        .try_opens()
        .map(|t| t.live_counts())
        .unwrap_or_default();
    metric(
        "stateids",
        "gauge",
        "Live open and lock stateids.",
        &[
            ("{kind=\"open\"}".into(), opens as u64),
            ("{kind=\"lock\"}".into(), locks as u64),
        ],
    );
    let d = mds
        .tables()
        .try_opens()
        .map(|t| t.delegs.counts())
        .unwrap_or_default();
    metric(
        "delegations",
        "gauge",
        "Delegations held now (recalled ones included, revoked ones not).",
        &[
            ("{type=\"read\"}".into(), d.held_read),
            ("{type=\"write\"}".into(), d.held_write),
        ],
    );
    metric(
        "delegations_granted_total",
        "counter",
        "Delegations granted by OPEN (reclaims included).",
        &[
            ("{type=\"read\"}".into(), d.granted_read),
            ("{type=\"write\"}".into(), d.granted_write),
        ],
    );
    metric(
        "delegations_recalled_total",
        "counter",
        "Delegations recalled (CB_RECALL) because another client's operation conflicted.",
        &one(d.recalled),
    );
    metric(
        "delegations_returned_total",
        "counter",
        "Delegations given back with DELEGRETURN.",
        &one(d.returned),
    );
    metric(
        "delegations_revoked_total",
        "counter",
        "Delegations revoked because their holder did not return them within a lease of \
         the recall.",
        &one(d.revoked),
    );
    let (up, down) = mds.devices().counts();
    metric(
        "data_servers",
        "gauge",
        "Configured data servers by state (up: registered and answering HEALTH).",
        &[
            ("{state=\"up\"}".into(), up as u64),
            ("{state=\"down\"}".into(), down as u64),
        ],
    );
    let per_ds: Vec<(String, u64)> = mds
        .devices()
        .statuses()
        .iter()
        .map(|s| (format!("{{ds=\"{}\"}}", s.id), u64::from(s.up)))
        .collect();
    metric(
        "data_server_up",
        "gauge",
        "1 while this data server is registered and answering HEALTH.",
        &per_ds,
    );
    let ds_ops: Vec<(String, u64)> = mds
        .devices()
        .op_counts()
        .into_iter()
        .flat_map(|(id, ops)| {
            ops.into_iter().map(move |c| {
                let labels = op_labels(NfsOpnum4(c.op), NfsStat4(c.status));
                (format!("{{ds=\"{id}\",{}", &labels[1..]), c.count)
            })
        })
        .collect();
    metric(
        "ds_ops_total",
        "counter",
        "Operations each data server served, by name and status (from its last HEALTH reply: \
         I/O through layouts shows here, I/O through the MDS in pnfs_ops_total).",
        &ds_ops,
    );
    let ctl_calls: Vec<(String, u64)> = mds
        .devices()
        .control_calls()
        .snapshot()
        .into_iter()
        .map(|((id, proc_), n)| {
            let name = proc_.name().map_or_else(
                || proc_.0.to_string(),
                |n| n.trim_start_matches("CTLPROC_").to_owned(),
            );
            (format!("{{ds=\"{id}\",proc=\"{name}\"}}"), n)
        })
        .collect();
    metric(
        "ctl_calls_total",
        "counter",
        "Control calls the MDS sent each data server, by procedure: the data servers' share \
         of the MDS's own work (sizes asked, stateids revoked, objects removed, I/O through \
         the MDS).",
        &ctl_calls,
    );
    let ds_copy: Vec<(String, u64)> = mds
        .devices()
        .copy_bytes()
        .into_iter()
        .map(|(id, n)| (format!("{{ds=\"{id}\"}}"), n))
        .collect();
    metric(
        "ds_copy_bytes_total",
        "counter",
        "Bytes each data server copied inside itself for server-side COPY (from its last \
         HEALTH reply): bytes that crossed no network.",
        &ds_copy,
    );
    let c = mds.copies().counters();
    metric(
        "copies_total",
        "counter",
        "Server-side COPY operations by how they ran and ended.",
        &[
            ("{kind=\"sync\"}".into(), c.sync),
            ("{kind=\"async\"}".into(), c.asynchronous),
            ("{kind=\"cancelled\"}".into(), c.cancelled),
            ("{kind=\"failed\"}".into(), c.failed),
        ],
    );
    metric(
        "copy_bytes_total",
        "counter",
        "Bytes server-side COPY and CLONE wrote into destination files (no client moved them).",
        &one(c.bytes),
    );
    metric(
        "copy_streamed_bytes_total",
        "counter",
        "Of those, bytes the MDS streamed between objects with control READ and WRITE (stripe \
         maps that do not line up, or a striped and an unstriped file).",
        &one(c.streamed_bytes),
    );
    metric(
        "copies_running",
        "gauge",
        "Asynchronous copies in the copy table now (running or kept for OFFLOAD_STATUS).",
        &one(c.in_table),
    );
    metric(
        "data_server_ring_generation",
        "gauge",
        "Generation of the configured data server list new stripe sets are cut from (store \
         table `rings`; a new one whenever the list changes).",
        &one(u64::from(mds.pnfs().ring_generation())),
    );
    // A store that cannot be read leaves the gauge out rather than reporting an empty queue.
    if let Ok(queued) = mds.store().ds_removal_count() {
        metric(
            "ds_removal_queue",
            "gauge",
            "Deleted files whose objects some data server has not yet removed (durable queue).",
            &one(queued),
        );
    }
    metric(
        "ds_removals_total",
        "counter",
        "Deleted files whose objects every data server of theirs removed.",
        &one(mds
            .pnfs()
            .removals()
            .done
            .load(std::sync::atomic::Ordering::Relaxed)),
    );
    metric(
        "ds_remove_failures_total",
        "counter",
        "REMOVE calls to data servers that failed or waited for a data server that was down.",
        &one(mds
            .pnfs()
            .removals()
            .failed_calls
            .load(std::sync::atomic::Ordering::Relaxed)),
    );
    let mirrors = mds.pnfs().mirrors();
    let load = |a: &std::sync::atomic::AtomicU64| a.load(std::sync::atomic::Ordering::Relaxed);
    metric(
        "mirror_stale_copies",
        "gauge",
        "Copies of mirrored files that missed writes and wait to be re-silvered.",
        &one(mirrors.stale_count() as u64),
    );
    metric(
        "mirror_copies_marked_stale_total",
        "counter",
        "Copies of mirrored files marked stale (a data server down or failing during a write, \
         truncate or RW layout grant).",
        &one(load(&mirrors.marked)),
    );
    metric(
        "mirror_resilvered_copies_total",
        "counter",
        "Stale copies of mirrored files rebuilt from a good copy.",
        &one(load(&mirrors.resilvered)),
    );
    metric(
        "mirror_resilver_bytes_total",
        "counter",
        "Bytes read from good copies by re-silvering.",
        &one(load(&mirrors.resilver_bytes)),
    );
    metric(
        "mirror_resilver_failures_total",
        "counter",
        "Re-silvers that stopped on a failure (tried again).",
        &one(load(&mirrors.resilver_failures)),
    );
    metric(
        "ds_store_replaced_total",
        "counter",
        "Data servers that registered with another object store than on record (replaced \
         or emptied): their copies of mirrored files were marked stale.",
        &one(load(&mirrors.replaced_stores)),
    );
    let (done, size) = mirrors
        .current
        .lock()
        .map(|c| c.map_or((0, 0), |(_, _, d, s)| (d, s)))
        .unwrap_or((0, 0));
    metric(
        "mirror_resilver_current_bytes",
        "gauge",
        "Bytes copied so far of the copy being re-silvered now (0 when none).",
        &one(done),
    );
    metric(
        "mirror_resilver_current_size_bytes",
        "gauge",
        "Size of the copy being re-silvered now (0 when none).",
        &one(size),
    );
    metric(
        "layout_recalls_total",
        "counter",
        "CB_LAYOUTRECALLs sent (truncate or remove of a file another client holds a layout of).",
        &one(mds
            .fencing()
            .recalls_sent
            .load(std::sync::atomic::Ordering::Relaxed)),
    );
    metric(
        "layouts_fenced_total",
        "counter",
        "Layouts revoked because their client did not return them in time (or could not be \
         called back): its stateids of the file are refused by the data servers.",
        &one(mds
            .fencing()
            .fenced
            .load(std::sync::atomic::Ordering::Relaxed)),
    );
    metric(
        "layout_io_errors_total",
        "counter",
        "Data server errors clients reported (LAYOUTERROR, flex files LAYOUTRETURN reports; \
         each also logged with its data server and status).",
        &one(mds
            .pnfs()
            .reports()
            .errors
            .load(std::sync::atomic::Ordering::Relaxed)),
    );
    metric(
        "device_notifications_total",
        "counter",
        "CB_NOTIFY_DEVICEID calls sent (a data server answers at other addresses).",
        &one(mds
            .device_watch()
            .sent
            .load(std::sync::atomic::Ordering::Relaxed)),
    );
    metric(
        "layout_write_marks",
        "gauge",
        "Files written through RW layouts whose size is not yet settled with their data \
         servers (GETATTR asks the data servers for these).",
        &one(mds.pnfs().settler().marked_count() as u64),
    );
    metric(
        "layout_sizes_settled_total",
        "counter",
        "Files whose size was settled with their data servers once no RW layout was out.",
        &one(mds
            .pnfs()
            .settler()
            .settled
            .load(std::sync::atomic::Ordering::Relaxed)),
    );
    metric(
        "layout_sizes_grown_total",
        "counter",
        "Settled files whose size grew: bytes written through a layout that no LAYOUTCOMMIT \
         reported (a client that returned its layout without one, or an MDS restart).",
        &one(mds
            .pnfs()
            .settler()
            .grown
            .load(std::sync::atomic::Ordering::Relaxed)),
    );
    let c = mds.store().commit_stats();
    metric(
        "store_commits_total",
        "counter",
        "Durable metadata commits (one fsync each): a sync of the write-ahead log, or a \
         checkpoint.",
        &one(c.commits),
    );
    metric(
        "store_checkpoints_total",
        "counter",
        "Durable commits of the metadata database that emptied its write-ahead log (one \
         every 1,024 commits or 16 MiB of log).",
        &one(c.checkpoints),
    );
    metric(
        "store_deferred_commits_total",
        "counter",
        "Metadata commits made visible without an fsync: changes of a COMPOUND, made durable \
         together by its one sync before the reply (and background bookkeeping that is redone \
         if lost).",
        &one(c.deferred_commits),
    );
    metric(
        "store_jobs_total",
        "counter",
        "Metadata changes committed (many share one commit).",
        &one(c.jobs),
    );
    metric(
        "store_largest_batch",
        "gauge",
        "The most changes that shared one commit.",
        &one(c.largest_batch),
    );
    let rdma = rdma::listeners();
    let per_listener = |f: RdmaCounter| {
        rdma.iter()
            .map(|(addr, s)| {
                let v = f(s).load(std::sync::atomic::Ordering::Relaxed);
                (format!("{{listen=\"{addr}\"}}"), v)
            })
            .collect::<Vec<_>>()
    };
    if !rdma.is_empty() {
        let rdma_counters: [(&str, &str, RdmaCounter); 8] = [
            (
                "rdma_connections_total",
                "RPC-over-RDMA connections accepted.",
                |s| &s.connections,
            ),
            (
                "rdma_read_bytes_total",
                "Bytes pulled from clients by RDMA Read (WRITE data, long calls).",
                |s| &s.read_bytes,
            ),
            (
                "rdma_written_bytes_total",
                "Bytes pushed to clients by RDMA Write (READ data, long replies).",
                |s| &s.written_bytes,
            ),
            (
                "rdma_written_in_place_bytes_total",
                "READ data RDMA-written from the registered buffer it was read into (no copy).",
                |s| &s.written_in_place,
            ),
            (
                "rdma_registrations_total",
                "Memory registrations after connection setup (registered-buffer pool misses).",
                |s| &s.registrations,
            ),
            ("rdma_errors_sent_total", "RDMA_ERROR replies sent.", |s| {
                &s.errors_sent
            }),
            (
                "rdma_nudges_total",
                "CB_NULLs sent to a client silent after a reply, to release a stalled send queue.",
                |s| &s.nudges,
            ),
            (
                "rdma_established_by_call_total",
                "Connections whose first call came before the CM's ESTABLISHED event (the \
                 client's RTU late or lost): served, and the CM told.",
                |s| &s.established_by_call,
            ),
        ];
        for (name, help, f) in rdma_counters {
            metric(name, "counter", help, &per_listener(f));
        }
    }
    out.push_str(&latency_histogram(&mds.core().counters.latencies()));
    out.push_str(&reported(&mds.pnfs().reports().snapshot()));
    out
}

/// What clients reported of each data server (`crate::pnfs::reports`): errors and
/// LAYOUTSTATS counted, and the latency and bandwidth of the last LAYOUTSTATS.
fn reported(reports: &[(u32, crate::pnfs::reports::DsReport)]) -> String {
    use crate::pnfs::reports::DsReport;
    /// A metric's name, help and value of one data server's report.
    type Field<T> = (&'static str, &'static str, fn(&DsReport) -> T);
    let mut out = String::new();
    let counters: [Field<u64>; 2] = [
        (
            "ds_reported_errors_total",
            "Errors clients reported of each data server (LAYOUTERROR, flex files LAYOUTRETURN).",
            |r| r.errors,
        ),
        (
            "ds_layoutstats_total",
            "LAYOUTSTATS clients sent of each data server.",
            |r| r.stats,
        ),
    ];
    for (name, help, f) in counters {
        let _ = writeln!(out, "# HELP pnfs_{name} {help}\n# TYPE pnfs_{name} counter");
        for (id, r) in reports {
            let _ = writeln!(out, "pnfs_{name}{{ds=\"{id}\"}} {}", f(r));
        }
    }
    let gauges: [Field<Option<f64>>; 4] = [
        (
            "ds_reported_read_latency_seconds",
            "Mean seconds per read in a client's last LAYOUTSTATS of each data server.",
            |r| r.read_latency,
        ),
        (
            "ds_reported_write_latency_seconds",
            "Mean seconds per write in a client's last LAYOUTSTATS of each data server.",
            |r| r.write_latency,
        ),
        (
            "ds_reported_read_bytes_per_second",
            "Read bandwidth in a client's last LAYOUTSTATS of each data server.",
            |r| r.read_bandwidth,
        ),
        (
            "ds_reported_write_bytes_per_second",
            "Write bandwidth in a client's last LAYOUTSTATS of each data server.",
            |r| r.write_bandwidth,
        ),
    ];
    for (name, help, f) in gauges {
        let _ = writeln!(out, "# HELP pnfs_{name} {help}\n# TYPE pnfs_{name} gauge");
        for (id, r) in reports {
            if let Some(v) = f(r) {
                let _ = writeln!(out, "pnfs_{name}{{ds=\"{id}\"}} {v}");
            }
        }
    }
    out
}

/// `pnfs_compound_seconds`: how long COMPOUNDs took from arrival to reply (the durability
/// barrier included), a histogram per kind (the operation a COMPOUND is known by,
/// [`nfs_server::counters::compound_kind`]: OPEN, LOOKUP, DELEGRETURN, ...).
fn latency_histogram(kinds: &[(NfsOpnum4, nfs_server::counters::Latency)]) -> String {
    use nfs_server::counters::LATENCY_BUCKETS_US;
    let mut out = String::from(
        "# HELP pnfs_compound_seconds COMPOUNDs from arrival to reply, by the operation each \
         is known by (its first besides SEQUENCE, filehandle operations and GETATTR).\n\
         # TYPE pnfs_compound_seconds histogram\n",
    );
    for (kind, l) in kinds {
        let op = kind
            .name()
            .map_or_else(|| kind.0.to_string(), str::to_owned);
        let mut below = 0;
        for (i, n) in l.buckets.iter().enumerate() {
            below += n;
            let le = LATENCY_BUCKETS_US
                .get(i)
                .map_or_else(|| "+Inf".to_owned(), |&us| (us as f64 / 1e6).to_string());
            let _ = writeln!(
                out,
                "pnfs_compound_seconds_bucket{{op=\"{op}\",le=\"{le}\"}} {below}"
            );
        }
        let _ = writeln!(
            out,
            "pnfs_compound_seconds_sum{{op=\"{op}\"}} {}\npnfs_compound_seconds_count{{op=\"{op}\"}} {}",
            l.sum_ns as f64 / 1e9,
            l.count
        );
    }
    out
}

/// Answers HTTP GETs on `listener` with [`render`] until the process ends (so it holds the
/// whole server, as [`render`] reads all of it).
/// At most [`MAX_METRICS_CONNECTIONS`] requests are answered at once (each has
/// [`REQUEST_TIMEOUT`] to arrive); accept errors are waited out ([`Acceptor`]).
pub async fn serve_metrics(mds: Arc<Mds>, listener: TcpListener) {
    let mut acceptor = Acceptor::new(listener, "metrics", MAX_METRICS_CONNECTIONS);
    loop {
        let (sock, peer, slot) = acceptor.accept().await;
        let mds = mds.clone();
        tokio::spawn(async move {
            if let Err(e) = answer(&mds, sock).await {
                debug!(%peer, "metrics request: {e}");
            }
            drop(slot);
        });
    }
}

/// Connections to the counters page open at once: a scraper or two, and `pnfs stats`.
pub const MAX_METRICS_CONNECTIONS: usize = 64;

async fn answer(mds: &Mds, mut sock: TcpStream) -> std::io::Result<()> {
    let mut head = Vec::with_capacity(512);
    let mut buf = [0u8; 1024];
    let read = async {
        while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < MAX_REQUEST {
            let n = sock.read(&mut buf).await?;
            if n == 0 {
                break;
            }
            head.extend_from_slice(&buf[..n]);
        }
        Ok::<_, std::io::Error>(())
    };
    tokio::time::timeout(REQUEST_TIMEOUT, read)
        .await
        .map_err(|_| std::io::Error::from(std::io::ErrorKind::TimedOut))??;
    let line = head.split(|&b| b == b'\n').next().unwrap_or_default();
    let line = String::from_utf8_lossy(line);
    let mut words = line.split_whitespace();
    let (method, path) = (words.next().unwrap_or(""), words.next().unwrap_or(""));
    let (status, body) = match (method, path) {
        ("GET", "/metrics" | "/") => ("200 OK", render(mds, mds.core().now())),
        ("GET", _) => ("404 Not Found", "try /metrics\n".to_owned()),
        _ => ("405 Method Not Allowed", "GET only\n".to_owned()),
    };
    let reply = format!(
        "HTTP/1.0 {status}\r\nContent-Type: text/plain; version=0.0.4\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    sock.write_all(reply.as_bytes()).await?;
    sock.shutdown().await
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Config;

    #[test]
    fn the_latency_histogram_is_cumulative_with_its_sum_and_count() {
        let c = nfs_server::counters::Counters::default();
        c.compound_took(NfsOpnum4::OP_OPEN, Duration::from_micros(80));
        c.compound_took(NfsOpnum4::OP_OPEN, Duration::from_micros(700));
        let text = latency_histogram(&c.latencies());
        for line in [
            "pnfs_compound_seconds_bucket{op=\"OP_OPEN\",le=\"0.00005\"} 0\n",
            "pnfs_compound_seconds_bucket{op=\"OP_OPEN\",le=\"0.0001\"} 1\n",
            "pnfs_compound_seconds_bucket{op=\"OP_OPEN\",le=\"0.001\"} 2\n",
            "pnfs_compound_seconds_bucket{op=\"OP_OPEN\",le=\"+Inf\"} 2\n",
            "pnfs_compound_seconds_sum{op=\"OP_OPEN\"} 0.00078\n",
            "pnfs_compound_seconds_count{op=\"OP_OPEN\"} 2\n",
        ] {
            assert!(text.contains(line), "{line} in\n{text}");
        }
    }

    #[tokio::test]
    async fn a_get_of_metrics_returns_the_counters_and_other_paths_404() {
        let dir = tempfile::tempdir().unwrap();
        let mds = Mds::open(Config {
            data_dir: dir.path().to_path_buf(),
            ..Config::default()
        })
        .unwrap();
        mds.core().counters.op(
            nfs_proto::nfs4::NfsOpnum4::OP_READ,
            nfs_proto::nfs4::NfsStat4::NFS4_OK,
        );
        mds.core().counters.op(
            nfs_proto::nfs4::NfsOpnum4::OP_LAYOUTGET,
            nfs_proto::nfs4::NfsStat4::NFS4ERR_LAYOUTTRYLATER,
        );
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(serve_metrics(mds, listener));
        let get = |path: &'static str| async move {
            let mut s = TcpStream::connect(addr).await.unwrap();
            s.write_all(format!("GET {path} HTTP/1.1\r\nHost: x\r\n\r\n").as_bytes())
                .await
                .unwrap();
            let mut out = String::new();
            s.read_to_string(&mut out).await.unwrap();
            out
        };
        let page = get("/metrics").await;
        assert!(page.starts_with("HTTP/1.0 200 OK\r\n"), "{page}");
        assert!(
            page.contains("pnfs_ops_total{op=\"OP_READ\",status=\"ok\"} 1\n"),
            "{page}"
        );
        assert!(
            page.contains(
                "pnfs_ops_total{op=\"OP_LAYOUTGET\",status=\"NFS4ERR_LAYOUTTRYLATER\"} 1\n"
            ),
            "{page}"
        );
        assert!(page.contains("pnfs_stateids{kind=\"open\"} 0\n"), "{page}");
        assert!(page.contains("pnfs_ds_removal_queue 0\n"), "{page}");
        assert!(page.contains("pnfs_layout_recalls_total 0\n"), "{page}");
        assert!(page.contains("pnfs_layouts_fenced_total 0\n"), "{page}");
        assert!(page.contains("pnfs_ds_removals_total 0\n"), "{page}");
        assert!(page.contains("# TYPE pnfs_compounds_total counter\n"));
        assert!(page.contains("# TYPE pnfs_compound_seconds histogram\n"));
        assert!(get("/other").await.starts_with("HTTP/1.0 404"));
    }

    #[tokio::test]
    async fn a_request_without_an_end_is_cut_off_not_buffered_forever() {
        let dir = tempfile::tempdir().unwrap();
        let mds = Mds::open(Config {
            data_dir: dir.path().to_path_buf(),
            ..Config::default()
        })
        .unwrap();
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(serve_metrics(mds, listener));
        let mut s = TcpStream::connect(addr).await.unwrap();
        // 64 KiB without a blank line: the server reads at most MAX_REQUEST, answers and
        // closes (the client may see the answer or a reset, but never waits).
        let junk = vec![b'a'; 64 * 1024];
        let talk = async {
            let _ = s.write_all(&junk).await;
            let mut out = Vec::new();
            let _ = s.read_to_end(&mut out).await;
        };
        tokio::time::timeout(Duration::from_secs(10), talk)
            .await
            .expect("the server closed the connection");
    }
}

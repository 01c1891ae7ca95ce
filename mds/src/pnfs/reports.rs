//! What clients tell the MDS about its data servers: the errors they met (the `ff_ioerr4`s of
//! a flex files LAYOUTRETURN, RFC 8435 section 9.1; LAYOUTERROR, RFC 7862 section 15.6) and
//! their I/O statistics (LAYOUTSTATS, RFC 7862 section 15.7, with a flex files
//! `ff_layoutupdate4`), kept per data server for the metrics page: how often each was
//! reported failing, and its read and write latency and bandwidth as the last report saw
//! them. New stripe sets avoid a data server a client reported failing within the last
//! minute (`ops::layout::new_stripe_set`), unless no other is up: a data server can answer
//! the MDS's HEALTH and still fail its clients (a network partition between them).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use nfs_proto::nfs4::layout_flex::{FfIoLatency4, FfLayoutupdate4};
use nfs_proto::nfs4::{Deviceid4, Nfstime4};

use crate::server::Mds;

/// One data server as its clients report it.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct DsReport {
    /// Errors reported (each `device_error4` naming it).
    pub errors: u64,
    /// LAYOUTSTATS received for it.
    pub stats: u64,
    /// Mean seconds per completed read in the last LAYOUTSTATS (`None`: none completed).
    pub read_latency: Option<f64>,
    /// Mean seconds per completed write in the last LAYOUTSTATS.
    pub write_latency: Option<f64>,
    /// Bytes read per second over the last LAYOUTSTATS's period (`None`: no period).
    pub read_bandwidth: Option<f64>,
    /// Bytes written per second over the last LAYOUTSTATS's period.
    pub write_bandwidth: Option<f64>,
    /// When an error was last reported.
    pub last_error: Option<Instant>,
}

/// How long after a reported error new stripe sets avoid the data server.
pub const AVOID: Duration = Duration::from_secs(60);

/// The reports, per data server id.
#[derive(Debug, Default)]
pub struct IoReports {
    by_ds: Mutex<BTreeMap<u32, DsReport>>,
    /// Errors reported in all (including ones naming no data server of ours).
    pub errors: AtomicU64,
}

fn seconds(t: Nfstime4) -> f64 {
    t.seconds as f64 + f64::from(t.nseconds) / 1e9
}

/// Mean seconds per completed operation and bytes per second over `period` seconds.
fn rates(l: &FfIoLatency4, period: f64) -> (Option<f64>, Option<f64>) {
    let latency = (l.ffil_ops_completed > 0)
        .then(|| seconds(l.ffil_aggregate_completion_time) / l.ffil_ops_completed as f64);
    let bandwidth = (period > 0.0).then(|| l.ffil_bytes_completed as f64 / period);
    (latency, bandwidth)
}

impl IoReports {
    fn by_ds(&self) -> std::sync::MutexGuard<'_, BTreeMap<u32, DsReport>> {
        self.by_ds.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A client reported an error of data server `ds` (`None`: a device that names none of
    /// ours).
    ///
    /// Returns whether the report is news: the first of `ds` (or of an unknown device) in
    /// [`AVOID`], which callers log as a warning and the rest at debug level (a client
    /// writing 1 MiB pieces reports every piece in flight when a data server dies).
    pub fn error(&self, ds: Option<u32>) -> bool {
        self.errors.fetch_add(1, Ordering::Relaxed);
        let Some(ds) = ds else {
            return true;
        };
        let mut m = self.by_ds();
        let r = m.entry(ds).or_default();
        let news = r.last_error.is_none_or(|t| t.elapsed() >= AVOID);
        r.errors += 1;
        r.last_error = Some(Instant::now());
        news
    }

    /// Whether a client reported data server `ds` failing in the last [`AVOID`].
    pub fn failing(&self, ds: u32) -> bool {
        self.by_ds()
            .get(&ds)
            .and_then(|r| r.last_error)
            .is_some_and(|t| t.elapsed() < AVOID)
    }

    /// A client's statistics of data server `ds`: its figures become the server's latest.
    pub fn stats(&self, ds: u32, u: &FfLayoutupdate4) {
        let period = seconds(u.ffl_duration);
        let (read_latency, read_bandwidth) = rates(&u.ffl_read, period);
        let (write_latency, write_bandwidth) = rates(&u.ffl_write, period);
        let mut m = self.by_ds();
        let r = m.entry(ds).or_default();
        r.stats += 1;
        r.read_latency = read_latency;
        r.write_latency = write_latency;
        r.read_bandwidth = read_bandwidth;
        r.write_bandwidth = write_bandwidth;
    }

    /// Every data server reported on, by id.
    pub fn snapshot(&self) -> Vec<(u32, DsReport)> {
        self.by_ds().iter().map(|(&id, &r)| (id, r)).collect()
    }
}

/// The data server a flex files device names (a window of one server of a ring
/// generation, `ops::layout::flex_layout`); for a file layout device, its first server.
pub fn device_server(mds: &Mds, id: &Deviceid4) -> Option<u32> {
    let d = layouts::Device::from_id(id)?;
    let ring = mds.device_ring(d.generation)?;
    ring.servers.get(usize::from(d.first)).map(|s| s.id)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(seconds: i64, nseconds: u32) -> Nfstime4 {
        Nfstime4 { seconds, nseconds }
    }

    #[test]
    fn the_last_report_gives_the_latency_and_bandwidth_and_errors_add_up() {
        let r = IoReports::default();
        r.error(Some(2));
        r.error(Some(2));
        r.error(None);
        let u = FfLayoutupdate4 {
            ffl_read: FfIoLatency4 {
                ffil_ops_completed: 4,
                ffil_bytes_completed: 8 << 20,
                ffil_aggregate_completion_time: t(0, 200_000_000),
                ..Default::default()
            },
            ffl_duration: t(2, 0),
            ..Default::default()
        };
        r.stats(2, &u);
        let [(2, got)] = r.snapshot()[..] else {
            panic!("{:?}", r.snapshot())
        };
        assert_eq!((got.errors, got.stats), (2, 1));
        assert!(r.failing(2) && !r.failing(3));
        assert_eq!(r.errors.load(Ordering::Relaxed), 3);
        assert!((got.read_latency.unwrap() - 0.05).abs() < 1e-9);
        assert_eq!(got.read_bandwidth, Some((4 << 20) as f64));
        assert_eq!(got.write_latency, None, "no write completed");
        assert_eq!(got.write_bandwidth, Some(0.0));
        // A report with no period gives no bandwidth.
        r.stats(
            2,
            &FfLayoutupdate4 {
                ffl_duration: t(0, 0),
                ..u
            },
        );
        assert_eq!(r.snapshot()[0].1.read_bandwidth, None);
    }
}

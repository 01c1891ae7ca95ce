//! HEALTH: what the MDS watches of this data server (space, load, uptime, op counts).

use super::*;

/// The host's one-minute load average times 1000, from `/proc/loadavg` (0 where unknown).
fn load_milli() -> u32 {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse::<f64>().ok())
        .map_or(0, |l| (l * 1000.0).clamp(0.0, f64::from(u32::MAX)) as u32)
}

impl ControlService {
    pub(super) async fn health(&self) -> HealthRes {
        let fs = match self.blocking(|s| s.statfs()).await {
            Some(Ok(fs)) => fs,
            Some(Err(e)) => return HealthRes::Err(store_stat(e)),
            None => return HealthRes::Err(CtlStat::CTL_IO),
        };
        HealthRes::Ok(HealthOk {
            ds_id: self.cfg.ds_id,
            boot_verifier: self.boot_verifier,
            mds_epoch: self.registered_epoch().map(u32::from),
            space_total: fs.total,
            space_free: fs.free,
            space_avail: fs.avail,
            files_total: fs.files,
            files_free: fs.ffree,
            load_milli: load_milli(),
            uptime_s: self
                .time
                .now()
                .saturating_duration_since(self.started)
                .as_secs(),
            ops: self.target.op_counts(),
            copy_bytes: self.copy_bytes.load(Ordering::Relaxed),
        })
    }
}

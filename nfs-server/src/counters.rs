//! Per-operation counters an operator can read (the MDS publishes them as Prometheus text;
//! `pnfs stats` prints them). Kept by the COMPOUND engine, so every role counts the same way.

use std::collections::BTreeMap;
use std::sync::atomic::AtomicU64;
use std::sync::Mutex;

use nfs_proto::nfs4::{NfsOpnum4, NfsStat4};

/// Operations by number and status, and COMPOUNDs served.
///
/// Kept per status, not just ok/failed: an operator asking why clients do I/O through the MDS
/// needs to see LAYOUTGET answered LAYOUTTRYLATER apart from BADIOMODE.
#[derive(Default)]
pub struct Counters {
    ops: Mutex<BTreeMap<(u32, u32), u64>>,
    /// COMPOUNDs served.
    pub compounds: AtomicU64,
}

impl Counters {
    /// Counts one operation with its status.
    pub fn op(&self, op: NfsOpnum4, status: NfsStat4) {
        *self
            .ops
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry((op.0, status.0))
            .or_default() += 1;
    }

    /// (operation, status, count) for every operation and status seen.
    pub fn snapshot(&self) -> Vec<(NfsOpnum4, NfsStat4, u64)> {
        self.ops
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .map(|(&(o, st), &n)| (NfsOpnum4(o), NfsStat4(st), n))
            .collect()
    }

    /// How many times `op` ran (successfully or not).
    pub fn count(&self, op: NfsOpnum4) -> u64 {
        let m = self.ops.lock().unwrap_or_else(|e| e.into_inner());
        m.range((op.0, 0)..=(op.0, u32::MAX)).map(|(_, n)| n).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_are_kept_per_operation_and_outcome() {
        let c = Counters::default();
        c.op(NfsOpnum4::OP_READ, NfsStat4::NFS4_OK);
        c.op(NfsOpnum4::OP_READ, NfsStat4::NFS4ERR_IO);
        c.op(NfsOpnum4::OP_READ, NfsStat4::NFS4_OK);
        c.op(NfsOpnum4::OP_WRITE, NfsStat4::NFS4_OK);
        assert_eq!(c.count(NfsOpnum4::OP_READ), 3);
        assert_eq!(c.count(NfsOpnum4::OP_COMMIT), 0);
        assert_eq!(
            c.snapshot(),
            vec![
                (NfsOpnum4::OP_READ, NfsStat4::NFS4_OK, 2),
                (NfsOpnum4::OP_READ, NfsStat4::NFS4ERR_IO, 1),
                (NfsOpnum4::OP_WRITE, NfsStat4::NFS4_OK, 1),
            ]
        );
    }
}

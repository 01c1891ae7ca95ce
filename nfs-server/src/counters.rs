//! Per-operation counters an operator can read (the MDS publishes them as Prometheus text;
//! `pnfs stats` prints them). Kept by the COMPOUND engine, so every role counts the same way.

use std::collections::BTreeMap;
use std::sync::atomic::AtomicU64;
use std::sync::Mutex;
use std::time::Duration;

use nfs_proto::nfs4::{NfsOpnum4, NfsStat4};

/// Upper bounds of the latency histogram's buckets, in microseconds (a last bucket takes
/// the rest): 50 µs to 10 s, about three per decade.
pub const LATENCY_BUCKETS_US: [u64; 16] = [
    50, 100, 250, 500, 1_000, 2_500, 5_000, 10_000, 25_000, 50_000, 100_000, 250_000, 500_000,
    1_000_000, 2_500_000, 10_000_000,
];

/// How long COMPOUNDs of one kind took, from their arrival to their reply (the durability
/// barrier included): counts per bucket of [`LATENCY_BUCKETS_US`] and the last for longer,
/// the sum in nanoseconds and the count.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Latency {
    /// Per bucket (not cumulative), one more than [`LATENCY_BUCKETS_US`].
    pub buckets: [u64; LATENCY_BUCKETS_US.len() + 1],
    /// The durations added up, in nanoseconds.
    pub sum_ns: u64,
    /// How many COMPOUNDs.
    pub count: u64,
}

impl Latency {
    fn add(&mut self, took: Duration) {
        let us = u64::try_from(took.as_micros()).unwrap_or(u64::MAX);
        let i = LATENCY_BUCKETS_US.partition_point(|&b| b < us);
        self.buckets[i] += 1;
        self.sum_ns = self
            .sum_ns
            .saturating_add(u64::try_from(took.as_nanos()).unwrap_or(u64::MAX));
        self.count += 1;
    }
}

/// Operations by number and status, COMPOUNDs served, and how long they took.
///
/// Kept per status, not just ok/failed: an operator asking why clients do I/O through the MDS
/// needs to see LAYOUTGET answered LAYOUTTRYLATER apart from BADIOMODE.
#[derive(Default)]
pub struct Counters {
    ops: Mutex<BTreeMap<(u32, u32), u64>>,
    /// COMPOUNDs served.
    pub compounds: AtomicU64,
    /// COMPOUND latency by the operation that names it ([`compound_kind`]).
    latency: Mutex<BTreeMap<u32, Latency>>,
}

/// The operation a COMPOUND is known by in the latency histogram: its first that is not
/// SEQUENCE, a filehandle operation (PUTFH and its kin, SAVEFH, RESTOREFH, GETFH) or
/// GETATTR, else its last (so a stat by path, PUTROOTFH LOOKUP GETFH GETATTR, is LOOKUP;
/// OPEN with its LAYOUTGET is OPEN; a delegation's return with the REMOVE is DELEGRETURN).
pub fn compound_kind(ops: impl IntoIterator<Item = NfsOpnum4>) -> NfsOpnum4 {
    use NfsOpnum4 as O;
    let mut last = O::OP_SEQUENCE;
    for op in ops {
        let plumbing = [
            O::OP_SEQUENCE,
            O::OP_PUTFH,
            O::OP_PUTROOTFH,
            O::OP_PUTPUBFH,
            O::OP_SAVEFH,
            O::OP_RESTOREFH,
            O::OP_GETFH,
            O::OP_GETATTR,
        ];
        if !plumbing.contains(&op) {
            return op;
        }
        last = op;
    }
    last
}

impl Counters {
    /// A COMPOUND of kind `kind` ([`compound_kind`]) took `took`.
    pub fn compound_took(&self, kind: NfsOpnum4, took: Duration) {
        self.latency
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry(kind.0)
            .or_default()
            .add(took);
    }

    /// The latency histogram of every kind of COMPOUND seen.
    pub fn latencies(&self) -> Vec<(NfsOpnum4, Latency)> {
        self.latency
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .map(|(&k, l)| (NfsOpnum4(k), l.clone()))
            .collect()
    }

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
    fn latencies_fall_in_their_buckets_by_the_compounds_kind() {
        use NfsOpnum4 as O;
        assert_eq!(
            compound_kind([O::OP_SEQUENCE, O::OP_PUTROOTFH, O::OP_LOOKUP, O::OP_GETFH]),
            O::OP_LOOKUP
        );
        assert_eq!(
            compound_kind([O::OP_SEQUENCE, O::OP_PUTFH, O::OP_GETATTR]),
            O::OP_GETATTR
        );
        assert_eq!(compound_kind([O::OP_EXCHANGE_ID]), O::OP_EXCHANGE_ID);
        let c = Counters::default();
        c.compound_took(O::OP_OPEN, Duration::from_micros(50));
        c.compound_took(O::OP_OPEN, Duration::from_micros(51));
        c.compound_took(O::OP_OPEN, Duration::from_secs(60));
        let l = c.latencies();
        assert_eq!(l.len(), 1);
        let (kind, open) = &l[0];
        assert_eq!(*kind, O::OP_OPEN);
        assert_eq!((open.buckets[0], open.buckets[1]), (1, 1));
        assert_eq!(
            open.buckets[LATENCY_BUCKETS_US.len()],
            1,
            "past the last bound"
        );
        assert_eq!(open.count, 3);
        assert_eq!(open.sum_ns, 60_000_101_000);
    }

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

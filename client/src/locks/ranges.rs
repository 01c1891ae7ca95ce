//! What one lock-owner holds on one file, as POSIX counts it (fcntl(2), "Advisory record
//! locking"): a new lock replaces whatever the owner held on its bytes (so a write lock over
//! a read lock upgrades it and a read lock over a write lock downgrades it), an unlock of
//! part of a lock splits it, and adjacent ranges of one kind are one lock. The server keeps
//! the same (our MDS with `OPEN4_RESULT_LOCKTYPE_POSIX`, knfsd through the kernel's POSIX
//! locks); the client mirrors it to know without asking when an owner holds nothing (no
//! LOCKU, no FREE_STATEID to send) and what to take again after the server lost its state.

use crate::client::LockKind;

/// Bytes `start..=end` held with one kind of lock; `end == u64::MAX` reaches the end of the
/// file however long it grows (what NFS writes as length `NFS4_UINT64_MAX`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Span {
    /// First byte.
    pub start: u64,
    /// Last byte (inclusive).
    pub end: u64,
    /// Read or write.
    pub kind: LockKind,
}

/// One owner's held ranges. Invariants: sorted by start, never overlapping, and two spans of
/// one kind never touch (they would be one).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Ranges {
    spans: Vec<Span>,
}

impl Ranges {
    /// Whether nothing is held.
    pub(crate) fn is_empty(&self) -> bool {
        self.spans.is_empty()
    }

    /// The held spans, by start.
    pub(crate) fn spans(&self) -> &[Span] {
        &self.spans
    }

    /// Whether any byte of `start..=end` is held.
    pub(crate) fn overlaps(&self, start: u64, end: u64) -> bool {
        self.spans.iter().any(|s| s.start <= end && start <= s.end)
    }

    /// The kind held on byte `at`, if any.
    #[cfg(test)]
    pub(crate) fn kind_at(&self, at: u64) -> Option<LockKind> {
        self.spans
            .iter()
            .find(|s| s.start <= at && at <= s.end)
            .map(|s| s.kind)
    }

    /// Holds `start..=end` with `kind`, replacing what was held there (`start <= end`).
    pub(crate) fn set(&mut self, start: u64, end: u64, kind: LockKind) {
        self.unset(start, end);
        let at = self.spans.partition_point(|s| s.start < start);
        let mut new = Span { start, end, kind };
        // A neighbour of the same kind that touches the new span joins it. After `unset`
        // nothing overlaps, so touching means ending just before or starting just after.
        let mut from = at;
        if at > 0 {
            let p = self.spans[at - 1];
            if p.kind == kind && p.end.checked_add(1) == Some(start) {
                new.start = p.start;
                from = at - 1;
            }
        }
        let mut to = at;
        if let Some(n) = self.spans.get(at) {
            if n.kind == kind && end.checked_add(1) == Some(n.start) {
                new.end = n.end;
                to = at + 1;
            }
        }
        self.spans.splice(from..to, [new]);
    }

    /// Releases `start..=end` (`start <= end`): spans inside go, spans across an edge keep
    /// the part outside, a span over the whole range becomes two.
    pub(crate) fn unset(&mut self, start: u64, end: u64) {
        if !self.overlaps(start, end) {
            return;
        }
        let mut kept = Vec::with_capacity(self.spans.len() + 1);
        for s in self.spans.drain(..) {
            if s.end < start || end < s.start {
                kept.push(s);
                continue;
            }
            // Overlapping: `s.start < start` implies start > 0, `s.end > end` implies
            // end < u64::MAX, so neither edge overflows.
            if s.start < start {
                kept.push(Span {
                    end: start - 1,
                    ..s
                });
            }
            if s.end > end {
                kept.push(Span {
                    start: end + 1,
                    ..s
                });
            }
        }
        self.spans = kept;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use LockKind::{Read, Write};

    fn of(spans: &[(u64, u64, LockKind)]) -> Vec<Span> {
        spans
            .iter()
            .map(|&(start, end, kind)| Span { start, end, kind })
            .collect()
    }

    #[test]
    fn adjacent_ranges_of_one_kind_merge_and_of_two_kinds_do_not() {
        let mut r = Ranges::default();
        r.set(0, 9, Write);
        r.set(10, 19, Write);
        assert_eq!(r.spans(), of(&[(0, 19, Write)]));
        r.set(20, 29, Read);
        r.set(40, 49, Write);
        r.set(30, 39, Write);
        assert_eq!(
            r.spans(),
            of(&[(0, 19, Write), (20, 29, Read), (30, 49, Write)])
        );
    }

    #[test]
    fn a_partial_unlock_splits_and_an_unlock_to_the_end_trims() {
        let mut r = Ranges::default();
        r.set(0, 99, Write);
        r.unset(40, 59);
        assert_eq!(r.spans(), of(&[(0, 39, Write), (60, 99, Write)]));
        r.unset(50, u64::MAX);
        assert_eq!(r.spans(), of(&[(0, 39, Write)]));
        r.unset(0, 0);
        assert_eq!(r.spans(), of(&[(1, 39, Write)]));
        r.unset(0, u64::MAX);
        assert!(r.is_empty());
    }

    #[test]
    fn a_lock_over_another_kind_upgrades_or_downgrades_just_its_bytes() {
        let mut r = Ranges::default();
        r.set(0, 99, Read);
        r.set(20, 29, Write);
        assert_eq!(
            r.spans(),
            of(&[(0, 19, Read), (20, 29, Write), (30, 99, Read)])
        );
        r.set(0, 99, Read);
        assert_eq!(r.spans(), of(&[(0, 99, Read)]));
        r.set(50, u64::MAX, Write);
        assert_eq!(r.spans(), of(&[(0, 49, Read), (50, u64::MAX, Write)]));
        assert!(r.overlaps(u64::MAX, u64::MAX));
        assert!(!Ranges::default().overlaps(0, u64::MAX));
    }

    #[test]
    fn ranges_at_both_ends_of_the_offsets_do_not_overflow() {
        let mut r = Ranges::default();
        r.set(u64::MAX, u64::MAX, Write);
        r.set(0, 0, Write);
        r.set(1, u64::MAX - 1, Write);
        assert_eq!(r.spans(), of(&[(0, u64::MAX, Write)]));
        r.unset(1, u64::MAX - 1);
        assert_eq!(r.spans(), of(&[(0, 0, Write), (u64::MAX, u64::MAX, Write)]));
    }

    /// xorshift64*: reproducible random operations without a dependency.
    struct Rng(u64);

    impl Rng {
        fn below(&mut self, n: u64) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) % n
        }
    }

    /// Random sets and unsets against a byte array over 48 positions, the last standing for
    /// every byte from 47 to the end of the offsets (a range reaching it reaches u64::MAX).
    #[test]
    fn random_operations_agree_with_a_byte_by_byte_model() {
        const N: u64 = 48;
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        for round in 0..300 {
            let mut r = Ranges::default();
            let mut model = [None::<LockKind>; N as usize];
            for step in 0..60 {
                let start = rng.below(N - 1);
                let last = start + rng.below(N - start);
                let end = if last == N - 1 { u64::MAX } else { last };
                match rng.below(3) {
                    0 => {
                        r.unset(start, end);
                        model[start as usize..=last as usize].fill(None);
                    }
                    k => {
                        let kind = if k == 1 { Read } else { Write };
                        r.set(start, end, kind);
                        model[start as usize..=last as usize].fill(Some(kind));
                    }
                }
                let at = |p: u64| if p == N - 1 { u64::MAX } else { p };
                for p in 0..N {
                    assert_eq!(
                        r.kind_at(at(p)),
                        model[p as usize],
                        "round {round} step {step}: byte {p} of {:?}",
                        r.spans()
                    );
                }
                assert_eq!(r.kind_at(N - 1), model[N as usize - 1]);
                for w in r.spans().windows(2) {
                    let (a, b) = (w[0], w[1]);
                    assert!(a.start <= a.end && a.end < b.start, "{:?}", r.spans());
                    assert!(
                        a.kind != b.kind || a.end + 1 < b.start,
                        "not merged: {:?}",
                        r.spans()
                    );
                }
                assert_eq!(r.is_empty(), model.iter().all(Option::is_none));
            }
        }
    }
}

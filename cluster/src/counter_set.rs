//! A set of stateid counters kept as ranges: how the MDS and the data servers remember the
//! open and lock stateids closed in one MDS boot.
//!
//! A data server must refuse I/O under a stateid the MDS has closed (RFC 8881 section
//! 13.9.1), and it cannot ask. One entry per closed stateid would grow for the life of the
//! MDS's boot: a create storm of millions of files is millions of entries on the MDS (kept to
//! resend to a data server that registers again) and on every data server. But the MDS mints
//! stateid counters in order and most stateids are closed soon after, so the closed counters
//! are a few long runs: the set keeps one entry per run, about as many as there are live
//! stateids.

use std::collections::BTreeMap;

/// A set of `u32` counters, stored as disjoint, non-adjacent inclusive ranges.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CounterSet {
    /// Range start -> range end (inclusive); no two ranges overlap or touch.
    ranges: BTreeMap<u32, u32>,
}

impl CounterSet {
    /// The empty set.
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether `c` is in the set.
    pub fn contains(&self, c: u32) -> bool {
        self.ranges
            .range(..=c)
            .next_back()
            .is_some_and(|(_, &end)| c <= end)
    }

    /// Adds `c`.
    pub fn insert(&mut self, c: u32) {
        self.insert_range(c, c);
    }

    /// Adds `first..=last` (nothing if `first > last`), merging with the ranges it overlaps
    /// or touches.
    pub fn insert_range(&mut self, first: u32, last: u32) {
        if first > last {
            return;
        }
        let (mut start, mut end) = (first, last);
        // A range starting at or before `first` that reaches it (or ends just before it).
        if let Some((&s, &e)) = self.ranges.range(..=first).next_back() {
            if e.saturating_add(1) >= first {
                start = s;
                end = end.max(e);
            }
        }
        // Ranges starting inside, or just after, the new one.
        let after: Vec<(u32, u32)> = self
            .ranges
            .range(start..=end.saturating_add(1))
            .map(|(&s, &e)| (s, e))
            .collect();
        for (s, e) in after {
            self.ranges.remove(&s);
            end = end.max(e);
        }
        self.ranges.insert(start, end);
    }

    /// The ranges, in order, as `(first, last)` (inclusive).
    pub fn ranges(&self) -> impl Iterator<Item = (u32, u32)> + '_ {
        self.ranges.iter().map(|(&s, &e)| (s, e))
    }

    /// How many ranges the set keeps (its memory).
    pub fn range_count(&self) -> usize {
        self.ranges.len()
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }

    /// Empties the set.
    pub fn clear(&mut self) {
        self.ranges.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeSet;

    #[test]
    fn counters_closed_in_order_are_one_range() {
        let mut s = CounterSet::new();
        for c in 1..=100_000 {
            s.insert(c);
        }
        assert_eq!(s.range_count(), 1);
        assert!(s.contains(1) && s.contains(100_000));
        assert!(!s.contains(0) && !s.contains(100_001));
    }

    #[test]
    fn a_gap_splits_and_filling_it_joins() {
        let mut s = CounterSet::new();
        s.insert_range(1, 10);
        s.insert_range(12, 20);
        assert_eq!(s.ranges().collect::<Vec<_>>(), [(1, 10), (12, 20)]);
        assert!(!s.contains(11));
        s.insert(11);
        assert_eq!(s.ranges().collect::<Vec<_>>(), [(1, 20)]);
        s.insert_range(u32::MAX - 1, u32::MAX);
        s.insert_range(0, 0);
        assert_eq!(
            s.ranges().collect::<Vec<_>>(),
            [(0, 20), (u32::MAX - 1, u32::MAX)]
        );
        s.insert_range(5, 1);
        assert_eq!(s.range_count(), 2, "an empty range adds nothing");
    }

    proptest! {
        #[test]
        fn the_set_holds_exactly_what_was_inserted_in_disjoint_non_touching_ranges(
            ops in proptest::collection::vec((0u32..200, 0u32..8), 0..60),
        ) {
            let mut s = CounterSet::new();
            let mut model = BTreeSet::new();
            for (first, len) in ops {
                s.insert_range(first, first + len);
                model.extend(first..=first + len);
            }
            for c in 0..220 {
                prop_assert_eq!(s.contains(c), model.contains(&c), "counter {}", c);
            }
            let r: Vec<(u32, u32)> = s.ranges().collect();
            for w in r.windows(2) {
                prop_assert!(w[0].1.saturating_add(1) < w[1].0, "{:?}", r);
            }
            let n: u64 = r.iter().map(|&(a, b)| u64::from(b - a) + 1).sum();
            prop_assert_eq!(n, model.len() as u64);
        }
    }
}

//! The attribute cache: a file's attributes as the last GETATTR (or a reply carrying them)
//! saw them, served for the attribute timeout.
//!
//! Entries expire in the order they were stored, so they sit in a queue beside the map, and
//! storing one first drops what expired at the front: each store costs O(1) amortised
//! however many files the cache holds. (It used to sweep the whole map on every store once it
//! held 4,096 entries, which made each `stat` of a 20,000-file tree cost 0.3 ms of client CPU,
//! all of it reading the clock.) The cache also holds at most [`MAX_ENTRIES`]: past that the
//! oldest go first, so a client that stats millions of files within one timeout keeps a
//! bounded amount of memory.

use std::collections::{HashMap, VecDeque};
use std::time::{Duration, Instant};

use nfs_proto::nfs4::NfsFh4;

use crate::attr::Metadata;

/// The most files whose attributes are kept (about 200 bytes each with their handles).
pub(crate) const MAX_ENTRIES: usize = 1 << 16;

/// Filehandle -> (attributes, when fetched), with the order they were stored in.
#[derive(Default)]
pub(crate) struct AttrCache {
    map: HashMap<NfsFh4, (Metadata, Instant)>,
    /// Every store, oldest first. An item whose time is not its entry's any more was
    /// overwritten by a later store (or its entry was forgotten): dropped when it comes out.
    order: VecDeque<(NfsFh4, Instant)>,
}

impl AttrCache {
    /// `meta` of `fh`, fetched at `now`; entries older than `timeout` go first.
    pub(crate) fn store(&mut self, fh: &NfsFh4, meta: &Metadata, now: Instant, timeout: Duration) {
        while let Some((_, at)) = self.order.front() {
            let expired = now.saturating_duration_since(*at) >= timeout;
            // The queue may hold stale items of overwritten entries besides the live ones:
            // bound it too, so that one file stored over and over cannot grow it.
            if !expired && self.map.len() < MAX_ENTRIES && self.order.len() < 2 * MAX_ENTRIES {
                break;
            }
            self.pop_front();
        }
        self.map.insert(fh.clone(), (meta.clone(), now));
        self.order.push_back((fh.clone(), now));
    }

    /// `fh`'s attributes if fetched less than `timeout` before `now`.
    pub(crate) fn get(&self, fh: &NfsFh4, now: Instant, timeout: Duration) -> Option<Metadata> {
        self.map
            .get(fh)
            .filter(|(_, at)| now.saturating_duration_since(*at) < timeout)
            .map(|(m, _)| m.clone())
    }

    /// Forgets `fh`'s attributes (its queue item goes when it reaches the front).
    pub(crate) fn forget(&mut self, fh: &NfsFh4) {
        self.map.remove(fh);
    }

    /// Drops the oldest store, and its entry if no later store replaced it.
    fn pop_front(&mut self) {
        if let Some((fh, at)) = self.order.pop_front() {
            if self.map.get(&fh).is_some_and(|(_, t)| *t == at) {
                self.map.remove(&fh);
            }
        }
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.map.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fh(i: u64) -> NfsFh4 {
        NfsFh4(bytes::Bytes::copy_from_slice(&i.to_be_bytes()))
    }

    fn meta(size: u64) -> Metadata {
        Metadata {
            file_type: crate::attr::FileType::File,
            size,
            mode: 0o644,
            change: 0,
            fileid: size,
            nlink: 1,
            owner: String::new(),
            group: String::new(),
            atime: std::time::UNIX_EPOCH,
            mtime: std::time::UNIX_EPOCH,
            ctime: std::time::UNIX_EPOCH,
            space_used: 0,
            rdev: (0, 0),
        }
    }

    const T: Duration = Duration::from_secs(3);

    #[test]
    fn an_entry_is_served_until_its_timeout_and_a_later_store_replaces_it() {
        let mut c = AttrCache::default();
        let t0 = Instant::now();
        c.store(&fh(1), &meta(1), t0, T);
        assert_eq!(
            c.get(&fh(1), t0 + Duration::from_secs(2), T)
                .map(|m| m.size),
            Some(1)
        );
        assert_eq!(c.get(&fh(1), t0 + T, T), None);
        c.store(&fh(1), &meta(2), t0 + Duration::from_secs(2), T);
        // The first store's queue item expires; the entry stored later stays.
        c.store(&fh(2), &meta(9), t0 + Duration::from_secs(4), T);
        assert_eq!(
            c.get(&fh(1), t0 + Duration::from_secs(4), T)
                .map(|m| m.size),
            Some(2)
        );
        c.forget(&fh(1));
        assert_eq!(c.get(&fh(1), t0 + Duration::from_secs(4), T), None);
    }

    #[test]
    fn expired_entries_go_as_new_ones_come_and_the_cache_stays_bounded() {
        let mut c = AttrCache::default();
        let t0 = Instant::now();
        for i in 0..1000 {
            c.store(&fh(i), &meta(i), t0, T);
        }
        assert_eq!(c.len(), 1000);
        c.store(&fh(5000), &meta(0), t0 + T, T);
        assert_eq!(c.len(), 1, "every older entry expired");

        // Many more fresh entries than the bound: the oldest go.
        let n = MAX_ENTRIES as u64 + 10;
        for i in 0..n {
            c.store(&fh(10_000 + i), &meta(i), t0 + T, T);
        }
        assert_eq!(c.len(), MAX_ENTRIES);
        assert!(c.get(&fh(10_000), t0 + T, T).is_none());
        assert!(c.get(&fh(10_000 + n - 1), t0 + T, T).is_some());

        // One file stored over and over does not grow the queue without bound.
        for _ in 0..3 * MAX_ENTRIES {
            c.store(&fh(1), &meta(1), t0 + T, T);
        }
        assert!(c.order.len() <= 2 * MAX_ENTRIES + 1);
        assert!(c.get(&fh(1), t0 + T, T).is_some());
    }
}

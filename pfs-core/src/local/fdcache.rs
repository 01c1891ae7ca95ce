//! A small least-recently-used cache of open object files.

use std::collections::HashMap;
use std::os::fd::OwnedFd;
use std::sync::Arc;

use crate::id::ObjectId;

/// Open files by object, evicting the least recently used when full.
///
/// Entries are `Arc`s: an evicted or removed file stays open until the last operation using
/// it finishes. Eviction scans for the oldest entry (O(capacity) on a miss, which also pays
/// for an `open` system call, so a few hundred entries cost nothing noticeable).
#[derive(Debug)]
pub(super) struct FdCache {
    capacity: usize,
    tick: u64,
    map: HashMap<ObjectId, (Arc<OwnedFd>, u64)>,
}

impl FdCache {
    pub(super) fn new(capacity: usize) -> Self {
        FdCache {
            capacity,
            tick: 0,
            map: HashMap::with_capacity(capacity),
        }
    }

    pub(super) fn get(&mut self, id: ObjectId) -> Option<Arc<OwnedFd>> {
        self.tick += 1;
        let tick = self.tick;
        self.map.get_mut(&id).map(|(fd, used)| {
            *used = tick;
            fd.clone()
        })
    }

    pub(super) fn insert(&mut self, id: ObjectId, fd: Arc<OwnedFd>) {
        if self.capacity == 0 {
            return;
        }
        if !self.map.contains_key(&id) && self.map.len() >= self.capacity {
            let oldest = self
                .map
                .iter()
                .min_by_key(|(_, (_, used))| *used)
                .map(|(id, _)| *id);
            if let Some(oldest) = oldest {
                self.map.remove(&oldest);
            }
        }
        self.tick += 1;
        self.map.insert(id, (fd, self.tick));
    }

    pub(super) fn remove(&mut self, id: ObjectId) {
        self.map.remove(&id);
    }

    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.map.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fd() -> Arc<OwnedFd> {
        Arc::new(std::fs::File::open("/dev/null").unwrap().into())
    }

    #[test]
    fn least_recently_used_entry_is_evicted_first() {
        let mut c = FdCache::new(2);
        let (a, b, d) = (ObjectId::whole(1), ObjectId::whole(2), ObjectId::whole(3));
        c.insert(a, fd());
        c.insert(b, fd());
        assert!(c.get(a).is_some());
        c.insert(d, fd());
        assert!(c.get(b).is_none(), "b was the least recently used");
        assert!(c.get(a).is_some() && c.get(d).is_some());
        assert_eq!(c.len(), 2);
    }

    #[test]
    fn zero_capacity_caches_nothing() {
        let mut c = FdCache::new(0);
        c.insert(ObjectId::whole(1), fd());
        assert!(c.get(ObjectId::whole(1)).is_none());
    }

    #[test]
    fn reinserting_a_cached_object_does_not_evict_another() {
        let mut c = FdCache::new(2);
        c.insert(ObjectId::whole(1), fd());
        c.insert(ObjectId::whole(2), fd());
        c.insert(ObjectId::whole(2), fd());
        assert_eq!(c.len(), 2);
        assert!(c.get(ObjectId::whole(1)).is_some());
    }
}

//! An in-memory store that can simulate a crash, for testing durability contracts.

use std::collections::{BTreeSet, HashMap};
use std::sync::Mutex;

use bytes::Bytes;
use rustix::io::Errno;

use crate::error::{Result, StoreError};
use crate::id::ObjectId;
use crate::lock;
use crate::store::{
    copy_count, range_end, Deallocated, FsStats, ObjectStore, ReadDone, SeekWhat, Stability,
    WriteDone,
};
use crate::verifier::{new_write_verifier, VerifierCell};

/// Space reported by `statfs` when no capacity is set: 1 TiB.
const DEFAULT_CAPACITY: u64 = 1 << 40;
/// Default largest object: objects are dense vectors here, so a write at a huge offset must
/// be refused ([`StoreError::TooBig`]) rather than allocate it.
pub const CRASHSIM_MAX_OBJECT_SIZE: u64 = 1 << 30;
/// The simulated file system's block: the unit in which space is allocated and freed, and
/// in which [`ObjectStore::seek`] sees data and holes.
const BLOCK: u64 = 4096;

#[derive(Debug, Default, Clone)]
struct SimObject {
    /// What reads see now (the page cache).
    written: Vec<u8>,
    /// What survives a crash (the disk); `None` if the object itself would vanish.
    durable: Option<Vec<u8>>,
    /// Numbers of the [`BLOCK`]s that hold storage (written or allocated, not punched or cut
    /// off): what `seek` calls data and `space_used` counts.
    blocks: BTreeSet<u64>,
}

impl SimObject {
    /// Copies `[offset, end)` (clipped to the written size) to the durable view, growing it
    /// to cover the range. Bytes of the durable view outside the range keep their old values:
    /// the strictest reading of "COMMIT makes this range durable".
    fn persist(&mut self, offset: u64, end: u64) {
        let end = (end.min(self.written.len() as u64)) as usize;
        let durable = self.durable.get_or_insert_with(Vec::new);
        let offset = offset as usize;
        if offset >= end {
            return;
        }
        if durable.len() < end {
            durable.resize(end, 0);
        }
        durable[offset..end].copy_from_slice(&self.written[offset..end]);
    }

    /// Sets the size in both views, as a synchronous truncate does; blocks past the new end
    /// are freed.
    fn resize(&mut self, size: usize) {
        self.written.resize(size, 0);
        self.durable.get_or_insert_with(Vec::new).resize(size, 0);
        self.blocks.split_off(&(size as u64).div_ceil(BLOCK));
    }

    /// Marks the blocks of `[offset, end)` as holding storage.
    fn fill_blocks(&mut self, offset: u64, end: u64) {
        if offset < end {
            self.blocks.extend(offset / BLOCK..=(end - 1) / BLOCK);
        }
    }
}

#[derive(Debug)]
struct Sim {
    objects: HashMap<ObjectId, SimObject>,
    capacity: Option<u64>,
    fail_next_sync: bool,
    crashes: u64,
}

impl Sim {
    fn used(&self) -> u64 {
        self.objects.values().map(|o| o.written.len() as u64).sum()
    }

    /// Refuses growth past the capacity with NoSpace, as a full disk does.
    fn check_space(&self, id: ObjectId, end: u64) -> Result<()> {
        let Some(cap) = self.capacity else {
            return Ok(());
        };
        let cur = self.objects.get(&id).map_or(0, |o| o.written.len() as u64);
        let grow = end.saturating_sub(cur);
        if self.used().saturating_add(grow) > cap {
            return Err(StoreError::NoSpace);
        }
        Ok(())
    }

    /// A sync of `id` that may have been told to fail: then the object's unstable bytes are
    /// gone (as when writeback fails and the kernel drops the pages) and the verifier changes.
    fn sync_fails(&mut self, id: ObjectId, verifier: &VerifierCell) -> Result<()> {
        if !std::mem::take(&mut self.fail_next_sync) {
            return Ok(());
        }
        if let Some(o) = self.objects.get_mut(&id) {
            match o.durable.clone() {
                Some(d) => {
                    o.blocks.split_off(&(d.len() as u64).div_ceil(BLOCK));
                    o.written = d;
                }
                None => {
                    self.objects.remove(&id);
                }
            }
        }
        verifier.renew();
        Err(StoreError::Io {
            op: "fdatasync",
            errno: Errno::IO,
        })
    }
}

/// Objects in memory with a "written" view (what reads see) and a "durable" view (what a
/// crash leaves), like redb's crash-simulating storage backend.
///
/// UNSTABLE writes change only the written view. DATA_SYNC/FILE_SYNC writes copy their own
/// range to the durable view, COMMIT copies exactly its range (`len` 0 = to the end), and
/// truncate, allocate, deallocate and remove change both views (they are synchronous).
/// [`CrashSimStore::crash`] throws away everything not durable and changes the verifier, as a
/// server restart would. This is stricter than [`crate::LocalStore`] (whose fdatasync makes
/// the whole object durable), so callers tested here rely only on what the contract promises.
#[derive(Debug)]
pub struct CrashSimStore {
    sim: Mutex<Sim>,
    max_object_size: u64,
    verifier: VerifierCell,
    /// Drawn at [`CrashSimStore::new`]; a crash keeps it (the synced objects survive).
    identity: [u8; 16],
}

impl Default for CrashSimStore {
    fn default() -> Self {
        Self::new()
    }
}

impl CrashSimStore {
    /// An empty store with unlimited space and objects up to [`CRASHSIM_MAX_OBJECT_SIZE`].
    pub fn new() -> Self {
        CrashSimStore {
            sim: Mutex::new(Sim {
                objects: HashMap::new(),
                capacity: None,
                fail_next_sync: false,
                crashes: 0,
            }),
            max_object_size: CRASHSIM_MAX_OBJECT_SIZE,
            verifier: VerifierCell::new(new_write_verifier()),
            identity: crate::identity::new_identity(),
        }
    }

    /// Objects larger than `max` are refused with [`StoreError::TooBig`].
    pub fn with_max_object_size(mut self, max: u64) -> Self {
        self.max_object_size = max;
        self
    }

    /// Limits the bytes all objects may hold together (`None`: unlimited); growth beyond it
    /// fails with [`StoreError::NoSpace`].
    pub fn set_capacity(&self, capacity: Option<u64>) {
        lock(&self.sim).capacity = capacity;
    }

    /// Makes the next sync (stable write or commit) fail with an I/O error, losing that
    /// object's unstable bytes and changing the verifier.
    pub fn fail_next_sync(&self) {
        lock(&self.sim).fail_next_sync = true;
    }

    /// Simulates a crash and restart: every byte not durable is lost (objects never synced
    /// vanish), and the verifier changes.
    pub fn crash(&self) {
        let mut sim = lock(&self.sim);
        sim.objects.retain(|_, o| match o.durable.take() {
            Some(d) => {
                o.blocks.split_off(&(d.len() as u64).div_ceil(BLOCK));
                o.written = d.clone();
                o.durable = Some(d);
                true
            }
            None => false,
        });
        sim.crashes += 1;
        self.verifier.renew();
    }

    /// How many times [`CrashSimStore::crash`] was called.
    pub fn crashes(&self) -> u64 {
        lock(&self.sim).crashes
    }

    /// The object's durable size: what [`ObjectStore::size`] would say after a crash.
    pub fn durable_size(&self, id: ObjectId) -> u64 {
        lock(&self.sim)
            .objects
            .get(&id)
            .and_then(|o| o.durable.as_ref())
            .map_or(0, |d| d.len() as u64)
    }
}

impl ObjectStore for CrashSimStore {
    fn write(
        &self,
        id: ObjectId,
        offset: u64,
        data: &[Bytes],
        stable: Stability,
    ) -> Result<WriteDone> {
        let len = data
            .iter()
            .fold(0u64, |n, b| n.saturating_add(b.len() as u64));
        let end = range_end(offset, len, self.max_object_size)?;
        if len == 0 {
            return Ok(WriteDone {
                count: 0,
                committed: stable,
            });
        }
        let mut sim = lock(&self.sim);
        sim.check_space(id, end)?;
        let o = sim.objects.entry(id).or_default();
        if (o.written.len() as u64) < end {
            o.written.resize(end as usize, 0);
        }
        let mut at = offset as usize;
        for piece in data {
            o.written[at..at + piece.len()].copy_from_slice(piece);
            at += piece.len();
        }
        o.fill_blocks(offset, end);
        if stable.is_stable() {
            sim.sync_fails(id, &self.verifier)?;
            if let Some(o) = sim.objects.get_mut(&id) {
                o.persist(offset, end);
            }
        }
        Ok(WriteDone {
            count: len,
            committed: stable,
        })
    }

    fn read(&self, id: ObjectId, offset: u64, len: u32) -> Result<ReadDone> {
        let sim = lock(&self.sim);
        let written = sim.objects.get(&id).map_or(&[][..], |o| &o.written[..]);
        let size = written.len() as u64;
        if offset >= size {
            return Ok(ReadDone {
                data: Bytes::new(),
                eof: true,
            });
        }
        let end = offset.saturating_add(u64::from(len)).min(size);
        let data = Bytes::copy_from_slice(&written[offset as usize..end as usize]);
        Ok(ReadDone {
            data,
            eof: end >= size,
        })
    }

    fn commit(&self, id: ObjectId, offset: u64, len: u64) -> Result<()> {
        let mut sim = lock(&self.sim);
        if !sim.objects.contains_key(&id) {
            return Ok(());
        }
        sim.sync_fails(id, &self.verifier)?;
        if let Some(o) = sim.objects.get_mut(&id) {
            let end = if len == 0 {
                u64::MAX
            } else {
                offset.saturating_add(len)
            };
            o.persist(offset, end);
        }
        Ok(())
    }

    fn truncate(&self, id: ObjectId, size: u64) -> Result<()> {
        range_end(size, 0, self.max_object_size)?;
        let mut sim = lock(&self.sim);
        if size == 0 && !sim.objects.contains_key(&id) {
            return Ok(());
        }
        sim.check_space(id, size)?;
        sim.objects.entry(id).or_default().resize(size as usize);
        Ok(())
    }

    fn size(&self, id: ObjectId) -> Result<u64> {
        Ok(lock(&self.sim)
            .objects
            .get(&id)
            .map_or(0, |o| o.written.len() as u64))
    }

    fn remove(&self, id: ObjectId) -> Result<()> {
        lock(&self.sim).objects.remove(&id);
        Ok(())
    }

    fn remove_file(&self, file: u64) -> Result<u32> {
        let mut sim = lock(&self.sim);
        let before = sim.objects.len();
        sim.objects.retain(|id, _| id.file != file);
        Ok((before - sim.objects.len()) as u32)
    }

    fn allocate(&self, id: ObjectId, offset: u64, len: u64) -> Result<()> {
        let end = range_end(offset, len, self.max_object_size)?;
        if len == 0 {
            return Ok(());
        }
        let mut sim = lock(&self.sim);
        sim.check_space(id, end)?;
        let o = sim.objects.entry(id).or_default();
        let size = (o.written.len() as u64).max(end);
        o.resize(size as usize);
        o.fill_blocks(offset, end);
        Ok(())
    }

    fn deallocate(&self, id: ObjectId, offset: u64, len: u64) -> Result<Deallocated> {
        let mut sim = lock(&self.sim);
        let Some(o) = sim.objects.get_mut(&id) else {
            return Ok(Deallocated::Nothing);
        };
        let end = offset.saturating_add(len);
        let zero = |v: &mut Vec<u8>| {
            let e = end.min(v.len() as u64);
            if offset < e {
                v[offset as usize..e as usize].fill(0);
            }
        };
        if offset >= o.written.len() as u64 {
            return Ok(Deallocated::Nothing);
        }
        zero(&mut o.written);
        if let Some(d) = o.durable.as_mut() {
            zero(d);
        }
        // Blocks wholly inside the range are freed, as PUNCH_HOLE frees them; partly
        // covered ones keep their (now partly zero) storage.
        let e = end.min(o.written.len() as u64);
        let (first, last) = (offset.div_ceil(BLOCK), e / BLOCK);
        if first < last {
            let mut tail = o.blocks.split_off(&first);
            let mut rest = tail.split_off(&last);
            o.blocks.append(&mut rest);
        }
        Ok(Deallocated::HolePunched)
    }

    fn seek(&self, id: ObjectId, offset: u64, what: SeekWhat) -> Result<Option<u64>> {
        let sim = lock(&self.sim);
        let Some(o) = sim.objects.get(&id) else {
            return Ok(None);
        };
        let size = o.written.len() as u64;
        if offset >= size {
            return Ok(None);
        }
        let first = offset / BLOCK;
        Ok(match what {
            SeekWhat::Data => o
                .blocks
                .range(first..)
                .next()
                .map(|&b| (b * BLOCK).max(offset))
                .filter(|&d| d < size),
            SeekWhat::Hole => {
                let mut b = first;
                for &held in o.blocks.range(first..) {
                    if held != b {
                        break;
                    }
                    b += 1;
                }
                Some((b * BLOCK).clamp(offset, size))
            }
        })
    }

    fn space_used(&self, id: ObjectId) -> Result<u64> {
        Ok(lock(&self.sim)
            .objects
            .get(&id)
            .map_or(0, |o| o.blocks.len() as u64 * BLOCK))
    }

    fn copy_range(
        &self,
        src: ObjectId,
        dst: ObjectId,
        src_off: u64,
        dst_off: u64,
        len: u64,
    ) -> Result<u64> {
        let mut sim = lock(&self.sim);
        let source = sim.objects.get(&src).map_or(&[][..], |o| &o.written[..]);
        let count = copy_count(source.len() as u64, src_off, len);
        if count == 0 {
            return Ok(0);
        }
        let end = range_end(dst_off, count, self.max_object_size)?;
        let bytes = source[src_off as usize..(src_off + count) as usize].to_vec();
        sim.check_space(dst, end)?;
        let o = sim.objects.entry(dst).or_default();
        if (o.written.len() as u64) < end {
            o.written.resize(end as usize, 0);
        }
        o.written[dst_off as usize..end as usize].copy_from_slice(&bytes);
        sim.sync_fails(dst, &self.verifier)?;
        if let Some(o) = sim.objects.get_mut(&dst) {
            o.persist(dst_off, end);
        }
        Ok(count)
    }

    /// Memory has no blocks to share, so a clone is a copy: this store stands in for a
    /// reflink-capable file system in tests.
    fn clone_range(
        &self,
        src: ObjectId,
        dst: ObjectId,
        src_off: u64,
        dst_off: u64,
        len: u64,
    ) -> Result<()> {
        self.copy_range(src, dst, src_off, dst_off, len).map(|_| ())
    }

    fn verifier(&self) -> [u8; 8] {
        self.verifier.get()
    }

    fn identity(&self) -> [u8; 16] {
        self.identity
    }

    fn statfs(&self) -> Result<FsStats> {
        let sim = lock(&self.sim);
        let total = sim.capacity.unwrap_or(DEFAULT_CAPACITY);
        let free = total.saturating_sub(sim.used());
        let files = 1 << 32;
        let ffree = files - (sim.objects.len() as u64).min(files);
        Ok(FsStats {
            total,
            free,
            avail: free,
            files,
            ffree,
        })
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use proptest::prelude::*;

    use super::*;
    use crate::testsuite::object_store_suite;

    object_store_suite!(|| (CrashSimStore::new(), ()), keeps_data = true);

    const A: ObjectId = ObjectId { file: 1, stripe: 0 };
    const B: ObjectId = ObjectId { file: 1, stripe: 1 };

    fn w(s: &CrashSimStore, id: ObjectId, off: u64, data: &[u8], stable: Stability) {
        s.write(id, off, &[Bytes::copy_from_slice(data)], stable)
            .unwrap();
    }

    fn contents(s: &CrashSimStore, id: ObjectId) -> Vec<u8> {
        s.read(id, 0, u32::MAX).unwrap().data.to_vec()
    }

    #[test]
    fn unstable_writes_are_lost_in_a_crash_and_the_verifier_changes() {
        let s = CrashSimStore::new();
        w(&s, A, 0, b"stable", Stability::FileSync);
        w(&s, A, 0, b"UNSTA", Stability::Unstable);
        w(&s, B, 0, b"never synced", Stability::Unstable);
        let v = s.verifier();
        s.crash();
        assert_eq!(contents(&s, A), b"stable");
        assert_eq!(s.size(B).unwrap(), 0, "an object never synced vanishes");
        assert_ne!(s.verifier(), v);
        assert_eq!(s.crashes(), 1);
    }

    #[test]
    fn commit_makes_earlier_unstable_writes_survive() {
        let s = CrashSimStore::new();
        w(&s, A, 0, b"one", Stability::Unstable);
        w(&s, A, 3, b"two", Stability::Unstable);
        s.commit(A, 0, 0).unwrap();
        w(&s, A, 6, b"three", Stability::Unstable);
        s.crash();
        assert_eq!(contents(&s, A), b"onetwo");
    }

    #[test]
    fn commit_of_a_range_persists_only_that_range() {
        let s = CrashSimStore::new();
        w(&s, A, 0, b"abcdefgh", Stability::Unstable);
        s.commit(A, 2, 3).unwrap();
        assert_eq!(s.durable_size(A), 5);
        s.crash();
        assert_eq!(contents(&s, A), b"\0\0cde");
    }

    #[test]
    fn data_sync_write_survives_a_crash() {
        let s = CrashSimStore::new();
        w(&s, A, 4, b"data", Stability::DataSync);
        s.crash();
        assert_eq!(contents(&s, A), b"\0\0\0\0data");
    }

    #[test]
    fn truncate_and_remove_are_durable_at_once() {
        let s = CrashSimStore::new();
        w(&s, A, 0, b"abcdef", Stability::FileSync);
        s.truncate(A, 2).unwrap();
        w(&s, B, 0, b"b", Stability::FileSync);
        s.remove(B).unwrap();
        s.crash();
        assert_eq!(contents(&s, A), b"ab");
        assert_eq!(s.size(B).unwrap(), 0);
    }

    #[test]
    fn failed_sync_loses_unstable_data_and_changes_the_verifier() {
        let s = CrashSimStore::new();
        w(&s, A, 0, b"keep", Stability::FileSync);
        w(&s, A, 0, b"lost", Stability::Unstable);
        let v = s.verifier();
        s.fail_next_sync();
        let e = s.commit(A, 0, 0).unwrap_err();
        assert!(matches!(e, StoreError::Io { .. }), "{e:?}");
        assert_ne!(s.verifier(), v);
        assert_eq!(contents(&s, A), b"keep");
        s.commit(A, 0, 0).unwrap();
    }

    #[test]
    fn growth_past_the_capacity_is_no_space() {
        let s = CrashSimStore::new();
        s.set_capacity(Some(10));
        w(&s, A, 0, b"0123456789", Stability::Unstable);
        let e = s
            .write(B, 0, &[Bytes::from_static(b"x")], Stability::Unstable)
            .unwrap_err();
        assert_eq!(e, StoreError::NoSpace);
        w(&s, A, 0, b"overwrite!", Stability::Unstable);
        assert_eq!(s.statfs().unwrap().free, 0);
    }

    #[test]
    fn writes_beyond_the_maximum_object_size_are_too_big() {
        let s = CrashSimStore::new().with_max_object_size(100);
        w(&s, A, 96, b"full", Stability::Unstable);
        let e = s
            .write(A, 97, &[Bytes::from_static(b"over")], Stability::Unstable)
            .unwrap_err();
        assert_eq!(e, StoreError::TooBig { offset: 97, len: 4 });
    }

    /// An operation of the crash contract test.
    #[derive(Debug, Clone)]
    enum Op {
        Write {
            obj: usize,
            off: u64,
            data: Vec<u8>,
            stable: Stability,
        },
        Commit {
            obj: usize,
            off: u64,
            len: u64,
        },
        Truncate {
            obj: usize,
            size: u64,
        },
        Deallocate {
            obj: usize,
            off: u64,
            len: u64,
        },
        Remove {
            obj: usize,
        },
        Crash,
    }

    fn op() -> impl Strategy<Value = Op> {
        let obj = 0..2usize;
        let stable = prop_oneof![
            2 => Just(Stability::Unstable),
            1 => Just(Stability::DataSync),
            1 => Just(Stability::FileSync)
        ];
        prop_oneof![
            6 => (obj.clone(), 0u64..300, proptest::collection::vec(1u8..=255, 1..64), stable)
                .prop_map(|(obj, off, data, stable)| Op::Write { obj, off, data, stable }),
            2 => (obj.clone(), 0u64..300, 0u64..100)
                .prop_map(|(obj, off, len)| Op::Commit { obj, off, len }),
            1 => (obj.clone(), 0u64..300).prop_map(|(obj, size)| Op::Truncate { obj, size }),
            1 => (obj.clone(), 0u64..300, 0u64..100)
                .prop_map(|(obj, off, len)| Op::Deallocate { obj, off, len }),
            1 => obj.prop_map(|obj| Op::Remove { obj }),
            1 => Just(Op::Crash),
        ]
    }

    /// Per object, the bytes written so far and, per byte, the value a crash must keep
    /// (`Some`: acknowledged stable; `None`: last written unstable, may be lost).
    #[derive(Debug, Default, Clone)]
    struct Model {
        written: Vec<u8>,
        must: Vec<Option<u8>>,
    }

    impl Model {
        fn resize(&mut self, size: usize) {
            let old = self.written.len();
            self.written.resize(size, 0);
            self.must.truncate(size);
            // A synchronous grow makes the new bytes durable zeros; bytes that were unstable
            // stay unknown.
            self.must.resize(old.min(size), None);
            self.must.resize(size, Some(0));
        }
    }

    proptest! {
        /// After crash(), every byte acknowledged as stable (FILE_SYNC/DATA_SYNC, or covered
        /// by a later COMMIT) is there, nothing beyond the pre-crash size appears, and the
        /// verifier has changed.
        #[test]
        fn crash_keeps_every_byte_acknowledged_as_stable(ops in proptest::collection::vec(op(), 1..60)) {
            let s = CrashSimStore::new();
            let ids = [A, B];
            let mut model: HashMap<usize, Model> = HashMap::new();
            for op in &ops {
                match op {
                    Op::Write { obj, off, data, stable } => {
                        let done = s.write(ids[*obj], *off, &[Bytes::copy_from_slice(data)], *stable).unwrap();
                        prop_assert!(done.committed >= *stable);
                        let m = model.entry(*obj).or_default();
                        let (o, end) = (*off as usize, *off as usize + data.len());
                        if m.written.len() < end {
                            m.written.resize(end, 0);
                            m.must.resize(end, None);
                        }
                        m.written[o..end].copy_from_slice(data);
                        for (i, &x) in data.iter().enumerate() {
                            m.must[o + i] = stable.is_stable().then_some(x);
                        }
                    }
                    Op::Commit { obj, off, len } => {
                        s.commit(ids[*obj], *off, *len).unwrap();
                        if let Some(m) = model.get_mut(obj) {
                            let end = if *len == 0 { m.written.len() } else { (*off + *len) as usize };
                            for i in (*off as usize)..end.min(m.written.len()) {
                                m.must[i] = Some(m.written[i]);
                            }
                        }
                    }
                    Op::Truncate { obj, size } => {
                        s.truncate(ids[*obj], *size).unwrap();
                        if *size > 0 || model.contains_key(obj) {
                            model.entry(*obj).or_default().resize(*size as usize);
                        }
                    }
                    Op::Deallocate { obj, off, len } => {
                        s.deallocate(ids[*obj], *off, *len).unwrap();
                        if let Some(m) = model.get_mut(obj) {
                            let end = ((*off + *len) as usize).min(m.written.len());
                            // Durable bytes become durable zeros; bytes that were only
                            // written may still vanish with the tail in a crash.
                            for i in (*off as usize)..end {
                                m.written[i] = 0;
                                m.must[i] = m.must[i].map(|_| 0);
                            }
                        }
                    }
                    Op::Remove { obj } => {
                        s.remove(ids[*obj]).unwrap();
                        model.remove(obj);
                    }
                    Op::Crash => {
                        let v = s.verifier();
                        s.crash();
                        prop_assert_ne!(s.verifier(), v);
                        for (obj, id) in ids.iter().enumerate() {
                            let after = contents(&s, *id);
                            let m = model.remove(&obj).unwrap_or_default();
                            prop_assert!(after.len() <= m.written.len(), "{} grew in a crash", id);
                            for (i, must) in m.must.iter().enumerate() {
                                if let Some(x) = must {
                                    prop_assert_eq!(after.get(i), Some(x), "{} byte {} lost", id, i);
                                }
                            }
                            if !after.is_empty() || s.size(*id).unwrap() > 0 {
                                let n = after.len();
                                model.insert(obj, Model { must: after.iter().map(|&x| Some(x)).collect(), written: after });
                                prop_assert_eq!(s.size(*id).unwrap(), n as u64);
                            }
                        }
                    }
                }
            }
        }
    }
}

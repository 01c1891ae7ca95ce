//! A store that keeps sizes and discards data: the software stack's ceiling.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

use bytes::Bytes;

use crate::error::Result;
use crate::id::ObjectId;
use crate::lock;
use crate::store::{
    copy_count, range_end, Deallocated, FsStats, ObjectStore, ReadDone, SeekWhat, Stability,
    WriteDone,
};
use crate::verifier::new_write_verifier;

/// Longest read a [`NullStore`] answers in one go (longer reads come back short).
pub const NULL_MAX_READ: usize = 16 << 20;

/// Zeros that reads hand out as slices: allocated zeroed once (calloc, so the pages are the
/// kernel's shared zero page until touched, and never touched), not stored in the binary.
static ZEROS: OnceLock<Bytes> = OnceLock::new();

fn zeros(n: usize) -> Bytes {
    ZEROS
        .get_or_init(|| Bytes::from(vec![0u8; NULL_MAX_READ]))
        .slice(..n)
}

/// Keeps each object's size and nothing else: writes are discarded, reads return zeros (slices
/// of one shared buffer: no allocation, no copy). With it, a benchmark measures the protocol
/// stack alone, as PVFS2's "TAS" storage stub did.
///
/// Writes report the stability that was asked for (so clients still exercise COMMIT);
/// commits do nothing; `statfs` reports a fixed 1 PiB of free space and 2^32 free inodes.
#[derive(Debug)]
pub struct NullStore {
    sizes: Mutex<HashMap<ObjectId, u64>>,
    max_object_size: u64,
    verifier: [u8; 8],
    /// Its sizes live in memory: every instance is a store of its own.
    identity: [u8; 16],
}

impl Default for NullStore {
    fn default() -> Self {
        Self::new()
    }
}

impl NullStore {
    /// An empty store that accepts objects up to `i64::MAX` bytes.
    pub fn new() -> Self {
        Self::with_max_object_size(i64::MAX as u64)
    }

    /// An empty store refusing objects larger than `max` with [`StoreError::TooBig`].
    pub fn with_max_object_size(max: u64) -> Self {
        NullStore {
            sizes: Mutex::new(HashMap::new()),
            max_object_size: max,
            verifier: new_write_verifier(),
            identity: crate::identity::new_identity(),
        }
    }

    fn grow_to(&self, id: ObjectId, end: u64) {
        let mut sizes = lock(&self.sizes);
        let size = sizes.entry(id).or_insert(0);
        *size = (*size).max(end);
    }
}

impl ObjectStore for NullStore {
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
        if len > 0 {
            self.grow_to(id, end);
        }
        Ok(WriteDone {
            count: len,
            committed: stable,
        })
    }

    fn read(&self, id: ObjectId, offset: u64, len: u32) -> Result<ReadDone> {
        let size = self.size(id)?;
        if offset >= size {
            return Ok(ReadDone {
                data: Bytes::new(),
                eof: true,
            });
        }
        let n = (size - offset)
            .min(u64::from(len))
            .min(NULL_MAX_READ as u64) as usize;
        Ok(ReadDone {
            data: zeros(n),
            eof: offset + n as u64 >= size,
        })
    }

    fn commit(&self, _id: ObjectId, _offset: u64, _len: u64) -> Result<()> {
        Ok(())
    }

    fn truncate(&self, id: ObjectId, size: u64) -> Result<()> {
        range_end(size, 0, self.max_object_size)?;
        let mut sizes = lock(&self.sizes);
        if size == 0 && !sizes.contains_key(&id) {
            return Ok(());
        }
        sizes.insert(id, size);
        Ok(())
    }

    fn size(&self, id: ObjectId) -> Result<u64> {
        Ok(lock(&self.sizes).get(&id).copied().unwrap_or(0))
    }

    fn remove(&self, id: ObjectId) -> Result<()> {
        lock(&self.sizes).remove(&id);
        Ok(())
    }

    fn remove_file(&self, file: u64) -> Result<u32> {
        let mut sizes = lock(&self.sizes);
        let before = sizes.len();
        sizes.retain(|id, _| id.file != file);
        Ok((before - sizes.len()) as u32)
    }

    fn allocate(&self, id: ObjectId, offset: u64, len: u64) -> Result<()> {
        let end = range_end(offset, len, self.max_object_size)?;
        if len > 0 {
            self.grow_to(id, end);
        }
        Ok(())
    }

    fn deallocate(&self, _id: ObjectId, _offset: u64, _len: u64) -> Result<Deallocated> {
        Ok(Deallocated::Nothing)
    }

    /// The null store keeps no data but stands for a store that would: every byte below the
    /// size is data, and the only hole is the one at the end.
    fn seek(&self, id: ObjectId, offset: u64, what: SeekWhat) -> Result<Option<u64>> {
        let size = self.size(id)?;
        if offset >= size {
            return Ok(None);
        }
        Ok(Some(match what {
            SeekWhat::Data => offset,
            SeekWhat::Hole => size,
        }))
    }

    /// The size: as [`NullStore::seek`], the object counts as written in full.
    fn space_used(&self, id: ObjectId) -> Result<u64> {
        self.size(id)
    }

    fn copy_range(
        &self,
        src: ObjectId,
        dst: ObjectId,
        src_off: u64,
        dst_off: u64,
        len: u64,
    ) -> Result<u64> {
        let count = copy_count(self.size(src)?, src_off, len);
        let end = range_end(dst_off, count, self.max_object_size)?;
        if count > 0 {
            self.grow_to(dst, end);
        }
        Ok(count)
    }

    /// Sizes only, like every other operation here: a clone is a copy of nothing.
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
        self.verifier
    }

    fn identity(&self) -> [u8; 16] {
        self.identity
    }

    /// Nothing is kept, so nothing waits for a device.
    fn in_memory(&self) -> bool {
        true
    }

    fn statfs(&self) -> Result<FsStats> {
        Ok(FsStats {
            total: 1 << 50,
            free: 1 << 50,
            avail: 1 << 50,
            files: 1 << 32,
            ffree: 1 << 32,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testsuite::object_store_suite;

    object_store_suite!(|| (NullStore::new(), ()), keeps_data = false);

    #[test]
    fn reads_are_slices_of_one_shared_buffer() {
        let s = NullStore::new();
        s.write(
            ObjectId::whole(1),
            0,
            &[Bytes::from(vec![7u8; 4096])],
            Stability::Unstable,
        )
        .unwrap();
        let a = s.read(ObjectId::whole(1), 0, 4096).unwrap().data;
        let b = s.read(ObjectId::whole(1), 0, 4096).unwrap().data;
        assert_eq!(a.as_ptr(), b.as_ptr());
        assert!(a.iter().all(|&x| x == 0));
    }

    #[test]
    fn long_reads_come_back_short_but_not_eof() {
        let s = NullStore::new();
        s.truncate(ObjectId::whole(1), 1 << 30).unwrap();
        let r = s.read(ObjectId::whole(1), 0, u32::MAX).unwrap();
        assert_eq!((r.data.len(), r.eof), (NULL_MAX_READ, false));
    }
}

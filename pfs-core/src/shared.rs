//! Byte ranges of files on a cluster file system that every data server mounts.

use std::path::Path;

use bytes::Bytes;

use crate::error::Result;
use crate::id::ObjectId;
use crate::local::{LocalOptions, LocalStore, Naming};
use crate::store::{
    Deallocated, FsStats, ObjectStore, ReadDone, ReadInto, SeekWhat, Stability, WriteDone,
};

/// The `shared` backend: one file per file id under `<shared_dir>/files/` (path:
/// [`crate::shared_relative_path`]), on a file system that every data server (and the MDS,
/// for I/O through it) mounts, as GPFS, Lustre, CephFS or BeeGFS.
///
/// Every object of a file is the same byte range of that one file: the layout uses **sparse
/// packing**, so an object offset *is* the file offset, and each data server writes the
/// units of its stripe index in place. `ObjectId::stripe` is therefore ignored: all stripes
/// of a file read and write the same bytes, an object's size is the file's size, and
/// truncating or removing any stripe truncates or removes the file. The layout then spreads
/// load over the data servers rather than placing data.
///
/// What this means for the MDS, which drives it over the control protocol:
/// * TRUNCATE goes to one data server, with the *file* size (per-stripe sizes of sparse
///   objects would contradict each other on the one file).
/// * REMOVE goes to every data server that may hold the file open: each drops its cached
///   descriptor and unlinks (a missing file is fine), so no server keeps writing into an
///   unlinked inode.
/// * OBJECT_SIZE from any data server is the file size.
///
/// Durability is the local backend's (it *is* [`LocalStore`] with another naming): `pwritev`,
/// `fdatasync` for stable writes and COMMIT, a directory fsync on the first sync of a file,
/// and a fresh write verifier per open. Because another data server may have created a file
/// whose directory entry it has not synced yet, the first sync through any newly opened
/// descriptor also fsyncs the file's directories, not only after a create.
#[derive(Debug)]
pub struct SharedStore(LocalStore);

impl SharedStore {
    /// Opens (creating `files/` if needed) the shared directory `dir` with default options.
    pub fn open(dir: impl AsRef<Path>) -> Result<Self> {
        Self::open_with(dir, LocalOptions::default())
    }

    /// Opens the shared directory `dir` with the local backend's options (object size cap,
    /// read cap, open files, verifier).
    pub fn open_with(dir: impl AsRef<Path>, opts: LocalOptions) -> Result<Self> {
        LocalStore::open_named(dir.as_ref(), opts, Naming::PerFile).map(SharedStore)
    }

    /// The shared directory.
    pub fn root(&self) -> &Path {
        self.0.root()
    }

    /// System calls made so far (as [`LocalStore::io_counts`]).
    pub fn io_counts(&self) -> crate::IoCounts {
        self.0.io_counts()
    }
}

impl ObjectStore for SharedStore {
    fn write(
        &self,
        id: ObjectId,
        offset: u64,
        data: &[Bytes],
        stable: Stability,
    ) -> Result<WriteDone> {
        self.0.write(id, offset, data, stable)
    }

    fn read(&self, id: ObjectId, offset: u64, len: u32) -> Result<ReadDone> {
        self.0.read(id, offset, len)
    }

    fn read_into(
        &self,
        id: ObjectId,
        offset: u64,
        len: u32,
        into: &mut dyn ReadInto,
    ) -> Result<ReadDone> {
        self.0.read_into(id, offset, len, into)
    }

    fn read_into_now(
        &self,
        id: ObjectId,
        offset: u64,
        len: u32,
        into: &mut dyn ReadInto,
    ) -> Option<Result<ReadDone>> {
        self.0.read_into_now(id, offset, len, into)
    }

    fn commit(&self, id: ObjectId, offset: u64, len: u64) -> Result<()> {
        self.0.commit(id, offset, len)
    }

    fn truncate(&self, id: ObjectId, size: u64) -> Result<()> {
        self.0.truncate(id, size)
    }

    fn size(&self, id: ObjectId) -> Result<u64> {
        self.0.size(id)
    }

    fn remove(&self, id: ObjectId) -> Result<()> {
        self.0.remove(id)
    }

    fn remove_file(&self, file: u64) -> Result<u32> {
        self.0.remove_file(file)
    }

    fn allocate(&self, id: ObjectId, offset: u64, len: u64) -> Result<()> {
        self.0.allocate(id, offset, len)
    }

    fn deallocate(&self, id: ObjectId, offset: u64, len: u64) -> Result<Deallocated> {
        self.0.deallocate(id, offset, len)
    }

    fn seek(&self, id: ObjectId, offset: u64, what: SeekWhat) -> Result<Option<u64>> {
        self.0.seek(id, offset, what)
    }

    fn space_used(&self, id: ObjectId) -> Result<u64> {
        self.0.space_used(id)
    }

    fn copy_range(
        &self,
        src: ObjectId,
        dst: ObjectId,
        src_off: u64,
        dst_off: u64,
        len: u64,
    ) -> Result<u64> {
        self.0.copy_range(src, dst, src_off, dst_off, len)
    }

    fn clone_range(
        &self,
        src: ObjectId,
        dst: ObjectId,
        src_off: u64,
        dst_off: u64,
        len: u64,
    ) -> Result<()> {
        self.0.clone_range(src, dst, src_off, dst_off, len)
    }

    fn identity(&self) -> [u8; 16] {
        self.0.identity()
    }

    fn verifier(&self) -> [u8; 8] {
        self.0.verifier()
    }

    fn statfs(&self) -> Result<FsStats> {
        self.0.statfs()
    }

    fn in_memory(&self) -> bool {
        self.0.in_memory()
    }

    fn write_queue(&self, id: ObjectId) -> Option<usize> {
        self.0.write_queue(id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testsuite::object_store_suite;

    object_store_suite!(
        || {
            let dir = tempfile::tempdir().unwrap();
            (SharedStore::open(dir.path()).unwrap(), dir)
        },
        keeps_data = true,
        stripes = shared
    );

    fn b(s: &[u8]) -> Bytes {
        Bytes::copy_from_slice(s)
    }

    const FILE: u64 = 0x0123_4567_89ab_cdef;

    fn stripe(i: u32) -> ObjectId {
        ObjectId {
            file: FILE,
            stripe: i,
        }
    }

    #[test]
    fn a_file_lives_at_the_documented_path_without_a_stripe_suffix() {
        let dir = tempfile::tempdir().unwrap();
        let s = SharedStore::open(dir.path()).unwrap();
        s.write(stripe(3), 0, &[b(b"x")], Stability::FileSync)
            .unwrap();
        let path = dir.path().join("files/ef/cd/0123456789abcdef");
        assert_eq!(std::fs::read(path).unwrap(), b"x");
        assert!(!dir.path().join("objects").exists());
    }

    #[test]
    fn two_data_servers_write_their_units_in_place_into_one_file() {
        // Two stores on one directory stand for two data servers mounting it; with sparse
        // packing and a 4-byte unit, index 0 owns [0,4) and [8,12), index 1 owns [4,8).
        let dir = tempfile::tempdir().unwrap();
        let ds0 = SharedStore::open(dir.path()).unwrap();
        let ds1 = SharedStore::open(dir.path()).unwrap();
        ds1.write(stripe(1), 4, &[b(b"BBBB")], Stability::Unstable)
            .unwrap();
        ds0.write(stripe(0), 0, &[b(b"AAAA")], Stability::FileSync)
            .unwrap();
        ds0.write(stripe(0), 8, &[b(b"CC")], Stability::Unstable)
            .unwrap();
        ds0.commit(stripe(0), 0, 0).unwrap();
        ds1.commit(stripe(1), 0, 0).unwrap();
        for s in [&ds0, &ds1] {
            assert_eq!(s.size(stripe(7)).unwrap(), 10);
            assert_eq!(&s.read(stripe(0), 0, 100).unwrap().data[..], b"AAAABBBBCC");
        }
        assert_ne!(ds0.verifier(), ds1.verifier(), "a verifier per open");
    }

    #[test]
    fn first_sync_of_a_file_another_server_created_also_syncs_its_directory() {
        let dir = tempfile::tempdir().unwrap();
        let ds0 = SharedStore::open(dir.path()).unwrap();
        let ds1 = SharedStore::open(dir.path()).unwrap();
        ds0.write(stripe(0), 0, &[b(b"a")], Stability::Unstable)
            .unwrap();
        let before = ds1.io_counts().dir_fsync;
        ds1.write(stripe(1), 1, &[b(b"b")], Stability::FileSync)
            .unwrap();
        let first = ds1.io_counts().dir_fsync - before;
        ds1.write(stripe(1), 2, &[b(b"c")], Stability::FileSync)
            .unwrap();
        let second = ds1.io_counts().dir_fsync - before - first;
        assert!(
            first >= 1,
            "the entry ds0 made is synced by ds1's first sync"
        );
        assert_eq!(second, 0, "only once per opened file");
    }

    #[test]
    fn truncate_through_one_data_server_is_seen_by_the_other() {
        let dir = tempfile::tempdir().unwrap();
        let ds0 = SharedStore::open(dir.path()).unwrap();
        let ds1 = SharedStore::open(dir.path()).unwrap();
        ds0.write(stripe(0), 0, &[b(b"0123456789")], Stability::FileSync)
            .unwrap();
        assert_eq!(ds1.size(stripe(1)).unwrap(), 10);
        ds1.truncate(stripe(1), 3).unwrap();
        let r = ds0.read(stripe(0), 0, 100).unwrap();
        assert_eq!((&r.data[..], r.eof), (&b"012"[..], true));
    }

    #[test]
    fn remove_on_every_data_server_leaves_no_one_writing_into_the_unlinked_file() {
        let dir = tempfile::tempdir().unwrap();
        let ds0 = SharedStore::open(dir.path()).unwrap();
        let ds1 = SharedStore::open(dir.path()).unwrap();
        ds0.write(stripe(0), 0, &[b(b"old")], Stability::FileSync)
            .unwrap();
        assert_eq!(ds1.size(stripe(1)).unwrap(), 3);
        // ds1 now has the file open (cached); both remove, as the MDS's REMOVE does.
        ds1.read(stripe(1), 0, 3).unwrap();
        ds0.remove(stripe(0)).unwrap();
        ds1.remove(stripe(1)).unwrap();
        ds1.write(stripe(1), 0, &[b(b"new")], Stability::FileSync)
            .unwrap();
        assert_eq!(&ds0.read(stripe(0), 0, 10).unwrap().data[..], b"new");
    }
}

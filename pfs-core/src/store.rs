//! The object store contract shared by every backend.

use bytes::{Bytes, BytesMut};

use crate::error::{Result, StoreError};
use crate::id::ObjectId;

/// How durable a WRITE must be before it is acknowledged (`stable_how4`, RFC 8881 section
/// 18.32): the numbers are the wire values, and the order is "more durable is greater".
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(u32)]
pub enum Stability {
    /// `UNSTABLE4`: may sit in the page cache until COMMIT; lost data is detected by a changed
    /// write verifier.
    Unstable = 0,
    /// `DATA_SYNC4`: the data and the metadata needed to read it back (size) are durable.
    DataSync = 1,
    /// `FILE_SYNC4`: as DATA_SYNC; the object's other metadata (mtime) is not kept by the
    /// store at all (the MDS owns file attributes), so nothing more needs syncing.
    FileSync = 2,
}

impl Stability {
    /// The `stable_how4` wire value.
    pub const fn as_u32(self) -> u32 {
        self as u32
    }

    /// Parses a `stable_how4` wire value; `None` for values the RFC does not define (the
    /// server answers those with NFS4ERR_INVAL before it reaches the store).
    pub const fn from_u32(v: u32) -> Option<Self> {
        match v {
            0 => Some(Stability::Unstable),
            1 => Some(Stability::DataSync),
            2 => Some(Stability::FileSync),
            _ => None,
        }
    }

    /// Whether data written at this level survives a crash without a COMMIT.
    pub const fn is_stable(self) -> bool {
        !matches!(self, Stability::Unstable)
    }
}

/// Outcome of [`ObjectStore::write`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WriteDone {
    /// Bytes written: always the sum of the pieces (a store never acknowledges a short write).
    pub count: u64,
    /// How durable those bytes are now (`committed` in WRITE4resok); at least what was asked.
    pub committed: Stability,
}

/// Memory a read is placed in ([`ObjectStore::read_into`]).
pub trait ReadInto: Send {
    /// A buffer of `len` bytes to read into (its contents unspecified).
    fn space(&mut self, len: usize) -> &mut [u8];

    /// The first `len` bytes of the last [`ReadInto::space`], as the read's data.
    fn freeze(&mut self, len: usize) -> Bytes;
}

/// Freshly allocated ordinary memory: what [`ObjectStore::read`] reads into.
#[derive(Debug, Default)]
pub struct Fresh(BytesMut);

impl ReadInto for Fresh {
    fn space(&mut self, len: usize) -> &mut [u8] {
        self.0 = BytesMut::zeroed(len);
        &mut self.0[..]
    }

    fn freeze(&mut self, len: usize) -> Bytes {
        let mut b = std::mem::take(&mut self.0);
        b.truncate(len);
        b.freeze()
    }
}

/// Outcome of [`ObjectStore::read`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadDone {
    /// The bytes read: a buffer of its own, ready to be a reply's payload piece. May be shorter
    /// than asked (end of object, or the backend's per-read cap) as NFS READ allows.
    pub data: Bytes,
    /// The read reached the end of the object (READ4resok `eof`).
    pub eof: bool,
}

/// Space and inode figures of the store's file system, for the `space_*` and `files_*`
/// attributes (RFC 8881 section 5.8.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FsStats {
    /// Size of the file system in bytes (`space_total`).
    pub total: u64,
    /// Free bytes, including those reserved for root (`space_free`).
    pub free: u64,
    /// Bytes available to an unprivileged user (`space_avail`).
    pub avail: u64,
    /// Number of inodes (`files_total`).
    pub files: u64,
    /// Free inodes (`files_free`, `files_avail`).
    pub ffree: u64,
}

/// How [`ObjectStore::deallocate`] made a range read as zeros.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Deallocated {
    /// The blocks were freed (`fallocate(PUNCH_HOLE)`): the space is returned.
    HolePunched,
    /// The file system cannot punch holes, so zeros were written: the space stays used.
    ZerosWritten,
    /// The backend keeps no data (null store) or the range lay beyond the end of the object.
    Nothing,
}

/// What [`ObjectStore::seek`] looks for (`lseek`'s `SEEK_DATA` and `SEEK_HOLE`, RFC 7862
/// section 15.11's `NFS4_CONTENT_DATA` and `NFS4_CONTENT_HOLE`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SeekWhat {
    /// The next byte that holds data.
    Data,
    /// The next byte in a hole (the end of the object counts as one).
    Hole,
}

/// A place where objects live: files on a local file system, memory, or nothing at all.
///
/// Methods are synchronous and may block on disk: async callers run them in
/// `tokio::task::spawn_blocking`. Every method may be called concurrently from many threads;
/// operations on different objects never wait for each other, and concurrent operations on
/// the same object behave like the same system calls on one file.
///
/// Objects need no create: a write (or a growing truncate or allocate) makes the object, and
/// every read-side method treats a missing object as an empty one ("creates touch only the
/// MDS", ARCHITECTURE.md).
pub trait ObjectStore: Send + Sync {
    /// Writes the concatenation of `data` at `offset` and makes it as durable as `stable`
    /// asks before returning. The pieces are handed to the kernel as they are (no staging
    /// copy), so a WRITE's payload goes from the socket buffer to the file in one copy.
    ///
    /// Fails with [`StoreError::TooBig`] when `offset + total length` overflows or exceeds the
    /// store's maximum object size; nothing is written then.
    fn write(
        &self,
        id: ObjectId,
        offset: u64,
        data: &[Bytes],
        stable: Stability,
    ) -> Result<WriteDone>;

    /// Reads up to `len` bytes at `offset` into a freshly allocated buffer. Holes and missing
    /// objects read as zeros up to the object's size; at or past the end the data is empty and
    /// `eof` is set.
    fn read(&self, id: ObjectId, offset: u64, len: u32) -> Result<ReadDone>;

    /// [`ObjectStore::read`] into memory `into` provides: a transport's buffer that it sends
    /// as it is (registered memory, so that an RDMA READ reply is `pread` into the buffer that
    /// is RDMA-written to the client, with no copy in between). A backend that does not read
    /// through user memory of its own (the null store's shared zeros, the crash simulator)
    /// ignores it.
    fn read_into(
        &self,
        id: ObjectId,
        offset: u64,
        len: u32,
        into: &mut dyn ReadInto,
    ) -> Result<ReadDone> {
        let _ = into;
        self.read(id, offset, len)
    }

    /// [`ObjectStore::read_into`], made now if the store can make it without waiting for a
    /// device: the object already open and all of the bytes asked for in memory (the page
    /// cache). `None` when the read might wait, or the store cannot tell: the caller then
    /// makes [`ObjectStore::read_into`] where waiting is fine (an async server: tokio's
    /// blocking pool). `into` may have been asked for space then; the read after uses it
    /// again.
    ///
    /// For an async server on a store that is not [`ObjectStore::in_memory`], this saves a
    /// READ of cached data the hand-off to the blocking pool and back, which costs more than
    /// the copy (issue 22). `None` by default.
    fn read_into_now(
        &self,
        id: ObjectId,
        offset: u64,
        len: u32,
        into: &mut dyn ReadInto,
    ) -> Option<Result<ReadDone>> {
        let _ = (id, offset, len, into);
        None
    }

    /// Makes every earlier write to the object durable (COMMIT, RFC 8881 section 18.3).
    /// `offset`/`len` name the range the client cares about (`len` 0 = to the end); a backend
    /// may sync more than that range, never less. Committing a missing object succeeds.
    fn commit(&self, id: ObjectId, offset: u64, len: u64) -> Result<()>;

    /// Sets the object's size: shrinking drops the tail, growing adds a hole. Durable on
    /// return (SETATTR of size is synchronous in NFS). Truncating a missing object to 0 is a
    /// no-op; to more than 0 it creates the object.
    fn truncate(&self, id: ObjectId, size: u64) -> Result<()>;

    /// The object's size in bytes; 0 for a missing object.
    fn size(&self, id: ObjectId) -> Result<u64>;

    /// Deletes the object, durably. Removing a missing object succeeds (removal may be retried
    /// after a crash).
    fn remove(&self, id: ObjectId) -> Result<()>;

    /// Deletes every object of regular file `file` (all its stripes held here), durably; the
    /// data server's side of a removed file, which it knows by file id alone. Returns how
    /// many objects were removed; a file with none here succeeds with 0. The default says
    /// [`StoreError::NotSupported`].
    fn remove_file(&self, file: u64) -> Result<u32> {
        let _ = file;
        Err(StoreError::NotSupported)
    }

    /// Reserves space for `[offset, offset + len)` so later writes there cannot fail with
    /// NoSpace, growing the object if the range ends past its size (as Linux `fallocate` mode
    /// 0 and knfsd's ALLOCATE do). Durable on return. The default says
    /// [`StoreError::NotSupported`].
    fn allocate(&self, id: ObjectId, offset: u64, len: u64) -> Result<()> {
        let _ = (id, offset, len);
        Err(StoreError::NotSupported)
    }

    /// Makes `[offset, offset + len)` read as zeros without changing the size (the part past
    /// the end is ignored), durably. The default writes zeros with [`ObjectStore::write`] at
    /// FILE_SYNC; backends that can free blocks override it.
    fn deallocate(&self, id: ObjectId, offset: u64, len: u64) -> Result<Deallocated> {
        write_zeros(self, id, offset, len)
    }

    /// Where the next data or hole at or after `offset` starts, from the object's real
    /// extents (`lseek(SEEK_DATA / SEEK_HOLE)` on the local backends):
    ///
    /// * `offset` at or past the object's size (a missing object has size 0): `None` for
    ///   both (`ENXIO`): there is nothing, not even a hole, at or after the end.
    /// * [`SeekWhat::Data`] below the size: `Some(d)` with `offset <= d < size`, the start of
    ///   the first data at or after `offset`, or `None` when only holes follow up to the end.
    /// * [`SeekWhat::Hole`] below the size: `Some(h)` with `offset <= h <= size`, the start
    ///   of the first hole at or after `offset`; every object ends in a virtual hole, so
    ///   `h = size` when data runs to the end.
    ///
    /// A backend may report a hole as data (a file system that does not track holes), never
    /// data as a hole: every byte from `offset` up to a returned data offset, and every byte
    /// of a hole, reads as zeros.
    fn seek(&self, id: ObjectId, offset: u64, what: SeekWhat) -> Result<Option<u64>>;

    /// Bytes of storage the object takes (`st_blocks * 512` on the local backends, at most
    /// the size rounded up to whole blocks: preallocation past the end is not counted); 0
    /// for a missing object. It falls when a range is deallocated, unlike the size.
    fn space_used(&self, id: ObjectId) -> Result<u64>;
    /// Copies `[src_off, src_off + len)` of `src` to `dst` at `dst_off` inside the store (the
    /// bytes never leave the server: server-side COPY, RFC 7862 section 15.2), durably on
    /// return. Holes of the source stay holes: the matching destination range reads as zeros
    /// and, where the backend can, holds no blocks. The source is read as its size allows:
    /// the result is the count copied, `min(len, size(src) - src_off)` (0 when `src_off` is at
    /// or past the end, or the source is missing), and the destination grows to
    /// `dst_off + count` if it was shorter (a trailing hole of the range is copied as size).
    /// `src` and `dst` may be the same object only with disjoint ranges.
    ///
    /// Fails with [`StoreError::TooBig`] when `dst_off + count` is past the maximum object
    /// size (nothing is copied then). The default reads and writes 1 MiB at a time through
    /// [`ObjectStore::read`] and [`ObjectStore::write`] (FILE_SYNC), which fills holes.
    fn copy_range(
        &self,
        src: ObjectId,
        dst: ObjectId,
        src_off: u64,
        dst_off: u64,
        len: u64,
    ) -> Result<u64> {
        copy_by_reads(self, src, dst, src_off, dst_off, len)
    }

    /// Makes `[dst_off, dst_off + len)` of `dst` share the blocks of `[src_off, src_off + len)`
    /// of `src` (reflink: CLONE, RFC 7862 section 15.13), durably on return, clipped to the
    /// source's size as [`ObjectStore::copy_range`] is. [`StoreError::NotSupported`] when the
    /// backend or its file system cannot share blocks, or the offsets are not aligned as the
    /// file system needs (the caller may then copy instead). The default is NotSupported.
    fn clone_range(
        &self,
        src: ObjectId,
        dst: ObjectId,
        src_off: u64,
        dst_off: u64,
        len: u64,
    ) -> Result<()> {
        let _ = (src, dst, src_off, dst_off, len);
        Err(StoreError::NotSupported)
    }

    /// The write verifier (`writeverf4`): it changes whenever unstable data may have been lost
    /// (every process start, and after a failed sync), so clients re-send what they have not
    /// seen committed (RFC 8881 section 18.32.3).
    fn verifier(&self) -> [u8; 8];

    /// The store's identity: the same for as long as it holds the objects it was given,
    /// across restarts; another one for a store made anew (an empty directory, a replaced
    /// disk), so the MDS knows the objects it put there are gone ([`crate::new_identity`]).
    fn identity(&self) -> [u8; 16];

    /// Space and inode figures of the backing file system.
    fn statfs(&self) -> Result<FsStats>;

    /// Whether reads, writes and syncs return without waiting for a device: the objects live
    /// in memory (on a memory file system such as tmpfs, or nowhere, as the null store's).
    /// An async caller may then make those calls on its own thread: the hand-off to tokio's
    /// blocking pool and back costs more than such a call (issue 22: about 30 us of a 4 KiB
    /// WRITE's 100 us round trip on the development machine). Calls whose cost grows with an
    /// object's size (remove, truncate, copy) still belong in the pool. False by default.
    fn in_memory(&self) -> bool {
        false
    }

    /// The queue (below [`crate::WRITE_QUEUES`]) that writes to `id` wait in one after the
    /// other in this store, if it serializes them (a [`crate::LocalStore`] does, by
    /// [`ObjectId::write_queue`] of the file that holds the object); `None` if it does not.
    /// A caller that makes writes on an async worker (an [`Self::in_memory`] store) waits for
    /// its turn in the same queue asynchronously before the call, so that the store's own
    /// wait never blocks the worker.
    fn write_queue(&self, id: ObjectId) -> Option<usize> {
        let _ = id;
        None
    }
}

/// Bytes of the source a copy of `len` at `src_off` covers when the source is `size` long.
pub(crate) fn copy_count(size: u64, src_off: u64, len: u64) -> u64 {
    size.saturating_sub(src_off).min(len)
}

/// The portable [`ObjectStore::copy_range`]: 1 MiB reads written back FILE_SYNC (holes are
/// written as zeros), then the destination grown to the copied range's end.
pub(crate) fn copy_by_reads<S: ObjectStore + ?Sized>(
    store: &S,
    src: ObjectId,
    dst: ObjectId,
    src_off: u64,
    dst_off: u64,
    len: u64,
) -> Result<u64> {
    const CHUNK: u32 = 1 << 20;
    let count = copy_count(store.size(src)?, src_off, len);
    range_end(dst_off, count, u64::MAX)?;
    let mut done = 0;
    while done < count {
        let want = (count - done).min(u64::from(CHUNK)) as u32;
        let r = store.read(src, src_off + done, want)?;
        if r.data.is_empty() {
            break;
        }
        let n = r.data.len() as u64;
        store.write(dst, dst_off + done, &[r.data], Stability::FileSync)?;
        done += n;
    }
    if store.size(dst)? < dst_off + count {
        store.truncate(dst, dst_off + count)?;
    }
    Ok(count)
}

/// Checks that `[offset, offset + len)` fits below `max` and returns its end.
pub(crate) fn range_end(offset: u64, len: u64, max: u64) -> Result<u64> {
    match offset.checked_add(len) {
        Some(end) if end <= max => Ok(end),
        _ => Err(StoreError::TooBig { offset, len }),
    }
}

/// Zero-fills the part of `[offset, offset + len)` below the object's size, in FILE_SYNC
/// writes of at most 1 MiB: the portable way to deallocate.
pub(crate) fn write_zeros<S: ObjectStore + ?Sized>(
    store: &S,
    id: ObjectId,
    offset: u64,
    len: u64,
) -> Result<Deallocated> {
    const CHUNK: u64 = 1 << 20;
    let size = store.size(id)?;
    let end = offset.saturating_add(len).min(size);
    if offset >= end {
        return Ok(Deallocated::Nothing);
    }
    let zeros = Bytes::from(vec![0u8; (end - offset).min(CHUNK) as usize]);
    let mut at = offset;
    while at < end {
        let n = (end - at).min(CHUNK);
        store.write(id, at, &[zeros.slice(..n as usize)], Stability::FileSync)?;
        at += n;
    }
    Ok(Deallocated::ZerosWritten)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stability_numbers_are_the_stable_how4_wire_values() {
        for s in [
            Stability::Unstable,
            Stability::DataSync,
            Stability::FileSync,
        ] {
            assert_eq!(Stability::from_u32(s.as_u32()), Some(s));
        }
        assert_eq!(Stability::FileSync.as_u32(), 2);
        assert_eq!(Stability::from_u32(3), None);
    }

    #[test]
    fn more_durable_levels_compare_greater() {
        assert!(Stability::Unstable < Stability::DataSync);
        assert!(Stability::DataSync < Stability::FileSync);
        assert!(!Stability::Unstable.is_stable() && Stability::DataSync.is_stable());
    }

    #[test]
    fn range_end_refuses_overflow_and_ranges_past_the_maximum() {
        assert_eq!(range_end(10, 5, 15), Ok(15));
        assert_eq!(
            range_end(10, 6, 15),
            Err(StoreError::TooBig { offset: 10, len: 6 })
        );
        assert_eq!(
            range_end(u64::MAX, 1, u64::MAX),
            Err(StoreError::TooBig {
                offset: u64::MAX,
                len: 1
            })
        );
    }
}

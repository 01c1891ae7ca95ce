//! What the MDS and the data servers do alike around the object store: run its blocking
//! calls off the async workers, clip a WRITE's payload, read past an object's end as a hole,
//! check a COMMIT's range, cut a READ_PLUS range into data and holes, and name the security
//! flavors both accept. Here too is what a store error is on the wire ([`store_status`]):
//! `pfs-core` knows no protocol numbers.

use std::future::Future;
use std::sync::{Arc, OnceLock};

use bytes::Bytes;
use nfs_proto::nfs4::{Data4, DataInfo4, NfsStat4, ReadPlusContent, Secinfo4};
use nfs_proto::transport::{Conn, PayloadBuf, SharedPayloadBuffers};
use pfs_core::{
    Fresh, ObjectId, ObjectStore, ReadDone, ReadInto, SeekWhat, StoreError, WRITE_QUEUES,
};

/// The flavors the servers accept, most preferred first (SECINFO, SECINFO_NO_NAME).
pub fn secinfo_flavors() -> Vec<Secinfo4> {
    vec![
        Secinfo4::Flavor(1 /* AUTH_SYS */),
        Secinfo4::Flavor(0 /* AUTH_NONE */),
    ]
}

/// Where a READ's data is read: into the buffers of the connection the reply goes out on when
/// it has them (RDMA: registered memory, RDMA-written to the client's Write chunk from where
/// `pread` put it), else into memory reused between replies ([`crate::read_buffers`]; fresh
/// memory for small reads). For [`pfs_core::ObjectStore::read_into`].
#[derive(Default)]
pub struct IntoReply {
    buffers: Option<SharedPayloadBuffers>,
    taken: Option<PayloadBuf>,
    fresh: Fresh,
}

impl IntoReply {
    /// Reads for a reply on `conn`.
    pub fn on(conn: &Conn) -> Self {
        Self {
            buffers: conn.payload_buffers().cloned(),
            ..Self::default()
        }
    }
}

impl ReadInto for IntoReply {
    fn space(&mut self, len: usize) -> &mut [u8] {
        self.taken = match &self.buffers {
            Some(b) => b.take(len),
            None => crate::read_buffers::take(len),
        };
        match &mut self.taken {
            Some(b) => &mut b.space()[..len],
            None => self.fresh.space(len),
        }
    }

    fn freeze(&mut self, len: usize) -> Bytes {
        match self.taken.take() {
            Some(b) => b.freeze(len),
            None => self.fresh.freeze(len),
        }
    }
}

/// `data` read from an object, as `want` bytes: when the object ended (`object_ended`)
/// before `want`, the rest is a hole and reads as zeros. The copy happens only then, which
/// is rare on the paths that use it (a DS object shorter than the file's share of it, an
/// MDS object shorter than its recorded size); `want` is bounded by the caller's `max_io`.
pub fn hole_filled(data: Bytes, object_ended: bool, want: usize) -> Bytes {
    if !object_ended || data.len() >= want {
        return data;
    }
    let mut v = Vec::with_capacity(want);
    v.extend_from_slice(&data);
    v.resize(want, 0);
    Bytes::from(v)
}

/// The `nfsstat4` a READ, WRITE, COMMIT (or any reply touching the object store) carries for
/// a store error:
///
/// | error | status |
/// |---|---|
/// | `Io` | `NFS4ERR_IO` |
/// | `TooBig` | `NFS4ERR_FBIG` |
/// | `NoSpace` | `NFS4ERR_NOSPC` |
/// | `ReadOnly` | `NFS4ERR_ROFS` |
/// | `QuotaExceeded` | `NFS4ERR_DQUOT` |
/// | `NotSupported` | `NFS4ERR_NOTSUPP` |
pub fn store_status(e: &StoreError) -> NfsStat4 {
    match e {
        StoreError::Io { .. } => NfsStat4::NFS4ERR_IO,
        StoreError::TooBig { .. } => NfsStat4::NFS4ERR_FBIG,
        StoreError::NoSpace => NfsStat4::NFS4ERR_NOSPC,
        StoreError::ReadOnly => NfsStat4::NFS4ERR_ROFS,
        StoreError::QuotaExceeded => NfsStat4::NFS4ERR_DQUOT,
        StoreError::NotSupported => NfsStat4::NFS4ERR_NOTSUPP,
    }
}

/// Runs a blocking object-store call on tokio's blocking pool (pread/pwrite/fdatasync must
/// not stall the async workers) and maps its error to the NFS status it stands for.
pub async fn blocking<T, F>(f: F) -> Result<T, NfsStat4>
where
    F: FnOnce() -> Result<T, pfs_core::StoreError> + Send + 'static,
    T: Send + 'static,
{
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|_| NfsStat4::NFS4ERR_SERVERFAULT)?
        .map_err(|e| store_status(&e))
}

/// A read, write or sync of `store`: on this thread when the store keeps its objects in memory
/// ([`pfs_core::ObjectStore::in_memory`]), where nothing waits for a device and the hand-off
/// would cost more than the call; else on the blocking pool ([`blocking`]).
pub async fn object_io<T, F>(store: &Arc<dyn ObjectStore>, f: F) -> Result<T, NfsStat4>
where
    F: FnOnce(&dyn ObjectStore) -> Result<T, pfs_core::StoreError> + Send + 'static,
    T: Send + 'static,
{
    if store.in_memory() {
        return f(&**store).map_err(|e| store_status(&e));
    }
    let store = store.clone();
    blocking(move || f(&*store)).await
}

/// A read of `len` bytes at `offset` of object `id` of `store` into `into`: on this thread
/// when the store can make it without waiting ([`ObjectStore::read_into_now`]: cached bytes
/// of an open object), else as [`object_io`] makes its calls.
pub async fn object_read(
    store: &Arc<dyn ObjectStore>,
    id: ObjectId,
    offset: u64,
    len: u32,
    mut into: IntoReply,
) -> Result<ReadDone, NfsStat4> {
    if !store.in_memory() {
        if let Some(done) = store.read_into_now(id, offset, len, &mut into) {
            return done.map_err(|e| store_status(&e));
        }
    }
    object_io(store, move |s| s.read_into(id, offset, len, &mut into)).await
}

/// A write to object `id` of `store`, made as [`object_io`] makes its calls. When that is on
/// this thread (an in-memory store), the write first waits asynchronously for the writes to
/// the same object before it, in the store's queue for the object
/// ([`pfs_core::ObjectStore::write_queue`]): the store serializes them with a lock of its
/// own, and a worker asleep on that lock serves no other connection meanwhile. With two
/// workers both held so by one object (one writing, one waiting), a 2 GiB write striped
/// over three data servers of one process left 15 % of the CPU idle (issue 22). The queues
/// are fair (first come, first served), as the lock was.
pub async fn object_write<T, F>(
    store: &Arc<dyn ObjectStore>,
    id: ObjectId,
    f: F,
) -> Result<T, NfsStat4>
where
    F: FnOnce(&dyn ObjectStore) -> Result<T, pfs_core::StoreError> + Send + 'static,
    T: Send + 'static,
{
    let queue = store.in_memory().then(|| store.write_queue(id)).flatten();
    let _turn = match queue {
        Some(q) => Some(write_turns()[q % WRITE_QUEUES].lock().await),
        None => None,
    };
    object_io(store, f).await
}

/// The async queues of [`object_write`], one per [`pfs_core::WRITE_QUEUES`], shared by
/// every store of the process (two stores' objects in one queue only take turns).
fn write_turns() -> &'static [tokio::sync::Mutex<()>] {
    static TURNS: OnceLock<Vec<tokio::sync::Mutex<()>>> = OnceLock::new();
    TURNS.get_or_init(|| {
        (0..WRITE_QUEUES)
            .map(|_| tokio::sync::Mutex::new(()))
            .collect()
    })
}

/// COMMIT's range check (RFC 8881 section 18.3.3): an offset + count past the largest
/// offset is NFS4ERR_INVAL.
pub fn check_commit_range(offset: u64, count: u32) -> Result<(), NfsStat4> {
    match offset.checked_add(u64::from(count)) {
        Some(_) => Ok(()),
        None => Err(NfsStat4::NFS4ERR_INVAL),
    }
}

/// The part of a WRITE's `data` at `offset` this server takes: at most `max_io` bytes (a
/// server may write less than sent, RFC 8881 section 18.32.3; slicing shares the receive
/// buffer), and NFS4ERR_FBIG when the end would pass the largest file offset (2^63 - 1).
pub fn clip_write(data: &Bytes, offset: u64, max_io: usize) -> Result<Bytes, NfsStat4> {
    let payload = if data.len() > max_io {
        data.slice(..max_io)
    } else {
        data.clone()
    };
    match offset.checked_add(payload.len() as u64) {
        Some(end) if end <= i64::MAX as u64 => Ok(payload),
        _ => Err(NfsStat4::NFS4ERR_FBIG),
    }
}

/// A piece of a file range: data, or a hole (reads as zeros), as SEEK found it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Segment {
    /// File offset.
    pub offset: u64,
    /// Bytes.
    pub len: u64,
    /// A hole (else data).
    pub hole: bool,
}

impl Segment {
    /// The offset just past it.
    pub fn end(&self) -> u64 {
        self.offset + self.len
    }
}

/// Cuts `[offset, end)` into alternating data and hole [`Segment`]s, back to back from
/// `offset`, with `seek(pos, what)`: the next data (`None`: no data before the end) or hole
/// (`None`: a hole at `pos`, past the object's end) at or after `pos`, as
/// [`pfs_core::ObjectStore::seek`] answers. At most `max_segments` (then the segments end
/// before `end`: a READ_PLUS may return less than asked), so a file of many small extents
/// costs a bounded number of seeks. A seek answering data where a hole was just found, or a
/// hole where data was, ends the data at `end`: data is always safe to send, a hole only
/// where the store says one is.
pub async fn find_segments<E, F, Fut>(
    offset: u64,
    end: u64,
    max_segments: usize,
    mut seek: F,
) -> Result<Vec<Segment>, E>
where
    F: FnMut(u64, SeekWhat) -> Fut,
    Fut: Future<Output = Result<Option<u64>, E>>,
{
    let mut out: Vec<Segment> = Vec::new();
    let mut pos = offset;
    while pos < end && out.len() < max_segments.max(1) {
        let data = seek(pos, SeekWhat::Data)
            .await?
            .unwrap_or(end)
            .clamp(pos, end);
        let (hole, stop) = if data > pos {
            (true, data)
        } else {
            let h = seek(pos, SeekWhat::Hole).await?.unwrap_or(pos).min(end);
            (false, if h > pos { h } else { end })
        };
        match out.last_mut() {
            Some(last) if last.hole == hole => last.len += stop - pos,
            _ => out.push(Segment {
                offset: pos,
                len: stop - pos,
                hole,
            }),
        }
        pos = stop;
    }
    Ok(out)
}

/// The READ_PLUS contents (RFC 7862 section 15.10) of `segments` (in file order, back to
/// back): holes as `NFS4_CONTENT_HOLE`, data as slices of `data` (the bytes read from file
/// offset `data_offset`, covering the data segments; slices, not copies). The part of a
/// data segment past the end of `data` (the object ended early: a hole) is sent as a hole.
pub fn read_plus_contents(
    segments: &[Segment],
    data_offset: u64,
    data: &Bytes,
) -> Vec<ReadPlusContent> {
    fn hole(out: &mut Vec<ReadPlusContent>, offset: u64, len: u64) {
        if len == 0 {
            return;
        }
        if let Some(ReadPlusContent::Hole(h)) = out.last_mut() {
            if h.di_offset + h.di_length == offset {
                h.di_length += len;
                return;
            }
        }
        out.push(ReadPlusContent::Hole(DataInfo4 {
            di_offset: offset,
            di_length: len,
        }));
    }
    let mut out: Vec<ReadPlusContent> = Vec::with_capacity(segments.len());
    let data_end = data_offset + data.len() as u64;
    for s in segments {
        if s.hole {
            hole(&mut out, s.offset, s.len);
            continue;
        }
        debug_assert!(s.offset >= data_offset, "data before the bytes read");
        let from = s.offset.clamp(data_offset, data_end);
        let to = s.end().clamp(data_offset, data_end);
        if to > from && from == s.offset {
            out.push(ReadPlusContent::Data(Data4 {
                d_offset: from,
                d_data: data.slice((from - data_offset) as usize..(to - data_offset) as usize),
            }));
            hole(&mut out, to, s.end() - to);
        } else {
            hole(&mut out, s.offset, s.len);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A write whose object's queue is taken waits for it without holding its thread: on a
    /// runtime of one thread, other tasks still run, and the write is made once the queue is
    /// given back. (Without the queue the store would take the write at once; with only the
    /// store's own lock held, the thread would sleep on it.) Needs a memory file system at
    /// `/dev/shm`, where a [`pfs_core::LocalStore`] is [`ObjectStore::in_memory`].
    #[test]
    fn a_queued_write_leaves_its_thread_to_other_tasks() {
        let Ok(dir) = tempfile::tempdir_in("/dev/shm") else {
            eprintln!("no /dev/shm: skipped");
            return;
        };
        let store: Arc<dyn ObjectStore> = Arc::new(pfs_core::LocalStore::open(dir.path()).unwrap());
        if !store.in_memory() {
            eprintln!("/dev/shm is not a memory file system: skipped");
            return;
        }
        let id = ObjectId { file: 7, stripe: 1 };
        let q = store
            .write_queue(id)
            .expect("a local store serializes writes");
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        rt.block_on(async {
            let held = write_turns()[q].lock().await;
            let write = tokio::spawn({
                let store = store.clone();
                async move {
                    object_write(&store, id, move |s| {
                        s.write(
                            id,
                            0,
                            &[Bytes::from_static(b"late")],
                            pfs_core::Stability::Unstable,
                        )
                    })
                    .await
                }
            });
            let other = tokio::spawn(async { 42 });
            assert_eq!(other.await.unwrap(), 42, "the thread ran another task");
            tokio::task::yield_now().await;
            assert!(!write.is_finished(), "the write waits for its queue");
            assert_eq!(
                store.size(id).unwrap(),
                0,
                "nothing written while the queue is held"
            );
            drop(held);
            assert_eq!(write.await.unwrap().unwrap().count, 4);
            assert_eq!(store.size(id).unwrap(), 4);
        });
    }

    /// SEEK over a map of 64-byte blocks (`true`: data), as an object store answers it.
    fn seek_in(blocks: &[bool], pos: u64, what: SeekWhat) -> Option<u64> {
        let size = blocks.len() as u64 * 64;
        if pos >= size {
            return None;
        }
        let want = what == SeekWhat::Data;
        match (pos / 64..blocks.len() as u64).find(|&b| blocks[b as usize] == want) {
            Some(b) => Some((b * 64).max(pos)),
            None if want => None,
            None => Some(size),
        }
    }

    fn run<T>(f: impl Future<Output = T>) -> T {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
            .block_on(f)
    }

    #[test]
    fn a_store_that_contradicts_itself_gets_data_not_an_endless_loop() {
        // Says "no data here" and "no hole here" at every offset.
        let segs = run(find_segments(0, 100, 8, |pos, what| async move {
            Ok::<_, ()>(match what {
                SeekWhat::Data => Some(pos),
                SeekWhat::Hole => Some(pos),
            })
        }))
        .unwrap();
        assert_eq!(
            segs,
            [Segment {
                offset: 0,
                len: 100,
                hole: false
            }]
        );
    }

    #[test]
    fn segments_stop_at_the_maximum_and_a_short_object_is_a_hole() {
        let blocks = [true, false, true, false, true, false];
        let segs = run(find_segments(0, 384, 3, |pos, what| async move {
            Ok::<_, ()>(seek_in(&blocks, pos, what))
        }))
        .unwrap();
        assert_eq!(segs.len(), 3);
        assert_eq!(segs.last().unwrap().end(), 192);
        // The data segment [0, 64) read as only 10 bytes: the rest is a hole.
        let c = read_plus_contents(&segs, 0, &Bytes::from(vec![1u8; 10]));
        assert_eq!(
            c,
            [
                ReadPlusContent::Data(Data4 {
                    d_offset: 0,
                    d_data: Bytes::from(vec![1u8; 10])
                }),
                ReadPlusContent::Hole(DataInfo4 {
                    di_offset: 10,
                    di_length: 182
                }),
            ]
        );
    }

    proptest! {
        /// Segments cover the range back to back, alternate, holes only where the store has
        /// holes, and the contents rebuild the range's bytes, data as slices of the read.
        #[test]
        fn segments_and_contents_rebuild_the_range(
            blocks in proptest::collection::vec(any::<bool>(), 0..40),
            offset in 0u64..3000,
            len in 0u64..3000,
        ) {
            let size = blocks.len() as u64 * 64;
            let bytes: Vec<u8> = (0..size)
                .map(|i| if blocks[(i / 64) as usize] { (i % 251) as u8 | 1 } else { 0 })
                .collect();
            let end = (offset + len).min(size);
            let segs = run(find_segments(offset, end, usize::MAX, |pos, what| {
                let blocks = &blocks;
                async move { Ok::<_, ()>(seek_in(blocks, pos, what)) }
            }))
            .unwrap();
            let mut at = offset;
            for w in segs.windows(2) {
                prop_assert_ne!(w[0].hole, w[1].hole);
            }
            for s in &segs {
                prop_assert_eq!(s.offset, at);
                prop_assert!(s.len > 0);
                if s.hole {
                    prop_assert!(bytes[s.offset as usize..s.end() as usize].iter().all(|&b| b == 0));
                }
                at = s.end();
            }
            prop_assert_eq!(at, end.max(offset));
            if offset < end {
                let data = Bytes::copy_from_slice(&bytes[offset as usize..end as usize]);
                let mut rebuilt = vec![0xeeu8; (end - offset) as usize];
                for c in read_plus_contents(&segs, offset, &data) {
                    match c {
                        ReadPlusContent::Data(d) => {
                            let o = (d.d_offset - offset) as usize;
                            prop_assert!(d.d_data.as_ptr() >= data.as_ptr(), "a slice");
                            rebuilt[o..o + d.d_data.len()].copy_from_slice(&d.d_data);
                        }
                        ReadPlusContent::Hole(h) => {
                            let o = (h.di_offset - offset) as usize;
                            rebuilt[o..o + h.di_length as usize].fill(0);
                        }
                        ReadPlusContent::Other(_) => prop_assert!(false),
                    }
                }
                prop_assert_eq!(&rebuilt[..], &bytes[offset as usize..end as usize]);
            }
        }
    }

    #[test]
    fn store_errors_have_their_rfc_status_numbers() {
        use rustix::io::Errno;
        let s = |e: StoreError| store_status(&e).0;
        assert_eq!(s(StoreError::from_errno("pwritev", Errno::IO, 0, 0)), 5);
        assert_eq!(s(StoreError::TooBig { offset: 1, len: 2 }), 27);
        assert_eq!(s(StoreError::NoSpace), 28);
        assert_eq!(s(StoreError::ReadOnly), 30);
        assert_eq!(s(StoreError::QuotaExceeded), 69);
        assert_eq!(s(StoreError::NotSupported), 10004);
    }

    #[test]
    fn writes_are_cut_at_max_io_and_refused_past_the_largest_offset() {
        let data = Bytes::from(vec![7u8; 100]);
        assert_eq!(clip_write(&data, 0, 64).unwrap().len(), 64);
        assert_eq!(clip_write(&data, 0, 4096).unwrap().len(), 100);
        assert_eq!(
            clip_write(&data, i64::MAX as u64 - 100, 4096)
                .unwrap()
                .len(),
            100
        );
        assert_eq!(
            clip_write(&data, i64::MAX as u64 - 99, 4096),
            Err(NfsStat4::NFS4ERR_FBIG)
        );
        assert_eq!(
            clip_write(&data, u64::MAX, 4096),
            Err(NfsStat4::NFS4ERR_FBIG)
        );
    }
}

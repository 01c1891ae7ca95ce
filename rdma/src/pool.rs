//! Registered buffers kept for reuse: registering memory is a system call and a page pinning,
//! far too slow for every RPC (Goglin: a registration cache is what makes RDMA pay for
//! storage). A buffer taken from the pool goes back to it when its last user drops it, so
//! a WRITE's data can stay in the buffer the RDMA Read filled until the backend has written
//! it, with no copy, and a READ's data can be `pread` into one and RDMA-written from there
//! ([`Pool::locate`] finds the registration of such data when the reply is sent).

use std::collections::BTreeMap;
use std::io;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use nfs_proto::transport::{PayloadBuf, PayloadBuffers, PayloadMemory};

use crate::verbs::{Access, Mr, Pd};

/// Something told of each registration a pool makes (adds one to a counter).
pub(crate) type Tally = Arc<dyn Fn() + Send + Sync>;

/// A pool of registered buffers of one size.
pub(crate) struct Pool {
    pd: Arc<Pd>,
    size: usize,
    keep: usize,
    access: Access,
    free: Mutex<Vec<Mr>>,
    /// The registered regions of the pool's live buffers (on loan or free), by address:
    /// (end, lkey).
    regions: Mutex<BTreeMap<u64, (u64, u32)>>,
    /// Told of every registration (pool misses and one-off buffers): the client's
    /// process-wide stats, a listener's.
    tally: Tally,
}

impl Pool {
    /// A pool of `size`-byte buffers that keeps up to `keep` free ones (a `keep` of 0 caches
    /// nothing: every buffer is registered for its one use); `tally` is told of each
    /// registration.
    pub(crate) fn new(
        pd: Arc<Pd>,
        size: usize,
        keep: usize,
        access: Access,
        tally: Tally,
    ) -> Arc<Self> {
        Arc::new(Self {
            pd,
            size,
            keep,
            access,
            free: Mutex::new(Vec::new()),
            regions: Mutex::new(BTreeMap::new()),
            tally,
        })
    }

    /// A buffer of at least `len` bytes: a pooled one when `len` fits the pool's size, else
    /// one registered for this use only.
    pub(crate) fn take(self: &Arc<Self>, len: usize) -> io::Result<Pooled> {
        if len <= self.size {
            if let Some(mr) = self.free.lock().expect("pool lock").pop() {
                return Ok(Pooled {
                    mr: Some(mr),
                    pool: Some(self.clone()),
                    len,
                });
            }
        }
        (self.tally)();
        let mr = Mr::new(&self.pd, len.max(self.size), self.access)?;
        self.regions
            .lock()
            .expect("pool lock")
            .insert(mr.addr(), (mr.addr() + mr.bytes().len() as u64, mr.lkey()));
        Ok(Pooled {
            mr: Some(mr),
            pool: Some(self.clone()),
            len,
        })
    }

    /// Where `data` is registered when it lies in one of this pool's buffers: its address and
    /// the buffer's local key, for a work request that sends it as it is. The caller keeps
    /// `data` (and so the buffer) alive until the work request completes.
    pub(crate) fn locate(&self, data: &[u8]) -> Option<(u64, u32)> {
        let (start, end) = (
            data.as_ptr() as u64,
            data.as_ptr() as u64 + data.len() as u64,
        );
        let regions = self.regions.lock().expect("pool lock");
        let (_, &(region_end, lkey)) = regions.range(..=start).next_back()?;
        (end <= region_end).then_some((start, lkey))
    }

    fn forget(&self, mr: &Mr) {
        self.regions.lock().expect("pool lock").remove(&mr.addr());
    }
}

/// A registered buffer on loan from a [`Pool`]; `len` bytes of it are in use.
pub(crate) struct Pooled {
    mr: Option<Mr>,
    pool: Option<Arc<Pool>>,
    len: usize,
}

impl Pooled {
    /// The registered region.
    pub(crate) fn mr(&self) -> &Mr {
        self.mr.as_ref().expect("present until drop")
    }

    /// The registered region, to fill.
    pub(crate) fn mr_mut(&mut self) -> &mut Mr {
        self.mr.as_mut().expect("present until drop")
    }

    /// The bytes in use, frozen: the buffer returns to the pool when the last slice of them
    /// is dropped.
    pub(crate) fn freeze(self) -> Bytes {
        Bytes::from_owner(self)
    }
}

impl AsRef<[u8]> for Pooled {
    fn as_ref(&self) -> &[u8] {
        &self.mr().bytes()[..self.len]
    }
}

impl Drop for Pooled {
    fn drop(&mut self) {
        if let (Some(mr), Some(pool)) = (self.mr.take(), self.pool.take()) {
            if mr.bytes().len() == pool.size {
                let mut free = pool.free.lock().expect("pool lock");
                if free.len() < pool.keep {
                    free.push(mr);
                    return;
                }
            }
            pool.forget(&mr);
        }
    }
}

/// A pooled buffer as the memory of a [`PayloadBuf`]: a READ is `pread` into it and the
/// reply RDMA-writes it from there.
impl PayloadMemory for Pooled {
    fn space(&mut self) -> &mut [u8] {
        let len = self.len;
        &mut self.mr_mut().bytes_mut()[..len]
    }

    fn freeze(mut self: Box<Self>, len: usize) -> Bytes {
        self.len = len.min(self.len);
        Pooled::freeze(*self)
    }
}

/// A connection's [`PayloadBuffers`]: buffers of its pool that fit, none for a larger read
/// (registering memory for one READ costs more than the copy it saves).
pub(crate) struct Payloads(pub(crate) Arc<Pool>);

impl PayloadBuffers for Payloads {
    fn take(&self, len: usize) -> Option<PayloadBuf> {
        if len > self.0.size {
            return None;
        }
        let pooled = self.0.take(len).ok()?;
        Some(PayloadBuf::new(Box::new(pooled)))
    }
}

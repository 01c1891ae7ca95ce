//! Registered buffers kept for reuse: registering memory is a system call and a page pinning,
//! far too slow for every RPC (Goglin: a registration cache is what makes RDMA pay for
//! storage). A buffer taken from the pool goes back to it when its last user drops it, so
//! a WRITE's data can stay in the buffer the RDMA Read filled until the backend has written
//! it, with no copy.

use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use bytes::Bytes;

use crate::verbs::{Access, Mr, Pd};

/// A pool of registered buffers of one size.
pub(crate) struct Pool {
    pd: Arc<Pd>,
    size: usize,
    keep: usize,
    access: Access,
    free: Mutex<Vec<Mr>>,
    /// Memory registrations made (pool misses and one-off buffers).
    pub registrations: AtomicU64,
    /// A process-wide counter the registrations are added to as well (the client's stats).
    also: Option<&'static AtomicU64>,
}

impl Pool {
    /// A pool of `size`-byte buffers that keeps up to `keep` free ones.
    pub(crate) fn new(pd: Arc<Pd>, size: usize, keep: usize, access: Access) -> Arc<Self> {
        Self::with_counter(pd, size, keep, access, None)
    }

    /// [`Pool::new`] whose registrations are also counted in `also`. A `keep` of 0 caches
    /// nothing: every buffer is registered for its one use.
    pub(crate) fn counted(
        pd: Arc<Pd>,
        size: usize,
        keep: usize,
        access: Access,
        also: &'static AtomicU64,
    ) -> Arc<Self> {
        Self::with_counter(pd, size, keep, access, Some(also))
    }

    fn with_counter(
        pd: Arc<Pd>,
        size: usize,
        keep: usize,
        access: Access,
        also: Option<&'static AtomicU64>,
    ) -> Arc<Self> {
        Arc::new(Self {
            pd,
            size,
            keep,
            access,
            free: Mutex::new(Vec::new()),
            registrations: AtomicU64::new(0),
            also,
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
        self.registrations.fetch_add(1, Ordering::Relaxed);
        if let Some(also) = self.also {
            also.fetch_add(1, Ordering::Relaxed);
        }
        let mr = Mr::new(&self.pd, len.max(self.size), self.access)?;
        let pool = (len <= self.size).then(|| self.clone());
        Ok(Pooled {
            mr: Some(mr),
            pool,
            len,
        })
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
            let mut free = pool.free.lock().expect("pool lock");
            if free.len() < pool.keep {
                free.push(mr);
            }
        }
    }
}

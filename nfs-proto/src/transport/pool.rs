//! Bounded pools of byte buffers, for memory a process would otherwise allocate, fault in and
//! zero again for every large message: the receive buffers of large records
//! ([`super::records`]) and a data server's READ data (`nfs_server::read_buffers`). Each use
//! has a pool of its own, so one cannot starve the other.
//!
//! A pool keeps at most a number of buffers and a number of bytes (of capacity); a buffer it
//! cannot keep is freed, so the memory it holds is bounded whatever the traffic. A buffer
//! lent out as [`Bytes`] ([`BufferPool::bytes`]) comes back when the last `Bytes` of it is
//! dropped, its pages still mapped.

use std::sync::{Mutex, PoisonError};

use bytes::Bytes;

/// New buffers are allocated in multiples of this, so that messages of slightly different
/// sizes (a megabyte of payload plus headers of varying length) share buffers.
pub const POOL_GRAIN: usize = 64 << 10;

/// A pool of `Vec<u8>` buffers; see the module docs.
#[derive(Debug)]
pub struct BufferPool {
    free: Mutex<Free>,
    keep: usize,
    keep_bytes: usize,
}

#[derive(Debug)]
struct Free {
    bufs: Vec<Vec<u8>>,
    /// Their capacities, summed.
    bytes: usize,
}

impl BufferPool {
    /// A pool that keeps at most `keep` buffers and `keep_bytes` bytes of them.
    pub const fn new(keep: usize, keep_bytes: usize) -> Self {
        Self {
            free: Mutex::new(Free {
                bufs: Vec::new(),
                bytes: 0,
            }),
            keep,
            keep_bytes,
        }
    }

    /// A buffer of capacity at least `len`: a kept one if one is large enough, its length
    /// and bytes as its last user left them; else a new empty one of capacity `len` rounded
    /// up to [`POOL_GRAIN`].
    pub fn take(&self, len: usize) -> Vec<u8> {
        {
            let mut f = self.lock();
            if let Some(i) = f.bufs.iter().rposition(|b| b.capacity() >= len) {
                let b = f.bufs.swap_remove(i);
                f.bytes -= b.capacity();
                return b;
            }
        }
        Vec::with_capacity(len.div_ceil(POOL_GRAIN) * POOL_GRAIN)
    }

    /// Keeps `buf` for a later [`BufferPool::take`] if the bounds allow, else frees it.
    pub fn give(&self, buf: Vec<u8>) {
        if buf.capacity() == 0 {
            return;
        }
        let mut f = self.lock();
        if f.bufs.len() < self.keep && f.bytes + buf.capacity() <= self.keep_bytes {
            f.bytes += buf.capacity();
            f.bufs.push(buf);
        }
    }

    /// The first `len` bytes of `buf` (at most its length) as `Bytes`; `buf` comes back to
    /// this pool when the last `Bytes` of it is dropped.
    pub fn bytes(&'static self, buf: Vec<u8>, len: usize) -> Bytes {
        let len = len.min(buf.len());
        Bytes::from_owner(Lent {
            buf,
            len,
            pool: self,
        })
    }

    /// Buffers kept, and their capacities summed.
    pub fn kept(&self) -> (usize, usize) {
        let f = self.lock();
        (f.bufs.len(), f.bytes)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Free> {
        self.free.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A buffer lent out as `Bytes`.
struct Lent {
    buf: Vec<u8>,
    len: usize,
    pool: &'static BufferPool,
}

impl AsRef<[u8]> for Lent {
    fn as_ref(&self) -> &[u8] {
        &self.buf[..self.len]
    }
}

impl Drop for Lent {
    fn drop(&mut self) {
        self.pool.give(std::mem::take(&mut self.buf));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pool_keeps_no_more_than_its_bounds() {
        let pool = BufferPool::new(4, 8 << 20);
        let bufs: Vec<Vec<u8>> = (0..10).map(|_| pool.take(1 << 20)).collect();
        for b in bufs {
            pool.give(b);
        }
        assert_eq!(pool.kept(), (4, 4 << 20));
        let pool = BufferPool::new(4, 8 << 20);
        for b in (0..4).map(|_| pool.take(3 << 20)).collect::<Vec<_>>() {
            pool.give(b);
        }
        assert_eq!(pool.kept(), (2, 6 << 20), "the bytes bound");
        pool.give(Vec::new());
        assert_eq!(pool.kept().0, 2, "nothing kept of an empty buffer");
    }

    #[test]
    fn a_lent_buffer_comes_back_with_its_last_slice_and_a_smaller_take_gets_it() {
        let pool: &'static BufferPool = Box::leak(Box::new(BufferPool::new(4, 8 << 20)));
        let mut v = pool.take(100_000);
        assert_eq!(v.capacity(), 2 * POOL_GRAIN, "rounded up to the grain");
        v.extend_from_slice(b"abcdef");
        let b = pool.bytes(v, 3);
        assert_eq!(&b[..], b"abc");
        let tail = b.slice(1..);
        drop(b);
        assert_eq!(pool.kept().0, 0, "a slice keeps the buffer");
        drop(tail);
        assert_eq!(pool.kept(), (1, 2 * POOL_GRAIN));
        let again = pool.take(POOL_GRAIN);
        assert_eq!(&again[..], b"abcdef", "as its last user left it");
        assert!(pool.take(2 * POOL_GRAIN + 1).capacity() > 2 * POOL_GRAIN);
    }
}

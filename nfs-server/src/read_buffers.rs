//! Memory for the data of READ replies sent over byte streams (TCP), reused from one reply
//! to the next.
//!
//! A READ of a megabyte used to be read into fresh memory every time: new pages, which the
//! kernel faults in and the allocator zeroes, handed back when the reply had been sent (a
//! data server's page faults and `memset` were about 5 % of its CPU on sequential reads,
//! issue 22). Here a READ of at least [`POOLED_MIN`] bytes is read into a buffer from a
//! process-wide pool, and the buffer goes back when the reply's last [`Bytes`] is dropped
//! (the connection has written it): its pages stay mapped, and its bytes stay initialised, so
//! the next READ `pread`s into it without faulting or zeroing. RDMA connections bring their
//! own registered buffers ([`nfs_proto::transport::Conn::payload_buffers`]); this is the pool
//! for the others, the same [`PayloadBuf`] interface.
//!
//! The pool keeps at most [`KEEP`] buffers and [`KEEP_BYTES`] bytes; a buffer it cannot keep
//! is freed, so the memory it holds is bounded whatever the traffic. The bound covers the
//! usual load of `pnfs server`'s three data servers in one process (a client keeps 8 READs
//! of a megabyte in flight per data server).

use bytes::Bytes;
use nfs_proto::transport::{BufferPool, PayloadBuf, PayloadMemory};

/// READs of at least this many bytes use pooled memory; smaller ones fresh memory (the
/// allocator reuses small blocks well by itself).
pub const POOLED_MIN: usize = 64 << 10;

/// The most buffers the pool keeps.
pub const KEEP: usize = 32;

/// The most bytes of buffers the pool keeps.
pub const KEEP_BYTES: usize = 32 << 20;

/// The process's pool.
static POOL: BufferPool = BufferPool::new(KEEP, KEEP_BYTES);

/// A buffer of at least `len` bytes from the process's pool, or `None` below
/// [`POOLED_MIN`].
pub fn take(len: usize) -> Option<PayloadBuf> {
    take_from(&POOL, len)
}

fn take_from(pool: &'static BufferPool, len: usize) -> Option<PayloadBuf> {
    if len < POOLED_MIN {
        return None;
    }
    let mut buf = pool.take(len);
    if buf.len() < len {
        // New (or shorter than asked): initialised once, to its whole capacity, so that
        // the READs that reuse it write over bytes that are there already.
        buf.resize(buf.capacity(), 0);
    }
    Some(PayloadBuf::new(Box::new(Buffer { buf, pool })))
}

/// A pooled buffer being filled; back to its pool when dropped unfrozen.
struct Buffer {
    buf: Vec<u8>,
    pool: &'static BufferPool,
}

impl Drop for Buffer {
    fn drop(&mut self) {
        self.pool.give(std::mem::take(&mut self.buf));
    }
}

impl PayloadMemory for Buffer {
    fn space(&mut self) -> &mut [u8] {
        &mut self.buf
    }

    fn freeze(mut self: Box<Self>, len: usize) -> Bytes {
        let buf = std::mem::take(&mut self.buf);
        self.pool.bytes(buf, len)
    }
}

#[cfg(test)]
mod tests {
    use nfs_proto::transport::POOL_GRAIN;

    use super::*;

    fn pool() -> &'static BufferPool {
        Box::leak(Box::new(BufferPool::new(KEEP, KEEP_BYTES)))
    }

    #[test]
    fn a_buffer_goes_back_when_its_last_slice_goes_and_is_reused_as_it_was() {
        let p = pool();
        let mut b = take_from(p, 1 << 20).unwrap();
        assert_eq!(b.space().len(), 1 << 20);
        b.space()[..3].copy_from_slice(b"abc");
        let data = b.freeze(3);
        assert_eq!(&data[..], b"abc");
        let slice = data.slice(1..);
        drop(data);
        assert_eq!(p.kept().0, 0, "a slice keeps the buffer");
        drop(slice);
        assert_eq!(p.kept(), (1, 1 << 20));
        // A smaller READ takes the same memory, its bytes as they were: nothing is zeroed.
        let mut again = take_from(p, 100 << 10).unwrap();
        assert_eq!(&again.space()[..3], b"abc");
        assert_eq!(p.kept(), (0, 0));
    }

    #[test]
    fn small_reads_are_not_pooled_and_sizes_round_up_to_the_grain() {
        let p = pool();
        assert!(take_from(p, POOLED_MIN - 1).is_none());
        let mut b = take_from(p, POOLED_MIN + 1).unwrap();
        assert_eq!(b.space().len(), 2 * POOL_GRAIN);
        drop(b);
        assert_eq!(
            p.kept(),
            (1, 2 * POOL_GRAIN),
            "an unfrozen buffer goes back too"
        );
        let larger = take_from(p, 2 * POOL_GRAIN + 1).unwrap();
        assert_eq!(
            p.kept().0,
            1,
            "a larger READ does not take a smaller buffer"
        );
        drop(larger);
    }

    #[test]
    fn the_pool_keeps_at_most_its_bounds() {
        let p = pool();
        let many: Vec<_> = (0..KEEP + 8)
            .map(|_| take_from(p, POOLED_MIN).unwrap())
            .collect();
        drop(many);
        assert_eq!(p.kept(), (KEEP, KEEP * POOLED_MIN));
        let p = pool();
        let big: Vec<_> = (0..5)
            .map(|_| take_from(p, KEEP_BYTES / 4).unwrap())
            .collect();
        drop(big);
        assert_eq!(p.kept(), (4, KEEP_BYTES));
    }
}

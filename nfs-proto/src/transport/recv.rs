//! Reading records off a byte stream, with the memory of large ones taken from a pool.
//!
//! A large record (a WRITE call at a server, a READ reply at a client: about a megabyte each)
//! used to be read into fresh memory every time: the connection's read buffer could not be
//! reused while the record split off it lived on in a handler, so each record cost new pages,
//! which the kernel faults in and zeroes, and the allocator hands back to it when freed (a
//! third of a data server's write CPU in issue 22's profile). Here a record of at least
//! [`POOLED_MIN`] bytes is read into a buffer from a process-wide pool instead, straight from
//! the socket after whatever the read buffer already holds of it, and the buffer goes back to
//! the pool when the last [`Bytes`] of the record is dropped: its pages stay mapped and warm.
//! Smaller records go through the connection's read buffer and [`RecordReader::decode`] as
//! before (so do records of several fragments, which no client sends for a single call).
//!
//! The pool keeps at most [`POOL_KEEP`] buffers and [`POOL_KEEP_BYTES`] bytes: memory it holds
//! is bounded whatever the traffic; a buffer it cannot keep is freed. The bound fits in the
//! 64 MiB the client's memory rule leaves beyond its write-back and read cache (issue 22),
//! and covers a data server's usual load (a client keeps 8 WRITEs of a megabyte in flight
//! per data server).

use std::io;

use bytes::{Buf, Bytes, BytesMut};
use futures_util::Stream;
use tokio::io::{AsyncRead, AsyncReadExt};

use super::pool::BufferPool;
use super::RecordStreamError;
use crate::record::RecordReader;

/// Records of at least this many bytes are read into pooled memory.
pub const POOLED_MIN: usize = 64 << 10;

/// The most buffers the pool keeps.
pub const POOL_KEEP: usize = 32;

/// The most bytes of buffers the pool keeps.
pub const POOL_KEEP_BYTES: usize = 48 << 20;

/// How much the connection's read buffer asks of the socket at a time.
const READ_CHUNK: usize = 64 << 10;

/// The process's pool of receive buffers.
static POOL: BufferPool = BufferPool::new(POOL_KEEP, POOL_KEEP_BYTES);

/// The records of `read`, cut by `reader` (its fragment and record caps apply), large ones
/// in pooled memory. Ends after the first error; an error carries a [`super::RecordStreamError`]
/// (`io::Error::get_ref`) unless the socket's own.
pub fn records<R>(
    read: R,
    reader: RecordReader,
) -> impl Stream<Item = io::Result<Bytes>> + Send + Unpin
where
    R: AsyncRead + Send + Unpin + 'static,
{
    records_in(read, reader, &POOL)
}

fn records_in<R>(
    read: R,
    reader: RecordReader,
    pool: &'static BufferPool,
) -> impl Stream<Item = io::Result<Bytes>> + Send + Unpin
where
    R: AsyncRead + Send + Unpin + 'static,
{
    let st = Reading {
        read,
        reader,
        buf: BytesMut::new(),
        pool,
        failed: false,
    };
    Box::pin(futures_util::stream::unfold(st, |mut st| async move {
        if st.failed {
            return None;
        }
        match st.next().await {
            Ok(Some(record)) => Some((Ok(record), st)),
            Ok(None) => None,
            Err(e) => {
                st.failed = true;
                Some((Err(e), st))
            }
        }
    }))
}

struct Reading<R> {
    read: R,
    reader: RecordReader,
    /// Bytes read and not yet part of a returned record.
    buf: BytesMut,
    pool: &'static BufferPool,
    failed: bool,
}

impl<R: AsyncRead + Unpin> Reading<R> {
    /// The next record; `None` at a clean end of stream.
    async fn next(&mut self) -> io::Result<Option<Bytes>> {
        loop {
            if let Some(len) = self
                .reader
                .take_large_record(&mut self.buf, POOLED_MIN)
                .map_err(|e| io::Error::from(RecordStreamError::Record(e)))?
            {
                return self.pooled(len).await.map(Some);
            }
            if let Some(record) = self
                .reader
                .decode(&mut self.buf)
                .map_err(|e| io::Error::from(RecordStreamError::Record(e)))?
            {
                return Ok(Some(record));
            }
            if self.buf.capacity() - self.buf.len() < READ_CHUNK / 4 {
                self.buf.reserve(READ_CHUNK);
            }
            if self.read.read_buf(&mut self.buf).await? == 0 {
                if self.buf.is_empty() && !self.reader.is_mid_record() {
                    return Ok(None);
                }
                return Err(RecordStreamError::Truncated {
                    buffered: self.buf.len(),
                }
                .into());
            }
        }
    }

    /// A record of `len` bytes whose header was consumed: what the read buffer holds of it,
    /// then the rest read from the stream straight into a pooled buffer (no more than the
    /// record, so the next one's bytes stay in the stream for the read buffer).
    async fn pooled(&mut self, len: usize) -> io::Result<Bytes> {
        let mut v = self.pool.take(len);
        v.clear();
        let have = self.buf.len().min(len);
        v.extend_from_slice(&self.buf[..have]);
        self.buf.advance(have);
        while v.len() < len {
            let want = (len - v.len()) as u64;
            if (&mut self.read).take(want).read_buf(&mut v).await? == 0 {
                return Err(RecordStreamError::Truncated { buffered: v.len() }.into());
            }
        }
        Ok(self.pool.bytes(v, len))
    }
}

#[cfg(test)]
mod tests {
    use futures_util::StreamExt;
    use tokio::io::AsyncWriteExt;

    use super::*;
    use crate::record::{frame_record, record_header};

    fn framed(records: &[Vec<u8>]) -> Vec<u8> {
        let mut wire = Vec::new();
        for r in records {
            for p in frame_record([Bytes::from(r.clone())], usize::MAX) {
                wire.extend_from_slice(&p);
            }
        }
        wire
    }

    /// Records of every size class, written in small and odd pieces: each comes out whole
    /// and in order, small ones, large (pooled) ones and one of several fragments alike.
    #[tokio::test]
    async fn records_of_every_size_come_out_whole_in_any_chunking() {
        let sizes = [
            0,
            1,
            100,
            POOLED_MIN - 1,
            POOLED_MIN,
            1 << 20,
            7,
            (1 << 20) + 13,
        ];
        let recs: Vec<Vec<u8>> = sizes
            .iter()
            .enumerate()
            .map(|(i, &n)| (0..n).map(|b| (b * 31 + i) as u8).collect())
            .collect();
        let mut wire = framed(&recs);
        // And one record in two fragments (100 KiB + 1 byte).
        let split: Vec<u8> = (0..(100 << 10) + 1).map(|b| b as u8).collect();
        wire.extend_from_slice(&record_header(100 << 10, false));
        wire.extend_from_slice(&split[..100 << 10]);
        wire.extend_from_slice(&record_header(1, true));
        wire.extend_from_slice(&split[100 << 10..]);
        for chunk in [1, 3, 4093, 65536, 1 << 22] {
            let (mut tx, rx) = tokio::io::duplex(1 << 16);
            let wire = wire.clone();
            tokio::spawn(async move {
                for c in wire.chunks(chunk) {
                    tx.write_all(c).await.unwrap();
                }
            });
            let got: Vec<Bytes> = records(rx, RecordReader::new(4 << 20, 4 << 20))
                .map(|r| r.unwrap())
                .collect()
                .await;
            assert_eq!(got.len(), recs.len() + 1, "chunk {chunk}");
            for (g, r) in got.iter().zip(&recs) {
                assert_eq!(&g[..], &r[..], "chunk {chunk}");
            }
            assert_eq!(&got[recs.len()][..], &split[..]);
        }
    }

    /// A record's buffer goes back to the pool when its last slice goes, and the next large
    /// record reuses it.
    #[tokio::test]
    async fn a_record_buffer_is_reused_once_its_bytes_are_dropped() {
        let pool: &'static BufferPool =
            Box::leak(Box::new(BufferPool::new(POOL_KEEP, POOL_KEEP_BYTES)));
        let len = (1 << 20) + 5;
        let record = vec![5u8; len];
        let wire = framed(&[record.clone(), record.clone(), record.clone()]);
        let (mut tx, rx) = tokio::io::duplex(1 << 16);
        tokio::spawn(async move { tx.write_all(&wire).await.unwrap() });
        let mut s = records_in(rx, RecordReader::default(), pool);
        let first = s.next().await.unwrap().unwrap();
        let addr = first.as_ptr();
        let tail = first.slice(len - 10..);
        drop(first);
        assert_eq!(pool.kept().0, 0, "a slice keeps the buffer");
        let second = s.next().await.unwrap().unwrap();
        assert_ne!(second.as_ptr(), addr, "still held: a new buffer");
        drop(tail);
        assert_eq!(pool.kept().0, 1);
        drop(second);
        assert_eq!(pool.kept().0, 2);
        let third = s.next().await.unwrap().unwrap();
        assert_eq!(&third[..], &record[..]);
        assert_eq!(pool.kept().0, 1, "one of them taken again");
        drop(third);
        assert!(s.next().await.is_none(), "clean end");
    }

    #[tokio::test]
    async fn an_over_cap_header_and_a_truncated_record_are_errors_without_allocation() {
        // A header announcing 1 GiB: refused before any memory is taken for it.
        let mut wire = record_header(1 << 30, true).to_vec();
        wire.extend_from_slice(&[0; 100]);
        let mut s = records(
            std::io::Cursor::new(wire),
            RecordReader::new(4 << 20, 4 << 20),
        );
        let e = s.next().await.unwrap().unwrap_err();
        assert!(e.to_string().contains("1073741824"), "{e}");
        assert!(s.next().await.is_none(), "ends after the error");
        // A large record cut short.
        let mut wire = record_header(1 << 20, true).to_vec();
        wire.extend_from_slice(&vec![1; 300 << 10]);
        let mut s = records(std::io::Cursor::new(wire), RecordReader::default());
        let e = s.next().await.unwrap().unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::UnexpectedEof, "{e}");
        // A small one cut short.
        let mut wire = record_header(100, true).to_vec();
        wire.extend_from_slice(&[1; 10]);
        let mut s = records(std::io::Cursor::new(wire), RecordReader::default());
        assert!(s.next().await.unwrap().is_err());
    }
}

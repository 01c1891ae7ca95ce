//! tokio glue: records read off a stream and vectored record writes.
//!
//! Read records with [`records`] (large ones land in pooled memory); send a reply (header
//! and result pieces from [`crate::xdr::Encoder::into_pieces`]) with [`write_record`], which
//! hands the pieces to the socket with vectored writes and never copies them.

mod budget;
mod conn;
mod payload;
mod pool;
mod recv;

pub use budget::ReplyBudget;
pub use conn::{
    first_callback_xid, start, start_records, start_with, CallError, CallHandler, Conn, ConnLimits,
    HandlerFuture, IncomingCall, NoCalls, RecordSink, Reply, ServerPolicy,
};
pub use payload::{PayloadBuf, PayloadBuffers, PayloadMemory, SharedPayloadBuffers};
pub use pool::{BufferPool, POOL_GRAIN};
pub use recv::{records, POOLED_MIN, POOL_KEEP, POOL_KEEP_BYTES};

use core::fmt;
use std::io::{self, IoSlice};

use bytes::Bytes;
use tokio::io::{AsyncWrite, AsyncWriteExt};

use crate::record::{frame_record, record_header, RecordError, MAX_FRAGMENT_LEN};

/// At most this many buffers go to one `write_vectored` call (Linux's `IOV_MAX` is 1024).
const MAX_IOVECS: usize = 1024;

/// An error reading records from a connection.
#[derive(Debug)]
#[non_exhaustive]
pub enum RecordStreamError {
    /// The record marking is invalid (e.g. over a size cap).
    Record(RecordError),
    /// The connection ended in the middle of a record.
    Truncated {
        /// Bytes of the unfinished record that were received and not yet consumed.
        buffered: usize,
    },
    /// Reading from the connection failed.
    Io(io::Error),
}

impl fmt::Display for RecordStreamError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Record(e) => e.fmt(f),
            Self::Truncated { buffered } => write!(
                f,
                "connection closed in the middle of an RPC record ({buffered} bytes buffered)"
            ),
            Self::Io(e) => write!(f, "reading RPC records: {e}"),
        }
    }
}

impl std::error::Error for RecordStreamError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Record(e) => Some(e),
            Self::Truncated { .. } => None,
            Self::Io(e) => Some(e),
        }
    }
}

impl From<io::Error> for RecordStreamError {
    fn from(e: io::Error) -> Self {
        Self::Io(e)
    }
}

impl From<RecordError> for RecordStreamError {
    fn from(e: RecordError) -> Self {
        Self::Record(e)
    }
}

impl From<RecordStreamError> for io::Error {
    fn from(e: RecordStreamError) -> Self {
        match e {
            RecordStreamError::Io(e) => e,
            RecordStreamError::Record(e) => e.into(),
            e @ RecordStreamError::Truncated { .. } => {
                io::Error::new(io::ErrorKind::UnexpectedEof, e)
            }
        }
    }
}

/// Sends `pieces` as one record: a record-marking header, then the pieces, with vectored
/// writes (partial writes are resumed; the pieces are never copied into one buffer), then a
/// flush. A record over [`MAX_FRAGMENT_LEN`] bytes is split into fragments.
pub async fn write_record<W>(writer: &mut W, pieces: &[Bytes]) -> io::Result<()>
where
    W: AsyncWrite + Unpin + ?Sized,
{
    let total: usize = pieces.iter().map(Bytes::len).sum();
    if total > MAX_FRAGMENT_LEN {
        return write_record_fragmented(writer, pieces, MAX_FRAGMENT_LEN).await;
    }
    let header = record_header(total as u32, true);
    let mut bufs = Vec::with_capacity(pieces.len() + 1);
    bufs.push(IoSlice::new(&header));
    bufs.extend(
        pieces
            .iter()
            .filter(|p| !p.is_empty())
            .map(|p| IoSlice::new(p)),
    );
    write_all_vectored(writer, &mut bufs).await?;
    writer.flush().await
}

/// Like [`write_record`], but splits the record into fragments of at most `max_fragment`
/// bytes (see [`frame_record`]).
pub async fn write_record_fragmented<W>(
    writer: &mut W,
    pieces: &[Bytes],
    max_fragment: usize,
) -> io::Result<()>
where
    W: AsyncWrite + Unpin + ?Sized,
{
    let framed = frame_record(pieces.iter().cloned(), max_fragment);
    write_framed(writer, &framed).await
}

/// Sends pieces that are already framed (e.g. by [`frame_record`], possibly several records)
/// with vectored writes, then flushes.
pub async fn write_framed<W>(writer: &mut W, framed: &[Bytes]) -> io::Result<()>
where
    W: AsyncWrite + Unpin + ?Sized,
{
    let mut bufs: Vec<IoSlice<'_>> = framed
        .iter()
        .filter(|p| !p.is_empty())
        .map(|p| IoSlice::new(p))
        .collect();
    write_all_vectored(writer, &mut bufs).await?;
    writer.flush().await
}

/// Writes every byte of `bufs`, resuming after partial writes.
async fn write_all_vectored<W>(writer: &mut W, mut bufs: &mut [IoSlice<'_>]) -> io::Result<()>
where
    W: AsyncWrite + Unpin + ?Sized,
{
    while !bufs.is_empty() {
        let batch = &bufs[..bufs.len().min(MAX_IOVECS)];
        let offered: usize = batch.iter().map(|b| b.len()).sum();
        let n = match writer.write_vectored(batch).await {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) if n > offered => {
                return Err(io::Error::other(format!(
                    "writer reported {n} bytes written of {offered} offered"
                )))
            }
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        IoSlice::advance_slices(&mut bufs, n);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::pin::Pin;
    use std::task::{Context, Poll};

    use futures::StreamExt;
    use tokio::io::{AsyncRead, AsyncWriteExt};
    use tokio::net::{TcpListener, TcpStream};

    use super::*;
    use crate::record::{RecordPart, RecordReader, LAST_FRAGMENT};

    fn pattern(n: usize, seed: u8) -> Bytes {
        (0..n)
            .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
            .collect::<Vec<u8>>()
            .into()
    }

    fn concat(pieces: &[Bytes]) -> Bytes {
        pieces
            .iter()
            .flat_map(|p| p.iter().copied())
            .collect::<Vec<u8>>()
            .into()
    }

    /// A 3-piece record with a 1 MiB payload piece, and a 5-piece one sent in 7 KiB fragments.
    fn records() -> (Vec<Bytes>, Vec<Bytes>) {
        let big = vec![pattern(28, 1), pattern(1 << 20, 2), pattern(4, 3)];
        let multi = vec![
            pattern(100, 4),
            pattern(30_000, 5),
            pattern(3, 6),
            pattern(9000, 7),
            pattern(1, 8),
        ];
        (big, multi)
    }

    /// Writes the test records, then closes the writing side.
    async fn send_records<W: AsyncWrite + Unpin>(mut w: W) -> io::Result<()> {
        let (big, multi) = records();
        write_record(&mut w, &big).await?;
        write_record_fragmented(&mut w, &multi, 7 * 1024).await?;
        write_record(&mut w, &[]).await?;
        w.shutdown().await
    }

    async fn expect_records<R: AsyncRead + Send + Unpin + 'static>(r: R) {
        let (big, multi) = records();
        let mut framed = super::records(r, RecordReader::new(2 << 20, 2 << 20));
        let got = framed.next().await.unwrap().unwrap();
        assert_eq!(got.len(), 28 + (1 << 20) + 4);
        assert_eq!(got, concat(&big));
        let got = framed.next().await.unwrap().unwrap();
        assert_eq!(got, concat(&multi));
        let got = framed.next().await.unwrap().unwrap();
        assert!(got.is_empty());
        assert!(framed.next().await.is_none(), "clean end of stream");
    }

    #[tokio::test]
    async fn records_over_tcp() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let client = tokio::spawn(async move {
            let stream = TcpStream::connect(addr).await.unwrap();
            send_records(stream).await.unwrap();
        });
        let (server, _) = listener.accept().await.unwrap();
        expect_records(server).await;
        client.await.unwrap();
    }

    #[tokio::test]
    async fn records_over_duplex() {
        // A small pipe buffer forces many partial writes.
        let (a, b) = tokio::io::duplex(4096);
        let writer = tokio::spawn(send_records(a));
        expect_records(b).await;
        writer.await.unwrap().unwrap();
    }

    /// A writer that takes at most a few bytes per call, vectored or not.
    struct Dribble {
        out: Vec<u8>,
        calls: usize,
    }

    impl AsyncWrite for Dribble {
        fn poll_write(
            mut self: Pin<&mut Self>,
            _: &mut Context<'_>,
            buf: &[u8],
        ) -> Poll<io::Result<usize>> {
            self.calls += 1;
            let n = buf.len().min(3);
            self.out.extend_from_slice(&buf[..n]);
            Poll::Ready(Ok(n))
        }
        fn poll_write_vectored(
            mut self: Pin<&mut Self>,
            _: &mut Context<'_>,
            bufs: &[IoSlice<'_>],
        ) -> Poll<io::Result<usize>> {
            self.calls += 1;
            let mut left = 5;
            for b in bufs {
                let n = b.len().min(left);
                self.out.extend_from_slice(&b[..n]);
                left -= n;
                if left == 0 {
                    break;
                }
            }
            Poll::Ready(Ok(5 - left))
        }
        fn is_write_vectored(&self) -> bool {
            true
        }
        fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
            Poll::Ready(Ok(()))
        }
        fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
            Poll::Ready(Ok(()))
        }
    }

    #[tokio::test]
    async fn partial_vectored_writes_are_resumed() {
        let pieces = [pattern(7, 1), Bytes::new(), pattern(2, 2), pattern(11, 3)];
        let mut w = Dribble {
            out: Vec::new(),
            calls: 0,
        };
        write_record(&mut w, &pieces).await.unwrap();
        let mut want = record_header(20, true).to_vec();
        want.extend_from_slice(&concat(&pieces));
        assert_eq!(w.out, want);
        assert_eq!(w.calls, 24usize.div_ceil(5));
    }

    #[tokio::test]
    async fn a_writer_that_writes_nothing_is_an_error() {
        struct Zero;
        impl AsyncWrite for Zero {
            fn poll_write(
                self: Pin<&mut Self>,
                _: &mut Context<'_>,
                _: &[u8],
            ) -> Poll<io::Result<usize>> {
                Poll::Ready(Ok(0))
            }
            fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
                Poll::Ready(Ok(()))
            }
            fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
                Poll::Ready(Ok(()))
            }
        }
        let e = write_record(&mut Zero, &[pattern(4, 0)]).await.unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::WriteZero);
    }

    #[tokio::test]
    async fn truncated_record_at_eof_is_an_error() {
        for wire in [
            // Header promising 100 bytes, 10 sent.
            [&record_header(100, true)[..], &[0; 10]].concat(),
            // A complete non-last fragment, then nothing.
            [&record_header(2, false)[..], &[1, 2]].concat(),
            // Half a header.
            vec![0x80, 0],
        ] {
            let (mut a, b) = tokio::io::duplex(1024);
            a.write_all(&wire).await.unwrap();
            drop(a);
            let mut framed = super::records(b, RecordReader::default());
            let e = framed.next().await.unwrap().unwrap_err();
            assert_eq!(e.kind(), io::ErrorKind::UnexpectedEof);
            let inner = e
                .get_ref()
                .and_then(|e| e.downcast_ref::<RecordStreamError>());
            assert!(
                matches!(inner, Some(RecordStreamError::Truncated { .. })),
                "{e}"
            );
            assert!(framed.next().await.is_none(), "nothing after an error");
        }
    }

    #[tokio::test]
    async fn oversized_fragment_is_refused() {
        let (mut a, b) = tokio::io::duplex(1024);
        a.write_all(&(LAST_FRAGMENT | 0x10_0000).to_be_bytes())
            .await
            .unwrap();
        let mut framed = super::records(b, RecordReader::new(4096, 4096));
        let e = framed.next().await.unwrap().unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidData);
        assert!(
            matches!(
                e.get_ref().and_then(|e| e.downcast_ref::<RecordError>()),
                Some(RecordError::TooLarge {
                    part: RecordPart::Fragment,
                    size: 0x10_0000,
                    limit: 4096
                })
            ),
            "{e}"
        );
    }
}

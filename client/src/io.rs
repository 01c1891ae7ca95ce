//! READ, WRITE and COMMIT against one target: the MDS (I/O through the server) or one data
//! server's object. Many pieces go in few COMPOUNDs: PUTFH once, then as many READs or
//! WRITEs as fit the session's operation and size limits, so list I/O of small extents
//! costs one round trip per batch, not per extent. Batches to one target run in parallel up
//! to the target's in-flight bound.

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use futures::future::try_join_all;
use nfs_proto::nfs4::*;
use tokio::sync::Semaphore;

use crate::error::{Error, Result};
use crate::ops::putfh;
use crate::session::{nfs_err, Endpoint};

/// Where I/O goes: a server and the filehandle to use there.
#[derive(Clone, Debug)]
pub(crate) struct Target {
    pub ep: Arc<Endpoint>,
    pub fh: NfsFh4,
    /// Bounds the RPCs in flight to this server.
    pub slots: Arc<Semaphore>,
}

/// READ or WRITE operations per COMPOUND (besides SEQUENCE and PUTFH): servers commonly
/// allow 16 operations (`ca_maxoperations`).
const OPS_PER_COMPOUND: usize = 12;

/// Groups pieces into batches: at most [`OPS_PER_COMPOUND`] pieces and `max_bytes` bytes
/// each (a piece larger than `max_bytes` travels alone; callers split to the I/O size).
fn batches(sizes: &[u64], max_bytes: u64) -> Vec<std::ops::Range<usize>> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut bytes = 0u64;
    for (i, &s) in sizes.iter().enumerate() {
        if i > start && (i - start >= OPS_PER_COMPOUND || bytes + s > max_bytes) {
            out.push(start..i);
            start = i;
            bytes = 0;
        }
        bytes += s;
    }
    if start < sizes.len() {
        out.push(start..sizes.len());
    }
    out
}

/// Cuts `len` bytes at `offset` into pieces of at most `max` bytes: (offset, length, where
/// the piece starts in the range).
pub(crate) fn cut(offset: u64, len: u64, max: u64) -> impl Iterator<Item = (u64, u32, usize)> {
    let max = max.max(1);
    (0..len.div_ceil(max)).map(move |k| {
        let at = k * max;
        (offset + at, (len - at).min(max) as u32, at as usize)
    })
}

/// One range of `len` bytes from the pieces read for it, (where in the range, data). A range
/// that one full piece answers is that piece's bytes, a slice of the received record, not
/// copied; otherwise the pieces are copied into place and what no piece covers (a short
/// read: a hole, or a data server object that ends early) reads as zeros.
pub(crate) fn assemble(len: usize, parts: Vec<(usize, Bytes)>) -> Bytes {
    if let [(0, data)] = parts.as_slice() {
        if data.len() == len {
            return data.clone();
        }
    }
    let mut buf = BytesMut::zeroed(len);
    for (at, data) in parts {
        let n = data.len().min(len.saturating_sub(at));
        buf[at..at + n].copy_from_slice(&data[..n]);
    }
    buf.freeze()
}

/// What a READ piece got: its data (possibly short: at the end of the file, or of a data
/// server's object).
#[derive(Clone, Debug)]
pub(crate) struct ReadPiece {
    pub data: Bytes,
}

/// How long a batch keeps retrying pieces the server answered NFS4ERR_DELAY or
/// NFS4ERR_GRACE (an MDS waiting for a data server to come back, a grace period).
const DELAY_LIMIT: Duration = Duration::from_secs(180);

/// Sends one batch: PUTFH, then one operation per piece, re-sending the pieces from the first
/// one the server answered NFS4ERR_DELAY or NFS4ERR_GRACE (the ones before it are done and
/// are not sent again: WRITEs are not repeatable). `take` turns one result into the piece's
/// output, or the operation and status of a result that is not the piece's success.
async fn run_batch<P, T>(
    t: &Target,
    batch: &[P],
    op: impl Fn(&P) -> NfsArgop4,
    take: impl Fn(NfsResop4) -> std::result::Result<T, (NfsOpnum4, NfsStat4)>,
) -> Result<Vec<T>> {
    let _permit = t.slots.acquire().await.map_err(|_| closed(t))?;
    let started = Instant::now();
    let mut pause = Duration::from_millis(50);
    let mut out = Vec::with_capacity(batch.len());
    while out.len() < batch.len() {
        let rest = &batch[out.len()..];
        let mut ops = Vec::with_capacity(rest.len() + 1);
        ops.push(putfh(&t.fh));
        ops.extend(rest.iter().map(&op));
        let r = t.ep.compound(ops).await?;
        let before = out.len();
        let mut failed = None;
        for res in r.results.into_iter().skip(1) {
            match take(res) {
                Ok(v) => out.push(v),
                Err(e) => {
                    failed = Some(e);
                    break;
                }
            }
        }
        match failed {
            // Every piece answered: done. Fewer results than operations without an error
            // breaks the protocol.
            None if r.status == NfsStat4::NFS4_OK && out.len() - before == rest.len() => {}
            None if r.status == NfsStat4::NFS4_OK => return Err(short_reply(t)),
            None => return Err(nfs_err(NfsOpnum4::OP_PUTFH, r.status)),
            Some((op, status)) => {
                let retry = matches!(status, NfsStat4::NFS4ERR_DELAY | NfsStat4::NFS4ERR_GRACE);
                if !retry || started.elapsed() > DELAY_LIMIT {
                    return Err(nfs_err(op, status));
                }
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(Duration::from_secs(1));
            }
        }
    }
    Ok(out)
}

/// Reads `pieces` (offset, length) from `t` under `stateid`.
pub(crate) async fn read(
    t: &Target,
    stateid: Stateid4,
    pieces: &[(u64, u32)],
) -> Result<Vec<ReadPiece>> {
    let max = u64::from(t.ep.max_io());
    let sizes: Vec<u64> = pieces.iter().map(|p| u64::from(p.1)).collect();
    let jobs = batches(&sizes, max).into_iter().map(|range| {
        run_batch(
            t,
            &pieces[range],
            move |&(offset, count)| {
                NfsArgop4::Read(ReadArgs {
                    stateid,
                    offset,
                    count,
                })
            },
            |res| match res {
                NfsResop4::Read(ReadRes::Ok(ok)) => Ok(ReadPiece { data: ok.data }),
                other => Err((other.opnum(), other.status())),
            },
        )
    });
    Ok(try_join_all(jobs).await?.into_iter().flatten().collect())
}

/// Writes `pieces` (offset, data) to `t` under `stateid` with `stable`; one result per piece.
/// A short WRITE is finished with further WRITEs of the rest.
pub(crate) async fn write(
    t: &Target,
    stateid: Stateid4,
    pieces: &[(u64, Bytes)],
    stable: StableHow4,
) -> Result<Vec<WriteResOk>> {
    let max = u64::from(t.ep.max_io());
    let sizes: Vec<u64> = pieces.iter().map(|p| p.1.len() as u64).collect();
    let jobs = batches(&sizes, max).into_iter().map(|range| async move {
        let batch = &pieces[range];
        let results = run_batch(
            t,
            batch,
            move |(offset, data): &(u64, Bytes)| {
                NfsArgop4::Write(WriteArgs {
                    stateid,
                    offset: *offset,
                    stable,
                    data: data.clone(),
                })
            },
            |res| match res {
                NfsResop4::Write(WriteRes::Ok(ok)) => Ok(ok),
                other => Err((other.opnum(), other.status())),
            },
        )
        .await?;
        let mut out = Vec::with_capacity(batch.len());
        for (mut ok, (offset, data)) in results.into_iter().zip(batch) {
            let done = ok.count as usize;
            if done < data.len() {
                if done == 0 {
                    return Err(Error::Protocol {
                        addr: t.ep.addr(),
                        what: "WRITE wrote nothing".into(),
                    });
                }
                // The rest, then the weakest stability of the two.
                let rest = Box::pin(write(
                    t,
                    stateid,
                    &[(offset + done as u64, data.slice(done..))],
                    stable,
                ))
                .await?;
                ok.count = data.len() as u32;
                if rest.iter().any(|r| r.committed != StableHow4::FILE_SYNC4) {
                    ok.committed = StableHow4::UNSTABLE4;
                }
            }
            out.push(ok);
        }
        Ok::<_, Error>(out)
    });
    Ok(try_join_all(jobs).await?.into_iter().flatten().collect())
}

/// COMMITs everything written to `t`'s filehandle; returns the server's write verifier.
pub(crate) async fn commit(t: &Target) -> Result<Verifier4> {
    let _permit = t.slots.acquire().await.map_err(|_| closed(t))?;
    let results =
        t.ep.compound(vec![
            putfh(&t.fh),
            NfsArgop4::Commit(CommitArgs {
                offset: 0,
                count: 0,
            }),
        ])
        .await?
        .ok()?;
    match results.last() {
        Some(NfsResop4::Commit(CommitRes::Ok(ok))) => Ok(ok.writeverf),
        _ => Err(short_reply(t)),
    }
}

fn short_reply(t: &Target) -> Error {
    Error::Protocol {
        addr: t.ep.addr(),
        what: "a reply with fewer results than operations".into(),
    }
}

fn closed(t: &Target) -> Error {
    Error::Protocol {
        addr: t.ep.addr(),
        what: "the client is shutting down".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cutting_covers_the_range_in_pieces_of_at_most_max() {
        let pieces: Vec<_> = cut(100, 250, 100).collect();
        assert_eq!(pieces, vec![(100, 100, 0), (200, 100, 100), (300, 50, 200)]);
        assert_eq!(cut(5, 0, 100).count(), 0);
    }

    #[test]
    fn one_full_piece_is_kept_and_short_pieces_leave_zeros() {
        let one = Bytes::from(vec![7u8; 8]);
        let got = assemble(8, vec![(0, one.clone())]);
        assert_eq!(got.as_ptr(), one.as_ptr(), "a whole piece is not copied");
        let got = assemble(
            8,
            vec![
                (0, Bytes::from_static(b"ab")),
                (4, Bytes::from_static(b"cdef")),
            ],
        );
        assert_eq!(&got[..], b"ab\0\0cdef");
    }

    #[test]
    fn batches_respect_the_operation_and_byte_limits() {
        assert_eq!(batches(&[], 100), Vec::<std::ops::Range<usize>>::new());
        assert_eq!(batches(&[60, 60, 60], 100), vec![0..1, 1..2, 2..3]);
        assert_eq!(batches(&[10; 30], 1000), vec![0..12, 12..24, 24..30]);
        // A piece larger than the limit travels alone rather than never.
        assert_eq!(batches(&[500, 1, 1], 100), vec![0..1, 1..3]);
    }
}

//! Write-behind: a full write-back buffer is sent by a task of its own while the writer fills
//! the next one, so that producing bytes (a FUSE mount's kernel requests, a copy's reads) and
//! sending them overlap instead of taking turns. One send runs at a time per File; a writer
//! that fills the next buffer first waits for it.
//!
//! What stays true:
//! - **Order.** A write over a range the running send carries waits for it ([`File::
//!   data_clear_of`]): the older bytes land first, then the newer ones supersede them among
//!   the sent-unstable writes, as for any two writes.
//! - **Completeness.** Everything that reads `dirty` or `unstable` as the whole of what was
//!   written (fsync, a read over buffered bytes, revalidate, a sibling's flush, space
//!   operations) takes the data lock through [`File::data_settled`], after the send ended.
//! - **Errors.** A send that fails puts its bytes back in front of the buffer (none is
//!   lost) and keeps the error: the next fsync sends them again, and a writer that fills
//!   the buffer again gets the error rather than buffering without end. Bytes a revoked
//!   write delegation made are dropped, as a direct send drops them ([`Error::DataLost`]).

use tokio::sync::{watch, MutexGuard};

use super::*;

/// The send running in the background.
pub(super) struct Behind {
    /// The file ranges it carries.
    ranges: Vec<(u64, u64)>,
    /// Closed when it ends.
    done: watch::Receiver<()>,
}

/// Buffered writes taken out to be sent: the pieces (offset, bytes) and the delegation
/// revocation count they were made under.
pub(super) type Taken = (Vec<(u64, Bytes)>, Option<u64>);

/// Takes the buffered writes out to send them (joined and cut to the I/O size by the
/// caller's File).
pub(super) fn take_dirty(d: &mut Data) -> Option<Taken> {
    if d.dirty.is_empty() {
        d.dirty_epoch = None;
        return None;
    }
    let pieces = std::mem::take(&mut d.dirty);
    d.dirty_bytes = 0;
    Some((pieces, d.dirty_epoch.take()))
}

/// Records the outcome of sending `pieces`: sent ones wait for a COMMIT; on an error they go
/// back in front of the buffer (unless a revoked delegation lost them), to be sent again.
pub(super) fn sent(
    d: &mut Data,
    pieces: Vec<(u64, Bytes)>,
    epoch: Option<u64>,
    written: Result<Vec<Written>>,
) -> Result<()> {
    match written {
        Ok(w) => {
            d.unstable
                .extend(w.into_iter().filter(|w| w.stable == StableHow4::UNSTABLE4));
            Ok(())
        }
        Err(e @ Error::DataLost { .. }) => {
            tracing::error!("{e}");
            Err(e)
        }
        Err(e) => {
            // Keep the data for a later attempt rather than lose it; older than anything
            // buffered since, so in front.
            d.dirty_bytes += pieces.iter().map(|p| p.1.len()).sum::<usize>();
            let newer = std::mem::replace(&mut d.dirty, pieces);
            d.dirty.extend(newer);
            d.dirty_epoch = match (epoch, d.dirty_epoch) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
            Err(e)
        }
    }
}

impl File {
    /// The data lock once no background send is running: `dirty` and `unstable` then hold
    /// everything written and not known stable.
    pub(super) async fn data_settled(&self) -> MutexGuard<'_, Data> {
        loop {
            let d = self.open.data.lock().await;
            let Some(b) = &d.behind else {
                return d;
            };
            let mut done = b.done.clone();
            drop(d);
            let _ = done.changed().await;
        }
    }

    /// The data lock once nothing runs in the background for this File: no send, and no
    /// fetch (read-ahead), so that closing it leaves no request under its stateid.
    pub(super) async fn data_idle(&self) -> MutexGuard<'_, Data> {
        loop {
            let d = self.data_settled().await;
            let Some(rx) = d.fetching.values().next().cloned() else {
                return d;
            };
            drop(d);
            let mut rx = rx;
            let _ = rx.changed().await;
        }
    }

    /// The data lock once no background send carries bytes of `start..end`.
    pub(super) async fn data_clear_of(&self, start: u64, end: u64) -> MutexGuard<'_, Data> {
        loop {
            let d = self.open.data.lock().await;
            let Some(b) = &d.behind else {
                return d;
            };
            if !b.ranges.iter().any(|&(o, n)| o < end && o + n > start) {
                return d;
            }
            let mut done = b.done.clone();
            drop(d);
            let _ = done.changed().await;
        }
    }

    /// Starts sending the buffer in the background (no send runs: the caller checked).
    pub(super) fn send_behind(&self, d: &mut Data) {
        let Some((pieces, epoch)) = take_dirty(d) else {
            return;
        };
        let pieces = coalesce(pieces, self.io_size());
        let (tx, done) = watch::channel(());
        d.behind = Some(Behind {
            ranges: pieces.iter().map(|(o, b)| (*o, b.len() as u64)).collect(),
            done,
        });
        let file = File::new(self.client.clone(), self.open.clone());
        tokio::spawn(async move {
            let written = file.send_pieces(&pieces, epoch).await;
            let mut d = file.open.data.lock().await;
            if let Err(e) = sent(&mut d, pieces, epoch, written) {
                d.behind_error = Some(e);
            }
            let unstable: usize = d.unstable.iter().map(|w| w.data.len()).sum();
            if d.behind_error.is_none() && unstable >= file.client.inner.opts.commit_every {
                // Their ranges become the running send's: a write over them waits, so no
                // newer byte can be overtaken by an older one re-sent.
                let taken = std::mem::take(&mut d.unstable);
                if let Some(b) = d.behind.as_mut() {
                    b.ranges = taken
                        .iter()
                        .map(|w| (w.offset, w.data.len() as u64))
                        .collect();
                }
                drop(d);
                let left = file.commit_some(taken).await;
                d = file.open.data.lock().await;
                d.unstable.splice(0..0, left);
            }
            d.behind = None;
            drop(d);
            // Waiters wake when `tx` goes, after `behind` is cleared.
            drop(tx);
        });
    }

    /// COMMITs the servers `written` went to; what they made stable under the verifier it
    /// was written with is dropped (its bytes freed), the rest returned for the next fsync
    /// to commit, or write again when the verifier changed. So a long write holds about
    /// [`ClientOptions::commit_every`](crate::ClientOptions::commit_every) bytes not known
    /// stable, not all it wrote.
    async fn commit_some(&self, written: Vec<Written>) -> Vec<Written> {
        let mut groups: Vec<(Target, Vec<Written>)> = Vec::new();
        for w in written {
            match groups
                .iter_mut()
                .find(|(t, _)| t.ep.addr() == w.target.ep.addr() && t.fh == w.target.fh)
            {
                Some((_, v)) => v.push(w),
                None => groups.push((w.target.clone(), vec![w])),
            }
        }
        let results = futures::future::join_all(groups.iter().map(|(t, _)| io::commit(t))).await;
        let mut left = Vec::new();
        for ((_, ws), r) in groups.into_iter().zip(results) {
            match r {
                Ok(verf) => left.extend(ws.into_iter().filter(|w| w.verf != verf)),
                Err(e) => {
                    tracing::debug!(path = %self.open.path, "COMMIT in the background: {e}");
                    left.extend(ws);
                }
            }
        }
        left
    }
}

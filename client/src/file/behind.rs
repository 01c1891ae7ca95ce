//! Write-behind: each half of the write-back buffer, once full, is sent by a task of its own
//! while the writer fills the next, so that producing bytes (a FUSE mount's kernel requests,
//! a copy's reads) and sending them overlap instead of taking turns. Two sends run at a time
//! per File ([`MAX_SENDS`]), so that the servers still have work while one waits for its last
//! replies; a writer that fills the next part while both run waits. Their ranges never
//! overlap (a write over a running send's waits for it). Past half of `commit_every`
//! sent-unstable bytes, a send starts a COMMIT of them in a task of its own, which runs
//! beside the next sends (a data server's sync on a disk takes milliseconds); one COMMIT at
//! a time, so a send that reaches the threshold again first waits for the running one.
//!
//! What stays true:
//! - **Order.** A write over a range a running send or COMMIT carries waits for it
//!   ([`File::data_clear_of`]): the older bytes land first, then the newer ones supersede
//!   them among the sent-unstable writes, as for any two writes; a COMMIT that fails gives
//!   its writes back to be sent again, and none of them is older than a byte over its range.
//! - **Completeness.** Everything that reads `dirty` or `unstable` as the whole of what was
//!   written (fsync, a read over buffered bytes, revalidate, a sibling's flush, space
//!   operations) takes the data lock through [`File::data_settled`], after the sends and the
//!   COMMIT ended.
//! - **Errors.** A send that fails puts its bytes back in front of the buffer (none is
//!   lost) and keeps the error: the next fsync sends them again, and a writer that fills
//!   the buffer again gets the error rather than buffering without end. Bytes a revoked
//!   write delegation made are dropped, as a direct send drops them ([`Error::DataLost`]).
//! - **Bounded memory.** Not known stable: at most the running COMMIT's bytes (half of
//!   `commit_every` and one send) and as many again waiting for it, plus the buffer.

use tokio::sync::{watch, MutexGuard};

use super::*;

/// A send or a COMMIT running in the background.
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

/// Background sends per File at a time: while one waits for its last replies, the next
/// keeps the data servers busy (2 GiB to three data servers on tmpfs: about 2,900 MB/s with
/// one send of 32 MiB at a time, 3,060 with two of 16 MiB).
pub(super) const MAX_SENDS: usize = 2;

/// The bytes a background send takes out of the buffer: the write-back size over
/// [`MAX_SENDS`], so that the buffer and the sends hold at most 1.5 x the write-back size.
pub(super) fn send_size(write_back: usize) -> usize {
    (write_back / MAX_SENDS).max(1)
}

/// Sent-unstable bytes past which a send starts a COMMIT in the background: half of
/// [`ClientOptions::commit_every`](crate::ClientOptions::commit_every), so that with the
/// COMMIT running and the next send's bytes the total not known stable stays near it.
fn commit_threshold(file: &File) -> usize {
    (file.client.inner.opts.commit_every / 2).max(1)
}

impl File {
    /// The data lock once `busy` finds nothing to wait for: it names the background work
    /// (a send or a COMMIT) that must end first.
    async fn data_when(&self, busy: impl Fn(&Data) -> Option<&Behind>) -> MutexGuard<'_, Data> {
        loop {
            let d = self.open.data.lock().await;
            let Some(b) = busy(&d) else {
                return d;
            };
            let mut done = b.done.clone();
            drop(d);
            let _ = done.changed().await;
        }
    }

    /// The data lock once no background send or COMMIT is running: `dirty` and `unstable`
    /// then hold everything written and not known stable.
    pub(super) async fn data_settled(&self) -> MutexGuard<'_, Data> {
        self.data_when(|d| d.behind.first().or(d.committing.as_ref()))
            .await
    }

    /// The data lock once no background send is running (a COMMIT may be): the next send
    /// may start.
    pub(super) async fn data_unsent(&self) -> MutexGuard<'_, Data> {
        self.data_when(|d| d.behind.first().filter(|_| d.behind.len() >= MAX_SENDS))
            .await
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

    /// The data lock once no background send or COMMIT carries bytes of `start..end`.
    pub(super) async fn data_clear_of(&self, start: u64, end: u64) -> MutexGuard<'_, Data> {
        self.data_when(|d| {
            d.behind
                .iter()
                .chain(&d.committing)
                .find(|b| b.ranges.iter().any(|&(o, n)| o < end && o + n > start))
        })
        .await
    }

    /// Starts sending the buffer in the background (a send may start: the caller checked).
    pub(super) fn send_behind(&self, d: &mut Data) {
        let Some((pieces, epoch)) = take_dirty(d) else {
            return;
        };
        let pieces = coalesce(pieces, self.io_size());
        let (tx, done) = watch::channel(());
        let mine = done.clone();
        d.behind.push(Behind {
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
            // One COMMIT at a time: a send that reaches the threshold while one runs waits
            // for it (and looks again: the other send may have committed meanwhile), so the
            // bytes not known stable stay bounded.
            loop {
                let unstable: usize = d.unstable.iter().map(|w| w.data.len()).sum();
                if d.behind_error.is_some() || unstable < commit_threshold(&file) {
                    break;
                }
                let Some(c) = &d.committing else {
                    file.commit_behind(&mut d);
                    break;
                };
                let mut done = c.done.clone();
                drop(d);
                let _ = done.changed().await;
                d = file.open.data.lock().await;
            }
            d.behind.retain(|b| !b.done.same_channel(&mine));
            drop(d);
            // Waiters wake when `tx` goes, after `behind` is cleared.
            drop(tx);
        });
    }

    /// COMMITs every sent-unstable write in the background while the next sends go on (on a
    /// disk a data server's `fdatasync` of tens of MiB takes milliseconds, which a COMMIT
    /// made inside the send held the whole stream for). The writes' ranges are the COMMIT's
    /// until it ends: a write over them waits ([`File::data_clear_of`]), so a byte the
    /// COMMIT's failure would have sent again never lands over a newer one.
    fn commit_behind(&self, d: &mut Data) {
        let taken = std::mem::take(&mut d.unstable);
        let (tx, done) = watch::channel(());
        d.committing = Some(Behind {
            ranges: taken
                .iter()
                .map(|w| (w.offset, w.data.len() as u64))
                .collect(),
            done,
        });
        let file = File::new(self.client.clone(), self.open.clone());
        tokio::spawn(async move {
            let left = file.commit_some(taken).await;
            let mut d = file.open.data.lock().await;
            // Older than anything sent since: in front.
            d.unstable.splice(0..0, left);
            d.committing = None;
            drop(d);
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

//! Removing the objects of deleted striped files from the data servers, through the durable
//! queue in the metadata store (table `ds_removals`, [`crate::store::DsRemoval`]).
//!
//! ```text
//!  inode deleted (last name gone, not open) ─┐ one metadata transaction:
//!                                            │   inode, stripe set out; ds_removals[file] =
//!                                            │   the set's data servers
//!                                            └─> wake the task
//!  task (started with the MDS; its first pass drains what an earlier boot left):
//!    for each page of the queue: group files by data server
//!      ─> REMOVE [files] to each data server that is up (all at once)
//!      ─> acknowledged: that server comes off those records (a deferred commit: one lost
//!         in a crash is asked again); a record with no server left goes
//!    anything left for a server that is down or failed: pass again after a backoff
//!    (250 ms doubling to 5 s); nothing left: sleep until woken (or a minute), then 20 ms
//!    more so that a stream of deletes is removed in batches
//! ```
//!
//! A record may be a deferred commit (see [`crate::store::commit`]) when the task reads it,
//! but the unlink it follows is durable by then: records are queued only when an orphan is
//! deleted ([`crate::ops::dir::reap`]), which syncs the store first. A record lost in a crash
//! takes its orphan's deletion with it, and the next start deletes that orphan again.
//!
//! A crash at any point leaks nothing: until a data server's acknowledgement is durable,
//! the record still names it, and REMOVE of objects that are already gone succeeds, so the
//! next pass (or the next boot's first) simply asks again. The data servers' objects of a
//! file outlive its inode only while they are queued.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::task::JoinSet;
use tracing::{debug, warn};

use crate::server::{Namespace, Pnfs};
use crate::store::{Store, StoreError};

/// Queue records read per page of a pass.
const PAGE: usize = 4096;
/// First wait before a pass is repeated for a data server that is down or failed.
const BACKOFF_MIN: Duration = Duration::from_millis(250);
/// Longest wait between passes while something is left.
const BACKOFF_MAX: Duration = Duration::from_secs(5);
/// How long a woken task waits for more deletes before its pass.
const GATHER: Duration = Duration::from_millis(20);
/// How long an idle task sleeps without being woken before it looks again (a safety net: a
/// wake-up is sent after every delete that queues something).
const IDLE: Duration = Duration::from_secs(60);

/// The removal task's handle and counters, kept in the [`Pnfs`](crate::server::Pnfs) handle.
#[derive(Debug, Default)]
pub struct Removals {
    wake: Arc<Notify>,
    started: AtomicBool,
    /// Files whose objects every data server of theirs acknowledged removing.
    pub done: AtomicU64,
    /// REMOVE calls that failed, or that could not be made because the data server was down.
    pub failed_calls: AtomicU64,
}

impl Drop for Removals {
    /// Wakes the task so it sees the MDS is gone and ends.
    fn drop(&mut self) {
        self.wake.notify_one();
    }
}

impl Removals {
    /// Tells the task that something was queued.
    pub fn wake(&self) {
        self.wake.notify_one();
    }

    /// Starts the task (once; later calls do nothing) over the store's queue (`ns`) and the
    /// data servers (`pnfs`). Needs a tokio runtime. The task holds the two handles weakly
    /// and upgrades them only while it works, so dropping the server ends it.
    pub fn start(ns: &Arc<Namespace>, pnfs: &Arc<Pnfs>) {
        if pnfs.removals().started.swap(true, Ordering::SeqCst) {
            return;
        }
        let wake = pnfs.removals().wake.clone();
        tokio::spawn(run(Arc::downgrade(ns), Arc::downgrade(pnfs), wake));
    }
}

/// What one pass did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Pass {
    /// Files whose last data server acknowledged in this pass (their records went).
    pub done: usize,
    /// REMOVE calls that failed or could not be made (a data server down).
    pub failed: usize,
}

async fn run(ns: Weak<Namespace>, pnfs: Weak<Pnfs>, wake: Arc<Notify>) {
    let mut backoff = BACKOFF_MIN;
    // Acknowledgements need no fsync of their own: one lost in a crash only makes the next
    // boot ask that data server again, and REMOVE of objects already gone succeeds. They
    // become durable with the next durable commit.
    let _deferral = ns.upgrade().and_then(|n| n.store().defer_here());
    loop {
        let (Some(n), Some(p)) = (ns.upgrade(), pnfs.upgrade()) else {
            return;
        };
        let wait = match pass(n.store(), &p).await {
            Ok(p) if p.failed == 0 => {
                backoff = BACKOFF_MIN;
                None
            }
            Ok(_) => Some(backoff),
            Err(e) => {
                warn!("data server removal queue: {e}");
                Some(backoff)
            }
        };
        drop((n, p));
        match wait {
            Some(d) => {
                tokio::time::sleep(d).await;
                backoff = (backoff * 2).min(BACKOFF_MAX);
            }
            None => {
                if tokio::time::timeout(IDLE, wake.notified()).await.is_ok() {
                    // Let the deletes that follow this one queue up too: a pass costs each
                    // data server one REMOVE and the store one acknowledgement however many
                    // files it carries (a file removed per wake-up cost both per file).
                    tokio::time::sleep(GATHER).await;
                }
            }
        }
    }
}

/// One pass over the whole queue: every data server that is up gets one REMOVE per page with
/// every file queued for it (the control client splits longer lists), all data servers at
/// once; each acknowledgement is recorded durably. Public for tests and operators' tools;
/// the task calls it.
pub async fn pass(store: &Store, pnfs: &Pnfs) -> Result<Pass, StoreError> {
    let mut out = Pass::default();
    let mut from = 0u64;
    loop {
        let page = store.ds_removals(from, PAGE)?;
        let Some(last) = page.last().map(|r| r.file) else {
            break;
        };
        let mut by_ds: BTreeMap<u16, Vec<u64>> = BTreeMap::new();
        for r in &page {
            for &ds in &r.servers {
                by_ds.entry(ds).or_default().push(r.file);
            }
        }
        let mut calls = JoinSet::new();
        for (ds, files) in by_ds {
            let Some(ctl) = pnfs.devices().control(ds) else {
                debug!(
                    ds,
                    files = files.len(),
                    "removal waits for a data server that is down"
                );
                out.failed += 1;
                continue;
            };
            calls.spawn(async move {
                let r = ctl.remove(&files).await;
                (ds, files, r)
            });
        }
        while let Some(joined) = calls.join_next().await {
            let Ok((ds, files, r)) = joined else {
                out.failed += 1;
                continue;
            };
            match r {
                Ok(objects) => {
                    let n = files.len();
                    let done = store.ds_removals_acknowledged(ds, files).await?;
                    debug!(ds, files = n, objects, done, "data server removed objects");
                    out.done += done;
                }
                Err(e) => {
                    warn!(ds, files = files.len(), "REMOVE on a data server: {e}");
                    out.failed += 1;
                }
            }
        }
        match last.checked_add(1) {
            Some(next) if page.len() == PAGE => from = next,
            _ => break,
        }
    }
    pnfs.removals()
        .done
        .fetch_add(out.done as u64, Ordering::Relaxed);
    pnfs.removals()
        .failed_calls
        .fetch_add(out.failed as u64, Ordering::Relaxed);
    if out.done > 0 {
        debug!(
            files = out.done,
            "objects of deleted files removed from the data servers"
        );
    }
    Ok(out)
}

//! Mirrored files (flex files layouts with `mirrors` > 1, RFC 8435 section 5.1): which copies
//! are stale, the guard that keeps I/O through the MDS and new layouts off a file while it
//! is re-silvered, and the re-silver task.
//!
//! ```text
//!  a copy misses a change (its data server down or failing a WRITE, COMMIT, truncate or
//!  space call through the MDS; or down or reported failing when an RW layout is granted,
//!  which then leaves it out)
//!    ─> Store::mark_stale, durable before the reply ─> memory (this module)
//!    from then on: reads and layouts name the other copies only; writes skip it
//!
//!  re-silver task (woken by a mark, a data server's registration, or every RESCAN):
//!    for each stale copy whose data server is up and not reported failing:
//!      file gone ─> drop the mark
//!      RW layouts of the file out ─> recall them (CB_LAYOUTRECALL), try again later
//!      begin: the file's guard refuses I/O through the MDS (NFS4ERR_DELAY) and LAYOUTGET
//!             (NFS4ERR_LAYOUTTRYLATER) and waits for those in flight
//!      copy: a good copy's object read in MAX_CTL_IO pieces, written to the stale one
//!            (all-zero pieces skipped: holes stay holes), COMMIT, TRUNCATE to the source's
//!            size ─> Store::clear_stale (durable) ─> memory ─> end
//! ```
//!
//! Why the guard and not a lock around each write: a re-silver copies a whole object, and
//! every write that lands on the good copy meanwhile must also land on the copy being
//! rebuilt. Refusing the file's I/O for the copy's duration (clients retry NFS4ERR_DELAY and
//! fall back to the MDS on LAYOUTTRYLATER) is what knfsd-backed HA setups do during a
//! resync, and keeps the data path free of per-file locks when nothing is stale.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use bytes::Bytes;
use nfs_proto::control::MAX_CTL_IO;
use nfs_proto::nfs4::NfsStat4;
use nfs_server::Core;
use pfs_core::{ObjectId, Stability};
use tokio::sync::Notify;
use tracing::{info, warn};

use crate::server::{Namespace, Pnfs, StateTables};
use crate::store::{FhKind, Store, StoreError};

/// How often the task looks again while stale copies are left that it could not re-silver
/// (a data server still down, layouts still out).
const RESCAN: Duration = Duration::from_secs(2);
/// How long a re-silver waits for the I/O through the MDS in flight on its file.
const DRAIN: Duration = Duration::from_secs(30);

/// The stale copies of one file.
#[derive(Clone, Debug, Default)]
struct StaleFile {
    export: u16,
    positions: BTreeSet<u32>,
}

/// The per-file guard state: I/O in flight through the MDS, and whether a re-silver holds
/// the file.
#[derive(Debug, Default)]
struct Busy {
    inflight: u32,
    resilvering: bool,
}

/// The mirrored files' state and counters, kept in the [`Pnfs`] handle.
#[derive(Debug, Default)]
pub struct Mirrors {
    stale: Mutex<BTreeMap<u64, StaleFile>>,
    busy: Mutex<HashMap<u64, Busy>>,
    /// Files whose RW layouts a re-silver recalled (logged once).
    recalled: Mutex<BTreeSet<u64>>,
    wake: Arc<Notify>,
    started: AtomicBool,
    /// Copies marked stale (this boot).
    pub marked: AtomicU64,
    /// Copies re-silvered (this boot).
    pub resilvered: AtomicU64,
    /// Bytes copied by re-silvering (this boot).
    pub resilver_bytes: AtomicU64,
    /// Re-silvers that failed (a data server failed during the copy); retried.
    pub resilver_failures: AtomicU64,
    /// Data servers that registered with another object store than on record (this boot).
    pub replaced_stores: AtomicU64,
    /// Bytes of the copy being re-silvered now, and its size (progress).
    pub current: Mutex<Option<(u64, u32, u64, u64)>>,
}

impl Drop for Mirrors {
    /// Wakes the task so it sees the MDS is gone and ends.
    fn drop(&mut self) {
        self.wake.notify_one();
    }
}

/// I/O through the MDS on a mirrored file, in flight: a re-silver of the file waits for it.
#[must_use]
pub struct IoGuard<'a> {
    mirrors: &'a Mirrors,
    fileid: u64,
}

impl Drop for IoGuard<'_> {
    fn drop(&mut self) {
        let mut busy = self.mirrors.busy.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(b) = busy.get_mut(&self.fileid) {
            b.inflight = b.inflight.saturating_sub(1);
            if b.inflight == 0 && !b.resilvering {
                busy.remove(&self.fileid);
            }
        }
    }
}

impl Mirrors {
    /// The state of the stale copies on record (`Store::stale_copies`).
    pub fn load(stale: Vec<(u64, u32, u16)>) -> Self {
        let m = Self::default();
        {
            let mut map = m.stale.lock().unwrap_or_else(|e| e.into_inner());
            for (fileid, position, export) in stale {
                let f = map.entry(fileid).or_default();
                f.export = export;
                f.positions.insert(position);
            }
        }
        m
    }

    /// The stale copies (window positions) of `fileid`.
    pub fn stale(&self, fileid: u64) -> Vec<u32> {
        let map = self.stale.lock().unwrap_or_else(|e| e.into_inner());
        map.get(&fileid)
            .map(|f| f.positions.iter().copied().collect())
            .unwrap_or_default()
    }

    /// How many copies are stale.
    pub fn stale_count(&self) -> usize {
        let map = self.stale.lock().unwrap_or_else(|e| e.into_inner());
        map.values().map(|f| f.positions.len()).sum()
    }

    /// Marks copies `positions` of `fileid` (of `export`) stale, durably, before the caller
    /// acknowledges anything that left them behind; wakes the re-silver task.
    pub async fn mark(
        &self,
        store: &Store,
        fileid: u64,
        export: u16,
        positions: Vec<u32>,
    ) -> Result<(), NfsStat4> {
        let fresh: Vec<u32> = {
            let map = self.stale.lock().unwrap_or_else(|e| e.into_inner());
            let known = map.get(&fileid);
            positions
                .into_iter()
                .filter(|p| !known.is_some_and(|f| f.positions.contains(p)))
                .collect()
        };
        if fresh.is_empty() {
            return Ok(());
        }
        warn!(
            fileid,
            copies = ?fresh,
            "mirror copies left behind (data server down or failing): marked stale until \
             re-silvered"
        );
        store.mark_stale(fileid, export, fresh.clone()).await?;
        let marks: Vec<_> = fresh.into_iter().map(|p| (fileid, p, export)).collect();
        self.marked_elsewhere(&marks);
        Ok(())
    }

    /// Notes copies marked stale in the store (by [`Mirrors::mark`], or by the store itself
    /// when a data server's store was replaced, `crate::pnfs::replaced`): (file id, window
    /// position, export); counts the new ones and wakes the task.
    pub fn marked_elsewhere(&self, stale: &[(u64, u32, u16)]) {
        let added = {
            let mut map = self.stale.lock().unwrap_or_else(|e| e.into_inner());
            // (Concurrent writes may have marked the same copy meanwhile: counted once.)
            stale
                .iter()
                .filter(|&&(fileid, position, export)| {
                    let f = map.entry(fileid).or_default();
                    f.export = export;
                    f.positions.insert(position)
                })
                .count()
        };
        self.marked.fetch_add(added as u64, Ordering::Relaxed);
        self.wake.notify_one();
    }

    fn cleared(&self, fileid: u64, position: u32) {
        let mut map = self.stale.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(f) = map.get_mut(&fileid) {
            f.positions.remove(&position);
            if f.positions.is_empty() {
                map.remove(&fileid);
            }
        }
    }

    /// Admits I/O through the MDS (or a LAYOUTGET) on mirrored file `fileid`: `None` while
    /// the file is being re-silvered (the caller answers NFS4ERR_DELAY or
    /// NFS4ERR_LAYOUTTRYLATER).
    pub fn io(&self, fileid: u64) -> Option<IoGuard<'_>> {
        let mut busy = self.busy.lock().unwrap_or_else(|e| e.into_inner());
        let b = busy.entry(fileid).or_default();
        if b.resilvering {
            return None;
        }
        b.inflight += 1;
        Some(IoGuard {
            mirrors: self,
            fileid,
        })
    }

    /// [`Mirrors::io`] for a change through the MDS to `fileid` when it is mirrored (`None`
    /// needed otherwise): NFS4ERR_DELAY while the file is being re-silvered.
    pub fn admit(&self, fileid: u64, mirrored: bool) -> Result<Option<IoGuard<'_>>, NfsStat4> {
        if !mirrored {
            return Ok(None);
        }
        self.io(fileid).map(Some).ok_or(NfsStat4::NFS4ERR_DELAY)
    }

    /// Whether a re-silver holds `fileid`.
    pub fn resilvering(&self, fileid: u64) -> bool {
        let busy = self.busy.lock().unwrap_or_else(|e| e.into_inner());
        busy.get(&fileid).is_some_and(|b| b.resilvering)
    }

    /// Takes `fileid` for a re-silver and waits (up to [`DRAIN`]) for the I/O in flight;
    /// false if that did not end in time (the file is released again).
    async fn begin(&self, fileid: u64) -> bool {
        {
            let mut busy = self.busy.lock().unwrap_or_else(|e| e.into_inner());
            busy.entry(fileid).or_default().resilvering = true;
        }
        let deadline = tokio::time::Instant::now() + DRAIN;
        loop {
            let idle = {
                let busy = self.busy.lock().unwrap_or_else(|e| e.into_inner());
                busy.get(&fileid).is_none_or(|b| b.inflight == 0)
            };
            if idle {
                return true;
            }
            if tokio::time::Instant::now() >= deadline {
                self.end(fileid);
                return false;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    fn end(&self, fileid: u64) {
        let mut busy = self.busy.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(b) = busy.get_mut(&fileid) {
            b.resilvering = false;
            if b.inflight == 0 {
                busy.remove(&fileid);
            }
        }
    }

    /// Tells the task to look (a data server registered, a copy was marked).
    pub fn wake(&self) {
        self.wake.notify_one();
    }

    /// Starts the re-silver task (once) over the server's parts, held weakly.
    pub fn start(
        ns: &Arc<Namespace>,
        tables: &Arc<StateTables>,
        core: &Arc<Core>,
        pnfs: &Arc<Pnfs>,
    ) {
        if pnfs.mirrors().started.swap(true, Ordering::SeqCst) {
            return;
        }
        let wake = pnfs.mirrors().wake.clone();
        let parts = Parts {
            ns: Arc::downgrade(ns),
            tables: Arc::downgrade(tables),
            core: Arc::downgrade(core),
            pnfs: Arc::downgrade(pnfs),
        };
        tokio::spawn(run(parts, wake));
    }
}

struct Parts {
    ns: Weak<Namespace>,
    tables: Weak<StateTables>,
    core: Weak<Core>,
    pnfs: Weak<Pnfs>,
}

async fn run(parts: Parts, wake: Arc<Notify>) {
    loop {
        let (Some(ns), Some(tables), Some(core), Some(pnfs)) = (
            parts.ns.upgrade(),
            parts.tables.upgrade(),
            parts.core.upgrade(),
            parts.pnfs.upgrade(),
        ) else {
            return;
        };
        let left = pass(&ns, &tables, &core, &pnfs).await;
        drop((ns, tables, core, pnfs));
        if left {
            let _ = tokio::time::timeout(RESCAN, wake.notified()).await;
        } else {
            wake.notified().await;
        }
    }
}

/// One look at every stale copy; true if some are left.
async fn pass(
    ns: &Namespace,
    tables: &Arc<StateTables>,
    core: &Arc<Core>,
    pnfs: &Arc<Pnfs>,
) -> bool {
    let todo: Vec<(u64, u16, Vec<u32>)> = {
        let map = pnfs
            .mirrors()
            .stale
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        map.iter()
            .map(|(&f, s)| (f, s.export, s.positions.iter().copied().collect()))
            .collect()
    };
    for (fileid, export, positions) in todo {
        match resilver_file(ns.store(), tables, core, pnfs, fileid, export, &positions).await {
            Ok(()) => {}
            Err(e) => {
                pnfs.mirrors()
                    .resilver_failures
                    .fetch_add(1, Ordering::Relaxed);
                warn!(fileid, "re-silvering: {e} (tried again later)");
            }
        }
    }
    pnfs.mirrors().stale_count() > 0
}

/// Why a re-silver stopped.
#[derive(Debug, thiserror::Error)]
pub enum ResilverError {
    /// The store failed.
    #[error("store: {0}")]
    Store(#[from] StoreError),
    /// A data server failed during the copy.
    #[error("data server {0}: {1}")]
    Call(u16, crate::pnfs::dsctl::CtlError),
    /// The stripe set's ring is not known.
    #[error("the stripe set names no known data servers")]
    NoRing,
}

/// Re-silvers the stale copies of `fileid` that can be now (their data server up and not
/// reported failing, a good copy of the same stripe up); the others wait for a later pass.
async fn resilver_file(
    store: &Store,
    tables: &Arc<StateTables>,
    core: &Arc<Core>,
    pnfs: &Arc<Pnfs>,
    fileid: u64,
    export: u16,
    positions: &[u32],
) -> Result<(), ResilverError> {
    let mirrors = pnfs.mirrors();
    let (inode, set) = match (store.getattr(fileid), store.stripes(fileid)) {
        (Ok(inode), Ok(Some(set))) => (inode, set),
        (Err(StoreError::Stale(_)), _) | (Ok(_), Ok(None)) | (_, Err(StoreError::Stale(_))) => {
            // The file is gone (its objects with it): the marks go too.
            for &p in positions {
                store.clear_stale(fileid, p).await?;
                mirrors.cleared(fileid, p);
            }
            return Ok(());
        }
        (Err(e), _) | (_, Err(e)) => return Err(e.into()),
    };
    let servers = pnfs
        .stripe_servers(&set)
        .map_err(|_| ResilverError::NoRing)?;
    let usable = |pos: u32| {
        servers
            .get(pos as usize)
            .is_some_and(|&ds| pnfs.devices().is_up(ds) && !pnfs.reports().failing(u32::from(ds)))
    };
    // Pairs (stale copy, good source of the same stripe) ready now.
    let ready: Vec<(u32, u32)> = positions
        .iter()
        .filter(|&&p| usable(p))
        .filter_map(|&p| {
            let stripe = set.stripe_of(p);
            set.copies(stripe)
                .find(|&q| q != p && !positions.contains(&q) && usable(q))
                .map(|q| (p, q))
        })
        .collect();
    if ready.is_empty() {
        return Ok(());
    }
    // Layouts granted while the copy was stale leave it out: writes through them would miss
    // it during the copy. Recall them and come back once they are returned.
    if tables.layouts_recovered().has_write_layouts(fileid) {
        let fh = store
            .fh_codec()
            .encode_kind(FhKind::Object, export, fileid, inode.generation);
        let first = mirrors
            .recalled
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(fileid);
        if first {
            info!(
                fileid,
                "re-silver waits for the file's RW layouts: recalling them"
            );
        }
        crate::pnfs::fencing::recall_file(tables, core, pnfs, fileid, fh, None);
        return Ok(());
    }
    if !mirrors.begin(fileid).await {
        return Ok(());
    }
    // LAYOUTGETs in flight when the guard closed were admitted before it: look again.
    if tables.layouts_recovered().has_write_layouts(fileid) {
        mirrors.end(fileid);
        return Ok(());
    }
    let mut result = Ok(());
    for (stale, source) in ready {
        let r = copy_object(pnfs, &servers, fileid, source, stale, inode.change).await;
        match r {
            Ok(bytes) => {
                if let Err(e) = store.clear_stale(fileid, stale).await {
                    result = Err(e.into());
                    break;
                }
                // Counted before the mark goes from memory: whoever sees no stale copy
                // left sees the re-silver counted.
                mirrors.resilvered.fetch_add(1, Ordering::Relaxed);
                mirrors.cleared(fileid, stale);
                info!(
                    fileid,
                    copy = stale,
                    from = source,
                    bytes,
                    "mirror copy re-silvered"
                );
            }
            Err(e) => {
                result = Err(e);
                break;
            }
        }
    }
    *mirrors.current.lock().unwrap_or_else(|e| e.into_inner()) = None;
    mirrors
        .recalled
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .remove(&fileid);
    mirrors.end(fileid);
    result
}

/// Copies object `source` of `fileid` over object `stale` (window positions of `set`):
/// returns the bytes written.
async fn copy_object(
    pnfs: &Pnfs,
    servers: &[u16],
    fileid: u64,
    source: u32,
    stale: u32,
    version: u64,
) -> Result<u64, ResilverError> {
    let (sds, dds) = (servers[source as usize], servers[stale as usize]);
    let down = |ds: u16| ResilverError::Call(ds, crate::pnfs::dsctl::CtlError::Closed);
    let src = pnfs.devices().control(sds).ok_or_else(|| down(sds))?;
    let dst = pnfs.devices().control(dds).ok_or_else(|| down(dds))?;
    let (sobj, dobj) = (
        ObjectId {
            file: fileid,
            stripe: source,
        },
        ObjectId {
            file: fileid,
            stripe: stale,
        },
    );
    let size = src
        .object_space(&[sobj])
        .await
        .map_err(|e| ResilverError::Call(sds, e))?
        .first()
        .map_or(0, |s| s.size);
    let mirrors = pnfs.mirrors();
    *mirrors.current.lock().unwrap_or_else(|e| e.into_inner()) = Some((fileid, stale, 0, size));
    // From empty, so that bytes past the source's end, and holes, do not survive.
    dst.truncate(fileid, &[(stale, 0)], version)
        .await
        .map_err(|e| ResilverError::Call(dds, e))?;
    let mut at = 0u64;
    let mut written = 0u64;
    while at < size {
        let n = (size - at).min(u64::from(MAX_CTL_IO)) as u32;
        let data = src
            .read(sobj, at, n)
            .await
            .map_err(|e| ResilverError::Call(sds, e))?
            .data;
        if data.is_empty() {
            break;
        }
        let len = data.len() as u64;
        if data.iter().any(|&b| b != 0) {
            let pieces: [Bytes; 1] = [data];
            let w = dst
                .write(dobj, at, Stability::Unstable, &pieces)
                .await
                .map_err(|e| ResilverError::Call(dds, e))?;
            if u64::from(w.count) != len {
                return Err(ResilverError::Call(
                    dds,
                    crate::pnfs::dsctl::CtlError::Closed,
                ));
            }
            written += len;
        }
        at += len;
        mirrors.resilver_bytes.fetch_add(len, Ordering::Relaxed);
        *mirrors.current.lock().unwrap_or_else(|e| e.into_inner()) =
            Some((fileid, stale, at, size));
    }
    dst.truncate(fileid, &[(stale, size)], version)
        .await
        .map_err(|e| ResilverError::Call(dds, e))?;
    let v = dst
        .commit(dobj, 0, 0)
        .await
        .map_err(|e| ResilverError::Call(dds, e))?;
    pnfs.devices().note_write_verifier(dds, v);
    Ok(written)
}

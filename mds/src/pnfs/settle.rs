//! Settling the sizes of files written through RW layouts with their data servers, so that a
//! write the data servers acknowledged keeps its size even when no LAYOUTCOMMIT reached the
//! MDS (a kill -9 of the MDS between the two; a client that returned its layout without
//! one). The marks live in the metadata store ([`crate::store`]'s `layout_writes`); this
//! module keeps their copy in memory and the task that settles them.
//!
//! ```text
//!  LAYOUTGET RW ─> grant (layout table) ─> granted(file): count one more grant
//!              ─> mark durably (no sync if marked) ─> reply
//!  LAYOUTCOMMIT by a holder ─> its writes so far are in the recorded size (reported)
//!  GETATTR size of a file with a holder that has not reported since its grant (or written
//!  by an earlier boot and not settled): max(recorded, data servers'); otherwise recorded
//!  task, every second of the server's clock (and at start, for what an earlier boot left
//!  marked), a round of the sweep over the marked files, SWEEP of them at a time (the next
//!  at once while it finds work), and an early round 10 ms after a CLOSE or LAYOUTRETURN
//!  took an unreported file's last RW layout:
//!    for each file of the round with no RW layout out:
//!      grants, change attribute now ─> size from its data servers (all up, else later)
//!      ─> one transaction: still no RW layout, no grant since, no change since?
//!           size = max(recorded, data servers'), mark gone ─> forget it here
//!         otherwise: leave it for the next round
//! ```
//!
//! The grant count closes the one window the change attribute cannot: a layout granted,
//! written through and returned without a LAYOUTCOMMIT while the data servers were being
//! asked (their answer would predate those writes).

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::Duration;

use nfs_server::clock::SharedClock;
use tokio::sync::Notify;
use tracing::{debug, info, warn};

use crate::pnfs::dsobjects;
use crate::server::{Namespace, Pnfs, StateTables};
use crate::store::{nfstime, Settled, Store, StoreError, StripeSet};

/// How often the task looks for marked files to settle.
const ROUND: Duration = Duration::from_secs(1);

/// How long an early round waits after the first layout it is for went, gathering more
/// (at most one early round per this time, however many files close).
const GATHER: Duration = Duration::from_millis(10);

/// Files settled together: their sizes asked of each data server in one call, their store
/// jobs committed as one batch.
const BATCH: usize = 512;

/// Marked files a round of the sweep takes at most (see [`run`]). Most marked files are
/// usually held open with an RW layout (under a write delegation) and cannot be settled yet;
/// a round over all of them every second, with the deadline checks' scans of every layout
/// and delegation (now of the recalled ones only), cost an idle server holding 100,000 such
/// files 6 % of a CPU; 1.4 % now (0.6 % with none held). A pass over all marked
/// files now takes a second per this many of them, the work of a round is bounded, and a
/// file whose last RW layout a CLOSE or LAYOUTRETURN took is settled at once anyway (an
/// early round).
const SWEEP: usize = 8192;

#[derive(Debug, Default)]
struct Marks {
    /// Files marked in the store (loaded at start, then kept in step).
    marked: BTreeSet<u64>,
    /// RW layouts granted per marked file since this boot started.
    grants: HashMap<u64, u64>,
    /// Per marked file, the clients granted an RW layout of it that have not LAYOUTCOMMITted
    /// under it since (client 0: writes of an earlier boot): only for these may the data
    /// servers hold bytes past the recorded size that a client expects GETATTR to show.
    unreported: HashMap<u64, HashSet<u64>>,
    /// (file, client) pairs where the client, holding an RW layout, set the file's mtime
    /// itself ([`Settler::times_set`]), until its next LAYOUTCOMMIT.
    times_set: HashSet<(u64, u64)>,
    /// Unreported files whose RW layouts a CLOSE or LAYOUTRETURN may have taken the last of
    /// ([`Settler::layouts_gone`]), for an early round.
    ready: BTreeSet<u64>,
    /// An early round is due (the task was woken for it and has not taken `ready` yet).
    early: bool,
    /// Where the sweep over `marked` goes on: the next round takes the marked files from
    /// this file id on ([`Settler::next_sweep`]).
    sweep_from: u64,
}

/// The client that stands for an earlier boot's writers in [`Marks::unreported`] (no real
/// client id is 0: they carry the boot epoch in their high bits).
const EARLIER_BOOT: u64 = 0;

/// The marks in memory and the settling task's counters, kept in the [`Pnfs`](crate::server::Pnfs) handle.
#[derive(Debug, Default)]
pub struct Settler {
    marks: Mutex<Marks>,
    started: AtomicBool,
    /// Files settled (mark removed).
    pub settled: AtomicU64,
    /// Files whose recorded size grew when settled: bytes written through a layout that no
    /// LAYOUTCOMMIT reported.
    pub grown: AtomicU64,
    /// Rounds of the task done: a test on a manual clock moves the clock on and waits for
    /// this to move, to know that a round went by.
    pub rounds: AtomicU64,
    /// Wakes the task for an early round.
    wake: Arc<Notify>,
}

impl Settler {
    /// The marks an earlier boot left in the store.
    pub fn load(marked: Vec<u64>) -> Self {
        let unreported = marked
            .iter()
            .map(|&f| (f, HashSet::from([EARLIER_BOOT])))
            .collect();
        Self {
            marks: Mutex::new(Marks {
                marked: marked.into_iter().collect(),
                grants: HashMap::new(),
                unreported,
                ..Marks::default()
            }),
            ..Self::default()
        }
    }

    fn marks(&self) -> std::sync::MutexGuard<'_, Marks> {
        self.marks.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// An RW layout of `fileid` was granted to `clientid`; the caller marks it durably next
    /// ([`Settler::mark`]) before replying.
    pub fn granted(&self, fileid: u64, clientid: u64) {
        let mut m = self.marks();
        *m.grants.entry(fileid).or_default() += 1;
        m.unreported.entry(fileid).or_default().insert(clientid);
    }

    /// `clientid` LAYOUTCOMMITted `fileid` (the store has the size it reported): its writes
    /// so far are in the recorded size. Writes it makes after this are not, until its next
    /// LAYOUTCOMMIT (RFC 8881 section 12.5.4: the MDS need not know of them before).
    pub fn reported(&self, fileid: u64, clientid: u64) {
        let mut m = self.marks();
        if let Some(c) = m.unreported.get_mut(&fileid) {
            c.remove(&clientid);
            if c.is_empty() {
                m.unreported.remove(&fileid);
            }
        }
    }

    /// `clientid`, holding an RW layout of `fileid`, set its mtime to a time of its own
    /// (SETATTR). Writes it made through the layout came before: the Linux client flushes
    /// its writes before a SETATTR but sends their LAYOUTCOMMIT later (when the inode is
    /// written back, at `sync`, without a time of its own). That LAYOUTCOMMIT must not move
    /// mtime to "now" over the time the client set (`cp -p`, `rsync -t`, `touch -d`):
    /// [`Settler::take_times_set`] says so.
    pub fn times_set(&self, fileid: u64, clientid: u64) {
        self.marks().times_set.insert((fileid, clientid));
    }

    /// Whether `clientid` set `fileid`'s mtime since its last LAYOUTCOMMIT
    /// ([`Settler::times_set`]); forgets it (the next LAYOUTCOMMIT's writes are its own).
    pub fn take_times_set(&self, fileid: u64, clientid: u64) -> bool {
        self.marks().times_set.remove(&(fileid, clientid))
    }

    /// Whether GETATTR must ask the data servers for `fileid`'s size: some client was granted
    /// an RW layout of it and has not LAYOUTCOMMITted since (or an earlier boot's writes are
    /// not settled yet). A file whose writers all reported costs no data-server call.
    pub fn has_unreported(&self, fileid: u64) -> bool {
        self.marks().unreported.contains_key(&fileid)
    }

    /// Whether a client other than `asker` has writes to `fileid` it has not reported (or an
    /// earlier boot has): what the attributes `asker` is shown must find on the data
    /// servers. Its own unreported writes are `asker`'s to report before it asks (the Linux
    /// client LAYOUTCOMMITs before it revalidates a file's attributes: "attributes aren't
    /// updated until we layoutcommit"; ours counts them in itself).
    pub fn has_unreported_by_others(&self, fileid: u64, asker: u64) -> bool {
        self.marks()
            .unreported
            .get(&fileid)
            .is_some_and(|c| c.iter().any(|&c| c != asker))
    }

    /// Marks `fileid` in the store (durably; no sync if it is marked already) and here.
    pub async fn mark(&self, store: &Store, fileid: u64) -> Result<(), StoreError> {
        store.mark_layout_writes(fileid).await?;
        self.marked(fileid);
        Ok(())
    }

    /// Notes here that `fileid` is marked in the store: the caller marked it there with
    /// another change (a new file's create, `ops::open`) that is durable before its reply.
    pub fn marked(&self, fileid: u64) {
        self.marks().marked.insert(fileid);
    }

    /// Whether `fileid` may have bytes on its data servers past its recorded size.
    pub fn is_marked(&self, fileid: u64) -> bool {
        self.marks().marked.contains(&fileid)
    }

    /// How many files are marked.
    pub fn marked_count(&self) -> usize {
        self.marks().marked.len()
    }

    fn grants(&self, fileid: u64) -> u64 {
        self.marks().grants.get(&fileid).copied().unwrap_or(0)
    }

    /// A CLOSE or LAYOUTRETURN of `fileid` may have taken its last RW layout. If a client
    /// has writes to it that it did not report, GETATTR asks the data servers for its size
    /// until it is settled: so it is settled early, within [`GATHER`] and with the other
    /// files that went meanwhile, not at the next round, up to a second later. (A client
    /// that created a file with an RW layout and closed it without writing sends no
    /// LAYOUTCOMMIT: without this, every `stat` of such files in the next second cost a call
    /// to each of their data servers.) A file removed in the meantime (a CLOSE in the
    /// COMPOUND of its REMOVE) leaves the set again at [`Settler::deleted`].
    pub fn layouts_gone(&self, fileid: u64) {
        let mut m = self.marks();
        if !m.unreported.contains_key(&fileid) {
            return;
        }
        m.ready.insert(fileid);
        if !std::mem::replace(&mut m.early, true) {
            drop(m);
            self.wake.notify_one();
        }
    }

    /// The files of the sweep's next round: up to [`SWEEP`] marked files from where the last
    /// one ended, and whether this reaches the end of the marked files (the pass is
    /// complete; the next round starts again from the first).
    fn next_sweep(&self) -> (Vec<u64>, bool) {
        let mut m = self.marks();
        let files: Vec<u64> = m
            .marked
            .range(m.sweep_from..)
            .take(SWEEP)
            .copied()
            .collect();
        let complete = files.len() < SWEEP;
        m.sweep_from = match files.last() {
            Some(&f) if !complete => f.saturating_add(1),
            _ => 0,
        };
        (files, complete)
    }

    /// The files of an early round, taken.
    fn take_ready(&self) -> Vec<u64> {
        let mut m = self.marks();
        m.early = false;
        std::mem::take(&mut m.ready).into_iter().collect()
    }

    /// `fileid` was deleted, its mark in the store with it: nothing to settle.
    pub fn deleted(&self, fileid: u64) {
        let mut m = self.marks();
        m.ready.remove(&fileid);
        m.marked.remove(&fileid);
        m.grants.remove(&fileid);
        m.unreported.remove(&fileid);
        m.times_set.retain(|&(f, _)| f != fileid);
    }

    /// Forgets settled `fileid`, unless an RW layout was granted since `grants` (then its
    /// LAYOUTGET marked it again in the store after the settling, and it stays).
    fn forget(&self, fileid: u64, grants: u64) {
        let mut m = self.marks();
        if m.grants.get(&fileid).copied().unwrap_or(0) == grants {
            m.ready.remove(&fileid);
            m.marked.remove(&fileid);
            m.grants.remove(&fileid);
            m.unreported.remove(&fileid);
        }
    }

    /// Starts the task (once), a round every second (`ROUND`) of `clock` (the server's).
    /// Needs a tokio runtime. The task holds the handles weakly and upgrades them only for a
    /// round, so dropping the server ends it.
    pub fn start(
        ns: &Arc<Namespace>,
        tables: &Arc<StateTables>,
        pnfs: &Arc<Pnfs>,
        clock: &SharedClock,
    ) {
        if pnfs.settler().started.swap(true, Ordering::SeqCst) {
            return;
        }
        let n = pnfs.settler().marked_count();
        if n > 0 {
            info!(
                files = n,
                "files written through layouts before this start: settling their sizes with the data servers"
            );
        }
        let parts = SettleParts {
            ns: Arc::downgrade(ns),
            tables: Arc::downgrade(tables),
            pnfs: Arc::downgrade(pnfs),
        };
        tokio::spawn(run(parts, clock.clone()));
    }
}

/// What the settling task works on, held weakly: the store (sizes, the marks), the layout
/// table (whether an RW layout is out) and the data servers (their objects' sizes, the
/// marks in memory).
#[derive(Clone, Debug)]
struct SettleParts {
    ns: Weak<Namespace>,
    tables: Weak<StateTables>,
    pnfs: Weak<Pnfs>,
}

async fn run(parts: SettleParts, clock: SharedClock) {
    // Settling needs no fsync of its own: the size it records and the mark it removes are one
    // commit, so a crash loses both or neither, and a file still marked is settled again.
    let _deferral = parts.ns.upgrade().and_then(|n| n.store().defer_here());
    let Some(wake) = parts.pnfs.upgrade().map(|p| p.settler().wake.clone()) else {
        return;
    };
    loop {
        // A round of the sweep over every marked file ([`SWEEP`] of them at a time): the
        // next one at once while rounds find files to settle and the pass is not complete
        // (an earlier boot's marks, settled as fast as the data servers answer), else a
        // second later.
        let mut complete = false;
        let sweep = |s: &Settler| {
            let (files, last) = s.next_sweep();
            complete = last;
            files
        };
        let Some((pnfs, tried)) = round(&parts, &clock, sweep).await else {
            return;
        };
        if tried > 0 && !complete {
            continue;
        }
        // The wait is taken before the round is counted: a test that sees the count move and
        // then moves the clock on cannot slip in before the wait and be missed.
        let mut next = clock.sleep(ROUND);
        pnfs.settler().rounds.fetch_add(1, Ordering::Relaxed);
        drop(pnfs);
        // Until the next one, early rounds for the files whose last RW layout went.
        loop {
            tokio::select! {
                _ = &mut next => break,
                _ = wake.notified() => {
                    tokio::time::sleep(GATHER).await;
                    if round(&parts, &clock, Settler::take_ready).await.is_none() {
                        return;
                    }
                }
            }
        }
    }
}

/// Settles the files `pick` chooses, [`BATCH`] at a time, with the handles upgraded for the
/// round; `None` once the server is gone, else its [`Pnfs`] and how many of the files had
/// no RW layout out (the ones tried).
async fn round(
    parts: &SettleParts,
    clock: &SharedClock,
    pick: impl FnOnce(&Settler) -> Vec<u64>,
) -> Option<(Arc<Pnfs>, usize)> {
    let (Some(ns), Some(tables), Some(pnfs)) = (
        parts.ns.upgrade(),
        parts.tables.upgrade(),
        parts.pnfs.upgrade(),
    ) else {
        return None;
    };
    let files = without_write_layouts(&tables, pick(pnfs.settler()));
    for chunk in files.chunks(BATCH) {
        settle_batch(parts, ns.store(), &pnfs, clock, chunk).await;
    }
    Some((pnfs, files.len()))
}

/// Files looked up in the layout table per hold of its lock by [`without_write_layouts`].
const FILTER: usize = 4096;

/// `files` but those with an RW layout out, which a round cannot settle (most of a sweep's,
/// usually): looked up [`FILTER`] to a hold of the layout table's lock, not one lock per
/// file, nor one long hold that would stall the requests waiting for it.
fn without_write_layouts(tables: &StateTables, files: Vec<u64>) -> Vec<u64> {
    files
        .chunks(FILTER)
        .flat_map(|chunk| {
            let layouts = tables.layouts_recovered();
            chunk
                .iter()
                .copied()
                .filter(|&f| !layouts.has_write_layouts(f))
                .collect::<Vec<_>>()
        })
        .collect()
}

fn has_write_layouts(tables: &StateTables, fileid: u64) -> bool {
    tables.layouts_recovered().has_write_layouts(fileid)
}

/// Settles the marked files of `files`, which had no RW layout out when [`round`] looked
/// (their store jobs check again, in the transaction; see the module docs): the
/// data servers are asked for all their sizes at once ([`dsobjects::file_sizes`]: one call
/// per data server, not one per file and data server), and their store jobs are queued
/// together, so the committer runs them as one batch. A file that cannot be settled this
/// round (a data server down, a store error) is left for the next.
/// `parts`: the same handles, held weakly by the store jobs that check nothing changed (a
/// store job must not hold the last handle of the server).
async fn settle_batch(
    parts: &SettleParts,
    store: &Store,
    pnfs: &Pnfs,
    clock: &SharedClock,
    files: &[u64],
) {
    let mut seen: Vec<Seen> = Vec::with_capacity(files.len());
    // The striped ones, to ask their data servers, and where each is in `seen`.
    let mut striped: Vec<(u64, StripeSet)> = Vec::new();
    let mut striped_at: Vec<usize> = Vec::new();
    for &fileid in files {
        let grants = pnfs.settler().grants(fileid);
        let (change, set) = match store
            .getattr(fileid)
            .map(|i| (i.change, store.stripes(fileid)))
        {
            Ok((change, Ok(set))) => (change, set),
            // Gone: the job below drops the mark.
            Err(StoreError::Stale(_)) => (0, None),
            Ok((_, Err(e))) | Err(e) => {
                debug!(fileid, "size not settled yet: store: {e}");
                continue;
            }
        };
        let ds_size = match set {
            Some(set) => {
                striped_at.push(seen.len());
                striped.push((fileid, set));
                None
            }
            None => Some(0),
        };
        seen.push(Seen {
            fileid,
            grants,
            change,
            ds_size,
        });
    }
    let sizes = dsobjects::file_sizes(pnfs, &striped).await;
    for (&at, size) in striped_at.iter().zip(sizes) {
        match size {
            Ok(size) => seen[at].ds_size = Some(size),
            Err(e) => debug!(
                fileid = seen[at].fileid,
                "size not settled yet: data servers: {e}"
            ),
        }
    }
    let now = nfstime(clock.wall());
    let jobs: Vec<_> = seen
        .iter()
        .filter_map(|f| {
            let (fileid, grants, ds_size) = (f.fileid, f.grants, f.ds_size?);
            let (weak_tables, weak_pnfs) = (parts.tables.clone(), parts.pnfs.clone());
            let busy = move || match (weak_tables.upgrade(), weak_pnfs.upgrade()) {
                (Some(tables), Some(pnfs)) => {
                    has_write_layouts(&tables, fileid) || pnfs.settler().grants(fileid) != grants
                }
                _ => true,
            };
            let job = store.settle_layout_writes(fileid, f.change, ds_size, now, busy);
            Some((fileid, grants, job))
        })
        .collect();
    for (fileid, grants, job) in jobs {
        match job.await {
            Ok(settled) => settled_one(pnfs, fileid, grants, settled),
            Err(e) => debug!(fileid, "size not settled yet: store: {e}"),
        }
    }
}

/// A file of [`settle_batch`]: what was seen of it before its data servers were asked.
struct Seen {
    fileid: u64,
    /// RW layouts granted so far ([`Settler::grants`]): one more by the job's time means
    /// a writer came meanwhile.
    grants: u64,
    /// The change attribute: moved by the job's time means the file changed meanwhile.
    change: u64,
    /// Its size on the data servers (0 without a stripe set, or gone); `None` until they
    /// answered, and when they could not (left for the next round).
    ds_size: Option<u64>,
}

/// What the store did with one file's settling, told to the marks in memory and counted.
fn settled_one(pnfs: &Pnfs, fileid: u64, grants: u64, settled: Settled) {
    match settled {
        Settled::Busy => {}
        Settled::Grown { size } => {
            warn!(
                fileid,
                size, "size grown to what the data servers hold (written through a layout without LAYOUTCOMMIT)"
            );
            pnfs.settler().grown.fetch_add(1, Ordering::Relaxed);
            pnfs.settler().settled.fetch_add(1, Ordering::Relaxed);
            pnfs.settler().forget(fileid, grants);
        }
        Settled::Kept | Settled::Gone | Settled::NotMarked => {
            pnfs.settler().settled.fetch_add(1, Ordering::Relaxed);
            pnfs.settler().forget(fileid, grants);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pass(s: &Settler) -> Vec<(usize, bool)> {
        let mut rounds = Vec::new();
        loop {
            let (files, complete) = s.next_sweep();
            rounds.push((files.len(), complete));
            if complete {
                return rounds;
            }
        }
    }

    #[test]
    fn the_sweep_takes_every_marked_file_once_a_pass_a_bounded_number_a_round() {
        let marked: Vec<u64> = (1..=2 * SWEEP as u64 + 100).map(|f| f * 3).collect();
        let s = Settler::load(marked.clone());
        let mut seen = Vec::new();
        loop {
            let (files, complete) = s.next_sweep();
            assert!(files.len() <= SWEEP);
            seen.extend(files);
            if complete {
                break;
            }
        }
        assert_eq!(seen, marked);
        // The next pass starts from the first again.
        assert_eq!(s.next_sweep().0.first(), Some(&3));
    }

    #[test]
    fn a_file_marked_behind_the_sweep_is_in_the_next_pass_and_a_deleted_one_in_none() {
        let s = Settler::load((10..10 + SWEEP as u64 + 5).collect());
        let (first, complete) = s.next_sweep();
        assert!(!complete);
        assert_eq!(first.len(), SWEEP);
        // Behind the sweep's position, and one ahead of it deleted.
        s.marks().marked.insert(1);
        s.deleted(10 + SWEEP as u64 + 1);
        let (rest, complete) = s.next_sweep();
        assert!(complete);
        assert_eq!(rest.len(), 4);
        assert!(!rest.contains(&1));
        assert_eq!(s.next_sweep().0.first(), Some(&1));
    }

    #[test]
    fn with_nothing_marked_a_round_is_a_complete_empty_pass() {
        let s = Settler::load(Vec::new());
        assert_eq!(pass(&s), vec![(0, true)]);
        // Exactly SWEEP files: a full round, then an empty one that ends the pass.
        let s = Settler::load((0..SWEEP as u64).collect());
        assert_eq!(pass(&s), vec![(SWEEP, false), (0, true)]);
    }
}

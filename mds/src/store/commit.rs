//! Group commit: one write transaction at a time; concurrent changes share one fsync.
//!
//! Callers submit jobs (closures over a [`Txn`]) to one queue. A batch is the job at the
//! front and every job queued behind it (up to `max_batch`), run in order in one write
//! transaction and committed once with `Durability::Immediate`; only then does each job get
//! its result. One batch runs at a time. While one commit is syncing, the next batch queues
//! up, so under load the cost of the sync is shared by every change waiting for it; an idle
//! store commits each job alone, without waiting to fill a batch.
//!
//! **Who runs a batch.** When the store is idle (nothing running, the waiter's job alone in
//! the queue, no job arriving while the last batches ran), the caller that waits for the
//! job runs it on its own thread as it starts waiting ([`Pending`]'s first poll, or
//! [`Pending::wait`]): with one client, the hand-offs to a committer thread and back were a
//! quarter of a create's or a remove's latency (issue 22). Otherwise the committer thread
//! runs the batches, and it runs a job whose result nobody waits for (dropped unpolled), so
//! every change happens whether or not anyone waits. Either way jobs run in queue order.
//!
//! **Isolation of failing jobs.** A job that fails must leave nothing behind in the shared
//! transaction. redb savepoints cannot help: they can only be taken before a transaction has
//! opened a table. Instead, a job reaches tables through [`Txn::open`], and mutation only
//! through [`Tbl::write`], which marks the job dirty. The store's operations do all their
//! checks (NOENT, EXIST, NOTEMPTY, ...) before their first `write()`, so a rejected request is
//! a clean failure: its error is recorded and the batch goes on. A job that fails after it
//! started writing (a storage error in mid-update, or a panic) poisons only itself: the
//! transaction is aborted and the batch is replayed from its start without that job. Jobs are
//! `FnMut` for this reason: a replayed job runs again on the same state as before and
//! produces the same result; its first result is discarded. A panicking job counts as one
//! that failed after writing; the batch's runner catches the panic and carries on.
//!
//! If the commit itself fails, every job of the batch gets the error (nothing was
//! acknowledged, including the rejections computed against the uncommitted state).
//!
//! **Batches that wrote nothing** are aborted, not committed: no fsync. A job that only reads
//! (or finds nothing to change, such as marking a file that is already marked) still goes
//! through the committer, so it is ordered with every other change.
//!
//! **Deferred durability.** A job submitted from a task that [`Committer::defer_here`]
//! registered (a COMPOUND being run) is *deferred*: a batch of deferred jobs only is committed
//! with `Durability::None` (visible to every later transaction, not yet on disk) and its
//! results are sent at once. The task then ends with [`Committer::sync`] before its reply
//! goes out: a barrier job after which everything committed before it is durable (one
//! `Durability::Immediate` commit, an empty one if need be, and none at all when a durable
//! commit came after the last deferred one). So a COMPOUND of OPEN + LAYOUTGET, or of
//! DELEGRETURN + CLOSE + REMOVE, costs one fsync however many of its operations changed
//! something, and the rule is kept: what a reply acknowledges is durable before the reply.
//! A crash before the barrier loses only changes no reply acknowledged. Whoever acts outside
//! the store on a change it read (deleting data, asking data servers to remove objects) syncs
//! first, so no such action outlives a lost change. A batch with any job that is not deferred
//! is committed durably, as before deferral existed.
//!
//! **The last change is the durable one.** A registered task may stop deferring
//! ([`Deferral::defer`]): the MDS does at the COMPOUND's last operation that may change the
//! store. That operation's jobs are committed durably, and once one succeeds it covers the
//! task's deferred jobs before it (the committer runs a task's jobs in the order it
//! submitted them, numbered in [`TaskJobs`]), so the barrier is skipped: a COMPOUND of one
//! changing operation costs one commit, not a deferred commit and an empty durable one (the
//! empty durable commit was 28 % of the committer's time in a create-heavy run). A deferred
//! job left uncovered (the durable job failed, or a deferred one came after it) still makes
//! [`Deferral::take_submitted`] call for the sync.

use std::borrow::Borrow;
use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::collections::VecDeque;
use std::future::Future;
use std::ops::RangeBounds;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError, Weak};
use std::task::{Context, Poll};
use std::thread::JoinHandle;

use redb::{
    AccessGuard, Database, Durability, Key, ReadableTable, StorageError, Table, TableDefinition,
    TableHandle, Value, WriteTransaction,
};
use tokio::sync::oneshot;

use super::counters::Counters;
use super::wal::{Ops, Wal};
use super::StoreError;

/// A write transaction as a job sees it: tables open through it, and writes are tracked so a
/// failing job can be isolated (see the module docs).
pub struct Txn<'a> {
    txn: &'a WriteTransaction,
    dirty: Cell<bool>,
    counters: &'a Counters,
    /// The batch's writes for the write-ahead log, when the store has one.
    log: Option<&'a RefCell<Ops>>,
}

impl<'a> Txn<'a> {
    fn new(
        txn: &'a WriteTransaction,
        counters: &'a Counters,
        log: Option<&'a RefCell<Ops>>,
    ) -> Self {
        Self {
            txn,
            dirty: Cell::new(false),
            counters,
            log,
        }
    }

    /// The store's sequences in memory (the change attribute, the file id).
    pub(super) fn counters(&self) -> &'a Counters {
        self.counters
    }

    /// Opens a table (creating it if it does not exist yet). Open each table once per job:
    /// redb refuses a second open of a table that is still open.
    pub fn open<K: Key + 'static, V: Value + 'static>(
        &self,
        def: TableDefinition<'static, K, V>,
    ) -> Result<Tbl<'_, K, V>, StoreError> {
        Ok(Tbl {
            table: self.txn.open_table(def)?,
            dirty: &self.dirty,
            def,
            log: self.log,
        })
    }
}

/// A table opened by a job. Reads go through [`Tbl::read`]; every change must go through
/// [`Tbl::write`], after all the checks that may reject the request.
pub struct Tbl<'t, K: Key + 'static, V: Value + 'static> {
    table: Table<'t, K, V>,
    dirty: &'t Cell<bool>,
    def: TableDefinition<'static, K, V>,
    log: Option<&'t RefCell<Ops>>,
}

impl<'t, K: Key + 'static, V: Value + 'static> Tbl<'t, K, V> {
    /// The table for reading (`redb::ReadableTable` methods).
    pub fn read(&self) -> &Table<'t, K, V> {
        &self.table
    }

    /// The table for writing. From here on, an error from this job aborts and replays the
    /// batch instead of being a clean rejection.
    pub fn write(&mut self) -> TblWrite<'_, 't, K, V> {
        self.dirty.set(true);
        TblWrite { tbl: self }
    }
}

/// The writes a job may make to a table: each is made in the transaction and, when the
/// store has a write-ahead log, recorded for it ([`super::wal`]).
pub struct TblWrite<'s, 't, K: Key + 'static, V: Value + 'static> {
    tbl: &'s mut Tbl<'t, K, V>,
}

impl<K: Key + 'static, V: Value + 'static> TblWrite<'_, '_, K, V> {
    /// Inserts or replaces `key`'s value; returns the value it replaced.
    pub fn insert<'k, 'v>(
        &mut self,
        key: impl Borrow<K::SelfType<'k>>,
        value: impl Borrow<V::SelfType<'v>>,
    ) -> Result<Option<AccessGuard<'_, V>>, StorageError> {
        if let Some(log) = self.tbl.log {
            log.borrow_mut().insert(
                self.tbl.def.name(),
                K::as_bytes(key.borrow()).as_ref(),
                V::as_bytes(value.borrow()).as_ref(),
            );
        }
        self.tbl.table.insert(key, value)
    }

    /// Removes `key`; returns its value if it had one.
    pub fn remove<'k>(
        &mut self,
        key: impl Borrow<K::SelfType<'k>>,
    ) -> Result<Option<AccessGuard<'_, V>>, StorageError> {
        if let Some(log) = self.tbl.log {
            log.borrow_mut()
                .remove(self.tbl.def.name(), K::as_bytes(key.borrow()).as_ref());
        }
        self.tbl.table.remove(key)
    }

    /// Removes every key in `range`, one by one (so that the log records each key).
    pub fn remove_range<'k, KR>(
        &mut self,
        range: impl RangeBounds<KR> + 'k,
    ) -> Result<(), StorageError>
    where
        KR: Borrow<K::SelfType<'k>> + 'k,
    {
        let keys: Vec<Vec<u8>> = self
            .tbl
            .table
            .range(range)?
            .map(|e| e.map(|(k, _)| K::as_bytes(&k.value()).as_ref().to_vec()))
            .collect::<Result<_, _>>()?;
        for k in &keys {
            self.remove(K::from_bytes(k))?;
        }
        Ok(())
    }
}

/// A table a job opens at its first use ([`LazyTbl::get`]): for jobs that may or may not
/// need it.
pub struct LazyTbl<'t, K: Key + 'static, V: Value + 'static> {
    tx: &'t Txn<'t>,
    def: TableDefinition<'static, K, V>,
    table: Option<Tbl<'t, K, V>>,
}

impl<'t, K: Key + 'static, V: Value + 'static> LazyTbl<'t, K, V> {
    /// Table `def` of `tx`, not opened yet.
    pub fn new(tx: &'t Txn<'t>, def: TableDefinition<'static, K, V>) -> Self {
        Self {
            tx,
            def,
            table: None,
        }
    }

    /// The table, opened now if it was not.
    pub fn get(&mut self) -> Result<&mut Tbl<'t, K, V>, StoreError> {
        let table = match self.table.take() {
            Some(t) => t,
            None => self.tx.open(self.def)?,
        };
        Ok(self.table.insert(table))
    }
}

/// The result of a submitted change: `.await` it, or [`Pending::wait`] for it from a thread
/// that is not running async code. The change happens whether or not anyone waits; a result
/// arrives only once the change is durable (or has failed).
#[must_use = "the result says whether the change happened"]
pub struct Pending<R> {
    state: PendingState<R>,
}

enum PendingState<R> {
    Ready(Option<Result<R, StoreError>>),
    Waiting {
        rx: oneshot::Receiver<Result<R, StoreError>>,
        /// The committer, until the first wait: the waiter runs the queued jobs itself
        /// when nobody is running any ([`Shared::lead`]).
        lead: Option<Weak<Shared>>,
    },
}

// `Pending` never pins `R`: the value is moved out whole.
impl<R> Unpin for Pending<R> {}

impl<R> Pending<R> {
    /// A result known before anything is submitted (an argument rejected up front).
    pub fn ready(r: Result<R, StoreError>) -> Self {
        Self {
            state: PendingState::Ready(Some(r)),
        }
    }

    /// Blocks the thread until the result arrives. Not for use on an async runtime's worker
    /// threads (tokio panics there); `.await` instead.
    pub fn wait(mut self) -> Result<R, StoreError> {
        match std::mem::replace(&mut self.state, PendingState::Ready(None)) {
            PendingState::Ready(r) => r.unwrap_or(Err(StoreError::Internal("polled twice"))),
            PendingState::Waiting { rx, lead } => {
                if let Some(shared) = lead.and_then(|w| w.upgrade()) {
                    shared.lead();
                }
                rx.blocking_recv().unwrap_or(Err(StoreError::Closed))
            }
        }
    }
}

impl<R> Future for Pending<R> {
    type Output = Result<R, StoreError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match &mut self.get_mut().state {
            PendingState::Ready(r) => Poll::Ready(
                r.take()
                    .unwrap_or(Err(StoreError::Internal("polled twice"))),
            ),
            PendingState::Waiting { rx, lead } => {
                if let Some(shared) = lead.take().and_then(|w| w.upgrade()) {
                    shared.lead();
                }
                Pin::new(rx)
                    .poll(cx)
                    .map(|r| r.unwrap_or(Err(StoreError::Closed)))
            }
        }
    }
}

impl<R> Drop for Pending<R> {
    /// A change nobody waited for still happens: the committer thread runs it.
    fn drop(&mut self) {
        if let PendingState::Waiting { lead: Some(w), .. } = &self.state {
            if let Some(shared) = w.upgrade() {
                shared.wake.notify_one();
            }
        }
    }
}

/// One submitted change, type-erased so that jobs with different results share a channel.
trait Job: Send {
    /// Whether the batch holding this job must be durable before its results are sent.
    fn durable(&self) -> bool;
    /// Runs the change in `tx`, keeping its result for [`Job::finish`].
    fn run(&mut self, tx: &Txn<'_>) -> Result<(), StoreError>;
    /// Sends the caller its result once the batch's fate is known.
    fn finish(self: Box<Self>, outcome: Result<(), StoreError>);
}

struct TypedJob<F, R> {
    f: F,
    out: Option<R>,
    durable: bool,
    /// A durable job of a deferring task: once committed, that task's earlier deferred jobs
    /// are durable too ([`Deferrals::covered`]).
    covers: Option<(Arc<Deferrals>, tokio::task::Id, u64)>,
    reply: oneshot::Sender<Result<R, StoreError>>,
}

impl<F, R> Job for TypedJob<F, R>
where
    F: FnMut(&Txn<'_>) -> Result<R, StoreError> + Send,
    R: Send,
{
    fn durable(&self) -> bool {
        self.durable
    }

    fn run(&mut self, tx: &Txn<'_>) -> Result<(), StoreError> {
        self.out = Some((self.f)(tx)?);
        Ok(())
    }

    fn finish(self: Box<Self>, outcome: Result<(), StoreError>) {
        let Self {
            out, reply, covers, ..
        } = *self;
        if let (Ok(()), Some((deferrals, task, seq))) = (&outcome, covers) {
            deferrals.covered(task, seq);
        }
        let r = outcome.and_then(|()| out.ok_or(StoreError::Internal("job has no result")));
        // The caller may have stopped waiting; the change stands either way.
        let _ = reply.send(r);
    }
}

/// Counters that show how well commits are shared.
#[derive(Debug, Default)]
pub struct CommitStats {
    commits: AtomicU64,
    deferred_commits: AtomicU64,
    jobs: AtomicU64,
    replays: AtomicU64,
    largest_batch: AtomicU64,
    checkpoints: AtomicU64,
}

/// A snapshot of [`CommitStats`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CommitCounts {
    /// Durable commits made (each one fsync).
    pub commits: u64,
    /// Commits of deferred jobs only, made visible without an fsync (made durable by the
    /// next durable commit).
    pub deferred_commits: u64,
    /// Jobs run to completion (successful or rejected).
    pub jobs: u64,
    /// Batches aborted and replayed because a job failed after writing.
    pub replays: u64,
    /// The most jobs that shared one commit.
    pub largest_batch: u64,
    /// Durable redb commits that emptied the write-ahead log (counted in `commits` too).
    pub checkpoints: u64,
}

impl CommitStats {
    /// The counters now.
    pub fn snapshot(&self) -> CommitCounts {
        CommitCounts {
            commits: self.commits.load(Ordering::Relaxed),
            deferred_commits: self.deferred_commits.load(Ordering::Relaxed),
            jobs: self.jobs.load(Ordering::Relaxed),
            replays: self.replays.load(Ordering::Relaxed),
            largest_batch: self.largest_batch.load(Ordering::Relaxed),
            checkpoints: self.checkpoints.load(Ordering::Relaxed),
        }
    }
}

/// The committer: the queue of jobs, the thread that runs what no waiter runs, and the
/// deferrals.
pub(super) struct Committer {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
    pub(super) stats: Arc<CommitStats>,
    deferrals: Arc<Deferrals>,
}

/// The jobs waiting to run, in the order they were submitted, and who runs them.
struct Queue {
    jobs: VecDeque<Box<dyn Job>>,
    /// A batch is running, on the committer thread or on a waiter's ([`Shared::lead`]):
    /// one at a time, in queue order.
    running: bool,
    /// Whether a commit without fsync was made since the last durable one.
    unsynced: bool,
    /// The committer is being dropped: the thread runs what is queued and ends.
    closed: bool,
    /// A job was queued while a batch was running, since the last batch was taken.
    arrived_while_running: bool,
    /// Jobs arrived while the batch before the last one ran (or it held several): changes
    /// come faster than they commit, and the thread gathers them ([`Shared::lead`]).
    busy: bool,
}

/// What the committer thread, the submitters and the waiters share.
struct Shared {
    db: Arc<Database>,
    queue: Mutex<Queue>,
    /// Wakes the committer thread: jobs are queued that no waiter is running (a waiter
    /// found a batch running, a result was dropped unwaited), or the committer closes.
    wake: Condvar,
    stats: Arc<CommitStats>,
    max_batch: usize,
    /// The sequences the jobs hand out, kept between batches.
    counters: Counters,
    /// The write-ahead log, if the store has one; used by the batch running (one at a time).
    log: Mutex<Option<Log>>,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The next batch (up to `max_batch` jobs from the front), if no batch is running: the
    /// caller must [`Shared::run`] it.
    fn take(&self, q: &mut Queue) -> Option<Vec<Box<dyn Job>>> {
        if q.running || q.jobs.is_empty() {
            return None;
        }
        q.running = true;
        let n = q.jobs.len().min(self.max_batch);
        q.busy = q.arrived_while_running || n > 1;
        q.arrived_while_running = false;
        Some(q.jobs.drain(..n).collect())
    }

    /// Runs a batch from [`Shared::take`], then lets the next one be taken; wakes the thread
    /// when jobs are left (or the committer is closing), since nobody may be about to wait
    /// for them.
    fn run(&self, batch: Vec<Box<dyn Job>>) {
        /// Ends the batch even if running it panicked (the jobs' own panics are caught in
        /// [`run_batch`]), so the store is not left waiting for a batch forever.
        struct Running<'a>(&'a Shared, bool);
        impl Drop for Running<'_> {
            fn drop(&mut self) {
                let mut q = self.0.lock();
                q.unsynced = self.1;
                q.running = false;
                let more = q.closed || !q.jobs.is_empty();
                drop(q);
                if more {
                    self.0.wake.notify_one();
                }
            }
        }
        let mut running = Running(self, self.lock().unsynced);
        let mut log = self.log.lock().unwrap_or_else(PoisonError::into_inner);
        run_batch(
            &self.db,
            batch,
            &self.stats,
            &self.counters,
            &mut running.1,
            log.as_mut(),
        );
    }

    /// A waiter's turn. When the store is idle (no batch running, no other job queued, and
    /// none arriving while the last batches ran), the waiter runs its job on its own thread: one change
    /// so commits without two thread hand-offs, to the committer thread and back (a
    /// quarter of a create's or a remove's latency with one client, issue 22). Otherwise
    /// the committer thread runs it, in a batch with whatever else is queued, as changes
    /// that arrive faster than they commit are best gathered by one thread.
    fn lead(&self) {
        let batch = {
            let mut q = self.lock();
            if q.closed || q.jobs.len() > 1 || q.busy {
                if !q.running {
                    self.wake.notify_one();
                }
                return;
            }
            self.take(&mut q)
        };
        if let Some(batch) = batch {
            self.run(batch);
        }
    }
}

/// The tasks whose jobs are deferred ([`Committer::defer_here`]), each with its [`TaskJobs`].
#[derive(Debug, Default)]
struct Deferrals {
    tasks: Mutex<HashMap<tokio::task::Id, TaskJobs>>,
}

/// The jobs of one registered task, numbered in the order it submitted them (which is the
/// order the committer runs them in: one channel, first in first out).
#[derive(Debug, Clone, Copy)]
struct TaskJobs {
    /// Whether the jobs it submits now are deferred ([`Deferral::defer`]).
    deferring: bool,
    /// The number the next job gets.
    next: u64,
    /// The last deferred job's number (0: none).
    deferred_upto: u64,
    /// The last number known durable: a durable job of the task committed with this
    /// number, or the task synced ([`Deferral::take_submitted`]).
    durable_upto: u64,
}

impl Default for TaskJobs {
    fn default() -> Self {
        Self {
            deferring: true,
            next: 1,
            deferred_upto: 0,
            durable_upto: 0,
        }
    }
}

/// How a job submitted now is committed ([`Deferrals::submitting`]).
enum Submission {
    /// Durably, for a task not registered.
    Durable,
    /// Deferred: visible at once, durable at the task's sync.
    Deferred,
    /// Durably, for a registered task that stopped deferring: once committed it covers the
    /// task's deferred jobs numbered below it.
    Covering(tokio::task::Id, u64),
}

impl Deferrals {
    fn tasks(&self) -> std::sync::MutexGuard<'_, HashMap<tokio::task::Id, TaskJobs>> {
        self.tasks.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// How a job submitted now from the current task is committed; numbers it.
    fn submitting(&self) -> Submission {
        let Some(id) = tokio::task::try_id() else {
            return Submission::Durable;
        };
        let mut tasks = self.tasks();
        let Some(t) = tasks.get_mut(&id) else {
            return Submission::Durable;
        };
        let seq = t.next;
        t.next += 1;
        if t.deferring {
            t.deferred_upto = seq;
            Submission::Deferred
        } else {
            Submission::Covering(id, seq)
        }
    }

    /// Durable job `seq` of `task` was committed: so were its jobs before it.
    fn covered(&self, task: tokio::task::Id, seq: u64) {
        if let Some(t) = self.tasks().get_mut(&task) {
            t.durable_upto = t.durable_upto.max(seq);
        }
    }
}

/// The registration of a task whose store jobs are deferred ([`Committer::defer_here`]);
/// dropping it ends the deferral (a COMPOUND dropped half way leaves nothing registered).
#[derive(Debug)]
pub struct Deferral {
    deferrals: Arc<Deferrals>,
    id: tokio::task::Id,
}

impl Deferral {
    /// Whether the task has deferred jobs that no durable commit of its own covered since it
    /// was registered (or since the last call), i.e. whether it must [`Committer::sync`]
    /// before it acknowledges anything. The caller syncs: they count as covered from here.
    pub fn take_submitted(&self) -> bool {
        let mut tasks = self.deferrals.tasks();
        let Some(t) = tasks.get_mut(&self.id) else {
            return false;
        };
        let unsynced = t.deferred_upto > t.durable_upto;
        t.durable_upto = t.durable_upto.max(t.deferred_upto);
        unsynced
    }

    /// Whether the task's jobs from now on are deferred (the default) or durable. A
    /// COMPOUND stops deferring at its last operation that may change the store: that
    /// operation's durable commit covers the earlier deferred ones (the committer runs a
    /// task's jobs in order), and the COMPOUND ends without a sync of its own, one commit
    /// fewer. Durability holds either way: [`Deferral::take_submitted`] still says when a
    /// deferred job was left uncovered (a durable job that failed, a later deferred one).
    pub fn defer(&self, deferring: bool) {
        if let Some(t) = self.deferrals.tasks().get_mut(&self.id) {
            t.deferring = deferring;
        }
    }
}

impl Drop for Deferral {
    fn drop(&mut self) {
        self.deferrals.tasks().remove(&self.id);
    }
}

impl Committer {
    /// Starts the thread. `max_batch` caps how many jobs share one commit (1 = no sharing).
    /// With `wal`, batches are made durable by the write-ahead log ([`super::wal`]).
    pub(super) fn start(
        db: Arc<Database>,
        max_batch: usize,
        wal: Option<Wal>,
    ) -> Result<Self, StoreError> {
        let stats = Arc::new(CommitStats::default());
        let shared = Arc::new(Shared {
            db,
            queue: Mutex::new(Queue {
                jobs: VecDeque::new(),
                running: false,
                unsynced: false,
                closed: false,
                arrived_while_running: false,
                busy: false,
            }),
            wake: Condvar::new(),
            stats: stats.clone(),
            max_batch: max_batch.max(1),
            counters: Counters::default(),
            log: Mutex::new(wal.map(Log::new)),
        });
        let s = shared.clone();
        let thread = std::thread::Builder::new()
            .name("mds-store-commit".into())
            .spawn(move || {
                let mut q = s.lock();
                loop {
                    if let Some(batch) = s.take(&mut q) {
                        drop(q);
                        s.run(batch);
                        q = s.lock();
                        continue;
                    }
                    if q.closed && q.jobs.is_empty() && !q.running {
                        break;
                    }
                    q = s.wake.wait(q).unwrap_or_else(PoisonError::into_inner);
                }
                let unsynced = q.unsynced;
                drop(q);
                // Closing: what deferred jobs left in memory goes to disk, and the log's
                // records into redb (a clean close leaves no log to replay).
                let mut log = s.log.lock().unwrap_or_else(PoisonError::into_inner);
                let r = match log.as_mut() {
                    Some(l) => checkpoint_now(&s.db, l),
                    None if unsynced => durable_empty_commit(&s.db),
                    None => Ok(()),
                };
                if let Err(e) = r {
                    tracing::warn!("metadata store: last sync at close failed: {e}");
                }
            })?;
        Ok(Self {
            shared,
            thread: Some(thread),
            stats,
            deferrals: Arc::default(),
        })
    }

    /// Registers the current tokio task: the jobs it submits from now on, until the
    /// returned [`Deferral`] is dropped, are deferred (see the module docs). `None` outside
    /// a tokio task (its jobs stay durable), and when the task is registered already (the
    /// first registration governs, and its owner syncs).
    pub(super) fn defer_here(&self) -> Option<Deferral> {
        let id = tokio::task::try_id()?;
        {
            let mut tasks = self.deferrals.tasks();
            if tasks.contains_key(&id) {
                return None;
            }
            tasks.insert(id, TaskJobs::default());
        }
        Some(Deferral {
            deferrals: self.deferrals.clone(),
            id,
        })
    }

    /// The sequences the jobs hand out ([`Txn::counters`]).
    pub(super) fn counters(&self) -> &Counters {
        &self.shared.counters
    }

    /// A barrier: resolves once everything committed before it is durable.
    pub(super) fn sync(&self) -> Pending<()> {
        self.queue(|_: &Txn<'_>| Ok(()), true, None)
    }

    /// Queues a job; the result arrives once its batch is committed: durably, unless the
    /// job is deferred ([`Committer::defer_here`]).
    pub(super) fn submit<R, F>(&self, f: F) -> Pending<R>
    where
        F: FnMut(&Txn<'_>) -> Result<R, StoreError> + Send + 'static,
        R: Send + 'static,
    {
        match self.deferrals.submitting() {
            Submission::Durable => self.queue(f, true, None),
            Submission::Deferred => self.queue(f, false, None),
            Submission::Covering(task, seq) => {
                self.queue(f, true, Some((self.deferrals.clone(), task, seq)))
            }
        }
    }

    fn queue<R, F>(
        &self,
        f: F,
        durable: bool,
        covers: Option<(Arc<Deferrals>, tokio::task::Id, u64)>,
    ) -> Pending<R>
    where
        F: FnMut(&Txn<'_>) -> Result<R, StoreError> + Send + 'static,
        R: Send + 'static,
    {
        let (reply, rx) = oneshot::channel();
        let job = Box::new(TypedJob {
            f,
            out: None,
            durable,
            covers,
            reply,
        });
        {
            let mut q = self.shared.lock();
            if q.closed {
                return Pending::ready(Err(StoreError::Closed));
            }
            q.arrived_while_running |= q.running;
            q.jobs.push_back(job);
        }
        // Run by whoever waits for it first ([`Shared::lead`]), or by the thread.
        Pending {
            state: PendingState::Waiting {
                rx,
                lead: Some(Arc::downgrade(&self.shared)),
            },
        }
    }
}

impl Drop for Committer {
    fn drop(&mut self) {
        // The thread runs the queued jobs and ends; joining it releases its handle on the
        // database so that the file can be opened again.
        self.shared.lock().closed = true;
        self.shared.wake.notify_one();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// What happened to one job in the current attempt.
enum Outcome {
    Pending,
    Done,
    Rejected(StoreError),
}

/// An empty `Durability::Immediate` commit: makes every earlier commit durable.
fn durable_empty_commit(db: &Database) -> Result<(), StoreError> {
    let mut wtx = db.begin_write()?;
    wtx.set_durability(Durability::Immediate)?;
    wtx.commit()?;
    Ok(())
}

/// The write-ahead log and the writes of the batch being run ([`super::wal`]).
pub(super) struct Log {
    wal: Wal,
    ops: RefCell<Ops>,
}

impl Log {
    pub(super) fn new(wal: Wal) -> Self {
        Self {
            wal,
            ops: RefCell::new(Ops::default()),
        }
    }
}

/// Runs a batch in one transaction and commits it; see the module docs for failure handling
/// and deferred jobs. `unsynced`: whether a commit without fsync was made since the last
/// durable one (updated here). With a write-ahead log, redb commits durably only at
/// checkpoints and a batch is made durable by its log record instead.
fn run_batch(
    db: &Database,
    mut batch: Vec<Box<dyn Job>>,
    stats: &CommitStats,
    counters: &Counters,
    unsynced: &mut bool,
    mut log: Option<&mut Log>,
) {
    let n = batch.len();
    let durable = batch.iter().any(|j| j.durable());
    // With a log, a batch is made durable by its record, and redb only at checkpoints.
    let durability = match &log {
        Some(_) => Durability::None,
        None if durable => Durability::Immediate,
        None => Durability::None,
    };
    let mut outcomes: Vec<Outcome> = (0..n).map(|_| Outcome::Pending).collect();
    let final_result: Result<(), StoreError> = 'attempt: loop {
        let mut wtx = match db.begin_write() {
            Ok(t) => t,
            Err(e) => break 'attempt Err(e.into()),
        };
        if let Err(e) = wtx.set_durability(durability) {
            break 'attempt Err(e.into());
        }
        if let Some(l) = &log {
            l.ops.borrow_mut().clear();
        }
        let mut poisoned = false;
        let mut wrote = false;
        {
            let tx = Txn::new(&wtx, counters, log.as_ref().map(|l| &l.ops));
            for (job, outcome) in batch.iter_mut().zip(outcomes.iter_mut()) {
                if matches!(outcome, Outcome::Rejected(_)) {
                    continue;
                }
                tx.dirty.set(false);
                // A panic may have left anything half done, written or not: treat it as dirty.
                let r = catch_unwind(AssertUnwindSafe(|| job.run(&tx))).unwrap_or_else(|_| {
                    tx.dirty.set(true);
                    Err(StoreError::Internal("store job panicked"))
                });
                match r {
                    Ok(()) => {
                        *outcome = Outcome::Done;
                        wrote |= tx.dirty.get();
                    }
                    Err(e) => {
                        *outcome = Outcome::Rejected(e);
                        if tx.dirty.get() {
                            poisoned = true;
                            break;
                        }
                    }
                }
            }
        }
        if poisoned {
            // Drop this attempt and run the batch again without the job that wrote and then
            // failed; the others see the same state as before.
            stats.replays.fetch_add(1, Ordering::Relaxed);
            let _ = wtx.abort();
            for o in outcomes.iter_mut() {
                if matches!(o, Outcome::Done) {
                    *o = Outcome::Pending;
                }
            }
            continue 'attempt;
        }
        if !wrote {
            let _ = wtx.abort();
            if !durable {
                break 'attempt Ok(());
            }
            // A barrier (or a durable job that changed nothing) after deferred commits.
            if let Some(l) = log.as_deref_mut() {
                if !l.wal.unsynced() {
                    break 'attempt Ok(());
                }
                break 'attempt sync_log(db, l).map(|()| {
                    stats.commits.fetch_add(1, Ordering::Relaxed);
                });
            }
            if *unsynced {
                break 'attempt durable_empty_commit(db).map(|()| {
                    *unsynced = false;
                    stats.commits.fetch_add(1, Ordering::Relaxed);
                });
            }
            break 'attempt Ok(());
        }
        if let Err(e) = wtx.commit() {
            break 'attempt Err(e.into());
        }
        let Some(l) = log.as_deref_mut() else {
            if durable {
                *unsynced = false;
                stats.commits.fetch_add(1, Ordering::Relaxed);
            } else {
                *unsynced = true;
                stats.deferred_commits.fetch_add(1, Ordering::Relaxed);
            }
            break 'attempt Ok(());
        };
        let appended = l.wal.append(&l.ops.borrow());
        if let Err(e) = appended {
            tracing::warn!(
                "metadata store: write-ahead log append failed ({e}); committing durably"
            );
            break 'attempt checkpoint_now(db, l).map(|()| {
                stats.commits.fetch_add(1, Ordering::Relaxed);
            });
        }
        let r = if durable {
            sync_log(db, l).map(|()| {
                stats.commits.fetch_add(1, Ordering::Relaxed);
            })
        } else {
            stats.deferred_commits.fetch_add(1, Ordering::Relaxed);
            Ok(())
        };
        // The checkpoint comes after the batch's record, not in its place: see
        // `checkpoint_now`. The batch stands whether or not it succeeds (its record is
        // durable, or it was deferred); a failed one is tried again after the next batch.
        if r.is_ok() && l.wal.checkpoint_due() {
            match checkpoint_now(db, l) {
                Ok(()) => {
                    stats.checkpoints.fetch_add(1, Ordering::Relaxed);
                }
                Err(e) => tracing::warn!("metadata store: checkpoint failed: {e}"),
            }
        }
        break 'attempt r;
    };
    stats.jobs.fetch_add(n as u64, Ordering::Relaxed);
    stats.largest_batch.fetch_max(n as u64, Ordering::Relaxed);
    for (job, outcome) in batch.drain(..).zip(outcomes) {
        let r = match (&final_result, outcome) {
            (Err(e), _) => Err(e.clone()),
            (Ok(()), Outcome::Done) => Ok(()),
            (Ok(()), Outcome::Rejected(e)) => Err(e),
            (Ok(()), Outcome::Pending) => Err(StoreError::Internal("job was not run")),
        };
        job.finish(r);
    }
}

/// Makes the log's records durable; if that fails, makes everything durable in redb instead.
fn sync_log(db: &Database, l: &mut Log) -> Result<(), StoreError> {
    match l.wal.sync() {
        Ok(()) => Ok(()),
        Err(e) => {
            tracing::warn!("metadata store: write-ahead log sync failed ({e}); committing durably");
            checkpoint_now(db, l)
        }
    }
}

/// A checkpoint: the log's records durable, then a durable empty redb commit (everything
/// committed so far is durable), then a new round of the log.
///
/// In this order, a crash at any point leaves a log whose replay changes nothing that redb's
/// last durable commit holds: until the new round's first record is durable, the log holds
/// every batch up to the last one redb committed, so replaying it (absolute writes, in
/// order) ends where redb is. A checkpoint that committed a batch durably in place of its
/// record would let a crash before the new round replay older records over that batch's
/// writes, undoing them.
fn checkpoint_now(db: &Database, l: &mut Log) -> Result<(), StoreError> {
    if let Err(e) = l.wal.sync() {
        // redb's durable commit below is what makes the batches durable now.
        tracing::warn!("metadata store: write-ahead log sync failed at a checkpoint: {e}");
    }
    durable_empty_commit(db)?;
    if let Err(e) = l.wal.checkpointed() {
        tracing::warn!("metadata store: starting a new write-ahead log round failed: {e}");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::wal;
    use super::*;
    use redb::ReadableDatabase;
    use std::time::Duration;

    const T: TableDefinition<u64, u64> = TableDefinition::new("t");

    fn db() -> (tempfile::TempDir, Arc<Database>) {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::create(dir.path().join("db")).unwrap();
        (dir, Arc::new(db))
    }

    fn read(db: &Database, k: u64) -> Option<u64> {
        let r = db.begin_read().unwrap();
        let t = r.open_table(T).ok()?;
        t.get(k).unwrap().map(|g| g.value())
    }

    /// A job that writes `k -> v`, failing (after its write, if `late`) when `fail` is set.
    fn put(
        k: u64,
        v: u64,
        fail: bool,
        late: bool,
    ) -> impl FnMut(&Txn<'_>) -> Result<u64, StoreError> + Send + 'static {
        move |tx| {
            let mut t = tx.open(T)?;
            if fail && !late {
                return Err(StoreError::Exist);
            }
            t.write().insert(k, v)?;
            if fail {
                return Err(StoreError::Internal("late failure"));
            }
            Ok(v)
        }
    }

    /// The checkpoint of the second batch commits redb durably; the process dies before the
    /// log's next round begins. The log's records replayed over that commit must not undo
    /// it (they would if the checkpoint had committed its batch in place of logging it).
    #[test]
    fn a_crash_right_after_a_checkpoint_undoes_nothing_on_replay() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db");
        let log_path = wal::path_for(&path);
        let db = Arc::new(Database::create(&path).unwrap());
        let mut wal = Wal::open(&log_path, 2).unwrap();
        wal.die_before_next_round();
        let c = Committer::start(db.clone(), 64, Some(wal)).unwrap();
        let set = |v: u64| {
            move |tx: &Txn<'_>| -> Result<(), StoreError> {
                tx.open(T)?.write().insert(1, v)?;
                Ok(())
            }
        };
        c.submit(set(1)).wait().unwrap();
        c.submit(set(2)).wait().unwrap();
        assert_eq!(c.stats.snapshot().checkpoints, 1);
        drop(c);
        drop(db);
        assert_eq!(wal::records_in(&log_path), 2);
        let db = Database::create(&path).unwrap();
        assert_eq!(read(&db, 1), Some(2), "redb's durable commit");
        let replayed = wal::replay_with(&db, &log_path, |w, op| wal::apply_to(w, T, op));
        assert_eq!(replayed.unwrap(), 2);
        assert_eq!(read(&db, 1), Some(2), "after the replay");
    }

    #[test]
    fn results_arrive_after_a_durable_commit() {
        let (_d, db) = db();
        let c = Committer::start(db.clone(), 64, None).unwrap();
        assert_eq!(c.submit(put(1, 10, false, false)).wait().unwrap(), 10);
        assert_eq!(read(&db, 1), Some(10));
        assert_eq!(c.stats.snapshot().commits, 1);
    }

    #[test]
    fn a_batch_that_writes_nothing_is_not_committed() {
        let (_d, db) = db();
        let c = Committer::start(db.clone(), 64, None).unwrap();
        c.submit(put(1, 10, false, false)).wait().unwrap();
        let get = |tx: &Txn<'_>| -> Result<Option<u64>, StoreError> {
            use redb::ReadableTable;
            let t = tx.open(T)?;
            let v = t.read().get(1)?.map(|v| v.value());
            Ok(v)
        };
        assert_eq!(c.submit(get).wait().unwrap(), Some(10));
        // A rejection before any write is no change either.
        assert!(matches!(
            c.submit(put(2, 2, true, false)).wait(),
            Err(StoreError::Exist)
        ));
        let s = c.stats.snapshot();
        assert_eq!((s.commits, s.jobs), (1, 3), "only the first batch synced");
        assert_eq!(read(&db, 1), Some(10));
    }

    #[test]
    fn a_rejected_job_leaves_the_others_in_its_batch_alone() {
        let (_d, db) = db();
        let c = Committer::start(db.clone(), 64, None).unwrap();
        let p: Vec<_> = (0..20)
            .map(|i| c.submit(put(i, i, i % 3 == 0, false)))
            .collect();
        for (i, p) in p.into_iter().enumerate() {
            let r = p.wait();
            let i = i as u64;
            if matches!(i % 3, 0) {
                assert!(matches!(r, Err(StoreError::Exist)));
                assert_eq!(read(&db, i), None);
            } else {
                assert_eq!(r.unwrap(), i);
                assert_eq!(read(&db, i), Some(i));
            }
        }
    }

    #[test]
    fn a_job_failing_after_its_writes_is_rolled_back_alone() {
        let (_d, db) = db();
        let c = Committer::start(db.clone(), 64, None).unwrap();
        let p: Vec<_> = (0..20)
            .map(|i| c.submit(put(i, i, i % 5 == 2, true)))
            .collect();
        for (i, p) in p.into_iter().enumerate() {
            let r = p.wait();
            let i = i as u64;
            if i % 5 == 2 {
                assert!(matches!(r, Err(StoreError::Internal(_))));
                assert_eq!(read(&db, i), None, "the failed job's write is gone");
            } else {
                assert_eq!(r.unwrap(), i);
                assert_eq!(read(&db, i), Some(i));
            }
        }
    }

    #[test]
    fn a_panicking_job_fails_alone_and_the_committer_lives_on() {
        let (_d, db) = db();
        let c = Committer::start(db.clone(), 64, None).unwrap();
        let a = c.submit(put(1, 1, false, false));
        let b = c.submit(|tx: &Txn<'_>| -> Result<(), StoreError> {
            let mut t = tx.open(T)?;
            t.write().insert(2, 2)?;
            panic!("a bug in a job");
        });
        let d = c.submit(put(3, 3, false, false));
        assert_eq!(a.wait().unwrap(), 1);
        assert!(matches!(b.wait(), Err(StoreError::Internal(_))));
        assert_eq!(d.wait().unwrap(), 3);
        assert_eq!(read(&db, 2), None);
        assert_eq!(c.submit(put(4, 4, false, false)).wait().unwrap(), 4);
    }

    #[test]
    fn max_batch_of_one_commits_every_job_alone() {
        let (_d, db) = db();
        let c = Committer::start(db.clone(), 1, None).unwrap();
        let p: Vec<_> = (0..10).map(|i| c.submit(put(i, i, false, false))).collect();
        for p in p {
            p.wait().unwrap();
        }
        let s = c.stats.snapshot();
        assert_eq!((s.commits, s.jobs, s.largest_batch), (10, 10, 1));
    }

    #[test]
    fn queued_jobs_share_commits() {
        let (_d, db) = db();
        let c = Committer::start(db.clone(), 256, None).unwrap();
        let p: Vec<_> = (0..100)
            .map(|i| c.submit(put(i, i, false, false)))
            .collect();
        for p in p {
            p.wait().unwrap();
        }
        let s = c.stats.snapshot();
        assert_eq!(s.jobs, 100);
        assert!(s.commits < 100, "{s:?}");
    }

    /// The name of the thread a job runs on, as its result.
    fn where_run() -> impl FnMut(&Txn<'_>) -> Result<Option<String>, StoreError> + Send + 'static {
        |tx| {
            tx.open(T)?.write().insert(0, 0)?;
            Ok(std::thread::current().name().map(str::to_owned))
        }
    }

    /// Submits lone jobs until one runs on the waiting thread (the committer thread may
    /// still be looking at the queue after its start or its last batch, and then takes a
    /// job queued meanwhile, as it may); returns how many were submitted.
    fn until_led(c: &Committer) -> u64 {
        let me = std::thread::current().name().map(str::to_owned);
        for n in 1..=100 {
            if c.submit(where_run()).wait().unwrap() == me {
                return n;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        panic!("an idle store never ran a job on the thread that waited for it");
    }

    #[test]
    fn an_idle_store_runs_a_job_on_the_thread_that_waits_for_it() {
        let (_d, db) = db();
        let c = Committer::start(db.clone(), 256, None).unwrap();
        let jobs = until_led(&c);
        assert_eq!(c.stats.snapshot().commits, jobs, "each alone in its commit");
    }

    #[test]
    fn queued_jobs_go_to_the_committer_thread_and_unwaited_ones_still_run() {
        let (_d, db) = db();
        let c = Committer::start(db.clone(), 256, None).unwrap();
        // Two queued: the waiter of the first leaves both to the thread, in one batch.
        let first = c.submit(where_run());
        let second = c.submit(where_run());
        let thread = Some("mds-store-commit".to_owned());
        assert_eq!(first.wait().unwrap(), thread);
        assert_eq!(second.wait().unwrap(), thread);
        // Dropped without a wait: the thread runs it all the same.
        drop(c.submit(put(7, 8, false, false)));
        let start = std::time::Instant::now();
        while read(&db, 7) != Some(8) {
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "the dropped job never ran"
            );
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    #[test]
    fn after_a_busy_batch_the_thread_runs_the_next_one() {
        let (_d, db) = db();
        let c = Committer::start(db.clone(), 256, None).unwrap();
        let p: Vec<_> = (0..3).map(|_| c.submit(where_run())).collect();
        for p in p {
            p.wait().unwrap();
        }
        // The last batch held several jobs: a lone job waits for the thread too, until a
        // batch of one shows the store idle again.
        let thread = Some("mds-store-commit".to_owned());
        assert_eq!(c.submit(where_run()).wait().unwrap(), thread);
        until_led(&c);
    }

    #[tokio::test]
    async fn deferred_jobs_are_visible_at_once_and_durable_after_one_sync() {
        let (_d, db) = db();
        let c = Arc::new(Committer::start(db.clone(), 64, None).unwrap());
        let c2 = c.clone();
        tokio::spawn(async move {
            let d = c2.defer_here().expect("inside a task");
            assert!(!d.take_submitted());
            for i in 0..3 {
                c2.submit(put(i, i + 10, false, false)).await.unwrap();
            }
            assert!(d.take_submitted());
            let s = c2.stats.snapshot();
            assert_eq!((s.commits, s.deferred_commits), (0, 3), "no fsync yet");
            c2.sync().await.unwrap();
            assert_eq!(c2.stats.snapshot().commits, 1, "one fsync for the three");
            // Nothing left unsynced: the next barrier costs nothing.
            c2.sync().await.unwrap();
            assert_eq!(c2.stats.snapshot().commits, 1);
            assert!(!d.take_submitted());
        })
        .await
        .unwrap();
        assert_eq!(read(&db, 2), Some(12));
        // Outside the registered task, jobs are durable again.
        c.submit(put(9, 9, false, false)).await.unwrap();
        assert_eq!(c.stats.snapshot().commits, 2);
    }

    #[tokio::test]
    async fn a_task_that_stops_deferring_is_covered_by_its_durable_job_unless_it_fails() {
        let (_d, db) = db();
        let c = Arc::new(Committer::start(db.clone(), 64, None).unwrap());
        let c2 = c.clone();
        tokio::spawn(async move {
            let d = c2.defer_here().unwrap();
            c2.submit(put(1, 1, false, false)).await.unwrap();
            // The last changing operation: its job is durable and covers the first.
            d.defer(false);
            c2.submit(put(2, 2, false, false)).await.unwrap();
            let s = c2.stats.snapshot();
            assert_eq!((s.commits, s.deferred_commits), (1, 1));
            assert!(!d.take_submitted(), "nothing left to sync");
            // A durable job that fails covers nothing: the deferred one before it still
            // needs the sync.
            d.defer(true);
            c2.submit(put(3, 3, false, false)).await.unwrap();
            d.defer(false);
            c2.submit(put(4, 4, true, false)).await.unwrap_err();
            assert!(d.take_submitted(), "the deferred job is left to sync");
            // Deferred again after a durable one: that one is uncovered.
            c2.submit(put(5, 5, false, false)).await.unwrap();
            d.defer(true);
            c2.submit(put(6, 6, false, false)).await.unwrap();
            assert!(d.take_submitted());
        })
        .await
        .unwrap();
        assert_eq!(read(&db, 6), Some(6));
    }

    #[tokio::test]
    async fn a_durable_commit_covers_earlier_deferred_ones() {
        let (_d, db) = db();
        let c = Arc::new(Committer::start(db.clone(), 64, None).unwrap());
        let c2 = c.clone();
        tokio::spawn(async move {
            let _d = c2.defer_here().unwrap();
            c2.submit(put(1, 1, false, false)).await.unwrap();
        })
        .await
        .unwrap();
        // The deregistered task's change is made durable by the next durable job's commit,
        // after which a barrier has nothing to do.
        c.submit(put(2, 2, false, false)).await.unwrap();
        c.sync().await.unwrap();
        let s = c.stats.snapshot();
        assert_eq!((s.commits, s.deferred_commits), (1, 1));
    }

    #[test]
    fn deferred_changes_reach_the_disk_when_the_committer_closes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db");
        {
            let db = Arc::new(Database::create(&path).unwrap());
            let c = Committer::start(db.clone(), 64, None).unwrap();
            let rt = tokio::runtime::Builder::new_current_thread()
                .build()
                .unwrap();
            rt.block_on(async {
                let c = Arc::new(c);
                let c2 = c.clone();
                tokio::spawn(async move {
                    let _d = c2.defer_here().unwrap();
                    c2.submit(put(7, 70, false, false)).await.unwrap();
                })
                .await
                .unwrap();
                assert_eq!(c.stats.snapshot().commits, 0);
                Arc::try_unwrap(c).ok().expect("one handle left")
            });
        }
        let db = Database::create(&path).unwrap();
        assert_eq!(read(&db, 7), Some(70));
    }

    #[tokio::test]
    async fn a_second_registration_of_a_task_leaves_the_first_in_charge() {
        let (_d, db) = db();
        let c = Arc::new(Committer::start(db, 8, None).unwrap());
        let c2 = c.clone();
        tokio::spawn(async move {
            let first = c2.defer_here().unwrap();
            assert!(c2.defer_here().is_none());
            c2.submit(put(1, 1, false, false)).await.unwrap();
            assert!(first.take_submitted());
            assert_eq!(c2.stats.snapshot().commits, 0);
        })
        .await
        .unwrap();
    }

    #[test]
    fn no_deferral_outside_a_task() {
        let (_d, db) = db();
        let c = Committer::start(db, 8, None).unwrap();
        assert!(c.defer_here().is_none());
    }

    #[tokio::test]
    async fn pending_can_be_awaited() {
        let (_d, db) = db();
        let c = Committer::start(db.clone(), 8, None).unwrap();
        assert_eq!(c.submit(put(5, 6, false, false)).await.unwrap(), 6);
        assert!(matches!(
            Pending::<u8>::ready(Err(StoreError::NoEnt)).await,
            Err(StoreError::NoEnt)
        ));
    }
}

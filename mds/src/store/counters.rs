//! The store's two sequences, the change attribute (`counters/change`) and the file id
//! (`counters/next_fileid`), handed out from memory and reserved on disk in blocks.
//!
//! Every change takes a change value, and every create a file id. Writing the `counters`
//! table for each made every commit write one more table, about 8 us of a commit's CPU on
//! the development machine (issue 22). Instead the table holds a **ceiling**: no value above
//! it has been handed out. The next value comes from memory ([`Counters`], the last value
//! handed out since the store was opened); only when it would pass the ceiling does the job
//! raise the ceiling by [`BLOCK`], writing the table in its own transaction. So the ceiling
//! is durable no later than the change that uses a value below it, and after a restart (or a
//! crash) the sequence resumes above the ceiling: values only ever grow, and a restart skips
//! at most a block.
//!
//! A job reads the ceiling in its own transaction, not a copy in memory, so a batch that is
//! aborted and replayed (see [`super::commit`]) takes the ceiling back with it and the next
//! value above it reserves again; the values handed out in the aborted attempt are skipped.
//!
//! The on-disk meaning is the same as before the blocks: `change` is at least the largest
//! change value handed out and `next_fileid` above every file id handed out, so a store
//! written by either version opens with the other.

use std::sync::{Mutex, PoisonError};

use redb::ReadableTable;

use super::commit::Tbl;
use super::schema::{K_CHANGE, K_NEXT_FILEID};
use super::StoreError;

/// How many values one write of the ceiling reserves.
pub(super) const BLOCK: u64 = 1024;

/// The last value of each sequence handed out since the store was opened (`None` before the
/// first: the ceiling on disk stands for it, as every value up to it may have been used).
#[derive(Debug, Default)]
pub(crate) struct Counters {
    change: Mutex<Option<u64>>,
    fileid: Mutex<Option<u64>>,
}

/// A sequence: its key in `counters`, and how its stored value relates to the ceiling.
#[derive(Clone, Copy)]
pub(super) enum Seq {
    /// `counters/change`: the largest value that may have been handed out.
    Change,
    /// `counters/next_fileid`: one above the largest file id that may have been handed out.
    FileId,
}

impl Seq {
    fn key(self) -> &'static str {
        match self {
            Seq::Change => K_CHANGE,
            Seq::FileId => K_NEXT_FILEID,
        }
    }

    /// How far the stored value sits above the ceiling: `next_fileid` names the next id,
    /// `change` the last value.
    fn above_ceiling(self) -> u64 {
        match self {
            Seq::Change => 0,
            Seq::FileId => 1,
        }
    }

    /// The ceiling a stored value stands for.
    fn ceiling(self, stored: u64) -> Result<u64, StoreError> {
        stored
            .checked_sub(self.above_ceiling())
            .ok_or(StoreError::Corrupt("next_fileid is 0"))
    }

    /// The value stored for a ceiling.
    fn stored(self, ceiling: u64) -> Result<u64, StoreError> {
        ceiling
            .checked_add(self.above_ceiling())
            .ok_or(StoreError::Corrupt("counter overflow"))
    }
}

impl Counters {
    fn slot(&self, seq: Seq) -> &Mutex<Option<u64>> {
        match seq {
            Seq::Change => &self.change,
            Seq::FileId => &self.fileid,
        }
    }

    /// The next value of `seq`, raising its ceiling in `table` (a write) when the value
    /// passes it. Jobs run one at a time, so the lock is never contended; it only makes the
    /// memory shareable between the threads that run batches.
    pub(super) fn take(
        &self,
        table: &mut Tbl<'_, &'static str, u64>,
        seq: Seq,
    ) -> Result<u64, StoreError> {
        let ceiling = seq.ceiling(stored(table, seq)?)?;
        let mut last = self
            .slot(seq)
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let v = last
            .unwrap_or(ceiling)
            .checked_add(1)
            .ok_or(StoreError::Corrupt("counter overflow"))?;
        if v > ceiling {
            let raised = seq.stored(v.saturating_add(BLOCK - 1))?;
            table.write().insert(seq.key(), raised)?;
        }
        *last = Some(v);
        Ok(v)
    }

    /// The largest value of `seq` handed out since the store was opened, or `None` if none
    /// was.
    pub(super) fn last(&self, seq: Seq) -> Option<u64> {
        *self
            .slot(seq)
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

/// The value stored for `seq`.
fn stored(table: &Tbl<'_, &'static str, u64>, seq: Seq) -> Result<u64, StoreError> {
    table
        .read()
        .get(seq.key())?
        .map(|g| g.value())
        .ok_or(StoreError::Corrupt("counter missing"))
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use redb::{Database, ReadableDatabase};

    use super::*;
    use crate::store::commit::{Committer, Txn};
    use crate::store::schema::COUNTERS;

    /// A committer over a fresh database whose counters are those of a new store.
    fn start() -> (tempfile::TempDir, Arc<Database>, Committer) {
        let dir = tempfile::tempdir().unwrap();
        let db = Arc::new(Database::create(dir.path().join("db")).unwrap());
        let c = Committer::start(db.clone(), 8, None).unwrap();
        c.submit(|tx: &Txn<'_>| {
            let mut t = tx.open(COUNTERS)?;
            t.write().insert(K_CHANGE, 1)?;
            t.write().insert(K_NEXT_FILEID, 2)?;
            Ok(())
        })
        .wait()
        .unwrap();
        (dir, db, c)
    }

    fn on_disk(db: &Database, key: &str) -> u64 {
        let r = db.begin_read().unwrap();
        let t = r.open_table(COUNTERS).unwrap();
        let v = t.get(key).unwrap().unwrap().value();
        v
    }

    fn take(c: &Committer, seq: Seq) -> u64 {
        c.submit(move |tx: &Txn<'_>| tx.counters().take(&mut tx.open(COUNTERS)?, seq))
            .wait()
            .unwrap()
    }

    #[test]
    fn a_block_of_values_costs_one_write_of_the_ceiling() {
        let (_d, db, c) = start();
        let commits = c.stats.snapshot().commits;
        assert_eq!(take(&c, Seq::Change), 2);
        assert_eq!(on_disk(&db, K_CHANGE), 2 + BLOCK - 1);
        assert_eq!(take(&c, Seq::FileId), 2, "next_fileid named the next id");
        assert_eq!(on_disk(&db, K_NEXT_FILEID), 2 + BLOCK);
        assert_eq!(c.stats.snapshot().commits, commits + 2);
        for v in 3..=BLOCK + 1 {
            assert_eq!(take(&c, Seq::Change), v);
        }
        assert_eq!(
            c.stats.snapshot().commits,
            commits + 2,
            "values below the ceiling write nothing, so their batches commit nothing"
        );
        assert_eq!(take(&c, Seq::Change), BLOCK + 2);
        assert_eq!(on_disk(&db, K_CHANGE), 2 * BLOCK + 1);
        assert_eq!(c.counters().last(Seq::Change), Some(BLOCK + 2));
    }

    #[test]
    fn a_new_open_resumes_above_the_ceiling() {
        let (_d, db, c) = start();
        assert_eq!(take(&c, Seq::Change), 2);
        assert_eq!(take(&c, Seq::FileId), 2);
        drop(c);
        let c = Committer::start(db.clone(), 8, None).unwrap();
        assert_eq!(c.counters().last(Seq::Change), None);
        assert_eq!(
            take(&c, Seq::Change),
            2 + BLOCK,
            "above every value reserved"
        );
        assert_eq!(take(&c, Seq::FileId), 2 + BLOCK);
        assert_eq!(on_disk(&db, K_CHANGE), 2 * BLOCK + 1);
        assert_eq!(on_disk(&db, K_NEXT_FILEID), 2 * BLOCK + 2);
    }

    #[test]
    fn a_reservation_undone_by_an_aborted_batch_is_made_again() {
        let (_d, db, c) = start();
        // Reserves a block, then fails after writing: the batch is aborted and replayed
        // without it, so the raised ceiling never reaches the disk.
        let r = c
            .submit(|tx: &Txn<'_>| {
                tx.counters().take(&mut tx.open(COUNTERS)?, Seq::Change)?;
                Err::<(), _>(StoreError::Internal("late failure"))
            })
            .wait();
        assert!(r.is_err());
        assert_eq!(
            on_disk(&db, K_CHANGE),
            1,
            "the reservation went with the abort"
        );
        assert_eq!(c.counters().last(Seq::Change), Some(2));
        // The next value is above the lost one, and is reserved again before use.
        assert_eq!(take(&c, Seq::Change), 3);
        assert_eq!(on_disk(&db, K_CHANGE), 3 + BLOCK - 1);
    }
}

//! Copies of mirrored files that missed writes (table `stale_copies`, (file id, window
//! position) -> the file's export, for the handle a layout recall names): a copy is marked before the MDS
//! acknowledges a write, truncate or layout that leaves it behind (its data server was
//! down, failed the call, or is reported failing), so no later read trusts it, across
//! restarts too; re-silvering ([`crate::pnfs::mirrors`]) copies a good copy over it and then
//! removes the mark.
//!
//! Marks of removed files are left for the re-silver task, which drops them when it finds
//! the file gone (removal is on the hot path; a stale copy is rare).

use redb::{ReadableTable, TableDefinition};

use super::commit::Txn;
use super::{Pending, Store, StoreError};

/// `stale_copies`: (file id, window position of the copy) -> the file's export id.
pub(super) const STALE_COPIES: TableDefinition<(u64, u32), u64> =
    TableDefinition::new("stale_copies");

fn mark(tx: &Txn<'_>, fileid: u64, positions: &[u32], export: u64) -> Result<(), StoreError> {
    let mut t = tx.open(STALE_COPIES)?;
    let missing: Vec<u32> = {
        let r = t.read();
        let mut v = Vec::new();
        for &p in positions {
            if r.get((fileid, p))?.is_none() {
                v.push(p);
            }
        }
        v
    };
    for p in missing {
        t.write().insert((fileid, p), export)?;
    }
    Ok(())
}

impl Store {
    /// Every stale copy on record, as (file id, window position, export), in that order.
    pub fn stale_copies(&self) -> Result<Vec<(u64, u32, u16)>, StoreError> {
        let r = self.read()?;
        let t = r.open_table(STALE_COPIES)?;
        let mut out = Vec::new();
        for e in t.iter()? {
            let (k, v) = e?;
            let (fileid, position) = k.value();
            out.push((fileid, position, v.value() as u16));
        }
        Ok(out)
    }

    /// Marks copies `positions` of file `fileid` of `export` stale, durably before the
    /// result (no sync when all are marked already).
    pub fn mark_stale(&self, fileid: u64, export: u16, positions: Vec<u32>) -> Pending<()> {
        self.write(move |tx| mark(tx, fileid, &positions, u64::from(export)))
    }

    /// Removes the stale mark of copy `position` of `fileid` (re-silvered, or the file is
    /// gone), durably before the result.
    pub fn clear_stale(&self, fileid: u64, position: u32) -> Pending<()> {
        self.write(move |tx| {
            let mut t = tx.open(STALE_COPIES)?;
            if t.read().get((fileid, position))?.is_some() {
                t.write().remove((fileid, position))?;
            }
            Ok(())
        })
    }
}

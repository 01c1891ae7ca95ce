//! Files whose data servers may hold bytes past the recorded size: every file a client was
//! given an RW layout of, from that LAYOUTGET until the MDS has settled its size with the
//! data servers (table `layout_writes`, file id -> epoch of the boot that marked it).
//!
//! A client writing through a layout tells the MDS the new size only with LAYOUTCOMMIT
//! (RFC 8881 section 12.5.4), and the Linux client forgets a pending LAYOUTCOMMIT when the
//! MDS restarts (it drops every layout when it re-establishes its client id, and never sends
//! `loca_reclaim`). Without the mark, a file written and committed on the data servers just
//! before a kill -9 of the MDS would come back with its old size. With it, the restarted MDS
//! knows which files to ask the data servers about ([`crate::pnfs::settle`]): their size is the
//! larger of the recorded one and what the objects show, as it is while RW layouts are out.
//!
//! The mark is durable before the LAYOUTGET reply that grants RW, folded into the transaction
//! that fixes a new file's stripe set (so creating and writing a file costs no extra sync),
//! and a no-op (no sync: the committer skips batches that write nothing) when the file is
//! marked already. Settling removes it once no RW layout is out, in the same transaction as
//! any size the data servers showed, and only if nothing changed the file since the data
//! servers were asked (its change attribute).

use redb::{ReadableTable, ReadableTableMetadata, TableDefinition};

use nfs_proto::nfs4::Nfstime4;

use super::commit::Txn;
use super::ns::Ns;
use super::schema::load;
use super::{Pending, Store, StoreError};

/// `layout_writes`: file id -> epoch of the boot that marked it (for the operator; the
/// presence is what counts).
pub(super) const LAYOUT_WRITES: TableDefinition<u64, u64> = TableDefinition::new("layout_writes");

/// What settling a file did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Settled {
    /// The mark is gone; the recorded size was already at least the data servers'.
    Kept,
    /// The mark is gone and the recorded size grew to the data servers' (bytes written
    /// through a layout that no LAYOUTCOMMIT reported).
    Grown {
        /// The new size.
        size: u64,
    },
    /// The file no longer exists: its mark is gone.
    Gone,
    /// Not marked (settled already).
    NotMarked,
    /// Left marked: an RW layout is out again, or the file changed since the data servers
    /// were asked. Settle it later.
    Busy,
}

/// Marks `fileid` in `tx` unless it is marked; true if it was not (a write happened).
pub(super) fn mark(tx: &Txn<'_>, fileid: u64, epoch: u64) -> Result<bool, StoreError> {
    let mut t = tx.open(LAYOUT_WRITES)?;
    if t.read().get(fileid)?.is_some() {
        return Ok(false);
    }
    t.write().insert(fileid, epoch)?;
    Ok(true)
}

/// The committer job of [`Store::settle_layout_writes`].
fn settle(
    tx: &Txn<'_>,
    fileid: u64,
    seen_change: u64,
    ds_size: u64,
    now: Nfstime4,
    busy: &dyn Fn() -> bool,
) -> Result<Settled, StoreError> {
    let mut marks = tx.open(LAYOUT_WRITES)?;
    if marks.read().get(fileid)?.is_none() {
        return Ok(Settled::NotMarked);
    }
    let mut ns = Ns::open(tx)?;
    let mut rec = match load(ns.inodes.read(), fileid) {
        Ok(rec) => rec,
        Err(StoreError::Stale(_)) => {
            marks.write().remove(fileid)?;
            return Ok(Settled::Gone);
        }
        Err(e) => return Err(e),
    };
    if busy() || rec.change != seen_change {
        return Ok(Settled::Busy);
    }
    let settled = if ds_size > rec.size {
        let change = ns.next_change()?;
        rec.size = ds_size;
        rec.space_used = rec.space_used.max(ds_size);
        rec.mtime = now;
        rec.ctime = now;
        rec.change = change;
        ns.put(fileid, &rec)?;
        Settled::Grown { size: ds_size }
    } else {
        Settled::Kept
    };
    marks.write().remove(fileid)?;
    Ok(settled)
}

impl Store {
    /// Marks `fileid` as possibly written through an RW layout, durably before the result;
    /// true if it was not marked yet. A file that is marked already costs no sync.
    pub fn mark_layout_writes(&self, fileid: u64) -> Pending<bool> {
        let epoch = self.boot_epoch();
        self.write(move |tx| mark(tx, fileid, epoch))
    }

    /// Settles the size of marked file `fileid` with what its data servers showed
    /// (`ds_size`, asked while its change attribute was `seen_change`): the recorded size
    /// grows to `ds_size` if that is larger, and the mark goes. Unless `busy()` (checked in
    /// the transaction, so ordered with every LAYOUTGET's mark) says an RW layout is out
    /// again, or the file changed since: then nothing changes ([`Settled::Busy`]).
    pub fn settle_layout_writes(
        &self,
        fileid: u64,
        seen_change: u64,
        ds_size: u64,
        now: Nfstime4,
        busy: impl Fn() -> bool + Send + 'static,
    ) -> Pending<Settled> {
        self.write(move |tx| settle(tx, fileid, seen_change, ds_size, now, &busy))
    }

    /// Every marked file, in file id order.
    pub fn layout_writes(&self) -> Result<Vec<u64>, StoreError> {
        let r = self.read()?;
        let t = r.open_table(LAYOUT_WRITES)?;
        let mut out = Vec::with_capacity(t.len()? as usize);
        for entry in t.iter()? {
            out.push(entry?.0.value());
        }
        Ok(out)
    }
}

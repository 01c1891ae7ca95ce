//! Files open after their last name went (RFC 8881 section 18.25.4: the server may keep an
//! open file until its last CLOSE, as POSIX `unlink` keeps an open file). The store keeps such
//! a file as an *orphan* (link count 0, listed durably); this module decides, under the same
//! lock as the opens, when it may be deleted.
//!
//! ```text
//!  REMOVE/RENAME orphaned f ─> unlinked(f) ─┬─ f open ──> Pinned ── last open goes ──┐
//!  (after the store commit)                 │            (CLOSE, lease expiry)       │
//!  grace over after a restart ─> same       └─ not open ─> Reaping <─────────────────┘
//!                                                          │  listed by take_released
//!                                     caller: data, then store.delete_orphan(f), then reaped(f)
//! ```
//!
//! Deciding after the store commit and under the opens lock makes the two orders of REMOVE
//! and the last CLOSE safe: either REMOVE sees the file still open and pins it (then that
//! CLOSE releases it), or it sees it closed and deletes it itself. A file being deleted
//! (`Reaping`) is stale for new opens and for PUTFH, even before its inode is gone.

use std::collections::HashMap;

/// What holds an orphan.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Hold {
    /// Open: kept until the last open goes.
    Pinned,
    /// No open left: the caller is deleting it.
    Reaping,
}

/// What the caller must do with a file that just became an orphan.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum OrphanFate {
    /// It is open: keep it; it is listed by [`Orphans::take_released`] when its last open
    /// goes.
    Kept,
    /// Not open: delete it now (data, then the store's orphan), then call
    /// [`Orphans::reaped`].
    Delete,
}

/// The orphans the server knows of in this boot, and those released since last asked.
#[derive(Debug, Default)]
pub struct Orphans {
    held: HashMap<u64, Hold>,
    released: Vec<u64>,
}

impl Orphans {
    /// `file` became an orphan; `open` says whether any open of it exists now.
    pub(super) fn unlinked(&mut self, file: u64, open: bool) -> OrphanFate {
        if open {
            // Already pinned or reaping: keep what is there (a reaping file has no opens).
            self.held.entry(file).or_insert(Hold::Pinned);
            OrphanFate::Kept
        } else {
            self.held.insert(file, Hold::Reaping);
            OrphanFate::Delete
        }
    }

    /// The last open of `file` went: a pinned orphan is released for deletion.
    pub(super) fn last_open_gone(&mut self, file: u64) {
        if let Some(h @ Hold::Pinned) = self.held.get_mut(&file) {
            *h = Hold::Reaping;
            self.released.push(file);
        }
    }

    /// Orphans whose last open went since the last call; the caller deletes each (data,
    /// then the store's orphan) and then calls [`reaped`](Self::reaped).
    pub fn take_released(&mut self) -> Vec<u64> {
        std::mem::take(&mut self.released)
    }

    /// Whether `file` is being deleted: its filehandle is stale already.
    pub fn is_reaping(&self, file: u64) -> bool {
        self.held.get(&file) == Some(&Hold::Reaping)
    }

    /// Whether `file` is an orphan kept open.
    pub fn is_pinned(&self, file: u64) -> bool {
        self.held.get(&file) == Some(&Hold::Pinned)
    }

    /// The deletion of `file` is over (or failed and was left for the next restart).
    pub fn reaped(&mut self, file: u64) {
        if self.is_reaping(file) {
            self.held.remove(&file);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_orphan_that_is_not_open_is_deleted_at_once_and_stale_meanwhile() {
        let mut o = Orphans::default();
        assert_eq!(o.unlinked(7, false), OrphanFate::Delete);
        assert!(o.is_reaping(7));
        assert!(
            o.take_released().is_empty(),
            "the caller deletes it already"
        );
        o.reaped(7);
        assert!(!o.is_reaping(7));
    }

    #[test]
    fn an_open_orphan_is_released_once_when_its_last_open_goes() {
        let mut o = Orphans::default();
        assert_eq!(o.unlinked(7, true), OrphanFate::Kept);
        assert!(o.is_pinned(7) && !o.is_reaping(7));
        o.last_open_gone(8);
        assert!(o.take_released().is_empty(), "not an orphan");
        o.last_open_gone(7);
        assert!(o.is_reaping(7));
        assert_eq!(o.take_released(), [7]);
        o.last_open_gone(7);
        assert!(o.take_released().is_empty(), "released once");
        o.reaped(7);
        assert!(!o.is_pinned(7) && !o.is_reaping(7));
    }

    #[test]
    fn reaped_leaves_a_pinned_orphan_alone() {
        let mut o = Orphans::default();
        o.unlinked(7, true);
        o.reaped(7);
        assert!(o.is_pinned(7));
    }
}

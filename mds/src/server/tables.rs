//! The state tables handle: opens (with locks and delegations), layouts, and server-side
//! copies.
//!
//! Why a handle of its own: the tables are sans-IO and each sits behind one mutex; taking
//! the lock through a method here names, in one place, how a poisoned lock is treated. The
//! operations a client drives fail loudly on a poisoned table ([`StateTables::opens`]); the
//! background tasks and the client reaper keep going with what the table holds
//! ([`StateTables::opens_recovered`]), as they did when every caller locked the field itself.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use crate::state::copies::Copies;
use crate::state::layout::LayoutTable;
use crate::state::open::StateTable;

/// The protocol state tables.
pub struct StateTables {
    /// Opens and locks (and delegations).
    opens: Mutex<StateTable>,
    /// Layouts handed out (pNFS).
    layouts: Mutex<LayoutTable>,
    /// Asynchronous server-side copies (COPY, OFFLOAD_STATUS, OFFLOAD_CANCEL) and the copy
    /// counters. Shared: the copy engine's pieces run as tasks of their own.
    copies: Arc<Copies>,
    /// How long a holder has to return a recalled delegation or layout (one lease).
    recall_timeout: Duration,
}

impl StateTables {
    /// The tables, empty.
    pub(crate) fn new(
        opens: StateTable,
        layouts: LayoutTable,
        copies: Copies,
        recall_timeout: Duration,
    ) -> Self {
        Self {
            opens: Mutex::new(opens),
            layouts: Mutex::new(layouts),
            copies: Arc::new(copies),
            recall_timeout,
        }
    }

    /// How long a holder has to return a recalled delegation or layout before it is
    /// revoked: one lease.
    pub fn recall_timeout(&self) -> Duration {
        self.recall_timeout
    }

    /// The open table, locked; panics if a panic poisoned it (an operation must not act on
    /// a table left half-changed).
    pub fn opens(&self) -> MutexGuard<'_, StateTable> {
        self.opens.lock().expect("opens")
    }

    /// The open table, locked, even if a panic poisoned it (background tasks, the reaper).
    pub fn opens_recovered(&self) -> MutexGuard<'_, StateTable> {
        self.opens.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The open table, locked, or `None` if a panic poisoned it (the metrics page).
    pub fn try_opens(&self) -> Option<MutexGuard<'_, StateTable>> {
        self.opens.lock().ok()
    }

    /// The layout table, locked; panics if a panic poisoned it.
    pub fn layouts(&self) -> MutexGuard<'_, LayoutTable> {
        self.layouts.lock().expect("layouts")
    }

    /// The layout table, locked, even if a panic poisoned it.
    pub fn layouts_recovered(&self) -> MutexGuard<'_, LayoutTable> {
        self.layouts.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The layout table, locked, or `None` if a panic poisoned it (the metrics page).
    pub fn try_layouts(&self) -> Option<MutexGuard<'_, LayoutTable>> {
        self.layouts.lock().ok()
    }

    /// The server-side copies.
    pub fn copies(&self) -> &Arc<Copies> {
        &self.copies
    }
}

//! The outcomes of asynchronous server-side copies (RFC 7862 sections 4.8 and 16.1): a COPY
//! answered with a callback stateid ends with CB_OFFLOAD on the back channel. Each copy
//! waits for its stateid here; the back channel hands each CB_OFFLOAD in.
//!
//! The server may send CB_OFFLOAD before the COPY reply reaches the copier (the copy was
//! fast, the reply slow), so an outcome nobody waits for yet is kept, a bounded number of
//! them ([`EARLY_MAX`], oldest dropped first: a copier that finds nothing still learns the
//! outcome with OFFLOAD_STATUS), and handed to the waiter that comes for it.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use nfs_proto::nfs4::{OffloadInfo4, Stateid4};
use tokio::sync::oneshot;

/// Outcomes kept that no copier waits for (yet).
pub(crate) const EARLY_MAX: usize = 64;

/// A copy is known by its stateid's `other` (the server may bump `seqid`).
type Key = [u8; 12];

#[derive(Default)]
struct Table {
    waiting: HashMap<Key, oneshot::Sender<OffloadInfo4>>,
    early: VecDeque<(Key, OffloadInfo4)>,
}

/// The copies waiting for their CB_OFFLOAD, and outcomes that came before their copier.
#[derive(Default)]
pub(crate) struct Offloads {
    table: Arc<Mutex<Table>>,
}

fn lock(t: &Mutex<Table>) -> std::sync::MutexGuard<'_, Table> {
    t.lock().unwrap_or_else(|p| p.into_inner())
}

impl Offloads {
    /// A CB_OFFLOAD for `stateid`: to its waiter, or kept for one to come.
    pub(crate) fn arrived(&self, stateid: &Stateid4, info: OffloadInfo4) {
        let mut t = lock(&self.table);
        if let Some(tx) = t.waiting.remove(&stateid.other) {
            // A waiter that went away meanwhile polls or cancels; nothing to keep.
            let _ = tx.send(info);
            return;
        }
        t.early.retain(|(k, _)| *k != stateid.other);
        if t.early.len() >= EARLY_MAX {
            t.early.pop_front();
        }
        t.early.push_back((stateid.other, info));
    }

    /// Waits for the CB_OFFLOAD of `stateid` (already arrived or to come). Dropping the
    /// [`Waiter`] forgets the wait.
    pub(crate) fn wait_for(&self, stateid: &Stateid4) -> Waiter {
        let (tx, rx) = oneshot::channel();
        let mut t = lock(&self.table);
        if let Some(i) = t.early.iter().position(|(k, _)| *k == stateid.other) {
            if let Some((_, info)) = t.early.remove(i) {
                let _ = tx.send(info);
            }
        } else {
            t.waiting.insert(stateid.other, tx);
        }
        Waiter {
            key: stateid.other,
            rx,
            table: self.table.clone(),
        }
    }

    /// Copies waited for and outcomes kept (for tests).
    #[cfg(test)]
    fn sizes(&self) -> (usize, usize) {
        let t = lock(&self.table);
        (t.waiting.len(), t.early.len())
    }
}

/// One copy's wait for its CB_OFFLOAD.
pub(crate) struct Waiter {
    key: Key,
    /// Gets the outcome.
    pub rx: oneshot::Receiver<OffloadInfo4>,
    table: Arc<Mutex<Table>>,
}

impl Drop for Waiter {
    fn drop(&mut self) {
        lock(&self.table).waiting.remove(&self.key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nfs_proto::nfs4::NfsStat4;

    fn sid(n: u8) -> Stateid4 {
        Stateid4 {
            seqid: 1,
            other: [n; 12],
        }
    }

    fn failed(n: u64) -> OffloadInfo4 {
        OffloadInfo4::Failed {
            coa_status: NfsStat4::NFS4ERR_IO,
            coa_bytes_copied: n,
        }
    }

    #[tokio::test]
    async fn an_outcome_reaches_its_waiter_whether_it_comes_before_or_after() {
        let o = Offloads::default();
        let mut w = o.wait_for(&sid(1));
        o.arrived(&sid(2), failed(2));
        o.arrived(&Stateid4 { seqid: 7, ..sid(1) }, failed(1));
        assert_eq!((&mut w.rx).await.unwrap(), failed(1));
        // Stateid 2 came before its copier asked.
        let mut w2 = o.wait_for(&sid(2));
        assert_eq!((&mut w2.rx).await.unwrap(), failed(2));
        drop((w, w2));
        assert_eq!(o.sizes(), (0, 0));
    }

    #[test]
    fn outcomes_nobody_waits_for_are_bounded_and_a_dropped_wait_is_forgotten() {
        let o = Offloads::default();
        for n in 0..(EARLY_MAX as u8 + 10) {
            o.arrived(&sid(n), failed(u64::from(n)));
        }
        assert_eq!(o.sizes(), (0, EARLY_MAX));
        // The oldest went first.
        let mut w = o.wait_for(&sid(0));
        assert!(w.rx.try_recv().is_err());
        drop(w);
        assert_eq!(o.sizes(), (0, EARLY_MAX));
        let mut w = o.wait_for(&sid(EARLY_MAX as u8 + 9));
        assert_eq!(
            w.rx.try_recv().unwrap(),
            failed(u64::from(EARLY_MAX as u8 + 9))
        );
    }
}

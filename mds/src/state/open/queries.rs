//! What the rest of the server asks the open table: whether a client or a file has state
//! (DESTROY_CLIENTID, return-on-close layouts, LAYOUTCOMMIT after a restart), the fate of
//! orphans (REMOVE and the reaper, [`crate::state::orphan`]), and the stateids of an open or
//! a client (what fencing pushes to the data servers).
//!
//! Apart from the state machine in [`super`] because none of it changes an open or a lock.

use super::*;

impl StateTable {
    /// Whether the client has any open or lock state, revoked or not (DESTROY_CLIENTID is
    /// `NFS4ERR_CLIENTID_BUSY` while it has, RFC 8881 section 18.50.3).
    pub fn client_has_state(&self, clientid: u64) -> bool {
        self.by_client.get(&clientid).is_some_and(|s| !s.is_empty())
            || self.delegs.client_has_state(clientid)
    }

    /// Whether `clientid` still has the file open under any of its open owners: when its
    /// last open goes, its return-on-close layout goes too (RFC 8881 section 18.43.3).
    pub fn client_has_open(&self, clientid: u64, file: u64) -> bool {
        self.files.get(&file).is_some_and(|f| {
            f.opens
                .iter()
                .any(|o| self.states.get(o).is_some_and(|e| e.clientid == clientid))
        })
    }

    /// Whether `clientid` has the file open for writing under any of its open owners (a
    /// LAYOUTCOMMIT under a layout stateid of an earlier boot is taken from such a client:
    /// it reclaimed that open after the restart).
    pub fn client_has_write_open(&self, clientid: u64, file: u64) -> bool {
        self.files.get(&file).is_some_and(|f| {
            f.opens.iter().any(|o| {
                self.states.get(o).is_some_and(|e| {
                    e.clientid == clientid
                        && matches!(&e.body, Body::Open(b) if b.access & OPEN4_SHARE_ACCESS_WRITE != 0)
                })
            })
        })
    }

    /// Whether any client has the file open.
    pub fn file_is_open(&self, file: u64) -> bool {
        self.files.get(&file).is_some_and(|f| !f.opens.is_empty())
    }

    /// The store made `file` an orphan (a regular file's last name went; call it after that
    /// commit). Open: it is kept, and listed by
    /// [`take_released_orphans`](Self::take_released_orphans) once its last open goes (CLOSE,
    /// or the client's state released or revoked). Not open: the caller deletes it now and
    /// then calls [`orphan_reaped`](Self::orphan_reaped); meanwhile it is stale for OPEN
    /// and [`orphan_is_reaping`](Self::orphan_is_reaping).
    pub fn unlinked(&mut self, file: u64) -> OrphanFate {
        let open = self.file_is_open(file);
        self.orphans.unlinked(file, open)
    }

    /// Orphans whose last open went since the last call, for the caller to delete (then
    /// [`orphan_reaped`](Self::orphan_reaped)).
    pub fn take_released_orphans(&mut self) -> Vec<u64> {
        self.orphans.take_released()
    }

    /// Whether `file` is an orphan being deleted (PUTFH treats it as stale already).
    pub fn orphan_is_reaping(&self, file: u64) -> bool {
        self.orphans.is_reaping(file)
    }

    /// The deletion of orphan `file` is over.
    pub fn orphan_reaped(&mut self, file: u64) {
        self.orphans.reaped(file);
    }

    /// The access and deny bits of an open stateid, for the layout and delegation code.
    pub fn open_modes(&self, clientid: u64, stateid: &Stateid4) -> Result<(u32, u32), StateError> {
        let other = self.resolve(clientid, stateid)?;
        let o = self.open_body(&other).ok_or(StateidError::Bad)?;
        Ok((o.access, o.deny))
    }

    /// An open stateid and the lock stateids derived from it, each with the open's share
    /// access now: what the data servers must check after an OPEN upgrade or OPEN_DOWNGRADE
    /// (a lock stateid's `other` carries the access of its open when it was minted).
    pub fn access_family(&self, open: &Other) -> Vec<(Other, u32)> {
        let Some(o) = self.open_body(open) else {
            return Vec::new();
        };
        std::iter::once(*open)
            .chain(o.locks.iter().copied())
            .map(|other| (other, o.access))
            .collect()
    }

    /// The open stateid of an open-owner on a file, if it has one (OPEN upgrades it).
    pub fn open_of(&self, clientid: u64, file: u64, owner: &OpenOwner4) -> Option<Other> {
        self.open_owners
            .get(&OwnerKey::from_request(clientid, owner), file)
    }

    /// The lock stateids derived from an open stateid (CLOSE discards them with it).
    pub fn lock_stateids(&self, open: &Other) -> Vec<Other> {
        self.open_body(open)
            .map(|o| o.locks.iter().copied().collect())
            .unwrap_or_default()
    }

    /// Every open, lock and delegation stateid of a client (live or revoked), with its file:
    /// what the data servers must refuse when the client's state goes.
    pub fn client_stateids(&self, clientid: u64) -> Vec<(Other, u64)> {
        let mut v: Vec<(Other, u64)> = self
            .by_client
            .get(&clientid)
            .into_iter()
            .flatten()
            .filter_map(|o| self.states.get(o).map(|e| (*o, e.file)))
            .chain(self.delegs.client_delegations(clientid))
            .collect();
        v.sort();
        v
    }

    /// The file of an open or lock stateid.
    pub fn file_of(&self, other: &Other) -> Option<u64> {
        self.states.get(other).map(|e| e.file)
    }
}

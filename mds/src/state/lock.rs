//! Byte-range locks (RFC 8881 sections 9.2 to 9.5, 18.10 LOCK, 18.11 LOCKT, 18.12 LOCKU)
//! with POSIX semantics: a lock-owner's new lock replaces whatever it held on the overlapped
//! bytes (split, merge, upgrade and downgrade in place), adjacent ranges of the same type
//! merge, and only locks of *other* lock-owners conflict. The server therefore never returns
//! `NFS4ERR_LOCK_RANGE` or `NFS4ERR_LOCK_NOTSUPP`, and OPEN replies carry
//! `OPEN4_RESULT_LOCKTYPE_POSIX`.
//!
//! Blocking lock types (`READW_LT`, `WRITEW_LT`) are treated as their non-blocking forms: a
//! conflict is `NFS4ERR_DENIED` at once, and since there is no CB_NOTIFY_LOCK yet, OPEN never
//! sets `OPEN4_RESULT_MAY_NOTIFY_LOCK` and the client polls (section 9.6).
//!
//! Locks are advisory: READ and WRITE never check them.

use nfs_proto::nfs4::{
    LockArgs, LockDenied, LockOwner4, LockTArgs, LockUArgs, Locker4, NfsLockType4, Stateid4,
    OPEN4_SHARE_ACCESS_READ, OPEN4_SHARE_ACCESS_WRITE,
};

use super::open::{Body, Entry, LockBody, StateError, StateTable};
use super::owner::OwnerKey;
use super::stateid::{Holder, Other, StateidError, StateidKind};

/// Read (shared) or write (exclusive) lock.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Hash)]
pub enum LockKind {
    /// Shared: conflicts only with another owner's write lock.
    Read,
    /// Exclusive: conflicts with any lock of another owner.
    Write,
}

impl LockKind {
    /// The kind of a wire lock type; the blocking types are the same kinds (see the module
    /// doc). An unknown value is `NFS4ERR_INVAL`.
    pub fn from_wire(t: NfsLockType4) -> Result<Self, StateError> {
        match t {
            NfsLockType4::READ_LT | NfsLockType4::READW_LT => Ok(Self::Read),
            NfsLockType4::WRITE_LT | NfsLockType4::WRITEW_LT => Ok(Self::Write),
            _ => Err(StateError::Inval),
        }
    }

    /// The non-blocking wire type, as LOCK4denied reports it.
    pub fn to_wire(self) -> NfsLockType4 {
        match self {
            Self::Read => NfsLockType4::READ_LT,
            Self::Write => NfsLockType4::WRITE_LT,
        }
    }

    fn conflicts_with(self, other: Self) -> bool {
        self == Self::Write || other == Self::Write
    }
}

/// An inclusive range of bytes; `end == u64::MAX` means "to the end of the file, however
/// long".
#[derive(Clone, Copy, PartialEq, Eq, Debug, Hash, PartialOrd, Ord)]
pub struct ByteRange {
    /// First byte.
    pub start: u64,
    /// Last byte (inclusive).
    pub end: u64,
}

impl ByteRange {
    /// The range of a wire (offset, length) pair (RFC 8881 section 18.10.3): length
    /// `NFS4_UINT64_MAX` locks to the end of the file; a length of zero, or a finite length
    /// whose sum with the offset exceeds `NFS4_UINT64_MAX`, is `NFS4ERR_INVAL` ("The server
    /// MUST return NFS4ERR_INVAL under the following combinations"). `NFS4ERR_BAD_RANGE` is
    /// only for 32-bit servers, which this is not.
    pub fn from_wire(offset: u64, length: u64) -> Result<Self, StateError> {
        if length == 0 {
            return Err(StateError::Inval);
        }
        if length == u64::MAX {
            return Ok(Self {
                start: offset,
                end: u64::MAX,
            });
        }
        // offset + length <= u64::MAX, so the last byte is at most u64::MAX - 1.
        let sum = offset.checked_add(length).ok_or(StateError::Inval)?;
        Ok(Self {
            start: offset,
            end: sum - 1,
        })
    }

    /// The wire length: `u64::MAX` for a range to the end of the file. (A finite range from 0
    /// to `u64::MAX - 1`, only reachable by merging, reads the same; one byte of difference in
    /// a LOCK4denied report.)
    pub fn wire_length(&self) -> u64 {
        if self.end == u64::MAX {
            u64::MAX
        } else {
            self.end - self.start + 1
        }
    }

    /// Whether the two ranges share a byte.
    pub fn overlaps(&self, other: &Self) -> bool {
        self.start <= other.end && other.start <= self.end
    }
}

/// A lock held by `owner`.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct HeldLock<O> {
    /// Who holds it.
    pub owner: O,
    /// Read or write.
    pub kind: LockKind,
    /// The bytes it covers.
    pub range: ByteRange,
}

/// The byte-range locks of one file. Invariants: sorted by start; one owner's locks never
/// overlap; one owner's adjacent locks of the same kind are merged.
#[derive(Clone, Debug)]
pub struct LockTable<O> {
    locks: Vec<HeldLock<O>>,
}

impl<O> Default for LockTable<O> {
    fn default() -> Self {
        Self { locks: Vec::new() }
    }
}

impl<O: Clone + Eq> LockTable<O> {
    /// An empty table.
    pub fn new() -> Self {
        Self::default()
    }

    /// All locks, sorted by start.
    pub fn locks(&self) -> &[HeldLock<O>] {
        &self.locks
    }

    /// Whether no lock is held.
    pub fn is_empty(&self) -> bool {
        self.locks.is_empty()
    }

    /// The first lock (by start) of another owner that conflicts with `owner` taking `kind`
    /// on `range`. Locks of `owner` itself never conflict (LOCKT excludes them too, RFC 8881
    /// section 18.11.4; other lock-owners of the same client do conflict).
    pub fn conflict(&self, owner: &O, kind: LockKind, range: &ByteRange) -> Option<&HeldLock<O>> {
        self.locks
            .iter()
            .find(|l| l.owner != *owner && l.range.overlaps(range) && l.kind.conflicts_with(kind))
    }

    /// Takes a lock, or returns the conflicting one and changes nothing.
    pub fn lock(&mut self, owner: O, kind: LockKind, range: ByteRange) -> Result<(), HeldLock<O>> {
        if let Some(c) = self.conflict(&owner, kind, &range) {
            return Err(c.clone());
        }
        self.carve(&owner, &range);
        self.locks.push(HeldLock { owner, kind, range });
        self.normalize();
        Ok(())
    }

    /// Releases whatever `owner` holds in `range`, splitting locks that stick out. Unlocking
    /// bytes that are not locked is not an error (RFC 8881 section 18.12.4 allows either).
    pub fn unlock(&mut self, owner: &O, range: &ByteRange) {
        self.carve(owner, range);
        self.normalize();
    }

    /// Whether `owner` holds any lock.
    pub fn holds_locks(&self, owner: &O) -> bool {
        self.locks.iter().any(|l| l.owner == *owner)
    }

    /// Drops every lock of `owner`.
    pub fn remove_owner(&mut self, owner: &O) {
        self.locks.retain(|l| l.owner != *owner);
    }

    /// Cuts `range` out of `owner`'s locks.
    fn carve(&mut self, owner: &O, range: &ByteRange) {
        let mut kept = Vec::with_capacity(self.locks.len() + 1);
        for l in self.locks.drain(..) {
            if l.owner != *owner || !l.range.overlaps(range) {
                kept.push(l);
                continue;
            }
            // Overlap guarantees range.start > 0 in the first case and range.end < MAX in
            // the second.
            if l.range.start < range.start {
                kept.push(HeldLock {
                    owner: l.owner.clone(),
                    kind: l.kind,
                    range: ByteRange {
                        start: l.range.start,
                        end: range.start - 1,
                    },
                });
            }
            if l.range.end > range.end {
                kept.push(HeldLock {
                    owner: l.owner,
                    kind: l.kind,
                    range: ByteRange {
                        start: range.end + 1,
                        end: l.range.end,
                    },
                });
            }
        }
        self.locks = kept;
    }

    /// Sorts and merges adjacent locks of one owner and kind.
    fn normalize(&mut self) {
        self.locks.sort_by_key(|l| (l.range.start, l.range.end));
        let mut out: Vec<HeldLock<O>> = Vec::with_capacity(self.locks.len());
        for l in self.locks.drain(..) {
            // The owner's last lock so far; its locks do not overlap, so it ends before `l`.
            let prev = out.iter_mut().rev().find(|p| p.owner == l.owner);
            match prev {
                Some(p) if p.kind == l.kind && p.range.end.saturating_add(1) >= l.range.start => {
                    p.range.end = p.range.end.max(l.range.end);
                }
                _ => out.push(l),
            }
        }
        self.locks = out;
    }
}

fn denied(h: &HeldLock<OwnerKey>) -> StateError {
    StateError::Denied(LockDenied {
        offset: h.range.start,
        length: h.range.wire_length(),
        locktype: h.kind.to_wire(),
        owner: h.owner.to_wire(),
    })
}

impl StateTable {
    /// Whether a lock stateid's lock-owner holds locks on its file.
    pub(super) fn lock_state_holds_locks(&self, other: &Other) -> bool {
        let Some(e) = self.states.get(other) else {
            return false;
        };
        match &e.body {
            Body::Lock(l) if e.revoked.is_none() => self
                .files
                .get(&e.file)
                .is_some_and(|f| f.locks.holds_locks(&l.owner)),
            _ => false,
        }
    }

    /// LOCK (RFC 8881 section 18.10). With `open_to_lock_owner` the open stateid must be
    /// this client's current open of `file`, and the lock-owner (named under the session's
    /// client; the body's clientid and all seqids are ignored, section 18.10.3) gets a lock
    /// stateid (seqid 1) if the lock is granted; if the lock-owner already has one for this
    /// file it is reused, as knfsd does for 4.1 clients that lost track of it. With
    /// `exist_lock_owner` the lock stateid must be current and on `file`. A write lock needs
    /// an open with write access and a read lock one with read access (POSIX), else
    /// `NFS4ERR_OPENMODE`. Another owner's conflicting lock is `NFS4ERR_DENIED` with that lock;
    /// on success the lock stateid's seqid is bumped. `reclaim` is the caller's to check
    /// against the grace period.
    pub fn lock(
        &mut self,
        clientid: u64,
        file: u64,
        args: &LockArgs,
    ) -> Result<Stateid4, StateError> {
        let kind = LockKind::from_wire(args.locktype)?;
        let range = ByteRange::from_wire(args.offset, args.length)?;
        let (owner, open, existing) = match &args.locker {
            Locker4::OpenOwner(o) => {
                let open = self.resolve_for(clientid, &o.open_stateid, file, StateidKind::Open)?;
                let owner = OwnerKey::from_request(clientid, &o.lock_owner);
                let existing = self.lock_owners.get(&owner, file);
                (owner, open, existing)
            }
            Locker4::LockOwner(e) => {
                let other = self.resolve_for(clientid, &e.lock_stateid, file, StateidKind::Lock)?;
                match &self.states[&other].body {
                    Body::Lock(l) => (l.owner.clone(), l.open, Some(other)),
                    Body::Open(_) => return Err(StateidError::Bad.into()),
                }
            }
        };
        // A reused lock stateid keeps the open it was made from.
        let open = match existing.and_then(|o| self.states.get(&o)) {
            Some(Entry {
                body: Body::Lock(l),
                ..
            }) => l.open,
            _ => open,
        };
        let access = self.open_body(&open).ok_or(StateidError::Bad)?.access;
        let needed = match kind {
            LockKind::Read => OPEN4_SHARE_ACCESS_READ,
            LockKind::Write => OPEN4_SHARE_ACCESS_WRITE,
        };
        if access & needed == 0 {
            return Err(StateError::OpenMode);
        }
        // Mint before taking the lock, so that a granted lock always has its stateid.
        let new_other = match existing {
            Some(_) => None,
            None => Some(self.minter.mint(
                StateidKind::Lock,
                access as u8,
                Holder {
                    clientid,
                    fileid: file,
                },
            )?),
        };
        let table = &mut self.files.entry(file).or_default().locks;
        table
            .lock(owner.clone(), kind, range)
            .map_err(|h| denied(&h))?;
        match (existing, new_other) {
            (Some(other), _) => Ok(self.bump(&other)),
            (None, Some(other)) => {
                self.insert_entry(
                    other,
                    Entry {
                        clientid,
                        file,
                        seqid: 1,
                        revoked: None,
                        body: Body::Lock(LockBody {
                            owner: owner.clone(),
                            open,
                        }),
                    },
                );
                self.lock_owners.insert(owner, file, other);
                if let Some(o) = self.open_body_mut(&open) {
                    o.locks.insert(other);
                }
                Ok(Stateid4 { seqid: 1, other })
            }
            (None, None) => unreachable!("minted above"),
        }
    }

    /// LOCKT (RFC 8881 section 18.11): tests without taking. Needs no open. The owner's
    /// clientid is ignored for the session's, and that lock-owner's own locks are excluded
    /// from the test; other lock-owners of the same client conflict like anyone's. Blocking
    /// and non-blocking types test alike.
    pub fn lockt(&self, clientid: u64, file: u64, args: &LockTArgs) -> Result<(), StateError> {
        let kind = LockKind::from_wire(args.locktype)?;
        let range = ByteRange::from_wire(args.offset, args.length)?;
        let owner = OwnerKey::from_request(clientid, &args.owner);
        match self
            .files
            .get(&file)
            .and_then(|f| f.locks.conflict(&owner, kind, &range))
        {
            Some(h) => Err(denied(h)),
            None => Ok(()),
        }
    }

    /// LOCKU (RFC 8881 section 18.12): releases the lock-owner's locks in the range,
    /// splitting any that stick out; the lock type may be any legal value and does not
    /// matter. The lock stateid stays valid even with no locks left, until CLOSE or
    /// FREE_STATEID (section 8.2.4). Bumps its seqid.
    pub fn locku(
        &mut self,
        clientid: u64,
        file: u64,
        args: &LockUArgs,
    ) -> Result<Stateid4, StateError> {
        LockKind::from_wire(args.locktype)?;
        let range = ByteRange::from_wire(args.offset, args.length)?;
        let other = self.resolve_for(clientid, &args.lock_stateid, file, StateidKind::Lock)?;
        let owner = match &self.states[&other].body {
            Body::Lock(l) => l.owner.clone(),
            Body::Open(_) => return Err(StateidError::Bad.into()),
        };
        if let Some(f) = self.files.get_mut(&file) {
            f.locks.unlock(&owner, &range);
        }
        Ok(self.bump(&other))
    }

    /// RELEASE_LOCKOWNER. NFSv4.1 makes it "MUST NOT implement" (RFC 8881 section 17's table
    /// of operations: lock stateids are freed with FREE_STATEID instead), so for
    /// `minorversion >= 1` it is `NFS4ERR_NOTSUPP`. For NFSv4.0 (RFC 7530 section 16.37): a
    /// lock-owner that still holds locks on any file is `NFS4ERR_LOCKS_HELD` and nothing
    /// changes; otherwise all its lock stateids are released. An unknown owner is fine.
    pub fn release_lock_owner(
        &mut self,
        minorversion: u32,
        clientid: u64,
        owner: &LockOwner4,
    ) -> Result<(), StateError> {
        if minorversion >= 1 {
            return Err(StateError::NotSupp);
        }
        let owner = OwnerKey::from_request(clientid, owner);
        let states = self.lock_owners.states_of(&owner);
        if states.iter().any(|(_, o)| self.lock_state_holds_locks(o)) {
            return Err(StateError::LocksHeld);
        }
        for (_, other) in states {
            self.discard(&other);
        }
        Ok(())
    }
}

#[cfg(test)]
#[path = "lock_tests.rs"]
mod tests;

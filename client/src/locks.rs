//! Byte-range locks for many lock-owners (RFC 8881 sections 9.1 to 9.6, 18.10 LOCK, 18.11
//! LOCKT, 18.12 LOCKU, 18.38 FREE_STATEID).
//!
//! # Owners
//!
//! POSIX locks belong to a process (fcntl) or to an open file description (flock), not to a
//! host: two processes using one mount must conflict. So the caller names the owner (a u64:
//! FUSE's lock owner) and each becomes an NFS lock-owner of its own, named by the client's
//! owner string, `#`, and the u64 in big-endian bytes. The client-wide owner of
//! [`File::lock`](crate::File::lock) is the owner string alone. The server tells them apart,
//! so two owners of one client conflict as two clients would, and a LOCK4denied names which
//! of them holds the lock in the way ([`Holder`]).
//!
//! # State
//!
//! An owner's lock state belongs to the client's open of the file on the server
//! ([`ServerOpen`]), which all Files of the file share: POSIX locks are the process's, not
//! the descriptor's, so an owner locking through two Files of one file has one lock stateid
//! and one set of ranges. Its first LOCK carries `open_to_lock_owner4` with the open
//! stateid, later ones `exist_lock_owner4` with its lock stateid (seqids mean nothing in
//! NFSv4.1: 0). What it holds is mirrored here as POSIX counts it ([`Ranges`]): nothing is
//! sent when it holds nothing in a range, and after the server lost its state the ranges are
//! what to take again. An owner left holding nothing is forgotten and its lock stateid freed
//! (LOCKU and FREE_STATEID in one request), so the server's state does not grow with every
//! owner that ever locked. When the server open is CLOSEd, the owners' locks are released
//! first: CLOSE of an open whose lock-owners hold locks is NFS4ERR_LOCKS_HELD.
//!
//! # Order
//!
//! An owner's LOCKs and LOCKUs on a file go one at a time (its *turn*), each recorded here
//! before the next is sent, so the ranges follow the server's. Each runs in a task of its
//! own: a caller that stops waiting (an interrupted FUSE request) cannot leave a lock granted
//! on the server and unknown here. A turn is never held while waiting: a conflicting lock is
//! waited for by trying again after a pause (the server need not call back: CB_NOTIFY_LOCK is
//! optional, section 9.6), or at once when another owner of this client unlocks part of the
//! file, and the grace period after a server restart is waited out between
//! tries, not inside a request, since the reclaim of the owner's locks needs its turn.
//!
//! # Recovery
//!
//! When the server open is re-established (a server restart, a lost lease: `deleg/reclaim.rs`),
//! each owner's ranges are taken again in its next turn (the recovery takes one for each),
//! with `reclaim` set when the open itself was reclaimed in the grace period (section 8.4.2.1).
//!
//! This file holds the owners' state and its requests; the API is `File`'s (`file/locks.rs`),
//! the range arithmetic is in `ranges`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use bytes::{BufMut, Bytes, BytesMut};
use nfs_proto::nfs4::*;

use crate::client::{Inner, LockKind};
use crate::deleg::ServerOpen;
use crate::error::{Error, Result};
use crate::ops::{self, putfh};
use crate::session::Endpoint;

mod ranges;

pub(crate) use ranges::Ranges;

/// Who holds locks, on this client's side.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum LockOwner {
    /// The client-wide owner of [`File::lock`](crate::File::lock) and its siblings.
    Client,
    /// A caller's owner ([`File::lock_as`](crate::File::lock_as)): a FUSE lock owner.
    Posix(u64),
}

impl LockOwner {
    /// Its `lock_owner4` name, from the client's owner string `client`.
    pub(crate) fn name(self, client: &Bytes) -> Bytes {
        match self {
            Self::Client => client.clone(),
            Self::Posix(id) => {
                let mut b = BytesMut::with_capacity(client.len() + 9);
                b.put_slice(client);
                b.put_u8(b'#');
                b.put_u64(id);
                b.freeze()
            }
        }
    }

    /// The owner of this client (owner string `client`) that a reply names `name`, if any.
    pub(crate) fn named(name: &[u8], client: &[u8]) -> Option<Self> {
        match name.strip_prefix(client)? {
            [] => Some(Self::Client),
            [b'#', id @ ..] => Some(Self::Posix(u64::from_be_bytes(id.try_into().ok()?))),
            _ => None,
        }
    }
}

/// A lock in the way of the one asked for: F_GETLK's answer (from LOCK4denied, RFC 8881
/// section 18.10).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Conflict {
    /// Its kind.
    pub kind: LockKind,
    /// Its first byte.
    pub offset: u64,
    /// Its length; 0 when it reaches the end of the file.
    pub len: u64,
    /// Who holds it.
    pub holder: Holder,
}

/// Who holds a lock in the way.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Holder {
    /// Another lock owner of this client: the u64 given to [`File::lock_as`](crate::File::lock_as).
    Owner(u64),
    /// This client's client-wide owner ([`File::lock`](crate::File::lock)).
    Client,
    /// Another client: another host, or another [`Client`](crate::Client) of this process.
    OtherClient,
}

/// The bytes `offset..offset + len` as an inclusive span; `len` 0 reaches the end of the file.
/// A range past the last offset is [`Error::Invalid`] (EINVAL).
pub(crate) fn span(offset: u64, len: u64) -> Result<(u64, u64)> {
    if len == 0 {
        return Ok((offset, u64::MAX));
    }
    offset
        .checked_add(len - 1)
        .map(|end| (offset, end))
        .ok_or_else(|| {
            Error::Invalid(format!(
                "lock range {offset}+{len} ends past the last offset"
            ))
        })
}

/// The NFS length of `start..=end`: `NFS4_UINT64_MAX` for a span to the end of the file (a
/// finite length reaching the last offset would be NFS4ERR_INVAL, section 18.10.3).
fn wire_len(start: u64, end: u64) -> u64 {
    if end == u64::MAX {
        u64::MAX
    } else {
        end - start + 1
    }
}

/// The NFS lock type: the blocking ones say the client will try again (section 9.6).
pub(crate) fn lock_type(kind: LockKind, blocking: bool) -> NfsLockType4 {
    match (kind, blocking) {
        (LockKind::Read, false) => NfsLockType4::READ_LT,
        (LockKind::Write, false) => NfsLockType4::WRITE_LT,
        (LockKind::Read, true) => NfsLockType4::READW_LT,
        (LockKind::Write, true) => NfsLockType4::WRITEW_LT,
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// One owner's lock state on one file.
#[derive(Debug, Default)]
struct OwnerState {
    /// Its lock stateid, from the last LOCK or LOCKU reply.
    stateid: Option<Stateid4>,
    /// What it holds.
    held: Ranges,
    /// The server open's `reopens` when the stateid was granted: when that moves, the
    /// server lost the locks and they are to be taken again.
    epoch: u64,
    /// The lock stateid of a request the server answered with lost state: if the open
    /// turns out fine, the lock state alone is gone (see [`Inner::check_lock_state`]).
    suspect: Option<Stateid4>,
    /// Out of the table: whoever waited for its turn looks the owner up again.
    gone: bool,
}

/// An owner's entry in [`FileLocks`].
#[derive(Debug)]
struct OwnerLock {
    owner: LockOwner,
    /// Held for each request of the owner on the file, until its reply is recorded.
    turn: Arc<tokio::sync::Mutex<()>>,
    st: Mutex<OwnerState>,
}

/// The lock-owners with state on one server open (see the module documentation).
#[derive(Debug, Default)]
pub(crate) struct FileLocks {
    owners: Mutex<HashMap<LockOwner, Arc<OwnerLock>>>,
    /// Told after each unlock here: an owner of this client waiting for the file tries
    /// again at once rather than at the end of its pause.
    released: tokio::sync::Notify,
}

/// An owner's turn: while it lives, no other request of the owner on the file is sent.
struct Turn {
    ol: Arc<OwnerLock>,
    _guard: tokio::sync::OwnedMutexGuard<()>,
}

impl Turn {
    /// Waits for the turn of `ol`; `None` when it was forgotten meanwhile.
    async fn enter(ol: Arc<OwnerLock>) -> Option<Turn> {
        let guard = ol.turn.clone().lock_owned().await;
        let gone = lock(&ol.st).gone;
        (!gone).then_some(Turn { ol, _guard: guard })
    }

    fn st(&self) -> MutexGuard<'_, OwnerState> {
        lock(&self.ol.st)
    }
}

impl FileLocks {
    /// `owner`'s turn, for an owner with state (`None` without).
    async fn turn(&self, owner: LockOwner) -> Option<Turn> {
        loop {
            let ol = lock(&self.owners).get(&owner)?.clone();
            if let Some(t) = Turn::enter(ol).await {
                return Some(t);
            }
        }
    }

    /// `owner`'s turn, with an entry made for an owner without state.
    async fn turn_or_new(&self, owner: LockOwner) -> Turn {
        loop {
            let ol = lock(&self.owners)
                .entry(owner)
                .or_insert_with(|| {
                    Arc::new(OwnerLock {
                        owner,
                        turn: Arc::default(),
                        st: Mutex::default(),
                    })
                })
                .clone();
            if let Some(t) = Turn::enter(ol).await {
                return t;
            }
        }
    }

    /// Drops the owner of turn `t` from the table when it has no lock state left.
    fn forget_if_idle(&self, t: &Turn) {
        let mut st = t.st();
        if st.stateid.is_some() || !st.held.is_empty() {
            return;
        }
        st.gone = true;
        drop(st);
        let mut owners = lock(&self.owners);
        if owners
            .get(&t.ol.owner)
            .is_some_and(|x| Arc::ptr_eq(x, &t.ol))
        {
            owners.remove(&t.ol.owner);
        }
    }

    /// A future that ends at the next unlock of any owner on the file (`enable` it before
    /// the try it is to follow, so that an unlock meanwhile is not missed).
    pub(crate) fn released(&self) -> tokio::sync::futures::Notified<'_> {
        self.released.notified()
    }

    /// The owners with state.
    fn owners(&self) -> Vec<LockOwner> {
        lock(&self.owners).keys().copied().collect()
    }

    /// `owner`'s lock stateid, when it holds locks (for I/O, section 8.2.5).
    pub(crate) fn stateid_of(&self, owner: LockOwner) -> Option<Stateid4> {
        let ol = lock(&self.owners).get(&owner)?.clone();
        let st = lock(&ol.st);
        st.stateid.filter(|_| !st.held.is_empty())
    }
}

/// A stateid to remember from a reply: the newer of two versions of one stateid (replies
/// to requests that left in order may not come back in order).
fn newer(old: Option<Stateid4>, new: Stateid4) -> Stateid4 {
    match old {
        Some(o) if o.other == new.other && o.seqid > new.seqid => o,
        _ => new,
    }
}

impl Inner {
    /// One LOCK of `owner` on `so`'s file, in its turn (after taking its locks again if the
    /// server lost them): `None` when granted (and recorded), else the lock in the way.
    /// NFS4ERR_GRACE is returned, not waited out: the caller waits outside the turn.
    pub(crate) async fn lock_once(
        &self,
        so: &ServerOpen,
        owner: LockOwner,
        kind: LockKind,
        (start, end): (u64, u64),
        blocking: bool,
    ) -> Result<Option<LockDenied>> {
        let t = so.locks.turn_or_new(owner).await;
        self.relock(&t, so, &self.mds).await;
        let r = self
            .send_lock(&t, so, &self.mds, kind, (start, end), blocking, false)
            .await;
        so.locks.forget_if_idle(&t);
        r
    }

    /// Releases `start..=end` of `owner`'s locks on `so`'s file, in its turn: nothing is sent
    /// when it holds nothing there; its lock stateid is freed when it holds nothing after.
    pub(crate) async fn unlock_once(
        &self,
        so: &ServerOpen,
        owner: LockOwner,
        (start, end): (u64, u64),
    ) -> Result<()> {
        let Some(t) = so.locks.turn(owner).await else {
            return Ok(());
        };
        self.relock(&t, so, &self.mds).await;
        let r = self.send_unlock(&t, so, &self.mds, (start, end)).await;
        so.locks.forget_if_idle(&t);
        r
    }

    /// LOCKT for `owner`: the lock in the way of `kind` on `start..=end`, if any (the
    /// owner's own locks are never in its way, section 18.11.4).
    pub(crate) async fn test_lock(
        &self,
        fh: &NfsFh4,
        owner: LockOwner,
        kind: LockKind,
        (start, end): (u64, u64),
    ) -> Result<Option<Conflict>> {
        let r = self
            .mds
            .compound(vec![
                putfh(fh),
                NfsArgop4::LockT(LockTArgs {
                    locktype: lock_type(kind, false),
                    offset: start,
                    length: wire_len(start, end),
                    owner: ops::state_owner(&owner.name(&self.owner)),
                }),
            ])
            .await?;
        match r.results.last() {
            Some(NfsResop4::LockT(LockTRes::Ok)) => Ok(None),
            Some(NfsResop4::LockT(LockTRes::Denied(d))) => Ok(Some(self.conflict(d))),
            _ => Err(ops::failure(&r.results, r.status)),
        }
    }

    /// The conflict a LOCK4denied reports, its holder recognised when it is one of this
    /// client's owners.
    pub(crate) fn conflict(&self, d: &LockDenied) -> Conflict {
        let kind = match d.locktype {
            NfsLockType4::READ_LT | NfsLockType4::READW_LT => LockKind::Read,
            _ => LockKind::Write,
        };
        let holder = match LockOwner::named(&d.owner.owner, &self.owner) {
            Some(LockOwner::Posix(id)) => Holder::Owner(id),
            Some(LockOwner::Client) => Holder::Client,
            None => Holder::OtherClient,
        };
        Conflict {
            kind,
            offset: d.offset,
            len: if d.length == u64::MAX { 0 } else { d.length },
            holder,
        }
    }

    /// Takes each owner's locks on `so`'s file again when the open was re-established since
    /// they were taken (see [`Inner::reclaim_open`]).
    pub(crate) async fn reclaim_locks(&self, so: &ServerOpen, ep: &Arc<Endpoint>) {
        for owner in so.locks.owners() {
            if let Some(t) = so.locks.turn(owner).await {
                self.relock(&t, so, ep).await;
                so.locks.forget_if_idle(&t);
            }
        }
    }

    /// Releases every owner's locks on `so`'s file and frees their lock stateids, before its
    /// CLOSE (which fails with NFS4ERR_LOCKS_HELD otherwise). Failures are logged: the CLOSE
    /// is sent anyway, and the state of a server that lost it is gone already.
    pub(crate) async fn release_all_locks(&self, so: &ServerOpen) {
        for owner in so.locks.owners() {
            let Some(t) = so.locks.turn(owner).await else {
                continue;
            };
            if let Err(e) = self.send_unlock(&t, so, &self.mds, (0, u64::MAX)).await {
                tracing::debug!(path = %so.path, ?owner, "releasing locks before CLOSE: {e}");
            }
            {
                let mut st = t.st();
                st.stateid = None;
                st.held = Ranges::default();
            }
            so.locks.forget_if_idle(&t);
        }
    }

    /// After a request of `owner` failed with lost state and the open was checked (and
    /// re-established if the server lost it): when the open was fine and the owner's lock
    /// stateid is still the one that failed, the server no longer knows that lock state
    /// (revoked, or expired alone). Its locks are gone; the owner starts again from the open.
    pub(crate) async fn check_lock_state(&self, so: &ServerOpen, owner: LockOwner) {
        let Some(t) = so.locks.turn(owner).await else {
            return;
        };
        let reopens = so.st().reopens;
        let lost = {
            let mut st = t.st();
            let suspect = st.suspect.take();
            let lost = suspect.is_some() && suspect == st.stateid && st.epoch == reopens;
            if lost {
                st.stateid = None;
                st.held = Ranges::default();
            }
            lost
        };
        if lost {
            tracing::warn!(path = %so.path, ?owner, "the server lost this owner's lock state; its locks are gone");
        }
        so.locks.forget_if_idle(&t);
    }

    /// In `t`: when the server open was re-established since the owner's lock stateid was
    /// granted, takes what it held again, with `reclaim` when the open was reclaimed. What
    /// cannot be taken again is dropped (and logged): the owner no longer holds it.
    async fn relock(&self, t: &Turn, so: &ServerOpen, ep: &Arc<Endpoint>) {
        let (reopens, reclaimed) = {
            let st = so.st();
            (st.reopens, st.reclaimed)
        };
        let held = {
            let mut st = t.st();
            if st.epoch == reopens {
                return;
            }
            st.epoch = reopens;
            st.stateid = None;
            std::mem::take(&mut st.held)
        };
        for s in held.spans() {
            let owner = t.ol.owner;
            match self
                .send_lock(t, so, ep, s.kind, (s.start, s.end), false, reclaimed)
                .await
            {
                Ok(None) => {}
                Ok(Some(d)) => {
                    tracing::warn!(path = %so.path, ?owner, "lock {}..={} not re-established: {:?} in the way", s.start, s.end, self.conflict(&d))
                }
                Err(e) => {
                    tracing::warn!(path = %so.path, ?owner, "lock {}..={} not re-established: {e}", s.start, s.end)
                }
            }
        }
    }

    /// One LOCK in `t`, recorded when granted.
    #[allow(clippy::too_many_arguments)]
    async fn send_lock(
        &self,
        t: &Turn,
        so: &ServerOpen,
        ep: &Arc<Endpoint>,
        kind: LockKind,
        (start, end): (u64, u64),
        blocking: bool,
        reclaim: bool,
    ) -> Result<Option<LockDenied>> {
        let existing = t.st().stateid;
        let (open_stateid, reopens) = {
            let st = so.st();
            (st.stateid, st.reopens)
        };
        let locker = match existing {
            Some(s) => Locker4::LockOwner(ExistLockOwner4 {
                lock_stateid: s,
                lock_seqid: 0,
            }),
            None => Locker4::OpenOwner(OpenToLockOwner4 {
                open_seqid: 0,
                open_stateid,
                lock_seqid: 0,
                lock_owner: ops::state_owner(&t.ol.owner.name(&self.owner)),
            }),
        };
        let ops = vec![
            putfh(&so.fh),
            NfsArgop4::Lock(LockArgs {
                locktype: lock_type(kind, blocking),
                reclaim,
                offset: start,
                length: wire_len(start, end),
                locker,
            }),
        ];
        // A reclaim is never answered NFS4ERR_GRACE; a new lock is, and must not wait in
        // the turn (see the module documentation).
        let r = if reclaim {
            ep.compound(ops).await?
        } else {
            ep.compound_no_grace_wait(ops).await?
        };
        match r.results.last() {
            Some(NfsResop4::Lock(LockRes::Ok(ok))) => {
                let mut st = t.st();
                if existing.is_none() {
                    st.epoch = reopens;
                }
                st.stateid = Some(newer(st.stateid, ok.lock_stateid));
                st.held.set(start, end, kind);
                Ok(None)
            }
            Some(NfsResop4::Lock(LockRes::Denied(d))) => Ok(Some(d.clone())),
            _ => {
                let e = ops::failure(&r.results, r.status);
                if e.is_state_lost() {
                    t.st().suspect = existing;
                }
                Err(e)
            }
        }
    }

    /// In `t`: LOCKU of `start..=end` when the owner holds some of it, with FREE_STATEID of
    /// its lock stateid when it holds nothing after; recorded.
    async fn send_unlock(
        &self,
        t: &Turn,
        so: &ServerOpen,
        ep: &Arc<Endpoint>,
        (start, end): (u64, u64),
    ) -> Result<()> {
        let (stateid, overlaps, free) = {
            let mut st = t.st();
            let mut after = st.held.clone();
            after.unset(start, end);
            let Some(stateid) = st.stateid else {
                // Nothing the server knows of (its locks were not re-established).
                st.held = after;
                return Ok(());
            };
            (stateid, st.held.overlaps(start, end), after.is_empty())
        };
        if !overlaps && !free {
            return Ok(());
        }
        let mut ops = vec![putfh(&so.fh)];
        if overlaps {
            ops.push(NfsArgop4::LockU(LockUArgs {
                locktype: NfsLockType4::WRITE_LT,
                seqid: 0,
                lock_stateid: stateid,
                offset: start,
                length: wire_len(start, end),
            }));
        }
        if free {
            // Seqid 0: whatever the LOCKU before it made current (section 8.2.2).
            let seqid = if overlaps { 0 } else { stateid.seqid };
            ops.push(NfsArgop4::FreeStateid(FreeStateidArgs {
                fsa_stateid: Stateid4 { seqid, ..stateid },
            }));
        }
        let r = ep.compound(ops).await?;
        let mut results = r.results.iter().skip(1);
        if overlaps {
            match results.next() {
                Some(NfsResop4::LockU(LockURes::Ok(s))) => {
                    {
                        let mut st = t.st();
                        st.stateid = Some(newer(st.stateid, *s));
                        st.held.unset(start, end);
                    }
                    so.locks.released.notify_waiters();
                }
                _ => {
                    // The COMPOUND stopped at PUTFH or LOCKU: its status is theirs.
                    let e = ops::failure(&r.results, r.status);
                    if e.is_state_lost() {
                        t.st().suspect = Some(stateid);
                    }
                    return Err(e);
                }
            }
        }
        if free {
            match results.next() {
                Some(NfsResop4::FreeStateid(f)) if f.status == NfsStat4::NFS4_OK => {
                    t.st().stateid = None;
                }
                other => {
                    tracing::debug!(path = %so.path, "FREE_STATEID of a lock stateid: {other:?}")
                }
            }
        }
        Ok(())
    }
}

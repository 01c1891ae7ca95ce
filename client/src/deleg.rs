//! This client's opens of files on the server, and the delegations that come with them
//! (RFC 8881 sections 10.2 and 10.4).
//!
//! # One server open per file
//!
//! The client opens every file under one open-owner, so the server keeps at most one open of
//! a file for it, however many [`File`](crate::File)s use it: an OPEN of a file the owner has
//! open upgrades that open (the union of the accesses, the same stateid with a higher seqid:
//! RFC 8881 sections 9.11 and 18.16.3), and one CLOSE ends it for all. [`ServerOpen`] is that
//! open on this side: the Files of the file count themselves in it, and it is CLOSEd when the
//! last one closes, unless a delegation keeps it. (Before, each File CLOSEd the shared open,
//! pulling it from under the others.) It holds what all Files of the file share: the open
//! stateid, the attributes, the delegation.
//!
//! # Delegations
//!
//! OPEN asks for no particular delegation (`OPEN4_SHARE_ACCESS_WANT_NO_PREFERENCE`), so the
//! server grants one when its policy allows. While one is held (section 10.4.1):
//! - an open of the file whose access the delegation and the server open cover is made here:
//!   no OPEN, and its close sends no CLOSE (the server open stays with the delegation);
//! - attributes are not revalidated (no other client can change the file without the
//!   delegation being recalled first), and the read cache of a closed File is kept for the
//!   next open of the file;
//! - I/O uses the delegation stateid (section 8.2.5).
//!
//! CB_RECALL is answered at once; a task then flushes every File of the file (write-back,
//! COMMIT, LAYOUTCOMMIT, as close does), stops using the delegation stateid, sends DELEGRETURN
//! and CLOSEs the server open when no File uses it (section 10.4.4). CB_GETATTR for a file
//! under a write delegation is answered from this client's view (section 10.4.3).
//!
//! A delegation the server revoked (not returned within its lease: sections 10.4.5 and
//! 10.4.6), as SEQUENCE's `SEQ4_STATUS_RECALLABLE_STATE_REVOKED` or an operation's
//! NFS4ERR_DELEG_REVOKED tells, is tested (TEST_STATEID), freed (FREE_STATEID) and forgotten.
//! Writes made under a revoked write delegation and not yet sent are dropped, never sent:
//! another client may have changed the file since (section 10.5.1); the File's next flush
//! fails with [`Error::DataLost`](crate::Error::DataLost).
//!
//! This file holds the server opens and their table; giving opens and delegations back is in
//! `giving_back`, revocation in `revoked`, the back channel's calls in `callbacks`, reclaim after
//! a server restart in `reclaim`.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use bytes::Bytes;
use nfs_proto::nfs4::attr::{FileAttrs, FATTR4_CHANGE, FATTR4_SIZE};
use nfs_proto::nfs4::*;

use crate::attr::Metadata;
use crate::client::{Client, Counters, Inner};
use crate::error::Result;
use crate::file::File;
use crate::locks::FileLocks;
use crate::ops::{self, putfh};
use crate::session::Endpoint;

mod callbacks;
mod giving_back;
pub(crate) mod names;
mod reclaim;
mod revoked;
#[cfg(test)]
mod tests;

/// What a delegation lets this client do without asking the server.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum DelegKind {
    /// Read: opens for reading are local; no other client writes the file.
    Read,
    /// Write: any open is local; no other client has the file open.
    Write,
}

impl DelegKind {
    /// Whether an open asking `access` (`OPEN4_SHARE_ACCESS_*` bits) may be made locally under
    /// this delegation (RFC 8881 section 10.4.1: a read delegation does not cover writing).
    pub(crate) fn covers(self, access: u32) -> bool {
        match self {
            DelegKind::Read => access & OPEN4_SHARE_ACCESS_WRITE == 0,
            DelegKind::Write => true,
        }
    }

    /// The type an OPEN with CLAIM_PREVIOUS names to reclaim it after a server restart
    /// (sections 10.2.1 and 18.16.3).
    fn open_type(self) -> OpenDelegationType4 {
        match self {
            DelegKind::Read => OpenDelegationType4::OPEN_DELEGATE_READ,
            DelegKind::Write => OpenDelegationType4::OPEN_DELEGATE_WRITE,
        }
    }
}

/// A delegation granted by an OPEN reply: its stateid, its kind, and whether the server
/// recalls it at once (`recall`: section 18.16.3); `None` for no delegation.
pub(crate) fn granted(d: &OpenDelegation4) -> Option<(Stateid4, DelegKind, bool)> {
    match d {
        OpenDelegation4::Read(r) => Some((r.stateid, DelegKind::Read, r.recall)),
        OpenDelegation4::Write(w) => Some((w.stateid, DelegKind::Write, w.recall)),
        OpenDelegation4::None | OpenDelegation4::NoneExt(_) => None,
    }
}

/// A delegation held on a file.
#[derive(Clone, Debug)]
pub(crate) struct Delegation {
    /// Its stateid.
    pub stateid: Stateid4,
    /// Read or write.
    pub kind: DelegKind,
    /// Recalled, or being given back: no new local opens; I/O still uses it until it goes.
    pub returning: bool,
    /// The change attribute when it was granted (the base of CB_GETATTR answers, section
    /// 10.4.3).
    pub change: u64,
    /// Local changes of the file since it was granted (writes, size changes); a CB_GETATTR
    /// answer adds them to `change`, so the server sees the file change with each.
    pub modifications: u64,
}

/// Cached read blocks (block number -> bytes) and their total size.
#[derive(Clone, Debug)]
pub(crate) struct Blocks {
    /// The blocks.
    pub map: BTreeMap<u64, Bytes>,
    /// Their bytes.
    pub bytes: usize,
    /// Changes at every removal (a clear, a write's range dropped), to a value never used
    /// before: a fetch that started at another epoch may carry bytes a write replaced since,
    /// and must not put them in.
    pub epoch: u64,
}

/// Where [`Blocks`] epochs come from (unique in the process).
static EPOCHS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

fn next_epoch() -> u64 {
    EPOCHS.fetch_add(1, Ordering::Relaxed)
}

impl Default for Blocks {
    fn default() -> Self {
        Blocks {
            map: BTreeMap::new(),
            bytes: 0,
            epoch: next_epoch(),
        }
    }
}

impl Blocks {
    /// Empties the cache.
    pub(crate) fn clear(&mut self) {
        self.map.clear();
        self.bytes = 0;
        self.epoch = next_epoch();
    }

    /// Drops the blocks `blocks` covers (a write's or a hole's range).
    pub(crate) fn drop_range(&mut self, blocks: std::ops::RangeInclusive<u64>) {
        self.epoch = next_epoch();
        let gone: Vec<u64> = self.map.range(blocks).map(|(b, _)| *b).collect();
        for b in gone {
            if let Some(x) = self.map.remove(&b) {
                self.bytes -= x.len();
            }
        }
    }

    /// Puts in blocks fetched when the cache was at `epoch` (nothing when it moved since),
    /// keeping the cache within `limit` bytes: blocks before `keep_from` go first (behind
    /// a sequential reader), then everything.
    pub(crate) fn put(&mut self, epoch: u64, got: Vec<(u64, Bytes)>, limit: usize, keep_from: u64) {
        if epoch != self.epoch {
            return;
        }
        if self.bytes > limit {
            let behind: Vec<u64> = self.map.range(..keep_from).map(|(b, _)| *b).collect();
            for b in behind {
                if let Some(x) = self.map.remove(&b) {
                    self.bytes -= x.len();
                }
            }
            if self.bytes > limit {
                self.map.clear();
                self.bytes = 0;
            }
        }
        for (b, data) in got {
            self.bytes += data.len();
            if let Some(old) = self.map.insert(b, data) {
                self.bytes -= old.len();
            }
        }
    }
}

/// The mutable part of a [`ServerOpen`].
#[derive(Debug)]
pub(crate) struct OpenState {
    /// The open stateid (the newest the server answered).
    pub stateid: Stateid4,
    /// `OPEN4_SHARE_ACCESS_*` of the server open: the union of what the OPENs asked.
    pub access: u32,
    /// Files using the open.
    pub users: usize,
    /// Out of the client's table (closed, or being closed): a later open makes another.
    pub closed: bool,
    /// The delegation held on the file, if any.
    pub deleg: Option<Delegation>,
    /// The file's attributes as this client knows them: fresh from each OPEN or GETATTR, the
    /// size grown by this client's writes. Under a delegation, the truth (no GETATTR).
    pub meta: Metadata,
    /// Counts changes of the file's data that read caches did not see: local writes by any
    /// of its Files, and a new change attribute from the server (another client wrote). A
    /// read cache started at an earlier count may hold bytes that are not the file's.
    pub data_gen: u64,
    /// The read cache of the last File closed under the delegation, with the `data_gen` it
    /// is good for: the next local open starts with it.
    pub stash: Option<(u64, Blocks)>,
    /// Write delegations of this file revoked so far: a File's unsent writes made under an
    /// earlier count must not be sent (section 10.5.1).
    pub write_revocations: u64,
    /// Times the server open was re-established (a server restart, a lost lease): an owner
    /// whose locks were taken before takes them again.
    pub reopens: u64,
    /// Whether the last re-establishment was a reclaim in the grace period (locks are then
    /// reclaimed too).
    pub reclaimed: bool,
}

impl OpenState {
    /// The server reports change attribute `change` (an OPEN or GETATTR reply): when it
    /// moved, every read cache of the file, and the stash, may hold another client's old
    /// bytes. (It also moves for this client's own writes: their caches then go too, which
    /// costs a re-read, never a stale one.) A delegation granted now does not vouch for
    /// bytes cached before it.
    pub(crate) fn saw_change(&mut self, change: u64) {
        if change != self.meta.change {
            self.data_gen += 1;
            self.stash = None;
        }
    }
}

/// This client's open of one file on the server, shared by the file's Files and kept by a
/// delegation (see the module documentation).
#[derive(Debug)]
pub(crate) struct ServerOpen {
    /// The file.
    pub fh: NfsFh4,
    /// The path it was first opened by (for messages).
    pub path: String,
    st: Mutex<OpenState>,
    /// Serialises re-establishments of the open.
    reclaiming: tokio::sync::Mutex<()>,
    /// The lock-owners' state on the file: it lives and dies with this open (see `locks.rs`).
    pub locks: FileLocks,
}

impl ServerOpen {
    /// A new open (no users yet).
    fn new(fh: NfsFh4, path: &str, stateid: Stateid4, access: u32, meta: Metadata) -> Self {
        Self {
            fh,
            path: path.to_string(),
            st: Mutex::new(OpenState {
                stateid,
                access,
                users: 0,
                closed: false,
                deleg: None,
                meta,
                data_gen: 0,
                stash: None,
                write_revocations: 0,
                reopens: 0,
                reclaimed: false,
            }),
            reclaiming: tokio::sync::Mutex::new(()),
            locks: FileLocks::default(),
        }
    }

    /// The state (a plain mutex: never held across an await).
    pub(crate) fn st(&self) -> MutexGuard<'_, OpenState> {
        self.st.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The open stateid.
    pub(crate) fn stateid(&self) -> Stateid4 {
        self.st().stateid
    }

    /// The delegation stateid to use for a READ (`write` false) or WRITE (true) when a
    /// delegation is held that allows it (section 8.2.5 puts it before lock and open
    /// stateids; a read delegation does not allow WRITE).
    pub(crate) fn deleg_stateid(&self, write: bool) -> Option<Stateid4> {
        let st = self.st();
        let d = st.deleg.as_ref()?;
        (!write || d.kind == DelegKind::Write).then_some(d.stateid)
    }

    /// The kind of the delegation held and not being returned.
    pub(crate) fn held(&self) -> Option<DelegKind> {
        let st = self.st();
        st.deleg.as_ref().filter(|d| !d.returning).map(|d| d.kind)
    }

    /// Whether `s` is the delegation held on the file.
    pub(crate) fn is_deleg(&self, s: &Stateid4) -> bool {
        self.st()
            .deleg
            .as_ref()
            .is_some_and(|d| d.stateid.other == s.other)
    }

    /// The revocation count to record with writes buffered now: `Some` while a write
    /// delegation is held (they are then written under it), `None` otherwise.
    pub(crate) fn write_epoch(&self) -> Option<u64> {
        let st = self.st();
        st.deleg
            .as_ref()
            .filter(|d| d.kind == DelegKind::Write)
            .map(|_| st.write_revocations)
    }

    /// Whether a write delegation was revoked since `epoch` (see [`Self::write_epoch`]).
    pub(crate) fn revoked_since(&self, epoch: Option<u64>) -> bool {
        epoch.is_some_and(|e| self.st().write_revocations > e)
    }

    /// Records a local change of the file's data by a File whose read cache is at
    /// `cache_gen`: the size grows to `grow_to` or is set to `set_to`; read caches of other
    /// Files (and the stash) go stale; a write delegation counts one more modification.
    pub(crate) fn changed(&self, grow_to: Option<u64>, set_to: Option<u64>, cache_gen: &mut u64) {
        let mut st = self.st();
        if let Some(end) = grow_to {
            st.meta.size = st.meta.size.max(end);
        }
        if let Some(size) = set_to {
            st.meta.size = size;
        }
        // What a stat answers under a write delegation is this record: its times move
        // with the data, by this host's clock, as the server's would have (the server's
        // own come back with the delegation).
        let now = std::time::SystemTime::now();
        st.meta.mtime = now;
        st.meta.ctime = now;
        if *cache_gen == st.data_gen {
            *cache_gen += 1;
        }
        st.data_gen += 1;
        st.stash = None;
        if let Some(d) = st.deleg.as_mut().filter(|d| d.kind == DelegKind::Write) {
            d.modifications += 1;
        }
    }

    /// The answer to CB_GETATTR (section 10.4.3): the size as this client sees it (with
    /// writes not yet sent) and the change attribute at the grant plus the local changes
    /// since. `None` without a write delegation (NFS4ERR_BADHANDLE, section 20.1.3).
    pub(crate) fn cb_attrs(&self, request: &Bitmap4) -> Option<Fattr4> {
        let st = self.st();
        let d = st.deleg.as_ref().filter(|d| d.kind == DelegKind::Write)?;
        let attrs = FileAttrs {
            size: Some(st.meta.size),
            change: Some(d.change.wrapping_add(d.modifications)),
            ..FileAttrs::default()
        };
        Some(attrs.to_fattr(&request.intersect(&Bitmap4::from_bits([FATTR4_SIZE, FATTR4_CHANGE]))))
    }
}

/// What [`Inner::open_local`] found.
pub(crate) enum Local {
    /// Opened under the delegation with no request (one more user of the server open).
    Opened(Arc<ServerOpen>),
    /// The delegation covers the access but the server open does not: an OPEN with
    /// CLAIM_DELEG_CUR_FH under this delegation stateid upgrades it (one more user counted).
    Upgrade(Arc<ServerOpen>, Stateid4),
    /// No delegation that covers it: OPEN as usual.
    No,
}

/// The key of a path in the name cache: its components joined by `/`.
/// Files this client holds a delegation of, by the directory handle and name it created
/// them with, so that removing one gives the delegation back in the REMOVE's COMPOUND with
/// no LOOKUP first (`Client::remove_in`). A hint, never trusted for more: another client
/// may have renamed the file since; then the delegation goes back needlessly and the REMOVE
/// still removes what the name stands for. Renaming a directory changes no entry (they hold
/// the directory's handle, not its path).
#[derive(Debug, Default)]
pub(crate) struct Entries {
    by_name: HashMap<(NfsFh4, String), NfsFh4>,
    by_fh: HashMap<NfsFh4, (NfsFh4, String)>,
}

impl Entries {
    /// `name` in directory `dir` is `fh`, delegated to this client.
    pub(crate) fn bind(&mut self, dir: &NfsFh4, name: &str, fh: &NfsFh4) {
        self.unbind_fh(fh);
        let key = (dir.clone(), name.to_owned());
        if let Some(old) = self.by_name.insert(key.clone(), fh.clone()) {
            self.by_fh.remove(&old);
        }
        self.by_fh.insert(fh.clone(), key);
    }

    /// The file `name` in `dir` stood for when this client created it.
    pub(crate) fn get(&self, dir: &NfsFh4, name: &str) -> Option<NfsFh4> {
        self.by_name.get(&(dir.clone(), name.to_owned())).cloned()
    }

    /// `name` in `dir` is gone or stands for another file now.
    pub(crate) fn unbind(&mut self, dir: &NfsFh4, name: &str) {
        if let Some(fh) = self.by_name.remove(&(dir.clone(), name.to_owned())) {
            self.by_fh.remove(&fh);
        }
    }

    /// `fh`'s delegation is gone.
    pub(crate) fn unbind_fh(&mut self, fh: &NfsFh4) {
        if let Some(key) = self.by_fh.remove(fh) {
            self.by_name.remove(&key);
        }
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.by_name.len()
    }
}

pub(crate) fn name_key(path: &str) -> String {
    let parts: Vec<&str> = path.split('/').filter(|c| !c.is_empty()).collect();
    format!("/{}", parts.join("/"))
}

/// The statuses with which a server says a delegation stateid is no longer valid (revoked,
/// or forgotten): the delegation is gone, the open it came with may not be.
pub(crate) fn deleg_gone(status: Option<NfsStat4>) -> bool {
    matches!(
        status,
        Some(
            NfsStat4::NFS4ERR_DELEG_REVOKED
                | NfsStat4::NFS4ERR_ADMIN_REVOKED
                | NfsStat4::NFS4ERR_BAD_STATEID
                | NfsStat4::NFS4ERR_EXPIRED
        )
    )
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Inner {
    /// After an OPEN of `fh` (by `path`) answered `stateid`, the file's attributes `meta`
    /// and perhaps a delegation: the file's [`ServerOpen`], with one more user. A delegation
    /// is kept (and, with `bind`, the path remembered for local opens by path; an open by
    /// filehandle has no path to remember) unless one is held already; one granted
    /// pre-recalled is given back at once.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn opened(
        self: &Arc<Self>,
        fh: &NfsFh4,
        path: &str,
        bind: bool,
        stateid: Stateid4,
        access: u32,
        meta: Metadata,
        truncated: bool,
        delegation: &OpenDelegation4,
    ) -> Arc<ServerOpen> {
        let mut files = lock(&self.files);
        let so = match files.get(fh) {
            Some(so) if !so.st().closed => so.clone(),
            _ => {
                let so = Arc::new(ServerOpen::new(
                    fh.clone(),
                    path,
                    stateid,
                    access,
                    meta.clone(),
                ));
                files.insert(fh.clone(), so.clone());
                so
            }
        };
        let mut give_back = None;
        let mut extra = None;
        {
            let mut st = so.st();
            // Replies to concurrent OPENs may arrive out of order: keep the newest seqid of
            // the same open.
            if st.stateid.other != stateid.other || stateid.seqid >= st.stateid.seqid {
                st.stateid = stateid;
            }
            st.access |= access;
            // Other Files may hold writes not sent yet: the size they made stays, unless
            // this OPEN truncated.
            let size = if st.users > 0 && !truncated {
                meta.size.max(st.meta.size)
            } else {
                meta.size
            };
            st.saw_change(meta.change);
            st.meta = meta;
            st.meta.size = size;
            st.users += 1;
            if let Some((sid, kind, recall)) = granted(delegation) {
                match &mut st.deleg {
                    None => {
                        st.deleg = Some(Delegation {
                            stateid: sid,
                            kind,
                            returning: recall,
                            change: st.meta.change,
                            modifications: 0,
                        });
                        Counters::add(&self.counters.delegations, 1);
                        tracing::debug!(path, ?kind, "delegation granted");
                        if recall {
                            give_back = Some(sid);
                        }
                    }
                    Some(d) if d.stateid.other == sid.other => {
                        d.stateid.seqid = d.stateid.seqid.max(sid.seqid);
                    }
                    // One delegation per file is enough; the server should not grant a
                    // second one (section 10.4 allows one per client and file).
                    Some(_) => extra = Some(sid),
                }
            }
            if bind && st.deleg.is_some() {
                lock(&self.names).bind(name_key(path), fh, Instant::now());
            }
        }
        drop(files);
        if let Some(sid) = give_back {
            let me = self.clone();
            let so = so.clone();
            tokio::spawn(async move { me.give_back(so, sid).await });
        }
        if let Some(sid) = extra {
            let me = self.clone();
            let fh = fh.clone();
            tokio::spawn(async move {
                let _ = me.delegreturn(&fh, sid).await;
            });
        }
        so
    }

    /// An open of `fh` with `access` under a delegation held, if one covers it.
    pub(crate) fn open_local(&self, fh: &NfsFh4, access: u32) -> Local {
        let files = lock(&self.files);
        let Some(so) = files.get(fh) else {
            return Local::No;
        };
        let mut st = so.st();
        let Some(d) = st.deleg.as_ref().filter(|d| !d.returning) else {
            return Local::No;
        };
        if st.closed || !d.kind.covers(access) {
            return Local::No;
        }
        let sid = d.stateid;
        st.users += 1;
        if st.access & access == access {
            Local::Opened(so.clone())
        } else {
            Local::Upgrade(so.clone(), sid)
        }
    }

    /// The file bound to `path` in the name cache, and whether the binding is fresh (checked
    /// within the attribute timeout). Only paths of files opened under a delegation are
    /// bound.
    pub(crate) fn bound_name(&self, path: &str) -> Option<(NfsFh4, bool)> {
        let names = lock(&self.names);
        let (fh, at) = names.get(&name_key(path))?;
        Some((fh.clone(), at.elapsed() < self.opts.attr_timeout))
    }

    /// Remembers that `name` in `dir` is `fh`, created under a delegation ([`Entries`]).
    pub(crate) fn bind_entry(&self, dir: &NfsFh4, name: &str, fh: &NfsFh4) {
        lock(&self.entries).bind(dir, name, fh);
    }

    /// The file `name` in `dir` stood for when this client created it under a delegation
    /// it still holds, forgotten here (the name is about to go: [`Entries`]).
    pub(crate) fn take_entry(&self, dir: &NfsFh4, name: &str) -> Option<NfsFh4> {
        let mut e = lock(&self.entries);
        let fh = e.get(dir, name);
        e.unbind(dir, name);
        fh
    }

    /// `path` was just looked up again and still names `fh`.
    pub(crate) fn rebind_name(&self, path: &str, fh: &NfsFh4) {
        lock(&self.names).bind(name_key(path), fh, Instant::now());
    }

    /// Forgets `path` and every path under it (this client removed or renamed it).
    pub(crate) fn unbind_names(&self, path: &str) {
        lock(&self.names).unbind_tree(&name_key(path));
    }

    fn unbind_fh(&self, fh: &NfsFh4) {
        lock(&self.names).unbind_fh(fh);
        lock(&self.entries).unbind_fh(fh);
    }

    /// The file's [`ServerOpen`] when the client has one.
    pub(crate) fn server_open(&self, fh: &NfsFh4) -> Option<Arc<ServerOpen>> {
        lock(&self.files).get(fh).cloned()
    }

    /// A File of `so` closed, leaving its read cache `cache` (at its `data_gen`). True when
    /// the server open is to be CLOSEd now (no File and no delegation left); under a
    /// delegation the cache is kept for the next open.
    pub(crate) fn release(&self, so: &Arc<ServerOpen>, cache: Option<(u64, Blocks)>) -> bool {
        let mut files = lock(&self.files);
        let mut st = so.st();
        st.users = st.users.saturating_sub(1);
        if st.deleg.is_some() {
            if let Some((gen, blocks)) = cache {
                if gen == st.data_gen && !blocks.map.is_empty() {
                    st.stash = Some((gen, blocks));
                }
            }
            return false;
        }
        if st.users > 0 || st.closed {
            return false;
        }
        st.closed = true;
        drop(st);
        if files.get(&so.fh).is_some_and(|x| Arc::ptr_eq(x, so)) {
            files.remove(&so.fh);
        }
        true
    }

    /// The `OPEN4_SHARE_ACCESS_WANT_*` bits of this client's OPENs: no preference (the
    /// server decides, section 18.16.3) when delegations are on, else WANT_NO_DELEG.
    pub(crate) fn want(&self) -> u32 {
        if self.opts.delegations {
            OPEN4_SHARE_ACCESS_WANT_NO_PREFERENCE
        } else {
            OPEN4_SHARE_ACCESS_WANT_NO_DELEG
        }
    }

    /// Every server open (for recovery).
    pub(crate) fn server_opens(&self) -> Vec<Arc<ServerOpen>> {
        lock(&self.files).values().cloned().collect()
    }

    /// Delegations held now.
    pub(crate) fn delegations_held(&self) -> u64 {
        lock(&self.files)
            .values()
            .filter(|so| so.st().deleg.is_some())
            .count() as u64
    }
}

/// The files this client has open on the server, by filehandle.
pub(crate) type OpenTable = HashMap<NfsFh4, Arc<ServerOpen>>;

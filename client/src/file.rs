//! [`File`]: an open file. Writes are buffered (up to `ClientOptions::write_back` bytes),
//! sent UNSTABLE through the layout (or the MDS), and kept until a COMMIT with a matching
//! write verifier proves them stable; a changed verifier (a server restarted between WRITE
//! and COMMIT) re-sends them. Reads are cached per open in blocks; `revalidate` drops the
//! cache and attributes so the next read sees what other clients wrote and synced. Close
//! flushes, COMMITs, LAYOUTCOMMITs, unlocks, and, when no other File of the client uses the
//! file and no delegation keeps it, returns the layout and CLOSEs: close-to-open.
//!
//! The Files of one file share the client's server open of it ([`ServerOpen`]: stateid,
//! attributes, delegation). Under a delegation, a File needs no revalidation and inherits
//! the read cache of the last one closed (see `deleg.rs`).
//!
//! This file holds the open file and its state; reading is in `read`, writing and COMMIT in
//! `write`, byte-range locks in `locks`, ALLOCATE, DEALLOCATE and SEEK in `space`.

use std::sync::Arc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use nfs_proto::nfs4::*;

use crate::attr::Metadata;
use crate::client::{Client, Counters, Inner, Node};
use crate::deleg::{deleg_gone, Blocks, DelegKind, ServerOpen};
use crate::error::{Error, Result};
use crate::io::{self, Target};
use crate::locks::LockOwner;
use crate::ops::{self, putfh};
use crate::session::{nfs_err, Endpoint};

mod behind;
mod locks;
mod read;
mod space;
#[cfg(test)]
mod tests;
mod write;

pub use space::Seek;

/// Bytes of one cached read block (also the read-ahead of a small read).
const BLOCK: u64 = 1 << 20;

/// A WRITE the server acknowledged but may not have made stable yet.
#[derive(Clone, Debug)]
pub(crate) struct Written {
    /// File offset.
    pub offset: u64,
    /// The bytes (kept to re-send if the verifier changes).
    pub data: Bytes,
    /// The write verifier of the reply.
    pub verf: Verifier4,
    /// How stable the server said it is.
    pub stable: StableHow4,
    /// Where to COMMIT it.
    pub target: Target,
}

#[derive(Default)]
struct Data {
    /// Writes not sent yet, in order.
    dirty: Vec<(u64, Bytes)>,
    dirty_bytes: usize,
    /// While `dirty` holds writes made under a write delegation: the revocation count then
    /// ([`ServerOpen::write_epoch`]). If that delegation is revoked, they are not sent.
    dirty_epoch: Option<u64>,
    /// Sent, not known stable.
    unstable: Vec<Written>,
    /// Cached blocks by block number.
    cache: Blocks,
    /// The server open's `data_gen` the cache is good for.
    cache_gen: u64,
    /// Where a sequential reader reads next (the end of the last read).
    read_next: u64,
    /// Blocks read ahead of a sequential reader (0 after a jump).
    ahead: u64,
    /// Small reads in a row that jumped (not where the last one ended): random access.
    jumps: u32,
    /// The sends of buffered writes running in the background, oldest first, at most
    /// `behind::MAX_SENDS` (`behind`).
    behind: Vec<behind::Behind>,
    /// The COMMIT of sent writes running in the background (`behind`); their `Written`s
    /// are out of `unstable` until it ends.
    committing: Option<behind::Behind>,
    /// Why the last background send failed (its bytes are back in `dirty`).
    behind_error: Option<Error>,
    /// Blocks being fetched (by a read, or ahead of one).
    fetching: read::Fetching,
}

/// The shared state of one open (the client keeps a weak reference for reclaim).
pub(crate) struct OpenFile {
    pub id: u64,
    pub fh: NfsFh4,
    pub path: String,
    access: u32,
    /// The client's open of the file on the server, shared with its other Files.
    pub server: Arc<ServerOpen>,
    data: tokio::sync::Mutex<Data>,
}

impl OpenFile {
    /// A File of `server` (counted in its users already). It starts with the read cache a
    /// File closed under the delegation left, when nothing changed the file since.
    pub(crate) fn new(id: u64, access: u32, server: Arc<ServerOpen>, path: String) -> Self {
        let (cache_gen, cache) = {
            let mut st = server.st();
            let gen = st.data_gen;
            let cache = match st.stash.take() {
                Some((g, b)) if g == gen => b,
                _ => Blocks::default(),
            };
            (gen, cache)
        };
        Self {
            id,
            fh: server.fh.clone(),
            path,
            access,
            server,
            data: tokio::sync::Mutex::new(Data {
                cache,
                cache_gen,
                ..Data::default()
            }),
        }
    }

    fn stateid(&self) -> Stateid4 {
        self.server.stateid()
    }

    /// The stateid for a READ (`write` false) or WRITE: the delegation's when one is held
    /// that allows it, else the client-wide lock-owner's lock stateid when it holds locks on
    /// the file (so a server enforcing mandatory locks sees them; the I/O of a File is not
    /// any other owner's), else the open stateid (RFC 8881 section 8.2.5).
    fn io_stateid(&self, write: bool) -> Stateid4 {
        self.server
            .deleg_stateid(write)
            .or_else(|| self.server.locks.stateid_of(LockOwner::Client))
            .unwrap_or_else(|| self.stateid())
    }

    /// Re-establishes this File's state when the server lost it: the server open (shared,
    /// see [`Inner::reclaim_open`]), then, when the open had to be made again, the locks its
    /// lock-owners held (with `reclaim` set in the grace period, as new locks after it: RFC
    /// 8881 sections 8.4.2, 9.11).
    pub(crate) async fn reclaim(&self, inner: &Inner, ep: &Arc<Endpoint>) -> Result<()> {
        inner.reclaim_open(&self.server, ep).await?;
        inner.reclaim_locks(&self.server, ep).await;
        Ok(())
    }
}

/// An open file. Dropping it without [`File::close`] leaves the open on the server until
/// the client shuts down (the server then releases it with the lease).
pub struct File {
    pub(crate) client: Client,
    pub(crate) open: Arc<OpenFile>,
}

impl std::fmt::Debug for File {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "File({})", self.open.path)
    }
}

impl File {
    pub(crate) fn new(client: Client, open: Arc<OpenFile>) -> Self {
        Self { client, open }
    }

    /// The file's handle on the server.
    pub fn handle(&self) -> &NfsFh4 {
        &self.open.fh
    }

    fn mds_target(&self) -> Target {
        Target {
            ep: self.client.inner.mds.clone(),
            fh: self.open.fh.clone(),
            slots: self.client.inner.mds_slots.clone(),
        }
    }

    fn io_size(&self) -> usize {
        (self.client.inner.opts.io_size as usize).clamp(4096, 1 << 20)
    }

    /// Runs `op` with the stateid for a READ (`write` false) or WRITE; when the server says
    /// the state is gone, tries again: without the delegation when that was what the server
    /// no longer knows (revoked, RFC 8881 section 10.4.6), after re-establishing the open
    /// otherwise (a restart, an expiry).
    pub(crate) async fn with_state<T, F, Fut>(&self, write: bool, op: F) -> Result<T>
    where
        F: Fn(Stateid4) -> Fut,
        Fut: std::future::Future<Output = Result<T>>,
    {
        let mut tries = 0;
        loop {
            let s = self.open.io_stateid(write);
            match op(s).await {
                Err(e) if e.is_state_lost() && tries < 5 => {
                    tries += 1;
                    if self.open.server.is_deleg(&s) && deleg_gone(e.nfs_status()) {
                        self.client.inner.deleg_lost(&self.open.server, s);
                        continue;
                    }
                    tracing::info!(path = %self.open.path, "state lost ({e}); re-establishing");
                    tokio::time::sleep(Duration::from_millis(50 * tries)).await;
                    if self.open.io_stateid(write) == s {
                        self.open
                            .reclaim(&self.client.inner, &self.client.inner.mds)
                            .await?;
                    }
                }
                r => return r,
            }
        }
    }

    /// The current size as this client knows it (the server's, or further if this client
    /// wrote past it).
    pub fn size(&self) -> u64 {
        self.open.server.st().meta.size
    }

    /// Attributes: under a delegation, this client's own (nobody else can change them);
    /// else cached ones while fresh, or a GETATTR (the size includes this client's own
    /// writes not yet on the server).
    pub async fn metadata(&self) -> Result<Metadata> {
        if self.open.server.held().is_some() {
            return Ok(self.open.server.st().meta.clone());
        }
        if let Some(m) = self.client.inner.cached_attrs(&self.open.fh) {
            let mut m = m;
            m.size = m.size.max(self.size());
            return Ok(m);
        }
        self.refresh_attrs().await
    }

    async fn refresh_attrs(&self) -> Result<Metadata> {
        let r = self
            .client
            .run(vec![putfh(&self.open.fh), ops::getattr()])
            .await?;
        let m = ops::attrs_of(&r).ok_or_else(|| self.client.protocol("GETATTR without a type"))?;
        let m = self.client.inner.with_own_writes(&self.open.fh, m);
        Ok(self.took_attrs(m, self.has_pending()))
    }

    /// Attributes fresh from the server become the file's: cached for the client, and the
    /// open's (a new change attribute makes read caches stale). While writes of this File
    /// are on their way (`pending`), the size stays this client's when larger.
    fn took_attrs(&self, mut m: Metadata, pending: bool) -> Metadata {
        self.client.inner.remember_attrs(&self.open.fh, &m);
        let mut st = self.open.server.st();
        if pending {
            m.size = m.size.max(st.meta.size);
        }
        st.saw_change(m.change);
        st.meta = m.clone();
        m
    }

    fn has_pending(&self) -> bool {
        self.open
            .data
            .try_lock()
            .map(|d| {
                !d.dirty.is_empty()
                    || !d.unstable.is_empty()
                    || !d.behind.is_empty()
                    || d.committing.is_some()
            })
            .unwrap_or(true)
    }

    /// Sends the writes buffered in this client's other Files of the file, so that a read
    /// through this one sees them (the Files share the file's size; without this, a read
    /// inside it would find holes where the other File's bytes are still buffered). Run
    /// before taking this File's data lock: a File never waits for another's lock while
    /// holding its own. A sibling's failure is its own to report (at its flush).
    pub(crate) async fn flush_siblings(&self) {
        for sibling in self.siblings() {
            let mut d = sibling.data_settled().await;
            if let Err(e) = sibling.send_dirty(&mut d).await {
                tracing::debug!(path = %self.open.path, "a sibling's writes before a read: {e}");
            }
        }
    }

    /// This client's other Files of the file (sharing its server open).
    pub(crate) fn siblings(&self) -> Vec<File> {
        if self.open.server.st().users < 2 {
            return Vec::new();
        }
        self.client
            .inner
            .open_files()
            .into_iter()
            .filter(|f| f.id != self.open.id && Arc::ptr_eq(&f.server, &self.open.server))
            .map(|f| File::new(self.client.clone(), f))
            .collect()
    }

    /// The server changed the file's bytes (a server-side copy into it) up to `end`: the
    /// read cache goes (this File's and, by the data generation, every other's), and the
    /// size grows to `end` when it ended before.
    pub(crate) async fn changed_by_server(&self, end: u64) {
        let mut d = self.data_settled().await;
        d.cache.clear();
        self.open.server.changed(Some(end), None, &mut d.cache_gen);
        self.client.inner.forget_attrs(&self.open.fh);
    }

    /// The file's node: for the handle API ([`Client::getattr`], [`Client::link_in`], ...)
    /// and for a file system that creates a file and must answer with its inode.
    pub fn node(&self) -> Node {
        Node::new(self.open.fh.clone(), self.open.server.st().meta.fileid)
    }

    /// Sets the file's size (flushing buffered writes first).
    pub async fn set_len(&self, size: u64) -> Result<()> {
        self.fsync().await?;
        let mut d = self.data_settled().await;
        d.cache.clear();
        self.with_state(true, |s| self.client.setattr_size(&self.open.fh, s, size))
            .await?;
        self.open.server.changed(None, Some(size), &mut d.cache_gen);
        Ok(())
    }

    /// Drops this file's cached data and attributes and fetches fresh attributes, so the
    /// next read sees what other clients wrote and synced (MPI-IO's sync-barrier-sync).
    /// This client's own buffered writes are sent first, never dropped. Under a delegation
    /// nothing is sent or dropped: no other client can have changed the file (RFC 8881
    /// section 10.4.1), and the attributes are this client's.
    pub async fn revalidate(&self) -> Result<Metadata> {
        if self.open.server.held().is_some() {
            return Ok(self.open.server.st().meta.clone());
        }
        {
            let mut d = self.data_settled().await;
            self.send_dirty(&mut d).await?;
            d.cache.clear();
            d.cache_gen = self.open.server.st().data_gen;
        }
        self.client.inner.forget_attrs(&self.open.fh);
        self.refresh_attrs().await
    }

    /// Flushes, COMMITs, LAYOUTCOMMITs and releases the client-wide owner's locks on the
    /// file ([`File::lock`]: as POSIX's close releases the process's locks, whichever of its
    /// descriptors took them); then, when no other File of this client has the file open and
    /// no delegation keeps the open, releases the locks other owners still hold
    /// ([`File::lock_as`]), returns the layout and CLOSEs. Until then those owners keep their
    /// locks: they are the caller's to release ([`File::release_owner`]). Under a delegation
    /// nothing more is sent, and the read cache is kept for the next open of the file. An
    /// error of the flush is returned after the rest is done.
    ///
    /// Under a write delegation the data is made stable but not LAYOUTCOMMITted: the
    /// delegation's return carries that LAYOUTCOMMIT (in its own COMPOUND, or in the one of
    /// the REMOVE that ends a short-lived file). Meanwhile this client counts its writes into
    /// the sizes it sees, and the MDS asks the data servers for the size it shows anyone
    /// else (any open by another client recalls the delegation first); a client that dies
    /// holding it leaves the size to the MDS, which settles it with the data servers.
    pub async fn close(self) -> Result<()> {
        let delegated = self
            .open
            .server
            .st()
            .deleg
            .as_ref()
            .is_some_and(|d| d.kind == DelegKind::Write && !d.returning);
        let synced = self.flush_stable(!delegated).await;
        if let Err(e) = self.unlock(0, 0).await {
            tracing::debug!(path = %self.open.path, "releasing locks at close: {e}");
        }
        let cache = {
            let mut d = self.data_idle().await;
            (d.cache_gen, std::mem::take(&mut d.cache))
        };
        let inner = &self.client.inner;
        let close_now = inner.release(&self.open.server, Some(cache));
        self.client.forget_open(self.open.id);
        let closed = if close_now {
            inner.send_close(&self.open.server).await
        } else {
            Ok(())
        };
        synced?;
        closed
    }
}

fn overlaps(dirty: &[(u64, Bytes)], offset: u64, len: u64) -> bool {
    let end = offset.saturating_add(len);
    dirty
        .iter()
        .any(|(o, d)| *o < end && o + d.len() as u64 > offset)
}

/// Drops the cached blocks holding bytes of `start..end`. Visits the cached blocks of the
/// range only, not every block number in it: a range may be as long as the largest file
/// (a DEALLOCATE to the end).
fn drop_cached(d: &mut Data, start: u64, end: u64) {
    if end <= start {
        return;
    }
    d.cache.drop_range(start / BLOCK..=(end - 1) / BLOCK);
}

/// A new write of `start..end` supersedes what earlier writes put there: cuts that range
/// out of the writes not sent yet and of those sent but not known stable. Without this, an
/// older write could land over the newer one: re-sent after a changed write verifier (a data
/// server restarted between the older WRITE and its COMMIT, while the newer WRITE already
/// carries the new verifier and is not re-sent; RFC 8881 section 18.32.3 asks to re-send
/// only what the server may have lost), or sent in a COMPOUND of its own that overtakes the
/// newer one's in the same flush. The older bytes there need no durability any more: the
/// newer write is sent before any COMMIT. So writes kept in `Data` never overlap.
fn supersede(d: &mut Data, start: u64, end: u64) {
    d.dirty_bytes -= cut_out(&mut d.dirty, start, end, |(o, b)| (*o, b), |_, o, b| (o, b));
    cut_out(
        &mut d.unstable,
        start,
        end,
        |w| (w.offset, &w.data),
        |w, offset, data| Written {
            offset,
            data,
            ..w.clone()
        },
    );
}

/// Cuts `start..end` out of `items` (each at a file offset with its bytes, read by `span`):
/// an item inside the range goes, one across an edge keeps the part outside (`with` makes
/// the piece of an item at a new offset), one over the whole range becomes two. Keeps the
/// order; returns the bytes cut.
fn cut_out<T>(
    items: &mut Vec<T>,
    start: u64,
    end: u64,
    span: impl Fn(&T) -> (u64, &Bytes),
    with: impl Fn(&T, u64, Bytes) -> T,
) -> usize {
    let overlaps = |t: &T| {
        let (o, b) = span(t);
        o < end && o + b.len() as u64 > start
    };
    if !items.iter().any(overlaps) {
        return 0;
    }
    let mut cut = 0;
    let mut out = Vec::with_capacity(items.len() + 1);
    for t in items.drain(..) {
        if !overlaps(&t) {
            out.push(t);
            continue;
        }
        let (o, b) = span(&t);
        let e = o + b.len() as u64;
        cut += (e.min(end) - o.max(start)) as usize;
        if o < start {
            out.push(with(&t, o, b.slice(..(start - o) as usize)));
        }
        if e > end {
            out.push(with(&t, end, b.slice((end - o) as usize..)));
        }
    }
    *items = out;
    cut
}

/// Joins writes that follow each other into pieces of up to `max` bytes and cuts larger
/// ones to `max`, keeping their order (a later write over an earlier one must land last).
/// A write that joins nothing is passed on as it is; only joined runs are copied, into a
/// buffer of their exact size.
fn coalesce(writes: Vec<(u64, Bytes)>, max: usize) -> Vec<(u64, Bytes)> {
    let mut out: Vec<(u64, Bytes)> = Vec::new();
    // The run being joined: its offset, its writes, their total length.
    let mut run: Option<(u64, Vec<Bytes>, usize)> = None;
    for (off, data) in writes {
        if let Some((roff, parts, len)) = &mut run {
            if *roff + *len as u64 == off && *len + data.len() <= max {
                *len += data.len();
                parts.push(data);
                continue;
            }
        }
        if let Some(r) = run.take() {
            out.push(join(r));
        }
        if data.len() >= max {
            out.extend(
                io::cut(off, data.len() as u64, max as u64)
                    .map(|(o, n, at)| (o, data.slice(at..at + n as usize))),
            );
        } else {
            let len = data.len();
            run = Some((off, vec![data], len));
        }
    }
    if let Some(r) = run {
        out.push(join(r));
    }
    out
}

/// One write from a run of adjacent ones (a single write is not copied).
fn join((off, mut parts, len): (u64, Vec<Bytes>, usize)) -> (u64, Bytes) {
    if parts.len() == 1 {
        return (off, parts.pop().unwrap_or_default());
    }
    let mut buf = BytesMut::with_capacity(len);
    for p in parts {
        buf.extend_from_slice(&p);
    }
    (off, buf.freeze())
}

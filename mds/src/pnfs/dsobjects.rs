//! What the MDS asks of the data servers about the objects of a striped file (a regular file
//! with a stripe set, [`crate::store::StripeSet`]): their sizes, for the size attribute while
//! clients write through layouts, and truncates, for SETATTR of the size and OPEN with
//! truncate. Removals go through the durable queue of [`crate::pnfs::removals`] instead, since they
//! may wait for a data server that is down.
//!
//! ```text
//!  GETATTR size ─> RW layouts of the file? ─ no ──> the MDS's recorded size
//!   (space_used)         │ yes (or space_used asked)
//!                        └─> stripe set ─> OBJECT_SPACE to each data server of the set
//!                              ─> size: max(recorded, StripeMap::file_size(sizes))
//!                                 space_used: the objects' allocated bytes, summed
//!                                 (a data server down or failing: the recorded ones, logged)
//!
//!  SETATTR size / OPEN truncate of a striped file
//!     plan_truncate: stripe set ─> every data server of the set up? (else NFS4ERR_DELAY)
//!     run: TRUNCATE (stripe, StripeMap::object_size(stripe, size)) to each, durable
//!          (any failure: NFS4ERR_DELAY, the MDS records nothing)
//!     then the store records the size
//! ```
//!
//! Clients that write through layouts tell the MDS the size only at LAYOUTCOMMIT (RFC 8881
//! section 12.5.4), so until then only the data servers know how far the file reaches; the
//! MDS asks them while any RW layout of the file is out, so that another client's GETATTR
//! does not see a stale size (section 13.10: the MDS answers for the file's size, the
//! component objects' sizes are the data servers'). Truncates reach the data servers before
//! the reply, as SETATTR of the size is synchronous, and before the MDS records the new size,
//! so a data server that is down changes nothing: the client retries after NFS4ERR_DELAY.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use layouts::{Packing, StripeError};
use nfs_proto::control::CtlObjectSpace;
use nfs_proto::control::{CtlObject, ObjectEnd, MAX_CTL_LIST};
use nfs_proto::nfs4::{NfsFtype4, NfsStat4};
use pfs_core::ObjectId;
use tokio::task::JoinSet;
use tracing::warn;

use crate::config::ClusterConfig;
use crate::pnfs::datapath::Marks;
use crate::pnfs::dsctl::{CtlError, DsControl};
use crate::server::{Namespace, Pnfs};
use crate::store::{Inode, Store, StripeSet};

/// How long GETATTR waits for the data servers' object sizes before it answers with the
/// recorded size instead: a hung data server must not hang GETATTR for the control
/// connection's whole timeout.
pub const SIZE_TIMEOUT: Duration = Duration::from_secs(2);

/// Why the data servers could not answer or act for a striped file.
#[derive(Debug, thiserror::Error)]
pub enum DsObjectsError {
    /// The stripe set names a ring this configuration cannot resolve (data servers the set
    /// was fixed with are gone from the configuration).
    #[error("the stripe set names data servers the configuration does not have")]
    NoRing,
    /// The stripe set's unit or count makes no stripe map (a corrupt record).
    #[error("stripe map: {0}")]
    Map(#[from] StripeError),
    /// The data server is not registered with this MDS (down, or not contacted yet).
    #[error("data server {0} is down")]
    Down(u16),
    /// The control call failed (shared: one call may have asked for many files).
    #[error("data server {0}: {1}")]
    Call(u16, Arc<CtlError>),
    /// No answer within [`SIZE_TIMEOUT`].
    #[error("data server {0} did not answer in time")]
    Timeout(u16),
    /// The task that made a control call ended without its answer (it panicked).
    #[error("a control call ended without an answer")]
    Lost,
}

impl From<DsObjectsError> for NfsStat4 {
    /// A configuration or record that names no data servers is the server's fault
    /// (NFS4ERR_SERVERFAULT); a data server that is down or failed is passing trouble, for
    /// which the client retries (NFS4ERR_DELAY, RFC 8881 section 15.1.1.3).
    fn from(e: DsObjectsError) -> Self {
        match e {
            DsObjectsError::NoRing | DsObjectsError::Map(_) => NfsStat4::NFS4ERR_SERVERFAULT,
            DsObjectsError::Down(_)
            | DsObjectsError::Call(..)
            | DsObjectsError::Timeout(_)
            | DsObjectsError::Lost => NfsStat4::NFS4ERR_DELAY,
        }
    }
}

/// The data server id of each stripe index of `set`, in index order, in `ring` (the ring of
/// the set's generation, `Mds::ring`; `None` if that generation was never recorded): where
/// each object of a file with this set lives.
pub fn stripe_servers(
    ring: Option<&layouts::Ring>,
    set: &StripeSet,
) -> Result<Vec<u16>, DsObjectsError> {
    let members = ring
        .ok_or(DsObjectsError::NoRing)?
        .members(&set.device)
        .map_err(|_| DsObjectsError::NoRing)?;
    members
        .iter()
        .map(|s| u16::try_from(s.id).map_err(|_| DsObjectsError::NoRing))
        .collect()
}

/// The data servers to send REMOVE for a deleted file with stripe set `set`: those of the
/// set, or, when its ring generation is unknown, every configured data server (REMOVE of a
/// file a data server holds nothing of succeeds), so that nothing is leaked.
pub fn removal_servers(
    ring: Option<&layouts::Ring>,
    cluster: &ClusterConfig,
    set: &StripeSet,
) -> Vec<u16> {
    match stripe_servers(ring, set) {
        Ok(s) => s,
        Err(e) => {
            warn!(
                error = %e,
                "removing a file's objects: asking every configured data server instead"
            );
            cluster.data_servers.iter().map(|d| d.id).collect()
        }
    }
}

/// The stripe indices of each data server, in data server order (a server may hold several
/// indices of one set when the ring is smaller than the count, never in this MDS's rings, but
/// the grouping does not rely on it).
fn by_server(servers: &[u16]) -> BTreeMap<u16, Vec<u32>> {
    let pairs: Vec<(u16, u32)> = servers
        .iter()
        .enumerate()
        .map(|(p, &ds)| (ds, p as u32))
        .collect();
    by_server_of(&pairs)
}

/// The positions asked of each data server, from (data server, position) pairs.
fn by_server_of(pairs: &[(u16, u32)]) -> BTreeMap<u16, Vec<u32>> {
    let mut m: BTreeMap<u16, Vec<u32>> = BTreeMap::new();
    for &(ds, pos) in pairs {
        m.entry(ds).or_default().push(pos);
    }
    m
}

/// The control connection of data server `ds`, if it is up.
fn control(pnfs: &Pnfs, ds: u16) -> Result<DsControl, DsObjectsError> {
    pnfs.devices().control(ds).ok_or(DsObjectsError::Down(ds))
}

/// The size of file `fileid` as its objects on the data servers of `set` show it: their
/// sizes ([`object_space`], all data servers asked at once) turned into a file size by the
/// stripe map ([`layouts::StripeMap::file_size`]). Bounded by [`SIZE_TIMEOUT`].
pub async fn file_size(pnfs: &Pnfs, fileid: u64, set: &StripeSet) -> Result<u64, DsObjectsError> {
    let map = set.map()?;
    let sizes: Vec<u64> = object_space(pnfs, fileid, set)
        .await?
        .iter()
        .map(|o| o.size)
        .collect();
    Ok(map.file_size(&sizes))
}

/// The sizes of many files as their objects show them, as [`file_size`] gives each, with one
/// OBJECT_SPACE call per data server for all of them (split only where a call's list is
/// full): the settling task's round ([`crate::pnfs::settle`]) asks for a thousand files as
/// three calls instead of three thousand. In the order of `files`; a file fails alone (its
/// set names no ring, a data server it needs is down or failed).
pub async fn file_sizes(
    pnfs: &Pnfs,
    files: &[(u64, StripeSet)],
) -> Vec<Result<u64, DsObjectsError>> {
    let asked: Vec<(u64, &StripeSet)> = files.iter().map(|(f, s)| (*f, s)).collect();
    let spaces = objects_space(pnfs, &asked).await;
    files
        .iter()
        .zip(spaces)
        .map(|((_, set), space)| {
            let sizes: Vec<u64> = space?.iter().map(|o| o.size).collect();
            Ok(set.map()?.file_size(&sizes))
        })
        .collect()
}

/// The size and allocated bytes of every stripe index's object of file `fileid` (OBJECT_SPACE,
/// asked of all data servers of `set` at once; one copy of a mirrored stripe), in index
/// order. Bounded by [`SIZE_TIMEOUT`].
pub async fn object_space(
    pnfs: &Pnfs,
    fileid: u64,
    set: &StripeSet,
) -> Result<Vec<CtlObjectSpace>, DsObjectsError> {
    objects_space(pnfs, &[(fileid, set)])
        .await
        .pop()
        .unwrap_or(Err(DsObjectsError::Lost))
}

/// The data server and position asked for each stripe index of `fileid`: its own object
/// without mirrors; for a mirrored set the first copy that is not stale and whose data
/// server is up.
fn copies_asked(
    pnfs: &Pnfs,
    fileid: u64,
    set: &StripeSet,
) -> Result<Vec<(u16, u32)>, DsObjectsError> {
    let servers = stripe_servers(pnfs.ring(set.device.generation).as_ref(), set)?;
    let stale = pnfs.mirrors().stale(fileid);
    let mut asked = Vec::with_capacity(usize::from(set.stripe_count()));
    for index in 0..u32::from(set.stripe_count()) {
        let mut copies = set
            .copies(index)
            .filter(|p| !stale.contains(p))
            .filter_map(|p| Some((*servers.get(p as usize)?, p)));
        let first = copies.next().ok_or(DsObjectsError::NoRing)?;
        let pick = if set.is_mirrored() && !pnfs.devices().is_up(first.0) {
            copies
                .find(|(ds, _)| pnfs.devices().is_up(*ds))
                .unwrap_or(first)
        } else {
            first
        };
        asked.push(pick);
    }
    Ok(asked)
}

/// What [`objects_space`] asks of one data server: the objects, and where each answer goes
/// (the file's position in the list, the stripe index).
type Asked = (Vec<ObjectId>, Vec<(usize, usize)>);

/// [`object_space`] of several files, one call per data server for all of them, each call
/// bounded by [`SIZE_TIMEOUT`] per full list it carries. In the order of `files`.
async fn objects_space(
    pnfs: &Pnfs,
    files: &[(u64, &StripeSet)],
) -> Vec<Result<Vec<CtlObjectSpace>, DsObjectsError>> {
    // Per file, its answers so far (one per stripe index) or why it has none.
    let mut out: Vec<Result<Vec<CtlObjectSpace>, DsObjectsError>> = Vec::with_capacity(files.len());
    let mut per_ds: BTreeMap<u16, Asked> = BTreeMap::new();
    for (i, &(fileid, set)) in files.iter().enumerate() {
        match copies_asked(pnfs, fileid, set) {
            Ok(asked) => {
                for (index, (ds, stripe)) in asked.iter().copied().enumerate() {
                    let (objects, to) = per_ds.entry(ds).or_default();
                    objects.push(ObjectId {
                        file: fileid,
                        stripe,
                    });
                    to.push((i, index));
                }
                out.push(Ok(vec![CtlObjectSpace::default(); asked.len()]));
            }
            Err(e) => out.push(Err(e)),
        }
    }
    let mut calls = JoinSet::new();
    for (ds, (objects, to)) in per_ds {
        let ctl = match control(pnfs, ds) {
            Ok(ctl) => ctl,
            Err(_) => {
                for (i, _) in to {
                    fail(&mut out[i], DsObjectsError::Down(ds));
                }
                continue;
            }
        };
        let lists = objects.len().div_ceil(MAX_CTL_LIST as usize).max(1);
        let limit = SIZE_TIMEOUT * u32::try_from(lists).unwrap_or(u32::MAX);
        calls.spawn(async move {
            let r = tokio::time::timeout(limit, ctl.object_space(&objects)).await;
            (ds, to, r)
        });
    }
    while let Some(joined) = calls.join_next().await {
        let Ok((ds, to, r)) = joined else {
            // A call's task panicked: which files it served is lost with it.
            for o in out.iter_mut().filter(|o| o.is_ok()) {
                *o = Err(DsObjectsError::Lost);
            }
            continue;
        };
        let got = match r {
            Ok(Ok(got)) => got,
            Ok(Err(e)) => {
                let e = Arc::new(e);
                for (i, _) in to {
                    fail(&mut out[i], DsObjectsError::Call(ds, e.clone()));
                }
                continue;
            }
            Err(_) => {
                for (i, _) in to {
                    fail(&mut out[i], DsObjectsError::Timeout(ds));
                }
                continue;
            }
        };
        for ((i, index), space) in to.into_iter().zip(got) {
            if let Ok(spaces) = &mut out[i] {
                if let Some(s) = spaces.get_mut(index) {
                    *s = space;
                }
            }
        }
    }
    out
}

/// Records why a file of [`objects_space`] has no answer: the first reason it met.
fn fail(file: &mut Result<Vec<CtlObjectSpace>, DsObjectsError>, why: DsObjectsError) {
    if file.is_ok() {
        *file = Err(why);
    }
}

/// `inode` with the size and space used GETATTR reports (`space`: whether `space_used` is
/// asked for; `asker`: the client the attributes are for, whose own unreported writes do
/// not count, or `None` for the size an operation works with, where every write counts).
///
/// * size: while some client granted an RW layout of this regular file has not
///   LAYOUTCOMMITted since, or an earlier boot's writes are not settled
///   ([`crate::pnfs::settle`]), the larger of the recorded size and the size its objects on
///   the data servers show; otherwise the recorded size (a holder's writes after its
///   LAYOUTCOMMIT show at its next one, RFC 8881 section 12.5.4, or when settled). A
///   client's own writes are its to report before it asks for attributes
///   ([`crate::pnfs::settle::Settler::has_unreported_by_others`]): a file a client created
///   with its layout and has not written yet costs that client's GETATTRs nothing.
/// * space used (when asked, or when the data servers are asked anyway): the bytes of
///   storage the file's objects take, so it falls after DEALLOCATE: for a striped file given
///   an ALLOCATE or DEALLOCATE this boot ([`crate::pnfs::spacewatch`]) or with RW layouts out, the
///   sum over its objects on the data servers (under sparse packing every index is the one
///   shared file: the largest answer), else the MDS's own object
///   ([`pfs_core::ObjectStore::space_used`]).
///
/// When the data servers cannot tell (one down, failing, slower than [`SIZE_TIMEOUT`]) the
/// recorded figures are answered, with a warning: never an error.
pub async fn sized(
    ns: &Namespace,
    pnfs: &Pnfs,
    mut inode: Inode,
    space: bool,
    asker: Option<u64>,
) -> Inode {
    if inode.ftype != NfsFtype4::NF4REG {
        return inode;
    }
    let layouts_out = match asker {
        Some(c) => pnfs.settler().has_unreported_by_others(inode.fileid, c),
        None => pnfs.settler().has_unreported(inode.fileid),
    };
    if !layouts_out && !space {
        return inode;
    }
    let set = match ns.store().stripes(inode.fileid) {
        // Space alone is asked of the data servers only for watched files (see
        // `crate::pnfs::spacewatch`: a round trip per GETATTR otherwise).
        Ok(Some(_)) if !layouts_out && !pnfs.space_watch().is_watched(inode.fileid) => {
            return inode
        }
        Ok(Some(set)) => set,
        Ok(None) => {
            if space {
                let (data, fileid) = (ns.data().clone(), inode.fileid);
                match nfs_server::io::blocking(move || data.space_used(ObjectId::whole(fileid)))
                    .await
                {
                    Ok(used) => inode.space_used = used,
                    Err(e) => warn!(fileid, "space used of the MDS's object: {e:?}"),
                }
            }
            return inode;
        }
        Err(e) => {
            warn!(
                fileid = inode.fileid,
                "size from the data servers: stripe set: {e}"
            );
            return inode;
        }
    };
    let figures = match set.map() {
        Ok(map) => object_space(pnfs, inode.fileid, &set)
            .await
            .map(|f| (map, f)),
        Err(e) => Err(e.into()),
    };
    match figures {
        Ok((map, objects)) => {
            if layouts_out {
                let sizes: Vec<u64> = objects.iter().map(|o| o.size).collect();
                inode.size = inode.size.max(map.file_size(&sizes));
            }
            let allocated = objects.iter().map(|o| o.allocated);
            inode.space_used = match set.packing {
                Packing::Dense => allocated.fold(0, u64::saturating_add),
                Packing::Sparse => allocated.max().unwrap_or(0),
            };
        }
        Err(e) => {
            if layouts_out {
                inode.space_used = inode.space_used.max(inode.size);
            }
            warn!(
                fileid = inode.fileid,
                size = inode.size,
                "size and space from the data servers unavailable, answering the recorded \
                 ones: {e}"
            );
        }
    }
    inode
}

/// One TRUNCATE call: the data server, its connection, and `(stripe, object size)` pairs.
#[derive(Debug)]
struct TruncateCall {
    ds: u16,
    ctl: DsControl,
    sizes: Vec<(u32, u64)>,
}

/// A truncate of a striped file's objects, planned while every data server it needs is up
/// ([`plan_truncate`]) and sent by [`Truncate::run`].
#[derive(Debug)]
pub struct Truncate {
    fileid: u64,
    /// The file's change attribute when planned (TRUNCATE's `version`).
    version: u64,
    calls: Vec<TruncateCall>,
    /// Copies of a mirrored file whose data server is down: stale once the others are
    /// truncated.
    behind: Vec<u32>,
    /// The set is mirrored (the truncate waits while the file is re-silvered).
    mirrored: bool,
}

/// Plans the truncate of file `fileid` to `size` on the data servers, if the file has a
/// stripe set: `None` for a file without one (its data is in the MDS's own store).
///
/// Dense packing (the `local` and `null` backends): each data server gets
/// `(stripe, StripeMap::object_size(stripe, size))` for each stripe index it holds, so
/// shrinking drops every byte at or past `size` and growing leaves holes that read as zeros.
/// Sparse packing is the `shared` backend's ([`ClusterConfig::packing`]), where every stripe
/// index of a file is the same file on the cluster file system: one data server of the set
/// (the first that is up) gets `(0, size)`, as docs/design.md ("Object store") says, since
/// several would set the one file to several sizes.
///
/// A data server that is down is [`DsObjectsError::Down`] (NFS4ERR_DELAY for the client).
pub fn plan_truncate(
    store: &Store,
    pnfs: &Pnfs,
    fileid: u64,
    size: u64,
    version: u64,
) -> Result<Option<Truncate>, NfsStat4> {
    let Some(set) = store.stripes(fileid)? else {
        return Ok(None);
    };
    match plan_for(pnfs, fileid, &set, size, version) {
        Ok(t) => Ok(Some(t)),
        Err(e) => {
            warn!(fileid, size, "truncating on the data servers: {e}");
            Err(e.into())
        }
    }
}

fn plan_for(
    pnfs: &Pnfs,
    fileid: u64,
    set: &StripeSet,
    size: u64,
    version: u64,
) -> Result<Truncate, DsObjectsError> {
    let map = set.map()?;
    let servers = stripe_servers(pnfs.ring(set.device.generation).as_ref(), set)?;
    // Copies of a mirrored stripe: the stale ones are left to re-silvering, those whose
    // data server is down fall behind while another copy is up.
    let mut behind = Vec::new();
    let mut targets: Vec<(u16, u32)> = Vec::new();
    if set.is_mirrored() {
        let stale = pnfs.mirrors().stale(fileid);
        for index in 0..map.count {
            let live: Vec<(u16, u32)> = set
                .copies(index)
                .filter(|p| !stale.contains(p))
                .filter_map(|p| Some((*servers.get(p as usize)?, p)))
                .collect();
            let (up, down): (Vec<_>, Vec<_>) = live
                .into_iter()
                .partition(|(ds, _)| pnfs.devices().is_up(*ds));
            if up.is_empty() {
                return Err(DsObjectsError::Down(down.first().map_or(0, |d| d.0)));
            }
            behind.extend(down.into_iter().map(|(_, p)| p));
            targets.extend(up);
        }
    } else {
        targets = servers
            .iter()
            .enumerate()
            .map(|(p, &ds)| (ds, p as u32))
            .collect();
    }
    let calls = match set.packing {
        Packing::Dense => by_server_of(&targets)
            .into_iter()
            .map(|(ds, positions)| {
                Ok(TruncateCall {
                    ds,
                    ctl: control(pnfs, ds)?,
                    sizes: positions
                        .into_iter()
                        .map(|p| (p, map.object_size(set.stripe_of(p), size)))
                        .collect(),
                })
            })
            .collect::<Result<Vec<_>, DsObjectsError>>()?,
        Packing::Sparse => {
            let mut up = servers
                .iter()
                .filter_map(|&ds| Some((ds, control(pnfs, ds).ok()?)));
            let (ds, ctl) = up
                .next()
                .ok_or(DsObjectsError::Down(servers.first().copied().unwrap_or(0)))?;
            vec![TruncateCall {
                ds,
                ctl,
                sizes: vec![(0, size)],
            }]
        }
    };
    Ok(Truncate {
        fileid,
        version,
        calls,
        behind,
        mirrored: set.is_mirrored(),
    })
}

impl Truncate {
    /// Sends the TRUNCATEs, to all data servers at once, and returns when every one is
    /// durable there. Any failure is an error (NFS4ERR_DELAY for the client): the caller then
    /// records nothing, and the client's retry truncates again (TRUNCATE is idempotent).
    pub async fn run(self, pnfs: &Pnfs, marks: Marks<'_>) -> Result<(), NfsStat4> {
        let fileid = self.fileid;
        let _guard = pnfs.mirrors().admit(fileid, self.mirrored)?;
        let behind = self.behind.clone();
        self.send().await?;
        marks.mark(pnfs, fileid, behind).await
    }

    async fn send(self) -> Result<(), DsObjectsError> {
        let (fileid, version) = (self.fileid, self.version);
        let mut calls = JoinSet::new();
        for c in self.calls {
            calls.spawn(async move {
                let r = c.ctl.truncate(fileid, &c.sizes, version).await;
                (c.ds, r)
            });
        }
        let mut first_err = None;
        while let Some(joined) = calls.join_next().await {
            let err = match joined {
                Ok((_, Ok(()))) => continue,
                Ok((ds, Err(e))) => DsObjectsError::Call(ds, Arc::new(e)),
                Err(_) => DsObjectsError::Lost,
            };
            warn!(fileid, "truncating on the data servers: {err}");
            first_err.get_or_insert(err);
        }
        first_err.map_or(Ok(()), Err)
    }
}

/// Where file `fileid` of size `size` (at change attribute `version`) ends in each of its
/// objects under dense packing, per data server ([`ObjectEnd`]); nothing under sparse packing,
/// where every object is the whole file and its data server knows its end.
fn object_ends(
    set: &StripeSet,
    servers: &[u16],
    fileid: u64,
    size: u64,
    version: u64,
) -> Result<BTreeMap<u16, Vec<ObjectEnd>>, DsObjectsError> {
    let mut out: BTreeMap<u16, Vec<ObjectEnd>> = BTreeMap::new();
    if set.packing != Packing::Dense {
        return Ok(out);
    }
    let map = set.map()?;
    for (ds, positions) in by_server(servers) {
        let ends = out.entry(ds).or_default();
        for position in positions {
            let index = set.stripe_of(position);
            // Object and file offsets agree in index 0's first unit (everywhere with one
            // stripe): the only place a client takes a data server's eof right.
            let same_offsets_below = match (index, map.count) {
                (0, 1) => u64::MAX,
                (0, _) => u64::from(map.unit),
                _ => 0,
            };
            ends.push(ObjectEnd {
                object: CtlObject {
                    file: fileid,
                    stripe: position,
                },
                version,
                end: map.object_size(index, size),
                same_offsets_below,
            });
        }
    }
    Ok(out)
}

/// Tells the data servers of file `fileid` where it ends now (SIZE_HINT), in the background:
/// after a LAYOUTGET, a LAYOUTCOMMIT and a truncate, so that a client reading through its
/// layout gets the file's end (or the holes before it) from the data servers without going
/// to the MDS. Advisory (docs/design.md, "End of file on the data servers"): a hint that is
/// lost or late costs a READ through the MDS, never a wrong answer, so failures are only
/// logged at debug level. The task holds the namespace and the data servers until it is done.
pub fn hint_ends(ns: &Arc<Namespace>, pnfs: &Arc<Pnfs>, fileid: u64) {
    let (ns, pnfs) = (ns.clone(), pnfs.clone());
    tokio::spawn(async move {
        if let Err(e) = send_ends(ns.store(), &pnfs, fileid).await {
            tracing::debug!(fileid, "telling the data servers where the file ends: {e}");
        }
    });
}

async fn send_ends(store: &Store, pnfs: &Pnfs, fileid: u64) -> Result<(), DsObjectsError> {
    let (Ok(inode), Ok(Some(set))) = (store.getattr(fileid), store.stripes(fileid)) else {
        return Ok(());
    };
    let servers = stripe_servers(pnfs.ring(set.device.generation).as_ref(), &set)?;
    let ends = object_ends(&set, &servers, fileid, inode.size, inode.change)?;
    let mut calls = JoinSet::new();
    for (ds, ends) in ends {
        let ctl = control(pnfs, ds)?;
        calls.spawn(async move {
            ctl.size_hint(&ends)
                .await
                .map_err(|e| DsObjectsError::Call(ds, Arc::new(e)))
        });
    }
    while let Some(joined) = calls.join_next().await {
        joined.map_err(|_| DsObjectsError::Lost)??;
    }
    Ok(())
}

#[cfg(test)]
mod tests {

    use layouts::Device;

    use super::*;
    use crate::config::DataServerConfig;

    fn cluster(n: u16) -> ClusterConfig {
        ClusterConfig {
            data_servers: DataServerConfig::all_in_one(n),
            ..ClusterConfig::default()
        }
    }

    fn set(count: u16, first: u16) -> StripeSet {
        StripeSet {
            unit: 1 << 20,
            device: Device {
                generation: 1,
                count,
                first,
            },
            packing: Packing::Dense,
            mirrors: 1,
        }
    }

    #[test]
    fn the_servers_of_a_set_are_its_ring_window_in_stripe_order() {
        assert_eq!(
            stripe_servers(Some(&cluster(3).ring(1)), &set(3, 1)).unwrap(),
            [2, 3, 1]
        );
        assert_eq!(
            stripe_servers(Some(&cluster(4).ring(1)), &set(2, 3)).unwrap(),
            [4, 1]
        );
    }

    #[test]
    fn a_set_the_ring_cannot_hold_has_no_servers_and_removals_ask_every_server() {
        let c = cluster(2);
        let ring = c.ring(1);
        assert!(matches!(
            stripe_servers(Some(&ring), &set(3, 0)),
            Err(DsObjectsError::NoRing)
        ));
        assert_eq!(removal_servers(Some(&ring), &c, &set(3, 0)), [1, 2]);
        assert_eq!(removal_servers(Some(&ring), &c, &set(2, 1)), [2, 1]);
        // A generation never recorded: every configured data server.
        assert_eq!(removal_servers(None, &c, &set(2, 1)), [1, 2]);
    }

    #[test]
    fn stripe_indices_are_grouped_by_server() {
        let g = by_server(&[5, 2, 5, 9]);
        assert_eq!(
            g.into_iter().collect::<Vec<_>>(),
            [(2, vec![1]), (5, vec![0, 2]), (9, vec![3])]
        );
    }

    #[test]
    fn a_data_server_down_or_failing_is_delay_and_a_bad_set_a_server_fault() {
        assert_eq!(
            NfsStat4::from(DsObjectsError::Down(1)),
            NfsStat4::NFS4ERR_DELAY
        );
        assert_eq!(
            NfsStat4::from(DsObjectsError::Call(1, Arc::new(CtlError::Closed))),
            NfsStat4::NFS4ERR_DELAY
        );
        assert_eq!(
            NfsStat4::from(DsObjectsError::NoRing),
            NfsStat4::NFS4ERR_SERVERFAULT
        );
    }
}

//! I/O through the MDS on striped files: READ, WRITE and COMMIT of a client without a layout
//! reach the same DS objects that a client with a layout reads and writes (issue 5: "both
//! paths see the same bytes").
//!
//! A regular file's data lives in one of two places. Without a stripe set it is the MDS's own
//! object (`ObjectId::whole`, `Mds::data`): no data servers, layouts off, or a file whose data
//! was written there before it could have a stripe set. With one (table `stripes`, fixed at
//! the file's first LAYOUTGET or first WRITE through the MDS, `ops::layout::file_stripes`) it
//! is the DS objects `{file, stripe index}` on the set's data servers, cut by the file's
//! stripe map exactly as a client with the layout cuts it (RFC 8881 section 13.4).
//!
//! ```text
//!  WRITE  offset..+len ─> StripeMap::extents ─> runs (per stripe index, contiguous in the
//!         object, <= MAX_CTL_IO) ─> control WRITE per run, concurrently, pieces of the
//!         client's buffer gathered, not copied ─> count = contiguous prefix written,
//!         committed = weakest, verifier = stripe_verifier(DS verifiers after the call)
//!  READ   offset..+len (clipped to the MDS size) ─> runs ─> control READ per run,
//!         concurrently ─> one buffer, zeros where an object ends early (holes)
//!  COMMIT ─> control COMMIT of every index's object, concurrently ─> stripe_verifier
//! ```
//!
//! A data server that the registry has down makes the operation NFS4ERR_DELAY before
//! anything is sent (the client retries; RFC 8881 section 15.1.1.3), as does one whose
//! connection fails during the call.
//!
//! # Write verifiers
//! A striped file's writes are durable on several data servers, each with its own write
//! verifier, which changes when that server may have lost unstable data (a restart). WRITE
//! and COMMIT answer [`stripe_verifier`] of the verifiers of the set's data servers, in
//! stripe order, as known after the call: from the call's own replies, and for data servers
//! the call did not reach, the registry's last known one (`Devices::write_verifier`, updated
//! from REGISTER and from every control WRITE and COMMIT reply). A data server restart
//! between a client's UNSTABLE4 WRITE and its COMMIT changes one input, so the COMMIT's
//! verifier differs from the WRITE's and the client sends the data again (RFC 8881 section
//! 18.32.3). A verifier can also change without a loss (the registry learning of an old
//! restart late): the client then re-sends needlessly, which is safe.

use std::future::Future;

use bytes::{Bytes, BytesMut};
use layouts::{Extent, StripeError, StripeMap};
use nfs_proto::control::{CtlStat, MAX_CTL_IO};
use nfs_proto::nfs4::NfsStat4;
use pfs_core::{ObjectId, Stability};
use tokio::task::JoinSet;

use crate::pnfs::dsctl::{CtlError, DsControl};
use crate::server::Pnfs;
use crate::store::{Store, StripeSet};

/// One control call's worth of a striped range: `len` bytes of stripe index `index`'s
/// object from `object_offset`, which hold the file ranges `parts` (in object order, which is
/// also file order under both packings).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Run {
    /// Stripe index.
    pub index: u32,
    /// Where the run starts in the object.
    pub object_offset: u64,
    /// Bytes (at most the `max` given to [`plan`]).
    pub len: u64,
    /// The file ranges, back to back in the object.
    pub parts: Vec<Extent>,
}

/// Cuts `len` bytes of a file at `offset` into [`Run`]s of at most `max` bytes: consecutive
/// extents of one index that follow each other in its object (dense packing with a range
/// wider than a stripe) share a run, so a 1 MiB WRITE over 3 data servers is 3 calls, not
/// one per stripe unit. Every byte of the range is in exactly one run. Runs are in the file
/// order of their first byte.
pub fn plan(map: &StripeMap, offset: u64, len: u64, max: u64) -> Result<Vec<Run>, StripeError> {
    let max = max.max(1);
    let mut runs: Vec<Run> = Vec::new();
    // The run each index is filling, if any.
    let mut open: Vec<Option<usize>> = vec![None; map.count as usize];
    for mut e in map.extents(offset, len)? {
        while e.len > 0 {
            let slot = open
                .get_mut(e.index as usize)
                .ok_or(StripeError::BadCount {
                    count: map.count,
                    first: e.index,
                })?;
            let n = match *slot {
                Some(r)
                    if runs[r].object_offset + runs[r].len == e.object_offset
                        && runs[r].len < max =>
                {
                    let n = e.len.min(max - runs[r].len);
                    runs[r].len += n;
                    runs[r].parts.push(Extent { len: n, ..e });
                    n
                }
                _ => {
                    let n = e.len.min(max);
                    *slot = Some(runs.len());
                    runs.push(Run {
                        index: e.index,
                        object_offset: e.object_offset,
                        len: n,
                        parts: vec![Extent { len: n, ..e }],
                    });
                    n
                }
            };
            e.file_offset += n;
            e.object_offset += n;
            e.len -= n;
        }
    }
    Ok(runs)
}

/// The write verifier of a striped file: the first 8 bytes of BLAKE3 over a fixed context
/// and the verifiers of its data servers in stripe order, so it changes whenever one of them
/// does (see the module documentation).
pub fn stripe_verifier(verifiers: impl IntoIterator<Item = [u8; 8]>) -> [u8; 8] {
    let mut h = blake3::Hasher::new();
    h.update(b"pnfs-rs 2026 striped file write verifier");
    for v in verifiers {
        h.update(&v);
    }
    let mut out = [0u8; 8];
    out.copy_from_slice(&h.finalize().as_bytes()[..8]);
    out
}

/// What a striped WRITE did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StripedWrite {
    /// Bytes written from the start of the range on, without a gap.
    pub count: u64,
    /// The weakest durability any data server answered.
    pub committed: Stability,
    /// [`stripe_verifier`] after the call.
    pub verifier: [u8; 8],
}

/// A file's stripe set resolved for I/O: its map, the data server of each window position
/// and, for a mirrored set, its stale copies ([`crate::pnfs::mirrors`]).
pub(crate) struct Striping {
    pub(crate) map: StripeMap,
    pub(crate) servers: Vec<u16>,
    pub(crate) set: StripeSet,
    pub(crate) stale: Vec<u32>,
}

/// Where a mirrored file's stale marks go: the store, and the file's export (for the
/// handle a re-silver's layout recall names).
#[derive(Clone, Copy)]
pub struct Marks<'a> {
    /// The metadata store.
    pub store: &'a Store,
    /// The file's export.
    pub export: u16,
}

impl Marks<'_> {
    /// Marks `positions` of `fileid` stale (nothing when empty), durably.
    pub(crate) async fn mark(
        &self,
        pnfs: &Pnfs,
        fileid: u64,
        positions: Vec<u32>,
    ) -> Result<(), NfsStat4> {
        if positions.is_empty() {
            return Ok(());
        }
        pnfs.mirrors()
            .mark(self.store, fileid, self.export, positions)
            .await
    }
}

impl Striping {
    pub(crate) fn of(pnfs: &Pnfs, fileid: u64, set: &StripeSet) -> Result<Self, NfsStat4> {
        let map = set.map().map_err(|e| {
            tracing::error!(?set, error = %e, "a stored stripe set has no valid map");
            NfsStat4::NFS4ERR_SERVERFAULT
        })?;
        let servers = pnfs.stripe_servers(set)?;
        if servers.len() != usize::from(set.device.count) {
            tracing::error!(
                ?set,
                ?servers,
                "the stripe set's ring window has another size"
            );
            return Err(NfsStat4::NFS4ERR_SERVERFAULT);
        }
        let stale = if set.is_mirrored() {
            pnfs.mirrors().stale(fileid)
        } else {
            Vec::new()
        };
        Ok(Self {
            map,
            servers,
            set: *set,
            stale,
        })
    }

    /// The copy of stripe `index` to read: the first one not stale whose data server is
    /// up, as (window position, data server, connection); NFS4ERR_DELAY while none is.
    pub(crate) fn control(
        &self,
        pnfs: &Pnfs,
        index: u32,
    ) -> Result<(u32, u16, DsControl), NfsStat4> {
        let mut first = None;
        for pos in self.set.copies(index) {
            if self.stale.contains(&pos) {
                continue;
            }
            let ds = *self
                .servers
                .get(pos as usize)
                .ok_or(NfsStat4::NFS4ERR_SERVERFAULT)?;
            first.get_or_insert(ds);
            if let Some(c) = pnfs.devices().control(ds) {
                return Ok((pos, ds, c));
            }
        }
        tracing::debug!(
            ds = first,
            "I/O through the MDS waits for a data server that is down"
        );
        Err(NfsStat4::NFS4ERR_DELAY)
    }

    /// The copies of stripe `index` a change must reach: those not stale, each as (window
    /// position, data server).
    pub(crate) fn writable(&self, index: u32) -> Vec<(u32, u16)> {
        self.set
            .copies(index)
            .filter(|p| !self.stale.contains(p))
            .filter_map(|p| Some((p, *self.servers.get(p as usize)?)))
            .collect()
    }

    /// The [`Striping::writable`] copies of stripe `index` split by their data server: those
    /// up, as (window position, data server, connection), and the positions of those down
    /// (left behind if the change goes through on the others). NFS4ERR_DELAY when none is
    /// up.
    #[allow(clippy::type_complexity)]
    pub(crate) fn to_change(
        &self,
        pnfs: &Pnfs,
        index: u32,
    ) -> Result<(Vec<(u32, u16, DsControl)>, Vec<u32>), NfsStat4> {
        let (mut up, mut down) = (Vec::new(), Vec::new());
        for (pos, ds) in self.writable(index) {
            match pnfs.devices().control(ds) {
                Some(c) => up.push((pos, ds, c)),
                None => down.push(pos),
            }
        }
        if up.is_empty() {
            tracing::debug!(
                index,
                "a change through the MDS waits for a data server that is down"
            );
            return Err(NfsStat4::NFS4ERR_DELAY);
        }
        Ok((up, down))
    }

    /// The runs of a range, each with the copy to read it from; NFS4ERR_DELAY if a stripe
    /// has no copy up.
    fn runs(
        &self,
        pnfs: &Pnfs,
        offset: u64,
        len: u64,
    ) -> Result<Vec<(Run, u32, u16, DsControl)>, NfsStat4> {
        let runs = plan(&self.map, offset, len, u64::from(MAX_CTL_IO))
            .map_err(|_| NfsStat4::NFS4ERR_SERVERFAULT)?;
        runs.into_iter()
            .map(|r| {
                let (pos, ds, c) = self.control(pnfs, r.index)?;
                Ok((r, pos, ds, c))
            })
            .collect()
    }
}

/// Admits a change to mirrored file `fileid` (none needed for other files): NFS4ERR_DELAY
/// while it is being re-silvered.
pub(crate) fn admit<'a>(
    pnfs: &'a Pnfs,
    fileid: u64,
    set: &StripeSet,
) -> Result<Option<crate::pnfs::mirrors::IoGuard<'a>>, NfsStat4> {
    pnfs.mirrors().admit(fileid, set.is_mirrored())
}

/// The NFS status a failed control call stands for: a data server that went away is
/// NFS4ERR_DELAY (retry; the registry marks it down), a store error keeps its number, and
/// anything else is the cluster's fault (NFS4ERR_SERVERFAULT, logged).
pub(crate) fn ctl_status(ds: u16, e: &CtlError) -> NfsStat4 {
    match e {
        CtlError::Connect(_) | CtlError::Timeout | CtlError::Closed => {
            tracing::info!(ds, error = %e, "data server unreachable during I/O through the MDS");
            NfsStat4::NFS4ERR_DELAY
        }
        CtlError::Status(
            s @ (CtlStat::CTL_IO
            | CtlStat::CTL_FBIG
            | CtlStat::CTL_NOSPC
            | CtlStat::CTL_ROFS
            | CtlStat::CTL_DQUOT
            | CtlStat::CTL_NOTSUPP),
        ) => NfsStat4(s.0),
        _ => {
            tracing::error!(ds, error = %e, "control I/O failed");
            NfsStat4::NFS4ERR_SERVERFAULT
        }
    }
}

/// Runs `futs` concurrently (each on a task of its own, so a slow data server does not hold
/// up the others) and returns their outputs in order. One future runs inline.
pub(crate) async fn concurrently<T, F>(futs: Vec<F>) -> Result<Vec<T>, NfsStat4>
where
    T: Send + 'static,
    F: Future<Output = T> + Send + 'static,
{
    if futs.len() == 1 {
        let mut out = Vec::with_capacity(1);
        for f in futs {
            out.push(f.await);
        }
        return Ok(out);
    }
    let n = futs.len();
    let mut set = JoinSet::new();
    for (i, f) in futs.into_iter().enumerate() {
        set.spawn(async move { (i, f.await) });
    }
    let mut out: Vec<Option<T>> = (0..n).map(|_| None).collect();
    while let Some(done) = set.join_next().await {
        let (i, v) = done.map_err(|_| NfsStat4::NFS4ERR_SERVERFAULT)?;
        out[i] = Some(v);
    }
    out.into_iter()
        .collect::<Option<Vec<T>>>()
        .ok_or(NfsStat4::NFS4ERR_SERVERFAULT)
}

pub(crate) fn object(fileid: u64, index: u32) -> ObjectId {
    ObjectId {
        file: fileid,
        stripe: index,
    }
}

/// Reads `len` bytes of striped file `fileid` at `offset` (the caller clips the range to
/// the file's size and its `max_io`): every byte in the range is returned, with zeros where
/// a DS object ends before it (a hole, or a stripe unit never written). Any failed call
/// fails the READ.
pub async fn read(
    pnfs: &Pnfs,
    fileid: u64,
    set: &StripeSet,
    offset: u64,
    len: u64,
) -> Result<Bytes, NfsStat4> {
    if len == 0 {
        return Ok(Bytes::new());
    }
    let striping = Striping::of(pnfs, fileid, set)?;
    let runs = striping.runs(pnfs, offset, len)?;
    let calls: Vec<_> = runs
        .iter()
        .map(|(r, pos, ds, c)| {
            let (c, ds, obj) = (c.clone(), *ds, object(fileid, *pos));
            let (at, n) = (r.object_offset, r.len);
            async move {
                c.read(obj, at, n as u32)
                    .await
                    .map_err(|e| ctl_status(ds, &e))
            }
        })
        .collect();
    let got = concurrently(calls).await?;
    let mut datas = Vec::with_capacity(got.len());
    for ((r, pos, _, _), g) in runs.iter().zip(got) {
        let data = match g {
            Ok(g) => g.data,
            // Another copy of a mirrored stripe may answer.
            Err(e) if striping.set.is_mirrored() => {
                read_other_copy(pnfs, &striping, fileid, r, *pos)
                    .await
                    .ok_or(e)?
            }
            Err(e) => return Err(e),
        };
        datas.push(data);
    }
    // One run of one extent read whole: its buffer is the reply's, no copy.
    if let ([(run, _, _, _)], [data]) = (&runs[..], &datas[..]) {
        if run.parts.len() == 1 && data.len() as u64 == len {
            return Ok(data.clone());
        }
    }
    let mut buf = BytesMut::zeroed(len as usize);
    for ((run, _, _, _), data) in runs.iter().zip(&datas) {
        let mut at = 0usize;
        for p in &run.parts {
            if at >= data.len() {
                break;
            }
            let n = (p.len as usize).min(data.len() - at);
            let to = (p.file_offset - offset) as usize;
            buf[to..to + n].copy_from_slice(&data[at..at + n]);
            at += p.len as usize;
        }
    }
    Ok(buf.freeze())
}

/// Run `r` of `fileid` read from a copy other than `failed` that is not stale and whose
/// data server is up: `None` if none answers.
async fn read_other_copy(
    pnfs: &Pnfs,
    striping: &Striping,
    fileid: u64,
    r: &Run,
    failed: u32,
) -> Option<Bytes> {
    for (pos, ds) in striping.writable(r.index) {
        if pos == failed {
            continue;
        }
        let Some(c) = pnfs.devices().control(ds) else {
            continue;
        };
        if let Ok(got) = c
            .read(object(fileid, pos), r.object_offset, r.len as u32)
            .await
        {
            return Some(got.data);
        }
    }
    None
}

/// Writes `data` at `offset` of striped file `fileid`, each run to its data server as
/// durable as `stable` asks, concurrently. A failed run makes the WRITE short (the bytes
/// before the first byte not written; RFC 8881 section 18.32.3 lets a server write less than
/// asked) or, when it fails at the first byte, fails the WRITE.
#[allow(clippy::too_many_arguments)]
pub async fn write(
    pnfs: &Pnfs,
    marks: Marks<'_>,
    fileid: u64,
    set: &StripeSet,
    offset: u64,
    data: &Bytes,
    stable: Stability,
) -> Result<StripedWrite, NfsStat4> {
    let _guard = admit(pnfs, fileid, set)?;
    let striping = Striping::of(pnfs, fileid, set)?;
    let len = data.len() as u64;
    let runs = plan(&striping.map, offset, len, u64::from(MAX_CTL_IO))
        .map_err(|_| NfsStat4::NFS4ERR_SERVERFAULT)?;
    // Every copy of each run that is not stale: (run, position, data server, connection).
    // A copy whose data server is down falls behind (if another copy takes the run).
    let mut targets = Vec::new();
    let mut behind: Vec<(usize, u32)> = Vec::new();
    for (i, r) in runs.iter().enumerate() {
        let (up, down) = striping.to_change(pnfs, r.index)?;
        targets.extend(up.into_iter().map(|(pos, ds, c)| (i, pos, ds, c)));
        behind.extend(down.into_iter().map(|pos| (i, pos)));
    }
    let calls: Vec<_> = targets
        .iter()
        .map(|(i, pos, _, c)| {
            let r = &runs[*i];
            let pieces: Vec<Bytes> = r
                .parts
                .iter()
                .map(|p| {
                    let from = (p.file_offset - offset) as usize;
                    data.slice(from..from + p.len as usize)
                })
                .collect();
            let (c, obj, at) = (c.clone(), object(fileid, *pos), r.object_offset);
            async move { c.write(obj, at, stable, &pieces).await }
        })
        .collect();
    let got = concurrently(calls).await?;

    // Per run: the most any copy wrote, and the first failure.
    let mut best: Vec<u64> = vec![0; runs.len()];
    let mut failure: Vec<Option<NfsStat4>> = vec![None; runs.len()];
    let mut committed = Stability::FileSync;
    let mut verifiers: Vec<Option<[u8; 8]>> = vec![None; striping.servers.len()];
    for ((i, pos, ds, _), res) in targets.iter().zip(&got) {
        match res {
            Ok(w) => {
                pnfs.devices().note_write_verifier(*ds, w.verifier);
                verifiers[*pos as usize] = Some(w.verifier);
                committed = committed.min(w.committed);
                best[*i] = best[*i].max(u64::from(w.count));
            }
            Err(e) => {
                failure[*i].get_or_insert_with(|| ctl_status(*ds, e));
            }
        }
    }
    // A copy that wrote less than the best of its run fell behind.
    for ((i, pos, _, _), res) in targets.iter().zip(&got) {
        let n = res.as_ref().map_or(0, |w| u64::from(w.count));
        if n < best[*i] {
            behind.push((*i, *pos));
        }
    }

    // Bytes written of each part, in file order.
    let mut parts: Vec<(u64, u64, u64, usize)> = Vec::new();
    for (i, run) in runs.iter().enumerate() {
        let mut written = best[i];
        for p in &run.parts {
            let n = written.min(p.len);
            written -= n;
            parts.push((p.file_offset, p.len, n, i));
        }
    }
    parts.sort_unstable_by_key(|p| p.0);
    let mut count = 0;
    for &(_, plen, n, i) in &parts {
        count += n;
        if n < plen {
            if count == 0 {
                return Err(failure[i].unwrap_or_else(|| {
                    tracing::error!(fileid, "a data server wrote none of a control WRITE");
                    NfsStat4::NFS4ERR_SERVERFAULT
                }));
            }
            break;
        }
    }
    // Copies behind on a run another copy took: stale, durably, before the reply.
    let mut stale: Vec<u32> = behind
        .into_iter()
        .filter(|(i, _)| best[*i] > 0)
        .map(|(_, pos)| pos)
        .collect();
    stale.sort_unstable();
    stale.dedup();
    marks.mark(pnfs, fileid, stale).await?;
    let verifier = stripe_verifier(striping.servers.iter().zip(verifiers).map(|(&ds, v)| {
        v.or_else(|| pnfs.devices().write_verifier(ds))
            .unwrap_or_default()
    }));
    Ok(StripedWrite {
        count,
        committed,
        verifier,
    })
}

/// The write verifier of a file with stripe set `set` as the registry knows its data servers
/// now, for a WRITE of nothing (which reaches no data server).
pub fn known_verifier(pnfs: &Pnfs, set: &StripeSet) -> Result<[u8; 8], NfsStat4> {
    let servers = pnfs.stripe_servers(set)?;
    Ok(stripe_verifier(servers.iter().map(|&ds| {
        pnfs.devices().write_verifier(ds).unwrap_or_default()
    })))
}

/// Commits striped file `fileid`: a control COMMIT of each copy's whole object (a store
/// syncs whole objects anyway, and a file range would need mapping to each object),
/// concurrently; returns [`stripe_verifier`] of the data servers' verifiers. A copy of a
/// mirrored stripe that is down or fails while another copy commits is marked stale.
pub async fn commit(
    pnfs: &Pnfs,
    marks: Marks<'_>,
    fileid: u64,
    set: &StripeSet,
) -> Result<[u8; 8], NfsStat4> {
    let _guard = admit(pnfs, fileid, set)?;
    let striping = Striping::of(pnfs, fileid, set)?;
    let mut targets = Vec::new();
    let mut behind: Vec<(u32, u32)> = Vec::new();
    for index in 0..striping.map.count {
        let (up, down) = striping.to_change(pnfs, index)?;
        targets.extend(up.into_iter().map(|(pos, ds, c)| (index, pos, ds, c)));
        behind.extend(down.into_iter().map(|pos| (index, pos)));
    }
    let calls: Vec<_> = targets
        .iter()
        .map(|(_, pos, ds, c)| {
            let (c, ds, obj) = (c.clone(), *ds, object(fileid, *pos));
            async move { c.commit(obj, 0, 0).await.map_err(|e| ctl_status(ds, &e)) }
        })
        .collect();
    let got = concurrently(calls).await?;
    let mut verifiers: Vec<Option<[u8; 8]>> = vec![None; striping.servers.len()];
    let mut done = vec![false; striping.map.count as usize];
    let mut failure = None;
    for ((index, pos, ds, _), v) in targets.iter().zip(got) {
        match v {
            Ok(v) => {
                pnfs.devices().note_write_verifier(*ds, v);
                verifiers[*pos as usize] = Some(v);
                done[*index as usize] = true;
            }
            Err(e) => {
                failure.get_or_insert(e);
                behind.push((*index, *pos));
            }
        }
    }
    if let Some(e) = done.iter().any(|d| !d).then_some(()).and(failure) {
        return Err(e);
    }
    let mut stale: Vec<u32> = behind.into_iter().map(|(_, pos)| pos).collect();
    stale.sort_unstable();
    stale.dedup();
    marks.mark(pnfs, fileid, stale).await?;
    Ok(stripe_verifier(striping.servers.iter().zip(verifiers).map(
        |(&ds, v)| {
            v.or_else(|| pnfs.devices().write_verifier(ds))
                .unwrap_or_default()
        },
    )))
}

#[cfg(test)]
mod tests {
    use layouts::Packing;
    use proptest::prelude::*;

    use super::*;

    fn map(unit: u32, count: u32, packing: Packing) -> StripeMap {
        StripeMap::new(unit, count, 0, 0, packing).unwrap()
    }

    #[test]
    fn a_dense_range_over_several_rounds_is_one_run_per_index() {
        let m = map(64 << 10, 3, Packing::Dense);
        let runs = plan(&m, 0, 1 << 20, 1 << 20).unwrap();
        assert_eq!(runs.len(), 3);
        // 16 units: index 0 holds 6, indices 1 and 2 hold 5, each back to back.
        let lens: Vec<u64> = runs.iter().map(|r| r.len).collect();
        assert_eq!(lens, [6 << 16, 5 << 16, 5 << 16]);
        assert!(runs.iter().all(|r| r.object_offset == 0));
    }

    #[test]
    fn a_sparse_range_is_one_run_per_unit() {
        let m = map(64 << 10, 3, Packing::Sparse);
        let runs = plan(&m, 0, 6 << 16, 1 << 20).unwrap();
        assert_eq!(runs.len(), 6);
    }

    #[test]
    fn no_run_passes_the_maximum_even_with_units_larger_than_it() {
        let m = map(4 << 20, 2, Packing::Dense);
        let runs = plan(&m, 1000, 9 << 20, 1 << 20).unwrap();
        assert!(runs.iter().all(|r| r.len <= 1 << 20));
        assert_eq!(runs.iter().map(|r| r.len).sum::<u64>(), 9 << 20);
    }

    #[test]
    fn the_verifier_changes_with_any_data_servers_and_with_their_order() {
        let a = stripe_verifier([[1; 8], [2; 8], [3; 8]]);
        assert_eq!(a, stripe_verifier([[1; 8], [2; 8], [3; 8]]));
        assert_ne!(a, stripe_verifier([[1; 8], [2; 8], [4; 8]]));
        assert_ne!(a, stripe_verifier([[2; 8], [1; 8], [3; 8]]));
    }

    proptest! {
        /// Every byte of the range is in exactly one run, at the object offset the map gives
        /// it, runs are contiguous in their object and within the maximum.
        #[test]
        fn runs_cover_the_range_once_where_the_map_puts_each_byte(
            unit_64ths in 1u32..64,
            count in 1u32..5,
            sparse in any::<bool>(),
            offset in 0u64..20_000,
            len in 0u64..40_000,
            max in 1u64..9_000,
        ) {
            let packing = if sparse { Packing::Sparse } else { Packing::Dense };
            let m = map(unit_64ths * 64, count, packing);
            let runs = plan(&m, offset, len, max).unwrap();
            let mut seen = Vec::new();
            let mut first = Vec::new();
            for r in &runs {
                prop_assert!(r.len <= max && r.len > 0);
                first.push(r.parts[0].file_offset);
                let mut at = r.object_offset;
                for p in &r.parts {
                    prop_assert_eq!(p.index, r.index);
                    prop_assert_eq!(p.object_offset, at);
                    prop_assert_eq!(m.index_of(p.file_offset).unwrap(), r.index);
                    prop_assert_eq!(m.object_offset(p.file_offset).unwrap(), p.object_offset);
                    at += p.len;
                    seen.push((p.file_offset, p.len));
                }
                prop_assert_eq!(at - r.object_offset, r.len);
            }
            prop_assert!(first.windows(2).all(|w| w[0] < w[1]), "runs in file order");
            seen.sort_unstable();
            let mut end = offset;
            for (o, l) in seen {
                prop_assert_eq!(o, end);
                end += l;
            }
            prop_assert_eq!(end, offset + len);
        }
    }
}

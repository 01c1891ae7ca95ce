//! Server-side copies (RFC 7862 sections 4 and 15.2): the table of asynchronous copies and
//! their stateids, and the engine that moves the bytes without a client.
//!
//! ```text
//!  COPY (ops/copy.rs) ─ checks ─> small (<= SYNC_COPY_MAX) or ca_synchronous: engine, reply
//!                               └ else: Copies::start (stateid, caps) ─> task: engine
//!                                       ─> record size ─> CB_OFFLOAD (back channel)
//!  engine, by where the two files keep their data:
//!    both MDS-local          ─> ObjectStore::copy_range, 64 MiB at a time (copy_file_range)
//!    both striped, sparse    ─> control COPY on one data server (one shared file per file id)
//!    both striped, dense     ─> steps cut at both files' stripe unit boundaries; a step whose
//!                               source and destination units live on one data server is a
//!                               control COPY there (steps merged into runs of <= 64 MiB per
//!                               server and object pair, all servers at once); the others are
//!                               streamed by the MDS (control READ then WRITE)
//!    one striped, one not    ─> streamed, 1 MiB pieces
//! ```
//!
//! Streaming keeps at most [`IN_FLIGHT`] pieces of at most `MAX_CTL_IO` in memory. The
//! range is done in windows (at most 64 MiB per data server); the progress OFFLOAD_STATUS
//! reports moves at the end of each window, and a cancel takes effect between windows.

use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use bytes::Bytes;
use nfs_proto::control::{MAX_CTL_COPY, MAX_CTL_IO};
use nfs_proto::nfs4::*;
use nfs_server::clock::SharedClock;
use nfs_server::io::{blocking, hole_filled};
use pfs_core::{ObjectId, Stability};
use tokio::task::JoinSet;

use crate::pnfs::datapath;
use crate::pnfs::devices::Devices;
use crate::server::{Namespace, Pnfs};
use crate::store::StripeSet;

/// Copies of at most this many bytes are done before the reply even when the client asks
/// for an asynchronous one (RFC 7862 section 15.2.3 lets the server choose): 4 MiB takes
/// milliseconds, less than a CB_OFFLOAD round trip.
pub const SYNC_COPY_MAX: u64 = 4 << 20;
/// Asynchronous copies the table holds at most (running, or finished and kept for
/// OFFLOAD_STATUS); more are NFS4ERR_DELAY.
pub const MAX_COPIES: usize = 256;
/// Asynchronous copies one client may have in the table.
pub const MAX_COPIES_PER_CLIENT: usize = 16;
/// Byte 0 of a copy stateid's `other`: a kind of its own, apart from open (1), lock (2),
/// delegation (3) and layout (4) stateids, so no other operation takes it.
pub const COPY_STATEID_KIND: u8 = 5;
/// Control calls or streamed pieces in flight at once for one copy.
pub const IN_FLIGHT: usize = 8;

/// How a finished copy ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Every byte copied; what CB_OFFLOAD reports.
    Done(WriteResponse4),
    /// Failed (or cancelled) after `copied` bytes from the start of the range.
    Failed {
        /// Why.
        status: NfsStat4,
        /// Bytes done before.
        copied: u64,
    },
}

/// One asynchronous copy.
#[derive(Debug)]
pub struct Job {
    /// The client that started it (only it may ask about it).
    pub clientid: u64,
    /// Its stateid (`wr_callback_id`).
    pub stateid: Stateid4,
    /// Bytes done from the start of the range (OFFLOAD_STATUS `osr_count`).
    pub progress: AtomicU64,
    cancelled: AtomicBool,
    outcome: Mutex<Option<(Outcome, Instant)>>,
}

impl Job {
    /// Whether OFFLOAD_CANCEL (or the client's lease ending) asked it to stop.
    pub fn is_cancelled(&self) -> bool {
        self.cancelled.load(Ordering::Relaxed)
    }

    /// How it ended, once it has.
    pub fn outcome(&self) -> Option<Outcome> {
        self.outcome
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .as_ref()
            .map(|(o, _)| o.clone())
    }
}

/// Counters of copies since start (the metrics page).
#[derive(Debug, Default)]
struct Counters {
    sync: AtomicU64,
    asynchronous: AtomicU64,
    cancelled: AtomicU64,
    failed: AtomicU64,
    bytes: AtomicU64,
    streamed_bytes: AtomicU64,
}

/// A snapshot of the copy counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CopyCounters {
    /// Copies done before the reply.
    pub sync: u64,
    /// Copies started in the background.
    pub asynchronous: u64,
    /// Background copies stopped by OFFLOAD_CANCEL or their client's lease ending.
    pub cancelled: u64,
    /// Copies that failed.
    pub failed: u64,
    /// Bytes written into destinations by COPY and CLONE.
    pub bytes: u64,
    /// Of those, bytes the MDS streamed through itself.
    pub streamed_bytes: u64,
    /// Copies in the table now.
    pub in_table: u64,
}

/// The asynchronous copy table, with its stateid minting.
#[derive(Debug)]
pub struct Copies {
    key: [u8; 32],
    epoch: u16,
    next: AtomicU32,
    table: Mutex<HashMap<[u8; 12], Arc<Job>>>,
    counters: Counters,
    /// The server's clock: when finished copies were done, and how long they stay.
    clock: SharedClock,
}

impl Copies {
    /// The table of this boot (`epoch`), its stateid MACs keyed from the server key, on the
    /// server's `clock`.
    pub fn new(server_key: &[u8; 32], epoch: u16, clock: SharedClock) -> Self {
        let mut material = [0u8; 34];
        material[..32].copy_from_slice(server_key);
        material[32..].copy_from_slice(&epoch.to_be_bytes());
        Self {
            key: blake3::derive_key("pnfs-rs 2026 copy stateid", &material),
            epoch,
            next: AtomicU32::new(1),
            table: Mutex::new(HashMap::new()),
            counters: Counters::default(),
            clock,
        }
    }

    fn table(&self) -> std::sync::MutexGuard<'_, HashMap<[u8; 12], Arc<Job>>> {
        self.table.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A copy stateid: `5 || 0 || epoch (2) || counter (4) || MAC (4)`, the MAC keyed BLAKE3
    /// over the first 8 bytes and the client id, so stateids cannot be guessed.
    fn mint(&self, clientid: u64) -> Result<Stateid4, NfsStat4> {
        let counter = self
            .next
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_add(1))
            .map_err(|_| NfsStat4::NFS4ERR_RESOURCE)?;
        let mut other = [0u8; 12];
        other[0] = COPY_STATEID_KIND;
        other[2..4].copy_from_slice(&self.epoch.to_be_bytes());
        other[4..8].copy_from_slice(&counter.to_be_bytes());
        let mut input = [0u8; 16];
        input[..8].copy_from_slice(&other[..8]);
        input[8..].copy_from_slice(&clientid.to_be_bytes());
        other[8..].copy_from_slice(&blake3::keyed_hash(&self.key, &input).as_bytes()[..4]);
        Ok(Stateid4 { seqid: 1, other })
    }

    /// Drops finished copies kept longer than `keep` (OFFLOAD_STATUS after CB_OFFLOAD).
    fn sweep(table: &mut HashMap<[u8; 12], Arc<Job>>, keep: Duration, now: Instant) {
        table.retain(|_, j| {
            j.outcome
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .as_ref()
                .is_none_or(|(_, at)| now.saturating_duration_since(*at) < keep)
        });
    }

    /// Enters a new asynchronous copy of `clientid`: NFS4ERR_DELAY when the table or the
    /// client's share of it is full. `keep` is how long finished copies stay (the lease).
    pub fn start(&self, clientid: u64, keep: Duration) -> Result<Arc<Job>, NfsStat4> {
        let mut t = self.table();
        Self::sweep(&mut t, keep, self.clock.now());
        let mine = t.values().filter(|j| j.clientid == clientid).count();
        if t.len() >= MAX_COPIES || mine >= MAX_COPIES_PER_CLIENT {
            return Err(NfsStat4::NFS4ERR_DELAY);
        }
        let job = Arc::new(Job {
            clientid,
            stateid: self.mint(clientid)?,
            progress: AtomicU64::new(0),
            cancelled: AtomicBool::new(false),
            outcome: Mutex::new(None),
        });
        t.insert(job.stateid.other, job.clone());
        self.counters.asynchronous.fetch_add(1, Ordering::Relaxed);
        Ok(job)
    }

    /// The copy `stateid` names, if it is `clientid`'s: NFS4ERR_BAD_STATEID otherwise
    /// (unknown, another client's, finished and forgotten), NFS4ERR_STALE_STATEID for a
    /// copy stateid of another boot.
    pub fn find(&self, clientid: u64, stateid: &Stateid4) -> Result<Arc<Job>, NfsStat4> {
        let other = stateid.other;
        if other[0] == COPY_STATEID_KIND && other[2..4] != self.epoch.to_be_bytes() {
            return Err(NfsStat4::NFS4ERR_STALE_STATEID);
        }
        match self.table().get(&other) {
            Some(j) if j.clientid == clientid => Ok(j.clone()),
            _ => Err(NfsStat4::NFS4ERR_BAD_STATEID),
        }
    }

    /// Records how `job` ended.
    pub fn finish(&self, job: &Job, outcome: Outcome) {
        match &outcome {
            Outcome::Done(_) => {}
            Outcome::Failed { .. } if job.is_cancelled() => {
                self.counters.cancelled.fetch_add(1, Ordering::Relaxed);
            }
            Outcome::Failed { .. } => {
                self.counters.failed.fetch_add(1, Ordering::Relaxed);
            }
        }
        *job.outcome.lock().unwrap_or_else(PoisonError::into_inner) =
            Some((outcome, self.clock.now()));
    }

    /// OFFLOAD_CANCEL: asks the copy to stop and forgets it (RFC 7862 section 15.8: the
    /// stateid is no longer valid afterwards).
    pub fn cancel(&self, job: &Job) {
        job.cancelled.store(true, Ordering::Relaxed);
        self.table().remove(&job.stateid.other);
    }

    /// The client's lease ended: its copies stop and are forgotten.
    pub fn client_gone(&self, clientid: u64) {
        self.table().retain(|_, j| {
            if j.clientid == clientid {
                j.cancelled.store(true, Ordering::Relaxed);
                false
            } else {
                true
            }
        });
    }

    /// Counts a copy done before the reply.
    pub fn note_sync(&self) {
        self.counters.sync.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts a synchronous copy that failed.
    pub fn note_failed(&self) {
        self.counters.failed.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts bytes written into a destination (and of those, `streamed` by the MDS).
    pub fn note_bytes(&self, bytes: u64, streamed: u64) {
        self.counters.bytes.fetch_add(bytes, Ordering::Relaxed);
        self.counters
            .streamed_bytes
            .fetch_add(streamed, Ordering::Relaxed);
    }

    /// The counters now.
    pub fn counters(&self) -> CopyCounters {
        let c = &self.counters;
        let g = |a: &AtomicU64| a.load(Ordering::Relaxed);
        CopyCounters {
            sync: g(&c.sync),
            asynchronous: g(&c.asynchronous),
            cancelled: g(&c.cancelled),
            failed: g(&c.failed),
            bytes: g(&c.bytes),
            streamed_bytes: g(&c.streamed_bytes),
            in_table: self.table().len() as u64,
        }
    }
}

/// Where a file keeps its data.
#[derive(Clone, Debug)]
pub enum Place {
    /// The MDS's own object (`ObjectId::whole`).
    Local(u64),
    /// DS objects of its stripe set.
    Striped(u64, StripeSet),
}

impl Place {
    fn fileid(&self) -> u64 {
        match self {
            Place::Local(f) | Place::Striped(f, _) => *f,
        }
    }
}

/// One copy's byte range, resolved: `count` bytes from `src_offset` of `src` to
/// `dst_offset` of `dst`.
#[derive(Clone, Debug)]
pub struct Plan {
    /// The source.
    pub src: Place,
    /// The destination.
    pub dst: Place,
    /// Source file offset.
    pub src_offset: u64,
    /// Destination file offset.
    pub dst_offset: u64,
    /// Bytes (already clipped to the source's size).
    pub count: u64,
    /// The export of both files.
    pub export: u16,
}

impl Plan {
    /// Whether either file is mirrored: the data servers' own copies and clones would reach
    /// one copy only, so the MDS streams the bytes (and CLONE is not supported).
    fn mirrored(&self) -> bool {
        [&self.src, &self.dst]
            .iter()
            .any(|p| matches!(p, Place::Striped(_, s) if s.is_mirrored()))
    }
}

/// A file and its stripe map and servers, for the dense path.
struct Striped {
    fileid: u64,
    map: layouts::StripeMap,
    servers: Vec<u16>,
}

impl Striped {
    fn of(pnfs: &Pnfs, fileid: u64, set: &StripeSet) -> Result<Self, NfsStat4> {
        let map = set.map().map_err(|_| NfsStat4::NFS4ERR_SERVERFAULT)?;
        let servers = pnfs.stripe_servers(set)?;
        if servers.len() != map.count as usize {
            return Err(NfsStat4::NFS4ERR_SERVERFAULT);
        }
        Ok(Self {
            fileid,
            map,
            servers,
        })
    }

    /// Stripe index, object offset and data server of file offset `at`.
    fn locate(&self, at: u64) -> Result<(u32, u64, u16), NfsStat4> {
        let bad = |_| NfsStat4::NFS4ERR_SERVERFAULT;
        let index = self.map.index_of(at).map_err(bad)?;
        let oo = self.map.object_offset(at).map_err(bad)?;
        let ds = *self
            .servers
            .get(index as usize)
            .ok_or(NfsStat4::NFS4ERR_SERVERFAULT)?;
        Ok((index, oo, ds))
    }
}

/// A control COPY (or CLONE) on one data server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LocalRun {
    /// The data server holding both objects.
    pub ds: u16,
    /// Source object.
    pub src: ObjectId,
    /// Destination object.
    pub dst: ObjectId,
    /// Source object offset.
    pub src_offset: u64,
    /// Destination object offset.
    pub dst_offset: u64,
    /// Bytes.
    pub len: u64,
}

/// A file range the MDS streams: `len` bytes from source file offset `src` to destination
/// file offset `dst`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stream {
    /// Source file offset.
    pub src: u64,
    /// Destination file offset.
    pub dst: u64,
    /// Bytes (at most `MAX_CTL_IO`).
    pub len: u64,
}

/// Cuts `len` bytes (source file offset `src_at`, destination `dst_at`) of two striped
/// files into control COPYs on the data server that holds both units, merged into runs of at
/// most `max_run` per (server, object pair) contiguous in both objects, and pieces to stream
/// where the units live on different servers. Steps end at every unit boundary of either
/// file, so each step lies in one unit of each.
fn plan_dense(
    s: &Striped,
    d: &Striped,
    src_at: u64,
    dst_at: u64,
    len: u64,
    max_run: u64,
) -> Result<(Vec<LocalRun>, Vec<Stream>), NfsStat4> {
    let (su, du) = (u64::from(s.map.unit), u64::from(d.map.unit));
    let mut runs: Vec<LocalRun> = Vec::new();
    let mut open: HashMap<(u16, u32, u32), usize> = HashMap::new();
    let mut streams: Vec<Stream> = Vec::new();
    let mut pos = 0;
    while pos < len {
        let (a, b) = (src_at + pos, dst_at + pos);
        let step = (su - a % su).min(du - b % du).min(len - pos);
        let (si, soo, sds) = s.locate(a)?;
        let (di, doo, dds) = d.locate(b)?;
        if sds == dds {
            let key = (sds, si, di);
            match open.get(&key).map(|&i| &mut runs[i]) {
                Some(r)
                    if r.src_offset + r.len == soo
                        && r.dst_offset + r.len == doo
                        && r.len + step <= max_run =>
                {
                    r.len += step;
                }
                _ => {
                    open.insert(key, runs.len());
                    runs.push(LocalRun {
                        ds: sds,
                        src: ObjectId {
                            file: s.fileid,
                            stripe: si,
                        },
                        dst: ObjectId {
                            file: d.fileid,
                            stripe: di,
                        },
                        src_offset: soo,
                        dst_offset: doo,
                        len: step,
                    });
                }
            }
        } else {
            match streams.last_mut() {
                Some(p) if p.src + p.len == a && p.len + step <= u64::from(MAX_CTL_IO) => {
                    p.len += step;
                }
                _ => streams.push(Stream {
                    src: a,
                    dst: b,
                    len: step,
                }),
            }
        }
        pos += step;
    }
    Ok((runs, streams))
}

/// Runs `futs` with at most [`IN_FLIGHT`] at once; the first error wins.
async fn bounded<F>(futs: Vec<F>) -> Result<(), NfsStat4>
where
    F: Future<Output = Result<(), NfsStat4>> + Send + 'static,
{
    let mut set = JoinSet::new();
    let mut first_err = None;
    for f in futs {
        if set.len() >= IN_FLIGHT {
            if let Some(r) = set.join_next().await {
                if let Err(e) = r.unwrap_or(Err(NfsStat4::NFS4ERR_SERVERFAULT)) {
                    first_err.get_or_insert(e);
                }
            }
        }
        if first_err.is_some() {
            break;
        }
        set.spawn(f);
    }
    while let Some(r) = set.join_next().await {
        if let Err(e) = r.unwrap_or(Err(NfsStat4::NFS4ERR_SERVERFAULT)) {
            first_err.get_or_insert(e);
        }
    }
    first_err.map_or(Ok(()), Err)
}

/// A control COPY of one run (at most `MAX_CTL_COPY`).
async fn local_copy(devices: Devices, r: LocalRun) -> Result<(), NfsStat4> {
    let c = devices.control(r.ds).ok_or(NfsStat4::NFS4ERR_DELAY)?;
    c.copy(r.src, r.dst, r.src_offset, r.dst_offset, r.len)
        .await
        .map(|_| ())
        .map_err(|e| datapath::ctl_status(r.ds, &e))
}

/// A control CLONE of one run.
async fn local_clone(devices: Devices, r: LocalRun) -> Result<(), NfsStat4> {
    let c = devices.control(r.ds).ok_or(NfsStat4::NFS4ERR_DELAY)?;
    c.clone_range(r.src, r.dst, r.src_offset, r.dst_offset, r.len)
        .await
        .map_err(|e| datapath::ctl_status(r.ds, &e))
}

/// Reads `len` bytes (at most `MAX_CTL_IO`) of a file at `at`, zeros for holes.
async fn read_piece(
    ns: &Namespace,
    pnfs: &Pnfs,
    p: &Place,
    at: u64,
    len: u64,
) -> Result<Bytes, NfsStat4> {
    match p {
        Place::Striped(f, set) => datapath::read(pnfs, *f, set, at, len).await,
        Place::Local(f) => {
            let (data, id) = (ns.data().clone(), ObjectId::whole(*f));
            let done = blocking(move || data.read(id, at, len as u32)).await?;
            Ok(hole_filled(done.data, done.eof, len as usize))
        }
    }
}

/// Writes a piece durably (FILE_SYNC).
async fn write_piece(
    ns: &Namespace,
    pnfs: &Pnfs,
    export: u16,
    p: &Place,
    at: u64,
    data: Bytes,
) -> Result<(), NfsStat4> {
    let len = data.len() as u64;
    let written = match p {
        Place::Striped(f, set) => {
            let marks = datapath::Marks {
                store: ns.store(),
                export,
            };
            datapath::write(pnfs, marks, *f, set, at, &data, Stability::FileSync)
                .await?
                .count
        }
        Place::Local(f) => {
            let (store, id) = (ns.data().clone(), ObjectId::whole(*f));
            blocking(move || store.write(id, at, &[data], Stability::FileSync))
                .await?
                .count
        }
    };
    if written != len {
        return Err(NfsStat4::NFS4ERR_IO);
    }
    Ok(())
}

/// What the copy engine works on: the namespace (the data of files without a stripe set),
/// the data servers, and the copy counters. Cheap to clone: each piece streamed through the
/// MDS runs as a future of its own and holds one.
#[derive(Clone)]
pub struct Engine {
    ns: Arc<Namespace>,
    pnfs: Arc<Pnfs>,
    copies: Arc<Copies>,
}

impl Engine {
    /// The engine over these handles.
    pub fn new(ns: &Arc<Namespace>, pnfs: &Arc<Pnfs>, copies: &Arc<Copies>) -> Self {
        Self {
            ns: ns.clone(),
            pnfs: pnfs.clone(),
            copies: copies.clone(),
        }
    }
}

/// Streams one piece through the MDS.
async fn stream_piece(e: Engine, plan: Arc<Plan>, s: Stream) -> Result<(), NfsStat4> {
    let data = read_piece(&e.ns, &e.pnfs, &plan.src, s.src, s.len).await?;
    write_piece(&e.ns, &e.pnfs, plan.export, &plan.dst, s.dst, data).await?;
    e.copies.note_bytes(0, s.len);
    Ok(())
}

/// Copies `plan`, moving `job`'s progress window by window and stopping between windows
/// once it is cancelled. Returns the bytes copied, or the failure and the bytes done before.
pub async fn run(e: &Engine, plan: &Plan, job: Option<&Job>) -> Result<u64, (NfsStat4, u64)> {
    let plan = Arc::new(plan.clone());
    let dense = match (&plan.src, &plan.dst) {
        (Place::Striped(sf, ss), Place::Striped(df, ds))
            if (ss.packing == layouts::Packing::Dense || ds.packing == layouts::Packing::Dense)
                && !plan.mirrored() =>
        {
            let s = Striped::of(&e.pnfs, *sf, ss).map_err(|e| (e, 0))?;
            let d = Striped::of(&e.pnfs, *df, ds).map_err(|e| (e, 0))?;
            Some((s, d))
        }
        _ => None,
    };
    let window = match (&plan.src, &plan.dst, &dense) {
        (_, _, Some((s, d))) => {
            let steps_cap = u64::from(s.map.unit.min(d.map.unit)) * 65536;
            (MAX_CTL_COPY * d.servers.len() as u64).min(steps_cap)
        }
        (Place::Local(_), Place::Local(_), _) => MAX_CTL_COPY,
        (Place::Striped(..), Place::Striped(..), _) if !plan.mirrored() => MAX_CTL_COPY,
        _ => u64::from(MAX_CTL_IO) * IN_FLIGHT as u64,
    };
    let mut done = 0;
    while done < plan.count {
        if job.is_some_and(Job::is_cancelled) {
            // Nobody hears of a cancelled copy (its stateid is gone): the status is for
            // the log and the counters.
            return Err((NfsStat4::NFS4ERR_OFFLOAD_DENIED, done));
        }
        let n = (plan.count - done).min(window);
        let (a, b) = (plan.src_offset + done, plan.dst_offset + done);
        copy_window(e, &plan, dense.as_ref(), a, b, n)
            .await
            .map_err(|s| (s, done))?;
        done += n;
        e.copies.note_bytes(n, 0);
        if let Some(j) = job {
            j.progress.store(done, Ordering::Relaxed);
        }
    }
    Ok(done)
}

/// The per-copy runs of a range of two mirrored files on the same window with every copy
/// good and up (a COPY or CLONE into a new file gives it the source's set, `ops::copy`):
/// copy `k` of the source and of the destination are on the same data server, which copies
/// or clones `[a, a + n)` to `b` itself, the offsets being file offsets in every copy.
/// `None` otherwise (the MDS streams, which writes every good copy).
fn mirror_runs(pnfs: &Pnfs, plan: &Plan, a: u64, b: u64, n: u64) -> Option<Vec<LocalRun>> {
    let (Place::Striped(sf, ss), Place::Striped(df, ds)) = (&plan.src, &plan.dst) else {
        return None;
    };
    let same = ss.is_mirrored()
        && ss.device == ds.device
        && ss.mirrors == ds.mirrors
        && ss.stripe_count() == 1
        && ss.packing == layouts::Packing::Dense
        && ds.packing == layouts::Packing::Dense;
    if !same || !pnfs.mirrors().stale(*sf).is_empty() || !pnfs.mirrors().stale(*df).is_empty() {
        return None;
    }
    let servers = pnfs.stripe_servers(ds).ok()?;
    if servers.iter().any(|&id| !pnfs.devices().is_up(id)) {
        return None;
    }
    Some(
        servers
            .iter()
            .enumerate()
            .map(|(p, &ds)| LocalRun {
                ds,
                src: ObjectId {
                    file: *sf,
                    stripe: p as u32,
                },
                dst: ObjectId {
                    file: *df,
                    stripe: p as u32,
                },
                src_offset: a,
                dst_offset: b,
                len: n,
            })
            .collect(),
    )
}

/// Runs [`mirror_runs`]' `runs` with `each` (a copy or a clone on one data server), the
/// destination admitted as a change of a mirrored file (not while it is re-silvered).
async fn run_mirrored<F, Fut>(
    e: &Engine,
    plan: &Plan,
    runs: Vec<LocalRun>,
    each: F,
) -> Result<(), NfsStat4>
where
    F: Fn(Devices, LocalRun) -> Fut,
    Fut: Future<Output = Result<(), NfsStat4>> + Send + 'static,
{
    let _guard = match &plan.dst {
        Place::Striped(f, set) => datapath::admit(&e.pnfs, *f, set)?,
        Place::Local(_) => None,
    };
    let futs: Vec<_> = runs
        .into_iter()
        .map(|r| each(e.pnfs.devices().clone(), r))
        .collect();
    bounded(futs).await
}

async fn copy_window(
    e: &Engine,
    plan: &Arc<Plan>,
    dense: Option<&(Striped, Striped)>,
    a: u64,
    b: u64,
    n: u64,
) -> Result<(), NfsStat4> {
    if let Some(runs) = mirror_runs(&e.pnfs, plan, a, b, n) {
        return run_mirrored(e, plan, runs, local_copy).await;
    }
    match (&plan.src, &plan.dst) {
        (Place::Local(s), Place::Local(d)) => {
            let (store, s, d) = (
                e.ns.data().clone(),
                ObjectId::whole(*s),
                ObjectId::whole(*d),
            );
            blocking(move || store.copy_range(s, d, a, b, n)).await?;
            Ok(())
        }
        // Mirrored files are streamed through the MDS, which writes every copy.
        (Place::Striped(..), Place::Striped(_, dset)) if !plan.mirrored() => match dense {
            Some((s, d)) => {
                let (runs, streams) = plan_dense(s, d, a, b, n, MAX_CTL_COPY)?;
                let mut futs: Vec<std::pin::Pin<Box<dyn Future<Output = _> + Send>>> = Vec::new();
                for r in runs {
                    futs.push(Box::pin(local_copy(e.pnfs.devices().clone(), r)));
                }
                for p in streams {
                    futs.push(Box::pin(stream_piece(e.clone(), plan.clone(), p)));
                }
                bounded(futs).await
            }
            None => {
                // Sparse packing (the shared backend): one file per file id, which every
                // data server sees whole, so one of them copies the range in place.
                let ds = *e
                    .pnfs
                    .stripe_servers(dset)?
                    .first()
                    .ok_or(NfsStat4::NFS4ERR_SERVERFAULT)?;
                let run = LocalRun {
                    ds,
                    src: ObjectId::whole(plan.src.fileid()),
                    dst: ObjectId::whole(plan.dst.fileid()),
                    src_offset: a,
                    dst_offset: b,
                    len: n,
                };
                local_copy(e.pnfs.devices().clone(), run).await
            }
        },
        _ => {
            let piece = u64::from(MAX_CTL_IO);
            let mut futs = Vec::new();
            let mut at = 0;
            while at < n {
                let len = (n - at).min(piece);
                let s = Stream {
                    src: a + at,
                    dst: b + at,
                    len,
                };
                futs.push(stream_piece(e.clone(), plan.clone(), s));
                at += len;
            }
            bounded(futs).await
        }
    }
}

/// CLONE of `plan`: reflink object by object where each unit of the source lies on the
/// data server of the matching destination unit; NFS4ERR_NOTSUPP where they do not, where
/// one file is striped and the other not, or where a store cannot share blocks.
pub async fn clone(e: &Engine, plan: &Plan) -> Result<(), NfsStat4> {
    let (a, b, n) = (plan.src_offset, plan.dst_offset, plan.count);
    if let Some(runs) = mirror_runs(&e.pnfs, plan, a, b, n) {
        return run_mirrored(e, plan, runs, local_clone).await;
    }
    match (&plan.src, &plan.dst) {
        (Place::Local(s), Place::Local(d)) => {
            let (store, s, d) = (
                e.ns.data().clone(),
                ObjectId::whole(*s),
                ObjectId::whole(*d),
            );
            let (a, b, n) = (plan.src_offset, plan.dst_offset, plan.count);
            blocking(move || store.clone_range(s, d, a, b, n)).await
        }
        (Place::Striped(sf, ss), Place::Striped(df, ds))
            if ss.packing == layouts::Packing::Dense
                && ds.packing == layouts::Packing::Dense
                && !plan.mirrored() =>
        {
            let s = Striped::of(&e.pnfs, *sf, ss)?;
            let d = Striped::of(&e.pnfs, *df, ds)?;
            let (runs, streams) = plan_dense(
                &s,
                &d,
                plan.src_offset,
                plan.dst_offset,
                plan.count,
                u64::MAX,
            )?;
            if !streams.is_empty() {
                return Err(NfsStat4::NFS4ERR_NOTSUPP);
            }
            let futs: Vec<_> = runs
                .into_iter()
                .map(|r| local_clone(e.pnfs.devices().clone(), r))
                .collect();
            bounded(futs).await
        }
        _ => Err(NfsStat4::NFS4ERR_NOTSUPP),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use layouts::{Packing, StripeMap};

    const MIB: u64 = 1 << 20;

    fn striped(fileid: u64, servers: &[u16]) -> Striped {
        Striped {
            fileid,
            map: StripeMap::new(MIB as u32, servers.len() as u32, 0, 0, Packing::Dense).unwrap(),
            servers: servers.to_vec(),
        }
    }

    #[test]
    fn aligned_files_on_the_same_servers_copy_on_each_server_in_one_run_per_server() {
        let (s, d) = (striped(1, &[0, 1, 2]), striped(2, &[0, 1, 2]));
        let (runs, streams) = plan_dense(&s, &d, 0, 0, 192 * MIB, 64 * MIB).unwrap();
        assert!(streams.is_empty());
        assert_eq!(runs.len(), 3, "{runs:?}");
        for (i, r) in runs.iter().enumerate() {
            assert_eq!(r.ds, i as u16);
            assert_eq!((r.src.stripe, r.dst.stripe), (i as u32, i as u32));
            assert_eq!((r.src_offset, r.dst_offset, r.len), (0, 0, 64 * MIB));
        }
    }

    #[test]
    fn a_whole_stripe_row_of_offset_keeps_every_unit_on_its_server() {
        // Destination 3 units further on: unit k of the source lands on unit k + 3, the same
        // index, one unit further into each object.
        let (s, d) = (striped(1, &[0, 1, 2]), striped(2, &[0, 1, 2]));
        let (runs, streams) = plan_dense(&s, &d, 0, 3 * MIB, 6 * MIB, 64 * MIB).unwrap();
        assert!(streams.is_empty());
        assert!(runs
            .iter()
            .all(|r| r.dst_offset == r.src_offset + MIB && r.len == 2 * MIB));
    }

    #[test]
    fn rotated_windows_line_up_when_the_offset_makes_up_for_the_rotation() {
        // The destination's window starts one server later: unit k of the destination is on
        // server (k + 1) % 3, so source unit k (server k % 3) matches destination unit k - 1.
        let (s, d) = (striped(1, &[0, 1, 2]), striped(2, &[1, 2, 0]));
        let (runs, streams) = plan_dense(&s, &d, MIB, 0, 9 * MIB, 64 * MIB).unwrap();
        assert!(streams.is_empty(), "{streams:?}");
        assert_eq!(runs.iter().map(|r| r.len).sum::<u64>(), 9 * MIB);
        // Without the offset nothing lines up: all of it is streamed, in pieces of a unit.
        let (runs, streams) = plan_dense(&s, &d, 0, 0, 9 * MIB, 64 * MIB).unwrap();
        assert!(runs.is_empty());
        assert_eq!(streams.iter().map(|p| p.len).sum::<u64>(), 9 * MIB);
        assert!(streams.iter().all(|p| p.len <= u64::from(MAX_CTL_IO)));
    }

    #[test]
    fn unaligned_offsets_cut_steps_at_both_files_unit_boundaries() {
        let (s, d) = (striped(1, &[0, 1, 2]), striped(2, &[0, 1, 2]));
        let (runs, streams) = plan_dense(&s, &d, 4096, 0, 3 * MIB, 64 * MIB).unwrap();
        let total: u64 =
            runs.iter().map(|r| r.len).sum::<u64>() + streams.iter().map(|p| p.len).sum::<u64>();
        assert_eq!(total, 3 * MIB);
        assert!(!runs.is_empty() && !streams.is_empty());
    }

    #[test]
    fn copy_stateids_belong_to_their_client_and_boot_and_the_table_is_capped() {
        let c = Copies::new(&[7; 32], 3, nfs_server::ManualClock::new().shared());
        let keep = Duration::from_secs(90);
        let j = c.start(11, keep).unwrap();
        assert_eq!(j.stateid.other[0], COPY_STATEID_KIND);
        assert!(c.find(11, &j.stateid).is_ok());
        assert_eq!(
            c.find(12, &j.stateid).unwrap_err(),
            NfsStat4::NFS4ERR_BAD_STATEID
        );
        let other_boot = Copies::new(&[7; 32], 4, nfs_server::ManualClock::new().shared());
        assert_eq!(
            other_boot.find(11, &j.stateid).unwrap_err(),
            NfsStat4::NFS4ERR_STALE_STATEID
        );
        for _ in 1..MAX_COPIES_PER_CLIENT {
            c.start(11, keep).unwrap();
        }
        assert_eq!(c.start(11, keep).unwrap_err(), NfsStat4::NFS4ERR_DELAY);
        assert!(
            c.start(12, keep).is_ok(),
            "another client has its own share"
        );
        c.client_gone(11);
        assert!(j.is_cancelled());
        assert_eq!(
            c.find(11, &j.stateid).unwrap_err(),
            NfsStat4::NFS4ERR_BAD_STATEID
        );
        assert_eq!(c.counters().in_table, 1);
    }
}

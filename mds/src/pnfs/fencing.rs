//! Keeping the data servers' view of stateids in step with the MDS: access changes of OPEN
//! upgrades and downgrades, revocations of closed and expired state, CB_LAYOUTRECALL and the
//! fencing of clients that do not return a recalled layout in time (RFC 8881 sections
//! 12.5.5, 13.9.1 and 13.11).
//!
//! ```text
//!  OPEN upgrade / OPEN_DOWNGRADE ─> push_access (SET_ACCESS, every up DS, before the reply)
//!  CLOSE, FREE_STATEID ──────────> queue ─> task ─> REVOKE (closed)      (batched)
//!  any layout gone ──────────────> LayoutTable::take_gone ─> task ─> REVOKE (closed)
//!  lease expiry (release_client) ─> REVOKE (expired), layouts dropped    (in its task)
//!  truncate, remove while open ──> recall_file ─> CB_LAYOUTRECALL per holder (background)
//!                                   task: expired_recalls (lease time) ─> REVOKE (admin)
//! ```
//!
//! A data server checks that a stateid and a DS filehandle are of one client's layout of one
//! file (see `data_server::gate`), but it keeps no tables: whether a stateid or a layout is
//! still live only the MDS knows, so everything a data server must refuse is pushed to it;
//! the registry keeps what was pushed and sends it again to a data server that registers
//! again ([`crate::pnfs::devices`]).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::Duration;

use nfs_proto::nfs4::{
    CbLayoutRecallArgs, Layoutiomode4, Layoutrecall4, LayoutrecallFile4, NfsCbArgop4, NfsCbResop4,
    NfsFh4, NfsStat4,
};
use nfs_server::clock::SharedClock;
use nfs_server::Core;
use tokio::sync::Notify;
use tracing::{info, warn};

use crate::pnfs::devices::Other;
use crate::pnfs::dsctl::RevokeReason;
use crate::server::{Namespace, Pnfs, StateTables};
use crate::state::layout::{RecallOrder, Revoked};
use crate::store::Store;

/// How long the revoking task waits, once woken, for more closed stateids before it sends
/// them ([`drain`]).
const GATHER: Duration = Duration::from_millis(2);

/// The fencing tasks' queue and counters, kept in the [`Pnfs`](crate::server::Pnfs) handle.
#[derive(Debug, Default)]
pub struct Fencing {
    queue: Mutex<Vec<(Other, RevokeReason)>>,
    wake: Arc<Notify>,
    started: AtomicBool,
    /// CB_LAYOUTRECALLs sent.
    pub recalls_sent: AtomicU64,
    /// Layouts revoked because their client did not return them in time (or could not be
    /// called back).
    pub fenced: AtomicU64,
}

impl Drop for Fencing {
    fn drop(&mut self) {
        self.wake.notify_one();
    }
}

/// What the fencing tasks work on, held weakly: the tasks upgrade the handles only while
/// they work, so dropping the server ends them. The deadline task revokes delegations too
/// ([`crate::state::recall::revoke_expired`]), which asks the store which files are striped:
/// so all four handles, each for a reason of its own.
#[derive(Clone, Debug)]
pub struct FencingParts {
    /// Which files are striped.
    ns: Weak<Namespace>,
    /// The layouts (and delegations) whose recall deadline passes.
    tables: Weak<StateTables>,
    /// The time.
    core: Weak<Core>,
    /// The queue, and the data servers the revocations go to.
    pnfs: Weak<Pnfs>,
}

/// [`FencingParts`], upgraded for one round of work.
struct Upgraded {
    ns: Arc<Namespace>,
    tables: Arc<StateTables>,
    core: Arc<Core>,
    pnfs: Arc<Pnfs>,
}

impl FencingParts {
    /// The parts of a server, held weakly.
    pub fn new(
        ns: &Arc<Namespace>,
        tables: &Arc<StateTables>,
        core: &Arc<Core>,
        pnfs: &Arc<Pnfs>,
    ) -> Self {
        Self {
            ns: Arc::downgrade(ns),
            tables: Arc::downgrade(tables),
            core: Arc::downgrade(core),
            pnfs: Arc::downgrade(pnfs),
        }
    }

    /// Every part, or `None` once the server is gone.
    fn upgrade(&self) -> Option<Upgraded> {
        Some(Upgraded {
            ns: self.ns.upgrade()?,
            tables: self.tables.upgrade()?,
            core: self.core.upgrade()?,
            pnfs: self.pnfs.upgrade()?,
        })
    }
}

impl Fencing {
    /// Starts the tasks of a server (once): the revocation queue and the recall deadline
    /// check, every eighth of `lease_time` (100 ms to 1 s) of the server's clock. They hold
    /// the server's parts only while they work, so dropping it ends them.
    pub fn start(parts: FencingParts, lease_time: u32) {
        let Some(p) = parts.upgrade() else { return };
        if p.pnfs.fencing().started.swap(true, Ordering::SeqCst) {
            return;
        }
        p.tables
            .layouts_recovered()
            .push_gone_to(p.pnfs.fencing().wake.clone());
        let tick = Duration::from_millis((u64::from(lease_time) * 1000 / 8).clamp(100, 1000));
        let clock = p.core.clock().clone();
        tokio::spawn(drain(
            parts.tables.clone(),
            parts.pnfs.clone(),
            p.pnfs.fencing().wake.clone(),
        ));
        tokio::spawn(deadlines(parts, clock, tick));
    }

    /// Queues revocations for the data servers (CLOSE, FREE_STATEID: the client is done with
    /// the stateid, so nothing waits for them).
    pub fn queue(&self, revoke: impl IntoIterator<Item = (Other, RevokeReason)>) {
        let mut q = self.queue.lock().unwrap_or_else(PoisonError::into_inner);
        let before = q.len();
        q.extend(revoke);
        if q.len() != before {
            self.wake.notify_one();
        }
    }

    /// How many revocations wait in the queue.
    pub fn queued(&self) -> usize {
        self.queue
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }
}

/// Whether `fileid` has a stripe set (only then can a stateid of it reach a data server).
pub fn striped(store: &Store, pnfs: &Pnfs, fileid: u64) -> bool {
    pnfs.devices().counts() != (0, 0) && matches!(store.has_stripes(fileid), Ok(true))
}

/// After an OPEN upgrade or OPEN_DOWNGRADE of `open` on a striped file whose access changed:
/// tells every up data server the new access of the open and its lock stateids, before the
/// reply (a data server would otherwise refuse WRITE under an upgraded open with
/// NFS4ERR_OPENMODE, which the Linux file layout driver treats as a fatal I/O error). A data
/// server that fails is marked down by the registry and brought up to date before it is up
/// again; the caller answers NFS4ERR_DELAY.
pub async fn push_access(
    store: &Store,
    tables: &StateTables,
    pnfs: &Pnfs,
    fileid: u64,
    open: &Other,
) -> Result<(), NfsStat4> {
    if !striped(store, pnfs, fileid) {
        return Ok(());
    }
    let family = tables.opens_recovered().access_family(open);
    pnfs.devices()
        .push_access(&family)
        .await
        .map_err(|_| NfsStat4::NFS4ERR_DELAY)
}

/// The client's state is released (lease expiry, or a new incarnation): its layouts go
/// (RFC 8881 section 12.7.3) and every data server refuses its open and lock stateids of
/// striped files with NFS4ERR_EXPIRED, so a client that lost its lease cannot go on writing
/// data server objects. Call before the state table drops the stateids.
pub async fn client_released(store: &Store, tables: &StateTables, pnfs: &Pnfs, clientid: u64) {
    let (layouts, gone) = {
        let mut table = tables.layouts_recovered();
        let n = table.client_gone(clientid).len();
        (n, table.take_gone())
    };
    let stateids = tables.opens_recovered().client_stateids(clientid);
    let mut revoke: Vec<(Other, RevokeReason)> = stateids
        .into_iter()
        .filter(|(_, file)| striped(store, pnfs, *file))
        .map(|(o, _)| (o, RevokeReason::Expired))
        .collect();
    if revoke.is_empty() && gone.is_empty() {
        return;
    }
    info!(
        clientid,
        layouts,
        stateids = revoke.len(),
        "client released: fencing its stateids on the data servers"
    );
    revoke.extend(closed(gone));
    if let Err(e) = pnfs.devices().push_revoke(&revoke).await {
        warn!(
            clientid,
            "fencing a released client: {e} (resent when it registers)"
        );
    }
}

/// Starts recalling every layout of `fileid` held by clients other than `except` (its
/// truncate, or its removal while open, changes what the layout maps): a CB_LAYOUTRECALL to
/// each holder in the background (RFC 8881 section 12.5.5.1: whole file, iomode ANY,
/// `clora_changed`). A holder that does not return within the lease time, or whose back
/// channel is down, is fenced. Never blocks the caller: each recall is a task holding the
/// layouts (`tables`), the back channels (`core`) and the data servers (`pnfs`).
pub fn recall_file(
    tables: &Arc<StateTables>,
    core: &Arc<Core>,
    pnfs: &Arc<Pnfs>,
    fileid: u64,
    fh: NfsFh4,
    except: Option<u64>,
) {
    let orders =
        tables
            .layouts_recovered()
            .recall_file(fileid, except, core.now(), tables.recall_timeout());
    for order in orders {
        let (tables, core, pnfs) = (tables.clone(), core.clone(), pnfs.clone());
        let fh = fh.clone();
        tokio::spawn(async move { send_recall(&tables, &core, &pnfs, order, fh).await });
    }
}

async fn send_recall(
    tables: &StateTables,
    core: &Core,
    pnfs: &Pnfs,
    order: RecallOrder,
    fh: NfsFh4,
) {
    let session = {
        let st = core.state();
        st.sessions
            .callback_path(&st.clients, order.clientid)
            .map(|(s, _)| *s.id())
    };
    let Some(session) = session else {
        info!(
            clientid = order.clientid,
            fileid = order.fileid,
            "no back channel for CB_LAYOUTRECALL: fencing at once"
        );
        fence_now(tables, pnfs, &order).await;
        return;
    };
    let args = CbLayoutRecallArgs {
        clora_type: order.layout_type,
        clora_iomode: Layoutiomode4::LAYOUTIOMODE4_ANY,
        clora_changed: true,
        clora_recall: Layoutrecall4::File(LayoutrecallFile4 {
            lor_fh: fh,
            lor_offset: 0,
            lor_length: u64::MAX,
            lor_stateid: order.stateid,
        }),
    };
    pnfs.fencing().recalls_sent.fetch_add(1, Ordering::Relaxed);
    let r =
        crate::callback::cb_compound(core, &session, vec![NfsCbArgop4::LayoutRecall(args)]).await;
    match r {
        Err(e) => {
            info!(
                clientid = order.clientid,
                "CB_LAYOUTRECALL failed: {e}: fencing at once"
            );
            fence_now(tables, pnfs, &order).await;
        }
        Ok(res) => {
            let status = res.resarray.iter().find_map(|r| match r {
                NfsCbResop4::LayoutRecall(r) => Some(r.status),
                _ => None,
            });
            match status {
                // Section 20.3.4: the client has nothing; the layout is gone.
                Some(NfsStat4::NFS4ERR_NOMATCHING_LAYOUT) => tables
                    .layouts_recovered()
                    .recall_answered_nothing(&order.stateid.other),
                // NFS4_OK: LAYOUTRETURN follows; anything else: the deadline decides.
                s => info!(clientid = order.clientid, status = ?s, "CB_LAYOUTRECALL answered"),
            }
        }
    }
}

/// Revokes the recalled layout now (the client cannot be called back).
async fn fence_now(tables: &StateTables, pnfs: &Pnfs, order: &RecallOrder) {
    let (revoked, gone) = {
        let mut layouts = tables.layouts_recovered();
        let revoked = layouts.fence(&order.stateid.other);
        (revoked, layouts.take_gone())
    };
    fence(tables, pnfs, revoked.as_slice(), gone).await;
}

/// The layouts just taken out of the table (`LayoutTable::take_gone`, under the same lock as
/// their removal), as closed stateids to push after the revocations that go with them.
///
/// Why not leave them to the background drain: a data server checks an I/O's stateid before
/// its layout, and the drain could tell it the layout is gone (NFS4ERR_PNFS_NO_LAYOUT) before
/// the revocation arrives, so a fenced or expired client would hear the wrong reason.
/// [`Devices::push_revoke`](crate::pnfs::devices::Devices::push_revoke) sends the
/// revocations first and the closed stateids after, to each data server in turn.
fn closed(gone: Vec<Other>) -> impl Iterator<Item = (Other, RevokeReason)> {
    gone.into_iter().map(|o| (o, RevokeReason::Closed))
}

/// Fences clients whose layouts were revoked: every data server refuses their open and lock
/// stateids of those files with NFS4ERR_ADMIN_REVOKED (RFC 8881 section 12.5.5.2: a client
/// that does not return in time has its layout revoked and its I/O fenced). `gone`: the
/// layouts taken out of the table with them ([`closed`]), pushed after the revocations.
pub async fn fence(tables: &StateTables, pnfs: &Pnfs, revoked: &[Revoked], gone: Vec<Other>) {
    if revoked.is_empty() && gone.is_empty() {
        return;
    }
    let mut revoke: Vec<(Other, RevokeReason)> = {
        let opens = tables.opens_recovered();
        revoked
            .iter()
            .flat_map(|r| {
                opens
                    .client_stateids(r.clientid)
                    .into_iter()
                    .filter(move |(_, f)| *f == r.fileid)
            })
            .map(|(o, _)| (o, RevokeReason::Admin))
            .collect()
    };
    pnfs.fencing()
        .fenced
        .fetch_add(revoked.len() as u64, Ordering::Relaxed);
    for r in revoked {
        warn!(
            clientid = r.clientid,
            fileid = r.fileid,
            "layout not returned in time: revoked, client fenced on the data servers"
        );
    }
    revoke.extend(closed(gone));
    if let Err(e) = pnfs.devices().push_revoke(&revoke).await {
        warn!("fencing: {e} (resent when the data server registers)");
    }
}

/// The task that sends queued revocations and the layouts gone, in batches.
async fn drain(tables: Weak<StateTables>, pnfs: Weak<Pnfs>, wake: Arc<Notify>) {
    loop {
        wake.notified().await;
        // Let the closes that follow this one queue up too: a batch costs every up data
        // server one call however many stateids it carries, where a stateid per wake-up
        // cost a call to each per file closed (issue 22). Closed stateids were already
        // revoked after the CLOSE's reply, not before it; this only widens that by
        // `GATHER`.
        tokio::time::sleep(GATHER).await;
        let (Some(tables), Some(pnfs)) = (tables.upgrade(), pnfs.upgrade()) else {
            return;
        };
        let mut batch = std::mem::take(
            &mut *pnfs
                .fencing()
                .queue
                .lock()
                .unwrap_or_else(PoisonError::into_inner),
        );
        // Layouts gone: their DS filehandles stop working (cluster::ds_fh).
        batch.extend(
            tables
                .layouts_recovered()
                .take_gone()
                .into_iter()
                .map(|o| (o, RevokeReason::Closed)),
        );
        if let Err(e) = pnfs.devices().push_revoke(&batch).await {
            // Recorded: the failed data server is marked down and gets it at registration.
            warn!("revoking closed stateids: {e}");
        }
    }
}

/// The task that revokes recalled layouts and delegations past their deadline, every
/// `tick` of the server's `clock`.
async fn deadlines(parts: FencingParts, clock: SharedClock, tick: Duration) {
    loop {
        clock.sleep(tick).await;
        let Some(p) = parts.upgrade() else { return };
        let (due, gone) = {
            let mut layouts = p.tables.layouts_recovered();
            let due = layouts.expired_recalls(p.core.now());
            (due, layouts.take_gone())
        };
        fence(&p.tables, &p.pnfs, &due, gone).await;
        crate::state::recall::revoke_expired(p.ns.store(), &p.tables, &p.core, &p.pnfs).await;
    }
}

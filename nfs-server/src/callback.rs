//! The back channel (RFC 8881 sections 2.10.3.1 and 20): calls from the server to a client
//! over the connection the client bound to its session's back channel. CB_NULL probes the
//! path when a connection is bound (as knfsd does), and every CB_COMPOUND starts with
//! CB_SEQUENCE on a slot of the session's back channel slot table, whose rules are the
//! client-side rules of a fore channel (`nfs_proto::session::ClientSlotTable`).
//!
//! A callback that fails (no reply in [`CALLBACK_TIMEOUT`], the connection gone, an RPC
//! error) marks the session's back channel down, so SEQUENCE reports
//! `SEQ4_STATUS_CB_PATH_DOWN(_SESSION)` and the client binds a new connection (section
//! 2.10.3.1). Delegation and layout recalls (the next milestones) are sent through
//! [`cb_compound`].

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use nfs_proto::nfs4::*;
use nfs_proto::rpc::{AuthFlavor, AuthSysParms, OpaqueAuth};
use nfs_proto::session::ClientSlotTable;
use nfs_proto::transport::{CallError, Conn};
use nfs_proto::xdr::{self, Utf8String};
use tracing::{debug, warn};

use crate::core::Core;
use crate::role::Role;

/// The callback program's version (RFC 8881 section 20: `NFS_CB` = 1).
pub const NFS_CB_VERSION: u32 = 1;

/// How long a callback may take before the back channel counts as down.
pub const CALLBACK_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a callback is tried again while the client answers CB_SEQUENCE with
/// `NFS4ERR_DELAY` (its slot is busy with an earlier callback, or it is draining its session:
/// Linux does both) or every back channel slot stays busy. knfsd tries again every 2 s for as
/// long as the client keeps answering so; the callers here have deadlines of their own (a
/// recall's is the lease), so this window only has to outlast a busy moment.
pub const CALLBACK_RETRY_WINDOW: Duration = Duration::from_secs(30);

/// Why a callback did not get a successful answer.
#[derive(Debug, thiserror::Error)]
pub enum CallbackError {
    /// The session is gone or has no usable back channel connection.
    #[error("no back channel")]
    NoBackChannel,
    /// Every back channel slot is busy for longer than the timeout.
    #[error("no free back channel slot")]
    NoSlot,
    /// No answer in time.
    #[error("no answer in {0:?}")]
    Timeout(Duration),
    /// The RPC failed (connection closed, rejected, accepted with an error).
    #[error("callback RPC: {0}")]
    Rpc(#[from] CallError),
    /// The reply did not decode.
    #[error("undecodable CB_COMPOUND reply")]
    BadReply,
    /// CB_SEQUENCE failed.
    #[error("CB_SEQUENCE: {0:?}")]
    Sequence(NfsStat4),
}

/// The connections that may carry callbacks, and each session's back channel slots.
#[derive(Default)]
pub struct Backchannels {
    conns: Mutex<HashMap<u64, Conn>>,
    slots: Mutex<HashMap<Sessionid4, ClientSlotTable>>,
}

impl Backchannels {
    /// Keeps `conn` for callbacks (it was bound to a session's back channel), and drops
    /// connections that have closed since.
    pub fn register(&self, conn: &Conn) {
        let mut conns = self.conns.lock().unwrap_or_else(|e| e.into_inner());
        conns.retain(|_, c| !c.is_closed());
        conns.insert(conn.id(), conn.clone());
    }

    fn conn(&self, id: u64) -> Option<Conn> {
        let conns = self.conns.lock().unwrap_or_else(|e| e.into_inner());
        conns.get(&id).filter(|c| !c.is_closed()).cloned()
    }
}

/// What a callback to one session needs from the session state.
struct Route {
    conn: Conn,
    program: u32,
    cred: OpaqueAuth,
    max_slots: u32,
    minor: u32,
}

fn route(core: &Core, sessionid: &Sessionid4) -> Result<Route, CallbackError> {
    let (conn_id, program, sec, max_slots, minor) = {
        let st = core.state();
        let s = st
            .sessions
            .get(sessionid)
            .map_err(|_| CallbackError::NoBackChannel)?;
        let conn = s
            .back_conns()
            .last()
            .copied()
            .ok_or(CallbackError::NoBackChannel)?;
        (
            conn,
            s.cb_program(),
            s.cb_sec_parms().first().cloned(),
            s.back_attrs().ca_maxrequests,
            s.minor(),
        )
    };
    let conn = core
        .backchannels
        .conn(conn_id)
        .ok_or(CallbackError::NoBackChannel)?;
    Ok(Route {
        conn,
        program,
        cred: credential(sec),
        max_slots,
        minor,
    })
}

/// The RPC credential for callbacks: the first flavor the client offered that the server
/// uses (RFC 8881 section 18.36.3, `csa_sec_parms`).
fn credential(sec: Option<CallbackSecParms4>) -> OpaqueAuth {
    match sec {
        Some(CallbackSecParms4::AuthSys(p)) => OpaqueAuth::new(
            AuthFlavor::AUTH_SYS,
            xdr::to_bytes(&AuthSysParms {
                stamp: p.stamp,
                machinename: p.machinename,
                uid: p.uid,
                gid: p.gid,
                gids: p.gids,
            }),
        ),
        _ => OpaqueAuth::none(),
    }
}

fn mark_down(core: &Core, sessionid: &Sessionid4, why: &CallbackError) {
    warn!(session = ?sessionid, "back channel down: {why}");
    let _ = core.state().sessions.set_back_channel_down(sessionid, true);
}

/// CB_NULL to the session's back channel.
pub async fn cb_null(core: &Core, sessionid: &Sessionid4) -> Result<(), CallbackError> {
    let r = route(core, sessionid)?;
    let call = r
        .conn
        .call(r.program, NFS_CB_VERSION, CB_NULL, r.cred, Vec::new());
    tokio::time::timeout(CALLBACK_TIMEOUT, call)
        .await
        .map_err(|_| CallbackError::Timeout(CALLBACK_TIMEOUT))??;
    Ok(())
}

/// Probes a newly bound back channel with CB_NULL, in the background; a failure marks it down.
pub fn probe<R: Role>(server: Arc<R>, sessionid: Sessionid4) {
    tokio::spawn(async move {
        let core = server.core();
        match cb_null(core, &sessionid).await {
            Ok(()) => debug!(session = ?sessionid, "back channel answers CB_NULL"),
            Err(e) => mark_down(core, &sessionid, &e),
        }
    });
}

/// A connection was bound to a session's back channel (CREATE_SESSION with
/// `CREATE_SESSION4_FLAG_CONN_BACK_CHAN`, or BIND_CONN_TO_SESSION): keep it and probe it.
pub fn bound<R: Role>(server: &Arc<R>, conn: &Conn, sessionid: Sessionid4) {
    server.core().backchannels.register(conn);
    probe(server.clone(), sessionid);
}

/// Takes a back channel slot of the session, waiting (up to the timeout) while all are busy.
/// The wait is on tokio's time, not the server's clock: it waits for the replies of the
/// callbacks in flight, which the network bounds ([`CALLBACK_TIMEOUT`]).
async fn acquire_slot(
    core: &Core,
    sessionid: &Sessionid4,
    max_slots: u32,
) -> Result<nfs_proto::session::SlotTicket, CallbackError> {
    let wait = async {
        loop {
            {
                let mut slots = core
                    .backchannels
                    .slots
                    .lock()
                    .unwrap_or_else(|e| e.into_inner());
                let table = slots
                    .entry(*sessionid)
                    .or_insert_with(|| ClientSlotTable::new(max_slots));
                if let Some(t) = table.acquire() {
                    return t;
                }
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    tokio::time::timeout(CALLBACK_TIMEOUT, wait)
        .await
        .map_err(|_| CallbackError::NoSlot)
}

/// Sends CB_COMPOUND with CB_SEQUENCE followed by `ops` to the session's back channel and
/// returns the reply (whose later results the caller reads). A failure of the path (not an
/// error status of one of `ops`) marks the back channel down.
///
/// A CB_SEQUENCE answered `NFS4ERR_DELAY` (the slot is busy or the client is draining its
/// session), or `NFS4ERR_RETRY_UNCACHED_REP` (the client had seen this sequence id: the call
/// before it on the slot reached it though its reply was lost), and a wait for a free slot
/// that timed out, are tried again with the same `ops` for up to [`CALLBACK_RETRY_WINDOW`].
pub async fn cb_compound(
    core: &Core,
    sessionid: &Sessionid4,
    ops: Vec<NfsCbArgop4>,
) -> Result<CbCompoundRes, CallbackError> {
    cb_compound_within(core, sessionid, ops, CALLBACK_RETRY_WINDOW).await
}

/// [`cb_compound`] trying again for `window` at most: for a caller that cannot wait long
/// (an operation of another client waits on a CB_GETATTR).
pub async fn cb_compound_within(
    core: &Core,
    sessionid: &Sessionid4,
    ops: Vec<NfsCbArgop4>,
    window: Duration,
) -> Result<CbCompoundRes, CallbackError> {
    let started = tokio::time::Instant::now();
    let mut pause = Duration::from_millis(50);
    loop {
        let result = cb_compound_inner(core, sessionid, ops.clone()).await;
        let again = matches!(
            result,
            Err(CallbackError::NoSlot
                | CallbackError::Sequence(
                    NfsStat4::NFS4ERR_DELAY | NfsStat4::NFS4ERR_RETRY_UNCACHED_REP
                ))
        );
        match &result {
            Err(e) if again && started.elapsed() + pause < window => {
                debug!(session = ?sessionid, "callback not taken ({e}): again in {pause:?}");
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(Duration::from_secs(2));
                continue;
            }
            Err(e) if !matches!(e, CallbackError::Sequence(_) | CallbackError::NoSlot) => {
                mark_down(core, sessionid, e)
            }
            // Given up: what it carried (a recall, a layout recall) did not get through, so
            // a warning (the guest's console keeps WARN only; last seen at INFO, this hid a
            // lost recall).
            Err(e) => warn!(session = ?sessionid, "callback given up: {e}"),
            Ok(_) => {}
        }
        return result;
    }
}

async fn cb_compound_inner(
    core: &Core,
    sessionid: &Sessionid4,
    ops: Vec<NfsCbArgop4>,
) -> Result<CbCompoundRes, CallbackError> {
    let r = route(core, sessionid)?;
    let ticket = acquire_slot(core, sessionid, r.max_slots).await?;
    let mut argarray = Vec::with_capacity(ops.len() + 1);
    argarray.push(NfsCbArgop4::Sequence(CbSequenceArgs {
        csa_sessionid: *sessionid,
        csa_sequenceid: ticket.seqid,
        csa_slotid: ticket.slotid,
        csa_highest_slotid: ticket.highest_slotid,
        csa_cachethis: false,
        csa_referring_call_lists: Vec::new(),
    }));
    argarray.extend(ops);
    let args = CbCompoundArgs {
        tag: Utf8String::from(""),
        minorversion: r.minor,
        callback_ident: 0,
        argarray,
    };
    let call = r.conn.call(
        r.program,
        NFS_CB_VERSION,
        CB_COMPOUND,
        r.cred,
        vec![xdr::to_bytes(&args)],
    );
    let sent = tokio::time::timeout(CALLBACK_TIMEOUT, call).await;
    let outcome = match sent {
        Ok(Ok(body)) => xdr::from_bytes::<CbCompoundRes>(body).map_err(|_| CallbackError::BadReply),
        Ok(Err(e)) => Err(e.into()),
        Err(_) => Err(CallbackError::Timeout(CALLBACK_TIMEOUT)),
    };
    let mut slots = core
        .backchannels
        .slots
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    let Some(table) = slots.get_mut(sessionid) else {
        return Err(CallbackError::NoBackChannel);
    };
    // The slot is released once, here. Without a CB_SEQUENCE answer the request may or may
    // not have reached the client, so the slot keeps its sequence id: the next callback on
    // it is new to a client that never saw this one, and a replay to one that did, which
    // answers NFS4ERR_RETRY_UNCACHED_REP (we never ask it to cache) and the slot moves on.
    // Moving on here instead would leave a client that never saw the call expecting the
    // old sequence id for ever (NFS4ERR_SEQ_MISORDERED); a new connection does not reset a
    // session's back channel slots.
    let res = match outcome {
        Ok(res) => res,
        Err(e) => {
            table.release_unsent(ticket.slotid);
            return Err(e);
        }
    };
    let seq_ok = match res.resarray.first() {
        Some(NfsCbResop4::Sequence(CbSequenceRes::Ok(ok))) => SequenceResOk {
            sr_sessionid: ok.csr_sessionid,
            sr_sequenceid: ok.csr_sequenceid,
            sr_slotid: ok.csr_slotid,
            sr_highest_slotid: ok.csr_highest_slotid,
            sr_target_highest_slotid: ok.csr_target_highest_slotid,
            sr_status_flags: 0,
        },
        Some(other) => {
            // Section 20.9.3: a CB_SEQUENCE that fails leaves the client's slot as it was,
            // so ours is freed with its sequence id, except after a replay (the client used
            // this id). NFS4ERR_DELAY must free it too: `complete_error` keeps a fore
            // channel's slot for the caller to re-send on, which a callback does by taking
            // a slot again, so keeping it would leave the session without back channel slots.
            let status = other.status();
            match status {
                NfsStat4::NFS4ERR_DELAY => table.release_unsent(ticket.slotid),
                _ => {
                    table.complete_error(ticket.slotid, status);
                }
            }
            debug!(session = ?sessionid, "CB_SEQUENCE failed: {status:?}");
            return Err(CallbackError::Sequence(status));
        }
        None => {
            table.complete_error(ticket.slotid, NfsStat4::NFS4ERR_RETRY_UNCACHED_REP);
            return Err(CallbackError::BadReply);
        }
    };
    if !table.complete(ticket.slotid, &seq_ok) {
        table.complete_error(ticket.slotid, NfsStat4::NFS4ERR_RETRY_UNCACHED_REP);
        return Err(CallbackError::BadReply);
    }
    // A replay the client has no reply for (Linux fails the operation after CB_SEQUENCE
    // so): our `ops` were not run; the slot has moved on, so sending them again is new.
    if res.status == NfsStat4::NFS4ERR_RETRY_UNCACHED_REP {
        return Err(CallbackError::Sequence(res.status));
    }
    Ok(res)
}

/// Forgets a destroyed session's back channel slots.
pub fn session_gone(core: &Core, sessionid: &Sessionid4) {
    core.backchannels
        .slots
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .remove(sessionid);
}

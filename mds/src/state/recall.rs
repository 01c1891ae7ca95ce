//! The I/O side of delegations (RFC 8881 section 10.4): CB_RECALL when another client's
//! operation conflicts, CB_GETATTR when another client asks for the size or change of a file
//! under a write delegation, and the revocation of delegations whose recall was not answered
//! in time. The state lives in [`crate::state::deleg::DelegTable`] (inside the open table).
//!
//! ```text
//!  conflicting op ─> break_conflicts: recall() ─> CB_RECALL per holder (background)
//!                    └─> NFS4ERR_DELAY until DELEGRETURN (the client retries)
//!  fencing's deadline task ─> revoke_expired: DELEG_REVOKED, DSs refuse the stateid
//!  GETATTR(size|change) of another client ─> holder_attrs: CB_GETATTR ─> presented values
//! ```

use std::sync::Arc;
use std::time::Duration;

use nfs_proto::nfs4::attr::{FileAttrs, FATTR4_CHANGE, FATTR4_SIZE};
use nfs_proto::nfs4::callback::{CbGetAttrArgs, CbGetAttrRes, CbRecallArgs};
use nfs_proto::nfs4::{Bitmap4, NfsCbArgop4, NfsCbResop4, NfsStat4};
use nfs_server::Core;
use tracing::{info, warn};

use crate::pnfs::dsctl::RevokeReason;
use crate::server::{Pnfs, StateTables};
use crate::state::deleg::{Need, Presented, RecallOrder};
use crate::state::open::StateTable;
use crate::store::Store;

/// Before an operation of `clientid` that needs `need` of `file`: recalls the delegations
/// of other clients that conflict and answers `NFS4ERR_DELAY` while any is outstanding
/// (section 10.4.4: the server recalls, and the operation waits until the delegation is
/// returned or revoked). The recalls are sent in the background, each holding the session
/// layer (its back channels) and the state tables (to see whether it is still needed).
pub fn break_conflicts(
    tables: &Arc<StateTables>,
    core: &Arc<Core>,
    file: u64,
    clientid: u64,
    need: Need,
) -> Result<(), NfsStat4> {
    let orders = {
        let mut opens = tables.opens_recovered();
        recall_conflicts(tables, core, &mut opens, file, clientid, need)
    };
    match orders {
        None => Ok(()),
        Some(orders) => {
            send_recalls(tables, core, orders);
            Err(NfsStat4::NFS4ERR_DELAY)
        }
    }
}

/// [`break_conflicts`] inside a caller's hold of the open table (OPEN decides on conflicts
/// and takes its share reservation in one hold): `None` when nothing conflicts, else the
/// recalls to send (empty when all are under way) after the table is let go. `tables`
/// gives the recall deadline ([`StateTables::recall_timeout`]), `core` the time.
pub fn recall_conflicts(
    tables: &StateTables,
    core: &Core,
    opens: &mut StateTable,
    file: u64,
    clientid: u64,
    need: Need,
) -> Option<Vec<RecallOrder>> {
    opens.delegs.conflicts(file, clientid, need).then(|| {
        opens
            .delegs
            .recall(file, clientid, need, core.now(), tables.recall_timeout())
    })
}

/// Sends each CB_RECALL in a task of its own.
pub fn send_recalls(tables: &Arc<StateTables>, core: &Arc<Core>, orders: Vec<RecallOrder>) {
    for order in orders {
        let (tables, core) = (tables.clone(), core.clone());
        tokio::spawn(async move { send_recall(&tables, &core, order).await });
    }
}

/// How often a CB_RECALL that did not get through is sent again while the delegation is
/// still being recalled.
const RECALL_RESEND: Duration = Duration::from_secs(2);

/// How many times a CB_RECALL answered `NFS4ERR_BAD_STATEID` is sent again: the recall may
/// have overtaken the OPEN reply that granted the delegation (section 2.10.6.3), and the
/// client knows the stateid once it has that reply (knfsd retries such recalls too).
const BAD_STATEID_RESENDS: u32 = 5;

/// Sends the CB_RECALL of `order` until the holder takes it: again every [`RECALL_RESEND`]
/// while it could not be delivered (no back channel yet: SEQUENCE tells the holder its path
/// is down and it binds a new connection; the call failed; the client kept saying
/// NFS4ERR_DELAY), and while the holder does not know the stateid yet, as long as the
/// delegation is being recalled. A recall that never gets through ends at the deadline
/// ([`revoke_expired`]), as a holder that does not return does.
async fn send_recall(tables: &StateTables, core: &Core, order: RecallOrder) {
    let pending = || {
        tables
            .opens_recovered()
            .delegs
            .recall_pending(&order.stateid.other)
    };
    let mut bad_stateids = 0;
    for sent in 1u32.. {
        if sent > 1 {
            tokio::time::sleep(RECALL_RESEND).await;
        }
        if !pending() {
            return;
        }
        let Some(session) = callback_session(core, order.clientid) else {
            if sent == 1 {
                info!(
                    clientid = order.clientid,
                    fileid = order.file,
                    "no back channel for CB_RECALL: sent when the client binds one, else revoked at the deadline"
                );
            }
            continue;
        };
        let args = CbRecallArgs {
            stateid: order.stateid,
            truncate: false,
            fh: order.fh.clone(),
        };
        let r = crate::callback::cb_compound(core, &session, vec![NfsCbArgop4::Recall(args)]).await;
        let res = match r {
            Ok(res) => res,
            Err(e) => {
                info!(
                    clientid = order.clientid,
                    fileid = order.file,
                    attempt = sent,
                    "CB_RECALL failed: {e}; sent again while the delegation is out"
                );
                continue;
            }
        };
        let status = res.resarray.iter().find_map(|r| match r {
            NfsCbResop4::Recall(r) => Some(r.status),
            _ => None,
        });
        info!(clientid = order.clientid, fileid = order.file, status = ?status, attempt = sent, "CB_RECALL answered");
        match status {
            Some(NfsStat4::NFS4ERR_BAD_STATEID) if bad_stateids < BAD_STATEID_RESENDS => {
                bad_stateids += 1
            }
            Some(NfsStat4::NFS4ERR_DELAY) => {}
            // NFS4_OK: DELEGRETURN follows. Anything else: the deadline decides.
            _ => return,
        }
    }
}

/// One of the client's sessions with a working back channel.
pub(crate) fn callback_session(core: &Core, clientid: u64) -> Option<nfs_proto::nfs4::Sessionid4> {
    let st = core.state();
    st.sessions
        .callback_path(&st.clients, clientid)
        .map(|(s, _)| *s.id())
}

/// Whether the client has a back channel a recall could use (OPEN grants no delegation
/// otherwise).
pub fn callback_up(core: &Core, clientid: u64) -> bool {
    callback_session(core, clientid).is_some()
}

/// Revokes the delegations whose recall deadline passed (called by the fencing deadline
/// task): their holders learn it from SEQUENCE's `SEQ4_STATUS_RECALLABLE_STATE_REVOKED`, and
/// the data servers refuse the delegation stateid (`NFS4ERR_DELEG_REVOKED`) from now on.
/// Also forgets the delegations a restarted client did not reclaim in time. `store` and
/// `pnfs` tell which files are striped, and send the revocations.
pub async fn revoke_expired(store: &Store, tables: &StateTables, core: &Core, pnfs: &Pnfs) {
    let (due, forgotten) = {
        let mut opens = tables.opens_recovered();
        let now = core.now();
        (
            opens.delegs.expired_recalls(now),
            opens.delegs.expired_prev(now),
        )
    };
    for (clientid, fileid) in forgotten {
        info!(
            clientid,
            fileid, "delegation of a restarted client not reclaimed in time: forgotten"
        );
    }
    if due.is_empty() {
        return;
    }
    let mut revoke = Vec::new();
    for d in &due {
        // A layout kept for the delegation after the last CLOSE goes with it.
        crate::ops::open::drop_layouts_if_done(tables, d.clientid, d.file);
        warn!(
            clientid = d.clientid,
            fileid = d.file,
            "delegation not returned in time: revoked"
        );
        if crate::pnfs::fencing::striped(store, pnfs, d.file) {
            revoke.push((d.other, RevokeReason::Delegation));
        }
    }
    if let Err(e) = pnfs.devices().push_revoke(&revoke).await {
        warn!("revoking delegations on the data servers: {e} (resent when they register)");
    }
}

/// Before a GETATTR of `clientid` that asks for the size or change of `file`: when another
/// client holds a write delegation of it, asks that holder with CB_GETATTR and returns the
/// size and change to present if it modified the file (section 10.4.3). A holder that cannot
/// be asked has its delegation recalled, and the GETATTR waits (`NFS4ERR_DELAY`).
pub async fn holder_attrs(
    tables: &Arc<StateTables>,
    core: &Arc<Core>,
    file: u64,
    clientid: u64,
    server_change: u64,
) -> Result<Option<Presented>, NfsStat4> {
    let holder = tables.opens_recovered().delegs.write_holder(file, clientid);
    let Some((holder, other, fh)) = holder else {
        return Ok(None);
    };
    let asked = async {
        let session = callback_session(core, holder)?;
        let mut attr_request = Bitmap4::new();
        attr_request.set(FATTR4_SIZE);
        attr_request.set(FATTR4_CHANGE);
        let args = CbGetAttrArgs { fh, attr_request };
        // The GETATTR waits for this answer: a client that keeps saying NFS4ERR_DELAY has
        // its delegation recalled instead of holding the GETATTR for long.
        let res = crate::callback::cb_compound_within(
            core,
            &session,
            vec![NfsCbArgop4::GetAttr(args)],
            Duration::from_secs(2),
        )
        .await
        .ok()?;
        let attrs = res.resarray.iter().find_map(|r| match r {
            NfsCbResop4::GetAttr(CbGetAttrRes::Ok(ok)) => Some(ok.obj_attributes.clone()),
            _ => None,
        })?;
        let a = FileAttrs::from_fattr(&attrs).ok()?;
        Some((a.change?, a.size?))
    };
    match asked.await {
        Some((change, size)) => {
            Ok(tables
                .opens_recovered()
                .delegs
                .reported(&other, change, size, server_change))
        }
        None => {
            info!(
                clientid = holder,
                fileid = file,
                "CB_GETATTR got no answer: recalling the write delegation"
            );
            break_conflicts(tables, core, file, clientid, Need::Read).map(|()| None)
        }
    }
}

//! Session and client operations (RFC 8881 sections 18.35-18.37, 18.34, 18.33, 18.46, 18.50,
//! 18.51) and the lease reaper: the glue between the COMPOUND engine, the sans-IO
//! client/session/grace state and the role's hooks (confirmed client records are made
//! durable, through [`Role::persist_client`], before the reply that confirms them).

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use nfs_proto::nfs4::*;
use nfs_proto::session::request_digest;
use tracing::{info, warn};

use crate::core::{Core, Identity, SessionState};
use crate::role::{Role, SessionCtx};
use crate::state::client::{ClientError, ClientEvent, ExchangeIdOk, RemovedClient};
use crate::state::session::{ReplyLimit, SequenceOutcome, SequenceRequest, SessionError};

/// How a COMPOUND goes on after its SEQUENCE.
pub enum SequenceStart {
    /// A retry: this is the cached reply.
    Replay(Vec<Bytes>),
    /// Execute the rest; finish the slot with [`finish`].
    Go(SequenceRes, SlotRef),
}

/// The slot a COMPOUND holds.
pub struct SlotRef {
    sessionid: Sessionid4,
    slotid: u32,
    cachethis: bool,
    /// How large the reply may grow.
    pub reply_limit: ReplyLimit,
}

/// SEQUENCE as the first operation. `request_size` is the whole RPC call's size and
/// `min_reply_size` the size of the reply with SEQUENCE's result alone (both with their RPC
/// headers), for the session's size limits.
pub fn sequence(
    core: &Core,
    ctx: &mut SessionCtx,
    args: &SequenceArgs,
    raw_args: &[u8],
    request_size: usize,
    min_reply_size: usize,
    op_count: usize,
) -> Result<SequenceStart, NfsStat4> {
    let now = core.now();
    let mut st = core.state();
    let SessionState {
        clients, sessions, ..
    } = &mut *st;
    let req = SequenceRequest {
        args: *args,
        digest: request_digest(raw_args),
        request_size: u32::try_from(request_size).unwrap_or(u32::MAX),
        min_reply_size: u32::try_from(min_reply_size).unwrap_or(u32::MAX),
        op_count: u32::try_from(op_count).unwrap_or(u32::MAX),
        status_flags: 0,
    };
    match sessions.sequence(clients, &req, ctx.conn.id(), now)? {
        SequenceOutcome::Replay(pieces) => Ok(SequenceStart::Replay(pieces)),
        SequenceOutcome::Execute {
            res,
            clientid,
            reply_limit,
        } => {
            ctx.clientid = Some(clientid);
            ctx.sessionid = Some(args.sa_sessionid);
            let slot = SlotRef {
                sessionid: args.sa_sessionid,
                slotid: args.sa_slotid,
                cachethis: args.sa_cachethis,
                reply_limit,
            };
            Ok(SequenceStart::Go(SequenceRes::Ok(res), slot))
        }
    }
}

/// Ends the COMPOUND on its slot, caching the reply when the client asked and it fits.
pub fn finish(core: &Core, slot: SlotRef, reply: &[Bytes]) {
    let len: usize = reply.iter().map(Bytes::len).sum();
    let mut st = core.state();
    let max_cached = st.sessions.limits().max_response_size_cached as usize;
    // Always keep replies small enough: the Linux client sets cachethis only for
    // non-idempotent requests, but a replay of anything is cheaper than a re-execution.
    let cache = slot.cachethis || len <= max_cached;
    st.sessions.finish(
        &slot.sessionid,
        slot.slotid,
        reply.to_vec(),
        cache && len <= max_cached,
    );
}

/// Ends the COMPOUND on its slot without a reply to cache (none was sent).
pub fn abandon(core: &Core, slot: SlotRef) {
    core.state()
        .sessions
        .finish(&slot.sessionid, slot.slotid, Vec::new(), false);
}

/// Applies what the client table says must be kept (or forgotten), before the reply.
async fn persist<R: Role>(server: &Arc<R>, events: Vec<ClientEvent>) -> Result<(), NfsStat4> {
    for ev in events {
        match ev {
            ClientEvent::Confirmed(p) => server.persist_client(p).await?,
            ClientEvent::Removed(r) => release_client(server, &r).await,
        }
    }
    Ok(())
}

/// Drops everything a removed client held: the role's state (opens, locks, its store
/// record, ...) and its RECLAIM_COMPLETE mark.
pub async fn release_client<R: Role>(server: &Arc<R>, r: &RemovedClient) {
    server.release_client(r).await;
    server.core().state().grace.client_removed(r.clientid);
}

/// Logs a refusal at a cap, within [`Core::cap_log`]'s budget.
fn log_refusal(core: &Core, cap: &'static str, count: usize) {
    if let Some(suppressed) = core.cap_log.allow(cap) {
        warn!(
            cap,
            count, suppressed, "at the cap: refused with NFS4ERR_DELAY"
        );
    }
}

/// EXCHANGE_ID. A confirmed record that a client collision replaced (RFC 8881 section
/// 18.35.4 case 3) loses its sessions and state before the reply. When the client table is
/// full ([`ClientTable::is_full`](crate::state::client::ClientTable::is_full)), the clients
/// whose lease has run out are reaped first, as the reaper would within a second, and their
/// state released; then the table gives up its oldest unconfirmed record for a new owner, or
/// refuses it with `NFS4ERR_DELAY`.
pub async fn exchange_id<R: Role>(
    server: &Arc<R>,
    ctx: &SessionCtx,
    args: &ExchangeIdArgs,
) -> ExchangeIdRes {
    let now = server.core().now();
    let (r, expired) = {
        let mut st = server.core().state();
        let SessionState {
            clients, sessions, ..
        } = &mut *st;
        let expired = if clients.is_full() {
            sessions.expire(clients, now)
        } else {
            Vec::new()
        };
        let r = clients.exchange_id(
            args,
            &ctx.principal,
            ctx.minor,
            |c| server.client_has_state(c),
            now,
        );
        if let Ok(ExchangeIdOk { removed, .. }) = &r {
            for gone in removed {
                sessions.remove_client_sessions(gone);
            }
        }
        (r, expired)
    };
    for gone in &expired {
        release_client(server, gone).await;
    }
    match r {
        Ok(mut ok) => {
            for gone in std::mem::take(&mut ok.removed) {
                release_client(server, &gone).await;
            }
            let id = &server.core().identity;
            ExchangeIdRes::Ok(ok.into_res_ok(
                id.owner.clone(),
                id.scope.clone(),
                Identity::impl_id(),
            ))
        }
        Err(e) => {
            if e == ClientError::NoRoom {
                let n = server.core().state().clients.len();
                log_refusal(server.core(), "clients", n);
            }
            ExchangeIdRes::Err(e.into())
        }
    }
}

/// CREATE_SESSION. When the session table is full, the clients whose lease has run out are
/// reaped first (their sessions go with them), as in [`exchange_id`].
pub async fn create_session<R: Role>(
    server: &Arc<R>,
    ctx: &SessionCtx,
    args: &CreateSessionArgs,
) -> CreateSessionRes {
    let now = server.core().now();
    let (out, expired) = {
        let mut st = server.core().state();
        let SessionState {
            clients, sessions, ..
        } = &mut *st;
        let expired = if sessions.is_full() {
            sessions.expire(clients, now)
        } else {
            Vec::new()
        };
        let out = sessions.create_session(clients, args, &ctx.principal, ctx.conn.id(), now);
        if let Ok(o) = &out {
            sessions.set_minor(&o.res.csr_sessionid, ctx.minor);
        }
        (out, expired)
    };
    for gone in &expired {
        release_client(server, gone).await;
    }
    if let Err(SessionError::NoRoom) = out {
        let n = server.core().state().sessions.len();
        log_refusal(server.core(), "sessions", n);
    }
    match out {
        Ok(o) => match persist(server, o.events).await {
            Ok(()) => {
                if o.res.csr_flags & CREATE_SESSION4_FLAG_CONN_BACK_CHAN != 0 {
                    crate::callback::bound(server, &ctx.conn, o.res.csr_sessionid);
                }
                CreateSessionRes::Ok(o.res)
            }
            Err(s) => CreateSessionRes::Err(s),
        },
        Err(e) => CreateSessionRes::Err(e.into()),
    }
}

/// DESTROY_SESSION.
pub fn destroy_session(
    core: &Core,
    ctx: &SessionCtx,
    args: &DestroySessionArgs,
) -> DestroySessionRes {
    let same = ctx.sessionid == Some(args.dsa_sessionid);
    let mut st = core.state();
    let SessionState {
        clients, sessions, ..
    } = &mut *st;
    let status = match sessions.destroy_session(clients, &args.dsa_sessionid, same) {
        Ok(()) => NfsStat4::NFS4_OK,
        Err(e) => e.into(),
    };
    drop(st);
    if status == NfsStat4::NFS4_OK {
        crate::callback::session_gone(core, &args.dsa_sessionid);
    }
    DestroySessionRes { status }
}

/// BIND_CONN_TO_SESSION.
pub fn bind_conn_to_session<R: Role>(
    server: &Arc<R>,
    ctx: &SessionCtx,
    args: &BindConnToSessionArgs,
) -> BindConnToSessionRes {
    let res = {
        let mut st = server.core().state();
        let SessionState {
            clients, sessions, ..
        } = &mut *st;
        sessions.bind_conn_to_session(clients, args, ctx.conn.id(), server.core().now())
    };
    match res {
        Ok(r) => {
            if matches!(
                r.bctsr_dir,
                ChannelDirFromServer4::CDFS4_BACK | ChannelDirFromServer4::CDFS4_BOTH
            ) {
                crate::callback::bound(server, &ctx.conn, r.bctsr_sessid);
            }
            BindConnToSessionRes::Ok(r)
        }
        Err(e) => BindConnToSessionRes::Err(e.into()),
    }
}

/// BACKCHANNEL_CTL.
pub fn backchannel_ctl(
    core: &Core,
    ctx: &SessionCtx,
    args: &BackchannelCtlArgs,
) -> BackchannelCtlRes {
    let Some(sid) = ctx.sessionid else {
        return BackchannelCtlRes {
            status: NfsStat4::NFS4ERR_OP_NOT_IN_SESSION,
        };
    };
    let mut st = core.state();
    let status = match st
        .sessions
        .backchannel_ctl(&sid, args.bca_cb_program, &args.bca_sec_parms)
    {
        Ok(()) => NfsStat4::NFS4_OK,
        Err(e) => e.into(),
    };
    BackchannelCtlRes { status }
}

/// DESTROY_CLIENTID.
pub async fn destroy_clientid<R: Role>(
    server: &Arc<R>,
    args: &DestroyClientIdArgs,
) -> DestroyClientIdRes {
    let removed = {
        let mut st = server.core().state();
        let has_state = server.client_has_state(args.dca_clientid);
        st.clients.destroy_clientid(args.dca_clientid, has_state)
    };
    let status = match removed {
        Ok(r) => {
            release_client(server, &r).await;
            NfsStat4::NFS4_OK
        }
        Err(e) => e.into(),
    };
    DestroyClientIdRes { status }
}

/// RECLAIM_COMPLETE (RFC 8881 section 18.51). A server without a grace period (a data
/// server) accepts it once per client as well: the Linux client sends it to every server it
/// creates a client id on, DSs included, and takes any error but COMPLETE_ALREADY as a reason
/// to recover its lease.
pub fn reclaim_complete(
    core: &Core,
    ctx: &SessionCtx,
    args: &ReclaimCompleteArgs,
) -> ReclaimCompleteRes {
    let status = (|| {
        let clientid = ctx.client()?;
        let mut st = core.state();
        let owner = st
            .clients
            .get(clientid)
            .map(|r| r.ownerid().clone())
            .unwrap_or_default();
        st.grace
            .reclaim_complete(clientid, &owner, args.rca_one_fs)?;
        Ok::<_, NfsStat4>(())
    })()
    .err()
    .unwrap_or(NfsStat4::NFS4_OK);
    ReclaimCompleteRes { status }
}

/// Expires silent clients (releasing their state through the role), ends the grace period,
/// and tells the role once when no grace period runs any more, with the clients of the
/// previous boot that did not reclaim ([`Role::grace_over`]; at once when there is none). Runs for the server's life.
pub async fn reaper<R: Role>(server: Arc<R>) {
    let tick = Duration::from_secs(1);
    let mut grace_over = false;
    loop {
        let now = server.core().now();
        let (removed, in_grace, end) = {
            let mut st = server.core().state();
            let end = st.grace.poll_end(now);
            if let Some(end) = &end {
                info!(unreclaimed = end.unreclaimed.len(), "grace period over");
            }
            let in_grace = st.grace.in_grace(now);
            let SessionState {
                clients, sessions, ..
            } = &mut *st;
            (sessions.expire(clients, now), in_grace, end)
        };
        for r in removed {
            info!(
                clientid = r.clientid,
                "lease expired: releasing the client's state"
            );
            release_client(&server, &r).await;
        }
        if !grace_over && !in_grace {
            grace_over = true;
            let unreclaimed = end.map(|e| e.unreclaimed).unwrap_or_default();
            server.grace_over(unreclaimed).await;
        }
        server.core().clock().sleep(tick).await;
    }
}

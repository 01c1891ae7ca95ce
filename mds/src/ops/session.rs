//! Session and client operations (RFC 8881 sections 18.35-18.37, 18.34, 18.46, 18.50, 18.51):
//! the glue between the COMPOUND engine, the sans-IO client/session/grace state and the store
//! (confirmed client records are written before the reply that confirms them).

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use nfs_proto::nfs4::*;
use nfs_proto::session::request_digest;
use nfs_proto::xdr::Utf8String;
use tracing::{info, warn};

use crate::compound::Ctx;
use crate::config::Config;
use crate::server::Mds;
use crate::state::client::{
    ClientEvent, ClientTable, ClientTableConfig, ExchangeIdOk, Principal, RemovedClient,
};
use crate::state::grace::Grace;
use crate::state::session::{
    ReplyLimit, SequenceOutcome, SequenceRequest, SessionLimits, SessionTable,
};
use crate::store::{ClientRecord, Store};

/// Clients, sessions and the grace period, behind one lock.
pub struct SessionState {
    /// Client records and leases.
    pub clients: ClientTable,
    /// Sessions and their slot tables.
    pub sessions: SessionTable,
    /// The grace period after a restart.
    pub grace: Grace,
}

impl SessionState {
    /// The state of a fresh boot: no clients, a grace period if the store knew clients.
    pub fn new(cfg: &Config, store: &Store, now: Instant) -> Self {
        let l = &cfg.limits;
        let limits = SessionLimits {
            max_request_size: l.max_record,
            max_response_size: l.max_record,
            max_operations: l.max_ops,
            max_requests: l.max_slots,
            ..SessionLimits::default()
        };
        let previous: Vec<Bytes> = store
            .previous_clients()
            .iter()
            .map(|c| c.owner.clone())
            .collect();
        if !previous.is_empty() {
            info!(
                clients = previous.len(),
                grace = cfg.grace_time,
                "grace period for reclaims"
            );
        }
        Self {
            clients: ClientTable::new(ClientTableConfig {
                boot_epoch: store.boot_epoch() as u16,
                lease_time: Duration::from_secs(cfg.lease_time.into()),
                roles: EXCHGID4_FLAG_USE_NON_PNFS,
            }),
            sessions: SessionTable::new(limits, *store.server_key()),
            grace: Grace::new(now, Duration::from_secs(cfg.grace_time.into()), previous),
        }
    }
}

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
    ctx: &mut Ctx,
    args: &SequenceArgs,
    raw_args: &[u8],
    request_size: usize,
    min_reply_size: usize,
    op_count: usize,
) -> Result<SequenceStart, NfsStat4> {
    let mds = ctx.mds.clone();
    let now = Instant::now();
    let mut st = mds.sessions.lock().expect("sessions");
    let SessionState {
        clients, sessions, ..
    } = &mut *st;
    let req = SequenceRequest {
        args: *args,
        digest: request_digest(raw_args),
        request_size: u32::try_from(request_size).unwrap_or(u32::MAX),
        min_reply_size: u32::try_from(min_reply_size).unwrap_or(u32::MAX),
        op_count: op_count as u32,
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
pub fn finish(ctx: &Ctx, slot: SlotRef, reply: &[Bytes]) {
    let len: usize = reply.iter().map(Bytes::len).sum();
    let mut st = ctx.mds.sessions.lock().expect("sessions");
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

fn principal(ctx: &Ctx) -> Principal {
    Principal::Uid(ctx.cred_user.uid)
}

fn server_owner(mds: &Mds) -> ServerOwner4 {
    // One server instance: the major id names it; clients trunk only with the same one.
    ServerOwner4 {
        so_minor_id: 0,
        so_major_id: Bytes::copy_from_slice(mds.store.server_key()[..16].as_ref()),
    }
}

/// Writes client records the state layer says must be kept (or forgotten), before the reply.
async fn persist(mds: &Arc<Mds>, events: Vec<ClientEvent>) -> Result<(), NfsStat4> {
    for ev in events {
        match ev {
            ClientEvent::Confirmed(p) => {
                let rec = ClientRecord {
                    clientid: p.clientid,
                    owner: Bytes::from(p.ownerid),
                    verifier: p.verifier,
                    principal: format!("{:?}", p.principal),
                    boot_epoch: mds.store.boot_epoch(),
                };
                mds.store.put_client(rec).await?;
            }
            ClientEvent::Removed(r) => release_client(mds, &r).await,
        }
    }
    Ok(())
}

/// Drops everything a removed client held: opens, locks, its store record; and deletes the
/// files whose last name went while only this client had them open.
pub async fn release_client(mds: &Arc<Mds>, r: &RemovedClient) {
    mds.opens.lock().expect("opens").release_client(r.clientid);
    super::dir::reap_released(mds);
    mds.sessions
        .lock()
        .expect("sessions")
        .grace
        .client_removed(r.clientid);
    if r.was_confirmed {
        if let Err(e) = mds.store.remove_client(r.clientid).await {
            warn!(clientid = r.clientid, "removing client record: {e}");
        }
    }
}

/// EXCHANGE_ID. A confirmed record that a client collision replaced (RFC 8881 section
/// 18.35.4 case 3) loses its sessions and state, and its store record, before the reply.
pub async fn exchange_id(ctx: &mut Ctx, args: &ExchangeIdArgs) -> ExchangeIdRes {
    let mds = ctx.mds.clone();
    let ok = {
        let opens = mds.opens.lock().expect("opens");
        let mut st = mds.sessions.lock().expect("sessions");
        let r = st.clients.exchange_id(
            args,
            &principal(ctx),
            ctx.minor,
            |c| opens.client_has_state(c),
            Instant::now(),
        );
        if let Ok(ExchangeIdOk {
            removed: Some(gone),
            ..
        }) = &r
        {
            st.sessions.remove_client_sessions(gone);
        }
        r
    };
    match ok {
        Ok(mut ok) => {
            if let Some(gone) = ok.removed.take() {
                release_client(&mds, &gone).await;
            }
            ExchangeIdRes::Ok(ok.into_res_ok(
                server_owner(&mds),
                Bytes::from_static(b"pnfs-rs"),
                vec![NfsImplId4 {
                    nii_domain: Utf8String::from("pnfs.rs"),
                    nii_name: Utf8String::from(concat!("pnfs ", env!("CARGO_PKG_VERSION"))),
                    nii_date: Nfstime4::default(),
                }],
            ))
        }
        Err(e) => ExchangeIdRes::Err(e.into()),
    }
}

/// CREATE_SESSION.
pub async fn create_session(ctx: &mut Ctx, args: &CreateSessionArgs) -> CreateSessionRes {
    let mds = ctx.mds.clone();
    let out = {
        let mut st = mds.sessions.lock().expect("sessions");
        let SessionState {
            clients, sessions, ..
        } = &mut *st;
        sessions.create_session(
            clients,
            args,
            &principal(ctx),
            ctx.conn.id(),
            Instant::now(),
        )
    };
    match out {
        Ok(o) => match persist(&mds, o.events).await {
            Ok(()) => {
                if o.res.csr_flags & CREATE_SESSION4_FLAG_CONN_BACK_CHAN != 0 {
                    crate::callback::bound(&mds, &ctx.conn, o.res.csr_sessionid);
                }
                CreateSessionRes::Ok(o.res)
            }
            Err(s) => CreateSessionRes::Err(s),
        },
        Err(e) => CreateSessionRes::Err(e.into()),
    }
}

/// DESTROY_SESSION.
pub async fn destroy_session(ctx: &mut Ctx, args: &DestroySessionArgs) -> DestroySessionRes {
    let same = ctx.sessionid == Some(args.dsa_sessionid);
    let mut st = ctx.mds.sessions.lock().expect("sessions");
    let SessionState {
        clients, sessions, ..
    } = &mut *st;
    let status = match sessions.destroy_session(clients, &args.dsa_sessionid, same) {
        Ok(()) => {
            crate::callback::session_gone(&ctx.mds, &args.dsa_sessionid);
            NfsStat4::NFS4_OK
        }
        Err(e) => e.into(),
    };
    DestroySessionRes { status }
}

/// BIND_CONN_TO_SESSION.
pub async fn bind_conn_to_session(
    ctx: &mut Ctx,
    args: &BindConnToSessionArgs,
) -> BindConnToSessionRes {
    let mut st = ctx.mds.sessions.lock().expect("sessions");
    let SessionState {
        clients, sessions, ..
    } = &mut *st;
    match sessions.bind_conn_to_session(clients, args, ctx.conn.id(), Instant::now()) {
        Ok(r) => {
            drop(st);
            if matches!(
                r.bctsr_dir,
                ChannelDirFromServer4::CDFS4_BACK | ChannelDirFromServer4::CDFS4_BOTH
            ) {
                crate::callback::bound(&ctx.mds, &ctx.conn, r.bctsr_sessid);
            }
            BindConnToSessionRes::Ok(r)
        }
        Err(e) => BindConnToSessionRes::Err(e.into()),
    }
}

/// BACKCHANNEL_CTL.
pub async fn backchannel_ctl(ctx: &mut Ctx, args: &BackchannelCtlArgs) -> BackchannelCtlRes {
    let Some(sid) = ctx.sessionid else {
        return BackchannelCtlRes {
            status: NfsStat4::NFS4ERR_OP_NOT_IN_SESSION,
        };
    };
    let mut st = ctx.mds.sessions.lock().expect("sessions");
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
pub async fn destroy_clientid(ctx: &mut Ctx, args: &DestroyClientIdArgs) -> DestroyClientIdRes {
    let mds = ctx.mds.clone();
    let removed = {
        let opens = mds.opens.lock().expect("opens");
        let has_state = opens.client_has_state(args.dca_clientid);
        let mut st = mds.sessions.lock().expect("sessions");
        st.clients.destroy_clientid(args.dca_clientid, has_state)
    };
    let status = match removed {
        Ok(r) => {
            release_client(&mds, &r).await;
            NfsStat4::NFS4_OK
        }
        Err(e) => e.into(),
    };
    DestroyClientIdRes { status }
}

/// RECLAIM_COMPLETE.
pub async fn reclaim_complete(ctx: &mut Ctx, args: &ReclaimCompleteArgs) -> ReclaimCompleteRes {
    let status = (|| {
        let clientid = ctx.client()?;
        let mut st = ctx.mds.sessions.lock().expect("sessions");
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

/// Expires silent clients, ends the grace period, and then deletes the files that were open
/// and unlinked before the restart ([`super::dir::sweep_orphans`]; at once when there is no
/// grace period). Runs for the server's life.
pub async fn reaper(mds: Arc<Mds>) {
    let tick = Duration::from_secs(1);
    let mut orphans_swept = false;
    loop {
        let now = Instant::now();
        let (removed, grace_end, in_grace) = {
            let mut st = mds.sessions.lock().expect("sessions");
            let grace_end = st.grace.poll_end(now);
            if let Some(end) = &grace_end {
                info!(unreclaimed = end.unreclaimed.len(), "grace period over");
            }
            let in_grace = st.grace.in_grace(now);
            let SessionState {
                clients, sessions, ..
            } = &mut *st;
            (sessions.expire(clients, now), grace_end, in_grace)
        };
        if let Some(end) = grace_end.filter(|e| !e.unreclaimed.is_empty()) {
            if let Err(e) = mds.store.remove_unreclaimed(end.unreclaimed).await {
                warn!("forgetting clients that did not reclaim: {e}");
            }
        }
        for r in removed {
            info!(
                clientid = r.clientid,
                "lease expired: releasing the client's state"
            );
            release_client(&mds, &r).await;
        }
        if !orphans_swept && !in_grace {
            orphans_swept = true;
            super::dir::sweep_orphans(mds.clone()).await;
        }
        tokio::time::sleep(tick).await;
    }
}

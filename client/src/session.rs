//! A client id and a session with one server (the MDS, or a data server), and the rules for
//! keeping them alive (RFC 8881 sections 2.4, 2.10 and 8.4):
//!
//! - every COMPOUND starts with SEQUENCE on a slot of the [`ClientSlotTable`]; a caller
//!   waits for a free slot when all the server allows are busy;
//! - a lost connection is replaced (a new TCP connection bound with BIND_CONN_TO_SESSION) and
//!   the request is re-sent on the *same* slot and sequence id, so the server answers it from
//!   its reply cache instead of running it twice;
//! - NFS4ERR_DELAY on SEQUENCE re-sends the same request after a pause;
//! - a session the server no longer knows (BADSESSION, DEADSESSION, a server restart) is
//!   replaced: EXCHANGE_ID with the same owner and verifier, CREATE_SESSION, then the
//!   [`StateRecovery`] hook reclaims opens and locks, then RECLAIM_COMPLETE;
//! - an idle session is kept alive with a SEQUENCE-only COMPOUND every third of the lease;
//! - a SEQUENCE reply saying some state was revoked (`SEQ4_STATUS_*_STATE_REVOKED`) starts
//!   [`StateRecovery::some_state_revoked`] (TEST_STATEID, FREE_STATEID) in a task.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures::future::BoxFuture;
use nfs_proto::nfs4::*;
use nfs_proto::rpc::OpaqueAuth;
use nfs_proto::session::{ClientSlotTable, SlotTicket};
use nfs_proto::transport::{Conn, NoCalls};
use tokio::sync::Notify;

use crate::callback::{CallbackService, CB_PROGRAM};
use crate::error::{Error, Result};
use crate::rpc::{self, is_connection_lost};

/// What the server is to this client.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Role {
    /// The metadata server (or any plain NFSv4.1 server): the session carries a back channel.
    Mds,
    /// A pNFS data server: I/O only, no back channel.
    Ds,
}

/// How one endpoint is set up.
#[derive(Clone, Debug)]
pub(crate) struct EndpointConfig {
    /// The server.
    pub addr: SocketAddr,
    /// The client owner (`co_ownerid`), the same for every server of one client.
    pub owner: Bytes,
    /// The client's boot verifier (`co_verifier`).
    pub verifier: [u8; 8],
    /// The credential of every call.
    pub cred: OpaqueAuth,
    /// MDS or DS.
    pub role: Role,
    /// Fore channel slots asked for.
    pub slots: u32,
    /// Largest request and reply asked for (bytes).
    pub max_message: u32,
    /// How long to wait for one reply before treating the connection as lost.
    pub rpc_timeout: Duration,
    /// How long to keep retrying (reconnects, NFS4ERR_DELAY, NFS4ERR_GRACE) before failing.
    pub retry_limit: Duration,
    /// The transport: TCP, or RPC-over-RDMA with its options.
    pub transport: rpc::Transport,
}

/// Reclaims the state a server lost (its restart, or our lease expiring), once a new session
/// is up. Implemented by the client's open-file table.
pub(crate) trait StateRecovery: Send + Sync {
    /// Re-establishes opens, locks and layouts on `ep`'s new session. Runs before any other
    /// request is sent on it; `restarted` says whether the server lost the client id itself.
    fn recover(&self, ep: Arc<Endpoint>, restarted: bool) -> BoxFuture<'static, ()>;

    /// SEQUENCE said the server revoked some of this client's state (recallable state not
    /// returned in time, an administrator, a lease: `SEQ4_STATUS_*_REVOKED`, RFC 8881
    /// section 18.46.3): find which (TEST_STATEID), free it (FREE_STATEID) and forget it.
    /// Runs in a task of its own; nothing by default.
    fn some_state_revoked(&self, ep: Arc<Endpoint>) -> BoxFuture<'static, ()> {
        let _ = ep;
        Box::pin(async {})
    }
}

/// The slot table of one session and the wake-up of callers waiting for a slot.
struct Slots {
    table: Mutex<ClientSlotTable>,
    freed: Notify,
}

impl Slots {
    fn new(n: u32) -> Self {
        Self {
            table: Mutex::new(ClientSlotTable::new(n)),
            freed: Notify::new(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, ClientSlotTable> {
        self.table.lock().unwrap_or_else(|p| p.into_inner())
    }

    async fn acquire(&self) -> SlotTicket {
        loop {
            let notified = self.freed.notified();
            if let Some(t) = self.lock().acquire() {
                return t;
            }
            notified.await;
        }
    }

    fn done(&self) {
        self.freed.notify_waiters();
        self.freed.notify_one();
    }
}

/// One session: its id, its connection (replaced when lost) and its slots.
struct Live {
    sessionid: Sessionid4,
    clientid: Clientid4,
    /// Counts sessions of this endpoint: a caller that saw a session fail recovers only if no
    /// one replaced it meanwhile.
    epoch: u64,
    conn: Mutex<Conn>,
    slots: Slots,
    /// The server's fore channel limits.
    max_request: u32,
    max_response: u32,
}

impl Live {
    fn conn(&self) -> Conn {
        self.conn.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

/// A server this client talks to: its client id and current session.
pub(crate) struct Endpoint {
    cfg: EndpointConfig,
    callbacks: Option<Arc<CallbackService>>,
    live: Mutex<Option<Arc<Live>>>,
    /// Held while a session is being replaced or a connection re-bound.
    repair: tokio::sync::Mutex<()>,
    /// The CREATE_SESSION sequence id for the next session of this client id.
    cs_seq: Mutex<Sequenceid4>,
    recovery: OnceLock<Weak<dyn StateRecovery>>,
    last_used: Mutex<Instant>,
    lease: Mutex<Duration>,
    /// The server's `eir_flags` (pNFS role bits).
    server_flags: Mutex<u32>,
    /// A data server this endpoint gave up reconnecting to (after `retry_limit`): until a
    /// call gets through again, a call that finds the connection lost fails after one
    /// attempt instead of retrying that long once more. Its I/O goes through the MDS then;
    /// without this, every COMMIT of the writes made through it before it died (a long
    /// write's background ones, then the fsync's) waited the 5 s again, and a 128 MiB copy
    /// to a mirrored file took 26-32 s instead of 6 when a data server died under it.
    gave_up: AtomicBool,
}

impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Endpoint({:?} {})", self.cfg.role, self.cfg.addr)
    }
}

/// Operations that change nothing, so a COMPOUND that failed with NFS4ERR_DELAY or
/// NFS4ERR_GRACE at a later operation can be sent again whole.
fn repeatable(op: &NfsArgop4) -> bool {
    matches!(
        op,
        NfsArgop4::PutFh(_)
            | NfsArgop4::PutRootFh
            | NfsArgop4::PutPubFh
            | NfsArgop4::Lookup(_)
            | NfsArgop4::LookupP
            | NfsArgop4::GetFh
            | NfsArgop4::GetAttr(_)
            | NfsArgop4::SaveFh
            | NfsArgop4::RestoreFh
            | NfsArgop4::Access(_)
            | NfsArgop4::Verify(_)
            | NfsArgop4::NVerify(_)
            | NfsArgop4::Read(_)
            | NfsArgop4::ReadDir(_)
            | NfsArgop4::ReadLink
            | NfsArgop4::SecInfoNoName(_)
            | NfsArgop4::GetXattr(_)
            | NfsArgop4::ListXattrs(_)
    )
}

/// Replies too large for the reply cache: a client asks the server to cache only the rest.
/// (A GETXATTR value or a LISTXATTRS page runs to 64 KiB, the size of cached replies this
/// client asks for; the Linux client does not cache them either.)
fn cacheable(ops: &[NfsArgop4]) -> bool {
    !ops.iter().any(|o| {
        matches!(
            o,
            NfsArgop4::Read(_)
                | NfsArgop4::ReadDir(_)
                | NfsArgop4::GetXattr(_)
                | NfsArgop4::ListXattrs(_)
        )
    })
}

impl Endpoint {
    /// Connects, sends EXCHANGE_ID and CREATE_SESSION, and starts the lease renewal task.
    /// RECLAIM_COMPLETE is left to the caller (after any reclaim; [`Self::reclaim_complete`]).
    pub(crate) async fn connect(
        cfg: EndpointConfig,
        callbacks: Option<Arc<CallbackService>>,
    ) -> Result<Arc<Endpoint>> {
        let ep = Arc::new(Endpoint {
            cfg,
            callbacks,
            live: Mutex::new(None),
            repair: tokio::sync::Mutex::new(()),
            cs_seq: Mutex::new(0),
            recovery: OnceLock::new(),
            last_used: Mutex::new(Instant::now()),
            lease: Mutex::new(Duration::from_secs(90)),
            server_flags: Mutex::new(0),
            gave_up: AtomicBool::new(false),
        });
        let live = ep.establish(0).await?;
        *lock(&ep.live) = Some(live);
        tokio::spawn(renew(Arc::downgrade(&ep)));
        Ok(ep)
    }

    /// The server's address.
    pub(crate) fn addr(&self) -> SocketAddr {
        self.cfg.addr
    }

    /// Registers the hook that reclaims state after the server lost it.
    pub(crate) fn set_recovery(&self, r: Weak<dyn StateRecovery>) {
        let _ = self.recovery.set(r);
    }

    /// The server's lease time.
    pub(crate) fn lease(&self) -> Duration {
        *lock(&self.lease)
    }

    /// The server's EXCHANGE_ID flags (`EXCHGID4_FLAG_USE_PNFS_MDS`, ...).
    pub(crate) fn server_flags(&self) -> u32 {
        *lock(&self.server_flags)
    }

    /// The largest READ or WRITE payload that fits the session's channel limits.
    pub(crate) fn max_io(&self) -> u32 {
        let Some(l) = self.live() else {
            return 64 << 10;
        };
        // Leave room for the RPC and COMPOUND headers and the other operations.
        let room = l.max_request.min(l.max_response).saturating_sub(4096);
        (room / 4096 * 4096).clamp(4096, 1 << 20)
    }

    fn live(&self) -> Option<Arc<Live>> {
        lock(&self.live).clone()
    }

    async fn dial(&self) -> Result<Conn> {
        let t = Duration::from_secs(10).min(self.cfg.rpc_timeout);
        match &self.callbacks {
            Some(cb) => rpc::dial(self.cfg.addr, &self.cfg.transport, cb.clone(), t).await,
            None => rpc::dial(self.cfg.addr, &self.cfg.transport, Arc::new(NoCalls), t).await,
        }
    }

    /// A raw COMPOUND on `conn` without SEQUENCE (EXCHANGE_ID, CREATE_SESSION, BIND_...).
    async fn raw(&self, conn: &Conn, ops: Vec<NfsArgop4>) -> Result<Compound4Res> {
        rpc::compound(conn, &self.cfg.cred, 1, ops, self.cfg.rpc_timeout).await
    }

    /// EXCHANGE_ID + CREATE_SESSION on a new connection: a session numbered `epoch`.
    async fn establish(&self, epoch: u64) -> Result<Arc<Live>> {
        let addr = self.cfg.addr;
        let conn = self.dial().await?;
        let flags = match self.cfg.role {
            Role::Mds => EXCHGID4_FLAG_SUPP_MOVED_REFER | EXCHGID4_FLAG_SUPP_MOVED_MIGR,
            Role::Ds => 0,
        };
        let ex = ExchangeIdArgs {
            eia_clientowner: ClientOwner4 {
                co_verifier: self.cfg.verifier,
                co_ownerid: self.cfg.owner.clone(),
            },
            eia_flags: flags,
            eia_state_protect: StateProtect4A::None,
            eia_client_impl_id: vec![],
        };
        let r = self.raw(&conn, vec![NfsArgop4::ExchangeId(ex)]).await?;
        let ok = match r.resarray.first() {
            Some(NfsResop4::ExchangeId(ExchangeIdRes::Ok(ok))) => ok.clone(),
            Some(other) => return Err(nfs_err(NfsOpnum4::OP_EXCHANGE_ID, other.status())),
            None => return Err(nfs_err(NfsOpnum4::OP_EXCHANGE_ID, r.status)),
        };
        *lock(&self.server_flags) = ok.eir_flags;
        *lock(&self.cs_seq) = ok.eir_sequenceid;
        self.create_session(conn, ok.eir_clientid, epoch)
            .await
            .map_err(|e| {
                tracing::debug!(%addr, "CREATE_SESSION failed: {e}");
                e
            })
    }

    /// CREATE_SESSION for `clientid` on `conn`.
    async fn create_session(
        &self,
        conn: Conn,
        clientid: Clientid4,
        epoch: u64,
    ) -> Result<Arc<Live>> {
        let fore = ChannelAttrs4 {
            ca_headerpadsize: 0,
            ca_maxrequestsize: self.cfg.max_message,
            ca_maxresponsesize: self.cfg.max_message,
            ca_maxresponsesize_cached: 64 << 10,
            ca_maxoperations: 16,
            ca_maxrequests: self.cfg.slots,
            // Over RDMA: the RDMA Reads the server may have outstanding to us (the depth of
            // the connection, rdma::client's 16).
            ca_rdma_ird: if self.cfg.transport.is_rdma() {
                vec![16]
            } else {
                vec![]
            },
        };
        let back = ChannelAttrs4 {
            ca_headerpadsize: 0,
            ca_maxrequestsize: 16 << 10,
            ca_maxresponsesize: 16 << 10,
            ca_maxresponsesize_cached: 0,
            ca_maxoperations: 8,
            ca_maxrequests: 4,
            ca_rdma_ird: vec![],
        };
        let seq = *lock(&self.cs_seq);
        let cs = CreateSessionArgs {
            csa_clientid: clientid,
            csa_sequence: seq,
            csa_flags: match self.cfg.role {
                Role::Mds => CREATE_SESSION4_FLAG_CONN_BACK_CHAN,
                Role::Ds => 0,
            },
            csa_fore_chan_attrs: fore,
            csa_back_chan_attrs: back,
            csa_cb_program: CB_PROGRAM,
            csa_sec_parms: vec![CallbackSecParms4::AuthNone],
        };
        let r = self.raw(&conn, vec![NfsArgop4::CreateSession(cs)]).await?;
        let s = match r.resarray.first() {
            Some(NfsResop4::CreateSession(CreateSessionRes::Ok(s))) => s.clone(),
            Some(other) => return Err(nfs_err(NfsOpnum4::OP_CREATE_SESSION, other.status())),
            None => return Err(nfs_err(NfsOpnum4::OP_CREATE_SESSION, r.status)),
        };
        *lock(&self.cs_seq) = seq.wrapping_add(1);
        if let Some(cb) = &self.callbacks {
            cb.session_created(s.csr_sessionid);
        }
        let slots = s.csr_fore_chan_attrs.ca_maxrequests.clamp(1, 1024);
        let live = Arc::new(Live {
            sessionid: s.csr_sessionid,
            clientid,
            epoch,
            conn: Mutex::new(conn),
            slots: Slots::new(slots),
            max_request: s.csr_fore_chan_attrs.ca_maxrequestsize,
            max_response: s.csr_fore_chan_attrs.ca_maxresponsesize,
        });
        // The lease: one GETATTR on the root (a DS may not answer it; keep the default).
        if self.cfg.role == Role::Mds {
            self.learn_lease(&live).await;
        }
        Ok(live)
    }

    async fn learn_lease(&self, live: &Arc<Live>) {
        let t = live.slots.acquire().await;
        let ops = vec![
            sequence_op(live, t, false),
            NfsArgop4::PutRootFh,
            NfsArgop4::GetAttr(GetAttrArgs {
                attr_request: Bitmap4::from_bits([nfs_proto::nfs4::attr::FATTR4_LEASE_TIME]),
            }),
        ];
        let r = rpc::compound(&live.conn(), &self.cfg.cred, 1, ops, self.cfg.rpc_timeout).await;
        let mut done = false;
        if let Ok(r) = &r {
            if let Some(NfsResop4::Sequence(SequenceRes::Ok(s))) = r.resarray.first() {
                done = live.slots.lock().complete(t.slotid, s);
            }
            if let Some(NfsResop4::GetAttr(GetAttrRes::Ok(a))) = r.resarray.get(2) {
                if let Ok(attrs) = nfs_proto::nfs4::attr::FileAttrs::from_fattr(&a.obj_attributes) {
                    if let Some(l) = attrs.lease_time {
                        *lock(&self.lease) = Duration::from_secs(u64::from(l.clamp(1, 3600)));
                    }
                }
            }
        }
        if !done {
            live.slots.lock().release_unsent(t.slotid);
        }
        live.slots.done();
    }

    /// Sends RECLAIM_COMPLETE (after the first session, or after reclaiming). A server that
    /// already had it answers NFS4ERR_COMPLETE_ALREADY, which is fine.
    pub(crate) async fn reclaim_complete(self: &Arc<Self>) -> Result<()> {
        let r = self
            .compound(vec![NfsArgop4::ReclaimComplete(ReclaimCompleteArgs {
                rca_one_fs: false,
            })])
            .await?;
        match r.status {
            NfsStat4::NFS4_OK | NfsStat4::NFS4ERR_COMPLETE_ALREADY => Ok(()),
            s => Err(nfs_err(NfsOpnum4::OP_RECLAIM_COMPLETE, s)),
        }
    }

    /// Sends `ops` after a SEQUENCE and returns the COMPOUND's result (SEQUENCE removed).
    /// Lost connections, NFS4ERR_DELAY, NFS4ERR_GRACE (for requests that change nothing
    /// before the failing operation) and lost sessions are dealt with here, up to the
    /// configured retry limit; any other status is the caller's to read.
    ///
    /// The future is boxed (and `Send` by declaration): recovery runs requests from inside a
    /// request, and a recursive `async fn` cannot prove itself `Send`.
    pub(crate) fn compound(
        self: &Arc<Self>,
        ops: Vec<NfsArgop4>,
    ) -> BoxFuture<'static, Result<Reply>> {
        self.compound_minor(1, ops)
    }

    /// [`Self::compound`] in minor version `minor`: 2 for the NFSv4.2 operations (COPY,
    /// OFFLOAD_STATUS, ...), which a server may refuse in a 4.1 COMPOUND (RFC 8178 section 8).
    /// A server without 4.2 answers NFS4ERR_MINOR_VERS_MISMATCH (as a SEQUENCE error).
    pub(crate) fn compound_minor(
        self: &Arc<Self>,
        minor: u32,
        ops: Vec<NfsArgop4>,
    ) -> BoxFuture<'static, Result<Reply>> {
        let me = self.clone();
        Box::pin(async move { me.compound_now(minor, ops, true).await })
    }

    /// [`Self::compound`] that hands NFS4ERR_GRACE back instead of waiting the grace period
    /// out: for a caller holding something the state recovery needs (a lock-owner's turn,
    /// which the reclaim of that owner's locks waits for) that must let go while it waits.
    pub(crate) fn compound_no_grace_wait(
        self: &Arc<Self>,
        ops: Vec<NfsArgop4>,
    ) -> BoxFuture<'static, Result<Reply>> {
        let me = self.clone();
        Box::pin(async move { me.compound_now(1, ops, false).await })
    }

    async fn compound_now(
        self: &Arc<Self>,
        minor: u32,
        ops: Vec<NfsArgop4>,
        wait_grace: bool,
    ) -> Result<Reply> {
        let started = Instant::now();
        let mut pause = Duration::from_millis(20);
        loop {
            let reply = self.sequenced(minor, &ops, started).await?;
            let failed_at = reply.results.len().saturating_sub(1);
            let retry = (reply.status == NfsStat4::NFS4ERR_DELAY
                || (wait_grace && reply.status == NfsStat4::NFS4ERR_GRACE))
                && ops[..failed_at.min(ops.len())].iter().all(repeatable);
            if !retry {
                return Ok(reply);
            }
            self.wait_or_give_up(started, &mut pause, "NFS4ERR_DELAY/GRACE")
                .await?;
        }
    }

    /// [`Self::wait_or_give_up`] for a connection that could not be made again; at once
    /// for a data server given up on before ([`Endpoint::gave_up`]).
    async fn reconnect_or_give_up(&self, started: Instant, pause: &mut Duration) -> Result<()> {
        let ds = self.cfg.role == Role::Ds;
        if ds && self.gave_up.load(Ordering::Acquire) {
            return Err(Error::Timeout {
                addr: self.cfg.addr,
                secs: self.cfg.retry_limit.as_secs(),
                what: "a connection: an earlier call gave up on it, this one tried once",
            });
        }
        let r = self.wait_or_give_up(started, pause, "a connection").await;
        if ds && r.is_err() {
            tracing::info!(addr = %self.cfg.addr, "data server unreachable: later calls try once");
            self.gave_up.store(true, Ordering::Release);
        }
        r
    }

    async fn wait_or_give_up(
        &self,
        started: Instant,
        pause: &mut Duration,
        what: &'static str,
    ) -> Result<()> {
        if started.elapsed() > self.cfg.retry_limit {
            return Err(Error::Timeout {
                addr: self.cfg.addr,
                secs: self.cfg.retry_limit.as_secs(),
                what,
            });
        }
        tokio::time::sleep(*pause).await;
        *pause = (*pause * 2).min(Duration::from_secs(1));
        Ok(())
    }

    /// One request on a slot, re-sent on the same slot across connection losses and
    /// SEQUENCE-level NFS4ERR_DELAY; a new session when the server lost this one.
    async fn sequenced(
        self: &Arc<Self>,
        minor: u32,
        ops: &[NfsArgop4],
        started: Instant,
    ) -> Result<Reply> {
        let cache = cacheable(ops);
        let mut pause = Duration::from_millis(20);
        'session: loop {
            let live = match self.live() {
                Some(l) => l,
                None => {
                    self.renew_session(u64::MAX).await?;
                    continue;
                }
            };
            let mut ticket = live.slots.acquire().await;
            loop {
                *lock(&self.last_used) = Instant::now();
                let mut all = Vec::with_capacity(ops.len() + 1);
                all.push(sequence_op(&live, ticket, cache));
                all.extend(ops.iter().cloned());
                let conn = live.conn();
                let sent =
                    rpc::compound(&conn, &self.cfg.cred, minor, all, self.cfg.rpc_timeout).await;
                let res = match sent {
                    Ok(r) => r,
                    Err(e) if is_connection_lost(&e) => {
                        tracing::debug!(addr = %self.cfg.addr, "connection lost: {e}");
                        match self.rebind(&live, conn.id()).await {
                            Ok(()) => {
                                ticket = live
                                    .slots
                                    .lock()
                                    .fail_retry(ticket.slotid)
                                    .unwrap_or(ticket);
                                continue;
                            }
                            Err(e2) => {
                                live.slots.lock().release_unsent(ticket.slotid);
                                live.slots.done();
                                if matches!(
                                    e2.nfs_status(),
                                    Some(
                                        NfsStat4::NFS4ERR_BADSESSION
                                            | NfsStat4::NFS4ERR_DEADSESSION
                                    )
                                ) {
                                    self.renew_session(live.epoch).await?;
                                    continue 'session;
                                }
                                self.reconnect_or_give_up(started, &mut pause).await?;
                                continue 'session;
                            }
                        }
                    }
                    Err(e) => {
                        live.slots.lock().release_unsent(ticket.slotid);
                        live.slots.done();
                        return Err(e);
                    }
                };
                let mut results = res.resarray.into_iter();
                match results.next() {
                    Some(NfsResop4::Sequence(SequenceRes::Ok(s))) => {
                        live.slots.lock().complete(ticket.slotid, &s);
                        live.slots.done();
                        if s.sr_status_flags
                            & (SEQ4_STATUS_RESTART_RECLAIM_NEEDED
                                | SEQ4_STATUS_EXPIRED_ALL_STATE_REVOKED)
                            != 0
                        {
                            tracing::info!(addr = %self.cfg.addr, flags = s.sr_status_flags, "server lost our state");
                            let me = self.clone();
                            let epoch = live.epoch;
                            tokio::spawn(async move { me.run_recovery(epoch, true).await });
                        } else if s.sr_status_flags
                            & (SEQ4_STATUS_RECALLABLE_STATE_REVOKED
                                | SEQ4_STATUS_ADMIN_STATE_REVOKED
                                | SEQ4_STATUS_EXPIRED_SOME_STATE_REVOKED)
                            != 0
                        {
                            if let Some(r) = self.recovery.get().and_then(Weak::upgrade) {
                                tokio::spawn(r.some_state_revoked(self.clone()));
                            }
                        }
                        return Ok(Reply {
                            status: res.status,
                            results: results.collect(),
                        });
                    }
                    Some(NfsResop4::Sequence(SequenceRes::Err(status))) => {
                        let again = live.slots.lock().complete_error(ticket.slotid, status);
                        live.slots.done();
                        match status {
                            NfsStat4::NFS4ERR_DELAY => {
                                self.wait_or_give_up(started, &mut pause, "NFS4ERR_DELAY")
                                    .await?;
                                match again {
                                    Some(t) => {
                                        ticket = t;
                                        continue;
                                    }
                                    None => continue 'session,
                                }
                            }
                            NfsStat4::NFS4ERR_BADSESSION
                            | NfsStat4::NFS4ERR_DEADSESSION
                            | NfsStat4::NFS4ERR_CONN_NOT_BOUND_TO_SESSION => {
                                self.renew_session(live.epoch).await?;
                                continue 'session;
                            }
                            NfsStat4::NFS4ERR_RETRY_UNCACHED_REP if !cache => continue 'session,
                            NfsStat4::NFS4ERR_SEQ_MISORDERED | NfsStat4::NFS4ERR_BAD_HIGH_SLOT => {
                                self.wait_or_give_up(started, &mut pause, "slot").await?;
                                continue 'session;
                            }
                            s => return Err(nfs_err(NfsOpnum4::OP_SEQUENCE, s)),
                        }
                    }
                    _ => {
                        live.slots.lock().release_unsent(ticket.slotid);
                        live.slots.done();
                        if res.status == NfsStat4::NFS4_OK {
                            return Err(Error::Protocol {
                                addr: self.cfg.addr,
                                what: "a COMPOUND reply without SEQUENCE".into(),
                            });
                        }
                        return Err(nfs_err(NfsOpnum4::OP_SEQUENCE, res.status));
                    }
                }
            }
        }
    }

    /// Replaces a lost connection of `live` and binds it to the session (both directions on
    /// the MDS, so callbacks follow).
    async fn rebind(&self, live: &Arc<Live>, failed: u64) -> Result<()> {
        let _g = self.repair.lock().await;
        if live.conn().id() != failed {
            // Another caller replaced it meanwhile.
            return Ok(());
        }
        let conn = self.dial().await?;
        let dir = match self.cfg.role {
            Role::Mds => ChannelDirFromClient4::CDFC4_FORE_OR_BOTH,
            Role::Ds => ChannelDirFromClient4::CDFC4_FORE,
        };
        let r = self
            .raw(
                &conn,
                vec![NfsArgop4::BindConnToSession(BindConnToSessionArgs {
                    bctsa_sessid: live.sessionid,
                    bctsa_dir: dir,
                    bctsa_use_conn_in_rdma_mode: self.cfg.transport.is_rdma(),
                })],
            )
            .await?;
        if r.status != NfsStat4::NFS4_OK {
            return Err(nfs_err(NfsOpnum4::OP_BIND_CONN_TO_SESSION, r.status));
        }
        *live.conn.lock().unwrap_or_else(|p| p.into_inner()) = conn;
        self.gave_up.store(false, Ordering::Release);
        tracing::info!(addr = %self.cfg.addr, "reconnected and bound to the session");
        Ok(())
    }

    /// Replaces the session numbered `epoch` (unless someone already did): CREATE_SESSION
    /// for the same client id, or, when the server forgot the client (a restart, an expired
    /// lease), EXCHANGE_ID first; then reclaims state and sends RECLAIM_COMPLETE.
    async fn renew_session(self: &Arc<Self>, epoch: u64) -> Result<()> {
        let started = Instant::now();
        let mut pause = Duration::from_millis(50);
        loop {
            let g = self.repair.lock().await;
            if let Some(l) = self.live() {
                if l.epoch != epoch && epoch != u64::MAX {
                    return Ok(());
                }
            }
            let old = self.live();
            let next = old.as_ref().map(|l| l.epoch + 1).unwrap_or(1);
            let attempt = async {
                if let Some(old) = &old {
                    let conn = self.dial().await?;
                    match self.create_session(conn, old.clientid, next).await {
                        Ok(l) => return Ok((l, false)),
                        Err(e) if e.is_state_lost() || e.is(NfsStat4::NFS4ERR_SEQ_MISORDERED) => {}
                        Err(e) => return Err(e),
                    }
                }
                Ok((self.establish(next).await?, true))
            };
            match attempt.await {
                Ok((live, restarted)) => {
                    tracing::info!(addr = %self.cfg.addr, restarted, "new session");
                    *lock(&self.live) = Some(live);
                    self.gave_up.store(false, Ordering::Release);
                    drop(g);
                    // Reclaim in a task of its own: the request that found the session
                    // gone may itself be part of a reclaim (a file re-establishing its
                    // open), which must go on for the recovery to finish.
                    let me = self.clone();
                    tokio::spawn(async move { me.run_recovery(next, restarted).await });
                    return Ok(());
                }
                Err(e) => {
                    drop(g);
                    tracing::debug!(addr = %self.cfg.addr, "no new session yet: {e}");
                    self.wait_or_give_up(started, &mut pause, "a new session")
                        .await?;
                }
            }
        }
    }

    /// Runs the recovery hook on session `epoch` (the MDS reclaims opens and locks), then
    /// RECLAIM_COMPLETE.
    async fn run_recovery(self: &Arc<Self>, epoch: u64, restarted: bool) {
        if self.live().map(|l| l.epoch) != Some(epoch) {
            return;
        }
        if let Some(r) = self.recovery.get().and_then(Weak::upgrade) {
            r.recover(self.clone(), restarted).await;
        }
        if self.cfg.role == Role::Mds {
            if let Err(e) = self.reclaim_complete().await {
                tracing::warn!(addr = %self.cfg.addr, "RECLAIM_COMPLETE: {e}");
            }
        }
    }

    /// Ends the session and the client id (best effort: the server expires them anyway).
    pub(crate) async fn shutdown(self: &Arc<Self>) {
        let Some(live) = self.live() else { return };
        let conn = live.conn();
        let _ = self
            .raw(
                &conn,
                vec![NfsArgop4::DestroySession(DestroySessionArgs {
                    dsa_sessionid: live.sessionid,
                })],
            )
            .await;
        let _ = self
            .raw(
                &conn,
                vec![NfsArgop4::DestroyClientId(DestroyClientIdArgs {
                    dca_clientid: live.clientid,
                })],
            )
            .await;
        *lock(&self.live) = None;
    }

    fn idle_for(&self) -> Duration {
        lock(&self.last_used).elapsed()
    }
}

/// The result of a COMPOUND after its SEQUENCE.
#[derive(Debug, Clone)]
pub(crate) struct Reply {
    /// The COMPOUND's status: that of the last result.
    pub status: NfsStat4,
    /// The results after SEQUENCE.
    pub results: Vec<NfsResop4>,
}

impl Reply {
    /// Fails with the first failing operation's status.
    pub(crate) fn ok(self) -> Result<Vec<NfsResop4>> {
        if self.status == NfsStat4::NFS4_OK {
            return Ok(self.results);
        }
        let op = self
            .results
            .last()
            .map(|r| r.opnum())
            .unwrap_or(NfsOpnum4::OP_SEQUENCE);
        Err(nfs_err(op, self.status))
    }
}

/// An NFS error of `op`.
pub(crate) fn nfs_err(op: NfsOpnum4, status: NfsStat4) -> Error {
    Error::Nfs { op, status }
}

fn sequence_op(live: &Live, t: SlotTicket, cache: bool) -> NfsArgop4 {
    NfsArgop4::Sequence(SequenceArgs {
        sa_sessionid: live.sessionid,
        sa_sequenceid: t.seqid,
        sa_slotid: t.slotid,
        sa_highest_slotid: t.highest_slotid,
        sa_cachethis: cache,
    })
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Keeps the lease: a SEQUENCE when nothing was sent for a third of it (RFC 8881 section
/// 8.3). Ends when the endpoint is dropped.
async fn renew(ep: Weak<Endpoint>) {
    loop {
        let Some(e) = ep.upgrade() else { return };
        let third = e.lease() / 3;
        let idle = e.idle_for();
        drop(e);
        if idle < third {
            tokio::time::sleep(third - idle).await;
            continue;
        }
        let Some(e) = ep.upgrade() else { return };
        if e.live().is_none() {
            return;
        }
        if let Err(err) = e.compound(Vec::new()).await {
            tracing::warn!(addr = %e.cfg.addr, "lease renewal: {err}");
        }
        drop(e);
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

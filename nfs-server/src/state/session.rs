//! Sessions (RFC 8881 section 2.10): CREATE_SESSION (section 18.36), DESTROY_SESSION
//! (18.37), BIND_CONN_TO_SESSION (18.34), BACKCHANNEL_CTL (18.33) and the SEQUENCE checks
//! (18.46) over each session's slot table and reply cache.
//!
//! ```text
//!   ClientTable (client.rs)            SessionTable
//!   clientid -> record  <───────────── sessionid -> Session { clientid, channel attributes,
//!      .sessions                                     ServerSlotTable (reply cache),
//!      CREATE_SESSION slot                           fore / back connection ids }
//!      lease                           conn id -> sessions it is bound to
//! ```
//!
//! Connections are `u64` ids the network layer hands in. The back channel connection of a
//! session ([`Session::back_channel_conn`]) is where that layer sends callbacks; when it
//! closes it calls [`SessionTable::connection_closed`], and when callbacks fail,
//! [`SessionTable::set_back_channel_down`]. SEQUENCE then reports
//! `SEQ4_STATUS_CB_PATH_DOWN(_SESSION)` so the client binds a new one.
//!
//! A session id is `clientid` (8 bytes BE) || per-client session counter (4 bytes BE) || the
//! first 4 bytes of `blake3::keyed_hash(server_key, first 12 bytes)`, so ids are unguessable
//! and ids of an earlier boot (another client id epoch) are never found:
//! `NFS4ERR_BADSESSION`.
//!
//! **Caps** ([`SessionLimits::max_sessions`], [`SessionLimits::max_sessions_per_client`]).
//! Each session holds a slot table whose reply cache may grow to `ca_maxrequests` replies, so
//! their number is bounded. A client's first session is never refused for the table-wide
//! cap: the client already holds a place under `max_clients`, and without a session it could
//! do nothing with it (this is what keeps established clients, and the first CREATE_SESSION
//! of a new one, from being locked out by someone else's sessions). Further sessions are
//! refused past `max_sessions` in all, and past `max_sessions_per_client` for one client,
//! with `NFS4ERR_DELAY` ([`SessionError::NoRoom`]). So there are never more than
//! `max_sessions` plus one per client record. BIND_CONN_TO_SESSION creates nothing and is
//! never refused. The caller reaps expired clients, whose sessions then go, before a
//! CREATE_SESSION that finds the table full (`session_ops::create_session`).

use std::collections::{BTreeSet, HashMap};
use std::time::Instant;

use nfs_proto::nfs4::{
    BindConnToSessionArgs, BindConnToSessionResOk, CallbackSecParms4, ChannelAttrs4,
    ChannelDirFromClient4, ChannelDirFromServer4, Clientid4, CreateSessionArgs, CreateSessionResOk,
    NfsStat4, SequenceArgs, SequenceResOk, Sessionid4, Slotid4,
    CREATE_SESSION4_FLAG_CONN_BACK_CHAN, CREATE_SESSION4_FLAG_CONN_RDMA,
    CREATE_SESSION4_FLAG_PERSIST, SEQ4_STATUS_CB_PATH_DOWN, SEQ4_STATUS_CB_PATH_DOWN_SESSION,
};
use nfs_proto::session::{
    CreateSessionDecision, ReplyPieces, ServerSlotTable, SlotDecision, SlotError,
};

use super::client::{ClientError, ClientEvent, ClientTable, Principal, RemovedClient};

/// A connection id, assigned by the network layer.
pub type ConnId = u64;

/// Why a session operation failed; each variant is one `nfsstat4`.
#[derive(Clone, Copy, PartialEq, Eq, Debug, thiserror::Error)]
pub enum SessionError {
    /// No such session (destroyed, of an earlier boot, or of an expired client).
    #[error("unknown session")]
    BadSession,
    /// A client record problem (unknown client id, other principal, ...).
    #[error(transparent)]
    Client(#[from] ClientError),
    /// The slot checks of SEQUENCE, or the CREATE_SESSION sequence check.
    #[error(transparent)]
    Slot(#[from] SlotError),
    /// The client's channel limits are too small to carry any useful request or reply.
    #[error("channel attributes too small")]
    TooSmall,
    /// Undefined flags, zero slots, or an undefined channel direction.
    #[error("invalid argument")]
    Inval,
    /// None of the callback security flavors offered is usable (AUTH_NONE, AUTH_SYS).
    #[error("no usable callback security flavor")]
    EncrAlgUnsupp,
    /// The COMPOUND is larger than the session's `ca_maxrequestsize`.
    #[error("request larger than the session allows")]
    ReqTooBig,
    /// The COMPOUND has more operations than the session's `ca_maxoperations`.
    #[error("more operations than the session allows")]
    TooManyOps,
    /// Not even the reply to SEQUENCE alone fits in the session's `ca_maxresponsesize`.
    #[error("reply larger than the session allows")]
    RepTooBig,
    /// Not even the reply to SEQUENCE alone fits in the session's
    /// `ca_maxresponsesize_cached`, and the client asked for the reply to be cached.
    #[error("reply larger than the session caches")]
    RepTooBigToCache,
    /// DESTROY_SESSION while other requests are running on the session.
    #[error("session busy")]
    Delay,
    /// CREATE_SESSION past `max_sessions` (for a client that has a session already) or past
    /// `max_sessions_per_client`.
    ///
    /// `NFS4ERR_DELAY` (RFC 8881 section 15.1.1.3), which CREATE_SESSION may return (section
    /// 15.2), as knfsd does when it cannot allocate a session: the client retries later with
    /// the same `csa_sequence` (the refusal is not cached in the CREATE_SESSION slot, so the
    /// retry is a new request). Not `NFS4ERR_RESOURCE` (not in CREATE_SESSION's list of
    /// errors: a minor version 0 error), nor `NFS4ERR_NOSPC`, which is about file system
    /// space (section 15.1.4.11); `NFS4ERR_TOO_MANY_OPS` is about the number of operations
    /// in a COMPOUND.
    #[error("too many sessions")]
    NoRoom,
}

impl From<SessionError> for NfsStat4 {
    fn from(e: SessionError) -> Self {
        match e {
            SessionError::BadSession => NfsStat4::NFS4ERR_BADSESSION,
            SessionError::Client(c) => c.into(),
            SessionError::Slot(s) => s.into(),
            SessionError::TooSmall => NfsStat4::NFS4ERR_TOOSMALL,
            SessionError::Inval => NfsStat4::NFS4ERR_INVAL,
            SessionError::EncrAlgUnsupp => NfsStat4::NFS4ERR_ENCR_ALG_UNSUPP,
            SessionError::ReqTooBig => NfsStat4::NFS4ERR_REQ_TOO_BIG,
            SessionError::TooManyOps => NfsStat4::NFS4ERR_TOO_MANY_OPS,
            SessionError::RepTooBig => NfsStat4::NFS4ERR_REP_TOO_BIG,
            SessionError::RepTooBigToCache => NfsStat4::NFS4ERR_REP_TOO_BIG_TO_CACHE,
            SessionError::Delay | SessionError::NoRoom => NfsStat4::NFS4ERR_DELAY,
        }
    }
}

/// The server's channel limits (build them from `config.limits`: `max_record` for the sizes,
/// `max_ops`, `max_slots`).
#[derive(Clone, Debug)]
pub struct SessionLimits {
    /// Largest fore channel request (`ca_maxrequestsize`).
    pub max_request_size: u32,
    /// Largest fore channel reply (`ca_maxresponsesize`).
    pub max_response_size: u32,
    /// Largest reply kept in the reply cache (`ca_maxresponsesize_cached`).
    pub max_response_size_cached: u32,
    /// Most operations in one COMPOUND (`ca_maxoperations`).
    pub max_operations: u32,
    /// Slots per session (`ca_maxrequests`).
    pub max_requests: u32,
    /// Smallest fore channel request/reply size a client may ask for: below it even
    /// SEQUENCE plus one operation does not fit (`NFS4ERR_TOOSMALL`).
    pub min_fore_size: u32,
    /// Smallest back channel request size the client must accept: a CB_SEQUENCE plus a
    /// CB_LAYOUTRECALL or CB_RECALL.
    pub min_back_request_size: u32,
    /// Smallest back channel reply size the client may ask for.
    pub min_back_response_size: u32,
    /// Most back channel slots the server will use.
    pub max_back_requests: u32,
    /// Most sessions in all (`limits.max_sessions`), a client's first session aside (see
    /// the module documentation).
    pub max_sessions: usize,
    /// Most sessions of one client. Not configurable: a client needs one session per server
    /// (two during a recovery); pynfs's trunking tests make two.
    pub max_sessions_per_client: usize,
}

/// The default of [`SessionLimits::max_sessions`] (and of `limits.max_sessions`).
pub const DEFAULT_MAX_SESSIONS: usize = 16_384;

/// [`SessionLimits::max_sessions_per_client`].
pub const MAX_SESSIONS_PER_CLIENT: usize = 16;

impl Default for SessionLimits {
    fn default() -> Self {
        Self {
            max_request_size: 4 << 20,
            max_response_size: 4 << 20,
            max_response_size_cached: 64 << 10,
            max_operations: 64,
            max_requests: 64,
            min_fore_size: 256,
            min_back_request_size: 1024,
            min_back_response_size: 256,
            max_back_requests: 16,
            max_sessions: DEFAULT_MAX_SESSIONS,
            max_sessions_per_client: MAX_SESSIONS_PER_CLIENT,
        }
    }
}

/// One session: its channels, its slot table, and the connections bound to it.
#[derive(Clone, Debug)]
pub struct Session {
    id: Sessionid4,
    clientid: Clientid4,
    flags: u32,
    fore: ChannelAttrs4,
    back: ChannelAttrs4,
    cb_program: u32,
    cb_sec: Vec<CallbackSecParms4>,
    slots: ServerSlotTable,
    /// Connections bound to the fore channel, oldest first.
    fore_conns: Vec<ConnId>,
    /// Connections bound to the back channel, oldest first; the last is used for callbacks.
    back_conns: Vec<ConnId>,
    /// The client asked for a back channel on this session (CONN_BACK_CHAN or a binding).
    wants_back: bool,
    /// Callbacks over the back channel are failing.
    back_down: bool,
    /// The minor version of the COMPOUND that created it: callbacks use the same one (the
    /// client's callback service may refuse another, as pynfs's does with
    /// NFS4ERR_MINOR_VERS_MISMATCH).
    minor: u32,
}

impl Session {
    /// The session id.
    pub fn id(&self) -> &Sessionid4 {
        &self.id
    }
    /// The client that owns it.
    pub fn clientid(&self) -> Clientid4 {
        self.clientid
    }
    /// The minor version callbacks on its back channel use.
    pub fn minor(&self) -> u32 {
        self.minor
    }
    /// `csr_flags` granted.
    pub fn flags(&self) -> u32 {
        self.flags
    }
    /// The fore channel attributes granted.
    pub fn fore_attrs(&self) -> &ChannelAttrs4 {
        &self.fore
    }
    /// The back channel attributes granted: the client's limits on callbacks.
    pub fn back_attrs(&self) -> &ChannelAttrs4 {
        &self.back
    }
    /// The callback RPC program number.
    pub fn cb_program(&self) -> u32 {
        self.cb_program
    }
    /// The usable callback security flavors, in the client's order of preference.
    pub fn cb_sec_parms(&self) -> &[CallbackSecParms4] {
        &self.cb_sec
    }
    /// The fore channel slot table and reply cache.
    pub fn slots(&self) -> &ServerSlotTable {
        &self.slots
    }
    /// The fore channel slot table, to lower its target.
    pub fn slots_mut(&mut self) -> &mut ServerSlotTable {
        &mut self.slots
    }
    /// Connections bound to the fore channel.
    pub fn fore_conns(&self) -> &[ConnId] {
        &self.fore_conns
    }
    /// Connections bound to the back channel.
    pub fn back_conns(&self) -> &[ConnId] {
        &self.back_conns
    }
    /// The connection to send callbacks on: the most recently bound back channel connection,
    /// unless callbacks are failing.
    pub fn back_channel_conn(&self) -> Option<ConnId> {
        if self.back_down {
            return None;
        }
        self.back_conns.last().copied()
    }

    fn bind(&mut self, conn: ConnId, fore: bool, back: bool) {
        bind_one(&mut self.fore_conns, conn, fore);
        bind_one(&mut self.back_conns, conn, back);
        if back {
            self.wants_back = true;
            self.back_down = false;
        }
    }

    fn unbind(&mut self, conn: ConnId) {
        self.fore_conns.retain(|&c| c != conn);
        self.back_conns.retain(|&c| c != conn);
    }
}

/// The callback security flavors of `offered` this server can use (AUTH_NONE and AUTH_SYS),
/// in the client's order. Offers, none of them usable: `NFS4ERR_ENCR_ALG_UNSUPP`. No offer at
/// all: RFC 8881 (sections 18.33 and 18.36) does not say what an empty list means; it is taken
/// as AUTH_NONE, as knfsd takes it ("be generous"), and pynfs sends it (CSESS27, CSESS29).
fn usable_cb_sec(offered: &[CallbackSecParms4]) -> Result<Vec<CallbackSecParms4>, SessionError> {
    if offered.is_empty() {
        return Ok(vec![CallbackSecParms4::AuthNone]);
    }
    let usable: Vec<_> = offered
        .iter()
        .filter(|p| {
            matches!(
                p,
                CallbackSecParms4::AuthNone | CallbackSecParms4::AuthSys(_)
            )
        })
        .cloned()
        .collect();
    if usable.is_empty() {
        return Err(SessionError::EncrAlgUnsupp);
    }
    Ok(usable)
}

/// Binds (`on`) or unbinds a connection in one channel's list; a rebinding moves it last.
fn bind_one(conns: &mut Vec<ConnId>, conn: ConnId, on: bool) {
    conns.retain(|&c| c != conn);
    if on {
        conns.push(conn);
    }
}

/// A successful CREATE_SESSION.
#[derive(Clone, PartialEq, Debug)]
pub struct CreateSessionOutcome {
    /// The reply (the cached one on a retry).
    pub res: CreateSessionResOk,
    /// True when `res` is the cached reply of a retry; nothing changed.
    pub replay: bool,
    /// Store changes: the record's confirmation and the removal of the record it replaced.
    /// The caller also releases the state of every removed client.
    pub events: Vec<ClientEvent>,
}

/// The SEQUENCE of one COMPOUND, with what the checks need besides its arguments.
#[derive(Clone, Copy, Debug)]
pub struct SequenceRequest {
    /// The SEQUENCE arguments.
    pub args: SequenceArgs,
    /// [`nfs_proto::session::request_digest`] of the COMPOUND arguments, for the false-retry
    /// check.
    pub digest: u64,
    /// The size of the RPC call in bytes (RPC header included), checked against
    /// `ca_maxrequestsize`.
    pub request_size: u32,
    /// The size of the smallest reply the COMPOUND can get: RPC and COMPOUND headers and the
    /// SEQUENCE result. Checked against `ca_maxresponsesize`, or with `sa_cachethis` against
    /// `ca_maxresponsesize_cached`.
    pub min_reply_size: u32,
    /// The number of operations in the COMPOUND, checked against `ca_maxoperations`.
    pub op_count: u32,
    /// `SEQ4_STATUS_*` bits the caller knows about (revoked state, device changes, ...),
    /// added to the ones computed here.
    pub status_flags: u32,
}

/// How large the reply to an executing COMPOUND may be (RFC 8881 sections 2.10.6.4 and
/// 18.46.3): `ca_maxresponsesize`, or `ca_maxresponsesize_cached` when the client asked for
/// the reply to be cached (`sa_cachethis`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct ReplyLimit {
    /// The most bytes of the reply, RPC header included.
    pub max: u32,
    /// Whether `max` is the reply cache's limit.
    pub cached: bool,
}

impl ReplyLimit {
    /// The status of the operation whose result would not fit: `NFS4ERR_REP_TOO_BIG_TO_CACHE`
    /// against the cache's limit, else `NFS4ERR_REP_TOO_BIG`.
    pub fn error(&self) -> NfsStat4 {
        if self.cached {
            NfsStat4::NFS4ERR_REP_TOO_BIG_TO_CACHE
        } else {
            NfsStat4::NFS4ERR_REP_TOO_BIG
        }
    }
}

/// What to do with a COMPOUND after its SEQUENCE.
#[derive(Clone, PartialEq, Debug)]
pub enum SequenceOutcome {
    /// Run the rest of the COMPOUND for `clientid` within `reply_limit`, then
    /// [`SessionTable::finish`].
    Execute {
        /// The SEQUENCE result.
        res: SequenceResOk,
        /// The session's client.
        clientid: Clientid4,
        /// How large the reply may grow.
        reply_limit: ReplyLimit,
    },
    /// A retry: send this cached reply again, without executing anything.
    Replay(ReplyPieces),
}

/// All sessions of this boot.
#[derive(Clone, Debug)]
pub struct SessionTable {
    limits: SessionLimits,
    key: [u8; 32],
    sessions: HashMap<Sessionid4, Session>,
    conns: HashMap<ConnId, BTreeSet<Sessionid4>>,
}

impl SessionTable {
    /// An empty table; `server_key` is the store's 32-byte key (it authenticates session ids).
    pub fn new(limits: SessionLimits, server_key: [u8; 32]) -> Self {
        Self {
            limits,
            key: server_key,
            sessions: HashMap::new(),
            conns: HashMap::new(),
        }
    }

    /// The server's channel limits.
    pub fn limits(&self) -> &SessionLimits {
        &self.limits
    }

    /// A session by id.
    pub fn get(&self, id: &Sessionid4) -> Result<&Session, SessionError> {
        self.sessions.get(id).ok_or(SessionError::BadSession)
    }

    /// A session by id, to change its slot table's target.
    pub fn get_mut(&mut self, id: &Sessionid4) -> Result<&mut Session, SessionError> {
        self.sessions.get_mut(id).ok_or(SessionError::BadSession)
    }

    /// How many sessions exist.
    pub fn len(&self) -> usize {
        self.sessions.len()
    }

    /// Whether no session exists.
    pub fn is_empty(&self) -> bool {
        self.sessions.is_empty()
    }

    /// Whether `max_sessions` sessions exist: a client's second session must find room (the
    /// caller reaps expired clients first).
    pub fn is_full(&self) -> bool {
        self.sessions.len() >= self.limits.max_sessions
    }

    fn session_id(&self, clientid: Clientid4, n: u32) -> Sessionid4 {
        let mut id = [0u8; 16];
        id[..8].copy_from_slice(&clientid.to_be_bytes());
        id[8..12].copy_from_slice(&n.to_be_bytes());
        let mac = blake3::keyed_hash(&self.key, &id[..12]);
        id[12..].copy_from_slice(&mac.as_bytes()[..4]);
        id
    }

    /// CREATE_SESSION (RFC 8881 section 18.36.4), received on connection `conn`.
    ///
    /// * Unknown client id: `NFS4ERR_STALE_CLIENTID`. An unconfirmed record created by
    ///   another principal: `NFS4ERR_CLID_INUSE`.
    /// * `csa_sequence` against the record's CREATE_SESSION slot: equal replays the cached
    ///   reply, one more is a new request, anything else `NFS4ERR_SEQ_MISORDERED`.
    /// * Undefined flags: `NFS4ERR_INVAL`. `PERSIST` and `CONN_RDMA` are never granted,
    ///   `CONN_BACK_CHAN` always when asked (the connection is then bound to both channels).
    /// * Fore channel: each limit is the smaller of the client's and the server's; header
    ///   padding 0; no RDMA. Sizes below [`SessionLimits::min_fore_size`] are
    ///   `NFS4ERR_TOOSMALL`, zero slots `NFS4ERR_INVAL`.
    /// * Back channel: the client's limits as sent (header padding 0, no RDMA, slots capped
    ///   at [`SessionLimits::max_back_requests`]); too small to carry a recall is
    ///   `NFS4ERR_TOOSMALL`.
    /// * Callback security: the AUTH_NONE and AUTH_SYS entries are kept; none of several is
    ///   `NFS4ERR_ENCR_ALG_UNSUPP`, an empty list means AUTH_NONE (see [`usable_cb_sec`]).
    ///
    /// * Caps (see the module documentation): a client's first session always; another one
    ///   past `max_sessions` in all or `max_sessions_per_client` for the client is
    ///   `NFS4ERR_DELAY`, checked after the arguments.
    ///
    /// Success confirms an unconfirmed record (removing the older confirmed record of the
    /// same owner, whose sessions this table drops), caches the reply, and renews the lease.
    pub fn create_session(
        &mut self,
        clients: &mut ClientTable,
        args: &CreateSessionArgs,
        principal: &Principal,
        conn: ConnId,
        now: Instant,
    ) -> Result<CreateSessionOutcome, SessionError> {
        let clientid = args.csa_clientid;
        let rec = clients.get(clientid).ok_or(ClientError::StaleClientid)?;
        if !rec.is_confirmed() && rec.principal() != principal {
            return Err(ClientError::ClidInUse.into());
        }
        if let CreateSessionDecision::Replay(res) =
            rec.create_session_slot().check(args.csa_sequence)?
        {
            return Ok(CreateSessionOutcome {
                res,
                replay: true,
                events: Vec::new(),
            });
        }
        let known = CREATE_SESSION4_FLAG_PERSIST
            | CREATE_SESSION4_FLAG_CONN_BACK_CHAN
            | CREATE_SESSION4_FLAG_CONN_RDMA;
        if args.csa_flags & !known != 0 {
            return Err(SessionError::Inval);
        }
        let fore = self.negotiate_fore(&args.csa_fore_chan_attrs)?;
        let back = self.negotiate_back(&args.csa_back_chan_attrs)?;
        let cb_sec = usable_cb_sec(&args.csa_sec_parms)?;
        let has = rec.sessions().len();
        if has >= self.limits.max_sessions_per_client || (has > 0 && self.is_full()) {
            return Err(SessionError::NoRoom);
        }
        let flags = args.csa_flags & CREATE_SESSION4_FLAG_CONN_BACK_CHAN;
        let n = clients
            .next_session_number(clientid)
            .ok_or(ClientError::StaleClientid)?;
        let id = self.session_id(clientid, n);
        let res = CreateSessionResOk {
            csr_sessionid: id,
            csr_sequence: args.csa_sequence,
            csr_flags: flags,
            csr_fore_chan_attrs: fore.clone(),
            csr_back_chan_attrs: back.clone(),
        };
        let mut session = Session {
            id,
            clientid,
            flags,
            slots: ServerSlotTable::new(fore.ca_maxrequests),
            fore,
            back,
            cb_program: args.csa_cb_program,
            cb_sec,
            fore_conns: Vec::new(),
            back_conns: Vec::new(),
            wants_back: false,
            back_down: false,
            minor: 1,
        };
        session.bind(conn, true, flags & CREATE_SESSION4_FLAG_CONN_BACK_CHAN != 0);
        self.sessions.insert(id, session);
        self.conns.entry(conn).or_default().insert(id);

        let events = clients.confirm(clientid);
        for e in &events {
            if let ClientEvent::Removed(gone) = e {
                self.drop_sessions(&gone.sessions);
            }
        }
        clients.add_session(clientid, id);
        clients.record_create_session(clientid, &res);
        clients.renew(clientid, now)?;
        Ok(CreateSessionOutcome {
            res,
            replay: false,
            events,
        })
    }

    fn negotiate_fore(&self, a: &ChannelAttrs4) -> Result<ChannelAttrs4, SessionError> {
        let l = &self.limits;
        if a.ca_maxrequestsize < l.min_fore_size || a.ca_maxresponsesize < l.min_fore_size {
            return Err(SessionError::TooSmall);
        }
        if a.ca_maxrequests == 0 || a.ca_maxoperations == 0 {
            return Err(SessionError::Inval);
        }
        let maxresp = a.ca_maxresponsesize.min(l.max_response_size);
        Ok(ChannelAttrs4 {
            ca_headerpadsize: 0,
            ca_maxrequestsize: a.ca_maxrequestsize.min(l.max_request_size),
            ca_maxresponsesize: maxresp,
            ca_maxresponsesize_cached: a
                .ca_maxresponsesize_cached
                .min(l.max_response_size_cached)
                .min(maxresp),
            ca_maxoperations: a.ca_maxoperations.min(l.max_operations),
            ca_maxrequests: a.ca_maxrequests.min(l.max_requests),
            ca_rdma_ird: Vec::new(),
        })
    }

    fn negotiate_back(&self, a: &ChannelAttrs4) -> Result<ChannelAttrs4, SessionError> {
        let l = &self.limits;
        if a.ca_maxrequestsize < l.min_back_request_size
            || a.ca_maxresponsesize < l.min_back_response_size
            || a.ca_maxoperations < 2
        {
            return Err(SessionError::TooSmall);
        }
        if a.ca_maxrequests == 0 {
            return Err(SessionError::Inval);
        }
        Ok(ChannelAttrs4 {
            ca_headerpadsize: 0,
            ca_maxrequests: a.ca_maxrequests.min(l.max_back_requests),
            ca_rdma_ird: Vec::new(),
            ..a.clone()
        })
    }

    /// SEQUENCE (RFC 8881 section 18.46.3), received on connection `conn`: finds the session
    /// (`NFS4ERR_BADSESSION`), checks the COMPOUND against the session's limits
    /// (`NFS4ERR_TOO_MANY_OPS`, `NFS4ERR_REQ_TOO_BIG`, and `NFS4ERR_REP_TOO_BIG` or, with
    /// `sa_cachethis`, `NFS4ERR_REP_TOO_BIG_TO_CACHE` when not even the reply to SEQUENCE
    /// alone fits; section 2.10.6.4), all before the slot is touched (an error of SEQUENCE
    /// leaves the slot as it was), then the slot
    /// ([`ServerSlotTable::begin`]). A new request renews the client's lease, binds the
    /// connection to the fore channel if it was not (RFC 8881 section 2.10.3.1: automatic
    /// with `SP4_NONE`), and gets its status flags: `SEQ4_STATUS_CB_PATH_DOWN` when no
    /// session of the client has a working back channel, `SEQ4_STATUS_CB_PATH_DOWN_SESSION`
    /// when this session asked for one and has none working, plus the caller's
    /// [`SequenceRequest::status_flags`]. A retry gets the cached reply.
    pub fn sequence(
        &mut self,
        clients: &mut ClientTable,
        req: &SequenceRequest,
        conn: ConnId,
        now: Instant,
    ) -> Result<SequenceOutcome, SessionError> {
        let a = &req.args;
        let session = self
            .sessions
            .get_mut(&a.sa_sessionid)
            .ok_or(SessionError::BadSession)?;
        if req.op_count > session.fore.ca_maxoperations {
            return Err(SessionError::TooManyOps);
        }
        if req.request_size > session.fore.ca_maxrequestsize {
            return Err(SessionError::ReqTooBig);
        }
        let reply_limit = if a.sa_cachethis {
            ReplyLimit {
                max: session.fore.ca_maxresponsesize_cached,
                cached: true,
            }
        } else {
            ReplyLimit {
                max: session.fore.ca_maxresponsesize,
                cached: false,
            }
        };
        if req.min_reply_size > reply_limit.max {
            return Err(if reply_limit.cached {
                SessionError::RepTooBigToCache
            } else {
                SessionError::RepTooBig
            });
        }
        let decision = session.slots.begin(
            a.sa_slotid,
            a.sa_sequenceid,
            a.sa_highest_slotid,
            a.sa_cachethis,
            req.digest,
        )?;
        let clientid = session.clientid;
        if !session.fore_conns.contains(&conn) {
            let back = session.back_conns.contains(&conn);
            session.bind(conn, true, back);
            self.conns.entry(conn).or_default().insert(a.sa_sessionid);
        }
        // A session exists only for a known client; renewing cannot fail.
        let _ = clients.renew(clientid, now);
        let res = match decision {
            SlotDecision::Replay(reply) => return Ok(SequenceOutcome::Replay(reply)),
            SlotDecision::Execute => {
                let session = &self.sessions[&a.sa_sessionid];
                SequenceResOk {
                    sr_sessionid: a.sa_sessionid,
                    sr_sequenceid: a.sa_sequenceid,
                    sr_slotid: a.sa_slotid,
                    sr_highest_slotid: session.slots.highest_slotid(),
                    sr_target_highest_slotid: session.slots.target_highest_slotid(),
                    sr_status_flags: self.status_flags(clients, session) | req.status_flags,
                }
            }
        };
        Ok(SequenceOutcome::Execute {
            res,
            clientid,
            reply_limit,
        })
    }

    fn status_flags(&self, clients: &ClientTable, session: &Session) -> u32 {
        let mut flags = 0;
        if session.wants_back && session.back_channel_conn().is_none() {
            flags |= SEQ4_STATUS_CB_PATH_DOWN_SESSION;
        }
        let client_has_path = clients.get(session.clientid).is_some_and(|rec| {
            rec.sessions().iter().any(|id| {
                self.sessions
                    .get(id)
                    .is_some_and(|s| s.back_channel_conn().is_some())
            })
        });
        if !client_has_path {
            flags |= SEQ4_STATUS_CB_PATH_DOWN;
        }
        flags
    }

    /// Ends the request on the slot with its encoded reply, cached when `cache` (the
    /// dispatcher's decision from `sa_cachethis` and `ca_maxresponsesize_cached`). False when
    /// the session is gone (destroyed by this very COMPOUND) or nothing was in progress.
    pub fn finish(
        &mut self,
        sessionid: &Sessionid4,
        slotid: Slotid4,
        reply: ReplyPieces,
        cache: bool,
    ) -> bool {
        self.sessions
            .get_mut(sessionid)
            .is_some_and(|s| s.slots.finish(slotid, reply, cache))
    }

    /// DESTROY_SESSION (RFC 8881 section 18.37.3). `in_same_session` is true when the
    /// COMPOUND's own SEQUENCE is on this session (its slot is then the one request allowed
    /// to be running). Other requests running: `NFS4ERR_DELAY`. The connection is not
    /// required to be bound to the session: with `SP4_NONE` a client may destroy its
    /// session from a fresh connection after a reconnect.
    pub fn destroy_session(
        &mut self,
        clients: &mut ClientTable,
        sessionid: &Sessionid4,
        in_same_session: bool,
    ) -> Result<(), SessionError> {
        let session = self.get(sessionid)?;
        if session.slots.in_use() > usize::from(in_same_session) {
            return Err(SessionError::Delay);
        }
        let clientid = session.clientid;
        self.drop_sessions(std::slice::from_ref(sessionid));
        clients.remove_session(clientid, sessionid);
        Ok(())
    }

    /// BIND_CONN_TO_SESSION (RFC 8881 section 18.34.3), received on connection `conn`:
    /// `CDFC4_FORE` and `CDFC4_BACK` bind to that channel only, the `_OR_BOTH` forms to both;
    /// a connection already bound is rebound to exactly what is asked. RDMA mode is never
    /// granted. Binding a back channel clears a "callbacks failing" mark.
    pub fn bind_conn_to_session(
        &mut self,
        clients: &mut ClientTable,
        args: &BindConnToSessionArgs,
        conn: ConnId,
        now: Instant,
    ) -> Result<BindConnToSessionResOk, SessionError> {
        let session = self
            .sessions
            .get_mut(&args.bctsa_sessid)
            .ok_or(SessionError::BadSession)?;
        let dir = match args.bctsa_dir {
            ChannelDirFromClient4::CDFC4_FORE => ChannelDirFromServer4::CDFS4_FORE,
            ChannelDirFromClient4::CDFC4_BACK => ChannelDirFromServer4::CDFS4_BACK,
            ChannelDirFromClient4::CDFC4_FORE_OR_BOTH
            | ChannelDirFromClient4::CDFC4_BACK_OR_BOTH => ChannelDirFromServer4::CDFS4_BOTH,
            _ => return Err(SessionError::Inval),
        };
        let fore = dir != ChannelDirFromServer4::CDFS4_BACK;
        let back = dir != ChannelDirFromServer4::CDFS4_FORE;
        session.bind(conn, fore, back);
        let clientid = session.clientid;
        self.conns
            .entry(conn)
            .or_default()
            .insert(args.bctsa_sessid);
        let _ = clients.renew(clientid, now);
        Ok(BindConnToSessionResOk {
            bctsr_sessid: args.bctsa_sessid,
            bctsr_dir: dir,
            bctsr_use_conn_in_rdma_mode: false,
        })
    }

    /// BACKCHANNEL_CTL (RFC 8881 section 18.33.3): new callback program and security for the
    /// session; the same flavor rule as CREATE_SESSION ([`usable_cb_sec`]).
    pub fn backchannel_ctl(
        &mut self,
        sessionid: &Sessionid4,
        cb_program: u32,
        sec_parms: &[CallbackSecParms4],
    ) -> Result<(), SessionError> {
        let session = self.get_mut(sessionid)?;
        let cb_sec = usable_cb_sec(sec_parms)?;
        session.cb_program = cb_program;
        session.cb_sec = cb_sec;
        Ok(())
    }

    /// Whether `conn` is bound to a session (by CREATE_SESSION, BIND_CONN_TO_SESSION or a
    /// SEQUENCE on it). The network layer keeps such a connection open however long it is
    /// idle: the client relies on it between lease renewals and for callbacks.
    pub fn is_bound(&self, conn: ConnId) -> bool {
        self.conns.get(&conn).is_some_and(|s| !s.is_empty())
    }

    /// The network layer lost connection `conn`: it is unbound from every session.
    pub fn connection_closed(&mut self, conn: ConnId) {
        for id in self.conns.remove(&conn).unwrap_or_default() {
            if let Some(s) = self.sessions.get_mut(&id) {
                s.unbind(conn);
            }
        }
    }

    /// Marks the session's back channel as failing (a callback timed out) or working again;
    /// SEQUENCE reports a failing one as down.
    pub fn set_back_channel_down(
        &mut self,
        sessionid: &Sessionid4,
        down: bool,
    ) -> Result<(), SessionError> {
        self.get_mut(sessionid)?.back_down = down;
        Ok(())
    }

    /// Records the minor version of the CREATE_SESSION that made `sessionid` (1 until then).
    pub fn set_minor(&mut self, sessionid: &Sessionid4, minor: u32) {
        if let Ok(s) = self.get_mut(sessionid) {
            s.minor = minor;
        }
    }

    /// Where to send a callback to the client: one of its sessions with a working back
    /// channel, and the connection to use.
    pub fn callback_path(
        &self,
        clients: &ClientTable,
        clientid: Clientid4,
    ) -> Option<(&Session, ConnId)> {
        let rec = clients.get(clientid)?;
        rec.sessions().iter().find_map(|id| {
            let s = self.sessions.get(id)?;
            Some((s, s.back_channel_conn()?))
        })
    }

    /// Drops the sessions of removed clients (as [`ClientTable::expire`] or
    /// [`ClientTable::destroy_clientid`] report them).
    pub fn remove_client_sessions(&mut self, removed: &RemovedClient) {
        self.drop_sessions(&removed.sessions);
    }

    /// Expires every client whose lease has run out and drops their sessions. The caller
    /// releases their state and deletes the confirmed ones from the store.
    pub fn expire(&mut self, clients: &mut ClientTable, now: Instant) -> Vec<RemovedClient> {
        let removed = clients.expire(now);
        for r in &removed {
            self.remove_client_sessions(r);
        }
        removed
    }

    fn drop_sessions(&mut self, ids: &[Sessionid4]) {
        for id in ids {
            if let Some(s) = self.sessions.remove(id) {
                for conn in s.fore_conns.iter().chain(&s.back_conns) {
                    if let Some(set) = self.conns.get_mut(conn) {
                        set.remove(id);
                        if set.is_empty() {
                            self.conns.remove(conn);
                        }
                    }
                }
            }
        }
    }
}

#[cfg(test)]
#[path = "session_tests.rs"]
mod tests;

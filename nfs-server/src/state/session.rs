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
//!
//! This file holds the sessions and the table; CREATE_SESSION is in `create`, SEQUENCE in
//! `sequence`, connection binding (BIND_CONN_TO_SESSION, BACKCHANNEL_CTL, closed connections)
//! in `binding`.

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

mod binding;
mod create;
mod sequence;

pub use create::CreateSessionOutcome;
pub use sequence::{ReplyLimit, SequenceOutcome, SequenceRequest};

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

/// Binds (`on`) or unbinds a connection in one channel's list; a rebinding moves it last.
fn bind_one(conns: &mut Vec<ConnId>, conn: ConnId, on: bool) {
    conns.retain(|&c| c != conn);
    if on {
        conns.push(conn);
    }
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

    /// Records the minor version of the CREATE_SESSION that made `sessionid` (1 until then).
    pub fn set_minor(&mut self, sessionid: &Sessionid4, minor: u32) {
        if let Ok(s) = self.get_mut(sessionid) {
            s.minor = minor;
        }
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

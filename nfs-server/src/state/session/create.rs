//! CREATE_SESSION (RFC 8881 section 18.36): the client record's slot, the caps, the
//! negotiation of both channels' attributes and of the callback security flavors.

use super::*;

/// The callback security flavors of `offered` this server can use (AUTH_NONE and AUTH_SYS),
/// in the client's order. Offers, none of them usable: `NFS4ERR_ENCR_ALG_UNSUPP`. No offer at
/// all: RFC 8881 (sections 18.33 and 18.36) does not say what an empty list means; it is taken
/// as AUTH_NONE, as knfsd takes it ("be generous"), and pynfs sends it (CSESS27, CSESS29).
pub(super) fn usable_cb_sec(
    offered: &[CallbackSecParms4],
) -> Result<Vec<CallbackSecParms4>, SessionError> {
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

impl SessionTable {
    pub(super) fn session_id(&self, clientid: Clientid4, n: u32) -> Sessionid4 {
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

    pub(super) fn negotiate_fore(&self, a: &ChannelAttrs4) -> Result<ChannelAttrs4, SessionError> {
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

    pub(super) fn negotiate_back(&self, a: &ChannelAttrs4) -> Result<ChannelAttrs4, SessionError> {
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
}

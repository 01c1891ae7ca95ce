//! SEQUENCE (RFC 8881 section 18.46): the checks over the session's slot table and reply
//! cache, the status flags, and the reply's limit; [`SessionTable::finish`] caches the reply.

use super::*;

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

impl SessionTable {
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

    pub(super) fn status_flags(&self, clients: &ClientTable, session: &Session) -> u32 {
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
}

//! Connections of sessions: BIND_CONN_TO_SESSION (RFC 8881 section 18.34), BACKCHANNEL_CTL
//! (18.33), and what the network layer reports (a connection closed, a back channel down).

use super::create::usable_cb_sec;
use super::*;

impl SessionTable {
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
}

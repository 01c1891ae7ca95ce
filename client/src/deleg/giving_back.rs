//! Giving opens and delegations back: CLOSE of a server open no File uses, DELEGRETURN after a
//! recall (flushing the file's Files first) and when the client lets go of every delegation.

use super::*;

/// CLOSE of `so`'s server open.
fn close_op(so: &ServerOpen) -> NfsArgop4 {
    NfsArgop4::Close(CloseArgs {
        seqid: 0,
        open_stateid: so.stateid(),
    })
}

/// The outcome of a COMPOUND whose last operation is a CLOSE: a server that lost the open
/// already (a restart, an expiry) had nothing to close.
fn closed(r: &crate::session::Reply, status: NfsStat4) -> Result<()> {
    match status {
        NfsStat4::NFS4_OK => Ok(()),
        s if ops::failure(&r.results, s).is_state_lost() => Ok(()),
        s => Err(ops::failure(&r.results, s)),
    }
}

/// DELEGRETURN of `stateid`, then the LAYOUTCOMMIT the return carries, and CLOSE of `so`'s
/// open when the return closes it.
fn return_ops(so: &ServerOpen, stateid: Stateid4, ret: &Return) -> Vec<NfsArgop4> {
    let mut ops = vec![
        putfh(&so.fh),
        NfsArgop4::DelegReturn(DelegReturnArgs {
            deleg_stateid: stateid,
        }),
    ];
    ops.extend(ret.commit.clone());
    if ret.closing {
        ops.push(close_op(so));
    }
    ops
}

/// How a delegation goes back ([`Inner::prepare_return`]).
struct Return {
    /// The COMPOUND CLOSEs the open too (nothing else uses it).
    closing: bool,
    /// The LAYOUTCOMMIT of the file's writes not reported yet, between the DELEGRETURN and
    /// the CLOSE. (After the DELEGRETURN: a failed LAYOUTCOMMIT then leaves the delegation
    /// returned, and the CLOSE, not reached, is sent on its own.)
    commit: Option<NfsArgop4>,
}

/// What [`Inner::give_back_then`] did with the operations it ran after the return.
#[derive(Debug)]
pub(crate) struct Returned {
    /// Their outcome; `None` when the COMPOUND stopped before them (the return failed, or
    /// the request did), so they are still to be sent.
    pub then: Option<Result<()>>,
}

impl Inner {
    /// Returns the layout of `so`'s file and CLOSEs its server open, after releasing the
    /// locks its lock-owners still hold and freeing their lock stateids (CLOSE would fail
    /// with NFS4ERR_LOCKS_HELD, section 18.2.4). A server that lost the open already (a
    /// restart, an expiry) has nothing to close.
    pub(crate) async fn send_close(&self, so: &ServerOpen) -> Result<()> {
        self.before_close(so).await;
        self.close_rpc(so).await
    }

    /// The CLOSE itself, once [`Self::before_close`] is done.
    async fn close_rpc(&self, so: &ServerOpen) -> Result<()> {
        let r = self.mds.compound(vec![putfh(&so.fh), close_op(so)]).await?;
        closed(&r, r.status)
    }

    /// What goes before a CLOSE of `so`: its lock-owners' locks released, its layout taken
    /// out of use (LAYOUTCOMMIT, and LAYOUTRETURN unless CLOSE returns it).
    async fn before_close(&self, so: &ServerOpen) {
        self.release_all_locks(so).await;
        if let Some(p) = &self.pnfs {
            p.close(&so.fh).await;
        }
    }

    /// Whether `so` is to be CLOSEd now (no File uses it, no delegation keeps it); if so it
    /// is marked closed and leaves the table of opens.
    fn take_unused(&self, so: &Arc<ServerOpen>) -> bool {
        let mut files = lock(&self.files);
        let mut st = so.st();
        let unused = st.users == 0 && st.deleg.is_none() && !st.closed;
        if unused {
            st.closed = true;
            drop(st);
            if files.get(&so.fh).is_some_and(|x| Arc::ptr_eq(x, so)) {
                files.remove(&so.fh);
            }
        }
        unused
    }

    /// CLOSEs `so` when no File uses it and no delegation keeps it.
    pub(super) async fn close_if_unused(&self, so: &Arc<ServerOpen>) {
        if self.take_unused(so) {
            if let Err(e) = self.send_close(so).await {
                tracing::warn!(path = %so.path, "CLOSE after the delegation went: {e}");
            }
        }
    }

    /// Marks the delegation of `so` as being returned; its stateid when this caller is the
    /// one to return it (not already on its way back).
    pub(crate) fn start_return(&self, so: &ServerOpen) -> Option<Stateid4> {
        let mut st = so.st();
        let d = st.deleg.as_mut()?;
        if d.returning {
            return None;
        }
        d.returning = true;
        Some(d.stateid)
    }

    /// Gives back the delegation `stateid` of `so` (recalled, or given up by this client):
    /// flushes every File of the file as close does, stops using the delegation stateid,
    /// DELEGRETURN, then CLOSE when no File uses the open (section 10.4.4).
    pub(crate) async fn give_back(self: &Arc<Self>, so: Arc<ServerOpen>, stateid: Stateid4) {
        let Some(ret) = self.prepare_return(&so, stateid, true).await else {
            return;
        };
        let ops = return_ops(&so, stateid, &ret);
        let sent = ops.len();
        let reply = self.mds.compound(ops).await;
        self.finish_return(&so, stateid, ret, sent, reply).await;
    }

    /// Gives back the delegation `stateid` of `so` and runs `then` (operations that set
    /// their own current filehandle, and remove the file's name) in the same COMPOUND: one
    /// round trip for the return, the CLOSE and the removal that made the client give it
    /// back. `None` when nothing was sent (the delegation was revoked meanwhile); else the
    /// reply, whose results past the return's ([`Returned::then`]) are `then`'s.
    ///
    /// The COMPOUND carries no LAYOUTCOMMIT of the file's unreported writes: its size is
    /// about to go with it, and the MDS's durable store change would be one more commit
    /// on the way. The data is stable on the data servers already (flushed and committed
    /// first), so should the file live on (another name, a REMOVE that fails) the MDS
    /// learns its size from them, as for any layout returned without a LAYOUTCOMMIT.
    pub(crate) async fn give_back_then(
        self: &Arc<Self>,
        so: Arc<ServerOpen>,
        stateid: Stateid4,
        then: Vec<NfsArgop4>,
    ) -> Option<Returned> {
        let ret = self.prepare_return(&so, stateid, false).await?;
        let mut ops = return_ops(&so, stateid, &ret);
        let sent = ops.len();
        ops.extend(then);
        let reply = self.mds.compound(ops).await;
        let then = match &reply {
            Ok(r) if r.status == NfsStat4::NFS4_OK => Some(Ok(())),
            Ok(r) if r.results.len() > sent => Some(Err(ops::failure(&r.results, r.status))),
            _ => None,
        };
        self.finish_return(&so, stateid, ret, sent, reply).await;
        Some(Returned { then })
    }

    /// What goes before a delegation's return: every File of the file flushed as close
    /// does, the delegation stateid out of use, and the open closed with it when nothing
    /// else uses it (then its layout is taken out of use as [`Self::before_close`] does, its
    /// LAYOUTCOMMIT left to the return's COMPOUND, or left out when `report` is false).
    /// `None` when the delegation was revoked meanwhile.
    async fn prepare_return(
        self: &Arc<Self>,
        so: &Arc<ServerOpen>,
        stateid: Stateid4,
        report: bool,
    ) -> Option<Return> {
        let client = Client {
            inner: self.clone(),
        };
        for f in self
            .open_files()
            .into_iter()
            .filter(|f| Arc::ptr_eq(&f.server, so))
        {
            if let Err(e) = File::new(client.clone(), f).fsync().await {
                tracing::warn!(path = %so.path, "flush before returning the delegation: {e}");
            }
        }
        {
            let mut st = so.st();
            if st.deleg.as_ref().map(|d| d.stateid.other) != Some(stateid.other) {
                return None; // revoked meanwhile
            }
            // From here, I/O of the Files uses their open or lock stateid.
            st.deleg = None;
            st.stash = None;
        }
        self.unbind_fh(&so.fh);
        // An open nothing else uses is CLOSEd in the same COMPOUND (one round trip).
        let closing = self.take_unused(so);
        let mut commit = None;
        if closing {
            self.release_all_locks(so).await;
            if let Some(p) = &self.pnfs {
                commit = p.close_folding(&so.fh).await.filter(|_| report);
            }
        }
        Some(Return { closing, commit })
    }

    /// After the COMPOUND that began with the `sent` operations of [`return_ops`] (and maybe
    /// went on): counts the return, frees a delegation revoked before it came back, and
    /// CLOSEs on its own an open the COMPOUND did not reach.
    async fn finish_return(
        &self,
        so: &Arc<ServerOpen>,
        stateid: Stateid4,
        ret: Return,
        sent: usize,
        reply: Result<crate::session::Reply>,
    ) {
        let Return { closing, commit } = ret;
        let (returned, close_result) = match reply {
            Ok(r) if r.status == NfsStat4::NFS4_OK || r.results.len() > sent => {
                (Ok(()), closing.then_some(Ok(())))
            }
            Ok(r) if closing && r.results.len() == sent => (Ok(()), Some(closed(&r, r.status))),
            // The LAYOUTCOMMIT (results: PUTFH, DELEGRETURN, LAYOUTCOMMIT) failed after the
            // DELEGRETURN: returned, the CLOSE not reached.
            Ok(r) if commit.is_some() && r.results.len() == 3 => {
                let e = ops::failure(&r.results, r.status);
                tracing::debug!(path = %so.path, "LAYOUTCOMMIT with the delegation's return: {e}");
                (Ok(()), None)
            }
            Ok(r) => (Err(ops::failure(&r.results, r.status)), None),
            Err(e) => (Err(e), None),
        };
        match returned {
            Ok(()) => {
                Counters::add(&self.counters.delegations_returned, 1);
                tracing::debug!(path = %so.path, "delegation returned");
            }
            Err(e) if deleg_gone(e.nfs_status()) => {
                // Revoked before it came back (section 10.4.6): free it.
                Counters::add(&self.counters.delegations_revoked, 1);
                tracing::warn!(path = %so.path, "delegation revoked before it was returned: {e}");
                self.free_stateid(stateid).await;
            }
            Err(e) => tracing::warn!(path = %so.path, "DELEGRETURN: {e}"),
        }
        match close_result {
            Some(Ok(())) => {}
            Some(Err(e)) => tracing::warn!(path = %so.path, "CLOSE after the delegation went: {e}"),
            // The DELEGRETURN failed, so the CLOSE was not reached: on its own.
            None if closing => {
                if let Err(e) = self.close_rpc(so).await {
                    tracing::warn!(path = %so.path, "CLOSE after the delegation went: {e}");
                }
            }
            None => self.close_if_unused(so).await,
        }
    }

    pub(super) async fn delegreturn(&self, fh: &NfsFh4, stateid: Stateid4) -> Result<()> {
        self.mds
            .compound(vec![
                putfh(fh),
                NfsArgop4::DelegReturn(DelegReturnArgs {
                    deleg_stateid: stateid,
                }),
            ])
            .await?
            .ok()
            .map(drop)
    }

    pub(super) async fn free_stateid(&self, stateid: Stateid4) {
        let r = self
            .mds
            .compound(vec![NfsArgop4::FreeStateid(FreeStateidArgs {
                fsa_stateid: stateid,
            })])
            .await;
        if let Err(e) = r.and_then(|r| r.ok()) {
            tracing::debug!("FREE_STATEID: {e}");
        }
    }

    /// Gives back the delegation of `fh`, if one is held, and waits until it is back: this
    /// client is about to change the file's name or attributes, which would conflict with
    /// its own delegation on servers that recall for it.
    pub(crate) async fn yield_delegation(self: &Arc<Self>, fh: &NfsFh4) {
        let Some(so) = self.server_open(fh) else {
            return;
        };
        if let Some(sid) = self.start_return(&so) {
            self.give_back(so, sid).await;
        }
    }

    /// Gives back every delegation held (before the client id ends).
    pub(crate) async fn return_all(self: &Arc<Self>) {
        let all: Vec<Arc<ServerOpen>> = lock(&self.files).values().cloned().collect();
        let backs = all.into_iter().filter_map(|so| {
            let sid = self.start_return(&so)?;
            Some(self.give_back(so, sid))
        });
        futures::future::join_all(backs).await;
    }
}

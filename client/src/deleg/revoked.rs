//! Delegations the server revoked (RFC 8881 sections 10.4.5 and 10.4.6): found with
//! TEST_STATEID, freed with FREE_STATEID, forgotten; writes buffered under them are dropped.

use super::*;

impl Inner {
    /// The server no longer knows the delegation `stateid` of `so`: revoked (section
    /// 10.4.6) or lost. Forgets it, frees its stateid, and CLOSEs the open if no File uses
    /// it. A write delegation's unsent writes are lost (see [`ServerOpen::write_epoch`]).
    pub(crate) fn deleg_lost(self: &Arc<Self>, so: &Arc<ServerOpen>, stateid: Stateid4) {
        {
            let mut st = so.st();
            if st.deleg.as_ref().map(|d| d.stateid.other) != Some(stateid.other) {
                return;
            }
            if st
                .deleg
                .as_ref()
                .is_some_and(|d| d.kind == DelegKind::Write)
            {
                st.write_revocations += 1;
            }
            st.deleg = None;
            st.stash = None;
        }
        self.unbind_fh(&so.fh);
        Counters::add(&self.counters.delegations_revoked, 1);
        tracing::warn!(path = %so.path, "the server revoked this client's delegation");
        let me = self.clone();
        let so = so.clone();
        tokio::spawn(async move {
            me.free_stateid(stateid).await;
            me.close_if_unused(&so).await;
        });
    }

    /// SEQUENCE said some recallable state was revoked (section 18.46.3): TEST_STATEID the
    /// delegations and layouts held; free and forget the ones the server no longer knows.
    /// One check at a time, at most one a second (the flag stays up until FREE_STATEID).
    pub(crate) async fn check_revoked(self: Arc<Self>) {
        if self.checking_revoked.swap(true, Ordering::AcqRel) {
            return;
        }
        let held: Vec<(Arc<ServerOpen>, Stateid4)> = lock(&self.files)
            .values()
            .filter_map(|so| {
                let sid = so.st().deleg.as_ref()?.stateid;
                Some((so.clone(), sid))
            })
            .collect();
        let layouts = self
            .pnfs
            .as_ref()
            .map(|p| p.layout_stateids())
            .unwrap_or_default();
        let mut stateids: Vec<Stateid4> = held.iter().map(|h| h.1).collect();
        stateids.extend(layouts.iter().map(|l| l.1));
        if !stateids.is_empty() {
            match self.test_stateids(stateids).await {
                Ok(codes) => {
                    for ((so, sid), code) in held.iter().zip(&codes) {
                        if *code != NfsStat4::NFS4_OK {
                            tracing::info!(path = %so.path, %code, "TEST_STATEID of the delegation");
                            self.deleg_lost(so, *sid);
                        }
                    }
                    for ((fh, sid), code) in layouts.iter().zip(codes.iter().skip(held.len())) {
                        if *code != NfsStat4::NFS4_OK {
                            tracing::info!(%code, "TEST_STATEID of a layout");
                            if let Some(p) = &self.pnfs {
                                p.forget_layout(fh);
                            }
                            self.free_stateid(*sid).await;
                        }
                    }
                }
                Err(e) => tracing::debug!("TEST_STATEID: {e}"),
            }
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
        self.checking_revoked.store(false, Ordering::Release);
    }

    async fn test_stateids(&self, stateids: Vec<Stateid4>) -> Result<Vec<NfsStat4>> {
        let n = stateids.len();
        let r = self
            .mds
            .compound(vec![NfsArgop4::TestStateid(TestStateidArgs {
                ts_stateids: stateids,
            })])
            .await?
            .ok()?;
        match r.last() {
            Some(NfsResop4::TestStateid(TestStateidRes::Ok(ok)))
                if ok.tsr_status_codes.len() == n =>
            {
                Ok(ok.tsr_status_codes.clone())
            }
            _ => Err(crate::error::Error::Protocol {
                addr: self.mds.addr(),
                what: "TEST_STATEID without one status per stateid".into(),
            }),
        }
    }
}

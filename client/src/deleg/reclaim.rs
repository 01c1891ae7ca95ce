//! Reclaiming an open, and the delegation with it, after the server restarted (RFC 8881
//! section 8.4.2.1).

use super::*;

impl Inner {
    /// Re-establishes `so` when the server lost it (section 8.4.2: a restart, a lost lease):
    /// TEST_STATEID; if bad, OPEN with CLAIM_PREVIOUS naming the delegation held (in the
    /// grace period, section 10.2.1), else CLAIM_FH. A delegation not reclaimed is
    /// forgotten; one lost outside the grace period counts as revoked (its unsent writes
    /// are not sent).
    pub(crate) async fn reclaim_open(&self, so: &ServerOpen, ep: &Arc<Endpoint>) -> Result<()> {
        let _g = so.reclaiming.lock().await;
        let old = so.stateid();
        let r = ep
            .compound(vec![NfsArgop4::TestStateid(TestStateidArgs {
                ts_stateids: vec![old],
            })])
            .await?;
        if let Some(NfsResop4::TestStateid(TestStateidRes::Ok(ok))) = r.results.last() {
            if ok.tsr_status_codes.first() == Some(&NfsStat4::NFS4_OK) {
                return Ok(());
            }
        }
        let (access, kind) = {
            let st = so.st();
            (st.access, st.deleg.as_ref().map(|d| d.kind))
        };
        let open = |claim: OpenClaim4| {
            vec![
                putfh(&so.fh),
                NfsArgop4::Open(OpenArgs {
                    seqid: 0,
                    share_access: access | self.want(),
                    share_deny: OPEN4_SHARE_DENY_NONE,
                    owner: ops::state_owner(&self.owner),
                    openhow: Openflag4::NoCreate,
                    claim,
                }),
            ]
        };
        let pick = |results: &[NfsResop4]| {
            results.iter().find_map(|x| match x {
                NfsResop4::Open(OpenRes::Ok(ok)) => Some(ok.clone()),
                _ => None,
            })
        };
        let prev = ep
            .compound(open(OpenClaim4::Previous(kind.map_or(
                OpenDelegationType4::OPEN_DELEGATE_NONE,
                DelegKind::open_type,
            ))))
            .await?;
        let (ok, reclaimed) = match pick(&prev.results) {
            Some(ok) => (ok, true),
            None => {
                let fresh = ep.compound(open(OpenClaim4::Fh)).await?;
                let ok = pick(&fresh.results)
                    .ok_or_else(|| ops::failure(&fresh.results, fresh.status))?;
                (ok, false)
            }
        };
        let mut st = so.st();
        st.stateid = ok.stateid;
        st.reopens += 1;
        st.reclaimed = reclaimed;
        let old_deleg = st.deleg.take();
        let forget_name = old_deleg.is_some() && granted(&ok.delegation).is_none();
        match (granted(&ok.delegation), old_deleg) {
            (Some((sid, kind, _)), Some(d)) => {
                st.deleg = Some(Delegation {
                    stateid: sid,
                    kind,
                    ..d
                });
            }
            (Some((sid, kind, _)), None) => {
                st.deleg = Some(Delegation {
                    stateid: sid,
                    kind,
                    returning: false,
                    change: st.meta.change,
                    modifications: 0,
                });
                Counters::add(&self.counters.delegations, 1);
            }
            (None, Some(d)) => {
                tracing::info!(path = %so.path, reclaimed, "delegation not re-established");
                if !reclaimed {
                    Counters::add(&self.counters.delegations_revoked, 1);
                    if d.kind == DelegKind::Write {
                        st.write_revocations += 1;
                    }
                }
                st.stash = None;
            }
            (None, None) => {}
        }
        drop(st);
        if forget_name {
            self.unbind_fh(&so.fh);
        }
        tracing::info!(path = %so.path, reclaimed, "open re-established");
        Ok(())
    }
}

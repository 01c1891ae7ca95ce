//! REVOKE and SET_ACCESS: what the MDS tells this data server to refuse, applied before the
//! reply so that the MDS answers its client only once the refusal holds.

use super::*;

impl ControlService {
    pub(super) fn revoke(&self, a: RevokeArgs) -> CtlStatusRes {
        let why = |r: CtlRevokeReason| match r {
            CtlRevokeReason::CTL_REVOKED_ADMIN => Some(Revoked::Admin),
            CtlRevokeReason::CTL_REVOKED_EXPIRED => Some(Revoked::Expired),
            CtlRevokeReason::CTL_REVOKED_DELEG => Some(Revoked::Delegation),
            CtlRevokeReason::CTL_REVOKED_CLOSED => Some(Revoked::Closed),
            _ => None,
        };
        // Check everything before changing anything: a call is applied whole or not at all.
        let Some(revoke) = a
            .revoke
            .iter()
            .map(|r| why(r.why).map(|w| (r.other, w)))
            .collect::<Option<Vec<_>>>()
        else {
            return status(CtlStat::CTL_INVAL);
        };
        if a.closed.iter().any(|r| r.first > r.last) {
            return status(CtlStat::CTL_INVAL);
        }
        let _registered = match self.registered_as(a.mds_epoch) {
            Ok(g) => g,
            Err(s) => return status(s),
        };
        for other in &a.forget {
            self.target.forget(other);
        }
        for (other, why) in revoke {
            self.target.revoke(other, why);
        }
        if !a.closed.is_empty() {
            let ranges: Vec<(u32, u32)> = a.closed.iter().map(|r| (r.first, r.last)).collect();
            self.target.close_counters(&ranges);
        }
        status(CtlStat::CTL_OK)
    }

    pub(super) fn set_access(&self, a: SetAccessArgs) -> CtlStatusRes {
        if a.changes.iter().any(|c| c.access == 0 || c.access > 3) {
            return status(CtlStat::CTL_INVAL);
        }
        let _registered = match self.registered_as(a.mds_epoch) {
            Ok(g) => g,
            Err(s) => return status(s),
        };
        for c in &a.changes {
            self.target.set_access(c.other, c.access as u8);
        }
        status(CtlStat::CTL_OK)
    }
}

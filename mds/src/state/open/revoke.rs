//! Revoked state (RFC 8881 sections 8.3 and 18.46.3): a client whose lease expired, or whose
//! state the administrator revoked, keeps its stateids, answering EXPIRED or ADMIN_REVOKED
//! until it frees them, and SEQUENCE tells it so in its status flags.

use super::*;

/// Why state was revoked; decides the error its stateids get until freed.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum RevokeReason {
    /// The client's lease expired (`NFS4ERR_EXPIRED`).
    Expired,
    /// The administrator revoked it (`NFS4ERR_ADMIN_REVOKED`).
    Admin,
}

impl RevokeReason {
    pub(super) fn error(self) -> StateidError {
        match self {
            Self::Expired => StateidError::Expired,
            Self::Admin => StateidError::AdminRevoked,
        }
    }
}

/// Which kinds of revoked state a client has not yet freed, for SEQUENCE's status flags
/// (`SEQ4_STATUS_EXPIRED_SOME_STATE_REVOKED`, `SEQ4_STATUS_ADMIN_STATE_REVOKED`).
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct RevokedState {
    /// Some state expired with the lease.
    pub expired: bool,
    /// Some state was revoked by the administrator.
    pub admin: bool,
    /// A delegation was revoked (its recall was not answered in time).
    pub recallable: bool,
}

impl RevokedState {
    /// SEQUENCE's `SEQ4_STATUS_*_REVOKED` bits for this state (RFC 8881 section 18.46.3).
    pub fn status_flags(self) -> u32 {
        use nfs_proto::nfs4::{
            SEQ4_STATUS_ADMIN_STATE_REVOKED, SEQ4_STATUS_EXPIRED_SOME_STATE_REVOKED,
            SEQ4_STATUS_RECALLABLE_STATE_REVOKED,
        };
        let mut flags = 0;
        if self.expired {
            flags |= SEQ4_STATUS_EXPIRED_SOME_STATE_REVOKED;
        }
        if self.admin {
            flags |= SEQ4_STATUS_ADMIN_STATE_REVOKED;
        }
        if self.recallable {
            flags |= SEQ4_STATUS_RECALLABLE_STATE_REVOKED;
        }
        flags
    }
}

impl StateTable {
    /// Revokes every live state of a client while keeping the client (RFC 8881 section 8.3's
    /// courtesy-less expiry, or administrative revocation): share reservations and locks go
    /// at once so other clients can proceed, and the stateids answer EXPIRED or
    /// ADMIN_REVOKED until the client frees them with FREE_STATEID.
    pub fn revoke_client(&mut self, clientid: u64, reason: RevokeReason) {
        let others: Vec<Other> = self
            .by_client
            .get(&clientid)
            .map(|s| s.iter().copied().collect())
            .unwrap_or_default();
        for other in others {
            if self.states.get(&other).is_some_and(|e| e.revoked.is_none()) {
                self.detach(&other);
                if let Some(e) = self.states.get_mut(&other) {
                    e.revoked = Some(reason);
                    self.revoked_entries += 1;
                }
            }
        }
        for (other, _) in self.delegs.client_delegations(clientid) {
            self.delegs.revoke(&other);
        }
    }

    /// Which revoked state the client still has to free, for SEQUENCE's status flags.
    pub fn revoked_state(&self, clientid: u64) -> RevokedState {
        let mut r = RevokedState {
            recallable: self.delegs.has_revoked(clientid),
            ..RevokedState::default()
        };
        if self.revoked_entries == 0 {
            return r;
        }
        for other in self.by_client.get(&clientid).into_iter().flatten() {
            match self.states.get(other).and_then(|e| e.revoked) {
                Some(RevokeReason::Expired) => r.expired = true,
                Some(RevokeReason::Admin) => r.admin = true,
                None => {}
            }
        }
        r
    }
}

//! The MDS as a [`Role`] of the shared NFSv4.1 server ([`nfs_server`]): its operations, and
//! what a client's life means for its state. Confirmed client records go to the metadata
//! store before the reply that confirms them (so that after a restart the grace period knows
//! who may reclaim); a removed client loses its opens and locks, the files that were
//! unlinked while only it held them open, and its store record.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use nfs_proto::nfs4::{Clientid4, NfsStat4};
use nfs_proto::rpc::{AuthStat, Credential, RejectedReply};
use nfs_proto::transport::Reply;
use nfs_server::refusals::Refusal;
use nfs_server::state::client::{PersistedClient, RemovedClient};
use nfs_server::{Core, Role, SessionCtx};
use tracing::{info, warn};

use crate::compound::Ctx;
use crate::ops;
use crate::server::Mds;
use crate::store::ClientRecord;

impl Role for Mds {
    type Ctx = Ctx;

    fn core(&self) -> &Core {
        self.core()
    }

    /// A client that no export admits may not use the server at all: AUTH_TOOWEAK.
    fn begin(self: &Arc<Self>, session: SessionCtx, cred: &Credential) -> Result<Ctx, Reply> {
        let peer = session.conn.peer().ip();
        if !self.exports().any_allowed(peer) {
            self.core().refusals.note(
                peer,
                Refusal::NoExport,
                format_args!("COMPOUND answered AUTH_TOOWEAK"),
            );
            return Err(Reply::Denied(RejectedReply::AuthError(
                AuthStat::AUTH_TOOWEAK,
            )));
        }
        Ok(Ctx::new(self.clone(), session, cred))
    }

    fn client_has_state(&self, clientid: Clientid4) -> bool {
        self.tables().opens_recovered().client_has_state(clientid)
    }

    fn status_flags(&self, clientid: Clientid4) -> u32 {
        self.tables()
            .opens_recovered()
            .revoked_state(clientid)
            .status_flags()
    }

    async fn persist_client(&self, p: PersistedClient) -> Result<(), NfsStat4> {
        let rec = ClientRecord {
            clientid: p.clientid,
            owner: Bytes::from(p.ownerid),
            verifier: p.verifier,
            principal: format!("{:?}", p.principal),
            boot_epoch: self.store().boot_epoch(),
        };
        self.store().put_client(rec).await?;
        Ok(())
    }

    /// Drops the client's layouts and opens and locks (the data servers refusing its
    /// stateids from then on: [`crate::pnfs::fencing::client_released`]), and its delegations
    /// unless the client restarted (they then pass to its new instance for reclaim); deletes
    /// the files whose last name went while only this client had them open, and removes its
    /// store record.
    async fn release_client(self: &Arc<Self>, r: &RemovedClient) {
        crate::pnfs::fencing::client_released(self.store(), self.tables(), self.pnfs(), r.clientid)
            .await;
        // Its background copies stop at their next window and are forgotten.
        self.copies().client_gone(r.clientid);
        {
            let mut opens = self.tables().opens_recovered();
            if let Some(new) = r.successor {
                // The same client restarted: its delegations wait a lease for
                // CLAIM_DELEGATE_PREV (RFC 8881 section 10.2.1; their old stateids were fenced
                // just above).
                let lease = Duration::from_secs(u64::from(self.cfg().lease_time.max(1)));
                let passed = opens
                    .delegs
                    .carry_over(r.clientid, new, self.core().now() + lease);
                if passed > 0 {
                    info!(
                        clientid = r.clientid,
                        successor = new,
                        delegations = passed,
                        "client restarted: its delegations await reclaim"
                    );
                }
            }
            opens.release_client(r.clientid);
        }
        ops::dir::reap_released(self);
        if r.was_confirmed {
            if let Err(e) = self.store().remove_client(r.clientid).await {
                warn!(clientid = r.clientid, "removing client record: {e}");
            }
        }
    }

    /// Forgets the records of the previous boot's clients that did not reclaim (a client
    /// that missed a grace period may not reclaim after the next restart, RFC 8881 section
    /// 8.4.3), then deletes the files that were open and unlinked before the restart
    /// ([`ops::dir::sweep_orphans`]).
    async fn grace_over(self: &Arc<Self>, unreclaimed: Vec<Bytes>) {
        if !unreclaimed.is_empty() {
            if let Err(e) = self.store().remove_unreclaimed(unreclaimed).await {
                warn!("forgetting clients that did not reclaim: {e}");
            }
        }
        ops::dir::sweep_orphans(self.clone()).await;
    }
}

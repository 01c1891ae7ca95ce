//! DELEGPURGE (RFC 8881 section 18.5): drops the delegations a client may no longer reclaim.
//! This server keeps no claims for CLAIM_DELEGATE_PREV, so there is never anything to purge.

use crate::compound::Ctx;
use nfs_proto::nfs4::*;
use tracing::info;

/// DELEGPURGE (RFC 8881 section 18.5): the client has reclaimed every delegation of its
/// previous instance it is going to; the rest are forgotten now rather than at their
/// deadline, so that other clients stop waiting for them. NFSv4.1 ignores `clientid` and
/// takes the session's.
pub fn delegpurge(ctx: &Ctx) -> DelegPurgeRes {
    let status = match ctx.client() {
        Ok(clientid) => {
            let purged = ctx.mds.tables().opens().delegs.purge_prev(clientid);
            if purged > 0 {
                info!(
                    clientid,
                    purged, "DELEGPURGE: unreclaimed delegations forgotten"
                );
            }
            NfsStat4::NFS4_OK
        }
        Err(e) => e,
    };
    DelegPurgeRes { status }
}

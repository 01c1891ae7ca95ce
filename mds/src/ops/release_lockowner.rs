//! RELEASE_LOCKOWNER (RFC 8881 section 18.24; NFSv4.0 only, answered NFS4ERR_NOTSUPP in a
//! session as the RFC requires).

use crate::compound::Ctx;
use nfs_proto::nfs4::*;

/// RELEASE_LOCKOWNER: an NFSv4.0 operation (RFC 7530 section 16.37); NFSv4.1 servers MUST
/// NOT implement it (RFC 8881 section 17), so minor versions 1 and 2 get NFS4ERR_NOTSUPP
/// from the state table.
pub fn release_lockowner(ctx: &mut Ctx, a: &ReleaseLockOwnerArgs) -> ReleaseLockOwnerRes {
    let status = (|| {
        let clientid = ctx.client()?;
        ctx.mds
            .tables()
            .opens()
            .release_lock_owner(ctx.session.minor, clientid, &a.lock_owner)?;
        Ok::<_, NfsStat4>(())
    })()
    .err()
    .unwrap_or(NfsStat4::NFS4_OK);
    ReleaseLockOwnerRes { status }
}

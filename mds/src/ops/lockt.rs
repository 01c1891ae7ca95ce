//! LOCKT (RFC 8881 section 18.11): tests for a conflicting byte-range lock without taking one.

use super::lock::{lock_file, LockFailure};
use crate::compound::Ctx;
use nfs_proto::nfs4::*;

/// LOCKT (RFC 8881 section 18.11). It creates no state, but knfsd answers NFS4ERR_GRACE
/// during the grace period too: a test against a lock table that reclaims are still
/// filling would be misleading.
pub fn lockt(ctx: &mut Ctx, a: &LockTArgs) -> LockTRes {
    let r = (|| {
        let clientid = ctx.client()?;
        let fileid = lock_file(ctx)?;
        let now = ctx.mds.core().now();
        ctx.mds
            .core()
            .state()
            .grace
            .check_new_state(now)
            .map_err(NfsStat4::from)?;
        ctx.mds.tables().opens().lockt(clientid, fileid, a)?;
        Ok::<_, LockFailure>(())
    })();
    match r {
        Ok(()) => LockTRes::Ok,
        Err(LockFailure::Denied(d)) => LockTRes::Denied(d),
        Err(LockFailure::Status(s)) => LockTRes::Err(s),
    }
}

//! LOCKU (RFC 8881 section 18.12): releases a byte range of a lock-owner's locks.

use super::lock::lock_file;
use super::open::current;
use crate::compound::Ctx;
use nfs_proto::nfs4::*;

/// LOCKU (RFC 8881 section 18.12).
pub fn locku(ctx: &mut Ctx, a: &LockUArgs) -> LockURes {
    let r = (|| {
        let clientid = ctx.client()?;
        let fileid = lock_file(ctx)?;
        let mut args = *a;
        args.lock_stateid = current(ctx, &a.lock_stateid)?;
        let out = ctx.mds.tables().opens().locku(clientid, fileid, &args)?;
        Ok::<_, NfsStat4>(out)
    })();
    match r {
        Ok(stateid) => {
            ctx.cstateid = Some(stateid);
            LockURes::Ok(stateid)
        }
        Err(s) => LockURes::Err(s),
    }
}

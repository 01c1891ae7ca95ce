//! REMOVEXATTR (RFC 8276 section 8.4.4).

use super::xattr::check_change;
use crate::compound::Ctx;
use crate::store::system_time_now;
use nfs_proto::nfs4::*;

async fn removexattr_inner(ctx: &Ctx, a: &RemoveXattrArgs) -> Result<RemoveXattrResOk, NfsStat4> {
    let inode = check_change(ctx)?;
    let cinfo = ctx
        .mds
        .store
        .remove_xattr(inode.fileid, a.rxa_name.as_bytes(), system_time_now())
        .await?;
    Ok(RemoveXattrResOk { rxr_info: cinfo })
}

/// REMOVEXATTR (RFC 8276 section 8.4.4): NFS4ERR_NOXATTR when there is no such attribute.
pub async fn removexattr(ctx: &mut Ctx, a: &RemoveXattrArgs) -> RemoveXattrRes {
    match removexattr_inner(ctx, a).await {
        Ok(ok) => RemoveXattrRes::Ok(ok),
        Err(s) => RemoveXattrRes::Err(s),
    }
}

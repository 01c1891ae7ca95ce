//! REMOVEXATTR (RFC 8276 section 8.4.4).

use super::xattr::check_change;
use crate::compound::Ctx;
use nfs_proto::nfs4::*;

/// REMOVEXATTR (RFC 8276 section 8.4.4): NFS4ERR_NOXATTR when there is no such attribute.
pub async fn removexattr(ctx: &Ctx, a: &RemoveXattrArgs) -> Result<RemoveXattrResOk, NfsStat4> {
    let inode = check_change(ctx)?;
    let cinfo = ctx
        .mds
        .store()
        .remove_xattr(inode.fileid, a.rxa_name.as_bytes(), ctx.mds.wall_time())
        .await?;
    Ok(RemoveXattrResOk { rxr_info: cinfo })
}

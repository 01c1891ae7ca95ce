//! SETXATTR (RFC 8276 section 8.4.2).

use super::xattr::check_change;
use crate::compound::Ctx;
use crate::store::XattrSet;
use bytes::Bytes;
use nfs_proto::nfs4::*;

/// SETXATTR (RFC 8276 section 8.4.2): SETXATTR4_CREATE on an existing name is NFS4ERR_EXIST,
/// SETXATTR4_REPLACE on a missing one NFS4ERR_NOXATTR; a value over 64 KiB is
/// NFS4ERR_XATTR2BIG.
pub async fn setxattr(ctx: &Ctx, a: &SetXattrArgs) -> Result<SetXattrResOk, NfsStat4> {
    let how = match a.sxa_option {
        SetxattrOption4::SETXATTR4_EITHER => XattrSet::Either,
        SetxattrOption4::SETXATTR4_CREATE => XattrSet::Create,
        SetxattrOption4::SETXATTR4_REPLACE => XattrSet::Replace,
        _ => return Err(NfsStat4::NFS4ERR_INVAL),
    };
    let inode = check_change(ctx)?;
    let value: Bytes = a.sxa_value.clone();
    let cinfo = ctx
        .mds
        .store()
        .set_xattr(
            inode.fileid,
            a.sxa_key.as_bytes(),
            value,
            how,
            ctx.mds.wall_time(),
        )
        .await?;
    Ok(SetXattrResOk { sxr_info: cinfo })
}

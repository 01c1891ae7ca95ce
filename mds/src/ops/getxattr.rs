//! GETXATTR (RFC 8276 section 8.4.1).

use super::dir::REPLY_RESERVE;
use super::readdir::session_reply_limit;
use super::xattr::{check_read, holds_xattrs};
use crate::compound::Ctx;
use nfs_proto::nfs4::*;

/// GETXATTR (RFC 8276 section 8.4.1): NFS4ERR_NOXATTR when the object has no attribute of
/// that name.
pub fn getxattr(ctx: &Ctx, a: &GetXattrArgs) -> Result<GetXattrResOk, NfsStat4> {
    let inode = check_read(ctx, ACCESS4_XAREAD)?;
    crate::store::check_xattr_name(a.gxa_name.as_bytes())?;
    if !holds_xattrs(&inode) {
        return Err(NfsStat4::NFS4ERR_NOXATTR);
    }
    let value = ctx
        .mds
        .store()
        .get_xattr(inode.fileid, a.gxa_name.as_bytes())?;
    // The value must fit the session's replies (RFC 8881 section 2.10.6.4); values are at most
    // 64 KiB, so this only bites a session negotiated very small.
    if let Some(limit) = session_reply_limit(ctx) {
        if value.len() + 4 + REPLY_RESERVE > limit {
            return Err(NfsStat4::NFS4ERR_REP_TOO_BIG);
        }
    }
    Ok(GetXattrResOk { gxr_value: value })
}

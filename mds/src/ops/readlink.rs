//! READLINK (RFC 8881 section 18.24).

use crate::compound::Ctx;
use nfs_proto::nfs4::*;
use nfs_proto::xdr::Utf8String;

/// READLINK (RFC 8881 section 18.24): the target of the current symbolic link. For any other
/// object RFC 8881 section 18.24.4 asks for NFS4ERR_WRONG_TYPE (NFSv4.0, RFC 7530, said
/// NFS4ERR_INVAL; this server speaks 4.1 and 4.2 only).
pub fn readlink(ctx: &mut Ctx) -> ReadLinkRes {
    match ctx.inode() {
        Ok(i) if i.ftype == NfsFtype4::NF4LNK => ReadLinkRes::Ok(ReadLinkResOk {
            link: Utf8String(i.symlink),
        }),
        Ok(_) => ReadLinkRes::Err(NfsStat4::NFS4ERR_WRONG_TYPE),
        Err(s) => ReadLinkRes::Err(s),
    }
}

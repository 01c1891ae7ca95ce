//! Directory operations: CREATE, REMOVE, RENAME, LINK, READDIR, READLINK.
//! (Being built: every operation answers NFS4ERR_NOTSUPP for now.)

use nfs_proto::nfs4::*;

use crate::compound::Ctx;

/// CREATE (RFC 8881 section 18.4).
pub async fn create(_ctx: &mut Ctx, _a: &CreateArgs) -> CreateRes {
    CreateRes::Err(NfsStat4::NFS4ERR_NOTSUPP)
}

/// REMOVE (RFC 8881 section 18.25).
pub async fn remove(_ctx: &mut Ctx, _a: &RemoveArgs) -> RemoveRes {
    RemoveRes::Err(NfsStat4::NFS4ERR_NOTSUPP)
}

/// RENAME (RFC 8881 section 18.26).
pub async fn rename(_ctx: &mut Ctx, _a: &RenameArgs) -> RenameRes {
    RenameRes::Err(NfsStat4::NFS4ERR_NOTSUPP)
}

/// LINK (RFC 8881 section 18.9).
pub async fn link(_ctx: &mut Ctx, _a: &LinkArgs) -> LinkRes {
    LinkRes::Err(NfsStat4::NFS4ERR_NOTSUPP)
}

/// READDIR (RFC 8881 section 18.23).
pub fn readdir(_ctx: &mut Ctx, _a: &ReadDirArgs) -> ReadDirRes {
    ReadDirRes::Err(NfsStat4::NFS4ERR_NOTSUPP)
}

/// READLINK (RFC 8881 section 18.24).
pub fn readlink(_ctx: &mut Ctx) -> ReadLinkRes {
    ReadLinkRes::Err(NfsStat4::NFS4ERR_NOTSUPP)
}

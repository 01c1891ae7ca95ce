//! Data: READ, WRITE, COMMIT through `pfs-core`.
//! (Being built: every operation answers NFS4ERR_NOTSUPP for now.)

use nfs_proto::nfs4::*;

use crate::compound::Ctx;

/// READ (RFC 8881 section 18.22).
pub async fn read(_ctx: &mut Ctx, _a: &ReadArgs) -> ReadRes {
    ReadRes::Err(NfsStat4::NFS4ERR_NOTSUPP)
}

/// WRITE (RFC 8881 section 18.32).
pub async fn write(_ctx: &mut Ctx, _a: &WriteArgs) -> WriteRes {
    WriteRes::Err(NfsStat4::NFS4ERR_NOTSUPP)
}

/// COMMIT (RFC 8881 section 18.3).
pub async fn commit(_ctx: &mut Ctx, _a: &CommitArgs) -> CommitRes {
    CommitRes::Err(NfsStat4::NFS4ERR_NOTSUPP)
}

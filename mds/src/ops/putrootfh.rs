//! PUTROOTFH (RFC 8881 section 18.21): the pseudo file system's root (PUTPUBFH answers the same).

use crate::compound::Ctx;
use nfs_proto::nfs4::*;

/// PUTROOTFH (RFC 8881 section 18.21).
pub fn putrootfh(ctx: &mut Ctx) -> PutRootFhRes {
    let root = ctx.mds.exports().root();
    PutRootFhRes {
        status: ctx.set_place(root).err().unwrap_or(NfsStat4::NFS4_OK),
    }
}

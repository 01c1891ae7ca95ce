//! PUTFH (RFC 8881 section 18.19): checks a filehandle and makes it current.

use crate::compound::exports::{Place, PSEUDO_EXPORT};
use crate::compound::Ctx;
use crate::store::FhKind;
use nfs_proto::nfs4::*;

/// PUTFH (RFC 8881 section 18.19): a forged handle is BADHANDLE, a deleted object STALE. A
/// file whose last name went while open (link count 0) is still there for its holders,
/// until it is being deleted.
pub fn putfh(ctx: &mut Ctx, a: &PutFhArgs) -> PutFhRes {
    let status = (|| {
        let d = ctx.mds.store().fh_codec().decode(&a.object)?;
        if d.kind == FhKind::Pseudo {
            // A pseudo node of another config is gone: STALE, as a removed file.
            let node = (d.export == PSEUDO_EXPORT)
                .then(|| ctx.mds.exports().pseudo_by_fileid(d.fileid))
                .flatten()
                .ok_or(NfsStat4::NFS4ERR_STALE)?;
            return ctx.set_place(Place::Pseudo(node));
        }
        if ctx.mds.exports().get(d.export).is_none() {
            return Err(NfsStat4::NFS4ERR_STALE);
        }
        let inode = ctx.mds.store().getattr_checked(d.fileid, d.generation)?;
        if inode.nlink == 0
            && !inode.is_dir()
            && ctx
                .mds
                .tables()
                .opens_recovered()
                .orphan_is_reaping(inode.fileid)
        {
            return Err(NfsStat4::NFS4ERR_STALE);
        }
        ctx.enter(d.export)?;
        ctx.set_fh(d.export, &inode);
        Ok(())
    })()
    .err()
    .unwrap_or(NfsStat4::NFS4_OK);
    PutFhRes { status }
}

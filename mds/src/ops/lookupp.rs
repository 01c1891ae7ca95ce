//! LOOKUPP (RFC 8881 section 18.14): the parent directory, across export junctions.

use crate::compound::Ctx;
use nfs_proto::nfs4::*;

/// LOOKUPP (RFC 8881 section 18.14): from an export's root to the place it is grafted on;
/// above the root of the joined tree there is nothing (NOENT).
pub fn lookupp(ctx: &mut Ctx) -> LookupPRes {
    let status = (|| {
        let dir = ctx.dir()?;
        if let Some(at) = ctx.place() {
            let up = ctx
                .mds
                .exports()
                .parent(at)
                .ok_or(NfsStat4::NFS4ERR_NOENT)?;
            return ctx.set_place(up);
        }
        let export = ctx.fh()?.export;
        let parent = ctx.mds.store().lookupp(dir.fileid)?;
        ctx.set_fh(export, &parent);
        Ok(())
    })()
    .err()
    .unwrap_or(NfsStat4::NFS4_OK);
    LookupPRes { status }
}

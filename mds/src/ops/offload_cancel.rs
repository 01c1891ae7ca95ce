//! OFFLOAD_CANCEL (RFC 7862 section 15.8): stops an asynchronous copy.

use crate::compound::Ctx;
use nfs_proto::nfs4::*;

/// OFFLOAD_CANCEL (RFC 7862 section 15.8): the copy stops at its next window boundary
/// (what it copied stays, and the destination's size covers it) and its stateid is gone.
pub fn offload_cancel(ctx: &mut Ctx, a: &OffloadCancelArgs) -> OffloadCancelRes {
    let status = match ctx
        .client()
        .and_then(|c| ctx.mds.copies().find(c, &a.oca_stateid))
    {
        Ok(job) => {
            ctx.mds.copies().cancel(&job);
            NfsStat4::NFS4_OK
        }
        Err(s) => s,
    };
    OffloadCancelRes { status }
}

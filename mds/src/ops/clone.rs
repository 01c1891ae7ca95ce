//! CLONE (RFC 7862 section 15.13): the destination range shares the source's blocks
//! (reflink, `FICLONERANGE`) where the object store can do it: the MDS's own store for
//! unstriped files, and stripe by stripe on the data servers for striped files whose units
//! line up on the same data servers (`crate::state::copies::clone`). NFS4ERR_NOTSUPP otherwise:
//! where a file system cannot reflink, where the offsets are not aligned as it needs, and
//! where the stripes do not line up (a clone cannot be streamed).

use nfs_proto::nfs4::*;

use crate::compound::Ctx;
use crate::ops::copy::check_pair;
use crate::state::copies;

/// CLONE (RFC 7862 section 15.13).
pub async fn clone(ctx: &mut Ctx, a: &CloneArgs) -> Result<(), NfsStat4> {
    let pair = check_pair(
        ctx,
        &a.cl_src_stateid,
        &a.cl_dst_stateid,
        a.cl_src_offset,
        a.cl_dst_offset,
        a.cl_count,
    )
    .await?;
    let plan = pair.plan;
    if plan.count == 0 {
        return Ok(());
    }
    copies::clone(&super::copy::engine(&ctx.mds), &plan).await?;
    let fileid = match plan.dst {
        copies::Place::Local(f) | copies::Place::Striped(f, _) => f,
    };
    // Durable before the reply, as a WRITE's size is.
    ctx.mds
        .store()
        .record_write(fileid, plan.dst_offset + plan.count, ctx.mds.wall_time())
        .await?;
    ctx.mds.copies().note_bytes(plan.count, 0);
    Ok(())
}

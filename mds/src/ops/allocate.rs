//! ALLOCATE (RFC 7862 section 15.1): reserves space, on the data servers for a striped file.

use super::space::check;
use crate::compound::Ctx;
use crate::ops::layout::file_stripes;
use crate::pnfs::dsspace;
use nfs_proto::nfs4::*;
use nfs_server::io::blocking;
use pfs_core::ObjectId;

/// ALLOCATE (RFC 7862 section 15.1): reserves the range so later writes there do not fail
/// for want of space, growing the file when the range ends past its size. The reservation is
/// durable before the reply, and so are the new size and change attribute.
pub async fn allocate(ctx: &Ctx, a: &AllocateArgs) -> Result<(), NfsStat4> {
    let (inode, end) = check(ctx, &a.aa_stateid, a.aa_offset, a.aa_length)?;
    let fileid = inode.fileid;
    let (offset, length) = (a.aa_offset, a.aa_length);
    // As WRITE: a file that would get a stripe set gets it now, or ALLOCATE of a new file
    // would put data in the MDS's own object and pin it there (no layouts ever after). No
    // data server up to fix a set on: the client retries.
    let export = ctx.fh()?.export;
    let stripes = file_stripes(ctx, export, &inode, false)
        .await
        .map_err(|e| match e {
            NfsStat4::NFS4ERR_LAYOUTTRYLATER => NfsStat4::NFS4ERR_DELAY,
            e => e,
        })?;
    match stripes {
        Some(set) => {
            // The size the objects must reach is the larger of the file's and the range's
            // end: the objects may already reach past the recorded size (layout writes not
            // yet committed), and are only ever grown here.
            let size = ctx.sized(inode, false).await.size;
            ctx.mds.pnfs().space_watch().watch(fileid);
            let marks = crate::pnfs::datapath::Marks {
                store: ctx.mds.store(),
                export,
            };
            dsspace::allocate(ctx.mds.pnfs(), marks, fileid, &set, offset, end, size).await?;
        }
        None => {
            let data = ctx.mds.data().clone();
            blocking(move || data.allocate(ObjectId::whole(fileid), offset, length)).await?;
        }
    }
    ctx.mds
        .store()
        .record_write(fileid, end, ctx.mds.wall_time())
        .await?;
    // A striped file that grew: its data servers learn its new end.
    crate::pnfs::dsobjects::hint_ends(ctx.mds.namespace(), ctx.mds.pnfs(), fileid);
    Ok(())
}

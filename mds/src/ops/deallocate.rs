//! DEALLOCATE (RFC 7862 section 15.4): punches holes, on the data servers for a striped file.

use super::space::check;
use crate::compound::Ctx;
use crate::pnfs::dsspace;
use nfs_proto::nfs4::*;
use nfs_server::io::blocking;
use pfs_core::{Deallocated, ObjectId};

/// DEALLOCATE (RFC 7862 section 15.4): the range reads as zeros afterwards, its blocks freed
/// where the file system can punch holes (else zeros are written); the size does not change,
/// and the part of the range past the end of the file is ignored. Durable before the reply.
/// `space_used` falls by the blocks freed (GETATTR asks the objects: `dsobjects::sized`).
pub async fn deallocate(ctx: &Ctx, a: &DeallocateArgs) -> Result<(), NfsStat4> {
    let (inode, end) = check(ctx, &a.da_stateid, a.da_offset, a.da_length)?;
    let fileid = inode.fileid;
    let (offset, length) = (a.da_offset, a.da_length);
    // Each object ignores the part of its share past its own end, so the range is not
    // clipped here: objects may reach past the recorded size while layouts are out.
    let changed = match ctx.mds.store().stripes(fileid)? {
        Some(set) => {
            ctx.mds.pnfs().space_watch().watch(fileid);
            let marks = crate::pnfs::datapath::Marks {
                store: ctx.mds.store(),
                export: ctx.fh()?.export,
            };
            dsspace::deallocate(ctx.mds.pnfs(), marks, fileid, &set, offset, end).await?
        }
        None => {
            let data = ctx.mds.data().clone();
            let how =
                blocking(move || data.deallocate(ObjectId::whole(fileid), offset, length)).await?;
            how != Deallocated::Nothing
        }
    };
    if changed {
        // The data changed but the size did not: an end of 0 never grows the file.
        ctx.mds
            .store()
            .record_write(fileid, 0, ctx.mds.wall_time())
            .await?;
    }
    Ok(())
}

//! COMMIT (RFC 8881 section 18.3) of writes made through the MDS.

use crate::compound::Ctx;
use crate::ops::open::regular_file;
use crate::pnfs::datapath;
use nfs_proto::nfs4::*;
use nfs_server::io::{blocking, check_commit_range};
use pfs_core::ObjectId;

/// COMMIT (RFC 8881 section 18.3): makes earlier unstable writes durable; `count` 0 means
/// to the end of the file. A striped file commits on every data server of its set.
pub async fn commit(ctx: &mut Ctx, a: &CommitArgs) -> Result<CommitResOk, NfsStat4> {
    ctx.client()?;
    let inode = ctx.inode()?;
    regular_file(&inode)?;
    check_commit_range(a.offset, a.count)?;
    let fileid = inode.fileid;
    if let Some(set) = ctx.mds.store().stripes(fileid)? {
        let marks = datapath::Marks {
            store: ctx.mds.store(),
            export: ctx.fh()?.export,
        };
        return Ok(CommitResOk {
            writeverf: datapath::commit(ctx.mds.pnfs(), marks, fileid, &set).await?,
        });
    }
    let data = ctx.mds.data().clone();
    let (offset, len) = (a.offset, u64::from(a.count));
    blocking(move || data.commit(ObjectId::whole(fileid), offset, len)).await?;
    Ok(CommitResOk {
        writeverf: ctx.mds.data().verifier(),
    })
}

//! WRITE (RFC 8881 section 18.32) through the MDS.

use super::io::check_io;
use crate::compound::Ctx;
use crate::ops::layout::file_stripes;
use crate::pnfs::datapath;
use crate::state::open::Io;
use nfs_proto::nfs4::*;
use nfs_server::io::{blocking, clip_write};
use pfs_core::{ObjectId, Stability};

/// WRITE (RFC 8881 section 18.32): UNSTABLE4, DATA_SYNC4 or FILE_SYNC4 as asked (the store
/// may do better and says so in `committed`); the write verifier changes on every server
/// start (of the MDS, or for a striped file of any of its data servers:
/// `datapath::stripe_verifier`), so a client re-sends unstable data it has not seen
/// committed. NFS4ERR_DELAY while a data server the WRITE needs is down.
pub async fn write(ctx: &mut Ctx, a: &WriteArgs) -> Result<WriteResOk, NfsStat4> {
    ctx.writable()?;
    let (fileid, inode) = check_io(ctx, &a.stateid, Io::Write, ACCESS4_MODIFY)?;
    let stable = Stability::from_u32(a.stable.0).ok_or(NfsStat4::NFS4ERR_INVAL)?;
    let payload = clip_write(&a.data, a.offset, ctx.mds.cfg().limits.max_io as usize)?;
    let len = payload.len() as u64;
    let offset = a.offset;
    if len == 0 {
        // The Linux client never sends an empty WRITE, and takes count 0 for an I/O error.
        tracing::warn!(fileid, offset, "WRITE of no data");
        let writeverf = match ctx.mds.store().stripes(fileid)? {
            Some(set) => datapath::known_verifier(ctx.mds.pnfs(), &set)?,
            None => ctx.mds.data().verifier(),
        };
        return Ok(WriteResOk {
            count: 0,
            committed: StableHow4::FILE_SYNC4,
            writeverf,
        });
    }
    let export = ctx.fh()?.export;
    // No data server up to fix a new stripe set on: the client retries (a WRITE cannot
    // answer LAYOUTTRYLATER).
    let stripes = file_stripes(ctx, export, &inode, false)
        .await
        .map_err(|e| match e {
            NfsStat4::NFS4ERR_LAYOUTTRYLATER => NfsStat4::NFS4ERR_DELAY,
            e => e,
        })?;
    let (count, committed, writeverf) = match stripes {
        Some(set) => {
            let marks = datapath::Marks {
                store: ctx.mds.store(),
                export,
            };
            let w = datapath::write(
                ctx.mds.pnfs(),
                marks,
                fileid,
                &set,
                offset,
                &payload,
                stable,
            )
            .await?;
            (w.count, w.committed, w.verifier)
        }
        None => {
            let data = ctx.mds.data().clone();
            let done =
                blocking(move || data.write(ObjectId::whole(fileid), offset, &[payload], stable))
                    .await?;
            (done.count, done.committed, ctx.mds.data().verifier())
        }
    };
    // Size, mtime and change: committed (group commit) before the reply is sent.
    ctx.mds
        .store()
        .record_write(fileid, offset + count, ctx.mds.wall_time())
        .await?;
    Ok(WriteResOk {
        count: count as Count4,
        committed: StableHow4(committed.as_u32()),
        writeverf,
    })
}

//! READ (RFC 8881 section 18.22) through the MDS (files without a layout, and clients that
//! do not use one).

use super::io::check_io;
use crate::compound::Ctx;
use crate::pnfs::datapath;
use crate::state::open::Io;
use bytes::Bytes;
use nfs_proto::nfs4::*;
use nfs_server::io::{hole_filled, object_read, IntoReply};
use pfs_core::ObjectId;

/// READ (RFC 8881 section 18.22). `eof` is judged against the size in the metadata store,
/// which WRITE keeps up to date before it replies.
pub async fn read(ctx: &mut Ctx, a: &ReadArgs) -> Result<ReadResOk, NfsStat4> {
    let (fileid, inode) = check_io(ctx, &a.stateid, Io::Read, ACCESS4_READ | ACCESS4_EXECUTE)?;
    // RFC 8881 section 18.22.3: the server may return less than asked; at most max_io.
    let count = a.count.min(ctx.mds.cfg().limits.max_io);
    // A READ at the recorded end of a file written through layouts (a data server sends a
    // client here when it cannot tell where the file ends) sees what the data servers hold
    // before LAYOUTCOMMIT, as GETATTR does.
    let size = if a.offset.saturating_add(u64::from(count)) > inode.size {
        ctx.sized(inode, false).await.size
    } else {
        inode.size
    };
    if a.offset >= size || count == 0 {
        return Ok(ReadResOk {
            eof: a.offset >= size,
            data: Bytes::new(),
        });
    }
    let want = u64::from(count).min(size - a.offset);
    let offset = a.offset;
    let bytes = match ctx.mds.store().stripes(fileid)? {
        // Zeros where the objects end before the size: holes.
        Some(set) => datapath::read(ctx.mds.pnfs(), fileid, &set, offset, want).await?,
        None => {
            // Into the buffers its connection sends as they are (registered memory on RDMA).
            let into = IntoReply::on(&ctx.session.conn);
            let whole = ObjectId::whole(fileid);
            let done = object_read(ctx.mds.data(), whole, offset, want as u32, into).await?;
            // The object may end before the size the store recorded (unstable data lost in
            // a crash the client has not yet re-sent, or a size set without data): that
            // range reads as zeros, as a hole would.
            hole_filled(done.data, done.eof, want as usize)
        }
    };
    let eof = offset.saturating_add(bytes.len() as u64) >= size;
    Ok(ReadResOk { eof, data: bytes })
}

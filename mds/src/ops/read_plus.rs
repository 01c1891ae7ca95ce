//! READ_PLUS (RFC 7862 section 15.10): READ that sends holes as holes
//! (`NFS4_CONTENT_HOLE`, offset and length: 16 bytes for any length) instead of zeros.
//!
//! ```text
//!  stateid (check_io Read, as READ) ─> range clipped as READ clips it (max_io, the size)
//!    ─> find_segments: SEEK data / hole alternately (seek::seek_file: the MDS's object or
//!       every stripe's object), at most MAX_SEGMENTS pieces (else a shorter reply)
//!    ─> one read of [first data, end of last data) (ObjectStore::read, or datapath::read
//!       over the data servers), the data segments sent as slices of it, not copies
//!    ─> rpr_eof when the reply reaches the file's size
//! ```
//!
//! The size is READ's (the MDS's recorded size), so READ and READ_PLUS of one range return
//! the same bytes.

use bytes::Bytes;
use nfs_proto::nfs4::*;
use pfs_core::ObjectId;

use crate::compound::Ctx;
use crate::pnfs::datapath;
use crate::state::open::Io;

use super::io::check_io;
use super::seek::seek_file;
use nfs_server::io::{blocking, find_segments, read_plus_contents};

/// Most data and hole pieces one reply carries: each costs a SEEK (on every data server of
/// a striped file), so a file of many small extents is answered in several shorter replies
/// rather than with hundreds of control calls per READ_PLUS.
pub const MAX_SEGMENTS: usize = 32;

/// READ_PLUS (RFC 7862 section 15.10), minor version 2 only: the stateid and permission
/// checks, the range and `eof` of READ; holes found with SEEK sent as holes.
pub async fn read_plus(ctx: &mut Ctx, a: &ReadPlusArgs) -> Result<ReadPlusResOk, NfsStat4> {
    if ctx.session.minor < 2 {
        return Err(NfsStat4::NFS4ERR_NOTSUPP);
    }
    let (fileid, inode) = check_io(
        ctx,
        &a.rpa_stateid,
        Io::Read,
        ACCESS4_READ | ACCESS4_EXECUTE,
    )?;
    let size = inode.size;
    let count = a.rpa_count.min(ctx.mds.cfg().limits.max_io);
    if a.rpa_offset >= size || count == 0 {
        return Ok(ReadPlusResOk {
            rpr_eof: a.rpa_offset >= size,
            rpr_contents: Vec::new(),
        });
    }
    let offset = a.rpa_offset;
    let end = offset + u64::from(count).min(size - offset);
    let set = ctx.mds.store().stripes(fileid)?;
    let mds = &ctx.mds;
    let segments = find_segments(offset, end, MAX_SEGMENTS, |pos, what| {
        seek_file(mds, fileid, set.as_ref(), size, pos, what)
    })
    .await?;
    let reached = segments.last().map_or(offset, |s| s.end());
    // One read from the first data to the end of the last: holes between read as zeros
    // that are not sent (no disk I/O for them), and every data piece is a slice of it.
    let mut datas = segments.iter().filter(|s| !s.hole);
    let (from, data) = match (datas.next(), datas.next_back()) {
        (Some(first), last) => {
            let (from, to) = (first.offset, last.unwrap_or(first).end());
            let data = match &set {
                Some(set) => datapath::read(mds.pnfs(), fileid, set, from, to - from).await?,
                None => {
                    let store = mds.data().clone();
                    let len = (to - from) as u32;
                    blocking(move || store.read(ObjectId::whole(fileid), from, len))
                        .await?
                        .data
                }
            };
            (from, data)
        }
        (None, _) => (offset, Bytes::new()),
    };
    Ok(ReadPlusResOk {
        rpr_eof: reached >= size,
        rpr_contents: read_plus_contents(&segments, from, &data),
    })
}

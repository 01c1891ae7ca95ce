//! SEEK (RFC 7862 section 15.11): where the next data or hole of a file starts, from the
//! objects' real extents (`lseek(SEEK_DATA / SEEK_HOLE)` in the object store).
//!
//! ```text
//!  stateid (check_io Read, as READ) ─> size as GETATTR reports it (dsobjects::sized)
//!    ─> sa_offset >= size: NFS4ERR_NXIO
//!    ─> stripe set? ─ no ─> ObjectStore::seek of the MDS's own object
//!                   └ yes ─> dsspace::seek (SEEK of every index's object, combined)
//!    ─> data: the first data below the size, else sr_eof with sr_offset = size
//!       hole: the first hole, at most the size (every file ends in a virtual hole)
//! ```
//!
//! `sr_eof` is set when the answer is at the end of the file: a hole found at the size (no
//! hole before the end but the virtual one), or no data at all from `sa_offset` on (the
//! RFC's "cannot find a corresponding sa_what": NFS4_OK with `sr_eof`; the Linux client
//! turns that into ENXIO for SEEK_DATA, as lseek answers).

use nfs_proto::nfs4::*;
use pfs_core::{ObjectId, SeekWhat};

use crate::compound::Ctx;
use crate::pnfs::dsspace;
use crate::server::Mds;
use crate::state::open::Io;
use crate::store::StripeSet;

use super::io::check_io;
use nfs_server::io::blocking;

/// Where the next data or hole of file `fileid` (of `size` bytes, with stripe set `set` or
/// its data in the MDS's own object) starts at or after `offset < size`, within the file:
/// data: `Some(d)` with `offset <= d < size`, `None` when only holes follow; hole:
/// `offset <= h <= size` (the size when data runs to the end).
pub(super) async fn seek_file(
    mds: &Mds,
    fileid: u64,
    set: Option<&StripeSet>,
    size: u64,
    offset: u64,
    what: SeekWhat,
) -> Result<Option<u64>, NfsStat4> {
    let found = match set {
        Some(set) => dsspace::seek(mds.pnfs(), fileid, set, offset, what).await?,
        None => {
            let data = mds.data().clone();
            let found = blocking(move || data.seek(ObjectId::whole(fileid), offset, what)).await?;
            // An object shorter than the file (a size set without data) is a hole from its
            // end on.
            match (found, what) {
                (None, SeekWhat::Hole) => Some(offset),
                (f, _) => f,
            }
        }
    };
    Ok(match what {
        SeekWhat::Data => found.filter(|&d| d >= offset && d < size),
        SeekWhat::Hole => Some(found.unwrap_or(size).clamp(offset, size)),
    })
}

/// SEEK (RFC 7862 section 15.11), minor version 2 only: NFS4ERR_NXIO at or past the end of
/// the file, stateid and permission checks as READ's.
pub async fn seek(ctx: &mut Ctx, a: &SeekArgs) -> Result<SeekResOk, NfsStat4> {
    if ctx.session.minor < 2 {
        return Err(NfsStat4::NFS4ERR_NOTSUPP);
    }
    let (fileid, inode) = check_io(ctx, &a.sa_stateid, Io::Read, ACCESS4_READ | ACCESS4_EXECUTE)?;
    let what = match a.sa_what {
        DataContent4::NFS4_CONTENT_DATA => SeekWhat::Data,
        DataContent4::NFS4_CONTENT_HOLE => SeekWhat::Hole,
        _ => return Err(NfsStat4::NFS4ERR_UNION_NOTSUPP),
    };
    // The size another client's GETATTR sees, including bytes written through layouts and
    // not yet committed to the MDS.
    let size = ctx.sized(inode, false).await.size;
    if a.sa_offset >= size {
        return Err(NfsStat4::NFS4ERR_NXIO);
    }
    let set = ctx.mds.store().stripes(fileid)?;
    let found = seek_file(&ctx.mds, fileid, set.as_ref(), size, a.sa_offset, what).await?;
    let offset = found.unwrap_or(size);
    Ok(SeekResOk {
        sr_eof: offset >= size,
        sr_offset: offset,
    })
}

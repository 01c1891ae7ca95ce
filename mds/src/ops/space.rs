//! Space reservation (RFC 7862 section 7): ALLOCATE and DEALLOCATE through `pfs-core`
//! (`fallocate` mode 0 and `PUNCH_HOLE | KEEP_SIZE` on the local backend), on the MDS's own
//! object of a file without a stripe set, or on the DS objects of a striped file
//! ([`crate::dsspace`]: each stripe index's share of the range to its data server).
//!
//! ```text
//!  ALLOCATE  : stateid (check_io Write) ─> file_stripes (fixes a set as WRITE does, so a
//!              new file stays on the data servers and keeps getting layouts)
//!              ─ none ─> ObjectStore::allocate (durable)
//!              └ set ──> dsspace::allocate (every index's share, durable on every DS)
//!              ─> Store::record_write (size grows to offset + length if smaller; mtime,
//!                 ctime, change)
//!  DEALLOCATE: stateid (check_io Write) ─> stripe set?
//!              ─ no ──> ObjectStore::deallocate (durable)
//!              └ yes ─> dsspace::deallocate (every index's share, durable on every DS)
//!              ─> Store::record_write (size unchanged; mtime, ctime, change) when anything
//!                 was deallocated
//! ```
//!
//! The data servers' objects change before the MDS records anything, as for WRITE through
//! the MDS: a data server that is down or fails makes the operation NFS4ERR_DELAY and the MDS
//! records nothing (a retry does the same again; both are idempotent).
//!
//! Both are NFSv4.2 operations: in minor version 1 they are NFS4ERR_NOTSUPP. The stateid and
//! permission rules are WRITE's (RFC 7862 sections 15.1.3 and 15.4.3 refer to them): an open,
//! lock or delegation stateid that allows writing, or a special stateid with no conflicting
//! share reservation and write permission by the mode bits.

use nfs_proto::nfs4::*;
use pfs_core::{Deallocated, ObjectId};

use crate::compound::Ctx;
use crate::dsspace;
use crate::ops::layout::file_stripes;
use crate::state::open::Io;
use crate::store::Inode;

use super::io::check_io;
use nfs_server::io::blocking;

/// The checks both operations share; returns the file and the range's end.
fn check(
    ctx: &Ctx,
    stateid: &Stateid4,
    offset: u64,
    length: u64,
) -> Result<(Inode, u64), NfsStat4> {
    if ctx.session.minor < 2 {
        return Err(NfsStat4::NFS4ERR_NOTSUPP);
    }
    ctx.writable()?;
    let (_, inode) = check_io(ctx, stateid, Io::Write, ACCESS4_MODIFY)?;
    // fallocate(2) refuses an empty range (EINVAL), as knfsd passes on; a range past the
    // largest file is NFS4ERR_FBIG, as for WRITE.
    if length == 0 {
        return Err(NfsStat4::NFS4ERR_INVAL);
    }
    match offset.checked_add(length) {
        Some(end) if end <= i64::MAX as u64 => Ok((inode, end)),
        _ => Err(NfsStat4::NFS4ERR_FBIG),
    }
}

async fn allocate_inner(ctx: &Ctx, a: &AllocateArgs) -> Result<(), NfsStat4> {
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
            let size = crate::dsobjects::sized(&ctx.mds, inode, false).await.size;
            ctx.mds.space_watch.watch(fileid);
            dsspace::allocate(&ctx.mds, fileid, &set, offset, end, size).await?;
        }
        None => {
            let data = ctx.mds.data.clone();
            blocking(move || data.allocate(ObjectId::whole(fileid), offset, length)).await?;
        }
    }
    ctx.mds
        .store
        .record_write(fileid, end, ctx.mds.wall_time())
        .await?;
    // A striped file that grew: its data servers learn its new end.
    crate::dsobjects::hint_ends(&ctx.mds, fileid);
    Ok(())
}

/// ALLOCATE (RFC 7862 section 15.1): reserves the range so later writes there do not fail
/// for want of space, growing the file when the range ends past its size. The reservation is
/// durable before the reply, and so are the new size and change attribute.
pub async fn allocate(ctx: &mut Ctx, a: &AllocateArgs) -> AllocateRes {
    AllocateRes {
        status: match allocate_inner(ctx, a).await {
            Ok(()) => NfsStat4::NFS4_OK,
            Err(s) => s,
        },
    }
}

async fn deallocate_inner(ctx: &Ctx, a: &DeallocateArgs) -> Result<(), NfsStat4> {
    let (inode, end) = check(ctx, &a.da_stateid, a.da_offset, a.da_length)?;
    let fileid = inode.fileid;
    let (offset, length) = (a.da_offset, a.da_length);
    // Each object ignores the part of its share past its own end, so the range is not
    // clipped here: objects may reach past the recorded size while layouts are out.
    let changed = match ctx.mds.store.stripes(fileid)? {
        Some(set) => {
            ctx.mds.space_watch.watch(fileid);
            dsspace::deallocate(&ctx.mds, fileid, &set, offset, end).await?
        }
        None => {
            let data = ctx.mds.data.clone();
            let how =
                blocking(move || data.deallocate(ObjectId::whole(fileid), offset, length)).await?;
            how != Deallocated::Nothing
        }
    };
    if changed {
        // The data changed but the size did not: an end of 0 never grows the file.
        ctx.mds
            .store
            .record_write(fileid, 0, ctx.mds.wall_time())
            .await?;
    }
    Ok(())
}

/// DEALLOCATE (RFC 7862 section 15.4): the range reads as zeros afterwards, its blocks freed
/// where the file system can punch holes (else zeros are written); the size does not change,
/// and the part of the range past the end of the file is ignored. Durable before the reply.
/// `space_used` falls by the blocks freed (GETATTR asks the objects: `dsobjects::sized`).
pub async fn deallocate(ctx: &mut Ctx, a: &DeallocateArgs) -> DeallocateRes {
    DeallocateRes {
        status: match deallocate_inner(ctx, a).await {
            Ok(()) => NfsStat4::NFS4_OK,
            Err(s) => s,
        },
    }
}

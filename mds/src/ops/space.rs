//! Space reservation (RFC 7862 section 7): ALLOCATE and DEALLOCATE through `pfs-core`
//! (`fallocate` mode 0 and `PUNCH_HOLE | KEEP_SIZE` on the local backend).
//!
//! ```text
//!  ALLOCATE  : stateid (check_io Write) ─> ObjectStore::allocate   (durable) ─> Store::record_write
//!              (size grows to offset + length if smaller; space_used, mtime, ctime, change)
//!  DEALLOCATE: stateid (check_io Write) ─> ObjectStore::deallocate (durable) ─> Store::record_write
//!              (size unchanged; mtime, ctime, change) when anything was deallocated
//! ```
//!
//! Both are NFSv4.2 operations: in minor version 1 they are NFS4ERR_NOTSUPP. The stateid and
//! permission rules are WRITE's (RFC 7862 sections 15.1.3 and 15.4.3 refer to them): an open,
//! lock or delegation stateid that allows writing, or a special stateid with no conflicting
//! share reservation and write permission by the mode bits.

use nfs_proto::nfs4::*;
use pfs_core::{Deallocated, ObjectId};

use crate::compound::Ctx;
use crate::state::open::Io;
use crate::store::system_time_now;

use super::io::check_io;
use nfs_server::io::blocking;

/// The checks both operations share; returns the file id and the range's end.
fn check(ctx: &Ctx, stateid: &Stateid4, offset: u64, length: u64) -> Result<(u64, u64), NfsStat4> {
    if ctx.session.minor < 2 {
        return Err(NfsStat4::NFS4ERR_NOTSUPP);
    }
    ctx.writable()?;
    let (fileid, _) = check_io(ctx, stateid, Io::Write, ACCESS4_MODIFY)?;
    // fallocate(2) refuses an empty range (EINVAL), as knfsd passes on; a range past the
    // largest file is NFS4ERR_FBIG, as for WRITE.
    if length == 0 {
        return Err(NfsStat4::NFS4ERR_INVAL);
    }
    match offset.checked_add(length) {
        Some(end) if end <= i64::MAX as u64 => Ok((fileid, end)),
        _ => Err(NfsStat4::NFS4ERR_FBIG),
    }
}

async fn allocate_inner(ctx: &Ctx, a: &AllocateArgs) -> Result<(), NfsStat4> {
    let (fileid, end) = check(ctx, &a.aa_stateid, a.aa_offset, a.aa_length)?;
    let data = ctx.mds.data.clone();
    let (offset, length) = (a.aa_offset, a.aa_length);
    blocking(move || data.allocate(ObjectId::whole(fileid), offset, length)).await?;
    ctx.mds
        .store
        .record_write(fileid, end, system_time_now())
        .await?;
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
    let (fileid, _) = check(ctx, &a.da_stateid, a.da_offset, a.da_length)?;
    let data = ctx.mds.data.clone();
    let (offset, length) = (a.da_offset, a.da_length);
    let how = blocking(move || data.deallocate(ObjectId::whole(fileid), offset, length)).await?;
    if how != Deallocated::Nothing {
        // The data changed but the size did not: an end of 0 never grows the file.
        ctx.mds
            .store
            .record_write(fileid, 0, system_time_now())
            .await?;
    }
    Ok(())
}

/// DEALLOCATE (RFC 7862 section 15.4): the range reads as zeros afterwards, its blocks freed
/// where the file system can punch holes (else zeros are written); the size does not change,
/// and the part of the range past the end of the file is ignored. Durable before the reply.
/// `space_used` is not lowered: the MDS counts a file's size as its space.
pub async fn deallocate(ctx: &mut Ctx, a: &DeallocateArgs) -> DeallocateRes {
    DeallocateRes {
        status: match deallocate_inner(ctx, a).await {
            Ok(()) => NfsStat4::NFS4_OK,
            Err(s) => s,
        },
    }
}

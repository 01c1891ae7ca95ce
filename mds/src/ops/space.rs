//! Space reservation (RFC 7862 section 7): the checks ALLOCATE and DEALLOCATE (a file each)
//! share. They run through `pfs-core`
//! (`fallocate` mode 0 and `PUNCH_HOLE | KEEP_SIZE` on the local backend), on the MDS's own
//! object of a file without a stripe set, or on the DS objects of a striped file
//! ([`crate::pnfs::dsspace`]: each stripe index's share of the range to its data server).
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

use super::io::check_io;
use crate::compound::Ctx;
use crate::state::open::Io;
use crate::store::Inode;
use nfs_proto::nfs4::*;

/// The checks both operations share; returns the file and the range's end.
pub(super) fn check(
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

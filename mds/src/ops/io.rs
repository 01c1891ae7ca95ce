//! What READ, WRITE and COMMIT (a file each) share: the checks of an I/O's stateid and file.
//! Data lives in the MDS's own object store or, for a file with a stripe set, on its DS objects through the control protocol (`crate::pnfs::datapath`), so a client without a
//! layout sees the bytes a client with one wrote, and the other way round.
//!
//! The object store is blocking (pread/pwrite/fdatasync), so every call runs on tokio's
//! blocking pool. Payloads are never copied here: a WRITE's `Bytes` (a slice of the request
//! record) goes to `pwritev` (or, in slices, to the data servers' sockets) as is, and a READ's
//! buffer becomes the reply's payload piece.
//!
//! ```text
//!  READ : stateid (check_io Read) ─> stripe set? ─ no ─> ObjectStore::read
//!                                                └ yes ─> datapath::read (control READs)
//!         ─> READ4resok.data (own piece)
//!  WRITE: stateid (check_io Write) ─> file_stripes (fixes a set at the first WRITE when
//!         layouts are granted) ─ none ─> ObjectStore::write(stable)
//!                                └ set ─> datapath::write (control WRITEs)
//!         ─> Store::record_write (size, mtime, change: durable before the reply)
//!         ─> count, committed, verifier (the store's, or derived from the data servers')
//!  COMMIT: stripe set? ─ no ─> ObjectStore::commit ─> verifier
//!                     └ yes ─> datapath::commit (every data server of the set)
//! ```

use crate::compound::Ctx;
use crate::ops::open::regular_file;
use crate::state::open::Io;
use crate::state::stateid::{classify, resolve_current};
use crate::store::Inode;
use nfs_proto::nfs4::*;

/// The checks READ and WRITE share (RFC 8881 sections 18.22.3, 18.32.3, 8.2.3 and 9.1.2):
/// a regular file, and a stateid that allows the I/O. With an open or lock stateid the
/// permission was checked by OPEN (a later chmod does not stop an open file, as in POSIX);
/// I/O under a special stateid has no open behind it, so the mode bits are checked here:
/// `want` access, or being the file's owner (knfsd's owner override, which lets the creator
/// of a mode-0444 file write it).
pub(super) fn check_io(
    ctx: &Ctx,
    stateid: &Stateid4,
    io: Io,
    want: u32,
) -> Result<(u64, Inode), NfsStat4> {
    let inode = ctx.inode()?;
    check_io_on(ctx, inode, stateid, ctx.cstateid.as_ref(), io, want)
}

/// [`check_io`] on `inode` (the current file, or COPY's and CLONE's source, the saved one),
/// with `current` the stateid that the special "current stateid" stands for there.
pub(super) fn check_io_on(
    ctx: &Ctx,
    inode: Inode,
    stateid: &Stateid4,
    current: Option<&Stateid4>,
    io: Io,
    want: u32,
) -> Result<(u64, Inode), NfsStat4> {
    let clientid = ctx.client()?;
    regular_file(&inode)?;
    let stateid = resolve_current(stateid, current)?;
    ctx.mds
        .tables()
        .opens()
        .check_io(clientid, inode.fileid, &stateid, io)?;
    if classify(&stateid)?.is_some() {
        if ctx.user.uid != inode.uid && ctx.allowed(&inode, want) == 0 {
            return Err(NfsStat4::NFS4ERR_ACCESS);
        }
        // I/O without open state bypasses OPEN's delegation check: another client's
        // conflicting delegation is recalled and the I/O waits (RFC 8881 section 10.4.4).
        let need = match io {
            Io::Read => crate::state::deleg::Need::Read,
            Io::Write => crate::state::deleg::Need::Write,
        };
        crate::state::recall::break_conflicts(
            ctx.mds.tables(),
            ctx.mds.core(),
            inode.fileid,
            clientid,
            need,
        )?;
    }
    Ok((inode.fileid, inode))
}

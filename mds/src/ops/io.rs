//! Data: READ, WRITE, COMMIT, in the MDS's own object store or, for a file with a stripe set,
//! on its DS objects through the control protocol (`crate::datapath`), so a client without a
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

use bytes::Bytes;
use nfs_proto::nfs4::*;
use pfs_core::{ObjectId, Stability};

use crate::compound::Ctx;
use crate::datapath;
use crate::ops::layout::file_stripes;
use crate::ops::open::regular_file;
use crate::state::open::Io;
use crate::state::stateid::{classify, resolve_current};
use crate::store::Inode;
use nfs_server::io::{blocking, check_commit_range, clip_write, hole_filled};

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
        .opens
        .lock()
        .expect("opens")
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
        crate::delegations::break_conflicts(&ctx.mds, inode.fileid, clientid, need)?;
    }
    Ok((inode.fileid, inode))
}

async fn read_inner(ctx: &mut Ctx, a: &ReadArgs) -> Result<ReadResOk, NfsStat4> {
    let (fileid, inode) = check_io(ctx, &a.stateid, Io::Read, ACCESS4_READ | ACCESS4_EXECUTE)?;
    // RFC 8881 section 18.22.3: the server may return less than asked; at most max_io.
    let count = a.count.min(ctx.mds.cfg.limits.max_io);
    // A READ at the recorded end of a file written through layouts (a data server sends a
    // client here when it cannot tell where the file ends) sees what the data servers hold
    // before LAYOUTCOMMIT, as GETATTR does.
    let size = if a.offset.saturating_add(u64::from(count)) > inode.size {
        crate::dsobjects::sized(&ctx.mds, inode, false).await.size
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
    let bytes = match ctx.mds.store.stripes(fileid)? {
        // Zeros where the objects end before the size: holes.
        Some(set) => datapath::read(&ctx.mds, fileid, &set, offset, want).await?,
        None => {
            let data = ctx.mds.data.clone();
            let done =
                blocking(move || data.read(ObjectId::whole(fileid), offset, want as u32)).await?;
            // The object may end before the size the store recorded (unstable data lost in
            // a crash the client has not yet re-sent, or a size set without data): that
            // range reads as zeros, as a hole would.
            hole_filled(done.data, done.eof, want as usize)
        }
    };
    let eof = offset.saturating_add(bytes.len() as u64) >= size;
    Ok(ReadResOk { eof, data: bytes })
}

/// READ (RFC 8881 section 18.22). `eof` is judged against the size in the metadata store,
/// which WRITE keeps up to date before it replies.
pub async fn read(ctx: &mut Ctx, a: &ReadArgs) -> ReadRes {
    match read_inner(ctx, a).await {
        Ok(ok) => ReadRes::Ok(ok),
        Err(s) => ReadRes::Err(s),
    }
}

async fn write_inner(ctx: &mut Ctx, a: &WriteArgs) -> Result<WriteResOk, NfsStat4> {
    ctx.writable()?;
    let (fileid, inode) = check_io(ctx, &a.stateid, Io::Write, ACCESS4_MODIFY)?;
    let stable = Stability::from_u32(a.stable.0).ok_or(NfsStat4::NFS4ERR_INVAL)?;
    let payload = clip_write(&a.data, a.offset, ctx.mds.cfg.limits.max_io as usize)?;
    let len = payload.len() as u64;
    let offset = a.offset;
    if len == 0 {
        // The Linux client never sends an empty WRITE, and takes count 0 for an I/O error.
        tracing::warn!(fileid, offset, "WRITE of no data");
        let writeverf = match ctx.mds.store.stripes(fileid)? {
            Some(set) => datapath::known_verifier(&ctx.mds, &set)?,
            None => ctx.mds.data.verifier(),
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
            let w = datapath::write(&ctx.mds, fileid, &set, offset, &payload, stable).await?;
            (w.count, w.committed, w.verifier)
        }
        None => {
            let data = ctx.mds.data.clone();
            let done =
                blocking(move || data.write(ObjectId::whole(fileid), offset, &[payload], stable))
                    .await?;
            (done.count, done.committed, ctx.mds.data.verifier())
        }
    };
    // Size, mtime and change: committed (group commit) before the reply is sent.
    ctx.mds
        .store
        .record_write(fileid, offset + count, ctx.mds.wall_time())
        .await?;
    Ok(WriteResOk {
        count: count as Count4,
        committed: StableHow4(committed.as_u32()),
        writeverf,
    })
}

/// WRITE (RFC 8881 section 18.32): UNSTABLE4, DATA_SYNC4 or FILE_SYNC4 as asked (the store
/// may do better and says so in `committed`); the write verifier changes on every server
/// start (of the MDS, or for a striped file of any of its data servers:
/// `datapath::stripe_verifier`), so a client re-sends unstable data it has not seen
/// committed. NFS4ERR_DELAY while a data server the WRITE needs is down.
pub async fn write(ctx: &mut Ctx, a: &WriteArgs) -> WriteRes {
    match write_inner(ctx, a).await {
        Ok(ok) => WriteRes::Ok(ok),
        Err(s) => WriteRes::Err(s),
    }
}

async fn commit_inner(ctx: &mut Ctx, a: &CommitArgs) -> Result<CommitResOk, NfsStat4> {
    ctx.client()?;
    let inode = ctx.inode()?;
    regular_file(&inode)?;
    check_commit_range(a.offset, a.count)?;
    let fileid = inode.fileid;
    if let Some(set) = ctx.mds.store.stripes(fileid)? {
        return Ok(CommitResOk {
            writeverf: datapath::commit(&ctx.mds, fileid, &set).await?,
        });
    }
    let data = ctx.mds.data.clone();
    let (offset, len) = (a.offset, u64::from(a.count));
    blocking(move || data.commit(ObjectId::whole(fileid), offset, len)).await?;
    Ok(CommitResOk {
        writeverf: ctx.mds.data.verifier(),
    })
}

/// COMMIT (RFC 8881 section 18.3): makes earlier unstable writes durable; `count` 0 means
/// to the end of the file. A striped file commits on every data server of its set.
pub async fn commit(ctx: &mut Ctx, a: &CommitArgs) -> CommitRes {
    match commit_inner(ctx, a).await {
        Ok(ok) => CommitRes::Ok(ok),
        Err(s) => CommitRes::Err(s),
    }
}

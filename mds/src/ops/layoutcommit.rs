//! LAYOUTCOMMIT (RFC 8881 section 18.42): the size and times of writes made through a layout.

use super::layout::WHOLE_FILE;
use super::open::regular_file;
use crate::compound::Ctx;
use crate::state::layout::{LayoutError, LayoutTable};
use crate::state::stateid::resolve_current;
use nfs_proto::nfs4::*;

/// LAYOUTCOMMIT (RFC 8881 section 18.42): after writes through the data servers, the size
/// grows to `loca_last_write_offset + 1` if that is larger, mtime becomes
/// `loca_time_modify` if given (else now, unless the client set the mtime itself after these
/// writes: `Settler::times_set`), and the change attribute moves on, durably
/// before the reply. Needs an RW layout of this file under the client's layout stateid:
/// another stateid is NFS4ERR_BAD_STATEID, a layout without RW NFS4ERR_BADLAYOUT.
pub async fn layoutcommit(
    ctx: &mut Ctx,
    a: &LayoutCommitArgs,
) -> Result<LayoutCommitResOk, NfsStat4> {
    let clientid = ctx.client()?;
    let inode = ctx.inode()?;
    regular_file(&inode)?;
    if a.loca_length != WHOLE_FILE && a.loca_offset.checked_add(a.loca_length).is_none() {
        return Err(NfsStat4::NFS4ERR_INVAL);
    }
    let stateid = resolve_current(&a.loca_stateid, ctx.cstateid.as_ref())?;
    if !LayoutTable::is_layout_stateid(&stateid) {
        return Err(NfsStat4::NFS4ERR_BAD_STATEID);
    }
    let held = ctx
        .mds
        .tables()
        .layouts()
        .modes(clientid, inode.fileid, &stateid);
    match held {
        Ok(modes) if modes.rw => {}
        Ok(_) => return Err(NfsStat4::NFS4ERR_BADLAYOUT),
        // The layout of an earlier boot (section 18.42.3): a LAYOUTCOMMIT that was in flight
        // when the MDS went down, resent after the client's recovery with the stateid it
        // had (the Linux client never sets loca_reclaim). Taken from a client that has the
        // file open for writing again; the data servers hold the bytes either way, and
        // the file is marked until its size is settled with them (crate::pnfs::settle).
        Err(LayoutError::Stale)
            if ctx
                .mds
                .tables()
                .opens()
                .client_has_write_open(clientid, inode.fileid) =>
        {
            tracing::info!(
                clientid,
                fileid = inode.fileid,
                "LAYOUTCOMMIT under a layout of an earlier boot taken (the client has the file open for writing)"
            );
        }
        Err(e) => return Err(e.into()),
    }
    let end = match a.loca_last_write_offset {
        Newoffset4::Present { no_offset } => {
            no_offset.checked_add(1).ok_or(NfsStat4::NFS4ERR_INVAL)?
        }
        Newoffset4::Absent => 0,
    };
    let now = ctx.mds.wall_time();
    let settler = ctx.mds.pnfs().settler();
    let mtime = match a.loca_time_modify {
        Newtime4::Changed { nt_time } => Some(nt_time),
        // Writes made before the client set the mtime itself: its time stands.
        Newtime4::Unchanged if settler.take_times_set(inode.fileid, clientid) => None,
        Newtime4::Unchanged => Some(now),
    };
    let after = ctx
        .mds
        .store()
        .record_layout_commit(inode.fileid, end, mtime, now)
        .await?;
    // Its writes so far are in the recorded size: GETATTR need not ask the data servers
    // on its account any more.
    ctx.mds.pnfs().settler().reported(inode.fileid, clientid);
    if after.size != inode.size {
        crate::pnfs::dsobjects::hint_ends(ctx.mds.namespace(), ctx.mds.pnfs(), inode.fileid);
    }
    Ok(LayoutCommitResOk {
        locr_newsize: if after.size != inode.size {
            Newsize4::Changed {
                ns_size: after.size,
            }
        } else {
            Newsize4::Unchanged
        },
    })
}

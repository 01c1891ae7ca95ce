//! LAYOUTERROR (RFC 7862 section 15.6): errors a client met on data servers under a layout.

use crate::compound::Ctx;
use crate::state::layout::LayoutError;
use crate::state::stateid::resolve_current;
use nfs_proto::nfs4::*;

/// LAYOUTERROR (RFC 7862 section 15.6): taken under a layout stateid of this client and the
/// current file; each error is counted for the data server its device names and logged
/// (`ops::layoutreturn::errors`, as a flex files LAYOUTRETURN's report). The client goes on
/// as it chooses (through another mirror, the MDS, or a new layout).
pub fn layouterror(ctx: &mut Ctx, a: &LayoutErrorArgs) -> LayoutErrorRes {
    let status = match check_layout(ctx, &a.lea_stateid) {
        Ok((clientid, fileid)) => {
            super::layoutreturn::errors(
                ctx,
                clientid,
                fileid,
                &a.lea_errors,
                a.lea_offset,
                a.lea_length,
            );
            NfsStat4::NFS4_OK
        }
        Err(s) => s,
    };
    LayoutErrorRes { status }
}

/// That `stateid` (or the current one) is a layout stateid of this client for the current
/// regular file: what LAYOUTERROR and LAYOUTSTATS are sent under (one of an earlier boot is
/// NFS4ERR_BAD_STATEID too: the layout went with that boot). Gives the client and file ids.
pub(super) fn check_layout(ctx: &Ctx, stateid: &Stateid4) -> Result<(u64, u64), NfsStat4> {
    let clientid = ctx.client()?;
    let inode = ctx.inode()?;
    super::open::regular_file(&inode)?;
    let stateid = resolve_current(stateid, ctx.cstateid.as_ref())?;
    if !crate::state::layout::LayoutTable::is_layout_stateid(&stateid) {
        return Err(NfsStat4::NFS4ERR_BAD_STATEID);
    }
    match ctx
        .mds
        .tables()
        .layouts()
        .modes(clientid, inode.fileid, &stateid)
    {
        Ok(_) => Ok((clientid, inode.fileid)),
        Err(LayoutError::Stale) => Err(NfsStat4::NFS4ERR_BAD_STATEID),
        Err(e) => Err(e.into()),
    }
}

//! LINK (RFC 8881 section 18.9): a hard link to the saved filehandle's file.

use super::dir::{break_delegations, current_dir, may_change_entries, saved_fh};
use super::fh::check_component;
use crate::compound::Ctx;
use nfs_proto::nfs4::*;

/// LINK (RFC 8881 section 18.9): `newname` in the current directory becomes another name of
/// the saved object (not a directory: NFS4ERR_ISDIR), in the same export (NFS4ERR_XDEV).
pub async fn link(ctx: &mut Ctx, a: &LinkArgs) -> Result<ChangeInfo4, NfsStat4> {
    let sfh = saved_fh(ctx)?;
    let (tfh, dir) = current_dir(ctx)?;
    let source = ctx
        .mds
        .store()
        .getattr_checked(sfh.fileid, sfh.generation)?;
    if source.is_dir() {
        return Err(NfsStat4::NFS4ERR_ISDIR);
    }
    if sfh.export != tfh.export {
        return Err(NfsStat4::NFS4ERR_XDEV);
    }
    let name = check_component(&a.newname)?;
    ctx.writable()?;
    may_change_entries(ctx, &dir)?;
    break_delegations(ctx, &source)?;
    let linked = ctx
        .mds
        .store()
        .link(source.fileid, dir.fileid, name, ctx.mds.wall_time())
        .await?;
    Ok(linked.cinfo)
}

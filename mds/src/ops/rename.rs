//! RENAME (RFC 8881 section 18.26).

use super::dir::{
    after_unlink, break_delegations, check_sticky, current_dir, dir_at, may_change_entries,
    saved_fh,
};
use super::fh::check_component;
use crate::compound::Ctx;
use nfs_proto::nfs4::*;

/// RENAME (RFC 8881 section 18.26): `oldname` in the saved directory becomes `newname` in the
/// current one, atomically replacing a compatible target (NFS4ERR_EXIST if incompatible or a
/// non-empty directory). Both directories must be in one export (NFS4ERR_XDEV) and writable
/// by the caller; the sticky rule applies to the source entry and to a replaced target; a
/// directory moving to another parent needs write permission on itself (its `..` changes),
/// as on Linux. A replaced file's data goes as for REMOVE.
pub async fn rename(ctx: &mut Ctx, a: &RenameArgs) -> Result<RenameResOk, NfsStat4> {
    let sfh = saved_fh(ctx)?;
    let (tfh, tdir) = current_dir(ctx)?;
    let sdir = dir_at(ctx, sfh)?;
    if sfh.export != tfh.export {
        return Err(NfsStat4::NFS4ERR_XDEV);
    }
    let old = check_component(&a.oldname)?;
    let new = check_component(&a.newname)?;
    ctx.writable()?;
    may_change_entries(ctx, &sdir)?;
    may_change_entries(ctx, &tdir)?;
    let source = check_sticky(ctx, &sdir, old)?.ok_or(NfsStat4::NFS4ERR_NOENT)?;
    let target = check_sticky(ctx, &tdir, new)?;
    let same_file = target.as_ref().is_some_and(|t| t.fileid == source.fileid);
    for file in std::iter::once(&source).chain(target.as_ref()) {
        break_delegations(ctx, file)?;
    }
    if source.is_dir()
        && sdir.fileid != tdir.fileid
        && !same_file
        && ctx.allowed(&source, ACCESS4_MODIFY) == 0
    {
        return Err(NfsStat4::NFS4ERR_ACCESS);
    }
    let r = ctx
        .mds
        .store()
        .rename(sdir.fileid, old, tdir.fileid, new, ctx.mds.wall_time())
        .await?;
    if let Some(replaced) = &r.replaced {
        after_unlink(ctx, replaced);
    }
    Ok(RenameResOk {
        source_cinfo: r.source_cinfo,
        target_cinfo: r.target_cinfo,
    })
}

//! SETATTR (RFC 8881 section 18.30): mode, owners, times and size (a size change truncates the
//! file's data, on the data servers for a striped file).

use super::attr::{parse_id, SETTABLE, SUPPORTED};
use crate::compound::Ctx;
use crate::state::deleg::Need;
use crate::store::SetAttrs;
use nfs_proto::nfs4::attr::*;
use nfs_proto::nfs4::*;

/// Checks and converts settable attributes; unsupported ones are ATTRNOTSUPP, read-only
/// ones INVAL (RFC 8881 section 18.30.3).
pub fn to_setattrs(f: &Fattr4) -> Result<(SetAttrs, Bitmap4), NfsStat4> {
    let a = FileAttrs::from_fattr(f).map_err(NfsStat4::from)?;
    let mask = a.mask();
    for bit in mask.iter() {
        if !SETTABLE.contains(&bit) {
            return Err(if SUPPORTED.contains(&bit) {
                NfsStat4::NFS4ERR_INVAL
            } else {
                NfsStat4::NFS4ERR_ATTRNOTSUPP
            });
        }
    }
    let s = SetAttrs {
        mode: a.mode.map(|m| m & 0o7777),
        uid: a.owner.as_ref().map(parse_id).transpose()?,
        gid: a.owner_group.as_ref().map(parse_id).transpose()?,
        size: a.size,
        atime: a.time_access_set,
        mtime: a.time_modify_set,
    };
    Ok((s, mask))
}

/// SETATTR (RFC 8881 section 18.30), with the Unix permission rules: only the owner (or
/// root) changes mode, times to a given value and the group (to one of its groups); only
/// root gives a file away; a size change needs write permission (and an open for writing
/// when a stateid is given).
pub async fn setattr(ctx: &mut Ctx, a: &SetAttrArgs) -> SetAttrRes {
    let r = async {
        ctx.writable()?;
        let inode = ctx.inode()?;
        let (s, mask) = to_setattrs(&a.obj_attributes)?;
        let u = &ctx.user;
        let owner = u.uid == 0 || u.uid == inode.uid;
        if s.mode.is_some() && !owner {
            return Err(NfsStat4::NFS4ERR_PERM);
        }
        if let Some(uid) = s.uid {
            if uid != inode.uid && u.uid != 0 {
                return Err(NfsStat4::NFS4ERR_PERM);
            }
        }
        if let Some(gid) = s.gid {
            if gid != inode.gid && !(u.uid == 0 || (owner && u.in_group(gid))) {
                return Err(NfsStat4::NFS4ERR_PERM);
            }
        }
        let client_time = matches!(s.atime, Some(Settime4::SetToClientTime(_)))
            || matches!(s.mtime, Some(Settime4::SetToClientTime(_)));
        if client_time && !owner {
            return Err(NfsStat4::NFS4ERR_PERM);
        }
        if (s.size.is_some() || ((s.atime.is_some() || s.mtime.is_some()) && !owner))
            && ctx.allowed(&inode, ACCESS4_MODIFY) == 0
        {
            return Err(NfsStat4::NFS4ERR_ACCESS);
        }
        if s.size.is_some() {
            if inode.is_dir() {
                return Err(NfsStat4::NFS4ERR_ISDIR);
            }
            super::open::check_size_change(ctx, inode.fileid, &a.stateid)?;
        }
        if s.is_empty() {
            return Ok(mask);
        }
        // Changing another client's delegated file waits for its delegation (RFC 8881
        // section 10.4.4; knfsd breaks delegations on every attribute change).
        crate::state::recall::break_conflicts(
            ctx.mds.tables(),
            ctx.mds.core(),
            inode.fileid,
            ctx.client()?,
            Need::Write,
        )?;
        // A striped file's objects are truncated on its data servers before the store records
        // the size, so a data server that is down changes nothing (NFS4ERR_DELAY); the store's
        // own checks come first, so it does not refuse what the data servers already did.
        let mut striped = false;
        if let Some(size) = s.size {
            s.check()?;
            if let Some(t) = crate::pnfs::dsobjects::plan_truncate(
                ctx.mds.store(),
                ctx.mds.pnfs(),
                inode.fileid,
                size,
                inode.change,
            )? {
                let marks = crate::pnfs::datapath::Marks {
                    store: ctx.mds.store(),
                    export: ctx.fh()?.export,
                };
                t.run(ctx.mds.pnfs(), marks).await?;
                striped = true;
                // Other clients' layouts map data that changed under them (RFC 8881 section
                // 12.5.5.1): recalled in the background.
                super::dir::recall_layouts(ctx, inode.fileid);
            }
        }
        let out = ctx
            .mds
            .store()
            .setattr(inode.fileid, s.clone(), ctx.mds.wall_time())
            .await?;
        if matches!(s.mtime, Some(Settime4::SetToClientTime(_))) {
            let client = ctx.client()?;
            if ctx
                .mds
                .tables()
                .layouts_recovered()
                .holds_rw(inode.fileid, client)
            {
                ctx.mds.pnfs().settler().times_set(inode.fileid, client);
            }
        }
        if let Some(size) = s.size {
            if striped {
                crate::pnfs::dsobjects::hint_ends(
                    ctx.mds.namespace(),
                    ctx.mds.pnfs(),
                    inode.fileid,
                );
            } else if size != out.old_size {
                super::open::truncate_data(ctx, inode.fileid, size).await?;
            }
        }
        Ok(mask)
    }
    .await;
    match r {
        Ok(attrsset) => SetAttrRes {
            status: NfsStat4::NFS4_OK,
            attrsset,
        },
        Err(status) => SetAttrRes {
            status,
            attrsset: Bitmap4::new(),
        },
    }
}

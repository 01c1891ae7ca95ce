//! Extended attributes (RFC 8276): GETXATTR, SETXATTR, LISTXATTRS and REMOVEXATTR over the
//! store's xattr tables (`store::xattr`), with the rules of the "user" namespace as Linux
//! applies them.
//!
//! * **Minor version.** The operations are an NFSv4.2 extension (RFC 8276 section 3): in
//!   minor version 1 they are NFS4ERR_NOTSUPP, as `xattr_support` is not reported there.
//! * **Objects.** User attributes live on regular files and directories only (as on Linux,
//!   where the permission bits of other objects do not describe who may write attributes):
//!   reading one elsewhere is NFS4ERR_NOXATTR, listing finds none, setting or removing one is
//!   NFS4ERR_PERM. In a sticky directory only its owner (or root) sets and removes them.
//! * **Access** (RFC 8276 section 8.4.5, ACCESS4_XAREAD/XAWRITE/XALIST): by the mode bits,
//!   reading and listing need read permission, setting and removing write permission, and a
//!   read-only export is NFS4ERR_ROFS for changes.
//! * **Durability.** SETXATTR and REMOVEXATTR reply after their commit, with the object's
//!   change attribute before and after (`change_info4`, atomic).

use bytes::Bytes;
use nfs_proto::nfs4::*;
use nfs_proto::xdr::Utf8String;

use crate::compound::Ctx;
use crate::store::{Inode, XattrSet};

use super::dir::{reply_budget, session_reply_limit, REPLY_RESERVE};

/// The mode bit that makes a directory sticky.
const S_ISVTX: u32 = 0o1000;

/// `LISTXATTRS4resok` without names: the cookie, the array length and `eof`.
const LIST_FIXED: usize = 8 + 4 + 4;

/// Names asked of the store at a time.
const BATCH: usize = 256;

/// NFS4ERR_NOTSUPP before minor version 2.
fn v42(ctx: &Ctx) -> Result<(), NfsStat4> {
    if ctx.session.minor >= 2 {
        Ok(())
    } else {
        Err(NfsStat4::NFS4ERR_NOTSUPP)
    }
}

/// True for the objects that carry user attributes.
fn holds_xattrs(inode: &Inode) -> bool {
    matches!(inode.ftype, NfsFtype4::NF4REG | NfsFtype4::NF4DIR)
}

/// The checks SETXATTR and REMOVEXATTR share: a writable export, an object that holds user
/// attributes, the sticky-directory rule and write permission.
fn check_change(ctx: &Ctx) -> Result<Inode, NfsStat4> {
    v42(ctx)?;
    ctx.writable()?;
    let inode = ctx.inode()?;
    if !holds_xattrs(&inode) {
        return Err(NfsStat4::NFS4ERR_PERM);
    }
    let owner = ctx.user.uid == 0 || ctx.user.uid == inode.uid;
    if inode.is_dir() && inode.mode & S_ISVTX != 0 && !owner {
        return Err(NfsStat4::NFS4ERR_PERM);
    }
    if ctx.allowed(&inode, ACCESS4_XAWRITE) == 0 {
        return Err(NfsStat4::NFS4ERR_ACCESS);
    }
    Ok(inode)
}

/// The current object, which the caller may read attributes of (`want`: XAREAD or XALIST).
fn check_read(ctx: &Ctx, want: u32) -> Result<Inode, NfsStat4> {
    v42(ctx)?;
    let inode = ctx.inode()?;
    if ctx.allowed(&inode, want) == 0 {
        return Err(NfsStat4::NFS4ERR_ACCESS);
    }
    Ok(inode)
}

fn getxattr_inner(ctx: &Ctx, a: &GetXattrArgs) -> Result<GetXattrResOk, NfsStat4> {
    let inode = check_read(ctx, ACCESS4_XAREAD)?;
    crate::store::check_xattr_name(a.gxa_name.as_bytes())?;
    if !holds_xattrs(&inode) {
        return Err(NfsStat4::NFS4ERR_NOXATTR);
    }
    let value = ctx
        .mds
        .store
        .get_xattr(inode.fileid, a.gxa_name.as_bytes())?;
    // The value must fit the session's replies (RFC 8881 section 2.10.6.4); values are at most
    // 64 KiB, so this only bites a session negotiated very small.
    if let Some(limit) = session_reply_limit(ctx) {
        if value.len() + 4 + REPLY_RESERVE > limit {
            return Err(NfsStat4::NFS4ERR_REP_TOO_BIG);
        }
    }
    Ok(GetXattrResOk { gxr_value: value })
}

/// GETXATTR (RFC 8276 section 8.4.1): NFS4ERR_NOXATTR when the object has no attribute of
/// that name.
pub fn getxattr(ctx: &mut Ctx, a: &GetXattrArgs) -> GetXattrRes {
    match getxattr_inner(ctx, a) {
        Ok(ok) => GetXattrRes::Ok(ok),
        Err(s) => GetXattrRes::Err(s),
    }
}

async fn setxattr_inner(ctx: &Ctx, a: &SetXattrArgs) -> Result<SetXattrResOk, NfsStat4> {
    let how = match a.sxa_option {
        SetxattrOption4::SETXATTR4_EITHER => XattrSet::Either,
        SetxattrOption4::SETXATTR4_CREATE => XattrSet::Create,
        SetxattrOption4::SETXATTR4_REPLACE => XattrSet::Replace,
        _ => return Err(NfsStat4::NFS4ERR_INVAL),
    };
    let inode = check_change(ctx)?;
    let value: Bytes = a.sxa_value.clone();
    let cinfo = ctx
        .mds
        .store
        .set_xattr(
            inode.fileid,
            a.sxa_key.as_bytes(),
            value,
            how,
            ctx.mds.wall_time(),
        )
        .await?;
    Ok(SetXattrResOk { sxr_info: cinfo })
}

/// SETXATTR (RFC 8276 section 8.4.2): SETXATTR4_CREATE on an existing name is NFS4ERR_EXIST,
/// SETXATTR4_REPLACE on a missing one NFS4ERR_NOXATTR; a value over 64 KiB is
/// NFS4ERR_XATTR2BIG.
pub async fn setxattr(ctx: &mut Ctx, a: &SetXattrArgs) -> SetXattrRes {
    match setxattr_inner(ctx, a).await {
        Ok(ok) => SetXattrRes::Ok(ok),
        Err(s) => SetXattrRes::Err(s),
    }
}

fn listxattrs_inner(ctx: &Ctx, a: &ListXattrsArgs) -> Result<ListXattrsResOk, NfsStat4> {
    let inode = check_read(ctx, ACCESS4_XALIST)?;
    let (limit, too_small) = reply_budget(ctx, a.lxa_maxcount, LIST_FIXED)?;
    if !holds_xattrs(&inode) {
        return Ok(ListXattrsResOk {
            lxr_cookie: a.lxa_cookie,
            lxr_names: Vec::new(),
            lxr_eof: true,
        });
    }
    let mut names = Vec::new();
    let mut size = LIST_FIXED;
    let mut cookie = a.lxa_cookie;
    let eof = 'fill: loop {
        let page = ctx.mds.store.list_xattrs(inode.fileid, cookie, BATCH)?;
        for n in page.names {
            let cost = 4 + n.name.len().next_multiple_of(4);
            if size + cost > limit {
                if names.is_empty() {
                    return Err(too_small);
                }
                break 'fill false;
            }
            size += cost;
            cookie = n.cookie;
            names.push(Utf8String(n.name));
        }
        if page.eof {
            break true;
        }
    };
    Ok(ListXattrsResOk {
        lxr_cookie: cookie,
        lxr_names: names,
        lxr_eof: eof,
    })
}

/// LISTXATTRS (RFC 8276 section 8.4.3): names in the order they were created, resuming after
/// `lxa_cookie` (0: from the start). `lxa_maxcount` bounds the whole `LISTXATTRS4resok` as the
/// Linux client computes it (cookie, array, names, eof), lowered to fit the session's reply
/// size; if not even one name fits, NFS4ERR_TOOSMALL. Cookies stay valid across calls, the
/// removal of their own name and restarts; one this server never issued is
/// NFS4ERR_BAD_COOKIE.
pub fn listxattrs(ctx: &mut Ctx, a: &ListXattrsArgs) -> ListXattrsRes {
    match listxattrs_inner(ctx, a) {
        Ok(ok) => ListXattrsRes::Ok(ok),
        Err(s) => ListXattrsRes::Err(s),
    }
}

async fn removexattr_inner(ctx: &Ctx, a: &RemoveXattrArgs) -> Result<RemoveXattrResOk, NfsStat4> {
    let inode = check_change(ctx)?;
    let cinfo = ctx
        .mds
        .store
        .remove_xattr(inode.fileid, a.rxa_name.as_bytes(), ctx.mds.wall_time())
        .await?;
    Ok(RemoveXattrResOk { rxr_info: cinfo })
}

/// REMOVEXATTR (RFC 8276 section 8.4.4): NFS4ERR_NOXATTR when there is no such attribute.
pub async fn removexattr(ctx: &mut Ctx, a: &RemoveXattrArgs) -> RemoveXattrRes {
    match removexattr_inner(ctx, a).await {
        Ok(ok) => RemoveXattrRes::Ok(ok),
        Err(s) => RemoveXattrRes::Err(s),
    }
}

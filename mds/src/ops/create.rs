//! CREATE (RFC 8881 section 18.4): directories, symbolic links, devices, sockets and FIFOs
//! (regular files are made by OPEN).

use super::dir::{current_dir, may_change_entries, S_ISGID};
use super::fh::check_component;
use super::setattr::to_setattrs;
use crate::compound::{Ctx, User};
use crate::store::{CreateSpec, Inode, NewObject, SetAttrs};
use nfs_proto::nfs4::*;

/// The store's description of what CREATE makes (NF4REG and the named-attribute types are
/// NFS4ERR_BADTYPE: regular files are made by OPEN). A symlink target must be UTF-8
/// (NFS4ERR_INVAL otherwise, RFC 8881 section 14.4).
pub(super) fn new_object(t: &Createtype4) -> Result<NewObject, NfsStat4> {
    Ok(match t {
        Createtype4::Dir => NewObject::Directory,
        Createtype4::Lnk(target) => {
            if target.as_str().is_none() {
                return Err(NfsStat4::NFS4ERR_INVAL);
            }
            NewObject::Symlink(target.0.clone())
        }
        Createtype4::Blk(d) => NewObject::BlockDevice(*d),
        Createtype4::Chr(d) => NewObject::CharDevice(*d),
        Createtype4::Sock => NewObject::Socket,
        Createtype4::Fifo => NewObject::Fifo,
        Createtype4::Other(_) => return Err(NfsStat4::NFS4ERR_BADTYPE),
    })
}

/// The mode a new object gets when the client sends none.
fn default_mode(o: &NewObject) -> u32 {
    match o {
        NewObject::Directory => 0o755,
        // As `symlink(2)`: a link's own mode is never checked.
        NewObject::Symlink(_) => 0o777,
        _ => 0o644,
    }
}

/// Initial owner, group and mode of a new object: the caller's ids unless given (only root may
/// give another owner, and a group the caller is not in; NFS4ERR_PERM otherwise), the parent's
/// group in a set-group-id directory, whose new subdirectories keep the bit.
pub(super) fn initial_ids(
    user: &User,
    parent: &Inode,
    object: &NewObject,
    s: &SetAttrs,
) -> Result<(u32, u32, u32), NfsStat4> {
    let sgid = parent.mode & S_ISGID != 0;
    let uid = s.uid.unwrap_or(user.uid);
    if uid != user.uid && user.uid != 0 {
        return Err(NfsStat4::NFS4ERR_PERM);
    }
    let default_gid = if sgid { parent.gid } else { user.gid };
    let gid = s.gid.unwrap_or(default_gid);
    if gid != default_gid && user.uid != 0 && !user.in_group(gid) {
        return Err(NfsStat4::NFS4ERR_PERM);
    }
    let mut mode = s.mode.unwrap_or_else(|| default_mode(object));
    if sgid && *object == NewObject::Directory {
        mode |= S_ISGID;
    }
    Ok((uid, gid, mode))
}

/// CREATE (RFC 8881 section 18.4): makes a directory, symbolic link, device, socket or FIFO
/// in the current directory, with the initial attributes given (mode, owner, group, times;
/// `attrset` lists them), and makes it the current filehandle.
pub async fn create(ctx: &mut Ctx, a: &CreateArgs) -> Result<CreateResOk, NfsStat4> {
    let (fh, dir) = current_dir(ctx)?;
    let object = new_object(&a.objtype)?;
    let name = check_component(&a.objname)?;
    let (attrs, attrset) = to_setattrs(&a.createattrs)?;
    if attrs.size.is_some() {
        // No object CREATE makes has a size a client could set.
        return Err(NfsStat4::NFS4ERR_INVAL);
    }
    ctx.writable()?;
    may_change_entries(ctx, &dir)?;
    let (uid, gid, mode) = initial_ids(&ctx.user, &dir, &object, &attrs)?;
    let spec = CreateSpec {
        object,
        mode,
        uid,
        gid,
    };
    let now = ctx.mds.wall_time();
    let created = ctx.mds.store().create(dir.fileid, name, spec, now).await?;
    let mut inode = created.inode;
    if attrs.atime.is_some() || attrs.mtime.is_some() {
        // A second commit: a crash between the two leaves the object with server times.
        let times = SetAttrs {
            atime: attrs.atime,
            mtime: attrs.mtime,
            ..SetAttrs::default()
        };
        inode = ctx
            .mds
            .store()
            .setattr(inode.fileid, times, now)
            .await?
            .inode;
    }
    ctx.set_fh(fh.export, &inode);
    Ok(CreateResOk {
        cinfo: created.cinfo,
        attrset,
    })
}

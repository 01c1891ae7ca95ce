//! Extended attributes (RFC 8276): what GETXATTR, SETXATTR, LISTXATTRS and REMOVEXATTR (a file
//! each) share, over the
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

use crate::compound::Ctx;
use crate::store::Inode;
use nfs_proto::nfs4::*;

/// The mode bit that makes a directory sticky.
const S_ISVTX: u32 = 0o1000;

/// NFS4ERR_NOTSUPP before minor version 2.
fn v42(ctx: &Ctx) -> Result<(), NfsStat4> {
    if ctx.session.minor >= 2 {
        Ok(())
    } else {
        Err(NfsStat4::NFS4ERR_NOTSUPP)
    }
}

/// True for the objects that carry user attributes.
pub(super) fn holds_xattrs(inode: &Inode) -> bool {
    matches!(inode.ftype, NfsFtype4::NF4REG | NfsFtype4::NF4DIR)
}

/// The checks SETXATTR and REMOVEXATTR share: a writable export, an object that holds user
/// attributes, the sticky-directory rule and write permission.
pub(super) fn check_change(ctx: &Ctx) -> Result<Inode, NfsStat4> {
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
pub(super) fn check_read(ctx: &Ctx, want: u32) -> Result<Inode, NfsStat4> {
    v42(ctx)?;
    let inode = ctx.inode()?;
    if ctx.allowed(&inode, want) == 0 {
        return Err(NfsStat4::NFS4ERR_ACCESS);
    }
    Ok(inode)
}

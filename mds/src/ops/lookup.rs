//! LOOKUP (RFC 8881 section 18.13), across export junctions and the pseudo file system.

use super::fh::check_component;
use crate::compound::exports::Place;
use crate::compound::Ctx;
use nfs_proto::nfs4::*;
use nfs_proto::xdr::Utf8String;

pub(super) fn lookup_name(ctx: &mut Ctx, name: &Utf8String) -> Result<(), NfsStat4> {
    let dir = ctx.dir()?;
    let name = check_component(name)?;
    if ctx.allowed(&dir, ACCESS4_LOOKUP) == 0 {
        return Err(NfsStat4::NFS4ERR_ACCESS);
    }
    if let Some(at) = ctx.place() {
        // A pseudo entry or a junction: cross into it.
        let s = std::str::from_utf8(name).map_err(|_| NfsStat4::NFS4ERR_INVAL)?;
        if let Some(to) = ctx.mds.exports().child(at, s) {
            if let Place::Pseudo(_) = to {
                if !ctx.mds.exports().admits(to, ctx.session.conn.peer().ip()) {
                    return Err(NfsStat4::NFS4ERR_NOENT);
                }
            }
            return ctx.set_place(to);
        }
        if let Place::Pseudo(_) = at {
            return Err(NfsStat4::NFS4ERR_NOENT);
        }
    }
    let inode = ctx.mds.store().lookup(dir.fileid, name)?;
    let export = ctx.fh()?.export;
    ctx.set_fh(export, &inode);
    Ok(())
}

/// LOOKUP (RFC 8881 section 18.15).
pub fn lookup(ctx: &mut Ctx, a: &LookupArgs) -> LookupRes {
    LookupRes {
        status: lookup_name(ctx, &a.objname)
            .err()
            .unwrap_or(NfsStat4::NFS4_OK),
    }
}

//! Filehandle and name operations: PUTROOTFH, PUTFH, GETFH, SAVEFH, RESTOREFH, LOOKUP,
//! LOOKUPP, SECINFO, SECINFO_NO_NAME.
//!
//! The root is the root of the joined tree (see [`crate::compound::exports`]): the export at `/`, or a
//! pseudo node above the exports. LOOKUP and LOOKUPP cross between file systems at pseudo
//! nodes and export roots, entering each export's access rule on the way.

use nfs_proto::nfs4::*;
use nfs_proto::xdr::Utf8String;

use crate::compound::{Ctx, Fh};
use crate::compound::exports::{Place, PSEUDO_EXPORT};
use crate::store::FhKind;
use nfs_server::io::secinfo_flavors;

/// A name from the wire, checked as RFC 8881 section 14.4 asks: UTF-8, not empty, no `/`.
pub fn check_component(name: &Utf8String) -> Result<&[u8], NfsStat4> {
    let s = name.as_str().ok_or(NfsStat4::NFS4ERR_INVAL)?;
    if s.is_empty() {
        return Err(NfsStat4::NFS4ERR_INVAL);
    }
    if s.len() > crate::store::MAX_NAME_LEN {
        return Err(NfsStat4::NFS4ERR_NAMETOOLONG);
    }
    if s == "." || s == ".." || s.contains('/') || s.contains('\0') {
        return Err(NfsStat4::NFS4ERR_BADNAME);
    }
    Ok(name.as_bytes())
}

/// PUTROOTFH (RFC 8881 section 18.21).
pub fn putrootfh(ctx: &mut Ctx) -> PutRootFhRes {
    let root = ctx.mds.exports.root();
    PutRootFhRes {
        status: ctx.set_place(root).err().unwrap_or(NfsStat4::NFS4_OK),
    }
}

/// PUTFH (RFC 8881 section 18.19): a forged handle is BADHANDLE, a deleted object STALE. A
/// file whose last name went while open (link count 0) is still there for its holders,
/// until it is being deleted.
pub fn putfh(ctx: &mut Ctx, a: &PutFhArgs) -> PutFhRes {
    let status = (|| {
        let d = ctx.mds.store.fh_codec().decode(&a.object)?;
        if d.kind == FhKind::Pseudo {
            // A pseudo node of another config is gone: STALE, as a removed file.
            let node = (d.export == PSEUDO_EXPORT)
                .then(|| ctx.mds.exports.pseudo_by_fileid(d.fileid))
                .flatten()
                .ok_or(NfsStat4::NFS4ERR_STALE)?;
            return ctx.set_place(Place::Pseudo(node));
        }
        if ctx.mds.exports.get(d.export).is_none() {
            return Err(NfsStat4::NFS4ERR_STALE);
        }
        let inode = ctx.mds.store.getattr_checked(d.fileid, d.generation)?;
        if inode.nlink == 0
            && !inode.is_dir()
            && ctx
                .mds
                .opens
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .orphan_is_reaping(inode.fileid)
        {
            return Err(NfsStat4::NFS4ERR_STALE);
        }
        ctx.enter(d.export)?;
        ctx.set_fh(d.export, &inode);
        Ok(())
    })()
    .err()
    .unwrap_or(NfsStat4::NFS4_OK);
    PutFhRes { status }
}

/// GETFH (RFC 8881 section 18.8).
pub fn getfh(ctx: &mut Ctx) -> GetFhRes {
    match ctx.fh() {
        Ok(fh) => GetFhRes::Ok(GetFhResOk {
            object: encode_fh(ctx, fh),
        }),
        Err(s) => GetFhRes::Err(s),
    }
}

/// The wire handle of a resolved one.
pub fn encode_fh(ctx: &Ctx, fh: Fh) -> NfsFh4 {
    let kind = if fh.export == PSEUDO_EXPORT {
        FhKind::Pseudo
    } else {
        FhKind::Object
    };
    ctx.mds
        .store
        .fh_codec()
        .encode_kind(kind, fh.export, fh.fileid, fh.generation)
}

/// SAVEFH (RFC 8881 section 18.31).
pub fn savefh(ctx: &mut Ctx) -> SaveFhRes {
    let status = match ctx.fh() {
        Ok(fh) => {
            ctx.sfh = Some(fh);
            ctx.sstateid = ctx.cstateid;
            NfsStat4::NFS4_OK
        }
        Err(s) => s,
    };
    SaveFhRes { status }
}

/// RESTOREFH (RFC 8881 section 18.27).
pub fn restorefh(ctx: &mut Ctx) -> RestoreFhRes {
    let status = match ctx.sfh {
        Some(fh) => match ctx.enter(fh.export) {
            Ok(()) => {
                ctx.cfh = Some(fh);
                ctx.cstateid = ctx.sstateid;
                NfsStat4::NFS4_OK
            }
            Err(s) => s,
        },
        None => NfsStat4::NFS4ERR_RESTOREFH,
    };
    RestoreFhRes { status }
}

fn lookup_name(ctx: &mut Ctx, name: &Utf8String) -> Result<(), NfsStat4> {
    let dir = ctx.dir()?;
    let name = check_component(name)?;
    if ctx.allowed(&dir, ACCESS4_LOOKUP) == 0 {
        return Err(NfsStat4::NFS4ERR_ACCESS);
    }
    if let Some(at) = ctx.place() {
        // A pseudo entry or a junction: cross into it.
        let s = std::str::from_utf8(name).map_err(|_| NfsStat4::NFS4ERR_INVAL)?;
        if let Some(to) = ctx.mds.exports.child(at, s) {
            if let Place::Pseudo(_) = to {
                if !ctx.mds.exports.admits(to, ctx.session.conn.peer().ip()) {
                    return Err(NfsStat4::NFS4ERR_NOENT);
                }
            }
            return ctx.set_place(to);
        }
        if let Place::Pseudo(_) = at {
            return Err(NfsStat4::NFS4ERR_NOENT);
        }
    }
    let inode = ctx.mds.store.lookup(dir.fileid, name)?;
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

/// LOOKUPP (RFC 8881 section 18.14): from an export's root to the place it is grafted on;
/// above the root of the joined tree there is nothing (NOENT).
pub fn lookupp(ctx: &mut Ctx) -> LookupPRes {
    let status = (|| {
        let dir = ctx.dir()?;
        if let Some(at) = ctx.place() {
            let up = ctx.mds.exports.parent(at).ok_or(NfsStat4::NFS4ERR_NOENT)?;
            return ctx.set_place(up);
        }
        let export = ctx.fh()?.export;
        let parent = ctx.mds.store.lookupp(dir.fileid)?;
        ctx.set_fh(export, &parent);
        Ok(())
    })()
    .err()
    .unwrap_or(NfsStat4::NFS4_OK);
    LookupPRes { status }
}

/// SECINFO (RFC 8881 section 18.29): consumes the current filehandle.
pub fn secinfo(ctx: &mut Ctx, a: &SecInfoArgs) -> SecInfoRes {
    let saved = ctx.cfh;
    match lookup_name(ctx, &a.name) {
        Ok(()) => {
            ctx.cfh = None;
            SecInfoRes::Ok(secinfo_flavors())
        }
        Err(s) => {
            ctx.cfh = saved;
            SecInfoRes::Err(s)
        }
    }
}

/// SECINFO_NO_NAME (RFC 8881 section 18.45): consumes the current filehandle.
pub fn secinfo_no_name(ctx: &mut Ctx, a: &SecInfoNoNameArgs) -> SecInfoNoNameRes {
    if let Err(s) = ctx.fh() {
        return SecInfoRes::Err(s);
    }
    if *a == SecinfoStyle4::SECINFO_STYLE4_PARENT {
        let r = lookupp(ctx);
        if !r.status.is_ok() {
            return SecInfoRes::Err(r.status);
        }
    }
    ctx.cfh = None;
    SecInfoRes::Ok(secinfo_flavors())
}

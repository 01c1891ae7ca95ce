//! Filehandle and name operations: PUTROOTFH, PUTFH, GETFH, SAVEFH, RESTOREFH, LOOKUP,
//! LOOKUPP, SECINFO, SECINFO_NO_NAME.
//!
//! The pseudo-root is the root of the export whose pseudo path is `/` (the all-in-one
//! default); a pseudo file system joining several exports is not built yet.

use nfs_proto::nfs4::*;
use nfs_proto::xdr::Utf8String;

use crate::compound::{Ctx, Fh};
use crate::store::{FhKind, Inode};

/// The root of the export clients see at `/`.
pub fn export_root(ctx: &Ctx) -> Result<(u16, Inode), NfsStat4> {
    let export = ctx
        .mds
        .cfg
        .exports
        .iter()
        .find(|e| crate::config::normalize(&e.pseudo) == "/")
        .or(ctx.mds.cfg.exports.first())
        .ok_or(NfsStat4::NFS4ERR_NOENT)?;
    let mut inode = ctx.mds.store.root()?;
    for name in export.path.split('/').filter(|c| !c.is_empty()) {
        inode = ctx.mds.store.lookup(inode.fileid, name.as_bytes())?;
    }
    Ok((export.id, inode))
}

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
    let status = match export_root(ctx) {
        Ok((export, inode)) => {
            ctx.set_fh(export, &inode);
            NfsStat4::NFS4_OK
        }
        Err(s) => s,
    };
    PutRootFhRes { status }
}

/// PUTFH (RFC 8881 section 18.19): a forged handle is BADHANDLE, a deleted object STALE. A
/// file whose last name went while open (link count 0) is still there for its holders,
/// until it is being deleted.
pub fn putfh(ctx: &mut Ctx, a: &PutFhArgs) -> PutFhRes {
    let status = (|| {
        let d = ctx.mds.store.fh_codec().decode(&a.object)?;
        if d.kind != FhKind::Object || !ctx.mds.cfg.exports.iter().any(|e| e.id == d.export) {
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
    ctx.mds
        .store
        .fh_codec()
        .encode(fh.export, fh.fileid, fh.generation)
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
        Some(fh) => {
            ctx.cfh = Some(fh);
            ctx.cstateid = ctx.sstateid;
            NfsStat4::NFS4_OK
        }
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

/// LOOKUPP (RFC 8881 section 18.14): above an export's root there is nothing (NOENT).
pub fn lookupp(ctx: &mut Ctx) -> LookupPRes {
    let status = (|| {
        let dir = ctx.dir()?;
        let (export, root) = export_root(ctx)?;
        if dir.fileid == root.fileid {
            return Err(NfsStat4::NFS4ERR_NOENT);
        }
        let parent = ctx.mds.store.lookupp(dir.fileid)?;
        ctx.set_fh(export, &parent);
        Ok(())
    })()
    .err()
    .unwrap_or(NfsStat4::NFS4_OK);
    LookupPRes { status }
}

/// The flavors this server accepts, most preferred first.
fn flavors() -> Vec<Secinfo4> {
    vec![
        Secinfo4::Flavor(1 /* AUTH_SYS */),
        Secinfo4::Flavor(0 /* AUTH_NONE */),
    ]
}

/// SECINFO (RFC 8881 section 18.29): consumes the current filehandle.
pub fn secinfo(ctx: &mut Ctx, a: &SecInfoArgs) -> SecInfoRes {
    let saved = ctx.cfh;
    match lookup_name(ctx, &a.name) {
        Ok(()) => {
            ctx.cfh = None;
            SecInfoRes::Ok(flavors())
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
    SecInfoRes::Ok(flavors())
}

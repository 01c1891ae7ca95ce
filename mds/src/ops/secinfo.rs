//! SECINFO and SECINFO_NO_NAME (RFC 8881 sections 18.29 and 18.45).

use super::lookup::lookup_name;
use super::lookupp::lookupp;
use crate::compound::Ctx;
use nfs_proto::nfs4::*;
use nfs_server::io::secinfo_flavors;

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

//! RESTOREFH (RFC 8881 section 18.27).

use crate::compound::Ctx;
use nfs_proto::nfs4::*;

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

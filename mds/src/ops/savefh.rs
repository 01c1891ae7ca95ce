//! SAVEFH (RFC 8881 section 18.28).

use crate::compound::Ctx;
use nfs_proto::nfs4::*;

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

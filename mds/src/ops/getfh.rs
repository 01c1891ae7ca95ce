//! GETFH (RFC 8881 section 18.8).

use super::fh::encode_fh;
use crate::compound::Ctx;
use nfs_proto::nfs4::*;

/// GETFH (RFC 8881 section 18.8).
pub fn getfh(ctx: &mut Ctx) -> GetFhRes {
    match ctx.fh() {
        Ok(fh) => GetFhRes::Ok(GetFhResOk {
            object: encode_fh(ctx, fh),
        }),
        Err(s) => GetFhRes::Err(s),
    }
}

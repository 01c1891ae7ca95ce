//! ACCESS (RFC 8881 section 18.1).

use crate::compound::Ctx;
use nfs_proto::nfs4::*;

/// ACCESS (RFC 8881 section 18.1; in minor version 2 also the xattr bits of RFC 8276 section
/// 8.4.5).
pub fn access(ctx: &mut Ctx, a: &AccessArgs) -> AccessRes {
    match ctx.inode() {
        Ok(inode) => {
            let mut known = ACCESS4_READ
                | ACCESS4_LOOKUP
                | ACCESS4_MODIFY
                | ACCESS4_EXTEND
                | ACCESS4_DELETE
                | ACCESS4_EXECUTE;
            if ctx.session.minor >= 2 {
                // The Linux client asks for these once `xattr_support` is true, and refuses
                // setxattr(2) unless XAWRITE is granted.
                known |= ACCESS4_XAREAD | ACCESS4_XAWRITE | ACCESS4_XALIST;
            }
            let supported = a.access & known;
            let mut access = ctx.allowed(&inode, supported);
            if ctx.read_only {
                access &= !(ACCESS4_MODIFY | ACCESS4_EXTEND | ACCESS4_DELETE | ACCESS4_XAWRITE);
            }
            AccessRes::Ok(AccessResOk { supported, access })
        }
        Err(s) => AccessRes::Err(s),
    }
}

//! COPY_NOTIFY (RFC 7862 section 15.3): inter-server copies are not offered.

use crate::compound::Ctx;
use nfs_proto::nfs4::*;

/// COPY_NOTIFY (RFC 7862 section 15.3): only for inter-server copies, which this server
/// does not offer, so NFS4ERR_NOTSUPP (as knfsd without inter-server copy).
pub fn copy_notify(ctx: &mut Ctx) -> CopyNotifyRes {
    match ctx.client().and_then(|_| ctx.fh()) {
        Ok(_) => CopyNotifyRes::Err(NfsStat4::NFS4ERR_NOTSUPP),
        Err(s) => CopyNotifyRes::Err(s),
    }
}

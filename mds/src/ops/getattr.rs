//! GETATTR (RFC 8881 section 18.7); the attribute values come from `attr`.

use super::attr::{file_attrs, supported_mask, wants_size};
use crate::compound::Ctx;
use nfs_proto::nfs4::attr::*;
use nfs_proto::nfs4::*;

/// GETATTR (RFC 8881 section 18.7). While another client holds an RW layout of the file
/// and has not LAYOUTCOMMITted since it was granted, its size is asked of the data servers:
/// writes through layouts reach the MDS only at LAYOUTCOMMIT (RFC 8881 section 12.5.4),
/// and another client must not see a stale size meanwhile. The asker's own writes are its
/// to report first (`Ctx::sized_attrs`).
pub async fn getattr(ctx: &mut Ctx, a: &GetAttrArgs) -> GetAttrRes {
    let r = async {
        let fh = ctx.fh()?;
        let mut inode = ctx.inode()?;
        if wants_size(&a.attr_request) {
            let space = a.attr_request.contains(FATTR4_SPACE_USED);
            inode = ctx.sized_attrs(inode, space).await;
        }
        let mut attrs = file_attrs(ctx, &inode, fh.export, &a.attr_request);
        // Another client's write delegation may hide a newer size and change (RFC 8881
        // section 10.4.3): asked with CB_GETATTR.
        if inode.ftype == NfsFtype4::NF4REG
            && (wants_size(&a.attr_request) || a.attr_request.contains(attr::FATTR4_CHANGE))
        {
            let clientid = ctx.client()?;
            let presented = crate::state::recall::holder_attrs(
                ctx.mds.tables(),
                ctx.mds.core(),
                inode.fileid,
                clientid,
                inode.change,
            )
            .await?;
            if let Some(p) = presented {
                attrs.size = attrs.size.map(|_| p.size);
                attrs.change = attrs.change.map(|_| p.change);
            }
        }
        let want = a.attr_request.intersect(&supported_mask(ctx.session.minor));
        Ok(GetAttrResOk {
            obj_attributes: attrs.to_fattr(&want),
        })
    }
    .await;
    match r {
        Ok(ok) => GetAttrRes::Ok(ok),
        Err(s) => GetAttrRes::Err(s),
    }
}

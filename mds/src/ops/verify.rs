//! VERIFY and NVERIFY (RFC 8881 sections 18.31 and 18.15).

use super::attr::{file_attrs, supported_mask, wants_size};
use crate::compound::Ctx;
use nfs_proto::nfs4::attr::*;
use nfs_proto::nfs4::*;

/// VERIFY (`same == true`) and NVERIFY (RFC 8881 sections 18.31, 18.15): compares the given
/// values with the object's, byte for byte in XDR, the size as GETATTR reports it.
pub async fn verify(ctx: &mut Ctx, f: &Fattr4, same: bool) -> NfsStat4 {
    let r = async {
        let fh = ctx.fh()?;
        let inode = ctx.inode()?;
        let given = FileAttrs::from_fattr(f).map_err(NfsStat4::from)?;
        let mask = given.mask();
        if mask.contains(FATTR4_RDATTR_ERROR) {
            return Err(NfsStat4::NFS4ERR_INVAL);
        }
        let supported = supported_mask(ctx.session.minor);
        for bit in mask.iter() {
            if !supported.contains(bit) {
                return Err(NfsStat4::NFS4ERR_ATTRNOTSUPP);
            }
        }
        let inode = if wants_size(&mask) {
            ctx.sized_attrs(inode, mask.contains(FATTR4_SPACE_USED))
                .await
        } else {
            inode
        };
        let ours = file_attrs(ctx, &inode, fh.export, &mask).to_fattr_exact(&f.attrmask);
        Ok(ours.attr_vals == f.attr_vals)
    }
    .await;
    match r {
        Err(s) => s,
        Ok(equal) if equal == same => NfsStat4::NFS4_OK,
        Ok(_) if same => NfsStat4::NFS4ERR_NOT_SAME,
        Ok(_) => NfsStat4::NFS4ERR_SAME,
    }
}

//! LAYOUTSTATS (RFC 7862 section 15.7): a client's I/O statistics of one device under a layout.

use crate::compound::Ctx;
use crate::pnfs::reports::device_server;
use nfs_proto::nfs4::layout_flex::FfLayoutupdate4;
use nfs_proto::nfs4::*;

use super::layouterror::check_layout;

/// LAYOUTSTATS (RFC 7862 section 15.7): taken under a layout stateid of this client and the
/// current file. A flex files update (`ff_layoutupdate4`, RFC 8435 section 9.2.2) becomes the
/// latest figures of the data server its device names (`pnfs_ds_reported_*` on the metrics
/// page); one that does not decode is NFS4ERR_BADXDR. The file layout type has no update
/// body, and the counts of `lsa_read`/`lsa_write` alone say nothing of a data server, so a
/// file layout's statistics are only checked.
pub fn layoutstats(ctx: &mut Ctx, a: &LayoutStatsArgs) -> LayoutStatsRes {
    LayoutStatsRes {
        status: match layoutstats_inner(ctx, a) {
            Ok(()) => NfsStat4::NFS4_OK,
            Err(s) => s,
        },
    }
}

fn layoutstats_inner(ctx: &mut Ctx, a: &LayoutStatsArgs) -> Result<(), NfsStat4> {
    check_layout(ctx, &a.lsa_stateid)?;
    match a.lsa_layoutupdate.lou_type {
        Layouttype4::LAYOUT4_FLEX_FILES => {
            let u = FfLayoutupdate4::from_update(&a.lsa_layoutupdate)
                .map_err(|_| NfsStat4::NFS4ERR_BADXDR)?;
            if let Some(ds) = device_server(&ctx.mds, &a.lsa_deviceid) {
                ctx.mds.pnfs().reports().stats(ds, &u);
            }
            Ok(())
        }
        Layouttype4::LAYOUT4_NFSV4_1_FILES => Ok(()),
        _ => Err(NfsStat4::NFS4ERR_UNKNOWN_LAYOUTTYPE),
    }
}

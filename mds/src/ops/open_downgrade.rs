//! OPEN_DOWNGRADE (RFC 8881 section 18.18): narrows an open's share access and deny modes.

use super::open::current;
use crate::compound::Ctx;
use nfs_proto::nfs4::*;

/// OPEN_DOWNGRADE (RFC 8881 section 18.18).
///
/// The data servers of a striped file learn the narrower access before the reply. The MDS's
/// downgrade is done by then, so a data server that fails the push does not change the
/// answer (a retried downgrade would be `NFS4ERR_OLD_STATEID`): the registry marks it down
/// and brings it up to date before it is up again ([`crate::pnfs::devices`]).
pub async fn open_downgrade(ctx: &mut Ctx, a: &OpenDowngradeArgs) -> OpenDowngradeRes {
    let r = (|| {
        let clientid = ctx.client()?;
        let fileid = ctx.fh()?.fileid;
        let stateid = current(ctx, &a.open_stateid)?;
        let mut opens = ctx.mds.tables().opens();
        let old = opens.open_modes(clientid, &stateid).ok().map(|m| m.0);
        let out = opens.open_downgrade(clientid, fileid, &stateid, a.share_access, a.share_deny)?;
        Ok::<_, NfsStat4>((out, fileid, old != Some(a.share_access)))
    })();
    let r = match r {
        Ok((out, fileid, changed)) => {
            if changed {
                // Failure: logged and handled by the registry (see above).
                let _ = crate::pnfs::fencing::push_access(
                    ctx.mds.store(),
                    ctx.mds.tables(),
                    ctx.mds.pnfs(),
                    fileid,
                    &out.other,
                )
                .await;
            }
            Ok(out)
        }
        Err(s) => Err(s),
    };
    match r {
        Ok(open_stateid) => {
            ctx.cstateid = Some(open_stateid);
            OpenDowngradeRes::Ok(OpenDowngradeResOk { open_stateid })
        }
        Err(s) => OpenDowngradeRes::Err(s),
    }
}

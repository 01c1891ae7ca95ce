//! CLOSE (RFC 8881 section 18.2): releases an open's share reservation; the open stateid is
//! retired, and the client's layouts of the file go when it holds nothing else there.

use super::open::{current, drop_layouts_if_done, refuse_on_data_servers};
use crate::compound::Ctx;
use nfs_proto::nfs4::*;

/// CLOSE (RFC 8881 section 18.2). A file whose last name was removed while open is still
/// there (an orphan) and is closed as any other; its last CLOSE deletes it.
pub fn close(ctx: &mut Ctx, a: &CloseArgs) -> CloseRes {
    let r = (|| {
        let clientid = ctx.client()?;
        let fileid = ctx.fh()?.fileid;
        let stateid = current(ctx, &a.open_stateid)?;
        let (out, closed) = {
            let mut opens = ctx.mds.tables().opens();
            let mut closed = opens.lock_stateids(&stateid.other);
            let out = opens.close(clientid, fileid, &stateid)?;
            closed.push(stateid.other);
            (out, closed)
        };
        // A data server cannot tell that the stateids are gone: it refuses them from now on
        // (RFC 8881 section 13.9.1), batched in the background.
        refuse_on_data_servers(ctx, fileid, closed);
        drop_layouts_if_done(ctx.mds.tables(), clientid, fileid);
        ctx.mds.pnfs().settler().layouts_gone(fileid);
        Ok::<_, NfsStat4>(out)
    })();
    match r {
        Ok(stateid) => {
            ctx.cstateid = Some(stateid);
            // A file whose last name went while open is deleted when its last open goes.
            super::dir::reap_released(&ctx.mds);
            CloseRes::Ok(stateid)
        }
        Err(s) => CloseRes::Err(s),
    }
}

//! DELEGRETURN (RFC 8881 section 18.6): a client gives a delegation back (answering a recall,
//! or of its own accord).

use super::open::{current, drop_layouts_if_done, refuse_on_data_servers};
use crate::compound::Ctx;
use nfs_proto::nfs4::*;

/// DELEGRETURN (RFC 8881 section 18.6): the client gives a delegation back (on recall, or
/// of its own accord); operations waiting for it go on at their next retry. The data servers
/// of a striped file refuse the stateid from now on.
pub fn delegreturn(ctx: &mut Ctx, a: &DelegReturnArgs) -> DelegReturnRes {
    let status = (|| {
        let clientid = ctx.client()?;
        let fileid = ctx.fh()?.fileid;
        let stateid = current(ctx, &a.deleg_stateid)?;
        ctx.mds
            .tables()
            .opens()
            .delegs
            .delegreturn(clientid, fileid, &stateid)?;
        refuse_on_data_servers(ctx, fileid, [stateid.other]);
        drop_layouts_if_done(ctx.mds.tables(), clientid, fileid);
        Ok::<_, NfsStat4>(())
    })()
    .err()
    .unwrap_or(NfsStat4::NFS4_OK);
    DelegReturnRes { status }
}

//! FREE_STATEID (RFC 8881 section 18.38): frees a lock stateid without locks, or a revoked
//! delegation's or layout's stateid.

use super::open::{current, refuse_on_data_servers};
use crate::compound::Ctx;
use nfs_proto::nfs4::*;

/// FREE_STATEID (RFC 8881 section 18.38): needs no filehandle.
pub fn free_stateid(ctx: &mut Ctx, a: &FreeStateidArgs) -> FreeStateidRes {
    let status = (|| {
        let clientid = ctx.client()?;
        let stateid = current(ctx, &a.fsa_stateid)?;
        let file = {
            let mut opens = ctx.mds.tables().opens();
            let file = opens.file_of(&stateid.other);
            opens.free_stateid(clientid, &stateid)?;
            file
        };
        // A freed lock stateid is refused by the data servers too (a revoked one already is).
        if let Some(f) = file {
            refuse_on_data_servers(ctx, f, [stateid.other]);
        }
        Ok::<_, NfsStat4>(())
    })()
    .err()
    .unwrap_or(NfsStat4::NFS4_OK);
    FreeStateidRes { status }
}

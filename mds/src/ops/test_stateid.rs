//! TEST_STATEID (RFC 8881 section 18.48): says of each stateid whether the client may still use it.

use crate::compound::Ctx;
use nfs_proto::nfs4::*;

/// TEST_STATEID (RFC 8881 section 18.48): needs no filehandle; special stateids (including
/// the current-stateid value) are reported as NFS4ERR_BAD_STATEID, not substituted.
pub fn test_stateid(ctx: &mut Ctx, a: &TestStateidArgs) -> TestStateidRes {
    match ctx.client() {
        Ok(clientid) => TestStateidRes::Ok(TestStateidResOk {
            tsr_status_codes: ctx
                .mds
                .tables()
                .opens()
                .test_stateid(clientid, &a.ts_stateids),
        }),
        Err(s) => TestStateidRes::Err(s),
    }
}

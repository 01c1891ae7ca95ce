//! OFFLOAD_STATUS (RFC 7862 section 15.9): how far an asynchronous copy has come.

use crate::compound::Ctx;
use crate::state::copies::Outcome;
use nfs_proto::nfs4::*;

/// OFFLOAD_STATUS (RFC 7862 section 15.9): bytes done so far, and the final status once the
/// copy finished.
pub fn offload_status(ctx: &mut Ctx, a: &OffloadStatusArgs) -> OffloadStatusRes {
    let job = match ctx
        .client()
        .and_then(|c| ctx.mds.copies().find(c, &a.osa_stateid))
    {
        Ok(j) => j,
        Err(s) => return OffloadStatusRes::Err(s),
    };
    let (count, complete) = match job.outcome() {
        Some(Outcome::Done(w)) => (w.wr_count, vec![NfsStat4::NFS4_OK]),
        Some(Outcome::Failed { status, copied }) => (copied, vec![status]),
        None => (
            job.progress.load(std::sync::atomic::Ordering::Relaxed),
            Vec::new(),
        ),
    };
    OffloadStatusRes::Ok(OffloadStatusResOk {
        osr_count: count,
        osr_complete: complete,
    })
}

//! REMOVE (RFC 8881 section 18.25): unlinks a name; a file's last link takes its data with it
//! (through the removals queue for striped files), unless it is still open.

use super::dir::{
    after_unlink, break_delegations, check_sticky, current_dir, may_change_entries, UnlinkDecision,
};
use super::fh::check_component;
use crate::compound::Ctx;
use nfs_proto::nfs4::*;

/// REMOVE (RFC 8881 section 18.25): removes `target` from the current directory (an empty
/// directory, or any other object; NFS4ERR_NOTEMPTY for a directory with entries). When that
/// was a regular file's last name, the file goes now, or when its last open goes if it is
/// open (section 18.25.4 lets the server keep an open file until then).
pub async fn remove(ctx: &mut Ctx, a: &RemoveArgs) -> Result<ChangeInfo4, NfsStat4> {
    let (_, dir) = current_dir(ctx)?;
    let name = check_component(&a.target)?;
    ctx.writable()?;
    may_change_entries(ctx, &dir)?;
    if let Some(target) = check_sticky(ctx, &dir, name)? {
        break_delegations(ctx, &target)?;
    }
    // Its data servers' objects may be queued for removal in the REMOVE's own transaction
    // only when that transaction is durable as it returns: the removal task must not act on
    // a deferred commit a crash could take back with the name.
    let deciding = ctx.jobs_durable().then(|| UnlinkDecision::new(&ctx.mds));
    let unopened = deciding.as_ref().map(UnlinkDecision::job);
    let removed = ctx
        .mds
        .store()
        .remove(dir.fileid, name, ctx.mds.wall_time(), unopened)
        .await;
    let removed = match removed {
        Ok(r) => r,
        Err(e) => {
            if let Some(d) = deciding {
                d.failed(&ctx.mds);
            }
            return Err(e.into());
        }
    };
    after_unlink(ctx, &removed);
    Ok(removed.cinfo)
}

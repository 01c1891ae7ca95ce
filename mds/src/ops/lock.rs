//! LOCK (RFC 8881 section 18.10): a byte-range lock, first under an open stateid (a new
//! lock-owner) or under an existing lock stateid.

use super::open::{check_grace, current, regular_file};
use crate::compound::Ctx;
use nfs_proto::nfs4::*;
use tracing::info;

/// The file a byte-range lock operation is about: it must be a regular file (RFC 8881
/// section 18.10.4: locks apply to regular files).
pub(super) fn lock_file(ctx: &Ctx) -> Result<u64, NfsStat4> {
    let inode = ctx.inode()?;
    regular_file(&inode)?;
    Ok(inode.fileid)
}

/// LOCK (RFC 8881 section 18.10). A lock with `reclaim` set is a reclaim after a server
/// restart and follows the reclaim rules; any other waits for the grace period to end
/// (section 8.4.2). A conflict is NFS4ERR_DENIED with the conflicting lock.
pub fn lock(ctx: &mut Ctx, a: &LockArgs) -> LockRes {
    let r = (|| {
        let clientid = ctx.client()?;
        let fileid = lock_file(ctx)?;
        check_grace(ctx, clientid, a.reclaim)?;
        let mut args = a.clone();
        match &mut args.locker {
            Locker4::OpenOwner(o) => o.open_stateid = current(ctx, &o.open_stateid)?,
            Locker4::LockOwner(e) => e.lock_stateid = current(ctx, &e.lock_stateid)?,
        }
        let out = ctx.mds.tables().opens().lock(clientid, fileid, &args)?;
        if a.reclaim {
            info!(
                clientid,
                fileid,
                offset = a.offset,
                length = a.length,
                "reclaimed lock"
            );
        }
        Ok::<_, LockFailure>(out)
    })();
    match r {
        Ok(lock_stateid) => {
            ctx.cstateid = Some(lock_stateid);
            LockRes::Ok(LockResOk { lock_stateid })
        }
        Err(LockFailure::Denied(d)) => LockRes::Denied(d),
        Err(LockFailure::Status(s)) => LockRes::Err(s),
    }
}

/// Why a LOCK or LOCKT failed: a conflicting lock (reported in the LOCK4denied body) or a
/// plain status.
pub(super) enum LockFailure {
    Denied(LockDenied),
    Status(NfsStat4),
}

impl From<NfsStat4> for LockFailure {
    fn from(s: NfsStat4) -> Self {
        Self::Status(s)
    }
}

impl From<crate::state::open::StateError> for LockFailure {
    fn from(e: crate::state::open::StateError) -> Self {
        match e {
            crate::state::open::StateError::Denied(d) => Self::Denied(d),
            e => Self::Status(e.into()),
        }
    }
}

//! Open state and locks: OPEN, CLOSE, OPEN_DOWNGRADE, LOCK, LOCKT, LOCKU, TEST_STATEID,
//! FREE_STATEID, DELEGRETURN, RELEASE_LOCKOWNER.
//! (Being built: every operation answers NFS4ERR_NOTSUPP for now.)

use nfs_proto::nfs4::*;

use crate::compound::Ctx;

/// May the current client change the size of `fileid` under `stateid` (SETATTR of size,
/// RFC 8881 section 18.30.3)? An open (or lock) stateid needs write access; the anonymous
/// stateid is checked against share reservations.
pub fn check_size_change(ctx: &Ctx, fileid: u64, stateid: &Stateid4) -> Result<(), NfsStat4> {
    let clientid = ctx.client()?;
    let stateid = crate::state::stateid::resolve_current(stateid, ctx.cstateid.as_ref())?;
    ctx.mds
        .opens
        .lock()
        .expect("opens")
        .check_io(clientid, fileid, &stateid, crate::state::open::Io::Write)
        .map_err(NfsStat4::from)
}

/// OPEN (RFC 8881 section 18.16).
pub async fn open(_ctx: &mut Ctx, _a: &OpenArgs) -> OpenRes {
    OpenRes::Err(NfsStat4::NFS4ERR_NOTSUPP)
}

/// CLOSE (RFC 8881 section 18.2).
pub fn close(_ctx: &mut Ctx, _a: &CloseArgs) -> CloseRes {
    CloseRes::Err(NfsStat4::NFS4ERR_NOTSUPP)
}

/// OPEN_DOWNGRADE (RFC 8881 section 18.18).
pub fn open_downgrade(_ctx: &mut Ctx, _a: &OpenDowngradeArgs) -> OpenDowngradeRes {
    OpenDowngradeRes::Err(NfsStat4::NFS4ERR_NOTSUPP)
}

/// LOCK (RFC 8881 section 18.10).
pub fn lock(_ctx: &mut Ctx, _a: &LockArgs) -> LockRes {
    LockRes::Err(NfsStat4::NFS4ERR_NOTSUPP)
}

/// LOCKT (RFC 8881 section 18.11).
pub fn lockt(_ctx: &mut Ctx, _a: &LockTArgs) -> LockTRes {
    LockTRes::Err(NfsStat4::NFS4ERR_NOTSUPP)
}

/// LOCKU (RFC 8881 section 18.12).
pub fn locku(_ctx: &mut Ctx, _a: &LockUArgs) -> LockURes {
    LockURes::Err(NfsStat4::NFS4ERR_NOTSUPP)
}

/// TEST_STATEID (RFC 8881 section 18.48).
pub fn test_stateid(_ctx: &mut Ctx, _a: &TestStateidArgs) -> TestStateidRes {
    TestStateidRes::Err(NfsStat4::NFS4ERR_NOTSUPP)
}

/// FREE_STATEID (RFC 8881 section 18.38).
pub fn free_stateid(_ctx: &mut Ctx, _a: &FreeStateidArgs) -> FreeStateidRes {
    FreeStateidRes {
        status: NfsStat4::NFS4ERR_NOTSUPP,
    }
}

/// DELEGRETURN (RFC 8881 section 18.6): no delegations are granted yet.
pub fn delegreturn(_ctx: &mut Ctx, _a: &DelegReturnArgs) -> DelegReturnRes {
    DelegReturnRes {
        status: NfsStat4::NFS4ERR_BAD_STATEID,
    }
}

/// RELEASE_LOCKOWNER: an NFSv4.0 operation (RFC 7530 section 16.37).
pub fn release_lockowner(_ctx: &mut Ctx, _a: &ReleaseLockOwnerArgs) -> ReleaseLockOwnerRes {
    ReleaseLockOwnerRes {
        status: NfsStat4::NFS4ERR_NOTSUPP,
    }
}

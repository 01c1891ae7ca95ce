//! WANT_DELEGATION (RFC 8881 section 18.49): a delegation asked for outside OPEN.

use super::open::{check_grace, regular_file};
use crate::compound::Ctx;
use crate::state::deleg::DelegType;
use crate::state::open::{delegation_body, DelegOffer, OpenShare};
use nfs_proto::nfs4::*;

/// WANT_DELEGATION (RFC 8881 section 18.49): a delegation of the current file without an
/// OPEN. `wda_want` names the type (READ, WRITE or ANY; NO_PREFERENCE and NO_DELEG ask for
/// nothing and are `NFS4ERR_INVAL`; CANCEL cancels wants this server never queues); the
/// same policy as OPEN decides, as if the client opened for reading (a READ delegation) or
/// for reading and writing (a WRITE one), and the caller must be allowed that access.
/// CLAIM_PREVIOUS reclaims the delegation held before a server restart, during the grace
/// period; CLAIM_DELEG_PREV_FH the delegation the client's previous instance held before
/// the client restarted (`NFS4ERR_RECLAIM_BAD` when there is none), as OPEN does.
pub fn want_delegation(ctx: &Ctx, a: &WantDelegationArgs) -> Result<OpenDelegation4, NfsStat4> {
    let clientid = ctx.client()?;
    let export = ctx.fh()?.export;
    let inode = ctx.inode()?;
    if inode.ftype == NfsFtype4::NF4DIR {
        // Directories have GET_DIR_DELEGATION (not offered).
        return Ok(OpenDelegation4::NoneExt(OpenNoneDelegation4::Other(
            WhyNoDelegation4::WND4_IS_DIR,
        )));
    }
    regular_file(&inode)?;
    let want = a.wda_want & OPEN4_SHARE_ACCESS_WANT_DELEG_MASK;
    let access = match want {
        OPEN4_SHARE_ACCESS_WANT_READ_DELEG => OPEN4_SHARE_ACCESS_READ,
        OPEN4_SHARE_ACCESS_WANT_WRITE_DELEG | OPEN4_SHARE_ACCESS_WANT_ANY_DELEG => {
            OPEN4_SHARE_ACCESS_BOTH
        }
        OPEN4_SHARE_ACCESS_WANT_CANCEL => {
            return Ok(crate::state::open::no_delegation(want));
        }
        _ => return Err(NfsStat4::NFS4ERR_INVAL),
    };
    let reclaim = match a.wda_claim {
        DelegClaim4::Fh => None,
        DelegClaim4::Previous(t) => Some(t),
        DelegClaim4::DelegPrevFh => {
            let mut opens = ctx.mds.tables().opens();
            return match opens
                .delegs
                .reclaim_prev(clientid, inode.fileid, inode.change)?
            {
                Some((stateid, kind)) => Ok(delegation_body(kind, stateid)),
                None => Err(NfsStat4::NFS4ERR_RECLAIM_BAD),
            };
        }
    };
    check_grace(ctx, clientid, reclaim.is_some())?;
    let fh = super::fh::encode_fh(
        ctx,
        crate::compound::Fh {
            export,
            fileid: inode.fileid,
            generation: inode.generation,
        },
    );
    if let Some(t) = reclaim {
        let kind = match t {
            OpenDelegationType4::OPEN_DELEGATE_READ => DelegType::Read,
            OpenDelegationType4::OPEN_DELEGATE_WRITE => DelegType::Write,
            _ => return Err(NfsStat4::NFS4ERR_INVAL),
        };
        let mut opens = ctx.mds.tables().opens();
        let stateid = opens
            .delegs
            .grant(clientid, inode.fileid, fh, kind, inode.change)?;
        return Ok(delegation_body(kind, stateid));
    }
    let needed = if access & OPEN4_SHARE_ACCESS_WRITE != 0 {
        ACCESS4_MODIFY
    } else {
        ACCESS4_READ
    };
    if ctx.allowed(&inode, needed) == 0 {
        return Err(NfsStat4::NFS4ERR_ACCESS);
    }
    let enabled = ctx.mds.delegations_enabled(export);
    let offer = DelegOffer {
        enabled,
        callback_up: enabled && crate::state::recall::callback_up(ctx.mds.core(), clientid),
        fh: &fh,
        change: inode.change,
    };
    let share = OpenShare {
        access,
        deny: 0,
        want,
    };
    let mut opens = ctx.mds.tables().opens();
    let got = opens.offer_delegation(clientid, inode.fileid, &share, offer)?;
    // ANY settles for a read delegation when a write one is not to be had.
    if want == OPEN4_SHARE_ACCESS_WANT_ANY_DELEG && !matches!(got, OpenDelegation4::Write(_)) {
        let read = OpenShare {
            access: OPEN4_SHARE_ACCESS_READ,
            ..share
        };
        if let r @ OpenDelegation4::Read(_) =
            opens.offer_delegation(clientid, inode.fileid, &read, offer)?
        {
            return Ok(r);
        }
    }
    Ok(got)
}

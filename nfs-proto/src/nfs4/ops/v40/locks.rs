//! Byte-range locks: LOCK, LOCKT, LOCKU and RELEASE_LOCKOWNER.

use super::*;

// ---------------------------------------------------------------------------------------------
// LOCK (12), LOCKT (13), LOCKU (14)
// ---------------------------------------------------------------------------------------------

/// `open_to_lock_owner4`: a lock-owner's first lock, from its open stateid (RFC 8881
/// section 18.10).
#[doc(alias = "open_to_lock_owner4")]
#[derive(Clone, PartialEq, Eq, Debug, Default, Xdr)]
pub struct OpenToLockOwner4 {
    /// Open-owner sequence number (ignored in NFSv4.1).
    pub open_seqid: Seqid4,
    /// The open stateid.
    pub open_stateid: Stateid4,
    /// Lock-owner sequence number (ignored in NFSv4.1).
    pub lock_seqid: Seqid4,
    /// The new lock-owner.
    pub lock_owner: LockOwner4,
}

/// `exist_lock_owner4`: a further lock of a lock-owner that has a lock stateid (RFC 8881
/// section 18.10).
#[doc(alias = "exist_lock_owner4")]
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, Xdr)]
pub struct ExistLockOwner4 {
    /// The lock stateid.
    pub lock_stateid: Stateid4,
    /// Lock-owner sequence number (ignored in NFSv4.1).
    pub lock_seqid: Seqid4,
}

/// `locker4`: who is locking, switched on `new_lock_owner` (RFC 8881 section 18.10).
#[doc(alias = "locker4")]
#[derive(Clone, PartialEq, Eq, Debug, Xdr)]
pub enum Locker4 {
    /// `new_lock_owner` TRUE: a new lock-owner (`open_owner`).
    #[xdr(case = true)]
    OpenOwner(OpenToLockOwner4),
    /// `new_lock_owner` FALSE: an existing lock-owner (`lock_owner`).
    #[xdr(case = false)]
    LockOwner(ExistLockOwner4),
}

/// LOCK arguments (RFC 8881 section 18.10).
#[doc(alias = "LOCK4args")]
#[derive(Clone, PartialEq, Eq, Debug, Xdr)]
pub struct LockArgs {
    /// Read or write, blocking or not.
    pub locktype: NfsLockType4,
    /// Whether this reclaims a lock after a server restart.
    pub reclaim: bool,
    /// Start of the range.
    pub offset: Offset4,
    /// Length of the range (`NFS4_UINT64_MAX` for the rest of the file).
    pub length: Length4,
    /// The lock-owner.
    pub locker: Locker4,
}

/// `LOCK4denied`: the conflicting lock, returned with `NFS4ERR_DENIED` by LOCK and LOCKT (RFC
/// 8881 section 18.10).
#[doc(alias = "LOCK4denied")]
#[derive(Clone, PartialEq, Eq, Debug, Xdr)]
pub struct LockDenied {
    /// Start of the conflicting range.
    pub offset: Offset4,
    /// Length of the conflicting range.
    pub length: Length4,
    /// Type of the conflicting lock.
    pub locktype: NfsLockType4,
    /// Owner of the conflicting lock.
    pub owner: LockOwner4,
}

impl LockDenied {
    /// A denial that names no conflicting lock: what an error result built from the status
    /// alone carries.
    pub fn unknown() -> Self {
        Self {
            offset: 0,
            length: 0,
            locktype: NfsLockType4(0),
            owner: LockOwner4::default(),
        }
    }
}

/// LOCK result body (RFC 8881 section 18.10).
#[doc(alias = "LOCK4resok")]
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, Xdr)]
pub struct LockResOk {
    /// The lock stateid.
    pub lock_stateid: Stateid4,
}

/// LOCK result (RFC 8881 section 18.10).
#[doc(alias = "LOCK4res")]
#[derive(Clone, PartialEq, Eq, Debug, Xdr)]
pub enum LockRes {
    /// `NFS4_OK` and the lock stateid.
    #[xdr(case = NfsStat4::NFS4_OK)]
    Ok(LockResOk),
    /// `NFS4ERR_DENIED` and the conflicting lock.
    #[xdr(case = NfsStat4::NFS4ERR_DENIED)]
    Denied(LockDenied),
    /// Any other error status.
    #[xdr(default)]
    Err(NfsStat4),
}

impl LockRes {
    /// The operation's status.
    pub fn status(&self) -> NfsStat4 {
        match self {
            Self::Ok(_) => NfsStat4::NFS4_OK,
            Self::Denied(_) => NfsStat4::NFS4ERR_DENIED,
            Self::Err(s) => *s,
        }
    }

    /// The result of the operation failing with `status`; `NFS4ERR_DENIED` names no
    /// conflicting lock (zeros, as the wire form of that status with an empty body reads).
    pub fn error(status: NfsStat4) -> Self {
        debug_assert!(!status.is_ok(), "an error result with NFS4_OK");
        match status {
            NfsStat4::NFS4ERR_DENIED => Self::Denied(LockDenied::unknown()),
            s => Self::Err(s),
        }
    }
}

/// LOCKT arguments (RFC 8881 section 18.11).
#[doc(alias = "LOCKT4args")]
#[derive(Clone, PartialEq, Eq, Debug, Xdr)]
pub struct LockTArgs {
    /// Read or write.
    pub locktype: NfsLockType4,
    /// Start of the range.
    pub offset: Offset4,
    /// Length of the range.
    pub length: Length4,
    /// The lock-owner to test for.
    pub owner: LockOwner4,
}

/// LOCKT result (RFC 8881 section 18.11).
#[doc(alias = "LOCKT4res")]
#[derive(Clone, PartialEq, Eq, Debug, Xdr)]
pub enum LockTRes {
    /// `NFS4ERR_DENIED` and the conflicting lock.
    #[xdr(case = NfsStat4::NFS4ERR_DENIED)]
    Denied(LockDenied),
    /// `NFS4_OK`: no conflicting lock.
    #[xdr(case = NfsStat4::NFS4_OK)]
    Ok,
    /// Any other error status.
    #[xdr(default)]
    Err(NfsStat4),
}

impl LockTRes {
    /// The operation's status.
    pub fn status(&self) -> NfsStat4 {
        match self {
            Self::Ok => NfsStat4::NFS4_OK,
            Self::Denied(_) => NfsStat4::NFS4ERR_DENIED,
            Self::Err(s) => *s,
        }
    }

    /// The result of the operation failing with `status`; `NFS4ERR_DENIED` names no
    /// conflicting lock.
    pub fn error(status: NfsStat4) -> Self {
        debug_assert!(!status.is_ok(), "an error result with NFS4_OK");
        match status {
            NfsStat4::NFS4ERR_DENIED => Self::Denied(LockDenied::unknown()),
            s => Self::Err(s),
        }
    }
}

/// LOCKU arguments (RFC 8881 section 18.12).
#[doc(alias = "LOCKU4args")]
#[derive(Clone, Copy, PartialEq, Eq, Debug, Xdr)]
pub struct LockUArgs {
    /// Read or write.
    pub locktype: NfsLockType4,
    /// Lock-owner sequence number (ignored in NFSv4.1).
    pub seqid: Seqid4,
    /// The lock stateid.
    pub lock_stateid: Stateid4,
    /// Start of the range.
    pub offset: Offset4,
    /// Length of the range.
    pub length: Length4,
}

crate::nfs_res! {
    /// LOCKU result: the updated lock stateid on success (RFC 8881 section 18.12).
    #[doc(alias = "LOCKU4res")]
    pub enum LockURes => Stateid4
}

// ---------------------------------------------------------------------------------------------
// RELEASE_LOCKOWNER (39)
// ---------------------------------------------------------------------------------------------

/// RELEASE_LOCKOWNER arguments (NFSv4.0 only: RFC 7530 section 16.37).
#[doc(alias = "RELEASE_LOCKOWNER4args")]
#[derive(Clone, PartialEq, Eq, Debug, Default, Xdr)]
pub struct ReleaseLockOwnerArgs {
    /// The lock-owner to release.
    pub lock_owner: LockOwner4,
}

crate::nfs_status_res! {
    /// RELEASE_LOCKOWNER result (RFC 7530 section 16.37).
    #[doc(alias = "RELEASE_LOCKOWNER4res")]
    pub struct ReleaseLockOwnerRes
}

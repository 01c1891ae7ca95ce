//! The operations NFSv4.0 defined, as NFSv4.1 (RFC 8881 section 18) declares them: ACCESS (3)
//! through RELEASE_LOCKOWNER (39), plus WANT_DELEGATION (56) and ILLEGAL.
//!
//! The minor-version-1 additions are included: the `CLAIM_FH`, `CLAIM_DELEG_CUR_FH` and
//! `CLAIM_DELEG_PREV_FH` claims, `EXCLUSIVE4_1` creation, the `OPEN4_SHARE_ACCESS_WANT_*` flags
//! and `OPEN_DELEGATE_NONE_EXT`. Operations that NFSv4.1 makes "mandatory not to implement"
//! (OPEN_CONFIRM, RENEW, SETCLIENTID, SETCLIENTID_CONFIRM, RELEASE_LOCKOWNER) are still declared
//! so that a server can decode them and answer `NFS4ERR_NOTSUPP`; RFC 8881 gives them no
//! section of their own, so their docs cite RFC 7530 section 16 (the XDR is the same).
//!
//! Operations without arguments (GETFH, LOOKUPP, PUTPUBFH, PUTROOTFH, READLINK, RESTOREFH,
//! SAVEFH) have no `Args` type. SECINFO's result is [`SecInfoRes`].

use bytes::Bytes;

use crate::nfs4::consts::*;
use crate::nfs4::types::*;
use crate::xdr::{DecodeError, Decoder, Encoder, Utf8String, Xdr};
use crate::xdr_enum;

// ---------------------------------------------------------------------------------------------
// Constants
// ---------------------------------------------------------------------------------------------

/// ACCESS bit: read data from a file or list a directory.
pub const ACCESS4_READ: u32 = 0x0000_0001;
/// ACCESS bit: look up a name in a directory.
pub const ACCESS4_LOOKUP: u32 = 0x0000_0002;
/// ACCESS bit: rewrite existing file data or modify directory entries.
pub const ACCESS4_MODIFY: u32 = 0x0000_0004;
/// ACCESS bit: write new data or add directory entries.
pub const ACCESS4_EXTEND: u32 = 0x0000_0008;
/// ACCESS bit: delete a directory entry.
pub const ACCESS4_DELETE: u32 = 0x0000_0010;
/// ACCESS bit: execute a file (no meaning for a directory).
pub const ACCESS4_EXECUTE: u32 = 0x0000_0020;
/// ACCESS bit: read extended attributes (RFC 8276 extended attributes).
pub const ACCESS4_XAREAD: u32 = 0x0000_0040;
/// ACCESS bit: write extended attributes (RFC 8276 extended attributes).
pub const ACCESS4_XAWRITE: u32 = 0x0000_0080;
/// ACCESS bit: list extended attributes (RFC 8276 extended attributes).
pub const ACCESS4_XALIST: u32 = 0x0000_0100;

/// OPEN share access: read.
pub const OPEN4_SHARE_ACCESS_READ: u32 = 0x0000_0001;
/// OPEN share access: write.
pub const OPEN4_SHARE_ACCESS_WRITE: u32 = 0x0000_0002;
/// OPEN share access: read and write.
pub const OPEN4_SHARE_ACCESS_BOTH: u32 = 0x0000_0003;

/// OPEN share deny: deny nothing.
pub const OPEN4_SHARE_DENY_NONE: u32 = 0x0000_0000;
/// OPEN share deny: deny reads by others.
pub const OPEN4_SHARE_DENY_READ: u32 = 0x0000_0001;
/// OPEN share deny: deny writes by others.
pub const OPEN4_SHARE_DENY_WRITE: u32 = 0x0000_0002;
/// OPEN share deny: deny both.
pub const OPEN4_SHARE_DENY_BOTH: u32 = 0x0000_0003;

/// Mask of the delegation-wanted field of `share_access` (NFSv4.1).
pub const OPEN4_SHARE_ACCESS_WANT_DELEG_MASK: u32 = 0xFF00;
/// Want field: no preference about a delegation.
pub const OPEN4_SHARE_ACCESS_WANT_NO_PREFERENCE: u32 = 0x0000;
/// Want field: want a read delegation.
pub const OPEN4_SHARE_ACCESS_WANT_READ_DELEG: u32 = 0x0100;
/// Want field: want a write delegation.
pub const OPEN4_SHARE_ACCESS_WANT_WRITE_DELEG: u32 = 0x0200;
/// Want field: want a read or write delegation.
pub const OPEN4_SHARE_ACCESS_WANT_ANY_DELEG: u32 = 0x0300;
/// Want field: want no delegation.
pub const OPEN4_SHARE_ACCESS_WANT_NO_DELEG: u32 = 0x0400;
/// Want field: cancel a pending delegation want.
pub const OPEN4_SHARE_ACCESS_WANT_CANCEL: u32 = 0x0500;
/// Flag: signal (CB_RECALLABLE_OBJ_AVAIL) when resources for a delegation become available.
pub const OPEN4_SHARE_ACCESS_WANT_SIGNAL_DELEG_WHEN_RESRC_AVAIL: u32 = 0x10000;
/// Flag: push a delegation (CB_PUSH_DELEG) once the file is no longer contended.
pub const OPEN4_SHARE_ACCESS_WANT_PUSH_DELEG_WHEN_UNCONTENDED: u32 = 0x20000;

/// OPEN result flag: the client must confirm the open (NFSv4.0 only).
pub const OPEN4_RESULT_CONFIRM: u32 = 0x0000_0002;
/// OPEN result flag: the server uses POSIX byte-range locking semantics.
pub const OPEN4_RESULT_LOCKTYPE_POSIX: u32 = 0x0000_0004;
/// OPEN result flag: the server keeps the file while open even if it is removed.
pub const OPEN4_RESULT_PRESERVE_UNLINKED: u32 = 0x0000_0008;
/// OPEN result flag: the server may send CB_NOTIFY_LOCK for locks derived from this open.
pub const OPEN4_RESULT_MAY_NOTIFY_LOCK: u32 = 0x0000_0020;

/// `clientaddr4`: the client's address in a SETCLIENTID `NFS4ERR_CLID_INUSE` reply.
pub type Clientaddr4 = Netaddr4;

// ---------------------------------------------------------------------------------------------
// Enums
// ---------------------------------------------------------------------------------------------

xdr_enum! {
    /// `nfs_lock_type4`: byte-range lock types (RFC 8881 section 18.10).
    pub struct NfsLockType4 {
        READ_LT = 1,
        WRITE_LT = 2,
        READW_LT = 3,
        WRITEW_LT = 4,
    }
}

xdr_enum! {
    /// `stable_how4`: how far WRITE data must reach stable storage (RFC 8881 section 18.32).
    pub struct StableHow4 {
        UNSTABLE4 = 0,
        DATA_SYNC4 = 1,
        FILE_SYNC4 = 2,
    }
}

xdr_enum! {
    /// `createmode4`: how OPEN creates a file (RFC 8881 section 18.16).
    pub struct Createmode4 {
        UNCHECKED4 = 0,
        GUARDED4 = 1,
        EXCLUSIVE4 = 2,
        EXCLUSIVE4_1 = 3,
    }
}

xdr_enum! {
    /// `opentype4`: whether OPEN may create (RFC 8881 section 18.16).
    pub struct Opentype4 {
        OPEN4_NOCREATE = 0,
        OPEN4_CREATE = 1,
    }
}

xdr_enum! {
    /// `open_claim_type4`: how OPEN names the file and which rights it claims (RFC 8881
    /// section 18.16).
    pub struct OpenClaimType4 {
        CLAIM_NULL = 0,
        CLAIM_PREVIOUS = 1,
        CLAIM_DELEGATE_CUR = 2,
        CLAIM_DELEGATE_PREV = 3,
        CLAIM_FH = 4,
        CLAIM_DELEG_CUR_FH = 5,
        CLAIM_DELEG_PREV_FH = 6,
    }
}

// ---------------------------------------------------------------------------------------------
// ACCESS (3)
// ---------------------------------------------------------------------------------------------

/// ACCESS arguments (RFC 8881 section 18.1).
#[doc(alias = "ACCESS4args")]
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, Xdr)]
pub struct AccessArgs {
    /// The `ACCESS4_*` bits to check.
    pub access: u32,
}

/// ACCESS result body (RFC 8881 section 18.1).
#[doc(alias = "ACCESS4resok")]
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, Xdr)]
pub struct AccessResOk {
    /// The bits the server could evaluate.
    pub supported: u32,
    /// The bits granted.
    pub access: u32,
}

crate::nfs_res! {
    /// ACCESS result (RFC 8881 section 18.1).
    #[doc(alias = "ACCESS4res")]
    pub enum AccessRes => AccessResOk
}

// ---------------------------------------------------------------------------------------------
// CLOSE (4)
// ---------------------------------------------------------------------------------------------

/// CLOSE arguments (RFC 8881 section 18.2).
#[doc(alias = "CLOSE4args")]
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, Xdr)]
pub struct CloseArgs {
    /// Open-owner sequence number (ignored in NFSv4.1).
    pub seqid: Seqid4,
    /// The open stateid.
    pub open_stateid: Stateid4,
}

crate::nfs_res! {
    /// CLOSE result: the updated open stateid on success (RFC 8881 section 18.2).
    #[doc(alias = "CLOSE4res")]
    pub enum CloseRes => Stateid4
}

// ---------------------------------------------------------------------------------------------
// COMMIT (5)
// ---------------------------------------------------------------------------------------------

/// COMMIT arguments (RFC 8881 section 18.3).
#[doc(alias = "COMMIT4args")]
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, Xdr)]
pub struct CommitArgs {
    /// Start of the range to commit.
    pub offset: Offset4,
    /// Length of the range (0 for the rest of the file).
    pub count: Count4,
}

/// COMMIT result body (RFC 8881 section 18.3).
#[doc(alias = "COMMIT4resok")]
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, Xdr)]
pub struct CommitResOk {
    /// The write verifier.
    pub writeverf: Verifier4,
}

crate::nfs_res! {
    /// COMMIT result (RFC 8881 section 18.3).
    #[doc(alias = "COMMIT4res")]
    pub enum CommitRes => CommitResOk
}

// ---------------------------------------------------------------------------------------------
// CREATE (6)
// ---------------------------------------------------------------------------------------------

/// `createtype4`: the type of object CREATE makes, with its type-specific data (RFC 8881
/// section 18.4).
#[doc(alias = "createtype4")]
#[derive(Clone, PartialEq, Eq, Debug, Xdr)]
pub enum Createtype4 {
    /// A symbolic link and its target (`linkdata`).
    #[xdr(case = NfsFtype4::NF4LNK)]
    Lnk(Linktext4),
    /// A block device and its numbers (`devdata`).
    #[xdr(case = NfsFtype4::NF4BLK)]
    Blk(Specdata4),
    /// A character device and its numbers (`devdata`).
    #[xdr(case = NfsFtype4::NF4CHR)]
    Chr(Specdata4),
    /// A socket.
    #[xdr(case = NfsFtype4::NF4SOCK)]
    Sock,
    /// A FIFO.
    #[xdr(case = NfsFtype4::NF4FIFO)]
    Fifo,
    /// A directory.
    #[xdr(case = NfsFtype4::NF4DIR)]
    Dir,
    /// Any other type (the server answers `NFS4ERR_BADTYPE`).
    #[xdr(default)]
    Other(NfsFtype4),
}

/// CREATE arguments (RFC 8881 section 18.4).
#[doc(alias = "CREATE4args")]
#[derive(Clone, PartialEq, Eq, Debug, Xdr)]
pub struct CreateArgs {
    /// The type of object and its data.
    pub objtype: Createtype4,
    /// The new name in the current directory.
    pub objname: Component4,
    /// Initial attributes.
    pub createattrs: Fattr4,
}

/// CREATE result body (RFC 8881 section 18.4).
#[doc(alias = "CREATE4resok")]
#[derive(Clone, PartialEq, Eq, Debug, Default, Xdr)]
pub struct CreateResOk {
    /// Change information of the directory.
    pub cinfo: ChangeInfo4,
    /// The attributes that were set.
    pub attrset: Bitmap4,
}

crate::nfs_res! {
    /// CREATE result (RFC 8881 section 18.4).
    #[doc(alias = "CREATE4res")]
    pub enum CreateRes => CreateResOk
}

// ---------------------------------------------------------------------------------------------
// DELEGPURGE (7), DELEGRETURN (8)
// ---------------------------------------------------------------------------------------------

/// DELEGPURGE arguments (RFC 8881 section 18.5).
#[doc(alias = "DELEGPURGE4args")]
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, Xdr)]
pub struct DelegPurgeArgs {
    /// The client whose unreclaimed delegations are purged.
    pub clientid: Clientid4,
}

crate::nfs_status_res! {
    /// DELEGPURGE result (RFC 8881 section 18.5).
    #[doc(alias = "DELEGPURGE4res")]
    pub struct DelegPurgeRes
}

/// DELEGRETURN arguments (RFC 8881 section 18.6).
#[doc(alias = "DELEGRETURN4args")]
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, Xdr)]
pub struct DelegReturnArgs {
    /// The delegation being returned.
    pub deleg_stateid: Stateid4,
}

crate::nfs_status_res! {
    /// DELEGRETURN result (RFC 8881 section 18.6).
    #[doc(alias = "DELEGRETURN4res")]
    pub struct DelegReturnRes
}

// ---------------------------------------------------------------------------------------------
// GETATTR (9), GETFH (10)
// ---------------------------------------------------------------------------------------------

/// GETATTR arguments (RFC 8881 section 18.7).
#[doc(alias = "GETATTR4args")]
#[derive(Clone, PartialEq, Eq, Debug, Default, Xdr)]
pub struct GetAttrArgs {
    /// The attributes wanted.
    pub attr_request: Bitmap4,
}

/// GETATTR result body (RFC 8881 section 18.7).
#[doc(alias = "GETATTR4resok")]
#[derive(Clone, PartialEq, Eq, Debug, Default, Xdr)]
pub struct GetAttrResOk {
    /// The attributes.
    pub obj_attributes: Fattr4,
}

crate::nfs_res! {
    /// GETATTR result (RFC 8881 section 18.7).
    #[doc(alias = "GETATTR4res")]
    pub enum GetAttrRes => GetAttrResOk
}

/// GETFH result body (RFC 8881 section 18.8).
#[doc(alias = "GETFH4resok")]
#[derive(Clone, PartialEq, Eq, Debug, Default, Xdr)]
pub struct GetFhResOk {
    /// The current filehandle.
    pub object: NfsFh4,
}

crate::nfs_res! {
    /// GETFH result (RFC 8881 section 18.8).
    #[doc(alias = "GETFH4res")]
    pub enum GetFhRes => GetFhResOk
}

// ---------------------------------------------------------------------------------------------
// LINK (11)
// ---------------------------------------------------------------------------------------------

/// LINK arguments: the saved filehandle is the source, the current one the directory (RFC 8881
/// section 18.9).
#[doc(alias = "LINK4args")]
#[derive(Clone, PartialEq, Eq, Debug, Default, Xdr)]
pub struct LinkArgs {
    /// The new name in the target directory.
    pub newname: Component4,
}

/// LINK result body (RFC 8881 section 18.9).
#[doc(alias = "LINK4resok")]
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, Xdr)]
pub struct LinkResOk {
    /// Change information of the target directory.
    pub cinfo: ChangeInfo4,
}

crate::nfs_res! {
    /// LINK result (RFC 8881 section 18.9).
    #[doc(alias = "LINK4res")]
    pub enum LinkRes => LinkResOk
}

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
// LOOKUP (15), LOOKUPP (16), NVERIFY (17)
// ---------------------------------------------------------------------------------------------

/// LOOKUP arguments (RFC 8881 section 18.13).
#[doc(alias = "LOOKUP4args")]
#[derive(Clone, PartialEq, Eq, Debug, Default, Xdr)]
pub struct LookupArgs {
    /// The name to look up in the current directory.
    pub objname: Component4,
}

crate::nfs_status_res! {
    /// LOOKUP result (RFC 8881 section 18.13).
    #[doc(alias = "LOOKUP4res")]
    pub struct LookupRes
}

crate::nfs_status_res! {
    /// LOOKUPP result (RFC 8881 section 18.14).
    #[doc(alias = "LOOKUPP4res")]
    pub struct LookupPRes
}

/// NVERIFY arguments (RFC 8881 section 18.15).
#[doc(alias = "NVERIFY4args")]
#[derive(Clone, PartialEq, Eq, Debug, Default, Xdr)]
pub struct NVerifyArgs {
    /// Attributes that must differ from the object's.
    pub obj_attributes: Fattr4,
}

crate::nfs_status_res! {
    /// NVERIFY result (RFC 8881 section 18.15).
    #[doc(alias = "NVERIFY4res")]
    pub struct NVerifyRes
}

// ---------------------------------------------------------------------------------------------
// OPEN (18)
// ---------------------------------------------------------------------------------------------

/// `creatverfattr`: the verifier and attributes of an `EXCLUSIVE4_1` create (RFC 8881
/// section 18.16).
#[doc(alias = "creatverfattr")]
#[derive(Clone, PartialEq, Eq, Debug, Default, Xdr)]
pub struct Creatverfattr {
    /// The exclusive-create verifier.
    pub cva_verf: Verifier4,
    /// Initial attributes.
    pub cva_attrs: Fattr4,
}

/// `createhow4`: how OPEN creates the file (RFC 8881 section 18.16).
#[doc(alias = "createhow4")]
#[derive(Clone, PartialEq, Eq, Debug, Xdr)]
pub enum Createhow4 {
    /// `UNCHECKED4`: create, or open an existing file, with these attributes.
    #[xdr(case = Createmode4::UNCHECKED4)]
    Unchecked(Fattr4),
    /// `GUARDED4`: create with these attributes, fail if the file exists.
    #[xdr(case = Createmode4::GUARDED4)]
    Guarded(Fattr4),
    /// `EXCLUSIVE4`: exclusive create by verifier (deprecated in NFSv4.1).
    #[xdr(case = Createmode4::EXCLUSIVE4)]
    Exclusive(Verifier4),
    /// `EXCLUSIVE4_1`: exclusive create by verifier, with attributes (NFSv4.1).
    #[xdr(case = Createmode4::EXCLUSIVE4_1)]
    Exclusive41(Creatverfattr),
}

/// `openflag4`: whether OPEN creates (RFC 8881 section 18.16).
#[doc(alias = "openflag4")]
#[derive(Clone, PartialEq, Eq, Debug, Xdr)]
pub enum Openflag4 {
    /// `OPEN4_NOCREATE`: open an existing file.
    #[xdr(case = Opentype4::OPEN4_NOCREATE)]
    NoCreate,
    /// `OPEN4_CREATE`: create if needed, as `how` says.
    #[xdr(case = Opentype4::OPEN4_CREATE)]
    Create(Createhow4),
    /// Any other `opentype4` (the XDR's `default: void`).
    #[xdr(default, skip_arbitrary)]
    Other(Opentype4),
}

/// `open_claim_delegate_cur4`: a CLAIM_DELEGATE_CUR claim (RFC 8881 section 18.16).
#[doc(alias = "open_claim_delegate_cur4")]
#[derive(Clone, PartialEq, Eq, Debug, Default, Xdr)]
pub struct OpenClaimDelegateCur4 {
    /// The delegation the open is made under.
    pub delegate_stateid: Stateid4,
    /// The file's name in the current directory.
    pub file: Component4,
}

/// `open_claim4`: how OPEN identifies the file and what rights it claims (RFC 8881
/// section 18.16).
#[doc(alias = "open_claim4")]
#[derive(Clone, PartialEq, Eq, Debug, Xdr)]
pub enum OpenClaim4 {
    /// `CLAIM_NULL`: an ordinary open of `file` in the current directory.
    #[xdr(case = OpenClaimType4::CLAIM_NULL)]
    Null(Component4),
    /// `CLAIM_PREVIOUS`: reclaim after a server restart of the current filehandle, with the
    /// delegation type held (`delegate_type`).
    #[xdr(case = OpenClaimType4::CLAIM_PREVIOUS)]
    Previous(OpenDelegationType4),
    /// `CLAIM_DELEGATE_CUR`: open by name under a delegation (`delegate_cur_info`).
    #[xdr(case = OpenClaimType4::CLAIM_DELEGATE_CUR)]
    DelegateCur(OpenClaimDelegateCur4),
    /// `CLAIM_DELEGATE_PREV`: open by name under a delegation of a previous client instance
    /// (`file_delegate_prev`).
    #[xdr(case = OpenClaimType4::CLAIM_DELEGATE_PREV)]
    DelegatePrev(Component4),
    /// `CLAIM_FH`: an ordinary open of the current filehandle (NFSv4.1).
    #[xdr(case = OpenClaimType4::CLAIM_FH)]
    Fh,
    /// `CLAIM_DELEG_CUR_FH`: open the current filehandle under a delegation
    /// (`oc_delegate_stateid`, NFSv4.1).
    #[xdr(case = OpenClaimType4::CLAIM_DELEG_CUR_FH)]
    DelegCurFh(Stateid4),
    /// `CLAIM_DELEG_PREV_FH`: open the current filehandle under a delegation of a previous
    /// client instance (NFSv4.1).
    #[xdr(case = OpenClaimType4::CLAIM_DELEG_PREV_FH)]
    DelegPrevFh,
}

/// OPEN arguments (RFC 8881 section 18.16).
#[doc(alias = "OPEN4args")]
#[derive(Clone, PartialEq, Eq, Debug, Xdr)]
pub struct OpenArgs {
    /// Open-owner sequence number (ignored in NFSv4.1).
    pub seqid: Seqid4,
    /// `OPEN4_SHARE_ACCESS_*` bits, with the `OPEN4_SHARE_ACCESS_WANT_*` field and flags.
    pub share_access: u32,
    /// `OPEN4_SHARE_DENY_*` bits.
    pub share_deny: u32,
    /// The open-owner.
    pub owner: OpenOwner4,
    /// Whether and how to create.
    pub openhow: Openflag4,
    /// Which file and what rights.
    pub claim: OpenClaim4,
}

/// OPEN result body (RFC 8881 section 18.16).
#[doc(alias = "OPEN4resok")]
#[derive(Clone, PartialEq, Eq, Debug, Xdr)]
pub struct OpenResOk {
    /// The open stateid.
    pub stateid: Stateid4,
    /// Change information of the directory.
    pub cinfo: ChangeInfo4,
    /// `OPEN4_RESULT_*` flags.
    pub rflags: u32,
    /// The attributes set on create.
    pub attrset: Bitmap4,
    /// The delegation granted, if any.
    pub delegation: OpenDelegation4,
}

crate::nfs_res! {
    /// OPEN result (RFC 8881 section 18.16).
    #[doc(alias = "OPEN4res")]
    pub enum OpenRes => OpenResOk
}

// ---------------------------------------------------------------------------------------------
// OPENATTR (19), OPEN_CONFIRM (20), OPEN_DOWNGRADE (21)
// ---------------------------------------------------------------------------------------------

/// OPENATTR arguments (RFC 8881 section 18.17).
#[doc(alias = "OPENATTR4args")]
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, Xdr)]
pub struct OpenAttrArgs {
    /// Create the named attribute directory if it does not exist.
    pub createdir: bool,
}

crate::nfs_status_res! {
    /// OPENATTR result (RFC 8881 section 18.17).
    #[doc(alias = "OPENATTR4res")]
    pub struct OpenAttrRes
}

/// OPEN_CONFIRM arguments (NFSv4.0 only: RFC 7530 section 16.18).
#[doc(alias = "OPEN_CONFIRM4args")]
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, Xdr)]
pub struct OpenConfirmArgs {
    /// The open stateid to confirm.
    pub open_stateid: Stateid4,
    /// Open-owner sequence number.
    pub seqid: Seqid4,
}

/// OPEN_CONFIRM result body (RFC 7530 section 16.18).
#[doc(alias = "OPEN_CONFIRM4resok")]
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, Xdr)]
pub struct OpenConfirmResOk {
    /// The confirmed open stateid.
    pub open_stateid: Stateid4,
}

crate::nfs_res! {
    /// OPEN_CONFIRM result (RFC 7530 section 16.18).
    #[doc(alias = "OPEN_CONFIRM4res")]
    pub enum OpenConfirmRes => OpenConfirmResOk
}

/// OPEN_DOWNGRADE arguments (RFC 8881 section 18.18).
#[doc(alias = "OPEN_DOWNGRADE4args")]
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, Xdr)]
pub struct OpenDowngradeArgs {
    /// The open stateid.
    pub open_stateid: Stateid4,
    /// Open-owner sequence number (ignored in NFSv4.1).
    pub seqid: Seqid4,
    /// The access to keep.
    pub share_access: u32,
    /// The deny to keep.
    pub share_deny: u32,
}

/// OPEN_DOWNGRADE result body (RFC 8881 section 18.18).
#[doc(alias = "OPEN_DOWNGRADE4resok")]
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, Xdr)]
pub struct OpenDowngradeResOk {
    /// The updated open stateid.
    pub open_stateid: Stateid4,
}

crate::nfs_res! {
    /// OPEN_DOWNGRADE result (RFC 8881 section 18.18).
    #[doc(alias = "OPEN_DOWNGRADE4res")]
    pub enum OpenDowngradeRes => OpenDowngradeResOk
}

// ---------------------------------------------------------------------------------------------
// PUTFH (22), PUTPUBFH (23), PUTROOTFH (24)
// ---------------------------------------------------------------------------------------------

/// PUTFH arguments (RFC 8881 section 18.19).
#[doc(alias = "PUTFH4args")]
#[derive(Clone, PartialEq, Eq, Debug, Default, Xdr)]
pub struct PutFhArgs {
    /// The new current filehandle.
    pub object: NfsFh4,
}

crate::nfs_status_res! {
    /// PUTFH result (RFC 8881 section 18.19).
    #[doc(alias = "PUTFH4res")]
    pub struct PutFhRes
}

crate::nfs_status_res! {
    /// PUTPUBFH result (RFC 8881 section 18.20).
    #[doc(alias = "PUTPUBFH4res")]
    pub struct PutPubFhRes
}

crate::nfs_status_res! {
    /// PUTROOTFH result (RFC 8881 section 18.21).
    #[doc(alias = "PUTROOTFH4res")]
    pub struct PutRootFhRes
}

// ---------------------------------------------------------------------------------------------
// READ (25)
// ---------------------------------------------------------------------------------------------

/// READ arguments (RFC 8881 section 18.22).
#[doc(alias = "READ4args")]
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, Xdr)]
pub struct ReadArgs {
    /// The open, lock or delegation stateid (or a special stateid).
    pub stateid: Stateid4,
    /// Where to read.
    pub offset: Offset4,
    /// How many bytes at most.
    pub count: Count4,
}

/// READ result body (RFC 8881 section 18.22).
#[doc(alias = "READ4resok")]
#[derive(Clone, PartialEq, Eq, Debug, Default, Xdr)]
pub struct ReadResOk {
    /// Whether the read reached the end of the file.
    pub eof: bool,
    /// The data, kept as its own piece when encoded.
    #[xdr(payload)]
    pub data: Bytes,
}

crate::nfs_res! {
    /// READ result (RFC 8881 section 18.22).
    #[doc(alias = "READ4res")]
    pub enum ReadRes => ReadResOk
}

// ---------------------------------------------------------------------------------------------
// READDIR (26)
// ---------------------------------------------------------------------------------------------

/// READDIR arguments (RFC 8881 section 18.23).
#[doc(alias = "READDIR4args")]
#[derive(Clone, PartialEq, Eq, Debug, Default, Xdr)]
pub struct ReadDirArgs {
    /// Where to continue (0 to start).
    pub cookie: NfsCookie4,
    /// The verifier returned with `cookie` (zeros to start).
    pub cookieverf: Verifier4,
    /// Most bytes of names and cookies wanted.
    pub dircount: Count4,
    /// Most bytes of the whole reply.
    pub maxcount: Count4,
    /// The attributes wanted for each entry.
    pub attr_request: Bitmap4,
}

/// One directory entry (`entry4`, RFC 8881 section 18.23).
///
/// Its own encoding is the entry's fields only: the XDR's `entry4 *nextentry` link is written
/// by [`Dirlist4`], which holds the entries as a list rather than a recursive chain.
#[doc(alias = "entry4")]
#[derive(Clone, PartialEq, Eq, Debug, Default, Xdr)]
pub struct Entry4 {
    /// The cookie to continue after this entry.
    pub cookie: NfsCookie4,
    /// The entry's name.
    pub name: Component4,
    /// The attributes requested.
    pub attrs: Fattr4,
}

/// `dirlist4`: the entries of a READDIR reply and the end-of-directory flag (RFC 8881
/// section 18.23).
///
/// On the wire the entries are a linked list (`entry4 *entries`, each entry ending with
/// `entry4 *nextentry`), that is: a TRUE "value follows" bool before each entry, a FALSE one
/// after the last, then `eof`. It is read and written iteratively, never recursively.
#[doc(alias = "dirlist4")]
#[derive(Clone, PartialEq, Eq, Debug, Default)]
pub struct Dirlist4 {
    /// The entries, in order.
    pub entries: Vec<Entry4>,
    /// Whether the last entry is the last of the directory.
    pub eof: bool,
}

impl Xdr for Dirlist4 {
    /// An empty list: the FALSE bool and `eof`.
    const MIN_SIZE: usize = 8;

    fn encode(&self, enc: &mut Encoder) {
        for e in &self.entries {
            enc.put_bool(true);
            e.encode(enc);
        }
        enc.put_bool(false);
        enc.put_bool(self.eof);
    }

    fn decode(dec: &mut Decoder) -> Result<Self, DecodeError> {
        // Each entry consumes input before the next is read, so the list cannot grow past
        // what the message holds; nothing is allocated from a wire length.
        let mut entries = Vec::new();
        while dec.get_bool().map_err(|e| e.context("Dirlist4.entries"))? {
            entries.push(Entry4::decode(dec).map_err(|e| e.context("Dirlist4.entries"))?);
        }
        let eof = dec.get_bool().map_err(|e| e.context("Dirlist4.eof"))?;
        Ok(Self { entries, eof })
    }
}

#[cfg(any(test, feature = "arbitrary"))]
impl proptest::arbitrary::Arbitrary for Dirlist4 {
    type Parameters = ();
    type Strategy = proptest::strategy::BoxedStrategy<Self>;
    fn arbitrary_with(_: ()) -> Self::Strategy {
        use proptest::prelude::*;
        (
            proptest::collection::vec(any::<Entry4>(), 0..=3),
            any::<bool>(),
        )
            .prop_map(|(entries, eof)| Self { entries, eof })
            .boxed()
    }
}

/// READDIR result body (RFC 8881 section 18.23).
#[doc(alias = "READDIR4resok")]
#[derive(Clone, PartialEq, Eq, Debug, Default, Xdr)]
pub struct ReadDirResOk {
    /// The verifier to send back with a later cookie.
    pub cookieverf: Verifier4,
    /// The entries.
    pub reply: Dirlist4,
}

crate::nfs_res! {
    /// READDIR result (RFC 8881 section 18.23).
    #[doc(alias = "READDIR4res")]
    pub enum ReadDirRes => ReadDirResOk
}

// ---------------------------------------------------------------------------------------------
// READLINK (27), REMOVE (28), RENAME (29), RENEW (30)
// ---------------------------------------------------------------------------------------------

/// READLINK result body (RFC 8881 section 18.24).
#[doc(alias = "READLINK4resok")]
#[derive(Clone, PartialEq, Eq, Debug, Default, Xdr)]
pub struct ReadLinkResOk {
    /// The link's target (`linktext4`).
    pub link: Utf8String,
}

crate::nfs_res! {
    /// READLINK result (RFC 8881 section 18.24).
    #[doc(alias = "READLINK4res")]
    pub enum ReadLinkRes => ReadLinkResOk
}

/// REMOVE arguments (RFC 8881 section 18.25).
#[doc(alias = "REMOVE4args")]
#[derive(Clone, PartialEq, Eq, Debug, Default, Xdr)]
pub struct RemoveArgs {
    /// The name to remove from the current directory.
    pub target: Component4,
}

/// REMOVE result body (RFC 8881 section 18.25).
#[doc(alias = "REMOVE4resok")]
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, Xdr)]
pub struct RemoveResOk {
    /// Change information of the directory.
    pub cinfo: ChangeInfo4,
}

crate::nfs_res! {
    /// REMOVE result (RFC 8881 section 18.25).
    #[doc(alias = "REMOVE4res")]
    pub enum RemoveRes => RemoveResOk
}

/// RENAME arguments: the saved filehandle is the source directory, the current one the target
/// directory (RFC 8881 section 18.26).
#[doc(alias = "RENAME4args")]
#[derive(Clone, PartialEq, Eq, Debug, Default, Xdr)]
pub struct RenameArgs {
    /// The name in the source directory.
    pub oldname: Component4,
    /// The name in the target directory.
    pub newname: Component4,
}

/// RENAME result body (RFC 8881 section 18.26).
#[doc(alias = "RENAME4resok")]
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, Xdr)]
pub struct RenameResOk {
    /// Change information of the source directory.
    pub source_cinfo: ChangeInfo4,
    /// Change information of the target directory.
    pub target_cinfo: ChangeInfo4,
}

crate::nfs_res! {
    /// RENAME result (RFC 8881 section 18.26).
    #[doc(alias = "RENAME4res")]
    pub enum RenameRes => RenameResOk
}

/// RENEW arguments (NFSv4.0 only: RFC 7530 section 16.28).
#[doc(alias = "RENEW4args")]
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, Xdr)]
pub struct RenewArgs {
    /// The client whose lease is renewed.
    pub clientid: Clientid4,
}

crate::nfs_status_res! {
    /// RENEW result (RFC 7530 section 16.28).
    #[doc(alias = "RENEW4res")]
    pub struct RenewRes
}

// ---------------------------------------------------------------------------------------------
// RESTOREFH (31), SAVEFH (32), SECINFO (33)
// ---------------------------------------------------------------------------------------------

crate::nfs_status_res! {
    /// RESTOREFH result (RFC 8881 section 18.27).
    #[doc(alias = "RESTOREFH4res")]
    pub struct RestoreFhRes
}

crate::nfs_status_res! {
    /// SAVEFH result (RFC 8881 section 18.28).
    #[doc(alias = "SAVEFH4res")]
    pub struct SaveFhRes
}

/// SECINFO arguments (RFC 8881 section 18.29). The result is
/// [`SecInfoRes`].
#[doc(alias = "SECINFO4args")]
#[derive(Clone, PartialEq, Eq, Debug, Default, Xdr)]
pub struct SecInfoArgs {
    /// The name in the current directory whose security flavors are wanted.
    pub name: Component4,
}

// ---------------------------------------------------------------------------------------------
// SETATTR (34), SETCLIENTID (35), SETCLIENTID_CONFIRM (36)
// ---------------------------------------------------------------------------------------------

/// SETATTR arguments (RFC 8881 section 18.30).
#[doc(alias = "SETATTR4args")]
#[derive(Clone, PartialEq, Eq, Debug, Default, Xdr)]
pub struct SetAttrArgs {
    /// The stateid when the size changes (anonymous otherwise).
    pub stateid: Stateid4,
    /// The attributes to set.
    pub obj_attributes: Fattr4,
}

/// SETATTR result: a status and, whatever the status, the attributes that were set (RFC 8881
/// section 18.30).
#[doc(alias = "SETATTR4res")]
#[derive(Clone, PartialEq, Eq, Debug, Xdr)]
pub struct SetAttrRes {
    /// The operation's status.
    pub status: NfsStat4,
    /// The attributes that were set.
    pub attrsset: Bitmap4,
}

impl SetAttrRes {
    /// The operation's status.
    pub fn status(&self) -> NfsStat4 {
        self.status
    }

    /// The result of the operation failing with `status`: no attribute set.
    pub fn error(status: NfsStat4) -> Self {
        Self {
            status,
            attrsset: Bitmap4::default(),
        }
    }
}

/// `cb_client4`: the NFSv4.0 callback program and address (RFC 7530 section 16.33).
#[doc(alias = "cb_client4")]
#[derive(Clone, PartialEq, Eq, Debug, Default, Xdr)]
pub struct CbClient4 {
    /// The callback RPC program number.
    pub cb_program: u32,
    /// Where to call back.
    pub cb_location: Netaddr4,
}

/// `nfs_client_id4`: the NFSv4.0 long-hand client id (RFC 7530 section 16.33).
#[doc(alias = "nfs_client_id4")]
#[derive(Clone, PartialEq, Eq, Debug, Default, Xdr)]
pub struct NfsClientId4 {
    /// Changes on each client restart.
    pub verifier: Verifier4,
    /// The client's unique name.
    #[xdr(max = NFS4_OPAQUE_LIMIT)]
    pub id: Bytes,
}

/// SETCLIENTID arguments (NFSv4.0 only: RFC 7530 section 16.33).
#[doc(alias = "SETCLIENTID4args")]
#[derive(Clone, PartialEq, Eq, Debug, Default, Xdr)]
pub struct SetClientIdArgs {
    /// The client's id.
    pub client: NfsClientId4,
    /// The callback program and address.
    pub callback: CbClient4,
    /// The callback identifier the server puts in callbacks.
    pub callback_ident: u32,
}

/// SETCLIENTID result body (RFC 7530 section 16.33).
#[doc(alias = "SETCLIENTID4resok")]
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, Xdr)]
pub struct SetClientIdResOk {
    /// The short-hand client id.
    pub clientid: Clientid4,
    /// The verifier for SETCLIENTID_CONFIRM.
    pub setclientid_confirm: Verifier4,
}

/// SETCLIENTID result (RFC 7530 section 16.33).
#[doc(alias = "SETCLIENTID4res")]
#[derive(Clone, PartialEq, Eq, Debug, Xdr)]
pub enum SetClientIdRes {
    /// `NFS4_OK` and the client id.
    #[xdr(case = NfsStat4::NFS4_OK)]
    Ok(SetClientIdResOk),
    /// `NFS4ERR_CLID_INUSE` and the address of the client using the id (`client_using`).
    #[xdr(case = NfsStat4::NFS4ERR_CLID_INUSE)]
    ClidInUse(Clientaddr4),
    /// Any other error status.
    #[xdr(default)]
    Err(NfsStat4),
}

impl SetClientIdRes {
    /// The operation's status.
    pub fn status(&self) -> NfsStat4 {
        match self {
            Self::Ok(_) => NfsStat4::NFS4_OK,
            Self::ClidInUse(_) => NfsStat4::NFS4ERR_CLID_INUSE,
            Self::Err(s) => *s,
        }
    }

    /// The result of the operation failing with `status`; `NFS4ERR_CLID_INUSE` names no
    /// address.
    pub fn error(status: NfsStat4) -> Self {
        debug_assert!(!status.is_ok(), "an error result with NFS4_OK");
        match status {
            NfsStat4::NFS4ERR_CLID_INUSE => Self::ClidInUse(Clientaddr4::default()),
            s => Self::Err(s),
        }
    }
}

/// SETCLIENTID_CONFIRM arguments (NFSv4.0 only: RFC 7530 section 16.34).
#[doc(alias = "SETCLIENTID_CONFIRM4args")]
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, Xdr)]
pub struct SetClientIdConfirmArgs {
    /// The short-hand client id.
    pub clientid: Clientid4,
    /// The verifier SETCLIENTID returned.
    pub setclientid_confirm: Verifier4,
}

crate::nfs_status_res! {
    /// SETCLIENTID_CONFIRM result (RFC 7530 section 16.34).
    #[doc(alias = "SETCLIENTID_CONFIRM4res")]
    pub struct SetClientIdConfirmRes
}

// ---------------------------------------------------------------------------------------------
// VERIFY (37), WRITE (38), RELEASE_LOCKOWNER (39)
// ---------------------------------------------------------------------------------------------

/// VERIFY arguments (RFC 8881 section 18.31).
#[doc(alias = "VERIFY4args")]
#[derive(Clone, PartialEq, Eq, Debug, Default, Xdr)]
pub struct VerifyArgs {
    /// Attributes that must equal the object's.
    pub obj_attributes: Fattr4,
}

crate::nfs_status_res! {
    /// VERIFY result (RFC 8881 section 18.31).
    #[doc(alias = "VERIFY4res")]
    pub struct VerifyRes
}

/// WRITE arguments (RFC 8881 section 18.32).
#[doc(alias = "WRITE4args")]
#[derive(Clone, PartialEq, Eq, Debug, Xdr)]
pub struct WriteArgs {
    /// The open, lock or delegation stateid (or a special stateid).
    pub stateid: Stateid4,
    /// Where to write.
    pub offset: Offset4,
    /// How stable the data must be before the reply.
    pub stable: StableHow4,
    /// The data, kept as its own piece when encoded.
    #[xdr(payload)]
    pub data: Bytes,
}

/// WRITE result body (RFC 8881 section 18.32).
#[doc(alias = "WRITE4resok")]
#[derive(Clone, Copy, PartialEq, Eq, Debug, Xdr)]
pub struct WriteResOk {
    /// Bytes written.
    pub count: Count4,
    /// How stable the data is.
    pub committed: StableHow4,
    /// The write verifier.
    pub writeverf: Verifier4,
}

crate::nfs_res! {
    /// WRITE result (RFC 8881 section 18.32).
    #[doc(alias = "WRITE4res")]
    pub enum WriteRes => WriteResOk
}

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

// ---------------------------------------------------------------------------------------------
// WANT_DELEGATION (56), ILLEGAL
// ---------------------------------------------------------------------------------------------

/// `deleg_claim4`: what WANT_DELEGATION claims for the current filehandle (RFC 8881
/// section 18.49).
#[doc(alias = "deleg_claim4")]
#[derive(Clone, Copy, PartialEq, Eq, Debug, Xdr)]
pub enum DelegClaim4 {
    /// `CLAIM_FH`: an ordinary delegation request.
    #[xdr(case = OpenClaimType4::CLAIM_FH)]
    Fh,
    /// `CLAIM_DELEG_PREV_FH`: a delegation granted to a previous client instance.
    #[xdr(case = OpenClaimType4::CLAIM_DELEG_PREV_FH)]
    DelegPrevFh,
    /// `CLAIM_PREVIOUS`: reclaim after a server restart (`dc_delegate_type`).
    #[xdr(case = OpenClaimType4::CLAIM_PREVIOUS)]
    Previous(OpenDelegationType4),
}

/// WANT_DELEGATION arguments (RFC 8881 section 18.49).
#[doc(alias = "WANT_DELEGATION4args")]
#[derive(Clone, Copy, PartialEq, Eq, Debug, Xdr)]
pub struct WantDelegationArgs {
    /// `OPEN4_SHARE_ACCESS_WANT_*` field and flags.
    pub wda_want: u32,
    /// The claim.
    pub wda_claim: DelegClaim4,
}

crate::nfs_res! {
    /// WANT_DELEGATION result: the delegation (or why none) on success (RFC 8881
    /// section 18.49).
    #[doc(alias = "WANT_DELEGATION4res")]
    pub enum WantDelegationRes => OpenDelegation4
}

crate::nfs_status_res! {
    /// ILLEGAL result: the reply to an unknown operation number (RFC 8881 section 18.52).
    #[doc(alias = "ILLEGAL4res")]
    pub struct IllegalRes
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::xdr::{from_bytes, to_bytes};

    crate::roundtrip_tests!(
        nfs_lock_type4: NfsLockType4,
        stable_how4: StableHow4,
        createmode4: Createmode4,
        opentype4: Opentype4,
        open_claim_type4: OpenClaimType4,
        access_args: AccessArgs,
        access_res_ok: AccessResOk,
        access_res: AccessRes,
        close_args: CloseArgs,
        close_res: CloseRes,
        commit_args: CommitArgs,
        commit_res_ok: CommitResOk,
        commit_res: CommitRes,
        createtype4: Createtype4,
        create_args: CreateArgs,
        create_res_ok: CreateResOk,
        create_res: CreateRes,
        deleg_purge_args: DelegPurgeArgs,
        deleg_purge_res: DelegPurgeRes,
        deleg_return_args: DelegReturnArgs,
        deleg_return_res: DelegReturnRes,
        get_attr_args: GetAttrArgs,
        get_attr_res_ok: GetAttrResOk,
        get_attr_res: GetAttrRes,
        get_fh_res_ok: GetFhResOk,
        get_fh_res: GetFhRes,
        link_args: LinkArgs,
        link_res_ok: LinkResOk,
        link_res: LinkRes,
        open_to_lock_owner4: OpenToLockOwner4,
        exist_lock_owner4: ExistLockOwner4,
        locker4: Locker4,
        lock_args: LockArgs,
        lock_denied: LockDenied,
        lock_res_ok: LockResOk,
        lock_res: LockRes,
        lock_t_args: LockTArgs,
        lock_t_res: LockTRes,
        lock_u_args: LockUArgs,
        lock_u_res: LockURes,
        lookup_args: LookupArgs,
        lookup_res: LookupRes,
        lookup_p_res: LookupPRes,
        n_verify_args: NVerifyArgs,
        n_verify_res: NVerifyRes,
        creatverfattr: Creatverfattr,
        createhow4: Createhow4,
        openflag4: Openflag4,
        open_claim_delegate_cur4: OpenClaimDelegateCur4,
        open_claim4: OpenClaim4,
        open_args: OpenArgs,
        open_res_ok: OpenResOk,
        open_res: OpenRes,
        open_attr_args: OpenAttrArgs,
        open_attr_res: OpenAttrRes,
        open_confirm_args: OpenConfirmArgs,
        open_confirm_res_ok: OpenConfirmResOk,
        open_confirm_res: OpenConfirmRes,
        open_downgrade_args: OpenDowngradeArgs,
        open_downgrade_res_ok: OpenDowngradeResOk,
        open_downgrade_res: OpenDowngradeRes,
        put_fh_args: PutFhArgs,
        put_fh_res: PutFhRes,
        put_pub_fh_res: PutPubFhRes,
        put_root_fh_res: PutRootFhRes,
        read_args: ReadArgs,
        read_res_ok: ReadResOk,
        read_res: ReadRes,
        read_dir_args: ReadDirArgs,
        entry4: Entry4,
        dirlist4: Dirlist4,
        read_dir_res_ok: ReadDirResOk,
        read_dir_res: ReadDirRes,
        read_link_res_ok: ReadLinkResOk,
        read_link_res: ReadLinkRes,
        remove_args: RemoveArgs,
        remove_res_ok: RemoveResOk,
        remove_res: RemoveRes,
        rename_args: RenameArgs,
        rename_res_ok: RenameResOk,
        rename_res: RenameRes,
        renew_args: RenewArgs,
        renew_res: RenewRes,
        restore_fh_res: RestoreFhRes,
        save_fh_res: SaveFhRes,
        sec_info_args: SecInfoArgs,
        set_attr_args: SetAttrArgs,
        set_attr_res: SetAttrRes,
        cb_client4: CbClient4,
        nfs_client_id4: NfsClientId4,
        set_client_id_args: SetClientIdArgs,
        set_client_id_res_ok: SetClientIdResOk,
        set_client_id_res: SetClientIdRes,
        set_client_id_confirm_args: SetClientIdConfirmArgs,
        set_client_id_confirm_res: SetClientIdConfirmRes,
        verify_args: VerifyArgs,
        verify_res: VerifyRes,
        write_args: WriteArgs,
        write_res_ok: WriteResOk,
        write_res: WriteRes,
        release_lock_owner_args: ReleaseLockOwnerArgs,
        release_lock_owner_res: ReleaseLockOwnerRes,
        deleg_claim4: DelegClaim4,
        want_delegation_args: WantDelegationArgs,
        want_delegation_res: WantDelegationRes,
        illegal_res: IllegalRes,
    );

    /// Big-endian words to bytes.
    fn words(w: &[u32]) -> Vec<u8> {
        w.iter().flat_map(|v| v.to_be_bytes()).collect()
    }

    fn entry(cookie: u64, name: &str) -> Entry4 {
        Entry4 {
            cookie,
            name: name.into(),
            attrs: Fattr4 {
                attrmask: Bitmap4(vec![1 << 4]),
                attr_vals: Bytes::from(vec![0, 0, 0, 0, 0, 0, 0x10, 0]),
            },
        }
    }

    #[test]
    fn readdir_reply_with_three_entries_is_a_value_follows_list() {
        let res = ReadDirRes::Ok(ReadDirResOk {
            cookieverf: [9; 8],
            reply: Dirlist4 {
                entries: vec![entry(3, "a"), entry(4, "bc"), entry(5, "def")],
                eof: true,
            },
        });
        let mut want = words(&[0]); // NFS4_OK
        want.extend([9u8; 8]); // cookieverf
        for (cookie, name) in [(3u32, "a"), (4, "bc"), (5, "def")] {
            want.extend(words(&[1])); // value follows
            want.extend(words(&[0, cookie])); // cookie (hyper)
            want.extend(words(&[name.len() as u32]));
            let mut n = name.as_bytes().to_vec();
            n.resize(4, 0); // names here are shorter than 4 bytes: pad to one word
            want.extend(n);
            want.extend(words(&[1, 1 << 4, 8])); // attrmask<1>, attr_vals<8>
            want.extend([0, 0, 0, 0, 0, 0, 0x10, 0]);
        }
        want.extend(words(&[0])); // no more entries
        want.extend(words(&[1])); // eof
        let got = to_bytes(&res);
        assert_eq!(&got[..], &want[..]);
        assert_eq!(from_bytes::<ReadDirRes>(got).unwrap(), res);

        // The empty list is just the FALSE bool and eof.
        let empty = Dirlist4 {
            entries: vec![],
            eof: false,
        };
        assert_eq!(&to_bytes(&empty)[..], &words(&[0, 0])[..]);
    }

    #[test]
    fn long_directory_listing_decodes_without_recursion() {
        let list = Dirlist4 {
            entries: (0..100_000).map(|i| entry(i, "x")).collect(),
            eof: false,
        };
        let b = to_bytes(&list);
        assert_eq!(from_bytes::<Dirlist4>(b).unwrap(), list);
    }

    #[test]
    fn dirlist_with_a_bad_value_follows_bool_is_refused() {
        let mut b = to_bytes(&Dirlist4 {
            entries: vec![entry(1, "a")],
            eof: true,
        })
        .to_vec();
        b[3] = 2; // the first "value follows" is neither TRUE nor FALSE
        let e = from_bytes::<Dirlist4>(Bytes::from(b)).unwrap_err();
        assert_eq!(e.kind, crate::xdr::DecodeErrorKind::BadBool(2));
        assert_eq!(e.what, "Dirlist4.entries");
    }

    /// OPEN4args laid out by hand from RFC 8881 section 18.16 / the XDR.
    #[test]
    fn open_args_with_claim_null_matches_the_rfc_layout() {
        let args = OpenArgs {
            seqid: 7,
            share_access: OPEN4_SHARE_ACCESS_BOTH | OPEN4_SHARE_ACCESS_WANT_NO_DELEG,
            share_deny: OPEN4_SHARE_DENY_NONE,
            owner: StateOwner4 {
                clientid: 0x0102_0304_0506_0708,
                owner: Bytes::from_static(b"owner"),
            },
            openhow: Openflag4::Create(Createhow4::Guarded(Fattr4 {
                attrmask: Bitmap4(vec![0, 1 << (33 - 32)]), // FATTR4_MODE
                attr_vals: Bytes::from_static(&[0, 0, 0x01, 0xa4]), // 0644
            })),
            claim: OpenClaim4::Null("file.txt".into()),
        };
        #[rustfmt::skip]
        let want: &[u8] = &[
            0, 0, 0, 7,                 // seqid
            0, 0, 0x04, 0x03,           // share_access: BOTH | WANT_NO_DELEG
            0, 0, 0, 0,                 // share_deny: NONE
            1, 2, 3, 4, 5, 6, 7, 8,     // owner.clientid
            0, 0, 0, 5,                 // owner.owner length
            b'o', b'w', b'n', b'e', b'r', 0, 0, 0,
            0, 0, 0, 1,                 // openhow: OPEN4_CREATE
            0, 0, 0, 1,                 // createhow4: GUARDED4
            0, 0, 0, 2,                 // attrmask: 2 words
            0, 0, 0, 0,
            0, 0, 0, 2,                 // bit 33 (mode)
            0, 0, 0, 4,                 // attr_vals length
            0, 0, 0x01, 0xa4,           // mode 0644
            0, 0, 0, 0,                 // claim: CLAIM_NULL
            0, 0, 0, 8,                 // file length
            b'f', b'i', b'l', b'e', b'.', b't', b'x', b't',
        ];
        let got = to_bytes(&args);
        assert_eq!(&got[..], want);
        assert_eq!(
            from_bytes::<OpenArgs>(Bytes::from_static(want)).unwrap(),
            args
        );
    }

    #[test]
    fn open_claims_new_in_v41_have_their_numbers() {
        assert_eq!(&to_bytes(&OpenClaim4::Fh)[..], &words(&[4])[..]);
        let s = Stateid4 {
            seqid: 2,
            other: [0xab; 12],
        };
        let mut want = words(&[5, 2]);
        want.extend([0xab; 12]);
        assert_eq!(&to_bytes(&OpenClaim4::DelegCurFh(s))[..], &want[..]);
        assert_eq!(&to_bytes(&OpenClaim4::DelegPrevFh)[..], &words(&[6])[..]);
        let c = Createhow4::Exclusive41(Creatverfattr {
            cva_verf: [1; 8],
            cva_attrs: Fattr4::default(),
        });
        let mut want = words(&[3]);
        want.extend([1; 8]);
        want.extend(words(&[0, 0]));
        assert_eq!(&to_bytes(&c)[..], &want[..]);
        // An unknown claim type has no arm in the XDR.
        assert!(from_bytes::<OpenClaim4>(Bytes::from(words(&[7]))).is_err());
    }

    #[test]
    fn lock_denied_arm_carries_the_conflicting_lock() {
        let denied = LockDenied {
            offset: 10,
            length: 20,
            locktype: NfsLockType4::WRITE_LT,
            owner: StateOwner4 {
                clientid: 5,
                owner: Bytes::from_static(b"lo"),
            },
        };
        let res = LockRes::Denied(denied.clone());
        assert_eq!(res.status(), NfsStat4::NFS4ERR_DENIED);
        let mut want = words(&[10010, 0, 10, 0, 20, 2, 0, 5, 2]);
        want.extend([b'l', b'o', 0, 0]);
        assert_eq!(&to_bytes(&res)[..], &want[..]);
        // LOCKT's result has the same arm.
        assert_eq!(&to_bytes(&LockTRes::Denied(denied))[..], &want[..]);
        assert_eq!(&to_bytes(&LockTRes::Ok)[..], &words(&[0])[..]);
        let err = LockRes::Err(NfsStat4::NFS4ERR_GRACE);
        assert_eq!(&to_bytes(&err)[..], &words(&[10013])[..]);
        assert_eq!(err.status(), NfsStat4::NFS4ERR_GRACE);
    }

    #[test]
    fn setattr_result_carries_attrsset_even_on_error() {
        let r = SetAttrRes {
            status: NfsStat4::NFS4ERR_PERM,
            attrsset: Bitmap4(vec![1 << 4]),
        };
        assert_eq!(&to_bytes(&r)[..], &words(&[1, 1, 1 << 4])[..]);
        assert_eq!(r.status(), NfsStat4::NFS4ERR_PERM);
    }

    #[test]
    fn large_read_and_write_data_travel_as_separate_pieces() {
        let data = Bytes::from(vec![0x5a; 4096]);
        let res = ReadRes::Ok(ReadResOk {
            eof: false,
            data: data.clone(),
        });
        let mut enc = Encoder::new();
        res.encode(&mut enc);
        let pieces = enc.into_pieces();
        assert_eq!(pieces.len(), 2);
        assert_eq!(pieces[1].as_ptr(), data.as_ptr(), "payload not copied");

        let args = WriteArgs {
            stateid: Stateid4::ANONYMOUS,
            offset: 0,
            stable: StableHow4::FILE_SYNC4,
            data: data.clone(),
        };
        let mut enc = Encoder::new();
        args.encode(&mut enc);
        let pieces = enc.into_pieces();
        assert_eq!(pieces.len(), 2);
        assert_eq!(pieces[1].as_ptr(), data.as_ptr(), "payload not copied");
    }

    #[test]
    fn createtype_keeps_unknown_types() {
        let t = Createtype4::Other(NfsFtype4::NF4REG);
        let b = to_bytes(&t);
        assert_eq!(&b[..], &words(&[1])[..]);
        assert_eq!(from_bytes::<Createtype4>(b).unwrap(), t);
        let l = Createtype4::Lnk("target".into());
        let mut want = words(&[5, 6]);
        want.extend(b"target\0\0");
        assert_eq!(&to_bytes(&l)[..], &want[..]);
    }
}

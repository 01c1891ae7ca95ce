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
//!
//! This file holds the constants and enums the operations share and ILLEGAL; the operations are
//! in files by concern: `namespace`, `fh_attrs` (filehandles and attributes), `open` (opens and
//! delegations), `locks`, `io` (READ, WRITE, COMMIT) and `client_id` (NFSv4.0's client ids).

use bytes::Bytes;

use crate::nfs4::consts::*;
use crate::nfs4::types::*;
use crate::xdr::{DecodeError, Decoder, Encoder, Utf8String, Xdr};
use crate::xdr_enum;

mod client_id;
mod fh_attrs;
mod io;
mod locks;
mod namespace;
mod open;
#[cfg(test)]
mod tests;

pub use client_id::*;
pub use fh_attrs::*;
pub use io::*;
pub use locks::*;
pub use namespace::*;
pub use open::*;

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
// ILLEGAL
// ---------------------------------------------------------------------------------------------

crate::nfs_status_res! {
    /// ILLEGAL result: the reply to an unknown operation number (RFC 8881 section 18.52).
    #[doc(alias = "ILLEGAL4res")]
    pub struct IllegalRes
}

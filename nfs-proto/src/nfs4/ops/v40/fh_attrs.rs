//! The current and saved filehandles and attributes: GETATTR, GETFH, PUTFH, PUTPUBFH,
//! PUTROOTFH, RESTOREFH, SAVEFH, SECINFO, SETATTR and VERIFY.

use super::*;

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
// SETATTR (34)
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

// ---------------------------------------------------------------------------------------------
// VERIFY (37)
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

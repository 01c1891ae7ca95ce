//! Opens and delegations: OPEN, OPENATTR, OPEN_CONFIRM, OPEN_DOWNGRADE, CLOSE, DELEGPURGE,
//! DELEGRETURN and WANT_DELEGATION.

use super::*;

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
// WANT_DELEGATION (56)
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

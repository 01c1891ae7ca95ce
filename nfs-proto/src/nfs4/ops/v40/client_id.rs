//! NFSv4.0's client ids, which NFSv4.1 replaces with EXCHANGE_ID and sessions (a server
//! decodes them to answer `NFS4ERR_NOTSUPP`): SETCLIENTID, SETCLIENTID_CONFIRM and RENEW.

use super::*;

// ---------------------------------------------------------------------------------------------
// SETCLIENTID (35), SETCLIENTID_CONFIRM (36)
// ---------------------------------------------------------------------------------------------

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
// RENEW (30)
// ---------------------------------------------------------------------------------------------

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

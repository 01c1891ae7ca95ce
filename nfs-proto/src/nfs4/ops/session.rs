//! NFSv4.1 sessions and client state: BACKCHANNEL_CTL, BIND_CONN_TO_SESSION, EXCHANGE_ID,
//! CREATE_SESSION, DESTROY_SESSION, FREE_STATEID, SECINFO_NO_NAME, SEQUENCE, SET_SSV,
//! TEST_STATEID, DESTROY_CLIENTID and RECLAIM_COMPLETE (RFC 8881 section 18.33 to 18.51).

use bytes::Bytes;

use crate::nfs4::{Bitmap4, SecInfoRes};
use crate::nfs4::{
    ClientOwner4, Clientid4, Count4, NfsImplId4, NfsStat4, RpcGssSvc, Sequenceid4, ServerOwner4,
    Sessionid4, Slotid4, Stateid4, NFS4_OPAQUE_LIMIT, RPCSEC_GSS,
};
use crate::xdr::{Utf8String, Xdr};
use crate::xdr_enum;

/// The AUTH_NONE flavor number (RFC 5531 section 8.1).
const AUTH_NONE: u32 = 0;
/// The AUTH_SYS flavor number (RFC 5531 section 8.2).
const AUTH_SYS: u32 = 1;

// ---------------------------------------------------------------------------------------------
// BACKCHANNEL_CTL (40)
// ---------------------------------------------------------------------------------------------

/// AUTH_SYS credential body (RFC 5531 section 8.2), as carried in `callback_sec_parms4`.
#[doc(alias = "authsys_parms")]
#[derive(Clone, PartialEq, Eq, Debug, Default, Xdr)]
pub struct AuthsysParms {
    /// Arbitrary id chosen by the caller.
    pub stamp: u32,
    /// Name of the caller's machine.
    #[xdr(max = 255)]
    pub machinename: Utf8String,
    /// Effective user id.
    pub uid: u32,
    /// Effective group id.
    pub gid: u32,
    /// Supplementary group ids.
    #[xdr(max = 16)]
    pub gids: Vec<u32>,
}

/// `gsshandle4_t`: an RPCSEC_GSS context handle for the backchannel (RFC 8881 section 18.33).
#[doc(alias = "gsshandle4_t")]
#[derive(Clone, PartialEq, Eq, Hash, Debug, Default, Xdr)]
pub struct Gsshandle4T(pub Bytes);

/// RPCSEC_GSS handles for the backchannel (RFC 8881 section 18.33).
#[doc(alias = "gss_cb_handles4")]
#[derive(Clone, PartialEq, Eq, Debug, Xdr)]
pub struct GssCbHandles4 {
    /// The RPCSEC_GSS service.
    pub gcbp_service: RpcGssSvc,
    /// The handle the server uses in callbacks.
    pub gcbp_handle_from_server: Gsshandle4T,
    /// The handle the client uses (for its replies).
    pub gcbp_handle_from_client: Gsshandle4T,
}

/// Security for callbacks: one flavor and its parameters (RFC 8881 section 18.33).
#[doc(alias = "callback_sec_parms4")]
#[derive(Clone, PartialEq, Eq, Debug, Xdr)]
pub enum CallbackSecParms4 {
    /// AUTH_NONE.
    #[xdr(case = AUTH_NONE)]
    AuthNone,
    /// AUTH_SYS with the credential the server is to send (`cbsp_sys_cred`).
    #[xdr(case = AUTH_SYS)]
    AuthSys(AuthsysParms),
    /// RPCSEC_GSS with the handles (`cbsp_gss_handles`).
    #[xdr(case = RPCSEC_GSS)]
    RpcsecGss(GssCbHandles4),
}

/// BACKCHANNEL_CTL arguments (RFC 8881 section 18.33).
#[doc(alias = "BACKCHANNEL_CTL4args")]
#[derive(Clone, PartialEq, Eq, Debug, Xdr)]
pub struct BackchannelCtlArgs {
    /// The callback RPC program number.
    pub bca_cb_program: u32,
    /// Acceptable security for callbacks.
    pub bca_sec_parms: Vec<CallbackSecParms4>,
}

crate::nfs_status_res! {
    /// BACKCHANNEL_CTL result (RFC 8881 section 18.33).
    #[doc(alias = "BACKCHANNEL_CTL4res")]
    pub struct BackchannelCtlRes
}

// ---------------------------------------------------------------------------------------------
// BIND_CONN_TO_SESSION (41)
// ---------------------------------------------------------------------------------------------

xdr_enum! {
    /// The channels the client asks to bind a connection to (RFC 8881 section 18.34).
    #[doc(alias = "channel_dir_from_client4")]
    pub struct ChannelDirFromClient4 {
        CDFC4_FORE = 0x1,
        CDFC4_BACK = 0x2,
        CDFC4_FORE_OR_BOTH = 0x3,
        CDFC4_BACK_OR_BOTH = 0x7,
    }
}

xdr_enum! {
    /// The channels the server bound a connection to (RFC 8881 section 18.34).
    #[doc(alias = "channel_dir_from_server4")]
    pub struct ChannelDirFromServer4 {
        CDFS4_FORE = 0x1,
        CDFS4_BACK = 0x2,
        CDFS4_BOTH = 0x3,
    }
}

/// BIND_CONN_TO_SESSION arguments (RFC 8881 section 18.34).
#[doc(alias = "BIND_CONN_TO_SESSION4args")]
#[derive(Clone, Copy, PartialEq, Eq, Debug, Xdr)]
pub struct BindConnToSessionArgs {
    /// The session.
    pub bctsa_sessid: Sessionid4,
    /// Fore channel, back channel or both.
    pub bctsa_dir: ChannelDirFromClient4,
    /// Whether to use the connection in RDMA mode.
    pub bctsa_use_conn_in_rdma_mode: bool,
}

/// BIND_CONN_TO_SESSION result on success (RFC 8881 section 18.34).
#[doc(alias = "BIND_CONN_TO_SESSION4resok")]
#[derive(Clone, Copy, PartialEq, Eq, Debug, Xdr)]
pub struct BindConnToSessionResOk {
    /// The session.
    pub bctsr_sessid: Sessionid4,
    /// The channels the connection is now bound to.
    pub bctsr_dir: ChannelDirFromServer4,
    /// Whether the connection is used in RDMA mode.
    pub bctsr_use_conn_in_rdma_mode: bool,
}

crate::nfs_res! {
    /// BIND_CONN_TO_SESSION result (RFC 8881 section 18.34).
    #[doc(alias = "BIND_CONN_TO_SESSION4res")]
    pub enum BindConnToSessionRes => BindConnToSessionResOk
}

// ---------------------------------------------------------------------------------------------
// EXCHANGE_ID (42)
// ---------------------------------------------------------------------------------------------

/// EXCHANGE_ID flag: the server supports referrals (RFC 8881 section 18.35).
pub const EXCHGID4_FLAG_SUPP_MOVED_REFER: u32 = 0x0000_0001;
/// EXCHANGE_ID flag: the server supports migration.
pub const EXCHGID4_FLAG_SUPP_MOVED_MIGR: u32 = 0x0000_0002;
/// EXCHANGE_ID flag: the server supports fencing operations.
pub const EXCHGID4_FLAG_SUPP_FENCE_OPS: u32 = 0x0000_0004;
/// EXCHANGE_ID flag: stateids are bound to the principal that created them.
pub const EXCHGID4_FLAG_BIND_PRINC_STATEID: u32 = 0x0000_0100;
/// EXCHANGE_ID flag: the client ID is for non-pNFS use.
pub const EXCHGID4_FLAG_USE_NON_PNFS: u32 = 0x0001_0000;
/// EXCHANGE_ID flag: the client ID is for use with a pNFS metadata server.
pub const EXCHGID4_FLAG_USE_PNFS_MDS: u32 = 0x0002_0000;
/// EXCHANGE_ID flag: the client ID is for use with a pNFS data server.
pub const EXCHGID4_FLAG_USE_PNFS_DS: u32 = 0x0004_0000;
/// The three `EXCHGID4_FLAG_USE_*` bits.
pub const EXCHGID4_FLAG_MASK_PNFS: u32 = 0x0007_0000;
/// EXCHANGE_ID flag (arguments): update a confirmed record.
pub const EXCHGID4_FLAG_UPD_CONFIRMED_REC_A: u32 = 0x4000_0000;
/// EXCHANGE_ID flag (results): the client ID is confirmed.
pub const EXCHGID4_FLAG_CONFIRMED_R: u32 = 0x8000_0000;

/// `sec_oid4`: a GSS mechanism or algorithm object identifier, DER-encoded
/// (RFC 8881 section 3.2).
#[doc(alias = "sec_oid4")]
#[derive(Clone, PartialEq, Eq, Hash, Debug, Default, Xdr)]
pub struct SecOid4(pub Bytes);

/// Operations that must, or may, use the state protection (RFC 8881 section 18.35).
#[doc(alias = "state_protect_ops4")]
#[derive(Clone, PartialEq, Eq, Debug, Default, Xdr)]
pub struct StateProtectOps4 {
    /// Operations that must be protected.
    pub spo_must_enforce: Bitmap4,
    /// Operations that may be protected.
    pub spo_must_allow: Bitmap4,
}

/// SSV state protection parameters the client offers (RFC 8881 section 18.35).
#[doc(alias = "ssv_sp_parms4")]
#[derive(Clone, PartialEq, Eq, Debug, Default, Xdr)]
pub struct SsvSpParms4 {
    /// Operations to protect.
    pub ssp_ops: StateProtectOps4,
    /// Acceptable hash algorithms, in order of preference.
    pub ssp_hash_algs: Vec<SecOid4>,
    /// Acceptable encryption algorithms, in order of preference.
    pub ssp_encr_algs: Vec<SecOid4>,
    /// How many SSV versions the server keeps.
    pub ssp_window: u32,
    /// How many RPCSEC_GSS handles the client wants.
    pub ssp_num_gss_handles: u32,
}

xdr_enum! {
    /// The kind of state protection (RFC 8881 section 18.35).
    #[doc(alias = "state_protect_how4")]
    pub struct StateProtectHow4 {
        SP4_NONE = 0,
        SP4_MACH_CRED = 1,
        SP4_SSV = 2,
    }
}

/// State protection the client asks for (RFC 8881 section 18.35).
#[doc(alias = "state_protect4_a")]
#[derive(Clone, PartialEq, Eq, Debug, Xdr)]
pub enum StateProtect4A {
    /// No protection.
    #[xdr(case = StateProtectHow4::SP4_NONE)]
    None,
    /// Machine credential protection (`spa_mach_ops`).
    #[xdr(case = StateProtectHow4::SP4_MACH_CRED)]
    MachCred(StateProtectOps4),
    /// SSV protection (`spa_ssv_parms`).
    #[xdr(case = StateProtectHow4::SP4_SSV)]
    Ssv(SsvSpParms4),
}

/// EXCHANGE_ID arguments (RFC 8881 section 18.35).
#[doc(alias = "EXCHANGE_ID4args")]
#[derive(Clone, PartialEq, Eq, Debug, Xdr)]
pub struct ExchangeIdArgs {
    /// The client's identity.
    pub eia_clientowner: ClientOwner4,
    /// `EXCHGID4_FLAG_*` bits.
    pub eia_flags: u32,
    /// Requested state protection.
    pub eia_state_protect: StateProtect4A,
    /// The client implementation, optionally (at most one).
    #[xdr(max = 1)]
    pub eia_client_impl_id: Vec<NfsImplId4>,
}

/// SSV state protection the server grants (RFC 8881 section 18.35).
#[doc(alias = "ssv_prot_info4")]
#[derive(Clone, PartialEq, Eq, Debug, Default, Xdr)]
pub struct SsvProtInfo4 {
    /// Operations protected.
    pub spi_ops: StateProtectOps4,
    /// Index into `ssp_hash_algs` of the chosen hash algorithm.
    pub spi_hash_alg: u32,
    /// Index into `ssp_encr_algs` of the chosen encryption algorithm.
    pub spi_encr_alg: u32,
    /// Length of the SSV in bytes.
    pub spi_ssv_len: u32,
    /// How many SSV versions the server keeps.
    pub spi_window: u32,
    /// RPCSEC_GSS handles for the client to use.
    pub spi_handles: Vec<Gsshandle4T>,
}

/// State protection the server grants (RFC 8881 section 18.35).
#[doc(alias = "state_protect4_r")]
#[derive(Clone, PartialEq, Eq, Debug, Xdr)]
pub enum StateProtect4R {
    /// No protection.
    #[xdr(case = StateProtectHow4::SP4_NONE)]
    None,
    /// Machine credential protection (`spr_mach_ops`).
    #[xdr(case = StateProtectHow4::SP4_MACH_CRED)]
    MachCred(StateProtectOps4),
    /// SSV protection (`spr_ssv_info`).
    #[xdr(case = StateProtectHow4::SP4_SSV)]
    Ssv(SsvProtInfo4),
}

/// EXCHANGE_ID result on success (RFC 8881 section 18.35).
#[doc(alias = "EXCHANGE_ID4resok")]
#[derive(Clone, PartialEq, Eq, Debug, Xdr)]
pub struct ExchangeIdResOk {
    /// The client ID.
    pub eir_clientid: Clientid4,
    /// The sequence id CREATE_SESSION must use.
    pub eir_sequenceid: Sequenceid4,
    /// `EXCHGID4_FLAG_*` bits.
    pub eir_flags: u32,
    /// Granted state protection.
    pub eir_state_protect: StateProtect4R,
    /// The server's identity, for trunking.
    pub eir_server_owner: ServerOwner4,
    /// The scope within which the server's owner identities are unique.
    #[xdr(max = NFS4_OPAQUE_LIMIT)]
    pub eir_server_scope: Bytes,
    /// The server implementation, optionally (at most one).
    #[xdr(max = 1)]
    pub eir_server_impl_id: Vec<NfsImplId4>,
}

crate::nfs_res! {
    /// EXCHANGE_ID result (RFC 8881 section 18.35).
    #[doc(alias = "EXCHANGE_ID4res")]
    pub enum ExchangeIdRes => ExchangeIdResOk
}

// ---------------------------------------------------------------------------------------------
// CREATE_SESSION (43)
// ---------------------------------------------------------------------------------------------

/// CREATE_SESSION flag: the reply cache is persistent (RFC 8881 section 18.36).
pub const CREATE_SESSION4_FLAG_PERSIST: u32 = 0x0000_0001;
/// CREATE_SESSION flag: use this connection for the backchannel too.
pub const CREATE_SESSION4_FLAG_CONN_BACK_CHAN: u32 = 0x0000_0002;
/// CREATE_SESSION flag: use RDMA mode on this connection.
pub const CREATE_SESSION4_FLAG_CONN_RDMA: u32 = 0x0000_0004;

/// Limits of one channel of a session (RFC 8881 section 18.36).
#[doc(alias = "channel_attrs4")]
#[derive(Clone, PartialEq, Eq, Debug, Default, Xdr)]
pub struct ChannelAttrs4 {
    /// Padding the receiver may add before the payload (RDMA).
    pub ca_headerpadsize: Count4,
    /// Largest request, in bytes.
    pub ca_maxrequestsize: Count4,
    /// Largest reply, in bytes.
    pub ca_maxresponsesize: Count4,
    /// Largest reply that may be cached, in bytes.
    pub ca_maxresponsesize_cached: Count4,
    /// Most operations in one COMPOUND.
    pub ca_maxoperations: Count4,
    /// Most outstanding requests (slots).
    pub ca_maxrequests: Count4,
    /// RDMA inbound read depth, optionally (at most one).
    #[xdr(max = 1)]
    pub ca_rdma_ird: Vec<u32>,
}

/// CREATE_SESSION arguments (RFC 8881 section 18.36).
#[doc(alias = "CREATE_SESSION4args")]
#[derive(Clone, PartialEq, Eq, Debug, Xdr)]
pub struct CreateSessionArgs {
    /// The client ID from EXCHANGE_ID.
    pub csa_clientid: Clientid4,
    /// The sequence id from EXCHANGE_ID.
    pub csa_sequence: Sequenceid4,
    /// `CREATE_SESSION4_FLAG_*` bits.
    pub csa_flags: u32,
    /// Requested fore channel limits.
    pub csa_fore_chan_attrs: ChannelAttrs4,
    /// Requested back channel limits.
    pub csa_back_chan_attrs: ChannelAttrs4,
    /// The callback RPC program number.
    pub csa_cb_program: u32,
    /// Acceptable security for callbacks.
    pub csa_sec_parms: Vec<CallbackSecParms4>,
}

/// CREATE_SESSION result on success (RFC 8881 section 18.36).
#[doc(alias = "CREATE_SESSION4resok")]
#[derive(Clone, PartialEq, Eq, Debug, Xdr)]
pub struct CreateSessionResOk {
    /// The new session.
    pub csr_sessionid: Sessionid4,
    /// The sequence id the client used.
    pub csr_sequence: Sequenceid4,
    /// `CREATE_SESSION4_FLAG_*` bits granted.
    pub csr_flags: u32,
    /// Granted fore channel limits.
    pub csr_fore_chan_attrs: ChannelAttrs4,
    /// Granted back channel limits.
    pub csr_back_chan_attrs: ChannelAttrs4,
}

crate::nfs_res! {
    /// CREATE_SESSION result (RFC 8881 section 18.36).
    #[doc(alias = "CREATE_SESSION4res")]
    pub enum CreateSessionRes => CreateSessionResOk
}

// ---------------------------------------------------------------------------------------------
// DESTROY_SESSION (44), FREE_STATEID (45)
// ---------------------------------------------------------------------------------------------

/// DESTROY_SESSION arguments (RFC 8881 section 18.37).
#[doc(alias = "DESTROY_SESSION4args")]
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, Xdr)]
pub struct DestroySessionArgs {
    /// The session to destroy.
    pub dsa_sessionid: Sessionid4,
}

crate::nfs_status_res! {
    /// DESTROY_SESSION result (RFC 8881 section 18.37).
    #[doc(alias = "DESTROY_SESSION4res")]
    pub struct DestroySessionRes
}

/// FREE_STATEID arguments (RFC 8881 section 18.38).
#[doc(alias = "FREE_STATEID4args")]
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, Xdr)]
pub struct FreeStateidArgs {
    /// The stateid to free.
    pub fsa_stateid: Stateid4,
}

crate::nfs_status_res! {
    /// FREE_STATEID result (RFC 8881 section 18.38).
    #[doc(alias = "FREE_STATEID4res")]
    pub struct FreeStateidRes
}

// ---------------------------------------------------------------------------------------------
// SECINFO_NO_NAME (52)
// ---------------------------------------------------------------------------------------------

xdr_enum! {
    /// Which object SECINFO_NO_NAME asks about (RFC 8881 section 18.45).
    #[doc(alias = "secinfo_style4")]
    pub struct SecinfoStyle4 {
        SECINFO_STYLE4_CURRENT_FH = 0,
        SECINFO_STYLE4_PARENT = 1,
    }
}

/// SECINFO_NO_NAME arguments: the current filehandle or its parent (RFC 8881 section 18.45).
#[doc(alias = "SECINFO_NO_NAME4args")]
pub type SecInfoNoNameArgs = SecinfoStyle4;

/// SECINFO_NO_NAME result, the same as SECINFO's (RFC 8881 section 18.45).
#[doc(alias = "SECINFO_NO_NAME4res")]
pub type SecInfoNoNameRes = SecInfoRes;

// ---------------------------------------------------------------------------------------------
// SEQUENCE (53)
// ---------------------------------------------------------------------------------------------

/// SEQUENCE status flag: the backchannel is down for the client (RFC 8881 section 18.46).
pub const SEQ4_STATUS_CB_PATH_DOWN: u32 = 0x0000_0001;
/// SEQUENCE status flag: a backchannel GSS context is about to expire.
pub const SEQ4_STATUS_CB_GSS_CONTEXTS_EXPIRING: u32 = 0x0000_0002;
/// SEQUENCE status flag: a backchannel GSS context has expired.
pub const SEQ4_STATUS_CB_GSS_CONTEXTS_EXPIRED: u32 = 0x0000_0004;
/// SEQUENCE status flag: all state was revoked because the lease expired.
pub const SEQ4_STATUS_EXPIRED_ALL_STATE_REVOKED: u32 = 0x0000_0008;
/// SEQUENCE status flag: some state was revoked because the lease expired.
pub const SEQ4_STATUS_EXPIRED_SOME_STATE_REVOKED: u32 = 0x0000_0010;
/// SEQUENCE status flag: the administrator revoked some state.
pub const SEQ4_STATUS_ADMIN_STATE_REVOKED: u32 = 0x0000_0020;
/// SEQUENCE status flag: recallable state was revoked after a recall went unanswered.
pub const SEQ4_STATUS_RECALLABLE_STATE_REVOKED: u32 = 0x0000_0040;
/// SEQUENCE status flag: a file system the client has state on moved.
pub const SEQ4_STATUS_LEASE_MOVED: u32 = 0x0000_0080;
/// SEQUENCE status flag: the server restarted and the client must reclaim.
pub const SEQ4_STATUS_RESTART_RECLAIM_NEEDED: u32 = 0x0000_0100;
/// SEQUENCE status flag: this session's backchannel is down.
pub const SEQ4_STATUS_CB_PATH_DOWN_SESSION: u32 = 0x0000_0200;
/// SEQUENCE status flag: the backchannel had an unrecoverable fault.
pub const SEQ4_STATUS_BACKCHANNEL_FAULT: u32 = 0x0000_0400;
/// SEQUENCE status flag: a device ID changed.
pub const SEQ4_STATUS_DEVID_CHANGED: u32 = 0x0000_0800;
/// SEQUENCE status flag: a device ID was deleted.
pub const SEQ4_STATUS_DEVID_DELETED: u32 = 0x0000_1000;

/// SEQUENCE arguments (RFC 8881 section 18.46).
#[doc(alias = "SEQUENCE4args")]
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default, Xdr)]
pub struct SequenceArgs {
    /// The session.
    pub sa_sessionid: Sessionid4,
    /// The slot's sequence id.
    pub sa_sequenceid: Sequenceid4,
    /// The slot.
    pub sa_slotid: Slotid4,
    /// The highest slot the client has outstanding.
    pub sa_highest_slotid: Slotid4,
    /// Whether the server should cache the reply.
    pub sa_cachethis: bool,
}

/// SEQUENCE result on success (RFC 8881 section 18.46).
#[doc(alias = "SEQUENCE4resok")]
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default, Xdr)]
pub struct SequenceResOk {
    /// The session.
    pub sr_sessionid: Sessionid4,
    /// The slot's sequence id.
    pub sr_sequenceid: Sequenceid4,
    /// The slot.
    pub sr_slotid: Slotid4,
    /// The highest slot the server will accept now.
    pub sr_highest_slotid: Slotid4,
    /// The highest slot the server would like the client to use.
    pub sr_target_highest_slotid: Slotid4,
    /// `SEQ4_STATUS_*` bits.
    pub sr_status_flags: u32,
}

crate::nfs_res! {
    /// SEQUENCE result (RFC 8881 section 18.46).
    #[doc(alias = "SEQUENCE4res")]
    pub enum SequenceRes => SequenceResOk
}

// ---------------------------------------------------------------------------------------------
// SET_SSV (54)
// ---------------------------------------------------------------------------------------------

/// Input of the SET_SSV argument digest: the SEQUENCE arguments (RFC 8881 section 18.47).
#[doc(alias = "ssa_digest_input4")]
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, Xdr)]
pub struct SsaDigestInput4 {
    /// The SEQUENCE arguments of the same COMPOUND.
    pub sdi_seqargs: SequenceArgs,
}

/// SET_SSV arguments (RFC 8881 section 18.47).
#[doc(alias = "SET_SSV4args")]
#[derive(Clone, PartialEq, Eq, Debug, Default, Xdr)]
pub struct SetSsvArgs {
    /// The new SSV contribution.
    pub ssa_ssv: Bytes,
    /// Digest of [`SsaDigestInput4`].
    pub ssa_digest: Bytes,
}

/// Input of the SET_SSV result digest: the SEQUENCE result (RFC 8881 section 18.47).
#[doc(alias = "ssr_digest_input4")]
#[derive(Clone, PartialEq, Debug, Xdr)]
pub struct SsrDigestInput4 {
    /// The SEQUENCE result of the same COMPOUND.
    pub sdi_seqres: SequenceRes,
}

/// SET_SSV result on success (RFC 8881 section 18.47).
#[doc(alias = "SET_SSV4resok")]
#[derive(Clone, PartialEq, Eq, Debug, Default, Xdr)]
pub struct SetSsvResOk {
    /// Digest of [`SsrDigestInput4`].
    pub ssr_digest: Bytes,
}

crate::nfs_res! {
    /// SET_SSV result (RFC 8881 section 18.47).
    #[doc(alias = "SET_SSV4res")]
    pub enum SetSsvRes => SetSsvResOk
}

// ---------------------------------------------------------------------------------------------
// TEST_STATEID (55)
// ---------------------------------------------------------------------------------------------

/// TEST_STATEID arguments (RFC 8881 section 18.48).
#[doc(alias = "TEST_STATEID4args")]
#[derive(Clone, PartialEq, Eq, Debug, Default, Xdr)]
pub struct TestStateidArgs {
    /// The stateids to test.
    pub ts_stateids: Vec<Stateid4>,
}

/// TEST_STATEID result on success (RFC 8881 section 18.48).
#[doc(alias = "TEST_STATEID4resok")]
#[derive(Clone, PartialEq, Eq, Debug, Default, Xdr)]
pub struct TestStateidResOk {
    /// One status per stateid, in order.
    pub tsr_status_codes: Vec<NfsStat4>,
}

crate::nfs_res! {
    /// TEST_STATEID result (RFC 8881 section 18.48).
    #[doc(alias = "TEST_STATEID4res")]
    pub enum TestStateidRes => TestStateidResOk
}

// ---------------------------------------------------------------------------------------------
// DESTROY_CLIENTID (57), RECLAIM_COMPLETE (58)
// ---------------------------------------------------------------------------------------------

/// DESTROY_CLIENTID arguments (RFC 8881 section 18.50).
#[doc(alias = "DESTROY_CLIENTID4args")]
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, Xdr)]
pub struct DestroyClientIdArgs {
    /// The client ID to destroy.
    pub dca_clientid: Clientid4,
}

crate::nfs_status_res! {
    /// DESTROY_CLIENTID result (RFC 8881 section 18.50).
    #[doc(alias = "DESTROY_CLIENTID4res")]
    pub struct DestroyClientIdRes
}

/// RECLAIM_COMPLETE arguments (RFC 8881 section 18.51).
#[doc(alias = "RECLAIM_COMPLETE4args")]
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, Xdr)]
pub struct ReclaimCompleteArgs {
    /// True when reclaim is complete only for the current filehandle's file system.
    pub rca_one_fs: bool,
}

crate::nfs_status_res! {
    /// RECLAIM_COMPLETE result (RFC 8881 section 18.51).
    #[doc(alias = "RECLAIM_COMPLETE4res")]
    pub struct ReclaimCompleteRes
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::xdr::{from_bytes, to_bytes};

    crate::roundtrip_tests!(
        authsys_parms: AuthsysParms,
        gsshandle4_t: Gsshandle4T,
        gss_cb_handles4: GssCbHandles4,
        callback_sec_parms4: CallbackSecParms4,
        backchannel_ctl_args: BackchannelCtlArgs,
        backchannel_ctl_res: BackchannelCtlRes,
        channel_dir_from_client4: ChannelDirFromClient4,
        channel_dir_from_server4: ChannelDirFromServer4,
        bind_conn_to_session_args: BindConnToSessionArgs,
        bind_conn_to_session_res_ok: BindConnToSessionResOk,
        bind_conn_to_session_res: BindConnToSessionRes,
        sec_oid4: SecOid4,
        state_protect_ops4: StateProtectOps4,
        ssv_sp_parms4: SsvSpParms4,
        state_protect_how4: StateProtectHow4,
        state_protect4_a: StateProtect4A,
        exchange_id_args: ExchangeIdArgs,
        ssv_prot_info4: SsvProtInfo4,
        state_protect4_r: StateProtect4R,
        exchange_id_res_ok: ExchangeIdResOk,
        exchange_id_res: ExchangeIdRes,
        channel_attrs4: ChannelAttrs4,
        create_session_args: CreateSessionArgs,
        create_session_res_ok: CreateSessionResOk,
        create_session_res: CreateSessionRes,
        destroy_session_args: DestroySessionArgs,
        destroy_session_res: DestroySessionRes,
        free_stateid_args: FreeStateidArgs,
        free_stateid_res: FreeStateidRes,
        secinfo_style4: SecinfoStyle4,
        sec_info_no_name_args: SecInfoNoNameArgs,
        sec_info_no_name_res: SecInfoNoNameRes,
        sequence_args: SequenceArgs,
        sequence_res_ok: SequenceResOk,
        sequence_res: SequenceRes,
        ssa_digest_input4: SsaDigestInput4,
        set_ssv_args: SetSsvArgs,
        ssr_digest_input4: SsrDigestInput4,
        set_ssv_res_ok: SetSsvResOk,
        set_ssv_res: SetSsvRes,
        test_stateid_args: TestStateidArgs,
        test_stateid_res_ok: TestStateidResOk,
        test_stateid_res: TestStateidRes,
        destroy_client_id_args: DestroyClientIdArgs,
        destroy_client_id_res: DestroyClientIdRes,
        reclaim_complete_args: ReclaimCompleteArgs,
        reclaim_complete_res: ReclaimCompleteRes,
    );

    fn words(w: &[u32]) -> Vec<u8> {
        w.iter().flat_map(|v| v.to_be_bytes()).collect()
    }

    #[test]
    fn sequence_args_known_encoding() {
        let args = SequenceArgs {
            sa_sessionid: [0xab; 16],
            sa_sequenceid: 7,
            sa_slotid: 2,
            sa_highest_slotid: 9,
            sa_cachethis: true,
        };
        let mut want = vec![0xab; 16];
        want.extend(words(&[7, 2, 9, 1]));
        let b = to_bytes(&args);
        assert_eq!(&b[..], &want[..]);
        assert_eq!(from_bytes::<SequenceArgs>(b).unwrap(), args);
    }

    #[test]
    fn exchange_id_args_known_encoding() {
        let args = ExchangeIdArgs {
            eia_clientowner: ClientOwner4 {
                co_verifier: [1, 2, 3, 4, 5, 6, 7, 8],
                co_ownerid: Bytes::from_static(b"linux"),
            },
            eia_flags: EXCHGID4_FLAG_SUPP_MOVED_REFER | EXCHGID4_FLAG_BIND_PRINC_STATEID,
            eia_state_protect: StateProtect4A::None,
            eia_client_impl_id: vec![],
        };
        let mut want = vec![1, 2, 3, 4, 5, 6, 7, 8];
        want.extend(words(&[5]));
        want.extend(b"linux\0\0\0");
        want.extend(words(&[0x101, 0, 0]));
        assert_eq!(&to_bytes(&args)[..], &want[..]);
    }

    #[test]
    fn impl_id_list_longer_than_one_is_refused() {
        let mut b = vec![0u8; 8];
        b.extend(words(&[0, 0, 0, 2]));
        let id = to_bytes(&NfsImplId4::default());
        b.extend(&id[..]);
        b.extend(&id[..]);
        let e = from_bytes::<ExchangeIdArgs>(Bytes::from(b)).unwrap_err();
        assert_eq!(
            e.kind,
            crate::xdr::DecodeErrorKind::TooLong { len: 2, max: 1 }
        );
        assert_eq!(e.what, "ExchangeIdArgs.eia_client_impl_id");
    }

    #[test]
    fn callback_sec_parms_auth_sys_encoding_and_unknown_flavor() {
        let p = CallbackSecParms4::AuthSys(AuthsysParms {
            stamp: 3,
            machinename: "ab".into(),
            uid: 1000,
            gid: 100,
            gids: vec![4, 5],
        });
        let mut want = words(&[1, 3, 2]);
        want.extend(b"ab\0\0");
        want.extend(words(&[1000, 100, 2, 4, 5]));
        assert_eq!(&to_bytes(&p)[..], &want[..]);
        // Flavor 390003 (RPCSEC_GSS v3) has no arm here.
        let e = from_bytes::<CallbackSecParms4>(to_bytes(&390003u32)).unwrap_err();
        assert_eq!(e.kind, crate::xdr::DecodeErrorKind::BadDiscriminant(390003));
    }

    #[test]
    fn status_of_every_result() {
        assert_eq!(
            DestroySessionRes {
                status: NfsStat4::NFS4ERR_BADSESSION
            }
            .status(),
            NfsStat4::NFS4ERR_BADSESSION
        );
        assert_eq!(
            SequenceRes::Ok(SequenceResOk::default()).status(),
            NfsStat4::NFS4_OK
        );
        assert_eq!(
            SecInfoNoNameRes::Err(NfsStat4::NFS4ERR_WRONGSEC).status(),
            NfsStat4::NFS4ERR_WRONGSEC
        );
    }
}

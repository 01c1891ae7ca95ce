//! Callback operations and CB_COMPOUND (RFC 8881 section 20, RFC 7862 section 16).
//!
//! The server sends CB_COMPOUND ([`CbCompoundArgs`]) to the client over the back channel; the
//! client answers with [`CbCompoundRes`]. Each operation is an [`NfsCbArgop4`] /
//! [`NfsCbResop4`] variant named like the operation without `CB_`.
//!
//! An operation number the decoder does not know ends the argument array
//! ([`NfsCbArgop4::Unknown`]): its arguments cannot be delimited, so nothing after it can be
//! read. [`CbCompoundArgs::decode_partial`] also keeps the operations before one whose
//! arguments fail to decode, so that a client can answer them and the failing one
//! (`NFS4ERR_BADXDR`) instead of dropping the whole request.

use bytes::Bytes;

use super::consts::*;
use super::ops::v42::WriteResponse4;
use super::types::*;
use crate::xdr::{DecodeError, Decoder, Encoder, Utf8String, Xdr};
use crate::xdr_enum;

use super::compound::{op_table, OpFlags};

// ---------------------------------------------------------------------------------------------
// CB_GETATTR (3)
// ---------------------------------------------------------------------------------------------

/// CB_GETATTR arguments (RFC 8881 section 20.1): attributes of a file the client holds a write
/// delegation for.
#[doc(alias = "CB_GETATTR4args")]
#[derive(Clone, PartialEq, Eq, Debug, Default, Xdr)]
pub struct CbGetAttrArgs {
    /// The file.
    pub fh: NfsFh4,
    /// Attributes wanted.
    pub attr_request: Bitmap4,
}

/// CB_GETATTR success result (RFC 8881 section 20.1).
#[doc(alias = "CB_GETATTR4resok")]
#[derive(Clone, PartialEq, Eq, Debug, Default, Xdr)]
pub struct CbGetAttrResOk {
    /// The attributes, as the client sees them.
    pub obj_attributes: Fattr4,
}

crate::nfs_res! {
    /// CB_GETATTR result (RFC 8881 section 20.1).
    #[doc(alias = "CB_GETATTR4res")]
    pub enum CbGetAttrRes => CbGetAttrResOk
}

// ---------------------------------------------------------------------------------------------
// CB_RECALL (4)
// ---------------------------------------------------------------------------------------------

/// CB_RECALL arguments (RFC 8881 section 20.2): return a delegation.
#[doc(alias = "CB_RECALL4args")]
#[derive(Clone, PartialEq, Eq, Debug, Default, Xdr)]
pub struct CbRecallArgs {
    /// The delegation's stateid.
    pub stateid: Stateid4,
    /// The file is being truncated to zero (the client need not flush).
    pub truncate: bool,
    /// The delegated file.
    pub fh: NfsFh4,
}

crate::nfs_status_res! {
    /// CB_RECALL result (RFC 8881 section 20.2).
    #[doc(alias = "CB_RECALL4res")]
    pub struct CbRecallRes
}

// ---------------------------------------------------------------------------------------------
// CB_LAYOUTRECALL (5)
// ---------------------------------------------------------------------------------------------

xdr_enum! {
    /// `layoutrecall_type4`: what a CB_LAYOUTRECALL covers (RFC 8881 section 20.3); the values
    /// are `LAYOUT4_RET_REC_FILE`, `_FSID` and `_ALL`.
    #[doc(alias = "layoutrecall_type4")]
    pub struct LayoutrecallType4 {
        LAYOUTRECALL4_FILE = 1,
        LAYOUTRECALL4_FSID = 2,
        LAYOUTRECALL4_ALL = 3,
    }
}

/// `layoutrecall_file4`: a range of one file's layouts (RFC 8881 section 20.3).
#[doc(alias = "layoutrecall_file4")]
#[derive(Clone, PartialEq, Eq, Debug, Default, Xdr)]
pub struct LayoutrecallFile4 {
    /// The file.
    pub lor_fh: NfsFh4,
    /// Start of the range.
    pub lor_offset: Offset4,
    /// Length of the range.
    pub lor_length: Length4,
    /// The layout stateid.
    pub lor_stateid: Stateid4,
}

/// `layoutrecall4`: the layouts recalled (RFC 8881 section 20.3).
#[doc(alias = "layoutrecall4")]
#[derive(Clone, PartialEq, Eq, Debug, Xdr)]
pub enum Layoutrecall4 {
    /// A range of one file (`lor_layout`).
    #[xdr(case = LayoutrecallType4::LAYOUTRECALL4_FILE)]
    File(LayoutrecallFile4),
    /// Every layout of a file system (`lor_fsid`).
    #[xdr(case = LayoutrecallType4::LAYOUTRECALL4_FSID)]
    Fsid(Fsid4),
    /// Every layout the client holds.
    #[xdr(case = LayoutrecallType4::LAYOUTRECALL4_ALL)]
    All,
}

/// CB_LAYOUTRECALL arguments (RFC 8881 section 20.3).
#[doc(alias = "CB_LAYOUTRECALL4args")]
#[derive(Clone, PartialEq, Eq, Debug, Xdr)]
pub struct CbLayoutRecallArgs {
    /// The layout type.
    pub clora_type: Layouttype4,
    /// READ, RW or ANY.
    pub clora_iomode: Layoutiomode4,
    /// The layout is changing (the client should not write back through it).
    pub clora_changed: bool,
    /// What is recalled.
    pub clora_recall: Layoutrecall4,
}

crate::nfs_status_res! {
    /// CB_LAYOUTRECALL result (RFC 8881 section 20.3).
    #[doc(alias = "CB_LAYOUTRECALL4res")]
    pub struct CbLayoutRecallRes
}

// ---------------------------------------------------------------------------------------------
// CB_NOTIFY (6)
// ---------------------------------------------------------------------------------------------

xdr_enum! {
    /// `notify_type4`: directory notification types, the bit numbers of a [`Notify4`] mask
    /// and of GET_DIR_DELEGATION's notification bitmaps (RFC 8881 section 20.4).
    #[doc(alias = "notify_type4")]
    pub struct NotifyType4 {
        NOTIFY4_CHANGE_CHILD_ATTRS = 0,
        NOTIFY4_CHANGE_DIR_ATTRS = 1,
        NOTIFY4_REMOVE_ENTRY = 2,
        NOTIFY4_ADD_ENTRY = 3,
        NOTIFY4_RENAME_ENTRY = 4,
        NOTIFY4_CHANGE_COOKIE_VERIFIER = 5,
    }
}

/// `notify_entry4`: a changed directory entry (RFC 8881 section 20.4).
#[doc(alias = "notify_entry4")]
#[derive(Clone, PartialEq, Eq, Debug, Default, Xdr)]
pub struct NotifyEntry4 {
    /// The entry's name.
    pub ne_file: Component4,
    /// Its attributes.
    pub ne_attrs: Fattr4,
}

/// `prev_entry4`: the entry before an added one (RFC 8881 section 20.4).
#[doc(alias = "prev_entry4")]
#[derive(Clone, PartialEq, Eq, Debug, Default, Xdr)]
pub struct PrevEntry4 {
    /// The previous entry.
    pub pe_prev_entry: NotifyEntry4,
    /// What READDIR returned for it.
    pub pe_prev_entry_cookie: NfsCookie4,
}

/// `notify_remove4`: a removed entry (RFC 8881 section 20.4).
#[doc(alias = "notify_remove4")]
#[derive(Clone, PartialEq, Eq, Debug, Default, Xdr)]
pub struct NotifyRemove4 {
    /// The entry.
    pub nrm_old_entry: NotifyEntry4,
    /// Its READDIR cookie.
    pub nrm_old_entry_cookie: NfsCookie4,
}

/// `notify_add4`: an added entry (RFC 8881 section 20.4).
#[doc(alias = "notify_add4")]
#[derive(Clone, PartialEq, Eq, Debug, Default, Xdr)]
pub struct NotifyAdd4 {
    /// The entry it replaced, if it was renamed over one (at most one).
    #[xdr(max = 1)]
    pub nad_old_entry: Vec<NotifyRemove4>,
    /// The new entry.
    pub nad_new_entry: NotifyEntry4,
    /// What READDIR would return as its cookie (at most one).
    #[xdr(max = 1)]
    pub nad_new_entry_cookie: Vec<NfsCookie4>,
    /// The entry before it (at most one).
    #[xdr(max = 1)]
    pub nad_prev_entry: Vec<PrevEntry4>,
    /// It is the last entry of the directory.
    pub nad_last_entry: bool,
}

/// `notify_attr4`: an entry whose attributes changed (RFC 8881 section 20.4).
#[doc(alias = "notify_attr4")]
#[derive(Clone, PartialEq, Eq, Debug, Default, Xdr)]
pub struct NotifyAttr4 {
    /// The entry and its new attributes.
    pub na_changed_entry: NotifyEntry4,
}

/// `notify_rename4`: a renamed entry (RFC 8881 section 20.4).
#[doc(alias = "notify_rename4")]
#[derive(Clone, PartialEq, Eq, Debug, Default, Xdr)]
pub struct NotifyRename4 {
    /// The old name.
    pub nrn_old_entry: NotifyRemove4,
    /// The new name.
    pub nrn_new_entry: NotifyAdd4,
}

/// `notify_verifier4`: the directory's cookie verifier changed (RFC 8881 section 20.4).
#[doc(alias = "notify_verifier4")]
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, Xdr)]
pub struct NotifyVerifier4 {
    /// The old verifier.
    pub nv_old_cookieverf: Verifier4,
    /// The new verifier.
    pub nv_new_cookieverf: Verifier4,
}

/// `notify4`: one group of notifications (RFC 8881 section 20.4).
#[doc(alias = "notify4")]
#[derive(Clone, PartialEq, Eq, Debug, Default, Xdr)]
pub struct Notify4 {
    /// Which notifications follow: [`NotifyType4`] (CB_NOTIFY) or [`NotifyDeviceidType4`]
    /// (CB_NOTIFY_DEVICEID) bit numbers.
    pub notify_mask: Bitmap4,
    /// The encoded `notify_*4` / `notify_deviceid_*4` values, in bit order (`notifylist4`).
    pub notify_vals: Bytes,
}

/// CB_NOTIFY arguments (RFC 8881 section 20.4): changes to a delegated directory.
#[doc(alias = "CB_NOTIFY4args")]
#[derive(Clone, PartialEq, Eq, Debug, Default, Xdr)]
pub struct CbNotifyArgs {
    /// The directory delegation's stateid.
    pub cna_stateid: Stateid4,
    /// The directory.
    pub cna_fh: NfsFh4,
    /// The changes.
    pub cna_changes: Vec<Notify4>,
}

crate::nfs_status_res! {
    /// CB_NOTIFY result (RFC 8881 section 20.4).
    #[doc(alias = "CB_NOTIFY4res")]
    pub struct CbNotifyRes
}

// ---------------------------------------------------------------------------------------------
// CB_PUSH_DELEG (7)
// ---------------------------------------------------------------------------------------------

/// CB_PUSH_DELEG arguments (RFC 8881 section 20.5): offer a delegation the client wanted.
#[doc(alias = "CB_PUSH_DELEG4args")]
#[derive(Clone, PartialEq, Eq, Debug, Xdr)]
pub struct CbPushDelegArgs {
    /// The file.
    pub cpda_fh: NfsFh4,
    /// The delegation.
    pub cpda_delegation: OpenDelegation4,
}

crate::nfs_status_res! {
    /// CB_PUSH_DELEG result (RFC 8881 section 20.5).
    #[doc(alias = "CB_PUSH_DELEG4res")]
    pub struct CbPushDelegRes
}

// ---------------------------------------------------------------------------------------------
// CB_RECALL_ANY (8)
// ---------------------------------------------------------------------------------------------

/// `RCA4_TYPE_MASK_RDATA_DLG`: bit number in `craa_type_mask`: read delegations (RFC 8881
/// section 20.6).
pub const RCA4_TYPE_MASK_RDATA_DLG: u32 = 0;
/// `RCA4_TYPE_MASK_WDATA_DLG`: write delegations.
pub const RCA4_TYPE_MASK_WDATA_DLG: u32 = 1;
/// `RCA4_TYPE_MASK_DIR_DLG`: directory delegations.
pub const RCA4_TYPE_MASK_DIR_DLG: u32 = 2;
/// `RCA4_TYPE_MASK_FILE_LAYOUT`: file layouts.
pub const RCA4_TYPE_MASK_FILE_LAYOUT: u32 = 3;
/// `RCA4_TYPE_MASK_BLK_LAYOUT`: block layouts.
pub const RCA4_TYPE_MASK_BLK_LAYOUT: u32 = 4;
/// `RCA4_TYPE_MASK_OBJ_LAYOUT_MIN`: first bit for object layouts.
pub const RCA4_TYPE_MASK_OBJ_LAYOUT_MIN: u32 = 8;
/// `RCA4_TYPE_MASK_OBJ_LAYOUT_MAX`: last bit for object layouts.
pub const RCA4_TYPE_MASK_OBJ_LAYOUT_MAX: u32 = 9;
/// `RCA4_TYPE_MASK_OTHER_LAYOUT_MIN`: first bit for other layout types.
pub const RCA4_TYPE_MASK_OTHER_LAYOUT_MIN: u32 = 12;
/// `RCA4_TYPE_MASK_OTHER_LAYOUT_MAX`: last bit for other layout types.
pub const RCA4_TYPE_MASK_OTHER_LAYOUT_MAX: u32 = 15;

/// CB_RECALL_ANY arguments (RFC 8881 section 20.6): return state down to a number of objects.
#[doc(alias = "CB_RECALL_ANY4args")]
#[derive(Clone, PartialEq, Eq, Debug, Default, Xdr)]
pub struct CbRecallAnyArgs {
    /// How many recallable objects the client may keep.
    pub craa_objects_to_keep: u32,
    /// Which kinds of state (`RCA4_TYPE_MASK_*` bit numbers).
    pub craa_type_mask: Bitmap4,
}

crate::nfs_status_res! {
    /// CB_RECALL_ANY result (RFC 8881 section 20.6).
    #[doc(alias = "CB_RECALL_ANY4res")]
    pub struct CbRecallAnyRes
}

// ---------------------------------------------------------------------------------------------
// CB_RECALLABLE_OBJ_AVAIL (9)
// ---------------------------------------------------------------------------------------------

/// CB_RECALLABLE_OBJ_AVAIL arguments (RFC 8881 section 20.7): the server can grant state again;
/// the same shape as CB_RECALL_ANY's.
#[doc(alias = "CB_RECALLABLE_OBJ_AVAIL4args")]
pub type CbRecallableObjAvailArgs = CbRecallAnyArgs;

crate::nfs_status_res! {
    /// CB_RECALLABLE_OBJ_AVAIL result (RFC 8881 section 20.7).
    #[doc(alias = "CB_RECALLABLE_OBJ_AVAIL4res")]
    pub struct CbRecallableObjAvailRes
}

// ---------------------------------------------------------------------------------------------
// CB_RECALL_SLOT (10)
// ---------------------------------------------------------------------------------------------

/// CB_RECALL_SLOT arguments (RFC 8881 section 20.8): shrink the fore channel's slot table.
#[doc(alias = "CB_RECALL_SLOT4args")]
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, Xdr)]
pub struct CbRecallSlotArgs {
    /// The highest slot id the client may use from now on.
    pub rsa_target_highest_slotid: Slotid4,
}

crate::nfs_status_res! {
    /// CB_RECALL_SLOT result (RFC 8881 section 20.8).
    #[doc(alias = "CB_RECALL_SLOT4res")]
    pub struct CbRecallSlotRes
}

// ---------------------------------------------------------------------------------------------
// CB_SEQUENCE (11)
// ---------------------------------------------------------------------------------------------

/// `referring_call4`: a fore-channel request that triggered this callback (RFC 8881 section
/// 20.9).
#[doc(alias = "referring_call4")]
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default, Xdr)]
pub struct ReferringCall4 {
    /// Its sequence id.
    pub rc_sequenceid: Sequenceid4,
    /// Its slot.
    pub rc_slotid: Slotid4,
}

/// `referring_call_list4`: the referring calls of one session (RFC 8881 section 20.9).
#[doc(alias = "referring_call_list4")]
#[derive(Clone, PartialEq, Eq, Debug, Default, Xdr)]
pub struct ReferringCallList4 {
    /// The fore-channel session.
    pub rcl_sessionid: Sessionid4,
    /// The calls.
    pub rcl_referring_calls: Vec<ReferringCall4>,
}

/// CB_SEQUENCE arguments (RFC 8881 section 20.9): the first operation of every CB_COMPOUND.
#[doc(alias = "CB_SEQUENCE4args")]
#[derive(Clone, PartialEq, Eq, Debug, Default, Xdr)]
pub struct CbSequenceArgs {
    /// The session.
    pub csa_sessionid: Sessionid4,
    /// The slot's sequence id.
    pub csa_sequenceid: Sequenceid4,
    /// The slot.
    pub csa_slotid: Slotid4,
    /// The highest slot the server has in use.
    pub csa_highest_slotid: Slotid4,
    /// The client should cache the reply.
    pub csa_cachethis: bool,
    /// Fore-channel requests this callback relates to (for ordering with their replies).
    pub csa_referring_call_lists: Vec<ReferringCallList4>,
}

/// CB_SEQUENCE success result (RFC 8881 section 20.9).
#[doc(alias = "CB_SEQUENCE4resok")]
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, Xdr)]
pub struct CbSequenceResOk {
    /// The session.
    pub csr_sessionid: Sessionid4,
    /// The slot's sequence id.
    pub csr_sequenceid: Sequenceid4,
    /// The slot.
    pub csr_slotid: Slotid4,
    /// The highest slot the client will accept now.
    pub csr_highest_slotid: Slotid4,
    /// The highest slot the client would like the server to use.
    pub csr_target_highest_slotid: Slotid4,
}

crate::nfs_res! {
    /// CB_SEQUENCE result (RFC 8881 section 20.9).
    #[doc(alias = "CB_SEQUENCE4res")]
    pub enum CbSequenceRes => CbSequenceResOk
}

// ---------------------------------------------------------------------------------------------
// CB_WANTS_CANCELLED (12)
// ---------------------------------------------------------------------------------------------

/// CB_WANTS_CANCELLED arguments (RFC 8881 section 20.10): pending delegation wants dropped.
#[doc(alias = "CB_WANTS_CANCELLED4args")]
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, Xdr)]
pub struct CbWantsCancelledArgs {
    /// Wants pending because of contention were cancelled.
    pub cwca_contended_wants_cancelled: bool,
    /// Wants pending because of resources were cancelled.
    pub cwca_resourced_wants_cancelled: bool,
}

crate::nfs_status_res! {
    /// CB_WANTS_CANCELLED result (RFC 8881 section 20.10).
    #[doc(alias = "CB_WANTS_CANCELLED4res")]
    pub struct CbWantsCancelledRes
}

// ---------------------------------------------------------------------------------------------
// CB_NOTIFY_LOCK (13)
// ---------------------------------------------------------------------------------------------

/// CB_NOTIFY_LOCK arguments (RFC 8881 section 20.11): a lock the client waited for may be free.
#[doc(alias = "CB_NOTIFY_LOCK4args")]
#[derive(Clone, PartialEq, Eq, Debug, Default, Xdr)]
pub struct CbNotifyLockArgs {
    /// The file.
    pub cnla_fh: NfsFh4,
    /// The lock owner that waited.
    pub cnla_lock_owner: LockOwner4,
}

crate::nfs_status_res! {
    /// CB_NOTIFY_LOCK result (RFC 8881 section 20.11).
    #[doc(alias = "CB_NOTIFY_LOCK4res")]
    pub struct CbNotifyLockRes
}

// ---------------------------------------------------------------------------------------------
// CB_NOTIFY_DEVICEID (14)
// ---------------------------------------------------------------------------------------------

/// `notify_deviceid_delete4`: a device id no longer valid (RFC 8881 section 20.12).
#[doc(alias = "notify_deviceid_delete4")]
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, Xdr)]
pub struct NotifyDeviceidDelete4 {
    /// The layout type.
    pub ndd_layouttype: Layouttype4,
    /// The device.
    pub ndd_deviceid: Deviceid4,
}

/// `notify_deviceid_change4`: a device whose address changed (RFC 8881 section 20.12).
#[doc(alias = "notify_deviceid_change4")]
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, Xdr)]
pub struct NotifyDeviceidChange4 {
    /// The layout type.
    pub ndc_layouttype: Layouttype4,
    /// The device.
    pub ndc_deviceid: Deviceid4,
    /// The change takes effect at once (layouts using the device are invalid).
    pub ndc_immediate: bool,
}

/// CB_NOTIFY_DEVICEID arguments (RFC 8881 section 20.12).
#[doc(alias = "CB_NOTIFY_DEVICEID4args")]
#[derive(Clone, PartialEq, Eq, Debug, Default, Xdr)]
pub struct CbNotifyDeviceidArgs {
    /// The changes; masks are [`NotifyDeviceidType4`] bit numbers.
    pub cnda_changes: Vec<Notify4>,
}

crate::nfs_status_res! {
    /// CB_NOTIFY_DEVICEID result (RFC 8881 section 20.12).
    #[doc(alias = "CB_NOTIFY_DEVICEID4res")]
    pub struct CbNotifyDeviceidRes
}

// ---------------------------------------------------------------------------------------------
// CB_OFFLOAD (15, RFC 7862)
// ---------------------------------------------------------------------------------------------

/// `offload_info4`: how an asynchronous COPY ended (RFC 7862 section 16.1).
///
/// Hand-written codec: `union offload_info4 switch (nfsstat4 coa_status) { case NFS4_OK:
/// write_response4 coa_resok4; default: length4 coa_bytes_copied; }`. `Failed` must not carry
/// `NFS4_OK`.
#[doc(alias = "offload_info4")]
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum OffloadInfo4 {
    /// `NFS4_OK`: what was written (`coa_resok4`).
    Ok(WriteResponse4),
    /// The copy failed.
    Failed {
        /// Why (`coa_status`).
        coa_status: NfsStat4,
        /// Bytes copied before the failure.
        coa_bytes_copied: Length4,
    },
}

impl Xdr for OffloadInfo4 {
    fn encode(&self, enc: &mut Encoder) {
        match self {
            Self::Ok(w) => {
                NfsStat4::NFS4_OK.encode(enc);
                w.encode(enc);
            }
            Self::Failed {
                coa_status,
                coa_bytes_copied,
            } => {
                coa_status.encode(enc);
                enc.put_u64(*coa_bytes_copied);
            }
        }
    }

    fn decode(dec: &mut Decoder) -> Result<Self, DecodeError> {
        let coa_status = NfsStat4::decode(dec).map_err(|e| e.context("OffloadInfo4"))?;
        if coa_status == NfsStat4::NFS4_OK {
            WriteResponse4::decode(dec)
                .map(Self::Ok)
                .map_err(|e| e.context("OffloadInfo4::Ok"))
        } else {
            let coa_bytes_copied = dec
                .get_u64()
                .map_err(|e| e.context("OffloadInfo4::Failed"))?;
            Ok(Self::Failed {
                coa_status,
                coa_bytes_copied,
            })
        }
    }
}

#[cfg(any(test, feature = "arbitrary"))]
impl proptest::arbitrary::Arbitrary for OffloadInfo4 {
    type Parameters = ();
    type Strategy = proptest::strategy::BoxedStrategy<Self>;
    fn arbitrary_with(_: ()) -> Self::Strategy {
        use proptest::prelude::*;
        prop_oneof![
            any::<WriteResponse4>().prop_map(Self::Ok),
            (
                any::<NfsStat4>().prop_filter("not NFS4_OK", |s| !s.is_ok()),
                any::<Length4>()
            )
                .prop_map(|(coa_status, coa_bytes_copied)| Self::Failed {
                    coa_status,
                    coa_bytes_copied,
                }),
        ]
        .boxed()
    }
}

impl OffloadInfo4 {
    /// The copy's status.
    pub fn status(&self) -> NfsStat4 {
        match self {
            Self::Ok(_) => NfsStat4::NFS4_OK,
            Self::Failed { coa_status, .. } => *coa_status,
        }
    }
}

/// CB_OFFLOAD arguments (RFC 7862 section 16.1): an asynchronous COPY finished.
#[doc(alias = "CB_OFFLOAD4args")]
#[derive(Clone, PartialEq, Eq, Debug, Xdr)]
pub struct CbOffloadArgs {
    /// The destination file.
    pub coa_fh: NfsFh4,
    /// The copy's stateid (`wr_callback_id` of its COPY).
    pub coa_stateid: Stateid4,
    /// The outcome.
    pub coa_offload_info: OffloadInfo4,
}

crate::nfs_status_res! {
    /// CB_OFFLOAD result (RFC 7862 section 16.1).
    #[doc(alias = "CB_OFFLOAD4res")]
    pub struct CbOffloadRes
}

// ---------------------------------------------------------------------------------------------
// CB_ILLEGAL (10044)
// ---------------------------------------------------------------------------------------------

crate::nfs_status_res! {
    /// CB_ILLEGAL result: the answer to an operation number the client does not know (RFC 8881
    /// section 20.13).
    #[doc(alias = "CB_ILLEGAL4res")]
    pub struct CbIllegalRes
}

// ---------------------------------------------------------------------------------------------
// CB_COMPOUND
// ---------------------------------------------------------------------------------------------

op_table! {
    /// One callback operation with its arguments (`nfs_cb_argop4`, RFC 8881 section 20).
    #[doc(alias = "nfs_cb_argop4")]
    #[derive(Clone, PartialEq, Eq, Debug, Xdr)]
    enum NfsCbArgop4 {
        /// An operation number this implementation does not know. Its arguments cannot be
        /// delimited, so it is the last operation decoded from a CB_COMPOUND; the client
        /// answers it with CB_ILLEGAL / `NFS4ERR_OP_ILLEGAL`.
        Unknown
    }
    /// One callback operation's result (`nfs_cb_resop4`, RFC 8881 section 20).
    #[doc(alias = "nfs_cb_resop4")]
    #[derive(Clone, PartialEq, Debug, Xdr)]
    enum NfsCbResop4 {
        /// A result number this implementation does not know; nothing after it can be
        /// decoded. Its status reads as `NFS4ERR_OP_ILLEGAL`.
        Unknown
    };
    opnum: NfsCbOpnum4;
    illegal: NfsCbResop4::Illegal(CbIllegalRes { status: NfsStat4::NFS4ERR_OP_ILLEGAL });
    /// A client's callback operations, one method per operation of the callback table; each
    /// answers `NFS4ERR_NOTSUPP` unless the client offers it, so a client writes only what it
    /// does. [`cb_dispatch`] maps an operation to its method. CB_SEQUENCE has its method like
    /// the others, but where it may stand (first, and only first: RFC 8881 section 20.9.3) is
    /// the caller's to check, as the server's COMPOUND engine checks SEQUENCE.
    handler: CbHandler,
    /// Runs one callback operation on `handler`: the method of its row in the callback table;
    /// an unknown or illegal operation is CB_ILLEGAL with `NFS4ERR_OP_ILLEGAL`.
    fn cb_dispatch;
    ops {
        GetAttr = OP_CB_GETATTR(CbGetAttrArgs) -> CbGetAttrRes => cb_getattr;
        Recall = OP_CB_RECALL(CbRecallArgs) -> CbRecallRes => cb_recall;
        LayoutRecall = OP_CB_LAYOUTRECALL(CbLayoutRecallArgs) -> CbLayoutRecallRes =>
            cb_layoutrecall;
        Notify = OP_CB_NOTIFY(CbNotifyArgs) -> CbNotifyRes => cb_notify;
        PushDeleg = OP_CB_PUSH_DELEG(CbPushDelegArgs) -> CbPushDelegRes => cb_push_deleg;
        RecallAny = OP_CB_RECALL_ANY(CbRecallAnyArgs) -> CbRecallAnyRes => cb_recall_any;
        RecallableObjAvail = OP_CB_RECALLABLE_OBJ_AVAIL(CbRecallableObjAvailArgs)
            -> CbRecallableObjAvailRes => cb_recallable_obj_avail;
        RecallSlot = OP_CB_RECALL_SLOT(CbRecallSlotArgs) -> CbRecallSlotRes => cb_recall_slot;
        Sequence = OP_CB_SEQUENCE(CbSequenceArgs) -> CbSequenceRes => cb_sequence;
        WantsCancelled = OP_CB_WANTS_CANCELLED(CbWantsCancelledArgs) -> CbWantsCancelledRes =>
            cb_wants_cancelled;
        NotifyLock = OP_CB_NOTIFY_LOCK(CbNotifyLockArgs) -> CbNotifyLockRes => cb_notify_lock;
        NotifyDeviceid = OP_CB_NOTIFY_DEVICEID(CbNotifyDeviceidArgs) -> CbNotifyDeviceidRes =>
            cb_notify_deviceid;
        Offload = OP_CB_OFFLOAD(CbOffloadArgs) -> CbOffloadRes => cb_offload;
        Illegal = OP_CB_ILLEGAL() -> CbIllegalRes;
    }
}

/// CB_COMPOUND arguments (RFC 8881 section 20 and 16.2.3 for the envelope).
///
/// Decoding stops after an [`NfsCbArgop4::Unknown`] operation, whose arguments cannot be
/// delimited; the rest of the input is consumed with it. See [`CbCompoundArgs::decode_partial`]
/// for operations whose arguments fail to decode.
#[doc(alias = "CB_COMPOUND4args")]
#[derive(Clone, PartialEq, Eq, Debug, Default)]
pub struct CbCompoundArgs {
    /// Echoed in the reply.
    pub tag: Utf8String,
    /// The minor version (1 or 2 for NFSv4.1 and 4.2).
    pub minorversion: u32,
    /// The `callback_ident` (NFSv4.0 only; ignored by NFSv4.1 clients).
    pub callback_ident: u32,
    /// The operations.
    pub argarray: Vec<NfsCbArgop4>,
}

/// An operation of a CB_COMPOUND whose arguments did not decode; see
/// [`CbCompoundArgs::decode_partial`].
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct CbOpDecodeError {
    /// Its position in `argarray` (the number of operations decoded before it).
    pub index: usize,
    /// Its operation number.
    pub op: NfsCbOpnum4,
    /// What went wrong.
    pub error: DecodeError,
}

impl core::fmt::Display for CbOpDecodeError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(
            f,
            "CB_COMPOUND operation {} ({}): {}",
            self.index, self.op, self.error
        )
    }
}

impl std::error::Error for CbOpDecodeError {}

impl CbCompoundArgs {
    /// Decodes a CB_COMPOUND, keeping the operations that precede one whose arguments fail to
    /// decode.
    ///
    /// Returns `Err` only when the header (tag, minor version, callback ident, operation count)
    /// or an operation number itself cannot be read. When an operation's arguments fail to
    /// decode, returns the operations before it together with an [`CbOpDecodeError`] naming it,
    /// so that the client can answer those and then the failing one with `NFS4ERR_BADXDR`.
    /// In that case, as after an [`NfsCbArgop4::Unknown`] operation, the rest of the input is
    /// consumed.
    pub fn decode_partial(
        dec: &mut Decoder,
    ) -> Result<(Self, Option<CbOpDecodeError>), DecodeError> {
        let tag = Utf8String::decode(dec).map_err(|e| e.context("CbCompoundArgs.tag"))?;
        let minorversion = dec
            .get_u32()
            .map_err(|e| e.context("CbCompoundArgs.minorversion"))?;
        let callback_ident = dec
            .get_u32()
            .map_err(|e| e.context("CbCompoundArgs.callback_ident"))?;
        let n = dec
            .get_length(crate::nfs4::COMPOUND_MAX_OPS, NfsCbArgop4::MIN_SIZE)
            .map_err(|e| e.context("CbCompoundArgs.argarray"))?;
        let mut argarray = Vec::with_capacity(n.min(dec.remaining() / NfsCbArgop4::MIN_SIZE));
        let mut failed = None;
        for index in 0..n {
            // Read the operation number ahead, to name the operation if its arguments fail.
            let op = NfsCbOpnum4(
                dec.peek_u32()
                    .map_err(|e| e.context("CbCompoundArgs.argarray"))?,
            );
            match NfsCbArgop4::decode(dec) {
                Ok(arg) => {
                    let unknown = matches!(arg, NfsCbArgop4::Unknown(_));
                    argarray.push(arg);
                    if unknown {
                        break;
                    }
                }
                Err(error) => {
                    dec.take_rest();
                    failed = Some(CbOpDecodeError {
                        index,
                        op,
                        error: error.context("CbCompoundArgs.argarray"),
                    });
                    break;
                }
            }
        }
        let args = Self {
            tag,
            minorversion,
            callback_ident,
            argarray,
        };
        Ok((args, failed))
    }
}

impl Xdr for CbCompoundArgs {
    fn encode(&self, enc: &mut Encoder) {
        self.tag.encode(enc);
        enc.put_u32(self.minorversion);
        enc.put_u32(self.callback_ident);
        self.argarray.encode(enc);
    }

    /// Strict decoding: any malformed or unknown operation is an error.
    fn decode(dec: &mut Decoder) -> Result<Self, DecodeError> {
        let at = dec.position();
        match Self::decode_partial(dec)? {
            (_, Some(e)) => Err(e.error),
            (args, None) => match args.argarray.last() {
                Some(NfsCbArgop4::Unknown(n)) => {
                    Err(DecodeError::bad_discriminant(n.0, at).context("CbCompoundArgs.argarray"))
                }
                _ => Ok(args),
            },
        }
    }
}

#[cfg(any(test, feature = "arbitrary"))]
impl proptest::arbitrary::Arbitrary for CbCompoundArgs {
    type Parameters = ();
    type Strategy = proptest::strategy::BoxedStrategy<Self>;
    fn arbitrary_with(_: ()) -> Self::Strategy {
        use proptest::prelude::*;
        (
            any::<Utf8String>(),
            any::<u32>(),
            any::<u32>(),
            proptest::collection::vec(any::<NfsCbArgop4>(), 0..=3),
        )
            .prop_map(|(tag, minorversion, callback_ident, argarray)| Self {
                tag,
                minorversion,
                callback_ident,
                argarray,
            })
            .boxed()
    }
}

/// CB_COMPOUND result (RFC 8881 section 20 and 16.2.3 for the envelope).
///
/// A result with an unknown operation number ([`NfsCbResop4::Unknown`]) cannot be delimited,
/// so decoding fails on it.
#[doc(alias = "CB_COMPOUND4res")]
#[derive(Clone, PartialEq, Debug)]
pub struct CbCompoundRes {
    /// The status of the last operation done.
    pub status: NfsStat4,
    /// The request's tag.
    pub tag: Utf8String,
    /// One result per operation done.
    pub resarray: Vec<NfsCbResop4>,
}

impl CbCompoundRes {
    /// The compound's status.
    pub fn status(&self) -> NfsStat4 {
        self.status
    }
}

impl Xdr for CbCompoundRes {
    fn encode(&self, enc: &mut Encoder) {
        self.status.encode(enc);
        self.tag.encode(enc);
        self.resarray.encode(enc);
    }

    fn decode(dec: &mut Decoder) -> Result<Self, DecodeError> {
        let status = NfsStat4::decode(dec).map_err(|e| e.context("CbCompoundRes.status"))?;
        let tag = Utf8String::decode(dec).map_err(|e| e.context("CbCompoundRes.tag"))?;
        let n = dec
            .get_length(crate::nfs4::COMPOUND_MAX_OPS, NfsCbResop4::MIN_SIZE)
            .map_err(|e| e.context("CbCompoundRes.resarray"))?;
        let mut resarray = Vec::with_capacity(n.min(dec.remaining() / NfsCbResop4::MIN_SIZE));
        for _ in 0..n {
            let at = dec.position();
            let res = NfsCbResop4::decode(dec).map_err(|e| e.context("CbCompoundRes.resarray"))?;
            if let NfsCbResop4::Unknown(op) = res {
                // A result of an operation we cannot know the shape of: nothing after it
                // can be delimited, so the reply is malformed.
                return Err(
                    DecodeError::bad_discriminant(op.0, at).context("CbCompoundRes.resarray")
                );
            }
            resarray.push(res);
        }
        Ok(Self {
            status,
            tag,
            resarray,
        })
    }
}

#[cfg(any(test, feature = "arbitrary"))]
impl proptest::arbitrary::Arbitrary for CbCompoundRes {
    type Parameters = ();
    type Strategy = proptest::strategy::BoxedStrategy<Self>;
    fn arbitrary_with(_: ()) -> Self::Strategy {
        use proptest::prelude::*;
        (
            any::<NfsStat4>(),
            any::<Utf8String>(),
            proptest::collection::vec(any::<NfsCbResop4>(), 0..=3),
        )
            .prop_map(|(status, tag, resarray)| Self {
                status,
                tag,
                resarray,
            })
            .boxed()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::xdr::{from_bytes, to_bytes, DecodeErrorKind};

    crate::roundtrip_tests!(
        cb_get_attr_args: CbGetAttrArgs,
        cb_get_attr_res_ok: CbGetAttrResOk,
        cb_get_attr_res: CbGetAttrRes,
        cb_recall_args: CbRecallArgs,
        cb_recall_res: CbRecallRes,
        layoutrecall_type4: LayoutrecallType4,
        layoutrecall_file4: LayoutrecallFile4,
        layoutrecall4: Layoutrecall4,
        cb_layout_recall_args: CbLayoutRecallArgs,
        cb_layout_recall_res: CbLayoutRecallRes,
        notify_type4: NotifyType4,
        notify_entry4: NotifyEntry4,
        prev_entry4: PrevEntry4,
        notify_remove4: NotifyRemove4,
        notify_add4: NotifyAdd4,
        notify_attr4: NotifyAttr4,
        notify_rename4: NotifyRename4,
        notify_verifier4: NotifyVerifier4,
        notify4: Notify4,
        cb_notify_args: CbNotifyArgs,
        cb_notify_res: CbNotifyRes,
        cb_push_deleg_args: CbPushDelegArgs,
        cb_push_deleg_res: CbPushDelegRes,
        cb_recall_any_args: CbRecallAnyArgs,
        cb_recall_any_res: CbRecallAnyRes,
        cb_recallable_obj_avail_args: CbRecallableObjAvailArgs,
        cb_recallable_obj_avail_res: CbRecallableObjAvailRes,
        cb_recall_slot_args: CbRecallSlotArgs,
        cb_recall_slot_res: CbRecallSlotRes,
        referring_call4: ReferringCall4,
        referring_call_list4: ReferringCallList4,
        cb_sequence_args: CbSequenceArgs,
        cb_sequence_res_ok: CbSequenceResOk,
        cb_sequence_res: CbSequenceRes,
        cb_wants_cancelled_args: CbWantsCancelledArgs,
        cb_wants_cancelled_res: CbWantsCancelledRes,
        cb_notify_lock_args: CbNotifyLockArgs,
        cb_notify_lock_res: CbNotifyLockRes,
        notify_deviceid_delete4: NotifyDeviceidDelete4,
        notify_deviceid_change4: NotifyDeviceidChange4,
        cb_notify_deviceid_args: CbNotifyDeviceidArgs,
        cb_notify_deviceid_res: CbNotifyDeviceidRes,
        offload_info4: OffloadInfo4,
        cb_offload_args: CbOffloadArgs,
        cb_offload_res: CbOffloadRes,
        cb_illegal_res: CbIllegalRes,
        nfs_cb_argop4: NfsCbArgop4,
        nfs_cb_resop4: NfsCbResop4,
        cb_compound_args: CbCompoundArgs,
        cb_compound_res: CbCompoundRes,
        nfs_cb_opnum4: NfsCbOpnum4,
    );

    /// A client that offers CB_RECALL only.
    struct RecallOnly(u32);

    impl CbHandler for RecallOnly {
        async fn cb_recall(&mut self, _: &CbRecallArgs) -> CbRecallRes {
            self.0 += 1;
            CbRecallRes {
                status: NfsStat4::NFS4_OK,
            }
        }
    }

    #[test]
    fn cb_dispatch_runs_the_handler_s_method_and_answers_notsupp_for_the_rest() {
        let mut h = RecallOnly(0);
        let run =
            |h: &mut RecallOnly, op: NfsCbArgop4| futures::executor::block_on(cb_dispatch(h, &op));
        assert_eq!(run(&mut h, recall()).status(), NfsStat4::NFS4_OK);
        assert_eq!(h.0, 1);
        assert_eq!(
            run(&mut h, sequence()),
            NfsCbResop4::Sequence(CbSequenceRes::Err(NfsStat4::NFS4ERR_NOTSUPP))
        );
        assert_eq!(
            run(
                &mut h,
                NfsCbArgop4::RecallAny(CbRecallAnyArgs {
                    craa_objects_to_keep: 0,
                    craa_type_mask: Bitmap4::default(),
                })
            ),
            NfsCbResop4::RecallAny(CbRecallAnyRes {
                status: NfsStat4::NFS4ERR_NOTSUPP
            })
        );
        for op in [NfsCbArgop4::Illegal, NfsCbArgop4::Unknown(NfsCbOpnum4(9999))] {
            assert_eq!(
                run(&mut h, op),
                NfsCbResop4::Illegal(CbIllegalRes {
                    status: NfsStat4::NFS4ERR_OP_ILLEGAL
                })
            );
        }
    }

    fn sequence() -> NfsCbArgop4 {
        NfsCbArgop4::Sequence(CbSequenceArgs {
            csa_sessionid: [0xab; 16],
            csa_sequenceid: 7,
            csa_slotid: 0,
            csa_highest_slotid: 0,
            csa_cachethis: false,
            csa_referring_call_lists: vec![],
        })
    }

    fn recall() -> NfsCbArgop4 {
        NfsCbArgop4::Recall(CbRecallArgs {
            stateid: Stateid4 {
                seqid: 1,
                other: [9; 12],
            },
            truncate: false,
            fh: NfsFh4(Bytes::from_static(&[1, 2, 3, 4, 5, 6, 7, 8])),
        })
    }

    /// Header of a CB_COMPOUND with an empty tag, minor version 1 and `n` operations.
    fn header(e: &mut Encoder, n: u32) {
        e.put_opaque(b"");
        e.put_u32(1);
        e.put_u32(0);
        e.put_u32(n);
    }

    #[test]
    fn cb_sequence_and_recall_known_bytes() {
        let args = CbCompoundArgs {
            tag: Utf8String::default(),
            minorversion: 1,
            callback_ident: 0,
            argarray: vec![sequence(), recall()],
        };
        let mut e = Encoder::new();
        header(&mut e, 2);
        e.put_u32(11); // OP_CB_SEQUENCE
        e.put_fixed(&[0xab; 16]);
        for w in [7, 0, 0, 0, 0] {
            e.put_u32(w); // sequenceid, slotid, highest_slotid, cachethis, no referring lists
        }
        e.put_u32(4); // OP_CB_RECALL
        e.put_u32(1);
        e.put_fixed(&[9; 12]);
        e.put_u32(0);
        e.put_opaque(&[1, 2, 3, 4, 5, 6, 7, 8]);
        let b = e.into_bytes();
        assert_eq!(to_bytes(&args), b);
        assert_eq!(from_bytes::<CbCompoundArgs>(b).unwrap(), args);
        assert_eq!(args.argarray[1].opnum(), NfsCbOpnum4::OP_CB_RECALL);
    }

    #[test]
    fn unknown_op_ends_the_array() {
        let mut e = Encoder::new();
        header(&mut e, 3);
        sequence().encode(&mut e);
        e.put_u32(99); // unknown op, then arguments nobody can parse
        e.put_u32(0xdead_beef);
        e.put_u32(0xffff_ffff);
        recall().encode(&mut e);
        let b = e.into_bytes();

        // Strict decoding refuses it; partial decoding keeps the ops up to the unknown one.
        let e = from_bytes::<CbCompoundArgs>(b.clone()).unwrap_err();
        assert_eq!(e.kind, crate::xdr::DecodeErrorKind::BadDiscriminant(99));
        let mut d = Decoder::new(b);
        let (partial, failed) = CbCompoundArgs::decode_partial(&mut d).unwrap();
        assert_eq!(
            partial.argarray,
            vec![sequence(), NfsCbArgop4::Unknown(NfsCbOpnum4(99))]
        );
        assert_eq!(partial.argarray[1].opnum(), NfsCbOpnum4(99));
        assert_eq!(failed, None);
    }

    #[test]
    fn illegal_op_does_not_end_the_array() {
        let args = CbCompoundArgs {
            tag: "t".into(),
            minorversion: 2,
            callback_ident: 0,
            argarray: vec![sequence(), NfsCbArgop4::Illegal, recall()],
        };
        let b = to_bytes(&args);
        assert_eq!(from_bytes::<CbCompoundArgs>(b).unwrap(), args);
    }

    #[test]
    fn truncated_op_is_reported_with_its_index() {
        let mut e = Encoder::new();
        header(&mut e, 3);
        sequence().encode(&mut e);
        recall().encode(&mut e);
        // CB_RECALL whose filehandle claims 64 bytes but the message ends after 8.
        e.put_u32(4);
        Stateid4::default().encode(&mut e);
        e.put_u32(1);
        e.put_u32(64);
        e.put_fixed(&[0; 8]);
        let b = e.into_bytes();

        let err = from_bytes::<CbCompoundArgs>(b.clone()).unwrap_err();
        assert!(
            matches!(err.kind, DecodeErrorKind::LengthBeyondInput { len: 64, .. }),
            "{err}"
        );

        let mut d = Decoder::new(b);
        let (partial, failed) = CbCompoundArgs::decode_partial(&mut d).unwrap();
        assert_eq!(partial.argarray, vec![sequence(), recall()]);
        assert_eq!(partial.minorversion, 1);
        let failed = failed.expect("the third op fails");
        assert_eq!(failed.index, 2);
        assert_eq!(failed.op, NfsCbOpnum4::OP_CB_RECALL);
        assert_eq!(failed.error, err);
        assert_eq!(failed.error.what, "NfsFh4.0");
        assert!(failed
            .to_string()
            .starts_with("CB_COMPOUND operation 2 (OP_CB_RECALL)"));
    }

    #[test]
    fn truncated_header_is_an_error() {
        let mut e = Encoder::new();
        header(&mut e, 1);
        let b = e.into_bytes();
        // The count says one op, but there is no op number.
        let mut d = Decoder::new(b.clone());
        assert!(CbCompoundArgs::decode_partial(&mut d).is_err());
        let mut d = Decoder::new(b.slice(..8));
        assert!(CbCompoundArgs::decode_partial(&mut d).is_err());
    }

    #[test]
    fn compound_res_status_and_opnums() {
        let res = CbCompoundRes {
            status: NfsStat4::NFS4ERR_DELAY,
            tag: "x".into(),
            resarray: vec![
                NfsCbResop4::Sequence(CbSequenceRes::Ok(CbSequenceResOk::default())),
                NfsCbResop4::Recall(CbRecallRes {
                    status: NfsStat4::NFS4ERR_DELAY,
                }),
            ],
        };
        let back = from_bytes::<CbCompoundRes>(to_bytes(&res)).unwrap();
        assert_eq!(back, res);
        assert_eq!(back.status(), NfsStat4::NFS4ERR_DELAY);
        assert_eq!(back.resarray[0].status(), NfsStat4::NFS4_OK);
        assert_eq!(back.resarray[1].opnum(), NfsCbOpnum4::OP_CB_RECALL);
        assert_eq!(back.resarray[1].status(), NfsStat4::NFS4ERR_DELAY);
    }

    #[test]
    fn compound_res_with_unknown_result_is_malformed() {
        let mut e = Encoder::new();
        e.put_u32(0);
        e.put_opaque(b"");
        e.put_u32(2);
        e.put_u32(77);
        e.put_u32(0x1234_5678);
        let err = from_bytes::<CbCompoundRes>(e.into_bytes()).unwrap_err();
        assert_eq!(err.kind, crate::xdr::DecodeErrorKind::BadDiscriminant(77));
        assert_eq!(err.offset, 12);
        assert_eq!(
            NfsCbResop4::Unknown(NfsCbOpnum4(77)).status(),
            NfsStat4::NFS4ERR_OP_ILLEGAL
        );
    }

    #[test]
    fn cb_offload_failure_carries_bytes_copied() {
        let mut e = Encoder::new();
        e.put_opaque(&[5; 4]);
        Stateid4::default().encode(&mut e);
        e.put_u32(28); // NFS4ERR_NOSPC
        e.put_u64(4096);
        let a = from_bytes::<CbOffloadArgs>(e.into_bytes()).unwrap();
        assert_eq!(
            a.coa_offload_info,
            OffloadInfo4::Failed {
                coa_status: NfsStat4::NFS4ERR_NOSPC,
                coa_bytes_copied: 4096,
            }
        );
        assert_eq!(a.coa_offload_info.status(), NfsStat4::NFS4ERR_NOSPC);
    }

    #[test]
    fn layoutrecall_all_is_void_and_unknown_type_refused() {
        let mut e = Encoder::new();
        e.put_u32(3);
        assert_eq!(
            from_bytes::<Layoutrecall4>(e.into_bytes()).unwrap(),
            Layoutrecall4::All
        );
        let mut e = Encoder::new();
        e.put_u32(4);
        assert!(from_bytes::<Layoutrecall4>(e.into_bytes()).is_err());
    }
}

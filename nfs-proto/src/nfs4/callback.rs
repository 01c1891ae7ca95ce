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
//!
//! This file holds each operation's arguments and results; the callback op table, its
//! handler seam and the CB_COMPOUND envelopes are in `cb_compound`.

use bytes::Bytes;

use super::consts::*;
use super::ops::v42::WriteResponse4;
use super::types::*;
use crate::xdr::{DecodeError, Decoder, Encoder, Utf8String, Xdr};
use crate::xdr_enum;

use super::compound::{op_table, OpFlags};

mod cb_compound;
#[cfg(test)]
mod tests;

pub use cb_compound::*;

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

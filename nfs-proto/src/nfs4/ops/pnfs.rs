//! pNFS operations (GETDEVICEINFO, GETDEVICELIST, LAYOUTCOMMIT, LAYOUTGET, LAYOUTRETURN) and
//! GET_DIR_DELEGATION (RFC 8881 section 18.39 to 18.44).
//!
//! Layout and device address bodies stay opaque here ([`LayoutContent4`](crate::nfs4::LayoutContent4),
//! [`DeviceAddr4`]);
//! [`crate::nfs4::layout_files`] decodes the file layout's.

use bytes::Bytes;

use crate::nfs4::{
    Bitmap4, Count4, DeviceAddr4, Deviceid4, Layout4, Layoutiomode4, Layouttype4, Layoutupdate4,
    Length4, NfsCookie4, NfsStat4, Nfstime4, Offset4, Stateid4, Verifier4,
};
use crate::xdr::Xdr;
use crate::xdr_enum;

// ---------------------------------------------------------------------------------------------
// GET_DIR_DELEGATION (46)
// ---------------------------------------------------------------------------------------------

/// `attr_notice4`: how long the server may delay attribute change notifications
/// (RFC 8881 section 18.39).
#[doc(alias = "attr_notice4")]
pub type AttrNotice4 = Nfstime4;

/// GET_DIR_DELEGATION arguments (RFC 8881 section 18.39).
#[doc(alias = "GET_DIR_DELEGATION4args")]
#[derive(Clone, PartialEq, Eq, Debug, Default, Xdr)]
pub struct GetDirDelegationArgs {
    /// Ask the server to signal (CB_RECALLABLE_OBJ_AVAIL) when a delegation becomes available.
    pub gdda_signal_deleg_avail: bool,
    /// `notify_type4` bits the client wants.
    pub gdda_notification_types: Bitmap4,
    /// Acceptable delay for child attribute notifications.
    pub gdda_child_attr_delay: AttrNotice4,
    /// Acceptable delay for directory attribute notifications.
    pub gdda_dir_attr_delay: AttrNotice4,
    /// Child attributes to notify changes of.
    pub gdda_child_attributes: Bitmap4,
    /// Directory attributes to notify changes of.
    pub gdda_dir_attributes: Bitmap4,
}

/// GET_DIR_DELEGATION result when a delegation is granted (RFC 8881 section 18.39).
#[doc(alias = "GET_DIR_DELEGATION4resok")]
#[derive(Clone, PartialEq, Eq, Debug, Default, Xdr)]
pub struct GetDirDelegationResOk {
    /// The cookie verifier the delegation goes with.
    pub gddr_cookieverf: Verifier4,
    /// The delegation's stateid.
    pub gddr_stateid: Stateid4,
    /// `notify_type4` bits the server will send.
    pub gddr_notification: Bitmap4,
    /// Child attributes the server will notify changes of.
    pub gddr_child_attributes: Bitmap4,
    /// Directory attributes the server will notify changes of.
    pub gddr_dir_attributes: Bitmap4,
}

xdr_enum! {
    /// Whether GET_DIR_DELEGATION granted a delegation (RFC 8881 section 18.39).
    #[doc(alias = "gddrnf4_status")]
    pub struct Gddrnf4Status {
        GDD4_OK = 0,
        GDD4_UNAVAIL = 1,
    }
}

/// GET_DIR_DELEGATION outcome when the operation itself succeeded (RFC 8881 section 18.39).
#[doc(alias = "GET_DIR_DELEGATION4res_non_fatal")]
#[derive(Clone, PartialEq, Eq, Debug, Xdr)]
pub enum GetDirDelegationResNonFatal {
    /// A delegation was granted (`gddrnf_resok4`).
    #[xdr(case = Gddrnf4Status::GDD4_OK)]
    Ok(GetDirDelegationResOk),
    /// No delegation now.
    #[xdr(case = Gddrnf4Status::GDD4_UNAVAIL)]
    Unavail {
        /// The server will signal when one becomes available.
        gddrnf_will_signal_deleg_avail: bool,
    },
}

crate::nfs_res! {
    /// GET_DIR_DELEGATION result (RFC 8881 section 18.39).
    #[doc(alias = "GET_DIR_DELEGATION4res")]
    pub enum GetDirDelegationRes => GetDirDelegationResNonFatal
}

// ---------------------------------------------------------------------------------------------
// GETDEVICEINFO (47)
// ---------------------------------------------------------------------------------------------

/// GETDEVICEINFO arguments (RFC 8881 section 18.40).
#[doc(alias = "GETDEVICEINFO4args")]
#[derive(Clone, PartialEq, Eq, Debug, Default, Xdr)]
pub struct GetDeviceInfoArgs {
    /// The device.
    pub gdia_device_id: Deviceid4,
    /// The layout type the address is wanted for.
    pub gdia_layout_type: Layouttype4,
    /// Largest `gdir_device_addr` the client accepts, in bytes (0: do not return it).
    pub gdia_maxcount: Count4,
    /// `notify_deviceid_type4` bits the client wants.
    pub gdia_notify_types: Bitmap4,
}

/// GETDEVICEINFO result on success (RFC 8881 section 18.40).
#[doc(alias = "GETDEVICEINFO4resok")]
#[derive(Clone, PartialEq, Eq, Debug, Default, Xdr)]
pub struct GetDeviceInfoResOk {
    /// The device's address.
    pub gdir_device_addr: DeviceAddr4,
    /// `notify_deviceid_type4` bits the server will send.
    pub gdir_notification: Bitmap4,
}

/// GETDEVICEINFO result (RFC 8881 section 18.40).
#[doc(alias = "GETDEVICEINFO4res")]
#[derive(Clone, PartialEq, Eq, Debug, Xdr)]
pub enum GetDeviceInfoRes {
    /// `NFS4_OK` and the device address.
    #[xdr(case = NfsStat4::NFS4_OK)]
    Ok(GetDeviceInfoResOk),
    /// `NFS4ERR_TOOSMALL`: `gdia_maxcount` was below what the address needs.
    #[xdr(case = NfsStat4::NFS4ERR_TOOSMALL)]
    TooSmall {
        /// The `gdia_maxcount` that would be enough.
        gdir_mincount: Count4,
    },
    /// Any other error status.
    #[xdr(default)]
    Err(NfsStat4),
}

/// An operation written as a `Result` answers with its result body or its error result
/// ([`GetDeviceInfoRes::error`]).
impl From<Result<GetDeviceInfoResOk, NfsStat4>> for GetDeviceInfoRes {
    fn from(r: Result<GetDeviceInfoResOk, NfsStat4>) -> Self {
        match r {
            Ok(ok) => Self::Ok(ok),
            Err(status) => Self::error(status),
        }
    }
}

impl GetDeviceInfoRes {
    /// The operation's status.
    pub fn status(&self) -> NfsStat4 {
        match self {
            Self::Ok(_) => NfsStat4::NFS4_OK,
            Self::TooSmall { .. } => NfsStat4::NFS4ERR_TOOSMALL,
            Self::Err(s) => *s,
        }
    }

    /// The result of the operation failing with `status`; `NFS4ERR_TOOSMALL` asks for no
    /// particular size.
    pub fn error(status: NfsStat4) -> Self {
        debug_assert!(!status.is_ok(), "an error result with NFS4_OK");
        match status {
            NfsStat4::NFS4ERR_TOOSMALL => Self::TooSmall { gdir_mincount: 0 },
            s => Self::Err(s),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// GETDEVICELIST (48)
// ---------------------------------------------------------------------------------------------

/// GETDEVICELIST arguments (RFC 8881 section 18.41).
#[doc(alias = "GETDEVICELIST4args")]
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, Xdr)]
pub struct GetDeviceListArgs {
    /// The layout type.
    pub gdla_layout_type: Layouttype4,
    /// Most device IDs to return.
    pub gdla_maxdevices: Count4,
    /// Where to resume (0 to start).
    pub gdla_cookie: NfsCookie4,
    /// The verifier returned with the cookie.
    pub gdla_cookieverf: Verifier4,
}

/// GETDEVICELIST result on success (RFC 8881 section 18.41).
#[doc(alias = "GETDEVICELIST4resok")]
#[derive(Clone, PartialEq, Eq, Debug, Default, Xdr)]
pub struct GetDeviceListResOk {
    /// Where to resume.
    pub gdlr_cookie: NfsCookie4,
    /// The verifier to resume with.
    pub gdlr_cookieverf: Verifier4,
    /// The device IDs.
    pub gdlr_deviceid_list: Vec<Deviceid4>,
    /// True when the list is complete.
    pub gdlr_eof: bool,
}

crate::nfs_res! {
    /// GETDEVICELIST result (RFC 8881 section 18.41).
    #[doc(alias = "GETDEVICELIST4res")]
    pub enum GetDeviceListRes => GetDeviceListResOk
}

// ---------------------------------------------------------------------------------------------
// LAYOUTCOMMIT (49)
// ---------------------------------------------------------------------------------------------

/// A new modification time, if any (RFC 8881 section 18.42).
#[doc(alias = "newtime4")]
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, Xdr)]
pub enum Newtime4 {
    /// The time changed.
    #[xdr(case = true)]
    Changed {
        /// The new time.
        nt_time: Nfstime4,
    },
    /// No new time.
    #[default]
    #[xdr(case = false)]
    Unchanged,
}

impl From<Option<Nfstime4>> for Newtime4 {
    fn from(v: Option<Nfstime4>) -> Self {
        match v {
            Some(nt_time) => Self::Changed { nt_time },
            None => Self::Unchanged,
        }
    }
}

impl From<Newtime4> for Option<Nfstime4> {
    fn from(v: Newtime4) -> Self {
        match v {
            Newtime4::Changed { nt_time } => Some(nt_time),
            Newtime4::Unchanged => None,
        }
    }
}

/// The last byte offset written, if known (RFC 8881 section 18.42).
#[doc(alias = "newoffset4")]
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, Xdr)]
pub enum Newoffset4 {
    /// An offset follows.
    #[xdr(case = true)]
    Present {
        /// The offset of the last byte written.
        no_offset: Offset4,
    },
    /// No offset.
    #[default]
    #[xdr(case = false)]
    Absent,
}

impl From<Option<Offset4>> for Newoffset4 {
    fn from(v: Option<Offset4>) -> Self {
        match v {
            Some(no_offset) => Self::Present { no_offset },
            None => Self::Absent,
        }
    }
}

impl From<Newoffset4> for Option<Offset4> {
    fn from(v: Newoffset4) -> Self {
        match v {
            Newoffset4::Present { no_offset } => Some(no_offset),
            Newoffset4::Absent => None,
        }
    }
}

/// LAYOUTCOMMIT arguments (RFC 8881 section 18.42).
#[doc(alias = "LAYOUTCOMMIT4args")]
#[derive(Clone, PartialEq, Eq, Debug, Default, Xdr)]
pub struct LayoutCommitArgs {
    /// Start of the range written.
    pub loca_offset: Offset4,
    /// Length of the range written.
    pub loca_length: Length4,
    /// True when committing a layout reclaimed after a server restart.
    pub loca_reclaim: bool,
    /// The layout stateid.
    pub loca_stateid: Stateid4,
    /// The last byte offset written, if any.
    pub loca_last_write_offset: Newoffset4,
    /// A new modification time, if the client sets one.
    pub loca_time_modify: Newtime4,
    /// Layout-type-specific data.
    pub loca_layoutupdate: Layoutupdate4,
}

/// The file's new size, if it changed (RFC 8881 section 18.42).
#[doc(alias = "newsize4")]
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, Xdr)]
pub enum Newsize4 {
    /// The size changed.
    #[xdr(case = true)]
    Changed {
        /// The new size.
        ns_size: Length4,
    },
    /// The size did not change.
    #[default]
    #[xdr(case = false)]
    Unchanged,
}

impl From<Option<Length4>> for Newsize4 {
    fn from(v: Option<Length4>) -> Self {
        match v {
            Some(ns_size) => Self::Changed { ns_size },
            None => Self::Unchanged,
        }
    }
}

impl From<Newsize4> for Option<Length4> {
    fn from(v: Newsize4) -> Self {
        match v {
            Newsize4::Changed { ns_size } => Some(ns_size),
            Newsize4::Unchanged => None,
        }
    }
}

/// LAYOUTCOMMIT result on success (RFC 8881 section 18.42).
#[doc(alias = "LAYOUTCOMMIT4resok")]
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, Xdr)]
pub struct LayoutCommitResOk {
    /// The new file size, if it changed.
    pub locr_newsize: Newsize4,
}

crate::nfs_res! {
    /// LAYOUTCOMMIT result (RFC 8881 section 18.42).
    #[doc(alias = "LAYOUTCOMMIT4res")]
    pub enum LayoutCommitRes => LayoutCommitResOk
}

// ---------------------------------------------------------------------------------------------
// LAYOUTGET (50)
// ---------------------------------------------------------------------------------------------

/// LAYOUTGET arguments (RFC 8881 section 18.43).
#[doc(alias = "LAYOUTGET4args")]
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, Xdr)]
pub struct LayoutGetArgs {
    /// Ask the server to signal (CB_RECALLABLE_OBJ_AVAIL) when a layout becomes available.
    pub loga_signal_layout_avail: bool,
    /// The layout type.
    pub loga_layout_type: Layouttype4,
    /// READ or RW.
    pub loga_iomode: Layoutiomode4,
    /// Start of the range.
    pub loga_offset: Offset4,
    /// Length of the range.
    pub loga_length: Length4,
    /// The shortest range the client accepts.
    pub loga_minlength: Length4,
    /// An open, lock, delegation or layout stateid.
    pub loga_stateid: Stateid4,
    /// Largest reply the client accepts, in bytes.
    pub loga_maxcount: Count4,
}

/// LAYOUTGET result on success (RFC 8881 section 18.43).
#[doc(alias = "LAYOUTGET4resok")]
#[derive(Clone, PartialEq, Eq, Debug, Default, Xdr)]
pub struct LayoutGetResOk {
    /// The client must return the layout when it closes the file.
    pub logr_return_on_close: bool,
    /// The layout stateid.
    pub logr_stateid: Stateid4,
    /// The layout segments.
    pub logr_layout: Vec<Layout4>,
}

/// LAYOUTGET result (RFC 8881 section 18.43).
#[doc(alias = "LAYOUTGET4res")]
#[derive(Clone, PartialEq, Eq, Debug, Xdr)]
pub enum LayoutGetRes {
    /// `NFS4_OK` and the layout.
    #[xdr(case = NfsStat4::NFS4_OK)]
    Ok(LayoutGetResOk),
    /// `NFS4ERR_LAYOUTTRYLATER`: no layout now.
    #[xdr(case = NfsStat4::NFS4ERR_LAYOUTTRYLATER)]
    TryLater {
        /// The server will signal when a layout becomes available.
        logr_will_signal_layout_avail: bool,
    },
    /// Any other error status.
    #[xdr(default)]
    Err(NfsStat4),
}

/// An operation written as a `Result` answers with its result body or its error result
/// ([`LayoutGetRes::error`]).
impl From<Result<LayoutGetResOk, NfsStat4>> for LayoutGetRes {
    fn from(r: Result<LayoutGetResOk, NfsStat4>) -> Self {
        match r {
            Ok(ok) => Self::Ok(ok),
            Err(status) => Self::error(status),
        }
    }
}

impl LayoutGetRes {
    /// The operation's status.
    pub fn status(&self) -> NfsStat4 {
        match self {
            Self::Ok(_) => NfsStat4::NFS4_OK,
            Self::TryLater { .. } => NfsStat4::NFS4ERR_LAYOUTTRYLATER,
            Self::Err(s) => *s,
        }
    }

    /// The result of the operation failing with `status`; `NFS4ERR_LAYOUTTRYLATER` without
    /// a promise to signal.
    pub fn error(status: NfsStat4) -> Self {
        debug_assert!(!status.is_ok(), "an error result with NFS4_OK");
        match status {
            NfsStat4::NFS4ERR_LAYOUTTRYLATER => Self::TryLater {
                logr_will_signal_layout_avail: false,
            },
            s => Self::Err(s),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// LAYOUTRETURN (51)
// ---------------------------------------------------------------------------------------------

xdr_enum! {
    /// What LAYOUTRETURN returns: one file's range, a file system's layouts or all
    /// (RFC 8881 section 18.44). The values are `LAYOUT4_RET_REC_FILE`, `_FSID` and `_ALL`.
    #[doc(alias = "layoutreturn_type4")]
    pub struct LayoutreturnType4 {
        LAYOUTRETURN4_FILE = 1,
        LAYOUTRETURN4_FSID = 2,
        LAYOUTRETURN4_ALL = 3,
    }
}

/// The range of one file's layout to return (RFC 8881 section 18.44).
#[doc(alias = "layoutreturn_file4")]
#[derive(Clone, PartialEq, Eq, Debug, Default, Xdr)]
pub struct LayoutreturnFile4 {
    /// Start of the range.
    pub lrf_offset: Offset4,
    /// Length of the range.
    pub lrf_length: Length4,
    /// The layout stateid.
    pub lrf_stateid: Stateid4,
    /// Layout-type-specific data.
    pub lrf_body: Bytes,
}

/// What to return (RFC 8881 section 18.44).
#[doc(alias = "layoutreturn4")]
#[derive(Clone, PartialEq, Eq, Debug, Xdr)]
pub enum Layoutreturn4 {
    /// A range of the current filehandle's layout (`lr_layout`).
    #[xdr(case = LayoutreturnType4::LAYOUTRETURN4_FILE)]
    File(LayoutreturnFile4),
    /// All layouts of the current filehandle's file system.
    #[xdr(case = LayoutreturnType4::LAYOUTRETURN4_FSID)]
    Fsid,
    /// All of the client's layouts.
    #[xdr(case = LayoutreturnType4::LAYOUTRETURN4_ALL)]
    All,
    /// Any other (unknown) return type: the RFC's `default: void` arm. (Left out of generated
    /// test values: every named `LayoutreturnType4` has its own arm.)
    #[xdr(default, skip_arbitrary)]
    Other(LayoutreturnType4),
}

/// LAYOUTRETURN arguments (RFC 8881 section 18.44).
#[doc(alias = "LAYOUTRETURN4args")]
#[derive(Clone, PartialEq, Eq, Debug, Xdr)]
pub struct LayoutReturnArgs {
    /// True when returning a layout reclaimed after a server restart.
    pub lora_reclaim: bool,
    /// The layout type.
    pub lora_layout_type: Layouttype4,
    /// READ, RW or ANY.
    pub lora_iomode: Layoutiomode4,
    /// What to return.
    pub lora_layoutreturn: Layoutreturn4,
}

/// The layout stateid after LAYOUTRETURN, if layouts remain (RFC 8881 section 18.44).
#[doc(alias = "layoutreturn_stateid")]
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, Xdr)]
pub enum LayoutreturnStateid {
    /// Some layout remains; its updated stateid (`lrs_stateid`).
    #[xdr(case = true)]
    Present(Stateid4),
    /// No layout remains.
    #[default]
    #[xdr(case = false)]
    Absent,
}

crate::nfs_res! {
    /// LAYOUTRETURN result (RFC 8881 section 18.44).
    #[doc(alias = "LAYOUTRETURN4res")]
    pub enum LayoutReturnRes => LayoutreturnStateid
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::xdr::{from_bytes, to_bytes, DecodeErrorKind};

    crate::roundtrip_tests!(
        get_dir_delegation_args: GetDirDelegationArgs,
        get_dir_delegation_res_ok: GetDirDelegationResOk,
        gddrnf4_status: Gddrnf4Status,
        get_dir_delegation_res_non_fatal: GetDirDelegationResNonFatal,
        get_dir_delegation_res: GetDirDelegationRes,
        attr_notice4: AttrNotice4,
        get_device_info_args: GetDeviceInfoArgs,
        get_device_info_res_ok: GetDeviceInfoResOk,
        get_device_info_res: GetDeviceInfoRes,
        get_device_list_args: GetDeviceListArgs,
        get_device_list_res_ok: GetDeviceListResOk,
        get_device_list_res: GetDeviceListRes,
        newtime4: Newtime4,
        newoffset4: Newoffset4,
        layout_commit_args: LayoutCommitArgs,
        newsize4: Newsize4,
        layout_commit_res_ok: LayoutCommitResOk,
        layout_commit_res: LayoutCommitRes,
        layout_get_args: LayoutGetArgs,
        layout_get_res_ok: LayoutGetResOk,
        layout_get_res: LayoutGetRes,
        layoutreturn_type4: LayoutreturnType4,
        layoutreturn_file4: LayoutreturnFile4,
        layoutreturn4: Layoutreturn4,
        layout_return_args: LayoutReturnArgs,
        layoutreturn_stateid: LayoutreturnStateid,
        layout_return_res: LayoutReturnRes,
    );

    fn words(w: &[u32]) -> Vec<u8> {
        w.iter().flat_map(|v| v.to_be_bytes()).collect()
    }

    #[test]
    fn error_arms_with_data() {
        let r = GetDeviceInfoRes::TooSmall { gdir_mincount: 300 };
        let b = to_bytes(&r);
        assert_eq!(&b[..], &words(&[10005, 300])[..]);
        assert_eq!(r.status(), NfsStat4::NFS4ERR_TOOSMALL);
        assert_eq!(from_bytes::<GetDeviceInfoRes>(b).unwrap(), r);

        let r = LayoutGetRes::TryLater {
            logr_will_signal_layout_avail: true,
        };
        let b = to_bytes(&r);
        assert_eq!(&b[..], &words(&[10058, 1])[..]);
        assert_eq!(r.status(), NfsStat4::NFS4ERR_LAYOUTTRYLATER);
        assert_eq!(from_bytes::<LayoutGetRes>(b).unwrap(), r);

        // Any other error is a bare status.
        let b = to_bytes(&NfsStat4::NFS4ERR_LAYOUTUNAVAILABLE);
        let r = from_bytes::<LayoutGetRes>(b).unwrap();
        assert_eq!(r, LayoutGetRes::Err(NfsStat4::NFS4ERR_LAYOUTUNAVAILABLE));
        assert_eq!(r.status(), NfsStat4::NFS4ERR_LAYOUTUNAVAILABLE);
    }

    #[test]
    fn layoutget_args_known_encoding() {
        let a = LayoutGetArgs {
            loga_signal_layout_avail: false,
            loga_layout_type: Layouttype4::LAYOUT4_NFSV4_1_FILES,
            loga_iomode: Layoutiomode4::LAYOUTIOMODE4_RW,
            loga_offset: 0,
            loga_length: u64::MAX,
            loga_minlength: 4096,
            loga_stateid: Stateid4 {
                seqid: 1,
                other: [7; 12],
            },
            loga_maxcount: 4096,
        };
        let mut want = words(&[0, 1, 2, 0, 0, !0, !0, 0, 4096, 1]);
        want.extend([7; 12]);
        want.extend(words(&[4096]));
        assert_eq!(&to_bytes(&a)[..], &want[..]);
    }

    #[test]
    fn layoutreturn_fsid_and_all_are_void_and_unknown_types_decode() {
        let a = LayoutReturnArgs {
            lora_reclaim: false,
            lora_layout_type: Layouttype4::LAYOUT4_NFSV4_1_FILES,
            lora_iomode: Layoutiomode4::LAYOUTIOMODE4_ANY,
            lora_layoutreturn: Layoutreturn4::All,
        };
        assert_eq!(&to_bytes(&a)[..], &words(&[0, 1, 3, 3])[..]);
        assert_eq!(&to_bytes(&Layoutreturn4::Fsid)[..], &words(&[2])[..]);
        assert_eq!(
            from_bytes::<Layoutreturn4>(to_bytes(&9u32)).unwrap(),
            Layoutreturn4::Other(LayoutreturnType4(9))
        );
    }

    #[test]
    fn bool_unions_refuse_other_values() {
        let e = from_bytes::<Newsize4>(to_bytes(&2u32)).unwrap_err();
        assert_eq!(e.kind, DecodeErrorKind::BadDiscriminant(2));
        assert_eq!(
            from_bytes::<Newoffset4>(Bytes::from(words(&[1, 0, 77]))).unwrap(),
            Newoffset4::Present { no_offset: 77 }
        );
        assert_eq!(Option::<Offset4>::from(Newoffset4::Absent), None);
        assert_eq!(Newsize4::from(Some(5)), Newsize4::Changed { ns_size: 5 });
    }

    #[test]
    fn get_dir_delegation_unavail() {
        let r = GetDirDelegationRes::Ok(GetDirDelegationResNonFatal::Unavail {
            gddrnf_will_signal_deleg_avail: false,
        });
        assert_eq!(&to_bytes(&r)[..], &words(&[0, 1, 0])[..]);
        assert_eq!(r.status(), NfsStat4::NFS4_OK);
    }
}

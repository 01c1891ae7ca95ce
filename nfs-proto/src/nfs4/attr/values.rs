//! The value types of the NFSv4 attributes and their flag constants (RFC 8881 section 5 and
//! 6, RFC 7862 section 12.2, RFC 8275), transcribed from the RFC 8881 / RFC 7863 XDR.
//!
//! Attributes whose value is a plain integer, bool, string or a type shared with the
//! operations (`nfstime4`, `fsid4`, `specdata4`, `nfsace4`, `nfs_fh4`, `bitmap4`,
//! `layouttype4`) use those types directly; see [`super::FileAttrs`].

use bytes::Bytes;

use crate::nfs4::types::{Bitmap4, Component4, Layouttype4, Mode4, Nfsace4, Nfstime4};
use crate::xdr::{Utf8String, Xdr};
use crate::xdr_enum;

// ---------------------------------------------------------------------------------------------
// fh_expire_type (RFC 8881 section 5)

/// `FH4_PERSISTENT`: filehandles never expire (the whole `fh_expire_type` value is 0).
pub const FH4_PERSISTENT: u32 = 0x0000_0000;
/// `FH4_NOEXPIRE_WITH_OPEN`: filehandles of open files do not expire.
pub const FH4_NOEXPIRE_WITH_OPEN: u32 = 0x0000_0001;
/// `FH4_VOLATILE_ANY`: filehandles may expire at any time.
pub const FH4_VOLATILE_ANY: u32 = 0x0000_0002;
/// `FH4_VOL_MIGRATION`: filehandles may expire on migration.
pub const FH4_VOL_MIGRATION: u32 = 0x0000_0004;
/// `FH4_VOL_RENAME`: filehandles may expire on rename.
pub const FH4_VOL_RENAME: u32 = 0x0000_0008;

// ---------------------------------------------------------------------------------------------
// ACLs (RFC 8881 section 6.2)

/// `ACL4_SUPPORT_ALLOW_ACL`: `aclsupport` bit, ALLOW ACEs are supported.
pub const ACL4_SUPPORT_ALLOW_ACL: u32 = 0x0000_0001;
/// `ACL4_SUPPORT_DENY_ACL`: `aclsupport` bit, DENY ACEs are supported.
pub const ACL4_SUPPORT_DENY_ACL: u32 = 0x0000_0002;
/// `ACL4_SUPPORT_AUDIT_ACL`: `aclsupport` bit, AUDIT ACEs are supported.
pub const ACL4_SUPPORT_AUDIT_ACL: u32 = 0x0000_0004;
/// `ACL4_SUPPORT_ALARM_ACL`: `aclsupport` bit, ALARM ACEs are supported.
pub const ACL4_SUPPORT_ALARM_ACL: u32 = 0x0000_0008;

/// `ACE4_ACCESS_ALLOWED_ACE_TYPE` (`acetype4`).
pub const ACE4_ACCESS_ALLOWED_ACE_TYPE: u32 = 0x0000_0000;
/// `ACE4_ACCESS_DENIED_ACE_TYPE` (`acetype4`).
pub const ACE4_ACCESS_DENIED_ACE_TYPE: u32 = 0x0000_0001;
/// `ACE4_SYSTEM_AUDIT_ACE_TYPE` (`acetype4`).
pub const ACE4_SYSTEM_AUDIT_ACE_TYPE: u32 = 0x0000_0002;
/// `ACE4_SYSTEM_ALARM_ACE_TYPE` (`acetype4`).
pub const ACE4_SYSTEM_ALARM_ACE_TYPE: u32 = 0x0000_0003;

/// `ACE4_FILE_INHERIT_ACE` (`aceflag4`).
pub const ACE4_FILE_INHERIT_ACE: u32 = 0x0000_0001;
/// `ACE4_DIRECTORY_INHERIT_ACE` (`aceflag4`).
pub const ACE4_DIRECTORY_INHERIT_ACE: u32 = 0x0000_0002;
/// `ACE4_NO_PROPAGATE_INHERIT_ACE` (`aceflag4`).
pub const ACE4_NO_PROPAGATE_INHERIT_ACE: u32 = 0x0000_0004;
/// `ACE4_INHERIT_ONLY_ACE` (`aceflag4`).
pub const ACE4_INHERIT_ONLY_ACE: u32 = 0x0000_0008;
/// `ACE4_SUCCESSFUL_ACCESS_ACE_FLAG` (`aceflag4`).
pub const ACE4_SUCCESSFUL_ACCESS_ACE_FLAG: u32 = 0x0000_0010;
/// `ACE4_FAILED_ACCESS_ACE_FLAG` (`aceflag4`).
pub const ACE4_FAILED_ACCESS_ACE_FLAG: u32 = 0x0000_0020;
/// `ACE4_IDENTIFIER_GROUP` (`aceflag4`): `who` names a group.
pub const ACE4_IDENTIFIER_GROUP: u32 = 0x0000_0040;
/// `ACE4_INHERITED_ACE` (`aceflag4`, NFSv4.1).
pub const ACE4_INHERITED_ACE: u32 = 0x0000_0080;

/// `ACE4_READ_DATA` (`acemask4`).
pub const ACE4_READ_DATA: u32 = 0x0000_0001;
/// `ACE4_LIST_DIRECTORY` (`acemask4`).
pub const ACE4_LIST_DIRECTORY: u32 = 0x0000_0001;
/// `ACE4_WRITE_DATA` (`acemask4`).
pub const ACE4_WRITE_DATA: u32 = 0x0000_0002;
/// `ACE4_ADD_FILE` (`acemask4`).
pub const ACE4_ADD_FILE: u32 = 0x0000_0002;
/// `ACE4_APPEND_DATA` (`acemask4`).
pub const ACE4_APPEND_DATA: u32 = 0x0000_0004;
/// `ACE4_ADD_SUBDIRECTORY` (`acemask4`).
pub const ACE4_ADD_SUBDIRECTORY: u32 = 0x0000_0004;
/// `ACE4_READ_NAMED_ATTRS` (`acemask4`).
pub const ACE4_READ_NAMED_ATTRS: u32 = 0x0000_0008;
/// `ACE4_WRITE_NAMED_ATTRS` (`acemask4`).
pub const ACE4_WRITE_NAMED_ATTRS: u32 = 0x0000_0010;
/// `ACE4_EXECUTE` (`acemask4`).
pub const ACE4_EXECUTE: u32 = 0x0000_0020;
/// `ACE4_DELETE_CHILD` (`acemask4`).
pub const ACE4_DELETE_CHILD: u32 = 0x0000_0040;
/// `ACE4_READ_ATTRIBUTES` (`acemask4`).
pub const ACE4_READ_ATTRIBUTES: u32 = 0x0000_0080;
/// `ACE4_WRITE_ATTRIBUTES` (`acemask4`).
pub const ACE4_WRITE_ATTRIBUTES: u32 = 0x0000_0100;
/// `ACE4_WRITE_RETENTION` (`acemask4`, NFSv4.1).
pub const ACE4_WRITE_RETENTION: u32 = 0x0000_0200;
/// `ACE4_WRITE_RETENTION_HOLD` (`acemask4`, NFSv4.1).
pub const ACE4_WRITE_RETENTION_HOLD: u32 = 0x0000_0400;
/// `ACE4_DELETE` (`acemask4`).
pub const ACE4_DELETE: u32 = 0x0001_0000;
/// `ACE4_READ_ACL` (`acemask4`).
pub const ACE4_READ_ACL: u32 = 0x0002_0000;
/// `ACE4_WRITE_ACL` (`acemask4`).
pub const ACE4_WRITE_ACL: u32 = 0x0004_0000;
/// `ACE4_WRITE_OWNER` (`acemask4`).
pub const ACE4_WRITE_OWNER: u32 = 0x0008_0000;
/// `ACE4_SYNCHRONIZE` (`acemask4`).
pub const ACE4_SYNCHRONIZE: u32 = 0x0010_0000;
/// `ACE4_GENERIC_READ`: READ_ACL | READ_DATA | READ_ATTRIBUTES | SYNCHRONIZE.
pub const ACE4_GENERIC_READ: u32 = 0x0012_0081;
/// `ACE4_GENERIC_WRITE`: READ_ACL | WRITE_DATA | WRITE_ATTRIBUTES | WRITE_ACL | APPEND_DATA |
/// SYNCHRONIZE.
pub const ACE4_GENERIC_WRITE: u32 = 0x0016_0106;
/// `ACE4_GENERIC_EXECUTE`: READ_ACL | READ_ATTRIBUTES | EXECUTE | SYNCHRONIZE.
pub const ACE4_GENERIC_EXECUTE: u32 = 0x0012_00A0;

/// `aclflag4`: flags of an NFSv4.1 ACL.
pub type Aclflag4 = u32;
/// `ACL4_AUTO_INHERIT` (`aclflag4`).
pub const ACL4_AUTO_INHERIT: u32 = 0x0000_0001;
/// `ACL4_PROTECTED` (`aclflag4`).
pub const ACL4_PROTECTED: u32 = 0x0000_0002;
/// `ACL4_DEFAULTED` (`aclflag4`).
pub const ACL4_DEFAULTED: u32 = 0x0000_0004;

/// An NFSv4.1 ACL, the value of `dacl` and `sacl` (RFC 8881 section 6.2).
#[doc(alias = "nfsacl41")]
#[derive(Clone, PartialEq, Eq, Debug, Default, Xdr)]
pub struct Nfsacl41 {
    /// `ACL4_AUTO_INHERIT`, `ACL4_PROTECTED`, `ACL4_DEFAULTED`.
    pub na41_flag: Aclflag4,
    /// The entries, in evaluation order.
    pub na41_aces: Vec<Nfsace4>,
}

// ---------------------------------------------------------------------------------------------
// mode (RFC 8881 section 6.2)

/// `MODE4_SUID`: set user id on execution.
pub const MODE4_SUID: u32 = 0x800;
/// `MODE4_SGID`: set group id on execution.
pub const MODE4_SGID: u32 = 0x400;
/// `MODE4_SVTX`: save text even after use (sticky).
pub const MODE4_SVTX: u32 = 0x200;
/// `MODE4_RUSR`: read permission, owner.
pub const MODE4_RUSR: u32 = 0x100;
/// `MODE4_WUSR`: write permission, owner.
pub const MODE4_WUSR: u32 = 0x080;
/// `MODE4_XUSR`: execute permission, owner.
pub const MODE4_XUSR: u32 = 0x040;
/// `MODE4_RGRP`: read permission, group.
pub const MODE4_RGRP: u32 = 0x020;
/// `MODE4_WGRP`: write permission, group.
pub const MODE4_WGRP: u32 = 0x010;
/// `MODE4_XGRP`: execute permission, group.
pub const MODE4_XGRP: u32 = 0x008;
/// `MODE4_ROTH`: read permission, other.
pub const MODE4_ROTH: u32 = 0x004;
/// `MODE4_WOTH`: write permission, other.
pub const MODE4_WOTH: u32 = 0x002;
/// `MODE4_XOTH`: execute permission, other.
pub const MODE4_XOTH: u32 = 0x001;

/// The value of `mode_set_masked`: change only the mode bits in the mask (RFC 8881 section
/// 6.2).
#[doc(alias = "mode_masked4")]
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default, Xdr)]
pub struct ModeMasked4 {
    /// The values of the bits to set or reset.
    pub mm_value_to_set: Mode4,
    /// Which bits to set or reset.
    pub mm_mask_bits: Mode4,
}

/// The value of `mode_umask`: a creation mode and the umask to apply unless an inherited ACL
/// applies (RFC 8275).
#[doc(alias = "mode_umask4")]
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default, Xdr)]
pub struct ModeUmask4 {
    /// The mode requested for the new object.
    pub mu_mode: Mode4,
    /// The client process's umask.
    pub mu_umask: Mode4,
}

/// The value of `open_arguments` (RFC 9754 section 6): which OPEN arguments the server
/// supports, one bitmap per argument, bit N set when value N is supported. The bit numbers
/// are the `OPEN_ARGS_*` enums: share access 1-3, share deny 0-3, the want field's
/// ANY_DELEG (3), NO_DELEG (4), CANCEL (5) and its flags' bit positions (SIGNAL 17, PUSH 18,
/// DELEG_TIMESTAMPS 20, OPEN_XOR_DELEGATION 21), the claim types 0-6 and the create modes 0-3.
#[doc(alias = "open_arguments4")]
#[derive(Clone, PartialEq, Eq, Debug, Default, Xdr)]
pub struct OpenArguments4 {
    /// `oa_share_access`.
    pub oa_share_access: Bitmap4,
    /// `oa_share_deny`.
    pub oa_share_deny: Bitmap4,
    /// `oa_share_access_want`.
    pub oa_share_access_want: Bitmap4,
    /// `oa_open_claim`.
    pub oa_open_claim: Bitmap4,
    /// `oa_create_mode`.
    pub oa_create_mode: Bitmap4,
}

/// `OPEN_ARGS_SHARE_ACCESS_*` (RFC 9754): the bits of [`OpenArguments4::oa_share_access`].
pub const OPEN_ARGS_SHARE_ACCESS_READ: u32 = 1;
/// See [`OPEN_ARGS_SHARE_ACCESS_READ`].
pub const OPEN_ARGS_SHARE_ACCESS_WRITE: u32 = 2;
/// See [`OPEN_ARGS_SHARE_ACCESS_READ`].
pub const OPEN_ARGS_SHARE_ACCESS_BOTH: u32 = 3;
/// `OPEN_ARGS_SHARE_ACCESS_WANT_*` (RFC 9754): the bits of
/// [`OpenArguments4::oa_share_access_want`]. (The enum names no READ_DELEG or WRITE_DELEG.)
pub const OPEN_ARGS_SHARE_ACCESS_WANT_ANY_DELEG: u32 = 3;
/// See [`OPEN_ARGS_SHARE_ACCESS_WANT_ANY_DELEG`].
pub const OPEN_ARGS_SHARE_ACCESS_WANT_NO_DELEG: u32 = 4;
/// See [`OPEN_ARGS_SHARE_ACCESS_WANT_ANY_DELEG`].
pub const OPEN_ARGS_SHARE_ACCESS_WANT_CANCEL: u32 = 5;
/// See [`OPEN_ARGS_SHARE_ACCESS_WANT_ANY_DELEG`].
pub const OPEN_ARGS_SHARE_ACCESS_WANT_SIGNAL_DELEG_WHEN_RESRC_AVAIL: u32 = 17;
/// See [`OPEN_ARGS_SHARE_ACCESS_WANT_ANY_DELEG`].
pub const OPEN_ARGS_SHARE_ACCESS_WANT_PUSH_DELEG_WHEN_UNCONTENDED: u32 = 18;
/// See [`OPEN_ARGS_SHARE_ACCESS_WANT_ANY_DELEG`].
pub const OPEN_ARGS_SHARE_ACCESS_WANT_DELEG_TIMESTAMPS: u32 = 20;
/// See [`OPEN_ARGS_SHARE_ACCESS_WANT_ANY_DELEG`].
pub const OPEN_ARGS_SHARE_ACCESS_WANT_OPEN_XOR_DELEGATION: u32 = 21;

// ---------------------------------------------------------------------------------------------
// Times (RFC 8881 section 5)

xdr_enum! {
    /// `time_how4`: how SETATTR sets `time_access_set` / `time_modify_set`.
    #[doc(alias = "time_how4")]
    pub struct TimeHow4 {
        SET_TO_SERVER_TIME4 = 0,
        SET_TO_CLIENT_TIME4 = 1,
    }
}

/// The value of `time_access_set` and `time_modify_set`: the server's clock or a time the
/// client gives (RFC 8881 section 3.3).
#[doc(alias = "settime4")]
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Xdr)]
pub enum Settime4 {
    /// `SET_TO_SERVER_TIME4`: use the server's current time.
    #[xdr(case = TimeHow4::SET_TO_SERVER_TIME4)]
    SetToServerTime,
    /// `SET_TO_CLIENT_TIME4`: use this time.
    #[xdr(case = TimeHow4::SET_TO_CLIENT_TIME4)]
    SetToClientTime(Nfstime4),
    /// Any other `time_how4` (the RFC's `default: void` arm). Left out of generated test
    /// values: `TimeHow4`'s only named values belong to the arms above.
    #[xdr(default, skip_arbitrary)]
    Other(TimeHow4),
}

// ---------------------------------------------------------------------------------------------
// File system locations (RFC 8881 section 11)

/// One server set holding a replica of a file system (RFC 8881 section 11).
#[doc(alias = "fs_location4")]
#[derive(Clone, PartialEq, Eq, Debug, Default, Xdr)]
pub struct FsLocation4 {
    /// Server names or addresses (`utf8str_cis server<>`).
    pub server: Vec<Utf8String>,
    /// The file system's path on those servers (`pathname4`).
    pub rootpath: Vec<Component4>,
}

/// The value of `fs_locations`: where a file system, or replicas of it, can be found (RFC
/// 8881 section 11).
#[doc(alias = "fs_locations4")]
#[derive(Clone, PartialEq, Eq, Debug, Default, Xdr)]
pub struct FsLocations4 {
    /// The file system's path on this server (`pathname4`).
    pub fs_root: Vec<Component4>,
    /// The locations.
    pub locations: Vec<FsLocation4>,
}

/// `FSLI4BX_GFLAGS`: index of the general flags byte in `fls_info`.
pub const FSLI4BX_GFLAGS: usize = 0;
/// `FSLI4BX_TFLAGS`: index of the transport flags byte in `fls_info`.
pub const FSLI4BX_TFLAGS: usize = 1;
/// `FSLI4BX_CLSIMUL`: index of the simultaneous-use class in `fls_info`.
pub const FSLI4BX_CLSIMUL: usize = 2;
/// `FSLI4BX_CLHANDLE`: index of the handle class in `fls_info`.
pub const FSLI4BX_CLHANDLE: usize = 3;
/// `FSLI4BX_CLFILEID`: index of the fileid class in `fls_info`.
pub const FSLI4BX_CLFILEID: usize = 4;
/// `FSLI4BX_CLWRITEVER`: index of the write-verifier class in `fls_info`.
pub const FSLI4BX_CLWRITEVER: usize = 5;
/// `FSLI4BX_CLCHANGE`: index of the change class in `fls_info`.
pub const FSLI4BX_CLCHANGE: usize = 6;
/// `FSLI4BX_CLREADDIR`: index of the readdir class in `fls_info`.
pub const FSLI4BX_CLREADDIR: usize = 7;
/// `FSLI4BX_READRANK`: index of the read rank in `fls_info`.
pub const FSLI4BX_READRANK: usize = 8;
/// `FSLI4BX_WRITERANK`: index of the write rank in `fls_info`.
pub const FSLI4BX_WRITERANK: usize = 9;
/// `FSLI4BX_READORDER`: index of the read order in `fls_info`.
pub const FSLI4BX_READORDER: usize = 10;
/// `FSLI4BX_WRITEORDER`: index of the write order in `fls_info`.
pub const FSLI4BX_WRITEORDER: usize = 11;

/// `FSLI4GF_WRITABLE`: general flag, the replica is writable.
pub const FSLI4GF_WRITABLE: u8 = 0x01;
/// `FSLI4GF_CUR_REQ`: general flag, this is the replica the request was sent to.
pub const FSLI4GF_CUR_REQ: u8 = 0x02;
/// `FSLI4GF_ABSENT`: general flag, the file system is absent on this server.
pub const FSLI4GF_ABSENT: u8 = 0x04;
/// `FSLI4GF_GOING`: general flag, the replica is about to become unavailable.
pub const FSLI4GF_GOING: u8 = 0x08;
/// `FSLI4GF_SPLIT`: general flag, the file system may split.
pub const FSLI4GF_SPLIT: u8 = 0x10;
/// `FSLI4TF_RDMA`: transport flag, the server supports RDMA.
pub const FSLI4TF_RDMA: u8 = 0x01;
/// `FSLI4IF_VAR_SUB`: `fli_flags` bit, `${variable}` substitution is used in paths.
pub const FSLI4IF_VAR_SUB: u32 = 0x0000_0001;

/// One server of an `fs_locations_info` item (RFC 8881 section 11).
#[doc(alias = "fs_locations_server4")]
#[derive(Clone, PartialEq, Eq, Debug, Default, Xdr)]
pub struct FsLocationsServer4 {
    /// How current the replica is, in seconds (negative: unknown).
    pub fls_currency: i32,
    /// Flag bytes, classes, ranks and orders, indexed by the `FSLI4BX_*` constants.
    pub fls_info: Bytes,
    /// The server's name or address.
    pub fls_server: Utf8String,
}

/// A set of servers sharing one root path (RFC 8881 section 11).
#[doc(alias = "fs_locations_item4")]
#[derive(Clone, PartialEq, Eq, Debug, Default, Xdr)]
pub struct FsLocationsItem4 {
    /// The servers.
    pub fli_entries: Vec<FsLocationsServer4>,
    /// The file system's path on those servers (`pathname4`).
    pub fli_rootpath: Vec<Component4>,
}

/// The value of `fs_locations_info` (RFC 8881 section 11).
#[doc(alias = "fs_locations_info4")]
#[derive(Clone, PartialEq, Eq, Debug, Default, Xdr)]
pub struct FsLocationsInfo4 {
    /// `FSLI4IF_*` flags.
    pub fli_flags: u32,
    /// How long, in seconds, the client may rely on this information.
    pub fli_valid_for: i32,
    /// The file system's path on this server (`pathname4`).
    pub fli_fs_root: Vec<Component4>,
    /// The locations.
    pub fli_items: Vec<FsLocationsItem4>,
}

// ---------------------------------------------------------------------------------------------
// File system status, change policy, charset (RFC 8881 sections 5 and 11)

xdr_enum! {
    /// `fs4_status_type`: what kind of replica a file system is (RFC 8881 section 11).
    #[doc(alias = "fs4_status_type")]
    pub struct Fs4StatusType {
        STATUS4_FIXED = 1,
        STATUS4_UPDATED = 2,
        STATUS4_VERSIONED = 3,
        STATUS4_WRITABLE = 4,
        STATUS4_REFERRAL = 5,
    }
}

/// The value of `fs_status` (RFC 8881 section 11).
#[doc(alias = "fs4_status")]
#[derive(Clone, PartialEq, Eq, Debug, Xdr)]
pub struct Fs4Status {
    /// The file system is absent from this server.
    pub fss_absent: bool,
    /// The kind of replica.
    pub fss_type: Fs4StatusType,
    /// Where the data comes from, in a server-specific form.
    pub fss_source: Utf8String,
    /// Which version of the data this is, in a server-specific form.
    pub fss_current: Utf8String,
    /// Age of the data in seconds (negative: unknown).
    pub fss_age: i32,
    /// The time of the version.
    pub fss_version: Nfstime4,
}

/// The value of `change_policy`: changes whenever the server's policy for the file system
/// changes (RFC 8881 section 5).
#[doc(alias = "change_policy4")]
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default, Xdr)]
pub struct ChangePolicy4 {
    /// Major part.
    pub cp_major: u64,
    /// Minor part.
    pub cp_minor: u64,
}

/// `fs_charset_cap4`: the value of `fs_charset_cap`, `FSCHARSET_CAP4_*` bits.
pub type FsCharsetCap4 = u32;
/// `FSCHARSET_CAP4_CONTAINS_NON_UTF8`: the file system has names that are not UTF-8.
pub const FSCHARSET_CAP4_CONTAINS_NON_UTF8: u32 = 0x1;
/// `FSCHARSET_CAP4_ALLOWS_ONLY_UTF8`: the file system accepts only UTF-8 names.
pub const FSCHARSET_CAP4_ALLOWS_ONLY_UTF8: u32 = 0x2;

// ---------------------------------------------------------------------------------------------
// pNFS (RFC 8881 sections 5.12 and 12)

/// The value of `layout_hint`: the layout the client would like for a new file (RFC 8881
/// section 5.12).
#[doc(alias = "layouthint4")]
#[derive(Clone, PartialEq, Eq, Debug, Default, Xdr)]
pub struct Layouthint4 {
    /// The layout type.
    pub loh_type: Layouttype4,
    /// The hint body, typed by `loh_type`.
    pub loh_body: Bytes,
}

/// `TH4_READ_SIZE`: `thi_hintset` bit, file size below which reads go to the MDS.
pub const TH4_READ_SIZE: u32 = 0;
/// `TH4_WRITE_SIZE`: `thi_hintset` bit, file size below which writes go to the MDS.
pub const TH4_WRITE_SIZE: u32 = 1;
/// `TH4_READ_IOSIZE`: `thi_hintset` bit, read size below which reads go to the MDS.
pub const TH4_READ_IOSIZE: u32 = 2;
/// `TH4_WRITE_IOSIZE`: `thi_hintset` bit, write size below which writes go to the MDS.
pub const TH4_WRITE_IOSIZE: u32 = 3;

/// Thresholds for one layout type (RFC 8881 section 5.12).
#[doc(alias = "threshold_item4")]
#[derive(Clone, PartialEq, Eq, Debug, Default, Xdr)]
pub struct ThresholdItem4 {
    /// The layout type the thresholds apply to.
    pub thi_layout_type: Layouttype4,
    /// Which `TH4_*` thresholds follow.
    pub thi_hintset: Bitmap4,
    /// The thresholds (each a `length4`), in bit order.
    pub thi_hintlist: Bytes,
}

/// The value of `mdsthreshold` (RFC 8881 section 5.12).
#[doc(alias = "mdsthreshold4")]
#[derive(Clone, PartialEq, Eq, Debug, Default, Xdr)]
pub struct Mdsthreshold4 {
    /// One item per layout type.
    pub mth_hints: Vec<ThresholdItem4>,
}

// ---------------------------------------------------------------------------------------------
// Retention (RFC 8881 section 5.13)

/// `RET4_DURATION_INFINITE`: a retention period that never ends.
pub const RET4_DURATION_INFINITE: u64 = 0xffff_ffff_ffff_ffff;

/// The value of `retention_get` and `retentevt_get` (RFC 8881 section 5.13).
#[doc(alias = "retention_get4")]
#[derive(Clone, PartialEq, Eq, Debug, Default, Xdr)]
pub struct RetentionGet4 {
    /// Retention duration in seconds.
    pub rg_duration: u64,
    /// When retention began, if it has (`nfstime4 rg_begin_time<1>`).
    #[xdr(max = 1)]
    pub rg_begin_time: Vec<Nfstime4>,
}

/// The value of `retention_set` and `retentevt_set` (RFC 8881 section 5.13).
#[doc(alias = "retention_set4")]
#[derive(Clone, PartialEq, Eq, Debug, Default, Xdr)]
pub struct RetentionSet4 {
    /// Enable retention.
    pub rs_enable: bool,
    /// The duration, if given (`uint64_t rs_duration<1>`).
    #[xdr(max = 1)]
    pub rs_duration: Vec<u64>,
}

// ---------------------------------------------------------------------------------------------
// NFSv4.2 (RFC 7862 section 12.2)

xdr_enum! {
    /// `change_attr_type4`: how the server computes `change` (RFC 7862 section 12.2.3).
    #[doc(alias = "change_attr_type4")]
    pub struct ChangeAttrType4 {
        NFS4_CHANGE_TYPE_IS_MONOTONIC_INCR = 0,
        NFS4_CHANGE_TYPE_IS_VERSION_COUNTER = 1,
        NFS4_CHANGE_TYPE_IS_VERSION_COUNTER_NOPNFS = 2,
        NFS4_CHANGE_TYPE_IS_TIME_METADATA = 3,
        NFS4_CHANGE_TYPE_IS_UNDEFINED = 4,
    }
}

/// `policy4`.
pub type Policy4 = u32;

/// A label format specifier (RFC 7862 section 12.2.4).
#[doc(alias = "labelformat_spec4")]
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default, Xdr)]
pub struct LabelformatSpec4 {
    /// Label format specifier.
    pub lfs_lfs: Policy4,
    /// Policy identifier.
    pub lfs_pi: Policy4,
}

/// The value of `sec_label`: a security label (RFC 7862 section 12.2.4).
#[doc(alias = "sec_label4")]
#[derive(Clone, PartialEq, Eq, Debug, Default, Xdr)]
pub struct SecLabel4 {
    /// The label's format.
    pub slai_lfs: LabelformatSpec4,
    /// The label.
    pub slai_data: Bytes,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nfs4::{Fsid4, NfsFtype4};
    use crate::xdr::{from_bytes, to_bytes};

    crate::roundtrip_tests!(
        nfs_ftype4: NfsFtype4,
        fsid4: Fsid4,
        nfsace4: Nfsace4,
        nfsacl41: Nfsacl41,
        mode_masked4: ModeMasked4,
        mode_umask4: ModeUmask4,
        time_how4: TimeHow4,
        settime4: Settime4,
        fs_location4: FsLocation4,
        fs_locations4: FsLocations4,
        fs_locations_server4: FsLocationsServer4,
        fs_locations_item4: FsLocationsItem4,
        fs_locations_info4: FsLocationsInfo4,
        fs4_status_type: Fs4StatusType,
        fs4_status: Fs4Status,
        change_policy4: ChangePolicy4,
        layouthint4: Layouthint4,
        threshold_item4: ThresholdItem4,
        mdsthreshold4: Mdsthreshold4,
        retention_get4: RetentionGet4,
        retention_set4: RetentionSet4,
        change_attr_type4: ChangeAttrType4,
        labelformat_spec4: LabelformatSpec4,
        sec_label4: SecLabel4,
    );

    #[test]
    fn settime4_encodings() {
        assert_eq!(&to_bytes(&Settime4::SetToServerTime)[..], &[0, 0, 0, 0]);
        let t = Settime4::SetToClientTime(Nfstime4 {
            seconds: 0x1_0000_0002,
            nseconds: 7,
        });
        assert_eq!(
            &to_bytes(&t)[..],
            &[0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 7]
        );
        // An unknown time_how4 is kept, so it can be refused by the server, not the codec.
        let b = to_bytes(&9u32);
        assert_eq!(from_bytes::<Settime4>(b), Ok(Settime4::Other(TimeHow4(9))));
    }

    #[test]
    fn retention_arrays_hold_at_most_one_element() {
        // rs_enable = TRUE, rs_duration<1> with a count of 2.
        let b = bytes::Bytes::from_static(&[
            0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 2,
        ]);
        let e = from_bytes::<RetentionSet4>(b).unwrap_err();
        assert_eq!(
            e.kind,
            crate::xdr::DecodeErrorKind::TooLong { len: 2, max: 1 }
        );
    }

    #[test]
    fn nfsacl41_encoding() {
        let acl = Nfsacl41 {
            na41_flag: ACL4_AUTO_INHERIT,
            na41_aces: vec![Nfsace4 {
                r#type: ACE4_ACCESS_ALLOWED_ACE_TYPE,
                flag: ACE4_FILE_INHERIT_ACE | ACE4_DIRECTORY_INHERIT_ACE,
                access_mask: ACE4_GENERIC_READ,
                who: "OWNER@".into(),
            }],
        };
        let want: &[u8] = &[
            0, 0, 0, 1, // na41_flag
            0, 0, 0, 1, // one ACE
            0, 0, 0, 0, // type ALLOW
            0, 0, 0, 3, // flag
            0, 0x12, 0, 0x81, // ACE4_GENERIC_READ
            0, 0, 0, 6, b'O', b'W', b'N', b'E', b'R', b'@', 0, 0,
        ];
        assert_eq!(&to_bytes(&acl)[..], want);
        assert_eq!(
            ACE4_GENERIC_READ,
            ACE4_READ_ACL | ACE4_READ_DATA | ACE4_READ_ATTRIBUTES | ACE4_SYNCHRONIZE
        );
        assert_eq!(
            ACE4_GENERIC_WRITE,
            ACE4_READ_ACL
                | ACE4_WRITE_DATA
                | ACE4_WRITE_ATTRIBUTES
                | ACE4_WRITE_ACL
                | ACE4_APPEND_DATA
                | ACE4_SYNCHRONIZE
        );
        assert_eq!(
            ACE4_GENERIC_EXECUTE,
            ACE4_READ_ACL | ACE4_READ_ATTRIBUTES | ACE4_EXECUTE | ACE4_SYNCHRONIZE
        );
    }
}

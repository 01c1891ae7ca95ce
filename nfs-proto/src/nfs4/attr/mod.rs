//! Attributes: numbers, typed values and `fattr4` encoding (RFC 8881 section 5, RFC 7862
//! section 12.2, RFC 8275, RFC 8276).
//!
//! On the wire, attributes travel as a [`Fattr4`]: a bitmap of attribute numbers and the
//! values of the set bits, XDR-encoded back to back in increasing bit order. Decoding a value
//! needs its type, so an unknown bit makes the rest of the list unreadable.
//!
//! [`FileAttrs`] is the typed form: one `Option` field per attribute this crate knows
//! (every one of RFC 8881, RFC 7862, RFC 8275 and RFC 8276), named after the attribute.
//!
//! ```
//! use nfs_proto::nfs4::attr::{FileAttrs, FATTR4_SIZE, FATTR4_TYPE};
//! use nfs_proto::nfs4::{Bitmap4, NfsFtype4};
//!
//! let attrs = FileAttrs { r#type: Some(NfsFtype4::NF4REG), size: Some(4096), ..FileAttrs::default() };
//! // GETATTR: answer exactly the requested bits we have.
//! let f = attrs.to_fattr(&Bitmap4::from_bits([FATTR4_TYPE, FATTR4_SIZE, 33]));
//! assert_eq!(f.attrmask, Bitmap4::from_bits([FATTR4_TYPE, FATTR4_SIZE]));
//! assert_eq!(FileAttrs::from_fattr(&f).unwrap(), attrs);
//! ```

mod values;

pub use values::*;

use core::fmt;

use crate::nfs4::consts::{NfsFtype4, NfsStat4};
use crate::nfs4::types::{
    Bitmap4, Changeid4, Fattr4, Fsid4, Layouttype4, Mode4, NfsFh4, NfsLease4, Nfsace4, Nfstime4,
    Specdata4,
};
use crate::xdr::{DecodeError, Decoder, Encoder, Utf8String, Xdr};

/// Why an attribute list could not be read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AttrError {
    /// The bitmap has a bit this crate does not know (the lowest such bit). A server answers
    /// `NFS4ERR_ATTRNOTSUPP`.
    Unsupported(u32),
    /// A value is malformed, or bytes are left after the last one. A server answers
    /// `NFS4ERR_BADXDR`.
    Decode(DecodeError),
}

impl From<AttrError> for NfsStat4 {
    fn from(e: AttrError) -> Self {
        match e {
            AttrError::Unsupported(_) => NfsStat4::NFS4ERR_ATTRNOTSUPP,
            AttrError::Decode(_) => NfsStat4::NFS4ERR_BADXDR,
        }
    }
}

impl From<DecodeError> for AttrError {
    fn from(e: DecodeError) -> Self {
        Self::Decode(e)
    }
}

impl fmt::Display for AttrError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Unsupported(bit) => match attr_name(*bit) {
                Some(name) => write!(f, "attribute {bit} ({name}) is not supported"),
                None => write!(f, "attribute {bit} is not supported"),
            },
            Self::Decode(e) => write!(f, "bad attribute list: {e}"),
        }
    }
}

impl std::error::Error for AttrError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Unsupported(_) => None,
            Self::Decode(e) => Some(e),
        }
    }
}

/// Picks the test-value strategy of one attribute: `any::<T>()` unless the table gives one.
#[cfg(any(test, feature = "arbitrary"))]
macro_rules! attr_value_strategy {
    ($ty:ty) => {
        ::proptest::strategy::Strategy::boxed(::proptest::arbitrary::any::<$ty>())
    };
    ($ty:ty, $strat:expr) => {
        ::proptest::strategy::Strategy::boxed($strat)
    };
}

/// Declares, from one table, the `FATTR4_*` constants, the [`FileAttrs`] struct and the
/// per-bit encode/decode dispatch, so that the three cannot disagree.
macro_rules! file_attrs {
    (
        $(
            $(#[doc = $doc:literal])*
            $konst:ident = $bit:literal => $field:ident : $ty:ty $( [$strat:expr] )? ;
        )*
    ) => {
        $(
            $(#[doc = $doc])*
            pub const $konst: u32 = $bit;
        )*

        /// Every attribute number this module understands, in increasing order.
        pub const ALL_KNOWN: &[u32] = &[$($bit,)*];

        /// The attribute's name as the RFC spells it (`"time_modify"`), for logging; `None` for
        /// a bit this module does not know.
        pub fn attr_name(bit: u32) -> Option<&'static str> {
            match bit {
                $( $konst => Some(strip_raw(stringify!($field))), )*
                _ => None,
            }
        }

        /// Attributes as a typed structure: one field per attribute, `None` when absent.
        ///
        /// Build it from a [`Fattr4`] with [`FileAttrs::from_fattr`]; encode it with
        /// [`FileAttrs::to_fattr`] (GETATTR replies: the requested bits that have values) or
        /// [`FileAttrs::to_fattr_exact`] (re-encoding what a peer sent, byte for byte).
        /// Write-only attributes (`time_access_set`, `time_modify_set`, `retention_set`,
        /// `retentevt_set`, `mode_set_masked`) and the creation-time ones (`layout_hint`,
        /// `mode_umask`) are fields too, since SETATTR, CREATE and OPEN carry them.
        #[derive(Clone, PartialEq, Eq, Default)]
        pub struct FileAttrs {
            $(
                $(#[doc = $doc])*
                pub $field: Option<$ty>,
            )*
        }

        impl FileAttrs {
            /// Whether attribute `bit` has a value.
            pub fn has(&self, bit: u32) -> bool {
                match bit {
                    $( $konst => self.$field.is_some(), )*
                    _ => false,
                }
            }

            /// Removes the value of attribute `bit`, if any.
            pub fn clear(&mut self, bit: u32) {
                match bit {
                    $( $konst => self.$field = None, )*
                    _ => {}
                }
            }

            /// The bits that have values, in the fewest words that hold them.
            pub fn mask(&self) -> Bitmap4 {
                let mut m = Bitmap4::new();
                $( if self.$field.is_some() { m.set($konst); } )*
                m
            }

            /// Sets every attribute that `other` has, keeping the others.
            pub fn merge(&mut self, other: FileAttrs) {
                $( if other.$field.is_some() { self.$field = other.$field; } )*
            }

            /// Appends the value of `bit`; false (and nothing written) when absent or unknown.
            fn encode_one(&self, bit: u32, enc: &mut Encoder) -> bool {
                match bit {
                    $(
                        $konst => match &self.$field {
                            Some(v) => {
                                Xdr::encode(v, enc);
                                true
                            }
                            None => false,
                        },
                    )*
                    _ => false,
                }
            }

            /// Reads the value of a known `bit`.
            fn decode_one(&mut self, bit: u32, dec: &mut Decoder) -> Result<(), DecodeError> {
                match bit {
                    $(
                        $konst => {
                            self.$field = Some(
                                <$ty as Xdr>::decode(dec)
                                    .map_err(|e| e.context(stringify!($konst)))?,
                            );
                        }
                    )*
                    // from_fattr checks every bit before decoding anything.
                    _ => return Err(DecodeError::new(
                        crate::xdr::DecodeErrorKind::Invalid("unknown attribute"),
                        dec.position(),
                    )),
                }
                Ok(())
            }
        }

        impl fmt::Debug for FileAttrs {
            /// Lists only the attributes that have values.
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                let mut d = f.debug_struct("FileAttrs");
                $(
                    if let Some(v) = &self.$field {
                        d.field(strip_raw(stringify!($field)), v);
                    }
                )*
                d.finish()
            }
        }

        /// A test-value strategy for `FileAttrs` with only attribute `bit` set.
        #[cfg(any(test, feature = "arbitrary"))]
        fn single_attr_strategy(
            bit: u32,
        ) -> Option<::proptest::strategy::BoxedStrategy<FileAttrs>> {
            use ::proptest::strategy::Strategy as _;
            match bit {
                $(
                    $konst => Some(
                        attr_value_strategy!($ty $(, $strat)?)
                            .prop_map(|v| FileAttrs { $field: Some(v), ..FileAttrs::default() })
                            .boxed(),
                    ),
                )*
                _ => None,
            }
        }
    };
}

/// `r#type` -> `type`.
fn strip_raw(s: &'static str) -> &'static str {
    s.strip_prefix("r#").unwrap_or(s)
}

/// Test values for `Vec` attributes: a few elements, not proptest's default of up to 100.
#[cfg(any(test, feature = "arbitrary"))]
fn short_vec<T: proptest::arbitrary::Arbitrary>(
) -> impl proptest::strategy::Strategy<Value = Vec<T>> {
    proptest::collection::vec(proptest::arbitrary::any::<T>(), 0..=3)
}

file_attrs! {
    // REQUIRED attributes (RFC 8881 section 5.6).
    /// `supported_attrs` (0): the attributes the server supports for this object's file system.
    FATTR4_SUPPORTED_ATTRS = 0 => supported_attrs: Bitmap4;
    /// `type` (1): the object's type.
    FATTR4_TYPE = 1 => r#type: NfsFtype4;
    /// `fh_expire_type` (2): when filehandles expire, `FH4_*` bits.
    FATTR4_FH_EXPIRE_TYPE = 2 => fh_expire_type: u32;
    /// `change` (3): changes whenever the object's data or metadata does.
    FATTR4_CHANGE = 3 => change: Changeid4;
    /// `size` (4): size in bytes.
    FATTR4_SIZE = 4 => size: u64;
    /// `link_support` (5): hard links are supported.
    FATTR4_LINK_SUPPORT = 5 => link_support: bool;
    /// `symlink_support` (6): symbolic links are supported.
    FATTR4_SYMLINK_SUPPORT = 6 => symlink_support: bool;
    /// `named_attr` (7): the object has named attributes.
    FATTR4_NAMED_ATTR = 7 => named_attr: bool;
    /// `fsid` (8): the file system the object is on.
    FATTR4_FSID = 8 => fsid: Fsid4;
    /// `unique_handles` (9): two distinct objects never share a filehandle.
    FATTR4_UNIQUE_HANDLES = 9 => unique_handles: bool;
    /// `lease_time` (10): the lease period in seconds.
    FATTR4_LEASE_TIME = 10 => lease_time: NfsLease4;
    /// `rdattr_error` (11): READDIR's per-entry error for the attributes.
    FATTR4_RDATTR_ERROR = 11 => rdattr_error: NfsStat4;
    // RECOMMENDED attributes (RFC 8881 section 5.7).
    /// `acl` (12): the NFSv4.0-style ACL.
    FATTR4_ACL = 12 => acl: Vec<Nfsace4> [short_vec::<Nfsace4>()];
    /// `aclsupport` (13): supported ACE types, `ACL4_SUPPORT_*` bits.
    FATTR4_ACLSUPPORT = 13 => aclsupport: u32;
    /// `archive` (14): the object needs archiving.
    FATTR4_ARCHIVE = 14 => archive: bool;
    /// `cansettime` (15): the server can set times as SETATTR asks.
    FATTR4_CANSETTIME = 15 => cansettime: bool;
    /// `case_insensitive` (16): name lookups ignore case.
    FATTR4_CASE_INSENSITIVE = 16 => case_insensitive: bool;
    /// `case_preserving` (17): names keep their case.
    FATTR4_CASE_PRESERVING = 17 => case_preserving: bool;
    /// `chown_restricted` (18): only privileged users may change owners.
    FATTR4_CHOWN_RESTRICTED = 18 => chown_restricted: bool;
    /// `filehandle` (19, REQUIRED): the object's filehandle.
    FATTR4_FILEHANDLE = 19 => filehandle: NfsFh4;
    /// `fileid` (20): the object's number within its file system.
    FATTR4_FILEID = 20 => fileid: u64;
    /// `files_avail` (21): file slots available to this user.
    FATTR4_FILES_AVAIL = 21 => files_avail: u64;
    /// `files_free` (22): file slots free.
    FATTR4_FILES_FREE = 22 => files_free: u64;
    /// `files_total` (23): file slots in total.
    FATTR4_FILES_TOTAL = 23 => files_total: u64;
    /// `fs_locations` (24): where the file system, or replicas of it, are.
    FATTR4_FS_LOCATIONS = 24 => fs_locations: FsLocations4;
    /// `hidden` (25): the object is hidden (Windows semantics).
    FATTR4_HIDDEN = 25 => hidden: bool;
    /// `homogeneous` (26): every object of the file system has the same per-fs attributes.
    FATTR4_HOMOGENEOUS = 26 => homogeneous: bool;
    /// `maxfilesize` (27): the largest file size supported.
    FATTR4_MAXFILESIZE = 27 => maxfilesize: u64;
    /// `maxlink` (28): the most hard links to one object.
    FATTR4_MAXLINK = 28 => maxlink: u32;
    /// `maxname` (29): the longest name, in bytes.
    FATTR4_MAXNAME = 29 => maxname: u32;
    /// `maxread` (30): the largest READ the server handles well.
    FATTR4_MAXREAD = 30 => maxread: u64;
    /// `maxwrite` (31): the largest WRITE the server handles well.
    FATTR4_MAXWRITE = 31 => maxwrite: u64;
    /// `mimetype` (32): the object's MIME type.
    FATTR4_MIMETYPE = 32 => mimetype: Utf8String;
    /// `mode` (33): UNIX-style mode bits, `MODE4_*`.
    FATTR4_MODE = 33 => mode: Mode4;
    /// `no_trunc` (34): names longer than `maxname` are refused, not truncated.
    FATTR4_NO_TRUNC = 34 => no_trunc: bool;
    /// `numlinks` (35): number of hard links.
    FATTR4_NUMLINKS = 35 => numlinks: u32;
    /// `owner` (36): the owner, `user@domain` or a numeric id.
    FATTR4_OWNER = 36 => owner: Utf8String;
    /// `owner_group` (37): the group, `group@domain` or a numeric id.
    FATTR4_OWNER_GROUP = 37 => owner_group: Utf8String;
    /// `quota_avail_hard` (38): bytes until the hard quota.
    FATTR4_QUOTA_AVAIL_HARD = 38 => quota_avail_hard: u64;
    /// `quota_avail_soft` (39): bytes until the soft quota.
    FATTR4_QUOTA_AVAIL_SOFT = 39 => quota_avail_soft: u64;
    /// `quota_used` (40): bytes charged to the quota.
    FATTR4_QUOTA_USED = 40 => quota_used: u64;
    /// `rawdev` (41): device numbers of a block or character device.
    FATTR4_RAWDEV = 41 => rawdev: Specdata4;
    /// `space_avail` (42): bytes available to this user.
    FATTR4_SPACE_AVAIL = 42 => space_avail: u64;
    /// `space_free` (43): bytes free.
    FATTR4_SPACE_FREE = 43 => space_free: u64;
    /// `space_total` (44): bytes in total.
    FATTR4_SPACE_TOTAL = 44 => space_total: u64;
    /// `space_used` (45): bytes the object uses.
    FATTR4_SPACE_USED = 45 => space_used: u64;
    /// `system` (46): the object is a system file (Windows semantics).
    FATTR4_SYSTEM = 46 => system: bool;
    /// `time_access` (47): last access.
    FATTR4_TIME_ACCESS = 47 => time_access: Nfstime4;
    /// `time_access_set` (48, write-only): set the access time.
    FATTR4_TIME_ACCESS_SET = 48 => time_access_set: Settime4;
    /// `time_backup` (49): last backup.
    FATTR4_TIME_BACKUP = 49 => time_backup: Nfstime4;
    /// `time_create` (50): creation.
    FATTR4_TIME_CREATE = 50 => time_create: Nfstime4;
    /// `time_delta` (51): the server's time granularity.
    FATTR4_TIME_DELTA = 51 => time_delta: Nfstime4;
    /// `time_metadata` (52): last metadata change.
    FATTR4_TIME_METADATA = 52 => time_metadata: Nfstime4;
    /// `time_modify` (53): last data change.
    FATTR4_TIME_MODIFY = 53 => time_modify: Nfstime4;
    /// `time_modify_set` (54, write-only): set the modify time.
    FATTR4_TIME_MODIFY_SET = 54 => time_modify_set: Settime4;
    /// `mounted_on_fileid` (55): the fileid of the directory this file system is mounted on.
    FATTR4_MOUNTED_ON_FILEID = 55 => mounted_on_fileid: u64;
    // New in NFSv4.1 (RFC 8881).
    /// `dir_notif_delay` (56): delay of directory-attribute notifications.
    FATTR4_DIR_NOTIF_DELAY = 56 => dir_notif_delay: Nfstime4;
    /// `dirent_notif_delay` (57): delay of directory-entry notifications.
    FATTR4_DIRENT_NOTIF_DELAY = 57 => dirent_notif_delay: Nfstime4;
    /// `dacl` (58): the NFSv4.1 discretionary ACL.
    FATTR4_DACL = 58 => dacl: Nfsacl41;
    /// `sacl` (59): the NFSv4.1 system (audit/alarm) ACL.
    FATTR4_SACL = 59 => sacl: Nfsacl41;
    /// `change_policy` (60): changes when the server's policy for the file system changes.
    FATTR4_CHANGE_POLICY = 60 => change_policy: ChangePolicy4;
    /// `fs_status` (61): the file system's replica status.
    FATTR4_FS_STATUS = 61 => fs_status: Fs4Status;
    /// `fs_layout_types` (62): the layout types the file system supports.
    FATTR4_FS_LAYOUT_TYPES = 62 => fs_layout_types: Vec<Layouttype4> [short_vec::<Layouttype4>()];
    /// `layout_hint` (63): the layout the client prefers for a new file.
    FATTR4_LAYOUT_HINT = 63 => layout_hint: Layouthint4;
    /// `layout_types` (64): the layout types available for this file.
    FATTR4_LAYOUT_TYPES = 64 => layout_types: Vec<Layouttype4> [short_vec::<Layouttype4>()];
    /// `layout_blksize` (65): the preferred I/O block size for layouts.
    FATTR4_LAYOUT_BLKSIZE = 65 => layout_blksize: u32;
    /// `layout_alignment` (66): the preferred I/O alignment for layouts.
    FATTR4_LAYOUT_ALIGNMENT = 66 => layout_alignment: u32;
    /// `fs_locations_info` (67): detailed replica and migration information.
    FATTR4_FS_LOCATIONS_INFO = 67 => fs_locations_info: FsLocationsInfo4;
    /// `mdsthreshold` (68): sizes below which I/O should go through the metadata server.
    FATTR4_MDSTHRESHOLD = 68 => mdsthreshold: Mdsthreshold4;
    /// `retention_get` (69): the retention state.
    FATTR4_RETENTION_GET = 69 => retention_get: RetentionGet4;
    /// `retention_set` (70, write-only): start retention.
    FATTR4_RETENTION_SET = 70 => retention_set: RetentionSet4;
    /// `retentevt_get` (71): the event-based retention state.
    FATTR4_RETENTEVT_GET = 71 => retentevt_get: RetentionGet4;
    /// `retentevt_set` (72, write-only): start event-based retention.
    FATTR4_RETENTEVT_SET = 72 => retentevt_set: RetentionSet4;
    /// `retention_hold` (73): retention hold bits.
    FATTR4_RETENTION_HOLD = 73 => retention_hold: u64;
    /// `mode_set_masked` (74, write-only): set only some mode bits.
    FATTR4_MODE_SET_MASKED = 74 => mode_set_masked: ModeMasked4;
    /// `suppattr_exclcreat` (75, REQUIRED): attributes settable by an EXCLUSIVE4_1 create.
    FATTR4_SUPPATTR_EXCLCREAT = 75 => suppattr_exclcreat: Bitmap4;
    /// `fs_charset_cap` (76): the file system's character set handling,
    /// `FSCHARSET_CAP4_*` bits.
    FATTR4_FS_CHARSET_CAP = 76 => fs_charset_cap: FsCharsetCap4;
    // New in NFSv4.2 (RFC 7862 section 12.2).
    /// `clone_blksize` (77): the block size CLONE ranges must be aligned to.
    FATTR4_CLONE_BLKSIZE = 77 => clone_blksize: u32;
    /// `space_freed` (78): bytes a REMOVE of this object would free.
    FATTR4_SPACE_FREED = 78 => space_freed: u64;
    /// `change_attr_type` (79): how `change` is computed.
    FATTR4_CHANGE_ATTR_TYPE = 79 => change_attr_type: ChangeAttrType4;
    /// `sec_label` (80): the object's security label.
    FATTR4_SEC_LABEL = 80 => sec_label: SecLabel4;
    // RFC 8275.
    /// `mode_umask` (81): creation mode and umask, for inheritable ACLs (CREATE, OPEN).
    FATTR4_MODE_UMASK = 81 => mode_umask: ModeUmask4;
    // RFC 8276.
    /// `xattr_support` (82): the object supports extended attributes.
    FATTR4_XATTR_SUPPORT = 82 => xattr_support: bool;
    // RFC 9754 (extensions to OPEN and delegations, NFSv4.2).
    /// `offline` (83): the file's data is not online (fetching it may take long).
    FATTR4_OFFLINE = 83 => offline: bool;
    /// `time_deleg_access` (84): the access time a delegation holder caches.
    FATTR4_TIME_DELEG_ACCESS = 84 => time_deleg_access: Nfstime4;
    /// `time_deleg_modify` (85): the modify time a delegation holder caches.
    FATTR4_TIME_DELEG_MODIFY = 85 => time_deleg_modify: Nfstime4;
    /// `open_arguments` (86): which OPEN arguments the server supports.
    FATTR4_OPEN_ARGUMENTS = 86 => open_arguments: OpenArguments4;
}

/// Whether this module understands attribute `bit`.
pub fn is_known(bit: u32) -> bool {
    attr_name(bit).is_some()
}

/// The bitmap of every attribute this module understands.
pub fn all_known_mask() -> Bitmap4 {
    Bitmap4::from_bits(ALL_KNOWN.iter().copied())
}

impl FileAttrs {
    /// Reads the attributes of `f`, in bit order.
    ///
    /// Any bit this module does not know gives [`AttrError::Unsupported`] (the lowest such
    /// bit; checked before any value is read); a malformed value, or bytes left after the
    /// last value, gives [`AttrError::Decode`].
    pub fn from_fattr(f: &Fattr4) -> Result<FileAttrs, AttrError> {
        if let Some(bit) = f.attrmask.iter().find(|&b| !is_known(b)) {
            return Err(AttrError::Unsupported(bit));
        }
        let mut attrs = FileAttrs::default();
        let mut dec = Decoder::new(f.attr_vals.clone());
        for bit in f.attrmask.iter() {
            attrs.decode_one(bit, &mut dec)?;
        }
        dec.finish().map_err(|e| e.context("fattr4.attr_vals"))?;
        Ok(attrs)
    }

    /// Encodes the attributes that are both in `requested` and present here, in increasing
    /// bit order, with a bitmap of the fewest words that hold the highest bit written (no
    /// trailing zero words; no words at all when nothing is written). Requested bits without
    /// a value, or unknown to this module, are left out: the GETATTR and READDIR rule.
    pub fn to_fattr(&self, requested: &Bitmap4) -> Fattr4 {
        let mut mask = Bitmap4::new();
        let mut enc = Encoder::new();
        for bit in requested.iter() {
            if self.encode_one(bit, &mut enc) {
                mask.set(bit);
            }
        }
        Fattr4 {
            attrmask: mask,
            attr_vals: enc.into_bytes(),
        }
    }

    /// Encodes with `mask` as the bitmap, word count included (trailing zero words too), so
    /// that attributes decoded from a peer re-encode to the bytes it sent.
    ///
    /// Every bit of `mask` must have a value here (checked in debug builds). In release builds
    /// a bit without a value is cleared in the output bitmap, which keeps the result well
    /// formed.
    pub fn to_fattr_exact(&self, mask: &Bitmap4) -> Fattr4 {
        let mut out = mask.clone();
        let mut enc = Encoder::new();
        for bit in mask.iter() {
            let written = self.encode_one(bit, &mut enc);
            debug_assert!(written, "to_fattr_exact: attribute {bit} has no value");
            if !written {
                out.clear(bit);
            }
        }
        Fattr4 {
            attrmask: out,
            attr_vals: enc.into_bytes(),
        }
    }

    /// True when no attribute has a value.
    pub fn is_empty(&self) -> bool {
        self.mask().is_empty()
    }
}

impl TryFrom<&Fattr4> for FileAttrs {
    type Error = AttrError;
    fn try_from(f: &Fattr4) -> Result<Self, AttrError> {
        FileAttrs::from_fattr(f)
    }
}

/// Test values: a random subset of the attributes, each with a random value.
#[cfg(any(test, feature = "arbitrary"))]
impl proptest::arbitrary::Arbitrary for FileAttrs {
    type Parameters = ();
    type Strategy = proptest::strategy::BoxedStrategy<Self>;
    fn arbitrary_with(_: ()) -> Self::Strategy {
        use proptest::strategy::Strategy;
        proptest::sample::subsequence(ALL_KNOWN.to_vec(), 0..=ALL_KNOWN.len())
            .prop_flat_map(|bits| {
                bits.into_iter()
                    .filter_map(single_attr_strategy)
                    .collect::<Vec<_>>()
            })
            .prop_map(|parts| {
                parts.into_iter().fold(FileAttrs::default(), |mut a, p| {
                    a.merge(p);
                    a
                })
            })
            .boxed()
    }
}

#[cfg(test)]
mod tests;

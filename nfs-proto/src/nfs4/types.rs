//! Basic NFSv4 data types shared by many operations (RFC 8881 section 3.2 and 3.3).

use bytes::Bytes;

use super::consts::*;
use crate::xdr::{Utf8String, Xdr};
use crate::xdr_enum;

/// `clientid4`.
pub type Clientid4 = u64;
/// `seqid4`.
pub type Seqid4 = u32;
/// `sequenceid4`.
pub type Sequenceid4 = u32;
/// `slotid4`.
pub type Slotid4 = u32;
/// `count4`.
pub type Count4 = u32;
/// `length4`.
pub type Length4 = u64;
/// `offset4`.
pub type Offset4 = u64;
/// `nfs_cookie4`.
pub type NfsCookie4 = u64;
/// `changeid4`.
pub type Changeid4 = u64;
/// `acemask4`.
pub type Acemask4 = u32;
/// `mode4`.
pub type Mode4 = u32;
/// `nfs_lease4`.
pub type NfsLease4 = u32;
/// `qop4`.
pub type Qop4 = u32;
/// `component4`: one name in a path.
pub type Component4 = Utf8String;
/// `linktext4`: a symbolic link's target.
pub type Linktext4 = Utf8String;
/// `pathname4`.
pub type Pathname4 = Vec<Component4>;
/// `verifier4`.
pub type Verifier4 = [u8; NFS4_VERIFIER_SIZE];
/// `sessionid4`.
pub type Sessionid4 = [u8; NFS4_SESSIONID_SIZE];
/// `deviceid4`.
pub type Deviceid4 = [u8; NFS4_DEVICEID4_SIZE];

/// `nfs_fh4`: a filehandle, at most [`NFS4_FHSIZE`] bytes.
#[derive(Clone, PartialEq, Eq, Hash, Default, Xdr)]
pub struct NfsFh4(#[xdr(max = NFS4_FHSIZE)] pub Bytes);

impl core::fmt::Debug for NfsFh4 {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("fh:")?;
        for b in self.0.iter() {
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}

/// `bitmap4`: a bit set over 32-bit words. The word count is kept as it came on the wire, so
/// a bitmap with trailing zero words re-encodes to the same bytes.
#[derive(Clone, PartialEq, Eq, Hash, Default, Debug)]
pub struct Bitmap4(pub Vec<u32>);

/// The most words a bitmap may carry. Attributes go up to bit 86 (three words) as of RFC
/// 8276; eight leaves room for extensions while bounding the allocation.
pub const BITMAP4_MAX_WORDS: u32 = 8;

impl Bitmap4 {
    /// The empty bitmap (no words).
    pub fn new() -> Self {
        Self(Vec::new())
    }

    /// A bitmap with the given bits set.
    pub fn from_bits(bits: impl IntoIterator<Item = u32>) -> Self {
        let mut b = Self::new();
        for bit in bits {
            b.set(bit);
        }
        b
    }

    /// Whether `bit` is set.
    pub fn contains(&self, bit: u32) -> bool {
        self.0
            .get((bit / 32) as usize)
            .is_some_and(|w| w & (1 << (bit % 32)) != 0)
    }

    /// Sets `bit`, growing the bitmap as needed.
    pub fn set(&mut self, bit: u32) {
        let w = (bit / 32) as usize;
        if self.0.len() <= w {
            self.0.resize(w + 1, 0);
        }
        self.0[w] |= 1 << (bit % 32);
    }

    /// Clears `bit`.
    pub fn clear(&mut self, bit: u32) {
        if let Some(w) = self.0.get_mut((bit / 32) as usize) {
            *w &= !(1 << (bit % 32));
        }
    }

    /// The set bits in increasing order.
    pub fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        self.0.iter().enumerate().flat_map(|(i, &w)| {
            (0..32)
                .filter(move |b| w & (1 << b) != 0)
                .map(move |b| i as u32 * 32 + b)
        })
    }

    /// True when no bit is set.
    pub fn is_empty(&self) -> bool {
        self.0.iter().all(|&w| w == 0)
    }

    /// The bits set in both.
    pub fn intersect(&self, other: &Self) -> Self {
        Self(self.0.iter().zip(&other.0).map(|(a, b)| a & b).collect())
    }
}

impl Xdr for Bitmap4 {
    fn encode(&self, enc: &mut crate::xdr::Encoder) {
        self.0.encode(enc);
    }
    fn decode(dec: &mut crate::xdr::Decoder) -> Result<Self, crate::xdr::DecodeError> {
        <Vec<u32> as crate::xdr::XdrBounded>::decode_bounded(dec, BITMAP4_MAX_WORDS)
            .map(Self)
            .map_err(|e| e.context("Bitmap4"))
    }
}

#[cfg(any(test, feature = "arbitrary"))]
impl proptest::arbitrary::Arbitrary for Bitmap4 {
    type Parameters = ();
    type Strategy = proptest::strategy::BoxedStrategy<Self>;
    fn arbitrary_with(_: ()) -> Self::Strategy {
        use proptest::prelude::*;
        proptest::collection::vec(any::<u32>(), 0..=3)
            .prop_map(Self)
            .boxed()
    }
}

/// `nfstime4`.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default, Debug, Xdr)]
pub struct Nfstime4 {
    /// Seconds since the epoch.
    pub seconds: i64,
    /// Nanoseconds.
    pub nseconds: u32,
}

/// `stateid4` (RFC 8881 section 8.2).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default, Debug, Xdr)]
pub struct Stateid4 {
    /// Incremented on each change of the state.
    pub seqid: u32,
    /// Identifies the state; opaque to the client.
    pub other: [u8; NFS4_OTHER_SIZE],
}

impl Stateid4 {
    /// The anonymous stateid: all zeros.
    pub const ANONYMOUS: Self = Self {
        seqid: 0,
        other: [0; 12],
    };
    /// The READ bypass stateid: all ones.
    pub const BYPASS: Self = Self {
        seqid: u32::MAX,
        other: [0xff; 12],
    };
    /// The current stateid: seqid 1, other all zeros.
    pub const CURRENT: Self = Self {
        seqid: 1,
        other: [0; 12],
    };
    /// The invalid stateid: seqid u32::MAX, other all zeros.
    pub const INVALID: Self = Self {
        seqid: u32::MAX,
        other: [0; 12],
    };
}

/// `change_info4`.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, Xdr)]
pub struct ChangeInfo4 {
    /// Whether before and after were taken atomically with the change.
    pub atomic: bool,
    /// The change attribute before.
    pub before: Changeid4,
    /// The change attribute after.
    pub after: Changeid4,
}

/// `specdata4`: device numbers.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, Xdr)]
pub struct Specdata4 {
    /// Major number.
    pub specdata1: u32,
    /// Minor number.
    pub specdata2: u32,
}

/// `fsid4`.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default, Xdr)]
pub struct Fsid4 {
    /// Major.
    pub major: u64,
    /// Minor.
    pub minor: u64,
}

/// `fattr4`: attributes as sent on the wire, a bitmap and the encoded values. See
/// [`crate::nfs4::attr::FileAttrs`] for the typed form.
#[derive(Clone, PartialEq, Eq, Debug, Default, Xdr)]
pub struct Fattr4 {
    /// Which attributes follow.
    pub attrmask: Bitmap4,
    /// Their values, in bit order (`attrlist4`).
    pub attr_vals: Bytes,
}

/// `state_owner4` (also `open_owner4` and `lock_owner4`).
#[derive(Clone, PartialEq, Eq, Hash, Debug, Default, Xdr)]
pub struct StateOwner4 {
    /// The owning client.
    pub clientid: Clientid4,
    /// The owner's name, opaque to the server.
    #[xdr(max = NFS4_OPAQUE_LIMIT)]
    pub owner: Bytes,
}

/// `open_owner4`.
pub type OpenOwner4 = StateOwner4;
/// `lock_owner4`.
pub type LockOwner4 = StateOwner4;

/// `client_owner4` (RFC 8881 section 2.4).
#[derive(Clone, PartialEq, Eq, Hash, Debug, Default, Xdr)]
pub struct ClientOwner4 {
    /// Changes on each client reboot.
    pub co_verifier: Verifier4,
    /// Unique name of the client.
    #[xdr(max = NFS4_OPAQUE_LIMIT)]
    pub co_ownerid: Bytes,
}

/// `server_owner4`.
#[derive(Clone, PartialEq, Eq, Debug, Default, Xdr)]
pub struct ServerOwner4 {
    /// Servers sharing this may share client ids.
    pub so_minor_id: u64,
    /// Servers sharing this may trunk sessions.
    #[xdr(max = NFS4_OPAQUE_LIMIT)]
    pub so_major_id: Bytes,
}

/// `nfs_impl_id4`.
#[derive(Clone, PartialEq, Eq, Debug, Default, Xdr)]
pub struct NfsImplId4 {
    /// DNS domain of the implementer.
    pub nii_domain: Utf8String,
    /// Product name and version.
    pub nii_name: Utf8String,
    /// Build date.
    pub nii_date: Nfstime4,
}

/// `netaddr4`: a network id (`"tcp"`, `"tcp6"`, `"rdma"`, ...) and a universal address
/// (RFC 5665: `"h1.h2.h3.h4.p1.p2"` for IPv4).
#[derive(Clone, PartialEq, Eq, Hash, Debug, Default, Xdr)]
pub struct Netaddr4 {
    /// `na_r_netid`.
    pub na_r_netid: Utf8String,
    /// `na_r_addr`.
    pub na_r_addr: Utf8String,
}

xdr_enum! {
    /// `layouttype4`.
    pub struct Layouttype4 {
        LAYOUT4_NFSV4_1_FILES = 1,
        LAYOUT4_OSD2_OBJECTS = 2,
        LAYOUT4_BLOCK_VOLUME = 3,
        LAYOUT4_FLEX_FILES = 4,
        LAYOUT4_SCSI = 5,
    }
}

xdr_enum! {
    /// `layoutiomode4`.
    pub struct Layoutiomode4 {
        LAYOUTIOMODE4_READ = 1,
        LAYOUTIOMODE4_RW = 2,
        LAYOUTIOMODE4_ANY = 3,
    }
}

/// `layout_content4`: a layout body, opaque at this level (see
/// [`crate::nfs4::layout_files`]).
#[derive(Clone, PartialEq, Eq, Debug, Default, Xdr)]
pub struct LayoutContent4 {
    /// The layout type.
    pub loc_type: Layouttype4,
    /// The body, typed by `loc_type`.
    pub loc_body: Bytes,
}

impl Default for Layouttype4 {
    fn default() -> Self {
        Self::LAYOUT4_NFSV4_1_FILES
    }
}

impl Default for Layoutiomode4 {
    fn default() -> Self {
        Self::LAYOUTIOMODE4_READ
    }
}

/// `layout4`: one layout segment.
#[derive(Clone, PartialEq, Eq, Debug, Default, Xdr)]
pub struct Layout4 {
    /// Start of the range.
    pub lo_offset: Offset4,
    /// Length of the range (`NFS4_UINT64_MAX` for the rest of the file).
    pub lo_length: Length4,
    /// READ or RW.
    pub lo_iomode: Layoutiomode4,
    /// The body.
    pub lo_content: LayoutContent4,
}

/// `device_addr4`: a device's address, opaque at this level.
#[derive(Clone, PartialEq, Eq, Debug, Default, Xdr)]
pub struct DeviceAddr4 {
    /// The layout type.
    pub da_layout_type: Layouttype4,
    /// The body, typed by `da_layout_type`.
    pub da_addr_body: Bytes,
}

/// `layoutupdate4`: layout-type-specific data of LAYOUTCOMMIT.
#[derive(Clone, PartialEq, Eq, Debug, Default, Xdr)]
pub struct Layoutupdate4 {
    /// The layout type.
    pub lou_type: Layouttype4,
    /// The body.
    pub lou_body: Bytes,
}

xdr_enum! {
    /// `notify_deviceid_type4` (also the bits of a device notification bitmap).
    pub struct NotifyDeviceidType4 {
        NOTIFY_DEVICEID4_CHANGE = 1,
        NOTIFY_DEVICEID4_DELETE = 2,
    }
}

/// Declares the common result shape: `union X4res switch (nfsstat4 status) { case NFS4_OK:
/// X4resok resok4; default: void; }`, with a `status()` method.
#[macro_export]
macro_rules! nfs_res {
    ($(#[$meta:meta])* pub enum $name:ident => $ok:ty) => {
        $(#[$meta])*
        #[derive(Clone, PartialEq, Debug, $crate::xdr::Xdr)]
        pub enum $name {
            /// `NFS4_OK` and its result.
            #[xdr(case = $crate::nfs4::NfsStat4::NFS4_OK)]
            Ok($ok),
            /// Any error status.
            #[xdr(default)]
            Err($crate::nfs4::NfsStat4),
        }

        impl $name {
            /// The operation's status.
            pub fn status(&self) -> $crate::nfs4::NfsStat4 {
                match self {
                    Self::Ok(_) => $crate::nfs4::NfsStat4::NFS4_OK,
                    Self::Err(s) => *s,
                }
            }

            /// The result of the operation failing with `status` (an error status).
            pub fn error(status: $crate::nfs4::NfsStat4) -> Self {
                debug_assert!(!status.is_ok(), "an error result with NFS4_OK");
                Self::Err(status)
            }
        }

        /// An operation written as a `Result` answers with its result body or its error.
        impl From<Result<$ok, $crate::nfs4::NfsStat4>> for $name {
            fn from(r: Result<$ok, $crate::nfs4::NfsStat4>) -> Self {
                match r {
                    Ok(ok) => Self::Ok(ok),
                    Err(status) => Self::error(status),
                }
            }
        }
    };
}

/// Declares a result that is only a status: `struct X4res { nfsstat4 status; }`.
#[macro_export]
macro_rules! nfs_status_res {
    ($(#[$meta:meta])* pub struct $name:ident) => {
        $(#[$meta])*
        #[derive(Clone, Copy, PartialEq, Eq, Debug, $crate::xdr::Xdr)]
        pub struct $name {
            /// The operation's status.
            pub status: $crate::nfs4::NfsStat4,
        }

        impl $name {
            /// The operation's status.
            pub fn status(&self) -> $crate::nfs4::NfsStat4 {
                self.status
            }

            /// The result of the operation failing with `status`.
            pub fn error(status: $crate::nfs4::NfsStat4) -> Self {
                Self { status }
            }
        }

        /// An operation written as a `Result` with no result body answers with its status.
        impl From<Result<(), $crate::nfs4::NfsStat4>> for $name {
            fn from(r: Result<(), $crate::nfs4::NfsStat4>) -> Self {
                Self {
                    status: r.err().unwrap_or($crate::nfs4::NfsStat4::NFS4_OK),
                }
            }
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    crate::roundtrip_tests!(
        nfs_fh4: NfsFh4,
        bitmap4: Bitmap4,
        nfstime4: Nfstime4,
        stateid4: Stateid4,
        change_info4: ChangeInfo4,
        specdata4: Specdata4,
        fsid4: Fsid4,
        fattr4: Fattr4,
        state_owner4: StateOwner4,
        client_owner4: ClientOwner4,
        server_owner4: ServerOwner4,
        nfs_impl_id4: NfsImplId4,
        netaddr4: Netaddr4,
        layout4: Layout4,
        device_addr4: DeviceAddr4,
        layoutupdate4: Layoutupdate4,
        nfsstat4: NfsStat4,
        nfs_opnum4: NfsOpnum4,
    );

    #[test]
    fn filehandle_longer_than_128_bytes_is_refused() {
        let b = crate::xdr::to_bytes(&bytes::Bytes::from(vec![1u8; 129]));
        let e = crate::xdr::from_bytes::<NfsFh4>(b).unwrap_err();
        assert_eq!(
            e.kind,
            crate::xdr::DecodeErrorKind::TooLong { len: 129, max: 128 }
        );
        assert_eq!(e.what, "NfsFh4.0");
    }

    #[test]
    fn bitmap_keeps_trailing_zero_words() {
        let b = Bitmap4(vec![1, 0, 0]);
        assert!(b.contains(0) && !b.contains(33));
        let enc = crate::xdr::to_bytes(&b);
        assert_eq!(enc.len(), 16);
        assert_eq!(crate::xdr::from_bytes::<Bitmap4>(enc).unwrap(), b);
        assert_eq!(
            Bitmap4::from_bits([1, 33, 70]).iter().collect::<Vec<_>>(),
            vec![1, 33, 70]
        );
    }

    #[test]
    fn unknown_status_still_decodes_and_prints() {
        let s = crate::xdr::from_bytes::<NfsStat4>(crate::xdr::to_bytes(&4242u32)).unwrap();
        assert_eq!(format!("{s:?}"), "NfsStat4(4242)");
        assert_eq!(format!("{:?}", NfsStat4::NFS4ERR_DELAY), "NFS4ERR_DELAY");
    }
}

/// `acetype4`.
pub type Acetype4 = u32;
/// `aceflag4`.
pub type Aceflag4 = u32;

/// An access control entry (RFC 8881 section 6.2.1).
#[doc(alias = "nfsace4")]
#[derive(Clone, PartialEq, Eq, Debug, Default, Xdr)]
pub struct Nfsace4 {
    /// ALLOW, DENY, AUDIT or ALARM.
    pub r#type: Acetype4,
    /// Inheritance and other flags.
    pub flag: Aceflag4,
    /// The access bits the entry covers.
    pub access_mask: Acemask4,
    /// The principal: `user@domain`, `group@domain` or a special `OWNER@`-style name.
    pub who: Utf8String,
}

xdr_enum! {
    /// `rpc_gss_svc_t`: the RPCSEC_GSS service (RFC 2203).
    pub struct RpcGssSvc {
        RPC_GSS_SVC_NONE = 1,
        RPC_GSS_SVC_INTEGRITY = 2,
        RPC_GSS_SVC_PRIVACY = 3,
    }
}

/// The RPCSEC_GSS auth flavor number, the one `secinfo4` arm with data.
pub const RPCSEC_GSS: u32 = 6;

/// `rpcsec_gss_info` (RFC 8881 section 18.29).
#[derive(Clone, PartialEq, Eq, Debug, Xdr)]
pub struct RpcsecGssInfo {
    /// The GSS mechanism's object identifier (`sec_oid4`).
    pub oid: Bytes,
    /// Quality of protection.
    pub qop: Qop4,
    /// Service.
    pub service: RpcGssSvc,
}

/// One security flavor of a SECINFO/SECINFO_NO_NAME reply (RFC 8881 section 18.29).
#[doc(alias = "secinfo4")]
#[derive(Clone, PartialEq, Eq, Debug, Xdr)]
pub enum Secinfo4 {
    /// RPCSEC_GSS with its mechanism.
    #[xdr(case = RPCSEC_GSS)]
    RpcsecGss(RpcsecGssInfo),
    /// Any other flavor (AUTH_NONE = 0, AUTH_SYS = 1, ...), no data.
    #[xdr(default)]
    Flavor(u32),
}

crate::nfs_res! {
    /// SECINFO result, also SECINFO_NO_NAME's (RFC 8881 section 18.29).
    #[doc(alias = "SECINFO4res")]
    pub enum SecInfoRes => Vec<Secinfo4>
}

xdr_enum! {
    /// `open_delegation_type4`.
    pub struct OpenDelegationType4 {
        OPEN_DELEGATE_NONE = 0,
        OPEN_DELEGATE_READ = 1,
        OPEN_DELEGATE_WRITE = 2,
        OPEN_DELEGATE_NONE_EXT = 3,
    }
}

xdr_enum! {
    /// `limit_by4`: how a write delegation's space limit is expressed.
    pub struct LimitBy4 {
        NFS_LIMIT_SIZE = 1,
        NFS_LIMIT_BLOCKS = 2,
    }
}

/// `nfs_modified_limit4`.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Xdr)]
pub struct NfsModifiedLimit4 {
    /// Number of blocks.
    pub num_blocks: u32,
    /// Bytes per block.
    pub bytes_per_block: u32,
}

/// `nfs_space_limit4`: how far a write delegation holder may extend the file.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Xdr)]
pub enum NfsSpaceLimit4 {
    /// A size in bytes.
    #[xdr(case = LimitBy4::NFS_LIMIT_SIZE)]
    Size(u64),
    /// A number of blocks.
    #[xdr(case = LimitBy4::NFS_LIMIT_BLOCKS)]
    Blocks(NfsModifiedLimit4),
}

/// `open_read_delegation4` (RFC 8881 section 18.16).
#[derive(Clone, PartialEq, Eq, Debug, Xdr)]
pub struct OpenReadDelegation4 {
    /// The delegation's stateid.
    pub stateid: Stateid4,
    /// Set when the server will recall at once (pre-recalled).
    pub recall: bool,
    /// Who may open without asking the server.
    pub permissions: Nfsace4,
}

/// `open_write_delegation4` (RFC 8881 section 18.16).
#[derive(Clone, PartialEq, Eq, Debug, Xdr)]
pub struct OpenWriteDelegation4 {
    /// The delegation's stateid.
    pub stateid: Stateid4,
    /// Set when the server will recall at once (pre-recalled).
    pub recall: bool,
    /// How far the client may extend the file without flushing.
    pub space_limit: NfsSpaceLimit4,
    /// Who may open without asking the server.
    pub permissions: Nfsace4,
}

xdr_enum! {
    /// `why_no_delegation4`.
    pub struct WhyNoDelegation4 {
        WND4_NOT_WANTED = 0,
        WND4_CONTENTION = 1,
        WND4_RESOURCE = 2,
        WND4_NOT_SUPP_FTYPE = 3,
        WND4_WRITE_DELEG_NOT_SUPP_FTYPE = 4,
        WND4_NOT_SUPP_UPGRADE = 5,
        WND4_NOT_SUPP_DOWNGRADE = 6,
        WND4_CANCELLED = 7,
        WND4_IS_DIR = 8,
    }
}

/// `open_none_delegation4`: why no delegation was granted (RFC 8881 section 18.16).
#[derive(Clone, Copy, PartialEq, Eq, Debug, Xdr)]
pub enum OpenNoneDelegation4 {
    /// Contention; whether the server will push one later.
    #[xdr(case = WhyNoDelegation4::WND4_CONTENTION)]
    Contention {
        /// `ond_server_will_push_deleg`.
        ond_server_will_push_deleg: bool,
    },
    /// Out of resources; whether the server will signal availability.
    #[xdr(case = WhyNoDelegation4::WND4_RESOURCE)]
    Resource {
        /// `ond_server_will_signal_avail`.
        ond_server_will_signal_avail: bool,
    },
    /// Any other reason.
    #[xdr(default)]
    Other(WhyNoDelegation4),
}

/// `open_delegation4`: the delegation granted by OPEN (RFC 8881 section 18.16).
#[derive(Clone, PartialEq, Eq, Debug, Xdr)]
pub enum OpenDelegation4 {
    /// No delegation.
    #[xdr(case = OpenDelegationType4::OPEN_DELEGATE_NONE)]
    None,
    /// A read delegation.
    #[xdr(case = OpenDelegationType4::OPEN_DELEGATE_READ)]
    Read(OpenReadDelegation4),
    /// A write delegation.
    #[xdr(case = OpenDelegationType4::OPEN_DELEGATE_WRITE)]
    Write(OpenWriteDelegation4),
    /// No delegation, with the reason (NFSv4.1).
    #[xdr(case = OpenDelegationType4::OPEN_DELEGATE_NONE_EXT)]
    NoneExt(OpenNoneDelegation4),
}

#[cfg(test)]
mod more_tests {
    use super::*;

    crate::roundtrip_tests!(
        nfsace4: Nfsace4,
        secinfo4: Secinfo4,
        secinfo_res: SecInfoRes,
        open_delegation4: OpenDelegation4,
        open_none_delegation4: OpenNoneDelegation4,
        nfs_space_limit4: NfsSpaceLimit4,
        nfs_modified_limit4: NfsModifiedLimit4,
        limit_by4: LimitBy4,
        open_delegation_type4: OpenDelegationType4,
        open_read_delegation4: OpenReadDelegation4,
        open_write_delegation4: OpenWriteDelegation4,
        why_no_delegation4: WhyNoDelegation4,
        rpc_gss_svc: RpcGssSvc,
        rpcsec_gss_info: RpcsecGssInfo,
        layout_content4: LayoutContent4,
        layoutiomode4: Layoutiomode4,
        layouttype4: Layouttype4,
        notify_deviceid_type4: NotifyDeviceidType4,
    );
}

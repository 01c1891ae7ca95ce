//! A realistic NFSv4.1/4.2 conversation built with the crate's own types: every forward
//! operation of the COMPOUND op table in a call and its reply, every callback operation in a
//! CB_COMPOUND the server sends back over the same connection, NULL and CB_NULL, and a couple
//! of RPC-level error replies.
//!
//! The values are meant to be semantically valid (a dissector that understands the protocol
//! should find nothing odd): attributes are encoded with [`FileAttrs::to_fattr`], the LAYOUTGET
//! body is a real [`Nfsv41FileLayout4`], the GETDEVICEINFO address a real
//! [`Nfsv41FileLayoutDsAddr4`] with RFC 5665 universal addresses, and a second LAYOUTGET,
//! GETDEVICEINFO, LAYOUTRETURN and LAYOUTSTATS carry the flex files bodies (RFC 8435: two
//! mirrors, a tightly coupled device, an error and statistics report), filehandles look like knfsd's,
//! and the same stateids, session id and client id are used throughout.
//!
//! Include with `#[path = "support/samples.rs"] mod samples;` (from `tests/`).
#![allow(dead_code)]

use std::net::SocketAddr;

use bytes::Bytes;
use nfs_proto::nfs4::attr::*;
use nfs_proto::nfs4::layout_files::{
    netaddr_from_socket_addr, socket_addr_from_netaddr, MultipathList4, Nfsv41FileLayout4,
    Nfsv41FileLayoutDsAddr4, Nfsv41FileLayouthint4, NFL4_UFLG_COMMIT_THRU_MDS,
    NFLH4_CARE_STRIPE_UNIT_SIZE,
};
use nfs_proto::nfs4::layout_flex::{
    FfDataServer4, FfDeviceAddr4, FfDeviceVersions4, FfIoLatency4, FfIoerr4, FfIostats4, FfLayout4,
    FfLayoutreturn4, FfLayoutupdate4, FfMirror4, FF_FLAGS_NO_IO_THRU_MDS,
};
use nfs_proto::nfs4::*;
use nfs_proto::rpc::{AuthStat, AuthSysParms, Credential, OpaqueAuth, RpcMsg};
use nfs_proto::xdr::{to_bytes, Encoder, Utf8String};

/// The NFS program.
pub(crate) const NFS_PROGRAM: u32 = 100_003;
/// NFS version 4.
pub(crate) const NFS_V4: u32 = 4;
/// The callback program number the Linux client registers (`NFS4_CALLBACK`).
pub(crate) const NFS_CB_PROGRAM: u32 = 0x4000_0000;
/// The callback program version.
pub(crate) const NFS_CB_VERSION: u32 = 1;
/// Procedure 0 (NULL / CB_NULL).
pub(crate) const PROC_NULL: u32 = 0;
/// Procedure 1 (COMPOUND / CB_COMPOUND).
pub(crate) const PROC_COMPOUND: u32 = 1;

/// What follows the RPC header of a sample.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Body {
    /// No arguments or results (NULL, CB_NULL, RPC error replies).
    Void,
    /// A COMPOUND call.
    Compound(Compound4Args),
    /// A COMPOUND reply.
    CompoundRes(Compound4Res),
    /// A CB_COMPOUND call.
    CbCompound(CbCompoundArgs),
    /// A CB_COMPOUND reply.
    CbCompoundRes(CbCompoundRes),
}

/// One RPC message of the conversation.
#[derive(Clone, Debug)]
pub(crate) struct Sample {
    /// Sent by the client (to port 2049); false for server->client messages.
    pub from_client: bool,
    /// The RPC header.
    pub header: RpcMsg,
    /// Arguments or results.
    pub body: Body,
    /// What the exchange shows, for failure messages.
    pub what: String,
}

impl Sample {
    /// True for a call.
    pub(crate) fn is_call(&self) -> bool {
        self.header.as_call().is_some()
    }

    /// The forward-channel operation numbers of a COMPOUND call or reply.
    pub(crate) fn ops(&self) -> Vec<u32> {
        match &self.body {
            Body::Compound(a) => a.argarray.iter().map(|o| o.opnum().0).collect(),
            Body::CompoundRes(r) => r.resarray.iter().map(|o| o.opnum().0).collect(),
            _ => Vec::new(),
        }
    }

    /// The callback operation numbers of a CB_COMPOUND call or reply.
    pub(crate) fn cb_ops(&self) -> Vec<u32> {
        match &self.body {
            Body::CbCompound(a) => a.argarray.iter().map(|o| o.opnum().0).collect(),
            Body::CbCompoundRes(r) => r.resarray.iter().map(|o| o.opnum().0).collect(),
            _ => Vec::new(),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Realistic constants
// ---------------------------------------------------------------------------------------------

const SESSION: Sessionid4 = [
    0x65, 0x53, 0xf1, 0x00, 0x2a, 0x1c, 0x7e, 0x91, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
];
const CLIENTID: Clientid4 = 0x6553_f100_2a1c_7e91;
const CLIENT_VERIFIER: Verifier4 = [0x65, 0x53, 0xf0, 0xaa, 0x11, 0x22, 0x33, 0x44];
const WRITE_VERIFIER: Verifier4 = [0x17, 0x9a, 0x5c, 0x02, 0xde, 0xad, 0x0b, 0x0e];
const COOKIE_VERIFIER: Verifier4 = [0, 0, 0, 0, 0x65, 0x53, 0xf1, 0x20];
const DEVICE_A: Deviceid4 = [
    0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x65, 0x53, 0xf1, 0x00, 0x00, 0x00, 0x00, 0x01,
];
const DEVICE_B: Deviceid4 = [
    0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x65, 0x53, 0xf1, 0x00, 0x00, 0x00, 0x00, 0x02,
];
/// The file system's UUID as knfsd puts it in filehandles (fsid type 6).
const FS_UUID: [u8; 16] = [
    0x3b, 0x8e, 0x4f, 0x1c, 0x9a, 0x52, 0x4d, 0x0e, 0xb1, 0x77, 0x20, 0x6c, 0x55, 0xe9, 0x01, 0xd4,
];
const ROOT_INO: u64 = 2;
const DIR_INO: u64 = 131_073;
const FILE_INO: u64 = 131_090;
const FILE2_INO: u64 = 131_091;
const LINK_INO: u64 = 131_092;
const SUBDIR_INO: u64 = 131_093;
const NOW: i64 = 1_700_000_000;

fn t(offset: i64, nseconds: u32) -> Nfstime4 {
    Nfstime4 {
        seconds: NOW + offset,
        nseconds,
    }
}

/// A knfsd-style filehandle: version 1, fsid type 6 (UUID), fileid type 1 (inode + generation)
/// or 0 for the export root (no fileid part).
fn fh(ino: u64) -> NfsFh4 {
    let mut b = vec![1u8, 0, 6, if ino == ROOT_INO { 0 } else { 1 }];
    b.extend_from_slice(&FS_UUID);
    if ino != ROOT_INO {
        b.extend_from_slice(&(ino as u32).to_le_bytes());
        b.extend_from_slice(&0x5a3c_0001u32.to_le_bytes());
    }
    NfsFh4(Bytes::from(b))
}

/// The filehandle a data server uses for a file.
fn ds_fh(ino: u64) -> NfsFh4 {
    let mut b = vec![1u8, 0, 6, 0x81];
    b.extend_from_slice(&FS_UUID);
    b.extend_from_slice(&(ino as u32).to_le_bytes());
    b.extend_from_slice(&0x5a3c_0001u32.to_le_bytes());
    b.extend_from_slice(&[0xd5, 0x00, 0x00, 0x00]);
    NfsFh4(Bytes::from(b))
}

/// A stateid as knfsd makes them: boot time, client counter, state counter.
fn sid(seqid: u32, n: u32) -> Stateid4 {
    let mut other = [0u8; 12];
    other[..4].copy_from_slice(&0x6553_f100u32.to_be_bytes());
    other[4..8].copy_from_slice(&0x2a1c_7e91u32.to_be_bytes());
    other[8..].copy_from_slice(&n.to_be_bytes());
    Stateid4 { seqid, other }
}

fn open_sid() -> Stateid4 {
    sid(1, 3)
}
fn lock_sid() -> Stateid4 {
    sid(1, 4)
}
fn deleg_sid() -> Stateid4 {
    sid(1, 5)
}
fn layout_sid() -> Stateid4 {
    sid(1, 6)
}
fn copy_sid() -> Stateid4 {
    sid(1, 7)
}
fn dir_deleg_sid() -> Stateid4 {
    sid(1, 8)
}

fn name(s: &str) -> Utf8String {
    Utf8String::from(s)
}

fn open_owner() -> OpenOwner4 {
    StateOwner4 {
        clientid: CLIENTID,
        owner: Bytes::from_static(b"open id:\x00\x00\x00\x2a\x00\x00\x00\x00\x00\x01\x86\xa5"),
    }
}

fn lock_owner() -> LockOwner4 {
    StateOwner4 {
        clientid: CLIENTID,
        owner: Bytes::from_static(b"lock id:\x00\x00\x00\x2a\x00\x00\x00\x00\x00\x00\x00\x07"),
    }
}

fn other_lock_owner() -> LockOwner4 {
    StateOwner4 {
        clientid: CLIENTID + 1,
        owner: Bytes::from_static(b"lock id:\x00\x00\x00\x31\x00\x00\x00\x00\x00\x00\x00\x02"),
    }
}

fn cinfo(before: u64) -> ChangeInfo4 {
    ChangeInfo4 {
        atomic: true,
        before,
        after: before + 1,
    }
}

fn data(len: usize, seed: u8) -> Bytes {
    Bytes::from(
        (0..len)
            .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
            .collect::<Vec<u8>>(),
    )
}

fn ace(who: &str, mask: u32) -> Nfsace4 {
    Nfsace4 {
        r#type: ACE4_ACCESS_ALLOWED_ACE_TYPE,
        flag: 0,
        access_mask: mask,
        who: name(who),
    }
}

fn client_auth_sys(uid: u32) -> AuthSysParms {
    AuthSysParms {
        stamp: 0x6553_f0a1,
        machinename: name("client.example.net"),
        uid,
        gid: uid,
        gids: if uid == 0 { vec![0] } else { vec![uid, 4, 27] },
    }
}

fn ds_addr(s: &str) -> Netaddr4 {
    let addr: SocketAddr = s.parse().expect("socket address");
    let na = netaddr_from_socket_addr(addr);
    assert_eq!(socket_addr_from_netaddr(&na), Ok(addr), "uaddr round trip");
    na
}

// ---------------------------------------------------------------------------------------------
// Attributes
// ---------------------------------------------------------------------------------------------

/// Encodes `attrs` for a request of `bits`, checking that it decodes back.
fn fattr(attrs: &FileAttrs, bits: &[u32]) -> Fattr4 {
    let f = attrs.to_fattr(&Bitmap4::from_bits(bits.iter().copied()));
    let back = FileAttrs::from_fattr(&f).expect("our fattr4 decodes");
    let mut expected = attrs.clone();
    for b in ALL_KNOWN {
        if !bits.contains(b) {
            expected.clear(*b);
        }
    }
    assert_eq!(back, expected, "FileAttrs round trip");
    f
}

/// The attributes Linux asks for on every GETATTR after an operation that changes a file.
const POST_OP_ATTRS: &[u32] = &[
    FATTR4_TYPE,
    FATTR4_CHANGE,
    FATTR4_SIZE,
    FATTR4_FSID,
    FATTR4_FILEID,
    FATTR4_MODE,
    FATTR4_NUMLINKS,
    FATTR4_OWNER,
    FATTR4_OWNER_GROUP,
    FATTR4_RAWDEV,
    FATTR4_SPACE_USED,
    FATTR4_TIME_ACCESS,
    FATTR4_TIME_METADATA,
    FATTR4_TIME_MODIFY,
    FATTR4_MOUNTED_ON_FILEID,
];

/// The attributes the Linux client asks for about the file system when it mounts.
const FSINFO_ATTRS: &[u32] = &[
    FATTR4_SUPPORTED_ATTRS,
    FATTR4_TYPE,
    FATTR4_FH_EXPIRE_TYPE,
    FATTR4_CHANGE,
    FATTR4_SIZE,
    FATTR4_LINK_SUPPORT,
    FATTR4_SYMLINK_SUPPORT,
    FATTR4_NAMED_ATTR,
    FATTR4_FSID,
    FATTR4_UNIQUE_HANDLES,
    FATTR4_LEASE_TIME,
    FATTR4_ACLSUPPORT,
    FATTR4_MAXFILESIZE,
    FATTR4_MAXREAD,
    FATTR4_MAXWRITE,
    FATTR4_TIME_DELTA,
    FATTR4_FS_LAYOUT_TYPES,
    FATTR4_LAYOUT_BLKSIZE,
    FATTR4_SUPPATTR_EXCLCREAT,
    FATTR4_CLONE_BLKSIZE,
    FATTR4_CHANGE_ATTR_TYPE,
    FATTR4_XATTR_SUPPORT,
];

/// Attributes whose values Wireshark 4.0 cannot dissect: it reports "Unknown dissector for
/// bitmap attribute" (a warning) and then leaves every later attribute of the list
/// undissected. Its `fattr4` table has no dissector for these (and no entry at all for 57,
/// `dirent_notif_delay`). The samples ask for them in a GETATTR of their own, so that every
/// other attribute is checked by Wireshark; `mode_set_masked` (74, also without a dissector)
/// is the last attribute of its SETATTR.
pub(crate) const NO_WIRESHARK_VALUE_DISSECTOR: &[u32] = &[
    FATTR4_DIRENT_NOTIF_DELAY,
    FATTR4_CHANGE_POLICY,
    FATTR4_FS_STATUS,
    FATTR4_LAYOUT_HINT,
    FATTR4_LAYOUT_TYPES,
    FATTR4_LAYOUT_ALIGNMENT,
    FATTR4_FS_LOCATIONS_INFO,
    FATTR4_RETENTION_GET,
    FATTR4_RETENTEVT_GET,
    FATTR4_RETENTION_HOLD,
];

/// Every attribute the sample server supports: all of them.
fn supported_attrs() -> Bitmap4 {
    all_known_mask()
}

/// Every readable attribute of a regular file, as a server that supports them all reports it.
fn file_attrs(ino: u64, size: u64) -> FileAttrs {
    FileAttrs {
        supported_attrs: Some(supported_attrs()),
        r#type: Some(NfsFtype4::NF4REG),
        fh_expire_type: Some(FH4_VOL_MIGRATION | FH4_VOL_RENAME),
        change: Some(0x17a0_0000_0000_0000 | ino),
        size: Some(size),
        link_support: Some(true),
        symlink_support: Some(true),
        named_attr: Some(false),
        fsid: Some(Fsid4 {
            major: 0x3b8e_4f1c_9a52_4d0e,
            minor: 0xb177_206c_55e9_01d4,
        }),
        unique_handles: Some(true),
        lease_time: Some(90),
        rdattr_error: Some(NfsStat4::NFS4_OK),
        acl: Some(vec![
            ace("OWNER@", ACE4_GENERIC_READ | ACE4_GENERIC_WRITE),
            ace("GROUP@", ACE4_GENERIC_READ),
            ace("EVERYONE@", ACE4_READ_ATTRIBUTES | ACE4_READ_ACL),
        ]),
        aclsupport: Some(ACL4_SUPPORT_ALLOW_ACL | ACL4_SUPPORT_DENY_ACL),
        archive: Some(false),
        cansettime: Some(true),
        case_insensitive: Some(false),
        case_preserving: Some(true),
        chown_restricted: Some(true),
        filehandle: Some(fh(ino)),
        fileid: Some(ino),
        files_avail: Some(6_400_000),
        files_free: Some(6_400_000),
        files_total: Some(6_553_600),
        fs_locations: Some(FsLocations4 {
            fs_root: vec![name("export")],
            locations: vec![FsLocation4 {
                server: vec![name("server.example.net"), name("192.0.2.1")],
                rootpath: vec![name("export")],
            }],
        }),
        hidden: Some(false),
        homogeneous: Some(true),
        maxfilesize: Some(0x7fff_ffff_ffff_ffff),
        maxlink: Some(255),
        maxname: Some(255),
        maxread: Some(1_048_576),
        maxwrite: Some(1_048_576),
        mimetype: Some(name("application/octet-stream")),
        mode: Some(0o644),
        no_trunc: Some(true),
        numlinks: Some(1),
        owner: Some(name("alice@example.net")),
        owner_group: Some(name("staff@example.net")),
        quota_avail_hard: Some(1 << 40),
        quota_avail_soft: Some(1 << 39),
        quota_used: Some(size),
        rawdev: Some(Specdata4 {
            specdata1: 0,
            specdata2: 0,
        }),
        space_avail: Some(80 << 30),
        space_free: Some(82 << 30),
        space_total: Some(100 << 30),
        space_used: Some(size.next_multiple_of(4096)),
        system: Some(false),
        time_access: Some(t(-60, 1_000)),
        time_backup: Some(t(-86_400, 0)),
        time_create: Some(t(-3_600, 500_000_000)),
        time_delta: Some(Nfstime4 {
            seconds: 0,
            nseconds: 1,
        }),
        time_metadata: Some(t(-30, 250_000_000)),
        time_modify: Some(t(-30, 250_000_000)),
        mounted_on_fileid: Some(ino),
        dir_notif_delay: Some(Nfstime4 {
            seconds: 0,
            nseconds: 0,
        }),
        dirent_notif_delay: Some(Nfstime4 {
            seconds: 0,
            nseconds: 500_000_000,
        }),
        dacl: Some(Nfsacl41 {
            na41_flag: ACL4_AUTO_INHERIT,
            na41_aces: vec![ace("OWNER@", ACE4_GENERIC_READ | ACE4_GENERIC_WRITE)],
        }),
        sacl: Some(Nfsacl41 {
            na41_flag: 0,
            na41_aces: vec![Nfsace4 {
                r#type: ACE4_SYSTEM_AUDIT_ACE_TYPE,
                flag: ACE4_FAILED_ACCESS_ACE_FLAG,
                access_mask: ACE4_WRITE_DATA,
                who: name("EVERYONE@"),
            }],
        }),
        change_policy: Some(ChangePolicy4 {
            cp_major: 1,
            cp_minor: 0,
        }),
        fs_status: Some(Fs4Status {
            fss_absent: false,
            fss_type: Fs4StatusType::STATUS4_FIXED,
            fss_source: name("server.example.net:/export"),
            fss_current: name("server.example.net:/export"),
            fss_age: 0,
            fss_version: t(-86_400, 0),
        }),
        fs_layout_types: Some(vec![Layouttype4::LAYOUT4_NFSV4_1_FILES]),
        layout_hint: Some(Layouthint4 {
            loh_type: Layouttype4::LAYOUT4_NFSV4_1_FILES,
            loh_body: to_bytes(&layout_files_hint()),
        }),
        layout_types: Some(vec![Layouttype4::LAYOUT4_NFSV4_1_FILES]),
        layout_blksize: Some(1_048_576),
        layout_alignment: Some(4096),
        fs_locations_info: Some(FsLocationsInfo4 {
            fli_flags: 0,
            fli_valid_for: 3600,
            fli_fs_root: vec![name("export")],
            fli_items: vec![FsLocationsItem4 {
                fli_entries: vec![FsLocationsServer4 {
                    fls_currency: 0,
                    fls_info: Bytes::from_static(&[FSLI4GF_WRITABLE | FSLI4GF_CUR_REQ, 0]),
                    fls_server: name("server.example.net"),
                }],
                fli_rootpath: vec![name("export")],
            }],
        }),
        mdsthreshold: Some(Mdsthreshold4 {
            mth_hints: vec![ThresholdItem4 {
                thi_layout_type: Layouttype4::LAYOUT4_NFSV4_1_FILES,
                thi_hintset: Bitmap4::from_bits([TH4_READ_SIZE, TH4_WRITE_SIZE]),
                thi_hintlist: {
                    // threshold4_read_size, threshold4_write_size (length4 each).
                    let mut e = Encoder::new();
                    e.put_u64(65_536);
                    e.put_u64(262_144);
                    e.into_bytes()
                },
            }],
        }),
        retention_get: Some(RetentionGet4 {
            rg_duration: 0,
            rg_begin_time: vec![],
        }),
        retentevt_get: Some(RetentionGet4 {
            rg_duration: RET4_DURATION_INFINITE,
            rg_begin_time: vec![t(-86_400, 0)],
        }),
        retention_hold: Some(0),
        suppattr_exclcreat: Some(Bitmap4::from_bits([
            FATTR4_SIZE,
            FATTR4_MODE,
            FATTR4_OWNER,
            FATTR4_OWNER_GROUP,
            FATTR4_ACL,
            FATTR4_SEC_LABEL,
        ])),
        fs_charset_cap: Some(FSCHARSET_CAP4_ALLOWS_ONLY_UTF8),
        clone_blksize: Some(4096),
        space_freed: Some(size.next_multiple_of(4096)),
        change_attr_type: Some(ChangeAttrType4::NFS4_CHANGE_TYPE_IS_VERSION_COUNTER_NOPNFS),
        sec_label: Some(SecLabel4 {
            slai_lfs: LabelformatSpec4 {
                lfs_lfs: 0,
                lfs_pi: 0,
            },
            slai_data: Bytes::from_static(b"system_u:object_r:nfs_t:s0"),
        }),
        xattr_support: Some(true),
        ..FileAttrs::default()
    }
}

fn dir_attrs(ino: u64) -> FileAttrs {
    FileAttrs {
        r#type: Some(NfsFtype4::NF4DIR),
        size: Some(4096),
        mode: Some(0o755),
        numlinks: Some(if ino == ROOT_INO { 5 } else { 2 }),
        fh_expire_type: Some(FH4_PERSISTENT),
        ..file_attrs(ino, 4096)
    }
}

fn layout_files_hint() -> Nfsv41FileLayouthint4 {
    Nfsv41FileLayouthint4 {
        nflh_care: NFLH4_CARE_STRIPE_UNIT_SIZE,
        nflh_util: 1_048_576,
        nflh_stripe_count: 2,
    }
}

// ---------------------------------------------------------------------------------------------
// pNFS bodies
// ---------------------------------------------------------------------------------------------

fn file_layout() -> LayoutContent4 {
    let l = Nfsv41FileLayout4 {
        nfl_deviceid: DEVICE_A,
        nfl_util: 1_048_576 | NFL4_UFLG_COMMIT_THRU_MDS,
        nfl_first_stripe_index: 0,
        nfl_pattern_offset: 0,
        nfl_fh_list: vec![ds_fh(FILE_INO)],
    };
    let c = l.to_content();
    assert_eq!(Nfsv41FileLayout4::from_content(&c), Ok(l));
    c
}

fn device_addr() -> DeviceAddr4 {
    let a = Nfsv41FileLayoutDsAddr4 {
        nflda_stripe_indices: vec![0, 1],
        nflda_multipath_ds_list: vec![
            MultipathList4(vec![
                ds_addr("192.0.2.11:2049"),
                ds_addr("[2001:db8::11]:2049"),
            ]),
            MultipathList4(vec![ds_addr("192.0.2.12:20049")]),
        ],
    };
    let d = a.to_device_addr();
    assert_eq!(Nfsv41FileLayoutDsAddr4::from_device_addr(&d), Ok(a));
    d
}

fn flex_data_server(device: Deviceid4, ino: u64) -> FfDataServer4 {
    FfDataServer4 {
        ffds_deviceid: device,
        ffds_efficiency: 2,
        ffds_stateid: open_sid(),
        ffds_fh_vers: vec![ds_fh(ino)],
        ffds_user: "0".into(),
        ffds_group: "0".into(),
    }
}

/// Two mirrors of one data server each (RFC 8435 section 5.1, no striping).
fn flex_layout() -> LayoutContent4 {
    let l = FfLayout4 {
        ffl_stripe_unit: 0,
        ffl_mirrors: vec![
            FfMirror4 {
                ffm_data_servers: vec![flex_data_server(DEVICE_A, FILE_INO)],
            },
            FfMirror4 {
                ffm_data_servers: vec![flex_data_server(DEVICE_B, FILE_INO)],
            },
        ],
        ffl_flags: FF_FLAGS_NO_IO_THRU_MDS,
        ffl_stats_collect_hint: 60,
    };
    let c = l.to_content();
    assert_eq!(FfLayout4::from_content(&c), Ok(l));
    c
}

fn flex_device_addr() -> DeviceAddr4 {
    let a = FfDeviceAddr4 {
        ffda_netaddrs: MultipathList4(vec![ds_addr("192.0.2.11:2049")]),
        ffda_versions: vec![FfDeviceVersions4 {
            ffdv_version: 4,
            ffdv_minorversion: 1,
            ffdv_rsize: 1_048_576,
            ffdv_wsize: 1_048_576,
            ffdv_tightly_coupled: true,
        }],
    };
    let d = a.to_device_addr();
    assert_eq!(FfDeviceAddr4::from_device_addr(&d), Ok(a));
    d
}

fn flex_io_latency(ops: u64) -> FfIoLatency4 {
    FfIoLatency4 {
        ffil_ops_requested: ops,
        ffil_bytes_requested: ops << 20,
        ffil_ops_completed: ops,
        ffil_bytes_completed: ops << 20,
        ffil_bytes_not_delivered: 0,
        ffil_total_busy_time: t(2, 500_000_000),
        ffil_aggregate_completion_time: t(3, 0),
    }
}

fn flex_layoutupdate() -> FfLayoutupdate4 {
    FfLayoutupdate4 {
        ffl_addr: ds_addr("192.0.2.11:2049"),
        ffl_fhandle: ds_fh(FILE_INO),
        ffl_read: flex_io_latency(120),
        ffl_write: flex_io_latency(64),
        ffl_duration: t(60, 0),
        ffl_local: false,
    }
}

/// The LAYOUTRETURN report of a client that lost a data server mid-write.
fn flex_layoutreturn() -> Bytes {
    let r = FfLayoutreturn4 {
        fflr_ioerr_report: vec![FfIoerr4 {
            ffie_offset: 0,
            ffie_length: 1 << 20,
            ffie_stateid: layout_sid(),
            ffie_errors: vec![DeviceError4 {
                de_deviceid: DEVICE_B,
                de_status: NfsStat4::NFS4ERR_NXIO,
                de_opnum: NfsOpnum4::OP_WRITE,
            }],
        }],
        fflr_iostats_report: vec![FfIostats4 {
            ffis_offset: 0,
            ffis_length: u64::MAX,
            ffis_stateid: layout_sid(),
            ffis_read: IoInfo4 {
                ii_count: 120,
                ii_bytes: 120 << 20,
            },
            ffis_write: IoInfo4 {
                ii_count: 64,
                ii_bytes: 64 << 20,
            },
            ffis_deviceid: DEVICE_A,
            ffis_layoutupdate: flex_layoutupdate(),
        }],
    };
    let b = to_bytes(&r);
    assert_eq!(
        FfLayoutreturn4::from_body(Layouttype4::LAYOUT4_FLEX_FILES, &b),
        Ok(r)
    );
    b
}

fn files_layoutupdate() -> Layoutupdate4 {
    // The file layout type has no layoutupdate body (RFC 8881 section 13.12).
    Layoutupdate4 {
        lou_type: Layouttype4::LAYOUT4_NFSV4_1_FILES,
        lou_body: Bytes::new(),
    }
}

// ---------------------------------------------------------------------------------------------
// Builder
// ---------------------------------------------------------------------------------------------

type Pair = (NfsArgop4, NfsResop4);
type CbPair = (NfsCbArgop4, NfsCbResop4);

/// Builds the conversation message by message.
struct Conversation {
    samples: Vec<Sample>,
    xid: u32,
    cb_xid: u32,
    sequenceid: Sequenceid4,
    cb_sequenceid: Sequenceid4,
}

impl Conversation {
    fn push(&mut self, from_client: bool, header: RpcMsg, body: Body, what: &str) {
        self.samples.push(Sample {
            from_client,
            header,
            body,
            what: what.to_string(),
        });
    }

    fn next_xid(&mut self) -> u32 {
        self.xid += 1;
        self.xid
    }

    fn next_cb_xid(&mut self) -> u32 {
        self.cb_xid += 1;
        self.cb_xid
    }

    fn client_cred(uid: u32) -> OpaqueAuth {
        Credential::Sys(client_auth_sys(uid)).to_opaque()
    }

    fn server_cred() -> OpaqueAuth {
        Credential::Sys(AuthSysParms {
            stamp: 0x6553_f100,
            machinename: name("server.example.net"),
            uid: 0,
            gid: 0,
            gids: vec![],
        })
        .to_opaque()
    }

    fn null(&mut self) {
        let xid = self.next_xid();
        let call = RpcMsg::call(
            xid,
            NFS_PROGRAM,
            NFS_V4,
            PROC_NULL,
            OpaqueAuth::none(),
            OpaqueAuth::none(),
        );
        self.push(true, call, Body::Void, "NULL");
        self.push(
            false,
            RpcMsg::reply_success(xid, OpaqueAuth::none()),
            Body::Void,
            "NULL reply",
        );
    }

    /// A COMPOUND and its reply. The reply holds every result; each result but the last must
    /// be NFS4_OK (a server stops at the first failure).
    fn compound(&mut self, minorversion: u32, uid: u32, what: &str, ops: Vec<Pair>) {
        let (args, res): (Vec<NfsArgop4>, Vec<NfsResop4>) = ops.into_iter().unzip();
        for (i, r) in res.iter().enumerate() {
            assert_eq!(args[i].opnum(), r.opnum(), "{what}: op {i}");
            if i + 1 < res.len() {
                assert!(r.status().is_ok(), "{what}: op {i} fails but is not last");
            }
        }
        let status = res.last().map_or(NfsStat4::NFS4_OK, |r| r.status());
        let xid = self.next_xid();
        let call = RpcMsg::call(
            xid,
            NFS_PROGRAM,
            NFS_V4,
            PROC_COMPOUND,
            Self::client_cred(uid),
            OpaqueAuth::none(),
        );
        let body = Compound4Args {
            tag: Utf8String::default(),
            minorversion,
            argarray: args,
        };
        self.push(true, call, Body::Compound(body), what);
        let reply = Compound4Res {
            status,
            tag: Utf8String::default(),
            resarray: res,
        };
        self.push(
            false,
            RpcMsg::reply_success(xid, OpaqueAuth::none()),
            Body::CompoundRes(reply),
            &format!("{what} reply"),
        );
    }

    fn sequence(&mut self) -> Pair {
        self.sequenceid += 1;
        (
            NfsArgop4::Sequence(SequenceArgs {
                sa_sessionid: SESSION,
                sa_sequenceid: self.sequenceid,
                sa_slotid: 0,
                sa_highest_slotid: 0,
                sa_cachethis: false,
            }),
            NfsResop4::Sequence(SequenceRes::Ok(SequenceResOk {
                sr_sessionid: SESSION,
                sr_sequenceid: self.sequenceid,
                sr_slotid: 0,
                sr_highest_slotid: 63,
                sr_target_highest_slotid: 63,
                sr_status_flags: 0,
            })),
        )
    }

    /// SEQUENCE followed by `ops`, minor version `minor`, as user 1000.
    fn seq(&mut self, minor: u32, what: &str, ops: Vec<Pair>) {
        let mut all = vec![self.sequence()];
        all.extend(ops);
        self.compound(minor, 1000, what, all);
    }

    fn cb_null(&mut self) {
        let xid = self.next_cb_xid();
        let call = RpcMsg::call(
            xid,
            NFS_CB_PROGRAM,
            NFS_CB_VERSION,
            PROC_NULL,
            OpaqueAuth::none(),
            OpaqueAuth::none(),
        );
        self.push(false, call, Body::Void, "CB_NULL");
        self.push(
            true,
            RpcMsg::reply_success(xid, OpaqueAuth::none()),
            Body::Void,
            "CB_NULL reply",
        );
    }

    /// A CB_COMPOUND (server to client) starting with CB_SEQUENCE, and the client's reply.
    fn cb(&mut self, minorversion: u32, what: &str, ops: Vec<CbPair>) {
        self.cb_sequenceid += 1;
        let referring = if self.cb_sequenceid == 1 {
            // The first recall races with the client's latest call: refer to it.
            vec![ReferringCallList4 {
                rcl_sessionid: SESSION,
                rcl_referring_calls: vec![ReferringCall4 {
                    rc_sequenceid: self.sequenceid,
                    rc_slotid: 0,
                }],
            }]
        } else {
            vec![]
        };
        let mut all: Vec<CbPair> = vec![(
            NfsCbArgop4::Sequence(CbSequenceArgs {
                csa_sessionid: SESSION,
                csa_sequenceid: self.cb_sequenceid,
                csa_slotid: 0,
                csa_highest_slotid: 0,
                csa_cachethis: false,
                csa_referring_call_lists: referring,
            }),
            NfsCbResop4::Sequence(CbSequenceRes::Ok(CbSequenceResOk {
                csr_sessionid: SESSION,
                csr_sequenceid: self.cb_sequenceid,
                csr_slotid: 0,
                csr_highest_slotid: 0,
                csr_target_highest_slotid: 0,
            })),
        )];
        all.extend(ops);
        let (args, res): (Vec<NfsCbArgop4>, Vec<NfsCbResop4>) = all.into_iter().unzip();
        for (a, r) in args.iter().zip(&res) {
            assert_eq!(a.opnum(), r.opnum(), "{what}");
        }
        let status = res.last().map_or(NfsStat4::NFS4_OK, |r| r.status());
        let xid = self.next_cb_xid();
        let call = RpcMsg::call(
            xid,
            NFS_CB_PROGRAM,
            NFS_CB_VERSION,
            PROC_COMPOUND,
            Self::server_cred(),
            OpaqueAuth::none(),
        );
        self.push(
            false,
            call,
            Body::CbCompound(CbCompoundArgs {
                tag: Utf8String::default(),
                minorversion,
                callback_ident: 0,
                argarray: args,
            }),
            what,
        );
        self.push(
            true,
            RpcMsg::reply_success(xid, OpaqueAuth::none()),
            Body::CbCompoundRes(CbCompoundRes {
                status,
                tag: Utf8String::default(),
                resarray: res,
            }),
            &format!("{what} reply"),
        );
    }
}

fn putfh(ino: u64) -> Pair {
    (
        NfsArgop4::PutFh(PutFhArgs { object: fh(ino) }),
        NfsResop4::PutFh(PutFhRes {
            status: NfsStat4::NFS4_OK,
        }),
    )
}

fn getfh(ino: u64) -> Pair {
    (
        NfsArgop4::GetFh,
        NfsResop4::GetFh(GetFhRes::Ok(GetFhResOk { object: fh(ino) })),
    )
}

fn getattr(attrs: &FileAttrs, bits: &[u32]) -> Pair {
    (
        NfsArgop4::GetAttr(GetAttrArgs {
            attr_request: Bitmap4::from_bits(bits.iter().copied()),
        }),
        NfsResop4::GetAttr(GetAttrRes::Ok(GetAttrResOk {
            obj_attributes: fattr(attrs, bits),
        })),
    )
}

fn savefh() -> Pair {
    (
        NfsArgop4::SaveFh,
        NfsResop4::SaveFh(SaveFhRes {
            status: NfsStat4::NFS4_OK,
        }),
    )
}

fn ok_status() -> NfsStat4 {
    NfsStat4::NFS4_OK
}

// ---------------------------------------------------------------------------------------------
// The conversation
// ---------------------------------------------------------------------------------------------

/// The whole conversation, in the order it goes on the wire.
pub(crate) fn conversation() -> Vec<Sample> {
    let mut c = Conversation {
        samples: Vec::new(),
        xid: 0x7a3c_1000,
        cb_xid: 0x1b5e_2000,
        sequenceid: 0,
        cb_sequenceid: 0,
    };
    c.null();
    rpc_errors_and_v40(&mut c);
    session_setup(&mut c);
    namespace_ops(&mut c);
    io_and_state_ops(&mut c);
    pnfs_ops(&mut c);
    callbacks(&mut c);
    v42_ops(&mut c);
    xattr_ops(&mut c);
    teardown(&mut c);
    c.samples
}

/// Version probing the server refuses, a call refused for its credential, and the NFSv4.0
/// operations (minor version 0, no SEQUENCE) that NFSv4.1 makes mandatory-not-to-implement.
fn rpc_errors_and_v40(c: &mut Conversation) {
    // NFSv3 NULL to a v4-only server: PROG_MISMATCH (4..4).
    let xid = c.next_xid();
    let call = RpcMsg::call(
        xid,
        NFS_PROGRAM,
        3,
        PROC_NULL,
        OpaqueAuth::none(),
        OpaqueAuth::none(),
    );
    c.push(true, call, Body::Void, "NFSv3 NULL");
    c.push(
        false,
        RpcMsg::reply_prog_mismatch(xid, 4, 4),
        Body::Void,
        "PROG_MISMATCH",
    );

    // A COMPOUND with AUTH_SYS to an export that requires Kerberos: AUTH_ERROR / AUTH_TOOWEAK.
    let xid = c.next_xid();
    let call = RpcMsg::call(
        xid,
        NFS_PROGRAM,
        NFS_V4,
        PROC_COMPOUND,
        Conversation::client_cred(1000),
        OpaqueAuth::none(),
    );
    let args = Compound4Args {
        tag: Utf8String::default(),
        minorversion: 0,
        argarray: vec![
            NfsArgop4::PutRootFh,
            NfsArgop4::GetAttr(GetAttrArgs {
                attr_request: Bitmap4::from_bits([FATTR4_TYPE]),
            }),
        ],
    };
    c.push(true, call, Body::Compound(args), "COMPOUND refused");
    c.push(
        false,
        RpcMsg::reply_auth_error(xid, AuthStat::AUTH_TOOWEAK),
        Body::Void,
        "AUTH_ERROR",
    );

    // NFSv4.0 client id establishment.
    let callback = CbClient4 {
        cb_program: NFS_CB_PROGRAM,
        cb_location: ds_addr("192.0.2.100:40123"),
    };
    let client = NfsClientId4 {
        verifier: CLIENT_VERIFIER,
        id: Bytes::from_static(b"Linux NFSv4.0 client.example.net/192.0.2.1 tcp"),
    };
    c.compound(
        0,
        0,
        "SETCLIENTID in use",
        vec![(
            NfsArgop4::SetClientId(SetClientIdArgs {
                client: client.clone(),
                callback: callback.clone(),
                callback_ident: 1,
            }),
            NfsResop4::SetClientId(SetClientIdRes::ClidInUse(ds_addr("192.0.2.101:2049"))),
        )],
    );
    c.compound(
        0,
        0,
        "SETCLIENTID",
        vec![(
            NfsArgop4::SetClientId(SetClientIdArgs {
                client,
                callback,
                callback_ident: 2,
            }),
            NfsResop4::SetClientId(SetClientIdRes::Ok(SetClientIdResOk {
                clientid: CLIENTID,
                setclientid_confirm: [0x65, 0x53, 0xf1, 0x00, 0, 0, 0, 1],
            })),
        )],
    );
    c.compound(
        0,
        0,
        "SETCLIENTID_CONFIRM",
        vec![(
            NfsArgop4::SetClientIdConfirm(SetClientIdConfirmArgs {
                clientid: CLIENTID,
                setclientid_confirm: [0x65, 0x53, 0xf1, 0x00, 0, 0, 0, 1],
            }),
            NfsResop4::SetClientIdConfirm(SetClientIdConfirmRes {
                status: ok_status(),
            }),
        )],
    );
    c.compound(
        0,
        1000,
        "OPEN_CONFIRM",
        vec![
            putfh(FILE_INO),
            (
                NfsArgop4::OpenConfirm(OpenConfirmArgs {
                    open_stateid: open_sid(),
                    seqid: 1,
                }),
                NfsResop4::OpenConfirm(OpenConfirmRes::Ok(OpenConfirmResOk {
                    open_stateid: sid(2, 3),
                })),
            ),
        ],
    );
    c.compound(
        0,
        0,
        "RENEW",
        vec![(
            NfsArgop4::Renew(RenewArgs { clientid: CLIENTID }),
            NfsResop4::Renew(RenewRes {
                status: ok_status(),
            }),
        )],
    );
    c.compound(
        0,
        1000,
        "RELEASE_LOCKOWNER",
        vec![(
            NfsArgop4::ReleaseLockOwner(ReleaseLockOwnerArgs {
                lock_owner: lock_owner(),
            }),
            NfsResop4::ReleaseLockOwner(ReleaseLockOwnerRes {
                status: ok_status(),
            }),
        )],
    );
}

fn auth_sys_cb_parms() -> CallbackSecParms4 {
    CallbackSecParms4::AuthSys(AuthsysParms {
        stamp: 0x6553_f0a2,
        machinename: name("client.example.net"),
        uid: 0,
        gid: 0,
        gids: vec![],
    })
}

fn session_setup(c: &mut Conversation) {
    let impl_id = NfsImplId4 {
        nii_domain: name("kernel.org"),
        nii_name: name("Linux 6.1.0-13-amd64 #1 SMP PREEMPT_DYNAMIC Debian 6.1.55-1 x86_64"),
        nii_date: Nfstime4 {
            seconds: 0,
            nseconds: 0,
        },
    };
    let ops = StateProtectOps4 {
        spo_must_enforce: Bitmap4::from_bits([
            NfsOpnum4::OP_BIND_CONN_TO_SESSION.0,
            NfsOpnum4::OP_EXCHANGE_ID.0,
            NfsOpnum4::OP_CREATE_SESSION.0,
            NfsOpnum4::OP_DESTROY_SESSION.0,
            NfsOpnum4::OP_DESTROY_CLIENTID.0,
        ]),
        spo_must_allow: Bitmap4::from_bits([
            NfsOpnum4::OP_CLOSE.0,
            NfsOpnum4::OP_LOCKU.0,
            NfsOpnum4::OP_LAYOUTRETURN.0,
            NfsOpnum4::OP_DELEGRETURN.0,
            NfsOpnum4::OP_FREE_STATEID.0,
            NfsOpnum4::OP_TEST_STATEID.0,
        ]),
    };
    c.compound(
        1,
        0,
        "EXCHANGE_ID",
        vec![(
            NfsArgop4::ExchangeId(ExchangeIdArgs {
                eia_clientowner: ClientOwner4 {
                    co_verifier: CLIENT_VERIFIER,
                    co_ownerid: Bytes::from_static(b"Linux NFSv4.2 client.example.net"),
                },
                eia_flags: EXCHGID4_FLAG_SUPP_MOVED_REFER
                    | EXCHGID4_FLAG_SUPP_MOVED_MIGR
                    | EXCHGID4_FLAG_SUPP_FENCE_OPS
                    | EXCHGID4_FLAG_BIND_PRINC_STATEID,
                eia_state_protect: StateProtect4A::MachCred(ops),
                eia_client_impl_id: vec![impl_id],
            }),
            NfsResop4::ExchangeId(ExchangeIdRes::Ok(ExchangeIdResOk {
                eir_clientid: CLIENTID,
                eir_sequenceid: 1,
                eir_flags: EXCHGID4_FLAG_SUPP_MOVED_REFER
                    | EXCHGID4_FLAG_USE_PNFS_MDS
                    | EXCHGID4_FLAG_BIND_PRINC_STATEID,
                eir_state_protect: StateProtect4R::None,
                eir_server_owner: ServerOwner4 {
                    so_minor_id: 0,
                    so_major_id: Bytes::from_static(b"server.example.net"),
                },
                eir_server_scope: Bytes::from_static(b"server.example.net"),
                eir_server_impl_id: vec![NfsImplId4 {
                    nii_domain: name("example.net"),
                    nii_name: name("pnfs 0.1.0"),
                    nii_date: t(0, 0),
                }],
            })),
        )],
    );
    let fore = ChannelAttrs4 {
        ca_headerpadsize: 0,
        ca_maxrequestsize: 1_049_620,
        ca_maxresponsesize: 1_049_480,
        ca_maxresponsesize_cached: 7584,
        ca_maxoperations: 16,
        ca_maxrequests: 64,
        ca_rdma_ird: vec![],
    };
    let back = ChannelAttrs4 {
        ca_headerpadsize: 0,
        ca_maxrequestsize: 4096,
        ca_maxresponsesize: 4096,
        ca_maxresponsesize_cached: 0,
        ca_maxoperations: 8,
        ca_maxrequests: 1,
        ca_rdma_ird: vec![],
    };
    c.compound(
        1,
        0,
        "CREATE_SESSION",
        vec![(
            NfsArgop4::CreateSession(CreateSessionArgs {
                csa_clientid: CLIENTID,
                csa_sequence: 1,
                csa_flags: CREATE_SESSION4_FLAG_PERSIST | CREATE_SESSION4_FLAG_CONN_BACK_CHAN,
                csa_fore_chan_attrs: fore.clone(),
                csa_back_chan_attrs: back.clone(),
                csa_cb_program: NFS_CB_PROGRAM,
                csa_sec_parms: vec![CallbackSecParms4::AuthNone, auth_sys_cb_parms()],
            }),
            NfsResop4::CreateSession(CreateSessionRes::Ok(CreateSessionResOk {
                csr_sessionid: SESSION,
                csr_sequence: 1,
                csr_flags: CREATE_SESSION4_FLAG_CONN_BACK_CHAN,
                csr_fore_chan_attrs: ChannelAttrs4 {
                    ca_maxresponsesize_cached: 2128,
                    ..fore
                },
                csr_back_chan_attrs: back,
            })),
        )],
    );
    c.seq(
        1,
        "RECLAIM_COMPLETE",
        vec![(
            NfsArgop4::ReclaimComplete(ReclaimCompleteArgs { rca_one_fs: false }),
            NfsResop4::ReclaimComplete(ReclaimCompleteRes {
                status: ok_status(),
            }),
        )],
    );
    c.seq(
        1,
        "PUTROOTFH SECINFO_NO_NAME",
        vec![
            (
                NfsArgop4::PutRootFh,
                NfsResop4::PutRootFh(PutRootFhRes {
                    status: ok_status(),
                }),
            ),
            (
                NfsArgop4::SecInfoNoName(SecinfoStyle4::SECINFO_STYLE4_CURRENT_FH),
                NfsResop4::SecInfoNoName(SecInfoRes::Ok(vec![
                    Secinfo4::RpcsecGss(RpcsecGssInfo {
                        // 1.2.840.113554.1.2.2 (Kerberos V5)
                        oid: Bytes::from_static(&[
                            0x2a, 0x86, 0x48, 0x86, 0xf7, 0x12, 0x01, 0x02, 0x02,
                        ]),
                        qop: 0,
                        service: RpcGssSvc::RPC_GSS_SVC_INTEGRITY,
                    }),
                    Secinfo4::Flavor(1),
                ])),
            ),
        ],
    );
    let root = dir_attrs(ROOT_INO);
    c.seq(
        1,
        "PUTROOTFH GETFH GETATTR (fsinfo)",
        vec![
            (
                NfsArgop4::PutRootFh,
                NfsResop4::PutRootFh(PutRootFhRes {
                    status: ok_status(),
                }),
            ),
            getfh(ROOT_INO),
            getattr(&root, FSINFO_ATTRS),
        ],
    );
    c.seq(
        1,
        "PUTPUBFH GETFH",
        vec![
            (
                NfsArgop4::PutPubFh,
                NfsResop4::PutPubFh(PutPubFhRes {
                    status: ok_status(),
                }),
            ),
            getfh(ROOT_INO),
        ],
    );
    c.compound(
        1,
        0,
        "BIND_CONN_TO_SESSION",
        vec![(
            NfsArgop4::BindConnToSession(BindConnToSessionArgs {
                bctsa_sessid: SESSION,
                bctsa_dir: ChannelDirFromClient4::CDFC4_FORE_OR_BOTH,
                bctsa_use_conn_in_rdma_mode: false,
            }),
            NfsResop4::BindConnToSession(BindConnToSessionRes::Ok(BindConnToSessionResOk {
                bctsr_sessid: SESSION,
                bctsr_dir: ChannelDirFromServer4::CDFS4_BOTH,
                bctsr_use_conn_in_rdma_mode: false,
            })),
        )],
    );
    c.seq(
        1,
        "BACKCHANNEL_CTL",
        vec![(
            NfsArgop4::BackchannelCtl(BackchannelCtlArgs {
                bca_cb_program: NFS_CB_PROGRAM,
                bca_sec_parms: vec![
                    auth_sys_cb_parms(),
                    CallbackSecParms4::RpcsecGss(GssCbHandles4 {
                        gcbp_service: RpcGssSvc::RPC_GSS_SVC_NONE,
                        gcbp_handle_from_server: Gsshandle4T(Bytes::from_static(&[
                            0, 0, 0, 1, 0x65, 0x53, 0xf1, 0x00,
                        ])),
                        gcbp_handle_from_client: Gsshandle4T(Bytes::from_static(&[
                            0, 0, 0, 2, 0x65, 0x53, 0xf0, 0xa1,
                        ])),
                    }),
                ],
            }),
            NfsResop4::BackchannelCtl(BackchannelCtlRes {
                status: ok_status(),
            }),
        )],
    );
    c.seq(
        1,
        "SET_SSV",
        vec![(
            NfsArgop4::SetSsv(SetSsvArgs {
                ssa_ssv: data(32, 0x5a),
                ssa_digest: data(20, 0x11),
            }),
            NfsResop4::SetSsv(SetSsvRes::Ok(SetSsvResOk {
                ssr_digest: data(20, 0x22),
            })),
        )],
    );
}

fn namespace_ops(c: &mut Conversation) {
    let dir = dir_attrs(DIR_INO);
    let file = file_attrs(FILE_INO, 1 << 20);
    c.seq(
        1,
        "LOOKUP GETFH GETATTR",
        vec![
            putfh(ROOT_INO),
            (
                NfsArgop4::Lookup(LookupArgs {
                    objname: name("data"),
                }),
                NfsResop4::Lookup(LookupRes {
                    status: ok_status(),
                }),
            ),
            getfh(DIR_INO),
            getattr(&dir, POST_OP_ATTRS),
        ],
    );
    c.seq(
        1,
        "LOOKUPP GETFH",
        vec![
            putfh(DIR_INO),
            (
                NfsArgop4::LookupP,
                NfsResop4::LookupP(LookupPRes {
                    status: ok_status(),
                }),
            ),
            getfh(ROOT_INO),
        ],
    );
    c.seq(
        1,
        "ACCESS GETATTR",
        vec![
            putfh(DIR_INO),
            (
                NfsArgop4::Access(AccessArgs {
                    access: ACCESS4_READ
                        | ACCESS4_LOOKUP
                        | ACCESS4_MODIFY
                        | ACCESS4_EXTEND
                        | ACCESS4_DELETE,
                }),
                NfsResop4::Access(AccessRes::Ok(AccessResOk {
                    supported: ACCESS4_READ
                        | ACCESS4_LOOKUP
                        | ACCESS4_MODIFY
                        | ACCESS4_EXTEND
                        | ACCESS4_DELETE,
                    access: ACCESS4_READ | ACCESS4_LOOKUP | ACCESS4_MODIFY | ACCESS4_EXTEND,
                })),
            ),
            getattr(&dir, &[FATTR4_CHANGE, FATTR4_SIZE, FATTR4_TIME_MODIFY]),
        ],
    );
    // GETATTR of every attribute the server supports (RFC 8881 section 5: a client may ask
    // for any of them).
    let mut every: Vec<u32> = supported_attrs().iter().collect();
    every.retain(|&b| file.has(b) && !NO_WIRESHARK_VALUE_DISSECTOR.contains(&b));
    c.seq(
        1,
        "GETATTR (every readable attribute)",
        vec![putfh(FILE_INO), getattr(&file, &every)],
    );
    c.seq(
        1,
        "GETATTR (attributes Wireshark cannot dissect)",
        vec![
            putfh(FILE_INO),
            getattr(&file, NO_WIRESHARK_VALUE_DISSECTOR),
        ],
    );
    let entries = vec![
        Entry4 {
            cookie: 0x0c00_0000_0000_0001,
            name: name("data.bin"),
            attrs: fattr(
                &file,
                &[FATTR4_TYPE, FATTR4_FILEID, FATTR4_MODE, FATTR4_SIZE],
            ),
        },
        Entry4 {
            cookie: 0x0c00_0000_0000_0002,
            name: name("notes.txt"),
            attrs: fattr(
                &file_attrs(FILE2_INO, 812),
                &[FATTR4_TYPE, FATTR4_FILEID, FATTR4_MODE, FATTR4_SIZE],
            ),
        },
        Entry4 {
            cookie: 0x7fff_ffff_ffff_ffff,
            name: name("sub"),
            attrs: fattr(
                &dir_attrs(SUBDIR_INO),
                &[FATTR4_TYPE, FATTR4_FILEID, FATTR4_MODE, FATTR4_SIZE],
            ),
        },
    ];
    c.seq(
        1,
        "READDIR",
        vec![
            putfh(DIR_INO),
            (
                NfsArgop4::ReadDir(ReadDirArgs {
                    cookie: 0,
                    cookieverf: [0; 8],
                    dircount: 65_536,
                    maxcount: 262_144,
                    attr_request: Bitmap4::from_bits([
                        FATTR4_TYPE,
                        FATTR4_FILEID,
                        FATTR4_MODE,
                        FATTR4_SIZE,
                    ]),
                }),
                NfsResop4::ReadDir(ReadDirRes::Ok(ReadDirResOk {
                    cookieverf: COOKIE_VERIFIER,
                    reply: Dirlist4 { entries, eof: true },
                })),
            ),
        ],
    );
    let link = FileAttrs {
        r#type: Some(NfsFtype4::NF4LNK),
        size: Some(8),
        mode: Some(0o777),
        ..file_attrs(LINK_INO, 8)
    };
    c.seq(
        1,
        "CREATE symlink GETFH GETATTR",
        vec![
            putfh(DIR_INO),
            (
                NfsArgop4::Create(CreateArgs {
                    objtype: Createtype4::Lnk(name("data.bin")),
                    objname: name("latest"),
                    createattrs: fattr(
                        &FileAttrs {
                            mode: Some(0o777),
                            ..FileAttrs::default()
                        },
                        &[FATTR4_MODE],
                    ),
                }),
                NfsResop4::Create(CreateRes::Ok(CreateResOk {
                    cinfo: cinfo(0x17a0_0000_0002_0001),
                    attrset: Bitmap4::from_bits([FATTR4_MODE]),
                })),
            ),
            getfh(LINK_INO),
            getattr(&link, POST_OP_ATTRS),
        ],
    );
    c.seq(
        1,
        "READLINK",
        vec![
            putfh(LINK_INO),
            (
                NfsArgop4::ReadLink,
                NfsResop4::ReadLink(ReadLinkRes::Ok(ReadLinkResOk {
                    link: name("data.bin"),
                })),
            ),
        ],
    );
    c.seq(
        1,
        "SECINFO",
        vec![
            putfh(DIR_INO),
            (
                NfsArgop4::SecInfo(SecInfoArgs {
                    name: name("data.bin"),
                }),
                NfsResop4::SecInfo(SecInfoRes::Ok(vec![Secinfo4::Flavor(1)])),
            ),
        ],
    );
    c.seq(
        1,
        "LINK",
        vec![
            putfh(FILE_INO),
            savefh(),
            putfh(DIR_INO),
            (
                NfsArgop4::Link(LinkArgs {
                    newname: name("data.hardlink"),
                }),
                NfsResop4::Link(LinkRes::Ok(LinkResOk {
                    cinfo: cinfo(0x17a0_0000_0002_0002),
                })),
            ),
            (
                NfsArgop4::RestoreFh,
                NfsResop4::RestoreFh(RestoreFhRes {
                    status: ok_status(),
                }),
            ),
            getattr(&file, &[FATTR4_NUMLINKS, FATTR4_CHANGE]),
        ],
    );
    c.seq(
        1,
        "RENAME",
        vec![
            putfh(DIR_INO),
            savefh(),
            putfh(SUBDIR_INO),
            (
                NfsArgop4::Rename(RenameArgs {
                    oldname: name("data.hardlink"),
                    newname: name("data.old"),
                }),
                NfsResop4::Rename(RenameRes::Ok(RenameResOk {
                    source_cinfo: cinfo(0x17a0_0000_0002_0003),
                    target_cinfo: cinfo(0x17a0_0000_0003_0001),
                })),
            ),
        ],
    );
    c.seq(
        1,
        "REMOVE",
        vec![
            putfh(SUBDIR_INO),
            (
                NfsArgop4::Remove(RemoveArgs {
                    target: name("data.old"),
                }),
                NfsResop4::Remove(RemoveRes::Ok(RemoveResOk {
                    cinfo: cinfo(0x17a0_0000_0003_0002),
                })),
            ),
        ],
    );
    c.seq(
        1,
        "OPENATTR",
        vec![
            putfh(FILE_INO),
            (
                NfsArgop4::OpenAttr(OpenAttrArgs { createdir: false }),
                NfsResop4::OpenAttr(OpenAttrRes {
                    status: ok_status(),
                }),
            ),
        ],
    );
    c.seq(
        1,
        "GET_DIR_DELEGATION",
        vec![
            putfh(SUBDIR_INO),
            (
                NfsArgop4::GetDirDelegation(GetDirDelegationArgs {
                    gdda_signal_deleg_avail: false,
                    gdda_notification_types: Bitmap4::from_bits([
                        NotifyType4::NOTIFY4_ADD_ENTRY.0,
                        NotifyType4::NOTIFY4_REMOVE_ENTRY.0,
                        NotifyType4::NOTIFY4_RENAME_ENTRY.0,
                    ]),
                    gdda_child_attr_delay: Nfstime4 {
                        seconds: 1,
                        nseconds: 0,
                    },
                    gdda_dir_attr_delay: Nfstime4 {
                        seconds: 1,
                        nseconds: 0,
                    },
                    gdda_child_attributes: Bitmap4::from_bits([FATTR4_SIZE, FATTR4_CHANGE]),
                    gdda_dir_attributes: Bitmap4::from_bits([FATTR4_CHANGE]),
                }),
                NfsResop4::GetDirDelegation(GetDirDelegationRes::Ok(
                    GetDirDelegationResNonFatal::Ok(GetDirDelegationResOk {
                        gddr_cookieverf: COOKIE_VERIFIER,
                        gddr_stateid: dir_deleg_sid(),
                        gddr_notification: Bitmap4::from_bits([
                            NotifyType4::NOTIFY4_ADD_ENTRY.0,
                            NotifyType4::NOTIFY4_REMOVE_ENTRY.0,
                        ]),
                        gddr_child_attributes: Bitmap4::from_bits([FATTR4_SIZE]),
                        gddr_dir_attributes: Bitmap4::from_bits([FATTR4_CHANGE]),
                    }),
                )),
            ),
        ],
    );
    c.seq(
        1,
        "GET_DIR_DELEGATION unavailable",
        vec![
            putfh(DIR_INO),
            (
                NfsArgop4::GetDirDelegation(GetDirDelegationArgs {
                    gdda_signal_deleg_avail: true,
                    gdda_notification_types: Bitmap4::from_bits([NotifyType4::NOTIFY4_ADD_ENTRY.0]),
                    gdda_child_attr_delay: Nfstime4::default(),
                    gdda_dir_attr_delay: Nfstime4::default(),
                    gdda_child_attributes: Bitmap4::new(),
                    gdda_dir_attributes: Bitmap4::new(),
                }),
                NfsResop4::GetDirDelegation(GetDirDelegationRes::Ok(
                    GetDirDelegationResNonFatal::Unavail {
                        gddrnf_will_signal_deleg_avail: true,
                    },
                )),
            ),
        ],
    );
}

fn io_and_state_ops(c: &mut Conversation) {
    let file = file_attrs(FILE_INO, 1 << 20);
    let create_attrs = FileAttrs {
        mode: Some(0o644),
        owner: Some(name("alice@example.net")),
        ..FileAttrs::default()
    };
    c.seq(
        1,
        "OPEN create GETFH GETATTR",
        vec![
            putfh(DIR_INO),
            (
                NfsArgop4::Open(OpenArgs {
                    seqid: 0,
                    share_access: OPEN4_SHARE_ACCESS_BOTH | OPEN4_SHARE_ACCESS_WANT_WRITE_DELEG,
                    share_deny: OPEN4_SHARE_DENY_NONE,
                    owner: open_owner(),
                    openhow: Openflag4::Create(Createhow4::Exclusive41(Creatverfattr {
                        cva_verf: [0x65, 0x53, 0xf1, 0x10, 0x00, 0x00, 0x01, 0x2c],
                        cva_attrs: fattr(&create_attrs, &[FATTR4_MODE, FATTR4_OWNER]),
                    })),
                    claim: OpenClaim4::Null(name("data.bin")),
                }),
                NfsResop4::Open(OpenRes::Ok(OpenResOk {
                    stateid: open_sid(),
                    cinfo: cinfo(0x17a0_0000_0002_0000),
                    rflags: OPEN4_RESULT_LOCKTYPE_POSIX,
                    attrset: Bitmap4::from_bits([FATTR4_MODE, FATTR4_OWNER]),
                    delegation: OpenDelegation4::Write(OpenWriteDelegation4 {
                        stateid: deleg_sid(),
                        recall: false,
                        space_limit: NfsSpaceLimit4::Blocks(NfsModifiedLimit4 {
                            num_blocks: 0,
                            bytes_per_block: 0,
                        }),
                        permissions: ace("", 0),
                    }),
                })),
            ),
            getfh(FILE_INO),
            getattr(&file, POST_OP_ATTRS),
        ],
    );
    c.seq(
        1,
        "OPEN CLAIM_FH",
        vec![
            putfh(FILE2_INO),
            (
                NfsArgop4::Open(OpenArgs {
                    seqid: 0,
                    share_access: OPEN4_SHARE_ACCESS_READ | OPEN4_SHARE_ACCESS_WANT_ANY_DELEG,
                    share_deny: OPEN4_SHARE_DENY_WRITE,
                    owner: open_owner(),
                    openhow: Openflag4::NoCreate,
                    claim: OpenClaim4::Fh,
                }),
                NfsResop4::Open(OpenRes::Ok(OpenResOk {
                    stateid: sid(1, 9),
                    cinfo: cinfo(0x17a0_0000_0002_0004),
                    rflags: OPEN4_RESULT_LOCKTYPE_POSIX | OPEN4_RESULT_PRESERVE_UNLINKED,
                    attrset: Bitmap4::new(),
                    delegation: OpenDelegation4::NoneExt(OpenNoneDelegation4::Contention {
                        ond_server_will_push_deleg: false,
                    }),
                })),
            ),
        ],
    );
    c.seq(
        1,
        "WRITE GETATTR",
        vec![
            putfh(FILE_INO),
            (
                NfsArgop4::Write(WriteArgs {
                    stateid: open_sid(),
                    offset: 0,
                    stable: StableHow4::UNSTABLE4,
                    data: data(4096, 7),
                }),
                NfsResop4::Write(WriteRes::Ok(WriteResOk {
                    count: 4096,
                    committed: StableHow4::UNSTABLE4,
                    writeverf: WRITE_VERIFIER,
                })),
            ),
            getattr(&file, &[FATTR4_CHANGE, FATTR4_SIZE]),
        ],
    );
    c.seq(
        1,
        "COMMIT",
        vec![
            putfh(FILE_INO),
            (
                NfsArgop4::Commit(CommitArgs {
                    offset: 0,
                    count: 0,
                }),
                NfsResop4::Commit(CommitRes::Ok(CommitResOk {
                    writeverf: WRITE_VERIFIER,
                })),
            ),
        ],
    );
    c.seq(
        1,
        "READ",
        vec![
            putfh(FILE_INO),
            (
                NfsArgop4::Read(ReadArgs {
                    stateid: open_sid(),
                    offset: 0,
                    count: 4096,
                }),
                NfsResop4::Read(ReadRes::Ok(ReadResOk {
                    eof: false,
                    data: data(4096, 7),
                })),
            ),
        ],
    );
    let set = FileAttrs {
        size: Some(8192),
        owner_group: Some(name("staff@example.net")),
        time_access_set: Some(Settime4::SetToClientTime(t(0, 42))),
        time_modify_set: Some(Settime4::SetToServerTime),
        mode_set_masked: Some(ModeMasked4 {
            mm_value_to_set: 0o640,
            mm_mask_bits: 0o777,
        }),
        ..FileAttrs::default()
    };
    let set_bits = [
        FATTR4_SIZE,
        FATTR4_OWNER_GROUP,
        FATTR4_TIME_ACCESS_SET,
        FATTR4_TIME_MODIFY_SET,
        FATTR4_MODE_SET_MASKED,
    ];
    c.seq(
        1,
        "SETATTR GETATTR",
        vec![
            putfh(FILE_INO),
            (
                NfsArgop4::SetAttr(SetAttrArgs {
                    stateid: open_sid(),
                    obj_attributes: fattr(&set, &set_bits),
                }),
                NfsResop4::SetAttr(SetAttrRes {
                    status: ok_status(),
                    attrsset: Bitmap4::from_bits(set_bits),
                }),
            ),
            getattr(&file, POST_OP_ATTRS),
        ],
    );
    c.seq(
        1,
        "VERIFY NVERIFY",
        vec![
            putfh(FILE_INO),
            (
                NfsArgop4::Verify(VerifyArgs {
                    obj_attributes: fattr(&file, &[FATTR4_CHANGE, FATTR4_SIZE]),
                }),
                NfsResop4::Verify(VerifyRes {
                    status: ok_status(),
                }),
            ),
            (
                NfsArgop4::NVerify(NVerifyArgs {
                    obj_attributes: fattr(
                        &FileAttrs {
                            size: Some(0),
                            ..FileAttrs::default()
                        },
                        &[FATTR4_SIZE],
                    ),
                }),
                NfsResop4::NVerify(NVerifyRes {
                    status: ok_status(),
                }),
            ),
        ],
    );
    c.seq(
        1,
        "LOCK new lock owner",
        vec![
            putfh(FILE_INO),
            (
                NfsArgop4::Lock(LockArgs {
                    locktype: NfsLockType4::WRITE_LT,
                    reclaim: false,
                    offset: 0,
                    length: 4096,
                    locker: Locker4::OpenOwner(OpenToLockOwner4 {
                        open_seqid: 0,
                        open_stateid: open_sid(),
                        lock_seqid: 0,
                        lock_owner: lock_owner(),
                    }),
                }),
                NfsResop4::Lock(LockRes::Ok(LockResOk {
                    lock_stateid: lock_sid(),
                })),
            ),
        ],
    );
    c.seq(
        1,
        "LOCK denied",
        vec![
            putfh(FILE_INO),
            (
                NfsArgop4::Lock(LockArgs {
                    locktype: NfsLockType4::WRITEW_LT,
                    reclaim: false,
                    offset: 8192,
                    length: u64::MAX,
                    locker: Locker4::LockOwner(ExistLockOwner4 {
                        lock_stateid: lock_sid(),
                        lock_seqid: 0,
                    }),
                }),
                NfsResop4::Lock(LockRes::Denied(LockDenied {
                    offset: 8192,
                    length: 4096,
                    locktype: NfsLockType4::READ_LT,
                    owner: other_lock_owner(),
                })),
            ),
        ],
    );
    c.seq(
        1,
        "LOCKT",
        vec![
            putfh(FILE_INO),
            (
                NfsArgop4::LockT(LockTArgs {
                    locktype: NfsLockType4::READ_LT,
                    offset: 0,
                    length: u64::MAX,
                    owner: lock_owner(),
                }),
                NfsResop4::LockT(LockTRes::Ok),
            ),
        ],
    );
    c.seq(
        1,
        "LOCKU",
        vec![
            putfh(FILE_INO),
            (
                NfsArgop4::LockU(LockUArgs {
                    locktype: NfsLockType4::WRITE_LT,
                    seqid: 0,
                    lock_stateid: lock_sid(),
                    offset: 0,
                    length: 4096,
                }),
                NfsResop4::LockU(LockURes::Ok(sid(2, 4))),
            ),
        ],
    );
    c.seq(
        1,
        "TEST_STATEID",
        vec![(
            NfsArgop4::TestStateid(TestStateidArgs {
                ts_stateids: vec![open_sid(), sid(2, 4), sid(1, 99)],
            }),
            NfsResop4::TestStateid(TestStateidRes::Ok(TestStateidResOk {
                tsr_status_codes: vec![
                    NfsStat4::NFS4_OK,
                    NfsStat4::NFS4_OK,
                    NfsStat4::NFS4ERR_BAD_STATEID,
                ],
            })),
        )],
    );
    c.seq(
        1,
        "FREE_STATEID",
        vec![(
            NfsArgop4::FreeStateid(FreeStateidArgs {
                fsa_stateid: sid(2, 4),
            }),
            NfsResop4::FreeStateid(FreeStateidRes {
                status: ok_status(),
            }),
        )],
    );
    c.seq(
        1,
        "OPEN_DOWNGRADE",
        vec![
            putfh(FILE_INO),
            (
                NfsArgop4::OpenDowngrade(OpenDowngradeArgs {
                    open_stateid: open_sid(),
                    seqid: 0,
                    share_access: OPEN4_SHARE_ACCESS_READ,
                    share_deny: OPEN4_SHARE_DENY_NONE,
                }),
                NfsResop4::OpenDowngrade(OpenDowngradeRes::Ok(OpenDowngradeResOk {
                    open_stateid: sid(2, 3),
                })),
            ),
        ],
    );
    c.seq(
        1,
        "WANT_DELEGATION",
        vec![
            putfh(FILE2_INO),
            (
                NfsArgop4::WantDelegation(WantDelegationArgs {
                    wda_want: OPEN4_SHARE_ACCESS_WANT_READ_DELEG,
                    wda_claim: DelegClaim4::Fh,
                }),
                NfsResop4::WantDelegation(WantDelegationRes::Ok(OpenDelegation4::Read(
                    OpenReadDelegation4 {
                        stateid: sid(1, 10),
                        recall: false,
                        permissions: ace("", 0),
                    },
                ))),
            ),
        ],
    );
    c.seq(
        1,
        "DELEGPURGE",
        vec![(
            NfsArgop4::DelegPurge(DelegPurgeArgs { clientid: CLIENTID }),
            NfsResop4::DelegPurge(DelegPurgeRes {
                status: ok_status(),
            }),
        )],
    );
    c.seq(
        1,
        "ILLEGAL",
        vec![(
            NfsArgop4::Illegal,
            NfsResop4::Illegal(IllegalRes {
                status: NfsStat4::NFS4ERR_OP_ILLEGAL,
            }),
        )],
    );
}

fn pnfs_ops(c: &mut Conversation) {
    c.seq(
        1,
        "GETDEVICELIST",
        vec![
            putfh(ROOT_INO),
            (
                NfsArgop4::GetDeviceList(GetDeviceListArgs {
                    gdla_layout_type: Layouttype4::LAYOUT4_NFSV4_1_FILES,
                    gdla_maxdevices: 16,
                    gdla_cookie: 0,
                    gdla_cookieverf: [0; 8],
                }),
                NfsResop4::GetDeviceList(GetDeviceListRes::Ok(GetDeviceListResOk {
                    gdlr_cookie: 2,
                    gdlr_cookieverf: COOKIE_VERIFIER,
                    gdlr_deviceid_list: vec![DEVICE_A, DEVICE_B],
                    gdlr_eof: true,
                })),
            ),
        ],
    );
    let layoutget = |iomode| LayoutGetArgs {
        loga_signal_layout_avail: false,
        loga_layout_type: Layouttype4::LAYOUT4_NFSV4_1_FILES,
        loga_iomode: iomode,
        loga_offset: 0,
        loga_length: u64::MAX,
        loga_minlength: 4096,
        loga_stateid: open_sid(),
        loga_maxcount: 4096,
    };
    c.seq(
        1,
        "LAYOUTGET",
        vec![
            putfh(FILE_INO),
            (
                NfsArgop4::LayoutGet(layoutget(Layoutiomode4::LAYOUTIOMODE4_RW)),
                NfsResop4::LayoutGet(LayoutGetRes::Ok(LayoutGetResOk {
                    logr_return_on_close: true,
                    logr_stateid: layout_sid(),
                    logr_layout: vec![Layout4 {
                        lo_offset: 0,
                        lo_length: u64::MAX,
                        lo_iomode: Layoutiomode4::LAYOUTIOMODE4_RW,
                        lo_content: file_layout(),
                    }],
                })),
            ),
        ],
    );
    c.seq(
        1,
        "LAYOUTGET try later",
        vec![
            putfh(FILE2_INO),
            (
                NfsArgop4::LayoutGet(LayoutGetArgs {
                    loga_signal_layout_avail: true,
                    loga_stateid: sid(1, 9),
                    ..layoutget(Layoutiomode4::LAYOUTIOMODE4_READ)
                }),
                NfsResop4::LayoutGet(LayoutGetRes::TryLater {
                    logr_will_signal_layout_avail: true,
                }),
            ),
        ],
    );
    c.seq(
        1,
        "LAYOUTGET flex files",
        vec![
            putfh(FILE_INO),
            (
                NfsArgop4::LayoutGet(LayoutGetArgs {
                    loga_layout_type: Layouttype4::LAYOUT4_FLEX_FILES,
                    ..layoutget(Layoutiomode4::LAYOUTIOMODE4_RW)
                }),
                NfsResop4::LayoutGet(LayoutGetRes::Ok(LayoutGetResOk {
                    logr_return_on_close: true,
                    logr_stateid: layout_sid(),
                    logr_layout: vec![Layout4 {
                        lo_offset: 0,
                        lo_length: u64::MAX,
                        lo_iomode: Layoutiomode4::LAYOUTIOMODE4_RW,
                        lo_content: flex_layout(),
                    }],
                })),
            ),
        ],
    );
    let gdi = |maxcount| GetDeviceInfoArgs {
        gdia_device_id: DEVICE_A,
        gdia_layout_type: Layouttype4::LAYOUT4_NFSV4_1_FILES,
        gdia_maxcount: maxcount,
        gdia_notify_types: Bitmap4::from_bits([
            NotifyDeviceidType4::NOTIFY_DEVICEID4_CHANGE.0,
            NotifyDeviceidType4::NOTIFY_DEVICEID4_DELETE.0,
        ]),
    };
    c.seq(
        1,
        "GETDEVICEINFO too small",
        vec![(
            NfsArgop4::GetDeviceInfo(gdi(16)),
            NfsResop4::GetDeviceInfo(GetDeviceInfoRes::TooSmall { gdir_mincount: 112 }),
        )],
    );
    c.seq(
        1,
        "GETDEVICEINFO",
        vec![(
            NfsArgop4::GetDeviceInfo(gdi(262_144)),
            NfsResop4::GetDeviceInfo(GetDeviceInfoRes::Ok(GetDeviceInfoResOk {
                gdir_device_addr: device_addr(),
                gdir_notification: Bitmap4::from_bits([
                    NotifyDeviceidType4::NOTIFY_DEVICEID4_CHANGE.0,
                ]),
            })),
        )],
    );
    c.seq(
        1,
        "GETDEVICEINFO flex files",
        vec![(
            NfsArgop4::GetDeviceInfo(GetDeviceInfoArgs {
                gdia_layout_type: Layouttype4::LAYOUT4_FLEX_FILES,
                ..gdi(262_144)
            }),
            NfsResop4::GetDeviceInfo(GetDeviceInfoRes::Ok(GetDeviceInfoResOk {
                gdir_device_addr: flex_device_addr(),
                gdir_notification: Bitmap4::new(),
            })),
        )],
    );
    c.seq(
        1,
        "LAYOUTCOMMIT GETATTR",
        vec![
            putfh(FILE_INO),
            (
                NfsArgop4::LayoutCommit(LayoutCommitArgs {
                    loca_offset: 0,
                    loca_length: 2 << 20,
                    loca_reclaim: false,
                    loca_stateid: layout_sid(),
                    loca_last_write_offset: Newoffset4::Present {
                        no_offset: (2 << 20) - 1,
                    },
                    loca_time_modify: Newtime4::Changed { nt_time: t(1, 0) },
                    loca_layoutupdate: files_layoutupdate(),
                }),
                NfsResop4::LayoutCommit(LayoutCommitRes::Ok(LayoutCommitResOk {
                    locr_newsize: Newsize4::Changed { ns_size: 2 << 20 },
                })),
            ),
            getattr(
                &file_attrs(FILE_INO, 2 << 20),
                &[FATTR4_CHANGE, FATTR4_SIZE],
            ),
        ],
    );
    c.seq(
        1,
        "LAYOUTRETURN",
        vec![
            putfh(FILE_INO),
            (
                NfsArgop4::LayoutReturn(LayoutReturnArgs {
                    lora_reclaim: false,
                    lora_layout_type: Layouttype4::LAYOUT4_NFSV4_1_FILES,
                    lora_iomode: Layoutiomode4::LAYOUTIOMODE4_ANY,
                    lora_layoutreturn: Layoutreturn4::File(LayoutreturnFile4 {
                        lrf_offset: 0,
                        lrf_length: u64::MAX,
                        lrf_stateid: layout_sid(),
                        lrf_body: Bytes::new(),
                    }),
                }),
                NfsResop4::LayoutReturn(LayoutReturnRes::Ok(LayoutreturnStateid::Present(sid(
                    2, 6,
                )))),
            ),
        ],
    );
    c.seq(
        1,
        "LAYOUTRETURN flex files report",
        vec![
            putfh(FILE_INO),
            (
                NfsArgop4::LayoutReturn(LayoutReturnArgs {
                    lora_reclaim: false,
                    lora_layout_type: Layouttype4::LAYOUT4_FLEX_FILES,
                    lora_iomode: Layoutiomode4::LAYOUTIOMODE4_RW,
                    lora_layoutreturn: Layoutreturn4::File(LayoutreturnFile4 {
                        lrf_offset: 0,
                        lrf_length: u64::MAX,
                        lrf_stateid: layout_sid(),
                        lrf_body: flex_layoutreturn(),
                    }),
                }),
                NfsResop4::LayoutReturn(LayoutReturnRes::Ok(LayoutreturnStateid::Absent)),
            ),
        ],
    );
    c.seq(
        1,
        "LAYOUTRETURN all",
        vec![(
            NfsArgop4::LayoutReturn(LayoutReturnArgs {
                lora_reclaim: false,
                lora_layout_type: Layouttype4::LAYOUT4_NFSV4_1_FILES,
                lora_iomode: Layoutiomode4::LAYOUTIOMODE4_ANY,
                lora_layoutreturn: Layoutreturn4::All,
            }),
            NfsResop4::LayoutReturn(LayoutReturnRes::Ok(LayoutreturnStateid::Absent)),
        )],
    );
}

fn callbacks(c: &mut Conversation) {
    c.cb_null();
    c.cb(
        1,
        "CB_RECALL",
        vec![(
            NfsCbArgop4::Recall(CbRecallArgs {
                stateid: deleg_sid(),
                truncate: false,
                fh: fh(FILE_INO),
            }),
            NfsCbResop4::Recall(CbRecallRes {
                status: ok_status(),
            }),
        )],
    );
    c.cb(
        1,
        "CB_GETATTR",
        vec![(
            NfsCbArgop4::GetAttr(CbGetAttrArgs {
                fh: fh(FILE_INO),
                attr_request: Bitmap4::from_bits([FATTR4_CHANGE, FATTR4_SIZE]),
            }),
            NfsCbResop4::GetAttr(CbGetAttrRes::Ok(CbGetAttrResOk {
                obj_attributes: fattr(&file_attrs(FILE_INO, 12_288), &[FATTR4_CHANGE, FATTR4_SIZE]),
            })),
        )],
    );
    c.cb(
        1,
        "CB_LAYOUTRECALL file",
        vec![(
            NfsCbArgop4::LayoutRecall(CbLayoutRecallArgs {
                clora_type: Layouttype4::LAYOUT4_NFSV4_1_FILES,
                clora_iomode: Layoutiomode4::LAYOUTIOMODE4_ANY,
                clora_changed: true,
                clora_recall: Layoutrecall4::File(LayoutrecallFile4 {
                    lor_fh: fh(FILE_INO),
                    lor_offset: 0,
                    lor_length: u64::MAX,
                    lor_stateid: sid(3, 6),
                }),
            }),
            NfsCbResop4::LayoutRecall(CbLayoutRecallRes {
                status: ok_status(),
            }),
        )],
    );
    c.cb(
        1,
        "CB_LAYOUTRECALL fsid",
        vec![(
            NfsCbArgop4::LayoutRecall(CbLayoutRecallArgs {
                clora_type: Layouttype4::LAYOUT4_NFSV4_1_FILES,
                clora_iomode: Layoutiomode4::LAYOUTIOMODE4_RW,
                clora_changed: false,
                clora_recall: Layoutrecall4::Fsid(Fsid4 {
                    major: 0x3b8e_4f1c_9a52_4d0e,
                    minor: 0xb177_206c_55e9_01d4,
                }),
            }),
            NfsCbResop4::LayoutRecall(CbLayoutRecallRes {
                status: NfsStat4::NFS4ERR_NOMATCHING_LAYOUT,
            }),
        )],
    );
    let add = NotifyAdd4 {
        nad_old_entry: vec![],
        nad_new_entry: NotifyEntry4 {
            ne_file: name("new.txt"),
            ne_attrs: fattr(&file_attrs(131_200, 0), &[FATTR4_SIZE]),
        },
        nad_new_entry_cookie: vec![0x0c00_0000_0000_0009],
        nad_prev_entry: vec![],
        nad_last_entry: true,
    };
    let remove = NotifyRemove4 {
        nrm_old_entry: NotifyEntry4 {
            ne_file: name("old.txt"),
            ne_attrs: Fattr4::default(),
        },
        nrm_old_entry_cookie: 0x0c00_0000_0000_0003,
    };
    c.cb(
        1,
        "CB_NOTIFY",
        vec![(
            NfsCbArgop4::Notify(CbNotifyArgs {
                cna_stateid: dir_deleg_sid(),
                cna_fh: fh(SUBDIR_INO),
                cna_changes: vec![
                    Notify4 {
                        notify_mask: Bitmap4::from_bits([NotifyType4::NOTIFY4_ADD_ENTRY.0]),
                        notify_vals: to_bytes(&add),
                    },
                    Notify4 {
                        notify_mask: Bitmap4::from_bits([NotifyType4::NOTIFY4_REMOVE_ENTRY.0]),
                        notify_vals: to_bytes(&remove),
                    },
                ],
            }),
            NfsCbResop4::Notify(CbNotifyRes {
                status: ok_status(),
            }),
        )],
    );
    c.cb(
        1,
        "CB_PUSH_DELEG",
        vec![(
            NfsCbArgop4::PushDeleg(CbPushDelegArgs {
                cpda_fh: fh(FILE2_INO),
                cpda_delegation: OpenDelegation4::Read(OpenReadDelegation4 {
                    stateid: sid(1, 11),
                    recall: false,
                    permissions: ace("", 0),
                }),
            }),
            NfsCbResop4::PushDeleg(CbPushDelegRes {
                status: ok_status(),
            }),
        )],
    );
    c.cb(
        1,
        "CB_RECALL_ANY",
        vec![(
            NfsCbArgop4::RecallAny(CbRecallAnyArgs {
                craa_objects_to_keep: 0,
                craa_type_mask: Bitmap4::from_bits([
                    RCA4_TYPE_MASK_RDATA_DLG,
                    RCA4_TYPE_MASK_WDATA_DLG,
                    RCA4_TYPE_MASK_FILE_LAYOUT,
                ]),
            }),
            NfsCbResop4::RecallAny(CbRecallAnyRes {
                status: ok_status(),
            }),
        )],
    );
    c.cb(
        1,
        "CB_RECALLABLE_OBJ_AVAIL",
        vec![(
            NfsCbArgop4::RecallableObjAvail(CbRecallAnyArgs {
                craa_objects_to_keep: 8,
                craa_type_mask: Bitmap4::from_bits([RCA4_TYPE_MASK_FILE_LAYOUT]),
            }),
            NfsCbResop4::RecallableObjAvail(CbRecallableObjAvailRes {
                status: ok_status(),
            }),
        )],
    );
    c.cb(
        1,
        "CB_RECALL_SLOT",
        vec![(
            NfsCbArgop4::RecallSlot(CbRecallSlotArgs {
                rsa_target_highest_slotid: 31,
            }),
            NfsCbResop4::RecallSlot(CbRecallSlotRes {
                status: ok_status(),
            }),
        )],
    );
    c.cb(
        1,
        "CB_WANTS_CANCELLED",
        vec![(
            NfsCbArgop4::WantsCancelled(CbWantsCancelledArgs {
                cwca_contended_wants_cancelled: true,
                cwca_resourced_wants_cancelled: false,
            }),
            NfsCbResop4::WantsCancelled(CbWantsCancelledRes {
                status: ok_status(),
            }),
        )],
    );
    c.cb(
        1,
        "CB_NOTIFY_LOCK",
        vec![(
            NfsCbArgop4::NotifyLock(CbNotifyLockArgs {
                cnla_fh: fh(FILE_INO),
                cnla_lock_owner: lock_owner(),
            }),
            NfsCbResop4::NotifyLock(CbNotifyLockRes {
                status: ok_status(),
            }),
        )],
    );
    let change = NotifyDeviceidChange4 {
        ndc_layouttype: Layouttype4::LAYOUT4_NFSV4_1_FILES,
        ndc_deviceid: DEVICE_A,
        ndc_immediate: false,
    };
    let delete = NotifyDeviceidDelete4 {
        ndd_layouttype: Layouttype4::LAYOUT4_NFSV4_1_FILES,
        ndd_deviceid: DEVICE_B,
    };
    c.cb(
        1,
        "CB_NOTIFY_DEVICEID",
        vec![(
            NfsCbArgop4::NotifyDeviceid(CbNotifyDeviceidArgs {
                cnda_changes: vec![
                    Notify4 {
                        notify_mask: Bitmap4::from_bits([
                            NotifyDeviceidType4::NOTIFY_DEVICEID4_CHANGE.0,
                        ]),
                        notify_vals: to_bytes(&change),
                    },
                    Notify4 {
                        notify_mask: Bitmap4::from_bits([
                            NotifyDeviceidType4::NOTIFY_DEVICEID4_DELETE.0,
                        ]),
                        notify_vals: to_bytes(&delete),
                    },
                ],
            }),
            NfsCbResop4::NotifyDeviceid(CbNotifyDeviceidRes {
                status: ok_status(),
            }),
        )],
    );
    c.cb(
        1,
        "CB_ILLEGAL",
        vec![(
            NfsCbArgop4::Illegal,
            NfsCbResop4::Illegal(CbIllegalRes {
                status: NfsStat4::NFS4ERR_OP_ILLEGAL,
            }),
        )],
    );
    c.seq(
        1,
        "DELEGRETURN",
        vec![
            putfh(FILE_INO),
            (
                NfsArgop4::DelegReturn(DelegReturnArgs {
                    deleg_stateid: deleg_sid(),
                }),
                NfsResop4::DelegReturn(DelegReturnRes {
                    status: ok_status(),
                }),
            ),
        ],
    );
}

fn write_response(callback: Option<Stateid4>, count: u64) -> WriteResponse4 {
    WriteResponse4 {
        wr_callback_id: callback.into_iter().collect(),
        wr_count: count,
        wr_committed: StableHow4::FILE_SYNC4,
        wr_writeverf: WRITE_VERIFIER,
    }
}

fn v42_ops(c: &mut Conversation) {
    c.seq(
        2,
        "ALLOCATE",
        vec![
            putfh(FILE_INO),
            (
                NfsArgop4::Allocate(AllocateArgs {
                    aa_stateid: open_sid(),
                    aa_offset: 1 << 20,
                    aa_length: 1 << 20,
                }),
                NfsResop4::Allocate(AllocateRes {
                    status: ok_status(),
                }),
            ),
        ],
    );
    c.seq(
        2,
        "DEALLOCATE",
        vec![
            putfh(FILE_INO),
            (
                NfsArgop4::Deallocate(DeallocateArgs {
                    da_stateid: open_sid(),
                    da_offset: 65_536,
                    da_length: 65_536,
                }),
                NfsResop4::Deallocate(DeallocateRes {
                    status: ok_status(),
                }),
            ),
        ],
    );
    let copy = |synchronous| CopyArgs {
        ca_src_stateid: open_sid(),
        ca_dst_stateid: sid(1, 9),
        ca_src_offset: 0,
        ca_dst_offset: 0,
        ca_count: 1 << 20,
        ca_consecutive: false,
        ca_synchronous: synchronous,
        ca_source_server: vec![],
    };
    c.seq(
        2,
        "COPY synchronous",
        vec![
            putfh(FILE_INO),
            savefh(),
            putfh(FILE2_INO),
            (
                NfsArgop4::Copy(copy(true)),
                NfsResop4::Copy(CopyRes::Ok(CopyResOk {
                    cr_response: write_response(None, 1 << 20),
                    cr_requirements: CopyRequirements4 {
                        cr_consecutive: true,
                        cr_synchronous: true,
                    },
                })),
            ),
        ],
    );
    c.seq(
        2,
        "COPY requirements not met",
        vec![
            putfh(FILE_INO),
            savefh(),
            putfh(FILE2_INO),
            (
                NfsArgop4::Copy(CopyArgs {
                    ca_consecutive: true,
                    ..copy(true)
                }),
                NfsResop4::Copy(CopyRes::OffloadNoReqs(CopyRequirements4 {
                    cr_consecutive: false,
                    cr_synchronous: true,
                })),
            ),
        ],
    );
    c.seq(
        2,
        "COPY asynchronous",
        vec![
            putfh(FILE_INO),
            savefh(),
            putfh(FILE2_INO),
            (
                NfsArgop4::Copy(copy(false)),
                NfsResop4::Copy(CopyRes::Ok(CopyResOk {
                    cr_response: write_response(Some(copy_sid()), 0),
                    cr_requirements: CopyRequirements4 {
                        cr_consecutive: true,
                        cr_synchronous: false,
                    },
                })),
            ),
        ],
    );
    c.seq(
        2,
        "OFFLOAD_STATUS",
        vec![
            putfh(FILE2_INO),
            (
                NfsArgop4::OffloadStatus(OffloadStatusArgs {
                    osa_stateid: copy_sid(),
                }),
                NfsResop4::OffloadStatus(OffloadStatusRes::Ok(OffloadStatusResOk {
                    osr_count: 524_288,
                    osr_complete: vec![],
                })),
            ),
        ],
    );
    c.cb(
        2,
        "CB_OFFLOAD",
        vec![(
            NfsCbArgop4::Offload(CbOffloadArgs {
                coa_fh: fh(FILE2_INO),
                coa_stateid: copy_sid(),
                coa_offload_info: OffloadInfo4::Ok(write_response(None, 1 << 20)),
            }),
            NfsCbResop4::Offload(CbOffloadRes {
                status: ok_status(),
            }),
        )],
    );
    c.cb(
        2,
        "CB_OFFLOAD failed",
        vec![(
            NfsCbArgop4::Offload(CbOffloadArgs {
                coa_fh: fh(FILE2_INO),
                coa_stateid: sid(1, 12),
                coa_offload_info: OffloadInfo4::Failed {
                    coa_status: NfsStat4::NFS4ERR_NOSPC,
                    coa_bytes_copied: 262_144,
                },
            }),
            NfsCbResop4::Offload(CbOffloadRes {
                status: ok_status(),
            }),
        )],
    );
    c.seq(
        2,
        "OFFLOAD_CANCEL",
        vec![
            putfh(FILE2_INO),
            (
                NfsArgop4::OffloadCancel(OffloadCancelArgs {
                    oca_stateid: sid(1, 12),
                }),
                NfsResop4::OffloadCancel(OffloadCancelRes {
                    status: ok_status(),
                }),
            ),
        ],
    );
    c.seq(
        2,
        "COPY_NOTIFY",
        vec![
            putfh(FILE_INO),
            (
                NfsArgop4::CopyNotify(CopyNotifyArgs {
                    cna_src_stateid: open_sid(),
                    cna_destination_server: Netloc4::Netaddr(ds_addr("198.51.100.7:2049")),
                }),
                NfsResop4::CopyNotify(CopyNotifyRes::Ok(CopyNotifyResOk {
                    cnr_lease_time: Nfstime4 {
                        seconds: 90,
                        nseconds: 0,
                    },
                    cnr_stateid: sid(1, 13),
                    cnr_source_server: vec![
                        Netloc4::Name(name("server.example.net")),
                        Netloc4::Url(name("nfs://server.example.net/export")),
                        Netloc4::Netaddr(ds_addr("192.0.2.1:2049")),
                    ],
                })),
            ),
        ],
    );
    c.seq(
        2,
        "IO_ADVISE",
        vec![
            putfh(FILE_INO),
            (
                NfsArgop4::IoAdvise(IoAdviseArgs {
                    iaa_stateid: open_sid(),
                    iaa_offset: 0,
                    iaa_count: 0,
                    iaa_hints: Bitmap4::from_bits([IO_ADVISE4_SEQUENTIAL, IO_ADVISE4_WILLNEED]),
                }),
                NfsResop4::IoAdvise(IoAdviseRes::Ok(IoAdviseResOk {
                    ior_hints: Bitmap4::from_bits([IO_ADVISE4_SEQUENTIAL]),
                })),
            ),
        ],
    );
    c.seq(
        2,
        "LAYOUTERROR",
        vec![
            putfh(FILE_INO),
            (
                NfsArgop4::LayoutError(LayoutErrorArgs {
                    lea_offset: 0,
                    lea_length: 1 << 20,
                    lea_stateid: layout_sid(),
                    lea_errors: vec![DeviceError4 {
                        de_deviceid: DEVICE_A,
                        de_status: NfsStat4::NFS4ERR_NXIO,
                        de_opnum: NfsOpnum4::OP_WRITE,
                    }],
                }),
                NfsResop4::LayoutError(LayoutErrorRes {
                    status: ok_status(),
                }),
            ),
        ],
    );
    // The same statistics with each layout type's update: none for files (RFC 8881 section
    // 13.12), an ff_layoutupdate4 for flex files.
    for (what, update) in [
        ("LAYOUTSTATS", files_layoutupdate()),
        ("LAYOUTSTATS flex files", flex_layoutupdate().to_update()),
    ] {
        c.seq(
            2,
            what,
            vec![
                putfh(FILE_INO),
                (
                    NfsArgop4::LayoutStats(LayoutStatsArgs {
                        lsa_offset: 0,
                        lsa_length: u64::MAX,
                        lsa_stateid: layout_sid(),
                        lsa_read: IoInfo4 {
                            ii_count: 120,
                            ii_bytes: 120 << 20,
                        },
                        lsa_write: IoInfo4 {
                            ii_count: 64,
                            ii_bytes: 64 << 20,
                        },
                        lsa_deviceid: DEVICE_A,
                        lsa_layoutupdate: update,
                    }),
                    NfsResop4::LayoutStats(LayoutStatsRes {
                        status: ok_status(),
                    }),
                ),
            ],
        );
    }
    c.seq(
        2,
        "READ_PLUS",
        vec![
            putfh(FILE_INO),
            (
                NfsArgop4::ReadPlus(ReadPlusArgs {
                    rpa_stateid: open_sid(),
                    rpa_offset: 61_440,
                    rpa_count: 16_384,
                }),
                NfsResop4::ReadPlus(ReadPlusRes::Ok(ReadPlusResOk {
                    rpr_eof: false,
                    rpr_contents: vec![
                        ReadPlusContent::Data(Data4 {
                            d_offset: 61_440,
                            d_data: data(4096, 3),
                        }),
                        ReadPlusContent::Hole(DataInfo4 {
                            di_offset: 65_536,
                            di_length: 65_536,
                        }),
                    ],
                })),
            ),
        ],
    );
    c.seq(
        2,
        "SEEK",
        vec![
            putfh(FILE_INO),
            (
                NfsArgop4::Seek(SeekArgs {
                    sa_stateid: open_sid(),
                    sa_offset: 0,
                    sa_what: DataContent4::NFS4_CONTENT_HOLE,
                }),
                NfsResop4::Seek(SeekRes::Ok(SeekResOk {
                    sr_eof: false,
                    sr_offset: 65_536,
                })),
            ),
        ],
    );
    c.seq(
        2,
        "WRITE_SAME",
        vec![
            putfh(FILE_INO),
            (
                NfsArgop4::WriteSame(WriteSameArgs {
                    wsa_stateid: open_sid(),
                    wsa_stable: StableHow4::FILE_SYNC4,
                    wsa_adb: AppDataBlock4 {
                        adb_offset: 1 << 20,
                        adb_block_size: 4096,
                        adb_block_count: 16,
                        adb_reloff_blocknum: 0,
                        adb_block_num: 0,
                        adb_reloff_pattern: 8,
                        adb_pattern: data(512, 0xa5),
                    },
                }),
                NfsResop4::WriteSame(WriteSameRes::Ok(write_response(None, 65_536))),
            ),
        ],
    );
    let mode_umask = FileAttrs {
        mode_umask: Some(ModeUmask4 {
            mu_mode: 0o777,
            mu_umask: 0o022,
        }),
        ..FileAttrs::default()
    };
    c.seq(
        2,
        "CREATE directory with mode_umask",
        vec![
            putfh(DIR_INO),
            (
                NfsArgop4::Create(CreateArgs {
                    objtype: Createtype4::Dir,
                    objname: name("sub2"),
                    createattrs: fattr(&mode_umask, &[FATTR4_MODE_UMASK]),
                }),
                NfsResop4::Create(CreateRes::Ok(CreateResOk {
                    cinfo: cinfo(0x17a0_0000_0002_0009),
                    attrset: Bitmap4::from_bits([FATTR4_MODE_UMASK]),
                })),
            ),
        ],
    );
    c.seq(
        2,
        "CLONE",
        vec![
            putfh(FILE_INO),
            savefh(),
            putfh(FILE2_INO),
            (
                NfsArgop4::Clone(CloneArgs {
                    cl_src_stateid: open_sid(),
                    cl_dst_stateid: sid(1, 9),
                    cl_src_offset: 0,
                    cl_dst_offset: 1 << 20,
                    cl_count: 1 << 20,
                }),
                NfsResop4::Clone(CloneRes {
                    status: ok_status(),
                }),
            ),
        ],
    );
}

/// The RFC 8276 extended attribute operations, as the Linux client sends them (keys without
/// the `user.` prefix).
fn xattr_ops(c: &mut Conversation) {
    c.seq(
        2,
        "SETXATTR",
        vec![
            putfh(FILE_INO),
            (
                NfsArgop4::SetXattr(SetXattrArgs {
                    sxa_option: SetxattrOption4::SETXATTR4_CREATE,
                    sxa_key: Utf8String::from("mime_type"),
                    sxa_value: Bytes::from_static(b"text/plain"),
                }),
                NfsResop4::SetXattr(SetXattrRes::Ok(SetXattrResOk {
                    sxr_info: cinfo(0x17a0_0000_0002_0010),
                })),
            ),
        ],
    );
    c.seq(
        2,
        "GETXATTR",
        vec![
            putfh(FILE_INO),
            (
                NfsArgop4::GetXattr(GetXattrArgs {
                    gxa_name: Utf8String::from("mime_type"),
                }),
                NfsResop4::GetXattr(GetXattrRes::Ok(GetXattrResOk {
                    gxr_value: Bytes::from_static(b"text/plain"),
                })),
            ),
        ],
    );
    c.seq(
        2,
        "LISTXATTRS",
        vec![
            putfh(FILE_INO),
            (
                NfsArgop4::ListXattrs(ListXattrsArgs {
                    lxa_cookie: 0,
                    lxa_maxcount: 65_536,
                }),
                NfsResop4::ListXattrs(ListXattrsRes::Ok(ListXattrsResOk {
                    lxr_cookie: 2,
                    lxr_names: vec![Utf8String::from("mime_type"), Utf8String::from("origin")],
                    lxr_eof: true,
                })),
            ),
        ],
    );
    c.seq(
        2,
        "REMOVEXATTR",
        vec![
            putfh(FILE_INO),
            (
                NfsArgop4::RemoveXattr(RemoveXattrArgs {
                    rxa_name: Utf8String::from("origin"),
                }),
                NfsResop4::RemoveXattr(RemoveXattrRes::Ok(RemoveXattrResOk {
                    rxr_info: cinfo(0x17a0_0000_0002_0011),
                })),
            ),
        ],
    );
}

fn teardown(c: &mut Conversation) {
    c.seq(
        1,
        "CLOSE",
        vec![
            putfh(FILE_INO),
            (
                NfsArgop4::Close(CloseArgs {
                    seqid: 0,
                    open_stateid: sid(2, 3),
                }),
                // RFC 8881 section 8.2.3: the special stateid reserved as invalid.
                NfsResop4::Close(CloseRes::Ok(Stateid4::INVALID)),
            ),
        ],
    );
    c.compound(
        1,
        0,
        "DESTROY_SESSION",
        vec![(
            NfsArgop4::DestroySession(DestroySessionArgs {
                dsa_sessionid: SESSION,
            }),
            NfsResop4::DestroySession(DestroySessionRes {
                status: ok_status(),
            }),
        )],
    );
    c.compound(
        1,
        0,
        "DESTROY_CLIENTID",
        vec![(
            NfsArgop4::DestroyClientId(DestroyClientIdArgs {
                dca_clientid: CLIENTID,
            }),
            NfsResop4::DestroyClientId(DestroyClientIdRes {
                status: ok_status(),
            }),
        )],
    );
}

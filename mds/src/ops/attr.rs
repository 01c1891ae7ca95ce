//! Attributes: what the server reports for an object (RFC 8881 section 5), and the Unix
//! permission checks GETATTR, SETATTR, ACCESS, VERIFY and NVERIFY (a file each) share.

use crate::compound::{Ctx, User, NOBODY};
use crate::store::Inode;
use nfs_proto::nfs4::attr::*;
use nfs_proto::nfs4::*;
use nfs_proto::xdr::Utf8String;
use std::sync::atomic::{AtomicU64, Ordering};

/// The attributes this server reports (GETATTR answers the requested subset of these).
pub const SUPPORTED: &[u32] = &[
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
    FATTR4_RDATTR_ERROR,
    FATTR4_ACLSUPPORT,
    FATTR4_CANSETTIME,
    FATTR4_CASE_INSENSITIVE,
    FATTR4_CASE_PRESERVING,
    FATTR4_CHOWN_RESTRICTED,
    FATTR4_FILEHANDLE,
    FATTR4_FILEID,
    FATTR4_FILES_AVAIL,
    FATTR4_FILES_FREE,
    FATTR4_FILES_TOTAL,
    FATTR4_HOMOGENEOUS,
    FATTR4_MAXFILESIZE,
    FATTR4_MAXLINK,
    FATTR4_MAXNAME,
    FATTR4_MAXREAD,
    FATTR4_MAXWRITE,
    FATTR4_MODE,
    FATTR4_NO_TRUNC,
    FATTR4_NUMLINKS,
    FATTR4_OWNER,
    FATTR4_OWNER_GROUP,
    FATTR4_RAWDEV,
    FATTR4_SPACE_AVAIL,
    FATTR4_SPACE_FREE,
    FATTR4_SPACE_TOTAL,
    FATTR4_SPACE_USED,
    FATTR4_TIME_ACCESS,
    FATTR4_TIME_ACCESS_SET,
    FATTR4_TIME_CREATE,
    FATTR4_TIME_DELTA,
    FATTR4_TIME_METADATA,
    FATTR4_TIME_MODIFY,
    FATTR4_TIME_MODIFY_SET,
    FATTR4_MOUNTED_ON_FILEID,
    FATTR4_SUPPATTR_EXCLCREAT,
    FATTR4_FS_LAYOUT_TYPES,
    FATTR4_LAYOUT_BLKSIZE,
    FATTR4_LAYOUT_ALIGNMENT,
];

/// Attributes reported in minor version 2 besides [`SUPPORTED`]: `xattr_support` (RFC 8276
/// section 8.2), since the xattr operations are an NFSv4.2 extension (a 4.1 client cannot send
/// them, so it is not told they exist), and `open_arguments` (RFC 9754, also an NFSv4.2
/// extension).
pub const SUPPORTED_V42: &[u32] = &[FATTR4_XATTR_SUPPORT, FATTR4_OPEN_ARGUMENTS];

/// `open_arguments` (RFC 9754 section 6): what this server's OPEN takes. Every share access
/// and deny, every claim type (CLAIM_DELEGATE_PREV and CLAIM_DELEG_PREV_FH too: a restarted
/// client may reclaim its delegations) and create mode; of the wants, ANY_DELEG, NO_DELEG
/// and CANCEL (READ_DELEG and WRITE_DELEG are honoured too but have no bit). Not the
/// SIGNAL/PUSH flags (no delegation is ever pushed), delegated timestamps or
/// OPEN_XOR_DELEGATION.
fn open_arguments() -> OpenArguments4 {
    OpenArguments4 {
        oa_share_access: Bitmap4::from_bits([
            OPEN_ARGS_SHARE_ACCESS_READ,
            OPEN_ARGS_SHARE_ACCESS_WRITE,
            OPEN_ARGS_SHARE_ACCESS_BOTH,
        ]),
        // OPEN4_SHARE_DENY_NONE, READ, WRITE, BOTH.
        oa_share_deny: Bitmap4::from_bits(0..=3),
        oa_share_access_want: Bitmap4::from_bits([
            OPEN_ARGS_SHARE_ACCESS_WANT_ANY_DELEG,
            OPEN_ARGS_SHARE_ACCESS_WANT_NO_DELEG,
            OPEN_ARGS_SHARE_ACCESS_WANT_CANCEL,
        ]),
        // CLAIM_NULL (0) to CLAIM_DELEG_PREV_FH (6).
        oa_open_claim: Bitmap4::from_bits(0..=6),
        // UNCHECKED4, GUARDED4, EXCLUSIVE4, EXCLUSIVE4_1.
        oa_create_mode: Bitmap4::from_bits(0..=3),
    }
}

/// Attributes a client may set (SETATTR, CREATE, OPEN).
pub const SETTABLE: &[u32] = &[
    FATTR4_SIZE,
    FATTR4_MODE,
    FATTR4_OWNER,
    FATTR4_OWNER_GROUP,
    FATTR4_TIME_ACCESS_SET,
    FATTR4_TIME_MODIFY_SET,
];

/// Which ACCESS4_* bits of `want` the user has on `inode`, by its mode bits (root may do
/// anything but execute a file that no one may execute).
pub fn mode_access(inode: &Inode, user: &User, want: u32) -> u32 {
    let m = inode.mode;
    let bits = if user.uid == 0 {
        0o7 & if inode.is_dir() || m & 0o111 != 0 {
            0o7
        } else {
            0o6
        }
    } else if user.uid == inode.uid {
        (m >> 6) & 7
    } else if user.in_group(inode.gid) {
        (m >> 3) & 7
    } else {
        m & 7
    };
    let (r, w, x) = (bits & 4 != 0, bits & 2 != 0, bits & 1 != 0);
    let mut ok = 0;
    // The xattr bits (RFC 8276 section 8.4.5) follow the mode bits as knfsd maps them:
    // reading and listing need read permission, setting and removing write permission.
    if r {
        ok |= ACCESS4_READ | ACCESS4_XAREAD | ACCESS4_XALIST;
    }
    if w {
        ok |= ACCESS4_MODIFY | ACCESS4_EXTEND | ACCESS4_XAWRITE;
        if inode.is_dir() {
            ok |= ACCESS4_DELETE;
        }
    }
    if x {
        ok |= if inode.is_dir() {
            ACCESS4_LOOKUP
        } else {
            ACCESS4_EXECUTE
        };
    }
    want & ok
}

/// An owner or group as the wire carries it: numeric ids, as the Linux client sends when the
/// server does (no idmapping): `"1000"`, `"1000@domain"`; `"root"`/`"nobody"` too.
pub fn parse_id(s: &Utf8String) -> Result<u32, NfsStat4> {
    let s = s.as_str().ok_or(NfsStat4::NFS4ERR_BADOWNER)?;
    let name = s.split('@').next().unwrap_or(s);
    match name {
        "root" => Ok(0),
        "nobody" | "nogroup" => Ok(NOBODY),
        n => n.parse().map_err(|_| NfsStat4::NFS4ERR_BADOWNER),
    }
}

/// The attributes reported in `minor`: [`SUPPORTED`], and [`SUPPORTED_V42`] from 4.2 on.
pub fn supported_mask(minor: u32) -> Bitmap4 {
    let v42 = if minor >= 2 { SUPPORTED_V42 } else { &[] };
    Bitmap4::from_bits(SUPPORTED.iter().chain(v42).copied())
}

/// The stripe unit of `export`'s layout policy, or `max_io` without data servers.
/// `fs_layout_types` (RFC 8881 section 5.12.1) of `export`: none without layouts; the
/// file layout; or, where the export serves flex files layouts (`cluster.layout.layout_type`),
/// the flex files layout first and the file layout (granted to a client that asks for it).
/// The Linux client takes flex files over files whichever comes first (`ld_prefs` in
/// fs/nfs/pnfs.c).
fn layout_types(ctx: &Ctx, export: u16) -> Vec<Layouttype4> {
    let cluster = &ctx.mds.cfg().cluster;
    if !cluster.grants_layouts() {
        return Vec::new();
    }
    if cluster.layout_for(export).is_some_and(|p| p.flex_files) {
        vec![
            Layouttype4::LAYOUT4_FLEX_FILES,
            Layouttype4::LAYOUT4_NFSV4_1_FILES,
        ]
    } else {
        vec![Layouttype4::LAYOUT4_NFSV4_1_FILES]
    }
}

fn layout_unit(ctx: &Ctx, export: u16) -> u32 {
    ctx.mds
        .cfg()
        .cluster
        .layout_for(export)
        .map_or(ctx.mds.cfg().limits.max_io, |p| p.stripe_unit)
}

/// `mounted_on_fileid` (RFC 8881 section 5.8.2.23): for an export's root, the file id of what
/// it is grafted on (a pseudo node, or the directory of the covering export); else its own.
fn mounted_on_fileid(ctx: &Ctx, inode: &Inode, export: u16) -> u64 {
    use crate::compound::exports::{pseudo_fileid, Place};
    let mds = &ctx.mds;
    if mds.export_root_fileid(export) != Some(inode.fileid) {
        return inode.fileid;
    }
    let Some(e) = mds.exports().get(export) else {
        return inode.fileid;
    };
    match mds.exports().parent(Place::Export(export)) {
        None => inode.fileid,
        Some(Place::Pseudo(_)) => pseudo_fileid(&e.pseudo),
        Some(Place::Export(up)) => {
            let name = e.pseudo.rsplit('/').next().unwrap_or_default();
            mds.export_root_fileid(up)
                .and_then(|dir| mds.store().lookup(dir, name.as_bytes()).ok())
                .map_or_else(|| pseudo_fileid(&e.pseudo), |i| i.fileid)
        }
    }
}

/// Change attribute values that stand for "changed, as far as this server can tell": the top
/// bit set (the store's change counter never gets there), the boot epoch, and a counter.
static VOLATILE_CHANGE: AtomicU64 = AtomicU64::new(0);

/// The change attribute `ctx`'s client is told for `inode`. While *another* client holds an
/// RW layout of the file, it may be rewriting the data on the data servers with nothing
/// reaching the MDS: the Linux file layout driver sends no LAYOUTCOMMIT after fdatasync
/// (`pnfs_nfs_generic_sync`), so the recorded change attribute would stay put while the data
/// changes, and a reader would keep its stale cache (RFC 8881 section 13.10 leaves the MDS
/// to find out). Such a reader gets a value it has never seen, every time, so it revalidates
/// its cache at each open and GETATTR until the writer's layout is returned (the change
/// attribute type is undefined: clients compare values for equality only). The holders
/// themselves get the recorded value: their own writes do not stale their caches.
fn change_seen_by(ctx: &Ctx, inode: &Inode) -> u64 {
    if inode.ftype != NfsFtype4::NF4REG {
        return inode.change;
    }
    let me = ctx.client().ok();
    let others_write = ctx
        .mds
        .tables()
        .layouts_recovered()
        .holders(inode.fileid)
        .iter()
        .any(|(c, m)| m.rw && Some(*c) != me);
    if !others_write {
        return inode.change;
    }
    let n = VOLATILE_CHANGE.fetch_add(1, Ordering::Relaxed) & ((1 << 40) - 1);
    (1 << 63) | ((ctx.mds.store().boot_epoch() & 0x7f_ffff) << 40) | n
}

/// Every reported attribute of `inode` (the encoder keeps only the requested ones).
pub fn file_attrs(ctx: &Ctx, inode: &Inode, export: u16, want: &Bitmap4) -> FileAttrs {
    let mds = &ctx.mds;
    let mut a = FileAttrs {
        supported_attrs: Some(supported_mask(ctx.session.minor)),
        r#type: Some(inode.ftype),
        fh_expire_type: Some(FH4_PERSISTENT),
        change: Some(change_seen_by(ctx, inode)),
        size: Some(inode.size),
        link_support: Some(true),
        symlink_support: Some(true),
        named_attr: Some(false),
        fsid: Some(Fsid4 {
            major: export.into(),
            minor: 0,
        }),
        unique_handles: Some(true),
        lease_time: Some(mds.cfg().lease_time),
        rdattr_error: Some(NfsStat4::NFS4_OK),
        aclsupport: Some(0),
        cansettime: Some(true),
        case_insensitive: Some(false),
        case_preserving: Some(true),
        chown_restricted: Some(true),
        filehandle: Some(crate::ops::fh::encode_fh(
            ctx,
            crate::compound::Fh {
                export,
                fileid: inode.fileid,
                generation: inode.generation,
            },
        )),
        fileid: Some(inode.fileid),
        homogeneous: Some(true),
        maxfilesize: Some(i64::MAX as u64),
        maxlink: Some(u32::from(u16::MAX)),
        maxname: Some(crate::store::MAX_NAME_LEN as u32),
        maxread: Some(mds.cfg().limits.max_io.into()),
        maxwrite: Some(mds.cfg().limits.max_io.into()),
        mode: Some(inode.mode),
        no_trunc: Some(true),
        numlinks: Some(inode.nlink),
        owner: Some(Utf8String::from(inode.uid.to_string())),
        owner_group: Some(Utf8String::from(inode.gid.to_string())),
        rawdev: Some(inode.rdev),
        space_used: Some(inode.space_used),
        time_access: Some(inode.atime),
        time_create: Some(inode.birth),
        time_delta: Some(Nfstime4 {
            seconds: 0,
            nseconds: 1,
        }),
        time_metadata: Some(inode.ctime),
        time_modify: Some(inode.mtime),
        mounted_on_fileid: Some(mounted_on_fileid(ctx, inode, export)),
        suppattr_exclcreat: Some(Bitmap4::from_bits([
            FATTR4_MODE,
            FATTR4_OWNER,
            FATTR4_OWNER_GROUP,
            FATTR4_TIME_ACCESS_SET,
            FATTR4_TIME_MODIFY_SET,
        ])),
        xattr_support: (ctx.session.minor >= 2).then_some(true),
        open_arguments: (ctx.session.minor >= 2 && want.contains(FATTR4_OPEN_ARGUMENTS))
            .then(open_arguments),
        // pNFS (RFC 8881 sections 5.12.1, 5.12.4, 5.12.5): the file layout type when the MDS
        // hands out layouts (none otherwise: the client then does not ask); the preferred I/O
        // size and alignment are the export's stripe unit, since the Linux client cuts I/O at
        // stripe unit boundaries anyway.
        fs_layout_types: Some(layout_types(ctx, export)),
        layout_blksize: Some(layout_unit(ctx, export)),
        layout_alignment: Some(layout_unit(ctx, export)),
        ..FileAttrs::default()
    };
    let fs_bits = [
        FATTR4_FILES_AVAIL,
        FATTR4_FILES_FREE,
        FATTR4_FILES_TOTAL,
        FATTR4_SPACE_AVAIL,
        FATTR4_SPACE_FREE,
        FATTR4_SPACE_TOTAL,
    ];
    if fs_bits.iter().any(|&b| want.contains(b)) {
        if let Ok(s) = mds.data().statfs() {
            a.files_avail = Some(s.ffree);
            a.files_free = Some(s.ffree);
            a.files_total = Some(s.files);
            a.space_avail = Some(s.avail);
            a.space_free = Some(s.free);
            a.space_total = Some(s.total);
        }
    }
    a
}

/// Whether `want` asks for an attribute the MDS answers from a file's size (`size`,
/// `space_used`): for a file that clients write through layouts, those need the data
/// servers ([`crate::pnfs::dsobjects::sized`]).
pub fn wants_size(want: &Bitmap4) -> bool {
    want.contains(FATTR4_SIZE) || want.contains(FATTR4_SPACE_USED)
}

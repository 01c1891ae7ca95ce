//! One operation each: the arguments a test sends most, with the defaults every suite used to
//! type out (whole-file layouts, UNCHECKED4 creates, seqid 0 as NFSv4.1 wants it). The
//! [`Compound`](crate::Compound) builder calls these; a test that needs an odd argument builds
//! the `NfsArgop4` itself.

use bytes::Bytes;
use nfs_proto::nfs4::attr::FileAttrs;
use nfs_proto::nfs4::*;
use nfs_proto::xdr::Utf8String;

/// The attributes of `a` that are set, as a `fattr4`.
pub fn fattr(a: &FileAttrs) -> Fattr4 {
    a.to_fattr(&a.mask())
}

/// A `fattr4` holding only `mode`.
pub fn mode_attrs(mode: u32) -> Fattr4 {
    fattr(&FileAttrs {
        mode: Some(mode),
        ..FileAttrs::default()
    })
}

/// The state owner `name` (client id 0: NFSv4.1 takes the client from the session).
pub fn owner(name: &str) -> StateOwner4 {
    StateOwner4 {
        clientid: 0,
        owner: Bytes::copy_from_slice(name.as_bytes()),
    }
}

/// PUTFH of `fh`.
pub fn putfh(fh: &NfsFh4) -> NfsArgop4 {
    NfsArgop4::PutFh(PutFhArgs { object: fh.clone() })
}

/// LOOKUP of one component.
pub fn lookup(name: &str) -> NfsArgop4 {
    NfsArgop4::Lookup(LookupArgs {
        objname: Utf8String::from(name),
    })
}

/// A LOOKUP per component of `path` (empty components are skipped, so `""` and `"/"` give
/// none).
pub fn lookups(path: &str) -> Vec<NfsArgop4> {
    path.split('/')
        .filter(|c| !c.is_empty())
        .map(lookup)
        .collect()
}

/// GETATTR of `bits` (`FATTR4_*` numbers).
pub fn getattr_op(bits: &[u32]) -> NfsArgop4 {
    NfsArgop4::GetAttr(GetAttrArgs {
        attr_request: Bitmap4::from_bits(bits.iter().copied()),
    })
}

/// OPEN by open-owner `who` (seqid 0).
pub fn open_op(
    claim: OpenClaim4,
    openhow: Openflag4,
    share_access: u32,
    share_deny: u32,
    who: &str,
) -> NfsArgop4 {
    NfsArgop4::Open(OpenArgs {
        seqid: 0,
        share_access,
        share_deny,
        owner: owner(who),
        openhow,
        claim,
    })
}

/// OPEN with CLAIM_PREVIOUS of the current filehandle (a reclaim after a restart; RFC 8881
/// section 9.11) by open-owner `who`.
pub fn reclaim_op(share_access: u32, who: &str) -> NfsArgop4 {
    open_op(
        OpenClaim4::Previous(OpenDelegationType4::OPEN_DELEGATE_NONE),
        Openflag4::NoCreate,
        share_access,
        0,
        who,
    )
}

/// CLAIM_NULL of `name` in the current directory.
pub fn by_name(name: &str) -> OpenClaim4 {
    OpenClaim4::Null(Utf8String::from(name))
}

/// Create with UNCHECKED4 and this mode.
pub fn unchecked(mode: u32) -> Openflag4 {
    Openflag4::Create(Createhow4::Unchecked(mode_attrs(mode)))
}

/// WRITE of `data` at `offset` under `stateid` (any bytes: a `Bytes`, a `Vec`, a literal).
pub fn write_op(
    stateid: Stateid4,
    offset: u64,
    stable: StableHow4,
    data: impl AsRef<[u8]>,
) -> NfsArgop4 {
    NfsArgop4::Write(WriteArgs {
        stateid,
        offset,
        stable,
        data: Bytes::copy_from_slice(data.as_ref()),
    })
}

/// READ of `count` bytes at `offset` under `stateid`.
pub fn read_op(stateid: Stateid4, offset: u64, count: u32) -> NfsArgop4 {
    NfsArgop4::Read(ReadArgs {
        stateid,
        offset,
        count,
    })
}

/// COMMIT of `count` bytes at `offset` (0, 0: the whole file).
pub fn commit_op(offset: u64, count: u32) -> NfsArgop4 {
    NfsArgop4::Commit(CommitArgs { offset, count })
}

/// CLOSE of an open stateid.
pub fn close_op(stateid: Stateid4) -> NfsArgop4 {
    NfsArgop4::Close(CloseArgs {
        seqid: 0,
        open_stateid: stateid,
    })
}

/// REMOVE of `name` in the current directory.
pub fn remove_op(name: &str) -> NfsArgop4 {
    NfsArgop4::Remove(RemoveArgs {
        target: Utf8String::from(name),
    })
}

/// SETATTR of `attrs` under `stateid` (the anonymous stateid when no open is involved).
pub fn setattr_op(stateid: Stateid4, attrs: &FileAttrs) -> NfsArgop4 {
    NfsArgop4::SetAttr(SetAttrArgs {
        stateid,
        obj_attributes: fattr(attrs),
    })
}

/// RECLAIM_COMPLETE of the whole client (`rca_one_fs` false).
pub fn reclaim_complete_op() -> NfsArgop4 {
    NfsArgop4::ReclaimComplete(ReclaimCompleteArgs { rca_one_fs: false })
}

/// LOCK of a range by a new lock-owner `who`, under the open stateid of `open`.
pub fn lock_new(
    open: &Opened,
    who: &str,
    locktype: NfsLockType4,
    offset: u64,
    length: u64,
) -> NfsArgop4 {
    NfsArgop4::Lock(LockArgs {
        locktype,
        reclaim: false,
        offset,
        length,
        locker: Locker4::OpenOwner(OpenToLockOwner4 {
            open_seqid: 0,
            open_stateid: open.stateid,
            lock_seqid: 0,
            lock_owner: owner(who),
        }),
    })
}

/// LAYOUTGET of the whole file (files layout) for `iomode` under `stateid`.
pub fn layoutget_op(iomode: Layoutiomode4, stateid: Stateid4) -> NfsArgop4 {
    NfsArgop4::LayoutGet(LayoutGetArgs {
        loga_signal_layout_avail: false,
        loga_layout_type: Layouttype4::LAYOUT4_NFSV4_1_FILES,
        loga_iomode: iomode,
        loga_offset: 0,
        loga_length: u64::MAX,
        loga_minlength: 4096,
        loga_stateid: stateid,
        loga_maxcount: 4096,
    })
}

/// LAYOUTRETURN (files layout) of `what` for `iomode`.
pub fn layoutreturn_op(iomode: Layoutiomode4, what: Layoutreturn4) -> NfsArgop4 {
    NfsArgop4::LayoutReturn(LayoutReturnArgs {
        lora_reclaim: false,
        lora_layout_type: Layouttype4::LAYOUT4_NFSV4_1_FILES,
        lora_iomode: iomode,
        lora_layoutreturn: what,
    })
}

/// The whole file's layout under `stateid`, for LAYOUTRETURN.
pub fn return_file(stateid: Stateid4) -> Layoutreturn4 {
    Layoutreturn4::File(LayoutreturnFile4 {
        lrf_offset: 0,
        lrf_length: u64::MAX,
        lrf_stateid: stateid,
        lrf_body: Bytes::new(),
    })
}

/// LAYOUTCOMMIT of the whole file under `stateid`, with the last byte written and the
/// modification time when given.
pub fn layoutcommit_op(stateid: Stateid4, last: Option<u64>, mtime: Option<Nfstime4>) -> NfsArgop4 {
    NfsArgop4::LayoutCommit(LayoutCommitArgs {
        loca_offset: 0,
        loca_length: u64::MAX,
        loca_reclaim: false,
        loca_stateid: stateid,
        loca_last_write_offset: match last {
            Some(no_offset) => Newoffset4::Present { no_offset },
            None => Newoffset4::Absent,
        },
        loca_time_modify: match mtime {
            Some(nt_time) => Newtime4::Changed { nt_time },
            None => Newtime4::Unchanged,
        },
        loca_layoutupdate: Default::default(),
    })
}

/// The current stateid (RFC 8881 section 16.2.3.1.2): seqid 1, `other` all zeros, for an
/// operation that uses the stateid an earlier one in the same COMPOUND returned.
pub const CURRENT_STATEID: Stateid4 = Stateid4 {
    seqid: 1,
    other: [0; 12],
};

/// An open file: its handle and open stateid.
#[derive(Clone, Debug)]
pub struct Opened {
    /// Its filehandle.
    pub fh: NfsFh4,
    /// The open stateid.
    pub stateid: Stateid4,
}

/// `len` bytes of a pattern that does not repeat at any power-of-two stride (so a stripe
/// written to the wrong place shows).
pub fn pattern(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 7 + i / 251) as u8).collect()
}

//! COMPOUND building blocks for opens, locks and I/O, shared by the test files.

use bytes::Bytes;
use nfs_proto::nfs4::attr::*;
use nfs_proto::nfs4::*;
use nfs_proto::xdr::Utf8String;

use super::Client;

pub fn fattr(a: &FileAttrs) -> Fattr4 {
    a.to_fattr(&a.mask())
}

pub fn mode_attrs(mode: u32) -> Fattr4 {
    fattr(&FileAttrs {
        mode: Some(mode),
        ..FileAttrs::default()
    })
}

pub fn owner(name: &str) -> StateOwner4 {
    StateOwner4 {
        clientid: 0,
        owner: Bytes::copy_from_slice(name.as_bytes()),
    }
}

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

pub fn by_name(name: &str) -> OpenClaim4 {
    OpenClaim4::Null(Utf8String::from(name))
}

pub fn unchecked(mode: u32) -> Openflag4 {
    Openflag4::Create(Createhow4::Unchecked(mode_attrs(mode)))
}

pub fn open_res(r: &Compound4Res) -> &OpenResOk {
    r.resarray
        .iter()
        .find_map(|x| match x {
            NfsResop4::Open(OpenRes::Ok(ok)) => Some(ok),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no OPEN result: {r:?}"))
}

pub fn getfh_res(r: &Compound4Res) -> NfsFh4 {
    r.resarray
        .iter()
        .find_map(|x| match x {
            NfsResop4::GetFh(GetFhRes::Ok(ok)) => Some(ok.object.clone()),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no GETFH result: {r:?}"))
}

pub fn status_of(r: &Compound4Res, op: NfsOpnum4) -> NfsStat4 {
    r.resarray
        .iter()
        .find(|x| x.opnum() == op)
        .map(|x| x.status())
        .unwrap_or_else(|| panic!("no {op:?} result: {r:?}"))
}

/// An open file: its handle and open stateid.
#[derive(Clone, Debug)]
pub struct Opened {
    /// Its filehandle.
    pub fh: NfsFh4,
    /// The open stateid.
    pub stateid: Stateid4,
}

/// OPEN of `name` in the root (UNCHECKED4 create, mode 0644) with the given share bits.
pub async fn open_in_root(c: &mut Client, name: &str, access: u32, deny: u32, who: &str) -> Opened {
    let r = c
        .call(vec![
            NfsArgop4::PutRootFh,
            open_op(by_name(name), unchecked(0o644), access, deny, who),
            NfsArgop4::GetFh,
        ])
        .await;
    assert_eq!(r.status, NfsStat4::NFS4_OK, "{r:?}");
    Opened {
        fh: getfh_res(&r),
        stateid: open_res(&r).stateid,
    }
}

pub fn putfh(fh: &NfsFh4) -> NfsArgop4 {
    NfsArgop4::PutFh(PutFhArgs { object: fh.clone() })
}

pub fn write_op(stateid: Stateid4, offset: u64, stable: StableHow4, data: Bytes) -> NfsArgop4 {
    NfsArgop4::Write(WriteArgs {
        stateid,
        offset,
        stable,
        data,
    })
}

pub fn read_op(stateid: Stateid4, offset: u64, count: u32) -> NfsArgop4 {
    NfsArgop4::Read(ReadArgs {
        stateid,
        offset,
        count,
    })
}

pub fn close_op(stateid: Stateid4) -> NfsArgop4 {
    NfsArgop4::Close(CloseArgs {
        seqid: 0,
        open_stateid: stateid,
    })
}

pub fn write_res(r: &Compound4Res) -> WriteResOk {
    match r.resarray.last() {
        Some(NfsResop4::Write(WriteRes::Ok(ok))) => *ok,
        _ => panic!("WRITE failed: {r:?}"),
    }
}

pub fn read_res(r: &Compound4Res) -> ReadResOk {
    match r.resarray.last() {
        Some(NfsResop4::Read(ReadRes::Ok(ok))) => ok.clone(),
        _ => panic!("READ failed: {r:?}"),
    }
}

pub fn pattern(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 7 + i / 251) as u8).collect()
}

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

pub fn lock_stateid(r: &Compound4Res) -> Stateid4 {
    match r.resarray.last() {
        Some(NfsResop4::Lock(LockRes::Ok(ok))) => ok.lock_stateid,
        _ => panic!("LOCK failed: {r:?}"),
    }
}

pub async fn fileid_of(c: &mut Client, fh: &NfsFh4) -> (u64, u64) {
    let r = c
        .call(vec![
            putfh(fh),
            NfsArgop4::GetAttr(GetAttrArgs {
                attr_request: Bitmap4::from_bits([FATTR4_FILEID, FATTR4_SIZE]),
            }),
        ])
        .await;
    let Some(NfsResop4::GetAttr(GetAttrRes::Ok(a))) = r.resarray.last() else {
        panic!("GETATTR failed: {r:?}")
    };
    let a = FileAttrs::from_fattr(&a.obj_attributes).unwrap();
    (a.fileid.unwrap(), a.size.unwrap())
}

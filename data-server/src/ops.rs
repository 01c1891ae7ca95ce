//! The data server's operations (RFC 8881 section 13.6): PUTFH, READ, WRITE and COMMIT on the
//! object a DS filehandle names, SECINFO_NO_NAME (a housekeeping operation the section lists),
//! and GETATTR of the few attributes a DS can answer. SEQUENCE and the session operations are
//! run by the shared engine; anything else is `NFS4ERR_NOTSUPP`, as section 13.6 requires of
//! a server that is only a data server.
//!
//! ```text
//!  PUTFH  : DsFhCodec::decode (MAC) ─> current filehandle (file id, stripe index, layout)
//!  READ   : stateid, layout (gate, Io::Read)  ─> ObjectStore::read  ─> data, eof of the object
//!  WRITE  : stateid, RW layout (gate, Io::Write) ─> ObjectStore::write(stable) ─> count, ...
//!  COMMIT : RW layout (gate) ─> ObjectStore::commit ─> verifier
//! ```
//!
//! Offsets are object offsets as the client computed them from the layout (dense packing
//! compacts them; sparse packing keeps file offsets): the DS does no striping math. It does not
//! know the file's size either: READ's `eof` is the object's end, which for a client reading a
//! striped file means "zeros up to the file size" (a hole, or a stripe unit never written). The
//! size and mtime of the file are the MDS's business (LAYOUTCOMMIT).

use nfs_proto::nfs4::attr::*;
use nfs_proto::nfs4::*;
use pfs_core::{ObjectId, Stability};

use crate::gate::Io;
use crate::server::DsCtx;
use nfs_server::compound::error_result;
use nfs_server::ds_fh::DsFh;
use nfs_server::io::{blocking, check_commit_range, clip_write, hole_filled, secinfo_flavors};

/// Runs one operation of the data server's own.
pub async fn dispatch(ctx: &mut DsCtx, op: &NfsArgop4) -> NfsResop4 {
    use NfsArgop4 as A;
    use NfsResop4 as R;
    match op {
        A::PutFh(a) => R::PutFh(putfh(ctx, a)),
        A::Read(a) => R::Read(read(ctx, a).await),
        A::Write(a) => R::Write(write(ctx, a).await),
        A::Commit(a) => R::Commit(commit(ctx, a).await),
        A::GetAttr(a) => R::GetAttr(getattr(ctx, a).await),
        A::SecInfoNoName(a) => R::SecInfoNoName(secinfo_no_name(ctx, a)),
        _ => error_result(op.opnum(), NfsStat4::NFS4ERR_NOTSUPP),
    }
}

/// The object a DS filehandle names.
fn object(fh: DsFh) -> ObjectId {
    ObjectId {
        file: fh.fileid,
        stripe: u32::from(fh.stripe),
    }
}

/// PUTFH (RFC 8881 section 18.19): only a DS filehandle of this cluster; anything else
/// (an MDS filehandle, a forged one) is `NFS4ERR_BADHANDLE`.
pub fn putfh(ctx: &mut DsCtx, a: &PutFhArgs) -> PutFhRes {
    let status = match ctx.ds.decode_fh(&a.object) {
        Ok(fh) => {
            ctx.fh = Some(fh);
            NfsStat4::NFS4_OK
        }
        Err(s) => s,
    };
    PutFhRes { status }
}

async fn read_inner(ctx: &mut DsCtx, a: &ReadArgs) -> Result<ReadResOk, NfsStat4> {
    let fh = ctx.fh()?;
    ctx.ds.check_io(&fh, &a.stateid, Io::Read)?;
    // RFC 8881 section 18.22.3: the server may return less than asked; at most max_io.
    let count = a.count.min(ctx.ds.options().max_io);
    let objects = ctx.ds.objects().clone();
    let offset = a.offset;
    let done = blocking(move || objects.read(object(fh), offset, count)).await?;
    Ok(answer_read(done.data, done.eof, count))
}

/// A data server's READ answer: never `eof`, and a read the object ends in is filled with
/// zeros up to `count`. A DS cannot know where the *file* ends (the MDS does; the client
/// clips its reads to the file size), and the Linux client judges a DS's `eof` with the
/// DS offset against the file offset (`nfs_readpage_result`: `args.offset + res.count -
/// io_start`), so under dense packing an `eof` at the end of an object makes it zero a
/// whole stripe unit of good data (the second unit of a two- or three-unit file over three
/// data servers). Past an object's end, inside the file, is a hole: zeros are its bytes.
/// `count` is bounded by `max_io`, so the fill is too.
fn answer_read(data: bytes::Bytes, object_ended: bool, count: u32) -> ReadResOk {
    ReadResOk {
        eof: false,
        data: hole_filled(data, object_ended, count as usize),
    }
}

/// READ (RFC 8881 section 18.22) of the current object ([`answer_read`]).
pub async fn read(ctx: &mut DsCtx, a: &ReadArgs) -> ReadRes {
    match read_inner(ctx, a).await {
        Ok(ok) => ReadRes::Ok(ok),
        Err(s) => ReadRes::Err(s),
    }
}

async fn write_inner(ctx: &mut DsCtx, a: &WriteArgs) -> Result<WriteResOk, NfsStat4> {
    let fh = ctx.fh()?;
    ctx.ds.check_io(&fh, &a.stateid, Io::Write)?;
    let stable = Stability::from_u32(a.stable.0).ok_or(NfsStat4::NFS4ERR_INVAL)?;
    let payload = clip_write(&a.data, a.offset, ctx.ds.options().max_io as usize)?;
    let len = payload.len() as u64;
    let objects = ctx.ds.objects().clone();
    if len == 0 {
        // The Linux client never sends an empty WRITE, and takes count 0 for an I/O error.
        tracing::warn!(offset = a.offset, "WRITE of no data");
        return Ok(WriteResOk {
            count: 0,
            committed: StableHow4::FILE_SYNC4,
            writeverf: objects.verifier(),
        });
    }
    let offset = a.offset;
    let store = objects.clone();
    let done = blocking(move || store.write(object(fh), offset, &[payload], stable)).await?;
    if (done.count as u64) < len {
        tracing::warn!(
            offset,
            len,
            count = done.count,
            "short WRITE to the object store"
        );
    }
    Ok(WriteResOk {
        count: done.count as Count4,
        committed: ds_committed(done.committed),
        writeverf: objects.verifier(),
    })
}

/// What a data server may say it committed: never FILE_SYNC4. From a data server, FILE_SYNC4
/// promises the file's metadata too (RFC 5661 erratum 2751, kept in RFC 8881 section 13.7),
/// and the Linux file layout driver then sends no LAYOUTCOMMIT, but the size lives on the
/// MDS, which learns of the write only through LAYOUTCOMMIT. Data the store synced is
/// DATA_SYNC4: the client sends LAYOUTCOMMIT right after such writes, and no COMMIT.
fn ds_committed(done: Stability) -> StableHow4 {
    match done {
        Stability::FileSync | Stability::DataSync => StableHow4::DATA_SYNC4,
        Stability::Unstable => StableHow4::UNSTABLE4,
    }
}

/// WRITE (RFC 8881 section 18.32) to the current object: UNSTABLE4, or synced for DATA_SYNC4
/// and FILE_SYNC4 and answered DATA_SYNC4 ([`ds_committed`]). The write verifier is the
/// object store's, which changes at every start of the DS (and after a failed sync), so the
/// client re-sends what it wrote UNSTABLE and has not seen COMMITted.
pub async fn write(ctx: &mut DsCtx, a: &WriteArgs) -> WriteRes {
    match write_inner(ctx, a).await {
        Ok(ok) => WriteRes::Ok(ok),
        Err(s) => WriteRes::Err(s),
    }
}

async fn commit_inner(ctx: &mut DsCtx, a: &CommitArgs) -> Result<CommitResOk, NfsStat4> {
    let fh = ctx.fh()?;
    ctx.ds.check_commit(&fh)?;
    check_commit_range(a.offset, a.count)?;
    let objects = ctx.ds.objects().clone();
    let (offset, len) = (a.offset, u64::from(a.count));
    let store = objects.clone();
    blocking(move || store.commit(object(fh), offset, len)).await?;
    Ok(CommitResOk {
        writeverf: objects.verifier(),
    })
}

/// COMMIT (RFC 8881 section 18.3) of the current object: makes the earlier unstable writes
/// durable. It carries no stateid, as on the MDS.
pub async fn commit(ctx: &mut DsCtx, a: &CommitArgs) -> CommitRes {
    match commit_inner(ctx, a).await {
        Ok(ok) => CommitRes::Ok(ok),
        Err(s) => CommitRes::Err(s),
    }
}

/// The attributes a data server reports: what it knows of an object without the MDS.
/// Not `change`: the object store keeps no change counter, and the file's change attribute
/// is the MDS's (which LAYOUTCOMMIT moves); the Linux client asks a DS for no attributes.
pub const DS_ATTRS: &[u32] = &[
    FATTR4_SUPPORTED_ATTRS,
    FATTR4_TYPE,
    FATTR4_FH_EXPIRE_TYPE,
    FATTR4_SIZE,
    FATTR4_FSID,
    FATTR4_LEASE_TIME,
    FATTR4_FILEID,
    FATTR4_MAXREAD,
    FATTR4_MAXWRITE,
];

async fn getattr_inner(ctx: &mut DsCtx, a: &GetAttrArgs) -> Result<GetAttrResOk, NfsStat4> {
    let fh = ctx.fh()?;
    // An object's size tells of the file's data: only through a live layout, as a READ.
    ctx.ds.check_layout(&fh)?;
    let supported = Bitmap4::from_bits(DS_ATTRS.iter().copied());
    let want = a.attr_request.intersect(&supported);
    let size = if want.contains(FATTR4_SIZE) {
        let objects = ctx.ds.objects().clone();
        Some(blocking(move || objects.size(object(fh))).await?)
    } else {
        None
    };
    let opts = ctx.ds.options();
    let attrs = FileAttrs {
        supported_attrs: Some(supported),
        r#type: Some(NfsFtype4::NF4REG),
        fh_expire_type: Some(FH4_PERSISTENT),
        size,
        // Not any export's fsid (those are (export id, 0)): the objects of one DS.
        fsid: Some(Fsid4 {
            major: u64::from(opts.id),
            minor: 1,
        }),
        lease_time: Some(opts.lease_time.as_secs().try_into().unwrap_or(u32::MAX)),
        fileid: Some(fh.fileid),
        maxread: Some(opts.max_io.into()),
        maxwrite: Some(opts.max_io.into()),
        ..FileAttrs::default()
    };
    Ok(GetAttrResOk {
        obj_attributes: attrs.to_fattr(&want),
    })
}

/// GETATTR (RFC 8881 section 18.7) of the current object, through a live layout (else
/// `NFS4ERR_PNFS_NO_LAYOUT`): [`DS_ATTRS`], the others are left out of the reply as
/// unsupported attributes are.
pub async fn getattr(ctx: &mut DsCtx, a: &GetAttrArgs) -> GetAttrRes {
    match getattr_inner(ctx, a).await {
        Ok(ok) => GetAttrRes::Ok(ok),
        Err(s) => GetAttrRes::Err(s),
    }
}

/// SECINFO_NO_NAME (RFC 8881 section 18.45): AUTH_SYS and AUTH_NONE, the flavors the MDS
/// offers. A DS object has no parent (`NFS4ERR_NOENT` for `SECINFO_STYLE4_PARENT`); on
/// success the current filehandle is consumed (section 18.45.3).
pub fn secinfo_no_name(ctx: &mut DsCtx, a: &SecInfoNoNameArgs) -> SecInfoNoNameRes {
    if let Err(s) = ctx.fh() {
        return SecInfoRes::Err(s);
    }
    if *a == SecinfoStyle4::SECINFO_STYLE4_PARENT {
        return SecInfoRes::Err(NfsStat4::NFS4ERR_NOENT);
    }
    ctx.fh = None;
    SecInfoRes::Ok(secinfo_flavors())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ds_read_never_says_eof_and_fills_what_the_object_lacks_with_zeros() {
        let full = answer_read(bytes::Bytes::from_static(b"abcd"), true, 4);
        assert_eq!((full.eof, &full.data[..]), (false, &b"abcd"[..]));
        let short = answer_read(bytes::Bytes::from_static(b"ab"), true, 5);
        assert_eq!((short.eof, &short.data[..]), (false, &b"ab\0\0\0"[..]));
        let beyond = answer_read(bytes::Bytes::new(), true, 3);
        assert_eq!(&beyond.data[..], &[0, 0, 0][..]);
        // A short read that did not reach the object's end is passed on as it is.
        let partial = answer_read(bytes::Bytes::from_static(b"ab"), false, 5);
        assert_eq!(&partial.data[..], &b"ab"[..]);
    }
}

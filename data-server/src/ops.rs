//! The data server's operations (RFC 8881 section 13.6): PUTFH, READ, READ_PLUS (NFSv4.2),
//! WRITE and COMMIT on the object a DS filehandle names, SECINFO_NO_NAME (a housekeeping
//! operation the section lists), and GETATTR of the few attributes a DS can answer. SEQUENCE
//! and the session operations are run by the shared engine; anything else is
//! `NFS4ERR_NOTSUPP`, as section 13.6 requires of a server that is only a data server.
//!
//! ```text
//!  PUTFH    : DsFhCodec::decode (MAC) ─> current filehandle (file id, stripe index, layout)
//!  READ     : stateid, layout (gate, Io::Read) ─> ObjectStore::read ─> ends::judge (where the
//!             file ends, as the MDS said) ─> data (holes as zeros), eof | NFS4ERR_NXIO (MDS)
//!  READ_PLUS: as READ, the zeros past the object's end as a hole
//!  WRITE    : stateid, RW layout (gate, Io::Write) ─> ObjectStore::write(stable) ─> count, ...
//!  COMMIT   : RW layout (gate) ─> ObjectStore::commit ─> verifier
//! ```
//!
//! Offsets are object offsets as the client computed them from the layout (dense packing
//! compacts them; sparse packing keeps file offsets): the DS does no striping math. Where the
//! file ends it learns from the MDS's hints (`crate::ends`, docs/design.md "End of file on the
//! data servers"); the size and mtime of the file are the MDS's business (LAYOUTCOMMIT).

use nfs_proto::nfs4::attr::*;
use nfs_proto::nfs4::*;
use pfs_core::{ObjectId, Stability};

use bytes::Bytes;

use crate::ends::Judged;
use crate::gate::Io;
use crate::server::DsCtx;
use cluster::ds_fh::DsFh;
use nfs_server::io::{
    check_commit_range, clip_write, find_segments, hole_filled, object_io, object_read,
    object_write, read_plus_contents, secinfo_flavors, IntoReply,
};

/// The data server's operations: the op table's dispatch runs these methods, and answers
/// every other operation with `NFS4ERR_NOTSUPP` (the engine does not even ask for one the
/// table does not mark [`OpFlags::ON_DS`]).
impl OpHandler for DsCtx {
    async fn putfh(&mut self, a: &PutFhArgs) -> PutFhRes {
        putfh(self, a)
    }

    async fn read(&mut self, a: &ReadArgs) -> ReadRes {
        read(self, a).await
    }

    async fn read_plus(&mut self, a: &ReadPlusArgs) -> ReadPlusRes {
        read_plus(self, a).await
    }

    async fn write(&mut self, a: &WriteArgs) -> WriteRes {
        write(self, a).await
    }

    async fn commit(&mut self, a: &CommitArgs) -> CommitRes {
        commit(self, a).await
    }

    async fn getattr(&mut self, a: &GetAttrArgs) -> GetAttrRes {
        getattr(self, a).await
    }

    async fn secinfo_no_name(&mut self, a: &SecInfoNoNameArgs) -> SecInfoNoNameRes {
        secinfo_no_name(self, a)
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

/// The answer to a READ of `count` bytes at object offset `offset` of the current object:
/// the bytes and `eof` ([`answer_read`]), or `NFS4ERR_NXIO` when the client must read the
/// range through the MDS.
///
/// `into` is where the bytes are read ([`IntoReply`]: a READ's go where its connection sends
/// them from without copying).
async fn read_range(
    ctx: &mut DsCtx,
    stateid: &Stateid4,
    offset: u64,
    count: u32,
    into: IntoReply,
) -> Result<(Bytes, bool), NfsStat4> {
    let fh = ctx.fh()?;
    ctx.ds.check_io(&fh, stateid, Io::Read)?;
    // RFC 8881 section 18.22.3: the server may return less than asked; at most max_io.
    let count = count.min(ctx.ds.options().max_io);
    let done = object_read(ctx.ds.objects(), object(fh), offset, count, into).await?;
    if ctx.ds.options().whole_file_objects {
        // The object is the whole file at file offsets: its end is the file's.
        return Ok((done.data, done.eof));
    }
    let end = ctx.ds.ends().end(object(fh));
    answer_read(done.data, done.eof, offset, count, end)
}

/// A data server's READ answer on a dense object ([`crate::ends::judge`]): what the object
/// holds; zeros past its end while inside the file (a hole, or a stripe unit never written);
/// `eof` only where the file ends and the client can take it. Where the data server cannot
/// tell where the file ends, or the client would misjudge an `eof` (the Linux client judges
/// it against the file offset, `nfs_readpage_result`), `NFS4ERR_NXIO`: the client sends the
/// READ to the MDS (the Linux file layout driver resends a READ that fails with an error it
/// does not know of through the MDS, `filelayout_async_handle_error`), which knows the size.
/// A DS never answers bytes past the file's end. The fill is bounded by `max_io`.
fn answer_read(
    data: Bytes,
    object_ended: bool,
    offset: u64,
    count: u32,
    end: Option<crate::ends::End>,
) -> Result<(Bytes, bool), NfsStat4> {
    match crate::ends::judge(offset, count, data.len(), object_ended, end) {
        Judged::Data { len, eof } => {
            let mut data = hole_filled(data, true, len as usize);
            data.truncate(len as usize);
            Ok((data, eof))
        }
        Judged::ToMds => Err(NfsStat4::NFS4ERR_NXIO),
    }
}

/// READ (RFC 8881 section 18.22) of the current object ([`answer_read`]).
pub async fn read(ctx: &mut DsCtx, a: &ReadArgs) -> ReadRes {
    let into = IntoReply::on(&ctx.session.conn);
    match read_range(ctx, &a.stateid, a.offset, a.count, into).await {
        Ok((data, eof)) => ReadRes::Ok(ReadResOk { eof, data }),
        Err(s) => ReadRes::Err(s),
    }
}

/// READ_PLUS (RFC 7862 section 15.10) of the current object: READ's answer (the same end of
/// file rules), cut into data and holes with the object's SEEK_DATA/SEEK_HOLE (at most
/// [`READ_PLUS_SEGMENTS`] pieces), the zeros past the object's end a hole too. NFSv4.2 only.
pub async fn read_plus(ctx: &mut DsCtx, a: &ReadPlusArgs) -> ReadPlusRes {
    if ctx.session.minor < 2 {
        return ReadPlusRes::Err(NfsStat4::NFS4ERR_NOTSUPP);
    }
    match read_plus_inner(ctx, a).await {
        Ok(ok) => ReadPlusRes::Ok(ok),
        Err(s) => ReadPlusRes::Err(s),
    }
}

/// Most data and hole pieces in one READ_PLUS reply (each costs a seek on the object).
const READ_PLUS_SEGMENTS: usize = 32;

async fn read_plus_inner(ctx: &mut DsCtx, a: &ReadPlusArgs) -> Result<ReadPlusResOk, NfsStat4> {
    let fh = ctx.fh()?;
    // READ_PLUS data is not among RFC 8267's DDP-eligible items: ordinary memory.
    let into = IntoReply::default();
    let (data, eof) = read_range(ctx, &a.rpa_stateid, a.rpa_offset, a.rpa_count, into).await?;
    let end = a.rpa_offset + data.len() as u64;
    let objects = ctx.ds.objects().clone();
    let segments = find_segments(a.rpa_offset, end, READ_PLUS_SEGMENTS, |pos, what| {
        object_io(&objects, move |s| s.seek(object(fh), pos, what))
    })
    .await?;
    // Fewer pieces than the range needs: the reply ends where they do, without eof.
    let covered = segments.last().map_or(a.rpa_offset, |s| s.end());
    Ok(ReadPlusResOk {
        rpr_eof: eof && covered == end,
        rpr_contents: read_plus_contents(&segments, a.rpa_offset, &data),
    })
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
    let id = object(fh);
    let done = object_write(&objects, id, move |s| {
        s.write(id, offset, &[payload], stable)
    })
    .await?;
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
    object_io(&objects, move |s| s.commit(object(fh), offset, len)).await?;
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
        Some(object_io(ctx.ds.objects(), move |s| s.size(object(fh))).await?)
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
    use crate::ends::End;

    #[test]
    fn a_ds_read_answers_holes_inside_the_file_and_never_bytes_past_its_end() {
        let known = |end, same| {
            Some(End {
                end,
                same_offsets_below: same,
            })
        };
        // Inside the object: as read, no eof.
        let (d, eof) = answer_read(Bytes::from_static(b"abcd"), true, 0, 4, None).unwrap();
        assert_eq!((&d[..], eof), (&b"abcd"[..], false));
        // Past the object's end, inside the file: zeros.
        let (d, eof) = answer_read(Bytes::from_static(b"ab"), true, 0, 5, known(10, 0)).unwrap();
        assert_eq!((&d[..], eof), (&b"ab\0\0\0"[..], false));
        // Across the file's end where offsets agree: cut there, eof.
        let (d, eof) = answer_read(Bytes::from_static(b"ab"), true, 0, 5, known(3, 64)).unwrap();
        assert_eq!((&d[..], eof), (&b"ab\0"[..], true));
        // Unknown end, or offsets that differ: the MDS answers.
        assert_eq!(
            answer_read(Bytes::from_static(b"ab"), true, 0, 5, None),
            Err(NfsStat4::NFS4ERR_NXIO)
        );
        assert_eq!(
            answer_read(Bytes::new(), true, 100, 5, known(102, 0)),
            Err(NfsStat4::NFS4ERR_NXIO)
        );
        // A short read that did not reach the object's end is passed on as it is.
        let (d, eof) = answer_read(Bytes::from_static(b"ab"), false, 0, 5, None).unwrap();
        assert_eq!((&d[..], eof), (&b"ab"[..], false));
    }
}

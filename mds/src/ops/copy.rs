//! COPY, COPY_NOTIFY, OFFLOAD_STATUS, OFFLOAD_CANCEL (RFC 7862 sections 15.2, 15.3, 15.8,
//! 15.9): intra-server copies whose bytes never go through the client. The engine and the
//! table of background copies are `crate::state::copies`.
//!
//! ```text
//!  COPY: SAVED_FH = source (read stateid), CURRENT_FH = destination (write stateid)
//!        ─> count (0: to the source's end; past the end: INVAL) ─> overlap in one file: INVAL
//!        ─> destination's data place fixed (a new striped file takes the source's stripe set)
//!        ─> ca_synchronous or count <= SYNC_COPY_MAX: copy, record size, reply FILE_SYNC
//!           else: Copies::start ─> reply {callback id} ─> task: copy, record size,
//!                 CB_OFFLOAD (write_response4 or failure and bytes done)
//! ```

use crate::compound::Ctx;
use crate::ops::io::check_io_on;
use crate::pnfs::datapath;
use crate::server::Mds;
use crate::state::copies::{self, Outcome, Place, Plan, SYNC_COPY_MAX};
use crate::state::open::Io;
use crate::store::Inode;
use nfs_proto::nfs4::callback::{CbOffloadArgs, NfsCbArgop4, NfsCbResop4, OffloadInfo4};
use nfs_proto::nfs4::*;
use std::sync::Arc;
use std::time::Duration;

/// The source and destination of a COPY or CLONE, checked.
pub(super) struct Pair {
    pub(super) plan: Plan,
    pub(super) dst_fh: NfsFh4,
}

/// The checks COPY and CLONE share: source (saved filehandle) readable under `src_stateid`,
/// destination (current filehandle) writable under `dst_stateid`, both regular files of one
/// export; `count` 0 means to the source's end, and a range past the source's end is
/// NFS4ERR_INVAL (RFC 7862 section 15.2.3), as are overlapping ranges of one file. The
/// destination's data place is fixed: a destination without a stripe set whose source has
/// one gets the source's (so the data servers line up and copy in place), as its first WRITE
/// through the MDS would get the export's.
pub(super) async fn check_pair(
    ctx: &Ctx,
    src_stateid: &Stateid4,
    dst_stateid: &Stateid4,
    src_offset: u64,
    dst_offset: u64,
    count: u64,
) -> Result<Pair, NfsStat4> {
    ctx.writable()?;
    let sfh = ctx.sfh.ok_or(NfsStat4::NFS4ERR_NOFILEHANDLE)?;
    let dfh = ctx.fh()?;
    let src_inode = ctx.inode_of(sfh)?;
    let (src, src_inode) = check_io_on(
        ctx,
        src_inode,
        src_stateid,
        ctx.sstateid.as_ref(),
        Io::Read,
        ACCESS4_READ | ACCESS4_EXECUTE,
    )?;
    let (dst, dst_inode) = check_io_on(
        ctx,
        ctx.inode()?,
        dst_stateid,
        ctx.cstateid.as_ref(),
        Io::Write,
        ACCESS4_MODIFY,
    )?;
    if sfh.export != dfh.export {
        return Err(NfsStat4::NFS4ERR_XDEV);
    }
    let size = ctx.sized(src_inode, false).await.size;
    let count = match count {
        0 => size.checked_sub(src_offset),
        n => src_offset
            .checked_add(n)
            .filter(|&end| end <= size)
            .map(|_| n),
    }
    .ok_or(NfsStat4::NFS4ERR_INVAL)?;
    let dst_end = dst_offset
        .checked_add(count)
        .filter(|&e| e <= i64::MAX as u64)
        .ok_or(NfsStat4::NFS4ERR_FBIG)?;
    if src == dst && count > 0 && src_offset < dst_end && dst_offset < src_offset + count {
        return Err(NfsStat4::NFS4ERR_INVAL);
    }
    let src_set = ctx.mds.store().stripes(src)?;
    let dst_set = dest_stripes(ctx, dfh.export, &dst_inode, src_set.as_ref()).await?;
    let place = |f, set: Option<crate::store::StripeSet>| match set {
        Some(s) => Place::Striped(f, s),
        None => Place::Local(f),
    };
    Ok(Pair {
        plan: Plan {
            src: place(src, src_set),
            dst: place(dst, dst_set),
            src_offset,
            dst_offset,
            count,
            export: dfh.export,
        },
        dst_fh: crate::ops::fh::encode_fh(ctx, dfh),
    })
}

/// An empty destination whose stripe set differs from the source's takes the source's, so
/// that every data server copies (or clones) what it holds instead of the MDS streaming the
/// bytes between them (and CLONE, which cannot stream, works at all). The Linux client fixes
/// a new file's set with the LAYOUTGET of its OPEN, before the COPY or CLONE, so this is the
/// common case of `cp` and `copy_file_range` into a new file. The layouts of the file are
/// recalled first, the caller's too (NFS4ERR_DELAY meanwhile: the client retries once it
/// returned them); the set moves only if no layout is out and its objects hold nothing.
async fn adopt_source_set(
    ctx: &Ctx,
    inode: &Inode,
    set: crate::store::StripeSet,
    src: crate::store::StripeSet,
) -> Result<crate::store::StripeSet, NfsStat4> {
    let fileid = inode.fileid;
    let held = !ctx
        .mds
        .tables()
        .layouts_recovered()
        .holders(fileid)
        .is_empty();
    if held {
        let fh = ctx.fh()?;
        let fh = crate::ops::fh::encode_fh(ctx, fh);
        crate::pnfs::fencing::recall_file(
            ctx.mds.tables(),
            ctx.mds.core(),
            ctx.mds.pnfs(),
            fileid,
            fh,
            None,
        );
        return Err(NfsStat4::NFS4ERR_DELAY);
    }
    match crate::pnfs::dsobjects::file_size(ctx.mds.pnfs(), fileid, &set).await {
        Ok(0) => Ok(ctx.mds.store().restripe_empty(fileid, set, src).await?),
        Ok(_) => Ok(set),
        Err(e) => Err(e.into()),
    }
}

/// The destination's stripe set: the one it has; else the source's when the MDS grants
/// layouts and its own object is empty; else what its first WRITE would get.
async fn dest_stripes(
    ctx: &Ctx,
    export: u16,
    inode: &Inode,
    src_set: Option<&crate::store::StripeSet>,
) -> Result<Option<crate::store::StripeSet>, NfsStat4> {
    let fileid = inode.fileid;
    if let Some(set) = ctx.mds.store().stripes(fileid)? {
        return match src_set {
            Some(src) if *src != set && inode.size == 0 => {
                adopt_source_set(ctx, inode, set, *src).await.map(Some)
            }
            _ => Ok(Some(set)),
        };
    }
    if let Some(src_set) = src_set {
        if ctx.mds.cfg().cluster.grants_layouts() {
            let data = ctx.mds.data().clone();
            let local =
                nfs_server::io::blocking(move || data.size(pfs_core::ObjectId::whole(fileid)))
                    .await?;
            if local == 0 {
                return Ok(Some(
                    ctx.mds.store().fix_stripes(fileid, *src_set, false).await?,
                ));
            }
        }
    }
    crate::ops::layout::file_stripes(ctx, export, inode, false)
        .await
        .map_err(|e| match e {
            NfsStat4::NFS4ERR_LAYOUTTRYLATER => NfsStat4::NFS4ERR_DELAY,
            e => e,
        })
}

/// The write verifier of the destination's data (a COMMIT after the copy answers the same).
fn verifier(mds: &Mds, p: &Place) -> Result<Verifier4, NfsStat4> {
    match p {
        Place::Striped(_, set) => datapath::known_verifier(mds.pnfs(), set),
        Place::Local(_) => Ok(mds.data().verifier()),
    }
}

/// Records the destination's new size (if it grew), mtime and change, durably: before the
/// reply or CB_OFFLOAD, so a copy acknowledged is a copy a restart keeps.
async fn record(mds: &Mds, plan: &Plan, copied: u64) -> Result<(), NfsStat4> {
    if copied == 0 {
        return Ok(());
    }
    let fileid = match plan.dst {
        Place::Local(f) | Place::Striped(f, _) => f,
    };
    mds.store()
        .record_write(fileid, plan.dst_offset + copied, mds.wall_time())
        .await?;
    Ok(())
}

/// The copy engine over `mds`'s file data, data servers and copy counters.
pub(super) fn engine(mds: &Mds) -> copies::Engine {
    copies::Engine::new(mds.namespace(), mds.pnfs(), mds.copies())
}

/// Copies `plan` now and says what was written.
async fn copy_now(mds: &Arc<Mds>, plan: &Plan, job: Option<&copies::Job>) -> Outcome {
    let (status, copied) = match copies::run(&engine(mds), plan, job).await {
        Ok(n) => (NfsStat4::NFS4_OK, n),
        Err((s, n)) => (s, n),
    };
    if let Err(e) = record(mds, plan, copied).await {
        return Outcome::Failed { status: e, copied };
    }
    if status != NfsStat4::NFS4_OK {
        return Outcome::Failed { status, copied };
    }
    match verifier(mds, &plan.dst) {
        Ok(wr_writeverf) => Outcome::Done(WriteResponse4 {
            wr_callback_id: Vec::new(),
            wr_count: copied,
            // Every byte is durable (copy_file_range then fdatasync on the stores, or
            // FILE_SYNC writes) and so is the size: FILE_SYNC.
            wr_committed: StableHow4::FILE_SYNC4,
            wr_writeverf,
        }),
        Err(status) => Outcome::Failed { status, copied },
    }
}

/// COPY (RFC 7862 section 15.2).
pub async fn copy(ctx: &mut Ctx, a: &CopyArgs) -> Result<CopyResOk, NfsStat4> {
    if !a.ca_source_server.is_empty() {
        // Inter-server copy is not offered (knfsd without inter_copy_offload_enable
        // answers the same).
        return Err(NfsStat4::NFS4ERR_NOTSUPP);
    }
    let pair = check_pair(
        ctx,
        &a.ca_src_stateid,
        &a.ca_dst_stateid,
        a.ca_src_offset,
        a.ca_dst_offset,
        a.ca_count,
    )
    .await?;
    let mds = ctx.mds.clone();
    let plan = pair.plan;
    if a.ca_synchronous || plan.count <= SYNC_COPY_MAX {
        return match copy_now(&mds, &plan, None).await {
            Outcome::Done(w) => {
                mds.copies().note_sync();
                Ok(CopyResOk {
                    cr_response: w,
                    cr_requirements: CopyRequirements4 {
                        cr_consecutive: true,
                        cr_synchronous: true,
                    },
                })
            }
            Outcome::Failed { status, copied } => {
                mds.copies().note_failed();
                tracing::info!(%status, copied, "synchronous COPY failed");
                Err(status)
            }
        };
    }
    let clientid = ctx.client()?;
    let keep = Duration::from_secs(u64::from(mds.cfg().lease_time.max(1)));
    let job = mds.copies().start(clientid, keep)?;
    let stateid = job.stateid;
    let wr_writeverf = verifier(&mds, &plan.dst)?;
    let dst_fh = pair.dst_fh;
    tokio::spawn(async move {
        let outcome = copy_now(&mds, &plan, Some(&job)).await;
        mds.copies().finish(&job, outcome.clone());
        if job.is_cancelled() {
            tracing::info!(clientid, "copy cancelled; no CB_OFFLOAD");
            return;
        }
        send_offload(&mds, clientid, dst_fh, stateid, outcome).await;
    });
    Ok(CopyResOk {
        cr_response: WriteResponse4 {
            wr_callback_id: vec![stateid],
            wr_count: 0,
            wr_committed: StableHow4::UNSTABLE4,
            wr_writeverf,
        },
        cr_requirements: CopyRequirements4 {
            cr_consecutive: true,
            cr_synchronous: false,
        },
    })
}

/// CB_OFFLOAD (RFC 7862 section 16.1) over one of the client's back channels. A client
/// without one, or whose callback fails, still learns the outcome with OFFLOAD_STATUS.
async fn send_offload(
    mds: &Mds,
    clientid: u64,
    coa_fh: NfsFh4,
    coa_stateid: Stateid4,
    outcome: Outcome,
) {
    let info = match outcome {
        Outcome::Done(w) => OffloadInfo4::Ok(w),
        Outcome::Failed { status, copied } => OffloadInfo4::Failed {
            coa_status: status,
            coa_bytes_copied: copied,
        },
    };
    let Some(session) = crate::state::recall::callback_session(mds.core(), clientid) else {
        tracing::info!(
            clientid,
            "no back channel for CB_OFFLOAD: OFFLOAD_STATUS will tell"
        );
        return;
    };
    let args = CbOffloadArgs {
        coa_fh,
        coa_stateid,
        coa_offload_info: info,
    };
    match crate::callback::cb_compound(mds.core(), &session, vec![NfsCbArgop4::Offload(args)]).await
    {
        Ok(res) => {
            let status = res.resarray.iter().find_map(|r| match r {
                NfsCbResop4::Offload(r) => Some(r.status()),
                _ => None,
            });
            tracing::debug!(clientid, ?status, "CB_OFFLOAD answered");
        }
        Err(e) => tracing::info!(clientid, "CB_OFFLOAD failed: {e}"),
    }
}

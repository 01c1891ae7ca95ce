//! LAYOUTGET (RFC 8881 section 18.43): a file layout over the file's stripe set, or a flex
//! files layout (RFC 8435) of its data server.

use super::layout::{ds_fh_codec, file_layout, file_stripes, flex_layout, LayoutOf, WHOLE_FILE};
use super::open::regular_file;
use crate::compound::Ctx;
use crate::state::layout::LayoutTable;
use crate::state::open::Io;
use crate::state::stateid::{classify, resolve_current};
use nfs_proto::nfs4::*;
use nfs_proto::xdr::to_bytes;

/// LAYOUTGET (RFC 8881 section 18.43).
pub async fn layoutget(ctx: &mut Ctx, a: &LayoutGetArgs) -> LayoutGetRes {
    match layoutget_inner(ctx, a).await {
        Ok(ok) => {
            ctx.cstateid = Some(ok.logr_stateid);
            LayoutGetRes::Ok(ok)
        }
        Err(NfsStat4::NFS4ERR_LAYOUTTRYLATER) => LayoutGetRes::TryLater {
            logr_will_signal_layout_avail: false,
        },
        Err(s) => LayoutGetRes::Err(s),
    }
}

async fn layoutget_inner(ctx: &mut Ctx, a: &LayoutGetArgs) -> Result<LayoutGetResOk, NfsStat4> {
    let clientid = ctx.client()?;
    let fh = ctx.fh()?;
    let cluster = &ctx.mds.cfg().cluster;
    // Section 18.43.3: a layout type the server does not support. Flex files layouts (RFC
    // 8435) where the export serves them.
    let flex = match a.loga_layout_type {
        Layouttype4::LAYOUT4_NFSV4_1_FILES => false,
        Layouttype4::LAYOUT4_FLEX_FILES
            if cluster.layout_for(fh.export).is_some_and(|p| p.flex_files) =>
        {
            true
        }
        _ => return Err(NfsStat4::NFS4ERR_UNKNOWN_LAYOUTTYPE),
    };
    // No layouts for this file system (layouts off, or no data servers): the client does
    // its I/O through the MDS (section 18.43.3, NFS4ERR_LAYOUTUNAVAILABLE).
    if !cluster.grants_layouts() {
        return Err(NfsStat4::NFS4ERR_LAYOUTUNAVAILABLE);
    }
    // LAYOUTIOMODE4_ANY is for returns and recalls only (section 3.3.20).
    if !matches!(
        a.loga_iomode,
        Layoutiomode4::LAYOUTIOMODE4_READ | Layoutiomode4::LAYOUTIOMODE4_RW
    ) {
        return Err(NfsStat4::NFS4ERR_BADIOMODE);
    }
    // Section 18.43.3: loga_length below loga_minlength, or a minimum range past the end of
    // the offset space, is NFS4ERR_INVAL.
    if a.loga_length < a.loga_minlength
        || (a.loga_length != WHOLE_FILE && a.loga_offset.checked_add(a.loga_length).is_none())
        || a.loga_offset.checked_add(a.loga_minlength).is_none()
    {
        return Err(NfsStat4::NFS4ERR_INVAL);
    }
    let inode = ctx.inode()?;
    regular_file(&inode)?;
    let stateid = resolve_current(&a.loga_stateid, ctx.cstateid.as_ref())?;
    let rw = a.loga_iomode == Layoutiomode4::LAYOUTIOMODE4_RW;
    // Section 12.5.2: the first LAYOUTGET of a file carries open, lock or delegation state
    // of this client and file; later ones the layout stateid (checked by the table). A
    // special stateid shows no state at all. An RW layout needs write access under that
    // state (an RW layout's DS filehandles write the data servers' objects, which check
    // only that the layout is live: cluster::ds_fh): a read-only open gets
    // NFS4ERR_OPENMODE, as its WRITE would. The file's mode bits are not asked, as for
    // WRITE under an open (a file created 0444 is written through its creating open).
    if !LayoutTable::is_layout_stateid(&stateid) {
        if classify(&stateid)?.is_some() {
            return Err(NfsStat4::NFS4ERR_BAD_STATEID);
        }
        ctx.mds.tables().opens().check_io(
            clientid,
            inode.fileid,
            &stateid,
            if rw { Io::Write } else { Io::Read },
        )?;
    } else if rw && !may_write(ctx, clientid, inode.fileid) {
        return Err(NfsStat4::NFS4ERR_OPENMODE);
    }
    let set = file_stripes(ctx, fh.export, &inode, rw)
        .await?
        .ok_or(NfsStat4::NFS4ERR_LAYOUTUNAVAILABLE)?;
    // A file being re-silvered gets no layout until it is done (I/O through the MDS waits
    // too); the guard also keeps a re-silver from starting before this grant is recorded.
    let pnfs = ctx.mds.pnfs().clone();
    let _guard = if set.is_mirrored() {
        if !flex {
            // A file layout cannot name copies: writes through it would reach one.
            return Err(NfsStat4::NFS4ERR_LAYOUTUNAVAILABLE);
        }
        Some(
            pnfs.mirrors()
                .io(inode.fileid)
                .ok_or(NfsStat4::NFS4ERR_LAYOUTTRYLATER)?,
        )
    } else {
        None
    };
    let positions = layout_copies(ctx, fh.export, inode.fileid, &set, rw).await?;
    let layout_stateid = ctx.mds.tables().layouts().get_of_type(
        clientid,
        inode.fileid,
        &stateid,
        a.loga_iomode,
        true,
        a.loga_layout_type,
    )?;
    let codec = ds_fh_codec(
        ctx.mds.store().server_key(),
        ctx.mds.store().boot_epoch() as u16,
    );
    let of = LayoutOf {
        fileid: inode.fileid,
        generation: inode.generation,
        layout: layout_stateid.other,
        rw,
        clientid,
    };
    // A flex files layout names the stateid for I/O on the data servers (RFC 8435 section
    // 5.1): its own, which our tightly coupled data servers take for the handles bound to
    // it, for as long as the layout lives. (An open or delegation stateid would die first
    // when the client closes that open or returns that delegation while the layout lives
    // on, and the Linux driver sends `ffds_stateid` as given for the layout's life.)
    let io_stateid = flex.then_some(layout_stateid);
    let body = match io_stateid {
        Some(io) => {
            let ring_len = ctx
                .mds
                .ring(set.device.generation)
                .map_or(0, |r| r.servers.len());
            flex_layout(&codec, &set, ring_len, of, io, &positions)?
        }
        None => file_layout(&codec, &set, of)?,
    };
    // Granted first, then marked durably (a no-op without a sync when marked already, as
    // after fixing a new file's stripe set above): in this order a concurrent settling of
    // the file either sees the grant or is followed by this mark (crate::pnfs::settle).
    // A file this COMPOUND's OPEN created was marked in the create's transaction (durable
    // by the reply: its own commit, or the COMPOUND's sync) and is new to the settler,
    // which settles only what it holds in memory: the mark is only noted there.
    if rw {
        let settler = ctx.mds.pnfs().settler();
        settler.granted(inode.fileid, clientid);
        if ctx.folded_mark == Some(inode.fileid) {
            settler.marked(inode.fileid);
        } else {
            settler.mark(ctx.mds.store(), inode.fileid).await?;
        }
    }
    let ok = LayoutGetResOk {
        logr_return_on_close: true,
        logr_stateid: layout_stateid,
        logr_layout: vec![Layout4 {
            lo_offset: 0,
            lo_length: WHOLE_FILE,
            lo_iomode: a.loga_iomode,
            lo_content: LayoutContent4 {
                loc_type: a.loga_layout_type,
                loc_body: body,
            },
        }],
    };
    // The reply must fit loga_maxcount (section 18.43.3: NFS4ERR_TOOSMALL).
    if to_bytes(&ok).len() > a.loga_maxcount as usize {
        return Err(NfsStat4::NFS4ERR_TOOSMALL);
    }
    // So the data servers answer at the file's end themselves (the client's first READs may
    // come before the hint and go to the MDS). Not for an empty file this COMPOUND's OPEN
    // just made: no client reads a file it knows to be empty, and once one writes, its
    // objects reach past a hint of 0 and the data servers take that hint as stale anyway;
    // the first LAYOUTCOMMIT (or truncate) tells them. That saves a control call to every
    // data server of the stripe set on each create (issue 22).
    let new_and_empty = ctx.folded_mark == Some(inode.fileid) && inode.size == 0;
    if !new_and_empty {
        crate::pnfs::dsobjects::hint_ends(ctx.mds.namespace(), ctx.mds.pnfs(), inode.fileid);
    }
    Ok(ok)
}

/// The window positions of `set` a layout of `fileid` names. Without mirrors, all of
/// them, and a file whose data servers are not all up gets no layout until they are
/// (NFS4ERR_LAYOUTTRYLATER: its data is there, and I/O through the MDS waits for them too).
/// With mirrors, the copies that are not stale and whose data server is up and not reported
/// failing (up ones if that leaves none; NFS4ERR_LAYOUTTRYLATER if none is up): an RW layout
/// leaves the others behind, so they are marked stale, durably, before it is granted
/// ([`crate::pnfs::mirrors`]); a READ layout only leaves them out.
async fn layout_copies(
    ctx: &Ctx,
    export: u16,
    fileid: u64,
    set: &crate::store::StripeSet,
    rw: bool,
) -> Result<Vec<u32>, NfsStat4> {
    let servers = ctx.mds.stripe_servers(set)?;
    let devices = ctx.mds.devices();
    if !set.is_mirrored() {
        if servers.iter().any(|&id| !devices.is_up(id)) {
            return Err(NfsStat4::NFS4ERR_LAYOUTTRYLATER);
        }
        return Ok((0..u32::from(set.device.count)).collect());
    }
    let pnfs = ctx.mds.pnfs();
    let stale = pnfs.mirrors().stale(fileid);
    let live: Vec<(u32, u16)> = set
        .copies(0)
        .filter(|p| !stale.contains(p))
        .filter_map(|p| Some((p, *servers.get(p as usize)?)))
        .collect();
    let up: Vec<(u32, u16)> = live
        .iter()
        .copied()
        .filter(|&(_, ds)| devices.is_up(ds))
        .collect();
    let sound: Vec<u32> = up
        .iter()
        .filter(|&&(_, ds)| !pnfs.reports().failing(u32::from(ds)))
        .map(|&(p, _)| p)
        .collect();
    let named = if sound.is_empty() {
        up.iter().map(|&(p, _)| p).collect::<Vec<u32>>()
    } else {
        sound
    };
    if named.is_empty() {
        return Err(NfsStat4::NFS4ERR_LAYOUTTRYLATER);
    }
    if rw {
        let behind: Vec<u32> = live
            .iter()
            .map(|&(p, _)| p)
            .filter(|p| !named.contains(p))
            .collect();
        if !behind.is_empty() {
            pnfs.mirrors()
                .mark(ctx.mds.store(), fileid, export, behind)
                .await?;
        }
    }
    Ok(named)
}

/// Whether the client may write `fileid` under the state it holds: a write open, or a write
/// delegation (the Linux client asks for an RW layout with its delegation stateid, and keeps
/// writing under the delegation after CLOSE).
fn may_write(ctx: &Ctx, clientid: u64, fileid: u64) -> bool {
    let opens = ctx.mds.tables().opens();
    opens.client_has_write_open(clientid, fileid)
        || matches!(
            opens.delegs.held_by(clientid, fileid),
            Some((_, crate::state::deleg::DelegType::Write))
        )
}

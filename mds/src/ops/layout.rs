//! File layouts (RFC 8881 chapter 13, LAYOUT4_NFSV4_1_FILES), MDS side.
//!
//! So far: the choice of a file's stripe set at its first layout (or at its create by OPEN
//! under a directory with a layout policy, [`fix_directory_stripes`]), LAYOUTGET of
//! whole-file layouts, LAYOUTRETURN, LAYOUTCOMMIT, GETDEVICEINFO and GETDEVICELIST.
//!
//! ```text
//!  LAYOUTGET: type FILES? ─> layouts on? ─> iomode, lengths ─> regular file ─> stateid
//!             ─> file_stripes (first layout or MDS WRITE: durable) ─> LayoutTable::get
//!             ─> nfsv4_1_file_layout4 { device of the stripe set, unit|DENSE, 0, 0,
//!                                       one DS filehandle per stripe index }
//! ```

use bytes::Bytes;
use cluster::ds_fh::{DsFh, DsFhCodec};
use cluster::keys::DsKeys;
use nfs_proto::nfs4::layout_files::{Nfsv41FileLayout4, NFL4_UFLG_DENSE};
use nfs_proto::nfs4::*;
use nfs_proto::xdr::to_bytes;
use tracing::warn;

use super::open::regular_file;
use crate::compound::Ctx;
use crate::config::{ClusterConfig, LayoutPolicy};
use crate::state::layout::{LayoutError, LayoutTable};
use crate::state::open::Io;
use crate::state::stateid::{classify, resolve_current};
use crate::store::{system_time_now, StripeSet};

/// The whole file: the only range this server grants (`NFS4_UINT64_MAX`, RFC 8881 section
/// 12.2.9); the Linux file layout driver does I/O through the MDS for any other.
const WHOLE_FILE: u64 = u64::MAX;

/// The stripe set a file gets under `policy` (its export's, [`ClusterConfig::layout_for`], or
/// its directory's, [`crate::dirlayout`]): the policy's stripe unit, count and packing, and a
/// window of `ring` (the current generation's) whose first server is the file id modulo the
/// ring size, so files spread over the ring without a device id per file (docs/design.md,
/// "pNFS plan"). Servers for which `usable` says no (down ones: RFC 8881 section 13.3, a
/// layout names servers the client can use) are skipped: the window moves on around the
/// ring, and if no window of the policy's count has only usable servers, the widest one that
/// does is taken. `None` when the ring is empty or none of it is usable.
pub fn stripe_set_for(
    policy: LayoutPolicy,
    ring: &layouts::Ring,
    fileid: u64,
    usable: impl Fn(u32) -> bool,
) -> Option<StripeSet> {
    let n = u64::try_from(ring.servers.len()).ok().filter(|&n| n > 0)?;
    let start = usize::try_from(fileid % n).ok()?;
    let count = usize::try_from(policy.stripe_count).ok()?;
    let device = (1..=count)
        .rev()
        .find_map(|c| ring.window_where(c, start, |s| usable(s.id)))?;
    Some(StripeSet {
        unit: policy.stripe_unit,
        device,
        packing: policy.packing,
    })
}

/// A new stripe set for file `fileid` under `policy` from the current ring and the data
/// servers up now: NFS4ERR_LAYOUTUNAVAILABLE without data servers, NFS4ERR_LAYOUTTRYLATER
/// while none is up (section 18.43.3: the layout is only temporarily unavailable).
pub fn new_stripe_set(
    mds: &crate::server::Mds,
    policy: LayoutPolicy,
    fileid: u64,
) -> Result<StripeSet, NfsStat4> {
    let ring = mds
        .ring(mds.ring_generation)
        .ok_or(NfsStat4::NFS4ERR_LAYOUTUNAVAILABLE)?;
    let up = |id: u32| {
        u16::try_from(id)
            .ok()
            .and_then(|id| mds.devices.status(id))
            .is_some_and(|s| s.up)
    };
    stripe_set_for(policy, &ring, fileid, up).ok_or(NfsStat4::NFS4ERR_LAYOUTTRYLATER)
}

/// Fixes the stripe set of regular file `fileid`, just created by OPEN in directory `dir` of
/// `export`, from the policy of the nearest configured directory at or above `dir`
/// ([`crate::dirlayout`]), before the OPEN reply, so that its first layout (or WRITE) finds
/// the directory's policy rather than the export's. Does nothing unless the MDS grants
/// layouts and some directory has a policy, nor when no configured directory is above `dir`.
/// Never fails the OPEN (the file exists already): when no data server is up, or the store
/// fails, it logs a warning and leaves the set unfixed, and the file gets its export's
/// policy at its first LAYOUTGET or WRITE. A set fixed meanwhile by another client's
/// LAYOUTGET stays (`Store::fix_stripes` keeps the first).
pub async fn fix_directory_stripes(ctx: &Ctx, export: u16, dir: u64, fileid: u64) {
    let mds = &ctx.mds;
    if mds.dir_layouts.is_empty() || !mds.cfg.cluster.grants_layouts() {
        return;
    }
    let Some(root) = mds.export_root_fileid(export) else {
        return;
    };
    let policy = match mds.dir_layouts.for_directory(&mds.store, export, root, dir) {
        Ok(Some(p)) => p,
        Ok(None) => return,
        Err(e) => {
            warn!(
                fileid,
                dir, "directory layout policy not found: {e}; the export's applies"
            );
            return;
        }
    };
    let set = match new_stripe_set(mds, policy, fileid) {
        Ok(set) => set,
        Err(e) => {
            let why = match e {
                NfsStat4::NFS4ERR_LAYOUTTRYLATER => "no data server is up",
                _ => "no data servers",
            };
            warn!(
                fileid,
                "new file left without its directory's layout policy ({why}): the export's \
                 policy applies at its first LAYOUTGET or WRITE"
            );
            return;
        }
    };
    if let Err(e) = mds.store.fix_stripes(fileid, set, false).await {
        warn!(
            fileid,
            "directory layout policy not recorded: {e}; the export's applies"
        );
    }
}

/// The stripe set regular file `inode` of `export` keeps its data on, fixed (durably) at its
/// first LAYOUTGET or its first WRITE through the MDS, whichever comes first, so both paths
/// find the same DS objects (`crate::datapath`): the set it has; else, when the MDS grants
/// layouts, the policy's ([`stripe_set_for`]) unless its MDS-local object already holds
/// something (written before layouts were on: a stripe set would hide it); else `None`, and
/// its data stays in the MDS's own object (LAYOUTGET answers NFS4ERR_LAYOUTUNAVAILABLE).
///
/// `rw`: an RW layout is being granted, so a new set is fixed in the same transaction as
/// the file's mark ([`crate::settle`]).
pub async fn file_stripes(
    ctx: &Ctx,
    export: u16,
    inode: &crate::store::Inode,
    rw: bool,
) -> Result<Option<StripeSet>, NfsStat4> {
    let fileid = inode.fileid;
    if let Some(set) = ctx.mds.store.stripes(fileid)? {
        return Ok(Some(set));
    }
    let cluster = &ctx.mds.cfg.cluster;
    if !cluster.grants_layouts() {
        return Ok(None);
    }
    let data = ctx.mds.data.clone();
    if nfs_server::io::blocking(move || data.size(pfs_core::ObjectId::whole(fileid))).await? > 0 {
        return Ok(None);
    }
    let Some(policy) = cluster.layout_for(export) else {
        return Ok(None);
    };
    let proposed = match new_stripe_set(&ctx.mds, policy, fileid) {
        Ok(set) => set,
        Err(NfsStat4::NFS4ERR_LAYOUTUNAVAILABLE) => return Ok(None),
        Err(e) => return Err(e),
    };
    Ok(Some(ctx.mds.store.fix_stripes(fileid, proposed, rw).await?))
}

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
    // Section 18.43.3: a layout type the server does not support.
    if a.loga_layout_type != Layouttype4::LAYOUT4_NFSV4_1_FILES {
        return Err(NfsStat4::NFS4ERR_UNKNOWN_LAYOUTTYPE);
    }
    // No layouts for this file system (layouts off, or no data servers): the client does
    // its I/O through the MDS (section 18.43.3, NFS4ERR_LAYOUTUNAVAILABLE).
    let cluster = &ctx.mds.cfg.cluster;
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
        ctx.mds.opens.lock().expect("opens").check_io(
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
    // A file whose data servers are not all up gets no layout until they are: its data is
    // there, and I/O through the MDS waits for them too.
    for id in ctx.mds.stripe_servers(&set)? {
        if !ctx.mds.devices.status(id).is_some_and(|s| s.up) {
            return Err(NfsStat4::NFS4ERR_LAYOUTTRYLATER);
        }
    }
    let layout_stateid = ctx.mds.layouts.lock().expect("layouts").get(
        clientid,
        inode.fileid,
        &stateid,
        a.loga_iomode,
        true,
    )?;
    let codec = ds_fh_codec(
        ctx.mds.store.server_key(),
        ctx.mds.store.boot_epoch() as u16,
    );
    let body = file_layout(
        &codec,
        &set,
        LayoutOf {
            fileid: inode.fileid,
            generation: inode.generation,
            layout: layout_stateid.other,
            rw,
            clientid,
        },
    )?;
    // Granted first, then marked durably (a no-op without a sync when marked already, as
    // after fixing a new file's stripe set above): in this order a concurrent settling of
    // the file either sees the grant or is followed by this mark (crate::settle).
    if rw {
        ctx.mds.settler.granted(inode.fileid);
        ctx.mds.settler.mark(&ctx.mds, inode.fileid).await?;
    }
    let ok = LayoutGetResOk {
        logr_return_on_close: true,
        logr_stateid: layout_stateid,
        logr_layout: vec![Layout4 {
            lo_offset: 0,
            lo_length: WHOLE_FILE,
            lo_iomode: a.loga_iomode,
            lo_content: LayoutContent4 {
                loc_type: Layouttype4::LAYOUT4_NFSV4_1_FILES,
                loc_body: body,
            },
        }],
    };
    // The reply must fit loga_maxcount (section 18.43.3: NFS4ERR_TOOSMALL).
    if to_bytes(&ok).len() > a.loga_maxcount as usize {
        return Err(NfsStat4::NFS4ERR_TOOSMALL);
    }
    // So the data servers answer at the file's end themselves (the client's first READs may
    // come before the hint and go to the MDS).
    crate::dsobjects::hint_ends(&ctx.mds, inode.fileid);
    Ok(ok)
}

/// LAYOUTRETURN (RFC 8881 section 18.44).
///
/// `LAYOUTRETURN4_FILE` drops the iomode (ANY: both) of the current file's layout, whatever
/// range it names: this server grants whole-file layouts only, and the Linux client returns
/// whole files. `LAYOUTRETURN4_ALL` drops every layout of the client. `LAYOUTRETURN4_FSID`
/// drops those of the current filehandle's file system; the layout table does not record a
/// layout's export, so it is served only when there is one export (then it is ALL) and is
/// NFS4ERR_NOTSUPP otherwise.
pub fn layoutreturn(ctx: &mut Ctx, a: &LayoutReturnArgs) -> LayoutReturnRes {
    match layoutreturn_inner(ctx, a) {
        Ok(r) => {
            if let LayoutreturnStateid::Present(s) = r {
                ctx.cstateid = Some(s);
            }
            LayoutReturnRes::Ok(r)
        }
        Err(s) => LayoutReturnRes::Err(s),
    }
}

fn layoutreturn_inner(
    ctx: &mut Ctx,
    a: &LayoutReturnArgs,
) -> Result<LayoutreturnStateid, NfsStat4> {
    let clientid = ctx.client()?;
    if a.lora_layout_type != Layouttype4::LAYOUT4_NFSV4_1_FILES {
        return Err(NfsStat4::NFS4ERR_UNKNOWN_LAYOUTTYPE);
    }
    match &a.lora_layoutreturn {
        Layoutreturn4::File(f) => {
            let fileid = ctx.fh()?.fileid;
            let stateid = resolve_current(&f.lrf_stateid, ctx.cstateid.as_ref())?;
            let left = ctx.mds.layouts.lock().expect("layouts").return_file(
                clientid,
                fileid,
                &stateid,
                a.lora_iomode,
            );
            match left {
                Ok(Some(s)) => Ok(LayoutreturnStateid::Present(s)),
                // A layout of an earlier boot is gone already: returning it is done (the
                // Linux client's return-on-close in a CLOSE compound must not fail the CLOSE).
                Ok(None) | Err(LayoutError::Stale) => Ok(LayoutreturnStateid::Absent),
                Err(e) => Err(e.into()),
            }
        }
        Layoutreturn4::Fsid => {
            // The pseudo file system holds no regular files, so no layouts.
            if ctx.fh()?.export == crate::exports::PSEUDO_EXPORT {
                return Ok(LayoutreturnStateid::Absent);
            }
            if ctx.mds.cfg.exports.len() != 1 {
                return Err(NfsStat4::NFS4ERR_NOTSUPP);
            }
            ctx.mds
                .layouts
                .lock()
                .expect("layouts")
                .return_all(clientid, |_| true);
            Ok(LayoutreturnStateid::Absent)
        }
        Layoutreturn4::All => {
            ctx.mds
                .layouts
                .lock()
                .expect("layouts")
                .return_all(clientid, |_| true);
            Ok(LayoutreturnStateid::Absent)
        }
        Layoutreturn4::Other(_) => Err(NfsStat4::NFS4ERR_INVAL),
    }
}

/// LAYOUTCOMMIT (RFC 8881 section 18.42): after writes through the data servers, the size
/// grows to `loca_last_write_offset + 1` if that is larger, mtime becomes
/// `loca_time_modify` if given (else now), and the change attribute moves on, durably
/// before the reply. Needs an RW layout of this file under the client's layout stateid:
/// another stateid is NFS4ERR_BAD_STATEID, a layout without RW NFS4ERR_BADLAYOUT.
pub async fn layoutcommit(ctx: &mut Ctx, a: &LayoutCommitArgs) -> LayoutCommitRes {
    match layoutcommit_inner(ctx, a).await {
        Ok(ok) => LayoutCommitRes::Ok(ok),
        Err(s) => LayoutCommitRes::Err(s),
    }
}

async fn layoutcommit_inner(
    ctx: &mut Ctx,
    a: &LayoutCommitArgs,
) -> Result<LayoutCommitResOk, NfsStat4> {
    let clientid = ctx.client()?;
    let inode = ctx.inode()?;
    regular_file(&inode)?;
    if a.loca_length != WHOLE_FILE && a.loca_offset.checked_add(a.loca_length).is_none() {
        return Err(NfsStat4::NFS4ERR_INVAL);
    }
    let stateid = resolve_current(&a.loca_stateid, ctx.cstateid.as_ref())?;
    if !LayoutTable::is_layout_stateid(&stateid) {
        return Err(NfsStat4::NFS4ERR_BAD_STATEID);
    }
    let held = ctx
        .mds
        .layouts
        .lock()
        .expect("layouts")
        .modes(clientid, inode.fileid, &stateid);
    match held {
        Ok(modes) if modes.rw => {}
        Ok(_) => return Err(NfsStat4::NFS4ERR_BADLAYOUT),
        // The layout of an earlier boot (section 18.42.3): a LAYOUTCOMMIT that was in flight
        // when the MDS went down, resent after the client's recovery with the stateid it
        // had (the Linux client never sets loca_reclaim). Taken from a client that has the
        // file open for writing again; the data servers hold the bytes either way, and
        // the file is marked until its size is settled with them (crate::settle).
        Err(LayoutError::Stale)
            if ctx
                .mds
                .opens
                .lock()
                .expect("opens")
                .client_has_write_open(clientid, inode.fileid) =>
        {
            tracing::info!(
                clientid,
                fileid = inode.fileid,
                "LAYOUTCOMMIT under a layout of an earlier boot taken (the client has the file open for writing)"
            );
        }
        Err(e) => return Err(e.into()),
    }
    let end = match a.loca_last_write_offset {
        Newoffset4::Present { no_offset } => {
            no_offset.checked_add(1).ok_or(NfsStat4::NFS4ERR_INVAL)?
        }
        Newoffset4::Absent => 0,
    };
    let now = system_time_now();
    let mtime = match a.loca_time_modify {
        Newtime4::Changed { nt_time } => nt_time,
        Newtime4::Unchanged => now,
    };
    let after = ctx
        .mds
        .store
        .record_layout_commit(inode.fileid, end, mtime, now)
        .await?;
    if after.size != inode.size {
        crate::dsobjects::hint_ends(&ctx.mds, inode.fileid);
    }
    Ok(LayoutCommitResOk {
        locr_newsize: if after.size != inode.size {
            Newsize4::Changed {
                ns_size: after.size,
            }
        } else {
            Newsize4::Unchanged
        },
    })
}

/// GETDEVICEINFO (RFC 8881 section 18.40): the data servers of a device (a window of the
/// ring), stripe indices `0..count`, each server's addresses with an unspecified IP
/// replaced by the local address of the connection this request came on, so a client gets
/// the address it reached the MDS by (docs/design.md, "Cluster configuration"). A reply
/// larger than `gdia_maxcount` is NFS4ERR_TOOSMALL with the size needed.
///
/// Device ID notifications (CHANGE, DELETE) are accepted when asked for: a device's servers
/// come from the ring generation named in its id and never change, no device is ever
/// deleted, and a change of a data server's addresses (one that registers from elsewhere) is
/// told with CB_NOTIFY_DEVICEID to the clients that asked ([`crate::notify`]). It matters:
/// the Linux client keeps a device in its cache only while the server accepts both
/// (otherwise `nocache`, and a GETDEVICEINFO for every new file's layout).
pub fn getdeviceinfo(ctx: &mut Ctx, a: &GetDeviceInfoArgs) -> GetDeviceInfoRes {
    match getdeviceinfo_inner(ctx, a) {
        Ok(ok) => {
            let needed = to_bytes(&ok).len();
            if needed > a.gdia_maxcount as usize {
                return GetDeviceInfoRes::TooSmall {
                    gdir_mincount: Count4::try_from(needed).unwrap_or(Count4::MAX),
                };
            }
            GetDeviceInfoRes::Ok(ok)
        }
        Err(s) => GetDeviceInfoRes::Err(s),
    }
}

fn getdeviceinfo_inner(ctx: &Ctx, a: &GetDeviceInfoArgs) -> Result<GetDeviceInfoResOk, NfsStat4> {
    let clientid = ctx.client()?;
    if a.gdia_layout_type != Layouttype4::LAYOUT4_NFSV4_1_FILES {
        return Err(NfsStat4::NFS4ERR_UNKNOWN_LAYOUTTYPE);
    }
    let cluster = &ctx.mds.cfg.cluster;
    // A device this server never made, or of another ring generation: section 18.40.3
    // (NFS4ERR_NOENT).
    if !cluster.grants_layouts() {
        return Err(NfsStat4::NFS4ERR_NOENT);
    }
    let device = layouts::Device::from_id(&a.gdia_device_id).ok_or(NfsStat4::NFS4ERR_NOENT)?;
    let via = ctx.session.conn.local().ip();
    let addr = ctx
        .mds
        .device_ring(device.generation)
        .ok_or(NfsStat4::NFS4ERR_NOENT)?
        .describe(&device, via)
        .map_err(|_| NfsStat4::NFS4ERR_NOENT)?;
    let notification = a.gdia_notify_types.intersect(&Bitmap4::from_bits([
        NotifyDeviceidType4::NOTIFY_DEVICEID4_CHANGE.0,
        NotifyDeviceidType4::NOTIFY_DEVICEID4_DELETE.0,
    ]));
    if notification.contains(NotifyDeviceidType4::NOTIFY_DEVICEID4_CHANGE.0) {
        ctx.mds.device_watch.watch(clientid, a.gdia_device_id);
    }
    Ok(GetDeviceInfoResOk {
        gdir_device_addr: addr.to_device_addr(),
        gdir_notification: notification,
    })
}

/// The devices new layouts may name under the current policy: for every stripe count in use
/// (the cluster's, each export's, and each of `directories`: the configured directories'
/// policies), the window of that many data servers of `ring` (the current generation's)
/// starting at each ring position, in device id order. (Narrower windows, taken while data
/// servers are down, are described on request but not listed.)
pub fn device_list(
    cluster: &ClusterConfig,
    ring: &layouts::Ring,
    directories: impl IntoIterator<Item = LayoutPolicy>,
) -> Vec<Deviceid4> {
    if !cluster.grants_layouts() {
        return Vec::new();
    }
    let n = ring.servers.len();
    let mut counts: Vec<u32> = std::iter::once(0)
        .chain(cluster.layout.exports.iter().map(|e| e.export))
        .filter_map(|export| cluster.layout_for(export).map(|p| p.stripe_count))
        .chain(directories.into_iter().map(|p| p.stripe_count))
        .collect();
    counts.sort_unstable();
    counts.dedup();
    let mut ids: Vec<Deviceid4> = counts
        .iter()
        .flat_map(|&count| {
            let ring = &ring;
            (0..n).filter_map(move |first| ring.device(count as usize, first).map(|d| d.id()))
        })
        .collect();
    ids.sort_unstable();
    ids.dedup();
    ids
}

/// GETDEVICELIST (RFC 8881 section 18.41): [`device_list`] in pages of `gdla_maxdevices`;
/// the cookie is the index of the next device, the verifier the ring generation (another
/// one is NFS4ERR_NOT_SAME: the list changed). A `gdla_maxdevices` of 0 is NFS4ERR_INVAL.
pub fn getdevicelist(ctx: &mut Ctx, a: &GetDeviceListArgs) -> GetDeviceListRes {
    match getdevicelist_inner(ctx, a) {
        Ok(ok) => GetDeviceListRes::Ok(ok),
        Err(s) => GetDeviceListRes::Err(s),
    }
}

fn getdevicelist_inner(ctx: &Ctx, a: &GetDeviceListArgs) -> Result<GetDeviceListResOk, NfsStat4> {
    ctx.client()?;
    ctx.fh()?;
    if a.gdla_layout_type != Layouttype4::LAYOUT4_NFSV4_1_FILES {
        return Err(NfsStat4::NFS4ERR_UNKNOWN_LAYOUTTYPE);
    }
    if a.gdla_maxdevices == 0 {
        return Err(NfsStat4::NFS4ERR_INVAL);
    }
    let mut verf = [0u8; 8];
    verf[4..].copy_from_slice(&ctx.mds.ring_generation.to_be_bytes());
    if a.gdla_cookie != 0 && a.gdla_cookieverf != verf {
        return Err(NfsStat4::NFS4ERR_NOT_SAME);
    }
    let ids = ctx
        .mds
        .ring(ctx.mds.ring_generation)
        .map(|ring| device_list(&ctx.mds.cfg.cluster, &ring, ctx.mds.dir_layouts.policies()))
        .unwrap_or_default();
    let start = usize::try_from(a.gdla_cookie).map_err(|_| NfsStat4::NFS4ERR_BAD_COOKIE)?;
    if start > ids.len() {
        return Err(NfsStat4::NFS4ERR_BAD_COOKIE);
    }
    let end = ids
        .len()
        .min(start.saturating_add(a.gdla_maxdevices as usize));
    Ok(GetDeviceListResOk {
        gdlr_cookie: end as u64,
        gdlr_cookieverf: verf,
        gdlr_deviceid_list: ids[start..end].to_vec(),
        gdlr_eof: end == ids.len(),
    })
}

/// Whether the client may write `fileid` under the state it holds: a write open, or a write
/// delegation (the Linux client asks for an RW layout with its delegation stateid, and keeps
/// writing under the delegation after CLOSE).
fn may_write(ctx: &Ctx, clientid: u64, fileid: u64) -> bool {
    let opens = ctx.mds.opens.lock().expect("opens");
    opens.client_has_write_open(clientid, fileid)
        || matches!(
            opens.delegs.held_by(clientid, fileid),
            Some((_, crate::state::deleg::DelegType::Write))
        )
}

/// Which layout a set of DS filehandles is made for (`cluster::ds_fh`).
#[derive(Clone, Copy, Debug)]
pub struct LayoutOf {
    /// The file.
    pub fileid: u64,
    /// Its generation.
    pub generation: u32,
    /// The layout stateid's `other`: the handles work while it lives.
    pub layout: crate::devices::Other,
    /// An RW layout (else READ).
    pub rw: bool,
    /// Its holder.
    pub clientid: u64,
}

/// The `nfsv4_1_file_layout4` of a stripe set (RFC 8881 section 13.3): its device, the
/// stripe unit (with `NFL4_UFLG_DENSE` for dense packing), first stripe index 0, pattern
/// offset 0, and one DS filehandle per stripe index, which the Linux client requires for
/// dense packing and accepts for sparse ("one per data server"), each bound to the layout.
pub fn file_layout(codec: &DsFhCodec, set: &StripeSet, of: LayoutOf) -> Result<Bytes, NfsStat4> {
    let map = set.map().map_err(|_| NfsStat4::NFS4ERR_SERVERFAULT)?;
    let dense = if set.packing == layouts::Packing::Dense {
        NFL4_UFLG_DENSE
    } else {
        0
    };
    let body = Nfsv41FileLayout4 {
        nfl_deviceid: set.device.id(),
        nfl_util: map.unit | dense,
        nfl_first_stripe_index: map.first,
        nfl_pattern_offset: map.pattern_offset,
        nfl_fh_list: (0..set.device.count)
            .map(|stripe| {
                codec.encode(DsFh {
                    stripe,
                    fileid: of.fileid,
                    generation: of.generation,
                    rw: of.rw,
                    layout: of.layout,
                    clientid: of.clientid,
                })
            })
            .collect(),
    };
    Ok(to_bytes(&body))
}

/// The DS filehandle codec of this boot's keys (the key derives from the persistent server
/// key; the handles themselves die with their layout, and so with the boot).
pub fn ds_fh_codec(server_key: &[u8; 32], epoch: u16) -> DsFhCodec {
    DsFhCodec::new(DsKeys::derive(server_key, epoch).fh_key)
}

#[cfg(test)]
mod tests {

    use layouts::Packing;

    use super::*;
    use crate::config::{Backend, DataServerConfig, DirectoryLayout, ExportLayout};
    use nfs_proto::nfs4::Deviceid4;

    fn cluster(n: u16) -> ClusterConfig {
        ClusterConfig {
            data_servers: DataServerConfig::all_in_one(n),
            ..ClusterConfig::default()
        }
    }

    #[test]
    fn the_window_starts_at_the_file_id_modulo_the_ring() {
        let c = cluster(3);
        for fileid in 0..9u64 {
            let s = stripe_set_for(c.layout_for(0).unwrap(), &c.ring(4), fileid, |_| true).unwrap();
            assert_eq!(u64::from(s.device.first), fileid % 3, "file {fileid}");
            assert_eq!(s.device.count, 3);
            assert_eq!(s.device.generation, 4);
            assert_eq!(s.unit, c.layout.stripe_unit);
            assert_eq!(s.packing, Packing::Dense);
        }
    }

    #[test]
    fn the_export_policy_sets_unit_and_count() {
        let mut c = cluster(4);
        c.layout.exports.push(ExportLayout {
            export: 2,
            stripe_unit: Some(64 << 10),
            stripe_count: Some(2),
        });
        let ring = c.ring(1);
        let s = stripe_set_for(c.layout_for(2).unwrap(), &ring, 7, |_| true).unwrap();
        assert_eq!((s.unit, s.device.count, s.device.first), (64 << 10, 2, 3));
        let other = stripe_set_for(c.layout_for(0).unwrap(), &ring, 7, |_| true).unwrap();
        assert_eq!(other.device.count, 4);
    }

    #[test]
    fn shared_data_servers_get_sparse_packing() {
        let mut c = cluster(2);
        c.data_servers[1].backend = Backend::Shared;
        assert_eq!(
            stripe_set_for(c.layout_for(0).unwrap(), &c.ring(1), 1, |_| true)
                .unwrap()
                .packing,
            Packing::Sparse
        );
    }

    #[test]
    fn the_device_list_has_a_window_per_ring_position_and_stripe_count() {
        let mut c = cluster(3);
        let ring = c.ring(1);
        c.layouts = false;
        assert_eq!(
            device_list(&c, &ring, []),
            Vec::<Deviceid4>::new(),
            "layouts off"
        );
        c.layouts = true;
        let ids = device_list(&c, &ring, []);
        assert_eq!(ids.len(), 3);
        c.layout.exports.push(ExportLayout {
            export: 2,
            stripe_unit: None,
            stripe_count: Some(2),
        });
        let ids = device_list(&c, &ring, []);
        assert_eq!(ids.len(), 6);
        for id in &ids {
            let d = layouts::Device::from_id(id).unwrap();
            assert!(ring.members(&d).is_ok());
        }
        // A directory's policy of one data server adds the three windows of one.
        let dir = c
            .layout_for_directory(
                2,
                &DirectoryLayout {
                    export: Some(2),
                    path: "/d".into(),
                    stripe_unit: None,
                    stripe_count: Some(1),
                },
            )
            .unwrap();
        assert_eq!(device_list(&c, &ring, [dir, dir]).len(), 9);
        let ids = device_list(&c, &ring, [dir]);
        // Every file's stripe set names a listed device.
        for fileid in 0..12 {
            for policy in [c.layout_for(0).unwrap(), c.layout_for(2).unwrap(), dir] {
                let s = stripe_set_for(policy, &ring, fileid, |_| true).unwrap();
                assert!(ids.contains(&s.device.id()), "{fileid} {policy:?}");
            }
        }
    }

    #[test]
    fn without_data_servers_there_is_no_stripe_set() {
        let c = cluster(0);
        assert_eq!(c.layout_for(0), None);
        let policy = cluster(3).layout_for(0).unwrap();
        assert_eq!(stripe_set_for(policy, &c.ring(1), 5, |_| true), None);
    }

    #[test]
    fn down_data_servers_are_left_out_of_new_stripe_sets() {
        let c = cluster(4);
        let ring = c.ring(1);
        // File 1 would start at position 1 (server 2); server 3 is down, so no window of
        // four exists and the widest all-up window from position 1 onwards is taken.
        let s = stripe_set_for(c.layout_for(0).unwrap(), &ring, 1, |id| id != 3).unwrap();
        assert_eq!((s.device.count, s.device.first), (3, 3));
        let members: Vec<u32> = ring
            .members(&s.device)
            .unwrap()
            .iter()
            .map(|d| d.id)
            .collect();
        assert_eq!(members, vec![4, 1, 2]);
        assert_eq!(
            stripe_set_for(c.layout_for(0).unwrap(), &ring, 1, |_| false),
            None
        );
    }
}

//! GETDEVICEINFO (RFC 8881 section 18.40): a device's data servers and their addresses, as
//! a file layout device or a flex files one (RFC 8435 section 4.1).

use crate::compound::Ctx;
use nfs_proto::nfs4::layout_flex::{FfDeviceAddr4, FfDeviceVersions4};
use nfs_proto::nfs4::*;
use nfs_proto::xdr::to_bytes;

/// GETDEVICEINFO (RFC 8881 section 18.40): the data servers of a device (a window of the
/// ring), stripe indices `0..count`, each server's addresses with an unspecified IP
/// replaced by the local address of the connection this request came on, so a client gets
/// the address it reached the MDS by (docs/design.md, "Cluster configuration"); a client that
/// came over RDMA gets the data servers' RDMA addresses first (`layouts::Ring::describe`). A reply
/// larger than `gdia_maxcount` is NFS4ERR_TOOSMALL with the size needed.
///
/// Device ID notifications (CHANGE, DELETE) are accepted when asked for: a device's servers
/// come from the ring generation named in its id and never change, no device is ever
/// deleted, and a change of a data server's addresses (one that registers from elsewhere) is
/// told with CB_NOTIFY_DEVICEID to the clients that asked ([`crate::pnfs::notify`]). It matters:
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
    let flex = match a.gdia_layout_type {
        Layouttype4::LAYOUT4_NFSV4_1_FILES => false,
        Layouttype4::LAYOUT4_FLEX_FILES => true,
        _ => return Err(NfsStat4::NFS4ERR_UNKNOWN_LAYOUTTYPE),
    };
    let cluster = &ctx.mds.cfg().cluster;
    // A device this server never made, or of another ring generation: section 18.40.3
    // (NFS4ERR_NOENT).
    if !cluster.grants_layouts() {
        return Err(NfsStat4::NFS4ERR_NOENT);
    }
    let device = layouts::Device::from_id(&a.gdia_device_id).ok_or(NfsStat4::NFS4ERR_NOENT)?;
    // A flex files device is one data server (the window of one server a flex files
    // layout names, `ops::layout::flex_layout`).
    if flex && device.count != 1 {
        return Err(NfsStat4::NFS4ERR_NOENT);
    }
    let conn = &ctx.session.conn;
    let addr = ctx
        .mds
        .device_ring(device.generation)
        .ok_or(NfsStat4::NFS4ERR_NOENT)?
        .describe(&device, conn.local().ip(), conn.is_rdma())
        .map_err(|_| NfsStat4::NFS4ERR_NOENT)?;
    if flex {
        return Ok(GetDeviceInfoResOk {
            gdir_device_addr: flex_device(ctx, addr)?.to_device_addr(),
            // Device notifications are sent for file layout devices only.
            gdir_notification: Bitmap4::new(),
        });
    }
    let notification = a.gdia_notify_types.intersect(&Bitmap4::from_bits([
        NotifyDeviceidType4::NOTIFY_DEVICEID4_CHANGE.0,
        NotifyDeviceidType4::NOTIFY_DEVICEID4_DELETE.0,
    ]));
    if notification.contains(NotifyDeviceidType4::NOTIFY_DEVICEID4_CHANGE.0) {
        ctx.mds.device_watch().watch(clientid, a.gdia_device_id);
    }
    Ok(GetDeviceInfoResOk {
        gdir_device_addr: addr.to_device_addr(),
        gdir_notification: notification,
    })
}

/// The flex files address of a one-server device (RFC 8435 section 4.1): that server's
/// addresses, NFSv4.1 with the MDS's I/O size as rsize and wsize, tightly coupled (our data
/// servers check the MDS's stateids: section 2.3).
fn flex_device(
    ctx: &Ctx,
    addr: layout_files::Nfsv41FileLayoutDsAddr4,
) -> Result<FfDeviceAddr4, NfsStat4> {
    let netaddrs = addr
        .nflda_multipath_ds_list
        .into_iter()
        .next()
        .ok_or(NfsStat4::NFS4ERR_NOENT)?;
    let io = ctx.mds.cfg().limits.max_io;
    Ok(FfDeviceAddr4 {
        ffda_netaddrs: netaddrs,
        ffda_versions: vec![FfDeviceVersions4 {
            ffdv_version: 4,
            ffdv_minorversion: 1,
            ffdv_rsize: io,
            ffdv_wsize: io,
            ffdv_tightly_coupled: true,
        }],
    })
}

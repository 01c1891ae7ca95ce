//! GETDEVICELIST (RFC 8881 section 18.41).

use crate::compound::Ctx;
use crate::config::{ClusterConfig, LayoutPolicy};
use nfs_proto::nfs4::*;

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
pub fn getdevicelist(ctx: &Ctx, a: &GetDeviceListArgs) -> Result<GetDeviceListResOk, NfsStat4> {
    ctx.client()?;
    let export = ctx.fh()?.export;
    let flex_export = || {
        ctx.mds
            .cfg()
            .cluster
            .layout_for(export)
            .is_some_and(|p| p.flex_files)
    };
    let flex = match a.gdla_layout_type {
        Layouttype4::LAYOUT4_NFSV4_1_FILES => false,
        Layouttype4::LAYOUT4_FLEX_FILES if flex_export() => true,
        _ => return Err(NfsStat4::NFS4ERR_UNKNOWN_LAYOUTTYPE),
    };
    if a.gdla_maxdevices == 0 {
        return Err(NfsStat4::NFS4ERR_INVAL);
    }
    let mut verf = [0u8; 8];
    verf[4..].copy_from_slice(&ctx.mds.pnfs().ring_generation().to_be_bytes());
    if a.gdla_cookie != 0 && a.gdla_cookieverf != verf {
        return Err(NfsStat4::NFS4ERR_NOT_SAME);
    }
    let ids = ctx
        .mds
        .ring(ctx.mds.pnfs().ring_generation())
        .map(|ring| {
            if flex {
                // A flex files layout's devices: one per data server.
                (0..ring.servers.len())
                    .filter_map(|first| ring.device(1, first).map(|d| d.id()))
                    .collect()
            } else {
                device_list(
                    &ctx.mds.cfg().cluster,
                    &ring,
                    ctx.mds.namespace().dir_layouts().policies(),
                )
            }
        })
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

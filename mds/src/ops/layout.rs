//! File layouts (RFC 8881 chapter 13, LAYOUT4_NFSV4_1_FILES), MDS side.
//!
//! So far: the choice of a file's stripe set at its first layout (or at its create by OPEN
//! under a directory with a layout policy, [`directory_stripe_plan`]), LAYOUTGET of
//! whole-file layouts, LAYOUTRETURN, LAYOUTCOMMIT, GETDEVICEINFO and GETDEVICELIST.
//!
//! ```text
//!  LAYOUTGET: type FILES? ─> layouts on? ─> iomode, lengths ─> regular file ─> stateid
//!             ─> file_stripes (first layout or MDS WRITE: durable) ─> LayoutTable::get
//!             ─> nfsv4_1_file_layout4 { device of the stripe set, unit|DENSE, 0, 0,
//!                                       one DS filehandle per stripe index }
//! ```

use std::sync::Arc;

use crate::compound::Ctx;
use crate::config::LayoutPolicy;
use crate::store::StripeSet;
use bytes::Bytes;
use cluster::ds_fh::{DsFh, DsFhCodec};
use cluster::keys::DsKeys;
use nfs_proto::nfs4::layout_files::{Nfsv41FileLayout4, NFL4_UFLG_DENSE};
use nfs_proto::nfs4::layout_flex::{FfDataServer4, FfLayout4, FfMirror4};
use nfs_proto::nfs4::*;
use nfs_proto::xdr::to_bytes;
use tracing::warn;

/// The whole file: the only range this server grants (`NFS4_UINT64_MAX`, RFC 8881 section
/// 12.2.9); the Linux file layout driver does I/O through the MDS for any other.
pub(super) const WHOLE_FILE: u64 = u64::MAX;

/// The stripe set a file gets under `policy` (its export's, [`ClusterConfig::layout_for`], or
/// its directory's, [`crate::pnfs::dirlayout`]): the policy's stripe unit, count and packing, and a
/// window of `ring` (the current generation's) whose first server is the file id modulo the
/// ring size, so files spread over the ring without a device id per file (docs/design.md,
/// "pNFS"). Servers for which `usable` says no (down ones: RFC 8881 section 13.3, a
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
    // Mirrors (flex files, stripe count 1): copy k on the window's k-th server, so the
    // copies are on distinct servers; fewer usable servers than mirrors give fewer copies.
    // Among windows of one size, one whose copies of each stripe are in distinct failure
    // domains comes first; more copies in fewer domains beat fewer copies.
    let mirrors = usize::try_from(policy.mirrors.max(1)).ok()?;
    let count = usize::try_from(policy.stripe_count).ok()? * mirrors;
    let usable_window = |d: &layouts::Device| {
        ring.members(d)
            .is_ok_and(|m| m.iter().all(|s| usable(s.id)))
    };
    let device = (1..=count)
        .rev()
        .filter(|c| mirrors == 1 || policy.stripe_count == 1 || c % mirrors == 0)
        .find_map(|c| {
            let stripes = if policy.stripe_count == 1 {
                1
            } else {
                c / mirrors
            };
            ring.first_window(c, start, |d| {
                usable_window(d) && (c == stripes || ring.copies_apart(d, stripes))
            })
            .or_else(|| {
                let d = ring.first_window(c, start, usable_window)?;
                warn!(
                    fileid,
                    "no window of usable data servers has the copies of each stripe in \
                     distinct failure domains: some copies of the new file share one"
                );
                Some(d)
            })
        })?;
    let mirrors = if mirrors > 1 && policy.stripe_count == 1 {
        device.count
    } else {
        u16::try_from(mirrors).ok()?
    };
    if mirrors < u16::try_from(policy.mirrors).unwrap_or(u16::MAX) {
        warn!(
            fileid,
            mirrors,
            wanted = policy.mirrors,
            "too few data servers up: the new file gets fewer mirrors than its policy's"
        );
    }
    Some(StripeSet {
        unit: policy.stripe_unit,
        device,
        packing: policy.packing,
        mirrors,
    })
}

/// A new stripe set for file `fileid` under `policy` from the current ring and the data
/// servers up now, leaving out those a client reported failing in the last minute while the
/// others will do (`crate::pnfs::reports`): NFS4ERR_LAYOUTUNAVAILABLE without data servers,
/// NFS4ERR_LAYOUTTRYLATER while none is up (section 18.43.3: the layout is only temporarily
/// unavailable).
pub fn new_stripe_set(
    mds: &crate::server::Mds,
    policy: LayoutPolicy,
    fileid: u64,
) -> Result<StripeSet, NfsStat4> {
    let ring = mds
        .ring(mds.pnfs().ring_generation())
        .ok_or(NfsStat4::NFS4ERR_LAYOUTUNAVAILABLE)?;
    let up = |id: u32| mds.devices().is_ring_member_up(id);
    let sound = |id: u32| up(id) && !mds.pnfs().reports().failing(id);
    stripe_set_for(policy, &ring, fileid, sound)
        .or_else(|| stripe_set_for(policy, &ring, fileid, up))
        .ok_or(NfsStat4::NFS4ERR_LAYOUTTRYLATER)
}

/// The stripe set a regular file about to be created by OPEN in directory `dir` of `export`
/// gets from the policy of the nearest configured directory at or above `dir`
/// ([`crate::pnfs::dirlayout`]): a function of the new file's id, for the store to apply in
/// the create's own transaction ([`crate::store::Store::create_file`]), so that its first
/// layout (or WRITE) finds the directory's policy rather than the export's. `None` unless the
/// MDS grants layouts and a configured directory is above `dir`. The data servers up now are
/// taken as usable; when none is, the function gives no set, and the file gets its export's
/// policy at its first LAYOUTGET or WRITE ([`warn_unplaced`] says so).
#[allow(clippy::type_complexity)]
pub fn directory_stripe_plan(
    ctx: &Ctx,
    export: u16,
    dir: u64,
) -> Option<Arc<dyn Fn(u64) -> Option<StripeSet> + Send + Sync>> {
    let mds = &ctx.mds;
    if mds.namespace().dir_layouts().is_empty() || !mds.cfg().cluster.grants_layouts() {
        return None;
    }
    let root = mds.export_root_fileid(export)?;
    let policy = match mds
        .namespace()
        .dir_layouts()
        .for_directory(mds.store(), export, root, dir)
    {
        Ok(Some(p)) => p,
        Ok(None) => return None,
        Err(e) => {
            warn!(
                dir,
                "directory layout policy not found: {e}; the export's applies"
            );
            return None;
        }
    };
    let plan = stripe_plan(mds, policy);
    if plan.is_none() {
        warn!(
            dir,
            "no data servers: new files get no directory layout policy"
        );
    }
    plan
}

/// The stripe set a regular file about to be created by OPEN in `export` gets from the
/// export's policy, when a LAYOUTGET follows the OPEN in its COMPOUND (`Ctx::layout_follows`):
/// the create fixes it in its own transaction, where the LAYOUTGET would have fixed it in a
/// commit of its own ([`file_stripes`]). `None` when the MDS grants no layouts here.
#[allow(clippy::type_complexity)]
pub fn export_stripe_plan(
    ctx: &Ctx,
    export: u16,
) -> Option<Arc<dyn Fn(u64) -> Option<StripeSet> + Send + Sync>> {
    let cluster = &ctx.mds.cfg().cluster;
    if !cluster.grants_layouts() {
        return None;
    }
    stripe_plan(&ctx.mds, cluster.layout_for(export)?)
}

/// [`stripe_set_for`] `policy` over the current ring, with the data servers up now as the
/// usable ones, as a function of the new file's id; those a client reported failing in the
/// last minute (`crate::pnfs::reports`) only when no window of the others will do. `None`
/// without data servers.
#[allow(clippy::type_complexity)]
fn stripe_plan(
    mds: &crate::server::Mds,
    policy: LayoutPolicy,
) -> Option<Arc<dyn Fn(u64) -> Option<StripeSet> + Send + Sync>> {
    let ring = mds.ring(mds.pnfs().ring_generation())?;
    let up: std::collections::HashSet<u32> = ring
        .servers
        .iter()
        .map(|s| s.id)
        .filter(|&id| mds.devices().is_ring_member_up(id))
        .collect();
    let failing: std::collections::HashSet<u32> = up
        .iter()
        .copied()
        .filter(|&id| mds.pnfs().reports().failing(id))
        .collect();
    Some(Arc::new(move |fileid| {
        stripe_set_for(policy, &ring, fileid, |id| {
            up.contains(&id) && !failing.contains(&id)
        })
        .or_else(|| stripe_set_for(policy, &ring, fileid, |id| up.contains(&id)))
    }))
}

/// Says that file `fileid`, created under a directory with a layout policy, was left without
/// its set (no data server was up).
pub fn warn_unplaced(fileid: u64) {
    warn!(
        fileid,
        "new file left without its directory's layout policy (no data server is up): the \
         export's policy applies at its first LAYOUTGET or WRITE"
    );
}

/// The stripe set regular file `inode` of `export` keeps its data on, fixed (durably) at its
/// first LAYOUTGET or its first WRITE through the MDS, whichever comes first, so both paths
/// find the same DS objects (`crate::pnfs::datapath`): the set it has; else, when the MDS grants
/// layouts, the policy's ([`stripe_set_for`]) unless its MDS-local object already holds
/// something (written before layouts were on: a stripe set would hide it); else `None`, and
/// its data stays in the MDS's own object (LAYOUTGET answers NFS4ERR_LAYOUTUNAVAILABLE).
///
/// `rw`: an RW layout is being granted, so a new set is fixed in the same transaction as
/// the file's mark ([`crate::pnfs::settle`]).
pub async fn file_stripes(
    ctx: &Ctx,
    export: u16,
    inode: &crate::store::Inode,
    rw: bool,
) -> Result<Option<StripeSet>, NfsStat4> {
    let fileid = inode.fileid;
    if let Some(set) = ctx.mds.store().stripes(fileid)? {
        return Ok(Some(set));
    }
    let cluster = &ctx.mds.cfg().cluster;
    if !cluster.grants_layouts() {
        return Ok(None);
    }
    let data = ctx.mds.data().clone();
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
    Ok(Some(
        ctx.mds.store().fix_stripes(fileid, proposed, rw).await?,
    ))
}

/// Which layout a set of DS filehandles is made for (`cluster::ds_fh`).
#[derive(Clone, Copy, Debug)]
pub struct LayoutOf {
    /// The file.
    pub fileid: u64,
    /// Its generation.
    pub generation: u32,
    /// The layout stateid's `other`: the handles work while it lives.
    pub layout: crate::pnfs::devices::Other,
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

/// The `ff_layout4` of a stripe set of one stripe (RFC 8435 section 5.1): one mirror per
/// copy in `positions` (window positions of the set; all of them without mirrors), each of
/// one data server whose device is the one-server window at its ring position (whose
/// GETDEVICEINFO of type flex files names that server alone), no stripe unit (nothing is
/// striped), the DS filehandle a file layout names for that position, and `io_stateid`, the
/// layout's own stateid, for the I/O: our data servers are tightly coupled and take it for
/// the handles bound to that layout, for as long as it lives (other layout stateids they
/// refuse, RFC 8881 section 13.9.1). LAYOUTCOMMIT is expected (no `FF_FLAGS_NO_LAYOUTCOMMIT`: the MDS learns
/// sizes from it), and I/O through the MDS stays allowed. NFS4ERR_LAYOUTUNAVAILABLE for a
/// set of several stripes (a file striped before its export served flex files: RFC 8435
/// maps offsets sparsely only, the local backend packs a stripe's bytes densely).
pub fn flex_layout(
    codec: &DsFhCodec,
    set: &StripeSet,
    ring_len: usize,
    of: LayoutOf,
    io_stateid: Stateid4,
    positions: &[u32],
) -> Result<Bytes, NfsStat4> {
    if set.stripe_count() != 1
        || ring_len == 0
        || positions.is_empty()
        || positions.iter().any(|&p| p >= u32::from(set.device.count))
    {
        return Err(NfsStat4::NFS4ERR_LAYOUTUNAVAILABLE);
    }
    let stateid = Stateid4 {
        seqid: 0,
        ..io_stateid
    };
    let mut mirrors = Vec::with_capacity(positions.len());
    for &position in positions {
        let fh = codec.encode(DsFh {
            stripe: position as u16,
            fileid: of.fileid,
            generation: of.generation,
            rw: of.rw,
            layout: of.layout,
            clientid: of.clientid,
        });
        let device = layouts::Device {
            generation: set.device.generation,
            count: 1,
            first: ((usize::from(set.device.first) + position as usize) % ring_len) as u16,
        };
        mirrors.push(FfMirror4 {
            ffm_data_servers: vec![FfDataServer4 {
                ffds_deviceid: device.id(),
                ffds_efficiency: 1,
                ffds_stateid: stateid,
                ffds_fh_vers: vec![fh],
                // Used only by loosely coupled (NFSv3) data servers, for AUTH_SYS.
                ffds_user: "0".into(),
                ffds_group: "0".into(),
            }],
        });
    }
    let body = FfLayout4 {
        ffl_stripe_unit: 0,
        ffl_mirrors: mirrors,
        ffl_flags: 0,
        ffl_stats_collect_hint: 0,
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
    use crate::config::{Backend, ClusterConfig, DataServerConfig, DirectoryLayout, ExportLayout};
    use crate::ops::getdevicelist::device_list;
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
            mirrors: None,
            layout_type: None,
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
            mirrors: None,
            layout_type: None,
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
                    mirrors: None,
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

    #[test]
    fn mirrors_go_on_distinct_failure_domains_while_a_window_allows() {
        // Two racks of two, numbered rack by rack: the ring interleaves them (1, 3, 2, 4).
        let mut c = cluster(4);
        for d in &mut c.data_servers {
            d.failure_domain = Some(if d.id <= 2 { "a" } else { "b" }.into());
        }
        let policy = LayoutPolicy {
            stripe_count: 1,
            flex_files: true,
            mirrors: 2,
            ..c.layout_for(0).unwrap()
        };
        let ring = c.ring(1);
        let rack = |id: u32| if id <= 2 { 'a' } else { 'b' };
        let copies = |s: &StripeSet| -> Vec<u32> {
            ring.members(&s.device)
                .unwrap()
                .iter()
                .map(|d| d.id)
                .collect()
        };
        let mut used = std::collections::HashSet::new();
        for fileid in 0..8 {
            let s = stripe_set_for(policy, &ring, fileid, |_| true).unwrap();
            let ids = copies(&s);
            assert_eq!(s.mirrors, 2);
            assert_ne!(rack(ids[0]), rack(ids[1]), "file {fileid}: {ids:?}");
            used.extend(ids);
        }
        assert_eq!(used.len(), 4, "files spread over every server");
        // Server 3 down: the files that would have had a copy there go to the next window
        // whose copies are apart (4, 1), not to one in a rack (2, 4 is apart too).
        for fileid in 0..8 {
            let s = stripe_set_for(policy, &ring, fileid, |id| id != 3).unwrap();
            let ids = copies(&s);
            assert!(
                !ids.contains(&3) && s.mirrors == 2,
                "file {fileid}: {ids:?}"
            );
            assert_ne!(rack(ids[0]), rack(ids[1]), "file {fileid}: {ids:?}");
        }
        // Rack b down: the servers of rack a are not neighbours on the ring, so a new file
        // gets one copy (a window is consecutive servers), as when all but one are down.
        let s = stripe_set_for(policy, &ring, 0, |id| rack(id) == 'a').unwrap();
        assert_eq!((s.mirrors, rack(copies(&s)[0])), (1, 'a'));
        // A domain larger than the others: rack a of three, rack b of one (ring 1, 4, 2,
        // 3): windows (2, 3) and (3, 1) share rack a, so files starting there move on to a
        // window with server 4, and every file's copies are apart.
        let mut uneven = cluster(4);
        for d in &mut uneven.data_servers {
            d.failure_domain = Some(if d.id <= 3 { "a" } else { "b" }.into());
        }
        let ring3 = uneven.ring(1);
        for fileid in 0..8 {
            let s = stripe_set_for(policy, &ring3, fileid, |_| true).unwrap();
            assert!(ring3.copies_apart(&s.device, 1), "file {fileid}");
        }
        // Numbered rack by rack without domains, consecutive servers share a rack: with
        // domains, no file of these has both copies in one.
        let plain = cluster(4).ring(1);
        let same_rack = (0..8)
            .filter(|&f| {
                let s = stripe_set_for(policy, &plain, f, |_| true).unwrap();
                let ids: Vec<u32> = plain
                    .members(&s.device)
                    .unwrap()
                    .iter()
                    .map(|d| d.id)
                    .collect();
                rack(ids[0]) == rack(ids[1])
            })
            .count();
        assert_eq!(same_rack, 4);
    }
}

//! The pNFS handle: the data servers (device registry), the recorded rings and the
//! generation new stripe sets are placed on, and the tasks that keep the data servers in
//! step with the MDS (removals, fencing, size settling, space watch, device notifications).
//!
//! Why a handle of its own: everything that talks to or reasons about the data servers
//! lives here; a service that needs the data servers and nothing of the namespace or the
//! protocol state takes a `&Pnfs`.

use std::collections::BTreeMap;
use std::sync::Arc;

use nfs_proto::nfs4::NfsStat4;

use crate::pnfs::devices::Devices;
use crate::pnfs::fencing::Fencing;
use crate::pnfs::notify::DeviceWatch;
use crate::pnfs::removals::Removals;
use crate::pnfs::settle::Settler;
use crate::pnfs::spacewatch::SpaceWatch;

/// Every recorded ring generation with the cluster configuration: resolves a stripe set's
/// ring away from the MDS ([`crate::Mds::ring_book`]).
#[derive(Clone, Debug)]
pub struct RingBook {
    rings: Arc<BTreeMap<u32, Vec<u16>>>,
    /// The cluster configuration (addresses, the configured data servers).
    pub cluster: crate::config::ClusterConfig,
}

impl RingBook {
    /// As [`Pnfs::ring`].
    pub fn ring(&self, generation: u32) -> Option<layouts::Ring> {
        ring_of(&self.rings, &self.cluster, generation)
    }
}

fn ring_of(
    rings: &BTreeMap<u32, Vec<u16>>,
    cluster: &crate::config::ClusterConfig,
    generation: u32,
) -> Option<layouts::Ring> {
    let ids = rings.get(&generation)?;
    Some(layouts::Ring::ordered(
        generation,
        ids.iter()
            .map(|&id| {
                let d = cluster.data_server(id);
                layouts::DataServer {
                    id: u32::from(id),
                    addresses: d.map(|d| d.addresses.clone()).unwrap_or_default(),
                    rdma_addresses: Vec::new(),
                    failure_domain: d.and_then(|d| d.failure_domain.clone()),
                }
            })
            .collect(),
    ))
}

/// The pNFS side of the server.
pub struct Pnfs {
    /// The data servers: which are up, their control connections.
    devices: Devices,
    /// Every ring generation's data server ids (store table `rings`), with the cluster
    /// configuration that gives them addresses: the windows of stripe sets fixed under any
    /// generation stay resolvable after the configuration changes.
    book: RingBook,
    /// The generation of the configured data server list (0 without data servers): new
    /// stripe sets are windows of its ring.
    ring_generation: u32,
    /// The task that removes deleted files' objects from the data servers, and its counters.
    removals: Removals,
    /// Revocations queued for the data servers, layout recalls and fencing.
    fencing: Fencing,
    /// Files written through RW layouts whose size is not settled with their data servers.
    settler: Settler,
    /// Striped files whose space used GETATTR asks the data servers for.
    space_watch: SpaceWatch,
    /// Which clients asked to hear of which devices' changes (CB_NOTIFY_DEVICEID).
    device_watch: DeviceWatch,
    /// What clients report of the data servers: errors, I/O statistics.
    reports: crate::pnfs::reports::IoReports,
    /// Stale copies of mirrored files, and their re-silvering.
    mirrors: crate::pnfs::mirrors::Mirrors,
}

impl Pnfs {
    /// The pNFS side from the registry, the recorded rings and the settler
    /// [`crate::Mds::open_with`] loaded; the queues start empty.
    pub(crate) fn new(
        devices: Devices,
        rings: Arc<BTreeMap<u32, Vec<u16>>>,
        cluster: crate::config::ClusterConfig,
        ring_generation: u32,
        settler: Settler,
        mirrors: crate::pnfs::mirrors::Mirrors,
    ) -> Self {
        Self {
            devices,
            book: RingBook { rings, cluster },
            ring_generation,
            removals: Removals::default(),
            fencing: Fencing::default(),
            settler,
            space_watch: Default::default(),
            device_watch: DeviceWatch::default(),
            reports: Default::default(),
            mirrors,
        }
    }

    /// Stale copies of mirrored files, and their re-silvering.
    pub fn mirrors(&self) -> &crate::pnfs::mirrors::Mirrors {
        &self.mirrors
    }

    /// The device registry.
    pub fn devices(&self) -> &Devices {
        &self.devices
    }

    /// The generation new stripe sets are placed on (0 without data servers).
    pub fn ring_generation(&self) -> u32 {
        self.ring_generation
    }

    /// The removal task's queue and counters.
    pub fn removals(&self) -> &Removals {
        &self.removals
    }

    /// The revocation and recall queues.
    pub fn fencing(&self) -> &Fencing {
        &self.fencing
    }

    /// The files whose size is not settled with their data servers.
    pub fn settler(&self) -> &Settler {
        &self.settler
    }

    /// What clients report of the data servers (LAYOUTERROR, LAYOUTSTATS, flex files
    /// LAYOUTRETURN reports).
    pub fn reports(&self) -> &crate::pnfs::reports::IoReports {
        &self.reports
    }

    /// The striped files whose space used GETATTR asks the data servers for.
    pub fn space_watch(&self) -> &SpaceWatch {
        &self.space_watch
    }

    /// The clients' device notification wishes.
    pub fn device_watch(&self) -> &DeviceWatch {
        &self.device_watch
    }

    /// The data server ring of `generation`: its recorded members, each with the addresses
    /// the configuration gives it now (none for a data server the configuration no longer
    /// has). `None` for a generation never recorded.
    pub fn ring(&self, generation: u32) -> Option<layouts::Ring> {
        self.book.ring(generation)
    }

    /// [`Pnfs::ring`] as clients are told it (GETDEVICEINFO): each data server at the
    /// addresses the registry has for it, which follow a data server that registered from
    /// elsewhere ([`Devices::addresses`]), and at the RDMA addresses it reported.
    pub fn device_ring(&self, generation: u32) -> Option<layouts::Ring> {
        let mut ring = self.ring(generation)?;
        for s in &mut ring.servers {
            let Ok(id) = u16::try_from(s.id) else {
                continue;
            };
            if let Some(a) = self.devices.addresses(id) {
                s.addresses = a;
            }
            s.rdma_addresses = self.devices.rdma_addresses(id);
        }
        Some(ring)
    }

    /// What [`Pnfs::ring`] needs, to take where the MDS cannot go (a store job must not hold
    /// the last handle of the MDS).
    pub fn ring_book(&self) -> RingBook {
        self.book.clone()
    }

    /// The data server ids of a stripe set, in stripe index order: where each DS object of a
    /// file with this set lives. NFS4ERR_SERVERFAULT when the set names a ring this MDS has
    /// no record of (a metadata store from another cluster).
    pub fn stripe_servers(&self, set: &crate::store::StripeSet) -> Result<Vec<u16>, NfsStat4> {
        let ring = self.ring(set.device.generation);
        Ok(crate::pnfs::dsobjects::stripe_servers(ring.as_ref(), set)?)
    }
}

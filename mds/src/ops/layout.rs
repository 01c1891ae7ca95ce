//! File layouts (RFC 8881 chapter 13, LAYOUT4_NFSV4_1_FILES), MDS side.
//!
//! So far: the choice of a file's stripe set at its first layout. The layout operations
//! themselves (LAYOUTGET, GETDEVICEINFO, GETDEVICELIST, LAYOUTRETURN, LAYOUTCOMMIT) are not
//! dispatched here yet.

use crate::config::ClusterConfig;
use crate::store::StripeSet;

/// The stripe set a file of `export` gets at its first layout: stripe unit, stripe count and
/// packing from the cluster's policy ([`ClusterConfig::layout_for`]), and a window of the data
/// server ring of `generation` of that many servers whose first server is the file id modulo
/// the ring size, so files spread over the ring without a device id per file
/// (docs/design.md, "pNFS plan"). `None` when no data servers are configured: the MDS then
/// has no layout to give (NFS4ERR_LAYOUTUNAVAILABLE, RFC 8881 section 18.43.3).
pub fn stripe_set_for(
    cluster: &ClusterConfig,
    export: u16,
    fileid: u64,
    generation: u32,
) -> Option<StripeSet> {
    let policy = cluster.layout_for(export)?;
    let ring = cluster.ring(generation);
    let n = u64::try_from(ring.servers.len()).ok().filter(|&n| n > 0)?;
    let first = usize::try_from(fileid % n).ok()?;
    let count = usize::try_from(policy.stripe_count).ok()?;
    let device = ring.device(count, first)?;
    Some(StripeSet {
        unit: policy.stripe_unit,
        device,
        packing: policy.packing,
    })
}

#[cfg(test)]
mod tests {
    use std::net::SocketAddr;

    use layouts::Packing;

    use super::*;
    use crate::config::{Backend, DataServerConfig, ExportLayout};

    fn cluster(n: u16) -> ClusterConfig {
        ClusterConfig {
            data_servers: (1..=n)
                .map(|id| DataServerConfig::new(id, SocketAddr::from(([0, 0, 0, 0], 20490 + id))))
                .collect(),
            ..ClusterConfig::default()
        }
    }

    #[test]
    fn the_window_starts_at_the_file_id_modulo_the_ring() {
        let c = cluster(3);
        for fileid in 0..9u64 {
            let s = stripe_set_for(&c, 0, fileid, 4).unwrap();
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
        let s = stripe_set_for(&c, 2, 7, 1).unwrap();
        assert_eq!((s.unit, s.device.count, s.device.first), (64 << 10, 2, 3));
        let other = stripe_set_for(&c, 0, 7, 1).unwrap();
        assert_eq!(other.device.count, 4);
    }

    #[test]
    fn shared_data_servers_get_sparse_packing() {
        let mut c = cluster(2);
        c.data_servers[1].backend = Backend::Shared;
        assert_eq!(
            stripe_set_for(&c, 0, 1, 1).unwrap().packing,
            Packing::Sparse
        );
    }

    #[test]
    fn without_data_servers_there_is_no_stripe_set() {
        assert_eq!(stripe_set_for(&cluster(0), 0, 5, 1), None);
    }
}

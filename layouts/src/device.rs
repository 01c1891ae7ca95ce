//! Devices of the file layout (RFC 8881 sections 12.2.10 and 13.3): which data servers a
//! layout's stripe indices name, and at which addresses a client reaches them.
//!
//! The data servers of the cluster, in id order, form a ring. A device is a window of it:
//! `count` data servers starting at ring position `first`; its `nflda_stripe_indices` are
//! `0..count` and its multipath list is the window's data servers in order. A file's stripe
//! set is such a window, so there are at most (servers x counts) devices, the device id
//! carries everything needed to rebuild it, and files spread over the ring by choosing
//! `first` (e.g. from the file id) without a device per file.
//!
//! Device ids carry the ring's generation, so that when the ring changes (a data server added,
//! removed or readdressed) the old ids are recognised as gone (NFS4ERR_NOENT on GETDEVICEINFO,
//! and CB_NOTIFY_DEVICEID for holders).

use std::net::{IpAddr, SocketAddr};

use nfs_proto::nfs4::layout_files::{
    netaddr_from_socket_addr, rdma_netaddr_from_socket_addr, MultipathList4,
    Nfsv41FileLayoutDsAddr4,
};
use nfs_proto::nfs4::Deviceid4;

/// One data server of the ring.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DataServer {
    /// Its configured id.
    pub id: u32,
    /// Where clients reach it; an unspecified IP (`0.0.0.0:20491`) means "the address the
    /// client used to reach the MDS", for an all-in-one host clients reach by different
    /// addresses (loopback, a veth pair, the LAN).
    pub addresses: Vec<SocketAddr>,
    /// Where it answers NFS over RDMA (RPC-over-RDMA, RFC 8166), the same way; empty when it
    /// does not listen on RDMA.
    pub rdma_addresses: Vec<SocketAddr>,
    /// Its failure domain as configured (rack, power feed): the copies of a mirrored stripe
    /// go on distinct ones where a window allows ([`Ring::copies_apart`]). `None` is a
    /// domain of its own.
    pub failure_domain: Option<String>,
}

/// A window of the ring: the devices this server hands out.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Device {
    /// The ring generation it belongs to.
    pub generation: u32,
    /// How many data servers (= stripe indices).
    pub count: u16,
    /// Ring position of the first.
    pub first: u16,
}

impl Device {
    /// The 16-byte device id: generation (u32 BE), count (u16 BE), first (u16 BE), then
    /// zeros.
    pub fn id(&self) -> Deviceid4 {
        let mut id = [0u8; 16];
        id[..4].copy_from_slice(&self.generation.to_be_bytes());
        id[4..6].copy_from_slice(&self.count.to_be_bytes());
        id[6..8].copy_from_slice(&self.first.to_be_bytes());
        id
    }

    /// The device a device id names, if it is one of ours (nonzero count, zero tail).
    pub fn from_id(id: &Deviceid4) -> Option<Self> {
        if id[8..].iter().any(|&b| b != 0) {
            return None;
        }
        let count = u16::from_be_bytes([id[4], id[5]]);
        (count > 0).then(|| Self {
            generation: u32::from_be_bytes([id[0], id[1], id[2], id[3]]),
            count,
            first: u16::from_be_bytes([id[6], id[7]]),
        })
    }
}

/// The ring of data servers of one generation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ring {
    /// Bumped whenever the servers or their addresses change.
    pub generation: u32,
    /// In id order.
    pub servers: Vec<DataServer>,
}

/// Why a device cannot be described.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DeviceError {
    /// Another generation, or a window larger than the ring.
    #[error("no such device")]
    NoEnt,
}

impl Ring {
    /// A ring of `servers`, sorted by id.
    pub fn new(generation: u32, mut servers: Vec<DataServer>) -> Self {
        servers.sort_by_key(|s| s.id);
        Self::ordered(generation, servers)
    }

    /// A ring of `servers` in the order given: a recorded generation's order, which failure
    /// domains may have interleaved.
    pub fn ordered(generation: u32, servers: Vec<DataServer>) -> Self {
        Self {
            generation,
            servers,
        }
    }

    /// The device of `count` servers starting at `first` (taken modulo the ring), or `None`
    /// when the ring has fewer than `count` servers (or none).
    pub fn device(&self, count: usize, first: usize) -> Option<Device> {
        let n = self.servers.len();
        if count == 0 || count > n {
            return None;
        }
        Some(Device {
            generation: self.generation,
            count: u16::try_from(count).ok()?,
            first: u16::try_from(first % n).ok()?,
        })
    }

    /// The first window of `count` servers, trying start positions `start`, `start + 1`, ...
    /// around the ring, whose servers all pass `usable` (up, say); `None` if no window does.
    pub fn window_where(
        &self,
        count: usize,
        start: usize,
        usable: impl Fn(&DataServer) -> bool,
    ) -> Option<Device> {
        let n = self.servers.len();
        self.first_window(count, start, |d| {
            (0..count).all(|i| usable(&self.servers[(usize::from(d.first) + i) % n]))
        })
    }

    /// The first window of `count` servers, trying start positions `start`, `start + 1`, ...
    /// around the ring, that `accept` takes; `None` if it takes none (or the ring is too
    /// small).
    pub fn first_window(
        &self,
        count: usize,
        start: usize,
        accept: impl Fn(&Device) -> bool,
    ) -> Option<Device> {
        let n = self.servers.len();
        (0..n)
            .filter_map(|k| self.device(count, (start + k) % n))
            .find(|d| accept(d))
    }

    /// Whether window `d`, holding `d.count / stripes` copies of each of `stripes` stripes
    /// (copy `k` of stripe `i` at window position `k * stripes + i`), has the copies of every
    /// stripe on data servers of distinct failure domains (a server without one is a domain
    /// of its own).
    pub fn copies_apart(&self, d: &Device, stripes: usize) -> bool {
        let n = self.servers.len();
        let count = usize::from(d.count);
        if n == 0 || stripes == 0 {
            return false;
        }
        (0..stripes).all(|i| {
            let servers: Vec<&DataServer> = (i..count)
                .step_by(stripes)
                .map(|p| &self.servers[(usize::from(d.first) + p) % n])
                .collect();
            servers.iter().enumerate().all(|(a, x)| {
                servers[..a].iter().all(|y| {
                    x.id != y.id
                        && (x.failure_domain.is_none() || x.failure_domain != y.failure_domain)
                })
            })
        })
    }

    /// The servers of a device, in stripe index order.
    pub fn members(&self, d: &Device) -> Result<Vec<&DataServer>, DeviceError> {
        let n = self.servers.len();
        if d.generation != self.generation || d.count as usize > n || d.first as usize >= n {
            return Err(DeviceError::NoEnt);
        }
        Ok((0..d.count as usize)
            .map(|i| &self.servers[(d.first as usize + i) % n])
            .collect())
    }

    /// GETDEVICEINFO's body for a client that reached the MDS at local address `via`: the
    /// stripe indices `0..count` and each server's addresses (RFC 8881 section 13.3), with
    /// unspecified IPs replaced by `via`. With `rdma` (the client reached the MDS over
    /// RPC-over-RDMA) each server's RDMA addresses come first, netid `rdma`/`rdma6`, and its
    /// TCP ones after them as further multipath entries: the Linux client connects to the
    /// first entry it can, so a `proto=rdma` mount does its data-server I/O over RDMA too and
    /// falls back to TCP where a data server has no RDMA. A client that reached the MDS over
    /// TCP is told TCP only: it may have no RDMA device, and trying one costs it a timeout.
    pub fn describe(
        &self,
        d: &Device,
        via: IpAddr,
        rdma: bool,
    ) -> Result<Nfsv41FileLayoutDsAddr4, DeviceError> {
        let members = self.members(d)?;
        Ok(Nfsv41FileLayoutDsAddr4 {
            nflda_stripe_indices: (0..u32::from(d.count)).collect(),
            nflda_multipath_ds_list: members
                .iter()
                .map(|s| {
                    let over_rdma = s
                        .rdma_addresses
                        .iter()
                        .filter(|_| rdma)
                        .map(|a| rdma_netaddr_from_socket_addr(reachable(*a, via)));
                    let over_tcp = s
                        .addresses
                        .iter()
                        .map(|a| netaddr_from_socket_addr(reachable(*a, via)));
                    MultipathList4(over_rdma.chain(over_tcp).collect())
                })
                .collect(),
        })
    }
}

/// `addr` as a client that reached the MDS at `via` reaches it: an unspecified IP becomes
/// `via` (same family; an IPv4 `via` seen as IPv4-mapped IPv6 is unmapped first).
pub fn reachable(addr: SocketAddr, via: IpAddr) -> SocketAddr {
    if !addr.ip().is_unspecified() {
        return addr;
    }
    let via = match via {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map(IpAddr::V4).unwrap_or(via),
        v4 => v4,
    };
    SocketAddr::new(via, addr.port())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ring() -> Ring {
        Ring::new(
            7,
            vec![
                DataServer {
                    id: 3,
                    addresses: vec!["0.0.0.0:20493".parse().unwrap()],
                    rdma_addresses: vec!["0.0.0.0:20693".parse().unwrap()],
                    failure_domain: None,
                },
                DataServer {
                    id: 1,
                    addresses: vec![
                        "10.0.0.1:2049".parse().unwrap(),
                        "[fd00::1]:2049".parse().unwrap(),
                    ],
                    rdma_addresses: vec![],
                    failure_domain: None,
                },
                DataServer {
                    id: 2,
                    addresses: vec!["0.0.0.0:20492".parse().unwrap()],
                    rdma_addresses: vec!["0.0.0.0:20692".parse().unwrap()],
                    failure_domain: None,
                },
            ],
        )
    }

    #[test]
    fn device_ids_round_trip_and_foreign_ones_are_refused() {
        let d = ring().device(2, 4).unwrap();
        assert_eq!(
            d,
            Device {
                generation: 7,
                count: 2,
                first: 1
            }
        );
        assert_eq!(Device::from_id(&d.id()), Some(d));
        let mut foreign = d.id();
        foreign[15] = 1;
        assert_eq!(Device::from_id(&foreign), None);
        assert_eq!(Device::from_id(&[0; 16]), None, "count 0");
        assert_eq!(ring().device(4, 0), None, "more than the ring");
        assert_eq!(ring().device(0, 0), None);
    }

    #[test]
    fn a_device_is_a_window_of_the_ring_in_id_order() {
        let r = ring();
        let d = r.device(3, 2).unwrap();
        let ids: Vec<u32> = r.members(&d).unwrap().iter().map(|s| s.id).collect();
        assert_eq!(ids, [3, 1, 2]);
        let stale = Device { generation: 6, ..d };
        assert_eq!(r.members(&stale), Err(DeviceError::NoEnt));
    }

    #[test]
    fn unspecified_addresses_become_the_address_the_client_used() {
        let r = ring();
        let d = r.device(3, 0).unwrap();
        let body = r
            .describe(&d, "192.168.5.9".parse().unwrap(), false)
            .unwrap();
        assert_eq!(body.nflda_stripe_indices, [0, 1, 2]);
        let uaddrs: Vec<Vec<(String, String)>> = body
            .nflda_multipath_ds_list
            .iter()
            .map(|m| {
                m.0.iter()
                    .map(|n| (n.na_r_netid.to_string(), n.na_r_addr.to_string()))
                    .collect()
            })
            .collect();
        assert_eq!(
            uaddrs,
            [
                vec![
                    ("tcp".into(), "10.0.0.1.8.1".into()),
                    ("tcp6".into(), "fd00::1.8.1".into())
                ],
                vec![("tcp".into(), "192.168.5.9.80.12".into())],
                vec![("tcp".into(), "192.168.5.9.80.13".into())],
            ]
        );
        // A client on IPv4 seen through an IPv6 socket gets the IPv4 address.
        let mapped: IpAddr = "::ffff:127.0.0.1".parse().unwrap();
        assert_eq!(
            reachable("0.0.0.0:20491".parse().unwrap(), mapped),
            "127.0.0.1:20491".parse().unwrap()
        );
    }

    #[test]
    fn a_client_over_rdma_is_told_rdma_addresses_first_then_tcp_ones() {
        let r = ring();
        let d = r.device(3, 0).unwrap();
        let netaddrs = |rdma: bool| -> Vec<Vec<String>> {
            r.describe(&d, "192.168.5.9".parse().unwrap(), rdma)
                .unwrap()
                .nflda_multipath_ds_list
                .iter()
                .map(|m| {
                    m.0.iter()
                        .map(|n| format!("{} {}", n.na_r_netid, n.na_r_addr))
                        .collect()
                })
                .collect()
        };
        assert_eq!(
            netaddrs(true),
            [
                // No RDMA listener: TCP only.
                vec!["tcp 10.0.0.1.8.1", "tcp6 fd00::1.8.1"],
                vec!["rdma 192.168.5.9.80.212", "tcp 192.168.5.9.80.12"],
                vec!["rdma 192.168.5.9.80.213", "tcp 192.168.5.9.80.13"],
            ]
        );
        assert!(netaddrs(false)
            .iter()
            .flatten()
            .all(|n| n.starts_with("tcp")));
    }

    #[test]
    fn a_window_skips_unusable_servers_and_wraps_around() {
        let ring = Ring::new(
            7,
            (1..=5)
                .map(|id| DataServer {
                    id,
                    addresses: vec![],
                    ..Default::default()
                })
                .collect(),
        );
        let down = |ids: &'static [u32]| move |s: &DataServer| !ids.contains(&s.id);
        // All up: the window starts where asked.
        assert_eq!(ring.window_where(3, 1, |_| true), ring.device(3, 1));
        // Server 3 (position 2) down: windows of 3 starting at 0, 1, 2 hold it; 3 does not.
        assert_eq!(ring.window_where(3, 0, down(&[3])), ring.device(3, 3));
        // Wrapping: from position 4 the window 4, 0, 1 (ids 5, 1, 2) is usable.
        assert_eq!(ring.window_where(3, 4, down(&[3])), ring.device(3, 4));
        // Two down apart: no window of 3 and a window of 2 exists.
        assert_eq!(ring.window_where(3, 0, down(&[2, 4])), None);
        assert_eq!(ring.window_where(2, 1, down(&[2, 4])), ring.device(2, 4));
        assert_eq!(ring.window_where(6, 0, |_| true), None);
        assert_eq!(ring.window_where(0, 0, |_| true), None);
    }

    #[test]
    fn copies_are_apart_when_each_stripe_has_them_in_distinct_domains() {
        let ring = Ring::ordered(
            1,
            [
                (1, Some("a")),
                (4, Some("b")),
                (2, Some("a")),
                (5, None),
                (3, Some("a")),
            ]
            .into_iter()
            .map(|(id, d)| DataServer {
                id,
                failure_domain: d.map(str::to_owned),
                ..Default::default()
            })
            .collect(),
        );
        let apart =
            |count, first, stripes| ring.copies_apart(&ring.device(count, first).unwrap(), stripes);
        // One stripe, two copies: ids 1 (a) and 4 (b); 2 (a) and 5 (none: its own).
        assert!(apart(2, 0, 1));
        assert!(apart(2, 2, 1));
        // 3 (a) and, wrapping, 1 (a).
        assert!(!apart(2, 4, 1));
        // Three copies: 1, 4, 2 has rack a twice.
        assert!(!apart(3, 0, 1));
        assert!(apart(3, 1, 1));
        // Two stripes of two copies: window 4, 2, 5, 3 pairs 4-5 and 2-3 (both a).
        assert!(!apart(4, 1, 2));
        // Window 1, 4, 2, 5 pairs 1-2 (both a).
        assert!(!apart(4, 0, 2));
        // Copies need distinct servers even without domains: a window wider than the ring is
        // no device at all, and first_window finds none.
        assert_eq!(ring.first_window(6, 0, |_| true), None);
        assert_eq!(
            ring.first_window(2, 4, |d| ring.copies_apart(d, 1)),
            ring.device(2, 0)
        );
    }
}

//! The `cluster` section: the data servers, the secret they share with the MDS, and the layout
//! policy. See the YAML example in [`crate::config`].
//!
//! With no `cluster` section the configuration is the all-in-one default: three data servers
//! on this host (ids 1-3; NFS on ports 20491-20493 of every address, advertised as
//! `0.0.0.0:2049x`, i.e. at whatever address the client reached the MDS; control on
//! 127.0.0.1:20591-20593), objects under `<data_dir>/ds<id>`, and a secret generated once into
//! `<data_dir>/cluster.secret`. `data_servers: []` is an MDS without data servers, which
//! serves file data itself.
//!
//! The secret's reading and generation are in `secret`, the checks serde cannot make in
//! `validate`.

use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};

use layouts::Packing;
use serde::Deserialize;

use super::{err, Config, ConfigError};

mod secret;
#[cfg(test)]
mod tests;
mod validate;

pub use secret::ClusterSecret;

/// Bytes of a generated secret; also the least a configured one may have.
pub const SECRET_LEN: usize = 32;
/// Name of the generated secret's file in the data directory.
pub const SECRET_FILE: &str = "cluster.secret";
/// Most addresses one data server may list: each becomes a `netaddr4` of its GETDEVICEINFO
/// reply, which the Linux client wants under about 4 KiB for the whole device.
pub const MAX_DS_ADDRESSES: usize = 8;
/// What the control port of a data server without `control` is above its first port.
pub const CONTROL_PORT_OFFSET: u16 = 100;
/// What the RDMA port of a data server without `rdma_listen` is above its NFS listen port
/// (20491 -> 20691: the MDS has knfsd's 20049, and the data servers of one host each need
/// their own).
pub const RDMA_PORT_OFFSET: u16 = 200;

/// The cluster: data servers, their shared secret, the layout policy.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ClusterConfig {
    /// The secret the MDS and the data servers authenticate the control protocol with, as
    /// hex (at least 64 digits: 32 bytes). Anyone who knows it can command the data servers
    /// and read the keys that sign stateids, so prefer `secret_file` in a file others read.
    pub secret: Option<String>,
    /// A file holding the secret as hex (mode 0600 or stricter). With neither `secret` nor
    /// `secret_file`, the secret is `<data_dir>/cluster.secret`, generated on first start:
    /// right for one host (all-in-one); a cluster of several hosts sets one of the two.
    pub secret_file: Option<PathBuf>,
    /// The data servers, each with an id that stays stable (devices name them).
    pub data_servers: Vec<DataServerConfig>,
    /// How files are striped over the data servers.
    pub layout: LayoutConfig,
    /// Hand out file layouts (and grant `EXCHGID4_FLAG_USE_PNFS_MDS` in EXCHANGE_ID instead
    /// of `USE_NON_PNFS`); with it, I/O through the MDS stripes files over the data servers
    /// too (`mds::pnfs::datapath`), so a client without a layout sees the same bytes. On by
    /// default; off, the data servers hold nothing and the MDS keeps all data itself.
    pub layouts: bool,
}

/// One data server.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DataServerConfig {
    /// Id (1..=65535), unique and stable: `pnfs ds --id N` picks this entry. 0 is the MDS's
    /// node id in the control protocol.
    pub id: u16,
    /// Where clients reach its NFS service (`ip:port`; told to clients in GETDEVICEINFO, in
    /// this order; more than one is session trunking). An unspecified IP (`0.0.0.0:20491`)
    /// means "the MDS's host, at the address the client reached the MDS by"
    /// (`layouts::device::reachable`): right for an all-in-one host that clients reach over
    /// loopback, a veth pair or the LAN alike. A loopback IP is told as it is.
    pub addresses: Vec<SocketAddr>,
    /// Where its NFS service listens; default `0.0.0.0:<port of the first address>`.
    #[serde(default)]
    pub listen: Option<SocketAddr>,
    /// Where the MDS reaches its control service; default the first address's IP with its
    /// port + 100 (loopback for an unspecified IP).
    #[serde(default)]
    pub control: Option<SocketAddr>,
    /// Where its control service listens; default the `control` address itself (the control
    /// service is authenticated, but need not face every network).
    #[serde(default)]
    pub control_listen: Option<SocketAddr>,
    /// Where it serves NFS over RDMA (RPC-over-RDMA, RFC 8166) beside TCP; default the
    /// `listen` IP with its port + 200; `null` turns it off. Served when an RDMA device has
    /// the address; the data server then tells the MDS, which lists it first to clients that
    /// reached the MDS over RDMA (at each of `addresses`' IPs, with this port).
    #[serde(default, deserialize_with = "present")]
    pub rdma_listen: Option<Option<SocketAddr>>,
    /// Where it keeps its objects (`local`) or state; default `<data_dir>/ds<id>`.
    #[serde(default)]
    pub data_dir: Option<PathBuf>,
    /// The object store backend.
    #[serde(default)]
    pub backend: Backend,
    /// For `backend: shared`: the directory of the cluster file system that every data
    /// server (and the MDS, for I/O through it) mounts.
    #[serde(default)]
    pub shared_dir: Option<PathBuf>,
    /// What fails with it: its rack, power feed or host, as any name. The copies of a
    /// mirrored stripe go on data servers of distinct failure domains while the ring has a
    /// window that allows it (`ClusterConfig::ring_order`); a data server without one is a
    /// domain of its own.
    #[serde(default)]
    pub failure_domain: Option<String>,
}

/// A data server's object store (`pfs-core` backends).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Backend {
    /// Objects as files under the data server's `data_dir` (dense packing).
    #[default]
    Local,
    /// Keeps sizes, discards data, reads zeros: the software stack's ceiling.
    Null,
    /// Byte ranges of one file per file id under `shared_dir` (sparse packing).
    Shared,
}

/// Stripe unit and count: the cluster default, and overrides per export and per directory.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LayoutConfig {
    /// Bytes per stripe unit: a non-zero multiple of 64 (`nfl_util` keeps flags in the low 6
    /// bits, RFC 8881 section 13.3). Default 1 MiB, the default `max_io`: the Linux client
    /// cuts its READs and WRITEs at stripe unit boundaries, so a smaller unit would shrink
    /// every RPC below rsize/wsize, and a larger one sends a whole 1 MiB WRITE to one data
    /// server anyway.
    pub stripe_unit: u32,
    /// How many data servers a file is striped over; `null`: all of them (1 under flex
    /// files layouts).
    pub stripe_count: Option<u32>,
    /// The layout type clients get: `files` (LAYOUT4_NFSV4_1_FILES, RFC 8881 chapter 13, the
    /// default) or `flex_files` (LAYOUT4_FLEX_FILES, RFC 8435), which also serves file layouts
    /// to a client that asks for those. A flex files file lives whole on one data server (a
    /// stripe count of 1): RFC 8435 maps file offsets to data server offsets sparsely only,
    /// and the local backend keeps a stripe's bytes densely.
    pub layout_type: LayoutType,
    /// Under flex files layouts: how many data servers hold a whole copy of each file (RFC
    /// 8435 mirrors; the client writes every copy and reads any). Default 1 (no copies);
    /// at most the number of data servers. Refused under file layouts.
    pub mirrors: Option<u32>,
    /// Per-export overrides (unset fields inherit the ones above).
    pub exports: Vec<ExportLayout>,
    /// Per-directory overrides: a regular file created (by OPEN) in one of these directories,
    /// or anywhere below it, gets the policy of the nearest one at or above its directory,
    /// as Lustre's directory striping is inherited by new files (`mds::pnfs::dirlayout`).
    pub directories: Vec<DirectoryLayout>,
}

/// The layout policy of one export.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExportLayout {
    /// The export's id (`exports[].id`).
    pub export: u16,
    /// Stripe unit for files of this export.
    #[serde(default)]
    pub stripe_unit: Option<u32>,
    /// Stripe count for files of this export.
    #[serde(default)]
    pub stripe_count: Option<u32>,
    /// Layout type for files of this export.
    #[serde(default)]
    pub layout_type: Option<LayoutType>,
    /// Mirror count for files of this export (flex files only).
    #[serde(default)]
    pub mirrors: Option<u32>,
}

/// Which pNFS layout type an export's files are served with ([`LayoutConfig::layout_type`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LayoutType {
    /// LAYOUT4_NFSV4_1_FILES only.
    #[default]
    Files,
    /// LAYOUT4_FLEX_FILES, and LAYOUT4_NFSV4_1_FILES to a client that asks for it.
    FlexFiles,
}

/// The layout policy of one directory of an export and the tree below it. Unset fields
/// inherit the export's policy (not another configured directory's).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DirectoryLayout {
    /// The export's id (`exports[].id`); default the first export.
    #[serde(default)]
    pub export: Option<u16>,
    /// The directory, as an absolute path inside the export (`/` is the export's root),
    /// without `.` or `..`; made at start (mode 0755) if missing.
    pub path: String,
    /// Stripe unit for files created below it.
    #[serde(default)]
    pub stripe_unit: Option<u32>,
    /// Stripe count for files created below it.
    #[serde(default)]
    pub stripe_count: Option<u32>,
    /// Mirror count for files created below it (an export serving flex files only).
    #[serde(default)]
    pub mirrors: Option<u32>,
}

impl DirectoryLayout {
    /// The export it belongs to: `export`, or else the first of `exports`.
    pub fn export_in(&self, exports: &[super::ExportConfig]) -> Option<u16> {
        self.export.or_else(|| exports.first().map(|e| e.id))
    }

    /// The path's components (empty for the export's root), or a message saying why the
    /// path is not an absolute one without `.` or `..`.
    pub fn components(&self) -> Result<Vec<&str>, String> {
        let p = &self.path;
        if !p.starts_with('/') || p.split('/').any(|c| c == "." || c == "..") {
            return Err(format!(
                "{p:?} must be an absolute path inside the export, without . or .."
            ));
        }
        Ok(p.split('/').filter(|c| !c.is_empty()).collect())
    }
}

/// Stripe unit and count in effect for one export (or directory).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LayoutPolicy {
    /// Bytes per stripe unit.
    pub stripe_unit: u32,
    /// Data servers per file (at least 1, at most the number of data servers).
    pub stripe_count: u32,
    /// Dense for `local`/`null` data servers, sparse for `shared`.
    pub packing: Packing,
    /// Flex files layouts are served (and file layouts to clients that ask for them); the
    /// stripe count is then 1.
    pub flex_files: bool,
    /// Copies of each file on distinct data servers (1: none); more than 1 only with
    /// `flex_files`.
    pub mirrors: u32,
}

impl Default for ClusterConfig {
    fn default() -> Self {
        Self {
            secret: None,
            secret_file: None,
            data_servers: DataServerConfig::all_in_one(3),
            layout: LayoutConfig::default(),
            layouts: true,
        }
    }
}

impl Default for LayoutConfig {
    fn default() -> Self {
        Self {
            stripe_unit: 1 << 20,
            stripe_count: None,
            layout_type: LayoutType::Files,
            mirrors: None,
            exports: Vec::new(),
            directories: Vec::new(),
        }
    }
}

impl DataServerConfig {
    /// `n` data servers of the all-in-one host: ids 1..=n at `0.0.0.0:20490 + id` (told to
    /// clients as the address they reached the MDS by), everything else defaulted.
    pub fn all_in_one(n: u16) -> Vec<Self> {
        (1..=n)
            .map(|id| Self::new(id, SocketAddr::from(([0, 0, 0, 0], 20490 + id))))
            .collect()
    }

    /// A data server at `address` with every other field defaulted.
    pub fn new(id: u16, address: SocketAddr) -> Self {
        Self {
            id,
            addresses: vec![address],
            listen: None,
            control: None,
            control_listen: None,
            rdma_listen: None,
            data_dir: None,
            backend: Backend::Local,
            shared_dir: None,
            failure_domain: None,
        }
    }

    fn first(&self) -> SocketAddr {
        // validate() refuses an empty list; a default keeps this total.
        self.addresses
            .first()
            .copied()
            .unwrap_or_else(|| SocketAddr::from(([0, 0, 0, 0], 0)))
    }

    /// Where the NFS service listens.
    pub fn listen_addr(&self) -> SocketAddr {
        self.listen
            .unwrap_or_else(|| SocketAddr::from(([0, 0, 0, 0], self.first().port())))
    }

    /// Where its NFS over RDMA listens: `rdma_listen`, by default the NFS listen address with
    /// its port + [`RDMA_PORT_OFFSET`]; `None` when turned off (or the port would pass 65535).
    pub fn rdma_listen_addr(&self) -> Option<SocketAddr> {
        match self.rdma_listen {
            Some(set) => set,
            None => {
                let l = self.listen_addr();
                let port = l.port().checked_add(RDMA_PORT_OFFSET)?;
                Some(SocketAddr::new(l.ip(), port))
            }
        }
    }

    /// Where clients reach its NFS over RDMA once it listens there: each of `addresses`
    /// with the RDMA port.
    pub fn rdma_addresses(&self) -> Vec<SocketAddr> {
        let Some(port) = self.rdma_listen_addr().map(|a| a.port()) else {
            return Vec::new();
        };
        self.addresses
            .iter()
            .map(|a| SocketAddr::new(a.ip(), port))
            .collect()
    }

    /// Where the MDS reaches the control service; `None` when there is no default (the first
    /// port + 100 is over 65535), which [`ClusterConfig::validate`] refuses.
    pub fn control_addr(&self) -> Option<SocketAddr> {
        if let Some(c) = self.control {
            return Some(c);
        }
        let first = self.first();
        let ip = if first.ip().is_unspecified() {
            match first.ip() {
                IpAddr::V4(_) => IpAddr::from([127, 0, 0, 1]),
                IpAddr::V6(_) => IpAddr::from([0u16, 0, 0, 0, 0, 0, 0, 1]),
            }
        } else {
            first.ip()
        };
        let port = first.port().checked_add(CONTROL_PORT_OFFSET)?;
        Some(SocketAddr::new(ip, port))
    }

    /// Where the control service listens.
    pub fn control_listen_addr(&self) -> Option<SocketAddr> {
        self.control_listen.or_else(|| self.control_addr())
    }

    /// The data server's own directory, given the top-level `data_dir`.
    pub fn data_dir_in(&self, data_dir: &Path) -> PathBuf {
        self.data_dir
            .clone()
            .unwrap_or_else(|| data_dir.join(format!("ds{}", self.id)))
    }
}

impl ClusterConfig {
    /// The data server with this id.
    pub fn data_server(&self, id: u16) -> Option<&DataServerConfig> {
        self.data_servers.iter().find(|d| d.id == id)
    }

    /// The data servers as the layout code's ring of generation `generation`, in
    /// [`ClusterConfig::ring_order`].
    pub fn ring(&self, generation: u32) -> layouts::Ring {
        layouts::Ring::ordered(
            generation,
            self.ring_order()
                .into_iter()
                .filter_map(|id| self.data_server(id))
                .map(|d| layouts::DataServer {
                    id: u32::from(d.id),
                    addresses: d.addresses.clone(),
                    // Told once the data server says it listens there (at REGISTER).
                    rdma_addresses: Vec::new(),
                    failure_domain: d.failure_domain.clone(),
                })
                .collect(),
        )
    }

    /// The data server ids in ring order, which a ring generation records: ascending ids,
    /// unless data servers name failure domains; then the domains take turns (each domain's
    /// servers in id order, the domain with the most servers left first, never the previous
    /// one's while another has servers left), so that a window of consecutive servers, which
    /// holds the copies of a mirrored stripe, spans domains wherever the domains' sizes
    /// allow. A server without a domain is a domain of its own.
    pub fn ring_order(&self) -> Vec<u16> {
        let mut ids: Vec<u16> = self.data_servers.iter().map(|d| d.id).collect();
        ids.sort_unstable();
        ids.dedup();
        if self.data_servers.iter().all(|d| d.failure_domain.is_none()) {
            return ids;
        }
        // Domains in order of their lowest id, each a queue of its servers.
        let mut domains: Vec<(Option<&str>, std::collections::VecDeque<u16>)> = Vec::new();
        for id in ids {
            let domain = self
                .data_server(id)
                .and_then(|d| d.failure_domain.as_deref());
            match domains
                .iter_mut()
                .find(|(d, _)| d.is_some() && *d == domain)
            {
                Some((_, q)) => q.push_back(id),
                None => domains.push((domain, [id].into())),
            }
        }
        let mut order = Vec::new();
        let mut last: Option<usize> = None;
        while let Some(next) = (0..domains.len())
            .filter(|&i| !domains[i].1.is_empty())
            // Most left first; the earlier domain on a tie; the last one only if alone.
            .min_by_key(|&i| (Some(i) == last, std::cmp::Reverse(domains[i].1.len()), i))
        {
            order.extend(domains[next].1.pop_front());
            last = Some(next);
        }
        order
    }

    /// Dense packing unless the data servers use the `shared` backend (validation refuses a
    /// mix).
    pub fn packing(&self) -> Packing {
        if self
            .data_servers
            .iter()
            .any(|d| d.backend == Backend::Shared)
        {
            Packing::Sparse
        } else {
            Packing::Dense
        }
    }

    /// Whether the MDS hands out layouts: `layouts` is on and there are data servers to put
    /// in them. Decides the pNFS role flag of EXCHANGE_ID (RFC 8881 section 13.1).
    pub fn grants_layouts(&self) -> bool {
        self.layouts && !self.data_servers.is_empty()
    }

    /// The stripe unit, count and packing for files of `export`; `None` without data servers.
    pub fn layout_for(&self, export: u16) -> Option<LayoutPolicy> {
        let n = u32::try_from(self.data_servers.len())
            .ok()
            .filter(|&n| n > 0)?;
        let over = self.layout.exports.iter().find(|e| e.export == export);
        let unit = over
            .and_then(|o| o.stripe_unit)
            .unwrap_or(self.layout.stripe_unit);
        let flex_files = over
            .and_then(|o| o.layout_type)
            .unwrap_or(self.layout.layout_type)
            == LayoutType::FlexFiles;
        let count = if flex_files {
            1
        } else {
            over.and_then(|o| o.stripe_count)
                .or(self.layout.stripe_count)
                .unwrap_or(n)
                .min(n)
        };
        let mirrors = if flex_files {
            over.and_then(|o| o.mirrors)
                .or(self.layout.mirrors)
                .unwrap_or(1)
                .clamp(1, n)
        } else {
            1
        };
        Some(LayoutPolicy {
            stripe_unit: unit,
            stripe_count: count,
            packing: self.packing(),
            flex_files,
            mirrors,
        })
    }

    /// The stripe unit, count and packing for files created below configured directory
    /// `dir` of `export`: the export's policy ([`ClusterConfig::layout_for`]) with the
    /// directory's fields put over it; `None` without data servers.
    pub fn layout_for_directory(&self, export: u16, dir: &DirectoryLayout) -> Option<LayoutPolicy> {
        let mut p = self.layout_for(export)?;
        if let Some(u) = dir.stripe_unit {
            p.stripe_unit = u;
        }
        if let Some(c) = dir.stripe_count.filter(|_| !p.flex_files) {
            let n = u32::try_from(self.data_servers.len()).unwrap_or(u32::MAX);
            p.stripe_count = c.min(n);
        }
        if let Some(m) = dir.mirrors.filter(|_| p.flex_files) {
            let n = u32::try_from(self.data_servers.len()).unwrap_or(u32::MAX);
            p.mirrors = m.clamp(1, n);
        }
        Some(p)
    }
}

/// For a field whose absence and `null` differ: absent is `None` (the field's `default`),
/// present is `Some` of what it says, `null` included.
fn present<'de, D, T>(d: D) -> Result<Option<Option<T>>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de>,
{
    Option::<T>::deserialize(d).map(Some)
}

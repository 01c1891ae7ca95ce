//! Server configuration: one YAML file that a cluster shares, every field with a default so
//! that an empty file (or none) serves a working all-in-one server from `./pnfs-data`.
//!
//! The MDS and every data server (`pnfs ds --id N`) read the same file, so its format lives
//! here, beside the other formats they share. [`Config::parse`] checks everything a file can
//! say on its own; how the exports nest into the MDS's namespace (and which configured
//! directories sit behind a junction) is the MDS's to check, since only the MDS builds that
//! namespace (`mds::config::parse` runs both).
//!
//! ```yaml
//! listen: 0.0.0.0:2049
//! metrics_listen: 127.0.0.1:9249   # Prometheus text counters (`pnfs stats`); null: off
//! data_dir: ./pnfs-data
//! lease_time: 90          # seconds
//! grace_time: 90          # seconds; 0 disables the grace period
//! delegations: true       # grant read and write delegations on OPEN (recalled on conflict)
//! exports:
//!   - id: 1               # stable: part of every filehandle
//!     path: /             # directory in the server's namespace (made if missing)
//!     pseudo: /           # where clients see it: exports not at / hang from read-only
//!                         # pseudo directories; an export at / carries the others as
//!                         # junctions in its root
//!     delegations: null  # true | false: overrides the top-level switch for this export
//!     clients:
//!       - network: 127.0.0.0/8
//!         access: rw      # rw | ro
//!         root_squash: false  # true: uid 0 and gid 0 (also supplementary) act as 65534
//!       - network: 0.0.0.0/0
//!         access: ro
//! rdma:                   # NFS over RDMA (MDS and data servers)
//!   inline: 4096          # eager/rendezvous switch: bytes a message may have without
//!                         # chunks, each way (RFC 8797; a multiple of 1024, up to 256 KiB)
//!   credits: 64           # calls a client may have outstanding per connection
//!   chunk_buffers: 16     # registered buffers of max_io + 16 KiB kept per connection
//!                         # (the registration cache); 0: register each chunk for its use
//! limits:
//!   max_record: 4194304   # largest RPC record accepted
//!   max_io: 1048576       # largest READ/WRITE
//!   max_ops: 64           # ca_maxoperations
//!   max_slots: 64         # ca_maxrequests
//!   max_clients: 16384    # client records; past it a new client's EXCHANGE_ID gets
//!                         # NFS4ERR_DELAY (clients already known always get in)
//!   max_sessions: 16384   # sessions beyond each client's first; past it, and past 16
//!                         # for one client, CREATE_SESSION gets NFS4ERR_DELAY
//!   max_connections: null # connections open at once per listener (the MDS's NFS port, each
//!                         # data server's NFS and control ports); past it a new one is
//!                         # closed at once. null: the descriptor limit (raised to the hard
//!                         # limit at start) less 128, shared evenly by the process's listeners
//!   idle_timeout: 360     # seconds before an idle connection that no session holds is
//!                         # closed, and a peer that takes no reply is dropped; 0: never
//!   reply_budget: 268435456           # bytes of replies not yet written, per server; past
//!                                     # it connections stop reading calls until they drain
//!   connection_reply_budget: 33554432 # the same, per connection (each call reserves
//!                                     # max_io + 64 KiB of it before it runs)
//! cluster:                # the data servers (pNFS); `data_servers: []`: the MDS serves data
//!   secret: null          # hex, >= 64 digits, shared by MDS and data servers for the control
//!                         # protocol (then this file must be mode 0600 or stricter); or
//!                         # secret_file: /etc/pnfs/secret (mode 0600); with neither:
//!                         # <data_dir>/cluster.secret, generated once (one host only)
//!   data_servers:         # default: these three, all on this host
//!     - id: 1             # 1..=65535, stable (`pnfs ds --id 1`)
//!       addresses: [0.0.0.0:20491]    # ip:port told to clients; 0.0.0.0 = this host, told
//!                                     # as the address the client reached the MDS by
//!       listen: 0.0.0.0:20491         # default: 0.0.0.0:<port of the first address>
//!       control: 127.0.0.1:20591      # control service; default: first IP, port + 100
//!       control_listen: 127.0.0.1:20591   # default: the control address
//!       rdma_listen: 0.0.0.0:20691    # NFS over RDMA, when an RDMA device has the address;
//!                                     # default: listen's IP, port + 200; null: off
//!       data_dir: ./pnfs-data/ds1     # default: <data_dir>/ds<id>
//!       backend: local    # local | null (sizes only) | shared (needs shared_dir)
//!       shared_dir: null  # backend shared: the cluster file system directory
//!       failure_domain: null  # its rack, power feed or host, any name: mirrors of a
//!                             # stripe go on distinct domains; null: a domain of its own
//!     - { id: 2, addresses: [0.0.0.0:20492] }
//!     - { id: 3, addresses: [0.0.0.0:20493] }
//!   layouts: true         # hand out file layouts (pNFS MDS role); false: the MDS keeps
//!                         # all file data itself
//!   layout:               # fixed per file at its first LAYOUTGET or WRITE, or at its create
//!                         # under a configured directory; later changes move only new files
//!     stripe_unit: 1048576  # bytes, a multiple of 64
//!     stripe_count: null    # data servers per file; null: all (1 under flex_files)
//!     layout_type: files    # files | flex_files (RFC 8435: each file whole on one data
//!                           # server; clients that ask for file layouts still get them)
//!     mirrors: 1            # flex_files only: whole copies of each file on distinct data
//!                           # servers (the client writes all, reads any; 2 survives one
//!                           # data server's loss)
//!     exports:              # per-export overrides
//!       - { export: 1, stripe_unit: 4194304, stripe_count: 2 }
//!     directories:          # per-directory overrides (unset fields: the export's policy)
//!                           # for regular files OPEN creates in or below the nearest one
//!       - export: 1         # default: the first export
//!         path: /scratch    # inside the export; made at start (0755) if missing
//!         stripe_unit: 65536
//!         stripe_count: 1   # (and mirrors, on a flex_files export)
//! ```
//!
//! Errors name the field and the value: `exports[0].clients[1].network: "10.0.0.0/33" is not
//! an address/prefix (prefix longer than 32)`.

use std::fmt;
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};

use serde::Deserialize;

mod cluster;

pub use cluster::{
    Backend, ClusterConfig, ClusterSecret, DataServerConfig, DirectoryLayout, ExportLayout,
    LayoutConfig, LayoutPolicy, LayoutType, CONTROL_PORT_OFFSET, MAX_DS_ADDRESSES,
    RDMA_PORT_OFFSET, SECRET_FILE, SECRET_LEN,
};

/// The whole configuration.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    /// Address the NFS service listens on (NFSv4 needs no portmapper).
    pub listen: SocketAddr,
    /// Address of the HTTP counters page (Prometheus text format); `null` turns it off.
    pub metrics_listen: Option<SocketAddr>,
    /// Where NFS over RDMA (RPC-over-RDMA, RFC 8166) listens, beside TCP: port 20049 as
    /// knfsd's. Served when the binary has the `rdma` feature and an RDMA device has the
    /// address (the server says in one line why not otherwise); `null` turns it off.
    pub rdma_listen: Option<SocketAddr>,
    /// How NFS over RDMA sizes its connections (the MDS's and every data server's).
    pub rdma: RdmaConfig,
    /// Where the metadata store and file data live.
    pub data_dir: PathBuf,
    /// Lease time in seconds (RFC 8881 section 8.3): how long a silent client keeps its state.
    pub lease_time: u32,
    /// Grace period after a restart, in seconds, during which clients reclaim state.
    pub grace_time: u32,
    /// Grant delegations (RFC 8881 section 10.2): a client alone on a file caches it without
    /// asking the server, and the server recalls the delegation when another client needs
    /// the file. On by default, as in knfsd.
    pub delegations: bool,
    /// What is exported, and to whom.
    pub exports: Vec<ExportConfig>,
    /// Protocol limits.
    pub limits: Limits,
    /// The data servers, their shared secret and the layout policy.
    pub cluster: ClusterConfig,
}

/// One export.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExportConfig {
    /// Export id (1..=65535), part of every filehandle: keep it stable.
    pub id: u16,
    /// Directory in the server's namespace that is exported (`/` for the root).
    #[serde(default = "slash")]
    pub path: String,
    /// Where it appears under the pseudo-root.
    #[serde(default = "slash")]
    pub pseudo: String,
    /// Access rules, first match wins; a client matching none is refused.
    #[serde(default = "default_clients")]
    pub clients: Vec<ClientRule>,
    /// Delegations for this export: `None` follows the top-level `delegations`.
    #[serde(default)]
    pub delegations: Option<bool>,
}

/// Access for clients from one network.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClientRule {
    /// `address/prefix`, e.g. `192.168.0.0/16`, `::1/128`, or a bare address.
    pub network: String,
    /// Read-write or read-only.
    #[serde(default)]
    pub access: Access,
    /// Map uid 0 to the anonymous uid and gid 0 (primary or supplementary) to the anonymous
    /// gid (65534 both), as knfsd's `root_squash`.
    #[serde(default)]
    pub root_squash: bool,
}

/// Export access mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Access {
    /// Read and write.
    #[default]
    Rw,
    /// Read only: changes get NFS4ERR_ROFS.
    Ro,
}

/// How NFS over RDMA sizes its connections, on the MDS and every data server.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RdmaConfig {
    /// The eager/rendezvous switch: the largest message sent or received without chunks
    /// (RFC 8797's inline threshold, each way; the client's may lower it). Larger calls come
    /// with Read chunks the server pulls, larger replies go out in Write and Reply chunks.
    /// Bytes, a multiple of 1024 in 1024..=262144.
    pub inline: u32,
    /// Credits: calls a client may have outstanding on one connection (1..=1024); each holds
    /// a receive buffer of `inline` bytes.
    pub credits: u32,
    /// Registered buffers of `limits.max_io` + 16 KiB kept per connection for chunks and READ
    /// data (the registration cache; 0: every chunk is registered for its one use).
    pub chunk_buffers: usize,
}

impl Default for RdmaConfig {
    fn default() -> Self {
        Self {
            inline: 4096,
            credits: 64,
            chunk_buffers: 16,
        }
    }
}

/// Protocol limits.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Limits {
    /// Largest RPC record accepted; a larger one closes the connection.
    pub max_record: u32,
    /// Largest READ or WRITE payload.
    pub max_io: u32,
    /// Most operations in one COMPOUND (`ca_maxoperations`).
    pub max_ops: u32,
    /// Slots per session (`ca_maxrequests`).
    pub max_slots: u32,
    /// Most client records (each a few hundred bytes plus its sessions and state): past it,
    /// the EXCHANGE_ID of a new client owner gets `NFS4ERR_DELAY` once no unconfirmed or
    /// expired record can make room; a client the server already knows is never refused
    /// (see `nfs_server::state::client`). Applies to the MDS and to each data server.
    pub max_clients: usize,
    /// Most sessions (each holds up to `max_slots` cached replies), not counting each client's
    /// first session, which is never refused: past it, CREATE_SESSION gets `NFS4ERR_DELAY`
    /// (see `nfs_server::state::session`). Applies to the MDS and to each data server.
    pub max_sessions: usize,
    /// Connections open at once on each listener (the MDS's NFS port, each data server's NFS
    /// and control ports); past it a new connection is closed as soon as it is accepted, so
    /// that the process never runs out of descriptors. `None`: derived from the descriptor
    /// limit ([`Limits::serve_limits`]).
    pub max_connections: Option<u32>,
    /// Seconds an idle connection that no session holds stays open (knfsd ages such
    /// connections out after about 6 minutes); a peer that takes no reply off the socket for
    /// as long is dropped too. 0: never.
    pub idle_timeout: u32,
    /// Bytes of encoded replies a server holds before they are written, across its
    /// connections: past it connections stop reading calls until replies drain, so peers that
    /// do not read cannot grow the server's memory.
    pub reply_budget: u64,
    /// The same bound for one connection: a peer that does not read holds at most this much.
    /// Every call reserves one READ's reply (`max_io` + 64 KiB) of it before it runs.
    pub connection_reply_budget: u64,
}

fn slash() -> String {
    "/".into()
}

fn default_clients() -> Vec<ClientRule> {
    vec![
        ClientRule {
            network: "0.0.0.0/0".into(),
            access: Access::Rw,
            root_squash: false,
        },
        ClientRule {
            network: "::/0".into(),
            access: Access::Rw,
            root_squash: false,
        },
    ]
}

impl Default for Config {
    fn default() -> Self {
        Self {
            listen: "0.0.0.0:2049".parse().expect("literal address"),
            metrics_listen: Some("127.0.0.1:9249".parse().expect("literal address")),
            rdma_listen: Some("0.0.0.0:20049".parse().expect("literal address")),
            rdma: RdmaConfig::default(),
            data_dir: PathBuf::from("./pnfs-data"),
            lease_time: 90,
            grace_time: 90,
            delegations: true,
            exports: vec![ExportConfig {
                id: 1,
                path: slash(),
                pseudo: slash(),
                clients: default_clients(),
                delegations: None,
            }],
            limits: Limits::default(),
            cluster: ClusterConfig::default(),
        }
    }
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_record: 4 << 20,
            max_io: 1 << 20,
            max_ops: 64,
            max_slots: 64,
            max_clients: nfs_server::state::client::DEFAULT_MAX_CLIENTS,
            max_sessions: nfs_server::state::session::DEFAULT_MAX_SESSIONS,
            max_connections: None,
            idle_timeout: 360,
            reply_budget: 256 << 20,
            connection_reply_budget: 32 << 20,
        }
    }
}

impl Limits {
    /// The connection limits of one server of a process with `listeners` listeners: the
    /// configured cap, or [`nfs_server::fd_limit::auto_max_connections`] of the descriptor
    /// limit now in effect.
    pub fn serve_limits(&self, listeners: usize) -> nfs_server::ServeLimits {
        let auto = || {
            nfs_server::fd_limit::auto_max_connections(nfs_server::fd_limit::nofile(), listeners)
        };
        nfs_server::ServeLimits {
            max_connections: self.max_connections.map_or_else(auto, |n| n as usize),
            idle_timeout: (self.idle_timeout > 0)
                .then(|| std::time::Duration::from_secs(self.idle_timeout.into())),
            reply_budget: usize::try_from(self.reply_budget).unwrap_or(usize::MAX),
            connection_reply_budget: usize::try_from(self.connection_reply_budget)
                .unwrap_or(usize::MAX),
            call_reserve: self.max_io as usize + nfs_server::accept::REPLY_HEADROOM,
        }
    }
}

/// The largest `limits.max_clients` and `limits.max_sessions`: a bound, not a target (a
/// million clients with their sessions need gigabytes).
pub const MAX_CAP: usize = 1 << 20;

/// A configuration that cannot be used, naming the field and the value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    /// Where: `exports[0].clients[1].network`, or the file for syntax errors.
    pub field: String,
    /// What is wrong, with the offending value.
    pub message: String,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field, self.message)
    }
}

impl std::error::Error for ConfigError {}

impl ConfigError {
    /// An error of `field` saying `message`.
    pub fn new(field: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            field: field.into(),
            message: message.into(),
        }
    }
}

/// A [`ConfigError`] for `field`.
pub(crate) fn err(field: impl Into<String>, message: impl Into<String>) -> ConfigError {
    ConfigError::new(field, message)
}

/// An `address/prefix` network.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Network {
    addr: IpAddr,
    prefix: u8,
}

impl Network {
    /// Parses `addr/prefix` or a bare address.
    pub fn parse(s: &str) -> Result<Self, String> {
        let (a, p) = match s.split_once('/') {
            Some((a, p)) => (a, Some(p)),
            None => (s, None),
        };
        let addr: IpAddr = a
            .trim()
            .parse()
            .map_err(|_| format!("{s:?} is not an IP address"))?;
        let max = if addr.is_ipv4() { 32 } else { 128 };
        let prefix = match p {
            None => max,
            Some(p) => p
                .trim()
                .parse::<u8>()
                .ok()
                .filter(|&p| p <= max)
                .ok_or_else(|| {
                    format!("{s:?} is not an address/prefix (prefix longer than {max})")
                })?,
        };
        Ok(Self { addr, prefix })
    }

    /// Whether `ip` is in this network (IPv4-mapped IPv6 addresses match IPv4 networks).
    pub fn contains(&self, ip: IpAddr) -> bool {
        let ip = match ip {
            IpAddr::V6(v6) => v6.to_ipv4_mapped().map(IpAddr::V4).unwrap_or(ip),
            v4 => v4,
        };
        match (self.addr, ip) {
            (IpAddr::V4(n), IpAddr::V4(a)) => {
                let mask = u32::MAX.checked_shl(32 - self.prefix as u32).unwrap_or(0);
                u32::from(n) & mask == u32::from(a) & mask
            }
            (IpAddr::V6(n), IpAddr::V6(a)) => {
                let mask = u128::MAX.checked_shl(128 - self.prefix as u32).unwrap_or(0);
                u128::from(n) & mask == u128::from(a) & mask
            }
            _ => false,
        }
    }
}

impl Config {
    /// Reads and validates a YAML file. A file with an inline `cluster.secret` must be
    /// private (mode 0600 or stricter; [`ClusterConfig::check_inline_secret`]). The mode is
    /// that of the file as opened, so a file swapped after the check is not the one read.
    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        use std::io::Read;
        use std::os::unix::fs::PermissionsExt;
        let cannot =
            |e: std::io::Error| err(path.display().to_string(), format!("cannot read: {e}"));
        let mut file = std::fs::File::open(path).map_err(cannot)?;
        let mode = file.metadata().map_err(cannot)?.permissions().mode();
        let mut text = String::new();
        file.read_to_string(&mut text).map_err(cannot)?;
        let cfg = Self::parse(&text).map_err(|mut e| {
            if e.field.is_empty() {
                e.field = path.display().to_string();
            }
            e
        })?;
        cfg.cluster.check_inline_secret(path, mode)?;
        Ok(cfg)
    }

    /// Parses and validates YAML text.
    pub fn parse(text: &str) -> Result<Self, ConfigError> {
        let cfg: Config = if text.trim().is_empty() {
            Config::default()
        } else {
            serde_yaml::from_str(text).map_err(|e| {
                // serde_yaml names unknown fields and bad values; keep its location too.
                let field = e
                    .location()
                    .map(|l| format!("line {} column {}", l.line(), l.column()))
                    .unwrap_or_default();
                err(field, e.to_string())
            })?
        };
        cfg.validate()?;
        Ok(cfg)
    }

    /// Checks what serde cannot: ranges, uniqueness, address syntax. Not how the exports
    /// nest (`mds::config::check_namespace`).
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.lease_time < 10 || self.lease_time > 3600 {
            return Err(err(
                "lease_time",
                format!("{} is outside 10..=3600 seconds", self.lease_time),
            ));
        }
        if self.grace_time > 3600 {
            return Err(err(
                "grace_time",
                format!("{} is over 3600 seconds", self.grace_time),
            ));
        }
        if self.exports.is_empty() {
            return Err(err("exports", "at least one export is needed"));
        }
        let r = &self.rdma;
        if !(1024..=262_144).contains(&r.inline) || !r.inline.is_multiple_of(1024) {
            return Err(err(
                "rdma.inline",
                format!("{} is not a multiple of 1024 in 1024..=262144", r.inline),
            ));
        }
        if !(1..=1024).contains(&r.credits) {
            return Err(err(
                "rdma.credits",
                format!("{} is outside 1..=1024", r.credits),
            ));
        }
        if r.chunk_buffers > 4096 {
            return Err(err(
                "rdma.chunk_buffers",
                format!("{} is over 4096", r.chunk_buffers),
            ));
        }
        let mut ids = std::collections::HashSet::new();
        let mut pseudos = std::collections::HashSet::new();
        for (i, e) in self.exports.iter().enumerate() {
            let f = |name: &str| format!("exports[{i}].{name}");
            if e.id == 0 {
                return Err(err(f("id"), "0 is reserved for the pseudo-root"));
            }
            if !ids.insert(e.id) {
                return Err(err(f("id"), format!("{} is used by another export", e.id)));
            }
            for (name, p) in [("path", &e.path), ("pseudo", &e.pseudo)] {
                if !p.starts_with('/') || p.split('/').any(|c| c == "." || c == "..") {
                    return Err(err(
                        f(name),
                        format!("{p:?} must be an absolute path without . or .."),
                    ));
                }
            }
            if !pseudos.insert(normalize(&e.pseudo)) {
                return Err(err(
                    f("pseudo"),
                    format!("{:?} is used by another export", e.pseudo),
                ));
            }
            for (j, c) in e.clients.iter().enumerate() {
                Network::parse(&c.network)
                    .map_err(|m| err(format!("exports[{i}].clients[{j}].network"), m))?;
            }
        }
        // How the exports join (nesting rules) is the MDS's to check: it builds the tree
        // (`mds::config::check_namespace`).
        let l = &self.limits;
        if !(1024..=64 << 20).contains(&l.max_record) {
            return Err(err(
                "limits.max_record",
                format!("{} is outside 1024..=67108864", l.max_record),
            ));
        }
        if l.max_io < 4096 || l.max_io > l.max_record.saturating_sub(512) {
            return Err(err(
                "limits.max_io",
                format!(
                    "{} must be at least 4096 and leave 512 bytes of max_record ({}) for headers",
                    l.max_io, l.max_record
                ),
            ));
        }
        if !(2..=1024).contains(&l.max_ops) {
            return Err(err(
                "limits.max_ops",
                format!("{} is outside 2..=1024", l.max_ops),
            ));
        }
        if !(1..=1024).contains(&l.max_slots) {
            return Err(err(
                "limits.max_slots",
                format!("{} is outside 1..=1024", l.max_slots),
            ));
        }
        if !(1..=MAX_CAP).contains(&l.max_clients) {
            return Err(err(
                "limits.max_clients",
                format!("{} is outside 1..={MAX_CAP}", l.max_clients),
            ));
        }
        if l.max_sessions > MAX_CAP {
            return Err(err(
                "limits.max_sessions",
                format!("{} is outside 0..={MAX_CAP}", l.max_sessions),
            ));
        }
        if l.max_connections == Some(0) {
            return Err(err("limits.max_connections", "0 would refuse every client"));
        }
        if l.reply_budget < u64::from(l.max_record) {
            return Err(err(
                "limits.reply_budget",
                format!(
                    "{} is less than one reply of max_record ({})",
                    l.reply_budget, l.max_record
                ),
            ));
        }
        if l.connection_reply_budget < u64::from(l.max_record)
            || l.connection_reply_budget > l.reply_budget
        {
            return Err(err(
                "limits.connection_reply_budget",
                format!(
                    "{} is outside max_record ({})..=reply_budget ({})",
                    l.connection_reply_budget, l.max_record, l.reply_budget
                ),
            ));
        }
        self.cluster.validate(self)
    }
}

/// `/a//b/` -> `/a/b`.
pub fn normalize(p: &str) -> String {
    let parts: Vec<&str> = p.split('/').filter(|c| !c.is_empty()).collect();
    format!("/{}", parts.join("/"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_file_gives_the_all_in_one_defaults() {
        let c = Config::parse("").unwrap();
        assert_eq!(c, Config::default());
        assert_eq!(c.listen.port(), 2049);
        assert_eq!(c.data_dir, PathBuf::from("./pnfs-data"));
    }

    #[test]
    fn a_full_file_parses() {
        let c = Config::parse(
            "listen: 127.0.0.1:20490\ndata_dir: /tmp/x\nlease_time: 30\ngrace_time: 0\n\
             exports:\n  - id: 7\n    path: /projects\n    pseudo: /p\n    clients:\n      \
             - network: 10.1.0.0/16\n        access: ro\n        root_squash: true\n\
             limits:\n  max_ops: 16\n",
        )
        .unwrap();
        assert_eq!(c.exports[0].clients[0].access, Access::Ro);
        assert!(c.exports[0].clients[0].root_squash);
        assert_eq!(c.limits.max_ops, 16);
        assert_eq!(c.limits.max_io, Limits::default().max_io);
    }

    #[test]
    fn the_example_in_the_module_documentation_is_valid_and_spells_out_the_defaults() {
        let src = include_str!("config.rs");
        let yaml: String = src
            .lines()
            .skip_while(|l| !l.starts_with("//! ```yaml"))
            .skip(1)
            .take_while(|l| !l.starts_with("//! ```"))
            .map(|l| format!("{}\n", l.strip_prefix("//! ").unwrap_or("")))
            .collect();
        assert!(yaml.contains("cluster:"), "{yaml}");
        let c = Config::parse(&yaml).unwrap();
        let d = Config::default();
        assert_eq!(c.cluster.data_servers.len(), d.cluster.data_servers.len());
        for (a, b) in c.cluster.data_servers.iter().zip(&d.cluster.data_servers) {
            assert_eq!(a.addresses, b.addresses);
            assert_eq!(a.listen_addr(), b.listen_addr());
            assert_eq!(a.control_addr(), b.control_addr());
            assert_eq!(a.control_listen_addr(), b.control_listen_addr());
            assert_eq!(a.data_dir_in(&c.data_dir), b.data_dir_in(&d.data_dir));
        }
        assert_eq!(c.cluster.layout.stripe_unit, d.cluster.layout.stripe_unit);
        assert_eq!(c.limits, d.limits);
    }

    #[test]
    fn caps_on_clients_and_sessions_parse_and_are_checked() {
        let c = Config::parse("limits:\n  max_clients: 15000\n  max_sessions: 0\n").unwrap();
        assert_eq!(c.limits.max_clients, 15000);
        assert_eq!(
            c.limits.max_sessions, 0,
            "0: each client gets its first session only"
        );
        let e = Config::parse("limits:\n  max_clients: 0\n").unwrap_err();
        assert_eq!(e.field, "limits.max_clients");
        let e = Config::parse("limits:\n  max_sessions: 2000000\n").unwrap_err();
        assert_eq!(e.field, "limits.max_sessions");
        assert!(e.message.contains("2000000"), "{e}");
    }

    #[test]
    fn connection_limits_are_checked_and_become_the_servers_limits() {
        let field = |yaml: &str| Config::parse(yaml).unwrap_err().field;
        assert_eq!(
            field("limits:\n  reply_budget: 1000\n"),
            "limits.reply_budget"
        );
        assert_eq!(
            field("limits:\n  connection_reply_budget: 536870912\n"),
            "limits.connection_reply_budget"
        );
        assert_eq!(
            field("limits:\n  max_connections: 0\n"),
            "limits.max_connections"
        );
        let c = Config::parse(
            "limits:\n  max_connections: 10\n  idle_timeout: 0\n  reply_budget: 8388608\n  \
             connection_reply_budget: 4194304\n",
        )
        .unwrap();
        let s = c.limits.serve_limits(3);
        assert_eq!(
            (
                s.max_connections,
                s.idle_timeout,
                s.reply_budget,
                s.connection_reply_budget
            ),
            (10, None, 8 << 20, 4 << 20)
        );
        // Left to the descriptor limit: a share of it per listener.
        let d = Limits::default().serve_limits(3);
        assert_eq!(
            d.max_connections,
            nfs_server::fd_limit::auto_max_connections(nfs_server::fd_limit::nofile(), 3)
        );
        assert_eq!(d.idle_timeout, Some(std::time::Duration::from_secs(360)));
    }

    #[test]
    fn rdma_sizes_parse_and_are_checked() {
        let c =
            Config::parse("rdma:\n  inline: 8192\n  credits: 32\n  chunk_buffers: 0\n").unwrap();
        assert_eq!(
            c.rdma,
            RdmaConfig {
                inline: 8192,
                credits: 32,
                chunk_buffers: 0
            }
        );
        let field = |yaml: &str| Config::parse(yaml).unwrap_err().field;
        for bad in [
            "inline: 1000",
            "inline: 512",
            "inline: 524288",
            "credits: 0",
        ] {
            let f = field(&format!("rdma:\n  {bad}\n"));
            assert_eq!(
                f,
                format!("rdma.{}", bad.split(':').next().unwrap()),
                "{bad}"
            );
        }
        assert_eq!(
            field("rdma:\n  chunk_buffers: 5000\n"),
            "rdma.chunk_buffers"
        );
    }

    #[test]
    fn unknown_field_is_named() {
        let e = Config::parse("lease_tme: 30\n").unwrap_err();
        assert!(e.to_string().contains("lease_tme"), "{e}");
    }

    #[test]
    fn bad_value_names_field_and_value() {
        let e = Config::parse("exports:\n  - id: 1\n    clients:\n      - network: 10.0.0.0/33\n")
            .unwrap_err();
        assert_eq!(e.field, "exports[0].clients[0].network");
        assert!(e.message.contains("10.0.0.0/33"), "{e}");
        let e = Config::parse("lease_time: 5\n").unwrap_err();
        assert_eq!(e.to_string(), "lease_time: 5 is outside 10..=3600 seconds");
        let e = Config::parse("listen: nowhere\n").unwrap_err();
        assert!(
            e.to_string().contains("listen") || e.to_string().contains("nowhere"),
            "{e}"
        );
        // How exports nest (`pseudo: /a/b` inside export 1) is the MDS's to check:
        // `mds::config` tests it.
        let e = Config::parse("exports:\n  - id: 1\n  - id: 1\n    pseudo: /b\n").unwrap_err();
        assert_eq!(e.field, "exports[1].id");
    }

    #[test]
    fn networks_match_v4_v6_and_mapped_addresses() {
        let n = Network::parse("10.1.0.0/16").unwrap();
        assert!(n.contains("10.1.200.3".parse().unwrap()));
        assert!(n.contains("::ffff:10.1.0.9".parse().unwrap()));
        assert!(!n.contains("10.2.0.1".parse().unwrap()));
        assert!(Network::parse("0.0.0.0/0")
            .unwrap()
            .contains("8.8.8.8".parse().unwrap()));
        assert!(Network::parse("::1")
            .unwrap()
            .contains("::1".parse().unwrap()));
        assert!(Network::parse("fe80::/10")
            .unwrap()
            .contains("fe80::1".parse().unwrap()));
        assert!(Network::parse("bogus").is_err());
    }
}

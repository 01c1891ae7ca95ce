//! The `cluster` section: the data servers, the secret they share with the MDS, and the layout
//! policy. See the YAML example in [`crate::config`].
//!
//! With no `cluster` section the configuration is the all-in-one default: three data servers
//! on this host (ids 1-3; NFS on ports 20491-20493 of every address, advertised as
//! `0.0.0.0:2049x`, i.e. at whatever address the client reached the MDS; control on
//! 127.0.0.1:20591-20593), objects under `<data_dir>/ds<id>`, and a secret generated once into
//! `<data_dir>/cluster.secret`. `data_servers: []` is an MDS without data servers, which
//! serves file data itself.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::io::{Read, Write};
use std::net::{IpAddr, SocketAddr};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use layouts::Packing;
use serde::Deserialize;

use super::{err, Config, ConfigError};

/// Bytes of a generated secret; also the least a configured one may have.
pub const SECRET_LEN: usize = 32;
/// Name of the generated secret's file in the data directory.
pub const SECRET_FILE: &str = "cluster.secret";
/// Most addresses one data server may list: each becomes a `netaddr4` of its GETDEVICEINFO
/// reply, which the Linux client wants under about 4 KiB for the whole device.
pub const MAX_DS_ADDRESSES: usize = 8;
/// What the control port of a data server without `control` is above its first port.
pub const CONTROL_PORT_OFFSET: u16 = 100;

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
    /// How many data servers a file is striped over; `null`: all of them.
    pub stripe_count: Option<u32>,
    /// Per-export overrides (unset fields inherit the two above).
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
}

/// The cluster secret's bytes (never printed).
#[derive(Clone, PartialEq, Eq)]
pub struct ClusterSecret(Vec<u8>);

impl ClusterSecret {
    /// The secret.
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }
}

impl fmt::Debug for ClusterSecret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ClusterSecret(<{} bytes>)", self.0.len())
    }
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
            data_dir: None,
            backend: Backend::Local,
            shared_dir: None,
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

fn hex_secret(s: &str) -> Result<Vec<u8>, String> {
    let s = s.trim();
    if s.len() < 2 * SECRET_LEN
        || !s.len().is_multiple_of(2)
        || !s.bytes().all(|c| c.is_ascii_hexdigit())
    {
        return Err(format!(
            "a secret of {} characters is not at least {} hex digits ({SECRET_LEN} bytes) in \
             pairs; make one with `openssl rand -hex 32`",
            s.len(),
            2 * SECRET_LEN
        ));
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).map_err(|e| e.to_string()))
        .collect()
}

fn to_hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Whether a file with these permission bits may hold the secret: not if group or others
/// may read it (they would learn the secret) or write it (they would choose it).
fn private_mode(mode: u32) -> bool {
    mode & 0o077 == 0
}

/// Reads a secret file, refusing one that others may read.
fn read_secret_file(path: &Path) -> Result<Vec<u8>, String> {
    let meta = std::fs::metadata(path).map_err(|e| format!("cannot read: {e}"))?;
    let mode = meta.permissions().mode() & 0o777;
    if !private_mode(mode) {
        return Err(format!(
            "is readable or writable by others (mode {mode:04o}); chmod 600 it"
        ));
    }
    let mut text = String::new();
    std::fs::File::open(path)
        .and_then(|mut f| f.read_to_string(&mut text))
        .map_err(|e| format!("cannot read: {e}"))?;
    hex_secret(&text)
}

/// Creates `<dir>/cluster.secret` with a fresh random secret, unless a concurrent start made
/// it first: the secret is written whole to a private temporary file, which is then linked
/// to the final name (`link` fails if the name exists, so the file is never seen half
/// written and never replaced).
fn generate_secret_file(dir: &Path, path: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let mut secret = [0u8; SECRET_LEN];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut secret)?;
    let tmp = dir.join(format!(".{SECRET_FILE}.{}.tmp", std::process::id()));
    let _ = std::fs::remove_file(&tmp);
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&tmp)?;
    let written = f
        .write_all(format!("{}\n", to_hex(&secret)).as_bytes())
        .and_then(|()| f.sync_all())
        .and_then(|()| match std::fs::hard_link(&tmp, path) {
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
            r => r,
        });
    let _ = std::fs::remove_file(&tmp);
    written?;
    std::fs::File::open(dir)?.sync_all()
}

impl ClusterConfig {
    /// Refuses an inline `secret` in a configuration file (`path`, permission bits `mode`)
    /// that group or others may read or write, as a `secret_file` is refused: whoever reads
    /// the secret can sign control calls to the data servers and forge stateids, so it may
    /// not sit in a file that is typically left world-readable (`/etc` configs are 0644).
    pub fn check_inline_secret(&self, path: &Path, mode: u32) -> Result<(), ConfigError> {
        let mode = mode & 0o777;
        if self.secret.is_none() || private_mode(mode) {
            return Ok(());
        }
        Err(err(
            "cluster.secret",
            format!(
                "{} holds the cluster secret but is readable or writable by group or others \
                 (mode {mode:04o}); chmod 600 it, or move the secret to a file of mode 0600 \
                 named by cluster.secret_file",
                path.display()
            ),
        ))
    }

    /// The cluster secret: `secret`, or the contents of `secret_file`, or
    /// `<data_dir>/cluster.secret` (generated with 32 random bytes, mode 0600, on first use,
    /// so restarts and the other processes of one host keep using the same one).
    pub fn load_secret(&self, data_dir: &Path) -> Result<ClusterSecret, ConfigError> {
        if let Some(s) = &self.secret {
            return hex_secret(s)
                .map(ClusterSecret)
                .map_err(|m| err("cluster.secret", m));
        }
        if let Some(p) = &self.secret_file {
            return read_secret_file(p)
                .map(ClusterSecret)
                .map_err(|m| err("cluster.secret_file", format!("{}: {m}", p.display())));
        }
        let path = data_dir.join(SECRET_FILE);
        if !path.exists() {
            generate_secret_file(data_dir, &path).map_err(|e| {
                err(
                    "cluster.secret",
                    format!("cannot generate {}: {e}", path.display()),
                )
            })?;
        }
        read_secret_file(&path)
            .map(ClusterSecret)
            .map_err(|m| err("cluster.secret", format!("{}: {m}", path.display())))
    }

    /// The data server with this id.
    pub fn data_server(&self, id: u16) -> Option<&DataServerConfig> {
        self.data_servers.iter().find(|d| d.id == id)
    }

    /// The data servers as the layout code's ring of generation `generation` (id order).
    pub fn ring(&self, generation: u32) -> layouts::Ring {
        layouts::Ring::new(
            generation,
            self.data_servers
                .iter()
                .map(|d| layouts::DataServer {
                    id: u32::from(d.id),
                    addresses: d.addresses.clone(),
                })
                .collect(),
        )
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
        let count = over
            .and_then(|o| o.stripe_count)
            .or(self.layout.stripe_count)
            .unwrap_or(n)
            .min(n);
        Some(LayoutPolicy {
            stripe_unit: unit,
            stripe_count: count,
            packing: self.packing(),
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
        if let Some(c) = dir.stripe_count {
            let n = u32::try_from(self.data_servers.len()).unwrap_or(u32::MAX);
            p.stripe_count = c.min(n);
        }
        Some(p)
    }

    /// Checks what serde cannot; `cfg` is the whole configuration (exports, MDS ports).
    pub fn validate(&self, cfg: &Config) -> Result<(), ConfigError> {
        if let Some(s) = &self.secret {
            hex_secret(s).map_err(|m| err("cluster.secret", m))?;
            if self.secret_file.is_some() {
                return Err(err(
                    "cluster.secret_file",
                    "set either secret or secret_file, not both",
                ));
            }
        }
        let n = self.data_servers.len();
        let mut ids = HashSet::new();
        let mut advertised: HashMap<SocketAddr, String> = HashMap::new();
        for (i, d) in self.data_servers.iter().enumerate() {
            let f = |name: &str| format!("cluster.data_servers[{i}].{name}");
            if d.id == 0 {
                return Err(err(
                    f("id"),
                    "0 is the MDS's node id; data servers start at 1",
                ));
            }
            if !ids.insert(d.id) {
                return Err(err(
                    f("id"),
                    format!("{} is used by another data server", d.id),
                ));
            }
            if d.addresses.is_empty() || d.addresses.len() > MAX_DS_ADDRESSES {
                return Err(err(
                    f("addresses"),
                    format!(
                        "{} addresses: give 1 to {MAX_DS_ADDRESSES}",
                        d.addresses.len()
                    ),
                ));
            }
            for (j, a) in d.addresses.iter().enumerate() {
                if a.port() == 0 {
                    return Err(err(
                        format!("{}[{j}]", f("addresses")),
                        format!("{a} has port 0"),
                    ));
                }
                if let Some(other) = advertised.insert(*a, f(&format!("addresses[{j}]"))) {
                    return Err(err(
                        f(&format!("addresses[{j}]")),
                        format!("{a} is also {other}"),
                    ));
                }
            }
            if d.listen_addr().port() == 0 {
                return Err(err(f("listen"), format!("{} has port 0", d.listen_addr())));
            }
            let Some(control) = d.control_addr() else {
                return Err(err(
                    f("control"),
                    format!(
                        "no default: port {} + {CONTROL_PORT_OFFSET} is over 65535; set it",
                        d.first().port()
                    ),
                ));
            };
            if control.port() == 0 {
                return Err(err(f("control"), format!("{control} has port 0")));
            }
            if let Some(other) = advertised.insert(control, f("control")) {
                return Err(err(f("control"), format!("{control} is also {other}")));
            }
            if let Some(c) = d.control_listen {
                if c.port() == 0 {
                    return Err(err(f("control_listen"), format!("{c} has port 0")));
                }
            }
            match (d.backend, &d.shared_dir) {
                (Backend::Shared, None) => {
                    return Err(err(f("shared_dir"), "backend shared needs a shared_dir"))
                }
                (Backend::Local | Backend::Null, Some(p)) => {
                    return Err(err(
                        f("shared_dir"),
                        format!("{} is only for backend shared", p.display()),
                    ))
                }
                _ => {}
            }
        }
        let shared = self
            .data_servers
            .iter()
            .filter(|d| d.backend == Backend::Shared)
            .count();
        if shared != 0 && shared != n {
            return Err(err(
                "cluster.data_servers",
                format!(
                    "{shared} of {n} data servers use backend shared: all or none (sparse and \
                     dense packing cannot mix in one layout)"
                ),
            ));
        }
        self.check_bound_ports(cfg)?;
        check_unit("cluster.layout.stripe_unit", self.layout.stripe_unit)?;
        if let Some(c) = self.layout.stripe_count {
            check_count("cluster.layout.stripe_count", c, n)?;
        }
        let mut seen = HashSet::new();
        for (i, e) in self.layout.exports.iter().enumerate() {
            let f = |name: &str| format!("cluster.layout.exports[{i}].{name}");
            if !cfg.exports.iter().any(|x| x.id == e.export) {
                return Err(err(
                    f("export"),
                    format!("{} is not an export id", e.export),
                ));
            }
            if !seen.insert(e.export) {
                return Err(err(
                    f("export"),
                    format!("export {} has another layout entry", e.export),
                ));
            }
            if let Some(u) = e.stripe_unit {
                check_unit(&f("stripe_unit"), u)?;
            }
            if let Some(c) = e.stripe_count {
                check_count(&f("stripe_count"), c, n)?;
            }
        }
        self.check_directories(cfg)
    }

    /// The per-directory overrides: a known export, a path inside it, one entry per
    /// directory, and valid values. Whether the export itself serves the path (not through a
    /// junction to another export, whose files are that export's) is the MDS's to check, on
    /// its export tree (`mds::config::check_namespace`).
    fn check_directories(&self, cfg: &Config) -> Result<(), ConfigError> {
        let mut seen = HashSet::new();
        for (i, d) in self.layout.directories.iter().enumerate() {
            let f = |name: &str| format!("cluster.layout.directories[{i}].{name}");
            let Some(export) = d
                .export_in(&cfg.exports)
                .filter(|&x| cfg.exports.iter().any(|e| e.id == x))
            else {
                let id = d.export.map_or_else(|| "none".into(), |x| x.to_string());
                return Err(err(f("export"), format!("{id} is not an export id")));
            };
            let parts = d.components().map_err(|m| err(f("path"), m))?;
            if !seen.insert((export, parts.join("/"))) {
                return Err(err(
                    f("path"),
                    format!("{:?} of export {export} has another layout entry", d.path),
                ));
            }
            if let Some(u) = d.stripe_unit {
                check_unit(&f("stripe_unit"), u)?;
            }
            if let Some(c) = d.stripe_count {
                check_count(&f("stripe_count"), c, self.data_servers.len())?;
            }
        }
        Ok(())
    }

    /// Refuses two services of one host bound to one port. A data server whose first address
    /// is loopback or unspecified runs on the MDS's host; others are grouped by that IP.
    /// Different hosts may reuse ports, and one host may reuse a port on different specific
    /// IPs (127.0.0.1:2049 and 127.0.0.2:2049).
    fn check_bound_ports(&self, cfg: &Config) -> Result<(), ConfigError> {
        let host_of = |ip: IpAddr| -> Option<IpAddr> {
            (!(ip.is_loopback() || ip.is_unspecified())).then_some(ip)
        };
        // (host, bound address, field); host None is the MDS's host.
        let mut bound: Vec<(Option<IpAddr>, SocketAddr, String)> =
            vec![(None, cfg.listen, "listen".into())];
        if let Some(m) = cfg.metrics_listen {
            bound.push((None, m, "metrics_listen".into()));
        }
        for (i, d) in self.data_servers.iter().enumerate() {
            let host = host_of(d.first().ip());
            bound.push((
                host,
                d.listen_addr(),
                format!("cluster.data_servers[{i}].listen"),
            ));
            if let Some(c) = d.control_listen_addr() {
                bound.push((host, c, format!("cluster.data_servers[{i}].control_listen")));
            }
        }
        for (k, (host, a, field)) in bound.iter().enumerate() {
            for (h2, b, other) in &bound[..k] {
                let overlap =
                    a.ip() == b.ip() || a.ip().is_unspecified() || b.ip().is_unspecified();
                if host == h2 && a.port() == b.port() && overlap {
                    return Err(err(
                        field.clone(),
                        format!("{a} is bound on the same host by {other} ({b})"),
                    ));
                }
            }
        }
        Ok(())
    }
}

fn check_unit(field: &str, unit: u32) -> Result<(), ConfigError> {
    if unit == 0 || !unit.is_multiple_of(64) {
        return Err(err(
            field,
            format!("{unit} is not a non-zero multiple of 64 (RFC 8881 section 13.3, nfl_util)"),
        ));
    }
    Ok(())
}

fn check_count(field: &str, count: u32, data_servers: usize) -> Result<(), ConfigError> {
    if count == 0 || count as usize > data_servers {
        return Err(err(
            field,
            format!("{count} is outside 1..={data_servers} (the number of data servers)"),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(yaml: &str) -> Result<Config, ConfigError> {
        Config::parse(yaml)
    }

    const SECRET: &str = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";

    #[test]
    fn the_default_is_three_data_servers_on_this_host() {
        let c = parse("").unwrap();
        let ds = &c.cluster.data_servers;
        assert_eq!(ds.len(), 3);
        for (i, d) in ds.iter().enumerate() {
            let port = 20491 + i as u16;
            assert_eq!(d.id as usize, i + 1);
            assert_eq!(d.addresses, vec![SocketAddr::from(([0, 0, 0, 0], port))]);
            assert_eq!(d.listen_addr(), SocketAddr::from(([0, 0, 0, 0], port)));
            assert_eq!(
                d.control_addr(),
                Some(SocketAddr::from(([127, 0, 0, 1], port + 100)))
            );
            assert_eq!(d.control_listen_addr(), d.control_addr());
            assert_eq!(
                d.data_dir_in(Path::new("/d")),
                PathBuf::from(format!("/d/ds{}", i + 1))
            );
            assert_eq!(d.backend, Backend::Local);
        }
        let p = c.cluster.layout_for(1).unwrap();
        assert_eq!(
            p,
            LayoutPolicy {
                stripe_unit: 1 << 20,
                stripe_count: 3,
                packing: Packing::Dense
            }
        );
    }

    #[test]
    fn an_mds_without_data_servers_is_valid_and_has_no_layout() {
        let c = parse("cluster:\n  data_servers: []\n").unwrap();
        assert!(c.cluster.data_servers.is_empty());
        assert_eq!(c.cluster.layout_for(1), None);
        let e =
            parse("cluster:\n  data_servers: []\n  layout:\n    stripe_count: 1\n").unwrap_err();
        assert_eq!(e.field, "cluster.layout.stripe_count");
        assert!(e.message.contains("outside 1..=0"), "{e}");
    }

    #[test]
    fn a_full_cluster_section_parses() {
        let c = parse(&format!(
            "exports:\n  - id: 1\n  - id: 2\n    path: /scratch\n    pseudo: /scratch\n\
             cluster:\n  secret: {SECRET}\n  data_servers:\n\
             \x20   - id: 4\n      addresses: [10.0.0.4:2049, \"[fd00::4]:2049\"]\n\
             \x20     control: 10.0.0.4:7000\n      data_dir: /srv/ds\n      backend: null\n\
             \x20   - id: 5\n      addresses: [10.0.0.5:2049]\n      listen: 10.0.0.5:2049\n\
             \x20     control_listen: 0.0.0.0:7001\n\
             \x20 layout:\n    stripe_unit: 65536\n    stripe_count: 2\n    exports:\n\
             \x20     - export: 2\n        stripe_count: 1\n        stripe_unit: 4194304\n"
        ))
        .unwrap();
        let [a, b] = &c.cluster.data_servers[..] else {
            panic!("{:?}", c.cluster.data_servers)
        };
        assert_eq!(a.addresses.len(), 2);
        assert_eq!(a.backend, Backend::Null);
        assert_eq!(a.control_addr(), Some("10.0.0.4:7000".parse().unwrap()));
        assert_eq!(a.data_dir_in(Path::new("/x")), PathBuf::from("/srv/ds"));
        assert_eq!(b.control_addr(), Some("10.0.0.5:2149".parse().unwrap()));
        assert_eq!(
            b.control_listen_addr(),
            Some("0.0.0.0:7001".parse().unwrap())
        );
        let p1 = c.cluster.layout_for(1).unwrap();
        assert_eq!((p1.stripe_unit, p1.stripe_count), (65536, 2));
        let p2 = c.cluster.layout_for(2).unwrap();
        assert_eq!((p2.stripe_unit, p2.stripe_count), (4 << 20, 1));
        assert_eq!(
            c.cluster
                .load_secret(Path::new("/nonexistent"))
                .unwrap()
                .as_bytes()[..2],
            [0x00, 0x11]
        );
    }

    #[test]
    fn shared_backend_needs_a_directory_and_gives_sparse_packing() {
        let e = parse(
            "cluster:\n  data_servers:\n    - id: 1\n      addresses: [127.0.0.1:3000]\n\
             \x20     backend: shared\n",
        )
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "cluster.data_servers[0].shared_dir: backend shared needs a shared_dir"
        );
        let c = parse(
            "cluster:\n  data_servers:\n    - id: 1\n      addresses: [127.0.0.1:3000]\n\
             \x20     backend: shared\n      shared_dir: /gpfs/pnfs\n",
        )
        .unwrap();
        assert_eq!(c.cluster.packing(), Packing::Sparse);
        let e = parse(
            "cluster:\n  data_servers:\n    - id: 1\n      addresses: [127.0.0.1:3000]\n\
             \x20     shared_dir: /gpfs/pnfs\n",
        )
        .unwrap_err();
        assert_eq!(e.field, "cluster.data_servers[0].shared_dir");
        assert!(e.message.contains("/gpfs/pnfs"), "{e}");
        let e = parse(
            "cluster:\n  data_servers:\n    - id: 1\n      addresses: [127.0.0.1:3000]\n\
             \x20     backend: shared\n      shared_dir: /g\n\
             \x20   - id: 2\n      addresses: [127.0.0.1:3001]\n",
        )
        .unwrap_err();
        assert_eq!(e.field, "cluster.data_servers");
        assert!(e.message.contains("1 of 2"), "{e}");
    }

    #[test]
    fn ids_addresses_and_ports_must_be_unique_where_they_would_clash() {
        let ds = |rest: &str| parse(&format!("cluster:\n  data_servers:\n{rest}"));
        let e = ds("    - id: 1\n      addresses: [10.0.0.1:2049]\n    - id: 1\n      addresses: [10.0.0.2:2049]\n").unwrap_err();
        assert_eq!(
            e.to_string(),
            "cluster.data_servers[1].id: 1 is used by another data server"
        );
        let e = ds("    - id: 0\n      addresses: [10.0.0.1:2049]\n").unwrap_err();
        assert_eq!(e.field, "cluster.data_servers[0].id");
        let e = ds("    - id: 1\n      addresses: []\n").unwrap_err();
        assert_eq!(e.field, "cluster.data_servers[0].addresses");
        let e = ds("    - id: 1\n      addresses: [10.0.0.1:2049]\n    - id: 2\n      addresses: [10.0.0.1:2049]\n").unwrap_err();
        assert_eq!(e.field, "cluster.data_servers[1].addresses[0]");
        assert!(
            e.message
                .contains("10.0.0.1:2049 is also cluster.data_servers[0].addresses[0]"),
            "{e}"
        );
        // Two data servers on the MDS's host must not share a port ...
        let e = ds("    - id: 1\n      addresses: [127.0.0.1:3000]\n    - id: 2\n      addresses: [127.0.0.2:3000]\n").unwrap_err();
        assert_eq!(e.field, "cluster.data_servers[1].listen");
        assert!(e.message.contains("0.0.0.0:3000"), "{e}");
        // ... unless they listen on different specific addresses.
        ds("    - id: 1\n      addresses: [127.0.0.1:3000]\n      listen: 127.0.0.1:3000\n      control: 127.0.0.1:4000\n\
            \x20   - id: 2\n      addresses: [127.0.0.2:3000]\n      listen: 127.0.0.2:3000\n      control: 127.0.0.2:4000\n").unwrap();
        // Different hosts reuse ports freely.
        ds("    - id: 1\n      addresses: [10.0.0.1:2049]\n    - id: 2\n      addresses: [10.0.0.2:2049]\n").unwrap();
        // A data server on the MDS's host must not take the MDS's port.
        let e = ds("    - id: 1\n      addresses: [127.0.0.1:2049]\n").unwrap_err();
        assert_eq!(e.field, "cluster.data_servers[0].listen");
        assert!(e.message.contains("by listen (0.0.0.0:2049)"), "{e}");
        // Nor its own NFS port for control.
        let e =
            ds("    - id: 1\n      addresses: [127.0.0.1:3000]\n      control: 127.0.0.1:3000\n")
                .unwrap_err();
        assert_eq!(e.field, "cluster.data_servers[0].control");
        let e = ds("    - id: 1\n      addresses: [127.0.0.1:65500]\n").unwrap_err();
        assert_eq!(e.field, "cluster.data_servers[0].control");
        assert!(e.message.contains("65500 + 100"), "{e}");
    }

    #[test]
    fn layout_values_are_checked_and_name_their_field() {
        let e = parse("cluster:\n  layout:\n    stripe_unit: 1000\n").unwrap_err();
        assert_eq!(e.field, "cluster.layout.stripe_unit");
        assert!(
            e.message
                .starts_with("1000 is not a non-zero multiple of 64"),
            "{e}"
        );
        let e = parse("cluster:\n  layout:\n    stripe_count: 4\n").unwrap_err();
        assert_eq!(
            e.to_string(),
            "cluster.layout.stripe_count: 4 is outside 1..=3 (the number of data servers)"
        );
        let e = parse("cluster:\n  layout:\n    exports:\n      - export: 9\n").unwrap_err();
        assert_eq!(
            e.to_string(),
            "cluster.layout.exports[0].export: 9 is not an export id"
        );
        let e =
            parse("cluster:\n  layout:\n    exports:\n      - export: 1\n        stripe_unit: 0\n")
                .unwrap_err();
        assert_eq!(e.field, "cluster.layout.exports[0].stripe_unit");
        let e = parse("cluster:\n  layout:\n    exports:\n      - export: 1\n      - export: 1\n")
            .unwrap_err();
        assert_eq!(e.field, "cluster.layout.exports[1].export");
        let e = parse("cluster:\n  layuot: {}\n").unwrap_err();
        assert!(e.to_string().contains("layuot"), "{e}");
        let e = parse("cluster:\n  data_servers:\n    - id: 1\n      addresses: [1.2.3.4:5]\n      backend: tape\n").unwrap_err();
        assert!(e.to_string().contains("tape"), "{e}");
    }

    #[test]
    fn directory_overrides_take_the_first_export_by_default_and_inherit_its_policy() {
        let c = parse(
            "exports:\n  - id: 3\n  - id: 2\n    path: /scratch\n    pseudo: /scratch\n\
             cluster:\n  layout:\n    stripe_count: 2\n    exports:\n\
             \x20     - { export: 2, stripe_unit: 4194304 }\n    directories:\n\
             \x20     - { path: /home/big, stripe_count: 3 }\n\
             \x20     - { export: 2, path: /, stripe_count: 1 }\n\
             \x20     - { export: 2, path: /small/, stripe_unit: 65536 }\n",
        )
        .unwrap();
        let exports = &c.exports;
        let d = &c.cluster.layout.directories;
        assert_eq!(d[0].export_in(exports), Some(3), "the first export");
        assert_eq!(d[0].components().unwrap(), vec!["home", "big"]);
        assert_eq!(d[1].components().unwrap(), Vec::<&str>::new());
        assert_eq!(d[2].components().unwrap(), vec!["small"]);
        let policy = |i: usize| {
            let p = c
                .cluster
                .layout_for_directory(d[i].export_in(exports).unwrap(), &d[i])
                .unwrap();
            (p.stripe_unit, p.stripe_count)
        };
        assert_eq!(policy(0), (1 << 20, 3));
        assert_eq!(policy(1), (4 << 20, 1));
        // An unset count is the export's (the cluster's 2 here), not another directory's.
        assert_eq!(policy(2), (65536, 2));
    }

    #[test]
    fn directory_overrides_are_checked_and_name_their_field() {
        let dirs = |exports: &str, entries: &str| {
            parse(&format!(
                "exports:\n{exports}cluster:\n  layout:\n    directories:\n{entries}"
            ))
            .unwrap_err()
            .to_string()
        };
        let one = "  - id: 1\n";
        let two = "  - id: 1\n  - id: 2\n    path: /s\n    pseudo: /s\n";
        assert_eq!(
            dirs(one, "      - { export: 9, path: /a }\n"),
            "cluster.layout.directories[0].export: 9 is not an export id"
        );
        for bad in ["a/b", "/a/../b", "/./a", ""] {
            assert_eq!(
                dirs(one, &format!("      - {{ path: \"{bad}\" }}\n")),
                format!(
                    "cluster.layout.directories[0].path: {bad:?} must be an absolute path \
                     inside the export, without . or .."
                )
            );
        }
        // A directory behind a junction (export 1 at / carries export 2 as "s") is the
        // MDS's to refuse: `mds::config` tests it.
        assert_eq!(
            dirs(
                one,
                "      - { path: /a }\n      - { export: 1, path: \"//a/\" }\n"
            ),
            "cluster.layout.directories[1].path: \"//a/\" of export 1 has another layout entry"
        );
        let e = dirs(one, "      - { path: /a, stripe_unit: 100 }\n");
        assert!(
            e.starts_with("cluster.layout.directories[0].stripe_unit: 100 is not"),
            "{e}"
        );
        assert_eq!(
            dirs(one, "      - { path: /a, stripe_count: 0 }\n"),
            "cluster.layout.directories[0].stripe_count: 0 is outside 1..=3 (the number of \
             data servers)"
        );
        let e = dirs(one, "      - { path: /a, stripe_size: 64 }\n");
        assert!(e.contains("stripe_size"), "{e}");
        let e = dirs(one, "      - { stripe_unit: 64 }\n");
        assert!(e.contains("path"), "{e}");
        // The same path in two exports is two directories.
        parse(&format!(
            "exports:\n{two}cluster:\n  layout:\n    directories:\n\
             \x20     - {{ path: /a }}\n      - {{ export: 2, path: /a }}\n"
        ))
        .unwrap();
    }

    #[test]
    fn configured_secrets_must_be_long_hex_and_only_one_kind() {
        let e = parse("cluster:\n  secret: 0011\n").unwrap_err();
        assert_eq!(e.field, "cluster.secret");
        assert!(e.message.contains("at least 64 hex digits"), "{e}");
        let e = parse(&format!("cluster:\n  secret: {}zz\n", &SECRET[..62])).unwrap_err();
        assert_eq!(e.field, "cluster.secret");
        let e = parse(&format!(
            "cluster:\n  secret: {SECRET}\n  secret_file: /s\n"
        ))
        .unwrap_err();
        assert_eq!(e.field, "cluster.secret_file");
        parse(&format!("cluster:\n  secret: {SECRET}abcd\n")).unwrap();
    }

    #[test]
    fn the_generated_secret_is_private_and_kept_across_restarts() {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("data");
        let c = ClusterConfig::default();
        let a = c.load_secret(&data).unwrap();
        assert_eq!(a.as_bytes().len(), SECRET_LEN);
        let path = data.join(SECRET_FILE);
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        assert_eq!(
            c.load_secret(&data).unwrap(),
            a,
            "a restart reads the same secret"
        );
        assert_eq!(format!("{a:?}"), "ClusterSecret(<32 bytes>)");
        let other = ClusterConfig::default()
            .load_secret(&dir.path().join("other"))
            .unwrap();
        assert_ne!(other, a, "another data directory gets its own secret");
        // No temporary files are left behind.
        let names: Vec<_> = std::fs::read_dir(&data)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from(SECRET_FILE)]);
    }

    #[test]
    fn a_secret_file_others_can_read_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s");
        std::fs::write(&path, format!("{SECRET}\n")).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let c = ClusterConfig {
            secret_file: Some(path.clone()),
            ..ClusterConfig::default()
        };
        let e = c.load_secret(dir.path()).unwrap_err();
        assert_eq!(e.field, "cluster.secret_file");
        assert!(e.message.contains("mode 0644"), "{e}");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert_eq!(c.load_secret(dir.path()).unwrap().as_bytes().len(), 32);
    }

    #[test]
    fn an_inline_secret_needs_a_config_file_only_its_owner_can_read() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("pnfs.yaml");
        std::fs::write(&path, format!("cluster:\n  secret: {SECRET}\n")).unwrap();
        for mode in [0o644, 0o640, 0o604, 0o620] {
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
            let e = Config::load(&path).unwrap_err();
            assert_eq!(e.field, "cluster.secret", "{mode:o}");
            let m = &e.message;
            assert!(m.contains(&format!("mode {mode:04o}")), "{e}");
            assert!(m.contains("chmod 600") && m.contains("secret_file"), "{e}");
            assert!(m.contains(&path.display().to_string()), "{e}");
            assert!(!m.contains(SECRET), "the secret is never printed: {e}");
        }
        for mode in [0o600, 0o400] {
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
            let c = Config::load(&path).unwrap();
            assert_eq!(c.cluster.secret.as_deref(), Some(SECRET), "{mode:o}");
        }
        // Without an inline secret the file may be world-readable, as before.
        std::fs::write(&path, "cluster:\n  secret_file: /etc/pnfs/secret\n").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        Config::load(&path).unwrap();
    }

    #[test]
    fn the_default_ring_tells_each_client_the_address_it_reached_the_mds_by() {
        let c = parse("").unwrap();
        let ring = c.cluster.ring(1);
        assert_eq!(
            ring.servers.iter().map(|s| s.id).collect::<Vec<_>>(),
            vec![1, 2, 3]
        );
        let via: IpAddr = "192.168.7.1".parse().unwrap();
        let dev = ring.device(3, 0).unwrap();
        let body = ring.describe(&dev, via).unwrap();
        let addrs: Vec<String> = body
            .nflda_multipath_ds_list
            .iter()
            .map(|m| m.0[0].na_r_addr.to_string())
            .collect();
        assert_eq!(
            addrs,
            vec![
                "192.168.7.1.80.11",
                "192.168.7.1.80.12",
                "192.168.7.1.80.13"
            ]
        );
    }
}

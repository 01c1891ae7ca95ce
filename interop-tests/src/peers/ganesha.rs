//! nfs-ganesha as a child process: one NFSv4.1 export of a temporary directory.

use std::fs;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use super::{free_port, io_err, is_root, log_tail, required, wait_until_serving, PeerError};
use super::{START_ATTEMPTS, START_TIMEOUT};

/// Where nfs-ganesha is installed.
#[derive(Debug, Clone)]
struct GaneshaInstall {
    /// `ganesha.nfsd`.
    binary: PathBuf,
    /// The directory holding `libfsalvfs.so`.
    plugins: PathBuf,
}

impl GaneshaInstall {
    /// Finds the daemon (`$PNFS_GANESHA_BINARY`, else on `PATH` or in `/usr/bin`,
    /// `/usr/sbin`) and the VFS FSAL (Debian's multiarch directory, or the upstream
    /// `/usr/lib64/ganesha`).
    fn find() -> Result<Self, String> {
        let binary = match std::env::var_os("PNFS_GANESHA_BINARY") {
            Some(b) => Some(PathBuf::from(b)),
            None => std::env::var_os("PATH")
                .map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
                .unwrap_or_default()
                .into_iter()
                .chain([PathBuf::from("/usr/bin"), PathBuf::from("/usr/sbin")])
                .map(|d| d.join("ganesha.nfsd"))
                .find(|p| p.is_file()),
        };
        let binary = binary.filter(|b| b.is_file()).ok_or_else(|| {
            "no ganesha.nfsd (apt-get install nfs-ganesha nfs-ganesha-vfs)".to_string()
        })?;
        let mut dirs: Vec<PathBuf> = fs::read_dir("/usr/lib")
            .map(|rd| {
                rd.filter_map(Result::ok)
                    .map(|e| e.path().join("ganesha"))
                    .collect()
            })
            .unwrap_or_default();
        dirs.sort();
        dirs.extend(["/usr/lib64/ganesha", "/usr/lib/ganesha"].map(PathBuf::from));
        let plugins = dirs
            .into_iter()
            .find(|d| d.join("libfsalvfs.so").is_file())
            .ok_or_else(|| {
                "no libfsalvfs.so, the VFS FSAL (apt-get install nfs-ganesha-vfs)".to_string()
            })?;
        if !is_root() {
            return Err("nfs-ganesha's VFS FSAL needs root (open_by_handle_at)".into());
        }
        Ok(Self { binary, plugins })
    }
}

/// Why nfs-ganesha cannot run here, if it cannot: the daemon or its VFS FSAL is not installed,
/// or this is not root.
pub fn ganesha_unavailable_reason() -> Option<String> {
    GaneshaInstall::find().err()
}

/// Whether nfs-ganesha can run here (see [`ganesha_unavailable_reason`]).
pub fn ganesha_available() -> bool {
    ganesha_unavailable_reason().is_none()
}

/// Settings of a [`Ganesha`] instance.
#[derive(Debug, Clone)]
pub struct GaneshaOptions {
    /// `NFSv4 { Lease_Lifetime }` in seconds (ganesha allows up to 120). Default 10: short,
    /// so that a test of lease expiry (a lock freed when its holder's process died) waits
    /// seconds, not the default minute.
    pub lease_lifetime: u32,
    /// Grant read and write delegations (`NFSv4 { Delegations }` and the export's
    /// `Delegations = rw`). Default off, ganesha's own default.
    pub delegations: bool,
}

impl Default for GaneshaOptions {
    fn default() -> Self {
        Self {
            lease_lifetime: 10,
            delegations: false,
        }
    }
}

/// A running nfs-ganesha with one NFSv4.1 export of a fresh host directory, on `127.0.0.1`
/// and a port of its own; killed (SIGKILL) and its directory removed on drop.
///
/// The configuration ([`Ganesha::config_file`]) makes it run in a container without rpcbind,
/// dbus or systemd, and these are the quirks of Debian's ganesha 4.3 met on the way:
///
/// - It serves NFSv4 without rpcbind: `Protocols = 4` and `Enable_NLM`, `Enable_RQUOTA`,
///   `Enable_UDP` off leave it only the NFS TCP socket. It still tries to register with
///   rpcbind and logs `Cannot register NFS V4 on TCP` (MAJ); harmless.
/// - Without a system bus it logs `dbus_bus_get failed` (CRIT) and runs without its D-Bus
///   admin interface; harmless. `Dbus_Name_Prefix` is set per instance so that on a host
///   with a bus two instances (or a system ganesha) do not fight over one name.
/// - `Active_krb5 = false` spares the `Cannot acquire credentials for principal nfs` error;
///   the backchannel's credential cache still logs `no usable keytab entry` (CRIT), harmless.
///   Its directory, `CCacheDir`, defaults to `/var/run/ganesha`, which ganesha makes if
///   missing; here it is in the temporary directory.
/// - `Bind_Addr = 127.0.0.1` gives an IPv6 socket bound to `::ffff:127.0.0.1`; a port
///   already taken is FATAL (`Error binding to V6 interface`, exit 2), which the harness
///   answers by trying fresh ports.
/// - With `-p` naming a pid file in the temporary directory, and `RecoveryRoot` and
///   `CCacheDir` there too, it writes nothing outside it (the recovery backend keeps a
///   directory per client under `recovery/v4recov/node0/`).
/// - `Graceless = true` skips the grace period at start (it logs `NFS Server skipping
///   GRACE`), so a test's first OPEN does not get NFS4ERR_GRACE. Nothing restarts a ganesha
///   over its recovery directory: reclaim is tested against `pnfs server`.
/// - `Minor_Versions = 1, 2`: NFSv4.0 is off, the client must speak 4.1 or 4.2.
/// - `Attr_Expiration_Time = 0`: ganesha's metadata cache would otherwise serve attributes up
///   to a minute old, so a file a test changes in [`Ganesha::export_dir`] on the host would
///   look unchanged to the client.
/// - No layouts, but misleading flags: EXCHANGE_ID answers with `EXCHGID4_FLAG_USE_PNFS_MDS`
///   and `EXCHGID4_FLAG_USE_PNFS_DS` set (flags `0x60001`) although `pnfs_mds` is off, while
///   `fs_layout_types` of the export is empty and LAYOUTGET fails with
///   NFS4ERR_LAYOUTUNAVAILABLE. A client must decide on `fs_layout_types` (RFC 8881 section
///   5.12.1) or LAYOUTGET's error, not on the EXCHANGE_ID flags, and do I/O through the
///   server (`tests/ganesha_peer.rs` checks the attribute and LAYOUTGET, and prints the
///   flags).
/// - It answers `maxread` and `maxwrite` of 64 MiB and `lease_time` as configured; the
///   session's fore channel is what the client asked for or less (checked by the test too).
/// - Delegations are off unless [`GaneshaOptions::delegations`] asks (ganesha's default).
/// - No user extended attributes (RFC 8276) on the VFS export: `xattr_support` is false
///   and GETXATTR, SETXATTR, LISTXATTRS and REMOVEXATTR are NFS4ERR_NOTSUPP everywhere
///   (`tests/client_ganesha.rs`). A SETXATTR value of 8 KiB or more does not get that far:
///   the whole COMPOUND is GARBAGE_ARGS (its decoder's bound on `xattrvalue4`).
/// - ALLOCATE, DEALLOCATE and SEEK (RFC 7862) work on the VFS export, as `fallocate(2)` and
///   `lseek(2)` of the host file: space used on the host, holes punched, SEEK answering the
///   host file system's extents (`tests/client_ganesha.rs`).
/// - The VFS FSAL needs root and a file system with file handles (`name_to_handle_at`):
///   ext4, xfs, btrfs and tmpfs have them; an overlayfs without `nfs_export=on` does not.
/// - Small: about 8 MB resident and 11 threads per instance, ready in about 50 ms.
#[derive(Debug)]
pub struct Ganesha {
    child: Child,
    addr: SocketAddr,
    export: PathBuf,
    config: PathBuf,
    log: PathBuf,
    startup: Duration,
    // Last: removed after the child is killed (fields drop after `Drop::drop`).
    dir: tempfile::TempDir,
}

/// Counts instances in this process, for unique D-Bus names.
static GANESHA_SEQ: AtomicU32 = AtomicU32::new(0);

impl Ganesha {
    /// The pseudo path of the export: `PUTROOTFH; LOOKUP "export"` reaches it, and a URL is
    /// `nfs://127.0.0.1:<port>/export/...`.
    pub const PSEUDO_PATH: &'static str = "/export";

    /// Starts an instance with [`GaneshaOptions::default`].
    pub fn start() -> Result<Ganesha, PeerError> {
        Self::start_with(&GaneshaOptions::default())
    }

    /// For a test: starts an instance, or returns `None` after printing why when nfs-ganesha
    /// cannot run here.
    ///
    /// # Panics
    ///
    /// When `PNFS_REQUIRE_GANESHA` is set (to anything but empty or `0`) and nfs-ganesha cannot
    /// run here, and when it can but does not start (the message has the end of its log).
    pub fn start_or_skip(test: &str) -> Option<Ganesha> {
        if let Some(why) = ganesha_unavailable_reason() {
            assert!(
                !required("PNFS_REQUIRE_GANESHA"),
                "PNFS_REQUIRE_GANESHA is set but nfs-ganesha cannot run here: {why}"
            );
            eprintln!("note: skipping {test}: nfs-ganesha cannot run here: {why}");
            return None;
        }
        match Self::start() {
            Ok(g) => Some(g),
            Err(e) => panic!("{test}: {e}"),
        }
    }

    /// Starts an instance with these options; returns once it answers NFS NULL.
    pub fn start_with(opts: &GaneshaOptions) -> Result<Ganesha, PeerError> {
        let install = GaneshaInstall::find().map_err(|why| PeerError::Unavailable {
            what: "nfs-ganesha",
            why,
        })?;
        let mut attempt = 0;
        loop {
            attempt += 1;
            match Self::try_start(&install, opts) {
                // Another process took the port between the check and ganesha's bind.
                Err(PeerError::Start(f)) if attempt < START_ATTEMPTS && f.port_taken() => {
                    eprintln!("note: {}: a port was taken, trying fresh ones", f.what);
                }
                r => return r,
            }
        }
    }

    fn try_start(install: &GaneshaInstall, opts: &GaneshaOptions) -> Result<Ganesha, PeerError> {
        let dir = tempfile::Builder::new()
            .prefix("pnfs-ganesha-")
            .tempdir()
            .map_err(io_err(&std::env::temp_dir()))?;
        let export = dir.path().join("export");
        let recovery = dir.path().join("recovery");
        for d in [&export, &recovery] {
            fs::create_dir(d).map_err(io_err(d))?;
        }
        let port = free_port()?;
        let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
        let config = dir.path().join("ganesha.conf");
        let log = dir.path().join("ganesha.log");
        let stderr = dir.path().join("ganesha.stderr");
        let pid = dir.path().join("ganesha.pid");
        let seq = GANESHA_SEQ.fetch_add(1, Ordering::Relaxed);
        let text = ganesha_config(&GaneshaConfig {
            port,
            plugins: &install.plugins,
            export: &export,
            recovery: &recovery,
            ccache: &dir.path().join("ccache"),
            dbus_prefix: &format!("pnfstest{}x{seq}", std::process::id()),
            opts,
        });
        fs::write(&config, text).map_err(io_err(&config))?;
        let err_file = fs::File::create(&stderr).map_err(io_err(&stderr))?;
        let started = Instant::now();
        let mut child = Command::new(&install.binary)
            .arg("-F")
            .arg("-L")
            .arg(&log)
            .arg("-f")
            .arg(&config)
            .arg("-p")
            .arg(&pid)
            .stdin(Stdio::null())
            .stdout(err_file.try_clone().map_err(io_err(&stderr))?)
            .stderr(err_file)
            .spawn()
            .map_err(|source| PeerError::Spawn {
                what: install.binary.display().to_string(),
                source,
            })?;
        if let Err(e) = wait_until_serving(
            "nfs-ganesha",
            &mut child,
            addr,
            &[&log, &stderr],
            START_TIMEOUT,
            || Ok(()),
        ) {
            let _ = child.kill();
            let _ = child.wait();
            return Err(e);
        }
        Ok(Ganesha {
            child,
            addr,
            export,
            config,
            log,
            startup: started.elapsed(),
            dir,
        })
    }

    /// Where it serves NFS: `127.0.0.1:<port>`.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The exported directory on the host: what clients write shows here.
    pub fn export_dir(&self) -> &Path {
        &self.export
    }

    /// The export's place in the NFSv4 pseudo file system ([`Ganesha::PSEUDO_PATH`]).
    pub fn pseudo_path(&self) -> &str {
        Self::PSEUDO_PATH
    }

    /// The configuration file it was started with.
    pub fn config_file(&self) -> &Path {
        &self.config
    }

    /// Its log file (`-L`).
    pub fn log_file(&self) -> &Path {
        &self.log
    }

    /// The end of its log, for a failing test's message.
    pub fn log_tail(&self) -> String {
        log_tail(&[&self.log])
    }

    /// The temporary directory holding the export, configuration, log and recovery files.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// How long it took from spawn to answering NFS NULL.
    pub fn startup_time(&self) -> Duration {
        self.startup
    }

    /// Its process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Ganesha {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

struct GaneshaConfig<'a> {
    port: u16,
    plugins: &'a Path,
    export: &'a Path,
    recovery: &'a Path,
    ccache: &'a Path,
    dbus_prefix: &'a str,
    opts: &'a GaneshaOptions,
}

/// The configuration file: one NFSv4.1 export, loopback only, nothing that needs rpcbind,
/// dbus or systemd (see [`Ganesha`] for why each knob is there).
fn ganesha_config(c: &GaneshaConfig<'_>) -> String {
    let deleg = if c.opts.delegations {
        ("true", "rw")
    } else {
        ("false", "none")
    };
    format!(
        r#"# Written by interop-tests (peers.rs) for one test's instance.
NFS_CORE_PARAM {{
    NFS_Port = {port};
    Bind_Addr = 127.0.0.1;
    Protocols = 4;
    Enable_NLM = false;
    Enable_RQUOTA = false;
    Enable_UDP = false;
    Plugins_Dir = "{plugins}";
    Dbus_Name_Prefix = "{dbus}";
}}
NFS_KRB5 {{
    Active_krb5 = false;
    CCacheDir = "{ccache}";
}}
NFSv4 {{
    Graceless = true;
    Grace_Period = 1;
    Lease_Lifetime = {lease};
    Minor_Versions = 1, 2;
    Delegations = {deleg_core};
    RecoveryBackend = fs;
    RecoveryRoot = "{recovery}";
}}
EXPORT {{
    Export_Id = 1;
    Path = "{export}";
    Pseudo = "{pseudo}";
    Access_Type = RW;
    Squash = No_Root_Squash;
    SecType = sys;
    Protocols = 4;
    Transports = TCP;
    Delegations = {deleg_export};
    Attr_Expiration_Time = 0;
    FSAL {{
        Name = VFS;
    }}
}}
"#,
        port = c.port,
        plugins = c.plugins.display(),
        dbus = c.dbus_prefix,
        lease = c.opts.lease_lifetime,
        deleg_core = deleg.0,
        deleg_export = deleg.1,
        recovery = c.recovery.display(),
        ccache = c.ccache.display(),
        export = c.export.display(),
        pseudo = Ganesha::PSEUDO_PATH,
    )
}

//! The cluster secret: read from the configuration, from a private file, or generated once
//! into the data directory. Whoever holds it signs control calls to the data servers and forges
//! stateids, so it is refused in any file that group or others may read.

use std::fmt;
use std::io::{Read, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::Path;

use super::super::err;
use super::{ClusterConfig, ConfigError, SECRET_FILE, SECRET_LEN};

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

pub(super) fn hex_secret(s: &str) -> Result<Vec<u8>, String> {
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
}

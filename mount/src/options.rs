//! Mount options: `-o` style (`ro,allow_other,attr_timeout=2`), as `pnfs mount -o` and
//! `/etc/fstab` (through `mount.fuse.pnfs`) give them.

use std::path::PathBuf;
use std::time::Duration;

/// How the file system is mounted, how long the kernel may trust what it was told, and
/// how the client under it caches.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MountOptions {
    /// Read-only mount (`ro`).
    pub read_only: bool,
    /// Let other users than the mounting one in (`allow_other`); the kernel still checks
    /// permissions from the files' modes (`default_permissions` is always on).
    pub allow_other: bool,
    /// How long the kernel and the client keep attributes and names before asking the
    /// server again (`attr_timeout=SECS`, fractions allowed). Short, because other clients
    /// change files; close-to-open and the revalidate ioctl do not wait for it.
    pub attr_timeout: Duration,
    /// The identity (AUTH_SYS) the client speaks to the server as (`uid=N`, `gid=N`);
    /// default the mounting process's. Files show the owners the server keeps.
    pub uid: Option<u32>,
    /// See [`Self::uid`].
    pub gid: Option<u32>,
    /// Do all I/O through the metadata server, without layouts (`nopnfs`).
    pub no_pnfs: bool,
    /// Dirty bytes the client buffers per open file before sending them (`write_back=SIZE`).
    pub write_back: Option<usize>,
    /// Read cache per open file (`read_cache=SIZE`).
    pub read_cache: Option<usize>,
    /// Bytes written and not known stable that a long write keeps per open file; past half
    /// of it the client COMMITs them in the background and frees them (`commit_every=SIZE`):
    /// a long write's memory bound.
    pub commit_every: Option<usize>,
    /// The kernel's read-ahead on the mount (`read_ahead=SIZE`, default 4 MiB): how far
    /// ahead of a sequential reader it asks (in requests of up to 1 MiB).
    pub read_ahead: usize,
    /// The kernel's write-back cache (`writeback_cache`): small writes gather in the page
    /// cache. The kernel then keeps file sizes itself and no longer takes them from the
    /// server, so another client's appends and truncations stay unseen until the inode
    /// leaves the cache: for files this mount alone writes.
    pub writeback_cache: bool,
    /// fsync(2) also revalidates the file (`fsync_revalidate`): MPI-IO's `MPI_File_sync`
    /// then shows other ranks' synced writes, with no `noac`, where it calls fsync on the
    /// reading rank: ROMIO 3.2 (Open MPI 4.1's) does, mpich 4.0's ROMIO skips it on a rank
    /// that wrote nothing since its last sync (the revalidate ioctl works there).
    pub fsync_revalidate: bool,
    /// Where a daemon's log goes (`log=FILE`); none by default.
    pub log: Option<PathBuf>,
    /// The source shown in `/proc/mounts` (the URL).
    pub fsname: String,
}

impl Default for MountOptions {
    fn default() -> Self {
        Self {
            read_only: false,
            allow_other: false,
            attr_timeout: Duration::from_secs(1),
            uid: None,
            gid: None,
            no_pnfs: false,
            write_back: None,
            read_cache: None,
            commit_every: None,
            read_ahead: 4 << 20,
            writeback_cache: false,
            fsync_revalidate: false,
            log: None,
            fsname: "pnfs".into(),
        }
    }
}

/// Options mount(8) and fstab add that mean nothing to the file system itself.
const IGNORED: &[&str] = &[
    "defaults",
    "dev",
    "nodev",
    "suid",
    "nosuid",
    "exec",
    "noexec",
    "auto",
    "noauto",
    "user",
    "nouser",
    "users",
    "owner",
    "group",
    "_netdev",
    "nofail",
    "atime",
    "noatime",
    "relatime",
    "norelatime",
    "strictatime",
    "lazytime",
    "nolazytime",
    "async",
    "sync",
    "dirsync",
    "default_permissions",
];

impl MountOptions {
    /// Applies a comma-separated `-o` list; an unknown option is an error (a typo must not
    /// mount with defaults). What mount(8) and fstab add (`rw`, `nodev`, `noauto`,
    /// `_netdev`, `x-systemd.*`, ...) is accepted and ignored.
    pub fn apply(&mut self, list: &str) -> Result<(), String> {
        for o in list.split(',').map(str::trim).filter(|o| !o.is_empty()) {
            if IGNORED.contains(&o) || o.starts_with("x-") || o.starts_with("comment=") {
                continue;
            }
            match o.split_once('=') {
                None => match o {
                    "ro" => self.read_only = true,
                    "rw" => self.read_only = false,
                    "allow_other" => self.allow_other = true,
                    "nopnfs" | "no_pnfs" => self.no_pnfs = true,
                    "pnfs" => self.no_pnfs = false,
                    "writeback_cache" => self.writeback_cache = true,
                    "fsync_revalidate" => self.fsync_revalidate = true,
                    _ => return Err(format!("unknown mount option {o:?}")),
                },
                Some(("attr_timeout", v)) => {
                    let secs: f64 = v
                        .parse()
                        .ok()
                        .filter(|s: &f64| s.is_finite() && (0.0..=86_400.0).contains(s))
                        .ok_or_else(|| format!("attr_timeout={v}: not a number of seconds"))?;
                    self.attr_timeout = Duration::from_secs_f64(secs);
                }
                Some(("uid", v)) => self.uid = Some(id(o, v)?),
                Some(("gid", v)) => self.gid = Some(id(o, v)?),
                Some(("write_back", v)) => self.write_back = Some(size(o, v)?),
                Some(("read_cache", v)) => self.read_cache = Some(size(o, v)?),
                Some(("commit_every", v)) => self.commit_every = Some(size(o, v)?),
                Some(("read_ahead", v)) => self.read_ahead = size(o, v)?,
                Some(("log", v)) => self.log = Some(PathBuf::from(v)),
                Some(("fsname", v)) => self.fsname = v.to_string(),
                Some((k, _)) => return Err(format!("unknown mount option {k:?}")),
            }
        }
        Ok(())
    }
}

fn id(o: &str, v: &str) -> Result<u32, String> {
    v.parse().map_err(|_| format!("{o}: not a numeric id"))
}

/// A size: bytes, or with a K, M or G suffix (powers of 1024).
fn size(o: &str, v: &str) -> Result<usize, String> {
    let bad = || format!("{o}: not a size (bytes, or with K, M, G)");
    let (digits, unit) = match v.char_indices().last() {
        Some((i, c)) if c.is_ascii_alphabetic() => (&v[..i], c.to_ascii_uppercase()),
        _ => (v, 'B'),
    };
    let n: usize = digits.parse().map_err(|_| bad())?;
    let shift = match unit {
        'B' => 0,
        'K' => 10,
        'M' => 20,
        'G' => 30,
        _ => return Err(bad()),
    };
    n.checked_mul(1 << shift).ok_or_else(bad)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_parse_and_unknown_ones_are_refused() {
        let mut o = MountOptions::default();
        o.apply("ro,allow_other,attr_timeout=0.5,nodev").unwrap();
        assert!(o.read_only && o.allow_other);
        assert_eq!(o.attr_timeout, Duration::from_millis(500));
        o.apply("rw").unwrap();
        assert!(!o.read_only);
        assert!(o.apply("bogus").is_err());
        assert!(o.apply("attr_timeout=-1").is_err());
        assert!(o.apply("attr_timeout=1e300").is_err());
        assert!(o.apply("size=3").is_err());
    }

    #[test]
    fn client_and_cache_options() {
        let mut o = MountOptions::default();
        o.apply("uid=1000,gid=100,nopnfs,write_back=8M,read_cache=128m,fsync_revalidate,commit_every=1G")
            .unwrap();
        assert_eq!((o.uid, o.gid), (Some(1000), Some(100)));
        assert!(o.no_pnfs && o.fsync_revalidate && !o.writeback_cache);
        assert_eq!(o.write_back, Some(8 << 20));
        assert_eq!(o.read_cache, Some(128 << 20));
        assert_eq!(o.commit_every, Some(1 << 30));
        o.apply("write_back=4096,writeback_cache").unwrap();
        assert_eq!(o.write_back, Some(4096));
        assert!(o.writeback_cache);
        for bad in [
            "uid=me",
            "write_back=1T",
            "write_back=",
            "read_cache=99999999999999999999G",
        ] {
            assert!(o.apply(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn what_fstab_and_mount_add_is_ignored() {
        let mut o = MountOptions::default();
        o.apply("defaults,rw,noauto,user,_netdev,nofail,x-systemd.automount,relatime")
            .unwrap();
        assert_eq!(o, MountOptions::default());
    }
}

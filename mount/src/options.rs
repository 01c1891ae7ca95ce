//! Mount options: `-o` style (`ro,allow_other,attr_timeout=2`), as `/etc/fstab` would give them.

use std::time::Duration;

/// How the file system is mounted and how long the kernel may trust what it was told.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MountOptions {
    /// Read-only mount (`ro`).
    pub read_only: bool,
    /// Let other users than the mounting one in (`allow_other`).
    pub allow_other: bool,
    /// How long the kernel keeps attributes and names before asking again
    /// (`attr_timeout=SECS`, fractions allowed). Short, because other clients change files.
    pub attr_timeout: Duration,
    /// The source shown in `/proc/mounts` (the URL).
    pub fsname: String,
}

impl Default for MountOptions {
    fn default() -> Self {
        Self {
            read_only: false,
            allow_other: false,
            attr_timeout: Duration::from_secs(1),
            fsname: "pnfs".into(),
        }
    }
}

impl MountOptions {
    /// Applies a comma-separated `-o` list; an unknown option is an error (a typo must not
    /// mount with defaults). `rw`, `dev`, `suid`, `exec` and their negations that fstab adds
    /// are accepted and ignored.
    pub fn apply(&mut self, list: &str) -> Result<(), String> {
        for o in list.split(',').map(str::trim).filter(|o| !o.is_empty()) {
            match o.split_once('=') {
                None => match o {
                    "ro" => self.read_only = true,
                    "rw" => self.read_only = false,
                    "allow_other" => self.allow_other = true,
                    "defaults" | "dev" | "nodev" | "suid" | "nosuid" | "exec" | "noexec"
                    | "auto" | "noauto" | "user" | "nouser" | "_netdev" => {}
                    _ => return Err(format!("unknown mount option {o:?}")),
                },
                Some(("attr_timeout", v)) => {
                    let secs: f64 = v
                        .parse()
                        .ok()
                        .filter(|s: &f64| s.is_finite() && *s >= 0.0)
                        .ok_or_else(|| format!("attr_timeout={v}: not a number of seconds"))?;
                    self.attr_timeout = Duration::from_secs_f64(secs);
                }
                Some(("fsname", v)) => self.fsname = v.to_string(),
                Some((k, _)) => return Err(format!("unknown mount option {k:?}")),
            }
        }
        Ok(())
    }
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
        assert!(o.apply("size=3").is_err());
    }
}

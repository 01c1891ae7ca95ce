//! Layout policy per directory (`cluster.layout.directories`): the stripe unit and count a
//! regular file gets when OPEN creates it in a configured directory or anywhere below it, as
//! Lustre's directory striping is inherited by new files.
//!
//! ```text
//!  start:  each entry ─> its export's root ─> mkdir -p of its path (0755) ─> (export, file id)
//!  OPEN (create, layouts granted, some entry): parent dir ─> LOOKUPP ... (at most
//!          MAX_DEPTH steps, not above the export's root) ─> nearest entry's policy
//!          ─> stripe set fixed before the OPEN reply (ops::open)
//! ```
//!
//! The policy is looked up through the directories' parent pointers at each create, so a
//! directory renamed out of a configured tree gives its new files the policy of its new
//! place. A configured directory is known by the file id its path resolved to at start: if
//! it is itself renamed, files created in it keep its policy until the next start, which
//! resolves (or makes) the configured path again. A file's stripe set, once fixed, never
//! changes.

use std::collections::HashMap;

use crate::config::{err, Config, LayoutPolicy};
use crate::server::{mkdir_p, StartError};
use crate::store::{Store, StoreError};

/// Most directories walked up from a new file's directory to find a configured one: deeper
/// trees get their export's policy (and a log line). Bounds the reads of one create, and ends
/// the walk on a corrupt store whose parent pointers loop.
pub const MAX_DEPTH: usize = 4096;

/// The configured directories, by export and file id, with their policies.
#[derive(Debug, Default)]
pub struct DirLayouts {
    by_dir: HashMap<(u16, u64), LayoutPolicy>,
}

impl DirLayouts {
    /// Resolves every entry of `cfg.cluster.layout.directories` under its export's root
    /// (`export_roots`: export id -> file id of its root), making missing directories with
    /// mode 0755 as export roots are made. Errors name the entry's field: an export that is
    /// not configured, a path with `.` or `..`, a component that is not a directory. Entries
    /// get no policy without data servers (there is no layout to give).
    pub fn resolve(
        store: &Store,
        cfg: &Config,
        export_roots: &HashMap<u16, u64>,
        now: nfs_proto::nfs4::Nfstime4,
    ) -> Result<Self, StartError> {
        let mut by_dir = HashMap::new();
        for (i, d) in cfg.cluster.layout.directories.iter().enumerate() {
            let field = |name: &str| format!("cluster.layout.directories[{i}].{name}");
            let export = d.export_in(&cfg.exports);
            let Some((export, &root)) =
                export.and_then(|x| export_roots.get(&x).map(|root| (x, root)))
            else {
                let id = export.map_or_else(|| "none".into(), |x| x.to_string());
                return Err(err(field("export"), format!("{id} is not an export id")).into());
            };
            let parts = d.components().map_err(|m| err(field("path"), m))?;
            let names: Vec<String> = parts.iter().map(|c| (*c).to_owned()).collect();
            let fileid = mkdir_p(store, root, &names, now).map_err(|e| {
                err(
                    field("path"),
                    format!("{:?} in export {export}: {e}", d.path),
                )
            })?;
            if let Some(policy) = cfg.cluster.layout_for_directory(export, d) {
                by_dir.insert((export, fileid), policy);
            }
        }
        Ok(Self { by_dir })
    }

    /// No directory has a policy: creates skip the walk.
    pub fn is_empty(&self) -> bool {
        self.by_dir.is_empty()
    }

    /// Every configured directory's policy (for the device list).
    pub fn policies(&self) -> impl Iterator<Item = LayoutPolicy> + '_ {
        self.by_dir.values().copied()
    }

    /// The policy of the nearest configured directory of `export` at or above directory
    /// `dir`, walking up with the store's parent pointers and stopping at `root` (the
    /// export's root directory, included) or at the namespace root; `None` if there is none
    /// (the file gets its export's policy), also past [`MAX_DEPTH`] steps.
    pub fn for_directory(
        &self,
        store: &Store,
        export: u16,
        root: u64,
        dir: u64,
    ) -> Result<Option<LayoutPolicy>, StoreError> {
        if self.by_dir.is_empty() {
            return Ok(None);
        }
        let mut at = dir;
        for _ in 0..MAX_DEPTH {
            if let Some(p) = self.by_dir.get(&(export, at)) {
                return Ok(Some(*p));
            }
            if at == root {
                return Ok(None);
            }
            at = match store.lookupp(at) {
                Ok(parent) => parent.fileid,
                Err(StoreError::NoEnt) => return Ok(None),
                Err(e) => return Err(e),
            };
        }
        tracing::info!(
            dir,
            export,
            "directory deeper than {MAX_DEPTH} levels: its new files get the export's layout policy"
        );
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{DataServerConfig, DirectoryLayout, ExportConfig};
    use crate::store::{CreateHow, CreateSpec, NewObject, StoreOptions};
    use nfs_proto::nfs4::Nfstime4;

    /// The time the tests' changes are made at (the store takes it from its caller).
    const T: Nfstime4 = Nfstime4 {
        seconds: 1_700_000_000,
        nseconds: 0,
    };

    fn store(dir: &std::path::Path) -> Store {
        Store::open(dir.join("mds.redb"), &StoreOptions::default(), T).unwrap()
    }

    fn entry(
        export: Option<u16>,
        path: &str,
        unit: Option<u32>,
        count: Option<u32>,
    ) -> DirectoryLayout {
        DirectoryLayout {
            export,
            path: path.into(),
            stripe_unit: unit,
            stripe_count: count,
            mirrors: None,
        }
    }

    /// Three data servers, export 1 at `/` and export 2 at `/e2`, the given directories.
    fn config(dirs: Vec<DirectoryLayout>) -> Config {
        let mut cfg = Config::default();
        cfg.exports.push(ExportConfig {
            id: 2,
            path: "/e2".into(),
            pseudo: "/e2".into(),
            clients: cfg.exports[0].clients.clone(),
            delegations: None,
        });
        cfg.cluster.data_servers = DataServerConfig::all_in_one(3);
        cfg.cluster.layout.directories = dirs;
        cfg
    }

    fn roots(s: &Store) -> HashMap<u16, u64> {
        let root = s.root().unwrap().fileid;
        let e2 = mkdir_p(s, root, &["e2".into()], T).unwrap();
        HashMap::from([(1, root), (2, e2)])
    }

    fn path(s: &Store, from: u64, p: &str) -> u64 {
        p.split('/')
            .filter(|c| !c.is_empty())
            .fold(from, |at, c| s.lookup(at, c.as_bytes()).unwrap().fileid)
    }

    fn policy(d: &DirLayouts, s: &Store, export: u16, root: u64, dir: u64) -> Option<(u32, u32)> {
        d.for_directory(s, export, root, dir)
            .unwrap()
            .map(|p| (p.stripe_unit, p.stripe_count))
    }

    #[test]
    fn the_nearest_configured_directory_at_or_above_gives_the_policy() {
        let tmp = tempfile::tempdir().unwrap();
        let s = store(tmp.path());
        let r = roots(&s);
        let cfg = config(vec![
            entry(None, "/a", Some(64 << 10), None),
            entry(Some(1), "/a/b/c", None, Some(1)),
            entry(Some(2), "/x", Some(128 << 10), Some(2)),
        ]);
        let d = DirLayouts::resolve(&s, &cfg, &r, T).unwrap();
        assert_eq!(d.policies().count(), 3);
        let root = r[&1];
        let a = path(&s, root, "/a");
        let b = path(&s, root, "/a/b");
        let c = path(&s, root, "/a/b/c");
        let x = path(&s, r[&2], "/x");
        mkdir_p(&s, c, &["d".into(), "e".into()], T).unwrap();
        let e = path(&s, c, "d/e");
        assert_eq!(policy(&d, &s, 1, root, a), Some((64 << 10, 3)));
        assert_eq!(policy(&d, &s, 1, root, b), Some((64 << 10, 3)));
        // The nearest wins; its unset unit is the export's, not /a's.
        assert_eq!(policy(&d, &s, 1, root, c), Some((1 << 20, 1)));
        assert_eq!(policy(&d, &s, 1, root, e), Some((1 << 20, 1)));
        assert_eq!(policy(&d, &s, 1, root, root), None);
        assert_eq!(policy(&d, &s, 2, r[&2], x), Some((128 << 10, 2)));
        // Another export's entry does not apply, nor does the walk go above the root.
        assert_eq!(policy(&d, &s, 2, r[&2], r[&2]), None);
        assert_eq!(policy(&d, &s, 1, root, x), None);
    }

    #[test]
    fn a_directory_renamed_out_of_a_configured_tree_follows_its_new_place() {
        let tmp = tempfile::tempdir().unwrap();
        let s = store(tmp.path());
        let r = roots(&s);
        let root = r[&1];
        let d = DirLayouts::resolve(&s, &config(vec![entry(None, "/a", None, Some(2))]), &r, T)
            .unwrap();
        let sub = mkdir_p(&s, path(&s, root, "/a"), &["sub".into()], T).unwrap();
        assert_eq!(policy(&d, &s, 1, root, sub), Some((1 << 20, 2)));
        let a = path(&s, root, "/a");
        s.rename(a, b"sub", root, b"sub", T).wait().unwrap();
        assert_eq!(policy(&d, &s, 1, root, sub), None);
    }

    #[test]
    fn resolving_makes_missing_directories_and_refuses_a_path_through_a_file() {
        let tmp = tempfile::tempdir().unwrap();
        let s = store(tmp.path());
        let r = roots(&s);
        let root = r[&1];
        let cfg = config(vec![entry(None, "//deep/er/", None, None)]);
        DirLayouts::resolve(&s, &cfg, &r, T).unwrap();
        let made = s.getattr(path(&s, root, "/deep/er")).unwrap();
        assert!(made.is_dir());
        assert_eq!(made.mode, 0o755);
        let spec = CreateSpec {
            object: NewObject::Regular(CreateHow::Guarded),
            mode: 0o644,
            uid: 0,
            gid: 0,
        };
        s.create(root, b"f", spec, T).wait().unwrap();
        for p in ["/f", "/f/g"] {
            let cfg = config(vec![
                entry(None, "/ok", None, None),
                entry(None, p, None, None),
            ]);
            let e = DirLayouts::resolve(&s, &cfg, &r, T).unwrap_err();
            assert_eq!(
                e.to_string(),
                format!(
                    "cluster.layout.directories[1].path: {p:?} in export 1: /f: not a directory"
                ),
            );
        }
        let cfg = config(vec![entry(Some(9), "/a", None, None)]);
        let e = DirLayouts::resolve(&s, &cfg, &r, T).unwrap_err();
        assert_eq!(
            e.to_string(),
            "cluster.layout.directories[0].export: 9 is not an export id"
        );
        let cfg = config(vec![entry(None, "/a/../b", None, None)]);
        let e = DirLayouts::resolve(&s, &cfg, &r, T).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("cluster.layout.directories[0].path: \"/a/../b\" must be"),
            "{e}"
        );
    }

    #[test]
    fn without_data_servers_no_directory_has_a_policy() {
        let tmp = tempfile::tempdir().unwrap();
        let s = store(tmp.path());
        let r = roots(&s);
        let mut cfg = config(vec![entry(None, "/a", None, None)]);
        cfg.cluster.data_servers.clear();
        let d = DirLayouts::resolve(&s, &cfg, &r, T).unwrap();
        assert!(d.is_empty());
        assert!(s.lookup(r[&1], b"a").unwrap().is_dir(), "still made");
    }
}

//! The name cache: the paths of files this client opened by path under a delegation, each
//! with the file it named and when that was last checked ([`super::name_key`] form).
//!
//! Every operation is logarithmic in the number of paths: the paths are ordered, so a path
//! and everything under it are one range, and a second map finds the paths of a file whose
//! delegation went. (It was one hash map scanned whole for both, so a client that had opened
//! n files by path paid O(n) per removal by path and per delegation returned: O(n^2) to
//! remove them all.)

use std::collections::{BTreeMap, HashMap};
use std::time::Instant;

use nfs_proto::nfs4::NfsFh4;

#[derive(Default)]
pub(crate) struct Names {
    by_path: BTreeMap<String, (NfsFh4, Instant)>,
    by_fh: HashMap<NfsFh4, Vec<String>>,
}

impl Names {
    /// `key` names `fh`, as checked at `at`.
    pub(crate) fn bind(&mut self, key: String, fh: &NfsFh4, at: Instant) {
        if let Some((old, _)) = self.by_path.insert(key.clone(), (fh.clone(), at)) {
            if old == *fh {
                return;
            }
            self.drop_path_of(&old, &key);
        }
        self.by_fh.entry(fh.clone()).or_default().push(key);
    }

    /// The file `key` named and when that was checked.
    pub(crate) fn get(&self, key: &str) -> Option<&(NfsFh4, Instant)> {
        self.by_path.get(key)
    }

    /// Forgets `key` and every path under it.
    pub(crate) fn unbind_tree(&mut self, key: &str) {
        let under = format!("{key}/");
        let mut gone: Vec<String> = self
            .by_path
            .range(under.clone()..)
            .take_while(|(k, _)| k.starts_with(&under))
            .map(|(k, _)| k.clone())
            .collect();
        gone.push(key.to_owned());
        for k in gone {
            if let Some((fh, _)) = self.by_path.remove(&k) {
                self.drop_path_of(&fh, &k);
            }
        }
    }

    /// Forgets every path that names `fh`.
    pub(crate) fn unbind_fh(&mut self, fh: &NfsFh4) {
        for k in self.by_fh.remove(fh).unwrap_or_default() {
            self.by_path.remove(&k);
        }
    }

    /// Forgets every path.
    pub(crate) fn clear(&mut self) {
        self.by_path.clear();
        self.by_fh.clear();
    }

    fn drop_path_of(&mut self, fh: &NfsFh4, key: &str) {
        if let Some(paths) = self.by_fh.get_mut(fh) {
            paths.retain(|p| p != key);
            if paths.is_empty() {
                self.by_fh.remove(fh);
            }
        }
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        debug_assert_eq!(
            self.by_path.len(),
            self.by_fh.values().map(Vec::len).sum::<usize>()
        );
        self.by_path.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fh(n: u8) -> NfsFh4 {
        NfsFh4(bytes::Bytes::from(vec![n; 8]))
    }

    #[test]
    fn a_path_and_everything_under_it_go_together_and_nothing_else() {
        let mut n = Names::default();
        let now = Instant::now();
        for (i, p) in ["/a", "/a/b", "/a/b/c", "/ab", "/a.b", "/b"]
            .iter()
            .enumerate()
        {
            n.bind((*p).to_owned(), &fh(i as u8), now);
        }
        n.unbind_tree("/a");
        assert!(n.get("/a").is_none() && n.get("/a/b").is_none() && n.get("/a/b/c").is_none());
        assert!(n.get("/ab").is_some() && n.get("/a.b").is_some() && n.get("/b").is_some());
        assert_eq!(n.len(), 3);
    }

    #[test]
    fn a_file_s_paths_go_with_its_delegation_and_a_rebound_path_follows_its_new_file() {
        let mut n = Names::default();
        let now = Instant::now();
        n.bind("/x".into(), &fh(1), now);
        n.bind("/y".into(), &fh(1), now);
        n.bind("/z".into(), &fh(2), now);
        // /z now names file 1 too; file 2 has no path left.
        n.bind("/z".into(), &fh(1), now);
        n.bind("/z".into(), &fh(1), now);
        assert_eq!(n.len(), 3);
        n.unbind_fh(&fh(2));
        assert_eq!(n.len(), 3);
        n.unbind_fh(&fh(1));
        assert_eq!(n.len(), 0);
        n.bind("/x".into(), &fh(3), now);
        n.clear();
        assert!(n.get("/x").is_none());
        assert_eq!(n.len(), 0);
    }
}

//! Random sequences of create, link, remove and rename over two directories, checked against
//! a simple model (a map from (directory, name) to file, a link count per file, and the files
//! that lost their last name: orphans, all regular files here).

use std::collections::btree_map::Entry;
use std::collections::{BTreeMap, BTreeSet};

use nfs_proto::nfs4::NfsStat4;
use proptest::prelude::*;

use super::*;

const NAMES: [&str; 3] = ["a", "b", "c"];

#[derive(Clone, Debug)]
enum Op {
    Create(usize, usize),
    Link(usize, usize, usize, usize),
    Remove(usize, usize),
    Rename(usize, usize, usize, usize),
    /// Deletes the orphan (or tries to delete the linked file) at this index of all files.
    DeleteOrphan(usize),
}

fn op() -> impl Strategy<Value = Op> {
    let d = 0usize..2;
    let n = 0usize..NAMES.len();
    prop_oneof![
        (d.clone(), n.clone()).prop_map(|(d, n)| Op::Create(d, n)),
        (d.clone(), n.clone(), d.clone(), n.clone()).prop_map(|(a, b, c, e)| Op::Link(a, b, c, e)),
        (d.clone(), n.clone()).prop_map(|(d, n)| Op::Remove(d, n)),
        (d.clone(), n.clone(), d, n).prop_map(|(a, b, c, e)| Op::Rename(a, b, c, e)),
        (0usize..8).prop_map(Op::DeleteOrphan),
    ]
}

#[derive(Default)]
struct Model {
    entries: BTreeMap<(usize, usize), u64>,
    nlink: BTreeMap<u64, u32>,
    orphans: BTreeSet<u64>,
}

impl Model {
    fn unlink(&mut self, f: u64) -> bool {
        let n = self.nlink.get_mut(&f).unwrap();
        *n -= 1;
        if *n == 0 {
            self.nlink.remove(&f);
            self.orphans.insert(f);
            return true;
        }
        false
    }
}

fn err<T: core::fmt::Debug>(r: Result<T, StoreError>) -> NfsStat4 {
    NfsStat4::from(r.unwrap_err())
}

fn check(s: &Store, dirs: [u64; 2], m: &Model) {
    for (di, &dir) in dirs.iter().enumerate() {
        let mut got: Vec<_> = s
            .readdir(dir, 0, usize::MAX)
            .unwrap()
            .entries
            .into_iter()
            .map(|e| {
                (
                    String::from_utf8_lossy(&e.name).into_owned(),
                    e.inode.fileid,
                )
            })
            .collect();
        got.sort();
        let want: Vec<_> = m
            .entries
            .iter()
            .filter(|((d, _), _)| *d == di)
            .map(|((_, n), f)| (NAMES[*n].to_string(), *f))
            .collect();
        assert_eq!(got, want, "directory {di}");
    }
    for (&f, &n) in &m.nlink {
        assert_eq!(s.getattr(f).unwrap().nlink, n, "file {f}");
    }
    let orphans: BTreeSet<u64> = orphan_ids(s).into_iter().collect();
    assert_eq!(orphans, m.orphans);
    for &f in &m.orphans {
        assert_eq!(s.getattr(f).unwrap().nlink, 0, "orphan {f}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn namespace_matches_a_simple_model(ops in proptest::collection::vec(op(), 1..30)) {
        let (_d, s) = fresh();
        let dirs = [mkdir(&s, ROOT_FILEID, "d0").fileid, mkdir(&s, ROOT_FILEID, "d1").fileid];
        let name = |n: usize| NAMES[n].as_bytes();
        let mut m = Model::default();
        for (step, op) in ops.iter().enumerate() {
            let now = t(100 + step as i64);
            match *op {
                Op::Create(d, n) => {
                    let r = s.create(dirs[d], name(n), file_spec(), now).wait();
                    match m.entries.entry((d, n)) {
                        Entry::Occupied(_) => prop_assert_eq!(err(r), NfsStat4::NFS4ERR_EXIST),
                        Entry::Vacant(v) => {
                            let f = r.unwrap().inode.fileid;
                            v.insert(f);
                            m.nlink.insert(f, 1);
                        }
                    }
                }
                Op::Link(sd, sn, dd, dn) => {
                    let Some(&f) = m.entries.get(&(sd, sn)) else { continue };
                    let r = s.link(f, dirs[dd], name(dn), now).wait();
                    if m.entries.contains_key(&(dd, dn)) {
                        prop_assert_eq!(err(r), NfsStat4::NFS4ERR_EXIST);
                    } else {
                        prop_assert_eq!(r.unwrap().inode.nlink, m.nlink[&f] + 1);
                        m.entries.insert((dd, dn), f);
                        *m.nlink.get_mut(&f).unwrap() += 1;
                    }
                }
                Op::Remove(d, n) => {
                    let r = s.remove(dirs[d], name(n), now, None).wait();
                    match m.entries.remove(&(d, n)) {
                        None => prop_assert_eq!(err(r), NfsStat4::NFS4ERR_NOENT),
                        Some(f) => {
                            let last = m.unlink(f);
                            prop_assert_eq!(r.unwrap().last_link, last);
                        }
                    }
                }
                Op::Rename(sd, sn, dd, dn) => {
                    let r = s.rename(dirs[sd], name(sn), dirs[dd], name(dn), now).wait();
                    let Some(&f) = m.entries.get(&(sd, sn)) else {
                        prop_assert_eq!(err(r), NfsStat4::NFS4ERR_NOENT);
                        continue;
                    };
                    let r = r.unwrap();
                    match m.entries.get(&(dd, dn)).copied() {
                        Some(g) if g == f => prop_assert!(r.replaced.is_none()),
                        Some(g) => {
                            let last = m.unlink(g);
                            prop_assert_eq!(r.replaced.unwrap().last_link, last);
                            m.entries.remove(&(sd, sn));
                            m.entries.insert((dd, dn), f);
                        }
                        None => {
                            prop_assert!(r.replaced.is_none());
                            m.entries.remove(&(sd, sn));
                            m.entries.insert((dd, dn), f);
                        }
                    }
                }
                Op::DeleteOrphan(i) => {
                    let all: Vec<u64> = m.nlink.keys().chain(&m.orphans).copied().collect();
                    let Some(&f) = all.get(i % all.len().max(1)) else { continue };
                    let deleted = s.delete_orphan(f, no_ds).wait().unwrap();
                    prop_assert_eq!(deleted, m.orphans.remove(&f));
                    if deleted {
                        prop_assert_eq!(err(s.getattr(f)), NfsStat4::NFS4ERR_STALE);
                    }
                }
            }
            check(&s, dirs, &m);
        }
    }
}

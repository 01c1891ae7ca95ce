//! Tests of the store's operations and durability.

mod durability;
mod layout_writes;
mod model;
mod ops;
mod removals;
mod rings;
mod stripes;
mod xattr;

use std::path::Path;

use nfs_proto::nfs4::Nfstime4;

use super::*;

/// A time `s` seconds after the epoch (the tests' virtual clock).
fn t(s: i64) -> Nfstime4 {
    Nfstime4 {
        seconds: s,
        nseconds: 0,
    }
}

fn open_at(path: &Path) -> Store {
    Store::open(path, &StoreOptions::default(), t(1)).unwrap()
}

/// A fresh store in a temporary directory (kept alive by the returned guard).
fn fresh() -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().unwrap();
    let s = open_at(&dir.path().join("mds.redb"));
    (dir, s)
}

fn spec(object: NewObject) -> CreateSpec {
    CreateSpec {
        object,
        mode: 0o644,
        uid: 1000,
        gid: 100,
    }
}

fn file_spec() -> CreateSpec {
    spec(NewObject::Regular(CreateHow::Guarded))
}

fn mkfile(s: &Store, dir: u64, name: &str) -> Inode {
    s.create(dir, name.as_bytes(), file_spec(), t(10))
        .wait()
        .unwrap()
        .inode
}

fn mkdir(s: &Store, dir: u64, name: &str) -> Inode {
    s.create(dir, name.as_bytes(), spec(NewObject::Directory), t(10))
        .wait()
        .unwrap()
        .inode
}

/// The names in a directory, in READDIR order.
fn names(s: &Store, dir: u64) -> Vec<String> {
    let r = s.readdir(dir, 0, usize::MAX).unwrap();
    assert!(r.eof);
    r.entries
        .iter()
        .map(|e| String::from_utf8_lossy(&e.name).into_owned())
        .collect()
}

/// The file ids of the store's orphans, in order.
fn orphan_ids(s: &Store) -> Vec<u64> {
    let mut ids: Vec<u64> = s.orphans().unwrap().into_iter().map(|(f, _)| f).collect();
    ids.sort();
    ids
}

/// The data servers of a stripe set, for deletes of files the test gave none: no server.
fn no_ds(_: &StripeSet) -> Vec<u16> {
    Vec::new()
}

//! Tests of server opens and delegations (deleg.rs).

use super::*;
use crate::attr::FileType;

fn meta(size: u64, change: u64) -> Metadata {
    Metadata {
        file_type: FileType::File,
        size,
        mode: 0o644,
        change,
        fileid: 7,
        nlink: 1,
        owner: "0".into(),
        group: "0".into(),
        atime: std::time::UNIX_EPOCH,
        mtime: std::time::UNIX_EPOCH,
        ctime: std::time::UNIX_EPOCH,
        space_used: 0,
        rdev: (0, 0),
    }
}

fn sid(n: u8) -> Stateid4 {
    Stateid4 {
        seqid: 1,
        other: [n; 12],
    }
}

fn with_deleg(kind: DelegKind) -> ServerOpen {
    let so = ServerOpen::new(
        NfsFh4::default(),
        "/f",
        sid(1),
        OPEN4_SHARE_ACCESS_BOTH,
        meta(100, 40),
    );
    so.st().deleg = Some(Delegation {
        stateid: sid(2),
        kind,
        returning: false,
        change: 40,
        modifications: 0,
    });
    so
}

#[test]
fn a_read_delegation_covers_reading_only_and_a_write_delegation_everything() {
    assert!(DelegKind::Read.covers(OPEN4_SHARE_ACCESS_READ));
    assert!(!DelegKind::Read.covers(OPEN4_SHARE_ACCESS_WRITE));
    assert!(!DelegKind::Read.covers(OPEN4_SHARE_ACCESS_BOTH));
    assert!(DelegKind::Write.covers(OPEN4_SHARE_ACCESS_BOTH));
}

#[test]
fn io_uses_the_delegation_stateid_only_where_the_delegation_allows() {
    let so = with_deleg(DelegKind::Read);
    assert_eq!(so.deleg_stateid(false), Some(sid(2)));
    assert_eq!(
        so.deleg_stateid(true),
        None,
        "WRITE under a read delegation"
    );
    let so = with_deleg(DelegKind::Write);
    assert_eq!(so.deleg_stateid(true), Some(sid(2)));
    so.st().deleg = None;
    assert_eq!(so.deleg_stateid(false), None);
}

#[test]
fn cb_getattr_answers_the_local_size_and_a_change_that_moves_with_each_local_change() {
    let so = with_deleg(DelegKind::Write);
    let ask = Bitmap4::from_bits([FATTR4_SIZE, FATTR4_CHANGE]);
    let a = FileAttrs::from_fattr(&so.cb_attrs(&ask).unwrap()).unwrap();
    assert_eq!((a.size, a.change), (Some(100), Some(40)));
    let mut gen = 0;
    so.changed(Some(5000), None, &mut gen);
    let b = FileAttrs::from_fattr(&so.cb_attrs(&ask).unwrap()).unwrap();
    assert_eq!(b.size, Some(5000));
    assert!(b.change > a.change);
    so.changed(None, Some(10), &mut gen);
    let c = FileAttrs::from_fattr(&so.cb_attrs(&ask).unwrap()).unwrap();
    assert_eq!(c.size, Some(10));
    assert!(c.change > b.change);
    // Only what was asked.
    let only =
        FileAttrs::from_fattr(&so.cb_attrs(&Bitmap4::from_bits([FATTR4_SIZE])).unwrap()).unwrap();
    assert_eq!((only.size, only.change), (Some(10), None));
    // No write delegation: no answer (NFS4ERR_BADHANDLE).
    assert!(with_deleg(DelegKind::Read).cb_attrs(&ask).is_none());
}

#[test]
fn a_read_cache_goes_stale_when_another_file_writes() {
    let so = with_deleg(DelegKind::Write);
    let mut mine = so.st().data_gen;
    let mut other = so.st().data_gen;
    so.changed(Some(1), None, &mut mine);
    assert_eq!(
        mine,
        so.st().data_gen,
        "a File's own write keeps its cache current"
    );
    assert_ne!(other, so.st().data_gen, "another File's cache is stale");
    so.changed(Some(2), None, &mut other);
    assert_ne!(other, so.st().data_gen, "a stale cache stays stale");
}

#[test]
fn writes_buffered_under_a_write_delegation_are_lost_only_when_it_is_revoked() {
    let so = with_deleg(DelegKind::Write);
    let epoch = so.write_epoch();
    assert_eq!(epoch, Some(0));
    assert!(!so.revoked_since(epoch));
    so.st().write_revocations += 1;
    assert!(so.revoked_since(epoch));
    assert!(
        !so.revoked_since(None),
        "writes made without a write delegation"
    );
    assert_eq!(with_deleg(DelegKind::Read).write_epoch(), None);
}

#[test]
fn name_keys_ignore_extra_slashes() {
    assert_eq!(name_key("/a//b/"), "/a/b");
    assert_eq!(name_key("a/b"), "/a/b");
    assert_eq!(name_key("/"), "/");
}

#[test]
fn entries_map_a_name_to_one_file_and_a_file_to_one_name() {
    let fh = |n: u8| NfsFh4(Bytes::from(vec![n; 8]));
    let mut e = Entries::default();
    e.bind(&fh(1), "a", &fh(10));
    e.bind(&fh(1), "b", &fh(11));
    assert_eq!(e.get(&fh(1), "a"), Some(fh(10)));
    assert_eq!(e.get(&fh(2), "a"), None, "another directory");
    // A new file under the same name replaces the old one, which is forgotten.
    e.bind(&fh(1), "a", &fh(12));
    assert_eq!(e.get(&fh(1), "a"), Some(fh(12)));
    e.unbind_fh(&fh(10));
    assert_eq!(
        e.get(&fh(1), "a"),
        Some(fh(12)),
        "the old file had no entry left"
    );
    // The same file bound again under another name keeps only that one.
    e.bind(&fh(2), "c", &fh(12));
    assert_eq!(e.get(&fh(1), "a"), None);
    assert_eq!(e.len(), 2);
    e.unbind(&fh(2), "c");
    e.unbind_fh(&fh(11));
    assert_eq!(e.len(), 0);
}

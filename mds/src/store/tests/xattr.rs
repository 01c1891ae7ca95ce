//! Extended attributes in the store (RFC 8276 section 8.4): the SETXATTR options, change
//! info, cookies, limits, durability and deletion with the inode.

use bytes::Bytes;
use nfs_proto::nfs4::ChangeInfo4;
use redb::{ReadableDatabase, ReadableTableMetadata};

use super::*;
use crate::store::schema::{XATTRS, XATTR_COOKIES};

fn set(
    s: &Store,
    f: u64,
    name: &str,
    value: &str,
    how: XattrSet,
) -> Result<ChangeInfo4, StoreError> {
    s.set_xattr(
        f,
        name.as_bytes(),
        Bytes::from(value.to_owned()),
        how,
        t(20),
    )
    .wait()
}

fn get(s: &Store, f: u64, name: &str) -> Result<String, StoreError> {
    s.get_xattr(f, name.as_bytes())
        .map(|v| String::from_utf8(v.to_vec()).unwrap())
}

fn listed(s: &Store, f: u64, cookie: u64, max: usize) -> (Vec<String>, Vec<u64>, bool) {
    let l = s.list_xattrs(f, cookie, max).unwrap();
    (
        l.names
            .iter()
            .map(|n| String::from_utf8(n.name.to_vec()).unwrap())
            .collect(),
        l.names.iter().map(|n| n.cookie).collect(),
        l.eof,
    )
}

/// Rows of the two xattr tables (for checking what deletion leaves behind).
fn rows(s: &Store) -> (u64, u64) {
    let r = s.inner.db.begin_read().unwrap();
    (
        r.open_table(XATTRS).unwrap().len().unwrap(),
        r.open_table(XATTR_COOKIES).unwrap().len().unwrap(),
    )
}

#[test]
fn create_replace_and_either_follow_setxattr_option4() {
    let (_d, s) = fresh();
    let f = mkfile(&s, ROOT_FILEID, "f").fileid;
    assert!(matches!(
        set(&s, f, "a", "1", XattrSet::Replace),
        Err(StoreError::NoXattr)
    ));
    set(&s, f, "a", "1", XattrSet::Create).unwrap();
    assert!(matches!(
        set(&s, f, "a", "2", XattrSet::Create),
        Err(StoreError::Exist)
    ));
    assert_eq!(
        get(&s, f, "a").unwrap(),
        "1",
        "a refused create changes nothing"
    );
    set(&s, f, "a", "2", XattrSet::Replace).unwrap();
    assert_eq!(get(&s, f, "a").unwrap(), "2");
    set(&s, f, "a", "3", XattrSet::Either).unwrap();
    set(&s, f, "b", "4", XattrSet::Either).unwrap();
    assert_eq!(
        (get(&s, f, "a").unwrap(), get(&s, f, "b").unwrap()),
        ("3".into(), "4".into())
    );
    assert!(matches!(get(&s, f, "c"), Err(StoreError::NoXattr)));
}

#[test]
fn set_and_remove_move_the_change_attribute_and_ctime_and_report_both_values() {
    let (_d, s) = fresh();
    let f = mkfile(&s, ROOT_FILEID, "f");
    let ci = set(&s, f.fileid, "a", "1", XattrSet::Create).unwrap();
    let after = s.getattr(f.fileid).unwrap();
    assert!(ci.atomic);
    assert_eq!((ci.before, ci.after), (f.change, after.change));
    assert!(after.change > f.change);
    assert_eq!(after.ctime, t(20));
    assert_eq!(after.mtime, f.mtime, "xattrs are not data");

    let ci = s.remove_xattr(f.fileid, b"a", t(30)).wait().unwrap();
    let last = s.getattr(f.fileid).unwrap();
    assert_eq!((ci.before, ci.after), (after.change, last.change));
    assert!(last.change > after.change);
    assert_eq!(last.ctime, t(30));
    assert!(matches!(get(&s, f.fileid, "a"), Err(StoreError::NoXattr)));
}

#[test]
fn refused_changes_leave_the_change_attribute_alone() {
    let (_d, s) = fresh();
    let f = mkfile(&s, ROOT_FILEID, "f");
    assert!(s.remove_xattr(f.fileid, b"a", t(30)).wait().is_err());
    assert!(set(&s, f.fileid, "a", "1", XattrSet::Replace).is_err());
    assert_eq!(s.getattr(f.fileid).unwrap(), f);
}

#[test]
fn list_resumes_after_its_cookie_in_creation_order() {
    let (_d, s) = fresh();
    let f = mkfile(&s, ROOT_FILEID, "f").fileid;
    for n in ["z", "a", "m", "b"] {
        set(&s, f, n, "v", XattrSet::Create).unwrap();
    }
    let (names, cookies, eof) = listed(&s, f, 0, 100);
    assert_eq!(names, ["z", "a", "m", "b"]);
    assert!(eof);
    assert!(cookies.windows(2).all(|w| w[0] < w[1]), "{cookies:?}");

    let (first, c1, eof) = listed(&s, f, 0, 2);
    assert_eq!((first, eof), (vec!["z".to_owned(), "a".to_owned()], false));
    // Replacing a value keeps its place; removing the name a cookie came from keeps the
    // cookie usable.
    set(&s, f, "z", "new", XattrSet::Replace).unwrap();
    s.remove_xattr(f, b"a", t(21)).wait().unwrap();
    let (rest, _, eof) = listed(&s, f, c1[1], 2);
    assert_eq!((rest, eof), (vec!["m".to_owned(), "b".to_owned()], true));
    let (names, _, _) = listed(&s, f, 0, 100);
    assert_eq!(names, ["z", "m", "b"]);
}

#[test]
fn cookies_never_issued_are_bad_and_objects_without_xattrs_list_empty() {
    let (_d, s) = fresh();
    let f = mkfile(&s, ROOT_FILEID, "f").fileid;
    assert_eq!(listed(&s, f, 0, 10), (vec![], vec![], true));
    let beyond = s.change_counter().unwrap() + 1;
    assert!(matches!(
        s.list_xattrs(f, beyond, 10),
        Err(StoreError::BadCookie(_))
    ));
    assert!(matches!(
        s.list_xattrs(999, 0, 10),
        Err(StoreError::Stale(999))
    ));
}

#[test]
fn xattrs_of_one_object_are_not_another_objects() {
    let (_d, s) = fresh();
    let f = mkfile(&s, ROOT_FILEID, "f").fileid;
    let g = mkfile(&s, ROOT_FILEID, "g").fileid;
    set(&s, f, "a", "f's", XattrSet::Create).unwrap();
    set(&s, g, "a", "g's", XattrSet::Create).unwrap();
    assert_eq!(get(&s, f, "a").unwrap(), "f's");
    assert_eq!(get(&s, g, "a").unwrap(), "g's");
    assert_eq!(listed(&s, g, 0, 10).0, ["a"]);
}

#[test]
fn names_and_values_are_held_to_the_linux_limits() {
    let (_d, s) = fresh();
    let f = mkfile(&s, ROOT_FILEID, "f").fileid;
    assert!(matches!(
        set(&s, f, "", "v", XattrSet::Either),
        Err(StoreError::Inval(_))
    ));
    assert!(matches!(
        set(&s, f, "a\0b", "v", XattrSet::Either),
        Err(StoreError::BadName(_))
    ));
    let longest = "n".repeat(MAX_XATTR_NAME_LEN);
    set(&s, f, &longest, "v", XattrSet::Either).unwrap();
    assert!(matches!(
        set(&s, f, &format!("{longest}n"), "v", XattrSet::Either),
        Err(StoreError::NameTooLong)
    ));
    assert!(matches!(s.get_xattr(f, b""), Err(StoreError::Inval(_))));

    let big = Bytes::from(vec![7u8; MAX_XATTR_VALUE_LEN]);
    s.set_xattr(f, b"big", big.clone(), XattrSet::Either, t(20))
        .wait()
        .unwrap();
    assert_eq!(s.get_xattr(f, b"big").unwrap(), big);
    let too_big = Bytes::from(vec![7u8; MAX_XATTR_VALUE_LEN + 1]);
    assert!(matches!(
        s.set_xattr(f, b"big", too_big, XattrSet::Either, t(20))
            .wait(),
        Err(StoreError::Xattr2Big)
    ));
}

#[test]
fn names_beyond_one_listxattr_buffer_are_nospc_but_replacing_still_works() {
    let (_d, s) = fresh();
    let f = mkfile(&s, ROOT_FILEID, "f").fileid;
    // Each name costs "user." + 200 + NUL = 206 bytes of the 64 KiB list.
    let name = |i: usize| format!("{i:0200}");
    let fit = MAX_XATTR_LIST_LEN / 206;
    for i in 0..fit {
        set(&s, f, &name(i), "", XattrSet::Create).unwrap();
    }
    assert!(matches!(
        set(&s, f, &name(fit), "", XattrSet::Create),
        Err(StoreError::NoSpace(_))
    ));
    set(&s, f, &name(0), "replaced", XattrSet::Either).unwrap();
    s.remove_xattr(f, name(1).as_bytes(), t(21)).wait().unwrap();
    set(&s, f, &name(fit), "", XattrSet::Create).unwrap();
}

#[test]
fn deleting_the_inode_deletes_its_xattrs() {
    let (_d, s) = fresh();
    let f = mkfile(&s, ROOT_FILEID, "f").fileid;
    let keep = mkfile(&s, ROOT_FILEID, "keep").fileid;
    set(&s, f, "a", "1", XattrSet::Create).unwrap();
    set(&s, f, "b", "2", XattrSet::Create).unwrap();
    set(&s, keep, "a", "3", XattrSet::Create).unwrap();
    // A second link keeps the inode, and its attributes.
    s.link(f, ROOT_FILEID, b"f2", t(21)).wait().unwrap();
    s.remove(ROOT_FILEID, b"f", t(22), None).wait().unwrap();
    assert_eq!(get(&s, f, "a").unwrap(), "1");
    assert_eq!(rows(&s), (3, 3));
    let r = s.remove(ROOT_FILEID, b"f2", t(23), None).wait().unwrap();
    assert!(r.last_link && r.orphan);
    // An orphan may still be open: its attributes stay until it is deleted.
    assert_eq!(get(&s, f, "b").unwrap(), "2");
    assert!(s.delete_orphan(f, no_ds).wait().unwrap());
    assert_eq!(rows(&s), (1, 1), "only the other file's attribute is left");
    assert_eq!(get(&s, keep, "a").unwrap(), "3");
    // A rename over a file orphans the replaced file; deleting it takes its attributes.
    let g = mkfile(&s, ROOT_FILEID, "g").fileid;
    set(&s, g, "x", "y", XattrSet::Create).unwrap();
    s.rename(ROOT_FILEID, b"keep", ROOT_FILEID, b"g", t(24))
        .wait()
        .unwrap();
    assert!(s.delete_orphan(g, no_ds).wait().unwrap());
    assert_eq!(rows(&s), (1, 1));
    assert_eq!(get(&s, keep, "a").unwrap(), "3");
}

#[test]
fn xattrs_and_their_cookies_survive_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mds.redb");
    let s = open_at(&path);
    let f = mkfile(&s, ROOT_FILEID, "f").fileid;
    set(&s, f, "a", "1", XattrSet::Create).unwrap();
    set(&s, f, "b", "2", XattrSet::Create).unwrap();
    let (_, cookies, _) = listed(&s, f, 0, 10);
    drop(s);
    let s = open_at(&path);
    assert_eq!(get(&s, f, "b").unwrap(), "2");
    assert_eq!(listed(&s, f, cookies[0], 10).0, ["b"]);
}

#[test]
fn a_store_made_before_the_xattr_tables_gets_them_at_open() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mds.redb");
    let s = open_at(&path);
    let f = mkfile(&s, ROOT_FILEID, "f").fileid;
    drop(s);
    {
        let db = redb::Database::open(&path).unwrap();
        let w = db.begin_write().unwrap();
        assert!(w.delete_table(XATTRS).unwrap());
        assert!(w.delete_table(XATTR_COOKIES).unwrap());
        w.commit().unwrap();
    }
    let s = open_at(&path);
    assert_eq!(listed(&s, f, 0, 10).0, Vec::<String>::new());
    set(&s, f, "a", "1", XattrSet::Create).unwrap();
    assert_eq!(get(&s, f, "a").unwrap(), "1");
}

//! Stripe sets: fixed once, durable, deleted with their inode.

use layouts::{Device, Packing};

use super::*;

fn set(generation: u32, count: u16, first: u16, packing: Packing) -> StripeSet {
    StripeSet {
        unit: 1 << 20,
        device: Device {
            generation,
            count,
            first,
        },
        packing,
        mirrors: 1,
    }
}

#[test]
fn a_file_has_no_stripe_set_until_one_is_fixed() {
    let (_d, s) = fresh();
    let f = mkfile(&s, ROOT_FILEID, "f").fileid;
    assert_eq!(s.stripes(f).unwrap(), None);
    assert!(!s.has_stripes(f).unwrap());
    let want = set(1, 3, 2, Packing::Dense);
    assert_eq!(s.fix_stripes(f, want, false).wait().unwrap(), want);
    assert_eq!(s.stripes(f).unwrap(), Some(want));
    assert!(s.has_stripes(f).unwrap());
}

#[test]
fn the_first_stripe_set_of_a_file_stays_when_another_is_proposed() {
    let (_d, s) = fresh();
    let f = mkfile(&s, ROOT_FILEID, "f").fileid;
    let first = set(1, 2, 1, Packing::Sparse);
    s.fix_stripes(f, first, false).wait().unwrap();
    let got = s
        .fix_stripes(f, set(2, 3, 0, Packing::Dense), false)
        .wait()
        .unwrap();
    assert_eq!(got, first);
    assert_eq!(s.stripes(f).unwrap(), Some(first));
}

#[test]
fn stripe_sets_survive_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mds.redb");
    let s = open_at(&path);
    let f = mkfile(&s, ROOT_FILEID, "f").fileid;
    let g = mkfile(&s, ROOT_FILEID, "g").fileid;
    let want = set(7, 3, 1, Packing::Dense);
    s.fix_stripes(f, want, false).wait().unwrap();
    drop(s);
    let s = open_at(&path);
    assert_eq!(s.stripes(f).unwrap(), Some(want));
    assert_eq!(s.stripes(g).unwrap(), None);
}

#[test]
fn only_regular_files_get_stripe_sets() {
    let (_d, s) = fresh();
    let d = mkdir(&s, ROOT_FILEID, "d").fileid;
    let err = s
        .fix_stripes(d, set(1, 1, 0, Packing::Dense), false)
        .wait()
        .unwrap_err();
    assert!(matches!(err, StoreError::Inval(_)), "{err:?}");
    assert_eq!(s.stripes(d).unwrap(), None);
}

#[test]
fn a_gone_file_is_stale_for_stripe_sets() {
    let (_d, s) = fresh();
    let err = s
        .fix_stripes(999, set(1, 1, 0, Packing::Dense), false)
        .wait()
        .unwrap_err();
    assert!(matches!(err, StoreError::Stale(999)), "{err:?}");
    assert!(matches!(s.stripes(999), Err(StoreError::Stale(999))));
}

#[test]
fn deleting_an_orphan_deletes_its_stripe_set() {
    let (_d, s) = fresh();
    let f = mkfile(&s, ROOT_FILEID, "f").fileid;
    s.fix_stripes(f, set(1, 2, 0, Packing::Dense), false)
        .wait()
        .unwrap();
    let removed = s.remove(ROOT_FILEID, b"f", t(20), None).wait().unwrap();
    assert!(removed.orphan);
    assert!(s.delete_orphan(f, no_ds).wait().unwrap());
    let r = s.read().unwrap();
    let t = r.open_table(STRIPES).unwrap();
    assert!(t.get(f).unwrap().is_none());
    assert!(!s.has_stripes(f).unwrap());
}

#[test]
fn a_store_made_before_the_stripes_table_gets_it_at_open() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mds.redb");
    let s = open_at(&path);
    let f = mkfile(&s, ROOT_FILEID, "f").fileid;
    drop(s);
    {
        let db = redb::Database::open(&path).unwrap();
        let w = db.begin_write().unwrap();
        assert!(w.delete_table(STRIPES).unwrap());
        w.commit().unwrap();
    }
    let s = open_at(&path);
    assert_eq!(s.stripes(f).unwrap(), None);
    let want = set(1, 1, 0, Packing::Dense);
    assert_eq!(s.fix_stripes(f, want, false).wait().unwrap(), want);
}

#[test]
fn a_stripe_set_gives_the_map_layouts_describe() {
    let m = set(1, 3, 2, Packing::Dense).map().unwrap();
    assert_eq!(
        (m.unit, m.count, m.first, m.pattern_offset),
        (1 << 20, 3, 0, 0)
    );
    assert_eq!(m.packing, Packing::Dense);
}

//! Marks of files written through RW layouts, and settling their sizes.

use super::*;

const NOW: Nfstime4 = Nfstime4 {
    seconds: 1_800_000_000,
    nseconds: 0,
};

#[test]
fn marking_twice_writes_once_and_survives_a_reopen() {
    let (dir, s) = fresh();
    let f = mkfile(&s, ROOT_FILEID, "f").fileid;
    assert!(s.mark_layout_writes(f).wait().unwrap());
    let commits = s.commit_stats().commits;
    assert!(!s.mark_layout_writes(f).wait().unwrap());
    assert_eq!(
        s.commit_stats().commits,
        commits,
        "no sync for a marked file"
    );
    drop(s);
    let s = open_at(&dir.path().join("mds.redb"));
    assert_eq!(s.layout_writes().unwrap(), vec![f]);
}

#[test]
fn settling_grows_the_size_to_the_data_servers_and_removes_the_mark() {
    let (_d, s) = fresh();
    let f = mkfile(&s, ROOT_FILEID, "f").fileid;
    s.mark_layout_writes(f).wait().unwrap();
    let before = s.getattr(f).unwrap();
    let r = s
        .settle_layout_writes(f, before.change, 5000, NOW, || false)
        .wait()
        .unwrap();
    assert_eq!(r, Settled::Grown { size: 5000 });
    let after = s.getattr(f).unwrap();
    assert_eq!(after.size, 5000);
    assert_ne!(after.change, before.change);
    assert_eq!(after.mtime, NOW);
    assert!(s.layout_writes().unwrap().is_empty());
    // Settled already.
    let r = s.settle_layout_writes(f, after.change, 9000, NOW, || false);
    assert_eq!(r.wait().unwrap(), Settled::NotMarked);
    assert_eq!(s.getattr(f).unwrap().size, 5000);
}

#[test]
fn a_smaller_size_on_the_data_servers_only_removes_the_mark() {
    let (_d, s) = fresh();
    let f = mkfile(&s, ROOT_FILEID, "f").fileid;
    s.mark_layout_writes(f).wait().unwrap();
    s.record_layout_commit(f, 100, Some(NOW), NOW)
        .wait()
        .unwrap();
    let before = s.getattr(f).unwrap();
    let r = s.settle_layout_writes(f, before.change, 10, NOW, || false);
    assert_eq!(r.wait().unwrap(), Settled::Kept);
    assert_eq!(s.getattr(f).unwrap(), before);
    assert!(s.layout_writes().unwrap().is_empty());
}

#[test]
fn a_busy_or_changed_file_stays_marked_and_unchanged() {
    let (_d, s) = fresh();
    let f = mkfile(&s, ROOT_FILEID, "f").fileid;
    s.mark_layout_writes(f).wait().unwrap();
    let seen = s.getattr(f).unwrap();
    let r = s.settle_layout_writes(f, seen.change, 5000, NOW, || true);
    assert_eq!(r.wait().unwrap(), Settled::Busy);
    // A truncate (or any change) after the data servers were asked: their size is stale.
    s.record_layout_commit(f, 1, Some(NOW), NOW).wait().unwrap();
    let r = s.settle_layout_writes(f, seen.change, 5000, NOW, || false);
    assert_eq!(r.wait().unwrap(), Settled::Busy);
    assert_eq!(s.getattr(f).unwrap().size, 1);
    assert_eq!(s.layout_writes().unwrap(), vec![f]);
}

#[test]
fn deleting_a_file_drops_its_mark() {
    let (_d, s) = fresh();
    let f = mkfile(&s, ROOT_FILEID, "f");
    s.mark_layout_writes(f.fileid).wait().unwrap();
    s.remove(ROOT_FILEID, b"f", t(20), None).wait().unwrap();
    assert_eq!(
        s.layout_writes().unwrap(),
        vec![f.fileid],
        "an orphan keeps it"
    );
    s.delete_orphan(f.fileid, |_| Vec::new()).wait().unwrap();
    assert!(s.layout_writes().unwrap().is_empty());
    let r = s.settle_layout_writes(f.fileid, f.change, 5000, NOW, || false);
    assert_eq!(r.wait().unwrap(), Settled::NotMarked);
}

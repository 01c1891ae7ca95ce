//! The queue of data server removals: written with the inode delete, durable, drained one
//! data server acknowledgement at a time.

use layouts::{Device, Packing};
use nfs_proto::nfs4::attr::Settime4;

use std::sync::atomic::{AtomicU64, Ordering};

use super::*;

fn set(count: u16, first: u16) -> StripeSet {
    StripeSet {
        unit: 1 << 20,
        device: Device {
            generation: 1,
            count,
            first,
        },
        packing: Packing::Dense,
        mirrors: 1,
    }
}

/// The data servers of a set as a ring of `n` servers with ids 1..=n would place it.
fn ring_of(n: u16) -> impl Fn(&StripeSet) -> Vec<u16> + Send + 'static {
    move |s: &StripeSet| {
        (0..s.device.count)
            .map(|i| (s.device.first + i) % n + 1)
            .collect()
    }
}

/// A striped file `name` in the root, unlinked (an orphan), ready to be deleted.
fn striped_orphan(s: &Store, name: &str, stripes: StripeSet) -> u64 {
    let f = mkfile(s, ROOT_FILEID, name).fileid;
    s.fix_stripes(f, stripes, false).wait().unwrap();
    assert!(
        s.remove(ROOT_FILEID, name.as_bytes(), t(20), None)
            .wait()
            .unwrap()
            .orphan
    );
    f
}

fn queue(s: &Store) -> Vec<(u64, Vec<u16>)> {
    s.ds_removals(0, usize::MAX)
        .unwrap()
        .into_iter()
        .map(|r| (r.file, r.servers))
        .collect()
}

#[test]
fn deleting_a_striped_orphan_queues_its_data_servers_in_the_same_commit() {
    let (_d, s) = fresh();
    let f = striped_orphan(&s, "f", set(2, 2));
    assert!(queue(&s).is_empty(), "nothing queued before the delete");
    assert!(s.delete_orphan(f, ring_of(3)).wait().unwrap());
    assert_eq!(queue(&s), [(f, vec![1, 3])], "servers 3 and 1, sorted");
    assert_eq!(s.ds_removal_count().unwrap(), 1);
    assert!(matches!(s.stripes(f), Err(StoreError::Stale(x)) if x == f));
}

#[test]
fn deleting_a_file_without_a_stripe_set_queues_nothing() {
    let (_d, s) = fresh();
    let f = mkfile(&s, ROOT_FILEID, "f").fileid;
    s.remove(ROOT_FILEID, b"f", t(20), None).wait().unwrap();
    let asked = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let a = asked.clone();
    assert!(s
        .delete_orphan(f, move |_| {
            a.store(true, std::sync::atomic::Ordering::SeqCst);
            vec![1]
        })
        .wait()
        .unwrap());
    assert!(queue(&s).is_empty());
    assert!(!asked.load(std::sync::atomic::Ordering::SeqCst));
}

/// [`DeleteUnopened`] answering `unopened` (and counting its questions), over a ring of 3.
fn unopened(unopened: bool, asked: &std::sync::Arc<AtomicU64>) -> Option<DeleteUnopened> {
    let asked = asked.clone();
    Some(DeleteUnopened {
        unopened: Box::new(move |_| {
            asked.fetch_add(1, Ordering::SeqCst);
            unopened
        }),
        servers: Box::new(ring_of(3)),
    })
}

#[test]
fn a_remove_deletes_a_striped_file_nobody_has_open_in_its_own_commit() {
    let (_d, s) = fresh();
    let f = mkfile(&s, ROOT_FILEID, "f").fileid;
    s.fix_stripes(f, set(2, 2), true).wait().unwrap();
    assert_eq!(s.layout_writes().unwrap(), [f]);
    let asked = std::sync::Arc::new(AtomicU64::new(0));
    let commits = s.commit_stats();
    let r = s
        .remove(ROOT_FILEID, b"f", t(20), unopened(true, &asked))
        .wait()
        .unwrap();
    assert!(r.orphan && r.deleted && r.last_link);
    assert_eq!(asked.load(Ordering::SeqCst), 1);
    assert_eq!(s.commit_stats().commits - commits.commits, 1, "one commit");
    assert_eq!(queue(&s), [(f, vec![1, 3])], "its objects queued with it");
    assert!(matches!(s.getattr(f), Err(StoreError::Stale(x)) if x == f));
    assert!(s.orphans().unwrap().is_empty(), "no orphan left behind");
    assert!(s.layout_writes().unwrap().is_empty(), "nor its mark");
    assert!(!s.delete_orphan(f, ring_of(3)).wait().unwrap(), "gone");
}

#[test]
fn a_remove_keeps_an_open_file_and_a_file_without_a_stripe_set_as_orphans() {
    let (_d, s) = fresh();
    let asked = std::sync::Arc::new(AtomicU64::new(0));
    // Open: the decision keeps it.
    let f = mkfile(&s, ROOT_FILEID, "f").fileid;
    s.fix_stripes(f, set(3, 0), false).wait().unwrap();
    let r = s
        .remove(ROOT_FILEID, b"f", t(20), unopened(false, &asked))
        .wait()
        .unwrap();
    assert!(r.orphan && !r.deleted);
    assert_eq!(asked.load(Ordering::SeqCst), 1);
    assert!(s.getattr(f).is_ok());
    // No stripe set (its data would be in the MDS's own object): not even asked.
    let g = mkfile(&s, ROOT_FILEID, "g").fileid;
    let r = s
        .remove(ROOT_FILEID, b"g", t(21), unopened(true, &asked))
        .wait()
        .unwrap();
    assert!(r.orphan && !r.deleted);
    assert_eq!(asked.load(Ordering::SeqCst), 1);
    // Another name left: not an orphan, not asked.
    let h = mkfile(&s, ROOT_FILEID, "h").fileid;
    s.fix_stripes(h, set(3, 0), false).wait().unwrap();
    s.link(h, ROOT_FILEID, b"h2", t(22)).wait().unwrap();
    let r = s
        .remove(ROOT_FILEID, b"h", t(23), unopened(true, &asked))
        .wait()
        .unwrap();
    assert!(!r.orphan && !r.deleted);
    assert_eq!(asked.load(Ordering::SeqCst), 1);
    assert_eq!(
        s.orphans()
            .unwrap()
            .into_iter()
            .map(|(f, _)| f)
            .collect::<Vec<_>>(),
        [f, g]
    );
    assert!(queue(&s).is_empty());
}

#[test]
fn a_delete_that_does_not_happen_queues_nothing() {
    let (_d, s) = fresh();
    let f = mkfile(&s, ROOT_FILEID, "f").fileid;
    s.fix_stripes(f, set(3, 0), false).wait().unwrap();
    // Still named: not an orphan, so not deleted.
    assert!(!s.delete_orphan(f, ring_of(3)).wait().unwrap());
    assert!(queue(&s).is_empty());
    assert!(s.stripes(f).unwrap().is_some());
}

#[test]
fn acknowledgements_take_servers_off_and_the_last_one_drops_the_record() {
    let (_d, s) = fresh();
    let f = striped_orphan(&s, "f", set(3, 0));
    let g = striped_orphan(&s, "g", set(2, 1));
    s.delete_orphan(f, ring_of(3)).wait().unwrap();
    s.delete_orphan(g, ring_of(3)).wait().unwrap();
    assert_eq!(queue(&s), [(f, vec![1, 2, 3]), (g, vec![2, 3])]);
    assert_eq!(s.ds_removals_acknowledged(2, vec![f, g]).wait().unwrap(), 0);
    assert_eq!(queue(&s), [(f, vec![1, 3]), (g, vec![3])]);
    // Server 3 finishes g; a file not queued for it, or not queued at all, is skipped.
    assert_eq!(
        s.ds_removals_acknowledged(3, vec![g, 999]).wait().unwrap(),
        1
    );
    assert_eq!(
        s.ds_removals_acknowledged(3, vec![g]).wait().unwrap(),
        0,
        "again"
    );
    assert_eq!(queue(&s), [(f, vec![1, 3])]);
    assert_eq!(s.ds_removals_acknowledged(1, vec![f]).wait().unwrap(), 0);
    assert_eq!(s.ds_removals_acknowledged(3, vec![f]).wait().unwrap(), 1);
    assert!(queue(&s).is_empty());
    assert_eq!(s.ds_removal_count().unwrap(), 0);
}

#[test]
fn the_queue_survives_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mds.redb");
    let s = open_at(&path);
    let f = striped_orphan(&s, "f", set(3, 1));
    s.delete_orphan(f, ring_of(3)).wait().unwrap();
    s.ds_removals_acknowledged(2, vec![f]).wait().unwrap();
    drop(s);
    let s = open_at(&path);
    assert_eq!(queue(&s), [(f, vec![1, 3])]);
}

#[test]
fn pages_of_the_queue_start_at_a_file_id_and_stop_at_the_limit() {
    let (_d, s) = fresh();
    let files: Vec<u64> = (0..5)
        .map(|i| {
            let f = striped_orphan(&s, &format!("f{i}"), set(1, 0));
            s.delete_orphan(f, ring_of(1)).wait().unwrap();
            f
        })
        .collect();
    let page = |from, limit| -> Vec<u64> {
        s.ds_removals(from, limit)
            .unwrap()
            .iter()
            .map(|r| r.file)
            .collect()
    };
    assert_eq!(page(0, 2), files[..2]);
    assert_eq!(page(files[2], 2), files[2..4]);
    assert_eq!(page(files[4] + 1, 2), Vec::<u64>::new());
}

#[test]
fn a_store_made_before_the_queue_table_gets_it_at_open() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mds.redb");
    drop(open_at(&path));
    {
        let db = redb::Database::open(&path).unwrap();
        let w = db.begin_write().unwrap();
        assert!(w.delete_table(DS_REMOVALS).unwrap());
        w.commit().unwrap();
    }
    let s = open_at(&path);
    assert_eq!(s.ds_removal_count().unwrap(), 0);
    let f = striped_orphan(&s, "f", set(1, 0));
    s.delete_orphan(f, ring_of(1)).wait().unwrap();
    assert_eq!(queue(&s), [(f, vec![1])]);
}

#[test]
fn setattr_checks_that_need_no_object_refuse_bad_values_up_front() {
    let ok = SetAttrs {
        size: Some(i64::MAX as u64),
        mode: Some(0o7777),
        ..Default::default()
    };
    assert!(ok.check().is_ok());
    let big = SetAttrs {
        size: Some(i64::MAX as u64 + 1),
        ..Default::default()
    };
    assert!(matches!(big.check(), Err(StoreError::FBig)));
    let mode = SetAttrs {
        mode: Some(0o10000),
        ..Default::default()
    };
    assert!(matches!(mode.check(), Err(StoreError::Inval(_))));
    let time = SetAttrs {
        atime: Some(Settime4::SetToClientTime(Nfstime4 {
            seconds: 0,
            nseconds: 1_000_000_000,
        })),
        ..Default::default()
    };
    assert!(matches!(time.check(), Err(StoreError::Inval(_))));
}

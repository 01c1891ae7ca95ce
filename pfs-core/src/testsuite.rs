//! One test suite every backend runs (`object_store_suite!`), including a property test that
//! drives random operations against an in-memory model.

use std::any::Any;
use std::collections::HashMap;

use bytes::Bytes;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};

use crate::{Deallocated, ObjectId, ObjectStore, SeekWhat, Stability, StoreError};

/// A store under test and whatever must live as long as it (e.g. its temporary directory).
pub(crate) struct Fixture {
    pub(crate) store: Box<dyn ObjectStore>,
    /// Every stripe of a file is the same bytes (the shared backend).
    pub(crate) shared_stripes: bool,
    _guard: Box<dyn Any>,
}

impl Fixture {
    pub(crate) fn new<S: ObjectStore + 'static, G: 'static>(
        store: S,
        guard: G,
        shared_stripes: bool,
    ) -> Self {
        Fixture {
            store: Box::new(store),
            shared_stripes,
            _guard: Box::new(guard),
        }
    }

    /// The id whose bytes `id` shows: itself, or stripe 0 of its file when stripes share.
    fn key(&self, id: ObjectId) -> ObjectId {
        if self.shared_stripes {
            ObjectId::whole(id.file)
        } else {
            id
        }
    }
}

pub(crate) type Make<'a> = &'a dyn Fn() -> Fixture;

/// Generates one `#[test]` per suite function for a backend. `$make` is a closure returning
/// `(store, guard)`; `keeps_data = false` for stores that read back zeros (NullStore);
/// `stripes = shared` for stores where every stripe of a file is the same bytes (SharedStore:
/// sparse packing on one file), `stripes = independent` (the default) otherwise.
macro_rules! object_store_suite {
    ($make:expr, keeps_data = $keeps:expr) => {
        $crate::testsuite::object_store_suite!($make, keeps_data = $keeps, stripes = independent);
    };
    ($make:expr, keeps_data = $keeps:expr, stripes = independent) => {
        $crate::testsuite::object_store_suite!(@tests $make, $keeps, false;
            objects_of_one_file_and_of_different_files_are_independent);
    };
    ($make:expr, keeps_data = $keeps:expr, stripes = shared) => {
        $crate::testsuite::object_store_suite!(@tests $make, $keeps, true;
            stripes_of_one_file_share_its_bytes_and_files_are_independent);
    };
    (@tests $make:expr, $keeps:expr, $shared:expr; $stripes_test:ident) => {
        $crate::testsuite::object_store_suite!(@each $make, $keeps, $shared;
            write_then_read_returns_the_data,
            pieces_of_one_write_land_contiguously,
            later_writes_overwrite_overlapping_bytes,
            write_past_the_end_leaves_a_hole_of_zeros,
            missing_object_reads_empty_with_eof_and_has_size_zero,
            read_sets_eof_only_when_it_reaches_the_end,
            truncate_grows_with_zeros_and_shrinks_away_the_tail,
            remove_forgets_the_object_and_removing_a_missing_one_is_fine,
            $stripes_test,
            write_past_the_largest_offset_is_too_big_and_writes_nothing,
            remove_file_removes_every_stripe_of_that_file_only,
            writes_report_the_stability_they_were_asked_for,
            commit_of_a_missing_object_succeeds,
            empty_write_does_not_create_the_object,
            deallocate_zeroes_a_range_and_keeps_the_size,
            seek_finds_data_and_holes_and_nothing_past_the_end,
            space_used_counts_storage_and_falls_after_deallocate,
            verifier_stays_the_same_while_the_store_lives,
            statfs_figures_are_consistent,
            copy_range_copies_what_the_source_holds_and_says_how_much,
            copy_range_copies_holes_as_zeros_and_a_trailing_hole_as_size,
            clone_range_clones_or_says_not_supported_and_changes_nothing,
            concurrent_writers_to_different_objects_do_not_interfere,
            random_operations_match_a_model
        );
    };
    (@each $make:expr, $keeps:expr, $shared:expr; $($name:ident),* $(,)?) => {
        mod suite {
            $(
                #[test]
                fn $name() {
                    #[allow(unused_imports)]
                    use super::*;
                    let make = || {
                        let (store, guard) = ($make)();
                        $crate::testsuite::Fixture::new(store, guard, $shared)
                    };
                    $crate::testsuite::$name(&make, $keeps);
                }
            )*
        }
    };
}
pub(crate) use object_store_suite;

const A: ObjectId = ObjectId {
    file: 0x1234,
    stripe: 0,
};
const B: ObjectId = ObjectId {
    file: 0x1234,
    stripe: 1,
};
const C: ObjectId = ObjectId {
    file: 0x99_1234,
    stripe: 0,
};

fn b(s: &[u8]) -> Bytes {
    Bytes::copy_from_slice(s)
}

/// What a store shows for `data`: the data itself, or zeros for a store that keeps none.
fn seen(keeps: bool, data: &[u8]) -> Vec<u8> {
    if keeps {
        data.to_vec()
    } else {
        vec![0; data.len()]
    }
}

/// Reads the whole object, checking `eof` comes exactly at the end.
fn read_all(s: &dyn ObjectStore, id: ObjectId) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let r = s.read(id, out.len() as u64, 1 << 16).unwrap();
        out.extend_from_slice(&r.data);
        if r.eof {
            break;
        }
        assert!(!r.data.is_empty(), "an empty read must be eof");
    }
    assert_eq!(out.len() as u64, s.size(id).unwrap());
    out
}

fn w(s: &dyn ObjectStore, id: ObjectId, off: u64, data: &[u8]) {
    let done = s.write(id, off, &[b(data)], Stability::Unstable).unwrap();
    assert_eq!(done.count, data.len() as u64);
}

pub(crate) fn write_then_read_returns_the_data(make: Make, keeps: bool) {
    let f = make();
    w(&*f.store, A, 0, b"hello, objects");
    assert_eq!(read_all(&*f.store, A), seen(keeps, b"hello, objects"));
    let r = f.store.read(A, 7, 4).unwrap();
    assert_eq!((&r.data[..], r.eof), (&seen(keeps, b"obje")[..], false));
}

pub(crate) fn pieces_of_one_write_land_contiguously(make: Make, keeps: bool) {
    let f = make();
    let pieces = [b(b"abc"), Bytes::new(), b(b"defg"), b(b"h")];
    let done = f.store.write(A, 5, &pieces, Stability::FileSync).unwrap();
    assert_eq!(done.count, 8);
    let mut want = vec![0u8; 5];
    want.extend_from_slice(&seen(keeps, b"abcdefgh"));
    assert_eq!(read_all(&*f.store, A), want);
}

pub(crate) fn later_writes_overwrite_overlapping_bytes(make: Make, keeps: bool) {
    let f = make();
    w(&*f.store, A, 0, b"aaaaaaaaaa");
    w(&*f.store, A, 3, b"bbbb");
    w(&*f.store, A, 8, b"cccc");
    assert_eq!(read_all(&*f.store, A), seen(keeps, b"aaabbbbacccc"));
}

pub(crate) fn write_past_the_end_leaves_a_hole_of_zeros(make: Make, keeps: bool) {
    let f = make();
    w(&*f.store, A, 0, b"xy");
    w(&*f.store, A, 100_000, b"z");
    assert_eq!(f.store.size(A).unwrap(), 100_001);
    let all = read_all(&*f.store, A);
    assert_eq!(&all[..2], &seen(keeps, b"xy")[..]);
    assert!(all[2..100_000].iter().all(|&x| x == 0));
    assert_eq!(all[100_000], if keeps { b'z' } else { 0 });
}

pub(crate) fn missing_object_reads_empty_with_eof_and_has_size_zero(make: Make, _keeps: bool) {
    let f = make();
    for off in [0, 1, u64::MAX] {
        let r = f.store.read(A, off, 100).unwrap();
        assert!(r.data.is_empty() && r.eof);
    }
    assert_eq!(f.store.size(A).unwrap(), 0);
}

pub(crate) fn read_sets_eof_only_when_it_reaches_the_end(make: Make, keeps: bool) {
    let f = make();
    w(&*f.store, A, 0, b"0123456789");
    let r = |off, len| {
        let r = f.store.read(A, off, len).unwrap();
        (r.data.to_vec(), r.eof)
    };
    assert_eq!(r(0, 9), (seen(keeps, b"012345678"), false));
    assert_eq!(r(0, 10), (seen(keeps, b"0123456789"), true));
    assert_eq!(r(8, 100), (seen(keeps, b"89"), true));
    assert_eq!(r(10, 1), (vec![], true));
    assert_eq!(r(u64::MAX, u32::MAX), (vec![], true));
    assert_eq!(r(3, 0), (vec![], false));
}

pub(crate) fn truncate_grows_with_zeros_and_shrinks_away_the_tail(make: Make, keeps: bool) {
    let f = make();
    w(&*f.store, A, 0, b"abcdef");
    f.store.truncate(A, 3).unwrap();
    assert_eq!(read_all(&*f.store, A), seen(keeps, b"abc"));
    f.store.truncate(A, 8).unwrap();
    let mut want = seen(keeps, b"abc");
    want.extend_from_slice(&[0; 5]);
    assert_eq!(
        read_all(&*f.store, A),
        want,
        "the old tail must not come back"
    );
    f.store.truncate(B, 0).unwrap();
    assert_eq!(f.store.size(B).unwrap(), 0);
    f.store.truncate(B, 4096).unwrap();
    assert_eq!(read_all(&*f.store, B), vec![0; 4096]);
    f.store.truncate(A, 0).unwrap();
    assert_eq!(read_all(&*f.store, A), Vec::<u8>::new());
}

pub(crate) fn remove_forgets_the_object_and_removing_a_missing_one_is_fine(
    make: Make,
    keeps: bool,
) {
    let f = make();
    w(&*f.store, A, 0, b"data");
    f.store.remove(A).unwrap();
    assert_eq!(f.store.size(A).unwrap(), 0);
    assert!(f.store.read(A, 0, 10).unwrap().eof);
    f.store.remove(A).unwrap();
    f.store.remove(C).unwrap();
    w(&*f.store, A, 2, b"new");
    assert_eq!(
        read_all(&*f.store, A),
        [&[0, 0][..], &seen(keeps, b"new")].concat()
    );
}

pub(crate) fn objects_of_one_file_and_of_different_files_are_independent(make: Make, keeps: bool) {
    let f = make();
    w(&*f.store, A, 0, b"aaaa");
    w(&*f.store, B, 0, b"bb");
    w(&*f.store, C, 1, b"c");
    f.store.truncate(B, 1).unwrap();
    f.store.remove(C).unwrap();
    assert_eq!(read_all(&*f.store, A), seen(keeps, b"aaaa"));
    assert_eq!(read_all(&*f.store, B), seen(keeps, b"b"));
    assert_eq!(f.store.size(C).unwrap(), 0);
}

pub(crate) fn stripes_of_one_file_share_its_bytes_and_files_are_independent(
    make: Make,
    keeps: bool,
) {
    let f = make();
    assert!(f.shared_stripes);
    w(&*f.store, A, 0, b"aaaa");
    w(&*f.store, B, 1, b"bb");
    w(&*f.store, C, 1, b"c");
    assert_eq!(read_all(&*f.store, A), seen(keeps, b"abba"));
    assert_eq!(read_all(&*f.store, B), seen(keeps, b"abba"));
    f.store.truncate(B, 2).unwrap();
    assert_eq!(f.store.size(A).unwrap(), 2);
    f.store.remove(C).unwrap();
    assert_eq!(read_all(&*f.store, A), seen(keeps, b"ab"));
    f.store.remove(A).unwrap();
    assert_eq!(f.store.size(B).unwrap(), 0);
}

pub(crate) fn remove_file_removes_every_stripe_of_that_file_only(make: Make, keeps: bool) {
    let f = make();
    assert_eq!(f.store.remove_file(A.file).unwrap(), 0, "nothing there yet");
    // A and B are stripes 0 and 1 of one file; C shares its low 16 bits (same directory).
    let far = ObjectId {
        file: A.file,
        stripe: 70_000,
    };
    for id in [A, B, far, C] {
        w(&*f.store, id, 0, b"data");
    }
    let removed = f.store.remove_file(A.file).unwrap();
    assert_eq!(removed, if f.shared_stripes { 1 } else { 3 });
    for id in [A, B, far] {
        assert_eq!(f.store.size(id).unwrap(), 0, "{id}");
    }
    assert_eq!(read_all(&*f.store, C), seen(keeps, b"data"));
    assert_eq!(f.store.remove_file(A.file).unwrap(), 0);
}

pub(crate) fn write_past_the_largest_offset_is_too_big_and_writes_nothing(
    make: Make,
    _keeps: bool,
) {
    let f = make();
    let e = f
        .store
        .write(A, u64::MAX - 2, &[b(b"abcd")], Stability::FileSync)
        .unwrap_err();
    assert_eq!(
        e,
        StoreError::TooBig {
            offset: u64::MAX - 2,
            len: 4
        }
    );
    let e = f
        .store
        .write(A, 1 << 63, &[b(b"a")], Stability::Unstable)
        .unwrap_err();
    assert!(matches!(e, StoreError::TooBig { .. }), "{e:?}");
    assert!(matches!(
        f.store.truncate(A, u64::MAX),
        Err(StoreError::TooBig { .. })
    ));
    assert_eq!(f.store.size(A).unwrap(), 0);
}

pub(crate) fn writes_report_the_stability_they_were_asked_for(make: Make, _keeps: bool) {
    let f = make();
    for s in [
        Stability::Unstable,
        Stability::DataSync,
        Stability::FileSync,
    ] {
        let done = f.store.write(A, 0, &[b(b"x")], s).unwrap();
        assert!(done.committed >= s, "{s:?} answered {:?}", done.committed);
    }
    f.store.commit(A, 0, 0).unwrap();
}

pub(crate) fn commit_of_a_missing_object_succeeds(make: Make, _keeps: bool) {
    let f = make();
    f.store.commit(A, 0, 0).unwrap();
    f.store.commit(A, 10, 10).unwrap();
    assert_eq!(f.store.size(A).unwrap(), 0);
}

pub(crate) fn empty_write_does_not_create_the_object(make: Make, _keeps: bool) {
    let f = make();
    let done = f
        .store
        .write(A, 4096, &[Bytes::new()], Stability::FileSync)
        .unwrap();
    assert_eq!(done.count, 0);
    let done = f.store.write(A, 4096, &[], Stability::Unstable).unwrap();
    assert_eq!(done.count, 0);
    assert_eq!(f.store.size(A).unwrap(), 0);
}

pub(crate) fn deallocate_zeroes_a_range_and_keeps_the_size(make: Make, keeps: bool) {
    let f = make();
    assert_eq!(f.store.deallocate(A, 0, 10).unwrap(), Deallocated::Nothing);
    let data = vec![0xAAu8; 100_000];
    f.store
        .write(A, 0, &[Bytes::from(data.clone())], Stability::FileSync)
        .unwrap();
    let how = f.store.deallocate(A, 8192, 16384).unwrap();
    assert_eq!(how == Deallocated::Nothing, !keeps, "{how:?}");
    f.store.deallocate(A, 99_990, 1 << 40).unwrap();
    assert_eq!(
        f.store.deallocate(A, 200_000, 10).unwrap(),
        Deallocated::Nothing
    );
    let mut want = seen(keeps, &data);
    want[8192..24576].fill(0);
    want[99_990..].fill(0);
    assert_eq!(f.store.size(A).unwrap(), 100_000);
    assert_eq!(read_all(&*f.store, A), want);
}

const MIB: u64 = 1 << 20;

pub(crate) fn seek_finds_data_and_holes_and_nothing_past_the_end(make: Make, keeps: bool) {
    use SeekWhat::{Data, Hole};
    let f = make();
    let s = &*f.store;
    for what in [Data, Hole] {
        assert_eq!(
            s.seek(A, 0, what).unwrap(),
            None,
            "a missing object is empty"
        );
    }
    // Data in [0, 1 MiB) and [3 MiB, 4 MiB), holes in [1 MiB, 3 MiB) and [4 MiB, 5 MiB):
    // MiB-aligned, so no file system's block size blurs the answer.
    let mib = Bytes::from(vec![0xabu8; MIB as usize]);
    s.write(A, 0, std::slice::from_ref(&mib), Stability::FileSync)
        .unwrap();
    s.write(A, 3 * MIB, &[mib], Stability::FileSync).unwrap();
    s.truncate(A, 5 * MIB).unwrap();
    let at = |off, what| s.seek(A, off, what).unwrap();
    if keeps {
        assert_eq!(at(0, Data), Some(0));
        assert_eq!(at(100, Data), Some(100));
        assert_eq!(at(0, Hole), Some(MIB));
        assert_eq!(at(MIB, Data), Some(3 * MIB));
        assert_eq!(at(MIB + 5, Data), Some(3 * MIB));
        assert_eq!(at(2 * MIB, Hole), Some(2 * MIB));
        assert_eq!(at(3 * MIB, Hole), Some(4 * MIB));
        assert_eq!(at(4 * MIB, Data), None, "only the hole at the end follows");
        assert_eq!(at(4 * MIB + 1, Hole), Some(4 * MIB + 1));
        assert_eq!(at(5 * MIB - 1, Hole), Some(5 * MIB - 1));
        s.deallocate(A, 3 * MIB, MIB).unwrap();
        assert_eq!(at(MIB, Data), None, "a punched range is a hole");
        assert_eq!(at(3 * MIB, Hole), Some(3 * MIB));
    } else {
        // Nothing kept: every byte counts as data, the hole is the end.
        assert_eq!(at(0, Data), Some(0));
        assert_eq!(at(2 * MIB, Data), Some(2 * MIB));
        assert_eq!(at(0, Hole), Some(5 * MIB));
    }
    for what in [Data, Hole] {
        for off in [5 * MIB, 5 * MIB + 1, i64::MAX as u64, u64::MAX] {
            assert_eq!(at(off, what), None, "{what:?} at {off}: past the end");
        }
    }
}

pub(crate) fn space_used_counts_storage_and_falls_after_deallocate(make: Make, keeps: bool) {
    let f = make();
    let s = &*f.store;
    assert_eq!(
        s.space_used(A).unwrap(),
        0,
        "a missing object takes nothing"
    );
    let data = Bytes::from(vec![0x11u8; 2 * MIB as usize]);
    s.write(A, 0, &[data], Stability::FileSync).unwrap();
    let written = s.space_used(A).unwrap();
    assert!(written >= 2 * MIB, "{written}");
    s.deallocate(A, 0, MIB).unwrap();
    let punched = s.space_used(A).unwrap();
    s.allocate(A, 4 * MIB, MIB).unwrap();
    let allocated = s.space_used(A).unwrap();
    if keeps {
        assert!(punched + MIB <= written, "{written} -> {punched}");
        assert!(allocated >= punched + MIB, "{punched} -> {allocated}");
    } else {
        assert_eq!((punched, allocated), (2 * MIB, 5 * MIB), "the size");
    }
    s.remove(A).unwrap();
    assert_eq!(s.space_used(A).unwrap(), 0);
}

/// A deterministic pattern whose every 4 KiB block differs.
fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i / 7) as u8 ^ (i >> 12) as u8 ^ seed)
        .collect()
}

pub(crate) fn copy_range_copies_what_the_source_holds_and_says_how_much(make: Make, keeps: bool) {
    let f = make();
    let s = &*f.store;
    let data = pattern(100_000, 1);
    s.write(A, 0, &[b(&data)], Stability::FileSync).unwrap();
    assert_eq!(s.copy_range(A, C, 1000, 5000, 50_000).unwrap(), 50_000);
    assert_eq!(s.size(C).unwrap(), 55_000);
    let mut want = vec![0u8; 5000];
    want.extend_from_slice(&data[1000..51_000]);
    assert_eq!(read_all(s, C), seen(keeps, &want));
    // A range past the source's end copies what there is and says so.
    assert_eq!(s.copy_range(A, C, 90_000, 0, 1 << 40).unwrap(), 10_000);
    want[..10_000].copy_from_slice(&data[90_000..]);
    assert_eq!(read_all(s, C), seen(keeps, &want));
    assert_eq!(
        s.size(C).unwrap(),
        55_000,
        "a copy inside the destination keeps its size"
    );
    // Nothing to copy: at or past the end, a missing source, an empty range.
    let missing = ObjectId::whole(0x77_0000);
    assert_eq!(s.copy_range(A, C, 100_000, 0, 10).unwrap(), 0);
    assert_eq!(s.copy_range(missing, C, 0, 0, 10).unwrap(), 0);
    assert_eq!(s.copy_range(A, C, 0, 0, 0).unwrap(), 0);
    assert_eq!(read_all(s, C), seen(keeps, &want));
    // A destination range past the largest offset is refused and copies nothing.
    let far = s.copy_range(A, missing, 0, u64::MAX - 10, 100);
    assert!(matches!(far, Err(StoreError::TooBig { .. })), "{far:?}");
    assert_eq!(s.size(missing).unwrap(), 0);
}

pub(crate) fn copy_range_copies_holes_as_zeros_and_a_trailing_hole_as_size(
    make: Make,
    keeps: bool,
) {
    let f = make();
    let s = &*f.store;
    const MIB: u64 = 1 << 20;
    let head = pattern(64 << 10, 2);
    let tail = pattern(64 << 10, 3);
    s.write(A, 0, &[b(&head)], Stability::FileSync).unwrap();
    s.write(A, 2 * MIB, &[b(&tail)], Stability::FileSync)
        .unwrap();
    s.truncate(A, 4 * MIB).unwrap();
    // The destination holds data where the source has its holes.
    let old = vec![0xBBu8; 5 * MIB as usize];
    s.write(C, 0, &[b(&old)], Stability::FileSync).unwrap();
    assert_eq!(s.copy_range(A, C, 0, 0, 4 * MIB).unwrap(), 4 * MIB);
    let mut want = vec![0u8; 4 * MIB as usize];
    want[..head.len()].copy_from_slice(&head);
    want[2 * MIB as usize..2 * MIB as usize + tail.len()].copy_from_slice(&tail);
    let mut want_c = want.clone();
    want_c.extend_from_slice(&old[4 * MIB as usize..]);
    assert_eq!(read_all(s, C), seen(keeps, &want_c));
    // Into a new object: the trailing hole is copied as size.
    let d = ObjectId::whole(0x55_0000);
    assert_eq!(s.copy_range(A, d, 0, 0, 8 * MIB).unwrap(), 4 * MIB);
    assert_eq!(s.size(d).unwrap(), 4 * MIB);
    assert_eq!(read_all(s, d), seen(keeps, &want));
}

pub(crate) fn clone_range_clones_or_says_not_supported_and_changes_nothing(
    make: Make,
    keeps: bool,
) {
    let f = make();
    let s = &*f.store;
    let data = pattern(256 << 10, 4);
    s.write(A, 0, &[b(&data)], Stability::FileSync).unwrap();
    match s.clone_range(A, C, 64 << 10, 0, 128 << 10) {
        Ok(()) => {
            assert_eq!(s.size(C).unwrap(), 128 << 10);
            assert_eq!(read_all(s, C), seen(keeps, &data[64 << 10..192 << 10]));
        }
        Err(StoreError::NotSupported) => assert_eq!(s.size(C).unwrap(), 0),
        Err(e) => panic!("clone_range: {e}"),
    }
}

pub(crate) fn verifier_stays_the_same_while_the_store_lives(make: Make, _keeps: bool) {
    let f = make();
    let v = f.store.verifier();
    w(&*f.store, A, 0, b"x");
    f.store.commit(A, 0, 0).unwrap();
    assert_eq!(f.store.verifier(), v);
}

pub(crate) fn statfs_figures_are_consistent(make: Make, _keeps: bool) {
    let f = make();
    let s = f.store.statfs().unwrap();
    assert!(
        s.total > 0 && s.avail <= s.free && s.free <= s.total,
        "{s:?}"
    );
    assert!(s.ffree <= s.files, "{s:?}");
}

pub(crate) fn concurrent_writers_to_different_objects_do_not_interfere(make: Make, keeps: bool) {
    let f = make();
    let store = &*f.store;
    std::thread::scope(|scope| {
        for t in 0..4u64 {
            scope.spawn(move || {
                let id = ObjectId {
                    file: 0x7000 + t,
                    stripe: t as u32,
                };
                for i in 0..64u64 {
                    let piece = vec![t as u8 + 1; 512];
                    let stable = if i % 16 == 0 {
                        Stability::FileSync
                    } else {
                        Stability::Unstable
                    };
                    store
                        .write(id, i * 512, &[Bytes::from(piece)], stable)
                        .unwrap();
                }
                store.commit(id, 0, 0).unwrap();
            });
        }
    });
    for t in 0..4u64 {
        let id = ObjectId {
            file: 0x7000 + t,
            stripe: t as u32,
        };
        assert_eq!(
            read_all(store, id),
            seen(keeps, &vec![t as u8 + 1; 64 * 512])
        );
    }
}

/// An operation of the model test.
#[derive(Debug, Clone)]
enum Op {
    Write {
        obj: usize,
        off: u64,
        pieces: Vec<Vec<u8>>,
        stable: Stability,
    },
    Truncate {
        obj: usize,
        size: u64,
    },
    Read {
        obj: usize,
        off: u64,
        len: u32,
    },
    Remove {
        obj: usize,
    },
    Commit {
        obj: usize,
    },
    Deallocate {
        obj: usize,
        off: u64,
        len: u64,
    },
    Seek {
        obj: usize,
        off: u64,
        data: bool,
    },
}

const OBJS: [ObjectId; 3] = [A, B, C];

fn op() -> impl Strategy<Value = Op> {
    let obj = 0..OBJS.len();
    let off = 0u64..6000;
    let stable = prop_oneof![
        Just(Stability::Unstable),
        Just(Stability::DataSync),
        Just(Stability::FileSync)
    ];
    let pieces = proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..700), 0..4);
    prop_oneof![
        4 => (obj.clone(), off.clone(), pieces, stable)
            .prop_map(|(obj, off, pieces, stable)| Op::Write { obj, off, pieces, stable }),
        1 => (obj.clone(), 0u64..8000).prop_map(|(obj, size)| Op::Truncate { obj, size }),
        3 => (obj.clone(), off.clone(), 0u32..3000)
            .prop_map(|(obj, off, len)| Op::Read { obj, off, len }),
        1 => obj.clone().prop_map(|obj| Op::Remove { obj }),
        1 => obj.clone().prop_map(|obj| Op::Commit { obj }),
        1 => (obj.clone(), off.clone(), 0u64..3000)
            .prop_map(|(obj, off, len)| Op::Deallocate { obj, off, len }),
        2 => (obj, off, any::<bool>()).prop_map(|(obj, off, data)| Op::Seek { obj, off, data }),
    ]
}

/// Applies `op` to the store and the model (object -> bytes) and checks they agree.
fn check_op(
    f: &Fixture,
    model: &mut HashMap<ObjectId, Vec<u8>>,
    op: &Op,
    keeps: bool,
) -> Result<(), TestCaseError> {
    let s = &*f.store;
    let key = |obj: usize| f.key(OBJS[obj]);
    match *op {
        Op::Write {
            obj,
            off,
            ref pieces,
            stable,
        } => {
            let id = OBJS[obj];
            let bytes: Vec<Bytes> = pieces.iter().map(|p| b(p)).collect();
            let done = s
                .write(id, off, &bytes, stable)
                .map_err(|e| TestCaseError::fail(e.to_string()))?;
            let all = pieces.concat();
            prop_assert_eq!(done.count, all.len() as u64);
            if !all.is_empty() {
                let m = model.entry(f.key(id)).or_default();
                let end = off as usize + all.len();
                if m.len() < end {
                    m.resize(end, 0);
                }
                m[off as usize..end].copy_from_slice(&all);
            }
        }
        Op::Truncate { obj, size } => {
            s.truncate(OBJS[obj], size).unwrap();
            model.entry(key(obj)).or_default().resize(size as usize, 0);
        }
        Op::Read { obj, off, len } => {
            let r = s.read(OBJS[obj], off, len).unwrap();
            let m = model.get(&key(obj)).map_or(&[][..], |v| &v[..]);
            let start = (off as usize).min(m.len());
            let end = (off as usize + len as usize).min(m.len());
            prop_assert_eq!(&r.data[..], &seen(keeps, &m[start..end])[..]);
            prop_assert_eq!(r.eof, end >= m.len());
        }
        Op::Remove { obj } => {
            s.remove(OBJS[obj]).unwrap();
            model.remove(&key(obj));
        }
        Op::Commit { obj } => s.commit(OBJS[obj], 0, 0).unwrap(),
        Op::Deallocate { obj, off, len } => {
            s.deallocate(OBJS[obj], off, len).unwrap();
            if let Some(m) = model.get_mut(&key(obj)) {
                let end = ((off + len) as usize).min(m.len());
                if (off as usize) < end {
                    m[off as usize..end].fill(0);
                }
            }
        }
        Op::Seek { obj, off, data } => {
            // The contract, not a file system's exact extents: data may be reported for a
            // hole, never a hole for data.
            let what = if data { SeekWhat::Data } else { SeekWhat::Hole };
            let got = s.seek(OBJS[obj], off, what).unwrap();
            let m = model.get(&key(obj)).map_or(&[][..], |v| &v[..]);
            let size = m.len() as u64;
            let zeros = |from: u64, to: u64| {
                !keeps || m[from as usize..to as usize].iter().all(|&x| x == 0)
            };
            match (what, got) {
                _ if off >= size => prop_assert_eq!(got, None, "{:?} at or past the end", op),
                (SeekWhat::Data, Some(d)) => {
                    prop_assert!(off <= d && d < size, "{:?} -> {}", op, d);
                    prop_assert!(zeros(off, d), "{:?} skipped data", op);
                }
                (SeekWhat::Data, None) => prop_assert!(zeros(off, size), "{:?} missed data", op),
                (SeekWhat::Hole, Some(h)) => {
                    prop_assert!(off <= h && h <= size, "{:?} -> {}", op, h);
                    prop_assert!(h == size || zeros(h, h + 1), "{:?}: data at the hole", op);
                }
                (SeekWhat::Hole, None) => prop_assert!(false, "{:?}: no hole below the end", op),
            }
        }
    }
    for id in OBJS {
        let want = model.get(&f.key(id)).map_or(0, |m| m.len() as u64);
        prop_assert_eq!(s.size(id).unwrap(), want, "size of {} after {:?}", id, op);
    }
    Ok(())
}

pub(crate) fn random_operations_match_a_model(make: Make, keeps: bool) {
    let mut runner = TestRunner::new(Config {
        cases: 48,
        failure_persistence: None,
        ..Config::default()
    });
    let ops = proptest::collection::vec(op(), 1..40);
    runner
        .run(&ops, |ops| {
            let f = make();
            let mut model = HashMap::new();
            for op in &ops {
                check_op(&f, &mut model, op, keeps)?;
            }
            for id in OBJS {
                let want = model.get(&f.key(id)).cloned().unwrap_or_default();
                prop_assert_eq!(read_all(&*f.store, id), seen(keeps, &want));
            }
            Ok(())
        })
        .unwrap();
}

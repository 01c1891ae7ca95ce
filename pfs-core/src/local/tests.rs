//! LocalStore: the shared suite (with and without the open-file cache) and what is particular
//! to files: the system calls made, directory syncs, paths, verifiers across processes.

use std::os::unix::fs::MetadataExt;
use std::process::Command;

use bytes::Bytes;

use super::*;

mod cached {
    use super::*;
    use crate::testsuite::object_store_suite;

    object_store_suite!(
        || {
            let dir = tempfile::tempdir().unwrap();
            (LocalStore::open(dir.path()).unwrap(), dir)
        },
        keeps_data = true
    );
}

mod uncached {
    use super::*;
    use crate::testsuite::object_store_suite;

    object_store_suite!(
        || {
            let dir = tempfile::tempdir().unwrap();
            let opts = LocalOptions {
                open_files: 0,
                ..LocalOptions::default()
            };
            (LocalStore::open_with(dir.path(), opts).unwrap(), dir)
        },
        keeps_data = true
    );
}

const ID: ObjectId = ObjectId {
    file: 0x0123_4567_89ab_cdef,
    stripe: 2,
};

fn store() -> (LocalStore, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    (LocalStore::open(dir.path()).unwrap(), dir)
}

/// 1 MiB in three pieces of different sizes, each with its own byte pattern.
fn three_pieces() -> (Vec<Bytes>, Vec<u8>) {
    let sizes = [300_000usize, 500_000, (1 << 20) - 800_000];
    let pieces: Vec<Bytes> = sizes
        .iter()
        .enumerate()
        .map(|(i, &n)| Bytes::from((0..n).map(|j| (j * 7 + i * 101) as u8).collect::<Vec<u8>>()))
        .collect();
    let all = pieces.concat();
    (pieces, all)
}

fn delta(before: IoCounts, after: IoCounts) -> IoCounts {
    IoCounts {
        opens: after.opens - before.opens,
        pwritev: after.pwritev - before.pwritev,
        pread: after.pread - before.pread,
        fdatasync: after.fdatasync - before.fdatasync,
        dir_fsync: after.dir_fsync - before.dir_fsync,
        copy_file_range: after.copy_file_range - before.copy_file_range,
    }
}

#[test]
fn one_mib_write_of_three_pieces_is_one_pwritev_and_one_fdatasync() {
    let (s, _dir) = store();
    let (pieces, all) = three_pieces();
    let before = s.io_counts();
    let done = s.write(ID, 4096, &pieces, Stability::FileSync).unwrap();
    let d = delta(before, s.io_counts());
    assert_eq!(
        done,
        WriteDone {
            count: 1 << 20,
            committed: Stability::FileSync
        }
    );
    assert_eq!((d.pwritev, d.fdatasync), (1, 1), "{d:?}");
    let r = s.read(ID, 4096, 1 << 20).unwrap();
    assert!(r.eof);
    assert_eq!(r.data, all);
}

#[test]
fn more_pieces_than_iov_max_take_one_pwritev_per_1024() {
    let (s, _dir) = store();
    let pieces: Vec<Bytes> = (0..2000u32)
        .map(|i| Bytes::from(vec![i as u8; 3]))
        .collect();
    let before = s.io_counts();
    s.write(ID, 0, &pieces, Stability::Unstable).unwrap();
    assert_eq!(delta(before, s.io_counts()).pwritev, 2);
    assert_eq!(s.read(ID, 0, u32::MAX).unwrap().data, pieces.concat());
}

/// Memory of the test's own: what a transport's registered buffer is to the store.
struct Lent {
    buf: Vec<u8>,
    asked: Vec<usize>,
}

impl ReadInto for Lent {
    fn space(&mut self, len: usize) -> &mut [u8] {
        self.asked.push(len);
        self.buf = vec![0xee; len];
        &mut self.buf
    }

    fn freeze(&mut self, len: usize) -> Bytes {
        let mut v = std::mem::take(&mut self.buf);
        v.truncate(len);
        Bytes::from(v)
    }
}

#[test]
fn a_read_into_lent_memory_preads_there_once_and_asks_only_what_the_object_holds() {
    let (s, _d) = store();
    let (pieces, all) = three_pieces();
    s.write(ID, 0, &pieces, Stability::Unstable).unwrap();
    let mut lent = Lent {
        buf: Vec::new(),
        asked: Vec::new(),
    };
    let before = s.io_counts();
    // Asked for 64 KiB from 1 MiB - 1000: the object holds 1000 of them.
    let done = s
        .read_into(ID, (1 << 20) - 1000, 64 << 10, &mut lent)
        .unwrap();
    assert_eq!(lent.asked, vec![1000]);
    assert_eq!(&done.data[..], &all[(1 << 20) - 1000..]);
    assert!(done.eof);
    assert_eq!(delta(before, s.io_counts()).pread, 1);
    // Past the end: no memory asked for.
    let done = s.read_into(ID, 2 << 20, 10, &mut lent).unwrap();
    assert!(done.data.is_empty() && done.eof);
    assert_eq!(lent.asked, vec![1000]);
}

#[test]
fn unstable_write_does_not_sync_and_commit_does() {
    let (s, _dir) = store();
    let before = s.io_counts();
    s.write(ID, 0, &[Bytes::from_static(b"x")], Stability::Unstable)
        .unwrap();
    assert_eq!(delta(before, s.io_counts()).fdatasync, 0);
    s.commit(ID, 0, 1).unwrap();
    assert_eq!(delta(before, s.io_counts()).fdatasync, 1);
}

#[test]
fn open_files_are_reused_between_operations() {
    let (s, _dir) = store();
    s.write(ID, 0, &[Bytes::from_static(b"x")], Stability::Unstable)
        .unwrap();
    let opens = s.io_counts().opens;
    for i in 1..10u64 {
        s.write(ID, i, &[Bytes::from_static(b"x")], Stability::Unstable)
            .unwrap();
    }
    s.read(ID, 0, 10).unwrap();
    s.commit(ID, 0, 0).unwrap();
    assert_eq!(
        s.io_counts().opens,
        opens,
        "no open after the creating write"
    );
}

#[test]
fn object_file_lives_at_the_documented_path() {
    let (s, dir) = store();
    s.write(ID, 10, &[Bytes::from_static(b"abc")], Stability::Unstable)
        .unwrap();
    let path = dir.path().join("objects/ef/cd/0123456789abcdef.2");
    assert_eq!(std::fs::read(&path).unwrap(), b"\0\0\0\0\0\0\0\0\0\0abc");
    assert_eq!(std::fs::metadata(&path).unwrap().mode() & 0o777, 0o600);
}

#[test]
fn first_sync_of_a_new_object_fsyncs_each_new_directory_once() {
    let (s, _dir) = store();
    let one = |id, stable| {
        let before = s.io_counts();
        s.write(id, 0, &[Bytes::from_static(b"x")], stable).unwrap();
        delta(before, s.io_counts()).dir_fsync
    };
    // New leaf and mid directory: leaf, mid and objects/ are synced.
    assert_eq!(one(ID, Stability::FileSync), 3);
    assert_eq!(one(ID, Stability::FileSync), 0, "already durable");
    // Same leaf directory, already durable: only the leaf.
    let sibling = ObjectId { stripe: 3, ..ID };
    assert_eq!(
        one(sibling, Stability::Unstable),
        0,
        "unstable writes sync nothing"
    );
    let before = s.io_counts();
    s.commit(sibling, 0, 0).unwrap();
    assert_eq!(delta(before, s.io_counts()).dir_fsync, 1);
}

#[test]
fn removing_a_file_unlinks_each_stripe_and_fsyncs_their_directory_once() {
    let (s, dir) = store();
    for stripe in 0..5 {
        let id = ObjectId { stripe, ..ID };
        s.write(id, 0, &[Bytes::from_static(b"x")], Stability::FileSync)
            .unwrap();
    }
    let before = s.io_counts();
    assert_eq!(s.remove_file(ID.file).unwrap(), 5);
    assert_eq!(delta(before, s.io_counts()).dir_fsync, 1);
    let leaf = dir.path().join("objects/ef/cd");
    assert_eq!(std::fs::read_dir(leaf).unwrap().count(), 0);
    // Nothing left to remove: no fsync.
    let before = s.io_counts();
    assert_eq!(s.remove_file(ID.file).unwrap(), 0);
    assert_eq!(delta(before, s.io_counts()).dir_fsync, 0);
}

#[test]
fn a_new_object_takes_one_open_and_an_existing_one_is_written_in_place() {
    let dir = tempfile::tempdir().unwrap();
    {
        let s = LocalStore::open(dir.path()).unwrap();
        // The first object makes its fan-out directories; the next, in the same leaf, one open.
        s.write(ID, 0, &[Bytes::from_static(b"old!")], Stability::FileSync)
            .unwrap();
        let sibling = ObjectId { stripe: 7, ..ID };
        let before = s.io_counts();
        s.write(sibling, 0, &[Bytes::from_static(b"x")], Stability::Unstable)
            .unwrap();
        assert_eq!(delta(before, s.io_counts()).opens, 1);
    }
    // Not open in a new store: found and written in place, not replaced.
    let s = LocalStore::open(dir.path()).unwrap();
    s.write(ID, 2, &[Bytes::from_static(b"w")], Stability::FileSync)
        .unwrap();
    assert_eq!(s.read(ID, 0, 100).unwrap().data, &b"olw!"[..]);
}

#[test]
fn data_survives_closing_and_reopening_the_store() {
    let dir = tempfile::tempdir().unwrap();
    {
        let s = LocalStore::open(dir.path()).unwrap();
        s.write(ID, 0, &[Bytes::from_static(b"kept")], Stability::FileSync)
            .unwrap();
    }
    let s = LocalStore::open(dir.path()).unwrap();
    assert_eq!(s.read(ID, 0, 100).unwrap().data, &b"kept"[..]);
    assert_eq!(s.size(ID).unwrap(), 4);
}

#[test]
fn remove_drops_the_cached_file_so_a_later_write_makes_a_new_object() {
    let (s, dir) = store();
    s.write(
        ID,
        0,
        &[Bytes::from_static(b"old data")],
        Stability::Unstable,
    )
    .unwrap();
    s.remove(ID).unwrap();
    s.write(ID, 0, &[Bytes::from_static(b"new")], Stability::Unstable)
        .unwrap();
    let path = dir.path().join("objects").join(ID.relative_path());
    assert_eq!(std::fs::read(path).unwrap(), b"new");
}

#[test]
fn each_open_gets_a_fresh_verifier_unless_one_is_given() {
    let dir = tempfile::tempdir().unwrap();
    let a = LocalStore::open(dir.path()).unwrap().verifier();
    let b = LocalStore::open(dir.path()).unwrap().verifier();
    assert_ne!(a, b);
    let opts = LocalOptions {
        verifier: Some(*b"verifier"),
        ..LocalOptions::default()
    };
    assert_eq!(
        LocalStore::open_with(dir.path(), opts).unwrap().verifier(),
        *b"verifier"
    );
}

#[test]
fn maximum_object_size_refuses_writes_and_truncates_beyond_it() {
    let dir = tempfile::tempdir().unwrap();
    let opts = LocalOptions {
        max_object_size: 1 << 20,
        ..LocalOptions::default()
    };
    let s = LocalStore::open_with(dir.path(), opts).unwrap();
    s.write(
        ID,
        (1 << 20) - 1,
        &[Bytes::from_static(b"x")],
        Stability::Unstable,
    )
    .unwrap();
    let e = s
        .write(
            ID,
            1 << 20,
            &[Bytes::from_static(b"x")],
            Stability::Unstable,
        )
        .unwrap_err();
    assert_eq!(
        e,
        StoreError::TooBig {
            offset: 1 << 20,
            len: 1
        }
    );
    assert!(matches!(
        s.truncate(ID, (1 << 20) + 1),
        Err(StoreError::TooBig { .. })
    ));
    assert!(matches!(
        s.allocate(ID, 1 << 19, 1 << 20),
        Err(StoreError::TooBig { .. })
    ));
}

#[test]
fn reads_longer_than_max_read_come_back_short_and_not_eof() {
    let dir = tempfile::tempdir().unwrap();
    let opts = LocalOptions {
        max_read: 1000,
        ..LocalOptions::default()
    };
    let s = LocalStore::open_with(dir.path(), opts).unwrap();
    s.truncate(ID, 5000).unwrap();
    let r = s.read(ID, 0, u32::MAX).unwrap();
    assert_eq!((r.data.len(), r.eof), (1000, false));
}

#[test]
fn deallocate_punches_a_hole_and_frees_the_blocks() {
    let (s, dir) = store();
    let data = Bytes::from(vec![1u8; 1 << 20]);
    s.write(ID, 0, &[data], Stability::FileSync).unwrap();
    let path = dir.path().join("objects").join(ID.relative_path());
    let blocks = std::fs::metadata(&path).unwrap().blocks();
    match s.deallocate(ID, 0, 1 << 19).unwrap() {
        Deallocated::HolePunched => {
            assert!(std::fs::metadata(&path).unwrap().blocks() < blocks);
        }
        other => eprintln!("this file system cannot punch holes: {other:?}"),
    }
    assert_eq!(s.size(ID).unwrap(), 1 << 20);
    assert!(s.read(ID, 0, 1 << 19).unwrap().data.iter().all(|&x| x == 0));
}

#[test]
fn space_used_leaves_out_blocks_preallocated_past_the_end() {
    let (s, dir) = store();
    let data = Bytes::from(vec![1u8; 10_000]);
    s.write(ID, 0, &[data], Stability::FileSync).unwrap();
    // What XFS's speculative preallocation does to a file written in order: blocks past
    // the end, which st_blocks counts.
    let path = dir.path().join("objects").join(ID.relative_path());
    let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    let keep = FallocateFlags::KEEP_SIZE;
    rustix::fs::fallocate(&f, keep, 0, 1 << 20).unwrap();
    assert!(std::fs::metadata(&path).unwrap().blocks() * 512 >= 1 << 20);
    let block = std::fs::metadata(&path).unwrap().blksize();
    assert_eq!(s.space_used(ID).unwrap(), 10_000u64.div_ceil(block) * block);
    // Without FIEMAP (tmpfs) the count stops at the size: the first answer, not this one.
    let fiemap = super::space::mapped_past(&f.into(), 1 << 20).is_ok();
    if s.deallocate(ID, 0, 8192).unwrap() == Deallocated::HolePunched && fiemap {
        assert_eq!(
            s.space_used(ID).unwrap(),
            10_000u64.div_ceil(block) * block - 8192
        );
    }
}

#[test]
fn allocate_grows_the_object_with_zeros() {
    let (s, _dir) = store();
    s.allocate(ID, 0, 8192).unwrap();
    assert_eq!(s.size(ID).unwrap(), 8192);
    assert_eq!(s.read(ID, 0, 8192).unwrap().data, vec![0u8; 8192]);
}

#[test]
fn statfs_matches_the_file_systems_statvfs() {
    let (s, dir) = store();
    let v = rustix::fs::statvfs(dir.path()).unwrap();
    let st = s.statfs().unwrap();
    assert_eq!(st.total, v.f_blocks * v.f_frsize);
    assert_eq!(st.files, v.f_files);
}

// ---- Checks that need a process of their own -------------------------------------------

/// Set (to a store root) when this test binary runs as a child of one of the tests below.
const CHILD_ENV: &str = "PFS_CORE_TEST_CHILD_ROOT";

/// Runs one `#[ignore]`d child test of this binary in a new process, optionally under a
/// wrapper command (strace), and returns its stdout.
fn run_child(test: &str, root: &Path, wrapper: &[&str]) -> Option<String> {
    let exe = std::env::current_exe().unwrap();
    let args = [
        test,
        "--exact",
        "--ignored",
        "--nocapture",
        "--test-threads=1",
    ];
    let mut cmd = match wrapper.split_first() {
        Some((prog, rest)) => {
            let mut c = Command::new(prog);
            c.args(rest).arg(&exe);
            c
        }
        None => Command::new(&exe),
    };
    let out = cmd.args(args).env(CHILD_ENV, root).output().ok()?;
    assert!(
        out.status.success(),
        "child failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(String::from_utf8_lossy(&out.stdout).into_owned())
}

fn child_root() -> Option<PathBuf> {
    std::env::var_os(CHILD_ENV).map(PathBuf::from)
}

/// Child: prints the verifier of a store opened in this process.
#[test]
#[ignore = "runs as a child process of verifier_changes_when_another_process_opens_the_store"]
fn child_prints_its_verifier() {
    if let Some(root) = child_root() {
        println!(
            "VERIFIER={:02x?}",
            LocalStore::open(root).unwrap().verifier()
        );
    }
}

#[test]
fn verifier_changes_when_another_process_opens_the_store() {
    let dir = tempfile::tempdir().unwrap();
    let name = "local::tests::child_prints_its_verifier";
    let verifier = |out: String| {
        // The harness prints the test's name on the same line, before the child's output.
        out.lines()
            .find_map(|l| l.split_once("VERIFIER=").map(|(_, v)| v.to_owned()))
            .unwrap()
    };
    let a = verifier(run_child(name, dir.path(), &[]).unwrap());
    let b = verifier(run_child(name, dir.path(), &[]).unwrap());
    assert_ne!(a, b, "two process starts got the same verifier");
}

/// Child: one 1 MiB FILE_SYNC write in three pieces.
#[test]
#[ignore = "runs as a child process of one_mib_write_of_three_pieces_is_one_pwritev_syscall"]
fn child_writes_one_mib_in_three_pieces() {
    if let Some(root) = child_root() {
        let s = LocalStore::open(root).unwrap();
        let (pieces, _) = three_pieces();
        s.write(ID, 0, &pieces, Stability::FileSync).unwrap();
    }
}

/// Counts the real system calls with strace (skipped where strace is missing or ptrace is
/// not allowed): the test harness makes no other pwritev, so exactly one must appear.
#[test]
fn one_mib_write_of_three_pieces_is_one_pwritev_syscall() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("strace.log");
    let log_arg = log.to_str().unwrap();
    let wrapper = [
        "strace",
        "-f",
        "-qq",
        "-e",
        "trace=pwritev,pwritev2,pwrite64",
        "-o",
        log_arg,
    ];
    let probe = Command::new("strace")
        .args(["-qq", "-o", "/dev/null", "true"])
        .status();
    if !probe.is_ok_and(|s| s.success()) {
        eprintln!("strace unavailable or not permitted: syscall count checked by IoCounts only");
        return;
    }
    run_child(
        "local::tests::child_writes_one_mib_in_three_pieces",
        dir.path(),
        &wrapper,
    )
    .unwrap();
    let trace = std::fs::read_to_string(&log).unwrap();
    let calls: Vec<&str> = trace.lines().filter(|l| l.contains("pwrite")).collect();
    assert_eq!(calls.len(), 1, "{trace}");
    assert!(
        calls[0].contains("pwritev") && calls[0].contains("= 1048576"),
        "{trace}"
    );
    let obj = dir.path().join("objects").join(ID.relative_path());
    assert_eq!(std::fs::read(obj).unwrap(), three_pieces().1);
}

/// Blocks (512-byte units) an object file holds on disk.
fn blocks(dir: &tempfile::TempDir, id: ObjectId) -> u64 {
    std::fs::metadata(dir.path().join("objects").join(id.relative_path()))
        .unwrap()
        .blocks()
}

#[test]
fn copy_range_keeps_a_sparse_source_sparse_and_uses_copy_file_range() {
    let (s, dir) = store();
    let src = ObjectId::whole(1);
    let dst = ObjectId::whole(2);
    const MIB: u64 = 1 << 20;
    // 1 MiB of data, a 14 MiB hole, 1 MiB of data.
    let data = Bytes::from(vec![0x5Au8; MIB as usize]);
    s.write(src, 0, std::slice::from_ref(&data), Stability::FileSync)
        .unwrap();
    s.write(
        src,
        15 * MIB,
        std::slice::from_ref(&data),
        Stability::FileSync,
    )
    .unwrap();
    // The destination had data all over; the hole must be punched, not kept.
    let old = Bytes::from(vec![0xC3u8; 16 * MIB as usize]);
    s.write(dst, 0, &[old], Stability::FileSync).unwrap();
    let before = s.io_counts();
    assert_eq!(s.copy_range(src, dst, 0, 0, 16 * MIB).unwrap(), 16 * MIB);
    let d = delta(before, s.io_counts());
    assert!(d.copy_file_range >= 2, "{d:?}");
    assert_eq!(d.pread, 0, "no bytes through user space: {d:?}");
    assert!(d.fdatasync >= 1, "durable on return: {d:?}");
    // 2 MiB of data is 4096 blocks; allow file system metadata, never the 16 MiB hole.
    // (The space the store reports: XFS's speculative preallocation past the end of the
    // 16 MiB destination would count otherwise.)
    let used = s.space_used(dst).unwrap();
    assert!(used < 4 * MIB, "{used} B, {} blocks", blocks(&dir, dst));
    let mid = s.read(dst, 8 * MIB, 4096).unwrap();
    assert!(mid.data.iter().all(|&x| x == 0));
    assert_eq!(s.read(dst, 15 * MIB, 4).unwrap().data, data.slice(..4));
}

#[test]
fn clone_range_on_a_file_system_without_reflink_is_not_supported() {
    let (s, dir) = store();
    let src = ObjectId::whole(1);
    let dst = ObjectId::whole(2);
    s.write(
        src,
        0,
        &[Bytes::from(vec![7u8; 65536])],
        Stability::FileSync,
    )
    .unwrap();
    // Whether this directory's file system can reflink is its business: FICLONE of a whole
    // file answers the same question independently of our ioctl.
    let probe_src =
        std::fs::File::open(dir.path().join("objects").join(src.relative_path())).unwrap();
    let probe_dst = std::fs::File::create(dir.path().join("probe")).unwrap();
    let can_reflink = rustix::fs::ioctl_ficlone(&probe_dst, &probe_src).is_ok();
    match s.clone_range(src, dst, 0, 0, 65536) {
        Ok(()) => {
            assert!(can_reflink, "clone succeeded where FICLONE fails");
            assert_eq!(s.read(dst, 0, 65536).unwrap().data.len(), 65536);
        }
        Err(StoreError::NotSupported) => {
            assert!(!can_reflink, "FICLONE works but FICLONERANGE refused")
        }
        Err(e) => panic!("{e}"),
    }
}

/// The file system type of the mount that holds `path`, from `/proc/self/mounts` (the
/// longest mount point that is a prefix of it): an account independent of `fstatfs`.
fn mount_type(path: &std::path::Path) -> Option<String> {
    let path = path.canonicalize().ok()?;
    let mounts = std::fs::read_to_string("/proc/self/mounts").ok()?;
    mounts
        .lines()
        .filter_map(|l| {
            let mut f = l.split(' ');
            let (_, at, kind) = (f.next()?, f.next()?, f.next()?);
            Some((
                std::path::PathBuf::from(at.replace("\\040", " ")),
                kind.to_string(),
            ))
        })
        .filter(|(at, _)| path.starts_with(at))
        .max_by_key(|(at, _)| at.as_os_str().len())
        .map(|(_, kind)| kind)
}

#[test]
fn a_store_on_tmpfs_is_in_memory_and_one_on_a_disk_is_not() {
    let mut seen = 0;
    for base in [std::path::PathBuf::from("/dev/shm"), std::env::temp_dir()] {
        let Ok(dir) = tempfile::tempdir_in(&base) else {
            continue;
        };
        let Some(kind) = mount_type(dir.path()) else {
            continue;
        };
        let store = LocalStore::open(dir.path()).unwrap();
        let memory = matches!(kind.as_str(), "tmpfs" | "ramfs");
        assert_eq!(store.in_memory(), memory, "{} on {kind}", base.display());
        assert_eq!(
            crate::SharedStore::open(dir.path()).unwrap().in_memory(),
            memory
        );
        seen += 1;
    }
    assert!(
        seen > 0,
        "neither /dev/shm nor the temporary directory could be used"
    );
}

/// `read_into_now` (the data servers' READ without the blocking pool): an open object's bytes
/// that the page cache holds come back at once, with one `pread` and no `open`; bytes evicted
/// from the page cache, and an object not open in this store, are left to the caller's
/// `read_into`. (Not on a memory file system, whose reads `object_read` makes at once.)
#[test]
fn read_now_serves_only_open_objects_from_the_page_cache() {
    let (s, dir) = store();
    if s.in_memory {
        return;
    }
    let data: Vec<u8> = (0..8192u32).map(|i| (i * 31) as u8).collect();
    s.write(ID, 0, &[Bytes::from(data.clone())], Stability::FileSync)
        .unwrap();
    let now = |s: &LocalStore, offset: u64, len: u32| {
        s.read_into_now(ID, offset, len, &mut Fresh::default())
            .map(Result::unwrap)
    };

    let before = s.io_counts();
    let r = now(&s, 100, 4096).expect("cached bytes of an open object, at once");
    assert_eq!((&r.data[..], r.eof), (&data[100..4196], false));
    let r = now(&s, 4096, 8192).expect("to the end, at once");
    assert_eq!((&r.data[..], r.eof), (&data[4096..], true));
    let r = now(&s, 9000, 10).expect("past the end, at once");
    assert_eq!((r.data.len(), r.eof), (0, true));
    let d = delta(before, s.io_counts());
    assert_eq!((d.opens, d.pread), (0, 2), "{d:?}");

    // Out of the page cache (clean after the FILE_SYNC write): the caller reads it.
    let fd = lock(&s.cache).get(ID).unwrap();
    rustix::fs::fadvise(&*fd, 0, None, rustix::fs::Advice::DontNeed).unwrap();
    assert!(
        now(&s, 0, 4096).is_none(),
        "evicted bytes must not be waited for"
    );
    assert_eq!(s.read(ID, 0, 4096).unwrap().data, data[..4096]);
    assert!(now(&s, 0, 4096).is_some(), "read back in: cached again");

    // Another store on the same directory has nothing open: opening may wait.
    let other = LocalStore::open(dir.path()).unwrap();
    let before = other.io_counts();
    assert!(now(&other, 0, 4096).is_none());
    assert_eq!(delta(before, other.io_counts()).opens, 0);
}

//! ALLOCATE, DEALLOCATE and SEEK (RFC 7862) through the client library, as a FUSE mount
//! serves `fallocate(2)` and `lseek(2)` SEEK_DATA / SEEK_HOLE with them: on an MDS with three
//! data servers (files striped in 1 MiB units, the space operations carried out on the data
//! servers' objects) and on an MDS alone (the file's data in the MDS's own object). Each
//! check runs on both; they mirror the guest interop checks `fallocate_grow`,
//! `fallocate_punch` and `seek_data_hole` (`interop-tests/guest`).

mod support;

use std::future::Future;
use std::net::SocketAddr;

use bytes::Bytes;
use client::{Client, OpenOptions, Seek};
use testkit::loopback::cluster::start_cluster;

const KIB: u64 = 1 << 10;
const MIB: u64 = 1 << 20;

fn pattern(len: u64, seed: u8) -> Bytes {
    (0..len as usize)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed) ^ (i >> 11) as u8 | 1)
        .collect::<Vec<u8>>()
        .into()
}

fn nonzero(b: &[u8]) -> usize {
    b.iter().filter(|&&x| x != 0).count()
}

/// A server a check runs against: what keeps it running (dropping it stops the servers),
/// its address, and whether it grants layouts.
struct Server {
    _running: Box<dyn std::any::Any>,
    addr: SocketAddr,
    layouts: bool,
}

/// Three data servers, files striped over them in 1 MiB units.
async fn striped() -> Server {
    let (k, _mds, addr) = start_cluster(3, |c| c.cluster.layouts = true).await;
    Server {
        _running: Box::new(k),
        addr,
        layouts: true,
    }
}

/// An MDS alone, keeping file data itself.
async fn alone() -> Server {
    let dir = tempfile::tempdir().unwrap();
    let (_mds, addr) = support::start_mds(dir.path(), 30).await;
    Server {
        _running: Box::new(dir),
        addr,
        layouts: false,
    }
}

/// Runs `check` against a fresh server of the kind `start` makes.
async fn on<S, C, F>(start: impl FnOnce() -> S, check: C)
where
    S: Future<Output = Server>,
    C: FnOnce(SocketAddr, bool) -> F,
    F: Future<Output = ()>,
{
    let server = start().await;
    check(server.addr, server.layouts).await;
}

// ----------------------------------------------------------------------------------------
// ALLOCATE
// ----------------------------------------------------------------------------------------

/// `fallocate -l 7M` of a file of 2 MiB + 4097 B: the size grows, the old bytes stay, the
/// new range reads as zeros (through the File, and through another client), and the space
/// is there.
async fn allocate_grows_a_file(addr: SocketAddr, layouts: bool) {
    let (n, l) = (2 * MIB + 4097, 7 * MIB);
    let old = pattern(n, 3);
    let c = Client::connect(addr).await.unwrap();
    assert_eq!(c.uses_pnfs(), layouts);
    let f = c.create("/grow", 0o644).await.unwrap();
    f.write_at(0, old.clone()).await.unwrap();
    f.fsync().await.unwrap();
    // Something cached before: the last old block must not hide the new range.
    assert_eq!(
        f.read_at(n - 10, 10).await.unwrap(),
        old.slice((n - 10) as usize..)
    );
    f.allocate(0, l).await.unwrap();
    assert_eq!(f.size(), l, "the known size follows");
    let m = f.metadata().await.unwrap();
    assert_eq!(m.size, l);
    assert!(
        m.space_used >= l - 192 * KIB,
        "space_used {} B does not cover the {l} B allocated",
        m.space_used
    );
    let all = f.read_to_end().await.unwrap();
    assert_eq!(all.len() as u64, l);
    assert_eq!(all.slice(..n as usize), old, "old bytes");
    assert_eq!(
        nonzero(&all[n as usize..]),
        0,
        "the allocated range reads as zeros"
    );
    // An ALLOCATE inside the file changes nothing but the space.
    f.allocate(MIB - 5, 5 * MIB).await.unwrap();
    assert_eq!(f.size(), l);
    f.close().await.unwrap();

    let other = Client::connect(addr).await.unwrap();
    assert_eq!(other.stat("/grow").await.unwrap().size, l);
    let g = other.open("/grow", &OpenOptions::read()).await.unwrap();
    let all = g.read_to_end().await.unwrap();
    assert_eq!(all.slice(..n as usize), old);
    assert_eq!(nonzero(&all[n as usize..]), 0);
    g.close().await.unwrap();
    other.shutdown().await;
    c.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn allocate_grows_a_striped_file_with_zeros_and_keeps_its_bytes() {
    on(striped, allocate_grows_a_file).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn allocate_grows_a_file_of_the_mds_alone_with_zeros_and_keeps_its_bytes() {
    on(alone, allocate_grows_a_file).await;
}

/// `fallocate -l 3M+5` of a new file: its size, all zeros; on the cluster the file keeps
/// its layout, and writes into the allocated range go to the data servers.
async fn allocate_a_new_file(addr: SocketAddr, layouts: bool) {
    let l = 3 * MIB + 5;
    let c = Client::connect(addr).await.unwrap();
    let f = c.create("/new", 0o644).await.unwrap();
    f.allocate(0, l).await.unwrap();
    assert_eq!(f.size(), l);
    assert_eq!(f.metadata().await.unwrap().size, l);
    let all = f.read_to_end().await.unwrap();
    assert_eq!((all.len() as u64, nonzero(&all)), (l, 0));
    let before = c.stats();
    f.write_at(MIB, pattern(MIB, 9)).await.unwrap();
    f.fsync().await.unwrap();
    let after = c.stats();
    if layouts {
        assert_eq!(
            after.ds_bytes_written - before.ds_bytes_written,
            MIB,
            "through the layout"
        );
        assert_eq!(after.mds_bytes_written, before.mds_bytes_written);
    }
    f.close().await.unwrap();
    assert_eq!(
        c.stat("/new").await.unwrap().size,
        l,
        "the write kept the size"
    );
    let other = Client::connect(addr).await.unwrap();
    let g = other.open("/new", &OpenOptions::read()).await.unwrap();
    let all = g.read_to_end().await.unwrap();
    assert_eq!(all.len() as u64, l);
    assert_eq!(nonzero(&all[..MIB as usize]), 0);
    assert_eq!(all.slice(MIB as usize..2 * MIB as usize), pattern(MIB, 9));
    assert_eq!(nonzero(&all[2 * MIB as usize..]), 0);
    g.close().await.unwrap();
    other.shutdown().await;
    c.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn allocate_of_a_new_striped_file_gives_it_zeros_and_keeps_its_layout() {
    on(striped, allocate_a_new_file).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn allocate_of_a_new_file_of_the_mds_alone_gives_it_zeros() {
    on(alone, allocate_a_new_file).await;
}

// ----------------------------------------------------------------------------------------
// DEALLOCATE
// ----------------------------------------------------------------------------------------

/// `fallocate --punch-hole` of 3 MiB + 23456 B at 1 MiB - 12345 in a file of 6 MiB + 123
/// (over units 0 to 4, every data server's objects): zeros there, the bytes before and after
/// and the size unchanged, through the File that punched (its cache of the range dropped),
/// another File of the same client that had cached the range, and another client.
async fn deallocate_punches_a_hole(addr: SocketAddr, _layouts: bool) {
    let (n, off, len) = (6 * MIB + 123, MIB - 12345, 3 * MIB + 23456);
    let data = pattern(n, 5);
    let mut want = data.to_vec();
    want[off as usize..(off + len) as usize].fill(0);
    let c = Client::connect(addr).await.unwrap();
    let f = c.create("/punch", 0o644).await.unwrap();
    f.write_at(0, data.clone()).await.unwrap();
    f.close().await.unwrap();
    let f = c.open("/punch", &OpenOptions::read_write()).await.unwrap();
    let reader = c.open("/punch", &OpenOptions::read()).await.unwrap();
    assert_eq!(
        reader.read_to_end().await.unwrap(),
        data,
        "cached by a sibling"
    );
    assert_eq!(f.read_to_end().await.unwrap(), data, "cached by the File");
    // (Asked of another client: under a delegation the File answers what it knows, and
    // writes do not tell it the space they took.)
    let other = Client::connect(addr).await.unwrap();
    let used = other.stat("/punch").await.unwrap().space_used;
    assert!(used >= n - 64 * KIB, "{used} B used by {n} B written");
    f.deallocate(off, len).await.unwrap();
    assert_eq!(f.size(), n, "the size stays");
    let m = f.metadata().await.unwrap();
    assert_eq!(m.size, n);
    assert!(
        used.saturating_sub(m.space_used) >= len / 2,
        "space_used fell from {used} to {} B only",
        m.space_used
    );
    same(&f.read_to_end().await.unwrap(), &want, "the File");
    same(
        &reader.read_to_end().await.unwrap(),
        &want,
        "a sibling File",
    );
    // Past the end is ignored: the size stays, the last bytes read as zeros.
    f.deallocate(n - 100, 1 << 40).await.unwrap();
    want[(n - 100) as usize..].fill(0);
    assert_eq!(f.size(), n);
    same(
        &f.read_at(n - 200, 1000).await.unwrap(),
        &want[(n - 200) as usize..],
        "the tail",
    );
    reader.close().await.unwrap();
    f.close().await.unwrap();

    let st = other.stat("/punch").await.unwrap();
    assert_eq!((st.size, st.space_used), (n, m.space_used));
    let g = other.open("/punch", &OpenOptions::read()).await.unwrap();
    same(&g.read_to_end().await.unwrap(), &want, "another client");
    g.close().await.unwrap();
    other.shutdown().await;
    c.shutdown().await;
}

/// `got` is `want`; else where they first differ, and how many bytes do.
fn same(got: &[u8], want: &[u8], who: &str) {
    assert_eq!(got.len(), want.len(), "{who}: length");
    if let Some(at) = got.iter().zip(want).position(|(a, b)| a != b) {
        let n = got.iter().zip(want).filter(|(a, b)| a != b).count();
        panic!("{who}: {n} bytes differ, the first at {at}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deallocate_of_an_unaligned_range_over_stripe_units_reads_back_as_zeros() {
    on(striped, deallocate_punches_a_hole).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deallocate_on_the_mds_alone_reads_back_as_zeros() {
    on(alone, deallocate_punches_a_hole).await;
}

/// Writes made before a DEALLOCATE and not yet sent (buffered in the File, or in a sibling
/// File), or sent and not yet committed, land before the hole is punched: none of them
/// shows through it afterwards, whatever is flushed or closed later.
async fn writes_land_before_the_hole(addr: SocketAddr, _layouts: bool) {
    let n = 4 * MIB;
    let c = Client::connect(addr).await.unwrap();
    let f = c.create("/early", 0o644).await.unwrap();
    f.write_at(0, Bytes::from(vec![b'a'; n as usize]))
        .await
        .unwrap();
    f.fsync().await.unwrap();
    let sibling = c.open("/early", &OpenOptions::read_write()).await.unwrap();
    // Buffered in the File, buffered in its sibling, and sent UNSTABLE (a write list is
    // sent at once, not committed): all inside the range punched next.
    f.write_at(MIB, Bytes::from(vec![b'b'; 100_000]))
        .await
        .unwrap();
    sibling
        .write_at(2 * MIB - 7, Bytes::from(vec![b'c'; 4096]))
        .await
        .unwrap();
    f.write_list(&[(3 * MIB - 300_000, Bytes::from(vec![b'd'; 200_000]))])
        .await
        .unwrap();
    // Without fsync.
    f.deallocate(MIB - 3, 2 * MIB + 6).await.unwrap();
    let want = |b: &[u8], who: &str| {
        assert_eq!(b.len() as u64, n, "{who}");
        assert!(b[..(MIB - 3) as usize].iter().all(|&x| x == b'a'), "{who}");
        assert_eq!(
            nonzero(&b[(MIB - 3) as usize..(3 * MIB + 3) as usize]),
            0,
            "{who}"
        );
        assert!(
            b[(3 * MIB + 3) as usize..].iter().all(|&x| x == b'a'),
            "{who}"
        );
    };
    want(&f.read_to_end().await.unwrap(), "the File");
    want(&sibling.read_to_end().await.unwrap(), "its sibling");
    sibling.close().await.unwrap();
    f.close().await.unwrap();
    let other = Client::connect(addr).await.unwrap();
    let g = other.open("/early", &OpenOptions::read()).await.unwrap();
    want(
        &g.read_to_end().await.unwrap(),
        "another client, after both closed",
    );
    g.close().await.unwrap();
    other.shutdown().await;
    c.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_not_yet_flushed_land_before_a_striped_hole_is_punched() {
    on(striped, writes_land_before_the_hole).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_not_yet_flushed_land_before_a_hole_of_the_mds_alone_is_punched() {
    on(alone, writes_land_before_the_hole).await;
}

// ----------------------------------------------------------------------------------------
// SEEK
// ----------------------------------------------------------------------------------------

/// The sparse file of iotest.py's `seek`: runs of data at 64 KiB-aligned offsets (exact
/// answers on any file system with blocks of at most 64 KiB), holes of at least 1 MiB
/// between them, a hole first and last; with 1 MiB units over three data servers, runs and
/// holes fall in every data server's objects, runs B and D cross a unit boundary.
const RUNS: [(u64, u64); 5] = [
    (256 * KIB, 448 * KIB),                     // A: unit 0
    (MIB + 512 * KIB, 2 * MIB + 256 * KIB),     // B: units 1 and 2
    (5 * MIB, 5 * MIB + 64 * KIB),              // C: unit 5
    (9 * MIB - 128 * KIB, 9 * MIB + 320 * KIB), // D: units 8 and 9
    (13 * MIB, 14 * MIB),                       // E: unit 13
];
const SEEK_SIZE: u64 = 16 * MIB + 123;

/// Where SEEK_DATA from `off` lands on a local file system (`None`: ENXIO).
fn expect_data(off: u64) -> Option<u64> {
    if off >= SEEK_SIZE {
        return None;
    }
    RUNS.iter().find(|r| r.1 > off).map(|r| r.0.max(off))
}

/// Where SEEK_HOLE from `off` lands; the end of the file is a hole.
fn expect_hole(off: u64) -> Option<u64> {
    if off >= SEEK_SIZE {
        return None;
    }
    Some(
        RUNS.iter()
            .find(|r| r.0 <= off && off < r.1)
            .map_or(off, |r| r.1),
    )
}

/// Writes the sparse file (its size first, then the runs from the last to the first, so no
/// write extends it), then asks SEEK_DATA and SEEK_HOLE from many offsets through another
/// client, and reads the holes back as zeros. Then data written and not yet flushed is
/// found by SEEK (it is sent first).
async fn seek_data_and_holes(addr: SocketAddr, _layouts: bool) {
    let c = Client::connect(addr).await.unwrap();
    let f = c.create("/sparse", 0o644).await.unwrap();
    f.set_len(SEEK_SIZE).await.unwrap();
    let mut data = vec![0u8; SEEK_SIZE as usize];
    for (i, &(start, end)) in RUNS.iter().enumerate().rev() {
        let run = pattern(end - start, i as u8);
        data[start as usize..end as usize].copy_from_slice(&run);
        f.write_at(start, run).await.unwrap();
    }
    f.close().await.unwrap();

    let other = Client::connect(addr).await.unwrap();
    let g = other.open("/sparse", &OpenOptions::read()).await.unwrap();
    let mut offsets = vec![
        0,
        4 * KIB,
        SEEK_SIZE - 1,
        SEEK_SIZE,
        SEEK_SIZE + 1,
        SEEK_SIZE + 3 * MIB,
    ];
    for &(start, end) in &RUNS {
        offsets.extend([
            start - 4 * KIB,
            start - 1,
            start,
            start + 4 * KIB,
            (start + end) / 2,
            end - 1,
            end,
            end + 4 * KIB,
        ]);
    }
    offsets.sort_unstable();
    offsets.dedup();
    let mut wrong = Vec::new();
    for &off in &offsets {
        for (what, want) in [
            (Seek::Data, expect_data(off)),
            (Seek::Hole, expect_hole(off)),
        ] {
            let got = g.seek(off, what).await.unwrap();
            if got != want {
                wrong.push(format!("{what:?} from {off}: {got:?}, want {want:?}"));
            }
        }
    }
    assert!(wrong.is_empty(), "{} wrong: {wrong:#?}", wrong.len());
    assert_eq!(
        &g.read_to_end().await.unwrap()[..],
        &data[..],
        "holes read as zeros"
    );
    g.close().await.unwrap();
    other.shutdown().await;

    // Data written into the hole between D and E, not flushed: SEEK sends it first.
    let f = c.open("/sparse", &OpenOptions::read_write()).await.unwrap();
    f.write_at(11 * MIB, pattern(64 * KIB, 7)).await.unwrap();
    assert_eq!(f.seek(10 * MIB, Seek::Data).await.unwrap(), Some(11 * MIB));
    assert_eq!(
        f.seek(11 * MIB, Seek::Hole).await.unwrap(),
        Some(11 * MIB + 64 * KIB)
    );
    f.close().await.unwrap();
    c.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn seek_finds_data_and_holes_in_every_data_servers_objects() {
    on(striped, seek_data_and_holes).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn seek_finds_data_and_holes_on_the_mds_alone() {
    on(alone, seek_data_and_holes).await;
}

/// SEEK at and past the end is `None` for both kinds (ENXIO for lseek); data after the last
/// run is `None`; a hole at the end of a file without holes is its size; an empty file has
/// neither.
async fn seek_at_the_end(addr: SocketAddr, _layouts: bool) {
    let c = Client::connect(addr).await.unwrap();
    let f = c.create("/dense", 0o644).await.unwrap();
    let n = 2 * MIB + 10;
    f.write_at(0, pattern(n, 1)).await.unwrap();
    f.fsync().await.unwrap();
    assert_eq!(f.seek(0, Seek::Data).await.unwrap(), Some(0));
    assert_eq!(f.seek(MIB + 3, Seek::Data).await.unwrap(), Some(MIB + 3));
    assert_eq!(
        f.seek(0, Seek::Hole).await.unwrap(),
        Some(n),
        "the end is a hole"
    );
    assert_eq!(f.seek(n - 1, Seek::Hole).await.unwrap(), Some(n));
    for off in [n, n + 1, 1 << 40, u64::MAX >> 1] {
        assert_eq!(
            f.seek(off, Seek::Data).await.unwrap(),
            None,
            "data from {off}"
        );
        assert_eq!(
            f.seek(off, Seek::Hole).await.unwrap(),
            None,
            "hole from {off}"
        );
    }
    // A hole to the end after the data: no data from inside it.
    f.set_len(n + 4 * MIB).await.unwrap();
    assert_eq!(f.seek(n + MIB, Seek::Data).await.unwrap(), None);
    assert_eq!(f.seek(n + MIB, Seek::Hole).await.unwrap(), Some(n + MIB));
    f.close().await.unwrap();
    let e = c.create("/empty", 0o644).await.unwrap();
    assert_eq!(e.seek(0, Seek::Data).await.unwrap(), None);
    assert_eq!(e.seek(0, Seek::Hole).await.unwrap(), None);
    e.close().await.unwrap();
    c.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn seek_at_or_past_the_end_of_a_striped_file_is_none() {
    on(striped, seek_at_the_end).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn seek_at_or_past_the_end_on_the_mds_alone_is_none() {
    on(alone, seek_at_the_end).await;
}

// ----------------------------------------------------------------------------------------
// Errors
// ----------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn space_operations_need_a_file_open_for_writing_and_a_range() {
    let server = alone().await;
    let c = Client::connect(server.addr).await.unwrap();
    let f = c.create("/f", 0o644).await.unwrap();
    f.write_at(0, pattern(100, 1)).await.unwrap();
    for e in [
        f.allocate(0, 0).await.unwrap_err(),
        f.deallocate(10, 0).await.unwrap_err(),
    ] {
        assert_eq!(e.errno(), 22, "EINVAL, as fallocate(2) for len 0: {e}");
    }
    // Past the largest file: NFS4ERR_FBIG, EFBIG.
    let e = f.allocate(u64::MAX - 10, 5).await.unwrap_err();
    assert_eq!(e.errno(), 27, "{e}");
    assert_eq!(f.size(), 100);
    f.close().await.unwrap();
    let r = c.open("/f", &OpenOptions::read()).await.unwrap();
    for e in [
        r.allocate(0, 4096).await.unwrap_err(),
        r.deallocate(0, 10).await.unwrap_err(),
    ] {
        assert_eq!(
            e.errno(),
            9,
            "EBADF, as fallocate(2) on a read-only descriptor: {e}"
        );
    }
    // SEEK needs no write access (lseek(2) works on any descriptor).
    assert_eq!(r.seek(0, Seek::Hole).await.unwrap(), Some(100));
    r.close().await.unwrap();
    let w = c
        .open(
            "/f",
            &OpenOptions {
                read: false,
                ..OpenOptions::read_write()
            },
        )
        .await
        .unwrap();
    assert_eq!(
        w.seek(0, Seek::Data).await.unwrap(),
        Some(0),
        "nor read access"
    );
    w.close().await.unwrap();
    assert_eq!(c.stat("/f").await.unwrap().size, 100);
    c.shutdown().await;
}

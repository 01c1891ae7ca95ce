//! ALLOCATE and DEALLOCATE (RFC 7862 sections 15.1 and 15.4) on the in-memory cluster: the
//! effect on the data and the file's attributes, and WRITE's stateid rules.

use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;

use bytes::Bytes;
use nfs_proto::nfs4::attr::*;
use nfs_proto::nfs4::*;
use nfs_proto::xdr::Utf8String;
use pfs_core::ObjectId;
use testkit::cluster::{Cluster, StoreKind};
use testkit::prelude::*;

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

async fn call42(c: &mut Client, ops: Vec<NfsArgop4>) -> Compound4Res {
    c.call_minor(2, ops).await
}

fn allocate(stateid: Stateid4, offset: u64, length: u64) -> NfsArgop4 {
    NfsArgop4::Allocate(AllocateArgs {
        aa_stateid: stateid,
        aa_offset: offset,
        aa_length: length,
    })
}

fn deallocate(stateid: Stateid4, offset: u64, length: u64) -> NfsArgop4 {
    NfsArgop4::Deallocate(DeallocateArgs {
        da_stateid: stateid,
        da_offset: offset,
        da_length: length,
    })
}

/// OPEN (creating, mode `mode`) of `name` in the root with `access`, as the client's user.
async fn open(c: &mut Client, name: &str, access: u32, deny: u32, mode: u32, who: &str) -> Opened {
    let r = c
        .call(vec![
            NfsArgop4::PutRootFh,
            NfsArgop4::Open(OpenArgs {
                seqid: 0,
                share_access: access,
                share_deny: deny,
                owner: StateOwner4 {
                    clientid: 0,
                    owner: Bytes::copy_from_slice(who.as_bytes()),
                },
                openhow: Openflag4::Create(Createhow4::Unchecked(mode_attrs(mode))),
                claim: OpenClaim4::Null(Utf8String::from(name)),
            }),
            NfsArgop4::GetFh,
        ])
        .await;
    assert_eq!(r.status, NfsStat4::NFS4_OK, "{r:?}");
    let stateid = r
        .resarray
        .iter()
        .find_map(|x| match x {
            NfsResop4::Open(OpenRes::Ok(ok)) => Some(ok.stateid),
            _ => None,
        })
        .unwrap();
    let Some(NfsResop4::GetFh(GetFhRes::Ok(fh))) = r.resarray.last() else {
        panic!("{r:?}")
    };
    Opened {
        fh: fh.object.clone(),
        stateid,
    }
}

async fn write(c: &mut Client, f: &Opened, offset: u64, data: &[u8]) {
    let r = c
        .call(vec![
            putfh(&f.fh),
            NfsArgop4::Write(WriteArgs {
                stateid: f.stateid,
                offset,
                stable: StableHow4::FILE_SYNC4,
                data: Bytes::copy_from_slice(data),
            }),
        ])
        .await;
    assert_eq!(r.status, NfsStat4::NFS4_OK, "{r:?}");
}

async fn read_all(c: &mut Client, f: &Opened) -> Vec<u8> {
    let r = c
        .call(vec![
            putfh(&f.fh),
            NfsArgop4::Read(ReadArgs {
                stateid: f.stateid,
                offset: 0,
                count: 1 << 20,
            }),
        ])
        .await;
    match r.resarray.last() {
        Some(NfsResop4::Read(ReadRes::Ok(ok))) => {
            assert!(ok.eof);
            ok.data.to_vec()
        }
        _ => panic!("READ failed: {r:?}"),
    }
}

/// The file's id, size, space_used and change attribute.
async fn attrs(c: &mut Client, fh: &NfsFh4) -> FileAttrs {
    let r = c
        .call(vec![
            putfh(fh),
            NfsArgop4::GetAttr(GetAttrArgs {
                attr_request: Bitmap4::from_bits([
                    FATTR4_FILEID,
                    FATTR4_SIZE,
                    FATTR4_SPACE_USED,
                    FATTR4_CHANGE,
                ]),
            }),
        ])
        .await;
    match r.resarray.last() {
        Some(NfsResop4::GetAttr(GetAttrRes::Ok(a))) => {
            FileAttrs::from_fattr(&a.obj_attributes).unwrap()
        }
        _ => panic!("GETATTR failed: {r:?}"),
    }
}

/// An MDS alone over a data directory of its own (metadata in redb, file data in the `local`
/// backend): for the tests that look at the blocks a file's object holds on disk.
async fn on_disk() -> (Cluster, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let s = Cluster::builder()
        .data_servers(0)
        .lease(10)
        .store(StoreKind::Redb(dir.path().to_path_buf()))
        .start()
        .await;
    (s, dir)
}

/// Where the local object store under `dir` keeps the file's data.
fn object_path(dir: &tempfile::TempDir, fileid: u64) -> PathBuf {
    dir.path()
        .join("data/objects")
        .join(ObjectId::whole(fileid).relative_path())
}

// ---------------------------------------------------------------------------------------------
// ALLOCATE
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn allocate_past_the_end_grows_the_file_with_zeros_and_reserves_blocks() {
    let (s, dir) = on_disk().await;
    let mut c = s.client("alloc").await;
    let f = open(&mut c, "f", OPEN4_SHARE_ACCESS_BOTH, 0, 0o644, "o").await;
    write(&mut c, &f, 0, b"head").await;
    let before = attrs(&mut c, &f.fh).await;
    let r = call42(
        &mut c,
        vec![putfh(&f.fh), allocate(f.stateid, 4096, 65_536)],
    )
    .await;
    assert_eq!(r.status, NfsStat4::NFS4_OK, "{r:?}");
    let after = attrs(&mut c, &f.fh).await;
    assert_eq!(after.size, Some(4096 + 65_536));
    assert_eq!(after.space_used, Some(4096 + 65_536));
    assert!(after.change > before.change);
    let data = read_all(&mut c, &f).await;
    assert_eq!(&data[..4], b"head");
    assert!(data[4..].iter().all(|&b| b == 0));
    assert_eq!(data.len(), 4096 + 65_536);
    let meta = std::fs::metadata(object_path(&dir, after.fileid.unwrap())).unwrap();
    assert_eq!(meta.len(), 4096 + 65_536);
    assert!(
        meta.blocks() * 512 >= 65_536,
        "the range is allocated: {} blocks",
        meta.blocks()
    );
}

#[tokio::test]
async fn allocate_inside_the_file_keeps_its_size_and_data() {
    Cluster::alone_and_striped(async |s: &Cluster| {
        let mut c = s.client("inside").await;
        let f = open(&mut c, "f", OPEN4_SHARE_ACCESS_BOTH, 0, 0o644, "o").await;
        let content: Vec<u8> = (0..10_000u32).map(|i| i as u8 | 1).collect();
        write(&mut c, &f, 0, &content).await;
        let r = call42(&mut c, vec![putfh(&f.fh), allocate(f.stateid, 100, 5000)]).await;
        assert_eq!(r.status, NfsStat4::NFS4_OK, "{r:?}");
        assert_eq!(attrs(&mut c, &f.fh).await.size, Some(10_000));
        assert_eq!(read_all(&mut c, &f).await, content);
    })
    .await;
}

// ---------------------------------------------------------------------------------------------
// DEALLOCATE
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn deallocate_punches_a_hole_that_reads_as_zeros_and_keeps_the_size() {
    let (s, dir) = on_disk().await;
    let mut c = s.client("dealloc").await;
    let f = open(&mut c, "f", OPEN4_SHARE_ACCESS_BOTH, 0, 0o644, "o").await;
    let content = vec![0x5au8; 3 * 65_536];
    write(&mut c, &f, 0, &content).await;
    let before = attrs(&mut c, &f.fh).await;
    let path = object_path(&dir, before.fileid.unwrap());
    let blocks_before = std::fs::metadata(&path).unwrap().blocks();
    let r = call42(
        &mut c,
        vec![putfh(&f.fh), deallocate(f.stateid, 65_536, 65_536)],
    )
    .await;
    assert_eq!(r.status, NfsStat4::NFS4_OK, "{r:?}");
    let after = attrs(&mut c, &f.fh).await;
    assert_eq!(after.size, before.size);
    assert!(after.change > before.change);
    let data = read_all(&mut c, &f).await;
    assert_eq!(data.len(), content.len());
    assert!(data[..65_536].iter().all(|&b| b == 0x5a));
    assert!(data[65_536..131_072].iter().all(|&b| b == 0));
    assert!(data[131_072..].iter().all(|&b| b == 0x5a));
    let blocks_after = std::fs::metadata(&path).unwrap().blocks();
    assert!(
        blocks_after < blocks_before,
        "blocks freed: {blocks_before} -> {blocks_after}"
    );
}

#[tokio::test]
async fn deallocate_past_the_end_zeroes_up_to_the_end_and_keeps_the_size() {
    Cluster::alone_and_striped(async |s: &Cluster| {
        let mut c = s.client("past").await;
        let f = open(&mut c, "f", OPEN4_SHARE_ACCESS_BOTH, 0, 0o644, "o").await;
        write(&mut c, &f, 0, b"0123456789").await;
        let before = attrs(&mut c, &f.fh).await;
        let r = call42(
            &mut c,
            vec![putfh(&f.fh), deallocate(f.stateid, 4, 1 << 40)],
        )
        .await;
        assert_eq!(r.status, NfsStat4::NFS4_OK, "{r:?}");
        assert_eq!(read_all(&mut c, &f).await, b"0123\0\0\0\0\0\0");
        let after = attrs(&mut c, &f.fh).await;
        assert_eq!(after.size, Some(10));
        assert!(after.change > before.change);
        // Wholly past the end: nothing to do, nothing changes.
        let r = call42(&mut c, vec![putfh(&f.fh), deallocate(f.stateid, 100, 10)]).await;
        assert_eq!(r.status, NfsStat4::NFS4_OK, "{r:?}");
        let last = attrs(&mut c, &f.fh).await;
        assert_eq!((last.size, last.change), (Some(10), after.change));
    })
    .await;
}

// ---------------------------------------------------------------------------------------------
// Stateids, permissions and arguments (as WRITE's)
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn special_stateids_work_as_for_write_pynfs_alloc2_and_alloc3() {
    Cluster::alone_and_striped(async |s: &Cluster| {
        let mut c = s.client("special").await;
        let f = open(&mut c, "f", OPEN4_SHARE_ACCESS_WRITE, 0, 0o644, "o").await;
        for (sid, what) in [
            (f.stateid, "open"),
            (Stateid4::default(), "anonymous"),
            (
                Stateid4 {
                    seqid: u32::MAX,
                    other: [0xff; 12],
                },
                "bypass",
            ),
        ] {
            let r = call42(&mut c, vec![putfh(&f.fh), allocate(sid, 0, 1)]).await;
            assert_eq!(r.status, NfsStat4::NFS4_OK, "{what}: {r:?}");
            let r = call42(&mut c, vec![putfh(&f.fh), deallocate(sid, 0, 1)]).await;
            assert_eq!(r.status, NfsStat4::NFS4_OK, "{what}: {r:?}");
        }
    })
    .await;
}

#[tokio::test]
async fn a_read_open_or_an_unknown_stateid_cannot_allocate() {
    Cluster::alone_and_striped(async |s: &Cluster| {
        let mut c = s.client("modes").await;
        let f = open(&mut c, "f", OPEN4_SHARE_ACCESS_READ, 0, 0o644, "o").await;
        let r = call42(&mut c, vec![putfh(&f.fh), allocate(f.stateid, 0, 10)]).await;
        assert_eq!(last_status(&r), NfsStat4::NFS4ERR_OPENMODE);
        let r = call42(&mut c, vec![putfh(&f.fh), deallocate(f.stateid, 0, 10)]).await;
        assert_eq!(last_status(&r), NfsStat4::NFS4ERR_OPENMODE);
        let forged = Stateid4 {
            seqid: 1,
            other: [9; 12],
        };
        let r = call42(&mut c, vec![putfh(&f.fh), allocate(forged, 0, 10)]).await;
        assert_eq!(last_status(&r), NfsStat4::NFS4ERR_BAD_STATEID);
    })
    .await;
}

#[tokio::test]
async fn a_deny_write_share_blocks_the_anonymous_stateid() {
    Cluster::alone_and_striped(async |s: &Cluster| {
        let mut c = s.client("deny").await;
        let f = open(
            &mut c,
            "f",
            OPEN4_SHARE_ACCESS_BOTH,
            OPEN4_SHARE_DENY_WRITE,
            0o666,
            "o",
        )
        .await;
        let r = call42(
            &mut c,
            vec![putfh(&f.fh), allocate(Stateid4::default(), 0, 10)],
        )
        .await;
        assert_eq!(last_status(&r), NfsStat4::NFS4ERR_LOCKED);
        let r = call42(&mut c, vec![putfh(&f.fh), allocate(f.stateid, 0, 10)]).await;
        assert_eq!(
            last_status(&r),
            NfsStat4::NFS4_OK,
            "its own open may: {r:?}"
        );
    })
    .await;
}

#[tokio::test]
async fn the_anonymous_stateid_needs_write_permission() {
    Cluster::alone_and_striped(async |s: &Cluster| {
        let mut c = s.client("perm").await;
        let f = open(&mut c, "f", OPEN4_SHARE_ACCESS_BOTH, 0, 0o644, "o").await;
        c.uid = 1000;
        let r = call42(
            &mut c,
            vec![putfh(&f.fh), allocate(Stateid4::default(), 0, 10)],
        )
        .await;
        assert_eq!(last_status(&r), NfsStat4::NFS4ERR_ACCESS);
        let r = call42(
            &mut c,
            vec![putfh(&f.fh), deallocate(Stateid4::default(), 0, 10)],
        )
        .await;
        assert_eq!(last_status(&r), NfsStat4::NFS4ERR_ACCESS);
    })
    .await;
}

#[tokio::test]
async fn empty_and_oversized_ranges_and_directories_are_refused() {
    Cluster::alone_and_striped(async |s: &Cluster| {
        let mut c = s.client("args").await;
        let f = open(&mut c, "f", OPEN4_SHARE_ACCESS_BOTH, 0, 0o644, "o").await;
        let r = call42(&mut c, vec![putfh(&f.fh), allocate(f.stateid, 0, 0)]).await;
        assert_eq!(last_status(&r), NfsStat4::NFS4ERR_INVAL);
        let r = call42(&mut c, vec![putfh(&f.fh), deallocate(f.stateid, 5, 0)]).await;
        assert_eq!(last_status(&r), NfsStat4::NFS4ERR_INVAL);
        let r = call42(
            &mut c,
            vec![putfh(&f.fh), allocate(f.stateid, i64::MAX as u64, 1)],
        )
        .await;
        assert_eq!(last_status(&r), NfsStat4::NFS4ERR_FBIG);
        let r = call42(&mut c, vec![putfh(&f.fh), allocate(f.stateid, u64::MAX, 2)]).await;
        assert_eq!(last_status(&r), NfsStat4::NFS4ERR_FBIG);
        assert_eq!(attrs(&mut c, &f.fh).await.size, Some(0), "nothing grew");
        let r = call42(
            &mut c,
            vec![NfsArgop4::PutRootFh, allocate(Stateid4::default(), 0, 10)],
        )
        .await;
        assert_eq!(last_status(&r), NfsStat4::NFS4ERR_ISDIR);
    })
    .await;
}

#[tokio::test]
async fn allocate_and_deallocate_are_notsupp_in_minor_version_1() {
    let s = Cluster::mds_alone().await;
    let mut c = s.client("v41").await;
    let f = open(&mut c, "f", OPEN4_SHARE_ACCESS_BOTH, 0, 0o644, "o").await;
    let r = c
        .call_minor(1, vec![putfh(&f.fh), allocate(f.stateid, 0, 10)])
        .await;
    assert_eq!(last_status(&r), NfsStat4::NFS4ERR_NOTSUPP);
    let r = c
        .call_minor(1, vec![putfh(&f.fh), deallocate(f.stateid, 0, 10)])
        .await;
    assert_eq!(last_status(&r), NfsStat4::NFS4ERR_NOTSUPP);
}

// ---------------------------------------------------------------------------------------------
// Space used, SEEK and READ_PLUS of a file the MDS keeps itself (no data servers)
// ---------------------------------------------------------------------------------------------

const MIB: u64 = 1 << 20;

/// Writes `len` bytes of `fill` at `offset`, 256 KiB per WRITE (the test session's records
/// are 1 MiB).
async fn write_range(c: &mut Client, f: &Opened, offset: u64, len: u64, fill: u8) {
    let mut at = offset;
    while at < offset + len {
        let n = (offset + len - at).min(256 << 10);
        write(c, f, at, &vec![fill; n as usize]).await;
        at += n;
    }
}

fn seek_op(stateid: Stateid4, offset: u64, hole: bool) -> NfsArgop4 {
    NfsArgop4::Seek(SeekArgs {
        sa_stateid: stateid,
        sa_offset: offset,
        sa_what: if hole {
            DataContent4::NFS4_CONTENT_HOLE
        } else {
            DataContent4::NFS4_CONTENT_DATA
        },
    })
}

async fn seek(
    c: &mut Client,
    f: &Opened,
    offset: u64,
    hole: bool,
) -> Result<(bool, u64), NfsStat4> {
    let r = call42(c, vec![putfh(&f.fh), seek_op(f.stateid, offset, hole)]).await;
    match r.resarray.last() {
        Some(NfsResop4::Seek(SeekRes::Ok(ok))) => Ok((ok.sr_eof, ok.sr_offset)),
        Some(NfsResop4::Seek(SeekRes::Err(s))) => Err(*s),
        _ => panic!("SEEK: {r:?}"),
    }
}

/// A 3 MiB file: data in `[0, 1)` MiB and `[2, 3)` MiB, a punched hole between.
async fn holey(c: &mut Client, name: &str) -> Opened {
    let f = open(c, name, OPEN4_SHARE_ACCESS_BOTH, 0, 0o644, "o").await;
    write_range(c, &f, 0, 3 * MIB, 0x77).await;
    let r = call42(c, vec![putfh(&f.fh), deallocate(f.stateid, MIB, MIB)]).await;
    assert_eq!(r.status, NfsStat4::NFS4_OK, "{r:?}");
    f
}

#[tokio::test]
async fn space_used_falls_after_deallocate() {
    let s = Cluster::mds_alone().await;
    let mut c = s.client("space").await;
    let f = open(&mut c, "f", OPEN4_SHARE_ACCESS_BOTH, 0, 0o644, "o").await;
    write_range(&mut c, &f, 0, 3 * MIB, 0x77).await;
    let before = attrs(&mut c, &f.fh).await.space_used.unwrap();
    assert!(before >= 3 * MIB, "{before}");
    let r = call42(&mut c, vec![putfh(&f.fh), deallocate(f.stateid, MIB, MIB)]).await;
    assert_eq!(r.status, NfsStat4::NFS4_OK, "{r:?}");
    let after = attrs(&mut c, &f.fh).await;
    assert_eq!(after.size, Some(3 * MIB));
    assert!(
        after.space_used.unwrap() + MIB <= before,
        "{before} -> {:?}",
        after.space_used
    );
}

#[tokio::test]
async fn seek_finds_the_punched_hole_and_the_end_and_nxio_past_it() {
    let s = Cluster::mds_alone().await;
    let mut c = s.client("seek").await;
    let f = holey(&mut c, "f").await;
    assert_eq!(seek(&mut c, &f, 0, false).await, Ok((false, 0)));
    assert_eq!(seek(&mut c, &f, 0, true).await, Ok((false, MIB)));
    assert_eq!(seek(&mut c, &f, MIB + 1, false).await, Ok((false, 2 * MIB)));
    assert_eq!(seek(&mut c, &f, MIB + 1, true).await, Ok((false, MIB + 1)));
    assert_eq!(seek(&mut c, &f, 2 * MIB, true).await, Ok((true, 3 * MIB)));
    for hole in [false, true] {
        assert_eq!(
            seek(&mut c, &f, 3 * MIB, hole).await,
            Err(NfsStat4::NFS4ERR_NXIO)
        );
    }
    // A size set past the data: a trailing hole, and no data in it.
    let r = c
        .call(vec![
            putfh(&f.fh),
            NfsArgop4::SetAttr(SetAttrArgs {
                stateid: f.stateid,
                obj_attributes: {
                    let a = FileAttrs {
                        size: Some(5 * MIB),
                        ..FileAttrs::default()
                    };
                    a.to_fattr(&a.mask())
                },
            }),
        ])
        .await;
    assert_eq!(r.status, NfsStat4::NFS4_OK, "{r:?}");
    assert_eq!(seek(&mut c, &f, 3 * MIB, false).await, Ok((true, 5 * MIB)));
    assert_eq!(seek(&mut c, &f, 3 * MIB, true).await, Ok((false, 3 * MIB)));
    // Minor version 1: no SEEK; a READ open is enough (READ's rules); a directory is not.
    let r = c
        .call(vec![putfh(&f.fh), seek_op(f.stateid, 0, true)])
        .await;
    assert_eq!(last_status(&r), NfsStat4::NFS4ERR_NOTSUPP);
    let r = call42(
        &mut c,
        vec![NfsArgop4::PutRootFh, seek_op(Stateid4::default(), 0, true)],
    )
    .await;
    assert_eq!(last_status(&r), NfsStat4::NFS4ERR_ISDIR);
    let forged = Stateid4 {
        seqid: 1,
        other: [9; 12],
    };
    let r = call42(&mut c, vec![putfh(&f.fh), seek_op(forged, 0, true)]).await;
    assert_eq!(last_status(&r), NfsStat4::NFS4ERR_BAD_STATEID);
}

#[tokio::test]
async fn read_plus_sends_the_hole_as_a_hole_and_the_data_as_data() {
    let s = Cluster::mds_alone().await;
    let mut c = s.client("read-plus").await;
    let f = holey(&mut c, "f").await;
    let read_plus = |offset, count| {
        vec![
            putfh(&f.fh),
            NfsArgop4::ReadPlus(ReadPlusArgs {
                rpa_stateid: f.stateid,
                rpa_offset: offset,
                rpa_count: count,
            }),
        ]
    };
    // The session's replies are 1 MiB: ask for 512 KiB around the hole's start and end.
    let half = MIB / 2;
    let r = call42(&mut c, read_plus(MIB - half / 2, half as u32)).await;
    let Some(NfsResop4::ReadPlus(ReadPlusRes::Ok(ok))) = r.resarray.last() else {
        panic!("READ_PLUS: {r:?}")
    };
    assert!(!ok.rpr_eof);
    let [ReadPlusContent::Data(d), ReadPlusContent::Hole(h)] = &ok.rpr_contents[..] else {
        panic!("{:?}", ok.rpr_contents.len())
    };
    assert_eq!(d.d_offset, MIB - half / 2);
    assert!(d.d_data.len() as u64 == half / 2 && d.d_data.iter().all(|&b| b == 0x77));
    assert_eq!((h.di_offset, h.di_length), (MIB, half / 2));
    // The end of the hole and the data to the end of the file, with eof.
    let r = call42(&mut c, read_plus(2 * MIB - 10, 800_000)).await;
    let Some(NfsResop4::ReadPlus(ReadPlusRes::Ok(ok))) = r.resarray.last() else {
        panic!("READ_PLUS: {r:?}")
    };
    let [ReadPlusContent::Hole(h), ReadPlusContent::Data(d)] = &ok.rpr_contents[..] else {
        panic!("{:?}", ok.rpr_contents.len())
    };
    assert_eq!((h.di_offset, h.di_length), (2 * MIB - 10, 10));
    assert_eq!((d.d_offset, d.d_data.len()), (2 * MIB, 800_000 - 10));
    assert!(!ok.rpr_eof);
    let r = call42(&mut c, read_plus(3 * MIB - 5, 100)).await;
    let Some(NfsResop4::ReadPlus(ReadPlusRes::Ok(ok))) = r.resarray.last() else {
        panic!("READ_PLUS: {r:?}")
    };
    assert!(ok.rpr_eof);
    assert!(matches!(&ok.rpr_contents[..], [ReadPlusContent::Data(d)] if d.d_data.len() == 5));
    let r = c.call(read_plus(0, 10)).await;
    assert_eq!(
        last_status(&r),
        NfsStat4::NFS4ERR_NOTSUPP,
        "minor version 1"
    );
}

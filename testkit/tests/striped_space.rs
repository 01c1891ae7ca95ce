//! ALLOCATE, DEALLOCATE, SEEK and READ_PLUS (RFC 7862 sections 15.1, 15.4, 15.11, 15.10) of
//! files striped over three data servers (the default `pnfs server`: local backend, dense
//! packing, 1 MiB stripe unit), on the in-memory cluster with the data servers' objects on
//! disk (the `local` backend: space used is the filesystem's blocks, holes and all): each stripe's share of a range
//! reaches its data server, through the MDS, through a layout and across an MDS restart.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use nfs_proto::nfs4::attr::*;
use nfs_proto::nfs4::layout_files::Nfsv41FileLayout4;
use nfs_proto::nfs4::*;
use nfs_proto::transport::NoCalls;
use pfs_core::{LocalStore, ObjectId, ObjectStore};
use testkit::cluster::{ds_nfs_addr, Cluster, StoreKind, MDS_ADDR};
use testkit::prelude::*;
use tokio::io::DuplexStream;

/// The stripe unit: index `i` of the 3-wide dense set holds file units `i, i + 3, ...`,
/// back to back in its object.
const UNIT: u64 = 1 << 20;
const HALF: u64 = UNIT / 2;

/// Three data servers with layouts on, their objects under `dir` (the `local` backend), the
/// metadata in redb under `dir` too (it outlives an MDS restart).
async fn cluster(dir: &Path) -> Cluster {
    let objects = dir.to_path_buf();
    Cluster::builder()
        .data_servers(3)
        .store(StoreKind::Redb(dir.to_path_buf()))
        .ds_store(move |id| {
            let store = LocalStore::open(objects.join(format!("ds{id}"))).expect("object store");
            Arc::new(store) as Arc<dyn ObjectStore>
        })
        .configure(|cfg| cfg.cluster.layouts = true)
        .start()
        .await
}

/// A client of the MDS whose session takes 1 MiB WRITEs and READs.
async fn client(k: &Cluster, owner: &str) -> Client {
    session(k.connect_mds(), MDS_ADDR, owner).await
}

/// A session over `stream` to `peer` that takes 1 MiB WRITEs and READs (the test default is
/// 1 MiB records).
async fn session(stream: DuplexStream, peer: SocketAddr, owner: &str) -> Client {
    let fore = ChannelAttrs4 {
        ca_maxrequestsize: 2 << 20,
        ca_maxresponsesize: 2 << 20,
        ..channel()
    };
    let setup = Setup::new(owner).reclaiming().fore(fore);
    let mut c = Client::over(stream, peer, Arc::new(NoCalls), &setup).await;
    let r = c
        .call(vec![NfsArgop4::ReclaimComplete(ReclaimCompleteArgs {
            rca_one_fs: false,
        })])
        .await;
    assert_eq!(r.status, NfsStat4::NFS4_OK, "{r:?}");
    c
}

/// A file opened for reading and writing, with its stripe set's data servers.
struct File {
    fh: NfsFh4,
    fileid: u64,
    open: Stateid4,
}

async fn create(c: &mut Client, name: &str) -> File {
    let o = open_in_root(c, name, OPEN4_SHARE_ACCESS_BOTH, OPEN4_SHARE_DENY_NONE, "o").await;
    let (fileid, _) = fileid_of(c, &o.fh).await;
    File {
        fh: o.fh,
        fileid,
        open: o.stateid,
    }
}

/// The bytes the test files hold at file offset `at` (never 0, so zeros show holes).
fn byte_at(at: u64) -> u8 {
    (at % 251) as u8 | 1
}

fn content(offset: u64, len: u64) -> Vec<u8> {
    (offset..offset + len).map(byte_at).collect()
}

impl File {
    /// Writes [`content`] over `[0, len)` through the MDS, FILE_SYNC, 1 MiB at a time.
    async fn fill(&self, c: &mut Client, len: u64) {
        let mut at = 0;
        while at < len {
            let n = (len - at).min(UNIT);
            let r = c
                .call(vec![
                    putfh(&self.fh),
                    write_op(
                        self.open,
                        at,
                        StableHow4::FILE_SYNC4,
                        Bytes::from(content(at, n)),
                    ),
                ])
                .await;
            assert_eq!(write_res(&r).count as u64, n, "{r:?}");
            at += n;
        }
    }

    /// The whole file through MDS READs.
    async fn read_all(&self, c: &mut Client) -> Vec<u8> {
        let mut out = Vec::new();
        loop {
            let r = c
                .call(vec![
                    putfh(&self.fh),
                    read_op(self.open, out.len() as u64, UNIT as u32),
                ])
                .await;
            let ok = read_res(&r);
            out.extend_from_slice(&ok.data);
            if ok.eof {
                return out;
            }
            assert!(!ok.data.is_empty(), "an empty READ without eof");
        }
    }

    async fn space_op(&self, c: &mut Client, op: NfsArgop4) -> NfsStat4 {
        last_status(&c.call_minor(2, vec![putfh(&self.fh), op]).await)
    }

    async fn allocate(&self, c: &mut Client, offset: u64, length: u64) -> NfsStat4 {
        let op = NfsArgop4::Allocate(AllocateArgs {
            aa_stateid: self.open,
            aa_offset: offset,
            aa_length: length,
        });
        self.space_op(c, op).await
    }

    async fn deallocate(&self, c: &mut Client, offset: u64, length: u64) -> NfsStat4 {
        let op = NfsArgop4::Deallocate(DeallocateArgs {
            da_stateid: self.open,
            da_offset: offset,
            da_length: length,
        });
        self.space_op(c, op).await
    }

    /// SEEK: `Ok((eof, offset))` or the error.
    async fn seek(&self, c: &mut Client, offset: u64, hole: bool) -> Result<(bool, u64), NfsStat4> {
        let r = c
            .call_minor(
                2,
                vec![
                    putfh(&self.fh),
                    NfsArgop4::Seek(SeekArgs {
                        sa_stateid: self.open,
                        sa_offset: offset,
                        sa_what: if hole {
                            DataContent4::NFS4_CONTENT_HOLE
                        } else {
                            DataContent4::NFS4_CONTENT_DATA
                        },
                    }),
                ],
            )
            .await;
        match r.resarray.last() {
            Some(NfsResop4::Seek(SeekRes::Ok(ok))) => Ok((ok.sr_eof, ok.sr_offset)),
            Some(NfsResop4::Seek(SeekRes::Err(s))) => Err(*s),
            _ => panic!("SEEK: {r:?}"),
        }
    }

    async fn read_plus(&self, c: &mut Client, offset: u64, count: u32) -> ReadPlusResOk {
        let r = c
            .call_minor(
                2,
                vec![
                    putfh(&self.fh),
                    NfsArgop4::ReadPlus(ReadPlusArgs {
                        rpa_stateid: self.open,
                        rpa_offset: offset,
                        rpa_count: count,
                    }),
                ],
            )
            .await;
        match r.resarray.last() {
            Some(NfsResop4::ReadPlus(ReadPlusRes::Ok(ok))) => ok.clone(),
            _ => panic!("READ_PLUS: {r:?}"),
        }
    }

    /// LAYOUTGET RW: its status, and the layout body if granted.
    async fn layoutget(&self, c: &mut Client) -> (NfsStat4, Option<Nfsv41FileLayout4>) {
        let r = c
            .call(vec![
                putfh(&self.fh),
                layoutget_op(Layoutiomode4::LAYOUTIOMODE4_RW, self.open),
            ])
            .await;
        match layoutget_res(&r) {
            LayoutGetRes::Ok(_) => (NfsStat4::NFS4_OK, Some(granted(&r).1)),
            _ => (last_status(&r), None),
        }
    }

    /// The object of stripe index `index`.
    fn object(&self, index: u32) -> ObjectId {
        ObjectId {
            file: self.fileid,
            stripe: index,
        }
    }
}

/// (size, space_used) as GETATTR reports them.
async fn size_and_space(c: &mut Client, fh: &NfsFh4) -> (u64, u64) {
    let r = c
        .call(vec![
            putfh(fh),
            NfsArgop4::GetAttr(GetAttrArgs {
                attr_request: Bitmap4::from_bits([FATTR4_SIZE, FATTR4_SPACE_USED]),
            }),
        ])
        .await;
    let Some(NfsResop4::GetAttr(GetAttrRes::Ok(a))) = r.resarray.last() else {
        panic!("GETATTR failed: {r:?}")
    };
    let a = FileAttrs::from_fattr(&a.obj_attributes).unwrap();
    (a.size.unwrap(), a.space_used.unwrap())
}

/// The objects of the data server holding stripe index `index` of `f`.
fn ds_of(k: &Cluster, f: &File, index: usize) -> Arc<dyn ObjectStore> {
    let mds = k.mds();
    let set = mds
        .store()
        .stripes(f.fileid)
        .unwrap()
        .expect("a stripe set");
    k.ds_objects(mds.stripe_servers(&set).unwrap()[index])
}

/// Reads `count` bytes at object offset `offset` of stripe index `index` through the
/// layout's DS filehandle, as a client with the layout does.
async fn ds_read(
    k: &Cluster,
    f: &File,
    body: &Nfsv41FileLayout4,
    index: usize,
    offset: u64,
    count: u32,
) -> Bytes {
    static N: AtomicU32 = AtomicU32::new(0);
    let mds = k.mds();
    let set = mds.store().stripes(f.fileid).unwrap().unwrap();
    let id = mds.stripe_servers(&set).unwrap()[index];
    let n = N.fetch_add(1, Ordering::Relaxed);
    let stream = k.connect_ds(id).expect("the data server is up");
    let mut d = session(stream, ds_nfs_addr(id), &format!("ds-reader-{n}")).await;
    let r = d
        .call(vec![
            putfh(&body.nfl_fh_list[index]),
            read_op(f.open, offset, count),
        ])
        .await;
    read_res(&r).data
}

/// The file the SEEK and DEALLOCATE tests punch: 6 MiB + 1000 of [`content`], then holes
/// at `[1 MiB, 2 MiB)` (all of stripe index 1's first unit) and `[3.5 MiB, 4.5 MiB)` (the
/// second half of index 0's second unit and the first half of index 1's second unit).
const SIZE: u64 = 6 * UNIT + 1000;
const HOLES: [(u64, u64); 2] = [(UNIT, 2 * UNIT), (3 * UNIT + HALF, 4 * UNIT + HALF)];

async fn punched(c: &mut Client, name: &str) -> File {
    let f = create(c, name).await;
    f.fill(c, SIZE).await;
    for (from, to) in HOLES {
        assert_eq!(f.deallocate(c, from, to - from).await, NfsStat4::NFS4_OK);
    }
    f
}

fn expected() -> Vec<u8> {
    let mut want = content(0, SIZE);
    for (from, to) in HOLES {
        want[from as usize..to as usize].fill(0);
    }
    want
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deallocate_zeroes_each_stripes_share_and_only_that_through_the_mds_and_the_layout() {
    let dir = tempfile::tempdir().unwrap();
    let k = cluster(dir.path()).await;
    let mds = k.mds().clone();
    let mut c = client(&k, "punch").await;
    let f = create(&mut c, "f").await;
    f.fill(&mut c, SIZE).await;
    assert!(mds.store().stripes(f.fileid).unwrap().is_some(), "striped");
    let (size, space_before) = size_and_space(&mut c, &f.fh).await;
    assert_eq!(size, SIZE);
    for (from, to) in HOLES {
        assert_eq!(
            f.deallocate(&mut c, from, to - from).await,
            NfsStat4::NFS4_OK
        );
    }
    // Through the MDS: the ranges are zeros, the rest unchanged, the size the same.
    assert!(f.read_all(&mut c).await == expected(), "MDS READ");
    let (size, space_after) = size_and_space(&mut c, &f.fh).await;
    assert_eq!(size, SIZE);
    // Before: the recorded figure (GETATTR asks the data servers for the space only of files
    // given an ALLOCATE or DEALLOCATE, mds::pnfs::spacewatch); after: the objects' blocks, the 2 MiB
    // freed gone (at most a block per object more than the data left).
    assert!(space_before >= SIZE, "{space_before}");
    assert!(
        space_after <= SIZE - 2 * UNIT + 3 * 4096,
        "space used falls by the 2 MiB freed: {space_before} -> {space_after}"
    );
    // The data servers' objects: index 1's first unit is all hole, and index 0 holds
    // zeros from object offset 1.5 MiB to its end of 2 MiB.
    let s1 = ds_of(&k, &f, 1);
    assert!(s1.space_used(f.object(1)).unwrap() < 2 * UNIT);
    // Through a layout, as a client reads each data server.
    let (st, body) = f.layoutget(&mut c).await;
    assert_eq!(st, NfsStat4::NFS4_OK);
    let body = body.unwrap();
    let got = ds_read(&k, &f, &body, 1, 0, UNIT as u32).await;
    assert!(got.iter().all(|&b| b == 0), "index 1, file [1, 2) MiB");
    let got = ds_read(&k, &f, &body, 1, UNIT, UNIT as u32).await;
    assert_eq!(got.len() as u64, UNIT);
    assert!(
        got[..HALF as usize].iter().all(|&b| b == 0),
        "file [4, 4.5) MiB"
    );
    assert!(got[HALF as usize..] == content(4 * UNIT + HALF, HALF)[..]);
    let got = ds_read(&k, &f, &body, 0, UNIT, UNIT as u32).await;
    assert!(
        got[..HALF as usize] == content(3 * UNIT, HALF)[..],
        "file [3, 3.5) MiB"
    );
    assert!(
        got[HALF as usize..].iter().all(|&b| b == 0),
        "file [3.5, 4) MiB"
    );
    let got = ds_read(&k, &f, &body, 2, 0, UNIT as u32).await;
    assert!(got[..] == content(2 * UNIT, UNIT)[..], "index 2 untouched");

    // Wholly past the end: nothing changes, not even the change attribute.
    let before = mds.store().getattr(f.fileid).unwrap();
    assert_eq!(
        f.deallocate(&mut c, SIZE + 10, 1 << 30).await,
        NfsStat4::NFS4_OK
    );
    let after = mds.store().getattr(f.fileid).unwrap();
    assert_eq!((after.size, after.change), (before.size, before.change));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn allocate_of_a_new_file_keeps_it_on_the_data_servers_and_grows_every_object() {
    let dir = tempfile::tempdir().unwrap();
    let k = cluster(dir.path()).await;
    let mds = k.mds().clone();
    let mut c = client(&k, "alloc").await;
    let f = create(&mut c, "f").await;
    assert_eq!(
        f.allocate(&mut c, 0, 3 * UNIT + 10).await,
        NfsStat4::NFS4_OK
    );
    assert!(mds.store().stripes(f.fileid).unwrap().is_some(), "striped");
    let (size, space) = size_and_space(&mut c, &f.fh).await;
    assert_eq!(size, 3 * UNIT + 10);
    assert!(
        space >= 3 * UNIT + 10,
        "reserved on the data servers: {space}"
    );
    // Index 0 holds units 0 and 3 (10 bytes of it), indices 1 and 2 one unit each.
    let sizes: Vec<u64> = (0..3)
        .map(|i| ds_of(&k, &f, i).size(f.object(i as u32)).unwrap())
        .collect();
    assert_eq!(sizes, [UNIT + 10, UNIT, UNIT]);
    let (st, body) = f.layoutget(&mut c).await;
    assert_eq!(st, NfsStat4::NFS4_OK, "the file keeps getting layouts");
    assert_eq!(body.unwrap().nfl_fh_list.len(), 3);

    // Growing far past the end: the file is 10 MiB + 1, unit 10 (index 1) holds its last
    // byte, and every object reaches its share: index 0 units 0, 3, 6, 9 (4 MiB), index 1
    // units 1, 4, 7 and 1 byte of 10, index 2 units 2, 5, 8.
    assert_eq!(f.allocate(&mut c, 10 * UNIT, 1).await, NfsStat4::NFS4_OK);
    assert_eq!(size_and_space(&mut c, &f.fh).await.0, 10 * UNIT + 1);
    let sizes: Vec<u64> = (0..3)
        .map(|i| ds_of(&k, &f, i).size(f.object(i as u32)).unwrap())
        .collect();
    assert_eq!(sizes, [4 * UNIT, 3 * UNIT + 1, 3 * UNIT]);
    // Inside the file: the size stays, data written before stays.
    f.fill(&mut c, UNIT).await;
    assert_eq!(f.allocate(&mut c, 100, 5000).await, NfsStat4::NFS4_OK);
    assert_eq!(size_and_space(&mut c, &f.fh).await.0, 10 * UNIT + 1);
    let r = c
        .call(vec![putfh(&f.fh), read_op(f.open, 0, UNIT as u32)])
        .await;
    assert!(read_res(&r).data[..] == content(0, UNIT)[..]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn space_operations_wait_for_a_data_server_that_is_down() {
    let dir = tempfile::tempdir().unwrap();
    let k = cluster(dir.path()).await;
    let mds = k.mds().clone();
    let mut c = client(&k, "down").await;
    let f = create(&mut c, "f").await;
    f.fill(&mut c, 3 * UNIT).await;
    let set = mds.store().stripes(f.fileid).unwrap().unwrap();
    let down = mds.stripe_servers(&set).unwrap()[2];
    k.kill_ds(down);
    k.until("the registry notices", || {
        mds.devices().control(down).is_none()
    })
    .await;
    let before = mds.store().getattr(f.fileid).unwrap();
    assert_eq!(
        f.deallocate(&mut c, 0, 3 * UNIT).await,
        NfsStat4::NFS4ERR_DELAY
    );
    assert_eq!(
        f.allocate(&mut c, 0, 8 * UNIT).await,
        NfsStat4::NFS4ERR_DELAY
    );
    assert_eq!(f.seek(&mut c, 0, true).await, Err(NfsStat4::NFS4ERR_DELAY));
    let after = mds.store().getattr(f.fileid).unwrap();
    assert_eq!(
        (after.size, after.change),
        (before.size, before.change),
        "nothing recorded"
    );
    let r = c
        .call(vec![putfh(&f.fh), read_op(f.open, 0, UNIT as u32)])
        .await;
    assert!(
        read_res(&r).data[..] == content(0, UNIT)[..],
        "nothing punched on the others"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_punched_range_reads_as_zeros_after_an_mds_restart() {
    let dir = tempfile::tempdir().unwrap();
    let mut k = cluster(dir.path()).await;
    let fh = {
        let mut c = client(&k, "before").await;
        punched(&mut c, "f").await.fh
    };
    k.restart_mds().await;
    {
        let mut c = client(&k, "after").await;
        let f = File {
            fh: fh.clone(),
            fileid: 0,
            open: Stateid4::default(),
        };
        assert!(f.read_all(&mut c).await == expected());
        assert_eq!(size_and_space(&mut c, &fh).await.0, SIZE);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn seek_finds_data_and_holes_over_several_stripes_and_nxio_past_the_end() {
    let dir = tempfile::tempdir().unwrap();
    let k = cluster(dir.path()).await;
    let mut c = client(&k, "seek").await;
    let f = punched(&mut c, "f").await;
    let (data, hole) = (false, true);
    assert_eq!(f.seek(&mut c, 0, data).await, Ok((false, 0)));
    assert_eq!(f.seek(&mut c, 777, data).await, Ok((false, 777)));
    assert_eq!(f.seek(&mut c, 0, hole).await, Ok((false, UNIT)));
    assert_eq!(f.seek(&mut c, UNIT, data).await, Ok((false, 2 * UNIT)));
    assert_eq!(f.seek(&mut c, UNIT + 7, data).await, Ok((false, 2 * UNIT)));
    assert_eq!(f.seek(&mut c, UNIT + 7, hole).await, Ok((false, UNIT + 7)));
    // Data runs over indices 2 and 0 up to the hole in the middle of index 0's unit.
    assert_eq!(
        f.seek(&mut c, 2 * UNIT, hole).await,
        Ok((false, 3 * UNIT + HALF))
    );
    // The hole runs over indices 0 and 1; data again in the middle of index 1's unit.
    assert_eq!(
        f.seek(&mut c, 3 * UNIT + HALF, data).await,
        Ok((false, 4 * UNIT + HALF))
    );
    // Data to the end: the virtual hole at the end, with eof.
    assert_eq!(
        f.seek(&mut c, 4 * UNIT + HALF, hole).await,
        Ok((true, SIZE))
    );
    assert_eq!(f.seek(&mut c, SIZE - 1, data).await, Ok((false, SIZE - 1)));
    for what in [data, hole] {
        for at in [SIZE, SIZE + 1, u64::MAX] {
            assert_eq!(f.seek(&mut c, at, what).await, Err(NfsStat4::NFS4ERR_NXIO));
        }
    }
    // A trailing hole (SETATTR grows the file to 8 MiB): no data after 6 MiB + 4 KiB.
    let r = c
        .call(vec![
            putfh(&f.fh),
            NfsArgop4::SetAttr(SetAttrArgs {
                stateid: f.open,
                obj_attributes: fattr(&FileAttrs {
                    size: Some(8 * UNIT),
                    ..FileAttrs::default()
                }),
            }),
        ])
        .await;
    assert_eq!(r.status, NfsStat4::NFS4_OK, "{r:?}");
    assert_eq!(
        f.seek(&mut c, 6 * UNIT + 4096, data).await,
        Ok((true, 8 * UNIT)),
        "no data: eof, at the size"
    );
    assert_eq!(
        f.seek(&mut c, 6 * UNIT + 4096, hole).await,
        Ok((false, 6 * UNIT + 4096))
    );
    // Minor version 1 has no SEEK.
    let r = c
        .call(vec![
            putfh(&f.fh),
            NfsArgop4::Seek(SeekArgs {
                sa_stateid: f.open,
                sa_offset: 0,
                sa_what: DataContent4::NFS4_CONTENT_DATA,
            }),
        ])
        .await;
    assert_eq!(last_status(&r), NfsStat4::NFS4ERR_NOTSUPP);
}

/// Rebuilds the bytes of a READ_PLUS reply starting at `offset`, checking the pieces follow
/// each other; returns them and how many holes there were.
fn rebuild(offset: u64, ok: &ReadPlusResOk) -> (Vec<u8>, usize) {
    let mut out = Vec::new();
    let mut holes = 0;
    for c in &ok.rpr_contents {
        match c {
            ReadPlusContent::Data(d) => {
                assert_eq!(d.d_offset, offset + out.len() as u64);
                out.extend_from_slice(&d.d_data);
            }
            ReadPlusContent::Hole(h) => {
                assert_eq!(h.di_offset, offset + out.len() as u64);
                out.resize(out.len() + h.di_length as usize, 0);
                holes += 1;
            }
            ReadPlusContent::Other(o) => panic!("{o:?}"),
        }
    }
    (out, holes)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_plus_sends_the_holes_of_a_striped_file_as_holes() {
    let dir = tempfile::tempdir().unwrap();
    let k = cluster(dir.path()).await;
    let mut c = client(&k, "read-plus").await;
    let f = punched(&mut c, "f").await;
    let want = expected();
    // Data [0.5, 1) MiB and the hole [1, 1.5) MiB.
    let ok = f.read_plus(&mut c, HALF, UNIT as u32).await;
    assert_eq!(ok.rpr_contents.len(), 2, "{:?}", ok.rpr_contents.len());
    assert!(matches!(
        ok.rpr_contents[1],
        ReadPlusContent::Hole(DataInfo4 { di_offset, di_length }) if di_offset == UNIT && di_length == HALF
    ));
    assert!(!ok.rpr_eof);
    // Every range of the file, as READ would give it, holes as holes.
    let mut at = 0;
    let mut holes = 0;
    while at < SIZE {
        let ok = f.read_plus(&mut c, at, UNIT as u32).await;
        let (bytes, h) = rebuild(at, &ok);
        assert!(!bytes.is_empty());
        assert!(
            bytes[..] == want[at as usize..at as usize + bytes.len()],
            "at {at}"
        );
        holes += h;
        at += bytes.len() as u64;
        assert_eq!(ok.rpr_eof, at >= SIZE, "at {at}");
    }
    assert!(holes >= 3, "holes in the replies: {holes}");
    let ok = f.read_plus(&mut c, SIZE, 10).await;
    assert!(ok.rpr_eof && ok.rpr_contents.is_empty());
}

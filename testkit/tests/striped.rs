//! Striped files on the in-memory cluster, the data servers' objects on disk (the `local`
//! backend) and the metadata in redb (it outlives an MDS restart): the MDS asks them for sizes while a
//! client writes through a layout, truncates their objects, and removes the objects of
//! deleted files through its durable queue, also when a data server is down for a while and
//! across a restart of the MDS.

use std::cell::Cell;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use mds::Mds;
use nfs_proto::nfs4::attr::*;
use nfs_proto::nfs4::layout_files::Nfsv41FileLayout4;
use nfs_proto::nfs4::*;
use pfs_core::{LocalStore, ObjectId, ObjectStore};
use testkit::cluster::{Cluster, StoreKind};
use testkit::loopback::ds::object_path;
use testkit::prelude::*;

const LEASE: u32 = 30;
/// The default stripe unit (1 MiB): stripe index `i` of a 3-wide dense set holds file bytes
/// `[i MiB, (i + 1) MiB)` at object offsets `[0, 1 MiB)`, then `[(i + 3) MiB, ...)`, ...
const UNIT: u64 = 1 << 20;

/// Three data servers with layouts on, their objects under `<dir>/ds<id>` (the `local`
/// backend), the metadata in redb under `dir`.
async fn cluster(dir: &Path) -> Cluster {
    cluster_on(dir, nfs_server::clock::system()).await
}

/// [`cluster`] on `clock`, the MDS's and the data servers' (a test moves a [`ManualClock`]
/// on to see the settling task's rounds go by).
async fn cluster_on(dir: &Path, clock: nfs_server::SharedClock) -> Cluster {
    let root = dir.to_path_buf();
    Cluster::builder()
        .data_servers(3)
        .lease(LEASE)
        .clock(clock)
        .store(StoreKind::Redb(dir.to_path_buf()))
        .ds_store(move |id| {
            let store = LocalStore::open(ds_dir(&root, id)).expect("object store");
            Arc::new(store) as Arc<dyn ObjectStore>
        })
        .configure(|cfg| cfg.cluster.layouts = true)
        .start()
        .await
}

/// Where data server `id` of the cluster under `dir` keeps its objects.
fn ds_dir(dir: &Path, id: u16) -> PathBuf {
    dir.join(format!("ds{id}"))
}

/// A data server's objects, in its store and on disk.
struct DsObjects {
    objects: Arc<dyn ObjectStore>,
    dir: PathBuf,
}

impl DsObjects {
    /// The size of object `(file, stripe)` (0 when missing).
    fn object_size(&self, file: u64, stripe: u32) -> u64 {
        self.objects.size(ObjectId { file, stripe }).unwrap()
    }

    /// Whether object `(file, stripe)` exists.
    fn has_object(&self, file: u64, stripe: u32) -> bool {
        object_path(&self.dir, file, stripe).exists()
    }
}

/// A file created and opened for reading and writing by one client, with an RW layout.
struct Striped {
    fh: NfsFh4,
    fileid: u64,
    open: Stateid4,
    layout: Stateid4,
    body: Nfsv41FileLayout4,
    /// The data server of each stripe index.
    servers: Vec<u16>,
}

async fn create_striped(c: &mut Client, mds: &Mds, name: &str) -> Striped {
    let r = open_and_layoutget(c, name, Layoutiomode4::LAYOUTIOMODE4_RW).await;
    let (ok, body) = granted(&r);
    let fh = getfh_res(&r);
    let (fileid, _) = fileid_of(c, &fh).await;
    let set = mds.store().stripes(fileid).unwrap().expect("a stripe set");
    Striped {
        fh,
        fileid,
        open: open_res(&r).stateid,
        layout: ok.logr_stateid,
        servers: mds.stripe_servers(&set).unwrap(),
        body,
    }
}

impl Striped {
    /// A session with the data server of stripe index `index`, as a client of its own (a
    /// data server takes RECLAIM_COMPLETE once per client).
    async fn ds_client(&self, k: &Cluster, index: usize) -> Client {
        static N: AtomicU32 = AtomicU32::new(0);
        let n = N.fetch_add(1, Ordering::Relaxed);
        k.ds_client(self.servers[index], &format!("striped-{n}"))
            .await
    }

    /// Writes `data` at `offset` of stripe index `index`'s object, FILE_SYNC, through the
    /// layout's DS filehandle, as a client with the layout does.
    async fn write(&self, k: &Cluster, index: usize, offset: u64, data: &[u8]) {
        let mut d = self.ds_client(k, index).await;
        let r = d
            .call(vec![
                putfh(&self.body.nfl_fh_list[index]),
                write_op(
                    self.open,
                    offset,
                    StableHow4::FILE_SYNC4,
                    Bytes::copy_from_slice(data),
                ),
            ])
            .await;
        assert_eq!(write_res(&r).count as usize, data.len(), "{r:?}");
    }

    /// Reads `count` bytes at `offset` of stripe index `index`'s object through the layout:
    /// the result, or the status the data server answered.
    async fn try_read(
        &self,
        k: &Cluster,
        index: usize,
        offset: u64,
        count: u32,
    ) -> Result<ReadResOk, NfsStat4> {
        let mut d = self.ds_client(k, index).await;
        let r = d
            .call(vec![
                putfh(&self.body.nfl_fh_list[index]),
                read_op(self.open, offset, count),
            ])
            .await;
        match r.resarray.last() {
            Some(NfsResop4::Read(ReadRes::Ok(ok))) => Ok(ok.clone()),
            _ => Err(last_status(&r)),
        }
    }

    /// [`Striped::try_read`] that must succeed.
    async fn read(&self, k: &Cluster, index: usize, offset: u64, count: u32) -> ReadResOk {
        self.try_read(k, index, offset, count)
            .await
            .unwrap_or_else(|s| panic!("READ at {offset} of index {index}: {s:?}"))
    }

    /// The objects of the data server of stripe index `index`.
    fn ds(&self, k: &Cluster, index: usize) -> DsObjects {
        let id = self.servers[index];
        DsObjects {
            objects: k.ds_objects(id),
            dir: ds_dir(&k.config().data_dir, id),
        }
    }
}

/// (size, space_used) of a file as GETATTR reports them.
async fn sizes(c: &mut Client, fh: &NfsFh4) -> (u64, u64) {
    let a = attrs(c, fh, &[FATTR4_SIZE, FATTR4_SPACE_USED]).await;
    (a.size.unwrap(), a.space_used.unwrap())
}

/// The attributes `bits` of the file (GETATTR); panics if it fails.
async fn attrs(c: &mut Client, fh: &NfsFh4, bits: &[u32]) -> FileAttrs {
    let r = c
        .call(vec![
            putfh(fh),
            NfsArgop4::GetAttr(GetAttrArgs {
                attr_request: Bitmap4::from_bits(bits.iter().copied()),
            }),
        ])
        .await;
    let Some(NfsResop4::GetAttr(GetAttrRes::Ok(a))) = r.resarray.last() else {
        panic!("GETATTR failed: {r:?}")
    };
    FileAttrs::from_fattr(&a.obj_attributes).unwrap()
}

fn size_attr(size: u64) -> Fattr4 {
    fattr(&FileAttrs {
        size: Some(size),
        ..FileAttrs::default()
    })
}

/// SETATTR of the size under `stateid`: its status.
async fn set_size(c: &mut Client, fh: &NfsFh4, stateid: Stateid4, size: u64) -> NfsStat4 {
    let r = c
        .call(vec![
            putfh(fh),
            NfsArgop4::SetAttr(SetAttrArgs {
                stateid,
                obj_attributes: size_attr(size),
            }),
        ])
        .await;
    last_status(&r)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_clients_getattr_sees_the_size_written_through_a_layout_before_layoutcommit() {
    let dir = tempfile::tempdir().unwrap();
    let k = cluster(dir.path()).await;
    let mds = k.mds().clone();
    let mut writer = k.client("writer").await;
    let f = create_striped(&mut writer, &mds, "f").await;
    let mut reader = k.client("reader").await;
    assert_eq!(sizes(&mut reader, &f.fh).await, (0, 0));

    // 5000 bytes at the start of stripe index 1: file bytes [1 MiB, 1 MiB + 5000).
    f.write(&k, 1, 0, &pattern(5000)).await;
    let held = pfs_core::ObjectId {
        file: f.fileid,
        stripe: 1,
    };
    let allocated = f.ds(&k, 1).objects.space_used(held).unwrap();
    assert!(allocated >= 5000, "{allocated}");
    assert_eq!(
        sizes(&mut reader, &f.fh).await,
        (UNIT + 5000, allocated),
        "size and space used (the objects' blocks) from the data servers"
    );
    // A shorter object elsewhere does not shrink it.
    f.write(&k, 0, 0, &pattern(10)).await;
    assert_eq!(sizes(&mut reader, &f.fh).await.0, UNIT + 5000);
    // The MDS has recorded nothing yet: no LAYOUTCOMMIT.
    assert_eq!(mds.store().getattr(f.fileid).unwrap().size, 0);

    // VERIFY compares with the same size GETATTR reports.
    let verify = |size| {
        vec![
            putfh(&f.fh),
            NfsArgop4::Verify(VerifyArgs {
                obj_attributes: size_attr(size),
            }),
        ]
    };
    assert_eq!(
        last_status(&reader.call(verify(UNIT + 5000)).await),
        NfsStat4::NFS4_OK
    );
    assert_eq!(
        last_status(&reader.call(verify(0)).await),
        NfsStat4::NFS4ERR_NOT_SAME
    );

    // So does READDIR.
    let r = reader
        .call(vec![
            NfsArgop4::PutRootFh,
            NfsArgop4::ReadDir(ReadDirArgs {
                cookie: 0,
                cookieverf: [0; 8],
                dircount: 0,
                maxcount: 8192,
                attr_request: Bitmap4::from_bits([FATTR4_SIZE]),
            }),
        ])
        .await;
    let Some(NfsResop4::ReadDir(ReadDirRes::Ok(ok))) = r.resarray.last() else {
        panic!("READDIR failed: {r:?}")
    };
    let e = ok
        .reply
        .entries
        .iter()
        .find(|e| e.name.0 == "f")
        .expect("f listed");
    let a = FileAttrs::from_fattr(&e.attrs).unwrap();
    assert_eq!(a.size, Some(UNIT + 5000));
}

/// The store changes of one COMPOUND share one fsync (deferred durability, made durable
/// before the reply): OPEN creating a file plus LAYOUTGET is one commit, the create's, which
/// also fixes the stripe set and the layout-writes mark the LAYOUTGET would have committed
/// on its own (nothing deferred, no commit of the LAYOUTGET's); DELEGRETURN-less CLOSE +
/// REMOVE is one durable commit too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_compound_costs_one_fsync_whatever_it_changes() {
    let dir = tempfile::tempdir().unwrap();
    let k = cluster(dir.path()).await;
    let mds = k.mds().clone();
    let mut c = k.client("c").await;
    let before = mds.store().commit_stats();
    let r = open_and_layoutget(&mut c, "f", Layoutiomode4::LAYOUTIOMODE4_RW).await;
    let (_, _) = granted(&r);
    let after = mds.store().commit_stats();
    assert_eq!(after.commits - before.commits, 1, "{before:?} -> {after:?}");
    assert_eq!(
        after.deferred_commits, before.deferred_commits,
        "nothing deferred: {before:?} -> {after:?}"
    );
    assert_eq!(after.jobs - before.jobs, 1, "one store job: {after:?}");
    let fh = getfh_res(&r);
    let (fileid, _) = fileid_of(&mut c, &fh).await;
    assert!(mds.store().stripes(fileid).unwrap().is_some());
    assert!(
        mds.store().layout_writes().unwrap().contains(&fileid),
        "marked durably with the create"
    );
    assert!(
        mds.pnfs().settler().is_marked(fileid),
        "and known to the settler"
    );
    let r = c
        .call(vec![
            putfh(&fh),
            close_op(open_res(&r).stateid),
            NfsArgop4::PutRootFh,
            remove_op("f"),
        ])
        .await;
    assert_eq!(r.status, NfsStat4::NFS4_OK, "{r:?}");
    let removed = mds.store().commit_stats();
    // The orphan's deletion and the objects' removal come after the reply, deferred (their
    // bookkeeping is redone if lost): the unlink is the one fsync.
    assert_eq!(
        removed.commits - after.commits,
        1,
        "{after:?} -> {removed:?}"
    );
}

/// The create does the store work of the LAYOUTGET that follows it as that LAYOUTGET's
/// iomode asks, and an OPEN that finds the file folds nothing: a new file under a READ
/// layout gets its stripe set with the create and no layout-writes mark; the same OPEN +
/// LAYOUTGET RW again (UNCHECKED4, the file exists) is marked by the LAYOUTGET itself.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_create_folds_what_its_layoutget_needs_and_an_existing_file_is_marked_by_the_layoutget()
{
    let dir = tempfile::tempdir().unwrap();
    let k = cluster(dir.path()).await;
    let mds = k.mds().clone();
    let mut c = k.client("c").await;
    let before = mds.store().commit_stats();
    let r = open_and_layoutget(&mut c, "f", Layoutiomode4::LAYOUTIOMODE4_READ).await;
    let (_, _) = granted(&r);
    let after = mds.store().commit_stats();
    assert_eq!(
        (after.commits - before.commits, after.jobs - before.jobs),
        (1, 1),
        "{before:?} -> {after:?}"
    );
    let fh = getfh_res(&r);
    let (fileid, _) = fileid_of(&mut c, &fh).await;
    assert!(mds.store().stripes(fileid).unwrap().is_some());
    assert!(!mds.store().layout_writes().unwrap().contains(&fileid));
    assert!(!mds.pnfs().settler().is_marked(fileid));
    let r = open_and_layoutget(&mut c, "f", Layoutiomode4::LAYOUTIOMODE4_RW).await;
    let (_, _) = granted(&r);
    assert!(
        mds.store().layout_writes().unwrap().contains(&fileid),
        "marked by the LAYOUTGET"
    );
    assert!(mds.pnfs().settler().is_marked(fileid));
}

/// The file's mtime (GETATTR).
async fn mtime(c: &mut Client, fh: &NfsFh4) -> Nfstime4 {
    attrs(c, fh, &[FATTR4_TIME_MODIFY])
        .await
        .time_modify
        .unwrap()
}

/// The Linux client, holding a write delegation, flushes its writes through the layout before
/// a SETATTR of the times (`touch -d`, `cp -p`, `rsync -t`) but sends their LAYOUTCOMMIT
/// later, when the inode is written back (at `sync`), without a time of its own. That
/// LAYOUTCOMMIT records the size and keeps the mtime the client set (the guest's `utimes`
/// check saw it become "now"); a LAYOUTCOMMIT of writes after that moves it on again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_layoutcommit_after_the_writer_set_the_mtime_keeps_that_mtime() {
    let dir = tempfile::tempdir().unwrap();
    let k = cluster(dir.path()).await;
    let mds = k.mds().clone();
    let mut writer = k.client("writer").await;
    let f = create_striped(&mut writer, &mds, "f").await;
    f.write(&k, 0, 0, &pattern(2)).await;
    let set = Nfstime4 {
        seconds: 981_173_106,
        nseconds: 500_000_000,
    };
    let r = writer
        .call(vec![
            putfh(&f.fh),
            NfsArgop4::SetAttr(SetAttrArgs {
                stateid: f.open,
                obj_attributes: fattr(&FileAttrs {
                    time_modify_set: Some(Settime4::SetToClientTime(set)),
                    ..FileAttrs::default()
                }),
            }),
        ])
        .await;
    assert_eq!(last_status(&r), NfsStat4::NFS4_OK, "{r:?}");
    layoutcommit(&mut writer, &f, 1).await;
    assert_eq!(sizes(&mut writer, &f.fh).await.0, 2, "the size is recorded");
    assert_eq!(
        mtime(&mut writer, &f.fh).await,
        set,
        "the mtime the client set"
    );
    // Writes after that: their LAYOUTCOMMIT moves the mtime on.
    f.write(&k, 0, 2, &pattern(2)).await;
    layoutcommit(&mut writer, &f, 3).await;
    assert!(
        mtime(&mut writer, &f.fh).await.seconds > set.seconds,
        "a later LAYOUTCOMMIT sets the time of its writes"
    );
}

/// Once the writer LAYOUTCOMMITted, GETATTR answers the recorded size without asking the
/// data servers (issue 22: a stat costs no data-server call): bytes it writes after that show
/// at its next LAYOUTCOMMIT (RFC 8881 section 12.5.4), not before.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_the_writers_layoutcommit_getattr_answers_the_recorded_size() {
    let dir = tempfile::tempdir().unwrap();
    let k = cluster(dir.path()).await;
    let mds = k.mds().clone();
    let mut writer = k.client("writer").await;
    let f = create_striped(&mut writer, &mds, "f").await;
    let mut reader = k.client("reader").await;
    f.write(&k, 1, 0, &pattern(5000)).await;
    assert_eq!(
        sizes(&mut reader, &f.fh).await.0,
        UNIT + 5000,
        "asked before any report"
    );
    // The writer's own writes are its to report (the Linux client LAYOUTCOMMITs before it
    // asks): its GETATTR shows the recorded size, the data servers not asked.
    assert_eq!(
        sizes(&mut writer, &f.fh).await.0,
        0,
        "the writer's own view"
    );
    layoutcommit(&mut writer, &f, UNIT + 4999).await;
    // More through the layout, not reported yet: the data servers hold 2 MiB + 100.
    f.write(&k, 2, 0, &pattern(100)).await;
    assert_eq!(
        sizes(&mut reader, &f.fh).await.0,
        UNIT + 5000,
        "the recorded size, the data servers not asked"
    );
    layoutcommit(&mut writer, &f, 2 * UNIT + 99).await;
    assert_eq!(sizes(&mut reader, &f.fh).await.0, 2 * UNIT + 100);
    // A new RW layout of another client: asked again until that client reports.
    let mut other = k.client("other").await;
    let g = create_striped(&mut other, &mds, "f").await;
    g.write(&k, 0, UNIT, &pattern(10)).await; // file bytes [3 MiB, 3 MiB + 10)
    assert_eq!(sizes(&mut reader, &f.fh).await.0, 3 * UNIT + 10);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_data_server_that_is_down_leaves_getattr_with_the_recorded_size() {
    let dir = tempfile::tempdir().unwrap();
    let k = cluster(dir.path()).await;
    let mds = k.mds().clone();
    let mut c = k.client("writer").await;
    let f = create_striped(&mut c, &mds, "f").await;
    f.write(&k, 0, 0, &pattern(100)).await;
    let r = c
        .call(vec![
            putfh(&f.fh),
            layoutcommit_op(f.layout, Some(99), None),
        ])
        .await;
    assert_eq!(last_status(&r), NfsStat4::NFS4_OK, "{r:?}");
    // A second writer, which has not reported: GETATTR asks the data servers.
    let mut c2 = k.client("writer 2").await;
    let g = create_striped(&mut c2, &mds, "f").await;
    g.write(&k, 2, 0, &pattern(5000)).await;
    assert_eq!(sizes(&mut c, &f.fh).await.0, 2 * UNIT + 5000);

    let down = f.servers[2];
    k.kill_ds(down);
    // Whether the registry has noticed yet or the call finds the connection gone, GETATTR
    // answers with the size the MDS recorded.
    assert_eq!(sizes(&mut c, &f.fh).await.0, 100);
    k.until("the registry notices", || {
        mds.devices().control(down).is_none()
    })
    .await;
    assert_eq!(sizes(&mut c, &f.fh).await.0, 100);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn setattr_of_the_size_truncates_the_objects_on_the_data_servers() {
    let dir = tempfile::tempdir().unwrap();
    let k = cluster(dir.path()).await;
    let mds = k.mds().clone();
    let mut c = k.client("writer").await;
    let f = create_striped(&mut c, &mds, "f").await;
    let data = pattern(5000);
    f.write(&k, 0, 0, &data).await;
    f.write(&k, 1, 0, &data).await;

    assert_eq!(
        set_size(&mut c, &f.fh, f.open, 1000).await,
        NfsStat4::NFS4_OK
    );
    assert_eq!(f.ds(&k, 0).object_size(f.fileid, 0), 1000);
    assert_eq!(f.ds(&k, 1).object_size(f.fileid, 1), 0);
    assert_eq!(f.ds(&k, 2).object_size(f.fileid, 2), 0);
    assert_eq!(sizes(&mut c, &f.fh).await.0, 1000);
    assert_eq!(mds.store().getattr(f.fileid).unwrap().size, 1000);
    // Past the new size the data server answers nothing and eof (the file's first unit,
    // where object and file offsets agree: data_server::ops::answer_read) once the MDS told
    // it the new end; before it, the data that was there, and never a byte more.
    assert_eq!(ds_read_known(&f, &k, 0, 1000, 4096).await, (0, true));
    let kept = f.read(&k, 0, 0, 4096).await;
    assert_eq!((&kept.data[..], kept.eof), (&data[..1000], true));

    // Growing leaves holes: each object reaches its part of the new size, reading zeros.
    assert_eq!(
        set_size(&mut c, &f.fh, f.open, 3 * UNIT).await,
        NfsStat4::NFS4_OK
    );
    for i in 0..3 {
        assert_eq!(f.ds(&k, i).object_size(f.fileid, i as u32), UNIT, "{i}");
    }
    assert_eq!(sizes(&mut c, &f.fh).await.0, 3 * UNIT);
    let hole = f.read(&k, 1, 0, 5000).await;
    assert_eq!(
        hole.data,
        Bytes::from(vec![0u8; 5000]),
        "the old bytes are gone"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn open_with_truncate_empties_the_objects_even_before_any_layoutcommit() {
    let dir = tempfile::tempdir().unwrap();
    let k = cluster(dir.path()).await;
    let mds = k.mds().clone();
    let mut c = k.client("writer").await;
    let f = create_striped(&mut c, &mds, "f").await;
    f.write(&k, 0, 0, &pattern(5000)).await;
    f.write(&k, 2, 0, &pattern(300)).await;
    assert_eq!(
        mds.store().getattr(f.fileid).unwrap().size,
        0,
        "not committed"
    );

    let mut other = k.client("truncator").await;
    let r = other
        .call(vec![
            NfsArgop4::PutRootFh,
            open_op(
                by_name("f"),
                Openflag4::Create(Createhow4::Unchecked(size_attr(0))),
                OPEN4_SHARE_ACCESS_WRITE,
                OPEN4_SHARE_DENY_NONE,
                "t",
            ),
        ])
        .await;
    assert_eq!(r.status, NfsStat4::NFS4_OK, "{r:?}");
    for i in 0..3 {
        assert_eq!(f.ds(&k, i).object_size(f.fileid, i as u32), 0, "{i}");
    }
    assert_eq!(sizes(&mut c, &f.fh).await.0, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_truncate_while_a_data_server_is_down_is_delay_and_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let k = cluster(dir.path()).await;
    let mds = k.mds().clone();
    let mut c = k.client("writer").await;
    let f = create_striped(&mut c, &mds, "f").await;
    f.write(&k, 0, 0, &pattern(5000)).await;
    f.write(&k, 1, 0, &pattern(5000)).await;
    let r = c
        .call(vec![
            putfh(&f.fh),
            layoutcommit_op(f.layout, Some(UNIT + 4999), None),
        ])
        .await;
    assert_eq!(last_status(&r), NfsStat4::NFS4_OK, "{r:?}");

    let down = f.servers[2];
    k.kill_ds(down);
    k.until("the registry notices", || {
        mds.devices().control(down).is_none()
    })
    .await;
    assert_eq!(
        set_size(&mut c, &f.fh, f.open, 10).await,
        NfsStat4::NFS4ERR_DELAY
    );
    assert_eq!(mds.store().getattr(f.fileid).unwrap().size, UNIT + 5000);
    assert_eq!(f.ds(&k, 0).object_size(f.fileid, 0), 5000);
    assert_eq!(f.ds(&k, 1).object_size(f.fileid, 1), 5000);
    // OPEN with truncate is refused the same way, and leaves no open behind.
    let mut other = k.client("truncator").await;
    let r = other
        .call(vec![
            NfsArgop4::PutRootFh,
            open_op(
                by_name("f"),
                Openflag4::Create(Createhow4::Unchecked(size_attr(0))),
                OPEN4_SHARE_ACCESS_WRITE,
                OPEN4_SHARE_DENY_NONE,
                "t",
            ),
        ])
        .await;
    assert_eq!(last_status(&r), NfsStat4::NFS4ERR_DELAY);
    assert_eq!(mds.store().getattr(f.fileid).unwrap().size, UNIT + 5000);
    // A SETATTR that does not touch the size needs no data server.
    let r = c
        .call(vec![
            putfh(&f.fh),
            NfsArgop4::SetAttr(SetAttrArgs {
                stateid: Stateid4::default(),
                obj_attributes: mode_attrs(0o600),
            }),
        ])
        .await;
    assert_eq!(last_status(&r), NfsStat4::NFS4_OK, "{r:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn removing_a_striped_file_removes_its_objects_from_the_data_servers() {
    let dir = tempfile::tempdir().unwrap();
    let k = cluster(dir.path()).await;
    let mds = k.mds().clone();
    let mut c = k.client("writer").await;
    let f = create_striped(&mut c, &mds, "f").await;
    for i in 0..3 {
        f.write(&k, i, 0, &pattern(4096)).await;
        assert!(f.ds(&k, i).has_object(f.fileid, i as u32));
    }
    // An unstriped file beside it is not the data servers' business.
    let g = open_in_root(&mut c, "g", OPEN4_SHARE_ACCESS_BOTH, 0, "g").await;
    let r = c.call(vec![putfh(&f.fh), close_op(f.open)]).await;
    assert_eq!(r.status, NfsStat4::NFS4_OK, "{r:?}");
    let r = c.call(vec![putfh(&g.fh), close_op(g.stateid)]).await;
    assert_eq!(r.status, NfsStat4::NFS4_OK, "{r:?}");

    let r = c
        .call(vec![NfsArgop4::PutRootFh, remove_op("f"), remove_op("g")])
        .await;
    assert_eq!(r.status, NfsStat4::NFS4_OK, "{r:?}");
    k.until("the objects are gone", || {
        (0..3).all(|i| !f.ds(&k, i).has_object(f.fileid, i as u32))
    })
    .await;
    // The pass counts what it removed once it ends, after the queue is emptied.
    k.until("the queue is empty and the removal counted", || {
        mds.store().ds_removal_count().unwrap() == 0
            && mds
                .pnfs()
                .removals()
                .done
                .load(std::sync::atomic::Ordering::Relaxed)
                > 0
    })
    .await;
    let page = mds::net::metrics::render(&mds, mds.core().now());
    assert!(page.contains("pnfs_ds_removals_total 1\n"), "{page}");
    assert!(page.contains("pnfs_ds_removal_queue 0\n"), "{page}");
}

/// A REMOVE that is its COMPOUND's last change deletes a striped file nobody has open in
/// its own durable commit: no orphan, no second commit, its objects queued and removed.
/// The same file open (by its writer) stays an orphan until its CLOSE.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_striped_file_nobody_has_open_goes_with_its_remove_in_one_commit() {
    let dir = tempfile::tempdir().unwrap();
    let k = cluster(dir.path()).await;
    let mds = k.mds().clone();
    let mut c = k.client("writer").await;
    let f = create_striped(&mut c, &mds, "f").await;
    f.write(&k, 1, 0, &pattern(4096)).await;
    let r = c.call(vec![putfh(&f.fh), close_op(f.open)]).await;
    assert_eq!(r.status, NfsStat4::NFS4_OK, "{r:?}");
    let before = mds.store().commit_stats();
    let r = c.call(vec![NfsArgop4::PutRootFh, remove_op("f")]).await;
    assert_eq!(r.status, NfsStat4::NFS4_OK, "{r:?}");
    let after = mds.store().commit_stats();
    assert_eq!(after.commits - before.commits, 1, "one durable commit");
    assert_eq!(after.jobs - before.jobs, 1, "one job: {before:?} {after:?}");
    assert!(mds.store().orphans().unwrap().is_empty());
    assert!(matches!(
        mds.store().getattr(f.fileid),
        Err(mds::store::StoreError::Stale(_))
    ));
    let r = c.call(vec![putfh(&f.fh), NfsArgop4::GetFh]).await;
    assert_eq!(r.status, NfsStat4::NFS4ERR_STALE, "{r:?}");
    k.until("the object is gone", || {
        !f.ds(&k, 1).has_object(f.fileid, 1)
    })
    .await;
    assert!(!mds.pnfs().settler().is_marked(f.fileid));

    // Open: the REMOVE leaves an orphan, readable through the open, deleted at its CLOSE.
    let g = create_striped(&mut c, &mds, "g").await;
    g.write(&k, 0, 0, &pattern(100)).await;
    let r = c.call(vec![NfsArgop4::PutRootFh, remove_op("g")]).await;
    assert_eq!(r.status, NfsStat4::NFS4_OK, "{r:?}");
    assert_eq!(
        mds.store().orphans().unwrap().first().map(|o| o.0),
        Some(g.fileid)
    );
    assert!(g.ds(&k, 0).has_object(g.fileid, 0));
    let r = c.call(vec![putfh(&g.fh), close_op(g.open)]).await;
    assert_eq!(r.status, NfsStat4::NFS4_OK, "{r:?}");
    k.until("the orphan and its object are gone", || {
        mds.store().orphans().unwrap().is_empty() && !g.ds(&k, 0).has_object(g.fileid, 0)
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_removal_while_a_data_server_is_down_is_done_when_it_is_back_even_after_an_mds_restart() {
    let dir = tempfile::tempdir().unwrap();
    let mut k = cluster(dir.path()).await;

    let (fileid, down) = {
        let mds = k.mds().clone();
        let mut c = k.client("writer").await;
        let f = create_striped(&mut c, &mds, "f").await;
        for i in 0..3 {
            f.write(&k, i, 0, &pattern(4096)).await;
        }
        let r = c.call(vec![putfh(&f.fh), close_op(f.open)]).await;
        assert_eq!(r.status, NfsStat4::NFS4_OK, "{r:?}");
        let down = f.servers[1];
        k.kill_ds(down);
        k.until("the registry notices", || {
            mds.devices().control(down).is_none()
        })
        .await;

        let r = c.call(vec![NfsArgop4::PutRootFh, remove_op("f")]).await;
        assert_eq!(r.status, NfsStat4::NFS4_OK, "{r:?}");
        // The data servers that are up remove their objects; the one that is down stays
        // queued.
        k.until("the others acknowledged", || {
            mds.store()
                .ds_removals(0, 10)
                .unwrap()
                .iter()
                .map(|r| (r.file, r.servers.clone()))
                .eq([(f.fileid, vec![down])])
        })
        .await;
        for i in [0, 2] {
            assert!(!f.ds(&k, i).has_object(f.fileid, i as u32), "{i}");
        }
        let page = mds::net::metrics::render(&mds, mds.core().now());
        assert!(page.contains("pnfs_ds_removal_queue 1\n"), "{page}");
        (f.fileid, down)
    };
    // The MDS is gone; the object of the data server that was down is still on its disk.
    k.stop_mds().await;
    let down_dir = ds_dir(dir.path(), down);
    assert!(object_path(&down_dir, fileid, 1).exists());

    // A new boot (it waits for the data servers that run: the others).
    k.restart_mds().await;
    let mds = k.mds().clone();
    assert_eq!(
        mds.store().ds_removal_count().unwrap(),
        1,
        "the queue is durable"
    );
    k.until("the others up", || mds.devices().counts() == (2, 1))
        .await;
    k.restart_ds(down);
    k.until("the object is removed", || {
        !object_path(&down_dir, fileid, 1).exists() && mds.store().ds_removal_count().unwrap() == 0
    })
    .await;
}

/// fio sizes its file with ftruncate before its first write: that must not keep the file's
/// data on the MDS (it would never get a layout, and every byte would go through the MDS).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_sized_by_setattr_before_any_write_still_gets_a_layout() {
    let dir = tempfile::tempdir().unwrap();
    let k = cluster(dir.path()).await;
    let mds = k.mds().clone();
    let mut c = k.client("sizer").await;
    let r = c
        .call(vec![
            NfsArgop4::PutRootFh,
            open_op(
                by_name("sized"),
                unchecked(0o644),
                OPEN4_SHARE_ACCESS_BOTH,
                OPEN4_SHARE_DENY_NONE,
                "owner",
            ),
            NfsArgop4::GetFh,
        ])
        .await;
    let fh = getfh_res(&r);
    let open = open_res(&r).stateid;
    assert_eq!(
        set_size(&mut c, &fh, open, 64 << 20).await,
        NfsStat4::NFS4_OK
    );
    let fileid = mds
        .store()
        .lookup(mds::store::ROOT_FILEID, b"sized")
        .unwrap()
        .fileid;
    assert_eq!(
        mds.data().size(pfs_core::ObjectId::whole(fileid)).unwrap(),
        0
    );
    let r = c
        .call(vec![
            putfh(&fh),
            layoutget_op(Layoutiomode4::LAYOUTIOMODE4_RW, open),
        ])
        .await;
    granted(&r);
    assert!(mds.store().stripes(fileid).unwrap().is_some());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn io_through_a_layout_shows_in_the_data_servers_counters_on_the_mds_page_not_its_own() {
    let dir = tempfile::tempdir().unwrap();
    let k = cluster(dir.path()).await;
    let mds = k.mds().clone();
    let mut c = k.client("counted").await;
    let f = create_striped(&mut c, &mds, "f").await;
    f.write(&k, 2, 0, &pattern(100)).await;
    f.write(&k, 2, 100, &pattern(100)).await;
    assert_eq!(f.read(&k, 2, 0, 200).await.data.len(), 200);
    // The MDS learns a data server's counts from its next HEALTH reply (polled every 2 s).
    let ds = f.servers[2];
    let writes = |mds: &Mds| {
        mds.devices()
            .op_counts()
            .into_iter()
            .filter(|(id, _)| *id == ds)
            .flat_map(|(_, ops)| ops)
            .filter(|o| o.op == NfsOpnum4::OP_WRITE.0 && o.status == 0)
            .map(|o| o.count)
            .sum::<u64>()
    };
    let m = mds.clone();
    k.until("the data server's WRITEs counted", || writes(&m) == 2)
        .await;
    let page = mds::net::metrics::render(&mds, mds.core().now());
    assert!(
        page.contains(&format!(
            "pnfs_ds_ops_total{{ds=\"{ds}\",op=\"OP_WRITE\",status=\"ok\"}} 2\n"
        )),
        "{page}"
    );
    assert!(
        page.contains(&format!(
            "pnfs_ds_ops_total{{ds=\"{ds}\",op=\"OP_READ\",status=\"ok\"}} 1\n"
        )),
        "{page}"
    );
    // None of that was the MDS's own I/O.
    assert!(!page.contains("pnfs_ops_total{op=\"OP_WRITE\""), "{page}");
    assert!(!page.contains("pnfs_ops_total{op=\"OP_READ\""), "{page}");
    // The other data servers served no I/O.
    for other in f.servers.iter().filter(|&&s| s != ds) {
        assert!(
            !page.contains(&format!(
                "pnfs_ds_ops_total{{ds=\"{other}\",op=\"OP_WRITE\""
            )),
            "{page}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Sizes written through layouts without LAYOUTCOMMIT: settled with the data servers.
// ---------------------------------------------------------------------------------------------

/// The MDS was killed after a client wrote through its RW layout and before any LAYOUTCOMMIT
/// (the Linux client drops a pending one when it recovers from an MDS restart): the restarted
/// MDS answers the size the data servers hold, then records it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_size_written_through_a_layout_without_layoutcommit_survives_an_mds_restart() {
    let dir = tempfile::tempdir().unwrap();
    let mut k = cluster(dir.path()).await;
    let (fh, fileid) = {
        let mds = k.mds().clone();
        let mut c = k.client("writer").await;
        let f = create_striped(&mut c, &mds, "f").await;
        assert_eq!(
            mds.store().layout_writes().unwrap(),
            vec![f.fileid],
            "marked durably by the RW LAYOUTGET"
        );
        // File bytes [1 MiB, 1 MiB + 5000) on stripe index 1.
        f.write(&k, 1, 0, &pattern(5000)).await;
        assert_eq!(mds.store().getattr(f.fileid).unwrap().size, 0);
        (f.fh, f.fileid)
    };
    k.restart_mds().await;
    {
        let mds = k.mds().clone();
        let mut c = k.client("reader").await;
        assert_eq!(
            sizes(&mut c, &fh).await.0,
            UNIT + 5000,
            "GETATTR asks the data servers while the file is marked"
        );
        k.until("the size settled", || all_settled(&mds)).await;
        assert_eq!(mds.store().getattr(fileid).unwrap().size, UNIT + 5000);
        assert_eq!(sizes(&mut c, &fh).await.0, UNIT + 5000);
        let page = mds::net::metrics::render(&mds, mds.core().now());
        assert!(page.contains("pnfs_layout_sizes_grown_total 1\n"), "{page}");
        assert!(page.contains("pnfs_layout_write_marks 0\n"), "{page}");
    }
}

/// Many files left marked by an earlier boot are settled together: the sizes of all of them
/// asked of each data server in one OBJECT_SPACE call per batch, not one call per file and
/// data server (600 files: 3 x 600 calls before), and every written file gets its size.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_marked_files_are_settled_with_a_few_calls_per_data_server() {
    const FILES: usize = 600;
    let dir = tempfile::tempdir().unwrap();
    let mut k = cluster(dir.path()).await;
    let mut written = Vec::new();
    {
        let mds = k.mds().clone();
        let mut c = k.client("writer").await;
        let mut files = Vec::with_capacity(FILES);
        for i in 0..FILES {
            files.push(create_striped(&mut c, &mds, &format!("f{i}")).await);
        }
        // Every 100th file gets bytes on stripe index 1 (file bytes from 1 MiB); the others
        // stay empty.
        for (i, f) in files.iter().enumerate().step_by(100) {
            let len = 1000 + i;
            f.write(&k, 1, 0, &pattern(len)).await;
            written.push((f.fileid, UNIT + len as u64));
        }
        assert_eq!(mds.store().layout_writes().unwrap().len(), FILES);
    }
    k.restart_mds().await;
    let mds = k.mds().clone();
    k.until("every file settled", || all_settled(&mds)).await;
    for (fileid, size) in written {
        assert_eq!(mds.store().getattr(fileid).unwrap().size, size);
    }
    for id in 1..=3 {
        let calls = mds
            .devices()
            .control_calls()
            .get(id, nfs_proto::control::CtlProc::CTLPROC_OBJECT_SPACE);
        // Two batches of at most 512 files, in at most two rounds.
        assert!(
            (1..=4).contains(&calls),
            "data server {id}: {calls} OBJECT_SPACE calls"
        );
    }
    let page = mds::net::metrics::render(&mds, mds.core().now());
    assert!(
        page.contains("pnfs_ctl_calls_total{ds=\"1\",proc=\"OBJECT_SPACE\"}"),
        "{page}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn returning_an_rw_layout_without_layoutcommit_settles_the_size_with_the_data_servers() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new();
    let k = cluster_on(dir.path(), clock.shared()).await;
    let mds = k.mds().clone();
    let mut c = k.client("writer").await;
    let f = create_striped(&mut c, &mds, "f").await;
    // Object bytes [10, 100) of stripe index 2: file bytes up to 2 MiB + 100.
    f.write(&k, 2, 10, &pattern(90)).await;
    // While the layout is out, the mark stays whatever the settling task sees: two rounds
    // (the first may have begun before the write).
    settle_rounds(&k, &clock, &mds, 2).await;
    assert_eq!(mds.store().layout_writes().unwrap(), vec![f.fileid]);
    return_layout(&mut c, &f.fh, f.layout).await;
    // Its layout gone, the writer no longer counts its own unreported writes: before the
    // size settles, its GETATTR is answered from the data servers as anyone's.
    assert_eq!(sizes(&mut c, &f.fh).await.0, 2 * UNIT + 100);
    for round in 0.. {
        if mds.store().layout_writes().unwrap().is_empty() {
            break;
        }
        assert!(round < 10, "timed out: the size settled");
        settle_rounds(&k, &clock, &mds, 1).await;
    }
    assert_eq!(mds.store().getattr(f.fileid).unwrap().size, 2 * UNIT + 100);
}

/// A CLOSE or LAYOUTRETURN that takes a file's last RW layout without a LAYOUTCOMMIT has its
/// size settled early, without waiting for the next round (the clock here never moves, so
/// no round comes): a file created with its layout and closed unwritten, one written
/// through the layout and returned, and no data-server call for their GETATTRs after.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_layout_gone_without_layoutcommit_is_settled_without_waiting_for_a_round() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new();
    let k = cluster_on(dir.path(), clock.shared()).await;
    let mds = k.mds().clone();
    let rounds = mds.pnfs().settler().rounds.load(Ordering::Relaxed);
    let mut c = k.client("writer").await;
    let empty = create_striped(&mut c, &mds, "empty").await;
    let written = create_striped(&mut c, &mds, "written").await;
    written.write(&k, 2, 10, &pattern(90)).await;
    let r = c.call(vec![putfh(&empty.fh), close_op(empty.open)]).await;
    assert_eq!(r.status, NfsStat4::NFS4_OK, "{r:?}");
    return_layout(&mut c, &written.fh, written.layout).await;
    k.until("both settled", || all_settled(&mds)).await;
    assert_eq!(
        mds.pnfs().settler().rounds.load(Ordering::Relaxed),
        rounds,
        "no full round went by"
    );
    assert_eq!(
        mds.store().getattr(written.fileid).unwrap().size,
        2 * UNIT + 100
    );
    let asked = || {
        (1..=3)
            .map(|id| {
                mds.devices()
                    .control_calls()
                    .get(id, nfs_proto::control::CtlProc::CTLPROC_OBJECT_SPACE)
            })
            .sum::<u64>()
    };
    let before = asked();
    assert_eq!(sizes(&mut c, &empty.fh).await.0, 0);
    assert_eq!(sizes(&mut c, &written.fh).await.0, 2 * UNIT + 100);
    assert_eq!(
        asked(),
        before,
        "GETATTR of settled files asks no data server"
    );
}

/// Whether every file written through a layout is settled: its mark gone from the store
/// and then from the settler's memory, which GETATTR and the metrics read (a moment later).
fn all_settled(mds: &Mds) -> bool {
    mds.store().layout_writes().unwrap().is_empty() && mds.pnfs().settler().marked_count() == 0
}

/// LAYOUTRETURN of layout `layout` of `fh`, which must succeed.
async fn return_layout(c: &mut Client, fh: &NfsFh4, layout: Stateid4) {
    let r = c
        .call(vec![
            putfh(fh),
            layoutreturn_op(Layoutiomode4::LAYOUTIOMODE4_ANY, return_file(layout)),
        ])
        .await;
    assert_eq!(r.status, NfsStat4::NFS4_OK, "{r:?}");
}

/// Moves `clock` on by a settling round (a second) `n` times, each time waiting until the
/// MDS's settling task has done one more round. The task takes its next wait before it
/// counts a round, so a move made after the count moved is never missed; of two rounds, the
/// second began after this was called.
async fn settle_rounds(k: &Cluster, clock: &ManualClock, mds: &Mds, n: u32) {
    let rounds = || mds.pnfs().settler().rounds.load(Ordering::Relaxed);
    for _ in 0..n {
        let done = rounds();
        advance(clock, Duration::from_secs(1)).await;
        k.until("a settling round", || rounds() > done).await;
    }
}

/// After a restart, a LAYOUTCOMMIT under the layout stateid of the earlier boot (one in
/// flight when the MDS went down, resent by the client after its recovery) is taken from a
/// client that has the file open for writing, and a LAYOUTRETURN of it is simply done.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_layout_stateid_of_an_earlier_boot_commits_for_a_writer_and_returns_as_done() {
    let dir = tempfile::tempdir().unwrap();
    let mut k = cluster(dir.path()).await;
    let (fh, fileid, old_layout) = {
        let mds = k.mds().clone();
        let mut c = k.client("writer").await;
        let f = create_striped(&mut c, &mds, "f").await;
        f.write(&k, 0, 0, &pattern(5000)).await;
        (f.fh, f.fileid, f.layout)
    };
    k.restart_mds().await;
    {
        let mds = k.mds().clone();
        let mut c = k.client("back").await;
        let commit = |fh: &NfsFh4| vec![putfh(fh), layoutcommit_op(old_layout, Some(9999), None)];
        let open = |access, who| {
            vec![
                putfh(&fh),
                open_op(OpenClaim4::Fh, Openflag4::NoCreate, access, 0, who),
            ]
        };
        // Open for reading only: not a writer.
        let r = c.call(open(OPEN4_SHARE_ACCESS_READ, "r")).await;
        assert_eq!(r.status, NfsStat4::NFS4_OK, "{r:?}");
        let r = c.call(commit(&fh)).await;
        assert_eq!(last_status(&r), NfsStat4::NFS4ERR_BAD_STATEID, "{r:?}");
        // Open for writing: the commit is taken.
        let r = c.call(open(OPEN4_SHARE_ACCESS_BOTH, "w")).await;
        assert_eq!(r.status, NfsStat4::NFS4_OK, "{r:?}");
        let r = c.call(commit(&fh)).await;
        assert_eq!(r.status, NfsStat4::NFS4_OK, "{r:?}");
        assert_eq!(mds.store().getattr(fileid).unwrap().size, 10_000);
        return_layout(&mut c, &fh, old_layout).await;
    }
}

/// (bytes, eof) of a READ through the layout ([`Striped::try_read`]).
async fn ds_read(
    f: &Striped,
    k: &Cluster,
    index: usize,
    offset: u64,
    count: u32,
) -> Result<(usize, bool), NfsStat4> {
    let ok = f.try_read(k, index, offset, count).await?;
    Ok((ok.data.len(), ok.eof))
}

/// LAYOUTCOMMIT of `f` with `last` as the last byte written: the size becomes `last + 1`.
async fn layoutcommit(c: &mut Client, f: &Striped, last: u64) {
    let r = c
        .call(vec![
            putfh(&f.fh),
            layoutcommit_op(f.layout, Some(last), None),
        ])
        .await;
    assert_eq!(r.status, NfsStat4::NFS4_OK, "{r:?}");
}

/// Reads through the layout until the data server answers something other than
/// NFS4ERR_NXIO (it learns where the file ends from the MDS in the background).
async fn ds_read_known(
    f: &Striped,
    k: &Cluster,
    index: usize,
    offset: u64,
    count: u32,
) -> (usize, bool) {
    let got = Cell::new(None);
    k.until_async("the data server learns where the file ends", || async {
        match ds_read(f, k, index, offset, count).await {
            Ok(read) => got.set(Some(read)),
            Err(NfsStat4::NFS4ERR_NXIO) => {}
            Err(s) => panic!("READ at {offset} of index {index}: {s:?}"),
        }
        got.get().is_some()
    })
    .await;
    got.get().expect("read")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn data_servers_read_a_striped_file_to_its_end_and_never_past_it() {
    let dir = tempfile::tempdir().unwrap();
    let k = cluster(dir.path()).await;
    let mds = k.mds().clone();
    let mut c = k.client("eof").await;

    // A small file: all in the first unit of index 0, where object and file offsets agree.
    let small = create_striped(&mut c, &mds, "small").await;
    small.write(&k, 0, 0, &pattern(100)).await;
    layoutcommit(&mut c, &small, 99).await;
    assert_eq!(ds_read_known(&small, &k, 0, 0, 4096).await, (100, true));
    assert_eq!(ds_read(&small, &k, 0, 100, 10).await, Ok((0, true)));
    assert_eq!(ds_read(&small, &k, 0, 8192, 4096).await, Ok((0, true)));
    // Another index holds nothing of it and cannot say eof: the client asks the MDS.
    assert_eq!(
        ds_read(&small, &k, 1, 0, 4096).await,
        Err(NfsStat4::NFS4ERR_NXIO)
    );

    // 5 MiB + 123 bytes: unit 5 (index 2, object offset 1 MiB) holds the last 123 bytes,
    // units 1 to 4 are holes but for 100 bytes of unit 0.
    let big = create_striped(&mut c, &mds, "big").await;
    big.write(&k, 0, 0, &pattern(100)).await;
    big.write(&k, 2, UNIT, &pattern(123)).await;
    layoutcommit(&mut c, &big, 5 * UNIT + 122).await;
    // Holes inside the file read as zeros from the data servers.
    assert_eq!(ds_read_known(&big, &k, 0, 0, 8192).await, (8192, false));
    assert_eq!(ds_read(&big, &k, 1, UNIT, 8192).await, Ok((8192, false)));
    // The file's end in index 2's object (1 MiB + 123) is past its first unit, where the
    // client would misjudge an eof: the data server sends the READ to the MDS ...
    assert_eq!(
        ds_read(&big, &k, 2, UNIT, 1 << 20).await,
        Err(NfsStat4::NFS4ERR_NXIO)
    );
    assert_eq!(
        ds_read(&big, &k, 2, 2 * UNIT, 4096).await,
        Err(NfsStat4::NFS4ERR_NXIO)
    );
    // ... which answers the 123 bytes and eof.
    let r = c
        .call(vec![putfh(&big.fh), read_op(big.open, 5 * UNIT, 1 << 20)])
        .await;
    let ok = read_res(&r);
    assert_eq!((ok.data.len(), ok.eof), (123, true));
    assert_eq!(&ok.data[..], &pattern(123)[..]);

    // A shrinking truncate: never the old end again, and the new one once the MDS tells.
    assert_eq!(
        set_size(&mut c, &small.fh, small.open, 50).await,
        NfsStat4::NFS4_OK
    );
    match ds_read(&small, &k, 0, 0, 4096).await {
        Ok(got) => assert_eq!(got, (50, true)),
        Err(s) => assert_eq!(s, NfsStat4::NFS4ERR_NXIO),
    }
    assert_eq!(ds_read_known(&small, &k, 0, 0, 4096).await, (50, true));
}

/// A new empty file's LAYOUTGET, in the COMPOUND of the OPEN that made it, tells the data
/// servers nothing (one control call fewer per data server on every create): a READ there
/// goes to the MDS. Its first LAYOUTCOMMIT tells them where it ends.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_empty_files_layoutget_sends_no_size_hint_and_its_layoutcommit_does() {
    let dir = tempfile::tempdir().unwrap();
    let k = cluster(dir.path()).await;
    let mds = k.mds().clone();
    let mut c = k.client("hints").await;
    let known = |f: &Striped, index: usize| {
        k.data_server(f.servers[index])
            .expect("data server")
            .ends()
            .end(ObjectId {
                file: f.fileid,
                stripe: index as u32,
            })
    };
    let f = create_striped(&mut c, &mds, "new").await;
    // The hint went out in the background: give it time it would have had.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        (0..3).all(|i| known(&f, i).is_none()),
        "no hint for a new file"
    );
    assert_eq!(
        ds_read(&f, &k, 0, 0, 4096).await,
        Err(NfsStat4::NFS4ERR_NXIO),
        "unknown end: to the MDS"
    );
    f.write(&k, 0, 0, &pattern(100)).await;
    layoutcommit(&mut c, &f, 99).await;
    assert_eq!(ds_read_known(&f, &k, 0, 0, 4096).await, (100, true));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_through_the_mds_at_the_end_sees_bytes_written_through_a_layout_before_layoutcommit()
{
    let dir = tempfile::tempdir().unwrap();
    let k = cluster(dir.path()).await;
    let mds = k.mds().clone();
    let mut writer = k.client("writer").await;
    let f = create_striped(&mut writer, &mds, "f").await;
    // 5000 bytes at the start of stripe index 1: file bytes [1 MiB, 1 MiB + 5000), no
    // LAYOUTCOMMIT yet (the recorded size is 0).
    f.write(&k, 1, 0, &pattern(5000)).await;
    let r = writer
        .call(vec![putfh(&f.fh), read_op(f.open, UNIT, 8192)])
        .await;
    let ok = read_res(&r);
    assert_eq!((ok.data.len(), ok.eof), (5000, true));
    assert_eq!(&ok.data[..], &pattern(5000)[..]);
}

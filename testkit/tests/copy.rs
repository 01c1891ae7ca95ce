//! Server-side COPY, OFFLOAD_STATUS, OFFLOAD_CANCEL and CLONE (RFC 7862) on the in-memory
//! cluster, with everything on disk as in production (metadata in redb, objects on the local
//! backend): an MDS without data servers (data in its own store) and a cluster of three data
//! servers (files striped, dense packing): the bytes arrive, holes stay
//! holes, asynchronous copies end with CB_OFFLOAD, and on the cluster the data servers copy
//! their own objects.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use mds::Mds;
use nfs_proto::nfs4::callback::OffloadInfo4;
use nfs_proto::nfs4::*;
use pfs_core::{LocalStore, ObjectStore};
use testkit::cluster::{Cluster, StoreKind};
use testkit::prelude::*;

const MIB: u64 = 1 << 20;
const BOTH: u32 = OPEN4_SHARE_ACCESS_BOTH;

/// An MDS without data servers (a 10 s lease), or a three-server cluster with layouts on,
/// everything under `dir`: the metadata in redb, the MDS's data under `data`, data server
/// `id`'s objects under `ds<id>`.
struct Setup {
    k: Cluster,
    mds: Arc<Mds>,
    striped: bool,
    dir: tempfile::TempDir,
}

async fn setup(striped: bool) -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_path_buf();
    let k = Cluster::builder()
        .data_servers(if striped { 3 } else { 0 })
        .lease(if striped { 30 } else { 10 })
        .store(StoreKind::Redb(dir.path().to_path_buf()))
        .ds_store(move |id| {
            let store = LocalStore::open(ds_dir(&root, id)).expect("object store");
            Arc::new(store) as Arc<dyn ObjectStore>
        })
        .configure(move |cfg| cfg.cluster.layouts = striped)
        .start()
        .await;
    let mds = k.mds().clone();
    Setup {
        k,
        mds,
        striped,
        dir,
    }
}

/// Where data server `id` of the cluster under `dir` keeps its objects.
fn ds_dir(dir: &Path, id: u16) -> PathBuf {
    dir.join(format!("ds{id}"))
}

/// I/O size of the test client (its channel's request and reply size limits).
const IO: u64 = 256 << 10;

/// Writes `data` at `offset` through the MDS, FILE_SYNC, in WRITEs of [`IO`].
async fn put(c: &mut Client, f: &Opened, offset: u64, data: &[u8]) {
    for (i, chunk) in data.chunks(IO as usize).enumerate() {
        let at = offset + i as u64 * IO;
        let r = c
            .call(vec![
                putfh(&f.fh),
                write_op(
                    f.stateid,
                    at,
                    StableHow4::FILE_SYNC4,
                    Bytes::copy_from_slice(chunk),
                ),
            ])
            .await;
        assert_eq!(write_res(&r).count as usize, chunk.len());
    }
}

/// The whole file through the MDS.
async fn get(c: &mut Client, f: &Opened) -> Vec<u8> {
    let (_, size) = fileid_of(c, &f.fh).await;
    let mut out = Vec::with_capacity(size as usize);
    while (out.len() as u64) < size {
        let r = c
            .call(vec![
                putfh(&f.fh),
                read_op(f.stateid, out.len() as u64, IO as u32),
            ])
            .await;
        let ok = read_res(&r);
        assert!(!ok.data.is_empty(), "short read at {}", out.len());
        out.extend_from_slice(&ok.data);
    }
    out
}

fn copy_op(src: Stateid4, dst: Stateid4, so: u64, d: u64, count: u64, sync: bool) -> NfsArgop4 {
    NfsArgop4::Copy(CopyArgs {
        ca_src_stateid: src,
        ca_dst_stateid: dst,
        ca_src_offset: so,
        ca_dst_offset: d,
        ca_count: count,
        ca_consecutive: true,
        ca_synchronous: sync,
        ca_source_server: Vec::new(),
    })
}

/// PUTFH src, SAVEFH, PUTFH dst, `op`.
async fn on_pair(c: &mut Client, src: &Opened, dst: &Opened, op: NfsArgop4) -> Compound4Res {
    c.call(vec![putfh(&src.fh), NfsArgop4::SaveFh, putfh(&dst.fh), op])
        .await
}

fn copy_res(r: &Compound4Res) -> Result<CopyResOk, NfsStat4> {
    match r.resarray.last() {
        Some(NfsResop4::Copy(CopyRes::Ok(ok))) => Ok(ok.clone()),
        Some(NfsResop4::Copy(res)) => Err(res.status()),
        _ => Err(r.status),
    }
}

async fn copy(c: &mut Client, src: &Opened, dst: &Opened, count: u64, sync: bool) -> CopyResOk {
    let r = on_pair(
        c,
        src,
        dst,
        copy_op(src.stateid, dst.stateid, 0, 0, count, sync),
    )
    .await;
    copy_res(&r).unwrap_or_else(|s| panic!("COPY: {s:?}: {r:?}"))
}

/// A deterministic pattern of `len` bytes, different for each `seed`.
fn data(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31) ^ (i >> 13) as u8 ^ seed)
        .collect()
}

/// The data servers' COPY byte counters, once they add up to `at_least` (the MDS learns them
/// from the HEALTH replies it polls for).
async fn ds_copy_bytes(s: &Setup, at_least: u64) -> u64 {
    let total = || -> u64 { s.mds.devices().copy_bytes().iter().map(|(_, n)| n).sum() };
    s.k.until("the data servers' copy counters", || total() >= at_least)
        .await;
    total()
}

async fn sync_copy_moves_every_byte(striped: bool) {
    let s = setup(striped).await;
    let mut c = s.k.client("copier").await;
    let src = open_in_root(&mut c, "src", BOTH, 0, "o").await;
    let dst = open_in_root(&mut c, "dst", BOTH, 0, "o").await;
    let body = data((3 * MIB + 123) as usize, 1);
    put(&mut c, &src, 0, &body).await;
    let ok = copy(&mut c, &src, &dst, 0, true).await;
    assert!(ok.cr_requirements.cr_synchronous);
    assert!(ok.cr_response.wr_callback_id.is_empty());
    assert_eq!(ok.cr_response.wr_count, body.len() as u64);
    assert_eq!(ok.cr_response.wr_committed, StableHow4::FILE_SYNC4);
    let got = get(&mut c, &dst).await;
    assert_eq!(blake3::hash(&got), blake3::hash(&body));
    let counters = s.mds.copies().counters();
    assert_eq!((counters.sync, counters.bytes), (1, body.len() as u64));
    assert_eq!(counters.streamed_bytes, 0, "nothing through the MDS");
    if striped {
        let (dst_id, _) = fileid_of(&mut c, &dst.fh).await;
        assert!(s.mds.store().stripes(dst_id).unwrap().is_some());
        // Every byte moved inside the data servers.
        assert_eq!(
            ds_copy_bytes(&s, body.len() as u64).await,
            body.len() as u64
        );
        let page = mds::net::metrics::render(&s.mds, s.mds.core().now());
        assert!(
            page.contains("pnfs_ds_copy_bytes_total{ds=\"1\"}"),
            "{page}"
        );
    }
    // A COMMIT after the copy answers the verifier the copy did.
    let r = c.call(vec![putfh(&dst.fh), commit_op(0, 0)]).await;
    let Some(NfsResop4::Commit(CommitRes::Ok(k))) = r.resarray.last() else {
        panic!("{r:?}")
    };
    assert_eq!(k.writeverf, ok.cr_response.wr_writeverf);
}

#[tokio::test]
async fn sync_copy_moves_every_byte_unstriped() {
    sync_copy_moves_every_byte(false).await;
}

#[tokio::test]
async fn sync_copy_moves_every_byte_striped_inside_the_data_servers() {
    sync_copy_moves_every_byte(true).await;
}

async fn async_copy_ends_with_cb_offload(striped: bool) {
    let s = setup(striped).await;
    let cb = Arc::new(CbClient::default());
    let mut c =
        s.k.client_with_back_channel("async-copier", cb.clone())
            .await;
    let src = open_in_root(&mut c, "src", BOTH, 0, "o").await;
    let dst = open_in_root(&mut c, "dst", BOTH, 0, "o").await;
    let body = data((20 * MIB + 5) as usize, 2);
    put(&mut c, &src, 0, &body).await;
    let ok = copy(&mut c, &src, &dst, 0, false).await;
    assert!(!ok.cr_requirements.cr_synchronous);
    let [id] = ok.cr_response.wr_callback_id[..] else {
        panic!("no callback id: {ok:?}")
    };
    let offloads = cb.wait_offloads(1, Duration::from_secs(30)).await;
    assert_eq!(offloads[0].coa_stateid, id);
    assert_eq!(offloads[0].coa_fh, dst.fh);
    let OffloadInfo4::Ok(w) = &offloads[0].coa_offload_info else {
        panic!("copy failed: {:?}", offloads[0])
    };
    assert_eq!(w.wr_count, body.len() as u64);
    assert_eq!(w.wr_committed, StableHow4::FILE_SYNC4);
    // The size was recorded before CB_OFFLOAD.
    assert_eq!(fileid_of(&mut c, &dst.fh).await.1, body.len() as u64);
    assert_eq!(blake3::hash(&get(&mut c, &dst).await), blake3::hash(&body));
    // OFFLOAD_STATUS after the end: complete, with the count.
    let r = c
        .call(vec![NfsArgop4::OffloadStatus(OffloadStatusArgs {
            osa_stateid: id,
        })])
        .await;
    let Some(NfsResop4::OffloadStatus(OffloadStatusRes::Ok(st))) = r.resarray.last() else {
        panic!("{r:?}")
    };
    assert_eq!(st.osr_count, body.len() as u64);
    assert_eq!(st.osr_complete, vec![NfsStat4::NFS4_OK]);
    assert_eq!(s.mds.copies().counters().asynchronous, 1);
    if striped {
        assert_eq!(s.mds.copies().counters().streamed_bytes, 0);
        assert!(ds_copy_bytes(&s, body.len() as u64).await >= body.len() as u64);
    }
}

#[tokio::test]
async fn async_copy_ends_with_cb_offload_unstriped() {
    async_copy_ends_with_cb_offload(false).await;
}

#[tokio::test]
async fn async_copy_ends_with_cb_offload_striped() {
    async_copy_ends_with_cb_offload(true).await;
}

/// Blocks the files of `paths` hold on disk (512-byte units).
fn blocks(paths: &[std::path::PathBuf]) -> u64 {
    use std::os::unix::fs::MetadataExt;
    paths
        .iter()
        .filter_map(|p| std::fs::metadata(p).ok())
        .map(|m| m.blocks())
        .sum()
}

/// Where the objects of `fileid` live: the MDS's own object, or each data server's.
fn object_files(s: &Setup, fileid: u64) -> Vec<std::path::PathBuf> {
    if !s.striped {
        return vec![s
            .mds
            .cfg()
            .data_dir
            .join("data/objects")
            .join(pfs_core::ObjectId::whole(fileid).relative_path())];
    }
    (1..=3)
        .flat_map(|id| {
            let d = ds_dir(s.dir.path(), id);
            (0..3).map(move |i| testkit::loopback::ds::object_path(&d, fileid, i))
        })
        .collect()
}

async fn holes_stay_holes(striped: bool) {
    let s = setup(striped).await;
    let mut c = s.k.client("sparse").await;
    let src = open_in_root(&mut c, "src", BOTH, 0, "o").await;
    let dst = open_in_root(&mut c, "dst", BOTH, 0, "o").await;
    // 1 MiB of data, 30 MiB of hole, 1 MiB of data.
    let head = data(MIB as usize, 3);
    let tail = data(MIB as usize, 4);
    put(&mut c, &src, 0, &head).await;
    put(&mut c, &src, 31 * MIB, &tail).await;
    let ok = copy(&mut c, &src, &dst, 0, true).await;
    assert_eq!(ok.cr_response.wr_count, 32 * MIB);
    let got = get(&mut c, &dst).await;
    let mut want = vec![0u8; 32 * MIB as usize];
    want[..MIB as usize].copy_from_slice(&head);
    want[31 * MIB as usize..].copy_from_slice(&tail);
    assert!(got == want, "copied bytes differ");
    let (dst_id, _) = fileid_of(&mut c, &dst.fh).await;
    let used = blocks(&object_files(&s, dst_id)) * 512;
    assert!(
        used > 0 && used < 8 * MIB,
        "{used} bytes on disk for 2 MiB of data"
    );
}

#[tokio::test]
async fn holes_stay_holes_unstriped() {
    holes_stay_holes(false).await;
}

#[tokio::test]
async fn holes_stay_holes_striped() {
    holes_stay_holes(true).await;
}

/// A source of `len` bytes written straight into the MDS's own store (fast), its size set
/// by one WRITE of its last byte.
async fn big_local_source(s: &Setup, c: &mut Client, len: u64) -> Opened {
    let src = open_in_root(c, "big", BOTH, 0, "o").await;
    put(c, &src, len - 1, b"z").await;
    let (fileid, _) = fileid_of(c, &src.fh).await;
    let chunk = Bytes::from(data(16 * MIB as usize, 9));
    let id = pfs_core::ObjectId::whole(fileid);
    let store = s.mds.data().clone();
    tokio::task::spawn_blocking(move || {
        let mut at = 0;
        while at + 16 * MIB < len {
            store
                .write(
                    id,
                    at,
                    std::slice::from_ref(&chunk),
                    pfs_core::Stability::Unstable,
                )
                .unwrap();
            at += 16 * MIB;
        }
        store.commit(id, 0, 0).unwrap();
    })
    .await
    .unwrap();
    src
}

fn offload_status_op(id: Stateid4) -> NfsArgop4 {
    NfsArgop4::OffloadStatus(OffloadStatusArgs { osa_stateid: id })
}

#[tokio::test]
async fn offload_status_reports_progress_while_a_copy_runs() {
    let s = setup(false).await;
    let mut c = s.k.client("poller").await;
    let len = 512 * MIB;
    let src = big_local_source(&s, &mut c, len).await;
    let dst = open_in_root(&mut c, "dst", BOTH, 0, "o").await;
    let ok = copy(&mut c, &src, &dst, 0, false).await;
    let id = ok.cr_response.wr_callback_id[0];
    let mut seen = Vec::new();
    let poll = async {
        loop {
            let r = c.call(vec![offload_status_op(id)]).await;
            let Some(NfsResop4::OffloadStatus(OffloadStatusRes::Ok(st))) = r.resarray.last() else {
                panic!("{r:?}")
            };
            assert!(st.osr_count <= len);
            if let Some(last) = seen.last() {
                assert!(st.osr_count >= *last, "progress went back");
            }
            seen.push(st.osr_count);
            if !st.osr_complete.is_empty() {
                assert_eq!(st.osr_complete, vec![NfsStat4::NFS4_OK]);
                assert_eq!(st.osr_count, len);
                break;
            }
            // The copy's task runs beside this one: let it on before asking again.
            tokio::task::yield_now().await;
        }
    };
    tokio::time::timeout(Duration::from_secs(120), poll)
        .await
        .expect("copy never finished");
    assert!(
        seen[0] < len,
        "the first OFFLOAD_STATUS came after the end: {seen:?}"
    );
    assert_eq!(fileid_of(&mut c, &dst.fh).await.1, len);
    // Without a back channel there was no CB_OFFLOAD to send; OFFLOAD_STATUS told it all.
    // Another client cannot ask about it.
    let mut other = s.k.client("stranger").await;
    let r = other.call(vec![offload_status_op(id)]).await;
    assert_eq!(last_status(&r), NfsStat4::NFS4ERR_BAD_STATEID);
}

#[tokio::test]
async fn offload_cancel_stops_a_copy_and_forgets_it() {
    let s = setup(false).await;
    let cb = Arc::new(CbClient::default());
    let mut c = s.k.client_with_back_channel("canceller", cb.clone()).await;
    let len = 512 * MIB;
    let src = big_local_source(&s, &mut c, len).await;
    let dst = open_in_root(&mut c, "dst", BOTH, 0, "o").await;
    let ok = copy(&mut c, &src, &dst, 0, false).await;
    let id = ok.cr_response.wr_callback_id[0];
    let r = c
        .call(vec![NfsArgop4::OffloadCancel(OffloadCancelArgs {
            oca_stateid: id,
        })])
        .await;
    assert_eq!(last_status(&r), NfsStat4::NFS4_OK, "{r:?}");
    let r = c.call(vec![offload_status_op(id)]).await;
    assert_eq!(last_status(&r), NfsStat4::NFS4ERR_BAD_STATEID);
    let r = c
        .call(vec![NfsArgop4::OffloadCancel(OffloadCancelArgs {
            oca_stateid: id,
        })])
        .await;
    assert_eq!(last_status(&r), NfsStat4::NFS4ERR_BAD_STATEID);
    s.k.until("the copy did not stop", || {
        s.mds.copies().counters().cancelled != 0
    })
    .await;
    let size = fileid_of(&mut c, &dst.fh).await.1;
    assert!(size < len, "the copy ran to the end ({size})");
    // A CB_OFFLOAD would follow the copy's end at once: give it time to come (a real
    // sleep; its absence is what is checked, and no state shows it will not come: the
    // `cancelled` counter moves in `Copies::finish`, before the copy's task decides about
    // CB_OFFLOAD, so a task that sent one anyway would still be on its way to it).
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        cb.offloads.lock().unwrap().is_empty(),
        "CB_OFFLOAD after a cancel"
    );
}

#[tokio::test]
async fn copy_checks_stateids_ranges_and_what_it_does_not_offer() {
    let s = setup(false).await;
    let mut c = s.k.client("checker").await;
    let src = open_in_root(&mut c, "src", BOTH, 0, "o").await;
    let dst = open_in_root(&mut c, "dst", BOTH, 0, "o").await;
    put(&mut c, &src, 0, &data(100_000, 5)).await;
    let status = |r: &Compound4Res| copy_res(r).err().unwrap_or(NfsStat4::NFS4_OK);
    let forged = Stateid4 {
        seqid: 1,
        other: [1, 3, 0, 1, 0, 0, 0, 99, 1, 2, 3, 4],
    };
    let r = on_pair(
        &mut c,
        &src,
        &dst,
        copy_op(forged, dst.stateid, 0, 0, 0, true),
    )
    .await;
    assert_eq!(status(&r), NfsStat4::NFS4ERR_BAD_STATEID);
    let r = on_pair(
        &mut c,
        &src,
        &dst,
        copy_op(src.stateid, forged, 0, 0, 0, true),
    )
    .await;
    assert_eq!(status(&r), NfsStat4::NFS4ERR_BAD_STATEID);
    // A read-only open does not allow writing the destination.
    let ro = open_in_root(&mut c, "ro", OPEN4_SHARE_ACCESS_READ, 0, "p").await;
    let r = on_pair(
        &mut c,
        &src,
        &ro,
        copy_op(src.stateid, ro.stateid, 0, 0, 0, true),
    )
    .await;
    assert_eq!(status(&r), NfsStat4::NFS4ERR_OPENMODE);
    // Past the source's end, and overlapping ranges of one file.
    let r = on_pair(
        &mut c,
        &src,
        &dst,
        copy_op(src.stateid, dst.stateid, 0, 0, 100_001, true),
    )
    .await;
    assert_eq!(status(&r), NfsStat4::NFS4ERR_INVAL);
    let r = on_pair(
        &mut c,
        &src,
        &dst,
        copy_op(src.stateid, dst.stateid, 100_001, 0, 0, true),
    )
    .await;
    assert_eq!(status(&r), NfsStat4::NFS4ERR_INVAL);
    let r = on_pair(
        &mut c,
        &src,
        &src,
        copy_op(src.stateid, src.stateid, 0, 50_000, 60_000, true),
    )
    .await;
    assert_eq!(status(&r), NfsStat4::NFS4ERR_INVAL);
    // Disjoint ranges of one file are fine.
    let r = on_pair(
        &mut c,
        &src,
        &src,
        copy_op(src.stateid, src.stateid, 0, 100_000, 60_000, true),
    )
    .await;
    assert_eq!(status(&r), NfsStat4::NFS4_OK, "{r:?}");
    // No saved filehandle.
    let r = c
        .call(vec![
            putfh(&dst.fh),
            copy_op(src.stateid, dst.stateid, 0, 0, 0, true),
        ])
        .await;
    assert_eq!(status(&r), NfsStat4::NFS4ERR_NOFILEHANDLE);
    // Inter-server copy and COPY_NOTIFY are not offered.
    let mut inter = copy_op(src.stateid, dst.stateid, 0, 0, 0, true);
    if let NfsArgop4::Copy(a) = &mut inter {
        a.ca_source_server = vec![Netloc4::Name(nfs_proto::xdr::Utf8String::from("elsewhere"))];
    }
    let r = on_pair(&mut c, &src, &dst, inter).await;
    assert_eq!(status(&r), NfsStat4::NFS4ERR_NOTSUPP);
    let r = c
        .call(vec![
            putfh(&src.fh),
            NfsArgop4::CopyNotify(CopyNotifyArgs {
                cna_src_stateid: src.stateid,
                cna_destination_server: Netloc4::Name(nfs_proto::xdr::Utf8String::from("x")),
            }),
        ])
        .await;
    assert_eq!(last_status(&r), NfsStat4::NFS4ERR_NOTSUPP);
    // Unknown copy stateids.
    let r = c.call(vec![offload_status_op(forged)]).await;
    assert_eq!(last_status(&r), NfsStat4::NFS4ERR_BAD_STATEID);
}

/// Whether files under `dir` can be reflinked (asked of `cp`, not of the code under test).
fn reflink_works(dir: &Path) -> bool {
    let a = dir.join("reflink-probe-a");
    std::fs::write(&a, vec![1u8; 65536]).unwrap();
    std::process::Command::new("cp")
        .arg("--reflink=always")
        .arg(&a)
        .arg(dir.join("reflink-probe-b"))
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

fn clone_op(src: Stateid4, dst: Stateid4, count: u64) -> NfsArgop4 {
    NfsArgop4::Clone(CloneArgs {
        cl_src_stateid: src,
        cl_dst_stateid: dst,
        cl_src_offset: 0,
        cl_dst_offset: 0,
        cl_count: count,
    })
}

async fn clone_reflinks_or_says_notsupp(striped: bool) {
    let s = setup(striped).await;
    let mut c = s.k.client("cloner").await;
    let src = open_in_root(&mut c, "src", BOTH, 0, "o").await;
    let dst = open_in_root(&mut c, "dst", BOTH, 0, "o").await;
    let body = data(4 * MIB as usize, 6);
    put(&mut c, &src, 0, &body).await;
    let probe_dir = match s.striped {
        false => s.mds.cfg().data_dir.join("data"),
        true => ds_dir(s.dir.path(), 1),
    };
    let can = reflink_works(&probe_dir);
    let r = on_pair(&mut c, &src, &dst, clone_op(src.stateid, dst.stateid, 0)).await;
    if can {
        assert_eq!(last_status(&r), NfsStat4::NFS4_OK, "{r:?}");
        assert_eq!(blake3::hash(&get(&mut c, &dst).await), blake3::hash(&body));
    } else {
        assert_eq!(last_status(&r), NfsStat4::NFS4ERR_NOTSUPP, "{r:?}");
        assert_eq!(fileid_of(&mut c, &dst.fh).await.1, 0, "nothing recorded");
    }
    let forged = Stateid4 {
        seqid: 1,
        other: [2, 3, 0, 1, 0, 0, 0, 99, 1, 2, 3, 4],
    };
    let r = on_pair(&mut c, &src, &dst, clone_op(forged, dst.stateid, 0)).await;
    assert_eq!(last_status(&r), NfsStat4::NFS4ERR_BAD_STATEID);
}

#[tokio::test]
async fn clone_reflinks_or_says_notsupp_unstriped() {
    clone_reflinks_or_says_notsupp(false).await;
}

#[tokio::test]
async fn clone_reflinks_or_says_notsupp_striped() {
    clone_reflinks_or_says_notsupp(true).await;
}

#[tokio::test]
async fn copy_between_striped_files_whose_servers_do_not_line_up_is_streamed() {
    let s = setup(true).await;
    let mut c = s.k.client("streamer").await;
    let src = open_in_root(&mut c, "src", BOTH, 0, "o").await;
    let dst = open_in_root(&mut c, "dst", BOTH, 0, "o").await;
    let body = data((5 * MIB + 77) as usize, 7);
    put(&mut c, &src, 0, &body).await;
    // The destination gets its own stripe set first (its own window of the ring).
    put(&mut c, &dst, 0, b"x").await;
    // Half a unit of offset: no unit of the source lies on one unit of the destination.
    let off = MIB / 2;
    let r = on_pair(
        &mut c,
        &src,
        &dst,
        copy_op(src.stateid, dst.stateid, 0, off, 0, true),
    )
    .await;
    let ok = copy_res(&r).unwrap_or_else(|e| panic!("{e:?}"));
    assert_eq!(ok.cr_response.wr_count, body.len() as u64);
    let got = get(&mut c, &dst).await;
    assert_eq!(got.len() as u64, off + body.len() as u64);
    assert_eq!(got[0], b'x');
    assert!(got[1..off as usize].iter().all(|&b| b == 0));
    assert!(got[off as usize..] == body[..], "copied bytes differ");
    let counters = s.mds.copies().counters();
    assert!(counters.streamed_bytes > 0, "{counters:?}");
    assert!(counters.streamed_bytes <= body.len() as u64);
}

#[tokio::test]
async fn a_new_destination_laid_out_elsewhere_takes_the_sources_stripe_set_and_the_data_servers_copy(
) {
    use testkit::ops::{layoutget_op, layoutreturn_op, return_file};
    let s = setup(true).await;
    let mut c = s.k.client("adopter").await;
    let src = open_in_root(&mut c, "src", BOTH, 0, "o").await;
    let body = data((4 * MIB + 99) as usize, 3);
    put(&mut c, &src, 0, &body).await;
    // The destination's LAYOUTGET fixes its own window of the ring, as the Linux client's
    // OPEN does before copy_file_range or FICLONE.
    let dst = open_in_root(&mut c, "dst", BOTH, 0, "o").await;
    let r = c
        .call(vec![
            putfh(&dst.fh),
            layoutget_op(Layoutiomode4::LAYOUTIOMODE4_RW, dst.stateid),
        ])
        .await;
    assert_eq!(r.status, NfsStat4::NFS4_OK, "{r:?}");
    let NfsResop4::LayoutGet(LayoutGetRes::Ok(got)) = r.resarray.last().unwrap() else {
        panic!("{r:?}")
    };
    let (src_id, _) = fileid_of(&mut c, &src.fh).await;
    let (dst_id, _) = fileid_of(&mut c, &dst.fh).await;
    let src_set = s.mds.store().stripes(src_id).unwrap().unwrap();
    assert_ne!(s.mds.store().stripes(dst_id).unwrap(), Some(src_set));
    // Its layout is out: recalled, and the client told to come back.
    let op = copy_op(src.stateid, dst.stateid, 0, 0, 0, true);
    let r = on_pair(&mut c, &src, &dst, op.clone()).await;
    assert_eq!(copy_res(&r).unwrap_err(), NfsStat4::NFS4ERR_DELAY);
    // Returned (or revoked by the recall, this client having no back channel), the copy
    // goes ahead on the source's set, inside the data servers.
    let _ = c
        .call(vec![
            putfh(&dst.fh),
            layoutreturn_op(
                Layoutiomode4::LAYOUTIOMODE4_ANY,
                return_file(got.logr_stateid),
            ),
        ])
        .await;
    let r = on_pair(&mut c, &src, &dst, op).await;
    let ok = copy_res(&r).unwrap_or_else(|e| panic!("{e:?}"));
    assert_eq!(ok.cr_response.wr_count, body.len() as u64);
    assert_eq!(s.mds.store().stripes(dst_id).unwrap(), Some(src_set));
    assert_eq!(s.mds.copies().counters().streamed_bytes, 0);
    assert!(ds_copy_bytes(&s, body.len() as u64).await >= body.len() as u64);
    assert!(get(&mut c, &dst).await == body, "copied bytes differ");
}

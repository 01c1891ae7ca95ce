//! Mirrored flex files layouts (`cluster.layout.mirrors: 2`) on the in-memory cluster: a
//! layout names one mirror per copy on distinct data servers, writes through the MDS reach
//! every copy, a copy whose data server dies is marked stale (durably) while writes and
//! reads go on through the other, layouts leave it out, and once its data server is back the
//! MDS re-silvers it until both copies are identical.

use std::sync::Arc;

use bytes::Bytes;
use mds::Mds;
use nfs_proto::nfs4::layout_flex::*;
use nfs_proto::nfs4::*;
use nfs_proto::xdr::to_bytes;
use pfs_core::ObjectId;
use testkit::cluster::Cluster;
use testkit::prelude::*;

async fn cluster() -> (Cluster, Arc<Mds>) {
    let k = Cluster::builder()
        .data_servers(3)
        .lease(30)
        .configure(|c| {
            c.cluster.layouts = true;
            c.cluster.layout.layout_type = cluster::config::LayoutType::FlexFiles;
            c.cluster.layout.mirrors = Some(2);
        })
        .start()
        .await;
    let mds = k.mds().clone();
    (k, mds)
}

fn flex_of(r: &Compound4Res) -> (LayoutGetResOk, FfLayout4) {
    match r.resarray.last() {
        Some(NfsResop4::LayoutGet(LayoutGetRes::Ok(ok))) => {
            let l = FfLayout4::from_content(&ok.logr_layout[0].lo_content).unwrap();
            (ok.clone(), l)
        }
        _ => panic!("no layout: {r:?}"),
    }
}

fn layoutget_flex(iomode: Layoutiomode4, stateid: Stateid4) -> NfsArgop4 {
    let mut op = layoutget_op(iomode, stateid);
    if let NfsArgop4::LayoutGet(a) = &mut op {
        a.loga_layout_type = Layouttype4::LAYOUT4_FLEX_FILES;
    }
    op
}

/// The whole object `{fileid, position}` on data server `ds`.
fn object(k: &Cluster, ds: u16, fileid: u64, position: u32) -> Vec<u8> {
    let id = ObjectId {
        file: fileid,
        stripe: position,
    };
    let store = k.ds_objects(ds);
    let size = store.size(id).unwrap();
    store.read(id, 0, size as u32).unwrap().data.to_vec()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dead_copy_is_left_behind_and_re_silvered_when_its_data_server_returns() {
    let (k, mds) = cluster().await;
    let mut c = k.client("mirrors").await;
    let r = open_and_layoutget_of(
        &mut c,
        "",
        "m",
        Layoutiomode4::LAYOUTIOMODE4_RW,
        Layouttype4::LAYOUT4_FLEX_FILES,
    )
    .await;
    assert_eq!(r.status, NfsStat4::NFS4_OK, "{r:?}");
    let open = open_res(&r).stateid;
    let fh = getfh_res(&r);
    let (ok, l) = flex_of(&r);
    // Two mirrors, each of one data server, on distinct data servers.
    assert_eq!(l.ffl_mirrors.len(), 2, "{l:?}");
    let (fileid, _) = fileid_of(&mut c, &fh).await;
    let set = mds.store().stripes(fileid).unwrap().expect("a stripe set");
    assert_eq!((set.mirrors, set.stripe_count()), (2, 1));
    let servers = mds.stripe_servers(&set).unwrap();
    assert_eq!(servers.len(), 2);
    assert_ne!(servers[0], servers[1]);
    let devices: Vec<Deviceid4> = l
        .ffl_mirrors
        .iter()
        .map(|m| m.ffm_data_servers[0].ffds_deviceid)
        .collect();
    assert_ne!(devices[0], devices[1]);

    // The client writes every mirror, through each one's data server, then LAYOUTCOMMITs.
    let data = Bytes::from(pattern(5000));
    for (i, m) in l.ffl_mirrors.iter().enumerate() {
        let ds = &m.ffm_data_servers[0];
        let mut d = k.ds_client(servers[i], &format!("mirror-{i}")).await;
        let w = d
            .call(vec![
                putfh(&ds.ffds_fh_vers[0]),
                write_op(ds.ffds_stateid, 0, StableHow4::FILE_SYNC4, data.clone()),
            ])
            .await;
        assert_eq!(write_res(&w).count, 5000, "{w:?}");
    }
    let r = c
        .call(vec![
            putfh(&fh),
            layoutcommit_op(ok.logr_stateid, Some(4999), None),
        ])
        .await;
    assert_eq!(r.status, NfsStat4::NFS4_OK, "{r:?}");
    // A WRITE through the MDS reaches both copies.
    let more = Bytes::from(vec![7u8; 1000]);
    let r = c
        .call(vec![
            putfh(&fh),
            write_op(open, 5000, StableHow4::FILE_SYNC4, more.clone()),
        ])
        .await;
    assert_eq!(write_res(&r).count, 1000, "{r:?}");
    let mut want = data.to_vec();
    want.extend_from_slice(&more);
    assert_eq!(object(&k, servers[0], fileid, 0), want);
    assert_eq!(object(&k, servers[1], fileid, 1), want);

    // The second copy's data server dies: writes through the MDS go on, that copy is marked
    // stale, durably, and reads come from the other.
    k.kill_ds(servers[1]);
    k.until_down(servers[1]).await;
    let tail = Bytes::from(vec![9u8; 3000]);
    let r = c
        .call(vec![
            putfh(&fh),
            write_op(open, 6000, StableHow4::FILE_SYNC4, tail.clone()),
        ])
        .await;
    assert_eq!(write_res(&r).count, 3000, "{r:?}");
    want.extend_from_slice(&tail);
    assert_eq!(mds.store().stale_copies().unwrap(), [(fileid, 1, 1)]);
    assert_eq!(mds.pnfs().mirrors().stale(fileid), [1]);
    let r = c.call(vec![putfh(&fh), read_op(open, 0, 16384)]).await;
    assert_eq!(&read_res(&r).data[..], &want[..]);
    // A new layout names the good copy only (READ and RW).
    let mut layout = ok.logr_stateid;
    for mode in [
        Layoutiomode4::LAYOUTIOMODE4_READ,
        Layoutiomode4::LAYOUTIOMODE4_RW,
    ] {
        let r = c.call(vec![putfh(&fh), layoutget_flex(mode, layout)]).await;
        let (ok, l) = flex_of(&r);
        layout = ok.logr_stateid;
        assert_eq!(l.ffl_mirrors.len(), 1, "{l:?}");
        assert_eq!(
            l.ffl_mirrors[0].ffm_data_servers[0].ffds_deviceid,
            devices[0]
        );
    }

    // The client returns its layout; the data server comes back; the stale copy is rebuilt.
    let r = c
        .call(vec![
            putfh(&fh),
            NfsArgop4::LayoutReturn(LayoutReturnArgs {
                lora_reclaim: false,
                lora_layout_type: Layouttype4::LAYOUT4_FLEX_FILES,
                lora_iomode: Layoutiomode4::LAYOUTIOMODE4_ANY,
                lora_layoutreturn: Layoutreturn4::File(LayoutreturnFile4 {
                    lrf_offset: 0,
                    lrf_length: u64::MAX,
                    lrf_stateid: layout,
                    lrf_body: to_bytes(&FfLayoutreturn4::default()),
                }),
            }),
        ])
        .await;
    assert_eq!(r.status, NfsStat4::NFS4_OK, "{r:?}");
    k.restart_ds(servers[1]);
    k.until_up(servers[1]).await;
    let mirrors = mds.pnfs().mirrors();
    k.until("the stale copy re-silvered", || mirrors.stale_count() == 0)
        .await;
    assert!(mds.store().stale_copies().unwrap().is_empty());
    assert_eq!(object(&k, servers[1], fileid, 1), want);
    assert_eq!(object(&k, servers[0], fileid, 0), want);
    assert_eq!(
        mirrors
            .resilvered
            .load(std::sync::atomic::Ordering::Relaxed),
        1
    );
    // Layouts name both copies again.
    let r = c
        .call(vec![
            putfh(&fh),
            layoutget_flex(Layoutiomode4::LAYOUTIOMODE4_READ, open),
        ])
        .await;
    let (_, l) = flex_of(&r);
    assert_eq!(l.ffl_mirrors.len(), 2, "{l:?}");
}

/// A file layout cannot name copies: a client that asks for one of a mirrored file does its
/// I/O through the MDS.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mirrored_file_has_no_file_layout() {
    let (k, _mds) = cluster().await;
    let mut c = k.client("files").await;
    let r = open_and_layoutget_of(
        &mut c,
        "",
        "f",
        Layoutiomode4::LAYOUTIOMODE4_RW,
        Layouttype4::LAYOUT4_NFSV4_1_FILES,
    )
    .await;
    assert_eq!(
        last_status(&r),
        NfsStat4::NFS4ERR_LAYOUTUNAVAILABLE,
        "{r:?}"
    );
}

/// Four data servers in two racks, numbered rack by rack (1, 2 in `a`; 3, 4 in `b`): every
/// file's two copies are in distinct racks, where consecutive ids would have put half the
/// files' copies in one rack; the MDS recorded the racks' interleaved ring.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_copies_of_a_file_are_in_distinct_failure_domains() {
    let rack = |id: u32| if id <= 2 { "a" } else { "b" };
    let k = Cluster::builder()
        .data_servers(4)
        .lease(30)
        .configure(move |c| {
            c.cluster.layouts = true;
            c.cluster.layout.layout_type = cluster::config::LayoutType::FlexFiles;
            c.cluster.layout.mirrors = Some(2);
            for d in &mut c.cluster.data_servers {
                d.failure_domain = Some(rack(u32::from(d.id)).into());
            }
        })
        .start()
        .await;
    let mds = k.mds().clone();
    let mut c = k.client("domains").await;
    let mut servers = std::collections::BTreeSet::new();
    for name in ["f0", "f1", "f2", "f3", "f4", "f5"] {
        let r = open_and_layoutget_of(
            &mut c,
            "",
            name,
            Layoutiomode4::LAYOUTIOMODE4_RW,
            Layouttype4::LAYOUT4_FLEX_FILES,
        )
        .await;
        assert_eq!(r.status, NfsStat4::NFS4_OK, "{r:?}");
        let (_, l) = flex_of(&r);
        assert_eq!(l.ffl_mirrors.len(), 2, "{name}: {l:?}");
        let (fileid, _) = fileid_of(&mut c, &getfh_res(&r)).await;
        let set = mds.store().stripes(fileid).unwrap().unwrap();
        let ring = mds.ring(set.device.generation).unwrap();
        let ids: Vec<u32> = ring
            .members(&set.device)
            .unwrap()
            .iter()
            .map(|s| s.id)
            .collect();
        assert_eq!(ids.len(), 2, "{name}");
        assert_ne!(rack(ids[0]), rack(ids[1]), "{name}: copies on {ids:?}");
        servers.extend(ids);
    }
    assert_eq!(servers.len(), 4, "the files spread over every data server");
    let ring = mds.ring(mds.pnfs().ring_generation()).unwrap();
    let order: Vec<u32> = ring.servers.iter().map(|s| s.id).collect();
    assert_eq!(order, [1, 3, 2, 4]);
}

/// A data server whose disk is replaced (same id, an empty store with another identity)
/// comes back with none of its copies: the MDS learns it from the store identity at
/// REGISTER, marks every copy there stale before counting it up, and re-silvers them; a
/// plain restart marks nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_copies_on_a_replaced_data_server_are_re_silvered() {
    let (k, mds) = cluster().await;
    let mut c = k.client("replaced").await;
    let mut files = Vec::new();
    for (i, name) in ["r0", "r1", "r2"].into_iter().enumerate() {
        let r = open_and_layoutget_of(
            &mut c,
            "",
            name,
            Layoutiomode4::LAYOUTIOMODE4_READ,
            Layouttype4::LAYOUT4_FLEX_FILES,
        )
        .await;
        assert_eq!(r.status, NfsStat4::NFS4_OK, "{r:?}");
        let open = open_res(&r).stateid;
        let fh = getfh_res(&r);
        let data = Bytes::from(vec![i as u8 + 1; 70_000 + i]);
        let w = c
            .call(vec![
                putfh(&fh),
                write_op(open, 0, StableHow4::FILE_SYNC4, data.clone()),
            ])
            .await;
        assert_eq!(write_res(&w).count as usize, data.len(), "{w:?}");
        let (fileid, _) = fileid_of(&mut c, &fh).await;
        let set = mds.store().stripes(fileid).unwrap().unwrap();
        files.push((fileid, mds.stripe_servers(&set).unwrap(), data));
    }
    // Replace the data server holding copy 1 of the first file.
    let gone = files[0].1[1];
    k.replace_ds(gone);
    k.until_up(gone).await;
    let mirrors = mds.pnfs().mirrors();
    let replaced = || {
        mirrors
            .replaced_stores
            .load(std::sync::atomic::Ordering::Relaxed)
    };
    assert_eq!(replaced(), 1);
    k.until("the replaced copies re-silvered", || {
        mirrors.stale_count() == 0
    })
    .await;
    assert!(mds.store().stale_copies().unwrap().is_empty());
    let mut rebuilt = 0;
    for (fileid, servers, data) in &files {
        for (position, &ds) in servers.iter().enumerate() {
            assert_eq!(
                object(&k, ds, *fileid, position as u32),
                &data[..],
                "file {fileid} copy {position} on data server {ds}"
            );
            rebuilt += usize::from(ds == gone);
        }
    }
    assert!(rebuilt >= 1);
    assert_eq!(
        mirrors
            .resilvered
            .load(std::sync::atomic::Ordering::Relaxed),
        rebuilt as u64
    );
    // A restart over the same store is no replacement.
    k.restart_ds(gone);
    k.until_up(gone).await;
    assert_eq!(replaced(), 1);
    assert_eq!(mirrors.stale_count(), 0);
}

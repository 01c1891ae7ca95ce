//! pNFS file layouts on the MDS (RFC 8881 chapter 13), on the in-memory cluster: the layout
//! operations, and I/O through the MDS on striped files against its data servers. One test
//! stays on loopback sockets, where the connection's address is the point: GETDEVICEINFO
//! tells a data server configured at an unspecified IP at the IP the client reached the MDS
//! by.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use ::cluster::ds_fh::DsFhCodec;
use ::cluster::keys::DsKeys;
use ::testkit::cluster::{client_addr, Cluster, StoreKind, MDS_ADDR};
use bytes::Bytes;
use mds::config::DirectoryLayout;
use mds::{Config, Mds};
use nfs_proto::nfs4::attr::*;
use nfs_proto::nfs4::layout_files::{
    socket_addr_from_netaddr, Nfsv41FileLayout4, Nfsv41FileLayoutDsAddr4, NFL4_UFLG_DENSE,
    NFL4_UFLG_MASK,
};
use nfs_proto::nfs4::*;
use nfs_proto::transport::NoCalls;
use nfs_proto::xdr::Utf8String;
use pfs_core::{LocalStore, ObjectStore};
use testkit::prelude::*;

/// A server with three running data servers, its configuration changed by `f` (from the
/// test defaults).
async fn server_with(f: impl FnOnce(&mut Config) + 'static) -> (Cluster, Arc<Mds>) {
    server_n(3, f).await
}

/// [`server_with`] with `n` data servers.
async fn server_n(n: u16, f: impl FnOnce(&mut Config) + 'static) -> (Cluster, Arc<Mds>) {
    let k = Cluster::builder()
        .data_servers(n)
        .lease(10)
        .configure(f)
        .start()
        .await;
    let mds = k.mds().clone();
    (k, mds)
}

/// The loopback cluster, for the tests where the data servers' socket addresses are the
/// point.
async fn loopback_server_with(
    f: impl FnOnce(&mut Config),
) -> (testkit::loopback::cluster::Cluster, Arc<Mds>, SocketAddr) {
    testkit::loopback::cluster::start_cluster(3, |c| {
        c.lease_time = 10;
        f(c)
    })
    .await
}

/// Layouts on (the default, said for the reader).
fn layouts_on(c: &mut Config) {
    c.cluster.layouts = true;
}

/// The DS filehandle codec of a server (its key derives from the store's persistent server
/// key, as the data servers are given it).
fn ds_codec(mds: &Mds) -> DsFhCodec {
    DsFhCodec::new(DsKeys::derive(mds.store().server_key(), 0).fh_key)
}

/// The role flags of an EXCHANGE_ID reply.
async fn exchange_id_flags(k: &Cluster) -> u32 {
    let conn = start_conn(k.connect_mds(), MDS_ADDR, client_addr(), Arc::new(NoCalls));
    let ex = ExchangeIdArgs {
        eia_clientowner: ClientOwner4 {
            co_verifier: [1; 8],
            co_ownerid: Bytes::from_static(b"layouts-test"),
        },
        eia_flags: 0,
        eia_state_protect: StateProtect4A::None,
        eia_client_impl_id: vec![],
    };
    let r = compound_on(&conn, 0, 1, vec![NfsArgop4::ExchangeId(ex)])
        .await
        .unwrap();
    let NfsResop4::ExchangeId(ExchangeIdRes::Ok(ok)) = &r.resarray[0] else {
        panic!("EXCHANGE_ID failed: {r:?}")
    };
    ok.eir_flags & EXCHGID4_FLAG_MASK_PNFS
}

#[tokio::test]
async fn with_layouts_on_the_mds_takes_the_pnfs_mds_role_only() {
    let (k, _mds) = server_with(|c| c.cluster.layouts = true).await;
    assert_eq!(exchange_id_flags(&k).await, EXCHGID4_FLAG_USE_PNFS_MDS);
}

#[tokio::test]
async fn with_layouts_off_the_mds_takes_the_non_pnfs_role_only() {
    let (k, _mds) = server_with(|c| c.cluster.layouts = false).await;
    assert_eq!(exchange_id_flags(&k).await, EXCHGID4_FLAG_USE_NON_PNFS);
}

#[tokio::test]
async fn with_layouts_on_but_no_data_servers_the_mds_is_non_pnfs() {
    let (k, _mds) = server_n(0, |c| {
        c.cluster.layouts = true;
        c.cluster.data_servers.clear();
    })
    .await;
    assert_eq!(exchange_id_flags(&k).await, EXCHGID4_FLAG_USE_NON_PNFS);
}

#[tokio::test]
async fn open_then_layoutget_grants_a_whole_file_dense_layout_with_verifiable_ds_handles() {
    let (k, mds) = server_with(layouts_on).await;
    let mut c = k.client("lg").await;
    let r = open_and_layoutget(&mut c, "f", Layoutiomode4::LAYOUTIOMODE4_RW).await;
    assert_eq!(r.status, NfsStat4::NFS4_OK, "{r:?}");
    let fh = getfh_res(&r);
    let (fileid, _) = fileid_of(&mut c, &fh).await;
    let (ok, body) = granted(&r);
    assert!(ok.logr_return_on_close);
    let l = &ok.logr_layout[0];
    assert_eq!((l.lo_offset, l.lo_length), (0, u64::MAX));
    assert_eq!(l.lo_iomode, Layoutiomode4::LAYOUTIOMODE4_RW);
    let device = layouts::Device::from_id(&body.nfl_deviceid).expect("one of our device ids");
    // The default cluster: three local data servers, all in every file's stripe set.
    assert_eq!(device.count, 3);
    assert_eq!(u64::from(device.first), fileid % 3);
    assert_eq!(body.stripe_unit(), 1 << 20);
    assert_eq!(body.nfl_util & NFL4_UFLG_DENSE, NFL4_UFLG_DENSE);
    assert_eq!(
        (body.nfl_first_stripe_index, body.nfl_pattern_offset),
        (0, 0)
    );
    assert_eq!(body.nfl_fh_list.len(), 3);
    let codec = ds_codec(&mds);
    for (i, h) in body.nfl_fh_list.iter().enumerate() {
        let d = codec.decode(h).expect("DS filehandle verifies");
        assert_eq!((usize::from(d.stripe), d.fileid), (i, fileid));
    }
}

#[tokio::test]
async fn with_layouts_off_layoutget_is_layoutunavailable() {
    let (k, _mds) = server_with(|c| c.cluster.layouts = false).await;
    let mut c = k.client("off").await;
    let r = open_and_layoutget(&mut c, "f", Layoutiomode4::LAYOUTIOMODE4_READ).await;
    assert_eq!(
        layoutget_res(&r).status(),
        NfsStat4::NFS4ERR_LAYOUTUNAVAILABLE
    );
}

/// LAYOUTGET on an open file with one argument changed by `f`: its status.
async fn layoutget_status(f: impl FnOnce(&mut LayoutGetArgs)) -> NfsStat4 {
    let (k, _mds) = server_with(layouts_on).await;
    let mut c = k.client("bad").await;
    let o = open_in_root(
        &mut c,
        "f",
        OPEN4_SHARE_ACCESS_BOTH,
        OPEN4_SHARE_DENY_NONE,
        "o",
    )
    .await;
    let NfsArgop4::LayoutGet(mut a) = layoutget_op(Layoutiomode4::LAYOUTIOMODE4_RW, o.stateid)
    else {
        unreachable!()
    };
    f(&mut a);
    let r = c.call(vec![putfh(&o.fh), NfsArgop4::LayoutGet(a)]).await;
    layoutget_res(&r).status()
}

#[tokio::test]
async fn layoutget_refuses_what_rfc_8881_section_18_43_3_refuses() {
    assert_eq!(layoutget_status(|_| {}).await, NfsStat4::NFS4_OK);
    assert_eq!(
        layoutget_status(|a| a.loga_layout_type = Layouttype4::LAYOUT4_BLOCK_VOLUME).await,
        NfsStat4::NFS4ERR_UNKNOWN_LAYOUTTYPE
    );
    assert_eq!(
        layoutget_status(|a| a.loga_iomode = Layoutiomode4::LAYOUTIOMODE4_ANY).await,
        NfsStat4::NFS4ERR_BADIOMODE
    );
    assert_eq!(
        layoutget_status(|a| {
            a.loga_length = 100;
            a.loga_minlength = 200;
        })
        .await,
        NfsStat4::NFS4ERR_INVAL
    );
    assert_eq!(
        layoutget_status(|a| a.loga_stateid = Stateid4::default()).await,
        NfsStat4::NFS4ERR_BAD_STATEID
    );
    assert_eq!(
        layoutget_status(|a| a.loga_maxcount = 64).await,
        NfsStat4::NFS4ERR_TOOSMALL
    );
}

#[tokio::test]
async fn layoutget_on_a_directory_is_refused() {
    let (k, _mds) = server_with(layouts_on).await;
    let mut c = k.client("dir").await;
    let r = c
        .call(vec![
            NfsArgop4::PutRootFh,
            layoutget_op(Layoutiomode4::LAYOUTIOMODE4_READ, Stateid4::default()),
        ])
        .await;
    assert_eq!(layoutget_res(&r).status(), NfsStat4::NFS4ERR_ISDIR);
}

#[tokio::test]
async fn a_second_layoutget_keeps_the_stripe_set_and_moves_the_layout_seqid() {
    let (k, _mds) = server_with(layouts_on).await;
    let mut c = k.client("again").await;
    let r = open_and_layoutget(&mut c, "f", Layoutiomode4::LAYOUTIOMODE4_READ).await;
    let (first, body) = granted(&r);
    let fh = getfh_res(&r);
    let r = c
        .call(vec![
            putfh(&fh),
            layoutget_op(Layoutiomode4::LAYOUTIOMODE4_RW, first.logr_stateid),
        ])
        .await;
    let (second, body2) = granted(&r);
    assert_eq!(second.logr_stateid.other, first.logr_stateid.other);
    assert_eq!(second.logr_stateid.seqid, first.logr_stateid.seqid + 1);
    assert_eq!(
        (body2.nfl_deviceid, body2.nfl_util),
        (body.nfl_deviceid, body.nfl_util)
    );
    // The same objects, through handles of the same layout with its new iomode.
    assert_eq!(objects(&body2), objects(&body));
    assert!(body.nfl_fh_list.iter().all(|h| h.0[16] == 1), "READ");
    assert!(body2.nfl_fh_list.iter().all(|h| h.0[16] == 2), "RW");
    assert!(body2
        .nfl_fh_list
        .iter()
        .all(|h| h.0[20..32] == first.logr_stateid.other));
}

/// What a layout's DS filehandles name: version, kind, stripe index, file id and generation
/// (bytes 0..16; the rest binds them to one layout, `cluster::ds_fh`).
fn objects(b: &Nfsv41FileLayout4) -> Vec<Vec<u8>> {
    b.nfl_fh_list.iter().map(|h| h.0[..16].to_vec()).collect()
}

fn layoutreturn_res(r: &Compound4Res) -> &LayoutReturnRes {
    r.resarray
        .iter()
        .find_map(|op| match op {
            NfsResop4::LayoutReturn(res) => Some(res),
            _ => None,
        })
        .expect("no LAYOUTRETURN in the reply")
}

#[tokio::test]
async fn layoutreturn_of_the_file_frees_the_layout_stateid() {
    let (k, _mds) = server_with(layouts_on).await;
    let mut c = k.client("ret").await;
    let r = open_and_layoutget(&mut c, "f", Layoutiomode4::LAYOUTIOMODE4_RW).await;
    let (ok, _) = granted(&r);
    let fh = getfh_res(&r);
    let ret = |s| {
        vec![
            putfh(&fh),
            layoutreturn_op(Layoutiomode4::LAYOUTIOMODE4_ANY, return_file(s)),
        ]
    };
    let r = c.call(ret(ok.logr_stateid)).await;
    assert_eq!(
        layoutreturn_res(&r),
        &LayoutReturnRes::Ok(LayoutreturnStateid::Absent),
        "{r:?}"
    );
    // The stateid is gone: returning again, or getting a layout with it, is refused.
    let r = c.call(ret(ok.logr_stateid)).await;
    assert_eq!(last_status(&r), NfsStat4::NFS4ERR_BAD_STATEID);
    let r = c
        .call(vec![
            putfh(&fh),
            layoutget_op(Layoutiomode4::LAYOUTIOMODE4_READ, ok.logr_stateid),
        ])
        .await;
    assert_eq!(layoutget_res(&r).status(), NfsStat4::NFS4ERR_BAD_STATEID);
}

#[tokio::test]
async fn returning_one_iomode_keeps_the_other_under_a_newer_seqid() {
    let (k, _mds) = server_with(layouts_on).await;
    let mut c = k.client("half").await;
    let r = open_and_layoutget(&mut c, "f", Layoutiomode4::LAYOUTIOMODE4_READ).await;
    let fh = getfh_res(&r);
    let (read, _) = granted(&r);
    let r = c
        .call(vec![
            putfh(&fh),
            layoutget_op(Layoutiomode4::LAYOUTIOMODE4_RW, read.logr_stateid),
        ])
        .await;
    let (rw, _) = granted(&r);
    let r = c
        .call(vec![
            putfh(&fh),
            layoutreturn_op(
                Layoutiomode4::LAYOUTIOMODE4_READ,
                return_file(rw.logr_stateid),
            ),
        ])
        .await;
    let LayoutReturnRes::Ok(LayoutreturnStateid::Present(s)) = layoutreturn_res(&r) else {
        panic!("{r:?}")
    };
    assert_eq!(s.other, rw.logr_stateid.other);
    assert!(s.seqid > rw.logr_stateid.seqid);
}

#[tokio::test]
async fn layoutreturn_all_and_fsid_drop_every_layout_of_the_client() {
    for what in [Layoutreturn4::All, Layoutreturn4::Fsid] {
        let (k, _mds) = server_with(layouts_on).await;
        let mut c = k.client("all").await;
        let mut got = Vec::new();
        for name in ["a", "b"] {
            let r = open_and_layoutget(&mut c, name, Layoutiomode4::LAYOUTIOMODE4_RW).await;
            got.push((getfh_res(&r), granted(&r).0.logr_stateid));
        }
        let r = c
            .call(vec![
                putfh(&got[0].0),
                layoutreturn_op(Layoutiomode4::LAYOUTIOMODE4_ANY, what.clone()),
            ])
            .await;
        assert_eq!(last_status(&r), NfsStat4::NFS4_OK, "{what:?}: {r:?}");
        for (fh, s) in &got {
            let r = c
                .call(vec![
                    putfh(fh),
                    layoutreturn_op(Layoutiomode4::LAYOUTIOMODE4_ANY, return_file(*s)),
                ])
                .await;
            assert_eq!(last_status(&r), NfsStat4::NFS4ERR_BAD_STATEID, "{what:?}");
        }
    }
}

/// Runs one boot of a cluster of three data servers over the metadata in `dir`, its
/// configuration changed by `cfg`; then stops the MDS (its store closes) and the cluster.
async fn boot<T>(
    dir: &Path,
    cfg: impl FnOnce(&mut Config) + 'static,
    f: impl AsyncFnOnce(&Cluster) -> T,
) -> T {
    let mut k = Cluster::builder()
        .data_servers(3)
        .lease(30)
        .store(StoreKind::Redb(dir.to_path_buf()))
        .configure(cfg)
        .start()
        .await;
    let t = f(&k).await;
    k.stop_mds().await;
    t
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_stripe_set_and_the_objects_of_a_files_ds_handles_survive_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let before = boot(dir.path(), layouts_on, async |k: &Cluster| {
        let mut c = k.client("boot1").await;
        let r = open_and_layoutget(&mut c, "f", Layoutiomode4::LAYOUTIOMODE4_RW).await;
        granted(&r).1
    })
    .await;
    // A changed policy does not move a file whose stripe set is fixed.
    let new_policy = |c: &mut Config| {
        layouts_on(c);
        c.cluster.layout.stripe_unit = 64 << 10;
        c.cluster.layout.stripe_count = Some(1);
    };
    let after = boot(dir.path(), new_policy, async |k: &Cluster| {
        let mut c = k.client("boot2").await;
        let r = open_and_layoutget(&mut c, "f", Layoutiomode4::LAYOUTIOMODE4_READ).await;
        granted(&r).1
    })
    .await;
    assert_eq!(after.nfl_deviceid, before.nfl_deviceid);
    assert_eq!(after.nfl_util, before.nfl_util);
    assert_eq!(objects(&after), objects(&before));
    // ... while a new file gets the new policy.
    let fresh = boot(dir.path(), new_policy, async |k: &Cluster| {
        let mut c = k.client("boot3").await;
        let r = open_and_layoutget(&mut c, "g", Layoutiomode4::LAYOUTIOMODE4_RW).await;
        granted(&r).1
    })
    .await;
    assert_eq!(fresh.stripe_unit(), 64 << 10);
    assert_eq!(fresh.nfl_fh_list.len(), 1);
}

#[tokio::test]
async fn the_last_close_of_a_file_returns_its_return_on_close_layout() {
    let (k, _mds) = server_with(layouts_on).await;
    let mut c = k.client("roc").await;
    let r = open_and_layoutget(&mut c, "f", Layoutiomode4::LAYOUTIOMODE4_RW).await;
    let (ok, _) = granted(&r);
    let fh = getfh_res(&r);
    let open1 = open_res(&r).stateid;
    // A second open owner of the same client: its open keeps the layout past the first CLOSE.
    let r = c
        .call(vec![
            NfsArgop4::PutRootFh,
            open_op(
                by_name("f"),
                unchecked(0o644),
                OPEN4_SHARE_ACCESS_READ,
                OPEN4_SHARE_DENY_NONE,
                "other",
            ),
        ])
        .await;
    let open2 = open_res(&r).stateid;
    let layoutget = |s| {
        vec![
            putfh(&fh),
            layoutget_op(Layoutiomode4::LAYOUTIOMODE4_READ, s),
        ]
    };
    let r = c.call(vec![putfh(&fh), close_op(open1)]).await;
    assert_eq!(r.status, NfsStat4::NFS4_OK, "{r:?}");
    let r = c.call(layoutget(ok.logr_stateid)).await;
    let (still, _) = granted(&r);
    let r = c.call(vec![putfh(&fh), close_op(open2)]).await;
    assert_eq!(r.status, NfsStat4::NFS4_OK, "{r:?}");
    let r = c.call(layoutget(still.logr_stateid)).await;
    assert_eq!(layoutget_res(&r).status(), NfsStat4::NFS4ERR_BAD_STATEID);
}

fn layoutcommit_res(r: &Compound4Res) -> &LayoutCommitRes {
    r.resarray
        .iter()
        .find_map(|op| match op {
            NfsResop4::LayoutCommit(res) => Some(res),
            _ => None,
        })
        .expect("no LAYOUTCOMMIT in the reply")
}

/// (size, mtime, change) of a file.
async fn size_mtime_change(c: &mut Client, fh: &NfsFh4) -> (u64, Nfstime4, u64) {
    let r = c
        .call(vec![
            putfh(fh),
            NfsArgop4::GetAttr(GetAttrArgs {
                attr_request: Bitmap4::from_bits([FATTR4_SIZE, FATTR4_TIME_MODIFY, FATTR4_CHANGE]),
            }),
        ])
        .await;
    let Some(NfsResop4::GetAttr(GetAttrRes::Ok(a))) = r.resarray.last() else {
        panic!("GETATTR failed: {r:?}")
    };
    let a = FileAttrs::from_fattr(&a.obj_attributes).unwrap();
    (a.size.unwrap(), a.time_modify.unwrap(), a.change.unwrap())
}

#[tokio::test]
async fn layoutcommit_grows_the_size_sets_the_mtime_and_moves_the_change_attribute() {
    let (k, _mds) = server_with(layouts_on).await;
    let mut c = k.client("commit").await;
    let r = open_and_layoutget(&mut c, "f", Layoutiomode4::LAYOUTIOMODE4_RW).await;
    let (ok, _) = granted(&r);
    let fh = getfh_res(&r);
    let (size0, _, change0) = size_mtime_change(&mut c, &fh).await;
    assert_eq!(size0, 0);
    let when = Nfstime4 {
        seconds: 1_700_000_000,
        nseconds: 5,
    };
    let r = c
        .call(vec![
            putfh(&fh),
            layoutcommit_op(ok.logr_stateid, Some(3 << 20), Some(when)),
        ])
        .await;
    assert_eq!(
        layoutcommit_res(&r),
        &LayoutCommitRes::Ok(LayoutCommitResOk {
            locr_newsize: Newsize4::Changed {
                ns_size: (3 << 20) + 1
            }
        }),
        "{r:?}"
    );
    let (size, mtime, change) = size_mtime_change(&mut c, &fh).await;
    assert_eq!((size, mtime), ((3 << 20) + 1, when));
    assert!(change > change0);
    // A last write offset below the size does not shrink the file.
    let r = c
        .call(vec![
            putfh(&fh),
            layoutcommit_op(ok.logr_stateid, Some(10), None),
        ])
        .await;
    assert_eq!(
        layoutcommit_res(&r),
        &LayoutCommitRes::Ok(LayoutCommitResOk {
            locr_newsize: Newsize4::Unchanged
        })
    );
    assert_eq!(size_mtime_change(&mut c, &fh).await.0, (3 << 20) + 1);
}

#[tokio::test]
async fn layoutcommit_needs_an_rw_layout_under_the_layout_stateid() {
    let (k, _mds) = server_with(layouts_on).await;
    let mut c = k.client("commit-ro").await;
    let r = open_and_layoutget(&mut c, "f", Layoutiomode4::LAYOUTIOMODE4_READ).await;
    let (ok, _) = granted(&r);
    let open = open_res(&r).stateid;
    let fh = getfh_res(&r);
    let r = c
        .call(vec![
            putfh(&fh),
            layoutcommit_op(ok.logr_stateid, Some(9), None),
        ])
        .await;
    assert_eq!(last_status(&r), NfsStat4::NFS4ERR_BADLAYOUT);
    let r = c
        .call(vec![putfh(&fh), layoutcommit_op(open, Some(9), None)])
        .await;
    assert_eq!(last_status(&r), NfsStat4::NFS4ERR_BAD_STATEID);
    assert_eq!(size_mtime_change(&mut c, &fh).await.0, 0);
}

fn getdeviceinfo_op(id: Deviceid4, maxcount: u32) -> NfsArgop4 {
    NfsArgop4::GetDeviceInfo(GetDeviceInfoArgs {
        gdia_device_id: id,
        gdia_layout_type: Layouttype4::LAYOUT4_NFSV4_1_FILES,
        gdia_maxcount: maxcount,
        // What the Linux client asks for, and a bit no notification has.
        gdia_notify_types: Bitmap4::from_bits([
            NotifyDeviceidType4::NOTIFY_DEVICEID4_CHANGE.0,
            NotifyDeviceidType4::NOTIFY_DEVICEID4_DELETE.0,
            7,
        ]),
    })
}

fn getdeviceinfo_res(r: &Compound4Res) -> &GetDeviceInfoRes {
    r.resarray
        .iter()
        .find_map(|op| match op {
            NfsResop4::GetDeviceInfo(res) => Some(res),
            _ => None,
        })
        .expect("no GETDEVICEINFO in the reply")
}

#[tokio::test]
async fn getdeviceinfo_names_the_layouts_data_servers_at_the_address_the_client_used() {
    // Loopback sockets: the data servers are configured at an unspecified IP, which is told
    // as the local address of the client's connection.
    let (_d, mds, addr) = loopback_server_with(layouts_on).await;
    let mut c = Client::new(addr, "dev").await;
    let r = open_and_layoutget(&mut c, "f", Layoutiomode4::LAYOUTIOMODE4_RW).await;
    let (_, body) = granted(&r);
    let device = layouts::Device::from_id(&body.nfl_deviceid).unwrap();
    let r = c
        .call(vec![getdeviceinfo_op(body.nfl_deviceid, 4096)])
        .await;
    let GetDeviceInfoRes::Ok(ok) = getdeviceinfo_res(&r) else {
        panic!("GETDEVICEINFO failed: {r:?}")
    };
    // Both notifications accepted (the Linux client caches the device only then); the unknown
    // bit not.
    assert_eq!(
        ok.gdir_notification,
        Bitmap4::from_bits([
            NotifyDeviceidType4::NOTIFY_DEVICEID4_CHANGE.0,
            NotifyDeviceidType4::NOTIFY_DEVICEID4_DELETE.0,
        ])
    );
    let da = Nfsv41FileLayoutDsAddr4::from_device_addr(&ok.gdir_device_addr).expect("decodes");
    assert_eq!(da.nflda_stripe_indices, vec![0, 1, 2]);
    // The configured addresses are 0.0.0.0:20491..20493: told as the connection's local IP.
    let ports: Vec<u16> = mds
        .cfg()
        .cluster
        .data_servers
        .iter()
        .map(|d| d.addresses[0].port())
        .collect();
    for (i, m) in da.nflda_multipath_ds_list.iter().enumerate() {
        assert_eq!(m.0.len(), 1);
        let a = socket_addr_from_netaddr(&m.0[0]).expect("universal address");
        assert_eq!(a.ip(), c.conn.local().ip());
        assert_eq!(
            a.port(),
            ports[(usize::from(device.first) + i) % 3],
            "index {i}"
        );
    }
    // Too small a maxcount: the size needed, which then suffices.
    let r = c.call(vec![getdeviceinfo_op(body.nfl_deviceid, 16)]).await;
    let GetDeviceInfoRes::TooSmall { gdir_mincount } = getdeviceinfo_res(&r) else {
        panic!("{r:?}")
    };
    let r = c
        .call(vec![getdeviceinfo_op(body.nfl_deviceid, *gdir_mincount)])
        .await;
    assert_eq!(getdeviceinfo_res(&r).status(), NfsStat4::NFS4_OK);
    // A device of another generation, or not one of ours.
    let other = layouts::Device {
        generation: device.generation + 1,
        ..device
    };
    let r = c.call(vec![getdeviceinfo_op(other.id(), 4096)]).await;
    assert_eq!(getdeviceinfo_res(&r).status(), NfsStat4::NFS4ERR_NOENT);
    let r = c.call(vec![getdeviceinfo_op([0xff; 16], 4096)]).await;
    assert_eq!(getdeviceinfo_res(&r).status(), NfsStat4::NFS4ERR_NOENT);
}

/// The addresses of a device's data servers as GETDEVICEINFO tells them to client `c`.
async fn device_addrs(c: &mut Client, id: Deviceid4) -> Vec<SocketAddr> {
    let r = c.call(vec![getdeviceinfo_op(id, 4096)]).await;
    let GetDeviceInfoRes::Ok(ok) = getdeviceinfo_res(&r) else {
        panic!("GETDEVICEINFO failed: {r:?}")
    };
    let da = Nfsv41FileLayoutDsAddr4::from_device_addr(&ok.gdir_device_addr).expect("decodes");
    da.nflda_multipath_ds_list
        .iter()
        .map(|m| socket_addr_from_netaddr(&m.0[0]).unwrap())
        .collect()
}

/// A data server restarted with another NFS address (its configuration changed; same id and
/// control address; [`Cluster::restart_ds_at`]) registers with the MDS from there: the client that asked about a device
/// holding it gets CB_NOTIFY_DEVICEID (RFC 8881 section 20.12), and GETDEVICEINFO tells the
/// new address.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_data_server_that_moves_changes_its_devices_addresses() {
    let (k, mds) = server_with(layouts_on).await;
    let cb = Arc::new(testkit::client::CbClient::default());
    let mut c = k.client_with_back_channel("watcher", cb.clone()).await;
    let r = open_and_layoutget(&mut c, "f", Layoutiomode4::LAYOUTIOMODE4_RW).await;
    let (_, body) = granted(&r);
    let before = device_addrs(&mut c, body.nfl_deviceid).await;
    assert_eq!(
        mds.device_watch().watched(c.clientid),
        vec![body.nfl_deviceid]
    );
    // Data server 2 comes back at another port.
    let old = k.ds_addr(2);
    let moved = SocketAddr::new(old.ip(), old.port() + 1000);
    k.kill_ds(2);
    let m = mds.clone();
    k.until("data server 2 down", || m.devices().control(2).is_none())
        .await;
    k.restart_ds_at(2, moved);
    k.until("data server 2 registered from its new address", || {
        m.devices().addresses(2) == Some(vec![moved])
    })
    .await;
    let client = c.clientid;
    k.until("the watch taken by the notification", || {
        m.device_watch().watched(client).is_empty()
    })
    .await;
    // The client heard of it: one CB_NOTIFY_DEVICEID, CHANGE of that device, at once.
    k.until("CB_NOTIFY_DEVICEID", || {
        !cb.device_notifications.lock().unwrap().is_empty()
    })
    .await;
    let notes = cb.device_notifications.lock().unwrap().clone();
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert_eq!(notes[0].cnda_changes.len(), 1);
    let n = &notes[0].cnda_changes[0];
    assert_eq!(
        n.notify_mask,
        Bitmap4::from_bits([NotifyDeviceidType4::NOTIFY_DEVICEID4_CHANGE.0])
    );
    let change: NotifyDeviceidChange4 =
        nfs_proto::xdr::from_bytes(n.notify_vals.clone()).expect("a notify_deviceid_change4");
    assert_eq!(change.ndc_deviceid, body.nfl_deviceid);
    assert_eq!(change.ndc_layouttype, Layouttype4::LAYOUT4_NFSV4_1_FILES);
    assert!(change.ndc_immediate);
    let after = device_addrs(&mut c, body.nfl_deviceid).await;
    // (Every data server of the in-memory cluster serves at port 2049 of an IP of its own:
    // they are told apart by the whole address.)
    let i = before
        .iter()
        .position(|&a| a == k.config().cluster.data_server(2).unwrap().addresses[0])
        .expect("data server 2 in the device");
    let mut want = before.clone();
    want[i] = moved;
    assert_eq!(after, want);
    // Asking again watches again.
    assert_eq!(
        mds.device_watch().watched(c.clientid),
        vec![body.nfl_deviceid]
    );
}

/// (fs_layout_types, layout_blksize, layout_alignment) of the root.
async fn layout_attrs(k: &Cluster) -> (Vec<Layouttype4>, u32, u32) {
    let mut c = k.client("attrs").await;
    let r = c
        .call(vec![
            NfsArgop4::PutRootFh,
            NfsArgop4::GetAttr(GetAttrArgs {
                attr_request: Bitmap4::from_bits([
                    FATTR4_FS_LAYOUT_TYPES,
                    FATTR4_LAYOUT_BLKSIZE,
                    FATTR4_LAYOUT_ALIGNMENT,
                ]),
            }),
        ])
        .await;
    let Some(NfsResop4::GetAttr(GetAttrRes::Ok(a))) = r.resarray.last() else {
        panic!("GETATTR failed: {r:?}")
    };
    let a = FileAttrs::from_fattr(&a.obj_attributes).unwrap();
    (
        a.fs_layout_types.unwrap(),
        a.layout_blksize.unwrap(),
        a.layout_alignment.unwrap(),
    )
}

#[tokio::test]
async fn the_fs_layout_attributes_follow_the_layout_switch_and_policy() {
    let (k, _mds) = server_with(|c| {
        layouts_on(c);
        c.cluster.layout.stripe_unit = 256 << 10;
    })
    .await;
    assert_eq!(
        layout_attrs(&k).await,
        (
            vec![Layouttype4::LAYOUT4_NFSV4_1_FILES],
            256 << 10,
            256 << 10
        )
    );
    let (k, _mds) = server_with(|c| c.cluster.layouts = false).await;
    assert_eq!(layout_attrs(&k).await.0, Vec::<Layouttype4>::new());
}

fn getdevicelist_op(max: u32, cookie: u64, verf: Verifier4) -> NfsArgop4 {
    NfsArgop4::GetDeviceList(GetDeviceListArgs {
        gdla_layout_type: Layouttype4::LAYOUT4_NFSV4_1_FILES,
        gdla_maxdevices: max,
        gdla_cookie: cookie,
        gdla_cookieverf: verf,
    })
}

#[tokio::test]
async fn getdevicelist_pages_through_the_devices_layouts_name() {
    let (k, _mds) = server_with(layouts_on).await;
    let mut c = k.client("list").await;
    let r = open_and_layoutget(&mut c, "f", Layoutiomode4::LAYOUTIOMODE4_RW).await;
    let (_, body) = granted(&r);
    let (mut cookie, mut verf, mut all) = (0, [0u8; 8], Vec::new());
    loop {
        let r = c
            .call(vec![
                NfsArgop4::PutRootFh,
                getdevicelist_op(2, cookie, verf),
            ])
            .await;
        let Some(NfsResop4::GetDeviceList(GetDeviceListRes::Ok(ok))) = r.resarray.last() else {
            panic!("GETDEVICELIST failed: {r:?}")
        };
        assert!(ok.gdlr_deviceid_list.len() <= 2);
        all.extend(ok.gdlr_deviceid_list.iter().copied());
        (cookie, verf) = (ok.gdlr_cookie, ok.gdlr_cookieverf);
        if ok.gdlr_eof {
            break;
        }
    }
    // Three data servers, all in every stripe set: a window starting at each.
    assert_eq!(all.len(), 3);
    assert!(all.contains(&body.nfl_deviceid));
    let r = c
        .call(vec![NfsArgop4::PutRootFh, getdevicelist_op(2, 1, [9; 8])])
        .await;
    assert_eq!(last_status(&r), NfsStat4::NFS4ERR_NOT_SAME);
}

#[tokio::test]
async fn a_write_through_a_layouts_ds_filehandle_with_the_open_stateid_lands_on_the_data_server() {
    let (k, mds) = server_with(layouts_on).await;
    // One in-process data server with the MDS's keys, as REGISTER would give them.
    let ds_dir = tempfile::tempdir().unwrap();
    let keys = DsKeys::derive(mds.store().server_key(), mds.store().boot_epoch() as u16);
    let ds =
        data_server::DataServer::open_local(data_server::DsOptions::new(1), keys, ds_dir.path())
            .unwrap();
    let ds_addr = SocketAddr::from(([192, 0, 2, 200], 2049));
    let server = nfs_server::StreamServer::for_role(ds);
    let (near, far) = tokio::io::duplex(1 << 20);
    tokio::spawn(server.serve(far, client_addr(), ds_addr));

    let mut c = k.client("e2e").await;
    let r = open_and_layoutget(&mut c, "f", Layoutiomode4::LAYOUTIOMODE4_RW).await;
    let open = open_res(&r).stateid;
    let (_, body) = granted(&r);
    let mut d = Client::over(near, ds_addr, Arc::new(NoCalls), &Setup::new("e2e")).await;
    let data = Bytes::from(pattern(5000));
    let r = d
        .call(vec![
            putfh(&body.nfl_fh_list[1]),
            write_op(open, 0, StableHow4::FILE_SYNC4, data.clone()),
        ])
        .await;
    assert_eq!(write_res(&r).count, 5000, "{r:?}");
    let r = d
        .call(vec![putfh(&body.nfl_fh_list[1]), read_op(open, 0, 5000)])
        .await;
    let got = read_res(&r);
    assert_eq!((&got.data[..], got.eof), (&data[..], false));
    // Past the object's end this data server (no control service: no hints of where files
    // end) cannot tell a hole from the file's end: the client must read through the MDS.
    for fh in [&body.nfl_fh_list[1], &body.nfl_fh_list[0]] {
        let r = d.call(vec![putfh(fh), read_op(open, 0, 8192)]).await;
        assert_eq!(last_status(&r), NfsStat4::NFS4ERR_NXIO, "{r:?}");
    }
}

// ---------------------------------------------------------------------------------------------
// I/O through the MDS on striped files: the same DS objects as the layout's.
// ---------------------------------------------------------------------------------------------

/// An MDS with layouts on and `n` running data servers (stripe unit `unit`), all registered.
struct Striped {
    k: Cluster,
    mds: Arc<Mds>,
    /// Data server `id`'s objects at index `id - 1`, on the `local` backend (for its
    /// counters); empty when they are in crash-simulating stores.
    local: Vec<Arc<LocalStore>>,
    _dir: tempfile::TempDir,
}

impl Striped {
    /// The data servers' objects on the `local` backend under a temporary directory.
    async fn start(n: u16, unit: u32, f: impl FnOnce(&mut Config) + 'static) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let local: Vec<Arc<LocalStore>> = (1..=n)
            .map(|id| Arc::new(LocalStore::open(dir.path().join(format!("ds{id}"))).unwrap()))
            .collect();
        let stores = local.clone();
        let builder = Cluster::builder()
            .ds_store(move |id| stores[usize::from(id) - 1].clone() as Arc<dyn ObjectStore>);
        Self::start_with(builder, n, unit, f, local, dir).await
    }

    /// The data servers' objects in crash-simulating stores ([`Striped::crash`]).
    async fn start_crashsim(n: u16, unit: u32, f: impl FnOnce(&mut Config) + 'static) -> Self {
        let dir = tempfile::tempdir().unwrap();
        Self::start_with(Cluster::builder(), n, unit, f, Vec::new(), dir).await
    }

    async fn start_with(
        builder: testkit::cluster::ClusterBuilder,
        n: u16,
        unit: u32,
        f: impl FnOnce(&mut Config) + 'static,
        local: Vec<Arc<LocalStore>>,
        dir: tempfile::TempDir,
    ) -> Self {
        let k = builder
            .data_servers(n)
            .lease(10)
            .configure(move |cfg| {
                cfg.cluster.layouts = true;
                cfg.cluster.layout.stripe_unit = unit;
                f(cfg);
            })
            .start()
            .await;
        let mds = k.mds().clone();
        Self {
            k,
            mds,
            local,
            _dir: dir,
        }
    }

    /// The data server id of each stripe index of `fileid` (which has a stripe set).
    fn servers(&self, fileid: u64) -> Vec<u16> {
        let set = self
            .mds
            .store()
            .stripes(fileid)
            .unwrap()
            .expect("a stripe set");
        self.mds.stripe_servers(&set).unwrap()
    }

    /// The stripe map of `fileid`.
    fn map(&self, fileid: u64) -> layouts::StripeMap {
        let set = self
            .mds
            .store()
            .stripes(fileid)
            .unwrap()
            .expect("a stripe set");
        set.map().unwrap()
    }

    /// Data server `id`'s object store on the `local` backend.
    fn store(&self, id: u16) -> &LocalStore {
        &self.local[usize::from(id) - 1]
    }

    /// Kills data server `id` and waits until the registry has it down.
    async fn kill(&mut self, id: u16) {
        self.k.kill_ds(id);
        self.until_down(id).await;
    }

    /// Kills data server `id` and crashes its store (a new process opens it anew: a new write
    /// verifier, and what was not synced is gone), and waits until the registry has it down.
    async fn crash(&mut self, id: u16) {
        self.k.crash_ds(id);
        self.until_down(id).await;
    }

    async fn until_down(&self, id: u16) {
        let mds = self.mds.clone();
        self.k
            .until("the data server down", || {
                mds.devices().control(id).is_none()
            })
            .await;
    }

    /// Starts data server `id` again over its objects and waits until it is registered.
    async fn restart(&mut self, id: u16) {
        self.k.restart_ds(id);
        let mds = self.mds.clone();
        self.k
            .until("the data server up again", || {
                mds.devices().control(id).is_some()
            })
            .await;
    }
}

/// A client of `s` with a file `name` open for reading and writing, and its file id.
async fn open_file(s: &Striped, name: &str) -> (Client, Opened, u64) {
    let mut c = s.k.client(name).await;
    let o = open_in_root(
        &mut c,
        name,
        OPEN4_SHARE_ACCESS_BOTH,
        OPEN4_SHARE_DENY_NONE,
        "o",
    )
    .await;
    let (fileid, _) = fileid_of(&mut c, &o.fh).await;
    (c, o, fileid)
}

/// WRITE through the MDS.
async fn mds_write(
    c: &mut Client,
    o: &Opened,
    offset: u64,
    stable: StableHow4,
    data: &[u8],
) -> Compound4Res {
    c.call(vec![
        putfh(&o.fh),
        write_op(o.stateid, offset, stable, Bytes::copy_from_slice(data)),
    ])
    .await
}

/// The layout's DS filehandles of an open file (LAYOUTGET RW under the open stateid).
async fn ds_handles(c: &mut Client, o: &Opened) -> Vec<NfsFh4> {
    let r = c
        .call(vec![
            putfh(&o.fh),
            layoutget_op(Layoutiomode4::LAYOUTIOMODE4_RW, o.stateid),
        ])
        .await;
    granted(&r).1.nfl_fh_list
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_written_through_the_mds_reads_back_through_its_layouts_ds_filehandles() {
    let s = Striped::start(3, 64 << 10, |_| {}).await;
    let (mut c, o, fileid) = open_file(&s, "f").await;
    let data = pattern((300 << 10) + 77);
    let r = mds_write(&mut c, &o, 0, StableHow4::FILE_SYNC4, &data).await;
    assert_eq!(write_res(&r).count as usize, data.len(), "{r:?}");
    assert_eq!(fileid_of(&mut c, &o.fh).await.1, data.len() as u64);
    // Nothing went to the MDS's own object.
    let own = s
        .mds
        .data()
        .size(pfs_core::ObjectId::whole(fileid))
        .unwrap();
    assert_eq!(own, 0);

    let fhs = ds_handles(&mut c, &o).await;
    let servers = s.servers(fileid);
    assert_eq!(fhs.len(), servers.len());
    let mut objects = Vec::new();
    let map = s.map(fileid);
    for (index, (fh, &ds)) in fhs.iter().zip(&servers).enumerate() {
        let mut d = s.k.ds_client(ds, "reader").await;
        // Each object's share of the file, all inside the object: no eof.
        let share = map.object_size(index as u32, data.len() as u64) as u32;
        let r = d.call(vec![putfh(fh), read_op(o.stateid, 0, share)]).await;
        let got = read_res(&r);
        assert_eq!((got.data.len(), got.eof), (share as usize, false));
        objects.push(got.data);
    }
    // Every byte is where the layout says: index and (dense) object offset.
    let extents = map.extents(0, data.len() as u64).unwrap();
    assert!(extents.len() > 3, "the file spans several rounds");
    for e in extents {
        let obj = &objects[e.index as usize];
        let (o0, f0) = (e.object_offset as usize, e.file_offset as usize);
        let n = e.len as usize;
        assert_eq!(&obj[o0..o0 + n], &data[f0..f0 + n], "{e:?}");
    }
    let stored: u64 = servers
        .iter()
        .enumerate()
        .map(|(i, &ds)| {
            s.store(ds)
                .size(pfs_core::ObjectId {
                    file: fileid,
                    stripe: i as u32,
                })
                .unwrap()
        })
        .sum();
    assert_eq!(stored, data.len() as u64, "dense objects hold nothing else");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_written_through_its_ds_filehandles_reads_back_through_the_mds() {
    let s = Striped::start(3, 64 << 10, |_| {}).await;
    let (mut c, o, fileid) = open_file(&s, "f").await;
    let r = c
        .call(vec![
            putfh(&o.fh),
            layoutget_op(Layoutiomode4::LAYOUTIOMODE4_RW, o.stateid),
        ])
        .await;
    let (layout, body) = granted(&r);
    let servers = s.servers(fileid);
    let data = pattern((200 << 10) + 123);
    let map = s.map(fileid);
    let mut ds_clients = Vec::new();
    for &ds in &servers {
        ds_clients.push(s.k.ds_client(ds, "writer").await);
    }
    for e in map.extents(0, data.len() as u64).unwrap() {
        let i = e.index as usize;
        let f0 = e.file_offset as usize;
        let piece = Bytes::copy_from_slice(&data[f0..f0 + e.len as usize]);
        let r = ds_clients[i]
            .call(vec![
                putfh(&body.nfl_fh_list[i]),
                write_op(o.stateid, e.object_offset, StableHow4::FILE_SYNC4, piece),
            ])
            .await;
        assert_eq!(u64::from(write_res(&r).count), e.len);
    }
    let r = c
        .call(vec![
            putfh(&o.fh),
            layoutcommit_op(layout.logr_stateid, Some(data.len() as u64 - 1), None),
        ])
        .await;
    assert_eq!(r.status, NfsStat4::NFS4_OK, "{r:?}");
    let r = c
        .call(vec![putfh(&o.fh), read_op(o.stateid, 0, 1 << 20)])
        .await;
    let got = read_res(&r);
    assert!(got.eof);
    assert_eq!(got.data.len(), data.len());
    assert!(got.data == data, "the MDS reads what the layout wrote");
    // A read in the middle, across a stripe unit boundary.
    let r = c
        .call(vec![putfh(&o.fh), read_op(o.stateid, (64 << 10) - 10, 30)])
        .await;
    assert_eq!(read_res(&r).data, data[(64 << 10) - 10..(64 << 10) + 20]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_through_the_mds_across_stripe_units_returns_zeros_in_the_holes() {
    let unit = 64u64 << 10;
    let s = Striped::start(3, unit as u32, |_| {}).await;
    let (mut c, o, fileid) = open_file(&s, "holes").await;
    // Unit 0 (index 0) and unit 4 (index 1) get a little; units 2 and 5 (index 2) nothing.
    let head = pattern(10);
    let tail = pattern(4000);
    let far = 4 * unit + 5;
    for (at, d) in [(0, &head), (far, &tail)] {
        let r = mds_write(&mut c, &o, at, StableHow4::UNSTABLE4, d).await;
        assert_eq!(write_res(&r).count as usize, d.len());
    }
    let size = far + tail.len() as u64;
    let servers = s.servers(fileid);
    let object = |i: u32| pfs_core::ObjectId {
        file: fileid,
        stripe: i,
    };
    assert_eq!(
        s.store(servers[2]).size(object(2)).unwrap(),
        0,
        "index 2 has no object"
    );
    assert!(s.store(servers[0]).size(object(0)).unwrap() < unit);
    let r = c
        .call(vec![putfh(&o.fh), read_op(o.stateid, 0, 1 << 20)])
        .await;
    let got = read_res(&r);
    assert!(got.eof);
    let mut want = vec![0u8; size as usize];
    want[..10].copy_from_slice(&head);
    want[far as usize..].copy_from_slice(&tail);
    assert_eq!(got.data.len(), want.len());
    assert!(got.data == want, "zeros in the holes, data where written");
    // A read that lies wholly in a hole is zeros too, and stops at the size.
    let r = c
        .call(vec![putfh(&o.fh), read_op(o.stateid, 2 * unit + 3, 100)])
        .await;
    assert_eq!(read_res(&r).data, vec![0u8; 100]);
    let r = c
        .call(vec![putfh(&o.fh), read_op(o.stateid, size - 5, 100)])
        .await;
    let got = read_res(&r);
    assert_eq!((got.data.len(), got.eof), (5, true));
}

/// The fdatasync counts of the object stores of `servers`.
fn syncs(s: &Striped, servers: &[u16]) -> Vec<u64> {
    servers
        .iter()
        .map(|&d| s.store(d).io_counts().fdatasync)
        .collect()
}

fn commit_verifier(r: &Compound4Res) -> Verifier4 {
    match r.resarray.last() {
        Some(NfsResop4::Commit(CommitRes::Ok(ok))) => ok.writeverf,
        _ => panic!("COMMIT failed: {r:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn commit_through_the_mds_syncs_every_data_server_of_a_striped_file() {
    let s = Striped::start(3, 64 << 10, |_| {}).await;
    let (mut c, o, fileid) = open_file(&s, "c").await;
    let r = mds_write(&mut c, &o, 0, StableHow4::UNSTABLE4, &pattern(200 << 10)).await;
    let w = write_res(&r);
    assert_eq!(w.committed, StableHow4::UNSTABLE4);
    assert_ne!(
        w.writeverf,
        s.mds.data().verifier(),
        "a striped file's verifier is its data servers', not the MDS's"
    );
    let servers = s.servers(fileid);
    let before = syncs(&s, &servers);
    let r = c.call(vec![putfh(&o.fh), commit_op(0, 0)]).await;
    assert_eq!(commit_verifier(&r), w.writeverf, "nothing was lost");
    let after = syncs(&s, &servers);
    for (b, a) in before.iter().zip(&after) {
        assert!(a > b, "every data server synced: {before:?} -> {after:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_data_server_restart_between_an_unstable_write_and_its_commit_changes_the_verifier() {
    let mut s = Striped::start_crashsim(3, 64 << 10, |_| {}).await;
    let (mut c, o, fileid) = open_file(&s, "r").await;
    let r = mds_write(&mut c, &o, 0, StableHow4::UNSTABLE4, &pattern(1000)).await;
    let before = write_res(&r).writeverf;
    let index0 = s.servers(fileid)[0];
    s.crash(index0).await;
    s.restart(index0).await;
    let r = c.call(vec![putfh(&o.fh), commit_op(0, 0)]).await;
    let after = commit_verifier(&r);
    assert_ne!(
        after, before,
        "the client must send its unstable data again"
    );
    // Once re-sent, the verifier holds still.
    let r = mds_write(&mut c, &o, 0, StableHow4::UNSTABLE4, &pattern(1000)).await;
    assert_eq!(write_res(&r).writeverf, after);
    let r = c.call(vec![putfh(&o.fh), commit_op(0, 0)]).await;
    assert_eq!(commit_verifier(&r), after);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn io_through_the_mds_needing_a_down_data_server_is_delayed() {
    let unit = 64u64 << 10;
    let mut s = Striped::start(3, unit as u32, |_| {}).await;
    let (mut c, o, fileid) = open_file(&s, "d").await;
    let data = pattern(3 * unit as usize);
    let r = mds_write(&mut c, &o, 0, StableHow4::FILE_SYNC4, &data).await;
    assert_eq!(write_res(&r).count as usize, data.len());
    let index1 = s.servers(fileid)[1];
    s.kill(index1).await;
    let status = |r: &Compound4Res| last_status(r);
    let r = mds_write(&mut c, &o, unit + 1, StableHow4::FILE_SYNC4, b"x").await;
    assert_eq!(status(&r), NfsStat4::NFS4ERR_DELAY);
    let r = c
        .call(vec![putfh(&o.fh), read_op(o.stateid, 0, 1 << 20)])
        .await;
    assert_eq!(status(&r), NfsStat4::NFS4ERR_DELAY);
    let r = c.call(vec![putfh(&o.fh), commit_op(0, 0)]).await;
    assert_eq!(status(&r), NfsStat4::NFS4ERR_DELAY);
    // What needs only data servers that are up goes on.
    let r = mds_write(&mut c, &o, 5, StableHow4::FILE_SYNC4, b"y").await;
    assert_eq!(write_res(&r).count, 1);
    let r = c
        .call(vec![putfh(&o.fh), read_op(o.stateid, 2 * unit, 10)])
        .await;
    assert_eq!(read_res(&r).data, data[2 * unit as usize..][..10]);
    // Back up: the data it held is there.
    s.restart(index1).await;
    let r = c
        .call(vec![putfh(&o.fh), read_op(o.stateid, unit, 10)])
        .await;
    assert_eq!(read_res(&r).data, data[unit as usize..][..10]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_larger_than_a_control_call_is_cut_into_calls_and_reads_back() {
    // max_io 3 MiB with a 4 MiB stripe unit: one stripe unit takes several control calls.
    let s = Striped::start(2, 4 << 20, |c| {
        c.limits.max_io = 3 << 20;
        c.limits.max_record = 4 << 20;
    })
    .await;
    let fore = ChannelAttrs4 {
        ca_maxrequestsize: 4 << 20,
        ca_maxresponsesize: 4 << 20,
        ..channel()
    };
    let setup = Setup::new("big").reclaiming().fore(fore);
    let mut c = s.k.client_with(&setup).await;
    let r = c
        .call(vec![NfsArgop4::ReclaimComplete(ReclaimCompleteArgs {
            rca_one_fs: false,
        })])
        .await;
    assert_eq!(r.status, NfsStat4::NFS4_OK);
    let o = open_in_root(
        &mut c,
        "big",
        OPEN4_SHARE_ACCESS_BOTH,
        OPEN4_SHARE_DENY_NONE,
        "o",
    )
    .await;
    // From 3 MiB - 5: across the end of the first stripe unit.
    let data = pattern(3 << 20);
    let at = (3 << 20) - 5;
    let r = mds_write(&mut c, &o, at, StableHow4::FILE_SYNC4, &data).await;
    assert_eq!(write_res(&r).count as usize, data.len(), "{:?}", r.status);
    let r = c
        .call(vec![putfh(&o.fh), read_op(o.stateid, at, 3 << 20)])
        .await;
    let got = read_res(&r);
    assert!(got.eof);
    assert!(got.data == data);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_with_data_in_the_mds_object_keeps_it_there_and_gets_no_layout() {
    let s = Striped::start(1, 64 << 10, |_| {}).await;
    let (mut c, o, fileid) = open_file(&s, "old").await;
    // Data written before layouts were on.
    let own = pfs_core::ObjectId::whole(fileid);
    s.mds
        .data()
        .write(
            own,
            0,
            &[Bytes::from_static(b"old")],
            pfs_core::Stability::FileSync,
        )
        .unwrap();
    let r = mds_write(&mut c, &o, 3, StableHow4::FILE_SYNC4, b" data").await;
    assert_eq!(write_res(&r).count, 5);
    assert_eq!(s.mds.data().size(own).unwrap(), 8);
    assert_eq!(s.mds.store().stripes(fileid).unwrap(), None);
    let r = c.call(vec![putfh(&o.fh), read_op(o.stateid, 0, 100)]).await;
    assert_eq!(read_res(&r).data, Bytes::from_static(b"old data"));
    let r = c
        .call(vec![
            putfh(&o.fh),
            layoutget_op(Layoutiomode4::LAYOUTIOMODE4_RW, o.stateid),
        ])
        .await;
    assert_eq!(
        layoutget_res(&r).status(),
        NfsStat4::NFS4ERR_LAYOUTUNAVAILABLE
    );
}

/// RFC 8881 section 13.10: a client writing through its layout may change the data with
/// nothing reaching the MDS (the Linux client sends no LAYOUTCOMMIT after fdatasync), so
/// while another client holds an RW layout a reader is told a change attribute it has never
/// seen, every time, and revalidates its cache; the writer itself sees the recorded value.
#[tokio::test]
async fn readers_see_a_new_change_attribute_while_another_client_holds_an_rw_layout() {
    let (k, _mds) = server_with(layouts_on).await;
    let mut writer = k.client("writer").await;
    let mut reader = k.client("reader").await;
    let r = open_and_layoutget(&mut writer, "f", Layoutiomode4::LAYOUTIOMODE4_READ).await;
    let fh = getfh_res(&r);
    // A READ layout changes nothing: one value for everybody.
    let (_, _, recorded) = size_mtime_change(&mut writer, &fh).await;
    assert_eq!(size_mtime_change(&mut reader, &fh).await.2, recorded);
    // An RW layout: the reader gets a new value each time, the writer the recorded one.
    let open = open_res(&r).stateid;
    let r = writer
        .call(vec![
            putfh(&fh),
            layoutget_op(Layoutiomode4::LAYOUTIOMODE4_RW, open),
        ])
        .await;
    granted(&r);
    let a = size_mtime_change(&mut reader, &fh).await.2;
    let b = size_mtime_change(&mut reader, &fh).await.2;
    assert!(
        a != recorded && b != recorded && a != b,
        "{recorded} {a} {b}"
    );
    assert_eq!(size_mtime_change(&mut writer, &fh).await.2, recorded);
}

// ---------------------------------------------------------------------------------------------
// Layout policy per directory (`cluster.layout.directories`).
// ---------------------------------------------------------------------------------------------

/// `/narrow`: 64 KiB units over one data server; `/narrow/wide`: two data servers, the unit
/// the export's (1 MiB). Elsewhere: the export's policy, 1 MiB over all three.
fn directory_policies(c: &mut Config) {
    layouts_on(c);
    c.cluster.layout.directories = vec![
        DirectoryLayout {
            export: None,
            path: "/narrow".into(),
            stripe_unit: Some(64 << 10),
            stripe_count: Some(1),
            mirrors: None,
        },
        DirectoryLayout {
            export: Some(1),
            path: "/narrow/wide".into(),
            stripe_unit: None,
            stripe_count: Some(2),
            mirrors: None,
        },
    ];
}

/// OPEN (create) of `name` in directory `dir` (a path from the root), without a layout.
async fn create_in(c: &mut Client, dir: &str, name: &str) -> Compound4Res {
    let mut ops = vec![NfsArgop4::PutRootFh];
    ops.extend(lookups(dir));
    ops.push(open_op(
        by_name(name),
        unchecked(0o644),
        OPEN4_SHARE_ACCESS_BOTH,
        OPEN4_SHARE_DENY_NONE,
        "owner",
    ));
    ops.push(NfsArgop4::GetFh);
    let r = c.call(ops).await;
    assert_eq!(r.status, NfsStat4::NFS4_OK, "{r:?}");
    r
}

/// OPEN (create, or open if it exists) of `dir`/`name` with LAYOUTGET in the same COMPOUND,
/// as the Linux client sends it: the layout's stripe unit, its device's stripe count, its
/// number of DS filehandles, and the layout body.
async fn layout_in(c: &mut Client, dir: &str, name: &str) -> (u32, u16, usize, Nfsv41FileLayout4) {
    let r = open_and_layoutget_in(c, dir, name, Layoutiomode4::LAYOUTIOMODE4_RW).await;
    let body = granted(&r).1;
    let device = layouts::Device::from_id(&body.nfl_deviceid).expect("one of our device ids");
    (
        body.nfl_util & !NFL4_UFLG_MASK,
        device.count,
        body.nfl_fh_list.len(),
        body,
    )
}

fn mkdir_op(name: &str) -> NfsArgop4 {
    NfsArgop4::Create(CreateArgs {
        objtype: Createtype4::Dir,
        objname: Utf8String::from(name),
        createattrs: Fattr4::default(),
    })
}

/// OPEN's create of a file with a mode and a modify time under a directory with a layout
/// policy of its own is one metadata change: the create, its times and its stripe set commit
/// in one transaction (one fsync), not three.
#[tokio::test]
async fn a_create_with_attributes_under_a_directory_policy_commits_once() {
    let (k, mds) = server_with(directory_policies).await;
    let mut c = k.client("one-commit").await;
    let mtime = Nfstime4 {
        seconds: 1_600_000_000,
        nseconds: 500,
    };
    let attrs = fattr(&FileAttrs {
        mode: Some(0o600),
        time_modify_set: Some(Settime4::SetToClientTime(mtime)),
        ..FileAttrs::default()
    });
    let before = mds.store().commit_stats();
    let mut ops = vec![NfsArgop4::PutRootFh];
    ops.extend(lookups("narrow"));
    ops.push(open_op(
        by_name("stamped"),
        Openflag4::Create(Createhow4::Guarded(attrs)),
        OPEN4_SHARE_ACCESS_BOTH,
        OPEN4_SHARE_DENY_NONE,
        "owner",
    ));
    ops.push(NfsArgop4::GetFh);
    let r = c.call(ops).await;
    assert_eq!(r.status, NfsStat4::NFS4_OK, "{r:?}");
    let after = mds.store().commit_stats();
    // One transaction, durable: the OPEN is the COMPOUND's last operation that may change
    // the store, so it is not deferred and needs no sync after it.
    assert_eq!(
        after.deferred_commits - before.deferred_commits,
        0,
        "nothing deferred"
    );
    assert_eq!(after.commits - before.commits, 1, "one commit");
    let (fileid, _) = fileid_of(&mut c, &getfh_res(&r)).await;
    let set = mds
        .store()
        .stripes(fileid)
        .unwrap()
        .expect("fixed at the create");
    assert_eq!((set.unit, set.device.count), (64 << 10, 1));
    let inode = mds.store().getattr(fileid).unwrap();
    assert_eq!((inode.mode, inode.mtime), (0o600, mtime));
}

#[tokio::test]
async fn a_file_created_under_a_configured_directory_gets_the_nearest_directorys_policy() {
    let (k, mds) = server_with(directory_policies).await;
    let mut c = k.client("dirs").await;
    // The configured directories were made at start; make one below each, and one elsewhere.
    let r = c
        .call(vec![
            NfsArgop4::PutRootFh,
            lookup("narrow"),
            mkdir_op("sub"),
            NfsArgop4::PutRootFh,
            mkdir_op("other"),
            NfsArgop4::PutRootFh,
            lookup("narrow"),
            lookup("wide"),
            mkdir_op("deeper"),
        ])
        .await;
    assert_eq!(r.status, NfsStat4::NFS4_OK, "{r:?}");
    let narrow = (64 << 10, 1, 1);
    let wide = (1 << 20, 2, 2);
    let export = (1 << 20, 3, 3);
    for (dir, want) in [
        ("narrow", narrow),
        ("narrow/sub", narrow),
        ("narrow/wide", wide),
        ("narrow/wide/deeper", wide),
        ("", export),
        ("other", export),
    ] {
        let (unit, count, fhs, body) = layout_in(&mut c, dir, "f").await;
        assert_eq!((unit, count, fhs), want, "a file in /{dir}");
        assert_eq!(body.nfl_util & NFL4_UFLG_DENSE, NFL4_UFLG_DENSE);
    }
    // The set is fixed by the OPEN itself, before any LAYOUTGET.
    let r = create_in(&mut c, "narrow/sub", "no-layout-yet").await;
    let (fileid, _) = fileid_of(&mut c, &getfh_res(&r)).await;
    let set = mds
        .store()
        .stripes(fileid)
        .unwrap()
        .expect("fixed at the create");
    assert_eq!((set.unit, set.device.count), (64 << 10, 1));
    // A directory renamed out of the configured tree: its new files follow their new place;
    // the file made while it was inside keeps its set.
    let r = c
        .call(vec![
            NfsArgop4::PutRootFh,
            lookup("narrow"),
            NfsArgop4::SaveFh,
            NfsArgop4::PutRootFh,
            NfsArgop4::Rename(RenameArgs {
                oldname: Utf8String::from("sub"),
                newname: Utf8String::from("moved"),
            }),
        ])
        .await;
    assert_eq!(r.status, NfsStat4::NFS4_OK, "{r:?}");
    assert_eq!(layout_in(&mut c, "moved", "new").await.0, 1 << 20);
    assert_eq!(layout_in(&mut c, "moved", "f").await.0, 64 << 10);
    // GETDEVICELIST lists the windows of the directories' stripe counts too.
    let r = c
        .call(vec![NfsArgop4::PutRootFh, getdevicelist_op(100, 0, [0; 8])])
        .await;
    let NfsResop4::GetDeviceList(GetDeviceListRes::Ok(list)) = &r.resarray[2] else {
        panic!("GETDEVICELIST failed: {r:?}")
    };
    let counts: std::collections::BTreeSet<u16> = list
        .gdlr_deviceid_list
        .iter()
        .map(|id| layouts::Device::from_id(id).unwrap().count)
        .collect();
    assert_eq!(counts, [1, 2, 3].into());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_created_while_no_data_server_is_up_gets_the_exports_policy_later() {
    let mut s = Striped::start(3, 1 << 20, directory_policies).await;
    for id in 1..=3 {
        s.kill(id).await;
    }
    let mut c = s.k.client("down").await;
    let r = create_in(&mut c, "narrow", "f").await;
    let (fileid, _) = fileid_of(&mut c, &getfh_res(&r)).await;
    assert_eq!(s.mds.store().stripes(fileid).unwrap(), None, "left unfixed");
    for id in 1..=3 {
        s.restart(id).await;
    }
    let (unit, count, fhs, _) = layout_in(&mut c, "narrow", "f").await;
    assert_eq!((unit, count, fhs), (1 << 20, 3, 3));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_directorys_policy_moves_only_files_created_after_it_changes_and_sets_survive_a_restart()
{
    let dir = tempfile::tempdir().unwrap();
    let before = boot(dir.path(), directory_policies, async |k: &Cluster| {
        let mut c = k.client("boot1").await;
        layout_in(&mut c, "narrow", "f").await.3
    })
    .await;
    assert_eq!(before.nfl_fh_list.len(), 1);
    // The next boot configures /narrow otherwise.
    let changed = |c: &mut Config| {
        directory_policies(c);
        c.cluster.layout.directories[0].stripe_unit = Some(128 << 10);
        c.cluster.layout.directories[0].stripe_count = Some(3);
    };
    let (after, fresh) = boot(dir.path(), changed, async |k: &Cluster| {
        let mut c = k.client("boot2").await;
        let after = layout_in(&mut c, "narrow", "f").await.3;
        let fresh = layout_in(&mut c, "narrow", "g").await;
        (after, fresh)
    })
    .await;
    assert_eq!(after.nfl_deviceid, before.nfl_deviceid);
    assert_eq!(after.nfl_util, before.nfl_util);
    assert_eq!(objects(&after), objects(&before));
    assert_eq!((fresh.0, fresh.1, fresh.2), (128 << 10, 3, 3));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_configured_path_through_a_file_stops_the_start_naming_the_field() {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = boot(dir.path(), layouts_on, async |k: &Cluster| {
        let mut c = k.client("boot1").await;
        create_in(&mut c, "", "plain").await;
        k.config().clone()
    })
    .await;
    cfg.cluster.layout.directories = vec![DirectoryLayout {
        export: None,
        path: "/plain/sub".into(),
        stripe_unit: None,
        stripe_count: Some(1),
        mirrors: None,
    }];
    // The last boot's store may still be closing on another thread: wait that out.
    let e = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            match Mds::open(cfg.clone()) {
                Err(mds::server::StartError::Store(e)) if e.is_already_open() => {
                    tokio::time::sleep(Duration::from_millis(1)).await
                }
                r => break r.err().expect("no start"),
            }
        }
    })
    .await
    .expect("the last boot's store closed");
    assert_eq!(
        e.to_string(),
        "cluster.layout.directories[0].path: \"/plain/sub\" in export 1: /plain: not a directory"
    );
}

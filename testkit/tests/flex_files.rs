//! Flex files layouts (RFC 8435) on the in-memory cluster, where the export serves them
//! (`cluster.layout.layout_type: flex_files`): what the MDS lists, grants and describes, and
//! a write through the layout's data server that the MDS then reads back; file layouts of
//! the same export for a client that asks for those; no flex files layouts elsewhere.

use std::sync::Arc;

use bytes::Bytes;
use mds::Mds;
use nfs_proto::nfs4::attr::*;
use nfs_proto::nfs4::layout_files::Nfsv41FileLayout4;
use nfs_proto::nfs4::layout_flex::*;
use nfs_proto::nfs4::*;
use nfs_proto::xdr::to_bytes;
use testkit::cluster::Cluster;
use testkit::prelude::*;

async fn cluster(flex: bool) -> (Cluster, Arc<Mds>) {
    let k = Cluster::builder()
        .data_servers(3)
        .lease(30)
        .configure(move |c| {
            c.cluster.layouts = true;
            if flex {
                c.cluster.layout.layout_type = cluster::config::LayoutType::FlexFiles;
            }
        })
        .start()
        .await;
    let mds = k.mds().clone();
    (k, mds)
}

fn layoutget_of(ty: Layouttype4, iomode: Layoutiomode4) -> NfsArgop4 {
    let mut op = layoutget_op(iomode, CURRENT_STATEID);
    if let NfsArgop4::LayoutGet(a) = &mut op {
        a.loga_layout_type = ty;
    }
    op
}

/// OPEN (create) `name` for reading and writing and LAYOUTGET RW of type `ty` in one COMPOUND.
async fn open_with_layout(c: &mut Client, name: &str, ty: Layouttype4) -> Compound4Res {
    open_and_layoutget_of(c, "", name, Layoutiomode4::LAYOUTIOMODE4_RW, ty).await
}

fn layout_of(r: &Compound4Res) -> (LayoutGetResOk, LayoutContent4) {
    match r.resarray.last() {
        Some(NfsResop4::LayoutGet(LayoutGetRes::Ok(ok))) => {
            let content = ok.logr_layout[0].lo_content.clone();
            (ok.clone(), content)
        }
        _ => panic!("no layout: {r:?}"),
    }
}

async fn root_layout_types(c: &mut Client) -> Vec<Layouttype4> {
    let r = c
        .call(vec![
            NfsArgop4::PutRootFh,
            NfsArgop4::GetAttr(GetAttrArgs {
                attr_request: Bitmap4::from_bits([FATTR4_FS_LAYOUT_TYPES]),
            }),
        ])
        .await;
    let Some(NfsResop4::GetAttr(GetAttrRes::Ok(a))) = r.resarray.last() else {
        panic!("GETATTR failed: {r:?}")
    };
    FileAttrs::from_fattr(&a.obj_attributes)
        .unwrap()
        .fs_layout_types
        .unwrap()
}

async fn device_info(
    c: &mut Client,
    ty: Layouttype4,
    id: Deviceid4,
) -> Result<DeviceAddr4, NfsStat4> {
    let r = c
        .call(vec![NfsArgop4::GetDeviceInfo(GetDeviceInfoArgs {
            gdia_device_id: id,
            gdia_layout_type: ty,
            gdia_maxcount: 64 << 10,
            gdia_notify_types: Bitmap4::new(),
        })])
        .await;
    match r.resarray.last() {
        Some(NfsResop4::GetDeviceInfo(GetDeviceInfoRes::Ok(ok))) => Ok(ok.gdir_device_addr.clone()),
        _ => Err(last_status(&r)),
    }
}

/// The whole path: fs_layout_types, LAYOUTGET of a flex files layout (one mirror of the one
/// data server the file lives on, the client's open stateid for I/O), its device, a write
/// through it that the MDS reads back after LAYOUTCOMMIT, and a LAYOUTRETURN that reports an
/// error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flex_files_layout_names_the_files_data_server_which_takes_its_writes() {
    let (k, mds) = cluster(true).await;
    let mut c = k.client("ff").await;
    assert_eq!(
        root_layout_types(&mut c).await,
        [
            Layouttype4::LAYOUT4_FLEX_FILES,
            Layouttype4::LAYOUT4_NFSV4_1_FILES
        ]
    );
    let r = open_with_layout(&mut c, "f", Layouttype4::LAYOUT4_FLEX_FILES).await;
    assert_eq!(r.status, NfsStat4::NFS4_OK, "{r:?}");
    let open = open_res(&r).stateid;
    let fh = getfh_res(&r);
    let (ok, content) = layout_of(&r);
    assert_eq!(content.loc_type, Layouttype4::LAYOUT4_FLEX_FILES);
    let l = FfLayout4::from_content(&content).unwrap();
    assert_eq!((l.ffl_stripe_unit, l.ffl_mirrors.len()), (0, 1));
    assert_eq!(l.ffl_flags & FF_FLAGS_NO_LAYOUTCOMMIT, 0);
    let [ds] = &l.ffl_mirrors[0].ffm_data_servers[..] else {
        panic!("one data server: {l:?}")
    };
    assert_eq!(
        ds.ffds_stateid.other, ok.logr_stateid.other,
        "the layout's own stateid for I/O"
    );
    assert_eq!(ds.ffds_fh_vers.len(), 1);
    // The file lives on one data server; the layout's device is that one.
    let (fileid, _) = fileid_of(&mut c, &fh).await;
    let set = mds.store().stripes(fileid).unwrap().expect("a stripe set");
    let [server] = mds.stripe_servers(&set).unwrap()[..] else {
        panic!("one data server per flex files file")
    };
    assert_eq!(ds.ffds_deviceid, set.device.id());
    let addr = device_info(&mut c, Layouttype4::LAYOUT4_FLEX_FILES, ds.ffds_deviceid)
        .await
        .unwrap();
    let addr = FfDeviceAddr4::from_device_addr(&addr).unwrap();
    assert_eq!(
        addr.ffda_versions,
        [FfDeviceVersions4 {
            ffdv_version: 4,
            ffdv_minorversion: 1,
            ffdv_rsize: mds.cfg().limits.max_io,
            ffdv_wsize: mds.cfg().limits.max_io,
            ffdv_tightly_coupled: true,
        }]
    );
    assert_eq!(addr.ffda_netaddrs.0.len(), 1, "{addr:?}");
    // The same device as a file layout device names the same server.
    let files = device_info(&mut c, Layouttype4::LAYOUT4_NFSV4_1_FILES, ds.ffds_deviceid)
        .await
        .unwrap();
    let files = layout_files::Nfsv41FileLayoutDsAddr4::from_device_addr(&files).unwrap();
    assert_eq!(
        files.nflda_multipath_ds_list,
        std::slice::from_ref(&addr.ffda_netaddrs)
    );
    // GETDEVICELIST of flex files devices: one per data server, this one among them.
    let r = c
        .call(vec![
            NfsArgop4::PutRootFh,
            NfsArgop4::GetDeviceList(GetDeviceListArgs {
                gdla_layout_type: Layouttype4::LAYOUT4_FLEX_FILES,
                gdla_maxdevices: 16,
                gdla_cookie: 0,
                gdla_cookieverf: [0; 8],
            }),
        ])
        .await;
    let Some(NfsResop4::GetDeviceList(GetDeviceListRes::Ok(list))) = r.resarray.last() else {
        panic!("GETDEVICELIST: {r:?}")
    };
    assert_eq!(list.gdlr_deviceid_list.len(), 3);
    assert!(list.gdlr_deviceid_list.contains(&ds.ffds_deviceid));
    // A write through the layout, as the Linux client's flex files driver makes it: the
    // layout's stateid and filehandle, at the file's own offset.
    let data = Bytes::from(pattern(5000));
    let mut d = k.ds_client(server, "ff-ds").await;
    let w = d
        .call(vec![
            putfh(&ds.ffds_fh_vers[0]),
            write_op(ds.ffds_stateid, 0, StableHow4::FILE_SYNC4, data.clone()),
        ])
        .await;
    assert_eq!(write_res(&w).count, 5000, "{w:?}");
    let r = c
        .call(vec![
            putfh(&fh),
            layoutcommit_op(ok.logr_stateid, Some(4999), None),
            read_op(open, 0, 8192),
        ])
        .await;
    assert_eq!(r.status, NfsStat4::NFS4_OK, "{r:?}");
    let got = read_res(&r);
    assert_eq!((&got.data[..], got.eof), (&data[..], true));
    // LAYOUTSTATS and LAYOUTERROR under the layout: the data server's figures and errors.
    let update = FfLayoutupdate4 {
        ffl_write: FfIoLatency4 {
            ffil_ops_requested: 1,
            ffil_bytes_requested: 5000,
            ffil_ops_completed: 1,
            ffil_bytes_completed: 5000,
            ffil_aggregate_completion_time: Nfstime4 {
                seconds: 0,
                nseconds: 2_000_000,
            },
            ..Default::default()
        },
        ffl_duration: Nfstime4 {
            seconds: 1,
            nseconds: 0,
        },
        ..Default::default()
    };
    let error = DeviceError4 {
        de_deviceid: ds.ffds_deviceid,
        de_status: NfsStat4::NFS4ERR_NXIO,
        de_opnum: NfsOpnum4::OP_WRITE,
    };
    let r = c
        .call(vec![
            putfh(&fh),
            NfsArgop4::LayoutStats(LayoutStatsArgs {
                lsa_offset: 0,
                lsa_length: u64::MAX,
                lsa_stateid: ok.logr_stateid,
                lsa_read: IoInfo4::default(),
                lsa_write: IoInfo4 {
                    ii_count: 1,
                    ii_bytes: 5000,
                },
                lsa_deviceid: ds.ffds_deviceid,
                lsa_layoutupdate: update.to_update(),
            }),
            NfsArgop4::LayoutError(LayoutErrorArgs {
                lea_offset: 0,
                lea_length: 5000,
                lea_stateid: ok.logr_stateid,
                lea_errors: vec![error],
            }),
        ])
        .await;
    assert_eq!(r.status, NfsStat4::NFS4_OK, "{r:?}");
    // Under another stateid than a layout's of the file: refused.
    let r = c
        .call(vec![
            putfh(&fh),
            NfsArgop4::LayoutError(LayoutErrorArgs {
                lea_offset: 0,
                lea_length: 5000,
                lea_stateid: open,
                lea_errors: vec![error],
            }),
        ])
        .await;
    assert_eq!(last_status(&r), NfsStat4::NFS4ERR_BAD_STATEID);
    // A LAYOUTRETURN with an error report is taken, and the error counted.
    let report = FfLayoutreturn4 {
        fflr_ioerr_report: vec![FfIoerr4 {
            ffie_offset: 0,
            ffie_length: 5000,
            ffie_stateid: ds.ffds_stateid,
            ffie_errors: vec![DeviceError4 {
                de_deviceid: ds.ffds_deviceid,
                de_status: NfsStat4::NFS4ERR_NXIO,
                de_opnum: NfsOpnum4::OP_WRITE,
            }],
        }],
        fflr_iostats_report: Vec::new(),
    };
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
                    lrf_stateid: ok.logr_stateid,
                    lrf_body: to_bytes(&report),
                }),
            }),
        ])
        .await;
    assert_eq!(r.status, NfsStat4::NFS4_OK, "{r:?}");
    let reports = mds.pnfs().reports().snapshot();
    let got = reports
        .iter()
        .find(|(id, _)| *id == u32::from(server))
        .map(|(_, r)| *r)
        .expect("a report of the layout's data server");
    assert_eq!(
        (got.errors, got.stats),
        (2, 1),
        "LAYOUTERROR's and the return's errors, the LAYOUTSTATS"
    );
    assert!((got.write_latency.unwrap() - 0.002).abs() < 1e-9, "{got:?}");
    assert_eq!(got.write_bandwidth, Some(5000.0));
    assert_eq!(got.read_latency, None);
    // New files avoid the data server reported failing (for a minute), while others are up.
    for name in ["g1", "g2", "g3"] {
        let r = open_with_layout(&mut c, name, Layouttype4::LAYOUT4_FLEX_FILES).await;
        let (_, content) = layout_of(&r);
        let l = FfLayout4::from_content(&content).unwrap();
        let id = l.ffl_mirrors[0].ffm_data_servers[0].ffds_deviceid;
        assert_ne!(
            id, ds.ffds_deviceid,
            "{name} placed on the failing data server"
        );
    }
    // The data server now refuses the returned layout's handle. The MDS tells it in the
    // background (a returned layout's revocation is queued: nothing waits for it), so the
    // refusal may take a moment to arrive.
    let status = std::cell::Cell::new(NfsStat4::NFS4_OK);
    let d = tokio::sync::Mutex::new(d);
    k.until_async(
        "the data server still takes the returned layout's handle",
        || async {
            let w = d
                .lock()
                .await
                .call(vec![
                    putfh(&ds.ffds_fh_vers[0]),
                    write_op(ds.ffds_stateid, 0, StableHow4::FILE_SYNC4, data.clone()),
                ])
                .await;
            status.set(last_status(&w));
            status.get() != NfsStat4::NFS4_OK
        },
    )
    .await;
    assert_eq!(status.get(), NfsStat4::NFS4ERR_PNFS_NO_LAYOUT);
}

/// A client that asks for file layouts on a flex files export gets them (of the one data
/// server its files live on); an export that does not serve flex files refuses the type,
/// and lists only file layouts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_export_serves_the_types_it_lists() {
    let (k, _mds) = cluster(true).await;
    let mut c = k.client("files").await;
    let r = open_with_layout(&mut c, "f", Layouttype4::LAYOUT4_NFSV4_1_FILES).await;
    let (_, content) = layout_of(&r);
    let body = Nfsv41FileLayout4::from_content(&content).unwrap();
    assert_eq!(body.nfl_fh_list.len(), 1);
    // The same client, the same file: a flex files layout now is refused (one layout type
    // per client and file).
    let fh = getfh_res(&r);
    let open = open_res(&r).stateid;
    let mut get = layoutget_of(
        Layouttype4::LAYOUT4_FLEX_FILES,
        Layoutiomode4::LAYOUTIOMODE4_READ,
    );
    if let NfsArgop4::LayoutGet(a) = &mut get {
        a.loga_stateid = open;
    }
    let r = c.call(vec![putfh(&fh), get]).await;
    assert_eq!(last_status(&r), NfsStat4::NFS4ERR_LAYOUTUNAVAILABLE);

    let (k, _mds) = cluster(false).await;
    let mut c = k.client("plain").await;
    assert_eq!(
        root_layout_types(&mut c).await,
        [Layouttype4::LAYOUT4_NFSV4_1_FILES]
    );
    let r = open_with_layout(&mut c, "f", Layouttype4::LAYOUT4_FLEX_FILES).await;
    assert_eq!(last_status(&r), NfsStat4::NFS4ERR_UNKNOWN_LAYOUTTYPE);
    // A file layout device of three servers is no flex files device.
    let r = open_with_layout(&mut c, "g", Layouttype4::LAYOUT4_NFSV4_1_FILES).await;
    let (_, content) = layout_of(&r);
    let body = Nfsv41FileLayout4::from_content(&content).unwrap();
    assert_eq!(
        device_info(&mut c, Layouttype4::LAYOUT4_FLEX_FILES, body.nfl_deviceid).await,
        Err(NfsStat4::NFS4ERR_NOENT)
    );
}

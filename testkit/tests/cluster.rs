//! The in-memory cluster at work: a striped file written through the MDS and read back, a
//! layout's data server reached over the in-memory transport, a killed data server seen
//! down and back, a crash losing unsynced data, and the metadata store in redb on disk.

use std::sync::Arc;

use bytes::Bytes;
use nfs_proto::nfs4::attr::FileAttrs;
use nfs_proto::nfs4::layout_files::{socket_addr_from_netaddr, Nfsv41FileLayout4};
use nfs_proto::nfs4::*;
use nfs_proto::rpc::{AuthFlavor, AuthSysParms, OpaqueAuth};
use nfs_proto::transport::{self, Conn, ConnLimits, NoCalls};
use nfs_proto::xdr::{self, Utf8String};
use pfs_core::ObjectId;
use testkit::cluster::{Cluster, StoreKind, MDS_ADDR};
use tokio::io::DuplexStream;

/// A raw NFSv4.1 session over one in-process connection: EXCHANGE_ID, CREATE_SESSION, then
/// SEQUENCE-first COMPOUNDs on slot 0. (Minimal on purpose; the test kit's client replaces it.)
struct Session {
    conn: Conn,
    sessionid: Sessionid4,
    seq: u32,
}

fn auth_sys() -> OpaqueAuth {
    let p = AuthSysParms {
        stamp: 1,
        machinename: Utf8String::from("testkit"),
        uid: 0,
        gid: 0,
        gids: vec![],
    };
    OpaqueAuth::new(AuthFlavor::AUTH_SYS, xdr::to_bytes(&p))
}

async fn compound(conn: &Conn, ops: Vec<NfsArgop4>) -> Compound4Res {
    let args = Compound4Args {
        tag: Utf8String::from("testkit"),
        minorversion: 1,
        argarray: ops,
    };
    let body = conn
        .call(
            NFS4_PROGRAM,
            NFS_V4,
            NFSPROC4_COMPOUND,
            auth_sys(),
            vec![xdr::to_bytes(&args)],
        )
        .await
        .expect("rpc");
    xdr::from_bytes(body).expect("reply decodes")
}

fn channel() -> ChannelAttrs4 {
    ChannelAttrs4 {
        ca_headerpadsize: 0,
        ca_maxrequestsize: 1 << 20,
        ca_maxresponsesize: 1 << 20,
        ca_maxresponsesize_cached: 64 << 10,
        ca_maxoperations: 16,
        ca_maxrequests: 8,
        ca_rdma_ird: vec![],
    }
}

impl Session {
    async fn new(stream: DuplexStream, owner: &str) -> Session {
        let addr = MDS_ADDR;
        let (conn, run) = transport::start(
            stream,
            0,
            addr,
            addr,
            Arc::new(NoCalls),
            ConnLimits::default(),
        );
        tokio::spawn(run);
        let ex = ExchangeIdArgs {
            eia_clientowner: ClientOwner4 {
                co_verifier: [7; 8],
                co_ownerid: Bytes::copy_from_slice(owner.as_bytes()),
            },
            eia_flags: 0,
            eia_state_protect: StateProtect4A::None,
            eia_client_impl_id: vec![],
        };
        let r = compound(&conn, vec![NfsArgop4::ExchangeId(ex)]).await;
        let NfsResop4::ExchangeId(ExchangeIdRes::Ok(ok)) = &r.resarray[0] else {
            panic!("EXCHANGE_ID failed: {r:?}")
        };
        let cs = CreateSessionArgs {
            csa_clientid: ok.eir_clientid,
            csa_sequence: ok.eir_sequenceid,
            csa_flags: 0,
            csa_fore_chan_attrs: channel(),
            csa_back_chan_attrs: channel(),
            csa_cb_program: 0x4000_0000,
            csa_sec_parms: vec![CallbackSecParms4::AuthNone],
        };
        let r = compound(&conn, vec![NfsArgop4::CreateSession(cs)]).await;
        let NfsResop4::CreateSession(CreateSessionRes::Ok(s)) = &r.resarray[0] else {
            panic!("CREATE_SESSION failed: {r:?}")
        };
        let mut s = Session {
            conn,
            sessionid: s.csr_sessionid,
            seq: 0,
        };
        let r = s
            .call(vec![NfsArgop4::ReclaimComplete(ReclaimCompleteArgs {
                rca_one_fs: false,
            })])
            .await;
        assert_eq!(r.status, NfsStat4::NFS4_OK, "{r:?}");
        s
    }

    async fn call(&mut self, ops: Vec<NfsArgop4>) -> Compound4Res {
        self.seq += 1;
        let mut all = vec![NfsArgop4::Sequence(SequenceArgs {
            sa_sessionid: self.sessionid,
            sa_sequenceid: self.seq,
            sa_slotid: 0,
            sa_highest_slotid: 0,
            sa_cachethis: false,
        })];
        all.extend(ops);
        compound(&self.conn, all).await
    }
}

const UNIT: usize = 1 << 20;

fn pattern(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 7 % 251) as u8).collect()
}

/// What OPEN with create and LAYOUTGET RW gave.
struct Opened {
    fh: NfsFh4,
    stateid: Stateid4,
    layout: Option<Nfsv41FileLayout4>,
}

async fn create(c: &mut Session, name: &str, layout: bool) -> Opened {
    let mut ops = vec![
        NfsArgop4::PutRootFh,
        NfsArgop4::Open(OpenArgs {
            seqid: 0,
            share_access: OPEN4_SHARE_ACCESS_BOTH,
            share_deny: OPEN4_SHARE_DENY_NONE,
            owner: StateOwner4 {
                clientid: 0,
                owner: Bytes::from_static(b"owner"),
            },
            openhow: Openflag4::Create(Createhow4::Unchecked(
                FileAttrs {
                    mode: Some(0o644),
                    ..FileAttrs::default()
                }
                .to_fattr(
                    &FileAttrs {
                        mode: Some(0o644),
                        ..FileAttrs::default()
                    }
                    .mask(),
                ),
            )),
            claim: OpenClaim4::Null(Utf8String::from(name)),
        }),
        NfsArgop4::GetFh,
    ];
    if layout {
        ops.push(NfsArgop4::LayoutGet(LayoutGetArgs {
            loga_signal_layout_avail: false,
            loga_layout_type: Layouttype4::LAYOUT4_NFSV4_1_FILES,
            loga_iomode: Layoutiomode4::LAYOUTIOMODE4_RW,
            loga_offset: 0,
            loga_length: u64::MAX,
            loga_minlength: 4096,
            loga_stateid: Stateid4 {
                seqid: 1,
                other: [0; 12],
            },
            loga_maxcount: 4096,
        }));
    }
    let r = c.call(ops).await;
    assert_eq!(r.status, NfsStat4::NFS4_OK, "{r:?}");
    let mut out = Opened {
        fh: NfsFh4::default(),
        stateid: Stateid4::default(),
        layout: None,
    };
    for op in &r.resarray {
        match op {
            NfsResop4::Open(OpenRes::Ok(ok)) => out.stateid = ok.stateid,
            NfsResop4::GetFh(GetFhRes::Ok(ok)) => out.fh = ok.object.clone(),
            NfsResop4::LayoutGet(LayoutGetRes::Ok(ok)) => {
                out.layout = Some(
                    Nfsv41FileLayout4::from_content(&ok.logr_layout[0].lo_content)
                        .expect("file layout"),
                )
            }
            _ => {}
        }
    }
    out
}

fn write_op(stateid: Stateid4, offset: u64, data: &[u8]) -> NfsArgop4 {
    NfsArgop4::Write(WriteArgs {
        stateid,
        offset,
        stable: StableHow4::FILE_SYNC4,
        data: Bytes::copy_from_slice(data),
    })
}

fn read_op(stateid: Stateid4, offset: u64, count: u32) -> NfsArgop4 {
    NfsArgop4::Read(ReadArgs {
        stateid,
        offset,
        count,
    })
}

fn read_data(r: &Compound4Res) -> Bytes {
    match r.resarray.last() {
        Some(NfsResop4::Read(ReadRes::Ok(ok))) => ok.data.clone(),
        _ => panic!("READ failed: {r:?}"),
    }
}

fn putfh(fh: &NfsFh4) -> NfsArgop4 {
    NfsArgop4::PutFh(PutFhArgs { object: fh.clone() })
}

/// The NFS address of the data server a layout's device names for stripe index `index`.
async fn device_addr(
    c: &mut Session,
    layout: &Nfsv41FileLayout4,
    index: usize,
) -> std::net::SocketAddr {
    let r = c
        .call(vec![NfsArgop4::GetDeviceInfo(GetDeviceInfoArgs {
            gdia_device_id: layout.nfl_deviceid,
            gdia_layout_type: Layouttype4::LAYOUT4_NFSV4_1_FILES,
            gdia_maxcount: 1 << 16,
            gdia_notify_types: Bitmap4::default(),
        })])
        .await;
    let Some(NfsResop4::GetDeviceInfo(GetDeviceInfoRes::Ok(ok))) = r.resarray.last() else {
        panic!("GETDEVICEINFO failed: {r:?}")
    };
    let dev = nfs_proto::nfs4::layout_files::Nfsv41FileLayoutDsAddr4::from_device_addr(
        &ok.gdir_device_addr,
    )
    .expect("device decodes");
    let ds = dev.nflda_stripe_indices[index] as usize;
    socket_addr_from_netaddr(&dev.nflda_multipath_ds_list[ds].0[0]).expect("an address")
}

#[tokio::test]
async fn a_striped_file_written_through_the_mds_reads_back_and_lands_on_every_data_server() {
    let cluster = Cluster::builder()
        .data_servers(3)
        .configure(|cfg| cfg.cluster.layouts = true)
        .start()
        .await;
    let mut c = Session::new(cluster.connect_mds(), "writer").await;
    let f = create(&mut c, "striped", false).await;
    // Four stripe units: through the MDS's data path to three data servers.
    let data = pattern(4 * UNIT);
    // Half a unit per call: a whole one with its COMPOUND is over the session's 1 MiB.
    let chunk = UNIT / 2;
    for (k, piece) in data.chunks(chunk).enumerate() {
        let r = c
            .call(vec![
                putfh(&f.fh),
                write_op(f.stateid, (k * chunk) as u64, piece),
            ])
            .await;
        assert_eq!(r.status, NfsStat4::NFS4_OK, "{r:?}");
    }
    let mut back = Vec::new();
    for k in 0..8 {
        let r = c
            .call(vec![
                putfh(&f.fh),
                read_op(f.stateid, (k * chunk) as u64, chunk as u32),
            ])
            .await;
        back.extend_from_slice(&read_data(&r));
    }
    assert_eq!(back, data);
    // Every data server holds a piece: the file is striped over all three.
    let mds = cluster.mds();
    let fileid = mds
        .store()
        .lookup(mds.store().root().unwrap().fileid, b"striped")
        .unwrap()
        .fileid;
    let set = mds.store().stripes(fileid).unwrap().expect("a stripe set");
    let servers = mds.stripe_servers(&set).unwrap();
    assert_eq!(servers.len(), 3);
    for (stripe, id) in servers.iter().enumerate() {
        let size = cluster
            .ds_objects(*id)
            .size(ObjectId {
                file: fileid,
                stripe: stripe as u32,
            })
            .unwrap();
        assert!(size > 0, "nothing on data server {id}");
    }
}

#[tokio::test]
async fn a_layouts_data_server_is_reached_over_the_in_memory_transport() {
    let cluster = Cluster::builder()
        .data_servers(2)
        .configure(|cfg| cfg.cluster.layouts = true)
        .start()
        .await;
    let mut c = Session::new(cluster.connect_mds(), "pnfs").await;
    let f = create(&mut c, "laid-out", true).await;
    let layout = f.layout.expect("an RW layout");
    let addr = device_addr(&mut c, &layout, 0).await;
    let id = cluster.ds_id(addr).expect("a data server of the cluster");
    // A session of its own with that data server, and a WRITE through the layout's handle.
    let mut d = Session::new(cluster.connect_addr(addr).unwrap(), "pnfs").await;
    let data = pattern(8192);
    let r = d
        .call(vec![
            putfh(&layout.nfl_fh_list[0]),
            write_op(f.stateid, 0, &data),
        ])
        .await;
    assert_eq!(r.status, NfsStat4::NFS4_OK, "{r:?}");
    let r = d
        .call(vec![
            putfh(&layout.nfl_fh_list[0]),
            read_op(f.stateid, 0, 8192),
        ])
        .await;
    assert_eq!(&read_data(&r)[..], &data[..]);
    let ds = cluster.data_server(id).expect("registered");
    assert!(
        ds.counters()
            .compounds
            .load(std::sync::atomic::Ordering::Relaxed)
            >= 3
    );
}

#[tokio::test]
async fn a_killed_data_server_is_seen_down_refuses_connections_and_comes_back_on_restart() {
    let cluster = Cluster::builder().data_servers(2).start().await;
    let boot = cluster.control_service(2).unwrap().boot_verifier();
    cluster.kill_ds(2);
    assert!(!cluster.ds_running(2));
    cluster.until_down(2).await;
    assert!(cluster.connect_ds(2).is_err());
    assert!(cluster.mds().devices().status(1).unwrap().up);
    cluster.restart_ds(2);
    cluster.until_up(2).await;
    assert_ne!(cluster.control_service(2).unwrap().boot_verifier(), boot);
    assert_eq!(cluster.mds().devices().status(2).unwrap().registrations, 2);
    let _ = Session::new(cluster.connect_ds(2).unwrap(), "after").await;
}

#[tokio::test]
async fn a_crashed_data_server_loses_unstable_writes_and_keeps_synced_ones() {
    let cluster = Cluster::builder()
        .data_servers(1)
        .configure(|cfg| cfg.cluster.layouts = true)
        .start()
        .await;
    let mut c = Session::new(cluster.connect_mds(), "crash").await;
    let f = create(&mut c, "file", true).await;
    let layout = f.layout.expect("an RW layout");
    let mut d = Session::new(cluster.connect_ds(1).unwrap(), "crash").await;
    let synced = pattern(4096);
    let r = d
        .call(vec![
            putfh(&layout.nfl_fh_list[0]),
            write_op(f.stateid, 0, &synced),
        ])
        .await;
    assert_eq!(r.status, NfsStat4::NFS4_OK, "{r:?}");
    let r = d
        .call(vec![
            putfh(&layout.nfl_fh_list[0]),
            NfsArgop4::Write(WriteArgs {
                stateid: f.stateid,
                offset: 4096,
                stable: StableHow4::UNSTABLE4,
                data: Bytes::from(vec![1u8; 4096]),
            }),
        ])
        .await;
    assert_eq!(r.status, NfsStat4::NFS4_OK, "{r:?}");
    let sim = cluster.ds_crashsim(1).unwrap();
    let object = cluster
        .ds_objects(1)
        .size(ObjectId {
            file: fileid(&cluster, "file"),
            stripe: 0,
        })
        .unwrap();
    assert_eq!(object, 8192);
    cluster.crash_ds(1);
    assert_eq!(sim.crashes(), 1);
    let after = cluster
        .ds_objects(1)
        .size(ObjectId {
            file: fileid(&cluster, "file"),
            stripe: 0,
        })
        .unwrap();
    assert_eq!(
        after, 4096,
        "the unstable write is gone, the FILE_SYNC one stays"
    );
    // The dead server's connection is closed at the client's end too.
    let r = d
        .conn
        .call(NFS4_PROGRAM, NFS_V4, 0, OpaqueAuth::none(), vec![])
        .await;
    assert!(r.is_err());
}

fn fileid(cluster: &Cluster, name: &str) -> u64 {
    let store = cluster.mds().store();
    store
        .lookup(store.root().unwrap().fileid, name.as_bytes())
        .unwrap()
        .fileid
}

#[tokio::test]
async fn the_metadata_store_can_be_redb_on_disk_and_the_mds_restarts_over_it() {
    let dir = std::env::temp_dir().join(format!("testkit-cluster-{}", std::process::id()));
    let mut cluster = Cluster::builder()
        .data_servers(1)
        .store(StoreKind::Redb(dir.clone()))
        .start()
        .await;
    let mut c = Session::new(cluster.connect_mds(), "redb").await;
    let f = create(&mut c, "kept", false).await;
    let r = c
        .call(vec![putfh(&f.fh), write_op(f.stateid, 0, b"on disk")])
        .await;
    assert_eq!(r.status, NfsStat4::NFS4_OK, "{r:?}");
    assert!(dir.join("metadata.redb").exists());
    let before = fileid(&cluster, "kept");
    let epoch = cluster.mds().store().boot_epoch();
    drop(c);
    cluster.restart_mds().await;
    assert_eq!(cluster.mds().store().boot_epoch(), epoch + 1);
    assert_eq!(fileid(&cluster, "kept"), before);
    assert_eq!(cluster.mds().devices().counts().0, 1, "registered again");
    let _ = Session::new(cluster.connect_mds(), "after").await;
    drop(cluster);
    let _ = std::fs::remove_dir_all(&dir);
}

/// One manual clock for every role ([`testkit::cluster::ClusterBuilder::clock`]): the data
/// servers register, and an hour later on that clock (far past any allowed skew of the
/// control protocol's call stamps, which both ends read from it) a striped file still goes
/// through the MDS to them, while a session left silent has lost its lease.
#[tokio::test]
async fn a_cluster_on_a_manual_clock_keeps_its_roles_in_step() {
    let clock = nfs_server::ManualClock::new();
    let cluster = Cluster::builder()
        .data_servers(2)
        .configure(|cfg| cfg.cluster.layouts = true)
        .clock(clock.shared())
        .start()
        .await;
    let mut silent = Session::new(cluster.connect_mds(), "silent").await;
    testkit::loopback::advance(&clock, std::time::Duration::from_secs(3600)).await;
    let r = silent.call(vec![NfsArgop4::PutRootFh]).await;
    assert_ne!(r.status, NfsStat4::NFS4_OK, "the lease ran out: {r:?}");
    let mut c = Session::new(cluster.connect_mds(), "writer").await;
    let f = create(&mut c, "striped", false).await;
    let data = pattern(UNIT / 2);
    let r = c
        .call(vec![putfh(&f.fh), write_op(f.stateid, 0, &data)])
        .await;
    assert_eq!(r.status, NfsStat4::NFS4_OK, "{r:?}");
    let r = c
        .call(vec![putfh(&f.fh), read_op(f.stateid, 0, data.len() as u32)])
        .await;
    assert_eq!(read_data(&r), data);
}

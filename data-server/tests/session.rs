//! Sessions on a data server over in-process streams: the DS role in EXCHANGE_ID, an identity of its
//! own, the MDS's lease, and the operations a DS does not offer.

mod support;

use std::time::Duration;

use data_server::DsOptions;
use nfs_proto::nfs4::attr::*;
use nfs_proto::nfs4::*;
use support::*;
use testkit::prelude::*;

#[tokio::test]
async fn exchange_id_grants_the_ds_role_and_a_session_follows() {
    let d = start_ds(1, Duration::from_secs(90)).await;
    let mut c = d.client("linux-client").await;
    let flags = c.exchange.eir_flags;
    assert_ne!(flags & EXCHGID4_FLAG_USE_PNFS_DS, 0, "{flags:#x}");
    assert_eq!(
        flags & (EXCHGID4_FLAG_USE_PNFS_MDS | EXCHGID4_FLAG_USE_NON_PNFS),
        0,
        "a DS is only a DS: {flags:#x}"
    );
    let r = c.call(vec![]).await;
    assert_eq!(r.status, NfsStat4::NFS4_OK);
}

#[tokio::test]
async fn a_client_asking_for_no_role_gets_the_ds_role() {
    let d = start_ds(1, Duration::from_secs(90)).await;
    let conn = d.connect();
    let mut args = Setup::data_server("plain").exchange_id();
    args.eia_flags = EXCHGID4_FLAG_SUPP_MOVED_REFER;
    let r = compound_on(&conn, 0, 1, vec![NfsArgop4::ExchangeId(args)])
        .await
        .expect("rpc");
    let NfsResop4::ExchangeId(ExchangeIdRes::Ok(ok)) = &r.resarray[0] else {
        panic!("{r:?}")
    };
    assert_eq!(
        ok.eir_flags & EXCHGID4_FLAG_MASK_PNFS,
        EXCHGID4_FLAG_USE_PNFS_DS
    );
}

#[tokio::test]
async fn each_data_server_has_its_own_server_owner_stable_across_restarts() {
    let one = start_ds(1, Duration::from_secs(90)).await;
    let two = start_ds(2, Duration::from_secs(90)).await;
    let a = one.client("c").await.exchange;
    let b = two.client("c").await.exchange;
    assert_ne!(
        a.eir_server_owner.so_major_id, b.eir_server_owner.so_major_id,
        "two DSs with one major id would be trunked into one server by the client"
    );
    assert_eq!(a.eir_server_scope, b.eir_server_scope);
    let again = start_ds(1, Duration::from_secs(90)).await;
    let a2 = again.client("c").await.exchange;
    assert_eq!(a.eir_server_owner, a2.eir_server_owner);
    assert_ne!(
        a.eir_clientid >> 48,
        a2.eir_clientid >> 48,
        "a restarted DS has another client id epoch (equal only by a 1/65536 chance)"
    );
}

#[tokio::test]
async fn a_second_reclaim_complete_is_complete_already() {
    let d = start_ds(1, Duration::from_secs(90)).await;
    let mut c = d.client("c").await;
    let r = c
        .call(vec![NfsArgop4::ReclaimComplete(ReclaimCompleteArgs {
            rca_one_fs: false,
        })])
        .await;
    assert_eq!(last_status(&r), NfsStat4::NFS4ERR_COMPLETE_ALREADY);
}

#[tokio::test]
async fn the_lease_is_the_configured_one_and_a_silent_client_loses_its_session() {
    let clock = nfs_server::ManualClock::new();
    let d = start_ds_on(1, Duration::from_secs(1), clock.shared()).await;
    let mds = Mds::new(MDS_EPOCH);
    let mut c = d.client("c").await;
    let r = c
        .call(vec![
            putfh(&mds.ds_fh(5, 0)),
            NfsArgop4::GetAttr(GetAttrArgs {
                attr_request: Bitmap4::from_bits([FATTR4_LEASE_TIME]),
            }),
        ])
        .await;
    let NfsResop4::GetAttr(GetAttrRes::Ok(ok)) = &r.resarray[2] else {
        panic!("{r:?}")
    };
    let attrs = FileAttrs::from_fattr(&ok.obj_attributes).unwrap();
    assert_eq!(attrs.lease_time, Some(1));
    // Silent for three leases of the server's clock: the reaper (each second of it) removes
    // the client and its session.
    for _ in 0..3 {
        clock.advance(Duration::from_secs(1));
        for _ in 0..8 {
            tokio::task::yield_now().await;
        }
    }
    let r = c.call(vec![]).await;
    assert_eq!(r.status, NfsStat4::NFS4ERR_BADSESSION);
}

#[tokio::test]
async fn operations_a_data_server_does_not_offer_are_notsupp() {
    let d = start_ds(1, Duration::from_secs(90)).await;
    let mds = Mds::new(MDS_EPOCH);
    let mut c = d.client("c").await;
    let fh = mds.ds_fh(5, 0);
    let not_offered = [
        NfsArgop4::PutRootFh,
        NfsArgop4::GetFh,
        NfsArgop4::SaveFh,
        lookup("x"),
        remove_op("x"),
        NfsArgop4::SetAttr(SetAttrArgs {
            stateid: Stateid4::ANONYMOUS,
            obj_attributes: Fattr4::default(),
        }),
        NfsArgop4::LayoutGet(LayoutGetArgs::default()),
        NfsArgop4::TestStateid(TestStateidArgs {
            ts_stateids: vec![],
        }),
    ];
    for op in not_offered {
        let opnum = op.opnum();
        let r = c.call(vec![putfh(&fh), op]).await;
        assert_eq!(r.resarray.len(), 3, "{r:?}");
        assert_eq!(
            last_status(&r),
            NfsStat4::NFS4ERR_NOTSUPP,
            "{:?}",
            opnum.name()
        );
    }
}

#[tokio::test]
async fn secinfo_no_name_offers_auth_sys_and_consumes_the_filehandle() {
    let d = start_ds(1, Duration::from_secs(90)).await;
    let mds = Mds::new(MDS_EPOCH);
    let mut c = d.client("c").await;
    let r = c
        .call(vec![
            putfh(&mds.ds_fh(5, 0)),
            NfsArgop4::SecInfoNoName(SecinfoStyle4::SECINFO_STYLE4_CURRENT_FH),
            commit_op(0, 0),
        ])
        .await;
    let NfsResop4::SecInfoNoName(SecInfoRes::Ok(flavors)) = &r.resarray[2] else {
        panic!("{r:?}")
    };
    assert_eq!(flavors[0], Secinfo4::Flavor(1));
    assert_eq!(last_status(&r), NfsStat4::NFS4ERR_NOFILEHANDLE);
}

#[tokio::test]
async fn the_caps_on_clients_and_sessions_apply_on_a_data_server() {
    let opts = DsOptions {
        max_clients: 1,
        max_sessions: 0,
        ..DsOptions::new(1)
    };
    let d = start_ds_with(opts, tempfile::tempdir().unwrap()).await;
    let c = d.client("first").await;
    let r = compound_on(
        &c.conn,
        0,
        1,
        vec![NfsArgop4::ExchangeId(
            Setup::data_server("second").exchange_id(),
        )],
    )
    .await
    .expect("rpc");
    assert!(
        matches!(
            r.resarray[0],
            NfsResop4::ExchangeId(ExchangeIdRes::Err(NfsStat4::NFS4ERR_DELAY))
        ),
        "a second owner past max_clients 1: {r:?}"
    );
    // The client that is there gets in again, but no second session past max_sessions 0.
    let r = compound_on(
        &c.conn,
        0,
        1,
        vec![NfsArgop4::ExchangeId(
            Setup::data_server("first").exchange_id(),
        )],
    )
    .await
    .expect("rpc");
    let NfsResop4::ExchangeId(ExchangeIdRes::Ok(ex)) = &r.resarray[0] else {
        panic!("a known client is not refused: {r:?}")
    };
    assert_eq!(ex.eir_clientid, c.exchange.eir_clientid);
    let cs = CreateSessionArgs {
        csa_clientid: ex.eir_clientid,
        csa_sequence: ex.eir_sequenceid,
        csa_flags: 0,
        csa_fore_chan_attrs: channel(),
        csa_back_chan_attrs: ChannelAttrs4 {
            ca_headerpadsize: 0,
            ca_maxrequestsize: 4096,
            ca_maxresponsesize: 4096,
            ca_maxresponsesize_cached: 0,
            ca_maxoperations: 4,
            ca_maxrequests: 2,
            ca_rdma_ird: vec![],
        },
        csa_cb_program: 0x4000_0000,
        csa_sec_parms: vec![CallbackSecParms4::AuthNone],
    };
    let r = compound_on(&c.conn, 0, 1, vec![NfsArgop4::CreateSession(cs)])
        .await
        .expect("rpc");
    assert!(
        matches!(
            r.resarray[0],
            NfsResop4::CreateSession(CreateSessionRes::Err(NfsStat4::NFS4ERR_DELAY))
        ),
        "{r:?}"
    );
}

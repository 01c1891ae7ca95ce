//! RPC credentials at a data server over in-process streams: AUTH_NONE and AUTH_SYS are served; any
//! other flavor (RPCSEC_GSS, AUTH_SHORT, unknown numbers) gets MSG_DENIED / AUTH_ERROR, for
//! NULL as for COMPOUND, and a refused WRITE writes nothing.

mod support;

use std::time::Duration;

use bytes::Bytes;
use nfs_proto::nfs4::*;
use nfs_proto::rpc::{AuthFlavor, AuthStat, OpaqueAuth};
use pfs_core::ObjectId;
use support::*;
use testkit::prelude::*;

fn refused() -> Vec<(&'static str, OpaqueAuth, AuthStat)> {
    vec![
        (
            "RPCSEC_GSS init",
            rpcsec_gss(1, &[]),
            AuthStat::AUTH_BADCRED,
        ),
        (
            "RPCSEC_GSS data",
            rpcsec_gss(0, b"ctx1"),
            AuthStat::AUTH_BADCRED,
        ),
        (
            "AUTH_SHORT",
            OpaqueAuth::new(AuthFlavor::AUTH_SHORT, Bytes::from_static(&[9; 8])),
            AuthStat::AUTH_REJECTEDCRED,
        ),
        (
            "unknown flavor",
            OpaqueAuth::new(AuthFlavor(0x0bad_f1a0), Bytes::new()),
            AuthStat::AUTH_BADCRED,
        ),
    ]
}

#[tokio::test]
async fn flavors_other_than_auth_none_and_auth_sys_are_denied_for_null_and_compound() {
    let d = start_ds(1, Duration::from_secs(90)).await;
    let conn = d.connect();
    for (what, cred, stat) in refused() {
        assert_eq!(
            denied(null_call(&conn, cred.clone()).await),
            stat,
            "NULL, {what}"
        );
        let ex = NfsArgop4::ExchangeId(Setup::data_server(what).exchange_id());
        assert_eq!(
            denied(compound_as(&conn, cred, 1, vec![ex]).await),
            stat,
            "COMPOUND, {what}"
        );
    }
    assert!(null_call(&conn, OpaqueAuth::none())
        .await
        .unwrap()
        .is_empty());
    assert!(null_call(&conn, auth_sys(1000)).await.unwrap().is_empty());
    for (owner, cred) in [("none", OpaqueAuth::none()), ("sys", auth_sys(1000))] {
        let ex = NfsArgop4::ExchangeId(Setup::data_server(owner).exchange_id());
        let r = compound_as(&conn, cred, 1, vec![ex]).await.unwrap();
        assert!(
            matches!(
                r.resarray[..],
                [NfsResop4::ExchangeId(ExchangeIdRes::Ok(_))]
            ),
            "{r:?}"
        );
    }
}

#[tokio::test]
async fn a_write_with_a_refused_credential_writes_nothing() {
    let d = start_ds(1, Duration::from_secs(90)).await;
    let mut mds = Mds::new(MDS_EPOCH);
    let mut c = d.client("c").await;
    let sid = mds.open_stateid(7, 3);
    let fh = mds.ds_fh(7, 0);
    let ops = vec![
        c.sequence_at(c.seq + 1),
        putfh(&fh),
        write_op(sid, 0, StableHow4::FILE_SYNC4, b"forged"),
    ];
    let r = compound_as(&c.conn, rpcsec_gss(0, b"ctx1"), 1, ops).await;
    assert_eq!(denied(r), AuthStat::AUTH_BADCRED);
    let id = ObjectId { file: 7, stripe: 0 };
    assert_eq!(d.ds.objects().size(id).unwrap(), 0);
    // The slot was not used: the same sequence id with AUTH_SYS is a new request.
    let r = c
        .call(vec![
            putfh(&fh),
            write_op(sid, 0, StableHow4::FILE_SYNC4, b"real"),
        ])
        .await;
    assert_eq!(r.status, NfsStat4::NFS4_OK, "{r:?}");
    assert_eq!(d.ds.objects().size(id).unwrap(), 4);
}

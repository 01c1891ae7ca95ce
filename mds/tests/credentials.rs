//! RPC credentials at the MDS (the in-memory cluster's, alone): AUTH_NONE and AUTH_SYS are served; any
//! other flavor (RPCSEC_GSS, AUTH_SHORT, AUTH_DH, unknown numbers) gets MSG_DENIED /
//! AUTH_ERROR, for NULL as for COMPOUND. (That refusals are logged at a bounded rate is
//! `refusal_log.rs`: it needs a process of its own.)

use bytes::Bytes;
use nfs_proto::nfs4::*;
use nfs_proto::rpc::{AuthFlavor, AuthStat, OpaqueAuth};
use testkit::cluster::Cluster;
use testkit::prelude::*;

/// The credentials the server must refuse, with the `auth_stat` it refuses each with.
fn refused() -> Vec<(&'static str, OpaqueAuth, AuthStat)> {
    vec![
        // RPCSEC_GSS_INIT, as gssd sends it in a NULL call to create a context.
        (
            "RPCSEC_GSS init",
            rpcsec_gss(1, &[]),
            AuthStat::AUTH_BADCRED,
        ),
        // RPCSEC_GSS_DATA with a context handle the server never made.
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
            "AUTH_DH",
            OpaqueAuth::new(AuthFlavor::AUTH_DH, Bytes::from_static(&[0; 4])),
            AuthStat::AUTH_BADCRED,
        ),
        (
            "unknown flavor",
            OpaqueAuth::new(AuthFlavor(0x0bad_f1a0), Bytes::new()),
            AuthStat::AUTH_BADCRED,
        ),
    ]
}

fn exchange_id(owner: &str) -> NfsArgop4 {
    NfsArgop4::ExchangeId(ExchangeIdArgs {
        eia_clientowner: ClientOwner4 {
            co_verifier: [1; 8],
            co_ownerid: Bytes::copy_from_slice(owner.as_bytes()),
        },
        eia_flags: 0,
        eia_state_protect: StateProtect4A::None,
        eia_client_impl_id: vec![],
    })
}

fn exchange_id_ok(r: &Compound4Res) -> bool {
    matches!(
        r.resarray[..],
        [NfsResop4::ExchangeId(ExchangeIdRes::Ok(_))]
    )
}

#[tokio::test]
async fn flavors_other_than_auth_none_and_auth_sys_are_denied_for_null_and_compound() {
    let s = Cluster::mds_alone().await;
    let conn = s.conn();
    for (what, cred, stat) in refused() {
        assert_eq!(
            denied(null_call(&conn, cred.clone()).await),
            stat,
            "NULL, {what}"
        );
        let r = compound_as(&conn, cred, 1, vec![exchange_id(what)]).await;
        assert_eq!(denied(r), stat, "COMPOUND, {what}");
    }
    // The connection stays usable, and the flavors SECINFO advertises are served: NULL with
    // AUTH_NONE is the Linux client's probe.
    assert!(null_call(&conn, OpaqueAuth::none())
        .await
        .unwrap()
        .is_empty());
    assert!(null_call(&conn, auth_sys(1000)).await.unwrap().is_empty());
    let r = compound_as(&conn, OpaqueAuth::none(), 1, vec![exchange_id("none")]).await;
    assert!(exchange_id_ok(&r.unwrap()));
    let r = compound_as(&conn, auth_sys(1000), 1, vec![exchange_id("sys")]).await;
    assert!(exchange_id_ok(&r.unwrap()));
    let mut c = s.client("secinfo").await;
    let r = c
        .call(vec![
            NfsArgop4::PutRootFh,
            NfsArgop4::SecInfoNoName(SecinfoStyle4::SECINFO_STYLE4_CURRENT_FH),
        ])
        .await;
    let Some(NfsResop4::SecInfoNoName(SecInfoRes::Ok(flavors))) = r.resarray.last() else {
        panic!("{r:?}")
    };
    assert_eq!(flavors, &[Secinfo4::Flavor(1), Secinfo4::Flavor(0)]);
}

#[tokio::test]
async fn a_refused_call_in_a_session_does_not_touch_its_slot() {
    let s = Cluster::mds_alone().await;
    let mut c = s.client("slot").await;
    let seq = NfsArgop4::Sequence(SequenceArgs {
        sa_sessionid: c.sessionid,
        sa_sequenceid: c.seq + 1,
        sa_slotid: 0,
        sa_highest_slotid: 0,
        sa_cachethis: true,
    });
    let r = compound_as(
        &c.conn,
        rpcsec_gss(0, b"ctx1"),
        1,
        vec![seq, NfsArgop4::PutRootFh],
    )
    .await;
    assert_eq!(denied(r), AuthStat::AUTH_BADCRED);
    // The same sequence id with AUTH_SYS is a new request, not a retry of the refused one.
    let r = c.call(vec![NfsArgop4::PutRootFh, NfsArgop4::GetFh]).await;
    assert_eq!(r.status, NfsStat4::NFS4_OK, "{r:?}");
}

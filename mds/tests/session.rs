//! Session and COMPOUND rules (RFC 8881 sections 2.10 and 15-16), on the in-memory cluster's
//! MDS alone.

use nfs_proto::nfs4::attr::*;
use nfs_proto::nfs4::*;
use nfs_proto::xdr::Utf8String;
use testkit::cluster::{Cluster, StoreKind};
use testkit::prelude::*;

#[tokio::test]
async fn session_setup_and_root_getattr() {
    let s = Cluster::mds_alone().await;
    let mut c = s.client("client-a").await;
    let r = c
        .call(vec![
            NfsArgop4::PutRootFh,
            NfsArgop4::GetFh,
            NfsArgop4::GetAttr(GetAttrArgs {
                attr_request: Bitmap4::from_bits([
                    FATTR4_TYPE,
                    FATTR4_MODE,
                    FATTR4_FILEID,
                    FATTR4_OWNER,
                ]),
            }),
        ])
        .await;
    assert_eq!(r.status, NfsStat4::NFS4_OK, "{r:?}");
    let NfsResop4::GetAttr(GetAttrRes::Ok(a)) = &r.resarray[3] else {
        panic!()
    };
    let attrs = FileAttrs::from_fattr(&a.obj_attributes).unwrap();
    assert_eq!(attrs.r#type, Some(NfsFtype4::NF4DIR));
    assert_eq!(attrs.fileid, Some(1));
    assert_eq!(attrs.owner, Some(Utf8String::from("0")));
}

#[tokio::test]
async fn op_without_sequence_is_op_not_in_session() {
    let s = Cluster::mds_alone().await;
    let conn = s.conn();
    let r = compound_on(&conn, 0, 1, vec![NfsArgop4::PutRootFh, NfsArgop4::GetFh])
        .await
        .unwrap();
    assert_eq!(r.status, NfsStat4::NFS4ERR_OP_NOT_IN_SESSION);
    assert_eq!(r.resarray.len(), 1);
}

#[tokio::test]
async fn minor_version_3_is_a_mismatch() {
    let s = Cluster::mds_alone().await;
    let conn = s.conn();
    let r = compound_on(&conn, 0, 3, vec![NfsArgop4::PutRootFh])
        .await
        .unwrap();
    assert_eq!(r.status, NfsStat4::NFS4ERR_MINOR_VERS_MISMATCH);
    assert!(r.resarray.is_empty());
}

#[tokio::test]
async fn retry_gets_the_cached_reply_and_misordered_seqid_is_refused() {
    let s = Cluster::mds_alone().await;
    let mut c = s.client("client-b").await;
    let seq = c.sequence();
    let ops = vec![seq.clone(), NfsArgop4::PutRootFh, NfsArgop4::GetFh];
    let first = compound_on(&c.conn, 0, 1, ops.clone()).await.unwrap();
    let again = compound_on(&c.conn, 0, 1, ops).await.unwrap();
    assert_eq!(first, again, "a retry is answered from the reply cache");
    let before = s.mds().core().counters.count(NfsOpnum4::OP_GETFH);
    assert_eq!(before, 1, "the retry was not executed again");
    // A seqid two ahead is misordered.
    c.seq += 1;
    let r = c.call(vec![NfsArgop4::PutRootFh]).await;
    assert_eq!(r.status, NfsStat4::NFS4ERR_SEQ_MISORDERED);
}

#[tokio::test]
async fn unknown_op_is_op_illegal_and_forged_handle_is_badhandle() {
    let s = Cluster::mds_alone().await;
    let mut c = s.client("client-c").await;
    let r = c
        .call(vec![NfsArgop4::PutFh(PutFhArgs {
            object: NfsFh4(vec![1u8; 32].into()),
        })])
        .await;
    assert_eq!(r.status, NfsStat4::NFS4ERR_BADHANDLE);
    let r = c.call(vec![NfsArgop4::Illegal]).await;
    assert_eq!(r.status, NfsStat4::NFS4ERR_OP_ILLEGAL);
    let r = c.call(vec![NfsArgop4::GetFh]).await;
    assert_eq!(r.status, NfsStat4::NFS4ERR_NOFILEHANDLE);
}

#[tokio::test]
async fn sequence_not_first_is_sequence_pos() {
    let s = Cluster::mds_alone().await;
    let mut c = s.client("client-d").await;
    let inner = c.sequence();
    c.seq -= 1;
    let r = c.call(vec![inner]).await;
    assert_eq!(r.status, NfsStat4::NFS4ERR_SEQUENCE_POS);
}

#[tokio::test]
async fn illegal_op_first_is_op_illegal_not_op_not_in_session() {
    let s = Cluster::mds_alone().await;
    let conn = s.conn();
    let r = compound_on(&conn, 0, 1, vec![NfsArgop4::Illegal])
        .await
        .unwrap();
    assert_eq!(r.status, NfsStat4::NFS4ERR_OP_ILLEGAL);
    assert!(matches!(r.resarray[0], NfsResop4::Illegal(_)));
}

// ---------------------------------------------------------------------------------------------
// The session's size limits (RFC 8881 sections 2.10.6.4, 18.36.3, 18.46.3)
// ---------------------------------------------------------------------------------------------

fn mandatory_getattr() -> NfsArgop4 {
    NfsArgop4::GetAttr(GetAttrArgs {
        attr_request: Bitmap4::from_bits([
            FATTR4_SUPPORTED_ATTRS,
            FATTR4_TYPE,
            FATTR4_FH_EXPIRE_TYPE,
            FATTR4_CHANGE,
            FATTR4_SIZE,
            FATTR4_LINK_SUPPORT,
            FATTR4_SYMLINK_SUPPORT,
            FATTR4_NAMED_ATTR,
            FATTR4_FSID,
            FATTR4_UNIQUE_HANDLES,
            FATTR4_LEASE_TIME,
            FATTR4_RDATTR_ERROR,
            FATTR4_FILEHANDLE,
        ]),
    })
}

/// The size of the reply on the wire, RPC header included.
fn reply_size(r: &Compound4Res) -> usize {
    mds::compound::RPC_REPLY_HEADER + nfs_proto::xdr::to_bytes(r).len()
}

fn fore(maxrequest: u32, maxresponse: u32, cached: u32) -> ChannelAttrs4 {
    ChannelAttrs4 {
        ca_maxrequestsize: maxrequest,
        ca_maxresponsesize: maxresponse,
        ca_maxresponsesize_cached: cached,
        ..channel()
    }
}

#[tokio::test]
async fn the_op_whose_result_overflows_ca_maxresponsesize_gets_rep_too_big() {
    let s = Cluster::mds_alone().await;
    let mut c = s
        .client_with(
            &Setup::new("small-replies")
                .reclaiming()
                .fore(fore(400, 400, 400)),
        )
        .await;
    let mut ops = vec![NfsArgop4::PutRootFh];
    ops.extend(std::iter::repeat_n(mandatory_getattr(), 4));
    let r = c.call_caching(false, ops).await;
    assert_eq!(r.status, NfsStat4::NFS4ERR_REP_TOO_BIG, "{r:?}");
    let NfsResop4::GetAttr(GetAttrRes::Err(_)) = r.resarray.last().unwrap() else {
        panic!("{r:?}")
    };
    let done = &r.resarray[..r.resarray.len() - 1];
    assert!(done.len() >= 3, "the results that fit are kept: {r:?}");
    assert!(done.iter().all(|x| x.status() == NfsStat4::NFS4_OK));
    assert!(reply_size(&r) <= 400, "{} bytes", reply_size(&r));
    // The same with one GETATTR fits.
    let r = c
        .call_caching(false, vec![NfsArgop4::PutRootFh, mandatory_getattr()])
        .await;
    assert_eq!(r.status, NfsStat4::NFS4_OK, "{r:?}");
}

#[tokio::test]
async fn cachethis_with_a_cache_too_small_for_sequence_is_rep_too_big_to_cache() {
    let s = Cluster::mds_alone().await;
    let mut c = s
        .client_with(
            &Setup::new("tiny-cache")
                .reclaiming()
                .fore(fore(8192, 8192, 10)),
        )
        .await;
    let r = c.call_caching(true, vec![]).await;
    assert_eq!(r.status, NfsStat4::NFS4ERR_REP_TOO_BIG_TO_CACHE, "{r:?}");
    assert_eq!(r.resarray.len(), 1, "SEQUENCE itself: {r:?}");
    // SEQUENCE's error left the slot alone: the same sequence id goes through uncached.
    c.seq -= 1;
    let r = c.call_caching(false, vec![NfsArgop4::PutRootFh]).await;
    assert_eq!(r.status, NfsStat4::NFS4_OK, "{r:?}");
}

#[tokio::test]
async fn a_change_whose_reply_could_not_be_cached_is_not_made() {
    let s = Cluster::mds_alone().await;
    // SEQUENCE and PUTROOTFH fit in 120 bytes; a CREATE result after them does not.
    let mut c = s
        .client_with(
            &Setup::new("no-room")
                .reclaiming()
                .fore(fore(8192, 8192, 120)),
        )
        .await;
    let mkdir = NfsArgop4::Create(CreateArgs {
        objtype: Createtype4::Dir,
        objname: "d".into(),
        createattrs: Fattr4::default(),
    });
    let r = c
        .call_caching(true, vec![NfsArgop4::PutRootFh, mkdir.clone()])
        .await;
    assert_eq!(r.status, NfsStat4::NFS4ERR_REP_TOO_BIG_TO_CACHE, "{r:?}");
    assert_eq!(r.resarray.len(), 3, "{r:?}");
    let lookup = vec![NfsArgop4::PutRootFh, lookup("d")];
    let r = c.call_caching(false, lookup.clone()).await;
    assert_eq!(r.status, NfsStat4::NFS4ERR_NOENT, "not created: {r:?}");
    // Without asking for the reply to be cached, the limit is ca_maxresponsesize.
    let r = c
        .call_caching(false, vec![NfsArgop4::PutRootFh, mkdir])
        .await;
    assert_eq!(r.status, NfsStat4::NFS4_OK, "{r:?}");
    assert_eq!(
        c.call_caching(false, lookup).await.status,
        NfsStat4::NFS4_OK
    );
}

#[tokio::test]
async fn a_request_over_ca_maxrequestsize_is_req_too_big() {
    let s = Cluster::mds_alone().await;
    let mut c = s
        .client_with(
            &Setup::new("small-requests")
                .reclaiming()
                .fore(fore(256, 8192, 1024)),
        )
        .await;
    let long = "n".repeat(200);
    let r = c
        .call(vec![NfsArgop4::PutRootFh, lookup(long.as_str())])
        .await;
    assert_eq!(r.status, NfsStat4::NFS4ERR_REQ_TOO_BIG, "{r:?}");
    assert_eq!(r.resarray.len(), 1);
    c.seq -= 1;
    let r = c.call(vec![NfsArgop4::PutRootFh]).await;
    assert_eq!(r.status, NfsStat4::NFS4_OK, "the slot is untouched: {r:?}");
}

// ---------------------------------------------------------------------------------------------
// EXCHANGE_ID and CREATE_SESSION arguments
// ---------------------------------------------------------------------------------------------

fn exchange_id(owner: &str, verifier: u8, flags: u32) -> NfsArgop4 {
    NfsArgop4::ExchangeId(ExchangeIdArgs {
        eia_clientowner: ClientOwner4 {
            co_verifier: [verifier; 8],
            co_ownerid: bytes::Bytes::copy_from_slice(owner.as_bytes()),
        },
        eia_flags: flags,
        eia_state_protect: StateProtect4A::None,
        eia_client_impl_id: vec![],
    })
}

fn exchange_ok(r: &Compound4Res) -> &ExchangeIdResOk {
    match &r.resarray[0] {
        NfsResop4::ExchangeId(ExchangeIdRes::Ok(ok)) => ok,
        _ => panic!("EXCHANGE_ID failed: {r:?}"),
    }
}

fn create_session(clientid: u64, sequence: u32, sec: Vec<CallbackSecParms4>) -> NfsArgop4 {
    NfsArgop4::CreateSession(CreateSessionArgs {
        csa_clientid: clientid,
        csa_sequence: sequence,
        csa_flags: 0,
        csa_fore_chan_attrs: channel(),
        csa_back_chan_attrs: channel(),
        csa_cb_program: 0x4000_0000,
        csa_sec_parms: sec,
    })
}

#[tokio::test]
async fn supp_fence_ops_is_undefined_in_minor_version_1_and_defined_in_2() {
    let s = Cluster::mds_alone().await;
    let conn = s.conn();
    let fence = EXCHGID4_FLAG_SUPP_FENCE_OPS;
    let r = compound_on(&conn, 0, 1, vec![exchange_id("fence", 1, fence)])
        .await
        .unwrap();
    assert_eq!(r.status, NfsStat4::NFS4ERR_INVAL);
    let r = compound_on(&conn, 0, 2, vec![exchange_id("fence", 1, fence)])
        .await
        .unwrap();
    assert_eq!(r.status, NfsStat4::NFS4_OK, "{r:?}");
}

#[tokio::test]
async fn another_principal_takes_over_an_owner_without_state_and_the_old_id_goes_stale() {
    let s = Cluster::mds_alone().await;
    let c = s.client("shared-owner").await;
    let r = compound_on(
        &c.conn,
        0,
        1,
        vec![NfsArgop4::DestroySession(DestroySessionArgs {
            dsa_sessionid: c.sessionid,
        })],
    )
    .await
    .unwrap();
    assert_eq!(r.status, NfsStat4::NFS4_OK, "{r:?}");
    let conn = s.conn();
    let r = compound_on(&conn, 1000, 1, vec![exchange_id("shared-owner", 9, 0)])
        .await
        .unwrap();
    let new = exchange_ok(&r).eir_clientid;
    assert_ne!(new, c.clientid);
    // The old record went with that EXCHANGE_ID (RFC 8881 section 18.35.4 case 3; pynfs
    // EID5e), before the new one is confirmed.
    let r = compound_on(&c.conn, 0, 1, vec![create_session(c.clientid, 2, vec![])])
        .await
        .unwrap();
    assert_eq!(r.status, NfsStat4::NFS4ERR_STALE_CLIENTID, "{r:?}");
    assert!(s
        .mds()
        .store()
        .clients()
        .unwrap()
        .iter()
        .all(|r| r.clientid != c.clientid));
}

#[tokio::test]
async fn another_principal_cannot_take_over_an_owner_with_a_session() {
    let s = Cluster::mds_alone().await;
    let c = s.client("busy-owner").await;
    let conn = s.conn();
    let r = compound_on(&conn, 1000, 1, vec![exchange_id("busy-owner", 9, 0)])
        .await
        .unwrap();
    assert_eq!(r.status, NfsStat4::NFS4ERR_CLID_INUSE, "{r:?}");
    assert!(s
        .mds()
        .store()
        .clients()
        .unwrap()
        .iter()
        .any(|r| r.clientid == c.clientid));
}

#[tokio::test]
async fn create_session_without_callback_security_is_accepted() {
    let s = Cluster::mds_alone().await;
    let conn = s.conn();
    let r = compound_on(&conn, 0, 1, vec![exchange_id("no-cb-sec", 1, 0)])
        .await
        .unwrap();
    let ok = exchange_ok(&r);
    let r = compound_on(
        &conn,
        0,
        1,
        vec![create_session(ok.eir_clientid, ok.eir_sequenceid, vec![])],
    )
    .await
    .unwrap();
    assert_eq!(r.status, NfsStat4::NFS4_OK, "{r:?}");
}

/// The server owner one boot of `s`'s MDS tells a new client, and its server key.
async fn owner_and_key(s: &Cluster) -> (bytes::Bytes, [u8; 32]) {
    let conn = s.conn();
    let r = compound_on(&conn, 0, 1, vec![exchange_id("owner-id", 1, 0)])
        .await
        .unwrap();
    let wire = exchange_ok(&r).eir_server_owner.so_major_id.clone();
    let mds = s.mds();
    assert_eq!(wire, mds.core().identity.owner.so_major_id);
    (wire, *mds.store().server_key())
}

/// Two boots of one MDS, one after the other, over one data directory.
#[tokio::test]
async fn the_server_owner_is_derived_from_the_key_not_a_piece_of_it_and_survives_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Cluster::builder()
        .data_servers(0)
        .lease(10)
        .store(StoreKind::Redb(dir.path().to_path_buf()))
        .start()
        .await;
    let (first, key) = owner_and_key(&s).await;
    assert_eq!(first.len(), 16);
    assert!(
        !key.windows(4).any(|w| first.windows(4).any(|f| f == w)),
        "no run of the server key appears in the server owner"
    );
    s.restart_mds().await;
    let (second, key2) = owner_and_key(&s).await;
    assert_eq!(
        (second, key2),
        (first, key),
        "same identity after a restart"
    );
}

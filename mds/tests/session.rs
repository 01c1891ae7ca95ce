//! Session and COMPOUND rules over real loopback sockets (RFC 8881 sections 2.10 and 15-16).

mod support;

use nfs_proto::nfs4::attr::*;
use nfs_proto::nfs4::*;
use nfs_proto::xdr::Utf8String;
use support::*;

#[tokio::test]
async fn session_setup_and_root_getattr() {
    let s = server().await;
    let mut c = Client::new(s.addr, "client-a").await;
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
    let s = server().await;
    let conn = connect(s.addr).await;
    let r = compound_on(&conn, 0, 1, vec![NfsArgop4::PutRootFh, NfsArgop4::GetFh])
        .await
        .unwrap();
    assert_eq!(r.status, NfsStat4::NFS4ERR_OP_NOT_IN_SESSION);
    assert_eq!(r.resarray.len(), 1);
}

#[tokio::test]
async fn minor_version_3_is_a_mismatch() {
    let s = server().await;
    let conn = connect(s.addr).await;
    let r = compound_on(&conn, 0, 3, vec![NfsArgop4::PutRootFh])
        .await
        .unwrap();
    assert_eq!(r.status, NfsStat4::NFS4ERR_MINOR_VERS_MISMATCH);
    assert!(r.resarray.is_empty());
}

#[tokio::test]
async fn retry_gets_the_cached_reply_and_misordered_seqid_is_refused() {
    let s = server().await;
    let mut c = Client::new(s.addr, "client-b").await;
    let seq = c.sequence();
    let ops = vec![seq.clone(), NfsArgop4::PutRootFh, NfsArgop4::GetFh];
    let first = compound_on(&c.conn, 0, 1, ops.clone()).await.unwrap();
    let again = compound_on(&c.conn, 0, 1, ops).await.unwrap();
    assert_eq!(first, again, "a retry is answered from the reply cache");
    let before = s.mds.counters.count(NfsOpnum4::OP_GETFH);
    assert_eq!(before, 1, "the retry was not executed again");
    // A seqid two ahead is misordered.
    c.seq += 1;
    let r = c.call(vec![NfsArgop4::PutRootFh]).await;
    assert_eq!(r.status, NfsStat4::NFS4ERR_SEQ_MISORDERED);
}

#[tokio::test]
async fn unknown_op_is_op_illegal_and_forged_handle_is_badhandle() {
    let s = server().await;
    let mut c = Client::new(s.addr, "client-c").await;
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
    let s = server().await;
    let mut c = Client::new(s.addr, "client-d").await;
    let inner = c.sequence();
    c.seq -= 1;
    let r = c.call(vec![inner]).await;
    assert_eq!(r.status, NfsStat4::NFS4ERR_SEQUENCE_POS);
}

#[tokio::test]
async fn illegal_op_first_is_op_illegal_not_op_not_in_session() {
    let s = server().await;
    let conn = connect(s.addr).await;
    let r = compound_on(&conn, 0, 1, vec![NfsArgop4::Illegal])
        .await
        .unwrap();
    assert_eq!(r.status, NfsStat4::NFS4ERR_OP_ILLEGAL);
    assert!(matches!(r.resarray[0], NfsResop4::Illegal(_)));
}

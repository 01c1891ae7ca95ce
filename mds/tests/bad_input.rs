//! Bad input on the in-memory cluster's MDS alone (issue 4, "Bad input"): each case gets the error RFC 8881 and
//! RFC 5531 name, and the server keeps serving.

use bytes::{BufMut, Bytes, BytesMut};
use nfs_proto::nfs4::*;
use nfs_proto::rpc::AcceptStat;
use nfs_proto::transport::CallError;
use nfs_proto::xdr::{self, Utf8String};
use testkit::cluster::Cluster;
use testkit::prelude::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

fn getattr_type() -> NfsArgop4 {
    NfsArgop4::GetAttr(GetAttrArgs {
        attr_request: Bitmap4::from_bits([nfs_proto::nfs4::attr::FATTR4_TYPE]),
    })
}

/// Sends raw COMPOUND arguments on the client's connection and decodes the reply.
async fn raw_compound(c: &Client, args: Bytes) -> Result<Compound4Res, CallError> {
    let body = c
        .conn
        .call(
            NFS4_PROGRAM,
            NFS_V4,
            NFSPROC4_COMPOUND,
            auth_sys(0),
            vec![args],
        )
        .await?;
    Ok(xdr::from_bytes::<Compound4Res>(body).expect("reply decodes"))
}

#[tokio::test]
async fn more_ops_than_the_session_allows_is_too_many_ops() {
    let s = Cluster::mds_alone().await;
    let mut c = s.client("too-many").await;
    // The session was made with ca_maxoperations 16 (SEQUENCE included).
    let ops = std::iter::repeat_with(|| NfsArgop4::PutRootFh)
        .take(16)
        .collect();
    let r = c.call(ops).await;
    assert_eq!(r.status, NfsStat4::NFS4ERR_TOO_MANY_OPS, "{r:?}");
    // A failed SEQUENCE leaves the slot as it was (RFC 8881 section 2.10.6.1): same seqid.
    c.seq -= 1;
    let ops = std::iter::repeat_with(|| NfsArgop4::PutRootFh)
        .take(15)
        .collect();
    assert_eq!(c.call(ops).await.status, NfsStat4::NFS4_OK);
}

#[tokio::test]
async fn a_truncated_operation_is_badxdr_after_the_ops_before_it_ran() {
    let s = Cluster::mds_alone().await;
    let mut c = s.client("badxdr").await;
    let args = Compound4Args {
        tag: Utf8String::from("bad"),
        minorversion: 1,
        argarray: vec![c.sequence(), NfsArgop4::PutRootFh],
    };
    // Claim three operations, then add a GETATTR whose bitmap says 5 words and has none.
    let mut raw = BytesMut::from(&xdr::to_bytes(&args)[..]);
    let count_at = xdr::to_bytes(&args.tag).len() + 4; // tag, minorversion
    raw[count_at..count_at + 4].copy_from_slice(&3u32.to_be_bytes());
    raw.put_u32(NfsOpnum4::OP_GETATTR.0);
    raw.put_u32(5);
    let r = raw_compound(&c, raw.freeze()).await.unwrap();
    assert_eq!(r.status, NfsStat4::NFS4ERR_BADXDR, "{r:?}");
    assert_eq!(r.resarray.len(), 3, "{r:?}");
    assert_eq!(r.resarray[1].status(), NfsStat4::NFS4_OK);
    assert_eq!(r.resarray[2].status(), NfsStat4::NFS4ERR_BADXDR);
    // The connection and the session still work.
    assert_eq!(
        c.call(vec![NfsArgop4::PutRootFh]).await.status,
        NfsStat4::NFS4_OK
    );
}

#[tokio::test]
async fn arguments_that_are_not_a_compound_are_garbage_args() {
    let s = Cluster::mds_alone().await;
    let mut c = s.client("garbage").await;
    // A tag length far beyond the bytes that follow.
    let r = raw_compound(&c, Bytes::from_static(&[0xff, 0xff, 0xff, 0xf0, 0, 0])).await;
    assert!(
        matches!(r, Err(CallError::Accepted(AcceptStat::GarbageArgs))),
        "{r:?}"
    );
    assert_eq!(
        c.call(vec![NfsArgop4::PutRootFh]).await.status,
        NfsStat4::NFS4_OK
    );
}

#[tokio::test]
async fn a_record_over_the_limit_closes_the_connection_and_others_are_served() {
    let s = Cluster::mds_alone().await;
    let mut sock = s.connect_mds();
    // A last-fragment marker claiming 256 MiB (the default limit is 4 MiB), then a little.
    let marker: u32 = 0x8000_0000 | (256 << 20);
    sock.write_all(&marker.to_be_bytes()).await.unwrap();
    let _ = sock.write_all(&[0u8; 1024]).await;
    let mut buf = [0u8; 64];
    let n = tokio::time::timeout(std::time::Duration::from_secs(10), sock.read(&mut buf))
        .await
        .expect("the server closes the connection instead of waiting for 256 MiB");
    assert!(matches!(n, Ok(0) | Err(_)), "{n:?}");
    // The server still serves everyone else.
    let mut c = s.client("after-big-record").await;
    assert_eq!(
        c.call(vec![NfsArgop4::PutRootFh]).await.status,
        NfsStat4::NFS4_OK
    );
}

#[tokio::test]
async fn the_handle_of_a_removed_object_is_stale_and_a_forged_one_badhandle() {
    let s = Cluster::mds_alone().await;
    let mut c = s.client("stale").await;
    let r = c
        .call(vec![
            NfsArgop4::PutRootFh,
            NfsArgop4::Create(CreateArgs {
                objtype: Createtype4::Dir,
                objname: Utf8String::from("gone"),
                createattrs: Fattr4::default(),
            }),
            NfsArgop4::GetFh,
        ])
        .await;
    let Some(NfsResop4::GetFh(GetFhRes::Ok(fh))) = r.resarray.last() else {
        panic!("{r:?}")
    };
    let fh = fh.object.clone();
    let r = c.call(vec![NfsArgop4::PutRootFh, remove_op("gone")]).await;
    assert_eq!(r.status, NfsStat4::NFS4_OK, "{r:?}");
    let r = c.call(vec![putfh(&fh), getattr_type()]).await;
    assert_eq!(r.status, NfsStat4::NFS4ERR_STALE, "{r:?}");
    // One flipped bit anywhere makes the MAC fail: BADHANDLE, never another file.
    for i in [0, 3, 8, 15, 20, 31] {
        let mut forged = fh.0.to_vec();
        forged[i] ^= 1;
        let r = c
            .call(vec![NfsArgop4::PutFh(PutFhArgs {
                object: NfsFh4(Bytes::from(forged)),
            })])
            .await;
        assert_eq!(r.status, NfsStat4::NFS4ERR_BADHANDLE, "byte {i}: {r:?}");
    }
    // And a handle of another length.
    let r = c
        .call(vec![NfsArgop4::PutFh(PutFhArgs {
            object: NfsFh4(Bytes::from_static(b"short")),
        })])
        .await;
    assert_eq!(r.status, NfsStat4::NFS4ERR_BADHANDLE, "{r:?}");
}

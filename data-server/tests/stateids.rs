//! Stateid checks on a data server over in-process streams (RFC 8881 section 13.9.1): a forged, special,
//! revoked, stale-epoch or wrong-mode stateid is refused without asking the MDS.

mod support;

use std::time::Duration;

use data_server::Revoked;
use nfs_proto::nfs4::*;
use support::*;
use testkit::prelude::*;

async fn setup() -> (Ds, Mds, Client, NfsFh4) {
    let d = start_ds(1, Duration::from_secs(90)).await;
    let mds = Mds::new(MDS_EPOCH);
    let c = d.client("c").await;
    let fh = mds.ds_fh(42, 0);
    // As the MDS's SIZE_HINT would: the file reaches past the READs below, so an empty
    // object reads as a hole (not NFS4ERR_NXIO, "ask the MDS").
    d.ds.ends().learn(&[nfs_proto::control::ObjectEnd {
        object: nfs_proto::control::CtlObject {
            file: 42,
            stripe: 0,
        },
        version: 1,
        end: 4096,
        same_offsets_below: 0,
    }]);
    (d, mds, c, fh)
}

async fn write_status(c: &mut Client, fh: &NfsFh4, sid: Stateid4) -> NfsStat4 {
    let r = c
        .call(vec![
            putfh(fh),
            write_op(sid, 0, StableHow4::FILE_SYNC4, b"x"),
        ])
        .await;
    last_status(&r)
}

async fn read_status(c: &mut Client, fh: &NfsFh4, sid: Stateid4) -> NfsStat4 {
    last_status(&c.call(vec![putfh(fh), read_op(sid, 0, 1)]).await)
}

#[tokio::test]
async fn a_forged_stateid_is_bad_stateid() {
    let (_d, mut mds, mut c, fh) = setup().await;
    let mut sid = mds.open_stateid(42, 1);
    sid.other[1] = 3; // a read-only open claiming write access
    assert_eq!(
        write_status(&mut c, &fh, sid).await,
        NfsStat4::NFS4ERR_BAD_STATEID
    );
    sid.other = [0x5a; 12];
    assert_eq!(
        read_status(&mut c, &fh, sid).await,
        NfsStat4::NFS4ERR_BAD_STATEID
    );
}

#[tokio::test]
async fn special_stateids_are_refused_on_a_data_server() {
    let (_d, _mds, mut c, fh) = setup().await;
    for sid in [Stateid4::ANONYMOUS, Stateid4::BYPASS, Stateid4::CURRENT] {
        assert_eq!(
            read_status(&mut c, &fh, sid).await,
            NfsStat4::NFS4ERR_BAD_STATEID,
            "{sid:?}"
        );
        assert_eq!(
            write_status(&mut c, &fh, sid).await,
            NfsStat4::NFS4ERR_BAD_STATEID,
            "{sid:?}"
        );
    }
}

#[tokio::test]
async fn a_read_only_opens_stateid_cannot_write() {
    let (d, mut mds, mut c, fh) = setup().await;
    let ro = mds.open_stateid(42, OPEN4_SHARE_ACCESS_READ as u8);
    assert_eq!(read_status(&mut c, &fh, ro).await, NfsStat4::NFS4_OK);
    assert_eq!(
        write_status(&mut c, &fh, ro).await,
        NfsStat4::NFS4ERR_OPENMODE
    );
    // An OPEN upgrade on the MDS keeps `other`; the MDS tells the DS.
    d.ds.set_access(ro.other, OPEN4_SHARE_ACCESS_BOTH as u8);
    assert_eq!(write_status(&mut c, &fh, ro).await, NfsStat4::NFS4_OK);
}

#[tokio::test]
async fn a_revoked_stateid_is_admin_revoked_and_others_keep_working() {
    let (d, mut mds, mut c, fh) = setup().await;
    let fenced = mds.open_stateid(42, 3);
    let other = mds.open_stateid(42, 3);
    assert_eq!(write_status(&mut c, &fh, fenced).await, NfsStat4::NFS4_OK);
    d.ds.revoke(fenced.other, Revoked::Admin);
    assert_eq!(
        write_status(&mut c, &fh, fenced).await,
        NfsStat4::NFS4ERR_ADMIN_REVOKED
    );
    assert_eq!(
        read_status(&mut c, &fh, fenced).await,
        NfsStat4::NFS4ERR_ADMIN_REVOKED
    );
    assert_eq!(write_status(&mut c, &fh, other).await, NfsStat4::NFS4_OK);
}

#[tokio::test]
async fn a_stateid_of_an_earlier_mds_boot_is_stale_after_the_new_keys_arrive() {
    let (d, mut mds, mut c, fh) = setup().await;
    let old = mds.open_stateid(42, 3);
    let mut before = Mds::new(MDS_EPOCH - 1);
    assert_eq!(
        write_status(&mut c, &fh, before.open_stateid(42, 3)).await,
        NfsStat4::NFS4ERR_STALE_STATEID
    );
    d.ds.set_keys(&keys(MDS_EPOCH + 1));
    assert_eq!(
        write_status(&mut c, &fh, old).await,
        NfsStat4::NFS4ERR_STALE_STATEID
    );
    let mut restarted = Mds::new(MDS_EPOCH + 1);
    let fresh = restarted.open_stateid(42, 3);
    // DS filehandles are bound to a layout of their MDS boot: the client gets new layouts
    // (and so new handles) after the MDS restarts.
    assert_eq!(
        write_status(&mut c, &fh, fresh).await,
        NfsStat4::NFS4ERR_PNFS_NO_LAYOUT
    );
    let new_fh = restarted.ds_fh(42, 0);
    assert_ne!(new_fh, fh);
    assert_eq!(
        write_status(&mut c, &new_fh, fresh).await,
        NfsStat4::NFS4_OK
    );
}

#[tokio::test]
async fn a_layout_stateid_is_not_for_io() {
    let (_d, mut mds, mut c, fh) = setup().await;
    let layout = Stateid4 {
        seqid: 1,
        other: mds
            .minter
            .mint(
                cluster::stateid::StateidKind::Layout,
                3,
                support::holder(42),
            )
            .unwrap(),
    };
    assert_eq!(
        write_status(&mut c, &fh, layout).await,
        NfsStat4::NFS4ERR_BAD_STATEID
    );
}

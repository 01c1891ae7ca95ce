//! The data servers' view of stateids follows the MDS over loopback with real data servers:
//! OPEN upgrades and OPEN_DOWNGRADE reach them before the reply (SET_ACCESS), a closed
//! stateid is refused there (REVOKE, closed), and so is an expired client's.

mod support;

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use mds::{Config, Mds};
use nfs_proto::nfs4::*;
use support::cluster::{start_cluster, Cluster};
use support::ds::until;
use support::layout::*;
use support::open::*;
use support::*;

async fn cluster(lease: u32) -> (Cluster, Arc<Mds>, SocketAddr) {
    start_cluster(3, |c: &mut Config| {
        c.lease_time = lease;
        c.cluster.layouts = true;
    })
    .await
}

/// The status of a one-byte WRITE at offset 0 of stripe index 0's object under `stateid`.
async fn ds_write(k: &Cluster, mds: &Mds, fileid: u64, fh: &NfsFh4, stateid: Stateid4) -> NfsStat4 {
    let set = mds.store.stripes(fileid).unwrap().expect("a stripe set");
    let ds = mds.stripe_servers(&set).unwrap()[0];
    let addr = k.cfg.cluster.data_server(ds).unwrap().addresses[0];
    // A new client each time (a data server answers a second RECLAIM_COMPLETE of one
    // owner with NFS4ERR_COMPLETE_ALREADY).
    static N: AtomicU32 = AtomicU32::new(0);
    let name = format!("ds-writer-{}", N.fetch_add(1, Ordering::Relaxed));
    let mut d = Client::new(addr, &name).await;
    let r = d
        .call(vec![
            putfh(fh),
            write_op(
                Stateid4 {
                    seqid: 0,
                    ..stateid
                },
                0,
                StableHow4::FILE_SYNC4,
                Bytes::from_static(b"x"),
            ),
        ])
        .await;
    r.status
}

/// Opens `name` READ (creating it), takes a READ layout, and returns the open, the file id
/// and the DS filehandle of stripe index 0.
async fn open_read_with_layout(c: &mut Client, name: &str) -> (Opened, u64, NfsFh4) {
    let o = open_in_root(c, name, OPEN4_SHARE_ACCESS_READ, OPEN4_SHARE_DENY_NONE, "o").await;
    let (fileid, _) = fileid_of(c, &o.fh).await;
    let r = c
        .call(vec![
            putfh(&o.fh),
            layoutget_op(Layoutiomode4::LAYOUTIOMODE4_READ, o.stateid),
        ])
        .await;
    let (_, body) = granted(&r);
    (o, fileid, body.nfl_fh_list[0].clone())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_open_upgrade_lets_the_data_servers_accept_write_and_a_downgrade_takes_it_back() {
    let (k, mds, addr) = cluster(10).await;
    let mut c = Client::new(addr, "upgrader").await;
    let (o, fileid, dsfh) = open_read_with_layout(&mut c, "f").await;
    assert_eq!(
        ds_write(&k, &mds, fileid, &dsfh, o.stateid).await,
        NfsStat4::NFS4ERR_OPENMODE,
        "a READ open may not write on a data server"
    );
    // The same owner opens the file again for reading and writing: same `other`.
    let up = open_in_root(
        &mut c,
        "f",
        OPEN4_SHARE_ACCESS_BOTH,
        OPEN4_SHARE_DENY_NONE,
        "o",
    )
    .await;
    assert_eq!(up.stateid.other, o.stateid.other);
    assert_eq!(
        ds_write(&k, &mds, fileid, &dsfh, up.stateid).await,
        NfsStat4::NFS4_OK
    );
    let r = c
        .call(vec![
            putfh(&o.fh),
            NfsArgop4::OpenDowngrade(OpenDowngradeArgs {
                open_stateid: up.stateid,
                seqid: 0,
                share_access: OPEN4_SHARE_ACCESS_READ,
                share_deny: 0,
            }),
        ])
        .await;
    assert_eq!(r.status, NfsStat4::NFS4_OK, "{r:?}");
    assert_eq!(
        ds_write(&k, &mds, fileid, &dsfh, up.stateid).await,
        NfsStat4::NFS4ERR_OPENMODE
    );
    assert_eq!(mds.devices.pushed_counts().0, 1, "one access override kept");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_data_server_that_restarts_is_told_the_access_changes_again() {
    let (mut k, mds, addr) = cluster(10).await;
    let mut c = Client::new(addr, "upgrader").await;
    let (o, fileid, dsfh) = open_read_with_layout(&mut c, "f").await;
    let up = open_in_root(
        &mut c,
        "f",
        OPEN4_SHARE_ACCESS_BOTH,
        OPEN4_SHARE_DENY_NONE,
        "o",
    )
    .await;
    let set = mds.store.stripes(fileid).unwrap().unwrap();
    let ds = mds.stripe_servers(&set).unwrap()[0];
    let before = mds.devices.status(ds).unwrap().registrations;
    k.kill(ds);
    let m = mds.clone();
    until("the data server down", || m.devices.control(ds).is_none()).await;
    k.restart(ds);
    until("the data server registered again", || {
        m.devices
            .status(ds)
            .is_some_and(|s| s.up && s.registrations > before)
    })
    .await;
    let _ = o;
    assert_eq!(
        ds_write(&k, &mds, fileid, &dsfh, up.stateid).await,
        NfsStat4::NFS4_OK,
        "the restarted data server learned the upgrade at registration"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_closed_stateid_is_refused_by_the_data_servers() {
    let (k, mds, addr) = cluster(10).await;
    let mut c = Client::new(addr, "closer").await;
    let o = open_in_root(
        &mut c,
        "f",
        OPEN4_SHARE_ACCESS_BOTH,
        OPEN4_SHARE_DENY_NONE,
        "o",
    )
    .await;
    let (fileid, _) = fileid_of(&mut c, &o.fh).await;
    let r = c
        .call(vec![
            putfh(&o.fh),
            layoutget_op(Layoutiomode4::LAYOUTIOMODE4_RW, o.stateid),
        ])
        .await;
    let dsfh = granted(&r).1.nfl_fh_list[0].clone();
    assert_eq!(
        ds_write(&k, &mds, fileid, &dsfh, o.stateid).await,
        NfsStat4::NFS4_OK
    );
    let r = c.call(vec![putfh(&o.fh), close_op(o.stateid)]).await;
    assert_eq!(r.status, NfsStat4::NFS4_OK, "{r:?}");
    let m = mds.clone();
    until("the close revoked on the data servers", || {
        m.devices.pushed_counts().1 == 1 && m.fencing.queued() == 0
    })
    .await;
    // The queue task may still be sending: the answer settles on BAD_STATEID.
    let mut status = NfsStat4::NFS4_OK;
    for _ in 0..50 {
        status = ds_write(&k, &mds, fileid, &dsfh, o.stateid).await;
        if status != NfsStat4::NFS4_OK {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert_eq!(status, NfsStat4::NFS4ERR_BAD_STATEID);
}

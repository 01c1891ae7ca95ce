//! Which clients may reclaim after a restart, over more than one restart (RFC 8881 sections
//! 8.4.2.1 and 8.4.3): the store's client records must name exactly the clients that held
//! state the server may still honour.
//!
//! Each boot is the in-memory cluster's MDS over the same data directory (redb on disk);
//! stopping it drops its connections and tasks and closes its store, as a `kill -9` would
//! (every acknowledged change is committed).

use std::path::Path;
use std::time::Duration;

use nfs_proto::nfs4::attr::*;
use nfs_proto::nfs4::*;
use nfs_proto::xdr::Utf8String;
use testkit::cluster::{Cluster, StoreKind};
use testkit::prelude::*;

/// The first boot of an MDS alone over `dir` (metadata in redb on disk, lease 60 s, no grace
/// period), on `clock`: every boot of a test runs on one manual clock, so nothing ends by
/// itself.
async fn first_boot(dir: &Path, clock: &ManualClock) -> Cluster {
    Cluster::builder()
        .data_servers(0)
        .lease(60)
        .store(StoreKind::Redb(dir.to_path_buf()))
        .clock(clock.shared())
        .start()
        .await
}

/// The next boot: the MDS stops (its connections close, its store is closed) and starts
/// again over the same directory, with a grace period of `grace` seconds.
async fn reboot(s: &mut Cluster, grace: u32) {
    s.restart_mds_with(|cfg| cfg.grace_time = grace).await;
}

/// EXCHANGE_ID + CREATE_SESSION only: a client that may still reclaim.
async fn reclaiming(s: &Cluster, owner: &str) -> Client {
    s.client_with(&Setup::new(owner).reclaiming()).await
}

/// Creates (UNCHECKED4) and opens `name` in the root; returns its filehandle.
async fn create(c: &mut Client, name: &str) -> NfsFh4 {
    let attrs = FileAttrs {
        mode: Some(0o644),
        ..FileAttrs::default()
    };
    let how = Openflag4::Create(Createhow4::Unchecked(attrs.to_fattr(&attrs.mask())));
    let r = c
        .call(vec![
            NfsArgop4::PutRootFh,
            open_op(
                OpenClaim4::Null(Utf8String::from(name)),
                how,
                OPEN4_SHARE_ACCESS_BOTH,
                0,
                "o1",
            ),
            NfsArgop4::GetFh,
        ])
        .await;
    assert_eq!(r.status, NfsStat4::NFS4_OK, "{r:?}");
    match r.resarray.last() {
        Some(NfsResop4::GetFh(GetFhRes::Ok(ok))) => ok.object.clone(),
        _ => panic!("no GETFH result: {r:?}"),
    }
}

/// OPEN with CLAIM_PREVIOUS of `fh`: the status of the reclaim.
async fn reclaim_open(c: &mut Client, fh: &NfsFh4) -> NfsStat4 {
    let r = c
        .call(vec![putfh(fh), reclaim_op(OPEN4_SHARE_ACCESS_BOTH, "o1")])
        .await;
    r.status
}

/// A new OPEN (CLAIM_NULL, creating `name`): NFS4ERR_GRACE while the grace period runs.
async fn new_open(c: &mut Client, name: &str) -> NfsStat4 {
    let attrs = FileAttrs::default();
    let how = Openflag4::Create(Createhow4::Unchecked(attrs.to_fattr(&attrs.mask())));
    let r = c
        .call(vec![
            NfsArgop4::PutRootFh,
            open_op(
                OpenClaim4::Null(Utf8String::from(name)),
                how,
                OPEN4_SHARE_ACCESS_BOTH,
                0,
                "o2",
            ),
        ])
        .await;
    r.status
}

async fn reclaim_complete(c: &mut Client) {
    let r = c
        .call(vec![NfsArgop4::ReclaimComplete(ReclaimCompleteArgs {
            rca_one_fs: false,
        })])
        .await;
    assert_eq!(r.status, NfsStat4::NFS4_OK, "{r:?}");
}

/// DESTROY_SESSION then DESTROY_CLIENTID, as the Linux client does at unmount.
async fn go_away(c: Client) {
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
    let r = compound_on(
        &c.conn,
        0,
        1,
        vec![NfsArgop4::DestroyClientId(DestroyClientIdArgs {
            dca_clientid: c.clientid,
        })],
    )
    .await
    .unwrap();
    assert_eq!(r.status, NfsStat4::NFS4_OK, "{r:?}");
}

/// A client that came back after a restart and then unmounted (DESTROY_CLIENTID) is no client
/// of the previous boot at the next restart: it may not reclaim, and the grace period does not
/// wait for it. (Its record of the first boot must not outlive the one that replaced it.)
#[tokio::test]
async fn a_client_gone_after_reclaiming_is_not_waited_for_after_the_next_restart() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new();
    let mut s = first_boot(dir.path(), &clock).await;
    let fh = {
        let mut gone = s.client("gone").await;
        s.client("stays").await;
        create(&mut gone, "f").await
    };
    reboot(&mut s, 60).await;
    {
        let mut gone = reclaiming(&s, "gone").await;
        let mut stays = reclaiming(&s, "stays").await;
        reclaim_complete(&mut gone).await;
        reclaim_complete(&mut stays).await;
        go_away(gone).await;
    }
    reboot(&mut s, 60).await;
    let mut gone = reclaiming(&s, "gone").await;
    assert_eq!(
        reclaim_open(&mut gone, &fh).await,
        NfsStat4::NFS4ERR_NO_GRACE
    );
    let mut stays = reclaiming(&s, "stays").await;
    assert_eq!(new_open(&mut stays, "g").await, NfsStat4::NFS4ERR_GRACE);
    // The only client of the previous boot is done: the grace period is over.
    reclaim_complete(&mut stays).await;
    assert_eq!(new_open(&mut stays, "g").await, NfsStat4::NFS4_OK);
}

/// RFC 8881 section 8.4.3: a client that did not reclaim during a grace period may have lost
/// its state to others after it, so after another restart it may not reclaim that state.
#[tokio::test]
async fn a_client_that_missed_a_grace_period_may_not_reclaim_after_the_next_restart() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new();
    let mut s = first_boot(dir.path(), &clock).await;
    let fh = {
        let mut late = s.client("late").await;
        create(&mut late, "f").await
    };
    // Nobody reclaims; the one-second grace period ends by time (the reaper ticks each second
    // of the server's clock) and another client is free to open the file.
    reboot(&mut s, 1).await;
    {
        let mds = s.mds();
        advance(&clock, Duration::from_secs(2)).await;
        // Ending it, the reaper forgets the client that did not reclaim (a store commit).
        let mut turns = 0u32;
        while mds
            .store()
            .clients()
            .unwrap()
            .iter()
            .any(|c| &c.owner[..] == b"late")
        {
            turns += 1;
            assert!(turns < 1_000_000, "the grace period did not end");
            tokio::task::yield_now().await;
        }
        let mut other = s.client("other").await;
        assert_eq!(
            reclaim_open(&mut other, &fh).await,
            NfsStat4::NFS4ERR_NO_GRACE
        );
        assert_eq!(new_open(&mut other, "f").await, NfsStat4::NFS4_OK);
    }
    reboot(&mut s, 60).await;
    let mut late = reclaiming(&s, "late").await;
    assert_eq!(
        reclaim_open(&mut late, &fh).await,
        NfsStat4::NFS4ERR_NO_GRACE
    );
    // The client that was there in the previous boot still reclaims.
    let mut other = reclaiming(&s, "other").await;
    assert_eq!(reclaim_open(&mut other, &fh).await, NfsStat4::NFS4_OK);
}

/// The ordinary case over two restarts: a client that reclaimed in the second boot reclaims
/// again in the third.
#[tokio::test]
async fn a_client_that_reclaimed_reclaims_again_after_the_next_restart() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new();
    let mut s = first_boot(dir.path(), &clock).await;
    let fh = {
        let mut c = s.client("c").await;
        create(&mut c, "f").await
    };
    for _ in 0..2 {
        reboot(&mut s, 60).await;
        let mut c = reclaiming(&s, "c").await;
        assert_eq!(reclaim_open(&mut c, &fh).await, NfsStat4::NFS4_OK);
        reclaim_complete(&mut c).await;
    }
}

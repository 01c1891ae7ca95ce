//! Files whose last name goes while they are open (RFC 8881 section 18.25.4; pynfs RNM21):
//! they stay usable through their filehandle until the last open goes (CLOSE, or the
//! holder's lease), then they are deleted; across a restart they wait for the grace period.

use std::path::Path;
use std::time::Duration;

use bytes::Bytes;
use nfs_proto::nfs4::attr::*;
use nfs_proto::nfs4::*;
use pfs_core::ObjectId;
use testkit::cluster::{Cluster, StoreKind};
use testkit::prelude::*;

fn rename_in_root(old: &str, new: &str) -> Vec<NfsArgop4> {
    vec![
        NfsArgop4::PutRootFh,
        NfsArgop4::SaveFh,
        NfsArgop4::PutRootFh,
        NfsArgop4::Rename(RenameArgs {
            oldname: old.into(),
            newname: new.into(),
        }),
    ]
}

fn remove_in_root(name: &str) -> Vec<NfsArgop4> {
    vec![NfsArgop4::PutRootFh, remove_op(name)]
}

async fn numlinks(c: &mut Client, fh: &NfsFh4) -> u32 {
    let r = c
        .call(vec![
            putfh(fh),
            NfsArgop4::GetAttr(GetAttrArgs {
                attr_request: Bitmap4::from_bits([FATTR4_NUMLINKS]),
            }),
        ])
        .await;
    let Some(NfsResop4::GetAttr(GetAttrRes::Ok(a))) = r.resarray.last() else {
        panic!("GETATTR failed: {r:?}")
    };
    FileAttrs::from_fattr(&a.obj_attributes)
        .unwrap()
        .numlinks
        .unwrap()
}

async fn putfh_status(c: &mut Client, fh: &NfsFh4) -> NfsStat4 {
    c.call(vec![putfh(fh)]).await.status
}

/// Writes `data` at offset 0, FILE_SYNC.
async fn write_all(c: &mut Client, f: &Opened, data: &'static [u8]) {
    let r = c
        .call(vec![
            putfh(&f.fh),
            write_op(
                f.stateid,
                0,
                StableHow4::FILE_SYNC4,
                Bytes::from_static(data),
            ),
        ])
        .await;
    assert_eq!(write_res(&r).count as usize, data.len());
}

async fn read_all(c: &mut Client, f: &Opened) -> Bytes {
    read_res(
        &c.call(vec![putfh(&f.fh), read_op(f.stateid, 0, 4096)])
            .await,
    )
    .data
}

async fn close(c: &mut Client, f: &Opened) {
    let r = c.call(vec![putfh(&f.fh), close_op(f.stateid)]).await;
    assert_eq!(r.status, NfsStat4::NFS4_OK, "{r:?}");
}

/// Waits until the store has no orphan left and the file's data object and inode are gone
/// (the inode is deleted in the background after the reply, by a store commit on the
/// store's own thread); panics if that takes more than 10 s.
async fn deleted_soon(s: &Cluster, fileid: u64) {
    let mds = s.mds();
    s.until("the orphan deleted", || {
        let no_orphan = mds.store().orphans().unwrap().is_empty();
        let no_data = mds.data().size(ObjectId::whole(fileid)).unwrap_or(0) == 0;
        let no_inode = mds.store().getattr(fileid).is_err();
        no_orphan && no_data && no_inode
    })
    .await;
}

#[tokio::test]
async fn renaming_over_an_open_file_keeps_it_until_close() {
    let s = Cluster::mds_alone().await;
    let mut c = s.client("rename-over-open").await;
    let target = open_in_root(&mut c, "target", OPEN4_SHARE_ACCESS_BOTH, 0, "o1").await;
    write_all(&mut c, &target, b"keep me").await;
    let (id, _) = fileid_of(&mut c, &target.fh).await;
    let source = open_in_root(&mut c, "source", OPEN4_SHARE_ACCESS_BOTH, 0, "o1").await;
    close(&mut c, &source).await;

    let r = c.call(rename_in_root("source", "target")).await;
    assert_eq!(r.status, NfsStat4::NFS4_OK, "{r:?}");

    // The open file is still there through its handle, without a name.
    assert_eq!(numlinks(&mut c, &target.fh).await, 0);
    assert_eq!(&read_all(&mut c, &target).await[..], b"keep me");
    write_all(&mut c, &target, b"still writable").await;
    assert_eq!(
        s.mds()
            .store()
            .orphans()
            .unwrap()
            .iter()
            .map(|o| o.0)
            .collect::<Vec<_>>(),
        [id]
    );
    // CLOSE works (pynfs RNM21), and then the file is gone.
    close(&mut c, &target).await;
    assert_eq!(
        putfh_status(&mut c, &target.fh).await,
        NfsStat4::NFS4ERR_STALE
    );
    deleted_soon(&s, id).await;
}

#[tokio::test]
async fn a_file_removed_while_two_clients_have_it_open_goes_with_the_last_close() {
    let s = Cluster::mds_alone().await;
    let mut a = s.client("holder-a").await;
    let mut b = s.client("holder-b").await;
    let fa = open_in_root(&mut a, "shared", OPEN4_SHARE_ACCESS_BOTH, 0, "oa").await;
    write_all(&mut a, &fa, b"shared data").await;
    let fb = open_in_root(&mut b, "shared", OPEN4_SHARE_ACCESS_READ, 0, "ob").await;
    let (id, _) = fileid_of(&mut a, &fa.fh).await;

    let r = a.call(remove_in_root("shared")).await;
    assert_eq!(r.status, NfsStat4::NFS4_OK, "{r:?}");
    let r = a.call(vec![NfsArgop4::PutRootFh, lookup("shared")]).await;
    assert_eq!(r.status, NfsStat4::NFS4ERR_NOENT, "the name is gone");

    close(&mut a, &fa).await;
    assert_eq!(&read_all(&mut b, &fb).await[..], b"shared data");
    assert_eq!(numlinks(&mut b, &fb.fh).await, 0);
    close(&mut b, &fb).await;
    assert_eq!(putfh_status(&mut b, &fb.fh).await, NfsStat4::NFS4ERR_STALE);
    deleted_soon(&s, id).await;
}

#[tokio::test]
async fn an_orphan_gets_no_new_name() {
    let s = Cluster::mds_alone().await;
    let mut c = s.client("relink").await;
    let f = open_in_root(&mut c, "f", OPEN4_SHARE_ACCESS_BOTH, 0, "o1").await;
    c.call(remove_in_root("f")).await;
    let r = c
        .call(vec![
            putfh(&f.fh),
            NfsArgop4::SaveFh,
            NfsArgop4::PutRootFh,
            NfsArgop4::Link(LinkArgs {
                newname: "again".into(),
            }),
        ])
        .await;
    assert_eq!(
        r.status,
        NfsStat4::NFS4ERR_NOENT,
        "as link(2) of an unlinked file"
    );
    close(&mut c, &f).await;
}

#[tokio::test]
async fn a_file_removed_while_open_goes_when_its_holders_lease_runs_out() {
    let clock = ManualClock::new();
    let s = Cluster::builder()
        .data_servers(0)
        .lease(2)
        .clock(clock.shared())
        .start()
        .await;
    let mut holder = s.client("silent-holder").await;
    let mut other = s.client("other").await;
    let f = open_in_root(&mut holder, "f", OPEN4_SHARE_ACCESS_BOTH, 0, "o1").await;
    let (id, _) = fileid_of(&mut holder, &f.fh).await;
    let r = other.call(remove_in_root("f")).await;
    assert_eq!(r.status, NfsStat4::NFS4_OK, "{r:?}");
    assert_eq!(putfh_status(&mut other, &f.fh).await, NfsStat4::NFS4_OK);
    // The holder goes silent; the other client keeps its own lease alive meanwhile.
    while putfh_status(&mut other, &f.fh).await == NfsStat4::NFS4_OK {
        assert!(
            clock.elapsed() < Duration::from_secs(10),
            "the orphan outlived its holder's lease"
        );
        advance(&clock, Duration::from_millis(200)).await;
    }
    assert_eq!(
        putfh_status(&mut other, &f.fh).await,
        NfsStat4::NFS4ERR_STALE
    );
    deleted_soon(&s, id).await;
}

// ---------------------------------------------------------------------------------------------
// Across a restart
// ---------------------------------------------------------------------------------------------

/// First life of a server over `dir` (metadata in redb on disk, lease 60 s, no grace
/// period) on `clock`: `owner` opens `f`, writes it, and removes its name while it is open;
/// then the server dies (its connections and tasks go, its store closes) and starts again
/// with a grace period of `grace` seconds.
async fn orphan_then_restart(
    dir: &Path,
    clock: &ManualClock,
    owner: &str,
    grace: u32,
) -> (Cluster, NfsFh4, u64) {
    let mut s = Cluster::builder()
        .data_servers(0)
        .lease(60)
        .store(StoreKind::Redb(dir.to_path_buf()))
        .clock(clock.shared())
        .start()
        .await;
    let (fh, id) = {
        let mut c = s.client(owner).await;
        let f = open_in_root(&mut c, "f", OPEN4_SHARE_ACCESS_BOTH, 0, "o1").await;
        write_all(&mut c, &f, b"open across a restart").await;
        let (id, _) = fileid_of(&mut c, &f.fh).await;
        let r = c.call(remove_in_root("f")).await;
        assert_eq!(r.status, NfsStat4::NFS4_OK, "{r:?}");
        (f.fh, id)
    };
    s.restart_mds_with(|cfg| cfg.grace_time = grace).await;
    (s, fh, id)
}

/// EXCHANGE_ID + CREATE_SESSION only: a client that may still reclaim.
async fn reclaiming(s: &Cluster, owner: &str) -> Client {
    s.client_with(&Setup::new(owner).reclaiming()).await
}

#[tokio::test]
async fn without_a_grace_period_orphans_of_the_last_run_are_deleted_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new();
    let (s, fh, id) = orphan_then_restart(dir.path(), &clock, "crashed", 0).await;
    deleted_soon(&s, id).await; // no open survived the restart
    let mut c = s.client("after").await;
    assert_eq!(putfh_status(&mut c, &fh).await, NfsStat4::NFS4ERR_STALE);
}

#[tokio::test]
async fn an_orphan_waits_for_the_grace_period_and_a_reclaimed_open_keeps_it() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new();
    let (s, fh, id) = orphan_then_restart(dir.path(), &clock, "reclaimer", 60).await;
    let mut c = reclaiming(&s, "reclaimer").await;
    // The reaper runs its rounds (one a second) in the grace period: the orphan stays.
    advance(&clock, Duration::from_millis(1500)).await;
    assert_eq!(
        putfh_status(&mut c, &fh).await,
        NfsStat4::NFS4_OK,
        "kept during grace"
    );
    let r = c
        .call(vec![putfh(&fh), reclaim_op(OPEN4_SHARE_ACCESS_BOTH, "o1")])
        .await;
    assert_eq!(r.status, NfsStat4::NFS4_OK, "{r:?}");
    let f = Opened {
        fh: fh.clone(),
        stateid: open_res(&r).stateid,
    };
    // The only previous client is done: the grace period ends, and the sweep finds the
    // orphan open again. The reaper's next round sweeps; the test sweeps once more itself,
    // so that the checks below follow a finished sweep whatever the reaper's progress.
    let r = c
        .call(vec![NfsArgop4::ReclaimComplete(ReclaimCompleteArgs {
            rca_one_fs: false,
        })])
        .await;
    assert_eq!(r.status, NfsStat4::NFS4_OK, "{r:?}");
    advance(&clock, Duration::from_millis(1500)).await;
    mds::ops::dir::sweep_orphans(s.mds().clone()).await;
    assert_eq!(&read_all(&mut c, &f).await[..], b"open across a restart");
    assert_eq!(numlinks(&mut c, &fh).await, 0);
    close(&mut c, &f).await;
    assert_eq!(putfh_status(&mut c, &fh).await, NfsStat4::NFS4ERR_STALE);
    deleted_soon(&s, id).await;
}

#[tokio::test]
async fn an_orphan_nobody_reclaims_is_deleted_when_the_grace_period_ends() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new();
    let (s, fh, id) = orphan_then_restart(dir.path(), &clock, "forgetful", 60).await;
    let mut c = reclaiming(&s, "forgetful").await;
    assert_eq!(putfh_status(&mut c, &fh).await, NfsStat4::NFS4_OK);
    let r = c
        .call(vec![NfsArgop4::ReclaimComplete(ReclaimCompleteArgs {
            rca_one_fs: false,
        })])
        .await;
    assert_eq!(r.status, NfsStat4::NFS4_OK, "{r:?}");
    // The reaper's next round (a second of the server's clock) sees the grace period over
    // and sweeps.
    advance(&clock, Duration::from_secs(1)).await;
    deleted_soon(&s, id).await;
    assert_eq!(putfh_status(&mut c, &fh).await, NfsStat4::NFS4ERR_STALE);
}

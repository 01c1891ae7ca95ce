//! The data servers' view of stateids follows the MDS on the in-memory cluster:
//! OPEN upgrades and OPEN_DOWNGRADE reach them before the reply (SET_ACCESS), a closed
//! stateid is refused there (REVOKE, closed), and so is an expired client's. A truncate or
//! a remove while open recalls other clients' layouts (CB_LAYOUTRECALL over their back
//! channels, RFC 8881 sections 12.5.5 and 20.3); a holder that returns in time keeps its
//! stateids, one that does not (or cannot be called back) is fenced on the data servers
//! (section 13.11).

use std::cell::Cell;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use mds::{Config, Mds};
use nfs_proto::nfs4::attr::FileAttrs;
use nfs_proto::nfs4::*;
use testkit::cluster::Cluster;
use testkit::prelude::*;

async fn cluster(lease: u32) -> (Cluster, Arc<Mds>) {
    cluster_on(lease, nfs_server::clock::system()).await
}

/// [`cluster`] on `clock`, the MDS's and the data servers' (the recall tests move a
/// [`ManualClock`] on past the deadlines instead of waiting for them).
async fn cluster_on(lease: u32, clock: nfs_server::SharedClock) -> (Cluster, Arc<Mds>) {
    let k = Cluster::builder()
        .data_servers(3)
        .lease(lease)
        .clock(clock)
        .configure(|c: &mut Config| {
            c.cluster.layouts = true;
            // Layout recalls alone: with delegations on, the other client's truncate or open
            // would first wait for the holder's delegation (tests/delegations.rs covers that).
            c.delegations = false;
        })
        .start()
        .await;
    let mds = k.mds().clone();
    (k, mds)
}

/// The status of a one-byte WRITE at offset 0 of stripe index 0's object under `stateid`.
async fn ds_write(k: &Cluster, mds: &Mds, fileid: u64, fh: &NfsFh4, stateid: Stateid4) -> NfsStat4 {
    let set = mds.store().stripes(fileid).unwrap().expect("a stripe set");
    let ds = mds.stripe_servers(&set).unwrap()[0];
    // A new client each time (a data server answers a second RECLAIM_COMPLETE of one
    // owner with NFS4ERR_COMPLETE_ALREADY).
    static N: AtomicU32 = AtomicU32::new(0);
    let name = format!("ds-writer-{}", N.fetch_add(1, Ordering::Relaxed));
    let mut d = k.ds_client(ds, &name).await;
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
    let (k, mds) = cluster(10).await;
    let mut c = k.client("upgrader").await;
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
    // The READ layout's handle still does not write; an RW layout (now granted) does.
    assert_eq!(
        ds_write(&k, &mds, fileid, &dsfh, up.stateid).await,
        NfsStat4::NFS4ERR_PNFS_NO_LAYOUT
    );
    let dsfh = rw_layout_fh(&mut c, &o.fh, up.stateid).await;
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
    assert_eq!(
        mds.devices().pushed_counts().0,
        1,
        "one access override kept"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_data_server_that_restarts_is_told_the_access_changes_again() {
    let (k, mds) = cluster(10).await;
    let mut c = k.client("upgrader").await;
    let (o, fileid, dsfh) = open_read_with_layout(&mut c, "f").await;
    let up = open_in_root(
        &mut c,
        "f",
        OPEN4_SHARE_ACCESS_BOTH,
        OPEN4_SHARE_DENY_NONE,
        "o",
    )
    .await;
    let _ = dsfh;
    let dsfh = rw_layout_fh(&mut c, &o.fh, up.stateid).await;
    let set = mds.store().stripes(fileid).unwrap().unwrap();
    let ds = mds.stripe_servers(&set).unwrap()[0];
    let before = mds.devices().status(ds).unwrap().registrations;
    k.kill_ds(ds);
    let m = mds.clone();
    k.until("the data server down", || m.devices().control(ds).is_none())
        .await;
    k.restart_ds(ds);
    k.until("the data server registered again", || {
        m.devices()
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
    let (k, mds) = cluster(10).await;
    let mut c = k.client("closer").await;
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
    k.until("the close revoked on the data servers", || {
        m.devices().pushed_counts().1 == 1 && m.fencing().queued() == 0
    })
    .await;
    // The queue task may still be sending: the answer settles on BAD_STATEID.
    let status = ds_refusal(&k, &mds, fileid, &dsfh, o.stateid).await;
    assert_eq!(status, NfsStat4::NFS4ERR_BAD_STATEID);
}

/// A create storm: every stateid closed is refused by the data servers, but the MDS keeps
/// (and would resend to a data server that registers again) a run of counters, not one
/// entry per closed stateid.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_closed_stateids_are_kept_as_a_run_of_counters() {
    let (k, mds) = cluster(10).await;
    let mut c = k.client("storm").await;
    let mut first = None;
    for i in 0..200 {
        let o = open_in_root(
            &mut c,
            &format!("f{i}"),
            OPEN4_SHARE_ACCESS_BOTH,
            OPEN4_SHARE_DENY_NONE,
            "o",
        )
        .await;
        if first.is_none() {
            let (fileid, _) = fileid_of(&mut c, &o.fh).await;
            let r = c
                .call(vec![
                    putfh(&o.fh),
                    layoutget_op(Layoutiomode4::LAYOUTIOMODE4_RW, o.stateid),
                ])
                .await;
            first = Some((o.stateid, fileid, granted(&r).1.nfl_fh_list[0].clone()));
        }
        let r = c.call(vec![putfh(&o.fh), close_op(o.stateid)]).await;
        assert_eq!(r.status, NfsStat4::NFS4_OK, "{r:?}");
    }
    let m = mds.clone();
    k.until("every close pushed", || m.fencing().queued() == 0)
        .await;
    let (access, revoked) = mds.devices().pushed_counts();
    assert_eq!(access, 0);
    assert!(revoked <= 2, "200 closes kept as {revoked} entries");
    let (stateid, fileid, dsfh) = first.unwrap();
    let status = ds_refusal(&k, &mds, fileid, &dsfh, stateid).await;
    assert_eq!(status, NfsStat4::NFS4ERR_BAD_STATEID);
}

// ---------------------------------------------------------------------------------------------
// CB_LAYOUTRECALL and fencing
// ---------------------------------------------------------------------------------------------

/// The lease (and so the recall deadline, `fencing::recall_file`) of the recall tests: short,
/// so a test that waits for the deadline stays short.
const LEASE: u32 = 3;

/// A client holding an RW layout of a file, with a back channel.
struct Holder {
    c: Client,
    cb: Arc<CbClient>,
    open: Opened,
    /// The layout stateid of its LAYOUTGET.
    layout: Stateid4,
    fileid: u64,
    /// The DS filehandle of stripe index 0.
    dsfh: NfsFh4,
}

/// A client `owner` with a back channel answering CB_LAYOUTRECALL with `answer`, which opens
/// `name` (creating it) and takes an RW layout in the same COMPOUND, as the Linux client does.
async fn rw_holder(k: &Cluster, owner: &str, name: &str, answer: RecallAnswer) -> Holder {
    let cb = Arc::new(CbClient::answering(answer));
    let mut c = k.client_with_back_channel(owner, cb.clone()).await;
    let r = open_and_layoutget(&mut c, name, Layoutiomode4::LAYOUTIOMODE4_RW).await;
    let (ok, body) = granted(&r);
    let open = Opened {
        fh: getfh_res(&r),
        stateid: open_res(&r).stateid,
    };
    let (fileid, _) = fileid_of(&mut c, &open.fh).await;
    Holder {
        c,
        cb,
        open,
        layout: ok.logr_stateid,
        fileid,
        dsfh: body.nfl_fh_list[0].clone(),
    }
}

/// Another client opens `name` for reading and writing and truncates it to 0 with SETATTR
/// under its open stateid; returns it and its open.
async fn truncated_by_another(k: &Cluster, name: &str) -> (Client, Opened) {
    let mut b = k.client("truncater").await;
    let o = open_in_root(
        &mut b,
        name,
        OPEN4_SHARE_ACCESS_BOTH,
        OPEN4_SHARE_DENY_NONE,
        "b",
    )
    .await;
    let r = b
        .call(vec![
            putfh(&o.fh),
            NfsArgop4::SetAttr(SetAttrArgs {
                stateid: o.stateid,
                obj_attributes: fattr(&FileAttrs {
                    size: Some(0),
                    ..FileAttrs::default()
                }),
            }),
        ])
        .await;
    assert_eq!(last_status(&r), NfsStat4::NFS4_OK, "{r:?}");
    (b, o)
}

/// Checks that `r` recalls the holder's whole layout of its file, as `fencing::recall_file`
/// means to: LAYOUTRECALL4_FILE of its filehandle, offset 0 and length all ones, iomode ANY
/// (both iomodes), `clora_changed` (the file changed under it), and its layout stateid with
/// the seqid one past the last it was given (RFC 8881 section 12.5.3: the seqid moves on by
/// one in every CB_LAYOUTRECALL, as in every LAYOUTGET and LAYOUTRETURN reply). Returns that
/// stateid.
fn check_recall(h: &Holder, r: &CbLayoutRecallArgs) -> Stateid4 {
    assert_eq!(r.clora_type, Layouttype4::LAYOUT4_NFSV4_1_FILES);
    assert_eq!(r.clora_iomode, Layoutiomode4::LAYOUTIOMODE4_ANY);
    assert!(r.clora_changed, "{r:?}");
    let Layoutrecall4::File(f) = &r.clora_recall else {
        panic!("not a recall of one file: {r:?}")
    };
    assert_eq!(f.lor_fh, h.open.fh, "the holder's filehandle of the file");
    assert_eq!(
        (f.lor_offset, f.lor_length),
        (0, u64::MAX),
        "the whole file"
    );
    assert_eq!(
        f.lor_stateid.other, h.layout.other,
        "the holder's layout stateid"
    );
    assert_eq!(
        f.lor_stateid.seqid,
        h.layout.seqid + 1,
        "one past the holder's last"
    );
    f.lor_stateid
}

/// Renews `c`'s lease (SEQUENCE every 200 ms of `clock`) while `clock` moves on by `d`.
async fn renew_for(c: &mut Client, clock: &ManualClock, d: Duration) {
    let t0 = clock.elapsed();
    while clock.elapsed() - t0 < d {
        let r = c.call(vec![]).await;
        assert_eq!(r.status, NfsStat4::NFS4_OK, "{r:?}");
        advance(clock, Duration::from_millis(200)).await;
    }
}

/// Renews `c`'s lease, moving `clock` on by 50 ms a time, until `f` holds (up to `limit` of
/// `clock`).
async fn renew_until(
    c: &mut Client,
    clock: &ManualClock,
    what: &str,
    limit: Duration,
    mut f: impl FnMut() -> bool,
) {
    let t0 = clock.elapsed();
    while !f() {
        assert!(clock.elapsed() - t0 < limit, "timed out: {what}");
        let r = c.call(vec![]).await;
        assert_eq!(r.status, NfsStat4::NFS4_OK, "{r:?}");
        advance(clock, Duration::from_millis(50)).await;
    }
}

/// The first status other than NFS4_OK of [`ds_write`] through `dsfh` under `stateid`,
/// trying until the data servers refuse it (a revocation or a close reaches them in the
/// background; [`Cluster::until_async`] panics if they still accept it after its limit).
async fn ds_refusal(
    k: &Cluster,
    mds: &Mds,
    fileid: u64,
    dsfh: &NfsFh4,
    stateid: Stateid4,
) -> NfsStat4 {
    let status = Cell::new(NfsStat4::NFS4_OK);
    k.until_async("the data servers still accept the stateid", || async {
        status.set(ds_write(k, mds, fileid, dsfh, stateid).await);
        status.get() != NfsStat4::NFS4_OK
    })
    .await;
    status.get()
}

fn fenced(mds: &Mds) -> u64 {
    mds.fencing().fenced.load(Ordering::Relaxed)
}

fn holders(mds: &Mds, fileid: u64) -> usize {
    mds.tables().layouts().holders(fileid).len()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_truncate_recalls_another_clients_layout_and_a_return_in_time_is_not_fenced() {
    let clock = ManualClock::new();
    let (k, mds) = cluster_on(LEASE, clock.shared()).await;
    let mut a = rw_holder(&k, "holder", "f", RecallAnswer::Status(NfsStat4::NFS4_OK)).await;
    assert_eq!(
        ds_write(&k, &mds, a.fileid, &a.dsfh, a.open.stateid).await,
        NfsStat4::NFS4_OK
    );
    let (mut b, bo) = truncated_by_another(&k, "f").await;

    let recalls = a.cb.wait_recalls(1, Duration::from_secs(5)).await;
    assert_eq!(recalls.len(), 1, "{recalls:?}");
    let recalled = check_recall(&a, &recalls[0]);
    assert_eq!(
        *a.cb.compounds.lock().unwrap().last().unwrap(),
        [NfsCbOpnum4::OP_CB_SEQUENCE, NfsCbOpnum4::OP_CB_LAYOUTRECALL]
    );
    assert_eq!(mds.fencing().recalls_sent.load(Ordering::Relaxed), 1);
    // The truncating client's own layouts are not recalled; while the recall is out, new
    // layouts of the file wait (RFC 8881 section 12.5.5.2).
    let r = b
        .call(vec![
            putfh(&bo.fh),
            layoutget_op(Layoutiomode4::LAYOUTIOMODE4_RW, bo.stateid),
        ])
        .await;
    assert_eq!(last_status(&r), NfsStat4::NFS4ERR_RECALLCONFLICT, "{r:?}");

    // The holder returns the layout under the recalled stateid: it is gone.
    let r =
        a.c.call(vec![
            putfh(&a.open.fh),
            layoutreturn_op(Layoutiomode4::LAYOUTIOMODE4_ANY, return_file(recalled)),
        ])
        .await;
    assert_eq!(last_status(&r), NfsStat4::NFS4_OK, "{r:?}");
    assert_eq!(holders(&mds, a.fileid), 0);

    // Past the recall's deadline (the lease time), its lease kept: nothing was fenced.
    renew_for(&mut a.c, &clock, Duration::from_secs(u64::from(LEASE) + 1)).await;
    assert_eq!(fenced(&mds), 0);
    // The returned layout's handles are dead on the data servers.
    assert_eq!(
        ds_write(&k, &mds, a.fileid, &a.dsfh, a.open.stateid).await,
        NfsStat4::NFS4ERR_PNFS_NO_LAYOUT
    );
    // Its next LAYOUTGET (under its open stateid: the layout stateid went with the return)
    // gets a layout again, whose handles the data servers take with its open stateid.
    let r =
        a.c.call(vec![
            putfh(&a.open.fh),
            layoutget_op(Layoutiomode4::LAYOUTIOMODE4_RW, a.open.stateid),
        ])
        .await;
    let (ok, body) = granted(&r);
    assert_eq!(ok.logr_layout[0].lo_iomode, Layoutiomode4::LAYOUTIOMODE4_RW);
    assert_eq!(
        ds_write(&k, &mds, a.fileid, &body.nfl_fh_list[0], a.open.stateid).await,
        NfsStat4::NFS4_OK
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_holder_that_does_not_return_a_recalled_layout_in_time_is_fenced_on_the_data_servers() {
    let clock = ManualClock::new();
    let (k, mds) = cluster_on(LEASE, clock.shared()).await;
    // It answers CB_LAYOUTRECALL with NFS4_OK and then never sends LAYOUTRETURN.
    let mut a = rw_holder(&k, "holder", "f", RecallAnswer::Status(NfsStat4::NFS4_OK)).await;
    assert_eq!(
        ds_write(&k, &mds, a.fileid, &a.dsfh, a.open.stateid).await,
        NfsStat4::NFS4_OK
    );
    let _b = truncated_by_another(&k, "f").await;
    let asked = clock.elapsed();
    let recalled = check_recall(&a, &a.cb.wait_recalls(1, Duration::from_secs(5)).await[0]);

    let m = mds.clone();
    renew_until(
        &mut a.c,
        &clock,
        "the holder fenced",
        Duration::from_secs(10),
        || fenced(&m) == 1,
    )
    .await;
    let after = clock.elapsed() - asked;
    assert!(
        after >= Duration::from_millis(u64::from(LEASE) * 1000 - 300),
        "fenced {after:?} after the recall, before its deadline"
    );
    assert_eq!(holders(&mds, a.fileid), 0, "the layout is revoked");
    // Every data server refuses its open stateid from now on (RFC 8881 section 13.11).
    assert_eq!(
        ds_refusal(&k, &mds, a.fileid, &a.dsfh, a.open.stateid).await,
        NfsStat4::NFS4ERR_ADMIN_REVOKED
    );
    // At the MDS the revoked layout stateid is no longer a layout: this server answers
    // NFS4ERR_BAD_STATEID to LAYOUTGET and LAYOUTRETURN under it.
    let r =
        a.c.call(vec![
            putfh(&a.open.fh),
            layoutget_op(Layoutiomode4::LAYOUTIOMODE4_RW, recalled),
        ])
        .await;
    assert_eq!(last_status(&r), NfsStat4::NFS4ERR_BAD_STATEID, "{r:?}");
    let r =
        a.c.call(vec![
            putfh(&a.open.fh),
            layoutreturn_op(Layoutiomode4::LAYOUTIOMODE4_ANY, return_file(recalled)),
        ])
        .await;
    assert_eq!(last_status(&r), NfsStat4::NFS4ERR_BAD_STATEID, "{r:?}");
    // The fence is on the data servers only: its open stateid still serves I/O through the
    // MDS.
    let r =
        a.c.call(vec![
            putfh(&a.open.fh),
            write_op(
                a.open.stateid,
                0,
                StableHow4::FILE_SYNC4,
                Bytes::from_static(b"m"),
            ),
        ])
        .await;
    assert_eq!(last_status(&r), NfsStat4::NFS4_OK, "{r:?}");
    assert_eq!(fenced(&mds), 1, "one layout fenced, once");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_holder_that_never_answers_the_recall_is_fenced_at_the_deadline() {
    let clock = ManualClock::new();
    let (k, mds) = cluster_on(LEASE, clock.shared()).await;
    let mut a = rw_holder(&k, "holder", "f", RecallAnswer::Silent).await;
    let _b = truncated_by_another(&k, "f").await;
    let asked = clock.elapsed();
    check_recall(&a, &a.cb.wait_recalls(1, Duration::from_secs(5)).await[0]);
    // The CB_COMPOUND is still unanswered (its timeout is longer than the lease): the
    // deadline alone revokes the layout.
    let m = mds.clone();
    renew_until(
        &mut a.c,
        &clock,
        "the holder fenced",
        Duration::from_secs(8),
        || fenced(&m) == 1,
    )
    .await;
    let after = clock.elapsed() - asked;
    assert!(
        after >= Duration::from_millis(u64::from(LEASE) * 1000 - 300),
        "fenced {after:?} after the recall, before its deadline"
    );
    assert!(
        after < mds::callback::CALLBACK_TIMEOUT,
        "fenced only when the callback timed out ({after:?})"
    );
    assert_eq!(
        ds_refusal(&k, &mds, a.fileid, &a.dsfh, a.open.stateid).await,
        NfsStat4::NFS4ERR_ADMIN_REVOKED
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_holder_whose_back_channel_refuses_the_recall_is_fenced_at_once() {
    // A long lease, and the MDS's clock stands still: the fence must come from the failed
    // callback, not the deadline.
    let clock = ManualClock::new();
    let (k, mds) = cluster_on(20, clock.shared()).await;
    let a = rw_holder(&k, "holder", "f", RecallAnswer::Refuse).await;
    let _b = truncated_by_another(&k, "f").await;
    check_recall(&a, &a.cb.wait_recalls(1, Duration::from_secs(5)).await[0]);
    let m = mds.clone();
    k.until("the holder fenced", || fenced(&m) == 1).await;
    assert_eq!(clock.elapsed(), Duration::ZERO);
    assert_eq!(holders(&mds, a.fileid), 0);
    assert_eq!(
        ds_refusal(&k, &mds, a.fileid, &a.dsfh, a.open.stateid).await,
        NfsStat4::NFS4ERR_ADMIN_REVOKED
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn removing_a_file_another_client_has_open_with_a_layout_recalls_that_layout() {
    let (k, mds) = cluster(LEASE).await;
    let mut a = rw_holder(&k, "holder", "f", RecallAnswer::Status(NfsStat4::NFS4_OK)).await;
    let mut b = k.client("remover").await;
    let r = b.call(vec![NfsArgop4::PutRootFh, remove_op("f")]).await;
    assert_eq!(last_status(&r), NfsStat4::NFS4_OK, "{r:?}");
    let recalls = a.cb.wait_recalls(1, Duration::from_secs(5)).await;
    let recalled = check_recall(&a, &recalls[0]);
    // The file lives on while open: the holder returns the layout of it.
    let r =
        a.c.call(vec![
            putfh(&a.open.fh),
            layoutreturn_op(Layoutiomode4::LAYOUTIOMODE4_ANY, return_file(recalled)),
        ])
        .await;
    assert_eq!(last_status(&r), NfsStat4::NFS4_OK, "{r:?}");
    assert_eq!(holders(&mds, a.fileid), 0);
    assert_eq!(a.cb.recalled().len(), 1, "one recall");
    assert_eq!(fenced(&mds), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_whose_lease_expires_while_it_holds_a_layout_is_refused_by_the_data_servers() {
    let clock = ManualClock::new();
    let (k, mds) = cluster_on(LEASE, clock.shared()).await;
    let mut c = k.client("silent").await;
    let r = open_and_layoutget(&mut c, "f", Layoutiomode4::LAYOUTIOMODE4_RW).await;
    let dsfh = granted(&r).1.nfl_fh_list[0].clone();
    let open = open_res(&r).stateid;
    let fh = getfh_res(&r);
    let (fileid, _) = fileid_of(&mut c, &fh).await;
    // Its last call: from here on the client says nothing.
    let last = clock.elapsed();
    assert_eq!(
        ds_write(&k, &mds, fileid, &dsfh, open).await,
        NfsStat4::NFS4_OK
    );
    let status = loop {
        let s = ds_write(&k, &mds, fileid, &dsfh, open).await;
        if s != NfsStat4::NFS4_OK {
            break s;
        }
        assert!(
            clock.elapsed() - last < Duration::from_secs(u64::from(LEASE) + 5),
            "the data servers still accept the expired client's stateid"
        );
        advance(&clock, Duration::from_millis(50)).await;
    };
    let after = clock.elapsed() - last;
    assert_eq!(status, NfsStat4::NFS4ERR_EXPIRED);
    assert!(
        after >= Duration::from_millis(u64::from(LEASE) * 1000 - 300),
        "refused {after:?} after the client's last call, within its lease"
    );
    assert_eq!(holders(&mds, fileid), 0, "its layout went with its lease");
    assert_eq!(fenced(&mds), 0, "an expiry, not a fence");
    assert_eq!(mds.fencing().recalls_sent.load(Ordering::Relaxed), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_recall_answered_with_nomatching_layout_counts_as_the_layout_returned() {
    let lease = 4;
    let clock = ManualClock::new();
    let (k, mds) = cluster_on(lease, clock.shared()).await;
    let mut a = rw_holder(
        &k,
        "holder",
        "f",
        RecallAnswer::Status(NfsStat4::NFS4ERR_NOMATCHING_LAYOUT),
    )
    .await;
    let (mut b, bo) = truncated_by_another(&k, "f").await;
    let recalled = check_recall(&a, &a.cb.wait_recalls(1, Duration::from_secs(5)).await[0]);
    // No LAYOUTRETURN follows, and none is needed (RFC 8881 section 20.3.4): the layout
    // goes with the answer, long before the deadline.
    let m = mds.clone();
    let fileid = a.fileid;
    k.until("the layout dropped", || holders(&m, fileid) == 0)
        .await;
    // So the recall no longer holds up other clients' layouts.
    let r = b
        .call(vec![
            putfh(&bo.fh),
            layoutget_op(Layoutiomode4::LAYOUTIOMODE4_RW, bo.stateid),
        ])
        .await;
    granted(&r);
    // And nothing is fenced at the deadline: its open stateid still writes, through a new
    // layout (the old one's handles went with it).
    renew_for(&mut a.c, &clock, Duration::from_secs(u64::from(lease) + 1)).await;
    assert_eq!(fenced(&mds), 0);
    assert_eq!(
        ds_write(&k, &mds, a.fileid, &a.dsfh, a.open.stateid).await,
        NfsStat4::NFS4ERR_PNFS_NO_LAYOUT
    );
    let fresh = rw_layout_fh(&mut a.c, &a.open.fh, a.open.stateid).await;
    assert_eq!(
        ds_write(&k, &mds, a.fileid, &fresh, a.open.stateid).await,
        NfsStat4::NFS4_OK
    );
    // The recalled layout stateid went with the layout.
    let r =
        a.c.call(vec![
            putfh(&a.open.fh),
            layoutget_op(Layoutiomode4::LAYOUTIOMODE4_RW, recalled),
        ])
        .await;
    assert_eq!(last_status(&r), NfsStat4::NFS4ERR_BAD_STATEID, "{r:?}");
}

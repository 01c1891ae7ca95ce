//! Delegations (RFC 8881 sections 10.2 to 10.5) on the in-memory cluster: which OPEN gets which
//! delegation, CB_RECALL on another client's conflicting operation (NFS4ERR_DELAY until
//! DELEGRETURN), revocation of a delegation whose recall is not answered in time (SEQUENCE's
//! SEQ4_STATUS_RECALLABLE_STATE_REVOKED, TEST_STATEID, FREE_STATEID), opens under a delegation
//! (CLAIM_DELEG_CUR_FH), CB_GETATTR for another client's GETATTR, and the operator's counters.
//! The clients are the raw test client with a back channel (`testkit::client::CbClient`);
//! the recall deadlines, lease and grace periods run on a [`ManualClock`] the tests move on.

use std::sync::Arc;
use std::time::Duration;

use mds::{Config, Mds};
use nfs_proto::nfs4::attr::*;
use nfs_proto::nfs4::*;

use testkit::cluster::{Cluster, StoreKind};
use testkit::prelude::*;

const RW: u32 = OPEN4_SHARE_ACCESS_BOTH;
const RD: u32 = OPEN4_SHARE_ACCESS_READ;

/// An MDS without data servers (it keeps file data itself), no grace period, its
/// configuration changed by `f`, on a clock that stands still unless the test moves it.
async fn server(lease: u32, f: impl FnOnce(&mut Config) + 'static) -> (Cluster, Arc<Mds>) {
    server_on(lease, f, ManualClock::new().shared()).await
}

/// [`server`] on `clock` (tests of lease-long waits move a [`ManualClock`] on).
async fn server_on(
    lease: u32,
    f: impl FnOnce(&mut Config) + 'static,
    clock: nfs_server::SharedClock,
) -> (Cluster, Arc<Mds>) {
    let k = Cluster::builder()
        .data_servers(0)
        .lease(lease)
        .clock(clock)
        .configure(f)
        .start()
        .await;
    let mds = k.mds().clone();
    (k, mds)
}

/// A client with a back channel answered by its own `CbClient`.
async fn cb_client(k: &Cluster, owner: &str) -> (Client, Arc<CbClient>) {
    let cb = Arc::new(CbClient::default());
    let c = k.client_with_back_channel(owner, cb.clone()).await;
    (c, cb)
}

/// OPEN of `name` in the root (created if missing) with `access` and the want bits in it.
async fn open(c: &mut Client, name: &str, access: u32) -> Compound4Res {
    c.call(vec![
        NfsArgop4::PutRootFh,
        open_op(by_name(name), unchecked(0o644), access, 0, "o"),
        NfsArgop4::GetFh,
    ])
    .await
}

/// OPEN for reading and writing, without create, of the file `fh` with `claim`, as the
/// open-owner `who`.
async fn open_fh(c: &mut Client, fh: &NfsFh4, claim: OpenClaim4, who: &str) -> Compound4Res {
    c.call(vec![
        putfh(fh),
        open_op(claim, Openflag4::NoCreate, RW, 0, who),
    ])
    .await
}

fn delegation(r: &Compound4Res) -> OpenDelegation4 {
    open_res(r).delegation.clone()
}

fn deleg_stateid(d: &OpenDelegation4) -> Stateid4 {
    match d {
        OpenDelegation4::Read(r) => r.stateid,
        OpenDelegation4::Write(w) => w.stateid,
        other => panic!("no delegation: {other:?}"),
    }
}

fn status_flags(r: &Compound4Res) -> u32 {
    match &r.resarray[0] {
        NfsResop4::Sequence(SequenceRes::Ok(ok)) => ok.sr_status_flags,
        other => panic!("no SEQUENCE result: {other:?}"),
    }
}

fn counter(mds: &Mds, name: &str) -> u64 {
    let page = mds::net::metrics::render(mds, mds.core().now());
    page.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
        .unwrap_or_else(|| panic!("{name} not on the page:\n{page}"))
}

async fn delegreturn(c: &mut Client, fh: &NfsFh4, stateid: Stateid4) -> NfsStat4 {
    let r = c
        .call(vec![
            putfh(fh),
            NfsArgop4::DelegReturn(DelegReturnArgs {
                deleg_stateid: stateid,
            }),
        ])
        .await;
    r.status
}

#[tokio::test]
async fn a_lone_writer_gets_a_write_delegation_and_a_reader_of_another_client_recalls_it() {
    let (k, mds) = server(10, |_| {}).await;
    let (mut a, cb_a) = cb_client(&k, "a").await;
    let (mut b, _cb_b) = cb_client(&k, "b").await;
    let r = open(&mut a, "f", RW).await;
    assert_eq!(r.status, NfsStat4::NFS4_OK, "{r:?}");
    let fh = getfh_res(&r);
    let d = delegation(&r);
    assert!(matches!(d, OpenDelegation4::Write(_)), "{d:?}");
    let sid = deleg_stateid(&d);
    // I/O under the delegation stateid is allowed (section 10.2).
    let w = a
        .call(vec![
            putfh(&fh),
            write_op(sid, 0, StableHow4::FILE_SYNC4, "from a"),
        ])
        .await;
    assert_eq!(w.status, NfsStat4::NFS4_OK, "{w:?}");

    // B opens for reading: the MDS recalls A's delegation and B waits.
    let r = open(&mut b, "f", RD).await;
    assert_eq!(r.status, NfsStat4::NFS4ERR_DELAY, "{r:?}");
    let recalls = cb_a.wait_deleg_recalls(1, Duration::from_secs(5)).await;
    assert_eq!(recalls[0].stateid, sid);
    assert_eq!(recalls[0].fh, fh);
    // Still DELAY, and no second CB_RECALL, until A returns it.
    let r = open(&mut b, "f", RD).await;
    assert_eq!(r.status, NfsStat4::NFS4ERR_DELAY, "{r:?}");
    // A turns its local opens into server opens under the delegation while returning it.
    let r = open_fh(&mut a, &fh, OpenClaim4::DelegCurFh(sid), "local-open").await;
    assert_eq!(r.status, NfsStat4::NFS4_OK, "{r:?}");
    assert_eq!(delegation(&r), OpenDelegation4::None);
    assert_eq!(delegreturn(&mut a, &fh, sid).await, NfsStat4::NFS4_OK);
    assert_eq!(
        delegreturn(&mut a, &fh, sid).await,
        NfsStat4::NFS4ERR_BAD_STATEID
    );
    // B gets in; A has it open for writing, so B gets no read delegation.
    let r = open(&mut b, "f", RD).await;
    assert_eq!(r.status, NfsStat4::NFS4_OK, "{r:?}");
    assert_eq!(delegation(&r), OpenDelegation4::None);
    assert_eq!(cb_a.deleg_recalls.lock().unwrap().len(), 1);
    assert_eq!(
        counter(&mds, "pnfs_delegations_granted_total{type=\"write\"}"),
        1
    );
    assert_eq!(counter(&mds, "pnfs_delegations_recalled_total"), 1);
    assert_eq!(counter(&mds, "pnfs_delegations_returned_total"), 1);
    assert_eq!(counter(&mds, "pnfs_delegations_revoked_total"), 0);
}

#[tokio::test]
async fn readers_share_read_delegations_and_a_writer_of_another_client_recalls_them() {
    let (k, mds) = server(10, |_| {}).await;
    let (mut a, cb_a) = cb_client(&k, "a").await;
    let (mut b, cb_b) = cb_client(&k, "b").await;
    let (mut w, _cb_w) = cb_client(&k, "w").await;
    let ra = open(&mut a, "f", RD).await;
    let rb = open(&mut b, "f", RD).await;
    let (da, db) = (delegation(&ra), delegation(&rb));
    assert!(matches!(da, OpenDelegation4::Read(_)), "{da:?}");
    assert!(matches!(db, OpenDelegation4::Read(_)), "{db:?}");
    // A read delegation does not cover writing.
    let fh = getfh_res(&ra);
    let wr = a
        .call(vec![
            putfh(&fh),
            write_op(deleg_stateid(&da), 0, StableHow4::FILE_SYNC4, "x"),
        ])
        .await;
    assert_eq!(wr.status, NfsStat4::NFS4ERR_OPENMODE, "{wr:?}");
    // A third client opens for writing: both are recalled.
    let r = open(&mut w, "f", RW).await;
    assert_eq!(r.status, NfsStat4::NFS4ERR_DELAY, "{r:?}");
    cb_a.wait_deleg_recalls(1, Duration::from_secs(5)).await;
    cb_b.wait_deleg_recalls(1, Duration::from_secs(5)).await;
    // A new reader meanwhile gets no delegation (a recall of the file is under way).
    let ra2 = a
        .call(vec![
            NfsArgop4::PutRootFh,
            open_op(by_name("f"), Openflag4::NoCreate, RD, 0, "o2"),
        ])
        .await;
    assert_eq!(ra2.status, NfsStat4::NFS4_OK, "{ra2:?}");
    assert_eq!(delegation(&ra2), OpenDelegation4::None);
    assert_eq!(
        delegreturn(&mut a, &fh, deleg_stateid(&da)).await,
        NfsStat4::NFS4_OK
    );
    let r = open(&mut w, "f", RW).await;
    assert_eq!(
        r.status,
        NfsStat4::NFS4ERR_DELAY,
        "B still holds one: {r:?}"
    );
    assert_eq!(
        delegreturn(&mut b, &fh, deleg_stateid(&db)).await,
        NfsStat4::NFS4_OK
    );
    let r = open(&mut w, "f", RW).await;
    assert_eq!(r.status, NfsStat4::NFS4_OK, "{r:?}");
    // Others have it open: no write delegation.
    assert_eq!(delegation(&r), OpenDelegation4::None);
    assert_eq!(
        counter(&mds, "pnfs_delegations_granted_total{type=\"read\"}"),
        2
    );
    assert_eq!(counter(&mds, "pnfs_delegations_recalled_total"), 2);
    assert_eq!(counter(&mds, "pnfs_delegations_returned_total"), 2);
}

#[tokio::test]
async fn an_unreturned_delegation_is_revoked_after_a_lease_and_the_holder_is_told_until_it_frees_it(
) {
    let lease = 3;
    let clock = ManualClock::new();
    let (k, mds) = server_on(lease, |_| {}, clock.shared()).await;
    let (mut a, cb_a) = cb_client(&k, "a").await;
    let (mut b, _cb_b) = cb_client(&k, "b").await;
    let r = open(&mut a, "f", RW).await;
    let fh = getfh_res(&r);
    let sid = deleg_stateid(&delegation(&r));
    let t0 = clock.elapsed();
    let r = open(&mut b, "f", RD).await;
    assert_eq!(r.status, NfsStat4::NFS4ERR_DELAY);
    cb_a.wait_deleg_recalls(1, Duration::from_secs(5)).await;
    // A never returns it (but keeps its lease); B retries until the server gives up on A.
    let opened = loop {
        assert!(
            clock.elapsed() - t0 < Duration::from_secs(20),
            "B still waits"
        );
        let ping = a.call(vec![]).await;
        assert_eq!(ping.status, NfsStat4::NFS4_OK);
        let r = open(&mut b, "f", RD).await;
        if r.status == NfsStat4::NFS4_OK {
            break clock.elapsed() - t0;
        }
        assert_eq!(r.status, NfsStat4::NFS4ERR_DELAY, "{r:?}");
        advance(&clock, Duration::from_millis(200)).await;
    };
    assert!(
        opened >= Duration::from_secs(u64::from(lease) - 1),
        "B got in after {opened:?}, before the recall timed out"
    );
    assert_eq!(counter(&mds, "pnfs_delegations_revoked_total"), 1);
    // A is told, and its stateid says why.
    let seq = a.call(vec![]).await;
    assert_ne!(
        status_flags(&seq) & SEQ4_STATUS_RECALLABLE_STATE_REVOKED,
        0,
        "{seq:?}"
    );
    let w = a
        .call(vec![
            putfh(&fh),
            write_op(sid, 0, StableHow4::FILE_SYNC4, "late"),
        ])
        .await;
    assert_eq!(w.status, NfsStat4::NFS4ERR_DELEG_REVOKED, "{w:?}");
    let t = a
        .call(vec![NfsArgop4::TestStateid(TestStateidArgs {
            ts_stateids: vec![sid],
        })])
        .await;
    match &t.resarray[1] {
        NfsResop4::TestStateid(TestStateidRes::Ok(ok)) => {
            assert_eq!(ok.tsr_status_codes, vec![NfsStat4::NFS4ERR_DELEG_REVOKED])
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        delegreturn(&mut a, &fh, sid).await,
        NfsStat4::NFS4ERR_DELEG_REVOKED
    );
    let f = a
        .call(vec![NfsArgop4::FreeStateid(FreeStateidArgs {
            fsa_stateid: sid,
        })])
        .await;
    assert_eq!(f.status, NfsStat4::NFS4_OK, "{f:?}");
    let seq = a.call(vec![]).await;
    assert_eq!(status_flags(&seq) & SEQ4_STATUS_RECALLABLE_STATE_REVOKED, 0);
    assert_eq!(counter(&mds, "pnfs_delegations_returned_total"), 0);
}

#[tokio::test]
async fn a_recall_that_does_not_get_through_is_sent_again_until_the_holder_takes_it() {
    let (k, mds) = server(10, |_| {}).await;
    let (mut a, cb_a) = cb_client(&k, "a").await;
    let (mut b, _cb_b) = cb_client(&k, "b").await;
    let r = open(&mut a, "f", RW).await;
    let fh = getfh_res(&r);
    let sid = deleg_stateid(&delegation(&r));
    // The first CB_RECALL is answered NFS4ERR_BAD_STATEID (as a client does when the recall
    // overtakes the OPEN reply that granted the delegation); the second is lost on the way
    // (the call fails, so the back channel counts as down); the third gets NFS4ERR_DELAY
    // from CB_SEQUENCE twice (Linux draining its session) before the client takes it.
    cb_a.deleg_recall_answers
        .lock()
        .unwrap()
        .push_back(NfsStat4::NFS4ERR_BAD_STATEID);
    let r = open(&mut b, "f", RD).await;
    assert_eq!(r.status, NfsStat4::NFS4ERR_DELAY, "{r:?}");
    cb_a.wait_deleg_recalls(1, Duration::from_secs(5)).await;
    cb_a.refuse_next
        .store(1, std::sync::atomic::Ordering::SeqCst);
    cb_a.sequence_delays
        .store(2, std::sync::atomic::Ordering::SeqCst);
    // A's SEQUENCEs learn that the path is down, and A binds its connection again (as
    // Linux does, BIND_CONN_TO_SESSION); the next recall goes over it.
    let mut rebinds = 0;
    let t0 = std::time::Instant::now();
    let recalls = loop {
        let seen = cb_a.deleg_recalls.lock().unwrap().clone();
        if seen.len() >= 2 {
            break seen;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(30),
            "the recall was not sent again: {seen:?}"
        );
        let ping = a.call(vec![]).await;
        assert_eq!(ping.status, NfsStat4::NFS4_OK);
        if status_flags(&ping) & SEQ4_STATUS_CB_PATH_DOWN != 0 {
            rebinds += 1;
            let bind = NfsArgop4::BindConnToSession(BindConnToSessionArgs {
                bctsa_sessid: a.sessionid,
                bctsa_dir: ChannelDirFromClient4::CDFC4_FORE_OR_BOTH,
                bctsa_use_conn_in_rdma_mode: false,
            });
            let r = compound_on(&a.conn, 0, 1, vec![bind]).await.unwrap();
            assert_eq!(r.status, NfsStat4::NFS4_OK, "{r:?}");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(
        rebinds, 1,
        "the lost recall took the back channel down once"
    );
    assert!(recalls.iter().all(|r| r.stateid == sid), "{recalls:?}");
    assert_eq!(
        cb_a.refuse_next.load(std::sync::atomic::Ordering::SeqCst),
        0
    );
    assert_eq!(
        cb_a.sequence_delays
            .load(std::sync::atomic::Ordering::SeqCst),
        0
    );
    // Taken: no further recall while A returns it.
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(cb_a.deleg_recalls.lock().unwrap().len(), 2);
    assert_eq!(delegreturn(&mut a, &fh, sid).await, NfsStat4::NFS4_OK);
    let r = open(&mut b, "f", RD).await;
    assert_eq!(r.status, NfsStat4::NFS4_OK, "{r:?}");
    assert_eq!(counter(&mds, "pnfs_delegations_recalled_total"), 1);
    assert_eq!(counter(&mds, "pnfs_delegations_revoked_total"), 0);
}

#[tokio::test]
async fn names_and_attributes_of_a_delegated_file_wait_for_its_return_but_not_for_its_holder() {
    let (k, _mds) = server(10, |_| {}).await;
    let (mut a, cb_a) = cb_client(&k, "a").await;
    let (mut b, _cb_b) = cb_client(&k, "b").await;
    let r = open(&mut a, "f", RD).await;
    let fh = getfh_res(&r);
    let sid = deleg_stateid(&delegation(&r));
    // The holder itself changes the mode without a recall.
    let chmod = |mode| {
        vec![
            putfh(&fh),
            NfsArgop4::SetAttr(SetAttrArgs {
                stateid: Stateid4::ANONYMOUS,
                obj_attributes: mode_attrs(mode),
            }),
        ]
    };
    let r = a.call(chmod(0o600)).await;
    assert_eq!(r.status, NfsStat4::NFS4_OK, "{r:?}");
    assert!(cb_a.deleg_recalls.lock().unwrap().is_empty());
    // Another client's SETATTR, LINK and REMOVE wait.
    let r = b.call(chmod(0o644)).await;
    assert_eq!(r.status, NfsStat4::NFS4ERR_DELAY, "{r:?}");
    let link = b
        .call(vec![
            putfh(&fh),
            NfsArgop4::SaveFh,
            NfsArgop4::PutRootFh,
            NfsArgop4::Link(LinkArgs {
                newname: "g".into(),
            }),
        ])
        .await;
    assert_eq!(link.status, NfsStat4::NFS4ERR_DELAY, "{link:?}");
    let rm = b.call(vec![NfsArgop4::PutRootFh, remove_op("f")]).await;
    assert_eq!(rm.status, NfsStat4::NFS4ERR_DELAY, "{rm:?}");
    assert_eq!(
        cb_a.wait_deleg_recalls(1, Duration::from_secs(5))
            .await
            .len(),
        1
    );
    assert_eq!(delegreturn(&mut a, &fh, sid).await, NfsStat4::NFS4_OK);
    let rm = b.call(vec![NfsArgop4::PutRootFh, remove_op("f")]).await;
    assert_eq!(rm.status, NfsStat4::NFS4_OK, "{rm:?}");
}

#[tokio::test]
async fn another_clients_getattr_shows_the_size_the_write_delegation_holder_reports() {
    let (k, _mds) = server(10, |_| {}).await;
    let (mut a, cb_a) = cb_client(&k, "a").await;
    let (mut b, _cb_b) = cb_client(&k, "b").await;
    let r = open(&mut a, "f", RW).await;
    let fh = getfh_res(&r);
    assert!(matches!(delegation(&r), OpenDelegation4::Write(_)));
    let getattr = || {
        let mut want = Bitmap4::new();
        want.set(FATTR4_SIZE);
        want.set(FATTR4_CHANGE);
        vec![
            putfh(&fh),
            NfsArgop4::GetAttr(GetAttrArgs { attr_request: want }),
        ]
    };
    let attrs = |r: &Compound4Res| match &r.resarray[2] {
        NfsResop4::GetAttr(GetAttrRes::Ok(ok)) => {
            FileAttrs::from_fattr(&ok.obj_attributes).unwrap()
        }
        other => panic!("{other:?}"),
    };
    let before = attrs(&a.call(getattr()).await);
    assert_eq!(before.size, Some(0));
    // A has written 5000 bytes it has not sent: its change moved on.
    *cb_a.getattr_answer.lock().unwrap() = Some((before.change.unwrap() + 1, 5000));
    let seen = attrs(&b.call(getattr()).await);
    assert_eq!(seen.size, Some(5000));
    assert!(seen.change.unwrap() > before.change.unwrap());
    assert_eq!(cb_a.getattrs.lock().unwrap().len(), 1);
    // The holder's own GETATTR asks nobody.
    a.call(getattr()).await;
    assert_eq!(cb_a.getattrs.lock().unwrap().len(), 1);
    // A holder that cannot answer has its delegation recalled, and the GETATTR waits.
    *cb_a.getattr_answer.lock().unwrap() = None;
    let r = b.call(getattr()).await;
    assert_eq!(r.status, NfsStat4::NFS4ERR_DELAY, "{r:?}");
    cb_a.wait_deleg_recalls(1, Duration::from_secs(5)).await;
}

#[tokio::test]
async fn no_delegation_without_a_back_channel_when_unwanted_or_when_the_export_turns_them_off() {
    let (k, _mds) = server(10, |_| {}).await;
    // The plain test client binds no back channel.
    let mut plain = k.client("plain").await;
    let r = open(&mut plain, "f", RW).await;
    assert_eq!(delegation(&r), OpenDelegation4::None);
    let (mut a, _cb) = cb_client(&k, "a").await;
    let r = open(&mut a, "g", RW | OPEN4_SHARE_ACCESS_WANT_NO_DELEG).await;
    assert_eq!(
        delegation(&r),
        OpenDelegation4::NoneExt(OpenNoneDelegation4::Other(
            WhyNoDelegation4::WND4_NOT_WANTED
        ))
    );
    // Asking for a write delegation of a file another client has open is contention.
    let r = open(&mut a, "f", RW | OPEN4_SHARE_ACCESS_WANT_WRITE_DELEG).await;
    assert_eq!(
        delegation(&r),
        OpenDelegation4::NoneExt(OpenNoneDelegation4::Contention {
            ond_server_will_push_deleg: false
        })
    );

    let (k2, _mds2) = server(10, |c| c.exports[0].delegations = Some(false)).await;
    let (mut c, _cb) = cb_client(&k2, "c").await;
    let r = open(&mut c, "f", RW).await;
    assert_eq!(delegation(&r), OpenDelegation4::None);
}

#[tokio::test]
async fn an_open_under_someone_elses_or_a_returned_delegation_is_refused() {
    let (k, _mds) = server(10, |_| {}).await;
    let (mut a, _cb_a) = cb_client(&k, "a").await;
    let (mut b, _cb_b) = cb_client(&k, "b").await;
    let r = open(&mut a, "f", RD).await;
    let fh = getfh_res(&r);
    let sid = deleg_stateid(&delegation(&r));
    let claim = |c: OpenClaim4| vec![putfh(&fh), open_op(c, Openflag4::NoCreate, RD, 0, "x")];
    let r = b.call(claim(OpenClaim4::DelegCurFh(sid))).await;
    assert_eq!(r.status, NfsStat4::NFS4ERR_BAD_STATEID, "{r:?}");
    assert_eq!(delegreturn(&mut a, &fh, sid).await, NfsStat4::NFS4_OK);
    let r = a.call(claim(OpenClaim4::DelegCurFh(sid))).await;
    assert_eq!(r.status, NfsStat4::NFS4ERR_BAD_STATEID, "{r:?}");
}

fn want(fh: &NfsFh4, wda_want: u32, wda_claim: DelegClaim4) -> Vec<NfsArgop4> {
    vec![
        putfh(fh),
        NfsArgop4::WantDelegation(WantDelegationArgs {
            wda_want,
            wda_claim,
        }),
    ]
}

fn want_res(r: &Compound4Res) -> Result<OpenDelegation4, NfsStat4> {
    match r.resarray.last() {
        Some(NfsResop4::WantDelegation(WantDelegationRes::Ok(d))) => Ok(d.clone()),
        Some(NfsResop4::WantDelegation(WantDelegationRes::Err(s))) => Err(*s),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn want_delegation_grants_by_the_open_policy_without_an_open() {
    let (k, _mds) = server(10, |_| {}).await;
    let (mut a, _cb_a) = cb_client(&k, "a").await;
    let (mut b, cb_b) = cb_client(&k, "b").await;
    let r = open(&mut a, "f", RW).await;
    let fh = getfh_res(&r);
    let sid = deleg_stateid(&delegation(&r));
    let close = a
        .call(vec![
            putfh(&fh),
            NfsArgop4::Close(CloseArgs {
                seqid: 0,
                open_stateid: open_res(&r).stateid,
            }),
        ])
        .await;
    assert_eq!(close.status, NfsStat4::NFS4_OK);
    assert_eq!(delegreturn(&mut a, &fh, sid).await, NfsStat4::NFS4_OK);
    // B has nothing open and asks for any delegation: the file is free, so WRITE.
    let ops = want(&fh, OPEN4_SHARE_ACCESS_WANT_ANY_DELEG, DelegClaim4::Fh);
    let d = want_res(&b.call(ops).await).unwrap();
    assert!(matches!(d, OpenDelegation4::Write(_)), "{d:?}");
    // A asks for a read delegation: WANT_DELEGATION recalls nothing and never waits; A is
    // told of the contention.
    let ops = want(&fh, OPEN4_SHARE_ACCESS_WANT_READ_DELEG, DelegClaim4::Fh);
    assert_eq!(
        want_res(&a.call(ops).await).unwrap(),
        OpenDelegation4::NoneExt(OpenNoneDelegation4::Contention {
            ond_server_will_push_deleg: false
        })
    );
    assert!(cb_b.deleg_recalls.lock().unwrap().is_empty());
    // No preference, or no delegation, is not a want.
    let ops = want(&fh, OPEN4_SHARE_ACCESS_WANT_NO_PREFERENCE, DelegClaim4::Fh);
    assert_eq!(want_res(&a.call(ops).await), Err(NfsStat4::NFS4ERR_INVAL));
    // A's previous instance held no delegation of it.
    let ops = want(
        &fh,
        OPEN4_SHARE_ACCESS_WANT_READ_DELEG,
        DelegClaim4::DelegPrevFh,
    );
    assert_eq!(
        want_res(&a.call(ops).await),
        Err(NfsStat4::NFS4ERR_RECLAIM_BAD)
    );
    // Out of the grace period a reclaim is refused.
    let ops = want(
        &fh,
        OPEN4_SHARE_ACCESS_WANT_READ_DELEG,
        DelegClaim4::Previous(OpenDelegationType4::OPEN_DELEGATE_READ),
    );
    assert_eq!(
        want_res(&a.call(ops).await),
        Err(NfsStat4::NFS4ERR_NO_GRACE)
    );
}

/// A session with a back channel answered by `cb`, without RECLAIM_COMPLETE (a client that
/// reclaims after a server restart).
async fn reclaiming_client(k: &Cluster, owner: &str, cb: Arc<CbClient>) -> Client {
    k.client_answering(&Setup::new(owner).reclaiming().back_channel(), cb)
        .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delegation_is_reclaimed_after_a_restart_and_recalled_as_before() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new();
    let mut k = Cluster::builder()
        .data_servers(0)
        .lease(10)
        .store(StoreKind::Redb(dir.path().to_path_buf()))
        .clock(clock.shared())
        .configure(|c: &mut Config| c.grace_time = 5)
        .start()
        .await;
    // Boot 1: A gets a write delegation. The MDS then stops with its connections, as at
    // kill -9, and starts again over the same metadata.
    let (fh, fh_g) = {
        let cb = Arc::new(CbClient::default());
        let mut a = reclaiming_client(&k, "a", cb).await;
        let rc = a
            .call(vec![NfsArgop4::ReclaimComplete(ReclaimCompleteArgs {
                rca_one_fs: false,
            })])
            .await;
        assert_eq!(rc.status, NfsStat4::NFS4_OK);
        let r = open(&mut a, "f", RW).await;
        assert!(matches!(delegation(&r), OpenDelegation4::Write(_)));
        let g = open(&mut a, "g", RW).await;
        (getfh_res(&r), getfh_res(&g))
    };
    k.restart_mds().await;
    // Boot 2: A reclaims the open with its delegation type, then B conflicts with it.
    {
        let mds = k.mds().clone();
        let cb_a = Arc::new(CbClient::default());
        let mut a = reclaiming_client(&k, "a", cb_a.clone()).await;
        let r = open_fh(
            &mut a,
            &fh,
            OpenClaim4::Previous(OpenDelegationType4::OPEN_DELEGATE_WRITE),
            "o",
        )
        .await;
        assert_eq!(r.status, NfsStat4::NFS4_OK, "{r:?}");
        let d = delegation(&r);
        assert!(matches!(d, OpenDelegation4::Write(_)), "{d:?}");
        // A reclaim that names no delegation gets none, though the file is free: no new
        // delegation in the grace period (other clients may still reclaim state of it).
        let r = open_fh(
            &mut a,
            &fh_g,
            OpenClaim4::Previous(OpenDelegationType4::OPEN_DELEGATE_NONE),
            "o",
        )
        .await;
        assert_eq!(r.status, NfsStat4::NFS4_OK, "{r:?}");
        assert_eq!(delegation(&r), OpenDelegation4::None);
        let rc = a
            .call(vec![NfsArgop4::ReclaimComplete(ReclaimCompleteArgs {
                rca_one_fs: false,
            })])
            .await;
        assert_eq!(rc.status, NfsStat4::NFS4_OK);
        assert_eq!(
            counter(&mds, "pnfs_delegations_granted_total{type=\"write\"}"),
            1
        );
        // B waits for the grace period, then for A's reclaimed delegation.
        let (mut b, _cb_b) = cb_client(&k, "b").await;
        let t0 = clock.elapsed();
        let status = loop {
            let r = open(&mut b, "f", RD).await;
            if r.status != NfsStat4::NFS4ERR_GRACE || clock.elapsed() - t0 > Duration::from_secs(15)
            {
                break r.status;
            }
            advance(&clock, Duration::from_millis(200)).await;
        };
        assert_eq!(status, NfsStat4::NFS4ERR_DELAY);
        let recalls = cb_a.wait_deleg_recalls(1, Duration::from_secs(5)).await;
        assert_eq!(recalls[0].stateid, deleg_stateid(&d));
    }
}

#[tokio::test]
async fn a_write_delegation_holder_keeps_its_layout_after_close_until_it_returns_the_delegation() {
    let k = Cluster::builder()
        .data_servers(2)
        .lease(10)
        .clock(ManualClock::new().shared())
        .configure(|c: &mut Config| c.cluster.layouts = true)
        .start()
        .await;
    let cb = Arc::new(CbClient::default());
    let mut a = k.client_with_back_channel("a", cb).await;
    let r = open_and_layoutget(&mut a, "f", Layoutiomode4::LAYOUTIOMODE4_RW).await;
    assert_eq!(r.status, NfsStat4::NFS4_OK, "{r:?}");
    let fh = getfh_res(&r);
    let sid = deleg_stateid(&delegation(&r));
    let (ok, _) = granted(&r);
    let close = a
        .call(vec![
            putfh(&fh),
            NfsArgop4::Close(CloseArgs {
                seqid: 0,
                open_stateid: open_res(&r).stateid,
            }),
        ])
        .await;
    assert_eq!(close.status, NfsStat4::NFS4_OK);
    // The Linux client goes on writing through the layout under its delegation and commits
    // the size with LAYOUTCOMMIT after the CLOSE.
    let commit = a
        .call(vec![
            putfh(&fh),
            layoutcommit_op(ok.logr_stateid, Some(99), None),
        ])
        .await;
    assert_eq!(commit.status, NfsStat4::NFS4_OK, "{commit:?}");
    assert_eq!(delegreturn(&mut a, &fh, sid).await, NfsStat4::NFS4_OK);
    // With the delegation and the last open gone, the return-on-close layout is gone too.
    let commit = a
        .call(vec![
            putfh(&fh),
            layoutcommit_op(ok.logr_stateid, Some(99), None),
        ])
        .await;
    assert_eq!(commit.status, NfsStat4::NFS4ERR_BAD_STATEID, "{commit:?}");
}

/// OPEN of the current file (`fh`, or by `name` in the root) claiming the delegation the
/// client's previous instance held.
async fn open_prev(c: &mut Client, file: Result<&NfsFh4, &str>) -> Compound4Res {
    match file {
        Ok(fh) => open_fh(c, fh, OpenClaim4::DelegPrevFh, "p").await,
        Err(name) => {
            let claim = OpenClaim4::DelegatePrev(nfs_proto::xdr::Utf8String::from(name));
            c.call(vec![
                NfsArgop4::PutRootFh,
                open_op(claim, Openflag4::NoCreate, RW, 0, "p"),
            ])
            .await
        }
    }
}

#[tokio::test]
async fn a_restarted_client_reclaims_its_delegations_with_the_prev_claims_and_the_rest_go() {
    let lease = 3;
    let clock = ManualClock::new();
    let (k, mds) = server_on(lease, |_| {}, clock.shared()).await;
    let (mut a, cb_a) = cb_client(&k, "a").await;
    let (mut b, _cb_b) = cb_client(&k, "b").await;
    let mut fhs = Vec::new();
    let mut old = Vec::new();
    for name in ["f", "g", "h", "k"] {
        let r = open(&mut a, name, RW).await;
        let d = delegation(&r);
        assert!(matches!(d, OpenDelegation4::Write(_)), "{name}: {d:?}");
        fhs.push(getfh_res(&r));
        old.push(deleg_stateid(&d));
    }
    let [f, g, h, kf] = &fhs[..] else {
        unreachable!()
    };

    // A restarts (same owner, new verifier): its opens go, its delegations wait for it, and
    // another client's conflicting open waits for them without any recall being sent.
    let cb_a2 = Arc::new(CbClient::default());
    let mut a2 = k
        .client_answering(
            &Setup::new("a").verifier([8; 8]).back_channel(),
            cb_a2.clone(),
        )
        .await;
    assert_ne!(a2.clientid, a.clientid);
    let r = open(&mut b, "f", RD).await;
    assert_eq!(r.status, NfsStat4::NFS4ERR_DELAY, "{r:?}");
    // A recall is ordered (and counted) before the DELAY reply: none was.
    assert_eq!(counter(&mds, "pnfs_delegations_recalled_total"), 0);
    assert!(cb_a.deleg_recalls.lock().unwrap().is_empty());
    assert!(cb_a2.deleg_recalls.lock().unwrap().is_empty());

    // CLAIM_DELEG_PREV_FH, CLAIM_DELEGATE_PREV and WANT_DELEGATION's CLAIM_DELEG_PREV_FH
    // each get the delegation back under a fresh stateid; a second claim is no reclaim.
    let r = open_prev(&mut a2, Ok(f)).await;
    assert_eq!(r.status, NfsStat4::NFS4_OK, "{r:?}");
    let sid_f = deleg_stateid(&delegation(&r));
    assert!(matches!(delegation(&r), OpenDelegation4::Write(_)));
    assert_ne!(sid_f.other, old[0].other);
    let r = open_prev(&mut a2, Err("g")).await;
    assert_eq!(r.status, NfsStat4::NFS4_OK, "{r:?}");
    assert!(matches!(delegation(&r), OpenDelegation4::Write(_)));
    let ops = want(
        h,
        OPEN4_SHARE_ACCESS_WANT_WRITE_DELEG,
        DelegClaim4::DelegPrevFh,
    );
    let d = want_res(&a2.call(ops).await).unwrap();
    assert!(matches!(d, OpenDelegation4::Write(_)), "{d:?}");
    let r = open_prev(&mut a2, Ok(f)).await;
    assert_eq!(r.status, NfsStat4::NFS4ERR_RECLAIM_BAD, "{r:?}");
    // The previous instance's stateid is dead.
    let r = open_fh(&mut a2, f, OpenClaim4::DelegCurFh(old[0]), "p").await;
    assert_eq!(r.status, NfsStat4::NFS4ERR_BAD_STATEID, "{r:?}");

    // Reclaimed delegations are recalled as any other.
    let r = open(&mut b, "f", RD).await;
    assert_eq!(r.status, NfsStat4::NFS4ERR_DELAY, "{r:?}");
    let recalls = cb_a2.wait_deleg_recalls(1, Duration::from_secs(5)).await;
    assert_eq!(recalls[0].stateid, sid_f);
    assert_eq!(delegreturn(&mut a2, f, sid_f).await, NfsStat4::NFS4_OK);
    let r = open(&mut b, "f", RD).await;
    assert_eq!(r.status, NfsStat4::NFS4_OK, "{r:?}");

    // DELEGPURGE forgets what was not reclaimed: B opens k at once.
    let r = open(&mut b, "k", RD).await;
    assert_eq!(r.status, NfsStat4::NFS4ERR_DELAY, "{r:?}");
    let r = a2
        .call(vec![NfsArgop4::DelegPurge(DelegPurgeArgs { clientid: 0 })])
        .await;
    assert_eq!(r.status, NfsStat4::NFS4_OK, "{r:?}");
    let r = open(&mut b, "k", RD).await;
    assert_eq!(r.status, NfsStat4::NFS4_OK, "{r:?}");
    let _ = kf;

    // A restarts again and reclaims nothing: after about a lease its delegations are
    // forgotten (not revoked: its new instance never knew them) and B proceeds.
    let cb_a3 = Arc::new(CbClient::default());
    let _a3 = k
        .client_answering(&Setup::new("a").verifier([9; 8]).back_channel(), cb_a3)
        .await;
    let t0 = clock.elapsed();
    let status = loop {
        let r = open(&mut b, "h", RD).await;
        if r.status != NfsStat4::NFS4ERR_DELAY || clock.elapsed() - t0 > Duration::from_secs(10) {
            break r.status;
        }
        advance(&clock, Duration::from_millis(200)).await;
    };
    assert_eq!(status, NfsStat4::NFS4_OK);
    let waited = clock.elapsed() - t0;
    assert!(
        waited >= Duration::from_secs(u64::from(lease)) - Duration::from_millis(500),
        "kept at least a lease: {waited:?}"
    );
    assert_eq!(counter(&mds, "pnfs_delegations_revoked_total"), 0);
    let _ = g;
}

//! The back channel over the in-memory cluster's connections (RFC 8881 sections 2.10.3.1 and 20.9): the server probes
//! a bound back channel with CB_NULL, sends CB_COMPOUNDs that start with CB_SEQUENCE on its
//! back channel slots, and reports SEQ4_STATUS_CB_PATH_DOWN when callbacks fail.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use nfs_proto::nfs4::*;
use testkit::cluster::Cluster;
use testkit::prelude::*;

async fn status_flags(c: &mut Client) -> u32 {
    let r = c.call(vec![NfsArgop4::PutRootFh]).await;
    match &r.resarray[0] {
        NfsResop4::Sequence(SequenceRes::Ok(ok)) => ok.sr_status_flags,
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn a_bound_back_channel_is_probed_and_carries_cb_sequence_on_its_slots() {
    let s = Cluster::mds_alone().await;
    let cb = Arc::new(CbClient::default());
    let mut c = s.client_with_back_channel("cb-ok", cb.clone()).await;
    s.until("the CB_NULL probe", || cb.nulls.load(Ordering::SeqCst) == 1)
        .await;
    assert_eq!(status_flags(&mut c).await & SEQ4_STATUS_CB_PATH_DOWN, 0);

    for _ in 0..3 {
        let r = mds::callback::cb_compound(s.mds().core(), &c.sessionid, vec![])
            .await
            .expect("CB_COMPOUND answered");
        assert_eq!(r.status, NfsStat4::NFS4_OK);
    }
    // One slot in turn (the callbacks were sequential): sequence ids 1, 2, 3.
    assert_eq!(*cb.sequences.lock().unwrap(), [(0, 1), (0, 2), (0, 3)]);
    assert_eq!(
        *cb.compounds.lock().unwrap(),
        vec![vec![NfsCbOpnum4::OP_CB_SEQUENCE]; 3]
    );
    assert_eq!(
        status_flags(&mut c).await & (SEQ4_STATUS_CB_PATH_DOWN | SEQ4_STATUS_CB_PATH_DOWN_SESSION),
        0
    );
}

#[tokio::test]
async fn a_back_channel_that_refuses_callbacks_is_reported_down() {
    let s = Cluster::mds_alone().await;
    let cb = Arc::new(CbClient::refusing());
    let mut c = s.client_with_back_channel("cb-refuses", cb).await;
    // The CB_NULL probe fails: SEQUENCE reports the path down (as soon as the probe's
    // answer came back, which takes a few turns of the connections' tasks).
    let mut flags = 0;
    for _ in 0..200 {
        flags = status_flags(&mut c).await;
        if flags & SEQ4_STATUS_CB_PATH_DOWN != 0 {
            break;
        }
        tokio::task::yield_now().await;
    }
    assert_ne!(flags & SEQ4_STATUS_CB_PATH_DOWN, 0, "flags {flags:#x}");
    let e = mds::callback::cb_compound(s.mds().core(), &c.sessionid, vec![]).await;
    assert!(e.is_err(), "{e:?}");
}

#[tokio::test]
async fn a_session_without_a_back_channel_has_no_callbacks() {
    let s = Cluster::mds_alone().await;
    let c = s.client("no-cb").await;
    let e = mds::callback::cb_compound(s.mds().core(), &c.sessionid, vec![]).await;
    assert!(
        matches!(e, Err(mds::callback::CallbackError::NoBackChannel)),
        "{e:?}"
    );
}

/// A CB_LAYOUTRECALL of one file (the arguments do not matter to this test client).
fn layout_recall(seqid: u32) -> NfsCbArgop4 {
    NfsCbArgop4::LayoutRecall(CbLayoutRecallArgs {
        clora_type: Layouttype4::LAYOUT4_NFSV4_1_FILES,
        clora_iomode: Layoutiomode4::LAYOUTIOMODE4_ANY,
        clora_changed: true,
        clora_recall: Layoutrecall4::File(LayoutrecallFile4 {
            lor_fh: NfsFh4(bytes::Bytes::from_static(b"fh")),
            lor_offset: 0,
            lor_length: u64::MAX,
            lor_stateid: Stateid4 {
                seqid,
                other: [3; 12],
            },
        }),
    })
}

/// The stateid sequence ids of the CB_LAYOUTRECALLs `cb` got (which of [`layout_recall`]'s
/// it ran, in order).
fn recalled_seqids(cb: &CbClient) -> Vec<u32> {
    cb.recalled()
        .iter()
        .map(|a| match &a.clora_recall {
            Layoutrecall4::File(f) => f.lor_stateid.seqid,
            other => panic!("{other:?}"),
        })
        .collect()
}

#[tokio::test]
async fn the_operations_after_cb_sequence_reach_the_client_and_their_results_come_back() {
    let s = Cluster::mds_alone().await;
    let cb = Arc::new(CbClient::answering(RecallAnswer::Status(
        NfsStat4::NFS4ERR_NOMATCHING_LAYOUT,
    )));
    let c = s.client_with_back_channel("cb-recall", cb.clone()).await;
    let r = mds::callback::cb_compound(s.mds().core(), &c.sessionid, vec![layout_recall(2)])
        .await
        .expect("CB_COMPOUND answered");
    assert_eq!(r.status, NfsStat4::NFS4ERR_NOMATCHING_LAYOUT);
    assert_eq!(
        r.resarray[1],
        NfsCbResop4::LayoutRecall(CbLayoutRecallRes {
            status: NfsStat4::NFS4ERR_NOMATCHING_LAYOUT
        })
    );
    // The CB_COMPOUND stops at the failed operation.
    cb.set_recall_answer(RecallAnswer::Status(NfsStat4::NFS4ERR_DELAY));
    let r = mds::callback::cb_compound(
        s.mds().core(),
        &c.sessionid,
        vec![layout_recall(3), layout_recall(4)],
    )
    .await
    .expect("CB_COMPOUND answered");
    assert_eq!(r.status, NfsStat4::NFS4ERR_DELAY);
    assert_eq!(r.resarray.len(), 2, "{r:?}");
    let seqids = recalled_seqids(&cb);
    assert_eq!(seqids, [2, 3]);
    assert_eq!(
        *cb.compounds.lock().unwrap(),
        [
            vec![NfsCbOpnum4::OP_CB_SEQUENCE, NfsCbOpnum4::OP_CB_LAYOUTRECALL],
            vec![
                NfsCbOpnum4::OP_CB_SEQUENCE,
                NfsCbOpnum4::OP_CB_LAYOUTRECALL,
                NfsCbOpnum4::OP_CB_LAYOUTRECALL
            ],
        ]
    );
}

#[tokio::test]
async fn a_cb_sequence_answered_delay_is_sent_again_and_leaves_the_slot_free() {
    let s = Cluster::mds_alone().await;
    let cb = Arc::new(CbClient::default());
    let c = s.client_with_back_channel("cb-delay", cb.clone()).await;
    // Linux answers NFS4ERR_DELAY while it drains its session or its slot is busy.
    cb.sequence_delays.store(2, Ordering::SeqCst);
    let r = mds::callback::cb_compound(s.mds().core(), &c.sessionid, vec![layout_recall(2)])
        .await
        .expect("CB_COMPOUND answered once the client takes it");
    assert_eq!(r.status, NfsStat4::NFS4_OK);
    // The failed CB_SEQUENCEs left the slot as it was (RFC 8881 section 20.9.3); and the
    // session still has its one slot for the next callback.
    let r = mds::callback::cb_compound(s.mds().core(), &c.sessionid, vec![layout_recall(3)])
        .await
        .expect("the next callback gets the slot");
    assert_eq!(r.status, NfsStat4::NFS4_OK);
    assert_eq!(
        *cb.sequences.lock().unwrap(),
        [(0, 1), (0, 1), (0, 1), (0, 2)]
    );
    assert_eq!(cb.recalled().len(), 2);
}

#[tokio::test]
async fn a_callback_that_failed_on_the_way_leaves_the_slot_where_the_client_expects_it() {
    let s = Cluster::mds_alone().await;
    let cb = Arc::new(CbClient::default());
    let c = s.client_with_back_channel("cb-lost", cb.clone()).await;
    // Lost before the client saw it: the next callback must bring the sequence id the
    // client expects (moving on would be NFS4ERR_SEQ_MISORDERED for ever).
    cb.refuse_next.store(1, Ordering::SeqCst);
    let e = mds::callback::cb_compound(s.mds().core(), &c.sessionid, vec![layout_recall(2)]).await;
    assert!(
        matches!(e, Err(mds::callback::CallbackError::Rpc(_))),
        "{e:?}"
    );
    let r = mds::callback::cb_compound(s.mds().core(), &c.sessionid, vec![layout_recall(3)])
        .await
        .expect("the next callback is in sequence");
    assert_eq!(r.status, NfsStat4::NFS4_OK);
    assert_eq!(*cb.sequences.lock().unwrap(), [(0, 1)]);

    // Failed after the client saw it (its reply lost): the same sequence id is a replay the
    // client has no reply for (NFS4ERR_RETRY_UNCACHED_REP); the slot moves on and the
    // callback goes again.
    cb.set_recall_answer(RecallAnswer::Refuse);
    let e = mds::callback::cb_compound(s.mds().core(), &c.sessionid, vec![layout_recall(4)]).await;
    assert!(
        matches!(e, Err(mds::callback::CallbackError::Rpc(_))),
        "{e:?}"
    );
    cb.set_recall_answer(RecallAnswer::Status(NfsStat4::NFS4_OK));
    let r = mds::callback::cb_compound(s.mds().core(), &c.sessionid, vec![layout_recall(5)])
        .await
        .expect("answered after the replay");
    assert_eq!(r.status, NfsStat4::NFS4_OK);
    assert_eq!(
        *cb.sequences.lock().unwrap(),
        [(0, 1), (0, 2), (0, 2), (0, 3)]
    );
    let seqids = recalled_seqids(&cb);
    // The replay ran nothing; the layout recall of 5 was run once, after it.
    assert_eq!(seqids, [3, 4, 5]);
}

//! The back channel over real sockets (RFC 8881 sections 2.10.3.1 and 20.9): the server probes
//! a bound back channel with CB_NULL, sends CB_COMPOUNDs that start with CB_SEQUENCE on its
//! back channel slots, and reports SEQ4_STATUS_CB_PATH_DOWN when callbacks fail.

mod support;

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use nfs_proto::nfs4::*;
use nfs_proto::rpc::AcceptStat;
use nfs_proto::transport::{
    self, CallHandler, Conn, ConnLimits, HandlerFuture, IncomingCall, Reply,
};
use nfs_proto::xdr;
use support::*;

/// The client side of the back channel: answers CB_NULL and CB_COMPOUND (CB_SEQUENCE only),
/// recording what it saw; or refuses everything (a client whose callback service is gone).
#[derive(Default)]
struct CbClient {
    refuse: bool,
    nulls: AtomicU32,
    sequences: Mutex<Vec<(u32, u32)>>,
}

impl CallHandler for CbClient {
    fn handle(self: Arc<Self>, _conn: Conn, call: IncomingCall) -> HandlerFuture {
        Box::pin(async move {
            if self.refuse || call.prog != 0x4000_0000 || call.vers != 1 {
                return Reply::Accepted(AcceptStat::ProgUnavail);
            }
            match call.proc_ {
                CB_NULL => {
                    self.nulls.fetch_add(1, Ordering::SeqCst);
                    Reply::Success(Vec::new())
                }
                CB_COMPOUND => {
                    let Ok(args) = xdr::from_bytes::<CbCompoundArgs>(call.args) else {
                        return Reply::Accepted(AcceptStat::GarbageArgs);
                    };
                    let Some(NfsCbArgop4::Sequence(s)) = args.argarray.first() else {
                        return Reply::Accepted(AcceptStat::GarbageArgs);
                    };
                    self.sequences
                        .lock()
                        .unwrap()
                        .push((s.csa_slotid, s.csa_sequenceid));
                    let res = CbCompoundRes {
                        status: NfsStat4::NFS4_OK,
                        tag: args.tag,
                        resarray: vec![NfsCbResop4::Sequence(CbSequenceRes::Ok(CbSequenceResOk {
                            csr_sessionid: s.csa_sessionid,
                            csr_sequenceid: s.csa_sequenceid,
                            csr_slotid: s.csa_slotid,
                            csr_highest_slotid: 0,
                            csr_target_highest_slotid: 0,
                        }))],
                    };
                    Reply::Success(vec![xdr::to_bytes(&res)])
                }
                _ => Reply::Accepted(AcceptStat::ProcUnavail),
            }
        })
    }
}

/// A session whose connection is also its back channel, served by `cb`.
async fn client_with_back_channel(
    addr: std::net::SocketAddr,
    owner: &str,
    cb: Arc<CbClient>,
) -> Client {
    let sock = tokio::net::TcpStream::connect(addr).await.unwrap();
    let local = sock.local_addr().unwrap();
    let (conn, run) = transport::start(sock, 0, addr, local, cb, ConnLimits::default());
    tokio::spawn(run);
    Client::setup(conn, owner, channel(), CREATE_SESSION4_FLAG_CONN_BACK_CHAN).await
}

async fn status_flags(c: &mut Client) -> u32 {
    let r = c.call(vec![NfsArgop4::PutRootFh]).await;
    match &r.resarray[0] {
        NfsResop4::Sequence(SequenceRes::Ok(ok)) => ok.sr_status_flags,
        other => panic!("{other:?}"),
    }
}

async fn eventually(mut f: impl FnMut() -> bool) {
    for _ in 0..200 {
        if f() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("condition not reached in 5 s");
}

#[tokio::test]
async fn a_bound_back_channel_is_probed_and_carries_cb_sequence_on_its_slots() {
    let s = server().await;
    let cb = Arc::new(CbClient::default());
    let mut c = client_with_back_channel(s.addr, "cb-ok", cb.clone()).await;
    eventually(|| cb.nulls.load(Ordering::SeqCst) == 1).await;
    assert_eq!(status_flags(&mut c).await & SEQ4_STATUS_CB_PATH_DOWN, 0);

    for _ in 0..3 {
        let r = mds::callback::cb_compound(&s.mds.core, &c.sessionid, vec![])
            .await
            .expect("CB_COMPOUND answered");
        assert_eq!(r.status, NfsStat4::NFS4_OK);
    }
    // One slot in turn (the callbacks were sequential): sequence ids 1, 2, 3.
    assert_eq!(*cb.sequences.lock().unwrap(), [(0, 1), (0, 2), (0, 3)]);
    assert_eq!(
        status_flags(&mut c).await & (SEQ4_STATUS_CB_PATH_DOWN | SEQ4_STATUS_CB_PATH_DOWN_SESSION),
        0
    );
}

#[tokio::test]
async fn a_back_channel_that_refuses_callbacks_is_reported_down() {
    let s = server().await;
    let cb = Arc::new(CbClient {
        refuse: true,
        ..CbClient::default()
    });
    let mut c = client_with_back_channel(s.addr, "cb-refuses", cb).await;
    // The CB_NULL probe fails: SEQUENCE reports the path down.
    let mut flags = 0;
    for _ in 0..200 {
        flags = status_flags(&mut c).await;
        if flags & SEQ4_STATUS_CB_PATH_DOWN != 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert_ne!(flags & SEQ4_STATUS_CB_PATH_DOWN, 0, "flags {flags:#x}");
    let e = mds::callback::cb_compound(&s.mds.core, &c.sessionid, vec![]).await;
    assert!(e.is_err(), "{e:?}");
}

#[tokio::test]
async fn a_session_without_a_back_channel_has_no_callbacks() {
    let s = server().await;
    let c = Client::new(s.addr, "no-cb").await;
    let e = mds::callback::cb_compound(&s.mds.core, &c.sessionid, vec![]).await;
    assert!(
        matches!(e, Err(mds::callback::CallbackError::NoBackChannel)),
        "{e:?}"
    );
}

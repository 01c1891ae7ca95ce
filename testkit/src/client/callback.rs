//! The client side of the back channel (RFC 8881 sections 2.10.3.1 and 20): a session whose
//! connection also carries the server's callbacks, answered by [`CbClient`], which decodes
//! every operation of a CB_COMPOUND and records what it saw. How it answers CB_LAYOUTRECALL
//! is set per test ([`RecallAnswer`]), so a test can play a client that returns its layout,
//! one that holds none, one that hangs, and one whose callback service is gone.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use nfs_proto::nfs4::*;
use nfs_proto::rpc::AcceptStat;
use nfs_proto::transport::{CallHandler, Conn, HandlerFuture, IncomingCall, Reply};
use nfs_proto::xdr;

/// The callback program the test client asks for in CREATE_SESSION (`csa_cb_program`).
pub const CB_PROGRAM: u32 = 0x4000_0000;

/// How the client answers a CB_COMPOUND that carries CB_LAYOUTRECALL.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RecallAnswer {
    /// CB_LAYOUTRECALL answered with this status: `NFS4_OK` (the client will send
    /// LAYOUTRETURN), `NFS4ERR_NOMATCHING_LAYOUT` (it holds nothing of what is recalled), or
    /// any other error (the CB_COMPOUND stops there, RFC 8881 section 20.3).
    Status(NfsStat4),
    /// No reply at all: a client that hangs; the server's callback waits for its timeout.
    Silent,
    /// The RPC is refused (PROG_UNAVAIL): a client whose callback service went away; the
    /// server's callback fails at once.
    Refuse,
}

/// The back channel's server: answers CB_NULL, and CB_COMPOUND starting with CB_SEQUENCE,
/// recording the slots and sequence ids, the operations, every CB_LAYOUTRECALL and every
/// CB_NOTIFY_DEVICEID; or, when
/// built with [`CbClient::refusing`], refuses every call.
pub struct CbClient {
    refuse: bool,
    recall_answer: Mutex<RecallAnswer>,
    /// CB_NULLs answered.
    pub nulls: AtomicU32,
    /// `(slot, sequence id)` of each CB_SEQUENCE, in arrival order.
    pub sequences: Mutex<Vec<(u32, u32)>>,
    /// The operations of each CB_COMPOUND, in arrival order.
    pub compounds: Mutex<Vec<Vec<NfsCbOpnum4>>>,
    /// The arguments of each CB_LAYOUTRECALL, in arrival order.
    pub recalls: Mutex<Vec<CbLayoutRecallArgs>>,
    /// The arguments of each CB_NOTIFY_DEVICEID (answered NFS4_OK), in arrival order.
    pub device_notifications: Mutex<Vec<CbNotifyDeviceidArgs>>,
    /// The arguments of each CB_RECALL (a delegation recall), in arrival order; answered
    /// NFS4_OK (the test then sends DELEGRETURN, or not).
    pub deleg_recalls: Mutex<Vec<CbRecallArgs>>,
    /// The `(change, size)` CB_GETATTR answers with; `None`: NFS4ERR_BADHANDLE.
    pub getattr_answer: Mutex<Option<(u64, u64)>>,
    /// The arguments of each CB_GETATTR, in arrival order.
    pub getattrs: Mutex<Vec<CbGetAttrArgs>>,
    /// The arguments of each CB_OFFLOAD (answered NFS4_OK), in arrival order.
    pub offloads: Mutex<Vec<CbOffloadArgs>>,
    /// How many of the next CB_COMPOUNDs are refused before they are looked at (PROG_UNAVAIL):
    /// calls lost on the way, which the client never saw.
    pub refuse_next: AtomicU32,
    /// How many of the next CB_SEQUENCEs are answered NFS4ERR_DELAY, the slot left as it was
    /// (as Linux does while it drains its session, or while the slot is busy).
    pub sequence_delays: AtomicU32,
    /// How the next CB_RECALLs are answered, in turn; NFS4_OK once this is empty.
    pub deleg_recall_answers: Mutex<VecDeque<NfsStat4>>,
    /// Each back channel slot's last sequence id, per session: a CB_SEQUENCE must bring the
    /// next one, or the same one (a replay, answered as Linux does when it caches nothing).
    slot_seqids: Mutex<HashMap<(Sessionid4, u32), u32>>,
}

impl Default for CbClient {
    fn default() -> Self {
        Self::answering(RecallAnswer::Status(NfsStat4::NFS4_OK))
    }
}

impl CbClient {
    /// A client that answers CB_LAYOUTRECALL with `answer`.
    pub fn answering(answer: RecallAnswer) -> Self {
        Self {
            refuse: false,
            recall_answer: Mutex::new(answer),
            nulls: AtomicU32::new(0),
            sequences: Mutex::new(Vec::new()),
            compounds: Mutex::new(Vec::new()),
            recalls: Mutex::new(Vec::new()),
            device_notifications: Mutex::new(Vec::new()),
            deleg_recalls: Mutex::new(Vec::new()),
            getattr_answer: Mutex::new(None),
            getattrs: Mutex::new(Vec::new()),
            offloads: Mutex::new(Vec::new()),
            refuse_next: AtomicU32::new(0),
            sequence_delays: AtomicU32::new(0),
            deleg_recall_answers: Mutex::new(VecDeque::new()),
            slot_seqids: Mutex::new(HashMap::new()),
        }
    }

    /// A client that refuses every callback, CB_NULL included (its callback service is gone).
    pub fn refusing() -> Self {
        Self {
            refuse: true,
            ..Self::default()
        }
    }

    /// Changes how later CB_LAYOUTRECALLs are answered.
    pub fn set_recall_answer(&self, answer: RecallAnswer) {
        *self.recall_answer.lock().unwrap() = answer;
    }

    /// The CB_LAYOUTRECALLs received so far.
    pub fn recalled(&self) -> Vec<CbLayoutRecallArgs> {
        self.recalls.lock().unwrap().clone()
    }

    /// Waits (up to `limit`) until `n` CB_LAYOUTRECALLs have arrived, and returns them all.
    pub async fn wait_recalls(&self, n: usize, limit: Duration) -> Vec<CbLayoutRecallArgs> {
        let t0 = Instant::now();
        loop {
            let seen = self.recalled();
            if seen.len() >= n {
                return seen;
            }
            assert!(
                t0.elapsed() < limit,
                "{} CB_LAYOUTRECALL(s) in {limit:?}, {n} expected",
                seen.len()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Waits (up to `limit`) until `n` CB_RECALLs have arrived, and returns them all.
    pub async fn wait_deleg_recalls(&self, n: usize, limit: Duration) -> Vec<CbRecallArgs> {
        let t0 = Instant::now();
        loop {
            let seen = self.deleg_recalls.lock().unwrap().clone();
            if seen.len() >= n {
                return seen;
            }
            assert!(
                t0.elapsed() < limit,
                "{} CB_RECALL(s) in {limit:?}, {n} expected",
                seen.len()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Waits (up to `limit`) until `n` CB_OFFLOADs have arrived, and returns them all.
    pub async fn wait_offloads(&self, n: usize, limit: Duration) -> Vec<CbOffloadArgs> {
        let t0 = Instant::now();
        loop {
            let seen = self.offloads.lock().unwrap().clone();
            if seen.len() >= n {
                return seen;
            }
            assert!(
                t0.elapsed() < limit,
                "{} CB_OFFLOAD(s) in {limit:?}, {n} expected",
                seen.len()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// The answer to one CB_COMPOUND (RFC 8881 section 20.9), or `None` for no reply.
    fn compound(&self, args: CbCompoundArgs) -> Option<Reply> {
        let Some(NfsCbArgop4::Sequence(s)) = args.argarray.first() else {
            return Some(Reply::Accepted(AcceptStat::GarbageArgs));
        };
        self.sequences
            .lock()
            .unwrap()
            .push((s.csa_slotid, s.csa_sequenceid));
        self.compounds
            .lock()
            .unwrap()
            .push(args.argarray.iter().map(NfsCbArgop4::opnum).collect());
        let sequence_failed = |status| {
            let res = CbCompoundRes {
                status,
                tag: args.tag.clone(),
                resarray: vec![NfsCbResop4::Sequence(CbSequenceRes::Err(status))],
            };
            Some(Reply::Success(vec![xdr::to_bytes(&res)]))
        };
        // RFC 8881 section 20.9.3: a CB_SEQUENCE that fails leaves the slot as it was.
        if take_one(&self.sequence_delays) {
            return sequence_failed(NfsStat4::NFS4ERR_DELAY);
        }
        let replay = {
            let mut seqids = self.slot_seqids.lock().unwrap();
            let last = seqids.entry((s.csa_sessionid, s.csa_slotid)).or_insert(0);
            if s.csa_sequenceid == *last {
                true
            } else if s.csa_sequenceid == last.wrapping_add(1) {
                *last = s.csa_sequenceid;
                false
            } else {
                drop(seqids);
                return sequence_failed(NfsStat4::NFS4ERR_SEQ_MISORDERED);
            }
        };
        let mut resarray = vec![NfsCbResop4::Sequence(CbSequenceRes::Ok(CbSequenceResOk {
            csr_sessionid: s.csa_sessionid,
            csr_sequenceid: s.csa_sequenceid,
            csr_slotid: s.csa_slotid,
            csr_highest_slotid: 0,
            csr_target_highest_slotid: 0,
        }))];
        if replay {
            // Linux keeps no reply cache: the operation after CB_SEQUENCE fails with
            // NFS4ERR_RETRY_UNCACHED_REP, or CB_SEQUENCE itself when it is alone.
            let status = NfsStat4::NFS4ERR_RETRY_UNCACHED_REP;
            let Some(op) = args.argarray.get(1) else {
                return sequence_failed(status);
            };
            resarray.push(failed(op, status));
            let res = CbCompoundRes {
                status,
                tag: args.tag,
                resarray,
            };
            return Some(Reply::Success(vec![xdr::to_bytes(&res)]));
        }
        let mut status = NfsStat4::NFS4_OK;
        for op in args.argarray.iter().skip(1) {
            let res = match op {
                NfsCbArgop4::LayoutRecall(a) => {
                    self.recalls.lock().unwrap().push(a.clone());
                    match *self.recall_answer.lock().unwrap() {
                        RecallAnswer::Status(s) => {
                            NfsCbResop4::LayoutRecall(CbLayoutRecallRes { status: s })
                        }
                        RecallAnswer::Silent => return None,
                        RecallAnswer::Refuse => {
                            return Some(Reply::Accepted(AcceptStat::ProgUnavail))
                        }
                    }
                }
                NfsCbArgop4::Recall(a) => {
                    self.deleg_recalls.lock().unwrap().push(a.clone());
                    let answer = self.deleg_recall_answers.lock().unwrap().pop_front();
                    NfsCbResop4::Recall(CbRecallRes {
                        status: answer.unwrap_or(NfsStat4::NFS4_OK),
                    })
                }
                NfsCbArgop4::GetAttr(a) => {
                    self.getattrs.lock().unwrap().push(a.clone());
                    match *self.getattr_answer.lock().unwrap() {
                        Some((change, size)) => {
                            let attrs = attr::FileAttrs {
                                change: Some(change),
                                size: Some(size),
                                ..Default::default()
                            };
                            NfsCbResop4::GetAttr(CbGetAttrRes::Ok(CbGetAttrResOk {
                                obj_attributes: attrs.to_fattr(&a.attr_request),
                            }))
                        }
                        None => {
                            NfsCbResop4::GetAttr(CbGetAttrRes::Err(NfsStat4::NFS4ERR_BADHANDLE))
                        }
                    }
                }
                NfsCbArgop4::Offload(a) => {
                    self.offloads.lock().unwrap().push(a.clone());
                    NfsCbResop4::Offload(CbOffloadRes {
                        status: NfsStat4::NFS4_OK,
                    })
                }
                NfsCbArgop4::NotifyDeviceid(a) => {
                    self.device_notifications.lock().unwrap().push(a.clone());
                    NfsCbResop4::NotifyDeviceid(CbNotifyDeviceidRes {
                        status: NfsStat4::NFS4_OK,
                    })
                }
                other => not_supported(other),
            };
            status = res.status();
            resarray.push(res);
            // A CB_COMPOUND stops at the first operation that fails.
            if status != NfsStat4::NFS4_OK {
                break;
            }
        }
        let res = CbCompoundRes {
            status,
            tag: args.tag,
            resarray,
        };
        Some(Reply::Success(vec![xdr::to_bytes(&res)]))
    }
}

/// Counts `n` down by one unless it is 0: whether it was not.
fn take_one(n: &AtomicU32) -> bool {
    n.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
        .is_ok()
}

/// The answer to a callback operation this test client does not implement: its own result
/// with NFS4ERR_NOTSUPP, or CB_ILLEGAL for an operation number it does not know.
fn not_supported(op: &NfsCbArgop4) -> NfsCbResop4 {
    failed(op, NfsStat4::NFS4ERR_NOTSUPP)
}

/// `op`'s own result with the error `status`, or CB_ILLEGAL for an operation that may not
/// follow CB_SEQUENCE or that this client does not know.
fn failed(op: &NfsCbArgop4, status: NfsStat4) -> NfsCbResop4 {
    match op {
        NfsCbArgop4::GetAttr(_) => NfsCbResop4::GetAttr(CbGetAttrRes::Err(status)),
        NfsCbArgop4::Recall(_) => NfsCbResop4::Recall(CbRecallRes { status }),
        NfsCbArgop4::LayoutRecall(_) => NfsCbResop4::LayoutRecall(CbLayoutRecallRes { status }),
        NfsCbArgop4::Notify(_) => NfsCbResop4::Notify(CbNotifyRes { status }),
        NfsCbArgop4::PushDeleg(_) => NfsCbResop4::PushDeleg(CbPushDelegRes { status }),
        NfsCbArgop4::RecallAny(_) => NfsCbResop4::RecallAny(CbRecallAnyRes { status }),
        NfsCbArgop4::RecallableObjAvail(_) => {
            NfsCbResop4::RecallableObjAvail(CbRecallableObjAvailRes { status })
        }
        NfsCbArgop4::RecallSlot(_) => NfsCbResop4::RecallSlot(CbRecallSlotRes { status }),
        NfsCbArgop4::WantsCancelled(_) => {
            NfsCbResop4::WantsCancelled(CbWantsCancelledRes { status })
        }
        NfsCbArgop4::NotifyLock(_) => NfsCbResop4::NotifyLock(CbNotifyLockRes { status }),
        NfsCbArgop4::NotifyDeviceid(_) => {
            NfsCbResop4::NotifyDeviceid(CbNotifyDeviceidRes { status })
        }
        NfsCbArgop4::Offload(_) => NfsCbResop4::Offload(CbOffloadRes { status }),
        // A second CB_SEQUENCE (section 20.9.3), CB_ILLEGAL or an unknown number.
        NfsCbArgop4::Sequence(_) | NfsCbArgop4::Illegal | NfsCbArgop4::Unknown(_) => {
            NfsCbResop4::Illegal(CbIllegalRes {
                status: NfsStat4::NFS4ERR_OP_ILLEGAL,
            })
        }
    }
}

impl CallHandler for CbClient {
    fn handle(self: Arc<Self>, _conn: Conn, call: IncomingCall) -> HandlerFuture {
        Box::pin(async move {
            if self.refuse || call.prog != CB_PROGRAM || call.vers != 1 {
                return Reply::Accepted(AcceptStat::ProgUnavail);
            }
            match call.proc_ {
                CB_NULL => {
                    self.nulls.fetch_add(1, Ordering::SeqCst);
                    Reply::Success(Vec::new())
                }
                CB_COMPOUND => {
                    if take_one(&self.refuse_next) {
                        return Reply::Accepted(AcceptStat::ProgUnavail);
                    }
                    let Ok(args) = xdr::from_bytes::<CbCompoundArgs>(call.args) else {
                        return Reply::Accepted(AcceptStat::GarbageArgs);
                    };
                    match self.compound(args) {
                        Some(reply) => reply,
                        None => std::future::pending().await,
                    }
                }
                _ => Reply::Accepted(AcceptStat::ProcUnavail),
            }
        })
    }
}

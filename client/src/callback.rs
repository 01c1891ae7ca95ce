//! The client's side of the back channel (RFC 8881 sections 2.10.3.1 and 20): the MDS calls
//! CB_COMPOUND on the connection the client bound to its session. CB_SEQUENCE is answered
//! for the sessions this client made; each other operation goes to the [`CallbackSink`]
//! (the client's layout and delegation state: CB_LAYOUTRECALL, CB_NOTIFY_DEVICEID,
//! CB_RECALL, CB_GETATTR; and the copies waiting for CB_OFFLOAD).

use std::sync::{Arc, Mutex, OnceLock, Weak};

use nfs_proto::nfs4::*;
use nfs_proto::rpc::AcceptStat;
use nfs_proto::transport::{CallHandler, Conn, HandlerFuture, IncomingCall, Reply};
use nfs_proto::xdr;

/// The callback program number the client registers in CREATE_SESSION (`csa_cb_program`).
pub const CB_PROGRAM: u32 = 0x4000_0000;

/// What the client does with the server's callbacks. Each method answers at once (the work
/// it starts, a LAYOUTRETURN say, runs in the background, as RFC 8881 section 12.5.5.1 lets a
/// client answer CB_LAYOUTRECALL before returning).
pub trait CallbackSink: Send + Sync {
    /// CB_LAYOUTRECALL: NFS4_OK when something matches and will be returned,
    /// NFS4ERR_NOMATCHING_LAYOUT when the client holds nothing of it.
    fn layout_recall(&self, args: &CbLayoutRecallArgs) -> NfsStat4;
    /// CB_NOTIFY_DEVICEID: forget or refresh cached devices.
    fn notify_deviceid(&self, args: &CbNotifyDeviceidArgs) -> NfsStat4;
    /// CB_RECALL of a delegation (RFC 8881 section 20.2): NFS4_OK when it is held (it goes
    /// back in the background), NFS4ERR_BAD_STATEID when it is not.
    fn recall_delegation(&self, args: &CbRecallArgs) -> NfsStat4;
    /// CB_GETATTR (RFC 8881 section 20.1): the size and change of a file under a write
    /// delegation as the client sees them; NFS4ERR_BADHANDLE for any other file.
    fn getattr(&self, args: &CbGetAttrArgs) -> CbGetAttrRes;
    /// CB_OFFLOAD (RFC 7862 section 16.1): how an asynchronous COPY ended, for the copy
    /// waiting on its stateid. NFS4_OK: the client took it (the server has nothing to
    /// resend whatever the client makes of it).
    fn offload(&self, args: &CbOffloadArgs) -> NfsStat4;
}

/// The back channel's server.
#[derive(Default)]
pub struct CallbackService {
    sink: OnceLock<Weak<dyn CallbackSink>>,
    sessions: Mutex<Vec<Sessionid4>>,
}

impl CallbackService {
    /// Where the callbacks go (set once, when the client is built).
    pub fn set_sink(&self, sink: Weak<dyn CallbackSink>) {
        let _ = self.sink.set(sink);
    }

    /// A session of this client: CB_SEQUENCE for it is answered.
    pub(crate) fn session_created(&self, id: Sessionid4) {
        let mut s = self.sessions.lock().unwrap_or_else(|p| p.into_inner());
        s.push(id);
        // Keep the few latest (older sessions were replaced after recoveries).
        let n = s.len();
        if n > 8 {
            s.drain(..n - 8);
        }
    }

    fn knows(&self, id: &Sessionid4) -> bool {
        self.sessions
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .contains(id)
    }

    /// The answer to one CB_COMPOUND: CB_SEQUENCE, then each operation until one fails.
    fn compound(&self, args: CbCompoundArgs) -> CbCompoundRes {
        let mut resarray = Vec::with_capacity(args.argarray.len());
        let mut status = NfsStat4::NFS4_OK;
        let sink = self.sink.get().and_then(Weak::upgrade);
        for (i, op) in args.argarray.iter().enumerate() {
            let res = match (i, op) {
                (0, NfsCbArgop4::Sequence(s)) => {
                    if self.knows(&s.csa_sessionid) {
                        NfsCbResop4::Sequence(CbSequenceRes::Ok(CbSequenceResOk {
                            csr_sessionid: s.csa_sessionid,
                            csr_sequenceid: s.csa_sequenceid,
                            csr_slotid: s.csa_slotid,
                            csr_highest_slotid: s.csa_highest_slotid,
                            csr_target_highest_slotid: s.csa_highest_slotid,
                        }))
                    } else {
                        NfsCbResop4::Sequence(CbSequenceRes::Err(NfsStat4::NFS4ERR_BADSESSION))
                    }
                }
                // CB_SEQUENCE must come first, and only first (RFC 8881 section 20.9.3).
                (0, _) => NfsCbResop4::Illegal(CbIllegalRes {
                    status: NfsStat4::NFS4ERR_OP_NOT_IN_SESSION,
                }),
                (_, NfsCbArgop4::LayoutRecall(a)) => NfsCbResop4::LayoutRecall(CbLayoutRecallRes {
                    status: sink
                        .as_ref()
                        .map_or(NfsStat4::NFS4ERR_NOMATCHING_LAYOUT, |s| s.layout_recall(a)),
                }),
                (_, NfsCbArgop4::NotifyDeviceid(a)) => {
                    NfsCbResop4::NotifyDeviceid(CbNotifyDeviceidRes {
                        status: sink
                            .as_ref()
                            .map_or(NfsStat4::NFS4_OK, |s| s.notify_deviceid(a)),
                    })
                }
                (_, NfsCbArgop4::Recall(a)) => NfsCbResop4::Recall(CbRecallRes {
                    status: sink
                        .as_ref()
                        .map_or(NfsStat4::NFS4ERR_BAD_STATEID, |s| s.recall_delegation(a)),
                }),
                (_, NfsCbArgop4::RecallAny(_)) => NfsCbResop4::RecallAny(CbRecallAnyRes {
                    status: NfsStat4::NFS4_OK,
                }),
                (_, NfsCbArgop4::RecallSlot(_)) => NfsCbResop4::RecallSlot(CbRecallSlotRes {
                    status: NfsStat4::NFS4_OK,
                }),
                (_, NfsCbArgop4::GetAttr(a)) => NfsCbResop4::GetAttr(
                    sink.as_ref()
                        .map_or(CbGetAttrRes::Err(NfsStat4::NFS4ERR_BADHANDLE), |s| {
                            s.getattr(a)
                        }),
                ),
                (_, NfsCbArgop4::Notify(_)) => NfsCbResop4::Notify(CbNotifyRes {
                    status: NfsStat4::NFS4ERR_NOTSUPP,
                }),
                (_, NfsCbArgop4::NotifyLock(_)) => NfsCbResop4::NotifyLock(CbNotifyLockRes {
                    status: NfsStat4::NFS4_OK,
                }),
                (_, NfsCbArgop4::PushDeleg(_)) => NfsCbResop4::PushDeleg(CbPushDelegRes {
                    status: NfsStat4::NFS4ERR_NOTSUPP,
                }),
                (_, NfsCbArgop4::RecallableObjAvail(_)) => {
                    NfsCbResop4::RecallableObjAvail(CbRecallableObjAvailRes {
                        status: NfsStat4::NFS4ERR_NOTSUPP,
                    })
                }
                (_, NfsCbArgop4::WantsCancelled(_)) => {
                    NfsCbResop4::WantsCancelled(CbWantsCancelledRes {
                        status: NfsStat4::NFS4_OK,
                    })
                }
                (_, NfsCbArgop4::Offload(a)) => NfsCbResop4::Offload(CbOffloadRes {
                    status: sink.as_ref().map_or(NfsStat4::NFS4_OK, |s| s.offload(a)),
                }),
                (_, NfsCbArgop4::Sequence(_) | NfsCbArgop4::Illegal | NfsCbArgop4::Unknown(_)) => {
                    NfsCbResop4::Illegal(CbIllegalRes {
                        status: NfsStat4::NFS4ERR_OP_ILLEGAL,
                    })
                }
            };
            status = res.status();
            resarray.push(res);
            if status != NfsStat4::NFS4_OK {
                break;
            }
        }
        CbCompoundRes {
            status,
            tag: args.tag,
            resarray,
        }
    }
}

impl CallHandler for CallbackService {
    fn handle(self: Arc<Self>, _conn: Conn, call: IncomingCall) -> HandlerFuture {
        Box::pin(async move {
            if call.prog != CB_PROGRAM {
                return Reply::Accepted(AcceptStat::ProgUnavail);
            }
            if call.vers != 1 {
                return Reply::Accepted(AcceptStat::ProgMismatch { low: 1, high: 1 });
            }
            match call.proc_ {
                CB_NULL => Reply::Success(Vec::new()),
                CB_COMPOUND => match xdr::from_bytes::<CbCompoundArgs>(call.args) {
                    Ok(args) => Reply::Success(vec![xdr::to_bytes(&self.compound(args))]),
                    Err(_) => Reply::Accepted(AcceptStat::GarbageArgs),
                },
                _ => Reply::Accepted(AcceptStat::ProcUnavail),
            }
        })
    }
}

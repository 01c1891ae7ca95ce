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
pub(crate) const CB_PROGRAM: u32 = 0x4000_0000;

/// What the client does with the server's callbacks. Each method answers at once (the work
/// it starts, a LAYOUTRETURN say, runs in the background, as RFC 8881 section 12.5.5.1 lets a
/// client answer CB_LAYOUTRECALL before returning).
pub(crate) trait CallbackSink: Send + Sync {
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
pub(crate) struct CallbackService {
    sink: OnceLock<Weak<dyn CallbackSink>>,
    sessions: Mutex<Vec<Sessionid4>>,
}

impl CallbackService {
    /// Where the callbacks go (set once, when the client is built).
    pub(crate) fn set_sink(&self, sink: Weak<dyn CallbackSink>) {
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

    /// The answer to CB_SEQUENCE (RFC 8881 section 20.9): accepted for a session of this
    /// client.
    fn sequence(&self, s: &CbSequenceArgs) -> CbSequenceRes {
        if self.knows(&s.csa_sessionid) {
            CbSequenceRes::Ok(CbSequenceResOk {
                csr_sessionid: s.csa_sessionid,
                csr_sequenceid: s.csa_sequenceid,
                csr_slotid: s.csa_slotid,
                csr_highest_slotid: s.csa_highest_slotid,
                csr_target_highest_slotid: s.csa_highest_slotid,
            })
        } else {
            CbSequenceRes::Err(NfsStat4::NFS4ERR_BADSESSION)
        }
    }

    /// The answer to one CB_COMPOUND: CB_SEQUENCE, then each operation until one fails. The
    /// operations after CB_SEQUENCE go through the callback table's dispatch ([`cb_dispatch`])
    /// to [`SinkOps`].
    async fn compound(&self, args: CbCompoundArgs) -> CbCompoundRes {
        let mut resarray = Vec::with_capacity(args.argarray.len());
        let mut status = NfsStat4::NFS4_OK;
        let mut ops = SinkOps(self.sink.get().and_then(Weak::upgrade));
        for (i, op) in args.argarray.iter().enumerate() {
            let res = match (i, op) {
                (0, NfsCbArgop4::Sequence(s)) => NfsCbResop4::Sequence(self.sequence(s)),
                // CB_SEQUENCE must come first, and only first (RFC 8881 section 20.9.3): any
                // other operation first is NFS4ERR_OP_NOT_IN_SESSION, CB_SEQUENCE further on
                // NFS4ERR_SEQUENCE_POS, each in the result of the operation refused (an
                // operation number the table does not know has only CB_ILLEGAL's).
                (0, NfsCbArgop4::Unknown(_) | NfsCbArgop4::Illegal) => {
                    NfsCbResop4::Illegal(CbIllegalRes {
                        status: NfsStat4::NFS4ERR_OP_NOT_IN_SESSION,
                    })
                }
                (0, op) => NfsCbResop4::error(op.opnum(), NfsStat4::NFS4ERR_OP_NOT_IN_SESSION),
                (_, NfsCbArgop4::Sequence(_)) => {
                    NfsCbResop4::Sequence(CbSequenceRes::error(NfsStat4::NFS4ERR_SEQUENCE_POS))
                }
                (_, op) => cb_dispatch(&mut ops, op).await,
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

/// The client's callback operations after CB_SEQUENCE, as the callback table's handler: what
/// concerns the client's layouts, delegations and copies goes to the [`CallbackSink`] (with
/// the answer of a client that holds nothing while there is none); the recalls of slots and
/// of "any" state, lock notifications and cancelled wants are taken (NFS4_OK: nothing is
/// kept that they would recall); the rest (CB_NOTIFY, CB_PUSH_DELEG, CB_RECALLABLE_OBJ_AVAIL)
/// keeps the table's `NFS4ERR_NOTSUPP`.
struct SinkOps(Option<Arc<dyn CallbackSink>>);

impl CbHandler for SinkOps {
    async fn cb_layoutrecall(&mut self, a: &CbLayoutRecallArgs) -> CbLayoutRecallRes {
        CbLayoutRecallRes {
            status: self
                .0
                .as_ref()
                .map_or(NfsStat4::NFS4ERR_NOMATCHING_LAYOUT, |s| s.layout_recall(a)),
        }
    }

    async fn cb_notify_deviceid(&mut self, a: &CbNotifyDeviceidArgs) -> CbNotifyDeviceidRes {
        CbNotifyDeviceidRes {
            status: self
                .0
                .as_ref()
                .map_or(NfsStat4::NFS4_OK, |s| s.notify_deviceid(a)),
        }
    }

    async fn cb_recall(&mut self, a: &CbRecallArgs) -> CbRecallRes {
        CbRecallRes {
            status: self
                .0
                .as_ref()
                .map_or(NfsStat4::NFS4ERR_BAD_STATEID, |s| s.recall_delegation(a)),
        }
    }

    async fn cb_recall_any(&mut self, _: &CbRecallAnyArgs) -> CbRecallAnyRes {
        CbRecallAnyRes {
            status: NfsStat4::NFS4_OK,
        }
    }

    async fn cb_recall_slot(&mut self, _: &CbRecallSlotArgs) -> CbRecallSlotRes {
        CbRecallSlotRes {
            status: NfsStat4::NFS4_OK,
        }
    }

    async fn cb_getattr(&mut self, a: &CbGetAttrArgs) -> CbGetAttrRes {
        self.0
            .as_ref()
            .map_or(CbGetAttrRes::Err(NfsStat4::NFS4ERR_BADHANDLE), |s| {
                s.getattr(a)
            })
    }

    async fn cb_notify_lock(&mut self, _: &CbNotifyLockArgs) -> CbNotifyLockRes {
        CbNotifyLockRes {
            status: NfsStat4::NFS4_OK,
        }
    }

    async fn cb_wants_cancelled(&mut self, _: &CbWantsCancelledArgs) -> CbWantsCancelledRes {
        CbWantsCancelledRes {
            status: NfsStat4::NFS4_OK,
        }
    }

    async fn cb_offload(&mut self, a: &CbOffloadArgs) -> CbOffloadRes {
        CbOffloadRes {
            status: self.0.as_ref().map_or(NfsStat4::NFS4_OK, |s| s.offload(a)),
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
                    Ok(args) => Reply::Success(vec![xdr::to_bytes(&self.compound(args).await)]),
                    Err(_) => Reply::Accepted(AcceptStat::GarbageArgs),
                },
                _ => Reply::Accepted(AcceptStat::ProcUnavail),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sequence(id: Sessionid4) -> NfsCbArgop4 {
        NfsCbArgop4::Sequence(CbSequenceArgs {
            csa_sessionid: id,
            csa_sequenceid: 3,
            ..Default::default()
        })
    }

    fn run(service: &CallbackService, ops: Vec<NfsCbArgop4>) -> Vec<(NfsCbOpnum4, NfsStat4)> {
        let args = CbCompoundArgs {
            argarray: ops,
            ..Default::default()
        };
        let res = futures::executor::block_on(service.compound(args));
        let statuses: Vec<_> = res
            .resarray
            .iter()
            .map(|r| (r.opnum(), r.status()))
            .collect();
        assert_eq!(
            res.status,
            statuses.last().map_or(NfsStat4::NFS4_OK, |s| s.1)
        );
        statuses
    }

    #[test]
    fn operations_after_cb_sequence_get_the_client_s_answers_until_one_fails() {
        use NfsCbOpnum4 as O;
        let service = CallbackService::default();
        service.session_created([7; 16]);
        // Without a sink: the answers of a client that holds nothing.
        assert_eq!(
            run(
                &service,
                vec![
                    sequence([7; 16]),
                    NfsCbArgop4::RecallSlot(CbRecallSlotArgs::default()),
                    NfsCbArgop4::RecallAny(CbRecallAnyArgs::default()),
                    NfsCbArgop4::Recall(CbRecallArgs::default()),
                    NfsCbArgop4::RecallSlot(CbRecallSlotArgs::default()),
                ]
            ),
            [
                (O::OP_CB_SEQUENCE, NfsStat4::NFS4_OK),
                (O::OP_CB_RECALL_SLOT, NfsStat4::NFS4_OK),
                (O::OP_CB_RECALL_ANY, NfsStat4::NFS4_OK),
                (O::OP_CB_RECALL, NfsStat4::NFS4ERR_BAD_STATEID),
            ]
        );
        assert_eq!(
            run(
                &service,
                vec![
                    sequence([7; 16]),
                    NfsCbArgop4::Notify(CbNotifyArgs::default())
                ]
            )[1],
            (O::OP_CB_NOTIFY, NfsStat4::NFS4ERR_NOTSUPP)
        );
        assert_eq!(
            run(
                &service,
                vec![
                    sequence([7; 16]),
                    NfsCbArgop4::RecallSlot(CbRecallSlotArgs::default()),
                    sequence([7; 16]),
                    NfsCbArgop4::RecallAny(CbRecallAnyArgs::default()),
                ]
            ),
            [
                (O::OP_CB_SEQUENCE, NfsStat4::NFS4_OK),
                (O::OP_CB_RECALL_SLOT, NfsStat4::NFS4_OK),
                (O::OP_CB_SEQUENCE, NfsStat4::NFS4ERR_SEQUENCE_POS),
            ]
        );
        assert_eq!(
            run(
                &service,
                vec![sequence([7; 16]), NfsCbArgop4::Unknown(NfsCbOpnum4(99))]
            )[1],
            (O::OP_CB_ILLEGAL, NfsStat4::NFS4ERR_OP_ILLEGAL)
        );
    }

    #[test]
    fn cb_sequence_must_come_first_and_name_a_session_of_this_client() {
        use NfsCbOpnum4 as O;
        let service = CallbackService::default();
        service.session_created([7; 16]);
        assert_eq!(
            run(&service, vec![sequence([8; 16])]),
            [(O::OP_CB_SEQUENCE, NfsStat4::NFS4ERR_BADSESSION)]
        );
        assert_eq!(
            run(
                &service,
                vec![
                    NfsCbArgop4::RecallAny(CbRecallAnyArgs::default()),
                    sequence([7; 16]),
                ]
            ),
            [(O::OP_CB_RECALL_ANY, NfsStat4::NFS4ERR_OP_NOT_IN_SESSION)]
        );
        assert_eq!(
            run(&service, vec![NfsCbArgop4::Unknown(NfsCbOpnum4(99))]),
            [(O::OP_CB_ILLEGAL, NfsStat4::NFS4ERR_OP_NOT_IN_SESSION)]
        );
    }

    /// A CB_SEQUENCE out of place is refused whatever session it names, before any look-up.
    #[test]
    fn cb_sequence_after_the_first_is_sequence_pos_even_for_an_unknown_session() {
        use NfsCbOpnum4 as O;
        let service = CallbackService::default();
        service.session_created([7; 16]);
        assert_eq!(
            run(&service, vec![sequence([7; 16]), sequence([9; 16])]),
            [
                (O::OP_CB_SEQUENCE, NfsStat4::NFS4_OK),
                (O::OP_CB_SEQUENCE, NfsStat4::NFS4ERR_SEQUENCE_POS),
            ]
        );
    }
}

//! COMPOUND processing (RFC 8881 sections 15.2, 16.2 and 2.10.6), the same for every role:
//! what may come first, SEQUENCE and the reply cache (a retry is answered from the cache,
//! never re-executed), the session's request and reply size limits, OP_ILLEGAL and
//! OP_NOT_IN_SESSION, and the reply. What may come first, what changes state and how big
//! its reply can be are the op table's ([`OpFlags`], [`NfsArgop4::reply_size_estimate`]);
//! the role's own operations go to its context as an [`nfs_proto::nfs4::OpHandler`].

use std::sync::Arc;

use bytes::Bytes;
use nfs_proto::nfs4::*;
use nfs_proto::rpc::{AcceptStat, Credential, OpaqueAuth};
use nfs_proto::transport::{Conn, Reply};
use nfs_proto::xdr::{Decoder, Encoder, Xdr};
use tracing::{debug, info_span, Instrument};

use crate::role::{CompoundCtx, Role, SessionCtx};
use crate::session_ops::{self, SequenceStart};
use crate::state::session::ReplyLimit;

/// Bytes of an ONC RPC reply before the procedure's results: xid, message type, reply
/// status, verifier (AUTH_NONE: flavor and empty body) and accept status (RFC 5531). Session
/// reply limits count them (RFC 8881 section 18.36.3: `ca_maxresponsesize` includes the RPC
/// headers).
pub const RPC_REPLY_HEADER: usize = 24;

/// The XDR size of a successful SEQUENCE result: op number, status, session id, sequence id,
/// slot id, highest and target highest slot id, status flags.
pub const SEQUENCE_RESULT: usize = 4 + 4 + 16 + 5 * 4;

/// Room kept free after each result but the last, for the error result that replaces the
/// next one if that does not fit (op number, status and at most a couple of empty words).
const ERROR_RESERVE: usize = 16;

/// The XDR size of an opaque or string of `n` bytes: length word, bytes, padding.
fn xdr_opaque_size(n: usize) -> usize {
    4 + n.div_ceil(4) * 4
}

/// The size of an RPC call header as received: xid, message type, RPC version, program,
/// version, procedure, then credential and verifier (flavor, length, body). An AUTH_NONE
/// credential's body is taken to be empty. Session request limits count it (RFC 8881
/// section 18.36.3: `ca_maxrequestsize` includes the RPC headers).
pub fn rpc_call_header_size(cred: &Credential, verf: &OpaqueAuth) -> usize {
    let cred_body = match cred {
        Credential::None => 0,
        Credential::Sys(p) => nfs_proto::xdr::to_bytes(p).len(),
        Credential::Gss(b) | Credential::Other(_, b) => b.len(),
    };
    6 * 4 + 4 + xdr_opaque_size(cred_body) + 4 + xdr_opaque_size(verf.body.len())
}

/// The most bytes the result of `op` can take when it changes state, checked before it runs
/// so that the server never does something whose reply it then cannot send or cache (RFC
/// 8881 section 2.10.6.4 asks servers not to; knfsd estimates the same way). The op table
/// holds both the flag and the estimate ([`OpFlags::MODIFIES_STATE`],
/// [`NfsArgop4::reply_size_estimate`]). `None` for operations that change nothing: their
/// actual result is checked after they ran.
fn state_change_result_size(op: &NfsArgop4) -> Option<usize> {
    op.opnum()
        .flags()
        .contains(OpFlags::MODIFIES_STATE)
        .then(|| op.reply_size_estimate())
        .flatten()
}

/// The encoded result of one operation.
fn encode_result(res: &NfsResop4) -> Encoder {
    let mut e = Encoder::new();
    res.encode(&mut e);
    e
}

/// Runs one COMPOUND. `call_header_size` is the size of the RPC call's header
/// ([`rpc_call_header_size`]), for the session's request size limit.
///
/// Within a session the reply must fit the session's limit ([`ReplyLimit`]: RFC 8881
/// sections 2.10.6.4 and 18.46.3): SEQUENCE itself fails when not even its own result fits;
/// an operation that would change state is refused before it runs when its largest result
/// would not fit, and any other whose actual result does not fit gets NFS4ERR_REP_TOO_BIG
/// (or NFS4ERR_REP_TOO_BIG_TO_CACHE with `sa_cachethis`) instead of its result, which ends
/// the COMPOUND.
pub async fn process<R: Role>(
    server: Arc<R>,
    conn: Conn,
    cred: Credential,
    args: Bytes,
    call_header_size: usize,
) -> Reply {
    let raw = args.clone();
    let (args, bad_op) = match Compound4Args::decode_partial(&mut Decoder::new(args)) {
        Ok(a) => a,
        Err(_) => return Reply::Accepted(AcceptStat::GarbageArgs),
    };
    let tag = args.tag.clone();
    if !(1..=2).contains(&args.minorversion) {
        return encode_reply(Compound4Res {
            status: NfsStat4::NFS4ERR_MINOR_VERS_MISMATCH,
            tag,
            resarray: Vec::new(),
        });
    }
    let session = SessionCtx::new(conn, &cred, args.minorversion);
    let mut ctx = match server.begin(session, &cred) {
        Ok(ctx) => ctx,
        Err(reply) => return reply,
    };
    let nops = args.argarray.len() + usize::from(bad_op.is_some());
    let request_size = call_header_size + raw.len();
    // The reply so far: RPC header, status, tag, result count, then the results.
    let mut size = RPC_REPLY_HEADER + 4 + xdr_opaque_size(tag.len()) + 4;
    let mut results = Encoder::new();
    let mut count = 0u32;
    let mut status = NfsStat4::NFS4_OK;
    let mut slot = None;
    let mut limit: Option<ReplyLimit> = None;
    let started = std::time::Instant::now();
    let kind = crate::counters::compound_kind(args.argarray.iter().map(|op| op.opnum()));
    let span = info_span!("compound", ops = nops, tag = %tag);
    let replay = async {
        for (i, op) in args.argarray.iter().enumerate() {
            let opnum = op.opnum();
            let reserve = if i + 1 == nops { 0 } else { ERROR_RESERVE };
            // An undefined operation is OP_ILLEGAL wherever it stands, even first (RFC 8881
            // section 15.2; pynfs COMP5).
            let mut res = if let NfsArgop4::Unknown(_) | NfsArgop4::Illegal = op {
                NfsResop4::Illegal(IllegalRes {
                    status: NfsStat4::NFS4ERR_OP_ILLEGAL,
                })
            } else if i == 0 && !matches!(op, NfsArgop4::Sequence(_)) {
                if !opnum.flags().contains(OpFlags::WITHOUT_SEQUENCE) {
                    NfsResop4::error(opnum, NfsStat4::NFS4ERR_OP_NOT_IN_SESSION)
                } else if nops > 1 {
                    NfsResop4::error(opnum, NfsStat4::NFS4ERR_NOT_ONLY_OP)
                } else {
                    dispatch(&server, &mut ctx, op).await
                }
            } else if i > 0 && matches!(op, NfsArgop4::Sequence(_)) {
                NfsResop4::error(opnum, NfsStat4::NFS4ERR_SEQUENCE_POS)
            } else if let (0, NfsArgop4::Sequence(s)) = (i, op) {
                // SEQUENCE's result, and room for one error result after it if more follow.
                let min_reply = size + SEQUENCE_RESULT + reserve;
                let core = server.core();
                match session_ops::sequence(
                    core,
                    ctx.session_mut(),
                    s,
                    &raw,
                    request_size,
                    min_reply,
                    nops,
                ) {
                    Ok(SequenceStart::Replay(pieces)) => {
                        return Some(pieces);
                    }
                    Ok(SequenceStart::Go(mut res, s)) => {
                        if let (SequenceRes::Ok(ok), Some(c)) = (&mut res, ctx.session().clientid) {
                            ok.sr_status_flags |= server.status_flags(c);
                        }
                        limit = Some(s.reply_limit);
                        slot = Some(s);
                        NfsResop4::Sequence(res)
                    }
                    Err(status) => NfsResop4::error(opnum, status),
                }
            } else {
                let refused = limit.filter(|l| {
                    state_change_result_size(op)
                        .is_some_and(|most| size + most + reserve > l.max as usize)
                });
                match refused {
                    Some(l) => NfsResop4::error(opnum, l.error()),
                    None => {
                        ctx.before_op(op, &args.argarray[i + 1..]);
                        dispatch(&server, &mut ctx, op).await
                    }
                }
            };
            let mut enc = encode_result(&res);
            if let Some(l) = limit.filter(|_| i > 0) {
                if size + enc.len() + reserve > l.max as usize {
                    res = NfsResop4::error(opnum, l.error());
                    enc = encode_result(&res);
                }
            }
            status = res.status();
            debug!(op = ?opnum, status = ?status);
            server.core().counters.op(opnum, status);
            size += enc.len();
            results.put_pieces(enc.into_pieces());
            count += 1;
            if !status.is_ok() {
                return None;
            }
        }
        if let Some(bad) = bad_op {
            status = if bad.op == NfsOpnum4::OP_ILLEGAL || bad.op.name().is_none() {
                NfsStat4::NFS4ERR_OP_ILLEGAL
            } else {
                NfsStat4::NFS4ERR_BADXDR
            };
            let res = if status == NfsStat4::NFS4ERR_OP_ILLEGAL {
                NfsResop4::Illegal(IllegalRes { status })
            } else {
                NfsResop4::error(bad.op, status)
            };
            results.put_pieces(encode_result(&res).into_pieces());
            count += 1;
        }
        None
    }
    .instrument(span)
    .await;
    if let Some(pieces) = replay {
        return Reply::Success(pieces);
    }
    if let Err(e) = ctx.finish().await {
        // The changes may not be durable: no reply may acknowledge them. The slot is freed
        // without a cached reply (a retry gets NFS4ERR_RETRY_UNCACHED_REP).
        tracing::error!("COMPOUND not acknowledged, its changes may not be durable: {e}");
        if let Some(s) = slot {
            session_ops::abandon(server.core(), s);
        }
        return Reply::Accepted(AcceptStat::SystemErr);
    }
    // COMPOUND4res: status of the last result, the tag, the results.
    let mut e = Encoder::new();
    e.put_u32(status.0);
    tag.encode(&mut e);
    e.put_u32(count);
    e.put_pieces(results.into_pieces());
    let pieces = e.into_pieces();
    if let Some(s) = slot {
        session_ops::finish(server.core(), s, &pieces);
    }
    server
        .core()
        .counters
        .compound_took(kind, started.elapsed());
    Reply::Success(pieces)
}

fn encode_pieces(res: &Compound4Res) -> Vec<Bytes> {
    let mut e = Encoder::new();
    res.encode(&mut e);
    e.into_pieces()
}

fn encode_reply(res: Compound4Res) -> Reply {
    Reply::Success(encode_pieces(&res))
}

/// Runs one operation other than SEQUENCE: the session operations here, the rest in the role.
async fn dispatch<R: Role>(server: &Arc<R>, ctx: &mut R::Ctx, op: &NfsArgop4) -> NfsResop4 {
    use NfsArgop4 as A;
    use NfsResop4 as Res;
    match op {
        A::ExchangeId(a) => {
            Res::ExchangeId(session_ops::exchange_id(server, ctx.session(), a).await)
        }
        A::CreateSession(a) => {
            Res::CreateSession(session_ops::create_session(server, ctx.session(), a).await)
        }
        A::DestroySession(a) => Res::DestroySession(session_ops::destroy_session(
            server.core(),
            ctx.session(),
            a,
        )),
        A::BindConnToSession(a) => {
            Res::BindConnToSession(session_ops::bind_conn_to_session(server, ctx.session(), a))
        }
        A::BackchannelCtl(a) => Res::BackchannelCtl(session_ops::backchannel_ctl(
            server.core(),
            ctx.session(),
            a,
        )),
        A::DestroyClientId(a) => {
            Res::DestroyClientId(session_ops::destroy_clientid(server, a).await)
        }
        A::ReclaimComplete(a) => Res::ReclaimComplete(session_ops::reclaim_complete(
            server.core(),
            ctx.session(),
            a,
        )),
        A::Sequence(_) => Res::error(op.opnum(), NfsStat4::NFS4ERR_SEQUENCE_POS),
        A::Illegal | A::Unknown(_) => Res::Illegal(IllegalRes {
            status: NfsStat4::NFS4ERR_OP_ILLEGAL,
        }),
        _ if !op.opnum().flags().contains(R::OFFERED) => {
            Res::error(op.opnum(), NfsStat4::NFS4ERR_NOTSUPP)
        }
        _ => nfs_proto::nfs4::dispatch(ctx, op).await,
    }
}

#[cfg(test)]
mod tests {
    use nfs_proto::rpc::{AuthFlavor, AuthSysParms};
    use nfs_proto::xdr::Utf8String;

    use super::*;

    #[test]
    fn call_header_size_counts_credential_and_verifier() {
        let none = OpaqueAuth::new(AuthFlavor::AUTH_NONE, Bytes::new());
        assert_eq!(rpc_call_header_size(&Credential::None, &none), 40);
        let sys = AuthSysParms {
            stamp: 1,
            machinename: Utf8String::from("host"),
            uid: 0,
            gid: 0,
            gids: vec![1, 2],
        };
        // stamp, name (4 + 4), uid, gid, gids (4 + 8)
        assert_eq!(rpc_call_header_size(&Credential::Sys(sys), &none), 40 + 32);
    }

    #[test]
    fn a_reply_built_from_encoded_results_is_a_compound4res() {
        let results = [
            NfsResop4::Sequence(SequenceRes::Ok(SequenceResOk::default())),
            NfsResop4::PutRootFh(PutRootFhRes {
                status: NfsStat4::NFS4_OK,
            }),
        ];
        let tag = Utf8String::from("abcde");
        let mut body = Encoder::new();
        for r in &results {
            body.put_pieces(encode_result(r).into_pieces());
        }
        let mut e = Encoder::new();
        e.put_u32(NfsStat4::NFS4_OK.0);
        tag.encode(&mut e);
        e.put_u32(results.len() as u32);
        e.put_pieces(body.into_pieces());
        let whole = Compound4Res {
            status: NfsStat4::NFS4_OK,
            tag: tag.clone(),
            resarray: results.to_vec(),
        };
        assert_eq!(e.into_bytes(), nfs_proto::xdr::to_bytes(&whole));
        assert_eq!(
            nfs_proto::xdr::to_bytes(&whole).len(),
            4 + xdr_opaque_size(tag.len()) + 4 + SEQUENCE_RESULT + 8
        );
    }

    #[test]
    fn sequence_result_size_is_its_encoding() {
        let res = NfsResop4::Sequence(SequenceRes::Ok(SequenceResOk::default()));
        assert_eq!(encode_result(&res).len(), SEQUENCE_RESULT);
    }

    #[test]
    fn state_changing_ops_have_a_result_estimate_covering_their_error() {
        let ops = [
            NfsArgop4::Remove(RemoveArgs { target: "x".into() }),
            NfsArgop4::Close(CloseArgs::default()),
            NfsArgop4::ReclaimComplete(ReclaimCompleteArgs { rca_one_fs: false }),
        ];
        for op in &ops {
            let most = state_change_result_size(op).expect("changes state");
            assert!(
                most >= encode_result(&NfsResop4::error(op.opnum(), NfsStat4::NFS4ERR_IO)).len()
            );
        }
        assert_eq!(state_change_result_size(&NfsArgop4::GetFh), None);
        assert_eq!(state_change_result_size(&NfsArgop4::PutRootFh), None);
    }
}

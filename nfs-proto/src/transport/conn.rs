//! One RPC connection driven in both directions, as NFSv4.1 needs: the side that accepted the
//! connection serves calls on it *and* sends callbacks over it (the backchannel, RFC 8881
//! section 2.10.3.1), and the side that opened it does the reverse. Servers and the client
//! library share this driver.
//!
//! ```text
//!   socket ──read──> records ──> CALL  ──> handler task ──> reply pieces ─┐
//!                          └──> REPLY ──> the waiting Conn::call           │
//!   socket <──write── writer task <── reply / call records <──────────────┘
//! ```
//!
//! Calls are handled concurrently (each in its own task, up to a per-connection bound), and
//! every record leaves through one writer task that sends its pieces with a vectored write.

use std::collections::HashMap;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use futures_util::{Stream, StreamExt};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::{mpsc, oneshot, Semaphore};

use super::budget::{ConnShare, ReplyBudget, Reservation};
use super::{write_record, SharedPayloadBuffers};
use crate::record::RecordReader;
use crate::rpc::{
    AcceptStat, AuthStat, Credential, MsgBody, OpaqueAuth, RejectedReply, ReplyBody,
    RpcHeaderError, RpcMsg,
};
use crate::xdr::Encoder;

/// A call received on a connection.
#[derive(Debug, Clone)]
pub struct IncomingCall {
    /// Transaction id.
    pub xid: u32,
    /// Program number.
    pub prog: u32,
    /// Program version.
    pub vers: u32,
    /// Procedure number.
    pub proc_: u32,
    /// The caller's credential, parsed; an unparsable one is answered AUTH_BADCRED before the
    /// handler sees the call.
    pub cred: Credential,
    /// The caller's verifier.
    pub verf: OpaqueAuth,
    /// The procedure's arguments: a slice of the received record.
    pub args: Bytes,
}

/// How a handler answers a call.
#[derive(Debug, Clone)]
pub enum Reply {
    /// SUCCESS, with the encoded results as pieces (not copied on the way out).
    Success(Vec<Bytes>),
    /// An accepted-but-failed reply: PROG_UNAVAIL, PROG_MISMATCH, PROC_UNAVAIL, GARBAGE_ARGS,
    /// SYSTEM_ERR.
    Accepted(AcceptStat),
    /// A rejected reply (AUTH_ERROR, RPC_MISMATCH).
    Denied(RejectedReply),
    /// Send nothing (the call was a duplicate still in progress, say).
    Drop,
}

/// Boxed future returned by handlers.
pub type HandlerFuture = Pin<Box<dyn Future<Output = Reply> + Send>>;

/// Serves calls arriving on connections.
pub trait CallHandler: Send + Sync + 'static {
    /// Answers one call. `conn` can be kept to send calls back later (the backchannel).
    fn handle(self: Arc<Self>, conn: Conn, call: IncomingCall) -> HandlerFuture;

    /// The connection is gone (to unbind it from sessions, fail callbacks, ...).
    fn closed(&self, _conn: &Conn) {}

    /// Whether `conn`, idle past its [`ServerPolicy::idle_timeout`], may be closed. The NFS
    /// service keeps connections bound to a session (the Linux client leaves them idle
    /// between lease renewals and expects its callbacks to reach it over them).
    fn may_close_idle(&self, _conn: &Conn) -> bool {
        true
    }
}

/// A handler for connections that expect no incoming calls: answers PROG_UNAVAIL.
#[derive(Debug, Default)]
pub struct NoCalls;

impl CallHandler for NoCalls {
    fn handle(self: Arc<Self>, _conn: Conn, _call: IncomingCall) -> HandlerFuture {
        Box::pin(async { Reply::Accepted(AcceptStat::ProgUnavail) })
    }
}

/// Limits of one connection.
#[derive(Debug, Clone, Copy)]
pub struct ConnLimits {
    /// Largest fragment accepted.
    pub max_fragment: usize,
    /// Largest record accepted; a larger one closes the connection.
    pub max_record: usize,
    /// Most calls handled at once; further records wait (TCP back-pressure).
    pub max_in_flight: usize,
}

impl Default for ConnLimits {
    fn default() -> Self {
        Self {
            max_fragment: 4 << 20,
            max_record: 4 << 20,
            max_in_flight: 128,
        }
    }
}

/// Why an outgoing call got no result.
#[derive(Debug)]
pub enum CallError {
    /// The connection closed before the reply came.
    Closed,
    /// The peer answered with an accepted-but-failed status.
    Accepted(AcceptStat),
    /// The peer rejected the call.
    Denied(RejectedReply),
}

impl std::fmt::Display for CallError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Closed => f.write_str("connection closed before the reply"),
            Self::Accepted(s) => write!(f, "call failed: {s:?}"),
            Self::Denied(r) => write!(f, "call rejected: {r:?}"),
        }
    }
}

impl std::error::Error for CallError {}

type Pending = HashMap<u32, oneshot::Sender<Result<Bytes, CallError>>>;

struct Inner {
    id: u64,
    peer: SocketAddr,
    local: SocketAddr,
    out: mpsc::Sender<Outgoing>,
    /// Records handed to the writer task and not yet written (for the idle check).
    unwritten: Arc<AtomicUsize>,
    pending: Mutex<Pending>,
    next_xid: AtomicU32,
    closed: AtomicBool,
    /// Over RPC-over-RDMA ([`RecordSink::is_rdma`]).
    rdma: bool,
    /// Memory replies' bulk data can be sent from as it is ([`RecordSink::payload_buffers`]).
    payload: Option<SharedPayloadBuffers>,
}

impl Inner {
    /// Hands a record to the writer task; `Err` when the connection is gone.
    async fn queue(&self, pieces: Vec<Bytes>, hold: Option<Reservation>) -> Result<(), ()> {
        self.unwritten.fetch_add(1, Ordering::AcqRel);
        let rec = Outgoing {
            pieces,
            _hold: hold,
        };
        if self.out.send(rec).await.is_err() {
            self.unwritten.fetch_sub(1, Ordering::AcqRel);
            return Err(());
        }
        Ok(())
    }
}

/// A handle on a live connection: who is on the other end, and a way to call it.
#[derive(Clone)]
pub struct Conn(Arc<Inner>);

impl std::fmt::Debug for Conn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Conn#{}({} -> {})", self.0.id, self.0.peer, self.0.local)
    }
}

impl Conn {
    /// The id given when the connection was started (unique per process).
    pub fn id(&self) -> u64 {
        self.0.id
    }

    /// The peer's address.
    pub fn peer(&self) -> SocketAddr {
        self.0.peer
    }

    /// Our address on this connection (the one the peer reached us at).
    pub fn local(&self) -> SocketAddr {
        self.0.local
    }

    /// Whether the connection is RPC-over-RDMA rather than a byte stream: a server tells a
    /// client that reached it over RDMA where its data servers answer over RDMA.
    pub fn is_rdma(&self) -> bool {
        self.0.rdma
    }

    /// Buffers for a reply's bulk data (a READ's) that this connection sends without copying
    /// them (registered memory on RDMA); `None` when ordinary memory is as good.
    pub fn payload_buffers(&self) -> Option<&SharedPayloadBuffers> {
        self.0.payload.as_ref()
    }

    /// True once the connection has closed.
    pub fn is_closed(&self) -> bool {
        self.0.closed.load(Ordering::Acquire)
    }

    /// Sends a call and waits for its SUCCESS results. The caller bounds the wait (e.g. with
    /// `tokio::time::timeout`); a dropped future leaves no state behind but a pending entry
    /// that is cleared when the reply comes or the connection closes.
    pub async fn call(
        &self,
        prog: u32,
        vers: u32,
        proc_: u32,
        cred: OpaqueAuth,
        args: Vec<Bytes>,
    ) -> Result<Bytes, CallError> {
        let xid = self.0.next_xid.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        {
            let mut p = self.0.pending.lock().expect("pending lock");
            if self.is_closed() {
                return Err(CallError::Closed);
            }
            p.insert(xid, tx);
        }
        let msg = RpcMsg::call(xid, prog, vers, proc_, cred, OpaqueAuth::none());
        let mut e = Encoder::new();
        msg.encode_with_pieces(&mut e, args);
        if self.0.queue(e.into_pieces(), None).await.is_err() {
            self.0.pending.lock().expect("pending lock").remove(&xid);
            return Err(CallError::Closed);
        }
        rx.await.unwrap_or(Err(CallError::Closed))
    }

    fn fail_pending(&self) {
        self.0.closed.store(true, Ordering::Release);
        let pending = std::mem::take(&mut *self.0.pending.lock().expect("pending lock"));
        for (_, tx) in pending {
            let _ = tx.send(Err(CallError::Closed));
        }
    }
}

fn reply_record(xid: u32, reply: Reply) -> Option<Vec<Bytes>> {
    let mut e = Encoder::new();
    match reply {
        Reply::Success(pieces) => {
            RpcMsg::reply_success(xid, OpaqueAuth::none()).encode_with_pieces(&mut e, pieces)
        }
        Reply::Accepted(stat) => {
            RpcMsg::reply_accepted(xid, OpaqueAuth::none(), stat).encode_with_pieces(&mut e, [])
        }
        Reply::Denied(r) => RpcMsg::reply_denied(xid, r).encode_with_pieces(&mut e, []),
        Reply::Drop => return None,
    }
    Some(e.into_pieces())
}

/// What a server adds to the connections it accepts, beyond [`ConnLimits`]: its reply budget
/// and an idle timeout. A client's connections use the default (neither).
#[derive(Debug, Clone, Default)]
pub struct ServerPolicy {
    /// The server's budget of unwritten replies (see [`ReplyBudget`]): each call reserves its
    /// largest reply before it runs, and the connection stops reading calls while its share
    /// or the budget is full. `None`: replies are not counted.
    pub reply_budget: Option<Arc<ReplyBudget>>,
    /// Close the connection once it has received no complete record for this long, runs no
    /// call, has no reply or call queued, and its handler agrees
    /// ([`CallHandler::may_close_idle`]): knfsd likewise ages out idle temporary transports
    /// (after about 6 minutes). A reply or call that the peer does not take off the socket
    /// for this long also closes the connection: a peer that stopped reading is not served
    /// for ever out of its share of the budget. `None`: never.
    pub idle_timeout: Option<Duration>,
}

/// A record on its way to the writer task, with the budget it holds until written.
struct Outgoing {
    pieces: Vec<Bytes>,
    _hold: Option<Reservation>,
}

/// What the connection's result is once its writer task ended: its error, or a clean end.
fn writer_ended(w: Result<io::Result<()>, tokio::task::JoinError>) -> io::Result<()> {
    match w {
        Ok(Err(e)) => Err(e),
        _ => Ok(()),
    }
}

/// Why a connection ended that its peer did not end cleanly.
fn timed_out(what: String) -> io::Error {
    io::Error::new(io::ErrorKind::TimedOut, what)
}

/// Drives a connection until it closes: reads records, runs calls through `handler`, routes
/// replies to [`Conn::call`]ers, and writes everything through one writer task. Returns the
/// handle at once; the returned future completes when the connection is done.
pub fn start<S, H>(
    stream: S,
    id: u64,
    peer: SocketAddr,
    local: SocketAddr,
    handler: Arc<H>,
    limits: ConnLimits,
) -> (Conn, impl Future<Output = io::Result<()>> + Send)
where
    S: AsyncRead + AsyncWrite + Send + 'static,
    H: CallHandler,
{
    start_with(
        stream,
        id,
        peer,
        local,
        handler,
        limits,
        ServerPolicy::default(),
    )
}

/// [`start`] with a server's [`ServerPolicy`]: calls reserve reply budget before they run,
/// and an idle or stalled connection is closed (the future then returns a `TimedOut` error
/// saying which).
pub fn start_with<S, H>(
    stream: S,
    id: u64,
    peer: SocketAddr,
    local: SocketAddr,
    handler: Arc<H>,
    limits: ConnLimits,
    policy: ServerPolicy,
) -> (Conn, impl Future<Output = io::Result<()>> + Send)
where
    S: AsyncRead + AsyncWrite + Send + 'static,
    H: CallHandler,
{
    // A TCP socket is read and written at once through its own halves. `tokio::io::split`
    // instead puts the stream behind a mutex taken around every read and every write, and
    // over loopback a write runs the peer's receive path inside the syscall: the reading
    // task slept on that lock while the writing task sent a reply (8 tasks removing files:
    // 3-8 % more files/s and 3 % less server CPU without it, issue 22).
    let stream: Box<dyn std::any::Any + Send> = Box::new(stream);
    let (read, write): (
        Box<dyn AsyncRead + Send + Unpin>,
        Box<dyn AsyncWrite + Send + Unpin>,
    ) = match stream.downcast::<tokio::net::TcpStream>() {
        Ok(tcp) => {
            let (read, write) = tcp.into_split();
            (Box::new(read), Box::new(write))
        }
        Err(other) => {
            let Ok(stream) = other.downcast::<S>() else {
                unreachable!("a box holds the type it was made from")
            };
            let (read, write) = tokio::io::split(*stream);
            (Box::new(read), Box::new(write))
        }
    };
    start_records(
        super::records(
            read,
            RecordReader::new(limits.max_fragment, limits.max_record),
        ),
        StreamSink(write),
        id,
        peer,
        local,
        handler,
        limits,
        policy,
    )
}

/// Where a connection's outgoing records go. A byte stream frames each record with record
/// marking (RFC 5531 section 11); a message transport such as RPC-over-RDMA sends each as one
/// message, moving bulk data by RDMA.
pub trait RecordSink: Send + 'static {
    /// Sends one whole RPC message (a call or a reply), given as pieces that are not copied
    /// on the way out where the transport can avoid it.
    fn send(&mut self, pieces: Vec<Bytes>) -> impl Future<Output = io::Result<()>> + Send;

    /// Whether this is RPC-over-RDMA ([`Conn::is_rdma`]); a byte stream is not.
    fn is_rdma(&self) -> bool {
        false
    }

    /// Buffers that this sink sends without copying ([`Conn::payload_buffers`]); a byte
    /// stream has none (any memory is as good).
    fn payload_buffers(&self) -> Option<SharedPayloadBuffers> {
        None
    }
}

/// The record-marking sink of a byte stream.
struct StreamSink<W>(W);

impl<W: AsyncWrite + Send + Unpin + 'static> RecordSink for StreamSink<W> {
    async fn send(&mut self, pieces: Vec<Bytes>) -> io::Result<()> {
        write_record(&mut self.0, &pieces).await
    }
}

/// The XID of connection `id`'s first callback; the next ones count up from it. Away from
/// the peer's own XIDs, to ease reading traces (and known to a transport that sends calls of
/// its own, `rdma::server`'s nudge, to keep clear of them).
pub fn first_callback_xid(id: u64) -> u32 {
    0x8000_0000 ^ (id as u32).wrapping_mul(0x9e37_79b9)
}

/// [`start_with`] on a transport that already delivers whole RPC messages: `records` yields
/// each received message (an error ends the connection) and `sink` sends ours. The call
/// handling, reply budget, idle checks and backchannel are the byte stream's.
#[allow(clippy::too_many_arguments)]
pub fn start_records<R, W, H>(
    records: R,
    mut sink: W,
    id: u64,
    peer: SocketAddr,
    local: SocketAddr,
    handler: Arc<H>,
    limits: ConnLimits,
    policy: ServerPolicy,
) -> (Conn, impl Future<Output = io::Result<()>> + Send)
where
    R: Stream<Item = io::Result<Bytes>> + Send + Unpin + 'static,
    W: RecordSink,
    H: CallHandler,
{
    let (out_tx, mut out_rx) = mpsc::channel::<Outgoing>(256);
    // Records handed to the writer and not yet written (replies and calls alike), for the
    // idle check: the budget counts only replies, and only with a budget.
    let unwritten = Arc::new(AtomicUsize::new(0));
    let conn = Conn(Arc::new(Inner {
        id,
        peer,
        local,
        out: out_tx,
        unwritten: unwritten.clone(),
        pending: Mutex::new(HashMap::new()),
        next_xid: AtomicU32::new(first_callback_xid(id)),
        closed: AtomicBool::new(false),
        rdma: sink.is_rdma(),
        payload: sink.payload_buffers(),
    }));
    let driver_conn = conn.clone();
    let share = Arc::new(ConnShare::default());
    let idle_timeout = policy.idle_timeout;
    let driver = async move {
        let writer_unwritten = unwritten;
        let mut writer = tokio::spawn(async move {
            while let Some(rec) = out_rx.recv().await {
                let Outgoing { pieces, _hold } = rec;
                let write = sink.send(pieces);
                match idle_timeout {
                    Some(t) => tokio::time::timeout(t, write).await.map_err(|_| {
                        timed_out(format!(
                            "the peer took no record off the socket for {} s: closing",
                            t.as_secs()
                        ))
                    })??,
                    None => write.await?,
                }
                drop(_hold);
                writer_unwritten.fetch_sub(1, Ordering::AcqRel);
            }
            io::Result::Ok(())
        });
        let in_flight = Arc::new(Semaphore::new(limits.max_in_flight.max(1)));
        let mut records = records;
        // An hour stands in for "never" when there is no idle timeout.
        let idle_after = idle_timeout.unwrap_or(Duration::from_secs(3600));
        let idle = tokio::time::sleep(idle_after);
        tokio::pin!(idle);
        let result = loop {
            let next = tokio::select! {
                r = records.next() => r,
                // The writer ends only on an error, or when every sender is gone (never while
                // this driver holds one): either way the connection is over.
                w = &mut writer => break writer_ended(w),
                () = &mut idle => {
                    let quiet = in_flight.available_permits() == limits.max_in_flight.max(1)
                        && driver_conn.0.unwritten.load(Ordering::Acquire) == 0
                        && driver_conn.0.pending.lock().expect("pending lock").is_empty();
                    if idle_timeout.is_some() && quiet && handler.may_close_idle(&driver_conn) {
                        break Err(timed_out(format!(
                            "idle for {} s: closing",
                            idle_after.as_secs()
                        )));
                    }
                    idle.as_mut().reset(tokio::time::Instant::now() + idle_after);
                    continue;
                }
            };
            let record = match next {
                None => break Ok(()),
                Some(Err(e)) => break Err(e),
                Some(Ok(r)) => r,
            };
            idle.as_mut()
                .reset(tokio::time::Instant::now() + idle_after);
            match RpcMsg::decode_header(record) {
                Ok((msg, body)) => match msg.body {
                    MsgBody::Call(call) => {
                        // Back-pressure: no new call runs until its largest reply fits in
                        // this connection's share and the server's budget. A writer that
                        // fails meanwhile ends the wait (its replies are never coming out).
                        let hold = match &policy.reply_budget {
                            None => None,
                            Some(b) => tokio::select! {
                                r = b.reserve(&share) => Some(r),
                                w = &mut writer => break writer_ended(w),
                            },
                        };
                        let permit = in_flight.clone().acquire_owned().await.expect("semaphore");
                        let conn = driver_conn.clone();
                        let handler = handler.clone();
                        let xid = msg.xid;
                        tokio::spawn(async move {
                            let reply = match Credential::from_opaque(&call.cred) {
                                Err(_) => {
                                    Reply::Denied(RejectedReply::AuthError(AuthStat::AUTH_BADCRED))
                                }
                                Ok(cred) => {
                                    let incoming = IncomingCall {
                                        xid,
                                        prog: call.prog,
                                        vers: call.vers,
                                        proc_: call.proc_,
                                        cred,
                                        verf: call.verf,
                                        args: body,
                                    };
                                    handler.handle(conn.clone(), incoming).await
                                }
                            };
                            let mut hold = hold;
                            if let Some(rec) = reply_record(xid, reply) {
                                if let Some(h) = hold.as_mut() {
                                    h.resize(rec.iter().map(Bytes::len).sum::<usize>() + 4);
                                }
                                let _ = conn.0.queue(rec, hold).await;
                            }
                            drop(permit);
                        });
                    }
                    MsgBody::Reply(reply) => {
                        let waiter = driver_conn
                            .0
                            .pending
                            .lock()
                            .expect("pending lock")
                            .remove(&msg.xid);
                        if let Some(tx) = waiter {
                            let r = match reply {
                                ReplyBody::Accepted(a) => match a.stat {
                                    AcceptStat::Success => Ok(body),
                                    other => Err(CallError::Accepted(other)),
                                },
                                ReplyBody::Denied(d) => Err(CallError::Denied(d)),
                            };
                            let _ = tx.send(r);
                        }
                    }
                },
                Err(RpcHeaderError::RpcVersion { xid, .. }) => {
                    if let Some(rec) = reply_record(
                        xid,
                        Reply::Denied(RejectedReply::RpcMismatch { low: 2, high: 2 }),
                    ) {
                        let _ = driver_conn.0.queue(rec, None).await;
                    }
                }
                // A header that does not parse has no xid to answer to: RFC 5531 leaves it
                // to the server to drop it.
                Err(RpcHeaderError::Malformed { .. }) => {}
            }
        };
        driver_conn.fail_pending();
        handler.closed(&driver_conn);
        // Let queued replies go out before the writer stops.
        let _ = in_flight
            .acquire_many(limits.max_in_flight.max(1) as u32)
            .await;
        drop(driver_conn);
        writer.abort();
        result
    };
    (conn, driver)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rpc::AuthFlavor;

    /// Echoes its arguments for procedure 1; PROC_UNAVAIL otherwise. On procedure 2 it calls
    /// back the peer (program 7) and returns what the peer answered.
    struct Echo;

    impl CallHandler for Echo {
        fn handle(self: Arc<Self>, conn: Conn, call: IncomingCall) -> HandlerFuture {
            Box::pin(async move {
                match call.proc_ {
                    1 => Reply::Success(vec![call.args]),
                    2 => match conn
                        .call(7, 1, 1, OpaqueAuth::none(), vec![call.args])
                        .await
                    {
                        Ok(r) => Reply::Success(vec![r]),
                        Err(_) => Reply::Accepted(AcceptStat::SystemErr),
                    },
                    _ => Reply::Accepted(AcceptStat::ProcUnavail),
                }
            })
        }
    }

    fn addr() -> SocketAddr {
        "127.0.0.1:1".parse().unwrap()
    }

    #[tokio::test]
    async fn calls_and_callbacks_share_one_connection() {
        let (a, b) = tokio::io::duplex(1 << 16);
        let (_server, server_run) =
            start(a, 1, addr(), addr(), Arc::new(Echo), ConnLimits::default());
        tokio::spawn(server_run);
        // The client side answers the server's callbacks (program 7) with Echo too.
        let (client, client_run) =
            start(b, 2, addr(), addr(), Arc::new(Echo), ConnLimits::default());
        tokio::spawn(client_run);

        let payload = Bytes::from(vec![9u8; 100_000]);
        let got = client
            .call(100003, 4, 1, OpaqueAuth::none(), vec![payload.clone()])
            .await
            .unwrap();
        assert_eq!(got, payload);

        // Procedure 2 makes the server call back over the same connection.
        let got = client
            .call(
                100003,
                4,
                2,
                OpaqueAuth::none(),
                vec![Bytes::from_static(b"back")],
            )
            .await
            .unwrap();
        assert_eq!(&got[..], b"back");

        let e = client
            .call(100003, 4, 9, OpaqueAuth::none(), vec![])
            .await
            .unwrap_err();
        assert!(matches!(e, CallError::Accepted(AcceptStat::ProcUnavail)));

        // Many calls in flight at once all get their own replies.
        let calls = (0..50u32).map(|i| {
            let c = client.clone();
            async move {
                let arg = Bytes::from(i.to_be_bytes().to_vec());
                (
                    i,
                    c.call(100003, 4, 1, OpaqueAuth::none(), vec![arg])
                        .await
                        .unwrap(),
                )
            }
        });
        for (i, r) in futures_util::future::join_all(calls).await {
            assert_eq!(&r[..], &i.to_be_bytes());
        }
    }

    #[tokio::test]
    async fn bad_credential_gets_auth_badcred() {
        let (a, b) = tokio::io::duplex(1 << 16);
        let (_s, run) = start(a, 1, addr(), addr(), Arc::new(Echo), ConnLimits::default());
        tokio::spawn(run);
        let (client, run) = start(
            b,
            2,
            addr(),
            addr(),
            Arc::new(NoCalls),
            ConnLimits::default(),
        );
        tokio::spawn(run);
        let bad_sys = OpaqueAuth::new(AuthFlavor::AUTH_SYS, Bytes::from_static(&[0, 0, 0, 1]));
        let e = client
            .call(100003, 4, 1, bad_sys, vec![])
            .await
            .unwrap_err();
        assert!(matches!(
            e,
            CallError::Denied(RejectedReply::AuthError(AuthStat::AUTH_BADCRED))
        ));
    }

    #[tokio::test]
    async fn oversized_record_closes_the_connection_and_fails_pending_calls() {
        let (a, b) = tokio::io::duplex(1 << 16);
        let limits = ConnLimits {
            max_record: 1024,
            max_fragment: 1024,
            ..ConnLimits::default()
        };
        let (_s, run) = start(a, 1, addr(), addr(), Arc::new(Echo), limits);
        let server = tokio::spawn(run);
        let (client, run) = start(
            b,
            2,
            addr(),
            addr(),
            Arc::new(NoCalls),
            ConnLimits::default(),
        );
        tokio::spawn(run);
        let e = client
            .call(
                100003,
                4,
                1,
                OpaqueAuth::none(),
                vec![Bytes::from(vec![0u8; 4096])],
            )
            .await
            .unwrap_err();
        assert!(matches!(e, CallError::Closed));
        assert!(
            server.await.unwrap().is_err(),
            "the server side reports the oversized record"
        );
    }

    /// Answers procedure 1 with `size` bytes, counting the calls it ran; `closable` is what
    /// it says to the idle check.
    struct Big {
        size: usize,
        ran: AtomicUsize,
        closable: bool,
    }

    impl CallHandler for Big {
        fn handle(self: Arc<Self>, _conn: Conn, _call: IncomingCall) -> HandlerFuture {
            Box::pin(async move {
                self.ran.fetch_add(1, Ordering::SeqCst);
                Reply::Success(vec![Bytes::from(vec![7u8; self.size])])
            })
        }
        fn may_close_idle(&self, _conn: &Conn) -> bool {
            self.closable
        }
    }

    fn big(size: usize, closable: bool) -> Arc<Big> {
        Arc::new(Big {
            size,
            ran: AtomicUsize::new(0),
            closable,
        })
    }

    /// One call record (procedure 1, no arguments) as raw bytes.
    fn call_record(xid: u32) -> Vec<u8> {
        let msg = RpcMsg::call(xid, 9, 1, 1, OpaqueAuth::none(), OpaqueAuth::none());
        let mut e = Encoder::new();
        msg.encode_with_pieces(&mut e, []);
        let body: Vec<u8> = e.into_pieces().iter().flat_map(|p| p.to_vec()).collect();
        let mut rec = crate::record::record_header(body.len() as u32, true).to_vec();
        rec.extend_from_slice(&body);
        rec
    }

    #[tokio::test]
    async fn a_peer_that_does_not_read_stops_getting_calls_run() {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        const REPLY: usize = 100_000;
        // Room for 3 replies on this connection, 10 on the server.
        let budget = Arc::new(ReplyBudget::new(10 * REPLY, 3 * REPLY, REPLY + 100));
        let policy = ServerPolicy {
            reply_budget: Some(budget.clone()),
            idle_timeout: None,
        };
        let (a, mut b) = tokio::io::duplex(16 << 10);
        let h = big(REPLY, true);
        let (_s, run) = start_with(
            a,
            1,
            addr(),
            addr(),
            h.clone(),
            ConnLimits::default(),
            policy,
        );
        tokio::spawn(run);
        let calls: Vec<u8> = (0..50).flat_map(call_record).collect();
        b.write_all(&calls).await.unwrap();
        tokio::time::sleep(Duration::from_millis(300)).await;
        // 16 KiB of the first reply sit in the pipe; the share holds 3 more at most.
        let ran = h.ran.load(Ordering::SeqCst);
        assert!(ran <= 4, "{ran} calls ran for a peer that reads nothing");
        assert!(budget.used() <= 3 * REPLY + 300, "{}", budget.used());
        // Reading the replies lets the other calls run, and the budget drains.
        let mut got = 0;
        let mut buf = vec![0u8; 1 << 16];
        while got < 50 * (REPLY + 28) {
            let n = tokio::time::timeout(Duration::from_secs(10), b.read(&mut buf))
                .await
                .expect("replies keep coming")
                .unwrap();
            assert!(n > 0);
            got += n;
        }
        assert_eq!(h.ran.load(Ordering::SeqCst), 50);
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert_eq!(budget.used(), 0);
    }

    async fn closes_within(run: impl Future<Output = io::Result<()>>, t: Duration) -> bool {
        match tokio::time::timeout(t, run).await {
            Ok(Err(e)) => {
                assert_eq!(e.kind(), io::ErrorKind::TimedOut, "{e}");
                true
            }
            Ok(Ok(())) => panic!("closed without an error"),
            Err(_) => false,
        }
    }

    #[tokio::test]
    async fn an_idle_connection_is_closed_unless_its_handler_keeps_it() {
        let policy = ServerPolicy {
            reply_budget: None,
            idle_timeout: Some(Duration::from_millis(200)),
        };
        for closable in [true, false] {
            let (a, _b) = tokio::io::duplex(1 << 16);
            let (_s, run) = start_with(
                a,
                1,
                addr(),
                addr(),
                big(10, closable),
                ConnLimits::default(),
                policy.clone(),
            );
            let closed = closes_within(run, Duration::from_millis(1000)).await;
            assert_eq!(closed, closable, "closable: {closable}");
        }
    }

    #[tokio::test]
    async fn a_connection_in_use_is_not_idle() {
        use tokio::io::AsyncWriteExt;
        let policy = ServerPolicy {
            reply_budget: None,
            idle_timeout: Some(Duration::from_millis(300)),
        };
        let (a, b) = tokio::io::duplex(1 << 20);
        let (_s, run) = start_with(
            a,
            1,
            addr(),
            addr(),
            big(10, true),
            ConnLimits::default(),
            policy,
        );
        let run = tokio::spawn(run);
        // A call every 100 ms keeps it open; the replies are read.
        let (mut rd, mut wr) = tokio::io::split(b);
        tokio::spawn(async move {
            let mut sink = vec![0u8; 1 << 16];
            while tokio::io::AsyncReadExt::read(&mut rd, &mut sink)
                .await
                .unwrap_or(0)
                > 0
            {}
        });
        for xid in 0..10 {
            wr.write_all(&call_record(xid)).await.unwrap();
            tokio::time::sleep(Duration::from_millis(100)).await;
            assert!(!run.is_finished(), "closed while in use");
        }
        let r = tokio::time::timeout(Duration::from_secs(2), run).await;
        assert!(matches!(r, Ok(Ok(Err(_)))), "closed once quiet: {r:?}");
    }

    #[tokio::test]
    async fn a_peer_that_takes_no_reply_is_dropped_after_the_idle_timeout() {
        use tokio::io::AsyncWriteExt;
        let policy = ServerPolicy {
            reply_budget: None,
            idle_timeout: Some(Duration::from_millis(200)),
        };
        let (a, mut b) = tokio::io::duplex(4096);
        // Kept bound (not closable): only the stalled writer closes it.
        let (_s, run) = start_with(
            a,
            1,
            addr(),
            addr(),
            big(100_000, false),
            ConnLimits::default(),
            policy,
        );
        b.write_all(&call_record(1)).await.unwrap();
        assert!(closes_within(run, Duration::from_secs(2)).await);
    }
}

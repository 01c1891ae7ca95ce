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
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use futures_util::StreamExt;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::{mpsc, oneshot, Semaphore};
use tokio_util::codec::FramedRead;

use super::{write_record, RecordCodec};
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
    out: mpsc::Sender<Vec<Bytes>>,
    pending: Mutex<Pending>,
    next_xid: AtomicU32,
    closed: AtomicBool,
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
        if self.0.out.send(e.into_pieces()).await.is_err() {
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
    let (read, mut write) = tokio::io::split(stream);
    let (out_tx, mut out_rx) = mpsc::channel::<Vec<Bytes>>(256);
    let conn = Conn(Arc::new(Inner {
        id,
        peer,
        local,
        out: out_tx,
        pending: Mutex::new(HashMap::new()),
        // Start callback xids away from the peer's own, to ease reading traces.
        next_xid: AtomicU32::new(0x8000_0000 ^ (id as u32).wrapping_mul(0x9e37_79b9)),
        closed: AtomicBool::new(false),
    }));
    let driver_conn = conn.clone();
    let driver = async move {
        let writer = tokio::spawn(async move {
            while let Some(pieces) = out_rx.recv().await {
                write_record(&mut write, &pieces).await?;
            }
            io::Result::Ok(())
        });
        let in_flight = Arc::new(Semaphore::new(limits.max_in_flight.max(1)));
        let mut records = FramedRead::new(
            read,
            RecordCodec::new(limits.max_fragment, limits.max_record),
        );
        let result = loop {
            let record = match records.next().await {
                None => break Ok(()),
                Some(Err(e)) => break Err(io::Error::from(e)),
                Some(Ok(r)) => r,
            };
            match RpcMsg::decode_header(record) {
                Ok((msg, body)) => match msg.body {
                    MsgBody::Call(call) => {
                        let permit = in_flight.clone().acquire_owned().await.expect("semaphore");
                        let out = driver_conn.0.out.clone();
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
                                    handler.handle(conn, incoming).await
                                }
                            };
                            if let Some(rec) = reply_record(xid, reply) {
                                let _ = out.send(rec).await;
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
                        let _ = driver_conn.0.out.send(rec).await;
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
}

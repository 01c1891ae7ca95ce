//! Serving connections that no listener accepted: byte streams handed over one by one, such as
//! the in-process duplex streams of the test kit's in-memory cluster.
//!
//! ```text
//!  StreamServer::for_role(server)   the role's limits and reply budget (as serve_on), and its
//!    │                              lease reaper, started once here, stopped on drop
//!    └─ .serve(stream, peer, local) one connection: a future to spawn, ends when it closes
//! ```
//!
//! A listener's connections get a cap and back-off from [`crate::accept`]; streams handed
//! over here are made by the process itself, so neither applies, and every other limit does:
//! the same [`ConnLimits`], the same [`ServerPolicy`] (one reply budget for all of the
//! server's streams, the idle timeout), the same handler.

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;

use nfs_proto::transport::{self, CallHandler, ConnLimits, ServerPolicy};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::task::AbortHandle;

use crate::role::Role;
use crate::serve::Service;
use crate::session_ops;

/// Serves streams for one handler with one set of limits and one policy, and owns the
/// server's background tasks (the lease reaper of a role), which end when it is dropped.
pub struct StreamServer<H: CallHandler> {
    handler: Arc<H>,
    limits: ConnLimits,
    policy: ServerPolicy,
    next_id: Arc<dyn Fn() -> u64 + Send + Sync>,
    tasks: Vec<AbortHandle>,
}

impl<H: CallHandler> std::fmt::Debug for StreamServer<H> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StreamServer")
            .field("limits", &self.limits)
            .field("policy", &self.policy)
            .finish_non_exhaustive()
    }
}

impl<H: CallHandler> StreamServer<H> {
    /// Serves `handler` with `limits` and `policy` (clone it per server, never per stream:
    /// its reply budget is the server's), naming connections with ids from `next_id`.
    pub fn new(
        handler: Arc<H>,
        limits: ConnLimits,
        policy: ServerPolicy,
        next_id: impl Fn() -> u64 + Send + Sync + 'static,
    ) -> Self {
        Self {
            handler,
            limits,
            policy,
            next_id: Arc::new(next_id),
            tasks: Vec::new(),
        }
    }

    /// One connection over `stream`, from `peer` to `local` (synthetic addresses for
    /// in-process streams): a future to spawn, which ends when the connection closes.
    pub fn serve<S>(
        &self,
        stream: S,
        peer: SocketAddr,
        local: SocketAddr,
    ) -> impl Future<Output = io::Result<()>> + Send + 'static
    where
        S: AsyncRead + AsyncWrite + Send + 'static,
    {
        let (_conn, run) = transport::start_with(
            stream,
            (self.next_id)(),
            peer,
            local,
            self.handler.clone(),
            self.limits,
            self.policy.clone(),
        );
        run
    }
}

impl<R: Role> StreamServer<Service<R>> {
    /// A role's server, with the limits and policy [`crate::serve_on`] gives its TCP
    /// connections, and its lease reaper started (once, for every stream served). Needs a
    /// tokio runtime.
    pub fn for_role(server: Arc<R>) -> Self {
        let limits = server.core().conn_limits;
        let serve = server.core().serve_limits;
        let policy = serve.policy(serve.call_reserve.min(limits.max_record));
        let reaper = tokio::spawn(session_ops::reaper(server.clone())).abort_handle();
        let ids = server.clone();
        let mut s = Self::new(Arc::new(Service(server)), limits, policy, move || {
            ids.core().next_conn_id()
        });
        s.tasks.push(reaper);
        s
    }

    /// The server.
    pub fn server(&self) -> &Arc<R> {
        &self.handler.0
    }
}

impl<H: CallHandler> Drop for StreamServer<H> {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nfs_proto::rpc::OpaqueAuth;
    use nfs_proto::transport::{Conn, HandlerFuture, IncomingCall, NoCalls, Reply};

    struct Echo;

    impl CallHandler for Echo {
        fn handle(self: Arc<Self>, _conn: Conn, call: IncomingCall) -> HandlerFuture {
            Box::pin(async move { Reply::Success(vec![call.args]) })
        }
    }

    #[tokio::test]
    async fn each_stream_is_one_connection_of_the_same_server() {
        let ids = Arc::new(std::sync::atomic::AtomicU64::new(7));
        let server = StreamServer::new(
            Arc::new(Echo),
            ConnLimits::default(),
            ServerPolicy::default(),
            move || ids.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
        );
        let addr: SocketAddr = "192.0.2.1:2049".parse().unwrap();
        for n in 0..2u8 {
            let (a, b) = tokio::io::duplex(1 << 16);
            let served = tokio::spawn(server.serve(a, addr, addr));
            let (client, run) =
                transport::start(b, 0, addr, addr, Arc::new(NoCalls), ConnLimits::default());
            let client_run = tokio::spawn(run);
            let got = client
                .call(
                    1,
                    1,
                    1,
                    OpaqueAuth::none(),
                    vec![bytes::Bytes::from(vec![n; 3])],
                )
                .await
                .unwrap();
            assert_eq!(&got[..], &[n; 3]);
            client_run.abort();
            drop(client);
            // The client's end gone, the server's connection ends.
            served.await.unwrap().ok();
        }
    }
}

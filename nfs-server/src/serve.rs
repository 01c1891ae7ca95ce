//! The TCP service: accepts connections (under the cap, backing off on errors:
//! [`crate::accept`]), refuses credential flavors the server does not serve
//! ([`crate::auth_policy`]), answers the NFSv4 program's NULL and COMPOUND procedures through
//! the engine, unbinds closed connections from their sessions, closes idle connections that
//! no session holds, and runs the lease reaper. Every call reserves one READ's reply
//! (`max_io` and room for the COMPOUND) in the server's reply budget before it runs
//! ([`nfs_proto::transport::ReplyBudget`]).

use std::sync::atomic::Ordering;
use std::sync::Arc;

use nfs_proto::nfs4::{NFS4_PROGRAM, NFSPROC4_COMPOUND, NFSPROC4_NULL, NFS_V4};
use nfs_proto::rpc::{AcceptStat, RejectedReply};
use nfs_proto::transport::{CallHandler, Conn, HandlerFuture, IncomingCall, Reply};
use tokio::net::TcpListener;

use crate::accept::Acceptor;
use crate::auth_policy;
use crate::compound;
use crate::refusals::Refusal;
use crate::role::Role;
use crate::session_ops;

/// A role's server as the transport's [`CallHandler`].
pub struct Service<R: Role>(pub Arc<R>);

impl<R: Role> CallHandler for Service<R> {
    fn handle(self: Arc<Self>, conn: Conn, call: IncomingCall) -> HandlerFuture {
        Box::pin(async move {
            // Credentials first, whatever the program and procedure (as knfsd's
            // svc_authenticate): a flavor the server does not serve is refused even for NULL.
            if let Err(stat) = auth_policy::check(&call.cred) {
                self.0.core().refusals.note(
                    conn.peer().ip(),
                    Refusal::Credential,
                    format_args!("flavor {} answered {stat}", call.cred.flavor()),
                );
                return Reply::Denied(RejectedReply::AuthError(stat));
            }
            if call.prog != NFS4_PROGRAM {
                return Reply::Accepted(AcceptStat::ProgUnavail);
            }
            if call.vers != NFS_V4 {
                return Reply::Accepted(AcceptStat::ProgMismatch {
                    low: NFS_V4,
                    high: NFS_V4,
                });
            }
            match call.proc_ {
                NFSPROC4_NULL => Reply::Success(Vec::new()),
                NFSPROC4_COMPOUND => {
                    let server = self.0.clone();
                    server
                        .core()
                        .counters
                        .compounds
                        .fetch_add(1, Ordering::Relaxed);
                    let header = compound::rpc_call_header_size(&call.cred, &call.verf);
                    compound::process(server, conn, call.cred, call.args, header).await
                }
                _ => Reply::Accepted(AcceptStat::ProcUnavail),
            }
        })
    }

    fn closed(&self, conn: &Conn) {
        self.0.core().state().sessions.connection_closed(conn.id());
    }

    fn may_close_idle(&self, conn: &Conn) -> bool {
        !self.0.core().state().sessions.is_bound(conn.id())
    }
}

/// Serves connections accepted on `listener` for as long as the task runs, and the lease
/// reaper beside them.
pub async fn serve_on<R: Role>(server: Arc<R>, listener: TcpListener) {
    let limits = server.core().conn_limits;
    let serve = server.core().serve_limits;
    let policy = serve.policy(serve.call_reserve.min(limits.max_record));
    tokio::spawn(session_ops::reaper(server.clone()));
    let handler = Arc::new(Service(server.clone()));
    Acceptor::new(listener, "nfs", serve.max_connections)
        .serve_calls(handler, limits, policy, || server.core().next_conn_id())
        .await;
}

/// Serves RPC-over-RDMA connections accepted on `listener` with the same engine, limits and
/// reply budget as [`serve_on`] (which also runs the lease reaper: start it first).
pub async fn serve_rdma<R: Role>(server: Arc<R>, listener: rdma::Listener) {
    let limits = server.core().conn_limits;
    let serve = server.core().serve_limits;
    let policy = serve.policy(serve.call_reserve.min(limits.max_record));
    let handler = Arc::new(Service(server.clone()));
    listener
        .serve(handler, limits, policy, move || {
            server.core().next_conn_id()
        })
        .await;
}

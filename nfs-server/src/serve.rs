//! The TCP service: accepts connections, refuses credential flavors the server does not serve
//! ([`crate::auth_policy`]), answers the NFSv4 program's NULL and COMPOUND procedures through
//! the engine, unbinds closed connections from their sessions, and runs the lease reaper.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use nfs_proto::nfs4::{NFS4_PROGRAM, NFSPROC4_COMPOUND, NFSPROC4_NULL, NFS_V4};
use nfs_proto::rpc::{AcceptStat, RejectedReply};
use nfs_proto::transport::{self, CallHandler, Conn, HandlerFuture, IncomingCall, Reply};
use tokio::net::TcpListener;
use tracing::{info, warn};

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
}

/// Serves connections accepted on `listener` for as long as the task runs, and the lease
/// reaper beside them.
pub async fn serve_on<R: Role>(server: Arc<R>, listener: TcpListener) {
    let limits = server.core().conn_limits;
    tokio::spawn(session_ops::reaper(server.clone()));
    let handler = Arc::new(Service(server.clone()));
    loop {
        let (sock, peer) = match listener.accept().await {
            Ok(s) => s,
            Err(e) => {
                warn!("accept: {e}");
                continue;
            }
        };
        let _ = sock.set_nodelay(true);
        let local = sock.local_addr().unwrap_or(peer);
        let id = server.core().next_conn_id();
        let (_conn, run) = transport::start(sock, id, peer, local, handler.clone(), limits);
        tokio::spawn(async move {
            if let Err(e) = run.await {
                info!(%peer, "connection closed: {e}");
            }
        });
    }
}

//! In-process connections: a pair of duplex streams joined by a relay task, so that cutting
//! the relay ends the connection at both ends at once (as a dead peer's sockets close), and
//! the synthetic addresses the cluster's roles are reached at.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicU16, Ordering};
use std::sync::Mutex;

use tokio::io::DuplexStream;
use tokio::task::AbortHandle;

/// Bytes a duplex stream buffers in each direction before a writer waits.
const PIPE_BUFFER: usize = 1 << 20;

/// The MDS's address: TEST-NET-1 (RFC 5737), never routed, so no test can reach a real host.
pub const MDS_ADDR: SocketAddr = SocketAddr::new(IpAddr::V4(Ipv4Addr::new(192, 0, 2, 1)), 2049);

/// The port of every data server's control service.
const CONTROL_PORT: u16 = 20490;

/// Where data server `id` serves NFS (what GETDEVICEINFO tells clients): `192.0.2.(id + 1)`,
/// port 2049.
pub fn ds_nfs_addr(id: u16) -> SocketAddr {
    SocketAddr::new(ds_ip(id), 2049)
}

/// Where data server `id` serves the control protocol.
pub fn ds_control_addr(id: u16) -> SocketAddr {
    SocketAddr::new(ds_ip(id), CONTROL_PORT)
}

fn ds_ip(id: u16) -> IpAddr {
    let host = u8::try_from(id + 1).expect("at most 254 data servers");
    IpAddr::V4(Ipv4Addr::new(192, 0, 2, host))
}

/// A client's address (TEST-NET-2), a port of its own for each connection.
pub fn client_addr() -> SocketAddr {
    SocketAddr::new(IpAddr::V4(Ipv4Addr::new(198, 51, 100, 1)), next_port())
}

/// The address of a connection the MDS makes (to a data server's control service).
pub(super) fn mds_client_addr() -> SocketAddr {
    SocketAddr::new(MDS_ADDR.ip(), next_port())
}

/// A port for the calling end of a connection (1024 and up, wrapping).
fn next_port() -> u16 {
    static NEXT: AtomicU16 = AtomicU16::new(1024);
    NEXT.fetch_add(1, Ordering::Relaxed).max(1024)
}

/// A connection: the caller's end, the server's end, and the relay task between them
/// (aborting it closes both ends).
pub(super) fn pipe() -> (DuplexStream, DuplexStream, AbortHandle) {
    let (client, mut near) = tokio::io::duplex(PIPE_BUFFER);
    let (mut far, server) = tokio::io::duplex(PIPE_BUFFER);
    let relay = tokio::spawn(async move {
        let _ = tokio::io::copy_bidirectional(&mut near, &mut far).await;
    });
    (client, server, relay.abort_handle())
}

/// Tasks of one server incarnation (its connections' relays and drivers), aborted together
/// when it dies.
#[derive(Debug, Default)]
pub(super) struct Tasks(Mutex<Vec<AbortHandle>>);

impl Tasks {
    /// Keeps `task`, forgetting those already finished.
    pub(super) fn add(&self, task: AbortHandle) {
        let mut tasks = self.0.lock().unwrap_or_else(|e| e.into_inner());
        tasks.retain(|t| !t.is_finished());
        tasks.push(task);
    }

    /// Aborts every task kept.
    pub(super) fn abort_all(&self) {
        for t in self.0.lock().unwrap_or_else(|e| e.into_inner()).drain(..) {
            t.abort();
        }
    }
}

impl Drop for Tasks {
    fn drop(&mut self) {
        self.abort_all();
    }
}

//! One COMPOUND over one connection: encoding (WRITE data stays its own piece, not copied),
//! the RPC call, decoding (READ data stays a slice of the received record).

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use nfs_proto::nfs4::{
    Compound4Args, Compound4Res, NfsArgop4, NFS4_PROGRAM, NFSPROC4_COMPOUND, NFS_V4,
};
use nfs_proto::rpc::{AuthFlavor, AuthSysParms, OpaqueAuth};
use nfs_proto::transport::{self, CallError, CallHandler, Conn, ConnLimits};
use nfs_proto::xdr::{self, Encoder, Utf8String, Xdr};

use crate::error::{Error, Result};

/// Connection ids for this process (log lines name connections by them).
static NEXT_CONN: AtomicU64 = AtomicU64::new(1);

/// Who the client says it is: AUTH_SYS with a uid, a gid and a machine name.
#[derive(Clone, Debug)]
pub struct Credentials {
    /// User id.
    pub uid: u32,
    /// Primary group id.
    pub gid: u32,
    /// Supplementary groups (at most 16 go on the wire, RFC 5531 appendix A).
    pub gids: Vec<u32>,
    /// The machine name in the credential.
    pub machine: String,
}

impl Credentials {
    /// The credentials of this process (its effective uid and gid, and the host name).
    pub fn of_process() -> Self {
        Self {
            uid: rustix::process::geteuid().as_raw(),
            gid: rustix::process::getegid().as_raw(),
            gids: Vec::new(),
            machine: hostname(),
        }
    }

    /// The AUTH_SYS credential on the wire.
    pub(crate) fn to_auth(&self) -> OpaqueAuth {
        let p = AuthSysParms {
            stamp: 0,
            machinename: Utf8String::from(self.machine.as_str()),
            uid: self.uid,
            gid: self.gid,
            gids: self.gids.iter().take(16).copied().collect(),
        };
        OpaqueAuth::new(AuthFlavor::AUTH_SYS, xdr::to_bytes(&p))
    }
}

/// The host name (for AUTH_SYS and the client owner string), from uname(2).
pub(crate) fn hostname() -> String {
    let name = rustix::system::uname()
        .nodename()
        .to_string_lossy()
        .into_owned();
    if name.is_empty() {
        "localhost".to_string()
    } else {
        name
    }
}

/// How a session's connections are made.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Transport {
    /// A TCP connection with RPC record marking.
    Tcp,
    /// RPC-over-RDMA version 1 (RFC 8166).
    Rdma {
        /// The largest reply a call may get (the Reply chunk each call offers).
        max_reply: usize,
        /// Keep registered buffers for reuse.
        cache: bool,
    },
}

impl Transport {
    /// The transport `opts` ask for, for sessions with replies of up to `max_reply` bytes.
    pub(crate) fn of(opts: &crate::ClientOptions, max_reply: u32) -> Self {
        if opts.rdma {
            Transport::Rdma {
                max_reply: max_reply as usize,
                cache: opts.rdma_registration_cache,
            }
        } else {
            Transport::Tcp
        }
    }

    /// True for RPC-over-RDMA.
    pub(crate) fn is_rdma(&self) -> bool {
        matches!(self, Transport::Rdma { .. })
    }
}

/// The connection limits of the client's connections: a READ reply of the largest I/O size
/// plus headers; the server's replies beyond it close the connection instead of growing a
/// buffer without bound.
const LIMITS: ConnLimits = ConnLimits {
    max_fragment: 8 << 20,
    max_record: 8 << 20,
    max_in_flight: 64,
};

/// Opens a connection to `addr` over `transport` whose incoming calls (the back channel) go
/// to `handler`.
pub(crate) async fn dial<H: CallHandler>(
    addr: SocketAddr,
    transport: &Transport,
    handler: Arc<H>,
    connect_timeout: Duration,
) -> Result<Conn> {
    match transport {
        Transport::Tcp => dial_tcp(addr, handler, connect_timeout).await,
        Transport::Rdma { max_reply, cache } => {
            dial_rdma(addr, *max_reply, *cache, handler, connect_timeout).await
        }
    }
}

/// An RPC-over-RDMA connection to `addr`: the same call, reply and backchannel handling as
/// TCP (`start_records`), over the `rdma` crate's transport.
async fn dial_rdma<H: CallHandler>(
    addr: SocketAddr,
    max_reply: usize,
    cache: bool,
    handler: Arc<H>,
    connect_timeout: Duration,
) -> Result<Conn> {
    let cfg = rdma::client::Config {
        reply_chunk: max_reply.max(64 << 10),
        chunk_buffer: max_reply.max(64 << 10),
        cache,
        connect_timeout,
        ..rdma::client::Config::default()
    };
    let c = rdma::client::connect(addr, &cfg)
        .await
        .map_err(|source| Error::Connect { addr, source })?;
    let id = NEXT_CONN.fetch_add(1, Ordering::Relaxed);
    let (conn, run) = transport::start_records(
        c.records,
        c.sink,
        id,
        c.peer,
        c.local,
        handler,
        LIMITS,
        transport::ServerPolicy::default(),
    );
    tokio::spawn(async move {
        if let Err(e) = run.await {
            tracing::debug!(%addr, "RDMA connection {id} ended: {e}");
        }
    });
    Ok(conn)
}

/// The RDMA transport's counters of this process, as one line (`None` before any RDMA
/// connection).
pub fn rdma_stats() -> Option<String> {
    let s = rdma::client::stats();
    (s.connections.load(Ordering::Relaxed) > 0).then(|| s.to_string())
}

/// A TCP connection to `addr`.
async fn dial_tcp<H: CallHandler>(
    addr: SocketAddr,
    handler: Arc<H>,
    connect_timeout: Duration,
) -> Result<Conn> {
    let sock =
        match tokio::time::timeout(connect_timeout, tokio::net::TcpStream::connect(addr)).await {
            Ok(Ok(s)) => s,
            Ok(Err(source)) => return Err(Error::Connect { addr, source }),
            Err(_) => {
                return Err(Error::Connect {
                    addr,
                    source: std::io::Error::new(std::io::ErrorKind::TimedOut, "connect timed out"),
                })
            }
        };
    let _ = sock.set_nodelay(true);
    let local = sock
        .local_addr()
        .map_err(|source| Error::Connect { addr, source })?;
    let id = NEXT_CONN.fetch_add(1, Ordering::Relaxed);
    let (conn, run) = transport::start(sock, id, addr, local, handler, LIMITS);
    tokio::spawn(async move {
        if let Err(e) = run.await {
            tracing::debug!(%addr, "connection {id} ended: {e}");
        }
    });
    Ok(conn)
}

/// Sends one COMPOUND and decodes the reply. `timeout` bounds the wait for the reply; a
/// timeout is reported as a closed connection (the caller reconnects and re-sends on the same
/// slot, which the server's reply cache makes safe).
pub(crate) async fn compound(
    conn: &Conn,
    cred: &OpaqueAuth,
    minorversion: u32,
    ops: Vec<NfsArgop4>,
    timeout: Duration,
) -> Result<Compound4Res> {
    let addr = conn.peer();
    let args = Compound4Args {
        tag: Utf8String::from(""),
        minorversion,
        argarray: ops,
    };
    let mut e = Encoder::new();
    args.encode(&mut e);
    let call = conn.call(
        NFS4_PROGRAM,
        NFS_V4,
        NFSPROC4_COMPOUND,
        cred.clone(),
        e.into_pieces(),
    );
    let body = match tokio::time::timeout(timeout, call).await {
        Ok(Ok(body)) => body,
        Ok(Err(source)) => return Err(Error::Rpc { addr, source }),
        Err(_) => {
            return Err(Error::Rpc {
                addr,
                source: CallError::Closed,
            })
        }
    };
    xdr::from_bytes::<Compound4Res>(body).map_err(|source| Error::Decode { addr, source })
}

/// True for an RPC failure after which re-sending on a new connection may succeed.
pub(crate) fn is_connection_lost(e: &Error) -> bool {
    matches!(
        e,
        Error::Rpc {
            source: CallError::Closed,
            ..
        } | Error::Connect { .. }
    )
}

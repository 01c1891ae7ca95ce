//! How the MDS reaches a data server's control service: over TCP in production
//! ([`TcpConnector`]); the test kit's in-memory cluster injects a [`DsConnector`] of its own
//! that hands back in-process streams, so the same control client ([`crate::pnfs::dsctl`]) and
//! device registry ([`crate::pnfs::devices`]) run without sockets.

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;

use tokio::io::{AsyncRead, AsyncWrite};

/// A byte stream to a data server's control service.
pub trait CtlStream: AsyncRead + AsyncWrite + Send + Unpin + 'static {}

impl<T: AsyncRead + AsyncWrite + Send + Unpin + 'static> CtlStream for T {}

/// A connected control stream and the local address it is from (for logs).
pub struct Connected {
    /// The stream.
    pub stream: Box<dyn CtlStream>,
    /// This end's address.
    pub local: SocketAddr,
}

impl std::fmt::Debug for Connected {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connected")
            .field("local", &self.local)
            .finish_non_exhaustive()
    }
}

/// What [`DsConnector::connect`] returns.
pub type ConnectFuture<'a> = Pin<Box<dyn Future<Output = io::Result<Connected>> + Send + 'a>>;

/// Opens connections to data servers' control services.
pub trait DsConnector: Send + Sync + 'static {
    /// A connection to the control service of data server `ds_id` at `addr` (the caller
    /// bounds the wait).
    fn connect(&self, addr: SocketAddr, ds_id: u16) -> ConnectFuture<'_>;
}

/// Connects over TCP (with `TCP_NODELAY`: control calls are small and waited for).
#[derive(Debug, Default, Clone, Copy)]
pub struct TcpConnector;

impl DsConnector for TcpConnector {
    fn connect(&self, addr: SocketAddr, _ds_id: u16) -> ConnectFuture<'_> {
        Box::pin(async move {
            let stream = tokio::net::TcpStream::connect(addr).await?;
            let _ = stream.set_nodelay(true);
            let local = stream.local_addr()?;
            Ok(Connected {
                stream: Box::new(stream),
                local,
            })
        })
    }
}

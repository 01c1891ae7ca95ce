//! Memory for the bulk data of replies (READ results) that a transport can send as it is.
//!
//! Over TCP any memory will do: the kernel copies it into the socket. Over RPC-over-RDMA the
//! data must sit in memory registered with the connection's protection domain to be
//! RDMA-written into the client's Write chunk; a READ placed in ordinary memory is copied into
//! a registered buffer first. A transport that can avoid that copy hands out
//! [`PayloadBuffers`] ([`crate::transport::Conn::payload_buffers`]), and a server `pread`s
//! straight into them.

use std::sync::Arc;

use bytes::Bytes;

/// Hands out buffers a connection sends without copying.
pub trait PayloadBuffers: Send + Sync + 'static {
    /// A buffer of `len` bytes (contents unspecified), or `None` when none can be had (the
    /// caller then uses ordinary memory: the transport copies it).
    fn take(&self, len: usize) -> Option<PayloadBuf>;
}

/// Shared handle on a connection's [`PayloadBuffers`].
pub type SharedPayloadBuffers = Arc<dyn PayloadBuffers>;

/// The memory of one [`PayloadBuf`], as a transport implements it.
pub trait PayloadMemory: Send + 'static {
    /// All of the buffer, to fill.
    fn space(&mut self) -> &mut [u8];

    /// The first `len` bytes, frozen: the memory goes back to its transport when the last
    /// `Bytes` of it is dropped.
    fn freeze(self: Box<Self>, len: usize) -> Bytes;
}

/// A buffer from [`PayloadBuffers::take`]: fill it, then [`PayloadBuf::freeze`] what was
/// filled and put that in the reply.
pub struct PayloadBuf(Box<dyn PayloadMemory>);

impl PayloadBuf {
    /// Wraps a transport's memory.
    pub fn new(memory: Box<dyn PayloadMemory>) -> Self {
        Self(memory)
    }

    /// The whole buffer, to fill.
    pub fn space(&mut self) -> &mut [u8] {
        self.0.space()
    }

    /// The first `len` bytes (at most the buffer's size) as the reply's data.
    pub fn freeze(self, len: usize) -> Bytes {
        self.0.freeze(len)
    }
}

impl std::fmt::Debug for PayloadBuf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PayloadBuf")
    }
}

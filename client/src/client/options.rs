//! What a caller tells a [`Client`] (its options, how to open a file) and plain values it
//! gets back (directory entries, lock modes).

use super::*;

/// How a [`Client`] behaves.
#[derive(Clone, Debug)]
pub struct ClientOptions {
    /// Who the requests are from.
    pub credentials: Credentials,
    /// Fore channel slots asked of each server (requests in flight per session).
    pub slots: u32,
    /// How long one reply may take before the connection is considered lost.
    pub rpc_timeout: Duration,
    /// How long to keep retrying through reconnects, NFS4ERR_DELAY and a server's grace
    /// period before an operation fails.
    pub retry_limit: Duration,
    /// How long cached attributes are trusted (the bounded attribute cache).
    pub attr_timeout: Duration,
    /// Dirty bytes buffered per open file before they are sent: each half goes out in the
    /// background once full, two at a time.
    pub write_back: usize,
    /// Cached read bytes per open file before the cache is emptied.
    pub read_cache: usize,
    /// Bytes sent and not known stable that a long write keeps per open file (about): past
    /// half of it they are COMMITted in the background, beside the next sends, and freed
    /// once stable, so a long write's memory stays bounded.
    pub commit_every: usize,
    /// Ask the MDS for file layouts and do I/O straight to the data servers.
    pub pnfs: bool,
    /// RPCs in flight per data server.
    pub ds_in_flight: usize,
    /// Largest READ or WRITE (bytes); the session's limits may lower it.
    pub io_size: u32,
    /// Accept delegations (RFC 8881 section 10.4): OPEN leaves the choice to the server
    /// instead of saying WANT_NO_DELEG, and while one is held the file's opens and closes
    /// stay local and its attributes and read cache need no revalidation.
    pub delegations: bool,
    /// **Fault injection, for tests only.** Answer CB_RECALL with NFS4_OK and never return
    /// the delegation, as a client that lost its way would: the server then revokes it
    /// after about a lease (RFC 8881 section 10.4.5), which is what a test of that path
    /// needs to see. Never set it otherwise: other clients wait a lease for the file.
    pub ignore_recalls: bool,
    /// How long an asynchronous server-side copy waits for its CB_OFFLOAD before asking
    /// the server with OFFLOAD_STATUS (and again every as long until it ends): the back
    /// channel may be down, or the server may not send it.
    pub offload_poll: Duration,
    /// **Fault injection, for tests only.** Answer CB_OFFLOAD with NFS4_OK and drop it, as
    /// a back channel that loses it would: asynchronous copies then learn their outcome
    /// from OFFLOAD_STATUS.
    pub ignore_offload_callbacks: bool,
    /// Connect over RPC-over-RDMA (RFC 8166) instead of TCP: to the MDS, and to the data
    /// servers at their `rdma` addresses when GETDEVICEINFO lists some (TCP otherwise).
    /// Needs the crate's `rdma` feature.
    pub rdma: bool,
    /// With `rdma`: keep registered buffers for reuse (the registration cache). Off, every
    /// Read chunk and Reply chunk is registered for its one call (for measurements).
    pub rdma_registration_cache: bool,
}

impl Default for ClientOptions {
    fn default() -> Self {
        Self {
            credentials: Credentials::of_process(),
            slots: 32,
            rpc_timeout: Duration::from_secs(60),
            retry_limit: Duration::from_secs(180),
            attr_timeout: Duration::from_secs(3),
            write_back: 32 << 20,
            read_cache: 64 << 20,
            commit_every: 64 << 20,
            pnfs: true,
            ds_in_flight: 8,
            io_size: 1 << 20,
            delegations: true,
            ignore_recalls: false,
            offload_poll: Duration::from_secs(5),
            ignore_offload_callbacks: false,
            rdma: false,
            rdma_registration_cache: true,
        }
    }
}

/// One entry of a directory.
#[derive(Clone, Debug)]
pub struct DirEntry {
    /// Its name.
    pub name: String,
    /// Its attributes (absent when the server could not give them).
    pub meta: Option<Metadata>,
}

/// Lock modes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LockKind {
    /// Shared (read) lock.
    Read,
    /// Exclusive (write) lock.
    Write,
}

/// How to open a file.
#[derive(Clone, Debug)]
pub struct OpenOptions {
    /// Open for reading.
    pub read: bool,
    /// Open for writing.
    pub write: bool,
    /// Create the file when missing.
    pub create: bool,
    /// Fail when the file exists (with `create`).
    pub exclusive: bool,
    /// Truncate to 0 on open (needs `write`).
    pub truncate: bool,
    /// Mode of a created file.
    pub mode: u32,
}

impl OpenOptions {
    /// Read-only.
    pub fn read() -> Self {
        Self {
            read: true,
            write: false,
            create: false,
            exclusive: false,
            truncate: false,
            mode: 0o644,
        }
    }

    /// Read-write, creating or truncating (as `O_RDWR|O_CREAT|O_TRUNC`).
    pub fn create() -> Self {
        Self {
            read: true,
            write: true,
            create: true,
            exclusive: false,
            truncate: true,
            mode: 0o644,
        }
    }

    /// Read-write of an existing file.
    pub fn read_write() -> Self {
        Self {
            write: true,
            ..Self::read()
        }
    }
}

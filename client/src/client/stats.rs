//! What the client has done ([`Stats`]) and the counters behind it.

use super::*;

/// What the client has done, for tests and `--verbose` output.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Bytes written through the MDS (WRITE to the MDS).
    pub mds_bytes_written: u64,
    /// Bytes read through the MDS.
    pub mds_bytes_read: u64,
    /// Bytes written to data servers.
    pub ds_bytes_written: u64,
    /// Bytes read from data servers.
    pub ds_bytes_read: u64,
    /// Layouts granted.
    pub layouts: u64,
    /// Writes re-sent after a write verifier changed.
    pub rewrites: u64,
    /// Times a data server failed and I/O went through the MDS instead.
    pub fallbacks: u64,
    /// Reads a data server sent to the MDS because it could not tell where the file ends.
    pub reads_at_end: u64,
    /// Layouts returned because the server recalled them.
    pub recalls: u64,
    /// Recoveries of state after the server lost it.
    pub recoveries: u64,
    /// Delegations granted (RFC 8881 section 10.4).
    pub delegations: u64,
    /// Delegations held now.
    pub delegations_held: u64,
    /// CB_RECALLs of a delegation held (answered, and the delegation returned unless
    /// `ignore_recalls` is set).
    pub delegations_recalled: u64,
    /// Delegations given back with DELEGRETURN (recalled, or given up by this client).
    pub delegations_returned: u64,
    /// Delegations the server revoked (or lost, outside a grace period).
    pub delegations_revoked: u64,
    /// Opens made under a delegation, with no OPEN sent.
    pub delegated_opens: u64,
    /// Server-side copies (COPY, RFC 7862 section 15.2) that ended well: their bytes moved
    /// inside the server and are in none of the byte counters above.
    pub server_copies: u64,
    /// Bytes those copies moved.
    pub server_copy_bytes: u64,
    /// Of `server_copies`, those the server ran asynchronously (ended by CB_OFFLOAD or
    /// found ended with OFFLOAD_STATUS).
    pub server_copies_async: u64,
    /// CB_OFFLOADs that ended a copy this client waited for.
    pub offload_callbacks: u64,
    /// OFFLOAD_STATUS requests sent while waiting for a CB_OFFLOAD.
    pub offload_polls: u64,
    /// LISTXATTRS requests sent: a listing of many names takes several pages.
    pub xattr_list_pages: u64,
}

/// Counters behind [`Stats`].
#[derive(Default, Debug)]
pub(crate) struct Counters {
    pub mds_bytes_written: AtomicU64,
    pub mds_bytes_read: AtomicU64,
    pub ds_bytes_written: AtomicU64,
    pub ds_bytes_read: AtomicU64,
    pub layouts: AtomicU64,
    pub rewrites: AtomicU64,
    pub fallbacks: AtomicU64,
    pub reads_at_end: AtomicU64,
    pub recalls: AtomicU64,
    pub recoveries: AtomicU64,
    pub delegations: AtomicU64,
    pub delegations_recalled: AtomicU64,
    pub delegations_returned: AtomicU64,
    pub delegations_revoked: AtomicU64,
    pub delegated_opens: AtomicU64,
    pub server_copies: AtomicU64,
    pub server_copy_bytes: AtomicU64,
    pub server_copies_async: AtomicU64,
    pub offload_callbacks: AtomicU64,
    pub offload_polls: AtomicU64,
    pub xattr_list_pages: AtomicU64,
}

impl Counters {
    pub(crate) fn add(c: &AtomicU64, n: u64) {
        c.fetch_add(n, Ordering::Relaxed);
    }

    pub(super) fn snapshot(&self, delegations_held: u64) -> Stats {
        let g = |c: &AtomicU64| c.load(Ordering::Relaxed);
        Stats {
            mds_bytes_written: g(&self.mds_bytes_written),
            mds_bytes_read: g(&self.mds_bytes_read),
            ds_bytes_written: g(&self.ds_bytes_written),
            ds_bytes_read: g(&self.ds_bytes_read),
            layouts: g(&self.layouts),
            rewrites: g(&self.rewrites),
            fallbacks: g(&self.fallbacks),
            reads_at_end: g(&self.reads_at_end),
            recalls: g(&self.recalls),
            recoveries: g(&self.recoveries),
            delegations: g(&self.delegations),
            delegations_held,
            delegations_recalled: g(&self.delegations_recalled),
            delegations_returned: g(&self.delegations_returned),
            delegations_revoked: g(&self.delegations_revoked),
            delegated_opens: g(&self.delegated_opens),
            server_copies: g(&self.server_copies),
            server_copy_bytes: g(&self.server_copy_bytes),
            server_copies_async: g(&self.server_copies_async),
            offload_callbacks: g(&self.offload_callbacks),
            offload_polls: g(&self.offload_polls),
            xattr_list_pages: g(&self.xattr_list_pages),
        }
    }
}

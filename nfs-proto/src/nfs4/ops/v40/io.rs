//! File data: READ, WRITE and COMMIT.

use super::*;

// ---------------------------------------------------------------------------------------------
// COMMIT (5)
// ---------------------------------------------------------------------------------------------

/// COMMIT arguments (RFC 8881 section 18.3).
#[doc(alias = "COMMIT4args")]
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, Xdr)]
pub struct CommitArgs {
    /// Start of the range to commit.
    pub offset: Offset4,
    /// Length of the range (0 for the rest of the file).
    pub count: Count4,
}

/// COMMIT result body (RFC 8881 section 18.3).
#[doc(alias = "COMMIT4resok")]
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, Xdr)]
pub struct CommitResOk {
    /// The write verifier.
    pub writeverf: Verifier4,
}

crate::nfs_res! {
    /// COMMIT result (RFC 8881 section 18.3).
    #[doc(alias = "COMMIT4res")]
    pub enum CommitRes => CommitResOk
}

// ---------------------------------------------------------------------------------------------
// READ (25)
// ---------------------------------------------------------------------------------------------

/// READ arguments (RFC 8881 section 18.22).
#[doc(alias = "READ4args")]
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, Xdr)]
pub struct ReadArgs {
    /// The open, lock or delegation stateid (or a special stateid).
    pub stateid: Stateid4,
    /// Where to read.
    pub offset: Offset4,
    /// How many bytes at most.
    pub count: Count4,
}

/// READ result body (RFC 8881 section 18.22).
#[doc(alias = "READ4resok")]
#[derive(Clone, PartialEq, Eq, Debug, Default, Xdr)]
pub struct ReadResOk {
    /// Whether the read reached the end of the file.
    pub eof: bool,
    /// The data, kept as its own piece when encoded.
    #[xdr(payload)]
    pub data: Bytes,
}

crate::nfs_res! {
    /// READ result (RFC 8881 section 18.22).
    #[doc(alias = "READ4res")]
    pub enum ReadRes => ReadResOk
}

// ---------------------------------------------------------------------------------------------
// WRITE (38)
// ---------------------------------------------------------------------------------------------

/// WRITE arguments (RFC 8881 section 18.32).
#[doc(alias = "WRITE4args")]
#[derive(Clone, PartialEq, Eq, Debug, Xdr)]
pub struct WriteArgs {
    /// The open, lock or delegation stateid (or a special stateid).
    pub stateid: Stateid4,
    /// Where to write.
    pub offset: Offset4,
    /// How stable the data must be before the reply.
    pub stable: StableHow4,
    /// The data, kept as its own piece when encoded.
    #[xdr(payload)]
    pub data: Bytes,
}

/// WRITE result body (RFC 8881 section 18.32).
#[doc(alias = "WRITE4resok")]
#[derive(Clone, Copy, PartialEq, Eq, Debug, Xdr)]
pub struct WriteResOk {
    /// Bytes written.
    pub count: Count4,
    /// How stable the data is.
    pub committed: StableHow4,
    /// The write verifier.
    pub writeverf: Verifier4,
}

crate::nfs_res! {
    /// WRITE result (RFC 8881 section 18.32).
    #[doc(alias = "WRITE4res")]
    pub enum WriteRes => WriteResOk
}

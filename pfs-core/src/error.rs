//! Errors of the object store.
//!
//! They say what failed in storage terms (space, quota, read-only, size, an errno); which
//! protocol status each one becomes is decided by the protocol's side
//! (`nfs_server::io::store_status` for NFS replies, `data_server::control` for the control
//! protocol), so this crate knows no protocol numbers.

use rustix::io::Errno;

/// What can fail in an object store operation.
///
/// Each variant is one kind of failure a reply can tell apart; the errno of an unexpected
/// failure is kept so logs can say what the kernel said.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum StoreError {
    /// A system call failed in a way that has no better status (`EIO`, `EBADF`, ...).
    #[error("object store I/O error in {op}: {errno}")]
    Io {
        /// The operation that failed (`"pwritev"`, `"fdatasync"`, ...), for the log.
        op: &'static str,
        /// What the kernel said.
        errno: Errno,
    },
    /// The file system is full (`ENOSPC`).
    #[error("no space left for object data")]
    NoSpace,
    /// The owner's quota is exhausted (`EDQUOT`).
    #[error("disk quota exceeded")]
    QuotaExceeded,
    /// The backing file system is read-only (`EROFS`).
    #[error("object store is read-only")]
    ReadOnly,
    /// `offset + len` overflows, exceeds the store's maximum object size, or the kernel said
    /// `EFBIG`.
    #[error("object range {offset}+{len} beyond the maximum object size")]
    TooBig {
        /// Start of the refused range.
        offset: u64,
        /// Length of the refused range.
        len: u64,
    },
    /// This backend cannot do the operation (e.g. `allocate` where `fallocate` is missing).
    #[error("operation not supported by this object store")]
    NotSupported,
}

impl StoreError {
    /// Classifies an errno from `op`: space, quota, read-only, size and unsupported
    /// operations get their own variants, everything else is [`StoreError::Io`].
    pub fn from_errno(op: &'static str, errno: Errno, offset: u64, len: u64) -> Self {
        match errno {
            Errno::NOSPC => StoreError::NoSpace,
            Errno::DQUOT => StoreError::QuotaExceeded,
            Errno::ROFS => StoreError::ReadOnly,
            Errno::FBIG => StoreError::TooBig { offset, len },
            Errno::OPNOTSUPP | Errno::NOSYS => StoreError::NotSupported,
            errno => StoreError::Io { op, errno },
        }
    }
}

/// Result of an object store operation.
pub type Result<T, E = StoreError> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errnos_with_their_own_variant_are_classified() {
        let s = |e| StoreError::from_errno("pwritev", e, 1, 2);
        assert_eq!(s(Errno::NOSPC), StoreError::NoSpace);
        assert_eq!(s(Errno::DQUOT), StoreError::QuotaExceeded);
        assert_eq!(s(Errno::ROFS), StoreError::ReadOnly);
        assert_eq!(s(Errno::FBIG), StoreError::TooBig { offset: 1, len: 2 });
        assert_eq!(
            s(Errno::IO),
            StoreError::Io {
                op: "pwritev",
                errno: Errno::IO
            }
        );
        assert_eq!(
            s(Errno::BADF),
            StoreError::Io {
                op: "pwritev",
                errno: Errno::BADF
            }
        );
        assert_eq!(s(Errno::OPNOTSUPP), StoreError::NotSupported);
        assert_eq!(s(Errno::NOSYS), StoreError::NotSupported);
    }

    #[test]
    fn efbig_keeps_the_refused_range() {
        assert_eq!(
            StoreError::from_errno("pwritev", Errno::FBIG, 7, 9),
            StoreError::TooBig { offset: 7, len: 9 }
        );
    }

    #[test]
    fn io_error_says_which_call_failed() {
        let e = StoreError::from_errno("fdatasync", Errno::IO, 0, 0);
        assert!(e.to_string().contains("fdatasync"), "{e}");
    }
}

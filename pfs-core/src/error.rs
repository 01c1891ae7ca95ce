//! Errors of the object store and their NFS status numbers.
//!
//! `pfs-core` does not depend on `nfs-proto`, so the mapping to `nfsstat4` is given as plain
//! `u32` constants with the values of RFC 8881 section 15.1 (`NFS4ERR_IO` = 5 ...). Callers
//! wrap the number with `NfsStat4(err.nfs_status())`.

use rustix::io::Errno;

/// `NFS4ERR_IO` (RFC 8881 section 15.1.4.6): a hard I/O error.
pub const NFS4ERR_IO: u32 = 5;
/// `NFS4ERR_FBIG` (RFC 8881 section 15.1.4.4): the file would grow beyond the server's limit.
pub const NFS4ERR_FBIG: u32 = 27;
/// `NFS4ERR_NOSPC` (RFC 8881 section 15.1.4.11): no space left on the device.
pub const NFS4ERR_NOSPC: u32 = 28;
/// `NFS4ERR_ROFS` (RFC 8881 section 15.1.4.12): the file system is mounted read-only.
pub const NFS4ERR_ROFS: u32 = 30;
/// `NFS4ERR_DQUOT` (RFC 8881 section 15.1.4.2): the owner's quota is exhausted.
pub const NFS4ERR_DQUOT: u32 = 69;
/// `NFS4ERR_NOTSUPP` (RFC 8881 section 15.1.1.5): the operation is not supported here.
pub const NFS4ERR_NOTSUPP: u32 = 10004;

/// What can fail in an object store operation.
///
/// Every variant maps to one NFS status with [`StoreError::nfs_status`]; the errno of an
/// unexpected failure is kept so logs can say what the kernel said.
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
    /// Classifies an errno from `op`: space, quota, read-only and size errors get their own
    /// variants (and NFS statuses), everything else is [`StoreError::Io`].
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

    /// The `nfsstat4` value for this error, so a WRITE/READ/COMMIT reply can carry it:
    ///
    /// | error | status |
    /// |---|---|
    /// | `Io` | `NFS4ERR_IO` = 5 |
    /// | `TooBig` | `NFS4ERR_FBIG` = 27 |
    /// | `NoSpace` | `NFS4ERR_NOSPC` = 28 |
    /// | `ReadOnly` | `NFS4ERR_ROFS` = 30 |
    /// | `QuotaExceeded` | `NFS4ERR_DQUOT` = 69 |
    /// | `NotSupported` | `NFS4ERR_NOTSUPP` = 10004 |
    pub fn nfs_status(&self) -> u32 {
        match self {
            StoreError::Io { .. } => NFS4ERR_IO,
            StoreError::NoSpace => NFS4ERR_NOSPC,
            StoreError::QuotaExceeded => NFS4ERR_DQUOT,
            StoreError::ReadOnly => NFS4ERR_ROFS,
            StoreError::TooBig { .. } => NFS4ERR_FBIG,
            StoreError::NotSupported => NFS4ERR_NOTSUPP,
        }
    }
}

/// Result of an object store operation.
pub type Result<T, E = StoreError> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errnos_with_their_own_nfs_status_are_classified() {
        let s = |e| StoreError::from_errno("pwritev", e, 1, 2).nfs_status();
        assert_eq!(s(Errno::NOSPC), 28);
        assert_eq!(s(Errno::DQUOT), 69);
        assert_eq!(s(Errno::ROFS), 30);
        assert_eq!(s(Errno::FBIG), 27);
        assert_eq!(s(Errno::IO), 5);
        assert_eq!(s(Errno::BADF), 5);
        assert_eq!(s(Errno::OPNOTSUPP), 10004);
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

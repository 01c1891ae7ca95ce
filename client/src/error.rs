//! What can go wrong talking to a server, as one typed error.
//!
//! The server's own answers keep their NFS status and the operation that failed, so a caller
//! (and the `pnfs` command line) can name them: `OPEN: NFS4ERR_NOENT`.

use std::io;
use std::net::SocketAddr;

use nfs_proto::nfs4::{NfsOpnum4, NfsStat4};
use nfs_proto::transport::CallError;
use nfs_proto::xdr::DecodeError;

/// The library's error.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The server answered an operation with an error status.
    #[error("{}: {status}", op_name(*.op))]
    Nfs {
        /// The operation that failed.
        op: NfsOpnum4,
        /// Its status.
        status: NfsStat4,
    },
    /// No TCP connection to the server.
    #[error("connecting to {addr}: {source}")]
    Connect {
        /// Where.
        addr: SocketAddr,
        /// Why.
        source: io::Error,
    },
    /// The RPC layer failed: the connection closed for good, or the server refused the call
    /// (PROG_UNAVAIL, AUTH_ERROR, ...).
    #[error("RPC to {addr}: {source}")]
    Rpc {
        /// The server.
        addr: SocketAddr,
        /// What the RPC layer said.
        source: CallError,
    },
    /// The reply did not decode.
    #[error("the reply of {addr} does not decode: {source}")]
    Decode {
        /// The server.
        addr: SocketAddr,
        /// The decoder's complaint.
        source: DecodeError,
    },
    /// The server's reply broke the protocol (a missing result, a result for another
    /// operation, a layout the client cannot use, ...).
    #[error("protocol violation by {addr}: {what}")]
    Protocol {
        /// The server.
        addr: SocketAddr,
        /// What was wrong.
        what: String,
    },
    /// The server did not answer in time, or kept answering NFS4ERR_DELAY / NFS4ERR_GRACE.
    #[error("{addr} did not answer within {secs} s ({what})")]
    Timeout {
        /// The server.
        addr: SocketAddr,
        /// Seconds waited.
        secs: u64,
        /// What was being waited for.
        what: &'static str,
    },
    /// A bad argument from the caller (an empty name, a path through a regular file, ...).
    #[error("{0}")]
    Invalid(String),
    /// An extended attribute name longer than [`crate::MAX_XATTR_NAME`] bytes (with
    /// `user.` in front, longer than Linux's `XATTR_NAME_MAX`), refused before sending:
    /// ERANGE, as the Linux VFS answers such a name.
    #[error(
        "an extended attribute name of {len} bytes (at most {} without `user.`)",
        crate::MAX_XATTR_NAME
    )]
    XattrNameTooLong {
        /// Its length in bytes.
        len: usize,
    },
    /// An extended attribute value larger than [`crate::MAX_XATTR_VALUE`] (Linux's
    /// `XATTR_SIZE_MAX`), refused before sending or when the server sent one, or a list of
    /// names past the client's bound: E2BIG, as `setxattr(2)`, `getxattr(2)` and
    /// `listxattr(2)` answer.
    #[error("{what} is too large")]
    XattrTooBig {
        /// What was too large.
        what: String,
    },
    /// Writes made under a write delegation that the server revoked (the client did not
    /// return it in time) and not yet sent when it was revoked: another client may have
    /// changed the file since, so they are dropped, not sent (RFC 8881 section 10.5.1).
    #[error(
        "{path}: the server revoked this client's write delegation; {bytes} bytes written \
         under it were not yet sent and are lost"
    )]
    DataLost {
        /// The file's path as it was opened.
        path: String,
        /// Bytes dropped.
        bytes: u64,
    },
    /// A wait for a lock ended because its caller said to stop waiting (the `keep_waiting`
    /// of [`File::lock_as`](crate::File::lock_as): a signal interrupted fcntl's F_SETLKW).
    #[error("the wait for a lock was interrupted")]
    Interrupted,
    /// A local I/O error (reading or writing a local file in `cp`).
    #[error(transparent)]
    Io(#[from] io::Error),
}

/// An operation's name as RFC 8881 writes it (`OPEN`, not the enum's `OP_OPEN`).
fn op_name(op: NfsOpnum4) -> String {
    let s = op.to_string();
    s.strip_prefix("OP_").map(str::to_string).unwrap_or(s)
}

impl Error {
    /// The NFS status, when the server answered with one.
    pub fn nfs_status(&self) -> Option<NfsStat4> {
        match self {
            Self::Nfs { status, .. } => Some(*status),
            _ => None,
        }
    }

    /// True when the error is the server's `status`.
    pub fn is(&self, status: NfsStat4) -> bool {
        self.nfs_status() == Some(status)
    }

    /// True for errors that mean the state the request used (open, lock or layout stateid)
    /// is gone and must be recovered or re-established: after a server restart, a lease
    /// expiry or a revocation.
    pub fn is_state_lost(&self) -> bool {
        matches!(
            self.nfs_status(),
            Some(
                NfsStat4::NFS4ERR_BAD_STATEID
                    | NfsStat4::NFS4ERR_STALE_STATEID
                    | NfsStat4::NFS4ERR_EXPIRED
                    | NfsStat4::NFS4ERR_ADMIN_REVOKED
                    | NfsStat4::NFS4ERR_DELEG_REVOKED
                    | NfsStat4::NFS4ERR_STALE_CLIENTID
                    | NfsStat4::NFS4ERR_BADSESSION
                    | NfsStat4::NFS4ERR_DEADSESSION
            )
        )
    }

    /// A data server says the layout the I/O went through is gone (RFC 8881 section 13.6:
    /// no I/O without a layout): the I/O is to be sent again under a new layout, or through
    /// the MDS.
    pub fn is_layout_gone(&self) -> bool {
        self.nfs_status() == Some(NfsStat4::NFS4ERR_PNFS_NO_LAYOUT)
    }

    /// A data server cannot tell where the file ends in the range read
    /// (`NFS4ERR_NXIO` from a data server's READ: docs/design.md, "End of file on the data
    /// servers"): the read is to be sent to the MDS, and the layout stays good.
    pub fn is_read_at_end(&self) -> bool {
        self.nfs_status() == Some(NfsStat4::NFS4ERR_NXIO)
    }

    /// The server cannot copy these files itself ([`crate::File::copy_to`]), and the caller
    /// should copy through the client instead: COPY not supported (NFS4ERR_NOTSUPP, or
    /// NFS4ERR_OP_ILLEGAL from a server that does not know the operation, or no NFSv4.2 at
    /// all: NFS4ERR_MINOR_VERS_MISMATCH), not with the requirements asked
    /// (NFS4ERR_OFFLOAD_NO_REQS), refused by policy (NFS4ERR_OFFLOAD_DENIED), or files of
    /// two file systems (NFS4ERR_XDEV).
    pub fn is_no_server_copy(&self) -> bool {
        matches!(
            self.nfs_status(),
            Some(
                NfsStat4::NFS4ERR_NOTSUPP
                    | NfsStat4::NFS4ERR_OP_ILLEGAL
                    | NfsStat4::NFS4ERR_MINOR_VERS_MISMATCH
                    | NfsStat4::NFS4ERR_OFFLOAD_NO_REQS
                    | NfsStat4::NFS4ERR_OFFLOAD_DENIED
                    | NfsStat4::NFS4ERR_XDEV
            )
        )
    }

    /// The server does not have the operation or attribute asked for: NFS4ERR_NOTSUPP,
    /// NFS4ERR_ATTRNOTSUPP, NFS4ERR_OP_ILLEGAL (an operation it does not know), or
    /// NFS4ERR_MINOR_VERS_MISMATCH (no NFSv4.2, for the operations sent in minor version
    /// 2). EOPNOTSUPP.
    pub fn is_unsupported(&self) -> bool {
        matches!(
            self.nfs_status(),
            Some(
                NfsStat4::NFS4ERR_NOTSUPP
                    | NfsStat4::NFS4ERR_ATTRNOTSUPP
                    | NfsStat4::NFS4ERR_OP_ILLEGAL
                    | NfsStat4::NFS4ERR_MINOR_VERS_MISMATCH
            )
        )
    }

    /// The errno a file system interface (FUSE, the CLI's exit) should report: the one
    /// place NFS status becomes errno, as the Linux client maps it (`nfs4_map_errors`,
    /// `nfs_errtbl`); what has no POSIX counterpart is EIO.
    pub fn errno(&self) -> i32 {
        const EIO: i32 = 5;
        let Some(s) = self.nfs_status() else {
            return match self {
                Self::Io(e) => e.raw_os_error().unwrap_or(EIO),
                Self::Invalid(_) => 22,
                Self::XattrNameTooLong { .. } => 34,
                Self::XattrTooBig { .. } => 7,
                Self::Timeout { .. } => 110,
                Self::Interrupted => 4,
                _ => EIO,
            };
        };
        match s {
            NfsStat4::NFS4ERR_PERM => 1,
            NfsStat4::NFS4ERR_NOENT => 2,
            // SEEK at or past the end of the file (RFC 7862 section 15.11.3), as `lseek(2)`
            // answers SEEK_DATA / SEEK_HOLE there.
            NfsStat4::NFS4ERR_NXIO => 6,
            NfsStat4::NFS4ERR_ACCESS => 13,
            NfsStat4::NFS4ERR_EXIST => 17,
            NfsStat4::NFS4ERR_XDEV => 18,
            NfsStat4::NFS4ERR_NOTDIR => 20,
            NfsStat4::NFS4ERR_ISDIR => 21,
            NfsStat4::NFS4ERR_INVAL
            | NfsStat4::NFS4ERR_BADNAME
            | NfsStat4::NFS4ERR_BADTYPE
            | NfsStat4::NFS4ERR_BADOWNER
            | NfsStat4::NFS4ERR_WRONG_TYPE => 22,
            NfsStat4::NFS4ERR_SYMLINK => 40,
            NfsStat4::NFS4ERR_FBIG => 27,
            NfsStat4::NFS4ERR_NOSPC => 28,
            NfsStat4::NFS4ERR_ROFS => 30,
            NfsStat4::NFS4ERR_MLINK => 31,
            NfsStat4::NFS4ERR_NAMETOOLONG => 36,
            NfsStat4::NFS4ERR_NOTEMPTY => 39,
            NfsStat4::NFS4ERR_DQUOT => 122,
            NfsStat4::NFS4ERR_STALE | NfsStat4::NFS4ERR_FHEXPIRED | NfsStat4::NFS4ERR_BADHANDLE => {
                116
            }
            NfsStat4::NFS4ERR_DENIED | NfsStat4::NFS4ERR_SHARE_DENIED => 11,
            // The Linux client maps NFS4ERR_OP_ILLEGAL to EOPNOTSUPP (`nfs4_errtbl`), and it
            // never meets NFS4ERR_MINOR_VERS_MISMATCH (it mounts with the server's minor
            // version); this client meets it when a server without NFSv4.2 is sent an
            // NFSv4.2 operation, which that server then does not support.
            _ if self.is_unsupported() => 95,
            // RFC 8276 section 8.4: no such attribute, and a value the server will not hold,
            // as the Linux client maps them (`nfs4_errtbl`).
            NfsStat4::NFS4ERR_NOXATTR => 61,
            NfsStat4::NFS4ERR_XATTR2BIG => 7,
            NfsStat4::NFS4ERR_OPENMODE => 9,
            _ => EIO,
        }
    }
}

/// Results of this library.
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    fn nfs(status: NfsStat4) -> i32 {
        Error::Nfs {
            op: NfsOpnum4::OP_LOOKUP,
            status,
        }
        .errno()
    }

    #[test]
    fn errno_follows_the_linux_client() {
        assert_eq!(nfs(NfsStat4::NFS4ERR_NOENT), 2);
        assert_eq!(nfs(NfsStat4::NFS4ERR_EXIST), 17);
        assert_eq!(nfs(NfsStat4::NFS4ERR_NOTEMPTY), 39);
        assert_eq!(nfs(NfsStat4::NFS4ERR_BADNAME), 22);
        assert_eq!(nfs(NfsStat4::NFS4ERR_SYMLINK), 40);
        assert_eq!(nfs(NfsStat4::NFS4ERR_FHEXPIRED), 116);
        assert_eq!(nfs(NfsStat4::NFS4ERR_DENIED), 11);
        assert_eq!(nfs(NfsStat4::NFS4ERR_OPENMODE), 9);
        assert_eq!(nfs(NfsStat4::NFS4ERR_SERVERFAULT), 5);
        assert_eq!(Error::Invalid("x".into()).errno(), 22);
        assert_eq!(Error::Interrupted.errno(), 4);
    }

    #[test]
    fn space_and_seek_errors_map_as_fallocate_and_lseek_answer() {
        assert_eq!(nfs(NfsStat4::NFS4ERR_NXIO), 6, "ENXIO");
        assert_eq!(nfs(NfsStat4::NFS4ERR_FBIG), 27, "EFBIG");
        assert_eq!(nfs(NfsStat4::NFS4ERR_NOSPC), 28, "ENOSPC");
        assert_eq!(nfs(NfsStat4::NFS4ERR_DQUOT), 122, "EDQUOT");
        // Opened without write access: EBADF, as fallocate(2) on such a descriptor.
        assert_eq!(nfs(NfsStat4::NFS4ERR_OPENMODE), 9, "EBADF");
        // A server without ALLOCATE, DEALLOCATE or SEEK, or without NFSv4.2.
        for s in [
            NfsStat4::NFS4ERR_NOTSUPP,
            NfsStat4::NFS4ERR_OP_ILLEGAL,
            NfsStat4::NFS4ERR_MINOR_VERS_MISMATCH,
        ] {
            let e = Error::Nfs {
                op: NfsOpnum4::OP_ALLOCATE,
                status: s,
            };
            assert!(e.is_unsupported(), "{s}");
            assert_eq!(e.errno(), 95, "{s}: EOPNOTSUPP");
        }
    }

    #[test]
    fn xattr_errors_map_as_the_linux_client_maps_them() {
        // RFC 8276 section 8.4's errors, as `nfs4_errtbl` maps them.
        assert_eq!(nfs(NfsStat4::NFS4ERR_NOXATTR), 61, "ENODATA");
        assert_eq!(nfs(NfsStat4::NFS4ERR_XATTR2BIG), 7, "E2BIG");
        // SETXATTR4_CREATE of an existing name; a list past the server's bound.
        assert_eq!(nfs(NfsStat4::NFS4ERR_EXIST), 17, "EEXIST");
        assert_eq!(nfs(NfsStat4::NFS4ERR_NOSPC), 28, "ENOSPC");
        // A name the server finds too long (Linux's `nfs_errtbl`).
        assert_eq!(nfs(NfsStat4::NFS4ERR_NAMETOOLONG), 36, "ENAMETOOLONG");
        // A server without the operations, or without NFSv4.2 at all.
        for s in [
            NfsStat4::NFS4ERR_NOTSUPP,
            NfsStat4::NFS4ERR_ATTRNOTSUPP,
            NfsStat4::NFS4ERR_OP_ILLEGAL,
            NfsStat4::NFS4ERR_MINOR_VERS_MISMATCH,
        ] {
            assert_eq!(nfs(s), 95, "{s}: EOPNOTSUPP");
        }
        // What the client refuses before sending, as the Linux VFS does.
        assert_eq!(Error::XattrNameTooLong { len: 300 }.errno(), 34, "ERANGE");
        let big = Error::XattrTooBig {
            what: "a value".into(),
        };
        assert_eq!(big.errno(), 7, "E2BIG");
        assert_eq!(big.to_string(), "a value is too large");
    }
}

//! The store's typed error and its mapping to `nfsstat4`.

use std::sync::Arc;

use nfs_proto::nfs4::NfsStat4;

use super::fh::FhError;

/// Why a store operation failed. Every variant names one `nfsstat4` (see the `From` impl below),
/// so the operation layer can reply without inspecting the cause.
#[derive(Debug, Clone, thiserror::Error)]
pub enum StoreError {
    /// The name is not in the directory; or LOOKUPP at the root (RFC 8881 section 18.14.3).
    #[error("no such name")]
    NoEnt,
    /// The name is already taken (CREATE, LINK, GUARDED/EXCLUSIVE OPEN, incompatible RENAME).
    #[error("name exists")]
    Exist,
    /// A directory operation on something that is not a directory.
    #[error("not a directory")]
    NotDir,
    /// A file operation on a directory (LINK of a directory, size change of a directory).
    #[error("is a directory")]
    IsDir,
    /// REMOVE of a directory that still has entries.
    #[error("directory not empty")]
    NotEmpty,
    /// The file id is gone, or the filehandle's generation is not the file's.
    #[error("stale file id {0}")]
    Stale(u64),
    /// The filehandle is not one this server made (length, version, kind or MAC).
    #[error("bad filehandle: {0}")]
    BadHandle(#[from] FhError),
    /// An argument the protocol forbids (zero-length name, mode bits above 07777, ...).
    #[error("invalid argument: {0}")]
    Inval(&'static str),
    /// A name the server will not store ("." or "..", a '/' or a NUL byte).
    #[error("bad name: {0}")]
    BadName(&'static str),
    /// A name longer than [`super::MAX_NAME_LEN`] bytes (or a symlink target over
    /// [`super::MAX_SYMLINK_LEN`]).
    #[error("name too long")]
    NameTooLong,
    /// A READDIR cookie this directory never issued (1, 2, or beyond the last one given out).
    #[error("readdir cookie {0} was never issued")]
    BadCookie(u64),
    /// LOOKUP through a symbolic link, or OPEN of one (RFC 8881 sections 18.13.3, 18.16.3).
    #[error("symbolic link")]
    Symlink,
    /// OPEN of an existing object that is neither a regular file, directory nor symlink.
    #[error("wrong object type")]
    WrongType,
    /// The link count would overflow.
    #[error("too many links")]
    MLink,
    /// A size beyond the largest file this server supports (`i64::MAX`).
    #[error("file too large")]
    FBig,
    /// The object has no extended attribute of that name (GETXATTR, REMOVEXATTR, SETXATTR
    /// with SETXATTR4_REPLACE; RFC 8276 section 8.4).
    #[error("no such extended attribute")]
    NoXattr,
    /// An extended attribute value larger than [`super::MAX_XATTR_VALUE_LEN`].
    #[error("extended attribute value too large")]
    Xattr2Big,
    /// A limit of the metadata store is reached (an object's extended attribute names would
    /// no longer fit one `listxattr(2)` buffer).
    #[error("no space: {0}")]
    NoSpace(&'static str),
    /// An object type that CREATE cannot make (named attributes).
    #[error("object type not supported")]
    BadType,
    /// A record on disk that does not decode, or a dangling reference between tables.
    #[error("corrupt store: {0}")]
    Corrupt(&'static str),
    /// The store file was written by a newer format than this build reads.
    #[error("unsupported store format version {0}")]
    Format(u32),
    /// redb failed (I/O, corruption it detected, file already open, ...).
    #[error("storage: {0}")]
    Storage(Arc<redb::Error>),
    /// An I/O error outside redb (reading /dev/urandom for the server key).
    #[error("i/o: {0}")]
    Io(Arc<std::io::Error>),
    /// The committer thread is gone (the store is shutting down or a job panicked it away).
    #[error("store closed")]
    Closed,
    /// A bug: a job panicked or broke an invariant of the committer.
    #[error("internal error: {0}")]
    Internal(&'static str),
}

impl StoreError {
    /// True when the store file is held by another open store: in one process, an earlier
    /// boot still closing on another thread (the test kit's MDS restart waits it out).
    pub fn is_already_open(&self) -> bool {
        matches!(self, Self::Storage(e) if matches!(**e, redb::Error::DatabaseAlreadyOpen))
    }

    /// True for failures of the storage itself rather than of the request.
    pub fn is_storage(&self) -> bool {
        matches!(
            self,
            Self::Storage(_) | Self::Io(_) | Self::Corrupt(_) | Self::Closed | Self::Internal(_)
        )
    }
}

impl From<StoreError> for NfsStat4 {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::NoEnt => NfsStat4::NFS4ERR_NOENT,
            StoreError::Exist => NfsStat4::NFS4ERR_EXIST,
            StoreError::NotDir => NfsStat4::NFS4ERR_NOTDIR,
            StoreError::IsDir => NfsStat4::NFS4ERR_ISDIR,
            StoreError::NotEmpty => NfsStat4::NFS4ERR_NOTEMPTY,
            StoreError::Stale(_) => NfsStat4::NFS4ERR_STALE,
            StoreError::BadHandle(e) => e.into(),
            StoreError::Inval(_) => NfsStat4::NFS4ERR_INVAL,
            StoreError::BadName(_) => NfsStat4::NFS4ERR_BADNAME,
            StoreError::NameTooLong => NfsStat4::NFS4ERR_NAMETOOLONG,
            StoreError::BadCookie(_) => NfsStat4::NFS4ERR_BAD_COOKIE,
            StoreError::Symlink => NfsStat4::NFS4ERR_SYMLINK,
            StoreError::WrongType => NfsStat4::NFS4ERR_WRONG_TYPE,
            StoreError::MLink => NfsStat4::NFS4ERR_MLINK,
            StoreError::FBig => NfsStat4::NFS4ERR_FBIG,
            StoreError::BadType => NfsStat4::NFS4ERR_BADTYPE,
            StoreError::NoXattr => NfsStat4::NFS4ERR_NOXATTR,
            StoreError::Xattr2Big => NfsStat4::NFS4ERR_XATTR2BIG,
            StoreError::NoSpace(_) => NfsStat4::NFS4ERR_NOSPC,
            StoreError::Corrupt(_) | StoreError::Io(_) => NfsStat4::NFS4ERR_IO,
            StoreError::Storage(e) => match &*e {
                redb::Error::Io(_) | redb::Error::PreviousIo | redb::Error::Corrupted(_) => {
                    NfsStat4::NFS4ERR_IO
                }
                _ => NfsStat4::NFS4ERR_SERVERFAULT,
            },
            StoreError::Format(_) | StoreError::Closed | StoreError::Internal(_) => {
                NfsStat4::NFS4ERR_SERVERFAULT
            }
        }
    }
}

impl From<redb::Error> for StoreError {
    fn from(e: redb::Error) -> Self {
        Self::Storage(Arc::new(e))
    }
}

macro_rules! from_redb {
    ($($t:ty),*) => {$(
        impl From<$t> for StoreError {
            fn from(e: $t) -> Self {
                Self::Storage(Arc::new(e.into()))
            }
        }
    )*};
}

from_redb!(
    redb::StorageError,
    redb::TableError,
    redb::TransactionError,
    redb::CommitError,
    redb::DatabaseError,
    redb::SetDurabilityError
);

impl From<std::io::Error> for StoreError {
    fn from(e: std::io::Error) -> Self {
        Self::Io(Arc::new(e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_error_maps_to_the_rfc_status() {
        let cases = [
            (StoreError::NoEnt, NfsStat4::NFS4ERR_NOENT),
            (StoreError::Exist, NfsStat4::NFS4ERR_EXIST),
            (StoreError::NotDir, NfsStat4::NFS4ERR_NOTDIR),
            (StoreError::IsDir, NfsStat4::NFS4ERR_ISDIR),
            (StoreError::NotEmpty, NfsStat4::NFS4ERR_NOTEMPTY),
            (StoreError::Stale(7), NfsStat4::NFS4ERR_STALE),
            (
                StoreError::BadHandle(FhError::Mac),
                NfsStat4::NFS4ERR_BADHANDLE,
            ),
            (StoreError::Inval("x"), NfsStat4::NFS4ERR_INVAL),
            (StoreError::BadName("x"), NfsStat4::NFS4ERR_BADNAME),
            (StoreError::NameTooLong, NfsStat4::NFS4ERR_NAMETOOLONG),
            (StoreError::BadCookie(1), NfsStat4::NFS4ERR_BAD_COOKIE),
            (StoreError::Symlink, NfsStat4::NFS4ERR_SYMLINK),
            (StoreError::WrongType, NfsStat4::NFS4ERR_WRONG_TYPE),
            (StoreError::MLink, NfsStat4::NFS4ERR_MLINK),
            (StoreError::FBig, NfsStat4::NFS4ERR_FBIG),
            (StoreError::BadType, NfsStat4::NFS4ERR_BADTYPE),
            (StoreError::NoXattr, NfsStat4::NFS4ERR_NOXATTR),
            (StoreError::Xattr2Big, NfsStat4::NFS4ERR_XATTR2BIG),
            (StoreError::NoSpace("x"), NfsStat4::NFS4ERR_NOSPC),
            (StoreError::Corrupt("x"), NfsStat4::NFS4ERR_IO),
            (StoreError::Format(9), NfsStat4::NFS4ERR_SERVERFAULT),
            (StoreError::Closed, NfsStat4::NFS4ERR_SERVERFAULT),
            (StoreError::Internal("x"), NfsStat4::NFS4ERR_SERVERFAULT),
            (
                redb::Error::Io(std::io::Error::other("disk")).into(),
                NfsStat4::NFS4ERR_IO,
            ),
            (
                redb::Error::DatabaseAlreadyOpen.into(),
                NfsStat4::NFS4ERR_SERVERFAULT,
            ),
        ];
        for (e, want) in cases {
            let name = format!("{e:?}");
            assert_eq!(NfsStat4::from(e), want, "{name}");
        }
    }
}

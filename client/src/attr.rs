//! File attributes as the library hands them out, and the set it asks servers for.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use nfs_proto::nfs4::attr::*;
use nfs_proto::nfs4::{Bitmap4, Fattr4, NfsFtype4, Nfstime4};

/// What kind of object a name refers to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileType {
    /// A regular file.
    File,
    /// A directory.
    Dir,
    /// A symbolic link.
    Symlink,
    /// Anything else (device, socket, fifo, named-attribute object).
    Other,
}

/// Attributes of a file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Metadata {
    /// Kind.
    pub file_type: FileType,
    /// Size in bytes.
    pub size: u64,
    /// Permission bits.
    pub mode: u32,
    /// The server's change attribute: differs whenever data or metadata changed (the basis
    /// of close-to-open revalidation).
    pub change: u64,
    /// File id (inode number).
    pub fileid: u64,
    /// Hard links.
    pub nlink: u32,
    /// Owner, as the server names it (`"0"`, `"root@domain"`).
    pub owner: String,
    /// Group, as the server names it.
    pub group: String,
    /// Last data modification.
    pub mtime: SystemTime,
    /// Last attribute change.
    pub ctime: SystemTime,
    /// Bytes the file takes on the server.
    pub space_used: u64,
}

/// The attributes every GETATTR of the library asks for.
pub(crate) fn request() -> Bitmap4 {
    Bitmap4::from_bits([
        FATTR4_TYPE,
        FATTR4_CHANGE,
        FATTR4_SIZE,
        FATTR4_FILEID,
        FATTR4_MODE,
        FATTR4_NUMLINKS,
        FATTR4_OWNER,
        FATTR4_OWNER_GROUP,
        FATTR4_SPACE_USED,
        FATTR4_TIME_METADATA,
        FATTR4_TIME_MODIFY,
    ])
}

fn time(t: Option<Nfstime4>) -> SystemTime {
    let Some(t) = t else { return UNIX_EPOCH };
    let d = Duration::new(t.seconds.unsigned_abs(), t.nseconds.min(999_999_999));
    if t.seconds >= 0 {
        UNIX_EPOCH + d
    } else {
        UNIX_EPOCH.checked_sub(d).unwrap_or(UNIX_EPOCH)
    }
}

impl Metadata {
    /// From a server's attributes; `None` when they do not decode or lack the type.
    pub fn from_fattr(f: &Fattr4) -> Option<Metadata> {
        let a = FileAttrs::from_fattr(f).ok()?;
        Self::from_attrs(&a)
    }

    /// From decoded attributes (the type is required; other absent values are zero).
    pub fn from_attrs(a: &FileAttrs) -> Option<Metadata> {
        let file_type = match a.r#type? {
            NfsFtype4::NF4REG => FileType::File,
            NfsFtype4::NF4DIR => FileType::Dir,
            NfsFtype4::NF4LNK => FileType::Symlink,
            _ => FileType::Other,
        };
        Some(Metadata {
            file_type,
            size: a.size.unwrap_or(0),
            mode: a.mode.unwrap_or(0),
            change: a.change.unwrap_or(0),
            fileid: a.fileid.unwrap_or(0),
            nlink: a.numlinks.unwrap_or(1),
            owner: a.owner.as_ref().map(|s| s.to_string()).unwrap_or_default(),
            group: a
                .owner_group
                .as_ref()
                .map(|s| s.to_string())
                .unwrap_or_default(),
            mtime: time(a.time_modify),
            ctime: time(a.time_metadata),
            space_used: a.space_used.unwrap_or(0),
        })
    }

    /// True for a directory.
    pub fn is_dir(&self) -> bool {
        self.file_type == FileType::Dir
    }
}

/// Attributes to set: a mode at create time, a size for truncate.
pub(crate) fn set(mode: Option<u32>, size: Option<u64>) -> Fattr4 {
    let a = FileAttrs {
        mode,
        size,
        ..FileAttrs::default()
    };
    a.to_fattr(&a.mask())
}

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
    /// A FIFO (named pipe).
    Fifo,
    /// A socket.
    Socket,
    /// A block device ([`Metadata::rdev`] are its numbers).
    BlockDevice,
    /// A character device ([`Metadata::rdev`] are its numbers).
    CharDevice,
    /// Anything else (a named-attribute object).
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
    /// Last access (what the server keeps; FUSE and `stat(2)` report it).
    pub atime: SystemTime,
    /// Last data modification.
    pub mtime: SystemTime,
    /// Last attribute change.
    pub ctime: SystemTime,
    /// Bytes the file takes on the server.
    pub space_used: u64,
    /// A device's major and minor numbers (`rawdev`); zeros for anything else.
    pub rdev: (u32, u32),
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
        FATTR4_TIME_ACCESS,
        FATTR4_TIME_METADATA,
        FATTR4_TIME_MODIFY,
        FATTR4_RAWDEV,
    ])
}

/// An `nfstime4` as a time: `seconds` (signed) plus `nseconds` (RFC 8881 section 3.3.1, so
/// 1.5 s before the epoch is -2 s and 500,000,000 ns).
fn time(t: Option<Nfstime4>) -> SystemTime {
    let Some(t) = t else { return UNIX_EPOCH };
    let nanos = Duration::from_nanos(u64::from(t.nseconds.min(999_999_999)));
    if t.seconds >= 0 {
        UNIX_EPOCH + Duration::from_secs(t.seconds.unsigned_abs()) + nanos
    } else {
        UNIX_EPOCH
            .checked_sub(Duration::from_secs(t.seconds.unsigned_abs()))
            .map_or(UNIX_EPOCH, |s| s + nanos)
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
            NfsFtype4::NF4FIFO => FileType::Fifo,
            NfsFtype4::NF4SOCK => FileType::Socket,
            NfsFtype4::NF4BLK => FileType::BlockDevice,
            NfsFtype4::NF4CHR => FileType::CharDevice,
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
            atime: time(a.time_access),
            mtime: time(a.time_modify),
            ctime: time(a.time_metadata),
            space_used: a.space_used.unwrap_or(0),
            rdev: a.rawdev.map_or((0, 0), |d| (d.specdata1, d.specdata2)),
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

/// What [`Client::setattr`](crate::Client::setattr) changes: every field left `None` stays
/// as it is. The fields are those `setattr(2)`-style callers (chmod, chown, truncate,
/// utimes, FUSE's `setattr`) change, in one SETATTR so they apply together.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SetAttrs {
    /// Permission bits.
    pub mode: Option<u32>,
    /// Owner, as a numeric id (sent as its decimal string, the form servers without an id
    /// mapper take and ours reports).
    pub uid: Option<u32>,
    /// Group, as a numeric id.
    pub gid: Option<u32>,
    /// Size (truncate or extend).
    pub size: Option<u64>,
    /// Last access.
    pub atime: Option<SetTime>,
    /// Last data modification.
    pub mtime: Option<SetTime>,
}

/// A time to set: the server's clock (`utimes(path, NULL)`, `UTIME_NOW`) or a given one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SetTime {
    /// The server's time when it applies the change (SET_TO_SERVER_TIME4), so clients with
    /// skewed clocks agree.
    ServerNow,
    /// This time.
    At(SystemTime),
}

fn nfstime(t: SystemTime) -> Nfstime4 {
    match t.duration_since(UNIX_EPOCH) {
        Ok(d) => Nfstime4 {
            seconds: i64::try_from(d.as_secs()).unwrap_or(i64::MAX),
            nseconds: d.subsec_nanos(),
        },
        Err(e) => {
            // Before the epoch: whole seconds down, nanoseconds up (RFC 8881 section 3.3.1).
            let d = e.duration();
            let mut seconds = -i64::try_from(d.as_secs()).unwrap_or(i64::MAX);
            let mut nseconds = d.subsec_nanos();
            if nseconds > 0 {
                seconds -= 1;
                nseconds = 1_000_000_000 - nseconds;
            }
            Nfstime4 { seconds, nseconds }
        }
    }
}

fn settime(t: SetTime) -> Settime4 {
    match t {
        SetTime::ServerNow => Settime4::SetToServerTime,
        SetTime::At(t) => Settime4::SetToClientTime(nfstime(t)),
    }
}

impl SetAttrs {
    /// True when nothing is to change.
    pub fn is_empty(&self) -> bool {
        *self == SetAttrs::default()
    }

    /// The attributes of a SETATTR.
    pub(crate) fn to_fattr(&self) -> Fattr4 {
        let a = FileAttrs {
            mode: self.mode,
            owner: self.uid.map(|u| u.to_string().into()),
            owner_group: self.gid.map(|g| g.to_string().into()),
            size: self.size,
            time_access_set: self.atime.map(settime),
            time_modify_set: self.mtime.map(settime),
            ..FileAttrs::default()
        };
        a.to_fattr(&a.mask())
    }
}

/// Space and file counts of the server's file system, as `statfs(2)` reports them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FsStats {
    /// Bytes in all.
    pub space_total: u64,
    /// Bytes free.
    pub space_free: u64,
    /// Bytes free to this user.
    pub space_avail: u64,
    /// Files (inodes) in all.
    pub files_total: u64,
    /// Files free.
    pub files_free: u64,
    /// Files free to this user.
    pub files_avail: u64,
    /// The longest name the server takes (255 when it does not say).
    pub max_name: u32,
}

/// The attributes a statfs asks for.
pub(crate) fn fs_request() -> Bitmap4 {
    Bitmap4::from_bits([
        FATTR4_SPACE_TOTAL,
        FATTR4_SPACE_FREE,
        FATTR4_SPACE_AVAIL,
        FATTR4_FILES_TOTAL,
        FATTR4_FILES_FREE,
        FATTR4_FILES_AVAIL,
        FATTR4_MAXNAME,
    ])
}

impl FsStats {
    /// From a server's answer (absent counts are zero).
    pub(crate) fn from_attrs(a: &FileAttrs) -> FsStats {
        FsStats {
            space_total: a.space_total.unwrap_or(0),
            space_free: a.space_free.unwrap_or(0),
            space_avail: a.space_avail.unwrap_or(0),
            files_total: a.files_total.unwrap_or(0),
            files_free: a.files_free.unwrap_or(0),
            files_avail: a.files_avail.unwrap_or(0),
            max_name: a.maxname.unwrap_or(255),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_before_the_epoch_round_down_to_whole_seconds() {
        let t = UNIX_EPOCH - Duration::from_millis(1500);
        let n = nfstime(t);
        assert_eq!((n.seconds, n.nseconds), (-2, 500_000_000));
        assert_eq!(time(Some(n)), t);
        let u = UNIX_EPOCH + Duration::new(7, 9);
        assert_eq!(time(Some(nfstime(u))), u);
    }

    #[test]
    fn setattrs_send_only_what_changes() {
        let s = SetAttrs {
            mode: Some(0o600),
            uid: Some(1000),
            mtime: Some(SetTime::ServerNow),
            ..SetAttrs::default()
        };
        let a = FileAttrs::from_fattr(&s.to_fattr()).unwrap();
        assert_eq!(a.mode, Some(0o600));
        assert_eq!(a.owner.as_ref().map(|o| o.to_string()), Some("1000".into()));
        assert_eq!(a.time_modify_set, Some(Settime4::SetToServerTime));
        assert!(a.size.is_none() && a.owner_group.is_none() && a.time_access_set.is_none());
        assert!(SetAttrs::default().is_empty() && !s.is_empty());
    }
}

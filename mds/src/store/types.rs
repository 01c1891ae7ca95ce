//! What the store's methods take and return: an object's attributes ([`Inode`]), what a
//! create makes and how ([`CreateSpec`], [`Created`], [`NewFileExtras`]), the outcomes of
//! LINK, REMOVE, RENAME and SETATTR, a READDIR page, and the options the store opens with.
//!
//! Apart from the [`Store`](super::Store) methods so that the operations' vocabulary reads in
//! one place; re-exported from [`crate::store`].

use std::sync::Arc;

use bytes::Bytes;
use nfs_proto::nfs4::attr::Settime4;
use nfs_proto::nfs4::{ChangeInfo4, NfsFtype4, Nfstime4, Specdata4};

use super::StripeSet;

/// A file system object's attributes as the store keeps them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Inode {
    /// The file id (`fileid` attribute; the key of the inode table).
    pub fileid: u64,
    /// Object type.
    pub ftype: NfsFtype4,
    /// Permission bits, setuid, setgid, sticky (at most 07777).
    pub mode: u32,
    /// Owner (numeric; the ops layer maps owner strings).
    pub uid: u32,
    /// Group (numeric).
    pub gid: u32,
    /// Names of a file (0 for an orphan: open, its last name removed); 2 + subdirectories
    /// for a directory.
    pub nlink: u32,
    /// Size in bytes (directories: a constant 4096; symlinks: the target's length).
    pub size: u64,
    /// Bytes of storage used, as far as the MDS knows (the size, for regular files).
    pub space_used: u64,
    /// Last access; only set by SETATTR (reads do not update it).
    pub atime: Nfstime4,
    /// Last modification of the data or of the directory's entries.
    pub mtime: Nfstime4,
    /// Last change of the attributes or data.
    pub ctime: Nfstime4,
    /// Creation time (`time_create`).
    pub birth: Nfstime4,
    /// The change attribute: a store-wide counter value, never reused, even across restarts.
    pub change: u64,
    /// Device numbers of a block or character device.
    pub rdev: Specdata4,
    /// Part of the filehandle; a handle with another generation is NFS4ERR_STALE.
    pub generation: u32,
    /// Target of a symbolic link (READLINK); empty for other types.
    pub symlink: Bytes,
    /// The verifier of the EXCLUSIVE4/EXCLUSIVE4_1 create that made this file, if any.
    pub verifier: Option<[u8; 8]>,
    /// Parent directory of a directory (LOOKUPP); 0 for the root and for non-directories.
    pub parent: u64,
}

impl Inode {
    /// A plain object for unit tests of other modules: the given type, mode and owner, one
    /// link, empty, all times zero.
    #[cfg(test)]
    pub(crate) fn for_test(fileid: u64, ftype: NfsFtype4, mode: u32, uid: u32) -> Self {
        let dir = ftype == NfsFtype4::NF4DIR;
        Self {
            fileid,
            ftype,
            mode,
            uid,
            gid: uid,
            nlink: if dir { 2 } else { 1 },
            size: if dir { 4096 } else { 0 },
            space_used: if dir { 4096 } else { 0 },
            atime: Nfstime4::default(),
            mtime: Nfstime4::default(),
            ctime: Nfstime4::default(),
            birth: Nfstime4::default(),
            change: 1,
            rdev: Specdata4::default(),
            generation: 1,
            symlink: Bytes::new(),
            verifier: None,
            parent: 1,
        }
    }

    /// True for directories.
    pub fn is_dir(&self) -> bool {
        self.ftype == NfsFtype4::NF4DIR
    }
}

/// How OPEN creates a regular file (RFC 8881 section 18.16.3, `createmode4`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CreateHow {
    /// UNCHECKED4: an existing regular file is returned as is (`created == false`).
    Unchecked,
    /// GUARDED4: an existing name is NFS4ERR_EXIST.
    Guarded,
    /// EXCLUSIVE4 / EXCLUSIVE4_1: an existing file made with this verifier is returned (a
    /// retransmission), any other existing name is NFS4ERR_EXIST.
    Exclusive([u8; 8]),
}

/// What to create.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NewObject {
    /// A regular file (OPEN with OPEN4_CREATE).
    Regular(CreateHow),
    /// A directory (CREATE NF4DIR).
    Directory,
    /// A symbolic link to this target (CREATE NF4LNK).
    Symlink(Bytes),
    /// A block device (CREATE NF4BLK).
    BlockDevice(Specdata4),
    /// A character device (CREATE NF4CHR).
    CharDevice(Specdata4),
    /// A named pipe (CREATE NF4FIFO).
    Fifo,
    /// A socket (CREATE NF4SOCK).
    Socket,
}

/// A create request: the object and its initial attributes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CreateSpec {
    /// Type (and type-specific data).
    pub object: NewObject,
    /// Initial mode (at most 07777).
    pub mode: u32,
    /// Initial owner.
    pub uid: u32,
    /// Initial group.
    pub gid: u32,
}

/// The result of a create.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Created {
    /// The new (or, for UNCHECKED4 and exclusive replays, the existing) object.
    pub inode: Inode,
    /// False when an existing file was returned instead.
    pub created: bool,
    /// The directory's change attribute before and after.
    pub cinfo: ChangeInfo4,
}

/// What [`Store::create_file`] applies to a new regular file in the create's transaction.
#[derive(Default)]
pub struct NewFileExtras {
    /// Times and size from the create's attributes (mode and owners are in the
    /// [`CreateSpec`]).
    pub attrs: SetAttrs,
    /// The stripe set for a new file id, when its directory has a layout policy of its own;
    /// `None` from the function leaves the file without one (it gets its export's policy at
    /// its first LAYOUTGET or WRITE).
    #[allow(clippy::type_complexity)]
    pub stripes: Option<Arc<dyn Fn(u64) -> Option<StripeSet> + Send + Sync>>,
    /// With a stripe set fixed: also mark the file as written through an RW layout
    /// ([`crate::store::Store::mark_layout_writes`]), for the RW LAYOUTGET that follows the
    /// create in its COMPOUND.
    pub mark_layout_writes: bool,
}

/// The result of [`Store::create_file`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CreatedFile {
    /// The create's own result.
    pub made: Created,
    /// The stripe set fixed in the same transaction, if any.
    pub stripes: Option<StripeSet>,
}

/// The result of LINK.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Linked {
    /// The linked file, with its new link count.
    pub inode: Inode,
    /// The target directory's change attribute before and after.
    pub cinfo: ChangeInfo4,
}

/// The result of REMOVE (and of the target replaced by RENAME).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Removed {
    /// The directory's change attribute before and after.
    pub cinfo: ChangeInfo4,
    /// The object whose name went.
    pub fileid: u64,
    /// Its type.
    pub ftype: NfsFtype4,
    /// True if that was its last name.
    pub last_link: bool,
    /// True if the object is a regular file that lost its last name: its inode is kept as an
    /// orphan (link count 0, durably listed in the `orphans` table), because it may still be
    /// open. The caller deletes it with [`Store::delete_orphan`], after its data, once no open
    /// holds it. Other objects that lose their last name are deleted at once.
    pub orphan: bool,
    /// True if that orphan was deleted in the same transaction ([`DeleteUnopened`]): no
    /// open held it, and its objects on the data servers are queued for removal.
    pub deleted: bool,
}

/// How REMOVE deletes a striped regular file whose last name it takes, in its own
/// transaction, when no open holds it ([`Store::remove`]): the orphan stage (a durable unlink,
/// then a second transaction deleting the inode once the data is gone) is there for the
/// data in the MDS's own object, which a file with a stripe set does not keep there (its
/// stripe set was fixed only while that object was empty). Its objects on the data servers
/// are queued for removal in the same transaction, as [`Store::delete_orphan`] queues them.
pub struct DeleteUnopened {
    /// Asked in the transaction, after the name is gone: true when no open holds the file,
    /// and from then on the caller's opens table treats it as being deleted (new opens and
    /// PUTFH find it stale); false keeps it as an orphan.
    pub unopened: Box<dyn Fn(u64) -> bool + Send>,
    /// The data servers that hold objects of a stripe set.
    pub servers: Box<StripeServers>,
}

/// Which data servers hold the objects of a stripe set (ids, from the ring of its generation).
pub type StripeServers = dyn Fn(&StripeSet) -> Vec<u16> + Send;

impl core::fmt::Debug for DeleteUnopened {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("DeleteUnopened")
    }
}

/// The result of RENAME.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Renamed {
    /// The source directory's change attribute before and after.
    pub source_cinfo: ChangeInfo4,
    /// The target directory's (the same as the source's within one directory).
    pub target_cinfo: ChangeInfo4,
    /// The object the new name used to point to, if one was replaced.
    pub replaced: Option<Removed>,
}

/// The attributes SETATTR may change in the store; `None` leaves one alone.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SetAttrs {
    /// New mode (at most 07777, else NFS4ERR_INVAL).
    pub mode: Option<u32>,
    /// New owner.
    pub uid: Option<u32>,
    /// New group.
    pub gid: Option<u32>,
    /// New size: regular files only (directories: NFS4ERR_ISDIR; others: NFS4ERR_INVAL).
    pub size: Option<u64>,
    /// `time_access_set`: server time (`now`) or the client's.
    pub atime: Option<Settime4>,
    /// `time_modify_set`.
    pub mtime: Option<Settime4>,
}

impl SetAttrs {
    /// True if nothing is to be set (a SETATTR that changes nothing bumps nothing).
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }
}

/// The result of SETATTR.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SetattrOutcome {
    /// The attributes after.
    pub inode: Inode,
    /// The size before, so the caller can truncate the data when it shrank.
    pub old_size: u64,
}

/// One READDIR entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DirEntry {
    /// Resume READDIR after this entry with this cookie.
    pub cookie: u64,
    /// The entry's name.
    pub name: Bytes,
    /// The object it names, read in the same snapshot.
    pub inode: Inode,
}

/// A slice of a directory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReadDir {
    /// Entries in cookie order.
    pub entries: Vec<DirEntry>,
    /// True if no entry follows the last one returned.
    pub eof: bool,
}

/// How the store is opened.
#[derive(Clone, Debug)]
pub struct StoreOptions {
    /// The most jobs that share one commit; 1 turns group commit off (for measurements).
    pub max_batch: usize,
    /// Mode of the root directory when the store is created.
    pub root_mode: u32,
    /// Owner of the root directory when the store is created.
    pub root_uid: u32,
    /// Group of the root directory when the store is created.
    pub root_gid: u32,
    /// redb's page cache size in bytes; `None` keeps redb's default.
    pub cache_size: Option<usize>,
    /// Whether changes are made durable by a write-ahead log beside the store's file
    /// (`store::wal`) rather than by a durable redb commit each. On by default; off only to
    /// measure the difference. A store opened without it replays any log left behind first.
    pub write_ahead_log: bool,
    /// With the log: how many batches go between the durable redb commits that empty it
    /// (checkpoints). More means fewer slow commits and a longer replay after a crash.
    pub checkpoint_batches: u64,
}

impl Default for StoreOptions {
    fn default() -> Self {
        Self {
            max_batch: 1024,
            root_mode: 0o755,
            root_uid: 0,
            root_gid: 0,
            cache_size: None,
            write_ahead_log: true,
            checkpoint_batches: 1024,
        }
    }
}

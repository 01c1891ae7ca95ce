//! The on-disk layout: redb tables and the XDR records stored in them.
//!
//! | table         | key                          | value                                   |
//! |---------------|------------------------------|-----------------------------------------|
//! | `meta`        | `&str`                       | `"format"`: XDR u32 1; `"server_key"`: 32 bytes |
//! | `counters`    | `&str`                       | u64: `"boot_epoch"`, `"next_fileid"`, `"change"` |
//! | `inodes`      | file id (u64)                | XDR `inode_record` below                |
//! | `dirents`     | (dir id u64, name bytes)     | (child id u64, cookie u64)              |
//! | `dir_cookies` | (dir id u64, cookie u64)     | (child id u64, name bytes)              |
//! | `clients`     | clientid (u64)               | XDR `client_record` below               |
//! | `client_owners` | owner id bytes             | clientid (u64) of the owner's record in `clients` |
//! | `orphans`     | file id (u64)                | boot epoch (u64) in which it was orphaned |
//! | `xattrs`      | (file id u64, name bytes)    | (cookie u64, value bytes)               |
//! | `xattr_cookies` | (file id u64, cookie u64)  | name bytes                              |
//! | `stripes`     | file id (u64)                | XDR `stripes_record` ([`super::stripes`]) |
//! | `ds_removals` | file id (u64)                | XDR `ds_removal_record` ([`super::removals`]) |
//!
//! Every record encoded here is an XDR union whose discriminant is the record's version, so a
//! future layout adds an arm and keeps reading the old one:
//!
//! ```text
//! struct inode_v1 {
//!     nfs_ftype4 type;        uint32_t mode;   uint32_t uid;   uint32_t gid;
//!     uint32_t   nlink;       uint64_t size;   uint64_t space_used;
//!     nfstime4   atime;       nfstime4 mtime;  nfstime4 ctime; nfstime4 birth;
//!     uint64_t   change;      specdata4 rdev;  uint32_t generation;
//!     opaque     symlink<>;          /* empty unless NF4LNK */
//!     verifier4  *create_verf;       /* EXCLUSIVE4/EXCLUSIVE4_1 creates */
//!     uint64_t   parent;             /* directories; 0 for the root and non-directories */
//!     uint64_t   next_cookie;        /* directories; 0 otherwise */
//! };
//! union inode_record switch (uint32_t version) { case 1: inode_v1 v1; };
//!
//! struct client_v1 {
//!     opaque owner<>;  verifier4 verifier;  utf8string principal;  uint64_t boot_epoch;
//! };
//! union client_record switch (uint32_t version) { case 1: client_v1 v1; };
//! ```
//!
//! `dirents` answers LOOKUP; `dir_cookies` is the same set of entries ordered by cookie, so
//! READDIR resumes after any cookie it ever issued, even when that entry has since been
//! removed. A directory's cookies are handed out from its `next_cookie` (3, 4, ...; 0, 1 and 2
//! are reserved by NFS) and never reused; a renamed entry gets a new one in its new directory.
//! File ids come from `counters/next_fileid` (the root is 1) and are never reused either.
//! Both `next_fileid` and `change` are ceilings, raised a block at a time
//! (`store/counters.rs`): every value handed out is below `next_fileid` and at most `change`.
//!
//! `orphans` lists the regular files whose last name is gone but whose inode (and data) is
//! kept because it may still be open (link count 0). Every inode with a link count of 0 is in
//! it, so after a crash the server finds them all and deletes those no open survived (see
//! [`super::Store::orphans`]).
//!
//! `xattrs` and `xattr_cookies` hold extended attributes (RFC 8276) the same way: by name for
//! GETXATTR/SETXATTR/REMOVEXATTR, by cookie for LISTXATTRS; a name's cookie is the change
//! counter value of the SETXATTR that created it ([`super::xattr`]). Both tables were added
//! after format 1 was fixed: opening a store creates them if missing, so the format version
//! did not change. `client_owners` likewise (an index of `clients`, rebuilt at open when it
//! does not match: [`super::clients`]).

// `#[derive(Xdr)]` also emits a proptest strategy under `cfg(any(test, feature = "arbitrary"))`,
// a feature of nfs-proto that this crate does not declare.
#![allow(unexpected_cfgs)]

use bytes::Bytes;
use nfs_proto::nfs4::{NfsFtype4, Nfstime4, Specdata4};
use nfs_proto::xdr::{from_bytes, to_bytes, Utf8String, Xdr};
use redb::{ReadableTable, TableDefinition};

use super::{ClientRecord, Inode, StoreError};

/// Format version of the whole file, checked at open.
pub(super) const FORMAT_VERSION: u32 = 1;

pub(super) const META: TableDefinition<&str, &[u8]> = TableDefinition::new("meta");
pub(super) const COUNTERS: TableDefinition<&str, u64> = TableDefinition::new("counters");
pub(super) const INODES: TableDefinition<u64, &[u8]> = TableDefinition::new("inodes");
pub(super) const DIRENTS: TableDefinition<(u64, &[u8]), (u64, u64)> =
    TableDefinition::new("dirents");
pub(super) const COOKIES: TableDefinition<(u64, u64), (u64, &[u8])> =
    TableDefinition::new("dir_cookies");
pub(super) const CLIENTS: TableDefinition<u64, &[u8]> = TableDefinition::new("clients");
/// `client_owners`: owner id -> client id of its record in `clients` ([`super::clients`]).
pub(super) const CLIENT_OWNERS: TableDefinition<&[u8], u64> = TableDefinition::new("client_owners");
pub(super) const ORPHANS: TableDefinition<u64, u64> = TableDefinition::new("orphans");
/// `xattrs` key: (file id, name).
pub(super) type XattrKey = (u64, &'static [u8]);
/// `xattrs` value: (cookie, value).
pub(super) type XattrValue = (u64, &'static [u8]);
pub(super) const XATTRS: TableDefinition<XattrKey, XattrValue> = TableDefinition::new("xattrs");
pub(super) const XATTR_COOKIES: TableDefinition<(u64, u64), &[u8]> =
    TableDefinition::new("xattr_cookies");
/// `stripes`: file id -> XDR `stripes_record` ([`super::stripes`]).
pub(super) const STRIPES: TableDefinition<u64, &[u8]> = TableDefinition::new("stripes");
/// `ds_removals`: file id -> XDR `ds_removal_record` ([`super::removals`]).
pub(super) const DS_REMOVALS: TableDefinition<u64, &[u8]> = TableDefinition::new("ds_removals");

/// Every table of the store, once: for the replay of the write-ahead log.
macro_rules! every_table {
    ($($t:expr),* $(,)?) => {
        /// Applies one write read back from the write-ahead log to the table it names;
        /// `Ok(false)` if no table of the store has that name.
        pub(super) fn replay_op(
            wtx: &redb::WriteTransaction,
            op: &super::wal::Op<'_>,
        ) -> Result<bool, StoreError> {
            use super::wal::apply_to as a;
            Ok(false $(|| a(wtx, $t, op)?)*)
        }

        /// The names of the tables [`replay_op`] knows.
        #[cfg(test)]
        pub(super) fn table_names() -> Vec<&'static str> {
            use redb::TableHandle;
            vec![$($t.name()),*]
        }
    };
}

every_table!(
    META,
    COUNTERS,
    INODES,
    DIRENTS,
    COOKIES,
    CLIENTS,
    CLIENT_OWNERS,
    ORPHANS,
    XATTRS,
    XATTR_COOKIES,
    STRIPES,
    DS_REMOVALS,
    super::layout_writes::LAYOUT_WRITES,
    super::stale_copies::STALE_COPIES,
    super::ds_stores::DS_STORES,
    super::rings::RINGS,
);

pub(super) const K_FORMAT: &str = "format";
pub(super) const K_SERVER_KEY: &str = "server_key";
pub(super) const K_EPOCH: &str = "boot_epoch";
pub(super) const K_NEXT_FILEID: &str = "next_fileid";
pub(super) const K_CHANGE: &str = "change";

/// The file id of the root directory of the default export.
pub const ROOT_FILEID: u64 = 1;
/// The first cookie a directory hands out: 0 means "from the start" and 1 and 2 are reserved
/// (RFC 8881 section 18.23.3).
pub const FIRST_COOKIE: u64 = 3;

/// Version 1 of an inode record (the key, the file id, is not repeated here).
#[derive(Clone, Debug, PartialEq, Xdr)]
pub(super) struct InodeV1 {
    pub ftype: NfsFtype4,
    pub mode: u32,
    pub uid: u32,
    pub gid: u32,
    pub nlink: u32,
    pub size: u64,
    pub space_used: u64,
    pub atime: Nfstime4,
    pub mtime: Nfstime4,
    pub ctime: Nfstime4,
    pub birth: Nfstime4,
    pub change: u64,
    pub rdev: Specdata4,
    pub generation: u32,
    /// The target of a symbolic link; empty otherwise.
    pub symlink: Bytes,
    /// The EXCLUSIVE4/EXCLUSIVE4_1 create verifier, kept so that a retransmitted create
    /// succeeds (RFC 8881 section 18.16.3).
    pub verifier: Option<[u8; 8]>,
    /// The parent directory's file id, for directories (LOOKUPP); 0 for the root and for
    /// other types (a file's names are its directory entries).
    pub parent: u64,
    /// Directories: the next READDIR cookie to hand out. 0 for other types.
    pub next_cookie: u64,
}

/// An inode record, versioned by its XDR discriminant.
#[derive(Clone, Debug, PartialEq, Xdr)]
pub(super) enum InodeRecord {
    #[xdr(case = 1u32)]
    V1(InodeV1),
}

impl InodeV1 {
    pub(super) fn is_dir(&self) -> bool {
        self.ftype == NfsFtype4::NF4DIR
    }

    pub(super) fn encode(&self) -> Bytes {
        to_bytes(&InodeRecord::V1(self.clone()))
    }

    pub(super) fn decode(b: &[u8]) -> Result<Self, StoreError> {
        match from_bytes::<InodeRecord>(Bytes::copy_from_slice(b)) {
            Ok(InodeRecord::V1(r)) => Ok(r),
            Err(_) => Err(StoreError::Corrupt("inode record does not decode")),
        }
    }

    /// The public view of this record.
    pub(super) fn to_inode(&self, fileid: u64) -> Inode {
        Inode {
            fileid,
            ftype: self.ftype,
            mode: self.mode,
            uid: self.uid,
            gid: self.gid,
            nlink: self.nlink,
            size: self.size,
            space_used: self.space_used,
            atime: self.atime,
            mtime: self.mtime,
            ctime: self.ctime,
            birth: self.birth,
            change: self.change,
            rdev: self.rdev,
            generation: self.generation,
            symlink: self.symlink.clone(),
            verifier: self.verifier,
            parent: self.parent,
        }
    }
}

/// Version 1 of a confirmed client's record.
#[derive(Clone, Debug, PartialEq, Xdr)]
pub(super) struct ClientV1 {
    pub owner: Bytes,
    pub verifier: [u8; 8],
    pub principal: Utf8String,
    pub boot_epoch: u64,
}

/// A client record, versioned by its XDR discriminant.
#[derive(Clone, Debug, PartialEq, Xdr)]
pub(super) enum ClientRecordDisk {
    #[xdr(case = 1u32)]
    V1(ClientV1),
}

pub(super) fn encode_client(c: &ClientRecord) -> Bytes {
    to_bytes(&ClientRecordDisk::V1(ClientV1 {
        owner: c.owner.clone(),
        verifier: c.verifier,
        principal: Utf8String(Bytes::copy_from_slice(c.principal.as_bytes())),
        boot_epoch: c.boot_epoch,
    }))
}

pub(super) fn decode_client(clientid: u64, b: &[u8]) -> Result<ClientRecord, StoreError> {
    match from_bytes::<ClientRecordDisk>(Bytes::copy_from_slice(b)) {
        Ok(ClientRecordDisk::V1(c)) => Ok(ClientRecord {
            clientid,
            owner: c.owner,
            verifier: c.verifier,
            principal: String::from_utf8_lossy(&c.principal.0).into_owned(),
            boot_epoch: c.boot_epoch,
        }),
        Err(_) => Err(StoreError::Corrupt("client record does not decode")),
    }
}

/// Reads an inode record; `None` if the file id is not there.
pub(super) fn get_inode<T: ReadableTable<u64, &'static [u8]>>(
    t: &T,
    fileid: u64,
) -> Result<Option<InodeV1>, StoreError> {
    match t.get(fileid)? {
        Some(g) => InodeV1::decode(g.value()).map(Some),
        None => Ok(None),
    }
}

/// Reads an inode record that a filehandle or the caller names: gone is NFS4ERR_STALE.
pub(super) fn load<T: ReadableTable<u64, &'static [u8]>>(
    t: &T,
    fileid: u64,
) -> Result<InodeV1, StoreError> {
    get_inode(t, fileid)?.ok_or(StoreError::Stale(fileid))
}

/// Reads an inode that a directory entry points to: gone means the store is inconsistent.
pub(super) fn load_linked<T: ReadableTable<u64, &'static [u8]>>(
    t: &T,
    fileid: u64,
) -> Result<InodeV1, StoreError> {
    get_inode(t, fileid)?.ok_or(StoreError::Corrupt("directory entry names a missing inode"))
}

/// Reads a directory's record: NFS4ERR_STALE if gone, NFS4ERR_NOTDIR if not a directory.
pub(super) fn load_dir<T: ReadableTable<u64, &'static [u8]>>(
    t: &T,
    fileid: u64,
) -> Result<InodeV1, StoreError> {
    let d = load(t, fileid)?;
    if !d.is_dir() {
        return Err(StoreError::NotDir);
    }
    Ok(d)
}

/// Looks a name up in a directory: (child id, cookie).
pub(super) fn get_dirent<T: ReadableTable<(u64, &'static [u8]), (u64, u64)>>(
    t: &T,
    dir: u64,
    name: &[u8],
) -> Result<Option<(u64, u64)>, StoreError> {
    Ok(t.get((dir, name))?.map(|g| g.value()))
}

/// True if the directory has no entries.
pub(super) fn dir_is_empty<T: ReadableTable<(u64, u64), (u64, &'static [u8])>>(
    t: &T,
    dir: u64,
) -> Result<bool, StoreError> {
    Ok(t.range((dir, 0)..=(dir, u64::MAX))?.next().is_none())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn inode_records_round_trip(r in any::<InodeV1>()) {
            prop_assert_eq!(InodeV1::decode(&r.encode()).unwrap(), r);
        }

        #[test]
        fn every_prefix_of_an_inode_record_is_corrupt(r in any::<InodeV1>()) {
            let b = r.encode();
            for n in 0..b.len() {
                prop_assert!(matches!(InodeV1::decode(&b[..n]), Err(StoreError::Corrupt(_))));
            }
        }

        #[test]
        fn client_records_round_trip(id: u64, owner: Vec<u8>, verifier: [u8; 8], epoch: u64) {
            let c = ClientRecord {
                clientid: id,
                owner: owner.into(),
                verifier,
                principal: "nfs/host@REALM".into(),
                boot_epoch: epoch,
            };
            prop_assert_eq!(decode_client(id, &encode_client(&c)).unwrap(), c);
        }
    }

    #[test]
    fn inode_record_starts_with_its_version_word() {
        let r = InodeV1 {
            ftype: NfsFtype4::NF4REG,
            mode: 0o644,
            uid: 0,
            gid: 0,
            nlink: 1,
            size: 0,
            space_used: 0,
            atime: Nfstime4::default(),
            mtime: Nfstime4::default(),
            ctime: Nfstime4::default(),
            birth: Nfstime4::default(),
            change: 1,
            rdev: Specdata4::default(),
            generation: 1,
            symlink: Bytes::new(),
            verifier: None,
            parent: 0,
            next_cookie: 0,
        };
        let b = r.encode();
        assert_eq!(&b[..8], &[0, 0, 0, 1, 0, 0, 0, 1], "version 1, then NF4REG");
    }

    #[test]
    fn unknown_record_version_is_corrupt() {
        let b = [0u8, 0, 0, 2, 0, 0, 0, 1];
        assert!(matches!(InodeV1::decode(&b), Err(StoreError::Corrupt(_))));
    }
}

//! The namespace handle: the metadata store, the object store of files without a stripe
//! set, the exports joined by the pseudo file system, and the directories with a layout
//! policy of their own.
//!
//! Why a handle of its own: these are what every operation on names and attributes needs,
//! and nothing of the protocol state or the data servers. A service that only reads and
//! writes the namespace takes a `&Namespace`, not the whole server.

use std::collections::HashMap;
use std::sync::Arc;

use nfs_proto::nfs4::{NfsStat4, Nfstime4};
use pfs_core::ObjectStore;

use crate::compound::exports::Exports;
use crate::pnfs::dirlayout::DirLayouts;
use crate::store::{Inode, Store};

/// The namespace: store, file data, exports, export roots, directory layouts.
pub struct Namespace {
    /// Namespace and attributes.
    store: Store,
    /// File data.
    data: Arc<dyn ObjectStore>,
    /// The exports and the pseudo file system joining them.
    exports: Exports,
    /// The file id of each export's root directory, resolved (and made, if missing) at start.
    export_roots: HashMap<u16, u64>,
    /// The directories with a layout policy of their own (`cluster.layout.directories`),
    /// resolved (and made, if missing) at start.
    dir_layouts: DirLayouts,
    /// Times of the pseudo-fs nodes: this start (so their change attribute moves when the
    /// config may have changed).
    pseudo_time: Nfstime4,
}

impl Namespace {
    /// The namespace of parts [`crate::Mds::open_with`] resolved.
    pub(crate) fn new(
        store: Store,
        data: Arc<dyn ObjectStore>,
        exports: Exports,
        export_roots: HashMap<u16, u64>,
        dir_layouts: DirLayouts,
        pseudo_time: Nfstime4,
    ) -> Self {
        Self {
            store,
            data,
            exports,
            export_roots,
            dir_layouts,
            pseudo_time,
        }
    }

    /// The metadata store: names and attributes.
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// The object store holding the data of files without a stripe set.
    pub fn data(&self) -> &Arc<dyn ObjectStore> {
        &self.data
    }

    /// The exports and the pseudo file system joining them.
    pub fn exports(&self) -> &Exports {
        &self.exports
    }

    /// The directories with a layout policy of their own.
    pub fn dir_layouts(&self) -> &DirLayouts {
        &self.dir_layouts
    }

    /// The root directory of export `id` (NFS4ERR_STALE if it was removed, NFS4ERR_NOENT for
    /// an export the config does not have).
    pub fn export_root(&self, id: u16) -> Result<Inode, NfsStat4> {
        let fileid = self.export_root_fileid(id).ok_or(NfsStat4::NFS4ERR_NOENT)?;
        Ok(self.store.getattr(fileid)?)
    }

    /// The file id of export `id`'s root directory.
    pub fn export_root_fileid(&self, id: u16) -> Option<u64> {
        self.export_roots.get(&id).copied()
    }

    /// The attributes of a pseudo-fs node: a read-only directory owned by root, its link
    /// count from its subdirectories, its times this server's start.
    pub fn pseudo_inode(&self, fileid: u64) -> Option<Inode> {
        let node = self.exports.pseudo_by_fileid(fileid)?;
        let t = self.pseudo_time;
        Some(Inode {
            fileid,
            ftype: nfs_proto::nfs4::NfsFtype4::NF4DIR,
            mode: 0o555,
            uid: 0,
            gid: 0,
            nlink: 2 + self.exports.pseudo_children(node).count() as u32,
            size: 4096,
            space_used: 4096,
            atime: t,
            mtime: t,
            ctime: t,
            birth: t,
            change: (t.seconds as u64) << 30 | u64::from(t.nseconds),
            rdev: Default::default(),
            generation: 0,
            symlink: Default::default(),
            verifier: None,
            parent: 0,
        })
    }
}

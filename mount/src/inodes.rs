//! FUSE inode numbers and the client's [`Node`]s, with the kernel's lookup counts.
//!
//! An inode number is the server's file id (what `readdir` reports as `d_ino` too), except
//! that FUSE's root must be 1: the root's file id and 1 trade places. A node stays in the
//! table while the kernel holds a reference (every entry reply counts one lookup, `forget`
//! takes them back), so a request for an inode the kernel still knows always finds it.

use std::collections::HashMap;

use client::Node;

/// FUSE's root inode number.
pub(crate) const ROOT: u64 = 1;

/// The nodes the kernel knows, by inode number.
pub(crate) struct Inodes {
    root_fileid: u64,
    by_ino: HashMap<u64, (Node, u64)>,
}

impl Inodes {
    /// A table holding the root (never forgotten).
    pub(crate) fn new(root: Node) -> Self {
        let root_fileid = root.fileid();
        let mut by_ino = HashMap::new();
        by_ino.insert(ROOT, (root, 1));
        Self {
            root_fileid,
            by_ino,
        }
    }

    /// The inode number of file id `fileid`.
    pub(crate) fn ino_of(&self, fileid: u64) -> u64 {
        if fileid == self.root_fileid {
            ROOT
        } else if fileid == ROOT {
            self.root_fileid
        } else {
            fileid
        }
    }

    /// The node of `ino`, if the kernel still holds it.
    pub(crate) fn get(&self, ino: u64) -> Option<Node> {
        self.by_ino.get(&ino).map(|(n, _)| n.clone())
    }

    /// Counts one lookup of `node` (an entry reply to the kernel); its inode number.
    pub(crate) fn remember(&mut self, node: &Node) -> u64 {
        let ino = self.ino_of(node.fileid());
        let e = self.by_ino.entry(ino).or_insert_with(|| (node.clone(), 0));
        // A file id now names another object (the old one went and its id was reused):
        // the newest node is what the kernel's next request means.
        if e.0 != *node {
            e.0 = node.clone();
        }
        e.1 += 1;
        ino
    }

    /// The kernel forgets `n` lookups of `ino`; the node goes at zero (the root never).
    pub(crate) fn forget(&mut self, ino: u64, n: u64) {
        if ino == ROOT {
            return;
        }
        if let Some(e) = self.by_ino.get_mut(&ino) {
            e.1 = e.1.saturating_sub(n);
            if e.1 == 0 {
                self.by_ino.remove(&ino);
            }
        }
    }
}

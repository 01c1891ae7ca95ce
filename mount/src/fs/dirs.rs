//! Directory listings: readdir and readdirplus, by the server's cookies.
//!
//! The kernel asks for a few KiB of entries at a time and names where to go on by the
//! offset of the last entry it got; a server page is larger. The rest of a page waits in
//! the open directory's [`Listing`], so a directory of N entries costs N / page READDIRs,
//! not one per kernel buffer. Offsets 1 and 2 are `.` and `..` (NFSv4 reserves cookies 0
//! to 2: RFC 8881 section 18.23.3), the server's cookies follow.

use client::{DirEntryPlus, Metadata, Node};
use std::collections::VecDeque;
use std::time::{Duration, SystemTime};

use fuser::{
    Errno, FileAttr, FileHandle, FileType, Generation, INodeNo, ReplyDirectory, ReplyDirectoryPlus,
};

use super::{errno, kind_of, lock, Shared};

/// What one READDIR asks the server for.
const DIR_PAGE: u32 = 64 * 1024;

/// The kernel's offset after `.`, and after `..`.
const AFTER_DOT: u64 = 1;
const AFTER_DOTDOT: u64 = 2;

/// An open directory's place in the server's listing.
#[derive(Default)]
pub(crate) struct Listing {
    /// The cookie verifier of the pages read so far.
    verifier: [u8; 8],
    /// Entries read and not yet given to the kernel ...
    ahead: VecDeque<DirEntryPlus>,
    /// ... which follow this cookie.
    ahead_from: u64,
    /// No entries after `ahead`.
    eof: bool,
}

/// One entry as the kernel gets it.
struct Item {
    name: String,
    offset: u64,
    /// Its node and attributes (not for `.` and `..`, which the kernel does not link).
    found: Option<(Node, Metadata)>,
    ino: u64,
    kind: FileType,
}

impl Shared {
    pub(crate) fn opendir(&self) -> u64 {
        let fh = self.new_fh();
        lock(&self.dirs).insert(fh, Listing::default());
        fh
    }

    /// The entries after kernel offset `offset`: at most a page of the server's, with `.`
    /// and `..` first when the listing starts.
    async fn entries_after(
        &self,
        ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        plus: bool,
    ) -> Result<Vec<Item>, Errno> {
        let dir = self.node(ino)?;
        let mut items = Vec::new();
        if offset < AFTER_DOT {
            items.push(Item {
                name: ".".into(),
                offset: AFTER_DOT,
                found: None,
                ino: ino.0,
                kind: FileType::Directory,
            });
        }
        if offset < AFTER_DOTDOT {
            // The root's parent is itself (LOOKUPP at the root fails: NFS4ERR_NOENT).
            let parent = match self.client.parent_of(&dir).await {
                Ok((_, m)) => lock(&self.inodes).ino_of(m.fileid),
                Err(_) => ino.0,
            };
            items.push(Item {
                name: "..".into(),
                offset: AFTER_DOTDOT,
                found: None,
                ino: parent,
                kind: FileType::Directory,
            });
        }
        let cookie = if offset <= AFTER_DOTDOT { 0 } else { offset };
        let (ahead, verifier) = {
            let mut dirs = lock(&self.dirs);
            let l = dirs.entry(fh.0).or_default();
            if cookie == 0 {
                *l = Listing::default();
            }
            if cookie != 0 && l.ahead_from == cookie && (!l.ahead.is_empty() || l.eof) {
                (Some(std::mem::take(&mut l.ahead)), l.verifier)
            } else {
                (None, l.verifier)
            }
        };
        let page = match ahead {
            Some(a) => a,
            None => {
                let page = self
                    .client
                    .readdir_page(&dir, cookie, verifier, DIR_PAGE)
                    .await
                    .map_err(errno)?;
                let mut dirs = lock(&self.dirs);
                let l = dirs.entry(fh.0).or_default();
                l.verifier = page.verifier;
                l.eof = page.eof;
                page.entries.into()
            }
        };
        for e in page {
            if e.name == "." || e.name == ".." {
                continue;
            }
            let found = match (e.node, e.meta) {
                (Some(n), Some(m)) => Some((n, m)),
                // A server that gave no handle or attributes: readdirplus needs them.
                _ if plus => Some(self.client.lookup_in(&dir, &e.name).await.map_err(errno)?),
                (Some(n), None) => {
                    let ino = lock(&self.inodes).ino_of(n.fileid());
                    items.push(Item {
                        name: e.name,
                        offset: e.cookie,
                        found: None,
                        ino,
                        kind: FileType::RegularFile,
                    });
                    continue;
                }
                (None, m) => {
                    let (ino, kind) = m.map_or((u64::MAX, FileType::RegularFile), |m| {
                        (lock(&self.inodes).ino_of(m.fileid), kind_of(&m.file_type))
                    });
                    items.push(Item {
                        name: e.name,
                        offset: e.cookie,
                        found: None,
                        ino,
                        kind,
                    });
                    continue;
                }
            };
            let (ino, kind) = found
                .as_ref()
                .map(|(_, m)| (lock(&self.inodes).ino_of(m.fileid), kind_of(&m.file_type)))
                .unwrap_or((u64::MAX, FileType::RegularFile));
            items.push(Item {
                name: e.name,
                offset: e.cookie,
                found,
                ino,
                kind,
            });
        }
        Ok(items)
    }

    /// Keeps the entries the kernel's buffer had no room for (`rest`, after kernel offset
    /// `from`) for its next call.
    fn keep_ahead(&self, fh: FileHandle, from: u64, rest: &[Item]) {
        let mut dirs = lock(&self.dirs);
        let l = dirs.entry(fh.0).or_default();
        l.ahead_from = from;
        l.ahead = rest
            .iter()
            .filter(|i| i.offset > AFTER_DOTDOT)
            .map(|i| DirEntryPlus {
                name: i.name.clone(),
                cookie: i.offset,
                node: i.found.as_ref().map(|(n, _)| n.clone()),
                meta: i.found.as_ref().map(|(_, m)| m.clone()),
            })
            .collect();
    }

    pub(crate) async fn readdir(
        &self,
        ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        mut reply: ReplyDirectory,
    ) {
        let items = match self.entries_after(ino, fh, offset, false).await {
            Ok(i) => i,
            Err(e) => return reply.error(e),
        };
        let mut last = offset;
        for (n, i) in items.iter().enumerate() {
            // The offset is the server's cookie: the kernel's next readdir continues there.
            if reply.add(INodeNo(i.ino), i.offset, i.kind, &i.name) {
                self.keep_ahead(fh, last, &items[n..]);
                return reply.ok();
            }
            last = i.offset;
        }
        self.keep_ahead(fh, last, &[]);
        reply.ok();
    }

    pub(crate) async fn readdirplus(
        &self,
        ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        mut reply: ReplyDirectoryPlus,
    ) {
        let items = match self.entries_after(ino, fh, offset, true).await {
            Ok(i) => i,
            Err(e) => return reply.error(e),
        };
        let ttl = self.opts.attr_timeout;
        let mut last = offset;
        for (n, i) in items.iter().enumerate() {
            let full = match &i.found {
                Some((node, meta)) => {
                    // The kernel counts a lookup of each entry it takes: remembered before
                    // the reply can bring a forget, taken back if it did not fit.
                    let ino = lock(&self.inodes).remember(node);
                    let attr = self.attr_with(ino, meta);
                    let full =
                        reply.add(INodeNo(ino), i.offset, &i.name, &ttl, &attr, Generation(0));
                    if full {
                        lock(&self.inodes).forget(ino, 1);
                    }
                    full
                }
                // `.` and `..`: the kernel lists them and links nothing.
                None => {
                    let attr = dot_attr(i.ino, i.kind);
                    reply.add(
                        INodeNo(i.ino),
                        i.offset,
                        &i.name,
                        &Duration::ZERO,
                        &attr,
                        Generation(0),
                    )
                }
            };
            if full {
                self.keep_ahead(fh, last, &items[n..]);
                return reply.ok();
            }
            last = i.offset;
        }
        self.keep_ahead(fh, last, &[]);
        reply.ok();
    }
}

/// Attributes for an entry the kernel only lists.
fn dot_attr(ino: u64, kind: FileType) -> FileAttr {
    FileAttr {
        ino: INodeNo(ino),
        size: 0,
        blocks: 0,
        atime: SystemTime::UNIX_EPOCH,
        mtime: SystemTime::UNIX_EPOCH,
        ctime: SystemTime::UNIX_EPOCH,
        crtime: SystemTime::UNIX_EPOCH,
        kind,
        perm: 0,
        nlink: 1,
        uid: 0,
        gid: 0,
        rdev: 0,
        blksize: 0,
        flags: 0,
    }
}

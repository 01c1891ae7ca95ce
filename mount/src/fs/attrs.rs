//! getattr and setattr.

use client::{Metadata, SetAttrs, SetTime};
use fuser::{Errno, FileHandle, INodeNo, TimeOrNow};

use super::{errno, lock, Shared};

/// What a `setattr` asks to change (FUSE's arguments, kept for the task).
pub(crate) struct Change {
    pub(crate) mode: Option<u32>,
    pub(crate) uid: Option<u32>,
    pub(crate) gid: Option<u32>,
    pub(crate) size: Option<u64>,
    pub(crate) atime: Option<TimeOrNow>,
    pub(crate) mtime: Option<TimeOrNow>,
}

fn time(t: Option<TimeOrNow>) -> Option<SetTime> {
    t.map(|t| match t {
        TimeOrNow::Now => SetTime::ServerNow,
        TimeOrNow::SpecificTime(t) => SetTime::At(t),
    })
}

impl Shared {
    /// Attributes of `ino` as this client sees them: an open File of it knows writes not
    /// yet sent (the size), the server the rest.
    pub(crate) async fn getattr(
        &self,
        ino: INodeNo,
        fh: Option<FileHandle>,
    ) -> Result<Metadata, Errno> {
        if let Some(o) = fh.and_then(|fh| self.open_file(fh).ok()) {
            return o.file.metadata().await.map_err(errno);
        }
        let node = self.node(ino)?;
        let mut m = self.client.getattr(&node).await.map_err(errno)?;
        if let Some(s) = self.opens_of(&node).iter().map(|o| o.file.size()).max() {
            m.size = m.size.max(s);
        }
        Ok(m)
    }

    pub(crate) async fn setattr(
        &self,
        ino: INodeNo,
        fh: Option<FileHandle>,
        c: Change,
    ) -> Result<Metadata, Errno> {
        if self.opts.read_only {
            return Err(Errno::EROFS);
        }
        let node = self.node(ino)?;
        let open = fh.and_then(|fh| self.open_file(fh).ok());
        let mut set = SetAttrs {
            mode: c.mode.map(|m| m & 0o7777),
            uid: c.uid,
            gid: c.gid,
            size: c.size,
            atime: time(c.atime),
            mtime: time(c.mtime),
        };
        // A size change through an open File (ftruncate): its buffered writes go first and
        // its cached size follows. By path (truncate), the File of this client that has the
        // file open must learn it too, or its size would be stale.
        if let Some(len) = set.size {
            let opens = match &open {
                Some(o) => vec![o.clone()],
                None => self.opens_of(&node),
            };
            if let Some(o) = opens.first() {
                o.file.set_len(len).await.map_err(errno)?;
                set.size = None;
            }
        }
        if set.is_empty() {
            return self.getattr(ino, fh).await;
        }
        let m = self.client.setattr(&node, &set).await.map_err(errno)?;
        // The kernel learns the new change attribute with these attributes: its pages are
        // still the file's (only metadata changed).
        lock(&self.changes).insert(ino.0, m.change);
        Ok(m)
    }
}

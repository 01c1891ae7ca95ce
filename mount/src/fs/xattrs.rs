//! Extended attributes: the `user.` namespace maps to RFC 8276's (NFSv4.2 GETXATTR,
//! SETXATTR, LISTXATTRS, REMOVEXATTR); the others (`security.`, `system.`, `trusted.`) this
//! mount does not keep: a read finds nothing (ENODATA, answered here, so the kernel's
//! `security.capability` check before each write costs no round trip to the server), a
//! write is EOPNOTSUPP. Against a server without RFC 8276 (`xattr_support` false), the user
//! namespace is EOPNOTSUPP and a listing is empty, as the Linux client answers.

use bytes::Bytes;
use client::XattrSet;
use fuser::{Errno, INodeNo, ReplyXattr};

use super::{errno, Shared};

/// The name in the user namespace without its prefix, or `None` for another namespace.
pub(crate) fn user_name(name: &std::ffi::OsStr) -> Option<Result<String, Errno>> {
    let s = name.to_str()?;
    s.strip_prefix("user.")
        .map(|n| Ok(n.to_owned()))
        .or_else(|| {
            if s.contains('.') {
                None
            } else {
                Some(Err(Errno::EOPNOTSUPP))
            }
        })
}

/// Answers a size query (`size` 0), or the bytes when they fit, or ERANGE.
fn answer_sized(data: &[u8], size: u32, reply: ReplyXattr) {
    if size == 0 {
        reply.size(data.len() as u32)
    } else if data.len() > size as usize {
        reply.error(Errno::ERANGE)
    } else {
        reply.data(data)
    }
}

impl Shared {
    /// Whether the server keeps user xattrs (asked once; a failure to ask says no).
    async fn xattrs(&self) -> bool {
        self.client.supports_xattrs().await.unwrap_or(false)
    }

    pub(crate) async fn getxattr(&self, ino: INodeNo, name: String, size: u32, reply: ReplyXattr) {
        let r = async {
            if !self.xattrs().await {
                return Err(Errno::EOPNOTSUPP);
            }
            let node = self.node(ino)?;
            self.client.getxattr(&node, &name).await.map_err(errno)
        }
        .await;
        match r {
            Ok(v) => answer_sized(&v, size, reply),
            Err(e) => reply.error(e),
        }
    }

    pub(crate) async fn setxattr(
        &self,
        ino: INodeNo,
        name: String,
        value: Bytes,
        flags: i32,
    ) -> Result<(), Errno> {
        if self.opts.read_only {
            return Err(Errno::EROFS);
        }
        if !self.xattrs().await {
            return Err(Errno::EOPNOTSUPP);
        }
        let how = XattrSet::from_flags(flags).map_err(errno)?;
        let node = self.node(ino)?;
        self.client
            .setxattr(&node, &name, value, how)
            .await
            .map_err(errno)
    }

    pub(crate) async fn listxattr(&self, ino: INodeNo, size: u32, reply: ReplyXattr) {
        let r = async {
            if !self.xattrs().await {
                return Ok(Vec::new());
            }
            let node = self.node(ino)?;
            let names = self.client.listxattrs(&node).await.map_err(errno)?;
            let mut out = Vec::new();
            for n in names {
                out.extend_from_slice(b"user.");
                out.extend_from_slice(n.as_bytes());
                out.push(0);
            }
            Ok(out)
        }
        .await;
        match r {
            Ok(list) => answer_sized(&list, size, reply),
            Err(e) => reply.error(e),
        }
    }

    pub(crate) async fn removexattr(&self, ino: INodeNo, name: String) -> Result<(), Errno> {
        if self.opts.read_only {
            return Err(Errno::EROFS);
        }
        if !self.xattrs().await {
            return Err(Errno::EOPNOTSUPP);
        }
        let node = self.node(ino)?;
        self.client.removexattr(&node, &name).await.map_err(errno)
    }
}

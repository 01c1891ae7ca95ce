//! Names in directories: lookup, the calls that make objects (mkdir, mknod, symlink, link)
//! and those that remove or move them, and readlink.

use client::{Metadata, Node, OpenOptions, SetAttrs, Special};
use fuser::{Errno, INodeNo, Request};

use super::{decode_dev, errno, Shared};

/// Who asks to make an object. The client speaks to the server as one user (the mount's),
/// so when that is root, a new object is given to the user who made it, as a kernel NFS
/// client's AUTH_SYS credential would have it created.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Maker {
    uid: u32,
    gid: u32,
}

impl Maker {
    pub(crate) fn of(req: &Request) -> Maker {
        Maker {
            uid: req.uid(),
            gid: req.gid(),
        }
    }
}

type Name = Result<String, Errno>;

impl Shared {
    pub(crate) async fn lookup(
        &self,
        parent: INodeNo,
        name: Name,
    ) -> Result<(Node, Metadata), Errno> {
        let dir = self.node(parent)?;
        self.client.lookup_in(&dir, &name?).await.map_err(errno)
    }

    /// Gives the new object `made` to `who` when the server made it the mount's.
    pub(crate) async fn give(
        &self,
        (node, meta): (Node, Metadata),
        who: Maker,
    ) -> Result<(Node, Metadata), Errno> {
        if self.uid != 0 || (who.uid == 0 && who.gid == 0) {
            return Ok((node, meta));
        }
        let set = SetAttrs {
            uid: Some(who.uid),
            gid: Some(who.gid),
            ..SetAttrs::default()
        };
        let meta = self.client.setattr(&node, &set).await.map_err(errno)?;
        Ok((node, meta))
    }

    fn writable(&self) -> Result<(), Errno> {
        if self.opts.read_only {
            Err(Errno::EROFS)
        } else {
            Ok(())
        }
    }

    pub(crate) async fn mknod(
        &self,
        parent: INodeNo,
        name: Name,
        (mode, rdev): (u32, u32),
        umask: u32,
        who: Maker,
    ) -> Result<(Node, Metadata), Errno> {
        self.writable()?;
        let dir = self.node(parent)?;
        let name = name?;
        let perm = mode & !umask & 0o7777;
        let special = match mode & libc::S_IFMT {
            libc::S_IFIFO => Special::Fifo,
            libc::S_IFSOCK => Special::Socket,
            libc::S_IFBLK => Special::Block(decode_dev(rdev)),
            libc::S_IFCHR => Special::Char(decode_dev(rdev)),
            libc::S_IFREG | 0 => {
                let how = OpenOptions {
                    exclusive: true,
                    truncate: false,
                    mode: perm,
                    ..OpenOptions::create()
                };
                let f = self
                    .client
                    .create_in(&dir, &name, &how)
                    .await
                    .map_err(errno)?;
                let node = f.node();
                let m = f.metadata().await.map_err(errno);
                f.close().await.map_err(errno)?;
                return self.give((node, m?), who).await;
            }
            _ => return Err(Errno::EINVAL),
        };
        let made = self
            .client
            .mknod_in(&dir, &name, special, perm)
            .await
            .map_err(errno)?;
        self.give(made, who).await
    }

    pub(crate) async fn mkdir(
        &self,
        parent: INodeNo,
        name: Name,
        mode: u32,
        who: Maker,
    ) -> Result<(Node, Metadata), Errno> {
        self.writable()?;
        let dir = self.node(parent)?;
        let made = self
            .client
            .mkdir_in(&dir, &name?, mode)
            .await
            .map_err(errno)?;
        self.give(made, who).await
    }

    pub(crate) async fn symlink(
        &self,
        parent: INodeNo,
        name: Name,
        target: Result<String, Errno>,
        who: Maker,
    ) -> Result<(Node, Metadata), Errno> {
        self.writable()?;
        let dir = self.node(parent)?;
        let made = self
            .client
            .symlink_in(&dir, &name?, &target?)
            .await
            .map_err(errno)?;
        self.give(made, who).await
    }

    pub(crate) async fn link(
        &self,
        ino: INodeNo,
        newparent: INodeNo,
        newname: Name,
    ) -> Result<(Node, Metadata), Errno> {
        self.writable()?;
        let node = self.node(ino)?;
        let dir = self.node(newparent)?;
        let m = self
            .client
            .link_in(&node, &dir, &newname?)
            .await
            .map_err(errno)?;
        Ok((node, m))
    }

    pub(crate) async fn unlink(&self, parent: INodeNo, name: Name) -> Result<(), Errno> {
        self.writable()?;
        let dir = self.node(parent)?;
        self.client.remove_in(&dir, &name?).await.map_err(errno)
    }

    pub(crate) async fn rmdir(&self, parent: INodeNo, name: Name) -> Result<(), Errno> {
        self.writable()?;
        let dir = self.node(parent)?;
        self.client.rmdir_in(&dir, &name?).await.map_err(errno)
    }

    pub(crate) async fn rename(
        &self,
        parent: INodeNo,
        name: Name,
        newparent: INodeNo,
        newname: Name,
    ) -> Result<(), Errno> {
        self.writable()?;
        let from = self.node(parent)?;
        let to = self.node(newparent)?;
        self.client
            .rename_in(&from, &name?, &to, &newname?)
            .await
            .map_err(errno)
    }

    pub(crate) async fn readlink(&self, ino: INodeNo) -> Result<String, Errno> {
        let node = self.node(ino)?;
        self.client.readlink_node(&node).await.map_err(errno)
    }
}

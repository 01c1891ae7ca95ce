//! The namespace by filehandle: a [`Node`] names a file as the server does, so a caller that
//! keeps nodes (a FUSE file system, whose kernel speaks in inodes) never walks a path again,
//! and still reaches a file that was renamed, or unlinked while open, since it got the node.
//!
//! Every operation here starts from an [`At`]: a path walked from the root (the path API of
//! `namespace`, still one COMPOUND per call) or a filehandle (this API). The path functions
//! are the same implementation with a walk in front.

use nfs_proto::nfs4::attr::{FileAttrs, FATTR4_FILEHANDLE};

use super::*;
use crate::attr::{FsStats, SetAttrs};

/// A file, directory or other object on the server, by its filehandle (RFC 8881 section
/// 4.2.3: persistent on our MDS, so a node stays good across a server restart) and its file
/// id (what `stat(2)` calls the inode number).
///
/// Nodes compare by filehandle: two lookups of one file give equal nodes.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Node {
    pub(crate) fh: NfsFh4,
    fileid: u64,
}

impl Node {
    pub(crate) fn new(fh: NfsFh4, fileid: u64) -> Node {
        Node { fh, fileid }
    }

    /// The file id (inode number) the server gave when the node was got.
    pub fn fileid(&self) -> u64 {
        self.fileid
    }

    /// The filehandle's bytes (opaque; for a caller that keeps nodes in a table of its own).
    pub fn filehandle(&self) -> &[u8] {
        &self.fh.0
    }
}

impl std::fmt::Debug for Node {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Node({}, {:?})", self.fileid, self.fh)
    }
}

/// A special file [`Client::mknod_in`] makes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Special {
    /// A FIFO (named pipe).
    Fifo,
    /// A socket (what `bind(2)` of a Unix socket makes).
    Socket,
    /// A block device: major and minor numbers.
    Block((u32, u32)),
    /// A character device: major and minor numbers.
    Char((u32, u32)),
}

/// A page of a directory's entries ([`Client::readdir_page`]).
#[derive(Clone, Debug)]
pub struct DirPage {
    /// Entries, in the server's order (without `.` and `..`).
    pub entries: Vec<DirEntryPlus>,
    /// The cookie verifier to send with the next page's cookie (RFC 8881 section 18.23:
    /// the server may refuse a cookie under another verifier with NFS4ERR_NOT_SAME).
    pub verifier: [u8; 8],
    /// No entries follow the last one.
    pub eof: bool,
}

/// One entry of a [`DirPage`]: its name, where the next page starts after it, and what
/// FUSE's `readdirplus` answers with (node and attributes).
#[derive(Clone, Debug)]
pub struct DirEntryPlus {
    /// Its name.
    pub name: String,
    /// The cookie that continues the listing after this entry (a FUSE readdir offset).
    pub cookie: u64,
    /// Its node, when the server gave its filehandle (else [`Client::lookup_in`] gets it).
    pub node: Option<Node>,
    /// Its attributes (absent when the server could not give them).
    pub meta: Option<Metadata>,
}

/// Where a namespace operation starts: a path walked from the root, or a filehandle.
#[derive(Clone, Copy)]
pub(crate) enum At<'a> {
    /// PUTROOTFH and a LOOKUP per component.
    Path(&'a [&'a str]),
    /// PUTFH.
    Fh(&'a NfsFh4),
}

impl At<'_> {
    /// The operations that make it the current filehandle.
    pub(crate) fn ops(self) -> Vec<NfsArgop4> {
        match self {
            At::Path(parts) => Client::walk(parts),
            At::Fh(fh) => vec![putfh(fh)],
        }
    }
}

/// Refuses what cannot be one name in a directory: empty, `.`, `..`, or with a `/`
/// (NFSv4 has no such names; the server would answer NFS4ERR_BADNAME or worse, look up the
/// name literally).
pub(crate) fn check_name(name: &str) -> Result<()> {
    if name.is_empty() || name == "." || name == ".." || name.contains('/') {
        return Err(Error::Invalid(format!(
            "{name:?} is not a name in a directory"
        )));
    }
    Ok(())
}

impl Client {
    /// The server's root directory (of its pseudo file system, or of our MDS's namespace).
    pub async fn root(&self) -> Result<(Node, Metadata)> {
        self.resolve(At::Path(&[]).ops()).await
    }

    /// The node of `path` and its attributes (a bridge from a path to the handle API, e.g.
    /// the export a mount starts from).
    pub async fn node_of(&self, path: &str) -> Result<(Node, Metadata)> {
        self.resolve(At::Path(&components(path)?).ops()).await
    }

    /// `name` in directory `dir`: its node and fresh attributes (one LOOKUP).
    pub async fn lookup_in(&self, dir: &Node, name: &str) -> Result<(Node, Metadata)> {
        check_name(name)?;
        let mut ops = At::Fh(&dir.fh).ops();
        ops.push(ops::lookup(name));
        self.resolve(ops).await
    }

    /// The parent directory of `dir` (LOOKUPP; the root's parent is NFS4ERR_NOENT), for a
    /// caller that must answer `..` from a node alone.
    pub async fn parent_of(&self, dir: &Node) -> Result<(Node, Metadata)> {
        self.resolve(vec![putfh(&dir.fh), NfsArgop4::LookupP]).await
    }

    /// Fresh attributes of `node` (a GETATTR; the cache is refreshed with them). Under this
    /// client's own write delegation, its writes not yet sent count in the size.
    pub async fn getattr(&self, node: &Node) -> Result<Metadata> {
        self.resolve(At::Fh(&node.fh).ops()).await.map(|(_, m)| m)
    }

    /// `ops` (which leave the object as the current filehandle), GETFH and GETATTR: the
    /// object's node and attributes, as this client sees them, remembered in the cache.
    pub(crate) async fn resolve(&self, mut ops: Vec<NfsArgop4>) -> Result<(Node, Metadata)> {
        ops.extend([NfsArgop4::GetFh, ops::getattr()]);
        let r = self.run(ops).await?;
        let meta = ops::attrs_of(&r).ok_or_else(|| self.protocol("GETATTR without a type"))?;
        let fh = ops::fh_of(&r)?;
        let mut meta = self.inner.with_own_writes(&fh, meta);
        if let Some(so) = self.inner.server_open(&fh) {
            let st = so.st();
            if st
                .deleg
                .as_ref()
                .is_some_and(|d| d.kind == deleg::DelegKind::Write)
            {
                meta.size = st.meta.size;
            }
        }
        self.inner.remember_attrs(&fh, &meta);
        Ok((Node::new(fh, meta.fileid), meta))
    }

    /// One page of directory `dir`'s entries from `cookie` (0: the start; else an entry's
    /// `cookie`) under `verifier` (zeros at the start; else the previous page's), about
    /// `max_bytes` of reply at most. Paging, not one list, so a directory of any size
    /// streams to a caller that answers the kernel one buffer at a time.
    pub async fn readdir_page(
        &self,
        dir: &Node,
        cookie: u64,
        verifier: [u8; 8],
        max_bytes: u32,
    ) -> Result<DirPage> {
        let mut want = attr::request();
        want.set(FATTR4_FILEHANDLE);
        let maxcount = max_bytes.max(4096);
        let r = self
            .run(vec![
                putfh(&dir.fh),
                NfsArgop4::ReadDir(ReadDirArgs {
                    cookie,
                    cookieverf: verifier,
                    dircount: maxcount / 4,
                    maxcount,
                    attr_request: want,
                }),
            ])
            .await?;
        let ok = ops::find(&r, NfsOpnum4::OP_READDIR, |x| match x {
            NfsResop4::ReadDir(ReadDirRes::Ok(ok)) => Some(ok.clone()),
            _ => None,
        })?;
        let entries: Vec<DirEntryPlus> = ok
            .reply
            .entries
            .into_iter()
            .map(|e| {
                let a = FileAttrs::from_fattr(&e.attrs).ok();
                let meta = a.as_ref().and_then(Metadata::from_attrs);
                let node = a
                    .and_then(|a| a.filehandle)
                    .zip(meta.as_ref())
                    .map(|(fh, m)| Node::new(fh, m.fileid));
                DirEntryPlus {
                    name: e.name.to_string(),
                    cookie: e.cookie,
                    node,
                    meta,
                }
            })
            .collect();
        if entries.is_empty() && !ok.reply.eof {
            return Err(self.protocol("READDIR returned no entries and no eof"));
        }
        Ok(DirPage {
            entries,
            verifier: ok.cookieverf,
            eof: ok.reply.eof,
        })
    }

    /// Makes directory `name` in `dir`.
    pub async fn mkdir_in(&self, dir: &Node, name: &str, mode: u32) -> Result<(Node, Metadata)> {
        check_name(name)?;
        self.create_object(At::Fh(&dir.fh), name, Createtype4::Dir, mode)
            .await
    }

    /// Makes symbolic link `name` in `dir`, pointing to `target`.
    pub async fn symlink_in(
        &self,
        dir: &Node,
        name: &str,
        target: &str,
    ) -> Result<(Node, Metadata)> {
        check_name(name)?;
        let kind = Createtype4::Lnk(Utf8String::from(target));
        self.create_object(At::Fh(&dir.fh), name, kind, 0o777).await
    }

    /// Makes a FIFO (named pipe) `name` in `dir`: it lives in the namespace only; its data
    /// never reaches the server (what `mkfifo(2)` and FUSE's `mknod` of S_IFIFO ask).
    pub async fn mknod_fifo_in(
        &self,
        dir: &Node,
        name: &str,
        mode: u32,
    ) -> Result<(Node, Metadata)> {
        self.mknod_in(dir, name, Special::Fifo, mode).await
    }

    /// Makes a special file `name` in `dir` (`mknod(2)`: a FIFO, a socket, a block or
    /// character device with its numbers). Like a FIFO, each lives in the namespace only:
    /// opening it reaches the device or the socket of the host that opens it.
    pub async fn mknod_in(
        &self,
        dir: &Node,
        name: &str,
        kind: Special,
        mode: u32,
    ) -> Result<(Node, Metadata)> {
        check_name(name)?;
        let dev = |(specdata1, specdata2)| Specdata4 {
            specdata1,
            specdata2,
        };
        let kind = match kind {
            Special::Fifo => Createtype4::Fifo,
            Special::Socket => Createtype4::Sock,
            Special::Block(d) => Createtype4::Blk(dev(d)),
            Special::Char(d) => Createtype4::Chr(dev(d)),
        };
        self.create_object(At::Fh(&dir.fh), name, kind, mode).await
    }

    /// CREATE of a non-regular object `name` of `kind` in `at`, its node and attributes.
    pub(crate) async fn create_object(
        &self,
        at: At<'_>,
        name: &str,
        kind: Createtype4,
        mode: u32,
    ) -> Result<(Node, Metadata)> {
        let mut ops = at.ops();
        ops.push(NfsArgop4::Create(CreateArgs {
            objtype: kind,
            objname: Utf8String::from(name),
            createattrs: attr::set(Some(mode), None),
        }));
        self.resolve(ops).await
    }

    /// The target of symbolic link `node`.
    pub async fn readlink_node(&self, node: &Node) -> Result<String> {
        self.readlink_at(At::Fh(&node.fh)).await
    }

    pub(crate) async fn readlink_at(&self, at: At<'_>) -> Result<String> {
        let mut ops = at.ops();
        ops.push(NfsArgop4::ReadLink);
        let r = self.run(ops).await?;
        ops::find(&r, NfsOpnum4::OP_READLINK, |x| match x {
            NfsResop4::ReadLink(ReadLinkRes::Ok(ok)) => Some(ok.link.to_string()),
            _ => None,
        })
    }

    /// Removes `name` from `dir` (a file, symbolic link or fifo; NFSv4's REMOVE takes an
    /// empty directory too). A file this client has open stays readable and writable through
    /// its [`File`]s: they hold the filehandle and the server keeps an open file's data.
    pub async fn remove_in(&self, dir: &Node, name: &str) -> Result<()> {
        check_name(name)?;
        if let Some(fh) = self.inner.take_entry(&dir.fh, name) {
            if let Some(done) = self.remove_returning(&fh, At::Fh(&dir.fh), name).await {
                self.forget_names();
                return done;
            }
        }
        self.yield_name(&dir.fh, name).await;
        self.forget_names();
        self.remove_at(At::Fh(&dir.fh), name).await
    }

    /// Removes `name` from `at` in the COMPOUND that gives back this client's delegation of
    /// `fh`, the file the name stood for when this client created or opened it, and CLOSEs
    /// the open it kept: one round trip where a LOOKUP, the return and the REMOVE took three.
    /// `None` when no delegation of `fh` is held (or it is on its way back already): the
    /// caller removes as usual.
    pub(crate) async fn remove_returning(
        &self,
        fh: &NfsFh4,
        at: At<'_>,
        name: &str,
    ) -> Option<Result<()>> {
        let so = self.inner.server_open(fh)?;
        let stateid = self.inner.start_return(&so)?;
        let mut then = at.ops();
        then.push(NfsArgop4::Remove(RemoveArgs {
            target: Utf8String::from(name),
        }));
        let returned = self.inner.give_back_then(so, stateid, then).await?;
        Some(match returned.then {
            Some(done) => done,
            // The return failed (revoked meanwhile, say): the REMOVE on its own.
            None => self.remove_at(at, name).await,
        })
    }

    /// Removes the empty directory `name` from `dir`: NFS4ERR_NOTDIR when `name` is not a
    /// directory (rmdir(2)'s ENOTDIR; NFSv4's REMOVE itself takes any type), NFS4ERR_NOTEMPTY
    /// when it has entries. One COMPOUND: LOOKUP and VERIFY of the type, then REMOVE, so the
    /// name cannot change kind between the check and the removal.
    pub async fn rmdir_in(&self, dir: &Node, name: &str) -> Result<()> {
        check_name(name)?;
        self.forget_names();
        let dir_type = FileAttrs {
            r#type: Some(NfsFtype4::NF4DIR),
            ..FileAttrs::default()
        };
        let ops = vec![
            putfh(&dir.fh),
            ops::lookup(name),
            NfsArgop4::Verify(VerifyArgs {
                obj_attributes: dir_type.to_fattr(&dir_type.mask()),
            }),
            putfh(&dir.fh),
            NfsArgop4::Remove(RemoveArgs {
                target: Utf8String::from(name),
            }),
        ];
        match self.run(ops).await {
            Err(e) if e.is(NfsStat4::NFS4ERR_NOT_SAME) => Err(Error::Nfs {
                op: NfsOpnum4::OP_REMOVE,
                status: NfsStat4::NFS4ERR_NOTDIR,
            }),
            r => r.map(drop),
        }
    }

    pub(crate) async fn remove_at(&self, at: At<'_>, name: &str) -> Result<()> {
        let mut ops = at.ops();
        ops.push(NfsArgop4::Remove(RemoveArgs {
            target: Utf8String::from(name),
        }));
        self.run(ops).await.map(drop)
    }

    /// Renames `from_name` in `from_dir` to `to_name` in `to_dir`, replacing what `to_name`
    /// named (as rename(2); NFS4ERR_EXIST when that is a directory with entries or of
    /// another kind). Open [`File`]s of either file keep working (they hold filehandles).
    pub async fn rename_in(
        &self,
        from_dir: &Node,
        from_name: &str,
        to_dir: &Node,
        to_name: &str,
    ) -> Result<()> {
        check_name(from_name)?;
        check_name(to_name)?;
        self.inner.take_entry(&from_dir.fh, from_name);
        self.inner.take_entry(&to_dir.fh, to_name);
        self.yield_name(&from_dir.fh, from_name).await;
        self.yield_name(&to_dir.fh, to_name).await;
        self.forget_names();
        self.rename_at(At::Fh(&from_dir.fh), from_name, At::Fh(&to_dir.fh), to_name)
            .await
    }

    pub(crate) async fn rename_at(
        &self,
        from: At<'_>,
        from_name: &str,
        to: At<'_>,
        to_name: &str,
    ) -> Result<()> {
        let mut ops = from.ops();
        ops.push(NfsArgop4::SaveFh);
        ops.extend(to.ops());
        ops.push(NfsArgop4::Rename(RenameArgs {
            oldname: Utf8String::from(from_name),
            newname: Utf8String::from(to_name),
        }));
        self.run(ops).await.map(drop)
    }

    /// Makes `name` in `dir` a hard link to `node`; the node's fresh attributes (its link
    /// count grew).
    pub async fn link_in(&self, node: &Node, dir: &Node, name: &str) -> Result<Metadata> {
        check_name(name)?;
        self.inner.yield_delegation(&node.fh).await;
        self.link_at(At::Fh(&node.fh), At::Fh(&dir.fh), name)
            .await?;
        self.getattr(node).await
    }

    pub(crate) async fn link_at(&self, target: At<'_>, dir: At<'_>, name: &str) -> Result<()> {
        let mut ops = target.ops();
        ops.push(NfsArgop4::SaveFh);
        ops.extend(dir.ops());
        ops.push(NfsArgop4::Link(LinkArgs {
            newname: Utf8String::from(name),
        }));
        self.run(ops).await.map(drop)
    }

    /// Changes what `set` names of `node` in one SETATTR (with the anonymous stateid) and
    /// returns the fresh attributes. This client's delegation of the file goes back first.
    /// A size change of a file open here is better made with [`File::set_len`], which sends
    /// the File's buffered writes first and keeps its cached size right.
    pub async fn setattr(&self, node: &Node, set: &SetAttrs) -> Result<Metadata> {
        self.inner.yield_delegation(&node.fh).await;
        self.inner.forget_attrs(&node.fh);
        let mut ops = vec![putfh(&node.fh)];
        if !set.is_empty() {
            ops.push(NfsArgop4::SetAttr(SetAttrArgs {
                stateid: Stateid4::ANONYMOUS,
                obj_attributes: set.to_fattr(),
            }));
        }
        self.inner
            .sizing(&node.fh, set.size, self.resolve(ops))
            .await
            .map(|(_, m)| m)
    }

    /// Space and file counts of the file system holding `node` (its `space_*` and
    /// `files_*` attributes), for `statfs(2)`: the export's, not the root's (a server's
    /// pseudo root, as nfs-ganesha's, holds no space).
    pub async fn statfs(&self, node: &Node) -> Result<FsStats> {
        let r = self
            .run(vec![
                putfh(&node.fh),
                NfsArgop4::GetAttr(GetAttrArgs {
                    attr_request: attr::fs_request(),
                }),
            ])
            .await?;
        ops::find(&r, NfsOpnum4::OP_GETATTR, |x| match x {
            NfsResop4::GetAttr(GetAttrRes::Ok(ok)) => FileAttrs::from_fattr(&ok.obj_attributes)
                .ok()
                .map(|a| FsStats::from_attrs(&a)),
            _ => None,
        })
    }

    /// Gives back this client's delegation of `name` in `dir` before it changes that name
    /// (as the path API's `yield_path`): a LOOKUP only while the client holds delegations.
    async fn yield_name(&self, dir: &NfsFh4, name: &str) {
        if self.inner.delegations_held() == 0 {
            return;
        }
        let ops = vec![putfh(dir), ops::lookup(name), NfsArgop4::GetFh];
        if let Ok(fh) = self.run(ops).await.and_then(|r| ops::fh_of(&r)) {
            self.inner.yield_delegation(&fh).await;
        }
    }

    /// A change by handle may move or remove any path the name cache holds (a renamed
    /// directory takes every path under it along): the whole cache goes, so the next
    /// delegated open by path looks its name up again.
    fn forget_names(&self) {
        self.inner
            .names
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clear();
    }
}

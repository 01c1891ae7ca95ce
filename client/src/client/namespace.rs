//! The namespace operations of a [`Client`]: lookups, attributes, directories, links, renames,
//! removals, size and mode changes, by absolute path.

use super::*;

impl Client {
    /// The filehandle of `path`.
    pub async fn lookup(&self, path: &str) -> Result<NfsFh4> {
        let mut ops = Self::walk(&components(path)?);
        ops.push(NfsArgop4::GetFh);
        ops::fh_of(&self.run(ops).await?)
    }

    /// Attributes of `path` (fresh from the server; the cache is refreshed with them).
    pub async fn stat(&self, path: &str) -> Result<Metadata> {
        let mut ops = Self::walk(&components(path)?);
        ops.extend([NfsArgop4::GetFh, ops::getattr()]);
        let r = self.run(ops).await?;
        let mut meta = ops::attrs_of(&r).ok_or_else(|| self.protocol("GETATTR without a type"))?;
        let fh = ops::fh_of(&r)?;
        // Under this client's own write delegation, its writes not yet sent count.
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
        Ok(meta)
    }

    /// Gives back this client's delegation of the file at `path`, if it holds one, before it
    /// changes the file's name or attributes (RFC 8881 section 10.4.4 lets a server recall
    /// even for the holder's own change; giving it back first spares the wait).
    async fn yield_path(&self, path: &str) {
        if let Some((fh, _)) = self.inner.bound_name(path) {
            self.inner.yield_delegation(&fh).await;
        }
    }

    /// The entries of directory `path` (without `.` and `..`), with their attributes.
    pub async fn readdir(&self, path: &str) -> Result<Vec<DirEntry>> {
        let dir = self.lookup(path).await?;
        let mut out = Vec::new();
        let mut cookie = 0;
        let mut verf = [0u8; 8];
        loop {
            let r = self
                .run(vec![
                    putfh(&dir),
                    NfsArgop4::ReadDir(ReadDirArgs {
                        cookie,
                        cookieverf: verf,
                        dircount: 16 << 10,
                        maxcount: 64 << 10,
                        attr_request: attr::request(),
                    }),
                ])
                .await?;
            let ok = ops::find(&r, NfsOpnum4::OP_READDIR, |x| match x {
                NfsResop4::ReadDir(ReadDirRes::Ok(ok)) => Some(ok.clone()),
                _ => None,
            })?;
            verf = ok.cookieverf;
            let n = ok.reply.entries.len();
            for e in ok.reply.entries {
                cookie = e.cookie;
                out.push(DirEntry {
                    name: e.name.to_string(),
                    meta: Metadata::from_fattr(&e.attrs),
                });
            }
            if ok.reply.eof {
                return Ok(out);
            }
            if n == 0 {
                return Err(self.protocol("READDIR returned no entries and no eof"));
            }
        }
    }

    /// Makes directory `path`.
    pub async fn mkdir(&self, path: &str, mode: u32) -> Result<()> {
        let (parent, name) = parent_and_name(path)?;
        let mut ops = Self::walk(&parent);
        ops.push(NfsArgop4::Create(CreateArgs {
            objtype: Createtype4::Dir,
            objname: Utf8String::from(name),
            createattrs: attr::set(Some(mode), None),
        }));
        self.run(ops).await.map(drop)
    }

    /// Makes a symbolic link at `path` pointing to `target`.
    pub async fn symlink(&self, target: &str, path: &str) -> Result<()> {
        let (parent, name) = parent_and_name(path)?;
        let mut ops = Self::walk(&parent);
        ops.push(NfsArgop4::Create(CreateArgs {
            objtype: Createtype4::Lnk(Utf8String::from(target)),
            objname: Utf8String::from(name),
            createattrs: attr::set(Some(0o777), None),
        }));
        self.run(ops).await.map(drop)
    }

    /// The target of symbolic link `path`.
    pub async fn readlink(&self, path: &str) -> Result<String> {
        let mut ops = Self::walk(&components(path)?);
        ops.push(NfsArgop4::ReadLink);
        let r = self.run(ops).await?;
        ops::find(&r, NfsOpnum4::OP_READLINK, |x| match x {
            NfsResop4::ReadLink(ReadLinkRes::Ok(ok)) => Some(ok.link.to_string()),
            _ => None,
        })
    }

    /// Removes a file, a symbolic link or an empty directory.
    pub async fn remove(&self, path: &str) -> Result<()> {
        let (parent, name) = parent_and_name(path)?;
        self.yield_path(path).await;
        self.inner.unbind_names(path);
        let mut ops = Self::walk(&parent);
        ops.push(NfsArgop4::Remove(RemoveArgs {
            target: Utf8String::from(name),
        }));
        self.run(ops).await.map(drop)
    }

    /// Renames `from` to `to` (replacing `to` if it exists, as rename(2)).
    pub async fn rename(&self, from: &str, to: &str) -> Result<()> {
        let (fp, fname) = parent_and_name(from)?;
        let (tp, tname) = parent_and_name(to)?;
        self.yield_path(from).await;
        self.yield_path(to).await;
        self.inner.unbind_names(from);
        self.inner.unbind_names(to);
        let mut ops = Self::walk(&fp);
        ops.push(NfsArgop4::SaveFh);
        ops.extend(Self::walk(&tp));
        ops.push(NfsArgop4::Rename(RenameArgs {
            oldname: Utf8String::from(fname),
            newname: Utf8String::from(tname),
        }));
        self.run(ops).await.map(drop)
    }

    /// Makes `new` a hard link to `existing`.
    pub async fn link(&self, existing: &str, new: &str) -> Result<()> {
        let (np, nname) = parent_and_name(new)?;
        self.yield_path(existing).await;
        let mut ops = Self::walk(&components(existing)?);
        ops.push(NfsArgop4::SaveFh);
        ops.extend(Self::walk(&np));
        ops.push(NfsArgop4::Link(LinkArgs {
            newname: Utf8String::from(nname),
        }));
        self.run(ops).await.map(drop)
    }

    /// Sets the size of `path` (SETATTR size with the anonymous stateid).
    pub async fn truncate(&self, path: &str, size: u64) -> Result<()> {
        let fh = self.lookup(path).await?;
        self.inner.yield_delegation(&fh).await;
        self.setattr_size(&fh, Stateid4::ANONYMOUS, size).await
    }

    pub(crate) async fn setattr_size(
        &self,
        fh: &NfsFh4,
        stateid: Stateid4,
        size: u64,
    ) -> Result<()> {
        self.inner.forget_attrs(fh);
        self.run(vec![
            putfh(fh),
            NfsArgop4::SetAttr(SetAttrArgs {
                stateid,
                obj_attributes: attr::set(None, Some(size)),
            }),
        ])
        .await
        .map(drop)
    }

    /// Changes the permission bits of `path`.
    pub async fn chmod(&self, path: &str, mode: u32) -> Result<()> {
        let fh = self.lookup(path).await?;
        self.inner.yield_delegation(&fh).await;
        self.inner.forget_attrs(&fh);
        self.run(vec![
            putfh(&fh),
            NfsArgop4::SetAttr(SetAttrArgs {
                stateid: Stateid4::ANONYMOUS,
                obj_attributes: attr::set(Some(mode), None),
            }),
        ])
        .await
        .map(drop)
    }
}

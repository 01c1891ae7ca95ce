//! The namespace operations of a [`Client`]: lookups, attributes, directories, links, renames,
//! removals, size and mode changes, by absolute path.

use super::*;
use crate::attr::SetAttrs;

impl Client {
    /// The filehandle of `path`.
    pub async fn lookup(&self, path: &str) -> Result<NfsFh4> {
        let mut ops = Self::walk(&components(path)?);
        ops.push(NfsArgop4::GetFh);
        ops::fh_of(&self.run(ops).await?)
    }

    /// Attributes of `path` (fresh from the server; the cache is refreshed with them).
    pub async fn stat(&self, path: &str) -> Result<Metadata> {
        let (_, meta) = self.node_of(path).await?;
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

    /// The entries of directory `path` (without `.` and `..`), with their attributes: every
    /// page of [`Client::readdir_page`], in one list.
    pub async fn readdir(&self, path: &str) -> Result<Vec<DirEntry>> {
        let (dir, _) = self.node_of(path).await?;
        let mut out = Vec::new();
        let mut cookie = 0;
        let mut verifier = [0u8; 8];
        loop {
            let page = self.readdir_page(&dir, cookie, verifier, 64 << 10).await?;
            verifier = page.verifier;
            for e in page.entries {
                cookie = e.cookie;
                out.push(DirEntry {
                    name: e.name,
                    meta: e.meta,
                });
            }
            if page.eof {
                return Ok(out);
            }
        }
    }

    /// Makes directory `path`.
    pub async fn mkdir(&self, path: &str, mode: u32) -> Result<()> {
        let (parent, name) = parent_and_name(path)?;
        self.create_object(At::Path(&parent), name, Createtype4::Dir, mode)
            .await
            .map(drop)
    }

    /// Makes a symbolic link at `path` pointing to `target`.
    pub async fn symlink(&self, target: &str, path: &str) -> Result<()> {
        let (parent, name) = parent_and_name(path)?;
        let kind = Createtype4::Lnk(Utf8String::from(target));
        self.create_object(At::Path(&parent), name, kind, 0o777)
            .await
            .map(drop)
    }

    /// The target of symbolic link `path`.
    pub async fn readlink(&self, path: &str) -> Result<String> {
        self.readlink_at(At::Path(&components(path)?)).await
    }

    /// Removes a file, a symbolic link or an empty directory.
    pub async fn remove(&self, path: &str) -> Result<()> {
        let (parent, name) = parent_and_name(path)?;
        if let Some((fh, _)) = self.inner.bound_name(path) {
            self.inner.unbind_names(path);
            if let Some(done) = self.remove_returning(&fh, At::Path(&parent), name).await {
                return done;
            }
        }
        self.inner.unbind_names(path);
        self.remove_at(At::Path(&parent), name).await
    }

    /// Renames `from` to `to` (replacing `to` if it exists, as rename(2)).
    pub async fn rename(&self, from: &str, to: &str) -> Result<()> {
        let (fp, fname) = parent_and_name(from)?;
        let (tp, tname) = parent_and_name(to)?;
        self.yield_path(from).await;
        self.yield_path(to).await;
        self.inner.unbind_names(from);
        self.inner.unbind_names(to);
        self.rename_at(At::Path(&fp), fname, At::Path(&tp), tname)
            .await
    }

    /// Makes `new` a hard link to `existing`.
    pub async fn link(&self, existing: &str, new: &str) -> Result<()> {
        let (np, nname) = parent_and_name(new)?;
        self.yield_path(existing).await;
        self.link_at(At::Path(&components(existing)?), At::Path(&np), nname)
            .await
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
        let setattr = self.run(vec![
            putfh(fh),
            NfsArgop4::SetAttr(SetAttrArgs {
                stateid,
                obj_attributes: attr::set(None, Some(size)),
            }),
        ]);
        self.inner.sizing(fh, Some(size), setattr).await.map(drop)
    }

    /// Changes the permission bits of `path`.
    pub async fn chmod(&self, path: &str, mode: u32) -> Result<()> {
        let (node, _) = self.node_of(path).await?;
        let set = SetAttrs {
            mode: Some(mode),
            ..SetAttrs::default()
        };
        self.setattr(&node, &set).await.map(drop)
    }
}

//! Opening files: OPEN (with creation, exclusive creation and truncation), opens a held
//! delegation answers locally, and the table of the client's open files.

use super::*;

impl Client {
    /// Creates (or truncates) `path` and opens it for reading and writing.
    pub async fn create(&self, path: &str, mode: u32) -> Result<File> {
        self.open(
            path,
            &OpenOptions {
                mode,
                ..OpenOptions::create()
            },
        )
        .await
    }

    /// Opens `path`. Close-to-open: the open fetches fresh attributes, and cached data of the
    /// file is dropped when its change attribute moved since it was cached. Under a
    /// delegation that covers the access (RFC 8881 section 10.4.1), the open is made here
    /// with no OPEN and no GETATTR (a LOOKUP when the path was resolved longer ago than the
    /// attribute timeout).
    pub async fn open(&self, path: &str, how: &OpenOptions) -> Result<File> {
        let (parent, name) = parent_and_name(path)?;
        let access = access_of(how)?;
        if !(how.create && how.exclusive) {
            if let Some(f) = self.open_delegated(path, access, how).await? {
                return Ok(f);
            }
        }
        let claim = OpenClaim4::Null(Utf8String::from(name));
        self.open_at(At::Path(&parent), claim, access, how, path, true)
            .await
    }

    /// Opens `name` in directory `dir` as `how` says, creating it when `how.create` (with
    /// `how.exclusive`: NFS4ERR_EXIST when it exists, as O_CREAT|O_EXCL; with
    /// `how.truncate`: O_TRUNC). What FUSE's `create` asks; the node is [`File::node`].
    pub async fn create_in(&self, dir: &Node, name: &str, how: &OpenOptions) -> Result<File> {
        check_name(name)?;
        let access = access_of(how)?;
        let claim = OpenClaim4::Null(Utf8String::from(name));
        let f = self
            .open_at(At::Fh(&dir.fh), claim, access, how, name, false)
            .await?;
        if f.open.server.held().is_some() {
            self.inner.bind_entry(&dir.fh, name, &f.open.fh);
        }
        Ok(f)
    }

    /// Opens the file `node` (OPEN with CLAIM_FH, RFC 8881 section 18.16.3: no name, so a
    /// file renamed or unlinked since the node was got is still reached). `how.create` and
    /// `how.exclusive` mean nothing for a node that exists and are ignored. Under a
    /// delegation that covers the access the open is made here, with no request at all.
    pub async fn open_node(&self, node: &Node, how: &OpenOptions) -> Result<File> {
        let access = access_of(how)?;
        let label = format!("<fileid {}>", node.fileid());
        if let Some(f) = self.open_held(&node.fh, access, how, &label).await? {
            return Ok(f);
        }
        let how = OpenOptions {
            create: false,
            exclusive: false,
            ..how.clone()
        };
        self.open_at(
            At::Fh(&node.fh),
            OpenClaim4::Fh,
            access,
            &how,
            &label,
            false,
        )
        .await
    }

    /// OPEN from `at` with `claim`, and the File over it. `label` names the file in
    /// messages; `bind`: remember it as a path for later delegated opens by path.
    async fn open_at(
        &self,
        at: At<'_>,
        claim: OpenClaim4,
        access: u32,
        how: &OpenOptions,
        label: &str,
        bind: bool,
    ) -> Result<File> {
        let openhow = if how.create {
            let attrs = attr::set(Some(how.mode), (how.truncate && how.write).then_some(0));
            Openflag4::Create(if how.exclusive {
                Createhow4::Guarded(attrs)
            } else {
                Createhow4::Unchecked(attrs)
            })
        } else {
            Openflag4::NoCreate
        };
        let mut ops = at.ops();
        ops.extend([
            NfsArgop4::Open(OpenArgs {
                seqid: 0,
                share_access: access | self.inner.want(),
                share_deny: OPEN4_SHARE_DENY_NONE,
                owner: ops::state_owner(&self.inner.owner),
                openhow,
                claim,
            }),
            NfsArgop4::GetFh,
            ops::getattr(),
        ]);
        // A file created for writing is written next: its RW layout comes in the same
        // COMPOUND (as the Linux client's), under the stateid the OPEN just made, and the
        // MDS makes both durable with one commit.
        let pnfs = self.inner.pnfs.as_ref().filter(|_| how.create && how.write);
        if let Some(p) = pnfs {
            ops.push(crate::pnfs::layoutget_op(
                crate::pnfs::CURRENT_STATEID,
                Layoutiomode4::LAYOUTIOMODE4_RW,
                p.layout_type(),
            ));
        }
        let reply = self.inner.mds.compound(ops).await?;
        // Only a failing LAYOUTGET leaves the OPEN standing: the writes go through the MDS
        // for a while (or ask again).
        let layout_refused = pnfs.is_some()
            && reply.status != NfsStat4::NFS4_OK
            && matches!(reply.results.last(), Some(NfsResop4::LayoutGet(_)));
        let status = reply.status;
        let r = if layout_refused {
            reply.results
        } else {
            reply.ok()?
        };
        let ok = ops::find(&r, NfsOpnum4::OP_OPEN, |x| match x {
            NfsResop4::Open(OpenRes::Ok(ok)) => Some(ok.clone()),
            _ => None,
        })?;
        let fh = ops::fh_of(&r)?;
        if let Some(p) = pnfs {
            let granted = match r.last() {
                Some(NfsResop4::LayoutGet(LayoutGetRes::Ok(ok))) => Some(ok.clone()),
                _ => None,
            };
            let adopted = match granted {
                Some(ok) => p.adopt(&fh, ok).await.map(drop),
                None => Err(crate::session::nfs_err(NfsOpnum4::OP_LAYOUTGET, status)),
            };
            if let Err(e) = adopted {
                p.refused(&fh, &e);
            }
        }
        let meta = ops::attrs_of(&r).ok_or_else(|| self.protocol("OPEN without attributes"))?;
        if meta.file_type == attr::FileType::Dir {
            return Err(Error::Nfs {
                op: NfsOpnum4::OP_OPEN,
                status: NfsStat4::NFS4ERR_ISDIR,
            });
        }
        // An existing file opened with truncate under NoCreate: set the size explicitly.
        let mut meta = meta;
        let truncate = how.truncate && how.write;
        if truncate && !how.create && meta.size != 0 {
            let stateid = deleg::granted(&ok.delegation)
                .filter(|d| d.1 == deleg::DelegKind::Write)
                .map_or(ok.stateid, |d| d.0);
            self.setattr_size(&fh, stateid, 0).await?;
            meta.size = 0;
        }
        self.inner.remember_attrs(&fh, &meta);
        let so = self.inner.opened(
            &fh,
            label,
            bind,
            ok.stateid,
            access,
            meta,
            truncate,
            &ok.delegation,
        );
        Ok(self.new_file(so, access, label))
    }

    /// The open of `path` under a delegation this client holds on it, when one covers
    /// `access`; `None`: OPEN as usual.
    async fn open_delegated(
        &self,
        path: &str,
        access: u32,
        how: &OpenOptions,
    ) -> Result<Option<File>> {
        let Some((fh, fresh)) = self.inner.bound_name(path) else {
            return Ok(None);
        };
        if !fresh {
            // The name may stand for another file by now.
            match self.lookup(path).await {
                Ok(now) if now == fh => self.inner.rebind_name(path, &fh),
                _ => {
                    self.inner.unbind_names(path);
                    return Ok(None);
                }
            }
        }
        self.open_held(&fh, access, how, path).await
    }

    /// The open of `fh` under a delegation this client holds on it, when one covers
    /// `access`; `None`: OPEN as usual.
    async fn open_held(
        &self,
        fh: &NfsFh4,
        access: u32,
        how: &OpenOptions,
        label: &str,
    ) -> Result<Option<File>> {
        let so = match self.inner.open_local(fh, access) {
            Local::Opened(so) => so,
            Local::Upgrade(so, delegated) => {
                // The delegation covers the access, the server open does not: upgrade it
                // under the delegation (CLAIM_DELEG_CUR_FH, RFC 8881 section 18.16.3), which
                // does not conflict with it.
                let r = self
                    .run(vec![
                        putfh(fh),
                        NfsArgop4::Open(OpenArgs {
                            seqid: 0,
                            share_access: access | OPEN4_SHARE_ACCESS_WANT_NO_DELEG,
                            share_deny: OPEN4_SHARE_DENY_NONE,
                            owner: ops::state_owner(&self.inner.owner),
                            openhow: Openflag4::NoCreate,
                            claim: OpenClaim4::DelegCurFh(delegated),
                        }),
                    ])
                    .await
                    .and_then(|r| {
                        ops::find(&r, NfsOpnum4::OP_OPEN, |x| match x {
                            NfsResop4::Open(OpenRes::Ok(ok)) => Some(ok.stateid),
                            _ => None,
                        })
                    });
                match r {
                    Ok(stateid) => {
                        let mut st = so.st();
                        if stateid.other != st.stateid.other || stateid.seqid >= st.stateid.seqid {
                            st.stateid = stateid;
                        }
                        st.access |= access;
                    }
                    Err(e) => {
                        if self.inner.release(&so, None) {
                            let _ = self.inner.send_close(&so).await;
                        }
                        return Err(e);
                    }
                }
                so
            }
            Local::No => return Ok(None),
        };
        Counters::add(&self.inner.counters.delegated_opens, 1);
        let f = self.new_file(so.clone(), access, label);
        if how.truncate && how.write {
            if let Err(e) = f.set_len(0).await {
                let _ = f.close().await;
                return Err(e);
            }
        }
        Ok(Some(f))
    }

    /// A File of `so` (counted in its users already).
    fn new_file(&self, so: Arc<deleg::ServerOpen>, access: u32, path: &str) -> File {
        let id = self.inner.next_open.fetch_add(1, Ordering::Relaxed);
        let open = Arc::new(OpenFile::new(id, access, so, path.to_string()));
        self.inner
            .opens
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(id, Arc::downgrade(&open));
        File::new(self.clone(), open)
    }

    pub(crate) fn forget_open(&self, id: u64) {
        self.inner
            .opens
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&id);
    }
}

/// The OPEN4_SHARE_ACCESS bits of `how`; refused when it asks neither reading nor writing.
fn access_of(how: &OpenOptions) -> Result<u32> {
    let mut access = 0;
    if how.read {
        access |= OPEN4_SHARE_ACCESS_READ;
    }
    if how.write {
        access |= OPEN4_SHARE_ACCESS_WRITE;
    }
    if access == 0 {
        return Err(Error::Invalid(
            "open for neither reading nor writing".into(),
        ));
    }
    Ok(access)
}

//! The MDS's per-COMPOUND context (current and saved filehandle and stateid, the caller as
//! the current export sees it) and its place in the shared COMPOUND engine
//! ([`nfs_server::compound`]: SEQUENCE first, the reply cache, size limits, the reply).

pub mod exports;
pub mod role;

use std::sync::Arc;

use nfs_proto::nfs4::*;
use nfs_proto::rpc::Credential;
use nfs_server::refusals::Refusal;
use nfs_server::{CompoundCtx, SessionCtx};

pub use nfs_server::compound::{process, rpc_call_header_size, RPC_REPLY_HEADER, SEQUENCE_RESULT};
pub use nfs_server::NOBODY;

use crate::compound::exports::{Place, PSEUDO_EXPORT};
use crate::ops;
use crate::server::Mds;
use crate::store::Inode;

/// The caller, as AUTH_SYS describes it (after root squashing).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct User {
    /// User id.
    pub uid: u32,
    /// Primary group.
    pub gid: u32,
    /// Supplementary groups.
    pub gids: Vec<u32>,
}

impl User {
    /// The user a credential names: AUTH_SYS's ids, else (AUTH_NONE) the anonymous user.
    /// RPCSEC_GSS and other flavors are refused before any COMPOUND runs
    /// ([`nfs_server::auth_policy`]), so they never stand for the anonymous user here.
    pub fn from_credential(cred: &Credential) -> Self {
        match cred {
            Credential::Sys(p) => Self {
                uid: p.uid,
                gid: p.gid,
                gids: p.gids.clone(),
            },
            _ => Self {
                uid: NOBODY,
                gid: NOBODY,
                gids: Vec::new(),
            },
        }
    }

    /// Whether the user is in group `gid`.
    pub fn in_group(&self, gid: u32) -> bool {
        self.gid == gid || self.gids.contains(&gid)
    }

    /// The user as an export with `root_squash` sees it: uid 0 becomes the anonymous uid,
    /// and gid 0, as the primary or a supplementary group, the anonymous gid; each
    /// independently, as knfsd's `nfsd_setuser` does. Squashing the uid alone left root's
    /// group to anyone: AUTH_SYS lets a client claim any gid, so uid 1000 with gid 0 could
    /// create files in a root:root 0770 directory that squashed root itself could not.
    /// Other ids are kept: a client's root can claim them anyway by sending another uid.
    pub fn root_squashed(&self) -> Self {
        let squash = |id: u32, anon: u32| if id == 0 { anon } else { id };
        Self {
            uid: squash(self.uid, NOBODY),
            gid: squash(self.gid, NOBODY),
            gids: self.gids.iter().map(|g| squash(*g, NOBODY)).collect(),
        }
    }
}

/// A resolved filehandle: which export and which object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fh {
    /// Export id.
    pub export: u16,
    /// File id.
    pub fileid: u64,
    /// Generation (a handle of another generation is stale).
    pub generation: u32,
}

/// State carried from one operation to the next within a COMPOUND.
pub struct Ctx {
    /// The server.
    pub mds: Arc<Mds>,
    /// The session layer's part: connection, principal, minor version, client and session.
    pub session: SessionCtx,
    /// The caller as the credential names it.
    pub cred_user: User,
    /// The caller as the current filehandle's export sees it (root squashed or not).
    pub user: User,
    /// Whether the current filehandle's export is read-only for this caller (the pseudo file
    /// system always is).
    pub read_only: bool,
    /// The export whose rule `user` and `read_only` reflect.
    pub access_export: Option<u16>,
    /// Current filehandle.
    pub cfh: Option<Fh>,
    /// Saved filehandle.
    pub sfh: Option<Fh>,
    /// Current stateid (RFC 8881 section 16.2.3.1.2).
    pub cstateid: Option<Stateid4>,
    /// Saved stateid.
    pub sstateid: Option<Stateid4>,
    /// The COMPOUND's store changes are committed without fsync and made durable together
    /// before the reply ([`CompoundCtx::finish`], [`crate::store::Store::defer_here`]).
    deferral: Option<crate::store::Deferral>,
    /// Orphans to delete once the COMPOUND's changes are durable ([`Ctx::reap_after_sync`]).
    reap: Vec<u64>,
    /// Set before an OPEN that creates: the iomode of the LAYOUTGET (files or flex files) that
    /// follows it in the COMPOUND, whose store work (the stripe set, and for RW the
    /// layout-writes mark) the create then does in its own transaction.
    pub layout_follows: Option<Layoutiomode4>,
    /// The new file whose create fixed its stripe set and marked its layout writes in this
    /// COMPOUND (durable with the create, or by `finish`): its LAYOUTGET needs no store job.
    pub folded_mark: Option<u64>,
    /// The operation running is the COMPOUND's last that may change the store, so its jobs
    /// are durable when they return (set by [`CompoundCtx::before_op`]).
    last_change: bool,
}

impl Ctx {
    /// The current filehandle, or NFS4ERR_NOFILEHANDLE.
    pub fn fh(&self) -> Result<Fh, NfsStat4> {
        self.cfh.ok_or(NfsStat4::NFS4ERR_NOFILEHANDLE)
    }

    /// The current object's attributes (NFS4ERR_STALE if it is gone); a pseudo-fs node's
    /// are made up (see [`Mds::pseudo_inode`]).
    pub fn inode(&self) -> Result<Inode, NfsStat4> {
        self.inode_of(self.fh()?)
    }

    /// The attributes of the object `fh` names (a pseudo-fs node's made up).
    pub fn inode_of(&self, fh: Fh) -> Result<Inode, NfsStat4> {
        if fh.export == PSEUDO_EXPORT {
            return self
                .mds
                .pseudo_inode(fh.fileid)
                .ok_or(NfsStat4::NFS4ERR_STALE);
        }
        Ok(self.mds.store().getattr_checked(fh.fileid, fh.generation)?)
    }

    /// Where the current filehandle stands in the joined tree, if at a pseudo node or an
    /// export root (the places where LOOKUP and LOOKUPP may cross between file systems).
    pub fn place(&self) -> Option<Place> {
        let fh = self.cfh?;
        if fh.export == PSEUDO_EXPORT {
            return self
                .mds
                .exports()
                .pseudo_by_fileid(fh.fileid)
                .map(Place::Pseudo);
        }
        (self.mds.export_root_fileid(fh.export) == Some(fh.fileid))
            .then_some(Place::Export(fh.export))
    }

    /// Applies the access rule of `export` for this caller (RFC 8881 section 3.2 leaves the
    /// policy to the server; as knfsd, a client matching no rule of an export may not enter
    /// it: NFS4ERR_ACCESS). Called whenever the current filehandle may move to another export.
    pub fn enter(&mut self, export: u16) -> Result<(), NfsStat4> {
        if self.access_export == Some(export) {
            return Ok(());
        }
        let mut user = self.cred_user.clone();
        let read_only = if export == PSEUDO_EXPORT {
            true
        } else {
            let peer = self.session.conn.peer().ip();
            let Some(rule) = self.mds.exports().rule(export, peer) else {
                self.mds.core().refusals.note(
                    peer,
                    Refusal::ExportAccess,
                    format_args!("export {export} has no rule for it: NFS4ERR_ACCESS"),
                );
                return Err(NfsStat4::NFS4ERR_ACCESS);
            };
            if rule.root_squash {
                user = user.root_squashed();
            }
            rule.read_only
        };
        self.user = user;
        self.read_only = read_only;
        self.access_export = Some(export);
        Ok(())
    }

    /// Moves the current filehandle to a place of the joined tree (a pseudo node or an
    /// export's root), entering its export.
    pub fn set_place(&mut self, place: Place) -> Result<(), NfsStat4> {
        match place {
            Place::Pseudo(node) => {
                self.enter(PSEUDO_EXPORT)?;
                self.cfh = Some(Fh {
                    export: PSEUDO_EXPORT,
                    fileid: self.mds.exports().pseudo_fileid_of(node),
                    generation: 0,
                });
                self.cstateid = None;
            }
            Place::Export(id) => {
                self.enter(id)?;
                let inode = self.mds.export_root(id)?;
                self.set_fh(id, &inode);
            }
        }
        Ok(())
    }

    /// The current object, which must be a directory (NFS4ERR_NOTDIR).
    pub fn dir(&self) -> Result<Inode, NfsStat4> {
        let i = self.inode()?;
        if i.is_dir() {
            Ok(i)
        } else if i.ftype == NfsFtype4::NF4LNK {
            Err(NfsStat4::NFS4ERR_SYMLINK)
        } else {
            Err(NfsStat4::NFS4ERR_NOTDIR)
        }
    }

    /// Fails with NFS4ERR_ROFS when the export is read-only for this caller.
    pub fn writable(&self) -> Result<(), NfsStat4> {
        if self.read_only {
            Err(NfsStat4::NFS4ERR_ROFS)
        } else {
            Ok(())
        }
    }

    /// The client of the session, which SEQUENCE guarantees for every later op.
    pub fn client(&self) -> Result<u64, NfsStat4> {
        self.session.client()
    }

    /// Sets the current filehandle to an object.
    pub fn set_fh(&mut self, export: u16, inode: &Inode) {
        self.cfh = Some(Fh {
            export,
            fileid: inode.fileid,
            generation: inode.generation,
        });
        self.cstateid = None;
    }

    /// Whether the caller may do `want` (ACCESS4_* bits) on `inode`, by Unix mode bits.
    pub fn allowed(&self, inode: &Inode, want: u32) -> u32 {
        ops::attr::mode_access(inode, &self.user, want)
    }
}

impl Ctx {
    /// The context of a new COMPOUND from `cred`: no filehandle, and the caller not yet seen
    /// through any export's rule.
    pub fn new(mds: Arc<Mds>, session: SessionCtx, cred: &Credential) -> Self {
        let user = User::from_credential(cred);
        let deferral = mds.store().defer_here();
        Self {
            deferral,
            reap: Vec::new(),
            layout_follows: None,
            last_change: true,
            folded_mark: None,
            mds,
            session,
            cred_user: user.clone(),
            user,
            read_only: true,
            access_export: None,
            cfh: None,
            sfh: None,
            cstateid: None,
            sstateid: None,
        }
    }

    /// Deletes orphan `fileid` (its last name went in this COMPOUND and no open holds it:
    /// [`crate::ops::dir::reap`]) in the background once the COMPOUND's changes are durable,
    /// so the unlink needs no fsync of its own before its data goes.
    pub fn reap_after_sync(&mut self, fileid: u64) {
        self.reap.push(fileid);
    }

    /// `inode` with the size (and, if `space`, the space used) its data servers report
    /// ([`crate::pnfs::dsobjects::sized`]): the size READ, SEEK, ALLOCATE and COPY work
    /// with for a striped file, every client's writes counted.
    pub async fn sized(&self, inode: Inode, space: bool) -> Inode {
        let mds = &self.mds;
        crate::pnfs::dsobjects::sized(mds.namespace(), mds.pnfs(), inode, space, None).await
    }

    /// Whether the store jobs of the operation running are durable once they return (it is
    /// the COMPOUND's last that may change the store, or nothing is deferred here): what
    /// they queue for work outside the store may start at once.
    pub fn jobs_durable(&self) -> bool {
        self.last_change || self.deferral.is_none()
    }

    /// [`Ctx::sized`] for the attributes GETATTR, VERIFY and READDIR show this COMPOUND's
    /// client: its own writes not yet LAYOUTCOMMITted are left for it to count while it
    /// holds the RW layout it wrote through. Once that layout is gone without a
    /// LAYOUTCOMMIT (returned, or dropped by its CLOSE: a client removing the file it wrote
    /// leaves the size out), the client no longer keeps that count, so its writes are asked
    /// of the data servers as anyone's.
    pub async fn sized_attrs(&self, inode: Inode, space: bool) -> Inode {
        let mds = &self.mds;
        let asker = self
            .client()
            .ok()
            .filter(|&c| mds.tables().layouts_recovered().holds_rw(inode.fileid, c));
        crate::pnfs::dsobjects::sized(mds.namespace(), mds.pnfs(), inode, space, asker).await
    }
}

impl CompoundCtx for Ctx {
    fn session(&self) -> &SessionCtx {
        &self.session
    }

    fn session_mut(&mut self) -> &mut SessionCtx {
        &mut self.session
    }

    /// The store's jobs are deferred until the COMPOUND's last operation that may change
    /// the store, whose jobs are durable and cover the earlier ones: a COMPOUND of one
    /// changing operation (REMOVE, SETATTR, ...) costs one commit, not a deferred one and a
    /// sync. Which operations may change it is judged by their kind, and a wrong guess
    /// costs a commit, never durability (`finish` syncs whatever is left uncovered).
    ///
    /// An OPEN that creates, followed by a LAYOUTGET, does that LAYOUTGET's store
    /// work (the new file's stripe set, the RW layout-writes mark) in the create's own
    /// transaction (`ops::open`), so the LAYOUTGET does not count as changing the store
    /// here: OPEN + LAYOUTGET costs one durable commit. Should the LAYOUTGET still submit a
    /// job (the create found an existing file, or no stripe set could be chosen), that job
    /// is durable: correct, one commit more.
    fn before_op(&mut self, op: &NfsArgop4, later: &[NfsArgop4]) {
        self.layout_follows = match op {
            NfsArgop4::Open(a) if matches!(a.openhow, Openflag4::Create(_)) => {
                later.iter().find_map(|op| match op {
                    NfsArgop4::LayoutGet(l)
                        if matches!(
                            l.loga_layout_type,
                            Layouttype4::LAYOUT4_NFSV4_1_FILES | Layouttype4::LAYOUT4_FLEX_FILES
                        ) =>
                    {
                        Some(l.loga_iomode)
                    }
                    _ => None,
                })
            }
            _ => None,
        };
        let folded = self.layout_follows.is_some();
        self.last_change = !later.iter().any(|op| {
            may_change_store(op.opnum()) && !(folded && matches!(op, NfsArgop4::LayoutGet(_)))
        });
        if let Some(d) = &self.deferral {
            d.defer(!self.last_change);
        }
    }

    /// One fsync for whatever the COMPOUND's operations changed in the store (none when
    /// they changed nothing, or a durable commit of other changes already covered theirs).
    async fn finish(&mut self) -> Result<(), String> {
        if let Some(deferral) = self.deferral.take() {
            if deferral.take_submitted() {
                // An orphan left undeleted by a failure here is deleted at the next start.
                self.mds
                    .store()
                    .sync()
                    .await
                    .map_err(|e| format!("metadata store sync: {e}"))?;
            }
        }
        for fileid in self.reap.drain(..) {
            tokio::spawn(crate::ops::dir::reap_durable(self.mds.clone(), fileid));
        }
        Ok(())
    }
}

/// Whether operation `op` may change the metadata store (or act outside it on what it
/// changed): every operation but those that only read the namespace, the filehandles and
/// the session ([`Ctx::before_op`]).
fn may_change_store(op: NfsOpnum4) -> bool {
    use NfsOpnum4 as O;
    !matches!(
        op,
        O::OP_ACCESS
            | O::OP_GETATTR
            | O::OP_GETFH
            | O::OP_LOOKUP
            | O::OP_LOOKUPP
            | O::OP_NVERIFY
            | O::OP_VERIFY
            | O::OP_PUTFH
            | O::OP_PUTPUBFH
            | O::OP_PUTROOTFH
            | O::OP_SAVEFH
            | O::OP_RESTOREFH
            | O::OP_READDIR
            | O::OP_READLINK
            | O::OP_SECINFO
            | O::OP_SECINFO_NO_NAME
            | O::OP_GETDEVICEINFO
            | O::OP_GETDEVICELIST
            | O::OP_TEST_STATEID
            | O::OP_LOCKT
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn root_squash_maps_uid_0_gid_0_and_supplementary_gid_0_each_on_its_own() {
        let u = |uid, gid, gids: &[u32]| User {
            uid,
            gid,
            gids: gids.to_vec(),
        };
        assert_eq!(
            u(0, 0, &[0, 5]).root_squashed(),
            u(NOBODY, NOBODY, &[NOBODY, 5])
        );
        assert_eq!(u(1000, 0, &[]).root_squashed(), u(1000, NOBODY, &[]));
        assert_eq!(
            u(1000, 1000, &[7, 0]).root_squashed(),
            u(1000, 1000, &[7, NOBODY])
        );
        assert_eq!(u(0, 1000, &[]).root_squashed(), u(NOBODY, 1000, &[]));
        let plain = u(1000, 100, &[4, 24]);
        assert_eq!(plain.root_squashed(), plain);
        assert!(!u(1000, 0, &[0]).root_squashed().in_group(0));
    }
}

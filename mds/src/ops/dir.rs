//! What the directory operations share (CREATE, REMOVE, RENAME, LINK, READDIR and READLINK
//! have a file each): the directory checks, the sticky bit, the removal of a file's data after
//! its last unlink, and the sweep of orphans.
//!
//! Permissions are the Unix ones, by mode bits: changing a directory's entries needs write and
//! search permission on it (`ACCESS4_MODIFY | ACCESS4_LOOKUP`), and in a sticky directory
//! (mode 01000) only the owner of the entry, the owner of the directory or root may remove or
//! replace an entry. Every namespace change is durable (one store commit) before the reply.
//!
//! A regular file whose last name goes (REMOVE, or RENAME over it) becomes an orphan in the
//! store. If nobody has it open it is deleted at once (data, then inode); otherwise it lives
//! on, still reachable by its filehandle, until its last open goes (CLOSE, or its client's
//! lease runs out), as POSIX `unlink` keeps an open file (RFC 8881 section 18.25.4 allows
//! it; knfsd behaves so). See [`crate::state::orphan`] and [`reap`].

use crate::compound::{Ctx, Fh, User};
use crate::server::Mds;
use crate::state::orphan::OrphanFate;
use crate::store::{Inode, Removed};
use nfs_proto::nfs4::*;
use pfs_core::ObjectId;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use tracing::warn;

/// Mode bit: set-group-id (new objects in such a directory get its group; new directories
/// inherit the bit, as on Linux and BSD).
pub(super) const S_ISGID: u32 = 0o2000;
/// Mode bit: sticky (restricted deletion in a directory).
const S_ISVTX: u32 = 0o1000;
/// What changing a directory's entries needs on it.
const DIR_WRITE: u32 = ACCESS4_MODIFY | ACCESS4_LOOKUP;

// ---------------------------------------------------------------------------------------------
// Shared checks
// ---------------------------------------------------------------------------------------------

/// The object `fh` names, which must be a directory. Anything else, a symbolic link included,
/// is NFS4ERR_NOTDIR: RFC 8881 section 18.4.3 says so for CREATE ("any other type of object"),
/// and pynfs expects the same of REMOVE, RENAME, LINK and READDIR (only LOOKUP and OPEN answer
/// NFS4ERR_SYMLINK).
pub(super) fn dir_at(ctx: &Ctx, fh: Fh) -> Result<Inode, NfsStat4> {
    let i = ctx.inode_of(fh)?;
    if i.is_dir() {
        Ok(i)
    } else {
        Err(NfsStat4::NFS4ERR_NOTDIR)
    }
}

/// The current filehandle's directory.
pub(super) fn current_dir(ctx: &Ctx) -> Result<(Fh, Inode), NfsStat4> {
    let fh = ctx.fh()?;
    Ok((fh, dir_at(ctx, fh)?))
}

/// The saved filehandle (RENAME's source directory, LINK's source object), or
/// NFS4ERR_NOFILEHANDLE.
pub(super) fn saved_fh(ctx: &Ctx) -> Result<Fh, NfsStat4> {
    ctx.sfh.ok_or(NfsStat4::NFS4ERR_NOFILEHANDLE)
}

/// Write and search permission on a directory, else NFS4ERR_ACCESS.
pub(super) fn may_change_entries(ctx: &Ctx, dir: &Inode) -> Result<(), NfsStat4> {
    if ctx.allowed(dir, DIR_WRITE) == DIR_WRITE {
        Ok(())
    } else {
        Err(NfsStat4::NFS4ERR_ACCESS)
    }
}

/// The sticky-directory rule (POSIX `S_ISVTX` on directories): in a sticky directory only the
/// owner of the entry, the owner of the directory or root may remove or rename the entry.
pub fn sticky_allows(user: &User, dir: &Inode, entry: &Inode) -> bool {
    dir.mode & S_ISVTX == 0 || user.uid == 0 || user.uid == entry.uid || user.uid == dir.uid
}

/// The sticky rule for `name` in `dir`, if it exists (a missing name is left for the store to
/// answer NFS4ERR_NOENT or to create).
pub(super) fn check_sticky(ctx: &Ctx, dir: &Inode, name: &[u8]) -> Result<Option<Inode>, NfsStat4> {
    match ctx.mds.store().lookup(dir.fileid, name) {
        Ok(entry) if !sticky_allows(&ctx.user, dir, &entry) => Err(NfsStat4::NFS4ERR_ACCESS),
        Ok(entry) => Ok(Some(entry)),
        Err(crate::store::StoreError::NoEnt) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

// ---------------------------------------------------------------------------------------------
// Deleting orphans (files whose last name went)
// ---------------------------------------------------------------------------------------------

/// Removes a file's data object (on a blocking thread). A failure is logged, not returned:
/// the name is already gone durably, and a missing object is not an error.
pub async fn remove_data(mds: &Mds, fileid: u64) {
    let data = mds.data().clone();
    let r = tokio::task::spawn_blocking(move || data.remove(ObjectId::whole(fileid))).await;
    match r {
        Ok(Ok(())) => {}
        Ok(Err(e)) => warn!(fileid, "removing the data of an unlinked file: {e}"),
        Err(e) => warn!(fileid, "removing the data of an unlinked file: {e}"),
    }
}

/// Deletes an orphan that no open holds (the opens table said [`OrphanFate::Delete`] or
/// released it): its data in the MDS's store first, then its inode (submitted here,
/// committed in the background). In that order a crash in between leaves an orphan that the
/// next start finds and deletes again, never data without an inode. A striped file's objects
/// on the data servers are queued for removal in the transaction that deletes the inode, and
/// the removal task ([`crate::pnfs::removals`]) is woken once it commits. Until the inode is gone
/// the opens table marks the file as being deleted, so PUTFH already answers NFS4ERR_STALE.
///
/// The unlink that made the orphan may be a deferred commit: it is made durable first (a
/// crash must not bring back a name whose data is gone). The deletion itself is deferred in
/// turn (no fsync of its own): lost in a crash, it leaves the orphan, which the next start
/// deletes again.
pub async fn reap(mds: Arc<Mds>, fileid: u64) {
    if let Err(e) = mds.store().sync().await {
        warn!(
            fileid,
            "not deleting an orphan's data, the store did not sync: {e}"
        );
        return;
    }
    reap_durable(mds, fileid).await;
}

/// [`reap`] of an orphan whose unlink is known to be durable (its COMPOUND synced before it
/// called this): no sync first, which would only flush the deferred bookkeeping of earlier
/// deletions (one fsync per removed file for nothing).
pub async fn reap_durable(mds: Arc<Mds>, fileid: u64) {
    let _deferral = mds.store().defer_here();
    remove_data(&mds, fileid).await;
    // The job gets the cluster configuration, not the MDS: a job that held the last handle
    // of the MDS would drop the store from the committer's own thread.
    let rings = mds.ring_book();
    let deleted = mds.store().delete_orphan(fileid, move |set| {
        let ring = rings.ring(set.device.generation);
        crate::pnfs::dsobjects::removal_servers(ring.as_ref(), &rings.cluster, set)
    });
    tokio::spawn(async move {
        match deleted.await {
            Ok(deleted) => {
                if deleted {
                    mds.pnfs().settler().deleted(fileid);
                }
                mds.pnfs().removals().wake();
            }
            Err(e) => warn!(fileid, "deleting an orphan (left for the next start): {e}"),
        }
        mds.tables().opens_recovered().orphan_reaped(fileid);
    });
}

/// Deletes, in the background, every orphan whose last open went since the last call. Call
/// it after anything that drops opens: CLOSE, and the release of a client's state.
pub fn reap_released(mds: &Arc<Mds>) {
    let released = mds.tables().opens_recovered().take_released_orphans();
    for fileid in released {
        tokio::spawn(reap(mds.clone(), fileid));
    }
}

/// After a restart, once the grace period is over (or at once without one): deletes the
/// orphans of earlier boots. They were open when the server stopped, opens do not survive a
/// restart, and a client had the grace period to reclaim an open of one (CLAIM_PREVIOUS by
/// filehandle; an orphan reclaimed so stays until that open goes). knfsd keeps no such files
/// across a restart at all: its clients' reclaims of unlinked open files fail.
pub async fn sweep_orphans(mds: Arc<Mds>) {
    let orphans = match mds.store().orphans() {
        Ok(o) => o,
        Err(e) => {
            warn!("listing orphans: {e}");
            return;
        }
    };
    let epoch = mds.store().boot_epoch();
    let mut deleted = 0usize;
    for (fileid, orphaned_in) in orphans {
        if orphaned_in >= epoch {
            continue; // this boot's orphans are handled as their opens go
        }
        let fate = mds.tables().opens_recovered().unlinked(fileid);
        if fate == OrphanFate::Delete {
            reap(mds.clone(), fileid).await;
            deleted += 1;
        }
    }
    if deleted > 0 {
        tracing::info!(
            deleted,
            "deleted files unlinked while open before the restart"
        );
    }
}

/// The decision REMOVE asks the store to take in its transaction
/// ([`crate::store::DeleteUnopened`]): a striped file that loses its last name and that no
/// open holds is deleted there and then, one commit where the orphan stage took two (the
/// durable unlink, then the inode's deletion) and a blocking-pool call for an MDS object
/// such a file does not have. The opens table decides as [`after_unlink`] would, under its
/// lock, after the name is gone, so an OPEN racing the REMOVE either came first (the file
/// stays an orphan) or finds the file stale.
pub(super) struct UnlinkDecision {
    /// The file the store was told may go (0: none), so that a REMOVE whose transaction
    /// failed after the decision gives it back ([`UnlinkDecision::failed`]).
    decided: Arc<AtomicU64>,
    tables: std::sync::Weak<crate::server::StateTables>,
    rings: crate::server::RingBook,
}

impl UnlinkDecision {
    pub(super) fn new(mds: &Arc<Mds>) -> Self {
        Self {
            decided: Arc::default(),
            tables: Arc::downgrade(mds.tables()),
            rings: mds.ring_book(),
        }
    }

    /// The store's side. It holds the tables weakly and the cluster configuration, not the
    /// MDS: a job holding the last handle of the MDS would drop the store from the
    /// committer's own thread.
    pub(super) fn job(&self) -> crate::store::DeleteUnopened {
        let (decided, tables, rings) = (
            self.decided.clone(),
            self.tables.clone(),
            self.rings.clone(),
        );
        crate::store::DeleteUnopened {
            unopened: Box::new(move |fileid| {
                let Some(tables) = tables.upgrade() else {
                    return false;
                };
                let fate = tables.opens_recovered().unlinked(fileid);
                if fate == OrphanFate::Delete {
                    decided.store(fileid, Ordering::Release);
                }
                fate == OrphanFate::Delete
            }),
            servers: Box::new(move |set| {
                let ring = rings.ring(set.device.generation);
                crate::pnfs::dsobjects::removal_servers(ring.as_ref(), &rings.cluster, set)
            }),
        }
    }

    /// The REMOVE failed: a file the store was told may go is not being deleted after all.
    pub(super) fn failed(self, mds: &Mds) {
        let fileid = self.decided.load(Ordering::Acquire);
        if fileid != 0 {
            mds.tables().opens_recovered().orphan_reaped(fileid);
        }
    }
}

/// After the store removed a name: a regular file without names left is deleted now if no
/// open holds it (before the reply, for the data), else kept until its last open goes.
pub(super) fn after_unlink(ctx: &mut Ctx, r: &Removed) {
    if r.deleted {
        // Deleted with its name, durably ([`UnlinkDecision`]): its objects are queued for
        // removal and its layout-writes mark is gone.
        ctx.mds.pnfs().settler().deleted(r.fileid);
        ctx.mds.pnfs().removals().wake();
        ctx.mds.tables().opens_recovered().orphan_reaped(r.fileid);
        return;
    }
    if !r.orphan {
        return;
    }
    let fate = ctx.mds.tables().opens_recovered().unlinked(r.fileid);
    if fate == OrphanFate::Delete {
        // After the COMPOUND's sync, in the background: the unlink is durable by then, and
        // the reply does not wait for the data to go.
        ctx.reap_after_sync(r.fileid);
    } else {
        // Removed while open: other clients' layouts are recalled (issue 5; the objects go
        // at the last CLOSE, and a holder that goes on writing them is fenced).
        recall_layouts(ctx, r.fileid);
    }
}

/// Starts recalling the layouts other clients hold of `fileid` (its truncate or removal
/// changes what they map): [`crate::pnfs::fencing::recall_file`], in the background.
pub(crate) fn recall_layouts(ctx: &Ctx, fileid: u64) {
    recall_layouts_but(ctx, fileid, ctx.client().ok());
}

/// Starts recalling every layout of `fileid` but `except`'s (`None`: all of them).
pub(crate) fn recall_layouts_but(ctx: &Ctx, fileid: u64, except: Option<u64>) {
    let held = !ctx
        .mds
        .tables()
        .layouts_recovered()
        .holders(fileid)
        .is_empty();
    if !held {
        return;
    }
    let (Ok(export), Ok(inode)) = (ctx.fh().map(|f| f.export), ctx.mds.store().getattr(fileid))
    else {
        return;
    };
    let fh = super::fh::encode_fh(
        ctx,
        crate::compound::Fh {
            export,
            fileid,
            generation: inode.generation,
        },
    );
    crate::pnfs::fencing::recall_file(
        ctx.mds.tables(),
        ctx.mds.core(),
        ctx.mds.pnfs(),
        fileid,
        fh,
        except,
    );
}

// ---------------------------------------------------------------------------------------------
// CREATE
// ---------------------------------------------------------------------------------------------

// ---------------------------------------------------------------------------------------------
// REMOVE
// ---------------------------------------------------------------------------------------------

/// REMOVE, RENAME and LINK change a file's names and link count, which a delegation holder
/// caches: other clients' delegations of it are recalled first and the operation waits
/// (RFC 8881 section 10.4.4).
pub(super) fn break_delegations(ctx: &Ctx, file: &Inode) -> Result<(), NfsStat4> {
    if file.ftype != NfsFtype4::NF4REG {
        return Ok(());
    }
    crate::state::recall::break_conflicts(
        ctx.mds.tables(),
        ctx.mds.core(),
        file.fileid,
        ctx.client()?,
        crate::state::deleg::Need::Write,
    )
}

// ---------------------------------------------------------------------------------------------
// RENAME
// ---------------------------------------------------------------------------------------------

// ---------------------------------------------------------------------------------------------
// LINK
// ---------------------------------------------------------------------------------------------

// ---------------------------------------------------------------------------------------------
// READDIR
// ---------------------------------------------------------------------------------------------

/// Bytes of a COMPOUND reply kept for everything around READDIR's result (RPC and COMPOUND
/// headers, SEQUENCE, PUTFH, a GETATTR or two) when the session's reply limit is lower than
/// the client's `maxcount`.
pub(super) const REPLY_RESERVE: usize = 1024;

// ---------------------------------------------------------------------------------------------
// READLINK
// ---------------------------------------------------------------------------------------------

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::create::{initial_ids, new_object};
    use crate::ops::readdir::entry_size;
    use crate::store::{NewObject, SetAttrs};
    use nfs_proto::nfs4::attr::*;
    use nfs_proto::xdr::Utf8String;

    fn inode(uid: u32, mode: u32) -> Inode {
        Inode::for_test(9, NfsFtype4::NF4DIR, mode, uid)
    }

    fn user(uid: u32) -> User {
        User {
            uid,
            gid: uid,
            gids: vec![],
        }
    }

    #[test]
    fn sticky_directory_lets_only_owners_and_root_remove() {
        let dir = inode(10, 0o1777);
        let file = inode(20, 0o644);
        assert!(sticky_allows(&user(20), &dir, &file), "the file's owner");
        assert!(
            sticky_allows(&user(10), &dir, &file),
            "the directory's owner"
        );
        assert!(sticky_allows(&user(0), &dir, &file), "root");
        assert!(!sticky_allows(&user(30), &dir, &file), "anyone else");
        assert!(
            sticky_allows(&user(30), &inode(10, 0o777), &file),
            "not sticky"
        );
    }

    #[test]
    fn new_objects_get_the_callers_ids_and_a_type_default_mode() {
        let parent = inode(0, 0o777);
        let none = SetAttrs::default();
        let u = user(1000);
        assert_eq!(
            initial_ids(&u, &parent, &NewObject::Directory, &none),
            Ok((1000, 1000, 0o755))
        );
        assert_eq!(
            initial_ids(&u, &parent, &NewObject::Fifo, &none),
            Ok((1000, 1000, 0o644))
        );
        let mode = SetAttrs {
            mode: Some(0o700),
            ..SetAttrs::default()
        };
        assert_eq!(
            initial_ids(&u, &parent, &NewObject::Socket, &mode),
            Ok((1000, 1000, 0o700))
        );
    }

    #[test]
    fn only_root_gives_a_new_object_another_owner() {
        let parent = inode(0, 0o777);
        let other = SetAttrs {
            uid: Some(5),
            ..SetAttrs::default()
        };
        assert_eq!(
            initial_ids(&user(1000), &parent, &NewObject::Fifo, &other),
            Err(NfsStat4::NFS4ERR_PERM)
        );
        assert_eq!(
            initial_ids(&user(0), &parent, &NewObject::Fifo, &other),
            Ok((5, 0, 0o644))
        );
        let group = SetAttrs {
            gid: Some(77),
            ..SetAttrs::default()
        };
        assert_eq!(
            initial_ids(&user(1000), &parent, &NewObject::Fifo, &group),
            Err(NfsStat4::NFS4ERR_PERM)
        );
        let member = User {
            gids: vec![77],
            ..user(1000)
        };
        assert_eq!(
            initial_ids(&member, &parent, &NewObject::Fifo, &group),
            Ok((1000, 77, 0o644))
        );
    }

    #[test]
    fn setgid_directory_passes_on_its_group_and_the_bit_to_subdirectories() {
        let parent = Inode {
            gid: 50,
            ..inode(0, 0o2777)
        };
        let none = SetAttrs::default();
        assert_eq!(
            initial_ids(&user(1000), &parent, &NewObject::Directory, &none),
            Ok((1000, 50, 0o2755))
        );
        assert_eq!(
            initial_ids(&user(1000), &parent, &NewObject::Fifo, &none),
            Ok((1000, 50, 0o644))
        );
    }

    #[test]
    fn regular_files_and_non_utf8_link_targets_are_refused() {
        assert_eq!(
            new_object(&Createtype4::Other(NfsFtype4::NF4REG)),
            Err(NfsStat4::NFS4ERR_BADTYPE)
        );
        let bad = Utf8String(bytes::Bytes::from_static(&[0xff, 0xfe]));
        assert_eq!(
            new_object(&Createtype4::Lnk(bad)),
            Err(NfsStat4::NFS4ERR_INVAL)
        );
        assert_eq!(
            new_object(&Createtype4::Lnk("t".into())),
            Ok(NewObject::Symlink(bytes::Bytes::from_static(b"t")))
        );
    }

    #[test]
    fn entry_size_is_the_xdr_encoding_size() {
        let e = Entry4 {
            cookie: 7,
            name: "abcde".into(),
            attrs: FileAttrs {
                fileid: Some(3),
                mode: Some(0o644),
                ..FileAttrs::default()
            }
            .to_fattr(&Bitmap4::from_bits([FATTR4_FILEID, FATTR4_MODE])),
        };
        let list = Dirlist4 {
            entries: vec![e.clone()],
            eof: true,
        };
        let encoded = nfs_proto::xdr::to_bytes(&list).len();
        assert_eq!(entry_size(&e) + 8, encoded);
    }
}

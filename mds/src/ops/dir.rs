//! Directory operations: CREATE, REMOVE, RENAME, LINK, READDIR, READLINK (RFC 8881 sections
//! 18.4, 18.25, 18.26, 18.9, 18.23, 18.24).
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

use std::sync::Arc;

use bytes::Bytes;
use nfs_proto::nfs4::attr::*;
use nfs_proto::nfs4::*;
use nfs_proto::xdr::Utf8String;
use pfs_core::ObjectId;
use tracing::warn;

use super::attr::{file_attrs, supported_mask, to_setattrs};
use super::fh::check_component;
use crate::compound::{Ctx, Fh, User};
use crate::exports::{Place, PSEUDO_EXPORT};
use crate::server::Mds;
use crate::state::orphan::OrphanFate;
use crate::store::{CreateSpec, DirEntry, Inode, NewObject, ReadDir, Removed, SetAttrs};

/// Mode bit: set-group-id (new objects in such a directory get its group; new directories
/// inherit the bit, as on Linux and BSD).
const S_ISGID: u32 = 0o2000;
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
fn dir_at(ctx: &Ctx, fh: Fh) -> Result<Inode, NfsStat4> {
    let i = ctx.inode_of(fh)?;
    if i.is_dir() {
        Ok(i)
    } else {
        Err(NfsStat4::NFS4ERR_NOTDIR)
    }
}

/// The current filehandle's directory.
fn current_dir(ctx: &Ctx) -> Result<(Fh, Inode), NfsStat4> {
    let fh = ctx.fh()?;
    Ok((fh, dir_at(ctx, fh)?))
}

/// The saved filehandle (RENAME's source directory, LINK's source object), or
/// NFS4ERR_NOFILEHANDLE.
fn saved_fh(ctx: &Ctx) -> Result<Fh, NfsStat4> {
    ctx.sfh.ok_or(NfsStat4::NFS4ERR_NOFILEHANDLE)
}

/// Write and search permission on a directory, else NFS4ERR_ACCESS.
fn may_change_entries(ctx: &Ctx, dir: &Inode) -> Result<(), NfsStat4> {
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
fn check_sticky(ctx: &Ctx, dir: &Inode, name: &[u8]) -> Result<Option<Inode>, NfsStat4> {
    match ctx.mds.store.lookup(dir.fileid, name) {
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
    let data = mds.data.clone();
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
/// the removal task ([`crate::removals`]) is woken once it commits. Until the inode is gone
/// the opens table marks the file as being deleted, so PUTFH already answers NFS4ERR_STALE.
pub async fn reap(mds: Arc<Mds>, fileid: u64) {
    remove_data(&mds, fileid).await;
    // The job gets the cluster configuration, not the MDS: a job that held the last handle
    // of the MDS would drop the store from the committer's own thread.
    let rings = mds.ring_book();
    let deleted = mds.store.delete_orphan(fileid, move |set| {
        let ring = rings.ring(set.device.generation);
        crate::dsobjects::removal_servers(ring.as_ref(), &rings.cluster, set)
    });
    tokio::spawn(async move {
        match deleted.await {
            Ok(_) => mds.removals.wake(),
            Err(e) => warn!(fileid, "deleting an orphan (left for the next start): {e}"),
        }
        mds.opens
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .orphan_reaped(fileid);
    });
}

/// Deletes, in the background, every orphan whose last open went since the last call. Call
/// it after anything that drops opens: CLOSE, and the release of a client's state.
pub fn reap_released(mds: &Arc<Mds>) {
    let released = mds
        .opens
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .take_released_orphans();
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
    let orphans = match mds.store.orphans() {
        Ok(o) => o,
        Err(e) => {
            warn!("listing orphans: {e}");
            return;
        }
    };
    let epoch = mds.store.boot_epoch();
    let mut deleted = 0usize;
    for (fileid, orphaned_in) in orphans {
        if orphaned_in >= epoch {
            continue; // this boot's orphans are handled as their opens go
        }
        let fate = mds
            .opens
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .unlinked(fileid);
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

/// After the store removed a name: a regular file without names left is deleted now if no
/// open holds it (before the reply, for the data), else kept until its last open goes.
async fn after_unlink(ctx: &Ctx, r: &Removed) {
    if !r.orphan {
        return;
    }
    let fate = ctx
        .mds
        .opens
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .unlinked(r.fileid);
    if fate == OrphanFate::Delete {
        reap(ctx.mds.clone(), r.fileid).await;
    } else {
        // Removed while open: other clients' layouts are recalled (issue 5; the objects go
        // at the last CLOSE, and a holder that goes on writing them is fenced).
        recall_layouts(ctx, r.fileid);
    }
}

/// Starts recalling the layouts other clients hold of `fileid` (its truncate or removal
/// changes what they map): [`crate::fencing::recall_file`], in the background.
pub(crate) fn recall_layouts(ctx: &Ctx, fileid: u64) {
    let held = !ctx
        .mds
        .layouts
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .holders(fileid)
        .is_empty();
    if !held {
        return;
    }
    let (Ok(export), Ok(inode)) = (ctx.fh().map(|f| f.export), ctx.mds.store.getattr(fileid))
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
    crate::fencing::recall_file(&ctx.mds, fileid, fh, ctx.client().ok());
}

// ---------------------------------------------------------------------------------------------
// CREATE
// ---------------------------------------------------------------------------------------------

/// The store's description of what CREATE makes (NF4REG and the named-attribute types are
/// NFS4ERR_BADTYPE: regular files are made by OPEN). A symlink target must be UTF-8
/// (NFS4ERR_INVAL otherwise, RFC 8881 section 14.4).
fn new_object(t: &Createtype4) -> Result<NewObject, NfsStat4> {
    Ok(match t {
        Createtype4::Dir => NewObject::Directory,
        Createtype4::Lnk(target) => {
            if target.as_str().is_none() {
                return Err(NfsStat4::NFS4ERR_INVAL);
            }
            NewObject::Symlink(target.0.clone())
        }
        Createtype4::Blk(d) => NewObject::BlockDevice(*d),
        Createtype4::Chr(d) => NewObject::CharDevice(*d),
        Createtype4::Sock => NewObject::Socket,
        Createtype4::Fifo => NewObject::Fifo,
        Createtype4::Other(_) => return Err(NfsStat4::NFS4ERR_BADTYPE),
    })
}

/// The mode a new object gets when the client sends none.
fn default_mode(o: &NewObject) -> u32 {
    match o {
        NewObject::Directory => 0o755,
        // As `symlink(2)`: a link's own mode is never checked.
        NewObject::Symlink(_) => 0o777,
        _ => 0o644,
    }
}

/// Initial owner, group and mode of a new object: the caller's ids unless given (only root may
/// give another owner, and a group the caller is not in; NFS4ERR_PERM otherwise), the parent's
/// group in a set-group-id directory, whose new subdirectories keep the bit.
fn initial_ids(
    user: &User,
    parent: &Inode,
    object: &NewObject,
    s: &SetAttrs,
) -> Result<(u32, u32, u32), NfsStat4> {
    let sgid = parent.mode & S_ISGID != 0;
    let uid = s.uid.unwrap_or(user.uid);
    if uid != user.uid && user.uid != 0 {
        return Err(NfsStat4::NFS4ERR_PERM);
    }
    let default_gid = if sgid { parent.gid } else { user.gid };
    let gid = s.gid.unwrap_or(default_gid);
    if gid != default_gid && user.uid != 0 && !user.in_group(gid) {
        return Err(NfsStat4::NFS4ERR_PERM);
    }
    let mut mode = s.mode.unwrap_or_else(|| default_mode(object));
    if sgid && *object == NewObject::Directory {
        mode |= S_ISGID;
    }
    Ok((uid, gid, mode))
}

/// CREATE (RFC 8881 section 18.4): makes a directory, symbolic link, device, socket or FIFO
/// in the current directory, with the initial attributes given (mode, owner, group, times;
/// `attrset` lists them), and makes it the current filehandle.
pub async fn create(ctx: &mut Ctx, a: &CreateArgs) -> CreateRes {
    match create_inner(ctx, a).await {
        Ok(ok) => CreateRes::Ok(ok),
        Err(s) => CreateRes::Err(s),
    }
}

async fn create_inner(ctx: &mut Ctx, a: &CreateArgs) -> Result<CreateResOk, NfsStat4> {
    let (fh, dir) = current_dir(ctx)?;
    let object = new_object(&a.objtype)?;
    let name = check_component(&a.objname)?;
    let (attrs, attrset) = to_setattrs(&a.createattrs)?;
    if attrs.size.is_some() {
        // No object CREATE makes has a size a client could set.
        return Err(NfsStat4::NFS4ERR_INVAL);
    }
    ctx.writable()?;
    may_change_entries(ctx, &dir)?;
    let (uid, gid, mode) = initial_ids(&ctx.user, &dir, &object, &attrs)?;
    let spec = CreateSpec {
        object,
        mode,
        uid,
        gid,
    };
    let now = ctx.mds.wall_time();
    let created = ctx.mds.store.create(dir.fileid, name, spec, now).await?;
    let mut inode = created.inode;
    if attrs.atime.is_some() || attrs.mtime.is_some() {
        // A second commit: a crash between the two leaves the object with server times.
        let times = SetAttrs {
            atime: attrs.atime,
            mtime: attrs.mtime,
            ..SetAttrs::default()
        };
        inode = ctx.mds.store.setattr(inode.fileid, times, now).await?.inode;
    }
    ctx.set_fh(fh.export, &inode);
    Ok(CreateResOk {
        cinfo: created.cinfo,
        attrset,
    })
}

// ---------------------------------------------------------------------------------------------
// REMOVE
// ---------------------------------------------------------------------------------------------

/// REMOVE (RFC 8881 section 18.25): removes `target` from the current directory (an empty
/// directory, or any other object; NFS4ERR_NOTEMPTY for a directory with entries). When that
/// was a regular file's last name, the file goes now, or when its last open goes if it is
/// open (section 18.25.4 lets the server keep an open file until then).
pub async fn remove(ctx: &mut Ctx, a: &RemoveArgs) -> RemoveRes {
    match remove_inner(ctx, a).await {
        Ok(cinfo) => RemoveRes::Ok(RemoveResOk { cinfo }),
        Err(s) => RemoveRes::Err(s),
    }
}

async fn remove_inner(ctx: &mut Ctx, a: &RemoveArgs) -> Result<ChangeInfo4, NfsStat4> {
    let (_, dir) = current_dir(ctx)?;
    let name = check_component(&a.target)?;
    ctx.writable()?;
    may_change_entries(ctx, &dir)?;
    if let Some(target) = check_sticky(ctx, &dir, name)? {
        break_delegations(ctx, &target)?;
    }
    let removed = ctx
        .mds
        .store
        .remove(dir.fileid, name, ctx.mds.wall_time())
        .await?;
    after_unlink(ctx, &removed).await;
    Ok(removed.cinfo)
}

/// REMOVE, RENAME and LINK change a file's names and link count, which a delegation holder
/// caches: other clients' delegations of it are recalled first and the operation waits
/// (RFC 8881 section 10.4.4).
fn break_delegations(ctx: &Ctx, file: &Inode) -> Result<(), NfsStat4> {
    if file.ftype != NfsFtype4::NF4REG {
        return Ok(());
    }
    crate::delegations::break_conflicts(
        &ctx.mds,
        file.fileid,
        ctx.client()?,
        crate::state::deleg::Need::Write,
    )
}

// ---------------------------------------------------------------------------------------------
// RENAME
// ---------------------------------------------------------------------------------------------

/// RENAME (RFC 8881 section 18.26): `oldname` in the saved directory becomes `newname` in the
/// current one, atomically replacing a compatible target (NFS4ERR_EXIST if incompatible or a
/// non-empty directory). Both directories must be in one export (NFS4ERR_XDEV) and writable
/// by the caller; the sticky rule applies to the source entry and to a replaced target; a
/// directory moving to another parent needs write permission on itself (its `..` changes),
/// as on Linux. A replaced file's data goes as for REMOVE.
pub async fn rename(ctx: &mut Ctx, a: &RenameArgs) -> RenameRes {
    match rename_inner(ctx, a).await {
        Ok(ok) => RenameRes::Ok(ok),
        Err(s) => RenameRes::Err(s),
    }
}

async fn rename_inner(ctx: &mut Ctx, a: &RenameArgs) -> Result<RenameResOk, NfsStat4> {
    let sfh = saved_fh(ctx)?;
    let (tfh, tdir) = current_dir(ctx)?;
    let sdir = dir_at(ctx, sfh)?;
    if sfh.export != tfh.export {
        return Err(NfsStat4::NFS4ERR_XDEV);
    }
    let old = check_component(&a.oldname)?;
    let new = check_component(&a.newname)?;
    ctx.writable()?;
    may_change_entries(ctx, &sdir)?;
    may_change_entries(ctx, &tdir)?;
    let source = check_sticky(ctx, &sdir, old)?.ok_or(NfsStat4::NFS4ERR_NOENT)?;
    let target = check_sticky(ctx, &tdir, new)?;
    let same_file = target.as_ref().is_some_and(|t| t.fileid == source.fileid);
    for file in std::iter::once(&source).chain(target.as_ref()) {
        break_delegations(ctx, file)?;
    }
    if source.is_dir()
        && sdir.fileid != tdir.fileid
        && !same_file
        && ctx.allowed(&source, ACCESS4_MODIFY) == 0
    {
        return Err(NfsStat4::NFS4ERR_ACCESS);
    }
    let r = ctx
        .mds
        .store
        .rename(sdir.fileid, old, tdir.fileid, new, ctx.mds.wall_time())
        .await?;
    if let Some(replaced) = &r.replaced {
        after_unlink(ctx, replaced).await;
    }
    Ok(RenameResOk {
        source_cinfo: r.source_cinfo,
        target_cinfo: r.target_cinfo,
    })
}

// ---------------------------------------------------------------------------------------------
// LINK
// ---------------------------------------------------------------------------------------------

/// LINK (RFC 8881 section 18.9): `newname` in the current directory becomes another name of
/// the saved object (not a directory: NFS4ERR_ISDIR), in the same export (NFS4ERR_XDEV).
pub async fn link(ctx: &mut Ctx, a: &LinkArgs) -> LinkRes {
    match link_inner(ctx, a).await {
        Ok(cinfo) => LinkRes::Ok(LinkResOk { cinfo }),
        Err(s) => LinkRes::Err(s),
    }
}

async fn link_inner(ctx: &mut Ctx, a: &LinkArgs) -> Result<ChangeInfo4, NfsStat4> {
    let sfh = saved_fh(ctx)?;
    let (tfh, dir) = current_dir(ctx)?;
    let source = ctx.mds.store.getattr_checked(sfh.fileid, sfh.generation)?;
    if source.is_dir() {
        return Err(NfsStat4::NFS4ERR_ISDIR);
    }
    if sfh.export != tfh.export {
        return Err(NfsStat4::NFS4ERR_XDEV);
    }
    let name = check_component(&a.newname)?;
    ctx.writable()?;
    may_change_entries(ctx, &dir)?;
    break_delegations(ctx, &source)?;
    let linked = ctx
        .mds
        .store
        .link(source.fileid, dir.fileid, name, ctx.mds.wall_time())
        .await?;
    Ok(linked.cinfo)
}

// ---------------------------------------------------------------------------------------------
// READDIR
// ---------------------------------------------------------------------------------------------

/// The XDR size of an entry in a READDIR reply: the "value follows" word, the cookie, the
/// name and the `fattr4`.
fn entry_size(e: &Entry4) -> usize {
    4 + 8
        + xdr_opaque_size(e.name.len())
        + 4 * (1 + e.attrs.attrmask.0.len())
        + xdr_opaque_size(e.attrs.attr_vals.len())
}

/// Length word plus the bytes padded to a multiple of 4.
fn xdr_opaque_size(len: usize) -> usize {
    4 + len.div_ceil(4) * 4
}

/// What an entry counts against `dircount`: its cookie and name as XDR (RFC 8881 section
/// 18.23.3), plus the "value follows" word.
fn entry_dir_size(e: &Entry4) -> usize {
    4 + 8 + xdr_opaque_size(e.name.len())
}

/// The status word, the cookie verifier, the list end and `eof`.
const READDIR_FIXED: usize = 4 + 8 + 4 + 4;

/// Bytes of a COMPOUND reply kept for everything around READDIR's result (RPC and COMPOUND
/// headers, SEQUENCE, PUTFH, a GETATTR or two) when the session's reply limit is lower than
/// the client's `maxcount`.
pub(super) const REPLY_RESERVE: usize = 1024;

/// Entries asked of the store at a time.
const BATCH: usize = 256;

/// The fs-wide attributes (`space_*`, `files_*`): read once per READDIR, not once per entry.
const FS_ATTRS: [u32; 6] = [
    FATTR4_FILES_AVAIL,
    FATTR4_FILES_FREE,
    FATTR4_FILES_TOTAL,
    FATTR4_SPACE_AVAIL,
    FATTR4_SPACE_FREE,
    FATTR4_SPACE_TOTAL,
];

/// How many bytes a listing result (READDIR, LISTXATTRS) may take: the client's `maxcount`,
/// lowered to fit the session's reply size, and the error for "not even one entry fits":
/// NFS4ERR_REP_TOO_BIG when the session's limit was the lower one, else NFS4ERR_TOOSMALL.
/// Fails at once when not even the `fixed` part of the result fits.
pub(super) fn reply_budget(
    ctx: &Ctx,
    maxcount: u32,
    fixed: usize,
) -> Result<(usize, NfsStat4), NfsStat4> {
    let maxcount = maxcount as usize;
    let session_limit = session_reply_limit(ctx).map(|l| l.saturating_sub(REPLY_RESERVE));
    let limit = session_limit.map_or(maxcount, |l| l.min(maxcount));
    let too_small = if limit < maxcount {
        NfsStat4::NFS4ERR_REP_TOO_BIG
    } else {
        NfsStat4::NFS4ERR_TOOSMALL
    };
    if limit < fixed {
        return Err(too_small);
    }
    Ok((limit, too_small))
}

/// The session's largest reply, if known.
pub(super) fn session_reply_limit(ctx: &Ctx) -> Option<usize> {
    let sid = ctx.session.sessionid?;
    let st = ctx.mds.core.state();
    let s = st.sessions.get(&sid).ok()?;
    Some(s.fore_attrs().ca_maxresponsesize as usize)
}

/// READDIR (RFC 8881 section 18.23), needing read permission on the directory.
///
/// Cookies are the store's: each entry's is fixed when the entry is made and stays valid for
/// as long as the directory exists (across restarts, and after the entry itself is removed),
/// so no cookie verifier is needed: the reply's is all zeros and the client's is not checked
/// (section 18.23.3 lets a server do so when its cookies do not go stale). Cookies never
/// handed out (1, 2, past the last) are NFS4ERR_BAD_COOKIE.
///
/// `maxcount` bounds the whole `READDIR4resok` (computed exactly, attributes included), and is
/// lowered to fit the session's reply size; if not even one entry fits, NFS4ERR_TOOSMALL.
/// `dircount` (0: no limit) bounds the bytes of cookies and names, as a hint: at least one
/// entry is returned whatever it says. Each entry's attributes are read in the same store
/// snapshot as the entry, so they cannot fail to be read (`rdattr_error`, when requested, is
/// NFS4_OK).
///
/// An entry's size is the one GETATTR reports: asked of the data servers while a client holds
/// an RW layout of the file ([`crate::dsobjects::sized`]).
pub async fn readdir(ctx: &mut Ctx, a: &ReadDirArgs) -> ReadDirRes {
    match readdir_inner(ctx, a).await {
        Ok(ok) => ReadDirRes::Ok(ok),
        Err(s) => ReadDirRes::Err(s),
    }
}

async fn readdir_inner(ctx: &mut Ctx, a: &ReadDirArgs) -> Result<ReadDirResOk, NfsStat4> {
    let (fh, dir) = current_dir(ctx)?;
    if ctx.allowed(&dir, ACCESS4_READ) == 0 {
        return Err(NfsStat4::NFS4ERR_ACCESS);
    }
    let (limit, too_small) = reply_budget(ctx, a.maxcount, READDIR_FIXED)?;
    let want = a.attr_request.intersect(&supported_mask(ctx.session.minor));
    let wants_size = super::attr::wants_size(&want);
    let wants_space = want.contains(nfs_proto::nfs4::attr::FATTR4_SPACE_USED);
    let wants_fs = FS_ATTRS.iter().any(|&b| want.contains(b));
    let mut no_fs = want.clone();
    FS_ATTRS.iter().for_each(|&b| no_fs.clear(b));
    let mut fs_template: Option<FileAttrs> = None;

    let mut entries = Vec::new();
    let mut size = READDIR_FIXED;
    let mut dirbytes = 0usize;
    let mut cookie = a.cookie;
    let place = ctx.place();
    let eof = 'fill: loop {
        let batch = match place {
            Some(Place::Pseudo(node)) => pseudo_entries(ctx, node, cookie)?,
            _ => ctx.mds.store.readdir(dir.fileid, cookie, BATCH)?,
        };
        for e in batch.entries {
            // Entries of a pseudo node, and junctions in an export root, show the root of
            // the export they lead to (its own fsid: the client sees a mount point).
            let (inode, export) = match place
                .and_then(|p| ctx.mds.exports.child(p, std::str::from_utf8(&e.name).ok()?))
            {
                Some(Place::Export(id)) => (ctx.mds.export_root(id)?, id),
                Some(Place::Pseudo(_)) => (e.inode, PSEUDO_EXPORT),
                None => (e.inode, fh.export),
            };
            let inode = if wants_size {
                crate::dsobjects::sized(&ctx.mds, inode, wants_space).await
            } else {
                inode
            };
            let mut attrs = if fs_template.is_some() {
                file_attrs(ctx, &inode, export, &no_fs)
            } else {
                file_attrs(ctx, &inode, export, &want)
            };
            match &fs_template {
                Some(t) => {
                    attrs.files_avail = t.files_avail;
                    attrs.files_free = t.files_free;
                    attrs.files_total = t.files_total;
                    attrs.space_avail = t.space_avail;
                    attrs.space_free = t.space_free;
                    attrs.space_total = t.space_total;
                }
                None if wants_fs => fs_template = Some(attrs.clone()),
                None => {}
            }
            let entry = Entry4 {
                cookie: e.cookie,
                name: Utf8String(e.name),
                attrs: attrs.to_fattr(&want),
            };
            let esize = entry_size(&entry);
            let dsize = entry_dir_size(&entry);
            if size + esize > limit {
                if entries.is_empty() {
                    return Err(too_small);
                }
                break 'fill false;
            }
            if a.dircount != 0 && !entries.is_empty() && dirbytes + dsize > a.dircount as usize {
                break 'fill false;
            }
            size += esize;
            dirbytes += dsize;
            cookie = entry.cookie;
            entries.push(entry);
        }
        if batch.eof {
            break true;
        }
    };
    Ok(ReadDirResOk {
        cookieverf: [0; 8],
        reply: Dirlist4 { entries, eof },
    })
}

/// The entries of a pseudo node after `cookie`, all at once (a pseudo node has a handful),
/// leaving out those that lead only to exports the client may not use.
/// Cookies are positions from 3 on (0 is the start; 1 and 2 are reserved, RFC 8881 section
/// 18.23.3), stable while the server runs: the config, and so the tree, cannot change under it.
fn pseudo_entries(ctx: &Ctx, node: usize, cookie: u64) -> Result<ReadDir, NfsStat4> {
    let children: Vec<_> = ctx.mds.exports.pseudo_children(node).collect();
    let skip = match cookie {
        0 => 0,
        c if c >= 3 && c - 3 < children.len() as u64 => (c - 2) as usize,
        _ => return Err(NfsStat4::NFS4ERR_BAD_COOKIE),
    };
    let mut entries = Vec::new();
    let ip = ctx.session.conn.peer().ip();
    for (i, (name, place)) in children.into_iter().enumerate().skip(skip) {
        if !ctx.mds.exports.admits(place, ip) {
            continue;
        }
        let inode = match place {
            Place::Pseudo(n) => {
                let fileid = ctx.mds.exports.pseudo_fileid_of(n);
                ctx.mds
                    .pseudo_inode(fileid)
                    .ok_or(NfsStat4::NFS4ERR_SERVERFAULT)?
            }
            Place::Export(id) => ctx.mds.export_root(id)?,
        };
        entries.push(DirEntry {
            cookie: i as u64 + 3,
            name: Bytes::copy_from_slice(name.as_bytes()),
            inode,
        });
    }
    Ok(ReadDir { entries, eof: true })
}

// ---------------------------------------------------------------------------------------------
// READLINK
// ---------------------------------------------------------------------------------------------

/// READLINK (RFC 8881 section 18.24): the target of the current symbolic link. For any other
/// object RFC 8881 section 18.24.4 asks for NFS4ERR_WRONG_TYPE (NFSv4.0, RFC 7530, said
/// NFS4ERR_INVAL; this server speaks 4.1 and 4.2 only).
pub fn readlink(ctx: &mut Ctx) -> ReadLinkRes {
    match ctx.inode() {
        Ok(i) if i.ftype == NfsFtype4::NF4LNK => ReadLinkRes::Ok(ReadLinkResOk {
            link: Utf8String(i.symlink),
        }),
        Ok(_) => ReadLinkRes::Err(NfsStat4::NFS4ERR_WRONG_TYPE),
        Err(s) => ReadLinkRes::Err(s),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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

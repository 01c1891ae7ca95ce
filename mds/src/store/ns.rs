//! Namespace changes, each run as one job of the committer (see [`super::commit`]).
//!
//! Every function here checks everything that can reject the request before its first write,
//! so a rejection leaves the shared transaction untouched. The change attribute comes from one
//! store-wide sequence (`counters/change`, handed out from memory and reserved on disk in
//! blocks by the transaction that needs the next block: [`super::counters`]), so it only ever
//! grows, across restarts too.

use bytes::Bytes;
use nfs_proto::nfs4::attr::Settime4;
use nfs_proto::nfs4::{ChangeInfo4, NfsFtype4, Nfstime4, Specdata4};
use redb::ReadableTable;

use super::commit::{LazyTbl, Tbl, Txn};
use super::counters::{Counters, Seq};
use super::schema::*;
use super::{
    CreateHow, CreateSpec, Created, DeleteUnopened, Inode, Linked, NewObject, Removed, Renamed,
    SetAttrs, SetattrOutcome, StoreError, StripeSet, MAX_NAME_LEN, MAX_SYMLINK_LEN,
};

/// Checks a component name (RFC 8881 section 14.5 and 18.13.3): empty is NFS4ERR_INVAL; "."
/// and "..", or a name holding '/' or NUL, is NFS4ERR_BADNAME; over 255 bytes is
/// NFS4ERR_NAMETOOLONG. Names are otherwise opaque bytes (UTF-8 is not enforced, so names
/// written by clients in other encodings still work).
pub fn check_name(name: &[u8]) -> Result<(), StoreError> {
    if name.is_empty() {
        return Err(StoreError::Inval("zero-length name"));
    }
    if name == b"." || name == b".." {
        return Err(StoreError::BadName("\".\" and \"..\" are not names"));
    }
    if name.contains(&b'/') {
        return Err(StoreError::BadName("name contains '/'"));
    }
    if name.contains(&0) {
        return Err(StoreError::BadName("name contains NUL"));
    }
    if name.len() > MAX_NAME_LEN {
        return Err(StoreError::NameTooLong);
    }
    Ok(())
}

/// Mode bits a client may set (`mode4`, RFC 8881 section 6.2.4): permissions plus setuid,
/// setgid and sticky.
pub(super) fn check_mode(mode: u32) -> Result<(), StoreError> {
    if mode & !0o7777 != 0 {
        return Err(StoreError::Inval("mode bits above 07777"));
    }
    Ok(())
}

/// The namespace tables of one job: `counters` and `inodes`, which nearly every job uses,
/// opened with it; the others at their first use ([`LazyTbl`]), since opening a table costs
/// (the eight opens were 4-5 % of the server's CPU in create and remove phases, issue 22)
/// and a job needs few of them (a size change none, a create two).
pub(super) struct Ns<'t> {
    seqs: &'t Counters,
    counters: Tbl<'t, &'static str, u64>,
    pub inodes: Tbl<'t, u64, &'static [u8]>,
    pub dirents: LazyTbl<'t, (u64, &'static [u8]), (u64, u64)>,
    pub cookies: LazyTbl<'t, (u64, u64), (u64, &'static [u8])>,
    orphans: LazyTbl<'t, u64, u64>,
    pub xattrs: LazyTbl<'t, XattrKey, XattrValue>,
    pub xattr_cookies: LazyTbl<'t, (u64, u64), &'static [u8]>,
    pub stripes: LazyTbl<'t, u64, &'static [u8]>,
}

impl<'t> Ns<'t> {
    pub(super) fn open(tx: &'t Txn<'t>) -> Result<Self, StoreError> {
        Ok(Self {
            seqs: tx.counters(),
            counters: tx.open(COUNTERS)?,
            inodes: tx.open(INODES)?,
            dirents: LazyTbl::new(tx, DIRENTS),
            cookies: LazyTbl::new(tx, COOKIES),
            orphans: LazyTbl::new(tx, ORPHANS),
            xattrs: LazyTbl::new(tx, XATTRS),
            xattr_cookies: LazyTbl::new(tx, XATTR_COOKIES),
            stripes: LazyTbl::new(tx, STRIPES),
        })
    }

    /// A new change attribute value, larger than every one handed out before (a write of
    /// `counters` only once per block: [`super::counters`]).
    pub(super) fn next_change(&mut self) -> Result<u64, StoreError> {
        self.seqs.take(&mut self.counters, Seq::Change)
    }

    /// A new file id, never handed out before.
    fn alloc_fileid(&mut self) -> Result<u64, StoreError> {
        self.seqs.take(&mut self.counters, Seq::FileId)
    }

    pub(super) fn put(&mut self, fileid: u64, r: &InodeV1) -> Result<(), StoreError> {
        self.inodes.write().insert(fileid, &r.encode()[..])?;
        Ok(())
    }

    /// Deletes an inode record, the object's extended attributes and its stripe set; returns
    /// the stripe set it had (its objects on the data servers are the caller's to queue).
    fn delete(&mut self, fileid: u64) -> Result<Option<StripeSet>, StoreError> {
        self.inodes.write().remove(fileid)?;
        super::xattr::remove_all(self, fileid)?;
        super::stripes::remove(self, fileid)
    }

    /// Adds `name -> child` to directory `dir` (record `d`, updated in memory); returns the
    /// entry's cookie.
    fn add_entry(
        &mut self,
        dir: u64,
        d: &mut InodeV1,
        name: &[u8],
        child: u64,
    ) -> Result<u64, StoreError> {
        let cookie = d.next_cookie.max(FIRST_COOKIE);
        d.next_cookie = cookie + 1;
        self.dirents
            .get()?
            .write()
            .insert((dir, name), (child, cookie))?;
        self.cookies
            .get()?
            .write()
            .insert((dir, cookie), (child, name))?;
        Ok(cookie)
    }

    /// Lists a regular file that lost its last name in `orphans`, with the boot `epoch` in
    /// which it did, until [`delete_orphan`] deletes it.
    fn list_orphan(&mut self, fileid: u64, epoch: u64) -> Result<(), StoreError> {
        self.orphans.get()?.write().insert(fileid, epoch)?;
        Ok(())
    }

    fn remove_entry(&mut self, dir: u64, name: &[u8], cookie: u64) -> Result<(), StoreError> {
        self.dirents.get()?.write().remove((dir, name))?;
        self.cookies.get()?.write().remove((dir, cookie))?;
        Ok(())
    }

    fn is_empty_dir(&mut self, dir: u64) -> Result<bool, StoreError> {
        dir_is_empty(self.cookies.get()?.read(), dir)
    }
}

/// Stamps a directory whose entries changed.
fn touch_dir(d: &mut InodeV1, change: u64, now: Nfstime4) {
    d.change = change;
    d.mtime = now;
    d.ctime = now;
}

fn cinfo(before: u64, after: u64) -> ChangeInfo4 {
    ChangeInfo4 {
        atomic: true,
        before,
        after,
    }
}

/// The reply OPEN gives for an existing object of the wrong type (RFC 8881 section 18.16.3).
fn open_type_error(ftype: NfsFtype4) -> StoreError {
    match ftype {
        NfsFtype4::NF4DIR => StoreError::IsDir,
        NfsFtype4::NF4LNK => StoreError::Symlink,
        _ => StoreError::WrongType,
    }
}

/// CREATE (RFC 8881 section 18.4) and the create part of OPEN (section 18.16.3).
pub(super) fn create(
    tx: &Txn<'_>,
    parent: u64,
    name: &[u8],
    spec: &CreateSpec,
    now: Nfstime4,
    generation: u32,
) -> Result<Created, StoreError> {
    let mut ns = Ns::open(tx)?;
    let mut dir = load_dir(ns.inodes.read(), parent)?;
    if let Some((child, _)) = get_dirent(ns.dirents.get()?.read(), parent, name)? {
        let existing = load_linked(ns.inodes.read(), child)?;
        let unchanged = Created {
            inode: existing.to_inode(child),
            created: false,
            cinfo: cinfo(dir.change, dir.change),
        };
        return match &spec.object {
            NewObject::Regular(CreateHow::Unchecked) if existing.ftype == NfsFtype4::NF4REG => {
                Ok(unchanged)
            }
            NewObject::Regular(CreateHow::Unchecked) => Err(open_type_error(existing.ftype)),
            // A retransmitted exclusive create finds its own file (RFC 8881 section 18.16.3).
            NewObject::Regular(CreateHow::Exclusive(v))
                if existing.ftype == NfsFtype4::NF4REG && existing.verifier == Some(*v) =>
            {
                Ok(unchanged)
            }
            _ => Err(StoreError::Exist),
        };
    }
    check_mode(spec.mode)?;
    let (ftype, symlink, rdev, verifier) = match &spec.object {
        NewObject::Regular(how) => (
            NfsFtype4::NF4REG,
            Bytes::new(),
            Specdata4::default(),
            match how {
                CreateHow::Exclusive(v) => Some(*v),
                _ => None,
            },
        ),
        NewObject::Directory => (NfsFtype4::NF4DIR, Bytes::new(), Specdata4::default(), None),
        NewObject::Symlink(target) => {
            if target.is_empty() {
                return Err(StoreError::Inval("empty symlink target"));
            }
            if target.len() > MAX_SYMLINK_LEN {
                return Err(StoreError::NameTooLong);
            }
            (
                NfsFtype4::NF4LNK,
                target.clone(),
                Specdata4::default(),
                None,
            )
        }
        NewObject::BlockDevice(d) => (NfsFtype4::NF4BLK, Bytes::new(), *d, None),
        NewObject::CharDevice(d) => (NfsFtype4::NF4CHR, Bytes::new(), *d, None),
        NewObject::Fifo => (NfsFtype4::NF4FIFO, Bytes::new(), Specdata4::default(), None),
        NewObject::Socket => (NfsFtype4::NF4SOCK, Bytes::new(), Specdata4::default(), None),
    };
    let is_dir = ftype == NfsFtype4::NF4DIR;
    if is_dir && dir.nlink == u32::MAX {
        return Err(StoreError::MLink);
    }

    // Checks done: from here on, writes.
    let change = ns.next_change()?;
    let fileid = ns.alloc_fileid()?;
    let (size, space_used) = match ftype {
        NfsFtype4::NF4DIR => (DIR_SIZE, DIR_SIZE),
        NfsFtype4::NF4LNK => (symlink.len() as u64, symlink.len() as u64),
        _ => (0, 0),
    };
    let rec = InodeV1 {
        ftype,
        mode: spec.mode,
        uid: spec.uid,
        gid: spec.gid,
        nlink: if is_dir { 2 } else { 1 },
        size,
        space_used,
        atime: now,
        mtime: now,
        ctime: now,
        birth: now,
        change,
        rdev,
        generation,
        symlink,
        verifier,
        parent: if is_dir { parent } else { 0 },
        next_cookie: if is_dir { FIRST_COOKIE } else { 0 },
    };
    ns.put(fileid, &rec)?;
    ns.add_entry(parent, &mut dir, name, fileid)?;
    let before = dir.change;
    touch_dir(&mut dir, change, now);
    if is_dir {
        dir.nlink += 1;
    }
    ns.put(parent, &dir)?;
    Ok(Created {
        inode: rec.to_inode(fileid),
        created: true,
        cinfo: cinfo(before, change),
    })
}

/// The size reported for directories.
pub(super) const DIR_SIZE: u64 = 4096;

/// LINK (RFC 8881 section 18.9): a new name for an existing non-directory.
pub(super) fn link(
    tx: &Txn<'_>,
    fileid: u64,
    dir_id: u64,
    name: &[u8],
    now: Nfstime4,
) -> Result<Linked, StoreError> {
    let mut ns = Ns::open(tx)?;
    let mut dir = load_dir(ns.inodes.read(), dir_id)?;
    let mut rec = load(ns.inodes.read(), fileid)?;
    if rec.is_dir() {
        return Err(StoreError::IsDir);
    }
    // An orphan (open, but without names) gets no new name: `link(2)` refuses a file whose
    // link count is 0 with ENOENT, and the orphan would otherwise be deleted with a name.
    if rec.nlink == 0 {
        return Err(StoreError::NoEnt);
    }
    if get_dirent(ns.dirents.get()?.read(), dir_id, name)?.is_some() {
        return Err(StoreError::Exist);
    }
    if rec.nlink == u32::MAX {
        return Err(StoreError::MLink);
    }
    let change = ns.next_change()?;
    ns.add_entry(dir_id, &mut dir, name, fileid)?;
    let before = dir.change;
    touch_dir(&mut dir, change, now);
    ns.put(dir_id, &dir)?;
    rec.nlink += 1;
    rec.ctime = now;
    rec.change = change;
    ns.put(fileid, &rec)?;
    Ok(Linked {
        inode: rec.to_inode(fileid),
        cinfo: cinfo(before, change),
    })
}

/// What dropping one link did to the object.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum LinkDrop {
    /// Other names are left.
    Linked,
    /// The inode is deleted (a directory, or a non-regular object's last name).
    Deleted,
    /// A regular file's last name: the inode stays with a link count of 0 until the caller
    /// deletes it ([`delete_orphan`]) once no open holds it. The caller lists it in `orphans`
    /// ([`Ns::list_orphan`]) unless it deletes it in the same job: an entry inserted and
    /// removed again still costs the commit a table written.
    Orphaned,
}

/// Drops one link to `child` (record `rec`) whose entry is already gone. A regular file that
/// loses its last name becomes an orphan (it may be open: RFC 8881 section 18.25.4 lets an
/// open file outlive its name, as POSIX `unlink` does); any other object without names is
/// deleted (none of them can be open).
fn drop_link(
    ns: &mut Ns<'_>,
    child: u64,
    mut rec: InodeV1,
    change: u64,
    now: Nfstime4,
) -> Result<LinkDrop, StoreError> {
    if rec.is_dir() || (rec.nlink <= 1 && rec.ftype != NfsFtype4::NF4REG) {
        // Not a regular file, so no stripe set to queue ([`super::stripes`] refuses others).
        ns.delete(child)?;
        return Ok(LinkDrop::Deleted);
    }
    rec.nlink = rec.nlink.saturating_sub(1);
    rec.ctime = now;
    rec.change = change;
    ns.put(child, &rec)?;
    if rec.nlink > 0 {
        return Ok(LinkDrop::Linked);
    }
    Ok(LinkDrop::Orphaned)
}

/// Deletes an orphan (a regular file whose last name went, see [`drop_link`]): its inode,
/// its `orphans` entry and its stripe set, and queues the removal of its objects from the
/// data servers `servers` names for that set. Anything else is left alone and reported as
/// `false`: a file id that is not an orphan (it was never one, or is already deleted) is not
/// deleted, so the caller may ask more than once and may ask about a file whose REMOVE
/// failed.
pub(super) fn delete_orphan(
    tx: &Txn<'_>,
    fileid: u64,
    servers: &dyn Fn(&StripeSet) -> Vec<u16>,
) -> Result<bool, StoreError> {
    let mut ns = Ns::open(tx)?;
    if ns.orphans.get()?.read().get(fileid)?.is_none() {
        return Ok(false);
    }
    ns.orphans.get()?.write().remove(fileid)?;
    delete_orphaned(tx, &mut ns, fileid, servers)?;
    Ok(true)
}

/// [`delete_orphan`] of a file known to be an orphan, once out of `orphans` (or never listed
/// there): its inode (through the namespace's delete, so its extended attributes go with
/// it), its stripe set with the removal of its objects queued, and its layout-writes mark
/// (its size no longer matters).
fn delete_orphaned(
    tx: &Txn<'_>,
    ns: &mut Ns<'_>,
    fileid: u64,
    servers: &dyn Fn(&StripeSet) -> Vec<u16>,
) -> Result<(), StoreError> {
    let mut removals = tx.open(DS_REMOVALS)?;
    if let Some(set) = ns.delete(fileid)? {
        super::removals::queue(&mut removals, fileid, servers(&set))?;
    }
    tx.open(super::layout_writes::LAYOUT_WRITES)?
        .write()
        .remove(fileid)?;
    Ok(())
}

/// REMOVE (RFC 8881 section 18.25).
pub(super) fn remove(
    tx: &Txn<'_>,
    dir_id: u64,
    name: &[u8],
    now: Nfstime4,
    epoch: u64,
    unopened: Option<&DeleteUnopened>,
) -> Result<Removed, StoreError> {
    let mut ns = Ns::open(tx)?;
    let mut dir = load_dir(ns.inodes.read(), dir_id)?;
    let (child, cookie) =
        get_dirent(ns.dirents.get()?.read(), dir_id, name)?.ok_or(StoreError::NoEnt)?;
    let rec = load_linked(ns.inodes.read(), child)?;
    let was_dir = rec.is_dir();
    if was_dir && !ns.is_empty_dir(child)? {
        return Err(StoreError::NotEmpty);
    }
    let ftype = rec.ftype;
    let change = ns.next_change()?;
    ns.remove_entry(dir_id, name, cookie)?;
    let dropped = drop_link(&mut ns, child, rec, change, now)?;
    let before = dir.change;
    touch_dir(&mut dir, change, now);
    if was_dir {
        dir.nlink = dir.nlink.saturating_sub(1);
    }
    ns.put(dir_id, &dir)?;
    let orphan = dropped == LinkDrop::Orphaned;
    let deleted = match unopened {
        Some(d)
            if orphan && ns.stripes.get()?.read().get(child)?.is_some() && (d.unopened)(child) =>
        {
            delete_orphaned(tx, &mut ns, child, &*d.servers)?;
            true
        }
        _ => false,
    };
    if orphan && !deleted {
        ns.list_orphan(child, epoch)?;
    }
    Ok(Removed {
        cinfo: cinfo(before, change),
        fileid: child,
        ftype,
        last_link: dropped != LinkDrop::Linked,
        orphan,
        deleted,
    })
}

/// True if directory `ancestor` is `dir` or one of its ancestors, following parent pointers.
fn is_ancestor(ns: &Ns<'_>, ancestor: u64, mut dir: u64) -> Result<bool, StoreError> {
    // Depth is bounded by the number of directories; a loop would mean a corrupt store.
    for _ in 0..1_000_000 {
        if dir == ancestor {
            return Ok(true);
        }
        if dir == ROOT_FILEID || dir == 0 {
            return Ok(false);
        }
        dir = load_linked(ns.inodes.read(), dir)?.parent;
    }
    Err(StoreError::Corrupt("directory parent chain loops"))
}

/// RENAME (RFC 8881 section 18.26), within one directory or across two, atomically replacing
/// a compatible target.
pub(super) fn rename(
    tx: &Txn<'_>,
    src_dir: u64,
    src_name: &[u8],
    dst_dir: u64,
    dst_name: &[u8],
    now: Nfstime4,
    epoch: u64,
) -> Result<Renamed, StoreError> {
    let mut ns = Ns::open(tx)?;
    let same_dir = src_dir == dst_dir;
    let mut sd = load_dir(ns.inodes.read(), src_dir)?;
    let mut td = if same_dir {
        None
    } else {
        Some(load_dir(ns.inodes.read(), dst_dir)?)
    };
    let (src, src_cookie) =
        get_dirent(ns.dirents.get()?.read(), src_dir, src_name)?.ok_or(StoreError::NoEnt)?;
    let mut srec = load_linked(ns.inodes.read(), src)?;
    let target = get_dirent(ns.dirents.get()?.read(), dst_dir, dst_name)?;
    let dst_before = td.as_ref().unwrap_or(&sd).change;
    let unchanged = Renamed {
        source_cinfo: cinfo(sd.change, sd.change),
        target_cinfo: cinfo(dst_before, dst_before),
        replaced: None,
    };
    let mut trec = None;
    if let Some((tgt, tgt_cookie)) = target {
        // "If oldname and newname both refer to the same file (e.g., they might be hard links
        // of each other), then RENAME MUST perform no action and return NFS4_OK."
        if tgt == src {
            return Ok(unchanged);
        }
        let t = load_linked(ns.inodes.read(), tgt)?;
        match (srec.is_dir(), t.is_dir()) {
            (true, false) | (false, true) => return Err(StoreError::Exist),
            (true, true) if !ns.is_empty_dir(tgt)? => return Err(StoreError::Exist),
            _ => {}
        }
        trec = Some((tgt, tgt_cookie, t));
    }
    if srec.is_dir() && !same_dir {
        // A directory cannot move below itself.
        if is_ancestor(&ns, src, dst_dir)? {
            return Err(StoreError::Inval(
                "rename of a directory into its own subtree",
            ));
        }
        let t = td.as_ref().unwrap_or(&sd);
        let replaces_dir = matches!(&trec, Some((_, _, t)) if t.is_dir());
        if t.nlink == u32::MAX && !replaces_dir {
            return Err(StoreError::MLink);
        }
    }

    // Checks done: from here on, writes.
    let change = ns.next_change()?;
    let src_before = sd.change;
    ns.remove_entry(src_dir, src_name, src_cookie)?;
    let mut replaced = None;
    if let Some((tgt, tgt_cookie, t)) = trec {
        let was_dir = t.is_dir();
        let ftype = t.ftype;
        ns.remove_entry(dst_dir, dst_name, tgt_cookie)?;
        let dropped = drop_link(&mut ns, tgt, t, change, now)?;
        if dropped == LinkDrop::Orphaned {
            ns.list_orphan(tgt, epoch)?;
        }
        if was_dir {
            let d = td.as_mut().unwrap_or(&mut sd);
            d.nlink = d.nlink.saturating_sub(1);
        }
        replaced = Some(Removed {
            cinfo: cinfo(dst_before, change),
            fileid: tgt,
            ftype,
            last_link: dropped != LinkDrop::Linked,
            orphan: dropped == LinkDrop::Orphaned,
            deleted: false,
        });
    }
    {
        let d = td.as_mut().unwrap_or(&mut sd);
        ns.add_entry(dst_dir, d, dst_name, src)?;
        touch_dir(d, change, now);
    }
    if srec.is_dir() {
        srec.parent = dst_dir;
        if let Some(d) = td.as_mut() {
            d.nlink += 1;
            sd.nlink = sd.nlink.saturating_sub(1);
        }
    }
    srec.ctime = now;
    srec.change = change;
    ns.put(src, &srec)?;
    touch_dir(&mut sd, change, now);
    ns.put(src_dir, &sd)?;
    if let Some(d) = &td {
        ns.put(dst_dir, d)?;
    }
    Ok(Renamed {
        source_cinfo: cinfo(src_before, change),
        target_cinfo: cinfo(dst_before, change),
        replaced,
    })
}

fn resolve_time(t: &Settime4, now: Nfstime4) -> Result<Nfstime4, StoreError> {
    match t {
        Settime4::SetToServerTime => Ok(now),
        Settime4::SetToClientTime(t) => {
            if t.nseconds >= 1_000_000_000 {
                return Err(StoreError::Inval("nseconds out of range"));
            }
            Ok(*t)
        }
        Settime4::Other(_) => Err(StoreError::Inval("unknown time_how4")),
    }
}

impl SetAttrs {
    /// The checks of a SETATTR that do not depend on the object: mode bits (NFS4ERR_INVAL),
    /// a size beyond `i64::MAX` (NFS4ERR_FBIG), client times with nanoseconds out of range
    /// or an unknown `time_how4` (NFS4ERR_INVAL). [`Store::setattr`](super::Store::setattr)
    /// makes them too; callers that must act before the store (truncating the objects of a
    /// striped file on its data servers) make them first, so that the store does not refuse
    /// afterwards what the data servers already did.
    pub fn check(&self) -> Result<(), StoreError> {
        if let Some(m) = self.mode {
            check_mode(m)?;
        }
        if self.size.is_some_and(|s| s > i64::MAX as u64) {
            return Err(StoreError::FBig);
        }
        let any_time = Nfstime4::default();
        for t in [&self.atime, &self.mtime].into_iter().flatten() {
            resolve_time(t, any_time)?;
        }
        Ok(())
    }
}

/// SETATTR of the attributes the store keeps (RFC 8881 section 18.30). A size change also
/// sets mtime (unless the request sets it); any change sets ctime and the change attribute.
pub(super) fn setattr(
    tx: &Txn<'_>,
    fileid: u64,
    a: &SetAttrs,
    now: Nfstime4,
) -> Result<SetattrOutcome, StoreError> {
    let mut ns = Ns::open(tx)?;
    let mut rec = load(ns.inodes.read(), fileid)?;
    let old_size = rec.size;
    if a.size.is_some() {
        match rec.ftype {
            NfsFtype4::NF4REG => {}
            NfsFtype4::NF4DIR => return Err(StoreError::IsDir),
            _ => return Err(StoreError::Inval("size of a non-regular file")),
        }
    }
    a.check()?;
    let atime = a.atime.as_ref().map(|t| resolve_time(t, now)).transpose()?;
    let mtime = a.mtime.as_ref().map(|t| resolve_time(t, now)).transpose()?;
    if a.is_empty() {
        return Ok(SetattrOutcome {
            inode: rec.to_inode(fileid),
            old_size,
        });
    }
    let change = ns.next_change()?;
    if let Some(m) = a.mode {
        rec.mode = m;
    }
    if let Some(u) = a.uid {
        rec.uid = u;
    }
    if let Some(g) = a.gid {
        rec.gid = g;
    }
    if let Some(size) = a.size {
        rec.size = size;
        rec.space_used = size;
        rec.mtime = now;
    }
    if let Some(t) = atime {
        rec.atime = t;
    }
    if let Some(t) = mtime {
        rec.mtime = t;
    }
    rec.ctime = now;
    rec.change = change;
    ns.put(fileid, &rec)?;
    Ok(SetattrOutcome {
        inode: rec.to_inode(fileid),
        old_size,
    })
}

/// After a WRITE or LAYOUTCOMMIT that reached byte `end` (exclusive): size grows to `end` if
/// it was smaller, never shrinks; mtime, ctime and the change attribute move on.
pub(super) fn record_write(
    tx: &Txn<'_>,
    fileid: u64,
    end: u64,
    now: Nfstime4,
) -> Result<Inode, StoreError> {
    record_write_at(tx, fileid, end, Some(now), now)
}

/// [`record_write`] with an mtime of the caller's (LAYOUTCOMMIT's `loca_time_modify`), or
/// none (the mtime stays).
pub(super) fn record_write_at(
    tx: &Txn<'_>,
    fileid: u64,
    end: u64,
    mtime: Option<Nfstime4>,
    now: Nfstime4,
) -> Result<Inode, StoreError> {
    let mut ns = Ns::open(tx)?;
    let mut rec = load(ns.inodes.read(), fileid)?;
    match rec.ftype {
        NfsFtype4::NF4REG => {}
        NfsFtype4::NF4DIR => return Err(StoreError::IsDir),
        _ => return Err(StoreError::Inval("write to a non-regular file")),
    }
    if end > i64::MAX as u64 {
        return Err(StoreError::FBig);
    }
    let change = ns.next_change()?;
    rec.size = rec.size.max(end);
    rec.space_used = rec.space_used.max(rec.size);
    if let Some(mtime) = mtime {
        rec.mtime = mtime;
    }
    rec.ctime = now;
    rec.change = change;
    ns.put(fileid, &rec)?;
    Ok(rec.to_inode(fileid))
}

//! Extended attributes (RFC 8276): per-object name/value pairs in two tables beside the
//! namespace, changed by committer jobs like every other piece of metadata, so a SETXATTR or
//! REMOVEXATTR is durable before its reply.
//!
//! ```text
//!   xattrs        (fileid, name)   -> (cookie, value)   GETXATTR, SETXATTR, REMOVEXATTR
//!   xattr_cookies (fileid, cookie) -> name              LISTXATTRS, in cookie order
//! ```
//!
//! A name's cookie is the change-counter value of the SETXATTR that created it: unique and
//! increasing within the object, kept when the value is replaced, never reused. LISTXATTRS
//! resumes with the entries whose cookie is larger than the one it was given, so a cookie
//! stays valid across calls, restarts, and the removal of its own name, as READDIR cookies do
//! (see [`super::schema`]).
//!
//! Names are opaque bytes of the "user" namespace without its `user.` prefix (RFC 8276
//! section 6; the Linux client strips and re-adds the prefix). The limits are Linux's, so
//! whatever the server stores a Linux client can read back: a name with its prefix fits
//! `XATTR_NAME_MAX` (255), a value `XATTR_SIZE_MAX` (64 KiB), and the object's whole list as
//! `listxattr(2)` returns it (`user.<name>\0` per name) `XATTR_LIST_MAX` (64 KiB).
//!
//! Every change moves the object's change attribute and ctime on (in the same transaction, so
//! the `change_info4` is atomic), and deleting an inode deletes its attributes
//! ([`remove_all`], called where the namespace deletes inode records).

use bytes::Bytes;
use nfs_proto::nfs4::{ChangeInfo4, Nfstime4};
use redb::ReadableTable;

use super::commit::Txn;
use super::ns::Ns;
use super::schema::{load, XATTRS, XATTR_COOKIES};
use super::{Store, StoreError};

/// The namespace prefix the wire names leave out (RFC 8276 section 6).
const USER_PREFIX_LEN: usize = "user.".len();
/// The longest name, without the `user.` prefix: Linux's `XATTR_NAME_MAX` (255) less the prefix.
pub const MAX_XATTR_NAME_LEN: usize = 255 - USER_PREFIX_LEN;
/// The largest value: Linux's `XATTR_SIZE_MAX`. Larger is NFS4ERR_XATTR2BIG.
pub const MAX_XATTR_VALUE_LEN: usize = 64 << 10;
/// The most bytes an object's names may take as `listxattr(2)` returns them (`user.` + name +
/// NUL each): Linux's `XATTR_LIST_MAX`. A new name beyond it is NFS4ERR_NOSPC.
pub const MAX_XATTR_LIST_LEN: usize = 64 << 10;

/// What SETXATTR may do (`setxattr_option4`, RFC 8276 section 8.4.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum XattrSet {
    /// SETXATTR4_EITHER: create or replace.
    Either,
    /// SETXATTR4_CREATE: the name must be new (else NFS4ERR_EXIST).
    Create,
    /// SETXATTR4_REPLACE: the name must exist (else NFS4ERR_NOXATTR).
    Replace,
}

/// One name of a LISTXATTRS page.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct XattrName {
    /// Resume listing after this name with this cookie.
    pub cookie: u64,
    /// The name (without `user.`).
    pub name: Bytes,
}

/// A slice of an object's names, in cookie order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct XattrNames {
    /// The names.
    pub names: Vec<XattrName>,
    /// True if no name follows the last one returned.
    pub eof: bool,
}

/// Checks an extended attribute name: empty is NFS4ERR_INVAL, a NUL byte (which no
/// `setxattr(2)` name can hold) NFS4ERR_BADNAME, longer than [`MAX_XATTR_NAME_LEN`]
/// NFS4ERR_NAMETOOLONG. Other bytes are the client's business, as in file names.
pub fn check_xattr_name(name: &[u8]) -> Result<(), StoreError> {
    if name.is_empty() {
        return Err(StoreError::Inval("zero-length xattr name"));
    }
    if name.contains(&0) {
        return Err(StoreError::BadName("xattr name contains NUL"));
    }
    if name.len() > MAX_XATTR_NAME_LEN {
        return Err(StoreError::NameTooLong);
    }
    Ok(())
}

/// Above every valid name (none is longer than [`MAX_XATTR_NAME_LEN`]): the upper bound of a
/// range over all of one object's names.
const PAST_NAMES: [u8; MAX_XATTR_NAME_LEN + 1] = [0xff; MAX_XATTR_NAME_LEN + 1];

/// The bytes `listxattr(2)` spends on a name: `user.`, the name, a NUL.
fn list_len(name: &[u8]) -> usize {
    USER_PREFIX_LEN + name.len() + 1
}

fn cinfo(before: u64, after: u64) -> ChangeInfo4 {
    ChangeInfo4 {
        atomic: true,
        before,
        after,
    }
}

/// SETXATTR as a committer job.
fn set(
    tx: &Txn<'_>,
    fileid: u64,
    name: &[u8],
    value: &[u8],
    how: XattrSet,
    now: Nfstime4,
) -> Result<ChangeInfo4, StoreError> {
    let mut ns = Ns::open(tx)?;
    let mut rec = load(ns.inodes.read(), fileid)?;
    let existing = ns
        .xattrs
        .get()?
        .read()
        .get((fileid, name))?
        .map(|g| g.value().0);
    match (how, existing) {
        (XattrSet::Create, Some(_)) => return Err(StoreError::Exist),
        (XattrSet::Replace, None) => return Err(StoreError::NoXattr),
        _ => {}
    }
    if existing.is_none() {
        let mut total = list_len(name);
        for e in ns
            .xattrs
            .get()?
            .read()
            .range((fileid, &[][..])..=(fileid, &PAST_NAMES[..]))?
        {
            total += list_len(e?.0.value().1);
        }
        if total > MAX_XATTR_LIST_LEN {
            return Err(StoreError::NoSpace(
                "the object's xattr names would pass XATTR_LIST_MAX",
            ));
        }
    }
    // Checks done: from here on, writes.
    let change = ns.next_change()?;
    let cookie = existing.unwrap_or(change);
    ns.xattrs
        .get()?
        .write()
        .insert((fileid, name), (cookie, value))?;
    if existing.is_none() {
        ns.xattr_cookies
            .get()?
            .write()
            .insert((fileid, cookie), name)?;
    }
    let before = rec.change;
    rec.change = change;
    rec.ctime = now;
    ns.put(fileid, &rec)?;
    Ok(cinfo(before, change))
}

/// REMOVEXATTR as a committer job.
fn remove(
    tx: &Txn<'_>,
    fileid: u64,
    name: &[u8],
    now: Nfstime4,
) -> Result<ChangeInfo4, StoreError> {
    let mut ns = Ns::open(tx)?;
    let mut rec = load(ns.inodes.read(), fileid)?;
    let cookie = ns
        .xattrs
        .get()?
        .read()
        .get((fileid, name))?
        .map(|g| g.value().0)
        .ok_or(StoreError::NoXattr)?;
    let change = ns.next_change()?;
    ns.xattrs.get()?.write().remove((fileid, name))?;
    ns.xattr_cookies.get()?.write().remove((fileid, cookie))?;
    let before = rec.change;
    rec.change = change;
    rec.ctime = now;
    ns.put(fileid, &rec)?;
    Ok(cinfo(before, change))
}

/// Deletes every extended attribute of `fileid`, for the namespace code that deletes the
/// inode record, in the same transaction. A write even when there is nothing to delete.
pub(super) fn remove_all(ns: &mut Ns<'_>, fileid: u64) -> Result<(), StoreError> {
    ns.xattrs
        .get()?
        .write()
        .remove_range((fileid, &[][..])..=(fileid, &PAST_NAMES[..]))?;
    ns.xattr_cookies
        .get()?
        .write()
        .remove_range((fileid, 0)..=(fileid, u64::MAX))?;
    Ok(())
}

impl Store {
    /// GETXATTR (RFC 8276 section 8.4.1): the value of `name` on `fileid`; NFS4ERR_NOXATTR if
    /// it has none, NFS4ERR_STALE if the object is gone.
    pub fn get_xattr(&self, fileid: u64, name: &[u8]) -> Result<Bytes, StoreError> {
        check_xattr_name(name)?;
        let r = self.read()?;
        load(&r.open_table(super::schema::INODES)?, fileid)?;
        let t = r.open_table(XATTRS)?;
        let v = t.get((fileid, name))?.ok_or(StoreError::NoXattr)?;
        Ok(Bytes::copy_from_slice(v.value().1))
    }

    /// SETXATTR (RFC 8276 section 8.4.2): sets `name` to `value` as `how` allows. A value over
    /// [`MAX_XATTR_VALUE_LEN`] is NFS4ERR_XATTR2BIG; a new name that would take the object's
    /// list past [`MAX_XATTR_LIST_LEN`] is NFS4ERR_NOSPC. Returns the object's change
    /// attribute before and after.
    pub fn set_xattr(
        &self,
        fileid: u64,
        name: &[u8],
        value: Bytes,
        how: XattrSet,
        now: Nfstime4,
    ) -> super::Pending<ChangeInfo4> {
        if let Err(e) = check_xattr_name(name) {
            return super::Pending::ready(Err(e));
        }
        if value.len() > MAX_XATTR_VALUE_LEN {
            return super::Pending::ready(Err(StoreError::Xattr2Big));
        }
        let name = Bytes::copy_from_slice(name);
        self.write(move |tx| set(tx, fileid, &name, &value, how, now))
    }

    /// REMOVEXATTR (RFC 8276 section 8.4.4): NFS4ERR_NOXATTR if `name` is not set. Returns the
    /// object's change attribute before and after.
    pub fn remove_xattr(
        &self,
        fileid: u64,
        name: &[u8],
        now: Nfstime4,
    ) -> super::Pending<ChangeInfo4> {
        if let Err(e) = check_xattr_name(name) {
            return super::Pending::ready(Err(e));
        }
        let name = Bytes::copy_from_slice(name);
        self.write(move |tx| remove(tx, fileid, &name, now))
    }

    /// LISTXATTRS (RFC 8276 section 8.4.3): up to `max_names` names of `fileid` after
    /// `cookie` (0: from the start), in cookie order. A cookie larger than any this store
    /// handed out is NFS4ERR_BAD_COOKIE.
    pub fn list_xattrs(
        &self,
        fileid: u64,
        cookie: u64,
        max_names: usize,
    ) -> Result<XattrNames, StoreError> {
        let r = self.read()?;
        load(&r.open_table(super::schema::INODES)?, fileid)?;
        let issued = self.change_counter()?;
        if cookie > issued {
            return Err(StoreError::BadCookie(cookie));
        }
        let t = r.open_table(XATTR_COOKIES)?;
        let mut it = t.range((fileid, cookie.saturating_add(1))..=(fileid, u64::MAX))?;
        let mut names = Vec::new();
        while names.len() < max_names {
            let Some(e) = it.next() else {
                return Ok(XattrNames { names, eof: true });
            };
            let (k, v) = e?;
            names.push(XattrName {
                cookie: k.value().1,
                name: Bytes::copy_from_slice(v.value()),
            });
        }
        let eof = it.next().is_none();
        Ok(XattrNames { names, eof })
    }
}

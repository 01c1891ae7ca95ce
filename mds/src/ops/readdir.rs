//! READDIR (RFC 8881 section 18.23): a directory's entries with their attributes, a batch at a
//! time, within the client's `maxcount` and the session's reply limit.

use super::attr::{file_attrs, supported_mask};
use super::dir::{current_dir, REPLY_RESERVE};
use crate::compound::exports::{Place, PSEUDO_EXPORT};
use crate::compound::Ctx;
use crate::store::{DirEntry, ReadDir};
use bytes::Bytes;
use nfs_proto::nfs4::attr::*;
use nfs_proto::nfs4::*;
use nfs_proto::xdr::Utf8String;

/// The XDR size of an entry in a READDIR reply: the "value follows" word, the cookie, the
/// name and the `fattr4`.
pub(super) fn entry_size(e: &Entry4) -> usize {
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
    let st = ctx.mds.core().state();
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
/// an RW layout of the file ([`crate::pnfs::dsobjects::sized`]).
pub async fn readdir(ctx: &mut Ctx, a: &ReadDirArgs) -> Result<ReadDirResOk, NfsStat4> {
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
            _ => ctx.mds.store().readdir(dir.fileid, cookie, BATCH)?,
        };
        for e in batch.entries {
            // Entries of a pseudo node, and junctions in an export root, show the root of
            // the export they lead to (its own fsid: the client sees a mount point).
            let (inode, export) = match place.and_then(|p| {
                ctx.mds
                    .exports()
                    .child(p, std::str::from_utf8(&e.name).ok()?)
            }) {
                Some(Place::Export(id)) => (ctx.mds.export_root(id)?, id),
                Some(Place::Pseudo(_)) => (e.inode, PSEUDO_EXPORT),
                None => (e.inode, fh.export),
            };
            let inode = if wants_size {
                ctx.sized_attrs(inode, wants_space).await
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
    let children: Vec<_> = ctx.mds.exports().pseudo_children(node).collect();
    let skip = match cookie {
        0 => 0,
        c if c >= 3 && c - 3 < children.len() as u64 => (c - 2) as usize,
        _ => return Err(NfsStat4::NFS4ERR_BAD_COOKIE),
    };
    let mut entries = Vec::new();
    let ip = ctx.session.conn.peer().ip();
    for (i, (name, place)) in children.into_iter().enumerate().skip(skip) {
        if !ctx.mds.exports().admits(place, ip) {
            continue;
        }
        let inode = match place {
            Place::Pseudo(n) => {
                let fileid = ctx.mds.exports().pseudo_fileid_of(n);
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

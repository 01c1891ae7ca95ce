//! LISTXATTRS (RFC 8276 section 8.4.3).

use super::readdir::reply_budget;
use super::xattr::{check_read, holds_xattrs};
use crate::compound::Ctx;
use nfs_proto::nfs4::*;
use nfs_proto::xdr::Utf8String;

/// `LISTXATTRS4resok` without names: the cookie, the array length and `eof`.
const LIST_FIXED: usize = 8 + 4 + 4;

/// Names asked of the store at a time.
const BATCH: usize = 256;

/// LISTXATTRS (RFC 8276 section 8.4.3): names in the order they were created, resuming after
/// `lxa_cookie` (0: from the start). `lxa_maxcount` bounds the whole `LISTXATTRS4resok` as the
/// Linux client computes it (cookie, array, names, eof), lowered to fit the session's reply
/// size; if not even one name fits, NFS4ERR_TOOSMALL. Cookies stay valid across calls, the
/// removal of their own name and restarts; one this server never issued is
/// NFS4ERR_BAD_COOKIE.
pub fn listxattrs(ctx: &Ctx, a: &ListXattrsArgs) -> Result<ListXattrsResOk, NfsStat4> {
    let inode = check_read(ctx, ACCESS4_XALIST)?;
    let (limit, too_small) = reply_budget(ctx, a.lxa_maxcount, LIST_FIXED)?;
    if !holds_xattrs(&inode) {
        return Ok(ListXattrsResOk {
            lxr_cookie: a.lxa_cookie,
            lxr_names: Vec::new(),
            lxr_eof: true,
        });
    }
    let mut names = Vec::new();
    let mut size = LIST_FIXED;
    let mut cookie = a.lxa_cookie;
    let eof = 'fill: loop {
        let page = ctx.mds.store().list_xattrs(inode.fileid, cookie, BATCH)?;
        for n in page.names {
            let cost = 4 + n.name.len().next_multiple_of(4);
            if size + cost > limit {
                if names.is_empty() {
                    return Err(too_small);
                }
                break 'fill false;
            }
            size += cost;
            cookie = n.cookie;
            names.push(Utf8String(n.name));
        }
        if page.eof {
            break true;
        }
    };
    Ok(ListXattrsResOk {
        lxr_cookie: cookie,
        lxr_names: names,
        lxr_eof: eof,
    })
}

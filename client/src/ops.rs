//! Building COMPOUND operations and picking results out of replies.

use bytes::Bytes;
use nfs_proto::nfs4::*;
use nfs_proto::xdr::Utf8String;

use crate::error::{Error, Result};
use crate::session::nfs_err;

/// PUTFH.
pub(crate) fn putfh(fh: &NfsFh4) -> NfsArgop4 {
    NfsArgop4::PutFh(PutFhArgs { object: fh.clone() })
}

/// GETATTR of the library's attribute set.
pub(crate) fn getattr() -> NfsArgop4 {
    NfsArgop4::GetAttr(GetAttrArgs {
        attr_request: crate::attr::request(),
    })
}

/// LOOKUP of one name.
pub(crate) fn lookup(name: &str) -> NfsArgop4 {
    NfsArgop4::Lookup(LookupArgs {
        objname: Utf8String::from(name),
    })
}

/// The components of a path (`/a//b/` -> `a`, `b`), refusing `.` and `..` (the server has no
/// such names in NFSv4; a caller resolves them before).
pub(crate) fn components(path: &str) -> Result<Vec<&str>> {
    let parts: Vec<&str> = path.split('/').filter(|c| !c.is_empty()).collect();
    if parts.iter().any(|c| *c == "." || *c == "..") {
        return Err(Error::Invalid(format!(
            "{path}: `.` and `..` are not names on an NFSv4 server"
        )));
    }
    Ok(parts)
}

/// Splits a path into its parent's components and its last name.
pub(crate) fn parent_and_name(path: &str) -> Result<(Vec<&str>, &str)> {
    let mut parts = components(path)?;
    let name = parts
        .pop()
        .ok_or_else(|| Error::Invalid(format!("{path:?} names the root, not an entry")))?;
    Ok((parts, name))
}

/// The open-owner or lock-owner of this client (the client id is filled in by the server).
pub(crate) fn state_owner(owner: &Bytes) -> StateOwner4 {
    StateOwner4 {
        clientid: 0,
        owner: owner.clone(),
    }
}

/// Finds the result of one kind in a reply, or a protocol error naming `op`.
pub(crate) fn find<'a, T>(
    results: &'a [NfsResop4],
    op: NfsOpnum4,
    pick: impl Fn(&'a NfsResop4) -> Option<T>,
) -> Result<T> {
    results.iter().find_map(pick).ok_or(Error::Invalid(format!(
        "the reply has no successful {op} result"
    )))
}

/// The filehandle of a GETFH result.
pub(crate) fn fh_of(results: &[NfsResop4]) -> Result<NfsFh4> {
    find(results, NfsOpnum4::OP_GETFH, |r| match r {
        NfsResop4::GetFh(GetFhRes::Ok(ok)) => Some(ok.object.clone()),
        _ => None,
    })
}

/// The attributes of the last GETATTR result.
pub(crate) fn attrs_of(results: &[NfsResop4]) -> Option<crate::attr::Metadata> {
    results.iter().rev().find_map(|r| match r {
        NfsResop4::GetAttr(GetAttrRes::Ok(ok)) => {
            crate::attr::Metadata::from_fattr(&ok.obj_attributes)
        }
        _ => None,
    })
}

/// The error of a reply that failed: its last result's operation and status.
pub(crate) fn failure(results: &[NfsResop4], status: NfsStat4) -> Error {
    let op = results
        .last()
        .map(|r| r.opnum())
        .unwrap_or(NfsOpnum4::OP_SEQUENCE);
    nfs_err(op, status)
}

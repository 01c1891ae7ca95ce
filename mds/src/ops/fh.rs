//! What the filehandle and name operations share (PUTROOTFH, PUTFH, GETFH, SAVEFH, RESTOREFH,
//! LOOKUP, LOOKUPP and SECINFO have a file each): the check of a name component and the
//! encoding of a filehandle.
//!
//! The root is the root of the joined tree (see [`crate::compound::exports`]): the export at `/`, or a
//! pseudo node above the exports. LOOKUP and LOOKUPP cross between file systems at pseudo
//! nodes and export roots, entering each export's access rule on the way.

use crate::compound::exports::PSEUDO_EXPORT;
use crate::compound::{Ctx, Fh};
use crate::store::FhKind;
use nfs_proto::nfs4::*;
use nfs_proto::xdr::Utf8String;

/// A name from the wire, checked as RFC 8881 section 14.4 asks: UTF-8, not empty, no `/`.
pub fn check_component(name: &Utf8String) -> Result<&[u8], NfsStat4> {
    let s = name.as_str().ok_or(NfsStat4::NFS4ERR_INVAL)?;
    if s.is_empty() {
        return Err(NfsStat4::NFS4ERR_INVAL);
    }
    if s.len() > crate::store::MAX_NAME_LEN {
        return Err(NfsStat4::NFS4ERR_NAMETOOLONG);
    }
    if s == "." || s == ".." || s.contains('/') || s.contains('\0') {
        return Err(NfsStat4::NFS4ERR_BADNAME);
    }
    Ok(name.as_bytes())
}

/// The wire handle of a resolved one.
pub fn encode_fh(ctx: &Ctx, fh: Fh) -> NfsFh4 {
    let kind = if fh.export == PSEUDO_EXPORT {
        FhKind::Pseudo
    } else {
        FhKind::Object
    };
    ctx.mds
        .store()
        .fh_codec()
        .encode_kind(kind, fh.export, fh.fileid, fh.generation)
}

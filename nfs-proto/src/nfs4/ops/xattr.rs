//! Extended attributes (RFC 8276, an optional NFSv4.2 extension): GETXATTR (72), SETXATTR
//! (73), LISTXATTRS (74) and REMOVEXATTR (75). Support is announced by the `xattr_support`
//! attribute (82), and ACCESS gains the bits `ACCESS4_XAREAD`, `ACCESS4_XAWRITE` and
//! `ACCESS4_XALIST` (in [`super::v40`]).
//!
//! Keys travel without a namespace prefix: RFC 8276 section 6 covers only the "user"
//! namespace, so the Linux client strips `user.` before it sends a key and adds it back to the
//! names LISTXATTRS returns.

use bytes::Bytes;

use crate::nfs4::types::*;
use crate::xdr::Xdr;
use crate::xdr_enum;

/// `xattrkey4`: the name of an extended attribute (RFC 8276 section 8.3), a `component4`.
#[doc(alias = "xattrkey4")]
pub type Xattrkey4 = Component4;

/// `xattrvalue4`: the value of an extended attribute (RFC 8276 section 8.3), opaque bytes.
/// (Fields spell it `Bytes`, which the derive recognises for its test-value strategy.)
#[doc(alias = "xattrvalue4")]
pub type Xattrvalue4 = Bytes;

// ---------------------------------------------------------------------------------------------
// GETXATTR (72)
// ---------------------------------------------------------------------------------------------

/// GETXATTR arguments (RFC 8276 section 8.4.1): the value of one extended attribute of the
/// current filehandle's object.
#[doc(alias = "GETXATTR4args")]
#[derive(Clone, PartialEq, Eq, Debug, Default, Xdr)]
pub struct GetXattrArgs {
    /// The attribute's name.
    pub gxa_name: Xattrkey4,
}

/// GETXATTR success result (RFC 8276 section 8.4.1).
#[doc(alias = "GETXATTR4resok")]
#[derive(Clone, PartialEq, Eq, Debug, Default, Xdr)]
pub struct GetXattrResOk {
    /// The value (`gxr_value`), kept as its own piece when encoded: values run to 64 KiB.
    #[xdr(payload)]
    pub gxr_value: Bytes,
}

crate::nfs_res! {
    /// GETXATTR result (RFC 8276 section 8.4.1); NFS4ERR_NOXATTR when there is no such
    /// attribute.
    #[doc(alias = "GETXATTR4res")]
    pub enum GetXattrRes => GetXattrResOk
}

// ---------------------------------------------------------------------------------------------
// SETXATTR (73)
// ---------------------------------------------------------------------------------------------

xdr_enum! {
    /// `setxattr_option4`: whether SETXATTR may create, replace or do either (RFC 8276
    /// section 8.4.2).
    #[doc(alias = "setxattr_option4")]
    pub struct SetxattrOption4 {
        SETXATTR4_EITHER = 0,
        SETXATTR4_CREATE = 1,
        SETXATTR4_REPLACE = 2,
    }
}

/// SETXATTR arguments (RFC 8276 section 8.4.2): create or replace one extended attribute of
/// the current filehandle's object.
#[doc(alias = "SETXATTR4args")]
#[derive(Clone, PartialEq, Eq, Debug, Xdr)]
pub struct SetXattrArgs {
    /// Create only (NFS4ERR_EXIST if present), replace only (NFS4ERR_NOXATTR if absent), or
    /// either.
    pub sxa_option: SetxattrOption4,
    /// The attribute's name.
    pub sxa_key: Xattrkey4,
    /// The new value, kept as its own piece when encoded.
    #[xdr(payload)]
    pub sxa_value: Bytes,
}

/// SETXATTR success result (RFC 8276 section 8.4.2).
#[doc(alias = "SETXATTR4resok")]
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, Xdr)]
pub struct SetXattrResOk {
    /// The object's change attribute before and after (`sxr_info`).
    pub sxr_info: ChangeInfo4,
}

crate::nfs_res! {
    /// SETXATTR result (RFC 8276 section 8.4.2).
    #[doc(alias = "SETXATTR4res")]
    pub enum SetXattrRes => SetXattrResOk
}

// ---------------------------------------------------------------------------------------------
// LISTXATTRS (74)
// ---------------------------------------------------------------------------------------------

/// LISTXATTRS arguments (RFC 8276 section 8.4.3): the names of the current filehandle's
/// object's extended attributes, in pieces.
#[doc(alias = "LISTXATTRS4args")]
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, Xdr)]
pub struct ListXattrsArgs {
    /// 0 for the first call; else the `lxr_cookie` of the previous reply.
    pub lxa_cookie: NfsCookie4,
    /// Most bytes of the whole `LISTXATTRS4resok` (cookie, names and eof, XDR-encoded).
    pub lxa_maxcount: Count4,
}

/// LISTXATTRS success result (RFC 8276 section 8.4.3).
#[doc(alias = "LISTXATTRS4resok")]
#[derive(Clone, PartialEq, Eq, Debug, Default, Xdr)]
pub struct ListXattrsResOk {
    /// Where the next call resumes.
    pub lxr_cookie: NfsCookie4,
    /// Names.
    pub lxr_names: Vec<Xattrkey4>,
    /// No name follows the last one returned.
    pub lxr_eof: bool,
}

crate::nfs_res! {
    /// LISTXATTRS result (RFC 8276 section 8.4.3).
    #[doc(alias = "LISTXATTRS4res")]
    pub enum ListXattrsRes => ListXattrsResOk
}

// ---------------------------------------------------------------------------------------------
// REMOVEXATTR (75)
// ---------------------------------------------------------------------------------------------

/// REMOVEXATTR arguments (RFC 8276 section 8.4.4): remove one extended attribute of the
/// current filehandle's object.
#[doc(alias = "REMOVEXATTR4args")]
#[derive(Clone, PartialEq, Eq, Debug, Default, Xdr)]
pub struct RemoveXattrArgs {
    /// The attribute's name.
    pub rxa_name: Xattrkey4,
}

/// REMOVEXATTR success result (RFC 8276 section 8.4.4).
#[doc(alias = "REMOVEXATTR4resok")]
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, Xdr)]
pub struct RemoveXattrResOk {
    /// The object's change attribute before and after (`rxr_info`).
    pub rxr_info: ChangeInfo4,
}

crate::nfs_res! {
    /// REMOVEXATTR result (RFC 8276 section 8.4.4).
    #[doc(alias = "REMOVEXATTR4res")]
    pub enum RemoveXattrRes => RemoveXattrResOk
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nfs4::{NfsArgop4, NfsOpnum4, NfsResop4, NfsStat4};
    use crate::xdr::{from_bytes, to_bytes, Encoder, Utf8String};

    crate::roundtrip_tests!(
        setxattr_option4: SetxattrOption4,
        get_xattr_args: GetXattrArgs,
        get_xattr_res_ok: GetXattrResOk,
        get_xattr_res: GetXattrRes,
        set_xattr_args: SetXattrArgs,
        set_xattr_res_ok: SetXattrResOk,
        set_xattr_res: SetXattrRes,
        list_xattrs_args: ListXattrsArgs,
        list_xattrs_res_ok: ListXattrsResOk,
        list_xattrs_res: ListXattrsRes,
        remove_xattr_args: RemoveXattrArgs,
        remove_xattr_res_ok: RemoveXattrResOk,
        remove_xattr_res: RemoveXattrRes,
    );

    #[test]
    fn xattr_operations_have_the_rfc_8276_numbers() {
        assert_eq!(NfsOpnum4::OP_GETXATTR.0, 72);
        assert_eq!(NfsOpnum4::OP_SETXATTR.0, 73);
        assert_eq!(NfsOpnum4::OP_LISTXATTRS.0, 74);
        assert_eq!(NfsOpnum4::OP_REMOVEXATTR.0, 75);
        let op = NfsArgop4::RemoveXattr(RemoveXattrArgs {
            rxa_name: Utf8String::from("a"),
        });
        assert_eq!(op.opnum(), NfsOpnum4::OP_REMOVEXATTR);
    }

    #[test]
    fn setxattr_args_layout() {
        let a = SetXattrArgs {
            sxa_option: SetxattrOption4::SETXATTR4_CREATE,
            sxa_key: Utf8String::from("attr1"),
            sxa_value: Bytes::from_static(b"value1"),
        };
        let b = to_bytes(&NfsArgop4::SetXattr(a));
        assert_eq!(
            &b[..],
            &[
                0, 0, 0, 73, // OP_SETXATTR
                0, 0, 0, 1, // SETXATTR4_CREATE
                0, 0, 0, 5, b'a', b't', b't', b'r', b'1', 0, 0, 0, // key
                0, 0, 0, 6, b'v', b'a', b'l', b'u', b'e', b'1', 0, 0, // value
            ]
        );
    }

    #[test]
    fn listxattrs_reply_layout() {
        // NFS4_OK, cookie 9, names ["a", "bc"], eof.
        let mut e = Encoder::new();
        e.put_u32(74);
        e.put_u32(0);
        e.put_u64(9);
        e.put_u32(2);
        e.put_opaque(b"a");
        e.put_opaque(b"bc");
        e.put_u32(1);
        let b = e.into_bytes();
        let r = from_bytes::<NfsResop4>(b.clone()).unwrap();
        assert_eq!(
            r,
            NfsResop4::ListXattrs(ListXattrsRes::Ok(ListXattrsResOk {
                lxr_cookie: 9,
                lxr_names: vec![Utf8String::from("a"), Utf8String::from("bc")],
                lxr_eof: true,
            }))
        );
        assert_eq!(to_bytes(&r), b);
    }

    #[test]
    fn getxattr_value_is_a_separate_piece() {
        let value = Bytes::from(vec![3u8; 4096]);
        let r = GetXattrRes::Ok(GetXattrResOk {
            gxr_value: value.clone(),
        });
        let mut e = Encoder::new();
        r.encode(&mut e);
        assert!(e.into_pieces().iter().any(|p| p.as_ptr() == value.as_ptr()));
    }

    #[test]
    fn xattr_errors_are_status_only() {
        let b = to_bytes(&NfsStat4::NFS4ERR_NOXATTR);
        assert_eq!(
            from_bytes::<GetXattrRes>(b).unwrap(),
            GetXattrRes::Err(NfsStat4::NFS4ERR_NOXATTR)
        );
        let b = to_bytes(&NfsStat4::NFS4ERR_XATTR2BIG);
        let r = from_bytes::<SetXattrRes>(b).unwrap();
        assert_eq!(r.status(), NfsStat4::NFS4ERR_XATTR2BIG);
    }
}

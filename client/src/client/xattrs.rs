//! User extended attributes by filehandle (RFC 8276, an NFSv4.2 extension): what a FUSE
//! mount answers `getxattr(2)`, `setxattr(2)`, `listxattr(2)` and `removexattr(2)` of
//! `user.*` names with.
//!
//! - **Names travel without the `user.` prefix.** RFC 8276 section 6 covers the user
//!   namespace only, so the caller strips the prefix before calling here and adds it back to
//!   what [`Client::listxattrs`] returns, as the Linux client does.
//! - **Minor version 2.** The client's session speaks minor version 1; these COMPOUNDs go in
//!   minor version 2, as COPY does (`copy.rs`), since a server may refuse an NFSv4.2
//!   operation in a 4.1 COMPOUND (our MDS answers NFS4ERR_NOTSUPP there). A server without
//!   them answers NFS4ERR_NOTSUPP, NFS4ERR_OP_ILLEGAL or NFS4ERR_MINOR_VERS_MISMATCH, which
//!   [`Error::errno`] makes EOPNOTSUPP, and [`Client::supports_xattrs`] says so up front.
//! - **Linux's limits, checked before sending.** A name is at most [`MAX_XATTR_NAME`] bytes
//!   (with `user.` it fits `XATTR_NAME_MAX`), a value at most [`MAX_XATTR_VALUE`]
//!   (`XATTR_SIZE_MAX`): past them the errno is the one `setxattr(2)` gives (ERANGE for the
//!   name, E2BIG for the value), and a value or listing from the server is held to the same
//!   bounds.

use std::sync::OnceLock;

use nfs_proto::nfs4::attr::{FileAttrs, FATTR4_XATTR_SUPPORT};

use super::*;

/// The longest name without the `user.` prefix: Linux's `XATTR_NAME_MAX` (255) less the
/// prefix, so that `user.<name>` is a name `getxattr(2)` can ask for. Our MDS holds names
/// to the same length (NFS4ERR_NAMETOOLONG past it).
pub const MAX_XATTR_NAME: usize = 255 - "user.".len();

/// The largest value: Linux's `XATTR_SIZE_MAX` (64 KiB), the most `setxattr(2)` takes and
/// `getxattr(2)` returns.
pub const MAX_XATTR_VALUE: usize = 64 << 10;

/// `lxa_maxcount` of one LISTXATTRS: a quarter of Linux's `XATTR_LIST_MAX` (64 KiB), so a
/// full list takes a few round trips and no reply comes near the session's limits.
const LIST_PAGE_BYTES: u32 = 16 << 10;

/// Most bytes of names one listing collects (as `listxattr(2)` lays them out: `user.`, the
/// name and a NUL each). The server picks the cookies and says when the list ends, so a
/// server that never says `eof` (a bug, or names added as fast as they are listed) would
/// otherwise keep this loop and its memory growing for ever. 1 MiB is sixteen times
/// `XATTR_LIST_MAX`, the most a Linux caller can take, so no list a caller can use is cut.
const MAX_LIST_BYTES: usize = 1 << 20;

/// Most LISTXATTRS requests one listing sends: the same guard for a server whose pages
/// carry little (a page must carry a name, so 10,000 pages hold 10,000 names at least,
/// more than [`MAX_LIST_BYTES`] leaves room for in practice).
const MAX_LIST_PAGES: u32 = 10_000;

/// What SETXATTR may do with a name (`setxattr_option4`, RFC 8276 section 8.4.2), as
/// `setxattr(2)`'s flags say it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum XattrSet {
    /// Create the name or replace its value (flags 0; SETXATTR4_EITHER).
    #[default]
    Either,
    /// Create only: an existing name is NFS4ERR_EXIST, EEXIST (`XATTR_CREATE`;
    /// SETXATTR4_CREATE).
    Create,
    /// Replace only: a missing name is NFS4ERR_NOXATTR, ENODATA (`XATTR_REPLACE`;
    /// SETXATTR4_REPLACE).
    Replace,
}

impl XattrSet {
    /// The mode `setxattr(2)`'s `flags` ask for (`XATTR_CREATE` 1, `XATTR_REPLACE` 2; the
    /// values of `setxattr_option4` too). Other bits, or both flags, are
    /// [`Error::Invalid`] (EINVAL): the Linux client sends the flags as they are, and a
    /// server refuses an option it does not know with NFS4ERR_INVAL.
    pub fn from_flags(flags: i32) -> Result<XattrSet> {
        match flags {
            0 => Ok(XattrSet::Either),
            1 => Ok(XattrSet::Create),
            2 => Ok(XattrSet::Replace),
            f => Err(Error::Invalid(format!("setxattr flags {f:#x}"))),
        }
    }

    fn option(self) -> SetxattrOption4 {
        match self {
            XattrSet::Either => SetxattrOption4::SETXATTR4_EITHER,
            XattrSet::Create => SetxattrOption4::SETXATTR4_CREATE,
            XattrSet::Replace => SetxattrOption4::SETXATTR4_REPLACE,
        }
    }
}

/// Refuses a name no server should see: empty or with a NUL is [`Error::Invalid`]
/// (EINVAL, as Linux answers `user.` alone; no `setxattr(2)` name holds a NUL), longer
/// than [`MAX_XATTR_NAME`] is [`Error::XattrNameTooLong`] (ERANGE, as the VFS answers).
fn check_xattr_name(name: &str) -> Result<()> {
    if name.is_empty() || name.contains('\0') {
        return Err(Error::Invalid(format!(
            "{name:?} is not an extended attribute name"
        )));
    }
    if name.len() > MAX_XATTR_NAME {
        return Err(Error::XattrNameTooLong { len: name.len() });
    }
    Ok(())
}

/// A value larger than [`MAX_XATTR_VALUE`], sent or received.
fn too_big(len: usize) -> Error {
    Error::XattrTooBig {
        what: format!("an extended attribute value of {len} bytes (at most {MAX_XATTR_VALUE})"),
    }
}

/// The names of a LISTXATTRS page a caller can use: names that are UTF-8, not empty and
/// without NUL (any other could not be asked for through this API, nor listed by
/// `listxattr(2)`, whose names end at a NUL). The others are logged and left out.
fn usable_names(names: Vec<Utf8String>) -> impl Iterator<Item = String> {
    names.into_iter().filter_map(|n| match n.as_str() {
        Some(s) if !s.is_empty() && !s.contains('\0') => Some(s.to_string()),
        _ => {
            tracing::warn!(name = ?n, "LISTXATTRS returned a name that cannot be used; skipped");
            None
        }
    })
}

/// The cached answer of [`Client::supports_xattrs`].
pub(crate) type XattrSupport = OnceLock<bool>;

impl Client {
    /// GETXATTR: the value of `name` (without the `user.` prefix: RFC 8276 names are the
    /// user namespace only). A missing name is NFS4ERR_NOXATTR (ENODATA); a value larger
    /// than [`MAX_XATTR_VALUE`] is [`Error::XattrTooBig`] (E2BIG, as `getxattr(2)` answers
    /// for one no Linux buffer can take).
    pub async fn getxattr(&self, node: &Node, name: &str) -> Result<Bytes> {
        check_xattr_name(name)?;
        let r = self
            .run_v42(
                NfsOpnum4::OP_GETXATTR,
                vec![
                    putfh(&node.fh),
                    NfsArgop4::GetXattr(GetXattrArgs {
                        gxa_name: Utf8String::from(name),
                    }),
                ],
            )
            .await?;
        let value = ops::find(&r, NfsOpnum4::OP_GETXATTR, |x| match x {
            NfsResop4::GetXattr(GetXattrRes::Ok(ok)) => Some(ok.gxr_value.clone()),
            _ => None,
        })?;
        if value.len() > MAX_XATTR_VALUE {
            return Err(too_big(value.len()));
        }
        Ok(value)
    }

    /// SETXATTR with a mode: create only (`XATTR_CREATE`), replace only (`XATTR_REPLACE`),
    /// or either. The server replies once the change is durable (our MDS commits it first).
    pub async fn setxattr(
        &self,
        node: &Node,
        name: &str,
        value: Bytes,
        how: XattrSet,
    ) -> Result<()> {
        check_xattr_name(name)?;
        if value.len() > MAX_XATTR_VALUE {
            return Err(too_big(value.len()));
        }
        let op = NfsArgop4::SetXattr(SetXattrArgs {
            sxa_option: how.option(),
            sxa_key: Utf8String::from(name),
            sxa_value: value,
        });
        self.change_xattrs(node, NfsOpnum4::OP_SETXATTR, op).await
    }

    /// LISTXATTRS, every page (following the cookie until `eof`): the names, without the
    /// `user.` prefix, in the server's order. A listing larger than 1 MiB of names is
    /// [`Error::XattrTooBig`] (E2BIG), and a server that sends more than 10,000 pages, or a
    /// page without names that does not end the list, breaks the protocol: a listing always
    /// ends.
    pub async fn listxattrs(&self, node: &Node) -> Result<Vec<String>> {
        let mut names = Vec::new();
        let (mut cookie, mut bytes, mut pages) = (0u64, 0usize, 0u32);
        loop {
            if pages == MAX_LIST_PAGES {
                return Err(self.protocol("LISTXATTRS did not end within 10,000 pages"));
            }
            pages += 1;
            Counters::add(&self.inner.counters.xattr_list_pages, 1);
            let r = self
                .run_v42(
                    NfsOpnum4::OP_LISTXATTRS,
                    vec![
                        putfh(&node.fh),
                        NfsArgop4::ListXattrs(ListXattrsArgs {
                            lxa_cookie: cookie,
                            lxa_maxcount: LIST_PAGE_BYTES,
                        }),
                    ],
                )
                .await?;
            let page = ops::find(&r, NfsOpnum4::OP_LISTXATTRS, |x| match x {
                NfsResop4::ListXattrs(ListXattrsRes::Ok(ok)) => Some(ok.clone()),
                _ => None,
            })?;
            if page.lxr_names.is_empty() && !page.lxr_eof {
                return Err(self.protocol("LISTXATTRS returned no names and no eof"));
            }
            for n in usable_names(page.lxr_names) {
                bytes += "user.".len() + n.len() + 1;
                if bytes > MAX_LIST_BYTES {
                    return Err(Error::XattrTooBig {
                        what: "the extended attribute names of one file (more than 1 MiB)".into(),
                    });
                }
                names.push(n);
            }
            if page.lxr_eof {
                return Ok(names);
            }
            cookie = page.lxr_cookie;
        }
    }

    /// REMOVEXATTR: a missing name is NFS4ERR_NOXATTR (ENODATA).
    pub async fn removexattr(&self, node: &Node, name: &str) -> Result<()> {
        check_xattr_name(name)?;
        let op = NfsArgop4::RemoveXattr(RemoveXattrArgs {
            rxa_name: Utf8String::from(name),
        });
        self.change_xattrs(node, NfsOpnum4::OP_REMOVEXATTR, op)
            .await
    }

    /// Whether the server supports extended attributes: the `xattr_support` attribute of
    /// its root (RFC 8276 section 8.1), asked once in minor version 2 and remembered. A
    /// server without NFSv4.2 (NFS4ERR_MINOR_VERS_MISMATCH), or one that does not report the
    /// attribute, has none. A file system under the root may still answer otherwise (a
    /// server whose root is a pseudo file system); the operations themselves say so then.
    pub async fn supports_xattrs(&self) -> Result<bool> {
        if let Some(s) = self.inner.xattr_support.get() {
            return Ok(*s);
        }
        let ops = vec![
            NfsArgop4::PutRootFh,
            NfsArgop4::GetAttr(GetAttrArgs {
                attr_request: Bitmap4::from_bits([FATTR4_XATTR_SUPPORT]),
            }),
        ];
        let supported = match self.run_v42(NfsOpnum4::OP_GETATTR, ops).await {
            Ok(r) => r.iter().any(|x| match x {
                NfsResop4::GetAttr(GetAttrRes::Ok(ok)) => FileAttrs::from_fattr(&ok.obj_attributes)
                    .ok()
                    .and_then(|a| a.xattr_support)
                    .unwrap_or(false),
                _ => false,
            }),
            Err(e) if e.is_unsupported() => false,
            Err(e) => return Err(e),
        };
        Ok(*self.inner.xattr_support.get_or_init(|| supported))
    }

    /// SETXATTR or REMOVEXATTR (`op`, named `opnum`) of `node`. The node's cached
    /// attributes go: the change attribute and ctime moved.
    async fn change_xattrs(&self, node: &Node, opnum: NfsOpnum4, op: NfsArgop4) -> Result<()> {
        let r = self.run_v42(opnum, vec![putfh(&node.fh), op]).await;
        self.inner.forget_attrs(&node.fh);
        r.map(drop)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_checked_before_sending() {
        assert!(check_xattr_name("a").is_ok());
        assert!(check_xattr_name(&"n".repeat(MAX_XATTR_NAME)).is_ok());
        let e = check_xattr_name(&"n".repeat(MAX_XATTR_NAME + 1)).unwrap_err();
        assert!(matches!(e, Error::XattrNameTooLong { len: 251 }), "{e}");
        assert_eq!(
            e.errno(),
            34,
            "ERANGE, as the VFS answers a name past XATTR_NAME_MAX"
        );
        for bad in ["", "a\0b"] {
            let e = check_xattr_name(bad).unwrap_err();
            assert!(matches!(e, Error::Invalid(_)), "{bad:?}: {e}");
            assert_eq!(e.errno(), 22);
        }
        // Only the user namespace travels: `user.` is the caller's to strip, and a name that
        // still has it is just a name.
        assert!(check_xattr_name("user.x").is_ok());
    }

    #[test]
    fn a_value_past_xattr_size_max_is_e2big() {
        assert_eq!(MAX_XATTR_VALUE, 65536);
        assert_eq!(too_big(MAX_XATTR_VALUE + 1).errno(), 7);
    }

    #[test]
    fn setxattr_flags_are_the_wire_options() {
        assert_eq!(XattrSet::from_flags(0).unwrap(), XattrSet::Either);
        assert_eq!(XattrSet::from_flags(1).unwrap(), XattrSet::Create);
        assert_eq!(XattrSet::from_flags(2).unwrap(), XattrSet::Replace);
        for f in [3, 4, -1] {
            assert_eq!(XattrSet::from_flags(f).unwrap_err().errno(), 22, "{f}");
        }
        for (how, wire) in [
            (XattrSet::Either, 0),
            (XattrSet::Create, 1),
            (XattrSet::Replace, 2),
        ] {
            assert_eq!(how.option().0, wire);
        }
    }

    #[test]
    fn unusable_listed_names_are_left_out() {
        let names = vec![
            Utf8String::from("ok"),
            Utf8String(Bytes::from_static(b"\xff\xfe")),
            Utf8String::from(""),
            Utf8String::from("nul\0inside"),
            Utf8String::from("also.ok"),
        ];
        assert_eq!(usable_names(names).collect::<Vec<_>>(), ["ok", "also.ok"]);
    }
}

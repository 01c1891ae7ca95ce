//! The namespace operations: ACCESS, CREATE, LINK, LOOKUP, LOOKUPP, NVERIFY, READDIR,
//! READLINK, REMOVE and RENAME.

use super::*;

// ---------------------------------------------------------------------------------------------
// ACCESS (3)
// ---------------------------------------------------------------------------------------------

/// ACCESS arguments (RFC 8881 section 18.1).
#[doc(alias = "ACCESS4args")]
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, Xdr)]
pub struct AccessArgs {
    /// The `ACCESS4_*` bits to check.
    pub access: u32,
}

/// ACCESS result body (RFC 8881 section 18.1).
#[doc(alias = "ACCESS4resok")]
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, Xdr)]
pub struct AccessResOk {
    /// The bits the server could evaluate.
    pub supported: u32,
    /// The bits granted.
    pub access: u32,
}

crate::nfs_res! {
    /// ACCESS result (RFC 8881 section 18.1).
    #[doc(alias = "ACCESS4res")]
    pub enum AccessRes => AccessResOk
}

// ---------------------------------------------------------------------------------------------
// CREATE (6)
// ---------------------------------------------------------------------------------------------

/// `createtype4`: the type of object CREATE makes, with its type-specific data (RFC 8881
/// section 18.4).
#[doc(alias = "createtype4")]
#[derive(Clone, PartialEq, Eq, Debug, Xdr)]
pub enum Createtype4 {
    /// A symbolic link and its target (`linkdata`).
    #[xdr(case = NfsFtype4::NF4LNK)]
    Lnk(Linktext4),
    /// A block device and its numbers (`devdata`).
    #[xdr(case = NfsFtype4::NF4BLK)]
    Blk(Specdata4),
    /// A character device and its numbers (`devdata`).
    #[xdr(case = NfsFtype4::NF4CHR)]
    Chr(Specdata4),
    /// A socket.
    #[xdr(case = NfsFtype4::NF4SOCK)]
    Sock,
    /// A FIFO.
    #[xdr(case = NfsFtype4::NF4FIFO)]
    Fifo,
    /// A directory.
    #[xdr(case = NfsFtype4::NF4DIR)]
    Dir,
    /// Any other type (the server answers `NFS4ERR_BADTYPE`).
    #[xdr(default)]
    Other(NfsFtype4),
}

/// CREATE arguments (RFC 8881 section 18.4).
#[doc(alias = "CREATE4args")]
#[derive(Clone, PartialEq, Eq, Debug, Xdr)]
pub struct CreateArgs {
    /// The type of object and its data.
    pub objtype: Createtype4,
    /// The new name in the current directory.
    pub objname: Component4,
    /// Initial attributes.
    pub createattrs: Fattr4,
}

/// CREATE result body (RFC 8881 section 18.4).
#[doc(alias = "CREATE4resok")]
#[derive(Clone, PartialEq, Eq, Debug, Default, Xdr)]
pub struct CreateResOk {
    /// Change information of the directory.
    pub cinfo: ChangeInfo4,
    /// The attributes that were set.
    pub attrset: Bitmap4,
}

crate::nfs_res! {
    /// CREATE result (RFC 8881 section 18.4).
    #[doc(alias = "CREATE4res")]
    pub enum CreateRes => CreateResOk
}

// ---------------------------------------------------------------------------------------------
// LINK (11)
// ---------------------------------------------------------------------------------------------

/// LINK arguments: the saved filehandle is the source, the current one the directory (RFC 8881
/// section 18.9).
#[doc(alias = "LINK4args")]
#[derive(Clone, PartialEq, Eq, Debug, Default, Xdr)]
pub struct LinkArgs {
    /// The new name in the target directory.
    pub newname: Component4,
}

/// LINK result body (RFC 8881 section 18.9).
#[doc(alias = "LINK4resok")]
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, Xdr)]
pub struct LinkResOk {
    /// Change information of the target directory.
    pub cinfo: ChangeInfo4,
}

crate::nfs_res! {
    /// LINK result (RFC 8881 section 18.9).
    #[doc(alias = "LINK4res")]
    pub enum LinkRes => LinkResOk
}

// ---------------------------------------------------------------------------------------------
// LOOKUP (15), LOOKUPP (16), NVERIFY (17)
// ---------------------------------------------------------------------------------------------

/// LOOKUP arguments (RFC 8881 section 18.13).
#[doc(alias = "LOOKUP4args")]
#[derive(Clone, PartialEq, Eq, Debug, Default, Xdr)]
pub struct LookupArgs {
    /// The name to look up in the current directory.
    pub objname: Component4,
}

crate::nfs_status_res! {
    /// LOOKUP result (RFC 8881 section 18.13).
    #[doc(alias = "LOOKUP4res")]
    pub struct LookupRes
}

crate::nfs_status_res! {
    /// LOOKUPP result (RFC 8881 section 18.14).
    #[doc(alias = "LOOKUPP4res")]
    pub struct LookupPRes
}

/// NVERIFY arguments (RFC 8881 section 18.15).
#[doc(alias = "NVERIFY4args")]
#[derive(Clone, PartialEq, Eq, Debug, Default, Xdr)]
pub struct NVerifyArgs {
    /// Attributes that must differ from the object's.
    pub obj_attributes: Fattr4,
}

crate::nfs_status_res! {
    /// NVERIFY result (RFC 8881 section 18.15).
    #[doc(alias = "NVERIFY4res")]
    pub struct NVerifyRes
}

// ---------------------------------------------------------------------------------------------
// READDIR (26)
// ---------------------------------------------------------------------------------------------

/// READDIR arguments (RFC 8881 section 18.23).
#[doc(alias = "READDIR4args")]
#[derive(Clone, PartialEq, Eq, Debug, Default, Xdr)]
pub struct ReadDirArgs {
    /// Where to continue (0 to start).
    pub cookie: NfsCookie4,
    /// The verifier returned with `cookie` (zeros to start).
    pub cookieverf: Verifier4,
    /// Most bytes of names and cookies wanted.
    pub dircount: Count4,
    /// Most bytes of the whole reply.
    pub maxcount: Count4,
    /// The attributes wanted for each entry.
    pub attr_request: Bitmap4,
}

/// One directory entry (`entry4`, RFC 8881 section 18.23).
///
/// Its own encoding is the entry's fields only: the XDR's `entry4 *nextentry` link is written
/// by [`Dirlist4`], which holds the entries as a list rather than a recursive chain.
#[doc(alias = "entry4")]
#[derive(Clone, PartialEq, Eq, Debug, Default, Xdr)]
pub struct Entry4 {
    /// The cookie to continue after this entry.
    pub cookie: NfsCookie4,
    /// The entry's name.
    pub name: Component4,
    /// The attributes requested.
    pub attrs: Fattr4,
}

/// `dirlist4`: the entries of a READDIR reply and the end-of-directory flag (RFC 8881
/// section 18.23).
///
/// On the wire the entries are a linked list (`entry4 *entries`, each entry ending with
/// `entry4 *nextentry`), that is: a TRUE "value follows" bool before each entry, a FALSE one
/// after the last, then `eof`. It is read and written iteratively, never recursively.
#[doc(alias = "dirlist4")]
#[derive(Clone, PartialEq, Eq, Debug, Default)]
pub struct Dirlist4 {
    /// The entries, in order.
    pub entries: Vec<Entry4>,
    /// Whether the last entry is the last of the directory.
    pub eof: bool,
}

impl Xdr for Dirlist4 {
    /// An empty list: the FALSE bool and `eof`.
    const MIN_SIZE: usize = 8;

    fn encode(&self, enc: &mut Encoder) {
        for e in &self.entries {
            enc.put_bool(true);
            e.encode(enc);
        }
        enc.put_bool(false);
        enc.put_bool(self.eof);
    }

    fn decode(dec: &mut Decoder) -> Result<Self, DecodeError> {
        // Each entry consumes input before the next is read, so the list cannot grow past
        // what the message holds; nothing is allocated from a wire length.
        let mut entries = Vec::new();
        while dec.get_bool().map_err(|e| e.context("Dirlist4.entries"))? {
            entries.push(Entry4::decode(dec).map_err(|e| e.context("Dirlist4.entries"))?);
        }
        let eof = dec.get_bool().map_err(|e| e.context("Dirlist4.eof"))?;
        Ok(Self { entries, eof })
    }
}

#[cfg(any(test, feature = "arbitrary"))]
impl proptest::arbitrary::Arbitrary for Dirlist4 {
    type Parameters = ();
    type Strategy = proptest::strategy::BoxedStrategy<Self>;
    fn arbitrary_with(_: ()) -> Self::Strategy {
        use proptest::prelude::*;
        (
            proptest::collection::vec(any::<Entry4>(), 0..=3),
            any::<bool>(),
        )
            .prop_map(|(entries, eof)| Self { entries, eof })
            .boxed()
    }
}

/// READDIR result body (RFC 8881 section 18.23).
#[doc(alias = "READDIR4resok")]
#[derive(Clone, PartialEq, Eq, Debug, Default, Xdr)]
pub struct ReadDirResOk {
    /// The verifier to send back with a later cookie.
    pub cookieverf: Verifier4,
    /// The entries.
    pub reply: Dirlist4,
}

crate::nfs_res! {
    /// READDIR result (RFC 8881 section 18.23).
    #[doc(alias = "READDIR4res")]
    pub enum ReadDirRes => ReadDirResOk
}

// ---------------------------------------------------------------------------------------------
// READLINK (27), REMOVE (28), RENAME (29)
// ---------------------------------------------------------------------------------------------

/// READLINK result body (RFC 8881 section 18.24).
#[doc(alias = "READLINK4resok")]
#[derive(Clone, PartialEq, Eq, Debug, Default, Xdr)]
pub struct ReadLinkResOk {
    /// The link's target (`linktext4`).
    pub link: Utf8String,
}

crate::nfs_res! {
    /// READLINK result (RFC 8881 section 18.24).
    #[doc(alias = "READLINK4res")]
    pub enum ReadLinkRes => ReadLinkResOk
}

/// REMOVE arguments (RFC 8881 section 18.25).
#[doc(alias = "REMOVE4args")]
#[derive(Clone, PartialEq, Eq, Debug, Default, Xdr)]
pub struct RemoveArgs {
    /// The name to remove from the current directory.
    pub target: Component4,
}

/// REMOVE result body (RFC 8881 section 18.25).
#[doc(alias = "REMOVE4resok")]
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, Xdr)]
pub struct RemoveResOk {
    /// Change information of the directory.
    pub cinfo: ChangeInfo4,
}

crate::nfs_res! {
    /// REMOVE result (RFC 8881 section 18.25).
    #[doc(alias = "REMOVE4res")]
    pub enum RemoveRes => RemoveResOk
}

/// RENAME arguments: the saved filehandle is the source directory, the current one the target
/// directory (RFC 8881 section 18.26).
#[doc(alias = "RENAME4args")]
#[derive(Clone, PartialEq, Eq, Debug, Default, Xdr)]
pub struct RenameArgs {
    /// The name in the source directory.
    pub oldname: Component4,
    /// The name in the target directory.
    pub newname: Component4,
}

/// RENAME result body (RFC 8881 section 18.26).
#[doc(alias = "RENAME4resok")]
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, Xdr)]
pub struct RenameResOk {
    /// Change information of the source directory.
    pub source_cinfo: ChangeInfo4,
    /// Change information of the target directory.
    pub target_cinfo: ChangeInfo4,
}

crate::nfs_res! {
    /// RENAME result (RFC 8881 section 18.26).
    #[doc(alias = "RENAME4res")]
    pub enum RenameRes => RenameResOk
}

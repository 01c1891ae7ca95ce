//! The COMPOUND procedure: the op table and the request/reply envelopes (RFC 8881 sections
//! 16.2 and 16.3).
//!
//! The operation list below is the one place that ties an operation number to its argument
//! and result types: the argument union, the result union, `opnum()` and `status()` are all
//! generated from it, so adding an operation is one line the compiler checks everywhere.

use super::*;
use crate::xdr::{DecodeError, Decoder, Encoder, Utf8String, Xdr, XdrBounded};

macro_rules! op_table {
    ($( $variant:ident = $op:ident ( $($args:ty)? ) -> $res:ty ; )*) => {
        /// One operation of a COMPOUND request (`nfs_argop4`).
        #[doc(alias = "nfs_argop4")]
        #[derive(Clone, PartialEq, Debug, crate::xdr::Xdr)]
        pub enum NfsArgop4 {
            $(
                #[doc = concat!("`", stringify!($op), "`")]
                #[xdr(case = NfsOpnum4::$op)]
                $variant $( ($args) )?,
            )*
            /// An operation number this protocol does not define: its arguments cannot be
            /// parsed, so decoding of the COMPOUND stops here and the server answers
            /// `NFS4ERR_OP_ILLEGAL` (RFC 8881 section 15.2).
            #[xdr(default, skip_arbitrary)]
            Unknown(NfsOpnum4),
        }

        /// One operation's result in a COMPOUND reply (`nfs_resop4`).
        #[doc(alias = "nfs_resop4")]
        #[derive(Clone, PartialEq, Debug, crate::xdr::Xdr)]
        pub enum NfsResop4 {
            $(
                #[doc = concat!("`", stringify!($op), "`")]
                #[xdr(case = NfsOpnum4::$op)]
                $variant($res),
            )*
        }

        impl NfsArgop4 {
            /// The operation number.
            pub fn opnum(&self) -> NfsOpnum4 {
                match self {
                    $( Self::$variant { .. } => NfsOpnum4::$op, )*
                    Self::Unknown(n) => *n,
                }
            }
        }

        impl NfsResop4 {
            /// The operation number.
            pub fn opnum(&self) -> NfsOpnum4 {
                match self {
                    $( Self::$variant(_) => NfsOpnum4::$op, )*
                }
            }

            /// The operation's status.
            pub fn status(&self) -> NfsStat4 {
                match self {
                    $( Self::$variant(r) => r.status(), )*
                }
            }
        }
    };
}

op_table! {
    Access = OP_ACCESS(AccessArgs) -> AccessRes;
    Close = OP_CLOSE(CloseArgs) -> CloseRes;
    Commit = OP_COMMIT(CommitArgs) -> CommitRes;
    Create = OP_CREATE(CreateArgs) -> CreateRes;
    DelegPurge = OP_DELEGPURGE(DelegPurgeArgs) -> DelegPurgeRes;
    DelegReturn = OP_DELEGRETURN(DelegReturnArgs) -> DelegReturnRes;
    GetAttr = OP_GETATTR(GetAttrArgs) -> GetAttrRes;
    GetFh = OP_GETFH() -> GetFhRes;
    Link = OP_LINK(LinkArgs) -> LinkRes;
    Lock = OP_LOCK(LockArgs) -> LockRes;
    LockT = OP_LOCKT(LockTArgs) -> LockTRes;
    LockU = OP_LOCKU(LockUArgs) -> LockURes;
    Lookup = OP_LOOKUP(LookupArgs) -> LookupRes;
    LookupP = OP_LOOKUPP() -> LookupPRes;
    NVerify = OP_NVERIFY(NVerifyArgs) -> NVerifyRes;
    Open = OP_OPEN(OpenArgs) -> OpenRes;
    OpenAttr = OP_OPENATTR(OpenAttrArgs) -> OpenAttrRes;
    OpenConfirm = OP_OPEN_CONFIRM(OpenConfirmArgs) -> OpenConfirmRes;
    OpenDowngrade = OP_OPEN_DOWNGRADE(OpenDowngradeArgs) -> OpenDowngradeRes;
    PutFh = OP_PUTFH(PutFhArgs) -> PutFhRes;
    PutPubFh = OP_PUTPUBFH() -> PutPubFhRes;
    PutRootFh = OP_PUTROOTFH() -> PutRootFhRes;
    Read = OP_READ(ReadArgs) -> ReadRes;
    ReadDir = OP_READDIR(ReadDirArgs) -> ReadDirRes;
    ReadLink = OP_READLINK() -> ReadLinkRes;
    Remove = OP_REMOVE(RemoveArgs) -> RemoveRes;
    Rename = OP_RENAME(RenameArgs) -> RenameRes;
    Renew = OP_RENEW(RenewArgs) -> RenewRes;
    RestoreFh = OP_RESTOREFH() -> RestoreFhRes;
    SaveFh = OP_SAVEFH() -> SaveFhRes;
    SecInfo = OP_SECINFO(SecInfoArgs) -> SecInfoRes;
    SetAttr = OP_SETATTR(SetAttrArgs) -> SetAttrRes;
    SetClientId = OP_SETCLIENTID(SetClientIdArgs) -> SetClientIdRes;
    SetClientIdConfirm = OP_SETCLIENTID_CONFIRM(SetClientIdConfirmArgs) -> SetClientIdConfirmRes;
    Verify = OP_VERIFY(VerifyArgs) -> VerifyRes;
    Write = OP_WRITE(WriteArgs) -> WriteRes;
    ReleaseLockOwner = OP_RELEASE_LOCKOWNER(ReleaseLockOwnerArgs) -> ReleaseLockOwnerRes;
    BackchannelCtl = OP_BACKCHANNEL_CTL(BackchannelCtlArgs) -> BackchannelCtlRes;
    BindConnToSession = OP_BIND_CONN_TO_SESSION(BindConnToSessionArgs) -> BindConnToSessionRes;
    ExchangeId = OP_EXCHANGE_ID(ExchangeIdArgs) -> ExchangeIdRes;
    CreateSession = OP_CREATE_SESSION(CreateSessionArgs) -> CreateSessionRes;
    DestroySession = OP_DESTROY_SESSION(DestroySessionArgs) -> DestroySessionRes;
    FreeStateid = OP_FREE_STATEID(FreeStateidArgs) -> FreeStateidRes;
    GetDirDelegation = OP_GET_DIR_DELEGATION(GetDirDelegationArgs) -> GetDirDelegationRes;
    GetDeviceInfo = OP_GETDEVICEINFO(GetDeviceInfoArgs) -> GetDeviceInfoRes;
    GetDeviceList = OP_GETDEVICELIST(GetDeviceListArgs) -> GetDeviceListRes;
    LayoutCommit = OP_LAYOUTCOMMIT(LayoutCommitArgs) -> LayoutCommitRes;
    LayoutGet = OP_LAYOUTGET(LayoutGetArgs) -> LayoutGetRes;
    LayoutReturn = OP_LAYOUTRETURN(LayoutReturnArgs) -> LayoutReturnRes;
    SecInfoNoName = OP_SECINFO_NO_NAME(SecInfoNoNameArgs) -> SecInfoNoNameRes;
    Sequence = OP_SEQUENCE(SequenceArgs) -> SequenceRes;
    SetSsv = OP_SET_SSV(SetSsvArgs) -> SetSsvRes;
    TestStateid = OP_TEST_STATEID(TestStateidArgs) -> TestStateidRes;
    WantDelegation = OP_WANT_DELEGATION(WantDelegationArgs) -> WantDelegationRes;
    DestroyClientId = OP_DESTROY_CLIENTID(DestroyClientIdArgs) -> DestroyClientIdRes;
    ReclaimComplete = OP_RECLAIM_COMPLETE(ReclaimCompleteArgs) -> ReclaimCompleteRes;
    Allocate = OP_ALLOCATE(AllocateArgs) -> AllocateRes;
    Copy = OP_COPY(CopyArgs) -> CopyRes;
    CopyNotify = OP_COPY_NOTIFY(CopyNotifyArgs) -> CopyNotifyRes;
    Deallocate = OP_DEALLOCATE(DeallocateArgs) -> DeallocateRes;
    IoAdvise = OP_IO_ADVISE(IoAdviseArgs) -> IoAdviseRes;
    LayoutError = OP_LAYOUTERROR(LayoutErrorArgs) -> LayoutErrorRes;
    LayoutStats = OP_LAYOUTSTATS(LayoutStatsArgs) -> LayoutStatsRes;
    OffloadCancel = OP_OFFLOAD_CANCEL(OffloadCancelArgs) -> OffloadCancelRes;
    OffloadStatus = OP_OFFLOAD_STATUS(OffloadStatusArgs) -> OffloadStatusRes;
    ReadPlus = OP_READ_PLUS(ReadPlusArgs) -> ReadPlusRes;
    Seek = OP_SEEK(SeekArgs) -> SeekRes;
    WriteSame = OP_WRITE_SAME(WriteSameArgs) -> WriteSameRes;
    Clone = OP_CLONE(CloneArgs) -> CloneRes;
    GetXattr = OP_GETXATTR(GetXattrArgs) -> GetXattrRes;
    SetXattr = OP_SETXATTR(SetXattrArgs) -> SetXattrRes;
    ListXattrs = OP_LISTXATTRS(ListXattrsArgs) -> ListXattrsRes;
    RemoveXattr = OP_REMOVEXATTR(RemoveXattrArgs) -> RemoveXattrRes;
    Illegal = OP_ILLEGAL() -> IllegalRes;
}

/// Most operations a COMPOUND may carry before the codec refuses it, independently of the
/// session's negotiated `ca_maxoperations` (which the server checks itself): it bounds the
/// memory a hostile request can make the decoder reserve for its operation list.
pub const COMPOUND_MAX_OPS: u32 = 4096;

/// An operation of a COMPOUND whose arguments failed to decode. The operations before it
/// decoded and may be executed; this one is answered with `NFS4ERR_BADXDR` (or
/// `NFS4ERR_OP_ILLEGAL` when its number is unknown, which [`NfsArgop4::Unknown`] reports).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OpDecodeError {
    /// Position of the operation in the request.
    pub index: usize,
    /// Its operation number.
    pub op: NfsOpnum4,
    /// What failed.
    pub error: DecodeError,
}

/// COMPOUND request (RFC 8881 section 16.2).
#[doc(alias = "COMPOUND4args")]
#[derive(Clone, PartialEq, Debug, Default)]
pub struct Compound4Args {
    /// Echoed in the reply.
    pub tag: Utf8String,
    /// 1 for NFSv4.1, 2 for NFSv4.2.
    pub minorversion: u32,
    /// The operations, in order.
    pub argarray: Vec<NfsArgop4>,
}

impl Compound4Args {
    /// Decodes the header and as many operations as can be decoded.
    ///
    /// A malformed header is an error (the server answers the RPC with GARBAGE_ARGS). Decoding
    /// stops after an operation with an unknown number (kept as [`NfsArgop4::Unknown`]) or at
    /// the first operation whose arguments are malformed, which is returned beside the
    /// operations before it.
    pub fn decode_partial(dec: &mut Decoder) -> Result<(Self, Option<OpDecodeError>), DecodeError> {
        let tag = Utf8String::decode(dec).map_err(|e| e.context("Compound4Args.tag"))?;
        let minorversion = dec
            .get_u32()
            .map_err(|e| e.context("Compound4Args.minorversion"))?;
        let n = dec
            .get_length(COMPOUND_MAX_OPS, 4)
            .map_err(|e| e.context("Compound4Args.argarray"))?;
        let mut argarray = Vec::with_capacity(n.min(dec.remaining() / 4));
        for index in 0..n {
            // Read the operation number ahead, to name the operation if its arguments fail.
            let op = NfsOpnum4(dec.peek_u32().unwrap_or(NfsOpnum4::OP_ILLEGAL.0));
            match NfsArgop4::decode(dec) {
                Ok(op) => {
                    let unknown = matches!(op, NfsArgop4::Unknown(_));
                    argarray.push(op);
                    if unknown {
                        break;
                    }
                }
                Err(error) => {
                    let error = error.context("Compound4Args.argarray");
                    return Ok((
                        Self {
                            tag,
                            minorversion,
                            argarray,
                        },
                        Some(OpDecodeError { index, op, error }),
                    ));
                }
            }
        }
        Ok((
            Self {
                tag,
                minorversion,
                argarray,
            },
            None,
        ))
    }
}

impl Xdr for Compound4Args {
    fn encode(&self, enc: &mut Encoder) {
        self.tag.encode(enc);
        enc.put_u32(self.minorversion);
        self.argarray.encode(enc);
    }

    /// Strict decoding: any malformed or unknown operation is an error.
    fn decode(dec: &mut Decoder) -> Result<Self, DecodeError> {
        let at = dec.position();
        match Self::decode_partial(dec)? {
            (_, Some(e)) => Err(e.error),
            (c, None) => match c.argarray.last() {
                Some(NfsArgop4::Unknown(n)) => {
                    Err(DecodeError::bad_discriminant(n.0, at).context("Compound4Args.argarray"))
                }
                _ => Ok(c),
            },
        }
    }
}

#[cfg(any(test, feature = "arbitrary"))]
impl proptest::arbitrary::Arbitrary for Compound4Args {
    type Parameters = ();
    type Strategy = proptest::strategy::BoxedStrategy<Self>;
    fn arbitrary_with(_: ()) -> Self::Strategy {
        use proptest::prelude::*;
        (
            any::<Utf8String>(),
            0u32..=2,
            proptest::collection::vec(any::<NfsArgop4>(), 0..4),
        )
            .prop_map(|(tag, minorversion, argarray)| Self {
                tag,
                minorversion,
                argarray,
            })
            .boxed()
    }
}

/// COMPOUND reply (RFC 8881 section 16.2).
#[doc(alias = "COMPOUND4res")]
#[derive(Clone, PartialEq, Debug, crate::xdr::Xdr)]
pub struct Compound4Res {
    /// The status of the last operation executed.
    pub status: NfsStat4,
    /// The request's tag.
    pub tag: Utf8String,
    /// Results of the operations executed, in order.
    pub resarray: Vec<NfsResop4>,
}

impl Compound4Res {
    /// Decodes a reply with a bound on the number of results.
    pub fn decode_bounded_ops(dec: &mut Decoder, max_ops: u32) -> Result<Self, DecodeError> {
        let status = NfsStat4::decode(dec).map_err(|e| e.context("Compound4Res.status"))?;
        let tag = Utf8String::decode(dec).map_err(|e| e.context("Compound4Res.tag"))?;
        let resarray = Vec::<NfsResop4>::decode_bounded(dec, max_ops)
            .map_err(|e| e.context("Compound4Res.resarray"))?;
        Ok(Self {
            status,
            tag,
            resarray,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    crate::roundtrip_tests!(
        nfs_argop4: NfsArgop4,
        nfs_resop4: NfsResop4,
        compound4args: Compound4Args,
        compound4res: Compound4Res,
    );

    fn header(ops: u32) -> Encoder {
        let mut e = Encoder::new();
        Utf8String::from("t").encode(&mut e);
        e.put_u32(1);
        e.put_u32(ops);
        e
    }

    #[test]
    fn unknown_operation_stops_decoding_and_is_reported() {
        let mut e = header(3);
        NfsArgop4::PutRootFh.encode(&mut e);
        e.put_u32(9999); // unknown op number, arguments unknowable
        e.put_u32(7);
        let mut d = Decoder::new(e.into_bytes());
        let (c, err) = Compound4Args::decode_partial(&mut d).unwrap();
        assert!(err.is_none());
        assert_eq!(
            c.argarray,
            vec![NfsArgop4::PutRootFh, NfsArgop4::Unknown(NfsOpnum4(9999))]
        );
        assert_eq!(c.argarray[1].opnum(), NfsOpnum4(9999));
    }

    #[test]
    fn malformed_arguments_are_reported_with_the_ops_before_them() {
        let mut e = header(2);
        NfsArgop4::GetFh.encode(&mut e);
        e.put_u32(NfsOpnum4::OP_PUTFH.0);
        e.put_u32(200); // a filehandle longer than NFS4_FHSIZE
        let mut d = Decoder::new(e.into_bytes());
        let (c, err) = Compound4Args::decode_partial(&mut d).unwrap();
        assert_eq!(c.argarray, vec![NfsArgop4::GetFh]);
        let err = err.unwrap();
        assert_eq!((err.index, err.op), (1, NfsOpnum4::OP_PUTFH));
        assert!(matches!(
            err.error.kind,
            crate::xdr::DecodeErrorKind::TooLong { len: 200, .. }
        ));
    }

    #[test]
    fn op_count_larger_than_the_input_is_refused() {
        let e = header(u32::MAX);
        let mut d = Decoder::new(e.into_bytes());
        assert!(Compound4Args::decode_partial(&mut d).is_err());
    }
}

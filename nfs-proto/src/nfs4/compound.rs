//! The COMPOUND procedure: the op table and the request/reply envelopes (RFC 8881 sections
//! 16.2 and 16.3).
//!
//! The operation list below is the one place that ties an operation number to its argument
//! and result types and to what the server must know of it before running it, as knfsd's
//! `nfsd4_ops[]` does (`op_flags`, `op_rsize_bop`): the argument union, the result union,
//! `opnum()`, `status()`, the error result of every operation ([`NfsResop4::error`]), the
//! per-op flags ([`NfsOpnum4::flags`]), the reply-size estimates
//! ([`NfsArgop4::reply_size_estimate`]) and the handler seam a server implements
//! ([`OpHandler`], [`dispatch`]) are all generated from it, so adding an operation is one line
//! the compiler checks everywhere. The callback program's table
//! ([`crate::nfs4::callback`]) goes through the same macro, with its handler seam for a
//! client ([`crate::nfs4::callback::CbHandler`], [`crate::nfs4::callback::cb_dispatch`]).

use super::*;
use crate::xdr::{DecodeError, Decoder, Encoder, Utf8String, Xdr, XdrBounded};

/// What a server must know of an operation before it runs it (knfsd's `op_flags`). A small
/// set of bits, from the op table ([`NfsOpnum4::flags`]).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct OpFlags(u8);

impl OpFlags {
    /// No flag.
    pub const NONE: Self = Self(0);
    /// May be sent without SEQUENCE, as the only operation of its COMPOUND (RFC 8881 section
    /// 2.10.6.4 and each operation's description); anything else first in a COMPOUND but
    /// SEQUENCE is `NFS4ERR_OP_NOT_IN_SESSION`. knfsd's `ALLOWED_AS_FIRST_OP`.
    pub const WITHOUT_SEQUENCE: Self = Self(1);
    /// Changes state: its reply must be known to fit the session's limit before it runs, so
    /// that the server never does what it then cannot answer or cache (RFC 8881 section
    /// 2.10.6.4). Such an operation has a reply-size estimate in the table. knfsd's
    /// `OP_MODIFIES_SOMETHING`.
    pub const MODIFIES_STATE: Self = Self(2);
    /// Offered by a data server that is only a data server (RFC 8881 section 13.6): anything
    /// else a data server answers with `NFS4ERR_NOTSUPP`.
    pub const ON_DS: Self = Self(4);

    /// Both sets of flags.
    pub const fn with(self, other: Self) -> Self {
        Self(self.0 | other.0)
    }

    /// Whether every flag of `other` is set.
    pub const fn contains(self, other: Self) -> bool {
        self.0 & other.0 == other.0
    }
}

impl core::fmt::Debug for OpFlags {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let names = [
            (Self::WITHOUT_SEQUENCE, "WITHOUT_SEQUENCE"),
            (Self::MODIFIES_STATE, "MODIFIES_STATE"),
            (Self::ON_DS, "ON_DS"),
        ];
        let mut set = f.debug_set();
        for (flag, name) in names {
            if self.contains(flag) {
                set.entry(&format_args!("{name}"));
            }
        }
        set.finish()
    }
}

/// XDR sizes the reply-size estimates of the op table are made of (knfsd's `op_encode_*`).
pub mod rsize {
    use super::{ReadArgs, ReadDirArgs};

    /// Operation number and status: the whole of an error result, and the head of every
    /// result.
    pub const HEAD: usize = 4 + 4;
    /// `change_info4`: atomic flag, before, after.
    pub const CINFO: usize = 4 + 8 + 8;
    /// A `stateid4`.
    pub const STATEID: usize = 16;
    /// A `bitmap4` of up to three words.
    pub const BITMAP: usize = 4 + 3 * 4;
    /// `LOCK4denied`: offset, length, type, and the owner (client id and name); the name is
    /// estimated at 128 bytes as knfsd does (`IDMAP_NAMESZ`). A longer one only occurs in a
    /// denial, which changes nothing, so the check after the operation still catches it.
    pub const LOCK_DENIED: usize = 8 + 8 + 4 + 8 + 4 + 128;
    /// `OPEN4resok`: stateid, change info, result flags, attrset, and the delegation part
    /// (`OPEN_DELEGATE_NONE_EXT` with its reason while no delegation is granted).
    pub const OPEN: usize = STATEID + CINFO + 4 + BITMAP + 16;
    /// `WRITE4resok`: count, committed, verifier.
    pub const WRITE: usize = 4 + 4 + 8;
    /// `BIND_CONN_TO_SESSION4resok`: session id, direction, RDMA mode.
    pub const BIND_CONN: usize = 16 + 4 + 4;

    /// The XDR size of an opaque of `n` bytes: length word, bytes, padding.
    const fn opaque(n: usize) -> usize {
        4 + n.div_ceil(4) * 4
    }

    /// READ: eof and the data asked for (knfsd's `nfsd4_read_rsize`).
    pub fn read(a: &ReadArgs) -> usize {
        HEAD + 4 + opaque(a.count as usize)
    }

    /// READDIR: the verifier and at most `maxcount` bytes of entries and eof, which
    /// `maxcount` counts (RFC 8881 section 18.23.3; knfsd's `nfsd4_readdir_rsize`).
    pub fn readdir(a: &ReadDirArgs) -> usize {
        HEAD + 8 + a.maxcount as usize
    }
}

/// Generates an operation program from its list of operations: the argument and result
/// unions with `opnum()` and `status()`, error results, the per-op flags and reply-size
/// estimates, and, given a handler name, the handler trait and its dispatch.
///
/// A row is `Variant = OP_NUMBER(ArgType) -> ResType => handler_method [FLAG | FLAG],
/// rsize: bytes;` where the arguments, the method, the flags and the estimate (`rsize:`
/// a fixed size or `rsize_fn:` a function of the arguments) may be left out.
macro_rules! op_table {
    (
        $(#[$am:meta])* enum $Args:ident { $(#[$aum:meta])* Unknown }
        $(#[$rm:meta])* enum $Res:ident $({ $(#[$rum:meta])* $RUnknown:ident })?;
        opnum: $Opnum:ident;
        illegal: $illegal:expr;
        $( $(#[$hm:meta])* handler: $Handler:ident, $(#[$dm:meta])* fn $dispatch:ident; )?
        ops $rows:tt
    ) => {
        op_table!(@types [$(#[$am])*] $Args [$(#[$aum])*] [$(#[$rm])*] $Res
            [$($(#[$rum])* $RUnknown)?] $Opnum ($illegal) $rows);
        $( op_table!(@handler [$(#[$hm])*] $Handler [$(#[$dm])*] $dispatch $Args $Res ($illegal) $rows); )?
    };

    (@types [$(#[$am:meta])*] $Args:ident [$(#[$aum:meta])*] [$(#[$rm:meta])*] $Res:ident
        [$($(#[$rum:meta])* $RUnknown:ident)?] $Opnum:ident ($illegal:expr) {
        $( $variant:ident = $op:ident ( $($args:ty)? ) -> $res:ty $(=> $method:ident)?
            $([ $($flag:ident)|+ ])? $(, rsize: $rs:expr)? $(, rsize_fn: $rf:path)? ; )*
    }) => {
        $(#[$am])*
        pub enum $Args {
            $(
                #[doc = concat!("`", stringify!($op), "`")]
                #[xdr(case = $Opnum::$op)]
                $variant $( ($args) )?,
            )*
            $(#[$aum])*
            #[xdr(default, skip_arbitrary)]
            Unknown($Opnum),
        }

        $(#[$rm])*
        pub enum $Res {
            $(
                #[doc = concat!("`", stringify!($op), "`")]
                #[xdr(case = $Opnum::$op)]
                $variant($res),
            )*
            $(
                $(#[$rum])*
                #[xdr(default, skip_arbitrary)]
                $RUnknown($Opnum),
            )?
        }

        impl $Args {
            /// The operation number.
            pub fn opnum(&self) -> $Opnum {
                match self {
                    $( Self::$variant { .. } => $Opnum::$op, )*
                    Self::Unknown(n) => *n,
                }
            }

            /// The most bytes the operation's result can take, from the op table (knfsd's
            /// `op_rsize_bop`): op number and status included. `None` where the table has no
            /// estimate: such a result is measured after the operation ran.
            pub fn reply_size_estimate(&self) -> Option<usize> {
                match self {
                    $( op_table!(@pat $Args $variant a ($($args)?))
                        => op_table!(@rsize a ($($args)?) $(rsize: $rs)? $(rsize_fn: $rf)?), )*
                    Self::Unknown(_) => None,
                }
            }
        }

        impl $Opnum {
            /// The operation's flags in the op table; none for a number the table does not
            /// know.
            pub const fn flags(self) -> OpFlags {
                match self {
                    $( Self::$op => OpFlags::NONE $($( .with(OpFlags::$flag) )+)?, )*
                    _ => OpFlags::NONE,
                }
            }
        }

        impl $Res {
            /// The operation number.
            pub fn opnum(&self) -> $Opnum {
                match self {
                    $( Self::$variant(_) => $Opnum::$op, )*
                    $( Self::$RUnknown(op) => *op, )?
                }
            }

            /// The operation's status.
            pub fn status(&self) -> NfsStat4 {
                match self {
                    $( Self::$variant(r) => r.status(), )*
                    $( Self::$RUnknown(_) => NfsStat4::NFS4ERR_OP_ILLEGAL, )?
                }
            }

            /// The result of operation `op` failing with `status`: the op's result type with
            /// that status and an empty body (see each result type's `error`). An operation
            /// number the table does not know gets the illegal-operation result.
            pub fn error(op: $Opnum, status: NfsStat4) -> Self {
                match op {
                    $( $Opnum::$op => Self::$variant(<$res>::error(status)), )*
                    _ => $illegal,
                }
            }
        }
    };

    (@handler [$(#[$hm:meta])*] $Handler:ident [$(#[$dm:meta])*] $dispatch:ident $Args:ident
        $Res:ident ($illegal:expr) {
        $( $variant:ident = $op:ident ( $($args:ty)? ) -> $res:ty $(=> $method:ident)?
            $([ $($flag:ident)|+ ])? $(, rsize: $rs:expr)? $(, rsize_fn: $rf:path)? ; )*
    }) => {
        $(#[$hm])*
        pub trait $Handler: Send {
            $( op_table!(@method ($($method)?) $op ($($args)?) -> $res); )*
        }

        $(#[$dm])*
        pub async fn $dispatch<H: $Handler + ?Sized>(handler: &mut H, op: &$Args) -> $Res {
            match op {
                $( op_table!(@pat $Args $variant a ($($args)?))
                    => op_table!(@call $Res $variant handler a ($($args)?) ($($method)?) ($illegal)), )*
                $Args::Unknown(_) => $illegal,
            }
        }
    };

    // A row's pattern in a match on the argument union, binding the arguments to `$a`.
    (@pat $E:ident $v:ident $a:ident ()) => { $E::$v };
    (@pat $E:ident $v:ident $a:ident ($t:ty)) => { $E::$v($a) };

    // A row's reply-size estimate, with its arguments bound to `$a`.
    (@rsize $a:ident ()) => { None };
    (@rsize $a:ident ($t:ty)) => {{ let _ = $a; None }};
    (@rsize $a:ident () rsize: $rs:expr) => { Some($rs) };
    (@rsize $a:ident ($t:ty) rsize: $rs:expr) => {{ let _ = $a; Some($rs) }};
    (@rsize $a:ident ($t:ty) rsize_fn: $rf:path) => { Some($rf($a)) };

    // A row's handler method: by default the operation is not supported.
    (@method () $($rest:tt)*) => {};
    (@method ($m:ident) $op:ident () -> $res:ty) => {
        #[doc = concat!("`", stringify!($op), "`: `NFS4ERR_NOTSUPP` unless the implementer offers it.")]
        fn $m(&mut self) -> impl ::core::future::Future<Output = $res> + Send {
            ::core::future::ready(<$res>::error(NfsStat4::NFS4ERR_NOTSUPP))
        }
    };
    (@method ($m:ident) $op:ident ($t:ty) -> $res:ty) => {
        #[doc = concat!("`", stringify!($op), "`: `NFS4ERR_NOTSUPP` unless the implementer offers it.")]
        fn $m(&mut self, args: &$t) -> impl ::core::future::Future<Output = $res> + Send {
            let _ = args;
            ::core::future::ready(<$res>::error(NfsStat4::NFS4ERR_NOTSUPP))
        }
    };

    // A row's call in the dispatch, with its arguments bound to `$a`; a row without a method
    // (OP_ILLEGAL) is the illegal-operation result.
    (@call $Res:ident $v:ident $h:ident $a:ident ($($t:ty)?) () ($illegal:expr)) => {{
        $( let _: &$t = $a; )?
        $illegal
    }};
    (@call $Res:ident $v:ident $h:ident $a:ident () ($m:ident) ($illegal:expr)) => {
        $Res::$v($h.$m().await)
    };
    (@call $Res:ident $v:ident $h:ident $a:ident ($t:ty) ($m:ident) ($illegal:expr)) => {
        $Res::$v($h.$m($a).await)
    };
}
pub(crate) use op_table;

op_table! {
    /// One operation of a COMPOUND request (`nfs_argop4`).
    #[doc(alias = "nfs_argop4")]
    #[derive(Clone, PartialEq, Debug, crate::xdr::Xdr)]
    enum NfsArgop4 {
        /// An operation number this protocol does not define: its arguments cannot be
        /// parsed, so decoding of the COMPOUND stops here and the server answers
        /// `NFS4ERR_OP_ILLEGAL` (RFC 8881 section 15.2).
        Unknown
    }
    /// One operation's result in a COMPOUND reply (`nfs_resop4`).
    #[doc(alias = "nfs_resop4")]
    #[derive(Clone, PartialEq, Debug, crate::xdr::Xdr)]
    enum NfsResop4;
    opnum: NfsOpnum4;
    illegal: NfsResop4::Illegal(IllegalRes { status: NfsStat4::NFS4ERR_OP_ILLEGAL });
    /// A server role's operations, one method per operation of the op table; each answers
    /// `NFS4ERR_NOTSUPP` unless the role offers it, so a role writes only what it does.
    /// [`dispatch`] maps an operation to its method. The shared COMPOUND engine runs
    /// SEQUENCE and the session operations itself.
    handler: OpHandler,
    /// Runs one operation on `handler`: the method of its row in the op table; an unknown
    /// or illegal operation is `NFS4ERR_OP_ILLEGAL`.
    fn dispatch;
    ops {
        Access = OP_ACCESS(AccessArgs) -> AccessRes => access;
        Close = OP_CLOSE(CloseArgs) -> CloseRes => close [MODIFIES_STATE],
            rsize: rsize::HEAD + rsize::STATEID;
        Commit = OP_COMMIT(CommitArgs) -> CommitRes => commit [MODIFIES_STATE | ON_DS],
            rsize: rsize::HEAD + 8;
        Create = OP_CREATE(CreateArgs) -> CreateRes => create [MODIFIES_STATE],
            rsize: rsize::HEAD + rsize::CINFO + rsize::BITMAP;
        DelegPurge = OP_DELEGPURGE(DelegPurgeArgs) -> DelegPurgeRes => delegpurge;
        DelegReturn = OP_DELEGRETURN(DelegReturnArgs) -> DelegReturnRes => delegreturn
            [MODIFIES_STATE], rsize: rsize::HEAD;
        GetAttr = OP_GETATTR(GetAttrArgs) -> GetAttrRes => getattr [ON_DS];
        GetFh = OP_GETFH() -> GetFhRes => getfh;
        Link = OP_LINK(LinkArgs) -> LinkRes => link [MODIFIES_STATE],
            rsize: rsize::HEAD + rsize::CINFO;
        Lock = OP_LOCK(LockArgs) -> LockRes => lock [MODIFIES_STATE],
            rsize: rsize::HEAD + rsize::LOCK_DENIED;
        LockT = OP_LOCKT(LockTArgs) -> LockTRes => lockt;
        LockU = OP_LOCKU(LockUArgs) -> LockURes => locku [MODIFIES_STATE],
            rsize: rsize::HEAD + rsize::STATEID;
        Lookup = OP_LOOKUP(LookupArgs) -> LookupRes => lookup;
        LookupP = OP_LOOKUPP() -> LookupPRes => lookupp;
        NVerify = OP_NVERIFY(NVerifyArgs) -> NVerifyRes => nverify;
        Open = OP_OPEN(OpenArgs) -> OpenRes => open [MODIFIES_STATE],
            rsize: rsize::HEAD + rsize::OPEN;
        OpenAttr = OP_OPENATTR(OpenAttrArgs) -> OpenAttrRes => openattr;
        OpenConfirm = OP_OPEN_CONFIRM(OpenConfirmArgs) -> OpenConfirmRes => open_confirm;
        OpenDowngrade = OP_OPEN_DOWNGRADE(OpenDowngradeArgs) -> OpenDowngradeRes =>
            open_downgrade [MODIFIES_STATE], rsize: rsize::HEAD + rsize::STATEID;
        PutFh = OP_PUTFH(PutFhArgs) -> PutFhRes => putfh [ON_DS];
        PutPubFh = OP_PUTPUBFH() -> PutPubFhRes => putpubfh;
        PutRootFh = OP_PUTROOTFH() -> PutRootFhRes => putrootfh;
        Read = OP_READ(ReadArgs) -> ReadRes => read [ON_DS], rsize_fn: rsize::read;
        ReadDir = OP_READDIR(ReadDirArgs) -> ReadDirRes => readdir, rsize_fn: rsize::readdir;
        ReadLink = OP_READLINK() -> ReadLinkRes => readlink;
        Remove = OP_REMOVE(RemoveArgs) -> RemoveRes => remove [MODIFIES_STATE],
            rsize: rsize::HEAD + rsize::CINFO;
        Rename = OP_RENAME(RenameArgs) -> RenameRes => rename [MODIFIES_STATE],
            rsize: rsize::HEAD + 2 * rsize::CINFO;
        Renew = OP_RENEW(RenewArgs) -> RenewRes => renew;
        RestoreFh = OP_RESTOREFH() -> RestoreFhRes => restorefh;
        SaveFh = OP_SAVEFH() -> SaveFhRes => savefh;
        SecInfo = OP_SECINFO(SecInfoArgs) -> SecInfoRes => secinfo;
        SetAttr = OP_SETATTR(SetAttrArgs) -> SetAttrRes => setattr [MODIFIES_STATE],
            rsize: rsize::HEAD + rsize::BITMAP;
        SetClientId = OP_SETCLIENTID(SetClientIdArgs) -> SetClientIdRes => setclientid;
        SetClientIdConfirm = OP_SETCLIENTID_CONFIRM(SetClientIdConfirmArgs)
            -> SetClientIdConfirmRes => setclientid_confirm;
        Verify = OP_VERIFY(VerifyArgs) -> VerifyRes => verify;
        Write = OP_WRITE(WriteArgs) -> WriteRes => write [MODIFIES_STATE | ON_DS],
            rsize: rsize::HEAD + rsize::WRITE;
        ReleaseLockOwner = OP_RELEASE_LOCKOWNER(ReleaseLockOwnerArgs) -> ReleaseLockOwnerRes =>
            release_lockowner [MODIFIES_STATE], rsize: rsize::HEAD;
        BackchannelCtl = OP_BACKCHANNEL_CTL(BackchannelCtlArgs) -> BackchannelCtlRes =>
            backchannel_ctl [MODIFIES_STATE | ON_DS], rsize: rsize::HEAD;
        BindConnToSession = OP_BIND_CONN_TO_SESSION(BindConnToSessionArgs)
            -> BindConnToSessionRes => bind_conn_to_session
            [WITHOUT_SEQUENCE | MODIFIES_STATE | ON_DS], rsize: rsize::HEAD + rsize::BIND_CONN;
        ExchangeId = OP_EXCHANGE_ID(ExchangeIdArgs) -> ExchangeIdRes => exchange_id
            [WITHOUT_SEQUENCE | ON_DS];
        CreateSession = OP_CREATE_SESSION(CreateSessionArgs) -> CreateSessionRes =>
            create_session [WITHOUT_SEQUENCE | ON_DS];
        DestroySession = OP_DESTROY_SESSION(DestroySessionArgs) -> DestroySessionRes =>
            destroy_session [WITHOUT_SEQUENCE | MODIFIES_STATE | ON_DS], rsize: rsize::HEAD;
        FreeStateid = OP_FREE_STATEID(FreeStateidArgs) -> FreeStateidRes => free_stateid
            [MODIFIES_STATE], rsize: rsize::HEAD;
        GetDirDelegation = OP_GET_DIR_DELEGATION(GetDirDelegationArgs) -> GetDirDelegationRes =>
            get_dir_delegation;
        GetDeviceInfo = OP_GETDEVICEINFO(GetDeviceInfoArgs) -> GetDeviceInfoRes => getdeviceinfo;
        GetDeviceList = OP_GETDEVICELIST(GetDeviceListArgs) -> GetDeviceListRes => getdevicelist;
        LayoutCommit = OP_LAYOUTCOMMIT(LayoutCommitArgs) -> LayoutCommitRes => layoutcommit;
        LayoutGet = OP_LAYOUTGET(LayoutGetArgs) -> LayoutGetRes => layoutget;
        LayoutReturn = OP_LAYOUTRETURN(LayoutReturnArgs) -> LayoutReturnRes => layoutreturn;
        SecInfoNoName = OP_SECINFO_NO_NAME(SecInfoNoNameArgs) -> SecInfoNoNameRes =>
            secinfo_no_name [ON_DS];
        Sequence = OP_SEQUENCE(SequenceArgs) -> SequenceRes => sequence [ON_DS];
        SetSsv = OP_SET_SSV(SetSsvArgs) -> SetSsvRes => set_ssv;
        TestStateid = OP_TEST_STATEID(TestStateidArgs) -> TestStateidRes => test_stateid;
        WantDelegation = OP_WANT_DELEGATION(WantDelegationArgs) -> WantDelegationRes =>
            want_delegation;
        DestroyClientId = OP_DESTROY_CLIENTID(DestroyClientIdArgs) -> DestroyClientIdRes =>
            destroy_clientid [WITHOUT_SEQUENCE | MODIFIES_STATE | ON_DS], rsize: rsize::HEAD;
        ReclaimComplete = OP_RECLAIM_COMPLETE(ReclaimCompleteArgs) -> ReclaimCompleteRes =>
            reclaim_complete [MODIFIES_STATE | ON_DS], rsize: rsize::HEAD;
        Allocate = OP_ALLOCATE(AllocateArgs) -> AllocateRes => allocate;
        Copy = OP_COPY(CopyArgs) -> CopyRes => copy;
        CopyNotify = OP_COPY_NOTIFY(CopyNotifyArgs) -> CopyNotifyRes => copy_notify;
        Deallocate = OP_DEALLOCATE(DeallocateArgs) -> DeallocateRes => deallocate;
        IoAdvise = OP_IO_ADVISE(IoAdviseArgs) -> IoAdviseRes => io_advise;
        LayoutError = OP_LAYOUTERROR(LayoutErrorArgs) -> LayoutErrorRes => layouterror;
        LayoutStats = OP_LAYOUTSTATS(LayoutStatsArgs) -> LayoutStatsRes => layoutstats;
        OffloadCancel = OP_OFFLOAD_CANCEL(OffloadCancelArgs) -> OffloadCancelRes => offload_cancel;
        OffloadStatus = OP_OFFLOAD_STATUS(OffloadStatusArgs) -> OffloadStatusRes => offload_status;
        ReadPlus = OP_READ_PLUS(ReadPlusArgs) -> ReadPlusRes => read_plus [ON_DS];
        Seek = OP_SEEK(SeekArgs) -> SeekRes => seek;
        WriteSame = OP_WRITE_SAME(WriteSameArgs) -> WriteSameRes => write_same;
        Clone = OP_CLONE(CloneArgs) -> CloneRes => clone;
        GetXattr = OP_GETXATTR(GetXattrArgs) -> GetXattrRes => getxattr;
        SetXattr = OP_SETXATTR(SetXattrArgs) -> SetXattrRes => setxattr;
        ListXattrs = OP_LISTXATTRS(ListXattrsArgs) -> ListXattrsRes => listxattrs;
        RemoveXattr = OP_REMOVEXATTR(RemoveXattrArgs) -> RemoveXattrRes => removexattr;
        Illegal = OP_ILLEGAL() -> IllegalRes;
    }
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

    /// Every operation of the table, by number.
    fn all_ops() -> impl Iterator<Item = NfsOpnum4> {
        NfsOpnum4::ALL.iter().copied()
    }

    #[test]
    fn error_results_are_the_status_and_an_empty_body() {
        // An error result is what a peer decodes from the status with zero words after it
        // (an empty bitmap, an absent body): the generated constructor and the wire agree,
        // for the plain errors and the statuses whose results carry a body.
        let statuses = [
            NfsStat4::NFS4ERR_NOTSUPP,
            NfsStat4::NFS4ERR_REP_TOO_BIG,
            NfsStat4::NFS4ERR_DENIED,
            NfsStat4::NFS4ERR_LAYOUTTRYLATER,
            NfsStat4::NFS4ERR_TOOSMALL,
            NfsStat4::NFS4ERR_OFFLOAD_NO_REQS,
            NfsStat4::NFS4ERR_CLID_INUSE,
        ];
        for op in all_ops() {
            for status in statuses {
                let res = NfsResop4::error(op, status);
                assert_eq!((res.opnum(), res.status()), (op, status), "{op:?}");
                let mut e = Encoder::new();
                e.put_u32(op.0);
                e.put_u32(status.0);
                e.put_raw(&[0; 64]);
                let mut d = Decoder::new(e.into_bytes());
                let decoded = NfsResop4::decode(&mut d).unwrap();
                assert_eq!(decoded, res, "{op:?} {status:?}");
                assert_eq!(
                    crate::xdr::to_bytes(&res).len(),
                    8 + 64 - d.remaining(),
                    "{op:?} {status:?}"
                );
            }
        }
        let unknown = NfsResop4::error(NfsOpnum4(9999), NfsStat4::NFS4ERR_NOTSUPP);
        assert_eq!(unknown.status(), NfsStat4::NFS4ERR_OP_ILLEGAL);
    }

    #[test]
    fn results_convert_from_a_result() {
        let ok: CloseRes = Ok(Stateid4::default()).into();
        assert_eq!(ok.status(), NfsStat4::NFS4_OK);
        let err: CloseRes = Err(NfsStat4::NFS4ERR_ACCESS).into();
        assert_eq!(err, CloseRes::Err(NfsStat4::NFS4ERR_ACCESS));
        let done: AllocateRes = Ok(()).into();
        assert_eq!(done.status(), NfsStat4::NFS4_OK);
        let failed: AllocateRes = Err(NfsStat4::NFS4ERR_NOSPC).into();
        assert_eq!(failed.status(), NfsStat4::NFS4ERR_NOSPC);
    }

    #[test]
    fn state_changing_ops_have_a_reply_size_estimate_covering_their_error() {
        let args = proptest::arbitrary::any::<NfsArgop4>();
        let mut runner = proptest::test_runner::TestRunner::deterministic();
        let mut seen = std::collections::BTreeSet::new();
        for _ in 0..4000 {
            let op = proptest::strategy::ValueTree::current(
                &proptest::strategy::Strategy::new_tree(&args, &mut runner).unwrap(),
            );
            let opnum = op.opnum();
            seen.insert(opnum.0);
            let estimate = op.reply_size_estimate();
            if opnum.flags().contains(OpFlags::MODIFIES_STATE) {
                let most = estimate.unwrap_or_else(|| panic!("{opnum:?} has no estimate"));
                let error = NfsResop4::error(opnum, NfsStat4::NFS4ERR_IO);
                assert!(most >= crate::xdr::to_bytes(&error).len(), "{opnum:?}");
            }
        }
        assert!(
            seen.len() > 60,
            "the strategy reached {} operations",
            seen.len()
        );
    }

    #[test]
    fn flags_are_the_table_s() {
        use NfsOpnum4 as O;
        let without: Vec<_> = all_ops()
            .filter(|o| o.flags().contains(OpFlags::WITHOUT_SEQUENCE))
            .collect();
        assert_eq!(
            without,
            [
                O::OP_BIND_CONN_TO_SESSION,
                O::OP_EXCHANGE_ID,
                O::OP_CREATE_SESSION,
                O::OP_DESTROY_SESSION,
                O::OP_DESTROY_CLIENTID,
            ]
        );
        assert!(O::OP_WRITE
            .flags()
            .contains(OpFlags::MODIFIES_STATE.with(OpFlags::ON_DS)));
        assert!(!O::OP_LOOKUP.flags().contains(OpFlags::ON_DS));
        assert_eq!(O(9999).flags(), OpFlags::NONE);
        assert_eq!(NfsArgop4::GetFh.reply_size_estimate(), None);
        let read = NfsArgop4::Read(ReadArgs {
            count: 5,
            ..Default::default()
        });
        assert_eq!(read.reply_size_estimate(), Some(8 + 4 + 4 + 8));
    }

    /// A handler that offers PUTROOTFH only.
    struct RootOnly(u32);

    impl OpHandler for RootOnly {
        async fn putrootfh(&mut self) -> PutRootFhRes {
            self.0 += 1;
            PutRootFhRes::error(NfsStat4::NFS4_OK)
        }
    }

    #[test]
    fn dispatch_runs_the_handler_s_method_and_answers_notsupp_for_the_rest() {
        let mut h = RootOnly(0);
        let run = |h: &mut RootOnly, op: NfsArgop4| futures::executor::block_on(dispatch(h, &op));
        assert_eq!(
            run(&mut h, NfsArgop4::PutRootFh).status(),
            NfsStat4::NFS4_OK
        );
        assert_eq!(h.0, 1);
        let lookup = run(
            &mut h,
            NfsArgop4::Lookup(LookupArgs {
                objname: "a".into(),
            }),
        );
        assert_eq!(
            lookup,
            NfsResop4::Lookup(LookupRes {
                status: NfsStat4::NFS4ERR_NOTSUPP
            })
        );
        assert_eq!(
            run(&mut h, NfsArgop4::Illegal).status(),
            NfsStat4::NFS4ERR_OP_ILLEGAL
        );
        assert_eq!(
            run(&mut h, NfsArgop4::Unknown(NfsOpnum4(9999))).status(),
            NfsStat4::NFS4ERR_OP_ILLEGAL
        );
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

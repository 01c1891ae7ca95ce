//! CB_COMPOUND: the callback program's op table (through the forward channel's
//! `op_table!`, with its handler seam [`CbHandler`] and [`cb_dispatch`]) and the request and
//! reply envelopes.

use super::*;

op_table! {
    /// One callback operation with its arguments (`nfs_cb_argop4`, RFC 8881 section 20).
    #[doc(alias = "nfs_cb_argop4")]
    #[derive(Clone, PartialEq, Eq, Debug, Xdr)]
    enum NfsCbArgop4 {
        /// An operation number this implementation does not know. Its arguments cannot be
        /// delimited, so it is the last operation decoded from a CB_COMPOUND; the client
        /// answers it with CB_ILLEGAL / `NFS4ERR_OP_ILLEGAL`.
        Unknown
    }
    /// One callback operation's result (`nfs_cb_resop4`, RFC 8881 section 20).
    #[doc(alias = "nfs_cb_resop4")]
    #[derive(Clone, PartialEq, Debug, Xdr)]
    enum NfsCbResop4 {
        /// A result number this implementation does not know; nothing after it can be
        /// decoded. Its status reads as `NFS4ERR_OP_ILLEGAL`.
        Unknown
    };
    opnum: NfsCbOpnum4;
    illegal: NfsCbResop4::Illegal(CbIllegalRes { status: NfsStat4::NFS4ERR_OP_ILLEGAL });
    /// A client's callback operations, one method per operation of the callback table; each
    /// answers `NFS4ERR_NOTSUPP` unless the client offers it, so a client writes only what it
    /// does. [`cb_dispatch`] maps an operation to its method. CB_SEQUENCE has its method like
    /// the others, but where it may stand (first, and only first: RFC 8881 section 20.9.3) is
    /// the caller's to check, as the server's COMPOUND engine checks SEQUENCE.
    handler: CbHandler,
    /// Runs one callback operation on `handler`: the method of its row in the callback table;
    /// an unknown or illegal operation is CB_ILLEGAL with `NFS4ERR_OP_ILLEGAL`.
    fn cb_dispatch;
    ops {
        GetAttr = OP_CB_GETATTR(CbGetAttrArgs) -> CbGetAttrRes => cb_getattr;
        Recall = OP_CB_RECALL(CbRecallArgs) -> CbRecallRes => cb_recall;
        LayoutRecall = OP_CB_LAYOUTRECALL(CbLayoutRecallArgs) -> CbLayoutRecallRes =>
            cb_layoutrecall;
        Notify = OP_CB_NOTIFY(CbNotifyArgs) -> CbNotifyRes => cb_notify;
        PushDeleg = OP_CB_PUSH_DELEG(CbPushDelegArgs) -> CbPushDelegRes => cb_push_deleg;
        RecallAny = OP_CB_RECALL_ANY(CbRecallAnyArgs) -> CbRecallAnyRes => cb_recall_any;
        RecallableObjAvail = OP_CB_RECALLABLE_OBJ_AVAIL(CbRecallableObjAvailArgs)
            -> CbRecallableObjAvailRes => cb_recallable_obj_avail;
        RecallSlot = OP_CB_RECALL_SLOT(CbRecallSlotArgs) -> CbRecallSlotRes => cb_recall_slot;
        Sequence = OP_CB_SEQUENCE(CbSequenceArgs) -> CbSequenceRes => cb_sequence;
        WantsCancelled = OP_CB_WANTS_CANCELLED(CbWantsCancelledArgs) -> CbWantsCancelledRes =>
            cb_wants_cancelled;
        NotifyLock = OP_CB_NOTIFY_LOCK(CbNotifyLockArgs) -> CbNotifyLockRes => cb_notify_lock;
        NotifyDeviceid = OP_CB_NOTIFY_DEVICEID(CbNotifyDeviceidArgs) -> CbNotifyDeviceidRes =>
            cb_notify_deviceid;
        Offload = OP_CB_OFFLOAD(CbOffloadArgs) -> CbOffloadRes => cb_offload;
        Illegal = OP_CB_ILLEGAL() -> CbIllegalRes;
    }
}

/// CB_COMPOUND arguments (RFC 8881 section 20 and 16.2.3 for the envelope).
///
/// Decoding stops after an [`NfsCbArgop4::Unknown`] operation, whose arguments cannot be
/// delimited; the rest of the input is consumed with it. See [`CbCompoundArgs::decode_partial`]
/// for operations whose arguments fail to decode.
#[doc(alias = "CB_COMPOUND4args")]
#[derive(Clone, PartialEq, Eq, Debug, Default)]
pub struct CbCompoundArgs {
    /// Echoed in the reply.
    pub tag: Utf8String,
    /// The minor version (1 or 2 for NFSv4.1 and 4.2).
    pub minorversion: u32,
    /// The `callback_ident` (NFSv4.0 only; ignored by NFSv4.1 clients).
    pub callback_ident: u32,
    /// The operations.
    pub argarray: Vec<NfsCbArgop4>,
}

/// An operation of a CB_COMPOUND whose arguments did not decode; see
/// [`CbCompoundArgs::decode_partial`].
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct CbOpDecodeError {
    /// Its position in `argarray` (the number of operations decoded before it).
    pub index: usize,
    /// Its operation number.
    pub op: NfsCbOpnum4,
    /// What went wrong.
    pub error: DecodeError,
}

impl core::fmt::Display for CbOpDecodeError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(
            f,
            "CB_COMPOUND operation {} ({}): {}",
            self.index, self.op, self.error
        )
    }
}

impl std::error::Error for CbOpDecodeError {}

impl CbCompoundArgs {
    /// Decodes a CB_COMPOUND, keeping the operations that precede one whose arguments fail to
    /// decode.
    ///
    /// Returns `Err` only when the header (tag, minor version, callback ident, operation count)
    /// or an operation number itself cannot be read. When an operation's arguments fail to
    /// decode, returns the operations before it together with an [`CbOpDecodeError`] naming it,
    /// so that the client can answer those and then the failing one with `NFS4ERR_BADXDR`.
    /// In that case, as after an [`NfsCbArgop4::Unknown`] operation, the rest of the input is
    /// consumed.
    pub fn decode_partial(
        dec: &mut Decoder,
    ) -> Result<(Self, Option<CbOpDecodeError>), DecodeError> {
        let tag = Utf8String::decode(dec).map_err(|e| e.context("CbCompoundArgs.tag"))?;
        let minorversion = dec
            .get_u32()
            .map_err(|e| e.context("CbCompoundArgs.minorversion"))?;
        let callback_ident = dec
            .get_u32()
            .map_err(|e| e.context("CbCompoundArgs.callback_ident"))?;
        let n = dec
            .get_length(crate::nfs4::COMPOUND_MAX_OPS, NfsCbArgop4::MIN_SIZE)
            .map_err(|e| e.context("CbCompoundArgs.argarray"))?;
        let mut argarray = Vec::with_capacity(n.min(dec.remaining() / NfsCbArgop4::MIN_SIZE));
        let mut failed = None;
        for index in 0..n {
            // Read the operation number ahead, to name the operation if its arguments fail.
            let op = NfsCbOpnum4(
                dec.peek_u32()
                    .map_err(|e| e.context("CbCompoundArgs.argarray"))?,
            );
            match NfsCbArgop4::decode(dec) {
                Ok(arg) => {
                    let unknown = matches!(arg, NfsCbArgop4::Unknown(_));
                    argarray.push(arg);
                    if unknown {
                        break;
                    }
                }
                Err(error) => {
                    dec.take_rest();
                    failed = Some(CbOpDecodeError {
                        index,
                        op,
                        error: error.context("CbCompoundArgs.argarray"),
                    });
                    break;
                }
            }
        }
        let args = Self {
            tag,
            minorversion,
            callback_ident,
            argarray,
        };
        Ok((args, failed))
    }
}

impl Xdr for CbCompoundArgs {
    fn encode(&self, enc: &mut Encoder) {
        self.tag.encode(enc);
        enc.put_u32(self.minorversion);
        enc.put_u32(self.callback_ident);
        self.argarray.encode(enc);
    }

    /// Strict decoding: any malformed or unknown operation is an error.
    fn decode(dec: &mut Decoder) -> Result<Self, DecodeError> {
        let at = dec.position();
        match Self::decode_partial(dec)? {
            (_, Some(e)) => Err(e.error),
            (args, None) => match args.argarray.last() {
                Some(NfsCbArgop4::Unknown(n)) => {
                    Err(DecodeError::bad_discriminant(n.0, at).context("CbCompoundArgs.argarray"))
                }
                _ => Ok(args),
            },
        }
    }
}

#[cfg(any(test, feature = "arbitrary"))]
impl proptest::arbitrary::Arbitrary for CbCompoundArgs {
    type Parameters = ();
    type Strategy = proptest::strategy::BoxedStrategy<Self>;
    fn arbitrary_with(_: ()) -> Self::Strategy {
        use proptest::prelude::*;
        (
            any::<Utf8String>(),
            any::<u32>(),
            any::<u32>(),
            proptest::collection::vec(any::<NfsCbArgop4>(), 0..=3),
        )
            .prop_map(|(tag, minorversion, callback_ident, argarray)| Self {
                tag,
                minorversion,
                callback_ident,
                argarray,
            })
            .boxed()
    }
}

/// CB_COMPOUND result (RFC 8881 section 20 and 16.2.3 for the envelope).
///
/// A result with an unknown operation number ([`NfsCbResop4::Unknown`]) cannot be delimited,
/// so decoding fails on it.
#[doc(alias = "CB_COMPOUND4res")]
#[derive(Clone, PartialEq, Debug)]
pub struct CbCompoundRes {
    /// The status of the last operation done.
    pub status: NfsStat4,
    /// The request's tag.
    pub tag: Utf8String,
    /// One result per operation done.
    pub resarray: Vec<NfsCbResop4>,
}

impl CbCompoundRes {
    /// The compound's status.
    pub fn status(&self) -> NfsStat4 {
        self.status
    }
}

impl Xdr for CbCompoundRes {
    fn encode(&self, enc: &mut Encoder) {
        self.status.encode(enc);
        self.tag.encode(enc);
        self.resarray.encode(enc);
    }

    fn decode(dec: &mut Decoder) -> Result<Self, DecodeError> {
        let status = NfsStat4::decode(dec).map_err(|e| e.context("CbCompoundRes.status"))?;
        let tag = Utf8String::decode(dec).map_err(|e| e.context("CbCompoundRes.tag"))?;
        let n = dec
            .get_length(crate::nfs4::COMPOUND_MAX_OPS, NfsCbResop4::MIN_SIZE)
            .map_err(|e| e.context("CbCompoundRes.resarray"))?;
        let mut resarray = Vec::with_capacity(n.min(dec.remaining() / NfsCbResop4::MIN_SIZE));
        for _ in 0..n {
            let at = dec.position();
            let res = NfsCbResop4::decode(dec).map_err(|e| e.context("CbCompoundRes.resarray"))?;
            if let NfsCbResop4::Unknown(op) = res {
                // A result of an operation we cannot know the shape of: nothing after it
                // can be delimited, so the reply is malformed.
                return Err(
                    DecodeError::bad_discriminant(op.0, at).context("CbCompoundRes.resarray")
                );
            }
            resarray.push(res);
        }
        Ok(Self {
            status,
            tag,
            resarray,
        })
    }
}

#[cfg(any(test, feature = "arbitrary"))]
impl proptest::arbitrary::Arbitrary for CbCompoundRes {
    type Parameters = ();
    type Strategy = proptest::strategy::BoxedStrategy<Self>;
    fn arbitrary_with(_: ()) -> Self::Strategy {
        use proptest::prelude::*;
        (
            any::<NfsStat4>(),
            any::<Utf8String>(),
            proptest::collection::vec(any::<NfsCbResop4>(), 0..=3),
        )
            .prop_map(|(status, tag, resarray)| Self {
                status,
                tag,
                resarray,
            })
            .boxed()
    }
}

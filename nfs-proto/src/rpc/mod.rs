//! ONC RPC v2 messages and credentials (RFC 5531).
//!
//! A record from the transport is split with [`RpcMsg::decode_header`] into the message header
//! and the rest of the record (procedure arguments of a call, results of a successful reply),
//! which stays a zero-copy `Bytes` slice for the program to decode. A server answers with one
//! of the `RpcMsg::reply_*` builders and [`RpcMsg::encode_with`] /
//! [`RpcMsg::encode_with_pieces`], which put the reply header and the results into one
//! [`Encoder`] ready for [`crate::record::frame_record`] or `transport::write_record`.
//!
//! ```
//! use bytes::Bytes;
//! use nfs_proto::rpc::{AuthStat, Credential, MsgBody, RpcMsg};
//! use nfs_proto::xdr::Encoder;
//!
//! fn answer(record: Bytes) -> Option<Vec<Bytes>> {
//!     let (msg, _args) = match RpcMsg::decode_header(record) {
//!         Ok(v) => v,
//!         // rpcvers != 2: RPC_MISMATCH; garbage: drop the record.
//!         Err(e) => return e.reply().map(|r| r.to_pieces()),
//!     };
//!     let MsgBody::Call(call) = &msg.body else { return None };
//!     let reply = match Credential::from_opaque(&call.cred) {
//!         Err(e) => RpcMsg::reply_auth_error(msg.xid, e.auth_stat()),
//!         Ok(_) if call.prog != 100003 => RpcMsg::reply_prog_unavail(msg.xid),
//!         Ok(_) if call.proc_ != 0 => RpcMsg::reply_proc_unavail(msg.xid),
//!         Ok(_) => RpcMsg::reply_success(msg.xid, Default::default()),
//!     };
//!     Some(reply.to_pieces())
//! }
//! ```

mod auth;

use core::fmt;

use bytes::Bytes;

pub use auth::{
    AuthFlavor, AuthStat, AuthSysParms, Credential, CredentialError, OpaqueAuth, AUTH_SYS_MAX_GIDS,
    AUTH_SYS_MAX_MACHINENAME, MAX_AUTH_BYTES,
};

use crate::xdr::{DecodeError, Decoder, Encoder, Xdr};
use crate::xdr_enum;

/// The RPC protocol version this crate speaks (RFC 5531 section 9, `RPC_VERS`).
pub const RPC_VERS: u32 = 2;

xdr_enum! {
    /// Message type (RFC 5531 section 9).
    #[doc(alias = "msg_type")]
    pub struct MsgType {
        /// A call.
        CALL = 0,
        /// A reply.
        REPLY = 1,
    }
}

xdr_enum! {
    /// Whether a call was accepted (RFC 5531 section 9).
    #[doc(alias = "reply_stat")]
    pub struct ReplyStat {
        /// Accepted: the reply carries an [`AcceptStat`].
        MSG_ACCEPTED = 0,
        /// Denied: the reply carries a [`RejectedReply`].
        MSG_DENIED = 1,
    }
}

xdr_enum! {
    /// Status of an accepted call (RFC 5531 section 9); the discriminant of [`AcceptStat`].
    #[doc(alias = "accept_stat")]
    pub struct AcceptStatCode {
        /// Executed successfully.
        SUCCESS = 0,
        /// Remote hasn't exported the program.
        PROG_UNAVAIL = 1,
        /// Remote can't support the version number.
        PROG_MISMATCH = 2,
        /// Program can't support the procedure.
        PROC_UNAVAIL = 3,
        /// Procedure can't decode its arguments.
        GARBAGE_ARGS = 4,
        /// E.g. memory allocation failure.
        SYSTEM_ERR = 5,
    }
}

xdr_enum! {
    /// Why a call was denied (RFC 5531 section 9); the discriminant of [`RejectedReply`].
    #[doc(alias = "reject_stat")]
    pub struct RejectStat {
        /// RPC version number is not 2.
        RPC_MISMATCH = 0,
        /// Remote can't authenticate the caller.
        AUTH_ERROR = 1,
    }
}

/// An RPC message: transaction id and call or reply body (RFC 5531 section 9).
#[doc(alias = "rpc_msg")]
#[derive(Clone, PartialEq, Eq, Debug, Xdr)]
pub struct RpcMsg {
    /// Transaction id; a reply carries the id of its call.
    pub xid: u32,
    /// Call or reply.
    pub body: MsgBody,
}

/// The body of an RPC message (RFC 5531 section 9, the union inside `rpc_msg`).
#[derive(Clone, PartialEq, Eq, Debug, Xdr)]
pub enum MsgBody {
    /// A call; the procedure arguments follow it.
    #[xdr(case = MsgType::CALL)]
    Call(CallBody),
    /// A reply.
    #[xdr(case = MsgType::REPLY)]
    Reply(ReplyBody),
}

/// The header of a call (RFC 5531 section 9). The procedure arguments follow it on the wire and
/// are not part of this type.
#[doc(alias = "call_body")]
#[derive(Clone, PartialEq, Eq, Debug, Xdr)]
pub struct CallBody {
    /// RPC version: must be [`RPC_VERS`] (2); see [`CallBody::check_version`].
    pub rpcvers: u32,
    /// Program number.
    pub prog: u32,
    /// Program version.
    pub vers: u32,
    /// Procedure number (`proc` in the RFC).
    pub proc_: u32,
    /// Credential.
    pub cred: OpaqueAuth,
    /// Verifier.
    pub verf: OpaqueAuth,
}

/// The body of a reply (RFC 5531 section 9).
#[doc(alias = "reply_body")]
#[derive(Clone, PartialEq, Eq, Debug, Xdr)]
pub enum ReplyBody {
    /// The call was accepted (it may still have failed: see [`AcceptStat`]).
    #[xdr(case = ReplyStat::MSG_ACCEPTED)]
    Accepted(AcceptedReply),
    /// The call was denied.
    #[xdr(case = ReplyStat::MSG_DENIED)]
    Denied(RejectedReply),
}

/// Reply to a call the server accepted (RFC 5531 section 9).
#[doc(alias = "accepted_reply")]
#[derive(Clone, PartialEq, Eq, Debug, Xdr)]
pub struct AcceptedReply {
    /// The server's verifier.
    pub verf: OpaqueAuth,
    /// Outcome; on [`AcceptStat::Success`] the procedure results follow.
    pub stat: AcceptStat,
}

/// Outcome of an accepted call (RFC 5531 section 9, `accepted_reply.reply_data`).
#[doc(alias = "accepted_reply_data")]
#[derive(Clone, PartialEq, Eq, Debug, Xdr)]
pub enum AcceptStat {
    /// Executed; the procedure results follow.
    #[xdr(case = AcceptStatCode::SUCCESS)]
    Success,
    /// The program is not available.
    #[xdr(case = AcceptStatCode::PROG_UNAVAIL)]
    ProgUnavail,
    /// The program version is not supported.
    #[xdr(case = AcceptStatCode::PROG_MISMATCH)]
    ProgMismatch {
        /// Lowest version supported.
        low: u32,
        /// Highest version supported.
        high: u32,
    },
    /// The procedure is not available.
    #[xdr(case = AcceptStatCode::PROC_UNAVAIL)]
    ProcUnavail,
    /// The arguments could not be decoded.
    #[xdr(case = AcceptStatCode::GARBAGE_ARGS)]
    GarbageArgs,
    /// A system error (e.g. memory allocation failure).
    #[xdr(case = AcceptStatCode::SYSTEM_ERR)]
    SystemErr,
    /// An `accept_stat` this crate does not know (the RFC's `default: void` arm).
    #[xdr(default, skip_arbitrary)]
    Other(AcceptStatCode),
}

impl AcceptStat {
    /// The `accept_stat` value.
    pub fn code(&self) -> AcceptStatCode {
        match self {
            Self::Success => AcceptStatCode::SUCCESS,
            Self::ProgUnavail => AcceptStatCode::PROG_UNAVAIL,
            Self::ProgMismatch { .. } => AcceptStatCode::PROG_MISMATCH,
            Self::ProcUnavail => AcceptStatCode::PROC_UNAVAIL,
            Self::GarbageArgs => AcceptStatCode::GARBAGE_ARGS,
            Self::SystemErr => AcceptStatCode::SYSTEM_ERR,
            Self::Other(c) => *c,
        }
    }
}

/// Reply to a call the server denied (RFC 5531 section 9).
#[doc(alias = "rejected_reply")]
#[derive(Clone, PartialEq, Eq, Debug, Xdr)]
pub enum RejectedReply {
    /// The RPC version is not supported.
    #[xdr(case = RejectStat::RPC_MISMATCH)]
    RpcMismatch {
        /// Lowest RPC version supported.
        low: u32,
        /// Highest RPC version supported.
        high: u32,
    },
    /// Authentication failed.
    #[xdr(case = RejectStat::AUTH_ERROR)]
    AuthError(AuthStat),
}

/// The RPC version of a call is not [`RPC_VERS`]; answer with
/// [`RpcMsg::reply_rpc_mismatch`].
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct RpcVersionMismatch {
    /// The version the caller sent.
    pub rpcvers: u32,
}

impl fmt::Display for RpcVersionMismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "RPC version {} is not supported (only {RPC_VERS})",
            self.rpcvers
        )
    }
}

impl std::error::Error for RpcVersionMismatch {}

impl CallBody {
    /// Checks that `rpcvers` is 2. [`RpcMsg::decode_header`] already does; this is for calls
    /// decoded by other means.
    pub fn check_version(&self) -> Result<(), RpcVersionMismatch> {
        if self.rpcvers == RPC_VERS {
            Ok(())
        } else {
            Err(RpcVersionMismatch {
                rpcvers: self.rpcvers,
            })
        }
    }
}

/// Why [`RpcMsg::decode_header`] failed.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum RpcHeaderError {
    /// A call with an RPC version other than 2. Detected right after `rpcvers`, before the
    /// rest of the header is parsed (its layout is only known for version 2). Answer with
    /// [`RpcHeaderError::reply`] (RPC_MISMATCH, low = high = 2).
    RpcVersion {
        /// Transaction id of the call.
        xid: u32,
        /// The version the caller sent.
        rpcvers: u32,
    },
    /// The header is not a valid RPC message. RFC 5531 defines no reply for this; a server
    /// drops the record (and may close the connection).
    Malformed {
        /// The first four bytes, when the record has them.
        xid: Option<u32>,
        /// What failed to decode.
        error: DecodeError,
    },
}

impl RpcHeaderError {
    /// The transaction id, when the record has one.
    pub fn xid(&self) -> Option<u32> {
        match *self {
            Self::RpcVersion { xid, .. } => Some(xid),
            Self::Malformed { xid, .. } => xid,
        }
    }

    /// The reply a server should send, if any: RPC_MISMATCH for a wrong RPC version, nothing
    /// for a malformed header.
    pub fn reply(&self) -> Option<RpcMsg> {
        match *self {
            Self::RpcVersion { xid, .. } => Some(RpcMsg::reply_rpc_mismatch(xid)),
            Self::Malformed { .. } => None,
        }
    }
}

impl fmt::Display for RpcHeaderError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::RpcVersion { xid, rpcvers } => write!(
                f,
                "RPC call xid {xid:#010x}: RPC version {rpcvers} is not supported (only {RPC_VERS})"
            ),
            Self::Malformed {
                xid: Some(xid),
                error,
            } => {
                write!(f, "malformed RPC message xid {xid:#010x}: {error}")
            }
            Self::Malformed { xid: None, error } => write!(f, "malformed RPC message: {error}"),
        }
    }
}

impl std::error::Error for RpcHeaderError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::RpcVersion { .. } => None,
            Self::Malformed { error, .. } => Some(error),
        }
    }
}

fn be32(b: &[u8], at: usize) -> Option<u32> {
    let w = b.get(at..at + 4)?;
    Some(u32::from_be_bytes([w[0], w[1], w[2], w[3]]))
}

impl RpcMsg {
    /// The transaction id of a record (its first four bytes), without decoding anything else.
    pub fn peek_xid(record: &[u8]) -> Option<u32> {
        be32(record, 0)
    }

    /// Decodes the message header at the start of `record` and returns it with the rest of the
    /// record as a zero-copy slice: the procedure arguments of a call, the results of a
    /// [`AcceptStat::Success`] reply (empty for other replies of a well-formed record).
    ///
    /// A call whose `rpcvers` is not 2 is reported as [`RpcHeaderError::RpcVersion`] with its
    /// xid, so the server can answer RPC_MISMATCH.
    pub fn decode_header(record: Bytes) -> Result<(RpcMsg, Bytes), RpcHeaderError> {
        let xid = Self::peek_xid(&record);
        if let (Some(xid), Some(0), Some(rpcvers)) = (xid, be32(&record, 4), be32(&record, 8)) {
            // msg_type CALL: check rpcvers before trusting the rest of the layout.
            if rpcvers != RPC_VERS {
                return Err(RpcHeaderError::RpcVersion { xid, rpcvers });
            }
        }
        let mut dec = Decoder::new(record);
        let msg = RpcMsg::decode(&mut dec).map_err(|e| RpcHeaderError::Malformed {
            xid,
            error: e.context("RpcMsg"),
        })?;
        Ok((msg, dec.take_rest()))
    }

    /// A call header (RPC version 2); encode the arguments after it with
    /// [`RpcMsg::encode_with`].
    pub fn call(
        xid: u32,
        prog: u32,
        vers: u32,
        proc_: u32,
        cred: OpaqueAuth,
        verf: OpaqueAuth,
    ) -> Self {
        Self {
            xid,
            body: MsgBody::Call(CallBody {
                rpcvers: RPC_VERS,
                prog,
                vers,
                proc_,
                cred,
                verf,
            }),
        }
    }

    /// An accepted reply with any status and verifier (RPCSEC_GSS servers need a verifier on
    /// every accepted reply).
    pub fn reply_accepted(xid: u32, verf: OpaqueAuth, stat: AcceptStat) -> Self {
        Self {
            xid,
            body: MsgBody::Reply(ReplyBody::Accepted(AcceptedReply { verf, stat })),
        }
    }

    /// A denied reply.
    pub fn reply_denied(xid: u32, rejected: RejectedReply) -> Self {
        Self {
            xid,
            body: MsgBody::Reply(ReplyBody::Denied(rejected)),
        }
    }

    /// SUCCESS: encode the results after it with [`RpcMsg::encode_with`] or
    /// [`RpcMsg::encode_with_pieces`].
    pub fn reply_success(xid: u32, verf: OpaqueAuth) -> Self {
        Self::reply_accepted(xid, verf, AcceptStat::Success)
    }

    /// PROG_UNAVAIL (AUTH_NONE verifier).
    pub fn reply_prog_unavail(xid: u32) -> Self {
        Self::reply_accepted(xid, OpaqueAuth::none(), AcceptStat::ProgUnavail)
    }

    /// PROG_MISMATCH with the supported version range (AUTH_NONE verifier).
    pub fn reply_prog_mismatch(xid: u32, low: u32, high: u32) -> Self {
        Self::reply_accepted(
            xid,
            OpaqueAuth::none(),
            AcceptStat::ProgMismatch { low, high },
        )
    }

    /// PROC_UNAVAIL (AUTH_NONE verifier).
    pub fn reply_proc_unavail(xid: u32) -> Self {
        Self::reply_accepted(xid, OpaqueAuth::none(), AcceptStat::ProcUnavail)
    }

    /// GARBAGE_ARGS (AUTH_NONE verifier).
    pub fn reply_garbage_args(xid: u32) -> Self {
        Self::reply_accepted(xid, OpaqueAuth::none(), AcceptStat::GarbageArgs)
    }

    /// SYSTEM_ERR (AUTH_NONE verifier).
    pub fn reply_system_err(xid: u32) -> Self {
        Self::reply_accepted(xid, OpaqueAuth::none(), AcceptStat::SystemErr)
    }

    /// MSG_DENIED / RPC_MISMATCH: only version 2 is supported (low = high = 2).
    pub fn reply_rpc_mismatch(xid: u32) -> Self {
        Self::reply_denied(
            xid,
            RejectedReply::RpcMismatch {
                low: RPC_VERS,
                high: RPC_VERS,
            },
        )
    }

    /// MSG_DENIED / AUTH_ERROR with the reason.
    pub fn reply_auth_error(xid: u32, stat: AuthStat) -> Self {
        Self::reply_denied(xid, RejectedReply::AuthError(stat))
    }

    /// The call header, if this is a call.
    pub fn as_call(&self) -> Option<&CallBody> {
        match &self.body {
            MsgBody::Call(c) => Some(c),
            MsgBody::Reply(_) => None,
        }
    }

    /// The reply body, if this is a reply.
    pub fn as_reply(&self) -> Option<&ReplyBody> {
        match &self.body {
            MsgBody::Reply(r) => Some(r),
            MsgBody::Call(_) => None,
        }
    }

    /// Writes this header followed by `body` (call arguments or reply results) into `enc`.
    /// Payload fields of `body` stay separate zero-copy pieces.
    pub fn encode_with<T: Xdr>(&self, enc: &mut Encoder, body: &T) {
        self.encode(enc);
        body.encode(enc);
    }

    /// Writes this header followed by already-encoded pieces (e.g. a COMPOUND reply encoded
    /// elsewhere) into `enc`, without copying them.
    pub fn encode_with_pieces(&self, enc: &mut Encoder, pieces: impl IntoIterator<Item = Bytes>) {
        self.encode(enc);
        enc.put_pieces(pieces);
    }

    /// This message alone (no arguments or results) as pieces for
    /// [`crate::record::frame_record`] or a vectored write.
    pub fn to_pieces(&self) -> Vec<Bytes> {
        let mut enc = Encoder::with_capacity(64);
        self.encode(&mut enc);
        enc.into_pieces()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::xdr::{from_bytes, to_bytes, DecodeErrorKind, Utf8String};

    crate::roundtrip_tests!(
        msg_type: MsgType,
        reply_stat: ReplyStat,
        accept_stat_code: AcceptStatCode,
        reject_stat: RejectStat,
        rpc_msg: RpcMsg,
        msg_body: MsgBody,
        call_body: CallBody,
        reply_body: ReplyBody,
        accepted_reply: AcceptedReply,
        accept_stat: AcceptStat,
        rejected_reply: RejectedReply,
    );

    fn words(w: &[u32]) -> Vec<u8> {
        w.iter().flat_map(|v| v.to_be_bytes()).collect()
    }

    fn null_call_with_auth_sys() -> (RpcMsg, Vec<u8>) {
        let cred = Credential::Sys(AuthSysParms {
            stamp: 0x0102_0304,
            machinename: Utf8String::from("host"),
            uid: 1000,
            gid: 100,
            gids: vec![100, 10],
        });
        let msg = RpcMsg::call(
            0x1234_5678,
            100_003,
            4,
            0,
            cred.to_opaque(),
            OpaqueAuth::none(),
        );
        let mut wire = words(&[
            0x1234_5678, // xid
            0,           // CALL
            2,           // rpcvers
            100_003,     // NFS
            4,           // vers
            0,           // NULL
            1,           // AUTH_SYS
            32,          // body length
            0x0102_0304, // stamp
            4,           // machinename length
        ]);
        wire.extend_from_slice(b"host");
        wire.extend_from_slice(&words(&[
            1000, // uid
            100,  // gid
            2,    // gids count
            100, 10, // gids
            0,  // verf AUTH_NONE
            0,  // verf body length
        ]));
        (msg, wire)
    }

    #[test]
    fn null_call_with_auth_sys_bytes() {
        let (msg, wire) = null_call_with_auth_sys();
        assert_eq!(wire.len(), 72);
        assert_eq!(&to_bytes(&msg)[..], &wire[..]);
        let (back, args) = RpcMsg::decode_header(Bytes::from(wire)).unwrap();
        assert!(args.is_empty());
        assert_eq!(back, msg);
        let call = back.as_call().unwrap();
        assert_eq!(call.check_version(), Ok(()));
        let Credential::Sys(p) = Credential::from_opaque(&call.cred).unwrap() else {
            panic!("not AUTH_SYS");
        };
        assert_eq!((p.uid, p.gid, &p.gids[..]), (1000, 100, &[100, 10][..]));
        assert_eq!(p.machinename.as_str(), Some("host"));
    }

    #[test]
    fn arguments_are_a_zero_copy_slice_of_the_record() {
        let (_, mut wire) = null_call_with_auth_sys();
        wire.extend_from_slice(&words(&[7, 8]));
        let record = Bytes::from(wire);
        let (_, args) = RpcMsg::decode_header(record.clone()).unwrap();
        assert_eq!(&args[..], &words(&[7, 8])[..]);
        assert_eq!(args.as_ptr(), record[72..].as_ptr());
    }

    #[test]
    fn garbage_args_reply_bytes() {
        let wire = words(&[
            0xcafe_f00d, // xid
            1,           // REPLY
            0,           // MSG_ACCEPTED
            0,           // verf AUTH_NONE
            0,           // verf body length
            4,           // GARBAGE_ARGS
        ]);
        let msg = RpcMsg::reply_garbage_args(0xcafe_f00d);
        assert_eq!(&to_bytes(&msg)[..], &wire[..]);
        assert_eq!(from_bytes::<RpcMsg>(Bytes::from(wire)), Ok(msg));
    }

    #[test]
    fn every_reply_builder_encodes_as_the_rfc_says() {
        let verf = OpaqueAuth::new(AuthFlavor::RPCSEC_GSS, Bytes::from_static(b"abcde"));
        let cases: Vec<(RpcMsg, Vec<u32>)> = vec![
            (
                RpcMsg::reply_success(9, OpaqueAuth::none()),
                vec![9, 1, 0, 0, 0, 0],
            ),
            (
                RpcMsg::reply_success(9, verf),
                vec![9, 1, 0, 6, 5, 0x6162_6364, 0x6500_0000, 0],
            ),
            (RpcMsg::reply_prog_unavail(9), vec![9, 1, 0, 0, 0, 1]),
            (
                RpcMsg::reply_prog_mismatch(9, 3, 4),
                vec![9, 1, 0, 0, 0, 2, 3, 4],
            ),
            (RpcMsg::reply_proc_unavail(9), vec![9, 1, 0, 0, 0, 3]),
            (RpcMsg::reply_garbage_args(9), vec![9, 1, 0, 0, 0, 4]),
            (RpcMsg::reply_system_err(9), vec![9, 1, 0, 0, 0, 5]),
            (RpcMsg::reply_rpc_mismatch(9), vec![9, 1, 1, 0, 2, 2]),
            (
                RpcMsg::reply_auth_error(9, AuthStat::RPCSEC_GSS_CTXPROBLEM),
                vec![9, 1, 1, 1, 14],
            ),
        ];
        for (msg, w) in cases {
            let wire = words(&w);
            assert_eq!(&to_bytes(&msg)[..], &wire[..], "{msg:?}");
            let (back, rest) = RpcMsg::decode_header(Bytes::from(wire)).unwrap();
            assert_eq!(back, msg);
            assert!(rest.is_empty());
        }
    }

    #[test]
    fn wrong_rpc_version_is_reported_with_the_xid() {
        let (_, mut wire) = null_call_with_auth_sys();
        wire[8..12].copy_from_slice(&3u32.to_be_bytes());
        // The rest of a version-3 header need not parse: truncate it after rpcvers.
        for len in [wire.len(), 12] {
            let e = RpcMsg::decode_header(Bytes::copy_from_slice(&wire[..len])).unwrap_err();
            assert_eq!(
                e,
                RpcHeaderError::RpcVersion {
                    xid: 0x1234_5678,
                    rpcvers: 3
                }
            );
            assert_eq!(e.xid(), Some(0x1234_5678));
            let reply = e.reply().unwrap();
            assert_eq!(
                &to_bytes(&reply)[..],
                &words(&[0x1234_5678, 1, 1, 0, 2, 2])[..]
            );
            assert!(e.to_string().contains("RPC version 3"), "{e}");
        }
        // Decoded by other means, the call header reports it too.
        let msg = from_bytes::<RpcMsg>(Bytes::from(wire)).unwrap();
        assert_eq!(
            msg.as_call().unwrap().check_version(),
            Err(RpcVersionMismatch { rpcvers: 3 })
        );
    }

    #[test]
    fn malformed_headers() {
        let e = RpcMsg::decode_header(Bytes::from_static(&[0, 0, 1])).unwrap_err();
        assert!(matches!(e, RpcHeaderError::Malformed { xid: None, .. }));
        assert_eq!(e.reply(), None);
        // Unknown msg_type.
        let e = RpcMsg::decode_header(Bytes::from(words(&[5, 2]))).unwrap_err();
        let RpcHeaderError::Malformed { xid, error } = e else {
            panic!("{e:?}")
        };
        assert_eq!(xid, Some(5));
        assert_eq!(error.kind, DecodeErrorKind::BadDiscriminant(2));
        // Unknown reject_stat.
        assert!(RpcMsg::decode_header(Bytes::from(words(&[5, 1, 1, 7]))).is_err());
        // A cred body over 400 bytes.
        let mut w = words(&[5, 0, 2, 1, 1, 1, 1, 401]);
        w.extend_from_slice(&[0; 412]);
        let e = RpcMsg::decode_header(Bytes::from(w)).unwrap_err();
        assert!(e.to_string().contains("OpaqueAuth.body"), "{e}");
    }

    #[test]
    fn unknown_accept_stat_decodes_as_other() {
        let (msg, rest) = RpcMsg::decode_header(Bytes::from(words(&[1, 1, 0, 0, 0, 42]))).unwrap();
        assert!(rest.is_empty());
        let Some(ReplyBody::Accepted(a)) = msg.as_reply() else {
            panic!("{msg:?}")
        };
        assert_eq!(a.stat, AcceptStat::Other(AcceptStatCode(42)));
        assert_eq!(a.stat.code(), AcceptStatCode(42));
        assert_eq!(&to_bytes(&msg)[..], &words(&[1, 1, 0, 0, 0, 42])[..]);
    }

    #[test]
    fn reply_with_results_keeps_payload_pieces() {
        let payload = Bytes::from(vec![0xab; 4096]);
        let mut enc = Encoder::new();
        RpcMsg::reply_success(77, OpaqueAuth::none())
            .encode_with_pieces(&mut enc, [Bytes::from(words(&[0, 4096])), payload.clone()]);
        assert_eq!(enc.len(), 24 + 8 + 4096);
        let pieces = enc.into_pieces();
        assert_eq!(pieces.len(), 3);
        assert_eq!(pieces[2].as_ptr(), payload.as_ptr(), "payload not copied");
        let record: Vec<u8> = pieces.iter().flat_map(|p| p.iter().copied()).collect();
        let (msg, results) = RpcMsg::decode_header(Bytes::from(record)).unwrap();
        assert_eq!(msg, RpcMsg::reply_success(77, OpaqueAuth::none()));
        assert_eq!(results.len(), 8 + 4096);

        // encode_with: header then a typed body.
        let mut enc = Encoder::new();
        RpcMsg::call(1, 2, 3, 4, OpaqueAuth::none(), OpaqueAuth::none())
            .encode_with(&mut enc, &payload);
        let (_, args) = RpcMsg::decode_header(enc.into_bytes()).unwrap();
        assert_eq!(from_bytes::<Bytes>(args).unwrap(), payload);
    }
}

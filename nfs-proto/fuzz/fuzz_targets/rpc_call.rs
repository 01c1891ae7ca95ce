//! RPC message headers and credentials: decoding never panics, and whatever decodes
//! re-encodes to the same bytes.
#![no_main]

use bytes::Bytes;
use libfuzzer_sys::fuzz_target;
use nfs_proto::rpc::{Credential, MsgBody, RpcMsg};
use nfs_proto::xdr::Encoder;

fuzz_target!(|data: &[u8]| {
    let record = Bytes::copy_from_slice(data);
    let Ok((msg, body)) = RpcMsg::decode_header(record.clone()) else { return };
    if let MsgBody::Call(call) = &msg.body {
        if let Ok(cred) = Credential::from_opaque(&call.cred) {
            // AUTH_NONE's body carries nothing (RFC 5531 section 8.1): it is ignored.
            if cred != Credential::None {
                assert_eq!(nfs_proto::rpc::OpaqueAuth::from(&cred), call.cred);
            }
        }
    }
    let mut e = Encoder::new();
    msg.encode_with_pieces(&mut e, [body]);
    assert_eq!(e.into_bytes(), record);
});

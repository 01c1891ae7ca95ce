//! RPC-over-RDMA transport headers as either side receives them: decoding never panics and
//! reserves nothing beyond the caps; an accepted header is canonical (re-encodes to the bytes it
//! came from) and agrees with the plain XDR decoder; a refusal that asks for an answer yields
//! an RDMA_ERROR the requester accepts for the same XID.
#![no_main]

use bytes::Bytes;
use libfuzzer_sys::fuzz_target;
use nfs_proto::rdma::{ErrorAction, HeaderErrorKind, Limits, RdmaBody, RdmaHeader, Side};
use nfs_proto::xdr::{self, Decoder, Xdr};

fuzz_target!(|data: &[u8]| {
    let Some((&selector, input)) = data.split_first() else {
        return;
    };
    let side = if selector & 1 == 0 {
        Side::Responder
    } else {
        Side::Requester
    };
    let limits = if selector & 2 == 0 {
        Limits::default()
    } else {
        // Small limits, so that the fuzzer reaches them.
        Limits {
            max_read_segments: 3,
            max_read_bytes: 1 << 16,
            max_write_chunks: 2,
            max_chunk_segments: 2,
        }
    };
    let buf = Bytes::copy_from_slice(input);
    match RdmaHeader::decode_received(buf.clone(), side, &limits) {
        Ok(r) => {
            assert_eq!(xdr::to_bytes(&r.header), buf.slice(..r.header_len));
            assert_eq!(r.rpc_message, buf.slice(r.header_len..));
            let mut d = Decoder::new(buf.clone());
            assert_eq!(RdmaHeader::decode(&mut d).as_ref(), Ok(&r.header));
            assert_eq!(d.position(), r.header_len);
            if let Some(lists) = r.header.chunks() {
                assert!(lists.reads.len() <= limits.max_read_segments as usize);
                assert!(lists.writes.len() <= limits.max_write_chunks as usize);
                assert!(lists.read_bytes() <= limits.max_read_bytes);
                let _ = lists.check_reply_against(lists);
            }
            if matches!(r.header.body, RdmaBody::NoMsg(_) | RdmaBody::Error(_)) {
                assert!(r.rpc_message.is_empty());
            }
        }
        Err(e) => {
            let _ = e.to_string();
            assert_eq!(e.xid.is_none(), input.len() < 4);
            match e.action() {
                ErrorAction::Reply(_) => {
                    assert_eq!(side, Side::Responder);
                    let reply = e.reply(5).expect("an answer");
                    if !matches!(e.kind, HeaderErrorKind::Version(_)) {
                        let r = RdmaHeader::decode_received(reply, Side::Requester, &limits)
                            .expect("the requester takes the answer");
                        assert_eq!(Some(r.header.xid), e.xid);
                        assert!(matches!(r.header.body, RdmaBody::Error(_)));
                    }
                }
                ErrorAction::Discard | ErrorAction::Close => assert!(e.reply(5).is_none()),
            }
        }
    }
});

//! COMPOUND replies (what the client library decodes): never panic; canonical when decoded.
#![no_main]

use bytes::Bytes;
use libfuzzer_sys::fuzz_target;
use nfs_proto::nfs4::Compound4Res;
use nfs_proto::xdr;

fuzz_target!(|data: &[u8]| {
    let input = Bytes::copy_from_slice(data);
    if let Ok(res) = xdr::from_bytes::<Compound4Res>(input.clone()) {
        assert_eq!(xdr::to_bytes(&res), input);
    }
});

//! CB_COMPOUND requests and replies (the backchannel): never panic; canonical when decoded.
#![no_main]

use bytes::Bytes;
use libfuzzer_sys::fuzz_target;
use nfs_proto::nfs4::{CbCompoundArgs, CbCompoundRes};
use nfs_proto::xdr::{self, Decoder};

fuzz_target!(|data: &[u8]| {
    let Some((&which, rest)) = data.split_first() else { return };
    let input = Bytes::copy_from_slice(rest);
    if which & 1 == 0 {
        let _ = CbCompoundArgs::decode_partial(&mut Decoder::new(input.clone()));
        if let Ok(args) = xdr::from_bytes::<CbCompoundArgs>(input.clone()) {
            assert_eq!(xdr::to_bytes(&args), input);
        }
    } else if let Ok(res) = xdr::from_bytes::<CbCompoundRes>(input.clone()) {
        assert_eq!(xdr::to_bytes(&res), input);
    }
});

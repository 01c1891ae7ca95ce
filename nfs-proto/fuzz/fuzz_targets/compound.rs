//! COMPOUND requests: partial and strict decoding never panic; a strict decode is canonical
//! (re-encodes to the input); typed attributes inside never panic either.
#![no_main]

use bytes::Bytes;
use libfuzzer_sys::fuzz_target;
use nfs_proto::nfs4::attr::FileAttrs;
use nfs_proto::nfs4::{Compound4Args, NfsArgop4};
use nfs_proto::xdr::{self, Decoder};

fuzz_target!(|data: &[u8]| {
    let input = Bytes::copy_from_slice(data);
    if let Ok((args, _)) = Compound4Args::decode_partial(&mut Decoder::new(input.clone())) {
        for op in &args.argarray {
            let f = match op {
                NfsArgop4::SetAttr(a) => &a.obj_attributes,
                NfsArgop4::Verify(a) => &a.obj_attributes,
                NfsArgop4::NVerify(a) => &a.obj_attributes,
                NfsArgop4::Create(a) => &a.createattrs,
                _ => continue,
            };
            if let Ok(attrs) = FileAttrs::from_fattr(f) {
                let again = attrs.to_fattr(&attrs.mask());
                assert_eq!(FileAttrs::from_fattr(&again).ok(), Some(attrs));
            }
        }
    }
    if let Ok(args) = xdr::from_bytes::<Compound4Args>(input.clone()) {
        assert_eq!(xdr::to_bytes(&args), input);
    }
});

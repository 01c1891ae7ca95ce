//! pNFS layout-type bodies as a client or the metadata server gets them inside opaque fields
//! (a LAYOUTGET's layout, a GETDEVICEINFO address, a LAYOUTRETURN report, a LAYOUTSTATS
//! update, a layout hint), for the file and the flex files layout types: no decoder panics
//! or allocates past its input, and whatever decodes re-encodes to the same bytes. The first
//! byte picks the structure.
#![no_main]

use bytes::Bytes;
use libfuzzer_sys::fuzz_target;
use nfs_proto::nfs4::layout_files::{
    Nfsv41FileLayout4, Nfsv41FileLayoutDsAddr4, Nfsv41FileLayouthint4,
};
use nfs_proto::nfs4::layout_flex::{
    FfDeviceAddr4, FfLayout4, FfLayouthint4, FfLayoutreturn4, FfLayoutupdate4,
};
use nfs_proto::nfs4::{LayoutContent4, Layouttype4};
use nfs_proto::xdr::{from_bytes, to_bytes, Xdr};

fn round_trip<T: Xdr + PartialEq + core::fmt::Debug>(b: &Bytes) {
    if let Ok(v) = from_bytes::<T>(b.clone()) {
        assert_eq!(&to_bytes(&v), b);
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&which, rest)) = data.split_first() else { return };
    let b = Bytes::copy_from_slice(rest);
    match which % 8 {
        0 => round_trip::<Nfsv41FileLayout4>(&b),
        1 => round_trip::<Nfsv41FileLayoutDsAddr4>(&b),
        2 => round_trip::<Nfsv41FileLayouthint4>(&b),
        3 => round_trip::<FfLayout4>(&b),
        4 => round_trip::<FfDeviceAddr4>(&b),
        5 => {
            round_trip::<FfLayoutreturn4>(&b);
            let _ = FfLayoutreturn4::from_body(Layouttype4::LAYOUT4_FLEX_FILES, &b);
        }
        6 => round_trip::<FfLayoutupdate4>(&b),
        _ => {
            round_trip::<FfLayouthint4>(&b);
            // Through the typed entry points too, with either type.
            for loc_type in [Layouttype4::LAYOUT4_FLEX_FILES, Layouttype4::LAYOUT4_NFSV4_1_FILES] {
                let c = LayoutContent4 {
                    loc_type,
                    loc_body: b.clone(),
                };
                let _ = FfLayout4::from_content(&c);
                let _ = Nfsv41FileLayout4::from_content(&c);
            }
        }
    }
});

//! Control protocol calls as a data server sees them: the credential check and every
//! procedure's argument decoder never panic on any input, and whatever decodes re-encodes to
//! the same bytes. The first byte picks the procedure; the rest is the credential body's
//! length (one byte), the body, and the arguments.
#![no_main]

use bytes::Bytes;
use libfuzzer_sys::fuzz_target;
use nfs_proto::control::{
    ClusterKey, CtlCommitArgs, CtlReadArgs, CtlWriteArgs, ObjectSizeArgs, RegisterArgs,
    RemoveArgs, RevokeArgs, SetAccessArgs, SizeHintArgs, TruncateArgs, AUTH_PNFS_CTL, PNFS_CTL_PROGRAM,
    PNFS_CTL_VERSION,
};
use nfs_proto::rpc::OpaqueAuth;
use nfs_proto::xdr::{from_bytes, to_bytes, Xdr};

fn round_trip<T: Xdr + PartialEq + core::fmt::Debug>(b: Bytes) {
    if let Ok(v) = from_bytes::<T>(b.clone()) {
        assert_eq!(to_bytes(&v), b);
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&proc_, rest)) = data.split_first() else { return };
    let Some((&cred_len, rest)) = rest.split_first() else { return };
    let (cred, args) = rest.split_at((cred_len as usize).min(rest.len()));
    let key = ClusterKey::from_secret(&[0x42; 32]);
    let cred = OpaqueAuth::new(AUTH_PNFS_CTL, Bytes::copy_from_slice(cred));
    let _ = key.verify_call(&cred, PNFS_CTL_PROGRAM, PNFS_CTL_VERSION, proc_.into(), args);
    let _ = key.open_reply(&cred, Bytes::copy_from_slice(args));
    let args = Bytes::copy_from_slice(args);
    match proc_ % 11 {
        0 => round_trip::<RegisterArgs>(args),
        1 => round_trip::<ObjectSizeArgs>(args),
        2 => round_trip::<TruncateArgs>(args),
        3 => round_trip::<RemoveArgs>(args),
        4 => round_trip::<RevokeArgs>(args),
        5 => round_trip::<SetAccessArgs>(args),
        6 => round_trip::<CtlReadArgs>(args),
        7 => round_trip::<CtlWriteArgs>(args),
        8 => round_trip::<CtlCommitArgs>(args),
        9 => round_trip::<SizeHintArgs>(args),
        _ => {
            round_trip::<nfs_proto::control::RegisterRes>(args.clone());
            round_trip::<nfs_proto::control::HealthRes>(args.clone());
            round_trip::<nfs_proto::control::CtlReadRes>(args.clone());
            round_trip::<nfs_proto::control::CtlWriteRes>(args.clone());
            round_trip::<nfs_proto::control::CtlCommitRes>(args.clone());
            round_trip::<nfs_proto::control::CtlSpaceArgs>(args.clone());
            round_trip::<nfs_proto::control::CtlSeekArgs>(args.clone());
            round_trip::<nfs_proto::control::ObjectSpaceArgs>(args.clone());
            round_trip::<nfs_proto::control::CtlDeallocateRes>(args.clone());
            round_trip::<nfs_proto::control::CtlSeekRes>(args.clone());
            round_trip::<nfs_proto::control::ObjectSpaceRes>(args.clone());
            round_trip::<nfs_proto::control::CtlCopyArgs>(args.clone());
            round_trip::<nfs_proto::control::CtlCopyRes>(args);
        }
    }
});

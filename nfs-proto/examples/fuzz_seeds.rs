//! Writes starting inputs for the fuzz targets (`fuzz/seeds/<target>/`): the RPC records,
//! COMPOUND bodies and record-marked streams of the golden captures, and generated
//! CB_COMPOUND messages (the captures have no callbacks), and control protocol calls signed
//! with the `control_call` target's key.
//!
//! `cargo run -p nfs-proto --example fuzz_seeds -- OUT_DIR` (scripts/fuzz.sh runs it).

#[path = "../tests/support/pcap.rs"]
mod pcap;

use std::path::{Path, PathBuf};

use bytes::Bytes;
use nfs_proto::nfs4::{CbCompoundArgs, CbCompoundRes, NFS4_PROGRAM};
use nfs_proto::rpc::{MsgBody, RpcMsg};
use nfs_proto::xdr;
use proptest::strategy::{Strategy, ValueTree};
use proptest::test_runner::{Config, TestRunner};

fn write(dir: &Path, target: &str, n: usize, data: &[u8]) {
    let d = dir.join(target);
    std::fs::create_dir_all(&d).expect("create seed dir");
    std::fs::write(d.join(format!("seed-{n:04}")), data).expect("write seed");
}

fn main() {
    let out = PathBuf::from(std::env::args().nth(1).expect("usage: fuzz_seeds OUT_DIR"));
    let data = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data");
    let mut n = 0;
    for file in [
        "linux-6.1-knfsd-v41-v42.rec",
        "linux-6.1-knfsd-pnfs-block.rec",
    ] {
        let records = pcap::read_records_file(data.join(file)).expect("read records");
        // A spread of calls and replies, not all 1,200: the fuzzer mutates from there.
        for r in records.iter().step_by(3) {
            n += 1;
            write(&out, "rpc_call", n, &r.data);
            let mut marked = vec![(n % 13 + 1) as u8];
            marked.extend_from_slice(&pcap::mark_record(&r.data, 1 + n % 300));
            write(&out, "record_reader", n, &marked);
            let Ok((msg, body)) = RpcMsg::decode_header(Bytes::from(r.data.clone())) else {
                continue;
            };
            match msg.body {
                MsgBody::Call(c) if c.prog == NFS4_PROGRAM && c.proc_ == 1 => {
                    write(&out, "compound", n, &body)
                }
                MsgBody::Reply(_) if !body.is_empty() => write(&out, "compound_reply", n, &body),
                _ => {}
            }
        }
    }
    let mut runner = TestRunner::new(Config::default());
    let args = proptest::arbitrary::any::<CbCompoundArgs>();
    let res = proptest::arbitrary::any::<CbCompoundRes>();
    for i in 0..64 {
        let mut a = vec![0u8];
        a.extend_from_slice(&xdr::to_bytes(
            &args.new_tree(&mut runner).unwrap().current(),
        ));
        write(&out, "cb_compound", 2 * i, &a);
        let mut r = vec![1u8];
        r.extend_from_slice(&xdr::to_bytes(
            &res.new_tree(&mut runner).unwrap().current(),
        ));
        write(&out, "cb_compound", 2 * i + 1, &r);
    }
    control_seeds(&out, &mut runner);
    println!("wrote seeds under {}", out.display());
}

/// One arbitrary value of `T`, encoded.
fn arbitrary_bytes<T: proptest::arbitrary::Arbitrary + xdr::Xdr>(runner: &mut TestRunner) -> Bytes {
    xdr::to_bytes(
        &proptest::arbitrary::any::<T>()
            .new_tree(runner)
            .unwrap()
            .current(),
    )
}

/// `control_call` inputs: procedure byte, credential length byte, a credential signed with the
/// target's key over the arguments, and arguments of the type the target decodes for it.
fn control_seeds(out: &Path, runner: &mut TestRunner) {
    use nfs_proto::control::{self as ctl, CallStamp, ClusterKey};
    let key = ClusterKey::from_secret(&[0x42; 32]);
    for i in 0..100u32 {
        let proc_ = (i % 11) as u8;
        let args = match proc_ {
            0 => arbitrary_bytes::<ctl::RegisterArgs>(runner),
            1 => arbitrary_bytes::<ctl::ObjectSizeArgs>(runner),
            2 => arbitrary_bytes::<ctl::TruncateArgs>(runner),
            3 => arbitrary_bytes::<ctl::RemoveArgs>(runner),
            4 => arbitrary_bytes::<ctl::RevokeArgs>(runner),
            5 => arbitrary_bytes::<ctl::SetAccessArgs>(runner),
            6 => arbitrary_bytes::<ctl::CtlReadArgs>(runner),
            7 => arbitrary_bytes::<ctl::CtlWriteArgs>(runner),
            8 => arbitrary_bytes::<ctl::CtlCommitArgs>(runner),
            9 => arbitrary_bytes::<ctl::SizeHintArgs>(runner),
            _ => match (i / 11) % 4 {
                0 => arbitrary_bytes::<ctl::HealthRes>(runner),
                1 => arbitrary_bytes::<ctl::CtlReadRes>(runner),
                2 => arbitrary_bytes::<ctl::CtlWriteRes>(runner),
                _ => arbitrary_bytes::<ctl::CtlCommitRes>(runner),
            },
        };
        let stamp = CallStamp {
            node: 0,
            to: ctl::DsBoot {
                ds_id: 1 + i % 3,
                boot: [i as u8; ctl::BOOT_NONCE_LEN],
            },
            time_ms: 1_790_000_000_000 + u64::from(i),
            nonce: u64::from(i),
        };
        let cred = key.sign_call(
            stamp,
            ctl::PNFS_CTL_PROGRAM,
            ctl::PNFS_CTL_VERSION,
            u32::from(proc_),
            std::slice::from_ref(&args),
        );
        let mut seed = vec![proc_, cred.body.len() as u8];
        seed.extend_from_slice(&cred.body);
        seed.extend_from_slice(&args);
        write(out, "control_call", i as usize, &seed);
    }
}

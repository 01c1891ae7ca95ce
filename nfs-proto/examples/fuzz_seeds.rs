//! Writes starting inputs for the fuzz targets (`fuzz/seeds/<target>/`): the RPC records,
//! COMPOUND bodies and record-marked streams of the golden captures, and generated
//! CB_COMPOUND messages (the captures have no callbacks), control protocol calls signed
//! with the `control_call` target's key, RPC-over-RDMA transport headers and private data
//! (`rdma_header`, `rdma_private_data`; no capture of RDMA traffic is at hand), and generated
//! file and flex files layout bodies (`layout_bodies`).
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
    rdma_seeds(&out, &mut runner);
    layout_seeds(&out, &mut runner);
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

/// `layout_bodies` inputs: the selector byte of the structure, then an arbitrary value of it.
fn layout_seeds(out: &Path, runner: &mut TestRunner) {
    use nfs_proto::nfs4::layout_files as files;
    use nfs_proto::nfs4::layout_flex as flex;
    for i in 0..16usize {
        let bodies = [
            arbitrary_bytes::<files::Nfsv41FileLayout4>(runner),
            arbitrary_bytes::<files::Nfsv41FileLayoutDsAddr4>(runner),
            arbitrary_bytes::<files::Nfsv41FileLayouthint4>(runner),
            arbitrary_bytes::<flex::FfLayout4>(runner),
            arbitrary_bytes::<flex::FfDeviceAddr4>(runner),
            arbitrary_bytes::<flex::FfLayoutreturn4>(runner),
            arbitrary_bytes::<flex::FfLayoutupdate4>(runner),
            arbitrary_bytes::<flex::FfLayouthint4>(runner),
        ];
        for (which, body) in bodies.iter().enumerate() {
            let mut seed = vec![which as u8];
            seed.extend_from_slice(body);
            write(out, "layout_bodies", i * bodies.len() + which, &seed);
        }
    }
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

/// `rdma_header` inputs: a selector byte (bit 0: requester, bit 1: small limits) and a header,
/// generated or taken from the RFC 8166 shapes (short, chunked, long call, long reply, errors),
/// each `RDMA_MSG` followed by an RPC message starting with its XID. `rdma_private_data`
/// inputs: the eight bytes of a few peers, one padded as InfiniBand pads it.
fn rdma_seeds(out: &Path, runner: &mut TestRunner) {
    use nfs_proto::rdma::{InlineSize, PrivateData, RdmaBody, RdmaHeader};
    let words = |w: &[u32]| -> Vec<u8> { w.iter().flat_map(|w| w.to_be_bytes()).collect() };
    let xid = 0x6b5a_0001;
    let shapes = [
        (
            0u8,
            words(&[xid, 1, 32, 0, 0, 0, 0, xid, 0, 2, 100003, 4, 1]),
        ),
        (
            0,
            words(&[xid, 1, 32, 0, 1, 132, 9, 8192, 0x7f00, 0x1000, 0, 0, 0, xid]),
        ),
        (
            0,
            words(&[
                xid, 1, 32, 0, 0, 1, 2, 9, 4096, 0, 0, 10, 4096, 0, 4096, 0, 0, xid,
            ]),
        ),
        (
            0,
            words(&[
                xid, 1, 8, 1, 1, 0, 9, 2048, 0, 0, 0, 0, 1, 1, 10, 8192, 0, 0,
            ]),
        ),
        (1, words(&[xid, 1, 16, 1, 0, 0, 1, 1, 10, 5000, 0, 0])),
        (1, words(&[xid, 1, 16, 4, 1, 1, 1])),
        (1, words(&[xid, 1, 16, 4, 2])),
        (0, words(&[xid, 2, 16, 0])),
        (0, words(&[xid, 1, 16, 3])),
    ];
    for (i, (selector, header)) in shapes.into_iter().enumerate() {
        let mut seed = vec![selector];
        seed.extend(header);
        write(out, "rdma_header", i, &seed);
    }
    let strategy = proptest::arbitrary::any::<RdmaHeader>();
    for i in 0..64 {
        let header = strategy.new_tree(runner).unwrap().current();
        let mut seed = vec![(i % 4) as u8];
        seed.extend_from_slice(&xdr::to_bytes(&header));
        if let RdmaBody::Msg(_) = header.body {
            seed.extend(header.xid.to_be_bytes());
        }
        write(out, "rdma_header", 100 + i, &seed);
    }
    for (i, (inv, send, recv)) in [
        (true, 4096, 4096),
        (false, 1024, 1024),
        (true, 262_144, 32_768),
    ]
    .into_iter()
    .enumerate()
    {
        let p = PrivateData {
            remote_invalidation: inv,
            send_size: InlineSize::from_bytes(send).unwrap(),
            recv_size: InlineSize::from_bytes(recv).unwrap(),
        };
        let mut seed = p.to_bytes().to_vec();
        if i == 2 {
            seed.resize(92, 0);
        }
        write(out, "rdma_private_data", i, &seed);
    }
}

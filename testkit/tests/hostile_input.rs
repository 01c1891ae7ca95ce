//! Malformed input from the network against every port of a striped cluster, on the
//! in-memory cluster (issue 17: "the malformed-input cases kept as tests"): the MDS's NFS
//! port, each data server's NFS port and each data server's control port get a thousand
//! malformed records each (random bytes, hostile record marks, valid calls truncated, with
//! bytes flipped and with lengths blown up), built from a fixed seed so that a failure
//! reproduces. Nothing may panic (a panic hook counts them, in any task), and afterwards every
//! server still serves: a new client gets a session on the MDS and on each data server, and
//! the MDS still has every data server registered and up, never re-registered.
//!
//! The bytes reach each server's connection handler (record marking, RPC and XDR decoding,
//! the control service's authentication) as they would from a socket: the in-process streams
//! carry the same bytes and the same end of stream after the sender's shutdown, so the socket
//! itself is not what is tested here (the loopback suites keep the TCP listeners covered).

use std::io;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use mds::Config;
use nfs_proto::control::{CtlProc, PNFS_CTL_PROGRAM, PNFS_CTL_VERSION};
use nfs_proto::nfs4::*;
use nfs_proto::record::record_header;
use nfs_proto::rpc::{AuthFlavor, OpaqueAuth, RpcMsg};
use nfs_proto::xdr::{self, Encoder, Utf8String};
use testkit::cluster::{ds_control_addr, Cluster};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// Cases sent to each port.
const CASES: u64 = 1000;

static PANICS: AtomicUsize = AtomicUsize::new(0);

/// Deterministic pseudo-random numbers (xorshift64), so a failing case reproduces.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
    fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }
}

/// One RPC record (a single last fragment) of `msg` with `args` after it.
fn record(msg: RpcMsg, args: Bytes) -> Vec<u8> {
    let mut e = Encoder::new();
    msg.encode_with_pieces(&mut e, [args]);
    let body: Vec<u8> = e.into_pieces().iter().flat_map(|p| p.to_vec()).collect();
    let mut rec = record_header(body.len() as u32, true).to_vec();
    rec.extend_from_slice(&body);
    rec
}

fn auth_sys_cred() -> OpaqueAuth {
    let p = nfs_proto::rpc::AuthSysParms {
        stamp: 1,
        machinename: Utf8String::from("hostile"),
        uid: 1000,
        gid: 1000,
        gids: vec![1, 2, 3],
    };
    OpaqueAuth::new(AuthFlavor::AUTH_SYS, xdr::to_bytes(&p))
}

/// Well-formed NFS calls to start the mutations from: EXCHANGE_ID, a sessionless
/// PUTROOTFH+GETATTR, and a SEQUENCE+PUTFH+WRITE under a made-up session.
fn nfs_bases() -> Vec<Vec<u8>> {
    let compound = |minor: u32, ops: Vec<NfsArgop4>| {
        xdr::to_bytes(&Compound4Args {
            tag: Utf8String::from("hostile"),
            minorversion: minor,
            argarray: ops,
        })
    };
    let call = |args: Bytes| {
        record(
            RpcMsg::call(
                7,
                NFS4_PROGRAM,
                NFS_V4,
                NFSPROC4_COMPOUND,
                auth_sys_cred(),
                OpaqueAuth::none(),
            ),
            args,
        )
    };
    vec![
        call(compound(
            1,
            vec![NfsArgop4::ExchangeId(ExchangeIdArgs {
                eia_clientowner: ClientOwner4 {
                    co_verifier: [1; 8],
                    co_ownerid: Bytes::from_static(b"hostile-owner"),
                },
                eia_flags: 0,
                eia_state_protect: StateProtect4A::None,
                eia_client_impl_id: vec![],
            })],
        )),
        call(compound(
            1,
            vec![
                NfsArgop4::PutRootFh,
                NfsArgop4::GetAttr(GetAttrArgs {
                    attr_request: Bitmap4::from_bits([nfs_proto::nfs4::attr::FATTR4_SIZE]),
                }),
            ],
        )),
        call(compound(
            1,
            vec![
                NfsArgop4::Sequence(SequenceArgs {
                    sa_sessionid: [3; 16],
                    sa_sequenceid: 1,
                    sa_slotid: 0,
                    sa_highest_slotid: 0,
                    sa_cachethis: false,
                }),
                NfsArgop4::PutFh(PutFhArgs {
                    object: NfsFh4(Bytes::from(vec![2u8; 56])),
                }),
                NfsArgop4::Write(WriteArgs {
                    stateid: Stateid4::default(),
                    offset: 0,
                    stable: StableHow4::FILE_SYNC4,
                    data: Bytes::from(vec![9u8; 300]),
                }),
            ],
        )),
    ]
}

/// Well-formed control calls (with a credential of the right flavor and a made-up MAC): NULL
/// and TRUNCATE.
fn control_bases() -> Vec<Vec<u8>> {
    let cred = OpaqueAuth::new(
        nfs_proto::control::AUTH_PNFS_CTL,
        Bytes::from(vec![0u8; 76]),
    );
    [CtlProc::CTLPROC_NULL, CtlProc::CTLPROC_TRUNCATE]
        .into_iter()
        .map(|p| {
            record(
                RpcMsg::call(
                    9,
                    PNFS_CTL_PROGRAM,
                    PNFS_CTL_VERSION,
                    p.0,
                    cred.clone(),
                    OpaqueAuth::none(),
                ),
                Bytes::from(vec![0u8, 0, 0, 0, 0, 0, 0, 5, 0, 0, 0, 1, 0, 0, 0, 0]),
            )
        })
        .collect()
}

/// Case `n` for a port whose well-formed calls are `bases`.
fn case(rng: &mut Rng, bases: &[Vec<u8>], n: u64) -> Vec<u8> {
    let base = &bases[rng.below(bases.len() as u64) as usize];
    match n % 6 {
        // Random bytes, no record marking at all.
        0 => {
            let len = rng.below(4096) as usize;
            rng.bytes(len)
        }
        // A record mark claiming anything (up to 2^31 - 1, last or not) and little behind it.
        1 => {
            let claimed = rng.next() as u32;
            let mut v = claimed.to_be_bytes().to_vec();
            let len = rng.below(1024) as usize;
            v.extend(rng.bytes(len));
            v
        }
        // A valid call cut short.
        2 => base[..rng.below(base.len() as u64) as usize].to_vec(),
        // A valid call with bytes flipped behind its record mark.
        3 => {
            let mut v = base.clone();
            for _ in 0..=rng.below(8) {
                let at = 4 + rng.below(v.len() as u64 - 4) as usize;
                v[at] ^= (rng.next() as u8) | 1;
            }
            v
        }
        // A valid call with one 4-byte word (a length, a count, a discriminant) blown up.
        4 => {
            let mut v = base.clone();
            let words = (v.len() - 4) / 4;
            let at = 4 + 4 * rng.below(words as u64) as usize;
            let hostile = [u32::MAX, 0x7fff_ffff, 0x8000_0000, 0x0100_0000, 65_536];
            let w = hostile[rng.below(hostile.len() as u64) as usize];
            v[at..at + 4].copy_from_slice(&w.to_be_bytes());
            v
        }
        // A valid call split into many fragments, the last one never marked last.
        _ => {
            let body = &base[4..];
            let mut v = Vec::new();
            for chunk in body.chunks(1 + rng.below(16) as usize) {
                v.extend(record_header(chunk.len() as u32, false));
                v.extend_from_slice(chunk);
            }
            v
        }
    }
}

/// A port of the cluster.
#[derive(Clone, Copy, Debug)]
enum Port {
    /// The MDS's NFS service.
    Mds,
    /// Data server `id`'s NFS service.
    DsNfs(u16),
    /// Data server `id`'s control service.
    DsControl(u16),
}

trait Stream: AsyncRead + AsyncWrite + Send + Unpin {}

impl<T: AsyncRead + AsyncWrite + Send + Unpin> Stream for T {}

/// A new connection to `port`.
async fn connect(k: &Cluster, port: Port) -> io::Result<Box<dyn Stream>> {
    Ok(match port {
        Port::Mds => Box::new(k.connect_mds()),
        Port::DsNfs(id) => Box::new(k.connect_ds(id)?),
        Port::DsControl(id) => {
            let c = k.connector().connect(ds_control_addr(id), id).await?;
            Box::new(c.stream)
        }
    })
}

/// Sends `bytes` on a new connection to `port`, closes the sending side and reads whatever
/// comes back until the server closes (or 5 s). Returns false if the connection could not be
/// made.
async fn send(k: Arc<Cluster>, port: Port, bytes: Vec<u8>) -> bool {
    let Ok(mut s) = connect(&k, port).await else {
        return false;
    };
    let _ = s.write_all(&bytes).await;
    let _ = s.shutdown().await;
    let mut sink = vec![0u8; 1 << 16];
    let _ = tokio::time::timeout(Duration::from_secs(5), async {
        while let Ok(n) = s.read(&mut sink).await {
            if n == 0 {
                break;
            }
        }
    })
    .await;
    true
}

/// Every case for one port, 32 connections at a time.
async fn hammer(k: Arc<Cluster>, port: Port, bases: Vec<Vec<u8>>, seed: u64) {
    let mut rng = Rng(seed);
    let cases: Vec<Vec<u8>> = (0..CASES).map(|n| case(&mut rng, &bases, n)).collect();
    for batch in cases.chunks(32) {
        let mut set = tokio::task::JoinSet::new();
        for c in batch {
            set.spawn(send(k.clone(), port, c.clone()));
        }
        while let Some(sent) = set.join_next().await {
            assert!(sent.unwrap(), "{port:?} stopped accepting");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_records_on_every_port_of_a_striped_cluster_panic_nothing() {
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        PANICS.fetch_add(1, Ordering::SeqCst);
        default_hook(info);
    }));
    let k = Arc::new(
        Cluster::builder()
            .data_servers(3)
            .configure(|c: &mut Config| c.cluster.layouts = true)
            .start()
            .await,
    );
    let mds = k.mds().clone();
    let ids: Vec<u16> = (1..=3).collect();
    let registrations: Vec<u64> = ids
        .iter()
        .map(|&id| mds.devices().status(id).unwrap().registrations)
        .collect();

    let mut ports = vec![(Port::Mds, nfs_bases())];
    for &id in &ids {
        ports.push((Port::DsNfs(id), nfs_bases()));
        ports.push((Port::DsControl(id), control_bases()));
    }
    let total = ports.len() as u64 * CASES;
    let mut set = tokio::task::JoinSet::new();
    for (i, (port, bases)) in ports.into_iter().enumerate() {
        set.spawn(hammer(
            k.clone(),
            port,
            bases,
            0x9e37_79b9_7f4a_7c15 ^ i as u64,
        ));
    }
    while let Some(done) = set.join_next().await {
        done.unwrap();
    }
    eprintln!("{total} malformed records sent to 7 ports");

    assert_eq!(
        PANICS.load(Ordering::SeqCst),
        0,
        "a malformed record panicked"
    );
    // Everyone still serves: a new client gets a session on the MDS and on every data
    // server, and reads the root's attributes on the MDS.
    let mut c = k.client("after-the-storm").await;
    let r = c
        .call(vec![
            NfsArgop4::PutRootFh,
            NfsArgop4::GetAttr(GetAttrArgs {
                attr_request: Bitmap4::from_bits([nfs_proto::nfs4::attr::FATTR4_TYPE]),
            }),
        ])
        .await;
    assert_eq!(r.status, NfsStat4::NFS4_OK, "{r:?}");
    for &id in &ids {
        k.ds_client(id, &format!("after-the-storm-{id}")).await;
        let s = mds.devices().status(id).unwrap();
        assert!(s.up, "data server {id} down after the storm: {s:?}");
        assert_eq!(
            s.registrations,
            registrations[usize::from(id) - 1],
            "data server {id} registered again: its control service restarted"
        );
    }
}

//! A raw NFSv4.1 test client for integration tests: starts an MDS on a loopback port with its
//! data under a temporary directory, connects, sets up a session, and sends COMPOUNDs built
//! from `nfs-proto` types.
#![allow(dead_code)]

pub mod callback;
pub mod cluster;
pub mod ds;
pub mod layout;
pub mod open;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use mds::{Config, Mds};
use nfs_proto::nfs4::*;
use nfs_proto::rpc::{AuthFlavor, AuthSysParms, OpaqueAuth};
use nfs_proto::transport::{self, CallError, Conn, ConnLimits, NoCalls};
use nfs_proto::xdr::{self, Utf8String};
pub use nfs_server::ManualClock;

/// A running server and its data directory.
pub struct Server {
    pub mds: Arc<Mds>,
    pub addr: SocketAddr,
    pub dir: tempfile::TempDir,
}

/// Starts a server on 127.0.0.1 with a fresh data directory (grace off, short lease).
pub async fn server() -> Server {
    let dir = tempfile::tempdir().expect("tempdir");
    server_in(dir).await
}

/// Starts a server over an existing data directory (for restart tests).
pub async fn server_in(dir: tempfile::TempDir) -> Server {
    let (mds, addr) = start_mds(dir.path(), 0, 10).await;
    Server { mds, addr, dir }
}

/// Starts a server over `dir` with the given grace and lease times (seconds): an MDS without
/// data servers, which keeps file data itself and grants no layouts (layout tests start a
/// cluster: `cluster::start_cluster`).
pub async fn start_mds(dir: &std::path::Path, grace: u32, lease: u32) -> (Arc<Mds>, SocketAddr) {
    start_with(Config {
        listen: "127.0.0.1:0".parse().unwrap(),
        data_dir: dir.to_path_buf(),
        grace_time: grace,
        lease_time: lease,
        cluster: mds::config::ClusterConfig {
            data_servers: Vec::new(),
            ..Default::default()
        },
        ..Config::default()
    })
    .await
}

/// Starts a server with this configuration on a loopback port of its own (not validated:
/// tests may use leases shorter than an operator may configure).
pub async fn start_with(cfg: Config) -> (Arc<Mds>, SocketAddr) {
    start_on(cfg, nfs_server::clock::system()).await
}

/// [`start_with`] on `clock`: the server's leases, grace period, recall deadlines and
/// reapers run on it (a [`ManualClock`] the test moves on instead of sleeping).
pub async fn start_on(cfg: Config, clock: nfs_server::SharedClock) -> (Arc<Mds>, SocketAddr) {
    let mds = Mds::open_with(cfg, clock).expect("open mds");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(mds.clone().serve_on(listener));
    (mds, addr)
}

/// Moves `clock` on by `d`, then lets the server's tasks it woke (the lease reaper, the
/// recall deadlines) run before the test goes on: they were woken first, so a few turns of
/// the test's runtime run them.
pub async fn advance(clock: &ManualClock, d: Duration) {
    clock.advance(d);
    for _ in 0..8 {
        tokio::task::yield_now().await;
    }
}

/// A connection with a session.
pub struct Client {
    pub conn: Conn,
    pub clientid: u64,
    pub sessionid: Sessionid4,
    pub seq: u32,
    pub uid: u32,
}

/// AUTH_SYS credentials for `uid`.
pub fn auth_sys(uid: u32) -> OpaqueAuth {
    auth_sys_groups(uid, uid, &[])
}

/// AUTH_SYS credentials for `uid` with primary group `gid` and supplementary `gids`.
pub fn auth_sys_groups(uid: u32, gid: u32, gids: &[u32]) -> OpaqueAuth {
    let p = AuthSysParms {
        stamp: 1,
        machinename: Utf8String::from("test"),
        uid,
        gid,
        gids: gids.to_vec(),
    };
    OpaqueAuth::new(AuthFlavor::AUTH_SYS, xdr::to_bytes(&p))
}

/// Opens a connection (no session yet).
pub async fn connect(addr: SocketAddr) -> Conn {
    let sock = tokio::net::TcpStream::connect(addr).await.unwrap();
    let local = sock.local_addr().unwrap();
    let (conn, run) = transport::start(
        sock,
        0,
        addr,
        local,
        Arc::new(NoCalls),
        ConnLimits::default(),
    );
    tokio::spawn(run);
    conn
}

/// Sends one COMPOUND with the given ops and minor version, as `uid`.
pub async fn compound_on(
    conn: &Conn,
    uid: u32,
    minor: u32,
    ops: Vec<NfsArgop4>,
) -> Result<Compound4Res, CallError> {
    compound_as(conn, auth_sys(uid), minor, ops).await
}

/// Sends one COMPOUND with the given ops and minor version, with this credential.
pub async fn compound_as(
    conn: &Conn,
    cred: OpaqueAuth,
    minor: u32,
    ops: Vec<NfsArgop4>,
) -> Result<Compound4Res, CallError> {
    let args = Compound4Args {
        tag: Utf8String::from("test"),
        minorversion: minor,
        argarray: ops,
    };
    let body = conn
        .call(
            NFS4_PROGRAM,
            NFS_V4,
            NFSPROC4_COMPOUND,
            cred,
            vec![xdr::to_bytes(&args)],
        )
        .await?;
    Ok(xdr::from_bytes::<Compound4Res>(body).expect("reply decodes"))
}

/// The fore channel attributes the test client asks for.
pub fn channel() -> ChannelAttrs4 {
    ChannelAttrs4 {
        ca_headerpadsize: 0,
        ca_maxrequestsize: 1 << 20,
        ca_maxresponsesize: 1 << 20,
        ca_maxresponsesize_cached: 64 << 10,
        ca_maxoperations: 16,
        ca_maxrequests: 8,
        ca_rdma_ird: vec![],
    }
}

impl Client {
    /// EXCHANGE_ID + CREATE_SESSION + RECLAIM_COMPLETE with the given owner name.
    pub async fn new(addr: SocketAddr, owner: &str) -> Client {
        let mut c = Self::reclaiming(addr, owner).await;
        let r = c
            .call(vec![NfsArgop4::ReclaimComplete(ReclaimCompleteArgs {
                rca_one_fs: false,
            })])
            .await;
        assert_eq!(r.status, NfsStat4::NFS4_OK, "{r:?}");
        c
    }

    /// EXCHANGE_ID + CREATE_SESSION only: a client that may still reclaim after a restart.
    pub async fn reclaiming(addr: SocketAddr, owner: &str) -> Client {
        Self::with_fore_channel(addr, owner, channel()).await
    }

    /// EXCHANGE_ID + CREATE_SESSION asking for these fore channel attributes (no
    /// RECLAIM_COMPLETE).
    pub async fn with_fore_channel(addr: SocketAddr, owner: &str, fore: ChannelAttrs4) -> Client {
        Self::setup(connect(addr).await, owner, fore, 0).await
    }

    /// EXCHANGE_ID + CREATE_SESSION on an open connection, with these fore channel
    /// attributes and `csa_flags` (CONN_BACK_CHAN for a connection whose handler answers
    /// callbacks).
    pub async fn setup(conn: Conn, owner: &str, fore: ChannelAttrs4, flags: u32) -> Client {
        Self::setup_instance(conn, owner, [7; 8], fore, flags).await
    }

    /// [`setup`](Self::setup) as the client instance `verifier` (a new verifier is the same
    /// client after a restart, RFC 8881 section 2.4).
    pub async fn setup_instance(
        conn: Conn,
        owner: &str,
        verifier: [u8; 8],
        fore: ChannelAttrs4,
        flags: u32,
    ) -> Client {
        let ex = ExchangeIdArgs {
            eia_clientowner: ClientOwner4 {
                co_verifier: verifier,
                co_ownerid: Bytes::copy_from_slice(owner.as_bytes()),
            },
            eia_flags: 0,
            eia_state_protect: StateProtect4A::None,
            eia_client_impl_id: vec![],
        };
        let r = compound_on(&conn, 0, 1, vec![NfsArgop4::ExchangeId(ex)])
            .await
            .unwrap();
        let NfsResop4::ExchangeId(ExchangeIdRes::Ok(ok)) = &r.resarray[0] else {
            panic!("EXCHANGE_ID failed: {r:?}")
        };
        let cs = CreateSessionArgs {
            csa_clientid: ok.eir_clientid,
            csa_sequence: ok.eir_sequenceid,
            csa_flags: flags,
            csa_fore_chan_attrs: fore,
            csa_back_chan_attrs: ChannelAttrs4 {
                ca_maxrequests: 2,
                ca_maxoperations: 4,
                ..channel()
            },
            csa_cb_program: callback::CB_PROGRAM,
            csa_sec_parms: vec![CallbackSecParms4::AuthNone],
        };
        let r = compound_on(&conn, 0, 1, vec![NfsArgop4::CreateSession(cs)])
            .await
            .unwrap();
        let NfsResop4::CreateSession(CreateSessionRes::Ok(s)) = &r.resarray[0] else {
            panic!("CREATE_SESSION failed: {r:?}")
        };
        Client {
            conn,
            clientid: ok.eir_clientid,
            sessionid: s.csr_sessionid,
            seq: 0,
            uid: 0,
        }
    }

    /// The SEQUENCE for the next request on slot 0, asking for the reply to be cached.
    pub fn sequence(&mut self) -> NfsArgop4 {
        self.sequence_caching(true)
    }

    /// The SEQUENCE for the next request on slot 0.
    pub fn sequence_caching(&mut self, cachethis: bool) -> NfsArgop4 {
        self.seq += 1;
        NfsArgop4::Sequence(SequenceArgs {
            sa_sessionid: self.sessionid,
            sa_sequenceid: self.seq,
            sa_slotid: 0,
            sa_highest_slotid: 0,
            sa_cachethis: cachethis,
        })
    }

    /// SEQUENCE followed by `ops`, in minor version 1. The reply is asked to be cached
    /// unless the COMPOUND reads data, a directory or extended attributes: like a real
    /// client, which asks for non-idempotent requests only, and whose reads would not fit
    /// `ca_maxresponsesize_cached`.
    pub async fn call(&mut self, ops: Vec<NfsArgop4>) -> Compound4Res {
        self.call_minor(1, ops).await
    }

    /// [`Self::call`] in another minor version (2 for the NFSv4.2 operations).
    pub async fn call_minor(&mut self, minor: u32, ops: Vec<NfsArgop4>) -> Compound4Res {
        let cachethis = !ops.iter().any(|o| {
            matches!(
                o,
                NfsArgop4::Read(_)
                    | NfsArgop4::ReadPlus(_)
                    | NfsArgop4::ReadDir(_)
                    | NfsArgop4::GetXattr(_)
                    | NfsArgop4::ListXattrs(_)
            )
        });
        self.send(minor, cachethis, ops).await
    }

    /// SEQUENCE with this `sa_cachethis`, followed by `ops`.
    pub async fn call_caching(&mut self, cachethis: bool, ops: Vec<NfsArgop4>) -> Compound4Res {
        self.send(1, cachethis, ops).await
    }

    async fn send(&mut self, minor: u32, cachethis: bool, ops: Vec<NfsArgop4>) -> Compound4Res {
        let mut all = vec![self.sequence_caching(cachethis)];
        all.extend(ops);
        compound_on(&self.conn, self.uid, minor, all)
            .await
            .expect("rpc")
    }
}

/// `LOOKUP` ops for each component of a path.
pub fn lookups(path: &str) -> Vec<NfsArgop4> {
    path.split('/')
        .filter(|c| !c.is_empty())
        .map(|c| {
            NfsArgop4::Lookup(LookupArgs {
                objname: Utf8String::from(c),
            })
        })
        .collect()
}

/// The status of the last result.
pub fn last_status(r: &Compound4Res) -> NfsStat4 {
    r.resarray
        .last()
        .map(|x| x.status())
        .unwrap_or(NfsStat4::NFS4_OK)
}

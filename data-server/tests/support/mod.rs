//! A raw NFSv4.1 test client for the data server: starts a DS on a loopback port with its
//! objects under a temporary directory and the keys of a made-up MDS, sets up a session as the
//! Linux client does with a DS (EXCHANGE_ID asking for the DS role), and sends COMPOUNDs built
//! from `nfs-proto` types. The test plays the MDS: it mints stateids and DS filehandles with
//! the same derived keys.
#![allow(dead_code)]

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use cluster::ds_fh::{DsFh, DsFhCodec};
use cluster::stateid::{Holder, StateidKind, StateidMinter};
use data_server::{DataServer, DsKeys, DsOptions};
use nfs_proto::nfs4::*;
use nfs_proto::rpc::{AuthFlavor, AuthSysParms, OpaqueAuth};
use nfs_proto::transport::{self, CallError, Conn, ConnLimits, NoCalls};
use nfs_proto::xdr::{self, Utf8String};

/// The made-up MDS's server key.
pub const SERVER_KEY: [u8; 32] = [0x42; 32];
/// The made-up MDS's boot epoch.
pub const MDS_EPOCH: u16 = 7;

/// The keys the made-up MDS hands its DSs in boot `epoch`.
pub fn keys(epoch: u16) -> DsKeys {
    DsKeys::derive(&SERVER_KEY, epoch)
}

/// A running data server and its object directory.
pub struct Ds {
    pub ds: Arc<DataServer>,
    pub addr: SocketAddr,
    pub dir: tempfile::TempDir,
}

/// Starts DS `id` on 127.0.0.1 with a fresh object directory and the given lease.
pub async fn start_ds(id: u32, lease: Duration) -> Ds {
    start_ds_in(id, lease, tempfile::tempdir().expect("tempdir")).await
}

/// Starts DS `id` over an existing object directory (for restart tests).
pub async fn start_ds_in(id: u32, lease: Duration, dir: tempfile::TempDir) -> Ds {
    let opts = DsOptions {
        lease_time: lease,
        ..DsOptions::new(id)
    };
    start_ds_with(opts, dir).await
}

/// Starts DS `id` with a fresh object directory and the given lease on `clock` (its leases
/// and reaper run on it: tests move a [`ManualClock`](nfs_server::ManualClock) on).
pub async fn start_ds_on(id: u32, lease: Duration, clock: nfs_server::SharedClock) -> Ds {
    let opts = DsOptions {
        lease_time: lease,
        ..DsOptions::new(id)
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let objects = Arc::new(pfs_core::LocalStore::open(dir.path()).expect("object store"));
    let ds = DataServer::with_clock(opts, keys(MDS_EPOCH), objects, clock).expect("open ds");
    serve(ds, dir).await
}

/// Starts a DS with these options over `dir`.
pub async fn start_ds_with(opts: DsOptions, dir: tempfile::TempDir) -> Ds {
    let ds = DataServer::open_local(opts, keys(MDS_EPOCH), dir.path()).expect("open ds");
    serve(ds, dir).await
}

/// Serves `ds` on a loopback port of its own.
async fn serve(ds: Arc<DataServer>, dir: tempfile::TempDir) -> Ds {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(ds.clone().serve_on(listener));
    Ds { ds, addr, dir }
}

/// The client id the made-up MDS gave the test client: its stateids and layouts are this
/// client's.
pub const CLIENT: u64 = 0x5eed;

/// The MDS side of the test: mints stateids and DS filehandles.
pub struct Mds {
    pub minter: StateidMinter,
    pub fh: DsFhCodec,
}

/// The test client's state of `fileid`.
pub fn holder(fileid: u64) -> Holder {
    Holder {
        clientid: CLIENT,
        fileid,
    }
}

impl Mds {
    /// The made-up MDS in boot `epoch`.
    pub fn new(epoch: u16) -> Self {
        let k = keys(epoch);
        Self {
            minter: StateidMinter::new(k.stateid_key, epoch),
            fh: DsFhCodec::new(k.fh_key),
        }
    }

    /// A fresh layout stateid's `other` for the test client's layout of `fileid` (clones of
    /// a minter share its counter, so `&self` will do).
    pub fn layout_stateid(&self, fileid: u64) -> cluster::stateid::Other {
        self.minter
            .clone()
            .mint(StateidKind::Layout, 0, holder(fileid))
            .unwrap()
    }

    /// The DS filehandle of object `stripe` of `fileid` under `layout`, READ or RW.
    pub fn ds_fh_under(
        &self,
        fileid: u64,
        stripe: u16,
        layout: cluster::stateid::Other,
        rw: bool,
    ) -> NfsFh4 {
        self.fh.encode(DsFh {
            stripe,
            fileid,
            generation: 1,
            rw,
            layout,
            clientid: CLIENT,
        })
    }

    /// An open stateid of `fileid` with this share access, seqid 0 as a client sends it to
    /// a DS.
    pub fn open_stateid(&mut self, fileid: u64, access: u8) -> Stateid4 {
        Stateid4 {
            seqid: 0,
            other: self
                .minter
                .mint(StateidKind::Open, access, holder(fileid))
                .unwrap(),
        }
    }

    /// The DS filehandle of object `stripe` of `fileid` under a new RW layout of it.
    pub fn ds_fh(&self, fileid: u64, stripe: u16) -> NfsFh4 {
        self.ds_fh_under(fileid, stripe, self.layout_stateid(fileid), true)
    }
}

/// AUTH_SYS credentials for `uid`.
pub fn auth_sys(uid: u32) -> OpaqueAuth {
    let p = AuthSysParms {
        stamp: 1,
        machinename: Utf8String::from("test"),
        uid,
        gid: uid,
        gids: vec![],
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

/// Sends one COMPOUND in minor version 1 as root.
pub async fn compound_on(conn: &Conn, ops: Vec<NfsArgop4>) -> Compound4Res {
    compound_as(conn, auth_sys(0), ops).await.expect("rpc")
}

/// Sends one COMPOUND in minor version 1 with this credential.
pub async fn compound_as(
    conn: &Conn,
    cred: OpaqueAuth,
    ops: Vec<NfsArgop4>,
) -> Result<Compound4Res, CallError> {
    compound_minor(conn, cred, 1, ops).await
}

/// Sends one COMPOUND in minor version `minor` with this credential.
pub async fn compound_minor(
    conn: &Conn,
    cred: OpaqueAuth,
    minor: u32,
    ops: Vec<NfsArgop4>,
) -> Result<Compound4Res, CallError> {
    let args = Compound4Args {
        tag: Utf8String::from("ds-test"),
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

fn channel() -> ChannelAttrs4 {
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

/// The EXCHANGE_ID the Linux client sends a DS: its usual flags plus the DS role.
pub fn ds_exchange_id(owner: &str) -> ExchangeIdArgs {
    ExchangeIdArgs {
        eia_clientowner: ClientOwner4 {
            co_verifier: [3; 8],
            co_ownerid: Bytes::copy_from_slice(owner.as_bytes()),
        },
        eia_flags: EXCHGID4_FLAG_SUPP_MOVED_REFER
            | EXCHGID4_FLAG_BIND_PRINC_STATEID
            | EXCHGID4_FLAG_USE_PNFS_DS,
        eia_state_protect: StateProtect4A::None,
        eia_client_impl_id: vec![],
    }
}

/// A connection with a session on a DS.
pub struct Client {
    pub conn: Conn,
    pub exchange: ExchangeIdResOk,
    pub sessionid: Sessionid4,
    pub seq: u32,
}

impl Client {
    /// EXCHANGE_ID (DS role) + CREATE_SESSION + RECLAIM_COMPLETE, as the Linux client does.
    pub async fn new(addr: SocketAddr, owner: &str) -> Client {
        let conn = connect(addr).await;
        let r = compound_on(&conn, vec![NfsArgop4::ExchangeId(ds_exchange_id(owner))]).await;
        let NfsResop4::ExchangeId(ExchangeIdRes::Ok(ex)) = &r.resarray[0] else {
            panic!("EXCHANGE_ID failed: {r:?}")
        };
        let cs = CreateSessionArgs {
            csa_clientid: ex.eir_clientid,
            csa_sequence: ex.eir_sequenceid,
            csa_flags: 0,
            csa_fore_chan_attrs: channel(),
            csa_back_chan_attrs: ChannelAttrs4 {
                ca_maxrequests: 2,
                ca_maxoperations: 4,
                ..channel()
            },
            csa_cb_program: 0x4000_0000,
            csa_sec_parms: vec![CallbackSecParms4::AuthNone],
        };
        let r = compound_on(&conn, vec![NfsArgop4::CreateSession(cs)]).await;
        let NfsResop4::CreateSession(CreateSessionRes::Ok(s)) = &r.resarray[0] else {
            panic!("CREATE_SESSION failed: {r:?}")
        };
        let mut c = Client {
            conn,
            exchange: ex.clone(),
            sessionid: s.csr_sessionid,
            seq: 0,
        };
        let r = c
            .call(vec![NfsArgop4::ReclaimComplete(ReclaimCompleteArgs {
                rca_one_fs: false,
            })])
            .await;
        assert_eq!(r.status, NfsStat4::NFS4_OK, "RECLAIM_COMPLETE: {r:?}");
        c
    }

    /// SEQUENCE on slot 0 followed by `ops`.
    pub async fn call(&mut self, ops: Vec<NfsArgop4>) -> Compound4Res {
        self.call_minor(1, ops).await
    }

    /// [`Client::call`] in minor version `minor` (NFSv4.2 operations).
    #[allow(dead_code)]
    pub async fn call_minor(&mut self, minor: u32, ops: Vec<NfsArgop4>) -> Compound4Res {
        self.seq += 1;
        let mut all = vec![self.sequence_at(self.seq)];
        all.extend(ops);
        compound_minor(&self.conn, auth_sys(0), minor, all)
            .await
            .expect("rpc")
    }

    /// The SEQUENCE of slot 0 with this sequence id.
    pub fn sequence_at(&self, seq: u32) -> NfsArgop4 {
        NfsArgop4::Sequence(SequenceArgs {
            sa_sessionid: self.sessionid,
            sa_sequenceid: seq,
            sa_slotid: 0,
            sa_highest_slotid: 0,
            sa_cachethis: false,
        })
    }
}

/// PUTFH of `fh`.
pub fn putfh(fh: &NfsFh4) -> NfsArgop4 {
    NfsArgop4::PutFh(PutFhArgs { object: fh.clone() })
}

/// WRITE of `data` at `offset` under `stateid`.
pub fn write(stateid: Stateid4, offset: u64, stable: StableHow4, data: &[u8]) -> NfsArgop4 {
    NfsArgop4::Write(WriteArgs {
        stateid,
        offset,
        stable,
        data: Bytes::copy_from_slice(data),
    })
}

/// READ of `count` bytes at `offset` under `stateid`.
pub fn read(stateid: Stateid4, offset: u64, count: u32) -> NfsArgop4 {
    NfsArgop4::Read(ReadArgs {
        stateid,
        offset,
        count,
    })
}

/// The status of the last result.
pub fn last_status(r: &Compound4Res) -> NfsStat4 {
    r.resarray
        .last()
        .map(|x| x.status())
        .unwrap_or(NfsStat4::NFS4_OK)
}

//! A raw NFSv4.1 client for the peer tests: COMPOUNDs built from `nfs-proto` types over
//! `nfs_proto::transport`, as `mds/tests/support` does against an in-process MDS, here against
//! server processes (nfs-ganesha, `pnfs server`). It shows that a peer speaks NFSv4.1 before
//! the Rust client's own tests rely on it; every step checks its status and says which
//! server answered what.
#![allow(dead_code)]

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use nfs_proto::nfs4::attr::FileAttrs;
use nfs_proto::nfs4::*;
use nfs_proto::rpc::{AuthFlavor, AuthSysParms, OpaqueAuth};
use nfs_proto::transport::{self, Conn, ConnLimits, NoCalls};
use nfs_proto::xdr::{self, Utf8String};

/// How long one COMPOUND may take before the test gives up on the server.
const CALL_TIMEOUT: Duration = Duration::from_secs(20);

/// Runs `f` to completion on a small runtime of its own (the tests are plain `#[test]`s, so
/// that starting a server, which blocks, runs on no runtime thread).
pub fn block_on<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime")
        .block_on(f)
}

/// AUTH_SYS credentials of root (the exports squash no root).
fn auth_root() -> OpaqueAuth {
    let p = AuthSysParms {
        stamp: 1,
        machinename: Utf8String::from("interop-tests"),
        uid: 0,
        gid: 0,
        gids: vec![],
    };
    OpaqueAuth::new(AuthFlavor::AUTH_SYS, xdr::to_bytes(&p))
}

/// One COMPOUND in minor version 1 on `conn`.
pub async fn compound(conn: &Conn, ops: Vec<NfsArgop4>) -> Compound4Res {
    let args = Compound4Args {
        tag: Utf8String::from("interop-tests"),
        minorversion: 1,
        argarray: ops,
    };
    let call = conn.call(
        NFS4_PROGRAM,
        NFS_V4,
        NFSPROC4_COMPOUND,
        auth_root(),
        vec![xdr::to_bytes(&args)],
    );
    let body = tokio::time::timeout(CALL_TIMEOUT, call)
        .await
        .unwrap_or_else(|_| panic!("{}: no reply in {CALL_TIMEOUT:?}", conn.peer()))
        .unwrap_or_else(|e| panic!("{}: COMPOUND: {e}", conn.peer()));
    xdr::from_bytes::<Compound4Res>(body)
        .unwrap_or_else(|e| panic!("{}: COMPOUND reply does not decode: {e}", conn.peer()))
}

/// A connection with a session: EXCHANGE_ID, CREATE_SESSION, and (by [`Client::new`])
/// RECLAIM_COMPLETE.
pub struct Client {
    pub conn: Conn,
    pub clientid: u64,
    pub sessionid: Sessionid4,
    pub exchange_flags: u32,
    /// The fore channel the server granted in CREATE_SESSION.
    pub fore: ChannelAttrs4,
    seq: u32,
}

/// The fore channel attributes this client asks for.
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
    /// Connects, sets up a session for client owner `owner`, and sends RECLAIM_COMPLETE (RFC
    /// 8881 section 18.51: a client with nothing to reclaim says so before its first OPEN).
    pub async fn new(addr: SocketAddr, owner: &str) -> Client {
        let mut c = Self::session(addr, owner).await;
        let r = c
            .call(vec![NfsArgop4::ReclaimComplete(ReclaimCompleteArgs {
                rca_one_fs: false,
            })])
            .await;
        assert_eq!(
            r.status,
            NfsStat4::NFS4_OK,
            "{addr}: RECLAIM_COMPLETE: {r:?}"
        );
        c
    }

    /// EXCHANGE_ID + CREATE_SESSION (RFC 8881 sections 18.35, 18.36).
    pub async fn session(addr: SocketAddr, owner: &str) -> Client {
        let sock = tokio::net::TcpStream::connect(addr)
            .await
            .unwrap_or_else(|e| panic!("connect {addr}: {e}"));
        let local = sock.local_addr().expect("local address");
        let (conn, run) = transport::start(
            sock,
            0,
            addr,
            local,
            Arc::new(NoCalls),
            ConnLimits::default(),
        );
        tokio::spawn(run);
        let ex = ExchangeIdArgs {
            eia_clientowner: ClientOwner4 {
                co_verifier: [7; 8],
                co_ownerid: Bytes::copy_from_slice(owner.as_bytes()),
            },
            eia_flags: 0,
            eia_state_protect: StateProtect4A::None,
            eia_client_impl_id: vec![],
        };
        let r = compound(&conn, vec![NfsArgop4::ExchangeId(ex)]).await;
        let Some(NfsResop4::ExchangeId(ExchangeIdRes::Ok(ok))) = r.resarray.first() else {
            panic!("{addr}: EXCHANGE_ID failed: {r:?}")
        };
        let (clientid, exchange_flags, sequence) =
            (ok.eir_clientid, ok.eir_flags, ok.eir_sequenceid);
        let cs = CreateSessionArgs {
            csa_clientid: clientid,
            csa_sequence: sequence,
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
        let r = compound(&conn, vec![NfsArgop4::CreateSession(cs)]).await;
        let Some(NfsResop4::CreateSession(CreateSessionRes::Ok(s))) = r.resarray.first() else {
            panic!("{addr}: CREATE_SESSION failed: {r:?}")
        };
        Client {
            conn,
            clientid,
            sessionid: s.csr_sessionid,
            exchange_flags,
            fore: s.csr_fore_chan_attrs.clone(),
            seq: 0,
        }
    }

    /// SEQUENCE on slot 0, then `ops`.
    pub async fn call(&mut self, ops: Vec<NfsArgop4>) -> Compound4Res {
        self.seq += 1;
        let mut all = vec![NfsArgop4::Sequence(SequenceArgs {
            sa_sessionid: self.sessionid,
            sa_sequenceid: self.seq,
            sa_slotid: 0,
            sa_highest_slotid: 0,
            sa_cachethis: true,
        })];
        all.extend(ops);
        compound(&self.conn, all).await
    }

    /// PUTROOTFH and a LOOKUP per component of `path`, then GETFH: the filehandle of `path`
    /// in the server's pseudo file system.
    pub async fn lookup_path(&mut self, path: &str) -> NfsFh4 {
        let mut ops = vec![NfsArgop4::PutRootFh];
        ops.extend(lookups(path));
        ops.push(NfsArgop4::GetFh);
        let r = self.call(ops).await;
        assert_eq!(
            r.status,
            NfsStat4::NFS4_OK,
            "{}: PUTROOTFH+LOOKUP {path}: {r:?}",
            self.conn.peer()
        );
        getfh(&r)
    }

    /// OPEN (create, UNCHECKED4, mode 0644) of `name` in directory `dir` for reading and
    /// writing: its filehandle and open stateid, and the whole OPEN result for what else a
    /// test wants to see (delegation, flags).
    pub async fn open_create(&mut self, dir: &NfsFh4, name: &str) -> (NfsFh4, Stateid4, OpenResOk) {
        let peer = self.conn.peer();
        let attrs = FileAttrs {
            mode: Some(0o644),
            ..FileAttrs::default()
        };
        let r = self
            .call(vec![
                putfh(dir),
                NfsArgop4::Open(OpenArgs {
                    seqid: 0,
                    share_access: OPEN4_SHARE_ACCESS_BOTH,
                    share_deny: OPEN4_SHARE_DENY_NONE,
                    owner: StateOwner4 {
                        clientid: self.clientid,
                        owner: Bytes::from_static(b"interop-tests open owner"),
                    },
                    openhow: Openflag4::Create(Createhow4::Unchecked(
                        attrs.to_fattr(&attrs.mask()),
                    )),
                    claim: OpenClaim4::Null(Utf8String::from(name)),
                }),
                NfsArgop4::GetFh,
            ])
            .await;
        assert_eq!(r.status, NfsStat4::NFS4_OK, "{peer}: OPEN {name}: {r:?}");
        let ok = r
            .resarray
            .iter()
            .find_map(|x| match x {
                NfsResop4::Open(OpenRes::Ok(ok)) => Some(ok.clone()),
                _ => None,
            })
            .expect("OPEN result");
        (getfh(&r), ok.stateid, ok)
    }

    /// WRITE of `data` at `offset` with FILE_SYNC4; checks the count and the stability.
    pub async fn write_sync(&mut self, fh: &NfsFh4, stateid: Stateid4, offset: u64, data: &[u8]) {
        let peer = self.conn.peer();
        let r = self
            .call(vec![
                putfh(fh),
                NfsArgop4::Write(WriteArgs {
                    stateid,
                    offset,
                    stable: StableHow4::FILE_SYNC4,
                    data: Bytes::copy_from_slice(data),
                }),
            ])
            .await;
        let Some(NfsResop4::Write(WriteRes::Ok(w))) = r.resarray.last() else {
            panic!("{peer}: WRITE: {r:?}")
        };
        assert_eq!(w.count as usize, data.len(), "{peer}: short WRITE");
        assert_eq!(
            w.committed,
            StableHow4::FILE_SYNC4,
            "{peer}: WRITE not FILE_SYNC4"
        );
    }

    /// CLOSE of an open stateid.
    pub async fn close(&mut self, fh: &NfsFh4, stateid: Stateid4) {
        let peer = self.conn.peer();
        let r = self
            .call(vec![
                putfh(fh),
                NfsArgop4::Close(CloseArgs {
                    seqid: 0,
                    open_stateid: stateid,
                }),
            ])
            .await;
        assert_eq!(r.status, NfsStat4::NFS4_OK, "{peer}: CLOSE: {r:?}");
    }

    /// OPEN (create), WRITE FILE_SYNC4 of `data` at 0, CLOSE: one file through the server.
    pub async fn create_and_write(&mut self, dir: &NfsFh4, name: &str, data: &[u8]) {
        let (fh, stateid, _) = self.open_create(dir, name).await;
        self.write_sync(&fh, stateid, 0, data).await;
        self.close(&fh, stateid).await;
    }

    /// GETATTR of `bits` (FATTR4_* numbers), decoded.
    pub async fn getattr(&mut self, fh: &NfsFh4, bits: &[u32]) -> FileAttrs {
        let peer = self.conn.peer();
        let r = self
            .call(vec![
                putfh(fh),
                NfsArgop4::GetAttr(GetAttrArgs {
                    attr_request: Bitmap4::from_bits(bits.iter().copied()),
                }),
            ])
            .await;
        let Some(NfsResop4::GetAttr(GetAttrRes::Ok(ok))) = r.resarray.last() else {
            panic!("{peer}: GETATTR: {r:?}")
        };
        FileAttrs::from_fattr(&ok.obj_attributes)
            .unwrap_or_else(|e| panic!("{peer}: GETATTR reply: {e:?}"))
    }

    /// The status of a LAYOUTGET (files layout, RW, the whole file) under an open stateid.
    pub async fn layoutget_status(&mut self, fh: &NfsFh4, stateid: Stateid4) -> NfsStat4 {
        let r = self
            .call(vec![
                putfh(fh),
                NfsArgop4::LayoutGet(LayoutGetArgs {
                    loga_signal_layout_avail: false,
                    loga_layout_type: Layouttype4::LAYOUT4_NFSV4_1_FILES,
                    loga_iomode: Layoutiomode4::LAYOUTIOMODE4_RW,
                    loga_offset: 0,
                    loga_length: u64::MAX,
                    loga_minlength: 0,
                    loga_stateid: stateid,
                    loga_maxcount: 64 << 10,
                }),
            ])
            .await;
        r.status
    }

    /// The status of LOOKUP `name` in directory `dir`.
    pub async fn lookup_status(&mut self, dir: &NfsFh4, name: &str) -> NfsStat4 {
        let r = self
            .call(vec![
                putfh(dir),
                NfsArgop4::Lookup(LookupArgs {
                    objname: Utf8String::from(name),
                }),
            ])
            .await;
        r.status
    }
}

/// PUTFH of `fh`.
pub fn putfh(fh: &NfsFh4) -> NfsArgop4 {
    NfsArgop4::PutFh(PutFhArgs { object: fh.clone() })
}

/// A LOOKUP per component of `path`.
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

/// The filehandle of the COMPOUND's GETFH.
pub fn getfh(r: &Compound4Res) -> NfsFh4 {
    r.resarray
        .iter()
        .find_map(|x| match x {
            NfsResop4::GetFh(GetFhRes::Ok(ok)) => Some(ok.object.clone()),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no GETFH result: {r:?}"))
}

//! The one raw NFSv4.1 test client: COMPOUNDs built from `nfs-proto` types, sent over
//! `nfs_proto::transport` on any byte stream (a TCP socket, or an in-process duplex stream of
//! the in-memory cluster).
//!
//! It does what a test needs and no more: EXCHANGE_ID and CREATE_SESSION (with the back
//! channel on the same connection when asked, answered by [`CbClient`]), SEQUENCE on slot 0
//! with its sequence id counted here, and raw COMPOUNDs for tests that break the rules on
//! purpose. It depends on `nfs-proto` only, so the suites of every role can use it.

mod callback;
mod files;

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use nfs_proto::nfs4::*;
use nfs_proto::rpc::{AuthFlavor, AuthStat, AuthSysParms, OpaqueAuth, RejectedReply};
use nfs_proto::transport::{self, CallError, CallHandler, Conn, ConnLimits, NoCalls};
use nfs_proto::xdr::{self, Utf8String};
use tokio::io::{AsyncRead, AsyncWrite};

use crate::compound::Compound;

pub use callback::{CbClient, RecallAnswer, CB_PROGRAM};
pub use files::{
    client_instance_with_back_channel, client_with_back_channel, fileid_of, open_and_layoutget,
    open_and_layoutget_in, open_and_layoutget_of, open_in_root, rw_layout_fh,
};

/// AUTH_SYS credentials for `uid` (its own primary group, no others).
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

/// An RPCSEC_GSS credential (RFC 2203 section 5): version 1, `gss_proc` (1 is
/// RPCSEC_GSS_INIT, 0 DATA), sequence number 1, service `rpc_gss_svc_none`, and a context
/// handle. The servers serve no GSS, so this is what they must refuse.
pub fn rpcsec_gss(gss_proc: u32, handle: &[u8]) -> OpaqueAuth {
    let mut b = Vec::new();
    for w in [1u32, gss_proc, 1, 1, handle.len() as u32] {
        b.extend_from_slice(&w.to_be_bytes());
    }
    b.extend_from_slice(handle);
    b.resize(b.len().div_ceil(4) * 4, 0);
    OpaqueAuth::new(AuthFlavor::RPCSEC_GSS, Bytes::from(b))
}

/// NFSv4's NULL procedure with credential `cred`: its (empty) result, or why not.
pub async fn null_call(conn: &Conn, cred: OpaqueAuth) -> Result<Bytes, CallError> {
    conn.call(NFS4_PROGRAM, NFS_V4, NFSPROC4_NULL, cred, vec![])
        .await
}

/// The `auth_stat` of a call refused with MSG_DENIED / AUTH_ERROR; panics on anything else.
pub fn denied<T: std::fmt::Debug>(r: Result<T, CallError>) -> AuthStat {
    match r {
        Err(CallError::Denied(RejectedReply::AuthError(s))) => s,
        other => panic!("not MSG_DENIED / AUTH_ERROR: {other:?}"),
    }
}

/// The channel attributes the test client asks for (fore channel; the back channel asks for
/// fewer requests and operations).
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

/// Starts a connection over `stream` whose incoming calls (callbacks) go to `handler`, and
/// spawns its driver on the current runtime. `peer` and `local` only label the connection
/// (an in-process stream has no addresses of its own).
pub fn start_conn<S, H>(stream: S, peer: SocketAddr, local: SocketAddr, handler: Arc<H>) -> Conn
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    H: CallHandler,
{
    let (conn, run) = transport::start(stream, 0, peer, local, handler, ConnLimits::default());
    tokio::spawn(run);
    conn
}

/// Opens a TCP connection to `addr` that answers no calls (no session yet).
pub async fn connect(addr: SocketAddr) -> Conn {
    connect_with(addr, Arc::new(NoCalls)).await
}

/// Opens a TCP connection to `addr` whose callbacks go to `handler`.
pub async fn connect_with<H: CallHandler>(addr: SocketAddr, handler: Arc<H>) -> Conn {
    let sock = tokio::net::TcpStream::connect(addr)
        .await
        .unwrap_or_else(|e| panic!("connect {addr}: {e}"));
    let local = sock.local_addr().expect("local address");
    start_conn(sock, addr, local, handler)
}

/// Sends one COMPOUND of `ops` in minor version `minor` as `uid`.
pub async fn compound_on(
    conn: &Conn,
    uid: u32,
    minor: u32,
    ops: Vec<NfsArgop4>,
) -> Result<Compound4Res, CallError> {
    compound_as(conn, auth_sys(uid), minor, ops).await
}

/// Sends one COMPOUND of `ops` in minor version `minor` with this credential. A reply that
/// does not decode is a panic: the server under test sent garbage.
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
    Ok(xdr::from_bytes::<Compound4Res>(body)
        .unwrap_or_else(|e| panic!("{}: COMPOUND reply does not decode: {e}", conn.peer())))
}

/// How a session is set up: EXCHANGE_ID's owner, verifier and flags, CREATE_SESSION's
/// channels and flags, and whether RECLAIM_COMPLETE follows.
#[derive(Clone, Debug)]
pub struct Setup {
    /// `co_ownerid`.
    pub owner: String,
    /// `co_verifier`: another verifier is the same client restarted (RFC 8881 section 2.4).
    pub verifier: [u8; 8],
    /// `eia_flags`.
    pub exchange_flags: u32,
    /// The fore channel asked for.
    pub fore: ChannelAttrs4,
    /// `csa_flags` (`CREATE_SESSION4_FLAG_CONN_BACK_CHAN` for a back channel on this
    /// connection).
    pub session_flags: u32,
    /// Whether RECLAIM_COMPLETE is sent once the session is up (a client with nothing to
    /// reclaim says so before its first OPEN, RFC 8881 section 18.51).
    pub reclaim_complete: bool,
    /// Whether SEQUENCE asks for replies to be cached (`sa_cachethis`), for COMPOUNDs that
    /// read no data: a Linux client talking to a data server asks for none.
    pub cache_replies: bool,
    /// How long any COMPOUND, set-up included, may take before the test gives up on the server
    /// (none: forever; a peer in another process may hang).
    pub timeout: Option<Duration>,
}

impl Setup {
    /// A plain NFSv4.1 client `owner` (verifier 7s, no EXCHANGE_ID flags, no back channel),
    /// which sends RECLAIM_COMPLETE.
    pub fn new(owner: &str) -> Self {
        Self {
            owner: owner.to_owned(),
            verifier: [7; 8],
            exchange_flags: 0,
            fore: channel(),
            session_flags: 0,
            reclaim_complete: true,
            cache_replies: true,
            timeout: None,
        }
    }

    /// The client the Linux client is to a data server: EXCHANGE_ID with its usual flags and
    /// the DS role, no cached replies.
    pub fn data_server(owner: &str) -> Self {
        Self {
            verifier: [3; 8],
            exchange_flags: EXCHGID4_FLAG_SUPP_MOVED_REFER
                | EXCHGID4_FLAG_BIND_PRINC_STATEID
                | EXCHGID4_FLAG_USE_PNFS_DS,
            cache_replies: false,
            ..Self::new(owner)
        }
    }

    /// As client instance `verifier`.
    pub fn verifier(mut self, verifier: [u8; 8]) -> Self {
        self.verifier = verifier;
        self
    }

    /// Asking for these fore channel attributes.
    pub fn fore(mut self, fore: ChannelAttrs4) -> Self {
        self.fore = fore;
        self
    }

    /// With these `csa_flags`.
    pub fn session_flags(mut self, flags: u32) -> Self {
        self.session_flags = flags;
        self
    }

    /// With the back channel on the session's connection.
    pub fn back_channel(self) -> Self {
        self.session_flags(CREATE_SESSION4_FLAG_CONN_BACK_CHAN)
    }

    /// Giving up on any COMPOUND after `limit` (a panic naming the server).
    pub fn timeout(mut self, limit: Duration) -> Self {
        self.timeout = Some(limit);
        self
    }

    /// Without RECLAIM_COMPLETE: a client that may still reclaim after a restart.
    pub fn reclaiming(mut self) -> Self {
        self.reclaim_complete = false;
        self
    }

    /// The EXCHANGE_ID it sends.
    pub fn exchange_id(&self) -> ExchangeIdArgs {
        ExchangeIdArgs {
            eia_clientowner: ClientOwner4 {
                co_verifier: self.verifier,
                co_ownerid: Bytes::copy_from_slice(self.owner.as_bytes()),
            },
            eia_flags: self.exchange_flags,
            eia_state_protect: StateProtect4A::None,
            eia_client_impl_id: vec![],
        }
    }
}

/// A connection with a session.
pub struct Client {
    /// The connection (also the back channel when the session was set up with one).
    pub conn: Conn,
    /// The client id EXCHANGE_ID returned.
    pub clientid: u64,
    /// The whole EXCHANGE_ID result (flags, server owner, ...).
    pub exchange: ExchangeIdResOk,
    /// The session.
    pub sessionid: Sessionid4,
    /// The fore channel the server granted in CREATE_SESSION.
    pub fore: ChannelAttrs4,
    /// The sequence id of slot 0's last request.
    pub seq: u32,
    /// The AUTH_SYS uid of the requests.
    pub uid: u32,
    /// Whether SEQUENCE asks for replies to be cached (see [`Setup::cache_replies`]).
    pub cache_replies: bool,
    /// How long a COMPOUND may take before the test gives up on the server (none: forever).
    pub timeout: Option<Duration>,
}

impl Client {
    /// A session for `owner` over TCP, with RECLAIM_COMPLETE sent.
    pub async fn new(addr: SocketAddr, owner: &str) -> Client {
        Self::connect(addr, &Setup::new(owner)).await
    }

    /// EXCHANGE_ID + CREATE_SESSION only: a client that may still reclaim after a restart.
    pub async fn reclaiming(addr: SocketAddr, owner: &str) -> Client {
        Self::connect(addr, &Setup::new(owner).reclaiming()).await
    }

    /// EXCHANGE_ID + CREATE_SESSION asking for these fore channel attributes (no
    /// RECLAIM_COMPLETE).
    pub async fn with_fore_channel(addr: SocketAddr, owner: &str, fore: ChannelAttrs4) -> Client {
        Self::connect(addr, &Setup::new(owner).reclaiming().fore(fore)).await
    }

    /// The session a Linux client sets up with a data server ([`Setup::data_server`]).
    pub async fn data_server(addr: SocketAddr, owner: &str) -> Client {
        Self::connect(addr, &Setup::data_server(owner)).await
    }

    /// A session set up as `setup` says, over a new TCP connection that answers no calls.
    pub async fn connect(addr: SocketAddr, setup: &Setup) -> Client {
        Self::establish(connect(addr).await, setup).await
    }

    /// A session set up as `setup` says over `stream` (any byte stream: an in-process duplex
    /// stream of the in-memory cluster), whose callbacks go to `handler`.
    pub async fn over<S, H>(stream: S, peer: SocketAddr, handler: Arc<H>, setup: &Setup) -> Client
    where
        S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
        H: CallHandler,
    {
        let local = SocketAddr::from(([127, 0, 0, 1], 0));
        Self::establish(start_conn(stream, peer, local, handler), setup).await
    }

    /// EXCHANGE_ID + CREATE_SESSION on an open connection, with these fore channel
    /// attributes and `csa_flags` (no RECLAIM_COMPLETE).
    pub async fn setup(conn: Conn, owner: &str, fore: ChannelAttrs4, flags: u32) -> Client {
        let s = Setup::new(owner)
            .reclaiming()
            .fore(fore)
            .session_flags(flags);
        Self::establish(conn, &s).await
    }

    /// [`setup`](Self::setup) as the client instance `verifier`.
    pub async fn setup_instance(
        conn: Conn,
        owner: &str,
        verifier: [u8; 8],
        fore: ChannelAttrs4,
        flags: u32,
    ) -> Client {
        let s = Setup::new(owner)
            .reclaiming()
            .verifier(verifier)
            .fore(fore)
            .session_flags(flags);
        Self::establish(conn, &s).await
    }

    /// EXCHANGE_ID, CREATE_SESSION and (when `setup` says so) RECLAIM_COMPLETE on `conn`;
    /// each step checks its status and names the server in its panic.
    pub async fn establish(conn: Conn, setup: &Setup) -> Client {
        let peer = conn.peer();
        let exchange = vec![NfsArgop4::ExchangeId(setup.exchange_id())];
        let r = within(setup.timeout, peer, compound_on(&conn, 0, 1, exchange))
            .await
            .unwrap_or_else(|e| panic!("{peer}: EXCHANGE_ID: {e}"));
        let Some(NfsResop4::ExchangeId(ExchangeIdRes::Ok(ex))) = r.resarray.first() else {
            panic!("{peer}: EXCHANGE_ID failed: {r:?}")
        };
        let cs = CreateSessionArgs {
            csa_clientid: ex.eir_clientid,
            csa_sequence: ex.eir_sequenceid,
            csa_flags: setup.session_flags,
            csa_fore_chan_attrs: setup.fore.clone(),
            csa_back_chan_attrs: ChannelAttrs4 {
                ca_maxrequests: 2,
                ca_maxoperations: 4,
                ..channel()
            },
            csa_cb_program: CB_PROGRAM,
            csa_sec_parms: vec![CallbackSecParms4::AuthNone],
        };
        let create = compound_on(&conn, 0, 1, vec![NfsArgop4::CreateSession(cs)]);
        let r = within(setup.timeout, peer, create)
            .await
            .unwrap_or_else(|e| panic!("{peer}: CREATE_SESSION: {e}"));
        let Some(NfsResop4::CreateSession(CreateSessionRes::Ok(s))) = r.resarray.first() else {
            panic!("{peer}: CREATE_SESSION failed: {r:?}")
        };
        let mut c = Client {
            conn,
            clientid: ex.eir_clientid,
            exchange: ex.clone(),
            sessionid: s.csr_sessionid,
            fore: s.csr_fore_chan_attrs.clone(),
            seq: 0,
            uid: 0,
            cache_replies: setup.cache_replies,
            timeout: setup.timeout,
        };
        if setup.reclaim_complete {
            let r = c.run(Compound::new().reclaim_complete()).await;
            assert_eq!(
                r.status,
                NfsStat4::NFS4_OK,
                "{peer}: RECLAIM_COMPLETE: {r:?}"
            );
        }
        c
    }

    /// The same client, giving up on a COMPOUND after `limit` (a panic naming the server).
    pub fn with_timeout(mut self, limit: Duration) -> Self {
        self.timeout = Some(limit);
        self
    }

    /// The SEQUENCE for the next request on slot 0, asking for the reply to be cached.
    pub fn sequence(&mut self) -> NfsArgop4 {
        self.sequence_caching(true)
    }

    /// The SEQUENCE for the next request on slot 0.
    pub fn sequence_caching(&mut self, cachethis: bool) -> NfsArgop4 {
        self.seq += 1;
        sequence_op(self.sessionid, 0, self.seq, cachethis)
    }

    /// The SEQUENCE of slot 0 with this sequence id, not counted (for replays and misordered
    /// requests); it asks for the reply to be cached as this client does.
    pub fn sequence_at(&self, seq: u32) -> NfsArgop4 {
        sequence_op(self.sessionid, 0, seq, self.cache_replies)
    }

    /// SEQUENCE followed by `ops`, in minor version 1. The reply is asked to be cached unless
    /// the client caches none or the COMPOUND reads data, a directory or extended attributes:
    /// like a real client, which asks for non-idempotent requests only, and whose reads would
    /// not fit `ca_maxresponsesize_cached`.
    pub async fn call(&mut self, ops: Vec<NfsArgop4>) -> Compound4Res {
        self.call_minor(1, ops).await
    }

    /// [`Self::call`] in another minor version (2 for the NFSv4.2 operations).
    pub async fn call_minor(&mut self, minor: u32, ops: Vec<NfsArgop4>) -> Compound4Res {
        let cachethis = self.cache_replies && !ops.iter().any(reads);
        self.send(minor, cachethis, ops).await
    }

    /// SEQUENCE followed by the operations of `c`, in its minor version.
    pub async fn run(&mut self, c: Compound) -> Compound4Res {
        let minor = c.minor_version();
        self.call_minor(minor, c.into()).await
    }

    /// SEQUENCE with this `sa_cachethis`, followed by `ops`.
    pub async fn call_caching(&mut self, cachethis: bool, ops: Vec<NfsArgop4>) -> Compound4Res {
        self.send(1, cachethis, ops).await
    }

    async fn send(&mut self, minor: u32, cachethis: bool, ops: Vec<NfsArgop4>) -> Compound4Res {
        let mut all = vec![self.sequence_caching(cachethis)];
        all.extend(ops);
        let call = compound_on(&self.conn, self.uid, minor, all);
        let peer = self.conn.peer();
        within(self.timeout, peer, call)
            .await
            .unwrap_or_else(|e| panic!("{peer}: COMPOUND: {e}"))
    }
}

/// `f`'s output, or a panic naming `peer` once `limit` (when given) has passed.
async fn within<T>(limit: Option<Duration>, peer: SocketAddr, f: impl Future<Output = T>) -> T {
    match limit {
        Some(limit) => tokio::time::timeout(limit, f)
            .await
            .unwrap_or_else(|_| panic!("{peer}: no reply in {limit:?}")),
        None => f.await,
    }
}

/// SEQUENCE on `slot` with `seq`, the highest slot in use being `slot`.
pub fn sequence_op(sessionid: Sessionid4, slot: u32, seq: u32, cachethis: bool) -> NfsArgop4 {
    NfsArgop4::Sequence(SequenceArgs {
        sa_sessionid: sessionid,
        sa_sequenceid: seq,
        sa_slotid: slot,
        sa_highest_slotid: slot,
        sa_cachethis: cachethis,
    })
}

/// Whether `op` reads data, a directory or extended attributes (whose replies a client does not
/// ask to be cached).
fn reads(op: &NfsArgop4) -> bool {
    matches!(
        op,
        NfsArgop4::Read(_)
            | NfsArgop4::ReadPlus(_)
            | NfsArgop4::ReadDir(_)
            | NfsArgop4::GetXattr(_)
            | NfsArgop4::ListXattrs(_)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_data_server_setup_asks_for_the_ds_role_and_no_cache() {
        let s = Setup::data_server("o");
        assert_ne!(s.exchange_id().eia_flags & EXCHGID4_FLAG_USE_PNFS_DS, 0);
        assert!(!s.cache_replies);
        let plain = Setup::new("o").reclaiming().back_channel();
        assert_eq!(plain.exchange_id().eia_flags, 0);
        assert_eq!(plain.session_flags, CREATE_SESSION4_FLAG_CONN_BACK_CHAN);
        assert!(!plain.reclaim_complete);
    }

    #[test]
    fn reads_are_not_asked_to_be_cached() {
        assert!(reads(&crate::ops::read_op(
            crate::ops::CURRENT_STATEID,
            0,
            1
        )));
        assert!(!reads(&NfsArgop4::GetFh));
    }
}

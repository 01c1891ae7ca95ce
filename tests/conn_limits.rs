//! `pnfs server` (as its own process, so that its descriptor limit, CPU time and memory are
//! its own) against many idle connections and against peers that never read their replies.
//! The server keeps file data itself (`data_servers: []`).

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use nfs_proto::nfs4::*;
use nfs_proto::rpc::{AuthFlavor, AuthSysParms, MsgBody, OpaqueAuth, ReplyBody, RpcMsg};
use nfs_proto::transport::{self, Conn, ConnLimits, NoCalls};
use nfs_proto::xdr::{self, Encoder, Utf8String};

const PNFS: &str = env!("CARGO_BIN_EXE_pnfs");
const MIB: u64 = 1 << 20;

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port")
}

/// A `pnfs server` child; killed when dropped.
struct Server {
    child: Child,
    addr: SocketAddr,
    log: PathBuf,
    _dir: tempfile::TempDir,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Server {
    /// Starts a server with these `limits:` lines (YAML, indented by two spaces) under a
    /// descriptor limit (soft and hard) of `nofile`, if given.
    fn start(limits: &str, nofile: Option<u32>) -> Server {
        let dir = tempfile::tempdir().unwrap();
        let port = free_port();
        let yaml = format!(
            "listen: 127.0.0.1:{port}\nmetrics_listen: null\ndata_dir: {}\ngrace_time: 0\n\
             cluster:\n  data_servers: []\nlimits:\n{limits}",
            dir.path().join("data").display(),
        );
        let cfg = dir.path().join("pnfs.yaml");
        std::fs::write(&cfg, yaml).unwrap();
        let log = dir.path().join("server.log");
        let out = std::fs::File::create(&log).unwrap();
        // `ulimit -n` in the shell that execs the server lowers its limits only.
        let mut cmd = Command::new("sh");
        cmd.arg("-c").arg(match nofile {
            Some(n) => format!("ulimit -n {n} && exec \"$0\" \"$@\""),
            None => "exec \"$0\" \"$@\"".to_string(),
        });
        let child = cmd
            .arg(PNFS)
            .arg("server")
            .arg("--config")
            .arg(&cfg)
            .env("RUST_LOG", "info")
            .stdin(Stdio::null())
            .stdout(out.try_clone().unwrap())
            .stderr(out)
            .spawn()
            .unwrap();
        let server = Server {
            child,
            addr: SocketAddr::from(([127, 0, 0, 1], port)),
            log,
            _dir: dir,
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        while !server.log_text().contains("mount it with") {
            assert!(
                Instant::now() < deadline,
                "the server did not come up: {}",
                server.log_text()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        server
    }

    fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    fn log_len(&self) -> u64 {
        std::fs::metadata(&self.log).map(|m| m.len()).unwrap_or(0)
    }

    fn proc_file(&self, name: &str) -> String {
        std::fs::read_to_string(format!("/proc/{}/{name}", self.child.id())).unwrap()
    }

    /// User and system CPU time so far (`/proc/<pid>/stat` fields 14 and 15, in clock ticks
    /// of 1/100 s, the value of `USER_HZ` on Linux).
    fn cpu(&self) -> Duration {
        let stat = self.proc_file("stat");
        // The command name (field 2) may hold spaces: count fields after its ')'.
        let rest = &stat[stat.rfind(')').unwrap() + 2..];
        let f: Vec<u64> = rest
            .split_whitespace()
            .map(|x| x.parse().unwrap_or(0))
            .collect();
        Duration::from_millis((f[11] + f[12]) * 10)
    }

    /// Resident memory (`VmRSS` of `/proc/<pid>/status`).
    fn rss(&self) -> u64 {
        let status = self.proc_file("status");
        let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
        let kib: u64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
        kib * 1024
    }
}

/// Lets this test process open over a thousand sockets (raising the soft limit to the hard
/// one changes nothing for the other tests).
fn raise_own_fd_limit() {
    let n = nfs_server::fd_limit::raise_nofile().unwrap();
    assert!(
        n >= 2500,
        "this test needs 2500 descriptors, the hard limit is {n}"
    );
}

/// Opens `n` connections that send nothing.
fn idle_connections(addr: SocketAddr, n: usize) -> Vec<TcpStream> {
    (0..n)
        .map(|_| TcpStream::connect_timeout(&addr, Duration::from_secs(5)).expect("connect"))
        .collect()
}

/// Whether the server closed `s` (end of file, or a reset).
fn closed_by_server(s: &TcpStream) -> bool {
    s.set_nonblocking(true).unwrap();
    let closed = match (&*s).read(&mut [0u8; 64]) {
        Ok(0) => true,
        Ok(_) => false,
        Err(e) => e.kind() != std::io::ErrorKind::WouldBlock,
    };
    s.set_nonblocking(false).unwrap();
    closed
}

/// Measures the server's CPU time and log growth over `secs` seconds.
fn quiet_for(server: &Server, secs: u64) -> (f64, u64) {
    let (cpu0, log0, t0) = (server.cpu(), server.log_len(), Instant::now());
    std::thread::sleep(Duration::from_secs(secs));
    let (cpu1, log1) = (server.cpu(), server.log_len());
    let share = (cpu1 - cpu0).as_secs_f64() / t0.elapsed().as_secs_f64();
    (share, log1 - log0)
}

/// A NULL call over a fresh connection, within `within`; retried while the server closes
/// the connection at once (at the cap) or has not accepted it yet.
async fn served_within(addr: SocketAddr, within: Duration) -> bool {
    let deadline = tokio::time::Instant::now() + within;
    while tokio::time::Instant::now() < deadline {
        let attempt = async {
            let conn = connect(addr).await?;
            conn.call(
                NFS4_PROGRAM,
                NFS_V4,
                NFSPROC4_NULL,
                OpaqueAuth::none(),
                vec![],
            )
            .await
            .ok()
        };
        if tokio::time::timeout(Duration::from_secs(2), attempt)
            .await
            .ok()
            .flatten()
            .is_some()
        {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    false
}

async fn connect(addr: SocketAddr) -> Option<Conn> {
    let sock = tokio::net::TcpStream::connect(addr).await.ok()?;
    let local = sock.local_addr().ok()?;
    let limits = ConnLimits {
        max_fragment: 8 << 20,
        max_record: 8 << 20,
        ..ConnLimits::default()
    };
    let (conn, run) = transport::start(sock, 0, addr, local, Arc::new(NoCalls), limits);
    tokio::spawn(run);
    Some(conn)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn past_the_connection_cap_new_connections_are_closed_at_once() {
    raise_own_fd_limit();
    // The default cap under a limit of 1024: 1024 less 128 reserved, for its one listener.
    let server = Server::start("  idle_timeout: 600\n", Some(1024));
    let cap = nfs_server::fd_limit::auto_max_connections(1024, 1);
    assert_eq!(cap, 896);
    let conns = idle_connections(server.addr, 1100);
    tokio::time::sleep(Duration::from_secs(1)).await;
    let (cpu, log) = quiet_for(&server, 3);
    eprintln!(
        "at the cap: {:.2} % of a core, log +{log} bytes",
        cpu * 100.0
    );
    assert!(cpu < 0.05, "{:.1} % of a core", cpu * 100.0);
    assert!(log < MIB, "the log grew by {log} bytes");
    let refused = conns.iter().filter(|s| closed_by_server(s)).count();
    assert_eq!(refused, 1100 - cap, "connections closed past the cap");
    assert!(server.log_text().contains("connection refused: at the cap"));
    // Full: a new client is closed at once too.
    assert!(!served_within(server.addr, Duration::from_millis(500)).await);
    // Freed slots let new clients in.
    drop(conns);
    assert!(
        served_within(server.addr, Duration::from_secs(10)).await,
        "a new client was not served once connections closed"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn out_of_descriptors_the_accept_loop_backs_off_and_recovers() {
    raise_own_fd_limit();
    // A cap above the descriptor limit: accept fails with EMFILE.
    let server = Server::start("  max_connections: 5000\n", Some(1024));
    let mut conns = idle_connections(server.addr, 1100);
    tokio::time::sleep(Duration::from_secs(1)).await;
    let (cpu, log) = quiet_for(&server, 3);
    eprintln!(
        "out of descriptors: {:.2} % of a core, log +{log} bytes",
        cpu * 100.0
    );
    assert!(cpu < 0.05, "{:.1} % of a core", cpu * 100.0);
    assert!(log < MIB, "the log grew by {log} bytes");
    assert!(
        server.log_text().contains("accept failed"),
        "the server never ran out of descriptors: {}",
        server.log_text()
    );
    // Closing connections frees descriptors: the waiting ones and a new client get in.
    conns.drain(..300);
    assert!(
        served_within(server.addr, Duration::from_secs(15)).await,
        "a new client was not served once descriptors were freed"
    );
    drop(conns);
}

/// AUTH_SYS as root.
fn root() -> OpaqueAuth {
    let p = AuthSysParms {
        stamp: 1,
        machinename: Utf8String::from("test"),
        uid: 0,
        gid: 0,
        gids: vec![],
    };
    OpaqueAuth::new(AuthFlavor::AUTH_SYS, xdr::to_bytes(&p))
}

fn compound_args(ops: Vec<NfsArgop4>) -> Bytes {
    xdr::to_bytes(&Compound4Args {
        tag: Utf8String::from("test"),
        minorversion: 1,
        argarray: ops,
    })
}

async fn compound(conn: &Conn, ops: Vec<NfsArgop4>) -> Compound4Res {
    let body = conn
        .call(
            NFS4_PROGRAM,
            NFS_V4,
            NFSPROC4_COMPOUND,
            root(),
            vec![compound_args(ops)],
        )
        .await
        .expect("rpc");
    xdr::from_bytes::<Compound4Res>(body).expect("reply decodes")
}

/// EXCHANGE_ID and CREATE_SESSION (64 slots, 4 MiB replies) as `owner`.
async fn session(conn: &Conn, owner: &str) -> Sessionid4 {
    let ex = ExchangeIdArgs {
        eia_clientowner: ClientOwner4 {
            co_verifier: [3; 8],
            co_ownerid: Bytes::copy_from_slice(owner.as_bytes()),
        },
        eia_flags: 0,
        eia_state_protect: StateProtect4A::None,
        eia_client_impl_id: vec![],
    };
    let r = compound(conn, vec![NfsArgop4::ExchangeId(ex)]).await;
    let NfsResop4::ExchangeId(ExchangeIdRes::Ok(ok)) = &r.resarray[0] else {
        panic!("EXCHANGE_ID failed: {r:?}")
    };
    let fore = ChannelAttrs4 {
        ca_headerpadsize: 0,
        ca_maxrequestsize: 4 << 20,
        ca_maxresponsesize: 4 << 20,
        ca_maxresponsesize_cached: 64 << 10,
        ca_maxoperations: 16,
        ca_maxrequests: 64,
        ca_rdma_ird: vec![],
    };
    let cs = CreateSessionArgs {
        csa_clientid: ok.eir_clientid,
        csa_sequence: ok.eir_sequenceid,
        csa_flags: 0,
        csa_fore_chan_attrs: fore.clone(),
        csa_back_chan_attrs: ChannelAttrs4 {
            ca_maxrequests: 1,
            ..fore
        },
        csa_cb_program: 0x4000_0000,
        csa_sec_parms: vec![CallbackSecParms4::AuthNone],
    };
    let r = compound(conn, vec![NfsArgop4::CreateSession(cs)]).await;
    let NfsResop4::CreateSession(CreateSessionRes::Ok(s)) = &r.resarray[0] else {
        panic!("CREATE_SESSION failed: {r:?}")
    };
    s.csr_sessionid
}

fn sequence(sessionid: Sessionid4, slot: u32, seqid: u32) -> NfsArgop4 {
    NfsArgop4::Sequence(SequenceArgs {
        sa_sessionid: sessionid,
        sa_sequenceid: seqid,
        sa_slotid: slot,
        sa_highest_slotid: 63,
        sa_cachethis: false,
    })
}

/// Creates `/big` with `size` bytes of data; returns its filehandle.
async fn big_file(conn: &Conn, sessionid: Sessionid4, size: usize) -> NfsFh4 {
    let open = NfsArgop4::Open(OpenArgs {
        seqid: 0,
        share_access: OPEN4_SHARE_ACCESS_BOTH,
        share_deny: 0,
        owner: StateOwner4 {
            clientid: 0,
            owner: Bytes::from_static(b"writer"),
        },
        openhow: Openflag4::Create(Createhow4::Unchecked(Fattr4::default())),
        claim: OpenClaim4::Null(Utf8String::from("big")),
    });
    let r = compound(
        conn,
        vec![
            sequence(sessionid, 0, 1),
            NfsArgop4::ReclaimComplete(ReclaimCompleteArgs { rca_one_fs: false }),
        ],
    )
    .await;
    assert_eq!(r.status, NfsStat4::NFS4_OK, "{r:?}");
    let r = compound(
        conn,
        vec![
            sequence(sessionid, 0, 2),
            NfsArgop4::PutRootFh,
            open,
            NfsArgop4::GetFh,
        ],
    )
    .await;
    assert_eq!(r.status, NfsStat4::NFS4_OK, "{r:?}");
    let (mut fh, mut stateid) = (None, None);
    for res in &r.resarray {
        match res {
            NfsResop4::Open(OpenRes::Ok(ok)) => stateid = Some(ok.stateid),
            NfsResop4::GetFh(GetFhRes::Ok(ok)) => fh = Some(ok.object.clone()),
            _ => {}
        }
    }
    let (fh, stateid) = (fh.unwrap(), stateid.unwrap());
    let data: Vec<u8> = (0..size).map(|i| (i % 251) as u8).collect();
    let r = compound(
        conn,
        vec![
            sequence(sessionid, 0, 3),
            NfsArgop4::PutFh(PutFhArgs { object: fh.clone() }),
            NfsArgop4::Write(WriteArgs {
                stateid,
                offset: 0,
                stable: StableHow4::FILE_SYNC4,
                data: Bytes::from(data),
            }),
            NfsArgop4::Close(CloseArgs {
                seqid: 0,
                open_stateid: stateid,
            }),
        ],
    )
    .await;
    assert_eq!(r.status, NfsStat4::NFS4_OK, "{r:?}");
    fh
}

/// `count` pipelined COMPOUNDs (SEQUENCE, PUTFH, READ of 1 MiB under the anonymous stateid)
/// as raw records: slot `i % 64`, sequence `i / 64 + 1` of a fresh session.
fn read_calls(sessionid: Sessionid4, fh: &NfsFh4, count: u32) -> Vec<u8> {
    let mut wire = Vec::new();
    for i in 0..count {
        let args = compound_args(vec![
            sequence(sessionid, i % 64, i / 64 + 1),
            NfsArgop4::PutFh(PutFhArgs { object: fh.clone() }),
            NfsArgop4::Read(ReadArgs {
                stateid: Stateid4::default(),
                offset: 0,
                count: MIB as u32,
            }),
        ]);
        let msg = RpcMsg::call(
            i + 1,
            NFS4_PROGRAM,
            NFS_V4,
            NFSPROC4_COMPOUND,
            root(),
            OpaqueAuth::none(),
        );
        let mut e = Encoder::new();
        msg.encode_with_pieces(&mut e, [args]);
        let body: Vec<u8> = e.into_pieces().iter().flat_map(|p| p.to_vec()).collect();
        wire.extend_from_slice(&nfs_proto::record::record_header(body.len() as u32, true));
        wire.extend_from_slice(&body);
    }
    wire
}

/// Reads one whole reply record from `s` and returns its COMPOUND result.
fn read_reply(s: &mut TcpStream) -> Compound4Res {
    let mut body = Vec::new();
    loop {
        let mut mark = [0u8; 4];
        s.read_exact(&mut mark).unwrap();
        let mark = u32::from_be_bytes(mark);
        let start = body.len();
        body.resize(start + (mark & 0x7fff_ffff) as usize, 0);
        s.read_exact(&mut body[start..]).unwrap();
        if mark & 0x8000_0000 != 0 {
            break;
        }
    }
    let (msg, results) = RpcMsg::decode_header(Bytes::from(body)).unwrap();
    assert!(matches!(msg.body, MsgBody::Reply(ReplyBody::Accepted(_))));
    xdr::from_bytes::<Compound4Res>(results).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn peers_that_do_not_read_replies_are_held_to_the_reply_budget() {
    // CI runs a 64 MiB budget; PNFS_FULL_BUDGET=1 runs the defaults (256 MiB, 32 MiB a
    // connection) to measure them.
    let full = std::env::var_os("PNFS_FULL_BUDGET").is_some();
    let (budget, share, limits) = if full {
        (256 * MIB, 32 * MIB, String::new())
    } else {
        (
            64 * MIB,
            16 * MIB,
            format!(
                "  reply_budget: {}\n  connection_reply_budget: {}\n",
                64 * MIB,
                16 * MIB
            ),
        )
    };
    let server = Server::start(&limits, None);
    let setup = connect(server.addr).await.unwrap();
    let sid = session(&setup, "setup").await;
    let fh = big_file(&setup, sid, MIB as usize).await;
    // Four clients with a session each, and a raw connection each that sends 600 READs of
    // 1 MiB and reads nothing.
    let mut wires = Vec::new();
    for n in 0..4 {
        let c = connect(server.addr).await.unwrap();
        let sid = session(&c, &format!("slow-{n}")).await;
        wires.push(read_calls(sid, &fh, 600));
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let before = server.rss();
    let mut slow = Vec::new();
    for wire in wires {
        let s = TcpStream::connect(server.addr).unwrap();
        let w = s.try_clone().unwrap();
        // The server stops reading: write from a thread of its own.
        std::thread::spawn(move || {
            let mut w = w;
            let _ = w.write_all(&wire);
        });
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        slow.push(s);
    }
    let mut peak = 0;
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_secs(5) {
        peak = peak.max(server.rss());
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // Other clients are still served (one call at a time, past the full budget).
    let r = tokio::time::timeout(
        Duration::from_secs(5),
        compound(
            &setup,
            vec![
                sequence(sid, 0, 4),
                NfsArgop4::PutFh(PutFhArgs { object: fh.clone() }),
            ],
        ),
    )
    .await
    .expect("a reading client is served while others do not read");
    assert_eq!(r.status, NfsStat4::NFS4_OK, "{r:?}");
    // The replies are real 1 MiB READs.
    let r = read_reply(&mut slow[0]);
    assert_eq!(r.status, NfsStat4::NFS4_OK, "{r:?}");
    let Some(NfsResop4::Read(ReadRes::Ok(ok))) = r.resarray.last() else {
        panic!("not a READ: {r:?}")
    };
    assert_eq!(ok.data.len() as u64, MIB);
    drop(slow);
    tokio::time::sleep(Duration::from_secs(3)).await;
    let after = server.rss();
    eprintln!(
        "reply budget {} MiB: RSS before {} MiB, peak {} MiB, after {} MiB",
        budget / MIB,
        before / MIB,
        peak / MIB,
        after / MIB
    );
    // What the four hold when full: their shares, or the whole budget.
    let held = budget.min(4 * share);
    assert!(
        peak > before + held / 2,
        "the replies were not produced: RSS {} MiB, was {} MiB",
        peak / MIB,
        before / MIB
    );
    assert!(
        peak < budget + 64 * MIB,
        "RSS {} MiB past the budget of {} MiB + 64 MiB",
        peak / MIB,
        budget / MIB
    );
    // Beyond what the process had before, only the READ buffers it keeps for the next
    // READs (nfs_server::read_buffers, bounded) and slack.
    assert!(
        after < before + nfs_server::read_buffers::KEEP_BYTES as u64 + 32 * MIB,
        "RSS stays at {} MiB after the slow readers left (was {} MiB)",
        after / MIB,
        before / MIB
    );
}

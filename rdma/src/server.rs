//! The responder side: an RDMA-CM listener whose connections carry RPC-over-RDMA version 1
//! to the same call handler as TCP (the NFSv4 service of the MDS or of a data server).
//!
//! ```text
//!  Receive ──> header check ──> Read chunks pulled (RDMA Read) into ──> RPC record ──┐
//!              (RDMA_ERROR      one registered buffer, the WRITE data  to the       │
//!               on a bad one)   in place: no copy of the payload       conn driver  │
//!                                                                                   v
//!  Send <── RDMA_MSG inline  <── reply: DDP data (READ) RDMA-Written   <── handler reply
//!           or RDMA_NOMSG       into the Write chunk, the rest inline
//!                               or RDMA-Written into the Reply chunk
//! ```
//!
//! Callbacks (CB_RECALL, CB_LAYOUTRECALL) go the other way on the same connection as
//! `RDMA_MSG` Sends (RFC 8167); their replies come back as receives and reach the waiting
//! caller through the conn driver, as on TCP.

use std::collections::HashMap;
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use futures_util::Stream;
use nfs_proto::rdma::{
    ChunkLists, ErrorAction, InlineSize, Limits, PrivateData, RdmaBody, RdmaError, RdmaHeader,
    ResponderCredits, Side, Thresholds, WriteChunk,
};
use nfs_proto::transport::{
    start_records, CallHandler, ConnLimits, RecordSink, ServerPolicy, SharedPayloadBuffers,
};
use nfs_proto::xdr::PAYLOAD_PIECE_MIN;
use tokio::sync::{mpsc, watch};

use crate::endpoint::{forward, Endpoint, Posted, QueueSizes};
use crate::pieces::{slices, word};
use crate::pool::{Payloads, Pool, Pooled, Tally};
use crate::reply::{ddp_items_around, returned, shape, spread, Gap};
use crate::verbs::{Access, CmEventKind, CmId, EventChannel, SendOp, Sge};

/// How the RDMA listener sizes its connections.
#[derive(Clone, Debug)]
pub struct Config {
    /// Credits granted to each client: calls it may have outstanding.
    pub credits: u32,
    /// Our inline thresholds (RFC 8797): the largest message we receive and send without
    /// chunks. Above them, calls come in Read chunks and replies go out in Write and Reply
    /// chunks (the eager/rendezvous switch).
    pub inline: u32,
    /// Size of the pooled registered buffers that Read chunks are pulled into and replies
    /// staged in; a larger one is registered for its one use.
    pub chunk_buffer: usize,
    /// Registered buffers of that size kept per connection.
    pub chunk_buffers_kept: usize,
    /// Chunk list limits (segments, bytes to pull).
    pub limits: Limits,
    /// How long a client may stay silent after a message of ours before it is sent a CB_NULL
    /// on its back channel ([`Nudge`]); `None`: never.
    pub nudge_after: Option<Duration>,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            credits: 64,
            inline: 4096,
            chunk_buffer: (1 << 20) + (16 << 10),
            chunk_buffers_kept: 16,
            limits: Limits::default(),
            nudge_after: Some(Duration::from_millis(250)),
        }
    }
}

/// Counters of the RDMA transport, shared by the connections of a listener.
#[derive(Debug, Default)]
pub struct Stats {
    /// Connections accepted.
    pub connections: AtomicU64,
    /// Bytes pulled from clients by RDMA Read (Read chunks: WRITE data, Long Calls).
    pub read_bytes: AtomicU64,
    /// Bytes pushed to clients by RDMA Write (Write chunks: READ data; Reply chunks).
    pub written_bytes: AtomicU64,
    /// Of the READ data in `written_bytes`, the bytes RDMA-written from the registered
    /// buffer they were `pread` into, with no copy ([`Payloads`]).
    pub written_in_place: AtomicU64,
    /// Memory registrations made after a connection was set up (pool misses, buffers larger
    /// than the pool's).
    pub registrations: AtomicU64,
    /// RDMA_ERROR replies sent.
    pub errors_sent: AtomicU64,
    /// CB_NULLs sent to wake a client's send queue ([`Nudge`]).
    pub nudges: AtomicU64,
    /// Connections whose first message came before the CM's ESTABLISHED event (the client's
    /// RTU late or lost): served all the same, and the CM told (`rdma_notify`).
    pub established_by_call: AtomicU64,
}

/// The RDMA listeners of this process that are still up, by address, with their counters:
/// for a metrics page (the MDS's shows its own and those of the data servers `pnfs server`
/// runs beside it).
pub fn listeners() -> Vec<(SocketAddr, Arc<Stats>)> {
    let all = LISTENERS.lock().expect("listeners");
    all.iter()
        .filter_map(|(a, s)| Some((*a, s.upgrade()?)))
        .collect()
}

static LISTENERS: Mutex<Vec<(SocketAddr, std::sync::Weak<Stats>)>> = Mutex::new(Vec::new());

/// A bound RDMA listener.
pub struct Listener {
    id: CmId,
    local: SocketAddr,
    config: Config,
    stats: Arc<Stats>,
}

impl Listener {
    /// Binds to `addr` (an address of an RDMA device's network interface, or the wildcard)
    /// and listens. Fails with an error saying why when rdma-core or a device is missing.
    pub fn bind(addr: SocketAddr, config: Config) -> io::Result<Self> {
        let channel = EventChannel::new()?;
        let id = CmId::new(channel)?;
        id.listen(addr, 128)?;
        let local = id.local_addr().unwrap_or(addr);
        let stats = Arc::new(Stats::default());
        let mut all = LISTENERS.lock().expect("listeners");
        all.retain(|(_, s)| s.strong_count() > 0);
        all.push((local, Arc::downgrade(&stats)));
        Ok(Self {
            id,
            local,
            config,
            stats,
        })
    }

    /// The bound address.
    pub fn local_addr(&self) -> SocketAddr {
        self.local
    }

    /// The listener's counters.
    pub fn stats(&self) -> Arc<Stats> {
        self.stats.clone()
    }

    /// Accepts and serves connections until the task is dropped: each connection's calls
    /// go to `handler`, within `limits` and `policy`, with ids from `next_id`.
    pub async fn serve<H: CallHandler>(
        self,
        handler: Arc<H>,
        limits: ConnLimits,
        policy: ServerPolicy,
        next_id: impl Fn() -> u64 + Send + 'static,
    ) {
        loop {
            let ev = match self.id.channel().next().await {
                Ok(ev) => ev,
                Err(e) => {
                    tracing::warn!("RDMA listener {}: {e}", self.local);
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            };
            let (CmEventKind::ConnectRequest, Some(raw)) = (ev.kind, ev.new_id) else {
                tracing::debug!("RDMA listener {}: event {:?}", self.local, ev.kind);
                continue;
            };
            let id = match CmId::from_request(raw) {
                Ok(id) => id,
                Err(e) => {
                    tracing::warn!("RDMA connect request: {e}");
                    continue;
                }
            };
            let conn_id = next_id();
            let (handler, config, stats) =
                (handler.clone(), self.config.clone(), self.stats.clone());
            let policy = policy.clone();
            tokio::spawn(async move {
                if let Err(e) = serve_connection(
                    id,
                    ev.private_data,
                    conn_id,
                    handler,
                    limits,
                    policy,
                    config,
                    stats,
                )
                .await
                {
                    tracing::info!(conn = conn_id, "RDMA connection ended: {e}");
                }
            });
        }
    }
}

/// What the reader and the sink of one connection share.
struct Shared {
    ep: Arc<Endpoint>,
    thresholds: Thresholds,
    limits: Limits,
    sends: Arc<Pool>,
    chunks: Arc<Pool>,
    /// The chunks each call in progress offered for its reply, by XID.
    offered: Mutex<HashMap<u32, Offered>>,
    credits: Mutex<ResponderCredits>,
    stats: Arc<Stats>,
    nudge: Nudge,
    /// Whether the CM said the connection is established (its ESTABLISHED event), or we told
    /// it so on a call that came first ([`Shared::established_by_call`]).
    established: AtomicBool,
    /// The connection's number, for its log lines.
    conn_id: u64,
}

impl Shared {
    /// A message came in: if the CM has not said the connection is established yet (the
    /// client's RTU late or lost), it is told so now (`rdma_notify`), so that it stops
    /// waiting for the RTU (and does not end the connection when its retries run out).
    fn established_by_call(&self) {
        // (A read first: every message comes here, and only the first may write.)
        if self.established.load(Ordering::Relaxed)
            || self.established.swap(true, Ordering::Relaxed)
        {
            return;
        }
        match self.ep.id.notify_established() {
            Ok(()) => {
                self.stats
                    .established_by_call
                    .fetch_add(1, Ordering::Relaxed);
                // A warning: an RTU lost on the way says the fabric drops CM messages.
                tracing::warn!(
                    conn = self.conn_id,
                    "RDMA connection: a call came before the CM's ESTABLISHED event (the \
                     client's RTU late or lost): served, and the CM told"
                );
            }
            // Established meanwhile (the event is on its way).
            Err(e) => tracing::debug!(conn = self.conn_id, "rdma_notify: {e}"),
        }
    }
}

#[allow(clippy::too_many_arguments)]
async fn serve_connection<H: CallHandler>(
    id: CmId,
    peer_private: Vec<u8>,
    conn_id: u64,
    handler: Arc<H>,
    limits: ConnLimits,
    policy: ServerPolicy,
    config: Config,
    stats: Arc<Stats>,
) -> io::Result<()> {
    let ours = PrivateData {
        remote_invalidation: false,
        send_size: inline_size(config.inline),
        recv_size: inline_size(config.inline),
    };
    let peer = (!peer_private.is_empty()).then_some(&peer_private[..]);
    let (thresholds, why) = Thresholds::negotiate(&ours, peer);
    if let Some(why) = why {
        tracing::debug!(conn = conn_id, "RDMA private data ignored: {why}");
    }
    // Receives: the credits, plus room for backchannel replies and a spare.
    let sizes = QueueSizes {
        recvs: config.credits + 8,
        recv_size: ours.recv_size.bytes() as usize,
        sends: 4 * config.credits,
        send_sge: 4,
    };
    let ep = Endpoint::new(id, sizes)?;
    ep.id.accept(&ours.to_bytes(), 16)?;
    // Served from here on, not from the CM's ESTABLISHED event: the accept left the queue
    // pair ready to send, and we send only in answer to the client (a nudge too follows a
    // message of ours), whose first call shows that it holds the connection established.
    // The event comes when the client's RTU does, which can be late or never (rdma_notify(3));
    // before, a connection whose event did not come within 10 s was dropped with the calls
    // the client had sent on it. A call before the event tells the CM (`receive`).
    let channel = ep.id.channel().clone();
    stats.connections.fetch_add(1, Ordering::Relaxed);
    let peer_addr = ep.id.peer_addr().unwrap_or(([0, 0, 0, 0], 0).into());
    let local_addr = ep.id.local_addr().unwrap_or(([0, 0, 0, 0], 0).into());
    tracing::info!(conn = conn_id, %local_addr, %peer_addr, send = thresholds.send, recv = thresholds.recv, "RDMA connection accepted");

    let (recv_tx, recv_rx) = mpsc::unbounded_channel();
    tokio::spawn(ep.clone().reap(recv_tx));
    let pd = ep.pd.clone();
    let tally: Tally = {
        let stats = stats.clone();
        Arc::new(move || {
            stats.registrations.fetch_add(1, Ordering::Relaxed);
        })
    };
    let shared = Arc::new(Shared {
        ep: ep.clone(),
        thresholds,
        limits: config.limits,
        sends: Pool::new(
            pd.clone(),
            sizes.recv_size.max(thresholds.send as usize),
            64,
            Access::Local,
            tally.clone(),
        ),
        chunks: Pool::new(
            pd,
            config.chunk_buffer,
            config.chunk_buffers_kept,
            Access::Local,
            tally,
        ),
        offered: Mutex::new(HashMap::new()),
        credits: Mutex::new(ResponderCredits::new(config.credits)),
        stats,
        nudge: Nudge::new(config.nudge_after, conn_id),
        established: AtomicBool::new(false),
        conn_id,
    });
    let (done_tx, done_rx) = watch::channel(false);
    if config.nudge_after.is_some() {
        tokio::spawn(nudger(shared.clone(), done_rx.clone()));
    }
    // The CM events of the connection: ESTABLISHED is noted, a disconnect, a reject or a
    // failed setup ends it.
    {
        let channel = channel.clone();
        let done_tx = done_tx.clone();
        let mut done_rx = done_rx.clone();
        let shared = shared.clone();
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    ev = channel.next() => match ev.map(|ev| ev.kind) {
                        Ok(CmEventKind::Established) => {
                            shared.established.store(true, Ordering::Relaxed);
                            tracing::debug!(conn = conn_id, "RDMA connection established");
                        }
                        Ok(CmEventKind::Other(_) | CmEventKind::ConnectRequest) => {}
                        Ok(kind @ CmEventKind::Disconnected) => {
                            tracing::debug!(conn = conn_id, "RDMA connection ends: {kind:?}");
                            break;
                        }
                        Ok(kind) => {
                            tracing::warn!(conn = conn_id, %peer_addr, "RDMA connection ends: {kind:?}");
                            break;
                        }
                        Err(e) => {
                            tracing::warn!(conn = conn_id, "RDMA connection's events: {e}");
                            break;
                        }
                    },
                    _ = done_rx.changed() => break,
                }
            }
            let _ = done_tx.send(true);
        });
    }
    let records = reader(shared.clone(), recv_rx, done_rx);
    let (_conn, run) = start_records(
        records,
        Sink(shared.clone()),
        conn_id,
        peer_addr,
        local_addr,
        handler,
        limits,
        policy,
    );
    let result = run.await;
    let _ = done_tx.send(true);
    ep.id.disconnect();
    ep.stop();
    result
}

/// The received calls (and backchannel replies) of a connection as RPC records.
fn reader(
    shared: Arc<Shared>,
    mut received: mpsc::UnboundedReceiver<crate::verbs::Completion>,
    mut done: watch::Receiver<bool>,
) -> std::pin::Pin<Box<dyn Stream<Item = io::Result<Bytes>> + Send>> {
    let (tx, mut rx) = mpsc::channel::<io::Result<Bytes>>(16);
    tokio::spawn(async move {
        loop {
            let c = tokio::select! {
                c = received.recv() => c,
                _ = done.changed() => None,
            };
            let Some(c) = c else {
                tracing::debug!("RDMA reader: connection done");
                break;
            };
            if !c.ok() {
                // Flushed: the queue pair went to the error state (disconnect).
                tracing::debug!(status = c.status, "RDMA receive failed: reader ends");
                break;
            }
            let outcome = match shared.ep.take_received(&c) {
                Ok(msg) => receive(&shared, msg).await,
                Err(e) => Err(e),
            };
            if !forward(&tx, outcome).await {
                break;
            }
        }
    });
    Box::pin(futures_util::stream::poll_fn(move |cx| rx.poll_recv(cx)))
}

/// One received message: the RPC record it carries, nothing (answered with `RDMA_ERROR` or
/// dropped), or an error that closes the connection.
async fn receive(shared: &Shared, msg: Bytes) -> io::Result<Option<Bytes>> {
    let got = match RdmaHeader::decode_received(msg, Side::Responder, &shared.limits) {
        Ok(got) => got,
        Err(e) => {
            tracing::debug!("RDMA header refused: {e}");
            return match e.action() {
                ErrorAction::Reply(_) => {
                    let credit = shared.credits.lock().expect("credits").grant();
                    if let Some(reply) = e.reply(credit) {
                        send_error_bytes(shared, reply).await?;
                    }
                    Ok(None)
                }
                ErrorAction::Discard => Ok(None),
                ErrorAction::Close => Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("RDMA header: {e}"),
                )),
            };
        }
    };
    let xid = got.header.xid;
    tracing::trace!(xid, body = ?got.header.body, "RDMA message received");
    shared.established_by_call();
    shared.nudge.heard();
    let (chunks, nomsg) = match got.header.body {
        RdmaBody::Msg(c) => (c, false),
        RdmaBody::NoMsg(c) => (c, true),
        RdmaBody::Error(_) => return Ok(None),
    };
    // A backchannel reply (RFC 8167) is an RPC reply in an RDMA_MSG: no credit, no chunks.
    let is_call = nomsg || got.rpc_message.get(4..8) == Some(&[0, 0, 0, 0][..]);
    if !is_call && shared.nudge.answers(xid) {
        return Ok(None); // the reply to our CB_NULL: nobody else waits for it
    }
    if is_call {
        if let Err(e) = shared.credits.lock().expect("credits").on_call() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("RDMA credit overrun: {e}"),
            ));
        }
    }
    let record = if nomsg || !chunks.reads.is_empty() {
        match assemble(shared, got.rpc_message, &chunks, nomsg).await {
            Ok(r) => r,
            Err(Assembly::Refused(why)) => {
                tracing::debug!(xid, "RDMA call refused: {why}");
                let credit = shared.credits.lock().expect("credits").reply_credit();
                send_header(shared, &error_header(xid, credit)).await?;
                return Ok(None);
            }
            Err(Assembly::Io(e)) => return Err(e),
        }
    } else {
        got.rpc_message
    };
    if is_call && !chunks.is_empty() {
        let invalidate = if shared.thresholds.peer_remote_invalidation {
            sole_handle(&chunks)
        } else {
            None
        };
        shared.offered.lock().expect("offered").insert(
            xid,
            Offered {
                lists: ChunkLists {
                    reads: Vec::new(),
                    ..chunks
                },
                invalidate,
            },
        );
    }
    Ok(Some(record))
}

/// What a call offered its reply: its Write list and Reply chunk, and the one memory region
/// its chunks name, if they all name the same, for the reply to invalidate.
#[derive(Default)]
struct Offered {
    lists: ChunkLists,
    invalidate: Option<u32>,
}

/// The steering tag every segment of `chunks` names, if there is exactly one: the region the
/// reply may invalidate with Send With Invalidate, as knfsd does. (The Linux client registers
/// each chunk separately, so a call whose chunks name several regions invalidates them
/// itself.) Invalidating on the requester's behalf saves it a Local Invalidate per reply.
fn sole_handle(chunks: &ChunkLists) -> Option<u32> {
    let mut handles = chunks
        .reads
        .iter()
        .map(|r| r.target.handle)
        .chain(
            chunks
                .writes
                .iter()
                .flat_map(|w| w.segments.iter().map(|s| s.handle)),
        )
        .chain(
            chunks
                .reply
                .iter()
                .flat_map(|w| w.segments.iter().map(|s| s.handle)),
        );
    let first = handles.next()?;
    handles.all(|h| h == first).then_some(first)
}

enum Assembly {
    Refused(&'static str),
    Io(io::Error),
}

impl From<io::Error> for Assembly {
    fn from(e: io::Error) -> Self {
        Self::Io(e)
    }
}

/// The RFC 8797 size nearest below `bytes` (1 KiB steps, 1 KiB to 256 KiB).
fn inline_size(bytes: u32) -> InlineSize {
    let kib = (bytes / 1024).clamp(1, 256);
    InlineSize::from_bytes(kib * 1024).expect("a whole number of KiB in range")
}

fn pad(n: usize) -> usize {
    (4 - n % 4) % 4
}

/// Pulls a Position-Zero Read chunk (the whole call) or the Read chunks of an `RDMA_MSG`
/// into one registered buffer, with the inline parts copied around them: the RPC record the
/// handler decodes, whose WRITE data is a slice of the very memory the RDMA Read filled.
async fn assemble(
    shared: &Shared,
    inline: Bytes,
    chunks: &ChunkLists,
    nomsg: bool,
) -> Result<Bytes, Assembly> {
    let base = if nomsg {
        let segs: Vec<_> = chunks.read_chunk(0).copied().collect();
        let len: usize = segs.iter().map(|s| s.length as usize).sum();
        let mut buf = shared.chunks.take(len)?;
        pull(shared, &mut buf, 0, &segs).await?;
        buf.freeze()
    } else {
        inline
    };
    let positions: Vec<u32> = chunks
        .read_positions()
        .into_iter()
        .filter(|&p| p != 0)
        .collect();
    if positions.is_empty() {
        return Ok(base);
    }
    let mut total = base.len();
    for &p in &positions {
        if p as usize > base.len() {
            return Err(Assembly::Refused(
                "a Read chunk's position is past the message",
            ));
        }
        let n: usize = chunks.read_chunk(p).map(|s| s.length as usize).sum();
        total += n + pad(n);
    }
    let mut buf = shared.chunks.take(total)?;
    // Lay out the inline pieces first, then pull every chunk into its gap.
    let mut gaps = Vec::new();
    {
        let bytes = buf.mr_mut().bytes_mut();
        let (mut at, mut prev) = (0usize, 0usize);
        for &p in &positions {
            let p = p as usize;
            bytes[at..at + p - prev].copy_from_slice(&base[prev..p]);
            at += p - prev;
            let n: usize = chunks.read_chunk(p as u32).map(|s| s.length as usize).sum();
            gaps.push((p as u32, at));
            at += n;
            bytes[at..at + pad(n)].fill(0);
            at += pad(n);
            prev = p;
        }
        bytes[at..at + base.len() - prev].copy_from_slice(&base[prev..]);
    }
    for (p, at) in gaps {
        let segs: Vec<_> = chunks.read_chunk(p).copied().collect();
        pull(shared, &mut buf, at, &segs).await?;
    }
    Ok(buf.freeze())
}

/// RDMA-Reads `segs` into `buf` from `at` on, one after the other, and waits for them.
async fn pull(
    shared: &Shared,
    buf: &mut Pooled,
    at: usize,
    segs: &[nfs_proto::rdma::RdmaSegment],
) -> io::Result<()> {
    let mut posted = Vec::with_capacity(segs.len());
    let mut off = at;
    for s in segs {
        let sge = buf.mr().sge(off, s.length as usize);
        off += s.length as usize;
        if s.length == 0 {
            continue;
        }
        posted.push(
            shared
                .ep
                .post(
                    SendOp::Read {
                        remote_addr: s.offset,
                        rkey: s.handle,
                    },
                    &[sge],
                )
                .await?,
        );
    }
    for p in posted {
        p.done().await?;
    }
    shared
        .stats
        .read_bytes
        .fetch_add((off - at) as u64, Ordering::Relaxed);
    Ok(())
}

fn error_header(xid: u32, credit: u32) -> RdmaHeader {
    RdmaHeader {
        xid,
        credit,
        body: RdmaBody::Error(RdmaError::Chunk),
    }
}

fn encode_header(h: &RdmaHeader) -> Bytes {
    nfs_proto::xdr::to_bytes(h)
}

async fn send_header(shared: &Shared, h: &RdmaHeader) -> io::Result<()> {
    if matches!(h.body, RdmaBody::Error(_)) {
        shared.stats.errors_sent.fetch_add(1, Ordering::Relaxed);
    }
    send_error_bytes(shared, encode_header(h)).await
}

async fn send_error_bytes(shared: &Shared, bytes: Bytes) -> io::Result<()> {
    let posted = send_inline(shared, &[bytes], None).await?;
    posted.0.done().await
}

/// Copies `pieces` into a registered send buffer and posts the Send. The buffer is kept
/// beside the returned completion.
async fn send_inline(
    shared: &Shared,
    pieces: &[Bytes],
    invalidate: Option<u32>,
) -> io::Result<(Posted, Pooled)> {
    let len: usize = pieces.iter().map(Bytes::len).sum();
    let mut buf = shared.sends.take(len)?;
    {
        let bytes = buf.mr_mut().bytes_mut();
        let mut at = 0;
        for p in pieces {
            bytes[at..at + p.len()].copy_from_slice(p);
            at += p.len();
        }
    }
    let sge = buf.mr().sge(0, len);
    let op = match invalidate {
        Some(rkey) => SendOp::SendInvalidate { rkey },
        None => SendOp::Send,
    };
    let posted = shared.ep.post(op, &[sge]).await?;
    Ok((posted, buf))
}

/// Sends `pieces` as a Short Message (an `RDMA_MSG` with no chunks, RFC 8166 section 3.5.1) if
/// it fits the peer's inline threshold; `false` if it does not (nothing sent).
async fn send_short(
    shared: &Shared,
    xid: u32,
    credit: u32,
    pieces: Vec<Bytes>,
    invalidate: Option<u32>,
) -> io::Result<bool> {
    let header = encode_header(&RdmaHeader {
        xid,
        credit,
        body: RdmaBody::Msg(ChunkLists::default()),
    });
    let total: usize = pieces.iter().map(Bytes::len).sum();
    if header.len() + total > shared.thresholds.send as usize {
        return Ok(false);
    }
    let mut all = vec![header];
    all.extend(pieces);
    let (posted, buf) = send_inline(shared, &all, invalidate).await?;
    let sent = std::time::Instant::now();
    tokio::spawn(async move {
        let _ = posted.done().await;
        tracing::trace!(
            xid,
            total,
            us = sent.elapsed().as_micros() as u64,
            "RDMA short message completed"
        );
        drop(buf);
    });
    Ok(true)
}

/// Sends the connection's outgoing RPC messages: our replies and our backchannel calls.
struct Sink(Arc<Shared>);

impl RecordSink for Sink {
    fn send(
        &mut self,
        pieces: Vec<Bytes>,
    ) -> impl std::future::Future<Output = io::Result<()>> + Send {
        let shared = self.0.clone();
        async move { send_message(&shared, pieces).await }
    }

    fn is_rdma(&self) -> bool {
        true
    }

    fn payload_buffers(&self) -> Option<SharedPayloadBuffers> {
        Some(Arc::new(Payloads(self.0.chunks.clone())))
    }
}

async fn send_message(shared: &Arc<Shared>, pieces: Vec<Bytes>) -> io::Result<()> {
    let total: usize = pieces.iter().map(Bytes::len).sum();
    let (Some(xid), Some(mtype)) = (word(&pieces, 0), word(&pieces, 4)) else {
        return Ok(());
    };
    // Whatever we send (a reply, or a callback such as a CB_RECALL, which the client answers
    // and then acts on), the client is expected to send again: a silence after it is looked
    // into.
    shared.nudge.arm();
    if mtype == 0 {
        // A backchannel call (RFC 8167): always inline.
        let credit = shared.credits.lock().expect("credits").grant();
        if !send_short(shared, xid, credit, pieces, None).await? {
            tracing::warn!(
                xid,
                "backchannel call of {total} bytes is over the inline threshold: not sent"
            );
        }
        return Ok(());
    }
    let Offered {
        lists: offered,
        invalidate,
    } = shared
        .offered
        .lock()
        .expect("offered")
        .remove(&xid)
        .unwrap_or_default();
    let credit = shared.credits.lock().expect("credits").reply_credit();
    if offered.writes.is_empty() && offered.reply.is_none() {
        if !send_short(shared, xid, credit, pieces, invalidate).await? {
            tracing::debug!(
                xid,
                "reply of {total} bytes has no chunk to go in: ERR_CHUNK"
            );
            send_header(shared, &error_header(xid, credit)).await?;
        }
        return Ok(());
    }
    // Chunks were offered: RDMA-Write what goes to chunks, then Send the header (and whatever
    // stays inline). The Writes go out from registered memory: READ data a data server read
    // into this connection's pool as it is, the rest from a staged copy.
    let src = Sources::stage(shared, &pieces, !offered.writes.is_empty())?;
    let plan = shape(total, &src.items, &offered.writes);
    let mut posted = Vec::new();
    let mut writes = Vec::with_capacity(offered.writes.len());
    for (chunk, placed) in offered.writes.iter().zip(&plan.placed) {
        let Some(item) = placed else {
            writes.push(returned(chunk, 0));
            continue;
        };
        let len = item.end - item.start;
        for (seg, off, n) in spread(chunk, len) {
            let s = chunk.segments[seg];
            posted.push(
                shared
                    .ep
                    .post(
                        SendOp::Write {
                            remote_addr: s.offset,
                            rkey: s.handle,
                        },
                        &[src.sge(item.start + off, n)],
                    )
                    .await?,
            );
        }
        shared
            .stats
            .written_bytes
            .fetch_add(len as u64, Ordering::Relaxed);
        if src.in_place(item.start) {
            shared
                .stats
                .written_in_place
                .fetch_add(len as u64, Ordering::Relaxed);
        }
        writes.push(returned(chunk, len));
    }
    let rest_len = plan.rest_len();
    let header = match &offered.reply {
        Some(rc) if rest_len as u64 <= rc.total_length() => {
            let ranges = src.split(&plan.rest);
            posted.extend(write_into_chunk(shared, rc, &ranges, &|at, n| src.sge(at, n)).await?);
            shared
                .stats
                .written_bytes
                .fetch_add(rest_len as u64, Ordering::Relaxed);
            RdmaHeader {
                xid,
                credit,
                body: RdmaBody::NoMsg(ChunkLists {
                    reads: Vec::new(),
                    writes,
                    reply: Some(returned(rc, rest_len)),
                }),
            }
        }
        _ => RdmaHeader {
            xid,
            credit,
            body: RdmaBody::Msg(ChunkLists {
                reads: Vec::new(),
                writes,
                reply: None,
            }),
        },
    };
    let mut msg = vec![encode_header(&header)];
    if matches!(header.body, RdmaBody::Msg(_)) {
        if msg[0].len() + rest_len > shared.thresholds.send as usize {
            tracing::debug!(
                xid,
                "reply of {rest_len} bytes left inline is over the threshold: ERR_CHUNK"
            );
            for p in posted {
                let _ = p.done().await;
            }
            return send_header(shared, &error_header(xid, credit)).await;
        }
        msg.extend(plan.rest.iter().flat_map(|r| slices(&pieces, r.clone())));
    }
    let (send, buf) = send_inline(shared, &msg, invalidate).await?;
    let writes = posted.len();
    let sent = std::time::Instant::now();
    tokio::spawn(async move {
        for p in posted {
            let _ = p.done().await;
        }
        let _ = send.done().await;
        tracing::trace!(
            xid,
            writes,
            rest_len,
            us = sent.elapsed().as_micros() as u64,
            "RDMA reply through chunks completed"
        );
        drop((buf, src, pieces));
    });
    Ok(())
}

/// Where the bytes of a reply sent through chunks are in registered memory: pieces that are
/// in this connection's pool already (READ data a server `pread` there: [`Payloads`]) and a
/// staged copy of the rest, with the reply's DDP-eligible items.
struct Sources {
    /// The pieces sent from where they are: (reply range, address).
    in_place: Vec<(std::ops::Range<usize>, u64, u32)>,
    /// The copy of everything else, back to back: kept until the Writes from it complete.
    _staged: Bytes,
    staged_key: (u64, u32),
    /// The DDP-eligible items, as ranges of the reply.
    items: Vec<std::ops::Range<usize>>,
}

impl Sources {
    /// Stages `pieces`, leaving out the large ones already in the connection's pool when
    /// their place in the reply is a READ result's data (`find_items`: Write chunks were
    /// offered, so the items matter).
    fn stage(shared: &Shared, pieces: &[Bytes], find_items: bool) -> io::Result<Self> {
        let mut in_place = Vec::new();
        let mut at = 0;
        if find_items {
            for p in pieces {
                if p.len() >= PAYLOAD_PIECE_MIN {
                    if let Some((addr, lkey)) = shared.chunks.locate(p) {
                        in_place.push((at..at + p.len(), addr, lkey));
                    }
                }
                at += p.len();
            }
        }
        loop {
            let total: usize = pieces.iter().map(Bytes::len).sum();
            let kept: usize = in_place.iter().map(|(r, ..)| r.len()).sum();
            let mut stage = shared.chunks.take(total - kept)?;
            let mut gaps = Vec::with_capacity(in_place.len());
            {
                let bytes = stage.mr_mut().bytes_mut();
                let (mut at, mut to) = (0, 0);
                let mut left_out = in_place.iter().map(|(r, ..)| r.start).peekable();
                for p in pieces {
                    if left_out.next_if_eq(&at).is_some() {
                        gaps.push(Gap {
                            at: to,
                            len: p.len(),
                        });
                    } else {
                        bytes[to..to + p.len()].copy_from_slice(p);
                        to += p.len();
                    }
                    at += p.len();
                }
            }
            let staged_key = (stage.mr().addr(), stage.mr().lkey());
            let staged = stage.freeze();
            let items = if find_items {
                ddp_items_around(&staged, &gaps)
            } else {
                Some(Vec::new())
            };
            match items {
                Some(items) => {
                    return Ok(Self {
                        in_place,
                        _staged: staged,
                        staged_key,
                        items,
                    })
                }
                // A piece of the pool that is not a READ's data where it stands: stage it too.
                None => in_place.clear(),
            }
        }
    }

    /// Whether the reply's byte `at` goes out from where the server read it.
    fn in_place(&self, at: usize) -> bool {
        self.in_place.iter().any(|(r, ..)| r.contains(&at))
    }

    /// The registered memory of the reply's bytes `at..at + len`, which lie in one piece sent
    /// in place or all in the staged copy (ranges cut by [`Sources::split`]).
    fn sge(&self, at: usize, len: usize) -> Sge {
        let mut before = 0;
        for (r, addr, lkey) in &self.in_place {
            if r.contains(&at) {
                return Sge {
                    addr: addr + (at - r.start) as u64,
                    len: len as u32,
                    lkey: *lkey,
                };
            }
            if r.end <= at {
                before += r.len();
            }
        }
        Sge {
            addr: self.staged_key.0 + (at - before) as u64,
            len: len as u32,
            lkey: self.staged_key.1,
        }
    }

    /// `ranges` cut where a piece sent in place begins or ends.
    fn split(&self, ranges: &[std::ops::Range<usize>]) -> Vec<std::ops::Range<usize>> {
        let mut out = Vec::with_capacity(ranges.len());
        for r in ranges {
            let mut cuts: Vec<usize> = self
                .in_place
                .iter()
                .flat_map(|(p, ..)| [p.start, p.end])
                .filter(|c| r.start < *c && *c < r.end)
                .collect();
            cuts.sort_unstable();
            let mut from = r.start;
            for c in cuts.into_iter().chain([r.end]) {
                if c > from {
                    out.push(from..c);
                    from = c;
                }
            }
        }
        out
    }
}

/// RDMA-Writes the `ranges` of the staged reply, back to back, into the segments of `chunk`.
async fn write_into_chunk(
    shared: &Shared,
    chunk: &WriteChunk,
    ranges: &[std::ops::Range<usize>],
    sge: &impl Fn(usize, usize) -> Sge,
) -> io::Result<Vec<Posted>> {
    let mut posted = Vec::new();
    let mut segs = chunk.segments.iter();
    let mut cur = segs.next().copied();
    let mut seg_used = 0usize;
    for r in ranges {
        let mut at = r.start;
        while at < r.end {
            let Some(s) = cur else {
                return Err(io::Error::other("reply chunk too small"));
            };
            let room = s.length as usize - seg_used;
            if room == 0 {
                cur = segs.next().copied();
                seg_used = 0;
                continue;
            }
            let n = room.min(r.end - at);
            posted.push(
                shared
                    .ep
                    .post(
                        SendOp::Write {
                            remote_addr: s.offset + seg_used as u64,
                            rkey: s.handle,
                        },
                        &[sge(at, n)],
                    )
                    .await?,
            );
            at += n;
            seg_used += n;
        }
    }
    Ok(posted)
}

/// Wakes a client whose send queue went to sleep. The Linux client over soft-RoCE (rxe, seen
/// on 6.1 and 6.12 guests) now and then posts a call's Send and the Send never leaves its
/// queue pair (after the memory registrations or invalidations of its chunks, in the traces
/// so far): the call waits for the client's 60 s RPC timeout, unless the client posts
/// anything else on that queue pair, which sends both at once (docs/design.md, "Known
/// problem"). The server cannot reach a client's send queue except by making it send, and
/// cannot tell a client whose call is stuck from one with nothing to say: so a client that
/// stays silent for `after` following a message of ours (a reply, or a callback) is sent an
/// RPC NULL call on its back channel
/// (program 0x40000000, version 1: the Linux client's CB_NULL; any other client answers it
/// too, if only with PROG_UNAVAIL), and its reply is dropped here. One per silence (the NULL
/// call itself arms nothing): a client that goes on calling never gets one, an idle one gets
/// one after our last message.
struct Nudge {
    after: Option<Duration>,
    state: Mutex<NudgeState>,
    armed: tokio::sync::Notify,
}

#[derive(Default)]
struct NudgeState {
    /// When to nudge, if the client is silent until then.
    due: Option<tokio::time::Instant>,
    /// XIDs of our CB_NULLs not answered yet.
    sent: Vec<u32>,
    next_xid: u32,
}

/// The callback program the Linux client registers (RFC 8881 leaves the number to the
/// client's CREATE_SESSION; the transport does not see it), and NULL in it.
const NUDGE_PROGRAM: u32 = 0x4000_0000;

impl Nudge {
    /// For connection `conn_id`, whose callbacks the connection layer numbers up from its
    /// own start (`nfs_proto::transport::conn`): ours start 2^30 away from it, so the two
    /// never meet.
    fn new(after: Option<Duration>, conn_id: u64) -> Self {
        let theirs = nfs_proto::transport::first_callback_xid(conn_id);
        Self {
            after,
            state: Mutex::new(NudgeState {
                next_xid: theirs ^ 0x4000_0000,
                ..NudgeState::default()
            }),
            armed: tokio::sync::Notify::new(),
        }
    }

    /// A message went to the client: nudge it if it stays silent.
    fn arm(&self) {
        let Some(after) = self.after else {
            return;
        };
        self.state.lock().expect("nudge").due = Some(tokio::time::Instant::now() + after);
        self.armed.notify_one();
    }

    /// A message came from the client: it is awake.
    fn heard(&self) {
        self.state.lock().expect("nudge").due = None;
    }

    /// Whether the reply `xid` answers one of our CB_NULLs.
    fn answers(&self, xid: u32) -> bool {
        let mut st = self.state.lock().expect("nudge");
        match st.sent.iter().position(|&x| x == xid) {
            Some(i) => {
                st.sent.swap_remove(i);
                true
            }
            None => false,
        }
    }

    /// Waits until a nudge is due (the client stayed silent until then); the XID to send it
    /// with.
    async fn due(&self) -> u32 {
        loop {
            let due = self.state.lock().expect("nudge").due;
            match due {
                None => self.armed.notified().await,
                Some(t) => {
                    tokio::select! {
                        () = tokio::time::sleep_until(t) => {}
                        () = self.armed.notified() => continue,
                    }
                    let mut st = self.state.lock().expect("nudge");
                    if st.due.is_some_and(|d| d <= tokio::time::Instant::now()) {
                        st.due = None;
                        let xid = st.next_xid;
                        st.next_xid = st.next_xid.wrapping_add(1);
                        // Unanswered ones are forgotten after a few (a client without a
                        // back channel never answers).
                        if st.sent.len() >= 4 {
                            st.sent.remove(0);
                        }
                        st.sent.push(xid);
                        return xid;
                    }
                }
            }
        }
    }
}

/// The RPC NULL call of [`Nudge`]: XID, CALL, RPC version 2, program, version 1, procedure 0,
/// AUTH_NONE credential and verifier.
fn nudge_call(xid: u32) -> Bytes {
    let words = [xid, 0, 2, NUDGE_PROGRAM, 1, 0, 0, 0, 0, 0];
    let mut b = Vec::with_capacity(words.len() * 4);
    for w in words {
        b.extend_from_slice(&w.to_be_bytes());
    }
    Bytes::from(b)
}

/// Sends [`Nudge`]s on one connection until it ends.
async fn nudger(shared: Arc<Shared>, mut done: watch::Receiver<bool>) {
    let conn_id = shared.conn_id;
    let mut first = true;
    loop {
        let xid = tokio::select! {
            xid = shared.nudge.due() => xid,
            _ = done.changed() => return,
        };
        if first {
            tracing::info!(
                conn = conn_id,
                "RDMA client silent after our last message: sending it a CB_NULL to wake its send queue \
                 (a soft-RoCE client can leave a call unsent)"
            );
            first = false;
        } else {
            tracing::debug!(conn = conn_id, xid, "RDMA nudge (CB_NULL)");
        }
        shared.stats.nudges.fetch_add(1, Ordering::Relaxed);
        let credit = shared.credits.lock().expect("credits").grant();
        if let Err(e) = send_short(&shared, xid, credit, vec![nudge_call(xid)], None).await {
            tracing::debug!(conn = conn_id, "RDMA nudge not sent: {e}");
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[allow(clippy::single_range_in_vec_init)]
    fn reply_bytes_come_from_the_read_buffer_they_are_in_or_from_the_staged_copy() {
        // A reply of 30 bytes whose bytes 10..20 are READ data in a registered buffer at
        // 1000 (key 7); the other 20 are staged at 5000 (key 9).
        let src = Sources {
            in_place: vec![(10..20, 1000, 7)],
            _staged: Bytes::new(),
            staged_key: (5000, 9),
            items: vec![10..20],
        };
        let at = |s: Sge| (s.addr, s.len, s.lkey);
        assert_eq!(at(src.sge(0, 10)), (5000, 10, 9));
        assert_eq!(at(src.sge(12, 3)), (1002, 3, 7));
        assert_eq!(at(src.sge(20, 10)), (5010, 10, 9));
        assert!(src.in_place(19) && !src.in_place(20));
        // A Reply chunk's ranges are cut where the in-place piece begins and ends.
        assert_eq!(src.split(&[0..30]), vec![0..10, 10..20, 20..30]);
        assert_eq!(src.split(&[0..5, 15..25]), vec![0..5, 15..20, 20..25]);
    }

    async fn wait(n: &Nudge) -> Result<u32, tokio::time::error::Elapsed> {
        tokio::time::timeout(Duration::from_secs(5), n.due()).await
    }

    #[tokio::test(start_paused = true)]
    async fn a_silent_client_is_nudged_once_per_silence_and_a_calling_one_never() {
        let n = Nudge::new(Some(Duration::from_millis(250)), 7);
        // Armed, then the client calls within the time: no nudge.
        n.arm();
        tokio::time::sleep(Duration::from_millis(100)).await;
        n.heard();
        assert!(wait(&n).await.is_err());
        // Armed and silent: one nudge after 250 ms, whose reply is recognised once.
        n.arm();
        let start = tokio::time::Instant::now();
        let xid = wait(&n).await.expect("nudged");
        assert!(start.elapsed() >= Duration::from_millis(250));
        assert!(!n.answers(xid.wrapping_add(1)));
        assert!(n.answers(xid));
        assert!(!n.answers(xid));
        assert!(wait(&n).await.is_err(), "one per silence");
        // Re-armed by a later reply: a new XID.
        n.arm();
        assert_ne!(wait(&n).await.expect("nudged again"), xid);
        // Off: never.
        let off = Nudge::new(None, 7);
        off.arm();
        assert!(wait(&off).await.is_err());
    }

    #[test]
    fn the_nudge_is_an_rpc_null_call_of_the_callback_program() {
        let b = nudge_call(0x1234_5678);
        let w: Vec<u32> = b
            .chunks(4)
            .map(|c| u32::from_be_bytes(c.try_into().unwrap()))
            .collect();
        assert_eq!(w, [0x1234_5678, 0, 2, 0x4000_0000, 1, 0, 0, 0, 0, 0]);
    }
}

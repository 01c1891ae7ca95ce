//! The requester side: an RPC-over-RDMA version 1 connection to a server (RFC 8166, the NFS
//! binding of RFC 8267, the private data of RFC 8797), delivering whole RPC messages to
//! `nfs_proto::transport::start_records` so that calls, replies and the backchannel are handled
//! as on TCP.
//!
//! ```text
//!  call pieces ─> plan_call ─┬─ Inline     RDMA_MSG, header + call in one Send
//!                            ├─ ReadChunk  RDMA_MSG, the WRITE payload in a Read chunk
//!                            │             (registered memory) at its XDR position
//!                            └─ NoMsg      RDMA_NOMSG, the whole call in a Position-Zero
//!                                          Read chunk
//!  every call offers a Reply chunk (a registered buffer of Config::reply_chunk bytes)
//!
//!  Receive ─> header checks ─> reply_source ─┬─ Inline(bytes)   RDMA_MSG
//!                                            ├─ ReplyChunk(n)   RDMA_NOMSG: n bytes of the
//!                                            │                  Reply chunk (copied out)
//!                                            └─ Error           RDMA_ERROR: the call fails
//!          (a backchannel call, RFC 8167, is an RDMA_MSG whose message is a call)
//! ```
//!
//! Credits (section 3.3): no more calls are sent than the server's last grant allows; the
//! sink waits for a reply before sending more. Registered memory comes from per-connection
//! pools (the registration cache); [`Config::cache`] off registers a buffer for each use.

use std::collections::HashMap;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use futures_util::Stream;
use nfs_proto::rdma::{
    ChunkLists, InlineSize, Limits, PrivateData, RdmaBody, RdmaError, RdmaHeader, RdmaSegment,
    ReadSegment, RequesterCredits, Side, Thresholds, WriteChunk,
};
use nfs_proto::transport::RecordSink;
use nfs_proto::xdr::PAYLOAD_PIECE_MIN;
use tokio::sync::{mpsc, watch, Notify};

use crate::endpoint::{forward, Endpoint, QueueSizes};
use crate::pieces::word;
use crate::pool::{Pool, Pooled, Tally};
use crate::verbs::{Access, CmEventKind, CmId, EventChannel, SendOp};

/// How a client connection is sized.
#[derive(Clone, Debug)]
pub struct Config {
    /// Calls this client may have outstanding at most (the credits it asks for; the server's
    /// grant may be lower).
    pub credits: u32,
    /// Our inline thresholds (RFC 8797): the largest message we send and receive without
    /// chunks (the server's private data may lower them).
    pub inline: u32,
    /// Bytes of the Reply chunk every call offers: the largest reply expected (the session's
    /// maximum response size).
    pub reply_chunk: usize,
    /// Size of the pooled registered buffers that Read chunks are copied into (a call
    /// larger than this gets a buffer registered for it alone).
    pub chunk_buffer: usize,
    /// The registration cache: registered buffers are kept and reused (up to
    /// `buffers_kept` of each kind). Off: every Read chunk and Reply chunk is registered for
    /// its one call and deregistered after it.
    pub cache: bool,
    /// Free registered buffers kept per kind and connection when `cache` is on.
    pub buffers_kept: usize,
    /// How long address and route resolution and the connection may take.
    pub connect_timeout: Duration,
    /// Chunk list limits for the replies' headers.
    pub limits: Limits,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            credits: 32,
            inline: 4096,
            reply_chunk: (1 << 20) + (64 << 10),
            chunk_buffer: (1 << 20) + (64 << 10),
            cache: true,
            buffers_kept: 32,
            connect_timeout: Duration::from_secs(10),
            limits: Limits::default(),
        }
    }
}

/// Counters of the client's RDMA connections in this process.
#[derive(Debug, Default)]
pub struct Stats {
    /// Connections established.
    pub connections: AtomicU64,
    /// Calls sent inline (a Short Message).
    pub calls_inline: AtomicU64,
    /// Calls sent with a Read chunk (the payload pulled by the server).
    pub calls_read_chunk: AtomicU64,
    /// Calls sent as a Position-Zero Read chunk (`RDMA_NOMSG`).
    pub calls_nomsg: AtomicU64,
    /// Bytes offered in Read chunks (pulled by the server with RDMA Read).
    pub read_chunk_bytes: AtomicU64,
    /// Replies received inline.
    pub replies_inline: AtomicU64,
    /// Replies the server RDMA-wrote into the Reply chunk.
    pub replies_in_chunk: AtomicU64,
    /// Bytes of those replies.
    pub reply_chunk_bytes: AtomicU64,
    /// `RDMA_ERROR` replies and refused reply headers.
    pub errors: AtomicU64,
    /// Backchannel calls received.
    pub callbacks: AtomicU64,
    /// Memory registrations after connection setup (pool misses; every chunk without the
    /// cache).
    pub registrations: AtomicU64,
}

impl Stats {
    const fn new() -> Self {
        Self {
            connections: AtomicU64::new(0),
            calls_inline: AtomicU64::new(0),
            calls_read_chunk: AtomicU64::new(0),
            calls_nomsg: AtomicU64::new(0),
            read_chunk_bytes: AtomicU64::new(0),
            replies_inline: AtomicU64::new(0),
            replies_in_chunk: AtomicU64::new(0),
            reply_chunk_bytes: AtomicU64::new(0),
            errors: AtomicU64::new(0),
            callbacks: AtomicU64::new(0),
            registrations: AtomicU64::new(0),
        }
    }
}

impl std::fmt::Display for Stats {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let g = |a: &AtomicU64| a.load(Ordering::Relaxed);
        write!(
            f,
            "RDMA: connections {}; calls inline {}, with a Read chunk {}, RDMA_NOMSG {} ({} B \
             in Read chunks); replies inline {}, in the Reply chunk {} ({} B); errors {}; \
             callbacks {}; registrations {}",
            g(&self.connections),
            g(&self.calls_inline),
            g(&self.calls_read_chunk),
            g(&self.calls_nomsg),
            g(&self.read_chunk_bytes),
            g(&self.replies_inline),
            g(&self.replies_in_chunk),
            g(&self.reply_chunk_bytes),
            g(&self.errors),
            g(&self.callbacks),
            g(&self.registrations),
        )
    }
}

static STATS: Stats = Stats::new();

/// The counters of every RDMA client connection of this process.
pub fn stats() -> &'static Stats {
    &STATS
}

/// The messages received on a connection, as whole RPC messages.
pub type Records = Pin<Box<dyn Stream<Item = io::Result<Bytes>> + Send>>;

/// An established connection: hand `records` and `sink` to
/// `nfs_proto::transport::start_records`.
pub struct Connection {
    /// Received replies and backchannel calls.
    pub records: Records,
    /// Sends calls and backchannel replies.
    pub sink: Sink,
    /// Our address.
    pub local: SocketAddr,
    /// The server's address.
    pub peer: SocketAddr,
    /// The inline thresholds in use.
    pub thresholds: Thresholds,
}

/// What one call in flight holds until its reply: the Reply chunk it offered and the Read
/// chunk memory the server pulls.
struct InFlight {
    reply: Pooled,
    reply_chunk: WriteChunk,
    _read: Option<Pooled>,
}

/// What the reader, the sink and the connection's guard share.
struct Shared {
    ep: Arc<Endpoint>,
    thresholds: Thresholds,
    limits: Limits,
    reply_chunk: usize,
    sends: Arc<Pool>,
    chunks: Arc<Pool>,
    replies: Arc<Pool>,
    pending: Mutex<HashMap<u32, InFlight>>,
    credits: Mutex<RequesterCredits>,
    credit_freed: Notify,
    closed: watch::Sender<bool>,
}

impl Shared {
    fn release_credit(&self, grant: u32) {
        // A reply with no call in flight (never ours) changes nothing.
        let _ = self.credits.lock().expect("credits").on_reply(grant);
        self.credit_freed.notify_waiters();
    }
}

/// Ends the connection when the records stream (the connection's driver) goes away.
struct Guard(Arc<Shared>);

impl Drop for Guard {
    fn drop(&mut self) {
        let _ = self.0.closed.send(true);
        self.0.ep.id.disconnect();
        self.0.ep.stop();
        self.0.pending.lock().expect("pending").clear();
        self.0.credit_freed.notify_waiters();
    }
}

fn inline_size(bytes: u32) -> InlineSize {
    let kib = (bytes / 1024).clamp(1, 256);
    InlineSize::from_bytes(kib * 1024).expect("a whole number of KiB in range")
}

fn other(what: String) -> io::Error {
    io::Error::other(what)
}

/// Connects to the RPC-over-RDMA server at `addr`: resolves the address and route, sets up
/// the queue pair and receive buffers, and connects with our RFC 8797 private data.
pub async fn connect(addr: SocketAddr, cfg: &Config) -> io::Result<Connection> {
    tokio::time::timeout(cfg.connect_timeout, connect_inner(addr, cfg))
        .await
        .map_err(|_| {
            io::Error::new(
                io::ErrorKind::TimedOut,
                format!("RDMA connect to {addr} timed out"),
            )
        })?
}

async fn wait_for(channel: &EventChannel, want: CmEventKind) -> io::Result<Vec<u8>> {
    loop {
        let ev = channel.next().await?;
        match ev.kind {
            k if k == want => return Ok(ev.private_data),
            CmEventKind::Other(_) => continue,
            CmEventKind::Rejected => {
                return Err(io::Error::new(
                    io::ErrorKind::ConnectionRefused,
                    format!("RDMA connection rejected (status {})", ev.status),
                ))
            }
            k => {
                return Err(other(format!(
                    "RDMA CM: {k:?} (status {}) while waiting for {want:?}",
                    ev.status
                )))
            }
        }
    }
}

async fn connect_inner(addr: SocketAddr, cfg: &Config) -> io::Result<Connection> {
    let channel = EventChannel::new()?;
    let id = CmId::new(channel.clone())?;
    let ms = cfg.connect_timeout.as_millis().min(i32::MAX as u128) as i32;
    id.resolve_addr(addr, ms)?;
    wait_for(&channel, CmEventKind::AddrResolved).await?;
    id.resolve_route(ms)?;
    wait_for(&channel, CmEventKind::RouteResolved).await?;
    let ours = PrivateData {
        remote_invalidation: false,
        send_size: inline_size(cfg.inline),
        recv_size: inline_size(cfg.inline),
    };
    let credits = cfg.credits.clamp(1, 256);
    // Receives: one per credit, plus room for backchannel calls.
    let sizes = QueueSizes {
        recvs: credits + 8,
        recv_size: ours.recv_size.bytes() as usize,
        sends: 2 * credits + 16,
        send_sge: 1,
    };
    let ep = Endpoint::new(id, sizes)?;
    ep.id.connect(&ours.to_bytes(), 16)?;
    let peer_private = wait_for(&channel, CmEventKind::Established).await?;
    let peer = (!peer_private.is_empty()).then_some(&peer_private[..]);
    let (thresholds, why) = Thresholds::negotiate(&ours, peer);
    if let Some(why) = why {
        tracing::debug!(%addr, "server's RDMA private data ignored: {why}");
    }
    STATS.connections.fetch_add(1, Ordering::Relaxed);
    let local = ep.id.local_addr().unwrap_or(([0, 0, 0, 0], 0).into());
    tracing::info!(%addr, send = thresholds.send, recv = thresholds.recv, "RDMA connection up");

    let (recv_tx, recv_rx) = mpsc::unbounded_channel();
    tokio::spawn(ep.clone().reap(recv_tx));
    let keep = if cfg.cache { cfg.buffers_kept } else { 0 };
    let pd = ep.pd.clone();
    let (closed, closed_rx) = watch::channel(false);
    let tally: Tally = Arc::new(|| {
        STATS.registrations.fetch_add(1, Ordering::Relaxed);
    });
    let shared = Arc::new(Shared {
        ep: ep.clone(),
        thresholds,
        limits: cfg.limits,
        reply_chunk: cfg.reply_chunk.max(4096),
        sends: Pool::new(
            pd.clone(),
            thresholds.send.max(1024) as usize,
            64,
            Access::Local,
            tally.clone(),
        ),
        chunks: Pool::new(
            pd.clone(),
            cfg.chunk_buffer,
            keep,
            Access::Remote,
            tally.clone(),
        ),
        replies: Pool::new(
            pd,
            cfg.reply_chunk.max(4096),
            keep,
            Access::Remote,
            tally.clone(),
        ),
        pending: Mutex::new(HashMap::new()),
        credits: Mutex::new(RequesterCredits::new(credits)),
        credit_freed: Notify::new(),
        closed,
    });
    // The CM events of the connection: a disconnect ends it.
    {
        let shared = shared.clone();
        let mut closed_rx = closed_rx.clone();
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    ev = channel.next() => match ev {
                        Ok(ev) if matches!(ev.kind, CmEventKind::Other(_)) => continue,
                        Ok(ev) => tracing::debug!("RDMA connection event {:?}", ev.kind),
                        Err(e) => tracing::debug!("RDMA event channel: {e}"),
                    },
                    _ = closed_rx.changed() => {}
                }
                break;
            }
            let _ = shared.closed.send(true);
            shared.credit_freed.notify_waiters();
        });
    }
    let records = reader(shared.clone(), recv_rx, closed_rx);
    Ok(Connection {
        records,
        sink: Sink(shared),
        local,
        peer: addr,
        thresholds,
    })
}

/// The received replies and backchannel calls as RPC records.
fn reader(
    shared: Arc<Shared>,
    mut received: mpsc::UnboundedReceiver<crate::verbs::Completion>,
    mut closed: watch::Receiver<bool>,
) -> Records {
    let (tx, mut rx) = mpsc::channel::<io::Result<Bytes>>(16);
    let guard = Guard(shared.clone());
    tokio::spawn(async move {
        loop {
            let c = tokio::select! {
                c = received.recv() => c,
                _ = closed.changed() => None,
            };
            let Some(c) = c else {
                let _ = tx
                    .send(Err(io::Error::new(
                        io::ErrorKind::ConnectionAborted,
                        "RDMA connection closed",
                    )))
                    .await;
                break;
            };
            if !c.ok() {
                let _ = tx
                    .send(Err(io::Error::new(
                        io::ErrorKind::ConnectionAborted,
                        format!("RDMA receive failed (ibv_wc_status {})", c.status),
                    )))
                    .await;
                break;
            }
            let outcome = match shared.ep.take_received(&c) {
                Ok(msg) => receive(&shared, msg),
                Err(e) => Err(e),
            };
            if !forward(&tx, outcome).await {
                break;
            }
        }
    });
    Box::pin(futures_util::stream::poll_fn(move |cx| {
        let _hold = &guard;
        rx.poll_recv(cx)
    }))
}

/// Where a reply's RPC message is, by [`reply_source`].
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Source {
    /// Inline, after the header.
    Inline(Bytes),
    /// In the Reply chunk the call offered: this many bytes from its start.
    ReplyChunk(usize),
    /// `RDMA_ERROR`: the call failed.
    Error(RdmaError),
}

/// Where the RPC message of a reply with `header` is, given the Reply chunk its call
/// offered: checks that the returned chunks are the offered ones (no longer), that no Write
/// chunk was used (we offer none), and that an `RDMA_NOMSG` reply names some bytes.
pub(crate) fn reply_source(
    header: &RdmaHeader,
    rpc_message: Bytes,
    offered: &WriteChunk,
) -> Result<Source, String> {
    let offered_lists = ChunkLists {
        reads: Vec::new(),
        writes: Vec::new(),
        reply: Some(offered.clone()),
    };
    let (lists, nomsg) = match &header.body {
        RdmaBody::Error(e) => return Ok(Source::Error(*e)),
        RdmaBody::Msg(l) => (l, false),
        RdmaBody::NoMsg(l) => (l, true),
    };
    lists
        .check_reply_against(&offered_lists)
        .map_err(|v| format!("reply chunks: {v}"))?;
    if !lists.writes.is_empty() {
        return Err("a Write chunk in the reply, none offered".into());
    }
    if !nomsg {
        return Ok(Source::Inline(rpc_message));
    }
    let chunk = lists
        .reply
        .as_ref()
        .ok_or("RDMA_NOMSG reply without a Reply chunk")?;
    // The returned segments are a prefix of the offered ones, each filled in order: only
    // the last may be partly filled.
    let mut n = 0usize;
    for (i, (got, sent)) in chunk.segments.iter().zip(&offered.segments).enumerate() {
        n += got.length as usize;
        if got.length < sent.length && i + 1 < chunk.segments.len() {
            return Err("a Reply chunk segment partly filled before another".into());
        }
    }
    if n < 4 {
        return Err(format!("RDMA_NOMSG reply of {n} bytes"));
    }
    Ok(Source::ReplyChunk(n))
}

/// An RPC reply saying `SYSTEM_ERR` for `xid`: what a call gets when the server answered it
/// with `RDMA_ERROR` or a reply we refused.
pub(crate) fn system_err_reply(xid: u32) -> Bytes {
    let words = [xid, 1, 0, 0, 0, 5];
    Bytes::from(
        words
            .iter()
            .flat_map(|w| w.to_be_bytes())
            .collect::<Vec<u8>>(),
    )
}

/// Whether `msg` (an RPC message) is a call.
fn is_call(msg: &[u8]) -> bool {
    msg.get(4..8) == Some(&[0, 0, 0, 0][..])
}

/// One received message: the record to deliver, nothing, or an error closing the connection.
fn receive(shared: &Shared, msg: Bytes) -> io::Result<Option<Bytes>> {
    deliver(msg, &shared.limits, &shared.pending, |grant| {
        shared.release_credit(grant)
    })
}

/// A call in flight as [`deliver`] sees it: the Reply chunk it offered and that chunk's
/// bytes (as the server RDMA-wrote them).
pub(crate) trait Offered {
    /// The Reply chunk as offered.
    fn reply_chunk(&self) -> &WriteChunk;
    /// The memory behind it.
    fn reply_bytes(&self) -> &[u8];
}

impl Offered for InFlight {
    fn reply_chunk(&self) -> &WriteChunk {
        &self.reply_chunk
    }
    fn reply_bytes(&self) -> &[u8] {
        self.reply.as_ref()
    }
}

/// What a received message `msg` means for the calls in `pending` (by XID): a backchannel
/// call or a reply to deliver as a record (a refused reply, or `RDMA_ERROR`, becomes a
/// `SYSTEM_ERR` reply to its call), nothing (a reply to no call of ours), or an error that
/// closes the connection (a header without an XID). A reply takes its call out of `pending`
/// and hands the server's credit grant to `release`.
pub(crate) fn deliver<O: Offered>(
    msg: Bytes,
    limits: &Limits,
    pending: &Mutex<HashMap<u32, O>>,
    release: impl Fn(u32),
) -> io::Result<Option<Bytes>> {
    let got = match RdmaHeader::decode_received(msg, Side::Requester, limits) {
        Ok(g) => g,
        Err(e) => {
            STATS.errors.fetch_add(1, Ordering::Relaxed);
            tracing::debug!("RDMA reply header refused: {e}");
            let Some(xid) = e.xid else {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("RDMA header: {e}"),
                ));
            };
            // Fail the call with that XID, if it is ours.
            if pending.lock().expect("pending").remove(&xid).is_some() {
                release(1);
                return Ok(Some(system_err_reply(xid)));
            }
            return Ok(None);
        }
    };
    let xid = got.header.xid;
    if matches!(got.header.body, RdmaBody::Msg(_)) && is_call(&got.rpc_message) {
        // A backchannel call (RFC 8167).
        STATS.callbacks.fetch_add(1, Ordering::Relaxed);
        return Ok(Some(got.rpc_message));
    }
    let Some(call) = pending.lock().expect("pending").remove(&xid) else {
        tracing::debug!(xid, "RDMA reply to no call in flight: dropped");
        return Ok(None);
    };
    release(got.header.credit);
    match reply_source(&got.header, got.rpc_message, call.reply_chunk()) {
        Ok(Source::Inline(m)) => {
            STATS.replies_inline.fetch_add(1, Ordering::Relaxed);
            Ok(Some(m))
        }
        Ok(Source::ReplyChunk(n)) => {
            let mem = call.reply_bytes();
            if n > mem.len() {
                STATS.errors.fetch_add(1, Ordering::Relaxed);
                tracing::warn!(xid, "RDMA reply of {n} bytes is past its Reply chunk");
                return Ok(Some(system_err_reply(xid)));
            }
            STATS.replies_in_chunk.fetch_add(1, Ordering::Relaxed);
            STATS
                .reply_chunk_bytes
                .fetch_add(n as u64, Ordering::Relaxed);
            // Copied out, so that the registered buffer goes back to the pool now: left in
            // place, READ data kept by the caller (a read cache) would pin registered memory
            // beyond the pool's bound, and each buffer so held costs a new registration.
            let bytes = Bytes::copy_from_slice(&mem[..n]);
            drop(call);
            if bytes.get(..4) != Some(&xid.to_be_bytes()[..]) {
                STATS.errors.fetch_add(1, Ordering::Relaxed);
                tracing::debug!(xid, "RDMA Reply chunk holds another XID's message");
                return Ok(Some(system_err_reply(xid)));
            }
            Ok(Some(bytes))
        }
        Ok(Source::Error(e)) => {
            STATS.errors.fetch_add(1, Ordering::Relaxed);
            tracing::warn!(xid, "server answered RDMA_ERROR {e:?}");
            Ok(Some(system_err_reply(xid)))
        }
        Err(why) => {
            STATS.errors.fetch_add(1, Ordering::Relaxed);
            tracing::warn!(xid, "RDMA reply refused: {why}");
            Ok(Some(system_err_reply(xid)))
        }
    }
}

/// How a call goes out, by [`plan_call`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum CallPlan {
    /// The whole call inline (`RDMA_MSG`, no Read chunk).
    Inline,
    /// Piece `piece` in a Read chunk at XDR position `position`; the rest inline, without
    /// the piece's `pad` bytes of XDR padding (`RDMA_MSG`).
    ReadChunk {
        /// Index of the piece.
        piece: usize,
        /// Its offset in the call.
        position: u32,
        /// The padding bytes after it, left out of the inline part.
        pad: usize,
    },
    /// The whole call in a Position-Zero Read chunk (`RDMA_NOMSG`).
    NoMsg,
}

fn pad(n: usize) -> usize {
    (4 - n % 4) % 4
}

/// Bytes a Read segment adds to a header: the list's "one more" word, the position and the
/// segment.
const READ_SEGMENT_WIRE: usize = 4 + 4 + RdmaSegment::WIRE_LEN;

/// Decides how a call of `lens` (its pieces' lengths) goes out, given the length of its
/// header without Read chunks and the server's inline receive size: inline when it fits;
/// else the largest payload piece (at least `PAYLOAD_PIECE_MIN` bytes, at a 4-byte-aligned
/// offset past the start: a Read chunk at position zero is the whole call) in a Read chunk if
/// the rest then fits; else the whole call at position zero.
pub(crate) fn plan_call(lens: &[usize], header_len: usize, inline: usize) -> CallPlan {
    let total: usize = lens.iter().sum();
    if header_len + total <= inline {
        return CallPlan::Inline;
    }
    let mut best: Option<(usize, usize)> = None;
    let mut at = 0usize;
    for (i, &n) in lens.iter().enumerate() {
        if n >= PAYLOAD_PIECE_MIN
            && at > 0
            && at.is_multiple_of(4)
            && best.is_none_or(|(_, m)| n > lens[m])
        {
            best = Some((at, i));
        }
        at += n;
    }
    if let Some((position, piece)) = best {
        let n = lens[piece];
        let after: usize = lens[piece + 1..].iter().sum();
        let p = pad(n);
        if after >= p && header_len + READ_SEGMENT_WIRE + total - n - p <= inline {
            return CallPlan::ReadChunk {
                piece,
                position: position as u32,
                pad: p,
            };
        }
    }
    CallPlan::NoMsg
}

/// The pieces of a call without piece `piece` and the `pad` bytes after it.
pub(crate) fn without_piece(pieces: &[Bytes], piece: usize, pad: usize) -> Vec<Bytes> {
    let mut out = Vec::with_capacity(pieces.len());
    let mut skip = 0usize;
    for (i, p) in pieces.iter().enumerate() {
        if i == piece {
            skip = pad;
            continue;
        }
        if skip > 0 {
            let n = skip.min(p.len());
            skip -= n;
            if n < p.len() {
                out.push(p.slice(n..));
            }
            continue;
        }
        out.push(p.clone());
    }
    out
}

/// The header of a call: `reads` (empty inline) and the offered Reply chunk.
pub(crate) fn call_header(
    xid: u32,
    credit: u32,
    nomsg: bool,
    reads: Vec<ReadSegment>,
    reply: WriteChunk,
) -> RdmaHeader {
    let lists = ChunkLists {
        reads,
        writes: Vec::new(),
        reply: Some(reply),
    };
    RdmaHeader {
        xid,
        credit,
        body: if nomsg {
            RdmaBody::NoMsg(lists)
        } else {
            RdmaBody::Msg(lists)
        },
    }
}

/// Sends the connection's outgoing RPC messages: our calls and our backchannel replies.
pub struct Sink(Arc<Shared>);

impl RecordSink for Sink {
    fn send(
        &mut self,
        pieces: Vec<Bytes>,
    ) -> impl std::future::Future<Output = io::Result<()>> + Send {
        let shared = self.0.clone();
        async move { send_message(&shared, pieces).await }
    }
}

fn encode(h: &RdmaHeader) -> Bytes {
    nfs_proto::xdr::to_bytes(h)
}

fn closed_err() -> io::Error {
    io::Error::new(io::ErrorKind::ConnectionAborted, "RDMA connection closed")
}

/// Copies `pieces` into a registered send buffer and posts the Send; the buffer is released
/// when the Send completes.
async fn send_inline(shared: &Shared, pieces: &[Bytes]) -> io::Result<()> {
    let len: usize = pieces.iter().map(Bytes::len).sum();
    let mut buf = shared.sends.take(len)?;
    copy_into(&mut buf, 0, pieces);
    let sge = buf.mr().sge(0, len);
    let posted = shared.ep.post(SendOp::Send, &[sge]).await?;
    tokio::spawn(async move {
        if let Err(e) = posted.done().await {
            tracing::debug!("RDMA Send: {e}");
        }
        drop(buf);
    });
    Ok(())
}

fn copy_into(buf: &mut Pooled, mut at: usize, pieces: &[Bytes]) {
    let bytes = buf.mr_mut().bytes_mut();
    for p in pieces {
        bytes[at..at + p.len()].copy_from_slice(p);
        at += p.len();
    }
}

async fn wait_credit(shared: &Shared) -> io::Result<u32> {
    loop {
        let freed = shared.credit_freed.notified();
        if *shared.closed.borrow() {
            return Err(closed_err());
        }
        {
            let mut c = shared.credits.lock().expect("credits");
            if c.try_send().is_ok() {
                return Ok(c.credit_request());
            }
        }
        freed.await;
    }
}

async fn send_message(shared: &Arc<Shared>, pieces: Vec<Bytes>) -> io::Result<()> {
    let (Some(xid), Some(mtype)) = (word(&pieces, 0), word(&pieces, 4)) else {
        return Ok(());
    };
    let total: usize = pieces.iter().map(Bytes::len).sum();
    if mtype != 0 {
        // A backchannel reply: inline, no credit.
        let credit = shared.credits.lock().expect("credits").credit_request();
        let header = encode(&RdmaHeader {
            xid,
            credit,
            body: RdmaBody::Msg(ChunkLists::default()),
        });
        if header.len() + total > shared.thresholds.send as usize {
            tracing::warn!(
                xid,
                "backchannel reply of {total} bytes is over the inline threshold: not sent"
            );
            return Ok(());
        }
        let mut all = vec![header];
        all.extend(pieces);
        return send_inline(shared, &all).await;
    }
    let credit = wait_credit(shared).await?;
    let sent = send_call(shared, xid, credit, pieces, total).await;
    if sent.is_err() {
        shared.pending.lock().expect("pending").remove(&xid);
        shared.release_credit(1);
    }
    sent
}

async fn send_call(
    shared: &Arc<Shared>,
    xid: u32,
    credit: u32,
    pieces: Vec<Bytes>,
    total: usize,
) -> io::Result<()> {
    let reply = shared.replies.take(shared.reply_chunk)?;
    let reply_chunk = WriteChunk {
        segments: vec![RdmaSegment {
            handle: reply.mr().rkey(),
            length: shared.reply_chunk as u32,
            offset: reply.mr().addr(),
        }],
    };
    let header_len = encode(&call_header(
        xid,
        credit,
        false,
        Vec::new(),
        reply_chunk.clone(),
    ))
    .len();
    let plan = plan_call(
        &pieces.iter().map(Bytes::len).collect::<Vec<_>>(),
        header_len,
        shared.thresholds.send as usize,
    );
    let (header, inline, read) = match plan {
        CallPlan::Inline => {
            STATS.calls_inline.fetch_add(1, Ordering::Relaxed);
            (
                call_header(xid, credit, false, Vec::new(), reply_chunk.clone()),
                pieces,
                None,
            )
        }
        CallPlan::ReadChunk {
            piece,
            position,
            pad,
        } => {
            let data = &pieces[piece];
            let mut buf = shared.chunks.take(data.len())?;
            copy_into(&mut buf, 0, std::slice::from_ref(data));
            let seg = ReadSegment {
                position,
                target: RdmaSegment {
                    handle: buf.mr().rkey(),
                    length: data.len() as u32,
                    offset: buf.mr().addr(),
                },
            };
            STATS.calls_read_chunk.fetch_add(1, Ordering::Relaxed);
            STATS
                .read_chunk_bytes
                .fetch_add(data.len() as u64, Ordering::Relaxed);
            (
                call_header(xid, credit, false, vec![seg], reply_chunk.clone()),
                without_piece(&pieces, piece, pad),
                Some(buf),
            )
        }
        CallPlan::NoMsg => {
            let mut buf = shared.chunks.take(total)?;
            copy_into(&mut buf, 0, &pieces);
            let seg = ReadSegment {
                position: 0,
                target: RdmaSegment {
                    handle: buf.mr().rkey(),
                    length: total as u32,
                    offset: buf.mr().addr(),
                },
            };
            STATS.calls_nomsg.fetch_add(1, Ordering::Relaxed);
            STATS
                .read_chunk_bytes
                .fetch_add(total as u64, Ordering::Relaxed);
            (
                call_header(xid, credit, true, vec![seg], reply_chunk.clone()),
                Vec::new(),
                Some(buf),
            )
        }
    };
    // In place before the Send: the reply may come back at once.
    shared.pending.lock().expect("pending").insert(
        xid,
        InFlight {
            reply,
            reply_chunk,
            _read: read,
        },
    );
    let mut all = vec![encode(&header)];
    all.extend(inline);
    let len: usize = all.iter().map(Bytes::len).sum();
    if len > shared.thresholds.send as usize {
        return Err(other(format!(
            "RDMA call header of {len} bytes is over the inline threshold"
        )));
    }
    send_inline(shared, &all).await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seg(handle: u32, length: u32, offset: u64) -> RdmaSegment {
        RdmaSegment {
            handle,
            length,
            offset,
        }
    }

    #[test]
    fn small_calls_go_inline() {
        assert_eq!(plan_call(&[100, 600, 20], 48, 1024), CallPlan::Inline);
        assert_eq!(plan_call(&[976], 48, 1024), CallPlan::Inline);
    }

    #[test]
    fn a_write_payload_goes_in_a_read_chunk_at_its_position() {
        // header 200, data 1 MiB + 3 (pad 1: the next piece starts with it), tail 40.
        let plan = plan_call(&[200, (1 << 20) + 3, 41], 48, 4096);
        assert_eq!(
            plan,
            CallPlan::ReadChunk {
                piece: 1,
                position: 200,
                pad: 1
            }
        );
        let pieces = vec![
            Bytes::from(vec![1u8; 200]),
            Bytes::from(vec![2u8; (1 << 20) + 3]),
            Bytes::from([vec![0u8], vec![3u8; 40]].concat()),
        ];
        let rest = without_piece(&pieces, 1, 1);
        let flat: Vec<u8> = rest.iter().flat_map(|p| p.to_vec()).collect();
        assert_eq!(flat.len(), 240);
        assert!(flat[..200].iter().all(|&b| b == 1) && flat[200..].iter().all(|&b| b == 3));
    }

    #[test]
    fn calls_too_large_even_without_the_payload_go_at_position_zero() {
        // Many WRITEs (list I/O): moving the largest leaves too much inline.
        let lens = [300, 600, 50, 600, 50, 600, 50, 600, 50, 600, 50];
        assert_eq!(plan_call(&lens, 48, 1024), CallPlan::NoMsg);
        // No payload piece at all, or only at the very start (position zero means the whole
        // call).
        assert_eq!(plan_call(&[400; 12], 48, 4096), CallPlan::NoMsg);
        assert_eq!(plan_call(&[5000], 48, 4096), CallPlan::NoMsg);
        // A payload at an unaligned offset is never moved.
        assert_eq!(plan_call(&[2, 8000, 2], 48, 4096), CallPlan::NoMsg);
    }

    #[test]
    fn call_headers_offer_the_reply_chunk_and_encode_as_rfc_8166() {
        let reply = WriteChunk {
            segments: vec![seg(7, 4096, 0x1000)],
        };
        let h = call_header(9, 32, false, Vec::new(), reply.clone());
        let b = encode(&h);
        // xid, vers, credit, RDMA_MSG, no reads, no writes, reply: 1 segment.
        let w: Vec<u32> = b
            .chunks(4)
            .map(|c| u32::from_be_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        assert_eq!(&w[..8], &[9, 1, 32, 0, 0, 0, 1, 1]);
        assert_eq!(&w[8..], &[7, 4096, 0, 0x1000]);
        let r = ReadSegment {
            position: 0,
            target: seg(5, 100, 0x2000),
        };
        let h = call_header(9, 32, true, vec![r], reply);
        let got = RdmaHeader::decode_received(encode(&h), Side::Responder, &Limits::default())
            .expect("a valid call");
        assert_eq!(got.header, h);
    }

    fn reply_header(body: RdmaBody) -> RdmaHeader {
        RdmaHeader {
            xid: 9,
            credit: 4,
            body,
        }
    }

    #[test]
    fn replies_are_found_inline_or_in_the_reply_chunk() {
        let offered = WriteChunk {
            segments: vec![seg(7, 4096, 0x1000)],
        };
        let msg = Bytes::from_static(&[0, 0, 0, 9, 0, 0, 0, 1]);
        let h = reply_header(RdmaBody::Msg(ChunkLists::default()));
        assert_eq!(
            reply_source(&h, msg.clone(), &offered),
            Ok(Source::Inline(msg))
        );
        let h = reply_header(RdmaBody::NoMsg(ChunkLists {
            reply: Some(WriteChunk {
                segments: vec![seg(7, 300, 0x1000)],
            }),
            ..ChunkLists::default()
        }));
        assert_eq!(
            reply_source(&h, Bytes::new(), &offered),
            Ok(Source::ReplyChunk(300))
        );
        let h = reply_header(RdmaBody::Error(RdmaError::Chunk));
        assert_eq!(
            reply_source(&h, Bytes::new(), &offered),
            Ok(Source::Error(RdmaError::Chunk))
        );
    }

    #[test]
    fn bad_replies_are_refused() {
        let offered = WriteChunk {
            segments: vec![seg(7, 4096, 0x1000)],
        };
        let nomsg = |segments| {
            reply_header(RdmaBody::NoMsg(ChunkLists {
                reply: Some(WriteChunk { segments }),
                ..ChunkLists::default()
            }))
        };
        // Longer than offered, another handle, another address, too short to be a reply.
        for bad in [
            nomsg(vec![seg(7, 4097, 0x1000)]),
            nomsg(vec![seg(8, 10, 0x1000)]),
            nomsg(vec![seg(7, 10, 0x1004)]),
            nomsg(vec![seg(7, 2, 0x1000)]),
            nomsg(vec![seg(7, 10, 0x1000), seg(7, 10, 0x2000)]),
        ] {
            assert!(
                reply_source(&bad, Bytes::new(), &offered).is_err(),
                "{bad:?}"
            );
        }
        // A Write chunk that was never offered.
        let h = reply_header(RdmaBody::Msg(ChunkLists {
            writes: vec![WriteChunk {
                segments: vec![seg(1, 1, 1)],
            }],
            ..ChunkLists::default()
        }));
        assert!(reply_source(&h, Bytes::new(), &offered).is_err());
    }

    #[test]
    fn refused_calls_get_a_system_err_reply() {
        let r = system_err_reply(0x0102_0304);
        let (msg, body) = nfs_proto::rpc::RpcMsg::decode_header(r).expect("an RPC reply");
        assert_eq!(msg.xid, 0x0102_0304);
        assert!(body.is_empty());
        assert!(matches!(
            msg.body,
            nfs_proto::rpc::MsgBody::Reply(nfs_proto::rpc::ReplyBody::Accepted(ref a))
                if a.stat == nfs_proto::rpc::AcceptStat::SystemErr
        ));
    }

    #[test]
    fn calls_and_replies_are_told_apart() {
        assert!(is_call(&[0, 0, 0, 1, 0, 0, 0, 0]));
        assert!(!is_call(&[0, 0, 0, 1, 0, 0, 0, 1]));
        assert!(!is_call(&[0, 0, 0, 1]));
    }

    /// A call in flight for [`deliver`]'s tests: a 64-byte Reply chunk at 0x1000, handle 7,
    /// holding an RPC reply for XID 9 padded with zeros.
    struct TestCall(WriteChunk, Vec<u8>);

    impl Offered for TestCall {
        fn reply_chunk(&self) -> &WriteChunk {
            &self.0
        }
        fn reply_bytes(&self) -> &[u8] {
            &self.1
        }
    }

    fn pending_call() -> Mutex<HashMap<u32, TestCall>> {
        let mut bytes = vec![0u8; 64];
        bytes[..8].copy_from_slice(&[0, 0, 0, 9, 0, 0, 0, 1]);
        let chunk = WriteChunk {
            segments: vec![seg(7, 64, 0x1000)],
        };
        Mutex::new(HashMap::from([(9, TestCall(chunk, bytes))]))
    }

    fn run(
        msg: Vec<u8>,
        pending: &Mutex<HashMap<u32, TestCall>>,
    ) -> (io::Result<Option<Bytes>>, Vec<u32>) {
        let grants = Mutex::new(Vec::new());
        let r = deliver(Bytes::from(msg), &Limits::default(), pending, |g| {
            grants.lock().unwrap().push(g)
        });
        (r, grants.into_inner().unwrap())
    }

    fn header_bytes(h: &RdmaHeader, rest: &[u8]) -> Vec<u8> {
        let mut v = encode(h).to_vec();
        v.extend_from_slice(rest);
        v
    }

    #[test]
    fn replies_reach_their_call_inline_or_from_the_reply_chunk() {
        let pending = pending_call();
        let nomsg = reply_header(RdmaBody::NoMsg(ChunkLists {
            reply: Some(WriteChunk {
                segments: vec![seg(7, 24, 0x1000)],
            }),
            ..ChunkLists::default()
        }));
        let (r, grants) = run(header_bytes(&nomsg, &[]), &pending);
        let got = r.unwrap().unwrap();
        assert_eq!(got.len(), 24);
        assert_eq!(&got[..8], &[0, 0, 0, 9, 0, 0, 0, 1]);
        assert_eq!(grants, vec![4]);
        assert!(pending.lock().unwrap().is_empty());

        let pending = pending_call();
        let msg = reply_header(RdmaBody::Msg(ChunkLists::default()));
        let (r, _) = run(header_bytes(&msg, &[0, 0, 0, 9, 0, 0, 0, 1]), &pending);
        assert_eq!(&r.unwrap().unwrap()[..], &[0, 0, 0, 9, 0, 0, 0, 1]);
    }

    #[test]
    fn backchannel_calls_are_delivered_and_leave_the_calls_alone() {
        let pending = pending_call();
        let msg = RdmaHeader {
            xid: 77,
            credit: 1,
            body: RdmaBody::Msg(ChunkLists::default()),
        };
        let (r, grants) = run(
            header_bytes(&msg, &[0, 0, 0, 77, 0, 0, 0, 0, 0, 0, 0, 2]),
            &pending,
        );
        assert_eq!(r.unwrap().unwrap().len(), 12);
        assert!(grants.is_empty());
        assert_eq!(pending.lock().unwrap().len(), 1);
    }

    #[test]
    fn bad_server_messages_fail_the_call_or_close_never_panic() {
        let sys_err = system_err_reply(9);
        // No XID at all: the connection closes.
        let (r, _) = run(vec![0, 0], &pending_call());
        assert!(r.is_err());
        // A wrong version, an unknown procedure, a truncated header: the call fails.
        for bad in [
            vec![0, 0, 0, 9, 0, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0, 0],
            vec![0, 0, 0, 9, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 9],
            vec![0, 0, 0, 9, 0, 0, 0, 1, 0, 0],
        ] {
            let pending = pending_call();
            let (r, grants) = run(bad, &pending);
            assert_eq!(r.unwrap(), Some(sys_err.clone()));
            assert_eq!(grants, vec![1]);
            assert!(pending.lock().unwrap().is_empty());
        }
        // Too many Write chunks (the count is checked before anything is allocated).
        let mut many = vec![0, 0, 0, 9, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0];
        for _ in 0..100 {
            many.extend_from_slice(&[0, 0, 0, 1, 0, 0, 0, 0]);
        }
        let (r, _) = run(many, &pending_call());
        assert_eq!(r.unwrap(), Some(sys_err.clone()));
        // A reply longer than the Reply chunk offered.
        let long = reply_header(RdmaBody::NoMsg(ChunkLists {
            reply: Some(WriteChunk {
                segments: vec![seg(7, 65, 0x1000)],
            }),
            ..ChunkLists::default()
        }));
        let (r, _) = run(header_bytes(&long, &[]), &pending_call());
        assert_eq!(r.unwrap(), Some(sys_err.clone()));
        // RDMA_ERROR.
        let err = reply_header(RdmaBody::Error(RdmaError::Chunk));
        let (r, grants) = run(header_bytes(&err, &[]), &pending_call());
        assert_eq!(r.unwrap(), Some(sys_err.clone()));
        assert_eq!(grants, vec![4]);
        // A reply to no call of ours is dropped.
        let (r, grants) = run(header_bytes(&err, &[]), &Mutex::new(HashMap::new()));
        assert_eq!(r.unwrap(), None);
        assert!(grants.is_empty());
    }

    #[test]
    fn a_zero_credit_grant_still_leaves_one_call() {
        let mut c = RequesterCredits::new(32);
        c.try_send().unwrap();
        c.on_reply(0).unwrap();
        assert!(c.can_send());
        assert_eq!(c.limit(), 1);
    }
}

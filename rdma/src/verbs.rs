//! The rdma-core calls the transport makes, behind safe types: an RDMA-CM event channel and
//! identifiers (listen, accept and connect with RFC 8797 private data), and for each
//! connection a protection domain, one completion queue with its completion channel, a
//! reliable-connected queue pair, and registered memory.
//!
//! Everything here is a thin owner of one rdma-core object: it is created by one call, freed
//! in `Drop`, and its raw pointer never leaves this module. Waiting is asynchronous: the event
//! channel's and the completion channel's file descriptors are made non-blocking and watched
//! by tokio ([`AsyncFd`]), so no thread blocks in rdma-core.
//!
//! rdma-core is called through a small C shim (src/shim.c, declared in `verbs::ffi`), built when
//! rdma-core's headers are there. Built without them, or run without an RDMA device, the first
//! call fails with an error that says so, and the servers go on over TCP.
#![allow(unsafe_code)]

mod ffi;

use std::ffi::c_void;
use std::io;
use std::mem::ManuallyDrop;
use std::net::SocketAddr;
use std::os::fd::{AsRawFd, RawFd};
use std::ptr::{self, NonNull};
use std::sync::Arc;

use tokio::io::unix::AsyncFd;

/// A raw file descriptor owned by an rdma-core object (closed by it, not by us).
struct BorrowedFd(RawFd);

impl AsRawFd for BorrowedFd {
    fn as_raw_fd(&self) -> RawFd {
        self.0
    }
}

/// Watches `fd` with tokio. The owner drops the watch (ManuallyDrop) before rdma-core closes
/// the descriptor.
fn watch(fd: RawFd) -> io::Result<ManuallyDrop<AsyncFd<BorrowedFd>>> {
    // SAFETY: `fd` is open for as long as the rdma-core object that owns it, and every owner
    // drops this watch before destroying that object (see their Drop).
    let fd = unsafe { AsyncFd::register(BorrowedFd(fd)) }.map_err(io::Error::from)?;
    Ok(ManuallyDrop::new(fd))
}

fn set_nonblocking(fd: RawFd) -> io::Result<()> {
    // SAFETY: fcntl on a descriptor rdma-core opened and keeps open; no memory is passed.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    if flags < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: as above.
    if unsafe { libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// The error of an rdma-core call that returned -1 (or NULL) and set errno, naming the call.
fn os_error(call: &str) -> io::Error {
    let e = io::Error::last_os_error();
    if !cfg!(rdma_core) && e.raw_os_error() == Some(libc::ENOSYS) {
        // The stand-ins of a build without rdma-core's headers.
        return io::Error::new(
            io::ErrorKind::Unsupported,
            format!(
                "{call}: built without rdma-core (install libibverbs-dev librdmacm-dev and rebuild)"
            ),
        );
    }
    let hint = match e.raw_os_error() {
        Some(libc::ENODEV) => " (no RDMA device)",
        Some(libc::EADDRNOTAVAIL) => " (no RDMA device has this address)",
        _ => "",
    };
    io::Error::new(e.kind(), format!("{call}: {e}{hint}"))
}

fn check(call: &str, rc: libc::c_int) -> io::Result<()> {
    if rc == 0 {
        Ok(())
    } else {
        Err(os_error(call))
    }
}

fn sockaddr_of(addr: SocketAddr) -> (libc::sockaddr_storage, libc::socklen_t) {
    // SAFETY: an all-zero sockaddr_storage is a valid (AF_UNSPEC) value.
    let mut ss: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    let len = match addr {
        SocketAddr::V4(a) => {
            let sin = libc::sockaddr_in {
                sin_family: libc::AF_INET as libc::sa_family_t,
                sin_port: a.port().to_be(),
                sin_addr: libc::in_addr {
                    s_addr: u32::from_ne_bytes(a.ip().octets()),
                },
                sin_zero: [0; 8],
            };
            // SAFETY: sockaddr_storage is larger than and aligned for sockaddr_in.
            unsafe { ptr::write(ptr::addr_of_mut!(ss).cast::<libc::sockaddr_in>(), sin) };
            std::mem::size_of::<libc::sockaddr_in>()
        }
        SocketAddr::V6(a) => {
            let sin6 = libc::sockaddr_in6 {
                sin6_family: libc::AF_INET6 as libc::sa_family_t,
                sin6_port: a.port().to_be(),
                sin6_flowinfo: a.flowinfo(),
                sin6_addr: libc::in6_addr {
                    s6_addr: a.ip().octets(),
                },
                sin6_scope_id: a.scope_id(),
            };
            // SAFETY: sockaddr_storage is larger than and aligned for sockaddr_in6.
            unsafe { ptr::write(ptr::addr_of_mut!(ss).cast::<libc::sockaddr_in6>(), sin6) };
            std::mem::size_of::<libc::sockaddr_in6>()
        }
    };
    (ss, len as libc::socklen_t)
}

fn socket_addr_from(ss: &libc::sockaddr_storage) -> Option<SocketAddr> {
    let sa: *const libc::sockaddr_storage = ss;
    // SAFETY: a sockaddr_storage is large enough and aligned for every variant; the family
    // says which one the shim wrote (the rest is zeroed).
    unsafe {
        match i32::from(ss.ss_family) {
            libc::AF_INET => {
                let sin = &*(sa.cast::<libc::sockaddr_in>());
                let ip = std::net::Ipv4Addr::from(u32::from_be(sin.sin_addr.s_addr));
                Some(SocketAddr::from((ip, u16::from_be(sin.sin_port))))
            }
            libc::AF_INET6 => {
                let sin6 = &*(sa.cast::<libc::sockaddr_in6>());
                let ip = std::net::Ipv6Addr::from(sin6.sin6_addr.s6_addr);
                Some(SocketAddr::from((ip, u16::from_be(sin6.sin6_port))))
            }
            _ => None,
        }
    }
}

/// What an RDMA-CM event says (the `rdma_cm_event_type` values that matter here).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CmEventKind {
    /// A client asks to connect (on a listening identifier).
    ConnectRequest,
    /// The address of a connect is resolved.
    AddrResolved,
    /// The route of a connect is resolved.
    RouteResolved,
    /// The connection is up.
    Established,
    /// The peer or we disconnected.
    Disconnected,
    /// The peer refused the connection.
    Rejected,
    /// The device went away.
    DeviceRemoval,
    /// Any error event (address, route, connect, unreachable), with its number.
    Error(u32),
    /// An event of no interest here, with its number.
    Other(u32),
}

impl CmEventKind {
    fn from_raw(t: u32) -> Self {
        use ffi::cm_event as e;
        match t {
            e::CONNECT_REQUEST => Self::ConnectRequest,
            e::ADDR_RESOLVED => Self::AddrResolved,
            e::ROUTE_RESOLVED => Self::RouteResolved,
            e::ESTABLISHED => Self::Established,
            e::DISCONNECTED => Self::Disconnected,
            e::REJECTED => Self::Rejected,
            e::DEVICE_REMOVAL => Self::DeviceRemoval,
            e::ADDR_ERROR | e::ROUTE_ERROR | e::CONNECT_ERROR | e::UNREACHABLE => Self::Error(t),
            other => Self::Other(other),
        }
    }
}

/// An RDMA-CM event, copied out of rdma-core's and acknowledged.
#[derive(Debug)]
pub struct CmEvent {
    /// What happened.
    pub kind: CmEventKind,
    /// The event's status (an errno for failures).
    pub status: i32,
    /// The private data the peer sent (RFC 8797's, for a connect request or response).
    pub private_data: Vec<u8>,
    /// For a connect request: the new identifier of the connection being set up.
    pub(crate) new_id: Option<RawId>,
}

/// An rdma_cm_id pointer handed from an event to [`CmId::from_request`].
#[derive(Debug)]
pub(crate) struct RawId(NonNull<ffi::RdmaCmId>);

// SAFETY: an rdma_cm_id may be used from any thread; rdma-core locks what it shares.
unsafe impl Send for RawId {}

/// An RDMA-CM event channel: the file descriptor that CM events arrive on.
pub struct EventChannel {
    raw: NonNull<ffi::RdmaEventChannel>,
    fd: ManuallyDrop<AsyncFd<BorrowedFd>>,
}

// SAFETY: rdma_get_cm_event and rdma_ack_cm_event are thread-safe; the pointer is only freed
// in Drop.
unsafe impl Send for EventChannel {}
// SAFETY: as above.
unsafe impl Sync for EventChannel {}

impl EventChannel {
    /// A new channel, its descriptor non-blocking and registered with tokio.
    pub fn new() -> io::Result<Arc<Self>> {
        // SAFETY: no arguments; NULL means failure with errno set.
        let raw = unsafe { ffi::pnfs_rdma_create_event_channel() };
        let raw = NonNull::new(raw).ok_or_else(|| os_error("rdma_create_event_channel"))?;
        // SAFETY: `raw` is a live channel.
        let fd = unsafe { ffi::pnfs_rdma_event_channel_fd(raw.as_ptr()) };
        let channel = EventChannel {
            raw,
            fd: watch(fd)?,
        };
        set_nonblocking(fd)?;
        Ok(Arc::new(channel))
    }

    /// Waits for the next event on this channel.
    pub async fn next(&self) -> io::Result<CmEvent> {
        loop {
            let mut guard = self.fd.readable().await?;
            let mut ev: *mut ffi::RdmaCmEvent = ptr::null_mut();
            let mut kind = 0u32;
            let mut status = 0i32;
            let mut id: *mut ffi::RdmaCmId = ptr::null_mut();
            let mut listen_id: *mut ffi::RdmaCmId = ptr::null_mut();
            let mut data: *const c_void = ptr::null();
            let mut data_len = 0u8;
            // SAFETY: the channel is live; every out pointer is to a local of its type; `ev`
            // receives an event we acknowledge below.
            let rc = unsafe {
                ffi::pnfs_rdma_get_cm_event(
                    self.raw.as_ptr(),
                    &mut ev,
                    &mut kind,
                    &mut status,
                    &mut id,
                    &mut listen_id,
                    &mut data,
                    &mut data_len,
                )
            };
            if rc != 0 {
                let e = io::Error::last_os_error();
                if e.kind() == io::ErrorKind::WouldBlock {
                    guard.clear_ready();
                    continue;
                }
                return Err(os_error("rdma_get_cm_event"));
            }
            let kind = CmEventKind::from_raw(kind);
            let private_data = if data.is_null() {
                Vec::new()
            } else {
                // SAFETY: the event's private data, `data_len` bytes valid until the event is
                // acknowledged (below).
                unsafe { std::slice::from_raw_parts(data.cast::<u8>(), usize::from(data_len)) }
                    .to_vec()
            };
            let new_id = if kind == CmEventKind::ConnectRequest {
                NonNull::new(id).map(RawId)
            } else {
                None
            };
            let event = CmEvent {
                kind,
                status,
                private_data,
                new_id,
            };
            // SAFETY: acknowledges the event obtained above, once.
            unsafe { ffi::pnfs_rdma_ack_cm_event(ev) };
            return Ok(event);
        }
    }
}

impl Drop for EventChannel {
    fn drop(&mut self) {
        // SAFETY: the watch goes first, while the descriptor is open; every identifier on
        // this channel holds an Arc to it, so none is left.
        unsafe {
            ManuallyDrop::drop(&mut self.fd);
            ffi::pnfs_rdma_destroy_event_channel(self.raw.as_ptr());
        }
    }
}

/// An RDMA-CM identifier: a listener, or one end of a connection (with its queue pair once
/// [`CmId::create_qp`] ran). Its events arrive on its own channel.
pub struct CmId {
    raw: NonNull<ffi::RdmaCmId>,
    channel: Arc<EventChannel>,
    has_qp: bool,
}

// SAFETY: rdma_cm_id calls are thread-safe in librdmacm; the pointer is freed only in Drop.
unsafe impl Send for CmId {}
// SAFETY: as above.
unsafe impl Sync for CmId {}

impl CmId {
    /// A new identifier (TCP port space: reliable connected) on `channel`.
    pub fn new(channel: Arc<EventChannel>) -> io::Result<Self> {
        // SAFETY: the channel is live; NULL means failure with errno set.
        let raw = unsafe { ffi::pnfs_rdma_create_id(channel.raw.as_ptr()) };
        let raw = NonNull::new(raw).ok_or_else(|| os_error("rdma_create_id"))?;
        Ok(Self {
            raw,
            channel,
            has_qp: false,
        })
    }

    /// Takes over the identifier of a connect request and moves its events to a channel of
    /// its own, so each connection waits on its own descriptor.
    pub(crate) fn from_request(id: RawId) -> io::Result<Self> {
        let channel = EventChannel::new()?;
        // SAFETY: `id` came from a connect request event, not yet owned by anyone.
        check("rdma_migrate_id", unsafe {
            ffi::pnfs_rdma_migrate_id(id.0.as_ptr(), channel.raw.as_ptr())
        })?;
        Ok(Self {
            raw: id.0,
            channel,
            has_qp: false,
        })
    }

    /// The channel this identifier's events arrive on.
    pub fn channel(&self) -> &Arc<EventChannel> {
        &self.channel
    }

    /// Binds to `addr` and listens (a port of 0 picks one).
    pub fn listen(&self, addr: SocketAddr, backlog: i32) -> io::Result<()> {
        let (ss, _) = sockaddr_of(addr);
        // SAFETY: the identifier is live; the address is a valid sockaddr for its family.
        check("rdma_bind_addr", unsafe {
            ffi::pnfs_rdma_bind_addr(self.raw.as_ptr(), ptr::addr_of!(ss).cast())
        })?;
        // SAFETY: the identifier is bound.
        check("rdma_listen", unsafe {
            ffi::pnfs_rdma_listen(self.raw.as_ptr(), backlog)
        })
    }

    /// Starts resolving `dst` (an [`CmEventKind::AddrResolved`] event follows).
    pub fn resolve_addr(&self, dst: SocketAddr, timeout_ms: i32) -> io::Result<()> {
        let (ss, _) = sockaddr_of(dst);
        // SAFETY: the identifier is live; the address is valid; no source address.
        check("rdma_resolve_addr", unsafe {
            ffi::pnfs_rdma_resolve_addr(self.raw.as_ptr(), ptr::addr_of!(ss).cast(), timeout_ms)
        })
    }

    /// Starts resolving the route (an [`CmEventKind::RouteResolved`] event follows).
    pub fn resolve_route(&self, timeout_ms: i32) -> io::Result<()> {
        // SAFETY: the identifier is live and its address resolved.
        check("rdma_resolve_route", unsafe {
            ffi::pnfs_rdma_resolve_route(self.raw.as_ptr(), timeout_ms)
        })
    }

    /// Our address (after bind, accept or resolve).
    pub fn local_addr(&self) -> Option<SocketAddr> {
        // SAFETY: an all-zero sockaddr_storage is a valid (AF_UNSPEC) value.
        let mut ss: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
        // SAFETY: the identifier is live; the shim writes at most a sockaddr_storage.
        if unsafe { ffi::pnfs_rdma_local_addr(self.raw.as_ptr(), &mut ss) } != 0 {
            return None;
        }
        socket_addr_from(&ss)
    }

    /// The peer's address (on a connected identifier).
    pub fn peer_addr(&self) -> Option<SocketAddr> {
        // SAFETY: an all-zero sockaddr_storage is a valid (AF_UNSPEC) value.
        let mut ss: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
        // SAFETY: as for local_addr.
        if unsafe { ffi::pnfs_rdma_peer_addr(self.raw.as_ptr(), &mut ss) } != 0 {
            return None;
        }
        socket_addr_from(&ss)
    }

    /// A protection domain on this identifier's device (known once a connect request came
    /// or the address resolved).
    pub fn alloc_pd(&self) -> io::Result<Arc<Pd>> {
        // SAFETY: reads whether a live identifier has a device context.
        if unsafe { ffi::pnfs_rdma_id_has_device(self.raw.as_ptr()) } == 0 {
            return Err(io::Error::other("RDMA identifier has no device yet"));
        }
        // SAFETY: the identifier is live and has a device context.
        let pd = unsafe { ffi::pnfs_rdma_alloc_pd(self.raw.as_ptr()) };
        let pd = NonNull::new(pd).ok_or_else(|| os_error("ibv_alloc_pd"))?;
        Ok(Arc::new(Pd { raw: pd }))
    }

    /// Creates the reliable-connected queue pair of this identifier on `cq` (sends and
    /// receives), with room for `send_wr` work requests of up to `send_sge` pieces and
    /// `recv_wr` receives.
    pub fn create_qp(
        &mut self,
        pd: &Pd,
        cq: &Cq,
        send_wr: u32,
        recv_wr: u32,
        send_sge: u32,
    ) -> io::Result<()> {
        // SAFETY: identifier, PD and CQ are live and of the same device. The QP is reliable
        // connected, sends and receives complete on `cq`, every send signaled.
        check("rdma_create_qp", unsafe {
            ffi::pnfs_rdma_create_qp(
                self.raw.as_ptr(),
                pd.raw.as_ptr(),
                cq.raw.as_ptr(),
                send_wr,
                recv_wr,
                send_sge,
                1,
            )
        })?;
        self.has_qp = true;
        Ok(())
    }

    /// Accepts a connect request with our private data (at most 255 bytes are sent); `depth`
    /// RDMA Reads may be in flight each way. Retries: 7, RNR retries: 7.
    pub fn accept(&self, private_data: &[u8], depth: u8) -> io::Result<()> {
        let len = private_data.len().min(255) as u8;
        // SAFETY: live identifier with a QP; the private data outlives the call (the CM
        // copies it).
        check("rdma_accept", unsafe {
            ffi::pnfs_rdma_accept(
                self.raw.as_ptr(),
                private_data.as_ptr().cast(),
                len,
                depth,
                depth,
            )
        })
    }

    /// Connects (after the route resolved) with our private data.
    pub fn connect(&self, private_data: &[u8], depth: u8) -> io::Result<()> {
        let len = private_data.len().min(255) as u8;
        // SAFETY: as for accept.
        check("rdma_connect", unsafe {
            ffi::pnfs_rdma_connect(
                self.raw.as_ptr(),
                private_data.as_ptr().cast(),
                len,
                depth,
                depth,
            )
        })
    }

    /// Disconnects: outstanding work requests complete with a flush error.
    pub fn disconnect(&self) {
        // SAFETY: live identifier; disconnecting twice is harmless.
        unsafe { ffi::pnfs_rdma_disconnect(self.raw.as_ptr()) };
    }

    /// Tells the CM that the connection carries traffic (`rdma_notify` with
    /// `IBV_EVENT_COMM_EST`): a passive side that received a message before the CM's
    /// ESTABLISHED event (the peer's RTU late or lost) makes the CM consider it established.
    /// Fails when it is established already.
    pub fn notify_established(&self) -> io::Result<()> {
        // SAFETY: live identifier.
        check("rdma_notify", unsafe {
            ffi::pnfs_rdma_notify_established(self.raw.as_ptr())
        })
    }

    /// Posts a receive of `len` bytes at `addr` (in `mr`), completing with `wr_id`.
    pub fn post_recv(&self, wr_id: u64, mr: &Mr, offset: usize, len: u32) -> io::Result<()> {
        debug_assert!(offset + len as usize <= mr.len());
        // SAFETY: the identifier is live (the shim refuses one without a QP); the piece names
        // registered memory that the caller keeps until the completion for `wr_id`.
        check("ibv_post_recv", unsafe {
            ffi::pnfs_rdma_post_recv(
                self.raw.as_ptr(),
                wr_id,
                mr.addr() + offset as u64,
                len,
                mr.lkey(),
            )
        })
    }

    /// Posts a Send, an RDMA Read or an RDMA Write of the local pieces `sges`.
    pub fn post_send(&self, wr_id: u64, op: SendOp, sges: &[Sge]) -> io::Result<()> {
        if !self.has_qp {
            return Err(io::Error::other("no queue pair"));
        }
        let list: Vec<ffi::Sge> = sges
            .iter()
            .map(|s| ffi::Sge {
                addr: s.addr,
                length: s.len,
                lkey: s.lkey,
            })
            .collect();
        let (code, remote_addr, rkey) = match op {
            SendOp::Send => (ffi::OP_SEND, 0, 0),
            SendOp::SendInvalidate { rkey } => (ffi::OP_SEND_WITH_INV, 0, rkey),
            SendOp::Read { remote_addr, rkey } => (ffi::OP_RDMA_READ, remote_addr, rkey),
            SendOp::Write { remote_addr, rkey } => (ffi::OP_RDMA_WRITE, remote_addr, rkey),
        };
        // SAFETY: the identifier and its QP are live; the pieces name registered memory that
        // the caller keeps until the completion for `wr_id`; `list` outlives the call (the
        // provider copies the work request).
        check("ibv_post_send", unsafe {
            ffi::pnfs_rdma_post_send(
                self.raw.as_ptr(),
                wr_id,
                code,
                list.as_ptr(),
                list.len() as libc::c_int,
                remote_addr,
                rkey,
                1,
            )
        })
    }
}

impl Drop for CmId {
    fn drop(&mut self) {
        // SAFETY: the QP (if any) and then the identifier are destroyed once; the CQ and PD
        // they use are owned by the caller and outlive this (see Endpoint's field order).
        unsafe {
            if self.has_qp {
                ffi::pnfs_rdma_destroy_qp(self.raw.as_ptr());
            }
            ffi::pnfs_rdma_destroy_id(self.raw.as_ptr());
        }
    }
}

/// A local piece of registered memory for a work request.
#[derive(Clone, Copy, Debug)]
pub struct Sge {
    /// Virtual address.
    pub addr: u64,
    /// Length in bytes.
    pub len: u32,
    /// The region's local key.
    pub lkey: u32,
}

/// What a send-queue work request does.
#[derive(Clone, Copy, Debug)]
pub enum SendOp {
    /// A Send (consumes one of the peer's posted receives).
    Send,
    /// A Send that also invalidates the peer's memory region `rkey` (Remote Invalidation,
    /// RFC 8797 section 4.2): the peer need not invalidate it itself.
    SendInvalidate {
        /// The peer's steering tag to invalidate.
        rkey: u32,
    },
    /// An RDMA Read from the peer's memory into the local pieces.
    Read {
        /// The peer's address.
        remote_addr: u64,
        /// The peer's steering tag.
        rkey: u32,
    },
    /// An RDMA Write of the local pieces into the peer's memory.
    Write {
        /// The peer's address.
        remote_addr: u64,
        /// The peer's steering tag.
        rkey: u32,
    },
}

/// A protection domain.
pub struct Pd {
    raw: NonNull<ffi::IbvPd>,
}

// SAFETY: a PD is used only to register memory and create QPs, both thread-safe.
unsafe impl Send for Pd {}
// SAFETY: as above.
unsafe impl Sync for Pd {}

impl Drop for Pd {
    fn drop(&mut self) {
        // SAFETY: every Mr holds an Arc<Pd>, and QPs are destroyed before (Endpoint order).
        unsafe { ffi::pnfs_rdma_dealloc_pd(self.raw.as_ptr()) };
    }
}

/// Registered memory: a heap buffer the device may read and write (and the peer too, when
/// registered for remote access).
pub struct Mr {
    buf: Box<[u8]>,
    raw: NonNull<ffi::IbvMr>,
    lkey: u32,
    rkey: u32,
    _pd: Arc<Pd>,
}

// SAFETY: the registration is immutable; the buffer is accessed through &/&mut self only.
unsafe impl Send for Mr {}
// SAFETY: as above.
unsafe impl Sync for Mr {}

/// Who may touch a registered region besides the local device reading it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// The device writes into it (receives, RDMA Read targets).
    Local,
    /// The peer may also RDMA Read and Write it (memory named in chunks).
    Remote,
}

impl Mr {
    /// Registers a new zeroed buffer of `len` bytes.
    pub fn new(pd: &Arc<Pd>, len: usize, access: Access) -> io::Result<Self> {
        let mut buf = vec![0u8; len.max(1)].into_boxed_slice();
        // Local write always; remote read and write for memory named in chunks.
        let remote = libc::c_int::from(access == Access::Remote);
        let (mut lkey, mut rkey) = (0u32, 0u32);
        // SAFETY: the buffer lives in `Self` (a Box never moves its heap memory) and is
        // deregistered in Drop before it is freed; the keys are written to locals.
        let raw = unsafe {
            ffi::pnfs_rdma_reg_mr(
                pd.raw.as_ptr(),
                buf.as_mut_ptr().cast::<c_void>(),
                buf.len(),
                remote,
                &mut lkey,
                &mut rkey,
            )
        };
        let raw = NonNull::new(raw).ok_or_else(|| os_error("ibv_reg_mr"))?;
        Ok(Self {
            buf,
            raw,
            lkey,
            rkey,
            _pd: pd.clone(),
        })
    }

    /// Address of the first byte.
    pub fn addr(&self) -> u64 {
        self.buf.as_ptr() as u64
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.buf.len()
    }

    /// Whether the region is empty (never: at least one byte is registered).
    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    /// The local key.
    pub fn lkey(&self) -> u32 {
        self.lkey
    }

    /// The remote key (meaningful for [`Access::Remote`] regions).
    pub fn rkey(&self) -> u32 {
        self.rkey
    }

    /// A local piece of this region for a work request.
    pub fn sge(&self, offset: usize, len: usize) -> Sge {
        debug_assert!(offset + len <= self.buf.len());
        Sge {
            addr: self.addr() + offset as u64,
            len: len as u32,
            lkey: self.lkey(),
        }
    }

    /// The bytes.
    pub fn bytes(&self) -> &[u8] {
        &self.buf
    }

    /// A copy of `len` bytes at `offset`, read while the device may be writing other parts
    /// of the region (posted receives): through a raw pointer, never a reference to the
    /// whole buffer.
    pub fn copy_out(&self, offset: usize, len: usize) -> bytes::Bytes {
        assert!(offset + len <= self.buf.len(), "copy_out past the region");
        let mut v = Vec::with_capacity(len);
        // SAFETY: the range is inside the buffer (checked above); the device finished
        // writing it (its completion was polled) and writes no other range we read.
        unsafe {
            ptr::copy_nonoverlapping(self.buf.as_ptr().add(offset), v.as_mut_ptr(), len);
            v.set_len(len);
        }
        bytes::Bytes::from(v)
    }

    /// The bytes, to fill before a Send or an RDMA Write.
    pub fn bytes_mut(&mut self) -> &mut [u8] {
        &mut self.buf
    }
}

impl AsRef<[u8]> for Mr {
    fn as_ref(&self) -> &[u8] {
        &self.buf
    }
}

impl Drop for Mr {
    fn drop(&mut self) {
        // SAFETY: deregisters once, before the buffer is freed.
        unsafe { ffi::pnfs_rdma_dereg_mr(self.raw.as_ptr()) };
    }
}

/// One work completion.
#[derive(Clone, Copy, Debug)]
pub struct Completion {
    /// The work request's id.
    pub wr_id: u64,
    /// 0 is success; anything else an `ibv_wc_status` (5 = flushed: the connection closed).
    pub status: u32,
    /// Bytes received (receives only).
    pub byte_len: u32,
}

impl Completion {
    /// Whether the work request succeeded.
    pub fn ok(&self) -> bool {
        self.status == ffi::WC_SUCCESS
    }
}

/// A completion queue with its own completion channel, waited on through tokio.
pub struct Cq {
    raw: NonNull<ffi::IbvCq>,
    channel: NonNull<ffi::IbvCompChannel>,
    fd: ManuallyDrop<AsyncFd<BorrowedFd>>,
    _pd: Arc<Pd>,
}

// SAFETY: polling and arming a CQ from one task at a time (`&mut self` for poll) is what
// verbs requires; creation and destruction are thread-safe.
unsafe impl Send for Cq {}
// SAFETY: as above.
unsafe impl Sync for Cq {}

impl Cq {
    /// A CQ of `entries` entries on `pd`'s device.
    pub fn new(pd: &Arc<Pd>, entries: i32) -> io::Result<Self> {
        // SAFETY: the PD is live, and with it its device context.
        let ch = unsafe { ffi::pnfs_rdma_create_comp_channel(pd.raw.as_ptr()) };
        let channel = NonNull::new(ch).ok_or_else(|| os_error("ibv_create_comp_channel"))?;
        // SAFETY: as above; the channel was just created on the same context.
        let cq = unsafe { ffi::pnfs_rdma_create_cq(pd.raw.as_ptr(), entries, channel.as_ptr()) };
        let Some(raw) = NonNull::new(cq) else {
            let e = os_error("ibv_create_cq");
            // SAFETY: the channel is unused.
            unsafe { ffi::pnfs_rdma_destroy_comp_channel(channel.as_ptr()) };
            return Err(e);
        };
        // SAFETY: reads the channel's descriptor.
        let fd = unsafe { ffi::pnfs_rdma_comp_channel_fd(channel.as_ptr()) };
        set_nonblocking(fd)?;
        let this = Self {
            raw,
            channel,
            fd: watch(fd)?,
            _pd: pd.clone(),
        };
        this.arm()?;
        Ok(this)
    }

    fn arm(&self) -> io::Result<()> {
        // SAFETY: a live CQ; asks for an event on the next completion.
        check("ibv_req_notify_cq", unsafe {
            ffi::pnfs_rdma_req_notify_cq(self.raw.as_ptr(), 0)
        })
    }

    fn poll_into(&mut self, out: &mut Vec<Completion>) -> io::Result<usize> {
        let mut wcs = [ffi::Wc::default(); 16];
        // SAFETY: a live CQ, polled by one task (we hold &mut self); `wcs` has 16 entries.
        let n = unsafe { ffi::pnfs_rdma_poll_cq(self.raw.as_ptr(), 16, wcs.as_mut_ptr()) };
        if n < 0 {
            return Err(os_error("ibv_poll_cq"));
        }
        for wc in &wcs[..n as usize] {
            out.push(Completion {
                wr_id: wc.wr_id,
                status: wc.status,
                byte_len: wc.byte_len,
            });
        }
        Ok(n as usize)
    }

    /// Waits until at least one completion is there and appends all that are.
    pub async fn next_batch(&mut self, out: &mut Vec<Completion>) -> io::Result<()> {
        loop {
            if self.poll_into(out)? > 0 {
                while self.poll_into(out)? == 16 {}
                return Ok(());
            }
            // Nothing there: arm, then look again (a completion may have arrived between
            // the poll and the arming, without an event), then sleep on the channel.
            self.arm()?;
            if self.poll_into(out)? > 0 {
                continue;
            }
            let mut guard = self.fd.readable().await?;
            let mut cq = ptr::null_mut();
            // SAFETY: the channel is live and non-blocking; the event is acknowledged below.
            let rc = unsafe { ffi::pnfs_rdma_get_cq_event(self.channel.as_ptr(), &mut cq) };
            if rc != 0 {
                let e = io::Error::last_os_error();
                if e.kind() == io::ErrorKind::WouldBlock {
                    guard.clear_ready();
                    continue;
                }
                return Err(os_error("ibv_get_cq_event"));
            }
            // SAFETY: acknowledges the one event just taken for this CQ.
            unsafe { ffi::pnfs_rdma_ack_cq_events(self.raw.as_ptr(), 1) };
        }
    }
}

impl Drop for Cq {
    fn drop(&mut self) {
        // SAFETY: the QP using this CQ is destroyed first (Endpoint field order); events were
        // acknowledged as they were taken.
        unsafe {
            ManuallyDrop::drop(&mut self.fd);
            ffi::pnfs_rdma_destroy_cq(self.raw.as_ptr());
            ffi::pnfs_rdma_destroy_comp_channel(self.channel.as_ptr());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The first call either works (an RDMA device, or soft-RoCE) or says why not: a build
    /// without rdma-core's headers says so and what to install.
    #[tokio::test]
    async fn the_first_call_works_or_says_why() {
        match EventChannel::new() {
            #[cfg(not(rdma_core))]
            Ok(_) => panic!("a stand-in succeeded"),
            #[cfg(rdma_core)]
            Ok(_) => {}
            Err(e) => {
                let msg = e.to_string();
                assert!(msg.starts_with("rdma_create_event_channel: "), "{msg}");
                if cfg!(rdma_core) {
                    assert!(!msg.contains("built without"), "{msg}");
                } else {
                    assert_eq!(
                        msg,
                        "rdma_create_event_channel: built without rdma-core \
                         (install libibverbs-dev librdmacm-dev and rebuild)"
                    );
                    assert_eq!(e.kind(), io::ErrorKind::Unsupported);
                }
            }
        }
    }

    #[test]
    fn socket_addresses_round_trip() {
        for addr in ["10.99.0.1:20049", "[fe80::1]:20049", "0.0.0.0:0"] {
            let addr: SocketAddr = addr.parse().unwrap();
            let (ss, len) = sockaddr_of(addr);
            assert!(len as usize <= std::mem::size_of::<libc::sockaddr_storage>());
            assert_eq!(socket_addr_from(&ss), Some(addr));
        }
        // SAFETY: an all-zero sockaddr_storage is a valid (AF_UNSPEC) value.
        let unspec: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
        assert_eq!(socket_addr_from(&unspec), None);
    }
}

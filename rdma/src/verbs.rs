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
//! rdma-core is loaded when first called (rdma-mummy-sys): without it, or without an RDMA
//! device, the first call fails with an error that says so, and the servers go on over TCP.
#![allow(unsafe_code)]

use std::ffi::c_void;
use std::io;
use std::mem::ManuallyDrop;
use std::net::SocketAddr;
use std::os::fd::{AsRawFd, RawFd};
use std::ptr::{self, NonNull};
use std::sync::Arc;

use rdma_mummy_sys as sys;
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
    let hint = match e.raw_os_error() {
        Some(libc::EOPNOTSUPP) => " (is rdma-core installed: libibverbs1, librdmacm1?)",
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

fn socket_addr_from(sa: *const libc::sockaddr) -> Option<SocketAddr> {
    if sa.is_null() {
        return None;
    }
    // SAFETY: `sa` points into an rdma_cm_id's route, which holds a sockaddr_storage-sized
    // union; the family says which variant was written.
    unsafe {
        match i32::from((*sa).sa_family) {
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
    fn from_raw(t: sys::rdma_cm_event_type::Type) -> Self {
        use sys::rdma_cm_event_type as e;
        match t {
            e::RDMA_CM_EVENT_CONNECT_REQUEST => Self::ConnectRequest,
            e::RDMA_CM_EVENT_ADDR_RESOLVED => Self::AddrResolved,
            e::RDMA_CM_EVENT_ROUTE_RESOLVED => Self::RouteResolved,
            e::RDMA_CM_EVENT_ESTABLISHED => Self::Established,
            e::RDMA_CM_EVENT_DISCONNECTED => Self::Disconnected,
            e::RDMA_CM_EVENT_REJECTED => Self::Rejected,
            e::RDMA_CM_EVENT_DEVICE_REMOVAL => Self::DeviceRemoval,
            e::RDMA_CM_EVENT_ADDR_ERROR
            | e::RDMA_CM_EVENT_ROUTE_ERROR
            | e::RDMA_CM_EVENT_CONNECT_ERROR
            | e::RDMA_CM_EVENT_UNREACHABLE => Self::Error(t),
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
pub(crate) struct RawId(NonNull<sys::rdma_cm_id>);

// SAFETY: an rdma_cm_id may be used from any thread; rdma-core locks what it shares.
unsafe impl Send for RawId {}

/// An RDMA-CM event channel: the file descriptor that CM events arrive on.
pub struct EventChannel {
    raw: NonNull<sys::rdma_event_channel>,
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
        let raw = unsafe { sys::rdma_create_event_channel() };
        let raw = NonNull::new(raw).ok_or_else(|| os_error("rdma_create_event_channel"))?;
        // SAFETY: `raw` is a live channel.
        let fd = unsafe { (*raw.as_ptr()).fd };
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
            let mut ev: *mut sys::rdma_cm_event = ptr::null_mut();
            // SAFETY: the channel is live; `ev` receives an event we acknowledge below.
            let rc = unsafe { sys::rdma_get_cm_event(self.raw.as_ptr(), &mut ev) };
            if rc != 0 {
                let e = io::Error::last_os_error();
                if e.kind() == io::ErrorKind::WouldBlock {
                    guard.clear_ready();
                    continue;
                }
                return Err(os_error("rdma_get_cm_event"));
            }
            // SAFETY: rdma_get_cm_event returned 0, so `ev` is a valid event until acked.
            let event = unsafe {
                let e = &*ev;
                let kind = CmEventKind::from_raw(e.event);
                let conn = e.param.conn;
                let private_data = if conn.private_data.is_null() {
                    Vec::new()
                } else {
                    std::slice::from_raw_parts(
                        conn.private_data.cast::<u8>(),
                        usize::from(conn.private_data_len),
                    )
                    .to_vec()
                };
                let new_id = if kind == CmEventKind::ConnectRequest {
                    NonNull::new(e.id).map(RawId)
                } else {
                    None
                };
                CmEvent {
                    kind,
                    status: e.status,
                    private_data,
                    new_id,
                }
            };
            // SAFETY: acknowledges the event obtained above, once.
            unsafe { sys::rdma_ack_cm_event(ev) };
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
            sys::rdma_destroy_event_channel(self.raw.as_ptr());
        }
    }
}

/// An RDMA-CM identifier: a listener, or one end of a connection (with its queue pair once
/// [`CmId::create_qp`] ran). Its events arrive on its own channel.
pub struct CmId {
    raw: NonNull<sys::rdma_cm_id>,
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
        let mut raw = ptr::null_mut();
        // SAFETY: the channel is live; `raw` receives the new identifier.
        check("rdma_create_id", unsafe {
            sys::rdma_create_id(
                channel.raw.as_ptr(),
                &mut raw,
                ptr::null_mut(),
                sys::rdma_port_space::RDMA_PS_TCP,
            )
        })?;
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
            sys::rdma_migrate_id(id.0.as_ptr(), channel.raw.as_ptr())
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
        let (mut ss, _) = sockaddr_of(addr);
        // SAFETY: the identifier is live; the address is a valid sockaddr for its family.
        check("rdma_bind_addr", unsafe {
            sys::rdma_bind_addr(self.raw.as_ptr(), ptr::addr_of_mut!(ss).cast())
        })?;
        // SAFETY: the identifier is bound.
        check("rdma_listen", unsafe {
            sys::rdma_listen(self.raw.as_ptr(), backlog)
        })
    }

    /// Starts resolving `dst` (an [`CmEventKind::AddrResolved`] event follows).
    pub fn resolve_addr(&self, dst: SocketAddr, timeout_ms: i32) -> io::Result<()> {
        let (mut ss, _) = sockaddr_of(dst);
        // SAFETY: the identifier is live; the address is valid; no source address.
        check("rdma_resolve_addr", unsafe {
            sys::rdma_resolve_addr(
                self.raw.as_ptr(),
                ptr::null_mut(),
                ptr::addr_of_mut!(ss).cast(),
                timeout_ms,
            )
        })
    }

    /// Starts resolving the route (an [`CmEventKind::RouteResolved`] event follows).
    pub fn resolve_route(&self, timeout_ms: i32) -> io::Result<()> {
        // SAFETY: the identifier is live and its address resolved.
        check("rdma_resolve_route", unsafe {
            sys::rdma_resolve_route(self.raw.as_ptr(), timeout_ms)
        })
    }

    /// Our address (after bind, accept or resolve).
    pub fn local_addr(&self) -> Option<SocketAddr> {
        // SAFETY: the route's address union lives as long as the identifier.
        unsafe {
            let route = &(*self.raw.as_ptr()).route;
            socket_addr_from(ptr::addr_of!(route.addr.src_addr_union).cast())
        }
    }

    /// The peer's address (on a connected identifier).
    pub fn peer_addr(&self) -> Option<SocketAddr> {
        // SAFETY: as for local_addr.
        unsafe {
            let route = &(*self.raw.as_ptr()).route;
            socket_addr_from(ptr::addr_of!(route.addr.dst_addr_union).cast())
        }
    }

    /// A protection domain on this identifier's device (known once a connect request came
    /// or the address resolved).
    pub fn alloc_pd(&self) -> io::Result<Arc<Pd>> {
        // SAFETY: reads the device context of a live identifier.
        let ctx = unsafe { (*self.raw.as_ptr()).verbs };
        if ctx.is_null() {
            return Err(io::Error::other("RDMA identifier has no device yet"));
        }
        // SAFETY: `ctx` is the identifier's open device context.
        let pd = unsafe { sys::ibv_alloc_pd(ctx) };
        let pd = NonNull::new(pd).ok_or_else(|| os_error("ibv_alloc_pd"))?;
        Ok(Arc::new(Pd { raw: pd, ctx }))
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
        let mut attr = sys::ibv_qp_init_attr {
            qp_context: ptr::null_mut(),
            send_cq: cq.raw.as_ptr(),
            recv_cq: cq.raw.as_ptr(),
            srq: ptr::null_mut(),
            cap: sys::ibv_qp_cap {
                max_send_wr: send_wr,
                max_recv_wr: recv_wr,
                max_send_sge: send_sge,
                max_recv_sge: 1,
                max_inline_data: 0,
            },
            qp_type: sys::ibv_qp_type::IBV_QPT_RC,
            sq_sig_all: 1,
        };
        // SAFETY: identifier, PD and CQ are live and of the same device.
        check("rdma_create_qp", unsafe {
            sys::rdma_create_qp(self.raw.as_ptr(), pd.raw.as_ptr(), &mut attr)
        })?;
        self.has_qp = true;
        Ok(())
    }

    fn conn_param(private_data: &[u8], depth: u8) -> sys::rdma_conn_param {
        sys::rdma_conn_param {
            private_data: private_data.as_ptr().cast(),
            private_data_len: private_data.len().min(255) as u8,
            responder_resources: depth,
            initiator_depth: depth,
            flow_control: 0,
            retry_count: 7,
            rnr_retry_count: 7,
            srq: 0,
            qp_num: 0,
        }
    }

    /// Accepts a connect request with our private data; `depth` RDMA Reads may be in flight
    /// each way.
    pub fn accept(&self, private_data: &[u8], depth: u8) -> io::Result<()> {
        let mut p = Self::conn_param(private_data, depth);
        // SAFETY: live identifier with a QP; `p` and the private data outlive the call.
        check("rdma_accept", unsafe {
            sys::rdma_accept(self.raw.as_ptr(), &mut p)
        })
    }

    /// Connects (after the route resolved) with our private data.
    pub fn connect(&self, private_data: &[u8], depth: u8) -> io::Result<()> {
        let mut p = Self::conn_param(private_data, depth);
        // SAFETY: as for accept.
        check("rdma_connect", unsafe {
            sys::rdma_connect(self.raw.as_ptr(), &mut p)
        })
    }

    /// Disconnects: outstanding work requests complete with a flush error.
    pub fn disconnect(&self) {
        // SAFETY: live identifier; disconnecting twice is harmless.
        unsafe { sys::rdma_disconnect(self.raw.as_ptr()) };
    }

    fn qp(&self) -> *mut sys::ibv_qp {
        // SAFETY: reads the QP pointer of a live identifier.
        unsafe { (*self.raw.as_ptr()).qp }
    }

    /// Posts a receive of `len` bytes at `addr` (in `mr`), completing with `wr_id`.
    pub fn post_recv(&self, wr_id: u64, mr: &Mr, offset: usize, len: u32) -> io::Result<()> {
        let mut sge = sys::ibv_sge {
            addr: mr.addr() + offset as u64,
            length: len,
            lkey: mr.lkey(),
        };
        debug_assert!(offset + len as usize <= mr.len());
        let mut wr = sys::ibv_recv_wr {
            wr_id,
            next: ptr::null_mut(),
            sg_list: &mut sge,
            num_sge: 1,
        };
        let mut bad = ptr::null_mut();
        // SAFETY: the QP is live; the SGE names registered memory that the caller keeps
        // until the completion for `wr_id`.
        check("ibv_post_recv", unsafe {
            sys::ibv_post_recv(self.qp(), &mut wr, &mut bad)
        })
    }

    /// Posts a Send, an RDMA Read or an RDMA Write of the local pieces `sges`.
    pub fn post_send(&self, wr_id: u64, op: SendOp, sges: &[Sge]) -> io::Result<()> {
        if !self.has_qp {
            return Err(io::Error::other("no queue pair"));
        }
        let mut list: Vec<sys::ibv_sge> = sges
            .iter()
            .map(|s| sys::ibv_sge {
                addr: s.addr,
                length: s.len,
                lkey: s.lkey,
            })
            .collect();
        // SAFETY: an all-zero ibv_send_wr is valid (no next, no flags).
        let mut wr: sys::ibv_send_wr = unsafe { std::mem::zeroed() };
        wr.wr_id = wr_id;
        wr.sg_list = list.as_mut_ptr();
        wr.num_sge = list.len() as libc::c_int;
        wr.send_flags = sys::ibv_send_flags::IBV_SEND_SIGNALED.0;
        match op {
            SendOp::Send => wr.opcode = sys::ibv_wr_opcode::IBV_WR_SEND,
            SendOp::Read { remote_addr, rkey } => {
                wr.opcode = sys::ibv_wr_opcode::IBV_WR_RDMA_READ;
                wr.wr = sys::wr_t {
                    rdma: sys::rdma_t { remote_addr, rkey },
                };
            }
            SendOp::Write { remote_addr, rkey } => {
                wr.opcode = sys::ibv_wr_opcode::IBV_WR_RDMA_WRITE;
                wr.wr = sys::wr_t {
                    rdma: sys::rdma_t { remote_addr, rkey },
                };
            }
        }
        let mut bad = ptr::null_mut();
        // SAFETY: the QP is live; the SGEs name registered memory that the caller keeps
        // until the completion for `wr_id`; `list` outlives the call (the provider copies
        // the work request).
        check("ibv_post_send", unsafe {
            sys::ibv_post_send(self.qp(), &mut wr, &mut bad)
        })
    }
}

impl Drop for CmId {
    fn drop(&mut self) {
        // SAFETY: the QP (if any) and then the identifier are destroyed once; the CQ and PD
        // they use are owned by the caller and outlive this (see Endpoint's field order).
        unsafe {
            if self.has_qp {
                sys::rdma_destroy_qp(self.raw.as_ptr());
            }
            sys::rdma_destroy_id(self.raw.as_ptr());
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
    raw: NonNull<sys::ibv_pd>,
    ctx: *mut sys::ibv_context,
}

// SAFETY: a PD is used only to register memory and create QPs, both thread-safe.
unsafe impl Send for Pd {}
// SAFETY: as above.
unsafe impl Sync for Pd {}

impl Drop for Pd {
    fn drop(&mut self) {
        // SAFETY: every Mr holds an Arc<Pd>, and QPs are destroyed before (Endpoint order).
        unsafe { sys::ibv_dealloc_pd(self.raw.as_ptr()) };
    }
}

/// Registered memory: a heap buffer the device may read and write (and the peer too, when
/// registered for remote access).
pub struct Mr {
    buf: Box<[u8]>,
    raw: NonNull<sys::ibv_mr>,
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
        let mut flags = sys::ibv_access_flags::IBV_ACCESS_LOCAL_WRITE;
        if access == Access::Remote {
            flags = flags
                | sys::ibv_access_flags::IBV_ACCESS_REMOTE_READ
                | sys::ibv_access_flags::IBV_ACCESS_REMOTE_WRITE;
        }
        // SAFETY: the buffer lives in `Self` (a Box never moves its heap memory) and is
        // deregistered in Drop before it is freed.
        let raw = unsafe {
            sys::ibv_reg_mr(
                pd.raw.as_ptr(),
                buf.as_mut_ptr().cast::<c_void>(),
                buf.len(),
                flags.0 as libc::c_int,
            )
        };
        let raw = NonNull::new(raw).ok_or_else(|| os_error("ibv_reg_mr"))?;
        Ok(Self {
            buf,
            raw,
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
        // SAFETY: reads a field of a live registration.
        unsafe { (*self.raw.as_ptr()).lkey }
    }

    /// The remote key (meaningful for [`Access::Remote`] regions).
    pub fn rkey(&self) -> u32 {
        // SAFETY: as above.
        unsafe { (*self.raw.as_ptr()).rkey }
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
        unsafe { sys::ibv_dereg_mr(self.raw.as_ptr()) };
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
        self.status == sys::ibv_wc_status::IBV_WC_SUCCESS
    }
}

/// A completion queue with its own completion channel, waited on through tokio.
pub struct Cq {
    raw: NonNull<sys::ibv_cq>,
    channel: NonNull<sys::ibv_comp_channel>,
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
        // SAFETY: the device context is live (the PD holds it).
        let ch = unsafe { sys::ibv_create_comp_channel(pd.ctx) };
        let channel = NonNull::new(ch).ok_or_else(|| os_error("ibv_create_comp_channel"))?;
        // SAFETY: as above; the channel was just created on the same context.
        let cq =
            unsafe { sys::ibv_create_cq(pd.ctx, entries, ptr::null_mut(), channel.as_ptr(), 0) };
        let Some(raw) = NonNull::new(cq) else {
            let e = os_error("ibv_create_cq");
            // SAFETY: the channel is unused.
            unsafe { sys::ibv_destroy_comp_channel(channel.as_ptr()) };
            return Err(e);
        };
        // SAFETY: reads the channel's descriptor.
        let fd = unsafe { (*channel.as_ptr()).fd };
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
            sys::ibv_req_notify_cq(self.raw.as_ptr(), 0)
        })
    }

    fn poll_into(&mut self, out: &mut Vec<Completion>) -> io::Result<usize> {
        // SAFETY: an all-zero ibv_wc is a valid value to be overwritten.
        let mut wcs: [sys::ibv_wc; 16] = unsafe { std::mem::zeroed() };
        // SAFETY: a live CQ, polled by one task (we hold &mut self); `wcs` has 16 entries.
        let n = unsafe { sys::ibv_poll_cq(self.raw.as_ptr(), 16, wcs.as_mut_ptr()) };
        if n < 0 {
            return Err(io::Error::other("ibv_poll_cq failed"));
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
            let mut ctx = ptr::null_mut();
            // SAFETY: the channel is live and non-blocking; the event is acknowledged below.
            let rc = unsafe { sys::ibv_get_cq_event(self.channel.as_ptr(), &mut cq, &mut ctx) };
            if rc != 0 {
                let e = io::Error::last_os_error();
                if e.kind() == io::ErrorKind::WouldBlock {
                    guard.clear_ready();
                    continue;
                }
                return Err(os_error("ibv_get_cq_event"));
            }
            // SAFETY: acknowledges the one event just taken for this CQ.
            unsafe { sys::ibv_ack_cq_events(self.raw.as_ptr(), 1) };
        }
    }
}

impl Drop for Cq {
    fn drop(&mut self) {
        // SAFETY: the QP using this CQ is destroyed first (Endpoint field order); events were
        // acknowledged as they were taken.
        unsafe {
            ManuallyDrop::drop(&mut self.fd);
            sys::ibv_destroy_cq(self.raw.as_ptr());
            sys::ibv_destroy_comp_channel(self.channel.as_ptr());
        }
    }
}

//! The C shim over rdma-core (src/shim.c): a flat API of scalars and pointers, so nothing here
//! depends on the layout of an rdma-core struct. The objects are opaque types known only by
//! pointer; the numbers below are checked against rdma-core's headers by `_Static_assert`s in
//! the shim.
//!
//! Built with rdma-core's headers (`--cfg rdma_core`, set by build.rs) these are the shim's
//! functions, linked with libibverbs and librdmacm. Built without them they are stand-ins with
//! the same signatures that fail as the C calls do (NULL or -1, errno `ENOSYS`), so
//! `verbs` has one version of its code and the first call says RDMA is built out.
#![allow(unsafe_code)]

use std::ffi::c_void;

use libc::{c_int, c_uint, size_t, sockaddr, sockaddr_storage};

macro_rules! opaque {
    ($($(#[$m:meta])* $name:ident;)*) => {$(
        $(#[$m])*
        #[repr(C)]
        pub(crate) struct $name {
            _private: [u8; 0],
            // Neither Send, Sync nor Unpin: only ever behind a raw pointer.
            _marker: std::marker::PhantomData<(*mut u8, std::marker::PhantomPinned)>,
        }
    )*};
}

opaque! {
    /// `struct rdma_event_channel`.
    RdmaEventChannel;
    /// `struct rdma_cm_event`.
    RdmaCmEvent;
    /// `struct rdma_cm_id`.
    RdmaCmId;
    /// `struct ibv_pd`.
    IbvPd;
    /// `struct ibv_mr`.
    IbvMr;
    /// `struct ibv_comp_channel`.
    IbvCompChannel;
    /// `struct ibv_cq`.
    IbvCq;
}

/// `enum rdma_cm_event_type` values (the shim checks them).
pub(crate) mod cm_event {
    pub(crate) const ADDR_RESOLVED: u32 = 0;
    pub(crate) const ADDR_ERROR: u32 = 1;
    pub(crate) const ROUTE_RESOLVED: u32 = 2;
    pub(crate) const ROUTE_ERROR: u32 = 3;
    pub(crate) const CONNECT_REQUEST: u32 = 4;
    pub(crate) const CONNECT_ERROR: u32 = 6;
    pub(crate) const UNREACHABLE: u32 = 7;
    pub(crate) const REJECTED: u32 = 8;
    pub(crate) const ESTABLISHED: u32 = 9;
    pub(crate) const DISCONNECTED: u32 = 10;
    pub(crate) const DEVICE_REMOVAL: u32 = 11;
}

/// `IBV_WC_SUCCESS` (the shim checks it).
pub(crate) const WC_SUCCESS: u32 = 0;

/// `PNFS_RDMA_OP_*` of the shim: what a send-queue work request does.
pub(crate) const OP_SEND: c_int = 0;
/// An RDMA Write.
pub(crate) const OP_RDMA_WRITE: c_int = 1;
/// An RDMA Read.
pub(crate) const OP_RDMA_READ: c_int = 2;
/// A Send With Invalidate (the `rkey` argument is the one the peer invalidates).
pub(crate) const OP_SEND_WITH_INV: c_int = 3;

/// `struct pnfs_rdma_wc` of the shim: one work completion.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Wc {
    pub(crate) wr_id: u64,
    /// `enum ibv_wc_status`.
    pub(crate) status: u32,
    /// `enum ibv_wc_opcode` (not read: completions are told apart by `wr_id`).
    #[allow(dead_code)]
    pub(crate) opcode: u32,
    pub(crate) byte_len: u32,
}

/// `struct pnfs_rdma_sge` of the shim: one local piece of a send-queue work request.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub(crate) struct Sge {
    pub(crate) addr: u64,
    pub(crate) length: u32,
    pub(crate) lkey: u32,
}

#[cfg(rdma_core)]
pub(crate) use shim::*;

#[cfg(rdma_core)]
mod shim {
    use super::*;

    // SAFETY (for every function): each is defined in src/shim.c with exactly these argument
    // and result types (C int = i32, size_t = usize, uint*_t = u*, pointers to opaque
    // structs); callers uphold the pointer contracts documented there. build.rs links the
    // shim's static library and libibverbs and librdmacm.
    extern "C" {
        pub(crate) fn pnfs_rdma_create_event_channel() -> *mut RdmaEventChannel;
        pub(crate) fn pnfs_rdma_event_channel_fd(channel: *const RdmaEventChannel) -> c_int;
        pub(crate) fn pnfs_rdma_destroy_event_channel(channel: *mut RdmaEventChannel);
        #[allow(clippy::too_many_arguments)]
        pub(crate) fn pnfs_rdma_get_cm_event(
            channel: *mut RdmaEventChannel,
            event: *mut *mut RdmaCmEvent,
            kind: *mut u32,
            status: *mut i32,
            id: *mut *mut RdmaCmId,
            listen_id: *mut *mut RdmaCmId,
            private_data: *mut *const c_void,
            private_data_len: *mut u8,
        ) -> c_int;
        pub(crate) fn pnfs_rdma_ack_cm_event(event: *mut RdmaCmEvent) -> c_int;

        pub(crate) fn pnfs_rdma_create_id(channel: *mut RdmaEventChannel) -> *mut RdmaCmId;
        pub(crate) fn pnfs_rdma_destroy_id(id: *mut RdmaCmId) -> c_int;
        pub(crate) fn pnfs_rdma_migrate_id(
            id: *mut RdmaCmId,
            channel: *mut RdmaEventChannel,
        ) -> c_int;
        pub(crate) fn pnfs_rdma_bind_addr(id: *mut RdmaCmId, addr: *const sockaddr) -> c_int;
        pub(crate) fn pnfs_rdma_listen(id: *mut RdmaCmId, backlog: c_int) -> c_int;
        pub(crate) fn pnfs_rdma_resolve_addr(
            id: *mut RdmaCmId,
            dst: *const sockaddr,
            timeout_ms: c_int,
        ) -> c_int;
        pub(crate) fn pnfs_rdma_resolve_route(id: *mut RdmaCmId, timeout_ms: c_int) -> c_int;
        pub(crate) fn pnfs_rdma_accept(
            id: *mut RdmaCmId,
            private_data: *const c_void,
            private_data_len: u8,
            responder_resources: u8,
            initiator_depth: u8,
        ) -> c_int;
        pub(crate) fn pnfs_rdma_connect(
            id: *mut RdmaCmId,
            private_data: *const c_void,
            private_data_len: u8,
            responder_resources: u8,
            initiator_depth: u8,
        ) -> c_int;
        pub(crate) fn pnfs_rdma_disconnect(id: *mut RdmaCmId) -> c_int;
        pub(crate) fn pnfs_rdma_notify_established(id: *mut RdmaCmId) -> c_int;
        pub(crate) fn pnfs_rdma_local_addr(id: *mut RdmaCmId, out: *mut sockaddr_storage) -> c_int;
        pub(crate) fn pnfs_rdma_peer_addr(id: *mut RdmaCmId, out: *mut sockaddr_storage) -> c_int;
        pub(crate) fn pnfs_rdma_id_has_device(id: *const RdmaCmId) -> c_int;

        pub(crate) fn pnfs_rdma_alloc_pd(id: *mut RdmaCmId) -> *mut IbvPd;
        pub(crate) fn pnfs_rdma_dealloc_pd(pd: *mut IbvPd) -> c_int;
        pub(crate) fn pnfs_rdma_reg_mr(
            pd: *mut IbvPd,
            addr: *mut c_void,
            len: size_t,
            remote: c_int,
            lkey: *mut u32,
            rkey: *mut u32,
        ) -> *mut IbvMr;
        pub(crate) fn pnfs_rdma_dereg_mr(mr: *mut IbvMr) -> c_int;

        pub(crate) fn pnfs_rdma_create_comp_channel(pd: *mut IbvPd) -> *mut IbvCompChannel;
        pub(crate) fn pnfs_rdma_comp_channel_fd(channel: *const IbvCompChannel) -> c_int;
        pub(crate) fn pnfs_rdma_destroy_comp_channel(channel: *mut IbvCompChannel) -> c_int;
        pub(crate) fn pnfs_rdma_create_cq(
            pd: *mut IbvPd,
            entries: c_int,
            channel: *mut IbvCompChannel,
        ) -> *mut IbvCq;
        pub(crate) fn pnfs_rdma_destroy_cq(cq: *mut IbvCq) -> c_int;
        pub(crate) fn pnfs_rdma_req_notify_cq(cq: *mut IbvCq, solicited_only: c_int) -> c_int;
        pub(crate) fn pnfs_rdma_get_cq_event(
            channel: *mut IbvCompChannel,
            cq: *mut *mut IbvCq,
        ) -> c_int;
        pub(crate) fn pnfs_rdma_ack_cq_events(cq: *mut IbvCq, n: c_uint);
        pub(crate) fn pnfs_rdma_poll_cq(cq: *mut IbvCq, n: c_int, out: *mut Wc) -> c_int;

        pub(crate) fn pnfs_rdma_create_qp(
            id: *mut RdmaCmId,
            pd: *mut IbvPd,
            cq: *mut IbvCq,
            send_wr: u32,
            recv_wr: u32,
            send_sge: u32,
            recv_sge: u32,
        ) -> c_int;
        pub(crate) fn pnfs_rdma_destroy_qp(id: *mut RdmaCmId);
        pub(crate) fn pnfs_rdma_post_recv(
            id: *mut RdmaCmId,
            wr_id: u64,
            addr: u64,
            length: u32,
            lkey: u32,
        ) -> c_int;
        #[allow(clippy::too_many_arguments)]
        pub(crate) fn pnfs_rdma_post_send(
            id: *mut RdmaCmId,
            wr_id: u64,
            op: c_int,
            sges: *const Sge,
            n: c_int,
            remote_addr: u64,
            rkey: u32,
            signaled: c_int,
        ) -> c_int;
    }
}

#[cfg(not(rdma_core))]
pub(crate) use standin::*;

/// Built without rdma-core: the same functions, each failing as its C counterpart does on an
/// error (NULL or -1 with errno `ENOSYS`; the destructors, never reached since nothing can be
/// created, do nothing). They are `unsafe fn` so that the callers' code is the same either way.
#[cfg(not(rdma_core))]
#[allow(clippy::missing_safety_doc, clippy::too_many_arguments)]
mod standin {
    use std::ptr;

    use super::*;

    fn enosys() -> c_int {
        // SAFETY: __errno_location returns this thread's errno, always valid to write.
        unsafe { *libc::__errno_location() = libc::ENOSYS };
        -1
    }

    fn null<T>() -> *mut T {
        enosys();
        ptr::null_mut()
    }

    pub(crate) unsafe fn pnfs_rdma_create_event_channel() -> *mut RdmaEventChannel {
        null()
    }
    pub(crate) unsafe fn pnfs_rdma_event_channel_fd(_: *const RdmaEventChannel) -> c_int {
        enosys()
    }
    pub(crate) unsafe fn pnfs_rdma_destroy_event_channel(_: *mut RdmaEventChannel) {}
    pub(crate) unsafe fn pnfs_rdma_get_cm_event(
        _: *mut RdmaEventChannel,
        _: *mut *mut RdmaCmEvent,
        _: *mut u32,
        _: *mut i32,
        _: *mut *mut RdmaCmId,
        _: *mut *mut RdmaCmId,
        _: *mut *const c_void,
        _: *mut u8,
    ) -> c_int {
        enosys()
    }
    pub(crate) unsafe fn pnfs_rdma_ack_cm_event(_: *mut RdmaCmEvent) -> c_int {
        enosys()
    }

    pub(crate) unsafe fn pnfs_rdma_create_id(_: *mut RdmaEventChannel) -> *mut RdmaCmId {
        null()
    }
    pub(crate) unsafe fn pnfs_rdma_destroy_id(_: *mut RdmaCmId) -> c_int {
        enosys()
    }
    pub(crate) unsafe fn pnfs_rdma_migrate_id(_: *mut RdmaCmId, _: *mut RdmaEventChannel) -> c_int {
        enosys()
    }
    pub(crate) unsafe fn pnfs_rdma_bind_addr(_: *mut RdmaCmId, _: *const sockaddr) -> c_int {
        enosys()
    }
    pub(crate) unsafe fn pnfs_rdma_listen(_: *mut RdmaCmId, _: c_int) -> c_int {
        enosys()
    }
    pub(crate) unsafe fn pnfs_rdma_resolve_addr(
        _: *mut RdmaCmId,
        _: *const sockaddr,
        _: c_int,
    ) -> c_int {
        enosys()
    }
    pub(crate) unsafe fn pnfs_rdma_resolve_route(_: *mut RdmaCmId, _: c_int) -> c_int {
        enosys()
    }
    pub(crate) unsafe fn pnfs_rdma_accept(
        _: *mut RdmaCmId,
        _: *const c_void,
        _: u8,
        _: u8,
        _: u8,
    ) -> c_int {
        enosys()
    }
    pub(crate) unsafe fn pnfs_rdma_connect(
        _: *mut RdmaCmId,
        _: *const c_void,
        _: u8,
        _: u8,
        _: u8,
    ) -> c_int {
        enosys()
    }
    pub(crate) unsafe fn pnfs_rdma_disconnect(_: *mut RdmaCmId) -> c_int {
        enosys()
    }
    pub(crate) unsafe fn pnfs_rdma_notify_established(_: *mut RdmaCmId) -> c_int {
        enosys()
    }
    pub(crate) unsafe fn pnfs_rdma_local_addr(_: *mut RdmaCmId, _: *mut sockaddr_storage) -> c_int {
        enosys()
    }
    pub(crate) unsafe fn pnfs_rdma_peer_addr(_: *mut RdmaCmId, _: *mut sockaddr_storage) -> c_int {
        enosys()
    }
    pub(crate) unsafe fn pnfs_rdma_id_has_device(_: *const RdmaCmId) -> c_int {
        0
    }

    pub(crate) unsafe fn pnfs_rdma_alloc_pd(_: *mut RdmaCmId) -> *mut IbvPd {
        null()
    }
    pub(crate) unsafe fn pnfs_rdma_dealloc_pd(_: *mut IbvPd) -> c_int {
        enosys()
    }
    pub(crate) unsafe fn pnfs_rdma_reg_mr(
        _: *mut IbvPd,
        _: *mut c_void,
        _: size_t,
        _: c_int,
        _: *mut u32,
        _: *mut u32,
    ) -> *mut IbvMr {
        null()
    }
    pub(crate) unsafe fn pnfs_rdma_dereg_mr(_: *mut IbvMr) -> c_int {
        enosys()
    }

    pub(crate) unsafe fn pnfs_rdma_create_comp_channel(_: *mut IbvPd) -> *mut IbvCompChannel {
        null()
    }
    pub(crate) unsafe fn pnfs_rdma_comp_channel_fd(_: *const IbvCompChannel) -> c_int {
        enosys()
    }
    pub(crate) unsafe fn pnfs_rdma_destroy_comp_channel(_: *mut IbvCompChannel) -> c_int {
        enosys()
    }
    pub(crate) unsafe fn pnfs_rdma_create_cq(
        _: *mut IbvPd,
        _: c_int,
        _: *mut IbvCompChannel,
    ) -> *mut IbvCq {
        null()
    }
    pub(crate) unsafe fn pnfs_rdma_destroy_cq(_: *mut IbvCq) -> c_int {
        enosys()
    }
    pub(crate) unsafe fn pnfs_rdma_req_notify_cq(_: *mut IbvCq, _: c_int) -> c_int {
        enosys()
    }
    pub(crate) unsafe fn pnfs_rdma_get_cq_event(
        _: *mut IbvCompChannel,
        _: *mut *mut IbvCq,
    ) -> c_int {
        enosys()
    }
    pub(crate) unsafe fn pnfs_rdma_ack_cq_events(_: *mut IbvCq, _: c_uint) {}
    pub(crate) unsafe fn pnfs_rdma_poll_cq(_: *mut IbvCq, _: c_int, _: *mut Wc) -> c_int {
        enosys()
    }

    pub(crate) unsafe fn pnfs_rdma_create_qp(
        _: *mut RdmaCmId,
        _: *mut IbvPd,
        _: *mut IbvCq,
        _: u32,
        _: u32,
        _: u32,
        _: u32,
    ) -> c_int {
        enosys()
    }
    pub(crate) unsafe fn pnfs_rdma_destroy_qp(_: *mut RdmaCmId) {}
    pub(crate) unsafe fn pnfs_rdma_post_recv(
        _: *mut RdmaCmId,
        _: u64,
        _: u64,
        _: u32,
        _: u32,
    ) -> c_int {
        enosys()
    }
    pub(crate) unsafe fn pnfs_rdma_post_send(
        _: *mut RdmaCmId,
        _: u64,
        _: c_int,
        _: *const Sge,
        _: c_int,
        _: u64,
        _: u32,
        _: c_int,
    ) -> c_int {
        enosys()
    }
}

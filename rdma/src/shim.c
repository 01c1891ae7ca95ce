/*
 * The rdma-core calls of the rdma crate, as a flat C API of scalars and pointers (src/verbs/ffi.rs
 * declares it): Rust never sees a struct of rdma-core, so nothing on the Rust side depends on
 * their layouts, and the static inline functions of verbs.h (ibv_post_send, ibv_post_recv,
 * ibv_poll_cq, ibv_req_notify_cq) and the ibv_reg_mr macro are called here, where the headers
 * are. build.rs compiles this file when <infiniband/verbs.h> and <rdma/rdma_cma.h> are there
 * (libibverbs-dev, librdmacm-dev) and links libibverbs and librdmacm.
 *
 * Every call that can fail returns NULL or -1 with errno set (the verbs calls that return an
 * error number instead are turned into that convention here).
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

/* The numbers src/verbs/ffi.rs names, checked against rdma-core's own. */
_Static_assert(RDMA_CM_EVENT_ADDR_RESOLVED == 0, "rdma_cm_event_type");
_Static_assert(RDMA_CM_EVENT_ADDR_ERROR == 1, "rdma_cm_event_type");
_Static_assert(RDMA_CM_EVENT_ROUTE_RESOLVED == 2, "rdma_cm_event_type");
_Static_assert(RDMA_CM_EVENT_ROUTE_ERROR == 3, "rdma_cm_event_type");
_Static_assert(RDMA_CM_EVENT_CONNECT_REQUEST == 4, "rdma_cm_event_type");
_Static_assert(RDMA_CM_EVENT_CONNECT_ERROR == 6, "rdma_cm_event_type");
_Static_assert(RDMA_CM_EVENT_UNREACHABLE == 7, "rdma_cm_event_type");
_Static_assert(RDMA_CM_EVENT_REJECTED == 8, "rdma_cm_event_type");
_Static_assert(RDMA_CM_EVENT_ESTABLISHED == 9, "rdma_cm_event_type");
_Static_assert(RDMA_CM_EVENT_DISCONNECTED == 10, "rdma_cm_event_type");
_Static_assert(RDMA_CM_EVENT_DEVICE_REMOVAL == 11, "rdma_cm_event_type");
_Static_assert(IBV_WC_SUCCESS == 0, "ibv_wc_status");
_Static_assert(IBV_WC_WR_FLUSH_ERR == 5, "ibv_wc_status");

/* One work completion as the Rust side reads it (ffi::Wc). */
struct pnfs_rdma_wc {
	uint64_t wr_id;
	uint32_t status;   /* enum ibv_wc_status */
	uint32_t opcode;   /* enum ibv_wc_opcode */
	uint32_t byte_len;
};

/* One local piece of a send-queue work request (ffi::Sge). */
struct pnfs_rdma_sge {
	uint64_t addr;
	uint32_t length;
	uint32_t lkey;
};

/* What a send-queue work request does (ffi::OP_*). */
enum {
	PNFS_RDMA_OP_SEND = 0,
	PNFS_RDMA_OP_RDMA_WRITE = 1,
	PNFS_RDMA_OP_RDMA_READ = 2,
	PNFS_RDMA_OP_SEND_WITH_INV = 3,
};

/* A verbs call that returns an error number (positive, or negated by some providers): -1 with
 * errno. */
static int from_verbs_rc(int rc)
{
	if (rc == 0)
		return 0;
	if (rc > 0)
		errno = rc;
	else if (rc < -1)
		errno = -rc;
	else if (errno == 0)
		errno = EIO;
	return -1;
}

/* --- RDMA CM event channel ------------------------------------------------------------------ */

struct rdma_event_channel *pnfs_rdma_create_event_channel(void)
{
	return rdma_create_event_channel();
}

int pnfs_rdma_event_channel_fd(const struct rdma_event_channel *channel)
{
	return channel->fd;
}

void pnfs_rdma_destroy_event_channel(struct rdma_event_channel *channel)
{
	rdma_destroy_event_channel(channel);
}

/* The next event (0), or -1 with errno (EAGAIN on a non-blocking channel with none). The
 * private data stays valid until pnfs_rdma_ack_cm_event(*event). */
int pnfs_rdma_get_cm_event(struct rdma_event_channel *channel, struct rdma_cm_event **event,
			   uint32_t *type, int32_t *status, struct rdma_cm_id **id,
			   struct rdma_cm_id **listen_id, const void **private_data,
			   uint8_t *private_data_len)
{
	struct rdma_cm_event *ev = NULL;

	if (rdma_get_cm_event(channel, &ev))
		return -1;
	*event = ev;
	*type = (uint32_t)ev->event;
	*status = ev->status;
	*id = ev->id;
	*listen_id = ev->listen_id;
	*private_data = ev->param.conn.private_data;
	*private_data_len = ev->param.conn.private_data ? ev->param.conn.private_data_len : 0;
	return 0;
}

int pnfs_rdma_ack_cm_event(struct rdma_cm_event *event)
{
	return rdma_ack_cm_event(event);
}

/* --- RDMA CM identifiers ---------------------------------------------------------------------- */

/* A reliable-connected (TCP port space) identifier whose events arrive on `channel`. */
struct rdma_cm_id *pnfs_rdma_create_id(struct rdma_event_channel *channel)
{
	struct rdma_cm_id *id = NULL;

	if (rdma_create_id(channel, &id, NULL, RDMA_PS_TCP))
		return NULL;
	return id;
}

int pnfs_rdma_destroy_id(struct rdma_cm_id *id)
{
	return rdma_destroy_id(id);
}

int pnfs_rdma_migrate_id(struct rdma_cm_id *id, struct rdma_event_channel *channel)
{
	return rdma_migrate_id(id, channel);
}

int pnfs_rdma_bind_addr(struct rdma_cm_id *id, const struct sockaddr *addr)
{
	return rdma_bind_addr(id, (struct sockaddr *)addr);
}

int pnfs_rdma_listen(struct rdma_cm_id *id, int backlog)
{
	return rdma_listen(id, backlog);
}

int pnfs_rdma_resolve_addr(struct rdma_cm_id *id, const struct sockaddr *dst, int timeout_ms)
{
	return rdma_resolve_addr(id, NULL, (struct sockaddr *)dst, timeout_ms);
}

int pnfs_rdma_resolve_route(struct rdma_cm_id *id, int timeout_ms)
{
	return rdma_resolve_route(id, timeout_ms);
}

static void conn_param(struct rdma_conn_param *p, const void *private_data,
		       uint8_t private_data_len, uint8_t responder_resources,
		       uint8_t initiator_depth)
{
	memset(p, 0, sizeof(*p));
	p->private_data = private_data_len ? private_data : NULL;
	p->private_data_len = private_data_len;
	p->responder_resources = responder_resources;
	p->initiator_depth = initiator_depth;
	p->retry_count = 7;
	p->rnr_retry_count = 7;
}

int pnfs_rdma_accept(struct rdma_cm_id *id, const void *private_data, uint8_t private_data_len,
		     uint8_t responder_resources, uint8_t initiator_depth)
{
	struct rdma_conn_param p;

	conn_param(&p, private_data, private_data_len, responder_resources, initiator_depth);
	return rdma_accept(id, &p);
}

int pnfs_rdma_connect(struct rdma_cm_id *id, const void *private_data, uint8_t private_data_len,
		      uint8_t responder_resources, uint8_t initiator_depth)
{
	struct rdma_conn_param p;

	conn_param(&p, private_data, private_data_len, responder_resources, initiator_depth);
	return rdma_connect(id, &p);
}

int pnfs_rdma_disconnect(struct rdma_cm_id *id)
{
	return rdma_disconnect(id);
}

/* Tells the CM that the connection carries traffic (IBV_EVENT_COMM_EST): it moves to
 * established and delivers RDMA_CM_EVENT_ESTABLISHED, even if the peer's RTU never came
 * (rdma_notify(3)). Fails (EISCONN, EINVAL) when it is established already. */
int pnfs_rdma_notify_established(struct rdma_cm_id *id)
{
	return rdma_notify(id, IBV_EVENT_COMM_EST);
}

static int copy_sockaddr(const struct sockaddr *sa, struct sockaddr_storage *out)
{
	memset(out, 0, sizeof(*out));
	if (!sa)
		return -1;
	switch (sa->sa_family) {
	case AF_INET:
		memcpy(out, sa, sizeof(struct sockaddr_in));
		return 0;
	case AF_INET6:
		memcpy(out, sa, sizeof(struct sockaddr_in6));
		return 0;
	default:
		return -1;
	}
}

/* Our address (after bind, accept or resolve): 0, or -1 if there is none of family AF_INET or
 * AF_INET6 (`out` then has family AF_UNSPEC). */
int pnfs_rdma_local_addr(struct rdma_cm_id *id, struct sockaddr_storage *out)
{
	return copy_sockaddr(rdma_get_local_addr(id), out);
}

/* The peer's address, as pnfs_rdma_local_addr. */
int pnfs_rdma_peer_addr(struct rdma_cm_id *id, struct sockaddr_storage *out)
{
	return copy_sockaddr(rdma_get_peer_addr(id), out);
}

/* Whether the identifier is bound to a device (after a connect request or address
 * resolution). */
int pnfs_rdma_id_has_device(const struct rdma_cm_id *id)
{
	return id->verbs != NULL;
}

/* --- protection domain, memory registration --------------------------------------------------- */

struct ibv_pd *pnfs_rdma_alloc_pd(struct rdma_cm_id *id)
{
	if (!id->verbs) {
		errno = ENODEV;
		return NULL;
	}
	return ibv_alloc_pd(id->verbs);
}

int pnfs_rdma_dealloc_pd(struct ibv_pd *pd)
{
	return from_verbs_rc(ibv_dealloc_pd(pd));
}

/* Registers `len` bytes at `addr` for local writes, and remote reads and writes if `remote`;
 * the keys go to `lkey` and `rkey`. */
struct ibv_mr *pnfs_rdma_reg_mr(struct ibv_pd *pd, void *addr, size_t len, int remote,
				uint32_t *lkey, uint32_t *rkey)
{
	int access = IBV_ACCESS_LOCAL_WRITE;
	struct ibv_mr *mr;

	if (remote)
		access |= IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE;
	mr = ibv_reg_mr(pd, addr, len, access);
	if (!mr)
		return NULL;
	*lkey = mr->lkey;
	*rkey = mr->rkey;
	return mr;
}

int pnfs_rdma_dereg_mr(struct ibv_mr *mr)
{
	return from_verbs_rc(ibv_dereg_mr(mr));
}

/* --- completion channel and queue ------------------------------------------------------------- */

struct ibv_comp_channel *pnfs_rdma_create_comp_channel(struct ibv_pd *pd)
{
	return ibv_create_comp_channel(pd->context);
}

int pnfs_rdma_comp_channel_fd(const struct ibv_comp_channel *channel)
{
	return channel->fd;
}

int pnfs_rdma_destroy_comp_channel(struct ibv_comp_channel *channel)
{
	return from_verbs_rc(ibv_destroy_comp_channel(channel));
}

/* A CQ of `entries` entries on `pd`'s device whose events arrive on `channel`. */
struct ibv_cq *pnfs_rdma_create_cq(struct ibv_pd *pd, int entries,
				   struct ibv_comp_channel *channel)
{
	return ibv_create_cq(pd->context, entries, NULL, channel, 0);
}

int pnfs_rdma_destroy_cq(struct ibv_cq *cq)
{
	return from_verbs_rc(ibv_destroy_cq(cq));
}

int pnfs_rdma_req_notify_cq(struct ibv_cq *cq, int solicited_only)
{
	return from_verbs_rc(ibv_req_notify_cq(cq, solicited_only));
}

/* Takes the next event of `channel` (0, with the CQ it is for in `cq`), or -1 with errno
 * (EAGAIN on a non-blocking channel with none). */
int pnfs_rdma_get_cq_event(struct ibv_comp_channel *channel, struct ibv_cq **cq)
{
	void *ctx = NULL;

	return ibv_get_cq_event(channel, cq, &ctx);
}

void pnfs_rdma_ack_cq_events(struct ibv_cq *cq, unsigned int n)
{
	ibv_ack_cq_events(cq, n);
}

/* Up to `n` completions into `out`: how many (0 if none), or -1 with errno. */
int pnfs_rdma_poll_cq(struct ibv_cq *cq, int n, struct pnfs_rdma_wc *out)
{
	struct ibv_wc wc[16];
	int done = 0;

	while (done < n) {
		int want = n - done < 16 ? n - done : 16;
		int got = ibv_poll_cq(cq, want, wc);

		if (got < 0) {
			if (done > 0)
				break;
			errno = got < -1 ? -got : EIO;
			return -1;
		}
		for (int i = 0; i < got; i++) {
			out[done + i].wr_id = wc[i].wr_id;
			out[done + i].status = (uint32_t)wc[i].status;
			out[done + i].opcode = (uint32_t)wc[i].opcode;
			out[done + i].byte_len = wc[i].byte_len;
		}
		done += got;
		if (got < want)
			break;
	}
	return done;
}

/* --- queue pair ---------------------------------------------------------------------------------- */

/* The reliable-connected QP of `id` on `pd`, sends and receives completing on `cq`, every send
 * signaled. */
int pnfs_rdma_create_qp(struct rdma_cm_id *id, struct ibv_pd *pd, struct ibv_cq *cq,
			uint32_t send_wr, uint32_t recv_wr, uint32_t send_sge, uint32_t recv_sge)
{
	struct ibv_qp_init_attr attr;

	memset(&attr, 0, sizeof(attr));
	attr.send_cq = cq;
	attr.recv_cq = cq;
	attr.cap.max_send_wr = send_wr;
	attr.cap.max_recv_wr = recv_wr;
	attr.cap.max_send_sge = send_sge;
	attr.cap.max_recv_sge = recv_sge;
	attr.qp_type = IBV_QPT_RC;
	attr.sq_sig_all = 1;
	return rdma_create_qp(id, pd, &attr);
}

void pnfs_rdma_destroy_qp(struct rdma_cm_id *id)
{
	rdma_destroy_qp(id);
}

/* Posts a receive of `length` bytes at `addr` (registered, key `lkey`) on the QP of `id`. */
int pnfs_rdma_post_recv(struct rdma_cm_id *id, uint64_t wr_id, uint64_t addr, uint32_t length,
			uint32_t lkey)
{
	struct ibv_sge sge = { .addr = addr, .length = length, .lkey = lkey };
	struct ibv_recv_wr wr = { .wr_id = wr_id, .next = NULL, .sg_list = &sge, .num_sge = 1 };
	struct ibv_recv_wr *bad = NULL;

	if (!id->qp) {
		errno = ENOTCONN;
		return -1;
	}
	return from_verbs_rc(ibv_post_recv(id->qp, &wr, &bad));
}

/* Posts a Send, RDMA Write or RDMA Read (`op`, PNFS_RDMA_OP_*) of the `n` local pieces `sges`
 * on the QP of `id`; `remote_addr` and `rkey` name the peer's memory of an RDMA Write or
 * Read. */
int pnfs_rdma_post_send(struct rdma_cm_id *id, uint64_t wr_id, int op,
			const struct pnfs_rdma_sge *sges, int n, uint64_t remote_addr,
			uint32_t rkey, int signaled)
{
	struct ibv_sge local[16];
	struct ibv_sge *list = local;
	struct ibv_send_wr wr;
	struct ibv_send_wr *bad = NULL;
	int rc;

	if (!id->qp) {
		errno = ENOTCONN;
		return -1;
	}
	if (n < 0) {
		errno = EINVAL;
		return -1;
	}
	if (n > 16) {
		list = calloc((size_t)n, sizeof(*list));
		if (!list)
			return -1;
	}
	for (int i = 0; i < n; i++) {
		list[i].addr = sges[i].addr;
		list[i].length = sges[i].length;
		list[i].lkey = sges[i].lkey;
	}
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = wr_id;
	wr.sg_list = n ? list : NULL;
	wr.num_sge = n;
	wr.send_flags = signaled ? IBV_SEND_SIGNALED : 0;
	switch (op) {
	case PNFS_RDMA_OP_SEND:
		wr.opcode = IBV_WR_SEND;
		break;
	case PNFS_RDMA_OP_SEND_WITH_INV:
		wr.opcode = IBV_WR_SEND_WITH_INV;
		wr.invalidate_rkey = rkey;
		break;
	case PNFS_RDMA_OP_RDMA_WRITE:
		wr.opcode = IBV_WR_RDMA_WRITE;
		wr.wr.rdma.remote_addr = remote_addr;
		wr.wr.rdma.rkey = rkey;
		break;
	case PNFS_RDMA_OP_RDMA_READ:
		wr.opcode = IBV_WR_RDMA_READ;
		wr.wr.rdma.remote_addr = remote_addr;
		wr.wr.rdma.rkey = rkey;
		break;
	default:
		if (list != local)
			free(list);
		errno = EINVAL;
		return -1;
	}
	/* The provider copies the work request and its list into the send queue. */
	rc = from_verbs_rc(ibv_post_send(id->qp, &wr, &bad));
	if (list != local) {
		int saved = errno;
		free(list);
		errno = saved;
	}
	return rc;
}

/* SPDX-License-Identifier: MIT */
/*
 * gv_verbs.c - PD, MR, AH, CQ (ibv_cq and ibv_cq_ex), completion channels,
 * async events, and the ops tables the inline functions of verbs.h call
 * through.
 *
 * Completion channels: the NIC model writes CQEs from its own thread and
 * has no interrupt; a notifier thread (started with the first channel)
 * watches the rings of the armed CQs - sleeping on a condition variable
 * while none is armed, looking with a growing pause (up to 1 ms) while one
 * is - and writes the CQ to its channel's pipe once, disarming it, as the
 * one-shot notification of IBA 11.4.2.2 does.  Solicited-only arming is
 * served like arming for any completion: an extra wakeup, which the
 * standard "get event, re-arm, poll until empty" loop tolerates.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>

#include <gdak/gdak.h>
#include <gdak/mlx5.h>

#include "gv_loc.h"
#include "nm_ext.h"
#include "tr_udp.h"

/* ---- async events -------------------------------------------------------------- */

void gv_async_post(struct gv_context *c, enum ibv_event_type type, void *obj)
{
	struct gv_async *e = calloc(1, sizeof(*e));
	char b = 1;

	if (!e)
		return;
	e->ev.event_type = type;
	switch (type) {
	case IBV_EVENT_CQ_ERR:
		e->ev.element.cq = obj;
		break;
	case IBV_EVENT_SRQ_ERR:
	case IBV_EVENT_SRQ_LIMIT_REACHED:
		e->ev.element.srq = obj;
		break;
	case IBV_EVENT_PORT_ACTIVE:
	case IBV_EVENT_PORT_ERR:
	case IBV_EVENT_LID_CHANGE:
	case IBV_EVENT_PKEY_CHANGE:
	case IBV_EVENT_SM_CHANGE:
	case IBV_EVENT_CLIENT_REREGISTER:
	case IBV_EVENT_GID_CHANGE:
		e->ev.element.port_num = 1;
		break;
	case IBV_EVENT_DEVICE_FATAL:
		break;
	default:
		e->ev.element.qp = obj;
		break;
	}
	pthread_mutex_lock(&c->ev_lock);
	if (c->ev_tail)
		c->ev_tail->next = e;
	else
		c->ev_head = e;
	c->ev_tail = e;
	pthread_mutex_unlock(&c->ev_lock);
	if (write(c->async_wr, &b, 1) != 1)
		GDAK_WARN(NULL, 0, "async event %s: pipe full", ibv_event_type_str(type));
}

GV_EXPORT int ibv_get_async_event(struct ibv_context *ctx, struct ibv_async_event *event)
{
	struct gv_context *c = gv_ctx(ctx);
	struct gv_async *e;
	char b;

	/* blocks, or fails with EAGAIN when the program made async_fd non-blocking */
	if (read(ctx->async_fd, &b, 1) != 1)
		return -1;
	pthread_mutex_lock(&c->ev_lock);
	e = c->ev_head;
	if (e) {
		c->ev_head = e->next;
		if (!c->ev_head)
			c->ev_tail = NULL;
	}
	pthread_mutex_unlock(&c->ev_lock);
	if (!e) {
		errno = EIO;
		return -1;
	}
	*event = e->ev;
	free(e);
	return 0;
}

GV_EXPORT void ibv_ack_async_event(struct ibv_async_event *event)
{
	(void)event;
}

/* ---- PD ---------------------------------------------------------------------------- */

static uint32_t handles = 1;

GV_EXPORT struct ibv_pd *ibv_alloc_pd(struct ibv_context *ctx)
{
	struct ibv_pd *pd = calloc(1, sizeof(*pd));

	if (!pd) {
		errno = ENOMEM;
		return NULL;
	}
	pd->context = ctx;
	pd->handle = __atomic_fetch_add(&handles, 1, __ATOMIC_RELAXED);
	return pd;
}

GV_EXPORT int ibv_dealloc_pd(struct ibv_pd *pd)
{
	free(pd);
	return 0;
}

/* ---- MR ------------------------------------------------------------------------------ */

struct gv_mr {
	struct ibv_mr mr;
	struct gdak_mr *g;
	unsigned access;
};

static struct ibv_mr *mr_reg(struct ibv_pd *pd, void *addr, size_t len, uint64_t iova,
			     unsigned access)
{
	const unsigned known = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			       IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC |
			       IBV_ACCESS_MW_BIND | IBV_ACCESS_RELAXED_ORDERING |
			       IBV_ACCESS_ON_DEMAND;
	struct gv_context *c;
	struct gv_mr *m;
	int ret;

	if (!pd) {
		errno = EINVAL;
		return NULL;
	}
	c = gv_ctx(pd->context);
	/* IBA 10.6.3.1: remote write or atomic access needs local write */
	if ((access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) &&
	    !(access & IBV_ACCESS_LOCAL_WRITE)) {
		errno = EINVAL;
		return NULL;
	}
	if (access & ~(known | IBV_ACCESS_OPTIONAL_RANGE) ||
	    ((access & IBV_ACCESS_ON_DEMAND) && !addr && len == SIZE_MAX)) {
		/* zero-based, implicit on-demand paging: not emulated */
		GDAK_ERR("mr", 0,
			 "reg_mr: access 0x%x at %p+%zu not supported (zero-based, "
			 "implicit ODP)",
			 access, addr, len);
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (iova != (uint64_t)(uintptr_t)addr) {
		/* the NIC model addresses regions by virtual address */
		GDAK_ERR("mr", 0, "reg_mr: iova 0x%llx != address %p not supported",
			 (unsigned long long)iova, addr);
		errno = EOPNOTSUPP;
		return NULL;
	}
	m = calloc(1, sizeof(*m));
	if (!m) {
		errno = ENOMEM;
		return NULL;
	}
	ret = gdak_mr_reg(c->dev->g, addr, len, access & GDAK_ACCESS_ALL, &m->g);
	if (ret) {
		free(m);
		errno = -ret;
		return NULL;
	}
	m->mr.context = pd->context;
	m->mr.pd = pd;
	m->mr.addr = addr;
	m->mr.length = len;
	m->mr.handle = __atomic_fetch_add(&handles, 1, __ATOMIC_RELAXED);
	m->mr.lkey = gdak_mr_lkey(m->g);
	m->mr.rkey = gdak_mr_rkey(m->g);
	m->access = access;
	if (gdak_mem_kind_of(c->dev->g, addr) == GDAK_MEM_HOST)
		udp_direct_mr_set(c->dev->addr.s_addr, GV_ROCE_PORT, m->mr.rkey, (uintptr_t)addr,
				  (uintptr_t)addr + len, access & GDAK_ACCESS_ALL);
	return &m->mr;
}

#undef ibv_reg_mr
GV_EXPORT struct ibv_mr *ibv_reg_mr(struct ibv_pd *pd, void *addr, size_t len, int access)
{
	return mr_reg(pd, addr, len, (uint64_t)(uintptr_t)addr, (unsigned)access);
}

#undef ibv_reg_mr_iova
GV_EXPORT struct ibv_mr *ibv_reg_mr_iova(struct ibv_pd *pd, void *addr, size_t len, uint64_t iova,
					 int access)
{
	return mr_reg(pd, addr, len, iova, (unsigned)access);
}

GV_EXPORT struct ibv_mr *ibv_reg_mr_iova2(struct ibv_pd *pd, void *addr, size_t len, uint64_t iova,
					  unsigned int access)
{
	return mr_reg(pd, addr, len, iova, access);
}

/* dma-buf: fd -1 is the probe stacks send to learn whether the device can
 * import one at all (EBADF: yes, but that is not a buffer); a real fd the
 * NIC model cannot resolve to memory it reads is refused with EOPNOTSUPP,
 * from which NCCL, NVSHMEM and DOCA fall back to registering the address. */
GV_EXPORT struct ibv_mr *ibv_reg_dmabuf_mr(struct ibv_pd *pd, uint64_t offset, size_t length,
					   uint64_t iova, int fd, int access)
{
	errno = fd < 0 ? EBADF : EOPNOTSUPP;
	return NULL;
}

GV_EXPORT int ibv_dereg_mr(struct ibv_mr *mr)
{
	struct gv_mr *m = (struct gv_mr *)(void *)mr;
	int ret;

	if (!mr)
		return EINVAL;
	/* first: no sender of another process writes into it from now on */
	udp_direct_mr_clear(gv_ctx(mr->context)->dev->addr.s_addr, GV_ROCE_PORT, mr->rkey);
	ret = gdak_mr_dereg(m->g);
	if (ret)
		return -ret;
	free(m);
	return 0;
}

GV_EXPORT int ibv_rereg_mr(struct ibv_mr *mr, int flags, struct ibv_pd *pd, void *addr,
			   size_t length, int access)
{
	struct gv_mr *m = (struct gv_mr *)(void *)mr;
	struct ibv_mr *n;

	if (!mr || (flags & ~IBV_REREG_MR_FLAGS_SUPPORTED) || !flags)
		return IBV_REREG_MR_ERR_INPUT;
	if (!(flags & IBV_REREG_MR_CHANGE_PD))
		pd = mr->pd;
	if (!(flags & IBV_REREG_MR_CHANGE_TRANSLATION)) {
		addr = mr->addr;
		length = mr->length;
	}
	if (!(flags & IBV_REREG_MR_CHANGE_ACCESS))
		access = (int)m->access;
	n = mr_reg(pd, addr, length, (uint64_t)(uintptr_t)addr, (unsigned)access);
	if (!n)
		return IBV_REREG_MR_ERR_CMD;
	udp_direct_mr_clear(gv_ctx(mr->context)->dev->addr.s_addr, GV_ROCE_PORT, mr->rkey);
	gdak_mr_dereg(m->g);
	m->g = ((struct gv_mr *)(void *)n)->g;
	m->access = (unsigned)access;
	mr->pd = pd;
	mr->addr = addr;
	mr->length = length;
	mr->lkey = n->lkey;
	mr->rkey = n->rkey;
	free(n);
	return 0;
}

/* ODP prefetch: the NIC thread faults pages in itself, nothing to do. */
static int advise_mr(struct ibv_pd *pd, enum ibv_advise_mr_advice advice, uint32_t flags,
		     struct ibv_sge *sg, uint32_t n)
{
	if (advice != IBV_ADVISE_MR_ADVICE_PREFETCH &&
	    advice != IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE &&
	    advice != IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT)
		return EOPNOTSUPP;
	return 0;
}

/* ---- AH (UD is not emulated; AHs exist for programs that create them anyway) ---------- */

GV_EXPORT struct ibv_ah *ibv_create_ah(struct ibv_pd *pd, struct ibv_ah_attr *attr)
{
	struct gv_ah *g;
	struct ibv_ah *ah;

	if (!pd || !attr || !attr->is_global) {
		/* RoCE: an address vector without a GRH names nothing (no LIDs) */
		errno = EINVAL;
		return NULL;
	}
	g = calloc(1, sizeof(*g));
	if (!g) {
		errno = ENOMEM;
		return NULL;
	}
	ah = &g->ah;
	ah->context = pd->context;
	ah->pd = pd;
	ah->handle = __atomic_fetch_add(&handles, 1, __ATOMIC_RELAXED);
	/* the mlx5 address vector mlx5dv_init_obj(AH) hands out, laid out as
	 * the PRM's (and libmlx5's create_ah) for RoCE: GRH present, the
	 * source GID index and flow label in grh_gid_fl, rate and SL, the
	 * destination GID; no MAC (the emulated wire is UDP on IPv4) */
	g->av.stat_rate_sl = (uint8_t)((attr->static_rate << 4) | ((attr->sl & 0x7) << 1));
	g->av.fl_mlid = (uint8_t)(attr->src_path_bits & 0x7f);
	g->av.grh_gid_fl = htobe32((1u << 30) | ((uint32_t)attr->grh.sgid_index << 20) |
				   (attr->grh.flow_label & 0xfffff));
	g->av.hop_limit = attr->grh.hop_limit;
	g->av.tclass = attr->grh.traffic_class;
	memcpy(g->av.rgid, attr->grh.dgid.raw, 16);
	return ah;
}

GV_EXPORT int ibv_destroy_ah(struct ibv_ah *ah)
{
	free(gv_container_of(ah, struct gv_ah, ah));
	return 0;
}

GV_EXPORT int ibv_init_ah_from_wc(struct ibv_context *ctx, uint8_t port, struct ibv_wc *wc,
				  struct ibv_grh *grh, struct ibv_ah_attr *ah)
{
	if (!wc || !grh || !ah || !(wc->wc_flags & IBV_WC_GRH))
		return -1;
	memset(ah, 0, sizeof(*ah));
	ah->is_global = 1;
	ah->grh.dgid = grh->sgid;
	ah->grh.hop_limit = 0xff;
	ah->port_num = port;
	return 0;
}

GV_EXPORT struct ibv_ah *ibv_create_ah_from_wc(struct ibv_pd *pd, struct ibv_wc *wc,
					       struct ibv_grh *grh, uint8_t port)
{
	struct ibv_ah_attr a;

	if (ibv_init_ah_from_wc(pd->context, port, wc, grh, &a))
		return NULL;
	return ibv_create_ah(pd, &a);
}

/* ---- completion channels and the notifier --------------------------------------------- */

struct gv_channel {
	struct ibv_comp_channel ch;
	int wr; /* pipe's write end; ch.fd is the read end */
};

static pthread_mutex_t nt_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t nt_cond = PTHREAD_COND_INITIALIZER;
static struct gv_cq **nt_cqs; /* CQs that have a channel */
static unsigned nt_n, nt_cap;
static int nt_armed; /* CQs armed now */
static bool nt_running;
static pthread_t nt_thr;

static void *notifier(void *arg)
{
	unsigned pause_us = 20;

	pthread_mutex_lock(&nt_lock);
	for (;;) {
		int fired = 0;

		while (nt_running && nt_armed == 0) {
			pause_us = 20;
			pthread_cond_wait(&nt_cond, &nt_lock);
		}
		if (!nt_running)
			break;
		for (unsigned i = 0; i < nt_n; i++) {
			struct gv_cq *cq = nt_cqs[i];
			int hit = 0;

			if (!atomic_load(&cq->armed))
				continue;
			if (pthread_mutex_trylock(&cq->lock))
				continue; /* being polled: look again next round */
			hit = gv_cq_peek(cq);
			pthread_mutex_unlock(&cq->lock);
			if (hit && atomic_exchange(&cq->armed, 0)) {
				struct gv_channel *ch = (struct gv_channel *)(void *)cq->cqx.channel;
				struct ibv_cq *p = (struct ibv_cq *)(void *)&cq->cqx;

				nt_armed--;
				if (write(ch->wr, &p, sizeof(p)) != sizeof(p))
					GDAK_WARN("cq", 0, "completion channel pipe full");
				fired = 1;
			}
		}
		if (fired) {
			pause_us = 20;
			continue;
		}
		pthread_mutex_unlock(&nt_lock);
		{
			struct timespec ts = { 0, (long)pause_us * 1000 };

			nanosleep(&ts, NULL);
		}
		if (pause_us < 1000)
			pause_us *= 2;
		pthread_mutex_lock(&nt_lock);
	}
	pthread_mutex_unlock(&nt_lock);
	return NULL;
}

static int nt_add(struct gv_cq *cq)
{
	int ret = 0;

	pthread_mutex_lock(&nt_lock);
	if (nt_n == nt_cap) {
		unsigned cap = nt_cap ? 2 * nt_cap : 16;
		void *n = realloc(nt_cqs, cap * sizeof(*nt_cqs));

		if (!n) {
			ret = ENOMEM;
			goto out;
		}
		nt_cqs = n;
		nt_cap = cap;
	}
	nt_cqs[nt_n++] = cq;
	if (!nt_running) {
		nt_running = true;
		ret = pthread_create(&nt_thr, NULL, notifier, NULL);
		if (ret) {
			nt_running = false;
			nt_n--;
		}
	}
out:
	pthread_mutex_unlock(&nt_lock);
	return ret;
}

static void nt_del(struct gv_cq *cq)
{
	pthread_mutex_lock(&nt_lock);
	for (unsigned i = 0; i < nt_n; i++) {
		if (nt_cqs[i] == cq) {
			nt_cqs[i] = nt_cqs[--nt_n];
			if (atomic_exchange(&cq->armed, 0))
				nt_armed--;
			break;
		}
	}
	pthread_mutex_unlock(&nt_lock);
}

GV_EXPORT struct ibv_comp_channel *ibv_create_comp_channel(struct ibv_context *ctx)
{
	struct gv_channel *c = calloc(1, sizeof(*c));
	int p[2];

	if (!c) {
		errno = ENOMEM;
		return NULL;
	}
	if (pipe2(p, O_CLOEXEC)) {
		free(c);
		return NULL;
	}
	c->ch.context = ctx;
	c->ch.fd = p[0];
	c->ch.refcnt = 0;
	c->wr = p[1];
	return &c->ch;
}

GV_EXPORT int ibv_destroy_comp_channel(struct ibv_comp_channel *ch)
{
	struct gv_channel *c = (struct gv_channel *)(void *)ch;

	if (ch->refcnt)
		return EBUSY;
	close(ch->fd);
	close(c->wr);
	free(c);
	return 0;
}

GV_EXPORT int ibv_get_cq_event(struct ibv_comp_channel *ch, struct ibv_cq **cq, void **cq_context)
{
	struct ibv_cq *p;

	if (read(ch->fd, &p, sizeof(p)) != sizeof(p))
		return -1;
	*cq = p;
	*cq_context = p->cq_context;
	return 0;
}

GV_EXPORT void ibv_ack_cq_events(struct ibv_cq *cq, unsigned int nevents)
{
	pthread_mutex_lock(&cq->mutex);
	cq->comp_events_completed += nevents;
	pthread_cond_signal(&cq->cond);
	pthread_mutex_unlock(&cq->mutex);
}

static int req_notify_cq(struct ibv_cq *bcq, int solicited_only)
{
	struct gv_cq *cq = gv_cq_of(bcq);

	if (!bcq->channel)
		return 0; /* armed, with nowhere to deliver: as libmlx5 */
	pthread_mutex_lock(&nt_lock);
	if (!atomic_exchange(&cq->armed, solicited_only ? 2 : 1))
		nt_armed++;
	pthread_cond_signal(&nt_cond);
	pthread_mutex_unlock(&nt_lock);
	return 0;
}

/* ---- CQ ------------------------------------------------------------------------------------ */

int gv_cq_attach(struct gv_cq *cq, struct gv_wq *wq)
{
	int ret = 0;

	pthread_mutex_lock(&cq->lock);
	if (cq->nwq == cq->cap) {
		unsigned cap = cq->cap ? 2 * cq->cap : 8;
		void *n = realloc(cq->wq, cap * sizeof(*cq->wq));

		if (!n) {
			ret = ENOMEM;
			goto out;
		}
		cq->wq = n;
		cq->cap = cap;
	}
	cq->wq[cq->nwq++] = wq;
out:
	pthread_mutex_unlock(&cq->lock);
	return ret;
}

void gv_cq_detach(struct gv_cq *cq, struct gv_wq *wq)
{
	pthread_mutex_lock(&cq->lock);
	for (unsigned i = 0; i < cq->nwq; i++) {
		if (cq->wq[i] == wq) {
			memmove(&cq->wq[i], &cq->wq[i + 1], (cq->nwq - i - 1) * sizeof(*cq->wq));
			cq->nwq--;
			break;
		}
	}
	if (cq->next >= cq->nwq)
		cq->next = 0;
	pthread_mutex_unlock(&cq->lock);
}

/* A program spinning on an empty CQ competes for the CPU with the NIC
 * thread that would fill it (a ConnectX needs no CPU), and with the peer
 * process on the same CPUs: after a run of empty polls, give the
 * processor away on each one.  A poll that ran the engine (a system call
 * on the device's socket, passes) counts as many: the run is about as
 * long in time as the cheap polls' was. */
static void cq_empty(struct gv_cq *cq, bool ran)
{
	if (atomic_fetch_add_explicit(&cq->empty_polls, ran ? 16 : 1, memory_order_relaxed) > 64)
		sched_yield();
}

int gv_poll_cq(struct ibv_cq *bcq, int n, struct ibv_wc *wc)
{
	struct gv_cq *cq = gv_cq_of(bcq);
	bool ran = false;
	int got = 0;

	if (n <= 0)
		return 0;
	pthread_mutex_lock(&cq->lock);
	while (got < n && gv_cq_poll1(cq, &wc[got]) > 0)
		got++;
	pthread_mutex_unlock(&cq->lock);
	/* empty: run the engine here (gv_cq_progress), then look again */
	if (!got && gv_inline() && gv_cq_progress(cq)) {
		ran = true;
		pthread_mutex_lock(&cq->lock);
		while (got < n && gv_cq_poll1(cq, &wc[got]) > 0)
			got++;
		pthread_mutex_unlock(&cq->lock);
	}
	if (got)
		atomic_store_explicit(&cq->empty_polls, 0, memory_order_relaxed);
	else
		cq_empty(cq, ran);
	return got;
}

/* ibv_cq_ex: start_poll takes the lock, end_poll drops it (as libmlx5) */
static int cqx_start(struct ibv_cq_ex *x, struct ibv_poll_cq_attr *attr)
{
	struct gv_cq *cq = gv_container_of(x, struct gv_cq, cqx);
	bool ran = false;
	int got = 0;

	pthread_mutex_lock(&cq->lock);
	got = gv_cq_poll1(cq, &cq->cur) > 0;
	if (!got && gv_inline()) {
		pthread_mutex_unlock(&cq->lock);
		ran = gv_cq_progress(cq) != 0;
		pthread_mutex_lock(&cq->lock);
		got = gv_cq_poll1(cq, &cq->cur) > 0;
	}
	if (!got) {
		pthread_mutex_unlock(&cq->lock);
		cq_empty(cq, ran);
		return ENOENT;
	}
	atomic_store_explicit(&cq->empty_polls, 0, memory_order_relaxed);
	x->status = cq->cur.status;
	x->wr_id = cq->cur.wr_id;
	return 0;
}

static int cqx_next(struct ibv_cq_ex *x)
{
	struct gv_cq *cq = gv_container_of(x, struct gv_cq, cqx);

	if (gv_cq_poll1(cq, &cq->cur) > 0) {
		x->status = cq->cur.status;
		x->wr_id = cq->cur.wr_id;
		return 0;
	}
	return ENOENT;
}

static void cqx_end(struct ibv_cq_ex *x)
{
	struct gv_cq *cq = gv_container_of(x, struct gv_cq, cqx);

	pthread_mutex_unlock(&cq->lock);
}

#define CUR(x) (&gv_container_of(x, struct gv_cq, cqx)->cur)
static enum ibv_wc_opcode cqx_opcode(struct ibv_cq_ex *x)
{
	return CUR(x)->opcode;
}
static uint32_t cqx_vendor_err(struct ibv_cq_ex *x)
{
	return CUR(x)->vendor_err;
}
static uint32_t cqx_byte_len(struct ibv_cq_ex *x)
{
	return CUR(x)->byte_len;
}
static __be32 cqx_imm(struct ibv_cq_ex *x)
{
	return CUR(x)->imm_data;
}
static uint32_t cqx_qp_num(struct ibv_cq_ex *x)
{
	return CUR(x)->qp_num;
}
static uint32_t cqx_src_qp(struct ibv_cq_ex *x)
{
	return CUR(x)->src_qp;
}
static unsigned int cqx_wc_flags(struct ibv_cq_ex *x)
{
	return CUR(x)->wc_flags;
}
static uint32_t cqx_slid(struct ibv_cq_ex *x)
{
	return CUR(x)->slid;
}
static uint8_t cqx_sl(struct ibv_cq_ex *x)
{
	return CUR(x)->sl;
}
static uint8_t cqx_dlid_path_bits(struct ibv_cq_ex *x)
{
	return CUR(x)->dlid_path_bits;
}
/* The NIC model does not stamp its CQEs: the time the entry is read, on
 * the clock query_rt_values reports, is the closest there is. */
static uint64_t cqx_ts(struct ibv_cq_ex *x)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
#undef CUR

/* The CQ's ring: n CQEs, initialised as libmlx5 does (opcode INVALID, owner
 * 0), the record pair on a line of its own, and the NIC-model CQ on it. */
static int ring_new(struct gv_cq *cq, struct gdak_ctx *g, uint32_t n, unsigned nm_flags)
{
	struct nm_ext_cq_attr a;
	struct mlx5_cqe64 *e;
	int ret;

	cq->buf = aligned_alloc(4096, ((size_t)n * 64 + 4095) & ~(size_t)4095);
	cq->dbrec = aligned_alloc(64, 64);
	if (!cq->buf || !cq->dbrec) {
		free(cq->buf);
		free(cq->dbrec);
		return ENOMEM;
	}
	e = cq->buf;
	memset(e, 0, (size_t)n * 64);
	for (uint32_t i = 0; i < n; i++)
		e[i].op_own = GDAK_MLX5_CQE_INVALID_OP_OWN;
	memset(cq->dbrec, 0, 64);
	memset(&a, 0, sizeof(a));
	a.buf = cq->buf;
	a.ncqe = n;
	a.cqe_size = 64;
	a.dbrec = cq->dbrec;
	a.flags = nm_flags;
	ret = nm_ext_cq_create(g, &a, &cq->ncq);
	if (ret) {
		free(cq->buf);
		free(cq->dbrec);
		return -ret;
	}
	memset(&cq->ring, 0, sizeof(cq->ring));
	cq->ring.version = GDAK_DEV_ABI_VERSION;
	cq->ring.cqn = nm_ext_cq_num(cq->ncq);
	cq->ring.ncqe = n;
	cq->ring.log_ncqe = (uint32_t)__builtin_ctz(n);
	cq->ring.cqes = cq->buf;
	cq->ring.dbrec = cq->dbrec;
	cq->ring.flags = nm_flags & NM_EXT_CQ_OI ? GDAK_DEV_CQ_F_OVERRUN_IGNORE : 0;
	return 0;
}

static void ring_free(struct gv_cq *cq)
{
	int ret = nm_ext_cq_destroy(cq->ncq);

	if (ret) {
		/* a QP of it is still alive in the NIC model: its memory must stay */
		GDAK_WARN("cq", cq->ring.cqn, "destroy: %s; its ring is left allocated",
			  gdak_strerror(ret));
		return;
	}
	free(cq->buf);
	free(cq->dbrec);
}

static struct gv_cq *cq_new(struct ibv_context *ctx, int cqe, void *cq_context,
			    struct ibv_comp_channel *channel, unsigned nm_flags)
{
	struct gv_cq *cq;
	struct ibv_cq *b;

	if (cqe < 1 || cqe > GV_MAX_CQE) {
		errno = EINVAL;
		return NULL;
	}
	cq = calloc(1, sizeof(*cq));
	if (!cq) {
		errno = ENOMEM;
		return NULL;
	}
	pthread_mutex_init(&cq->lock, NULL);
	b = (struct ibv_cq *)(void *)&cq->cqx;
	b->context = ctx;
	b->channel = channel;
	b->cq_context = cq_context;
	b->handle = __atomic_fetch_add(&handles, 1, __ATOMIC_RELAXED);
	/* libmlx5 rounds up to a power of two, less one */
	{
		uint32_t n = 1;
		int ret;

		while (n < (uint32_t)cqe + 1)
			n <<= 1;
		b->cqe = (int)(n - 1);
		ret = ring_new(cq, gv_ctx(ctx)->dev->g, n, nm_flags);
		if (ret) {
			free(cq);
			errno = ret;
			return NULL;
		}
	}
	pthread_mutex_init(&b->mutex, NULL);
	pthread_cond_init(&b->cond, NULL);
	cq->cqx.start_poll = cqx_start;
	cq->cqx.next_poll = cqx_next;
	cq->cqx.end_poll = cqx_end;
	cq->cqx.read_opcode = cqx_opcode;
	cq->cqx.read_vendor_err = cqx_vendor_err;
	cq->cqx.read_byte_len = cqx_byte_len;
	cq->cqx.read_imm_data = cqx_imm;
	cq->cqx.read_qp_num = cqx_qp_num;
	cq->cqx.read_src_qp = cqx_src_qp;
	cq->cqx.read_wc_flags = cqx_wc_flags;
	cq->cqx.read_slid = cqx_slid;
	cq->cqx.read_sl = cqx_sl;
	cq->cqx.read_dlid_path_bits = cqx_dlid_path_bits;
	cq->cqx.read_completion_ts = cqx_ts;
	cq->cqx.read_completion_wallclock_ns = cqx_ts;
	if (channel) {
		int ret = nt_add(cq);

		if (ret) {
			ring_free(cq);
			free(cq);
			errno = ret;
			return NULL;
		}
		channel->refcnt++;
	}
	return cq;
}

GV_EXPORT struct ibv_cq *ibv_create_cq(struct ibv_context *ctx, int cqe, void *cq_context,
				       struct ibv_comp_channel *channel, int comp_vector)
{
	struct gv_cq *cq;

	if (comp_vector < 0 || comp_vector >= ctx->num_comp_vectors) {
		errno = EINVAL;
		return NULL;
	}
	cq = cq_new(ctx, cqe, cq_context, channel, 0);
	return cq ? (struct ibv_cq *)(void *)&cq->cqx : NULL;
}

static struct ibv_cq_ex *create_cq_ex(struct ibv_context *ctx, struct ibv_cq_init_attr_ex *a)
{
	const uint64_t wc_known = IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_IMM |
				  IBV_WC_EX_WITH_QP_NUM | IBV_WC_EX_WITH_SRC_QP |
				  IBV_WC_EX_WITH_SLID | IBV_WC_EX_WITH_SL |
				  IBV_WC_EX_WITH_DLID_PATH_BITS |
				  IBV_WC_EX_WITH_COMPLETION_TIMESTAMP |
				  IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK;
	struct gv_cq *cq;

	if (!a ||
	    (a->comp_mask & ~(uint32_t)(IBV_CQ_INIT_ATTR_MASK_FLAGS | IBV_CQ_INIT_ATTR_MASK_PD))) {
		errno = EINVAL;
		return NULL;
	}
	if (a->wc_flags & ~wc_known) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (a->comp_vector >= (uint32_t)ctx->num_comp_vectors) {
		errno = EINVAL;
		return NULL;
	}
	if ((a->comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS) &&
	    (a->flags &
	     ~(uint32_t)(IBV_CREATE_CQ_ATTR_SINGLE_THREADED | IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN))) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	/* ignore-overrun is the PRM's oi: the NIC never reads the record */
	cq = cq_new(ctx, (int)a->cqe, a->cq_context, a->channel,
		    (a->comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS) &&
				    (a->flags & IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN)
			    ? NM_EXT_CQ_OI
			    : 0);
	return cq ? &cq->cqx : NULL;
}

GV_EXPORT int ibv_destroy_cq(struct ibv_cq *bcq)
{
	struct gv_cq *cq = gv_cq_of(bcq);

	pthread_mutex_lock(&cq->lock);
	if (cq->nwq) {
		pthread_mutex_unlock(&cq->lock);
		return EBUSY;
	}
	pthread_mutex_unlock(&cq->lock);
	if (bcq->channel) {
		nt_del(cq);
		bcq->channel->refcnt--;
	}
	ring_free(cq);
	free(cq->wq);
	free(cq);
	return 0;
}

GV_EXPORT int ibv_resize_cq(struct ibv_cq *bcq, int cqe)
{
	struct gv_cq *cq = gv_cq_of(bcq);

	if (cqe < 1 || cqe > GV_MAX_CQE)
		return EINVAL;
	/* the ring stays: a size it holds is reported; a larger one would
	 * need a ring swap with CQEs in flight, which gdak does not do */
	if ((uint32_t)cqe >= cq->ring.ncqe) {
		GDAK_ERR("cq", cq->ring.cqn,
			 "resize_cq to %d entries: the ring holds %u; "
			 "create the CQ with the size needed",
			 cqe, cq->ring.ncqe - 1);
		return EOPNOTSUPP;
	}
	bcq->cqe = cqe;
	return 0;
}

/* ---- thread and parent domains ------------------------------------------------------------ */

/* A thread domain promises that one thread posts to the QPs created in it;
 * libmlx5 then gives them a BlueFlame register of their own.  Every QP of
 * this library has its own register page already, so a TD is a token and a
 * parent domain a PD that names its TD. */
static struct ibv_td *alloc_td(struct ibv_context *ctx, struct ibv_td_init_attr *a)
{
	struct ibv_td *td;

	if (!a || a->comp_mask) {
		errno = EINVAL;
		return NULL;
	}
	td = calloc(1, sizeof(*td));
	if (!td) {
		errno = ENOMEM;
		return NULL;
	}
	td->context = ctx;
	return td;
}

static int dealloc_td(struct ibv_td *td)
{
	free(td);
	return 0;
}

static struct ibv_pd *alloc_parent_domain(struct ibv_context *ctx,
					  struct ibv_parent_domain_init_attr *a)
{
	struct ibv_pd *pd;

	if (!a || !a->pd ||
	    (a->comp_mask & ~(uint32_t)(IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS |
					IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT))) {
		errno = EINVAL;
		return NULL;
	}
	if (a->comp_mask & IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS) {
		/* the rings come from this library's allocator, not the program's */
		errno = EOPNOTSUPP;
		return NULL;
	}
	pd = calloc(1, sizeof(*pd));
	if (!pd) {
		errno = ENOMEM;
		return NULL;
	}
	pd->context = ctx;
	pd->handle = a->pd->handle; /* the same protection domain (same pdn) */
	return pd;
}

/* ---- the ops tables --------------------------------------------------------------------------- */

void gv_ops_init(struct gv_context *c)
{
	struct verbs_context *v = &c->vctx;
	struct ibv_context_ops *o = &v->context.ops;

	o->poll_cq = gv_poll_cq;
	o->req_notify_cq = req_notify_cq;
	o->post_send = gv_post_send;
	o->post_recv = gv_post_recv;
	o->post_srq_recv = gv_post_srq_recv;
	v->query_port = gv_query_port;
	v->query_device_ex = gv_query_device_ex;
	v->query_rt_values = gv_query_rt_values;
	v->advise_mr = advise_mr;
	v->create_cq_ex = create_cq_ex;
	v->create_qp_ex = gv_create_qp_ex;
	v->alloc_td = alloc_td;
	v->dealloc_td = dealloc_td;
	v->alloc_parent_domain = alloc_parent_domain;
}

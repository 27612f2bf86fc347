/* SPDX-License-Identifier: MIT */
/*
 * nm_ext.c - CQs as objects of their own and QPs on rings the device
 * allocated (nm_ext.h): argument checks, the memory-kind decision, the
 * external-CQ registry and CQ numbers.  The QP itself is built by
 * nm_qp.c (nm_qp_create_ext); CQEs go through nm_comp.c under the CQ's
 * producer lock.
 */
#define _GNU_SOURCE /* process_vm_readv */
#include <errno.h>
#include <stdlib.h>
#include <sys/uio.h>
#include <unistd.h>

#include <ev.h>

#include "nm_ext.h"
#include "nm_loc.h"
#include "nm_rand.h"

static pthread_mutex_t ext_lock = PTHREAD_MUTEX_INITIALIZER;
static struct nm_cq *ext_head;

static int is_pow2(uint32_t v)
{
	return v && !(v & (v - 1));
}

static int is_emu(struct gdak_ctx *ctx)
{
	return ctx && ctx->ops == &gdak_nm_backend_ops;
}

/* 1 when the CPU can load every page of [addr, addr + len), 0 when some
 * page faults, -1 when the kernel does not say (no process_vm_readv). */
static int cpu_readable(const void *addr, size_t len)
{
	enum {
		BATCH = 64
	};
	uintptr_t p = (uintptr_t)addr & ~(uintptr_t)4095, end = (uintptr_t)addr + (len ? len : 1);
	char sink[BATCH];
	struct iovec lv = { sink, 0 }, rv[BATCH];

	while (p < end) {
		unsigned n = 0;
		ssize_t got;

		for (; n < BATCH && p < end; n++, p += 4096) {
			rv[n].iov_base = (void *)(p < (uintptr_t)addr ? (uintptr_t)addr : p);
			rv[n].iov_len = 1;
		}
		lv.iov_len = n;
		got = process_vm_readv(getpid(), &lv, 1, rv, n, 0);
		if (got < 0)
			return errno == EFAULT ? 0 : -1;
		if ((size_t)got != n)
			return 0;
	}
	return 1;
}

int nm_ext_ring_kind(struct gdak_ctx *ctx, const void *addr, size_t len, const char *what)
{
	enum gdak_mem_kind k = nm_mem_kind_of(ctx, addr);

	if (k != GDAK_MEM_GPU) {
		/* the memory engine says host memory, but only the CUDA engine can
		 * tell GPU memory apart (GDAK_CUDA_DMA=0, or a driver that does
		 * not know the pointer): memory the CPU cannot load would fault
		 * on the NIC's first ring read, so it is refused here */
		if (!cpu_readable(addr, len)) {
			GDAK_ERR("ctx", ctx->id,
				 "%s at %p (+%zu): the CPU cannot read it and the NIC model "
				 "does not know it as GPU memory (%s)",
				 what, addr, len,
				 nm_rg_available() ? "not CUDA memory of this process"
						   : "no CUDA memory engine: no GPU / "
						     "libcuda.so.1, or GDAK_CUDA_DMA=0");
			return -ENOTSUP;
		}
		return 0;
	}
	if (!nm_rg_available()) {
		/* the data path reads rings with plain loads; GPU memory needs the
		 * GPU-memory ring engine's driver calls (nm_ring_gpu.c) */
		GDAK_ERR("ctx", ctx->id,
			 "%s at %p is GPU memory, and the emulated NIC has no CUDA memory "
			 "engine to reach it (no GPU / libcuda.so.1, or GDAK_CUDA_DMA=0)",
			 what, addr);
		return -ENOTSUP;
	}
	return 1;
}

struct nm_cq *nm_ext_cq_lookup(uint32_t cqn)
{
	struct nm_cq *cq;

	pthread_mutex_lock(&ext_lock);
	for (cq = ext_head; cq && cq->cqn != cqn; cq = cq->next)
		;
	pthread_mutex_unlock(&ext_lock);
	return cq;
}

/* caller holds ext_lock */
static int cqn_used_locked(uint32_t cqn)
{
	for (struct nm_cq *cq = ext_head; cq; cq = cq->next)
		if (cq->cqn == cqn)
			return 1;
	return 0;
}

int nm_ext_cqn_used(uint32_t cqn)
{
	int used;

	pthread_mutex_lock(&ext_lock);
	used = cqn_used_locked(cqn);
	pthread_mutex_unlock(&ext_lock);
	return used;
}

int nm_ext_cq_create(struct gdak_ctx *ctx, const struct nm_ext_cq_attr *a, struct nm_cq **out)
{
	struct nm_cq *cq;
	int buf_gpu, rec_gpu;

	if (out)
		*out = NULL;
	if (!is_emu(ctx) || !a || !out) {
		GDAK_ERR(NULL, 0, "nm_ext_cq_create: %s",
			 !is_emu(ctx) ? "not an emu context" : "NULL argument");
		return -EINVAL;
	}
	if (a->cqe_size == 128) {
		GDAK_ERR("ctx", ctx->id,
			 "128-byte CQEs are not supported by the emulated NIC "
			 "(create the CQ with 64-byte CQEs)");
		return -ENOTSUP;
	}
	if (a->cqe_size != 64 || !is_pow2(a->ncqe) || a->ncqe < 2 || a->ncqe > (1u << 22) ||
	    !a->buf || ((uintptr_t)a->buf & 63) || !a->dbrec || ((uintptr_t)a->dbrec & 7) ||
	    (a->flags & ~(unsigned)(NM_EXT_CQ_OI | NM_EXT_CQ_CC))) {
		GDAK_ERR("ctx", ctx->id,
			 "bad CQ: buf %p (64-byte aligned), %u entries (power of two, 2..4M), "
			 "CQE size %u (64), record %p (8-byte aligned), flags 0x%x",
			 a->buf, a->ncqe, a->cqe_size, (void *)a->dbrec, a->flags);
		return -EINVAL;
	}
	buf_gpu = nm_ext_ring_kind(ctx, a->buf, (size_t)a->ncqe * 64, "CQ buffer");
	if (buf_gpu < 0)
		return buf_gpu;
	rec_gpu = nm_ext_ring_kind(ctx, a->dbrec, 8, "CQ doorbell record");
	if (rec_gpu < 0)
		return rec_gpu;
	cq = calloc(1, sizeof(*cq));
	if (!cq)
		return -ENOMEM;
	cq->cqes = a->buf;
	cq->dbrec = a->dbrec;
	cq->arm_dbrec = a->dbrec + 1;
	cq->arm_db = a->arm_db;
	cq->ncqe = a->ncqe;
	cq->flags = (a->flags & NM_EXT_CQ_OI ? NM_CQ_OI : 0) |
		    (a->flags & NM_EXT_CQ_CC ? NM_CQ_CC : 0);
	cq->ext = true;
	cq->ctx = nm_ctx_of(ctx);
	{
		int ret = nm_rg_cq_ext(cq, buf_gpu, rec_gpu);

		if (ret) {
			free(cq);
			return ret;
		}
	}
	pthread_spin_init(&cq->lock, PTHREAD_PROCESS_PRIVATE);
	/* 24-bit CQ numbers: the embedded CQs take 2*QPN and 2*QPN+1, which
	 * may be any value, so a candidate is checked against both kinds */
	pthread_mutex_lock(&ext_lock);
	for (;;) {
		uint32_t cand = nm_rand_u64() & 0xffffff;

		if (cand && !cqn_used_locked(cand) && !nm_cq_lookup_own(cand)) {
			cq->cqn = cand;
			break;
		}
	}
	cq->next = ext_head;
	ext_head = cq;
	pthread_mutex_unlock(&ext_lock);
	GDAK_DBG("ctx", ctx->id, "CQ 0x%x: %u entries on device memory %p, record %p%s%s", cq->cqn,
		 cq->ncqe, a->buf, (void *)a->dbrec, cq->flags & NM_CQ_OI ? ", oi" : "",
		 cq->flags & NM_CQ_CC ? ", cc" : "");
	*out = cq;
	return 0;
}

int nm_ext_cq_destroy(struct nm_cq *cq)
{
	uint32_t users;

	if (!cq || !cq->ext)
		return -EINVAL;
	users = atomic_load(&cq->users);
	if (users) {
		GDAK_ERR("ctx", cq->ctx->base.id, "CQ 0x%x still has %u QP%s: destroy them first",
			 cq->cqn, users, users == 1 ? "" : "s");
		return -EBUSY;
	}
	pthread_mutex_lock(&ext_lock);
	for (struct nm_cq **p = &ext_head; *p; p = &(*p)->next) {
		if (*p == cq) {
			*p = cq->next;
			break;
		}
	}
	pthread_mutex_unlock(&ext_lock);
	/* a WAIT of some QP may have looked it up: let that pass end */
	nm_engine_sync();
	pthread_spin_destroy(&cq->lock);
	nm_rg_cq_fini(cq);
	free(cq);
	return 0;
}

uint32_t nm_ext_cq_num(const struct nm_cq *cq)
{
	return cq ? cq->cqn : 0;
}

struct nm_cq *nm_ext_cq_find(struct gdak_ctx *ctx, uint32_t cqn)
{
	struct nm_cq *cq = nm_ext_cq_lookup(cqn);

	return cq && &cq->ctx->base == ctx ? cq : NULL;
}

uint64_t nm_ext_cq_produced(const struct nm_cq *cq)
{
	return cq ? nm_cq_produced(cq) : 0;
}

uint32_t nm_ext_cq_users(const struct nm_cq *cq)
{
	return cq ? atomic_load(&((struct nm_cq *)(uintptr_t)cq)->users) : 0;
}

static int ring_ok(struct gdak_ctx *ctx, const void *p, size_t len, size_t align, const char *what)
{
	int ret;

	if (!p || ((uintptr_t)p & (align - 1))) {
		GDAK_ERR("ctx", ctx->id, "%s %p: missing or not %zu-byte aligned", what, p, align);
		return -EINVAL;
	}
	ret = nm_ext_ring_kind(ctx, p, len, what);
	return ret < 0 ? ret : 0;
}

int nm_ext_qp_create(struct gdak_ctx *ctx, const struct nm_ext_qp_attr *a, struct gdak_qp **out)
{
	struct gdak_qp_attr qa;
	int ret;

	if (out)
		*out = NULL;
	if (!is_emu(ctx) || !a || !out) {
		GDAK_ERR(NULL, 0, "nm_ext_qp_create: %s",
			 !is_emu(ctx) ? "not an emu context" : "NULL argument");
		return -EINVAL;
	}
	if (!is_pow2(a->sq_wqebb_cnt) || a->sq_wqebb_cnt < 4 || a->sq_wqebb_cnt > 32768 ||
	    (a->rq_wqe_cnt &&
	     (!is_pow2(a->rq_wqe_cnt) || a->rq_wqe_cnt > 32768 || !is_pow2(a->rq_stride) ||
	      a->rq_stride < 16 || a->rq_stride > 256)) ||
	    (a->flags & ~(unsigned)NM_EXT_QP_NO_DBREC) ||
	    (unsigned)a->handler >= GDAK_DEV_DB_HANDLER_COUNT ||
	    (a->sharing != GDAK_DEV_EXCLUSIVE && a->sharing != GDAK_DEV_SHARED) ||
	    (a->mtu && (a->mtu < 256 || a->mtu > 4096 || !is_pow2(a->mtu))) ||
	    a->type > GDAK_QPT_DCT ||
	    (a->type == GDAK_QPT_DCI &&
	     (!is_pow2(a->dci_streams) || a->dci_streams > GDAK_DCI_MAX_STREAMS))) {
		GDAK_ERR(
			"ctx", ctx->id,
			"bad QP: sq %u WQEBBs (power of two, 4..32768), rq %u x %u bytes (power "
			"of two <= 32768, stride 16..256), flags 0x%x, handler %d, mtu %u, type %u "
			"(%u DCI streams: power of two <= 16)",
			a->sq_wqebb_cnt, a->rq_wqe_cnt, a->rq_stride, a->flags, (int)a->handler,
			a->mtu, a->type, a->dci_streams);
		return -EINVAL;
	}
	if (!a->scq || !a->scq->ext || (a->rq_wqe_cnt && (!a->rcq || !a->rcq->ext))) {
		GDAK_ERR("ctx", ctx->id, "QP without its %s CQ (nm_ext_cq_create makes them)",
			 !a->scq || !a->scq->ext ? "send" : "receive");
		return -EINVAL;
	}
	if (&a->scq->ctx->base != ctx || (a->rq_wqe_cnt && &a->rcq->ctx->base != ctx)) {
		GDAK_ERR("ctx", ctx->id, "QP on a CQ of another context");
		return -EINVAL;
	}
	ret = ring_ok(ctx, a->sq, (size_t)a->sq_wqebb_cnt * 64, 64, "send queue");
	if (!ret && a->rq_wqe_cnt)
		ret = ring_ok(ctx, a->rq, (size_t)a->rq_wqe_cnt * a->rq_stride, 16,
			      "receive queue");
	if (!ret)
		ret = ring_ok(ctx, a->dbrec, 8, 8, "QP doorbell record");
	if (!ret && a->uar) {
		ret = ring_ok(ctx, a->uar, GDAK_MLX5_UAR_PAGE, 4096, "doorbell (UAR) page");
		if (!ret && nm_mem_kind_of(ctx, a->uar) == GDAK_MEM_GPU) {
			/* the register is what the NIC polls: it stays host memory */
			GDAK_ERR("ctx", ctx->id,
				 "doorbell (UAR) page %p is GPU memory: it must be host memory "
				 "(the NIC model polls it)",
				 a->uar);
			ret = -ENOTSUP;
		}
	}
	if (ret)
		return ret;

	memset(&qa, 0, sizeof(qa));
	qa.sq_depth = a->sq_wqebb_cnt;
	qa.cq_depth = a->scq->ncqe;
	qa.rq_depth = a->rq_wqe_cnt;
	qa.rcq_depth = a->rq_wqe_cnt ? a->rcq->ncqe : 0;
	qa.rq_max_sge = a->rq_wqe_cnt ? a->rq_stride / 16 : 1;
	qa.handler = a->handler;
	qa.sharing = a->sharing;
	qa.mtu = a->mtu ? a->mtu : 1024;
	qa.nic_thread = a->nic_thread;
	qa.type = a->type;
	qa.dci_streams = a->type == GDAK_QPT_DCI ? a->dci_streams : 0;
	qa.dc_key = a->type == GDAK_QPT_DCT ? a->dc_key : 0;
	qa.flags = (a->flags & NM_EXT_QP_NO_DBREC ? GDAK_QP_F_SQ_NO_DBREC : 0) |
		   (a->scq->flags & NM_CQ_OI ? GDAK_QP_F_SCQ_OVERRUN_IGNORE : 0) |
		   (a->scq->flags & NM_CQ_CC ? GDAK_QP_F_SCQ_COLLAPSED : 0);
	if (a->rq_wqe_cnt)
		qa.flags |= (a->rcq->flags & NM_CQ_OI ? GDAK_QP_F_RCQ_OVERRUN_IGNORE : 0) |
			    (a->rcq->flags & NM_CQ_CC ? GDAK_QP_F_RCQ_COLLAPSED : 0);
	return nm_qp_create_ext(ctx, &qa, a, out);
}

int nm_ext_qp_doorbell_any(struct gdak_qp *bqp)
{
	if (!bqp || !is_emu(bqp->ctx))
		return -EINVAL;
	atomic_store(&nm_qp_of(bqp)->db_any, true);
	/* the program rings in memory now, without a kick: poll it again */
	atomic_store(&nm_qp_of(bqp)->db_notify, false);
	nm_thread_kick(nm_qp_of(bqp));
	return 0;
}

struct nm_ext_watch {
	ev_io io;
	struct nm_thread *thr;
	void (*cb)(void *arg);
	void *arg;
};

static void watch_cb(struct ev_loop *loop, ev_io *io, int revents)
{
	struct nm_ext_watch *w = nm_container_of(io, struct nm_ext_watch, io);

	w->cb(w->arg);
}

static void watch_start(void *arg)
{
	struct nm_ext_watch *w = arg;

	ev_io_start(nm_thread_loop(w->thr), &w->io);
}

static void watch_stop(void *arg)
{
	struct nm_ext_watch *w = arg;

	ev_io_stop(nm_thread_loop(w->thr), &w->io);
}

int nm_ext_watch_fd(struct gdak_ctx *ctx, int fd, void (*cb)(void *arg), void *arg,
		    struct nm_ext_watch **out)
{
	struct nm_ext_watch *w;

	if (!ctx || !is_emu(ctx) || fd < 0 || !cb || !out || !nm_engine_nthreads())
		return -EINVAL;
	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->thr = nm_engine_pick(0);
	w->cb = cb;
	w->arg = arg;
	ev_io_init(&w->io, watch_cb, fd, EV_READ);
	nm_thread_call(w->thr, watch_start, w);
	*out = w;
	return 0;
}

void nm_ext_unwatch_fd(struct nm_ext_watch *w)
{
	if (!w)
		return;
	nm_thread_call(w->thr, watch_stop, w);
	free(w);
}

int nm_ext_watch_inline(struct nm_ext_watch *w)
{
	if (!w)
		return 0;
	return nm_thread_try_inline(w->thr, NULL, w->cb, w->arg);
}

int nm_ext_qp_post_inline(struct gdak_qp *bqp)
{
	struct nm_qp *qp;

	if (!bqp || !is_emu(bqp->ctx))
		return 0;
	qp = nm_qp_of(bqp);
	return nm_thread_try_inline(qp->thr, qp, NULL, NULL);
}

int nm_ext_watch_hold(struct nm_ext_watch *w, int on)
{
	if (!w)
		return -EINVAL;
	nm_thread_hold(w->thr, on);
	return 0;
}

int nm_ext_watch_park(struct nm_ext_watch *w, int on)
{
	if (!w)
		return -EINVAL;
	return nm_thread_park(w->thr, on);
}

struct nm_thread *nm_ext_watch_thread(const struct nm_ext_watch *w)
{
	return w ? w->thr : NULL;
}

int nm_ext_qp_doorbell_notify(struct gdak_qp *bqp, int on)
{
	if (!bqp || !is_emu(bqp->ctx))
		return -EINVAL;
	atomic_store(&nm_qp_of(bqp)->db_notify, on != 0);
	if (!on)
		nm_thread_kick(nm_qp_of(bqp));
	return 0;
}

/* SPDX-License-Identifier: MIT */
/*
 * nm_qp.c - QP objects of the NIC model: the device-visible block (UAR
 * page, descriptor, doorbell records, SQ, send CQ, RQ, receive CQ), QPNs
 * and the process-wide QPN registry, the state machine's backend half,
 * export, error query, destroy.
 *
 * Device-visible block, one allocation of the HOST_MAPPED kind:
 *   +0      "UAR" page, 4 KiB; the doorbell/BlueFlame register at +0x800
 *   +4096   struct gdak_dev_qp (320 B)
 *   +4608   doorbell records, one 64-byte line each (the device writes
 *           them, the NIC reads them: no false sharing with the CQ record):
 *           QP dbrec[2], send-CQ dbrec, receive-CQ dbrec, proxy producer index,
 *           the scratch word (+4864, an 8-byte MR: put+signal's fetch lands there)
 *   +8192   SQ (sq * 64), send CQ (cq * 64), RQ (rq * stride),
 *           receive CQ (rcq * 64), per-slot WQEBB counts (sq bytes)
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include <gdak/trace_format.h>

#include "nm_dma.h"
#include "nm_ext.h"
#include "nm_loc.h"
#include "nm_rand.h"

/* ---- QPN registry ------------------------------------------------------- */

static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static struct nm_qp_list reg;

int nm_qp_list_reserve(struct nm_qp_list *l, uint32_t first)
{
	if (l->n == l->cap) {
		uint32_t cap = l->cap ? l->cap * 2 : first;
		struct nm_qp **n = realloc(l->v, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		l->v = n;
		l->cap = cap;
	}
	return 0;
}

void nm_qp_list_del(struct nm_qp_list *l, const struct nm_qp *qp)
{
	for (uint32_t i = 0; i < l->n; i++) {
		if (l->v[i] == qp) {
			l->v[i] = l->v[--l->n];
			break;
		}
	}
}

struct nm_qp *nm_qp_list_find(const struct nm_qp_list *l, uint32_t qpn)
{
	for (uint32_t i = 0; i < l->n; i++)
		if (l->v[i]->base.qpn == qpn)
			return l->v[i];
	return NULL;
}

static int reg_add(struct nm_qp *qp, uint32_t *qpn)
{
	pthread_mutex_lock(&reg_lock);
	if (nm_qp_list_reserve(&reg, 64)) {
		pthread_mutex_unlock(&reg_lock);
		return -ENOMEM;
	}
	/* 24-bit QPNs from a keyed permutation (nm_rand.c: a stranger cannot
	 * guess them, and none repeats before 2^24 QPs); 0 and 1 are reserved
	 * (IBA: QP0/QP1); a number still in use after a wrap is skipped */
	for (;;) {
		uint32_t cand = nm_rand_seq24(NM_RAND_QPN);

		if (cand >= 2 && !nm_qp_list_find(&reg, cand)) {
			*qpn = cand;
			break;
		}
	}
	qp->base.qpn = *qpn;
	reg.v[reg.n++] = qp;
	pthread_mutex_unlock(&reg_lock);
	return 0;
}

/* Remove qp (the loop transport forgets it as a peer in its qp_fini). */
static void reg_del(struct nm_qp *qp)
{
	pthread_mutex_lock(&reg_lock);
	nm_qp_list_del(&reg, qp);
	pthread_mutex_unlock(&reg_lock);
}

struct nm_cq *nm_cq_lookup_own(uint32_t cqn)
{
	struct nm_cq *cq = NULL;

	pthread_mutex_lock(&reg_lock);
	for (uint32_t i = 0; i < reg.n && !cq; i++) {
		if (!reg.v[i]->ext && reg.v[i]->own_scq.cqn == cqn)
			cq = &reg.v[i]->own_scq;
		else if (!reg.v[i]->ext && reg.v[i]->rq_cnt && reg.v[i]->own_rcq.cqn == cqn)
			cq = &reg.v[i]->own_rcq;
	}
	pthread_mutex_unlock(&reg_lock);
	return cq;
}

struct nm_cq *nm_cq_lookup(uint32_t cqn)
{
	struct nm_cq *cq = NULL;

	pthread_mutex_lock(&reg_lock);
	for (uint32_t i = 0; i < reg.n && !cq; i++) {
		if (reg.v[i]->scq->cqn == cqn)
			cq = reg.v[i]->scq;
		else if (reg.v[i]->rq_cnt && reg.v[i]->rcq->cqn == cqn)
			cq = reg.v[i]->rcq;
	}
	pthread_mutex_unlock(&reg_lock);
	/* an external CQ no QP uses (yet) is still a CQ a WAIT may name */
	return cq ? cq : nm_ext_cq_lookup(cqn);
}

struct nm_qp *nm_qp_lookup(uint32_t qpn)
{
	struct nm_qp *qp;

	pthread_mutex_lock(&reg_lock);
	qp = nm_qp_list_find(&reg, qpn);
	pthread_mutex_unlock(&reg_lock);
	return qp;
}

/* ---- QP trace records --------------------------------------------------------- */

/*
 * QP life-cycle records (created, connected, reset, destroyed).  The
 * control path has no trace buffer of its own, and a buffer must have one
 * writer at a time, so the record is written by the QP's NIC thread, in
 * its buffer: it then also lands in order with that QP's WQE and CQE
 * records.  One round trip per control call, and only while tracing.
 */
struct qp_rec {
	struct nm_qp *qp;
	uint32_t peer;
	char text[160];
};

static void qp_rec_on_thread(void *arg)
{
	struct qp_rec *r = arg;
	struct nm_qp *qp = r->qp;

	NM_TRACE(qp, gdak_trace_qp, qp->base.qpn, r->peer, qp->ctx->tr->name, r->text);
}

static void qp_rec(struct nm_qp *qp, uint32_t peer_qpn, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void qp_rec(struct nm_qp *qp, uint32_t peer_qpn, const char *fmt, ...)
{
	struct qp_rec r = {.qp = qp, .peer = peer_qpn};
	va_list ap;

	if (!atomic_load_explicit(&nm_cfg.trace, memory_order_relaxed) || !qp->thr)
		return;
	va_start(ap, fmt);
	vsnprintf(r.text, sizeof(r.text), fmt, ap);
	va_end(ap);
	nm_thread_call(qp->thr, qp_rec_on_thread, &r);
}

static const char *handler_name(int h)
{
	return h == GDAK_DEV_DB_BF ? "BF" : h == GDAK_DEV_DB_CPU_PROXY ? "CPU_PROXY" : "DB";
}

/* ---- layout ------------------------------------------------------------------ */

static uint32_t log2u(uint32_t v)
{
	uint32_t l = 0;
	while ((1u << l) < v)
		l++;
	return l;
}

static void cq_init(struct nm_cq *cq)
{
	for (uint32_t i = 0; i < cq->ncqe; i++) {
		memset(&cq->cqes[i], 0, sizeof(cq->cqes[i]));
		cq->cqes[i].op_own = GDAK_MLX5_CQE_INVALID_OP_OWN;
	}
	*cq->dbrec = 0;
	cq->pi = 0;
}

static void dev_cq_fill(struct gdak_dev_cq *d, const struct nm_cq *cq)
{
	memset(d, 0, sizeof(*d));
	d->version = GDAK_DEV_ABI_VERSION;
	d->cqn = cq->cqn;
	d->ncqe = cq->ncqe;
	d->log_ncqe = log2u(cq->ncqe);
	/* GPU-memory CQ: the device polls the GPU copy, the NIC the shadow */
	d->cqes = cq->rg && cq->rg->cqes ? (void *)cq->rg->cqes : (void *)cq->cqes;
	d->dbrec = cq->rg && cq->rg->dbrec ? cq->rg->dbrec : cq->dbrec;
	d->flags = (cq->flags & NM_CQ_OI ? GDAK_DEV_CQ_F_OVERRUN_IGNORE : 0) |
		   (cq->flags & NM_CQ_CC ? GDAK_DEV_CQ_F_COLLAPSED : 0);
}

static void dev_qp_fill(struct nm_qp *qp)
{
	struct gdak_dev_qp *d = qp->dqp;

	memset(d, 0, sizeof(*d));
	d->version = GDAK_DEV_ABI_VERSION;
	d->qpn = qp->base.qpn;
	d->qpn_ds_be = gdak_htobe32(gdak_mlx5_ctrl_w1(qp->base.qpn, 0));
	d->sq_wqebb_cnt = qp->sq_cnt;
	d->sq_log_cnt = log2u(qp->sq_cnt);
	d->handler = qp->handler;
	d->bf_log_half = NM_BF_LOG_HALF; /* halves at UAR + 0x800 and + 0x900 */
	d->sharing = qp->sharing;
	/* largest inline payload any inline-capable opcode can carry in 63 DS:
	 * ctrl + raddr + 4-byte inline header */
	d->max_inline = (GDAK_MLX5_MAX_DS - 2) * GDAK_MLX5_DS_BYTES - 4;
	d->sq_buf = nm_rg_dev_addr(qp, qp->sq);
	d->dbrec = nm_rg_dev_addr(qp, qp->dbrec);
	d->db_reg = (uint64_t *)(void *)(qp->uar + GDAK_MLX5_DB_OFFSET);
	d->proxy_pi = qp->proxy_pi;
	dev_cq_fill(&d->scq, qp->scq);
	if (qp->rq_cnt) {
		d->rq_buf = nm_rg_dev_addr(qp, qp->rq);
		d->rq_wqe_cnt = qp->rq_cnt;
		d->rq_log_stride = log2u(qp->rq_stride);
		dev_cq_fill(&d->rcq, qp->rcq);
	}
	d->sq_slot_bbs = (uint8_t *)qp->dmem + qp->dmem_len - qp->sq_cnt;
	/* put+signal's ATOMIC_FA returns the old signal value somewhere: a
	 * registered word of the QP's own block (hw_mlx5 does the same) */
	d->scratch_addr = (uint64_t)(uintptr_t)qp->scratch_mr->addr;
	d->scratch_lkey = qp->scratch_mr->lkey;
	d->wait_timeout_ns = 0; /* wait forever unless the user bounds it */
}

/* Zero the queues: a fresh QP, or one that went back to RESET. */
static void queues_reset(struct nm_qp *qp)
{
	/* the device's own rings, records and register page (nm_ext.h) are
	 * its to clear, as libmlx5 does on ConnectX */
	if (!qp->ext_uar) {
		memset(qp->uar, 0, GDAK_MLX5_UAR_PAGE);
	} else {
		/* ...but a register keeps no value on ConnectX (the UAR page
		 * is write-only): the first ring of the new life may carry the
		 * very bytes the last one of the old did (WQE 0 again), and
		 * only a change of what the stage polls shows a ring.  So the
		 * halves' ctrl words start from 0, which no ring writes (its
		 * QPN is there) */
		for (unsigned h = 0; h < 2; h++)
			__atomic_store_n((uint64_t *)(void *)(qp->uar + GDAK_MLX5_DB_OFFSET +
							      ((size_t)h << NM_BF_LOG_HALF)),
					 0, __ATOMIC_RELEASE);
	}
	*qp->proxy_pi = 0;
	if (!qp->ext) {
		qp->dbrec[0] = qp->dbrec[1] = 0;
		memset(qp->sq, 0, (size_t)qp->sq_cnt * 64);
		if (qp->rq_cnt)
			memset(qp->rq, 0, (size_t)qp->rq_cnt * qp->rq_stride);
		cq_init(qp->scq);
		if (qp->rq_cnt)
			cq_init(qp->rcq);
	}
	if (qp->rg)
		nm_rg_qp_reset(qp);
	qp->rq_ci = 0;
	nm_db_reset(qp);
	nm_req_reset(qp);
	pthread_mutex_lock(&qp->err_lock);
	memset(&qp->err, 0, sizeof(qp->err));
	qp->err_set = false;
	qp->viol_rule[0] = qp->viol_text[0] = 0;
	pthread_mutex_unlock(&qp->err_lock);
	dev_qp_fill(qp);
}

/*
 * One QP.  ext == NULL: every ring in the device-visible block (layout at
 * the top).  ext != NULL (nm_ext.h): SQ, RQ, records, CQs and maybe the
 * UAR page are the device's; the block holds the UAR page (unless given),
 * descriptor, proxy word, scratch word and the per-slot WQEBB counts.
 */
static int qp_create(struct nm_ctx *ctx, const struct gdak_qp_attr *a,
		     const struct nm_ext_qp_attr *ext, struct gdak_qp **out)
{
	struct gdak_ctx *bctx = &ctx->base;
	struct nm_qp *qp;
	size_t off, sq_b = 0, cq_b = 0, rq_b = 0, rcq_b = 0;
	uint32_t qpn;
	uint8_t *m;
	int ret;

	if ((a->flags & GDAK_QP_F_QUEUES_GPU) && (ext || !nm_rg_available())) {
		/* rings in GPU memory need the CUDA engine's driver calls
		 * (nm_ring_gpu.c); external rings say their kind themselves */
		GDAK_ERR("ctx", bctx->id, "GDAK_QP_F_QUEUES_GPU: %s",
			 ext ? "not a flag of external rings (their memory says it)"
			     : "rings in GPU memory need the CUDA memory engine (a GPU and "
			       "libcuda.so.1, GDAK_CUDA_DMA not 0)");
		return -ENOTSUP;
	}
	qp = aligned_alloc(64, (sizeof(*qp) + 63) & ~(size_t)63);
	if (!qp)
		return -ENOMEM;
	memset(qp, 0, sizeof(*qp));
	qp->ctx = ctx;
	qp->base.ctx = bctx;
	qp->base.attr = *a;
	qp->handler = (uint8_t)a->handler;
	qp->sharing = (uint8_t)a->sharing;
	pthread_spin_init(&qp->resp_lock, PTHREAD_PROCESS_PRIVATE);
	pthread_mutex_init(&qp->err_lock, NULL);

	qp->sq_cnt = a->sq_depth;
	qp->sq_mask = a->sq_depth - 1;
	qp->rq_cnt = a->rq_depth;
	qp->rq_max_sge = a->rq_depth ? a->rq_max_sge : 0;
	qp->rq_stride = 16 * (qp->rq_max_sge ? qp->rq_max_sge : 1);
	qp->no_dbrec = !!(a->flags & GDAK_QP_F_SQ_NO_DBREC);
	if (ext) {
		qp->ext = true;
		qp->ext_uar = ext->uar != NULL;
		qp->scq = ext->scq;
		qp->rcq = a->rq_depth ? ext->rcq : &qp->own_rcq;
	} else {
		qp->scq = &qp->own_scq;
		qp->rcq = &qp->own_rcq;
		qp->own_scq.ncqe = a->cq_depth;
		qp->own_rcq.ncqe = a->rq_depth ? a->rcq_depth : 0;
		qp->own_scq.flags = (a->flags & GDAK_QP_F_SCQ_OVERRUN_IGNORE ? NM_CQ_OI : 0) |
				    (a->flags & GDAK_QP_F_SCQ_COLLAPSED ? NM_CQ_CC : 0);
		qp->own_rcq.flags = (a->flags & GDAK_QP_F_RCQ_OVERRUN_IGNORE ? NM_CQ_OI : 0) |
				    (a->flags & GDAK_QP_F_RCQ_COLLAPSED ? NM_CQ_CC : 0);
		sq_b = (size_t)qp->sq_cnt * 64;
		cq_b = (size_t)qp->own_scq.ncqe * 64;
		if (qp->rq_cnt) {
			rq_b = (size_t)qp->rq_cnt * qp->rq_stride;
			rcq_b = (size_t)qp->own_rcq.ncqe * 64;
		}
	}
	qp->dmem_len = 8192 + sq_b + cq_b + rq_b + rcq_b + qp->sq_cnt;
	qp->dmem_kind = GDAK_MEM_HOST_MAPPED;
	ret = nm_dma_get()->alloc(qp->dmem_len, GDAK_MEM_HOST_MAPPED, &qp->dmem);
	if (ret)
		goto err_free;
	m = qp->dmem;
	memset(m, 0, qp->dmem_len);
	qp->uar = ext && ext->uar ? ext->uar : m;
	qp->dqp = (struct gdak_dev_qp *)(void *)(m + 4096);
	qp->dbrec = ext ? ext->dbrec : (uint32_t *)(void *)(m + 4608);
	qp->own_scq.dbrec = (uint32_t *)(void *)(m + 4608 + 64);
	qp->own_rcq.dbrec = (uint32_t *)(void *)(m + 4608 + 128);
	qp->proxy_pi = (uint64_t *)(void *)(m + 4608 + 192);
	ret = nm_mr_reg(&ctx->base, m + 4608 + 256, 8, GDAK_ACCESS_LOCAL_WRITE, &qp->scratch_mr);
	if (ret)
		goto err_dmem;
	off = 8192;
	if (ext) {
		qp->sq = ext->sq;
		qp->rq = qp->rq_cnt ? ext->rq : NULL;
	} else {
		qp->sq = m + off;
		off += sq_b;
		qp->own_scq.cqes = (struct mlx5_cqe64 *)(void *)(m + off);
		off += cq_b;
		if (qp->rq_cnt) {
			qp->rq = m + off;
			off += rq_b;
			qp->own_rcq.cqes = (struct mlx5_cqe64 *)(void *)(m + off);
			off += rcq_b;
		}
	}

	ret = nm_dc_qp_init(qp, a);
	if (ret)
		goto err_mr;
	/* rings in GPU memory: what the block holds becomes their host shadow */
	ret = ext ? nm_rg_qp_ext(qp) : (a->flags & GDAK_QP_F_QUEUES_GPU) ? nm_rg_qp_own(qp) : 0;
	if (ret)
		goto err_mr;
	ret = reg_add(qp, &qpn);
	if (ret)
		goto err_rg;
	qp->id = qpn;
	qp->own_scq.cqn = (qpn << 1) & 0xffffff;
	qp->own_rcq.cqn = ((qpn << 1) | 1) & 0xffffff;
	if (ext) {
		atomic_fetch_add(&qp->scq->users, 1);
		if (qp->rq_cnt && qp->rcq != qp->scq)
			atomic_fetch_add(&qp->rcq->users, 1);
	}
	queues_reset(qp);
	ret = nm_dc_qp_publish(qp);
	if (ret)
		goto err_reg;

	if (ctx->tr->qp_init) {
		ret = ctx->tr->qp_init(qp);
		if (ret)
			goto err_dc;
	}
	qp->thr = nm_engine_pick(a->nic_thread);
	nm_thread_add_qp(qp->thr, qp);
	atomic_fetch_add(&ctx->nqps, 1);
	qp_rec(qp, GDAK_TRACE_QPN_NONE,
	       "%screated: sq %u cq %u (0x%x) rq %u x %u sge, rcq %u (0x%x), "
	       "handler %s, NIC thread %u%s",
	       a->type == GDAK_QPT_DCI	 ? "DCI "
	       : a->type == GDAK_QPT_DCT ? "DCT "
					 : "",
	       qp->sq_cnt, qp->scq->ncqe, qp->scq->cqn, qp->rq_cnt, qp->rq_max_sge,
	       qp->rq_cnt ? qp->rcq->ncqe : 0, qp->rq_cnt ? qp->rcq->cqn : 0,
	       handler_name(a->handler), nm_thread_id(qp->thr), ext ? ", device rings" : "");
	GDAK_DBG("qp", qpn, "created: sq %u cq %u rq %u x %u sge, rcq %u, handler %d, thread %u%s",
		 qp->sq_cnt, qp->scq->ncqe, qp->rq_cnt, qp->rq_max_sge,
		 qp->rq_cnt ? qp->rcq->ncqe : 0, a->handler, nm_thread_id(qp->thr),
		 ext ? ", device rings" : "");
	*out = &qp->base;
	return 0;

err_dc:
	nm_dc_qp_fini(qp);
err_reg:
	if (ext) {
		atomic_fetch_sub(&qp->scq->users, 1);
		if (qp->rq_cnt && qp->rcq != qp->scq)
			atomic_fetch_sub(&qp->rcq->users, 1);
	}
	reg_del(qp);
err_rg:
	nm_rg_qp_fini(qp);
err_mr:
	nm_dc_qp_free(qp);
	nm_mr_dereg(qp->scratch_mr);
err_dmem:
	nm_dma_get()->free(qp->dmem, qp->dmem_len, GDAK_MEM_HOST_MAPPED);
err_free:
	GDAK_ERR("ctx", bctx->id, "cannot create a QP: %s", gdak_strerror(ret));
	pthread_spin_destroy(&qp->resp_lock);
	pthread_mutex_destroy(&qp->err_lock);
	free(qp);
	return ret;
}

int nm_qp_create(struct gdak_ctx *bctx, const struct gdak_qp_attr *a, struct gdak_qp **out)
{
	return qp_create(nm_ctx_of(bctx), a, NULL, out);
}

int nm_qp_create_ext(struct gdak_ctx *bctx, const struct gdak_qp_attr *qa,
		     const struct nm_ext_qp_attr *ext, struct gdak_qp **out)
{
	return qp_create(nm_ctx_of(bctx), qa, ext, out);
}

int nm_qp_destroy(struct gdak_qp *bqp)
{
	struct nm_qp *qp = nm_qp_of(bqp);
	struct nm_ctx *ctx = qp->ctx;

	qp_rec(qp, GDAK_TRACE_QPN_NONE, "destroyed in %s",
	       gdak_qp_state_name((enum gdak_qp_state)nm_qp_state(qp)));
	/* 1. the serving thread lets go of it (whatever was in flight stays
	 *    unexecuted: the device asked for the QP to go away) */
	nm_thread_del_qp(qp->thr, qp);
	/* 2. nobody can find it as a peer any more */
	nm_dc_qp_fini(qp);
	reg_del(qp);
	if (ctx->tr->qp_fini)
		ctx->tr->qp_fini(qp);
	/* 3. threads executing a peer's request into it finish first */
	nm_engine_sync();
	/* 4. only now may its external CQs go (nm_ext_cq_destroy) */
	if (qp->ext) {
		atomic_fetch_sub(&qp->scq->users, 1);
		if (qp->rq_cnt && qp->rcq != qp->scq)
			atomic_fetch_sub(&qp->rcq->users, 1);
	}
	nm_stats_retire(&qp->st);
	nm_dc_qp_free(qp);
	nm_mr_dereg(qp->scratch_mr); /* before nqps drops: the context outlives it */
	nm_dma_get()->free(qp->dmem, qp->dmem_len, GDAK_MEM_HOST_MAPPED);
	nm_rg_qp_fini(qp);
	pthread_spin_destroy(&qp->resp_lock);
	pthread_mutex_destroy(&qp->err_lock);
	free(qp);
	atomic_fetch_sub(&ctx->nqps, 1);
	nm_ctx_maybe_free(ctx);
	return 0;
}

int nm_qp_info(struct gdak_qp *bqp, struct gdak_qp_info *out)
{
	struct nm_qp *qp = nm_qp_of(bqp);

	out->qpn = bqp->qpn;
	out->mtu = bqp->attr.mtu;
	out->node = qp->ctx->node;
	if (qp->ctx->tr->qp_info) {
		int ret = qp->ctx->tr->qp_info(qp, out);

		if (ret)
			return ret;
	}
	nm_dc_qp_info(qp, out);
	return 0;
}

static void reset_on_thread(void *arg)
{
	queues_reset(arg);
	nm_dc_streams_close(arg, "closed (QP reset) to");
}

/* On the QP's thread, where the consumer index it names lives. */
static void err_on_thread(void *arg)
{
	struct nm_qp *qp = arg;

	nm_qp_set_error(qp, 0, 0, (uint16_t)qp->ci, "", "moved to ERR by gdak_qp_modify");
}

int nm_qp_modify(struct gdak_qp *bqp, enum gdak_qp_state to, const struct gdak_qp_info *peer)
{
	struct nm_qp *qp = nm_qp_of(bqp);
	int ret;

	switch (to) {
	case GDAK_QPS_RESET:
		atomic_store(&bqp->state, GDAK_QPS_RESET);
		nm_thread_call(qp->thr, reset_on_thread, qp);
		if (qp->ctx->tr->qp_reset)
			qp->ctx->tr->qp_reset(qp);
		qp_rec(qp, GDAK_TRACE_QPN_NONE, "reset");
		return 0;
	case GDAK_QPS_INIT:
		return 0;
	case GDAK_QPS_RTR:
		if (qp->dc) {
			/* a DCI / DCT connects to nobody; a DCT now answers */
			if (qp->ctx->tr->dc_ready) {
				ret = qp->ctx->tr->dc_ready(qp);
				if (ret)
					return ret;
			}
			if (bqp->attr.type == GDAK_QPT_DCT) {
				qp_rec(qp, GDAK_TRACE_QPN_NONE, "DCT ready (RTR)");
				atomic_store(&bqp->state, GDAK_QPS_RTR);
			}
			return 0;
		}
		if (qp->ctx->tr->qp_connect) {
			ret = qp->ctx->tr->qp_connect(qp, peer);
			if (ret)
				return ret;
		}
		qp->peer_info = *peer;
		return 0;
	case GDAK_QPS_RTS:
		if (qp->dc)
			qp_rec(qp, GDAK_TRACE_QPN_NONE, "DCI ready (RTS), %u stream(s)",
			       qp->base.attr.dci_streams);
		else
			qp_rec(qp, qp->peer_info.qpn,
			       "connected (RTS) to QP 0x%x, node %llx, mtu %u", qp->peer_info.qpn,
			       (unsigned long long)qp->peer_info.node, qp->peer_info.mtu);
		atomic_store(&bqp->state, GDAK_QPS_RTS);
		nm_thread_kick(qp);
		return 0;
	case GDAK_QPS_ERR:
		nm_thread_call(qp->thr, err_on_thread, qp);
		if (qp->ctx->tr->qp_stopped)
			qp->ctx->tr->qp_stopped(qp);
		qp_rec(qp, GDAK_TRACE_QPN_NONE, "moved to ERR by gdak_qp_modify");
		return 0;
	}
	return -EINVAL;
}

int nm_qp_export(struct gdak_qp *bqp, struct gdak_dev_qp **dqp)
{
	*dqp = nm_qp_of(bqp)->dqp;
	return 0;
}

int nm_qp_query_error(struct gdak_qp *bqp, struct gdak_qp_error *e)
{
	struct nm_qp *qp = nm_qp_of(bqp);

	pthread_mutex_lock(&qp->err_lock);
	if (qp->err_set) {
		e->syndrome = qp->err.syndrome;
		e->vendor_syndrome = qp->err.vendor;
		e->wqe_index = qp->err.wqe_index;
		e->opcode = qp->err.opcode;
		snprintf(e->rule, sizeof(e->rule), "%s", qp->err.rule);
		snprintf(e->text, sizeof(e->text), "%s", qp->err.text);
	}
	snprintf(e->last_rule, sizeof(e->last_rule), "%s", qp->viol_rule);
	snprintf(e->last_text, sizeof(e->last_text), "%s", qp->viol_text);
	pthread_mutex_unlock(&qp->err_lock);
	e->violations = __atomic_load_n(&qp->st.violations, __ATOMIC_RELAXED);
	return 0;
}

struct view_arg {
	struct nm_qp *qp;
	struct gdak_nic_qp_view *v;
};

/* On the QP's thread: the doorbell and requester fields are its own. */
static void view_on_thread(void *arg)
{
	struct view_arg *a = arg;
	struct nm_qp *qp = a->qp;
	struct gdak_nic_qp_view *v = a->v;

	v->state = nm_qp_state(qp);
	v->sq_consumer = qp->ci;
	v->sq_producer = qp->pi;
	v->sq_rung = qp->rung_pi;
	v->sq_record = qp->rec_last;
	v->flags = qp->base.attr.flags;
	v->scq_produced = nm_cq_produced(qp->scq);
	v->rcq_produced = qp->rq_cnt ? nm_cq_produced(qp->rcq) : 0;
	pthread_spin_lock(&qp->resp_lock);
	v->rq_consumed = qp->rq_ci;
	pthread_spin_unlock(&qp->resp_lock);
}

int gdak_nic_qp_query(struct gdak_qp *bqp, struct gdak_nic_qp_view *v)
{
	struct view_arg a;

	if (!bqp || !v)
		return -EINVAL;
	if (bqp->ctx->ops != &gdak_nm_backend_ops)
		return -ENOTSUP;
	memset(v, 0, sizeof(*v));
	a.qp = nm_qp_of(bqp);
	a.v = v;
	nm_thread_call(a.qp->thr, view_on_thread, &a);
	return 0;
}

void nm_qp_set_error(struct nm_qp *qp, uint8_t syndrome, uint8_t opcode, uint16_t wqe_index,
		     const char *rule, const char *fmt, ...)
{
	va_list ap;

	pthread_mutex_lock(&qp->err_lock);
	if (!qp->err_set) {
		qp->err_set = true;
		qp->err.syndrome = syndrome;
		qp->err.opcode = opcode;
		qp->err.wqe_index = wqe_index;
		snprintf(qp->err.rule, sizeof(qp->err.rule), "%s", rule ? rule : "");
		va_start(ap, fmt);
		vsnprintf(qp->err.text, sizeof(qp->err.text), fmt, ap);
		va_end(ap);
	}
	pthread_mutex_unlock(&qp->err_lock);
	atomic_store_explicit(&qp->base.state, GDAK_QPS_ERR, memory_order_release);
	nm_thread_kick(qp);
}

void nm_qp_stats_sum(struct gdak_nic_stats *st)
{
	pthread_mutex_lock(&reg_lock);
	for (uint32_t i = 0; i < reg.n; i++) {
		const struct gdak_nic_stats *s = &reg.v[i]->st;
#define SUM(f) st->f += __atomic_load_n(&s->f, __ATOMIC_RELAXED)
		SUM(wqes); SUM(bytes); SUM(cqes); SUM(errors); SUM(flushed);
		SUM(violations);
		SUM(doorbells);
		SUM(recvs);
		SUM(rnr);
		SUM(foreign);
#undef SUM
	}
	pthread_mutex_unlock(&reg_lock);
}

/* SPDX-License-Identifier: MIT */
/*
 * gv_post.c - the data path.  post_send builds real mlx5 WQEs in the
 * NIC-model QP's SQ ring with gdak's own builders (<gdak/dev/wqe.h>), then
 * writes the send doorbell record and rings the doorbell register
 * (<gdak/dev/db.h>) as libmlx5 does; post_recv writes receive WQEs and the
 * receive doorbell record; poll_cq decodes mlx5 CQEs (<gdak/dev/cq.h>) into
 * ibv_wc, mapping syndromes to ibv_wc_status as libmlx5 does.  So traces,
 * strict checks and fault injection see a verbs program exactly as they
 * see device code.
 *
 * Send-queue space is reclaimed as in libmlx5: a CQE for the WQE at index
 * w retires every WQE up to and including w, signalled or not (RC
 * completes in order), so a program that never signals fills its queue.
 *
 * Threads: the poster holds the QP's sq_lock / rq_lock, the poller its CQ's
 * lock; sq_done / rq_done pass from poller to poster with release/acquire.
 * The NIC thread publishes a CQE with a release store of its owner byte,
 * which the poller reads with acquire.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <gdak/dev/cq.h>
#include <gdak/dev/db.h>
#include <gdak/dev/recv.h>
#include <gdak/dev/wqe.h>

#include <gdak/env.h>

#include "gv_loc.h"
#include "tr_udp.h"
#include "gv_private.h"
#include "nm_ext.h"
#include "nm_loc.h"
#include "nm_thread_test.h"

/* ---- the engine in the caller's thread (docs/VERBS.md "Threads") ----------------------- */

static _Atomic uint64_t st_post, st_poll;

GV_EXPORT void gdak_ibv_engine_stats(struct gdak_ibv_engine_stats *st)
{
	st->post_inline = atomic_load_explicit(&st_post, memory_order_relaxed);
	st->poll_inline = atomic_load_explicit(&st_poll, memory_order_relaxed);
	st->busy = nm_thread_inline_busy();
}

GV_EXPORT int gdak_ibv_engine_hold(struct ibv_context *ctx, int on)
{
	if (!ctx || gv_device_index(ctx->device) < 0)
		return EINVAL;
	return -nm_ext_watch_hold(gv_ctx(ctx)->dev->rx_watch, on);
}

GV_EXPORT int gdak_ibv_engine_park(struct ibv_context *ctx, int on)
{
	if (!ctx || gv_device_index(ctx->device) < 0)
		return EINVAL;
	return -nm_ext_watch_park(gv_ctx(ctx)->dev->rx_watch, on);
}

/* GDAK_IBV_INLINE: 0 (set to 0), 1 (set to 1), 2 (unset: posts to a
 * direct-path peer run inline, nothing else) */
static int inline_mode(void)
{
	static _Atomic int mode = -1;
	int v = atomic_load_explicit(&mode, memory_order_relaxed);

	if (v < 0) {
		/* off by default: measured, it costs more than it saves on few
		 * CPUs (docs/BENCHMARKS.md "The engine in the program's
		 * thread") - except for a post whose WQEs the direct path does
		 * without a packet, where it saves the NIC thread's wakeup
		 * ("Session 10") */
		int r = gdak_env_bool("GDAK_IBV_INLINE", &v);

		if (r < 0)
			v = 0;
		else if (r == 1) /* unset: the table's default */
			v = 2;
		atomic_store_explicit(&mode, v, memory_order_relaxed);
	}
	return v;
}

bool gv_inline(void)
{
	return inline_mode() == 1;
}

/*
 * An empty CQ: drive the engine here, as rxe's receive work runs in
 * softirq rather than on a thread to be scheduled - the device's 4791
 * socket drained into the QPs' inboxes and their responders / completers
 * run (NIC thread 0's work, nm_ext_watch_inline), then the passes of any
 * other NIC thread this CQ's QPs are on.  Each a try-lock: a NIC thread
 * that is running keeps its work, and nothing here waits for one.  The
 * threads are taken under cq->lock (they outlive every QP), the runs made
 * after it, so a pass never runs under a lock the program's other
 * threads take.  1 when any ran.
 */
int gv_cq_progress(struct gv_cq *cq)
{
	struct gv_device *d = gv_ctx(cq->cqx.context)->dev;
	struct nm_ext_watch *w = d->rx_watch;
	struct nm_thread *w_thr = nm_ext_watch_thread(w), *thr[4];
	unsigned n = 0;
	int ran;

	pthread_mutex_lock(&cq->lock);
	for (unsigned i = 0; i < cq->nwq && n < 4; i++) {
		struct nm_thread *t = nm_qp_of(cq->wq[i]->qp->g)->thr;
		unsigned k;

		for (k = 0; k < n && thr[k] != t; k++)
			;
		if (k == n && t && t != w_thr)
			thr[n++] = t;
	}
	pthread_mutex_unlock(&cq->lock);
	ran = nm_ext_watch_inline(w);
	for (unsigned k = 0; k < n; k++)
		ran |= nm_thread_try_inline(thr[k], NULL, NULL, NULL);
	if (ran)
		atomic_fetch_add_explicit(&st_poll, 1, memory_order_relaxed);
	return ran;
}

/* ---- completions ------------------------------------------------------------------ */

/* libmlx5's mlx5_handle_error_cqe */
static enum ibv_wc_status wc_status(uint8_t synd)
{
	switch (synd) {
	case MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR:
		return IBV_WC_LOC_LEN_ERR;
	case MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR:
		return IBV_WC_LOC_QP_OP_ERR;
	case MLX5_CQE_SYNDROME_LOCAL_PROT_ERR:
		return IBV_WC_LOC_PROT_ERR;
	case MLX5_CQE_SYNDROME_WR_FLUSH_ERR:
		return IBV_WC_WR_FLUSH_ERR;
	case MLX5_CQE_SYNDROME_MW_BIND_ERR:
		return IBV_WC_MW_BIND_ERR;
	case MLX5_CQE_SYNDROME_BAD_RESP_ERR:
		return IBV_WC_BAD_RESP_ERR;
	case MLX5_CQE_SYNDROME_LOCAL_ACCESS_ERR:
		return IBV_WC_LOC_ACCESS_ERR;
	case MLX5_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR:
		return IBV_WC_REM_INV_REQ_ERR;
	case MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR:
		return IBV_WC_REM_ACCESS_ERR;
	case MLX5_CQE_SYNDROME_REMOTE_OP_ERR:
		return IBV_WC_REM_OP_ERR;
	case MLX5_CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR:
		return IBV_WC_RETRY_EXC_ERR;
	case MLX5_CQE_SYNDROME_RNR_RETRY_EXC_ERR:
		return IBV_WC_RNR_RETRY_EXC_ERR;
	case MLX5_CQE_SYNDROME_REMOTE_ABORTED_ERR:
		return IBV_WC_REM_ABORT_ERR;
	default:
		return IBV_WC_GENERAL_ERR;
	}
}

int gv_cq_peek(struct gv_cq *cq)
{
	const uint8_t *cqe = (const uint8_t *)gdak_dev_cqe_ptr(&cq->ring, cq->ring.cons_idx);

	return gdak_mlx5_cqe_is_sw_owned(__atomic_load_n(cqe + 63, __ATOMIC_ACQUIRE),
					 cq->ring.cons_idx, cq->ring.ncqe);
}

/* The first error of a QP: it is in ERR now (IBA 10.10.2.1); tell the
 * program through its async events too. */
static void qp_error_seen(struct gv_qp *q, enum ibv_wc_status st)
{
	if (st == IBV_WC_WR_FLUSH_ERR || __atomic_exchange_n(&q->err_event, 1, __ATOMIC_ACQ_REL))
		return;
	gv_async_post(q->ctx,
		      st == IBV_WC_REM_ACCESS_ERR || st == IBV_WC_LOC_ACCESS_ERR ||
				      st == IBV_WC_LOC_PROT_ERR
			      ? IBV_EVENT_QP_ACCESS_ERR
			      : IBV_EVENT_QP_FATAL,
		      &q->qpx.qp_base);
}

/* The work queue a CQE of the CQ belongs to: its QPN and whether it is a
 * requester CQE.  NULL: a CQE of a QP destroyed meanwhile (libmlx5 cleans
 * those out of the CQ at destroy; here they are skipped as they come). */
static struct gv_wq *cq_wq_of(struct gv_cq *cq, uint32_t qpn, enum gv_wq_kind kind)
{
	for (unsigned i = 0; i < cq->nwq; i++) {
		struct gv_wq *wq = cq->wq[i];

		if (wq->kind == kind && wq->qp->qpx.qp_base.qp_num == qpn)
			return wq;
	}
	return NULL;
}

/* One decoded CQE of wq into *wc. */
static void cqe_to_wc(struct gv_wq *wq, const struct gdak_mlx5_cqe_fields *f, struct ibv_wc *wc)
{
	struct gv_qp *q = wq->qp;
	bool err = f->opcode == MLX5_CQE_REQ_ERR || f->opcode == MLX5_CQE_RESP_ERR;

	memset(wc, 0, sizeof(*wc));
	wc->qp_num = q->qpx.qp_base.qp_num;
	wc->src_qp = q->attr.dest_qp_num;
	if (wq->kind == GV_WQ_SEND) {
		uint64_t base = atomic_load_explicit(&q->sq_done, memory_order_relaxed), p, end,
			 idx;
		const struct gv_slot *s;
		uint32_t wrs = 0, mask = q->d->sq_wqebb_cnt - 1;

		idx = gdak_dev_wqe_counter_to_index(f->wqe_counter, base);
		s = &q->slots[idx & mask];
		wc->wr_id = s->wr_id;
		wc->opcode = (enum ibv_wc_opcode)s->opcode;
		wc->byte_len = f->byte_cnt ? f->byte_cnt : s->len;
		/* retire through the end of that WQE */
		end = __atomic_load_n(&q->sq_pi_seen, __ATOMIC_ACQUIRE);
		for (p = base; p <= idx && p < end; wrs++)
			p += q->slots[p & mask].bbs ? q->slots[p & mask].bbs : 1;
		atomic_fetch_add_explicit(&q->sq_wrs_done, wrs, memory_order_relaxed);
		atomic_store_explicit(&q->sq_done, p, memory_order_release);
	} else {
		uint64_t base = atomic_load_explicit(&q->rq_done, memory_order_relaxed);
		uint64_t idx = gdak_dev_wqe_counter_to_index(f->wqe_counter, base);

		wc->wr_id = q->rwrid[idx & (q->rq_cnt - 1)];
		wc->byte_len = f->byte_cnt;
		switch (f->opcode) {
		case MLX5_CQE_RESP_WR_IMM:
			wc->opcode = IBV_WC_RECV_RDMA_WITH_IMM;
			wc->wc_flags = IBV_WC_WITH_IMM;
			wc->imm_data = f->imm; /* big-endian, as stored */
			break;
		case MLX5_CQE_RESP_SEND_IMM:
			wc->opcode = IBV_WC_RECV;
			wc->wc_flags = IBV_WC_WITH_IMM;
			wc->imm_data = f->imm;
			break;
		default:
			wc->opcode = IBV_WC_RECV;
			break;
		}
		atomic_store_explicit(&q->rq_done, idx + 1, memory_order_release);
	}
	if (err) {
		wc->status = wc_status(f->syndrome);
		wc->vendor_err = f->vendor_syndrome;
		qp_error_seen(q, wc->status);
	}
}

void gv_cq_clean(struct gv_cq *cq, uint32_t qpn)
{
	struct gdak_dev_cq *r = &cq->ring;

	pthread_mutex_lock(&cq->lock);
	for (uint64_t n = r->cons_idx; n - r->cons_idx < r->ncqe; n++) {
		uint8_t *cqe = (uint8_t *)gdak_dev_cqe_ptr(r, n);
		uint32_t w;

		if (!gdak_mlx5_cqe_is_sw_owned(__atomic_load_n(cqe + 63, __ATOMIC_ACQUIRE), n,
					       r->ncqe))
			break;
		/* bytes 56..59 carry the QPN in both CQE formats (success:
		 * sop_drop_qpn, error: s_wqe_opcode_qpn) */
		memcpy(&w, cqe + 56, 4);
		if ((be32toh(w) & 0xffffff) == qpn) {
			w = htobe32((be32toh(w) & 0xff000000u) | 0xffffffu);
			memcpy(cqe + 56, &w, 4);
		}
	}
	pthread_mutex_unlock(&cq->lock);
}

int gv_cq_poll1(struct gv_cq *cq, struct ibv_wc *wc)
{
	struct gdak_dev_cq *r = &cq->ring;

	for (;;) {
		const uint8_t *cqe = (const uint8_t *)gdak_dev_cqe_ptr(r, r->cons_idx);
		struct gdak_mlx5_cqe_fields f;
		struct gv_wq *wq;

		if (!gdak_mlx5_cqe_is_sw_owned(__atomic_load_n(cqe + 63, __ATOMIC_ACQUIRE),
					       r->cons_idx, r->ncqe))
			return 0;
		gdak_mlx5_cqe_decode(cqe, &f);
		r->cons_idx++;
		/* the consumer counter the NIC's overrun check reads */
		__atomic_store_n(r->dbrec, gdak_mlx5_cq_dbrec_value((uint32_t)r->cons_idx),
				 __ATOMIC_RELEASE);
		wq = cq_wq_of(cq, f.qpn,
			      f.opcode == MLX5_CQE_REQ || f.opcode == MLX5_CQE_REQ_ERR
				      ? GV_WQ_SEND
				      : GV_WQ_RECV);
		if (!wq)
			continue;
		cqe_to_wc(wq, &f, wc);
		return 1;
	}
}

/* ---- post_send -------------------------------------------------------------------------- */

/* One work request, whichever API it came through. */
struct gv_wr {
	uint64_t wr_id;
	enum ibv_wr_opcode opcode;
	unsigned flags; /* IBV_SEND_* */
	uint32_t imm;	/* host order */
	uint64_t raddr;
	uint32_t rkey;
	uint64_t cmp_add, swap;
	const struct ibv_sge *sg;
	uint32_t nsge;
	const struct ibv_data_buf *inl; /* ibv_wr_set_inline_data_list */
	uint32_t ninl;
};

/* The data segments of n verbs SGEs, the empty ones left out (a zero byte
 * count would mean 2 GiB to the NIC: libmlx5 skips them): how many; their
 * bytes in *len when len is not NULL. */
static uint32_t sges_of(struct gdak_dev_sge *out, const struct ibv_sge *sg, uint32_t n,
			uint32_t *len)
{
	uint32_t k = 0, bytes = 0;

	for (uint32_t i = 0; i < n; i++) {
		if (!sg[i].length)
			continue;
		out[k++] = (struct gdak_dev_sge){ .addr = sg[i].addr,
						  .len = sg[i].length,
						  .lkey = sg[i].lkey };
		bytes += sg[i].length;
	}
	if (len)
		*len = bytes;
	return k;
}

static int wr_build(struct gv_qp *q, const struct gv_wr *w)
{
	struct gdak_dev_qp *d = q->d;
	struct gdak_dev_sge sge[GV_MAX_SGE];
	uint8_t inl[GV_MAX_INLINE];
	uint32_t flags = 0, nsge = 0, bbs, len = 0, total = 0;
	uint64_t idx = q->sq_pi;
	bool inline_ = false, raddr = true;
	uint8_t wc_op;
	struct gv_slot *s;

	if (q->sq_wrs - atomic_load_explicit(&q->sq_wrs_done, memory_order_relaxed) >=
	    q->cap.max_send_wr)
		return ENOMEM;
	if (w->nsge > q->cap.max_send_sge && !(w->flags & IBV_SEND_INLINE))
		return EINVAL;
	if ((w->flags & IBV_SEND_SIGNALED) || q->sig_all)
		flags |= GDAK_DEV_WQE_SIGNAL;
	if (w->flags & IBV_SEND_FENCE)
		flags |= GDAK_DEV_WQE_FENCE;
	if (w->flags & IBV_SEND_SOLICITED)
		flags |= GDAK_DEV_WQE_SOLICITED;
	switch (w->opcode) {
	case IBV_WR_RDMA_WRITE:
		wc_op = IBV_WC_RDMA_WRITE;
		break;
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		wc_op = IBV_WC_RDMA_WRITE;
		break;
	case IBV_WR_SEND:
		wc_op = IBV_WC_SEND;
		raddr = false;
		break;
	case IBV_WR_SEND_WITH_IMM:
		wc_op = IBV_WC_SEND;
		raddr = false;
		break;
	case IBV_WR_RDMA_READ:
		wc_op = IBV_WC_RDMA_READ;
		break;
	case IBV_WR_ATOMIC_CMP_AND_SWP:
		wc_op = IBV_WC_COMP_SWAP;
		break;
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		wc_op = IBV_WC_FETCH_ADD;
		break;
	default:
		/* memory windows, invalidation, TSO, atomic write, flush: not emulated */
		return EINVAL;
	}
	inline_ = (w->flags & IBV_SEND_INLINE) && w->opcode != IBV_WR_RDMA_READ &&
		  w->opcode != IBV_WR_ATOMIC_CMP_AND_SWP &&
		  w->opcode != IBV_WR_ATOMIC_FETCH_AND_ADD;
	if (inline_) {
		if (w->inl) {
			for (uint32_t i = 0; i < w->ninl; i++) {
				if (total + w->inl[i].length > q->cap.max_inline_data)
					return EINVAL;
				memcpy(inl + total, w->inl[i].addr, w->inl[i].length);
				total += (uint32_t)w->inl[i].length;
			}
		} else {
			for (uint32_t i = 0; i < w->nsge; i++) {
				if (total + w->sg[i].length > q->cap.max_inline_data)
					return EINVAL;
				memcpy(inl + total, (const void *)(uintptr_t)w->sg[i].addr,
				       w->sg[i].length);
				total += w->sg[i].length;
			}
		}
		len = total;
		bbs = gdak_dev_wqe_bbs_inline(raddr, total);
	} else {
		nsge = sges_of(sge, w->sg, w->nsge, &len);
		if (wc_op == IBV_WC_COMP_SWAP || wc_op == IBV_WC_FETCH_ADD) {
			if (nsge < 1)
				return EINVAL;
			bbs = 1;
			len = 8;
		} else {
			bbs = gdak_dev_wqe_bbs_sge(raddr, nsge);
		}
	}
	if (idx + bbs - atomic_load_explicit(&q->sq_done, memory_order_acquire) > d->sq_wqebb_cnt)
		return ENOMEM;

	switch (w->opcode) {
	case IBV_WR_RDMA_WRITE:
		bbs = inline_ ? gdak_dev_wqe_write_inline(d, idx, flags, w->raddr, w->rkey, inl,
							  total)
			      : gdak_dev_wqe_write(d, idx, flags, w->raddr, w->rkey, sge, nsge);
		break;
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		bbs = inline_ ? gdak_dev_wqe_write_imm_inline(d, idx, flags, w->raddr, w->rkey, inl,
							      total, w->imm)
			      : gdak_dev_wqe_write_imm(d, idx, flags, w->raddr, w->rkey, sge, nsge,
						       w->imm);
		break;
	case IBV_WR_SEND:
		bbs = inline_ ? gdak_dev_wqe_send_inline(d, idx, flags, inl, total)
			      : gdak_dev_wqe_send(d, idx, flags, sge, nsge);
		break;
	case IBV_WR_SEND_WITH_IMM:
		bbs = inline_ ? gdak_dev_wqe_send_imm_inline(d, idx, flags, inl, total, w->imm)
			      : gdak_dev_wqe_send_imm(d, idx, flags, sge, nsge, w->imm);
		break;
	case IBV_WR_RDMA_READ:
		/* a zero-length READ is ctrl + raddr alone (DS 2), as libmlx5
		 * builds it: a data segment of byte count 0 would mean 2 GiB */
		bbs = gdak_dev_wqe_sge_op(d, idx, MLX5_OPCODE_RDMA_READ, flags, 0, 1, w->raddr,
					  w->rkey, sge, nsge);
		break;
	case IBV_WR_ATOMIC_CMP_AND_SWP:
		bbs = gdak_dev_wqe_cas(d, idx, flags, w->raddr, w->rkey, w->cmp_add, w->swap,
				       sge[0].addr, sge[0].lkey);
		break;
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		bbs = gdak_dev_wqe_fetch_add(d, idx, flags, w->raddr, w->rkey, w->cmp_add,
					     sge[0].addr, sge[0].lkey);
		break;
	default:
		return EINVAL;
	}
	if (!bbs)
		return EINVAL;
	s = &q->slots[idx & (d->sq_wqebb_cnt - 1)];
	s->wr_id = w->wr_id;
	s->bbs = (uint8_t)bbs;
	s->opcode = wc_op;
	s->signaled = (flags & GDAK_DEV_WQE_SIGNAL) != 0;
	s->len = len;
	q->wr_last = idx;
	q->sq_pi = idx + bbs;
	q->sq_wrs++;
	return 0;
}

/* Record, then the doorbell register (gdak_dev_sq_submit's two steps with
 * our own indices). */
static void sq_ring(struct gv_qp *q, uint64_t first)
{
	gdak_dev_sq_update_dbrec(q->d, q->sq_pi);
	gdak_dev_sq_ring_db(q->d, q->wr_last, q->sq_pi, q->wr_last == first, 0);
	__atomic_store_n(&q->sq_pi_seen, q->sq_pi, __ATOMIC_RELEASE);
}

/*
 * After the doorbell (and after sq_lock: other posters of the QP do not
 * wait on our engine work).  A ConnectX sees the doorbell at once; here
 * the poster executes it itself when the QP's NIC thread is not running
 * (nm_ext_qp_post_inline: the WQEs read from the ring just rung, their
 * packets sent from this thread, as rxe's requester runs in the poster's
 * system call), else kicks that thread: an ev_async that costs a system
 * call only while the thread is blocked, nothing while it polls.
 */
static void sq_go(struct gv_qp *q, bool rdma_only)
{
	int m = inline_mode();

	/* unset: inline only what the direct path does (WRITE, READ), no
	 * packet to send from this thread */
	if ((m == 1 || (m == 2 && rdma_only && nm_tr_udp_qp_direct(q->g))) &&
	    nm_ext_qp_post_inline(q->g))
		atomic_fetch_add_explicit(&st_post, 1, memory_order_relaxed);
	else
		nm_thread_kick(nm_qp_of(q->g));
}

static bool can_send(struct gv_qp *q)
{
	/* RESET, INIT and RTR have no send queue to speak of (IBA 10.3.1);
	 * in ERR posting is allowed and every WR is flushed */
	return q->state == IBV_QPS_RTS || q->state == IBV_QPS_ERR || q->state == IBV_QPS_SQD;
}

int gv_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
	struct gv_qp *q = gv_qp_of(qp);
	uint64_t first;
	bool rang, rdma_only = true;
	int ret = 0;

	if (!can_send(q)) {
		*bad = wr;
		return EINVAL;
	}
	pthread_spin_lock(&q->sq_lock);
	first = q->sq_pi;
	for (; wr; wr = wr->next) {
		struct gv_wr w = {
			.wr_id = wr->wr_id,
			.opcode = wr->opcode,
			.flags = wr->send_flags,
			.imm = be32toh(wr->imm_data),
			.sg = wr->sg_list,
			.nsge = wr->num_sge > 0 ? (uint32_t)wr->num_sge : 0,
		};

		if (wr->opcode != IBV_WR_RDMA_WRITE && wr->opcode != IBV_WR_RDMA_READ)
			rdma_only = false;
		if (wr->opcode == IBV_WR_ATOMIC_CMP_AND_SWP ||
		    wr->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD) {
			w.raddr = wr->wr.atomic.remote_addr;
			w.rkey = wr->wr.atomic.rkey;
			w.cmp_add = wr->wr.atomic.compare_add;
			w.swap = wr->wr.atomic.swap;
		} else {
			w.raddr = wr->wr.rdma.remote_addr;
			w.rkey = wr->wr.rdma.rkey;
		}
		if (wr->num_sge < 0) {
			ret = EINVAL;
		} else {
			ret = wr_build(q, &w);
		}
		if (ret) {
			*bad = wr;
			break;
		}
	}
	rang = q->sq_pi != first;
	if (rang)
		sq_ring(q, first);
	pthread_spin_unlock(&q->sq_lock);
	if (rang)
		sq_go(q, rdma_only);
	return ret;
}

/* ---- post_recv ----------------------------------------------------------------------------- */

/* One receive WQE at the QP's producer index (rq_lock or the SRQ's lock held). */
static int rwqe_put(struct gv_qp *q, const struct ibv_recv_wr *wr)
{
	struct gdak_dev_sge sge[GV_MAX_SGE];
	uint32_t n;

	if (q->rq_pi - atomic_load_explicit(&q->rq_done, memory_order_acquire) >= q->rq_cnt)
		return ENOMEM;
	if (wr->num_sge < 0 || (uint32_t)wr->num_sge > gdak_dev_rq_max_sge(q->d))
		return EINVAL;
	n = sges_of(sge, wr->sg_list, (uint32_t)wr->num_sge, NULL);
	if (gdak_dev_rwqe_set(q->d, q->rq_pi, sge, n))
		return EINVAL;
	q->rwrid[q->rq_pi & (q->rq_cnt - 1)] = wr->wr_id;
	q->rq_pi++;
	return 0;
}

int gv_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	struct gv_qp *q = gv_qp_of(qp);
	uint64_t first;
	int ret = 0;

	if (q->state == IBV_QPS_RESET || q->srq || !q->rq_cnt) {
		*bad = wr;
		return EINVAL;
	}
	pthread_spin_lock(&q->rq_lock);
	first = q->rq_pi;
	for (; wr; wr = wr->next) {
		if (wr->num_sge > (int)q->cap.max_recv_sge) {
			ret = EINVAL;
		} else {
			ret = rwqe_put(q, wr);
		}
		if (ret) {
			*bad = wr;
			break;
		}
	}
	if (q->rq_pi != first)
		gdak_dev_rq_update_dbrec(q->d, q->rq_pi);
	pthread_spin_unlock(&q->rq_lock);
	/* in ERR the NIC flushes them at once: a sleeping NIC thread
	 * (doorbell-notified QP) must look; otherwise a message that needs
	 * them finds them when it arrives */
	if (q->rq_pi != first && gdak_qp_state(q->g) == GDAK_QPS_ERR)
		nm_thread_kick(nm_qp_of(q->g));
	return ret;
}

/* ---- SRQ: WRs wait in the SRQ until a message needs one -------------------------------------- */

/*
 * The NIC model has one RQ per QP.  An SRQ keeps its WRs itself; when a
 * SEND (or WRITE_IMM) reaches a QP of the SRQ whose RQ is empty, the
 * responder calls the QP's rq_empty hook (nm_resp.c, under the QP's
 * resp_lock) and the hook moves the SRQ's oldest WR into that QP's RQ - so
 * every WR is taken by the message that arrives, in posting order, exactly
 * as a shared queue behaves, and the limit event fires when the count of
 * WRs left drops below the armed limit (IBA 10.2.9.4).
 */
static void srq_take(void *arg)
{
	struct gv_qp *q = arg;
	struct gv_srq *s = q->srq;
	bool limit = false;

	if (!s)
		return;
	pthread_mutex_lock(&s->lock);
	if (s->count) {
		struct ibv_recv_wr *w = &s->wr[s->head];

		if (!rwqe_put(q, w)) {
			gdak_dev_rq_update_dbrec(q->d, q->rq_pi);
			s->head = (s->head + 1) % s->max_wr;
			s->count--;
			if (s->limit && s->count < s->limit) {
				s->limit = 0; /* one event per arming */
				limit = true;
			}
		}
	}
	pthread_mutex_unlock(&s->lock);
	if (limit)
		gv_async_post(q->ctx, IBV_EVENT_SRQ_LIMIT_REACHED, &s->srq);
}

void gv_srq_hook(struct gv_qp *q)
{
	struct nm_qp *nq = nm_qp_of(q->g);

	nq->rq_empty_arg = q;
	atomic_store_explicit(&nq->rq_empty, srq_take, memory_order_release);
}

int gv_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	struct gv_srq *s = gv_srq_of(srq);
	int ret = 0;

	pthread_mutex_lock(&s->lock);
	for (; wr; wr = wr->next) {
		uint32_t slot;

		if (wr->num_sge < 0 || (uint32_t)wr->num_sge > s->max_sge) {
			ret = EINVAL;
		} else if (s->count == s->max_wr) {
			ret = ENOMEM;
		}
		if (ret) {
			*bad = wr;
			break;
		}
		slot = (s->head + s->count) % s->max_wr;
		s->wr[slot] = *wr;
		s->wr[slot].next = NULL;
		s->wr[slot].sg_list = &s->sge[(size_t)slot * s->max_sge];
		memcpy(s->wr[slot].sg_list, wr->sg_list,
		       (size_t)wr->num_sge * sizeof(*wr->sg_list));
		s->count++;
	}
	pthread_mutex_unlock(&s->lock);
	/* a message may be waiting for a WR (RNR): the NIC asks again at its retry */
	return ret;
}

/* Every SRQ of the process: DEVX commands name them by number. */
static pthread_mutex_t srqs_lock = PTHREAD_MUTEX_INITIALIZER;
static struct gv_srq *srqs;
static uint32_t srq_next = 1;

/* Lock order: srqs_lock, then an SRQ's lock (ibv_destroy_srq too), so a
 * DEVX object cannot take an SRQ that is being destroyed. */
struct gv_srq *gv_srq_hold(const struct gv_device *d, uint32_t srqn)
{
	struct gv_srq *s;

	pthread_mutex_lock(&srqs_lock);
	for (s = srqs; s; s = s->next)
		if (s->srqn == srqn && gv_ctx(s->srq.context)->dev == d)
			break;
	if (s) {
		pthread_mutex_lock(&s->lock);
		s->devx_users++;
		pthread_mutex_unlock(&s->lock);
	}
	pthread_mutex_unlock(&srqs_lock);
	return s;
}

GV_EXPORT int gdak_ibv_srq_num(struct ibv_srq *srq, uint32_t *srqn)
{
	if (!srq || !srqn || !gdak_ibv_is_device(srq->context->device))
		return EINVAL;
	*srqn = gv_srq_of(srq)->srqn;
	return 0;
}

GV_EXPORT struct ibv_srq *ibv_create_srq(struct ibv_pd *pd, struct ibv_srq_init_attr *a)
{
	struct gv_srq *s;
	uint32_t max_wr, max_sge;

	if (!pd || !a || !a->attr.max_wr || a->attr.max_wr > GV_MAX_QP_WR - 1 ||
	    a->attr.max_sge > GV_MAX_SGE || a->attr.srq_limit > a->attr.max_wr) {
		errno = EINVAL;
		return NULL;
	}
	max_wr = a->attr.max_wr;
	max_sge = a->attr.max_sge ? a->attr.max_sge : 1;
	s = calloc(1, sizeof(*s));
	if (!s) {
		errno = ENOMEM;
		return NULL;
	}
	s->wr = calloc(max_wr, sizeof(*s->wr));
	s->sge = calloc((size_t)max_wr * max_sge, sizeof(*s->sge));
	if (!s->wr || !s->sge) {
		free(s->wr);
		free(s->sge);
		free(s);
		errno = ENOMEM;
		return NULL;
	}
	pthread_mutex_init(&s->lock, NULL);
	s->max_wr = max_wr;
	s->max_sge = max_sge;
	s->limit = a->attr.srq_limit;
	s->srq.context = pd->context;
	s->srq.srq_context = a->srq_context;
	s->srq.pd = pd;
	pthread_mutex_init(&s->srq.mutex, NULL);
	pthread_cond_init(&s->srq.cond, NULL);
	a->attr.max_wr = max_wr;
	a->attr.max_sge = max_sge;
	pthread_mutex_lock(&srqs_lock);
	s->srqn = srq_next++ & 0xffffff;
	if (!s->srqn)
		s->srqn = srq_next++ & 0xffffff;
	s->next = srqs;
	srqs = s;
	pthread_mutex_unlock(&srqs_lock);
	return &s->srq;
}

GV_EXPORT int ibv_modify_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr, int mask)
{
	struct gv_srq *s = gv_srq_of(srq);
	int ret = 0;

	if (!attr || (mask & ~(IBV_SRQ_MAX_WR | IBV_SRQ_LIMIT)))
		return EINVAL;
	pthread_mutex_lock(&s->lock);
	if ((mask & IBV_SRQ_MAX_WR) && attr->max_wr != s->max_wr)
		ret = EINVAL; /* resizing: not emulated (the device does not claim SRQ_RESIZE use) */
	else if ((mask & IBV_SRQ_LIMIT) && attr->srq_limit > s->max_wr)
		ret = EINVAL;
	else if (mask & IBV_SRQ_LIMIT)
		s->limit = attr->srq_limit;
	pthread_mutex_unlock(&s->lock);
	return ret;
}

GV_EXPORT int ibv_query_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr)
{
	struct gv_srq *s = gv_srq_of(srq);

	pthread_mutex_lock(&s->lock);
	attr->max_wr = s->max_wr;
	attr->max_sge = s->max_sge;
	attr->srq_limit = s->limit;
	pthread_mutex_unlock(&s->lock);
	return 0;
}

GV_EXPORT int ibv_destroy_srq(struct ibv_srq *srq)
{
	struct gv_srq *s = gv_srq_of(srq);

	pthread_mutex_lock(&srqs_lock);
	pthread_mutex_lock(&s->lock);
	if (s->nqps || s->devx_users) {
		pthread_mutex_unlock(&s->lock);
		pthread_mutex_unlock(&srqs_lock);
		return EBUSY;
	}
	pthread_mutex_unlock(&s->lock);
	for (struct gv_srq **p = &srqs; *p; p = &(*p)->next)
		if (*p == s) {
			*p = s->next;
			break;
		}
	pthread_mutex_unlock(&srqs_lock);
	free(s->wr);
	free(s->sge);
	free(s->qps);
	free(s);
	return 0;
}

/* ---- ibv_qp_ex: the ibv_wr_* API ------------------------------------------------------------ */

static struct gv_qp *qx(struct ibv_qp_ex *x)
{
	return gv_container_of(x, struct gv_qp, qpx);
}

static void wr_start(struct ibv_qp_ex *x)
{
	struct gv_qp *q = qx(x);

	pthread_spin_lock(&q->sq_lock);
	q->wr_start_pi = q->sq_pi;
	q->wr_start_wrs = q->sq_wrs;
	q->wr_err = can_send(q) ? 0 : EINVAL;
	q->wr_pend.opcode = -1;
	q->wr_other = false;
}

static int wr_complete(struct ibv_qp_ex *x)
{
	struct gv_qp *q = qx(x);
	int ret = q->wr_err;
	bool rang = false, rdma_only = !q->wr_other;

	if (ret) {
		q->sq_pi = q->wr_start_pi;
		q->sq_wrs = q->wr_start_wrs;
	} else if (q->sq_pi != q->wr_start_pi) {
		sq_ring(q, q->wr_start_pi);
		rang = true;
	}
	pthread_spin_unlock(&q->sq_lock);
	if (rang)
		sq_go(q, rdma_only);
	return ret;
}

static void wr_abort(struct ibv_qp_ex *x)
{
	struct gv_qp *q = qx(x);

	q->sq_pi = q->wr_start_pi;
	q->sq_wrs = q->wr_start_wrs;
	pthread_spin_unlock(&q->sq_lock);
}

static void wr_op(struct ibv_qp_ex *x, enum ibv_wr_opcode op, uint32_t rkey, uint64_t raddr,
		  uint64_t cmp_add, uint64_t swap, uint32_t imm)
{
	struct gv_qp *q = qx(x);

	q->wr_pend.opcode = (int)op;
	if (op != IBV_WR_RDMA_WRITE && op != IBV_WR_RDMA_READ)
		q->wr_other = true;
	q->wr_pend.rkey = rkey;
	q->wr_pend.raddr = raddr;
	q->wr_pend.cmp_add = cmp_add;
	q->wr_pend.swap = swap;
	q->wr_pend.imm = imm;
}

static void wr_finish(struct ibv_qp_ex *x, const struct ibv_sge *sg, uint32_t nsge,
		      const struct ibv_data_buf *inl, uint32_t ninl)
{
	struct gv_qp *q = qx(x);
	struct gv_wr w = {
		.wr_id = x->wr_id,
		.flags = x->wr_flags,
		.imm = q->wr_pend.imm,
		.raddr = q->wr_pend.raddr,
		.rkey = q->wr_pend.rkey,
		.cmp_add = q->wr_pend.cmp_add,
		.swap = q->wr_pend.swap,
		.sg = sg,
		.nsge = nsge,
		.inl = inl,
		.ninl = ninl,
	};
	int ret;

	if (q->wr_err)
		return;
	if (q->wr_pend.opcode < 0) {
		q->wr_err = EINVAL;
		return;
	}
	w.opcode = (enum ibv_wr_opcode)q->wr_pend.opcode;
	if (inl)
		w.flags |= IBV_SEND_INLINE;
	ret = wr_build(q, &w);
	if (ret)
		q->wr_err = ret;
	q->wr_pend.opcode = -1;
}

static void wr_rdma_write(struct ibv_qp_ex *x, uint32_t rkey, uint64_t raddr)
{
	wr_op(x, IBV_WR_RDMA_WRITE, rkey, raddr, 0, 0, 0);
}

static void wr_rdma_write_imm(struct ibv_qp_ex *x, uint32_t rkey, uint64_t raddr, __be32 imm)
{
	wr_op(x, IBV_WR_RDMA_WRITE_WITH_IMM, rkey, raddr, 0, 0, be32toh(imm));
}

static void wr_send(struct ibv_qp_ex *x)
{
	wr_op(x, IBV_WR_SEND, 0, 0, 0, 0, 0);
}

static void wr_send_imm(struct ibv_qp_ex *x, __be32 imm)
{
	wr_op(x, IBV_WR_SEND_WITH_IMM, 0, 0, 0, 0, be32toh(imm));
}

static void wr_rdma_read(struct ibv_qp_ex *x, uint32_t rkey, uint64_t raddr)
{
	wr_op(x, IBV_WR_RDMA_READ, rkey, raddr, 0, 0, 0);
}

static void wr_cas(struct ibv_qp_ex *x, uint32_t rkey, uint64_t raddr, uint64_t compare,
		   uint64_t swap)
{
	wr_op(x, IBV_WR_ATOMIC_CMP_AND_SWP, rkey, raddr, compare, swap, 0);
}

static void wr_fadd(struct ibv_qp_ex *x, uint32_t rkey, uint64_t raddr, uint64_t add)
{
	wr_op(x, IBV_WR_ATOMIC_FETCH_AND_ADD, rkey, raddr, add, 0, 0);
}

static void wr_unsupported(struct ibv_qp_ex *x)
{
	qx(x)->wr_err = EOPNOTSUPP;
}

static void wr_local_inv(struct ibv_qp_ex *x, uint32_t k)
{
	wr_unsupported(x);
}
static void wr_send_inv(struct ibv_qp_ex *x, uint32_t k)
{
	wr_unsupported(x);
}
static void wr_bind_mw(struct ibv_qp_ex *x, struct ibv_mw *mw, uint32_t rkey,
		       const struct ibv_mw_bind_info *i)
{
	wr_unsupported(x);
}
static void wr_send_tso(struct ibv_qp_ex *x, void *hdr, uint16_t hdr_sz, uint16_t mss)
{
	wr_unsupported(x);
}
static void wr_set_ud_addr(struct ibv_qp_ex *x, struct ibv_ah *ah, uint32_t qpn, uint32_t qkey)
{
	wr_unsupported(x);
}
static void wr_set_xrc_srqn(struct ibv_qp_ex *x, uint32_t n)
{
	wr_unsupported(x);
}
static void wr_atomic_write(struct ibv_qp_ex *x, uint32_t rkey, uint64_t raddr, const void *v)
{
	wr_unsupported(x);
}

static void wr_set_sge(struct ibv_qp_ex *x, uint32_t lkey, uint64_t addr, uint32_t length)
{
	struct ibv_sge s = { addr, length, lkey };

	wr_finish(x, &s, 1, NULL, 0);
}

static void wr_set_sge_list(struct ibv_qp_ex *x, size_t n, const struct ibv_sge *sg)
{
	wr_finish(x, sg, (uint32_t)n, NULL, 0);
}

static void wr_set_inline(struct ibv_qp_ex *x, void *addr, size_t length)
{
	struct ibv_data_buf b = { addr, length };

	wr_finish(x, NULL, 0, &b, 1);
}

static void wr_set_inline_list(struct ibv_qp_ex *x, size_t n, const struct ibv_data_buf *l)
{
	wr_finish(x, NULL, 0, l, (uint32_t)n);
}

void gv_qp_init_wr_ops(struct gv_qp *q)
{
	struct ibv_qp_ex *x = &q->qpx;

	x->wr_start = wr_start;
	x->wr_complete = wr_complete;
	x->wr_abort = wr_abort;
	x->wr_rdma_write = wr_rdma_write;
	x->wr_rdma_write_imm = wr_rdma_write_imm;
	x->wr_send = wr_send;
	x->wr_send_imm = wr_send_imm;
	x->wr_rdma_read = wr_rdma_read;
	x->wr_atomic_cmp_swp = wr_cas;
	x->wr_atomic_fetch_add = wr_fadd;
	x->wr_local_inv = wr_local_inv;
	x->wr_send_inv = wr_send_inv;
	x->wr_bind_mw = wr_bind_mw;
	x->wr_send_tso = wr_send_tso;
	x->wr_set_ud_addr = wr_set_ud_addr;
	x->wr_set_xrc_srqn = wr_set_xrc_srqn;
	x->wr_atomic_write = wr_atomic_write;
	x->wr_set_sge = wr_set_sge;
	x->wr_set_sge_list = wr_set_sge_list;
	x->wr_set_inline_data = wr_set_inline;
	x->wr_set_inline_data_list = wr_set_inline_list;
	x->comp_mask = 0;
}

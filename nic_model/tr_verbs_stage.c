/* SPDX-License-Identifier: MIT */
/*
 * tr_verbs_stage.c - bounce buffers: local data segments in memory the verbs
 * device cannot reach (GPU memory without dma-buf; any memory of a context
 * opened with GDAK_VERBS_STAGE=all, the test hook) pass through registered
 * host memory.
 *
 *   outbound  WRITE / SEND source: gathered into the bounce room before
 *             ibv_post_send (the work request carries one SGE);
 *   inbound   READ destination, atomic result: the device writes the bounce
 *             room, and the bytes are scattered to the segments after the
 *             verbs completion and before the mlx5 CQE is written, so a
 *             device that sees the CQE sees the data;
 *   receive   a receive WQE with a staged segment is posted with bounce
 *             room of its whole capacity; the message is scattered at its
 *             completion (IBV_WC_RECV only: WRITE_IMM consumes no data).
 *
 * Room comes from two rings per QP (send, receive) of GDAK_VERBS_BOUNCE
 * bytes each (default 256 KiB, registered on first use); a request larger
 * than a ring gets a one-off buffer registered for it alone (slow, but any
 * size works).  A full ring makes the request wait (NM_TX_BUSY) for earlier
 * ones to complete; a full receive ring delays posting receive WQEs, which
 * a peer sees as RNR and retries.
 *
 * All of it runs on the QP's NIC thread (post_send / qp_poll).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "nm_dma.h"
#include "nm_loc.h"
#include "tr_verbs.h"

static int ring_setup(struct tv_qp *tq, struct tv_ring *r)
{
	if (r->buf)
		return 0;
	r->size = tq->tc->bounce;
	if (posix_memalign((void **)&r->buf, 4096, r->size)) {
		r->buf = NULL;
		return -ENOMEM;
	}
	r->mr = ibv_reg_mr(tq->tc->pd, r->buf, r->size, IBV_ACCESS_LOCAL_WRITE);
	if (!r->mr) {
		int ret = errno ? -errno : -ENOMEM;
		GDAK_ERR_RL("qp", tq->qp->id, "verbs: bounce buffer of %u bytes: ibv_reg_mr: %s",
			    r->size, strerror(-ret));
		free(r->buf);
		r->buf = NULL;
		return ret;
	}
	r->head = r->tail = 0;
	return 0;
}

int tv_ring_take(struct tv_ring *r, uint32_t len, uint64_t *off, uint64_t *end)
{
	uint64_t start, o;

	if (len > r->size)
		return -E2BIG;
	if (r->head == r->tail)
		r->head = r->tail = 0; /* empty: start over at offset 0 */
	start = r->head;
	o = start % r->size;
	if (o + len > r->size)
		start += r->size - o; /* never split: skip the ring's end */
	if (start + len - r->tail > r->size)
		return 1;
	*off = start % r->size;
	r->head = start + len;
	*end = r->head;
	return 0;
}

void tv_ring_put(struct tv_ring *r, uint64_t end)
{
	if (end > r->tail && end <= r->head)
		r->tail = end; /* in order: everything before it is done too */
}

static void stage_release(struct tv_ring *r, struct tv_stage *st)
{
	if (st->oneoff) {
		void *b = st->oneoff->addr;
		ibv_dereg_mr(st->oneoff);
		free(b);
		st->oneoff = NULL;
	} else {
		tv_ring_put(r, st->ring_end);
	}
	st->used = false;
}

/* Room for st->len bytes: 0, 1 (ring full), or -errno. */
static int stage_alloc(struct tv_qp *tq, struct tv_ring *r, struct tv_stage *st)
{
	int ret = ring_setup(tq, r);

	if (ret)
		return ret;
	st->oneoff = NULL;
	st->ring_end = 0;
	if (st->len > r->size) {
		void *b;
		if (posix_memalign(&b, 4096, st->len))
			return -ENOMEM;
		st->oneoff = ibv_reg_mr(tq->tc->pd, b, st->len, IBV_ACCESS_LOCAL_WRITE);
		if (!st->oneoff) {
			ret = errno ? -errno : -ENOMEM;
			free(b);
			GDAK_WARN_RL("qp", tq->qp->id, "verbs: one-off bounce buffer of %u bytes: %s",
				     st->len, strerror(-ret));
			return ret;
		}
		st->buf = b;
		st->lkey = st->oneoff->lkey;
	} else {
		uint64_t off;
		/* an empty ring starts over at 0 (tv_ring_take): so does its undo */
		st->ring_prev = r->head == r->tail ? 0 : r->head;
		ret = tv_ring_take(r, st->len, &off, &st->ring_end);
		if (ret)
			return ret;
		st->buf = r->buf + off;
		st->lkey = r->mr->lkey;
	}
	st->used = true;
	return 0;
}

/* Copy between the bounce bytes and the segments (in: bounce -> segments). */
static int stage_copy(struct tv_stage *st, bool in, uint32_t bytes)
{
	uint32_t off = 0;

	for (unsigned i = 0; i < st->nseg && off < bytes; i++) {
		uint32_t n = st->seg[i].len < bytes - off ? st->seg[i].len : bytes - off;
		void *seg = (void *)st->seg[i].addr;
		int r = in ? nm_dma_copy(seg, st->seg[i].kind, st->buf + off, GDAK_MEM_HOST, n) :
			     nm_dma_copy(st->buf + off, GDAK_MEM_HOST, seg, st->seg[i].kind, n);
		if (r)
			return r;
		off += n;
	}
	return 0;
}

int tv_stage_out(struct tv_qp *tq, unsigned slot, struct tv_stage *plan, bool need_in,
		 struct ibv_sge *sge, const char **rule)
{
	struct tv_stage *st;
	int r;

	if (!tq->sst) {
		tq->sst = calloc(NM_MAX_INFLIGHT, sizeof(*tq->sst));
		if (!tq->sst)
			goto nomem;
	}
	st = &tq->sst[slot];
	if (st->used) /* a late completion never came (flushed op): forget it */
		stage_release(&tq->sring, st);
	memcpy(st->seg, plan->seg, plan->nseg * sizeof(plan->seg[0]));
	st->nseg = plan->nseg;
	st->len = plan->len;
	r = stage_alloc(tq, &tq->sring, st);
	if (r == 1)
		return 1;
	if (r)
		goto nomem;
	if (!need_in && stage_copy(st, false, st->len)) {
		stage_release(&tq->sring, st);
		*rule = "verbs_stage_copy";
		GDAK_WARN_RL("qp", tq->qp->id, "verbs: copying %u bytes to the bounce buffer "
			     "failed", st->len);
		return MLX5_CQE_SYNDROME_LOCAL_PROT_ERR;
	}
	*sge = (struct ibv_sge){ .addr = (uintptr_t)st->buf, .length = st->len, .lkey = st->lkey };
	return 0;
nomem:
	*rule = "verbs_bounce";
	GDAK_WARN_RL("qp", tq->qp->id, "verbs: no bounce buffer for %u bytes", plan->len);
	return MLX5_CQE_SYNDROME_LOCAL_PROT_ERR;
}

void tv_stage_undo(struct tv_qp *tq, unsigned slot)
{
	struct tv_stage *st = &tq->sst[slot];

	if (!st->used)
		return;
	if (st->oneoff) {
		stage_release(&tq->sring, st);
		return;
	}
	/* it was the last allocation; its start is not the old head when the
	 * take skipped the ring's end */
	tq->sring.head = st->ring_prev;
	st->used = false;
}

int tv_stage_in(struct tv_qp *tq, unsigned slot, bool copy, bool swap)
{
	struct tv_stage *st;
	int r = 0;

	if (!tq->sst || !tq->sst[slot].used)
		return 0;
	st = &tq->sst[slot];
	if (copy) {
		if (swap && st->len == 8) { /* the mlx5 contract: original value big-endian */
			uint64_t v;
			memcpy(&v, st->buf, 8);
			v = gdak_htobe64(v);
			memcpy(st->buf, &v, 8);
		}
		if (stage_copy(st, true, st->len)) {
			GDAK_WARN_RL("qp", tq->qp->id, "verbs: copying %u bytes from the bounce "
				     "buffer failed", st->len);
			r = MLX5_CQE_SYNDROME_LOCAL_PROT_ERR;
		}
	}
	stage_release(&tq->sring, st);
	return r;
}

int tv_stage_recv(struct tv_qp *tq, uint64_t idx, struct tv_stage *plan, struct ibv_sge *sge)
{
	struct tv_stage *st;
	int r;

	if (!tq->rst) {
		tq->rst = calloc(tq->qp->rq_cnt, sizeof(*tq->rst));
		if (!tq->rst)
			return -ENOMEM;
	}
	st = &tq->rst[idx & (tq->qp->rq_cnt - 1)];
	if (st->used)
		stage_release(&tq->rring, st);
	memcpy(st->seg, plan->seg, plan->nseg * sizeof(plan->seg[0]));
	st->nseg = plan->nseg;
	st->len = plan->len;
	r = stage_alloc(tq, &tq->rring, st);
	if (r)
		return r;
	*sge = (struct ibv_sge){ .addr = (uintptr_t)st->buf, .length = st->len, .lkey = st->lkey };
	return 0;
}

int tv_stage_recv_done(struct tv_qp *tq, uint64_t idx, uint32_t bytes)
{
	struct tv_stage *st;
	int r = 0;

	if (!tq->rst || !tq->rst[idx & (tq->qp->rq_cnt - 1)].used)
		return 0;
	st = &tq->rst[idx & (tq->qp->rq_cnt - 1)];
	if (bytes > st->len)
		bytes = st->len;
	if (bytes && stage_copy(st, true, bytes)) {
		GDAK_WARN_RL("qp", tq->qp->id, "verbs: copying a %u-byte receive from the bounce "
			     "buffer failed", bytes);
		r = MLX5_CQE_SYNDROME_LOCAL_PROT_ERR;
	}
	stage_release(&tq->rring, st);
	return r;
}

void tv_stage_reset(struct tv_qp *tq)
{
	for (unsigned i = 0; tq->sst && i < NM_MAX_INFLIGHT; i++)
		if (tq->sst[i].used)
			stage_release(&tq->sring, &tq->sst[i]);
	for (unsigned i = 0; tq->rst && i < tq->qp->rq_cnt; i++)
		if (tq->rst[i].used)
			stage_release(&tq->rring, &tq->rst[i]);
	tq->sring.head = tq->sring.tail = 0;
	tq->rring.head = tq->rring.tail = 0;
}

static void ring_fini(struct tv_ring *r)
{
	if (r->mr)
		ibv_dereg_mr(r->mr);
	free(r->buf);
	memset(r, 0, sizeof(*r));
}

void tv_stage_fini(struct tv_qp *tq)
{
	tv_stage_reset(tq);
	ring_fini(&tq->sring);
	ring_fini(&tq->rring);
	free(tq->sst);
	free(tq->rst);
	tq->sst = tq->rst = NULL;
}

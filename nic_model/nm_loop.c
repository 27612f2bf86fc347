/* SPDX-License-Identifier: MIT */
/*
 * nm_loop.c - the in-process transport: both QPs live in this process, so
 * a request is applied to the peer directly through its responder, on the
 * requester's NIC thread, and completes inside post_send.
 *
 * Connect looks the peer up in the process-wide QPN registry; the peer's
 * gdak_qp_info.node must be this process's (another process needs
 * "emu:udp").  A peer destroyed while connected disappears from the
 * loop_qp.peer of the QPs connected to it (loop_qp_fini), and their later
 * requests complete with TRANSPORT_RETRY_EXC_ERR, what an RC requester
 * gets from a peer that no longer answers.
 */
#include <errno.h>
#include <sched.h>
#include <stdlib.h>

#include "nm_dma.h"
#include "nm_loc.h"

#define NM_COPIES 16 /* GPU copies in flight per QP */

/*
 * A loop QP's state (qp->tr_priv).  cp*: WRITEs whose GPU copy is in
 * flight, oldest first (copies of one NIC thread land in the order started:
 * only the head is polled); cp_op[i] is the op in qp->inflight[] that cp[i]
 * completes.  lkc / rkc: the fast WRITE path's key caches (NIC thread).
 */
struct loop_qp {
	struct nm_qp *qp;
	_Atomic(struct nm_qp *) peer; /* the connected QP (cleared when it goes) */
	struct loop_qp *next;	      /* loop_qps */
	struct nm_dma_ticket cp[NM_COPIES];
	struct nm_op *cp_op[NM_COPIES];
	uint64_t cp_src[NM_COPIES];	/* local source range of each copy, taken */
	uint32_t cp_src_len[NM_COPIES]; /* when it started (the overlap check) */
	uint32_t cp_head, cp_tail;
	struct nm_key_cache lkc, rkc;
};

/* Every loop QP, so that one going away is forgotten as anybody's peer;
 * connect looks its peer up and stores it under the same lock. */
static pthread_mutex_t loop_lock = PTHREAD_MUTEX_INITIALIZER;
static struct loop_qp *loop_qps;

static inline struct loop_qp *lq(const struct nm_qp *qp)
{
	return qp->tr_priv;
}

static inline struct nm_qp *loop_peer(const struct nm_qp *qp)
{
	return atomic_load_explicit(&lq(qp)->peer, memory_order_acquire);
}

/* The requester asks loop_exec_wait while copies are in flight. */
static inline void gate_update(struct nm_qp *qp, const struct loop_qp *l)
{
	qp->tr_gate = l->cp_head != l->cp_tail;
}

static int loop_qp_init(struct nm_qp *qp)
{
	struct loop_qp *l = calloc(1, sizeof(*l));

	if (!l)
		return -ENOMEM;
	l->qp = qp;
	pthread_mutex_lock(&loop_lock);
	l->next = loop_qps;
	loop_qps = qp->tr_priv = l;
	pthread_mutex_unlock(&loop_lock);
	return 0;
}

static int loop_qp_info(struct nm_qp *qp, struct gdak_qp_info *out)
{
	out->transport = GDAK_QPI_LOOP;
	return 0;
}

static int loop_qp_connect(struct nm_qp *qp, const struct gdak_qp_info *peer)
{
	struct nm_qp *p;

	if (peer->transport != GDAK_QPI_LOOP || peer->node != qp->ctx->node) {
		GDAK_ERR("qp", qp->id, "peer QP 0x%x is not an in-process loop QP (transport %u, "
			 "node %llx, ours %llx): open both sides with \"emu\", or use \"emu:udp\" "
			 "between processes", peer->qpn, peer->transport,
			 (unsigned long long)peer->node, (unsigned long long)qp->ctx->node);
		return -EINVAL;
	}
	pthread_mutex_lock(&loop_lock);
	p = nm_qp_lookup(peer->qpn);
	if (p)
		atomic_store(&lq(qp)->peer, p);
	pthread_mutex_unlock(&loop_lock);
	if (!p) {
		GDAK_ERR("qp", qp->id, "peer QP 0x%x does not exist (destroyed?)", peer->qpn);
		return -ENOENT;
	}
	return 0;
}

/* Resolve every local segment first: a bad lkey fails locally (LOCAL_PROT)
 * before anything reaches the responder, as on hardware. */
static int check_local(struct nm_qp *qp, struct nm_op *op, unsigned need)
{
	for (unsigned i = 0; i < op->nseg; i++) {
		void *a;
		uint32_t l;
		struct nm_mr *mr;
		int r = nm_check_local_sge(qp, op, i, need, &a, &l, &mr, &op->rule);
		if (r)
			return r;
	}
	return 0;
}

static int do_write_send(struct nm_qp *qp, struct nm_qp *peer, struct nm_op *op)
{
	struct nm_resp_msg m;
	uint32_t off = 0;
	int r;

	r = nm_resp_begin_wqe(peer, &m, op->wqe_index, op->opcode, op->raddr, op->rkey, op->len,
			      op->imm);
	if (r) {
		op->rule = m.rule;
		return r;
	}
	if (op->flags & NM_OPF_INLINE) {
		r = nm_resp_write(&m, 0, op->inl, GDAK_MEM_HOST, op->len);
	} else {
		for (unsigned i = 0; i < op->nseg && !r; i++) {
			void *a;
			uint32_t l;
			struct nm_mr *mr;

			r = nm_check_local_sge(qp, op, i, 0, &a, &l, &mr, &op->rule);
			if (!r && l)
				r = nm_resp_write(&m, off, a, mr->kind, l);
			off += l;
		}
	}
	if (r && !op->rule)
		op->rule = m.rule;
	return nm_resp_end(&m, r);
}

/*
 * GPU copies in flight.  A synchronous GPU copy per WQE pays the launch and
 * the completion wake-up every time (docs/CUDA.md "Asynchronous copies"):
 * a plain RDMA_WRITE of one segment that touches GPU memory on either side
 * instead starts its copy and stays PENDING; loop_qp_poll completes the
 * ops in the order their copies land, and the in-order retire step writes
 * the CQEs.  Everything else waits for the queue to drain first
 * (loop_exec_wait, which the requester asks while copies are in flight), which keeps IBA's ordering:
 * a fence, READ or atomic behind a WRITE, and a SEND / WRITE_IMM whose
 * receive completion must follow the data before it.
 */
/* gpumem: with a batching engine an inline WRITE into GPU memory joins the
 * pass's batch too (its bytes are staged when the copy starts). */
static int inline_async_ok(struct nm_qp *qp, const struct nm_op *op, const struct nm_dma_ops *d)
{
	struct nm_qp *peer = loop_peer(qp);
	struct nm_mr *r;

	if (!d->batching || !d->batching() || !peer)
		return 0;
	r = nm_mr_get(peer->ctx, op->rkey);
	return r && r->kind == GDAK_MEM_GPU;
}

static int async_ok(struct nm_qp *qp, const struct nm_op *op)
{
	const struct nm_dma_ops *d = nm_dma_get();
	struct nm_qp *peer;
	struct nm_mr *l, *r;
	uint64_t a;
	uint32_t len, lkey;

	if (op->opcode != MLX5_OPCODE_RDMA_WRITE || (op->flags & NM_OPF_FENCE) ||
	    d == &nm_dma_host_ops || !d->copy_start)
		return 0;
	if (op->flags & NM_OPF_INLINE)
		return inline_async_ok(qp, op, d);
	if (op->nseg != 1)
		return 0;
	gdak_mlx5_data_decode(&op->sge[0], &a, &len, &lkey);
	l = nm_mr_get(qp->ctx, lkey);
	peer = loop_peer(qp);
	if (!l || !peer)
		return 0;
	r = nm_mr_get(peer->ctx, op->rkey);
	return l->kind == GDAK_MEM_GPU || (r && r->kind == GDAK_MEM_GPU);
}

static int ranges_meet(uint64_t a, uint32_t alen, uint64_t b, uint32_t blen)
{
	return alen && blen && a < b + blen && b < a + alen;
}

/*
 * The engine runs the copies in flight on several streams, so two of them
 * can land in either order.  IBA orders the data of WQEs on one QP: a WRITE
 * whose destination meets the destination or the source of a copy still in
 * flight, or whose source meets such a destination, must land after it.
 * Returns -1 when nothing in flight meets it, the engine stream of the
 * copies it meets when they share one (the new copy goes on that stream,
 * behind them), or -2 when they are on several streams (it waits for the
 * queue to drain).
 */
static int meets_inflight(struct nm_qp *qp, const struct nm_op *op)
{
	const struct loop_qp *lp = lq(qp);
	int stream = -1;

	uint64_t src;
	uint32_t len, key;

	if (op->flags & NM_OPF_INLINE) /* gpumem: no source range in memory */
		src = 0, len = 0;
	else
		gdak_mlx5_data_decode(&op->sge[0], &src, &len, &key);
	for (uint32_t h = lp->cp_head; h != lp->cp_tail; h++) {
		uint32_t i = h % NM_COPIES;
		const struct nm_op *o = lp->cp_op[i];

		if (!ranges_meet(op->raddr, op->len, o->raddr, o->len) &&
		    !ranges_meet(op->raddr, op->len, lp->cp_src[i], lp->cp_src_len[i]) &&
		    !ranges_meet(src, len, o->raddr, o->len))
			continue;
		if (stream >= 0 && stream != lp->cp[i].stream)
			return -2;
		stream = lp->cp[i].stream;
	}
	return stream;
}

/* gpumem: does a copy in flight write into op's source range?  (A batching
 * engine stages a host source when the copy starts: only when not.) */
static int src_busy(struct nm_qp *qp, const struct nm_op *op)
{
	const struct loop_qp *lp = lq(qp);
	uint64_t src;
	uint32_t len, key;

	if (op->flags & NM_OPF_INLINE)
		return 0;
	gdak_mlx5_data_decode(&op->sge[0], &src, &len, &key);
	for (uint32_t h = lp->cp_head; h != lp->cp_tail; h++)
		if (ranges_meet(src, len, lp->cp_op[h % NM_COPIES]->raddr,
				lp->cp_op[h % NM_COPIES]->len))
			return 1;
	return 0;
}

/* Before executing op while copies are in flight: 1 when it must wait
 * (anything but another GPU WRITE waits for the queue to drain - IBA
 * ordering: fences, READs, atomics, SEND/WRITE_IMM completions must follow
 * the data - and a GPU WRITE waits while NM_COPIES are in flight). */
static int loop_exec_wait(struct nm_qp *qp, const struct nm_op *op)
{
	const struct loop_qp *lp = lq(qp);

	if (!async_ok(qp, op))
		return 1;
	return lp->cp_tail - lp->cp_head >= NM_COPIES || meets_inflight(qp, op) == -2;
}

static enum nm_tx_result do_write_async(struct nm_qp *qp, struct nm_qp *peer, struct nm_op *op)
{
	struct loop_qp *lp = lq(qp);
	uint32_t slot = lp->cp_tail % NM_COPIES;
	struct nm_dma_ticket *t = &lp->cp[slot];
	struct nm_resp_msg m;
	struct nm_mr *mr;
	uint32_t l;
	void *a;
	int r;

	r = nm_resp_begin_wqe(peer, &m, op->wqe_index, op->opcode, op->raddr, op->rkey, op->len,
			      op->imm);
	if (r) {
		op->rule = m.rule;
	} else {
		uint8_t kind = GDAK_MEM_HOST;
		uint32_t n = op->len;

		if (op->flags & NM_OPF_INLINE) { /* gpumem: inline_async_ok */
			a = (void *)(uintptr_t)op->inl;
			l = 0; /* no source range for the overlap checks */
		} else {
			r = nm_check_local_sge(qp, op, 0, 0, &a, &l, &mr, &op->rule);
			if (!r) {
				kind = mr->kind;
				n = l;
			}
		}
		if (!r) {
			t->stream = meets_inflight(qp, op); /* -1 any, else behind */
			t->src_busy = src_busy(qp, op);
			r = nm_resp_write_start(&m, 0, a, kind, n, t);
			if (r && !op->rule)
				op->rule = m.rule;
		}
	}
	if (!r && !t->done) {
		lp->cp_op[slot] = op;
		lp->cp_src[slot] = (uint64_t)(uintptr_t)a;
		lp->cp_src_len[slot] = l;
		lp->cp_tail++;
		gate_update(qp, lp);
		return NM_TX_PENDING;
	}
	op->status = (uint8_t)r;
	return NM_TX_DONE;
}

/* Complete the ops whose copies landed, oldest first. */
static int loop_qp_poll(struct nm_qp *qp)
{
	const struct nm_dma_ops *d = nm_dma_get();
	struct loop_qp *lp = lq(qp);
	int n = 0;

	while (lp->cp_head != lp->cp_tail) {
		uint32_t i = lp->cp_head % NM_COPIES;
		struct nm_op *op = lp->cp_op[i];
		int r = d->copy_poll(&lp->cp[i]);

		if (!r)
			break;
		if (r < 0) {
			GDAK_WARN_RL("qp", qp->id, "WQE %u (RDMA_WRITE): the GPU copy failed: %s",
				     op->wqe_index, gdak_strerror(r));
			if (!op->rule)
				op->rule = "copy_failed";
		}
		/* a failed copy is a local error; the QP goes to ERR and the
		 * WQEs behind it are flushed (nm_comp.c) */
		nm_comp_op_done(qp, op, r < 0 ? MLX5_CQE_SYNDROME_LOCAL_PROT_ERR : 0);
		lp->cp_head++;
		n++;
	}
	gate_update(qp, lp);
	return n;
}

/* Wait for the copies in flight and forget them (their ops are completed
 * with WR_FLUSH_ERR unless done); QP reset / error / destroy.  fini also
 * frees the tickets. */
static void loop_copies_drain(struct nm_qp *qp, int fini)
{
	struct loop_qp *lp = lq(qp);
	const struct nm_dma_ops *d;

	if (!lp || (lp->cp_head == lp->cp_tail && !fini))
		return;
	d = nm_dma_get();
	/* the copies read and write the application's memory: let them land
	 * (a GPU copy takes microseconds) before the ops or tickets go */
	while (lp->cp_head != lp->cp_tail) {
		uint32_t i = lp->cp_head % NM_COPIES;
		int r;

		while (!(r = d->copy_poll(&lp->cp[i])))
			sched_yield();
		nm_comp_op_done(qp, lp->cp_op[i], r < 0 ? MLX5_CQE_SYNDROME_LOCAL_PROT_ERR : 0);
		lp->cp_head++;
	}
	lp->cp_head = lp->cp_tail = 0;
	gate_update(qp, lp);
	if (fini && d->ticket_fini)
		for (unsigned i = 0; i < NM_COPIES; i++)
			d->ticket_fini(&lp->cp[i]);
}

static void loop_qp_error(struct nm_qp *qp)
{
	loop_copies_drain(qp, 0);
}
static void loop_req_reset(struct nm_qp *qp)
{
	loop_copies_drain(qp, 0);
}

/* Back to RESET: connected to nobody until the next connect. */
static void loop_qp_reset(struct nm_qp *qp)
{
	atomic_store(&lq(qp)->peer, NULL);
}

/* After the QP left its thread and the QPN registry: nobody keeps it as
 * a peer (the grace period that follows covers requests in flight). */
static void loop_qp_fini(struct nm_qp *qp)
{
	struct loop_qp *lp = lq(qp);

	if (!lp)
		return;
	loop_copies_drain(qp, 1);
	pthread_mutex_lock(&loop_lock);
	for (struct loop_qp **pp = &loop_qps; *pp;) {
		if (*pp == lp) {
			*pp = lp->next;
			continue;
		}
		if (atomic_load(&(*pp)->peer) == qp)
			atomic_store(&(*pp)->peer, NULL);
		pp = &(*pp)->next;
	}
	pthread_mutex_unlock(&loop_lock);
	qp->tr_priv = NULL;
	free(lp);
}

/*
 * Fast path: a plain RDMA_WRITE of one segment between host memory, the
 * loop transport's most common request.  The same checks as the
 * responder's (nm_resp.c: peer state, rkey, REMOTE_WRITE, bounds) and the
 * requester's (lkey, bounds) through per-QP key caches, then one copy,
 * without staging a struct nm_resp_msg.  Returns 1 when done; 0 sends the
 * op down the full path, which reports whatever failed.
 */
static int write_fast(struct nm_qp *qp, struct nm_qp *peer, const struct nm_op *op)
{
	struct nm_mr *l, *r;
	uint64_t a;
	uint32_t len, lkey;
	int st;

	if (op->nseg != 1 || (op->flags & NM_OPF_INLINE))
		return 0;
	gdak_mlx5_data_decode(&op->sge[0], &a, &len, &lkey);
	l = nm_mr_get_cached(&lq(qp)->lkc, qp->ctx, lkey);
	r = nm_mr_get_cached(&lq(qp)->rkc, peer->ctx, op->rkey);
	if (!l || !r || l->kind == GDAK_MEM_GPU || r->kind == GDAK_MEM_GPU ||
	    !(r->base.access & GDAK_ACCESS_REMOTE_WRITE) || !nm_mr_covers(l, a, len) ||
	    !nm_mr_covers(r, op->raddr, len))
		return 0;
	st = nm_qp_state(peer);
	if (st != GDAK_QPS_RTR && st != GDAK_QPS_RTS)
		return 0;
	memmove((void *)(uintptr_t)op->raddr, (const void *)(uintptr_t)a, len);
	return 1;
}

/*
 * gpumem: the fast path's checks, through the same key caches, for a plain
 * unfenced WRITE of one segment touching GPU memory while none of the QP's
 * copies is in flight (nothing to order it behind: the full path's
 * meets_inflight and src_busy would find nothing), then the engine's
 * asynchronous copy at once.  A CTA putting to GPU memory over and over
 * otherwise pays four key look-ups and the responder's message set-up per
 * WQE.  NM_TX_DONE / NM_TX_PENDING as do_write_async; -1 sends the op down
 * the full path (which reports whatever failed).
 */
static int write_fast_gpu(struct nm_qp *qp, struct nm_qp *peer, struct nm_op *op)
{
	struct loop_qp *lp = lq(qp);
	const struct nm_dma_ops *d;
	struct nm_dma_ticket *t;
	struct nm_mr *l, *r;
	uint64_t a;
	uint32_t len, lkey, slot;
	int st;

	if (op->nseg != 1 || (op->flags & (NM_OPF_INLINE | NM_OPF_FENCE)) ||
	    lp->cp_head != lp->cp_tail)
		return -1;
	gdak_mlx5_data_decode(&op->sge[0], &a, &len, &lkey);
	l = nm_mr_get_cached(&lp->lkc, qp->ctx, lkey);
	r = nm_mr_get_cached(&lp->rkc, peer->ctx, op->rkey);
	if (!l || !r || (l->kind != GDAK_MEM_GPU && r->kind != GDAK_MEM_GPU) ||
	    !(r->base.access & GDAK_ACCESS_REMOTE_WRITE) || !nm_mr_covers(l, a, len) ||
	    !nm_mr_covers(r, op->raddr, len) || op->len != len)
		return -1;
	st = nm_qp_state(peer);
	if (st != GDAK_QPS_RTR && st != GDAK_QPS_RTS)
		return -1;
	d = nm_dma_get();
	if (d == &nm_dma_host_ops || !d->copy_start)
		return -1;
	slot = lp->cp_tail % NM_COPIES;
	t = &lp->cp[slot];
	t->stream = -1;
	t->src_busy = 0;
	if (d->copy_start((void *)(uintptr_t)op->raddr, (enum gdak_mem_kind)r->kind,
			  (const void *)(uintptr_t)a, (enum gdak_mem_kind)l->kind, len, t)) {
		op->status = MLX5_CQE_SYNDROME_REMOTE_OP_ERR;
		op->rule = "copy_failed";
		return NM_TX_DONE;
	}
	if (t->done) {
		op->status = 0;
		return NM_TX_DONE;
	}
	lp->cp_op[slot] = op;
	lp->cp_src[slot] = a;
	lp->cp_src_len[slot] = len;
	lp->cp_tail++;
	gate_update(qp, lp);
	return NM_TX_PENDING;
}

static int do_read(struct nm_qp *qp, struct nm_qp *peer, struct nm_op *op)
{
	struct nm_resp_msg m;
	uint32_t off = 0;
	int r;

	r = nm_resp_begin_wqe(peer, &m, op->wqe_index, op->opcode, op->raddr, op->rkey, op->len, 0);
	for (unsigned i = 0; i < op->nseg && !r; i++) {
		void *a;
		uint32_t l;
		struct nm_mr *mr;

		r = nm_check_local_sge(qp, op, i, GDAK_ACCESS_LOCAL_WRITE, &a, &l, &mr, &op->rule);
		if (!r && l)
			r = nm_resp_read(&m, off, a, mr->kind, l);
		off += l;
	}
	if (r && !op->rule)
		op->rule = m.rule;
	return r;
}

static int do_atomic(struct nm_qp *qp, struct nm_qp *peer, struct nm_op *op)
{
	void *a;
	uint32_t l;
	struct nm_mr *mr;
	uint64_t orig, be;
	int r;

	r = nm_check_local_sge(qp, op, 0, GDAK_ACCESS_LOCAL_WRITE, &a, &l, &mr, &op->rule);
	if (r)
		return r;
	r = nm_resp_atomic(peer, op->opcode, op->raddr, op->rkey, op, &orig, &op->rule);
	if (r)
		return r;
	/* ConnectX returns the original value big-endian (network order), in
	 * the operand's size */
	if (op->asize == 4) {
		uint32_t be32 = gdak_htobe32((uint32_t)orig);

		return nm_dma_copy(a, mr->kind, &be32, GDAK_MEM_HOST, 4)
			       ? MLX5_CQE_SYNDROME_LOCAL_PROT_ERR
			       : 0;
	}
	be = gdak_htobe64(orig);
	return nm_dma_copy(a, mr->kind, &be, GDAK_MEM_HOST, 8) ? MLX5_CQE_SYNDROME_LOCAL_PROT_ERR : 0;
}

static enum nm_tx_result loop_post_send(struct nm_qp *qp, struct nm_op *op)
{
	struct nm_qp *peer;
	int r;

	if (__builtin_expect(qp->dc != NULL, 0)) {
		/* DCI: the peer is the DCT this WQE's address vector names */
		peer = nm_dc_target(qp, op);
		if (!peer)
			return NM_TX_DONE;
	} else {
		peer = loop_peer(qp);
		if (!peer) {
			op->status = MLX5_CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR;
			op->rule = "peer_gone";
			return NM_TX_DONE;
		}
	}
	if (op->opcode == MLX5_OPCODE_RDMA_WRITE) {
		if (write_fast(qp, peer, op)) {
			op->status = 0;
			return NM_TX_DONE;
		}
		/* (a DCI's GPU WRITEs copy synchronously: the asynchronous path
		 * follows the connected peer) */
		if (!qp->dc) {
			int f = write_fast_gpu(qp, peer, op);

			if (f >= 0)
				return (enum nm_tx_result)f;
			if (async_ok(qp, op))
				return do_write_async(qp, peer, op);
		}
	}
	switch (op->opcode) {
	case MLX5_OPCODE_RDMA_WRITE:
	case MLX5_OPCODE_RDMA_WRITE_IMM:
	case MLX5_OPCODE_SEND:
	case MLX5_OPCODE_SEND_IMM:
		/* a receive WQE must not be consumed for a request that fails
		 * locally; a plain WRITE checks its segments as it reads them */
		if (!(op->flags & NM_OPF_INLINE) && op->opcode != MLX5_OPCODE_RDMA_WRITE) {
			r = check_local(qp, op, 0);
			if (r)
				break;
		}
		r = do_write_send(qp, peer, op);
		break;
	case MLX5_OPCODE_RDMA_READ:
		r = check_local(qp, op, GDAK_ACCESS_LOCAL_WRITE);
		if (!r)
			r = do_read(qp, peer, op);
		break;
	case MLX5_OPCODE_ATOMIC_CS:
	case MLX5_OPCODE_ATOMIC_FA:
	case MLX5_OPCODE_ATOMIC_MASKED_CS:
	case MLX5_OPCODE_ATOMIC_MASKED_FA:
		r = do_atomic(qp, peer, op);
		break;
	default:
		r = MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR;
		op->rule = "bad_opcode";
		break;
	}
	if (r == NM_RESP_RNR)
		return NM_TX_BUSY;
	op->status = (uint8_t)r;
	return NM_TX_DONE;
}

const struct nm_transport_ops nm_tr_loop_ops = {
	.name = "loop",
	.qp_init = loop_qp_init,
	.qp_fini = loop_qp_fini,
	.qp_info = loop_qp_info,
	.qp_connect = loop_qp_connect,
	.post_send = loop_post_send,
	.exec_wait = loop_exec_wait,
	.req_reset = loop_req_reset,
	.qp_poll = loop_qp_poll,
	.qp_error = loop_qp_error,
	.qp_reset = loop_qp_reset,
};

/* SPDX-License-Identifier: MIT */
/*
 * nm_req.c - the requester: fetch the WQEs between the consumer and the
 * producer index, decode each into a struct nm_op (the checks, nm_check.c,
 * run as each fact is read) and execute them in order through the QP's
 * transport; the completer (nm_comp.c) retires them in order and, in ERR,
 * flushes.  nm_req_progress is one pass of a QP over all the stages.
 *
 * Per QP and pass it runs through these states (req_state_names, logged at
 * debug level where a QP stops):
 *   FETCH -> CHECK -> (FENCE_WAIT | COPY_WAIT | WAIT_CQ | DC_STREAM_WAIT)
 *   -> EXECUTE (RNR_WAIT: the transport said BUSY) -> RETIRE, and FLUSH in
 *   ERR.
 * At most NM_PASS_CAP WQEs per pass, so one busy QP cannot starve the
 * others of its NIC thread (cf. rxe's task budget).
 *
 * Ordering (IBA 9.5, RC): ops complete in WQE order.  The loop transport
 * finishes each op inside post_send; a packet transport returns PENDING and
 * completes later (nm_comp_op_done); either way CQEs are written by the
 * in-order retire step.  A fenced WQE (any non-zero fence mode, see
 * <gdak/mlx5.h>) does not start while an earlier RDMA_READ or atomic is
 * still outstanding (IBA 10.8.3.3).
 *
 * A WQE that fails a check, or whose execution fails, stops the fetch: the
 * ops before it retire normally, it gets an error CQE, the QP goes to ERR
 * and everything after it is flushed (nm_comp.c).
 */
#include "nm_dma.h"
#include "nm_loc.h"

enum nm_req_state {
	NM_REQ_FETCH,
	NM_REQ_CHECK,
	NM_REQ_FENCE_WAIT,
	NM_REQ_COPY_WAIT,
	NM_REQ_WAIT_CQ,
	NM_REQ_DC_STREAM_WAIT,
	NM_REQ_EXECUTE,
	NM_REQ_RNR_WAIT,
	NM_REQ_RETIRE,
	NM_REQ_FLUSH
};
static const char *const req_state_names[] = { "FETCH",	    "CHECK",	"FENCE_WAIT",
					       "COPY_WAIT", "WAIT_CQ",	"DC_STREAM_WAIT",
					       "EXECUTE",   "RNR_WAIT", "RETIRE",
					       "FLUSH" };

/* The requester stops (or starts flushing) in state st at op: logged once
 * per change, so a QP that waits says where and why.  Returns 0 (the
 * WQEs consumed). */
static int req_stop(struct nm_qp *qp, enum nm_req_state st, const struct nm_op *op)
{
	if (qp->req_state == st)
		return 0;
	qp->req_state = (uint8_t)st;
	GDAK_DBG("qp", qp->id, "requester %s at WQE %u (%s)", req_state_names[st], op->wqe_index,
		 gdak_mlx5_opcode_name(op->opcode));
	return 0;
}

void nm_req_reset(struct nm_qp *qp)
{
	if (qp->ctx->tr->req_reset)
		qp->ctx->tr->req_reset(qp);
	qp->ci = 0;
	qp->if_head = qp->if_tail = 0;
	qp->reads_outstanding = 0;
	qp->busy_since_ns = 0;
	qp->stopped = false;
	qp->traced_to = 0;
	qp->wait_warned = 0;
	qp->req_state = NM_REQ_FETCH;
}

int nm_req_busy(const struct nm_qp *qp)
{
	return qp->if_head != qp->if_tail || qp->busy_since_ns || qp->ci != qp->pi ||
	       (qp->rg && qp->rg->sq_want > qp->pi); /* a GPU-ring fetch in flight */
}

static void masked_decode(struct nm_op *op, const uint8_t *p, uint32_t seg)
{
	if (op->asize == 4 && op->opcode == MLX5_OPCODE_ATOMIC_MASKED_FA) {
		const struct gdak_mlx5_atomic32_fa_seg *f = (const void *)p;

		op->swap_add = gdak_be32toh(f->add);
		op->swap_mask = gdak_be32toh(f->field_boundary);
		op->compare = op->compare_mask = 0;
	} else if (op->asize == 4) {
		const struct gdak_mlx5_atomic32_cs_seg *m = (const void *)p;

		op->swap_add = gdak_be32toh(m->swap);
		op->compare = gdak_be32toh(m->compare);
		op->swap_mask = gdak_be32toh(m->swap_mask);
		op->compare_mask = gdak_be32toh(m->compare_mask);
	} else if (seg == 16) {
		const struct gdak_mlx5_atomic64_fa_seg *f = (const void *)p;

		op->swap_add = gdak_be64toh(f->add);
		op->swap_mask = gdak_be64toh(f->field_boundary);
		op->compare = op->compare_mask = 0;
	} else {
		const struct gdak_mlx5_masked_atomic_seg *m = (const void *)p;

		op->swap_add = gdak_be64toh(m->swap_add);
		op->compare = gdak_be64toh(m->compare);
		op->swap_mask = gdak_be64toh(m->swap_add_mask);
		op->compare_mask = gdak_be64toh(m->compare_mask);
	}
}

/* FETCH, the ctrl segment: a fresh op for the WQE at qp->ci (w, its slot). */
static void fetch_ctrl(struct nm_qp *qp, struct nm_op *op, const uint8_t *w,
		       struct gdak_mlx5_ctrl *c)
{
	gdak_mlx5_ctrl_decode((const struct mlx5_wqe_ctrl_seg *)(const void *)w, c);
	/* Every field starts at 0, in two halves: GCC turns one memset of the
	 * whole op (or an initializer) into a rep stos, whose start-up cost
	 * every WQE would pay; each half is a few vector stores
	 * (docs/BENCHMARKS.md, "Session 13").  A half past 128 bytes brings
	 * the rep stos back, so the build stops there: split again. */
	_Static_assert(offsetof(struct nm_op, sge) <= 128 &&
			       sizeof(struct nm_op) - offsetof(struct nm_op, sge) <= 128,
		       "each memset half of struct nm_op must stay within 128 bytes");
	memset(op, 0, offsetof(struct nm_op, sge));
	memset(&op->sge, 0, sizeof(*op) - offsetof(struct nm_op, sge));
	op->ci = qp->ci;
	op->wqe_index = (uint16_t)qp->ci;
	op->opcode = c->opcode;
	op->fm_ce_se = c->fm_ce_se;
	op->ds = c->ds;
	op->bbs = (uint8_t)gdak_mlx5_wqe_bbs(c->ds);
	op->flags = NM_OPF_WQE;
	op->imm = c->imm;
	op->asize = 8;
	op->opmod = c->opmod;
	if (c->fm_ce_se & GDAK_MLX5_CE_MASK)
		op->flags |= NM_OPF_SIGNALED;
	if (c->fm_ce_se & GDAK_MLX5_FENCE_MASK)
		op->flags |= NM_OPF_FENCE;
}

/* FETCH, the rest: the op's WQEBBs as one linear WQE (one that runs past
 * the ring's end continues at its start: copied to qp->wrap), traced once
 * (a WQE fetched again after a fence, copy or CQ wait is not traced again). */
static const uint8_t *fetch_wqe(struct nm_qp *qp, struct nm_op *op, const uint8_t *w, uint32_t slot)
{
	if (__builtin_expect(slot + op->bbs > qp->sq_cnt, 0)) {
		size_t first = (size_t)(qp->sq_cnt - slot) * 64;

		memcpy(qp->wrap, w, first);
		memcpy(qp->wrap + first, qp->sq, (size_t)op->bbs * 64 - first);
		w = qp->wrap;
	}
	if (op->ci >= qp->traced_to) {
		nm_trace_wqe(qp, op->wqe_index, w, op->bbs);
		qp->traced_to = op->ci + op->bbs;
	}
	return w;
}

/* DECODE, the data segments from p on (rem DS left): inline data or
 * scatter/gather entries. */
static void decode_data(struct nm_qp *qp, struct nm_op *op, const struct gdak_mlx5_op_info *info,
			const uint8_t *p, uint32_t rem)
{
	uint32_t bc = gdak_be32toh(*(const uint32_t *)(const void *)p);
	uint64_t total = 0;

	if (bc & MLX5_INLINE_SEG) {
		uint32_t l = bc & ~(uint32_t)MLX5_INLINE_SEG;

		if (nm_check_inline(qp, op, info, l, rem))
			return;
		op->inl = p + 4;
		op->len = l;
		op->flags |= NM_OPF_INLINE;
		return;
	}
	op->sge = (const struct mlx5_wqe_data_seg *)(const void *)p;
	op->nseg = (uint8_t)rem;
	for (uint32_t i = 0; i < rem; i++)
		total += gdak_be32toh(op->sge[i].byte_count);
	nm_check_sges(qp, op, info, total);
}

/* DECODE: the segments after ctrl of the linear WQE w into op (seg_bytes:
 * a masked atomic's segment, nm_check_ctrl says how long). */
static void decode(struct nm_qp *qp, struct nm_op *op, const struct gdak_mlx5_op_info *info,
		   const uint8_t *w, uint32_t seg_bytes)
{
	const uint8_t *p = w + 16;
	uint32_t rem;

	if (op->av_ds) {
		op->av = p;
		p += 16 * (size_t)op->av_ds;
	}
	if (info->flags & GDAK_OPF_RADDR) {
		gdak_mlx5_raddr_decode((const struct mlx5_wqe_raddr_seg *)(const void *)p, &op->raddr,
				       &op->rkey);
		p += 16;
	}
	if (info->flags & GDAK_OPF_ATOMIC) {
		gdak_mlx5_atomic_decode((const struct mlx5_wqe_atomic_seg *)(const void *)p,
					&op->swap_add, &op->compare);
		p += 16;
	} else if (info->flags & GDAK_OPF_MASKED) {
		masked_decode(op, p, seg_bytes);
		p += seg_bytes;
	}
	if (op->opcode == GDAK_MLX5_OPCODE_WAIT) {
		const struct gdak_mlx5_wait_seg *ws = (const void *)p;

		op->compare = gdak_be32toh(ws->max_index);
		op->rkey = gdak_be32toh(ws->qpn_cqn) & 0xffffff;
		nm_check_wait_opmod(qp, op);
		return;
	}
	if (!(info->flags & GDAK_OPF_DATA))
		return;
	rem = op->ds - (uint32_t)(p - w) / 16;
	if (rem)
		decode_data(qp, op, info, p, rem);
}

/* FETCH -> CHECK -> DECODE of the WQE at qp->ci into op; a check that
 * fires leaves op->status set and stops there. */
static void fetch_decode(struct nm_qp *qp, struct nm_op *op)
{
	uint32_t slot = (uint32_t)qp->ci & qp->sq_mask;
	const uint8_t *w = qp->sq + (size_t)slot * 64;
	const struct gdak_mlx5_op_info *info;
	struct gdak_mlx5_ctrl c;
	uint32_t seg_bytes = 32;
	int av = 0;

	fetch_ctrl(qp, op, w, &c);
	info = gdak_mlx5_op_info(c.opcode);
	if (nm_check_bad_opcode(qp, op, info))
		return;
	if (info->flags & GDAK_OPF_READS_REMOTE)
		op->flags |= NM_OPF_READS;
	/* DCI: the address vector sits between ctrl and the rest */
	if (__builtin_expect(qp->dc != NULL, 0) && (av = nm_dc_decode_av(qp, op, w, c.ds)) < 0)
		return;
	if (nm_check_ctrl(qp, op, info, &c, (uint32_t)av, &seg_bytes))
		return;
	decode(qp, op, info, fetch_wqe(qp, op, w, slot), seg_bytes);
}

/*
 * WAIT (cross-channel): 1 while the CQ named has not produced the CQE with
 * index op->compare.  The CQE count is compared in 32 bits, the width of
 * max_index, so an index behind the count (by less than 2^31) has passed.
 * A CQ number that names no CQ fails the WAIT as ConnectX fails a WQE
 * naming an object that does not exist: LOCAL_QP_OP_ERR (gdak's choice,
 * DESIGN.md "Checks").
 */
static int wait_pending(struct nm_qp *qp, struct nm_op *op)
{
	struct nm_cq *cq = nm_cq_lookup(op->rkey);
	uint32_t produced;

	if (nm_check_wait_bad_cq(qp, op, cq))
		return 0;
	produced = (uint32_t)nm_cq_produced(cq);
	if ((int32_t)(produced - (uint32_t)op->compare - 1u) >= 0)
		return 0;
	nm_check_wait_index_ahead(qp, op, cq, produced);
	return 1;
}

/* DUMP: a local operation - its data segments are checked as a send's
 * (lkey, bounds) and nothing goes to the wire; it completes in WQE order
 * like any other WQE (with a fence, after the READs before it). */
static void dump_local(struct nm_qp *qp, struct nm_op *op)
{
	for (unsigned i = 0; i < op->nseg && !op->status; i++) {
		void *a;
		uint32_t l;
		struct nm_mr *mr;
		const char *rule = NULL;
		int r = nm_check_local_sge(qp, op, i, 0, &a, &l, &mr, &rule);

		if (r) {
			op->status = (uint8_t)r;
			op->rule = rule;
		}
	}
}

/* EXECUTE: the head of the unexecuted WQEs.  Returns WQEs consumed (0/1). */
static int execute_one(struct nm_qp *qp)
{
	struct nm_op *op = &qp->inflight[qp->if_tail % NM_MAX_INFLIGHT];
	enum nm_tx_result r = NM_TX_DONE;

	fetch_decode(qp, op);
	if (!op->status && (op->flags & NM_OPF_FENCE) && qp->reads_outstanding)
		return req_stop(qp, NM_REQ_FENCE_WAIT, op); /* re-decoded next pass */
	if (__builtin_expect(qp->tr_gate, 0) && !op->status && qp->ctx->tr->exec_wait(qp, op))
		return req_stop(qp, NM_REQ_COPY_WAIT, op); /* the transport's earlier work first */
	if (__builtin_expect(op->opcode == GDAK_MLX5_OPCODE_WAIT, 0) && !op->status &&
	    wait_pending(qp, op))
		return req_stop(qp, NM_REQ_WAIT_CQ, op); /* the CQE waited for is not there yet */
	if (__builtin_expect(op->av_ds != 0, 0) && !op->status && nm_dc_stream_enter(qp, op))
		return req_stop(qp, NM_REQ_DC_STREAM_WAIT, op); /* the old target drains first */
	if (!op->status)
		nm_fault_wqe(qp, op);
	/* (a DUMP is never a 4-byte atomic: the order of these two is free) */
	if (__builtin_expect(op->asize == 4, 0) && !op->status)
		nm_check_atomic_transport(qp, op);
	if (__builtin_expect(op->opcode == GDAK_MLX5_OPCODE_DUMP, 0) && !op->status) {
		dump_local(qp, op);
	} else if (!op->status && op->opcode != MLX5_OPCODE_NOP &&
		   op->opcode != GDAK_MLX5_OPCODE_WAIT) {
		r = qp->ctx->tr->post_send(qp, op);
		if (r == NM_TX_BUSY) {
			if (nm_check_rnr_retry(qp, op))
				return req_stop(qp, NM_REQ_RNR_WAIT, op); /* offered again */
			r = NM_TX_DONE;
		}
	}
	qp->req_state = NM_REQ_EXECUTE;
	qp->busy_since_ns = 0;
	nm_stat_add(&qp->st.wqes, 1);
	if (!op->status)
		nm_stat_add(&qp->st.bytes, op->len);
	qp->ci += op->bbs;
	qp->if_tail++;
	if (r == NM_TX_PENDING) {
		if (op->flags & NM_OPF_READS)
			qp->reads_outstanding++;
	} else {
		op->flags |= NM_OPF_DONE;
	}
	if (op->status)
		qp->stopped = true;
	return 1;
}

int nm_req_progress(struct nm_qp *qp)
{
	int st = nm_qp_state(qp);
	int work = 0;

	if (__builtin_expect(st == GDAK_QPS_RTS, 1)) {
		work += nm_db_poll(qp);
		if (qp->ctx->tr->qp_poll)
			work += qp->ctx->tr->qp_poll(qp);
		for (int n = 0; n < NM_PASS_CAP && qp->ci != qp->pi && !qp->stopped &&
				qp->if_tail - qp->if_head < NM_MAX_INFLIGHT;
		     n++) {
			if (__builtin_expect(qp->bf_wait == qp->ci, 0)) {
				int v = nm_db_bf_verify(qp);
				if (v > 0)
					break;
				if (v < 0)
					qp->bf_bad = qp->ci;
			}
			if (!execute_one(qp))
				break;
			work++;
			/* retire as we go: with the loop transport the window never fills */
			if (qp->if_tail - qp->if_head == NM_MAX_INFLIGHT)
				nm_comp_retire(qp);
		}
		work += nm_comp_retire(qp);
	} else if (st == GDAK_QPS_ERR) {
		if (__builtin_expect(qp->dc != NULL, 0))
			nm_dc_streams_close(qp, "closed (QP in ERR) to");
		if (qp->req_state != NM_REQ_FLUSH) {
			qp->req_state = NM_REQ_FLUSH;
			GDAK_DBG("qp", qp->id, "requester %s from WQE %u",
				 req_state_names[NM_REQ_FLUSH], (unsigned)(uint16_t)qp->ci);
		}
		work += nm_comp_flush_sq(qp);
		if (qp->rq_cnt)
			work += nm_resp_flush(qp);
	} else if (st == GDAK_QPS_RTR && qp->ctx->tr->qp_poll) {
		work += qp->ctx->tr->qp_poll(qp);
	}
	return work;
}

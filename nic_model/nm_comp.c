/* SPDX-License-Identifier: MIT */
/*
 * nm_comp.c - the completer: transports' op_done, the in-order retire, mlx5
 * CQEs, error CQEs, flushes.
 *
 * A CQE is written body first and op_own last with release ordering, so
 * device code that sees the new owner bit (its acquire) sees the whole CQE.
 * The owner bit is the wrap parity of the CQE's index (mlx5 PRM "CQE
 * ownership"; gdak_mlx5_cqe_op_own).
 *
 * Requester CQEs only when the WQE asked (CQ_UPDATE) or on error; an error
 * CQE moves the QP to ERR and every later WQE completes with WR_FLUSH_ERR
 * (one CQE each, as hardware does), receive WQEs on the receive CQ alike.
 *
 * CQ overrun: before writing, the producer is compared with the consumer
 * counter the device publishes in the CQ doorbell record (24 bits).  A full
 * CQ in strict mode is a violation (rule cq_overrun): hardware raises a CQ
 * error and moves the QP to ERR, and the CQE is lost - the model does the
 * same.  Relaxed mode overwrites (the device asked for it).  Device code
 * must therefore keep the CQ doorbell record current - unless the CQ was
 * created with overrun-ignore (PRM CQ context `oi`, GDAK_QP_F_*CQ_OVERRUN_
 * IGNORE): then the record is never read and CQEs are written regardless,
 * as ConnectX does for GPUNetIO's and NVSHMEM's CQs.
 *
 * Collapsed CQ (PRM `cc`): every CQE goes to entry 0.  Its owner bit and
 * wqe_counter are those the CQE would carry at its own index n of the ring
 * (owner = n / ncqe parity), so a consumer that tracks the count sees the
 * owner flip as on a normal CQ; one that watches wqe_counter (NVSHMEM)
 * sees it advance.  A collapsed CQ cannot overrun.
 *
 * External CQs (nm_ext.h) may be shared by QPs served by different NIC
 * threads and written by responders running on yet others: every CQE is
 * built and published under the CQ's producer lock (nm_cq_lock), so slot
 * choice, the overrun check, the collapsed stage and pi stay one sequence.
 */
#include "nm_loc.h"

int nm_comp_cq_room(struct nm_qp *qp, struct nm_cq *cq)
{
	uint32_t ci, used;

	if (cq->flags & (NM_CQ_OI | NM_CQ_CC))
		return 1;
	ci = gdak_be32toh(__atomic_load_n(cq->dbrec, __ATOMIC_ACQUIRE)) & 0xffffff;
	/* relaxed: another producer of a shared CQ may be storing it; the
	 * slot is chosen again under the CQ's lock */
	used = ((uint32_t)__atomic_load_n(&cq->pi, __ATOMIC_RELAXED) - ci) & 0xffffff;
	if (__builtin_expect(used >= cq->ncqe && cq->rg && cq->rg->dbrec, 0)) {
		/* the consumer counter lives in GPU memory: look again there */
		nm_rg_cq_rec_read(cq);
		ci = gdak_be32toh(__atomic_load_n(cq->dbrec, __ATOMIC_ACQUIRE)) & 0xffffff;
		used = ((uint32_t)__atomic_load_n(&cq->pi, __ATOMIC_RELAXED) - ci) & 0xffffff;
	}
	return used < cq->ncqe;
}

/* The slot for the next CQE, or NULL when it is lost to an overrun.
 * wqe_index: the (send or receive) WQE the CQE is for, named by the report. */
static struct mlx5_cqe64 *cq_slot(struct nm_qp *qp, struct nm_cq *cq, uint16_t wqe_index)
{
	if (__builtin_expect(!nm_comp_cq_room(qp, cq), 0) && nm_check_cq_overrun(qp, cq, wqe_index))
		return NULL;
	/* collapsed: built aside, then stored over entry 0 (cq_publish) */
	if (cq->flags & NM_CQ_CC)
		return &cq->stage;
	return &cq->cqes[cq->pi & (cq->ncqe - 1)];
}

/* A collapsed CQ's entry 0 is rewritten while the device may be reading
 * it: NVSHMEM polls its wqe_counter, GPUNetIO its owner bit, and each then
 * reads the other.  The HCA's 64-byte write never shows a torn CQE; here
 * the body goes first and the last 8 bytes (QPN, wqe_counter, signature,
 * op_own) in one release store, so whichever a consumer polls, it sees
 * the others of the same CQE. */
static void cc_store(struct nm_cq *cq, uint8_t own)
{
	uint8_t *d = (uint8_t *)(void *)&cq->cqes[0];
	const uint8_t *s = (const uint8_t *)(const void *)&cq->stage;
	uint64_t v;

	for (int i = 0; i < 56; i += 8) {
		memcpy(&v, s + i, 8);
		__atomic_store_n((uint64_t *)(void *)(d + i), v, __ATOMIC_RELAXED);
	}
	cq->stage.op_own = own;
	memcpy(&v, s + 56, 8);
	__atomic_store_n((uint64_t *)(void *)(d + 56), v, __ATOMIC_RELEASE);
}

/*
 * Stream-ordered CQEs (the CUDA engine with GDAK_CUDA_CQE=stream, docs/
 * CUDA.md): while the data of earlier WQEs is still queued on this NIC
 * thread's GPU stream, the CQE's visible part - the last 8 bytes with
 * op_own, or all of a collapsed CQ's entry - is queued behind it instead of
 * stored now.  The slot, the body, the trace and pi are decided here as
 * always; only the moment the device sees the owner flip moves.  CQEs of
 * one CQ from different NIC threads may then become visible out of order:
 * harmless where each has its slot (consumers poll in order), not on a
 * shared collapsed CQ.  A CQ the GPU cannot write (GPU-memory rings go
 * through nm_ring_gpu.c, memory the driver does not know) or a shared
 * collapsed one makes the engine wait for the queue to land first.
 * 1: queued (store nothing).
 */
static int cqe_queued(struct nm_cq *cq, struct mlx5_cqe64 *cqe, uint8_t own)
{
	const struct nm_dma_ops *d = nm_dma_get();
	int8_t w;
	uint64_t v[8];

	if (__builtin_expect(!d->cqe_tail, 1))
		return 0;
	w = atomic_load_explicit(&cq->gpu_writable, memory_order_relaxed);
	if (!w) {
		w = d->gpu_writable && d->gpu_writable(cq->cqes, (size_t)cq->ncqe * 64) ? 1 : -1;
		atomic_store_explicit(&cq->gpu_writable, w, memory_order_relaxed);
	}
	/* a collapsed CQ shared by QPs of several NIC threads: one thread's
	 * queued entry could land after another's later one, stored now */
	if (cq->rg || w < 0 || ((cq->flags & NM_CQ_CC) && cq->ext))
		return d->cqe_tail(NULL, NULL, 0, 0);
	if (cq->flags & NM_CQ_CC) {
		memcpy(v, &cq->stage, 64);
		((uint8_t *)v)[63] = own;
		return d->cqe_tail(&cq->cqes[0], v, 8, 1);
	}
	memcpy(v, (const uint8_t *)(const void *)cqe + 56, 8);
	((uint8_t *)v)[7] = own;
	return d->cqe_tail((uint8_t *)(void *)cqe + 56, v, 1, 1);
}

static void cq_publish(struct nm_qp *qp, struct nm_cq *cq, struct mlx5_cqe64 *cqe, uint8_t opcode)
{
	uint8_t own = gdak_mlx5_cqe_op_own(opcode, cq->pi, cq->ncqe);
	const struct mlx5_cqe64 *queued = NULL;
	struct mlx5_cqe64 shown;

	/* the WQEs fetched before it are traced first: once the device sees
	 * the CQE it may reuse their slots */
	nm_trace_pend_flush_if();
	if (cq->flags & NM_CQ_CC) {
		if (cqe_queued(cq, cqe, own)) {
			/* the trace records what the device will see */
			cq->stage.op_own = own;
			queued = &cq->stage;
		} else {
			cc_store(cq, own);
		}
		cqe = &cq->cqes[0];
	} else if (cqe_queued(cq, cqe, own)) {
		memcpy(&shown, cqe, 64);
		shown.op_own = own;
		queued = &shown;
	} else {
		__atomic_store_n(&cqe->op_own, own, __ATOMIC_RELEASE);
	}
	if (__builtin_expect(cq->rg != NULL, 0) && cq->rg->cqes)
		nm_rg_cqe(cq, cqe, cq->flags & NM_CQ_CC ? 0 : (uint32_t)cq->pi & (cq->ncqe - 1));
	NM_TRACE(qp, gdak_trace_cqe, qp->base.qpn, cq->cqn, (uint32_t)cq->pi,
		 queued ? queued : cqe);
	(void)queued;
	/* release: a WAIT on this CQ (another QP's thread) that sees the new
	 * count also sees the CQE */
	__atomic_store_n(&cq->pi, cq->pi + 1, __ATOMIC_RELEASE);
	/* the receive CQ is written by the peer's thread, an external CQ by
	 * any: counters there are shared */
	if (cq == qp->rcq || cq->ext)
		__atomic_fetch_add(&qp->st.cqes, 1, __ATOMIC_RELAXED);
	else
		nm_stat_add(&qp->st.cqes, 1);
}

static void write_err(struct nm_qp *qp, struct nm_cq *cq, uint8_t cqe_op, uint8_t synd,
		      uint8_t wqe_op, uint16_t wqe_index)
{
	struct mlx5_cqe64 *slot;
	struct gdak_mlx5_err_cqe *e;

	nm_cq_lock(cq);
	slot = cq_slot(qp, cq, wqe_index);
	e = (struct gdak_mlx5_err_cqe *)(void *)slot;
	if (!slot) {
		nm_cq_unlock(cq);
		return;
	}
	memset(e, 0, 63);
	e->syndrome = synd;
	/* vendor syndrome: what ConnectX reports for flushes (0xf9), else 0 */
	e->vendor_err_synd = synd == MLX5_CQE_SYNDROME_WR_FLUSH_ERR ? 0xf9 : 0;
	e->s_wqe_opcode_qpn = gdak_htobe32((uint32_t)wqe_op << 24 | (qp->base.qpn & 0xffffff));
	e->wqe_counter = gdak_htobe16(wqe_index);
	cq_publish(qp, cq, slot, cqe_op);
	nm_cq_unlock(cq);
	if (synd == MLX5_CQE_SYNDROME_WR_FLUSH_ERR)
		__atomic_fetch_add(&qp->st.flushed, 1, __ATOMIC_RELAXED);
	else
		__atomic_fetch_add(&qp->st.errors, 1, __ATOMIC_RELAXED);
}

void nm_comp_send(struct nm_qp *qp, struct nm_op *op)
{
	struct mlx5_cqe64 *cqe;

	if (__builtin_expect(!op->status, 1)) {
		if (!(op->flags & NM_OPF_SIGNALED))
			return;
		struct nm_cq *cq = qp->scq;

		nm_cq_lock(cq);
		cqe = cq_slot(qp, cq, op->wqe_index);
		if (cqe) {
			memset(cqe, 0, 63);
			cqe->byte_cnt = gdak_htobe32(op->len);
			cqe->sop_drop_qpn = gdak_htobe32(qp->base.qpn & 0xffffff);
			cqe->wqe_counter = gdak_htobe16(op->wqe_index);
			cq_publish(qp, cq, cqe, MLX5_CQE_REQ);
		}
		nm_cq_unlock(cq);
		return;
	}
	if (op->status == MLX5_CQE_SYNDROME_WR_FLUSH_ERR) {
		nm_comp_flush(qp, op->wqe_index, op->opcode);
		return;
	}
	GDAK_WARN_RL("qp", qp->id, "WQE %u (%s) failed: %s%s%s", op->wqe_index,
		     gdak_mlx5_opcode_name(op->opcode), gdak_mlx5_syndrome_name(op->status),
		     op->rule ? ", rule " : "", op->rule ? op->rule : "");
	nm_qp_set_error(qp, op->status, op->opcode, op->wqe_index, op->rule,
			"WQE %u (%s) completed with %s%s%s%s", op->wqe_index,
			gdak_mlx5_opcode_name(op->opcode), gdak_mlx5_syndrome_name(op->status),
			op->rule ? " (rule " : "", op->rule ? op->rule : "", op->rule ? ")" : "");
	if (op->rule && op->rule[0] && !(op->flags & NM_OPF_VIOLATION))
		NM_TRACE(qp, gdak_trace_violation, qp->base.qpn, op->wqe_index, op->rule, op->status,
			 gdak_mlx5_syndrome_name(op->status));
	write_err(qp, qp->scq, MLX5_CQE_REQ_ERR, op->status, op->opcode, op->wqe_index);
}

void nm_comp_flush(struct nm_qp *qp, uint16_t wqe_index, uint8_t opcode)
{
	write_err(qp, qp->scq, MLX5_CQE_REQ_ERR, MLX5_CQE_SYNDROME_WR_FLUSH_ERR, opcode, wqe_index);
}

/* caller holds qp->resp_lock */
void nm_comp_recv(struct nm_qp *qp, uint8_t cqe_opcode, uint16_t wqe_index, uint32_t byte_cnt,
		  uint32_t imm, uint8_t syndrome, uint8_t opcode)
{
	struct mlx5_cqe64 *cqe;

	if (syndrome) {
		write_err(qp, qp->rcq, MLX5_CQE_RESP_ERR, syndrome, opcode, wqe_index);
		return;
	}
	nm_cq_lock(qp->rcq);
	cqe = cq_slot(qp, qp->rcq, wqe_index);
	if (cqe) {
		memset(cqe, 0, 63);
		cqe->byte_cnt = gdak_htobe32(byte_cnt);
		cqe->imm_inval_pkey = imm;
		cqe->sop_drop_qpn = gdak_htobe32(qp->base.qpn & 0xffffff);
		cqe->wqe_counter = gdak_htobe16(wqe_index);
		cq_publish(qp, qp->rcq, cqe, cqe_opcode);
	}
	nm_cq_unlock(qp->rcq);
}

void nm_comp_op_done(struct nm_qp *qp, struct nm_op *op, uint8_t status)
{
	if (op->flags & NM_OPF_DONE)
		return;
	if (status && !op->status)
		op->status = status;
	if (op->flags & NM_OPF_READS)
		qp->reads_outstanding--;
	op->flags |= NM_OPF_DONE;
	if (op->status)
		qp->stopped = true;
}

/* RETIRE: CQEs in WQE order for the done ops at the head. */
int nm_comp_retire(struct nm_qp *qp)
{
	int n = 0;

	while (qp->if_head != qp->if_tail) {
		struct nm_op *op = &qp->inflight[qp->if_head % NM_MAX_INFLIGHT];

		if (!(op->flags & NM_OPF_DONE))
			break;
		if (nm_fault_cqe(qp, op))
			break;
		if (nm_qp_state(qp) == GDAK_QPS_ERR && !nm_comp_cq_room(qp, qp->scq))
			break; /* flushing waits for the device to consume */
		if (nm_qp_state(qp) == GDAK_QPS_ERR && !op->status && qp->err_set) {
			/* the QP failed meanwhile (responder, modify): flushed */
			nm_comp_flush(qp, op->wqe_index, op->opcode);
		} else {
			nm_comp_send(qp, op);
		}
		qp->if_head++;
		n++;
	}
	return n;
}

/* FLUSH (QP in ERR): in-flight ops and posted WQEs complete with WR_FLUSH_ERR. */
int nm_comp_flush_sq(struct nm_qp *qp)
{
	int n = 0;
	uint64_t p;

	if (qp->if_head != qp->if_tail && qp->ctx->tr->qp_error)
		qp->ctx->tr->qp_error(qp);
	while (qp->if_head != qp->if_tail) {
		struct nm_op *op = &qp->inflight[qp->if_head % NM_MAX_INFLIGHT];
		int r;

		if (!(op->flags & NM_OPF_DONE))
			nm_comp_op_done(qp, op, MLX5_CQE_SYNDROME_WR_FLUSH_ERR);
		r = nm_comp_retire(qp);
		if (!r)
			break; /* no CQ room, or a delayed CQE: next pass */
		n += r;
	}
	if (qp->if_head != qp->if_tail)
		return n;

	p = nm_db_flush_producer(qp);
	qp->pi = p;
	nm_rg_sq_need(qp, p);
	while (qp->ci < p && n < NM_PASS_CAP) {
		const uint8_t *w = qp->sq + ((uint32_t)qp->ci & qp->sq_mask) * 64;
		struct gdak_mlx5_ctrl c;
		uint32_t bbs;

		if (!nm_comp_cq_room(qp, qp->scq))
			break;
		gdak_mlx5_ctrl_decode((const struct mlx5_wqe_ctrl_seg *)(const void *)w, &c);
		bbs = gdak_mlx5_wqe_bbs(c.ds);
		if (bbs > p - qp->ci)
			bbs = (uint32_t)(p - qp->ci);
		nm_comp_flush(qp, (uint16_t)qp->ci, c.opcode);
		qp->ci += bbs;
		n++;
	}
	qp->stopped = false;
	qp->busy_since_ns = 0;
	return n;
}

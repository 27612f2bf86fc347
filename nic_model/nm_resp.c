/* SPDX-License-Identifier: MIT */
/*
 * nm_resp.c - the responder: applies requests that arrive for a QP.
 *
 * Checks in the order IBA 9.7.5 / C9-88 lists them for RC: QP state, rkey
 * valid, access right, range inside the region (REMOTE_ACCESS_ERR for each,
 * the "remote access error" NAK), atomics 8-byte aligned (REMOTE_INVAL_REQ,
 * "invalid request" NAK), then for SEND / RDMA_WRITE_IMM a receive WQE:
 * none posted is RNR (the requester retries), one too small is a local
 * length error on the responder (RESP_ERR CQE, responder QP to ERR, the
 * requester sees REMOTE_INVAL_REQ_ERR), one with a bad lkey a local
 * protection error on the responder (the requester sees REMOTE_OP_ERR).
 * A responder QP not in RTR/RTS drops requests: the requester runs out of
 * retries, TRANSPORT_RETRY_EXC_ERR.
 *
 * Responder states (for logs): CHK_STATE, CHK_RKEY, CHK_RWQE, DATA, DONE, ERROR.
 */
#include <stdio.h>

#include "nm_dma.h"
#include "nm_loc.h"

enum nm_resp_state { NM_RESP_CHK_STATE, NM_RESP_CHK_RKEY, NM_RESP_CHK_RWQE, NM_RESP_DATA,
		     NM_RESP_DONE, NM_RESP_ERROR };
static const char *const resp_state_names[] = {"CHK_STATE", "CHK_RKEY", "CHK_RWQE", "DATA",
					       "DONE", "ERROR"};

/* The request is refused in state st: synd for the requester, the rule
 * that fired and why (logged, rate-limited). */
static int refuse(struct nm_resp_msg *m, enum nm_resp_state st, int synd, const char *rule,
		  const char *why)
{
	m->rule = rule;
	if (m->req_wqe != NM_WQE_NONE)
		GDAK_WARN_RL("qp", m->qp->id, "responder %s: %s (%s) for WQE %u of QP 0x%x: %s",
			     resp_state_names[st], rule, gdak_mlx5_syndrome_name((uint8_t)synd),
			     m->req_wqe, m->qp->peer_info.qpn, why);
	else
		GDAK_WARN_RL("qp", m->qp->id, "responder %s: %s (%s): %s", resp_state_names[st],
			     rule, gdak_mlx5_syndrome_name((uint8_t)synd), why);
	return synd;
}

/*
 * The WQE index a responder-side violation names: the requester's WQE
 * when the transport knows it (the loop transport), otherwise the receive
 * WQE the request consumed or would consume next - the responder's own
 * work request, as on hardware (the receive CQE names it).
 */
static uint16_t viol_index(const struct nm_resp_msg *m)
{
	if (m->req_wqe != NM_WQE_NONE)
		return (uint16_t)m->req_wqe;
	if (m->has_rwqe)
		return m->rwqe_index;
	return (uint16_t)m->qp->rq_ci;
}

uint32_t nm_resp_rq_avail(struct nm_qp *qp)
{
	uint16_t rec = (uint16_t)gdak_be32toh(__atomic_load_n(&qp->dbrec[MLX5_RCV_DBR], __ATOMIC_ACQUIRE));
	uint32_t avail = (uint16_t)(rec - (uint16_t)qp->rq_ci);

	/* GPU-memory RQ or record: the record is read there when the shadow
	 * shows nothing posted, the WQEs fetched when not in the shadow yet */
	if (__builtin_expect(qp->rg != NULL, 0) &&
	    (!avail || (qp->rg->rq && qp->rq_ci + avail > qp->rg->rq_have)))
		avail = nm_rg_rq_refresh(qp);
	return avail;
}

static int rkey_check(struct nm_resp_msg *m, struct nm_qp *qp, uint32_t need, uint64_t va,
		      uint32_t rkey, uint64_t len)
{
	struct nm_mr *mr;
	const char *rule;
	char why[128];
	int r = nm_check_rkey(qp, need, va, rkey, len, &mr, &rule, why, sizeof(why));

	if (r)
		return refuse(m, NM_RESP_CHK_RKEY, r, rule, why);
	m->mr = mr;
	m->va = (uint8_t *)(uintptr_t)va;
	return 0;
}

/* Receive-side failure: RESP_ERR CQE for the consumed WQE, responder to ERR. */
static void rwqe_fail(struct nm_resp_msg *m, uint8_t synd, const char *rule)
{
	struct nm_qp *qp = m->qp;

	pthread_spin_lock(&qp->resp_lock);
	nm_comp_recv(qp, MLX5_CQE_RESP_ERR, m->rwqe_index, 0, 0, synd, m->opcode);
	pthread_spin_unlock(&qp->resp_lock);
	nm_qp_set_error(qp, synd, m->opcode, m->rwqe_index, rule,
			"receive WQE %u failed: %s (%s)", m->rwqe_index, gdak_mlx5_syndrome_name(synd),
			rule);
	m->has_rwqe = false;
}

static int take_rwqe(struct nm_resp_msg *m)
{
	struct nm_qp *qp = m->qp;
	const struct mlx5_wqe_data_seg *seg;
	uint64_t cap = 0;
	uint32_t avail;
	const char *rule;
	char why[128];
	int r = nm_check_no_rq(qp, m->opcode, &rule, why, sizeof(why));

	if (r)
		return refuse(m, NM_RESP_CHK_RWQE, r, rule, why);
	pthread_spin_lock(&qp->resp_lock);
	avail = nm_resp_rq_avail(qp);
	if (avail == 0) {
		void (*refill)(void *) = atomic_load_explicit(&qp->rq_empty, memory_order_acquire);

		if (refill) {
			refill(qp->rq_empty_arg);
			avail = nm_resp_rq_avail(qp);
		}
	}
	r = nm_check_resp_rnr(qp, avail, &m->rule);
	if (r) {
		pthread_spin_unlock(&qp->resp_lock);
		return r;
	}
	if (avail > qp->rq_cnt) {
		pthread_spin_unlock(&qp->resp_lock);
		nm_check_rq_overrun(qp, avail, m->opcode);
		return refuse(m, NM_RESP_CHK_RWQE, MLX5_CQE_SYNDROME_REMOTE_OP_ERR, "rq_overrun",
			      "receive queue overrun");
	}
	m->rwqe_index = qp->rq_wqe_id ? qp->rq_wqe_id[qp->rq_ci & (qp->rq_cnt - 1)]
				      : (uint16_t)qp->rq_ci;
	seg = (const void *)(qp->rq + (size_t)(qp->rq_ci & (qp->rq_cnt - 1)) * qp->rq_stride);
	qp->rq_ci++;
	pthread_spin_unlock(&qp->resp_lock);
	__atomic_fetch_add(&qp->st.recvs, 1, __ATOMIC_RELAXED);
	m->has_rwqe = true;
	NM_TRACE(qp, gdak_trace_recv_wqe, qp->base.qpn, m->rwqe_index, seg, qp->rq_stride);

	m->nrsge = 0;
	for (uint32_t i = 0; i < qp->rq_max_sge && i < 16; i++) {
		uint64_t a;
		uint32_t l, lkey;
		struct nm_mr *mr;

		gdak_mlx5_data_decode(&seg[i], &a, &l, &lkey);
		if (lkey == MLX5_INVALID_LKEY)
			break; /* end of a short list (rdma-core convention) */
		mr = nm_mr_get(qp->ctx, lkey);
		rule = nm_check_recv_sge(qp, m->rwqe_index, i, mr, lkey, a, l);
		if (rule) {
			rwqe_fail(m, MLX5_CQE_SYNDROME_LOCAL_PROT_ERR, rule);
			return refuse(m, NM_RESP_CHK_RWQE, MLX5_CQE_SYNDROME_REMOTE_OP_ERR, rule,
				      "the receive WQE is bad (responder local protection error)");
		}
		m->rsge[m->nrsge].addr = (uint8_t *)(uintptr_t)a;
		m->rsge[m->nrsge].len = l;
		m->rsge[m->nrsge].mr = mr;
		m->nrsge++;
		cap += l;
	}
	m->cap = cap > UINT32_MAX ? UINT32_MAX : (uint32_t)cap;
	if (m->opcode != MLX5_OPCODE_RDMA_WRITE_IMM && !m->len_unknown) {
		r = nm_check_recv_too_small(m, m->len, &rule, why, sizeof(why));
		if (r) {
			rwqe_fail(m, MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR, rule);
			return refuse(m, NM_RESP_CHK_RWQE, r, rule, why);
		}
	}
	return 0;
}

/* A SEND of unknown length outgrew its receive WQE: a local length error on
 * the responder (its receive CQE, QP to ERR), an invalid request for the
 * requester (IBA 9.7.5.1.6, C9-88). */
static int too_long(struct nm_resp_msg *m, uint64_t need)
{
	const char *rule;
	char why[128];
	int r = nm_check_recv_too_small(m, need, &rule, why, sizeof(why));

	if (!r)
		return 0;
	if (m->has_rwqe)
		rwqe_fail(m, MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR, rule);
	return refuse(m, NM_RESP_DATA, r, rule, why);
}

/* length (nm_check_resp_length): refused in DATA */
static int seg_check(struct nm_resp_msg *m, uint32_t off, uint32_t len, bool need_mr, bool read)
{
	const char *rule;
	char why[128];
	int r = nm_check_resp_length(m, off, len, need_mr, read, &rule, why, sizeof(why));

	return r ? refuse(m, NM_RESP_DATA, r, rule, why) : 0;
}

int nm_resp_begin(struct nm_qp *qp, struct nm_resp_msg *m, uint8_t opcode, uint64_t va,
		  uint32_t rkey, uint32_t len, uint32_t imm)
{
	return nm_resp_begin_wqe(qp, m, NM_WQE_NONE, opcode, va, rkey, len, imm);
}

/* A message's fields, one by one: an initializer would also clear rsge[]
 * (nrsge says how much of it is used), a rep stos on every atomic. */
static void msg_init(struct nm_resp_msg *m, struct nm_qp *qp, uint32_t req_wqe, uint8_t opcode,
		     uint32_t len, uint32_t imm)
{
	m->qp = qp;
	m->req_wqe = req_wqe;
	m->opcode = opcode;
	m->len = len;
	m->imm = imm;
	m->mr = NULL;
	m->va = NULL;
	m->has_rwqe = false;
	m->rwqe_index = 0;
	m->nrsge = 0;
	m->len_unknown = false;
	m->cap = 0;
	m->rule = NULL;
}

int nm_resp_begin_wqe(struct nm_qp *qp, struct nm_resp_msg *m, uint32_t req_wqe, uint8_t opcode,
		      uint64_t va, uint32_t rkey, uint32_t len, uint32_t imm)
{
	const char *rule;
	char why[128];
	int r;

	msg_init(m, qp, req_wqe, opcode, len, imm);
	/* only a SEND may start without its length (no RETH carries it) */
	m->len_unknown = len == NM_RESP_LEN_UNKNOWN &&
			 (opcode == MLX5_OPCODE_SEND || opcode == MLX5_OPCODE_SEND_IMM);
	r = nm_check_resp_ready(qp, &rule, why, sizeof(why));
	if (!r)
		r = nm_check_resp_opcode(opcode, &rule, why, sizeof(why));
	if (r)
		return refuse(m, NM_RESP_CHK_STATE, r, rule, why);
	switch (opcode) {
	case MLX5_OPCODE_RDMA_WRITE:
		return rkey_check(m, qp, GDAK_ACCESS_REMOTE_WRITE, va, rkey, len);
	case MLX5_OPCODE_RDMA_READ:
		return rkey_check(m, qp, GDAK_ACCESS_REMOTE_READ, va, rkey, len);
	case MLX5_OPCODE_RDMA_WRITE_IMM:
		r = rkey_check(m, qp, GDAK_ACCESS_REMOTE_WRITE, va, rkey, len);
		if (r)
			return r;
		return take_rwqe(m);
	default: /* SEND, SEND_IMM (nm_check_resp_opcode) */
		return take_rwqe(m);
	}
}

int nm_resp_write(struct nm_resp_msg *m, uint32_t off, const void *src, uint8_t src_kind,
		  uint32_t len)
{
	const uint8_t *s = src;
	int r = m->len_unknown ? too_long(m, (uint64_t)off + len) /* the receive WQE bounds it */
			       : seg_check(m, off, len, false, false);

	if (r)
		return r;
	if (m->mr)
		return nm_dma_copy(m->va + off, m->mr->kind, s, src_kind, len) ?
			       MLX5_CQE_SYNDROME_REMOTE_OP_ERR : 0;
	/* scatter into the receive WQE's segments */
	for (unsigned i = 0; i < m->nrsge && len; i++) {
		uint32_t l = m->rsge[i].len;
		uint32_t n;

		if (off >= l) {
			off -= l;
			continue;
		}
		n = l - off < len ? l - off : len;
		if (nm_dma_copy(m->rsge[i].addr + off, m->rsge[i].mr->kind, s, src_kind, n))
			return MLX5_CQE_SYNDROME_REMOTE_OP_ERR;
		s += n;
		len -= n;
		off = 0;
	}
	return 0;
}

int nm_resp_write_start(struct nm_resp_msg *m, uint32_t off, const void *src, uint8_t src_kind,
			uint32_t len, struct nm_dma_ticket *t)
{
	int r = seg_check(m, off, len, true, false);

	if (r)
		return r;
	if (nm_dma_get()->copy_start(m->va + off, (enum gdak_mem_kind)m->mr->kind, src,
				     (enum gdak_mem_kind)src_kind, len, t)) {
		m->rule = "copy_failed";
		return MLX5_CQE_SYNDROME_REMOTE_OP_ERR;
	}
	return 0;
}

int nm_resp_read(struct nm_resp_msg *m, uint32_t off, void *dst, uint8_t dst_kind, uint32_t len)
{
	int r = seg_check(m, off, len, true, true);

	if (r)
		return r;
	return nm_dma_copy(dst, dst_kind, m->va + off, m->mr->kind, len) ?
		       MLX5_CQE_SYNDROME_REMOTE_OP_ERR : 0;
}

int nm_resp_imm(struct nm_resp_msg *m, uint32_t imm)
{
	m->imm = imm;
	if (m->has_rwqe)
		return 0; /* consumed at an earlier try of this packet */
	m->opcode = MLX5_OPCODE_RDMA_WRITE_IMM;
	return take_rwqe(m);
}

int nm_resp_end_len(struct nm_resp_msg *m, int status, uint32_t len)
{
	if (m->len_unknown && !status) {
		if (m->has_rwqe) {
			int r = too_long(m, len);

			if (r)
				return r;
		}
		m->len = len;
		m->len_unknown = false;
	}
	return nm_resp_end(m, status);
}

int nm_resp_end(struct nm_resp_msg *m, int status)
{
	struct nm_qp *qp = m->qp;
	const char *rule;
	char why[128];
	uint8_t cqe_op;

	if (!m->has_rwqe)
		return status;
	if (!status) {
		int r = nm_check_resp_len_known(m, &rule, why, sizeof(why));

		if (r)
			status = refuse(m, NM_RESP_DATA, r, rule, why);
	}
	if (status) {
		rwqe_fail(m, MLX5_CQE_SYNDROME_REMOTE_ABORTED_ERR, "aborted");
		return status;
	}
	cqe_op = m->opcode == MLX5_OPCODE_RDMA_WRITE_IMM ? MLX5_CQE_RESP_WR_IMM
		 : m->opcode == MLX5_OPCODE_SEND_IMM	 ? MLX5_CQE_RESP_SEND_IMM
							 : MLX5_CQE_RESP_SEND;
	pthread_spin_lock(&qp->resp_lock);
	nm_comp_recv(qp, cqe_op, m->rwqe_index, m->len, m->imm, 0, m->opcode);
	pthread_spin_unlock(&qp->resp_lock);
	m->has_rwqe = false;
	return 0;
}

/*
 * The 4-byte extended atomics (ctrl opmod 0x08) on a native uint32_t.  Host
 * memory: a 32-bit CAS loop on the word itself.  GPU memory: the engine has
 * 8-byte atomics only, so the op becomes the equivalent masked 8-byte op on
 * the aligned word holding it (the other half is compared and swapped
 * under zero masks, and a carry out of this half is dropped), which is
 * atomic for both halves.
 */
static int atomic32(struct nm_resp_msg *m, const struct nm_op *op, uint8_t opcode, uint64_t *orig)
{
	int fa = opcode == MLX5_OPCODE_ATOMIC_MASKED_FA;
	uint32_t add = (uint32_t)op->swap_add, cmp = (uint32_t)op->compare;
	uint32_t am = (uint32_t)op->swap_mask, cm = (uint32_t)op->compare_mask;

	if (m->mr->kind != GDAK_MEM_GPU) {
		uint32_t *p = (uint32_t *)(void *)m->va, cur, want;

		cur = __atomic_load_n(p, __ATOMIC_SEQ_CST);
		for (;;) {
			want = fa ? (uint32_t)nm_masked_fa(cur, add, am | 0x80000000u)
				  : (uint32_t)nm_masked_cs(cur, add, cmp, am, cm);
			if (want == cur ||
			    __atomic_compare_exchange_n(p, &cur, want, false, __ATOMIC_SEQ_CST,
							__ATOMIC_SEQ_CST))
				break;
		}
		*orig = cur;
		return 0;
	} else {
		unsigned sh = ((uintptr_t)m->va & 4) * 8;
		uint8_t *word = (uint8_t *)((uintptr_t)m->va & ~(uintptr_t)7);
		uint64_t old = 0;
		int r;

		if (fa)
			r = nm_dma_get()->atomic64(word, GDAK_MEM_GPU, NM_ATOMIC_MFA,
						   (uint64_t)add << sh, 0,
						   (uint64_t)(am | 0x80000000u) << sh, 0, &old);
		else
			r = nm_dma_get()->atomic64(word, GDAK_MEM_GPU, NM_ATOMIC_MCS,
						   (uint64_t)add << sh, (uint64_t)cmp << sh,
						   (uint64_t)am << sh, (uint64_t)cm << sh, &old);
		*orig = (uint32_t)(old >> sh);
		return r;
	}
}

int nm_resp_atomic(struct nm_qp *qp, uint8_t opcode, uint64_t va, uint32_t rkey,
		   const struct nm_op *op, uint64_t *orig, const char **rule)
{
	uint32_t sz = op->asize == 4 ? 4 : 8;
	struct nm_resp_msg m;
	enum nm_atomic_op aop;
	char why[128];
	int r;

	msg_init(&m, qp, op->flags & NM_OPF_WQE ? op->wqe_index : NM_WQE_NONE, opcode, sz, 0);
	r = nm_check_resp_ready(qp, rule, why, sizeof(why));
	if (r) {
		r = refuse(&m, NM_RESP_CHK_STATE, r, *rule, why);
		*rule = m.rule;
		return r;
	}
	r = rkey_check(&m, qp, GDAK_ACCESS_REMOTE_ATOMIC, va, rkey, sz);
	if (!r && nm_check_atomic_unaligned(qp, viol_index(&m), m.req_wqe, opcode, va, sz)) {
		snprintf(why, sizeof(why), "target 0x%llx not %u-byte aligned",
			 (unsigned long long)va, sz);
		r = refuse(&m, NM_RESP_CHK_RKEY, MLX5_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR,
			   "atomic_unaligned", why);
	}
	if (r) {
		*rule = m.rule;
		return r;
	}
	if (sz == 4) {
		r = atomic32(&m, op, opcode, orig);
		if (r) {
			*rule = "atomic_failed";
			return MLX5_CQE_SYNDROME_REMOTE_OP_ERR;
		}
		return 0;
	}
	switch (opcode) {
	case MLX5_OPCODE_ATOMIC_FA: aop = NM_ATOMIC_FA; break;
	case MLX5_OPCODE_ATOMIC_CS: aop = NM_ATOMIC_CS; break;
	case MLX5_OPCODE_ATOMIC_MASKED_FA: aop = NM_ATOMIC_MFA; break;
	default: aop = NM_ATOMIC_MCS; break;
	}
	if (m.mr->kind == GDAK_MEM_GPU)
		r = nm_dma_get()->atomic64(m.va, GDAK_MEM_GPU, aop, op->swap_add, op->compare,
					   op->swap_mask, op->compare_mask, orig);
	else
		r = nm_dma_host_ops.atomic64(m.va, GDAK_MEM_HOST, aop, op->swap_add, op->compare,
					     op->swap_mask, op->compare_mask, orig);
	if (r) {
		*rule = "atomic_failed";
		return MLX5_CQE_SYNDROME_REMOTE_OP_ERR;
	}
	return 0;
}

int nm_resp_flush(struct nm_qp *qp)
{
	int n = 0;

	pthread_spin_lock(&qp->resp_lock);
	while (n < NM_PASS_CAP) {
		uint32_t avail = nm_resp_rq_avail(qp);

		if (!avail || avail > qp->rq_cnt || !nm_comp_cq_room(qp, qp->rcq))
			break;
		nm_comp_recv(qp, MLX5_CQE_RESP_ERR, (uint16_t)qp->rq_ci, 0, 0,
			     MLX5_CQE_SYNDROME_WR_FLUSH_ERR, MLX5_OPCODE_SEND);
		qp->rq_ci++;
		n++;
	}
	pthread_spin_unlock(&qp->resp_lock);
	return n;
}

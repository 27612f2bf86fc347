/* SPDX-License-Identifier: MIT */
/*
 * roce_resp.c - the RC responder (IBA vol. 1 9.7.5.2, 9.7.6).
 *
 * Packets are taken strictly in PSN order.  A packet ahead of the expected
 * PSN gets one "PSN sequence error" NAK per gap (C9-116: no further NAK
 * until the expected PSN arrives) and is dropped; one behind it is a
 * duplicate (9.7.5.2.1): SEND/WRITE duplicates are not applied again but
 * acknowledged, READ duplicates are executed again (from the PSN they ask
 * for), atomic duplicates are answered from the replay cache and never
 * applied twice.
 *
 * Responses go out in PSN order: read data and atomic ACKs queue as jobs;
 * the coalesced ACK/NAK (one pending record, the one covering most) goes
 * out once no job is ahead of it, so an ACK never overtakes read data it
 * would implicitly acknowledge.
 */
#include <errno.h>
#include <string.h>

#include "gdak_log.h"
#include "roce.h"

static uint32_t ack_cover(uint8_t syn, uint32_t psn)
{
	/* an ACK covers its PSN, a NAK everything before it */
	return (syn & AETH_TYPE_MASK) == AETH_ACK ? psn : psn_add(psn, -1);
}

static void set_ack(struct roce_qp *qp, uint8_t syn, uint32_t psn)
{
	if (qp->ack.pending) {
		int32_t d = psn_diff(ack_cover(syn, psn), ack_cover(qp->ack.syn, qp->ack.psn));
		int nak = (syn & AETH_TYPE_MASK) != AETH_ACK;

		if (d < 0 || (d == 0 && !nak))
			return;
	}
	qp->ack.pending = 1;
	qp->ack.syn = syn;
	qp->ack.psn = psn;
}

static uint8_t nak_code(int st)
{
	switch (st) {
	case MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR: return AETH_NAK_REM_ACCESS;
	case MLX5_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR:
	case MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR: return AETH_NAK_INVALID_REQ;
	default: return AETH_NAK_REM_OP;
	}
}

/* IBA 9.7.5.2.4-6: invalid request, access and operational errors are
 * fatal for the responder: NAK at the PSN, then the QP goes to ERR. */
static void fatal(struct roce_qp *qp, int st, const char *why)
{
	uint8_t code = nak_code(st);

	GDAK_WARN_RL("qp", qp->qpn, "responder error at PSN 0x%06x: %s (NAK code %u)",
		     qp->rseq->epsn, why, code);
	qp->ack.pending = 1; /* overrides whatever was pending */
	qp->ack.syn = AETH_NAK | code;
	qp->ack.psn = qp->rseq->epsn;
	qp->resp_err = 1;
	if (!qp->err_syn) {
		qp->err_syn = (uint8_t)st;
		qp->err_why = why;
	}
	ROCE_STAT(qp->stats, err_naks_sent);
	if (qp->rmsg.active) {
		qp->rmsg.active = 0;
		qp->ctx->ops->resp_end(qp, &qp->rmsg, st);
	}
	qp->job_head = qp->job_tail;
	qp->ctx->ops->resp_fatal(qp, (uint8_t)st, why);
}

static void rnr(struct roce_qp *qp, uint32_t psn)
{
	set_ack(qp, AETH_RNR_NAK | (qp->cfg.min_rnr_timer & 0x1f), psn);
	qp->nak_sent = 1;
	ROCE_STAT(qp->stats, rnr_naks_sent);
}

static uint32_t job_cap(const struct roce_qp *qp) { return 2 * qp->cfg.max_rd_atomic; }

static struct roce_job *job_push(struct roce_qp *qp)
{
	if (qp->job_tail - qp->job_head >= job_cap(qp))
		return NULL;
	return &qp->jobs[qp->job_tail++ % job_cap(qp)];
}

static struct roce_rd_res *res_find(struct roce_qp *qp, uint8_t opcode, uint32_t psn)
{
	for (uint32_t i = 0; i < qp->cfg.max_rd_atomic; i++) {
		struct roce_rd_res *r = &qp->res[i];
		int32_t d = psn_diff(psn, r->psn);

		if (r->valid && r->opcode == opcode && d >= 0 && (uint32_t)d < r->npkts)
			return r;
	}
	return NULL;
}

static struct roce_rd_res *res_new(struct roce_qp *qp)
{
	struct roce_rd_res *r = &qp->res[qp->res_next++ % qp->cfg.max_rd_atomic];

	memset(r, 0, sizeof(*r));
	r->valid = 1;
	return r;
}

/* A duplicate request (PSN behind the expected one). */
static void duplicate(struct roce_qp *qp, const uint8_t *pkt)
{
	uint8_t op = bth_opcode(pkt);
	const struct roce_opinfo *oi = roce_op(op);
	uint32_t psn = bth_psn(pkt);
	struct roce_rd_res *r;
	struct roce_job *j;

	ROCE_STAT(qp->stats, dup_reqs);
	if (op == ROCE_READ_REQ) {
		const uint8_t *h = pkt + oi->off_reth;
		uint64_t va = reth_va(h);
		uint32_t len = reth_len(h);

		r = res_find(qp, op, psn);
		/* the retry asks for the tail of the original, from its PSN */
		if (!r || reth_rkey(h) != r->rkey ||
		    va != r->va + (uint64_t)psn_diff(psn, r->psn) * qp->cfg.mtu ||
		    va + len != r->va + r->len) {
			ROCE_STAT(qp->stats, ooo_drops);
			return;
		}
		/* duplicates use at most half the FIFO: the other half is for new
		 * requests, of which a compliant requester has max_rd_atomic out */
		if (qp->job_tail - qp->job_head >= qp->cfg.max_rd_atomic)
			return; /* the requester will ask again */
		j = job_push(qp);
		*j = (struct roce_job){.opcode = op, .psn = psn, .va = va, .rkey = r->rkey,
				       .left = len, .first = 1};
		return;
	}
	if (oi->mask & ROCE_M_ATOMIC) {
		r = res_find(qp, op, psn);
		if (!r || r->psn != psn) {
			ROCE_STAT(qp->stats, ooo_drops);
			return;
		}
		if (qp->job_tail - qp->job_head >= qp->cfg.max_rd_atomic)
			return;
		j = job_push(qp);
		*j = (struct roce_job){.opcode = op, .psn = psn, .orig = r->orig};
		return;
	}
	/* SEND/WRITE already applied: acknowledge what we have (C9-104) */
	set_ack(qp, AETH_ACK | AETH_ACK_NO_CREDIT, psn_add(qp->rseq->epsn, -1));
}

static int in_message(uint8_t last_op)
{
	return last_op == ROCE_SEND_FIRST || last_op == ROCE_SEND_MIDDLE ||
	       last_op == ROCE_WRITE_FIRST || last_op == ROCE_WRITE_MIDDLE;
}

/* IBA 9.7.5.2.2 (opcode sequence) and C9-??: FIRST/MIDDLE packets carry
 * exactly one MTU, LAST 1..MTU, ONLY 0..MTU. */
static const char *check_sequence(const struct roce_qp *qp, uint8_t op, uint32_t plen)
{
	uint32_t m = roce_op(op)->mask;

	if (in_message(qp->last_op)) {
		int send = qp->last_op == ROCE_SEND_FIRST || qp->last_op == ROCE_SEND_MIDDLE;

		if (!(m & (ROCE_M_MIDDLE | ROCE_M_LAST)) || (m & ROCE_M_FIRST) ||
		    !!(m & ROCE_M_SEND) != send || !(m & (ROCE_M_SEND | ROCE_M_WRITE)))
			return "opcode out of sequence: a message is in progress";
	} else if (!(m & ROCE_M_FIRST)) {
		return "MIDDLE/LAST packet without a FIRST";
	}
	if (m & ROCE_M_PAYLOAD) {
		if ((m & ROCE_M_ONLY) == ROCE_M_ONLY) {
			if (plen > qp->cfg.mtu)
				return "payload over the path MTU";
		} else if (m & (ROCE_M_FIRST | ROCE_M_MIDDLE)) {
			if (plen != qp->cfg.mtu)
				return "FIRST/MIDDLE payload is not one MTU";
		} else if (!plen || plen > qp->cfg.mtu) {
			return "LAST payload not within 1..MTU";
		}
	}
	return NULL;
}

static void rx_send_write(struct roce_qp *qp, const uint8_t *pkt, uint32_t plen)
{
	uint8_t op = bth_opcode(pkt);
	const struct roce_opinfo *oi = roce_op(op);
	const uint8_t *payload = pkt + oi->hdr_len;
	struct roce_rmsg *m = &qp->rmsg;
	int st;

	if (oi->mask & ROCE_M_FIRST) {
		memset(m, 0, sizeof(*m));
		if (oi->mask & ROCE_M_SEND) {
			m->kind = ROCE_WR_SEND;
		} else {
			const uint8_t *h = pkt + oi->off_reth;

			m->kind = ROCE_WR_WRITE;
			m->va = reth_va(h);
			m->rkey = reth_rkey(h);
			m->dma_len = reth_len(h);
			if ((oi->mask & ROCE_M_LAST) ? plen != m->dma_len : m->dma_len <= plen) {
				fatal(qp, MLX5_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR,
				      "WRITE DMA length does not match its packets");
				return;
			}
		}
		if (oi->off_immdt) {
			m->has_imm = 1;
			memcpy(&m->imm, pkt + oi->off_immdt, 4);
		}
		st = qp->ctx->ops->resp_begin(qp, m);
		if (st == ROCE_RNR) {
			rnr(qp, bth_psn(pkt));
			return;
		}
		if (st) {
			fatal(qp, st, m->kind == ROCE_WR_SEND ? "cannot take the SEND"
							      : "WRITE target rejected");
			return;
		}
		m->active = 1;
	} else {
		if (m->kind == ROCE_WR_WRITE && plen > m->dma_len - m->off) {
			fatal(qp, MLX5_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR, "WRITE longer than its RETH");
			return;
		}
		if (m->kind == ROCE_WR_WRITE && (oi->mask & ROCE_M_LAST) &&
		    plen != m->dma_len - m->off) {
			fatal(qp, MLX5_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR, "WRITE shorter than its RETH");
			return;
		}
		if (oi->off_immdt) {
			m->has_imm = 1;
			memcpy(&m->imm, pkt + oi->off_immdt, 4);
			if (m->kind == ROCE_WR_WRITE) {
				st = qp->ctx->ops->resp_imm(qp, m);
				if (st == ROCE_RNR) {
					m->has_imm = 0;
					rnr(qp, bth_psn(pkt));
					return;
				}
				if (st) {
					fatal(qp, st, "WRITE with immediate rejected");
					return;
				}
			}
		}
	}
	if (plen) {
		st = qp->ctx->ops->resp_data(qp, m, m->off, payload, plen);
		if (st) {
			fatal(qp, st, "cannot apply the payload");
			return;
		}
	}
	m->off += plen;
	if (oi->mask & ROCE_M_LAST) {
		m->active = 0;
		st = qp->ctx->ops->resp_end(qp, m, 0);
		if (st) {
			fatal(qp, st, "cannot complete the message");
			return;
		}
		qp->rseq->msn = psn_add(qp->rseq->msn, 1);
	}
	qp->rseq->epsn = psn_add(qp->rseq->epsn, 1);
	qp->last_op = op;
	set_ack(qp, AETH_ACK | AETH_ACK_NO_CREDIT, bth_psn(pkt));
}

static void rx_read(struct roce_qp *qp, const uint8_t *pkt)
{
	const uint8_t *h = pkt + roce_op(ROCE_READ_REQ)->off_reth;
	uint64_t va = reth_va(h);
	uint32_t rkey = reth_rkey(h), len = reth_len(h), n, psn = bth_psn(pkt);
	struct roce_rd_res *r;
	struct roce_job *j;
	int st;

	if (len > (1u << 31)) {
		fatal(qp, MLX5_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR, "READ length over 2^31");
		return;
	}
	if (qp->job_tail - qp->job_head >= job_cap(qp)) {
		/* more outstanding READ/atomic than we advertise (9.7.5.2.3) */
		fatal(qp, MLX5_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR, "too many outstanding READ/atomic");
		return;
	}
	st = qp->ctx->ops->resp_read_check(qp, rkey, va, len);
	if (st) {
		fatal(qp, st, "READ source rejected");
		return;
	}
	n = len ? (len + qp->cfg.mtu - 1) / qp->cfg.mtu : 1;
	r = res_new(qp);
	r->opcode = ROCE_READ_REQ;
	r->psn = psn;
	r->npkts = n;
	r->va = va;
	r->rkey = rkey;
	r->len = len;
	j = job_push(qp);
	*j = (struct roce_job){.opcode = ROCE_READ_REQ, .psn = psn, .va = va, .rkey = rkey,
			       .left = len, .first = 1};
	qp->rseq->epsn = psn_add(psn, (int32_t)n);
	qp->rseq->msn = psn_add(qp->rseq->msn, 1);
	qp->last_op = ROCE_READ_REQ;
	qp->ack.pending = 0; /* the response acknowledges everything before it */
}

/* The execution's record: a duplicate gets orig again, from the cache. */
static void atomic_done(struct roce_qp *qp, const uint8_t *pkt, uint8_t op, uint64_t va,
			uint32_t rkey, uint32_t len, uint64_t orig)
{
	struct roce_rd_res *r = res_new(qp);
	struct roce_job *j;

	r->opcode = op;
	r->psn = bth_psn(pkt);
	r->npkts = 1;
	r->va = va;
	r->rkey = rkey;
	r->len = len;
	r->orig = orig;
	j = job_push(qp);
	*j = (struct roce_job){ .opcode = op, .psn = r->psn, .orig = orig };
	qp->rseq->epsn = psn_add(r->psn, 1);
	qp->rseq->msn = psn_add(qp->rseq->msn, 1);
	qp->last_op = op;
	qp->ack.pending = 0;
}

/* Why an ExtAtomicETH is malformed, or NULL. */
static const char *xatomic_bad(const struct roce_xatomic *x, const uint8_t *h)
{
	int fa = x->opcode == ROCE_XMASKED_FETCH_ADD;

	if (x->size != 4 && x->size != 8)
		return "extended atomic: operand size not 4 or 8 bytes";
	if (xatmeth_resv(h))
		return "extended atomic: reserved bytes not zero";
	if (fa && (x->cmp || x->cmp_mask))
		return "extended fetch-add: compare fields not zero";
	if (x->size == 4 && ((x->swap_add | x->cmp | x->swap_mask | x->cmp_mask) >> 32))
		return "4-byte atomic: operand wider than 32 bits";
	if (x->va & (x->size - 1u))
		return "extended atomic address not aligned to its size";
	return NULL;
}

static void rx_xatomic(struct roce_qp *qp, const uint8_t *pkt)
{
	uint8_t op = bth_opcode(pkt);
	const uint8_t *h = pkt + roce_op(op)->off_atmeth;
	uint8_t lg = xatmeth_size_log(h);
	struct roce_xatomic x = { .opcode = op,
				  .size = (uint8_t)(lg == 2 || lg == 3 ? 1u << lg : 0),
				  .rkey = atmeth_rkey(h),
				  .va = atmeth_va(h),
				  .swap_add = xatmeth_swap_add(h),
				  .cmp = xatmeth_cmp(h),
				  .swap_mask = xatmeth_swap_mask(h),
				  .cmp_mask = xatmeth_cmp_mask(h) };
	const char *bad = xatomic_bad(&x, h);
	uint64_t orig = 0;
	int st;

	if (!qp->ctx->ops->resp_xatomic)
		bad = "extended atomics are not supported by this responder";
	if (bad) {
		ROCE_STAT(qp->stats, bad_xatomics);
		fatal(qp, MLX5_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR, bad);
		return;
	}
	if (qp->job_tail - qp->job_head >= job_cap(qp)) {
		fatal(qp, MLX5_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR,
		      "too many outstanding READ/atomic");
		return;
	}
	st = qp->ctx->ops->resp_xatomic(qp, &x, &orig);
	if (st) {
		fatal(qp, st, "atomic target rejected");
		return;
	}
	atomic_done(qp, pkt, op, x.va, x.rkey, x.size, orig);
}

static void rx_atomic(struct roce_qp *qp, const uint8_t *pkt)
{
	uint8_t op = bth_opcode(pkt);
	const uint8_t *h = pkt + roce_op(op)->off_atmeth;
	uint64_t va = atmeth_va(h), orig = 0;
	int st;

	if (roce_op(op)->mask & ROCE_M_XATMETH) {
		rx_xatomic(qp, pkt);
		return;
	}
	if (va & 7) {
		/* IBA 9.4.5: atomics are naturally aligned 8-byte operations */
		fatal(qp, MLX5_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR, "atomic address not 8-byte aligned");
		return;
	}
	if (qp->job_tail - qp->job_head >= job_cap(qp)) {
		fatal(qp, MLX5_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR, "too many outstanding READ/atomic");
		return;
	}
	st = qp->ctx->ops->resp_atomic(qp, op, atmeth_rkey(h), va, atmeth_swap_add(h),
				       atmeth_cmp(h), &orig);
	if (st) {
		fatal(qp, st, "atomic target rejected");
		return;
	}
	atomic_done(qp, pkt, op, va, atmeth_rkey(h), 8, orig);
}

void roce_resp_rx(struct roce_qp *qp, const uint8_t *pkt, uint32_t plen)
{
	uint8_t op = bth_opcode(pkt);
	uint32_t psn = bth_psn(pkt);
	int32_t d = psn_diff(psn, qp->rseq->epsn);
	const char *bad;

	if (qp->resp_err || qp->state != ROCE_QPS_RTS)
		return;
	if (d > 0) {
		ROCE_STAT(qp->stats, ooo_drops);
		if (!qp->nak_sent) {
			set_ack(qp, AETH_NAK | AETH_NAK_PSN_SEQ, qp->rseq->epsn);
			qp->nak_sent = 1;
			ROCE_STAT(qp->stats, seq_naks_sent);
		}
		return;
	}
	if (d < 0) {
		duplicate(qp, pkt);
		return;
	}
	bad = check_sequence(qp, op, plen);
	if (bad) {
		fatal(qp, MLX5_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR, bad);
		return;
	}
	qp->nak_sent = 0;
	if (op == ROCE_READ_REQ)
		rx_read(qp, pkt);
	else if (roce_op(op)->mask & ROCE_M_ATOMIC)
		rx_atomic(qp, pkt);
	else
		rx_send_write(qp, pkt, plen);
}

int roce_send_ack(struct roce_qp *qp, uint8_t syn, uint32_t psn)
{
	uint32_t len;
	int rc;

	aeth_set(roce_tx_begin(qp) + ROCE_BTH_LEN, syn, qp->rseq->msn);
	len = roce_pkt_finish(qp, ROCE_ACK, 0, 0, psn, 0);
	rc = roce_emit(qp, qp->pkt, len);
	if (rc == -EAGAIN) {
		ROCE_STAT(qp->stats, xmit_busy);
		return rc;
	}
	if ((syn & AETH_TYPE_MASK) == AETH_ACK)
		ROCE_STAT(qp->stats, acks_sent);
	return 0;
}

/* One packet of job j into qp->pkt; returns its length or minus a syndrome. */
static int build_job(struct roce_qp *qp, struct roce_job *j, uint32_t *plen_out)
{
	uint8_t *p = roce_tx_begin(qp);
	const struct roce_opinfo *oi;
	uint32_t plen = 0;
	uint8_t op;

	if (j->opcode == ROCE_READ_REQ) {
		int lastp = j->left <= qp->cfg.mtu;

		plen = lastp ? j->left : qp->cfg.mtu;
		op = j->first ? (lastp ? ROCE_READ_RESP_ONLY : ROCE_READ_RESP_FIRST) :
		     (lastp ? ROCE_READ_RESP_LAST : ROCE_READ_RESP_MIDDLE);
		oi = roce_op(op);
		if (plen) {
			int st = qp->ctx->ops->resp_read(qp, j->rkey, j->va, p + oi->hdr_len, plen);
			if (st)
				return -st;
		}
	} else {
		op = ROCE_ATOMIC_ACK;
		oi = roce_op(op);
		atmack_set(p + oi->off_atmack, j->orig);
	}
	if (oi->off_aeth)
		aeth_set(p + oi->off_aeth, AETH_ACK | AETH_ACK_NO_CREDIT, qp->rseq->msn);
	*plen_out = plen;
	return (int)roce_pkt_finish(qp, op, 0, 0, j->psn, plen);
}

int roce_resp_send(struct roce_qp *qp, int budget)
{
	int n = 0;

	while (n < budget && qp->job_head != qp->job_tail && !qp->resp_err) {
		struct roce_job *j = &qp->jobs[qp->job_head % job_cap(qp)];
		uint32_t plen = 0;
		int len = build_job(qp, j, &plen);

		if (len < 0) {
			/* the region went away between the check and the read */
			qp->rseq->epsn = j->psn;
			fatal(qp, -len, "READ source vanished");
			break;
		}
		if (roce_emit(qp, qp->pkt, (uint32_t)len) == -EAGAIN) {
			ROCE_STAT(qp->stats, xmit_busy);
			return n;
		}
		n++;
		if (j->opcode == ROCE_READ_REQ) {
			j->psn = psn_add(j->psn, 1);
			j->va += plen;
			j->left -= plen;
			j->first = 0;
			if (j->left)
				continue;
		}
		qp->job_head++;
	}
	if (n < budget && qp->job_head == qp->job_tail && qp->ack.pending) {
		if (roce_send_ack(qp, qp->ack.syn, qp->ack.psn) == 0) {
			qp->ack.pending = 0;
			n++;
		}
	}
	return n;
}

int roce_resp_busy(const struct roce_qp *qp)
{
	return qp->job_head != qp->job_tail || qp->ack.pending;
}

int roce_resp_ready(const struct roce_qp *qp)
{
	return qp->state == ROCE_QPS_RTS && !qp->resp_err && !in_message(qp->last_op) &&
	       !qp->rmsg.active;
}

/* SPDX-License-Identifier: MIT */
/*
 * roce_req.c - the RC requester and completer (IBA vol. 1 9.7.4, 9.7.5.1).
 *
 * WRs sit in a ring from posting to completion.  Packets are never kept:
 * like hardware, a retransmission rebuilds them from the WR and its local
 * data, which stays valid until the WR completes.  PSN state:
 *
 *   una_psn  oldest PSN not yet acknowledged (ACK, read response, atomic ACK)
 *   tx_psn   next PSN to (re)send; sq_tx/tx_pkt say which WR and packet
 *   max_psn  one past the highest PSN ever sent
 *
 * Recovery is go-back-N: a NAK (PSN sequence error), a gap in read
 * responses, an ACK that skips an unanswered READ/atomic, or the
 * retransmission timer rewinds tx_psn to una_psn.  NAK- and gap-triggered
 * rewinds happen once per episode (retry_armed, re-armed by progress), so a
 * burst of out-of-order responses does not restart the window repeatedly;
 * the timer always rewinds and spends one retry (TRANSPORT_RETRY_EXC when
 * none is left, C9-145..).  RNR NAKs wait the advertised time and spend an
 * RNR retry (7 = forever).
 *
 * The timer is RTT-adaptive below the configured (IBA) timeout: one PSN at
 * a time is timed from its first transmission to the ACK covering it
 * (Karn: never across a retransmission), smoothed as TCP does (RFC 6298),
 * and the timer runs for max(min_rto, srtt + 4 * rttvar).  A tail loss -
 * the last packets of a burst, or their ACK, with nothing behind them to
 * provoke a NAK - is then resent after a few RTTs instead of after the full
 * timeout.  Such an early expiry spends no retry and doubles the timer;
 * once the timer has grown back to the configured timeout, expiries spend
 * retries exactly as before, so the time to TRANSPORT_RETRY_EXC is still
 * at least retry_cnt timeouts, and a spurious early expiry (a scheduling
 * stall) costs one go-back, never the QP.  Full expiries back off further
 * (to 8x the timeout; see roce_req_timer).
 */
#include <errno.h>
#include <string.h>

#include "gdak_log.h"
#include "roce.h"

static int is_rd(const struct roce_wr *wr)
{
	return wr->op == ROCE_WR_READ || roce_wr_is_atomic(wr->op);
}

static struct roce_wr *wr_at(struct roce_qp *qp, uint32_t i)
{
	return &qp->sq[i & (qp->cfg.sq_size - 1)];
}

uint32_t roce_wr_npkts(const struct roce_qp *qp, const struct roce_wr *wr)
{
	if (roce_wr_is_atomic(wr->op) || !wr->len)
		return 1;
	return (wr->len + qp->cfg.mtu - 1) / qp->cfg.mtu;
}

int roce_post(struct roce_qp *qp, const struct roce_wr *wr)
{
	struct roce_wr *w;

	if (qp->state == ROCE_QPS_ERR)
		return -EIO;
	if (qp->state != ROCE_QPS_RTS || wr->op >= ROCE_WR_NOPS || wr->len > (1u << 31) ||
	    ((wr->op == ROCE_WR_XMASKED_CS || wr->op == ROCE_WR_XMASKED_FA) && wr->asize != 4 &&
	     wr->asize != 8)) {
		GDAK_ERR_RL("qp", qp->qpn, "bad WR: op %u len %u in state %s", wr->op, wr->len,
			    roce_qp_state_name(qp->state));
		return -EINVAL;
	}
	if (qp->sq_head - qp->sq_una >= qp->cfg.sq_size)
		return -EAGAIN;
	w = wr_at(qp, qp->sq_head);
	*w = *wr;
	if (w->op == ROCE_WR_CMP_SWAP || w->op == ROCE_WR_FETCH_ADD)
		w->len = 8;
	else if (w->op == ROCE_WR_XMASKED_CS || w->op == ROCE_WR_XMASKED_FA)
		w->len = w->asize;
	w->first_psn = 0;
	w->npkts = 0;
	w->rx_pkts = 0;
	w->sent = 0;
	w->resumed = 0;
	qp->sq_head++;
	return 0;
}

int roce_req_idle(const struct roce_qp *qp)
{
	return qp->state == ROCE_QPS_RTS && qp->sq_una == qp->sq_head &&
	       qp->tx_psn == qp->una_psn && qp->una_psn == qp->max_psn && !qp->rnr_due_ns &&
	       !qp->rto_due_ns;
}

void roce_req_skip(struct roce_qp *qp, uint32_t npkts)
{
	qp->tx_psn = qp->una_psn = qp->max_psn = psn_add(qp->tx_psn, (int32_t)npkts);
	qp->rtt_t0 = 0; /* no RTT sample spans PSNs that never went out */
	ROCE_STAT(qp->stats, direct_wqes);
}

/* ---- completion ------------------------------------------------------------- */

static void complete_head(struct roce_qp *qp, uint8_t status)
{
	struct roce_wr *wr = wr_at(qp, qp->sq_una);

	if (wr->sent && is_rd(wr) && qp->rd_inflight)
		qp->rd_inflight--;
	qp->sq_una++;
	if (qp->sq_tx - qp->sq_una > qp->sq_head - qp->sq_una) { /* sq_tx fell behind */
		qp->sq_tx = qp->sq_una;
		qp->tx_pkt = 0;
	}
	qp->ctx->ops->req_complete(qp, wr, status);
}

void roce_req_flush(struct roce_qp *qp, uint8_t status)
{
	while (qp->sq_una != qp->sq_head)
		complete_head(qp, status);
	qp->sq_tx = qp->sq_head;
	qp->tx_pkt = 0;
	qp->rd_inflight = 0;
	qp->rto_due_ns = 0;
	qp->rnr_due_ns = 0;
}

/* The WR at the head failed: it gets status, the QP goes to ERR and the
 * rest is flushed (IBA 10.8.3: a requester error moves the QP to ERR). */
static void fail_head(struct roce_qp *qp, uint8_t status, const char *why)
{
	int carried = qp->sq_una != qp->sq_head;

	GDAK_WARN_RL("qp", qp->qpn, "WR at PSN 0x%06x failed: %s (syndrome 0x%02x)",
		     qp->una_psn, why, status);
	if (!qp->err_syn) {
		qp->err_syn = status;
		qp->err_why = why;
	}
	if (carried)
		complete_head(qp, status);
	roce_qp_error(qp);
	if (!carried && qp->ctx->ops->req_fatal)
		qp->ctx->ops->req_fatal(qp, status, why);
}

/* An ACK, NAK or response while no WR waits for one: the responder's late
 * answer to something already completed, or a forgery.  Dropped, as rxe's
 * completer drops a packet when no WQE is in flight (get_wqe): it must not
 * move the QP (an error NAK would otherwise kill an idle requester with
 * nothing to report the error on). */
static int idle(struct roce_qp *qp, const char *what, uint32_t psn)
{
	const struct roce_wr *wr;

	if (qp->sq_una != qp->sq_head) {
		wr = wr_at(qp, qp->sq_una);
		if (wr->sent)
			return 0;
	}
	ROCE_STAT(qp->stats, unsolicited);
	GDAK_WARN_RL("qp", qp->qpn, "dropped %s PSN 0x%06x: nothing outstanding", what, psn);
	return 1;
}

/* una_psn moved: reset the retry counters (IBA 9.7.5.1.4: the count is per
 * "no progress"), restart or stop the timer, allow a new go-back. */
static void rtt_sample(struct roce_qp *qp)
{
	uint64_t s, rto;

	if (!qp->rtt_t0 || psn_diff(qp->una_psn, qp->rtt_psn) <= 0)
		return;
	s = qp->now_ns > qp->rtt_t0 ? qp->now_ns - qp->rtt_t0 : 1;
	qp->rtt_t0 = 0;
	if (!qp->srtt_ns) {
		qp->srtt_ns = s;
		qp->rttvar_ns = s / 2;
	} else {
		uint64_t d = s > qp->srtt_ns ? s - qp->srtt_ns : qp->srtt_ns - s;

		qp->rttvar_ns = qp->rttvar_ns - qp->rttvar_ns / 4 + d / 4;
		qp->srtt_ns = qp->srtt_ns - qp->srtt_ns / 8 + s / 8;
	}
	rto = qp->srtt_ns + 4 * qp->rttvar_ns;
	if (rto < qp->cfg.min_rto_ns)
		rto = qp->cfg.min_rto_ns;
	qp->rto_ns = rto < qp->cfg.timeout_ns ? rto : qp->cfg.timeout_ns;
}

static void progressed(struct roce_qp *qp)
{
	qp->retry_left = qp->cfg.retry_cnt;
	qp->rnr_left = qp->cfg.rnr_retry;
	qp->retry_armed = 1;
	rtt_sample(qp);
	qp->rto_due_ns = qp->una_psn == qp->max_psn ? 0 : qp->now_ns + qp->rto_ns;
}

/* Point the transmitter at psn (which lies in [una_psn, max_psn]). */
static void rewind_to(struct roce_qp *qp, uint32_t psn)
{
	for (uint32_t i = qp->sq_una; i != qp->sq_head; i++) {
		struct roce_wr *wr = wr_at(qp, i);
		int32_t k;

		if (wr->sent && psn_diff(psn, psn_add(wr->first_psn, (int32_t)wr->npkts)) >= 0)
			continue;
		qp->sq_tx = i;
		k = wr->sent ? psn_diff(psn, wr->first_psn) : 0;
		if (k < 0 || roce_wr_is_atomic(wr->op))
			k = 0;
		qp->tx_pkt = (uint32_t)k;
		qp->tx_psn = wr->sent ? psn_add(wr->first_psn, k) : psn;
		return;
	}
	qp->sq_tx = qp->sq_head;
	qp->tx_pkt = 0;
	qp->tx_psn = psn;
}

static void go_back(struct roce_qp *qp, const char *why)
{
	GDAK_DBG("qp", qp->qpn, "go-back-N to PSN 0x%06x (%s; sent up to 0x%06x)", qp->una_psn, why,
		 qp->max_psn);
	rewind_to(qp, qp->una_psn);
	qp->retry_armed = 0;
	qp->rtt_t0 = 0; /* Karn: no sample across a retransmission */
}

/*
 * Everything before PSN target is acknowledged: complete the SEND/WRITE WRs
 * it covers.  Returns 0, 1 when a READ/atomic before target has not had its
 * response (the responder answered it, the answer was lost: retransmit,
 * IBA 9.7.5.1.3 "implied NAK"), or -1 when target lies beyond anything sent.
 */
static int ack_upto(struct roce_qp *qp, uint32_t target)
{
	int adv = 0, ret = 0;

	if (psn_diff(target, qp->max_psn) > 0)
		return -1;
	while (psn_diff(target, qp->una_psn) > 0 && qp->sq_una != qp->sq_head) {
		struct roce_wr *wr = wr_at(qp, qp->sq_una);
		uint32_t end;

		if (!wr->sent)
			break;
		if (is_rd(wr)) {
			ret = 1;
			break;
		}
		end = psn_add(wr->first_psn, (int32_t)wr->npkts);
		if (psn_diff(target, end) >= 0) {
			qp->una_psn = end;
			adv = 1;
			complete_head(qp, 0);
			if (qp->state != ROCE_QPS_RTS)
				return 0;
		} else {
			qp->una_psn = target;
			adv = 1;
		}
	}
	if (adv) {
		/* the transmitter may be behind what is now acknowledged */
		if (psn_diff(qp->tx_psn, qp->una_psn) < 0)
			rewind_to(qp, qp->una_psn);
		progressed(qp);
	}
	return ret;
}

static uint8_t nak_status(unsigned code)
{
	switch (code) {
	case AETH_NAK_INVALID_REQ: return MLX5_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR;
	case AETH_NAK_REM_ACCESS: return MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR;
	case AETH_NAK_REM_OP: return MLX5_CQE_SYNDROME_REMOTE_OP_ERR;
	case AETH_NAK_INVALID_RD_REQ: return MLX5_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR;
	default: return MLX5_CQE_SYNDROME_BAD_RESP_ERR;
	}
}

static void rx_ack(struct roce_qp *qp, uint8_t syn, uint32_t psn)
{
	int r;

	switch (syn & AETH_TYPE_MASK) {
	case AETH_ACK:
		ROCE_STAT(qp->stats, acks_rcvd);
		r = ack_upto(qp, psn_add(psn, 1));
		if (r < 0)
			goto bad;
		if (r > 0 && qp->retry_armed)
			go_back(qp, "ACK past an unanswered READ/atomic");
		return;
	case AETH_RNR_NAK:
		ROCE_STAT(qp->stats, rnr_naks_rcvd);
		/* a NAK names a PSN that was sent (IBA 9.7.5.1.1) */
		if (psn_diff(psn, qp->max_psn) >= 0)
			goto bad;
		r = ack_upto(qp, psn);
		if (r < 0)
			goto bad;
		if (qp->state != ROCE_QPS_RTS || psn != qp->una_psn) {
			ROCE_STAT(qp->stats, dup_resps);
			return;
		}
		if (idle(qp, "RNR NAK", psn))
			return;
		if (!qp->rnr_left) {
			fail_head(qp, MLX5_CQE_SYNDROME_RNR_RETRY_EXC_ERR, "RNR retries exhausted");
			return;
		}
		if (qp->cfg.rnr_retry != 7)
			qp->rnr_left--;
		qp->rnr_due_ns = qp->now_ns + gdak_roce_rnr_timer_ns(syn & 0x1f);
		qp->rto_due_ns = 0;
		rewind_to(qp, psn);
		return;
	case AETH_NAK:
		if (psn_diff(psn, qp->max_psn) >= 0)
			goto bad;
		r = ack_upto(qp, psn);
		if (r < 0)
			goto bad;
		if (qp->state != ROCE_QPS_RTS)
			return;
		if ((syn & 0x1f) == AETH_NAK_PSN_SEQ) {
			ROCE_STAT(qp->stats, seq_naks_rcvd);
			if (psn_diff(psn, qp->una_psn) < 0 && !r) {
				ROCE_STAT(qp->stats, dup_resps);
				return;
			}
			if (qp->retry_armed)
				go_back(qp, "NAK PSN sequence error");
			return;
		}
		ROCE_STAT(qp->stats, err_naks_rcvd);
		if (psn != qp->una_psn) {
			ROCE_STAT(qp->stats, dup_resps);
			return;
		}
		if (idle(qp, "NAK", psn))
			return;
		fail_head(qp, nak_status(syn & 0x1f), "NAK from the responder");
		return;
	default:
		goto bad;
	}
bad:
	ROCE_STAT(qp->stats, bad_pkts);
	GDAK_WARN_RL("qp", qp->qpn, "dropped %s PSN 0x%06x syndrome 0x%02x: beyond PSN 0x%06x sent",
		     "ACK", psn, syn, qp->max_psn);
}

/* Read response or atomic ACK at psn. */
static void rx_data_resp(struct roce_qp *qp, const uint8_t *pkt, uint32_t plen)
{
	uint8_t op = bth_opcode(pkt);
	const struct roce_opinfo *oi = roce_op(op);
	uint32_t psn = bth_psn(pkt);
	struct roce_wr *wr;
	int r, st;

	if (oi->off_aeth && (aeth_syn(pkt + oi->off_aeth) & AETH_TYPE_MASK) != AETH_ACK) {
		ROCE_STAT(qp->stats, bad_pkts);
		return;
	}
	r = ack_upto(qp, psn);
	if (r < 0) {
		ROCE_STAT(qp->stats, bad_pkts);
		return;
	}
	if (qp->state != ROCE_QPS_RTS)
		return;
	if (psn_diff(psn, qp->una_psn) < 0) {
		ROCE_STAT(qp->stats, dup_resps);
		return;
	}
	if (psn != qp->una_psn) {
		ROCE_STAT(qp->stats, ooo_drops);
		if (qp->retry_armed)
			go_back(qp, "gap in READ responses / missing atomic ACK");
		return;
	}
	if (idle(qp, oi->name, psn))
		return;
	wr = wr_at(qp, qp->sq_una);
	if (!wr->sent || !is_rd(wr) || (wr->op == ROCE_WR_READ) != !!(oi->mask & ROCE_M_READ)) {
		fail_head(qp, MLX5_CQE_SYNDROME_BAD_RESP_ERR, "response does not match the request");
		return;
	}
	if (wr->op == ROCE_WR_READ) {
		uint32_t k = wr->rx_pkts, n = wr->npkts, off = k * qp->cfg.mtu;
		uint32_t want = wr->len - off < qp->cfg.mtu ? wr->len - off : qp->cfg.mtu;
		uint8_t exp = n == 1 ? ROCE_READ_RESP_ONLY : k == 0 ? ROCE_READ_RESP_FIRST :
			      k == n - 1 ? ROCE_READ_RESP_LAST : ROCE_READ_RESP_MIDDLE;
		/* the response to a re-request of the tail starts over with
		 * FIRST/ONLY (the responder sees a READ of the remainder) */
		uint8_t alt = k == n - 1 ? ROCE_READ_RESP_ONLY : ROCE_READ_RESP_FIRST;

		if ((op != exp && !(wr->resumed && k && op == alt)) || plen != want) {
			fail_head(qp, MLX5_CQE_SYNDROME_BAD_RESP_ERR,
				  "READ response opcode/length does not fit the request");
			return;
		}
		st = plen ? qp->ctx->ops->req_scatter(qp, wr, off, pkt + oi->hdr_len, plen) : 0;
		if (st) {
			fail_head(qp, (uint8_t)st, "cannot store READ response data");
			return;
		}
		wr->rx_pkts++;
		qp->una_psn = psn_add(qp->una_psn, 1);
		if (psn_diff(qp->tx_psn, qp->una_psn) < 0)
			rewind_to(qp, qp->una_psn);
		progressed(qp);
		if (wr->rx_pkts == n)
			complete_head(qp, 0);
	} else {
		uint64_t orig = atmack_orig(pkt + oi->off_atmack);

		if (wr->op == ROCE_WR_XMASKED_CS || wr->op == ROCE_WR_XMASKED_FA) {
			if (wr->asize == 4 && orig >> 32) {
				fail_head(qp, MLX5_CQE_SYNDROME_BAD_RESP_ERR,
					  "4-byte atomic answered with a value wider than 32 bits");
				return;
			}
		}
		st = qp->ctx->ops->req_scatter(qp, wr, 0, &orig, 8);
		if (st) {
			fail_head(qp, (uint8_t)st, "cannot store the atomic result");
			return;
		}
		qp->una_psn = psn_add(qp->una_psn, 1);
		if (psn_diff(qp->tx_psn, qp->una_psn) < 0)
			rewind_to(qp, qp->una_psn);
		progressed(qp);
		complete_head(qp, 0);
	}
}

void roce_req_rx(struct roce_qp *qp, const uint8_t *pkt, uint32_t plen)
{
	uint8_t op = bth_opcode(pkt);

	if (qp->state != ROCE_QPS_RTS)
		return;
	if (op == ROCE_ACK)
		rx_ack(qp, aeth_syn(pkt + ROCE_BTH_LEN), bth_psn(pkt));
	else
		rx_data_resp(qp, pkt, plen);
}

void roce_req_timer(struct roce_qp *qp)
{
	if (qp->rnr_due_ns && qp->now_ns >= qp->rnr_due_ns)
		qp->rnr_due_ns = 0;
	if (!qp->rto_due_ns || qp->now_ns < qp->rto_due_ns || qp->state != ROCE_QPS_RTS)
		return;
	if (qp->rto_ns < qp->cfg.timeout_ns) {
		/* early (RTT-adaptive) expiry: resend, back off, keep the retries */
		ROCE_STAT(qp->stats, early_timeouts);
		qp->rto_ns = 2 * qp->rto_ns < qp->cfg.timeout_ns ? 2 * qp->rto_ns : qp->cfg.timeout_ns;
		go_back(qp, "early retransmission timeout");
		qp->rto_due_ns = qp->now_ns + qp->rto_ns;
		return;
	}
	ROCE_STAT(qp->stats, timeouts);
	if (!qp->retry_left && !qp->cfg.retry_forever) {
		fail_head(qp, MLX5_CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR,
			  "no response within the retransmission timeout, retries exhausted");
		return;
	}
	if (qp->retry_left)
		qp->retry_left--;
	go_back(qp, "retransmission timeout");
	/* Emulator extension, not IBA: back off past the timeout too (up to 8x).
	 * A NIC model on a slow or overloaded CPU (qemu TCG) can take longer to
	 * push a window through than the timeout; resending it at a fixed
	 * period then only queues duplicates ahead of the ACKs, and the retries
	 * run out while the peer is alive (measured: window 256 in the rxe
	 * guest ended in TRANSPORT_RETRY_EXC). */
	if (qp->rto_ns < 8 * qp->cfg.timeout_ns)
		qp->rto_ns *= 2;
	qp->rto_due_ns = qp->now_ns + qp->rto_ns;
}

/* The opcode of one packet of a SEND or RDMA WRITE message, from its
 * family's FIRST opcode: IBA numbers each family FIRST, MIDDLE, LAST,
 * LAST_IMM, ONLY, ONLY_IMM in a row. */
#define ROCE_SEQ_IN_A_ROW(F)                                                                       \
	(ROCE_##F##_MIDDLE == ROCE_##F##_FIRST + 1 && ROCE_##F##_LAST == ROCE_##F##_FIRST + 2 &&   \
	 ROCE_##F##_LAST_IMM == ROCE_##F##_FIRST + 3 && ROCE_##F##_ONLY == ROCE_##F##_FIRST + 4 && \
	 ROCE_##F##_ONLY_IMM == ROCE_##F##_FIRST + 5)
_Static_assert(ROCE_SEQ_IN_A_ROW(SEND) && ROCE_SEQ_IN_A_ROW(WRITE),
	       "seq_opcode: the RC SEND / RDMA WRITE opcodes stand in a row");
#undef ROCE_SEQ_IN_A_ROW
static uint8_t seq_opcode(uint8_t first_op, int first, int last, int imm)
{
	if (first && last)
		return (uint8_t)(first_op + 4 + (imm ? 1 : 0)); /* ONLY, ONLY_IMM */
	if (first)
		return first_op;
	if (last)
		return (uint8_t)(first_op + 2 + (imm ? 1 : 0)); /* LAST, LAST_IMM */
	return (uint8_t)(first_op + 1);				/* MIDDLE */
}

/* ---- transmit ------------------------------------------------------------------ */

/* Build packet k of wr into qp->pkt; returns its length, or minus a local
 * syndrome when its data cannot be read. */
static int build(struct roce_qp *qp, struct roce_wr *wr, uint32_t k)
{
	uint8_t *p = roce_tx_begin(qp);
	uint32_t mtu = qp->cfg.mtu, psn = psn_add(wr->first_psn, (int32_t)k);
	uint32_t off = k * mtu, plen = 0;
	int first = k == 0, last = k == wr->npkts - 1, ackreq = 0, se = 0;
	uint8_t op, wop;
	const struct roce_opinfo *oi;

	switch (wr->op) {
	case ROCE_WR_SEND:
	case ROCE_WR_SEND_IMM:
		op = seq_opcode(ROCE_SEND_FIRST, first, last, wr->op == ROCE_WR_SEND_IMM);
		break;
	case ROCE_WR_WRITE:
	case ROCE_WR_WRITE_IMM:
		op = seq_opcode(ROCE_WRITE_FIRST, first, last, wr->op == ROCE_WR_WRITE_IMM);
		break;
	case ROCE_WR_READ:
		op = ROCE_READ_REQ;
		break;
	case ROCE_WR_CMP_SWAP:
		op = ROCE_CMP_SWAP;
		break;
	case ROCE_WR_XMASKED_CS:
		op = ROCE_XMASKED_CMP_SWAP;
		break;
	case ROCE_WR_XMASKED_FA:
		op = ROCE_XMASKED_FETCH_ADD;
		break;
	default:
		op = ROCE_FETCH_ADD;
		break;
	}
	/* a DCI's packets: the DC opcode, whose table entry places the
	 * headers after the DCETH */
	wop = qp->dc ? roce_dc_opcode(op) : op;
	oi = roce_op(wop);
	if (oi->mask & ROCE_M_DCETH)
		dceth_set(p + ROCE_BTH_LEN, wr->dc_key, wr->dc_stream, qp->qpn, qp->dc_conn,
			  (uint8_t)(__builtin_ctz(mtu) - 7), qp->dc_psn0);
	if (oi->off_reth) {
		/* a READ retried from packet k asks for the rest only (9.7.5.1.5) */
		if (op == ROCE_READ_REQ)
			reth_set(p + oi->off_reth, wr->raddr + off, wr->rkey, wr->len - off);
		else
			reth_set(p + oi->off_reth, wr->raddr, wr->rkey, wr->len);
	}
	if (oi->mask & ROCE_M_XATMETH) {
		int cs = op == ROCE_XMASKED_CMP_SWAP;

		xatmeth_set(p + oi->off_atmeth, wr->raddr, wr->rkey, wr->asize == 4 ? 2 : 3,
			    wr->swap_add, cs ? wr->cmp : 0, wr->swap_mask, cs ? wr->cmp_mask : 0);
	} else if (oi->off_atmeth) {
		atmeth_set(p + oi->off_atmeth, wr->raddr, wr->rkey, wr->swap_add,
			   op == ROCE_CMP_SWAP ? wr->cmp : 0);
	}
	if (oi->off_immdt)
		memcpy(p + oi->off_immdt, &wr->imm, 4);
	if (oi->mask & ROCE_M_PAYLOAD) {
		plen = wr->len - off < mtu ? wr->len - off : mtu;
		if (plen) {
			int st = qp->ctx->ops->req_gather(qp, wr, off, p + oi->hdr_len, plen);
			if (st)
				return -st;
		}
	}
	if (last || !(oi->mask & ROCE_M_PAYLOAD)) {
		ackreq = 1;
		se = !!(wr->flags & ROCE_WRF_SOLICITED);
	} else if (!(psn & 63)) {
		ackreq = 1; /* long messages: ask for progress now and then */
	}
	return (int)roce_pkt_finish(qp, wop, se, ackreq, psn, plen);
}

int roce_req_send(struct roce_qp *qp, int budget)
{
	int n = 0;

	if (qp->state != ROCE_QPS_RTS)
		return 0;
	if (qp->rnr_due_ns) {
		if (qp->now_ns < qp->rnr_due_ns)
			return 0;
		qp->rnr_due_ns = 0;
	}
	while (n < budget && qp->sq_tx != qp->sq_head) {
		struct roce_wr *wr = wr_at(qp, qp->sq_tx);
		uint32_t psn;
		int len, rc;

		if (psn_diff(qp->tx_psn, qp->una_psn) >= (int32_t)qp->cfg.window)
			break;
		if (!wr->sent) {
			/* fence (IBA 10.8.3.3): wait for every earlier WR */
			if ((wr->flags & ROCE_WRF_FENCE) && qp->sq_una != qp->sq_tx)
				break;
			if (is_rd(wr) && qp->rd_inflight >= qp->cfg.max_rd_atomic)
				break;
			wr->first_psn = qp->tx_psn;
			wr->npkts = roce_wr_npkts(qp, wr);
			wr->rx_pkts = 0;
			wr->sent = 1;
			if (is_rd(wr))
				qp->rd_inflight++;
		}
		psn = psn_add(wr->first_psn, (int32_t)qp->tx_pkt);
		if (wr->op == ROCE_WR_READ && qp->tx_pkt)
			wr->resumed = 1;
		len = build(qp, wr, qp->tx_pkt);
		if (len < 0) {
			/* only the head can fail cleanly; anything else flushes */
			fail_head(qp, (uint8_t)-len, "local data unreadable");
			return n;
		}
		rc = roce_emit(qp, qp->pkt, (uint32_t)len);
		if (rc == -EAGAIN) {
			ROCE_STAT(qp->stats, xmit_busy);
			break;
		}
		if (psn_diff(psn, qp->max_psn) < 0)
			ROCE_STAT(qp->stats, retransmits);
		else if (!qp->rtt_t0) {
			qp->rtt_psn = psn;	/* first transmission: time it */
			qp->rtt_t0 = qp->now_ns ? qp->now_ns : 1;
		}
		if (is_rd(wr)) {
			qp->tx_psn = psn_add(wr->first_psn, (int32_t)wr->npkts);
			qp->tx_pkt = wr->npkts;
		} else {
			qp->tx_psn = psn_add(psn, 1);
			qp->tx_pkt++;
		}
		if (qp->tx_pkt >= wr->npkts) {
			qp->sq_tx++;
			qp->tx_pkt = 0;
		}
		if (psn_diff(qp->tx_psn, qp->max_psn) > 0)
			qp->max_psn = qp->tx_psn;
		if (!qp->rto_due_ns)
			qp->rto_due_ns = qp->now_ns + qp->rto_ns;
		n++;
	}
	return n;
}

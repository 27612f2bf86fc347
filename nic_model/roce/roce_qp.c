/* SPDX-License-Identifier: MIT */
/*
 * roce_qp.c - engine objects, packet finishing, receive dispatch, and the
 * progress/timer entry points the transport drives.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "gdak_log.h"
#include "roce.h"

static const char *const qp_state_names[] = {
	[ROCE_QPS_RESET] = "RESET", [ROCE_QPS_RTS] = "RTS", [ROCE_QPS_ERR] = "ERR",
};

const char *roce_qp_state_name(int state)
{
	return (unsigned)state <= ROCE_QPS_ERR ? qp_state_names[state] : "INVALID";
}

void roce_ctx_init(struct roce_ctx *ctx, const struct roce_ops *ops, void *priv)
{
	memset(ctx, 0, sizeof(*ctx));
	ctx->ops = ops;
	ctx->priv = priv;
}

void roce_ctx_fini(struct roce_ctx *ctx)
{
	roce_fault_free(ctx->faults);
	ctx->faults = NULL;
}

static int valid_mtu(uint32_t mtu)
{
	return mtu == 256 || mtu == 512 || mtu == 1024 || mtu == 2048 || mtu == 4096;
}

int roce_qp_init(struct roce_qp *qp, struct roce_ctx *ctx, uint32_t qpn, const struct roce_cfg *cfg)
{
	struct roce_cfg c = cfg ? *cfg : (struct roce_cfg){0};

	memset(qp, 0, offsetof(struct roce_qp, pkt_own));
	qp->rseq = &qp->rseq_own;
	roce_stats_zero(&qp->stats);
	if (!c.mtu)
		c.mtu = 1024;
	if (!c.sq_size)
		c.sq_size = 256;
	if (!c.window)
		c.window = 256;
	if (!c.max_rd_atomic)
		c.max_rd_atomic = 16;
	if (!c.timeout_ns)
		c.timeout_ns = 20 * 1000 * 1000ull;
	if (!c.pkey)
		c.pkey = ROCE_PKEY_DEFAULT;
	if (!c.min_rto_ns || c.min_rto_ns > c.timeout_ns)
		c.min_rto_ns = c.timeout_ns / 10 ? c.timeout_ns / 10 : 1;
	if (!c.cfg_set) {
		/* zeros mean "default" until the caller says it set them */
		if (!c.retry_cnt)
			c.retry_cnt = 7;
		if (!c.rnr_retry)
			c.rnr_retry = 7;
		if (!c.min_rnr_timer)
			c.min_rnr_timer = 1;
	}
	c.cfg_set = 1;
	if (!valid_mtu(c.mtu) || (c.sq_size & (c.sq_size - 1)) || c.retry_cnt > 7 ||
	    c.rnr_retry > 7 || c.min_rnr_timer > 31 || c.window > (1u << 22) ||
	    c.max_rd_atomic > 256 || qpn > ROCE_PSN_MASK) {
		GDAK_ERR("qp", qpn, "bad RoCE settings: mtu %u sq_size %u retry %u rnr %u window %u",
			 c.mtu, c.sq_size, c.retry_cnt, c.rnr_retry, c.window);
		return -EINVAL;
	}
	qp->ctx = ctx;
	qp->pkt = qp->pkt_own;
	qp->qpn = qpn;
	qp->cfg = c;
	qp->sq = calloc(c.sq_size, sizeof(*qp->sq));
	qp->res = calloc(c.max_rd_atomic, sizeof(*qp->res));
	qp->jobs = calloc(2 * c.max_rd_atomic, sizeof(*qp->jobs));
	if (!qp->sq || !qp->res || !qp->jobs) {
		roce_qp_fini(qp);
		return -ENOMEM;
	}
	qp->state = ROCE_QPS_RESET;
	return 0;
}

void roce_qp_fini(struct roce_qp *qp)
{
	roce_fault_qp_fini(qp);
	free(qp->sq);
	free(qp->res);
	free(qp->jobs);
	qp->sq = NULL;
	qp->res = NULL;
	qp->jobs = NULL;
}

int roce_qp_connect(struct roce_qp *qp, uint32_t dqpn, uint32_t sq_psn, uint32_t rq_psn,
		    uint32_t mtu, const struct roce_path *path)
{
	if (qp->state != ROCE_QPS_RESET || !valid_mtu(mtu) || mtu > qp->cfg.mtu ||
	    dqpn > ROCE_PSN_MASK) {
		GDAK_ERR("qp", qp->qpn, "cannot connect: state %s, path MTU %u (local max %u), "
			 "peer QPN 0x%x", roce_qp_state_name(qp->state), mtu, qp->cfg.mtu, dqpn);
		return -EINVAL;
	}
	qp->dqpn = dqpn;
	qp->cfg.mtu = mtu;
	qp->path = *path;
	qp->tx_psn = qp->una_psn = qp->max_psn = sq_psn & ROCE_PSN_MASK;
	qp->rseq->epsn = rq_psn & ROCE_PSN_MASK;
	qp->last_op = ROCE_ACK; /* not inside a message */
	qp->retry_left = qp->cfg.retry_cnt;
	qp->rnr_left = qp->cfg.rnr_retry;
	qp->retry_armed = 1;
	qp->rto_ns = qp->cfg.timeout_ns; /* until the first RTT sample */
	qp->state = ROCE_QPS_RTS;
	return 0;
}

int roce_dc_retarget(struct roce_qp *qp, uint32_t dqpn, uint32_t sq_psn,
		     const struct roce_path *path, uint16_t peer_sport)
{
	if (qp->dc != ROCE_DC_INITIATOR || qp->state == ROCE_QPS_ERR || dqpn > ROCE_PSN_MASK)
		return -EINVAL;
	if (qp->sq_una != qp->sq_head)
		return -EBUSY; /* the old target's requests complete first */
	qp->dqpn = dqpn;
	qp->path = *path;
	qp->peer_sport = peer_sport;
	qp->tx_psn = qp->una_psn = qp->max_psn = sq_psn & ROCE_PSN_MASK;
	qp->dc_psn0 = qp->tx_psn;
	qp->dc_conn++;
	qp->retry_left = qp->cfg.retry_cnt;
	qp->rnr_left = qp->cfg.rnr_retry;
	qp->retry_armed = 1;
	qp->rto_due_ns = qp->rnr_due_ns = 0;
	/* another peer: its RTT is not the last one's */
	qp->srtt_ns = qp->rttvar_ns = qp->rtt_t0 = 0;
	qp->rto_ns = qp->cfg.timeout_ns;
	qp->state = ROCE_QPS_RTS;
	return 0;
}

void roce_dc_accept(struct roce_qp *qp, uint32_t dqpn, uint32_t conn, uint32_t rq_psn, uint32_t mtu,
		    const struct roce_path *path, uint16_t peer_sport)
{
	if (qp->rmsg.active) {
		qp->rmsg.active = 0;
		qp->ctx->ops->resp_end(qp, &qp->rmsg, MLX5_CQE_SYNDROME_WR_FLUSH_ERR);
	}
	memset(qp->res, 0, qp->cfg.max_rd_atomic * sizeof(*qp->res));
	qp->res_next = 0;
	qp->job_head = qp->job_tail = 0;
	qp->ack.pending = 0;
	qp->nak_sent = 0;
	qp->resp_err = 0;
	qp->err_syn = 0;
	qp->err_why = NULL;
	qp->dc = ROCE_DC_FLOW;
	qp->dc_conn = conn;
	qp->cfg.mtu = mtu;
	qp->dqpn = dqpn;
	qp->path = *path;
	qp->peer_sport = peer_sport;
	qp->rseq->epsn = rq_psn & ROCE_PSN_MASK;
	qp->rseq->msn = 0;
	qp->last_op = ROCE_ACK; /* not inside a message */
	qp->state = ROCE_QPS_RTS;
}

void roce_qp_error(struct roce_qp *qp)
{
	if (qp->state == ROCE_QPS_ERR)
		return;
	qp->state = ROCE_QPS_ERR;
	roce_req_flush(qp, MLX5_CQE_SYNDROME_WR_FLUSH_ERR);
	if (qp->rmsg.active) {
		qp->rmsg.active = 0;
		qp->ctx->ops->resp_end(qp, &qp->rmsg, MLX5_CQE_SYNDROME_WR_FLUSH_ERR);
	}
	qp->job_head = qp->job_tail;
	/* a pending NAK still goes out: the peer must learn why */
	if (qp->ack.pending && (qp->ack.syn & AETH_TYPE_MASK) == AETH_ACK)
		qp->ack.pending = 0;
}

uint32_t roce_pkt_finish(struct roce_qp *qp, uint8_t opcode, int se, int ackreq, uint32_t psn,
			 uint32_t plen)
{
	uint8_t *p = qp->pkt;
	uint32_t hdr, pad = (4 - (plen & 3)) & 3;
	uint32_t len;

	/* a DCT's responses: RC's layout in DC opcodes (requests come in DC
	 * opcodes from the builder, their DCETH in place) */
	if (qp->dc && !roce_opcode_is_dc(opcode))
		opcode = roce_dc_opcode(opcode);
	hdr = roce_op(opcode)->hdr_len;
	len = hdr + plen + pad + ROCE_ICRC_LEN;
	{
	}
	bth_set(p, opcode, se, pad, qp->cfg.pkey, qp->dqpn, ackreq, psn);
	memset(p + hdr + plen, 0, pad);
	gdak_roce_icrc_set(&qp->path, p, len);
	return len;
}

int roce_rx(struct roce_ctx *ctx, const struct roce_path *path, const uint8_t *pkt, uint32_t len,
	    uint64_t now_ns)
{
	const struct roce_opinfo *oi;
	struct roce_qp *qp;
	uint32_t hdr, plen;
	uint16_t ip_id;

	if (len < ROCE_BTH_LEN + ROCE_ICRC_LEN || len > ROCE_MAX_PKT) {
		ROCE_STAT(ctx->stats, bad_pkts);
		GDAK_WARN_RL("ctx", ctx->id, "dropped a %u-byte datagram: not a RoCEv2 packet", len);
		return -EBADMSG;
	}
	if (!gdak_roce_icrc_check(path, pkt, len, &ip_id)) {
		ROCE_STAT(ctx->stats, icrc_errors);
		GDAK_WARN_RL("ctx", ctx->id, "dropped %s PSN 0x%06x to QP 0x%06x: ICRC mismatch",
			     gdak_roce_op_name(bth_opcode(pkt)), bth_psn(pkt), bth_qpn(pkt));
		return -EBADMSG;
	}
	if (ip_id) {
		/* a kernel RoCE stack (rxe) numbers its IPv4 datagrams */
		ROCE_STAT(ctx->stats, icrc_ip_id);
		GDAK_DBG("ctx", ctx->id, "%s PSN 0x%06x: ICRC matches with IPv4 ID 0x%04x",
			 gdak_roce_op_name(bth_opcode(pkt)), bth_psn(pkt), ip_id);
	}
	oi = roce_op(bth_opcode(pkt));
	hdr = oi->hdr_len;
	if (!(oi->mask & ROCE_M_VALID) || bth_tver(pkt) != 0 ||
	    hdr + bth_pad(pkt) + ROCE_ICRC_LEN > len) {
		ROCE_STAT(ctx->stats, bad_pkts);
		GDAK_WARN_RL("ctx", ctx->id,
			     "dropped opcode 0x%02x (%s) TVer %u, %u bytes: "
			     "unsupported or truncated",
			     bth_opcode(pkt), gdak_roce_op_name(bth_opcode(pkt)), bth_tver(pkt),
			     len);
		return -EPROTO;
	}
	plen = len - hdr - bth_pad(pkt) - ROCE_ICRC_LEN;
	if ((!(oi->mask & ROCE_M_PAYLOAD) && (plen || bth_pad(pkt))) || plen > ROCE_MAX_MTU) {
		ROCE_STAT(ctx->stats, bad_pkts);
		GDAK_WARN_RL("ctx", ctx->id, "dropped %s with %u payload bytes", oi->name, plen);
		return -EPROTO;
	}
	qp = ctx->ops->lookup(ctx, bth_qpn(pkt));
	if (!qp) {
		ROCE_STAT(ctx->stats, bad_pkts);
		GDAK_WARN_RL("ctx", ctx->id, "dropped %s for unknown QP 0x%06x", oi->name,
			     bth_qpn(pkt));
		return -ENOENT;
	}
	qp->now_ns = now_ns;
	if (qp->ctx->ops->trace_pkt)
		qp->ctx->ops->trace_pkt(qp, 1, pkt, len, path, ip_id);
	if (!!(oi->mask & ROCE_M_DC) != !!qp->dc) {
		/* an RC QP takes no DC packet, a DC one no RC packet: refused
		 * at dispatch, as an opcode the QP does not know */
		ROCE_STAT(ctx->stats, bad_pkts);
		GDAK_WARN_RL("qp", qp->qpn, "dropped %s: QP 0x%06x is %s", oi->name, qp->qpn,
			     qp->dc ? "a DC QP" : "an RC QP");
		return -EPROTO;
	}
	if (qp->dc == ROCE_DC_TARGET) {
		unsigned mc = (oi->mask & ROCE_M_DCETH) ? dceth_mtu(pkt + ROCE_BTH_LEN) : 0;

		if (!(oi->mask & ROCE_M_DCETH) || !qp->ctx->ops->dc_flow || mc < 1 || mc > 5) {
			ROCE_STAT(ctx->stats, bad_pkts);
			GDAK_WARN_RL("qp", qp->qpn, "DCT dropped %s: %s", oi->name,
				     (oi->mask & ROCE_M_DCETH) ? "DCETH MTU code not 1..5"
							       : "not a DC request");
			return -EPROTO;
		}
		/* the DCT took it in (its context counts again what it executes) */
		ROCE_STAT(qp->stats, rx_pkts);
		ROCE_STAT_ADD(qp->stats, rx_bytes, len);
		qp = qp->ctx->ops->dc_flow(qp, path, pkt);
		if (!qp)
			return -EACCES;
		qp->now_ns = now_ns;
	} else if (qp->dc == ROCE_DC_INITIATOR && (oi->mask & ROCE_M_REQ)) {
		ROCE_STAT(ctx->stats, bad_pkts);
		GDAK_WARN_RL("qp", qp->qpn, "DCI dropped request %s: a DCI takes responses only",
			     oi->name);
		return -EPROTO;
	}
	/* IBA 9.6.1.5 / rxe check_addr: a connected QP takes packets from its
	 * peer only.  Before any PSN or key check: a stranger learns nothing
	 * from how its packet is treated, and cannot move the PSN. */
	if (qp->state == ROCE_QPS_RTS &&
	    (path->sip != qp->path.dip || (qp->peer_sport && path->sport != qp->peer_sport))) {
		ROCE_STAT(qp->stats, foreign_pkts);
		if (qp->ctx->ops->rx_foreign)
			qp->ctx->ops->rx_foreign(qp, path, pkt, len);
		return -EPERM;
	}
	ROCE_STAT(qp->stats, rx_pkts);
	ROCE_STAT_ADD(qp->stats, rx_bytes, len);
	/* P_Key: the low 15 bits name the partition (IBA 10.9.3) */
	if (qp->state != ROCE_QPS_RTS || ((bth_pkey(pkt) ^ qp->cfg.pkey) & 0x7fff)) {
		ROCE_STAT(qp->stats, bad_pkts);
		return -ENOENT;
	}
	if (oi->mask & ROCE_M_DC) {
		/* the engine reads RC's layout: the same packet without its
		 * DCETH, in the RC opcode */
		static __thread uint8_t rc[ROCE_MAX_PKT];
		uint32_t skip = (oi->mask & ROCE_M_DCETH) ? ROCE_DCETH_LEN : 0;

		memcpy(rc, pkt, ROCE_BTH_LEN);
		rc[0] = roce_dc_rc_opcode(pkt[0]);
		memcpy(rc + ROCE_BTH_LEN, pkt + ROCE_BTH_LEN + skip, len - ROCE_BTH_LEN - skip);
		pkt = rc;
	}
	if (oi->mask & ROCE_M_REQ)
		roce_resp_rx(qp, pkt, plen);
	else
		roce_req_rx(qp, pkt, plen);
	return 0;
}

int roce_qp_progress(struct roce_qp *qp, uint64_t now_ns, int budget)
{
	int n;

	qp->now_ns = now_ns;
	n = roce_fault_release(qp, 0);
	if (qp->state == ROCE_QPS_RTS) {
		n += roce_resp_send(qp, budget - n);
		n += roce_req_send(qp, budget - n);
	} else if (qp->ack.pending && n < budget) {
		/* ERR: only the final NAK goes out */
		if (!roce_send_ack(qp, qp->ack.syn, qp->ack.psn)) {
			qp->ack.pending = 0;
			n++;
		}
	}
	/* a packet held for reordering waits for the next one only this long */
	n += roce_fault_release(qp, 1);
	return n;
}

uint64_t roce_qp_deadline(const struct roce_qp *qp)
{
	uint64_t d = roce_fault_deadline(qp);

	if (qp->state != ROCE_QPS_RTS)
		return d;
	if (qp->rto_due_ns && qp->rto_due_ns < d)
		d = qp->rto_due_ns;
	if (qp->rnr_due_ns && qp->rnr_due_ns < d)
		d = qp->rnr_due_ns;
	return d;
}

void roce_qp_timer(struct roce_qp *qp, uint64_t now_ns)
{
	qp->now_ns = now_ns;
	roce_req_timer(qp);
}

int roce_qp_busy(const struct roce_qp *qp)
{
	return qp->sq_una != qp->sq_head || roce_resp_busy(qp) || qp->held != NULL;
}

/* The engine's work-request kinds, for logs (the packet opcodes are the
 * wire table's, <gdak/roce.h>). */
static const char *const wr_op_names[ROCE_WR_NOPS] = {
	[ROCE_WR_SEND] = "SEND",
	[ROCE_WR_SEND_IMM] = "SEND_IMM",
	[ROCE_WR_WRITE] = "WRITE",
	[ROCE_WR_WRITE_IMM] = "WRITE_IMM",
	[ROCE_WR_READ] = "READ",
	[ROCE_WR_CMP_SWAP] = "CMP_SWAP",
	[ROCE_WR_FETCH_ADD] = "FETCH_ADD",
	[ROCE_WR_XMASKED_CS] = "MASKED_CMP_SWAP",
	[ROCE_WR_XMASKED_FA] = "MASKED_FETCH_ADD",
};

const char *roce_wr_op_name(unsigned op)
{
	return op < ROCE_WR_NOPS ? wr_op_names[op] : "UNKNOWN";
}

/* SPDX-License-Identifier: MIT */
/*
 * hw_connect.c - what a peer needs (gdak_qp_info), the state transitions
 * both paths share the policy of, and gdak_qp_query_error: the QP state the
 * HCA reports plus the last error CQE found on the QP's CQs.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "hw_loc.h"
#include "gdak_log.h"
#include <gdak/mlx5.h>

int hw_qp_info(struct gdak_qp *qp, struct gdak_qp_info *out)
{
	struct hw_qp *hq = hw_qp_of(qp);
	struct hw_ctx *hc = hq->ctx;
	uint32_t mtu = hw_mtu_bytes(hc->active_mtu);

	out->qpn = qp->qpn;
	out->psn = hq->psn;
	/* never more than the port carries: a 4096 assumption hangs on
	 * 1500-byte Ethernet (the port reports 1024 there) */
	out->mtu = qp->attr.mtu < mtu ? qp->attr.mtu : mtu;
	memcpy(out->gid, hc->gid.raw, 16);
	out->lid = hc->lid;
	out->gid_index = hc->gid_index;
	out->transport = GDAK_QPI_HW;
	out->qp_type = (uint8_t)qp->attr.type;
	out->dc_key = qp->attr.type == GDAK_QPT_DCT ? qp->attr.dc_key : 0;
	return 0;
}

void hw_conn_params(struct hw_qp *hq, const struct gdak_qp_info *peer, struct hw_conn_params *p)
{
	struct hw_ctx *hc = hq->ctx;
	uint32_t mtu = hw_mtu_bytes(hc->active_mtu);

	if (hq->base.attr.mtu < mtu)
		mtu = hq->base.attr.mtu;
	if (peer && peer->mtu && peer->mtu < mtu)
		mtu = peer->mtu;
	p->mtu = gdak_ibv_mtu_enum(mtu);
	/* IBA 9.7.6.1.3: local ACK timeout 4.096 us * 2^14 = 67 ms, 7 retries */
	p->timeout = 14;
	p->retry_cnt = 7;
	/* 7 = retry without limit on RNR NAK (IBA 9.7.5.2.8): a receiver whose
	 * device code posts receives late is slow, not broken */
	p->rnr_retry = 7;
	p->min_rnr_timer = 12;	/* 0.64 ms (IBA table 45) */
	/* RDMA reads and atomics in flight: the device's limits, at most 16 */
	p->max_rd_atomic = hc->max_init_rd_atom ? (hc->max_init_rd_atom > 16 ? 16 : hc->max_init_rd_atom) : 1;
	p->max_dest_rd_atomic = hc->max_rd_atom ? (hc->max_rd_atom > 16 ? 16 : hc->max_rd_atom) : 1;
	p->hop_limit = 64;
}

static int check_peer(struct hw_qp *hq, const struct gdak_qp_info *peer)
{
	static const uint8_t zero[16];

	if (peer->transport != GDAK_QPI_HW) {
		GDAK_ERR("qp", hq->base.qpn, "peer QP 0x%x is not a hardware QP (transport %u): "
			 "an emulated QP cannot talk to a ConnectX QP", peer->qpn, peer->transport);
		return -EPROTO;
	}
	if (peer->qpn > 0xffffff || peer->psn > 0xffffff) {
		GDAK_ERR("qp", hq->base.qpn, "peer qpn 0x%x / psn 0x%x over 24 bits", peer->qpn,
			 peer->psn);
		return -EINVAL;
	}
	if (hq->ctx->link_layer == IBV_LINK_LAYER_ETHERNET && !memcmp(peer->gid, zero, 16)) {
		GDAK_ERR("qp", hq->base.qpn, "RoCE peer without a GID");
		return -EINVAL;
	}
	if (hq->ctx->link_layer != IBV_LINK_LAYER_ETHERNET && !peer->lid) {
		GDAK_ERR("qp", hq->base.qpn, "InfiniBand peer without a LID (is its port up?)");
		return -EINVAL;
	}
	return 0;
}

/* After RESET the HCA starts the SQ at WQEBB 0 again (rdma-core zeroes the
 * doorbell record); device-side indices must follow. */
static void reset_indices(struct hw_qp *hq)
{
	struct gdak_dev_qp *d = hq->dqp;

	d->sq_resv = d->sq_ready = d->sq_done = d->sq_db = 0;
	d->rq_pi = d->rq_done = 0;
	__atomic_store_n(hq->proxy_pi, 0, __ATOMIC_RELEASE);
	hq->proxy_last = 0;
	memset(&hq->err, 0, sizeof(hq->err));
}

int hw_qp_modify(struct gdak_qp *qp, enum gdak_qp_state to, const struct gdak_qp_info *peer)
{
	struct hw_qp *hq = hw_qp_of(qp);
	int ret;

	if (to == GDAK_QPS_RTR && qp->attr.type == GDAK_QPT_RC) {
		ret = check_peer(hq, peer);
		if (ret)
			return ret;
	}
	ret = hq->devx ? hw_dqp_modify(hq, to, peer) : hw_vqp_modify(hq, to, peer);
	if (!ret && to == GDAK_QPS_RESET)
		reset_indices(hq);
	return ret;
}

/* ---- error query ----------------------------------------------------------- */

static int read_cqe(struct hw_qp *hq, int recv, uint32_t i, uint8_t out[64])
{
	void *ring = recv ? hq->rcqes : hq->scqes;

	if (ring) {
		memcpy(out, (const char *)ring + (size_t)i * 64, 64);
		return 0;
	}
	return hw_dqp_read_cqe(hq, recv, i, out);
}

/*
 * Look through a CQ ring for error CQEs.  A real error is preferred over the
 * WR_FLUSH_ERR CQEs that follow it (IBA 10.3.1: once in ERR, outstanding WQEs
 * complete flushed), so the answer names what went wrong first.
 */
static void scan_cq(struct hw_qp *hq, int recv, uint32_t n)
{
	uint8_t c[64];
	struct gdak_mlx5_cqe_fields f;

	for (uint32_t i = 0; i < n; i++) {
		if (read_cqe(hq, recv, i, c))
			return;
		if ((c[63] >> 4) != MLX5_CQE_REQ_ERR && (c[63] >> 4) != MLX5_CQE_RESP_ERR)
			continue;
		gdak_mlx5_cqe_decode(c, &f);
		if (f.qpn != hq->base.qpn)
			continue;
		if (hq->err.valid && f.syndrome == MLX5_CQE_SYNDROME_WR_FLUSH_ERR)
			continue;
		if (hq->err.valid && hq->err.syndrome != MLX5_CQE_SYNDROME_WR_FLUSH_ERR)
			continue;	/* keep the first real error found */
		hq->err.valid = 1;
		hq->err.syndrome = f.syndrome;
		hq->err.vendor_syndrome = f.vendor_syndrome;
		hq->err.opcode = f.wqe_opcode;
		hq->err.cqe_opcode = f.opcode;
		hq->err.wqe_counter = f.wqe_counter;
		hq->err.recv = recv;
	}
}

static enum gdak_qp_state from_ibv(enum ibv_qp_state s)
{
	switch (s) {
	case IBV_QPS_RESET: return GDAK_QPS_RESET;
	case IBV_QPS_INIT: return GDAK_QPS_INIT;
	case IBV_QPS_RTR: return GDAK_QPS_RTR;
	case IBV_QPS_RTS:
	case IBV_QPS_SQD: return GDAK_QPS_RTS;
	default: return GDAK_QPS_ERR;	/* SQE, ERR */
	}
}

int hw_qp_query_error(struct gdak_qp *qp, struct gdak_qp_error *err)
{
	struct hw_qp *hq = hw_qp_of(qp);
	struct ibv_qp_attr qa;
	struct ibv_qp_init_attr ia;
	int ret;

	if (!hq->devx) {
		ret = ibv_query_qp(hq->qp, &qa, IBV_QP_STATE, &ia);
		if (ret) {
			GDAK_ERR("qp", qp->qpn, "ibv_query_qp: %s", strerror(ret));
			return -ret;
		}
		err->state = from_ibv(qa.qp_state);
	} else {
		ret = hw_dqp_query_state(hq, &err->state);
		if (ret)
			return ret;
	}
	/* the HCA moved it to ERR behind the host's back: say so everywhere */
	if (err->state == GDAK_QPS_ERR)
		atomic_store(&qp->state, GDAK_QPS_ERR);
	scan_cq(hq, 0, hq->scq_n);
	if (hq->rcq_n)
		scan_cq(hq, 1, hq->rcq_n);
	if (!hq->err.valid) {
		snprintf(err->text, sizeof(err->text), "QP 0x%x %s, no error CQE seen", qp->qpn,
			 gdak_qp_state_name(err->state));
		return 0;
	}
	err->syndrome = hq->err.syndrome;
	err->vendor_syndrome = hq->err.vendor_syndrome;
	err->wqe_index = hq->err.wqe_counter;
	err->opcode = hq->err.opcode;
	snprintf(err->text, sizeof(err->text),
		 "QP 0x%x %s: %s CQE for WQE %u (%s): %s (0x%02x), vendor syndrome 0x%02x",
		 qp->qpn, gdak_qp_state_name(err->state),
		 hq->err.recv ? "receive" : "send", hq->err.wqe_counter,
		 gdak_mlx5_opcode_name(hq->err.opcode), gdak_mlx5_syndrome_name(hq->err.syndrome),
		 hq->err.syndrome, hq->err.vendor_syndrome);
	return 0;
}

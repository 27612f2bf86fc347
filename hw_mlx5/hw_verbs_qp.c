/* SPDX-License-Identifier: MIT */
/*
 * hw_verbs_qp.c - path 1: CQs and the RC QP created through verbs/mlx5dv in
 * host memory, their rings taken from mlx5dv_init_obj(), and the QP moved
 * through its states with ibv_modify_qp.  Works on any ConnectX with the
 * standard kernel driver.  DC too: a DCI is an RC-shaped send queue made by
 * mlx5dv_create_qp (MLX5DV_DCTYPE_DCI), a DCT a receive-side object with
 * an access key and an SRQ and no rings of its own.
 */
#include <errno.h>
#include <string.h>

#include "hw_loc.h"
#include "gdak_log.h"
#include <gdak/mlx5.h>

/* Inline payload asked for per WQE; the provider reports what it granted. */
#define HW_MAX_INLINE 64

static struct ibv_cq_ex *create_cq(struct hw_ctx *hc, uint32_t n)
{
	/*
	 * Ignore overrun: device code updates the CQ doorbell record when it
	 * gets round to it (not after every CQE), so the HCA's view of the
	 * consumer index may lag; without this flag a lagging record moves the
	 * CQ to error (PRM "CQ overrun").  Kernels without it get a normal CQ.
	 * 64-byte CQEs always: rdma-core picks 128 on 128-byte cache line
	 * hosts, and the device API assumes 64.
	 */
	struct ibv_cq_init_attr_ex ca = {
		.cqe = n,
		.comp_mask = IBV_CQ_INIT_ATTR_MASK_FLAGS,
		.flags = IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN,
	};
	struct mlx5dv_cq_init_attr dv = {
		.comp_mask = MLX5DV_CQ_INIT_ATTR_MASK_CQE_SIZE,
		.cqe_size = 64,
	};
	struct ibv_cq_ex *cq = mlx5dv_create_cq(hc->ibctx, &ca, &dv);

	if (!cq) {
		GDAK_INFO("ctx", hc->base.id, "CQ with ignore-overrun refused (%s); "
			  "device code must keep the CQ doorbell record current", strerror(errno));
		ca.comp_mask = 0;
		ca.flags = 0;
		cq = mlx5dv_create_cq(hc->ibctx, &ca, &dv);
	}
	if (!cq)
		GDAK_ERR("ctx", hc->base.id, "mlx5dv_create_cq(%u): %s", n, strerror(errno));
	return cq;
}

static int cq_obj(struct hw_qp *hq, struct ibv_cq_ex *cq, struct gdak_dev_cq *dcq, void **host_cqes,
		  uint32_t *n)
{
	struct mlx5dv_cq dv;
	struct mlx5dv_obj obj = {.cq = {.in = ibv_cq_ex_to_cq(cq), .out = &dv}};
	void *dev;
	int ret;

	ret = mlx5dv_init_obj(&obj, MLX5DV_OBJ_CQ);
	if (ret) {
		GDAK_ERR("qp", 0, "mlx5dv_init_obj(CQ): %s", strerror(ret));
		return -ret;
	}
	if (dv.cqe_size != 64 || !dv.cqe_cnt || (dv.cqe_cnt & (dv.cqe_cnt - 1))) {
		GDAK_ERR("qp", 0, "CQ %u: %u CQEs of %u bytes; the device API needs a power of two "
			 "of 64-byte CQEs", dv.cqn, dv.cqe_cnt, dv.cqe_size);
		return -ENOTSUP;
	}
	dcq->cqn = dv.cqn;
	dcq->ncqe = dv.cqe_cnt;
	dcq->log_ncqe = (uint32_t)__builtin_ctz(dv.cqe_cnt);
	*host_cqes = dv.buf;
	*n = dv.cqe_cnt;
	ret = hw_qp_map(hq, dv.buf, (size_t)dv.cqe_cnt * 64, 0, &dev);
	if (ret)
		return ret;
	dcq->cqes = dev;
	ret = hw_qp_map(hq, dv.dbrec, 8, 0, &dev);
	if (ret)
		return ret;
	dcq->dbrec = dev;
	return 0;
}

/* A thread domain gives the QP a BlueFlame register no other QP writes
 * (mlx5dv(7), "thread domain"), which 64-byte BlueFlame writes from device
 * code need: two writers interleaving in one write-combining buffer would
 * send the HCA a torn WQE. */
static void alloc_td(struct hw_qp *hq)
{
	struct ibv_td_init_attr ta = {0};
	struct ibv_parent_domain_init_attr pa = {0};

	hq->td = ibv_alloc_td(hq->ctx->ibctx, &ta);
	if (!hq->td)
		return;
	pa.pd = hq->ctx->pd;
	pa.td = hq->td;
	hq->parent_pd = ibv_alloc_parent_domain(hq->ctx->ibctx, &pa);
	if (!hq->parent_pd) {
		ibv_dealloc_td(hq->td);
		hq->td = NULL;
	}
}

static int choose_handler(struct hw_qp *hq, const struct mlx5dv_qp *dv, struct gdak_dev_qp *t)
{
	void *dev;
	int ret;

	hq->db_reg = dv->bf.reg;
	/* the register has two halves of bf.size bytes (mlx5dv(7)); rdma-core
	 * alternates between them after every write (bf->offset ^=
	 * bf->buf_size) so that two write-combined BlueFlame copies to one
	 * half cannot reach the HCA merged or reordered: the device code
	 * alternates when bf_log_half says how far apart they are */
	if (dv->bf.size && !(dv->bf.size & (dv->bf.size - 1)))
		t->bf_log_half = (uint8_t)__builtin_ctz(dv->bf.size);
	if (t->handler == GDAK_DEV_DB_BF && (!hq->td || !dv->bf.size)) {
		GDAK_WARN("qp", t->qpn, "no BlueFlame register of its own (%s): handler BF -> DB",
			  !dv->bf.size ? "BlueFlame disabled" : "thread domains unsupported");
		t->handler = GDAK_DEV_DB_DB;
	}
	if (t->handler == GDAK_DEV_DB_CPU_PROXY)
		return 0;
	/* both halves when the device code alternates */
	ret = hw_qp_map(hq, dv->bf.reg, t->bf_log_half ? 2u << t->bf_log_half : 64, 1, &dev);
	if (ret) {
		GDAK_WARN("qp", t->qpn, "the UAR page cannot be mapped into the GPU (%s): "
			  "doorbells go through the CPU proxy", gdak_strerror(ret));
		t->handler = GDAK_DEV_DB_CPU_PROXY;
		return 0;
	}
	t->db_reg = dev;
	return 0;
}

/* A DCT: the CQ its responder errors complete on, the SRQ every ConnectX
 * DCT is created with (nothing is ever posted: RDMA WRITE / READ / atomics
 * consume no receive WQE), the access key.  It has no rings the device
 * code drives, so its descriptor carries only the CQ. */
static int create_dct(struct hw_qp *hq, struct gdak_dev_qp *t)
{
	const struct gdak_qp_attr *a = &hq->base.attr;
	struct hw_ctx *hc = hq->ctx;
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = 1, .max_sge = 1 } };
	struct ibv_qp_init_attr_ex ia;
	struct mlx5dv_qp_init_attr dia;
	int ret;

	hq->scq = create_cq(hc, a->cq_depth);
	if (!hq->scq)
		return -ENOMEM;
	hq->srq = ibv_create_srq(hc->pd, &sa);
	if (!hq->srq) {
		ret = errno ? errno : ENOMEM;
		GDAK_ERR("ctx", hc->base.id, "ibv_create_srq (for a DCT): %s", strerror(ret));
		return -ret;
	}
	memset(&ia, 0, sizeof(ia));
	memset(&dia, 0, sizeof(dia));
	ia.qp_type = IBV_QPT_DRIVER;
	ia.comp_mask = IBV_QP_INIT_ATTR_PD;
	/* the context's PD: the MRs DCIs reach are registered on it */
	ia.pd = hc->pd;
	ia.srq = hq->srq;
	ia.send_cq = ia.recv_cq = ibv_cq_ex_to_cq(hq->scq);
	ia.cap.max_recv_sge = 1;
	dia.comp_mask = MLX5DV_QP_INIT_ATTR_MASK_DC;
	dia.dc_init_attr.dc_type = MLX5DV_DCTYPE_DCT;
	dia.dc_init_attr.dct_access_key = a->dc_key;
	hq->qp = mlx5dv_create_qp(hc->ibctx, &ia, &dia);
	if (!hq->qp) {
		ret = errno ? errno : EINVAL;
		GDAK_ERR("ctx", hc->base.id, "mlx5dv_create_qp(DCT, key 0x%llx): %s",
			 (unsigned long long)a->dc_key, strerror(ret));
		return -ret;
	}
	t->qpn = hq->qp->qp_num;
	t->qpn_ds_be = gdak_htobe32(gdak_mlx5_ctrl_w1(t->qpn, 0));
	/* nothing to ring: never the CPU proxy (it would watch an SQ there
	 * is not) */
	t->handler = GDAK_DEV_DB_DB;
	return cq_obj(hq, hq->scq, &t->scq, &hq->scqes, &hq->scq_n);
}

int hw_vqp_create(struct hw_qp *hq, struct gdak_dev_qp *t)
{
	const struct gdak_qp_attr *a = &hq->base.attr;
	struct hw_ctx *hc = hq->ctx;
	struct ibv_qp_init_attr_ex ia;
	struct mlx5dv_qp_init_attr dia = {0};
	struct mlx5dv_qp dv;
	struct mlx5dv_obj obj;
	void *lo, *dev;
	size_t span;
	int ret;

	if (a->type == GDAK_QPT_DCT)
		return create_dct(hq, t);
	alloc_td(hq);
	hq->scq = create_cq(hc, a->cq_depth);
	if (!hq->scq)
		return -ENOMEM;
	if (a->rq_depth) {
		hq->rcq = create_cq(hc, a->rcq_depth);
		if (!hq->rcq)
			return -ENOMEM;
	}
	memset(&ia, 0, sizeof(ia));
	ia.qp_type = IBV_QPT_RC;
	ia.send_cq = ibv_cq_ex_to_cq(hq->scq);
	ia.recv_cq = ibv_cq_ex_to_cq(hq->rcq ? hq->rcq : hq->scq);
	ia.cap.max_send_wr = a->sq_depth;
	ia.cap.max_send_sge = 1;
	ia.cap.max_recv_wr = a->rq_depth;
	ia.cap.max_recv_sge = a->rq_depth ? a->rq_max_sge : 0;
	ia.cap.max_inline_data = HW_MAX_INLINE;
	ia.sq_sig_all = 0;	/* CQEs where the WQE's CQ_UPDATE bit asks for one */
	ia.comp_mask = IBV_QP_INIT_ATTR_PD;
	ia.pd = hq->parent_pd ? hq->parent_pd : hc->pd;
	if (a->type == GDAK_QPT_DCI) {
		/* the WQEs carry the AV; the SQ is built as RC's is */
		ia.qp_type = IBV_QPT_DRIVER;
		dia.comp_mask = MLX5DV_QP_INIT_ATTR_MASK_DC;
		dia.dc_init_attr.dc_type = MLX5DV_DCTYPE_DCI;
		if (a->dci_streams > 1) {
			dia.comp_mask |= MLX5DV_QP_INIT_ATTR_MASK_DCI_STREAMS;
			dia.dc_init_attr.dci_streams.log_num_concurent = (uint8_t)__builtin_ctz(
				a->dci_streams);
			dia.dc_init_attr.dci_streams.log_num_errored = 0;
		}
	}
	hq->qp = mlx5dv_create_qp(hc->ibctx, &ia, &dia);
	if (!hq->qp) {
		ret = errno ? errno : EINVAL;
		GDAK_ERR("ctx", hc->base.id, "mlx5dv_create_qp(%s, sq %u, rq %u, streams %u): %s",
			 a->type == GDAK_QPT_DCI ? "DCI" : "RC", a->sq_depth, a->rq_depth,
			 a->dci_streams, strerror(ret));
		return -ret;
	}
	t->qpn = hq->qp->qp_num;
	t->qpn_ds_be = gdak_htobe32(gdak_mlx5_ctrl_w1(t->qpn, 0));

	memset(&obj, 0, sizeof(obj));
	obj.qp.in = hq->qp;
	obj.qp.out = &dv;
	ret = mlx5dv_init_obj(&obj, MLX5DV_OBJ_QP);
	if (ret) {
		GDAK_ERR("qp", t->qpn, "mlx5dv_init_obj(QP): %s", strerror(ret));
		return -ret;
	}
	if (dv.sq.stride != 64 || !dv.sq.wqe_cnt || (dv.sq.wqe_cnt & (dv.sq.wqe_cnt - 1))) {
		GDAK_ERR("qp", t->qpn, "SQ of %u WQEBBs of %u bytes: not what the device API drives",
			 dv.sq.wqe_cnt, dv.sq.stride);
		return -ENOTSUP;
	}
	t->sq_wqebb_cnt = dv.sq.wqe_cnt;
	t->sq_log_cnt = (uint32_t)__builtin_ctz(dv.sq.wqe_cnt);
	t->max_inline = ia.cap.max_inline_data;
	hq->sq_buf = dv.sq.buf;
	hq->dbrec = (uint32_t *)dv.dbrec;

	/* rdma-core keeps the RQ and the SQ in one buffer (RQ first): map the
	 * span once so the two never register overlapping pages separately. */
	lo = dv.sq.buf;
	span = (size_t)dv.sq.wqe_cnt * dv.sq.stride;
	if (dv.rq.wqe_cnt) {
		char *rq_end = (char *)dv.rq.buf + (size_t)dv.rq.wqe_cnt * dv.rq.stride;
		char *sq_end = (char *)dv.sq.buf + span;
		lo = dv.rq.buf < dv.sq.buf ? dv.rq.buf : dv.sq.buf;
		span = (size_t)((rq_end > sq_end ? rq_end : sq_end) - (char *)lo);
	}
	ret = hw_qp_map(hq, lo, span, 0, &dev);
	if (ret)
		return ret;
	t->sq_buf = (char *)dev + ((char *)dv.sq.buf - (char *)lo);
	if (dv.rq.wqe_cnt) {
		t->rq_buf = (char *)dev + ((char *)dv.rq.buf - (char *)lo);
		t->rq_wqe_cnt = dv.rq.wqe_cnt;
		t->rq_log_stride = (uint32_t)__builtin_ctz(dv.rq.stride);
	}
	ret = hw_qp_map(hq, dv.dbrec, 8, 0, &dev);
	if (ret)
		return ret;
	t->dbrec = dev;

	ret = cq_obj(hq, hq->scq, &t->scq, &hq->scqes, &hq->scq_n);
	if (!ret && hq->rcq)
		ret = cq_obj(hq, hq->rcq, &t->rcq, &hq->rcqes, &hq->rcq_n);
	if (ret)
		return ret;
	return choose_handler(hq, &dv, t);
}

void hw_vqp_destroy(struct hw_qp *hq)
{
	int ret;

	if (hq->qp && (ret = ibv_destroy_qp(hq->qp)))
		GDAK_WARN("qp", hq->base.qpn, "ibv_destroy_qp: %s", strerror(ret));
	if (hq->srq && (ret = ibv_destroy_srq(hq->srq)))
		GDAK_WARN("qp", hq->base.qpn, "ibv_destroy_srq: %s", strerror(ret));
	if (hq->rcq)
		ibv_destroy_cq(ibv_cq_ex_to_cq(hq->rcq));
	if (hq->scq)
		ibv_destroy_cq(ibv_cq_ex_to_cq(hq->scq));
	if (hq->parent_pd)
		ibv_dealloc_pd(hq->parent_pd);
	if (hq->td)
		ibv_dealloc_td(hq->td);
}

/* DCI and DCT: INIT and RTR take exactly the attribute masks the mlx5
 * kernel driver accepts for them (a bit more or less is EINVAL); a DCI's
 * RTR names no peer, a DCT's names only its own port's address (the
 * source of its responses). */
static int dc_modify(struct hw_qp *hq, enum gdak_qp_state to)
{
	struct hw_ctx *hc = hq->ctx;
	int dct = hq->base.attr.type == GDAK_QPT_DCT;
	struct ibv_qp_attr qa;
	struct hw_conn_params p;
	int mask = IBV_QP_STATE, ret;

	memset(&qa, 0, sizeof(qa));
	if (to == GDAK_QPS_INIT) {
		qa.qp_state = IBV_QPS_INIT;
		qa.pkey_index = 0;
		qa.port_num = hc->port;
		mask |= IBV_QP_PKEY_INDEX | IBV_QP_PORT;
		if (dct) {
			qa.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
					     IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
			mask |= IBV_QP_ACCESS_FLAGS;
		}
	} else {
		hw_conn_params(hq, NULL, &p);
		qa.qp_state = IBV_QPS_RTR;
		qa.path_mtu = p.mtu;
		mask |= IBV_QP_PATH_MTU;
		hq->mtu = hw_mtu_bytes(p.mtu);
		if (dct) {
			qa.min_rnr_timer = p.min_rnr_timer;
			qa.ah_attr.port_num = hc->port;
			if (hc->link_layer == IBV_LINK_LAYER_ETHERNET) {
				qa.ah_attr.is_global = 1;
				qa.ah_attr.grh.dgid = hc->gid;
				qa.ah_attr.grh.sgid_index = hc->gid_index;
				qa.ah_attr.grh.hop_limit = p.hop_limit;
			}
			mask |= IBV_QP_AV | IBV_QP_MIN_RNR_TIMER;
		}
	}
	ret = ibv_modify_qp(hq->qp, &qa, mask);
	if (ret) {
		GDAK_ERR("qp", hq->base.qpn, "ibv_modify_qp(%s -> %s): %s", dct ? "DCT" : "DCI",
			 gdak_qp_state_name(to), strerror(ret));
		return -ret;
	}
	return 0;
}

int hw_vqp_modify(struct hw_qp *hq, enum gdak_qp_state to, const struct gdak_qp_info *peer)
{
	struct hw_ctx *hc = hq->ctx;
	struct ibv_qp_attr qa;
	struct hw_conn_params p;
	int mask = IBV_QP_STATE, ret;

	memset(&qa, 0, sizeof(qa));
	if (hq->base.attr.type != GDAK_QPT_RC && (to == GDAK_QPS_INIT || to == GDAK_QPS_RTR))
		return dc_modify(hq, to);
	switch (to) {
	case GDAK_QPS_RESET:
		qa.qp_state = IBV_QPS_RESET;
		break;
	case GDAK_QPS_ERR:
		qa.qp_state = IBV_QPS_ERR;
		break;
	case GDAK_QPS_INIT:
		qa.qp_state = IBV_QPS_INIT;
		qa.pkey_index = 0;
		qa.port_num = hc->port;
		qa.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				     IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
		mask |= IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
		break;
	case GDAK_QPS_RTR:
		hw_conn_params(hq, peer, &p);
		qa.qp_state = IBV_QPS_RTR;
		qa.path_mtu = p.mtu;
		qa.dest_qp_num = peer->qpn;
		qa.rq_psn = peer->psn;
		qa.max_dest_rd_atomic = p.max_dest_rd_atomic;
		qa.min_rnr_timer = p.min_rnr_timer;
		qa.ah_attr.port_num = hc->port;
		qa.ah_attr.sl = 0;
		if (hc->link_layer == IBV_LINK_LAYER_ETHERNET) {
			/* RoCE: addressing is by GID only (IBA A16/A17) */
			qa.ah_attr.is_global = 1;
			memcpy(qa.ah_attr.grh.dgid.raw, peer->gid, 16);
			qa.ah_attr.grh.sgid_index = hc->gid_index;
			qa.ah_attr.grh.hop_limit = p.hop_limit;
		} else {
			qa.ah_attr.dlid = peer->lid;
		}
		mask |= IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
			IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
		hq->mtu = hw_mtu_bytes(p.mtu);
		break;
	case GDAK_QPS_RTS:
		if (gdak_qp_state(&hq->base) == GDAK_QPS_RTS)
			return 0;
		hw_conn_params(hq, NULL, &p);
		qa.qp_state = IBV_QPS_RTS;
		qa.sq_psn = hq->psn;
		qa.timeout = p.timeout;
		qa.retry_cnt = p.retry_cnt;
		qa.rnr_retry = p.rnr_retry;
		qa.max_rd_atomic = p.max_rd_atomic;
		mask |= IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			IBV_QP_MAX_QP_RD_ATOMIC;
		break;
	}
	ret = ibv_modify_qp(hq->qp, &qa, mask);
	if (ret) {
		GDAK_ERR("qp", hq->base.qpn, "ibv_modify_qp(-> %s): %s", gdak_qp_state_name(to),
			 strerror(ret));
		return -ret;
	}
	return 0;
}

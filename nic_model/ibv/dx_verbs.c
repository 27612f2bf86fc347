/* SPDX-License-Identifier: MIT */
/*
 * dx_verbs.c - the DEVX view of verbs-created QPs and CQs
 * (mlx5dv_devx_qp_query / qp_modify, mlx5dv_devx_cq_query): QUERY_QP and
 * QUERY_CQ answered from the verbs object's state and rings, and the QP
 * transitions that need no attributes (2ERR, 2RST) carried out through
 * ibv_modify_qp.
 *
 * The transitions with attributes (RST2INIT, INIT2RTR, RTR2RTS, RTS2RTS)
 * of a verbs QP are refused with BAD_OP and a log line: gdak does not
 * translate a qpc into ibv_qp_attr yet (modify a verbs QP with verbs).
 */
#include <errno.h>
#include <string.h>

#include "dx_api.h"
#include "dx_loc.h"
#include "gv_loc.h"
#include "gv_private.h"
#include "nm_ext.h"

static unsigned prm_state(enum ibv_qp_state s)
{
	switch (s) {
	case IBV_QPS_RESET:
		return 0;
	case IBV_QPS_INIT:
		return 1;
	case IBV_QPS_RTR:
		return 2;
	case IBV_QPS_RTS:
		return 3;
	case IBV_QPS_SQE:
		return 4;
	case IBV_QPS_SQD:
		return 5;
	default:
		return 6;
	}
}

static unsigned ilog2u(uint32_t v)
{
	return v ? 31u - (unsigned)__builtin_clz(v) : 0;
}

static unsigned log2_at_least(uint32_t v)
{
	unsigned l = 0;

	while ((1u << l) < v && l < 31)
		l++;
	return l;
}

/* The checks devx.c makes before the firmware: a header each way, the
 * opcode one of the object's, the object id its own. */
static int verbs_cmd_ok(const void *in, size_t inlen, void *out, size_t outlen, uint32_t id)
{
	return in && out && inlen >= DX_HDR_IN_LEN && outlen >= DX_HDR_OUT_LEN &&
	       dx_get(in, inlen, DXF_IN_OBJ) == id;
}

static int qp_query(struct ibv_qp *qp, const void *in, size_t inlen, void *out, size_t outlen)
{
	struct gv_qp *q = gv_qp_of(qp);
	struct gdak_ibv_qp_rings r;
	struct gdak_ibv_cq_ring cr;
	const struct ibv_qp_attr *a = &q->attr;
	uint32_t pdn = 0;
	int ret = dx_out_begin(out, outlen, DX_QUERY_QP_OUT_LEN, in, inlen);

	if (ret)
		return ret;
	if (gdak_ibv_qp_rings(qp, &r))
		return dx_fail(out, outlen, in, inlen, DX_ST_BAD_RES, 0, "in.qpn/cqn/pd/srqn/rmpn",
			       "QP 0x%x has no rings", qp->qp_num);
	dx_set(out, outlen, DXF_QPC_STATE,
	       prm_state(q->state != IBV_QPS_RESET && gdak_qp_state(q->g) == GDAK_QPS_ERR
				 ? IBV_QPS_ERR
				 : q->state));
	dx_set(out, outlen, DXF_QPC_PM_STATE, 3);
	if (!gdak_ibv_pd_num(qp->pd, &pdn))
		dx_set(out, outlen, DXF_QPC_PD, pdn);
	if (a->path_mtu)
		dx_set(out, outlen, DXF_QPC_MTU, a->path_mtu);
	dx_set(out, outlen, DXF_QPC_LOG_SQ_SIZE, ilog2u(r.sq_cnt));
	if (r.rq_cnt) {
		dx_set(out, outlen, DXF_QPC_LOG_RQ_SIZE, ilog2u(r.rq_cnt));
		dx_set(out, outlen, DXF_QPC_LOG_RQ_STRIDE, ilog2u(r.rq_stride) - 4);
	} else {
		dx_set(out, outlen, DXF_QPC_RQ_TYPE, qp->srq ? 1 : 3);
	}
	dx_set(out, outlen, DXF_QPC_REMOTE_QPN, a->dest_qp_num);
	dx_set(out, outlen, DXF_QPC_NEXT_SEND_PSN, a->sq_psn & 0xffffff);
	dx_set(out, outlen, DXF_QPC_NEXT_RCV_PSN, a->rq_psn & 0xffffff);
	dx_set(out, outlen, DXF_QPC_RETRY_COUNT, a->retry_cnt);
	dx_set(out, outlen, DXF_QPC_RNR_RETRY, a->rnr_retry);
	dx_set(out, outlen, DXF_QPC_MIN_RNR_NAK, a->min_rnr_timer);
	dx_set(out, outlen, DXF_ADS_ACK_TIMEOUT, a->timeout);
	dx_set(out, outlen, DXF_QPC_LOG_SRA_MAX, log2_at_least(a->max_rd_atomic));
	dx_set(out, outlen, DXF_QPC_LOG_RRA_MAX, log2_at_least(a->max_dest_rd_atomic));
	dx_set(out, outlen, DXF_QPC_RRE, !!(a->qp_access_flags & IBV_ACCESS_REMOTE_READ));
	dx_set(out, outlen, DXF_QPC_RWE, !!(a->qp_access_flags & IBV_ACCESS_REMOTE_WRITE));
	dx_set(out, outlen, DXF_QPC_RAE, !!(a->qp_access_flags & IBV_ACCESS_REMOTE_ATOMIC));
	dx_set(out, outlen, DXF_ADS_VHCA_PORT_NUM, a->port_num ? a->port_num : 1);
	dx_set(out, outlen, DXF_ADS_GRH, a->ah_attr.is_global);
	dx_set(out, outlen, DXF_ADS_SRC_ADDR_INDEX, a->ah_attr.grh.sgid_index);
	dx_set(out, outlen, DXF_ADS_HOP_LIMIT, a->ah_attr.grh.hop_limit);
	dx_set_bytes(out, outlen, DXF_ADS_RGID, a->ah_attr.grh.dgid.raw);
	if (qp->send_cq && !gdak_ibv_cq_ring(qp->send_cq, &cr))
		dx_set(out, outlen, DXF_QPC_CQN_SND, cr.cqn);
	if (qp->recv_cq && !gdak_ibv_cq_ring(qp->recv_cq, &cr))
		dx_set(out, outlen, DXF_QPC_CQN_RCV, cr.cqn);
	return 0;
}

GV_EXPORT int gdak_dx_verbs_qp_query(struct ibv_qp *qp, const void *in, size_t inlen, void *out,
				     size_t outlen)
{
	if (!qp || !gdak_dx_is_ours(qp->context))
		return -EOPNOTSUPP;
	if (!verbs_cmd_ok(in, inlen, out, outlen, qp->qp_num) ||
	    dx_get(in, inlen, DXF_IN_OPCODE) != DX_OP_QUERY_QP)
		return -EINVAL;
	return qp_query(qp, in, inlen, out, outlen);
}

GV_EXPORT int gdak_dx_verbs_qp_modify(struct ibv_qp *qp, const void *in, size_t inlen, void *out,
				      size_t outlen)
{
	struct ibv_qp_attr a;
	unsigned op;
	int ret;

	if (!qp || !gdak_dx_is_ours(qp->context))
		return -EOPNOTSUPP;
	op = dx_get(in, inlen, DXF_IN_OPCODE);
	if (!verbs_cmd_ok(in, inlen, out, outlen, qp->qp_num) || !dx_qp_is_modify(op))
		return -EINVAL;
	if (op != DX_OP_2ERR_QP && op != DX_OP_2RST_QP)
		return dx_fail(out, outlen, in, inlen, DX_ST_BAD_OP, 0, "in.opcode",
			       "%s of a verbs-created QP: gdak does not translate a qpc into "
			       "ibv_qp_attr (modify it with ibv_modify_qp)",
			       dx_op_name(op));
	ret = dx_out_begin(out, outlen, DX_HDR_OUT_LEN, in, inlen);
	if (ret)
		return ret;
	memset(&a, 0, sizeof(a));
	a.qp_state = op == DX_OP_2ERR_QP ? IBV_QPS_ERR : IBV_QPS_RESET;
	ret = ibv_modify_qp(qp, &a, IBV_QP_STATE);
	if (ret)
		return dx_fail(out, outlen, in, inlen, DX_ST_BAD_QP_STATE, 0, "qpc.state",
			       "ibv_modify_qp: %s", strerror(ret));
	return 0;
}

GV_EXPORT int gdak_dx_verbs_cq_query(struct ibv_cq *cq, const void *in, size_t inlen, void *out,
				     size_t outlen)
{
	struct gdak_ibv_cq_ring r;
	int ret;

	if (!cq || !gdak_dx_is_ours(cq->context))
		return -EOPNOTSUPP;
	if (gdak_ibv_cq_ring(cq, &r))
		return -EINVAL;
	if (!verbs_cmd_ok(in, inlen, out, outlen, r.cqn) ||
	    dx_get(in, inlen, DXF_IN_OPCODE) != DX_OP_QUERY_CQ)
		return -EINVAL;
	ret = dx_out_begin(out, outlen, DX_QUERY_CQ_OUT_LEN, in, inlen);
	if (ret)
		return ret;
	dx_set(out, outlen, DXF_CQC_CQE_SZ, r.cqe_size == 128 ? 1 : 0);
	dx_set(out, outlen, DXF_CQC_LOG_CQ_SIZE, ilog2u(r.cqe_cnt));
	dx_set(out, outlen, DXF_CQC_C_EQN, DX_EQN_BASE);
	if (r.ncq)
		dx_set(out, outlen, DXF_CQC_PRODUCER_COUNTER,
		       (uint32_t)nm_ext_cq_produced(r.ncq) & 0xffffff);
	return 0;
}

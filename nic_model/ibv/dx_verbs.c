/* SPDX-License-Identifier: MIT */
/*
 * dx_verbs.c - the DEVX view of verbs-created QPs and CQs
 * (mlx5dv_devx_qp_query / qp_modify, mlx5dv_devx_cq_query): QUERY_QP and
 * QUERY_CQ answered from the verbs object's state and rings, and the QP
 * transitions that need no attributes (2ERR, 2RST) carried out through
 * ibv_modify_qp.
 *
 * The transitions with attributes (RST2INIT, INIT2INIT, INIT2RTR, RTR2RTS,
 * RTS2RTS) are translated into ibv_qp_attr and carried out by ibv_modify_qp
 * too, so that the verbs state (ibv_query_qp) and the NIC-model QP stay one:
 * NVSHMEM and others create a QP with verbs and drive it by DEVX.  The
 * fields are checked first as for a DEVX-created QP (dx_queue.c), with
 * ConnectX's status; a from-state the QP is not in is BAD_QP_STATE.
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

#define VFAIL(st, field, ...) dx_fail(out, outlen, in, inlen, st, 0, field, __VA_ARGS__)

/* The qpc of a transition as ibv_qp_attr and the mask RC requires. */
static int qpc_to_attr(unsigned op, const void *in, size_t inlen, void *out, size_t outlen,
		       struct ibv_qp_attr *a, int *mask, int dci, unsigned cur_access)
{
	int ret;

	memset(a, 0, sizeof(*a));
	if (dci && op == DX_OP_INIT2RTR_QP) {
		/* a DCI connects to nobody: the MTU is all INIT2RTR gives it */
		unsigned mtu = dx_get(in, inlen, DXF_QPC_MTU);

		if (mtu < 1 || mtu > 5)
			return VFAIL(DX_ST_BAD_PARAM, "qpc.mtu", "%u (1 = 256 .. 5 = 4096)", mtu);
		a->qp_state = IBV_QPS_RTR;
		a->path_mtu = (enum ibv_mtu)mtu;
		*mask = IBV_QP_STATE | IBV_QP_PATH_MTU;
		return 0;
	}
	switch (op) {
	case DX_OP_RST2INIT_QP:
	case DX_OP_INIT2INIT_QP:
		ret = dx_qp_init_ok(in, inlen, out, outlen);
		if (ret)
			return ret;
		a->qp_state = IBV_QPS_INIT;
		a->pkey_index = 0;
		a->port_num = 1;
		a->qp_access_flags = (dx_get(in, inlen, DXF_QPC_RRE) ? IBV_ACCESS_REMOTE_READ : 0) |
				     (dx_get(in, inlen, DXF_QPC_RWE) ? IBV_ACCESS_REMOTE_WRITE
								     : 0) |
				     (dx_get(in, inlen, DXF_QPC_RAE) ? IBV_ACCESS_REMOTE_ATOMIC
								     : 0);
		*mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
		return 0;
	case DX_OP_INIT2RTR_QP:
		ret = dx_qp_rtr_ok(in, inlen, out, outlen);
		if (ret)
			return ret;
		a->qp_state = IBV_QPS_RTR;
		a->path_mtu = (enum ibv_mtu)dx_get(in, inlen, DXF_QPC_MTU);
		a->dest_qp_num = dx_get(in, inlen, DXF_QPC_REMOTE_QPN);
		a->rq_psn = dx_get(in, inlen, DXF_QPC_NEXT_RCV_PSN);
		a->max_dest_rd_atomic = (uint8_t)(1u << dx_get(in, inlen, DXF_QPC_LOG_RRA_MAX));
		a->min_rnr_timer = (uint8_t)dx_get(in, inlen, DXF_QPC_MIN_RNR_NAK);
		a->ah_attr.is_global = 1;
		a->ah_attr.port_num = 1;
		a->ah_attr.sl = (uint8_t)dx_get(in, inlen, DXF_ADS_SL);
		a->ah_attr.grh.sgid_index = (uint8_t)dx_get(in, inlen, DXF_ADS_SRC_ADDR_INDEX);
		a->ah_attr.grh.hop_limit = (uint8_t)dx_get(in, inlen, DXF_ADS_HOP_LIMIT);
		a->ah_attr.grh.traffic_class = (uint8_t)dx_get(in, inlen, DXF_ADS_TCLASS);
		a->ah_attr.grh.flow_label = dx_get(in, inlen, DXF_ADS_FLOW_LABEL);
		dx_get_bytes(in, inlen, DXF_ADS_RGID, a->ah_attr.grh.dgid.raw);
		*mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
		return 0;
	case DX_OP_RTR2RTS_QP:
		ret = dx_qp_rts_ok(in, inlen, out, outlen);
		if (ret)
			return ret;
		a->qp_state = IBV_QPS_RTS;
		a->sq_psn = dx_get(in, inlen, DXF_QPC_NEXT_SEND_PSN);
		a->retry_cnt = (uint8_t)dx_get(in, inlen, DXF_QPC_RETRY_COUNT);
		a->rnr_retry = (uint8_t)dx_get(in, inlen, DXF_QPC_RNR_RETRY);
		a->timeout = (uint8_t)dx_get(in, inlen, DXF_ADS_ACK_TIMEOUT);
		a->max_rd_atomic = (uint8_t)(1u << dx_get(in, inlen, DXF_QPC_LOG_SRA_MAX));
		*mask = IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC;
		return 0;
	default: /* RTS2RTS: what its opt_param_mask names and verbs can change */
		ret = dx_qp_optpar_ok(in, inlen, out, outlen);
		if (ret)
			return ret;
		a->qp_state = IBV_QPS_RTS;
		*mask = IBV_QP_STATE;
		{
			uint32_t m = dx_get(in, inlen, DXF_QP_OPT_PARAM_MASK);

			/* RRE (bit 1), RAE (2), RWE (3) each change their own right,
			 * the others stay as the QP has them (cur_access, queried) */
			static const struct {
				uint32_t bit;
				enum dx_field_id f;
				unsigned flag;
			} acc[] = { { 1u << 1, DXF_QPC_RRE, IBV_ACCESS_REMOTE_READ },
				    { 1u << 2, DXF_QPC_RAE, IBV_ACCESS_REMOTE_ATOMIC },
				    { 1u << 3, DXF_QPC_RWE, IBV_ACCESS_REMOTE_WRITE } };

			a->qp_access_flags = cur_access;
			for (unsigned i = 0; i < 3; i++) {
				if (!(m & acc[i].bit))
					continue;
				a->qp_access_flags &= ~acc[i].flag;
				if (dx_get(in, inlen, acc[i].f))
					a->qp_access_flags |= acc[i].flag;
				*mask |= IBV_QP_ACCESS_FLAGS;
			}
			if (m & (1u << 6)) { /* RNR_TIMEOUT */
				a->min_rnr_timer = (uint8_t)dx_get(in, inlen, DXF_QPC_MIN_RNR_NAK);
				*mask |= IBV_QP_MIN_RNR_TIMER;
			}
		}
		return 0;
	}
}

static enum ibv_qp_state from_state(unsigned op)
{
	switch (op) {
	case DX_OP_RST2INIT_QP:
		return IBV_QPS_RESET;
	case DX_OP_INIT2INIT_QP:
	case DX_OP_INIT2RTR_QP:
		return IBV_QPS_INIT;
	case DX_OP_RTR2RTS_QP:
		return IBV_QPS_RTR;
	case DX_OP_RTS2RTS_QP:
		return IBV_QPS_RTS;
	default: /* SQERR2RTS, SQD_RTS: no SQ error / drain states here */
		return IBV_QPS_UNKNOWN;
	}
}

GV_EXPORT int gdak_dx_verbs_qp_modify(struct ibv_qp *qp, const void *in, size_t inlen, void *out,
				      size_t outlen)
{
	struct ibv_qp_init_attr ia;
	struct ibv_qp_attr a;
	unsigned op;
	int mask = IBV_QP_STATE, ret;

	if (!qp || !gdak_dx_is_ours(qp->context))
		return -EOPNOTSUPP;
	op = dx_get(in, inlen, DXF_IN_OPCODE);
	if (!verbs_cmd_ok(in, inlen, out, outlen, qp->qp_num) || !dx_qp_is_modify(op))
		return -EINVAL;
	/* a verbs DCT is a DCT object, which QP commands do not name (the
	 * kernel's EINVAL); a verbs DCI takes them */
	if (qp->qp_type == IBV_QPT_DRIVER && qp->srq)
		return -EINVAL;
	ret = dx_cmd_begin(in, inlen,
			   op == DX_OP_2ERR_QP || op == DX_OP_2RST_QP ? 0 : DX_QP_MOD_IN_LEN, out,
			   outlen, NULL);
	if (ret)
		return ret;
	if (op == DX_OP_2ERR_QP || op == DX_OP_2RST_QP) {
		memset(&a, 0, sizeof(a));
		a.qp_state = op == DX_OP_2ERR_QP ? IBV_QPS_ERR : IBV_QPS_RESET;
		mask = IBV_QP_STATE;
	} else {
		memset(&a, 0, sizeof(a));
		unsigned cur_access;

		if (ibv_query_qp(qp, &a, IBV_QP_STATE | IBV_QP_ACCESS_FLAGS, &ia))
			return VFAIL(DX_ST_INT_ERR, NULL, "QP 0x%x: query_qp failed", qp->qp_num);
		cur_access = a.qp_access_flags;
		if (a.qp_state != from_state(op))
			return VFAIL(DX_ST_BAD_QP_STATE, "qpc.state",
				     "%s of a verbs-created QP in state %u", dx_op_name(op),
				     prm_state(a.qp_state));
		ret = qpc_to_attr(op, in, inlen, out, outlen, &a, &mask,
				  ia.qp_type == IBV_QPT_DRIVER, cur_access);
		if (ret)
			return ret;
	}
	ret = ibv_modify_qp(qp, &a, mask);
	if (ret)
		/* what verbs refuse after ConnectX's checks passed: a destination
		 * GID the NIC model cannot reach (not IPv4-mapped) */
		return VFAIL(op == DX_OP_INIT2RTR_QP ? DX_ST_BAD_PARAM : DX_ST_BAD_QP_STATE,
			     op == DX_OP_INIT2RTR_QP ? "qpc.primary_address_path.rgid_rip"
						     : "qpc.state",
			     "%s: ibv_modify_qp: %s", dx_op_name(op), strerror(ret));
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

/* SPDX-License-Identifier: MIT */
/*
 * dx_dct.c - DEVX DC targets: CREATE_DCT, DRAIN_DCT, QUERY_DCT and
 * DESTROY_DCT, executed as NIC-model DCTs (nm_dc.c, made through nm_ext.h).
 *
 * ConnectX creates a DCT ready: there are no state commands, it answers
 * any DCI presenting its dc_access_key from CREATE_DCT on, until DRAIN_DCT
 * (no new connects; DRAINED once the open ones are done - at once here:
 * the NIC model executes a DC request in place) or DESTROY_DCT.  The DCT
 * takes its receive WQEs from the SRQ dctc.srqn_xrqn names, which must be
 * one of gdak's libibverbs (its number: mlx5dv_init_obj SRQ), and writes
 * completions to dctc.cqn, a DEVX or a verbs CQ of the context.
 *
 * The SRQ may also be a DEVX RMP (dx_rmp.c): the DCT then takes SENDs'
 * receive WQEs from the RMP's ring, and its receive CQEs name them by
 * their RMP index.
 *
 * What the NIC model cannot execute is refused as ConnectX refuses a bad
 * value, with a log line saying so: responder scatter to the CQE
 * (cs_res); and a SEND to a DCT on a verbs SRQ: gdak's verbs SRQs have no
 * ring a DEVX object could take WQEs from, so that DCT has no receive
 * queue and a SEND to it fails as a SEND to a responder without one
 * (REMOTE_INVAL_REQ_ERR at the DCI, rule no_rq; the DCT stays ready).
 * Verbs DCTs (mlx5dv_create_qp) take their SRQ's WRs and serve SENDs too.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <gdak/gdak.h>
#include <gdak/nic.h>

#include "dx_loc.h"
#include "gv_loc.h"
#include "nm_ext.h"
#include "gdak_log.h"

enum {
	DCTC_ACTIVE = 0x0,
	DCTC_DRAINED = 0x2,
	DCT_SQ_WQEBBS = 4,
};

#define FAIL(st, field, ...) dx_fail(out, outlen, in, inlen, st, 0, field, __VA_ARGS__)

void *dx_srq_get(struct dx_ctx *c, uint32_t srqn)
{
	return srqn ? gv_srq_hold(c->dev, srqn) : NULL;
}

void dx_srq_put(void *srq)
{
	struct gv_srq *s = srq;

	if (!s)
		return;
	pthread_mutex_lock(&s->lock);
	s->devx_users--;
	pthread_mutex_unlock(&s->lock);
}

/* The fields ConnectX checks, in the order a reader of the dctc meets them. */
static int dct_fields_ok(const void *in, size_t inlen, void *out, size_t outlen)
{
	unsigned mtu = dx_get(in, inlen, DXF_DCTC_MTU);
	unsigned port = dx_get(in, inlen, DXF_DCTC_PORT);
	unsigned cs = dx_get(in, inlen, DXF_DCTC_CS_RES);

	if (!dx_get(in, inlen, DXF_DCTC_PD))
		return FAIL(DX_ST_BAD_RES, "dctc.pd", "PD 0 does not exist");
	if (port != 1)
		return FAIL(DX_ST_BAD_PARAM, "dctc.port", "port %u (the device has port 1)", port);
	if (mtu < 1 || mtu > 5)
		return FAIL(DX_ST_BAD_PARAM, "dctc.mtu", "%u (1 = 256 .. 5 = 4096)", mtu);
	if (dx_get(in, inlen, DXF_DCTC_PKEY_INDEX))
		return FAIL(DX_ST_BAD_PARAM, "dctc.pkey_index",
			    "%u (the P_Key table holds index 0)",
			    dx_get(in, inlen, DXF_DCTC_PKEY_INDEX));
	if (dx_get(in, inlen, DXF_DCTC_MY_ADDR_INDEX))
		return FAIL(DX_ST_BAD_PARAM, "dctc.my_addr_index",
			    "%u (the GID table holds index 0)",
			    dx_get(in, inlen, DXF_DCTC_MY_ADDR_INDEX));
	if (dx_get(in, inlen, DXF_DCTC_ATOMIC_MODE) > 3)
		return FAIL(DX_ST_BAD_PARAM, "dctc.atomic_mode",
			    "%u: operands wider than 8 bytes are not offered (atomic_size_dc)",
			    dx_get(in, inlen, DXF_DCTC_ATOMIC_MODE));
	if (cs > 1)
		/* ConnectX would put small SENDs' data into the CQE; the NIC model
		 * writes it to the receive buffer only */
		return FAIL(DX_ST_BAD_PARAM, "dctc.cs_res",
			    "%u: responder scatter to CQE is not executed by gdak's NIC model "
			    "(0 or 1: disabled)",
			    cs);
	return 0;
}

int dx_dct_create(struct dx_ctx *c, const void *in, size_t inlen, void *out, size_t outlen,
		  struct dx_obj **obj)
{
	struct nm_ext_qp_attr a;
	struct dx_obj *o = NULL, *dcq, *pd, *rmp;
	struct nm_cq *cq;
	struct gv_srq *srq = NULL;
	struct dx_rq_att *att = NULL;
	uint32_t cqn, srqn;
	int ret;

	ret = dx_cmd_begin(in, inlen, DX_DCT_IN_LEN, out, outlen, dct_fields_ok);
	if (ret)
		return ret;
	cqn = dx_get(in, inlen, DXF_DCTC_CQN);
	srqn = dx_get(in, inlen, DXF_DCTC_SRQN);
	pthread_mutex_lock(&c->lock);
	dcq = dx_find(c, DX_OBJ_CQ, cqn);
	pd = dx_find(c, DX_OBJ_PD, dx_get(in, inlen, DXF_DCTC_PD));
	rmp = dx_find(c, DX_OBJ_RMP, srqn);
	pthread_mutex_unlock(&c->lock);
	/* a DEVX CQ, or a verbs one (its number from mlx5dv_init_obj) */
	cq = dcq ? dcq->u.cq.cq : nm_ext_cq_find(c->g, cqn);
	if (!cq)
		return FAIL(DX_ST_BAD_RES, "dctc.cqn", "CQ 0x%x is no CQ of this context", cqn);
	if (!rmp)
		srq = dx_srq_get(c, srqn);
	if (!srq && !rmp)
		return FAIL(DX_ST_BAD_RES, "dctc.srqn_xrqn",
			    "SRQ 0x%x is no SRQ or RMP of this device", srqn);

	o = dx_obj_new(c, DX_OBJ_DCT);
	if (o)
		o->u.dct.ring = aligned_alloc(64, DCT_SQ_WQEBBS * 64 + 64);
	if (!o || !o->u.dct.ring) {
		ret = FAIL(DX_ST_NO_RES, NULL, "out of memory");
		goto err;
	}
	memset(o->u.dct.ring, 0, DCT_SQ_WQEBBS * 64 + 64);
	memset(&a, 0, sizeof(a));
	a.sq = o->u.dct.ring;
	a.sq_wqebb_cnt = DCT_SQ_WQEBBS;
	a.dbrec = (uint32_t *)(void *)((char *)o->u.dct.ring + DCT_SQ_WQEBBS * 64);
	a.scq = cq;
	a.handler = GDAK_DEV_DB_DB;
	a.sharing = GDAK_DEV_SHARED;
	a.mtu = 128u << dx_get(in, inlen, DXF_DCTC_MTU);
	a.nic_thread = -1;
	a.type = GDAK_QPT_DCT;
	a.dc_key = dx_get64(in, inlen, DXF_DCTC_DC_ACCESS_KEY);
	if (rmp) {
		a.rcq = cq;
		att = dx_rq_att_new(rmp, &a);
		if (!att) {
			ret = FAIL(DX_ST_NO_RES, NULL, "out of memory");
			goto err;
		}
	}
	ret = nm_ext_qp_create(c->g, &a, &o->u.dct.qp);
	if (ret) {
		ret = dx_refused(out, outlen, in, inlen, ret, "DCT");
		goto err;
	}
	if (att)
		dx_rq_att_bind(att, o->u.dct.qp);
	/* created ready: it answers from here on */
	ret = gdak_qp_modify(o->u.dct.qp, GDAK_QPS_INIT, NULL);
	if (!ret)
		ret = gdak_qp_modify(o->u.dct.qp, GDAK_QPS_RTR, NULL);
	if (ret) {
		gdak_qp_destroy(o->u.dct.qp);
		ret = FAIL(DX_ST_INT_ERR, NULL, "the NIC model: %s", gdak_strerror(ret));
		goto err;
	}
	o->id = gdak_qp_num(o->u.dct.qp);
	o->destroy_op = DX_OP_DESTROY_DCT;
	o->u.dct.srq = srq;
	o->u.dct.att = att;
	o->u.dct.state = DCTC_ACTIVE;
	memcpy(o->u.dct.dctc, (const uint8_t *)in + 0x80 / 8, DX_DCTC_LEN);
	dx_obj_publish(c, o, 0, (struct dx_obj *const[]){ dcq, pd, rmp }, 3, out, outlen);
	GDAK_DBG("devx", o->id, "CREATE_DCT: CQ 0x%x, %s 0x%x%s", cqn, rmp ? "RMP" : "SRQ", srqn,
		 rmp ? "" : " (SENDs: no receive queue)");
	*obj = o;
	return 0;

err:
	dx_srq_put(srq);
	dx_rq_att_free(att);
	if (o)
		free(o->u.dct.ring);
	free(o);
	return ret;
}

int dx_dct_modify(struct dx_obj *o, const void *in, size_t inlen, void *out, size_t outlen)
{
	unsigned op = dx_get(in, inlen, DXF_IN_OPCODE);
	int ret = dx_out_begin(out, outlen, DX_HDR_OUT_LEN, in, inlen);

	if (ret)
		return ret;
	if (op == DX_OP_ARM_DCT_FOR_KEY_VIOLATION)
		return FAIL(DX_ST_BAD_OP, "in.opcode",
			    "key violation events are not raised by gdak's device "
			    "(QUERY_DCT counts them)");
	/* DRAIN_DCT: no new connects.  The NIC model's DCT in ERR is what a
	 * DCI's connect meets unanswered (nm_dc.c "dc_dct_state"). */
	if (o->u.dct.state == DCTC_ACTIVE) {
		ret = gdak_qp_modify(o->u.dct.qp, GDAK_QPS_ERR, NULL);
		if (ret)
			return FAIL(DX_ST_INT_ERR, NULL, "the NIC model: %s", gdak_strerror(ret));
	}
	o->u.dct.state = DCTC_DRAINED;
	return 0;
}

int dx_dct_query(struct dx_obj *o, const void *in, size_t inlen, void *out, size_t outlen)
{
	struct gdak_nic_dc_stats st;
	int ret = dx_out_begin(out, outlen, DX_QUERY_DCT_OUT_LEN, in, inlen);

	if (ret)
		return ret;
	memcpy((uint8_t *)out + 0x80 / 8, o->u.dct.dctc, DX_DCTC_LEN);
	dx_set(out, outlen, DXF_DCTC_STATE, o->u.dct.state);
	if (!gdak_nic_dc_stats(o->u.dct.qp, &st))
		dx_set(out, outlen, DXF_DCTC_KEY_VIOLATIONS, (uint32_t)st.key_violations);
	return 0;
}

int dx_dct_destroy(struct dx_obj *o)
{
	int ret = gdak_qp_destroy(o->u.dct.qp);

	if (ret)
		return ret;
	dx_srq_put(o->u.dct.srq);
	dx_rq_att_free(o->u.dct.att);
	free(o->u.dct.ring);
	return 0;
}

/* SPDX-License-Identifier: MIT */
/*
 * dx_queue.c - DEVX CQs and QPs: CREATE_CQ / CREATE_QP over umem, the QP
 * state commands and the queries, executed as NIC-model queues on the
 * caller's rings (nm_ext.h).
 *
 * Each command's fields are checked as ConnectX checks them: a value
 * ConnectX refuses gets its status (BAD_PARAM for a value out of range,
 * BAD_RES for an object that does not exist, BAD_QP_STATE for a
 * transition from the wrong state); a value ConnectX accepts that gdak's
 * NIC model cannot execute (128-byte CQEs, CQE compression, UD/UC,
 * a verbs SRQ feeding a DEVX RC QP, ...) is refused the same way with a log line saying
 * so, never accepted and misexecuted.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <gdak/gdak.h>
#include <gdak/mlx5.h>

#include "dx_loc.h"
#include "gv_loc.h"
#include "nm_ext.h"
#include "tr_udp.h"
#include "gdak_log.h"

enum {
	QPC_ST_RC = 0x0,
	QPC_ST_DCI = 0x5,
	QPC_RQ_REGULAR = 0x0,
	QPC_RQ_SRQ = 0x1,
	QPC_RQ_ZERO = 0x3,
	QPC_DBR_VALID = 0x0,
	QPC_DBR_NO_DBR_EXT = 0x1,
	QPS_RST = 0,
	QPS_INIT,
	QPS_RTR,
	QPS_RTS,
	QPS_SQER,
	QPS_SQD,
	QPS_ERR,
};

int dx_ring_kind(struct dx_ctx *c, const void *addr, size_t len, const char *what)
{
	return nm_ext_ring_kind(c->g, addr, len, what);
}

#define FAIL(st, field, ...) dx_fail(out, outlen, in, inlen, st, 0, field, __VA_ARGS__)

/* ---- CQ -------------------------------------------------------------------------------- */

int dx_cq_create(struct dx_ctx *c, const void *in, size_t inlen, void *out, size_t outlen,
		 struct dx_obj **obj)
{
	struct nm_ext_cq_attr a;
	struct dx_obj *o, *uar, *umem = NULL, *dumem = NULL;
	unsigned log_sz, cqe_sz;
	uint64_t off, doff;
	int ret;

	ret = dx_cmd_begin(in, inlen, DX_CREATE_CQ_IN_LEN, out, outlen, NULL);
	if (ret)
		return ret;
	log_sz = dx_get(in, inlen, DXF_CQC_LOG_CQ_SIZE);
	cqe_sz = dx_get(in, inlen, DXF_CQC_CQE_SZ);
	if (log_sz > 22)
		return FAIL(DX_ST_BAD_PARAM, "cqc.log_cq_size", "%u > log_max_cq_sz 22", log_sz);
	if (cqe_sz != 0)
		return FAIL(DX_ST_BAD_PARAM, "cqc.cqe_sz",
			    "%u: gdak's NIC model writes 64-byte CQEs only", cqe_sz);
	if (dx_get(in, inlen, DXF_CQC_CQE_COMP_EN))
		return FAIL(DX_ST_BAD_PARAM, "cqc.cqe_compression_en",
			    "CQE compression is not executed by gdak's NIC model");
	if (dx_get(in, inlen, DXF_CQC_PAGE_OFFSET))
		return FAIL(DX_ST_BAD_PARAM, "cqc.page_offset", "must be 0 with a umem");
	if (dx_get(in, inlen, DXF_CQC_C_EQN) - DX_EQN_BASE >= DX_NUM_EQ)
		return FAIL(DX_ST_BAD_PARAM, "cqc.c_eqn",
			    "EQ %u is not one mlx5dv_devx_query_eqn reports",
			    dx_get(in, inlen, DXF_CQC_C_EQN));
	off = dx_get64(in, inlen, DXF_CQ_UMEM_OFFSET);
	doff = dx_get64(in, inlen, DXF_CQC_DBR_ADDR);
	if (doff % 8)
		return FAIL(DX_ST_BAD_PARAM, "cqc.dbr_addr", "0x%llx is not 8-byte aligned",
			    (unsigned long long)doff);
	if (off % 64)
		return FAIL(DX_ST_BAD_PARAM, "create_cq_in.cq_umem_offset",
			    "0x%llx is not 64-byte aligned", (unsigned long long)off);

	memset(&a, 0, sizeof(a));
	a.ncqe = 1u << log_sz;
	a.cqe_size = 64;
	a.flags = (dx_get(in, inlen, DXF_CQC_OI) ? NM_EXT_CQ_OI : 0) |
		  (dx_get(in, inlen, DXF_CQC_CC) ? NM_EXT_CQ_CC : 0);
	pthread_mutex_lock(&c->lock);
	uar = dx_find(c, DX_OBJ_UAR, dx_get(in, inlen, DXF_CQC_UAR_PAGE));
	a.buf = dx_umem_at(c, dx_get(in, inlen, DXF_CQ_UMEM_ID), off, (uint64_t)a.ncqe * 64, &umem);
	a.dbrec = dx_umem_at(c, dx_get(in, inlen, DXF_CQC_DBR_UMEM_ID), doff, 8, &dumem);
	pthread_mutex_unlock(&c->lock);
	if (!uar)
		return FAIL(DX_ST_BAD_RES, "cqc.uar_page", "0x%x is no UAR of this context",
			    dx_get(in, inlen, DXF_CQC_UAR_PAGE));
	if (!a.buf)
		return FAIL(DX_ST_BAD_PARAM, "create_cq_in.cq_umem_id",
			    "umem 0x%x does not hold %u CQEs at offset 0x%llx",
			    dx_get(in, inlen, DXF_CQ_UMEM_ID), a.ncqe, (unsigned long long)off);
	if (!a.dbrec)
		return FAIL(DX_ST_BAD_PARAM, "cqc.dbr_umem_id",
			    "umem 0x%x does not hold the record at 0x%llx",
			    dx_get(in, inlen, DXF_CQC_DBR_UMEM_ID), (unsigned long long)doff);
	a.arm_db = (uint64_t *)(void *)((char *)uar->u.uar.page + DX_UAR_CQ_ARM);

	o = dx_obj_new(c, DX_OBJ_CQ);
	if (!o)
		return FAIL(DX_ST_NO_RES, NULL, "out of memory");
	ret = nm_ext_cq_create(c->g, &a, &o->u.cq.cq);
	if (ret) {
		free(o);
		return dx_refused(out, outlen, in, inlen, ret, "CQ");
	}
	o->id = nm_ext_cq_num(o->u.cq.cq);
	o->destroy_op = DX_OP_DESTROY_CQ;
	memcpy(o->u.cq.cqc, (const uint8_t *)in + 0x80 / 8, sizeof(o->u.cq.cqc));
	dx_obj_publish(c, o, 0, (struct dx_obj *const[]){ uar, umem, dumem }, 3, out, outlen);
	GDAK_DBG("devx", o->id, "CREATE_CQ: %u CQEs%s%s", a.ncqe,
		 a.flags & NM_EXT_CQ_OI ? ", oi" : "", a.flags & NM_EXT_CQ_CC ? ", cc" : "");
	*obj = o;
	return 0;
}

int dx_cq_query(struct dx_obj *o, const void *in, size_t inlen, void *out, size_t outlen)
{
	int ret = dx_out_begin(out, outlen, DX_QUERY_CQ_OUT_LEN, in, inlen);

	if (ret)
		return ret;
	memcpy((uint8_t *)out + 0x80 / 8, o->u.cq.cqc, sizeof(o->u.cq.cqc));
	dx_set(out, outlen, DXF_CQC_PRODUCER_COUNTER,
	       (uint32_t)nm_ext_cq_produced(o->u.cq.cq) & 0xffffff);
	return 0;
}

int dx_cq_destroy(struct dx_obj *o)
{
	int ret = nm_ext_cq_destroy(o->u.cq.cq);

	if (ret)
		GDAK_INFO("devx", o->id, "DESTROY_CQ: %s (QPs still use it: destroy them first)",
			  gdak_strerror(ret));
	return ret;
}

/* ---- QP: create ------------------------------------------------------------------------- */

static void dir_del(struct dx_obj *o)
{
	gv_dir_del(o->id);
}

int dx_qp_create(struct dx_ctx *c, const void *in, size_t inlen, void *out, size_t outlen,
		 struct dx_obj **obj)
{
	struct nm_ext_qp_attr a;
	struct dx_obj *o, *uar, *scq, *rcq = NULL, *wq = NULL, *dbr = NULL, *pd;
	struct gdak_qp_info info;
	unsigned st, rq_type, log_sq, log_rq = 0, dbr_mode;
	void *srq = NULL;
	struct dx_obj *rmp = NULL;
	struct dx_rq_att *att = NULL;
	uint64_t woff, doff, rq_bytes, sq_bytes;
	void *ring;
	int ret;

	ret = dx_cmd_begin(in, inlen, DX_QP_IN_LEN, out, outlen, NULL);
	if (ret)
		return ret;
	st = dx_get(in, inlen, DXF_QPC_ST);
	if (st != QPC_ST_RC && st != QPC_ST_DCI)
		return FAIL(DX_ST_BAD_PARAM, "qpc.st",
			    "service type 0x%x: gdak's NIC model executes RC (0x0) and DCI (0x5)",
			    st);
	if (dx_get(in, inlen, DXF_QPC_NO_SQ))
		return FAIL(DX_ST_BAD_PARAM, "qpc.no_sq",
			    "receive-only QPs are not executed by gdak");
	log_sq = dx_get(in, inlen, DXF_QPC_LOG_SQ_SIZE);
	if (log_sq < 2 || log_sq > 15)
		return FAIL(DX_ST_BAD_PARAM, "qpc.log_sq_size", "%u (2..log_max_qp_sz 15)", log_sq);
	rq_type = dx_get(in, inlen, DXF_QPC_RQ_TYPE);
	if (st == QPC_ST_DCI) {
		/* a DCI receives nothing: no receive queue, or an SRQ it never
		 * takes from (NVSHMEM names its DCT's) that must exist all the same */
		if (rq_type == QPC_RQ_SRQ) {
			pthread_mutex_lock(&c->lock);
			rmp = dx_find(c, DX_OBJ_RMP, dx_get(in, inlen, DXF_QPC_SRQN));
			pthread_mutex_unlock(&c->lock);
			if (!rmp)
				srq = dx_srq_get(c, dx_get(in, inlen, DXF_QPC_SRQN));
			if (!srq && !rmp)
				return FAIL(DX_ST_BAD_RES, "qpc.srqn_rmpn_xrqn",
					    "SRQ 0x%x is no SRQ or RMP of this device",
					    dx_get(in, inlen, DXF_QPC_SRQN));
			/* held as a dependency all the same; never taken from */
		} else if (rq_type != QPC_RQ_ZERO) {
			return FAIL(DX_ST_BAD_PARAM, "qpc.rq_type",
				    "%u: a DCI has no receive queue (zero-length RQ or SRQ)",
				    rq_type);
		}
	} else if (rq_type == QPC_RQ_REGULAR) {
		log_rq = dx_get(in, inlen, DXF_QPC_LOG_RQ_SIZE);
		if (log_rq > 15)
			return FAIL(DX_ST_BAD_PARAM, "qpc.log_rq_size", "%u > 15", log_rq);
		if (dx_get(in, inlen, DXF_QPC_LOG_RQ_STRIDE) > 4)
			return FAIL(DX_ST_BAD_PARAM, "qpc.log_rq_stride",
				    "%u: receive WQEs of 16 segments at most (stride 256)",
				    dx_get(in, inlen, DXF_QPC_LOG_RQ_STRIDE));
	} else if (rq_type == QPC_RQ_SRQ) {
		/* a DEVX RMP: its ring feeds this QP (dx_rmp.c) */
		pthread_mutex_lock(&c->lock);
		rmp = dx_find(c, DX_OBJ_RMP, dx_get(in, inlen, DXF_QPC_SRQN));
		pthread_mutex_unlock(&c->lock);
		if (!rmp)
			srq = dx_srq_get(c, dx_get(in, inlen, DXF_QPC_SRQN));
		if (srq) {
			dx_srq_put(srq);
			return FAIL(DX_ST_BAD_PARAM, "qpc.srqn_rmpn_xrqn",
				    "0x%x is a verbs SRQ: gdak feeds DEVX RC QPs from DEVX RMPs "
				    "(CREATE_RMP) only",
				    dx_get(in, inlen, DXF_QPC_SRQN));
		}
		if (!rmp)
			return FAIL(DX_ST_BAD_RES, "qpc.srqn_rmpn_xrqn",
				    "0x%x is no RMP of this context",
				    dx_get(in, inlen, DXF_QPC_SRQN));
	} else if (rq_type != QPC_RQ_ZERO) {
		return FAIL(DX_ST_BAD_PARAM, "qpc.rq_type",
			    "%u: not a receive queue type of an RC QP", rq_type);
	}
	dbr_mode = dx_get(in, inlen, DXF_QPC_SEND_DBR_MODE);
	if (dbr_mode != QPC_DBR_VALID && dbr_mode != QPC_DBR_NO_DBR_EXT)
		ret = FAIL(DX_ST_BAD_PARAM, "qpc.send_dbr_mode",
			   "%u (cmd_hca_cap_2 offers 0 and NO_DBR_EXT only)", dbr_mode);
	else if (dx_get(in, inlen, DXF_QPC_PAGE_OFFSET))
		ret = FAIL(DX_ST_BAD_PARAM, "qpc.page_offset", "must be 0 with a umem");
	else if (!dx_get(in, inlen, DXF_QPC_PD))
		ret = FAIL(DX_ST_BAD_RES, "qpc.pd", "PD 0 does not exist");
	if (ret)
		goto err_srq;

	memset(&a, 0, sizeof(a));
	a.sq_wqebb_cnt = 1u << log_sq;
	if (rq_type == QPC_RQ_REGULAR) {
		a.rq_wqe_cnt = 1u << log_rq;
		a.rq_stride = 16u << dx_get(in, inlen, DXF_QPC_LOG_RQ_STRIDE);
	}
	a.flags = dbr_mode == QPC_DBR_NO_DBR_EXT ? NM_EXT_QP_NO_DBREC : 0;
	a.handler = GDAK_DEV_DB_DB;
	a.sharing = GDAK_DEV_SHARED;
	a.nic_thread = -1;
	if (st == QPC_ST_DCI) {
		a.type = GDAK_QPT_DCI;
		a.dci_streams = 1;
	}
	rq_bytes = (uint64_t)a.rq_wqe_cnt * a.rq_stride;
	sq_bytes = (uint64_t)a.sq_wqebb_cnt * 64;
	woff = dx_get64(in, inlen, DXF_QP_WQ_UMEM_OFFSET);
	doff = dx_get64(in, inlen, DXF_QPC_DBR_ADDR);
	if (doff % 8) {
		ret = FAIL(DX_ST_BAD_PARAM, "qpc.dbr_addr", "0x%llx is not 8-byte aligned",
			   (unsigned long long)doff);
		goto err_srq;
	}

	pthread_mutex_lock(&c->lock);
	uar = dx_find(c, DX_OBJ_UAR, dx_get(in, inlen, DXF_QPC_UAR_PAGE));
	pd = dx_find(c, DX_OBJ_PD, dx_get(in, inlen, DXF_QPC_PD));
	scq = dx_find(c, DX_OBJ_CQ, dx_get(in, inlen, DXF_QPC_CQN_SND));
	if (a.rq_wqe_cnt || (rmp && st != QPC_ST_DCI))
		rcq = dx_find(c, DX_OBJ_CQ, dx_get(in, inlen, DXF_QPC_CQN_RCV));
	/* the QP buffer: the receive queue first, the send queue after it (PRM) */
	ring = dx_umem_at(c, dx_get(in, inlen, DXF_QP_WQ_UMEM_ID), woff, rq_bytes + sq_bytes, &wq);
	a.dbrec = dx_umem_at(c, dx_get(in, inlen, DXF_QPC_DBR_UMEM_ID), doff, 8, &dbr);
	pthread_mutex_unlock(&c->lock);
	if (!uar)
		ret = FAIL(DX_ST_BAD_RES, "qpc.uar_page", "0x%x is no UAR of this context",
			   dx_get(in, inlen, DXF_QPC_UAR_PAGE));
	else if (!scq)
		ret = FAIL(DX_ST_BAD_RES, "qpc.cqn_snd", "CQ 0x%x is no DEVX CQ of this context",
			   dx_get(in, inlen, DXF_QPC_CQN_SND));
	else if ((a.rq_wqe_cnt || (rmp && st != QPC_ST_DCI)) && !rcq)
		ret = FAIL(DX_ST_BAD_RES, "qpc.cqn_rcv", "CQ 0x%x is no DEVX CQ of this context",
			   dx_get(in, inlen, DXF_QPC_CQN_RCV));
	else if (!ring)
		ret = FAIL(DX_ST_BAD_PARAM, "create_qp_in.wq_umem_id",
			   "umem 0x%x does not hold %llu bytes of rings at offset 0x%llx",
			   dx_get(in, inlen, DXF_QP_WQ_UMEM_ID),
			   (unsigned long long)(rq_bytes + sq_bytes), (unsigned long long)woff);
	else if (!a.dbrec)
		ret = FAIL(DX_ST_BAD_PARAM, "qpc.dbr_umem_id",
			   "umem 0x%x does not hold the record at 0x%llx",
			   dx_get(in, inlen, DXF_QPC_DBR_UMEM_ID), (unsigned long long)doff);
	if (ret)
		goto err_srq;
	a.rq = a.rq_wqe_cnt ? ring : NULL;
	a.sq = (char *)ring + rq_bytes;
	if (rmp && st != QPC_ST_DCI) {
		att = dx_rq_att_new(rmp, &a);
		if (!att) {
			ret = FAIL(DX_ST_NO_RES, NULL, "out of memory");
			goto err_srq;
		}
	}
	a.uar = uar->u.uar.page;
	/* The NIC model reads the doorbell register as memory, where ConnectX
	 * sees write events: a page whose last QP is gone still holds that
	 * QP's last ring, and a new QP writing the same 8 bytes (same QPN,
	 * index and DS) would go unseen.  The page's first QP starts it clean. */
	pthread_mutex_lock(&c->lock);
	if (!uar->u.uar.qps)
		memset((char *)uar->u.uar.page + GDAK_MLX5_DB_OFFSET, 0, DX_UAR_DB_REGS);
	pthread_mutex_unlock(&c->lock);
	a.scq = scq->u.cq.cq;
	a.rcq = rcq ? rcq->u.cq.cq : NULL;

	o = dx_obj_new(c, DX_OBJ_QP);
	if (o)
		o->u.qp.mb = calloc(1, DX_QP_IN_LEN);
	if (!o || !o->u.qp.mb) {
		ret = FAIL(DX_ST_NO_RES, NULL, "out of memory");
		goto err_obj;
	}
	ret = nm_ext_qp_create(c->g, &a, &o->u.qp.qp);
	if (ret) {
		ret = dx_refused(out, outlen, in, inlen, ret, "QP");
		goto err_obj;
	}
	o->id = gdak_qp_num(o->u.qp.qp);
	o->destroy_op = DX_OP_DESTROY_QP;
	if (att)
		dx_rq_att_bind(att, o->u.qp.qp);
	/* its packets arrive on the device's 4791, as a verbs QP's (gv_qp.c) */
	ret = nm_tr_udp_set_rx_port(o->u.qp.qp, GV_ROCE_PORT);
	if (!ret)
		ret = gdak_qp_info(o->u.qp.qp, &info);
	if (!ret)
		ret = gv_dir_add(c->dev, o->id, info.udp_port);
	if (ret) {
		gdak_qp_destroy(o->u.qp.qp);
		ret = FAIL(DX_ST_NO_RES, NULL, "QP directory: %s", gdak_strerror(ret));
		goto err_obj;
	}
	memcpy(o->u.qp.mb, in, DX_QP_IN_LEN);
	o->u.qp.state = QPS_RST;
	o->u.qp.st = st;
	o->u.qp.srq = srq;
	o->u.qp.att = att;
	pthread_mutex_lock(&c->lock);
	if (uar->u.uar.qps++)
		GDAK_WARN("devx", uar->id,
			  "UAR page shared by %u QPs: gdak's NIC model watches one doorbell "
			  "register per QP; give each QP its own UAR page",
			  uar->u.uar.qps);
	dx_obj_hold(o, uar);
	dx_obj_hold(o, pd);
	dx_obj_hold(o, scq);
	dx_obj_hold(o, rcq);
	dx_obj_hold(o, wq);
	dx_obj_hold(o, dbr);
	dx_obj_hold(o, rmp);
	dx_obj_link(o);
	pthread_mutex_unlock(&c->lock);
	dx_set(out, outlen, DXF_OUT_OBJ, o->id);
	GDAK_DBG("devx", o->id, "CREATE_QP: %s, sq %u WQEBBs, rq %u x %u%s",
		 st == QPC_ST_DCI ? "DCI" : "RC", a.sq_wqebb_cnt, a.rq_wqe_cnt, a.rq_stride,
		 a.flags & NM_EXT_QP_NO_DBREC ? ", no dbrec" : "");
	*obj = o;
	return 0;

err_obj:
	if (o)
		free(o->u.qp.mb);
	free(o);
err_srq:
	dx_rq_att_free(att);
	dx_srq_put(srq);
	return ret;
}

int dx_qp_destroy(struct dx_obj *o)
{
	int ret = gdak_qp_destroy(o->u.qp.qp);

	if (ret)
		return ret;
	dir_del(o);
	if (o->deps[0] && o->deps[0]->type == DX_OBJ_UAR)
		o->deps[0]->u.uar.qps--;
	dx_srq_put(o->u.qp.srq);
	dx_rq_att_free(o->u.qp.att);
	free(o->u.qp.mb);
	return 0;
}

/* ---- QP: state commands ------------------------------------------------------------------ */

int dx_qp_is_modify(unsigned op)
{
	switch (op) {
	case DX_OP_RST2INIT_QP:
	case DX_OP_INIT2INIT_QP:
	case DX_OP_INIT2RTR_QP:
	case DX_OP_RTR2RTS_QP:
	case DX_OP_RTS2RTS_QP:
	case DX_OP_SQERR2RTS_QP:
	case DX_OP_SQD_RTS_QP:
	case DX_OP_2ERR_QP:
	case DX_OP_2RST_QP:
		return 1;
	default:
		return 0;
	}
}

/* The PRM state of the QP now: the NIC model may have moved it to ERR. */
static unsigned qp_state(struct dx_obj *o)
{
	if (o->u.qp.state != QPS_RST && gdak_qp_state(o->u.qp.qp) == GDAK_QPS_ERR)
		o->u.qp.state = QPS_ERR;
	return o->u.qp.state;
}

static void keep(struct dx_obj *o, const void *in, size_t inlen, const enum dx_field_id *f,
		 size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (dx_fields[f[i]].width == 64)
			dx_set64(o->u.qp.mb, DX_QP_IN_LEN, f[i], dx_get64(in, inlen, f[i]));
		else if (dx_fields[f[i]].width == 128) {
			uint8_t b[16];

			dx_get_bytes(in, inlen, f[i], b);
			dx_set_bytes(o->u.qp.mb, DX_QP_IN_LEN, f[i], b);
		} else {
			dx_set(o->u.qp.mb, DX_QP_IN_LEN, f[i], dx_get(in, inlen, f[i]));
		}
	}
}

static const enum dx_field_id init_fields[] = {
	DXF_QPC_RRE,	    DXF_QPC_RWE,	   DXF_QPC_RAE,	     DXF_QPC_ATOMIC_MODE,
	DXF_ADS_PKEY_INDEX, DXF_ADS_VHCA_PORT_NUM, DXF_QPC_PM_STATE,
};
static const enum dx_field_id rtr_fields[] = {
	DXF_QPC_MTU,	       DXF_QPC_LOG_MSG_MAX, DXF_QPC_REMOTE_QPN, DXF_QPC_NEXT_RCV_PSN,
	DXF_QPC_LOG_RRA_MAX,   DXF_QPC_MIN_RNR_NAK, DXF_ADS_GRH,	DXF_ADS_SRC_ADDR_INDEX,
	DXF_ADS_HOP_LIMIT,     DXF_ADS_TCLASS,	    DXF_ADS_FLOW_LABEL, DXF_ADS_RGID,
	DXF_ADS_DSCP,	       DXF_ADS_UDP_SPORT,   DXF_ADS_RMAC_47_32, DXF_ADS_RMAC_31_0,
	DXF_ADS_VHCA_PORT_NUM, DXF_ADS_SL,
};
static const enum dx_field_id rts_fields[] = {
	DXF_QPC_LOG_SRA_MAX,   DXF_QPC_RETRY_COUNT, DXF_QPC_RNR_RETRY,
	DXF_QPC_NEXT_SEND_PSN, DXF_ADS_ACK_TIMEOUT,
};

/* opt_param_mask (PRM "QP optional parameters"; the kernel's MLX5_QP_OPTPAR_*):
 * which of a transition's optional fields the command sets. */
enum {
	OPT_ALT_PATH = 1u << 0,
	OPT_RRE = 1u << 1,
	OPT_RAE = 1u << 2,
	OPT_RWE = 1u << 3,
	OPT_PKEY_INDEX = 1u << 4,
	OPT_Q_KEY = 1u << 5,
	OPT_RNR_TIMEOUT = 1u << 6,
	OPT_PRI_PATH = 1u << 7,
	OPT_SRA_MAX = 1u << 8,
	OPT_RRA_MAX = 1u << 9,
	OPT_PM_STATE = 1u << 10,
	OPT_RETRY_COUNT = 1u << 12,
	OPT_RNR_RETRY = 1u << 13,
	OPT_ACK_TIMEOUT = 1u << 14,
	OPT_LAG_TX_AFF = 1u << 15,
	OPT_PRI_PORT = 1u << 16,
	QPC_PM_MIGRATED = 3,
};

/* The optional parameters an RC transition takes (the kernel's opt_mask
 * table, and RTS2RTS's primary path and ack timeout that its
 * rts2rts_qp_dscp / udp_sport / timeout paths send); RST2INIT has none
 * (its mask is not read). */
static uint32_t opt_allowed(unsigned op)
{
	switch (op) {
	case DX_OP_INIT2INIT_QP:
		return OPT_RRE | OPT_RAE | OPT_RWE | OPT_PKEY_INDEX | OPT_PRI_PORT | OPT_LAG_TX_AFF;
	case DX_OP_INIT2RTR_QP:
		return OPT_ALT_PATH | OPT_RRE | OPT_RAE | OPT_RWE | OPT_PKEY_INDEX | OPT_LAG_TX_AFF;
	case DX_OP_RTR2RTS_QP:
		return OPT_ALT_PATH | OPT_RRE | OPT_RAE | OPT_RWE | OPT_PM_STATE | OPT_RNR_TIMEOUT;
	case DX_OP_RTS2RTS_QP:
		return OPT_RRE | OPT_RAE | OPT_RWE | OPT_RNR_TIMEOUT | OPT_PM_STATE | OPT_ALT_PATH |
		       OPT_PRI_PATH | OPT_ACK_TIMEOUT | OPT_LAG_TX_AFF;
	default:
		return ~0u;
	}
}

int dx_qp_optpar_ok(const void *in, size_t inlen, void *out, size_t outlen)
{
	unsigned op = dx_get(in, inlen, DXF_IN_OPCODE);
	uint32_t m = dx_get(in, inlen, DXF_QP_OPT_PARAM_MASK);

	if (op == DX_OP_RST2INIT_QP)
		return 0;
	if (m & ~opt_allowed(op))
		return FAIL(DX_ST_BAD_PARAM, "create_qp_in.opt_param_mask",
			    "0x%x: bits 0x%x are no optional parameters of %s on an RC QP", m,
			    m & ~opt_allowed(op), dx_op_name(op));
	if (m & OPT_ALT_PATH)
		return FAIL(DX_ST_BAD_PARAM, "create_qp_in.opt_param_mask",
			    "alternate path (APM) is not executed by gdak's NIC model");
	if ((m & OPT_PM_STATE) && dx_get(in, inlen, DXF_QPC_PM_STATE) != QPC_PM_MIGRATED)
		return FAIL(DX_ST_BAD_PARAM, "qpc.pm_state",
			    "%u: without an alternate path the QP stays MIGRATED (3)",
			    dx_get(in, inlen, DXF_QPC_PM_STATE));
	if ((m & OPT_PKEY_INDEX) && dx_get(in, inlen, DXF_ADS_PKEY_INDEX))
		return FAIL(DX_ST_BAD_PARAM, "qpc.primary_address_path.pkey_index",
			    "%u (the P_Key table holds index 0)",
			    dx_get(in, inlen, DXF_ADS_PKEY_INDEX));
	if ((m & OPT_PRI_PATH) && dx_get(in, inlen, DXF_ADS_VHCA_PORT_NUM) > 1)
		return FAIL(DX_ST_BAD_PARAM, "qpc.primary_address_path.vhca_port_num",
			    "port %u (the device has port 1)",
			    dx_get(in, inlen, DXF_ADS_VHCA_PORT_NUM));
	return 0;
}

/* RTS2RTS: what its mask names, into the QUERY_QP image.  The NIC model's
 * timing depends on none of them (the RNR and ack timers are its own),
 * and the UDP wire carries no DSCP: they are kept, not executed. */
static void rts2rts_keep(struct dx_obj *o, const void *in, size_t inlen)
{
	static const enum dx_field_id acc[] = { DXF_QPC_RRE, DXF_QPC_RWE, DXF_QPC_RAE };
	static const enum dx_field_id rnr = DXF_QPC_MIN_RNR_NAK, ack = DXF_ADS_ACK_TIMEOUT,
				      pm = DXF_QPC_PM_STATE;
	static const enum dx_field_id path[] = { DXF_ADS_DSCP, DXF_ADS_UDP_SPORT, DXF_ADS_TCLASS,
						 DXF_ADS_FLOW_LABEL, DXF_ADS_HOP_LIMIT };
	uint32_t m = dx_get(in, inlen, DXF_QP_OPT_PARAM_MASK);

	if (m & OPT_RRE)
		keep(o, in, inlen, &acc[0], 1);
	if (m & OPT_RWE)
		keep(o, in, inlen, &acc[1], 1);
	if (m & OPT_RAE)
		keep(o, in, inlen, &acc[2], 1);
	if (m & OPT_RNR_TIMEOUT)
		keep(o, in, inlen, &rnr, 1);
	if (m & OPT_ACK_TIMEOUT)
		keep(o, in, inlen, &ack, 1);
	if (m & OPT_PM_STATE)
		keep(o, in, inlen, &pm, 1);
	if (m & OPT_PRI_PATH)
		keep(o, in, inlen, path, sizeof(path) / sizeof(path[0]));
}

/* RST2INIT names the port; a later transition may leave it 0, the port
 * the QP has (NVSHMEM's INIT2RTR mailboxes do) */
static int check_port(const void *in, size_t inlen, void *out, size_t outlen)
{
	unsigned port = dx_get(in, inlen, DXF_ADS_VHCA_PORT_NUM);

	if (port != 1 && (port || dx_get(in, inlen, DXF_IN_OPCODE) == DX_OP_RST2INIT_QP))
		return FAIL(DX_ST_BAD_PARAM, "qpc.primary_address_path.vhca_port_num",
			    "port %u (the device has port 1)", port);
	return 0;
}

/* The fields RST2INIT / INIT2INIT carry, checked as ConnectX checks them
 * (also for verbs-created QPs, dx_verbs.c): 0, or the status in out. */
int dx_qp_init_ok(const void *in, size_t inlen, void *out, size_t outlen)
{
	unsigned am = dx_get(in, inlen, DXF_QPC_ATOMIC_MODE);
	int ret = dx_qp_optpar_ok(in, inlen, out, outlen);

	if (ret)
		return ret;

	if (dx_get(in, inlen, DXF_IN_OPCODE) == DX_OP_RST2INIT_QP) {
		ret = check_port(in, inlen, out, outlen);
		if (ret)
			return ret;
	}
	if (dx_get(in, inlen, DXF_ADS_PKEY_INDEX) != 0)
		return FAIL(DX_ST_BAD_PARAM, "qpc.primary_address_path.pkey_index",
			    "%u (the P_Key table holds index 0)",
			    dx_get(in, inlen, DXF_ADS_PKEY_INDEX));
	/* 0 none, 1 IB spec, 2 only 8 bytes, 3 up to 8 bytes; wider: DC/extended */
	if (am > 3)
		return FAIL(DX_ST_BAD_PARAM, "qpc.atomic_mode",
			    "%u: operands wider than 8 bytes are not offered (atomic_size_qp)", am);
	return 0;
}

static int to_init(struct dx_obj *o, const void *in, size_t inlen, void *out, size_t outlen)
{
	int ret = dx_qp_init_ok(in, inlen, out, outlen);

	if (ret)
		return ret;
	if (dx_get(in, inlen, DXF_IN_OPCODE) == DX_OP_RST2INIT_QP) {
		ret = gdak_qp_modify(o->u.qp.qp, GDAK_QPS_INIT, NULL);
		if (ret)
			return FAIL(DX_ST_INT_ERR, NULL, "the NIC model: %s", gdak_strerror(ret));
	}
	keep(o, in, inlen, init_fields, sizeof(init_fields) / sizeof(init_fields[0]));
	if (o->u.qp.st == QPC_ST_DCI) {
		/* a DCI's WQEs carry the key each DCT checks; the context's copy is
		 * kept for QUERY_QP */
		static const enum dx_field_id k = DXF_QPC_DC_ACCESS_KEY;

		keep(o, in, inlen, &k, 1);
	}
	o->u.qp.state = QPS_INIT;
	return 0;
}

/* INIT2RTR's path MTU and message size, for RC and DCI alike. */
static int mtu_msg_ok(const void *in, size_t inlen, void *out, size_t outlen)
{
	unsigned mtu = dx_get(in, inlen, DXF_QPC_MTU);

	if (mtu < 1 || mtu > 5)
		return FAIL(DX_ST_BAD_PARAM, "qpc.mtu", "%u (1 = 256 .. 5 = 4096)", mtu);
	if (dx_get(in, inlen, DXF_QPC_LOG_MSG_MAX) > 30)
		return FAIL(DX_ST_BAD_PARAM, "qpc.log_msg_max", "%u > log_max_msg 30",
			    dx_get(in, inlen, DXF_QPC_LOG_MSG_MAX));
	return 0;
}

/* The end of a transition: ret is the NIC model's answer to it; on success
 * the n fields f of in are kept for QUERY_QP and the QP is in state. */
static int moved(struct dx_obj *o, const void *in, size_t inlen, void *out, size_t outlen, int ret,
		 const enum dx_field_id *f, size_t n, unsigned state)
{
	if (ret)
		return FAIL(DX_ST_INT_ERR, NULL, "the NIC model: %s", gdak_strerror(ret));
	keep(o, in, inlen, f, n);
	o->u.qp.state = state;
	return 0;
}

/* A DCI's INIT2RTR: no peer, no address path to check beyond the port
 * (the AV of each WQE is the address); MTU and message size as for RC. */
static int dci_to_rtr(struct dx_obj *o, const void *in, size_t inlen, void *out, size_t outlen)
{
	int ret = check_port(in, inlen, out, outlen);

	if (!ret)
		ret = mtu_msg_ok(in, inlen, out, outlen);
	if (ret)
		return ret;
	return moved(o, in, inlen, out, outlen, gdak_qp_modify(o->u.qp.qp, GDAK_QPS_RTR, NULL),
		     rtr_fields, sizeof(rtr_fields) / sizeof(rtr_fields[0]), QPS_RTR);
}

/* The fields INIT2RTR carries, checked as ConnectX checks them. */
int dx_qp_rtr_ok(const void *in, size_t inlen, void *out, size_t outlen)
{
	unsigned rra = dx_get(in, inlen, DXF_QPC_LOG_RRA_MAX);
	unsigned sidx = dx_get(in, inlen, DXF_ADS_SRC_ADDR_INDEX);
	int ret = check_port(in, inlen, out, outlen);

	if (!ret)
		ret = dx_qp_optpar_ok(in, inlen, out, outlen);
	if (!ret)
		ret = mtu_msg_ok(in, inlen, out, outlen);
	if (ret)
		return ret;
	if (rra > 4)
		return FAIL(DX_ST_BAD_PARAM, "qpc.log_rra_max", "%u > log_max_ra_res_qp 4", rra);
	/* RoCE: every packet carries a GRH, and its source is a GID entry */
	if (!dx_get(in, inlen, DXF_ADS_GRH))
		return FAIL(DX_ST_BAD_PARAM, "qpc.primary_address_path.grh",
			    "0 on a RoCE port (the address path needs the GRH)");
	if (sidx != 0)
		return FAIL(DX_ST_BAD_PARAM, "qpc.primary_address_path.src_addr_index",
			    "%u (the GID table holds index 0)", sidx);
	return 0;
}

static int to_rtr(struct dx_obj *o, const void *in, size_t inlen, void *out, size_t outlen)
{
	struct gdak_qp_info peer;
	unsigned mtu = dx_get(in, inlen, DXF_QPC_MTU);
	unsigned sidx = dx_get(in, inlen, DXF_ADS_SRC_ADDR_INDEX);
	int ret = dx_qp_rtr_ok(in, inlen, out, outlen);

	if (ret)
		return ret;
	memset(&peer, 0, sizeof(peer));
	peer.version = GDAK_QP_INFO_VERSION;
	peer.qpn = dx_get(in, inlen, DXF_QPC_REMOTE_QPN);
	peer.psn = dx_get(in, inlen, DXF_QPC_NEXT_RCV_PSN);
	peer.mtu = 128u << mtu;
	dx_get_bytes(in, inlen, DXF_ADS_RGID, peer.gid);
	peer.udp_port = GV_ROCE_PORT;
	peer.transport = GDAK_QPI_UDP;
	peer.gid_index = (uint8_t)sidx;
	return moved(o, in, inlen, out, outlen, gdak_qp_modify(o->u.qp.qp, GDAK_QPS_RTR, &peer),
		     rtr_fields, sizeof(rtr_fields) / sizeof(rtr_fields[0]), QPS_RTR);
}

/* The fields RTR2RTS carries, checked as ConnectX checks them. */
int dx_qp_rts_ok(const void *in, size_t inlen, void *out, size_t outlen)
{
	unsigned sra = dx_get(in, inlen, DXF_QPC_LOG_SRA_MAX);
	int ret = dx_qp_optpar_ok(in, inlen, out, outlen);

	if (ret)
		return ret;
	if (sra > 4)
		return FAIL(DX_ST_BAD_PARAM, "qpc.log_sra_max", "%u > log_max_ra_req_qp 4", sra);
	return 0;
}

static int to_rts(struct dx_obj *o, const void *in, size_t inlen, void *out, size_t outlen)
{
	int ret = dx_qp_rts_ok(in, inlen, out, outlen);

	if (ret)
		return ret;
	if (o->u.qp.st == QPC_ST_DCI) {
		/* executed in place on each DCT (nm_dc.c): no wire requester to
		 * give the PSN and retry counts (kept for QUERY_QP) */
		ret = gdak_qp_modify(o->u.qp.qp, GDAK_QPS_RTS, NULL);
	} else {
		ret = nm_tr_udp_set_sq_psn(o->u.qp.qp, dx_get(in, inlen, DXF_QPC_NEXT_SEND_PSN));
		if (!ret)
			ret = nm_tr_udp_set_retry(o->u.qp.qp,
						  (uint8_t)dx_get(in, inlen, DXF_QPC_RETRY_COUNT),
						  (uint8_t)dx_get(in, inlen, DXF_QPC_RNR_RETRY));
		if (!ret)
			ret = gdak_qp_modify(o->u.qp.qp, GDAK_QPS_RTS, NULL);
	}
	return moved(o, in, inlen, out, outlen, ret, rts_fields,
		     sizeof(rts_fields) / sizeof(rts_fields[0]), QPS_RTS);
}

int dx_qp_modify(struct dx_obj *o, const void *in, size_t inlen, void *out, size_t outlen)
{
	unsigned op = dx_get(in, inlen, DXF_IN_OPCODE);
	unsigned from = qp_state(o);
	unsigned need_in = op == DX_OP_2ERR_QP || op == DX_OP_2RST_QP ? DX_HDR_IN_LEN
								      : DX_QP_MOD_IN_LEN;
	int ret;

	ret = dx_cmd_begin(in, inlen, need_in, out, outlen, NULL);
	if (ret)
		return ret;
	switch (op) {
	case DX_OP_2RST_QP:
		ret = gdak_qp_modify(o->u.qp.qp, GDAK_QPS_RESET, NULL);
		if (ret)
			return FAIL(DX_ST_INT_ERR, NULL, "the NIC model: %s", gdak_strerror(ret));
		if (o->u.qp.att)
			dx_rq_att_reset(o->u.qp.att);
		o->u.qp.state = QPS_RST;
		return 0;
	case DX_OP_2ERR_QP:
		if (from != QPS_ERR) {
			ret = gdak_qp_modify(o->u.qp.qp, GDAK_QPS_ERR, NULL);
			if (ret)
				return FAIL(DX_ST_INT_ERR, NULL, "the NIC model: %s",
					    gdak_strerror(ret));
		}
		o->u.qp.state = QPS_ERR;
		return 0;
	case DX_OP_RST2INIT_QP:
		if (from != QPS_RST)
			break;
		return to_init(o, in, inlen, out, outlen);
	case DX_OP_INIT2INIT_QP:
		if (from != QPS_INIT)
			break;
		return to_init(o, in, inlen, out, outlen);
	case DX_OP_INIT2RTR_QP:
		if (from != QPS_INIT)
			break;
		if (o->u.qp.st == QPC_ST_DCI)
			return dci_to_rtr(o, in, inlen, out, outlen);
		return to_rtr(o, in, inlen, out, outlen);
	case DX_OP_RTR2RTS_QP:
		if (from != QPS_RTR)
			break;
		return to_rts(o, in, inlen, out, outlen);
	case DX_OP_RTS2RTS_QP:
		if (from != QPS_RTS)
			break;
		ret = dx_qp_optpar_ok(in, inlen, out, outlen);
		if (ret)
			return ret;
		rts2rts_keep(o, in, inlen);
		return 0;
	default: /* SQERR2RTS, SQD_RTS: the NIC model has no SQ error / drain states */
		break;
	}
	return FAIL(DX_ST_BAD_QP_STATE, "qpc.state", "%s from state %u", dx_op_name(op), from);
}

int dx_qp_query(struct dx_obj *o, const void *in, size_t inlen, void *out, size_t outlen)
{
	int ret = dx_out_begin(out, outlen, DX_QUERY_QP_OUT_LEN, in, inlen);

	if (ret)
		return ret;
	/* qpc at 0xc0 in both create_qp_in and query_qp_out */
	memcpy((uint8_t *)out + 0xc0 / 8, o->u.qp.mb + 0xc0 / 8, (0x800 - 0xc0) / 8);
	dx_set(out, outlen, DXF_QPC_STATE, qp_state(o));
	return 0;
}

/* SPDX-License-Identifier: MIT */
/*
 * gv_qp.c - RC QPs: create (ibv_create_qp / create_qp_ex with the ibv_wr_*
 * API), modify with the attribute masks checked as the kernel checks them
 * (ib_modify_qp_is_ok: every required attribute present, nothing outside
 * required + optional, else EINVAL), query, destroy.
 *
 * The NIC-model QP is connected at RTR (a responder-only QP - perftest's
 * bandwidth server - never leaves it); the send PSN comes with RTS and is
 * given to the NIC model's requester then, before it has sent anything.
 * The peer is its GID's IPv4 address, UDP port 4791, and its QPN: what
 * the address vector and dest_qp_num say (gv_addr.c).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gdak/gdak.h>
#include <gdak/dev/wqe.h>

#include "gv_loc.h"
#include "gv_private.h"
#include "nm_ext.h"
#include "tr_udp.h"

static uint32_t roundup_pow2(uint32_t v)
{
	uint32_t n = 1;

	while (n < v)
		n <<= 1;
	return n;
}

/* ---- create / destroy --------------------------------------------------------- */

static const char *qpt_name(enum ibv_qp_type t)
{
	switch (t) {
	case IBV_QPT_UC:
		return "UC";
	case IBV_QPT_UD:
		return "UD";
	case IBV_QPT_RAW_PACKET:
		return "RAW_PACKET";
	case IBV_QPT_XRC_SEND:
		return "XRC_SEND";
	case IBV_QPT_XRC_RECV:
		return "XRC_RECV";
	case IBV_QPT_DRIVER:
		return "DRIVER";
	default:
		return "unknown";
	}
}

/*
 * dc: a Dynamically Connected QP (gdak_ibv_create_dc_qp), else RC.  A DCI
 * is a send queue whose WQEs carry an address vector; it has no receive
 * queue (ConnectX's DCI has none: the receive attributes are ignored, as
 * the kernel ignores them).  A DCT takes its receive WRs from the SRQ it
 * needs and has no send queue of its own: the NIC-model QP gets a 4-WQEBB
 * one nobody rings, reported as max_send_wr 0.
 */
_Static_assert((int)GDAK_IBV_DCI == (int)GDAK_QPT_DCI && (int)GDAK_IBV_DCT == (int)GDAK_QPT_DCT,
	       "gv_private.h's DC types are gdak_qp_type's");

static struct ibv_qp *qp_create(struct ibv_context *ctx, struct ibv_qp_init_attr_ex *a,
				const struct gdak_ibv_dc_attr *dc)
{
	struct gv_context *c = gv_ctx(ctx);
	struct nm_ext_qp_attr ga;
	size_t rq_b;
	struct gdak_qp_info info;
	struct gv_qp *q;
	uint32_t bbs, sq, rq = 0, rsge = 1, max_wr;
	int ret;

	uint32_t dct = dc && dc->type == GDAK_QPT_DCT, dci = dc && dc->type == GDAK_QPT_DCI;

	if (dc && (a->qp_type != IBV_QPT_DRIVER || (!dct && !dci))) {
		GDAK_ERR(NULL, 0,
			 "create DC QP: qp_type %d (DC QPs are IBV_QPT_DRIVER), DC type %u",
			 a->qp_type, dc->type);
		errno = EINVAL;
		return NULL;
	}
	if (dct && (!a->srq || !a->recv_cq)) {
		/* the kernel's answer: a DCT receives through its SRQ into its CQ */
		GDAK_ERR(NULL, 0, "create DCT: needs %s", !a->srq ? "an SRQ" : "a receive CQ");
		errno = EINVAL;
		return NULL;
	}
	if (dct && !a->send_cq)
		a->send_cq = a->recv_cq; /* only what the NIC-model QP is built on */
	if (dci) {
		a->srq = NULL;
		a->recv_cq = NULL;
		a->cap.max_recv_wr = a->cap.max_recv_sge = 0;
	}
	if (dct)
		a->cap.max_send_wr = a->cap.max_send_sge = a->cap.max_inline_data = 0;
	if (!dc && a->qp_type != IBV_QPT_RC) {
		/* UC, UD, XRC, raw packet: the NIC model speaks RC.  EOPNOTSUPP,
		 * as the kernel's mlx5 and rxe drivers answer a type they lack */
		GDAK_ERR(NULL, 0,
			 "create_qp: QP type %d (%s) is not supported: the emulated device runs RC "
			 "QPs only (EOPNOTSUPP)",
			 a->qp_type, qpt_name(a->qp_type));
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (!(a->comp_mask & IBV_QP_INIT_ATTR_PD) || !a->pd || !a->send_cq ||
	    (!a->recv_cq && !a->srq && !dci) ||
	    (a->comp_mask & ~(uint32_t)(IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS |
					IBV_QP_INIT_ATTR_CREATE_FLAGS))) {
		errno = EINVAL;
		return NULL;
	}
	if ((a->comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) && a->create_flags) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if ((a->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) &&
	    (a->send_ops_flags &
	     ~(uint64_t)(IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |
			 IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM |
			 IBV_QP_EX_WITH_RDMA_READ | IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |
			 IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD))) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (a->cap.max_send_wr > GV_MAX_QP_WR || a->cap.max_recv_wr > GV_MAX_QP_WR ||
	    a->cap.max_send_sge > GV_MAX_SGE || a->cap.max_recv_sge > GV_MAX_SGE ||
	    a->cap.max_inline_data > GV_MAX_INLINE) {
		errno = EINVAL;
		return NULL;
	}
	/* the largest WQE a WR may need: ctrl + raddr + SGEs or inline data */
	bbs = gdak_dev_wqe_bbs_sge(1, a->cap.max_send_sge ? a->cap.max_send_sge : 1);
	if (gdak_dev_wqe_bbs_inline(1, a->cap.max_inline_data) > bbs)
		bbs = gdak_dev_wqe_bbs_inline(1, a->cap.max_inline_data);
	if (dci) {
		/* and a DCI's carry the 48-byte address vector after the ctrl
		 * segment; an atomic (ctrl, AV, raddr, atomic, data: 112 bytes)
		 * is the least they must hold */
		uint32_t sge = a->cap.max_send_sge ? a->cap.max_send_sge : 1;
		uint32_t b = 16 + 48 + 16 + 16 * sge;
		uint32_t in = 16 + 48 + 16 + ((4 + a->cap.max_inline_data + 15) & ~15u);

		if (in > b)
			b = in;
		if (b < 112)
			b = 112;
		bbs = (b + 63) / 64;
	}
	max_wr = a->cap.max_send_wr ? a->cap.max_send_wr : 1;
	sq = roundup_pow2(max_wr * bbs);
	if (sq < 4)
		sq = 4;
	if (sq > GV_MAX_QP_WR) {
		errno = EINVAL;
		return NULL;
	}
	if (!a->srq && a->cap.max_recv_wr) {
		rq = roundup_pow2(a->cap.max_recv_wr);
		rsge = roundup_pow2(a->cap.max_recv_sge ? a->cap.max_recv_sge : 1);
	} else if (a->srq) {
		/* the SRQ's WRs are handed to this QP's own RQ as messages need them */
		rq = roundup_pow2(gv_srq_of(a->srq)->max_wr);
		rsge = roundup_pow2(gv_srq_of(a->srq)->max_sge);
	}
	q = aligned_alloc(64, (sizeof(*q) + 63) & ~(size_t)63);
	if (!q) {
		errno = ENOMEM;
		return NULL;
	}
	memset(q, 0, sizeof(*q));
	/* libmlx5's layout: one buffer, the RQ at offset 0 and the SQ after it;
	 * the doorbell record pair on a line of its own */
	q->rq_stride = 16 * rsge;
	rq_b = (size_t)rq * q->rq_stride;
	q->sq_off = (rq_b + 63) & ~(size_t)63;
	q->qbuf_len = (q->sq_off + (size_t)sq * 64 + 4095) & ~(size_t)4095;
	q->qbuf = aligned_alloc(4096, q->qbuf_len);
	q->dbrec = aligned_alloc(64, 64);
	if (!q->qbuf || !q->dbrec) {
		ret = -ENOMEM;
		goto err;
	}
	memset(q->qbuf, 0, q->qbuf_len);
	memset(q->dbrec, 0, 64);
	memset(&ga, 0, sizeof(ga));
	ga.sq = (uint8_t *)q->qbuf + q->sq_off;
	ga.sq_wqebb_cnt = sq;
	ga.rq = rq ? q->qbuf : NULL;
	ga.rq_wqe_cnt = rq;
	ga.rq_stride = rq ? q->rq_stride : 0;
	ga.dbrec = q->dbrec;
	ga.scq = gv_cq_of(a->send_cq)->ncq;
	ga.rcq = rq ? gv_cq_of(a->recv_cq ? a->recv_cq : a->send_cq)->ncq : NULL;
	ga.handler = GDAK_DEV_DB_BF;
	ga.sharing = GDAK_DEV_EXCLUSIVE;
	ga.mtu = 4096; /* the path MTU is the smaller of this and the peer's (RTR) */
	ga.nic_thread = -1;
	if (dc) {
		ga.type = dc->type;
		ga.dci_streams = dci ? dc->streams : 0;
		ga.dc_key = dct ? dc->key : 0;
	}
	ret = nm_ext_qp_create(c->dev->g, &ga, &q->g);
	if (ret)
		goto err;
	/* post_send kicks after each doorbell (gv_post.c sq_ring), so the NIC
	 * thread may sleep in the kernel rather than poll the ring, until a
	 * program takes the rings over (mlx5dv_init_obj) */
	nm_ext_qp_doorbell_notify(q->g, 1);
	ret = gdak_qp_export(q->g, &q->d);
	if (!ret)
		ret = gdak_qp_info(q->g, &info);
	if (ret)
		goto err_qp;
	q->slots = calloc(sq, sizeof(*q->slots));
	q->rq_cnt = rq;
	q->rwrid = rq ? calloc(rq, sizeof(*q->rwrid)) : NULL;
	if (!q->slots || (rq && !q->rwrid)) {
		ret = -ENOMEM;
		goto err_mem;
	}
	q->ctx = c;
	q->ex = (a->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) != 0;
	q->sig_all = a->sq_sig_all != 0;
	q->state = IBV_QPS_RESET;
	q->dc_type = (uint8_t)(dc ? dc->type : 0);
	q->cap.max_send_wr = dct ? 0 : sq / bbs;
	q->cap.max_recv_wr = a->srq ? 0 : rq;
	q->cap.max_send_sge = dct ? 0 : a->cap.max_send_sge;
	q->cap.max_recv_sge = a->srq ? 0 : rsge;
	q->cap.max_inline_data = a->cap.max_inline_data;
	pthread_spin_init(&q->sq_lock, PTHREAD_PROCESS_PRIVATE);
	pthread_spin_init(&q->rq_lock, PTHREAD_PROCESS_PRIVATE);
	q->qpx.qp_base.context = ctx;
	q->qpx.qp_base.qp_context = a->qp_context;
	q->qpx.qp_base.pd = a->pd;
	q->qpx.qp_base.send_cq = a->send_cq;
	q->qpx.qp_base.recv_cq = a->recv_cq;
	q->qpx.qp_base.srq = a->srq;
	q->qpx.qp_base.handle = gdak_qp_num(q->g);
	q->qpx.qp_base.qp_num = gdak_qp_num(q->g);
	q->qpx.qp_base.state = IBV_QPS_RESET;
	q->qpx.qp_base.qp_type = dc ? IBV_QPT_DRIVER : IBV_QPT_RC;
	pthread_mutex_init(&q->qpx.qp_base.mutex, NULL);
	pthread_cond_init(&q->qpx.qp_base.cond, NULL);
	gv_qp_init_wr_ops(q);
	q->swq = (struct gv_wq){ .qp = q, .kind = GV_WQ_SEND };
	q->rwq = (struct gv_wq){ .qp = q, .kind = GV_WQ_RECV };
	q->scq = gv_cq_of(a->send_cq);
	ret = -gv_cq_attach(q->scq, &q->swq);
	if (ret)
		goto err_mem;
	if (rq) {
		q->rcq = gv_cq_of(a->recv_cq ? a->recv_cq : a->send_cq);
		ret = -gv_cq_attach(q->rcq, &q->rwq);
		if (ret)
			goto err_scq;
	}
	if (a->srq) {
		struct gv_srq *s = gv_srq_of(a->srq);

		pthread_mutex_lock(&s->lock);
		if (s->nqps == s->qcap) {
			unsigned cap = s->qcap ? 2 * s->qcap : 8;
			void *n = realloc(s->qps, cap * sizeof(*s->qps));

			if (!n) {
				pthread_mutex_unlock(&s->lock);
				ret = -ENOMEM;
				goto err_rcq;
			}
			s->qps = n;
			s->qcap = cap;
		}
		s->qps[s->nqps++] = q;
		q->srq = s;
		pthread_mutex_unlock(&s->lock);
		gv_srq_hook(q);
	}
	/* its packets arrive on the device's 4791 (gv_addr.c) */
	ret = nm_tr_udp_set_rx_port(q->g, GV_ROCE_PORT);
	if (!ret)
		ret = gv_dir_add(c->dev, q->qpx.qp_base.qp_num, info.udp_port);
	if (ret)
		goto err_srq;
	/* what the program gets back, as libmlx5 reports it */
	a->cap = q->cap;
	if (a->srq)
		a->cap.max_recv_wr = a->cap.max_recv_sge = 0;
	GDAK_DBG("qp", q->qpx.qp_base.qp_num,
		 "verbs %s QP: sq %u WQEBBs (%u WRs), rq %u x %u sge%s",
		 dct   ? "DCT"
		 : dci ? "DCI"
		       : "RC",
		 sq, q->cap.max_send_wr, rq, rsge, a->srq ? " (SRQ)" : "");
	return &q->qpx.qp_base;

err_srq:
	if (q->srq) {
		struct gv_srq *s = q->srq;

		pthread_mutex_lock(&s->lock);
		s->nqps--;
		pthread_mutex_unlock(&s->lock);
	}
err_rcq:
	if (q->rcq)
		gv_cq_detach(q->rcq, &q->rwq);
err_scq:
	gv_cq_detach(q->scq, &q->swq);
err_mem:
	free(q->slots);
	free(q->rwrid);
err_qp:
	gdak_qp_destroy(q->g);
err:
	free(q->qbuf);
	free(q->dbrec);
	free(q);
	errno = -ret;
	return NULL;
}

struct ibv_qp *gv_create_qp_ex(struct ibv_context *ctx, struct ibv_qp_init_attr_ex *a)
{
	if (!a) {
		errno = EINVAL;
		return NULL;
	}
	return qp_create(ctx, a, NULL);
}

GV_EXPORT struct ibv_qp *gdak_ibv_create_dc_qp(struct ibv_context *ctx,
					       struct ibv_qp_init_attr_ex *a,
					       const struct gdak_ibv_dc_attr *dc)
{
	struct ibv_qp_init_attr_ex x;
	struct ibv_qp *qp;

	if (!ctx || !a || !dc || !gdak_ibv_is_device(ctx->device)) {
		errno = EINVAL;
		return NULL;
	}
	/* qp_create adjusts what a DC type ignores: on a copy */
	x = *a;
	qp = qp_create(ctx, &x, dc);
	if (qp)
		a->cap = x.cap;
	return qp;
}

GV_EXPORT struct ibv_qp *ibv_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *a)
{
	struct ibv_qp_init_attr_ex x;
	struct ibv_qp *qp;

	if (!pd || !a) {
		errno = EINVAL;
		return NULL;
	}
	memset(&x, 0, sizeof(x));
	memcpy(&x, a, sizeof(*a));
	x.comp_mask = IBV_QP_INIT_ATTR_PD;
	x.pd = pd;
	qp = qp_create(pd->context, &x, NULL);
	if (qp)
		a->cap = x.cap;
	return qp;
}

GV_EXPORT struct ibv_qp_ex *ibv_qp_to_qp_ex(struct ibv_qp *qp)
{
	struct gv_qp *q = gv_qp_of(qp);

	return q->ex ? &q->qpx : NULL;
}

GV_EXPORT int ibv_destroy_qp(struct ibv_qp *qp)
{
	struct gv_qp *q = gv_qp_of(qp);
	int ret;

	gv_cq_detach(q->scq, &q->swq);
	if (q->rcq)
		gv_cq_detach(q->rcq, &q->rwq);
	if (q->srq) {
		struct gv_srq *s = q->srq;

		pthread_mutex_lock(&s->lock);
		for (unsigned i = 0; i < s->nqps; i++) {
			if (s->qps[i] == q) {
				s->qps[i] = s->qps[--s->nqps];
				break;
			}
		}
		pthread_mutex_unlock(&s->lock);
	}
	gv_dir_del(qp->qp_num);
	if (gdak_get_log_level() >= GDAK_LOG_INFO) {
		struct roce_stats st;

		if (!nm_tr_udp_qp_stats(q->g, &st))
			GDAK_INFO("qp", qp->qp_num,
				  "wire: tx %llu rx %llu packets, %llu resent, "
				  "%llu timeouts (%llu early), %llu dup requests, %llu out of "
				  "sequence, %llu RNR NAKs in, %llu ICRC errors; direct path: "
				  "%llu WQEs out, %llu in",
				  (unsigned long long)st.tx_pkts, (unsigned long long)st.rx_pkts,
				  (unsigned long long)st.retransmits,
				  (unsigned long long)st.timeouts,
				  (unsigned long long)st.early_timeouts,
				  (unsigned long long)st.dup_reqs, (unsigned long long)st.ooo_drops,
				  (unsigned long long)st.rnr_naks_rcvd,
				  (unsigned long long)st.icrc_errors,
				  (unsigned long long)st.direct_wqes,
				  (unsigned long long)st.direct_in);
	}
	ret = gdak_qp_destroy(q->g);
	if (ret)
		GDAK_WARN("qp", qp->qp_num, "destroy: %s", gdak_strerror(ret));
	pthread_spin_destroy(&q->sq_lock);
	pthread_spin_destroy(&q->rq_lock);
	free(q->slots);
	free(q->rwrid);
	if (!ret) {
		/* the NIC model let go of the rings: they are ours to free */
		free(q->qbuf);
		free(q->dbrec);
	}
	free(q);
	return 0;
}

/* ---- modify ---------------------------------------------------------------------- */

/* The state the QP is in: the NIC model may have moved it to ERR. */
static enum ibv_qp_state cur_state(struct gv_qp *q)
{
	if (q->state != IBV_QPS_RESET && gdak_qp_state(q->g) == GDAK_QPS_ERR) {
		/* the NIC moved it (a responder error, say): the program hears of
		 * it once, if no error completion told it already */
		if (!__atomic_exchange_n(&q->err_event, 1, __ATOMIC_ACQ_REL))
			gv_async_post(q->ctx, IBV_EVENT_QP_FATAL, &q->qpx.qp_base);
		return IBV_QPS_ERR;
	}
	return q->state;
}

/* Required and optional attributes of RC transitions (IBA 11.2.5.3, the
 * table the kernel's ib_modify_qp_is_ok encodes).  req == UINT32_MAX: the
 * transition is not allowed. */
static void rc_masks(enum ibv_qp_state from, enum ibv_qp_state to, uint32_t *req, uint32_t *opt)
{
	*req = UINT32_MAX;
	*opt = 0;
	if (to == IBV_QPS_RESET || to == IBV_QPS_ERR) {
		*req = IBV_QP_STATE;
		return;
	}
	switch (from) {
	case IBV_QPS_RESET:
		if (to == IBV_QPS_INIT)
			*req = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
		break;
	case IBV_QPS_INIT:
		if (to == IBV_QPS_INIT) {
			*req = 0;
			*opt = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
		} else if (to == IBV_QPS_RTR) {
			*req = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			       IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
			*opt = IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX;
		}
		break;
	case IBV_QPS_RTR:
		if (to == IBV_QPS_RTS) {
			*req = IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			       IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC;
			*opt = IBV_QP_CUR_STATE | IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS |
			       IBV_QP_MIN_RNR_TIMER | IBV_QP_PATH_MIG_STATE;
		}
		break;
	case IBV_QPS_RTS:
		if (to == IBV_QPS_RTS) {
			*req = 0;
			*opt = IBV_QP_STATE | IBV_QP_CUR_STATE | IBV_QP_ACCESS_FLAGS |
			       IBV_QP_ALT_PATH | IBV_QP_PATH_MIG_STATE | IBV_QP_MIN_RNR_TIMER;
		}
		break;
	default:
		break;
	}
}

/*
 * DC transitions.  A DCT: RESET -> INIT with exactly access flags, P_Key
 * index and port; INIT -> RTR with exactly the minimum RNR timer, the
 * address (its own GID: RoCE) and the path MTU (the kernel's
 * mlx5_ib_modify_dct, which creates the DCT at RTR); nothing goes to RTS.
 * A DCI: the kernel checks no mask for it (mlx5_ib_modify_qp skips
 * ib_modify_qp_is_ok for DCIs), so every attribute of the RC tables is
 * optional; the values are checked below as for RC.
 */
static void dc_masks(uint8_t type, enum ibv_qp_state from, enum ibv_qp_state to, uint32_t *req,
		     uint32_t *opt)
{
	*req = UINT32_MAX;
	*opt = 0;
	if (to == IBV_QPS_RESET || to == IBV_QPS_ERR) {
		*req = IBV_QP_STATE;
		return;
	}
	if (type == GDAK_QPT_DCT) {
		if (from == IBV_QPS_RESET && to == IBV_QPS_INIT)
			*req = IBV_QP_STATE | IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX | IBV_QP_PORT;
		else if (from == IBV_QPS_INIT && to == IBV_QPS_RTR)
			*req = IBV_QP_STATE | IBV_QP_MIN_RNR_TIMER | IBV_QP_AV | IBV_QP_PATH_MTU;
		return;
	}
	if ((from == IBV_QPS_RESET && to == IBV_QPS_INIT) ||
	    (from == IBV_QPS_INIT && (to == IBV_QPS_INIT || to == IBV_QPS_RTR)) ||
	    (from == IBV_QPS_RTR && to == IBV_QPS_RTS) ||
	    (from == IBV_QPS_RTS && to == IBV_QPS_RTS)) {
		uint32_t r, o;

		rc_masks(from, to, &r, &o);
		*req = IBV_QP_STATE & r;
		*opt = (r | o) & ~*req;
	}
}

static uint32_t mtu_bytes(enum ibv_mtu m)
{
	return m >= IBV_MTU_256 && m <= IBV_MTU_4096 ? 128u << m : 0;
}

static void queues_reset(struct gv_qp *q)
{
	pthread_spin_lock(&q->sq_lock);
	q->sq_pi = 0;
	atomic_store(&q->sq_done, 0);
	q->sq_wrs = 0;
	atomic_store(&q->sq_wrs_done, 0);
	pthread_spin_unlock(&q->sq_lock);
	pthread_spin_lock(&q->rq_lock);
	q->rq_pi = 0;
	atomic_store(&q->rq_done, 0);
	pthread_spin_unlock(&q->rq_lock);
	/* the NIC model is in RESET (it reads no record there): the records and
	 * the CQEs still queued are ours to clear, as libmlx5 does */
	__atomic_store_n(&q->dbrec[0], 0, __ATOMIC_RELEASE);
	__atomic_store_n(&q->dbrec[1], 0, __ATOMIC_RELEASE);
	gv_cq_clean(q->scq, q->qpx.qp_base.qp_num);
	if (q->rcq && q->rcq != q->scq)
		gv_cq_clean(q->rcq, q->qpx.qp_base.qp_num);
}

/* INIT -> RTR: connect the NIC-model QP (it receives from here on). */
static int connect_nic(struct gv_qp *q)
{
	struct gdak_qp_info peer;

	memset(&peer, 0, sizeof(peer));
	peer.version = GDAK_QP_INFO_VERSION;
	peer.qpn = q->attr.dest_qp_num;
	peer.psn = q->attr.rq_psn & 0xffffff;
	peer.mtu = mtu_bytes(q->attr.path_mtu);
	memcpy(peer.gid, q->attr.ah_attr.grh.dgid.raw, 16);
	peer.udp_port = q->peer_port;
	peer.transport = GDAK_QPI_UDP;
	peer.gid_index = q->attr.ah_attr.grh.sgid_index;
	return gdak_qp_modify(q->g, GDAK_QPS_RTR, &peer);
}

/* RTR -> RTS: the requester starts at the program's send PSN. */
static int start_nic(struct gv_qp *q)
{
	int ret;

	/* a DCI's requests are executed in place on their DCT (nm_dc.c): no
	 * wire requester to give a PSN or retry counts */
	if (q->dc_type)
		return gdak_qp_modify(q->g, GDAK_QPS_RTS, NULL);
	ret = nm_tr_udp_set_sq_psn(q->g, q->attr.sq_psn);

	/* the program's retry counts: an RNR retry of 0 fails at the first RNR
	 * NAK, 7 waits forever (IBA 9.7.5.2.8) */
	if (!ret)
		ret = nm_tr_udp_set_retry(q->g, q->attr.retry_cnt, q->attr.rnr_retry);
	if (!ret)
		ret = gdak_qp_modify(q->g, GDAK_QPS_RTS, NULL);
	return ret;
}

GV_EXPORT int ibv_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask_in)
{
	static const uint8_t v4map[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
	struct gv_qp *q = gv_qp_of(qp);
	uint32_t mask = (uint32_t)mask_in, req, opt;
	enum ibv_qp_state from, to;
	int ret = 0;

	if (!attr)
		return EINVAL;
	from = (mask & IBV_QP_CUR_STATE) ? attr->cur_qp_state : cur_state(q);
	if (from != cur_state(q) && !(from == IBV_QPS_RTS && cur_state(q) == IBV_QPS_RTS))
		return EINVAL;
	to = (mask & IBV_QP_STATE) ? attr->qp_state : from;
	if (q->dc_type)
		dc_masks(q->dc_type, from, to, &req, &opt);
	else
		rc_masks(from, to, &req, &opt);
	if (req == UINT32_MAX || (mask & req) != req || (mask & ~(req | opt))) {
		GDAK_DBG("qp", qp->qp_num,
			 "modify %d -> %d: mask 0x%x, required 0x%x, optional 0x%x", from, to, mask,
			 req == UINT32_MAX ? 0 : req, opt);
		return EINVAL;
	}
	if (mask & IBV_QP_PORT && attr->port_num != 1)
		return EINVAL;
	if (mask & IBV_QP_PKEY_INDEX && attr->pkey_index != 0)
		return EINVAL;
	if (mask & IBV_QP_PATH_MTU && !mtu_bytes(attr->path_mtu))
		return EINVAL;
	if (mask & IBV_QP_MAX_QP_RD_ATOMIC && attr->max_rd_atomic > GV_MAX_RD_ATOM)
		return EINVAL;
	if (mask & IBV_QP_MAX_DEST_RD_ATOMIC && attr->max_dest_rd_atomic > GV_MAX_RD_ATOM)
		return EINVAL;
	/* field widths of the QP context (IBA 11.2.5): 3-bit retry counts, a
	 * 5-bit RNR timer, 24-bit QPNs; timeout 0..31 */
	if ((mask & IBV_QP_RETRY_CNT && attr->retry_cnt > 7) ||
	    (mask & IBV_QP_RNR_RETRY && attr->rnr_retry > 7) ||
	    (mask & IBV_QP_MIN_RNR_TIMER && attr->min_rnr_timer > 31) ||
	    (mask & IBV_QP_TIMEOUT && attr->timeout > 31) ||
	    (mask & IBV_QP_DEST_QPN && attr->dest_qp_num > 0xffffff))
		return EINVAL;
	if (mask & IBV_QP_AV) {
		const struct ibv_ah_attr *ah = &attr->ah_attr;

		/* RoCE: the address is the GRH's destination GID, IPv4-mapped here */
		if (!ah->is_global || memcmp(ah->grh.dgid.raw, v4map, 12) || ah->port_num > 1) {
			GDAK_ERR("qp", qp->qp_num,
				 "modify to RTR: the address vector needs a GRH "
				 "with an IPv4-mapped destination GID (is_global %u)",
				 ah->is_global);
			return EINVAL;
		}
	}

	switch (to) {
	case IBV_QPS_RESET:
		if (from != IBV_QPS_RESET) {
			ret = -gdak_qp_modify(q->g, GDAK_QPS_RESET, NULL);
			if (ret)
				return ret;
			queues_reset(q);
		}
		q->connected = false;
		__atomic_store_n(&q->err_event, 0, __ATOMIC_RELEASE);
		memset(&q->attr, 0, sizeof(q->attr));
		break;
	case IBV_QPS_INIT:
		if (from == IBV_QPS_RESET) {
			ret = -gdak_qp_modify(q->g, GDAK_QPS_INIT, NULL);
			if (ret)
				return ret;
		}
		break;
	case IBV_QPS_RTR:
		/* RoCEv2: the peer's packets go to its address, UDP port 4791 */
		q->peer_port = GV_ROCE_PORT;
		break;
	case IBV_QPS_RTS:
		break;
	case IBV_QPS_ERR:
		if (from != IBV_QPS_RESET && gdak_qp_state(q->g) != GDAK_QPS_ERR) {
			ret = -gdak_qp_modify(q->g, GDAK_QPS_ERR, NULL);
			if (ret)
				return ret;
		}
		break;
	default:
		return EINVAL;
	}

	/* remember what was set, for query_qp and the RTS connect */
	if (mask & IBV_QP_ACCESS_FLAGS)
		q->attr.qp_access_flags = attr->qp_access_flags;
	if (mask & IBV_QP_PKEY_INDEX)
		q->attr.pkey_index = attr->pkey_index;
	if (mask & IBV_QP_PORT)
		q->attr.port_num = attr->port_num;
	if (mask & IBV_QP_AV)
		q->attr.ah_attr = attr->ah_attr;
	if (mask & IBV_QP_PATH_MTU)
		q->attr.path_mtu = attr->path_mtu;
	if (mask & IBV_QP_DEST_QPN)
		q->attr.dest_qp_num = attr->dest_qp_num;
	if (mask & IBV_QP_RQ_PSN)
		q->attr.rq_psn = attr->rq_psn;
	if (mask & IBV_QP_MAX_DEST_RD_ATOMIC)
		q->attr.max_dest_rd_atomic = attr->max_dest_rd_atomic;
	if (mask & IBV_QP_MIN_RNR_TIMER)
		q->attr.min_rnr_timer = attr->min_rnr_timer;
	if (mask & IBV_QP_TIMEOUT)
		q->attr.timeout = attr->timeout;
	if (mask & IBV_QP_RETRY_CNT)
		q->attr.retry_cnt = attr->retry_cnt;
	if (mask & IBV_QP_RNR_RETRY)
		q->attr.rnr_retry = attr->rnr_retry;
	if (mask & IBV_QP_SQ_PSN)
		q->attr.sq_psn = attr->sq_psn;
	if (mask & IBV_QP_MAX_QP_RD_ATOMIC)
		q->attr.max_rd_atomic = attr->max_rd_atomic;
	if (mask & IBV_QP_PATH_MIG_STATE)
		q->attr.path_mig_state = attr->path_mig_state;

	if (to == IBV_QPS_RTR && from == IBV_QPS_INIT && q->dc_type) {
		/* a DCT starts answering, a DCI connects to nobody */
		ret = gdak_qp_modify(q->g, GDAK_QPS_RTR, NULL);
		if (ret) {
			GDAK_ERR("qp", qp->qp_num, "modify to RTR: the NIC-model DC QP: %s",
				 gdak_strerror(ret));
			return -ret;
		}
	} else if (to == IBV_QPS_RTR && from == IBV_QPS_INIT) {
		ret = connect_nic(q);
		if (ret) {
			GDAK_ERR("qp", qp->qp_num, "modify to RTR: connecting the NIC-model QP: %s",
				 gdak_strerror(ret));
			return ret == -EINVAL ? EINVAL : -ret;
		}
		q->connected = true;
	}
	if (to == IBV_QPS_RTS && from == IBV_QPS_RTR) {
		ret = start_nic(q);
		if (ret) {
			GDAK_ERR("qp", qp->qp_num, "modify to RTS: starting the NIC-model QP: %s",
				 gdak_strerror(ret));
			return -ret;
		}
	}
	q->state = to;
	qp->state = to;
	return 0;
}

GV_EXPORT int ibv_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask,
			   struct ibv_qp_init_attr *init)
{
	struct gv_qp *q = gv_qp_of(qp);

	if (!attr || !init)
		return EINVAL;
	*attr = q->attr;
	attr->qp_state = cur_state(q);
	attr->cur_qp_state = attr->qp_state;
	attr->cap = q->cap;
	attr->sq_draining = 0;
	attr->path_mig_state = IBV_MIG_MIGRATED;
	qp->state = attr->qp_state;
	memset(init, 0, sizeof(*init));
	init->qp_context = qp->qp_context;
	init->send_cq = qp->send_cq;
	init->recv_cq = qp->recv_cq;
	init->srq = qp->srq;
	init->cap = q->cap;
	init->qp_type = qp->qp_type;
	init->sq_sig_all = q->sig_all;
	return 0;
}

/* Enhanced connection establishment: no options to negotiate (vendor 0). */
GV_EXPORT int ibv_query_ece(struct ibv_qp *qp, struct ibv_ece *ece)
{
	if (!qp || !ece)
		return EINVAL;
	memset(ece, 0, sizeof(*ece));
	return 0;
}

GV_EXPORT int ibv_set_ece(struct ibv_qp *qp, struct ibv_ece *ece)
{
	if (!qp || !ece)
		return EINVAL;
	if (ece->vendor_id || ece->options || ece->comp_mask)
		return EOPNOTSUPP;
	return 0;
}

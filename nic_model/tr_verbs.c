/* SPDX-License-Identifier: MIT */
/*
 * tr_verbs.c - the "verbs" transport: "emu:verbs:DEV[:GID_INDEX]".
 *
 * Each emulated QP is backed by a real RC QP on a verbs device (soft-RoCE
 * rxe, siw, any HCA).  The NIC model still fetches and checks every mlx5
 * WQE; this file turns the decoded request into an ibv_post_send work
 * request, the device's receive WQEs into ibv_post_recv, and the verbs
 * completions back into mlx5 CQEs (through nm_comp_op_done/nm_comp_recv).
 * The responder is the real device: gdak's own nm_resp is not involved.
 *
 * Memory (tr_verbs_mr.c): every NIC-model MR is registered with the device
 * at gdak_mr_reg, and its rkey is the device's, so rkeys in WQEs go on the
 * wire as they are, whoever the peer is (this process, another process's
 * NIC model, plain verbs code, a ConnectX).  lkeys in WQEs are the NIC
 * model's (it checks them) and are translated here.  GPU memory goes
 * through dma-buf where the device and driver allow, otherwise its local
 * segments are staged through bounce buffers (tr_verbs_stage.c).
 *
 * Threads: ctx/qp setup on the caller's thread; post_send/qp_poll on the
 * QP's NIC thread, where a libev watcher on the QP's completion channel and
 * a short timer (receive WQEs posted by the device) put the QP back on the
 * thread's active list.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <ev.h>

#include <gdak/env.h>

#include "nm_loc.h"
#include "tr_verbs.h"

#define TV_RQ_CHECK_S 0.002	/* how often an idle QP looks for new receive WQEs */
#define TV_POLL_BATCH 16
#define TV_ROCE_PORT 4791	/* IANA RoCEv2 UDP port (IBA A17.4.2) */

static struct tv_ctx *tc_of(struct nm_ctx *ctx) { return ctx->tr_priv; }

/* ---- context ---------------------------------------------------------------- */

static void tc_free(struct tv_ctx *tc)
{
	tv_mr_fini_all(tc);
	if (tc->pd)
		ibv_dealloc_pd(tc->pd);
	if (tc->vctx)
		ibv_close_device(tc->vctx);
	pthread_mutex_destroy(&tc->lock);
	free(tc);
}

/* GDAK_VERBS_STAGE=all (test hook: host memory staged like GPU memory
 * without dma-buf), GDAK_VERBS_DMABUF=0 (stage GPU memory even where
 * dma-buf works), GDAK_VERBS_BOUNCE=bytes (each bounce ring). */
static int env_config(struct nm_ctx *ctx, struct tv_ctx *tc)
{
	const char *st = gdak_env_raw("GDAK_VERBS_STAGE");
	unsigned long long n;
	int v = tv_parse_stage(st), dmabuf = 1;

	if (v < 0) {
		GDAK_ERR("ctx", ctx->base.id, "GDAK_VERBS_STAGE='%s': the values are 'all' and "
			 "'0'", st);
		return -EINVAL;
	}
	tc->stage_all = v == 1;
	if (gdak_env_bool("GDAK_VERBS_DMABUF", &dmabuf) < 0)
		return -EINVAL;
	tc->no_dmabuf = !dmabuf;
	tc->bounce = TV_BOUNCE_DEFAULT;
	/* the table's range is TV_BOUNCE_MIN..1 GiB */
	v = gdak_env_uint("GDAK_VERBS_BOUNCE", &n);
	if (v < 0)
		return -EINVAL;
	if (v == 0)
		tc->bounce = (uint32_t)n;
	if (tc->stage_all)
		GDAK_WARN("ctx", ctx->base.id, "verbs: GDAK_VERBS_STAGE=all (a test hook): every "
			  "local buffer goes through %u-byte bounce rings, no host memory is "
			  "registered for remote access", tc->bounce);
	return 0;
}

static int verbs_ctx_init(struct nm_ctx *ctx, const char *args)
{
	char name[64] = "";
	const char *colon = strchr(args, ':');
	int gid = -2, n = 0, ret = -ENODEV;
	struct ibv_device **list, *dev = NULL;
	struct ibv_device_attr da;
	struct ibv_port_attr pa;
	struct tv_ctx *tc;

	snprintf(name, sizeof(name), "%.*s", colon ? (int)(colon - args) : (int)strlen(args), args);
	if (colon) {
		char *end;
		long v = strtol(colon + 1, &end, 10);
		if (!colon[1] || *end || v < 0 || v > 255) {
			GDAK_ERR("ctx", ctx->base.id, "emu:verbs:%s: the GID index after the device "
				 "must be a number 0..255", args);
			return -EINVAL;
		}
		gid = (int)v;
	}
	tc = calloc(1, sizeof(*tc));
	if (!tc)
		return -ENOMEM;
	pthread_mutex_init(&tc->lock, NULL);
	tc->id = ctx->base.id;
	tc->port = 1;
	ret = env_config(ctx, tc);
	if (ret)
		goto err_nolist;
	ret = -ENODEV;
	list = ibv_get_device_list(&n);
	for (int i = 0; list && i < n && !dev; i++)
		if (!name[0] || !strcmp(ibv_get_device_name(list[i]), name))
			dev = list[i];
	if (!dev) {
		GDAK_ERR("ctx", ctx->base.id, "emu:verbs: no verbs device %s%s (%d present%s)",
			 name[0] ? "named " : "", name[0] ? name : "at all", n,
			 n ? "" : "; soft-RoCE: `rdma link add rxe0 type rxe netdev IF`, or "
				  "tools/rxe/gdak-rxe-vm where the kernel has no rdma_rxe");
		goto err;
	}
	tc->vctx = ibv_open_device(dev);
	if (!tc->vctx) {
		ret = -errno;
		GDAK_ERR("ctx", ctx->base.id, "emu:verbs: ibv_open_device %s: %s",
			 ibv_get_device_name(dev), strerror(errno));
		goto err;
	}
	ret = ibv_query_device(tc->vctx, &da);
	if (!ret)
		ret = ibv_query_port(tc->vctx, tc->port, &pa);
	if (ret) {
		ret = -ret;
		GDAK_ERR("ctx", ctx->base.id, "emu:verbs: query %s: %s", ibv_get_device_name(dev),
			 strerror(-ret));
		goto err;
	}
	if (pa.state != IBV_PORT_ACTIVE)
		GDAK_WARN("ctx", ctx->base.id, "emu:verbs: %s port %u is %s, not ACTIVE",
			  ibv_get_device_name(dev), tc->port, ibv_port_state_str(pa.state));
	tc->pd = ibv_alloc_pd(tc->vctx);
	if (!tc->pd) {
		ret = -errno;
		GDAK_ERR("ctx", ctx->base.id, "emu:verbs: ibv_alloc_pd: %s", strerror(errno));
		goto err;
	}
	tc->active_mtu = pa.active_mtu;
	tc->lid = pa.lid;
	tc->max_sge = (uint32_t)da.max_sge;
	tc->max_rd_atom = (uint32_t)(da.max_qp_rd_atom < 16 ? da.max_qp_rd_atom : 16);
	/* ConnectX writes an atomic's original value big-endian, as the NIC
	 * model does; the software devices store it in host order. */
	tc->atomic_host_order = strncmp(ibv_get_device_name(dev), "mlx", 3) != 0;
	if (pa.link_layer == IBV_LINK_LAYER_INFINIBAND && gid < 0)
		tc->gid_index = -1;
	else if (gid >= 0)
		tc->gid_index = gid;
	else {
		/* RoCE: the first RoCEv2 GID (an IPv4 one if there is one), else 0 */
		gid = gdak_ibv_roce_v2_gid(tc->vctx, tc->port, pa.gid_tbl_len);
		tc->gid_index = gid >= 0 ? gid : 0;
	}
	if (tc->gid_index >= 0 && ibv_query_gid(tc->vctx, tc->port, tc->gid_index, &tc->gid)) {
		GDAK_ERR("ctx", ctx->base.id, "emu:verbs: %s has no GID %d", ibv_get_device_name(dev),
			 tc->gid_index);
		ret = -EINVAL;
		goto err;
	}
	GDAK_INFO("ctx", ctx->base.id, "emu:verbs on %s port %u, gid index %d, active MTU %u",
		  ibv_get_device_name(dev), tc->port, tc->gid_index, tv_mtu_bytes(tc->active_mtu));
	ibv_free_device_list(list);
	ctx->tr_priv = tc;
	return 0;
err:
	if (list)
		ibv_free_device_list(list);
err_nolist:
	tc_free(tc);
	return ret;
}

static void verbs_ctx_fini(struct nm_ctx *ctx)
{
	if (ctx->tr_priv)
		tc_free(ctx->tr_priv);
	ctx->tr_priv = NULL;
}

/* ---- QP ------------------------------------------------------------------------ */

static int modify(struct tv_qp *tq, struct ibv_qp_attr *a, int mask, const char *what)
{
	int rc = ibv_modify_qp(tq->vqp, a, mask);

	if (rc)
		GDAK_ERR("qp", tq->qp->id, "verbs: QP 0x%x to %s: %s", tq->vqp->qp_num, what,
			 strerror(rc));
	return -rc;
}

static int to_init(struct tv_qp *tq)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = tq->tc->port,
		.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
				   IBV_ACCESS_REMOTE_ATOMIC };

	return modify(tq, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
		      IBV_QP_ACCESS_FLAGS, "INIT");
}

static void tq_free(struct tv_qp *tq)
{
	if (tq->vqp)
		ibv_destroy_qp(tq->vqp);
	if (tq->scq)
		ibv_destroy_cq(tq->scq);
	if (tq->rcq)
		ibv_destroy_cq(tq->rcq);
	if (tq->ch)
		ibv_destroy_comp_channel(tq->ch);
	if (tq->stage_mr)
		ibv_dereg_mr(tq->stage_mr);
	tv_stage_fini(tq);
	free(tq->stage);
	free(tq);
}

static int verbs_qp_init(struct nm_qp *qp)
{
	struct tv_ctx *tc = tc_of(qp->ctx);
	struct tv_qp *tq = calloc(1, sizeof(*tq));
	uint32_t rq = qp->rq_cnt ? qp->rq_cnt : 1;
	uint32_t nsge = tc->max_sge < TV_MAX_SGE ? tc->max_sge : TV_MAX_SGE;
	struct ibv_qp_init_attr qa = { .qp_type = IBV_QPT_RC };
	size_t stage_len = (size_t)NM_MAX_INFLIGHT * NM_WRAP_BUF;
	int ret = -ENOMEM;

	if (!tq)
		return -ENOMEM;
	tq->qp = qp;
	tq->tc = tc;
	if (posix_memalign((void **)&tq->stage, 4096, stage_len))
		goto err;
	tq->ch = ibv_create_comp_channel(tc->vctx);
	if (tq->ch)
		fcntl(tq->ch->fd, F_SETFL, fcntl(tq->ch->fd, F_GETFL) | O_NONBLOCK);
	tq->scq = tq->ch ? ibv_create_cq(tc->vctx, NM_MAX_INFLIGHT + 8, tq, tq->ch, 0) : NULL;
	tq->rcq = tq->scq ? ibv_create_cq(tc->vctx, (int)rq + 8, tq, tq->ch, 0) : NULL;
	tq->stage_mr = ibv_reg_mr(tc->pd, tq->stage, stage_len, IBV_ACCESS_LOCAL_WRITE);
	if (!tq->rcq || !tq->stage_mr) {
		ret = errno ? -errno : -ENOMEM;
		GDAK_ERR("qp", qp->id, "verbs: channel/CQ/staging MR: %s", strerror(-ret));
		goto err;
	}
	qa.send_cq = tq->scq;
	qa.recv_cq = tq->rcq;
	qa.cap.max_send_wr = NM_MAX_INFLIGHT + 1;
	qa.cap.max_recv_wr = rq;
	qa.cap.max_send_sge = nsge;
	qa.cap.max_recv_sge = qp->rq_max_sge > nsge ? nsge : (qp->rq_max_sge ? qp->rq_max_sge : 1);
	tq->vqp = ibv_create_qp(tc->pd, &qa);
	if (!tq->vqp) {
		ret = -errno;
		GDAK_ERR("qp", qp->id, "verbs: ibv_create_qp (sq %u x %u sge, rq %u): %s",
			 NM_MAX_INFLIGHT + 1, nsge, rq, strerror(errno));
		goto err;
	}
	/* INIT now, so receive WQEs can be posted before the connection
	 * (IBA C10-49: a QP in INIT accepts receive work requests) */
	ret = to_init(tq);
	if (ret)
		goto err;
	tq->psn = (uint32_t)(nm_now_ns() ^ ((uint64_t)tq->vqp->qp_num << 8)) & 0xffffff;
	qp->tr_priv = tq;
	GDAK_DBG("qp", qp->id, "verbs QP 0x%x", tq->vqp->qp_num);
	return 0;
err:
	tq_free(tq);
	return ret;
}

static void stop_watch(void *arg)
{
	struct tv_qp *tq = arg;
	struct ev_loop *loop = nm_thread_loop(tq->qp->thr);

	ev_io_stop(loop, &tq->io);
	ev_timer_stop(loop, &tq->rq_timer);
}

static void verbs_qp_fini(struct nm_qp *qp)
{
	struct tv_qp *tq = qp->tr_priv;

	if (!tq)
		return;
	if (tq->watching)
		nm_thread_call(qp->thr, stop_watch, tq);
	tq_free(tq);
	qp->tr_priv = NULL;
}

static int verbs_qp_info(struct nm_qp *qp, struct gdak_qp_info *out)
{
	struct tv_qp *tq = qp->tr_priv;
	struct tv_ctx *tc = tq->tc;
	uint32_t mtu = tv_mtu_bytes(tc->active_mtu);

	out->transport = GDAK_QPI_VERBS;
	out->qpn = tq->vqp->qp_num; /* the wire QPN: what any verbs peer needs */
	out->psn = tq->psn;
	if (!out->mtu || out->mtu > mtu)
		out->mtu = mtu;
	out->lid = tc->lid;
	out->gid_index = tc->gid_index < 0 ? 0 : (uint8_t)tc->gid_index;
	if (tc->gid_index >= 0) {
		memcpy(out->gid, tc->gid.raw, 16);
		out->udp_port = TV_ROCE_PORT;
	}
	return 0;
}

/* ---- wakeups on the QP's thread -------------------------------------------------- */

static uint16_t rq_producer(const struct nm_qp *qp)
{
	return (uint16_t)gdak_be32toh(__atomic_load_n(&qp->dbrec[MLX5_RCV_DBR], __ATOMIC_ACQUIRE));
}

static void io_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct tv_qp *tq = nm_container_of(w, struct tv_qp, io);
	struct ibv_cq *cq;
	void *cctx;

	(void)loop, (void)revents;
	while (!ibv_get_cq_event(tq->ch, &cq, &cctx)) {
		ibv_ack_cq_events(cq, 1);
		ibv_req_notify_cq(cq, 0);
	}
	nm_thread_activate(tq->qp); /* qp_poll then reaps the completions */
}

static void rq_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct tv_qp *tq = nm_container_of(w, struct tv_qp, rq_timer);

	(void)loop, (void)revents;
	if (rq_producer(tq->qp) != (uint16_t)tq->rq_posted)
		nm_thread_activate(tq->qp);
}

static void start_watch(void *arg)
{
	struct tv_qp *tq = arg;
	struct ev_loop *loop = nm_thread_loop(tq->qp->thr);

	ev_io_init(&tq->io, io_cb, tq->ch->fd, EV_READ);
	ev_io_start(loop, &tq->io);
	if (tq->qp->rq_cnt) {
		ev_timer_init(&tq->rq_timer, rq_cb, TV_RQ_CHECK_S, TV_RQ_CHECK_S);
		ev_timer_start(loop, &tq->rq_timer);
	}
	nm_thread_activate(tq->qp);
}

/* ---- connect ---------------------------------------------------------------------- */

static int verbs_qp_connect(struct nm_qp *qp, const struct gdak_qp_info *peer)
{
	struct tv_qp *tq = qp->tr_priv;
	struct tv_ctx *tc = tq->tc;
	struct ibv_qp_attr a;
	uint32_t mtu = qp->base.attr.mtu;
	int ret;

	if (peer->transport == GDAK_QPI_LOOP) {
		GDAK_ERR("qp", qp->id, "verbs: peer QP 0x%x is an in-process loop QP; open both "
			 "sides with emu:verbs (or any RoCE/verbs peer)", peer->qpn);
		return -EINVAL;
	}
	if (peer->transport == GDAK_QPI_UDP && peer->udp_port && peer->udp_port != TV_ROCE_PORT)
		GDAK_WARN("qp", qp->id, "verbs: udp peer listens on port %u; a verbs device sends "
			  "RoCEv2 to %u only", peer->udp_port, TV_ROCE_PORT);
	if (peer->mtu && peer->mtu < mtu)
		mtu = peer->mtu;
	if (mtu > tv_mtu_bytes(tc->active_mtu))
		mtu = tv_mtu_bytes(tc->active_mtu);

	/* from whatever state (a reconnect after RESET/ERR): RESET -> INIT ->
	 * RTR -> RTS; receive WQEs posted before are gone with the RESET */
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RESET;
	ret = modify(tq, &a, IBV_QP_STATE, "RESET");
	if (!ret)
		ret = to_init(tq);
	if (ret)
		return ret;
	tq->rq_posted = qp->rq_ci;
	tv_stage_reset(tq); /* nothing is in flight on a QP in RESET */

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = gdak_ibv_mtu_enum(mtu);
	a.dest_qp_num = peer->qpn;
	a.rq_psn = peer->psn & 0xffffff;
	a.max_dest_rd_atomic = (uint8_t)tc->max_rd_atom;
	a.min_rnr_timer = 12; /* 0.64 ms (IBA table 45) */
	a.ah_attr.port_num = tc->port;
	if (tc->gid_index >= 0) {
		a.ah_attr.is_global = 1;
		memcpy(a.ah_attr.grh.dgid.raw, peer->gid, 16);
		a.ah_attr.grh.sgid_index = (uint8_t)tc->gid_index;
		a.ah_attr.grh.hop_limit = 64;
	} else {
		a.ah_attr.dlid = peer->lid;
	}
	ret = modify(tq, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
		     IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER, "RTR");
	if (ret)
		return ret;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;	  /* 4.096 us * 2^14 = 67 ms: TCG guests are slow */
	a.retry_cnt = 7;
	a.rnr_retry = 7;  /* RNR: retry for ever, as the device may post late */
	a.sq_psn = tq->psn;
	a.max_rd_atomic = (uint8_t)tc->max_rd_atom;
	ret = modify(tq, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
		     IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC, "RTS");
	if (ret)
		return ret;

	ibv_req_notify_cq(tq->scq, 0);
	ibv_req_notify_cq(tq->rcq, 0);
	if (!tq->watching) {
		tq->watching = true;
		nm_thread_call(qp->thr, start_watch, tq);
	}
	GDAK_DBG("qp", qp->id, "verbs QP 0x%x -> peer 0x%x, mtu %u", tq->vqp->qp_num,
		 peer->qpn, mtu);
	return 0;
}

/* ---- send side -------------------------------------------------------------------- */

/* wr_id: the op's slot in qp->inflight (top byte) and its WQE index, so a
 * completion for an op already flushed and recycled is recognised. */
#define TV_WRID_CI_MASK ((1ull << 56) - 1)

static enum nm_tx_result verbs_post_send(struct nm_qp *qp, struct nm_op *op)
{
	struct tv_qp *tq = qp->tr_priv;
	struct ibv_sge sge[TV_MAX_SGE];
	struct ibv_send_wr wr = { 0 }, *bad;
	unsigned slot = (unsigned)(op - qp->inflight);
	unsigned need = 0;
	int rc;

	if (nm_check_verbs_opcode(qp, op, !tv_wr_opcode(op->opcode, &wr.opcode)))
		return NM_TX_DONE;
	if (op->opcode == MLX5_OPCODE_RDMA_READ || op->opcode == MLX5_OPCODE_ATOMIC_CS ||
	    op->opcode == MLX5_OPCODE_ATOMIC_FA)
		need = GDAK_ACCESS_LOCAL_WRITE;

	if (op->flags & NM_OPF_INLINE) {
		uint8_t *s = tq->stage + (size_t)slot * NM_WRAP_BUF;

		memcpy(s, op->inl, op->len);
		sge[0] = (struct ibv_sge){ .addr = (uintptr_t)s, .length = op->len,
					   .lkey = tq->stage_mr->lkey };
		wr.num_sge = op->len ? 1 : 0;
	} else {
		struct tv_stage plan = { .nseg = 0 };
		bool staged = false;

		if (nm_check_verbs_nseg(
			    qp, op, tq->tc->max_sge < TV_MAX_SGE ? tq->tc->max_sge : TV_MAX_SGE))
			return NM_TX_DONE;
		for (unsigned i = 0; i < op->nseg; i++) {
			void *a;
			uint32_t l;
			struct nm_mr *mr;
			struct tv_mr *m;
			int r = nm_check_local_sge(qp, op, i, need, &a, &l, &mr, &op->rule);

			if (r) {
				op->status = (uint8_t)r;
				return NM_TX_DONE;
			}
			if (!l)
				continue;
			m = mr->tr_priv;
			if (nm_check_verbs_reg_mr(qp, op, m && (m->staged || m->vmr)))
				return NM_TX_DONE;
			staged |= m->staged;
			plan.seg[plan.nseg].addr = (uintptr_t)a;
			plan.seg[plan.nseg].len = l;
			plan.seg[plan.nseg++].kind = mr->kind;
			plan.len += l;
			if (m->vmr)
				sge[wr.num_sge] = (struct ibv_sge){ .addr = (uintptr_t)a, .length = l,
								    .lkey = m->vmr->lkey };
			wr.num_sge++;
			if (need && wr.num_sge == 1)
				op->tr_data[0] = (uintptr_t)a; /* atomic result lands here */
		}
		if (staged && plan.len) {
			/* one segment of the bounce room for the whole message */
			int r = tv_stage_out(tq, slot, &plan, need != 0, &sge[0], &op->rule);

			if (r == 1)
				return NM_TX_BUSY; /* earlier ops hold the ring */
			if (r) {
				op->status = (uint8_t)r;
				return NM_TX_DONE;
			}
			wr.num_sge = 1;
			op->tr_data[0] = 0; /* tv_stage_in swaps an atomic's result */
			op->tr_data[1] = 1;
		} else {
			op->tr_data[1] = 0;
		}
	}
	wr.sg_list = sge;
	wr.wr_id = ((uint64_t)slot << 56) | (op->ci & TV_WRID_CI_MASK);
	/* every request is signalled: the NIC model decides which get a CQE */
	wr.send_flags = IBV_SEND_SIGNALED;
	if (op->flags & NM_OPF_FENCE)
		wr.send_flags |= IBV_SEND_FENCE;
	if (op->fm_ce_se & MLX5_WQE_CTRL_SOLICITED)
		wr.send_flags |= IBV_SEND_SOLICITED;
	switch (op->opcode) {
	case MLX5_OPCODE_RDMA_WRITE_IMM:
	case MLX5_OPCODE_SEND_IMM:
		wr.imm_data = op->imm; /* both big-endian */
		break;
	default:
		break;
	}
	switch (op->opcode) {
	case MLX5_OPCODE_RDMA_WRITE:
	case MLX5_OPCODE_RDMA_WRITE_IMM:
	case MLX5_OPCODE_RDMA_READ:
		wr.wr.rdma.remote_addr = op->raddr;
		wr.wr.rdma.rkey = op->rkey; /* a device rkey (tr_verbs_mr.c) */
		break;
	case MLX5_OPCODE_ATOMIC_FA:
		wr.wr.atomic.remote_addr = op->raddr;
		wr.wr.atomic.rkey = op->rkey;
		wr.wr.atomic.compare_add = op->swap_add;
		break;
	case MLX5_OPCODE_ATOMIC_CS:
		wr.wr.atomic.remote_addr = op->raddr;
		wr.wr.atomic.rkey = op->rkey;
		wr.wr.atomic.compare_add = op->compare;
		wr.wr.atomic.swap = op->swap_add;
		break;
	default:
		break;
	}
	rc = ibv_post_send(tq->vqp, &wr, &bad);
	if (rc && !(op->flags & NM_OPF_INLINE) && op->tr_data[1])
		tv_stage_undo(tq, slot);
	if (rc == ENOMEM)
		return NM_TX_BUSY; /* the verbs SQ is full: offered again next pass */
	if (rc) {
		GDAK_WARN_RL("qp", qp->id, "verbs: WQE %u: ibv_post_send: %s", op->wqe_index,
			     strerror(rc));
		op->status = MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR;
		op->rule = "verbs_post_send";
		return NM_TX_DONE;
	}
	return NM_TX_PENDING;
}

static void send_done(struct tv_qp *tq, const struct ibv_wc *wc)
{
	struct nm_qp *qp = tq->qp;
	unsigned slot = (unsigned)(wc->wr_id >> 56);
	struct nm_op *op;
	uint8_t synd;

	if (slot >= NM_MAX_INFLIGHT)
		return;
	op = &qp->inflight[slot];
	if ((op->ci & TV_WRID_CI_MASK) != (wc->wr_id & TV_WRID_CI_MASK) ||
	    (op->flags & NM_OPF_DONE))
		return; /* flushed by the NIC model already (QP error, reset) */
	synd = tv_syndrome_of(wc->status);
	if (!(op->flags & NM_OPF_INLINE) && op->tr_data[1]) {
		/* staged: the READ / atomic bytes to their segments before the CQE */
		bool in = op->opcode == MLX5_OPCODE_RDMA_READ ||
			  op->opcode == MLX5_OPCODE_ATOMIC_FA || op->opcode == MLX5_OPCODE_ATOMIC_CS;
		int r = tv_stage_in(tq, slot, in && !synd,
				    in && op->opcode != MLX5_OPCODE_RDMA_READ &&
				    tq->tc->atomic_host_order);
		if (r && !synd) {
			synd = (uint8_t)r;
			op->rule = "verbs_stage_copy";
		}
	}
	if (!synd && (op->opcode == MLX5_OPCODE_ATOMIC_FA || op->opcode == MLX5_OPCODE_ATOMIC_CS) &&
	    tq->tc->atomic_host_order && op->tr_data[0]) {
		/* the mlx5 contract: the original value arrives big-endian */
		uint64_t *p = (uint64_t *)(uintptr_t)op->tr_data[0];
		*p = gdak_htobe64(*p);
	}
	if (synd && synd != MLX5_CQE_SYNDROME_WR_FLUSH_ERR) {
		op->rule = "verbs_completion";
		GDAK_DBG("qp", qp->id, "verbs: WQE %u (%s): %s (vendor 0x%x)", op->wqe_index,
			 gdak_mlx5_opcode_name(op->opcode), ibv_wc_status_str(wc->status),
			 wc->vendor_err);
	}
	nm_comp_op_done(qp, op, synd);
}

/* ---- receive side ------------------------------------------------------------------ */

/* Hand the receive WQEs the device posted since last time to the verbs QP. */
static int post_recvs(struct tv_qp *tq)
{
	struct nm_qp *qp = tq->qp;
	uint16_t prod = rq_producer(qp);
	uint32_t n = (uint16_t)(prod - (uint16_t)tq->rq_posted);
	int done = 0;

	if (!qp->rq_cnt || !n)
		return 0;
	if (nm_check_verbs_rq_overrun(qp, tq->rq_posted, prod, n))
		return 0;
	for (; n; n--) {
		const struct mlx5_wqe_data_seg *seg = (const void *)(qp->rq +
			(size_t)(tq->rq_posted & (qp->rq_cnt - 1)) * qp->rq_stride);
		struct ibv_sge sge[TV_MAX_SGE];
		struct ibv_recv_wr wr = { .wr_id = tq->rq_posted, .sg_list = sge }, *bad;
		uint32_t max = qp->rq_max_sge ? qp->rq_max_sge : 1;
		struct tv_stage plan = { .nseg = 0 };
		bool staged = false, bad_seg = false;
		int rc;

		for (uint32_t i = 0; i < max && i < TV_MAX_SGE; i++) {
			uint64_t a;
			uint32_t l, lkey;
			struct nm_mr *mr;
			struct tv_mr *m;

			gdak_mlx5_data_decode(&seg[i], &a, &l, &lkey);
			if (lkey == MLX5_INVALID_LKEY)
				break; /* end of a short list (rdma-core convention) */
			mr = nm_mr_get(qp->ctx, lkey);
			m = mr ? mr->tr_priv : NULL;
			if (nm_check_verbs_recv_sge(qp, (uint16_t)tq->rq_posted, i, mr,
						    m && (m->vmr || m->staged), lkey, a, l)) {
				/* posted with a key no MR has: the device then fails
				 * the message with a local protection error */
				bad_seg = true;
				sge[wr.num_sge++] = (struct ibv_sge){ .addr = a, .length = l ? l : 1,
								      .lkey = 0 };
				continue;
			}
			staged |= m->staged;
			plan.seg[plan.nseg].addr = (uintptr_t)a;
			plan.seg[plan.nseg].len = l;
			plan.seg[plan.nseg++].kind = mr->kind;
			plan.len += l;
			if (l && m->vmr)
				sge[wr.num_sge++] = (struct ibv_sge){ .addr = a, .length = l,
								      .lkey = m->vmr->lkey };
			else if (l)
				wr.num_sge++; /* staged: replaced below */
		}
		if (staged && !bad_seg && plan.len) {
			int r = tv_stage_recv(tq, tq->rq_posted, &plan, &sge[0]);

			if (r == 1)
				break; /* the ring is full: posted once earlier receives are in */
			if (r) {
				nm_check_verbs_recv_bounce(qp, (uint16_t)tq->rq_posted, plan.len);
				sge[0] = (struct ibv_sge){ .addr = 0, .length = 1, .lkey = 0 };
			}
			wr.num_sge = 1;
		} else if (staged && bad_seg) {
			/* the bad segment fails the message anyway: no staging */
			wr.num_sge = 1;
			sge[0] = (struct ibv_sge){ .addr = 0, .length = 1, .lkey = 0 };
		}
		rc = ibv_post_recv(tq->vqp, &wr, &bad);
		if (rc) {
			GDAK_WARN_RL("qp", qp->id, "verbs: ibv_post_recv of receive WQE %u: %s",
				     (unsigned)(uint16_t)tq->rq_posted, strerror(rc));
			tv_stage_recv_done(tq, tq->rq_posted, 0);
			break; /* tried again next pass */
		}
		tq->rq_posted++;
		done++;
	}
	return done;
}

static void recv_done(struct tv_qp *tq, const struct ibv_wc *wc)
{
	struct nm_qp *qp = tq->qp;
	uint8_t cqe_op, req_op, synd = tv_syndrome_of(wc->status);

	if (synd == MLX5_CQE_SYNDROME_WR_FLUSH_ERR) {
		tv_stage_recv_done(tq, wc->wr_id, 0);
		return; /* the NIC model flushes its receive queue itself (nm_resp_flush) */
	}
	/* staged: the message to the receive WQE's segments before its CQE
	 * (a WRITE_IMM's data went to the rkey's memory, not here) */
	if (tv_stage_recv_done(tq, wc->wr_id, !synd && wc->opcode == IBV_WC_RECV ? wc->byte_len : 0)
	    && !synd)
		synd = MLX5_CQE_SYNDROME_LOCAL_PROT_ERR;
	tv_recv_cqe_opcode(wc, &cqe_op, &req_op);
	pthread_spin_lock(&qp->resp_lock);
	if (wc->wr_id + 1 > qp->rq_ci)
		qp->rq_ci = wc->wr_id + 1; /* RC receives complete in order */
	nm_comp_recv(qp, synd ? MLX5_CQE_RESP_ERR : cqe_op, (uint16_t)wc->wr_id, wc->byte_len,
		     wc->imm_data, synd, req_op);
	pthread_spin_unlock(&qp->resp_lock);
	if (synd)
		nm_qp_set_error(qp, synd, req_op, (uint16_t)wc->wr_id, "verbs_recv",
				"receive WQE %u: %s", (unsigned)(uint16_t)wc->wr_id,
				ibv_wc_status_str(wc->status));
}

static int verbs_qp_poll(struct nm_qp *qp)
{
	struct tv_qp *tq = qp->tr_priv;
	struct ibv_wc wc[TV_POLL_BATCH];
	int work = post_recvs(tq), n;

	while ((n = ibv_poll_cq(tq->scq, TV_POLL_BATCH, wc)) > 0) {
		for (int i = 0; i < n; i++)
			send_done(tq, &wc[i]);
		work += n;
	}
	while ((n = ibv_poll_cq(tq->rcq, TV_POLL_BATCH, wc)) > 0) {
		for (int i = 0; i < n; i++)
			recv_done(tq, &wc[i]);
		work += n;
	}
	return work;
}

static void verbs_qp_error(struct nm_qp *qp)
{
	struct tv_qp *tq = qp->tr_priv;
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };

	/* what is in flight on the device is flushed there; the NIC model
	 * completes those ops with WR_FLUSH_ERR itself, and send_done ignores
	 * the late verbs completions */
	ibv_modify_qp(tq->vqp, &a, IBV_QP_STATE);
}

const struct nm_transport_ops nm_tr_verbs_ops = {
	.name = "verbs",
	.ctx_init = verbs_ctx_init,
	.ctx_fini = verbs_ctx_fini,
	.qp_init = verbs_qp_init,
	.qp_fini = verbs_qp_fini,
	.qp_info = verbs_qp_info,
	.qp_connect = verbs_qp_connect,
	.post_send = verbs_post_send,
	.qp_poll = verbs_qp_poll,
	.qp_error = verbs_qp_error,
	.mr_reg = tv_mr_reg,
	.mr_dereg = tv_mr_dereg,
	.atomics_8b_only = true, /* plain verbs (rxe): no extended atomics */
};

/* SPDX-License-Identifier: MIT */
/*
 * gv_dv.c - the GDAK_PRIVATE_1 entry points (gv_private.h): what gdak's
 * libmlx5.so.1 needs to answer mlx5dv_init_obj and friends for objects of
 * this library.
 */
#include <errno.h>
#include <string.h>

#include "gv_loc.h"
#include "tr_udp.h"
#include "gv_private.h"
#include "nm_ext.h"
#include <gdak/nic.h>

/* a register page whose writes nobody reads: the CQ arm doorbell (the
 * notifier of gv_verbs.c serves completion channels from the rings) */
static uint8_t arm_page[4096] __attribute__((aligned(4096)));

GV_EXPORT int gdak_ibv_is_device(struct ibv_device *dev)
{
	return gv_device_index(dev) >= 0;
}

GV_EXPORT int gdak_ibv_qp_direct(struct ibv_qp *qp, uint64_t *out, uint64_t *in)
{
	struct roce_stats st;

	if (!qp || !out || !in || !gdak_ibv_is_device(qp->context->device) ||
	    nm_tr_udp_qp_stats(gv_qp_of(qp)->g, &st))
		return EINVAL;
	*out = st.direct_wqes;
	*in = st.direct_in;
	return 0;
}

GV_EXPORT int gdak_ibv_set_trace(const char *path)
{
	return -gdak_nic_set_trace(path);
}

GV_EXPORT int gdak_ibv_qp_rings(struct ibv_qp *qp, struct gdak_ibv_qp_rings *out)
{
	struct gv_qp *q;

	if (!qp || !out || !gdak_ibv_is_device(qp->context->device))
		return EINVAL;
	q = gv_qp_of(qp);
	memset(out, 0, sizeof(*out));
	out->qpn = qp->qp_num;
	out->dbrec = q->dbrec;
	out->sq = (uint8_t *)q->qbuf + q->sq_off;
	out->sq_cnt = q->d->sq_wqebb_cnt;
	if (q->d->rq_wqe_cnt) {
		out->rq = q->qbuf;
		out->rq_cnt = q->d->rq_wqe_cnt;
		out->rq_stride = q->rq_stride;
	}
	/* the NIC-model QP's register page: db_reg is its first half */
	out->uar = (uint8_t *)(void *)q->d->db_reg - 0x800;
	out->bf_size = 1u << q->d->bf_log_half;
	out->max_inline = q->cap.max_inline_data;
	/* from here on the program may ring it itself, with 8-byte doorbells
	 * or BlueFlame writes as libmlx5 or its own code chooses */
	nm_ext_qp_doorbell_any(q->g);
	return 0;
}

GV_EXPORT int gdak_ibv_cq_ring(struct ibv_cq *cq, struct gdak_ibv_cq_ring *out)
{
	struct gv_cq *c;

	if (!cq || !out || !gdak_ibv_is_device(cq->context->device))
		return EINVAL;
	c = gv_cq_of(cq);
	memset(out, 0, sizeof(*out));
	out->cqn = c->ring.cqn;
	out->buf = c->buf;
	out->cqe_cnt = c->ring.ncqe;
	out->cqe_size = 64;
	out->dbrec = c->dbrec;
	out->uar = arm_page;
	out->ncq = c->ncq;
	return 0;
}

GV_EXPORT int gdak_ibv_pd_num(struct ibv_pd *pd, uint32_t *pdn)
{
	if (!pd || !pdn || !gdak_ibv_is_device(pd->context->device))
		return EINVAL;
	*pdn = pd->handle & 0xffffff;
	return 0;
}

GV_EXPORT int gdak_ibv_ah_av(struct ibv_ah *ah, struct mlx5_wqe_av **av)
{
	if (!ah || !av || !gdak_ibv_is_device(ah->context->device))
		return EINVAL;
	*av = &gv_container_of(ah, struct gv_ah, ah)->av;
	return 0;
}

GV_EXPORT int gdak_ibv_nic_ctx(struct ibv_context *ctx, struct gdak_ctx **out)
{
	if (!ctx || !out || !gdak_ibv_is_device(ctx->device))
		return EINVAL;
	*out = gv_ctx(ctx)->dev->g;
	return 0;
}

/* SPDX-License-Identifier: MIT */
/*
 * gdak_dc_verbs.h - DC objects through rdma-core's verbs and mlx5dv the way
 * NVSHMEM's IBGDA makes them, shared by the host-thread and CUDA DC tests
 * (verbs_dc.c, verbs_dc_cuda.cu): a DCI or DCT by mlx5dv_create_qp, the
 * DCT's INIT and RTR attributes with the exact masks the kernel accepts,
 * and a DCT's full address vector built from an AH.  C and C++ (nvcc).
 */
#ifndef GDAK_DC_VERBS_H
#define GDAK_DC_VERBS_H

#include <endian.h>
#include <stdint.h>
#include <string.h>

#include <infiniband/mlx5dv.h>
#include <infiniband/verbs.h>

/* The exact masks of a DCT's INIT and RTR transitions (a bit more or less
 * is EINVAL from the kernel). */
#define GDAK_DCV_DCT_INIT_MASK \
	(IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS)
#define GDAK_DCV_DCT_RTR_MASK (IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_MIN_RNR_TIMER)

/* mlx5dv_create_qp's arguments for a DCI (dct 0) or a DCT with access key
 * key (dct 1) on pd, its CQs cq and, for a DCT, srq; one SGE a WQE. */
static inline void gdak_dcv_attr(struct ibv_qp_init_attr_ex *x, struct mlx5dv_qp_init_attr *d,
				 struct ibv_pd *pd, int dct, uint64_t key, struct ibv_cq *cq,
				 struct ibv_srq *srq, uint32_t max_send_wr, uint32_t max_recv_wr)
{
	memset(x, 0, sizeof(*x));
	memset(d, 0, sizeof(*d));
	x->qp_type = IBV_QPT_DRIVER;
	x->comp_mask = IBV_QP_INIT_ATTR_PD;
	x->pd = pd;
	x->srq = dct ? srq : NULL;
	x->send_cq = x->recv_cq = cq;
	x->cap.max_send_wr = max_send_wr;
	x->cap.max_recv_wr = max_recv_wr;
	x->cap.max_send_sge = max_send_wr ? 1 : 0;
	x->cap.max_recv_sge = max_recv_wr ? 1 : 0;
	d->comp_mask = MLX5DV_QP_INIT_ATTR_MASK_DC;
	d->dc_init_attr.dc_type = dct ? MLX5DV_DCTYPE_DCT : MLX5DV_DCTYPE_DCI;
	if (dct)
		d->dc_init_attr.dct_access_key = key;
}

/* The same QP made; NULL with errno set when mlx5dv_create_qp refuses. */
static inline struct ibv_qp *gdak_dcv_create(struct ibv_context *ctx, struct ibv_pd *pd, int dct,
					     uint64_t key, struct ibv_cq *cq, struct ibv_srq *srq,
					     uint32_t max_send_wr, uint32_t max_recv_wr)
{
	struct ibv_qp_init_attr_ex x;
	struct mlx5dv_qp_init_attr d;

	gdak_dcv_attr(&x, &d, pd, dct, key, cq, srq, max_send_wr, max_recv_wr);
	return mlx5dv_create_qp(ctx, &x, &d);
}

/* A DCI's send ring, records and BlueFlame register, and its CQ's ring,
 * from mlx5dv_init_obj (whose return this is). */
static inline int gdak_dcv_rings(struct ibv_qp *dci, struct ibv_cq *cq, struct mlx5dv_qp *dq,
				 struct mlx5dv_cq *dc)
{
	struct mlx5dv_obj o;

	memset(&o, 0, sizeof(o));
	memset(dq, 0, sizeof(*dq));
	o.qp.in = dci;
	o.qp.out = dq;
	o.cq.in = cq;
	o.cq.out = dc;
	return mlx5dv_init_obj(&o, MLX5DV_OBJ_QP | MLX5DV_OBJ_CQ);
}

/* A DCT's INIT attributes: port 1, every remote access. */
static inline void gdak_dcv_dct_init(struct ibv_qp_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->qp_state = IBV_QPS_INIT;
	a->port_num = 1;
	a->qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
			     IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_ATOMIC;
}

/* A DCT's RTR attributes: its own address (gid on port 1), 4096-byte MTU. */
static inline void gdak_dcv_dct_rtr(struct ibv_qp_attr *a, const union ibv_gid *gid)
{
	memset(a, 0, sizeof(*a));
	a->qp_state = IBV_QPS_RTR;
	a->path_mtu = IBV_MTU_4096;
	a->min_rnr_timer = 12;
	a->ah_attr.is_global = 1;
	a->ah_attr.grh.dgid = *gid;
	a->ah_attr.grh.hop_limit = 64;
	a->ah_attr.port_num = 1;
}

/* An AH to gid on port 1 and its mlx5 address vector in *av; the AH, or NULL
 * when either step fails. */
static inline struct ibv_ah *gdak_dcv_ah(struct ibv_pd *pd, const union ibv_gid *gid,
					 struct mlx5_wqe_av *av)
{
	struct ibv_ah_attr aa;
	struct mlx5dv_ah dah;
	struct mlx5dv_obj o;
	struct ibv_ah *ah;

	memset(&aa, 0, sizeof(aa));
	aa.is_global = 1;
	aa.grh.dgid = *gid;
	aa.grh.hop_limit = 64;
	aa.port_num = 1;
	ah = ibv_create_ah(pd, &aa);
	if (!ah)
		return NULL;
	memset(&o, 0, sizeof(o));
	memset(&dah, 0, sizeof(dah));
	o.ah.in = ah;
	o.ah.out = &dah;
	if (mlx5dv_init_obj(&o, MLX5DV_OBJ_AH)) {
		ibv_destroy_ah(ah);
		return NULL;
	}
	memcpy(av, dah.av, sizeof(*av));
	return ah;
}

/* The AV NVSHMEM posts for a DCT: the AH's, with the DC key and the DCT
 * number (bit 31: the full 48-byte form). */
static inline void gdak_dcv_av_target(struct mlx5_wqe_av *av, uint32_t dctn, uint64_t key)
{
	av->key.dc_key = htobe64(key);
	av->dqp_dct = htobe32(1u << 31 | dctn);
}

#endif /* GDAK_DC_VERBS_H */

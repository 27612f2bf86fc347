/* SPDX-License-Identifier: MIT */
/*
 * gdak_devx_gpu_qp.h - the PRM half of the DEVX RC QPs whose umem is GPU
 * memory, as verbs_devx_gpu.c (host threads, the stand-in or the real
 * driver) and its CUDA twin verbs_devx_gpu_cuda.cu create and connect
 * them: one geometry, the CQ and QP objects over umem the caller has
 * allocated, filled and registered its own way, and the three transitions.
 * C and CUDA host code alike.
 */
#ifndef GDAK_DEVX_GPU_QP_H
#define GDAK_DEVX_GPU_QP_H

#include <stdint.h>
#include <string.h>

#include <infiniband/mlx5dv.h>

#include "gdak_prm.h"
#include "gdak_prm_rc.h"
#include "gdak_test.h"

/* one umem holds the receive ring then the send ring; the record page
 * holds the QP's record at 0 and the CQ's at 64 */
#define GQP_LOG_SQ 6
#define GQP_LOG_RQ 4
#define GQP_RQ_STRIDE 64
#define GQP_LOG_CQ 6
#define GQP_RQ_BYTES ((1u << GQP_LOG_RQ) * GQP_RQ_STRIDE)
#define GQP_SQ_BYTES ((1u << GQP_LOG_SQ) * 64u)
#define GQP_CQ_BYTES ((1u << GQP_LOG_CQ) * 64u)

/* CREATE_CQ and CREATE_QP (RC) over the registered umem: dbr the record
 * page, cq_um the CQE ring, wq_um the rings.  rmpn != 0: the receive side
 * is that RMP and the send ring starts the umem. */
static inline void gqp_objects(struct ibv_context *ctx, uint32_t pdn,
			       const struct mlx5dv_devx_uar *uar,
			       const struct mlx5dv_devx_umem *dbr,
			       const struct mlx5dv_devx_umem *cq_um,
			       const struct mlx5dv_devx_umem *wq_um, uint32_t rmpn,
			       struct mlx5dv_devx_obj **cq, uint32_t *cqn,
			       struct mlx5dv_devx_obj **qp, uint32_t *qpn)
{
	uint8_t in[0x880 / 8], out[16];
	*cq = prm_rc_create_cq(ctx, GQP_LOG_CQ, uar, dbr, cq_um, cqn);

	prm_rc_fill_qp(in, sizeof(in), pdn, uar, *cqn, dbr, wq_um, GQP_LOG_SQ, rmpn, GQP_LOG_RQ);
	*qp = mlx5dv_devx_obj_create(ctx, in, 0x880 / 8, out, sizeof(out));
	REQUIRE(*qp != NULL);
	*qpn = prm_get(out, PRM_OBJ);
}

/* RST2INIT (remote write, read, atomics), INIT2RTR to peer over the
 * RoCE GID, RTR2RTS. */
static inline void gqp_connect(struct mlx5dv_devx_obj *qp, uint32_t qpn, uint32_t peer,
			       const uint8_t gid[16])
{
	prm_rc_connect(qp, qpn, &prm_rc_ibgda, peer, gid);
}

#endif

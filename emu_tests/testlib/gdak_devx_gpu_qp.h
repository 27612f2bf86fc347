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
#include "gdak_test.h"

#define GQP_CQC(off, w) 0x80 + (off), (w)
#define GQP_QPC(off, w) 0xc0 + (off), (w)
#define GQP_ADS(off, w) 0xc0 + 0xc0 + (off), (w)

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
	uint32_t eqn = 0;

	memset(in, 0, sizeof(in));
	prm_set(in, PRM_OPCODE, 0x400);
	prm_set(in, GQP_CQC(0x63, 5), GQP_LOG_CQ);
	prm_set(in, GQP_CQC(0x68, 24), uar->page_id);
	CHECK_EQ(mlx5dv_devx_query_eqn(ctx, 0, &eqn), 0);
	prm_set(in, GQP_CQC(0xb8, 8), eqn);
	prm_set(in, GQP_CQC(0x20, 32), dbr->umem_id);
	prm_set64(in, 0x80 + 0x1c0, 64); /* CQ record at dbr + 64 */
	prm_set(in, 0x2c0, 32, cq_um->umem_id);
	*cq = mlx5dv_devx_obj_create(ctx, in, 0x300 / 8, out, sizeof(out));
	REQUIRE(*cq != NULL);
	*cqn = prm_get(out, PRM_OBJ);

	memset(in, 0, sizeof(in));
	prm_set(in, PRM_OPCODE, 0x500);
	prm_set(in, GQP_QPC(0x13, 2), 3);
	prm_set(in, GQP_QPC(0x28, 24), pdn);
	prm_set(in, GQP_QPC(0x51, 4), GQP_LOG_SQ);
	if (rmpn) {
		prm_set(in, GQP_QPC(0x565, 3), 1); /* rq_type SRQ: the RMP */
		prm_set(in, GQP_QPC(0x568, 24), rmpn);
	} else {
		prm_set(in, GQP_QPC(0x49, 4), GQP_LOG_RQ);
		prm_set(in, GQP_QPC(0x4d, 3), 2); /* stride 16 << 2 */
	}
	prm_set(in, GQP_QPC(0x68, 24), uar->page_id);
	prm_set(in, GQP_QPC(0x3e8, 24), *cqn);
	prm_set(in, GQP_QPC(0x4e8, 24), *cqn);
	prm_set(in, GQP_QPC(0x720, 32), dbr->umem_id);
	prm_set(in, 0x840, 32, wq_um->umem_id);
	*qp = mlx5dv_devx_obj_create(ctx, in, 0x880 / 8, out, sizeof(out));
	REQUIRE(*qp != NULL);
	*qpn = prm_get(out, PRM_OBJ);
}

static inline void gqp_modify(struct mlx5dv_devx_obj *qp, uint32_t qpn, unsigned op, uint8_t *in)
{
	uint8_t out[16] = { 0 };

	prm_set(in, PRM_OPCODE, op);
	prm_set(in, PRM_OBJ, qpn);
	CHECK_EQ(mlx5dv_devx_obj_modify(qp, in, 0x800 / 8, out, sizeof(out)), 0);
}

/* RST2INIT (remote write, read, atomics), INIT2RTR to peer over the
 * RoCE GID, RTR2RTS. */
static inline void gqp_connect(struct mlx5dv_devx_obj *qp, uint32_t qpn, uint32_t peer,
			       const uint8_t gid[16])
{
	uint8_t in[0x800 / 8];

	memset(in, 0, sizeof(in));
	prm_set(in, GQP_QPC(0x490, 1), 1);
	prm_set(in, GQP_QPC(0x491, 1), 1);
	prm_set(in, GQP_QPC(0x492, 1), 1);
	prm_set(in, GQP_QPC(0x48c, 4), 3);
	prm_set(in, GQP_ADS(0x128, 8), 1);
	gqp_modify(qp, qpn, 0x502, in);
	memset(in, 0, sizeof(in));
	prm_set(in, GQP_QPC(0x40, 3), 3);
	prm_set(in, GQP_QPC(0x43, 5), 30);
	prm_set(in, GQP_QPC(0xa8, 24), peer);
	prm_set(in, GQP_QPC(0x4a8, 24), 0x100);
	prm_set(in, GQP_QPC(0x488, 3), 2);
	prm_set(in, GQP_QPC(0x4a3, 5), 12);
	prm_set(in, GQP_ADS(0x128, 8), 1);
	prm_set(in, GQP_ADS(0x28, 1), 1);
	prm_set(in, GQP_ADS(0x58, 8), 64);
	memcpy(in + (0xc0 + 0xc0 + 0x80) / 8, gid, 16);
	gqp_modify(qp, qpn, 0x503, in);
	memset(in, 0, sizeof(in));
	prm_set(in, GQP_QPC(0x3c8, 24), 0x100);
	prm_set(in, GQP_QPC(0x38d, 3), 7);
	prm_set(in, GQP_QPC(0x390, 3), 7);
	prm_set(in, GQP_ADS(0x40, 5), 14);
	prm_set(in, GQP_QPC(0x388, 3), 2);
	gqp_modify(qp, qpn, 0x504, in);
}

#endif

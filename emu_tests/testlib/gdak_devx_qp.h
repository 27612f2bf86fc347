/* SPDX-License-Identifier: MIT */
/*
 * gdak_devx_qp.h - a DEVX RC QP as the DEVX tests drive it: its CQ, send
 * ring and records in umem, the three transitions as NVSHMEM's IBGDA
 * fills them, one-WQE posts rung by record and register, CQEs read raw
 * from the ring.  The receive side is an RMP (rmpn) or none.
 */
#ifndef GDAK_DEVX_QP_H
#define GDAK_DEVX_QP_H

#include <endian.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/mlx5dv.h>
#include <infiniband/verbs.h>

#include "gdak_cq_ring.h"
#include "gdak_prm.h"
#include "gdak_prm_rc.h"
#include "gdak_test.h"
#include "gdak_test_wqe.h"

enum {
	TQP_LOG_SQ = 5,
	TQP_LOG_CQ = 5,
};

struct tqp {
	struct ibv_context *ctx; /* set by the caller, with gid and pdn */
	const uint8_t *gid;
	uint32_t pdn;
	struct mlx5dv_devx_uar *uar;
	uint8_t *sq, *cqb;
	uint32_t *dbr; /* [0..1] QP record, [16] CQ record */
	struct mlx5dv_devx_umem *sq_um, *cq_um, *dbr_um;
	struct mlx5dv_devx_obj *cq, *qp;
	uint32_t cqn, qpn, pi, ci;
};

/* An RC QP with no receive queue of its own: rq_type zero-length (the
 * sender) or SRQ naming rmpn (the receiver). */
static inline int tqp_create(struct tqp *q, uint32_t rmpn, uint8_t *out)
{
	uint8_t in[0x880 / 8];

	if (!q->uar) {
		q->uar = mlx5dv_devx_alloc_uar(q->ctx, MLX5DV_UAR_ALLOC_TYPE_NC);
		REQUIRE(q->uar != NULL);
		prm_rc_host_umem(q->ctx, (1u << TQP_LOG_SQ) * 64, TQP_LOG_CQ, &q->sq, &q->sq_um,
				 &q->cqb, &q->cq_um, &q->dbr, &q->dbr_um);

		q->cq = prm_rc_create_cq(q->ctx, TQP_LOG_CQ, q->uar, q->dbr_um, q->cq_um, &q->cqn);
	}
	prm_rc_fill_qp(in, sizeof(in), q->pdn, q->uar, q->cqn, q->dbr_um, q->sq_um, TQP_LOG_SQ,
		       rmpn, 0);
	q->qp = mlx5dv_devx_obj_create(q->ctx, in, sizeof(in), out, 16);
	if (!q->qp)
		return -1;
	q->qpn = prm_get(out, PRM_OBJ);
	return 0;
}

static inline void tqp_modify(struct tqp *q, unsigned op, uint8_t *in)
{
	prm_rc_modify(q->qp, q->qpn, op, in);
}

/* PSN 0x200, no atomics, the receiver's RNR NAK timer 1. */
static inline void tqp_connect(struct tqp *q, uint32_t peer, unsigned rnr_retry)
{
	const struct prm_rc_conn c = { .psn = 0x200, .min_rnr_nak = 1, .rnr_retry = rnr_retry };

	prm_rc_connect(q->qp, q->qpn, &c, peer, q->gid);
}

/* One WQE (SEND, RDMA_WRITE or RDMA_READ, one data segment) at q->pi: the
 * record, then the register. */
static inline void tqp_post(struct tqp *q, uint8_t opcode, const void *laddr, uint32_t lkey,
			    uint32_t len, uint64_t raddr, uint32_t rkey)
{
	uint8_t *w = q->sq + (q->pi % (1u << TQP_LOG_SQ)) * 64;
	struct mlx5_wqe_ctrl_seg *c = (void *)w;
	int rdma = opcode != MLX5_OPCODE_SEND;

	memset(w, 0, 64);
	gdak_tw_segs(w + 16, opcode, raddr, rkey, 0, 0, (uintptr_t)laddr, lkey, len);
	gdak_tw_ctrl(w, q->pi, opcode, q->qpn, rdma ? 3 : 2);
	q->pi++;
	__atomic_store_n(&q->dbr[1], htobe32(q->pi & 0xffff), __ATOMIC_RELEASE);
	__atomic_store_n((uint64_t *)q->uar->reg_addr, *(uint64_t *)(void *)c, __ATOMIC_RELEASE);
}

static inline void tqp_send(struct tqp *q, const void *laddr, uint32_t lkey, uint32_t len)
{
	tqp_post(q, MLX5_OPCODE_SEND, laddr, lkey, len, 0, 0);
}

/* 2RST: the program's send record back to 0 with the producer (the NIC
 * would otherwise take the old count for WQEs posted). */
static inline void tqp_reset(struct tqp *q)
{
	uint8_t in[0x800 / 8];

	memset(in, 0, sizeof(in));
	tqp_modify(q, 0x50a, in);
	__atomic_store_n(&q->dbr[1], 0, __ATOMIC_RELEASE);
	q->pi = 0;
}

static inline struct mlx5_cqe64 *tqp_cqe(struct tqp *q)
{
	struct mlx5_cqe64 *e = gdak_cq_ring_wait(q->cqb, 1u << TQP_LOG_CQ, q->ci);

	q->ci++;
	__atomic_store_n(&q->dbr[16], htobe32(q->ci & 0xffffff), __ATOMIC_RELEASE);
	return e;
}

static inline void tqp_destroy(struct tqp *q)
{
	prm_rc_destroy(q->qp, q->cq, q->sq_um, q->cq_um, q->dbr_um, q->uar);
	free(q->sq);
	free(q->cqb);
	free(q->dbr);
}

#endif /* GDAK_DEVX_QP_H */

/* SPDX-License-Identifier: MIT */
/*
 * verbs_devx_gpu_cuda.cu - the GPU twin of verbs_devx_gpu.c: DEVX queues
 * whose umem is cudaMalloc memory (CQ buffer, RQ + SQ, both doorbell
 * records), as DOCA GPUNetIO builds them, and a CUDA thread as the device.
 * The host creates and connects two RC QPs with PRM mailboxes; the kernel
 * writes each WQE into the GPU send ring, the GPU send record, then the
 * doorbell register (the UAR page, host memory, mapped for the GPU), and
 * polls its CQE in GPU memory: a WRITE into GPU memory, a READ back, a
 * fetch-add and a CAS on a GPU word, a SEND into the peer's GPU receive
 * ring (posted by the host with copies), and a wrong key (REMOTE_ACCESS_ERR).
 * The host checks every byte and CQE field the kernel recorded, and the
 * receiver's CQE read from GPU memory.  Exits 77 without a GPU.
 */
#include <cuda_runtime.h>
#include <errno.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/mlx5dv.h>
#include <infiniband/verbs.h>

#include "gdak_cuda_view.h"
#include "gdak_cuda_ops6.h"
#include "gdak_test_wqe.h"

extern "C" {
#include "gdak_devx_gpu_qp.h"
#include "gdak_prm.h"
#include "gdak_test.h"
#include "gdak_verbs.h"
}

#define LEN GDAK_OPS6_LEN
#define NOPS GDAK_OPS6_N

#define CU(call) GDAK_CU_REQUIRE(call)

static struct ibv_context *ctx;
static union ibv_gid gid;
static uint32_t pdn;

struct gqp {
	struct mlx5dv_devx_uar *uar;
	uint8_t *wq, *cqb, *dbr; /* cudaMalloc: RQ then SQ; CQEs; records */
	struct mlx5dv_devx_umem *wq_um, *cq_um, *dbr_um;
	struct mlx5dv_devx_obj *cq, *qp;
	uint32_t cqn, qpn;
};

struct op {
	uint8_t opcode;
	uint32_t len, rkey;
	uint64_t laddr, raddr, add_swap, cmp;
};

struct args {
	struct gdak_tw_sq r; /* the rings and records in GPU memory, the UAR mapped */
	uint32_t lkey;
	struct op ops[NOPS];
};

struct result {
	struct gdak_tw_cqe cqe[GDAK_OPS6_N];
	int timed_out;
};

__global__ void k_devx(struct args a, struct result *res)
{
	for (int n = 0; n < NOPS; n++) {
		const struct op *o = &a.ops[n];
		uint8_t *w = a.r.sq + (n % a.r.wqebbs) * 64, *p;

		p = gdak_tw_segs(w + 16, o->opcode, o->raddr, o->rkey, o->add_swap, o->cmp, o->laddr,
				 a.lkey, o->len);
		/* the WQE and the record are GPU memory, which the NIC copies
		 * out once the register says so */
		if (gdak_tw_exec(&a.r, w, p, o->opcode, n, 1, n, &res->cqe[n])) {
			res->timed_out = 1;
			return;
		}
	}
}

static void gqp_create(struct gqp *q)
{
	uint8_t cqe0[GQP_CQ_BYTES];

	q->uar = mlx5dv_devx_alloc_uar(ctx, MLX5DV_UAR_ALLOC_TYPE_NC);
	REQUIRE(q->uar != NULL);
	CU(cudaMalloc((void **)&q->wq, GQP_RQ_BYTES + GQP_SQ_BYTES));
	CU(cudaMalloc((void **)&q->cqb, GQP_CQ_BYTES));
	CU(cudaMalloc((void **)&q->dbr, 4096));
	CU(cudaMemset(q->wq, 0, GQP_RQ_BYTES + GQP_SQ_BYTES));
	CU(cudaMemset(q->dbr, 0, 4096));
	memset(cqe0, 0, sizeof(cqe0));
	for (unsigned i = 0; i < (1u << GQP_LOG_CQ); i++)
		cqe0[i * 64 + 63] = 0xf1;
	CU(cudaMemcpy(q->cqb, cqe0, GQP_CQ_BYTES, cudaMemcpyHostToDevice));
	q->wq_um = mlx5dv_devx_umem_reg(ctx, q->wq, GQP_RQ_BYTES + GQP_SQ_BYTES, IBV_ACCESS_LOCAL_WRITE);
	q->cq_um = mlx5dv_devx_umem_reg(ctx, q->cqb, GQP_CQ_BYTES, IBV_ACCESS_LOCAL_WRITE);
	q->dbr_um = mlx5dv_devx_umem_reg(ctx, q->dbr, 4096, IBV_ACCESS_LOCAL_WRITE);
	if (!q->wq_um || !q->cq_um || !q->dbr_um)
		GDAK_TEST_SKIP("GPU-memory umem refused (no CUDA memory engine): %s",
			       strerror(errno));

	gqp_objects(ctx, pdn, q->uar, q->dbr_um, q->cq_um, q->wq_um, 0, &q->cq, &q->cqn, &q->qp,
		    &q->qpn);
}

static void gqp_destroy(struct gqp *q)
{
	prm_rc_destroy(q->qp, q->cq, q->wq_um, q->cq_um, q->dbr_um, q->uar);
	CU(cudaFree(q->wq));
	CU(cudaFree(q->cqb));
	CU(cudaFree(q->dbr));
}

int main(void)
{
	struct ibv_pd *pd;
	struct mlx5dv_devx_obj *pdo;
	struct gqp qa, qb;
	struct args a;
	struct result *res;
	struct gdak_ops6 b;
	uint8_t *h, *g;

	pd = gdak_ops6_open(&ctx, &gid);
	pdo = prm_alloc_pd(ctx, &pdn);

	gdak_ops6_setup(&b, pd, 31);
	h = b.h;
	g = b.g;
	CU(cudaHostAlloc((void **)&res, sizeof(*res), cudaHostAllocMapped));
	memset(res, 0, sizeof(*res));

	memset(&qa, 0, sizeof(qa));
	memset(&qb, 0, sizeof(qb));
	gqp_create(&qa);
	gqp_create(&qb);
	gqp_connect(qa.qp, qa.qpn, qb.qpn, gid.raw);
	gqp_connect(qb.qp, qb.qpn, qa.qpn, gid.raw);

	/* one receive WQE in b's GPU ring, and its GPU record */
	{
		uint8_t d[32];
		uint32_t rec = htobe32(1);

		gdak_tw_recv(d, (uintptr_t)(h + 3 * LEN), b.hmr->lkey, 1024);
		CU(cudaMemcpy(qb.wq, d, sizeof(d), cudaMemcpyHostToDevice));
		CU(cudaMemcpy(qb.dbr, &rec, 4, cudaMemcpyHostToDevice));
	}

	memset(&a, 0, sizeof(a));
	a.r.sq = qa.wq + GQP_RQ_BYTES;
	a.r.wqebbs = 1u << GQP_LOG_SQ;
	a.r.qpn = qa.qpn;
	a.r.dbrec = (uint32_t *)(void *)(qa.dbr + 4);
	a.r.reg = (uint64_t *)gdak_cuda_view(qa.uar->reg_addr, 8);
	a.r.cq = qa.cqb;
	a.r.ncqe = 1u << GQP_LOG_CQ;
	a.r.cq_dbrec = (uint32_t *)(void *)(qa.dbr + 64);
	a.lkey = b.hmr->lkey;
	/* WRITE h -> g, READ g -> h + LEN, FA and CAS on a GPU word, SEND into
	 * b's receive ring, WRITE with a wrong key */
	a.ops[0] = { MLX5_OPCODE_RDMA_WRITE, 3000, b.gmr->rkey, (uintptr_t)h, (uintptr_t)g, 0, 0 };
	a.ops[1] = { MLX5_OPCODE_RDMA_READ, 3000, b.gmr->rkey, (uintptr_t)(h + LEN),
		     (uintptr_t)g,	    0,	  0 };
	a.ops[2] = { MLX5_OPCODE_ATOMIC_FA, 8,	b.gmr->rkey, (uintptr_t)(h + 2 * LEN),
		     (uintptr_t)(g + LEN),  25, 0 };
	a.ops[3] = { MLX5_OPCODE_ATOMIC_CS, 8, b.gmr->rkey, (uintptr_t)(h + 2 * LEN + 8),
		     (uintptr_t)(g + LEN),  9, 525 };
	a.ops[4] = { MLX5_OPCODE_SEND, 600, 0, (uintptr_t)(h + 100), 0, 0, 0 };
	a.ops[5] = {
		MLX5_OPCODE_RDMA_WRITE, 64, b.gmr->rkey ^ 0x55, (uintptr_t)h, (uintptr_t)g, 0, 0
	};
	k_devx<<<1, 1>>>(a, res);
	CU(cudaGetLastError());
	CU(cudaDeviceSynchronize());

	CHECK_EQ(res->timed_out, 0);
	gdak_ops6_check(&b, res->cqe, qa.qpn, 1, MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR);
	/* b's receive CQE, in GPU memory */
	{
		struct mlx5_cqe64 e;

		for (;;) {
			CU(cudaMemcpy(&e, qb.cqb, 64, cudaMemcpyDeviceToHost));
			if ((e.op_own >> 4) != MLX5_CQE_INVALID && !(e.op_own & 1))
				break;
			sched_yield();
		}
		CHECK_EQ(e.op_own >> 4, MLX5_CQE_RESP_SEND);
		CHECK_EQ(be32toh(e.byte_cnt), 600);
		CHECK_EQ(be16toh(e.wqe_counter), 0);
		CHECK_EQ(be32toh(e.sop_drop_qpn) & 0xffffff, qb.qpn);
	}

	gqp_destroy(&qa);
	gqp_destroy(&qb);
	CHECK_EQ(mlx5dv_devx_obj_destroy(pdo), 0);
	gdak_ops6_teardown(&b);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	return gdak_test_end();
}

/* SPDX-License-Identifier: MIT */
/*
 * verbs_dc_cuda.cu - the GPU twin of verbs_dc.c: a CUDA thread drives a DCI
 * of gdak's emulated mlx5 device as NVSHMEM's IBGDA kernels do.  The host
 * creates two DCTs and a DCI with mlx5dv_create_qp, takes the DCI's SQ,
 * doorbell record, BlueFlame register and CQ ring from mlx5dv_init_obj and
 * maps them for the GPU (cudaHostRegister: all are ordinary host memory);
 * the kernel writes each WQE (ctrl, 48-byte AV, raddr / atomic / data),
 * the record, the 8-byte doorbell, and polls the CQE: WRITE into GPU
 * memory, READ back, fetch-add and CAS on a GPU word, SEND into the DCTs'
 * SRQ, then a wrong access key (TRANSPORT_RETRY_EXC_ERR).  The host checks
 * every byte and CQE field the kernel recorded.  Exits 77 without a GPU.
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
#include "gdak_test.h"
#include "gdak_verbs.h"
}
#include "gdak_dc_verbs.h"

#define LEN GDAK_OPS6_LEN
#define KEY0 0x1122334455667788ull
#define KEY1 0x0badc0ffee000001ull
#define NOPS GDAK_OPS6_N

#define CU(call) GDAK_CU_REQUIRE(call)

struct op {
	uint8_t opcode;
	uint8_t av; /* which AV: 0, 1, 2 (the wrong key) */
	uint32_t len;
	uint64_t laddr, raddr, add_swap, cmp;
};

struct args {
	struct gdak_tw_sq r;
	struct mlx5_wqe_av av[3];
	uint32_t lkey, rkey;
	struct op ops[NOPS];
};

struct result {
	struct gdak_tw_cqe cqe[GDAK_OPS6_N];
	int timed_out;
};

__global__ void k_dc(struct args a, struct result *res)
{
	uint32_t pi = 0;

	for (int n = 0; n < NOPS; n++) {
		const struct op *o = &a.ops[n];
		uint8_t *w = a.r.sq + (pi % a.r.wqebbs) * 64, *p = w + 16;

		/* the AV as the host built it (48 bytes), then the op's segments */
		for (int i = 0; i < 3; i++)
			gdak_tw_put16(p + 16 * i, (const uint32_t *)&a.av[o->av] + 4 * i);
		p = gdak_tw_segs(p + 48, o->opcode, o->raddr, a.rkey, o->add_swap, o->cmp, o->laddr,
				 a.lkey, o->len);
		if (gdak_tw_exec(&a.r, w, p, o->opcode, pi, 2, n, &res->cqe[n])) {
			res->timed_out = 1;
			return;
		}
		pi += 2;
	}
}

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static union ibv_gid gid;

static struct ibv_qp *dc_create(int dct, uint64_t key, struct ibv_cq *cq, struct ibv_srq *srq)
{
	return gdak_dcv_create(ctx, pd, dct, key, cq, srq, 16, 0);
}

static void up(struct ibv_qp *q, int dct)
{
	struct ibv_qp_attr a;

	gdak_dcv_dct_init(&a);
	REQUIRE_EQ(ibv_modify_qp(q, &a,
				 dct ? GDAK_DCV_DCT_INIT_MASK
				     : IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT),
		   0);
	gdak_dcv_dct_rtr(&a, &gid);
	REQUIRE_EQ(ibv_modify_qp(q, &a,
				 dct ? GDAK_DCV_DCT_RTR_MASK : IBV_QP_STATE | IBV_QP_PATH_MTU),
		   0);
	if (dct)
		return;
	a.qp_state = IBV_QPS_RTS;
	REQUIRE_EQ(ibv_modify_qp(q, &a, IBV_QP_STATE | IBV_QP_SQ_PSN), 0);
}

int main(void)
{
	struct ibv_cq *scq, *rcq;
	struct ibv_srq *srq;
	struct ibv_qp *dct[2], *dci;
	struct ibv_ah *ah;
	struct mlx5dv_qp dq;
	struct mlx5dv_cq dc;
	struct mlx5_wqe_av base;
	struct args a;
	struct result *res;
	struct gdak_ops6 b;
	uint8_t *h, *g;

	pd = gdak_ops6_open(&ctx, &gid);

	/* h: host memory both sides reach (source, READ target, atomic
	 * results); g: GPU memory, the DCTs' side */
	gdak_ops6_setup(&b, pd, 21);
	h = b.h;
	g = b.g;
	CU(cudaHostAlloc((void **)&res, sizeof(*res), cudaHostAllocMapped));
	memset(res, 0, sizeof(*res));

	scq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	rcq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	{
		struct ibv_srq_init_attr sa;

		memset(&sa, 0, sizeof(sa));
		sa.attr.max_wr = 16;
		sa.attr.max_sge = 1;
		srq = ibv_create_srq(pd, &sa);
	}
	REQUIRE(scq && rcq && srq);
	dct[0] = dc_create(1, KEY0, rcq, srq);
	dct[1] = dc_create(1, KEY1, rcq, srq);
	dci = dc_create(0, 0, scq, NULL);
	REQUIRE(dct[0] && dct[1] && dci);
	up(dct[0], 1);
	up(dct[1], 1);
	up(dci, 0);

	REQUIRE_EQ(gdak_dcv_rings(dci, scq, &dq, &dc), 0);
	memset(&a, 0, sizeof(a));
	a.r.sq = (uint8_t *)gdak_cuda_view(dq.sq.buf, (size_t)dq.sq.wqe_cnt * 64);
	a.r.wqebbs = dq.sq.wqe_cnt;
	a.r.qpn = dci->qp_num;
	a.r.dbrec = (uint32_t *)gdak_cuda_view(&dq.dbrec[MLX5_SND_DBR], 4);
	a.r.reg = (uint64_t *)gdak_cuda_view(dq.bf.reg, 8);
	a.r.cq = (uint8_t *)gdak_cuda_view(dc.buf, (size_t)dc.cqe_cnt * 64);
	a.r.ncqe = dc.cqe_cnt;
	a.r.cq_dbrec = (uint32_t *)gdak_cuda_view(dc.dbrec, 4);
	a.lkey = b.hmr->lkey;
	a.rkey = b.gmr->rkey;

	/* the AVs: an AH's, with each DCT's number and key; the third one
	 * names DCT 0 with DCT 1's key */
	ah = gdak_dcv_ah(pd, &gid, &base);
	REQUIRE(ah != NULL);
	for (int i = 0; i < 3; i++) {
		memcpy(&a.av[i], &base, sizeof(a.av[i]));
		gdak_dcv_av_target(&a.av[i], dct[i == 1 ? 1 : 0]->qp_num, i == 0 ? KEY0 : KEY1);
	}

	/* WRITE h -> g via DCT 0, READ g -> h+LEN via DCT 1, FA and CAS on the
	 * GPU word, SEND h -> the SRQ via DCT 1, WRITE with the wrong key */
	a.ops[0] = (struct op){ MLX5_OPCODE_RDMA_WRITE, 0, 3000, (uintptr_t)h, (uintptr_t)g, 0, 0 };
	a.ops[1] = (struct op){ MLX5_OPCODE_RDMA_READ,	1,	   3000, (uintptr_t)(h + LEN),
				(uintptr_t)g,		0, 0 };
	a.ops[2] = (struct op){ MLX5_OPCODE_ATOMIC_FA,	  0, 8, (uintptr_t)(h + 2 * LEN),
				(uintptr_t)(g + LEN), 25, 0 };
	a.ops[3] = (struct op){ MLX5_OPCODE_ATOMIC_CS,	    1, 8, (uintptr_t)(h + 2 * LEN + 8),
				(uintptr_t)(g + LEN), 9, 525 };
	a.ops[4] = (struct op){ MLX5_OPCODE_SEND, 1, 600, (uintptr_t)(h + 100), 0, 0, 0 };
	a.ops[5] = (struct op){ MLX5_OPCODE_RDMA_WRITE, 2, 64, (uintptr_t)h, (uintptr_t)g, 0, 0 };
	{
		struct ibv_sge sge = { (uintptr_t)(h + 3 * LEN), 1024, b.hmr->lkey };
		struct ibv_recv_wr rw, *bad;

		memset(&rw, 0, sizeof(rw));
		rw.wr_id = 77;
		rw.sg_list = &sge;
		rw.num_sge = 1;
		REQUIRE_EQ(ibv_post_srq_recv(srq, &rw, &bad), 0);
	}
	k_dc<<<1, 1>>>(a, res);
	CU(cudaGetLastError());
	CU(cudaDeviceSynchronize());

	CHECK_EQ(res->timed_out, 0);
	gdak_ops6_check(&b, res->cqe, dci->qp_num, 2, 0x15 /* TRANSPORT_RETRY_EXC_ERR */);
	{
		struct ibv_wc wc;
		int k;

		do
			k = ibv_poll_cq(rcq, 1, &wc);
		while (k == 0 && (sched_yield(), 1));
		CHECK_EQ(k, 1);
		CHECK_EQ(wc.status, IBV_WC_SUCCESS);
		CHECK_EQ(wc.byte_len, 600);
		CHECK_EQ(wc.wr_id, 77);
		CHECK_EQ(wc.qp_num, dct[1]->qp_num);
	}

	CHECK_EQ(ibv_destroy_qp(dci), 0);
	CHECK_EQ(ibv_destroy_qp(dct[0]), 0);
	CHECK_EQ(ibv_destroy_qp(dct[1]), 0);
	CHECK_EQ(ibv_destroy_ah(ah), 0);
	CHECK_EQ(ibv_destroy_srq(srq), 0);
	CHECK_EQ(ibv_destroy_cq(scq), 0);
	CHECK_EQ(ibv_destroy_cq(rcq), 0);
	gdak_ops6_teardown(&b);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	return gdak_test_end();
}

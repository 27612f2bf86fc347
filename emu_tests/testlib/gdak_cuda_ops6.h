/* SPDX-License-Identifier: MIT */
/*
 * gdak_cuda_ops6.h - the six operations the verbs CUDA twins
 * (verbs_dc_cuda.cu, verbs_devx_gpu_cuda.cu) let a kernel post, the
 * memory they run over and what they must leave: WRITE h -> g, READ
 * g -> h + LEN, fetch-add 25 and CAS 525 -> 9 on the GPU word g + LEN
 * (500 at first), SEND h + 100 (600 bytes) into a receive buffer at
 * h + 3 * LEN, and a WRITE that must fail.  CUDA host code.
 */
#ifndef GDAK_CUDA_OPS6_H
#define GDAK_CUDA_OPS6_H

#include <cuda_runtime.h>
#include <endian.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/mlx5dv.h>
#include <infiniband/verbs.h>

#include "gdak_cuda_view.h"
#include "gdak_test_wqe.h"

extern "C" {
#include "gdak_verbs.h"
}

#define GDAK_OPS6_LEN 4096
#define GDAK_OPS6_N 6

struct gdak_ops6 {
	uint8_t *h, *g; /* mapped host memory (4 * LEN), GPU memory (2 * LEN) */
	struct ibv_mr *hmr, *gmr;
};

/* Exit 77 without a GPU; else the first device, its GID 0 and a PD. */
static inline struct ibv_pd *gdak_ops6_open(struct ibv_context **ctx, union ibv_gid *gid)
{
	int n = 0;

	if (cudaGetDeviceCount(&n) != cudaSuccess || n < 1)
		GDAK_TEST_SKIP("no usable GPU");
	return gdak_vt_open_pd(ctx, gid);
}

/* h filled from seed, g zero but for the atomic word; both registered for
 * every remote access.  Skips the test when GPU memory cannot be. */
static inline void gdak_ops6_setup(struct gdak_ops6 *b, struct ibv_pd *pd, unsigned seed)
{
	const size_t len = GDAK_OPS6_LEN;
	const int acc = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
			IBV_ACCESS_REMOTE_ATOMIC;
	uint64_t v = 500;

	GDAK_CU_REQUIRE(cudaHostAlloc((void **)&b->h, 4 * len, cudaHostAllocMapped));
	GDAK_CU_REQUIRE(cudaMalloc((void **)&b->g, 2 * len));
	GDAK_CU_REQUIRE(cudaMemset(b->g, 0, 2 * len));
	memset(b->h, 0, 4 * len);
	gdak_test_fill(b->h, len, seed);
	b->hmr = ibv_reg_mr(pd, b->h, 4 * len, acc);
	b->gmr = ibv_reg_mr(pd, b->g, 2 * len, acc);
	if (!b->gmr)
		GDAK_TEST_SKIP("GPU memory MR refused (no CUDA memory engine): %s",
			       strerror(errno));
	REQUIRE(b->hmr != NULL);
	GDAK_CU_REQUIRE(cudaMemcpy(b->g + len, &v, 8, cudaMemcpyHostToDevice));
}

/* Every CQE from qpn, WQE i at i * step, the last one an error with
 * bad_syndrome; every byte the operations moved. */
static inline void gdak_ops6_check(const struct gdak_ops6 *b, const struct gdak_tw_cqe *cqe,
				   uint32_t qpn, unsigned step, uint8_t bad_syndrome)
{
	const size_t len = GDAK_OPS6_LEN;
	uint8_t *chk;

	for (int i = 0; i < GDAK_OPS6_N; i++) {
		CHECK_EQ(cqe[i].qpn, qpn);
		CHECK_EQ(cqe[i].wqe_counter, step * i);
		CHECK_EQ(cqe[i].opcode, i < 5 ? MLX5_CQE_REQ : MLX5_CQE_REQ_ERR);
	}
	CHECK_EQ(cqe[1].byte_cnt, 3000);
	CHECK_EQ(cqe[5].syndrome, bad_syndrome);
	chk = (uint8_t *)malloc(2 * len);
	REQUIRE(chk != NULL);
	GDAK_CU_REQUIRE(cudaMemcpy(chk, b->g, 2 * len, cudaMemcpyDeviceToHost));
	CHECK_MEM(chk, b->h, 3000);
	CHECK_MEM(b->h + len, b->h, 3000);
	CHECK_EQ(be64toh(*(uint64_t *)(void *)(b->h + 2 * len)), 500);
	CHECK_EQ(be64toh(*(uint64_t *)(void *)(b->h + 2 * len + 8)), 525);
	CHECK_EQ(*(uint64_t *)(void *)(chk + len), 9);
	CHECK_MEM(b->h + 3 * len, b->h + 100, 600);
	free(chk);
}

static inline void gdak_ops6_teardown(struct gdak_ops6 *b)
{
	CHECK_EQ(ibv_dereg_mr(b->gmr), 0);
	CHECK_EQ(ibv_dereg_mr(b->hmr), 0);
}

#endif /* GDAK_CUDA_OPS6_H */

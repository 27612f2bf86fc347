/* SPDX-License-Identifier: MIT */
/*
 * nic_gpu_pipe.c - the loop transport's GPU copies in flight (nm_loop.c):
 * plain RDMA_WRITEs touching GPU memory complete when their asynchronous
 * copy lands, up to NM_COPIES per QP, CQEs in WQE order; what must follow
 * the data waits for the queue to drain.  Verification goes through the NIC
 * (RDMA READ of the GPU target into host memory).
 *
 *   pipe     32 x 256 KiB WRITEs GPU -> GPU behind one doorbell, every
 *            4th signalled: CQEs in order, then every byte read back
 *   order    WRITE GPU -> GPU, then (no fence) a READ of the same range
 *            and a fetch-add: the READ sees the written bytes, the
 *            atomic's CQE comes after the WRITE's
 *   error    a WRITE with a bad rkey among pending GPU WRITEs: the ones
 *            before it complete, it fails with REMOTE_ACCESS_ERR, the rest
 *            are flushed
 *
 * Exits 77 when the NIC model has no GPU (gdak_mem_alloc(GDAK_MEM_GPU) is
 * refused): the host engine never takes this path.
 */
#include <errno.h>

#include "gdak_test.h"
#include "nic_util.h"

#define N 32
#define SZ (256u << 10)
#define TMO 20000

static struct gdak_ctx *ctx;
static uint8_t *g_src, *g_dst, *h;	/* GPU source, GPU target, host staging */
static struct gdak_mr *m_src, *m_dst, *m_h;

/* host -> GPU through the NIC (a host-source WRITE is synchronous) */
static void fill_gpu(struct nu_qp *a, uint8_t *g, struct gdak_mr *mg, size_t len, uint8_t seed)
{
	struct gdak_mlx5_cqe_fields f;

	for (size_t off = 0; off < len; off += SZ) {
		gdak_test_fill(h, SZ, (uint32_t)(seed + off / SZ));
		nu_post_rdma(a, MLX5_OPCODE_RDMA_WRITE, h, SZ, gdak_mr_lkey(m_h),
			     (uintptr_t)(g + off), gdak_mr_rkey(mg), 0, NU_SIG);
		nu_ring(a);
		REQUIRE_EQ(nu_poll(a, 0, &f, TMO), 0);
		REQUIRE_EQ(f.syndrome, 0);
	}
}

/* GPU [off, off+SZ) -> host h, by RDMA READ */
static void read_back(struct nu_qp *a, uint8_t *g, struct gdak_mr *mg, size_t off)
{
	struct gdak_mlx5_cqe_fields f;

	memset(h, 0, SZ);
	nu_post_rdma(a, MLX5_OPCODE_RDMA_READ, h, SZ, gdak_mr_lkey(m_h), (uintptr_t)(g + off),
		     gdak_mr_rkey(mg), 0, NU_SIG);
	nu_ring(a);
	REQUIRE_EQ(nu_poll(a, 0, &f, TMO), 0);
	REQUIRE_EQ(f.syndrome, 0);
}

static void pipe_case(void)
{
	struct gdak_qp_attr at = {.sq_depth = 64, .cq_depth = 64};
	struct gdak_mlx5_cqe_fields f;
	uint8_t *want = malloc(SZ);
	struct nu_qp a, b;
	uint16_t last[N / 4];

	REQUIRE(want != NULL);
	REQUIRE_EQ(nu_pair(ctx, &at, &a, &b), 0);
	fill_gpu(&a, g_src, m_src, (size_t)N * SZ, 5);
	for (unsigned i = 0; i < N; i++)
		if (i % 4 == 3)
			last[i / 4] = nu_post_rdma(&a, MLX5_OPCODE_RDMA_WRITE, g_src + (size_t)i * SZ,
						   SZ, gdak_mr_lkey(m_src),
						   (uintptr_t)(g_dst + (size_t)i * SZ),
						   gdak_mr_rkey(m_dst), 0, NU_SIG);
		else
			nu_post_rdma(&a, MLX5_OPCODE_RDMA_WRITE, g_src + (size_t)i * SZ, SZ,
				     gdak_mr_lkey(m_src), (uintptr_t)(g_dst + (size_t)i * SZ),
				     gdak_mr_rkey(m_dst), 0, 0);
	nu_ring(&a);
	for (unsigned k = 0; k < N / 4; k++) {
		REQUIRE_EQ(nu_poll(&a, 0, &f, TMO), 0);
		CHECK_EQ(f.syndrome, 0);
		CHECK_EQ(f.wqe_counter, last[k]);
	}
	for (unsigned i = 0; i < N; i++) {
		gdak_test_fill(want, SZ, 5 + i);
		read_back(&a, g_dst, m_dst, (size_t)i * SZ);
		CHECK_MEM(h, want, SZ);
	}
	CHECK_EQ(gdak_qp_state(a.qp), GDAK_QPS_RTS);
	nu_destroy(&a);
	nu_destroy(&b);
	free(want);
}

static void order_case(void)
{
	struct gdak_qp_attr at = {.sq_depth = 64, .cq_depth = 64};
	struct gdak_mlx5_cqe_fields f;
	uint8_t *want = malloc(SZ);
	uint64_t *word = (uint64_t *)(void *)(h + SZ);
	struct nu_qp a, b;
	uint16_t w, r, x;

	REQUIRE(want != NULL);
	REQUIRE_EQ(nu_pair(ctx, &at, &a, &b), 0);
	fill_gpu(&a, g_src, m_src, SZ, 9);
	memset(h, 0, SZ);
	w = nu_post_rdma(&a, MLX5_OPCODE_RDMA_WRITE, g_src, SZ, gdak_mr_lkey(m_src),
			 (uintptr_t)g_dst, gdak_mr_rkey(m_dst), 0, NU_SIG);
	r = nu_post_rdma(&a, MLX5_OPCODE_RDMA_READ, h, SZ, gdak_mr_lkey(m_h), (uintptr_t)g_dst,
			 gdak_mr_rkey(m_dst), 0, NU_SIG);
	x = nu_post_atomic(&a, MLX5_OPCODE_ATOMIC_FA, word, gdak_mr_lkey(m_h),
			   (uintptr_t)(g_dst + SZ), gdak_mr_rkey(m_dst), 1, 0, NU_SIG);
	nu_ring(&a);
	REQUIRE_EQ(nu_poll(&a, 0, &f, TMO), 0);
	CHECK_EQ(f.wqe_counter, w);
	CHECK_EQ(f.syndrome, 0);
	REQUIRE_EQ(nu_poll(&a, 0, &f, TMO), 0);
	CHECK_EQ(f.wqe_counter, r);
	CHECK_EQ(f.syndrome, 0);
	REQUIRE_EQ(nu_poll(&a, 0, &f, TMO), 0);
	CHECK_EQ(f.wqe_counter, x);
	CHECK_EQ(f.syndrome, 0);
	gdak_test_fill(want, SZ, 9);
	CHECK_MEM(h, want, SZ);	/* the READ ran after the WRITE's copy landed */
	nu_destroy(&a);
	nu_destroy(&b);
	free(want);
}

/* Write-after-write: N WRITEs of different data to ONE GPU range, one
 * doorbell.  The engine spreads copies in flight over several streams; the
 * requester must not let copies whose ranges meet be in flight together, so
 * the range ends up holding the LAST WQE's data (IBA: WQEs of a QP in order). */
static void waw_case(void)
{
	struct gdak_qp_attr at = {.sq_depth = 64, .cq_depth = 64};
	struct gdak_mlx5_cqe_fields f;
	uint8_t *want = malloc(SZ);
	struct nu_qp a, b;
	uint16_t last = 0;

	REQUIRE(want != NULL);
	REQUIRE_EQ(nu_pair(ctx, &at, &a, &b), 0);
	fill_gpu(&a, g_src, m_src, (size_t)N * SZ, 21);
	for (unsigned i = 0; i < N; i++)
		last = nu_post_rdma(&a, MLX5_OPCODE_RDMA_WRITE, g_src + (size_t)i * SZ, SZ,
				    gdak_mr_lkey(m_src), (uintptr_t)g_dst, gdak_mr_rkey(m_dst), 0,
				    i == N - 1 ? NU_SIG : 0);
	nu_ring(&a);
	REQUIRE_EQ(nu_poll(&a, 0, &f, TMO), 0);
	CHECK_EQ(f.syndrome, 0);
	CHECK_EQ(f.wqe_counter, last);
	gdak_test_fill(want, SZ, 21 + N - 1);
	read_back(&a, g_dst, m_dst, 0);
	CHECK_MEM(h, want, SZ);
	nu_destroy(&a);
	nu_destroy(&b);
	free(want);
}

static void error_case(void)
{
	struct gdak_qp_attr at = {.sq_depth = 64, .cq_depth = 64};
	struct gdak_mlx5_cqe_fields f;
	struct nu_qp a, b;
	uint16_t idx[6];

	REQUIRE_EQ(nu_pair(ctx, &at, &a, &b), 0);
	for (unsigned i = 0; i < 6; i++)
		idx[i] = nu_post_rdma(&a, MLX5_OPCODE_RDMA_WRITE, g_src + (size_t)i * SZ, SZ,
				      gdak_mr_lkey(m_src), (uintptr_t)(g_dst + (size_t)i * SZ),
				      gdak_mr_rkey(m_dst) ^ (i == 3 ? 0x7700u : 0), 0, NU_SIG);
	nu_ring(&a);
	for (unsigned i = 0; i < 6; i++) {
		REQUIRE_EQ(nu_poll(&a, 0, &f, TMO), 0);
		CHECK_EQ(f.wqe_counter, idx[i]);
		CHECK_EQ(f.syndrome, i < 3 ? 0 : i == 3 ? MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR
						     : MLX5_CQE_SYNDROME_WR_FLUSH_ERR);
	}
	CHECK_EQ(nu_wait_state(&a, GDAK_QPS_ERR, TMO), 0);
	nu_destroy(&a);
	nu_destroy(&b);
}

int main(void)
{
	int r;

	gdak_set_log_level(GDAK_LOG_ERROR);
	REQUIRE_EQ(gdak_open("emu", &ctx), 0);
	r = gdak_mem_alloc(ctx, (size_t)N * SZ, GDAK_MEM_GPU, (void **)&g_src);
	if (r) {
		fprintf(stderr, "no GPU memory in the NIC model (%s): skipped\n", gdak_strerror(r));
		gdak_close(ctx);
		return 77;
	}
	REQUIRE_EQ(gdak_mem_alloc(ctx, (size_t)N * SZ + 4096, GDAK_MEM_GPU, (void **)&g_dst), 0);
	REQUIRE_EQ(gdak_mem_alloc(ctx, 2 * SZ, GDAK_MEM_HOST, (void **)&h), 0);
	REQUIRE_EQ(gdak_mr_reg(ctx, g_src, (size_t)N * SZ, GDAK_ACCESS_ALL, &m_src), 0);
	REQUIRE_EQ(gdak_mr_reg(ctx, g_dst, (size_t)N * SZ + 4096, GDAK_ACCESS_ALL, &m_dst), 0);
	REQUIRE_EQ(gdak_mr_reg(ctx, h, 2 * SZ, GDAK_ACCESS_ALL, &m_h), 0);
	pipe_case();
	order_case();
	waw_case();
	error_case();
	gdak_mr_dereg(m_src);
	gdak_mr_dereg(m_dst);
	gdak_mr_dereg(m_h);
	gdak_mem_free(ctx, g_src);
	gdak_mem_free(ctx, g_dst);
	gdak_mem_free(ctx, h);
	gdak_close(ctx);
	return gdak_test_end();
}

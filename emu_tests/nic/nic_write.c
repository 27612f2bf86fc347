/* SPDX-License-Identifier: MIT */
/*
 * nic_write.c - RDMA_WRITE through the NIC model's loop transport: every
 * size from 0 to 1 MiB on powers of two plus odd sizes, inline writes,
 * selective signalling (one CQE per 16 WQEs), many ring wraps, each
 * doorbell handler; data checked byte for byte, CQE fields asserted.
 */
#include "gdak_test.h"
#include "nic_util.h"

#define BUF (1u << 20)

static struct gdak_ctx *ctx;
static uint8_t *src, *dst;
static struct gdak_mr *msrc, *mdst;

static void one_write(struct nu_qp *a, uint32_t len, uint32_t off, unsigned flags)
{
	struct gdak_mlx5_cqe_fields f;
	uint16_t idx;

	gdak_test_fill(src + off, len, len * 31u + off);
	memset(dst + off, 0, len);
	idx = nu_post_rdma(a, MLX5_OPCODE_RDMA_WRITE, src + off, len, gdak_mr_lkey(msrc),
			   (uintptr_t)(dst + off), gdak_mr_rkey(mdst), 0, NU_SIG | flags);
	nu_ring(a);
	REQUIRE_EQ(nu_poll(a, 0, &f, 5000), 0);
	CHECK_EQ(f.opcode, MLX5_CQE_REQ);
	CHECK_EQ(f.wqe_counter, idx);
	CHECK_EQ(f.qpn, a->qpn);
	CHECK_EQ(f.byte_cnt, len);
	CHECK_MEM(dst + off, src + off, len);
}

static void sizes(enum gdak_dev_db_handler h)
{
	struct gdak_qp_attr attr = {.sq_depth = 64, .handler = h};
	struct nu_qp a, b;

	REQUIRE_EQ(nu_pair(ctx, &attr, &a, &b), 0);
	one_write(&a, 0, 0, 0);
	for (uint32_t len = 1; len <= BUF; len <<= 1)
		one_write(&a, len, 0, 0);
	for (uint32_t len = 3; len < BUF; len = len * 3 + 1)
		one_write(&a, len, 7, 0);
	/* inline: up to what 63 DS hold (ctrl + raddr + 4-byte header) */
	for (uint32_t len = 1; len <= 972; len = len * 2 + 3)
		one_write(&a, len, 5, NU_INLINE);
	one_write(&a, 972, 0, NU_INLINE);
	nu_destroy(&a);
	nu_destroy(&b);
}

/* 16 WQEs per doorbell, only the last signalled; many wraps of a small ring. */
static void selective(void)
{
	struct gdak_qp_attr attr = {.sq_depth = 32};
	struct nu_qp a, b;
	struct gdak_nic_stats st;
	const unsigned rounds = 400, batch = 16;

	REQUIRE_EQ(nu_pair(ctx, &attr, &a, &b), 0);
	memset(dst, 0, 8 * batch);
	for (unsigned r = 0; r < rounds; r++) {
		struct gdak_mlx5_cqe_fields f;
		uint16_t last = 0;

		for (unsigned i = 0; i < batch; i++) {
			uint64_t v = (uint64_t)r << 32 | i;
			memcpy(src + 8 * i, &v, 8);
			last = nu_post_rdma(&a, MLX5_OPCODE_RDMA_WRITE, src + 8 * i, 8, gdak_mr_lkey(msrc),
					    (uintptr_t)(dst + 8 * i), gdak_mr_rkey(mdst), 0,
					    i == batch - 1 ? NU_SIG : 0);
		}
		nu_ring(&a);
		REQUIRE_EQ(nu_poll(&a, 0, &f, 5000), 0);
		CHECK_EQ(f.opcode, MLX5_CQE_REQ);
		CHECK_EQ(f.wqe_counter, last);
		CHECK_MEM(dst, src, 8 * batch);
		CHECK(!nu_cqe_ready(&a, 0)); /* exactly one CQE per batch */
	}
	REQUIRE_EQ(gdak_nic_qp_stats(a.qp, &st), 0);
	CHECK_EQ(st.wqes, rounds * batch);
	CHECK_EQ(st.cqes, rounds);
	CHECK_EQ(st.bytes, rounds * batch * 8);
	CHECK_EQ(st.errors, 0);
	CHECK_EQ(st.violations, 0);
	CHECK_EQ(gdak_qp_state(a.qp), GDAK_QPS_RTS);
	nu_destroy(&a);
	nu_destroy(&b);
}

int main(void)
{
	REQUIRE_EQ(gdak_open("emu", &ctx), 0);
	CHECK_STR(gdak_ctx_backend(ctx), "emu");
	REQUIRE_EQ(gdak_mem_alloc(ctx, BUF + 64, GDAK_MEM_HOST, (void **)&src), 0);
	REQUIRE_EQ(gdak_mem_alloc(ctx, BUF + 64, GDAK_MEM_HOST_MAPPED, (void **)&dst), 0);
	REQUIRE_EQ(gdak_mr_reg(ctx, src, BUF + 64, GDAK_ACCESS_LOCAL_WRITE, &msrc), 0);
	REQUIRE_EQ(gdak_mr_reg(ctx, dst, BUF + 64, GDAK_ACCESS_ALL, &mdst), 0);
	sizes(GDAK_DEV_DB_DB);
	sizes(GDAK_DEV_DB_BF);
	sizes(GDAK_DEV_DB_CPU_PROXY);
	selective();
	gdak_mr_dereg(msrc);
	gdak_mr_dereg(mdst);
	gdak_mem_free(ctx, src);
	gdak_mem_free(ctx, dst);
	gdak_close(ctx);
	return gdak_test_end();
}

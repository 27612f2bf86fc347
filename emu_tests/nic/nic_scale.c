/* SPDX-License-Identifier: MIT */
/*
 * nic_scale.c - 1024 QPs open on one NIC thread: the NIC model's own state
 * per QP stays under 64 KiB, the process RSS growth per QP is printed, and
 * a busy pair among 1022 idle QPs still completes its work (only active
 * QPs are polled; idle ones are swept a few per pass).
 */
#include <stdio.h>

#include "gdak_test.h"
#include "nic_util.h"

#define NQP 1024

int main(void)
{
	static struct nu_qp q[NQP];
	struct gdak_ctx *ctx;
	struct gdak_mr *mr;
	uint8_t *buf;
	long rss0, rss1;

	gdak_set_log_level(GDAK_LOG_ERROR);
	CHECK(gdak_nic_qp_state_bytes() < 64 * 1024);
	REQUIRE_EQ(gdak_nic_set_threads(1), 0);
	REQUIRE_EQ(gdak_open("emu", &ctx), 0);
	REQUIRE_EQ(gdak_mem_alloc(ctx, 1 << 16, GDAK_MEM_HOST, (void **)&buf), 0);
	REQUIRE_EQ(gdak_mr_reg(ctx, buf, 1 << 16, GDAK_ACCESS_ALL, &mr), 0);
	rss0 = gdak_test_rss_kib();
	for (int i = 0; i < NQP; i += 2) {
		struct gdak_qp_attr attr = {.sq_depth = 64, .cq_depth = 64};
		REQUIRE_EQ(nu_pair(ctx, &attr, &q[i], &q[i + 1]), 0);
	}
	rss1 = gdak_test_rss_kib();
	printf("NIC state per QP %llu bytes (beyond rings); RSS %ld -> %ld KiB with %d QPs "
	       "(sq 64, cq 64): %.1f KiB per QP incl. rings\n",
	       (unsigned long long)gdak_nic_qp_state_bytes(), rss0, rss1, NQP,
	       (double)(rss1 - rss0) / NQP);
	/* a busy pair at the end of the list */
	for (int r = 0; r < 200; r++) {
		struct gdak_mlx5_cqe_fields f;
		struct nu_qp *a = &q[NQP - 2];
		memset(buf, r, 64);
		for (int k = 0; k < 16; k++)
			nu_post_rdma(a, MLX5_OPCODE_RDMA_WRITE, buf, 64, gdak_mr_lkey(mr),
				     (uintptr_t)(buf + 4096 + 64 * k), gdak_mr_rkey(mr), 0,
				     k == 15 ? NU_SIG : 0);
		nu_ring(a);
		REQUIRE_EQ(nu_poll(a, 0, &f, 10000), 0);
		CHECK_EQ(f.opcode, MLX5_CQE_REQ);
		CHECK_MEM(buf + 4096 + 64 * 15, buf, 64);
	}
	/* and one of the first QPs, idle until now, is noticed */
	{
		struct gdak_mlx5_cqe_fields f;
		nu_post_nop(&q[0], NU_SIG);
		nu_ring(&q[0]);
		REQUIRE_EQ(nu_poll(&q[0], 0, &f, 10000), 0);
		CHECK_EQ(f.opcode, MLX5_CQE_REQ);
	}
	for (int i = 0; i < NQP; i++)
		nu_destroy(&q[i]);
	gdak_mr_dereg(mr);
	gdak_close(ctx);
	return gdak_test_end();
}

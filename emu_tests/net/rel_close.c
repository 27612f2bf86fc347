/* SPDX-License-Identifier: MIT */
/*
 * rel_close.c - gdak_close() with objects still alive (host API misuse that
 * gdak.h allows: the QPs "are left as they are" and a later destroy works).
 * What must hold: the live QP keeps working after the close, its destroy
 * returns 0, and once the last QP is gone nothing is leaked - the memcheck
 * twin fails on a definite leak.
 */
#include "rel_util.h"

int main(void)
{
	struct gdak_ctx *ctx;
	struct gdak_qp_attr at = {.sq_depth = 16};
	struct nu_qp a, b;
	struct gdak_mr *mr;
	struct gdak_mlx5_cqe_fields f;
	uint8_t *buf;

	if (!getenv("GDAK_LOG"))
		gdak_set_log_level(GDAK_LOG_ERROR);
	REQUIRE_EQ(gdak_open("emu", &ctx), 0);
	buf = aligned_alloc(4096, 8192);
	REQUIRE(buf);
	memset(buf, 0, 8192);
	REQUIRE_EQ(gdak_mr_reg(ctx, buf, 8192, GDAK_ACCESS_ALL, &mr), 0);
	REQUIRE_EQ(nu_pair(ctx, &at, &a, &b), 0);
	gdak_close(ctx); /* QPs and the MR still alive */
	memcpy(buf, "afterclose", 10);
	nu_post_rdma(&a, MLX5_OPCODE_RDMA_WRITE, buf, 10, gdak_mr_lkey(mr), (uintptr_t)(buf + 4096),
		     gdak_mr_rkey(mr), 0, NU_SIG);
	nu_ring(&a);
	REQUIRE_EQ(nu_poll(&a, 0, &f, 10000), 0);
	CHECK_EQ(f.opcode, MLX5_CQE_REQ);
	CHECK_MEM(buf + 4096, "afterclose", 10);
	CHECK_EQ(gdak_qp_destroy(a.qp), 0);
	CHECK_EQ(gdak_qp_destroy(b.qp), 0);
	CHECK_EQ(gdak_mr_dereg(mr), 0);
	free(buf);
	return gdak_test_end();
}

/* SPDX-License-Identifier: MIT */
/*
 * nic_stall.c - gdak.nic.stall: GDAK_FAULTS "stall:qp=N,ms=M" stops the
 * NIC's doorbell processing for one QP.  Device code that waits with a bound
 * sees -ETIMEDOUT (a diagnosis, not a silent hang), the QP stays healthy
 * (RTS, no error), another QP is served meanwhile, and once the stall ends
 * the held work completes exactly once with its data.
 */
#include <errno.h>

#include <gdak/gdak.h>
#include <gdak/nic.h>

#include "gdak_test.h"
#include "nic_util.h"

int main(void)
{
	struct gdak_qp_attr at = {.sq_depth = 16};
	struct gdak_mlx5_cqe_fields f;
	struct gdak_qp_error e;
	struct gdak_ctx *ctx;
	struct gdak_mr *mr;
	struct nu_qp a, b, c, d;
	uint8_t *buf;
	char spec[96];

	REQUIRE_EQ(gdak_open("emu", &ctx), 0);
	REQUIRE_EQ(gdak_mem_alloc(ctx, 16384, GDAK_MEM_HOST, (void **)&buf), 0);
	REQUIRE_EQ(gdak_mr_reg(ctx, buf, 16384, GDAK_ACCESS_ALL, &mr), 0);
	REQUIRE_EQ(nu_pair(ctx, &at, &a, &b), 0);
	REQUIRE_EQ(nu_pair(ctx, &at, &c, &d), 0);

	/* bad rules are refused with a message */
	CHECK_EQ(gdak_nic_set_faults("stall:qp=1"), -EINVAL);	   /* no duration */
	CHECK_EQ(gdak_nic_set_faults("stall:ms=10"), -EINVAL);	   /* no QP */
	CHECK_EQ(gdak_nic_set_faults("stall:qp=1,wqe=0,ms=5"), -EINVAL); /* not per WQE */

	snprintf(spec, sizeof(spec), "stall:qp=%u,ms=1500", a.qpn);
	REQUIRE_EQ(gdak_nic_set_faults(spec), 0);
	gdak_test_fill(buf, 256, 11);
	memset(buf + 8192, 0, 256);
	nu_post_rdma(&a, MLX5_OPCODE_RDMA_WRITE, buf, 256, gdak_mr_lkey(mr), (uintptr_t)(buf + 8192),
		     gdak_mr_rkey(mr), 0, NU_SIG);
	nu_ring(&a);
	/* the stalled QP: a bounded wait reports the lack of progress */
	CHECK_EQ(nu_poll(&a, 0, &f, 100), -ETIMEDOUT);
	CHECK_EQ(gdak_qp_state(a.qp), GDAK_QPS_RTS);
	REQUIRE_EQ(gdak_qp_query_error(a.qp, &e), 0);
	CHECK_EQ(e.syndrome, 0);
	/* another QP is served during the stall */
	memset(buf + 12288, 0, 64);
	nu_post_rdma(&c, MLX5_OPCODE_RDMA_WRITE, buf, 64, gdak_mr_lkey(mr), (uintptr_t)(buf + 12288),
		     gdak_mr_rkey(mr), 0, NU_SIG);
	nu_ring(&c);
	REQUIRE_EQ(nu_poll(&c, 0, &f, 10000), 0);
	CHECK_EQ(f.opcode, MLX5_CQE_REQ);
	CHECK_MEM(buf + 12288, buf, 64);
	/* the stall ends: the held WRITE completes once, data intact */
	REQUIRE_EQ(nu_poll(&a, 0, &f, 20000), 0);
	CHECK_EQ(f.opcode, MLX5_CQE_REQ);
	CHECK_EQ(f.wqe_counter, 0);
	CHECK_EQ(f.byte_cnt, 256);
	CHECK_MEM(buf + 8192, buf, 256);
	CHECK_EQ(nu_poll(&a, 0, &f, 50), -ETIMEDOUT); /* exactly one CQE */
	/* it fired once: new work on the same QP is not stalled again */
	nu_post_nop(&a, NU_SIG);
	nu_ring(&a);
	REQUIRE_EQ(nu_poll(&a, 0, &f, 10000), 0);
	CHECK_EQ(f.wqe_counter, 1);

	CHECK_EQ(gdak_nic_set_faults(""), 0);
	nu_destroy(&a);
	nu_destroy(&b);
	nu_destroy(&c);
	nu_destroy(&d);
	gdak_mr_dereg(mr);
	gdak_mem_free(ctx, buf);
	gdak_close(ctx);
	return gdak_test_end();
}

/* SPDX-License-Identifier: MIT */
/*
 * nic_errtext.c - the error record and fault-spec parsing:
 *  - gdak_qp_query_error after a wrong rkey: the exact rule and text
 *    (the rule in parentheses, closed);
 *  - a fault spec mixing the UDP transport's pkt_* packet faults with
 *    WQE-level rules is accepted and keeps the WQE-level rules (the pkt_*
 *    ones are the packet transport's business);
 *  - a deregistered rkey fails even right after it was used (the loop
 *    transport's key cache goes stale with the deregistration).
 */
#include <errno.h>

#include "gdak_case.h"
#include "gdak_test.h"
#include "nic_util.h"

static struct gdak_ctx *ctx;
static uint8_t *buf;
static struct gdak_mr *mr;

static void bad_rkey_text(void)
{
	struct gdak_qp_attr at = {.sq_depth = 16};
	struct gdak_mlx5_cqe_fields f;
	struct gdak_qp_error e;
	struct nu_qp a, b;
	uint16_t w;

	REQUIRE_EQ(nu_pair(ctx, &at, &a, &b), 0);
	w = nu_post_rdma(&a, MLX5_OPCODE_RDMA_WRITE, buf, 64, gdak_mr_lkey(mr),
			 (uintptr_t)(buf + 4096), gdak_mr_rkey(mr) ^ 0x5a00, 0, NU_SIG);
	nu_ring(&a);
	REQUIRE_EQ(nu_poll(&a, 0, &f, 10000), 0);
	CHECK_EQ(f.syndrome, MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR);
	REQUIRE_EQ(nu_wait_state(&a, GDAK_QPS_ERR, 10000), 0);
	memset(&e, 0, sizeof(e));
	REQUIRE_EQ(gdak_qp_query_error(a.qp, &e), 0);
	CHECK_EQ(e.syndrome, MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR);
	CHECK_EQ(e.wqe_index, w);
	CHECK(!strcmp(e.rule, "bad_rkey"));
	{
		char want[160];

		snprintf(want, sizeof(want), "WQE %u (RDMA_WRITE) completed with REMOTE_ACCESS_ERR "
			 "(rule bad_rkey)", (unsigned)w);
		if (strcmp(e.text, want))
			fprintf(stderr, "text: '%s'\nwant: '%s'\n", e.text, want);
		CHECK(!strcmp(e.text, want));
	}
	nu_destroy(&a);
	nu_destroy(&b);
}

static void mixed_faults(void)
{
	struct gdak_qp_attr at = {.sq_depth = 16};
	struct gdak_mlx5_cqe_fields f;
	struct nu_qp a, b;
	char spec[200];

	REQUIRE_EQ(nu_pair(ctx, &at, &a, &b), 0);
	snprintf(spec, sizeof(spec),
		 "pkt_drop:p=0.5;err:qp=%u,wqe=1,syndrome=REMOTE_OP;"
		 "pkt_dup:nth=2",
		 a.qpn);
	CHECK_EQ(gdak_nic_set_faults(spec), 0);
	/* a malformed WQE-level rule is still refused, and so is a malformed
	 * packet rule (one parser for every transport) */
	CHECK_EQ(gdak_nic_set_faults("err:qp=1,wqe=1"), -EINVAL);
	CHECK_EQ(gdak_nic_set_faults("pkt_dup:n=2"), -EINVAL);
	CHECK_EQ(gdak_nic_set_faults(spec), 0);
	nu_post_rdma(&a, MLX5_OPCODE_RDMA_WRITE, buf, 64, gdak_mr_lkey(mr),
		     (uintptr_t)(buf + 4096), gdak_mr_rkey(mr), 0, NU_SIG);
	nu_post_rdma(&a, MLX5_OPCODE_RDMA_WRITE, buf, 64, gdak_mr_lkey(mr),
		     (uintptr_t)(buf + 4096), gdak_mr_rkey(mr), 0, NU_SIG);
	nu_ring(&a);
	REQUIRE_EQ(nu_poll(&a, 0, &f, 10000), 0);
	CHECK_EQ(f.syndrome, 0);
	REQUIRE_EQ(nu_poll(&a, 0, &f, 10000), 0);
	CHECK_EQ(f.wqe_counter, 1);
	CHECK_EQ(f.syndrome, MLX5_CQE_SYNDROME_REMOTE_OP_ERR);
	CHECK_EQ(gdak_nic_set_faults(""), 0);
	nu_destroy(&a);
	nu_destroy(&b);
}

/* The loop transport's key caches: a key used a moment ago and then
 * deregistered must fail, not hit the cache (REMOTE_ACCESS_ERR, bad_rkey). */
static void stale_key(void)
{
	struct gdak_qp_attr at = {.sq_depth = 16};
	struct gdak_mlx5_cqe_fields f;
	struct gdak_qp_error e;
	struct gdak_mr *m2, *m3;
	struct nu_qp a, b;
	uint32_t old_rkey;

	REQUIRE_EQ(gdak_mr_reg(ctx, buf + 4096, 4096, GDAK_ACCESS_ALL, &m2), 0);
	old_rkey = gdak_mr_rkey(m2);
	REQUIRE_EQ(nu_pair(ctx, &at, &a, &b), 0);
	memset(buf, 0x3c, 64);
	memset(buf + 4096, 0, 64);
	nu_post_rdma(&a, MLX5_OPCODE_RDMA_WRITE, buf, 64, gdak_mr_lkey(mr), (uintptr_t)(buf + 4096),
		     old_rkey, 0, NU_SIG);
	nu_ring(&a);
	REQUIRE_EQ(nu_poll(&a, 0, &f, 10000), 0);
	CHECK_EQ(f.syndrome, 0);
	CHECK_EQ(buf[4096 + 63], 0x3c);
	REQUIRE_EQ(gdak_mr_dereg(m2), 0);
	/* the slot is reused at once, with another key variant */
	REQUIRE_EQ(gdak_mr_reg(ctx, buf + 4096, 4096, GDAK_ACCESS_ALL, &m3), 0);
	CHECK(gdak_mr_rkey(m3) != old_rkey);
	memset(buf, 0x5a, 64);
	nu_post_rdma(&a, MLX5_OPCODE_RDMA_WRITE, buf, 64, gdak_mr_lkey(mr), (uintptr_t)(buf + 4096),
		     old_rkey, 0, NU_SIG);
	nu_ring(&a);
	REQUIRE_EQ(nu_poll(&a, 0, &f, 10000), 0);
	CHECK_EQ(f.syndrome, MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR);
	CHECK_EQ(buf[4096 + 63], 0x3c);	/* nothing written */
	memset(&e, 0, sizeof(e));
	CHECK_EQ(gdak_qp_query_error(a.qp, &e), 0);
	CHECK(!strcmp(e.rule, "bad_rkey"));
	nu_destroy(&a);
	nu_destroy(&b);
	CHECK_EQ(gdak_mr_dereg(m3), 0);
}

static const struct gdak_case cases[] = { GDAK_CASE(bad_rkey_text), GDAK_CASE(mixed_faults),
					  GDAK_CASE(stale_key) };

int main(int argc, char **argv)
{
	gdak_set_log_level(GDAK_LOG_ERROR);
	REQUIRE_EQ(gdak_open("emu", &ctx), 0);
	REQUIRE_EQ(gdak_mem_alloc(ctx, 8192, GDAK_MEM_HOST, (void **)&buf), 0);
	REQUIRE_EQ(gdak_mr_reg(ctx, buf, 8192, GDAK_ACCESS_ALL, &mr), 0);
	GDAK_TEST_RUN_CASES(argc, argv, cases);
	CHECK_EQ(gdak_mr_dereg(mr), 0);
	CHECK_EQ(gdak_mem_free(ctx, buf), 0);
	gdak_close(ctx);
	return gdak_test_end();
}

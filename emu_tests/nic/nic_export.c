/* SPDX-License-Identifier: MIT */
/*
 * nic_export.c - what gdak_qp_export hands the device, used through the
 * device API itself (host threads play the device):
 *  - a registered scratch word (put+signal's discarded fetch) and
 *    wait_timeout_ns = 0: gdak_dev_put_signal works;
 *  - every doorbell handler, CPU_PROXY included (the device API writes the
 *    doorbell record AND *proxy_pi there): each WQE executes exactly once
 *    (the signal is an ATOMIC_FA: a second execution would show in its
 *    value) and no strict-mode violation is counted.
 */
#include <errno.h>

#include <gdak/dev/dev.h>

#include "gdak_test.h"
#include "nic_util.h"

#define LONG_NS 10000000000ull
#define ROUNDS 40

static void run(struct gdak_ctx *ctx, enum gdak_dev_db_handler h)
{
	struct gdak_qp_attr at = {.sq_depth = 64, .handler = h};
	struct gdak_nic_stats st;
	struct nu_qp a, b;
	struct gdak_dev_qp *d;
	struct gdak_mr *ml, *mr;
	uint8_t *src, *dst;
	uint64_t *sig, t = 0;
	struct gdak_dev_cqe err = {0};

	REQUIRE_EQ(gdak_mem_alloc(ctx, 8192, GDAK_MEM_HOST, (void **)&src), 0);
	REQUIRE_EQ(gdak_mem_alloc(ctx, 8192, GDAK_MEM_HOST, (void **)&dst), 0);
	REQUIRE_EQ(gdak_mr_reg(ctx, src, 8192, GDAK_ACCESS_ALL, &ml), 0);
	REQUIRE_EQ(gdak_mr_reg(ctx, dst, 8192, GDAK_ACCESS_ALL, &mr), 0);
	memset(dst, 0, 8192);
	sig = (uint64_t *)(void *)(dst + 4096);

	REQUIRE_EQ(nu_pair(ctx, &at, &a, &b), 0);
	d = a.d;
	CHECK(d->scratch_addr != 0);
	CHECK(d->scratch_lkey != 0);
	CHECK_EQ(d->wait_timeout_ns, 0);
	/* the scratch word is per QP */
	CHECK(d->scratch_addr != b.d->scratch_addr);
	CHECK(d->scratch_lkey != b.d->scratch_lkey);

	for (unsigned i = 0; i < ROUNDS; i++) {
		struct gdak_dev_sge s = {(uint64_t)(uintptr_t)(src + (i % 32) * 64), 64,
					 gdak_mr_lkey(ml)};

		memset(src + (i % 32) * 64, (int)(i + 1), 64);
		CHECK_EQ(gdak_dev_put_signal(d, &s, (uintptr_t)(dst + (i % 32) * 64),
					     gdak_mr_rkey(mr), (uintptr_t)sig, gdak_mr_rkey(mr), 3,
					     GDAK_DEV_WQE_SIGNAL, &t), 0);
		REQUIRE_EQ(gdak_dev_wait_timeout(d, t, LONG_NS, &err), 0);
		CHECK_EQ(*(volatile uint64_t *)sig, 3ull * (i + 1));
		CHECK_EQ(dst[(i % 32) * 64 + 63], (uint8_t)(i + 1));
	}
	CHECK_EQ(gdak_dev_quiet_timeout(d, LONG_NS, &err), 0);
	/* put+signal's fetch landed in the scratch word: the last old value,
	 * big-endian as the HCA writes atomic responses */
	CHECK_EQ(gdak_be64toh(*(volatile uint64_t *)(uintptr_t)d->scratch_addr),
		 3ull * (ROUNDS - 1));
	REQUIRE_EQ(gdak_nic_qp_stats(a.qp, &st), 0);
	CHECK_EQ(st.violations, 0);
	CHECK_EQ(st.errors, 0);
	CHECK_EQ(st.wqes, 2ull * ROUNDS);
	CHECK_EQ(gdak_qp_state(a.qp), GDAK_QPS_RTS);

	/* a batch of 4 one-WQEBB writes behind ONE doorbell: with the BF
	 * handler the device API rings it with the 8-byte form (as rdma-core
	 * does); the stale BlueFlame bytes must not be compared with any WQE */
	{
		uint64_t s0 = gdak_dev_sq_reserve(d, 4);

		for (unsigned k = 0; k < 4; k++) {
			struct gdak_dev_sge s = {(uint64_t)(uintptr_t)(src + 2048 + k * 64), 64,
						 gdak_mr_lkey(ml)};

			memset(src + 2048 + k * 64, 0xa0 + (int)k, 64);
			CHECK(gdak_dev_wqe_write(d, s0 + k, k == 3 ? GDAK_DEV_WQE_SIGNAL : 0,
						 (uintptr_t)(dst + 2048 + k * 64), gdak_mr_rkey(mr),
						 &s, 1) != 0);
		}
		gdak_dev_sq_submit(d, s0 + 3, s0 + 4);
		REQUIRE_EQ(gdak_dev_sq_wait_timeout(d, s0 + 4, LONG_NS, &err), 0);
		CHECK_MEM(dst + 2048, src + 2048, 256);
	}
	REQUIRE_EQ(gdak_nic_qp_stats(a.qp, &st), 0);
	CHECK_EQ(st.violations, 0);
	CHECK_EQ(st.wqes, 2ull * ROUNDS + 4);

	/* without a scratch word put_signal refuses instead of using address 0 */
	{
		uint64_t keep = d->scratch_addr;
		struct gdak_dev_sge s = {(uint64_t)(uintptr_t)src, 8, gdak_mr_lkey(ml)};

		d->scratch_addr = 0;
		CHECK_EQ(gdak_dev_put_signal(d, &s, (uintptr_t)dst, gdak_mr_rkey(mr),
					     (uintptr_t)sig, gdak_mr_rkey(mr), 1, 0, NULL), -EINVAL);
		d->scratch_addr = keep;
	}

	nu_destroy(&a);
	nu_destroy(&b);
	CHECK_EQ(gdak_mr_dereg(ml), 0);
	CHECK_EQ(gdak_mr_dereg(mr), 0);
	CHECK_EQ(gdak_mem_free(ctx, src), 0);
	CHECK_EQ(gdak_mem_free(ctx, dst), 0);
}

int main(void)
{
	struct gdak_ctx *ctx;

	REQUIRE_EQ(gdak_open("emu", &ctx), 0);
	run(ctx, GDAK_DEV_DB_DB);
	run(ctx, GDAK_DEV_DB_BF);
	run(ctx, GDAK_DEV_DB_CPU_PROXY);
	gdak_close(ctx);
	return gdak_test_end();
}

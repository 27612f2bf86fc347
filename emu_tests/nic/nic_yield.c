/* SPDX-License-Identifier: MIT */
/*
 * nic_yield.c - the NIC thread's hand-over after work (nm_thread.c), the
 * mechanism that keeps one-at-a-time operations fast when the device
 * thread shares the NIC thread's CPU (gdak-demo on two cores, traced):
 * in adaptive mode, after a pass that did work, the first empty pass gives
 * the CPU away (sched_yield) once - counted.  Every one of 50 WRITEs, each
 * waited for, is followed by such a hand-over; spin mode makes none.  The
 * test waits for the count, with a bound that only turns a missing
 * hand-over into a failure: no timing is measured.
 */
#include <unistd.h>

#include "gdak_test.h"
#include "nic_util.h"
#include "nm_thread_test.h"

#define N 50
#define BOUND_MS 10000

static int wait_count_above(uint64_t v)
{
	for (int i = 0; i < BOUND_MS; i++) {
		if (nm_thread_work_yields() > v)
			return 0;
		usleep(1000);
	}
	return -1;
}

static void rounds(struct nu_qp *a, uint8_t *src, uint8_t *dst, struct gdak_mr *m, int adaptive)
{
	for (unsigned i = 0; i < N; i++) {
		struct gdak_mlx5_cqe_fields f;
		uint64_t before;

		src[0] = (uint8_t)i;
		before = nm_thread_work_yields();
		nu_post_rdma(a, MLX5_OPCODE_RDMA_WRITE, src, 64, gdak_mr_lkey(m), (uintptr_t)dst,
			     gdak_mr_rkey(m), 0, NU_SIG);
		nu_ring(a);
		REQUIRE_EQ(nu_poll(a, 0, &f, BOUND_MS), 0);
		CHECK_EQ(f.opcode, MLX5_CQE_REQ);
		CHECK_EQ(dst[0], (uint8_t)i);
		if (adaptive)
			CHECK_EQ(wait_count_above(before), 0);
	}
}

int main(void)
{
	static uint8_t buf[8192] __attribute__((aligned(64)));
	struct gdak_ctx *ctx;
	struct gdak_mr *m;
	struct nu_qp a, b;
	uint64_t before;

	REQUIRE_EQ(gdak_nic_set_poll(GDAK_NIC_POLL_ADAPTIVE), 0);
	REQUIRE_EQ(gdak_open("emu", &ctx), 0);
	REQUIRE_EQ(gdak_mr_reg(ctx, buf, sizeof(buf), GDAK_ACCESS_ALL, &m), 0);
	REQUIRE_EQ(nu_pair(ctx, NULL, &a, &b), 0);
	rounds(&a, buf, buf + 4096, m, 1);

	/* spin mode keeps its CPU: no hand-over after work */
	REQUIRE_EQ(gdak_nic_set_poll(GDAK_NIC_POLL_SPIN), 0);
	before = nm_thread_work_yields();
	rounds(&a, buf, buf + 4096, m, 0);
	CHECK_EQ(nm_thread_work_yields(), before);
	REQUIRE_EQ(gdak_nic_set_poll(GDAK_NIC_POLL_ADAPTIVE), 0);

	nu_destroy(&a);
	nu_destroy(&b);
	gdak_mr_dereg(m);
	gdak_close(ctx);
	return gdak_test_end();
}

/* SPDX-License-Identifier: MIT */
/*
 * capture_bench.c - what the ring capture costs, on hand-built rings (256
 * WQEBBs, 256 CQEs, host memory): a pass that finds nothing; a pass per
 * batch of 64 one-WQEBB WQEs and their 64 CQEs; and the capture thread's CPU
 * time over one idle second (its back-off).  Prints numbers; asserts only
 * that everything was captured and nothing lost.
 */
#include <time.h>

#include <gdak/dev/types.h>
#include <gdak/mlx5.h>

#include "capture_util.h"
#include "gdak_test.h"

#define N 256u
#define BATCH 64u
#define ROUNDS 4000u

static uint8_t sq[N * 64] __attribute__((aligned(64)));
static uint8_t cqe[N * 64] __attribute__((aligned(64)));
static uint32_t dbrec[2], cq_db;

static uint64_t ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int main(void)
{
	struct gdak_dev_qp d = {0};
	struct gdak_capture *c;
	struct gdak_capture_stats st;
	char *path = cr_tmpname("bench");
	uint64_t pi = 0, n = 0, t0, t1, cpu0, cpu1;
	const unsigned idle_passes = 200000;

	REQUIRE(path);
	for (unsigned i = 0; i < N; i++)
		cqe[i * 64 + 63] = GDAK_MLX5_CQE_INVALID_OP_OWN;
	d.version = GDAK_DEV_ABI_VERSION;
	d.qpn = 0x42;
	d.sq_wqebb_cnt = N;
	d.sq_buf = sq;
	d.dbrec = dbrec;
	d.scq.version = GDAK_DEV_ABI_VERSION;
	d.scq.ncqe = N;
	d.scq.cqes = cqe;
	d.scq.dbrec = &cq_db;

	REQUIRE_EQ(gdak_capture_open(NULL, path, GDAK_CAPTURE_F_MANUAL, &c), 0);
	REQUIRE_EQ(gdak_capture_add_dev_qp(c, &d, 0), 0);
	t0 = ns(CLOCK_MONOTONIC);
	for (unsigned i = 0; i < idle_passes; i++)
		gdak_capture_poll(c);
	t1 = ns(CLOCK_MONOTONIC);
	printf("idle pass (1 QP, nothing new): %.1f ns\n", (double)(t1 - t0) / idle_passes);

	t0 = ns(CLOCK_MONOTONIC);
	for (unsigned r = 0; r < ROUNDS; r++) {
		for (unsigned k = 0; k < BATCH; k++, pi++, n++) {
			struct gdak_mlx5_ctrl ctl = {.opcode = MLX5_OPCODE_RDMA_WRITE,
						     .wqe_index = (uint16_t)pi, .qpn = 0x42, .ds = 3,
						     .fm_ce_se = MLX5_WQE_CTRL_CQ_UPDATE};
			uint8_t *w = sq + (pi & (N - 1)) * 64;
			struct mlx5_cqe64 *q = (struct mlx5_cqe64 *)(void *)(cqe + (n & (N - 1)) * 64);

			gdak_mlx5_ctrl_encode((struct mlx5_wqe_ctrl_seg *)(void *)w, &ctl);
			q->wqe_counter = gdak_htobe16((uint16_t)pi);
			__atomic_store_n(&q->op_own, gdak_mlx5_cqe_op_own(MLX5_CQE_REQ, n, N),
					 __ATOMIC_RELEASE);
		}
		__atomic_store_n(&dbrec[MLX5_SND_DBR], gdak_mlx5_sq_dbrec_value((uint32_t)pi),
				 __ATOMIC_RELEASE);
		__atomic_store_n(&cq_db, gdak_mlx5_cq_dbrec_value((uint32_t)n), __ATOMIC_RELEASE);
		gdak_capture_poll(c);
	}
	t1 = ns(CLOCK_MONOTONIC);
	REQUIRE_EQ(gdak_capture_get_stats(c, &st), 0);
	CHECK_EQ(st.wqes, (uint64_t)ROUNDS * BATCH);
	CHECK_EQ(st.cqes, (uint64_t)ROUNDS * BATCH);
	CHECK_EQ(st.lost_wqebbs + st.lost_cqes, 0);
	printf("busy passes (%u WQEs + %u CQEs each): %.1f ns per WQE+CQE pair, records "
	       "included (posting them included too)\n", BATCH, BATCH,
	       (double)(t1 - t0) / ((double)ROUNDS * BATCH));
	CHECK_EQ(gdak_capture_close(c), 0);

	/* the thread, idle: how often it wakes, what CPU it takes */
	REQUIRE_EQ(gdak_capture_open(NULL, path, 0, &c), 0);
	REQUIRE_EQ(gdak_capture_add_dev_qp(c, &d, 0), 0);
	cpu0 = ns(CLOCK_PROCESS_CPUTIME_ID);
	t0 = ns(CLOCK_MONOTONIC);
	{
		struct timespec one = {1, 0};
		nanosleep(&one, NULL);
	}
	t1 = ns(CLOCK_MONOTONIC);
	cpu1 = ns(CLOCK_PROCESS_CPUTIME_ID);
	REQUIRE_EQ(gdak_capture_get_stats(c, &st), 0);
	printf("idle thread: %" PRIu64 " passes in %.2f s, %.2f ms CPU (%.3f%% of a core)\n",
	       st.passes, (double)(t1 - t0) / 1e9, (double)(cpu1 - cpu0) / 1e6,
	       100.0 * (double)(cpu1 - cpu0) / (double)(t1 - t0));
	CHECK(st.passes > 0);
	CHECK_EQ(gdak_capture_close(c), 0);
	unlink(path);
	free(path);
	return gdak_test_end();
}

/* SPDX-License-Identifier: MIT */
/*
 * hw_emu_flags.c - hw_mlx5's DEVX QP/CQ context flags: a QP created with
 * GDAK_QP_F_SQ_NO_DBREC (PRM send_dbr_mode NO_DBR_EXT) rung through the
 * register alone, DOCA's GPU_SM_NO_DBR way, must execute with the record
 * left at 0; one with GDAK_QP_F_SCQ_COLLAPSED (cq context cc) gets every
 * send CQE in entry 0.  Run on the emulated mlx5 device under gdak-run
 * with GDAK_HW_QP_PATH=devx (hw_tests/hwemu_devx.cmake); on a ConnectX too.
 * The device is $GDAK_HW_DEVICE; exits 77 when it cannot be opened.
 */
#include <stdlib.h>

#include "fid_util.h"

static struct fid_env F;

static void case_no_dbrec(void)
{
	struct nu_qp a, b;

	fid_no_dbrec_pair(&F, 20, 60000, &a, &b);
	CHECK(a.d->scq.flags & GDAK_DEV_CQ_F_OVERRUN_IGNORE);
	CHECK_EQ(gdak_qp_state(a.qp), GDAK_QPS_RTS);
	nu_destroy(&a);
	nu_destroy(&b);
}

static void case_collapsed(void)
{
	struct gdak_qp_attr attr = { .sq_depth = 32,
				     .cq_depth = 32,
				     .flags = GDAK_QP_F_SCQ_COLLAPSED |
					      GDAK_QP_F_SCQ_OVERRUN_IGNORE };
	struct nu_qp a, b;

	memset(F.dst, 0, sizeof(F.dst));
	REQUIRE_EQ(nu_pair(F.ctx, &attr, &a, &b), 0);
	CHECK(a.d->scq.flags & GDAK_DEV_CQ_F_COLLAPSED);
	for (unsigned i = 0; i < 40; i++) {
		const uint8_t *c = (const uint8_t *)a.d->scq.cqes;

		fid_write(&a, F.src + i * 64, 64, gdak_mr_lkey(F.ms), (uintptr_t)(F.dst + i * 64),
			  gdak_mr_rkey(F.md), FID_CQ_UPDATE);
		fid_submit_rdmacore(&a);
		/* entry 0 holds the newest CQE: its wqe_counter reaches this WQE */
		while (fid_get_be16(c + 60) != (uint16_t)i ||
		       (gdak_dev_load_acquire_u8(c + 63) >> 4) == MLX5_CQE_INVALID)
			sched_yield();
		CHECK_EQ(gdak_dev_load_acquire_u8(c + 63) >> 4, MLX5_CQE_REQ);
	}
	CHECK_MEM(F.dst, F.src, 40 * 64);
	CHECK_EQ(gdak_qp_state(a.qp), GDAK_QPS_RTS);
	nu_destroy(&a);
	nu_destroy(&b);
}

int main(void)
{
	const char *dev = getenv("GDAK_HW_DEVICE");
	int ret = gdak_open(dev && *dev ? dev : "mlx5_0", &F.ctx);

	if (ret)
		GDAK_TEST_SKIP("cannot open %s: %s", dev && *dev ? dev : "mlx5_0",
			       gdak_strerror(ret));
	fid_env_reg(F.ctx, F.src, F.dst, sizeof(F.src), 9, &F.ms, &F.md);
	case_no_dbrec();
	case_collapsed();
	fid_env_close(F.ctx, F.ms, F.md);
	return gdak_test_end();
}

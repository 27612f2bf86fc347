/* SPDX-License-Identifier: MIT */
/*
 * fid_flags.c - a QP flag is never silently ignored: gdak_qp_create refuses
 * unknown flags (-EINVAL), receive-CQ flags on a QP without a receive queue
 * (-EINVAL), and GDAK_QP_F_QUEUES_GPU on the emulated NIC (-ENOTSUP: its
 * rings stay host memory mapped into the GPU), each with a log line naming
 * the flag; the flags the NIC model honours create a QP whose descriptor
 * says so.
 */
#include "fid_util.h"

static int create(struct gdak_ctx *ctx, unsigned flags, uint32_t rq, struct gdak_qp **qp)
{
	struct gdak_qp_attr a = { .sq_depth = 16, .rq_depth = rq, .flags = flags };

	return gdak_qp_create(ctx, &a, qp);
}

int main(void)
{
	struct gdak_ctx *ctx;
	struct gdak_qp *qp = (struct gdak_qp *)&ctx; /* must be cleared on failure */
	struct gdak_dev_qp *d;

	REQUIRE_EQ(gdak_open("emu", &ctx), 0);
	CHECK_EQ(create(ctx, 1u << 6, 0, &qp), -EINVAL);
	CHECK(qp == NULL);
	CHECK_EQ(create(ctx, 1u << 31, 0, &qp), -EINVAL);
	CHECK_EQ(create(ctx, GDAK_QP_F_QUEUES_GPU, 0, &qp), -ENOTSUP);
	CHECK(qp == NULL);
	CHECK_EQ(create(ctx, GDAK_QP_F_QUEUES_GPU | GDAK_QP_F_SCQ_COLLAPSED, 0, &qp), -ENOTSUP);
	CHECK_EQ(create(ctx, GDAK_QP_F_RCQ_OVERRUN_IGNORE, 0, &qp), -EINVAL);
	CHECK_EQ(create(ctx, GDAK_QP_F_RCQ_COLLAPSED, 0, &qp), -EINVAL);

	REQUIRE_EQ(create(ctx, GDAK_QP_F_ALL & ~GDAK_QP_F_QUEUES_GPU, 4, &qp), 0);
	REQUIRE_EQ(gdak_qp_export(qp, &d), 0);
	CHECK_EQ(d->scq.flags, GDAK_DEV_CQ_F_OVERRUN_IGNORE | GDAK_DEV_CQ_F_COLLAPSED);
	CHECK_EQ(d->rcq.flags, GDAK_DEV_CQ_F_OVERRUN_IGNORE | GDAK_DEV_CQ_F_COLLAPSED);
	CHECK_EQ(gdak_qp_destroy(qp), 0);
	REQUIRE_EQ(create(ctx, 0, 4, &qp), 0);
	REQUIRE_EQ(gdak_qp_export(qp, &d), 0);
	CHECK_EQ(d->scq.flags, 0);
	CHECK_EQ(d->rcq.flags, 0);
	CHECK_EQ(gdak_qp_destroy(qp), 0);
	gdak_close(ctx);
	return gdak_test_end();
}

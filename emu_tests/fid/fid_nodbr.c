/* SPDX-License-Identifier: MIT */
/*
 * fid_nodbr.c - doorbells without a doorbell record (GPUNetIO's
 * GPU_SM_NO_DBR, HCA cap send_dbr_mode_no_dbr_ext): a QP created with
 * GDAK_QP_F_SQ_NO_DBREC is rung through the register alone (next producer
 * index, DS 0) and the NIC executes up to that index, strict on, no
 * violation; the record stays 0.  Its negative twins:
 *   - the same register-only doorbell on a QP WITH a record: nothing runs
 *     (hardware reads the record) and strict mode reports
 *     ring_without_record once the QP has idled;
 *   - a register index more than the ring ahead of the consumer:
 *     producer_overrun, LOCAL_QP_OP_ERR, QP in ERR, posted WQEs flushed.
 */
#include "fid_util.h"
#include "gdak_case.h"

static struct fid_env F;

static void case_no_dbrec(void)
{
	struct nu_qp a, b;

	fid_no_dbrec_pair(&F, 40, 5000, &a, &b);
	CHECK(!FID_UNTIL(fid_violations(&a) != 0, 400)); /* past the idle check's settle time */
	CHECK_EQ(fid_violations(&a), 0);
	CHECK_EQ(gdak_qp_state(a.qp), GDAK_QPS_RTS);
	nu_destroy(&a);
	nu_destroy(&b);
}

static void case_ring_without_record(void)
{
	struct gdak_qp_attr attr = { .sq_depth = 32, .cq_depth = 32 };
	struct nu_qp a, b;
	struct gdak_nic_stats st;

	memset(F.dst, 0, sizeof(F.dst));
	REQUIRE_EQ(nu_pair(F.ctx, &attr, &a, &b), 0);
	fid_write(&a, F.src, 16, gdak_mr_lkey(F.ms), (uintptr_t)F.dst, gdak_mr_rkey(F.md),
		  FID_CQ_UPDATE);
	fid_ring(&a, a.pi);
	CHECK(FID_UNTIL(fid_violations(&a) == 1, 5000));
	{
		struct gdak_qp_error e;

		REQUIRE_EQ(gdak_qp_query_error(a.qp, &e), 0);
		CHECK_EQ(e.state, GDAK_QPS_RTS);
		CHECK_STR(e.last_rule, "ring_without_record");
		CHECK_EQ(e.violations, 1);
	}
	REQUIRE_EQ(gdak_nic_qp_stats(a.qp, &st), 0);
	CHECK_EQ(st.wqes, 0);
	CHECK(!nu_cqe_ready(&a, 0));
	CHECK_EQ(F.dst[0], 0);
	/* the record catches up: the WQE runs, no more violations */
	fid_dbrec(&a, a.pi);
	REQUIRE(fid_cqe_at(&a.d->scq, 0, 5000) != NULL);
	CHECK_MEM(F.dst, F.src, 16);
	CHECK_EQ(fid_violations(&a), 1);
	nu_destroy(&a);
	nu_destroy(&b);
}

static void case_register_overrun(void)
{
	struct gdak_qp_attr attr = { .sq_depth = 32,
				     .cq_depth = 32,
				     .flags = GDAK_QP_F_SQ_NO_DBREC };
	struct nu_qp a, b;

	REQUIRE_EQ(nu_pair(F.ctx, &attr, &a, &b), 0);
	fid_write(&a, F.src, 16, gdak_mr_lkey(F.ms), (uintptr_t)F.dst, gdak_mr_rkey(F.md),
		  FID_CQ_UPDATE);
	fid_ring(&a, 40); /* 40 WQEBBs announced on a ring of 32 */
	FID_EXPECT_ERROR(&a, "producer_overrun", MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR);
	CHECK(fid_violations(&a) >= 1);
	nu_destroy(&a);
	nu_destroy(&b);
}

static const struct gdak_case cases[] = { GDAK_CASE(case_no_dbrec),
					  GDAK_CASE(case_ring_without_record),
					  GDAK_CASE(case_register_overrun) };

int main(int argc, char **argv)
{
	fid_env_open(&F.ctx, F.src, F.dst, sizeof(F.src), 9, &F.ms, &F.md);
	GDAK_TEST_RUN_CASES(argc, argv, cases);
	fid_env_close(F.ctx, F.ms, F.md);
	return gdak_test_end();
}

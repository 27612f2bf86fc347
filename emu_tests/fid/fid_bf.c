/* SPDX-License-Identifier: MIT */
/*
 * fid_bf.c - the BlueFlame register's two halves (UAR + 0x800 and + 0x900,
 * gdak_dev_qp.bf_log_half): gdak's device API alternates between them after
 * every register write, as rdma-core does (bf->offset ^= bf->buf_size), and
 * the NIC model follows the newest write in either half - BlueFlame copies
 * verified against the ring, batches rung with the 8-byte form, no
 * violation.  A device that writes its BlueFlame copies to the same half
 * twice in a row runs (ConnectX executes it) but is flagged: the
 * bf_not_alternated warning, counted, the QP stays in RTS.
 */
#include "fid_util.h"

#include <gdak/dev/db.h>
#include <gdak/dev/rma.h>

static struct fid_env F;

static void case_alternating(void)
{
	struct gdak_qp_attr attr = { .sq_depth = 16,
				     .cq_depth = 16,
				     .handler = GDAK_DEV_DB_BF,
				     .flags = GDAK_QP_F_SCQ_OVERRUN_IGNORE };
	struct nu_qp a, b;
	const uint8_t *h0, *h1;
	uint64_t ncqe = 0;

	memset(F.dst, 0, sizeof(F.dst));
	REQUIRE_EQ(nu_pair(F.ctx, &attr, &a, &b), 0);
	REQUIRE_EQ(a.d->bf_log_half, 8);
	h0 = (const uint8_t *)a.d->db_reg;
	h1 = h0 + 256;
	for (unsigned i = 0; i < 40; i++) {
		struct gdak_dev_sge s = { (uintptr_t)(F.src + 64 * i), 64, gdak_mr_lkey(F.ms) };
		unsigned n = i % 3 == 2 ? 3 : 1; /* every third doorbell a batch */
		uint64_t first = a.d->sq_resv, idx = first;
		unsigned half = a.d->bf_half;

		for (unsigned k = 0; k < n; k++) {
			idx = gdak_dev_sq_reserve(a.d, 1);
			gdak_dev_wqe_write(a.d, idx, GDAK_DEV_WQE_SIGNAL,
					   (uintptr_t)(F.dst + 64 * i), gdak_mr_rkey(F.md), &s, 1);
		}
		gdak_dev_sq_submit(a.d, idx, idx + 1);
		CHECK_EQ(a.d->bf_half, half ^ 1);
		if (n == 1)
			CHECK_MEM(half ? h1 : h0, gdak_dev_wqe_ptr(a.d, idx), 64);
		else
			CHECK_MEM(half ? h1 : h0, gdak_dev_wqe_ptr(a.d, idx), 8);
		for (uint64_t w = first; w <= idx; w++, ncqe++)
			REQUIRE(fid_cqe_at(&a.d->scq, ncqe, 5000) != NULL);
		a.d->sq_done = idx + 1;
	}
	/* through a local copy of the descriptor (gdak_dev_qp_load / _store):
	 * the half to use next travels back with the indices */
	{
		struct gdak_dev_qp l;
		unsigned half = a.d->bf_half;

		gdak_dev_qp_load(&l, a.d);
		for (unsigned i = 40; i < 43; i++) {
			struct gdak_dev_sge s = { (uintptr_t)(F.src + 64 * i), 64,
						  gdak_mr_lkey(F.ms) };
			uint64_t idx = gdak_dev_sq_reserve(&l, 1);

			gdak_dev_wqe_write(&l, idx, GDAK_DEV_WQE_SIGNAL,
					   (uintptr_t)(F.dst + 64 * i), gdak_mr_rkey(F.md), &s, 1);
			gdak_dev_sq_submit(&l, idx, idx + 1);
			REQUIRE(fid_cqe_at(&a.d->scq, ncqe++, 5000) != NULL);
			l.sq_done = idx + 1;
		}
		gdak_dev_qp_store(a.d, &l);
		CHECK_EQ(a.d->bf_half, half ^ 1);
		{
			struct gdak_dev_sge s = { (uintptr_t)(F.src + 64 * 43), 64,
						  gdak_mr_lkey(F.ms) };
			uint64_t idx = gdak_dev_sq_reserve(a.d, 1);

			gdak_dev_wqe_write(a.d, idx, GDAK_DEV_WQE_SIGNAL,
					   (uintptr_t)(F.dst + 64 * 43), gdak_mr_rkey(F.md), &s, 1);
			gdak_dev_sq_submit(a.d, idx, idx + 1);
			REQUIRE(fid_cqe_at(&a.d->scq, ncqe++, 5000) != NULL);
		}
	}
	for (unsigned i = 0; i < 44; i++)
		CHECK_MEM(F.dst + 64 * i, F.src + 64 * i, 64);
	CHECK_EQ(fid_violations(&a), 0);
	CHECK_EQ(gdak_qp_state(a.qp), GDAK_QPS_RTS);
	nu_destroy(&a);
	nu_destroy(&b);
}

/* every BlueFlame copy to UAR + 0x800: executed, flagged */
static void case_same_half(void)
{
	struct gdak_qp_attr attr = { .sq_depth = 16, .cq_depth = 16, .handler = GDAK_DEV_DB_BF };
	struct nu_qp a, b;

	memset(F.dst, 0, sizeof(F.dst));
	REQUIRE_EQ(nu_pair(F.ctx, &attr, &a, &b), 0);
	for (unsigned i = 0; i < 3; i++) {
		uint64_t idx = fid_write(&a, F.src + 64 * i, 64, gdak_mr_lkey(F.ms),
					 (uintptr_t)(F.dst + 64 * i), gdak_mr_rkey(F.md),
					 FID_CQ_UPDATE);
		const uint64_t *w = gdak_dev_wqe_ptr(a.d, idx);

		fid_dbrec(&a, a.pi);
		for (int k = 7; k >= 0; k--)
			gdak_dev_mmio_store_u64(a.d->db_reg + k, w[k]);
		REQUIRE(fid_cqe_at(&a.d->scq, i, 5000) != NULL);
		fid_cq_consumed(&a.d->scq, i + 1);
	}
	CHECK_MEM(F.dst, F.src, 3 * 64);
	CHECK_EQ(fid_violations(&a), 2); /* the second and the third */
	CHECK_EQ(gdak_qp_state(a.qp), GDAK_QPS_RTS);
	{
		struct gdak_qp_error e;

		/* the warning shows in gdak_qp_query_error, the QP runs on */
		REQUIRE_EQ(gdak_qp_query_error(a.qp, &e), 0);
		CHECK_EQ(e.state, GDAK_QPS_RTS);
		CHECK_STR(e.rule, "");
		CHECK_STR(e.last_rule, "bf_not_alternated");
		CHECK(strstr(e.last_text, "WQE 2") != NULL);
		CHECK_EQ(e.violations, 2);
	}
	nu_destroy(&a);
	nu_destroy(&b);
}

int main(void)
{
	fid_env_open(&F.ctx, F.src, F.dst, sizeof(F.src), 77, &F.ms, &F.md);
	case_alternating();
	case_same_half();
	fid_env_close(F.ctx, F.ms, F.md);
	return gdak_test_end();
}

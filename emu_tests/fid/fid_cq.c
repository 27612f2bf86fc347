/* SPDX-License-Identifier: MIT */
/*
 * fid_cq.c - CQ attributes as GPUNetIO and NVSHMEM create their CQs:
 *   overrun-ignore (PRM `oi`): the consumer never writes the CQ doorbell
 *     record; five rings' worth of CQEs must all arrive, strict on, no
 *     violation, the QP stays in RTS.  The same traffic on a CQ created
 *     without it: cq_overrun, QP in ERR (what ConnectX does).
 *   collapsed (PRM `cc`): every CQE at entry 0; NVSHMEM's ibgda_poll_cq
 *     watches its wqe_counter, GPUNetIO's write_lat its owner bit - both
 *     must see what hardware writes (owner = CQE count / ncqe parity).
 *   receive CQ with overrun-ignore: SENDs into an RQ whose CQ record stays 0.
 */
#include "fid_util.h"
#include "gdak_case.h"

#define CQ 16

static struct fid_env F;

static void post_batch(struct nu_qp *a, unsigned n, uint64_t base)
{
	for (unsigned i = 0; i < n; i++) {
		uint64_t off = (base + i) * 8 % sizeof(F.dst);

		fid_write(a, F.src + off, 8, gdak_mr_lkey(F.ms), (uintptr_t)(F.dst + off),
			  gdak_mr_rkey(F.md), FID_CQ_UPDATE);
	}
	fid_submit_doca(a);
}

static void case_overrun_ignore(void)
{
	struct gdak_qp_attr attr = { .sq_depth = CQ,
				     .cq_depth = CQ,
				     .flags = GDAK_QP_F_SCQ_OVERRUN_IGNORE };
	struct nu_qp a, b;
	uint64_t n = 0;

	REQUIRE_EQ(nu_pair(F.ctx, &attr, &a, &b), 0);
	CHECK_EQ(a.d->scq.flags, GDAK_DEV_CQ_F_OVERRUN_IGNORE);
	memset(F.dst, 0, sizeof(F.dst));
	for (int r = 0; r < 5 * CQ / 4; r++) {
		post_batch(&a, 4, n);
		/* wait for the batch's last CQE (as DOCA's poll_cq_at); the
		 * record is never written */
		for (unsigned i = 0; i < 4; i++, n++) {
			const uint8_t *c = fid_cqe_at(&a.d->scq, n, 5000);

			REQUIRE(c != NULL);
			CHECK_EQ(c[63] >> 4, MLX5_CQE_REQ);
			CHECK_EQ(fid_get_be16(c + 60), (uint16_t)n);
		}
	}
	CHECK_EQ(*a.d->scq.dbrec, 0);
	CHECK_MEM(F.dst, F.src, n * 8);
	CHECK_EQ(gdak_qp_state(a.qp), GDAK_QPS_RTS);
	CHECK_EQ(fid_violations(&a), 0);
	nu_destroy(&a);
	nu_destroy(&b);
}

/* the negative twin: the same consumer on a CQ without overrun-ignore */
static void case_overrun_checked(void)
{
	struct gdak_qp_attr attr = { .sq_depth = CQ, .cq_depth = CQ };
	struct nu_qp a, b;
	uint64_t n = 0;

	REQUIRE_EQ(nu_pair(F.ctx, &attr, &a, &b), 0);
	for (int r = 0; r < CQ / 4; r++) {
		post_batch(&a, 4, n);
		for (unsigned i = 0; i < 4; i++, n++)
			REQUIRE(fid_cqe_at(&a.d->scq, n, 5000) != NULL);
	}
	/* the ring is full of unconsumed CQEs: the next one overruns */
	post_batch(&a, 1, n);
	FID_EXPECT_ERROR(&a, "cq_overrun", 0);
	CHECK(fid_violations(&a) >= 1);
	nu_destroy(&a);
	nu_destroy(&b);
}

/* the last 8 bytes of a collapsed CQ's entry 0, one acquire load */
struct cc_tail {
	uint32_t sop_drop_qpn;
	uint16_t wqe_counter;
	uint8_t signature;
	uint8_t op_own;
};

static struct cc_tail cc_tail(const uint8_t *c0)
{
	uint64_t v = gdak_dev_load_acquire_u64((const uint64_t *)(const void *)(c0 + 56));
	struct cc_tail t;

	memcpy(&t, &v, sizeof(t));
	return t;
}

static void case_collapsed(void)
{
	struct gdak_qp_attr attr = { .sq_depth = CQ,
				     .cq_depth = CQ,
				     .flags = GDAK_QP_F_SCQ_COLLAPSED };
	struct nu_qp a, b;
	const uint8_t *c0;
	struct cc_tail tail = { 0 };
	uint64_t n = 0;

	REQUIRE_EQ(nu_pair(F.ctx, &attr, &a, &b), 0);
	CHECK_EQ(a.d->scq.flags, GDAK_DEV_CQ_F_COLLAPSED);
	c0 = (const uint8_t *)a.d->scq.cqes;
	for (int r = 0; r < 3 * CQ; r++, n++) {
		uint64_t want = n;

		post_batch(&a, 1, n);
		/* NVSHMEM: wait until entry 0's wqe_counter names our WQE.  The
		 * HCA writes the 64 bytes at once; the NIC model stores the last
		 * 8 (QPN, wqe_counter, signature, op_own) as one word, so they
		 * are read as one word here */
		CHECK(FID_UNTIL(
			(tail = cc_tail(c0), gdak_be16toh(tail.wqe_counter) == (uint16_t)want &&
						     (tail.op_own >> 4) == MLX5_CQE_REQ),
			5000));
		/* GPUNetIO write_lat: the owner bit of CQE n, in entry 0 */
		CHECK_EQ(tail.op_own & 1, (n / CQ) & 1);
		/* nothing lands anywhere else */
		for (unsigned e = 1; e < CQ; e++)
			CHECK_EQ(((const uint8_t *)a.d->scq.cqes)[64 * e + 63],
				 GDAK_MLX5_CQE_INVALID_OP_OWN);
	}
	CHECK_MEM(F.dst, F.src, n * 8);
	CHECK_EQ(*a.d->scq.dbrec, 0);
	CHECK_EQ(gdak_qp_state(a.qp), GDAK_QPS_RTS);
	CHECK_EQ(fid_violations(&a), 0);
	nu_destroy(&a);
	nu_destroy(&b);
}

/* receive CQ with overrun-ignore: SENDs, the receive CQ record never moves */
static void case_recv_oi(void)
{
	struct gdak_qp_attr attr = { .sq_depth = 16,
				     .cq_depth = 16,
				     .rq_depth = 8,
				     .rcq_depth = 4,
				     .flags = GDAK_QP_F_SCQ_OVERRUN_IGNORE |
					      GDAK_QP_F_RCQ_OVERRUN_IGNORE };
	struct nu_qp a, b;

	REQUIRE_EQ(nu_pair(F.ctx, &attr, &a, &b), 0);
	for (uint64_t i = 0; i < 12; i++) {
		uint8_t w[64];
		const uint8_t *c;

		nu_post_recv(&b, F.dst + 64 * (i % 8), 64, gdak_mr_lkey(F.md));
		fid_ctrl(w, 0, (uint16_t)a.pi, MLX5_OPCODE_SEND, a.qpn, 2, FID_CQ_UPDATE, 0);
		fid_data(w + 16, 64, gdak_mr_lkey(F.ms), F.src + 64 * i);
		fid_put(&a, w, 2);
		fid_submit_nvshmem(&a);
		REQUIRE(fid_cqe_at(&a.d->scq, i, 5000) != NULL);
		c = fid_cqe_at(&b.d->rcq, i, 5000);
		REQUIRE(c != NULL);
		CHECK_EQ(c[63] >> 4, MLX5_CQE_RESP_SEND);
		CHECK_EQ(fid_get_be32(c + 44), 64);
		CHECK_MEM(F.dst + 64 * (i % 8), F.src + 64 * i, 64);
	}
	CHECK_EQ(*b.d->rcq.dbrec, 0);
	CHECK_EQ(gdak_qp_state(b.qp), GDAK_QPS_RTS);
	CHECK_EQ(fid_violations(&a) + fid_violations(&b), 0);
	nu_destroy(&a);
	nu_destroy(&b);
}

static const struct gdak_case cases[] = { GDAK_CASE(case_overrun_ignore),
					  GDAK_CASE(case_overrun_checked),
					  GDAK_CASE(case_collapsed), GDAK_CASE(case_recv_oi) };

int main(int argc, char **argv)
{
	fid_env_open(&F.ctx, F.src, F.dst, sizeof(F.src), 5, &F.ms, &F.md);
	GDAK_TEST_RUN_CASES(argc, argv, cases);
	fid_env_close(F.ctx, F.ms, F.md);
	return gdak_test_end();
}

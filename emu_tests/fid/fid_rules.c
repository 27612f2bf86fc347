/* SPDX-License-Identifier: MIT */
/*
 * fid_rules.c - the checker rules no other test provoked, each on purpose:
 * the error CQE (opcode, syndrome, WQE index), the QP in ERR, the rule
 * gdak_qp_query_error() names, and the violation counter for the strict
 * rules:
 *   inline_not_allowed  inline data on RDMA_READ          LOCAL_QP_OP_ERR
 *   atomic_length       ATOMIC_FA with a 4-byte local seg  LOCAL_LENGTH_ERR
 *   wqe_past_producer   a 2-WQEBB WQE, rung for one        LOCAL_QP_OP_ERR
 *   length              two segments of 1.25 GiB           LOCAL_LENGTH_ERR
 *   no_rq               SEND to a QP without an RQ         REMOTE_INVAL_REQ_ERR
 *   rq_overrun          receive record a ring ahead        REMOTE_OP_ERR, and
 *                                                          LOCAL_QP_OP_ERR on
 *                                                          the responder
 * (ring_without_record: gdak.fid.nodbr; bad_opcode, bad_ds, the key and
 * bounds rules: gdak.nic.checks.)
 */
#include "fid_util.h"
#include "gdak_case.h"

static struct gdak_ctx *ctx;
static uint8_t buf[4096] __attribute__((aligned(8)));
static struct gdak_mr *mb;

static void pair(struct nu_qp *a, struct nu_qp *b, uint32_t rq)
{
	struct gdak_qp_attr attr = { .sq_depth = 16, .cq_depth = 16, .rq_depth = rq };

	REQUIRE_EQ(nu_pair(ctx, &attr, a, b), 0);
}

static void expect(struct nu_qp *a, uint64_t idx, uint8_t opcode, uint8_t synd, const char *rule,
		   int violation, int line)
{
	const uint8_t *c = fid_cqe_at(&a->d->scq, 0, 5000);

	if (!c) {
		gdak_test_fail(__FILE__, line, "%s: no CQE", rule);
		return;
	}
	if ((c[63] >> 4) != MLX5_CQE_REQ_ERR || c[55] != synd || c[56] != opcode ||
	    fid_get_be16(c + 60) != (uint16_t)idx)
		gdak_test_fail(__FILE__, line, "%s: CQE op 0x%x syndrome 0x%x wqe op 0x%x index %u",
			       rule, c[63] >> 4, c[55], c[56], fid_get_be16(c + 60));
	else
		gdak_test_passed++;
	fid_expect_error(a, rule, synd, line);
	if (violation && fid_violations(a) < 1)
		gdak_test_fail(__FILE__, line, "%s: no violation counted", rule);
}
#define EXPECT(a, i, op, s, r, v) expect(a, i, op, s, r, v, __LINE__)

static void case_inline_not_allowed(void)
{
	struct nu_qp a, b;
	uint8_t w[64];
	uint64_t i;

	pair(&a, &b, 0);
	fid_ctrl(w, 0, 0, MLX5_OPCODE_RDMA_READ, a.qpn, 3, FID_CQ_UPDATE, 0);
	fid_raddr(w + 16, (uintptr_t)buf, gdak_mr_rkey(mb));
	fid_be32(w + 32, MLX5_INLINE_SEG | 8);
	memset(w + 36, 0x5a, 12);
	i = fid_put(&a, w, 3);
	fid_submit_doca(&a);
	EXPECT(&a, i, MLX5_OPCODE_RDMA_READ, MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR,
	       "inline_not_allowed", 1);
	nu_destroy(&a);
	nu_destroy(&b);
}

static void case_atomic_length(void)
{
	struct nu_qp a, b;
	uint8_t w[64];
	uint64_t i;

	pair(&a, &b, 0);
	fid_ctrl(w, 0, 0, MLX5_OPCODE_ATOMIC_FA, a.qpn, 4, FID_CQ_UPDATE, 0);
	fid_raddr(w + 16, (uintptr_t)buf, gdak_mr_rkey(mb));
	fid_be64(w + 32, 1);
	fid_be64(w + 40, 0);
	fid_data(w + 48, 4, gdak_mr_lkey(mb), buf + 64);
	i = fid_put(&a, w, 4);
	fid_submit_nvshmem(&a);
	EXPECT(&a, i, MLX5_OPCODE_ATOMIC_FA, MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR, "atomic_length",
	       1);
	nu_destroy(&a);
	nu_destroy(&b);
}

static void case_wqe_past_producer(void)
{
	struct nu_qp a, b;
	uint8_t w[128];
	uint64_t i;

	pair(&a, &b, 0);
	/* RDMA_WRITE with 6 data segments: DS 8, two WQEBBs */
	fid_ctrl(w, 0, 0, MLX5_OPCODE_RDMA_WRITE, a.qpn, 8, FID_CQ_UPDATE, 0);
	fid_raddr(w + 16, (uintptr_t)buf, gdak_mr_rkey(mb));
	for (int k = 0; k < 6; k++)
		fid_data(w + 32 + 16 * k, 8, gdak_mr_lkey(mb), buf + 8 * k);
	i = fid_put(&a, w, 8);
	/* ... but the doorbell announces one WQEBB */
	fid_dbrec(&a, 1);
	fid_ring(&a, 1);
	EXPECT(&a, i, MLX5_OPCODE_RDMA_WRITE, MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR,
	       "wqe_past_producer", 1);
	nu_destroy(&a);
	nu_destroy(&b);
}

static void case_length(void)
{
	struct nu_qp a, b;
	uint8_t w[64];
	uint64_t i;

	pair(&a, &b, 0);
	fid_ctrl(w, 0, 0, MLX5_OPCODE_RDMA_WRITE, a.qpn, 4, FID_CQ_UPDATE, 0);
	fid_raddr(w + 16, (uintptr_t)buf, gdak_mr_rkey(mb));
	fid_data(w + 32, 0x50000000u, gdak_mr_lkey(mb), buf);
	fid_data(w + 48, 0x50000000u, gdak_mr_lkey(mb), buf);
	i = fid_put(&a, w, 4);
	fid_submit_doca(&a);
	EXPECT(&a, i, MLX5_OPCODE_RDMA_WRITE, MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR, "length", 1);
	nu_destroy(&a);
	nu_destroy(&b);
}

static uint64_t post_send(struct nu_qp *a)
{
	uint8_t w[64];

	fid_ctrl(w, 0, (uint16_t)a->pi, MLX5_OPCODE_SEND, a->qpn, 2, FID_CQ_UPDATE, 0);
	fid_data(w + 16, 16, gdak_mr_lkey(mb), buf);
	return fid_put(a, w, 2);
}

static void case_no_rq(void)
{
	struct nu_qp a, b;
	uint64_t i;

	pair(&a, &b, 0);
	i = post_send(&a);
	fid_submit_doca(&a);
	EXPECT(&a, i, MLX5_OPCODE_SEND, MLX5_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR, "no_rq", 0);
	nu_destroy(&a);
	nu_destroy(&b);
}

static void case_rq_overrun(void)
{
	struct nu_qp a, b;
	struct gdak_qp_error e;
	uint64_t i;
	uint8_t rec[4];
	uint32_t v;

	pair(&a, &b, 4);
	/* the responder's receive record claims 9 WQEs on a ring of 4 */
	fid_be32(rec, 9);
	memcpy(&v, rec, 4);
	gdak_dev_store_release_u32(&b.d->dbrec[MLX5_RCV_DBR], v);
	i = post_send(&a);
	fid_submit_doca(&a);
	EXPECT(&a, i, MLX5_OPCODE_SEND, MLX5_CQE_SYNDROME_REMOTE_OP_ERR, "rq_overrun", 0);
	CHECK_EQ(nu_wait_state(&b, GDAK_QPS_ERR, 5000), 0);
	REQUIRE_EQ(gdak_qp_query_error(b.qp, &e), 0);
	CHECK_STR(e.rule, "rq_overrun");
	CHECK_EQ(e.syndrome, MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR);
	CHECK(fid_violations(&b) >= 1);
	nu_destroy(&a);
	nu_destroy(&b);
}

static const struct gdak_case cases[] = { GDAK_CASE(case_inline_not_allowed),
					  GDAK_CASE(case_atomic_length),
					  GDAK_CASE(case_wqe_past_producer),
					  GDAK_CASE(case_length),
					  GDAK_CASE(case_no_rq),
					  GDAK_CASE(case_rq_overrun) };

int main(int argc, char **argv)
{
	REQUIRE_EQ(gdak_nic_set_strict(1), 0);
	REQUIRE_EQ(gdak_open("emu", &ctx), 0);
	REQUIRE_EQ(gdak_mr_reg(ctx, buf, sizeof(buf), GDAK_ACCESS_ALL, &mb), 0);
	GDAK_TEST_RUN_CASES(argc, argv, cases);
	gdak_mr_dereg(mb);
	gdak_close(ctx);
	return gdak_test_end();
}

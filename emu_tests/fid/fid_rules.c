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

/* One rule's provocation: a fresh pair (rq receive WQEs on each), the case
 * writes its WQE into w, finish() puts it (ds DS), submits it and checks the
 * error CQE; end() destroys the pair. */
struct fx {
	struct nu_qp a, b;
	uint8_t w[128];
};

static void begin(struct fx *x, uint32_t rq)
{
	pair(&x->a, &x->b, rq);
	memset(x->w, 0, sizeof(x->w));
}

static void finish_at(struct fx *x, unsigned ds, void (*submit)(struct nu_qp *), uint8_t opcode,
		      uint8_t synd, const char *rule, int violation, int line)
{
	uint64_t i = fid_put(&x->a, x->w, ds);

	submit(&x->a);
	expect(&x->a, i, opcode, synd, rule, violation, line);
}
#define FINISH(x, ds, submit, op, s, r, v) finish_at(x, ds, submit, op, s, r, v, __LINE__)

static void end(struct fx *x)
{
	nu_destroy(&x->a);
	nu_destroy(&x->b);
}

static void case_inline_not_allowed(void)
{
	struct fx x;

	begin(&x, 0);
	fid_ctrl(x.w, 0, 0, MLX5_OPCODE_RDMA_READ, x.a.qpn, 3, FID_CQ_UPDATE, 0);
	fid_raddr(x.w + 16, (uintptr_t)buf, gdak_mr_rkey(mb));
	fid_be32(x.w + 32, MLX5_INLINE_SEG | 8);
	memset(x.w + 36, 0x5a, 12);
	FINISH(&x, 3, fid_submit_doca, MLX5_OPCODE_RDMA_READ, MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR,
	       "inline_not_allowed", 1);
	end(&x);
}

static void case_atomic_length(void)
{
	struct fx x;

	begin(&x, 0);
	fid_ctrl(x.w, 0, 0, MLX5_OPCODE_ATOMIC_FA, x.a.qpn, 4, FID_CQ_UPDATE, 0);
	fid_raddr(x.w + 16, (uintptr_t)buf, gdak_mr_rkey(mb));
	fid_be64(x.w + 32, 1);
	fid_be64(x.w + 40, 0);
	fid_data(x.w + 48, 4, gdak_mr_lkey(mb), buf + 64);
	FINISH(&x, 4, fid_submit_nvshmem, MLX5_OPCODE_ATOMIC_FA, MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR,
	       "atomic_length", 1);
	end(&x);
}

/* the record and the register announce one WQEBB */
static void ring_one(struct nu_qp *a)
{
	fid_dbrec(a, 1);
	fid_ring(a, 1);
}

static void case_wqe_past_producer(void)
{
	struct fx x;

	begin(&x, 0);
	/* RDMA_WRITE with 6 data segments: DS 8, two WQEBBs ... */
	fid_ctrl(x.w, 0, 0, MLX5_OPCODE_RDMA_WRITE, x.a.qpn, 8, FID_CQ_UPDATE, 0);
	fid_raddr(x.w + 16, (uintptr_t)buf, gdak_mr_rkey(mb));
	for (int k = 0; k < 6; k++)
		fid_data(x.w + 32 + 16 * k, 8, gdak_mr_lkey(mb), buf + 8 * k);
	/* ... but the doorbell announces one */
	FINISH(&x, 8, ring_one, MLX5_OPCODE_RDMA_WRITE, MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR,
	       "wqe_past_producer", 1);
	end(&x);
}

static void case_length(void)
{
	struct fx x;

	begin(&x, 0);
	fid_ctrl(x.w, 0, 0, MLX5_OPCODE_RDMA_WRITE, x.a.qpn, 4, FID_CQ_UPDATE, 0);
	fid_raddr(x.w + 16, (uintptr_t)buf, gdak_mr_rkey(mb));
	fid_data(x.w + 32, 0x50000000u, gdak_mr_lkey(mb), buf);
	fid_data(x.w + 48, 0x50000000u, gdak_mr_lkey(mb), buf);
	FINISH(&x, 4, fid_submit_doca, MLX5_OPCODE_RDMA_WRITE, MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR,
	       "length", 1);
	end(&x);
}

/* a 16-byte SEND (DS 2) */
static void send_wqe(struct fx *x)
{
	fid_ctrl(x->w, 0, 0, MLX5_OPCODE_SEND, x->a.qpn, 2, FID_CQ_UPDATE, 0);
	fid_data(x->w + 16, 16, gdak_mr_lkey(mb), buf);
}

static void case_no_rq(void)
{
	struct fx x;

	begin(&x, 0);
	send_wqe(&x);
	FINISH(&x, 2, fid_submit_doca, MLX5_OPCODE_SEND, MLX5_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR,
	       "no_rq", 0);
	end(&x);
}

static void case_rq_overrun(void)
{
	struct fx x;
	struct gdak_qp_error e;
	uint8_t rec[4];
	uint32_t v;

	begin(&x, 4);
	/* the responder's receive record claims 9 WQEs on a ring of 4 */
	fid_be32(rec, 9);
	memcpy(&v, rec, 4);
	gdak_dev_store_release_u32(&x.b.d->dbrec[MLX5_RCV_DBR], v);
	send_wqe(&x);
	FINISH(&x, 2, fid_submit_doca, MLX5_OPCODE_SEND, MLX5_CQE_SYNDROME_REMOTE_OP_ERR,
	       "rq_overrun", 0);
	CHECK_EQ(nu_wait_state(&x.b, GDAK_QPS_ERR, 5000), 0);
	REQUIRE_EQ(gdak_qp_query_error(x.b.qp, &e), 0);
	CHECK_STR(e.rule, "rq_overrun");
	CHECK_EQ(e.syndrome, MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR);
	CHECK(fid_violations(&x.b) >= 1);
	end(&x);
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

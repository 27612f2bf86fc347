/* SPDX-License-Identifier: MIT */
/*
 * fid_reset.c - QP reset and reuse as the stacks do it on a failed or
 * re-established connection: RTS -> RTS (a no-op modify), a WQE error (QP
 * in ERR, later WQEs flushed), then ERR -> RESET -> INIT -> RTR -> RTS on
 * the same QP, and RTS -> RESET directly.  After RESET the NIC's view
 * restarts as a ConnectX's does: the send queue, its record and the CQ
 * start again from index 0 (the device writes WQE 0 and polls CQE 0),
 * gdak_qp_query_error() reports the new state with the old error gone,
 * gdak_nic_qp_query() (the NIC's own view) shows every index back at 0,
 * and traffic is verified byte for byte with no new violation.
 */
#include "fid_util.h"

static struct gdak_ctx *ctx;
static uint8_t src[8192], dst[8192];
static struct gdak_mr *ms, *md;

/* n signalled WRITEs from the device's index 0 on (CQE k is WQE k) */
static void traffic(struct nu_qp *a, unsigned n, uint64_t *cqn, unsigned seed)
{
	memset(dst, 0, sizeof(dst));
	gdak_test_fill(src, sizeof(src), seed);
	for (unsigned i = 0; i < n; i++) {
		uint64_t idx = fid_write(a, src + 64 * i, 64, gdak_mr_lkey(ms),
					 (uintptr_t)(dst + 64 * i), gdak_mr_rkey(md),
					 FID_CQ_UPDATE);
		const uint8_t *c;

		fid_submit_doca(a);
		c = fid_cqe_at(&a->d->scq, *cqn, 5000);
		REQUIRE(c != NULL);
		CHECK_EQ(c[63] >> 4, MLX5_CQE_REQ);
		CHECK_EQ(fid_get_be16(c + 60), (uint16_t)idx);
		(*cqn)++;
		fid_cq_consumed(&a->d->scq, *cqn);
	}
	CHECK_MEM(dst, src, 64 * n);
	{
		struct gdak_nic_qp_view v;

		/* the NIC's view: everything fetched, one CQE per WQE */
		REQUIRE_EQ(gdak_nic_qp_query(a->qp, &v), 0);
		CHECK_EQ(v.state, GDAK_QPS_RTS);
		CHECK_EQ(v.sq_consumer, a->pi);
		CHECK_EQ(v.sq_producer, a->pi);
		CHECK_EQ(v.sq_rung, a->pi);
		CHECK_EQ(v.sq_record, (uint16_t)a->pi);
		CHECK_EQ(v.scq_produced, *cqn);
	}
}

/* One side, as after a local error: the peer (loop transport) keeps its
 * state.  An RC connection over a wire restarts both ends (new PSNs on
 * both sides), as reconnect_both does. */
static void reconnect_one(struct nu_qp *a, struct nu_qp *b)
{
	struct gdak_qp_info ib;
	struct gdak_qp_error e;

	struct gdak_nic_qp_view v;

	REQUIRE_EQ(gdak_qp_modify(a->qp, GDAK_QPS_RESET, NULL), 0);
	CHECK_EQ(gdak_qp_state(a->qp), GDAK_QPS_RESET);
	REQUIRE_EQ(gdak_nic_qp_query(a->qp, &v), 0);
	CHECK_EQ(v.state, GDAK_QPS_RESET);
	CHECK_EQ(v.sq_consumer, 0);
	CHECK_EQ(v.sq_producer, 0);
	CHECK_EQ(v.sq_rung, 0);
	CHECK_EQ(v.sq_record, 0);
	CHECK_EQ(v.scq_produced, 0);
	REQUIRE_EQ(gdak_qp_query_error(a->qp, &e), 0);
	CHECK_EQ(e.state, GDAK_QPS_RESET);
	CHECK_STR(e.rule, "");
	CHECK_EQ(e.syndrome, 0);
	/* the NIC restarted its indices: the descriptor, record, rings are fresh */
	CHECK_EQ(a->d->sq_resv, 0);
	CHECK_EQ(a->d->dbrec[MLX5_SND_DBR], 0);
	CHECK_EQ(*a->d->scq.dbrec, 0);
	CHECK_EQ(((const uint8_t *)a->d->scq.cqes)[63], GDAK_MLX5_CQE_INVALID_OP_OWN);
	CHECK_EQ(*a->d->db_reg, 0);
	REQUIRE_EQ(gdak_qp_info(b->qp, &ib), 0);
	REQUIRE_EQ(gdak_qp_modify(a->qp, GDAK_QPS_INIT, NULL), 0);
	REQUIRE_EQ(gdak_qp_modify(a->qp, GDAK_QPS_RTR, &ib), 0);
	REQUIRE_EQ(gdak_qp_modify(a->qp, GDAK_QPS_RTS, NULL), 0);
	a->pi = 0;
	a->last = 0;
}

static void reconnect(struct nu_qp *a, struct nu_qp *b, int both)
{
	struct gdak_qp_info ia, ib;

	if (!both) {
		reconnect_one(a, b);
		return;
	}
	REQUIRE_EQ(gdak_qp_modify(a->qp, GDAK_QPS_RESET, NULL), 0);
	REQUIRE_EQ(gdak_qp_modify(b->qp, GDAK_QPS_RESET, NULL), 0);
	CHECK_EQ(a->d->sq_resv, 0);
	CHECK_EQ(a->d->dbrec[MLX5_SND_DBR], 0);
	CHECK_EQ(((const uint8_t *)a->d->scq.cqes)[63], GDAK_MLX5_CQE_INVALID_OP_OWN);
	REQUIRE_EQ(gdak_qp_info(a->qp, &ia), 0);
	REQUIRE_EQ(gdak_qp_info(b->qp, &ib), 0);
	REQUIRE_EQ(gdak_qp_connect(a->qp, &ib), 0);
	REQUIRE_EQ(gdak_qp_connect(b->qp, &ia), 0);
	a->pi = a->last = 0;
	b->pi = b->last = 0;
}

static void run(const char *dev, int both)
{
	struct gdak_qp_attr attr = { .sq_depth = 16, .cq_depth = 16 };
	struct nu_qp a, b;
	uint64_t cqn = 0;
	const uint8_t *c;
	uint64_t bad;

	REQUIRE_EQ(nu_pair(ctx, &attr, &a, &b), 0);
	traffic(&a, 20, &cqn, 1);
	/* RTS -> RTS changes nothing */
	REQUIRE_EQ(gdak_qp_modify(a.qp, GDAK_QPS_RTS, NULL), 0);
	traffic(&a, 5, &cqn, 2);

	/* a bad lkey: error CQE, then the WQE behind it flushed */
	bad = fid_write(&a, src, 64, 0x7fff00, (uintptr_t)dst, gdak_mr_rkey(md), FID_CQ_UPDATE);
	fid_write(&a, src, 64, gdak_mr_lkey(ms), (uintptr_t)dst, gdak_mr_rkey(md), FID_CQ_UPDATE);
	fid_submit_doca(&a);
	c = fid_cqe_at(&a.d->scq, cqn++, 5000);
	REQUIRE(c != NULL);
	CHECK_EQ(c[63] >> 4, MLX5_CQE_REQ_ERR);
	CHECK_EQ(fid_get_be16(c + 60), (uint16_t)bad);
	c = fid_cqe_at(&a.d->scq, cqn++, 5000);
	REQUIRE(c != NULL);
	CHECK_EQ(c[55], MLX5_CQE_SYNDROME_WR_FLUSH_ERR);
	FID_EXPECT_ERROR(&a, "bad_lkey", MLX5_CQE_SYNDROME_LOCAL_PROT_ERR);

	/* ERR -> RESET -> INIT -> RTR -> RTS, then from index 0 again */
	reconnect(&a, &b, both);
	cqn = 0;
	traffic(&a, 20, &cqn, 3);
	CHECK_EQ(gdak_qp_state(a.qp), GDAK_QPS_RTS);
	/* RTS -> RESET directly, and once more */
	reconnect(&a, &b, both);
	cqn = 0;
	traffic(&a, 7, &cqn, 4);
	CHECK_EQ(fid_violations(&a), 0);
	CHECK_EQ(fid_violations(&b), 0);
	fprintf(stderr, "%s: reset and reuse ok\n", dev);
	nu_destroy(&a);
	nu_destroy(&b);
}

int main(void)
{
	static const char *const devs[] = FID_DEVS;

	REQUIRE_EQ(gdak_nic_set_strict(1), 0);
	for (unsigned i = 0; i < 2; i++) {
		if (fid_open(devs[i], i, &ctx))
			break;
		REQUIRE_EQ(gdak_mr_reg(ctx, src, sizeof(src), GDAK_ACCESS_ALL, &ms), 0);
		REQUIRE_EQ(gdak_mr_reg(ctx, dst, sizeof(dst), GDAK_ACCESS_ALL, &md), 0);
		run(devs[i], i);
		gdak_mr_dereg(ms);
		gdak_mr_dereg(md);
		gdak_close(ctx);
	}
	return gdak_test_end();
}

/* SPDX-License-Identifier: MIT */
/*
 * nic_checks.c - every check of the NIC model triggered on purpose: the
 * error CQE (REQ_ERR, syndrome, WQE index, opcode, QPN), the QP in ERR, the
 * rule gdak_qp_query_error() names, the violation counter, and the flush of
 * everything posted after the bad WQE (one WR_FLUSH_ERR CQE each), receive
 * queues included.  Also: relaxed mode, RNR, deregistered MR, peer gone,
 * injected faults, doorbell record without a ring, register halves seen
 * out of the order they were written.
 */
#include <sched.h>

#include <gdak/dev/wqe.h>

#include "gdak_case.h"
#include "gdak_test.h"
#include "nic_util.h"

#define BUF 65536

static struct gdak_ctx *ctx;
static uint8_t *la, *lb;
static struct gdak_mr *ma, *mb, *mb_ro, *ma_nolw;

static void pair(struct nu_qp *a, struct nu_qp *b, enum gdak_dev_db_handler h, uint32_t cq)
{
	struct gdak_qp_attr attr = {.sq_depth = 64, .cq_depth = cq, .rq_depth = 16, .handler = h};
	REQUIRE_EQ(nu_pair(ctx, &attr, a, b), 0);
}

static void expect_err(struct nu_qp *q, int rcq, uint8_t synd, uint16_t idx, uint8_t wqe_op,
		       const char *rule, int line)
{
	struct gdak_mlx5_cqe_fields f;
	struct gdak_qp_error e;

	if (nu_poll(q, rcq, &f, 5000)) {
		gdak_test_fail(__FILE__, line, "no error CQE (rule %s)", rule);
		return;
	}
	if (f.opcode != (rcq ? MLX5_CQE_RESP_ERR : MLX5_CQE_REQ_ERR) || f.syndrome != synd ||
	    f.wqe_counter != idx || f.wqe_opcode != wqe_op || f.qpn != q->qpn)
		gdak_test_fail(__FILE__, line,
			       "rule %s: CQE opcode %u syndrome 0x%x idx %u wqe_op 0x%x qpn 0x%x; "
			       "want syndrome 0x%x idx %u wqe_op 0x%x qpn 0x%x", rule, f.opcode,
			       f.syndrome, f.wqe_counter, f.wqe_opcode, f.qpn, synd, idx, wqe_op, q->qpn);
	else
		gdak_test_passed++;
	CHECK_EQ(nu_wait_state(q, GDAK_QPS_ERR, 5000), 0);
	REQUIRE_EQ(gdak_qp_query_error(q->qp, &e), 0);
	CHECK_EQ(e.state, GDAK_QPS_ERR);
	if (rule) {
		if (strcmp(e.rule, rule))
			gdak_test_fail(__FILE__, line, "rule '%s', want '%s' (%s)", e.rule, rule, e.text);
		else
			gdak_test_passed++;
		CHECK_EQ(e.syndrome, synd);
		CHECK_EQ(e.wqe_index, idx);
	}
}
#define EXPECT_ERR(q, rcq, s, i, op, r) expect_err(q, rcq, s, i, op, r, __LINE__)

static void expect_flush(struct nu_qp *q, int rcq, unsigned n, uint16_t first)
{
	for (unsigned i = 0; i < n; i++) {
		struct gdak_mlx5_cqe_fields f;
		REQUIRE_EQ(nu_poll(q, rcq, &f, 5000), 0);
		CHECK_EQ(f.opcode, rcq ? MLX5_CQE_RESP_ERR : MLX5_CQE_REQ_ERR);
		CHECK_EQ(f.syndrome, MLX5_CQE_SYNDROME_WR_FLUSH_ERR);
		CHECK_EQ(f.wqe_counter, (uint16_t)(first + i));
	}
}

static uint16_t wr(struct nu_qp *a, uint32_t len, uint32_t lkey, uint64_t raddr, uint32_t rkey,
		   unsigned flags)
{
	return nu_post_rdma(a, MLX5_OPCODE_RDMA_WRITE, la, len, lkey, raddr, rkey, 0, flags);
}

/* A WQE built by hand: ctrl fields given, then raddr + data for a WRITE. */
static uint16_t raw_write(struct nu_qp *a, uint8_t opcode, uint8_t ds, uint16_t idx, uint32_t qpn)
{
	uint8_t w[64] __attribute__((aligned(16))) = {0};
	struct gdak_mlx5_ctrl c = {.opcode = opcode, .wqe_index = idx, .qpn = qpn, .ds = ds,
				   .fm_ce_se = MLX5_WQE_CTRL_CQ_UPDATE};
	uint16_t at = (uint16_t)a->pi;

	gdak_mlx5_ctrl_encode((void *)w, &c);
	gdak_mlx5_raddr_encode((void *)(w + 16), (uintptr_t)lb, gdak_mr_rkey(mb));
	gdak_mlx5_data_encode((void *)(w + 32), (uintptr_t)la, 8, gdak_mr_lkey(ma));
	nu_put_raw(a, w, ds < 4 ? 4 : ds);
	return at;
}

/* Bad WQE, then 3 more: error CQE, 3 flushes, state ERR, later posts flushed too. */
static void case_bad_lkey(void)
{
	struct nu_qp a, b;
	uint16_t bad;

	pair(&a, &b, GDAK_DEV_DB_DB, 0);
	bad = wr(&a, 8, 0xbad00, (uintptr_t)lb, gdak_mr_rkey(mb), NU_SIG);
	wr(&a, 8, gdak_mr_lkey(ma), (uintptr_t)lb, gdak_mr_rkey(mb), 0); /* unsignalled: flushed too */
	wr(&a, 8, gdak_mr_lkey(ma), (uintptr_t)lb, gdak_mr_rkey(mb), NU_SIG);
	nu_post_nop(&a, NU_SIG);
	nu_ring(&a);
	EXPECT_ERR(&a, 0, MLX5_CQE_SYNDROME_LOCAL_PROT_ERR, bad, MLX5_OPCODE_RDMA_WRITE, "bad_lkey");
	expect_flush(&a, 0, 3, (uint16_t)(bad + 1));
	/* posted in ERR: flushed as well */
	wr(&a, 8, gdak_mr_lkey(ma), (uintptr_t)lb, gdak_mr_rkey(mb), NU_SIG);
	nu_ring(&a);
	expect_flush(&a, 0, 1, (uint16_t)(bad + 4));
	CHECK(!nu_cqe_ready(&a, 0));
	/* the peer is unaffected */
	CHECK_EQ(gdak_qp_state(b.qp), GDAK_QPS_RTS);
	nu_destroy(&a);
	nu_destroy(&b);
}

static void case_simple(const char *rule, int which)
{
	struct nu_qp a, b;
	uint16_t bad = 0;
	uint8_t synd = 0, op = MLX5_OPCODE_RDMA_WRITE;
	uint64_t *res = (uint64_t *)(void *)la;
	struct gdak_nic_stats st;

	pair(&a, &b, GDAK_DEV_DB_DB, 0);
	switch (which) {
	case 0: /* unknown rkey */
		bad = wr(&a, 8, gdak_mr_lkey(ma), (uintptr_t)lb, 0x77700, NU_SIG);
		synd = MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR;
		break;
	case 1: /* rkey without REMOTE_WRITE */
		bad = wr(&a, 8, gdak_mr_lkey(ma), (uintptr_t)lb, gdak_mr_rkey(mb_ro), NU_SIG);
		synd = MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR;
		break;
	case 2: /* remote range past the region */
		bad = wr(&a, 64, gdak_mr_lkey(ma), (uintptr_t)lb + BUF - 32, gdak_mr_rkey(mb), NU_SIG);
		synd = MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR;
		break;
	case 3: /* local range past the region */
		bad = nu_post_rdma(&a, MLX5_OPCODE_RDMA_WRITE, la + BUF - 8, 16, gdak_mr_lkey(ma),
				   (uintptr_t)lb, gdak_mr_rkey(mb), 0, NU_SIG);
		synd = MLX5_CQE_SYNDROME_LOCAL_PROT_ERR;
		break;
	case 4: /* READ into memory without LOCAL_WRITE */
		bad = nu_post_rdma(&a, MLX5_OPCODE_RDMA_READ, la, 8, gdak_mr_lkey(ma_nolw),
				   (uintptr_t)lb, gdak_mr_rkey(mb), 0, NU_SIG);
		synd = MLX5_CQE_SYNDROME_LOCAL_PROT_ERR;
		op = MLX5_OPCODE_RDMA_READ;
		break;
	case 5: /* unaligned atomic */
		bad = nu_post_atomic(&a, MLX5_OPCODE_ATOMIC_FA, res, gdak_mr_lkey(ma), (uintptr_t)lb + 4,
				     gdak_mr_rkey(mb), 1, 0, NU_SIG);
		synd = MLX5_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR;
		op = MLX5_OPCODE_ATOMIC_FA;
		break;
	case 6: /* unknown opcode */
		bad = raw_write(&a, 0x3e, 3, (uint16_t)a.pi, a.qpn);
		synd = MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR;
		op = 0x3e;
		break;
	case 7: /* WRITE with DS 1: no room for raddr */
		bad = raw_write(&a, MLX5_OPCODE_RDMA_WRITE, 1, (uint16_t)a.pi, a.qpn);
		synd = MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR;
		break;
	case 8: /* index in ctrl not its slot */
		bad = raw_write(&a, MLX5_OPCODE_RDMA_WRITE, 3, (uint16_t)(a.pi + 5), a.qpn);
		synd = MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR;
		break;
	case 9: /* another QP's number */
		bad = raw_write(&a, MLX5_OPCODE_RDMA_WRITE, 3, (uint16_t)a.pi, b.qpn);
		synd = MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR;
		break;
	case 10: { /* inline length over its DS */
		uint8_t w[128] __attribute__((aligned(16))) = {0};
		struct gdak_mlx5_ctrl c = {.opcode = MLX5_OPCODE_RDMA_WRITE, .wqe_index = (uint16_t)a.pi,
					   .qpn = a.qpn, .ds = 4, .fm_ce_se = MLX5_WQE_CTRL_CQ_UPDATE};
		gdak_mlx5_ctrl_encode((void *)w, &c);
		gdak_mlx5_raddr_encode((void *)(w + 16), (uintptr_t)lb, gdak_mr_rkey(mb));
		gdak_mlx5_inline_encode((void *)(w + 32), 100); /* 2 DS hold 28 bytes */
		bad = (uint16_t)a.pi;
		nu_put_raw(&a, w, 4);
		synd = MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR;
		break;
	}
	case 11: /* masked atomic with a 16-byte local segment */
		bad = nu_post_rdma(&a, MLX5_OPCODE_ATOMIC_FA, la, 16, gdak_mr_lkey(ma), (uintptr_t)lb,
				   gdak_mr_rkey(mb), 0, NU_SIG);
		synd = MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR; /* DS 3 < 4 */
		op = MLX5_OPCODE_ATOMIC_FA;
		break;
	}
	nu_post_nop(&a, NU_SIG);
	nu_ring(&a);
	EXPECT_ERR(&a, 0, synd, bad, op, rule);
	expect_flush(&a, 0, 1, (uint16_t)(bad + 1));
	REQUIRE_EQ(gdak_nic_qp_stats(a.qp, &st), 0);
	CHECK_EQ(st.errors, 1);
	CHECK_EQ(st.flushed, 1);
	/* strict-mode rules count as violations; access errors are not the
	 * device's format mistakes but still counted where a check fired */
	if (which >= 5 && which != 11)
		CHECK(st.violations >= 1 || which == 5);
	nu_destroy(&a);
	nu_destroy(&b);
}

static void case_relaxed(void)
{
	struct nu_qp a, b;
	struct gdak_mlx5_cqe_fields f;
	uint16_t idx;

	gdak_nic_set_strict(0);
	pair(&a, &b, GDAK_DEV_DB_DB, 0);
	memset(lb, 0, 8);
	memcpy(la, "relaxed!", 8);
	idx = raw_write(&a, MLX5_OPCODE_RDMA_WRITE, 3, (uint16_t)(a.pi + 9), a.qpn);
	nu_ring(&a);
	REQUIRE_EQ(nu_poll(&a, 0, &f, 5000), 0);
	CHECK_EQ(f.opcode, MLX5_CQE_REQ);
	CHECK_EQ(f.wqe_counter, idx);
	CHECK_MEM(lb, "relaxed!", 8);
	gdak_nic_set_strict(1);
	nu_destroy(&a);
	nu_destroy(&b);
}

static void case_producer_overrun(void)
{
	struct nu_qp a, b;
	struct gdak_qp_error e;
	struct gdak_nic_stats st;

	pair(&a, &b, GDAK_DEV_DB_DB, 0);
	wr(&a, 8, gdak_mr_lkey(ma), (uintptr_t)lb, gdak_mr_rkey(mb), NU_SIG);
	a.pi += 64 + 10; /* claim more WQEs than the ring holds */
	nu_ring(&a);
	CHECK_EQ(nu_wait_state(&a, GDAK_QPS_ERR, 5000), 0);
	gdak_qp_query_error(a.qp, &e);
	CHECK_STR(e.rule, "producer_overrun");
	CHECK_EQ(e.syndrome, MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR);
	gdak_nic_qp_stats(a.qp, &st);
	CHECK(st.violations >= 1);
	CHECK_EQ(st.wqes, 0); /* nothing of the overwritten ring was executed */
	nu_destroy(&a);
	nu_destroy(&b);
}

static void case_cq_overrun(void)
{
	struct nu_qp a, b;
	struct gdak_qp_error e;

	pair(&a, &b, GDAK_DEV_DB_DB, 4);
	for (int i = 0; i < 6; i++)
		wr(&a, 8, gdak_mr_lkey(ma), (uintptr_t)lb, gdak_mr_rkey(mb), NU_SIG);
	nu_ring(&a); /* never consumes: the 5th CQE has no room */
	CHECK_EQ(nu_wait_state(&a, GDAK_QPS_ERR, 5000), 0);
	gdak_qp_query_error(a.qp, &e);
	CHECK_STR(e.rule, "cq_overrun");
	/* the 4 CQEs that fitted are valid successes */
	for (int i = 0; i < 4; i++) {
		struct gdak_mlx5_cqe_fields f;
		REQUIRE_EQ(nu_poll(&a, 0, &f, 5000), 0);
		CHECK_EQ(f.opcode, MLX5_CQE_REQ);
		CHECK_EQ(f.wqe_counter, i);
	}
	nu_destroy(&a);
	nu_destroy(&b);
}

static void case_rnr_and_recv(void)
{
	struct nu_qp a, b;
	uint16_t bad;
	struct gdak_nic_stats st;

	/* no receive WQE: RNR, retried, then RNR_RETRY_EXC */
	gdak_nic_set_rnr_timeout_ms(30);
	pair(&a, &b, GDAK_DEV_DB_DB, 0);
	bad = nu_post_send(&a, MLX5_OPCODE_SEND, la, 8, gdak_mr_lkey(ma), 0, NU_SIG);
	nu_ring(&a);
	EXPECT_ERR(&a, 0, MLX5_CQE_SYNDROME_RNR_RETRY_EXC_ERR, bad, MLX5_OPCODE_SEND,
		   "rnr_retry_exceeded");
	gdak_nic_qp_stats(b.qp, &st);
	CHECK(st.rnr >= 1);
	CHECK_EQ(gdak_qp_state(b.qp), GDAK_QPS_RTS);
	nu_destroy(&a);
	nu_destroy(&b);
	gdak_nic_set_rnr_timeout_ms(1000);

	/* receive WQE too small: requester REMOTE_INVAL_REQ, responder LOCAL_LENGTH + ERR,
	 * the responder's other receive WQEs flushed */
	pair(&a, &b, GDAK_DEV_DB_DB, 0);
	nu_post_recv(&b, lb, 4, gdak_mr_lkey(mb));
	nu_post_recv(&b, lb, 64, gdak_mr_lkey(mb));
	nu_post_recv(&b, lb, 64, gdak_mr_lkey(mb));
	bad = nu_post_send(&a, MLX5_OPCODE_SEND, la, 8, gdak_mr_lkey(ma), 0, NU_SIG);
	nu_ring(&a);
	EXPECT_ERR(&a, 0, MLX5_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR, bad, MLX5_OPCODE_SEND,
		   "recv_too_small");
	EXPECT_ERR(&b, 1, MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR, 0, MLX5_OPCODE_SEND, "recv_too_small");
	expect_flush(&b, 1, 2, 1);
	nu_destroy(&a);
	nu_destroy(&b);

	/* receive WQE with a bad lkey: requester REMOTE_OP_ERR, responder LOCAL_PROT */
	pair(&a, &b, GDAK_DEV_DB_DB, 0);
	nu_post_recv(&b, lb, 64, 0x5500);
	bad = nu_post_send(&a, MLX5_OPCODE_SEND, la, 8, gdak_mr_lkey(ma), 0, NU_SIG);
	nu_ring(&a);
	EXPECT_ERR(&a, 0, MLX5_CQE_SYNDROME_REMOTE_OP_ERR, bad, MLX5_OPCODE_SEND, "recv_bad_lkey");
	EXPECT_ERR(&b, 1, MLX5_CQE_SYNDROME_LOCAL_PROT_ERR, 0, MLX5_OPCODE_SEND, "recv_bad_lkey");
	nu_destroy(&a);
	nu_destroy(&b);
}

static void case_bf_mismatch(void)
{
	struct nu_qp a, b;
	uint16_t idx;
	uint8_t *reg;

	pair(&a, &b, GDAK_DEV_DB_BF, 0);
	idx = wr(&a, 8, gdak_mr_lkey(ma), (uintptr_t)lb, gdak_mr_rkey(mb), NU_SIG);
	/* ring by hand with a BlueFlame copy whose data segment differs */
	reg = (uint8_t *)a.d->db_reg;
	__atomic_store_n(&a.d->dbrec[MLX5_SND_DBR], gdak_mlx5_sq_dbrec_value((uint32_t)a.pi),
			 __ATOMIC_RELEASE);
	memcpy(reg + 8, (uint8_t *)a.d->sq_buf + 8, 56);
	reg[40] ^= 0xff; /* lkey byte */
	__atomic_store_n(a.d->db_reg, *(uint64_t *)a.d->sq_buf, __ATOMIC_RELEASE);
	EXPECT_ERR(&a, 0, MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR, idx, MLX5_OPCODE_RDMA_WRITE,
		   "bf_mismatch");
	nu_destroy(&a);
	nu_destroy(&b);
}

/* The QP's counters into *st once *field (one of them) is non-zero, or
 * after 5 s (a hang guard: the caller checks the value). */
static void stats_once(struct nu_qp *q, struct gdak_nic_stats *st, const uint64_t *field)
{
	uint64_t t0 = gdak_test_now_ns();

	do {
		sched_yield();
		gdak_nic_qp_stats(q->qp, st);
	} while (!*field && gdak_test_now_ns() - t0 < 5000000000ull);
}

/*
 * A BlueFlame copy the NIC saw half-written, then overwritten by a newer
 * 8-byte doorbell before it settled: it can no longer be checked, and must
 * not be compared with the newer register (a false bf_mismatch, seen under
 * load when the device thread is preempted in the middle of the copy).
 */
static void case_bf_superseded(void)
{
	struct gdak_mlx5_cqe_fields f;
	struct gdak_nic_stats st;
	struct nu_qp a, b;
	const uint64_t *w;
	uint16_t last;

	pair(&a, &b, GDAK_DEV_DB_BF, 0);
	for (int i = 1; i < 8; i++) /* stale register contents */
		__atomic_store_n(a.d->db_reg + i, ~0ull, __ATOMIC_RELAXED);
	wr(&a, 8, gdak_mr_lkey(ma), (uintptr_t)lb, gdak_mr_rkey(mb), 0);
	w = (const uint64_t *)a.d->sq_buf;
	__atomic_store_n(&a.d->dbrec[MLX5_SND_DBR], gdak_mlx5_sq_dbrec_value((uint32_t)a.pi),
			 __ATOMIC_RELEASE);
	/* the first 8 bytes of the BlueFlame write, then "preempted" until the
	 * NIC has seen this doorbell */
	__atomic_store_n(a.d->db_reg, w[0], __ATOMIC_RELEASE);
	stats_once(&a, &st, &st.doorbells);
	CHECK_EQ(st.doorbells, 1);
	for (int i = 1; i < 8; i++) /* the rest of the copy */
		__atomic_store_n(a.d->db_reg + i, w[i], __ATOMIC_RELAXED);
	/* two more WQEs rung with the 8-byte form: word 0 changes again */
	wr(&a, 8, gdak_mr_lkey(ma), (uintptr_t)lb + 8, gdak_mr_rkey(mb), 0);
	last = wr(&a, 8, gdak_mr_lkey(ma), (uintptr_t)lb + 16, gdak_mr_rkey(mb), NU_SIG);
	__atomic_store_n(&a.d->dbrec[MLX5_SND_DBR], gdak_mlx5_sq_dbrec_value((uint32_t)a.pi),
			 __ATOMIC_RELEASE);
	__atomic_store_n(a.d->db_reg, *(const uint64_t *)(const void *)((const uint8_t *)a.d->sq_buf +
									 64 * (uint32_t)last),
			 __ATOMIC_RELEASE);
	REQUIRE_EQ(nu_poll(&a, 0, &f, 5000), 0);
	CHECK_EQ(f.opcode, MLX5_CQE_REQ);
	CHECK_EQ(f.wqe_counter, last);
	gdak_nic_qp_stats(a.qp, &st);
	CHECK_EQ(st.violations, 0);
	CHECK_EQ(st.wqes, 3);
	CHECK_EQ(gdak_qp_state(a.qp), GDAK_QPS_RTS);
	nu_destroy(&a);
	nu_destroy(&b);
}

static void case_deregistered(void)
{
	struct nu_qp a, b;
	struct gdak_mr *tmp;
	uint32_t key;
	uint16_t bad;

	pair(&a, &b, GDAK_DEV_DB_DB, 0);
	REQUIRE_EQ(gdak_mr_reg(ctx, lb, 4096, GDAK_ACCESS_ALL, &tmp), 0);
	key = gdak_mr_rkey(tmp);
	REQUIRE_EQ(gdak_mr_dereg(tmp), 0);
	bad = wr(&a, 8, gdak_mr_lkey(ma), (uintptr_t)lb, key, NU_SIG);
	nu_ring(&a);
	EXPECT_ERR(&a, 0, MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR, bad, MLX5_OPCODE_RDMA_WRITE, "bad_rkey");
	nu_destroy(&a);
	nu_destroy(&b);
}

static void case_peer_gone_and_modify(void)
{
	struct nu_qp a, b;
	uint16_t bad;

	pair(&a, &b, GDAK_DEV_DB_DB, 0);
	nu_destroy(&b);
	bad = wr(&a, 8, gdak_mr_lkey(ma), (uintptr_t)lb, gdak_mr_rkey(mb), NU_SIG);
	nu_ring(&a);
	EXPECT_ERR(&a, 0, MLX5_CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR, bad, MLX5_OPCODE_RDMA_WRITE,
		   "peer_gone");
	nu_destroy(&a);

	/* gdak_qp_modify(ERR): posted receive WQEs flushed; sends flushed */
	pair(&a, &b, GDAK_DEV_DB_DB, 0);
	nu_post_recv(&b, lb, 64, gdak_mr_lkey(mb));
	nu_post_recv(&b, lb, 64, gdak_mr_lkey(mb));
	REQUIRE_EQ(gdak_qp_modify(b.qp, GDAK_QPS_ERR, NULL), 0);
	expect_flush(&b, 1, 2, 0);
	/* a request to a QP in ERR is dropped: the requester runs out of retries */
	bad = wr(&a, 8, gdak_mr_lkey(ma), (uintptr_t)lb, gdak_mr_rkey(mb), NU_SIG);
	nu_ring(&a);
	EXPECT_ERR(&a, 0, MLX5_CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR, bad, MLX5_OPCODE_RDMA_WRITE,
		   "responder_not_ready");
	/* back to RESET and up again: works from index 0 */
	{
		struct gdak_qp_info ia, ib;
		struct gdak_mlx5_cqe_fields f;
		REQUIRE_EQ(gdak_qp_modify(a.qp, GDAK_QPS_RESET, NULL), 0);
		REQUIRE_EQ(gdak_qp_modify(b.qp, GDAK_QPS_RESET, NULL), 0);
		gdak_qp_info(a.qp, &ia);
		gdak_qp_info(b.qp, &ib);
		REQUIRE_EQ(gdak_qp_connect(a.qp, &ib), 0);
		REQUIRE_EQ(gdak_qp_connect(b.qp, &ia), 0);
		nu_qp_from(&a, a.qp);
		nu_qp_from(&b, b.qp);
		memcpy(la, "again...", 8);
		bad = wr(&a, 8, gdak_mr_lkey(ma), (uintptr_t)lb, gdak_mr_rkey(mb), NU_SIG);
		nu_ring(&a);
		REQUIRE_EQ(nu_poll(&a, 0, &f, 5000), 0);
		CHECK_EQ(f.opcode, MLX5_CQE_REQ);
		CHECK_EQ(f.wqe_counter, 0);
		CHECK_MEM(lb, "again...", 8);
	}
	nu_destroy(&a);
	nu_destroy(&b);
}

static void case_fault(void)
{
	struct nu_qp a, b;
	char spec[80];

	pair(&a, &b, GDAK_DEV_DB_DB, 0);
	snprintf(spec, sizeof(spec), "err:qp=%u,wqe=2,syndrome=REMOTE_ABORTED", a.qpn);
	REQUIRE_EQ(gdak_nic_set_faults(spec), 0);
	CHECK(gdak_nic_set_faults("err:qp=1,wqe=x") < 0);
	REQUIRE_EQ(gdak_nic_set_faults(spec), 0);
	for (int i = 0; i < 3; i++)
		wr(&a, 8, gdak_mr_lkey(ma), (uintptr_t)lb, gdak_mr_rkey(mb), NU_SIG);
	nu_ring(&a);
	{
		struct gdak_mlx5_cqe_fields f;
		REQUIRE_EQ(nu_poll(&a, 0, &f, 5000), 0);
		CHECK_EQ(f.opcode, MLX5_CQE_REQ);
		REQUIRE_EQ(nu_poll(&a, 0, &f, 5000), 0);
		CHECK_EQ(f.opcode, MLX5_CQE_REQ);
	}
	EXPECT_ERR(&a, 0, MLX5_CQE_SYNDROME_REMOTE_ABORTED_ERR, 2, MLX5_OPCODE_RDMA_WRITE, "injected");
	gdak_nic_set_faults(NULL);
	nu_destroy(&a);
	nu_destroy(&b);
}

/* Strict: a record the register never announced is not executed. */
static void case_record_without_ring(void)
{
	struct nu_qp a, b;
	struct gdak_nic_stats st;
	struct gdak_mlx5_cqe_fields f;

	pair(&a, &b, GDAK_DEV_DB_DB, 0);
	wr(&a, 8, gdak_mr_lkey(ma), (uintptr_t)lb, gdak_mr_rkey(mb), NU_SIG);
	__atomic_store_n(&a.d->dbrec[MLX5_SND_DBR], gdak_mlx5_sq_dbrec_value((uint32_t)a.pi),
			 __ATOMIC_RELEASE);
	stats_once(&a, &st, &st.violations);
	CHECK_EQ(st.violations, 1);
	CHECK_EQ(st.wqes, 0);
	CHECK(!nu_cqe_ready(&a, 0));
	nu_ring(&a); /* now rung: it runs */
	REQUIRE_EQ(nu_poll(&a, 0, &f, 5000), 0);
	CHECK_EQ(f.opcode, MLX5_CQE_REQ);
	nu_destroy(&a);
	nu_destroy(&b);
}

/* The two register halves read while the device writes both: the newer
 * ring (half 1) seen before the older one (half 0) shows up.  The older
 * ring must not pull the rung producer back, or the requester stays behind
 * the record for good (found as a rare hang of gdak.net.udp_dc_loss1). */
static void case_halves_out_of_order(void)
{
	struct nu_qp a, b;
	struct gdak_mlx5_cqe_fields f;
	uint64_t *half0, *half1;
	const uint64_t *w0, *w1;

	pair(&a, &b, GDAK_DEV_DB_DB, 0);
	half0 = a.d->db_reg;
	half1 = (uint64_t *)(void *)((char *)a.d->db_reg + ((size_t)1 << a.d->bf_log_half));
	REQUIRE(a.d->bf_log_half != 0);
	memcpy(la, "first..!", 8);
	memcpy(la + 8, "second.!", 8);
	nu_post_rdma(&a, MLX5_OPCODE_RDMA_WRITE, la, 8, gdak_mr_lkey(ma), (uintptr_t)lb,
		     gdak_mr_rkey(mb), 0, NU_SIG);
	nu_post_rdma(&a, MLX5_OPCODE_RDMA_WRITE, la + 8, 8, gdak_mr_lkey(ma), (uintptr_t)lb + 8,
		     gdak_mr_rkey(mb), 0, NU_SIG);
	w0 = (const uint64_t *)gdak_dev_wqe_ptr(a.d, 0);
	w1 = (const uint64_t *)gdak_dev_wqe_ptr(a.d, 1);
	/* the record covers WQE 0; the ring of WQE 1 (producer 2) is seen */
	__atomic_store_n(&a.d->dbrec[MLX5_SND_DBR], gdak_mlx5_sq_dbrec_value(1), __ATOMIC_RELEASE);
	__atomic_store_n(half1, w1[0], __ATOMIC_RELEASE);
	REQUIRE_EQ(nu_poll(&a, 0, &f, 5000), 0);
	CHECK_EQ(f.opcode, MLX5_CQE_REQ);
	CHECK_EQ(f.wqe_counter, 0);
	CHECK_MEM(lb, "first..!", 8);
	/* now the older ring of WQE 0 (producer 1) lands, then the record */
	__atomic_store_n(half0, w0[0], __ATOMIC_RELEASE);
	__atomic_store_n(&a.d->dbrec[MLX5_SND_DBR], gdak_mlx5_sq_dbrec_value(2), __ATOMIC_RELEASE);
	REQUIRE_EQ(nu_poll(&a, 0, &f, 5000), 0);
	CHECK_EQ(f.opcode, MLX5_CQE_REQ);
	CHECK_EQ(f.syndrome, 0);
	CHECK_EQ(f.wqe_counter, 1);
	CHECK_MEM(lb + 8, "second.!", 8);
	CHECK_EQ(gdak_qp_state(a.qp), GDAK_QPS_RTS);
	nu_destroy(&a);
	nu_destroy(&b);
}

/* Each of these rules provoked alone on a fresh pair. */
static void case_simple_rules(void)
{
	static const char *const rules[] = {"bad_rkey", "rkey_access", "rkey_bounds", "lkey_bounds",
					    "lkey_access", "atomic_unaligned", "bad_opcode", "bad_ds",
					    "wqe_index_mismatch", "qpn_mismatch", "inline_overflow",
					    "bad_ds"};

	for (int i = 0; i < 12; i++)
		case_simple(rules[i], i);
}

static const struct gdak_case cases[] = {
	GDAK_CASE(case_bad_lkey),
	GDAK_CASE(case_simple_rules),
	GDAK_CASE(case_relaxed),
	GDAK_CASE(case_producer_overrun),
	GDAK_CASE(case_cq_overrun),
	GDAK_CASE(case_rnr_and_recv),
	GDAK_CASE(case_bf_mismatch),
	GDAK_CASE(case_bf_superseded),
	GDAK_CASE(case_deregistered),
	GDAK_CASE(case_peer_gone_and_modify),
	GDAK_CASE(case_fault),
	GDAK_CASE(case_record_without_ring),
	GDAK_CASE(case_halves_out_of_order),
};

int main(int argc, char **argv)
{
	gdak_set_log_level(GDAK_LOG_ERROR); /* the checks warn, by design */
	REQUIRE_EQ(gdak_open("emu", &ctx), 0);
	REQUIRE_EQ(gdak_mem_alloc(ctx, BUF, GDAK_MEM_HOST, (void **)&la), 0);
	REQUIRE_EQ(gdak_mem_alloc(ctx, BUF, GDAK_MEM_HOST, (void **)&lb), 0);
	REQUIRE_EQ(gdak_mr_reg(ctx, la, BUF, GDAK_ACCESS_ALL, &ma), 0);
	REQUIRE_EQ(gdak_mr_reg(ctx, la, BUF, GDAK_ACCESS_REMOTE_READ, &ma_nolw), 0);
	REQUIRE_EQ(gdak_mr_reg(ctx, lb, BUF, GDAK_ACCESS_ALL, &mb), 0);
	REQUIRE_EQ(gdak_mr_reg(ctx, lb, BUF, GDAK_ACCESS_REMOTE_READ, &mb_ro), 0);
	GDAK_TEST_RUN_CASES(argc, argv, cases);
	gdak_close(ctx);
	return gdak_test_end();
}

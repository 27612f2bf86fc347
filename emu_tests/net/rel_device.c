/* SPDX-License-Identifier: MIT */
/*
 * rel_device.c - a misbehaving device against the NIC model: random bytes
 * in the send queue, producer indices jumping backwards and forwards (in
 * the doorbell record, the doorbell register and the CPU-proxy word), a
 * doorbell register rung without a record and a record without a ring,
 * another QP's number in a WQE and in the doorbell register, a BlueFlame
 * copy that differs from the ring.
 *
 * Each gets what DESIGN.md "Checks" documents (error CQE with its syndrome,
 * the QP in ERR, the rule named by gdak_qp_query_error, or a reported
 * violation for the doorbell disagreements), nothing outside the misused QP
 * is written, and after each case the bystander pairs on every NIC thread
 * must still work (rel_bystanders_ok).
 */
#include <errno.h>

#include "rel_util.h"

static struct rel_env E;

static int syndrome_known(uint8_t s)
{
	switch (s) {
	case MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR:
	case MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR:
	case MLX5_CQE_SYNDROME_LOCAL_PROT_ERR:
	case MLX5_CQE_SYNDROME_WR_FLUSH_ERR:
	case MLX5_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR:
	case MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR:
	case MLX5_CQE_SYNDROME_REMOTE_OP_ERR:
		return 1;
	}
	return 0;
}

/* Wait until the QP is in ERR or its counters stopped moving (bounded). */
static void settle(struct nu_qp *q, unsigned quiet_ms)
{
	struct gdak_nic_stats prev, cur;
	unsigned same = 0;

	memset(&prev, 0xff, sizeof(prev));
	for (unsigned i = 0; i < 5000 && same < quiet_ms; i++) {
		rel_sleep_ms(1);
		gdak_nic_qp_stats(q->qp, &cur);
		same = memcmp(&cur, &prev, sizeof(cur)) ? 0 : same + 1;
		prev = cur;
	}
}

/*
 * Random bytes: `bbs` random WQEBBs at the producer, then a doorbell.
 * with_ctrl: the ctrl segment carries a supported opcode, the right index
 * and QPN, so the rest of the random bytes reach the key/length checks.
 * Nothing random may ever complete successfully or touch registered memory.
 */
static void case_random(int strict, int with_ctrl)
{
	static const uint8_t ops[] = {MLX5_OPCODE_RDMA_WRITE, MLX5_OPCODE_RDMA_WRITE_IMM,
				      MLX5_OPCODE_SEND, MLX5_OPCODE_RDMA_READ, MLX5_OPCODE_ATOMIC_CS,
				      MLX5_OPCODE_ATOMIC_FA, MLX5_OPCODE_ATOMIC_MASKED_FA};
	unsigned iters = getenv("GDAK_UNDER_VALGRIND") ? 6 : 30;
	uint64_t rs = 0x5eed0000u + (unsigned)(strict * 2 + with_ctrl);

	gdak_nic_set_strict(strict);
	memset(E.la, 0, REL_BUF);
	memset(E.lb, 0, REL_BUF);
	for (unsigned it = 0; it < iters; it++) {
		struct gdak_qp_attr at = {.sq_depth = 16, .rq_depth = 4,
					  .handler = (enum gdak_dev_db_handler)(it % 3),
					  .nic_thread = (int)(it % E.nthreads)};
		struct nu_qp a, b;
		uint8_t w[4 * 64];
		unsigned bbs = 1 + (unsigned)(gdak_test_rand(&rs) % 4), ok = 0, bad = 0, n = 0;
		struct gdak_mlx5_cqe_fields f;
		enum gdak_qp_state s;

		rel_pair(&E, &at, &a, &b);
		gdak_test_fill(w, sizeof(w), gdak_test_rand(&rs));
		if (with_ctrl) {
			struct gdak_mlx5_ctrl c = {
				.opcode = ops[gdak_test_rand(&rs) % sizeof(ops)],
				.wqe_index = (uint16_t)a.pi, .qpn = a.qpn, .ds = (uint8_t)(w[7] & 0x3f),
				.fm_ce_se = MLX5_WQE_CTRL_CQ_UPDATE,
			};
			if (c.ds > 4 * bbs)
				c.ds = (uint8_t)(4 * bbs);
			gdak_mlx5_ctrl_encode((void *)w, &c);
		}
		nu_put_raw(&a, w, 4 * bbs);
		nu_ring(&a);
		settle(&a, 20);
		while (n < 64 && !nu_poll(&a, 0, &f, 0)) {
			n++;
			if (f.opcode == MLX5_CQE_REQ) {
				ok++;
				continue;
			}
			if (f.opcode != MLX5_CQE_REQ_ERR || f.qpn != a.qpn || !syndrome_known(f.syndrome))
				bad++;
		}
		s = gdak_qp_state(a.qp);
		if (ok || bad || (s != GDAK_QPS_RTS && s != GDAK_QPS_ERR))
			gdak_test_fail(__FILE__, __LINE__, "random WQE (strict %d, ctrl %d, iteration %u): "
				       "%u successes, %u malformed CQEs, state %s", strict, with_ctrl,
				       it, ok, bad, gdak_qp_state_name(s));
		else
			gdak_test_passed++;
		if (s == GDAK_QPS_ERR) {
			struct gdak_qp_error e;
			gdak_qp_query_error(a.qp, &e);
			CHECK(e.text[0] != 0);
		}
		nu_destroy(&a);
		nu_destroy(&b);
	}
	gdak_nic_set_strict(1);
	/* random keys match no region: nothing registered was written */
	{
		static uint8_t zero[4096];
		for (unsigned o = 0; o < REL_BUF; o += sizeof(zero)) {
			CHECK_MEM(E.la + o, zero, sizeof(zero));
			CHECK_MEM(E.lb + o, zero, sizeof(zero));
		}
	}
	rel_bystanders_ok(&E);
}

static uint16_t good_write(struct nu_qp *a, uint32_t off, unsigned flags)
{
	return nu_post_rdma(a, MLX5_OPCODE_RDMA_WRITE, E.la + off, 64, gdak_mr_lkey(E.ma),
			    (uintptr_t)(E.lb + off), gdak_mr_rkey(E.mb), 0, flags);
}

/* Run n signalled writes and consume their CQEs. */
static void run_ok(struct nu_qp *a, unsigned n)
{
	struct gdak_mlx5_cqe_fields f;

	for (unsigned i = 0; i < n; i++)
		good_write(a, i * 64, NU_SIG);
	nu_ring(a);
	for (unsigned i = 0; i < n; i++) {
		REQUIRE_EQ(nu_poll(a, 0, &f, 10000), 0);
		CHECK_EQ(f.opcode, MLX5_CQE_REQ);
	}
}

static void set_record(struct nu_qp *a, uint64_t pi)
{
	__atomic_store_n(&a->d->dbrec[MLX5_SND_DBR], gdak_mlx5_sq_dbrec_value((uint32_t)pi),
			 __ATOMIC_RELEASE);
}

/* Nothing completed on a and it is still in RTS; a proper doorbell then
 * runs the WQE at idx: its CQE is next, successful. */
static void ring_runs(struct nu_qp *a, uint16_t idx)
{
	struct gdak_mlx5_cqe_fields f;

	CHECK(!nu_cqe_ready(a, 0));
	CHECK_EQ(gdak_qp_state(a->qp), GDAK_QPS_RTS);
	nu_ring(a);
	REQUIRE_EQ(nu_poll(a, 0, &f, 10000), 0);
	CHECK_EQ(f.opcode, MLX5_CQE_REQ);
	CHECK_EQ(f.wqe_counter, idx);
}

/* The producer moves backwards or beyond the ring: producer_overrun, QP in
 * ERR, nothing of the (overwritten) ring executed after it. */
static void case_producer_jumps(void)
{
	static const char *const what[] = {"record backwards", "record past the ring",
					   "proxy backwards", "proxy past the ring"};

	for (int k = 0; k < 4; k++) {
		struct gdak_qp_attr at = {.sq_depth = 16,
					  .handler = k < 2 ? GDAK_DEV_DB_DB : GDAK_DEV_DB_CPU_PROXY};
		struct nu_qp a, b;
		struct gdak_nic_stats st;

		rel_pair(&E, &at, &a, &b);
		run_ok(&a, 4);
		good_write(&a, 0, NU_SIG);
		if (k == 0)
			set_record(&a, a.pi - 3);
		else if (k == 1)
			set_record(&a, a.pi + 16 + 5);
		else
			__atomic_store_n(a.d->proxy_pi, k == 2 ? a.pi - 3 : a.pi + 40, __ATOMIC_RELEASE);
		rel_expect_rule(&a, "producer_overrun");
		gdak_nic_qp_stats(a.qp, &st);
		if (st.wqes != 4)
			gdak_test_fail(__FILE__, __LINE__, "%s: %llu WQEs executed, want 4", what[k],
				       (unsigned long long)st.wqes);
		else
			gdak_test_passed++;
		CHECK(st.violations >= 1);
		nu_destroy(&a);
		nu_destroy(&b);
		rel_bystanders_ok(&E);
	}
}

/* Record moves forward within the ring over slots the device never wrote
 * (zeros: NOP with DS 0 and a wrong index): an error, not an execution. */
static void case_record_forward_stale(void)
{
	struct gdak_qp_attr at = {.sq_depth = 16};
	struct nu_qp a, b;
	struct gdak_nic_stats st;
	struct gdak_qp_error e;

	rel_pair(&E, &at, &a, &b);
	run_ok(&a, 2);
	a.pi += 6; /* claims 6 WQEBBs it never wrote (still zero) */
	set_record(&a, a.pi);
	{
		/* rung as if the last of them were a 1-WQEBB WQE */
		struct gdak_mlx5_ctrl c = {.wqe_index = (uint16_t)(a.pi - 1), .qpn = a.qpn, .ds = 1};
		struct mlx5_wqe_ctrl_seg seg;
		uint64_t reg;
		gdak_mlx5_ctrl_encode(&seg, &c);
		memcpy(&reg, &seg, 8);
		__atomic_store_n(a.d->db_reg, reg, __ATOMIC_RELEASE);
	}
	nu_wait_state(&a, GDAK_QPS_ERR, 10000);
	gdak_qp_query_error(a.qp, &e);
	CHECK_EQ(e.state, GDAK_QPS_ERR);
	/* the zeroed slot: NOP with DS 0 and index 0 in slot 2 */
	CHECK(!strcmp(e.rule, "bad_ds") || !strcmp(e.rule, "wqe_index_mismatch"));
	CHECK_EQ(e.syndrome, MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR);
	CHECK_EQ(e.wqe_index, 2);
	gdak_nic_qp_stats(a.qp, &st);
	CHECK_EQ(st.wqes - st.errors, 2); /* only the two real ones succeeded */
	nu_destroy(&a);
	nu_destroy(&b);
	rel_bystanders_ok(&E);
}

/* The doorbell register rung with an OLD WQE's ctrl after newer WQEs were
 * recorded: work runs only as far as both announce; the disagreement is
 * reported once it has settled; a correct ring then runs the rest. */
static void case_register_backwards(void)
{
	struct gdak_qp_attr at = {.sq_depth = 16};
	struct nu_qp a, b;
	struct gdak_nic_stats st;
	struct gdak_mlx5_cqe_fields f;
	uint64_t old_last, v0;
	uint16_t i1, i2;

	rel_pair(&E, &at, &a, &b);
	run_ok(&a, 2);
	old_last = a.last;
	i1 = good_write(&a, 0, NU_SIG);
	i2 = good_write(&a, 64, NU_SIG);
	v0 = rel_violations(a.qp);
	set_record(&a, a.pi);
	__atomic_store_n(a.d->db_reg,
			 *(const uint64_t *)(const void *)((const uint8_t *)a.d->sq_buf +
							  (old_last & 15) * 64), __ATOMIC_RELEASE);
	/* the disagreement is reported once it stayed for 200 ms */
	for (unsigned i = 0; i < 500 && rel_violations(a.qp) == v0; i++)
		rel_sleep_ms(10);
	CHECK(rel_violations(a.qp) > v0);
	ring_runs(&a, i1);
	REQUIRE_EQ(nu_poll(&a, 0, &f, 10000), 0);
	CHECK_EQ(f.wqe_counter, i2);
	gdak_nic_qp_stats(a.qp, &st);
	CHECK_EQ(st.wqes, 4);
	nu_destroy(&a);
	nu_destroy(&b);
	rel_bystanders_ok(&E);
}

/* Doorbell register without a record (and record without a ring): nothing
 * executes, a violation is counted once settled, the QP stays in RTS; the
 * missing half then makes it run. */
static void case_half_doorbell(int ring_only)
{
	struct gdak_qp_attr at = {.sq_depth = 16};
	struct nu_qp a, b;
	struct gdak_nic_stats st;
	uint16_t idx;

	rel_pair(&E, &at, &a, &b);
	memcpy(E.la, ring_only ? "ringonly" : "reconly.", 8);
	idx = good_write(&a, 0, NU_SIG);
	if (ring_only)
		__atomic_store_n(a.d->db_reg, *(const uint64_t *)a.d->sq_buf, __ATOMIC_RELEASE);
	else
		set_record(&a, a.pi);
	for (unsigned i = 0; i < 500 && !rel_violations(a.qp); i++)
		rel_sleep_ms(10);
	gdak_nic_qp_stats(a.qp, &st);
	CHECK_EQ(st.violations, 1);
	CHECK_EQ(st.wqes, 0);
	ring_runs(&a, idx);
	CHECK_MEM(E.lb, E.la, 8);
	nu_destroy(&a);
	nu_destroy(&b);
	rel_bystanders_ok(&E);
}

/* Another QP's number: in a WQE (qpn_mismatch on the QP that holds it), and
 * in the doorbell register; the QP named must not execute anything. */
static void case_wrong_qpn(void)
{
	struct gdak_qp_attr at = {.sq_depth = 16};
	struct nu_qp a, b, c, d;
	uint8_t w[64] __attribute__((aligned(16))) = {0};
	struct gdak_mlx5_ctrl ctl = {.opcode = MLX5_OPCODE_RDMA_WRITE, .ds = 3,
				     .fm_ce_se = MLX5_WQE_CTRL_CQ_UPDATE};
	struct gdak_nic_stats st;
	uint16_t idx;

	rel_pair(&E, &at, &a, &b);
	rel_pair(&E, &at, &c, &d);
	ctl.wqe_index = (uint16_t)a.pi;
	ctl.qpn = c.qpn;
	gdak_mlx5_ctrl_encode((void *)w, &ctl);
	gdak_mlx5_raddr_encode((void *)(w + 16), (uintptr_t)E.lb, gdak_mr_rkey(E.mb));
	gdak_mlx5_data_encode((void *)(w + 32), (uintptr_t)E.la, 8, gdak_mr_lkey(E.ma));
	idx = (uint16_t)a.pi;
	nu_put_raw(&a, w, 3);
	nu_ring(&a);
	rel_expect_err(&a, 0, MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR, idx, "qpn_mismatch");
	gdak_nic_qp_stats(c.qp, &st);
	CHECK_EQ(st.wqes, 0);
	CHECK_EQ(gdak_qp_state(c.qp), GDAK_QPS_RTS);
	nu_destroy(&a);
	nu_destroy(&b);

	/* c's register rung with d's QPN in its bytes: d runs nothing */
	rel_pair(&E, &at, &a, &b);
	good_write(&c, 0, NU_SIG);
	set_record(&c, c.pi);
	{
		uint64_t reg = *(const uint64_t *)c.d->sq_buf;
		uint32_t qd = gdak_htobe32(d.qpn << 8 | 3);
		reg = (reg & 0xffffffffull) | (uint64_t)qd << 32;
		__atomic_store_n(c.d->db_reg, reg, __ATOMIC_RELEASE);
	}
	settle(&c, 30);
	gdak_nic_qp_stats(d.qp, &st);
	CHECK_EQ(st.wqes, 0);
	CHECK_EQ(gdak_qp_state(d.qp), GDAK_QPS_RTS);
	CHECK(gdak_qp_state(c.qp) == GDAK_QPS_RTS || gdak_qp_state(c.qp) == GDAK_QPS_ERR);
	nu_destroy(&a);
	nu_destroy(&b);
	nu_destroy(&c);
	nu_destroy(&d);
	rel_bystanders_ok(&E);
}

/* A BlueFlame copy that differs from the ring: bf_mismatch error CQE. */
static void case_bf_mismatch(void)
{
	struct gdak_qp_attr at = {.sq_depth = 16, .handler = GDAK_DEV_DB_BF};
	struct nu_qp a, b;
	uint8_t *reg;
	uint16_t idx;

	rel_pair(&E, &at, &a, &b);
	run_ok(&a, 1);
	idx = good_write(&a, 0, NU_SIG);
	reg = (uint8_t *)a.d->db_reg;
	set_record(&a, a.pi);
	memcpy(reg + 8, (const uint8_t *)a.d->sq_buf + (idx & 15) * 64 + 8, 56);
	reg[24] ^= 0x01; /* raddr byte */
	__atomic_store_n(a.d->db_reg,
			 *(const uint64_t *)(const void *)((const uint8_t *)a.d->sq_buf + (idx & 15) * 64),
			 __ATOMIC_RELEASE);
	rel_expect_err(&a, 0, MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR, idx, "bf_mismatch");
	nu_destroy(&a);
	nu_destroy(&b);
	rel_bystanders_ok(&E);
}

/* Garbage doorbell-register values and CQ doorbell records. */
static void case_garbage_registers(void)
{
	uint64_t rs = 77;

	for (int i = 0; i < 8; i++) {
		struct gdak_qp_attr at = {.sq_depth = 16, .handler = (enum gdak_dev_db_handler)(i % 3)};
		struct nu_qp a, b;
		enum gdak_qp_state s;

		rel_pair(&E, &at, &a, &b);
		run_ok(&a, 2);
		good_write(&a, 0, NU_SIG);
		__atomic_store_n(a.d->scq.dbrec, (uint32_t)gdak_test_rand(&rs), __ATOMIC_RELEASE);
		__atomic_store_n(a.d->db_reg, gdak_test_rand(&rs), __ATOMIC_RELEASE);
		set_record(&a, a.pi + (gdak_test_rand(&rs) % 64));
		__atomic_store_n(a.d->proxy_pi, gdak_test_rand(&rs), __ATOMIC_RELEASE);
		settle(&a, 20);
		s = gdak_qp_state(a.qp);
		CHECK(s == GDAK_QPS_RTS || s == GDAK_QPS_ERR);
		nu_destroy(&a);
		nu_destroy(&b);
	}
	rel_bystanders_ok(&E);
}

int main(void)
{
	rel_env_open(&E, 2);
	case_random(1, 0);
	case_random(1, 1);
	case_random(0, 0);
	case_random(0, 1);
	case_producer_jumps();
	case_record_forward_stale();
	case_register_backwards();
	case_half_doorbell(1);
	case_half_doorbell(0);
	case_wrong_qpn();
	case_bf_mismatch();
	case_garbage_registers();
	rel_env_close(&E);
	return gdak_test_end();
}

/* SPDX-License-Identifier: MIT */
/*
 * rel_life.c - object lifetimes against work in flight: memory deregistered
 * while WQEs reference it (as source, RDMA target, READ target, receive
 * buffer), the requester or the responder QP destroyed with work in
 * flight, a CQ too small for the work posted, a device that never
 * consumes CQEs or never updates the CQ doorbell record.
 *
 * What must hold: completions come in order as successes, then at most one
 * error with the documented syndrome, then flushes; memory is never written
 * after gdak_mr_dereg returned; destroy returns 0 and nothing else notices
 * (bystander pairs on both NIC threads keep working).
 */
#include <errno.h>

#include "rel_util.h"

#define N 48
#define LEN 4096

static struct rel_env E;

/* Consume the CQEs for n signalled WQEs posted from index 0: successes,
 * then (optionally) one error with syndrome synd, then flushes.  Returns the
 * number of successes. */
static unsigned expect_prefix(struct nu_qp *a, unsigned first, unsigned n, uint8_t synd,
			      const char *what)
{
	unsigned ok = first, err = 0, fl = 0, bad = 0;

	for (unsigned i = first; i < n; i++) {
		struct gdak_mlx5_cqe_fields f;

		if (nu_poll(a, 0, &f, 10000)) {
			gdak_test_fail(__FILE__, __LINE__, "%s: CQE %u of %u missing", what, i, n);
			return ok;
		}
		if (f.wqe_counter != i)
			bad++;
		if (f.opcode == MLX5_CQE_REQ && !err && !fl)
			ok++;
		else if (f.opcode == MLX5_CQE_REQ_ERR && f.syndrome == synd && !err && !fl)
			err++;
		else if (f.opcode == MLX5_CQE_REQ_ERR && f.syndrome == MLX5_CQE_SYNDROME_WR_FLUSH_ERR &&
			 err)
			fl++;
		else
			bad++;
	}
	if (bad || (err && ok + err + fl != n))
		gdak_test_fail(__FILE__, __LINE__, "%s: %u ok, %u errors, %u flushed, %u out of order",
			       what, ok, err, fl, bad);
	else
		gdak_test_passed++;
	return ok;
}

enum { AS_SOURCE, AS_TARGET, AS_READ_TARGET };

static void case_dereg_in_flight(int role)
{
	static const char *const names[] = {"source", "RDMA target", "READ target"};
	static const uint8_t synd[] = {MLX5_CQE_SYNDROME_LOCAL_PROT_ERR,
				       MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR,
				       MLX5_CQE_SYNDROME_LOCAL_PROT_ERR};
	struct gdak_qp_attr at = {.sq_depth = 64, .nic_thread = 0};
	struct nu_qp a, b;
	struct gdak_mr *t;
	uint8_t *tbuf, *snap = malloc((size_t)N * LEN);
	struct gdak_mlx5_cqe_fields f;
	unsigned ok;

	REQUIRE(snap);
	REQUIRE_EQ(gdak_mem_alloc(E.ctx, (size_t)N * LEN, GDAK_MEM_HOST, (void **)&tbuf), 0);
	memset(tbuf, 0x11, (size_t)N * LEN);
	gdak_test_fill(E.la, (size_t)N * LEN, 42);
	REQUIRE_EQ(gdak_mr_reg(E.ctx, tbuf, (size_t)N * LEN, GDAK_ACCESS_ALL, &t), 0);
	rel_pair(&E, &at, &a, &b);
	for (unsigned i = 0; i < N; i++) {
		uint8_t *ti = tbuf + (size_t)i * LEN;
		if (i == N / 4)
			nu_ring(&a); /* the first quarter runs now ... */
		if (role == AS_SOURCE)
			nu_post_rdma(&a, MLX5_OPCODE_RDMA_WRITE, ti, LEN, gdak_mr_lkey(t),
				     (uintptr_t)(E.lb + (size_t)i * LEN), gdak_mr_rkey(E.mb), 0, NU_SIG);
		else if (role == AS_TARGET)
			nu_post_rdma(&a, MLX5_OPCODE_RDMA_WRITE, E.la + (size_t)i * LEN, LEN,
				     gdak_mr_lkey(E.ma), (uintptr_t)ti, gdak_mr_rkey(t), 0, NU_SIG);
		else
			nu_post_rdma(&a, MLX5_OPCODE_RDMA_READ, ti, LEN, gdak_mr_lkey(t),
				     (uintptr_t)(E.la + (size_t)i * LEN), gdak_mr_rkey(E.ma), 0, NU_SIG);
	}
	/* ... and once it is under way the rest is rung and the region
	 * deregistered at once: some WQEs run before, some after */
	REQUIRE_EQ(nu_poll(&a, 0, &f, 10000), 0);
	CHECK_EQ(f.opcode, MLX5_CQE_REQ);
	nu_ring(&a);
	REQUIRE_EQ(gdak_mr_dereg(t), 0);
	memcpy(snap, tbuf, (size_t)N * LEN);
	ok = expect_prefix(&a, 1, N, synd[role], names[role]);
	/* nothing written into the region after dereg returned */
	CHECK_MEM(tbuf, snap, (size_t)N * LEN);
	/* what succeeded moved the right bytes */
	if (role == AS_SOURCE)
		CHECK_MEM(E.lb, tbuf, (size_t)ok * LEN);
	else
		CHECK_MEM(tbuf, E.la, (size_t)ok * LEN);
	if (ok < N)
		rel_expect_rule(&a, role == AS_TARGET ? "bad_rkey" : "bad_lkey");
	printf("dereg as %s: %u of %u WQEs ran before the deregistration\n", names[role], ok, N);
	nu_destroy(&a);
	nu_destroy(&b);
	CHECK_EQ(gdak_mem_free(E.ctx, tbuf), 0);
	free(snap);
	memset(E.lb, 0, REL_BUF);
	rel_bystanders_ok(&E);
}

/* The receive buffer's MR goes away while its receive WQE is posted. */
static void case_dereg_recv(void)
{
	struct gdak_qp_attr at = {.sq_depth = 16, .rq_depth = 4};
	struct nu_qp a, b;
	struct gdak_mr *t;
	uint8_t *tbuf;
	uint16_t idx;

	REQUIRE_EQ(gdak_mem_alloc(E.ctx, 4096, GDAK_MEM_HOST, (void **)&tbuf), 0);
	memset(tbuf, 0x22, 4096);
	REQUIRE_EQ(gdak_mr_reg(E.ctx, tbuf, 4096, GDAK_ACCESS_LOCAL_WRITE, &t), 0);
	rel_pair(&E, &at, &a, &b);
	nu_post_recv(&b, tbuf, 4096, gdak_mr_lkey(t));
	REQUIRE_EQ(gdak_mr_dereg(t), 0);
	idx = nu_post_send(&a, MLX5_OPCODE_SEND, E.la, 64, gdak_mr_lkey(E.ma), 0, NU_SIG);
	nu_ring(&a);
	rel_expect_err(&a, 0, MLX5_CQE_SYNDROME_REMOTE_OP_ERR, idx, "recv_bad_lkey");
	rel_expect_err(&b, 1, MLX5_CQE_SYNDROME_LOCAL_PROT_ERR, 0, "recv_bad_lkey");
	for (unsigned i = 0; i < 4096; i++)
		if (tbuf[i] != 0x22) {
			gdak_test_fail(__FILE__, __LINE__, "receive buffer written at %u after dereg", i);
			break;
		}
	nu_destroy(&a);
	nu_destroy(&b);
	CHECK_EQ(gdak_mem_free(E.ctx, tbuf), 0);
	rel_bystanders_ok(&E);
}

/* Destroy the requester (which = 0) or the responder (1) with work in flight. */
static void case_destroy_in_flight(int which)
{
	struct gdak_qp_attr at = {.sq_depth = 64, .rq_depth = 16, .nic_thread = -1};
	struct nu_qp a, b;

	rel_pair(&E, &at, &a, &b);
	for (unsigned i = 0; i < 8; i++)
		nu_post_recv(&b, E.lb + 128 * 1024 + i * 1024, 1024, gdak_mr_lkey(E.mb));
	for (unsigned i = 0; i < N; i++) {
		if (i % 6 == 5)
			nu_post_send(&a, MLX5_OPCODE_SEND, E.la, 512, gdak_mr_lkey(E.ma), 0, NU_SIG);
		else
			nu_post_rdma(&a, i % 2 ? MLX5_OPCODE_RDMA_READ : MLX5_OPCODE_RDMA_WRITE,
				     E.la + (size_t)i * LEN, LEN, gdak_mr_lkey(E.ma),
				     (uintptr_t)(E.lb + (size_t)(i % 16) * LEN), gdak_mr_rkey(E.mb), 0,
				     NU_SIG);
	}
	nu_ring(&a);
	if (which == 0) {
		CHECK_EQ(gdak_qp_destroy(a.qp), 0);
		a.qp = NULL;
		/* the responder is still fine and can be used and destroyed */
		CHECK(gdak_qp_state(b.qp) == GDAK_QPS_RTS);
	} else {
		unsigned errors = 0, fl = 0, got;
		CHECK_EQ(gdak_qp_destroy(b.qp), 0);
		b.qp = NULL;
		/* the requester: successes, then peer_gone, then flushes */
		got = rel_drain(&a, N, 10000, &errors, &fl);
		CHECK_EQ(got, N);
		CHECK(errors <= 1);
		if (errors)
			rel_expect_rule(&a, "peer_gone");
	}
	nu_destroy(&a);
	nu_destroy(&b);
	rel_bystanders_ok(&E);
}

/* More signalled WQEs than CQ entries, polled only afterwards: cq_overrun
 * (ERR), the CQEs that fitted are intact; once the device catches up the
 * rest arrives as flushes.  Then the same for a device that reads its CQEs
 * but never tells the NIC (no CQ doorbell record update). */
static void case_cq_small(int update_dbrec)
{
	struct gdak_qp_attr at = {.sq_depth = 32, .cq_depth = 4};
	struct nu_qp a, b;
	unsigned ok = 0, fl = 0, other = 0;
	uint64_t ci = 0;

	rel_pair(&E, &at, &a, &b);
	for (unsigned i = 0; i < 10; i++)
		nu_post_rdma(&a, MLX5_OPCODE_RDMA_WRITE, E.la, 64, gdak_mr_lkey(E.ma),
			     (uintptr_t)E.lb, gdak_mr_rkey(E.mb), 0, NU_SIG);
	nu_ring(&a);
	if (!update_dbrec) {
		/* read the 4 CQEs that fit, never write the CQ doorbell record */
		for (unsigned n = 0; n < 4; n++) {
			const uint8_t *c = (const uint8_t *)a.d->scq.cqes + (ci & 3) * 64;
			unsigned w = 0;
			while (!gdak_mlx5_cqe_is_sw_owned(__atomic_load_n(c + 63, __ATOMIC_ACQUIRE), ci, 4) &&
			       w++ < 10000)
				rel_sleep_ms(1);
			ci++;
		}
	}
	rel_expect_rule(&a, "cq_overrun");
	/* the NIC waits for room to flush; others are served meanwhile */
	rel_bystanders_ok(&E);
	if (!update_dbrec) {
		/* tell the NIC now (nu_poll does from here on) */
		a.scq_ci = ci;
		__atomic_store_n(a.d->scq.dbrec, gdak_mlx5_cq_dbrec_value((uint32_t)ci),
				 __ATOMIC_RELEASE);
		ok = 4;
	}
	for (;;) {
		struct gdak_mlx5_cqe_fields f;
		if (nu_poll(&a, 0, &f, 1000))
			break;
		if (f.opcode == MLX5_CQE_REQ && !fl)
			ok++;
		else if (f.opcode == MLX5_CQE_REQ_ERR && f.syndrome == MLX5_CQE_SYNDROME_WR_FLUSH_ERR)
			fl++;
		else
			other++;
	}
	/* 4 fitted, the 5th was lost to the overrun, the other 5 flushed */
	CHECK_EQ(ok, 4);
	CHECK_EQ(fl, 5);
	CHECK_EQ(other, 0);
	nu_destroy(&a);
	nu_destroy(&b);
	rel_bystanders_ok(&E);
}

int main(void)
{
	rel_env_open(&E, 2);
	case_dereg_in_flight(AS_SOURCE);
	case_dereg_in_flight(AS_TARGET);
	case_dereg_in_flight(AS_READ_TARGET);
	case_dereg_recv();
	case_destroy_in_flight(0);
	case_destroy_in_flight(1);
	case_cq_small(1);
	case_cq_small(0);
	rel_env_close(&E);
	return gdak_test_end();
}

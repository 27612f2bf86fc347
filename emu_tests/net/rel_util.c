/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <time.h>

#include "rel_util.h"

void rel_sleep_ms(unsigned ms)
{
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000};
	nanosleep(&ts, NULL);
}

void rel_pair(struct rel_env *e, const struct gdak_qp_attr *attr, struct nu_qp *a, struct nu_qp *b)
{
	REQUIRE_EQ(nu_pair(e->ctx, attr, a, b), 0);
}

void rel_env_open(struct rel_env *e, unsigned nthreads)
{
	memset(e, 0, sizeof(*e));
	if (!getenv("GDAK_LOG"))
		gdak_set_log_level(GDAK_LOG_ERROR); /* the checks warn, by design */
	e->nthreads = nthreads;
	REQUIRE_EQ(gdak_nic_set_threads(nthreads), 0);
	REQUIRE_EQ(gdak_open("emu", &e->ctx), 0);
	REQUIRE_EQ(gdak_mem_alloc(e->ctx, REL_BUF, GDAK_MEM_HOST, (void **)&e->la), 0);
	REQUIRE_EQ(gdak_mem_alloc(e->ctx, REL_BUF, GDAK_MEM_HOST, (void **)&e->lb), 0);
	REQUIRE_EQ(gdak_mem_alloc(e->ctx, 65536, GDAK_MEM_HOST, (void **)&e->bbuf), 0);
	memset(e->la, 0, REL_BUF);
	memset(e->lb, 0, REL_BUF);
	memset(e->bbuf, 0, 65536);
	REQUIRE_EQ(gdak_mr_reg(e->ctx, e->la, REL_BUF, GDAK_ACCESS_ALL, &e->ma), 0);
	REQUIRE_EQ(gdak_mr_reg(e->ctx, e->lb, REL_BUF, GDAK_ACCESS_ALL, &e->mb), 0);
	REQUIRE_EQ(gdak_mr_reg(e->ctx, e->lb, REL_BUF, GDAK_ACCESS_REMOTE_READ, &e->mb_ro), 0);
	REQUIRE_EQ(gdak_mr_reg(e->ctx, e->la, REL_BUF, GDAK_ACCESS_REMOTE_READ, &e->ma_nolw), 0);
	REQUIRE_EQ(gdak_mr_reg(e->ctx, e->bbuf, 65536, GDAK_ACCESS_ALL, &e->bmr), 0);
	for (unsigned i = 0; i < nthreads && i < REL_MAX_BYSTANDERS; i++) {
		struct gdak_qp_attr at = {.sq_depth = 16, .nic_thread = (int)i};
		struct gdak_qp *q0, *q1;
		struct gdak_qp_info i0, i1;

		REQUIRE_EQ(gdak_qp_create(e->ctx, &at, &q0), 0);
		/* the responder on the next thread: cross-thread traffic */
		at.nic_thread = (int)((i + 1) % nthreads);
		REQUIRE_EQ(gdak_qp_create(e->ctx, &at, &q1), 0);
		REQUIRE_EQ(gdak_qp_info(q0, &i0), 0);
		REQUIRE_EQ(gdak_qp_info(q1, &i1), 0);
		REQUIRE_EQ(gdak_qp_connect(q0, &i1), 0);
		REQUIRE_EQ(gdak_qp_connect(q1, &i0), 0);
		nu_qp_from(&e->by[i][0], q0);
		nu_qp_from(&e->by[i][1], q1);
	}
	rel_bystanders_ok(e);
}

void rel_env_close(struct rel_env *e)
{
	for (unsigned i = 0; i < e->nthreads && i < REL_MAX_BYSTANDERS; i++) {
		nu_destroy(&e->by[i][0]);
		nu_destroy(&e->by[i][1]);
	}
	CHECK_EQ(gdak_mr_dereg(e->bmr), 0);
	CHECK_EQ(gdak_mr_dereg(e->ma_nolw), 0);
	CHECK_EQ(gdak_mr_dereg(e->mb_ro), 0);
	CHECK_EQ(gdak_mr_dereg(e->mb), 0);
	CHECK_EQ(gdak_mr_dereg(e->ma), 0);
	CHECK_EQ(gdak_mem_free(e->ctx, e->bbuf), 0);
	CHECK_EQ(gdak_mem_free(e->ctx, e->lb), 0);
	CHECK_EQ(gdak_mem_free(e->ctx, e->la), 0);
	gdak_close(e->ctx);
	e->ctx = NULL;
}

void rel_bystanders_ok_at(struct rel_env *e, const char *file, int line)
{
	for (unsigned i = 0; i < e->nthreads && i < REL_MAX_BYSTANDERS; i++) {
		struct nu_qp *a = &e->by[i][0], *b = &e->by[i][1];
		uint8_t *src = e->bbuf + i * 4096, *dst = e->bbuf + 32768 + i * 4096;
		uint8_t *back = src + 1024;
		uint32_t key = gdak_mr_lkey(e->bmr);
		struct gdak_mlx5_cqe_fields f1;
		uint64_t seq = ++e->bseq;
		int r1, r2;

		gdak_test_fill(src, 64, seq);
		memset(back, 0, 64);
		nu_post_rdma(a, MLX5_OPCODE_RDMA_WRITE, src, 64, key, (uintptr_t)dst, key, 0, 0);
		nu_post_rdma(a, MLX5_OPCODE_RDMA_READ, back, 64, key, (uintptr_t)dst, key, 0, NU_SIG);
		nu_ring(a);
		r1 = nu_poll(a, 0, &f1, 10000);
		r2 = gdak_qp_state(a->qp) == GDAK_QPS_RTS && gdak_qp_state(b->qp) == GDAK_QPS_RTS;
		if (r1 || f1.opcode != MLX5_CQE_REQ || !r2 || memcmp(dst, src, 64) ||
		    memcmp(back, src, 64)) {
			gdak_test_fail(file, line, "bystander pair %u (thread %u) stopped working: poll %d "
				       "opcode %u syndrome 0x%x, states %s/%s", i, i, r1, f1.opcode,
				       f1.syndrome, gdak_qp_state_name(gdak_qp_state(a->qp)),
				       gdak_qp_state_name(gdak_qp_state(b->qp)));
		} else {
			gdak_test_passed++;
		}
	}
}

void rel_expect_err_at(struct nu_qp *q, int rcq, uint8_t synd, uint16_t idx, const char *rule,
		       const char *file, int line)
{
	struct gdak_mlx5_cqe_fields f;

	if (nu_poll(q, rcq, &f, 10000)) {
		gdak_test_fail(file, line, "no CQE (want syndrome 0x%x, rule %s)", synd,
			       rule ? rule : "-");
		return;
	}
	if (f.opcode != (rcq ? MLX5_CQE_RESP_ERR : MLX5_CQE_REQ_ERR) || f.syndrome != synd ||
	    f.wqe_counter != idx || f.qpn != q->qpn)
		gdak_test_fail(file, line, "CQE opcode %u syndrome 0x%x (%s) idx %u qpn 0x%x; want "
			       "syndrome 0x%x (%s) idx %u qpn 0x%x", f.opcode, f.syndrome,
			       gdak_mlx5_syndrome_name(f.syndrome), f.wqe_counter, f.qpn, synd,
			       gdak_mlx5_syndrome_name(synd), idx, q->qpn);
	else
		gdak_test_passed++;
	if (rule)
		rel_expect_rule_at(q, rule, file, line);
}

void rel_expect_rule_at(struct nu_qp *q, const char *rule, const char *file, int line)
{
	struct gdak_qp_error e;

	if (nu_wait_state(q, GDAK_QPS_ERR, 10000)) {
		gdak_test_fail(file, line, "QP 0x%x in %s, want ERR (rule %s)", q->qpn,
			       gdak_qp_state_name(gdak_qp_state(q->qp)), rule);
		return;
	}
	if (gdak_qp_query_error(q->qp, &e) || e.state != GDAK_QPS_ERR || strcmp(e.rule, rule) ||
	    !e.text[0])
		gdak_test_fail(file, line, "query_error: state %s rule '%s' text '%s'; want rule '%s'",
			       gdak_qp_state_name(e.state), e.rule, e.text, rule);
	else
		gdak_test_passed++;
}

unsigned rel_drain(struct nu_qp *q, unsigned n, unsigned timeout_ms, unsigned *errors,
		   unsigned *flushed)
{
	unsigned got = 0;

	*errors = *flushed = 0;
	while (got < n) {
		struct gdak_mlx5_cqe_fields f;
		if (nu_poll(q, 0, &f, timeout_ms))
			break;
		got++;
		if (f.opcode == MLX5_CQE_REQ_ERR) {
			if (f.syndrome == MLX5_CQE_SYNDROME_WR_FLUSH_ERR)
				(*flushed)++;
			else
				(*errors)++;
		}
	}
	return got;
}

uint64_t rel_violations(struct gdak_qp *qp)
{
	struct gdak_nic_stats st;

	memset(&st, 0, sizeof(st));
	gdak_nic_qp_stats(qp, &st);
	return st.violations;
}

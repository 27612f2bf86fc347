/* SPDX-License-Identifier: MIT */
/*
 * rel_util.h - what the reliability tests (rel_*.c) share: an emu context
 * with registered buffers of every access kind, and "bystanders": healthy
 * QP pairs, one per NIC thread, that must go on working after every piece
 * of bad input thrown at other QPs (rel_bystanders_ok).
 *
 * Built on emu_tests/nic/nic_util.h (host threads play the device).
 */
#ifndef GDAK_REL_UTIL_H
#define GDAK_REL_UTIL_H

#include "gdak_test.h"
#include "nic_util.h"

#define REL_BUF (256u * 1024)
#define REL_MAX_BYSTANDERS 4

struct rel_env {
	struct gdak_ctx *ctx;
	unsigned nthreads;
	uint8_t *la, *lb;		/* REL_BUF each */
	struct gdak_mr *ma, *mb;	/* GDAK_ACCESS_ALL */
	struct gdak_mr *mb_ro;		/* lb, REMOTE_READ only */
	struct gdak_mr *ma_nolw;	/* la, REMOTE_READ only (no LOCAL_WRITE) */
	/* bystanders: pair i lives on NIC thread i % nthreads */
	struct nu_qp by[REL_MAX_BYSTANDERS][2];
	uint8_t *bbuf;			/* their source/target memory */
	struct gdak_mr *bmr;
	uint64_t bseq;
};

/* Open "emu" with nthreads NIC threads, register the buffers, connect one
 * bystander pair per NIC thread.  Quiet logs unless $GDAK_LOG is set. */
void rel_env_open(struct rel_env *e, unsigned nthreads);
void rel_env_close(struct rel_env *e);

/* Every bystander does an RDMA_WRITE and an RDMA_READ, checks the CQEs and
 * the bytes.  Failures are reported at the caller's line. */
void rel_bystanders_ok_at(struct rel_env *e, const char *file, int line);
#define rel_bystanders_ok(e) rel_bystanders_ok_at(e, __FILE__, __LINE__)

/* A pair on ctx with the given attributes (REQUIRE'd). */
void rel_pair(struct rel_env *e, const struct gdak_qp_attr *attr, struct nu_qp *a,
	      struct nu_qp *b);

/* Wait (bounded) for the next CQE on q's send (rcq 0) or receive CQ and check
 * it is an error CQE with this syndrome / WQE index; then the QP must be in
 * ERR and gdak_qp_query_error must name rule (unless NULL). */
void rel_expect_err_at(struct nu_qp *q, int rcq, uint8_t synd, uint16_t idx, const char *rule,
		       const char *file, int line);
#define rel_expect_err(q, rcq, s, i, r) rel_expect_err_at(q, rcq, s, i, r, __FILE__, __LINE__)

/* Wait (bounded) until q is in ERR and gdak_qp_query_error names rule. */
void rel_expect_rule_at(struct nu_qp *q, const char *rule, const char *file, int line);
#define rel_expect_rule(q, r) rel_expect_rule_at(q, r, __FILE__, __LINE__)

/* Poll until n CQEs were consumed on the send CQ or timeout_ms passed:
 * returns how many were WR_FLUSH_ERR in *flushed, errors in *errors. */
unsigned rel_drain(struct nu_qp *q, unsigned n, unsigned timeout_ms, unsigned *errors,
		   unsigned *flushed);

/* Counter delta helpers. */
uint64_t rel_violations(struct gdak_qp *qp);

/* Sleep (never spin): tests share two loaded cores. */
void rel_sleep_ms(unsigned ms);

#endif

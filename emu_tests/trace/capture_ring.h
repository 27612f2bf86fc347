/* SPDX-License-Identifier: MIT */
/*
 * capture_ring.h - a send queue and its CQs played by hand, for the capture
 * tests on hand-built rings: capture_rings.c (host memory) and
 * capture_cuda.c (GPU memory).  The test is the device and the HCA: WQEs of
 * known bytes at the producer index, CQEs of known bytes with the owner bit
 * of their lap, all remembered so that the capture's file can be compared
 * with them.  Where the bytes land and how a producer index or a consumer
 * index becomes visible is the test's, through cr_ring_ops: a store to host
 * memory, or a copy to the GPU.
 */
#ifndef GDAK_CAPTURE_TEST_RING_H
#define GDAK_CAPTURE_TEST_RING_H

#include <gdak/dev/types.h>
#include <gdak/gdak.h>
#include <gdak/mlx5.h>

#include "capture_util.h"
#include "gdak_test.h"

#define CR_MAXW 64	/* posted WQEs remembered */

struct cr_ring;

struct cr_ring_ops {
	/* one WQEBB into SQ slot `slot` */
	void (*put_wqebb)(struct cr_ring *r, uint32_t slot, const uint8_t *bb);
	/* one CQE into slot `slot` of the send (recv 0) or receive CQ; the
	 * owner byte (63) must not become visible before the rest */
	void (*put_cqe)(struct cr_ring *r, int recv, uint32_t slot, const uint8_t *cqe);
	/* the device made WQEs up to pi visible */
	void (*publish_pi)(struct cr_ring *r, uint64_t pi);
	/* the device consumed a CQ up to ci: its doorbell record */
	void (*consume)(struct cr_ring *r, int recv, uint64_t ci);
};

struct cr_ring {
	struct gdak_dev_qp d;	/* the descriptor the capture is given */
	const struct cr_ring_ops *ops;
	const char *where;	/* prefix of failure messages ("" or "[gpu/basic] ") */
	uint64_t pi;		/* device producer index */
	uint64_t scq_n, rcq_n;	/* CQEs the "HCA" wrote */
	uint64_t seed;		/* of the next WQE's bytes */
	uint64_t cqe_seed;	/* added to each CQE's seed */
	/* what each CQ slot holds now, as the HCA wrote it (host memory) */
	const uint8_t *scq_bytes, *rcq_bytes;
	/* what was posted: bytes of WQE k, its index and size */
	uint8_t exp[CR_MAXW][1024];
	uint16_t exp_idx[CR_MAXW];
	uint32_t exp_bbs[CR_MAXW];
	unsigned nexp;
};

/* A WQE of ds DS at the producer index: a ctrl segment naming its index and
 * QP, pseudo-random segments after it (never a ctrl for their own index). */
static inline uint16_t cr_post(struct cr_ring *r, uint8_t opcode, unsigned ds)
{
	uint8_t w[1024] __attribute__((aligned(16)));
	struct gdak_mlx5_ctrl c = {.opcode = opcode, .wqe_index = (uint16_t)r->pi,
				   .qpn = r->d.qpn, .ds = (uint8_t)ds,
				   .fm_ce_se = MLX5_WQE_CTRL_CQ_UPDATE};
	unsigned bbs = gdak_mlx5_wqebbs(ds);
	uint16_t idx = (uint16_t)r->pi;

	gdak_test_fill(w, sizeof(w), r->seed++);
	gdak_mlx5_ctrl_encode((struct mlx5_wqe_ctrl_seg *)(void *)w, &c);
	for (unsigned i = 0; i < bbs; i++)
		r->ops->put_wqebb(r, (uint32_t)(r->pi + i) & (r->d.sq_wqebb_cnt - 1),
				  w + (size_t)i * 64);
	if (r->nexp < CR_MAXW) {
		memcpy(r->exp[r->nexp], w, (size_t)bbs * 64);
		r->exp_idx[r->nexp] = idx;
		r->exp_bbs[r->nexp++] = bbs;
	}
	r->pi += bbs;
	return idx;
}

static inline void cr_publish(struct cr_ring *r) { r->ops->publish_pi(r, r->pi); }

/* The "HCA" writes the next CQE of the send (recv 0) or receive CQ: a
 * pseudo-random body with the fields the checks read, the owner bit of the
 * CQE's lap (the CQ's first lap is owner 0). */
static inline void cr_hw_cqe(struct cr_ring *r, int recv, uint8_t op, uint16_t wqe_counter,
			     uint8_t syndrome)
{
	uint8_t c[64] __attribute__((aligned(64)));
	struct mlx5_cqe64 *q = (struct mlx5_cqe64 *)(void *)c;
	uint64_t *n = recv ? &r->rcq_n : &r->scq_n;
	uint32_t ncqe = recv ? r->d.rcq.ncqe : r->d.scq.ncqe;

	gdak_test_fill(c, 63, *n + 1000 * (uint64_t)recv + r->cqe_seed);
	q->wqe_counter = gdak_htobe16(wqe_counter);
	if (op == MLX5_CQE_REQ_ERR) {
		struct gdak_mlx5_err_cqe *e = (struct gdak_mlx5_err_cqe *)(void *)c;
		e->syndrome = syndrome;
		e->s_wqe_opcode_qpn = gdak_htobe32((uint32_t)MLX5_OPCODE_RDMA_WRITE << 24 |
						   r->d.qpn);
	} else {
		q->sop_drop_qpn = gdak_htobe32(r->d.qpn);
	}
	c[63] = gdak_mlx5_cqe_op_own(op, *n, ncqe);
	r->ops->put_cqe(r, recv, (uint32_t)(*n & (ncqe - 1)), c);
	(*n)++;
}

/* The WQE records of the file equal posted WQEs k0..k1-1 (bytes, index,
 * size), in order, none more. */
static inline void cr_check_wqes(const struct cr_file *f, const struct cr_ring *r, unsigned k0,
				 unsigned k1)
{
	size_t from = 0;
	long i;
	unsigned k = k0;

	while ((i = cr_next(f, &from, GDAK_TREC_WQE, r->d.qpn)) >= 0) {
		const struct cr_rec *w = &f->r[i];

		if (k >= k1) {
			gdak_test_fail(__FILE__, __LINE__, "%sextra WQE record idx %u", r->where,
				       w->idx);
			break;
		}
		CHECK_EQ(w->idx, r->exp_idx[k]);
		CHECK_EQ(w->len, r->exp_bbs[k] * 64);
		CHECK_EQ(w->thread, GDAK_CAPTURE_THREAD_ID);
		if (w->len == r->exp_bbs[k] * 64)
			CHECK_MEM(w->bytes, r->exp[k], w->len);
		k++;
	}
	CHECK_EQ(k, k1);
}

/* The CQE records of the send (recv 0) or receive CQ, in order, are CQEs
 * n0..n1-1 as their slots hold them (every one still in its slot), none
 * more.  wc0 >= 0: CQE n0 + j also carries wqe_counter wc0 + j. */
static inline void cr_check_cqes(const struct cr_file *f, const struct cr_ring *r, int recv,
				 uint64_t n0, uint64_t n1, long wc0)
{
	const uint8_t *slots = recv ? r->rcq_bytes : r->scq_bytes;
	uint32_t cqn = recv ? r->d.rcq.cqn : r->d.scq.cqn;
	uint32_t ncqe = recv ? r->d.rcq.ncqe : r->d.scq.ncqe;
	size_t from = 0;
	uint64_t n = n0;
	long i;

	while ((i = cr_next(f, &from, GDAK_TREC_CQE, r->d.qpn)) >= 0) {
		const struct cr_rec *e = &f->r[i];

		if (e->cqn != cqn)
			continue;
		if (n >= n1) {
			gdak_test_fail(__FILE__, __LINE__, "%sextra CQE record cq %#x index %u",
				       r->where, e->cqn, e->cq_index);
			break;
		}
		CHECK_EQ(e->cq_index, (uint32_t)n);
		CHECK_MEM(e->bytes, slots + (size_t)(n & (ncqe - 1)) * 64, 64);
		if (wc0 >= 0)
			CHECK_EQ(gdak_be16toh(((const struct mlx5_cqe64 *)(const void *)e->bytes)
					      ->wqe_counter),
				 (uint16_t)(wc0 + (long)(n - n0)));
		n++;
	}
	CHECK_EQ(n, n1);
}

/* ---- the cases both tests run ---------------------------------------------
 *
 * Each case is the device's part (play: the capture opened with
 * GDAK_CAPTURE_F_MANUAL, the QP added, passes only where play runs them)
 * and the checks of the file once the capture is closed.  The caller's
 * runner makes the rings, the capture and the file, and adds what only its
 * rings have (a GPU path's read errors, say).
 */
struct cr_case {
	const char *name;
	uint32_t sq_cnt, ncqe;
	uint64_t pi0;		/* producer index published before the QP is added */
	int arg;
	void (*play)(struct cr_ring *r, struct gdak_capture *c, int arg);
	/* bin: gdak-trace (NULL: its checks skipped); its output is printed
	 * when gdak_test_failed went past failed0 */
	void (*check)(const struct cr_file *f, const struct cr_ring *r, const char *bin,
		      const char *path, unsigned failed0, int arg);
};

/* Before the QP is added: the ring's producer index starts at pi0. */
static inline void cr_case_start(struct cr_ring *r, const struct cr_case *k)
{
	if (k->pi0) {
		r->pi = k->pi0;
		cr_publish(r);
	}
}

/*
 * The basic stream (a 16-slot SQ, a 16-entry send CQ): four WQEs of 1, 1, 2
 * and 3 WQEBBs under one doorbell, a REQ CQE and a REQ_ERR, a pass that
 * finds nothing new; then a SEND, the first two CQEs consumed and a third
 * CQE, left for the last pass.
 */
static inline void cr_basic_play(struct cr_ring *r, struct gdak_capture *c, int arg)
{
	struct gdak_capture_stats st;

	CHECK_EQ(gdak_capture_poll(c), 0);	/* nothing yet */
	cr_post(r, MLX5_OPCODE_NOP, 1);		/* 1 WQEBB */
	cr_post(r, MLX5_OPCODE_RDMA_WRITE, 3);	/* 1 */
	cr_post(r, GDAK_MLX5_OPCODE_WAIT, 5);	/* 2 */
	cr_post(r, MLX5_OPCODE_RDMA_WRITE, 9);	/* 3 */
	cr_publish(r);
	CHECK(gdak_capture_poll(c) > 0);
	cr_hw_cqe(r, 0, MLX5_CQE_REQ, 1, 0);
	cr_hw_cqe(r, 0, MLX5_CQE_REQ_ERR, 4, MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR);
	CHECK(gdak_capture_poll(c) > 0);
	CHECK_EQ(gdak_capture_poll(c), 0);	/* nothing new: nothing recorded twice */
	cr_post(r, MLX5_OPCODE_SEND, 2);
	cr_publish(r);
	r->ops->consume(r, 0, 2);
	cr_hw_cqe(r, 0, MLX5_CQE_REQ, 7, 0);
	REQUIRE_EQ(gdak_capture_get_stats(c, &st), 0);
	CHECK_EQ(st.wqes, 4);
	CHECK_EQ(st.wqebbs, 7);
	CHECK_EQ(st.cqes, 2);
	CHECK_EQ(st.doorbells, 1);
}

static inline void cr_basic_check(const struct cr_file *f, const struct cr_ring *r,
				  const char *bin, const char *path, unsigned failed0, int arg)
{
	uint32_t qpn = r->d.qpn;
	size_t from = 0;
	long i;

	cr_check_wqes(f, r, 0, 5);
	CHECK_EQ(cr_count(f, GDAK_TREC_CQE), 3);
	cr_check_cqes(f, r, 0, 0, 3, -1);
	for (unsigned k = 0; k < 3 && (i = cr_next(f, &from, GDAK_TREC_CQE, qpn)) >= 0; k++) {
		struct gdak_mlx5_cqe_fields cf;

		gdak_mlx5_cqe_decode(f->r[i].bytes, &cf);
		CHECK_EQ(f->r[i].cqn, r->d.scq.cqn);
		CHECK_EQ(cf.wqe_counter, k == 0 ? 1 : k == 1 ? 4 : 7);
		CHECK_EQ(cf.opcode, k == 1 ? MLX5_CQE_REQ_ERR : MLX5_CQE_REQ);
		if (k == 1)
			CHECK_EQ(cf.syndrome, MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR);
	}
	/* one DOORBELL per producer-index change seen: 7, then 8 */
	from = 0;
	i = cr_next(f, &from, GDAK_TREC_DOORBELL, qpn);
	CHECK(i >= 0 && f->r[i].idx == 7);
	i = cr_next(f, &from, GDAK_TREC_DOORBELL, qpn);
	CHECK(i >= 0 && f->r[i].idx == 8);
	CHECK_EQ(cr_count(f, GDAK_TREC_QP), 1);
	CHECK_EQ(cr_lost(f, qpn, "sq", NULL) + cr_lost(f, qpn, "scq", NULL), 0);

	if (bin) {
		char needle[32];
		int rc;
		char *out = cr_tool(bin, "", path, &rc);
		const char *w[] = {"t256", needle, "WQE idx=4 RDMA_WRITE", "ds=9", NULL};
		const char *e[] = {"t256", "CQE REQ_ERR", "wqe_counter=4",
				   "syndrome=REMOTE_ACCESS_ERR", NULL};
		const char *d[] = {"t256", "DOORBELL", "pi=7", NULL};

		snprintf(needle, sizeof(needle), "qp 0x%06x", qpn);
		REQUIRE(out);
		CHECK_EQ(rc, 0);
		CHECK(gdak_test_has_line(out, w));
		CHECK(gdak_test_has_line(out, e));
		CHECK(gdak_test_has_line(out, d));
		if (gdak_test_failed != failed0)
			printf("gdak-trace output:\n%s", out);
		free(out);
	}
}


/* 30 WQEBBs (ten 3-WQEBB WQEs) into a 16-slot ring between two looks: 14
 * were overwritten, the oldest slot left (index 14) is the last WQEBB of
 * the WQE at 12, so the walk skips it too: exactly 15 lost, and the WQEs at
 * 15, 18, ..., 27 captured whole; the capture goes on normally after. */
static inline void cr_sq_loss_play(struct cr_ring *r, struct gdak_capture *c, int arg)
{
	struct gdak_capture_stats st;

	for (int k = 0; k < 10; k++)
		cr_post(r, MLX5_OPCODE_RDMA_WRITE, 9);
	cr_publish(r);
	CHECK(gdak_capture_poll(c) > 0);
	cr_post(r, MLX5_OPCODE_NOP, 1);
	cr_publish(r);
	CHECK(gdak_capture_poll(c) > 0);
	REQUIRE_EQ(gdak_capture_get_stats(c, &st), 0);
	CHECK_EQ(st.lost_wqebbs, 15);
	CHECK_EQ(st.loss_records, 1);
}

static inline void cr_sq_loss_check(const struct cr_file *f, const struct cr_ring *r,
				    const char *bin, const char *path, unsigned failed0, int arg)
{
	uint64_t recs;
	int rc;
	char *out;

	cr_check_wqes(f, r, 5, 11);
	CHECK_EQ(cr_lost(f, r->d.qpn, "sq", &recs), 15);
	CHECK(recs == 0 || recs == 15);
	if (!bin)
		return;
	out = cr_tool(bin, "--errors", path, &rc);
	REQUIRE(out);
	CHECK_EQ(rc, 0);
	CHECK(strstr(out, "sq lost=15 WQEBBs first=0") != NULL);
	CHECK(strstr(out, "WQE ") == NULL);
	if (gdak_test_failed != failed0)
		printf("gdak-trace --errors output:\n%s", out);
	free(out);
}

/* How the CQ-loss case's device consumes its CQEs. */
enum { CR_CQ_DBREC, CR_CQ_CONS_IDX, CR_CQ_REUSE };

/*
 * More CQEs than a 16-entry send CQ holds between two looks.
 *   CR_CQ_DBREC, CR_CQ_CONS_IDX: 40 CQEs, each consumed by the device as it
 *     comes: 24 lost, 24..39 captured.  The device says so through the CQ
 *     doorbell record, or only through the descriptor's cons_idx, as gdak's
 *     device API does between two record updates.
 *   CR_CQ_REUSE: the device's consumer index at 4, 20 CQEs: 16..19 legally
 *     overwrote 0..3, which are lost; 4..19 captured.
 * CQE k carries wqe_counter k (100 + k for CR_CQ_REUSE).
 */
static inline unsigned cr_cq_loss_n(int how) { return how == CR_CQ_REUSE ? 20 : 40; }

static inline uint16_t cr_cq_loss_wc(int how) { return how == CR_CQ_REUSE ? 100 : 0; }

static inline void cr_cq_loss_play(struct cr_ring *r, struct gdak_capture *c, int how)
{
	struct gdak_capture_stats st;
	unsigned n = cr_cq_loss_n(how);

	if (how == CR_CQ_REUSE)
		r->ops->consume(r, 0, 4);
	for (unsigned k = 0; k < n; k++) {
		cr_hw_cqe(r, 0, MLX5_CQE_REQ, (uint16_t)(cr_cq_loss_wc(how) + k), 0);
		if (how == CR_CQ_CONS_IDX)
			__atomic_store_n(&r->d.scq.cons_idx, (uint64_t)k + 1, __ATOMIC_RELEASE);
		else if (how == CR_CQ_DBREC)
			r->ops->consume(r, 0, (uint64_t)k + 1);
	}
	CHECK(gdak_capture_poll(c) > 0);
	REQUIRE_EQ(gdak_capture_get_stats(c, &st), 0);
	CHECK_EQ(st.lost_cqes, n - 16);
	CHECK_EQ(st.cqes, 16);
}

static inline void cr_cq_loss_check(const struct cr_file *f, const struct cr_ring *r,
				    const char *bin, const char *path, unsigned failed0, int how)
{
	unsigned n = cr_cq_loss_n(how);

	CHECK_EQ(cr_lost(f, r->d.qpn, "scq", NULL), n - 16);
	cr_check_cqes(f, r, 0, n - 16, n, cr_cq_loss_wc(how) + (long)n - 16);
}

/* The 16-bit record wraps: indices 65530..65535, 0..5 (a copy of the ring
 * split at its end, where the capture stages it). */
static inline void cr_pi_wrap_play(struct cr_ring *r, struct gdak_capture *c, int arg)
{
	for (int k = 0; k < 12; k++) {
		cr_post(r, MLX5_OPCODE_RDMA_WRITE, 3);
		if (k % 5 == 4) {
			cr_publish(r);
			CHECK(gdak_capture_poll(c) > 0);
		}
	}
	cr_publish(r);
}

static inline void cr_pi_wrap_check(const struct cr_file *f, const struct cr_ring *r,
				    const char *bin, const char *path, unsigned failed0, int arg)
{
	cr_check_wqes(f, r, 0, 12);
	CHECK_EQ(r->exp_idx[6], 0);
	CHECK_EQ(cr_lost(f, r->d.qpn, "sq", NULL), 0);
}

static const struct cr_case cr_cases[] = {
	{"basic", 16, 16, 0, 0, cr_basic_play, cr_basic_check},
	{"sq_loss", 16, 16, 0, 0, cr_sq_loss_play, cr_sq_loss_check},
	{"cq_loss_dbrec", 16, 16, 0, CR_CQ_DBREC, cr_cq_loss_play, cr_cq_loss_check},
	{"cq_loss_cons_idx", 16, 16, 0, CR_CQ_CONS_IDX, cr_cq_loss_play, cr_cq_loss_check},
	{"cq_slot_reused", 16, 16, 0, CR_CQ_REUSE, cr_cq_loss_play, cr_cq_loss_check},
	{"pi_wrap", 16, 16, 65530, 0, cr_pi_wrap_play, cr_pi_wrap_check},
};

#endif

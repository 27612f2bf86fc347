/* SPDX-License-Identifier: MIT */
/*
 * capture_loss.c - a capture that falls behind the NIC model, made
 * deterministic with the pause hook: the capture thread is parked while the
 * device posts and completes more than a ring of work, then one pass runs.
 *
 *   round 1: forty 1-WQEBB writes through a 16-WQEBB SQ and a 16-entry CQ,
 *            each completed and consumed: 24 WQEBBs and 24 CQEs lost, the
 *            last 16 of each captured;
 *   round 2: ten 3-WQEBB inline writes (30 WQEBBs): 14 overwritten plus the
 *            tail of a WQE the walk cannot start in = 15 lost, WQEs at
 *            55, 58, ..., 67 captured; no CQE lost (10 < 16).
 *
 * The losses must be loss records with exactly these counts, and gdak-trace
 * --errors must show them.
 *
 * usage: gdak_capture_loss GDAK_TRACE_BINARY
 */
#include <errno.h>

#include "capture_pair.h"
#include "capture_util.h"
#include "gdak_test.h"
#include "nic_util.h"

static void write_and_complete(struct nu_qp *q, void *src, uint32_t len, uint32_t lkey,
			       void *dst, uint32_t rkey, unsigned flags)
{
	struct gdak_mlx5_cqe_fields f;

	nu_post_rdma(q, MLX5_OPCODE_RDMA_WRITE, src, len, lkey, (uintptr_t)dst, rkey, 0,
		     NU_SIG | flags);
	nu_ring(q);
	REQUIRE_EQ(nu_poll(q, 0, &f, 10000), 0);
	CHECK_EQ(f.opcode, MLX5_CQE_REQ);
}

/* The loss texts of the file for qpn, in order, joined by '|'. */
static void loss_texts(const struct cr_file *f, uint32_t qpn, char *out, size_t cap)
{
	size_t n = 0;

	out[0] = '\0';
	for (size_t i = 0; i < f->n; i++) {
		const struct cr_rec *r = &f->r[i];
		int is_loss = (r->type == GDAK_TREC_FAULT && !strcmp(r->name, "capture_lost") &&
			       r->qpn == qpn) ||
			      (r->type == GDAK_TREC_NOTE && i && f->r[i - 1].type == GDAK_TREC_LOST &&
			       f->r[i - 1].qpn == qpn);
		if (is_loss)
			n += (size_t)snprintf(out + n, n < cap ? cap - n : 0, "%.*s|",
					      (int)(strchr(r->text, ':') ? strchr(r->text, ':') - r->text
									 : (long)strlen(r->text)),
					      r->text);
	}
}

int main(int argc, char **argv)
{
	struct gdak_qp_attr attr = {.sq_depth = 16, .cq_depth = 16, .handler = GDAK_DEV_DB_DB};
	struct gdak_capture_stats st;
	struct gdak_capture *cap;
	struct cp_pair p;
	struct cr_file f;
	char *path, *out, texts[512];
	uint64_t recs;
	size_t from = 0;
	long i;
	int rc;

	if (argc != 2) {
		fprintf(stderr, "usage: %s GDAK_TRACE_BINARY\n", argv[0]);
		return 2;
	}
	unsetenv("GDAK_TRACE");
	gdak_set_log_level(GDAK_LOG_ERROR);	/* the losses are warned about */
	path = cr_tmpname("loss");
	REQUIRE(path);
	cp_open(&p, 4096, &attr);
	REQUIRE(p.a.d->max_inline >= 100);
	REQUIRE_EQ(gdak_capture_open(p.ctx, path, 0, &cap), 0);
	REQUIRE_EQ(gdak_capture_add_qp(cap, p.a.qp), 0);

	/* round 1 */
	REQUIRE_EQ(gdak_capture_pause(cap, 1), 0);
	for (int k = 0; k < 40; k++)
		write_and_complete(&p.a, p.src, 64, gdak_mr_lkey(p.ms), p.dst, gdak_mr_rkey(p.md), 0);
	CHECK(gdak_capture_poll(cap) > 0);
	REQUIRE_EQ(gdak_capture_get_stats(cap, &st), 0);
	CHECK_EQ(st.lost_wqebbs, 24);
	CHECK_EQ(st.lost_cqes, 24);
	CHECK_EQ(st.wqes, 16);
	CHECK_EQ(st.cqes, 16);

	/* round 2 (still paused: the pass above was the caller's) */
	gdak_test_fill(p.src, 4096, 3);
	for (int k = 0; k < 10; k++)
		write_and_complete(&p.a, p.src + 100 * k, 100, 0, p.dst, gdak_mr_rkey(p.md), NU_INLINE);
	CHECK(gdak_capture_poll(cap) > 0);
	REQUIRE_EQ(gdak_capture_get_stats(cap, &st), 0);
	CHECK_EQ(st.lost_wqebbs, 24 + 15);
	CHECK_EQ(st.lost_cqes, 24);
	CHECK_EQ(st.wqes, 16 + 5);
	CHECK_EQ(st.cqes, 16 + 10);
	CHECK_EQ(st.loss_records, 3);
	REQUIRE_EQ(gdak_capture_pause(cap, 0), 0);

	/* the thread runs again and keeps up: nothing more lost */
	write_and_complete(&p.a, p.src, 64, gdak_mr_lkey(p.ms), p.dst, gdak_mr_rkey(p.md), 0);
	CHECK_EQ(gdak_capture_close(cap), 0);	/* qp still alive: the last pass is safe */

	cp_close(&p);

	cr_read_back(path, &f);
	loss_texts(&f, p.a.qpn, texts, sizeof(texts));
	CHECK_STR(texts, "sq lost=24 WQEBBs first=0 (ring of 16)|scq lost=24 CQEs first=0 "
			 "(ring of 16)|sq lost=15 WQEBBs first=40 (ring of 16)|");
	CHECK_EQ(cr_lost(&f, p.a.qpn, "sq", &recs), 39);
	CHECK(recs == 0 || recs == 39 + 24);
	CHECK_EQ(cr_lost(&f, p.a.qpn, "scq", NULL), 24);
	/* the WQEs captured: 24..39, then 55, 58, ..., 67, then 70 */
	for (unsigned k = 0; k < 22; k++) {
		unsigned want = k < 16 ? 24 + k : k < 21 ? 55 + 3 * (k - 16) : 70;

		i = cr_next(&f, &from, GDAK_TREC_WQE, p.a.qpn);
		REQUIRE(i >= 0);
		CHECK_EQ(f.r[i].idx, want);
		CHECK_EQ(f.r[i].len, (k >= 16 && k < 21 ? 3 : 1) * 64);
	}
	CHECK_EQ(cr_next(&f, &from, GDAK_TREC_WQE, p.a.qpn), -1);
	cr_free(&f);

	out = cr_tool(argv[1], "--errors", path, &rc);
	REQUIRE(out);
	CHECK_EQ(rc, 0);
	CHECK(strstr(out, "sq lost=24 WQEBBs") != NULL);
	CHECK(strstr(out, "scq lost=24 CQEs") != NULL);
	CHECK(strstr(out, "sq lost=15 WQEBBs") != NULL);
	if (gdak_test_failed)
		printf("gdak-trace --errors output:\n%s", out);
	free(out);
	unlink(path);
	free(path);
	return gdak_test_end();
}

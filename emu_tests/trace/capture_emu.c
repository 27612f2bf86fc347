/* SPDX-License-Identifier: MIT */
/*
 * capture_emu.c - the ring capture on the NIC model, its thread running,
 * while a host thread (the "device") posts a known sequence: RDMA writes
 * (gather and inline), a write with immediate, a read, fetch-add and
 * compare-swap (two of them under one doorbell), a SEND into a receive
 * WQE, a write with an unknown rkey (error CQE) and one more write (flushed).
 *
 * The capture is checked against what was posted (every WQE's bytes and
 * index) and what the device polled (each CQE's opcode, wqe_counter,
 * syndrome), and against the NIC model's own trace of the same run: the two
 * views must hold the same WQE bytes and the same CQE bytes.  Nothing may be
 * lost (the rings never wrap here, so this does not depend on timing), and
 * gdak-trace must decode the capture.
 *
 * usage: gdak_capture_emu GDAK_TRACE_BINARY
 */
#include <errno.h>
#include <time.h>

#include <gdak/dev/types.h>
#include <gdak/nic.h>

#include "capture_pair.h"
#include "capture_util.h"
#include "gdak_test.h"
#include "nic_util.h"

#define MAXW 32

struct posted {
	uint16_t idx;
	uint32_t len;
	uint8_t bytes[16 * 64];
};

struct polled {
	uint8_t opcode, syndrome;
	uint16_t wqe_counter;
};

static struct posted wq[MAXW];
static unsigned nwq;
static struct polled cq[MAXW];
static unsigned ncq;

/* Snapshot what the last post put into the ring (before the NIC runs it). */
static void snap(struct nu_qp *q)
{
	struct posted *p = &wq[nwq++];
	const uint8_t *ring = q->d->sq_buf;

	p->idx = (uint16_t)q->last;
	p->len = (uint32_t)(q->pi - q->last) * 64;
	for (uint64_t i = q->last; i < q->pi; i++)
		memcpy(p->bytes + (i - q->last) * 64,
		       ring + (size_t)(i & (q->d->sq_wqebb_cnt - 1)) * 64, 64);
}

static void poll_one(struct nu_qp *q, int rcq, uint8_t want_op)
{
	struct gdak_mlx5_cqe_fields f;

	REQUIRE_EQ(nu_poll(q, rcq, &f, 10000), 0);
	CHECK_EQ(f.opcode, want_op);
	if (!rcq) {
		cq[ncq].opcode = f.opcode;
		cq[ncq].syndrome = f.syndrome;
		cq[ncq++].wqe_counter = f.wqe_counter;
	}
}

/* The WQE and CQE records of qpn in a file, in order. */
static void split(const struct cr_file *f, uint32_t qpn, long *w, unsigned *nw, long *c,
		  unsigned *nc)
{
	*nw = *nc = 0;
	for (size_t i = 0; i < f->n; i++) {
		if (f->r[i].qpn != qpn)
			continue;
		if (f->r[i].type == GDAK_TREC_WQE && *nw < MAXW)
			w[(*nw)++] = (long)i;
		if (f->r[i].type == GDAK_TREC_CQE && *nc < MAXW)
			c[(*nc)++] = (long)i;
	}
}

int main(int argc, char **argv)
{
	struct gdak_qp_attr attr = {.sq_depth = 64, .cq_depth = 64, .rq_depth = 16,
				    .handler = GDAK_DEV_DB_DB};
	struct gdak_capture_stats st;
	struct gdak_capture *cap;
	struct cp_pair p;
	struct cr_file cf, nf;
	uint64_t *word;
	char *path, *nicpath, *out, needle[64];
	long cw[MAXW], cc[MAXW], nw_[MAXW], nc_[MAXW];
	unsigned ncw, ncc, nnw, nnc;
	int rc, nic_view;
	uint32_t lk, rk, a_scqn, b_rcqn;

	if (argc != 2) {
		fprintf(stderr, "usage: %s GDAK_TRACE_BINARY\n", argv[0]);
		return 2;
	}
	unsetenv("GDAK_TRACE");
	path = cr_tmpname("emu");
	nicpath = cr_tmpname("emu-nic");
	REQUIRE(path && nicpath);
	rc = gdak_nic_set_trace(nicpath);
	nic_view = rc == 0;
	if (rc && rc != -ENOTSUP)
		REQUIRE_EQ(rc, 0);

	cp_open(&p, 8192, &attr);
	REQUIRE_EQ(gdak_capture_open(p.ctx, path, 0, &cap), 0);
	REQUIRE_EQ(gdak_capture_add_qp(cap, p.a.qp), 0);
	REQUIRE_EQ(gdak_capture_add_qp(cap, p.b.qp), 0);
	CHECK_EQ(gdak_capture_add_qp(cap, p.a.qp), -EEXIST);
	lk = gdak_mr_lkey(p.ms);
	rk = gdak_mr_rkey(p.md);
	gdak_test_fill(p.src, 8192, 5);
	word = (uint64_t *)(void *)(p.dst + 4096);
	*word = 40;

	nu_post_rdma(&p.a, MLX5_OPCODE_RDMA_WRITE, p.src, 256, lk, (uintptr_t)p.dst, rk, 0, NU_SIG);
	snap(&p.a);
	nu_ring(&p.a);
	poll_one(&p.a, 0, MLX5_CQE_REQ);
	/* the thread writes what it has to the file once the rings are quiet:
	 * a hung program's capture is readable (bounded wait, no timing asserted) */
	{
		uint64_t end = gdak_test_now_ns() + 20000000000ull;
		int seen = 0;

		while (!seen && gdak_test_now_ns() < end) {
			struct timespec ms10 = {0, 10000000};
			size_t from = 0;

			if (!cr_read(path, &cf)) {
				seen = cr_next(&cf, &from, GDAK_TREC_CQE, p.a.qpn) >= 0;
				CHECK(!cf.clean);	/* no STATS yet: still being written */
				cr_free(&cf);
			}
			if (!seen)
				nanosleep(&ms10, NULL);
		}
		CHECK(seen);
	}
	nu_post_rdma(&p.a, MLX5_OPCODE_RDMA_WRITE, p.src + 256, 100, 0, (uintptr_t)p.dst + 256, rk, 0,
		     NU_SIG | NU_INLINE);
	snap(&p.a);
	nu_ring(&p.a);
	poll_one(&p.a, 0, MLX5_CQE_REQ);
	nu_post_recv(&p.b, p.dst + 2048, 512, gdak_mr_lkey(p.md));
	nu_post_rdma(&p.a, MLX5_OPCODE_RDMA_WRITE_IMM, p.src + 512, 64, lk, (uintptr_t)p.dst + 512, rk,
		     gdak_htobe32(0xc0ffee), NU_SIG);
	snap(&p.a);
	nu_ring(&p.a);
	poll_one(&p.a, 0, MLX5_CQE_REQ);
	poll_one(&p.b, 1, MLX5_CQE_RESP_WR_IMM);
	nu_post_rdma(&p.a, MLX5_OPCODE_RDMA_READ, p.src + 1024, 128, lk, (uintptr_t)p.dst, rk, 0, NU_SIG);
	snap(&p.a);
	nu_ring(&p.a);
	poll_one(&p.a, 0, MLX5_CQE_REQ);
	CHECK_MEM(p.src + 1024, p.dst, 128);
	/* two atomics under one doorbell */
	nu_post_atomic(&p.a, MLX5_OPCODE_ATOMIC_FA, p.src + 2048, lk, (uintptr_t)word, rk, 2, 0, NU_SIG);
	snap(&p.a);
	nu_post_atomic(&p.a, MLX5_OPCODE_ATOMIC_CS, p.src + 2056, lk, (uintptr_t)word, rk, 7, 42,
		       NU_SIG);
	snap(&p.a);
	nu_ring(&p.a);
	poll_one(&p.a, 0, MLX5_CQE_REQ);
	poll_one(&p.a, 0, MLX5_CQE_REQ);
	CHECK_EQ(*word, 7);
	nu_post_recv(&p.b, p.dst + 3072, 512, gdak_mr_lkey(p.md));
	nu_post_send(&p.a, MLX5_OPCODE_SEND, p.src + 3072, 200, lk, 0, NU_SIG);
	snap(&p.a);
	nu_ring(&p.a);
	poll_one(&p.a, 0, MLX5_CQE_REQ);
	poll_one(&p.b, 1, MLX5_CQE_RESP_SEND);
	/* an unknown rkey: error CQE, the QP goes to ERR, the next is flushed */
	nu_post_rdma(&p.a, MLX5_OPCODE_RDMA_WRITE, p.src, 64, lk, (uintptr_t)p.dst, 0xbad00, 0, NU_SIG);
	snap(&p.a);
	nu_ring(&p.a);
	poll_one(&p.a, 0, MLX5_CQE_REQ_ERR);
	CHECK_EQ(cq[ncq - 1].syndrome, MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR);
	nu_post_rdma(&p.a, MLX5_OPCODE_RDMA_WRITE, p.src, 64, lk, (uintptr_t)p.dst, rk, 0, NU_SIG);
	snap(&p.a);
	nu_ring(&p.a);
	poll_one(&p.a, 0, MLX5_CQE_REQ_ERR);
	CHECK_EQ(cq[ncq - 1].syndrome, MLX5_CQE_SYNDROME_WR_FLUSH_ERR);

	a_scqn = p.a.d->scq.cqn;	/* the descriptors go with the QPs */
	b_rcqn = p.b.d->rcq.cqn;

	/* the last pass over each QP, then the file is completed */
	CHECK_EQ(gdak_capture_remove_qp(cap, p.a.qp), 0);
	CHECK_EQ(gdak_capture_remove_qp(cap, p.b.qp), 0);
	REQUIRE_EQ(gdak_capture_get_stats(cap, &st), 0);
	CHECK_EQ(gdak_capture_close(cap), 0);
	CHECK_EQ(st.lost_wqebbs + st.lost_cqes, 0);
	CHECK_EQ(st.wqes, nwq);
	CHECK_EQ(st.cqes, ncq + 2);
	CHECK(st.doorbells >= 1 && st.doorbells <= 8);

	cp_close(&p);
	if (nic_view)
		REQUIRE_EQ(gdak_nic_set_trace(NULL), 0);

	/* the capture against what was posted and polled */
	cr_read_back(path, &cf);
	split(&cf, p.a.qpn, cw, &ncw, cc, &ncc);
	CHECK_EQ(ncw, nwq);
	for (unsigned k = 0; k < ncw && k < nwq; k++) {
		const struct cr_rec *r = &cf.r[cw[k]];
		CHECK_EQ(r->idx, wq[k].idx);
		CHECK_EQ(r->len, wq[k].len);
		CHECK_EQ(r->thread, GDAK_CAPTURE_THREAD_ID);
		if (r->len == wq[k].len)
			CHECK_MEM(r->bytes, wq[k].bytes, r->len);
	}
	CHECK_EQ(ncc, ncq);
	for (unsigned k = 0; k < ncc && k < ncq; k++) {
		struct gdak_mlx5_cqe_fields f;

		gdak_mlx5_cqe_decode(cf.r[cc[k]].bytes, &f);
		CHECK_EQ(f.opcode, cq[k].opcode);
		CHECK_EQ(f.wqe_counter, cq[k].wqe_counter);
		CHECK_EQ(f.syndrome, cq[k].syndrome);
		CHECK_EQ(cf.r[cc[k]].cq_index, k);
		CHECK_EQ(cf.r[cc[k]].cqn, a_scqn);
	}
	split(&cf, p.b.qpn, cw, &ncw, cc, &ncc);
	CHECK_EQ(ncw, 0);
	CHECK_EQ(ncc, 2);
	for (unsigned k = 0; k < ncc && k < 2; k++) {
		struct gdak_mlx5_cqe_fields f;

		gdak_mlx5_cqe_decode(cf.r[cc[k]].bytes, &f);
		CHECK_EQ(f.opcode, k ? MLX5_CQE_RESP_SEND : MLX5_CQE_RESP_WR_IMM);
		CHECK_EQ(cf.r[cc[k]].cqn, b_rcqn);
	}
	CHECK_EQ(cr_lost(&cf, p.a.qpn, "sq", NULL) + cr_lost(&cf, p.a.qpn, "scq", NULL), 0);

	/* the NIC model's own trace of the same run: the same bytes */
	if (nic_view) {
		REQUIRE_EQ(cr_read(nicpath, &nf), 0);
		for (int side = 0; side < 2; side++) {
			uint32_t qpn = side ? p.b.qpn : p.a.qpn;

			split(&cf, qpn, cw, &ncw, cc, &ncc);
			split(&nf, qpn, nw_, &nnw, nc_, &nnc);
			/* the NIC traces the WQEs it fetched: all but the one
			 * flushed after the error, which the capture saw posted */
			CHECK_EQ(nnw + (side ? 0 : 1), ncw);
			for (unsigned k = 0; k < ncw && k < nnw; k++) {
				CHECK_EQ(nf.r[nw_[k]].idx, cf.r[cw[k]].idx);
				CHECK_EQ(nf.r[nw_[k]].len, cf.r[cw[k]].len);
				if (nf.r[nw_[k]].len == cf.r[cw[k]].len)
					CHECK_MEM(nf.r[nw_[k]].bytes, cf.r[cw[k]].bytes,
						  cf.r[cw[k]].len);
			}
			CHECK_EQ(nnc, ncc);
			for (unsigned k = 0; k < ncc && k < nnc; k++) {
				CHECK_EQ(nf.r[nc_[k]].cq_index, cf.r[cc[k]].cq_index);
				CHECK_MEM(nf.r[nc_[k]].bytes, cf.r[cc[k]].bytes, 64);
			}
		}
		cr_free(&nf);
	}
	cr_free(&cf);

	/* gdak-trace reads the capture */
	out = cr_tool(argv[1], "", path, &rc);
	REQUIRE(out);
	CHECK_EQ(rc, 0);
	snprintf(needle, sizeof(needle), "qp 0x%06x", p.a.qpn);
	{
		const char *e[] = {"t256", needle, "CQE REQ_ERR", "syndrome=REMOTE_ACCESS_ERR", NULL};
		const char *w[] = {"t256", needle, "WQE", "ATOMIC_CS", NULL};
		const char *q[] = {"t256", needle, "QP", "ring capture", NULL};
		CHECK(gdak_test_has_line(out, e));
		CHECK(gdak_test_has_line(out, w));
		CHECK(gdak_test_has_line(out, q));
	}
	if (gdak_test_failed)
		printf("gdak-trace output:\n%s", out);
	free(out);
	out = cr_tool(argv[1], "--summary", path, &rc);
	REQUIRE(out);
	CHECK_EQ(rc, 0);
	{
		const char *first[] = {"first error:", "REMOTE_ACCESS_ERR", NULL};
		CHECK(gdak_test_has_line(out, first));
	}
	if (gdak_test_failed)
		printf("gdak-trace --summary output:\n%s", out);
	free(out);

	unlink(path);
	unlink(nicpath);
	free(path);
	free(nicpath);
	return gdak_test_end();
}

/* SPDX-License-Identifier: MIT */
/*
 * verbs_inline.c - the engine in the program's own thread (docs/VERBS.md
 * "Threads"): gdak's libibverbs executes a post_send's WQEs in the poster
 * and drives an empty poll_cq's QPs in the poller when the NIC thread's
 * engine lock is free, and kicks the NIC thread when it is not.
 *
 * Shown without timing: with the NIC thread parked (gdak_ibv_engine_park:
 * it runs nothing and leaves the lock free) a WRITE of inline data, a
 * 64 KiB WRITE, a SEND into a receive WQE and a READ complete with their
 * data byte for byte - the program's calls did all of it, and every post
 * and every progressing poll is counted as inline.  With the engine held
 * by the test (gdak_ibv_engine_hold: the lock taken) a post falls back:
 * it returns 0, is counted busy, and nothing executes however often the
 * CQ is polled (the destination is unchanged); given back, the NIC thread
 * executes it.  Then two threads post and poll two QP pairs at once
 * (posters contending for the lock with each other and the NIC thread)
 * and every WRITE lands.  The test turns GDAK_IBV_INLINE on (the library's
 * default is off); with it 0 (the ctest twin) nothing runs inline and the
 * same traffic completes through the NIC thread.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <endian.h>

#include <infiniband/verbs.h>

#include "gdak_test.h"
#include "gdak_verbs.h"
#include "gv_private.h"

#define BUF 65536
#define ACCESS_RWA (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC)

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static union ibv_gid gid;

struct pair {
	struct ibv_cq *cq;
	struct ibv_qp *a, *b;
	uint8_t *abuf, *bbuf;
	struct ibv_mr *amr, *bmr;
};

static struct ibv_qp *make_qp(struct ibv_cq *cq)
{
	struct ibv_qp_init_attr a;

	memset(&a, 0, sizeof(a));
	a.send_cq = cq;
	a.recv_cq = cq;
	a.qp_type = IBV_QPT_RC;
	a.cap.max_send_wr = 64;
	a.cap.max_recv_wr = 16;
	a.cap.max_send_sge = 1;
	a.cap.max_recv_sge = 1;
	a.cap.max_inline_data = 64;
	return ibv_create_qp(pd, &a);
}

static void pair_make(struct pair *p, uint32_t psn)
{
	struct gdak_vt_path pa, pb;

	p->cq = ibv_create_cq(ctx, 256, NULL, NULL, 0);
	REQUIRE(p->cq != NULL);
	p->a = make_qp(p->cq);
	p->b = make_qp(p->cq);
	REQUIRE(p->a && p->b);
	p->abuf = aligned_alloc(4096, BUF);
	p->bbuf = aligned_alloc(4096, BUF);
	REQUIRE(p->abuf && p->bbuf);
	memset(p->abuf, 0, BUF);
	memset(p->bbuf, 0, BUF);
	p->amr = ibv_reg_mr(pd, p->abuf, BUF, IBV_ACCESS_LOCAL_WRITE | ACCESS_RWA);
	p->bmr = ibv_reg_mr(pd, p->bbuf, BUF, IBV_ACCESS_LOCAL_WRITE | ACCESS_RWA);
	REQUIRE(p->amr && p->bmr);
	pa = gdak_vt_path_1024(gid, p->b->qp_num, psn + 1000, 4);
	pb = gdak_vt_path_1024(gid, p->a->qp_num, psn, 4);
	pa.sq_psn = psn;
	pb.sq_psn = psn + 1000;
	REQUIRE_EQ(gdak_vt_to_init(p->a, ACCESS_RWA), 0);
	REQUIRE_EQ(gdak_vt_to_init(p->b, ACCESS_RWA), 0);
	REQUIRE_EQ(gdak_vt_to_rtr(p->a, &pa, 0), 0);
	REQUIRE_EQ(gdak_vt_to_rtr(p->b, &pb, 0), 0);
	REQUIRE_EQ(gdak_vt_to_rts(p->a, &pa, 0), 0);
	REQUIRE_EQ(gdak_vt_to_rts(p->b, &pb, 0), 0);
}

static void pair_free(struct pair *p)
{
	gdak_vt_destroy(&(struct gdak_vt_objs){
		.cq = p->cq, .qp = { p->a, p->b }, .mr = { p->amr, p->bmr } });
	free(p->abuf);
	free(p->bbuf);
}

/* one signaled WR from a (its sge over abuf[off, off + len)) */
static int post_a(struct pair *p, enum ibv_wr_opcode op, uint64_t wr_id, unsigned flags,
		  uint32_t off, uint32_t len, uint32_t roff)
{
	struct ibv_sge sg = { .addr = (uintptr_t)p->abuf + off,
			      .length = len,
			      .lkey = p->amr->lkey };

	return gdak_vt_post_rdma(p->a, op, wr_id, &sg, (uintptr_t)p->bbuf + roff, p->bmr->rkey,
				 flags);
}

/* Poll until the completion of wr_id on qp (other completions of the CQ -
 * the receive side's - are checked by the caller through *other). */
static void wait_for(struct pair *p, uint64_t wr_id, struct ibv_wc *out, struct ibv_wc *other)
{
	for (;;) {
		struct ibv_wc wc;
		int r = ibv_poll_cq(p->cq, 1, &wc);

		REQUIRE(r >= 0);
		if (r == 0)
			continue;
		if (wc.wr_id == wr_id && wc.qp_num == p->a->qp_num) {
			*out = wc;
			return;
		}
		REQUIRE(other != NULL);
		*other = wc;
	}
}

static void fill(uint8_t *b, uint32_t len, uint32_t seed)
{
	for (uint32_t i = 0; i < len; i++)
		b[i] = (uint8_t)(seed * 131u + i * 7u + (i >> 8));
}

static void stats(struct gdak_ibv_engine_stats *s)
{
	gdak_ibv_engine_stats(s);
}

/* Parked NIC thread: the program's calls do everything. */
static void test_parked(struct pair *p)
{
	struct gdak_ibv_engine_stats s0, s1;
	struct ibv_wc wc, rwc;
	struct ibv_sge rsg;
	struct ibv_recv_wr rwr, *rbad = NULL;

	REQUIRE_EQ(gdak_ibv_engine_park(ctx, 1), 0);
	CHECK_EQ(gdak_ibv_engine_park(ctx, 1), EALREADY);
	stats(&s0);

	/* WRITE, inline data */
	fill(p->abuf, 48, 1);
	REQUIRE_EQ(post_a(p, IBV_WR_RDMA_WRITE, 1, IBV_SEND_INLINE, 0, 48, 100), 0);
	wait_for(p, 1, &wc, NULL);
	CHECK_EQ(wc.status, IBV_WC_SUCCESS);
	CHECK_EQ(wc.opcode, IBV_WC_RDMA_WRITE);
	CHECK_EQ(memcmp(p->bbuf + 100, p->abuf, 48), 0);

	/* WRITE, 64 KiB: 64 packets of MTU 1024, the window's ACKs included */
	fill(p->abuf, BUF, 2);
	REQUIRE_EQ(post_a(p, IBV_WR_RDMA_WRITE, 2, 0, 0, BUF, 0), 0);
	wait_for(p, 2, &wc, NULL);
	CHECK_EQ(wc.status, IBV_WC_SUCCESS);
	CHECK_EQ(memcmp(p->bbuf, p->abuf, BUF), 0);

	/* SEND into b's receive WQE: both completions on the one CQ */
	rsg = (struct ibv_sge){ .addr = (uintptr_t)p->bbuf, .length = 4096, .lkey = p->bmr->lkey };
	memset(&rwr, 0, sizeof(rwr));
	rwr.wr_id = 77;
	rwr.sg_list = &rsg;
	rwr.num_sge = 1;
	REQUIRE_EQ(ibv_post_recv(p->b, &rwr, &rbad), 0);
	fill(p->abuf, 3000, 3);
	memset(&rwc, 0, sizeof(rwc));
	REQUIRE_EQ(post_a(p, IBV_WR_SEND, 3, 0, 0, 3000, 0), 0);
	wait_for(p, 3, &wc, &rwc);
	CHECK_EQ(wc.status, IBV_WC_SUCCESS);
	CHECK_EQ(wc.opcode, IBV_WC_SEND);
	if (rwc.wr_id != 77) /* the receive completion may come second */
		wait_for(p, 77, &rwc, NULL);
	CHECK_EQ(rwc.wr_id, 77);
	CHECK_EQ(rwc.status, IBV_WC_SUCCESS);
	CHECK_EQ(rwc.byte_len, 3000);
	CHECK_EQ(memcmp(p->bbuf, p->abuf, 3000), 0);

	/* READ of b's pattern into a */
	fill(p->bbuf, 8192, 4);
	memset(p->abuf, 0, 8192);
	REQUIRE_EQ(post_a(p, IBV_WR_RDMA_READ, 4, 0, 0, 8192, 0), 0);
	wait_for(p, 4, &wc, NULL);
	CHECK_EQ(wc.status, IBV_WC_SUCCESS);
	CHECK_EQ(wc.opcode, IBV_WC_RDMA_READ);
	CHECK_EQ(wc.byte_len, 8192);
	CHECK_EQ(memcmp(p->abuf, p->bbuf, 8192), 0);

	stats(&s1);
	/* every post found the lock free: the NIC thread is parked and this
	 * is the only other thread */
	CHECK_EQ(s1.post_inline - s0.post_inline, 4);
	CHECK(s1.poll_inline > s0.poll_inline);
	CHECK_EQ(s1.busy, s0.busy);
	REQUIRE_EQ(gdak_ibv_engine_park(ctx, 0), 0);
}

/* The engine held: a post falls back to the NIC thread, which runs it
 * once given the lock back. */
static void test_held(struct pair *p)
{
	struct gdak_ibv_engine_stats s0, s1;
	struct ibv_wc wc;
	int empty = 1;

	memset(p->bbuf, 0, 4096);
	fill(p->abuf, 4096, 5);
	REQUIRE_EQ(gdak_ibv_engine_hold(ctx, 1), 0);
	stats(&s0);
	REQUIRE_EQ(post_a(p, IBV_WR_RDMA_WRITE, 5, 0, 0, 4096, 0), 0);
	stats(&s1);
	CHECK_EQ(s1.post_inline, s0.post_inline);
	CHECK_EQ(s1.busy - s0.busy, 1);
	/* nothing can execute while the engine is held, however often the
	 * program polls (each poll's try-lock fails too) */
	for (int i = 0; i < 1000; i++)
		if (ibv_poll_cq(p->cq, 1, &wc) != 0)
			empty = 0;
	CHECK(empty);
	CHECK_EQ(p->bbuf[0], 0);
	CHECK_EQ(p->bbuf[4095], 0);
	stats(&s1);
	CHECK_EQ(s1.poll_inline, s0.poll_inline);
	CHECK_EQ(s1.busy - s0.busy, 1001);
	REQUIRE_EQ(gdak_ibv_engine_hold(ctx, 0), 0);
	wait_for(p, 5, &wc, NULL);
	CHECK_EQ(wc.status, IBV_WC_SUCCESS);
	CHECK_EQ(memcmp(p->bbuf, p->abuf, 4096), 0);
}

/* Two threads, each posting WRITEs on its own pair and polling its CQ:
 * the posters' try-locks meet each other's runs and the NIC thread's. */
#define MT_N 300
static void *mt_thread(void *arg)
{
	struct pair *p = arg;
	int bad = 0;

	for (uint32_t k = 0; k < MT_N; k++) {
		struct ibv_wc wc;
		uint32_t off = (k % 16) * 1024;

		p->abuf[off] = (uint8_t)k;
		memset(p->abuf + off + 1, (int)(k * 3u), 1023);
		int r;

		if (post_a(p, IBV_WR_RDMA_WRITE, 1000 + k, 0, off, 1024, off))
			return (void *)1;
		/* no REQUIRE off the main thread: errors are counted */
		while ((r = ibv_poll_cq(p->cq, 1, &wc)) == 0)
			;
		if (r < 0 || wc.wr_id != 1000 + k || wc.status != IBV_WC_SUCCESS ||
		    memcmp(p->bbuf + off, p->abuf + off, 1024))
			bad++;
	}
	return (void *)(intptr_t)bad;
}

static void test_threads(struct pair *p, struct pair *q)
{
	pthread_t t1, t2;
	void *r1, *r2;

	REQUIRE_EQ(pthread_create(&t1, NULL, mt_thread, p), 0);
	REQUIRE_EQ(pthread_create(&t2, NULL, mt_thread, q), 0);
	REQUIRE_EQ(pthread_join(t1, &r1), 0);
	REQUIRE_EQ(pthread_join(t2, &r2), 0);
	CHECK_EQ((intptr_t)r1, 0);
	CHECK_EQ((intptr_t)r2, 0);
}

int main(void)
{
	const char *env = getenv("GDAK_IBV_INLINE");
	int inl = !(env && (!strcmp(env, "0") || !strcmp(env, "off")));
	struct gdak_ibv_engine_stats s0, s1;

	/* the library reads it at the first post or poll: on unless the
	 * twin turned it off */
	if (inl)
		setenv("GDAK_IBV_INLINE", "1", 1);
	struct pair p, q;
	struct ibv_wc wc;

	ctx = gdak_vt_open_first();
	pd = ibv_alloc_pd(ctx);
	REQUIRE(pd != NULL);
	REQUIRE_EQ(ibv_query_gid(ctx, 1, 0, &gid), 0);
	pair_make(&p, 0x100);
	pair_make(&q, 0x200);

	if (inl) {
		test_parked(&p);
		test_held(&p);
		test_threads(&p, &q);
	} else {
		stats(&s0);
		fill(p.abuf, BUF, 9);
		REQUIRE_EQ(post_a(&p, IBV_WR_RDMA_WRITE, 9, 0, 0, BUF, 0), 0);
		wait_for(&p, 9, &wc, NULL);
		CHECK_EQ(wc.status, IBV_WC_SUCCESS);
		CHECK_EQ(memcmp(p.bbuf, p.abuf, BUF), 0);
		test_threads(&p, &q);
		stats(&s1);
		CHECK_EQ(s1.post_inline, s0.post_inline);
		CHECK_EQ(s1.poll_inline, s0.poll_inline);
		CHECK_EQ(s1.busy, s0.busy);
	}
	pair_free(&p);
	pair_free(&q);
	REQUIRE_EQ(ibv_dealloc_pd(pd), 0);
	REQUIRE_EQ(ibv_close_device(ctx), 0);
	return gdak_test_end();
}

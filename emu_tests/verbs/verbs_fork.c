/* SPDX-License-Identifier: MIT */
/*
 * verbs_fork.c - fork() with the engine in the program's thread
 * (GDAK_IBV_INLINE=1, docs/VERBS.md "Threads").
 *
 * rdma-core: ibv_fork_init() makes the parent's registrations survive a
 * fork (here always: IBV_FORK_UNNEEDED), and the child may use none of the
 * parent's RDMA resources.  The child has copies of the parent's QPs, its
 * engine lock and the device's 4791 socket itself; were it to run that
 * copied engine, it would execute a WQE the parent never posted with the
 * parent's next PSN, or read the parent's packets off the socket.  Shown
 * without timing, with the parent's NIC thread parked (its engine lock
 * free at the fork, so a copied lock would be free in the child too) and
 * every packet through the socket (GDAK_UDP_LOCAL=0): the child posts a
 * WRITE of its own pattern and polls; nothing completes there and nothing
 * is counted inline.  A second child leaves by exit() (the library's exit
 * handlers must not wait for threads it does not have).  The parent then
 * polls (which drains the socket): nothing arrives, the target is
 * unchanged, and its own WRITE with the PSN the child would have used
 * lands byte for byte.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "gdak_test.h"
#include "gdak_verbs.h"
#include "gv_private.h"

#define BUF 8192
#define ACCESS_RWA (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC)

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_cq *cq;
static struct ibv_qp *qa, *qb;
static uint8_t *abuf, *bbuf;
static struct ibv_mr *amr, *bmr;

static struct ibv_qp *make_qp(void)
{
	return gdak_vt_rc_qp(pd, cq, 16, 4);
}

static int post_write(uint64_t wr_id, uint32_t len)
{
	struct ibv_sge sg = { .addr = (uintptr_t)abuf, .length = len, .lkey = amr->lkey };

	return gdak_vt_post_rdma(qa, IBV_WR_RDMA_WRITE, wr_id, &sg, (uintptr_t)bbuf, bmr->rkey, 0);
}

static void fill(uint8_t *b, uint32_t len, uint32_t seed)
{
	for (uint32_t i = 0; i < len; i++)
		b[i] = (uint8_t)(seed * 131u + i * 7u + (i >> 8) + 1);
}

static int all_zero(const uint8_t *b, uint32_t len)
{
	for (uint32_t i = 0; i < len; i++)
		if (b[i])
			return 0;
	return 1;
}

/* The child: post and poll the parent's QP; its exit status says what it
 * saw (no REQUIRE here: the parent's test counts). */
static int child(void)
{
	struct gdak_ibv_engine_stats s0, s1;
	struct ibv_wc wc;
	int seen = 0;

	gdak_ibv_engine_stats(&s0);
	fill(abuf, BUF, 7);
	(void)post_write(7, BUF); /* what it returns is not the point */
	for (int i = 0; i < 2000; i++)
		if (ibv_poll_cq(cq, 1, &wc) != 0)
			seen = 1;
	gdak_ibv_engine_stats(&s1);
	if (seen)
		return 10;
	if (s1.post_inline != s0.post_inline || s1.poll_inline != s0.poll_inline)
		return 11;
	return 0;
}

static int wait_child(pid_t pid)
{
	int st = 0;

	REQUIRE_EQ(waitpid(pid, &st, 0), pid);
	REQUIRE(WIFEXITED(st));
	return WEXITSTATUS(st);
}

int main(void)
{
	struct gdak_vt_path pa, pb;
	struct ibv_wc wc;
	pid_t pid;
	int empty = 1, n;

	setenv("GDAK_IBV_INLINE", "1", 1);
	setenv("GDAK_UDP_LOCAL", "0", 1);
	CHECK_EQ(ibv_fork_init(), 0);
	CHECK_EQ(ibv_is_fork_initialized(), IBV_FORK_UNNEEDED);

	ctx = gdak_vt_open_first();
	pd = ibv_alloc_pd(ctx);
	REQUIRE(pd != NULL);
	cq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	REQUIRE(cq != NULL);
	qa = make_qp();
	qb = make_qp();
	REQUIRE(qa && qb);
	abuf = aligned_alloc(4096, BUF);
	bbuf = aligned_alloc(4096, BUF);
	REQUIRE(abuf && bbuf);
	memset(abuf, 0, BUF);
	memset(bbuf, 0, BUF);
	amr = ibv_reg_mr(pd, abuf, BUF, IBV_ACCESS_LOCAL_WRITE | ACCESS_RWA);
	bmr = ibv_reg_mr(pd, bbuf, BUF, IBV_ACCESS_LOCAL_WRITE | ACCESS_RWA);
	REQUIRE(amr && bmr);
	{
		union ibv_gid gid;

		REQUIRE_EQ(ibv_query_gid(ctx, 1, 0, &gid), 0);
		pa = gdak_vt_path_1024(gid, qb->qp_num, 0x3000, 4);
		pb = gdak_vt_path_1024(gid, qa->qp_num, 0x2000, 4);
	}
	pa.sq_psn = 0x2000;
	pb.sq_psn = 0x3000;
	REQUIRE_EQ(gdak_vt_to_init(qa, ACCESS_RWA), 0);
	REQUIRE_EQ(gdak_vt_to_init(qb, ACCESS_RWA), 0);
	REQUIRE_EQ(gdak_vt_to_rtr(qa, &pa, 0), 0);
	REQUIRE_EQ(gdak_vt_to_rtr(qb, &pb, 0), 0);
	REQUIRE_EQ(gdak_vt_to_rts(qa, &pa, 0), 0);
	REQUIRE_EQ(gdak_vt_to_rts(qb, &pb, 0), 0);

	/* the NIC thread lets go of its engine lock and runs nothing: only
	 * the program's calls move the engine, in the parent and (were it
	 * allowed) in the child */
	REQUIRE_EQ(gdak_ibv_engine_park(ctx, 1), 0);

	/* one WRITE through the parent's own calls first: the path works */
	fill(abuf, 64, 1);
	REQUIRE_EQ(post_write(1, 64), 0);
	while ((n = ibv_poll_cq(cq, 1, &wc)) == 0)
		;
	REQUIRE_EQ(n, 1);
	CHECK_EQ(wc.wr_id, 1);
	CHECK_EQ(wc.status, IBV_WC_SUCCESS);
	CHECK_EQ(memcmp(bbuf, abuf, 64), 0);
	memset(bbuf, 0, BUF);

	fflush(NULL);
	pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0)
		_exit(child());
	CHECK_EQ(wait_child(pid), 0);

	pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0)
		exit(0);
	CHECK_EQ(wait_child(pid), 0);

	/* the parent drains the socket: had the child sent its WRITE, it
	 * would execute now */
	for (int i = 0; i < 2000; i++)
		if (ibv_poll_cq(cq, 1, &wc) != 0)
			empty = 0;
	CHECK(empty);
	CHECK(all_zero(bbuf, BUF));

	/* the parent's next WRITE, with the PSN the child's would have had */
	fill(abuf, BUF, 2);
	REQUIRE_EQ(post_write(2, BUF), 0);
	while ((n = ibv_poll_cq(cq, 1, &wc)) == 0)
		;
	REQUIRE_EQ(n, 1);
	CHECK_EQ(wc.wr_id, 2);
	CHECK_EQ(wc.status, IBV_WC_SUCCESS);
	CHECK_EQ(memcmp(bbuf, abuf, BUF), 0);

	REQUIRE_EQ(gdak_ibv_engine_park(ctx, 0), 0);
	gdak_vt_destroy(&(struct gdak_vt_objs){ .cq = cq, .qp = { qa, qb }, .mr = { amr, bmr } });
	free(abuf);
	free(bbuf);
	return gdak_test_end();
}

/* SPDX-License-Identifier: MIT */
/*
 * verbs_lib_2proc.c - gdak's libibverbs between two processes, as two hosts
 * would use it: each process opens mlx5_0 (and so claims its own 127.0.0.N),
 * they swap GID, QPN, PSN, address and rkey over a socketpair the way
 * perftest swaps them over TCP, and the client runs a 64 KiB WRITE (many
 * packets), a READ of the server's pattern, a FETCH_ADD, a 3000-byte
 * SEND_IMM into the server's receive WQE, then a WRITE with a bad rkey
 * (REM_ACCESS_ERR).  The server checks what landed, byte for byte, after
 * its receive completion: RC executes in order, so that completion follows
 * everything before the SEND in the server's own NIC thread too (which is
 * what orders the server's reads after the NIC's writes, for TSan).
 *
 * With VERBS_TEST_PARK=1 and GDAK_IBV_INLINE=1 (gdak.verbs.lib_2proc_parked,
 * the engine in the program's calls turned on) both processes park
 * their NIC threads once connected (gdak_ibv_engine_park): the client's
 * posts execute in the client and its polls take the server's ACKs and
 * READ responses off its 4791 socket, the server's polls execute the
 * client's requests - the two programs' own calls are the whole engine,
 * as rxe's are the kernel's (docs/VERBS.md "Threads").  The server
 * unparks at its receive completion (it then blocks in read(), which
 * drives nothing), the client before it tears down.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <endian.h>

#include <infiniband/verbs.h>

#include "gdak_test.h"
#include "gdak_verbs.h"
#include "gv_private.h"

#define BUF (256 * 1024)

static int parked; /* VERBS_TEST_PARK=1 */

/* both sides, once connected: the NIC thread runs nothing from here on;
 * a byte each way over fd then holds the client's first post until the
 * server has parked too (else the server's NIC thread may take the
 * client's requests and the server's polls find nothing to drive) */
static void park(struct gdak_vt_side *s, int fd)
{
	/* both QPs are in RTS before the client posts: a responder still in
	 * RTR already executes requests, and the client's last WRITE (a bad
	 * rkey) moves it to ERR, so a server slower to connect than the
	 * client to finish would find RTR -> RTS refused (CI saw it) */
	REQUIRE_EQ(gdak_test_swap_byte(fd, 1), 1);
	if (!parked)
		return;
	REQUIRE_EQ(gdak_ibv_engine_park(s->ctx, 1), 0);
	REQUIRE_EQ(gdak_test_swap_byte(fd, 1), 1);
}

/* every post ran in this thread (posts), polls drove the engine */
static void unpark(struct gdak_vt_side *s, uint64_t posts)
{
	struct gdak_ibv_engine_stats st;

	if (!parked)
		return;
	gdak_ibv_engine_stats(&st);
	CHECK_EQ(st.post_inline, posts);
	CHECK(st.poll_inline > 0);
	REQUIRE_EQ(gdak_ibv_engine_park(s->ctx, 0), 0);
}

/* the server posts its receive WQE before the client can send */
static void server_recv(struct gdak_vt_side *s)
{
	struct ibv_sge sg = { (uintptr_t)s->buf + 131072, 4096, s->mr->lkey };
	struct ibv_recv_wr rw = { .wr_id = 77, .sg_list = &sg, .num_sge = 1 }, *bad;

	REQUIRE_EQ(ibv_post_recv(s->qp, &rw, &bad), 0);
}

#define ACCESS                                                                       \
	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | \
	 IBV_ACCESS_REMOTE_ATOMIC)

static int post1(struct gdak_vt_side *s, enum ibv_wr_opcode op, uint64_t id, uint64_t loff,
		 uint32_t len, uint64_t roff, uint32_t rkey)
{
	struct ibv_sge sg = { (uintptr_t)s->buf + loff, len, s->mr->lkey };
	struct ibv_send_wr w, *bad;

	memset(&w, 0, sizeof(w));
	w.wr_id = id;
	w.opcode = op;
	w.send_flags = IBV_SEND_SIGNALED;
	w.sg_list = &sg;
	w.num_sge = 1;
	w.imm_data = htobe32(0x1234abcd);
	if (op == IBV_WR_ATOMIC_FETCH_AND_ADD) {
		w.wr.atomic.remote_addr = s->peer.addr + roff;
		w.wr.atomic.rkey = rkey;
		w.wr.atomic.compare_add = 5;
	} else {
		w.wr.rdma.remote_addr = s->peer.addr + roff;
		w.wr.rdma.rkey = rkey;
	}
	return ibv_post_send(s->qp, &w, &bad);
}

static void client(int fd)
{
	struct gdak_vt_side s;
	struct ibv_wc wc;
	uint8_t *expect = malloc(BUF);

	gdak_vt_side_open(&s, BUF, 1, ACCESS, 0x111111);
	gdak_vt_side_connect(&s, fd);
	park(&s, fd);
	REQUIRE(expect != NULL);
	gdak_test_fill(expect, BUF, 2); /* the server's pattern */
	CHECK_EQ(post1(&s, IBV_WR_RDMA_WRITE, 1, 0, 65536, 0, s.peer.rkey), 0);
	REQUIRE_EQ(gdak_vt_wait_wc(s.cq, &wc), 1);
	CHECK_EQ(wc.status, IBV_WC_SUCCESS);
	CHECK_EQ(wc.wr_id, 1);
	CHECK_EQ(post1(&s, IBV_WR_RDMA_READ, 2, 65536, 32768, 65536, s.peer.rkey), 0);
	REQUIRE_EQ(gdak_vt_wait_wc(s.cq, &wc), 1);
	CHECK_EQ(wc.status, IBV_WC_SUCCESS);
	CHECK_EQ(wc.opcode, IBV_WC_RDMA_READ);
	CHECK_MEM(s.buf + 65536, expect + 65536, 32768);
	CHECK_EQ(post1(&s, IBV_WR_ATOMIC_FETCH_AND_ADD, 4, 200000, 8, 200000, s.peer.rkey), 0);
	REQUIRE_EQ(gdak_vt_wait_wc(s.cq, &wc), 1);
	CHECK_EQ(wc.status, IBV_WC_SUCCESS);
	{
		uint64_t orig, was;

		memcpy(&orig, expect + 200000, 8);
		memcpy(&was, s.buf + 200000, 8);
		CHECK_EQ(be64toh(was), orig);
	}
	CHECK_EQ(post1(&s, IBV_WR_SEND_WITH_IMM, 3, 100000, 3000, 0, 0), 0);
	REQUIRE_EQ(gdak_vt_wait_wc(s.cq, &wc), 1);
	CHECK_EQ(wc.status, IBV_WC_SUCCESS);
	CHECK_EQ(wc.opcode, IBV_WC_SEND);
	CHECK_EQ(post1(&s, IBV_WR_RDMA_WRITE, 5, 0, 64, 0, s.peer.rkey + 0x4400), 0);
	REQUIRE_EQ(gdak_vt_wait_wc(s.cq, &wc), 1);
	CHECK_EQ(wc.wr_id, 5);
	CHECK_EQ(wc.status, IBV_WC_REM_ACCESS_ERR);
	unpark(&s, 5);
	CHECK_EQ(gdak_test_swap_byte(fd, 1), 1); /* done, for the server's ack */
	gdak_vt_side_close(&s);
	free(expect);
}

static void server(int fd)
{
	struct gdak_vt_side s;
	struct ibv_wc wc;
	uint8_t *cli = malloc(BUF), *mine = malloc(BUF);
	uint64_t v, orig;

	gdak_vt_side_open(&s, BUF, 2, ACCESS, 0x222222);
	server_recv(&s);
	gdak_vt_side_connect(&s, fd);
	park(&s, fd);
	REQUIRE(cli && mine);
	gdak_test_fill(cli, BUF, 1);
	gdak_test_fill(mine, BUF, 2);
	REQUIRE_EQ(gdak_vt_wait_wc(s.cq, &wc), 1);
	CHECK_EQ(wc.status, IBV_WC_SUCCESS);
	CHECK_EQ(wc.wr_id, 77);
	CHECK_EQ(wc.opcode, IBV_WC_RECV);
	CHECK_EQ(wc.byte_len, 3000);
	CHECK(wc.wc_flags & IBV_WC_WITH_IMM);
	CHECK_EQ(be32toh(wc.imm_data), 0x1234abcd);
	unpark(&s, 0); /* the server posts nothing */
	/* our ack for the client's done: all it did has landed */
	CHECK_EQ(gdak_test_swap_byte(fd, 1), 1);
	CHECK_MEM(s.buf, cli, 65536);		       /* the WRITE */
	CHECK_MEM(s.buf + 131072, cli + 100000, 3000); /* the SEND */
	memcpy(&orig, mine + 200000, 8);
	memcpy(&v, s.buf + 200000, 8);
	CHECK_EQ(v, orig + 5);			       /* the FETCH_ADD */
	CHECK_MEM(s.buf + 65536, mine + 65536, 65536); /* READ source untouched */
	gdak_vt_side_close(&s);
	free(cli);
	free(mine);
}

int main(void)
{
	parked = getenv("VERBS_TEST_PARK") && !strcmp(getenv("VERBS_TEST_PARK"), "1");
	return gdak_test_2proc(server, client);
}

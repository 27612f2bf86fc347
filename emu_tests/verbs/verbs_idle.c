/* SPDX-License-Identifier: MIT */
/*
 * verbs_idle.c - gdak's libibverbs lets its NIC thread sleep, and a
 * sleeping NIC still serves.
 *
 * Two processes (as verbs_lib_2proc.c), one RC QP each, connected.  Then:
 *
 * 1. Idle: both stay connected with nothing posted for a second, the
 *    client in sleep(), the server blocked in read() on the socketpair.
 *    Each process looks at its own NIC thread ("gdak-nic0") in
 *    /proc/self/task: the context switches it made and the CPU time it
 *    took over that second.  A thread that blocks in the kernel when idle
 *    makes next to none (nothing wakes it); one that polls, yields or
 *    naps - the back-off a QP rung in memory needs - makes hundreds to
 *    thousands, and a spinning one takes the whole second of CPU.  So the
 *    test asserts on switches and CPU consumed, not on any latency.
 * 2. Passive target: the server makes no verbs call at all (it waits in
 *    read()) while the client WRITEs 8 B, 4 KiB, 64 KiB and 200000 B (many
 *    packets) into its buffer and polls its own CQ.  Its NIC thread, asleep,
 *    must be woken by each packet.  Then the client SENDs one last message
 *    into the receive WQE the server posted before the idle second, and the
 *    server checks every byte after that receive completion: RC executes in
 *    order, so the completion follows the WRITEs in the server's own NIC
 *    thread.  The client's word over the socketpair alone would not order
 *    the server's reads after its NIC thread's writes, as TSan sees it: the
 *    chain (NIC writes, ACK, client CQE, socket) runs through the other
 *    process.
 * 3. Idle again after traffic: the same checks (the back-off after work
 *    must not come back either).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <endian.h>

#include <infiniband/verbs.h>

#include "gdak_test.h"
#include "gdak_test_proc.h"
#include "gdak_verbs.h"

#define BUF (512 * 1024)
/* what an idle second may cost the NIC thread: a handful of wakeups (a
 * control-path call, the peer's last ACK), and far less than the ~1000
 * timer wakeups per second of the polling back-off */
#define IDLE_MAX_SWITCHES 50
#define IDLE_MAX_CPU_PCT 10

struct nic_sample {
	unsigned long long switches, cpu_ticks;
	uint64_t t_ns;
};

/* The calling process's NIC thread: context switches and utime + stime
 * (clock ticks) from /proc/self/task/TID.  0, or -1 when there is none. */
static int nic_sample(struct nic_sample *s)
{
	int tid = gdak_test_nic_tid();
	char name[16];

	if (tid < 0)
		return -1;
	snprintf(name, sizeof(name), "%d", tid);
	if (gdak_test_task_usage(name, &s->switches, &s->cpu_ticks))
		return -1;
	s->t_ns = gdak_test_now_ns();
	return 0;
}

static void idle_check(const char *who, const struct nic_sample *a, const struct nic_sample *b)
{
	unsigned long long sw = b->switches - a->switches, ticks = b->cpu_ticks - a->cpu_ticks;
	uint64_t wall = b->t_ns - a->t_ns;
	double cpu_ns = (double)ticks * 1e9 / (double)sysconf(_SC_CLK_TCK);

	fprintf(stderr, "%s: idle NIC thread over %.3f s: %llu switches, %llu ticks of CPU\n", who,
		(double)wall * 1e-9, sw, ticks);
	CHECK(wall >= 900000000ull);
	CHECK(sw < IDLE_MAX_SWITCHES);
	CHECK(cpu_ns * 100.0 < (double)wall * IDLE_MAX_CPU_PCT);
}

/* the client's WRITEs: local offset = remote offset, each its own pattern region */
static const struct {
	uint32_t off, len;
} writes[] = { { 0, 8 }, { 4096, 4096 }, { 65536, 65536 }, { 200000, 200000 } };
/* the last SEND: its source at the client, its receive WQE at the server
 * (past the WRITEs' regions) */
#define SEND_SRC 450000
#define SEND_DST 460000
#define SEND_LEN 64

/* One idle second of the calling process, sampled around sleep() (client)
 * or around the peer's messages (server, blocked in read()).  The client
 * sleeps only once the server has taken its first sample, so that each
 * side's window holds the whole second however late a process wakes. */
static void idle_client(int fd, const char *who)
{
	struct nic_sample a, b;
	char m = 'i', r;

	REQUIRE_EQ(nic_sample(&a), 0);
	REQUIRE_EQ(gdak_test_xfer(fd, &r, &m, 1), 0); /* the server has sampled */
	sleep(1);
	REQUIRE_EQ(nic_sample(&b), 0);
	REQUIRE_EQ(gdak_test_xfer(fd, &r, &m, 1), 0); /* the server samples, then answers */
	idle_check(who, &a, &b);
}

static void idle_server(int fd, const char *who)
{
	struct nic_sample a, b;
	char m, r = 'o';

	REQUIRE_EQ(read(fd, &m, 1), 1);
	REQUIRE_EQ(nic_sample(&a), 0);
	REQUIRE_EQ(write(fd, &r, 1), 1);
	REQUIRE_EQ(read(fd, &m, 1), 1);
	REQUIRE_EQ(nic_sample(&b), 0);
	REQUIRE_EQ(write(fd, &r, 1), 1);
	idle_check(who, &a, &b);
}

static void client(int fd)
{
	struct gdak_vt_side s;
	struct ibv_wc wc;

	gdak_vt_side_open(&s, BUF, 1, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE, 0x313131);
	gdak_vt_side_connect(&s, fd);
	idle_client(fd, "client, connected");
	for (unsigned i = 0; i < sizeof(writes) / sizeof(writes[0]); i++) {
		struct ibv_sge sg = { (uintptr_t)s.buf + writes[i].off, writes[i].len, s.mr->lkey };
		int n;

		REQUIRE_EQ(gdak_vt_post_rdma(s.qp, IBV_WR_RDMA_WRITE, 10 + i, &sg,
					     s.peer.addr + writes[i].off, s.peer.rkey, 0),
			   0);
		while ((n = ibv_poll_cq(s.cq, 1, &wc)) == 0)
			;
		REQUIRE_EQ(n, 1);
		CHECK_EQ(wc.status, IBV_WC_SUCCESS);
		CHECK_EQ(wc.wr_id, 10 + i);
	}
	{
		struct ibv_sge sg = { (uintptr_t)s.buf + SEND_SRC, SEND_LEN, s.mr->lkey };
		struct ibv_send_wr w = { .wr_id = 20,
					 .sg_list = &sg,
					 .num_sge = 1,
					 .opcode = IBV_WR_SEND,
					 .send_flags = IBV_SEND_SIGNALED },
				   *bad;

		REQUIRE_EQ(ibv_post_send(s.qp, &w, &bad), 0);
		REQUIRE_EQ(gdak_vt_wait_wc(s.cq, &wc), 1);
		CHECK_EQ(wc.status, IBV_WC_SUCCESS);
		CHECK_EQ(wc.wr_id, 20);
		CHECK_EQ(wc.opcode, IBV_WC_SEND);
	}
	REQUIRE_EQ(gdak_test_swap_byte(fd, 'd'), 'c'); /* done, for the server's ack */
	idle_client(fd, "client, after traffic");
	gdak_vt_side_close(&s);
}

static void server(int fd)
{
	struct gdak_vt_side s;
	struct ibv_wc wc;
	uint8_t *cli = malloc(BUF), *mine = malloc(BUF);
	char done = 0, ack = 'c';
	uint32_t end = 0;

	gdak_vt_side_open(&s, BUF, 2, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE, 0x424242);
	gdak_vt_side_connect(&s, fd);
	REQUIRE(cli && mine);
	gdak_test_fill(cli, BUF, 1);
	gdak_test_fill(mine, BUF, 2);
	{
		/* before the idle second, so that the client's SEND finds it */
		struct ibv_sge sg = { (uintptr_t)s.buf + SEND_DST, SEND_LEN, s.mr->lkey };
		struct ibv_recv_wr rw = { .wr_id = 30, .sg_list = &sg, .num_sge = 1 }, *bad;

		REQUIRE_EQ(ibv_post_recv(s.qp, &rw, &bad), 0);
	}
	idle_server(fd, "server, connected");
	/* passive: no verbs call until the client says it is done */
	REQUIRE_EQ(read(fd, &done, 1), 1);
	CHECK_EQ(done, 'd');
	/* what orders the reads below after the NIC thread's writes */
	REQUIRE_EQ(gdak_vt_wait_wc(s.cq, &wc), 1);
	CHECK_EQ(wc.status, IBV_WC_SUCCESS);
	CHECK_EQ(wc.wr_id, 30);
	CHECK_EQ(wc.opcode, IBV_WC_RECV);
	CHECK_EQ(wc.byte_len, SEND_LEN);
	CHECK_MEM(s.buf + SEND_DST, cli + SEND_SRC, SEND_LEN);
	for (unsigned i = 0; i < sizeof(writes) / sizeof(writes[0]); i++) {
		CHECK_MEM(s.buf + writes[i].off, cli + writes[i].off, writes[i].len);
		end = writes[i].off + writes[i].len;
	}
	/* and nothing else moved: between the regions and after them */
	CHECK_MEM(s.buf + 8, mine + 8, 4096 - 8);
	CHECK_MEM(s.buf + 8192, mine + 8192, 65536 - 8192);
	CHECK_MEM(s.buf + 131072, mine + 131072, 200000 - 131072);
	CHECK_MEM(s.buf + end, mine + end, SEND_DST - end);
	CHECK_MEM(s.buf + SEND_DST + SEND_LEN, mine + SEND_DST + SEND_LEN,
		  BUF - SEND_DST - SEND_LEN);
	REQUIRE_EQ(write(fd, &ack, 1), 1);
	idle_server(fd, "server, after traffic");
	gdak_vt_side_close(&s);
	free(cli);
	free(mine);
}

int main(void)
{
	/* the default polling (spin mode spins by request), one NIC thread */
	setenv("GDAK_POLL", "adaptive", 1);
	setenv("GDAK_NIC_THREADS", "1", 1);
	return gdak_test_2proc(server, client);
}

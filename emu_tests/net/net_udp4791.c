/* SPDX-License-Identifier: MIT */
/*
 * net_udp4791.c - gdak.net.udp_4791: "emu:udp" puts every QP on a loopback
 * address of its own (127.0.0.N) at UDP port 4791, so Wireshark decodes the
 * traffic as RoCE without being told a port:
 *  - two contexts in this process and two in a forked child, at the same
 *    time: every QP's address distinct, every port 4791;
 *  - a WRITE within a context and one across the two contexts: bytes and
 *    CQEs exact;
 *  - the trace of it, read by tshark with no option: InfiniBand frames
 *    between 127.0.0.x:4791 addresses (skipped without tshark);
 *  - "emu:udp:ephemeral": 127.0.0.1 and an ephemeral port, as before.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <sys/wait.h>

#include "gdak_test.h"
#include "nic_util.h"

#define NQ 4

struct side {
	struct gdak_ctx *ctx[2];
	struct nu_qp q[2][2];
	uint8_t *buf[2];
	struct gdak_mr *mr[2];
};

static uint32_t addr_of(struct gdak_qp *qp, uint16_t *port)
{
	struct gdak_qp_info i;
	uint32_t a;

	REQUIRE_EQ(gdak_qp_info(qp, &i), 0);
	memcpy(&a, i.gid + 12, 4);
	*port = i.udp_port;
	return a;
}

static void write_ok(struct nu_qp *from, struct gdak_mr *lmr, uint8_t *src, struct gdak_mr *rmr,
		     uint8_t *dst, unsigned seed)
{
	struct gdak_mlx5_cqe_fields f = { 0 };

	gdak_test_fill(src, 3000, seed);
	memset(dst, 0, 3000);
	nu_post_rdma(from, MLX5_OPCODE_RDMA_WRITE, src, 3000, gdak_mr_lkey(lmr), (uintptr_t)dst,
		     gdak_mr_rkey(rmr), 0, NU_SIG);
	nu_ring(from);
	REQUIRE_EQ(nu_poll(from, 0, &f, 30000), 0);
	CHECK_EQ(f.opcode, MLX5_CQE_REQ);
	CHECK_EQ(f.syndrome, 0);
	CHECK_MEM(dst, src, 3000);
}

/* Two contexts, a pair in each; the addresses of the four QPs into a[]. */
/* Counts the frames tshark decodes with a BTH opcode. */
static void count_roce(int op, void *arg)
{
	if (op >= 0)
		(*(unsigned *)arg)++;
}

static void open_side(struct side *s, uint32_t *a)
{
	for (int c = 0; c < 2; c++) {
		uint16_t port;

		REQUIRE_EQ(gdak_open("emu:udp", &s->ctx[c]), 0);
		REQUIRE_EQ(gdak_mem_alloc(s->ctx[c], 1 << 16, GDAK_MEM_HOST, (void **)&s->buf[c]),
			   0);
		REQUIRE_EQ(gdak_mr_reg(s->ctx[c], s->buf[c], 1 << 16, GDAK_ACCESS_ALL, &s->mr[c]),
			   0);
		REQUIRE_EQ(nu_pair(s->ctx[c], NULL, &s->q[c][0], &s->q[c][1]), 0);
		for (int k = 0; k < 2; k++) {
			a[2 * c + k] = addr_of(s->q[c][k].qp, &port);
			CHECK_EQ(port, 4791);
			CHECK_EQ(ntohl(a[2 * c + k]) >> 24, 127);
		}
	}
}

static void close_side(struct side *s)
{
	for (int c = 0; c < 2; c++) {
		nu_destroy(&s->q[c][0]);
		nu_destroy(&s->q[c][1]);
		CHECK_EQ(gdak_mr_dereg(s->mr[c]), 0);
		CHECK_EQ(gdak_mem_free(s->ctx[c], s->buf[c]), 0);
		gdak_close(s->ctx[c]);
	}
}

int main(void)
{
	struct side s;
	uint32_t mine[NQ], theirs[NQ];
	struct gdak_qp *x, *y;
	struct gdak_qp_info ix, iy;
	struct nu_qp cx, cy;
	char *trace = gdak_test_tmpname("net", "4791.pcapng");
	int p2c[2], c2p[2], st, r;
	uint16_t port;
	pid_t pid;
	unsigned ib = 0, bad = 0;

	gdak_set_log_level(GDAK_LOG_ERROR);
	unsetenv("GDAK_FAULTS");
	unsetenv("GDAK_TRACE");
	/* fork before any context exists: the child must not inherit NIC threads */
	REQUIRE(pipe(p2c) == 0 && pipe(c2p) == 0);
	pid = fork();
	REQUIRE(pid >= 0);
	if (!pid) {
		/* the child holds its addresses until the parent has compared */
		char go;

		open_side(&s, mine);
		REQUIRE(write(c2p[1], mine, sizeof(mine)) == (ssize_t)sizeof(mine));
		REQUIRE(read(p2c[0], &go, 1) == 1);
		write_ok(&s.q[0][0], s.mr[0], s.buf[0], s.mr[0], s.buf[0] + 8192, 1);
		close_side(&s);
		_exit(gdak_test_failed ? 1 : 0);
	}
	r = gdak_open("emu:udp", &s.ctx[0]);
	if (r) {
		fprintf(stderr, "emu:udp cannot open here (%s): skipped\n", gdak_strerror(r));
		kill(pid, SIGKILL);
		waitpid(pid, &st, 0);
		return 77;
	}
	gdak_close(s.ctx[0]);
	REQUIRE_EQ(gdak_nic_set_trace(trace), 0);
	open_side(&s, mine);
	REQUIRE(read(c2p[0], theirs, sizeof(theirs)) == (ssize_t)sizeof(theirs));
	for (int i = 0; i < NQ; i++)
		for (int j = 0; j < NQ; j++) {
			CHECK(mine[i] != theirs[j]);
			if (i != j)
				CHECK(mine[i] != mine[j]);
		}
	REQUIRE(write(p2c[1], "g", 1) == 1);
	write_ok(&s.q[0][0], s.mr[0], s.buf[0], s.mr[0], s.buf[0] + 8192, 2);
	write_ok(&s.q[1][1], s.mr[1], s.buf[1], s.mr[1], s.buf[1] + 8192, 3);
	/* across the contexts */
	REQUIRE_EQ(gdak_qp_create(s.ctx[0], NULL, &x), 0);
	REQUIRE_EQ(gdak_qp_create(s.ctx[1], NULL, &y), 0);
	REQUIRE_EQ(gdak_qp_info(x, &ix), 0);
	REQUIRE_EQ(gdak_qp_info(y, &iy), 0);
	CHECK(memcmp(ix.gid, iy.gid, 16) != 0);
	REQUIRE_EQ(gdak_qp_connect(x, &iy), 0);
	REQUIRE_EQ(gdak_qp_connect(y, &ix), 0);
	nu_qp_from(&cx, x);
	nu_qp_from(&cy, y);
	write_ok(&cx, s.mr[0], s.buf[0] + 16384, s.mr[1], s.buf[1] + 24576, 4);
	nu_destroy(&cx);
	nu_destroy(&cy);
	close_side(&s);
	REQUIRE(waitpid(pid, &st, 0) == pid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	REQUIRE_EQ(gdak_nic_set_trace(NULL), 0);

	/* Wireshark's own RoCE dissector, no "-d udp.port==...,rroce" */
	if (system("tshark -v >/dev/null 2>&1") != 0) {
		printf("no tshark here: the decode check is skipped\n");
	} else {
		/* every UDP frame goes to 4791 and decodes as RoCE */
		unsigned udp = gdak_test_tshark_opcodes(trace, "udp", NULL, NULL);

		gdak_test_tshark_opcodes(trace, "udp.dstport==4791", count_roce, &ib);
		bad = udp - ib;
		CHECK(ib > 0);
		CHECK_EQ(bad, 0);
		printf("tshark: %u RoCE frames on port 4791, %u others\n", ib, bad);
	}
	unlink(trace);
	free(trace);

	/* the ephemeral mode of before */
	REQUIRE_EQ(gdak_open("emu:udp:ephemeral", &s.ctx[0]), 0);
	REQUIRE_EQ(gdak_qp_create(s.ctx[0], NULL, &x), 0);
	CHECK_EQ(addr_of(x, &port), htonl(0x7f000001));
	CHECK(port != 4791 && port != 0);
	gdak_qp_destroy(x);
	gdak_close(s.ctx[0]);
	return gdak_test_end();
}

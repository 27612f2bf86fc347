/* SPDX-License-Identifier: MIT */
/*
 * net_direct_port.c - whom the direct path (nic_model/tr_udp_direct.c)
 * takes a request from: the published responder's connected peer, matched
 * on its address, UDP port and QPN together.  Two tr_udp users on one
 * address (a gdak libibverbs device on port 4791, a program of the gdak API
 * with a port of its own per QP) may have QPs of one number; only the one
 * the responder is connected to may write into its memory.
 *
 * The owner (this process) publishes a segment for a made-up address with
 * one responder, connected to QP 0x123456 at PEER:4791, and one MR; a
 * sender (this program exec'd: a process of its own) maps the segment and
 * asks for a WRITE as QP 0x123456 at PEER from port 4792 (refused: 0), as
 * QP 0x123457 at PEER:4791 (refused), then as the peer itself (taken).
 * The owner checks that only the last one's bytes landed and that its
 * responder's expected PSN and count moved by one request.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>
#include <arpa/inet.h>

#include "gdak_test.h"
#include "roce.h"
#include "tr_udp.h"

#define PORT 1 /* no device's (theirs is 4791): a name of this test's alone */
#define PEER_QPN 0x123456u
#define OWN_QPN 0x42u
#define PSN 0x777u
#define RKEY 0x1234u
#define LEN 64

static void pattern(uint8_t *p, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		p[i] = (uint8_t)(0xa0 + i);
}

/* A WRITE of the pattern to va through segment d, as QP qpn at
 * addr:port; what udp_direct_rdma says (-EPERM: the test skips) */
static int try_write(struct udp_dseg *d, uint32_t addr, uint16_t port, uint32_t qpn, uint64_t va,
		     uint32_t *np)
{
	static struct udp_direct_qp *cache;
	uint8_t data[LEN];
	struct iovec v = { data, LEN };
	int r;

	pattern(data, LEN);
	r = udp_direct_rdma(d, &cache, 0, OWN_QPN, addr, port, qpn, PSN, 1024, RKEY, va, &v, 1, LEN,
			    np);
	if (r == -EPERM) {
		udp_direct_put(d);
		fprintf(stderr, "SKIP: process_vm_* into the owner refused\n");
		exit(77);
	}
	return r;
}

static int sender(char **argv)
{
	uint32_t own = (uint32_t)strtoul(argv[2], NULL, 0),
		 peer = (uint32_t)strtoul(argv[3], NULL, 0);
	uint64_t va = strtoull(argv[4], NULL, 0);
	struct udp_dseg *d;
	uint32_t np = 0;

	d = udp_direct_peer(own, PORT);
	REQUIRE(d != NULL);
	/* the peer's address and QPN, another port: not the peer */
	CHECK_EQ(try_write(d, peer, 4792, PEER_QPN, va, &np), 0);
	/* the port, another QPN */
	CHECK_EQ(try_write(d, peer, 4791, PEER_QPN + 1, va, &np), 0);
	/* another address */
	CHECK_EQ(try_write(d, peer ^ htonl(1), 4791, PEER_QPN, va, &np), 0);
	/* the peer */
	CHECK_EQ(try_write(d, peer, 4791, PEER_QPN, va, &np), 1);
	CHECK_EQ(np, 1u);
	udp_direct_put(d);
	return gdak_test_end();
}

int main(int argc, char **argv)
{
	static const struct roce_ops ops;
	static uint8_t buf[4096], want[4096];
	uint32_t own = htonl(0x7ffa0000u | ((uint32_t)getpid() & 0xffff));
	uint32_t peer = htonl(0x7ff90000u | ((uint32_t)getpid() & 0xffff));
	struct roce_cfg cfg = { .mtu = 1024 };
	struct roce_path path = { .sip = own, .dip = peer, .sport = PORT, .dport = 4791 };
	struct roce_ctx rctx;
	struct roce_qp rqp;
	struct udp_direct_qp *q;
	struct udp_dseg *d;
	int32_t state = GDAK_QPS_RTS;
	char a1[16], a2[16], a3[32];
	int status = 0;
	pid_t pid;

	if (argc == 5 && !strcmp(argv[1], "sender"))
		return sender(argv);
	memset(&rctx, 0, sizeof(rctx));
	memset(&rqp, 0, sizeof(rqp));
	roce_ctx_init(&rctx, &ops, NULL);
	REQUIRE_EQ(roce_qp_init(&rqp, &rctx, OWN_QPN, &cfg), 0);
	REQUIRE_EQ(roce_qp_connect(&rqp, PEER_QPN, 0x10, PSN, 1024, &path), 0);
	REQUIRE_EQ(udp_direct_publish(own, PORT), 0);
	d = udp_direct_own(own, PORT);
	REQUIRE(d != NULL);
	q = udp_direct_qp_add(d, OWN_QPN, peer, 4791, PEER_QPN, 1024, &rqp, &state);
	REQUIRE(q != NULL);
	REQUIRE_EQ(udp_direct_lock(d), 0);
	udp_direct_qp_ok(q, 1);
	udp_direct_unlock(d);
	udp_direct_mr_set(own, PORT, RKEY, (uintptr_t)buf, (uintptr_t)buf + sizeof(buf),
			  GDAK_ACCESS_REMOTE_WRITE);

	snprintf(a1, sizeof(a1), "%u", own);
	snprintf(a2, sizeof(a2), "%u", peer);
	snprintf(a3, sizeof(a3), "%llu", (unsigned long long)(uintptr_t)(buf + 100));
	fflush(NULL);
	pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0) {
		execl("/proc/self/exe", argv[0], "sender", a1, a2, a3, (char *)NULL);
		_exit(127);
	}
	REQUIRE_EQ(waitpid(pid, &status, 0), pid);
	REQUIRE(WIFEXITED(status));
	if (WEXITSTATUS(status) == 77)
		return 77;
	CHECK_EQ(WEXITSTATUS(status), 0);
	/* the peer's WRITE alone, once */
	pattern(want + 100, LEN);
	CHECK_MEM(buf, want, sizeof(buf));
	CHECK_EQ(rqp.rseq->epsn, PSN + 1);
	CHECK_EQ(udp_direct_qp_in(q), 1u);

	udp_direct_mr_clear(own, PORT, RKEY);
	udp_direct_qp_del(d, q, &rqp);
	udp_direct_put(d);
	roce_qp_fini(&rqp);
	roce_ctx_fini(&rctx);
	return gdak_test_end();
}

/* SPDX-License-Identifier: MIT */
/*
 * ex_put_signal.c - put+signal between two processes: each opens its own NIC
 * model on "emu:udp" (RoCEv2 over UDP), they swap QP info and buffer keys
 * over the TCP bootstrap, the initiator writes 4 KiB and bumps a signal word
 * in one call, the target waits for the signal and then reads the data.
 *
 *   ./ex_put_signal                      both roles: forks the initiator
 *   ./ex_put_signal target [PORT]        one terminal (PORT: 18515)
 *   ./ex_put_signal initiator HOST [PORT]  another, or another host
 *
 * The device string comes from $EX_DEVICE (default "emu:udp"); on two hosts
 * give each NIC model its own address: EX_DEVICE=emu:udp:10.0.0.1.
 */
#define _GNU_SOURCE
#include <endian.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gdak/bootstrap.h>
#include <gdak/gdak.h>
#include <gdak/dev/dev.h>

#define LEN 4096
#define SIG_OFF LEN /* the signal word follows the data */
#define TIMEOUT_MS 30000

/* What the initiator needs to address the target's buffer; big-endian on
 * the wire, so hosts of any byte order agree. */
struct keys {
	uint64_t addr;
	uint32_t rkey;
	uint32_t pad;
};

static int fail(const char *what, int ret)
{
	fprintf(stderr, "ex_put_signal: %s: %s\n", what, gdak_strerror(ret));
	return 1;
}

static int run(int target, struct gdak_bootstrap *bs)
{
	const char *dev = getenv("EX_DEVICE") ? getenv("EX_DEVICE") : "emu:udp";
	struct gdak_qp_info mine, theirs;
	struct keys k = { 0 }, peer;
	struct gdak_ctx *ctx;
	struct gdak_qp *qp;
	struct gdak_mr *mr;
	struct gdak_dev_qp *q;
	uint8_t *buf;
	int ret;

	if ((ret = gdak_open(dev, &ctx)))
		return fail(dev, ret);
	/* data + an 8-byte signal word, 8-byte aligned (atomics need it) */
	if ((ret = gdak_mem_alloc(ctx, LEN + 8, GDAK_MEM_HOST, (void **)&buf)) ||
	    (ret = gdak_mr_reg(ctx, buf, LEN + 8, GDAK_ACCESS_ALL, &mr)))
		return fail("buffer", ret);
	memset(buf, 0, LEN + 8);
	if ((ret = gdak_qp_create(ctx, NULL, &qp)) || (ret = gdak_qp_info(qp, &mine)))
		return fail("QP", ret);

	/* Swap QP info (QPN, PSN, UDP address) and buffer keys, then connect:
	 * RESET -> INIT -> RTR -> RTS against the peer's QP. */
	k.addr = htobe64((uintptr_t)buf);
	k.rkey = htobe32(gdak_mr_rkey(mr));
	if ((ret = gdak_bootstrap_exchange_qp_info(bs, &mine, &theirs, 1)) ||
	    (ret = gdak_bootstrap_exchange(bs, &k, &peer, sizeof(k))))
		return fail("bootstrap exchange", ret);
	if ((ret = gdak_qp_connect(qp, &theirs)))
		return fail("connect", ret);
	if ((ret = gdak_qp_export(qp, &q)))
		return fail("export", ret);
	/* Nobody posts before both QPs are connected: a request that reaches
	 * a QP still in INIT is refused with a NAK, and the initiator's QP
	 * goes to ERR (on a ConnectX as on the NIC model). */
	if ((ret = gdak_bootstrap_barrier(bs)))
		return fail("barrier", ret);

	if (target) {
		/* The signal's acquire load orders the data reads after it: the
		 * responder applied the WRITE before the ATOMIC (RC order). */
		uint64_t v = gdak_dev_signal_wait_ge((uint64_t *)(void *)(buf + SIG_OFF), 1);
		for (int i = 0; i < LEN; i++)
			if (buf[i] != (uint8_t)(i ^ 0x5a)) {
				fprintf(stderr, "target: byte %d is 0x%02x\n", i, buf[i]);
				return 1;
			}
		printf("target: signal %llu, %d bytes checked\n", (unsigned long long)v, LEN);
	} else {
		struct gdak_dev_sge sge = { .addr = (uintptr_t)buf,
					    .len = LEN,
					    .lkey = gdak_mr_lkey(mr) };
		uint64_t raddr = be64toh(peer.addr), ticket;
		uint32_t rkey = be32toh(peer.rkey);
		struct gdak_dev_cqe err = { 0 };

		for (int i = 0; i < LEN; i++)
			buf[i] = (uint8_t)(i ^ 0x5a);
		/* RDMA_WRITE of the data, then ATOMIC_FA +1 on the signal word,
		 * one doorbell; ticket: the index just past both WQEs */
		ret = gdak_dev_put_signal(q, &sge, raddr, rkey, raddr + SIG_OFF, rkey, 1, 0,
					  &ticket);
		if (!ret)
			ret = gdak_dev_wait(q, ticket, &err);
		if (ret) {
			fprintf(stderr, "initiator: put+signal: %s (syndrome %s)\n",
				gdak_strerror(ret), gdak_mlx5_syndrome_name(err.syndrome));
			return 1;
		}
		printf("initiator: put %d bytes + signal, completed\n", LEN);
	}
	/* Neither side tears its QP down while the other may still use it. */
	if ((ret = gdak_bootstrap_barrier(bs)))
		return fail("barrier", ret);
	gdak_qp_destroy(qp);
	gdak_mr_dereg(mr);
	gdak_mem_free(ctx, buf);
	gdak_close(ctx);
	return 0;
}

static int target(uint16_t port, int spawn)
{
	struct gdak_bootstrap *bs;
	pid_t child = -1;
	int ret, st = 0;

	if ((ret = gdak_bootstrap_listen(NULL, port, &bs)))
		return fail("listen", ret);
	if (spawn) {
		/* the initiator as a separate program, told the port we got */
		char p[8];

		snprintf(p, sizeof(p), "%u", gdak_bootstrap_port(bs));
		fflush(NULL);
		child = fork();
		if (child == 0) {
			execl("/proc/self/exe", "ex_put_signal", "initiator", "127.0.0.1", p,
			      (char *)NULL);
			_exit(127);
		}
	}
	if ((ret = gdak_bootstrap_accept(bs, TIMEOUT_MS)))
		return fail("accept", ret);
	ret = run(1, bs);
	gdak_bootstrap_close(bs);
	if (child > 0 && (waitpid(child, &st, 0) != child || !WIFEXITED(st) || WEXITSTATUS(st)))
		ret = 1;
	return ret;
}

int main(int argc, char **argv)
{
	struct gdak_bootstrap *bs;
	int ret;

	if (argc == 1)
		ret = target(0, 1);
	else if (!strcmp(argv[1], "target"))
		ret = target(argc > 2 ? (uint16_t)atoi(argv[2]) : GDAK_BOOTSTRAP_PORT, 0);
	else if (!strcmp(argv[1], "initiator") && argc > 2) {
		uint16_t port = argc > 3 ? (uint16_t)atoi(argv[3]) : GDAK_BOOTSTRAP_PORT;

		if ((ret = gdak_bootstrap_connect(argv[2], port, TIMEOUT_MS, &bs)))
			return fail("connect to target", ret);
		ret = run(0, bs);
		gdak_bootstrap_close(bs);
	} else {
		fprintf(stderr, "usage: %s [target [PORT] | initiator HOST [PORT]]\n", argv[0]);
		return 2;
	}
	if (!ret && argc == 1)
		printf("ex_put_signal: ok\n");
	return ret;
}

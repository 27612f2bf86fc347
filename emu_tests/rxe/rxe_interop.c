/* SPDX-License-Identifier: MIT */
/*
 * rxe_interop.c - gdak.rxe.interop: wire interop between gdak's NIC model on
 * the udp transport (RoCEv2 in user space) and kernel soft-RoCE.
 *
 * In the rxe guest (tools/rxe/gdak-rxe-vm): this process enters network
 * namespace $GDAK_RXE_NS (10.1.0.2), opens "emu:udp:10.1.0.2:4791" and
 * plays the device with host threads; gdak-rxe-peer (a plain verbs program,
 * argv[1]) serves on rxe1 in the initial namespace (10.1.0.1), the two
 * joined by a veth pair.  Over a TCP side channel the test exchanges QP
 * numbers, PSNs, addresses and keys, then drives traffic both ways:
 *   gdak -> rxe: WRITE (multi-packet), inline WRITE, READ, fetch-add,
 *                compare-swap, SEND_IMM into a posted receive;
 *   rxe -> gdak: WRITE, WRITE_IMM (receive CQE), READ, fetch-add,
 *                compare-swap, SEND_IMM (receive CQE);
 * every byte verified (a hash of the far side's memory through the side
 * channel), then a WRITE with a wrong rkey must come back as an error CQE
 * with syndrome REMOTE_ACCESS_ERR.  Skips (77) outside the guest.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gdak/gdak.h>
#include <gdak/dev/dev.h>

#include "gdak_test.h"
#include "rxe_util.h"

#define PEER_PORT 18515
#define BUF_LEN 65536u

struct ix {
	struct rx dev;		/* the QP this thread plays the device on */
	uint8_t *buf;
	struct gdak_mr *mr;
	FILE *in, *out;
	uint64_t raddr;
	uint32_t rkey, rlen;
};

/* the same bytes gdak-rxe-peer's "fill" writes */
static void pattern(uint8_t *p, size_t n, uint32_t seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(seed * 131 + i * 7 + (i >> 8));
}

static uint64_t fnv1a(const uint8_t *p, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull;

	while (n--)
		h = (h ^ *p++) * 0x100000001b3ull;
	return h;
}

/* One request to the peer; its answer in ans.  1 when it starts with "ok". */
static int ask(struct ix *x, char *ans, size_t n, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static int ask(struct ix *x, char *ans, size_t n, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vfprintf(x->out, fmt, ap);
	va_end(ap);
	fputc('\n', x->out);
	fflush(x->out);
	if (!fgets(ans, (int)n, x->in)) {
		snprintf(ans, n, "(peer closed the side channel)");
		return 0;
	}
	ans[strcspn(ans, "\n")] = 0;
	if (strncmp(ans, "ok", 2))
		fprintf(stderr, "peer answered '%s' to '%s'\n", ans, fmt);
	return !strncmp(ans, "ok", 2);
}

static uint64_t peer_hash(struct ix *x, uint32_t off, uint32_t len)
{
	char a[128];
	unsigned long long h = 0;

	if (!ask(x, a, sizeof(a), "hash %u %u", off, len) || sscanf(a, "ok %llx", &h) != 1)
		return 0;
	return h;
}

/* ---- device side (this thread plays the device) ------------------------------- */

static uint64_t laddr(struct ix *x, uint32_t off) { return (uint64_t)(uintptr_t)(x->buf + off); }

static int write_op(struct ix *x, uint32_t off, uint32_t len, uint32_t roff, uint32_t rkey,
		    struct gdak_dev_cqe *err)
{
	struct gdak_dev_sge s = { laddr(x, off), len, gdak_mr_lkey(x->mr) };

	return rx_op(&x->dev, MLX5_OPCODE_RDMA_WRITE, &s, 1, x->raddr + roff, rkey, 0, err);
}

/* One receive WQE of one data segment. */
/* A fetch-add (cs 0) or compare-swap (cs 1) on the peer's word at 40000:
 * the old value lands big-endian at local offset off, the peer's word is
 * then now (its hash compared). */
static void peer_atomic(struct ix *x, int cs, uint64_t swap_add, uint64_t cmp, uint32_t off,
			uint64_t old, uint64_t now)
{
	struct gdak_dev_cqe err;
	uint64_t v;

	CHECK_EQ(rx_atomic(&x->dev, cs, x->raddr + 40000, x->rkey, swap_add, cmp, laddr(x, off),
			   gdak_mr_lkey(x->mr), &err),
		 0);
	memcpy(&v, x->buf + off, 8);
	CHECK_EQ(gdak_be64toh(v), old);
	CHECK_EQ(peer_hash(x, 40000, 8), fnv1a((const uint8_t *)&now, 8));
}

static void rq_post(struct ix *x, uint32_t off, uint32_t len)
{
	struct gdak_dev_sge s = { laddr(x, off), len, gdak_mr_lkey(x->mr) };

	rx_rq_post(&x->dev, &s, 1);
}

static void gdak_to_rxe(struct ix *x)
{
	struct gdak_dev_cqe err;
	uint8_t want[5000];
	char a[128];
	uint32_t nbb;
	int64_t i;
	uint64_t v;

	/* WRITE, 3000 bytes: three 1024-byte MTU packets (FIRST/MIDDLE/LAST).
	 * When this fails nothing else can work: stop here rather than wait
	 * out every later request's retries. */
	pattern(x->buf, 3000, 11);
	memset(&err, 0, sizeof(err));
	if (write_op(x, 0, 3000, 8192, x->rkey, &err)) {
		gdak_test_fail(__FILE__, __LINE__, "first WRITE gdak -> rxe failed (CQE syndrome "
			       "0x%x): see rxe's counters in /sys/class/infiniband/rxe1/ports/1/"
			       "hw_counters (rcvd_pkts, duplicate_request: rxe took the requests, "
			       "gdak did not take its ACKs)", err.syndrome);
		exit(gdak_test_end() ? 1 : 1);
	}
	CHECK_EQ(peer_hash(x, 8192, 3000), fnv1a(x->buf, 3000));

	/* inline WRITE, 40 bytes */
	pattern(x->buf + 100, 40, 12);
	nbb = gdak_dev_wqe_bbs_inline(1, 40);
	i = rx_reserve(&x->dev, nbb);
	REQUIRE(i >= 0);
	gdak_dev_wqe_write_inline(x->dev.q, (uint64_t)i, GDAK_DEV_WQE_SIGNAL, x->raddr + 16000,
				  x->rkey, x->buf + 100, 40);
	CHECK_EQ(rx_submit_wait(&x->dev, i, i, nbb, &err), 0);
	CHECK_EQ(peer_hash(x, 16000, 40), fnv1a(x->buf + 100, 40));

	/* READ 5000 bytes the peer filled */
	CHECK(ask(x, a, sizeof(a), "fill 20000 5000 13"));
	pattern(want, 5000, 13);
	memset(x->buf + 30000, 0, 5000);
	{
		struct gdak_dev_sge s = { laddr(x, 30000), 5000, gdak_mr_lkey(x->mr) };

		CHECK_EQ(rx_op(&x->dev, MLX5_OPCODE_RDMA_READ, &s, 1, x->raddr + 20000, x->rkey, 0,
			       &err), 0);
		CHECK_MEM(x->buf + 30000, want, 5000);
	}

	/* fetch-add and compare-swap on the peer's word at 40000 (host order
	 * there, as rxe keeps it); the old value lands big-endian here */
	v = 100;
	memcpy(x->buf + 200, &v, 8);
	CHECK_EQ(write_op(x, 200, 8, 40000, x->rkey, &err), 0);
	peer_atomic(x, 0, 5, 0, 41000, 100, 105);
	/* compare 105, swap in 7 */
	peer_atomic(x, 1, 7, 105, 41008, 105, 7);

	/* SEND_IMM, 2500 bytes, into a receive the peer posts first */
	CHECK(ask(x, a, sizeof(a), "recv 50000 4096"));
	pattern(x->buf + 1000, 2500, 14);
	{
		struct gdak_dev_sge s = { laddr(x, 1000), 2500, gdak_mr_lkey(x->mr) };

		CHECK_EQ(rx_op(&x->dev, MLX5_OPCODE_SEND_IMM, &s, 1, 0, 0, 0xabcd1234, &err), 0);
	}
	CHECK(ask(x, a, sizeof(a), "wait_recv"));
	CHECK_STR(a, "ok 2500 abcd1234");
	CHECK_EQ(peer_hash(x, 50000, 2500), fnv1a(x->buf + 1000, 2500));
}

static void rxe_to_gdak(struct ix *x)
{
	struct gdak_dev_cqe c;
	uint8_t want[3000];
	char a[128];
	unsigned long long old = 0;
	uint64_t v;

	/* WRITE 3000 bytes into our buffer at 60000 */
	CHECK(ask(x, a, sizeof(a), "fill 0 3000 21"));
	CHECK(ask(x, a, sizeof(a), "write 0 3000 60000"));
	pattern(want, 3000, 21);
	CHECK_MEM(x->buf + 60000, want, 3000);

	/* WRITE_IMM: data at 61000, and a receive CQE with the immediate */
	rq_post(x, 64000, 1024);
	CHECK(ask(x, a, sizeof(a), "write 0 100 61000 77"));
	CHECK_EQ(rx_rq_poll(&x->dev, &c), 1);
	CHECK_EQ(c.opcode, MLX5_CQE_RESP_WR_IMM);
	CHECK_EQ(c.imm, 77);
	CHECK_EQ(c.byte_cnt, 100);
	CHECK_MEM(x->buf + 61000, want, 100);

	/* READ of our memory */
	pattern(x->buf + 62000, 1000, 22);
	CHECK(ask(x, a, sizeof(a), "read 4000 1000 62000"));
	CHECK_EQ(peer_hash(x, 4000, 1000), fnv1a(x->buf + 62000, 1000));

	/* atomics on our word at 63000 (host order, as the NIC model keeps it) */
	v = 1000;
	memcpy(x->buf + 63000, &v, 8);
	CHECK(ask(x, a, sizeof(a), "fadd 5000 63000 3"));
	CHECK(sscanf(a, "ok %llx", &old) == 1 && old == 1000);
	memcpy(&v, x->buf + 63000, 8);
	CHECK_EQ(v, 1003);
	CHECK(ask(x, a, sizeof(a), "cswap 5008 63000 1003 9"));
	CHECK(sscanf(a, "ok %llx", &old) == 1 && old == 1003);
	memcpy(&v, x->buf + 63000, 8);
	CHECK_EQ(v, 9);

	/* SEND_IMM into a receive we post (inside the 64 KiB region: a
	 * receive WQE reaching past it is refused, recv_lkey_bounds) */
	rq_post(x, 56000, 2048);
	CHECK(ask(x, a, sizeof(a), "fill 6000 1500 23"));
	CHECK(ask(x, a, sizeof(a), "send 6000 1500 55"));
	CHECK_EQ(rx_rq_poll(&x->dev, &c), 1);
	CHECK_EQ(c.opcode, MLX5_CQE_RESP_SEND_IMM);
	CHECK_EQ(c.imm, 55);
	CHECK_EQ(c.byte_cnt, 1500);
	pattern(want, 1500, 23);
	CHECK_MEM(x->buf + 56000, want, 1500);
}

/* ---- setup ----------------------------------------------------------------------- */

static FILE *connect_peer(const char *addr, int *fd_out)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(PEER_PORT) };
	int fd = -1;

	inet_pton(AF_INET, addr, &sa.sin_addr);
	/* the peer needs a moment to open rxe1 and listen: retry, bounded */
	for (int tries = 0; tries < 200; tries++) {
		fd = socket(AF_INET, SOCK_STREAM, 0);
		if (fd >= 0 && !connect(fd, (struct sockaddr *)&sa, sizeof(sa)))
			break;
		if (fd >= 0)
			close(fd);
		fd = -1;
		usleep(50000);
	}
	if (fd < 0)
		return NULL;
	*fd_out = fd;
	return fdopen(fd, "r");
}

int main(int argc, char **argv)
{
	const char *ns = getenv("GDAK_RXE_NS"), *peer_dev = getenv("GDAK_RXE_PEER_DEV");
	const char *peer_addr = getenv("GDAK_RXE_PEER_ADDR"), *my_addr = getenv("GDAK_RXE_NS_ADDR");
	char path[256], a[256], gs[40], device[96];
	struct ix x = { 0 };
	struct gdak_qp_attr qa = { .sq_depth = 64, .cq_depth = 64, .rq_depth = 16, .rq_max_sge = 1,
				   .handler = GDAK_DEV_DB_DB, .sharing = GDAK_DEV_EXCLUSIVE,
				   .mtu = 1024, .nic_thread = -1 };
	struct gdak_qp_info mine, peer = { 0 };
	struct gdak_dev_cqe err;
	unsigned long long raddr;
	unsigned qpn, psn, rkey, rlen;
	int nsfd, fd, status = 0;
	pid_t pid;

	if (!ns || !peer_dev || !peer_addr || !my_addr || argc < 2)
		GDAK_TEST_SKIP("not in the rxe guest (tools/rxe/gdak-rxe-vm sets GDAK_RXE_NS etc.)");

	/* the verbs peer on rxe1, in the initial namespace */
	pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0) {
		execl(argv[1], argv[1], "-d", peer_dev, "-a", peer_addr, "-p", "18515", "serve",
		      (char *)NULL);
		perror("exec gdak-rxe-peer");
		_exit(127);
	}
	/* we go into the namespace where UDP 4791 is free */
	snprintf(path, sizeof(path), "/run/netns/%s", ns);
	nsfd = open(path, O_RDONLY);
	REQUIRE(nsfd >= 0);
	REQUIRE(setns(nsfd, CLONE_NEWNET) == 0);
	close(nsfd);

	x.in = connect_peer(peer_addr, &fd);
	REQUIRE(x.in);
	x.out = fdopen(dup(fd), "w");
	REQUIRE(x.out);

	snprintf(device, sizeof(device), "emu:udp:%s:4791", my_addr);
	REQUIRE(gdak_open(device, &x.dev.ctx) == 0);
	REQUIRE(gdak_mem_alloc(x.dev.ctx, BUF_LEN, GDAK_MEM_HOST, (void **)&x.buf) == 0);
	memset(x.buf, 0, BUF_LEN);
	REQUIRE(gdak_mr_reg(x.dev.ctx, x.buf, BUF_LEN, GDAK_ACCESS_ALL, &x.mr) == 0);
	REQUIRE(gdak_qp_create(x.dev.ctx, &qa, &x.dev.qp) == 0);
	REQUIRE(gdak_qp_info(x.dev.qp, &mine) == 0);
	for (int i = 0; i < 16; i++)
		sprintf(gs + 2 * i, "%02x", mine.gid[i]);
	fprintf(x.out, "hello qpn=%u psn=%u gid=%s addr=%llx rkey=%x len=%u\n", mine.qpn,
		mine.psn, gs, (unsigned long long)(uintptr_t)x.buf, gdak_mr_rkey(x.mr), BUF_LEN);
	fflush(x.out);
	REQUIRE(fgets(a, sizeof(a), x.in));
	REQUIRE(sscanf(a, "hello qpn=%u psn=%u gid=%32s addr=%llx rkey=%x len=%u", &qpn, &psn, gs,
		       &raddr, &rkey, &rlen) == 6);
	peer.version = GDAK_QP_INFO_VERSION;
	peer.transport = GDAK_QPI_UDP;
	peer.qpn = qpn;
	peer.psn = psn;
	peer.mtu = 1024;
	peer.udp_port = 4791; /* rxe listens on the RoCEv2 port only */
	for (int i = 0; i < 16; i++) {
		unsigned b;
		REQUIRE(sscanf(gs + 2 * i, "%2x", &b) == 1);
		peer.gid[i] = (uint8_t)b;
	}
	x.raddr = raddr;
	x.rkey = rkey;
	x.rlen = rlen;
	REQUIRE(gdak_qp_connect(x.dev.qp, &peer) == 0);
	REQUIRE(gdak_qp_export(x.dev.qp, &x.dev.q) == 0);
	fprintf(stderr, "gdak QP 0x%x (%s) <-> rxe QP 0x%x (%s, %s)\n", mine.qpn, device, qpn,
		peer_dev, peer_addr);

	gdak_to_rxe(&x);
	rxe_to_gdak(&x);

	/* a wrong rkey: rxe NAKs (remote access error), the requester's CQE
	 * says REMOTE_ACCESS_ERR and the QP is in ERR */
	memset(&err, 0, sizeof(err));
	CHECK(write_op(&x, 0, 64, 0, x.rkey ^ 0x5a00, &err) < 0);
	CHECK_EQ(err.opcode, MLX5_CQE_REQ_ERR);
	CHECK_EQ(err.syndrome, MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR);
	CHECK_EQ(gdak_qp_state(x.dev.qp), GDAK_QPS_ERR);

	fprintf(x.out, "quit\n");
	fflush(x.out);
	fclose(x.in);
	fclose(x.out);
	CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0);
	gdak_qp_destroy(x.dev.qp);
	gdak_mr_dereg(x.mr);
	gdak_mem_free(x.dev.ctx, x.buf);
	gdak_close(x.dev.ctx);
	return gdak_test_end();
}

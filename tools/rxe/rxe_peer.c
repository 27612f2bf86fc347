/* SPDX-License-Identifier: MIT */
/*
 * rxe_peer.c - a plain libibverbs program, the far end for gdak's wire
 * interop tests: gdak's NIC model (udp transport) on one side, kernel rxe
 * (or any verbs device) here.  It knows nothing of gdak.
 *
 *   gdak-rxe-peer [-d DEV] [-g GID_INDEX] [-s BYTES] selftest
 *       two RC QPs on DEV connected to each other: WRITE, READ, SEND(+IMM),
 *       fetch-add, compare-swap, data verified; exit 0 when all pass.
 *   gdak-rxe-peer [-d DEV] [-g GID_INDEX] [-s BYTES] [-a ADDR] [-p PORT] serve
 *       one RC QP and a BYTES buffer, then a line protocol on one TCP
 *       connection (see below) by which the other side makes this side
 *       post work requests and report what its memory holds.
 *
 * Line protocol (text, one request per line, one answer line each):
 *   -> "hello qpn=Q psn=P gid=G(32 hex) addr=A rkey=K len=L"  (both sides, client first)
 *   -> "fill OFF LEN SEED"        fill our buffer with the pattern     <- "ok"
 *   -> "hash OFF LEN"             FNV-1a of our buffer                  <- "ok HASH"
 *   -> "write OFF LEN ROFF [IMM]" RDMA WRITE(_IMM) ours -> peer's       <- "ok" | "err STATUS"
 *   -> "read OFF LEN ROFF"        RDMA READ peer's -> ours              <- "ok" | "err STATUS"
 *   -> "fadd OFF ROFF ADD"        fetch-add on peer, old value to ours  <- "ok OLD"
 *   -> "cswap OFF ROFF CMP SWAP"  compare-swap likewise                 <- "ok OLD"
 *   -> "send OFF LEN [IMM]"       SEND(_IMM) from our buffer            <- "ok"
 *   -> "recv OFF LEN"             post a receive into our buffer        <- "ok"
 *   -> "wait_recv"                the next receive completion           <- "ok LEN IMM|-" | "err STATUS"
 *   -> "rkey_bad"                 our next write uses a wrong rkey      <- "ok"
 *   -> "quit"
 * Request numbers are decimal; answers (HASH, OLD, IMM) and the hello's gid,
 * addr and rkey are hex without 0x.  selftest exits 77 when DEV is missing.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <infiniband/verbs.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define POLL_TIMEOUT_MS 10000

struct peer {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	uint8_t *buf;
	size_t len;
	int port, gid_index;
	union ibv_gid gid;
	uint32_t psn;
};

struct remote {
	uint32_t qpn, psn, rkey, len;
	uint64_t addr;
	union ibv_gid gid;
};

static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void fail(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "gdak-rxe-peer: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
	exit(1);
}

static uint64_t fnv1a(const uint8_t *p, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull;

	while (n--)
		h = (h ^ *p++) * 0x100000001b3ull;
	return h;
}

/* the same bytes the tests on the gdak side generate for (seed, offset) */
static void pattern(uint8_t *p, size_t n, uint32_t seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(seed * 131 + i * 7 + (i >> 8));
}

/* The device, or NULL when there is none of that name. */
static struct ibv_device *find_dev(const char *name)
{
	int n;
	struct ibv_device **l = ibv_get_device_list(&n), *d = NULL;

	if (!l)
		return NULL;
	for (int i = 0; i < n; i++)
		if (!name || !strcmp(ibv_get_device_name(l[i]), name))
			d = d ? d : l[i];
	return d; /* the list is leaked on purpose: the device must stay valid */
}

static struct ibv_context *open_dev(const char *name)
{
	struct ibv_device *d = find_dev(name);
	struct ibv_context *ctx;

	if (!d)
		fail("no verbs device %s", name ? name : "at all");
	ctx = ibv_open_device(d);
	if (!ctx)
		fail("ibv_open_device %s: %s", ibv_get_device_name(d), strerror(errno));
	return ctx;
}

static void open_side(struct peer *p, struct ibv_context *ctx, struct ibv_pd *pd,
		      struct ibv_cq *cq, size_t len)
{
	struct ibv_qp_init_attr qa = {
		.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 64, .max_recv_wr = 64, .max_send_sge = 1,
			 .max_recv_sge = 1, .max_inline_data = 64 },
	};
	int acc = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
		  IBV_ACCESS_REMOTE_ATOMIC;

	p->ctx = ctx, p->pd = pd, p->cq = cq, p->len = len, p->port = 1;
	if (posix_memalign((void **)&p->buf, 4096, len))
		fail("out of memory");
	memset(p->buf, 0, len);
	p->mr = ibv_reg_mr(pd, p->buf, len, acc);
	if (!p->mr)
		fail("ibv_reg_mr: %s", strerror(errno));
	p->qp = ibv_create_qp(pd, &qa);
	if (!p->qp)
		fail("ibv_create_qp: %s", strerror(errno));
	if (ibv_query_gid(ctx, p->port, p->gid_index, &p->gid))
		fail("ibv_query_gid %d: %s", p->gid_index, strerror(errno));
	p->psn = (uint32_t)(getpid() * 7919u + p->qp->qp_num) & 0xffffff;
}

/* RESET -> INIT -> RTR -> RTS (IBA 10.3.1 / C10-11): path MTU 1024 matches a
 * 1500-byte netdev, which is what rxe reports as active_mtu there. */
static void connect_qp(struct peer *p, const struct remote *r)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = p->port,
		.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
				   IBV_ACCESS_REMOTE_ATOMIC };
	int rc;

	rc = ibv_modify_qp(p->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			   IBV_QP_ACCESS_FLAGS);
	if (rc)
		fail("modify to INIT: %s", strerror(rc));
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = r->qpn;
	a.rq_psn = r->psn;
	a.max_dest_rd_atomic = 8;
	a.min_rnr_timer = 12;
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.dgid = r->gid;
	a.ah_attr.grh.sgid_index = p->gid_index;
	a.ah_attr.grh.hop_limit = 64;
	a.ah_attr.port_num = p->port;
	rc = ibv_modify_qp(p->qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
			   IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
			   IBV_QP_MIN_RNR_TIMER);
	if (rc)
		fail("modify to RTR: %s", strerror(rc));
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.sq_psn = p->psn;
	a.max_rd_atomic = 8;
	rc = ibv_modify_qp(p->qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
			   IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
	if (rc)
		fail("modify to RTS: %s", strerror(rc));
}

/* One completion, with back-off (the guest has 2 vCPUs shared with rxe's
 * kernel threads); a bounded wait so a lost completion is an error. */
static int wait_wc(struct ibv_cq *cq, struct ibv_wc *wc)
{
	struct timespec t0, t;
	unsigned spins = 0;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		int n = ibv_poll_cq(cq, 1, wc);

		if (n < 0)
			fail("ibv_poll_cq failed");
		if (n)
			return 0;
		if (++spins > 1000)
			usleep(50);
		clock_gettime(CLOCK_MONOTONIC, &t);
		if ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 >
		    POLL_TIMEOUT_MS)
			return -1;
	}
}

/* Post one work request and wait for its completion: the status, or -1 on
 * timeout.  wc_out gets the completion. */
static int post_wait(struct peer *p, struct ibv_send_wr *wr)
{
	struct ibv_send_wr *bad;
	struct ibv_wc wc;
	int rc;

	wr->send_flags |= IBV_SEND_SIGNALED;
	rc = ibv_post_send(p->qp, wr, &bad);
	if (rc)
		fail("ibv_post_send: %s", strerror(rc));
	if (wait_wc(p->cq, &wc))
		return -1;
	return wc.status;
}

static struct ibv_sge sge_of(struct peer *p, size_t off, size_t len)
{
	return (struct ibv_sge){ .addr = (uintptr_t)p->buf + off, .length = (uint32_t)len,
				 .lkey = p->mr->lkey };
}

static int in_range(const struct peer *p, size_t off, size_t len)
{
	return off <= p->len && len <= p->len - off;
}

/* ---- selftest: two QPs on one device ----------------------------------- */

#define ST_CHECK(c)                                                              \
	do {                                                                     \
		if (!(c))                                                        \
			fail("selftest: %s:%d: %s", __FILE__, __LINE__, #c);     \
		checks++;                                                        \
	} while (0)

static int selftest(const char *dev, int gid_index, size_t len)
{
	struct ibv_context *ctx;
	struct peer a = { .gid_index = gid_index }, b = { .gid_index = gid_index };
	struct remote ra, rb;
	struct ibv_sge sge, rsge;
	struct ibv_send_wr wr;
	struct ibv_recv_wr rwr = { 0 }, *rbad;
	struct ibv_wc wc;
	uint64_t *word;
	unsigned checks = 0;

	if (!find_dev(dev)) {
		fprintf(stderr, "SKIP: no verbs device %s (run it in the rxe guest)\n",
			dev ? dev : "at all");
		return 77;
	}
	ctx = open_dev(dev);
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	struct ibv_cq *cqa = ibv_create_cq(ctx, 128, NULL, NULL, 0);
	struct ibv_cq *cqb = ibv_create_cq(ctx, 128, NULL, NULL, 0);
	if (!pd || !cqa || !cqb)
		fail("pd/cq: %s", strerror(errno));
	open_side(&a, ctx, pd, cqa, len);
	open_side(&b, ctx, pd, cqb, len);
	ra = (struct remote){ .qpn = a.qp->qp_num, .psn = a.psn, .gid = a.gid };
	rb = (struct remote){ .qpn = b.qp->qp_num, .psn = b.psn, .gid = b.gid };
	connect_qp(&a, &rb);
	connect_qp(&b, &ra);

	/* WRITE a -> b, whole buffer but the last 64 bytes (atomics live there) */
	size_t n = len - 64;
	pattern(a.buf, n, 1);
	sge = sge_of(&a, 0, n);
	wr = (struct ibv_send_wr){ .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_RDMA_WRITE,
				   .wr.rdma = { (uintptr_t)b.buf, b.mr->rkey } };
	ST_CHECK(post_wait(&a, &wr) == IBV_WC_SUCCESS);
	ST_CHECK(!memcmp(a.buf, b.buf, n));

	/* READ b -> a after changing b */
	pattern(b.buf, n, 2);
	memset(a.buf, 0, n);
	wr.opcode = IBV_WR_RDMA_READ;
	ST_CHECK(post_wait(&a, &wr) == IBV_WC_SUCCESS);
	ST_CHECK(!memcmp(a.buf, b.buf, n));

	/* SEND with immediate into a posted receive */
	rsge = sge_of(&b, 0, 4096);
	rwr.sg_list = &rsge, rwr.num_sge = 1;
	ST_CHECK(!ibv_post_recv(b.qp, &rwr, &rbad));
	pattern(a.buf, 3000, 3);
	sge = sge_of(&a, 0, 3000);
	wr = (struct ibv_send_wr){ .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND_WITH_IMM,
				   .imm_data = htonl(0x1234abcd) };
	ST_CHECK(post_wait(&a, &wr) == IBV_WC_SUCCESS);
	ST_CHECK(!wait_wc(cqb, &wc));
	ST_CHECK(wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_RECV);
	ST_CHECK(wc.byte_len == 3000 && (wc.wc_flags & IBV_WC_WITH_IMM));
	ST_CHECK(ntohl(wc.imm_data) == 0x1234abcd);
	ST_CHECK(!memcmp(a.buf, b.buf, 3000));

	/* atomics on b's last 8 bytes; the old value lands in a's */
	word = (uint64_t *)(void *)(b.buf + len - 8);
	*word = 100;
	sge = sge_of(&a, len - 8, 8);
	wr = (struct ibv_send_wr){ .sg_list = &sge, .num_sge = 1,
				   .opcode = IBV_WR_ATOMIC_FETCH_AND_ADD,
				   .wr.atomic = { (uintptr_t)word, 5, 0, b.mr->rkey } };
	ST_CHECK(post_wait(&a, &wr) == IBV_WC_SUCCESS);
	ST_CHECK(*word == 105 && *(uint64_t *)(void *)(a.buf + len - 8) == 100);
	wr.opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
	wr.wr.atomic.compare_add = 105, wr.wr.atomic.swap = 7;
	ST_CHECK(post_wait(&a, &wr) == IBV_WC_SUCCESS);
	ST_CHECK(*word == 7 && *(uint64_t *)(void *)(a.buf + len - 8) == 105);

	/* a wrong rkey: the requester sees a remote access error (IBA 9.7.5.2.4) */
	wr = (struct ibv_send_wr){ .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_RDMA_WRITE,
				   .wr.rdma = { (uintptr_t)b.buf, b.mr->rkey ^ 0x5a00 } };
	ST_CHECK(post_wait(&a, &wr) == IBV_WC_REM_ACCESS_ERR);
	printf("selftest on %s: %u checks passed\n", ibv_get_device_name(ctx->device), checks);
	return 0;
}

/* ---- serve: the line protocol -------------------------------------------- */

static int gid_parse(const char *s, union ibv_gid *g)
{
	for (int i = 0; i < 16; i++) {
		unsigned v;

		if (sscanf(s + 2 * i, "%2x", &v) != 1)
			return -1;
		g->raw[i] = (uint8_t)v;
	}
	return 0;
}

static void say(FILE *out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(FILE *out, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vfprintf(out, fmt, ap);
	va_end(ap);
	fputc('\n', out);
	fflush(out);
}

static void serve_one(struct peer *p, FILE *in, FILE *out)
{
	char line[512], gs[40];
	struct remote r = { 0 };
	int bad_rkey = 0;

	if (!fgets(line, sizeof(line), in) ||
	    sscanf(line, "hello qpn=%" SCNu32 " psn=%" SCNu32 " gid=%32s addr=%" SCNx64
		   " rkey=%" SCNx32 " len=%" SCNu32, &r.qpn, &r.psn, gs, &r.addr, &r.rkey,
		   &r.len) != 6 || gid_parse(gs, &r.gid))
		fail("bad hello: %s", line);
	for (int i = 0; i < 16; i++)
		sprintf(gs + 2 * i, "%02x", p->gid.raw[i]);
	say(out, "hello qpn=%u psn=%u gid=%s addr=%" PRIx64 " rkey=%x len=%zu", p->qp->qp_num,
	    p->psn, gs, (uint64_t)(uintptr_t)p->buf, p->mr->rkey, p->len);
	connect_qp(p, &r);

	while (fgets(line, sizeof(line), in)) {
		char cmd[16];
		uint64_t a1 = 0, a2 = 0, a3 = 0, a4 = 0;
		int n = sscanf(line, "%15s %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64, cmd, &a1,
			       &a2, &a3, &a4);
		struct ibv_send_wr wr = { 0 };
		struct ibv_sge sge;
		int st;

		if (n < 1)
			continue;
		if (!strcmp(cmd, "quit"))
			return;
		if (!strcmp(cmd, "rkey_bad")) {
			bad_rkey = 1;
			say(out, "ok");
		} else if (!strcmp(cmd, "fill") && n == 4 && in_range(p, a1, a2)) {
			pattern(p->buf + a1, a2, (uint32_t)a3);
			say(out, "ok");
		} else if (!strcmp(cmd, "hash") && n == 3 && in_range(p, a1, a2)) {
			say(out, "ok %016" PRIx64, fnv1a(p->buf + a1, a2));
		} else if ((!strcmp(cmd, "write") || !strcmp(cmd, "read")) && n >= 4 &&
			   in_range(p, a1, a2) && a3 <= r.len && a2 <= r.len - a3) {
			sge = sge_of(p, a1, a2);
			wr.sg_list = &sge, wr.num_sge = 1;
			wr.opcode = cmd[0] == 'r' ? IBV_WR_RDMA_READ : IBV_WR_RDMA_WRITE;
			if (cmd[0] == 'w' && n == 5) {
				wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
				wr.imm_data = htonl((uint32_t)a4);
			}
			wr.wr.rdma.remote_addr = r.addr + a3;
			wr.wr.rdma.rkey = r.rkey ^ (bad_rkey ? 0x5a00 : 0);
			bad_rkey = 0;
			st = post_wait(p, &wr);
			if (st)
				say(out, "err %s", st < 0 ? "timeout" : ibv_wc_status_str(st));
			else
				say(out, "ok");
		} else if ((!strcmp(cmd, "fadd") || !strcmp(cmd, "cswap")) && n >= 4 &&
			   in_range(p, a1, 8) && a2 <= r.len && r.len - a2 >= 8) {
			sge = sge_of(p, a1, 8);
			wr.sg_list = &sge, wr.num_sge = 1;
			wr.wr.atomic.remote_addr = r.addr + a2;
			wr.wr.atomic.rkey = r.rkey;
			if (cmd[0] == 'f') {
				wr.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
				wr.wr.atomic.compare_add = a3;
			} else {
				wr.opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
				wr.wr.atomic.compare_add = a3;
				wr.wr.atomic.swap = a4;
			}
			st = post_wait(p, &wr);
			if (st)
				say(out, "err %s", st < 0 ? "timeout" : ibv_wc_status_str(st));
			else
				say(out, "ok %" PRIx64, *(uint64_t *)(void *)(p->buf + a1));
		} else if (!strcmp(cmd, "send") && n >= 3 && in_range(p, a1, a2)) {
			sge = sge_of(p, a1, a2);
			wr.sg_list = &sge, wr.num_sge = 1;
			wr.opcode = IBV_WR_SEND;
			if (n >= 4) {
				wr.opcode = IBV_WR_SEND_WITH_IMM;
				wr.imm_data = htonl((uint32_t)a3);
			}
			st = post_wait(p, &wr);
			if (st)
				say(out, "err %s", st < 0 ? "timeout" : ibv_wc_status_str(st));
			else
				say(out, "ok");
		} else if (!strcmp(cmd, "recv") && n == 3 && in_range(p, a1, a2)) {
			struct ibv_recv_wr rwr = { .sg_list = &sge, .num_sge = 1 }, *rbad;

			sge = sge_of(p, a1, a2);
			st = ibv_post_recv(p->qp, &rwr, &rbad);
			if (st)
				say(out, "err %s", strerror(st));
			else
				say(out, "ok");
		} else if (!strcmp(cmd, "wait_recv")) {
			struct ibv_wc wc;

			if (wait_wc(p->cq, &wc))
				say(out, "err timeout");
			else if (wc.status)
				say(out, "err %s", ibv_wc_status_str(wc.status));
			else if (wc.wc_flags & IBV_WC_WITH_IMM)
				say(out, "ok %u %x", wc.byte_len, ntohl(wc.imm_data));
			else
				say(out, "ok %u -", wc.byte_len);
		} else {
			say(out, "err bad request: %.*s", (int)strcspn(line, "\n"), line);
		}
	}
}

static int serve(const char *dev, int gid_index, size_t len, const char *addr, int port)
{
	struct ibv_context *ctx = open_dev(dev);
	struct peer p = { .gid_index = gid_index };
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	int ls, cs, one = 1;

	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	struct ibv_cq *cq = ibv_create_cq(ctx, 128, NULL, NULL, 0);
	if (!pd || !cq)
		fail("pd/cq: %s", strerror(errno));
	open_side(&p, ctx, pd, cq, len);
	if (inet_pton(AF_INET, addr, &sa.sin_addr) != 1)
		fail("bad address %s", addr);
	ls = socket(AF_INET, SOCK_STREAM, 0);
	setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (ls < 0 || bind(ls, (struct sockaddr *)&sa, sizeof(sa)) || listen(ls, 1))
		fail("listen on %s:%d: %s", addr, port, strerror(errno));
	printf("gdak-rxe-peer: %s qpn 0x%x listening on %s:%d\n", ibv_get_device_name(ctx->device),
	       p.qp->qp_num, addr, port);
	fflush(stdout);
	/* one client; a bounded wait so a test that never connects ends */
	struct pollfd pf = { .fd = ls, .events = POLLIN };
	if (poll(&pf, 1, 60000) != 1)
		fail("no client within 60 s");
	cs = accept(ls, NULL, NULL);
	if (cs < 0)
		fail("accept: %s", strerror(errno));
	setsockopt(cs, IPPROTO_TCP, 1 /* TCP_NODELAY */, &one, sizeof(one));
	FILE *in = fdopen(cs, "r"), *out = fdopen(dup(cs), "w");
	serve_one(&p, in, out);
	fclose(in);
	fclose(out);
	close(ls);
	ibv_destroy_qp(p.qp);
	ibv_dereg_mr(p.mr);
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	free(p.buf);
	return 0;
}

int main(int argc, char **argv)
{
	const char *dev = getenv("GDAK_RXE_DEV"), *addr = "0.0.0.0";
	int gid_index = 1, port = 18515, c;
	size_t len = 65536;

	while ((c = getopt(argc, argv, "d:g:s:a:p:h")) != -1) {
		switch (c) {
		case 'd': dev = optarg; break;
		case 'g': gid_index = atoi(optarg); break;
		case 's': len = strtoul(optarg, NULL, 0); break;
		case 'a': addr = optarg; break;
		case 'p': port = atoi(optarg); break;
		default:
			fprintf(stderr, "usage: gdak-rxe-peer [-d DEV] [-g GID_INDEX] [-s BYTES] "
					"[-a ADDR] [-p PORT] selftest|serve\n");
			return 2;
		}
	}
	if (len < 8192 || len > (1u << 30))
		fail("-s %zu: the buffer must be 8 KiB .. 1 GiB", len);
	if (optind < argc && !strcmp(argv[optind], "selftest"))
		return selftest(dev, gid_index, len);
	if (optind < argc && !strcmp(argv[optind], "serve"))
		return serve(dev, gid_index, len, addr, port);
	fprintf(stderr, "gdak-rxe-peer: say selftest or serve (-h for usage)\n");
	return 2;
}

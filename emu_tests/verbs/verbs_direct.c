/* SPDX-License-Identifier: MIT */
/*
 * verbs_direct.c - the direct path between two processes of one host
 * (nic_model/tr_udp_direct.c, docs/VERBS.md "Threads"): the client's
 * WRITEs into the server are done by the client itself, no packet, and
 * whatever the responder would refuse still goes over UDP to get its NAK.
 *
 * Every mode: a 64 KiB WRITE and an 8-byte WRITE into the server's
 * MR, a 4 KiB WRITE into its second MR, a 5000-byte READ of its pattern,
 * the bytes checked in both,
 * the counters of both QPs (gdak_ibv_qp_direct) saying which path they
 * took, and the wire counters the other way round; then one bad request
 * that must give IBV_WC_REM_ACCESS_ERR, the client QP in ERR with its
 * IBV_EVENT_QP_ACCESS_ERR, the server QP in ERR, and nothing written:
 *   rkey   a WRITE with an rkey the server never registered
 *   range  a WRITE that ends 32 bytes past the server's MR
 *   dereg  a WRITE into the second MR after the server deregistered it
 *          (the buffer stays allocated, so a write would show)
 *   race   the same WRITE posted while the server deregisters: whichever
 *          wins, what the buffer holds when ibv_dereg_mr returns never
 *          changes after, and it holds the WRITE whole exactly when the
 *          client got IBV_WC_SUCCESS (else REM_ACCESS_ERR as above)
 *   badenv (one process) GDAK_IBV_DIRECT=maybe: the device does not open
 * The path is expected when GDAK_IBV_DIRECT is not 0 and the kernel lets
 * this process write into its child (the test asks it first, the way the
 * library will: process_vm_writev; Yama's ptrace_scope may refuse): else
 * every count is 0 and the data the same.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <linux/capability.h>

#include <infiniband/verbs.h>

#include "gdak_test.h"
#include "gdak_test_proc.h"
#include "gdak_verbs.h"
#include "gv_private.h"
#include "tr_udp.h"

#define BUF (256 * 1024)
#define BUF2 8192
#define ACCESS                                                                       \
	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | \
	 IBV_ACCESS_REMOTE_ATOMIC)

static const char *mode;
static int skipped; /* the client's probe found the path refused: 77 */

/* Modes whose segment a sender must refuse (the server plants it so before
 * the client connects) or whose copies the kernel refuses: every request
 * goes over UDP, the counts stay 0, the bytes and CQEs are the same. */
static int refused_mode(void)
{
	return !strcmp(mode, "mode") || !strcmp(mode, "uid") || !strcmp(mode, "deadpid") ||
	       !strcmp(mode, "exec") || !strcmp(mode, "eperm") || !strcmp(mode, "trace") ||
	       !strcmp(mode, "trace_tx");
}

/* Modes trace (the server: the owner of the segment) and trace_tx (the
 * client: the sender): that side traces from right after its connect on,
 * into the file named by what this returns */
static char *trace_start(int server)
{
	char *p = NULL;

	if (strcmp(mode, server ? "trace" : "trace_tx"))
		return NULL;
	p = gdak_test_tmpname("direct", "trace");
	REQUIRE(p != NULL);
	REQUIRE_EQ(gdak_ibv_set_trace(p), 0);
	return p;
}

/* The trace closed, its packets to QP dqpn counted: the distinct PSNs of
 * RDMA WRITE FIRST / ONLY packets (a message each) and of READ requests.
 * pcapng: blocks of (type, length); an EPB (6) holds an Ethernet frame
 * from byte 28 on, its length at byte 20. */
static void trace_count(char *path, uint32_t dqpn, unsigned *writes, unsigned *reads)
{
	uint32_t wpsn[64], rpsn[64];
	size_t len = 0, off = 0;
	uint8_t *b;

	*writes = *reads = 0;
	REQUIRE_EQ(gdak_ibv_set_trace(NULL), 0);
	b = gdak_test_slurp(path, &len);
	REQUIRE(b != NULL);
	while (off + 12 <= len) {
		uint32_t type, blen, cap;
		const uint8_t *f, *bth;
		unsigned ihl;

		memcpy(&type, b + off, 4);
		memcpy(&blen, b + off + 4, 4);
		if (blen < 12 || blen > len - off)
			break;
		f = b + off + 28;
		memcpy(&cap, b + off + 20, 4);
		off += blen;
		if (type != 6 || blen < 28 + 14 + 20 + 8 + 12 || cap > blen - 28 || cap < 14 + 20)
			continue;
		ihl = (f[14] & 0xfu) * 4;
		if (f[12] != 0x08 || f[13] != 0 || f[14 + 9] != 17 || cap < 14 + ihl + 8 + 12)
			continue;
		if (roce_get16(f + 14 + ihl + 2) != ROCE_UDP_PORT)
			continue;
		bth = f + 14 + ihl + 8;
		if (bth_qpn(bth) != dqpn)
			continue;
		{
			uint8_t op = bth_opcode(bth);
			uint32_t psn = bth_psn(bth);
			uint32_t *set = op == ROCE_WRITE_FIRST || op == ROCE_WRITE_ONLY ? wpsn
					: op == ROCE_READ_REQ				? rpsn
											: NULL;
			unsigned *n = set == wpsn ? writes : reads, i;

			if (!set)
				continue;
			for (i = 0; i < *n && set[i] != psn; i++)
				;
			if (i == *n && *n < 64)
				set[(*n)++] = psn;
		}
	}
	CHECK_EQ(off, len); /* every block whole */
	free(b);
	unlink(path);
	free(path);
}

/* GDAK_TEST_DIRECT_DENY=1 or mode eperm: the kernel refuses the client's
 * process_vm_* into the server (the server not dumpable, the client
 * without CAP_SYS_PTRACE), as Yama's ptrace_scope would. */
static int deny_wanted(void)
{
	const char *e = getenv("GDAK_TEST_DIRECT_DENY");

	return !strcmp(mode, "eperm") || (e && !strcmp(e, "1"));
}

/* This thread's CAP_SYS_PTRACE away (the threads it starts after have none
 * either): ptrace's access rule then holds for root too. */
static void drop_ptrace_cap(void)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2];

	REQUIRE_EQ(syscall(SYS_capget, &h, d), 0);
	d[CAP_SYS_PTRACE / 32].effective &= ~(1u << (CAP_SYS_PTRACE % 32));
	d[CAP_SYS_PTRACE / 32].permitted &= ~(1u << (CAP_SYS_PTRACE % 32));
	REQUIRE_EQ(syscall(SYS_capset, &h, d), 0);
}

/* /dev/shm's name of the segment of a device at addr (network order), port */
static void seg_path(char *buf, size_t n, uint32_t addr, unsigned port)
{
	struct stat st;

	REQUIRE_EQ(stat("/proc/self/ns/net", &st), 0);
	snprintf(buf, n, "/dev/shm/gdak-direct-%lx-%08x-%u", (unsigned long)st.st_ino,
		 (unsigned)ntohl(addr), port);
}

static uint32_t gid_addr(const union ibv_gid *g)
{
	uint32_t a;

	memcpy(&a, g->raw + 12, 4);
	return a;
}

/* The head of the segment at path, mapped (to be planted) */
static struct udp_direct_head *map_head(const char *path)
{
	int fd = open(path, O_RDWR | O_CLOEXEC);
	void *p;

	REQUIRE(fd >= 0);
	p = mmap(NULL, sizeof(struct udp_direct_head), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	REQUIRE(p != MAP_FAILED);
	CHECK_EQ(((struct udp_direct_head *)p)->magic, UDP_DIRECT_MAGIC);
	return p;
}

/* A pid nobody has now (a child that exited, reaped) */
static pid_t dead_pid(void)
{
	pid_t p = fork();

	REQUIRE(p >= 0);
	if (p == 0)
		_exit(0);
	gdak_test_reap(p);
	return p;
}

/* A child that exec'd this program ("hold": it says so on *ready, then
 * waits for EOF on the pipe whose write end is *hold). */
static pid_t exec_child(int *hold, int *ready)
{
	int h[2], r[2];
	pid_t p;
	char c = 0;

	REQUIRE_EQ(pipe2(h, O_CLOEXEC), 0);
	REQUIRE_EQ(pipe2(r, O_CLOEXEC), 0);
	p = fork();
	REQUIRE(p >= 0);
	if (p == 0) {
		if (dup2(h[0], 0) < 0 || dup2(r[1], 1) < 0)
			_exit(127);
		execl("/proc/self/exe", "gdak_verbs_direct", "hold", (char *)NULL);
		_exit(127);
	}
	close(h[0]);
	close(r[1]);
	REQUIRE_EQ(read(r[0], &c, 1), 1);
	CHECK_EQ(c, 'x');
	*hold = h[1];
	*ready = r[0];
	return p;
}

/* What the server tells the client besides gdak_vt_info: its second MR
 * and its pid (for the probe), and whether the path is expected. */
struct extra {
	uint64_t addr2;
	uint32_t rkey2;
	int32_t pid;
	uint8_t probe; /* the path is expected */
	uint8_t wrote; /* the client's probe wrote buf2[0] */
	uint8_t skip;  /* the client's probe found no direct path to test */
};

/* the client's last message before the server reads its memory */
static const char SYNC_MSG[] = "in order";

static int post_rdma(struct gdak_vt_side *s, enum ibv_wr_opcode op, uint64_t id, void *src,
		     uint32_t len, uint32_t lkey, uint64_t raddr, uint32_t rkey)
{
	struct ibv_sge sg = { (uintptr_t)src, len, lkey };
	struct ibv_send_wr *bad, w = {
		.wr_id = id,
		.sg_list = &sg,
		.num_sge = 1,
		.opcode = op,
		.send_flags = IBV_SEND_SIGNALED,
		.wr.rdma = { .remote_addr = raddr, .rkey = rkey },
	};

	return ibv_post_send(s->qp, &w, &bad);
}

static int direct_wanted(void)
{
	const char *e = getenv("GDAK_IBV_DIRECT");

	return !e || strcmp(e, "0");
}

static enum ibv_qp_state qp_state(struct ibv_qp *qp)
{
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;

	REQUIRE_EQ(ibv_query_qp(qp, &a, IBV_QP_STATE, &ia), 0);
	return a.qp_state;
}

static void client(int fd)
{
	struct gdak_vt_side s;
	struct ibv_wc wc;
	struct ibv_async_event ev;
	struct extra x;
	uint8_t probe_byte = 0x5a, inl[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
	uint64_t out = 0, in = 0, raddr;
	uint8_t *expect = malloc(BUF);
	uint32_t rkey, len = 64;
	int want, ok;
	char done = 1, ack = 0, *tpath;

	if (deny_wanted())
		drop_ptrace_cap(); /* before the NIC thread starts */
	gdak_vt_side_open(&s, BUF, 1, ACCESS, 0x111111);
	gdak_vt_side_connect(&s, fd);
	tpath = trace_start(0);
	memset(&x, 0, sizeof(x));
	REQUIRE_EQ(gdak_test_xfer(fd, &x, &x, sizeof(x)), 0);
	/* may this process write into the server at all? */
	{
		struct iovec l = { &probe_byte, 1 }, r = { (void *)(uintptr_t)x.addr2, 1 };
		int e;

		ok = process_vm_writev(x.pid, &l, 1, &r, 1, 0) == 1;
		e = errno;
		if (!strcmp(mode, "eperm")) {
			CHECK(!ok);
			CHECK_EQ(ok ? 0 : e, EPERM);
		} else if (!ok && direct_wanted() && !refused_mode()) {
			/* a test of the direct path that would only see UDP */
			fprintf(stderr,
				"SKIP: process_vm_writev into the server: %s (Yama's "
				"/proc/sys/kernel/yama/ptrace_scope?): no direct path to test\n",
				strerror(e));
			skipped = 1;
		}
	}
	want = direct_wanted() && ok && !refused_mode();
	{
		struct extra v = x, none;

		v.probe = (uint8_t)want;
		v.wrote = (uint8_t)ok;
		v.skip = (uint8_t)skipped;
		REQUIRE_EQ(gdak_test_xfer(fd, &none, &v, sizeof(v)), 0);
	}
	if (skipped) {
		gdak_vt_side_close(&s);
		free(expect);
		return;
	}

	/* four good requests, one at a time: each completes with its CQE */
	{
		static const struct {
			enum ibv_wr_opcode op;
			enum ibv_wc_opcode wc;
			uint32_t loff, len, server_mr, roff;
		} rq[4] = {
			{ IBV_WR_RDMA_WRITE, IBV_WC_RDMA_WRITE, 0, 65536, 1, 0 },
			{ IBV_WR_RDMA_WRITE, IBV_WC_RDMA_WRITE, 120000, 8, 1, 70000 },
			{ IBV_WR_RDMA_WRITE, IBV_WC_RDMA_WRITE, 100000, 4096, 2, 16 },
			/* a READ of the server's own pattern */
			{ IBV_WR_RDMA_READ, IBV_WC_RDMA_READ, 150000, 5000, 1, 200000 },
		};

		memcpy(s.buf + 120000, inl, 8);
		REQUIRE(expect != NULL);
		gdak_test_fill(expect, BUF, 2);
		for (unsigned i = 0; i < 4; i++) {
			uint64_t base = rq[i].server_mr == 1 ? s.peer.addr : x.addr2;
			uint32_t key = rq[i].server_mr == 1 ? s.peer.rkey : x.rkey2;

			CHECK_EQ(post_rdma(&s, rq[i].op, i + 1, s.buf + rq[i].loff, rq[i].len,
					   s.mr->lkey, base + rq[i].roff, key),
				 0);
			REQUIRE_EQ(gdak_vt_wait_wc(s.cq, &wc), 1);
			CHECK_EQ(wc.status, IBV_WC_SUCCESS);
			CHECK_EQ(wc.wr_id, i + 1);
			CHECK_EQ(wc.opcode, rq[i].wc);
		}
		CHECK_EQ(wc.byte_len, 5000);
	}
	CHECK_MEM(s.buf + 150000, expect + 200000, 5000);
	REQUIRE_EQ(gdak_ibv_qp_direct(s.qp, &out, &in), 0);
	CHECK_EQ(out, want ? 4u : 0u);
	CHECK_EQ(in, 0u);
	/* then a SEND, over UDP whichever way the four went (at the PSN after
	 * theirs): its receive completion is what the server waits for before
	 * it reads its memory (all the client's requests have landed) */
	{
		struct ibv_sge sg = { (uintptr_t)s.buf + 260000, 8, s.mr->lkey };
		struct ibv_send_wr *bad, w = { .wr_id = 8,
					       .sg_list = &sg,
					       .num_sge = 1,
					       .opcode = IBV_WR_SEND,
					       .send_flags = IBV_SEND_SIGNALED };

		memcpy(s.buf + 260000, SYNC_MSG, 8);
		REQUIRE_EQ(ibv_post_send(s.qp, &w, &bad), 0);
		REQUIRE_EQ(gdak_vt_wait_wc(s.cq, &wc), 1);
		CHECK_EQ(wc.status, IBV_WC_SUCCESS);
		CHECK_EQ(wc.wr_id, 8);
		CHECK_EQ(wc.opcode, IBV_WC_SEND);
		REQUIRE_EQ(gdak_ibv_qp_direct(s.qp, &out, &in), 0);
		CHECK_EQ(out, want ? 4u : 0u); /* a SEND never goes direct */
	}
	/* the server checks the bytes and, in dereg mode, deregisters MR 2
	 * before the second swap */
	CHECK_EQ(gdak_test_xfer(fd, &ack, &done, 1), 0);
	CHECK_EQ(ack, 1);
	CHECK_EQ(gdak_test_xfer(fd, &ack, &done, 1), 0);
	CHECK_EQ(ack, 1);

	raddr = s.peer.addr;
	rkey = s.peer.rkey;
	if (!strcmp(mode, "rkey") || refused_mode()) {
		rkey = s.peer.rkey ^ 0x5500; /* another slot: never registered */
	} else if (!strcmp(mode, "range")) {
		raddr = s.peer.addr + BUF - 32;
	} else {
		raddr = x.addr2 + 16;
		rkey = x.rkey2;
		len = 4096;
	}
	CHECK_EQ(post_rdma(&s, IBV_WR_RDMA_WRITE, 9, s.buf + 131072, len, s.mr->lkey, raddr, rkey),
		 0);
	REQUIRE_EQ(gdak_vt_wait_wc(s.cq, &wc), 1);
	CHECK_EQ(wc.wr_id, 9);
	if (!strcmp(mode, "race") && wc.status == IBV_WC_SUCCESS) {
		/* it won the race: the server checks it landed before its
		 * dereg returned, and that nothing changed after */
		REQUIRE_EQ(gdak_ibv_qp_direct(s.qp, &out, &in), 0);
		CHECK(out == (want ? 4u : 0u) || (want && out == 5u));
		printf("# race: the WRITE came first (%s)\n", out == 5u ? "direct" : "UDP");
		done = 2;
		CHECK_EQ(gdak_test_xfer(fd, &ack, &done, 1), 0);
		CHECK_EQ(ack, 1);
		gdak_vt_side_close(&s);
		free(expect);
		return;
	}
	if (!strcmp(mode, "err")) {
		/* the server's QP went to ERR before this WRITE: nobody takes
		 * it, directly or over UDP, and nothing lands */
		CHECK_EQ(wc.status, IBV_WC_RETRY_EXC_ERR);
		REQUIRE_EQ(gdak_ibv_qp_direct(s.qp, &out, &in), 0);
		CHECK_EQ(out, want ? 4u : 0u);
		CHECK_EQ(gdak_test_xfer(fd, &ack, &done, 1), 0);
		CHECK_EQ(ack, 1);
		gdak_vt_side_close(&s);
		free(expect);
		return;
	}
	if (!strcmp(mode, "race"))
		printf("# race: the deregistration came first\n");
	CHECK_EQ(wc.status, IBV_WC_REM_ACCESS_ERR);
	CHECK_EQ(qp_state(s.qp), IBV_QPS_ERR);
	/* the port's IBV_EVENT_PORT_ACTIVE of the open comes first */
	do {
		REQUIRE_EQ(ibv_get_async_event(s.ctx, &ev), 0);
		if (ev.event_type == IBV_EVENT_PORT_ACTIVE)
			ibv_ack_async_event(&ev);
	} while (ev.event_type == IBV_EVENT_PORT_ACTIVE);
	CHECK_EQ(ev.event_type, IBV_EVENT_QP_ACCESS_ERR);
	CHECK(ev.element.qp == s.qp);
	ibv_ack_async_event(&ev);
	REQUIRE_EQ(gdak_ibv_qp_direct(s.qp, &out, &in), 0);
	CHECK_EQ(out, want ? 4u : 0u); /* the refused one went over UDP */
	if (tpath) {
		/* every WRITE and the READ went out as packets, in our trace */
		unsigned w, r;

		trace_count(tpath, s.peer.qpn, &w, &r);
		CHECK_EQ(w, 4u);
		CHECK_EQ(r, 1u);
	}
	CHECK_EQ(gdak_test_xfer(fd, &ack, &done, 1), 0);
	CHECK_EQ(ack, 1);
	gdak_vt_side_close(&s);
	free(expect);
}

static void server(int fd)
{
	struct gdak_vt_side s;
	struct extra x;
	struct ibv_mr *mr2;
	uint8_t *cli = malloc(BUF), *mine = malloc(BUF), *buf2 = malloc(BUF2),
		*want2 = malloc(BUF2), *snap = malloc(BUF2);
	uint8_t inl[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
	uint64_t out = 0, in = 0;
	char done = 0, ack = 1;

	uint8_t rb[64] = { 0 };
	struct ibv_mr *mr3;
	struct ibv_wc wc;

	char path[128];
	struct udp_direct_head *head = NULL;
	int32_t own_pid = (int32_t)getpid();
	pid_t held = -1;
	int hold = -1, ready = -1;
	char *tpath;

	REQUIRE(cli && mine && buf2 && want2 && snap);
	if (deny_wanted())
		CHECK_EQ(prctl(PR_SET_DUMPABLE, 0, 0, 0, 0), 0);
	gdak_vt_side_open(&s, BUF, 2, ACCESS, 0x222222);
	mr3 = ibv_reg_mr(s.pd, rb, sizeof(rb), IBV_ACCESS_LOCAL_WRITE);
	REQUIRE(mr3 != NULL);
	{
		struct ibv_sge sg = { (uintptr_t)rb, sizeof(rb), mr3->lkey };
		struct ibv_recv_wr *bad, rw = { .wr_id = 33, .sg_list = &sg, .num_sge = 1 };

		REQUIRE_EQ(ibv_post_recv(s.qp, &rw, &bad), 0);
	}
	gdak_test_fill(buf2, BUF2, 3);
	mr2 = ibv_reg_mr(s.pd, buf2, BUF2, ACCESS);
	REQUIRE(mr2 != NULL);
	/* before the client connects (it maps our segment then): what no
	 * sender may take for ours */
	seg_path(path, sizeof(path), gid_addr(&s.me.gid), 4791);
	if (!strcmp(mode, "mode")) {
		CHECK_EQ(chmod(path, 0640), 0); /* group may read: not private */
	} else if (!strcmp(mode, "uid")) {
		CHECK_EQ(chown(path, 65534, 65534), 0); /* nobody's */
	} else if (!strcmp(mode, "deadpid")) {
		head = map_head(path);
		head->pid = (int32_t)dead_pid();
	} else if (!strcmp(mode, "exec")) {
		/* a live process at the pid, of this user, in this pid namespace,
		 * that exec'd: it does not hold the segment's nonce */
		held = exec_child(&hold, &ready);
		head = map_head(path);
		head->pid = (int32_t)held;
	}
	gdak_vt_side_connect(&s, fd);
	tpath = trace_start(1); /* before the client hears from us again */
	memset(&x, 0, sizeof(x));
	x.addr2 = (uintptr_t)buf2;
	x.rkey2 = mr2->rkey;
	x.pid = (int32_t)getpid();
	{
		struct extra none, v;

		REQUIRE_EQ(gdak_test_xfer(fd, &none, &x, sizeof(x)), 0);
		memset(&v, 0, sizeof(v));
		REQUIRE_EQ(gdak_test_xfer(fd, &v, &v, sizeof(v)), 0); /* the probe's verdict */
		x.probe = v.probe;
		x.wrote = v.wrote;
		x.skip = v.skip;
	}
	if (x.skip)
		goto out;
	gdak_test_fill(cli, BUF, 1);
	gdak_test_fill(mine, BUF, 2);
	gdak_test_fill(want2, BUF2, 3);
	if (x.wrote)
		want2[0] = 0x5a; /* the probe's byte */

	CHECK_EQ(gdak_test_xfer(fd, &done, &ack, 1), 0);
	CHECK_EQ(done, 1);
	/* the client's SEND, after its four requests: they have all landed */
	REQUIRE_EQ(gdak_vt_wait_wc(s.cq, &wc), 1);
	CHECK_EQ(wc.status, IBV_WC_SUCCESS);
	CHECK_EQ(wc.wr_id, 33);
	CHECK_EQ(wc.opcode, IBV_WC_RECV);
	CHECK_EQ(wc.byte_len, 8);
	CHECK_MEM(rb, SYNC_MSG, 8);
	CHECK_MEM(s.buf, cli, 65536);
	CHECK_MEM(s.buf + 65536, mine + 65536, 70000 - 65536);
	CHECK_MEM(s.buf + 70000, inl, 8);
	CHECK_MEM(s.buf + 70008, mine + 70008, BUF - 70008);
	memcpy(want2 + 16, cli + 100000, 4096);
	CHECK_MEM(buf2, want2, BUF2);
	REQUIRE_EQ(gdak_ibv_qp_direct(s.qp, &out, &in), 0);
	CHECK_EQ(out, 0u);
	CHECK_EQ(in, x.probe ? 4u : 0u);
	if (!strcmp(mode, "err")) {
		/* from its return on, nothing lands for this QP */
		struct ibv_qp_attr qa = { .qp_state = IBV_QPS_ERR };

		CHECK_EQ(ibv_modify_qp(s.qp, &qa, IBV_QP_STATE), 0);
		CHECK_EQ(qp_state(s.qp), IBV_QPS_ERR);
	}
	if (!strcmp(mode, "dereg")) {
		/* from its return on, nobody writes into buf2 (still ours) */
		CHECK_EQ(ibv_dereg_mr(mr2), 0);
		mr2 = NULL;
	}
	CHECK_EQ(gdak_test_xfer(fd, &done, &ack, 1), 0);
	if (!strcmp(mode, "race")) {
		/* the client's WRITE into buf2 is on its way: deregister now;
		 * what buf2 holds when that returns it holds for good */
		CHECK_EQ(ibv_dereg_mr(mr2), 0);
		mr2 = NULL;
		memcpy(snap, buf2, BUF2);
	}

	CHECK_EQ(gdak_test_xfer(fd, &done, &ack, 1), 0);
	if (!strcmp(mode, "race")) {
		CHECK_MEM(buf2, snap, BUF2); /* nothing after the dereg */
		if (done == 2) {	     /* it landed before, whole */
			memcpy(want2 + 16, cli + 131072, 4096);
			CHECK_MEM(snap, want2, BUF2);
			REQUIRE_EQ(gdak_ibv_qp_direct(s.qp, &out, &in), 0);
			CHECK(in == (x.probe ? 4u : 0u) || (x.probe && in == 5u));
			goto out;
		}
	}
	/* the bad request came over UDP: the responder's NAK put us in ERR */
	CHECK_EQ(done, 1);
	CHECK_EQ(qp_state(s.qp), IBV_QPS_ERR);
	CHECK_MEM(buf2, want2, BUF2);
	CHECK_MEM(s.buf + 70008, mine + 70008, BUF - 70008);
	REQUIRE_EQ(gdak_ibv_qp_direct(s.qp, &out, &in), 0);
	CHECK_EQ(in, x.probe ? 4u : 0u);
	if (tpath) {
		/* and every one came in as packets, in ours */
		unsigned w, r;

		trace_count(tpath, s.qp->qp_num, &w, &r);
		tpath = NULL;
		CHECK_EQ(w, 4u);
		CHECK_EQ(r, 1u);
	}
out:
	if (tpath) {
		(void)gdak_ibv_set_trace(NULL);
		unlink(tpath);
		free(tpath);
	}
	if (head) {
		head->pid = own_pid; /* ours again: removed at exit */
		munmap(head, sizeof(*head));
	}
	if (held > 0) {
		close(hold);
		close(ready);
		gdak_test_reap(held);
	}
	if (mr2)
		CHECK_EQ(ibv_dereg_mr(mr2), 0);
	CHECK_EQ(ibv_dereg_mr(mr3), 0);
	gdak_vt_side_close(&s);
	free(snap);
	free(cli);
	free(mine);
	free(buf2);
	free(want2);
}

/* A value GDAK_IBV_DIRECT does not take: the device does not open (its
 * message names the variable), rather than running some other way. */
static int badenv(void)
{
	struct ibv_device **l;
	struct ibv_context *c;
	int n = 0;

	setenv("GDAK_IBV_DIRECT", "maybe", 1);
	l = ibv_get_device_list(&n);
	REQUIRE(l != NULL && n > 0);
	errno = 0;
	c = ibv_open_device(l[0]);
	CHECK(c == NULL);
	if (c)
		ibv_close_device(c);
	ibv_free_device_list(l);
	return gdak_test_end();
}

/* A device of a child process (its segment published), which tells us its
 * address on *ready and then: kill 0 waits to be killed, 1 waits for EOF on
 * *hold, 2 exec's "hold" (its segment stays, its nonce goes). */
static pid_t seg_child(int how, uint32_t *addr, int *hold, int *ready)
{
	int h[2], r[2];
	pid_t p, me = getpid();

	REQUIRE_EQ(pipe2(h, O_CLOEXEC), 0);
	REQUIRE_EQ(pipe2(r, O_CLOEXEC), 0);
	fflush(NULL);
	p = fork();
	REQUIRE(p >= 0);
	if (p == 0) {
		struct ibv_context *c;
		union ibv_gid g;
		uint32_t a;
		char x;

		close(h[1]);
		close(r[0]);
		if (how != 1) {
			/* an address of its own outside 127.0.0.0/24 (where the
			 * devices that come after claim theirs): the one this
			 * segment names stays unclaimed when this child is gone */
			char a4[32];

			snprintf(a4, sizeof(a4), "127.%d.%u.%u", 253 - how,
				 (unsigned)(me >> 8) & 0xff, (unsigned)me & 0xff);
			setenv("GDAK_IBV_ADDR", a4, 1);
		}
		c = gdak_vt_open_first();
		if (!c || ibv_query_gid(c, 1, 0, &g))
			_exit(1);
		a = gid_addr(&g);
		if (write(r[1], &a, 4) != 4)
			_exit(1);
		if (how == 0)
			for (;;)
				pause();
		if (how == 2) {
			if (dup2(h[0], 0) < 0 || dup2(r[1], 1) < 0)
				_exit(127);
			execl("/proc/self/exe", "gdak_verbs_direct", "hold", (char *)NULL);
			_exit(127);
		}
		while (read(h[0], &x, 1) > 0)
			;
		ibv_close_device(c);
		exit(0); /* (its atexit removes its segment) */
	}
	close(h[0]);
	close(r[1]);
	REQUIRE_EQ(read(r[0], addr, 4), 4);
	if (how == 2) {
		char c = 0;

		REQUIRE_EQ(read(r[0], &c, 1), 1); /* it exec'd */
		CHECK_EQ(c, 'x');
	}
	*hold = h[1];
	*ready = r[0];
	return p;
}

/* A copy of segment from at path, its head's pid set to pid, mode m and
 * (uid != -1) another owner. */
static void plant(const char *from, const char *path, int32_t pid, mode_t m, uid_t uid)
{
	static uint8_t buf[1 << 20];
	int in = open(from, O_RDONLY | O_CLOEXEC), out;
	ssize_t n;

	REQUIRE(in >= 0);
	n = read(in, buf, sizeof(buf));
	close(in);
	REQUIRE(n >= (ssize_t)sizeof(struct udp_direct_head) && n < (ssize_t)sizeof(buf));
	((struct udp_direct_head *)(void *)buf)->pid = pid;
	out = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	REQUIRE(out >= 0);
	REQUIRE_EQ(write(out, buf, (size_t)n), n);
	REQUIRE_EQ(fchmod(out, m), 0);
	if (uid != (uid_t)-1)
		REQUIRE_EQ(fchown(out, uid, uid), 0);
	close(out);
}

/* Opening a device removes every segment of this user whose owner is gone -
 * killed (SIGKILL: no atexit), or exec'd - and no other: a live owner's, one
 * that others may read, another user's (as root). */
static int sweep_test(void)
{
	char pk[128], pl[128], pe[128], pmode[128], puid[128];
	uint32_t ak, al, ae;
	int hk, rk, hl, rl, he, re;
	pid_t k, l, e;
	struct ibv_context *c;
	int root = geteuid() == 0;

	k = seg_child(0, &ak, &hk, &rk);
	l = seg_child(1, &al, &hl, &rl);
	e = seg_child(2, &ae, &he, &re);
	seg_path(pk, sizeof(pk), ak, 4791);
	seg_path(pl, sizeof(pl), al, 4791);
	seg_path(pe, sizeof(pe), ae, 4791);
	REQUIRE_EQ(kill(k, SIGKILL), 0);
	REQUIRE_EQ(waitpid(k, NULL, 0), k);
	/* (port 1: no device's; the address: this test's) */
	seg_path(pmode, sizeof(pmode), htonl(0x7ffe0000u | ((uint32_t)getpid() & 0xffff)), 1);
	seg_path(puid, sizeof(puid), htonl(0x7ffd0000u | ((uint32_t)getpid() & 0xffff)), 1);
	plant(pl, pmode, (int32_t)k, 0640, (uid_t)-1);
	if (root)
		plant(pl, puid, (int32_t)k, 0600, 65534);
	/* A device opened meanwhile by another test sweeps them as well; an
	 * exec leaves the segment, so pe is there unless that happened. */
	if (access(pk, F_OK))
		printf("# %s: already gone (another device's open)\n", pk);
	if (access(pe, F_OK))
		printf("# %s: already gone (another device's open)\n", pe);

	c = gdak_vt_open_first();
	REQUIRE(c != NULL);
	CHECK(access(pk, F_OK) != 0 && errno == ENOENT); /* killed */
	CHECK(access(pe, F_OK) != 0 && errno == ENOENT); /* exec'd */
	CHECK_EQ(access(pl, F_OK), 0);			 /* alive */
	CHECK_EQ(access(pmode, F_OK), 0);		 /* not private: not ours */
	if (root)
		CHECK_EQ(access(puid, F_OK), 0); /* another user's */
	ibv_close_device(c);

	CHECK_EQ(unlink(pmode), 0);
	if (root)
		CHECK_EQ(unlink(puid), 0);
	close(hl);
	close(he);
	gdak_test_reap(l);
	gdak_test_reap(e);
	CHECK(access(pl, F_OK) != 0 && errno == ENOENT); /* removed at its exit */
	close(rk);
	close(hk);
	close(rl);
	close(re);
	return gdak_test_end();
}

/* "hold" (exec_child's program): says so, then waits for its pipe's EOF */
static int hold_mode(void)
{
	char c;

	if (write(1, "x", 1) != 1)
		return 1;
	while (read(0, &c, 1) > 0)
		;
	return 0;
}

int main(int argc, char **argv)
{
	int r;

	mode = argc > 1 ? argv[1] : "rkey";
	if (!strcmp(mode, "hold"))
		return hold_mode();
	if (!strcmp(mode, "badenv"))
		return badenv();
	if (!strcmp(mode, "sweep"))
		return sweep_test();
	if (strcmp(mode, "rkey") && strcmp(mode, "range") && strcmp(mode, "dereg") &&
	    strcmp(mode, "race") && strcmp(mode, "err") && !refused_mode()) {
		fprintf(stderr,
			"usage: %s rkey|range|dereg|race|err|mode|uid|deadpid|exec|eperm|trace|trace_tx|"
			"sweep|"
			"badenv\n",
			argv[0]);
		return 2;
	}
	if (!strcmp(mode, "uid") && geteuid() != 0) {
		fprintf(stderr, "SKIP: uid: only root can give its segment to another user\n");
		return 77;
	}
	r = gdak_test_2proc(server, client);
	return r == 0 && skipped ? 77 : r;
}

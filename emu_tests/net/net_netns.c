/* SPDX-License-Identifier: MIT */
/*
 * net_netns.c - gdak.net.netns: two gdak processes in two network
 * namespaces joined by a veth pair, talking RoCEv2 over a real (virtual)
 * link instead of loopback.
 *
 *   net_netns UDP_2PROC GDAK_TRACE_TOOL
 *
 * The test creates namespaces gdakN<pid>a / gdakN<pid>b, a veth pair with
 * 10.200.1.1/24 and 10.200.1.2/24 inside them (nothing on the host's own
 * interfaces), and removes both on every exit path.  Then:
 *
 *  1. UDP_2PROC (net_udp_2proc.c) "ops" runs one side per namespace: the
 *     server bound to 10.200.1.1:4791 (RoCEv2's port, so Wireshark decodes
 *     both directions), the client on an ephemeral port of 10.200.1.2;
 *     every operation with bytes, CQEs and receive CQEs checked.  The server
 *     writes a gdak trace; GDAK_TRACE_TOOL must decode every packet in it
 *     with a good ICRC.
 *  2. With `tc netem` (loss, duplication, reordering on both veth ends) the
 *     "netem" mode (150 x WRITE/READ/FETCH_ADD, exactly once, data intact);
 *     where the kernel has no sch_netem the part is skipped with a message.
 *  3. When dumpcap and tshark are installed, the live session of step 1 is
 *     captured on the server's veth end: every RoCE frame must decode as
 *     InfiniBand with an opcode, none malformed; opcode counts are printed,
 *     and the captured frames go through GDAK_TRACE_TOOL's ICRC check too
 *     (the kernel's real IPv4 headers, not gdak's reconstruction).
 *
 * Exits 77 without the right to create namespaces (not root, no `ip`).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "gdak_test.h"

#define ADDR_A "10.200.1.1"
#define ADDR_B "10.200.1.2"
#define BS_PORT "18515"

static char ns_a[32], ns_b[32], if_a[16], if_b[16];
static char dir[64];
static int ns_made;
static pid_t kids[8];	/* running children: killed on any exit */
static unsigned nkids;

/* Run a shell command quietly; its exit status (or -1). */
static int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int sh(const char *fmt, ...)
{
	char cmd[1024];
	va_list ap;
	int r;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	r = system(cmd);
	return r == -1 ? -1 : WIFEXITED(r) ? WEXITSTATUS(r) : 128 + WTERMSIG(r);
}

static void cleanup(void)
{
	for (unsigned i = 0; i < nkids; i++)
		if (kids[i] > 0 && !kill(kids[i], SIGKILL))
			waitpid(kids[i], NULL, 0);
	nkids = 0;
	if (ns_made) {
		/* deleting a namespace destroys the veth end in it, and its peer */
		sh("ip netns del %s >/dev/null 2>&1", ns_a);
		sh("ip netns del %s >/dev/null 2>&1", ns_b);
		ns_made = 0;
	}
	if (dir[0] && !getenv("GDAK_KEEP")) {
		sh("rm -rf %s", dir);
		dir[0] = 0;
	}
}

static void on_signal(int sig)
{
	cleanup();
	signal(sig, SIG_DFL);
	raise(sig);
}

static void skip(const char *why)
{
	fprintf(stderr, "skipped: %s\n", why);
	cleanup();
	exit(77);
}

static int setup(void)
{
	pid_t me = getpid();

	snprintf(ns_a, sizeof(ns_a), "gdakN%da", (int)me);
	snprintf(ns_b, sizeof(ns_b), "gdakN%db", (int)me);
	snprintf(if_a, sizeof(if_a), "gN%da", (int)(me % 10000000));
	snprintf(if_b, sizeof(if_b), "gN%db", (int)(me % 10000000));
	if (geteuid() != 0)
		skip("network namespaces need root (CAP_SYS_ADMIN, CAP_NET_ADMIN)");
	if (sh("command -v ip >/dev/null 2>&1"))
		skip("no `ip` (iproute2)");
	if (sh("ip netns add %s 2>/dev/null", ns_a))
		skip("`ip netns add` failed: no right to create network namespaces here");
	ns_made = 1;
	atexit(cleanup);
	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);
	signal(SIGALRM, on_signal);
	if (sh("ip netns add %s", ns_b) ||
	    sh("ip link add %s type veth peer name %s", if_a, if_b)) {
		/* namespaces but no veth: say so rather than pass */
		if (sh("ip link show %s >/dev/null 2>&1", if_a))
			skip("cannot create a veth pair (no veth driver?)");
		return -1;
	}
	if (sh("ip link set %s netns %s && ip link set %s netns %s", if_a, ns_a, if_b, ns_b) ||
	    sh("ip -n %s addr add " ADDR_A "/24 dev %s && ip -n %s link set %s up && "
	       "ip -n %s link set lo up", ns_a, if_a, ns_a, if_a, ns_a) ||
	    sh("ip -n %s addr add " ADDR_B "/24 dev %s && ip -n %s link set %s up && "
	       "ip -n %s link set lo up", ns_b, if_b, ns_b, if_b, ns_b))
		return -1;
	return 0;
}

/* Start argv in namespace ns, with GDAK_TRACE=trace when trace is set;
 * `ip netns exec` execs the command, so the pid is the command's. */
static pid_t spawn(const char *ns, const char *trace, const char *const argv[], const char *out)
{
	pid_t pid = fork();

	if (pid) {
		if (pid > 0 && nkids < sizeof(kids) / sizeof(kids[0]))
			kids[nkids++] = pid;
		return pid;
	}
	if (trace)
		setenv("GDAK_TRACE", trace, 1);
	if (out) {
		int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
			close(fd);
		}
	}
	{
		const char *args[16] = {"ip", "netns", "exec", ns};
		int n = 4;

		for (int i = 0; argv[i] && n < 15; i++)
			args[n++] = argv[i];
		args[n] = NULL;
		execvp("ip", (char *const *)args);
	}
	_exit(127);
}

static int wait_exit(pid_t pid)
{
	int st = 0;

	if (waitpid(pid, &st, 0) != pid)
		return -1;
	for (unsigned i = 0; i < nkids; i++)
		if (kids[i] == pid)
			kids[i] = 0;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static void cat_file(const char *path, const char *tag)
{
	char line[512];
	FILE *f = fopen(path, "r");

	if (!f)
		return;
	while (fgets(line, sizeof(line), f))
		fprintf(stderr, "  %s| %s", tag, line);
	fclose(f);
}

/* The two sides of net_udp_2proc MODE in the two namespaces; 0 when both pass. */
static int run_pair(const char *prog, const char *mode, const char *trace)
{
	char srv_dev[64] = "emu:udp:" ADDR_A ":4791", cli_dev[64] = "emu:udp:" ADDR_B;
	char so[128], co[128];
	const char *sargv[] = {prog, mode, "--role", "server", srv_dev, ADDR_A, BS_PORT, NULL};
	const char *cargv[] = {prog, mode, "--role", "client", cli_dev, ADDR_A, BS_PORT, NULL};
	pid_t s, c;
	int rs, rc;

	snprintf(so, sizeof(so), "%s/%s.server.log", dir, mode);
	snprintf(co, sizeof(co), "%s/%s.client.log", dir, mode);
	s = spawn(ns_a, trace, sargv, so);
	c = spawn(ns_b, NULL, cargv, co);
	REQUIRE(s > 0 && c > 0);
	rc = wait_exit(c);
	rs = wait_exit(s);
	printf("%s: server exit %d, client exit %d\n", mode, rs, rc);
	if (rs || rc) {
		cat_file(so, "server");
		cat_file(co, "client");
	} else {
		/* the per-side counters line */
		sh("grep -h 'tx ' %s %s", so, co);
	}
	CHECK_EQ(rs, 0);
	CHECK_EQ(rc, 0);
	return rs || rc;
}

/* The packet count of dumpcap's latest progress report ("Packets: N"). */
static unsigned captured(const char *log)
{
	char buf[8192];
	unsigned n = 0;
	size_t len;
	FILE *f = fopen(log, "r");

	if (!f)
		return 0;
	len = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[len] = 0;
	for (char *p = buf; (p = strstr(p, "Packets: ")); p += 9)
		n = (unsigned)strtoul(p + 9, NULL, 10);
	return n;
}

static void probe(void)
{
	sh("ip netns exec %s bash -c 'echo probe > /dev/udp/" ADDR_A "/9' 2>/dev/null", ns_b);
}

/*
 * dumpcap says "Capturing on" before its socket is attached, and its
 * kernel ring hands packets over a block at a time (TPACKET_V3), so
 * neither the start nor the end of a capture can be taken on trust.
 * Probe datagrams (to the discard port, not RoCE) go from the other
 * namespace until the count moves: at the start, until one was seen
 * (returns the probes sent); at the end, until the count covers every
 * probe ever sent plus the session's packets plus one - the blocks retire
 * in arrival order, so then every session packet is in the file.  Bounded
 * by tries, not by a timing assumption.
 */
static unsigned capture_started(const char *log)
{
	for (unsigned i = 1; i <= 400; i++) {
		probe();
		usleep(25000);
		if (captured(log))
			return i;
	}
	return 0;
}

static void capture_drain(const char *log, unsigned want)
{
	for (unsigned i = 0; i < 400 && captured(log) < want; i++) {
		probe();
		usleep(25000);
	}
}

/* gdak-trace over a trace or a capture: count packet lines and bad ICRCs.
 * A foreign capture (dumpcap's) lacks the gdak writer's closing record, for
 * which gdak-trace exits 1; a gdak trace must read cleanly. */
static unsigned check_icrc(const char *tool, const char *file, const char *what,
			   unsigned min_pkts, int foreign)
{
	int st;
	char cmd[512], line[1024];
	unsigned pkts = 0, ok = 0, bad = 0;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "%s %s 2>&1", tool, file);
	p = popen(cmd, "r");
	REQUIRE(p);
	while (fgets(line, sizeof(line), p)) {
		if (!strstr(line, "icrc="))
			continue;
		pkts++;
		if (strstr(line, "icrc=ok"))
			ok++;
		else if (bad++ < 5)
			fprintf(stderr, "%s: %s", what, line);
	}
	st = pclose(p);
	if (!foreign)
		CHECK_EQ(st, 0);
	printf("%s: %u RoCE packets, %u with icrc=ok, %u not\n", what, pkts, ok, bad);
	CHECK(pkts >= min_pkts);
	CHECK_EQ(ok, pkts);
	return pkts;
}

static void count_op(int op, void *arg)
{
	((unsigned *)arg)[op < 0 ? 256 : op]++;
}

static void check_capture(const char *pcap, const char *tool, unsigned session_pkts)
{
	static const char *const names[] = {
		[0x00] = "SEND_FIRST", [0x01] = "SEND_MIDDLE", [0x02] = "SEND_LAST",
		[0x03] = "SEND_LAST_IMM", [0x04] = "SEND_ONLY", [0x05] = "SEND_ONLY_IMM",
		[0x06] = "WRITE_FIRST", [0x07] = "WRITE_MIDDLE", [0x08] = "WRITE_LAST",
		[0x09] = "WRITE_LAST_IMM", [0x0a] = "WRITE_ONLY", [0x0b] = "WRITE_ONLY_IMM",
		[0x0c] = "READ_REQ", [0x0d] = "READ_RESP_FIRST", [0x0e] = "READ_RESP_MIDDLE",
		[0x0f] = "READ_RESP_LAST", [0x10] = "READ_RESP_ONLY", [0x11] = "ACK",
		[0x12] = "ATOMIC_ACK", [0x13] = "CMP_SWAP", [0x14] = "FETCH_ADD",
	};
	/* opcodes the "ops" session must produce on the wire */
	static const uint8_t must[] = {0x06, 0x07, 0x08, 0x09, 0x0a, 0x00, 0x01, 0x02, 0x04, 0x05,
				       0x0c, 0x0d, 0x0e, 0x0f, 0x10, 0x11, 0x12, 0x13, 0x14};
	/* count[256]: frames without an opcode */
	unsigned count[257] = { 0 }, frames;

	/* every UDP frame to or from port 4791 must be InfiniBand with an opcode */
	frames = gdak_test_tshark_opcodes(pcap, "udp.port==4791", count_op, count);
	/* the server's trace saw every packet of the session: so must the wire */
	CHECK_EQ(frames, session_pkts);
	CHECK_EQ(count[256], 0);
	printf("capture: %u RoCE frames:", frames);
	for (unsigned op = 0; op < 256; op++)
		if (count[op])
			printf(" %s=%u", op < sizeof(names) / sizeof(names[0]) && names[op] ? names[op]
											   : "?", count[op]);
	printf("\n");
	for (unsigned i = 0; i < sizeof(must); i++) {
		if (!count[must[i]])
			fprintf(stderr, "capture: no %s frame\n", names[must[i]]);
		CHECK(count[must[i]] > 0);
	}
	/* nothing malformed, no expert warning or error */
	CHECK_EQ(gdak_test_tshark_flagged(pcap), 0);
	/* the ICRC over the real headers the kernel put on the wire */
	check_icrc(tool, pcap, "capture", frames, 1);
}

int main(int argc, char **argv)
{
	char trace[128], pcap[128], caplog[128];
	pid_t cap = 0;
	unsigned probes = 0, session;
	int have_cap, netem;

	if (argc != 3) {
		fprintf(stderr, "usage: %s NET_UDP_2PROC GDAK_TRACE\n", argv[0]);
		return 2;
	}
	alarm(150); /* the signal handler removes the namespaces */
	snprintf(dir, sizeof(dir), "/tmp/gdak_netns_%d", (int)getpid());
	REQUIRE_EQ(mkdir(dir, 0755), 0);
	if (setup()) {
		gdak_test_fail(__FILE__, __LINE__, "cannot set up namespaces %s/%s and veth %s/%s",
			       ns_a, ns_b, if_a, if_b);
		return gdak_test_end();
	}
	snprintf(trace, sizeof(trace), "%s/server.trace", dir);
	snprintf(pcap, sizeof(pcap), "%s/veth.pcapng", dir);
	snprintf(caplog, sizeof(caplog), "%s/dumpcap.log", dir);

	/* 3 (set-up): capture the live session on the server's veth end */
	have_cap = !sh("command -v dumpcap >/dev/null 2>&1 && command -v tshark >/dev/null 2>&1 "
		       "&& command -v bash >/dev/null 2>&1");
	if (have_cap) {
		const char *dargv[] = {"dumpcap", "-i", if_a, "-w", pcap, "-f", "udp", NULL};
		cap = spawn(ns_a, NULL, dargv, caplog);
		probes = capture_started(caplog);
		if (!probes) {
			cat_file(caplog, "dumpcap");
			gdak_test_fail(__FILE__, __LINE__, "dumpcap did not start capturing");
			kill(cap, SIGTERM);
			wait_exit(cap);
			have_cap = 0;
		}
	} else {
		printf("dumpcap/tshark/bash not installed: the live capture part is skipped\n");
	}

	/* 1: every operation across the namespaces, traced on the server */
	run_pair(argv[1], "ops", trace);
	session = check_icrc(argv[2], trace, "server trace", 20, 0);
	if (have_cap) {
		capture_drain(caplog, probes + session + 1);
		kill(cap, SIGINT);
		CHECK_EQ(wait_exit(cap), 0);
		check_capture(pcap, argv[2], session);
	}

	/* 2: kernel-level impairment, when the kernel has netem */
	netem = !sh("ip netns exec %s tc qdisc add dev %s root netem loss 2%% duplicate 2%% "
		    "reorder 10%% delay 200us >/dev/null 2>&1", ns_a, if_a) &&
		!sh("ip netns exec %s tc qdisc add dev %s root netem loss 2%% duplicate 2%% "
		    "reorder 10%% delay 200us >/dev/null 2>&1", ns_b, if_b);
	if (netem)
		run_pair(argv[1], "netem", NULL);
	else
		printf("tc netem not available (no sch_netem in this kernel): the kernel-level "
		       "loss/duplication/reordering part is skipped\n");
	cleanup();
	return gdak_test_end();
}

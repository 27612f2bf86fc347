/* SPDX-License-Identifier: MIT */
/*
 * verbs_sched.c - GDAK_NIC_SCHED: the NIC thread's scheduling policy,
 * parsed at every engine start, applied by the thread to itself where the
 * kernel permits it, refused with the reason logged where it does not.
 * Checked from the kernel's side (the policy, priority and nice value of
 * the process's "gdak-nic0" thread), never by timing.  Each part runs in a
 * child of its own, its stderr (gdak's log) into a file the part reads.
 *
 * 1. Bad values: ibv_open_device fails with EINVAL, the log names the
 *    variable, the value and what is allowed; the next good value opens.
 * 2. inherit / unset: the thread has the opener's policy and nice value;
 *    nice:N (raising it needs no privilege): the thread's nice is N, the
 *    opener's unchanged; a second open after the last close takes a new
 *    value (read at every engine start).
 * 3. Refused: without CAP_SYS_NICE (dropped where the test runs as root)
 *    and with RLIMIT_RTPRIO and RLIMIT_NICE 0, fifo:3 and nice:-5 leave the
 *    thread as it was, the device still opens, and the log says why,
 *    naming the limit and its value.
 * 4. Real-time where permitted (root, or RLIMIT_RTPRIO >= 2; else
 *    skipped, said so): fifo:2 and rr give SCHED_FIFO 2 and SCHED_RR 1; a
 *    WRITE between two QPs of the process lands byte for byte; then an
 *    idle second, also with GDAK_POLL=spin: the real-time thread blocks
 *    (next to no context switches or CPU time), it never spins.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "gdak_test.h"
#include "gdak_test_proc.h"
#include "gdak_verbs.h"

#define LOG_CAP 65536
#define IDLE_MAX_SWITCHES 50
#define IDLE_MAX_CPU_PCT 10

static char logpath[64];

/* stderr into a fresh file; its text so far into buf */
static void log_start(void)
{
	int fd;

	snprintf(logpath, sizeof(logpath), "/tmp/gdak-verbs-sched.%d", (int)getpid());
	fd = open(logpath, O_CREAT | O_TRUNC | O_WRONLY, 0600);
	REQUIRE(fd >= 0);
	fflush(stderr);
	REQUIRE(dup2(fd, 2) == 2);
	close(fd);
}

static const char *log_text(void)
{
	static char buf[LOG_CAP];
	FILE *f;
	size_t n;

	fflush(stderr);
	f = fopen(logpath, "r");
	if (!f)
		return "";
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	return buf;
}

struct tsched {
	int policy, prio, nice;
};

static struct tsched sched_of(int tid)
{
	struct tsched s = { -1, -1, 99 };
	struct sched_param sp;

	s.policy = sched_getscheduler(tid);
	if (sched_getparam(tid, &sp) == 0)
		s.prio = sp.sched_priority;
	errno = 0;
	s.nice = getpriority(PRIO_PROCESS, (id_t)tid);
	if (errno)
		s.nice = 99;
	return s;
}

static struct ibv_context *open_dev(void)
{
	struct ibv_device **l = ibv_get_device_list(NULL);
	struct ibv_context *c;

	REQUIRE(l && l[0]);
	errno = 0;
	c = ibv_open_device(l[0]);
	ibv_free_device_list(l);
	return c;
}

/* open under GDAK_NIC_SCHED=v (NULL: unset); the NIC thread's scheduling */
static struct ibv_context *open_with(const char *v, struct tsched *out)
{
	struct ibv_context *c;
	int tid;

	if (v)
		setenv("GDAK_NIC_SCHED", v, 1);
	else
		unsetenv("GDAK_NIC_SCHED");
	c = open_dev();
	if (!c)
		return NULL;
	tid = gdak_test_nic_tid();
	CHECK(tid > 0);
	*out = sched_of(tid);
	fprintf(stderr, "GDAK_NIC_SCHED=%s: policy %d priority %d nice %d\n", v ? v : "(unset)",
		out->policy, out->prio, out->nice);
	return c;
}

static int run_child(void (*fn)(void))
{
	pid_t p = fork();
	int st;

	REQUIRE(p >= 0);
	if (p == 0) {
		log_start();
		fn();
		fputs(log_text(), stdout);
		unlink(logpath);
		exit(gdak_test_end());
	}
	REQUIRE(waitpid(p, &st, 0) == p);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* ---- 1 -------------------------------------------------------------------------- */

static void part_bad(void)
{
	static const char *const bad[] = { "fifo:0",   "fifo:100", "rr:-1",   "nice:20",
					   "nice:-21", "nice:",	   "nice:3x", "fifo5",
					   "idle",     "fifo:1:2", "rr:",     "batch",
					   "nice: 5",  "nice:+5",  "fifox",   "rr-2" };
	struct tsched s;
	struct ibv_context *c;
	char want[64];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		c = open_with(bad[i], &s);
		CHECK(c == NULL);
		CHECK_EQ(errno, EINVAL);
		if (c)
			ibv_close_device(c);
		snprintf(want, sizeof(want), "GDAK_NIC_SCHED='%s'", bad[i]);
		CHECK(strstr(log_text(), want) != NULL);
	}
	/* a mistyped policy name is named as such, not as a bad priority */
	CHECK(strstr(log_text(), "GDAK_NIC_SCHED='fifox': unknown policy") != NULL);
	CHECK(strstr(log_text(), "GDAK_NIC_SCHED='nice:+5': a nice value is -20..19") != NULL);
	CHECK(strstr(log_text(), "allowed: inherit, nice:N (N -20..19), fifo[:P] or rr[:P] "
				 "(P 1..99)") != NULL);
	/* nothing of a failed start is left: a good value opens */
	c = open_with("nice:1", &s);
	REQUIRE(c != NULL);
	CHECK_EQ(s.nice, 1);
	CHECK_EQ(ibv_close_device(c), 0);
}

/* ---- 2 -------------------------------------------------------------------------- */

static void part_nice(void)
{
	struct tsched me = sched_of((int)syscall(SYS_gettid)), s;
	struct ibv_context *c;

	c = open_with(NULL, &s);
	REQUIRE(c != NULL);
	CHECK_EQ(s.policy, me.policy);
	CHECK_EQ(s.nice, me.nice);
	CHECK_EQ(ibv_close_device(c), 0);

	c = open_with("inherit", &s);
	REQUIRE(c != NULL);
	CHECK_EQ(s.policy, me.policy);
	CHECK_EQ(s.nice, me.nice);
	CHECK_EQ(ibv_close_device(c), 0);

	if (me.nice > 12)
		GDAK_TEST_SKIP("the test runs at nice %d: no higher value to ask for", me.nice);
	c = open_with("nice:13", &s);
	REQUIRE(c != NULL);
	CHECK_EQ(s.policy, SCHED_OTHER);
	CHECK_EQ(s.nice, 13);
	/* the thread's, not the process's */
	CHECK_EQ(sched_of((int)syscall(SYS_gettid)).nice, me.nice);
	CHECK_EQ(ibv_close_device(c), 0);

	/* read again at the next engine start; upper case too */
	c = open_with("NICE:14", &s);
	REQUIRE(c != NULL);
	CHECK_EQ(s.nice, 14);
	CHECK_EQ(ibv_close_device(c), 0);
	CHECK(strstr(log_text(), "refused") == NULL);
}

/* ---- 3 -------------------------------------------------------------------------- */

static void drop_sys_nice(void)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2];

	REQUIRE(syscall(SYS_capget, &h, d) == 0);
	d[CAP_SYS_NICE / 32].effective &= ~(1u << (CAP_SYS_NICE % 32));
	d[CAP_SYS_NICE / 32].permitted &= ~(1u << (CAP_SYS_NICE % 32));
	d[CAP_SYS_NICE / 32].inheritable &= ~(1u << (CAP_SYS_NICE % 32));
	REQUIRE(syscall(SYS_capset, &h, d) == 0);
}

static void part_refused(void)
{
	struct rlimit zero = { 0, 0 };
	struct tsched me, s;
	struct ibv_context *c;

	drop_sys_nice();
	REQUIRE(setrlimit(RLIMIT_RTPRIO, &zero) == 0);
	REQUIRE(setrlimit(RLIMIT_NICE, &zero) == 0);
	me = sched_of((int)syscall(SYS_gettid));

	c = open_with("fifo:3", &s);
	REQUIRE(c != NULL);
	CHECK_EQ(s.policy, me.policy);
	CHECK(s.policy != SCHED_FIFO);
	CHECK(strstr(log_text(),
		     "GDAK_NIC_SCHED=fifo:3 refused for NIC thread 0: a real-time "
		     "policy needs CAP_SYS_NICE or RLIMIT_RTPRIO >= 3 (it is 0)") != NULL);
	CHECK_EQ(ibv_close_device(c), 0);

	c = open_with("nice:-5", &s);
	REQUIRE(c != NULL);
	CHECK_EQ(s.nice, me.nice);
	CHECK(strstr(log_text(),
		     "GDAK_NIC_SCHED=nice:-5 refused for NIC thread 0: a lower nice "
		     "value needs CAP_SYS_NICE or RLIMIT_NICE >= 25 (it is 0)") != NULL);
	CHECK_EQ(ibv_close_device(c), 0);
}

/* ---- 4 -------------------------------------------------------------------------- */

struct nic_sample {
	unsigned long long switches, ticks;
	uint64_t t_ns;
};

static void nic_sample(int tid, struct nic_sample *s)
{
	char name[16];

	snprintf(name, sizeof(name), "%d", tid);
	REQUIRE_EQ(gdak_test_task_usage(name, &s->switches, &s->ticks), 0);
	s->t_ns = gdak_test_now_ns();
}

/* two QPs of one context connected to each other, a WRITE checked byte for
 * byte, then an idle second of the (real-time) NIC thread */
static void traffic_then_idle(struct ibv_context *c)
{
	enum {
		LEN = 65536
	};
	struct gdak_vt_objs o = { .ctx = c };
	union ibv_gid gid;
	struct ibv_port_attr pa;
	uint8_t *buf = gdak_test_pages(2 * LEN);
	struct ibv_sge sge;
	struct ibv_wc wc;
	struct nic_sample a, b;
	int tid = gdak_test_nic_tid();

	REQUIRE(tid > 0);
	REQUIRE(ibv_query_port(c, 1, &pa) == 0);
	REQUIRE(ibv_query_gid(c, 1, 0, &gid) == 0);
	o.pd = ibv_alloc_pd(c);
	REQUIRE(o.pd);
	o.cq = ibv_create_cq(c, 16, NULL, NULL, 0);
	REQUIRE(o.cq);
	o.mr[0] = ibv_reg_mr(o.pd, buf, 2 * LEN, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	REQUIRE(o.mr[0]);
	for (int i = 0; i < 2; i++) {
		o.qp[i] = gdak_vt_rc_qp(o.pd, o.cq, 16, 16);
		REQUIRE(o.qp[i]);
		REQUIRE(gdak_vt_to_init(o.qp[i], IBV_ACCESS_REMOTE_WRITE) == 0);
	}
	for (int i = 0; i < 2; i++) {
		struct gdak_vt_path p = gdak_vt_path_1024(gid, o.qp[!i]->qp_num, 100, 1);

		REQUIRE(gdak_vt_to_rtr(o.qp[i], &p, 0) == 0);
		REQUIRE(gdak_vt_to_rts(o.qp[i], &p, 0) == 0);
	}
	gdak_test_fill(buf, LEN, 7);
	sge = (struct ibv_sge){ (uintptr_t)buf, LEN, o.mr[0]->lkey };
	REQUIRE(gdak_vt_post_rdma(o.qp[0], IBV_WR_RDMA_WRITE, 0, &sge, (uintptr_t)(buf + LEN),
				  o.mr[0]->rkey, 0) == 0);
	REQUIRE(gdak_vt_wait_wc(o.cq, &wc) == 1);
	CHECK_EQ(wc.status, IBV_WC_SUCCESS);
	CHECK_EQ(wc.opcode, IBV_WC_RDMA_WRITE);
	CHECK_MEM(buf + LEN, buf, LEN);

	nic_sample(tid, &a);
	sleep(1);
	nic_sample(tid, &b);
	{
		uint64_t wall = b.t_ns - a.t_ns;
		double cpu_ns = (double)(b.ticks - a.ticks) * 1e9 / (double)sysconf(_SC_CLK_TCK);

		fprintf(stderr,
			"idle real-time NIC thread over %.3f s: %llu switches, %llu ticks\n",
			(double)wall * 1e-9, b.switches - a.switches, b.ticks - a.ticks);
		CHECK(b.switches - a.switches < IDLE_MAX_SWITCHES);
		CHECK(cpu_ns * 100.0 < (double)wall * IDLE_MAX_CPU_PCT);
	}
	gdak_vt_destroy(&(struct gdak_vt_objs){
		.qp = { o.qp[0], o.qp[1] }, .cq = o.cq, .mr = { o.mr[0] }, .pd = o.pd });
	free(buf);
}

/* A device opened with GDAK_NIC_SCHED=value: its NIC thread runs under
 * policy at prio, through traffic and then idle. */
static void rt_open(const char *value, int policy, int prio)
{
	struct tsched s;
	struct ibv_context *c = open_with(value, &s);

	REQUIRE(c != NULL);
	CHECK_EQ(s.policy, policy);
	CHECK_EQ(s.prio, prio);
	traffic_then_idle(c);
	CHECK_EQ(ibv_close_device(c), 0);
}

static void part_rt(void)
{
	rt_open("fifo:2", SCHED_FIFO, 2);
	setenv("GDAK_POLL", "spin", 1);
	rt_open("rr", SCHED_RR, 1);
	CHECK(strstr(log_text(), "refused") == NULL);
}

/* Whether this process may take SCHED_FIFO 2 at all: root without
 * CAP_SYS_NICE (a container's default set) or in a cgroup without
 * real-time runtime is refused like anyone, so ask the kernel, in a child. */
static int rt_permitted(void)
{
	struct sched_param sp = { .sched_priority = 2 };
	int st = 0;
	pid_t pid = fork();

	if (pid == 0)
		_exit(sched_setscheduler(0, SCHED_FIFO, &sp) ? 1 : 0);
	if (pid < 0 || waitpid(pid, &st, 0) != pid)
		return 0;
	return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

int main(void)
{
	int rc;

	/* the children's logs are gdak's warnings and errors; info for part 4 */
	setenv("GDAK_LOG", "warn", 1);
	rc = run_child(part_bad);
	fprintf(stderr, "part 1 (bad values): %d\n", rc);
	CHECK_EQ(rc, 0);
	rc = run_child(part_nice);
	fprintf(stderr, "part 2 (inherit, nice): %d\n", rc);
	CHECK(rc == 0 || rc == 77);
	rc = run_child(part_refused);
	fprintf(stderr, "part 3 (refused): %d\n", rc);
	CHECK_EQ(rc, 0);
	if (rt_permitted()) {
		rc = run_child(part_rt);
		fprintf(stderr, "part 4 (real-time): %d\n", rc);
		CHECK_EQ(rc, 0);
	} else {
		fprintf(stderr, "part 4 skipped: no real-time policy permitted here (not root, "
				"RLIMIT_RTPRIO < 2)\n");
	}
	return gdak_test_end();
}

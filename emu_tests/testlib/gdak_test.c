/* SPDX-License-Identifier: MIT */
#include <dirent.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include <time.h>
#include "gdak_case.h"
#include "gdak_test.h"
#include "gdak_test_proc.h"

unsigned gdak_test_passed, gdak_test_failed;

void gdak_test_fail(const char *file, int line, const char *fmt, ...)
{
	va_list ap;
	gdak_test_failed++;
	if (gdak_test_case)
		fprintf(stderr, "%s:%d: [case %s] ", file, line, gdak_test_case);
	else
		fprintf(stderr, "%s:%d: ", file, line);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

int gdak_test_end(void)
{
	printf("%u passed, %u failed\n", gdak_test_passed, gdak_test_failed);
	fflush(stdout);
	return gdak_test_failed ? 1 : 0;
}

uint64_t gdak_test_rand(uint64_t *s)
{
	uint64_t x = *s ? *s : 0x9e3779b97f4a7c15ull;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	*s = x;
	return x;
}

void *gdak_test_pages(size_t n)
{
	void *p = NULL;

	REQUIRE(posix_memalign(&p, 4096, n) == 0);
	memset(p, 0, n);
	return p;
}

void gdak_test_fill(void *buf, size_t len, uint64_t seed)
{
	unsigned char *p = buf;
	uint64_t s = seed * 0x2545f4914f6cdd1dull + 1;
	for (size_t i = 0; i < len; i++) {
		if (!(i & 7))
			gdak_test_rand(&s);
		p[i] = (unsigned char)(s >> ((i & 7) * 8));
	}
}

size_t gdak_test_memdiff(const void *a, const void *b, size_t n)
{
	const unsigned char *x = a, *y = b;
	for (size_t i = 0; i < n; i++)
		if (x[i] != y[i])
			return i;
	return (size_t)-1;
}

uint64_t gdak_test_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

char *gdak_test_tmpname(const char *area, const char *tag)
{
	const char *dir = getenv("TMPDIR");
	size_t n = 64 + strlen(area) + strlen(tag) + (dir ? strlen(dir) : 0);
	char *p = malloc(n);
	int fd;

	if (!p)
		return NULL;
	snprintf(p, n, "%s/gdak-%s-%s-XXXXXX", dir && *dir ? dir : "/tmp", area, tag);
	fd = mkstemp(p);
	if (fd < 0) {
		free(p);
		return NULL;
	}
	close(fd);
	return p;
}

int gdak_test_has_line(const char *out, const char *const *needles)
{
	for (const char *l = out; l && *l;) {
		const char *e = strchr(l, '\n');
		size_t len = e ? (size_t)(e - l) : strlen(l);
		int all = 1;

		for (const char *const *nd = needles; *nd && all; nd++) {
			const char *hit = strstr(l, *nd);
			all = hit && hit < l + len;
		}
		if (all)
			return 1;
		l = e ? e + 1 : NULL;
	}
	return 0;
}

void *gdak_test_slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *b = NULL;
	long n;

	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0) {
		b = malloc((size_t)n + 1);
		if (b && fread(b, 1, (size_t)n, f) != (size_t)n) {
			free(b);
			b = NULL;
		}
		if (b) {
			b[n] = 0;
			*len = (size_t)n;
		}
	}
	fclose(f);
	return b;
}

long gdak_test_rss_kib(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	long v = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmRSS: %ld kB", &v) == 1)
			break;
	fclose(f);
	return v;
}

int gdak_test_popen(const char *cmd, char *out, size_t cap)
{
	FILE *p = popen(cmd, "r");
	size_t n = 0, k;
	int st;

	REQUIRE(p != NULL);
	while (n + 1 < cap && (k = fread(out + n, 1, cap - 1 - n, p)) > 0)
		n += k;
	out[n] = '\0';
	/* drain what did not fit, so the command is not killed by SIGPIPE */
	while (fread(&(char){ 0 }, 1, 1, p) == 1)
		;
	st = pclose(p);
	return st != -1 && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* tshark over the capture at pcap, RPC-over-RDMA's heuristic off, with
 * args; its standard output to read, for pclose(). */
static FILE *tshark_open(const char *pcap, const char *args)
{
	char cmd[1024];
	FILE *p;

	snprintf(cmd, sizeof(cmd), "tshark -r '%s' --disable-protocol rpcordma %s 2>/dev/null",
		 pcap, args);
	p = popen(cmd, "r");
	REQUIRE(p != NULL);
	return p;
}

unsigned gdak_test_tshark_opcodes(const char *pcap, const char *filter,
				  void (*fn)(int op, void *arg), void *arg)
{
	char args[512], line[256];
	unsigned frames = 0;
	FILE *p;

	snprintf(args, sizeof(args), "%s%s%s-T fields -e infiniband.bth.opcode",
		 filter ? "-Y '" : "", filter ? filter : "", filter ? "' " : "");
	p = tshark_open(pcap, args);
	while (fgets(line, sizeof(line), p)) {
		unsigned op;

		if (fn)
			fn(sscanf(line, "%u", &op) == 1 && op < 256 ? (int)op : -1, arg);
		frames++;
	}
	CHECK_EQ(pclose(p), 0);
	return frames;
}

unsigned gdak_test_tshark_flagged(const char *pcap)
{
	FILE *p = tshark_open(pcap, "-Y '_ws.malformed || _ws.expert.severity >= 6291456'");
	char line[512];
	unsigned bad = 0;

	while (fgets(line, sizeof(line), p))
		if (bad++ < 5)
			fprintf(stderr, "tshark flags: %s", line);
	CHECK_EQ(pclose(p), 0);
	return bad;
}

int gdak_test_count(const char *s, const char *needle)
{
	int n = 0;

	while ((s = strstr(s, needle))) {
		n++;
		s += strlen(needle);
	}
	return n;
}

int gdak_test_xfer(int fd, void *out, const void *in, size_t n)
{
	if (write(fd, in, n) != (ssize_t)n)
		return -1;
	for (size_t got = 0; got < n;) {
		ssize_t r = read(fd, (char *)out + got, n - got);

		if (r <= 0)
			return -1;
		got += (size_t)r;
	}
	return 0;
}

int gdak_test_swap_byte(int fd, char mine)
{
	unsigned char theirs;

	return gdak_test_xfer(fd, &theirs, &mine, 1) ? -1 : theirs;
}

int gdak_test_2proc(void (*child)(int fd), void (*parent)(int fd))
{
	int sv[2];
	pid_t pid;

	REQUIRE_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	fflush(NULL); /* nothing buffered is printed twice */
	pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0) {
		close(sv[0]);
		child(sv[1]);
		exit(gdak_test_end());
	}
	close(sv[1]);
	parent(sv[0]);
	close(sv[0]);
	gdak_test_reap(pid);
	return gdak_test_end();
}

int gdak_test_task_usage(const char *tid, unsigned long long *switches, unsigned long long *ticks)
{
	char path[320], buf[1024], *p;
	unsigned long long ut, st, v = 0, nv = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/task/%s/stat", tid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	p = fgets(buf, sizeof(buf), f);
	fclose(f);
	/* after "(comm)": state, then fields 4..13, then utime stime */
	p = p ? strrchr(buf, ')') : NULL;
	if (!p ||
	    sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) != 2)
		return -1;
	snprintf(path, sizeof(path), "/proc/self/task/%s/status", tid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(buf, sizeof(buf), f)) {
		sscanf(buf, "voluntary_ctxt_switches: %llu", &v);
		sscanf(buf, "nonvoluntary_ctxt_switches: %llu", &nv);
	}
	fclose(f);
	*switches = v + nv;
	*ticks = ut + st;
	return 0;
}

int gdak_test_nic_tid(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	int tid = -1;

	if (!d)
		return -1;
	while (tid < 0 && (e = readdir(d))) {
		char path[300], comm[32] = "";
		FILE *f;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/comm", e->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (fgets(comm, sizeof(comm), f) && !strcmp(comm, "gdak-nic0\n"))
			tid = atoi(e->d_name);
		fclose(f);
	}
	closedir(d);
	return tid;
}

void gdak_test_reap(pid_t pid)
{
	int status = 0;

	REQUIRE_EQ(waitpid(pid, &status, 0), pid);
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		gdak_test_passed++;
	else if (WIFEXITED(status))
		gdak_test_fail(__FILE__, __LINE__, "the child process exited %d",
			       WEXITSTATUS(status));
	else
		gdak_test_fail(__FILE__, __LINE__, "the child process ended by signal %d",
			       WIFSIGNALED(status) ? WTERMSIG(status) : -1);
}

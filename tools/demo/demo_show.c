/* SPDX-License-Identifier: MIT */
/* demo_show.c - gdak-demo's output: the perftest-style table, the verified
 * lines, and the first decoded lines of the trace (by running gdak-trace,
 * found next to gdak-demo or on PATH). */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gdak/nic.h>

#include <gdak/env.h>

#include "demo.h"

static void rule(void)
{
	puts("-------------------------------------------------------------------------------");
}

void demo_print_table(const struct demo_args *a, const char *device, const char *runner,
		      const char *trace)
{
	int i;

	rule();
	printf(" gdak-demo: device code on %s, device %s, two loopback QPs\n", runner, device);
	if (trace)
		printf(" trace: %s (--no-trace: none)\n", trace);
	else
		printf(" trace: (off)\n");
	/* the numbers below depend on it: say which, and how to get the other */
	if (!strncmp(device, "emu", 3))
		printf(" NIC polling: %s\n",
		       gdak_nic_get_poll() == GDAK_NIC_POLL_SPIN
			       ? "spin (a whole core per NIC thread; GDAK_POLL=adaptive lets idle "
				 "NIC threads sleep)"
			       : "adaptive (idle NIC threads back off and sleep; GDAK_POLL=spin for "
				 "the lowest latency where a core is free for each NIC thread)");
	rule();
	printf(" %-16s %7s %7s %10s %10s %10s  %s\n", "op", "#bytes", "#iters", "t_avg[us]",
	       "t_min[us]", "t_max[us]", "verified");
	for (i = 0; i < DEMO_NOPS; i++) {
		const struct demo_op_result *r = &a->res[i];
		double avg = r->iters ? (double)r->ns_sum / r->iters / 1e3 : 0;

		printf(" %-16s %7u %7u %10.2f %10.2f %10.2f  %s\n", r->name, r->bytes, r->iters,
		       avg, r->ns_min / 1e3, r->ns_max / 1e3, r->ok ? "yes" : "NO");
	}
	rule();
	for (i = 0; i < DEMO_NOPS; i++) {
		const struct demo_op_result *r = &a->res[i];

		if (r->ok)
			printf("verified %s: %s\n", r->name, r->why);
		else
			printf("FAILED   %s: %s\n", r->name, r->why[0] ? r->why : "not run");
	}
}

/* gdak-trace next to this program, else the name for PATH. */
static void find_trace_tool(const char *argv0, char *out, size_t len)
{
	char self[PATH_MAX + 16];
	ssize_t n = readlink("/proc/self/exe", self, PATH_MAX - 1);
	char *slash;

	snprintf(out, len, "gdak-trace");
	if (n <= 0)
		return;
	self[n] = '\0';
	slash = strrchr(self, '/');
	if (!slash)
		return;
	strcpy(slash + 1, "gdak-trace");
	if (strlen(self) >= len)
		return;
	memcpy(out, self, strlen(self) + 1);
	if (access(out, X_OK))
		snprintf(out, len, "gdak-trace");
}

/* Single-quote s for sh. */
static void quote(char *out, size_t len, const char *s)
{
	size_t k = 0;

	if (len < 3)
		return;
	out[k++] = '\'';
	for (; *s && k + 5 < len; s++) {
		if (*s == '\'') {
			memcpy(out + k, "'\\''", 4);
			k += 4;
		} else {
			out[k++] = *s;
		}
	}
	out[k++] = '\'';
	out[k] = '\0';
}

/* Run gdak-trace with opts on the trace; print at most max lines of what it
 * says.  0, or -EIO when it could not read the file cleanly or said nothing. */
static int run_trace_tool(const char *tool, const char *opts, const char *trace, unsigned max,
			  unsigned *total)
{
	char qt[PATH_MAX * 2], qf[PATH_MAX * 2], cmd[PATH_MAX * 4 + 64], line[512];
	unsigned shown = 0;
	FILE *p;
	int st;

	quote(qt, sizeof(qt), tool);
	quote(qf, sizeof(qf), trace);
	snprintf(cmd, sizeof(cmd), "%s %s %s 2>&1", qt, opts, qf);
	*total = 0;
	p = popen(cmd, "r");
	if (!p) {
		fprintf(stderr, "gdak-demo: cannot run %s: %s\n", tool, strerror(errno));
		return -errno;
	}
	while (fgets(line, sizeof(line), p)) {
		(*total)++;
		if (shown < max) {
			fputs(line, stdout);
			if (!strchr(line, '\n'))
				fputc('\n', stdout);
			shown++;
		}
	}
	st = pclose(p);
	if (st == -1 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		fprintf(stderr, "gdak-demo: %s could not read the trace cleanly (status %d)\n", tool,
			st == -1 ? -1 : WIFEXITED(st) ? WEXITSTATUS(st) : 128);
		return -EIO;
	}
	if (!*total) {
		fprintf(stderr, "gdak-demo: the trace %s is empty\n", trace);
		return -EIO;
	}
	return 0;
}

/* Whether `gdak-trace` typed at a shell would run: found on $PATH. */
static int on_path(const char *name)
{
	const char *p = gdak_env_raw("PATH");
	char buf[PATH_MAX];

	while (p && *p) {
		size_t n = strcspn(p, ":");

		if (n && n + strlen(name) + 2 < sizeof(buf)) {
			memcpy(buf, p, n);
			buf[n] = '/';
			strcpy(buf + n + 1, name);
			if (!access(buf, X_OK))
				return 1;
		}
		p += n + (p[n] == ':');
	}
	return 0;
}

int demo_show_trace(const char *argv0, const char *trace, unsigned lines)
{
	char tool[PATH_MAX];
	const char *shown;
	unsigned total;
	int rc;

	find_trace_tool(argv0, tool, sizeof(tool));
	/* the commands shown run as shown: by name only when the name works */
	shown = on_path("gdak-trace") ? "gdak-trace" : tool;
	printf("\n$ %s %s   (first %u lines)\n", shown, trace, lines);
	rc = run_trace_tool(tool, "", trace, lines, &total);
	if (rc)
		return rc;
	if (total > lines)
		printf("... %u more lines: %s %s\n", total - lines, shown, trace);
	printf("\n$ %s --summary %s\n", shown, trace);
	return run_trace_tool(tool, "--summary", trace, 64, &total);
}

/* SPDX-License-Identifier: MIT */
/*
 * tools_errors.c - gdak.tools.file_errors: a tool that cannot write what it
 * was asked to write says so with the file operation's own error and
 * exits non-zero; a malformed GDAK_FAULTS stops the run, naming the bad
 * entry, on plain emu as on emu:udp.
 * argv: gdak-perf gdak-demo
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "gdak_test.h"

static char out[1 << 16];

/* Run cmd (sh) with stderr into out; the exit code or -1. */
static int run(const char *cmd)
{
	char full[2048];

	snprintf(full, sizeof(full), "%s 2>&1", cmd);
	return gdak_test_popen(full, out, sizeof(out));
}

static void expect(const char *cmd, int rc, const char *const *say)
{
	int got = run(cmd);

	CHECK_EQ(got, rc);
	for (; *say; say++)
		CHECK(strstr(out, *say) != NULL);
	CHECK(strstr(out, "completion with error") == NULL);
	if (got != rc || strstr(out, "completion with error"))
		fprintf(stderr, "$ %s\n%s\n", cmd, out);
}

int main(int argc, char **argv)
{
	char cmd[1024];

	if (argc < 3)
		GDAK_TEST_SKIP("usage: %s GDAK_PERF GDAK_DEMO", argv[0]);
	unsetenv("GDAK_FAULTS");
	unsetenv("GDAK_TRACE");

	snprintf(cmd, sizeof(cmd),
		 "'%s' -n 10 -s 8 --no-baseline --json-file /proc/nope/x write_bw", argv[1]);
	expect(cmd, 1,
	       (const char *const[]){ "cannot write /proc/nope/x: No such file or directory",
				      NULL });
	snprintf(cmd, sizeof(cmd), "'%s' -n 10 -s 8 --no-baseline --json-file /dev/full write_bw",
		 argv[1]);
	expect(cmd, 1,
	       (const char *const[]){ "cannot write /dev/full: No space left on device", NULL });
	snprintf(cmd, sizeof(cmd), "'%s' -n 10 -s 8 --no-baseline --trace /dev/full write_bw",
		 argv[1]);
	expect(cmd, 1, (const char *const[]){ "/dev/full", "No space left on device", NULL });

	snprintf(cmd, sizeof(cmd), "'%s' -n 3 --lines 0 --trace /dev/full", argv[2]);
	expect(cmd, 1, (const char *const[]){ "/dev/full", "No space left on device", NULL });
	snprintf(cmd, sizeof(cmd), "'%s' -n 3 --lines 0 --trace /proc/nope/t.pcapng", argv[2]);
	expect(cmd, 1,
	       (const char *const[]){ "/proc/nope/t.pcapng", "No such file or directory", NULL });

	/* GDAK_FAULTS: one parser, one behaviour on every transport */
	snprintf(cmd, sizeof(cmd),
		 "GDAK_FAULTS='err:qp=*,wqe=1,syndrom=REMOTE_OP' '%s' -n 3 --no-trace", argv[2]);
	expect(cmd, 1, (const char *const[]){ "'err:qp=*,wqe=1,syndrom=REMOTE_OP'", NULL });
	snprintf(cmd, sizeof(cmd), "GDAK_FAULTS='pkt_drop:p=2' '%s' -n 3 --no-trace", argv[2]);
	expect(cmd, 1, (const char *const[]){ "pkt_drop", NULL });
	snprintf(cmd, sizeof(cmd), "GDAK_FAULTS='pkt_drop:p=2' '%s' -d emu:udp -n 3 --no-trace",
		 argv[2]);
	expect(cmd, 1, (const char *const[]){ "pkt_drop", NULL });
	snprintf(cmd, sizeof(cmd), "GDAK_FAULTS='bogus' '%s' -n 3 --no-trace", argv[2]);
	expect(cmd, 1, (const char *const[]){ "'bogus'", NULL });
	/* well-formed: runs (packet entries do nothing on the loop transport) */
	snprintf(cmd, sizeof(cmd), "GDAK_FAULTS='pkt_drop:p=1%%' '%s' -n 3 --no-trace --lines 0",
		 argv[2]);
	expect(cmd, 0, (const char *const[]){ "ALL OK", NULL });
	return gdak_test_end();
}

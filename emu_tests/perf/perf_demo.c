/* SPDX-License-Identifier: MIT */
/*
 * perf_demo.c - gdak.tools.demo: gdak-demo runs on the emulated NIC, exits
 * 0, prints a verified line for every operation and the decoded trace it
 * wrote; a bad flag exits 2 naming it.  Correctness only, no timing.
 *
 * argv[1]: the gdak-demo binary.
 */
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gdak_test.h"

static char out[1 << 17];

/* Run cmd (sh), capture stdout+stderr into out; exit code or -1. */
static int run(const char *cmd)
{
	return gdak_test_popen(cmd, out, sizeof(out));
}

int main(int argc, char **argv)
{
	static const char *const ops[] = {"verified put:", "verified get:", "verified fetch_add:",
					  "verified put_signal+wait:", "verified send/recv:"};
	char dir[] = "/tmp/gdak_demo_testXXXXXX", cmd[1024], trace[256], demo[PATH_MAX];
	struct stat sb;
	size_t i;
	int rc;

	if (argc < 2)
		GDAK_TEST_SKIP("usage: %s GDAK_DEMO_BINARY", argv[0]);
	if (access(argv[1], X_OK))
		GDAK_TEST_SKIP("%s is not executable: %s", argv[1], strerror(errno));
	/* absolute: the demo runs from a scratch directory */
	REQUIRE(realpath(argv[1], demo) != NULL);
	argv[1] = demo;
	REQUIRE(mkdtemp(dir) != NULL);

	/* the default trace lands in the current directory */
	snprintf(cmd, sizeof(cmd), "cd '%s' && GDAK_POLL=adaptive '%s' -n 10 2>&1", dir, argv[1]);
	rc = run(cmd);
	CHECK_EQ(rc, 0);
	for (i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
		CHECK(strstr(out, ops[i]) != NULL);
	CHECK(strstr(out, "FAILED") == NULL);
	CHECK(strstr(out, "ALL OK") != NULL);
	/* the table and the decoded trace: a doorbell, the WQE and its CQE */
	CHECK(strstr(out, "#bytes") && strstr(out, "t_avg[us]"));
	/* the polling mode the numbers come from, and how to get the other */
	CHECK(strstr(out, " NIC polling: adaptive (") && strstr(out, "GDAK_POLL=spin"));
	/* the hint for the rest of the trace is a command that runs as shown:
	 * gdak-trace by the path the demo found it at (not on PATH in a build) */
	{
		const char *h = strstr(out, " more lines: ");
		char tool[4096] = "";

		CHECK(h != NULL);
		if (h && sscanf(h, " more lines: %4095s", tool) == 1)
			CHECK(access(tool, X_OK) == 0);
		/* and so is the "$ ..." line above the trace: not a bare
		 * gdak-trace where the tests run (it is not on PATH) */
		CHECK(strstr(out, "\n$ gdak-trace demo.pcapng") == NULL ||
		      system("command -v "
			     "gdak-trace >/dev/null 2>&1") == 0);
	}
	CHECK(strstr(out, "gdak-trace demo.pcapng   (first 16 lines)") != NULL);
	CHECK(strstr(out, " DOORBELL ") && strstr(out, " WQE idx=0 RDMA_WRITE") &&
	      strstr(out, " CQE REQ "));
	/* the per-QP summary counts what the demo did: 10 of each kind */
	CHECK(strstr(out, "gdak-trace --summary demo.pcapng") != NULL);
	CHECK(strstr(out, "(RDMA_WRITE 20, SEND 10, RDMA_READ 10, ATOMIC_FA 20)") != NULL);
	CHECK(strstr(out, "recv_wqes 10,") != NULL);
	CHECK(strstr(out, "errors 0, lost 0") != NULL);
	snprintf(trace, sizeof(trace), "%s/demo.pcapng", dir);
	CHECK(stat(trace, &sb) == 0 && sb.st_size > 1000);
	if (rc)
		fprintf(stderr, "gdak-demo said:\n%s\n", out);

	/* --trace PATH, fewer lines */
	snprintf(cmd, sizeof(cmd), "cd '%s' && '%s' -n 3 --trace t2.pcapng --lines 3 2>&1", dir,
		 argv[1]);
	CHECK_EQ(run(cmd), 0);
	CHECK(strstr(out, "gdak-trace t2.pcapng   (first 3 lines)") != NULL);
	snprintf(trace, sizeof(trace), "%s/t2.pcapng", dir);
	CHECK(stat(trace, &sb) == 0);

	/* an error CQE (injected on WQE 3 of any QP - QPNs are random - and only A
	 * posts that many; gdak/nic.h GDAK_FAULTS): exit 1,
	 * the failed operation and its syndrome named, nothing hangs */
	snprintf(cmd, sizeof(cmd),
		 "cd '%s' && "
		 "GDAK_FAULTS='err:qp=*,wqe=3,syndrome=REMOTE_ACCESS_ERR'"
		 " '%s' -n 10 --lines 0 2>&1",
		 dir, argv[1]);
	CHECK_EQ(run(cmd), 1);
	CHECK(strstr(out, "FAILED   put: error CQE: REQ_ERR, syndrome 0x13") != NULL);
	CHECK(strstr(out, "verified put:") == NULL);
	CHECK(strstr(out, "ALL OK") == NULL);
	if (!strstr(out, "FAILED   put: error CQE"))
		fprintf(stderr, "gdak-demo said:\n%s\n", out);

	/* --cuda: without a GPU (or a build without the CUDA path) exit 1 with
	 * the reason and nothing run; with one, the kernel path verifies all */
	snprintf(cmd, sizeof(cmd), "cd '%s' && '%s' --cuda -n 5 --lines 0 2>&1", dir, argv[1]);
	rc = run(cmd);
	if (rc == 1 && (strstr(out, "gdak-demo: --cuda: no usable GPU") ||
			strstr(out, "gdak-demo: --cuda: built without"))) {
		fprintf(stderr, "note: CUDA sub-case skipped: %s", out);
		/* no driver at all is not an "insufficient" one */
		if (strstr(out, "no usable GPU") && !dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL))
			CHECK(strstr(out, "libcuda.so.1") != NULL &&
			      strstr(out, "insufficient") == NULL);
		CHECK(strstr(out, "verified") == NULL);
	} else {
		CHECK_EQ(rc, 0);
		CHECK(strstr(out, "device code on a CUDA kernel") != NULL);
		for (i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
			CHECK(strstr(out, ops[i]) != NULL);
		CHECK(strstr(out, "ALL OK") != NULL);
		if (rc)
			fprintf(stderr, "gdak-demo --cuda said:\n%s\n", out);
	}

	/* bad usage: exit 2 and the flag named */
	snprintf(cmd, sizeof(cmd), "'%s' --bogus 2>&1", argv[1]);
	CHECK_EQ(run(cmd), 2);
	CHECK(strstr(out, "unknown option '--bogus'") != NULL);
	snprintf(cmd, sizeof(cmd), "'%s' -n 0 2>&1", argv[1]);
	CHECK_EQ(run(cmd), 2);
	CHECK(strstr(out, "bad iteration count '0'") != NULL);

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	CHECK_EQ(run(cmd), 0);
	return gdak_test_end();
}

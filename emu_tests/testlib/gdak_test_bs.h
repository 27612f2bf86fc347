/* SPDX-License-Identifier: MIT */
/*
 * gdak_test_bs.h - two processes of one test joined by a gdak bootstrap over
 * loopback, the scaffolding of the emu:udp two-process tests (host threads
 * and CUDA alike): the parent listens, forks, the child connects; each side
 * runs its function and closes its bootstrap; the parent reaps the child.
 */
#ifndef GDAK_TEST_BS_H
#define GDAK_TEST_BS_H

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <gdak/bootstrap.h>

#include "gdak_test.h"
#include "gdak_test_proc.h"

/* A lossy link for this process: pct% of its packets dropped, duplicated
 * and reordered (seeds seed, seed + 10, seed + 20: each side its own),
 * retried for ever after a short timeout - set before gdak_open. */
static inline void gdak_test_bs_lossy(unsigned pct, int seed)
{
	char f[160];

	snprintf(f, sizeof(f),
		 "pkt_drop:p=%u%%,seed=%d;pkt_dup:p=%u%%,seed=%d;pkt_reorder:p=%u%%,seed=%d", pct,
		 seed, pct, seed + 10, pct, seed + 20);
	setenv("GDAK_FAULTS", f, 1);
	setenv("GDAK_UDP_RETRY", "forever", 1);
	setenv("GDAK_UDP_RTO_US", "5000", 1);
}

typedef void (*gdak_test_bs_fn)(struct gdak_bootstrap *bs);

/*
 * child(bs) runs in a forked child, parent(bs) here.  Both processes arm
 * alarm(alarm_s) (a child does not inherit its parent's alarm), so a hang
 * becomes a failure rather than a stuck suite.  The child ends through
 * exit(gdak_test_end()), so at-exit work (a trace writer closing its file)
 * happens.  Returns gdak_test_end() after checking that the child exited 0.
 */
static inline int gdak_test_bs_2proc(gdak_test_bs_fn child, gdak_test_bs_fn parent,
				     unsigned alarm_s)
{
	struct gdak_bootstrap *bs;
	pid_t pid;

	alarm(alarm_s);
	REQUIRE_EQ(gdak_bootstrap_listen("127.0.0.1", 0, &bs), 0);
	fflush(NULL); /* nothing buffered is printed twice */
	pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0) {
		struct gdak_bootstrap *c;
		uint16_t port = gdak_bootstrap_port(bs);

		gdak_bootstrap_close(bs);
		alarm(alarm_s);
		REQUIRE_EQ(gdak_bootstrap_connect("127.0.0.1", port, 10000, &c), 0);
		child(c);
		gdak_bootstrap_close(c);
		exit(gdak_test_end());
	}
	REQUIRE_EQ(gdak_bootstrap_accept(bs, 10000), 0);
	parent(bs);
	gdak_bootstrap_close(bs);
	gdak_test_reap(pid);
	return gdak_test_end();
}

#endif /* GDAK_TEST_BS_H */

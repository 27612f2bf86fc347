/* SPDX-License-Identifier: MIT */
/*
 * nm_thread_test.h - what the NIC threads let tests observe of their
 * scheduling (nm_thread.c), for tests that check a mechanism rather than
 * a time.
 */
#ifndef NM_THREAD_TEST_H
#define NM_THREAD_TEST_H

#include <stddef.h>
#include <stdint.h>

/* How often a NIC thread gave its CPU away right after a pass that did
 * work (the device thread waiting for that work may share the CPU), over
 * all threads since the process started. */
uint64_t nm_thread_work_yields(void);
/* How often a NIC thread blocked in the kernel with QPs to serve, all of
 * them doorbell-notified (nm_ext_qp_doorbell_notify), since the start. */
uint64_t nm_thread_blocks(void);
/* Inline runs (nm_thread_try_inline) made, and those not made because
 * the thread's engine lock was taken, since the process began. */
uint64_t nm_thread_inline_runs(void);
uint64_t nm_thread_inline_busy(void);
/* calls in a child of fork() that found the parent's NIC thread and ran nothing */
uint64_t nm_thread_inline_forked(void);

/* GDAK_NIC_SCHED: the scheduling policy each NIC thread asks for at its
 * start.  inherit: the creating thread's (the default); nice:N (-20..19,
 * SCHED_OTHER with that nice value); fifo:P, rr:P (1..99; "fifo", "rr"
 * alone are priority 1). */
enum nm_sched_kind {
	NM_SCHED_INHERIT = 0,
	NM_SCHED_NICE,
	NM_SCHED_FIFO,
	NM_SCHED_RR
};
struct nm_sched {
	enum nm_sched_kind kind;
	int prio; /* nice value, or real-time priority */
};
/* Parses a GDAK_NIC_SCHED value (NULL or "" is inherit): 0, or -EINVAL
 * with a log line naming the value and what is allowed. */
int nm_sched_parse(const char *s, struct nm_sched *out);
/* "inherit", "nice:-5", "fifo:1", ... into buf */
const char *nm_sched_str(const struct nm_sched *sc, char *buf, size_t len);

#endif

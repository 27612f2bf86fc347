/* SPDX-License-Identifier: MIT */
/*
 * nm_thread_test.h - what the NIC threads let tests observe of their
 * scheduling (nm_thread.c), for tests that check a mechanism rather than
 * a time.
 */
#ifndef NM_THREAD_TEST_H
#define NM_THREAD_TEST_H

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

#endif

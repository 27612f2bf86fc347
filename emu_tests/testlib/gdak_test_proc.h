/* SPDX-License-Identifier: MIT */
/* gdak_test_proc.h - child processes of a test (no gdak headers needed). */
#ifndef GDAK_TEST_PROC_H
#define GDAK_TEST_PROC_H

#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Wait for child process pid; CHECK that it exited 0 (naming its exit code
 * or signal when not).  gdak_test_2proc and gdak_test_bs_2proc end so. */
void gdak_test_reap(pid_t pid);

/* Thread tid of this process (a /proc/self/task entry's name): its context
 * switches, voluntary and not, and its utime + stime in clock ticks, from
 * /proc/self/task/TID/stat and status.  0, or -1 when they cannot be read. */
int gdak_test_task_usage(const char *tid, unsigned long long *switches, unsigned long long *ticks);

/* The thread id of this process's NIC thread 0 (the task named "gdak-nic0"
 * by nm_thread.c), or -1 when there is none. */
int gdak_test_nic_tid(void);

#ifdef __cplusplus
}
#endif

#endif /* GDAK_TEST_PROC_H */

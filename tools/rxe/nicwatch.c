/* SPDX-License-Identifier: MIT */
/*
 * nicwatch.c - what the scheduler does to gdak's NIC threads, measured from
 * outside (docs/BENCHMARKS.md "Session 9"): every few milliseconds it looks
 * for threads named gdak-nic* (and the programs' threads named PROG), can
 * apply a scheduling policy to the NIC threads by hand, and keeps each
 * thread's last /proc schedstat (time on the CPU, time waiting on a run
 * queue, slices) and context switch counts, printed when it ends.  So
 * "the woken NIC thread waits for a CPU" is a number: wait time per slice.
 *
 *   nicwatch SECONDS POLICY [PROG [NIC]]    POLICY: none, fifo:P, rr:P, nice:N
 *
 * NIC: how many NIC threads to expect (2: two gdak-run processes; 0 for
 * rxe): it scans every 5 ms until it found them, then every 100 ms.
 *
 * Ends after SECONDS or at SIGTERM/SIGINT.  Built on the host (the guest
 * has no compiler, its glibc is the host's Debian one):
 *   cc -O2 -o build/nicwatch tools/rxe/nicwatch.c
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#define MAXT 64

struct thr {
	int pid, tid;
	char comm[32];
	unsigned long long run, wait, slices, vol, invol, ut, st;
	int cpu;
	int applied;
};

static struct thr thr[MAXT];
static int nthr;
static volatile sig_atomic_t stop;
static int nnic; /* NIC threads found */

static void on_sig(int s)
{
	(void)s;
	stop = 1;
}

static int readline(const char *path, char *buf, size_t n)
{
	FILE *f = fopen(path, "r");

	if (!f)
		return -1;
	if (!fgets(buf, (int)n, f)) {
		fclose(f);
		return -1;
	}
	fclose(f);
	buf[strcspn(buf, "\n")] = 0;
	return 0;
}

static int apply(int tid, const char *pol, char *why, size_t n)
{
	struct sched_param sp = { 0 };
	int v;

	if (!strcmp(pol, "none"))
		return snprintf(why, n, "left alone"), 0;
	if (sscanf(pol, "fifo:%d", &v) == 1 || sscanf(pol, "rr:%d", &v) == 1) {
		sp.sched_priority = v;
		if (sched_setscheduler(tid, pol[0] == 'f' ? SCHED_FIFO : SCHED_RR, &sp))
			return snprintf(why, n, "sched_setscheduler: %s", strerror(errno)), -1;
		return snprintf(why, n, "%s", pol), 0;
	}
	if (sscanf(pol, "nice:%d", &v) == 1) {
		if (setpriority(PRIO_PROCESS, (id_t)tid, v))
			return snprintf(why, n, "setpriority: %s", strerror(errno)), -1;
		return snprintf(why, n, "%s", pol), 0;
	}
	return snprintf(why, n, "unknown policy %s", pol), -1;
}

static void sample(struct thr *t)
{
	char p[96], buf[512];
	FILE *f;

	snprintf(p, sizeof(p), "/proc/%d/task/%d/schedstat", t->pid, t->tid);
	if (readline(p, buf, sizeof(buf)) == 0)
		sscanf(buf, "%llu %llu %llu", &t->run, &t->wait, &t->slices);
	snprintf(p, sizeof(p), "/proc/%d/task/%d/stat", t->pid, t->tid);
	if (readline(p, buf, sizeof(buf)) == 0) {
		char *q = strrchr(buf, ')');

		/* after "(comm)": state, fields 4..13, utime, stime, ..., 39 processor */
		if (q)
			sscanf(q + 2,
			       "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %*d %*d %*d %*d "
			       "%*d %*d %*u %*u %*d %*u %*u %*u %*u %*u %*u %*u %*u %*u %*u %*u %*u %*u "
			       "%*d %d",
			       &t->ut, &t->st, &t->cpu);
	}
	snprintf(p, sizeof(p), "/proc/%d/task/%d/status", t->pid, t->tid);
	f = fopen(p, "r");
	if (!f)
		return;
	while (fgets(buf, sizeof(buf), f)) {
		sscanf(buf, "voluntary_ctxt_switches: %llu", &t->vol);
		sscanf(buf, "nonvoluntary_ctxt_switches: %llu", &t->invol);
	}
	fclose(f);
}

static void scan(const char *pol, const char *prog)
{
	DIR *d = opendir("/proc"), *td;
	struct dirent *e, *te;

	if (!d)
		return;
	while ((e = readdir(d))) {
		char p[64], comm[32];
		int pid = atoi(e->d_name);

		if (pid <= 0)
			continue;
		snprintf(p, sizeof(p), "/proc/%d/task", pid);
		td = opendir(p);
		if (!td)
			continue;
		while ((te = readdir(td))) {
			char cp[96];
			int tid = atoi(te->d_name), i;

			if (tid <= 0)
				continue;
			snprintf(cp, sizeof(cp), "/proc/%d/task/%d/comm", pid, tid);
			if (readline(cp, comm, sizeof(comm)))
				continue;
			if (strncmp(comm, "gdak-nic", 8) && (!prog || strcmp(comm, prog)))
				continue;
			for (i = 0; i < nthr && thr[i].tid != tid; i++)
				;
			if (i == nthr) {
				if (nthr == MAXT)
					continue;
				thr[nthr].pid = pid;
				thr[nthr].tid = tid;
				snprintf(thr[nthr].comm, sizeof(thr[nthr].comm), "%s", comm);
				nthr++;
				nnic += !strncmp(comm, "gdak-nic", 8);
			}
			if (!thr[i].applied && !strncmp(comm, "gdak-nic", 8)) {
				char why[128];

				apply(tid, pol, why, sizeof(why));
				printf("nicwatch: pid %d tid %d %s: %s\n", pid, tid, comm, why);
				fflush(stdout);
				thr[i].applied = 1;
			}
			sample(&thr[i]);
		}
		closedir(td);
	}
	closedir(d);
}

int main(int argc, char **argv)
{
	double secs;
	int want_nic;
	struct timespec ts = { 0, 5000000 };
	struct timespec t0, now;

	if (argc < 3) {
		fprintf(stderr, "usage: nicwatch SECONDS POLICY [PROG [NIC]]\n");
		return 2;
	}
	secs = atof(argv[1]);
	want_nic = argc > 4 ? atoi(argv[4]) : 2;
	signal(SIGTERM, on_sig);
	signal(SIGINT, on_sig);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (!stop) {
		scan(argv[2], argc > 3 ? argv[3] : NULL);
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (now.tv_sec - t0.tv_sec + (now.tv_nsec - t0.tv_nsec) * 1e-9 > secs)
			break;
		/* fast until both processes' threads are found (a policy
		 * applies from their start), then slowly: a scan of /proc
		 * costs the CPUs being measured */
		ts.tv_nsec = nnic >= want_nic && nthr >= 2 ? 100000000 : 5000000;
		nanosleep(&ts, NULL);
	}
	for (int i = 0; i < nthr; i++) {
		struct thr *t = &thr[i];

		printf("nicwatch: pid %d tid %d %-12s run %8.1f ms wait %8.1f ms slices %7llu "
		       "wait/slice %7.1f us vol %6llu invol %6llu utime %llu stime %llu ticks cpu %d\n",
		       t->pid, t->tid, t->comm, t->run * 1e-6, t->wait * 1e-6, t->slices,
		       t->slices ? t->wait * 1e-3 / t->slices : 0., t->vol, t->invol, t->ut, t->st,
		       t->cpu);
	}
	return 0;
}

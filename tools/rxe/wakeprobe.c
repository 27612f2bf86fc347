/* SPDX-License-Identifier: MIT */
/*
 * wakeprobe.c - what one thread wakeup per message costs where perftest
 * runs, without gdak (docs/BENCHMARKS.md "Session 9").  Two processes, a
 * UDP socket each on loopback, and the shape of perftest's ib_write_lat
 * over gdak-run: each process's "program" thread spins on a word in its
 * memory and then sends a datagram to the peer (the post); each process's
 * "NIC" thread blocks in recv() and, for each datagram, stores the word
 * the program spins on (the WRITE landing).  One round trip: two wakeups
 * of a blocked thread, as gdak's path has at least (inline post).
 *
 *   wakeprobe MODE ITERS [fifo]
 *     nic      as above: the receive in a blocked thread that must be woken
 *     poll     no NIC thread: the program thread itself polls its socket
 *              (recv with MSG_DONTWAIT in its spin loop): no wakeup at all,
 *              the work in the running thread as rxe runs it in softirq
 *     block    no spinning: the program thread blocks in recv() itself
 *   fifo: the NIC threads (nic) or program threads (block) SCHED_FIFO 1.
 *
 * Prints t_min / median / p90 / average round trip in microseconds.
 * Built on the host: cc -O2 -pthread -o build/wakeprobe tools/rxe/wakeprobe.c
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int mode; /* 0 nic, 1 poll, 2 block */
static int fifo;
static long iters;
static int fd;
static struct sockaddr_in peer;
static _Atomic long word;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void set_fifo(void)
{
	struct sched_param sp = { .sched_priority = 1 };

	if (fifo && pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp))
		fprintf(stderr, "wakeprobe: SCHED_FIFO refused\n");
}

static void *nic(void *arg)
{
	long v;

	(void)arg;
	set_fifo();
	for (;;) {
		if (recv(fd, &v, sizeof(v), 0) != sizeof(v))
			continue;
		atomic_store_explicit(&word, v, memory_order_release);
		if (v < 0)
			return NULL;
	}
}

static void post(long v)
{
	if (sendto(fd, &v, sizeof(v), 0, (struct sockaddr *)&peer, sizeof(peer)) != sizeof(v))
		perror("sendto");
}

/* wait until the word (or, polling, a datagram) says v */
static void wait_for(long v)
{
	long got;

	if (mode == 2) {
		while (recv(fd, &got, sizeof(got), 0) == sizeof(got) && got != v)
			;
		return;
	}
	while (atomic_load_explicit(&word, memory_order_acquire) != v) {
		if (mode == 1 && recv(fd, &got, sizeof(got), MSG_DONTWAIT) == sizeof(got))
			atomic_store_explicit(&word, got, memory_order_relaxed);
	}
}

static int cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static void side(int me)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	pthread_t t;
	uint64_t *rtt = calloc((size_t)iters, sizeof(*rtt));

	fd = socket(AF_INET, SOCK_DGRAM, 0);
	a.sin_addr.s_addr = htonl(0x7f000001);
	a.sin_port = htons((uint16_t)(47910 + me));
	peer = a;
	peer.sin_port = htons((uint16_t)(47910 + !me));
	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) || !rtt) {
		perror("wakeprobe: socket");
		exit(1);
	}
	if (mode == 0)
		pthread_create(&t, NULL, nic, NULL);
	else if (mode == 2)
		set_fifo();
	sleep(1); /* both bound */
	for (long i = 1; i <= iters; i++) {
		if (me == 0) {
			uint64_t t0 = now_ns();

			post(i);
			wait_for(i);
			rtt[i - 1] = now_ns() - t0;
		} else {
			wait_for(i);
			post(i);
		}
	}
	if (me == 0) {
		double sum = 0;

		for (long i = 0; i < iters; i++)
			sum += (double)rtt[i];
		qsort(rtt, (size_t)iters, sizeof(*rtt), cmp);
		printf("wakeprobe %s%s: %ld round trips, t_min %.1f median %.1f p90 %.1f avg %.1f us\n",
		       mode == 0   ? "nic"
		       : mode == 1 ? "poll"
				   : "block",
		       fifo ? " fifo" : "", iters, rtt[0] * 1e-3, rtt[iters / 2] * 1e-3,
		       rtt[iters * 9 / 10] * 1e-3, sum / (double)iters * 1e-3);
	}
	if (mode == 0) {
		long stop = -1;

		/* our own NIC thread ends on a datagram to itself */
		a.sin_port = htons((uint16_t)(47910 + me));
		sendto(fd, &stop, sizeof(stop), 0, (struct sockaddr *)&a, sizeof(a));
		pthread_join(t, NULL);
	}
	fflush(stdout);
	exit(0);
}

int main(int argc, char **argv)
{
	pid_t p;

	if (argc < 3) {
		fprintf(stderr, "usage: wakeprobe nic|poll|block ITERS [fifo]\n");
		return 2;
	}
	mode = !strcmp(argv[1], "nic") ? 0 : !strcmp(argv[1], "poll") ? 1 : 2;
	iters = atol(argv[2]);
	fifo = argc > 3 && !strcmp(argv[3], "fifo");
	if (iters < 1)
		return 2;
	p = fork();
	if (p == 0)
		side(1);
	if (p < 0)
		return 1;
	side(0);
	return 0;
}

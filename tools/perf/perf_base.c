/* SPDX-License-Identifier: MIT */
/*
 * perf_base.c - the baselines other than the minimal executor:
 *   memcpy bandwidth over the buffer layout the tests use (what a CPU NIC
 *   moving host memory cannot beat), and a two-thread ping-pong on one cache
 *   line (the floor for "post, another thread notices, answers, poster
 *   notices": what a latency test through a NIC thread costs at least).
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "perf.h"

int perf_memcpy_run(size_t size, uint64_t iters, double *bw)
{
	size_t slots = perf_region_slots(size), region = slots * size;
	uint8_t *src = perf_alloc(region), *dst = perf_alloc(region);
	uint64_t t0, t1, i;
	size_t check;
	int ret = 0;

	if (!src || !dst) {
		ret = -ENOMEM;
		goto out;
	}
	perf_fill(src, region, size);
	memset(dst, 0, region);
	t0 = perf_now_ns();
	for (i = 0; i < iters; i++) {
		size_t off = (i % slots) * size;

		memcpy(dst + off, src + off, size);
		/* keep the compiler from merging or dropping copies */
		__asm__ __volatile__("" ::: "memory");
	}
	t1 = perf_now_ns();
	check = (iters < slots ? iters : slots) * size;
	if (memcmp(dst, src, check)) {
		perf_verify_fail("memcpy baseline", size, "destination differs from source");
		ret = -EIO;
		goto out;
	}
	*bw = (double)iters * (double)size * 1e9 / (double)(t1 - t0 ? t1 - t0 : 1);
out:
	free(src);
	free(dst);
	return ret;
}

struct pingpong {
	_Alignas(64) _Atomic uint64_t ping;
	_Alignas(64) _Atomic uint64_t pong;
	uint64_t iters;
};

static void *pong_thread(void *arg)
{
	struct pingpong *p = arg;
	uint64_t i;

	for (i = 1; i <= p->iters; i++) {
		struct perf_backoff bo = {0};

		while (atomic_load_explicit(&p->ping, memory_order_acquire) != i)
			perf_backoff(&bo);
		atomic_store_explicit(&p->pong, i, memory_order_release);
	}
	return NULL;
}

int perf_pingpong_run(uint64_t iters, double *p50, double *p99)
{
	struct pingpong *p = aligned_alloc(64, sizeof(*p));
	double *ns = malloc(iters * sizeof(*ns));
	struct perf_result r = {0};
	pthread_t t;
	uint64_t i;
	int ret = 0;

	if (!p || !ns || !iters) {
		ret = p && ns ? -EINVAL : -ENOMEM;
		goto out;
	}
	memset(p, 0, sizeof(*p));
	p->iters = iters;
	if (pthread_create(&t, NULL, pong_thread, p)) {
		ret = -EAGAIN;
		goto out;
	}
	for (i = 1; i <= iters; i++) {
		struct perf_backoff bo = {0};
		uint64_t t0 = perf_now_ns();

		atomic_store_explicit(&p->ping, i, memory_order_release);
		while (atomic_load_explicit(&p->pong, memory_order_acquire) != i)
			perf_backoff(&bo);
		ns[i - 1] = (double)(perf_now_ns() - t0);
	}
	pthread_join(t, NULL);
	perf_lat_summary(ns, iters, &r);
	*p50 = r.lat_p50;
	*p99 = r.lat_p99;
out:
	free(p);
	free(ns);
	return ret;
}

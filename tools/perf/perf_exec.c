/* SPDX-License-Identifier: MIT */
/*
 * perf_exec.c - the "minimal executor": the least work any software NIC must
 * do per RDMA_WRITE WQE, measured so the NIC model's rate can be judged
 * against it on the same machine in the same run.
 *
 * A producer thread builds mlx5-shaped 64-byte WQEs (ctrl + raddr + data
 * segment, 3 DS, built with the <gdak/mlx5.h> encoders exactly as device
 * code does) into a ring and publishes its producer index every `per_db`
 * WQEs (the doorbell).  A consumer thread reads the index, decodes each WQE,
 * checks opcode, DS count, ring index, keys and both address ranges against
 * one region each, and copies the bytes.  Nothing else: no CQEs, no QP
 * state, no trace, no lookup of the key in a table.  The consumer publishes
 * its index once per batch so the producer can reuse slots.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <gdak/mlx5.h>

#include "perf.h"

enum {
	EXEC_RING = 256,	/* WQEBBs when the caller names none (the default SQ) */
	EXEC_QPN = 0x123,
	EXEC_LKEY = 0x1111,
	EXEC_RKEY = 0x2222,
};

struct exec {
	uint8_t *ring;
	uint8_t *src, *dst;
	size_t region;		/* bytes in each of src and dst */
	size_t size;
	size_t slots;
	uint64_t total;
	unsigned per_db;
	uint64_t ring_n;	/* WQEBBs, a power of two */

	_Alignas(64) _Atomic uint64_t pi;	/* producer's "doorbell record" */
	_Alignas(64) _Atomic uint64_t ci;	/* consumer's progress */
	_Alignas(64) _Atomic int failed;	/* consumer found a bad WQE */
	_Atomic int go;				/* both threads started: begin */
	uint64_t bad_index;
	char bad_what[64];
};

static void *producer(void *arg)
{
	struct exec *e = arg;
	uint64_t i = 0, ci = 0;
	struct perf_backoff bo = {0};

	while (!atomic_load_explicit(&e->go, memory_order_acquire))
		perf_backoff(&bo);
	while (i < e->total) {
		uint64_t n = e->total - i < e->per_db ? e->total - i : e->per_db;
		uint64_t j;

		perf_backoff_reset(&bo);
		while (i + n - ci > e->ring_n) {
			if (atomic_load_explicit(&e->failed, memory_order_relaxed))
				return NULL;
			perf_backoff(&bo);
			ci = atomic_load_explicit(&e->ci, memory_order_acquire);
		}
		for (j = i; j < i + n; j++) {
			uint8_t *w = e->ring + (j & (e->ring_n - 1)) * 64;
			size_t off = (j % e->slots) * e->size;
			struct gdak_mlx5_ctrl c = {
				.opcode = MLX5_OPCODE_RDMA_WRITE,
				.wqe_index = (uint16_t)j,
				.qpn = EXEC_QPN,
				.ds = 3,
			};

			gdak_mlx5_ctrl_encode((struct mlx5_wqe_ctrl_seg *)(void *)w, &c);
			gdak_mlx5_raddr_encode((struct mlx5_wqe_raddr_seg *)(void *)(w + 16),
					       (uint64_t)(uintptr_t)(e->dst + off), EXEC_RKEY);
			gdak_mlx5_data_encode((struct mlx5_wqe_data_seg *)(void *)(w + 32),
					      (uint64_t)(uintptr_t)(e->src + off),
					      (uint32_t)e->size, EXEC_LKEY);
		}
		i += n;
		/* release: the WQE bytes are visible before the index that covers them */
		atomic_store_explicit(&e->pi, i, memory_order_release);
	}
	return NULL;
}

static int in_region(uint64_t addr, uint32_t len, const uint8_t *base, size_t region)
{
	uint64_t b = (uint64_t)(uintptr_t)base;

	return addr >= b && len <= region && addr - b <= region - len;
}

static void *consumer(void *arg)
{
	struct exec *e = arg;
	uint64_t ci = 0, pi;
	struct perf_backoff bo;

	while (ci < e->total) {
		perf_backoff_reset(&bo);
		while ((pi = atomic_load_explicit(&e->pi, memory_order_acquire)) == ci)
			perf_backoff(&bo);
		for (; ci < pi; ci++) {
			const uint8_t *w = e->ring + (ci & (e->ring_n - 1)) * 64;
			struct gdak_mlx5_ctrl c;
			uint64_t raddr, laddr;
			uint32_t rkey, lkey, len;
			const char *bad = NULL;
			const void *wc = w, *wr = w + 16, *wd = w + 32;

			gdak_mlx5_ctrl_decode((const struct mlx5_wqe_ctrl_seg *)wc, &c);
			gdak_mlx5_raddr_decode((const struct mlx5_wqe_raddr_seg *)wr, &raddr,
					       &rkey);
			gdak_mlx5_data_decode((const struct mlx5_wqe_data_seg *)wd, &laddr, &len,
					      &lkey);
			if (c.opcode != MLX5_OPCODE_RDMA_WRITE || c.ds != 3)
				bad = "opcode/ds";
			else if (c.wqe_index != (uint16_t)ci || c.qpn != EXEC_QPN)
				bad = "wqe index/qpn";
			else if (rkey != EXEC_RKEY || lkey != EXEC_LKEY)
				bad = "key";
			else if (!in_region(raddr, len, e->dst, e->region) ||
				 !in_region(laddr, len, e->src, e->region))
				bad = "address range";
			if (bad) {
				e->bad_index = ci;
				snprintf(e->bad_what, sizeof(e->bad_what), "%s", bad);
				atomic_store_explicit(&e->failed, 1, memory_order_relaxed);
				atomic_store_explicit(&e->ci, e->total, memory_order_release);
				return NULL;
			}
			memcpy((void *)(uintptr_t)raddr, (const void *)(uintptr_t)laddr, len);
		}
		atomic_store_explicit(&e->ci, ci, memory_order_release);
	}
	return NULL;
}

int perf_exec_run(size_t size, uint64_t wqes, unsigned per_db, unsigned ring, double *rate)
{
	struct exec *e;
	pthread_t pt, ct;
	uint64_t t0, t1;
	size_t check;
	int ret = 0;

	if (!size || size > UINT32_MAX || !wqes || !per_db || per_db > 32768 || ring > 65536 ||
	    (ring & (ring - 1)))
		return -EINVAL;
	e = aligned_alloc(64, sizeof(*e));
	if (!e)
		return -ENOMEM;
	memset(e, 0, sizeof(*e));
	e->size = size;
	e->slots = perf_region_slots(size);
	e->region = e->slots * size;
	e->total = wqes;
	e->per_db = per_db;
	e->ring_n = ring ? ring : EXEC_RING;
	while (e->ring_n < 2ull * per_db)
		e->ring_n *= 2;
	e->ring = aligned_alloc(4096, e->ring_n * 64);
	e->src = perf_alloc(e->region);
	e->dst = perf_alloc(e->region);
	if (!e->ring || !e->src || !e->dst) {
		ret = -ENOMEM;
		goto out;
	}
	memset(e->ring, 0, e->ring_n * 64);
	perf_fill(e->src, e->region, size);
	memset(e->dst, 0, e->region);

	if (pthread_create(&ct, NULL, consumer, e)) {
		ret = -EAGAIN;
		goto out;
	}
	if (pthread_create(&pt, NULL, producer, e)) {
		atomic_store(&e->failed, 1);
		atomic_store(&e->pi, wqes); /* let the consumer run out */
		atomic_store(&e->go, 1);
		pthread_join(ct, NULL);
		ret = -EAGAIN;
		goto out;
	}
	/* thread start-up is not part of the rate */
	t0 = perf_now_ns();
	atomic_store_explicit(&e->go, 1, memory_order_release);
	pthread_join(ct, NULL);
	t1 = perf_now_ns();
	pthread_join(pt, NULL);

	if (atomic_load(&e->failed)) {
		perf_verify_fail("minimal executor", size, "WQE %llu rejected (%s)",
				 (unsigned long long)e->bad_index, e->bad_what);
		ret = -EIO;
		goto out;
	}
	if (perf_test_corrupt())
		e->dst[0] ^= 0xff;
	/* Every slot the run wrote must hold the source bytes. */
	check = (wqes < e->slots ? wqes : e->slots) * size;
	if (memcmp(e->dst, e->src, check)) {
		perf_verify_fail("minimal executor", size, "destination differs from source");
		ret = -EIO;
		goto out;
	}
	*rate = (double)wqes * 1e9 / (double)(t1 - t0 ? t1 - t0 : 1);
out:
	free(e->ring);
	free(e->src);
	free(e->dst);
	free(e);
	return ret;
}

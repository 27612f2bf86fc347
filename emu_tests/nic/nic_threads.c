/* SPDX-License-Identifier: MIT */
/*
 * nic_threads.c - 64 QPs served by 4 NIC threads, driven by 4 device
 * threads at once: every QP writes its own pattern and fetch-adds one
 * shared counter (atomic across NIC threads: the final value is exact).
 * Then destroy with work in flight: QPs destroyed while their doorbells
 * are still being served, and MRs deregistered under traffic.
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>

#include "gdak_test.h"
#include "nic_util.h"

#define NQP 64
#define NDEV 4
#define ROUNDS 200
#define CHUNK 512

static struct gdak_ctx *ctx;
static uint8_t *src, *dst;
static struct gdak_mr *msrc, *mdst;
static struct nu_qp qps[NQP];
static uint64_t *counter;
static _Atomic unsigned failures;

static void *device(void *arg)
{
	unsigned me = (unsigned)(uintptr_t)arg;

	for (unsigned r = 0; r < ROUNDS; r++) {
		for (unsigned k = me; k < NQP; k += NDEV) {
			struct nu_qp *q = &qps[k];
			struct gdak_mlx5_cqe_fields f;
			uint8_t *s = src + (size_t)k * CHUNK, *d = dst + (size_t)k * CHUNK;

			memset(s, (int)(r * 7 + k), CHUNK);
			nu_post_rdma(q, MLX5_OPCODE_RDMA_WRITE, s, CHUNK, gdak_mr_lkey(msrc),
				     (uintptr_t)d, gdak_mr_rkey(mdst), 0, 0);
			nu_post_atomic(q, MLX5_OPCODE_ATOMIC_FA, src + NQP * CHUNK + 8 * k,
				       gdak_mr_lkey(msrc), (uintptr_t)counter, gdak_mr_rkey(mdst), 1, 0,
				       NU_SIG);
			nu_ring(q);
			if (nu_poll(q, 0, &f, 10000) || f.opcode != MLX5_CQE_REQ ||
			    memcmp(d, s, CHUNK))
				atomic_fetch_add(&failures, 1);
		}
	}
	return NULL;
}

static void concurrent(void)
{
	pthread_t t[NDEV];

	for (unsigned i = 0; i < NQP; i += 2) {
		struct gdak_qp_attr attr = {.sq_depth = 64, .nic_thread = (int)(i / 2) % 4};
		REQUIRE_EQ(nu_pair(ctx, &attr, &qps[i], &qps[i + 1]), 0);
	}
	*counter = 0;
	for (unsigned i = 0; i < NDEV; i++)
		pthread_create(&t[i], NULL, device, (void *)(uintptr_t)i);
	for (unsigned i = 0; i < NDEV; i++)
		pthread_join(t[i], NULL);
	CHECK_EQ(atomic_load(&failures), 0);
	CHECK_EQ(*counter, (uint64_t)NQP * ROUNDS);
	for (unsigned i = 0; i < NQP; i++) {
		struct gdak_nic_stats st;
		gdak_nic_qp_stats(qps[i].qp, &st);
		CHECK_EQ(st.wqes, 2 * ROUNDS);
		CHECK_EQ(st.errors, 0);
		nu_destroy(&qps[i]);
	}
}

/* Destroy QPs (and deregister an MR) while work is in flight. */
static void destroy_in_flight(void)
{
	struct gdak_mr *extra;

	for (int it = 0; it < 20; it++) {
		struct nu_qp a, b;
		struct gdak_qp_attr attr = {.sq_depth = 256, .nic_thread = it % 4};

		REQUIRE_EQ(nu_pair(ctx, &attr, &a, &b), 0);
		REQUIRE_EQ(gdak_mr_reg(ctx, dst, 65536, GDAK_ACCESS_ALL, &extra), 0);
		for (int i = 0; i < 200; i++) {
			nu_post_rdma(&a, MLX5_OPCODE_RDMA_WRITE, src, 4096, gdak_mr_lkey(msrc),
				     (uintptr_t)dst, gdak_mr_rkey(extra), 0, i % 50 == 49 ? NU_SIG : 0);
			nu_post_rdma(&b, MLX5_OPCODE_RDMA_WRITE, src, 256, gdak_mr_lkey(msrc),
				     (uintptr_t)dst, gdak_mr_rkey(mdst), 0, 0);
			if (i % 16 == 15) {
				nu_ring(&a);
				nu_ring(&b);
			}
		}
		nu_ring(&a);
		nu_ring(&b);
		if (it & 1) {
			REQUIRE_EQ(gdak_mr_dereg(extra), 0); /* a's writes now fail: fine */
			nu_destroy(&b);
			nu_destroy(&a);
		} else {
			nu_destroy(&a);
			nu_destroy(&b);
			REQUIRE_EQ(gdak_mr_dereg(extra), 0);
		}
	}
	CHECK(1);
}

int main(void)
{
	size_t len = (size_t)NQP * CHUNK + NQP * 8 + 65536;

	gdak_set_log_level(GDAK_LOG_ERROR);
	REQUIRE_EQ(gdak_nic_set_threads(4), 0);
	REQUIRE_EQ(gdak_open("emu", &ctx), 0);
	CHECK_EQ(gdak_nic_get_threads(), 4);
	CHECK(gdak_nic_set_threads(2) < 0); /* running */
	REQUIRE_EQ(gdak_mem_alloc(ctx, len, GDAK_MEM_HOST, (void **)&src), 0);
	REQUIRE_EQ(gdak_mem_alloc(ctx, len, GDAK_MEM_HOST, (void **)&dst), 0);
	REQUIRE_EQ(gdak_mr_reg(ctx, src, len, GDAK_ACCESS_ALL, &msrc), 0);
	REQUIRE_EQ(gdak_mr_reg(ctx, dst, len, GDAK_ACCESS_ALL, &mdst), 0);
	counter = (uint64_t *)(void *)(dst + (size_t)NQP * CHUNK);
	concurrent();
	destroy_in_flight();
	gdak_mr_dereg(msrc);
	gdak_mr_dereg(mdst);
	gdak_close(ctx);
	return gdak_test_end();
}

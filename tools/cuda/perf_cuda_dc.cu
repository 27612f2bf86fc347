/* SPDX-License-Identifier: MIT */
/*
 * perf_cuda_dc.cu - dc_put_bw: put_bw over the Dynamically Connected
 * transport, NVSHMEM IBGDA's default shape.  C CTAs of one thread, CTA c
 * owning DCI c (NIC thread c % T); put i of CTA c goes to peer (c + i) % P,
 * one of P DCTs, so every put names another target than the one before it
 * (the DCI's stream turns each time, docs/DESIGN.md "DC").  Compact AV (one
 * WQEBB per put) and full AV (two).  The baseline, measured in the same
 * run with the same CTAs, sizes and counts: write_bw's shape on RC QPs (one
 * peer per QP), printed as base_GB/s with bw/base = DC rate / RC rate.
 * After the clock stops, every peer's slot of every CTA is checked.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <gdak/dev/dc.h>

#include "perf_cuda.h"

#define HANG_S 300
#define DC_PEERS 8

__global__ void k_dc_rate(struct gdak_dev_qp *qps, const struct gdak_dev_av *avs, unsigned peers,
			  uint64_t src, uint32_t lkey, uint64_t dst, uint32_t rkey, uint32_t size,
			  unsigned ctas, unsigned n, uint64_t *t0, uint64_t *t1, int *rc)
{
	unsigned c = blockIdx.x;
	struct gdak_dev_qp *qp = &qps[c];
	struct gdak_dev_sge s = {src + (uint64_t)c * size, size, lkey};

	pc_timed_burst(qp, n, t0, t1, rc, [&](unsigned i) {
		unsigned p = (c + i) % peers;
		uint64_t t;

		return gdak_dev_dc_put(qp, &avs[p], &s, dst + ((uint64_t)p * ctas + c) * size, rkey,
				       0, &t);
	});
}

struct dc_env {
	struct gdak_ctx *ctx;
	unsigned ctas, T, n;
	size_t size;
	struct gdak_qp **dci, *dct[DC_PEERS];
	struct pc_pair *pairs;
	struct gdak_dev_qp *slots, *rc_slots; /* GPU arrays of descriptors */
	struct gdak_dev_av *avs;	/* GPU: the peers' AVs, compact then full */
	uint64_t *t0, *t1;
	int *rc;
	uint8_t *src, *dst;
	struct gdak_mr *ms, *md;
};

/* A dc_put_bw row of ctas CTAs x e->n puts at rate (per second); the note
 * and the verdict are the caller's. */
static struct pc_row dc_row(const struct dc_env *e, unsigned ctas, unsigned T, double rate)
{
	struct pc_row r;

	memset(&r, 0, sizeof(r));
	strcpy(r.test, "dc_put_bw");
	r.bytes = e->size;
	r.ctas = ctas;
	r.nic_threads = T;
	r.ops = (uint64_t)ctas * e->n;
	r.msg_rate = rate;
	r.bw = rate * (double)e->size;
	return r;
}

static double span_rate(const struct dc_env *e, int *bad)
{
	uint64_t lo = UINT64_MAX, hi = 0;

	for (unsigned c = 0; c < e->ctas; c++) {
		*bad |= e->rc[c] != 0;
		lo = e->t0[c] < lo ? e->t0[c] : lo;
		hi = e->t1[c] > hi ? e->t1[c] : hi;
	}
	return (double)e->ctas * e->n / ((double)(hi - lo) / 1e9);
}

static int dc_setup(struct dc_env *e)
{
	struct gdak_qp_attr a;
	struct gdak_dev_av av[2 * DC_PEERS];
	size_t dlen = (size_t)DC_PEERS * e->ctas * e->size;

	e->dci = (struct gdak_qp **)calloc(e->ctas, sizeof(*e->dci));
	e->pairs = (struct pc_pair *)calloc(e->ctas, sizeof(*e->pairs));
	if (!e->dci || !e->pairs)
		return -ENOMEM;
	PC_CHECK(cudaMalloc((void **)&e->slots, e->ctas * sizeof(struct gdak_dev_qp)));
	PC_CHECK(cudaMalloc((void **)&e->rc_slots, e->ctas * sizeof(struct gdak_dev_qp)));
	PC_CHECK(cudaMalloc((void **)&e->avs, sizeof(av)));
	PC_CHECK(cudaHostAlloc((void **)&e->t0, e->ctas * 8, cudaHostAllocMapped));
	PC_CHECK(cudaHostAlloc((void **)&e->t1, e->ctas * 8, cudaHostAllocMapped));
	PC_CHECK(cudaHostAlloc((void **)&e->rc, e->ctas * sizeof(int), cudaHostAllocMapped));
	for (unsigned p = 0; p < DC_PEERS; p++) {
		struct gdak_qp_info info;

		memset(&a, 0, sizeof(a));
		a.type = GDAK_QPT_DCT;
		a.dc_key = 0xd0c0 + p;
		a.nic_thread = (int)(p % e->T);
		PC_GDAK(gdak_qp_create(e->ctx, &a, &e->dct[p]));
		PC_GDAK(gdak_qp_connect(e->dct[p], NULL));
		PC_GDAK(gdak_qp_info(e->dct[p], &info));
		PC_GDAK(gdak_dc_av(&info, 1, &av[p]));
		PC_GDAK(gdak_dc_av(&info, 0, &av[DC_PEERS + p]));
	}
	PC_CHECK(cudaMemcpy(e->avs, av, sizeof(av), cudaMemcpyHostToDevice));
	for (unsigned c = 0; c < e->ctas; c++) {
		struct gdak_dev_qp *d;

		memset(&a, 0, sizeof(a));
		a.type = GDAK_QPT_DCI;
		a.sq_depth = a.cq_depth = 256;
		a.nic_thread = (int)(c % e->T);
		PC_GDAK(gdak_qp_create(e->ctx, &a, &e->dci[c]));
		PC_GDAK(gdak_qp_connect(e->dci[c], NULL));
		PC_GDAK(gdak_qp_export(e->dci[c], &d));
		PC_CHECK(cudaMemcpy(&e->slots[c], d, sizeof(*d), cudaMemcpyHostToDevice));
		if (pc_pair_make(e->ctx, GDAK_DEV_DB_DB, 256, (int)(c % e->T), 1, &e->rc_slots[c],
				 &e->pairs[c]))
			return -EIO;
	}
	PC_GDAK(gdak_mem_alloc(e->ctx, e->ctas * e->size, GDAK_MEM_HOST_MAPPED, (void **)&e->src));
	PC_GDAK(gdak_mem_alloc(e->ctx, dlen, GDAK_MEM_HOST_MAPPED, (void **)&e->dst));
	PC_GDAK(gdak_mr_reg(e->ctx, e->src, e->ctas * e->size, GDAK_ACCESS_ALL, &e->ms));
	PC_GDAK(gdak_mr_reg(e->ctx, e->dst, dlen, GDAK_ACCESS_ALL, &e->md));
	for (size_t i = 0; i < e->ctas * e->size; i++)
		e->src[i] = (uint8_t)(i * 131 + 7);
	return 0;
}

static void dc_teardown(struct dc_env *e)
{
	for (unsigned c = 0; c < e->ctas; c++) {
		if (e->dci[c])
			gdak_qp_destroy(e->dci[c]);
		pc_pair_destroy(&e->pairs[c]);
	}
	for (unsigned p = 0; p < DC_PEERS; p++)
		if (e->dct[p])
			gdak_qp_destroy(e->dct[p]);
	gdak_mr_dereg(e->ms);
	gdak_mr_dereg(e->md);
	gdak_mem_free(e->ctx, e->src);
	gdak_mem_free(e->ctx, e->dst);
	cudaFree(e->slots);
	cudaFree(e->rc_slots);
	cudaFree(e->avs);
	cudaFreeHost(e->t0);
	cudaFreeHost(e->t1);
	cudaFreeHost(e->rc);
	free(e->dci);
	free(e->pairs);
}

/* every peer slot the DCI puts reached holds its CTA's source bytes */
static int dc_verify(const struct dc_env *e)
{
	unsigned used = e->n < DC_PEERS ? e->n : DC_PEERS;

	for (unsigned c = 0; c < e->ctas; c++)
		for (unsigned k = 0; k < used; k++) {
			unsigned p = (c + k) % DC_PEERS;

			if (memcmp(e->dst + ((size_t)p * e->ctas + c) * e->size,
				   e->src + (size_t)c * e->size, e->size))
				return 0;
		}
	return 1;
}

static int dc_one(const struct pc_opts *o, unsigned ctas, unsigned T)
{
	struct dc_env e;
	cudaStream_t s;
	double rc_rate;
	int bad = 0, ret;

	memset(&e, 0, sizeof(e));
	e.ctas = ctas;
	e.T = T;
	e.size = o->bw_size;
	e.n = 1000000u / ctas;
	if (e.n > o->bw_iters)
		e.n = o->bw_iters;
	if (e.n < 1000)
		e.n = 1000;
	PC_GDAK(gdak_nic_set_threads(T));
	PC_GDAK(gdak_nic_set_poll(GDAK_NIC_POLL_SPIN));
	PC_GDAK(gdak_open("emu", &e.ctx));
	ret = dc_setup(&e);
	if (ret)
		return ret;
	PC_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));

	/* the RC baseline first: the same puts, each CTA on its own connected QP */
	pc_k_rate<<<ctas, 1, 0, s>>>(e.rc_slots, (uint64_t)(uintptr_t)e.src, gdak_mr_lkey(e.ms),
				     (uint64_t)(uintptr_t)e.dst, gdak_mr_rkey(e.md),
				     (uint32_t)e.size, e.n, e.t0, e.t1, e.rc);
	if (pc_wait(s, HANG_S, "dc_put_bw RC baseline"))
		exit(1);
	rc_rate = span_rate(&e, &bad);
	{
		struct pc_row r = dc_row(&e, ctas, T, rc_rate);

		strcpy(r.note, "RC baseline, 1 peer/QP");
		r.verified = !bad && !memcmp(e.dst, e.src, (size_t)ctas * e.size);
		pc_add_row(&r);
	}
	for (int full = 0; full <= 1; full++) {
		struct pc_row r;
		double rate;

		bad = 0;
		memset(e.dst, 0, (size_t)DC_PEERS * ctas * e.size);
		k_dc_rate<<<ctas, 1, 0, s>>>(e.slots, e.avs + (full ? DC_PEERS : 0), DC_PEERS,
					     (uint64_t)(uintptr_t)e.src, gdak_mr_lkey(e.ms),
					     (uint64_t)(uintptr_t)e.dst, gdak_mr_rkey(e.md),
					     (uint32_t)e.size, ctas, e.n, e.t0, e.t1, e.rc);
		if (pc_wait(s, HANG_S, "dc_put_bw"))
			exit(1);
		rate = span_rate(&e, &bad);
		r = dc_row(&e, ctas, T, rate);
		snprintf(r.note, sizeof(r.note), "DC %s AV, %u peers", full ? "full" : "compact",
			 DC_PEERS);
		r.base_bw = rc_rate * (double)e.size; /* bw/base = DC / RC */
		r.verified = !bad && dc_verify(&e);
		if (!r.verified)
			fprintf(stderr, "gdak-perf-cuda: dc_put_bw %u CTAs %s AV: %s\n", ctas,
				full ? "full" : "compact",
				bad ? "a CTA's puts failed" : "destination bytes differ");
		pc_add_row(&r);
		ret |= !r.verified;
	}
	cudaStreamDestroy(s);
	dc_teardown(&e);
	gdak_close(e.ctx);
	return ret ? -EIO : 0;
}

int pc_dc_bw(const struct pc_opts *o)
{
	int rc = 0;

	for (unsigned ti = 0; ti < o->nnic; ti++)
		for (unsigned i = 0; i < o->nctas; i++)
			rc |= dc_one(o, o->ctas[i], o->nic_threads[ti]);
	gdak_nic_set_threads(1);
	gdak_nic_set_poll(GDAK_NIC_POLL_ADAPTIVE);
	return rc ? -EIO : 0;
}

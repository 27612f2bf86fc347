/* SPDX-License-Identifier: MIT */
/*
 * cuda_scopes.cu - execution scopes and resource sharing on a GPU:
 *   warp scope   32 lanes, one reservation and one doorbell per call: put,
 *                put of a value, get, non-blocking fetch-add, wait, quiet
 *   block scope  128 threads: put, put of a value, get, quiet
 *   shared QP    8 blocks x 32 threads posting on one QP at once (put,
 *                put_value, fetch-add), ring smaller than the work so slots
 *                are reused under contention
 * Every byte, every fetched value and the final counters are checked.
 */
#include "cuda_util.h"

#define CHUNK 64

struct sc_args {
	struct gdak_dev_qp *qp;
	uint64_t src, dst, back, hdst, word, res;
	uint32_t src_key, dst_key, back_key, hdst_key, word_key, res_key;
};

__global__ void k_warp(struct sc_args x, int *rc)
{
	unsigned l = threadIdx.x;
	struct gdak_dev_sge s = {x.src + l * CHUNK, CHUNK, x.src_key};
	struct gdak_dev_sge b = {x.back + l * CHUNK, CHUNK, x.back_key};
	uint64_t t = 0;
	int k = l * 8;

	/* A warp call groups the lanes that are converged when it is made
	 * (__activemask): after any divergence (a leader-only branch inside
	 * the previous call is one) converge explicitly, or the group may be
	 * a part of the warp - still correct, but not one doorbell. */
	__syncwarp();
	rc[k++] = gdak_dev_put_warp(x.qp, &s, x.dst + l * CHUNK, x.dst_key, 0, &t);
	__syncwarp();
	rc[k++] = gdak_dev_put_value_warp(x.qp, 1000 + l, x.hdst + l * 8, x.hdst_key, 0, &t);
	__syncwarp();
	rc[k++] = gdak_dev_wait_warp(x.qp, t, NULL);
	__syncwarp();
	rc[k++] = gdak_dev_get_warp(x.qp, &b, x.dst + l * CHUNK, x.dst_key, 0, &t);
	__syncwarp();
	rc[k++] = gdak_dev_fetch_add_nbi_warp(x.qp, x.word, x.word_key, 1ull << l,
					      (uint64_t *)(x.res + l * 8), x.res_key, 0, &t);
	__syncwarp();
	rc[k++] = gdak_dev_quiet_warp(x.qp, NULL);
	rc[k++] = (int)(t & 0xffff); /* the group's ticket, same in every lane */
}

__global__ void k_block(struct sc_args x, int *rc)
{
	unsigned l = threadIdx.x;
	struct gdak_dev_sge s = {x.src + l * CHUNK, CHUNK, x.src_key};
	struct gdak_dev_sge b = {x.back + l * CHUNK, CHUNK, x.back_key};
	uint64_t t = 0;
	int k = l * 4;

	rc[k++] = gdak_dev_put_block(x.qp, &s, x.dst + l * CHUNK, x.dst_key, 0, &t);
	rc[k++] = gdak_dev_put_value_block(x.qp, 5000 + l, x.hdst + l * 8, x.hdst_key, 0, &t);
	rc[k++] = gdak_dev_get_block(x.qp, &b, x.dst + l * CHUNK, x.dst_key, GDAK_DEV_WQE_FENCE,
				     &t);
	rc[k++] = gdak_dev_quiet_block(x.qp, NULL);
}

/* Shared QP: every thread of every block posts ROUNDS times. */
#define SH_BLOCKS 8
#define SH_THREADS 32
#define SH_ROUNDS 4
__global__ void k_shared(struct sc_args x, int *rc)
{
	unsigned id = blockIdx.x * blockDim.x + threadIdx.x;
	int r = 0;

	for (unsigned i = 0; i < SH_ROUNDS && !r; i++) {
		unsigned slot = id * SH_ROUNDS + i;
		struct gdak_dev_sge s = {x.src + slot * 16, 16, x.src_key};
		uint64_t t;
		r = gdak_dev_put(x.qp, &s, x.dst + slot * 16, x.dst_key, 0, &t);
		if (!r)
			r = gdak_dev_put_value(x.qp, slot, 8, x.hdst + slot * 8, x.hdst_key, 0, &t);
		if (!r)
			r = gdak_dev_fetch_add_nbi(x.qp, x.word, x.word_key, 1,
						   (uint64_t *)(x.res + slot * 8), x.res_key, 0,
						   &t);
	}
	if (!r)
		r = gdak_dev_quiet_timeout(x.qp, CU_WAIT_NS, NULL);
	rc[id] = r;
}

struct bufs {
	struct cu_buf src, dst, back, hdst, word, res;
};

static void bufs_make(struct gdak_ctx *ctx, struct bufs *b, size_t n, uint8_t *pat)
{
	cu_buf_make(ctx, n, GDAK_MEM_GPU, &b->src);
	cu_buf_make(ctx, n, GDAK_MEM_GPU, &b->dst);
	cu_buf_make(ctx, n, GDAK_MEM_GPU, &b->back);
	cu_buf_make(ctx, n, GDAK_MEM_HOST_MAPPED, &b->hdst);
	cu_buf_make(ctx, 64, GDAK_MEM_GPU, &b->word);
	cu_buf_make(ctx, n, GDAK_MEM_GPU, &b->res);
	gdak_test_fill(pat, n, n);
	cu_write(&b->src, 0, pat, n);
}

static void bufs_free(struct gdak_ctx *ctx, struct bufs *b)
{
	cu_buf_free(ctx, &b->src);
	cu_buf_free(ctx, &b->dst);
	cu_buf_free(ctx, &b->back);
	cu_buf_free(ctx, &b->hdst);
	cu_buf_free(ctx, &b->word);
	cu_buf_free(ctx, &b->res);
}

static struct sc_args args_of(struct gdak_dev_qp *qp, struct bufs *b)
{
	struct sc_args x = {qp, cu_addr(&b->src, 0), cu_addr(&b->dst, 0), cu_addr(&b->back, 0),
			    cu_addr(&b->hdst, 0), cu_addr(&b->word, 0), cu_addr(&b->res, 0),
			    b->src.key, b->dst.key, b->back.key, b->hdst.key, b->word.key,
			    b->res.key};
	return x;
}

static void test_warp(struct gdak_ctx *ctx, enum gdak_dev_db_handler h)
{
	struct gdak_qp_attr at = cu_attr(h, GDAK_DEV_EXCLUSIVE, 128, 0);
	static uint8_t pat[32 * CHUNK], got[32 * CHUNK];
	struct cu_pair p;
	struct bufs b;
	int *rc = cu_results<int>(ctx, 32 * 8);
	uint64_t res[32], word, seen = 0;
	cudaStream_t st = cu_stream();

	cu_pair_make(ctx, &at, &p);
	bufs_make(ctx, &b, sizeof(pat), pat);
	k_warp<<<1, 32, 0, st>>>(args_of(p.a, &b), rc);
	cu_wait(st, "k_warp");
	for (int l = 0; l < 32; l++) {
		for (int k = 0; k < 6; k++)
			CHECK_EQ(rc[l * 8 + k], 0);
		CHECK_EQ(rc[l * 8 + 6], rc[6]);
		CHECK_EQ(((uint64_t *)b.hdst.p)[l], 1000 + l);
	}
	/* four warp calls of 32 WQEs each: the last ticket is 128 */
	CHECK_EQ(rc[6], 128);
	cu_read(got, &b.dst, 0, sizeof(got));
	CHECK_MEM(got, pat, sizeof(got));
	cu_read(got, &b.back, 0, sizeof(got));
	CHECK_MEM(got, pat, sizeof(got));
	cu_read(&word, &b.word, 0, 8);
	CHECK_EQ(word, 0xffffffffull);
	/* each lane fetched the sum of the lanes before it, in WQE order */
	cu_read(res, &b.res, 0, sizeof(res));
	for (int l = 0; l < 32; l++) {
		CHECK_EQ(gdak_be64toh(res[l]), seen);
		seen += 1ull << l;
	}
	cudaStreamDestroy(st);
	cu_pair_destroy(&p);
	bufs_free(ctx, &b);
	gdak_mem_free(ctx, rc);
}

static void test_block(struct gdak_ctx *ctx)
{
	struct gdak_qp_attr at = cu_attr(GDAK_DEV_DB_DB, GDAK_DEV_EXCLUSIVE, 512, 0);
	static uint8_t pat[128 * CHUNK], got[128 * CHUNK];
	struct cu_pair p;
	struct bufs b;
	int *rc = cu_results<int>(ctx, 128 * 4);
	cudaStream_t st = cu_stream();

	cu_pair_make(ctx, &at, &p);
	bufs_make(ctx, &b, sizeof(pat), pat);
	k_block<<<1, 128, 0, st>>>(args_of(p.a, &b), rc);
	cu_wait(st, "k_block");
	for (int l = 0; l < 128 * 4; l++)
		CHECK_EQ(rc[l], 0);
	for (int l = 0; l < 128; l++)
		CHECK_EQ(((uint64_t *)b.hdst.p)[l], 5000 + l);
	cu_read(got, &b.dst, 0, sizeof(got));
	CHECK_MEM(got, pat, sizeof(got));
	cu_read(got, &b.back, 0, sizeof(got));
	CHECK_MEM(got, pat, sizeof(got));
	cudaStreamDestroy(st);
	cu_pair_destroy(&p);
	bufs_free(ctx, &b);
	gdak_mem_free(ctx, rc);
}

static void test_shared(struct gdak_ctx *ctx, enum gdak_dev_db_handler h)
{
	const unsigned n = SH_BLOCKS * SH_THREADS, slots = n * SH_ROUNDS;
	struct gdak_qp_attr at = cu_attr(h, GDAK_DEV_SHARED, 64, 0);
	static uint8_t pat[SH_BLOCKS * SH_THREADS * SH_ROUNDS * 16], got[sizeof(pat)];
	static uint64_t res[SH_BLOCKS * SH_THREADS * SH_ROUNDS];
	static uint8_t seen[SH_BLOCKS * SH_THREADS * SH_ROUNDS];
	struct cu_pair p;
	struct bufs b;
	int *rc = cu_results<int>(ctx, n);
	uint64_t word;
	unsigned dup = 0;
	cudaStream_t st = cu_stream();

	cu_pair_make(ctx, &at, &p);
	bufs_make(ctx, &b, sizeof(pat), pat);
	k_shared<<<SH_BLOCKS, SH_THREADS, 0, st>>>(args_of(p.a, &b), rc);
	cu_wait(st, "k_shared");
	for (unsigned i = 0; i < n; i++)
		CHECK_EQ(rc[i], 0);
	cu_read(got, &b.dst, 0, slots * 16);
	CHECK_MEM(got, pat, slots * 16);
	for (unsigned i = 0; i < slots; i++)
		CHECK_EQ(((uint64_t *)b.hdst.p)[i], i);
	cu_read(&word, &b.word, 0, 8);
	CHECK_EQ(word, slots);
	/* the fetched values are a permutation of 0..slots-1: no atomic lost
	 * or applied twice */
	cu_read(res, &b.res, 0, slots * 8);
	memset(seen, 0, sizeof(seen));
	for (unsigned i = 0; i < slots; i++) {
		uint64_t v = gdak_be64toh(res[i]);
		if (v >= slots || seen[v]++)
			dup++;
	}
	CHECK_EQ(dup, 0);
	cudaStreamDestroy(st);
	cu_pair_destroy(&p);
	bufs_free(ctx, &b);
	gdak_mem_free(ctx, rc);
}

int main(void)
{
	struct gdak_ctx *ctx;

	cu_require_gpu();
	ctx = cu_open();
	test_warp(ctx, GDAK_DEV_DB_DB);
	test_warp(ctx, GDAK_DEV_DB_BF);
	test_block(ctx);
	test_shared(ctx, GDAK_DEV_DB_DB);
	test_shared(ctx, GDAK_DEV_DB_CPU_PROXY);
	gdak_close(ctx);
	return gdak_test_end();
}

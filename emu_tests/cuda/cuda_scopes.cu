/* SPDX-License-Identifier: MIT */
/*
 * cuda_scopes.cu - execution scopes and resource sharing on a GPU:
 *   warp scope   32 lanes, one reservation and one doorbell per call: put,
 *                put of a value, get, non-blocking fetch-add, wait, quiet,
 *                called back to back without converging the warp first
 *   doorbells    rounds of (warp call, wait) on a full and a partial warp
 *                (48-thread block), and of (block call, quiet): the NIC
 *                counts exactly one doorbell per call, every lane gets the
 *                group's ticket
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

	/* No __syncwarp between the calls: each call converges the warp
	 * itself (the leader-only branch inside the previous call leaves it
	 * diverged), so every call is one group of 32 lanes. */
	rc[k++] = gdak_dev_put_warp(x.qp, &s, x.dst + l * CHUNK, x.dst_key, 0, &t);
	rc[k++] = gdak_dev_put_value_warp(x.qp, 1000 + l, x.hdst + l * 8, x.hdst_key, 0, &t);
	rc[k++] = gdak_dev_wait_warp(x.qp, t, NULL);
	rc[k++] = gdak_dev_get_warp(x.qp, &b, x.dst + l * CHUNK, x.dst_key, 0, &t);
	rc[k++] = gdak_dev_fetch_add_nbi_warp(x.qp, x.word, x.word_key, 1ull << l,
					      (uint64_t *)(x.res + l * 8), x.res_key, 0, &t);
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

/*
 * Doorbell count: ROUNDS of (signalled warp put of a value, wait), each warp
 * of the block on its own QP (qps[warp]).  The wait makes the NIC execute
 * the round's WQEs - in strict mode only once it has seen that round's
 * doorbell register - before the next round rings, so the NIC's count of
 * doorbells is exact.  tk[round * nthreads + tid]: the ticket each lane got.
 */
#define DB_ROUNDS 6
__global__ void k_warp_db(struct gdak_dev_qp *q0, struct gdak_dev_qp *q1, uint64_t hdst,
			  uint32_t hdst_key, uint64_t *tk, int *rc)
{
	unsigned tid = threadIdx.x, n = blockDim.x;
	struct gdak_dev_qp *qp = tid < 32 ? q0 : q1;
	int r = 0;

	for (unsigned i = 0; i < DB_ROUNDS; i++) {
		uint64_t t = 0;
		int r1 = gdak_dev_put_value_warp(qp, i * 1000 + tid, hdst + tid * 8, hdst_key,
						 GDAK_DEV_WQE_SIGNAL, &t);
		int r2 = gdak_dev_wait_warp(qp, t, NULL);
		tk[i * n + tid] = t;
		if (!r)
			r = r1 ? r1 : r2;
	}
	rc[tid] = r;
}

/* The same with block calls: ROUNDS of (block put of a value, quiet). */
__global__ void k_block_db(struct gdak_dev_qp *qp, uint64_t hdst, uint32_t hdst_key,
			   uint64_t *tk, int *rc)
{
	unsigned tid = threadIdx.x, n = blockDim.x;
	int r = 0;

	for (unsigned i = 0; i < DB_ROUNDS; i++) {
		uint64_t t = 0;
		int r1 = gdak_dev_put_value_block(qp, i * 1000 + tid, hdst + tid * 8, hdst_key,
						  GDAK_DEV_WQE_SIGNAL, &t);
		int r2 = gdak_dev_quiet_block(qp, NULL);
		tk[i * n + tid] = t;
		if (!r)
			r = r1 ? r1 : r2;
	}
	rc[tid] = r;
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
	cu_bufs_free(ctx, {&b->src, &b->dst, &b->back, &b->hdst, &b->word, &b->res});
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

static uint64_t doorbells_of(struct gdak_qp *qp)
{
	struct gdak_nic_stats st;

	memset(&st, 0, sizeof(st));
	CHECK_EQ(gdak_nic_qp_stats(qp, &st), 0);
	return st.doorbells;
}

/* One doorbell per warp call: a full warp and a partial one (48 threads). */
static void test_warp_doorbells(struct gdak_ctx *ctx, enum gdak_dev_db_handler h)
{
	const unsigned nt = 48;
	struct gdak_qp_attr at = cu_attr(h, GDAK_DEV_EXCLUSIVE, 256, 0);
	struct cu_pair p0, p1;
	struct cu_buf hdst;
	uint64_t *tk = cu_results<uint64_t>(ctx, DB_ROUNDS * nt);
	int *rc = cu_results<int>(ctx, nt);
	cudaStream_t st = cu_stream();

	cu_pair_make(ctx, &at, &p0);
	cu_pair_make(ctx, &at, &p1);
	cu_buf_make(ctx, nt * 8, GDAK_MEM_HOST_MAPPED, &hdst);
	k_warp_db<<<1, nt, 0, st>>>(p0.a, p1.a, cu_addr(&hdst, 0), hdst.key, tk, rc);
	cu_wait(st, "k_warp_db");
	for (unsigned l = 0; l < nt; l++) {
		/* warp 0: 32 WQEs per call, warp 1: 16 */
		uint64_t per = l < 32 ? 32 : 16;
		CHECK_EQ(rc[l], 0);
		for (unsigned i = 0; i < DB_ROUNDS; i++)
			CHECK_EQ(tk[i * nt + l], per * (i + 1));
		CHECK_EQ(((uint64_t *)hdst.p)[l], (DB_ROUNDS - 1) * 1000 + l);
	}
	CHECK_EQ(doorbells_of(p0.qa), DB_ROUNDS);
	CHECK_EQ(doorbells_of(p1.qa), DB_ROUNDS);
	cudaStreamDestroy(st);
	cu_pair_destroy(&p0);
	cu_pair_destroy(&p1);
	cu_buf_free(ctx, &hdst);
	gdak_mem_free(ctx, tk);
	gdak_mem_free(ctx, rc);
}

/* One doorbell per block call. */
static void test_block_doorbells(struct gdak_ctx *ctx)
{
	const unsigned nt = 128;
	struct gdak_qp_attr at = cu_attr(GDAK_DEV_DB_DB, GDAK_DEV_EXCLUSIVE, 512, 0);
	struct cu_pair p;
	struct cu_buf hdst;
	uint64_t *tk = cu_results<uint64_t>(ctx, DB_ROUNDS * nt);
	int *rc = cu_results<int>(ctx, nt);
	cudaStream_t st = cu_stream();

	cu_pair_make(ctx, &at, &p);
	cu_buf_make(ctx, nt * 8, GDAK_MEM_HOST_MAPPED, &hdst);
	k_block_db<<<1, nt, 0, st>>>(p.a, cu_addr(&hdst, 0), hdst.key, tk, rc);
	cu_wait(st, "k_block_db");
	for (unsigned l = 0; l < nt; l++) {
		CHECK_EQ(rc[l], 0);
		for (unsigned i = 0; i < DB_ROUNDS; i++)
			CHECK_EQ(tk[i * nt + l], (uint64_t)nt * (i + 1));
		CHECK_EQ(((uint64_t *)hdst.p)[l], (DB_ROUNDS - 1) * 1000 + l);
	}
	CHECK_EQ(doorbells_of(p.qa), DB_ROUNDS);
	cudaStreamDestroy(st);
	cu_pair_destroy(&p);
	cu_buf_free(ctx, &hdst);
	gdak_mem_free(ctx, tk);
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

static void run(struct gdak_ctx *ctx)
{
	test_warp(ctx, GDAK_DEV_DB_DB);
	test_warp_doorbells(ctx, GDAK_DEV_DB_DB);
	test_warp_doorbells(ctx, GDAK_DEV_DB_BF);
	test_warp_doorbells(ctx, GDAK_DEV_DB_CPU_PROXY);
	test_block_doorbells(ctx);
	test_warp(ctx, GDAK_DEV_DB_BF);
	test_block(ctx);
	test_shared(ctx, GDAK_DEV_DB_DB);
	test_shared(ctx, GDAK_DEV_DB_CPU_PROXY);
}

int main(void)
{
	/* the doorbell counts are exact only when the NIC waits for the
	 * register as well as the record (strict mode, the default) */
	GDAK_REQUIRE(gdak_nic_set_strict(1));
	return cu_main(run);
}

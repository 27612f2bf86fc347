// SPDX-License-Identifier: MIT
/*
 * cuda_gpumem.cu - kernels whose data lives in GPU memory, the NIC model
 * moving it with the CUDA engine (run with GDAK_CUDA_BATCH=kernel, =off and =copy,
 * emu_tests/cuda/gpumem.cmake).  Every byte is checked.
 *
 *   ctas      64 CTAs x 300 puts of 8 bytes, each CTA its own QP, all on one
 *             NIC thread, every put a different value into one of four
 *             overlapping slots of the CTA: the slots end with the last
 *             values put (WQE order kept across the batches)
 *   overlap   one CTA, 64 puts of 48 bytes at 8-byte steps over one range
 *             (each over the previous ones) under one reservation each, and
 *             inline puts over them: the range ends as in order
 *   readdep   get (READ) into GPU memory, wait, put what it read: the bytes
 *   wrap      a 16-WQEBB ring and 16-entry CQ, 2000 signalled puts waited
 *             one by one (the CQ wraps 125 times)
 *   sync      while 64 CTAs put into GPU memory, the host launches a kernel
 *             of its own on another stream and calls cudaDeviceSynchronize()
 *             and cudaStreamSynchronize(0): both return (hang guard), and
 *             the puts' bytes are right
 *   fullgpu   (GDAK_CUDA_BATCH=off and copy, GDAK_CUDA_BIG not kernel) one
 *             block per SM, each holding its SM's shared memory until block
 *             0's 200 puts and two 1 MiB puts (too large for a batch) from
 *             GPU memory into GPU memory have completed: they complete (the
 *             NIC's copies take no SM), the bytes are the last puts'
 */
#include <pthread.h>

#include "cuda_util.h"

#define NCTA 64
#define PUTS 300

__global__ void k_ctas(struct gdak_dev_qp *qps, uint64_t src, uint32_t skey, uint64_t dst,
		       uint32_t dkey, unsigned n, int *rc)
{
	unsigned c = blockIdx.x;
	struct gdak_dev_qp *qp = &qps[c];
	int r = 0;
	uint64_t t = 0;

	for (unsigned i = 0; i < n && !r; i++) {
		/* source word i of the CTA; destination: one of 4 slots, the slot
		 * pairs overlapping (16-byte windows at 8-byte steps) */
		struct gdak_dev_sge s = {src + ((uint64_t)c * n + i) * 16, 16, skey};
		r = gdak_dev_put(qp, &s, dst + (uint64_t)c * 64 + (i % 4) * 8, dkey, 0, &t);
	}
	if (!r)
		r = gdak_dev_quiet_timeout(qp, CU_WAIT_NS, NULL);
	rc[c] = r;
}

static void model_ctas(const uint8_t *src, uint8_t *dst, unsigned n)
{
	for (unsigned c = 0; c < NCTA; c++)
		for (unsigned i = 0; i < n; i++)
			memcpy(dst + c * 64 + (i % 4) * 8, src + ((size_t)c * n + i) * 16, 16);
}

struct ctas_env {
	struct gdak_ctx *ctx;
	struct cu_pair p[NCTA];
	struct gdak_dev_qp *slots;
	struct cu_buf src, dst;
	uint8_t *pat, *want, *got;
	int *rc;
};

static void ctas_setup(struct gdak_ctx *ctx, struct ctas_env *e)
{
	struct gdak_qp_attr at = cu_attr(GDAK_DEV_DB_DB, GDAK_DEV_EXCLUSIVE, 256, 0);
	size_t slen = (size_t)NCTA * PUTS * 16;

	at.nic_thread = 0;
	e->ctx = ctx;
	CU_REQUIRE(cudaMalloc((void **)&e->slots, NCTA * sizeof(struct gdak_dev_qp)));
	for (unsigned c = 0; c < NCTA; c++) {
		cu_pair_make(ctx, &at, &e->p[c]);
		CU_REQUIRE(cudaMemcpy(&e->slots[c], e->p[c].a, sizeof(struct gdak_dev_qp),
				      cudaMemcpyDefault));
	}
	cu_buf_make(ctx, slen, GDAK_MEM_GPU, &e->src);
	cu_buf_make(ctx, NCTA * 64, GDAK_MEM_GPU, &e->dst);
	e->pat = (uint8_t *)malloc(slen);
	e->want = (uint8_t *)calloc(1, NCTA * 64);
	e->got = (uint8_t *)malloc(NCTA * 64);
	REQUIRE(e->pat && e->want && e->got);
	gdak_test_fill(e->pat, slen, 123);
	cu_write(&e->src, 0, e->pat, slen);
	model_ctas(e->pat, e->want, PUTS);
	e->rc = cu_results<int>(ctx, NCTA);
}

static void ctas_check(struct ctas_env *e, const char *what)
{
	for (unsigned c = 0; c < NCTA; c++)
		CHECK_EQ(e->rc[c], 0);
	cu_read(e->got, &e->dst, 0, NCTA * 64);
	if (memcmp(e->got, e->want, NCTA * 64))
		gdak_test_fail(__FILE__, __LINE__, "%s: destination bytes differ", what);
	else
		gdak_test_passed++;
}

static void ctas_teardown(struct ctas_env *e)
{
	for (unsigned c = 0; c < NCTA; c++)
		cu_pair_destroy(&e->p[c]);
	cu_bufs_free(e->ctx, {&e->src, &e->dst});
	cudaFree(e->slots);
	gdak_mem_free(e->ctx, e->rc);
	free(e->pat);
	free(e->want);
	free(e->got);
}

static void test_ctas(struct gdak_ctx *ctx)
{
	struct ctas_env e;
	cudaStream_t s = cu_stream();

	ctas_setup(ctx, &e);
	k_ctas<<<NCTA, 1, 0, s>>>(e.slots, cu_addr(&e.src, 0), e.src.key, cu_addr(&e.dst, 0),
				  gdak_mr_rkey(e.dst.mr), PUTS, e.rc);
	cu_wait(s, "ctas");
	ctas_check(&e, "64 CTAs x 300 puts into GPU memory");
	ctas_teardown(&e);
	cudaStreamDestroy(s);
}

/* A pair case's pair, src holding pat (filled from seed), dst. */
static void g2g_open(struct gdak_ctx *ctx, const struct gdak_qp_attr *at, struct cu_pair *p,
		     struct cu_buf *src, uint8_t *pat, size_t pat_len, uint64_t seed,
		     struct cu_buf *dst, size_t dst_len)
{
	cu_pair_make(ctx, at, p);
	cu_buf_make(ctx, pat_len, GDAK_MEM_GPU, src);
	cu_buf_make(ctx, dst_len, GDAK_MEM_GPU, dst);
	gdak_test_fill(pat, pat_len, seed);
	cu_write(src, 0, pat, pat_len);
}

/* A pair case's kernel has ended: its rc is 0, dst holds want. */
static void g2g_check(cudaStream_t s, const char *what, const int *rc, struct cu_buf *dst,
		      uint8_t *got, const uint8_t *want, size_t len)
{
	cu_wait(s, what);
	CHECK_EQ(*rc, 0);
	cu_read(got, dst, 0, len);
	CHECK_MEM(got, want, len);
}

static void g2g_close(struct gdak_ctx *ctx, struct cu_pair *p, struct cu_buf *src,
		      struct cu_buf *dst, int *rc, cudaStream_t s)
{
	cu_pair_destroy(p);
	cu_bufs_free(ctx, {src, dst});
	gdak_mem_free(ctx, rc);
	cudaStreamDestroy(s);
}

/* ---- one CTA: overlapping puts, inline puts over them ---- */

__global__ void k_overlap(struct gdak_dev_qp *qp, uint64_t src, uint32_t skey, uint64_t dst,
			  uint32_t dkey, int *rc)
{
	int r = 0;
	uint64_t t = 0;

	for (unsigned i = 0; i < 64 && !r; i++) {
		struct gdak_dev_sge s = {src + i * 48, 48, skey};
		r = gdak_dev_put(qp, &s, dst + i * 8, dkey, 0, &t);
		if (!r && i % 8 == 7)
			r = gdak_dev_put_value(qp, 0x1122334455667700ull + i, 8, dst + i * 8 - 4,
					       dkey, 0, &t);
	}
	if (!r)
		r = gdak_dev_quiet_timeout(qp, CU_WAIT_NS, NULL);
	*rc = r;
}

static void test_overlap(struct gdak_ctx *ctx)
{
	struct gdak_qp_attr at = cu_attr(GDAK_DEV_DB_DB, GDAK_DEV_EXCLUSIVE, 256, 0);
	struct cu_pair p;
	struct cu_buf src, dst;
	uint8_t pat[64 * 48], want[1024] = {0}, got[1024];
	int *rc = cu_results<int>(ctx, 1);
	cudaStream_t s = cu_stream();

	g2g_open(ctx, &at, &p, &src, pat, sizeof(pat), 7, &dst, sizeof(want));
	for (unsigned i = 0; i < 64; i++) {
		memcpy(want + i * 8, pat + i * 48, 48);
		if (i % 8 == 7) {
			uint64_t v = 0x1122334455667700ull + i;
			memcpy(want + i * 8 - 4, &v, 8);
		}
	}
	*rc = -1;
	k_overlap<<<1, 1, 0, s>>>(p.a, cu_addr(&src, 0), src.key, cu_addr(&dst, 0),
				  gdak_mr_rkey(dst.mr), rc);
	g2g_check(s, "overlap", rc, &dst, got, want, sizeof(want));
	g2g_close(ctx, &p, &src, &dst, rc, s);
}

/* ---- READ into GPU memory, then a put of what it read ---- */

__global__ void k_readdep(struct gdak_dev_qp *qp, uint64_t remote, uint32_t rkey, uint64_t buf,
			  uint32_t bkey, uint64_t dst, uint32_t dkey, int *rc)
{
	struct gdak_dev_sge g = {buf, 4096, bkey};
	struct gdak_dev_sge s = {buf + 1000, 2000, bkey};
	uint64_t t = 0;
	int r = gdak_dev_get(qp, &g, remote, rkey, 0, &t);

	if (!r)
		r = gdak_dev_wait_timeout(qp, t, CU_WAIT_NS, NULL);
	if (!r)
		r = gdak_dev_put(qp, &s, dst, dkey, 0, &t);
	if (!r)
		r = gdak_dev_quiet_timeout(qp, CU_WAIT_NS, NULL);
	*rc = r;
}

static void test_readdep(struct gdak_ctx *ctx)
{
	struct gdak_qp_attr at = cu_attr(GDAK_DEV_DB_DB, GDAK_DEV_EXCLUSIVE, 64, 0);
	struct cu_pair p;
	struct cu_buf remote, buf, dst;
	static uint8_t pat[4096], got[2000];
	int *rc = cu_results<int>(ctx, 1);
	cudaStream_t s = cu_stream();

	cu_pair_make(ctx, &at, &p);
	cu_buf_make(ctx, 4096, GDAK_MEM_GPU, &remote);
	cu_buf_make(ctx, 4096, GDAK_MEM_GPU, &buf);
	cu_buf_make(ctx, 2000, GDAK_MEM_GPU, &dst);
	gdak_test_fill(pat, sizeof(pat), 99);
	cu_write(&remote, 0, pat, sizeof(pat));
	*rc = -1;
	k_readdep<<<1, 1, 0, s>>>(p.a, cu_addr(&remote, 0), gdak_mr_rkey(remote.mr),
				  cu_addr(&buf, 0), buf.key, cu_addr(&dst, 0), gdak_mr_rkey(dst.mr),
				  rc);
	cu_wait(s, "readdep");
	CHECK_EQ(*rc, 0);
	cu_read(got, &dst, 0, sizeof(got));
	CHECK_MEM(got, pat + 1000, sizeof(got));
	cu_pair_destroy(&p);
	cu_bufs_free(ctx, {&remote, &buf, &dst});
	gdak_mem_free(ctx, rc);
	cudaStreamDestroy(s);
}

/* ---- CQ wrap-around ---- */

__global__ void k_wrap(struct gdak_dev_qp *qp, uint64_t src, uint32_t skey, uint64_t dst,
		       uint32_t dkey, unsigned n, int *rc)
{
	int r = 0;
	uint64_t t = 0;

	for (unsigned i = 0; i < n && !r; i++) {
		struct gdak_dev_sge s = {src + (i % 512) * 8, 8, skey};
		r = gdak_dev_put(qp, &s, dst + (i % 64) * 8, dkey, GDAK_DEV_WQE_SIGNAL, &t);
		if (!r)
			r = gdak_dev_wait_timeout(qp, t, CU_WAIT_NS, NULL);
	}
	*rc = r;
}

static void test_wrap(struct gdak_ctx *ctx)
{
	struct gdak_qp_attr at = cu_attr(GDAK_DEV_DB_DB, GDAK_DEV_EXCLUSIVE, 16, 0);
	enum { N = 2000 };
	struct cu_pair p;
	struct cu_buf src, dst;
	static uint8_t pat[4096], want[512], got[512];
	int *rc = cu_results<int>(ctx, 1);
	cudaStream_t s = cu_stream();

	g2g_open(ctx, &at, &p, &src, pat, sizeof(pat), 3, &dst, sizeof(want));
	for (unsigned i = 0; i < N; i++)
		memcpy(want + (i % 64) * 8, pat + (i % 512) * 8, 8);
	*rc = -1;
	k_wrap<<<1, 1, 0, s>>>(p.a, cu_addr(&src, 0), src.key, cu_addr(&dst, 0),
			       gdak_mr_rkey(dst.mr), N, rc);
	g2g_check(s, "wrap", rc, &dst, got, want, sizeof(want));
	g2g_close(ctx, &p, &src, &dst, rc, s);
}

/* ---- the application synchronises while the NIC is busy ---- */

__global__ void k_app(int *x)
{
	atomicAdd(x, 1);
}

static volatile int sync_done;

static void *sync_thread(void *arg)
{
	int *x = (int *)arg;
	cudaStream_t s;

	/* the application's own kernel on its own stream, then the
	 * synchronising calls an application makes */
	if (cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) != cudaSuccess)
		return (void *)1;
	k_app<<<1, 1, 0, s>>>(x);
	if (cudaDeviceSynchronize() != cudaSuccess)
		return (void *)2;
	k_app<<<1, 1>>>(x);
	if (cudaStreamSynchronize(0) != cudaSuccess)
		return (void *)3;
	cudaStreamDestroy(s);
	sync_done = 1;
	return NULL;
}

static void test_sync(struct gdak_ctx *ctx)
{
	struct ctas_env e;
	cudaStream_t s = cu_stream();
	pthread_t th;
	void *ret = NULL;
	int *x;
	uint64_t t0;

	ctas_setup(ctx, &e);
	CU_REQUIRE(cudaMalloc((void **)&x, sizeof(int)));
	CU_REQUIRE(cudaMemset(x, 0, sizeof(int)));
	sync_done = 0;
	k_ctas<<<NCTA, 1, 0, s>>>(e.slots, cu_addr(&e.src, 0), e.src.key, cu_addr(&e.dst, 0),
				  gdak_mr_rkey(e.dst.mr), PUTS, e.rc);
	REQUIRE_EQ(pthread_create(&th, NULL, sync_thread, x), 0);
	t0 = gdak_test_now_ns();
	while (!sync_done) {
		if (gdak_test_now_ns() - t0 > (uint64_t)CU_HANG_S * 1000000000ull) {
			gdak_test_fail(__FILE__, __LINE__, "cudaDeviceSynchronize / "
				       "cudaStreamSynchronize(0) still waiting after %d s", CU_HANG_S);
			fflush(stdout);
			_exit(1);
		}
		usleep(1000);
	}
	pthread_join(th, &ret);
	CHECK(ret == NULL);
	cu_wait(s, "sync");
	ctas_check(&e, "puts while the application synchronises");
	{
		int v = 0;
		CU_REQUIRE(cudaMemcpy(&v, x, sizeof(v), cudaMemcpyDeviceToHost));
		CHECK_EQ(v, 2);
	}
	cudaFree(x);
	ctas_teardown(&e);
	cudaStreamDestroy(s);
}

/* ---- every SM taken by the application while the NIC copies ---- */

/* One block per SM, each holding (nearly) all of its SM's shared memory, so
 * no other kernel can run until they end: block 0 puts from GPU memory
 * into GPU memory - n 8-byte puts, then two of big bytes from src + n * 8
 * to dst + 64 - and waits for the puts, the others wait for block 0.  A
 * NIC whose copies need an SM of their own never gets one. */
__global__ void k_full(struct gdak_dev_qp *qp, uint64_t src, uint32_t skey, uint64_t dst,
		       uint32_t dkey, unsigned n, uint32_t big, volatile int *flag, int *rc)
{
	extern __shared__ uint8_t hold[];

	if (threadIdx.x)
		return;
	if (blockIdx.x == 0) {
		int r = 0;
		uint64_t t = 0;

		for (unsigned i = 0; i < n && !r; i++) {
			struct gdak_dev_sge s = {src + i * 8, 8, skey};
			r = gdak_dev_put(qp, &s, dst + (i % 8) * 8, dkey, 0, &t);
		}
		for (unsigned i = 0; i < 2 && !r; i++) {
			struct gdak_dev_sge s = {src + n * 8, big, skey};
			r = gdak_dev_put(qp, &s, dst + 64, dkey, 0, &t);
		}
		if (!r)
			r = gdak_dev_quiet_timeout(qp, CU_WAIT_NS, NULL);
		*rc = r;
		__threadfence_system();
		*flag = 1;
	} else {
		while (!*flag)
			;
	}
	hold[0] = 1;
}

static void test_fullgpu(struct gdak_ctx *ctx)
{
	enum { N = 200, BIG = 1 << 20 };
	struct gdak_qp_attr at = cu_attr(GDAK_DEV_DB_DB, GDAK_DEV_EXCLUSIVE, 256, 0);
	struct cu_pair p;
	struct cu_buf src, dst;
	uint8_t *pat = (uint8_t *)malloc(N * 8 + BIG), *want = (uint8_t *)calloc(1, 64 + BIG),
		*got = (uint8_t *)malloc(64 + BIG);
	int *rc = cu_results<int>(ctx, 1), *flag = cu_results<int>(ctx, 1);
	cudaStream_t s = cu_stream();
	int dev = 0, sms = 0, smem = 0;

	CU_REQUIRE(cudaGetDevice(&dev));
	CU_REQUIRE(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
	CU_REQUIRE(cudaDeviceGetAttribute(&smem, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
	CU_REQUIRE(cudaFuncSetAttribute(k_full, cudaFuncAttributeMaxDynamicSharedMemorySize,
					smem));
	REQUIRE(pat && want && got);
	g2g_open(ctx, &at, &p, &src, pat, N * 8 + BIG, 77, &dst, 64 + BIG);
	cu_write(&dst, 0, want, 64 + BIG);
	for (unsigned i = 0; i < N; i++)
		memcpy(want + (i % 8) * 8, pat + i * 8, 8);
	memcpy(want + 64, pat + N * 8, BIG);
	*rc = -1;
	*flag = 0;
	k_full<<<sms, 32, smem, s>>>(p.a, cu_addr(&src, 0), src.key, cu_addr(&dst, 0),
				     gdak_mr_rkey(dst.mr), N, BIG, flag, rc);
	CU_REQUIRE(cudaGetLastError());
	g2g_check(s, "every SM held by the application", rc, &dst, got, want, 64 + BIG);
	printf("fullgpu: %d blocks of %d bytes of shared memory, %u puts and 2 of %u bytes "
	       "landed\n",
	       sms, smem, (unsigned)N, (unsigned)BIG);
	free(pat);
	free(want);
	free(got);
	gdak_mem_free(ctx, flag);
	g2g_close(ctx, &p, &src, &dst, rc, s);
}

static void run(struct gdak_ctx *ctx)
{
	test_ctas(ctx);
	test_overlap(ctx);
	test_readdep(ctx);
	test_wrap(ctx);
	test_sync(ctx);
	{
		/* kernel / memop copy 8-byte GPU sources with a kernel, and
		 * GDAK_CUDA_BIG=kernel the large ones: they would wait for an
		 * SM forever here */
		const char *m = getenv("GDAK_CUDA_BATCH"), *b = getenv("GDAK_CUDA_BIG");

		if ((!m || !strcmp(m, "off") || !strcmp(m, "copy")) && !(b && !strcmp(b, "kernel")))
			test_fullgpu(ctx);
	}
}

int main(void)
{
	GDAK_REQUIRE(gdak_nic_set_threads(1));
	return cu_main(run);
}

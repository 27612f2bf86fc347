/* SPDX-License-Identifier: MIT */
/*
 * cuda_handlers.cu - every doorbell handler from a kernel: DB (record +
 * 8-byte register write), BF (the whole WQE to the BlueFlame register; a
 * 2-WQEBB inline WQE falls back to DB) and CPU_PROXY (the kernel publishes
 * its producer index, the NIC model rings for it).  For each, one thread
 * runs 200 rounds of put / inline put / get / fetch-add / send on a 16-WQEBB
 * ring (so it wraps many times), checking each round's get against what it
 * put; the host checks the bytes, the counter, the receives, and that the
 * NIC saw doorbells on the QP.
 */
#include "cuda_util.h"

#define ROUNDS 200
#define SZ 128

struct hd_args {
	struct gdak_dev_qp *qp, *peer;
	uint64_t src, dst, back, word, res, rbuf;
	uint32_t src_key, dst_key, back_key, word_key, res_key, rbuf_key;
};

__global__ void k_rounds(struct hd_args x, int *out)
{
	uint8_t inl[100];
	int rc = 0, bad = 0, r;
	unsigned i;

	for (i = 0; i < ROUNDS && !rc; i++) {
		struct gdak_dev_sge s = {x.src + (i % 32) * SZ, SZ, x.src_key};
		struct gdak_dev_sge b = {x.back + i * SZ, SZ, x.back_key};
		struct gdak_dev_sge rv = {x.rbuf + (i % 8) * SZ, SZ, x.rbuf_key};
		struct gdak_dev_cqe c;
		uint64_t t, old = 0;

		for (int j = 0; j < 100; j++)
			inl[j] = (uint8_t)(i + j);
		rc = gdak_dev_recv_post(x.peer, &rv, 1);
		if (!rc)
			rc = gdak_dev_put(x.qp, &s, x.dst + i * SZ, x.dst_key, 0, &t);
		if (!rc)
			rc = gdak_dev_put_inline(x.qp, inl, 100, x.dst + ROUNDS * SZ + i * 128,
						 x.dst_key, 0, &t);
		if (!rc)
			rc = gdak_dev_get(x.qp, &b, x.dst + i * SZ, x.dst_key, GDAK_DEV_WQE_FENCE,
					  &t);
		if (!rc)
			rc = gdak_dev_send(x.qp, &s, 0, &t);
		if (!rc)
			rc = gdak_dev_fetch_add_timeout(x.qp, x.word, x.word_key, i, (uint64_t *)x.res,
							x.res_key, &old, CU_WAIT_NS, NULL);
		if (!rc)
			rc = gdak_dev_recv_wait_timeout(x.peer, &c, CU_WAIT_NS);
		if (!rc && (c.byte_cnt != SZ || old != (uint64_t)i * (i - 1) / 2))
			bad++;
		/* the get completed before the fetch-add did (in order): compare */
		for (int j = 0; j < SZ / 8 && !rc; j++)
			if (((volatile uint64_t *)(x.back + i * SZ))[j] !=
			    ((const uint64_t *)(x.src + (i % 32) * SZ))[j])
				bad++;
	}
	r = gdak_dev_quiet_timeout(x.qp, CU_WAIT_NS, NULL);
	out[0] = rc ? rc : r;
	out[1] = bad;
	out[2] = (int)i;
}

static void test_handler(struct gdak_ctx *ctx, enum gdak_dev_db_handler h, const char *name)
{
	struct gdak_qp_attr at = cu_attr(h, GDAK_DEV_EXCLUSIVE, 16, 8);
	static uint8_t pat[32 * SZ], got[ROUNDS * 128];
	struct cu_pair p;
	struct cu_buf src, dst, back, word, res, rbuf;
	int *out = cu_results<int>(ctx, 4);
	struct gdak_nic_stats ns;
	uint64_t w;
	cudaStream_t st = cu_stream();

	printf("# handler %s\n", name);
	cu_pair_make(ctx, &at, &p);
	cu_buf_make(ctx, sizeof(pat), GDAK_MEM_GPU, &src);
	cu_buf_make(ctx, 2 * ROUNDS * SZ, GDAK_MEM_GPU, &dst);
	cu_buf_make(ctx, ROUNDS * SZ, GDAK_MEM_GPU, &back);
	cu_buf_make(ctx, 64, GDAK_MEM_GPU, &word);
	cu_buf_make(ctx, 64, GDAK_MEM_GPU, &res);
	cu_buf_make(ctx, 8 * SZ, GDAK_MEM_GPU, &rbuf);
	gdak_test_fill(pat, sizeof(pat), 77 + h);
	cu_write(&src, 0, pat, sizeof(pat));
	struct hd_args x = {p.a, p.b, cu_addr(&src, 0), cu_addr(&dst, 0), cu_addr(&back, 0),
			    cu_addr(&word, 0), cu_addr(&res, 0), cu_addr(&rbuf, 0), src.key,
			    dst.key, back.key, word.key, res.key, rbuf.key};
	k_rounds<<<1, 1, 0, st>>>(x, out);
	cu_wait(st, name);
	CHECK_EQ(out[0], 0);
	CHECK_EQ(out[1], 0);
	CHECK_EQ(out[2], ROUNDS);
	for (int i = 0; i < ROUNDS; i++) {
		cu_read(got, &dst, (size_t)i * SZ, SZ);
		CHECK_MEM(got, pat + (i % 32) * SZ, SZ);
	}
	cu_read(got, &dst, ROUNDS * SZ, ROUNDS * 128);
	for (int i = 0; i < ROUNDS; i++)
		for (int j = 0; j < 100; j++)
			if (got[i * 128 + j] != (uint8_t)(i + j)) {
				gdak_test_fail(__FILE__, __LINE__, "%s: inline round %d byte %d", name,
					       i, j);
				i = ROUNDS;
				break;
			}
	cu_read(&w, &word, 0, 8);
	CHECK_EQ(w, (uint64_t)ROUNDS * (ROUNDS - 1) / 2);
	CHECK_EQ(gdak_nic_qp_stats(p.qa, &ns), 0);
	CHECK(ns.doorbells > 0);
	CHECK_EQ(ns.errors, 0);
	CHECK_EQ(ns.violations, 0);
	printf("#   %s: %llu WQEs, %llu doorbells, %llu CQEs\n", name,
	       (unsigned long long)ns.wqes, (unsigned long long)ns.doorbells,
	       (unsigned long long)ns.cqes);
	cudaStreamDestroy(st);
	cu_pair_destroy(&p);
	cu_bufs_free(ctx, {&src, &dst, &back, &word, &res, &rbuf});
	gdak_mem_free(ctx, out);
}

static void run(struct gdak_ctx *ctx)
{
	test_handler(ctx, GDAK_DEV_DB_DB, "DB");
	test_handler(ctx, GDAK_DEV_DB_BF, "BF");
	test_handler(ctx, GDAK_DEV_DB_CPU_PROXY, "CPU_PROXY");
}

int main(void)
{
	return cu_main(run);
}

/* SPDX-License-Identifier: MIT */
/*
 * cuda_ctas.cu - many CTAs, each with its own QP, on a NIC model with 4 NIC
 * threads; and two kernels talking to each other over two QPs.
 *
 *   many CTAs   64 CTAs x 1 thread, QP i served by NIC thread i % 4: each
 *               puts its own region (GPU -> GPU) in 16 pieces, puts a value
 *               into mapped host memory, and fetch-adds a counter in GPU
 *               memory that all of them share (the GPU-memory atomic is
 *               a locked read-modify-write: atomic across NIC threads)
 *   two kernels kernel A put+signals message i to B (QP pair 1) and waits
 *               for its signal word; kernel B waits for message i, echoes
 *               it back with put+signal on QP pair 2.  Both run at once on
 *               two streams; A checks every echo, the host checks all bytes.
 */
#include "cuda_util.h"

#define NCTA 64
#define PIECES 16
#define PIECE 256
#define REGION (PIECES * PIECE)

struct mc_args {
	struct gdak_dev_qp **qps;
	uint64_t src, dst, hdst, word, res;
	uint32_t src_key, dst_key, hdst_key, word_key, res_key;
};

__global__ void k_many(struct mc_args x, int *rc)
{
	unsigned c = blockIdx.x;
	struct gdak_dev_qp *qp = x.qps[c];
	uint64_t t = 0, old = 0;
	int r = 0;

	for (unsigned i = 0; i < PIECES && !r; i++) {
		struct gdak_dev_sge s = {x.src + c * REGION + i * PIECE, PIECE, x.src_key};
		r = gdak_dev_put(qp, &s, x.dst + c * REGION + i * PIECE, x.dst_key, 0, &t);
	}
	if (!r)
		r = gdak_dev_put_value(qp, 0xc0de0000ull + c, 8, x.hdst + c * 8, x.hdst_key, 0, &t);
	if (!r)
		r = gdak_dev_fetch_add_timeout(qp, x.word, x.word_key, 1, (uint64_t *)(x.res + c * 8),
					       x.res_key, &old, CU_WAIT_NS, NULL);
	if (!r)
		r = gdak_dev_quiet_timeout(qp, CU_WAIT_NS, NULL);
	rc[c] = r;
}

static void test_many(struct gdak_ctx *ctx)
{
	struct gdak_qp_attr at = cu_attr(GDAK_DEV_DB_DB, GDAK_DEV_EXCLUSIVE, 8, 0);
	static uint8_t pat[NCTA * REGION], got[NCTA * REGION];
	struct cu_pair p[NCTA];
	struct gdak_dev_qp **qps = cu_results<struct gdak_dev_qp *>(ctx, NCTA);
	int *rc = cu_results<int>(ctx, NCTA);
	struct cu_buf src, dst, hdst, word, res;
	uint64_t w, fetched[NCTA];
	uint8_t seen[NCTA] = {0};
	cudaStream_t st = cu_stream();

	for (int i = 0; i < NCTA; i++) {
		at.nic_thread = i % 4;
		cu_pair_make(ctx, &at, &p[i]);
		qps[i] = p[i].a;
	}
	cu_buf_make(ctx, sizeof(pat), GDAK_MEM_GPU, &src);
	cu_buf_make(ctx, sizeof(pat), GDAK_MEM_GPU, &dst);
	cu_buf_make(ctx, NCTA * 8, GDAK_MEM_HOST_MAPPED, &hdst);
	cu_buf_make(ctx, 64, GDAK_MEM_GPU, &word);
	cu_buf_make(ctx, NCTA * 8, GDAK_MEM_GPU, &res);
	gdak_test_fill(pat, sizeof(pat), 99);
	cu_write(&src, 0, pat, sizeof(pat));

	struct mc_args x = {qps, cu_addr(&src, 0), cu_addr(&dst, 0), cu_addr(&hdst, 0),
			    cu_addr(&word, 0), cu_addr(&res, 0), src.key, dst.key, hdst.key,
			    word.key, res.key};
	k_many<<<NCTA, 1, 0, st>>>(x, rc);
	cu_wait(st, "k_many");
	for (int i = 0; i < NCTA; i++) {
		CHECK_EQ(rc[i], 0);
		CHECK_EQ(((uint64_t *)hdst.p)[i], 0xc0de0000ull + i);
	}
	cu_read(got, &dst, 0, sizeof(got));
	CHECK_MEM(got, pat, sizeof(got));
	cu_read(&w, &word, 0, 8);
	CHECK_EQ(w, NCTA);
	cu_read(fetched, &res, 0, sizeof(fetched));
	for (int i = 0; i < NCTA; i++) {
		uint64_t v = gdak_be64toh(fetched[i]);
		CHECK(v < NCTA && !seen[v]);
		if (v < NCTA)
			seen[v] = 1;
	}
	cudaStreamDestroy(st);
	for (int i = 0; i < NCTA; i++)
		cu_pair_destroy(&p[i]);
	cu_bufs_free(ctx, {&src, &dst, &hdst, &word, &res});
	gdak_mem_free(ctx, qps);
	gdak_mem_free(ctx, rc);
}

/* ---- two kernels ------------------------------------------------------------ */

#define MSGS 64
#define MSG 512

struct pp_side {
	struct gdak_dev_qp *qp;	/* posts towards the other side */
	uint64_t out, in;	/* own send buffer, own receive buffer (MSGS * MSG) */
	uint64_t peer_in;	/* the other side's receive buffer */
	uint64_t sig;		/* own signal word */
	uint64_t peer_sig;
	uint32_t out_key, peer_in_key, peer_sig_key;
};

/* A: send message i, wait for its echo, check the echo's first word. */
__global__ void k_ping(struct pp_side a, int *out)
{
	int rc = 0, bad = 0;

	for (unsigned i = 0; i < MSGS && !rc; i++) {
		struct gdak_dev_sge s = {a.out + i * MSG, MSG, a.out_key};
		uint64_t t;
		rc = gdak_dev_put_signal(a.qp, &s, a.peer_in + i * MSG, a.peer_in_key, a.peer_sig,
					 a.peer_sig_key, 1, 0, &t);
		if (!rc)
			rc = gdak_dev_signal_wait_timeout((const uint64_t *)a.sig, GDAK_DEV_CMP_GE,
							  i + 1, CU_WAIT_NS, NULL);
		if (!rc && *(volatile uint64_t *)(a.in + i * MSG) !=
			   *(const uint64_t *)(a.out + i * MSG))
			bad++;
	}
	if (!rc)
		rc = gdak_dev_quiet_timeout(a.qp, CU_WAIT_NS, NULL);
	out[0] = rc;
	out[1] = bad;
}

/* B: wait for message i, echo it from where it landed. */
__global__ void k_pong(struct pp_side b, int *out)
{
	int rc = 0;

	for (unsigned i = 0; i < MSGS && !rc; i++) {
		struct gdak_dev_sge s = {b.in + i * MSG, MSG, b.out_key};
		uint64_t t;
		rc = gdak_dev_signal_wait_timeout((const uint64_t *)b.sig, GDAK_DEV_CMP_GE, i + 1,
						  CU_WAIT_NS, NULL);
		if (!rc)
			rc = gdak_dev_put_signal(b.qp, &s, b.peer_in + i * MSG, b.peer_in_key,
						 b.peer_sig, b.peer_sig_key, 1, 0, &t);
	}
	if (!rc)
		rc = gdak_dev_quiet_timeout(b.qp, CU_WAIT_NS, NULL);
	out[2] = rc;
}

static void test_two_kernels(struct gdak_ctx *ctx, enum gdak_dev_db_handler h)
{
	struct gdak_qp_attr at = cu_attr(h, GDAK_DEV_EXCLUSIVE, 32, 0);
	static uint8_t pat[MSGS * MSG], got[MSGS * MSG];
	struct cu_pair p1, p2;
	struct cu_buf abuf, bbuf, sigs, scratch;
	int *res = cu_results<int>(ctx, 4);
	cudaStream_t sa = cu_stream(), sb = cu_stream();
	uint64_t v[2];

	at.nic_thread = 0;
	cu_pair_make(ctx, &at, &p1);	/* p1.a: A's QP, p1.b its target */
	at.nic_thread = 1;
	cu_pair_make(ctx, &at, &p2);	/* p2.a: B's QP */
	/* each side: [0, MSGS*MSG) outgoing, [MSGS*MSG, 2*MSGS*MSG) incoming */
	cu_buf_make(ctx, 2 * sizeof(pat), GDAK_MEM_GPU, &abuf);
	cu_buf_make(ctx, 2 * sizeof(pat), GDAK_MEM_GPU, &bbuf);
	cu_buf_make(ctx, 64, GDAK_MEM_GPU, &sigs);	/* [0]: A's word, [8]: B's */
	cu_buf_make(ctx, 64, GDAK_MEM_GPU, &scratch);
	gdak_test_fill(pat, sizeof(pat), 1234);
	cu_write(&abuf, 0, pat, sizeof(pat));
	p1.a->scratch_addr = cu_addr(&scratch, 0);
	p1.a->scratch_lkey = scratch.key;
	p2.a->scratch_addr = cu_addr(&scratch, 8);
	p2.a->scratch_lkey = scratch.key;

	struct pp_side a = {p1.a, cu_addr(&abuf, 0), cu_addr(&abuf, sizeof(pat)),
			    cu_addr(&bbuf, sizeof(pat)), cu_addr(&sigs, 0), cu_addr(&sigs, 8),
			    abuf.key, bbuf.key, sigs.key};
	struct pp_side b = {p2.a, 0, cu_addr(&bbuf, sizeof(pat)), cu_addr(&abuf, sizeof(pat)),
			    cu_addr(&sigs, 8), cu_addr(&sigs, 0), bbuf.key, abuf.key, sigs.key};
	res[0] = res[1] = res[2] = -1;
	k_pong<<<1, 1, 0, sb>>>(b, res);
	k_ping<<<1, 1, 0, sa>>>(a, res);
	cu_wait(sa, "k_ping");
	cu_wait(sb, "k_pong");
	CHECK_EQ(res[0], 0);
	CHECK_EQ(res[1], 0);
	CHECK_EQ(res[2], 0);
	cu_read(got, &bbuf, sizeof(pat), sizeof(pat));
	CHECK_MEM(got, pat, sizeof(pat));
	cu_read(got, &abuf, sizeof(pat), sizeof(pat));
	CHECK_MEM(got, pat, sizeof(pat));
	cu_read(v, &sigs, 0, 16);
	CHECK_EQ(v[0], MSGS);
	CHECK_EQ(v[1], MSGS);
	cudaStreamDestroy(sa);
	cudaStreamDestroy(sb);
	cu_pair_destroy(&p1);
	cu_pair_destroy(&p2);
	cu_bufs_free(ctx, {&abuf, &bbuf, &sigs, &scratch});
	gdak_mem_free(ctx, res);
}

static void run(struct gdak_ctx *ctx)
{
	test_many(ctx);
	test_two_kernels(ctx, GDAK_DEV_DB_DB);
	test_two_kernels(ctx, GDAK_DEV_DB_CPU_PROXY);
}

int main(void)
{
	GDAK_REQUIRE(gdak_nic_set_threads(4));
	return cu_main(run);
}

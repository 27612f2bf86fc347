/* SPDX-License-Identifier: MIT */
/*
 * cuda_ops.cu - one CUDA thread drives every operation of the device API
 * against the NIC model, exclusive QPs, data in GPU memory (and some in
 * mapped host memory).
 *
 *   high level: put, put_inline, put_value, get, fetch_add, compare_swap,
 *               put+signal then signal wait, send / send_imm / send_inline
 *               with recv_post / recv_wait on the peer, wait(ticket), quiet
 *   low level:  reserve, every WQE builder (NOP, WRITE, WRITE_IMM, WRITE
 *               inline, SEND, SEND_IMM inline, READ, FA, CS, masked CS, masked
 *               FA), submit, poll one CQE, update the CQ record, poll up to
 *               an index, receive WQEs by hand
 *
 * The kernel records return codes, fetched values and CQE fields; the host
 * checks them and every byte that moved (copied back from the GPU).
 */
#include "cuda_util.h"

#define BUF (64 * 1024)

/* ---- high level --------------------------------------------------------- */

struct hl_args {
	struct gdak_dev_qp *a, *b;
	uint64_t src, dst, dst2, hdst, word, sig, res, rbuf; /* addresses */
	uint32_t src_key, dst_key, dst2_key, hdst_key, word_key, res_key, rbuf_key;
};

struct hl_out {
	int rc[32];
	uint64_t v[16];
	struct gdak_dev_cqe cqe[4];
};

__global__ void k_high(struct hl_args x, struct hl_out *o)
{
	struct gdak_dev_qp *qp = x.a;
	struct gdak_dev_sge s;
	uint8_t inl[100];
	uint64_t t = 0, old = 0;
	int k = 0;

	for (int i = 0; i < 100; i++)
		inl[i] = (uint8_t)(0xa0 + i);
	/* put 4 KiB GPU -> GPU */
	s = {x.src, 4096, x.src_key};
	o->rc[k++] = gdak_dev_put(qp, &s, x.dst, x.dst_key, 0, &t);
	o->rc[k++] = gdak_dev_wait_timeout(qp, t, CU_WAIT_NS, &o->cqe[0]);
	/* inline 100 bytes, and an 8-byte value into mapped host memory */
	o->rc[k++] = gdak_dev_put_inline(qp, inl, 100, x.dst + 8192, x.dst_key, 0, &t);
	o->rc[k++] = gdak_dev_put_value(qp, 0x1122334455667788ull, 8, x.hdst, x.hdst_key, 0, &t);
	o->rc[k++] = gdak_dev_put_value(qp, 0xbeef, 2, x.hdst + 8, x.hdst_key, 0, &t);
	o->rc[k++] = gdak_dev_wait_timeout(qp, t, CU_WAIT_NS, &o->cqe[0]);
	/* get back what the first put wrote, into a second GPU buffer */
	s = {x.dst2, 4096, x.dst2_key};
	o->rc[k++] = gdak_dev_get(qp, &s, x.dst, x.dst_key, 0, &t);
	o->rc[k++] = gdak_dev_wait_timeout(qp, t, CU_WAIT_NS, &o->cqe[0]);
	/* atomics on a GPU word (host set it to 100) */
	o->rc[k++] = gdak_dev_fetch_add_timeout(qp, x.word, x.word_key, 5, (uint64_t *)x.res,
						x.res_key, &old, CU_WAIT_NS, NULL);
	o->v[0] = old;
	o->rc[k++] = gdak_dev_fetch_add(qp, x.word, x.word_key, 5, (uint64_t *)x.res, x.res_key,
					&old);
	o->v[1] = old;
	o->rc[k++] = gdak_dev_compare_swap(qp, x.word, x.word_key, 110, 7, (uint64_t *)x.res,
					   x.res_key, &old);
	o->v[2] = old;
	o->rc[k++] = gdak_dev_compare_swap_timeout(qp, x.word, x.word_key, 999, 1,
						   (uint64_t *)x.res, x.res_key, &old, CU_WAIT_NS,
						   NULL);
	o->v[3] = old;
	/* non-blocking fetch-add, then quiet */
	o->rc[k++] = gdak_dev_fetch_add_nbi(qp, x.word, x.word_key, 1000, (uint64_t *)x.res,
					    x.res_key, 0, &t);
	o->rc[k++] = gdak_dev_quiet_timeout(qp, CU_WAIT_NS, NULL);
	o->v[4] = gdak_dev_amo_result((const uint64_t *)x.res);
	/* put+signal: data, then +1 on the signal word; the waiter sees both */
	s = {x.src + 4096, 4096, x.src_key};
	o->rc[k++] = gdak_dev_put_signal(qp, &s, x.dst + 16384, x.dst_key, x.sig, x.word_key, 1, 0,
					 &t);
	o->rc[k++] = gdak_dev_signal_wait_timeout((const uint64_t *)x.sig, GDAK_DEV_CMP_GE, 1,
						  CU_WAIT_NS, &o->v[5]);
	o->v[6] = *(volatile uint64_t *)(x.dst + 16384); /* first 8 bytes of the data */
	o->rc[k++] = gdak_dev_wait(qp, t, NULL);

	/* two-sided: the peer posts receives, we send three ways */
	s = {x.rbuf, 256, x.rbuf_key};
	o->rc[k++] = gdak_dev_recv_post(x.b, &s, 1);
	s = {x.rbuf + 256, 256, x.rbuf_key};
	o->rc[k++] = gdak_dev_recv_post(x.b, &s, 1);
	s = {x.rbuf + 512, 256, x.rbuf_key};
	o->rc[k++] = gdak_dev_recv_post(x.b, &s, 1);
	s = {x.src + 8192, 200, x.src_key};
	o->rc[k++] = gdak_dev_send(qp, &s, 0, &t);
	o->rc[k++] = gdak_dev_send_imm(qp, &s, 0xcafe0001u, 0, &t);
	o->rc[k++] = gdak_dev_send_inline(qp, inl, 60, 0, &t);
	o->rc[k++] = gdak_dev_recv_wait_timeout(x.b, &o->cqe[1], CU_WAIT_NS);
	o->rc[k++] = gdak_dev_recv_wait_timeout(x.b, &o->cqe[2], CU_WAIT_NS);
	o->rc[k++] = gdak_dev_recv_wait_timeout(x.b, &o->cqe[3], CU_WAIT_NS);
	o->rc[k++] = gdak_dev_quiet(qp, NULL);
	o->v[15] = (uint64_t)k;
}

static void test_high(struct gdak_ctx *ctx)
{
	struct gdak_qp_attr at = cu_attr(GDAK_DEV_DB_DB, GDAK_DEV_EXCLUSIVE, 64, 16);
	struct cu_pair p;
	struct cu_buf src, dst, dst2, hdst, word, res, rbuf, scratch;
	static uint8_t pat[BUF], got[BUF];
	struct hl_out *o = cu_results<struct hl_out>(ctx, 1);
	uint64_t init = 100, v;
	cudaStream_t st = cu_stream();

	cu_pair_make(ctx, &at, &p);
	cu_buf_make(ctx, BUF, GDAK_MEM_GPU, &src);
	cu_buf_make(ctx, BUF, GDAK_MEM_GPU, &dst);
	cu_buf_make(ctx, BUF, GDAK_MEM_GPU, &dst2);
	cu_buf_make(ctx, 4096, GDAK_MEM_HOST_MAPPED, &hdst);
	cu_buf_make(ctx, 64, GDAK_MEM_GPU, &word);
	cu_buf_make(ctx, 64, GDAK_MEM_GPU, &res);
	cu_buf_make(ctx, 1024, GDAK_MEM_GPU, &rbuf);
	cu_buf_make(ctx, 64, GDAK_MEM_GPU, &scratch);
	gdak_test_fill(pat, BUF, 7);
	cu_write(&src, 0, pat, BUF);
	cu_write(&word, 0, &init, 8);
	/* put+signal's discarded fetch lands in the QP's scratch word */
	p.a->scratch_addr = cu_addr(&scratch, 0);
	p.a->scratch_lkey = scratch.key;

	struct hl_args x = {p.a, p.b, cu_addr(&src, 0), cu_addr(&dst, 0), cu_addr(&dst2, 0),
			    cu_addr(&hdst, 0), cu_addr(&word, 0), cu_addr(&word, 8),
			    cu_addr(&res, 0), cu_addr(&rbuf, 0), src.key, dst.key, dst2.key,
			    hdst.key, word.key, res.key, rbuf.key};
	k_high<<<1, 1, 0, st>>>(x, o);
	cu_wait(st, "k_high");

	for (int i = 0; i < (int)o->v[15]; i++)
		if (o->rc[i])
			gdak_test_fail(__FILE__, __LINE__, "k_high call #%d returned %d", i, o->rc[i]);
	CHECK_EQ(o->v[15], 27);
	cu_read(got, &dst, 0, 4096);
	CHECK_MEM(got, pat, 4096);
	cu_read(got, &dst, 8192, 100);
	for (int i = 0; i < 100; i++)
		CHECK_EQ(got[i], (uint8_t)(0xa0 + i));
	CHECK_EQ(*(uint64_t *)hdst.p, 0x1122334455667788ull);
	CHECK_EQ(*(uint16_t *)(hdst.p + 8), 0xbeef);
	CHECK_EQ(hdst.p[10], 0); /* a 2-byte put wrote 2 bytes */
	cu_read(got, &dst2, 0, 4096);
	CHECK_MEM(got, pat, 4096);
	CHECK_EQ(o->v[0], 100);
	CHECK_EQ(o->v[1], 105);
	CHECK_EQ(o->v[2], 110);
	CHECK_EQ(o->v[3], 7);	/* compare failed: old value, no swap */
	CHECK_EQ(o->v[4], 7);	/* nbi fetch-add fetched 7, word now 1007 */
	cu_read(&v, &word, 0, 8);
	CHECK_EQ(v, 1007);
	CHECK_EQ(o->v[5], 1);	/* signal seen */
	CHECK_EQ(o->v[6], *(uint64_t *)(pat + 4096)); /* with its data */
	cu_read(&v, &word, 8, 8);
	CHECK_EQ(v, 1);
	cu_read(got, &dst, 16384, 4096);
	CHECK_MEM(got, pat + 4096, 4096);
	/* receives: in order, byte counts, immediate, data */
	CHECK_EQ(o->cqe[1].opcode, MLX5_CQE_RESP_SEND);
	CHECK_EQ(o->cqe[1].byte_cnt, 200);
	CHECK_EQ(o->cqe[1].wqe_index, 0);
	CHECK_EQ(o->cqe[2].opcode, MLX5_CQE_RESP_SEND_IMM);
	CHECK_EQ(o->cqe[2].imm, 0xcafe0001u);
	CHECK_EQ(o->cqe[2].wqe_index, 1);
	CHECK_EQ(o->cqe[3].opcode, MLX5_CQE_RESP_SEND);
	CHECK_EQ(o->cqe[3].byte_cnt, 60);
	cu_read(got, &rbuf, 0, 768);
	CHECK_MEM(got, pat + 8192, 200);
	CHECK_MEM(got + 256, pat + 8192, 200);
	for (int i = 0; i < 60; i++)
		CHECK_EQ(got[512 + i], (uint8_t)(0xa0 + i));
	CHECK_EQ(gdak_qp_state(p.qa), GDAK_QPS_RTS);

	cudaStreamDestroy(st);
	cu_pair_destroy(&p);
	cu_bufs_free(ctx, {&src, &dst, &dst2, &hdst, &word, &res, &rbuf, &scratch});
	gdak_mem_free(ctx, o);
}

/* ---- low level ------------------------------------------------------------- */

struct ll_out {
	int n;
	uint32_t bbs[16];
	struct gdak_dev_cqe cqe[16];
	int rc[16];
	struct gdak_dev_cqe rcqe;
	int rrc;
	uint32_t refused;
	uint64_t idx[16];
};

/* Post the WQE built at idx (bbs WQEBBs) alone, wait for its CQE by hand. */
__device__ int ll_post_poll(struct gdak_dev_qp *qp, uint64_t idx, uint32_t bbs,
			    struct gdak_dev_cqe *c)
{
	uint64_t t0 = gdak_dev_now_ns();
	int r;

	gdak_dev_sq_reserve(qp, bbs);
	gdak_dev_sq_submit(qp, idx, idx + bbs);
	while ((r = gdak_dev_cq_poll_one(&qp->scq, qp->sq_done, c)) == 0) {
		if (gdak_dev_now_ns() - t0 > CU_WAIT_NS)
			return -ETIMEDOUT;
	}
	gdak_dev_cq_update_dbrec(&qp->scq);
	qp->sq_done = c->wqe_index + bbs;
	return r;
}

struct ll_args {
	struct gdak_dev_qp *a, *b;
	uint64_t src, dst, word, res, rbuf;
	uint32_t src_key, dst_key, word_key, res_key, rbuf_key;
};

__global__ void k_low(struct ll_args x, struct ll_out *o)
{
	struct gdak_dev_qp *qp = x.a;
	struct gdak_dev_sge s = {x.src, 512, x.src_key};
	struct gdak_dev_sge r = {x.rbuf, 512, x.rbuf_key};
	uint8_t inl[40];
	uint64_t i;
	int n = 0;

	for (int j = 0; j < 40; j++)
		inl[j] = (uint8_t)(0x40 + j);
	/* two receive WQEs on the peer, by hand */
	gdak_dev_rwqe_set(x.b, 0, &r, 1);
	r.addr += 512;
	gdak_dev_rwqe_set(x.b, 1, &r, 1);
	gdak_dev_rq_update_dbrec(x.b, 2);
	x.b->rq_pi = 2;

#define LL(build)                                                                          \
	do {                                                                               \
		i = qp->sq_resv;                                                           \
		o->idx[n] = i;                                                             \
		o->bbs[n] = (build);                                                       \
		o->rc[n] = ll_post_poll(qp, i, o->bbs[n], &o->cqe[n]);                     \
		n++;                                                                       \
	} while (0)
	LL(gdak_dev_wqe_nop(qp, i, GDAK_DEV_WQE_SIGNAL));
	LL(gdak_dev_wqe_write(qp, i, GDAK_DEV_WQE_SIGNAL, x.dst, x.dst_key, &s, 1));
	LL(gdak_dev_wqe_write_inline(qp, i, GDAK_DEV_WQE_SIGNAL, x.dst + 1024, x.dst_key, inl, 40));
	LL(gdak_dev_wqe_write_imm(qp, i, GDAK_DEV_WQE_SIGNAL, x.dst + 2048, x.dst_key, &s, 1,
				  0x12345678u));
	LL(gdak_dev_wqe_send_imm_inline(qp, i, GDAK_DEV_WQE_SIGNAL, inl, 40, 0x9abcdef0u));
	/* a READ with no SGE cannot be encoded: the builder refuses it (0) */
	o->refused = gdak_dev_wqe_read(qp, qp->sq_resv, GDAK_DEV_WQE_SIGNAL, x.dst, x.dst_key, &r,
				       0);
	s.addr = x.src + 4096;
	LL(gdak_dev_wqe_read(qp, i, GDAK_DEV_WQE_SIGNAL, x.dst, x.dst_key, &s, 1));
	LL(gdak_dev_wqe_fetch_add(qp, i, GDAK_DEV_WQE_SIGNAL, x.word, x.word_key, 3, x.res,
				  x.res_key));
	LL(gdak_dev_wqe_cas(qp, i, GDAK_DEV_WQE_SIGNAL, x.word, x.word_key, 0x100000003ull, 42,
			    x.res + 8, x.res_key));
	/* masked CS: low 32 bits must be 42; swap in 0x77 in the high byte only */
	LL(gdak_dev_wqe_masked_cas(qp, i, GDAK_DEV_WQE_SIGNAL, x.word, x.word_key, 42,
				   0xffffffffull, 0x7700000000000000ull, 0xff00000000000000ull,
				   x.res + 16, x.res_key));
	/* masked FA with field boundaries at bit 31 and 63: two 32-bit
	 * counters, the low one's carry must not reach the high one */
	LL(gdak_dev_wqe_masked_fetch_add(qp, i, GDAK_DEV_WQE_SIGNAL, x.word + 8, x.word_key,
					 0x0000000100000001ull, 0x8000000080000000ull, x.res + 24,
					 x.res_key));
	/* an unsignalled WRITE then a signalled NOP: one CQE covers both, and
	 * "poll up to an index" (sq_wait) retires them */
	i = qp->sq_resv;
	s.addr = x.src + 8192;
	gdak_dev_wqe_write(qp, i, 0, x.dst + 8192, x.dst_key, &s, 1);
	gdak_dev_wqe_nop(qp, i + 1, GDAK_DEV_WQE_SIGNAL);
	gdak_dev_sq_reserve(qp, 2);
	gdak_dev_sq_submit(qp, i + 1, i + 2);
	o->rc[n] = gdak_dev_sq_wait_timeout(qp, i + 2, CU_WAIT_NS, &o->cqe[n]);
	o->idx[n] = qp->sq_done;
	n++;
	/* the peer's receive CQEs: WRITE_IMM consumed WQE 0, SEND_IMM WQE 1 */
	o->rrc = gdak_dev_recv_wait_timeout(x.b, &o->rcqe, CU_WAIT_NS);
	o->rc[n] = gdak_dev_recv_wait_timeout(x.b, &o->cqe[n], CU_WAIT_NS);
	n++;
	o->n = n;
}

static void test_low(struct gdak_ctx *ctx)
{
	struct gdak_qp_attr at = cu_attr(GDAK_DEV_DB_DB, GDAK_DEV_EXCLUSIVE, 16, 4);
	struct cu_pair p;
	struct cu_buf src, dst, word, res, rbuf;
	static uint8_t pat[BUF], got[BUF];
	struct ll_out *o = cu_results<struct ll_out>(ctx, 1);
	uint64_t w[2] = {0x100000003ull - 3, 0x00000001ffffffffull}, v[4];
	cudaStream_t st = cu_stream();

	cu_pair_make(ctx, &at, &p);
	cu_buf_make(ctx, BUF, GDAK_MEM_GPU, &src);
	cu_buf_make(ctx, BUF, GDAK_MEM_GPU, &dst);
	cu_buf_make(ctx, 64, GDAK_MEM_GPU, &word);
	cu_buf_make(ctx, 64, GDAK_MEM_GPU, &res);
	cu_buf_make(ctx, 1024, GDAK_MEM_GPU, &rbuf);
	gdak_test_fill(pat, BUF, 11);
	cu_write(&src, 0, pat, BUF);
	cu_write(&word, 0, w, 16);

	struct ll_args x = {p.a, p.b, cu_addr(&src, 0), cu_addr(&dst, 0), cu_addr(&word, 0),
			    cu_addr(&res, 0), cu_addr(&rbuf, 0), src.key, dst.key, word.key,
			    res.key, rbuf.key};
	k_low<<<1, 1, 0, st>>>(x, o);
	cu_wait(st, "k_low");

	REQUIRE_EQ(o->n, 12);
	for (int i = 0; i < 10; i++) {
		CHECK_EQ(o->rc[i], 1);
		CHECK_EQ(o->cqe[i].opcode, MLX5_CQE_REQ);
		CHECK_EQ(o->cqe[i].wqe_counter, (uint16_t)o->idx[i]);
		CHECK_EQ(o->cqe[i].qpn, gdak_qp_num(p.qa));
	}
	/* sizes the builders reported: masked atomics take two WQEBBs */
	CHECK_EQ(o->refused, 0);
	CHECK_EQ(o->bbs[0], 1);
	CHECK_EQ(o->bbs[2], 2);	/* ctrl + raddr + 40 inline bytes = 6 DS */
	CHECK_EQ(o->bbs[8], 2);
	CHECK_EQ(o->bbs[9], 2);
	CHECK_EQ(o->rc[10], 0);
	CHECK_EQ(o->idx[10], o->idx[9] + 2 + 2);
	CHECK_EQ(o->rrc, 0);
	CHECK_EQ(o->rcqe.opcode, MLX5_CQE_RESP_WR_IMM);
	CHECK_EQ(o->rcqe.imm, 0x12345678u);
	CHECK_EQ(o->rcqe.wqe_index, 0);
	CHECK_EQ(o->rc[11], 0);
	CHECK_EQ(o->cqe[11].opcode, MLX5_CQE_RESP_SEND_IMM);
	CHECK_EQ(o->cqe[11].imm, 0x9abcdef0u);
	CHECK_EQ(o->cqe[11].byte_cnt, 40);

	cu_read(got, &dst, 0, 512);
	CHECK_MEM(got, pat, 512);	/* the WRITE */
	cu_read(got, &dst, 1024, 40);
	for (int i = 0; i < 40; i++)
		CHECK_EQ(got[i], (uint8_t)(0x40 + i));
	cu_read(got, &dst, 2048, 512);
	CHECK_MEM(got, pat, 512);
	cu_read(got, &dst, 8192, 512);
	CHECK_MEM(got, pat + 8192, 512);
	/* READ brought dst[0..512) (= pat[0..512)) into src+4096 */
	cu_read(got, &src, 4096, 512);
	CHECK_MEM(got, pat, 512);
	cu_read(got, &rbuf, 512, 40);
	for (int i = 0; i < 40; i++)
		CHECK_EQ(got[i], (uint8_t)(0x40 + i));
	/* atomics: fetched values arrive big-endian, as ConnectX writes them */
	cu_read(v, &res, 0, 32);
	CHECK_EQ(gdak_be64toh(v[0]), 0x100000003ull - 3);	/* FA fetched */
	CHECK_EQ(gdak_be64toh(v[1]), 0x100000003ull);	/* CS fetched, matched */
	CHECK_EQ(gdak_be64toh(v[2]), 42);		/* masked CS fetched */
	CHECK_EQ(gdak_be64toh(v[3]), 0x00000001ffffffffull);
	cu_read(v, &word, 0, 16);
	CHECK_EQ(v[0], 0x770000000000002aull);
	/* field-wise: low field 0xffffffff + 1 wraps to 0 without a carry */
	CHECK_EQ(v[1], 0x0000000200000000ull);

	cudaStreamDestroy(st);
	cu_pair_destroy(&p);
	cu_bufs_free(ctx, {&src, &dst, &word, &res, &rbuf});
	gdak_mem_free(ctx, o);
}

static void run(struct gdak_ctx *ctx)
{
	test_high(ctx);
	test_low(ctx);
}

int main(void)
{
	return cu_main(run);
}

/* SPDX-License-Identifier: MIT */
/*
 * cuda_errors.cu - errors reach the kernel, and no wait hangs.
 *
 *   bad rkey      put with a wrong rkey: the kernel's wait returns -EIO with
 *                 REMOTE_ACCESS_ERR and the WQE's index; later posts fail
 *                 at once; the host sees the QP in ERR with the same syndrome
 *   bad lkey      LOCAL_PROT_ERR
 *   out of range  a put past the end of the remote region: REMOTE_ACCESS_ERR
 *   flush         three WQEs, one doorbell, the middle one bad: REQ, error
 *                 CQE, WR_FLUSH_ERR CQE, polled one by one by the kernel
 *   bounded waits a signal never sent, a receive never coming, a WQE index
 *                 never published: each returns -ETIMEDOUT
 */
#include "cuda_util.h"

struct er_args {
	struct gdak_dev_qp *qp;
	uint64_t src, dst;
	uint32_t src_key, dst_key;
	uint64_t bad_raddr;
	uint32_t bad_rkey, bad_lkey;
};

struct er_out {
	int rc[8];
	struct gdak_dev_cqe c[4];
	uint64_t t[4];
};

/* mode 0: bad rkey, 1: bad lkey, 2: out of range */
__global__ void k_bad(struct er_args x, int mode, struct er_out *o)
{
	struct gdak_dev_sge s = {x.src, 64, mode == 1 ? x.bad_lkey : x.src_key};
	uint64_t t = 0;

	/* one good put first: the failure must name the second WQE */
	struct gdak_dev_sge g = {x.src, 64, x.src_key};
	o->rc[0] = gdak_dev_put(x.qp, &g, x.dst, x.dst_key, GDAK_DEV_WQE_SIGNAL, &t);
	o->rc[1] = gdak_dev_wait_timeout(x.qp, t, CU_WAIT_NS, &o->c[0]);
	o->rc[2] = gdak_dev_put(x.qp, &s, mode == 2 ? x.bad_raddr : x.dst,
				mode == 0 ? x.bad_rkey : x.dst_key, 0, &t);
	o->t[0] = t;
	o->rc[3] = gdak_dev_wait_timeout(x.qp, t, CU_WAIT_NS, &o->c[1]);
	/* sticky: the next post fails fast, quiet reports the same error */
	o->rc[4] = gdak_dev_put(x.qp, &g, x.dst, x.dst_key, 0, &t);
	o->rc[5] = gdak_dev_quiet_timeout(x.qp, CU_WAIT_NS, &o->c[2]);
}

static void test_bad(struct gdak_ctx *ctx, int mode, uint8_t want_synd, const char *what)
{
	struct gdak_qp_attr at = cu_attr(GDAK_DEV_DB_DB, GDAK_DEV_EXCLUSIVE, 16, 0);
	struct cu_pair p;
	struct cu_buf src, dst;
	struct er_out *o = cu_results<struct er_out>(ctx, 1);
	struct gdak_qp_error qe;
	cudaStream_t st = cu_stream();

	printf("# %s\n", what);
	cu_pair_make(ctx, &at, &p);
	cu_buf_make(ctx, 4096, GDAK_MEM_GPU, &src);
	cu_buf_make(ctx, 4096, GDAK_MEM_GPU, &dst);
	struct er_args x = {p.a, cu_addr(&src, 0), cu_addr(&dst, 0), src.key, dst.key,
			    cu_addr(&dst, 4096 - 32), dst.key ^ 0x5a5a00, src.key ^ 0xa5a500};
	k_bad<<<1, 1, 0, st>>>(x, mode, o);
	cu_wait(st, what);
	CHECK_EQ(o->rc[0], 0);
	CHECK_EQ(o->rc[1], 0);
	CHECK_EQ(o->rc[2], 0);
	CHECK_EQ(o->rc[3], -EIO);
	CHECK_EQ(o->c[1].opcode, MLX5_CQE_REQ_ERR);
	CHECK_EQ(o->c[1].syndrome, want_synd);
	CHECK_EQ(o->c[1].wqe_opcode, MLX5_OPCODE_RDMA_WRITE);
	CHECK_EQ(o->c[1].wqe_index, o->t[0] - 1);
	CHECK_EQ(o->c[1].qpn, gdak_qp_num(p.qa));
	CHECK_EQ(o->rc[4], -EIO);
	CHECK_EQ(o->rc[5], -EIO);
	CHECK_EQ(o->c[2].syndrome, want_synd);
	CHECK_EQ(gdak_qp_query_error(p.qa, &qe), 0);
	CHECK_EQ(qe.state, GDAK_QPS_ERR);
	CHECK_EQ(qe.syndrome, want_synd);
	CHECK_EQ(qe.wqe_index, (uint16_t)(o->t[0] - 1));
	printf("#   host sees: %s (rule %s)\n", qe.text, qe.rule);
	/* the NIC wrote nothing for the bad WQE */
	if (mode == 2) {
		uint8_t tail[32], zero[32] = {0};
		cu_read(tail, &dst, 4096 - 32, 32);
		CHECK_MEM(tail, zero, 32);
	}
	cudaStreamDestroy(st);
	cu_pair_destroy(&p);
	cu_bufs_free(ctx, {&src, &dst});
	gdak_mem_free(ctx, o);
}

/* Three signalled WQEs under one doorbell, the middle one bad; poll each. */
__global__ void k_flush(struct er_args x, struct er_out *o)
{
	struct gdak_dev_qp *qp = x.qp;
	struct gdak_dev_sge s = {x.src, 64, x.src_key};
	uint64_t i = gdak_dev_sq_reserve(qp, 3), t0 = gdak_dev_now_ns();
	int n = 0;

	gdak_dev_wqe_write(qp, i, GDAK_DEV_WQE_SIGNAL, x.dst, x.dst_key, &s, 1);
	gdak_dev_wqe_write(qp, i + 1, GDAK_DEV_WQE_SIGNAL, x.dst, x.bad_rkey, &s, 1);
	gdak_dev_wqe_write(qp, i + 2, GDAK_DEV_WQE_SIGNAL, x.dst + 64, x.dst_key, &s, 1);
	gdak_dev_sq_submit(qp, i + 2, i + 3);
	while (n < 3 && gdak_dev_now_ns() - t0 < CU_WAIT_NS) {
		int r = gdak_dev_cq_poll_one(&qp->scq, i, &o->c[n]);
		if (r) {
			o->rc[n] = r;
			n++;
		}
	}
	gdak_dev_cq_update_dbrec(&qp->scq);
	o->rc[3] = n;
}

static void test_flush(struct gdak_ctx *ctx)
{
	struct gdak_qp_attr at = cu_attr(GDAK_DEV_DB_BF, GDAK_DEV_EXCLUSIVE, 16, 0);
	struct cu_pair p;
	struct cu_buf src, dst;
	struct er_out *o = cu_results<struct er_out>(ctx, 1);
	cudaStream_t st = cu_stream();
	uint8_t got[64], zero[64] = {0};

	cu_pair_make(ctx, &at, &p);
	cu_buf_make(ctx, 4096, GDAK_MEM_GPU, &src);
	cu_buf_make(ctx, 4096, GDAK_MEM_GPU, &dst);
	CU_REQUIRE(cudaMemset(src.p, 0x3c, 64));
	struct er_args x = {p.a, cu_addr(&src, 0), cu_addr(&dst, 0), src.key, dst.key, 0,
			    dst.key ^ 0x5a5a00, 0};
	k_flush<<<1, 1, 0, st>>>(x, o);
	cu_wait(st, "k_flush");
	REQUIRE_EQ(o->rc[3], 3);
	CHECK_EQ(o->rc[0], 1);
	CHECK_EQ(o->c[0].opcode, MLX5_CQE_REQ);
	CHECK_EQ(o->c[0].wqe_counter, 0);
	CHECK_EQ(o->rc[1], -EIO);
	CHECK_EQ(o->c[1].opcode, MLX5_CQE_REQ_ERR);
	CHECK_EQ(o->c[1].syndrome, MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR);
	CHECK_EQ(o->c[1].wqe_counter, 1);
	CHECK_EQ(o->rc[2], -EIO);
	CHECK_EQ(o->c[2].syndrome, MLX5_CQE_SYNDROME_WR_FLUSH_ERR);
	CHECK_EQ(o->c[2].wqe_counter, 2);
	cu_read(got, &dst, 0, 64);
	for (int i = 0; i < 64; i++)
		CHECK_EQ(got[i], 0x3c);
	cu_read(got, &dst, 64, 64);
	CHECK_MEM(got, zero, 64);	/* the flushed WRITE did not execute */
	cudaStreamDestroy(st);
	cu_pair_destroy(&p);
	cu_bufs_free(ctx, {&src, &dst});
	gdak_mem_free(ctx, o);
}

/* Bounded waits return. */
__global__ void k_timeouts(struct gdak_dev_qp *qp, struct gdak_dev_qp *rq, uint64_t *sig,
			   struct er_out *o)
{
	uint64_t t0, seen = 0;
	struct gdak_dev_cqe c;

	t0 = gdak_dev_now_ns();
	o->rc[0] = gdak_dev_signal_wait_timeout(sig, GDAK_DEV_CMP_EQ, 5, 20000000ull, &seen);
	o->t[0] = gdak_dev_now_ns() - t0;
	t0 = gdak_dev_now_ns();
	o->rc[1] = gdak_dev_recv_wait_timeout(rq, &c, 20000000ull);
	o->t[1] = gdak_dev_now_ns() - t0;
	/* a slot reserved but never published: nothing will complete it */
	t0 = gdak_dev_now_ns();
	o->rc[2] = gdak_dev_sq_wait_timeout(qp, gdak_dev_sq_reserve(qp, 1) + 1, 20000000ull, &c);
	o->t[2] = gdak_dev_now_ns() - t0;
}

static void test_timeouts(struct gdak_ctx *ctx)
{
	struct gdak_qp_attr at = cu_attr(GDAK_DEV_DB_DB, GDAK_DEV_EXCLUSIVE, 16, 4);
	struct cu_pair p;
	struct cu_buf sig;
	struct er_out *o = cu_results<struct er_out>(ctx, 1);
	cudaStream_t st = cu_stream();

	cu_pair_make(ctx, &at, &p);
	cu_buf_make(ctx, 64, GDAK_MEM_GPU, &sig);
	k_timeouts<<<1, 1, 0, st>>>(p.a, p.b, (uint64_t *)sig.p, o);
	cu_wait(st, "k_timeouts");
	for (int i = 0; i < 3; i++) {
		CHECK_EQ(o->rc[i], -ETIMEDOUT);
		/* at least the timeout, and it did return (bounded, generous) */
		CHECK(o->t[i] >= 20000000ull);
		CHECK(o->t[i] < 5000000000ull);
	}
	cudaStreamDestroy(st);
	cu_pair_destroy(&p);
	cu_buf_free(ctx, &sig);
	gdak_mem_free(ctx, o);
}

static void run(struct gdak_ctx *ctx)
{
	test_bad(ctx, 0, MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR, "bad rkey");
	test_bad(ctx, 1, MLX5_CQE_SYNDROME_LOCAL_PROT_ERR, "bad lkey");
	test_bad(ctx, 2, MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR, "out of range");
	test_flush(ctx);
	test_timeouts(ctx);
}

int main(void)
{
	return cu_main(run);
}

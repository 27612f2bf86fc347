/* SPDX-License-Identifier: MIT */
/*
 * fid_cuda.cu - the fidelity tests' CUDA twin: one GPU thread drives the
 * emulated NIC the way DOCA GPUNetIO / NVSHMEM IBGDA kernels drive a
 * ConnectX, strict checks on, data in GPU memory:
 *   doorbell  ring(next pi, DS 0) - record - ring (DOCA), around the ring
 *   oi        a CQ with overrun-ignore, its record never written
 *   cc        a collapsed CQ, entry 0's wqe_counter polled (NVSHMEM)
 *   nodbr     a QP without doorbell record: the register alone
 *   wait      WAIT on the main QP's CQ, then the counter FA (companion QP)
 *   dump      RDMA_READ, then a fenced DUMP (get with ordering)
 *   atomic32  4-byte extended FA and CAS (opmod 0x08)
 *   reset     the doorbell scenario, both QPs reset and reconnected, again
 *             from index 0 on the same descriptors
 * The kernel writes every WQE field and doorbell value itself (bytes as
 * the stacks write them) and records a code per step; the host checks
 * them, the bytes that moved and the QPs' violation counters (0).
 * Exits 77 without a GPU.
 */
#include "cuda_util.h"

#include <gdak/dev/db.h>

#define NW 48			/* WRITEs per scenario */
#define LEN 64

enum scen { S_DOORBELL, S_OI, S_CC, S_NODBR, S_WAIT, S_DUMP, S_ATOMIC32, S_RESET, S_N };
static const char *const scen_names[] = {"doorbell", "oi", "cc", "nodbr", "wait", "dump",
					 "atomic32", "reset"};

struct job {
	int scen;
	struct gdak_dev_qp *a, *c;	/* main QP, companion QP (wait) */
	uint64_t src, dst, word, res;
	uint32_t src_key, dst_key, word_key, res_key;
};

struct out {
	int rc[4 * NW + 16];
	int n;
	uint32_t v[8];
};

__device__ static void put_ctrl(struct gdak_dev_qp *qp, uint64_t idx, uint8_t opmod, uint8_t opcode,
				uint32_t ds, uint8_t fm_ce_se)
{
	/* opmod | wqe index | opcode, qpn << 8 | ds, signature 0, fm_ce_se, imm 0 */
	uint32_t w0 = gdak_htobe32((uint32_t)opmod << 24 | (uint32_t)(idx & 0xffff) << 8 | opcode);
	uint32_t w1 = gdak_htobe32(qp->qpn << 8 | ds);
	gdak_dev_store_16(gdak_dev_wqe_ptr(qp, idx), (uint64_t)w0 | (uint64_t)w1 << 32,
			  (uint64_t)fm_ce_se << 24);
}
__device__ static void put_raddr(struct gdak_dev_qp *qp, uint64_t idx, uint32_t k, uint64_t raddr,
				 uint32_t rkey)
{
	gdak_dev_store_16(gdak_dev_wqe_ds(qp, idx, k), gdak_htobe64(raddr), gdak_htobe32(rkey));
}
__device__ static void put_data(struct gdak_dev_qp *qp, uint64_t idx, uint32_t k, uint64_t addr,
				uint32_t len, uint32_t lkey)
{
	gdak_dev_store_16(gdak_dev_wqe_ds(qp, idx, k),
			  (uint64_t)gdak_htobe32(len) | (uint64_t)gdak_htobe32(lkey) << 32,
			  gdak_htobe64(addr));
}
__device__ static uint64_t write_wqe(struct gdak_dev_qp *qp, const struct job *j, uint64_t i)
{
	uint64_t idx = qp->sq_resv++;

	put_ctrl(qp, idx, 0, MLX5_OPCODE_RDMA_WRITE, 3, MLX5_WQE_CTRL_CQ_UPDATE);
	put_raddr(qp, idx, 1, j->dst + LEN * i, j->dst_key);
	put_data(qp, idx, 2, j->src + LEN * i, LEN, j->src_key);
	return idx;
}
__device__ static void dbrec(struct gdak_dev_qp *qp, uint64_t pi)
{
	gdak_dev_store_release_u32(&qp->dbrec[MLX5_SND_DBR], gdak_htobe32((uint32_t)pi & 0xffff));
}
__device__ static void ring(struct gdak_dev_qp *qp, uint64_t pi)
{
	gdak_dev_barrier_dbrec_to_ring();
	gdak_dev_mmio_store_u64(qp->db_reg, (uint64_t)gdak_htobe32((uint32_t)(pi & 0xffff) << 8) |
						    (uint64_t)gdak_htobe32(qp->qpn << 8) << 32);
}
__device__ static void submit_doca(struct gdak_dev_qp *qp)
{
	ring(qp, qp->sq_resv);
	dbrec(qp, qp->sq_resv);
	ring(qp, qp->sq_resv);
}
/* poll_cq_at: CQE idx of a normal CQ; 0, or -ETIMEDOUT / the syndrome */
__device__ static int cqe_at(struct gdak_dev_qp *qp, uint64_t idx, uint16_t want_counter)
{
	const uint8_t *c = (const uint8_t *)qp->scq.cqes + 64 * (idx & (qp->scq.ncqe - 1));
	uint64_t dl = gdak_dev_deadline(CU_WAIT_NS);
	uint32_t spins = 0;

	for (;;) {
		uint8_t own = gdak_dev_load_acquire_u8(c + 63);

		if ((own >> 4) != MLX5_CQE_INVALID && (own & 1) == ((idx >> qp->scq.log_ncqe) & 1))
			break;
		if (gdak_dev_expired(dl, spins))
			return -ETIMEDOUT;
		gdak_dev_backoff(&spins);
	}
	if ((c[63] >> 4) != MLX5_CQE_REQ)
		return 1000 + c[55];
	if (gdak_be16toh(*(const uint16_t *)(c + 60)) != want_counter)
		return -EPROTO;
	return 0;
}
/* NVSHMEM's collapsed-CQ poll: entry 0's wqe_counter reaches want */
__device__ static int cc_wait(struct gdak_dev_qp *qp, uint16_t want)
{
	const uint8_t *c = (const uint8_t *)qp->scq.cqes;
	uint64_t dl = gdak_dev_deadline(CU_WAIT_NS);
	uint32_t spins = 0;

	while (gdak_be16toh(gdak_dev_load_acquire_u16((const uint16_t *)(c + 60))) != want ||
	       (gdak_dev_load_acquire_u8(c + 63) >> 4) != MLX5_CQE_REQ) {
		if (gdak_dev_expired(dl, spins))
			return -ETIMEDOUT;
		gdak_dev_backoff(&spins);
	}
	return 0;
}

__global__ void k_run(struct job j, struct out *o)
{
	struct gdak_dev_qp *qp = j.a;
	uint64_t cq = 0;
	int k = 0;

	switch (j.scen) {
	case S_DOORBELL:
	case S_OI:
	case S_NODBR:
		for (uint64_t i = 0; i < NW;) {
			unsigned n = 1 + (unsigned)(i % 5);
			uint64_t first = qp->sq_resv;

			for (unsigned m = 0; m < n && i < NW; m++, i++)
				write_wqe(qp, &j, i);
			if (j.scen == S_NODBR)
				ring(qp, qp->sq_resv); /* submit_db_no_dbr */
			else
				submit_doca(qp);
			for (uint64_t w = first; w < qp->sq_resv; w++, cq++)
				o->rc[k++] = cqe_at(qp, cq, (uint16_t)w);
			if (j.scen == S_DOORBELL)
				gdak_dev_store_release_u32(qp->scq.dbrec,
							   gdak_htobe32((uint32_t)cq & 0xffffff));
		}
		break;
	case S_CC:
		for (uint64_t i = 0; i < NW; i++) {
			uint64_t w = write_wqe(qp, &j, i);

			submit_doca(qp);
			o->rc[k++] = cc_wait(qp, (uint16_t)w);
		}
		break;
	case S_WAIT: {
		struct gdak_dev_qp *c = j.c;
		uint64_t w = c->sq_resv++, f;

		/* companion: WAIT for the main CQ's CQE 1, then counter += 1 */
		put_ctrl(c, w, 0, GDAK_MLX5_OPCODE_WAIT, 2, MLX5_WQE_CTRL_CQ_UPDATE);
		gdak_dev_store_16(gdak_dev_wqe_ds(c, w, 1), 0,
				  (uint64_t)gdak_htobe32(1) | (uint64_t)gdak_htobe32(qp->scq.cqn) << 32);
		f = c->sq_resv++;
		put_ctrl(c, f, 0, MLX5_OPCODE_ATOMIC_FA, 4, MLX5_WQE_CTRL_CQ_UPDATE);
		put_raddr(c, f, 1, j.word, j.word_key);
		gdak_dev_store_16(gdak_dev_wqe_ds(c, f, 2), gdak_htobe64(1), 0);
		put_data(c, f, 3, j.res, 8, j.res_key);
		submit_doca(c);
		/* main: data, then its signal */
		write_wqe(qp, &j, 0);
		f = qp->sq_resv++;
		put_ctrl(qp, f, 0, MLX5_OPCODE_ATOMIC_FA, 4, MLX5_WQE_CTRL_CQ_UPDATE);
		put_raddr(qp, f, 1, j.word + 8, j.word_key);
		gdak_dev_store_16(gdak_dev_wqe_ds(qp, f, 2), gdak_htobe64(7), 0);
		put_data(qp, f, 3, j.res + 8, 8, j.res_key);
		submit_doca(qp);
		o->rc[k++] = cqe_at(qp, 0, 0);
		o->rc[k++] = cqe_at(qp, 1, 1);
		o->rc[k++] = cqe_at(c, 0, (uint16_t)w);
		o->rc[k++] = cqe_at(c, 1, (uint16_t)f);
		break;
	}
	case S_DUMP: {
		uint64_t r = qp->sq_resv++, d;

		put_ctrl(qp, r, 0, MLX5_OPCODE_RDMA_READ, 3, 0);
		put_raddr(qp, r, 1, j.src, j.src_key);
		put_data(qp, r, 2, j.dst, 4096, j.dst_key);
		d = qp->sq_resv++;
		put_ctrl(qp, d, 0, GDAK_MLX5_OPCODE_DUMP, 2, MLX5_WQE_CTRL_CQ_UPDATE | (1 << 5));
		put_data(qp, d, 1, j.dst, 1, j.dst_key);
		dbrec(qp, qp->sq_resv);
		ring(qp, qp->sq_resv);
		o->rc[k++] = cqe_at(qp, 0, (uint16_t)d);
		break;
	}
	case S_ATOMIC32: {
		uint64_t a = qp->sq_resv++, b;

		/* FA 1 on the low word (0xffffffff: wraps, no carry), then CAS */
		put_ctrl(qp, a, GDAK_MLX5_OPMOD_EXT_ATOMIC_4B, MLX5_OPCODE_ATOMIC_MASKED_FA, 4,
			 MLX5_WQE_CTRL_CQ_UPDATE);
		put_raddr(qp, a, 1, j.word, j.word_key);
		gdak_dev_store_16(gdak_dev_wqe_ds(qp, a, 2), gdak_htobe32(1), 0);
		put_data(qp, a, 3, j.res, 4, j.res_key);
		b = qp->sq_resv++;
		put_ctrl(qp, b, GDAK_MLX5_OPMOD_EXT_ATOMIC_4B, MLX5_OPCODE_ATOMIC_MASKED_CS, 4,
			 MLX5_WQE_CTRL_CQ_UPDATE);
		put_raddr(qp, b, 1, j.word + 4, j.word_key);
		gdak_dev_store_16(gdak_dev_wqe_ds(qp, b, 2),
				  (uint64_t)gdak_htobe32(9) | (uint64_t)gdak_htobe32(5) << 32,
				  ~0ull);
		put_data(qp, b, 3, j.res + 8, 4, j.res_key);
		submit_doca(qp);
		o->rc[k++] = cqe_at(qp, 0, (uint16_t)a);
		o->rc[k++] = cqe_at(qp, 1, (uint16_t)b);
		break;
	}
	}
	o->n = k;
}

static uint64_t viol(struct gdak_qp *q)
{
	struct gdak_nic_stats st;

	return gdak_nic_qp_stats(q, &st) ? ~0ull : st.violations;
}

int main(void)
{
	struct gdak_ctx *ctx;
	struct cu_buf src, dst, word, res;
	struct out *o;
	uint8_t *hs = (uint8_t *)malloc(NW * LEN * 2), *hd = (uint8_t *)malloc(NW * LEN * 2);
	cudaStream_t s;

	cu_require_gpu();
	REQUIRE_EQ(gdak_nic_set_strict(1), 0);
	ctx = cu_open();
	s = cu_stream();
	o = cu_results<struct out>(ctx, 1);
	cu_buf_make(ctx, NW * LEN * 2, GDAK_MEM_GPU, &src);
	cu_buf_make(ctx, NW * LEN * 2, GDAK_MEM_GPU, &dst);
	cu_buf_make(ctx, 64, GDAK_MEM_GPU, &word);
	cu_buf_make(ctx, 64, GDAK_MEM_GPU, &res);
	gdak_test_fill(hs, NW * LEN * 2, 3);
	cu_write(&src, 0, hs, NW * LEN * 2);

	for (int sc = 0; sc < S_N; sc++) {
		static const unsigned flags[S_N] = {
			0, GDAK_QP_F_SCQ_OVERRUN_IGNORE, GDAK_QP_F_SCQ_COLLAPSED,
			GDAK_QP_F_SQ_NO_DBREC | GDAK_QP_F_SCQ_OVERRUN_IGNORE,
			GDAK_QP_F_SCQ_OVERRUN_IGNORE, 0, 0, 0};
		struct gdak_qp_attr at = cu_attr(GDAK_DEV_DB_DB, GDAK_DEV_EXCLUSIVE, 16, 0);
		struct cu_pair p, c;
		struct job j;
		uint32_t w32[2] = {0xffffffffu, 5};

		at.flags = flags[sc];
		cu_pair_make(ctx, &at, &p);
		cu_pair_make(ctx, &at, &c);
		CU_REQUIRE(cudaMemset(dst.p, 0, dst.len));
		CU_REQUIRE(cudaMemset(word.p, 0, word.len));
		if (sc == S_ATOMIC32)
			cu_write(&word, 0, w32, 8);
		memset(o, 0, sizeof(*o));
		j.scen = sc;
		j.a = p.a;
		j.c = c.a;
		cu_ref(&src, &j.src, &j.src_key);
		cu_ref(&dst, &j.dst, &j.dst_key);
		cu_ref(&word, &j.word, &j.word_key);
		cu_ref(&res, &j.res, &j.res_key);
		if (sc == S_RESET) {
			struct gdak_qp_info ia, ib;

			j.scen = S_DOORBELL;
			k_run<<<1, 1, 0, s>>>(j, o);
			cu_wait(s, "reset: first life");
			CHECK_EQ(o->n, NW);
			GDAK_REQUIRE(gdak_qp_modify(p.qa, GDAK_QPS_RESET, NULL));
			GDAK_REQUIRE(gdak_qp_modify(p.qb, GDAK_QPS_RESET, NULL));
			CHECK_EQ(p.a->sq_resv, 0);
			GDAK_REQUIRE(gdak_qp_info(p.qa, &ia));
			GDAK_REQUIRE(gdak_qp_info(p.qb, &ib));
			GDAK_REQUIRE(gdak_qp_connect(p.qa, &ib));
			GDAK_REQUIRE(gdak_qp_connect(p.qb, &ia));
			CU_REQUIRE(cudaMemset(dst.p, 0, dst.len));
			memset(o, 0, sizeof(*o));
		}
		k_run<<<1, 1, 0, s>>>(j, o);
		cu_wait(s, scen_names[sc]);
		CHECK(o->n > 0);
		for (int i = 0; i < o->n; i++)
			if (o->rc[i]) {
				gdak_test_fail(__FILE__, __LINE__, "%s: step %d returned %d",
					       scen_names[sc], i, o->rc[i]);
				break;
			}
		/* the DUMP scenario READs 4096 bytes (of the NW * LEN * 2 buffer) */
		cu_read(hd, &dst, 0, sc == S_DUMP ? 4096 : NW * LEN);
		if (sc <= S_NODBR || sc == S_RESET)
			CHECK_MEM(hd, hs, NW * LEN);
		if (sc == S_DUMP)
			CHECK_MEM(hd, hs, 4096);
		if (sc == S_WAIT) {
			uint64_t wv[2];

			cu_read(wv, &word, 0, 16);
			CHECK_EQ(wv[0], 1);
			CHECK_EQ(wv[1], 7);
			CHECK_MEM(hd, hs, LEN);
		}
		if (sc == S_ATOMIC32) {
			uint32_t r[4];
			uint8_t rb[12];

			cu_read(r, &word, 0, 8);
			CHECK_EQ(r[0], 0);
			CHECK_EQ(r[1], 9);
			cu_read(rb, &res, 0, 12);
			CHECK_MEM(rb, ((const uint8_t[4]){0xff, 0xff, 0xff, 0xff}), 4);
			CHECK_MEM(rb + 8, ((const uint8_t[4]){0, 0, 0, 5}), 4);
		}
		CHECK_EQ(viol(p.qa) + viol(c.qa), 0);
		CHECK_EQ(gdak_qp_state(p.qa), GDAK_QPS_RTS);
		cu_pair_destroy(&p);
		cu_pair_destroy(&c);
	}
	cu_buf_free(ctx, &src);
	cu_buf_free(ctx, &dst);
	cu_buf_free(ctx, &word);
	cu_buf_free(ctx, &res);
	gdak_mem_free(ctx, o);
	CU_REQUIRE(cudaStreamDestroy(s));
	gdak_close(ctx);
	free(hs);
	free(hd);
	return gdak_test_end();
}

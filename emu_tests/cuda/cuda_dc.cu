/* SPDX-License-Identifier: MIT */
/*
 * cuda_dc.cu - the twin of nic_dc.c on a GPU: one CUDA thread owns a DCI
 * and reaches three DCTs (two contexts) with full and compact address
 * vectors, data in GPU memory - WRITE, READ, fetch-add, CAS, SEND,
 * put+signal - then a wrong access key fails with TRANSPORT_RETRY_EXC_ERR.
 * The kernel records return codes, fetched values and CQE fields; the host
 * checks them and every byte that moved.  Exits 77 without a GPU.
 *
 * argv[1] names another device than "emu": gdak.hw.emu.devx_dc_cuda runs it
 * through hw_mlx5 on the emulated mlx5 device (the GPU twin of the dc
 * scenario there): two DCTs (that backend makes none with a receive queue,
 * so no SEND), compact AVs only where the DCT has a LID, the wrong key seen
 * from both ends through the host API rather than the NIC model's counters.
 */
#include <gdak/dev/dc.h>
#include <gdak/nic.h>

#include "cuda_util.h"

#define NDCT 3
#define LEN 4096

struct dc_args {
	struct gdak_dev_qp *dci;
	struct gdak_dev_av full[NDCT], compact[NDCT], bad_key;
	uint64_t src, dst, res; /* DCI side (GPU) */
	uint32_t src_key, dst_key, res_key;
	uint64_t tmem[NDCT];	/* each DCT's GPU buffer: [0, LEN) data, +LEN atomic word, +LEN+8 signal */
	uint32_t tkey[NDCT];
	int ndct;
	struct gdak_dev_qp *dct2; /* the DCT with a receive queue, or NULL */
	uint64_t rbuf;
	uint32_t rbuf_key;
};

struct dc_out {
	int rc[64];
	uint64_t v[16];
	struct gdak_dev_cqe cqe;
};

__global__ void k_dc(struct dc_args x, struct dc_out *o)
{
	struct gdak_dev_qp *qp = x.dci;
	struct gdak_dev_sge s;
	uint64_t t = 0, old = 0;
	int k = 0;

	for (int i = 0; i < x.ndct; i++) {
		const struct gdak_dev_av *av = (i & 1) ? &x.compact[i] : &x.full[i];

		s = {x.src + (uint64_t)i * 64, LEN - 256, x.src_key};
		o->rc[k++] = gdak_dev_dc_put(qp, av, &s, x.tmem[i], x.tkey[i], 0, &t);
		s = {x.dst + (uint64_t)i * LEN, LEN - 256, x.dst_key};
		o->rc[k++] = gdak_dev_dc_get(qp, av, &s, x.tmem[i], x.tkey[i], 0, &t);
		o->rc[k++] = gdak_dev_wait_timeout(qp, t, CU_WAIT_NS, &o->cqe);
		o->rc[k++] = gdak_dev_dc_fetch_add(qp, av, x.tmem[i] + LEN, x.tkey[i], 10 + i,
						   (uint64_t *)x.res, x.res_key, &old);
		o->v[2 * i] = old;
		o->rc[k++] = gdak_dev_dc_compare_swap(qp, av, x.tmem[i] + LEN, x.tkey[i], old + 10 + i,
						      0x5500 + i, (uint64_t *)x.res, x.res_key, &old);
		o->v[2 * i + 1] = old;
		s = {x.src, 256, x.src_key};
		o->rc[k++] = gdak_dev_dc_put_signal(qp, av, &s, x.tmem[i] + LEN + 64, x.tkey[i],
						    x.tmem[i] + LEN + 8, x.tkey[i], 1, 0, &t);
		o->rc[k++] = gdak_dev_wait_timeout(qp, t, CU_WAIT_NS, &o->cqe);
	}
	/* SEND to the DCT with a receive queue */
	if (x.dct2) {
		s = {x.rbuf, 256, x.rbuf_key};
		o->rc[62] = gdak_dev_recv_post(x.dct2, &s, 1);
		s = {x.src, 100, x.src_key};
		o->rc[k++] = gdak_dev_dc_send(qp, &x.full[2], &s, GDAK_DEV_WQE_SIGNAL, &t);
		o->rc[k++] = gdak_dev_wait_timeout(qp, t, CU_WAIT_NS, &o->cqe);
	}
	/* last: a wrong key (the DCI goes to ERR) */
	s = {x.src, 64, x.src_key};
	o->rc[k++] = gdak_dev_dc_put(qp, &x.bad_key, &s, x.tmem[0], x.tkey[0], GDAK_DEV_WQE_SIGNAL,
				     &t);
	o->rc[k++] = gdak_dev_wait_timeout(qp, t, CU_WAIT_NS, &o->cqe);
	o->rc[63] = k;
}

int main(int argc, char **argv)
{
	const char *dev = argc > 1 ? argv[1] : "emu";
	int hw = strcmp(dev, "emu") != 0, ndct = hw ? 2 : NDCT, nok;
	struct gdak_ctx *ctx[2];
	struct gdak_qp *dci, *dct[NDCT];
	struct gdak_qp_info info[NDCT];
	struct cu_buf src, dst, res, tm[NDCT], rbuf;
	struct dc_args x;
	struct dc_out *o;
	struct gdak_qp_attr a;
	struct gdak_nic_dc_stats st;
	struct gdak_qp_error qe;
	cudaStream_t s;
	static uint8_t pat[LEN], got[LEN];

	cu_require_gpu();
	if (hw) {
		if (gdak_open(dev, &ctx[0]))
			GDAK_TEST_SKIP("cannot open %s", dev);
		GDAK_REQUIRE(gdak_open(dev, &ctx[1]));
	} else {
		ctx[0] = cu_open();
		ctx[1] = cu_open();
	}
	memset(&x, 0, sizeof(x));
	x.ndct = ndct;
	/* the ConnectX backend takes a DC QP's defaults (no flags, no RQ) */
	if (hw) {
		memset(&a, 0, sizeof(a));
		a.sq_depth = 64;
	} else {
		a = cu_attr(GDAK_DEV_DB_DB, GDAK_DEV_EXCLUSIVE, 64, 0);
	}
	a.type = GDAK_QPT_DCI;
	GDAK_REQUIRE(gdak_qp_create(ctx[0], &a, &dci));
	GDAK_REQUIRE(gdak_qp_connect(dci, NULL));
	GDAK_REQUIRE(gdak_qp_export(dci, &x.dci));
	for (int i = 0; i < ndct; i++) {
		struct gdak_ctx *c = ctx[i == 0 ? 0 : 1];

		if (hw)
			memset(&a, 0, sizeof(a));
		else
			a = cu_attr(GDAK_DEV_DB_DB, GDAK_DEV_EXCLUSIVE, 4, i == 2 ? 4 : 0);
		a.type = GDAK_QPT_DCT;
		a.dc_key = 0xabc0 + (uint64_t)i;
		GDAK_REQUIRE(gdak_qp_create(c, &a, &dct[i]));
		GDAK_REQUIRE(gdak_qp_connect(dct[i], NULL));
		GDAK_REQUIRE(gdak_qp_info(dct[i], &info[i]));
		GDAK_REQUIRE(gdak_dc_av(&info[i], 0, &x.full[i]));
		/* a compact AV carries no GRH: RoCE (no LID) takes the full one */
		GDAK_REQUIRE(gdak_dc_av(&info[i], info[i].lid ? 1 : 0, &x.compact[i]));
		cu_buf_make(c, 2 * LEN, GDAK_MEM_GPU, &tm[i]);
		x.tmem[i] = cu_addr(&tm[i], 0);
		x.tkey[i] = gdak_mr_rkey(tm[i].mr);
	}
	info[0].dc_key ^= 0x10;
	GDAK_REQUIRE(gdak_dc_av(&info[0], 0, &x.bad_key));
	cu_buf_make(ctx[0], LEN, GDAK_MEM_GPU, &src);
	cu_buf_make(ctx[0], NDCT * LEN, GDAK_MEM_GPU, &dst);
	cu_buf_make(ctx[0], 64, GDAK_MEM_GPU, &res);
	if (!hw)
		cu_buf_make(ctx[1], 256, GDAK_MEM_GPU, &rbuf);
	gdak_test_fill(pat, sizeof(pat), 77);
	cu_write(&src, 0, pat, LEN);
	cu_ref(&src, &x.src, &x.src_key);
	cu_ref(&dst, &x.dst, &x.dst_key);
	cu_ref(&res, &x.res, &x.res_key);
	if (!hw) {
		GDAK_REQUIRE(gdak_qp_export(dct[2], &x.dct2));
		cu_ref(&rbuf, &x.rbuf, &x.rbuf_key);
		GDAK_REQUIRE(
			gdak_mem_alloc(ctx[0], sizeof(*o), GDAK_MEM_HOST_MAPPED, (void **)&o));
	} else {
		CU_REQUIRE(cudaHostAlloc((void **)&o, sizeof(*o), cudaHostAllocMapped));
	}
	memset(o, 0, sizeof(*o));

	s = cu_stream();
	k_dc<<<1, 1, 0, s>>>(x, o);
	cu_wait(s, "k_dc");

	/* 7 calls a DCT, 2 for the SEND, then the wrong key's 2 */
	nok = 7 * ndct + (hw ? 0 : 2);
	CHECK_EQ(o->rc[63], nok + 2);
	CHECK_EQ(o->rc[62], 0);
	for (int i = 0; i < nok; i++)
		CHECK_EQ(o->rc[i], 0);
	CHECK_EQ(o->rc[nok], 0);
	CHECK_EQ(o->rc[nok + 1], -EIO);
	CHECK_EQ(o->cqe.opcode, MLX5_CQE_REQ_ERR);
	CHECK_EQ(o->cqe.syndrome, MLX5_CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR);
	for (int i = 0; i < ndct; i++) {
		CHECK_EQ(o->v[2 * i], 0);
		CHECK_EQ(o->v[2 * i + 1], 10u + (unsigned)i);
		cu_read(got, &tm[i], 0, LEN - 256);
		CHECK_MEM(got, pat + 64 * i, LEN - 256);
		cu_read(got, &dst, (size_t)i * LEN, LEN - 256);
		CHECK_MEM(got, pat + 64 * i, LEN - 256);
		cu_read(got, &tm[i], LEN, 16);
		CHECK_EQ(((uint64_t *)(void *)got)[0], 0x5500u + (unsigned)i);
		CHECK_EQ(((uint64_t *)(void *)got)[1], 1);
		cu_read(got, &tm[i], LEN + 64, 256);
		CHECK_MEM(got, pat, 256);
	}
	if (!hw) {
		cu_read(got, &rbuf, 0, 100);
		CHECK_MEM(got, pat, 100);
		CHECK_EQ(gdak_nic_dc_stats(dct[0], &st), 0);
		CHECK_EQ(st.key_violations, 1);
	}
	/* the DCI retried out; the DCT that was shown the wrong key serves on */
	CHECK_EQ(gdak_qp_query_error(dci, &qe), 0);
	CHECK_EQ(qe.state, GDAK_QPS_ERR);
	CHECK_EQ(qe.syndrome, MLX5_CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR);
	CHECK_EQ(gdak_qp_state(dct[0]), GDAK_QPS_RTR);

	cudaStreamDestroy(s);
	CHECK_EQ(gdak_qp_destroy(dci), 0);
	for (int i = 0; i < ndct; i++) {
		CHECK_EQ(gdak_qp_destroy(dct[i]), 0);
		cu_buf_free(ctx[i == 0 ? 0 : 1], &tm[i]);
	}
	cu_buf_free(ctx[0], &src);
	cu_buf_free(ctx[0], &dst);
	cu_buf_free(ctx[0], &res);
	if (hw) {
		cudaFreeHost(o);
	} else {
		cu_buf_free(ctx[1], &rbuf);
		gdak_mem_free(ctx[0], o);
	}
	gdak_close(ctx[1]);
	gdak_close(ctx[0]);
	return gdak_test_end();
}

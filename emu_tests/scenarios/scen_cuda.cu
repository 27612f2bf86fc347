/* SPDX-License-Identifier: MIT */
/*
 * scen_cuda.cu - the scenarios with a GPU as the device: one CUDA thread
 * drives a connected RC pair through the device API; data in GPU memory
 * (GDAK_MEM_GPU, registered like any other).  Built twice from this one
 * source: gdak.emu.scenarios_cuda (argv[1] "emu") and, with the hardware
 * backend, gdak.hw.scenarios_cuda (argv[1] "--hw": the first mlx5 device,
 * or $GDAK_HW_DEVICE; skipped without one), and gdak.hw.scenarios_cuda_devx
 * (argv[2] "queues-gpu": GDAK_QP_F_QUEUES_GPU, the DEVX path).  Exits 77
 * without a GPU.
 *
 *   put + wait, get back, put+signal then the target's signal wait,
 *   fetch-add / compare-swap on a GPU word, and a put with a wrong rkey:
 *   REMOTE_ACCESS_ERR from the device API and from gdak_qp_query_error.
 */
#include <cuda_runtime.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gdak/gdak.h>
#include <gdak/dev/dev.h>

#include "../cuda/cuda_util.h"

#define LEN 65536u

/* Offsets in the GPU buffers. */
enum { SRC = 0, DST = 0, BACK = 16384, SIG = 32768, WORD = 32776, RES = 32784, BAD = 40960 };

struct kargs {
	struct gdak_dev_qp *qp;
	uint64_t a, b;			/* initiator's and target's buffers */
	uint32_t a_lkey, b_rkey;
};

struct kout {
	int rc[12];
	uint64_t v[4];
	struct gdak_dev_cqe err;
};

__global__ void k_scen(struct kargs x, struct kout *o)
{
	struct gdak_dev_qp *qp = x.qp;
	struct gdak_dev_sge s = {x.a + SRC, 4096, x.a_lkey};
	uint64_t t = 0, old = 0;
	int k = 0;

	for (int i = 0; i < 12; i++)
		o->rc[i] = -1;
	o->rc[k++] = gdak_dev_put(qp, &s, x.b + DST, x.b_rkey, 0, &t);
	o->rc[k++] = gdak_dev_wait_timeout(qp, t, CU_WAIT_NS, &o->err);
	s = {x.a + BACK, 4096, x.a_lkey};
	o->rc[k++] = gdak_dev_get(qp, &s, x.b + DST, x.b_rkey, 0, &t);
	o->rc[k++] = gdak_dev_wait_timeout(qp, t, CU_WAIT_NS, &o->err);
	/* put+signal; the "target" (this thread too) waits for the signal */
	s = {x.a + 4096, 4096, x.a_lkey};
	o->rc[k++] = gdak_dev_put_signal(qp, &s, x.b + 4096, x.b_rkey, x.b + SIG, x.b_rkey, 1, 0,
					 &t);
	o->rc[k++] = gdak_dev_signal_wait_timeout((const uint64_t *)(x.b + SIG), GDAK_DEV_CMP_GE,
						  1, CU_WAIT_NS, &o->v[0]);
	o->rc[k++] = gdak_dev_fetch_add_timeout(qp, x.b + WORD, x.b_rkey, 5,
						(uint64_t *)(x.a + RES), x.a_lkey, &old, CU_WAIT_NS,
						&o->err);
	o->v[1] = old;
	o->rc[k++] = gdak_dev_compare_swap_timeout(qp, x.b + WORD, x.b_rkey, 105, 7,
						   (uint64_t *)(x.a + RES), x.a_lkey, &old,
						   CU_WAIT_NS, &o->err);
	o->v[2] = old;
	o->rc[k++] = gdak_dev_quiet_timeout(qp, CU_WAIT_NS, &o->err);
	/* last: a wrong rkey breaks the QP */
	s = {x.a + SRC, 256, x.a_lkey};
	o->rc[k++] = gdak_dev_put(qp, &s, x.b + BAD, x.b_rkey ^ 0x00a5a500u, GDAK_DEV_WQE_SIGNAL,
				  &t);
	o->rc[k++] = gdak_dev_wait_timeout(qp, t, CU_WAIT_NS, &o->err);
	o->v[3] = t;
}

/* The device string, or NULL to skip. */
static const char *pick_device(int argc, char **argv)
{
	const char *arg = argc > 1 ? argv[1] : "emu";
	const char *env = getenv("GDAK_HW_DEVICE");
	struct gdak_ctx *probe = NULL;

	if (strcmp(arg, "--hw"))
		return arg;
	arg = env && *env ? env : "mlx5";
	gdak_set_log_level(GDAK_LOG_ERROR);
	if (gdak_open(arg, &probe))
		return NULL;	/* no backend, or no mlx5 device */
	gdak_close(probe);
	return arg;
}

int main(int argc, char **argv)
{
	const char *dev;
	struct gdak_ctx *ctx = NULL;
	struct gdak_qp *qp[2] = {NULL, NULL};
	struct gdak_dev_qp *dq = NULL;
	struct gdak_qp_info info[2];
	struct gdak_qp_attr a;
	struct gdak_qp_error qe;
	struct gdak_mr *mr[2];
	uint8_t *buf[2], *host, *back;
	struct kout *o_d, o;
	struct kargs x;
	uint64_t w = 100, v;
	int n = 0;

	if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0)
		GDAK_TEST_SKIP("no usable GPU");
	dev = pick_device(argc, argv);
	if (!dev)
		GDAK_TEST_SKIP("no mlx5 device (or no hardware backend in this build)");
	gdak_set_log_level(GDAK_LOG_WARN);
	printf("CUDA scenarios on %s%s\n", dev,
	       argc > 2 && !strcmp(argv[2], "queues-gpu") ? ", queues in GPU memory" : "");
	CU_REQUIRE(cudaSetDevice(0));
	CU_REQUIRE(cudaFree(0));

	REQUIRE(!gdak_open(dev, &ctx));
	memset(&a, 0, sizeof(a));
	a.sq_depth = 64;
	a.mtu = 1024;
	a.nic_thread = -1;
	a.handler = GDAK_DEV_DB_DB;
	/* argv[2] "queues-gpu": rings in GPU memory (hw_mlx5's DEVX path) */
	if (argc > 2 && !strcmp(argv[2], "queues-gpu"))
		a.flags = GDAK_QP_F_QUEUES_GPU;
	for (int i = 0; i < 2; i++) {
		REQUIRE(!gdak_mem_alloc(ctx, LEN, GDAK_MEM_GPU, (void **)&buf[i]));
		CU_REQUIRE(cudaMemset(buf[i], 0, LEN));
		REQUIRE(!gdak_mr_reg(ctx, buf[i], LEN, GDAK_ACCESS_ALL, &mr[i]));
		REQUIRE(!gdak_qp_create(ctx, &a, &qp[i]));
		REQUIRE(!gdak_qp_info(qp[i], &info[i]));
	}
	for (int i = 0; i < 2; i++)
		REQUIRE(!gdak_qp_connect(qp[i], &info[1 - i]));
	REQUIRE(!gdak_qp_export(qp[0], &dq));
	if (!dq->scratch_addr) {
		/* host-filled (gdak/dev/types.h); supply one where the backend did not */
		printf("note: %s left scratch_addr unset; the test supplies one\n", dev);
		dq->scratch_addr = (uint64_t)(uintptr_t)buf[0] + RES + 8;
		dq->scratch_lkey = gdak_mr_lkey(mr[0]);
	}

	host = (uint8_t *)malloc(LEN);
	back = (uint8_t *)malloc(LEN);
	REQUIRE(host && back);
	gdak_test_fill(host, 8192, 11);
	CU_REQUIRE(cudaMemcpy(buf[0], host, 8192, cudaMemcpyHostToDevice));
	CU_REQUIRE(cudaMemcpy(buf[1] + WORD, &w, 8, cudaMemcpyHostToDevice));
	CU_REQUIRE(cudaMalloc((void **)&o_d, sizeof(*o_d)));

	x.qp = dq;
	x.a = (uint64_t)(uintptr_t)buf[0];
	x.b = (uint64_t)(uintptr_t)buf[1];
	x.a_lkey = gdak_mr_lkey(mr[0]);
	x.b_rkey = gdak_mr_rkey(mr[1]);
	k_scen<<<1, 1>>>(x, o_d);
	CU_REQUIRE(cudaGetLastError());
	CU_REQUIRE(cudaDeviceSynchronize());
	CU_REQUIRE(cudaMemcpy(&o, o_d, sizeof(o), cudaMemcpyDeviceToHost));
	CU_REQUIRE(cudaMemcpy(back, buf[1], LEN, cudaMemcpyDeviceToHost));

	for (int i = 0; i < 9; i++)
		CHECK_EQ(o.rc[i], 0);
	CHECK_MEM(back + DST, host, 8192);		/* put, and put+signal's data */
	CHECK_EQ(o.v[0], 1);				/* the signal */
	CHECK_EQ(o.v[1], 100);				/* fetch-add's old value */
	CHECK_EQ(o.v[2], 105);				/* compare-swap hit */
	memcpy(&v, back + WORD, 8);
	CHECK_EQ(v, 7);
	CU_REQUIRE(cudaMemcpy(back, buf[0] + BACK, 4096, cudaMemcpyDeviceToHost));
	CHECK_MEM(back, host, 4096);			/* get */
	CHECK_EQ(o.rc[9], 0);				/* the bad put was posted */
	CHECK_EQ(o.rc[10], -EIO);			/* and failed */
	CHECK_EQ(o.err.opcode, MLX5_CQE_REQ_ERR);
	CHECK_EQ(o.err.syndrome, MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR);
	CHECK_EQ(o.err.wqe_opcode, MLX5_OPCODE_RDMA_WRITE);
	CHECK_EQ(gdak_qp_query_error(qp[0], &qe), 0);
	CHECK_EQ(qe.state, GDAK_QPS_ERR);
	CHECK_EQ(qe.syndrome, MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR);

	cudaFree(o_d);
	free(host);
	free(back);
	for (int i = 0; i < 2; i++) {
		gdak_qp_destroy(qp[i]);
		gdak_mr_dereg(mr[i]);
		gdak_mem_free(ctx, buf[i]);
	}
	gdak_close(ctx);
	return gdak_test_end();
}

/* SPDX-License-Identifier: MIT */
/*
 * cuda_util.h - what the CUDA tests share: skip without a GPU, connected QP
 * pairs on the NIC model, registered buffers of each memory kind, and a
 * kernel wait with a hang guard (a broken protocol must fail the test, not
 * hang it: the guard is far above anything a working run takes).
 *
 * Header-only (static functions), for .cu files; the C test library is
 * included with C linkage.
 */
#ifndef GDAK_CUDA_UTIL_H
#define GDAK_CUDA_UTIL_H

#include <cuda_runtime.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <initializer_list>

#include <gdak/gdak.h>
#include <gdak/nic.h>
#include <gdak/dev/dev.h>

#include "gdak_cuda_view.h"

/* Seconds a test kernel may run before the test gives up on it. */
#define CU_HANG_S 45
/* Bounded waits inside kernels: long enough never to fire in a working
 * run, short enough that a failure shows as an error code. */
#define CU_WAIT_NS 10000000000ull

#define CU_REQUIRE(call) GDAK_CU_REQUIRE(call)

#define GDAK_REQUIRE(call)                                                                  \
	do {                                                                                \
		int r_ = (call);                                                            \
		if (r_) {                                                                   \
			gdak_test_fail(__FILE__, __LINE__, "%s: %s", #call, gdak_strerror(r_)); \
			exit(1);                                                            \
		}                                                                           \
	} while (0)

/* Exit 77 unless a GPU is usable (no driver, cuInit failing, no device). */
static void cu_require_gpu(void)
{
	int n = 0;
	cudaError_t e;

	/* Lazy module loading (CUDA >= 12.2 default) loads a kernel at its
	 * first launch, and that load waits for the kernels already running:
	 * a kernel launched to answer a spinning one would never start.  Load
	 * everything up front (the user's setting wins). */
	setenv("CUDA_MODULE_LOADING", "EAGER", 0);
	e = cudaGetDeviceCount(&n);

	if (e != cudaSuccess || n == 0)
		GDAK_TEST_SKIP("no usable GPU (%s)", e != cudaSuccess ? cudaGetErrorString(e)
								 : "0 devices");
	CU_REQUIRE(cudaSetDevice(0));
	CU_REQUIRE(cudaFree(0)); /* create the primary context now */
}

/* Open a NIC-model device ("emu", "emu:udp:ADDR") and check that its CUDA
 * memory engine is in use (a GPU is here: falling back to host memory would
 * be a bug). */
static struct gdak_ctx *cu_open_dev(const char *dev)
{
	struct gdak_ctx *ctx = NULL;
	void *g = NULL;

	GDAK_REQUIRE(gdak_open(dev, &ctx));
	GDAK_REQUIRE(gdak_mem_alloc(ctx, 64, GDAK_MEM_GPU, &g));
	REQUIRE_EQ(gdak_mem_kind_of(ctx, g), GDAK_MEM_GPU);
	gdak_mem_free(ctx, g);
	return ctx;
}

static struct gdak_ctx *cu_open(void)
{
	return cu_open_dev("emu");
}

/* A test file's main: skip without a GPU, open the NIC model, run the
 * file's tests on it, close it. */
static int cu_main(void (*run)(struct gdak_ctx *ctx))
{
	struct gdak_ctx *ctx;

	cu_require_gpu();
	ctx = cu_open();
	run(ctx);
	gdak_close(ctx);
	return gdak_test_end();
}

struct cu_pair {
	struct gdak_qp *qa, *qb;
	struct gdak_dev_qp *a, *b;	/* exported descriptors (mapped host memory) */
};

static struct gdak_qp_attr cu_attr(enum gdak_dev_db_handler h, enum gdak_dev_sharing s,
				   uint32_t sq, uint32_t rq)
{
	struct gdak_qp_attr a;

	memset(&a, 0, sizeof(a));
	a.sq_depth = sq;
	a.cq_depth = sq;
	a.rq_depth = rq;
	a.rcq_depth = rq;
	a.rq_max_sge = rq ? 1 : 0;
	a.handler = h;
	a.sharing = s;
	a.mtu = 1024;
	a.nic_thread = -1;
	/* the *_gpurings twins (emu_tests/cuda/cuda.cmake): SQ, RQ, CQs and records
	 * in GPU memory, what DOCA GPUNetIO does */
	if (getenv("GDAK_TEST_QUEUES_GPU"))
		a.flags |= GDAK_QP_F_QUEUES_GPU;
	return a;
}

static void cu_pair_make(struct gdak_ctx *ctx, const struct gdak_qp_attr *attr, struct cu_pair *p)
{
	struct gdak_qp_info ia, ib;

	memset(p, 0, sizeof(*p));
	GDAK_REQUIRE(gdak_qp_create(ctx, attr, &p->qa));
	GDAK_REQUIRE(gdak_qp_create(ctx, attr, &p->qb));
	GDAK_REQUIRE(gdak_qp_info(p->qa, &ia));
	GDAK_REQUIRE(gdak_qp_info(p->qb, &ib));
	GDAK_REQUIRE(gdak_qp_connect(p->qa, &ib));
	GDAK_REQUIRE(gdak_qp_connect(p->qb, &ia));
	GDAK_REQUIRE(gdak_qp_export(p->qa, &p->a));
	GDAK_REQUIRE(gdak_qp_export(p->qb, &p->b));
}

static void cu_pair_destroy(struct cu_pair *p)
{
	CHECK_EQ(gdak_qp_destroy(p->qa), 0);
	CHECK_EQ(gdak_qp_destroy(p->qb), 0);
}

/* A registered buffer of one kind. */
struct cu_buf {
	uint8_t *p;
	size_t len;
	struct gdak_mr *mr;
	uint32_t key;
	enum gdak_mem_kind kind;
};

static void cu_buf_make(struct gdak_ctx *ctx, size_t len, enum gdak_mem_kind kind, struct cu_buf *b)
{
	void *p = NULL;

	GDAK_REQUIRE(gdak_mem_alloc(ctx, len, kind, &p));
	b->p = (uint8_t *)p;
	b->len = len;
	b->kind = kind;
	GDAK_REQUIRE(gdak_mr_reg(ctx, p, len, GDAK_ACCESS_ALL, &b->mr));
	b->key = gdak_mr_lkey(b->mr);
	if (kind == GDAK_MEM_GPU)
		CU_REQUIRE(cudaMemset(p, 0, len));
	else
		memset(p, 0, len);
}

static void cu_buf_free(struct gdak_ctx *ctx, struct cu_buf *b)
{
	CHECK_EQ(gdak_mr_dereg(b->mr), 0);
	CHECK_EQ(gdak_mem_free(ctx, b->p), 0);
}

/* cu_buf_free for each buffer, in order: cu_bufs_free(ctx, {&src, &dst}). */
static void cu_bufs_free(struct gdak_ctx *ctx, std::initializer_list<struct cu_buf *> bufs)
{
	for (struct cu_buf *b : bufs)
		cu_buf_free(ctx, b);
}

/* Host copy of a buffer's bytes (any kind). */
static void cu_read(void *dst, const struct cu_buf *b, size_t off, size_t len)
{
	CU_REQUIRE(cudaMemcpy(dst, b->p + off, len, cudaMemcpyDefault));
}

static void cu_write(const struct cu_buf *b, size_t off, const void *src, size_t len)
{
	CU_REQUIRE(cudaMemcpy(b->p + off, src, len, cudaMemcpyDefault));
}

static struct gdak_dev_sge cu_sge(const struct cu_buf *b, size_t off, uint32_t len)
{
	struct gdak_dev_sge s;

	s.addr = (uint64_t)(uintptr_t)(b->p + off);
	s.len = len;
	s.lkey = b->key;
	return s;
}

static uint64_t cu_addr(const struct cu_buf *b, size_t off)
{
	return (uint64_t)(uintptr_t)(b->p + off);
}

/* A buffer as a kernel's arguments name it: its start and its key. */
static void cu_ref(const struct cu_buf *b, uint64_t *addr, uint32_t *key)
{
	*addr = cu_addr(b, 0);
	*key = b->key;
}

static cudaStream_t cu_stream(void)
{
	cudaStream_t s;

	CU_REQUIRE(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	return s;
}

/* Wait for the work on s, failing the test (exit) if it runs longer than
 * CU_HANG_S or fails; the NIC thread keeps serving meanwhile. */
static void cu_wait(cudaStream_t s, const char *what)
{
	uint64_t t0 = gdak_test_now_ns();
	cudaError_t e;

	while ((e = cudaStreamQuery(s)) == cudaErrorNotReady) {
		if (gdak_test_now_ns() - t0 > (uint64_t)CU_HANG_S * 1000000000ull) {
			gdak_test_fail(__FILE__, __LINE__, "%s: kernel still running after %d s "
				       "(hang)", what, CU_HANG_S);
			fflush(stdout);
			_exit(1);
		}
		usleep(200);
	}
	if (e != cudaSuccess) {
		gdak_test_fail(__FILE__, __LINE__, "%s: %s", what, cudaGetErrorString(e));
		exit(1);
	}
}

/* Mapped host memory for kernel results (written by the GPU, read here). */
template <typename T> static T *cu_results(struct gdak_ctx *ctx, size_t n)
{
	void *p = NULL;

	GDAK_REQUIRE(gdak_mem_alloc(ctx, sizeof(T) * n, GDAK_MEM_HOST_MAPPED, &p));
	memset(p, 0, sizeof(T) * n);
	return (T *)p;
}

#endif /* GDAK_CUDA_UTIL_H */

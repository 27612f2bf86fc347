/* SPDX-License-Identifier: MIT */
/*
 * verbs_devx_cuda.c - DEVX umem on GPU memory (cuMemAlloc) on gdak's
 * libmlx5: registers (nm_ext_ring_kind, the one place that decides, says
 * GPU memory and the NIC model runs such rings through nm_ring_gpu.c),
 * a dma-buf umem is refused with EOPNOTSUPP; host memory next to it still
 * registers.  The CUDA driver API is loaded at run time: builds everywhere,
 * exits 77 without a GPU.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/mlx5dv.h>
#include <infiniband/verbs.h>

#include "gdak_test.h"

#define LEN (1 << 20)

typedef int (*cu_init_t)(unsigned);
typedef int (*cu_dev_get_t)(int *, int);
typedef int (*cu_ctx_retain_t)(void **, int);
typedef int (*cu_ctx_set_t)(void *);
typedef int (*cu_alloc_t)(unsigned long long *, size_t);
typedef int (*cu_free_t)(unsigned long long);

int main(void)
{
	void *cu = dlopen("libcuda.so.1", RTLD_NOW);
	unsigned long long dptr = 0;
	struct mlx5dv_devx_umem_in uin;
	struct mlx5dv_devx_umem *u;
	struct ibv_device **l;
	struct ibv_context *ctx;
	void *cctx = NULL, *host;
	int dev = 0, n;

	if (!cu)
		GDAK_TEST_SKIP("no libcuda.so.1");
	if (((cu_init_t)dlsym(cu, "cuInit"))(0) ||
	    ((cu_dev_get_t)dlsym(cu, "cuDeviceGet"))(&dev, 0) ||
	    ((cu_ctx_retain_t)dlsym(cu, "cuDevicePrimaryCtxRetain"))(&cctx, dev) ||
	    ((cu_ctx_set_t)dlsym(cu, "cuCtxSetCurrent"))(cctx) ||
	    ((cu_alloc_t)dlsym(cu, "cuMemAlloc_v2"))(&dptr, LEN))
		GDAK_TEST_SKIP("no usable GPU");
	l = ibv_get_device_list(&n);
	REQUIRE(l && n > 0);
	ctx = ibv_open_device(l[0]);
	ibv_free_device_list(l);
	REQUIRE(ctx != NULL);

	errno = 0;
	u = mlx5dv_devx_umem_reg(ctx, (void *)(uintptr_t)dptr, LEN, IBV_ACCESS_LOCAL_WRITE);
	CHECK(u != NULL);
	if (u)
		CHECK_EQ(mlx5dv_devx_umem_dereg(u), 0);
	memset(&uin, 0, sizeof(uin));
	uin.addr = 0;
	uin.size = LEN;
	uin.access = IBV_ACCESS_LOCAL_WRITE;
	uin.pgsz_bitmap = 4096;
	uin.comp_mask = MLX5DV_UMEM_MASK_DMABUF;
	uin.dmabuf_fd = 0;
	errno = 0;
	CHECK(mlx5dv_devx_umem_reg_ex(ctx, &uin) == NULL);
	CHECK_EQ(errno, EOPNOTSUPP);
	/* host memory still registers */
	REQUIRE(posix_memalign(&host, 4096, LEN) == 0);
	u = mlx5dv_devx_umem_reg(ctx, host, LEN, IBV_ACCESS_LOCAL_WRITE);
	CHECK(u != NULL);
	if (u)
		CHECK_EQ(mlx5dv_devx_umem_dereg(u), 0);
	free(host);
	((cu_free_t)dlsym(cu, "cuMemFree_v2"))(dptr);
	ibv_close_device(ctx);
	return gdak_test_end();
}

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
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/mlx5dv.h>
#include <infiniband/verbs.h>

#include "gdak_test.h"
#include "gdak_verbs.h"

#define LEN (1 << 20)

int main(void)
{
	struct gdak_vt_cuda cu;
	unsigned long long dptr = 0;
	struct mlx5dv_devx_umem_in uin;
	struct mlx5dv_devx_umem *u;
	struct ibv_device **l;
	struct ibv_context *ctx;
	void *host;
	int n;

	gdak_vt_cuda_open(&cu);
	if (cu.mem_alloc(&dptr, LEN))
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
	cu.mem_free(dptr);
	ibv_close_device(ctx);
	return gdak_test_end();
}

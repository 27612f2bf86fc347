/* SPDX-License-Identifier: MIT */
/*
 * hw_cuda_test.c - gdak.hw.cuda: the hardware backend's CUDA plumbing on a
 * real GPU, no ConnectX needed: the driver API loaded with dlopen, pinned
 * mapped host memory, device memory, copies, pointer kinds, host
 * registration (and the "already registered" case rdma-core's shared
 * doorbell pages produce), the refcounted mappings, dma-buf export of a
 * sub-range, and gdak_mem_alloc's three kinds through the backend.
 * Exits 77 without a usable GPU.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gdak_test.h"
#include "hw_loc.h"

#define LEN (1u << 20)

static void t_copies(void)
{
	uint8_t *h = NULL, *d = NULL, *back = malloc(LEN), *pat = malloc(LEN);
	void *dp = NULL;

	REQUIRE(back && pat);
	CHECK_EQ(hw_cuda_host_alloc(LEN, (void **)&h), 0);
	CHECK_EQ(hw_cuda_dev_alloc(LEN, (void **)&d), 0);
	REQUIRE(h && d);
	memset(h, 0x5a, LEN);				/* pinned memory is host-writable */
	CHECK_EQ(hw_cuda_host_dptr(h, &dp), 0);
	CHECK(dp == (void *)h);				/* unified addressing */
	CHECK(hw_cuda_is_device_ptr(d));
	CHECK(!hw_cuda_is_device_ptr(back));
	CHECK(!hw_cuda_is_device_ptr(h));

	CHECK_EQ(hw_cuda_memset(d, 0xab, LEN), 0);
	CHECK_EQ(hw_cuda_memcpy_dtoh(back, d, LEN), 0);
	memset(pat, 0xab, LEN);
	CHECK_MEM(back, pat, LEN);
	gdak_test_fill(pat, LEN, 42);
	CHECK_EQ(hw_cuda_memcpy_htod(d + 4096, pat, LEN - 4096), 0);
	CHECK_EQ(hw_cuda_memcpy_dtoh(back, d + 4096, LEN - 4096), 0);
	CHECK_MEM(back, pat, LEN - 4096);
	hw_cuda_dev_free(d);
	hw_cuda_host_free(h);
	free(back);
	free(pat);
}

static void t_register(void)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	void *p = NULL, *dp = NULL;

	REQUIRE(!posix_memalign(&p, pg, 16 * pg));
	memset(p, 0, 16 * pg);
	CHECK_EQ(hw_cuda_host_register(p, 16 * pg, 0), 0);
	CHECK_EQ(hw_cuda_host_register(p, 16 * pg, 0), -EEXIST);
	CHECK_EQ(hw_cuda_host_dptr(p, &dp), 0);
	CHECK(dp != NULL);
	CHECK_EQ(hw_cuda_host_unregister(p), 0);
	CHECK_EQ(hw_cuda_host_register(p, 16 * pg, 0), 0);	/* really gone before */
	CHECK_EQ(hw_cuda_host_unregister(p), 0);
	free(p);
}

static void t_dmabuf(void)
{
	void *d = NULL;
	uint64_t off = 0;
	int fd = -1, r;

	CHECK_EQ(hw_cuda_dev_alloc(4 * LEN, &d), 0);
	r = hw_cuda_dmabuf_fd((char *)d + 3 * 65536, 65536, &fd, &off);
	if (r == -ENOTSUP) {
		printf("dma-buf: not offered by this driver/kernel (peer memory would be used)\n");
	} else {
		CHECK_EQ(r, 0);
		CHECK(fd >= 0);
		CHECK_EQ(off, 3 * 65536);
		printf("dma-buf: fd %d for the allocation, offset %llu\n", fd,
		       (unsigned long long)off);
		if (fd >= 0)
			close(fd);
	}
	/* a range running past its allocation is refused, not truncated */
	CHECK_EQ(hw_cuda_dmabuf_fd((char *)d + 4 * LEN - 4096, 8192, &fd, &off), -EINVAL);
	hw_cuda_dev_free(d);
}

/* The backend's memory calls on a context without an RDMA device: only
 * what they need of it (CUDA flag, lock, lists). */
static void t_backend_mem(void)
{
	struct hw_ctx hc;
	void *a[3] = {NULL, NULL, NULL}, *d1 = NULL, *d2 = NULL, *p = NULL;
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);

	memset(&hc, 0, sizeof(hc));
	pthread_mutex_init(&hc.lock, NULL);
	hc.cuda = 1;
	CHECK_EQ(hw_mem_alloc(&hc.base, 1000, GDAK_MEM_HOST, &a[0]), 0);
	CHECK_EQ(hw_mem_alloc(&hc.base, 1000, GDAK_MEM_HOST_MAPPED, &a[1]), 0);
	CHECK_EQ(hw_mem_alloc(&hc.base, 1000, GDAK_MEM_GPU, &a[2]), 0);
	CHECK_EQ(hw_mem_kind_of(&hc.base, a[0]), GDAK_MEM_HOST);
	CHECK_EQ(hw_mem_kind_of(&hc.base, (char *)a[1] + 999), GDAK_MEM_HOST_MAPPED);
	CHECK_EQ(hw_mem_kind_of(&hc.base, a[2]), GDAK_MEM_GPU);
	CHECK(hw_cuda_is_device_ptr(a[2]));
	CHECK_EQ(((uint8_t *)a[0])[999], 0);		/* zeroed */
	CHECK_EQ(((uint8_t *)a[1])[999], 0);
	CHECK_EQ(hw_mem_free(&hc.base, (char *)a[0] + 8), -EINVAL); /* not an allocation */

	/* two mappings of one page share one registration */
	REQUIRE(!posix_memalign(&p, pg, pg));
	CHECK_EQ(hw_gpumap_get(&hc, p, 8, 0, &d1), 0);
	CHECK_EQ(hw_gpumap_get(&hc, (char *)p + 64, 8, 0, &d2), 0);
	CHECK((char *)d2 == (char *)d1 + 64);
	hw_gpumap_put(&hc, p);
	CHECK_EQ(hw_cuda_host_register(p, pg, 0), -EEXIST);	/* still held */
	hw_gpumap_put(&hc, (char *)p + 64);
	CHECK_EQ(hw_cuda_host_register(p, pg, 0), 0);		/* released */
	CHECK_EQ(hw_cuda_host_unregister(p), 0);
	free(p);

	for (int i = 0; i < 3; i++)
		CHECK_EQ(hw_mem_free(&hc.base, a[i]), 0);
	hw_mem_release_all(&hc);
	pthread_mutex_destroy(&hc.lock);
}

int main(void)
{
	if (hw_cuda_init())
		GDAK_TEST_SKIP("no usable CUDA GPU (libcuda.so.1 and a device are needed)");
	t_copies();
	t_register();
	t_dmabuf();
	t_backend_mem();
	return gdak_test_end();
}

/* SPDX-License-Identifier: MIT */
/*
 * hw_cuda.c - the few CUDA driver API calls the hardware backend needs,
 * loaded at run time (gdak_cuda.h: dlopen("libcuda.so.1")) so that one
 * build runs on machines with and without a GPU (libcuda is never linked).
 *
 * Every call makes the primary context of the chosen GPU ($GDAK_CUDA_DEVICE,
 * default 0) current on the calling thread first: the backend is called from
 * whatever thread the application uses.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "hw_loc.h"
#include "gdak_cuda.h"
#include "gdak_log.h"

/* The driver API's types, spelled out so no CUDA header is needed. */
typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef struct CUctx_st *CUcontext;

enum {
	CUDA_SUCCESS = 0,
	CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED = 712,
	CU_MEMHOSTALLOC_PORTABLE = 0x01,
	CU_MEMHOSTALLOC_DEVICEMAP = 0x02,
	CU_MEMHOSTREGISTER_PORTABLE = 0x01,
	CU_MEMHOSTREGISTER_DEVICEMAP = 0x02,
	CU_MEMHOSTREGISTER_IOMEMORY = 0x04,
	CU_POINTER_ATTRIBUTE_MEMORY_TYPE = 2,
	CU_MEMORYTYPE_DEVICE = 2,
	CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD = 1,
	CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED = 124,
};

/* Symbol names are the versioned ones cuda.h maps the API names to. */
static struct {
	CUresult (*DeviceGetAttribute)(int *, int, CUdevice);
	CUresult (*CtxSetCurrent)(CUcontext);
	CUresult (*MemHostAlloc)(void **, size_t, unsigned);
	CUresult (*MemFreeHost)(void *);
	CUresult (*MemAlloc)(CUdeviceptr *, size_t);
	CUresult (*MemFree)(CUdeviceptr);
	CUresult (*MemHostRegister)(void *, size_t, unsigned);
	CUresult (*MemHostUnregister)(void *);
	CUresult (*MemHostGetDevicePointer)(CUdeviceptr *, void *, unsigned);
	CUresult (*PointerGetAttribute)(void *, int, CUdeviceptr);
	CUresult (*MemGetAddressRange)(CUdeviceptr *, size_t *, CUdeviceptr);
	CUresult (*MemGetHandleForAddressRange)(void *, CUdeviceptr, size_t, int, unsigned long long);
	CUresult (*MemcpyDtoH)(void *, CUdeviceptr, size_t);
	CUresult (*MemcpyHtoD)(CUdeviceptr, const void *, size_t);
	CUresult (*MemsetD8)(CUdeviceptr, unsigned char, size_t);
	CUresult (*GetErrorString)(CUresult, const char **);
} cu;

static pthread_once_t cuda_once = PTHREAD_ONCE_INIT;
static int cuda_state = -ENODEV;
static CUcontext cuda_ctx;
static int cuda_dmabuf_ok;

static const char *cu_err(CUresult r)
{
	const char *s = NULL;
	if (cu.GetErrorString && cu.GetErrorString(r, &s) == CUDA_SUCCESS && s)
		return s;
	return "unknown CUDA error";
}

static void lacks(const char *name)
{
	GDAK_WARN("hw", 0, "libcuda.so.1 lacks %s: GPU support off", name);
}

static int load_sym(void *lib, void **slot, const char *name, int required)
{
	*slot = dlsym(lib, name);
	if (!*slot && required) {
		lacks(name);
		return -1;
	}
	return 0;
}

static void cuda_load(void)
{
	struct gdak_cuda_driver d;
	enum gdak_cuda_step step;
	void *lib;
	int bad = 0;

	if (gdak_cuda_open(&d)) {
		GDAK_INFO("hw", 0, "no CUDA driver (libcuda.so.1: %s): host memory only", d.why);
		return;
	}
	lib = d.lib;
#define SYM(field, name, req) bad |= load_sym(lib, (void **)&cu.field, name, req)
	SYM(DeviceGetAttribute, "cuDeviceGetAttribute", 1);
	SYM(CtxSetCurrent, "cuCtxSetCurrent", 1);
	SYM(MemHostAlloc, "cuMemHostAlloc", 1);
	SYM(MemFreeHost, "cuMemFreeHost", 1);
	SYM(MemAlloc, "cuMemAlloc_v2", 1);
	SYM(MemFree, "cuMemFree_v2", 1);
	SYM(MemHostRegister, "cuMemHostRegister_v2", 1);
	SYM(MemHostUnregister, "cuMemHostUnregister", 1);
	SYM(MemHostGetDevicePointer, "cuMemHostGetDevicePointer_v2", 1);
	SYM(PointerGetAttribute, "cuPointerGetAttribute", 1);
	SYM(MemGetAddressRange, "cuMemGetAddressRange_v2", 1);
	SYM(MemcpyDtoH, "cuMemcpyDtoH_v2", 1);
	SYM(MemcpyHtoD, "cuMemcpyHtoD_v2", 1);
	SYM(MemsetD8, "cuMemsetD8_v2", 1);
	SYM(GetErrorString, "cuGetErrorString", 0);
	/* CUDA >= 11.7 only: without it GPU memory goes through peer memory. */
	SYM(MemGetHandleForAddressRange, "cuMemGetHandleForAddressRange", 0);
#undef SYM
	if (bad)
		return;
	step = gdak_cuda_start(&d);
	if (step == GDAK_CUDA_NO_SYMBOL) {
		lacks(d.why);
		return;
	}
	if (step == GDAK_CUDA_NO_INIT) {
		GDAK_INFO("hw", 0, "cuInit: %s: host memory only", cu_err(d.result));
		return;
	}
	if (step == GDAK_CUDA_NO_DEVICE) {
		GDAK_INFO("hw", 0, "no CUDA device: host memory only");
		return;
	}
	if (d.ordinal != d.asked)
		GDAK_WARN("hw", 0, "GDAK_CUDA_DEVICE=%d but %d GPU(s): using 0", d.asked, d.count);
	if (step != GDAK_CUDA_READY) {
		GDAK_WARN("hw", 0, "GPU %d: no context (%s): host memory only", d.ordinal,
			  cu_err(d.result));
		return;
	}
	cuda_ctx = (CUcontext)d.ctx;
	if (cu.MemGetHandleForAddressRange &&
	    cu.DeviceGetAttribute(&cuda_dmabuf_ok, CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED,
				  d.device) != CUDA_SUCCESS)
		cuda_dmabuf_ok = 0;
	GDAK_INFO("hw", 0, "CUDA GPU %d ready (dma-buf %s)", d.ordinal,
		  cuda_dmabuf_ok ? "yes" : "no");
	cuda_state = 0;
}

int hw_cuda_init(void)
{
	pthread_once(&cuda_once, cuda_load);
	return cuda_state;
}

static int cur(void)
{
	CUresult r;

	if (hw_cuda_init())
		return -ENODEV;
	r = cu.CtxSetCurrent(cuda_ctx);
	if (r != CUDA_SUCCESS) {
		GDAK_ERR("hw", 0, "cuCtxSetCurrent: %s", cu_err(r));
		return -EIO;
	}
	return 0;
}

int hw_cuda_host_alloc(size_t len, void **p)
{
	CUresult r;

	if (cur())
		return -ENODEV;
	r = cu.MemHostAlloc(p, len, CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP);
	if (r != CUDA_SUCCESS) {
		GDAK_ERR("hw", 0, "cuMemHostAlloc(%zu): %s", len, cu_err(r));
		*p = NULL;
		return -ENOMEM;
	}
	return 0;
}

void hw_cuda_host_free(void *p)
{
	if (p && !cur())
		cu.MemFreeHost(p);
}

int hw_cuda_dev_alloc(size_t len, void **p)
{
	CUdeviceptr d = 0;
	CUresult r;

	*p = NULL;
	if (cur())
		return -ENODEV;
	r = cu.MemAlloc(&d, len);
	if (r != CUDA_SUCCESS) {
		GDAK_ERR("hw", 0, "cuMemAlloc(%zu): %s", len, cu_err(r));
		return -ENOMEM;
	}
	*p = (void *)(uintptr_t)d;
	return 0;
}

void hw_cuda_dev_free(void *p)
{
	if (p && !cur())
		cu.MemFree((CUdeviceptr)(uintptr_t)p);
}

int hw_cuda_host_register(void *p, size_t len, int iomem)
{
	unsigned flags = CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP;
	CUresult r;

	if (cur())
		return -ENODEV;
	if (iomem)
		flags |= CU_MEMHOSTREGISTER_IOMEMORY;
	r = cu.MemHostRegister(p, len, flags);
	if (r == CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED)
		return -EEXIST;
	if (r != CUDA_SUCCESS) {
		GDAK_WARN("hw", 0, "cuMemHostRegister(%p, %zu, %s): %s", p, len,
			  iomem ? "IOMEMORY" : "DEVICEMAP", cu_err(r));
		return -EIO;
	}
	return 0;
}

int hw_cuda_host_unregister(void *p)
{
	if (cur())
		return -ENODEV;
	return cu.MemHostUnregister(p) == CUDA_SUCCESS ? 0 : -EIO;
}

int hw_cuda_host_dptr(void *p, void **dptr)
{
	CUdeviceptr d = 0;
	CUresult r;

	if (cur())
		return -ENODEV;
	r = cu.MemHostGetDevicePointer(&d, p, 0);
	if (r != CUDA_SUCCESS) {
		GDAK_WARN("hw", 0, "cuMemHostGetDevicePointer(%p): %s", p, cu_err(r));
		return -EIO;
	}
	*dptr = (void *)(uintptr_t)d;
	return 0;
}

int hw_cuda_is_device_ptr(const void *p)
{
	unsigned type = 0;

	if (cur())
		return 0;
	if (cu.PointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
				   (CUdeviceptr)(uintptr_t)p) != CUDA_SUCCESS)
		return 0;	/* not known to CUDA: ordinary host memory */
	return type == CU_MEMORYTYPE_DEVICE;
}

int hw_cuda_dmabuf_fd(void *p, size_t len, int *fd, uint64_t *offset)
{
	CUdeviceptr base = 0;
	size_t size = 0;
	CUresult r;

	*fd = -1;
	if (cur())
		return -ENODEV;
	if (!cu.MemGetHandleForAddressRange || !cuda_dmabuf_ok)
		return -ENOTSUP;
	/*
	 * The handle is taken for the whole allocation: its base and size are
	 * aligned as cuMemGetHandleForAddressRange requires, which an arbitrary
	 * sub-range need not be.  The MR then covers [offset, offset + len).
	 */
	r = cu.MemGetAddressRange(&base, &size, (CUdeviceptr)(uintptr_t)p);
	if (r != CUDA_SUCCESS) {
		GDAK_WARN("hw", 0, "cuMemGetAddressRange(%p): %s", p, cu_err(r));
		return -EINVAL;
	}
	if ((uintptr_t)p + len > base + size) {
		GDAK_ERR("hw", 0, "range %p+%zu runs past its CUDA allocation (%zu bytes)", p, len,
			 size);
		return -EINVAL;
	}
	r = cu.MemGetHandleForAddressRange(fd, base, size, CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0);
	if (r != CUDA_SUCCESS) {
		GDAK_INFO("hw", 0, "no dma-buf for %p (%s)", p, cu_err(r));
		*fd = -1;
		return -ENOTSUP;
	}
	*offset = (uintptr_t)p - base;
	return 0;
}

int hw_cuda_memcpy_dtoh(void *dst, const void *src, size_t len)
{
	if (cur())
		return -ENODEV;
	return cu.MemcpyDtoH(dst, (CUdeviceptr)(uintptr_t)src, len) == CUDA_SUCCESS ? 0 : -EIO;
}

int hw_cuda_memcpy_htod(void *dst, const void *src, size_t len)
{
	if (cur())
		return -ENODEV;
	return cu.MemcpyHtoD((CUdeviceptr)(uintptr_t)dst, src, len) == CUDA_SUCCESS ? 0 : -EIO;
}

int hw_cuda_memset(void *dst, uint8_t v, size_t len)
{
	if (cur())
		return -ENODEV;
	return cu.MemsetD8((CUdeviceptr)(uintptr_t)dst, v, len) == CUDA_SUCCESS ? 0 : -EIO;
}

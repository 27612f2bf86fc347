/* SPDX-License-Identifier: MIT */
/*
 * nm_cuda.h - the CUDA driver API as the NIC model's CUDA memory engine uses
 * it, loaded at run time from libcuda.so.1 (never linked: one build of gdak
 * runs on machines with and without a GPU).
 *
 * Only the few types and constants the engine needs are declared here, with
 * the values of the driver API (cuda.h, CUDA 12/13); the symbol names are
 * the versioned ones libcuda exports (cuMemAlloc_v2 ...), because cuda.h
 * maps the plain names to them with macros.
 */
#ifndef NM_CUDA_H
#define NM_CUDA_H

#include <stddef.h>
#include <stdint.h>

typedef int nm_cu_result;		/* CUresult: 0 = CUDA_SUCCESS */
typedef int nm_cu_device;		/* CUdevice */
typedef struct nm_cu_ctx_st *nm_cu_ctx;	/* CUcontext */
typedef struct nm_cu_stream_st *nm_cu_stream; /* CUstream */
typedef unsigned long long nm_cu_ptr;	/* CUdeviceptr */

#define NM_CU_MEMHOSTALLOC_PORTABLE 0x01
#define NM_CU_MEMHOSTALLOC_DEVICEMAP 0x02
#define NM_CU_STREAM_NON_BLOCKING 0x1
#define NM_CU_POINTER_ATTRIBUTE_MEMORY_TYPE 2
#define NM_CU_MEMORYTYPE_HOST 1
#define NM_CU_MEMORYTYPE_DEVICE 2
#define NM_CU_MEMORYTYPE_UNIFIED 4
#define NM_CU_ERROR_NOT_READY 600

struct nm_cu_api {
	nm_cu_result (*Init)(unsigned flags);
	nm_cu_result (*DeviceGetCount)(int *n);
	nm_cu_result (*DeviceGet)(nm_cu_device *dev, int ordinal);
	nm_cu_result (*DeviceGetName)(char *name, int len, nm_cu_device dev);
	nm_cu_result (*DevicePrimaryCtxRetain)(nm_cu_ctx *ctx, nm_cu_device dev);
	nm_cu_result (*CtxSetCurrent)(nm_cu_ctx ctx);
	nm_cu_result (*MemAlloc)(nm_cu_ptr *p, size_t len);
	nm_cu_result (*MemFree)(nm_cu_ptr p);
	nm_cu_result (*MemHostAlloc)(void **p, size_t len, unsigned flags);
	nm_cu_result (*MemFreeHost)(void *p);
	nm_cu_result (*MemHostGetDevicePointer)(nm_cu_ptr *d, void *h, unsigned flags);
	nm_cu_result (*MemcpyAsync)(nm_cu_ptr dst, nm_cu_ptr src, size_t len, nm_cu_stream s);
	nm_cu_result (*StreamCreate)(nm_cu_stream *s, unsigned flags);
	nm_cu_result (*StreamSynchronize)(nm_cu_stream s);
	nm_cu_result (*StreamDestroy)(nm_cu_stream s);
	nm_cu_result (*PointerGetAttribute)(void *data, int attr, nm_cu_ptr p);
	nm_cu_result (*GetErrorString)(nm_cu_result r, const char **s);
};

#endif /* NM_CUDA_H */

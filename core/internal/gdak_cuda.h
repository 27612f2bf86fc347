/* SPDX-License-Identifier: MIT */
/*
 * gdak_cuda.h - the CUDA driver API, loaded at run time: dlopen
 * ("libcuda.so.1"), cuInit and the primary context of the GPU
 * $GDAK_CUDA_DEVICE names (0 when it names none).  libcuda is never linked,
 * so one build runs with and without a GPU.
 *
 * The ring capture (core/trace/capture_cuda.c), the ConnectX backend
 * (hw_mlx5/hw_cuda.c) and the NIC model's CUDA engine (nic_model/nm_cuda.c)
 * load the driver through it: gdak_cuda_open(), then each looks up the entry
 * points it calls in d->lib, then gdak_cuda_start().  Each says in its own
 * log lines what a failure turns off, from the step returned; nothing here
 * logs.  The library stays loaded whatever the step (the caller's error
 * strings, cuGetErrorString, come from it): closing it is the caller's.
 */
#ifndef GDAK_CUDA_H
#define GDAK_CUDA_H

enum gdak_cuda_step {
	GDAK_CUDA_READY = 0,
	GDAK_CUDA_NO_DRIVER,  /* dlopen failed: why */
	GDAK_CUDA_NO_SYMBOL,  /* the driver lacks the entry point why */
	GDAK_CUDA_NO_INIT,    /* cuInit failed: result */
	GDAK_CUDA_NO_DEVICE,  /* cuDeviceGetCount failed or found none */
	GDAK_CUDA_NO_CONTEXT, /* cuDeviceGet or cuDevicePrimaryCtxRetain failed: result */
};

struct gdak_cuda_driver {
	void *lib;	 /* dlopen's handle */
	const char *why; /* NO_DRIVER: dlerror(); NO_SYMBOL: the name */
	int result;	 /* NO_INIT, NO_CONTEXT: the driver's CUresult */
	int asked;	 /* $GDAK_CUDA_DEVICE (0 when unset) */
	int count;	 /* GPUs, from NO_CONTEXT on */
	int ordinal;	 /* the GPU used: asked, or 0 when asked is not one */
	int device;	 /* its CUdevice */
	void *ctx;	 /* READY: its primary context (CUcontext), retained */
};

/* dlopen("libcuda.so.1"): READY or NO_DRIVER. */
enum gdak_cuda_step gdak_cuda_open(struct gdak_cuda_driver *d);
/* cuInit(0), the GPU and its primary context (cuInit, cuDeviceGetCount,
 * cuDeviceGet and cuDevicePrimaryCtxRetain are looked up here). */
enum gdak_cuda_step gdak_cuda_start(struct gdak_cuda_driver *d);

#endif /* GDAK_CUDA_H */

/* SPDX-License-Identifier: MIT */
/*
 * cuda_load.c - loading the CUDA driver API at run time (gdak_cuda.h).
 */
#include <dlfcn.h>
#include <string.h>

#include <gdak/env.h>

#include "gdak_cuda.h"

enum gdak_cuda_step gdak_cuda_open(struct gdak_cuda_driver *d)
{
	unsigned long long asked = 0;

	memset(d, 0, sizeof(*d));
	if (gdak_env_uint("GDAK_CUDA_DEVICE", &asked) < 0)
		asked = 0;
	d->asked = (int)asked;
	d->lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!d->lib) {
		d->why = dlerror();
		return GDAK_CUDA_NO_DRIVER;
	}
	return GDAK_CUDA_READY;
}

enum gdak_cuda_step gdak_cuda_start(struct gdak_cuda_driver *d)
{
	/* the driver's own types: CUresult and CUdevice are int, CUcontext a pointer */
	struct {
		int (*Init)(unsigned);
		int (*DeviceGetCount)(int *);
		int (*DeviceGet)(int *, int);
		int (*DevicePrimaryCtxRetain)(void **, int);
	} drv;
	static const char *const names[] = { "cuInit", "cuDeviceGetCount", "cuDeviceGet",
					     "cuDevicePrimaryCtxRetain" };
	void **slot[] = { (void **)&drv.Init, (void **)&drv.DeviceGetCount, (void **)&drv.DeviceGet,
			  (void **)&drv.DevicePrimaryCtxRetain };

	for (unsigned i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		*slot[i] = dlsym(d->lib, names[i]);
		if (!*slot[i]) {
			d->why = names[i];
			return GDAK_CUDA_NO_SYMBOL;
		}
	}
	d->result = drv.Init(0);
	if (d->result)
		return GDAK_CUDA_NO_INIT;
	if (drv.DeviceGetCount(&d->count) || d->count <= 0)
		return GDAK_CUDA_NO_DEVICE;
	d->ordinal = d->asked < 0 || d->asked >= d->count ? 0 : d->asked;
	d->result = drv.DeviceGet(&d->device, d->ordinal);
	if (!d->result)
		d->result = drv.DevicePrimaryCtxRetain(&d->ctx, d->device);
	return d->result ? GDAK_CUDA_NO_CONTEXT : GDAK_CUDA_READY;
}

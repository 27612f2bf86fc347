/* SPDX-License-Identifier: MIT */
/*
 * capture_cuda_fake.c - a stand-in libcuda.so.1 for machines without a GPU,
 * just large enough for gdak_capture_cuda and core/trace/capture_cuda.c, so
 * their real dlopen / context / stream / copy code runs in CI
 * (gdak.capture.cuda_fake; on a GPU machine gdak.capture.cuda runs the same
 * binary against the real driver).
 *
 * Stricter than convenient where the real driver is strict:
 *   - "device memory" is a memfd mapped twice: the addresses handed out are
 *     a PROT_NONE view (any host load or store through them faults, as with
 *     real GPU memory), the copies go through a second, writable view;
 *   - every call that needs a current context fails without one
 *     (CUDA_ERROR_INVALID_CONTEXT), and a stream is only usable while the
 *     context it was created in is current;
 *   - copies must lie inside one live allocation (freed memory:
 *     CUDA_ERROR_INVALID_VALUE), and an asynchronous copy's destination in
 *     pinned memory (capture_cuda.c promises one DMA).
 * Everything runs synchronously; streams do nothing else.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define DEV_LEN (64u << 20)
#define MAX_ALLOCS 4096
#define DEVICE_NAME "gdak fake CUDA device"
#define API __attribute__((visibility("default")))
/* The exported functions are the driver's ABI, looked up by dlsym; there is
 * no header of ours to declare them in (cuda.h's types are not used). */
#pragma GCC diagnostic ignored "-Wmissing-prototypes"

#include "fake_cuda_mem.h"

struct fctx {
	int magic;
};
struct fstream {
	struct fctx *ctx;
	unsigned flags;
};

/* the test prints that it runs on this (and no GPU) */
__attribute__((visibility("default"))) int gdak_fake_cuda = 1;

static struct fctx primary_ctx = {0x5ca1ab1e};
static __thread struct fctx *current;

/* [p, p + 1) in pinned host memory; under lock */
static int host_pinned(const void *p)
{
	return pinned((devptr)(uintptr_t)p, 1);
}

static int need_ctx(void)
{
	if (!inited)
		return E_NOT_INITIALIZED;
	return current ? OK : E_INVALID_CONTEXT;
}

API int cuInit(unsigned flags)
{
	(void)flags;
	return fake_init();
}

API int cuDriverGetVersion(int *v)
{
	*v = 12000;
	return OK;
}

API int cuDevicePrimaryCtxRetain(struct fctx **c, int dev)
{
	if (!inited)
		return E_NOT_INITIALIZED;
	if (dev != 0)
		return E_INVALID_VALUE;
	*c = &primary_ctx;
	return OK;
}

API int cuCtxSetCurrent(struct fctx *c)
{
	current = c;
	return OK;
}

API int cuCtxGetCurrent(struct fctx **c)
{
	*c = current;
	return OK;
}

API int cuCtxCreate_v2(struct fctx **c, unsigned flags, int dev)
{
	(void)flags;
	if (!inited)
		return E_NOT_INITIALIZED;
	if (dev != 0)
		return E_INVALID_VALUE;
	*c = calloc(1, sizeof(**c));
	if (!*c)
		return E_OUT_OF_MEMORY;
	(*c)->magic = 0xc7;
	current = *c;
	return OK;
}

API int cuCtxDestroy_v2(struct fctx *c)
{
	if (!c || c == &primary_ctx)
		return E_INVALID_CONTEXT;
	if (current == c)
		current = NULL;
	free(c);
	return OK;
}

API int cuStreamCreate(struct fstream **s, unsigned flags)
{
	int r = need_ctx();

	if (r)
		return r;
	*s = calloc(1, sizeof(**s));
	if (!*s)
		return E_OUT_OF_MEMORY;
	(*s)->ctx = current;
	(*s)->flags = flags;
	return OK;
}

static int stream_ok(struct fstream *s)
{
	int r = need_ctx();

	if (r)
		return r;
	/* a stream of another context than the current one */
	return s && s->ctx == current ? OK : E_INVALID_HANDLE;
}

API int cuStreamDestroy_v2(struct fstream *s)
{
	int r = stream_ok(s);

	if (!r)
		free(s);
	return r;
}

API int cuStreamSynchronize(struct fstream *s) { return stream_ok(s); }

static int copy(void *dst, const void *src, size_t len, int to_dev)
{
	uint8_t *d;

	pthread_mutex_lock(&lock);
	d = dev_rw((devptr)(uintptr_t)(to_dev ? dst : src), len);
	if (d) {
		if (to_dev)
			memcpy(d, src, len);
		else
			memcpy(dst, d, len);
	}
	pthread_mutex_unlock(&lock);
	return d ? OK : E_INVALID_VALUE;
}

API int cuMemcpyHtoD_v2(devptr dst, const void *src, size_t len)
{
	int r = need_ctx();

	return r ? r : copy((void *)(uintptr_t)dst, src, len, 1);
}

API int cuMemcpyDtoH_v2(void *dst, devptr src, size_t len)
{
	int r = need_ctx();

	return r ? r : copy(dst, (const void *)(uintptr_t)src, len, 0);
}

/*
 * Test hook (gdak_capture_cuda, fake driver only): the next asynchronous
 * copy of at least `at` bytes copies its first `at` bytes, then calls
 * fn(arg) - the "device" writing meanwhile - then copies the rest.  A read
 * torn by a concurrent write, made deterministic.
 */
static void (*tear_fn)(void *);
static void *tear_arg;
static size_t tear_at;

API void gdak_fake_cuda_tear(size_t at, void (*fn)(void *), void *arg)
{
	pthread_mutex_lock(&lock);
	tear_at = at;
	tear_arg = arg;
	tear_fn = fn;
	pthread_mutex_unlock(&lock);
}

API int cuMemcpyDtoHAsync_v2(void *dst, devptr src, size_t len, struct fstream *s)
{
	void (*fn)(void *) = NULL;
	void *arg = NULL;
	size_t at = 0;
	int r = stream_ok(s), pinned;

	if (r)
		return r;
	/* the real driver would stage a pageable destination; capture_cuda.c
	 * promises pinned memory (one DMA), so hold it to that */
	pthread_mutex_lock(&lock);
	pinned = host_pinned(dst) && host_pinned((const uint8_t *)dst + len - 1);
	if (tear_fn && len >= tear_at) {
		fn = tear_fn;
		arg = tear_arg;
		at = tear_at;
		tear_fn = NULL;
	}
	pthread_mutex_unlock(&lock);
	if (!pinned)
		return E_INVALID_VALUE;
	if (!fn)
		return copy(dst, (const void *)(uintptr_t)src, len, 0);
	r = at ? copy(dst, (const void *)(uintptr_t)src, at, 0) : OK;
	fn(arg);
	if (!r && len > at)
		r = copy((uint8_t *)dst + at, (const void *)(uintptr_t)(src + at), len - at, 0);
	return r;
}

API int cuMemFreeHost(void *p)
{
	int r = need_ctx();

	return r ? r : fake_host_free(p);
}

/* CU_POINTER_ATTRIBUTE_MEMORY_TYPE (2) and _HOST_POINTER (4). */
API int cuPointerGetAttribute(void *data, int attr, devptr p)
{
	int r = E_INVALID_VALUE;

	pthread_mutex_lock(&lock);
	if (dev_rw(p, 1)) {
		if (attr == 2) {
			*(unsigned *)data = 2;	/* CU_MEMORYTYPE_DEVICE */
			r = OK;
		}
	} else if (host_pinned((const void *)(uintptr_t)p)) {
		if (attr == 2)
			*(unsigned *)data = 1;	/* CU_MEMORYTYPE_HOST */
		else if (attr == 4)
			*(void **)data = (void *)(uintptr_t)p;
		r = attr == 2 || attr == 4 ? OK : E_INVALID_VALUE;
	}
	pthread_mutex_unlock(&lock);
	return r;
}

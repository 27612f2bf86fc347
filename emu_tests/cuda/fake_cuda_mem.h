/* SPDX-License-Identifier: MIT */
/*
 * fake_cuda_mem.h - what the two stand-in libcuda.so.1 (capture_cuda_fake.c
 * for the ring capture, gpumem_fake.c for the NIC model's CUDA memory engine)
 * share: the driver's error codes and strings, initialisation, the one
 * device, and "device memory" - a memfd mapped twice, the addresses handed
 * out a PROT_NONE view (a host load or store through one faults, as on real
 * GPU memory), copies through a second, writable view - with its allocation
 * tables, and pinned host memory.  Their contexts, streams and copies differ
 * and stay in each file.
 *
 * The including file defines DEV_LEN, MAX_ALLOCS, API (the exported
 * symbols' visibility) and DEVICE_NAME (what cuDeviceGetName says) first.  Everything here is static: one copy per fake.
 */
#ifndef GDAK_FAKE_CUDA_MEM_H
#define GDAK_FAKE_CUDA_MEM_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

enum {
	OK = 0,
	E_INVALID_VALUE = 1,
	E_OUT_OF_MEMORY = 2,
	E_NOT_INITIALIZED = 3,
	E_INVALID_CONTEXT = 201,
	E_INVALID_HANDLE = 400,
	E_NOT_FOUND = 500,
	E_NOT_READY = 600,
	E_ILLEGAL_ADDRESS = 700,
};

typedef unsigned long long devptr;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int inited;
static uint8_t *dev_view, *rw_view; /* PROT_NONE addresses; the writable copy */
static size_t dev_used;
static struct {
	size_t off, len;
	int live;
} dallocs[MAX_ALLOCS];
static unsigned ndallocs;
static struct {
	void *p;
	size_t len;
} hallocs[MAX_ALLOCS];
static unsigned nhallocs;

/* cuInit: map the device memory once. */
static int fake_init(void)
{
	int r = OK;

	pthread_mutex_lock(&lock);
	if (!inited) {
		int fd = memfd_create("gdak-fake-gpu", 0);

		if (fd < 0 || ftruncate(fd, DEV_LEN)) {
			r = E_OUT_OF_MEMORY;
		} else {
			dev_view = mmap(NULL, DEV_LEN, PROT_NONE, MAP_SHARED, fd, 0);
			rw_view = mmap(NULL, DEV_LEN, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
			if (dev_view == MAP_FAILED || rw_view == MAP_FAILED)
				r = E_OUT_OF_MEMORY;
			else
				inited = 1;
		}
		if (fd >= 0)
			close(fd);
	}
	pthread_mutex_unlock(&lock);
	return r;
}

/* Under lock: the writable address of [p, p + len) when it lies in one live
 * allocation; NULL otherwise. */
static uint8_t *dev_rw(devptr p, size_t len)
{
	uintptr_t a = (uintptr_t)p, base = (uintptr_t)dev_view;

	if (!dev_view || a < base || a + len > base + DEV_LEN || len > DEV_LEN)
		return NULL;
	for (unsigned i = 0; i < ndallocs; i++) {
		size_t off = a - base;

		if (dallocs[i].live && off >= dallocs[i].off &&
		    off + len <= dallocs[i].off + dallocs[i].len)
			return rw_view + off;
	}
	return NULL;
}

/* Under lock: 1 when [p, p + len) lies in one pinned host allocation. */
static int pinned(devptr p, size_t len)
{
	const uint8_t *a = (const uint8_t *)(uintptr_t)p;

	for (unsigned i = 0; i < nhallocs; i++)
		if (a >= (const uint8_t *)hallocs[i].p &&
		    a + len <= (const uint8_t *)hallocs[i].p + hallocs[i].len)
			return 1;
	return 0;
}

/* cuMemAlloc / cuMemFree once the context is checked. */
static int fake_dev_alloc(devptr *p, size_t len)
{
	size_t off;

	pthread_mutex_lock(&lock);
	off = (dev_used + 255) & ~(size_t)255;
	if (!len || off + len > DEV_LEN || ndallocs == MAX_ALLOCS) {
		pthread_mutex_unlock(&lock);
		return E_OUT_OF_MEMORY;
	}
	dallocs[ndallocs].off = off;
	dallocs[ndallocs].len = len;
	dallocs[ndallocs++].live = 1;
	dev_used = off + len;
	*p = (devptr)(uintptr_t)(dev_view + off);
	pthread_mutex_unlock(&lock);
	return OK;
}

static int fake_dev_free(devptr p)
{
	int r = E_INVALID_VALUE;

	pthread_mutex_lock(&lock);
	for (unsigned i = 0; i < ndallocs; i++)
		if (dallocs[i].live && (uintptr_t)(dev_view + dallocs[i].off) == (uintptr_t)p) {
			dallocs[i].live = 0;
			r = OK;
		}
	pthread_mutex_unlock(&lock);
	return r;
}

/* cuMemHostAlloc / cuMemFreeHost once the context is checked. */
static int fake_host_alloc(void **p, size_t len)
{
	pthread_mutex_lock(&lock);
	if (nhallocs == MAX_ALLOCS || posix_memalign(p, 4096, len ? len : 1)) {
		pthread_mutex_unlock(&lock);
		return E_OUT_OF_MEMORY;
	}
	hallocs[nhallocs].p = *p;
	hallocs[nhallocs++].len = len;
	pthread_mutex_unlock(&lock);
	return OK;
}

static int fake_host_free(void *p)
{
	int r = E_INVALID_VALUE;

	pthread_mutex_lock(&lock);
	for (unsigned i = 0; i < nhallocs; i++)
		if (hallocs[i].p == p) {
			hallocs[i] = hallocs[--nhallocs];
			free(p);
			r = OK;
			break;
		}
	pthread_mutex_unlock(&lock);
	return r;
}

/* ---- allocation through a current context -------------------------------
 * need_ctx() is the including library's: 0 when a context is current,
 * else the error the real driver gives. */

static int need_ctx(void);

API int cuMemAlloc_v2(devptr *p, size_t len)
{
	int r = need_ctx();

	return r ? r : fake_dev_alloc(p, len);
}

API int cuMemFree_v2(devptr p)
{
	int r = need_ctx();

	return r ? r : fake_dev_free(p);
}

API int cuMemHostAlloc(void **p, size_t len, unsigned flags)
{
	int r = need_ctx();

	(void)flags;
	return r ? r : fake_host_alloc(p, len);
}

/* ---- the one device ---------------------------------------------------- */

API int cuDeviceGetCount(int *n)
{
	*n = inited ? 1 : 0;
	return inited ? OK : E_NOT_INITIALIZED;
}

API int cuDeviceGet(int *d, int ordinal)
{
	if (!inited)
		return E_NOT_INITIALIZED;
	if (ordinal != 0)
		return E_INVALID_VALUE;
	*d = 0;
	return OK;
}

API int cuDeviceGetName(char *name, int len, int dev)
{
	(void)dev;
	if (len > 0) {
		strncpy(name, DEVICE_NAME, (size_t)len - 1);
		name[len - 1] = '\0';
	}
	return OK;
}

API int cuGetErrorString(int r, const char **s)
{
	switch (r) {
	case OK:
		*s = "no error";
		break;
	case E_INVALID_VALUE:
		*s = "invalid argument (fake driver)";
		break;
	case E_OUT_OF_MEMORY:
		*s = "out of memory (fake driver)";
		break;
	case E_NOT_INITIALIZED:
		*s = "not initialized (fake driver)";
		break;
	case E_INVALID_CONTEXT:
		*s = "invalid device context (fake driver)";
		break;
	case E_INVALID_HANDLE:
		*s = "invalid resource handle (fake driver)";
		break;
	case E_NOT_FOUND:
		*s = "named symbol not found (fake driver)";
		break;
	case E_NOT_READY:
		*s = "not ready (fake driver)";
		break;
	case E_ILLEGAL_ADDRESS:
		*s = "illegal address (fake driver)";
		break;
	default:
		*s = NULL;
		return E_INVALID_VALUE;
	}
	return OK;
}

#endif /* GDAK_FAKE_CUDA_MEM_H */

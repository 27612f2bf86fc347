/* SPDX-License-Identifier: MIT */
/*
 * gdr_fake.c - a stand-in libgdrapi.so.2 (GDRCopy) next to the stand-in
 * libcuda (gpumem_fake.c), for the CUDA engine's GDRCopy path in CI
 * (gdak.nic.gpu_batch_gdr, gdak.nic.gpu_rings_gdr).  A "mapping" is the
 * stand-in driver's writable view of its device memory (gdak_fake_gpu_rw);
 * its copies run under the stand-in's lock (gdak_fake_gpu_bar_copy), as the
 * device's own operations do.  Strict where GDRCopy is:
 * pins start and end on 64 KiB GPU pages, a mapping covers its whole pin,
 * copies stay inside a mapping, unpinning a mapped buffer fails.
 */
#include <dlfcn.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define API __attribute__((visibility("default")))
#pragma GCC diagnostic ignored "-Wmissing-prototypes"

#define PAGE ((size_t)64 << 10)
#define MAXH 1024

typedef struct {
	unsigned long h;
} gdr_mh_t;

static struct {
	unsigned long addr;
	size_t size;
	uint8_t *va;
	int live, mapped;
} pins[MAXH + 1];
static int token;
static void *(*rw)(unsigned long long p, size_t len);
static void (*bar_copy)(void *dst, const void *src, size_t len);

API void *gdr_open(void)
{
	void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);

	if (lib) {
		*(void **)(&rw) = dlsym(lib, "gdak_fake_gpu_rw");
		*(void **)(&bar_copy) = dlsym(lib, "gdak_fake_gpu_bar_copy");
	}
	return rw && bar_copy ? &token : NULL;
}

API int gdr_close(void *g)
{
	return g == &token ? 0 : -1;
}

API int gdr_pin_buffer(void *g, unsigned long addr, size_t size, uint64_t p2p, uint32_t vas,
		       gdr_mh_t *mh)
{
	(void)p2p;
	(void)vas;
	if (g != &token || (addr & (PAGE - 1)) || !size || (size & (PAGE - 1)) || !rw(addr, size))
		return -1;
	for (unsigned i = 1; i <= MAXH; i++)
		if (!pins[i].live) {
			pins[i].addr = addr;
			pins[i].size = size;
			pins[i].live = 1;
			pins[i].mapped = 0;
			mh->h = i;
			return 0;
		}
	return -1;
}

static int valid(gdr_mh_t mh)
{
	return mh.h >= 1 && mh.h <= MAXH && pins[mh.h].live;
}

API int gdr_unpin_buffer(void *g, gdr_mh_t mh)
{
	if (g != &token || !valid(mh) || pins[mh.h].mapped)
		return -1;
	pins[mh.h].live = 0;
	return 0;
}

API int gdr_map(void *g, gdr_mh_t mh, void **va, size_t size)
{
	if (g != &token || !valid(mh) || pins[mh.h].mapped || size != pins[mh.h].size)
		return -1;
	pins[mh.h].va = (uint8_t *)rw(pins[mh.h].addr, size);
	pins[mh.h].mapped = 1;
	*va = pins[mh.h].va;
	return 0;
}

API int gdr_unmap(void *g, gdr_mh_t mh, void *va, size_t size)
{
	if (g != &token || !valid(mh) || !pins[mh.h].mapped || va != pins[mh.h].va ||
	    size != pins[mh.h].size)
		return -1;
	pins[mh.h].mapped = 0;
	return 0;
}

static int inside(gdr_mh_t mh, const void *p, size_t n)
{
	const uint8_t *a = (const uint8_t *)p;

	return valid(mh) && pins[mh.h].mapped && a >= pins[mh.h].va &&
	       a + n <= pins[mh.h].va + pins[mh.h].size;
}

API int gdr_copy_to_mapping(gdr_mh_t mh, void *map, const void *h, size_t size)
{
	if (!inside(mh, map, size))
		return -1;
	bar_copy(map, h, size);
	return 0;
}

API int gdr_copy_from_mapping(gdr_mh_t mh, void *h, const void *map, size_t size)
{
	if (!inside(mh, map, size))
		return -1;
	bar_copy(h, map, size);
	return 0;
}

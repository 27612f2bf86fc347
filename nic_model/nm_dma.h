/* SPDX-License-Identifier: MIT */
/*
 * nm_dma.h - the NIC model's memory engine: how it allocates device-visible
 * memory and moves bytes between any two registered addresses.
 *
 * nm_dma_host.c is the default (no GPU): HOST and HOST_MAPPED are
 * page-aligned host memory, GPU memory is refused.  A CUDA engine (nm_cuda.c,
 * when built: NM_HAVE_CUDA_DMA) provides pinned mapped host memory, device
 * memory and copies through the CUDA driver API; nm_dma_get() picks it when
 * a GPU is usable.
 */
#ifndef NM_DMA_H
#define NM_DMA_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <gdak/gdak.h>

enum nm_atomic_op {
	NM_ATOMIC_FA = 0,	/* *p += a */
	NM_ATOMIC_CS = 1,	/* if (*p == b) *p = a */
	NM_ATOMIC_MFA = 2,	/* masked fetch-add (a: add, b: field-boundary mask) */
	NM_ATOMIC_MCS = 3,	/* masked compare-swap (see nm_resp.c) */
};

struct nm_dma_ops {
	const char *name;
	int (*alloc)(size_t len, enum gdak_mem_kind kind, void **addr);
	void (*free)(void *addr, size_t len, enum gdak_mem_kind kind);
	/* Synchronous copy; kinds say where each side lives.  0 or -errno. */
	int (*copy)(void *dst, enum gdak_mem_kind dst_kind, const void *src,
		    enum gdak_mem_kind src_kind, size_t len);
	/* 8-byte atomic at an aligned address of the given kind, atomic with
	 * respect to every NIC thread.  *old: value before.  0 or -errno. */
	int (*atomic64)(void *addr, enum gdak_mem_kind kind, enum nm_atomic_op op, uint64_t a,
			uint64_t b, uint64_t am, uint64_t bm, uint64_t *old);
	/* What kind of memory addr is (HOST for anything the engine does not know). */
	enum gdak_mem_kind (*kind_of)(const void *addr);
};

extern const struct nm_dma_ops nm_dma_host_ops;
#ifdef NM_HAVE_CUDA_DMA
/* nm_cuda.c: the CUDA engine, or NULL when no GPU/driver is usable. */
const struct nm_dma_ops *nm_cuda_dma_probe(void);
#endif

/* The engine in use (chosen once). */
const struct nm_dma_ops *nm_dma_get(void);

/* Data path copy: plain memcpy when both sides are host memory. */
static inline int nm_dma_copy(void *dst, uint8_t dst_kind, const void *src, uint8_t src_kind,
			      size_t len)
{
	if (__builtin_expect(dst_kind != GDAK_MEM_GPU && src_kind != GDAK_MEM_GPU, 1)) {
		memcpy(dst, src, len);
		return 0;
	}
	return nm_dma_get()->copy(dst, (enum gdak_mem_kind)dst_kind, src,
				  (enum gdak_mem_kind)src_kind, len);
}

#endif /* NM_DMA_H */

/* SPDX-License-Identifier: MIT */
/* nm_dma_host.c - the default memory engine: host memory only. */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "nm_dma.h"
#include "nm_loc.h"

static int host_alloc(size_t len, enum gdak_mem_kind kind, void **addr)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	void *p = NULL;

	if (kind == GDAK_MEM_GPU) {
		GDAK_ERR("nic", 0, "GPU memory requested but no CUDA engine is usable "
			 "(no GPU, no libcuda.so.1, or built without CUDA)");
		return -ENOTSUP;
	}
	if (len > SIZE_MAX - pg)
		return -ENOMEM;
	/* Page-aligned so that it could be registered with the GPU / an HCA
	 * (HOST_MAPPED is ordinary host memory when no GPU is involved). */
	if (posix_memalign(&p, pg, (len + pg - 1) & ~(pg - 1)))
		return -ENOMEM;
	*addr = p;
	return 0;
}

static void host_free(void *addr, size_t len, enum gdak_mem_kind kind) { free(addr); }

static int host_copy(void *dst, enum gdak_mem_kind dk, const void *src, enum gdak_mem_kind sk,
		     size_t len)
{
	if (dk == GDAK_MEM_GPU || sk == GDAK_MEM_GPU)
		return -ENOTSUP;
	memmove(dst, src, len); /* overlap is legal: see nm_dma_copy */
	return 0;
}

/*
 * Host atomics: C11/GCC atomics on the 8-byte word, so that every NIC thread
 * (and device code on host threads using atomics) sees one total order.
 * The masked variants (nm_dma.h: nm_masked_fa / nm_masked_cs) run as a
 * compare-exchange loop on the whole word, so they are exact and atomic
 * like the plain ones; a masked CS whose compare fails writes nothing.
 */
static int host_atomic64(void *addr, enum gdak_mem_kind kind, enum nm_atomic_op op, uint64_t a,
			 uint64_t b, uint64_t am, uint64_t bm, uint64_t *old)
{
	uint64_t *p = addr, cur, want;

	if (kind == GDAK_MEM_GPU)
		return -ENOTSUP;
	switch (op) {
	case NM_ATOMIC_FA:
		*old = __atomic_fetch_add(p, a, __ATOMIC_SEQ_CST);
		return 0;
	case NM_ATOMIC_CS:
		cur = b;
		__atomic_compare_exchange_n(p, &cur, a, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
		*old = cur;
		return 0;
	case NM_ATOMIC_MFA:
	case NM_ATOMIC_MCS:
		cur = __atomic_load_n(p, __ATOMIC_SEQ_CST);
		for (;;) {
			want = op == NM_ATOMIC_MFA ? nm_masked_fa(cur, a, am)
						   : nm_masked_cs(cur, a, b, am, bm);
			if (want == cur)
				break; /* nothing to write (failed compare, zero add) */
			if (__atomic_compare_exchange_n(p, &cur, want, false, __ATOMIC_SEQ_CST,
							__ATOMIC_SEQ_CST))
				break;
		}
		*old = cur;
		return 0;
	}
	return -EINVAL;
}

static enum gdak_mem_kind host_kind_of(const void *addr) { return GDAK_MEM_HOST; }

/* host memory moves at once: the ticket is done when copy_start returns */
static int host_copy_start(void *dst, enum gdak_mem_kind dk, const void *src,
			   enum gdak_mem_kind sk, size_t len, struct nm_dma_ticket *t)
{
	int r = host_copy(dst, dk, src, sk, len);

	t->done = !r;
	return r;
}

static int host_copy_poll(struct nm_dma_ticket *t) { return t->done ? 1 : -EINVAL; }
static void host_ticket_fini(struct nm_dma_ticket *t) { t->done = 0; }

const struct nm_dma_ops nm_dma_host_ops = {
	.name = "host",
	.alloc = host_alloc,
	.free = host_free,
	.copy = host_copy,
	.atomic64 = host_atomic64,
	.copy_start = host_copy_start,
	.copy_poll = host_copy_poll,
	.ticket_fini = host_ticket_fini,
	.kind_of = host_kind_of,
};

const struct nm_dma_ops *nm_dma_get(void)
{
	static const struct nm_dma_ops *_Atomic chosen;
	const struct nm_dma_ops *d = atomic_load_explicit(&chosen, memory_order_acquire);

	if (__builtin_expect(d != NULL, 1))
		return d;
	d = &nm_dma_host_ops;
#ifdef NM_HAVE_CUDA_DMA
	{
		const struct nm_dma_ops *c = nm_cuda_dma_probe();
		if (c)
			d = c;
	}
#endif
	atomic_store_explicit(&chosen, d, memory_order_release);
	return d;
}

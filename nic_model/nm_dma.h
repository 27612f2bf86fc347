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

/*
 * The operand names follow the masked-atomic segment (<gdak/mlx5.h>):
 * a = swap_add, b = compare, am = swap_add_mask, bm = compare_mask.
 */
enum nm_atomic_op {
	NM_ATOMIC_FA = 0,	/* *p += a */
	NM_ATOMIC_CS = 1,	/* if (*p == b) *p = a */
	NM_ATOMIC_MFA = 2,	/* *p = nm_masked_fa(*p, a, am): am marks field MSBs */
	NM_ATOMIC_MCS = 3,	/* *p = nm_masked_cs(*p, a, b, am, bm) */
};

/*
 * Masked fetch-add (mlx5 PRM "Masked Atomic Operations", 8-byte form): the
 * word is a vector of fields; a bit set in the boundary mask is the most
 * significant bit of a field, so each field adds on its own and its carry
 * out is dropped (the top field always ends at bit 63; mask 0 is a plain
 * 64-bit add).  Done SWAR-style: adding the words with every field's MSB
 * cleared cannot carry past that MSB position, and the MSBs are then the
 * sum bit without the carry out: old_msb ^ add_msb ^ carry_in.
 */
static inline uint64_t nm_masked_fa(uint64_t old, uint64_t add, uint64_t boundary)
{
	return ((old & ~boundary) + (add & ~boundary)) ^ ((old ^ add) & boundary);
}

/*
 * Masked compare-swap (same PRM section): the compare succeeds when the
 * bits under compare_mask equal those of compare (mask 0: always); then the
 * bits under swap_mask come from swap and the others stay.  On a failed
 * compare the word is unchanged.  Either way the old value is returned.
 */
static inline uint64_t nm_masked_cs(uint64_t old, uint64_t swap, uint64_t compare,
				    uint64_t swap_mask, uint64_t compare_mask)
{
	if ((old ^ compare) & compare_mask)
		return old;
	return (old & ~swap_mask) | (swap & swap_mask);
}

/* One asynchronous copy (copy_start / copy_poll).  ev is the engine's
 * (a CUDA event); done is set once the copy has landed.  Zero-initialise;
 * reuse freely; ticket_fini frees what the engine keeps in it. */
struct nm_dma_ticket {
	void *ev;
	void *batch; /* the CUDA engine's batches (nm_cuda.h) */
	uint64_t seq;
	int done;
	int stream;	/* in: the engine stream to use (-1: any); out: the one used.
			 * Copies on one stream land in order (nm_loop.c chains
			 * copies whose ranges meet this way). */
	int src_busy;	/* in: a copy in flight writes into the source range */
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
	/* Asynchronous copy: 0 once enqueued (t->done may already be 1: the
	 * host engine, host-only copies), or -errno with nothing enqueued.
	 * Copies started on one NIC thread land in the order started.
	 * copy_poll: 1 landed, 0 in flight, -errno failed. */
	int (*copy_start)(void *dst, enum gdak_mem_kind dst_kind, const void *src,
			  enum gdak_mem_kind src_kind, size_t len, struct nm_dma_ticket *t);
	int (*copy_poll)(struct nm_dma_ticket *t);
	void (*ticket_fini)(struct nm_dma_ticket *t);
	/* Optional: nonzero when the engine batches copies into GPU memory
	 * (GDAK_CUDA_BATCH): inline WRITEs then take copy_start too. */
	int (*batching)(void);
	/* Optional (the CUDA engine with GDAK_CUDA_CQE=stream, docs/CUDA.md
	 * "Stream-ordered CQEs"): the last words of a CQE the completer has
	 * built.  words 8-byte values from src go to dst (in that order) after
	 * everything the calling thread's engine has queued - the data of the
	 * WQEs before it.  1: queued on the engine's stream (the caller stores
	 * nothing, now or later); 0: the caller stores them now, because
	 * nothing is queued or because can_defer is 0 (a collapsed or
	 * GPU-memory CQ, memory the GPU cannot write) and the engine waited for
	 * what was queued to land. */
	int (*cqe_tail)(void *dst, const void *src, unsigned words, int can_defer);
	/* Optional: nonzero when the GPU can write [addr, addr + len) (host
	 * memory registered with the driver, at the same address). */
	int (*gpu_writable)(const void *addr, size_t len);
	/* What kind of memory addr is (HOST for anything the engine does not know). */
	enum gdak_mem_kind (*kind_of)(const void *addr);
	/* Optional: an MR on GPU memory was registered and up to nthreads NIC
	 * threads may copy into it: build now, on the caller's thread, what
	 * their first copy would otherwise build in the middle of a pass. */
	void (*gpu_prepare)(unsigned nthreads);
	/* Optional: an MR on GPU memory: map it for the CPU where the engine
	 * can (GDRCopy), as a ConnectX's driver pins GPU memory at
	 * registration.  *key for gpu_unmap, 0 when nothing was mapped (no
	 * GDRCopy, too large, refused, or already mapped). */
	void (*gpu_map)(const void *addr, size_t len, uint64_t *key);
	void (*gpu_unmap)(uint64_t key);
};

extern const struct nm_dma_ops nm_dma_host_ops;
#ifdef NM_HAVE_CUDA_DMA
/* nm_cuda.c: the CUDA engine, or NULL when no GPU/driver is usable. */
const struct nm_dma_ops *nm_cuda_dma_probe(void);
#endif

/* The engine in use (chosen once). */
const struct nm_dma_ops *nm_dma_get(void);

/* Data path copy between host memory: memmove, because a device may
 * legally move bytes between overlapping ranges of one region (a QP looped
 * back to itself); the target then gets the source bytes as they were
 * before, as when the NIC reads the whole message before writing it.  For
 * ranges that do not overlap it costs what memcpy does. */
static inline int nm_dma_copy(void *dst, uint8_t dst_kind, const void *src, uint8_t src_kind,
			      size_t len)
{
	if (__builtin_expect(dst_kind != GDAK_MEM_GPU && src_kind != GDAK_MEM_GPU, 1)) {
		memmove(dst, src, len);
		return 0;
	}
	return nm_dma_get()->copy(dst, (enum gdak_mem_kind)dst_kind, src,
				  (enum gdak_mem_kind)src_kind, len);
}

#endif /* NM_DMA_H */

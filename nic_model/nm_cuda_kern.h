/* SPDX-License-Identifier: MIT */
/*
 * nm_cuda_kern.h - the interface between the CUDA engine's batch builder
 * (nm_cuda.c) and its copy kernel (nm_cuda_copy.cu, embedded as PTX in
 * nm_cuda_copy_ptx.c).  Plain C, read by nvcc and by the C compiler.
 *
 * One launch copies one batch: descriptors sorted by chain, chain c being
 * desc[chain[c]] .. desc[chain[c + 1] - 1]; block c copies chain c's
 * descriptors one after the other (a block barrier between two), so
 * descriptors whose ranges may overlap are put in one chain by the builder
 * and land in the order they were added.  Chains run in parallel, in any
 * order.  Descriptors and chain table live in pinned host memory that is
 * mapped into the GPU at the same address.
 */
#ifndef NM_CUDA_KERN_H
#define NM_CUDA_KERN_H

#include <stdint.h>

#define NM_CK_ENTRY "gdak_nm_copy_batch"
#define NM_CK_THREADS 128 /* threads per block (= per chain) */
#define NM_CK_F_INL 1u	  /* the payload is inl[] (len <= NM_CK_INL), src unused */
#define NM_CK_F_SYS 2u	  /* src is host memory (the batch's staging) */
#define NM_CK_INL 16

struct nm_ck_desc {
	uint64_t dst; /* device address */
	uint64_t src; /* device address (GPU memory or mapped staging) */
	uint32_t len;
	uint32_t flags;
	uint8_t inl[NM_CK_INL];
};

/* kernel arguments, in order: const struct nm_ck_desc *desc,
 * const uint32_t *chain, uint32_t nchain, uint32_t *count (a word of GPU
 * memory, 0 between launches), uint64_t *done (pinned host memory),
 * uint64_t seq; grid nchain x 1 x 1 (at least 1), block NM_CK_THREADS x 1
 * x 1, no dynamic shared memory.
 *
 * The last block to finish (count) writes seq into *done after a
 * system-scope fence: once the CPU reads seq there, every copy of the
 * launch has landed and no block reads its descriptors any more - a
 * completion the CPU sees with one load of host memory, without asking the
 * driver about an event.  count == NULL: no completion word. */

/*
 * The wide copy (GDAK_CUDA_BIG=kernel): one large GPU -> GPU copy - a
 * WRITE too large for a batch - by every block of a grid, 16 bytes a
 * thread and NM_CK_BIG_UNROLL loads in flight, grid-strided.  Arguments,
 * in order: uint64_t dst, uint64_t src (device addresses, both 16-byte
 * aligned; the ranges apart), uint64_t len (any; the bytes past the last
 * 16-byte word are block 0's); grid G x 1 x 1 (at least 1), block
 * NM_CK_BIG_THREADS x 1 x 1, no dynamic shared memory.  No completion word:
 * the stream orders what comes after it.
 */
#define NM_CK_BIG_ENTRY "gdak_nm_copy_big"
#define NM_CK_BIG_THREADS 256
#define NM_CK_BIG_UNROLL 4

#endif /* NM_CUDA_KERN_H */

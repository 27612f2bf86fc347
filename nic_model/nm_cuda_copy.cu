// SPDX-License-Identifier: MIT
/*
 * nm_cuda_copy.cu - the CUDA engine's batch copy kernel (nm_cuda_kern.h).
 * Not compiled into gdak: tools/cuda/gen-copy-ptx.sh turns it into the PTX
 * string of nm_cuda_copy_ptx.c, which the engine loads at run time with
 * cuModuleLoadData (the NIC model builds without a CUDA toolkit).
 *
 * One block per chain.  The block first stages up to NM_CK_THREADS of its
 * descriptors in shared memory with one parallel read (they are in host
 * memory: one PCIe round trip per group, not per descriptor), then copies
 * them in order, every thread a part of each, with a barrier between two
 * descriptors so that a later one's bytes land after an earlier one's.
 *
 * gdak_nm_copy_big: one large copy over the whole grid (nm_cuda_kern.h).
 */
#include "nm_cuda_kern.h"

__device__ static void copy_one(const struct nm_ck_desc *d)
{
	unsigned t = threadIdx.x;
	uint32_t len = d->len;
	uint64_t dst = d->dst, src = d->src;

	if (d->flags & NM_CK_F_INL) {
		for (unsigned i = t; i < len; i += NM_CK_THREADS)
			((volatile uint8_t *)dst)[i] = d->inl[i];
		return;
	}
	if (d->flags & NM_CK_F_SYS) {
		/* staging in host memory, rewritten by the CPU for later batches:
		 * loads that no GPU cache may answer */
		if (((dst | src | len) & 7) == 0) {
			for (uint32_t i = t; i < len / 8; i += NM_CK_THREADS)
				((uint64_t *)dst)[i] = __ldcv((const unsigned long long *)src + i);
		} else {
			for (uint32_t i = t; i < len; i += NM_CK_THREADS)
				((uint8_t *)dst)[i] = __ldcv((const unsigned char *)src + i);
		}
		return;
	}
	if (((dst | src | len) & 15) == 0) {
		for (uint32_t i = t; i < len / 16; i += NM_CK_THREADS)
			((uint4 *)dst)[i] = ((const uint4 *)src)[i];
	} else if (((dst | src | len) & 7) == 0) {
		for (uint32_t i = t; i < len / 8; i += NM_CK_THREADS)
			((uint64_t *)dst)[i] = ((const uint64_t *)src)[i];
	} else if (((dst | src | len) & 3) == 0) {
		for (uint32_t i = t; i < len / 4; i += NM_CK_THREADS)
			((uint32_t *)dst)[i] = ((const uint32_t *)src)[i];
	} else {
		for (uint32_t i = t; i < len; i += NM_CK_THREADS)
			((uint8_t *)dst)[i] = ((const uint8_t *)src)[i];
	}
}

__device__ static void copy_chain(const struct nm_ck_desc *desc, const uint32_t *chain,
				  uint32_t c)
{
	__shared__ struct nm_ck_desc sd[NM_CK_THREADS];
	uint32_t b, e;

	b = __ldcv(chain + c);
	e = __ldcv(chain + c + 1);
	for (uint32_t g = b; g < e; g += NM_CK_THREADS) {
		uint32_t n = e - g < NM_CK_THREADS ? e - g : NM_CK_THREADS;

		if (threadIdx.x < n) {
			/* host memory the CPU rewrites for later batches: uncached loads */
			const unsigned long long *w =
				(const unsigned long long *)&desc[g + threadIdx.x];
			unsigned long long *o = (unsigned long long *)&sd[threadIdx.x];

			for (unsigned k = 0; k < sizeof(struct nm_ck_desc) / 8; k++)
				o[k] = __ldcv(w + k);
		}
		__syncthreads();
		for (uint32_t i = 0; i < n; i++) {
			copy_one(&sd[i]);
			/* the next descriptor of the chain may overwrite these bytes */
			__syncthreads();
		}
	}
}

extern "C" __global__ void __launch_bounds__(NM_CK_THREADS)
gdak_nm_copy_batch(const struct nm_ck_desc *desc, const uint32_t *chain, uint32_t nchain,
		   uint32_t *count, unsigned long long *done, unsigned long long seq)
{
	if (blockIdx.x < nchain)
		copy_chain(desc, chain, blockIdx.x);
	if (!count)
		return;
	/* each thread's stores are visible device-wide before the block
	 * counts itself done */
	__threadfence();
	__syncthreads();
	if (threadIdx.x == 0) {
		if (atomicAdd(count, 1u) == gridDim.x - 1) {
			/* the last block: every other block's stores were fenced
			 * before its increment */
			*count = 0;
			__threadfence_system();
			*(volatile unsigned long long *)done = seq;
		}
	}
}

extern "C" __global__ void __launch_bounds__(NM_CK_BIG_THREADS)
gdak_nm_copy_big(uint4 *__restrict__ dst, const uint4 *__restrict__ src, unsigned long long len)
{
	const unsigned long long n = len / 16;
	const unsigned t = threadIdx.x;
	unsigned long long i = (unsigned long long)blockIdx.x * NM_CK_BIG_THREADS * NM_CK_BIG_UNROLL + t;
	const unsigned long long stride =
		(unsigned long long)gridDim.x * NM_CK_BIG_THREADS * NM_CK_BIG_UNROLL;

	/* whole groups: every load of a group issued before its stores */
	for (; i + (NM_CK_BIG_UNROLL - 1) * NM_CK_BIG_THREADS < n; i += stride) {
		uint4 v[NM_CK_BIG_UNROLL];

#pragma unroll
		for (int k = 0; k < NM_CK_BIG_UNROLL; k++)
			v[k] = src[i + k * NM_CK_BIG_THREADS];
#pragma unroll
		for (int k = 0; k < NM_CK_BIG_UNROLL; k++)
			dst[i + k * NM_CK_BIG_THREADS] = v[k];
	}
	/* the last, partial group of this block's stride */
	for (; i < n; i += NM_CK_BIG_THREADS)
		dst[i] = src[i];
	/* the bytes past the last whole word */
	if (blockIdx.x == 0 && t < (len & 15))
		((uint8_t *)dst)[n * 16 + t] = ((const uint8_t *)src)[n * 16 + t];
}

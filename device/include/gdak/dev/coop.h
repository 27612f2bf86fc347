/* SPDX-License-Identifier: MIT */
/*
 * gdak/dev/coop.h - warp and block execution scopes (CUDA only).
 *
 * The group cooperates on one posting: one lane reserves a WQEBB for every
 * participant, each lane builds its own WQE in its slot, and after a
 * barrier one lane writes the doorbell record and rings once.  Only the
 * group's last WQE is signalled (when any lane asked, or the half-ring rule
 * of rma.h wants it): RC completes in order, so its CQE covers the group.
 *
 * Warp scope: every lane of the warp calls - all 32, or all the lanes a
 * warp has when the block's size is not a multiple of 32 - as with
 * __shfl_sync(0xffffffff, ...).  The lanes need not be converged: the call
 * begins with __syncwarp over that mask, so after a divergent branch (one
 * is the leader-only part of the previous call) the group is still the
 * whole warp, with one reservation and one doorbell.  (Taking the group
 * from __activemask() instead split it: on an H200 the call after
 * gdak_dev_wait_warp ran with lane 0 alone, one doorbell per lane.)
 * Block scope: every thread of the block calls, as with __syncthreads().  The
 * group must not exceed half the send ring (-EINVAL), and each lane's WQE
 * is one WQEBB (put / get of one SGE, put of a value, atomics).
 * Every participant gets the same return code and ticket (the group's end).
 */
#ifndef GDAK_DEV_COOP_H
#define GDAK_DEV_COOP_H

#include <gdak/dev/rma.h>

#if defined(__CUDACC__)

GDAK_DEV unsigned gdak_dev_lane_id(void)
{
	unsigned lane;
	asm volatile("mov.u32 %0, %%laneid;" : "=r"(lane));
	return lane;
}

/* The lanes this warp has: all 32 except in a block's last, partial warp. */
GDAK_DEV unsigned gdak_dev_warp_mask(void)
{
	unsigned nthreads = blockDim.x * blockDim.y * blockDim.z;
	unsigned tid = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
	unsigned first = tid & ~31u, lanes = nthreads - first;
	return lanes >= 32 ? 0xffffffffu : (1u << lanes) - 1;
}

/* Converge the warp and return its mask (see the file comment). */
GDAK_DEV unsigned gdak_dev_warp_enter(void)
{
	const unsigned mask = gdak_dev_warp_mask();
	__syncwarp(mask);
	return mask;
}

/* Core of the warp scope: build(idx, flags) writes this lane's WQE at idx
 * and returns its WQEBB count (must be 1; 0 = refused, a NOP takes the
 * slot so the group's order holds). */
template <typename Build>
__device__ __forceinline__ int gdak_dev_warp_post(struct gdak_dev_qp *qp, uint32_t flags,
						  uint64_t *ticket, Build build)
{
	const unsigned mask = gdak_dev_warp_enter();
	const unsigned lane = gdak_dev_lane_id();
	const int leader = __ffs(mask) - 1;
	const unsigned n = __popc(mask);
	const unsigned rank = __popc(mask & ((1u << lane) - 1));
	unsigned long long s = 0;
	int rc = 0, sig;
	uint32_t f;

	if ((int)lane == leader) {
		uint64_t s64 = 0;
		rc = gdak_dev_sq_acquire(qp, n, &s64);
		s = s64;
	}
	rc = __shfl_sync(mask, rc, leader);
	s = __shfl_sync(mask, s, leader);
	if (rc)
		return rc;
	sig = __any_sync(mask, flags & GDAK_DEV_WQE_SIGNAL) ||
	      gdak_dev_sq_want_signal(qp, s, s + n);
	f = flags & ~GDAK_DEV_WQE_SIGNAL;
	if (rank == n - 1 && sig)
		f |= GDAK_DEV_WQE_SIGNAL;
	if (build((uint64_t)(s + rank), f) != 1)
		gdak_dev_wqe_nop(qp, s + rank, f);
	/* each lane orders its own WQE stores at system scope before the
	 * leader's doorbell record */
	gdak_dev_barrier_wqe_to_dbrec();
	__syncwarp(mask);
	if ((int)lane == leader)
		rc = gdak_dev_sq_publish(qp, s, s + n, s + n - 1, sig);
	rc = __shfl_sync(mask, rc, leader);
	if (ticket)
		*ticket = s + n;
	return rc;
}

/* Core of the block scope; see gdak_dev_warp_post. */
template <typename Build>
__device__ __forceinline__ int gdak_dev_block_post(struct gdak_dev_qp *qp, uint32_t flags,
						   uint64_t *ticket, Build build)
{
	__shared__ uint64_t start;
	__shared__ int result;
	const unsigned n = blockDim.x * blockDim.y * blockDim.z;
	const unsigned rank = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
	uint64_t s;
	int rc, sig;
	uint32_t f;

	if (rank == 0)
		result = gdak_dev_sq_acquire(qp, n, &start);
	sig = __syncthreads_or(flags & GDAK_DEV_WQE_SIGNAL);
	rc = result;
	s = start;
	if (rc) {
		__syncthreads(); /* everyone read result before a next call */
		return rc;
	}
	sig = sig || gdak_dev_sq_want_signal(qp, s, s + n);
	f = flags & ~GDAK_DEV_WQE_SIGNAL;
	if (rank == n - 1 && sig)
		f |= GDAK_DEV_WQE_SIGNAL;
	if (build(s + rank, f) != 1)
		gdak_dev_wqe_nop(qp, s + rank, f);
	gdak_dev_barrier_wqe_to_dbrec();
	__syncthreads();
	if (rank == 0)
		result = gdak_dev_sq_publish(qp, s, s + n, s + n - 1, sig);
	__syncthreads();
	rc = result;
	if (ticket)
		*ticket = s + n;
	__syncthreads();
	return rc;
}

/* ---- the operations, per scope ------------------------------------------------ */

GDAK_DEV int gdak_dev_put_warp(struct gdak_dev_qp *qp, const struct gdak_dev_sge *src,
			       uint64_t raddr, uint32_t rkey, uint32_t flags, uint64_t *ticket)
{
	return gdak_dev_warp_post(qp, flags, ticket, [&](uint64_t idx, uint32_t f) {
		return gdak_dev_wqe_write(qp, idx, f, raddr, rkey, src, 1);
	});
}

GDAK_DEV int gdak_dev_put_block(struct gdak_dev_qp *qp, const struct gdak_dev_sge *src,
				uint64_t raddr, uint32_t rkey, uint32_t flags, uint64_t *ticket)
{
	return gdak_dev_block_post(qp, flags, ticket, [&](uint64_t idx, uint32_t f) {
		return gdak_dev_wqe_write(qp, idx, f, raddr, rkey, src, 1);
	});
}

/* 8-byte value, inline (3 DS: one WQEBB). */
GDAK_DEV int gdak_dev_put_value_warp(struct gdak_dev_qp *qp, uint64_t value, uint64_t raddr,
				     uint32_t rkey, uint32_t flags, uint64_t *ticket)
{
	return gdak_dev_warp_post(qp, flags, ticket, [&](uint64_t idx, uint32_t f) {
		return gdak_dev_wqe_write_inline(qp, idx, f, raddr, rkey, &value, 8);
	});
}

GDAK_DEV int gdak_dev_put_value_block(struct gdak_dev_qp *qp, uint64_t value, uint64_t raddr,
				      uint32_t rkey, uint32_t flags, uint64_t *ticket)
{
	return gdak_dev_block_post(qp, flags, ticket, [&](uint64_t idx, uint32_t f) {
		return gdak_dev_wqe_write_inline(qp, idx, f, raddr, rkey, &value, 8);
	});
}

GDAK_DEV int gdak_dev_get_warp(struct gdak_dev_qp *qp, const struct gdak_dev_sge *dst,
			       uint64_t raddr, uint32_t rkey, uint32_t flags, uint64_t *ticket)
{
	return gdak_dev_warp_post(qp, flags, ticket, [&](uint64_t idx, uint32_t f) {
		return gdak_dev_wqe_read(qp, idx, f, raddr, rkey, dst, 1);
	});
}

GDAK_DEV int gdak_dev_get_block(struct gdak_dev_qp *qp, const struct gdak_dev_sge *dst,
				uint64_t raddr, uint32_t rkey, uint32_t flags, uint64_t *ticket)
{
	return gdak_dev_block_post(qp, flags, ticket, [&](uint64_t idx, uint32_t f) {
		return gdak_dev_wqe_read(qp, idx, f, raddr, rkey, dst, 1);
	});
}

GDAK_DEV int gdak_dev_fetch_add_nbi_warp(struct gdak_dev_qp *qp, uint64_t raddr, uint32_t rkey,
					 uint64_t add, uint64_t *result, uint32_t lkey,
					 uint32_t flags, uint64_t *ticket)
{
	return gdak_dev_warp_post(qp, flags, ticket, [&](uint64_t idx, uint32_t f) {
		return gdak_dev_wqe_fetch_add(qp, idx, f, raddr, rkey, add,
					      (uint64_t)(uintptr_t)result, lkey);
	});
}

/* One lane waits for the group; everyone gets its result. */
GDAK_DEV int gdak_dev_wait_warp(struct gdak_dev_qp *qp, uint64_t ticket, struct gdak_dev_cqe *err)
{
	const unsigned mask = gdak_dev_warp_enter();
	const int leader = __ffs(mask) - 1;
	int rc = 0;
	if ((int)gdak_dev_lane_id() == leader)
		rc = gdak_dev_wait(qp, ticket, err);
	return __shfl_sync(mask, rc, leader);
}

GDAK_DEV int gdak_dev_quiet_warp(struct gdak_dev_qp *qp, struct gdak_dev_cqe *err)
{
	const unsigned mask = gdak_dev_warp_enter();
	const int leader = __ffs(mask) - 1;
	int rc = 0;
	if ((int)gdak_dev_lane_id() == leader)
		rc = gdak_dev_quiet(qp, err);
	return __shfl_sync(mask, rc, leader);
}

GDAK_DEV int gdak_dev_quiet_block(struct gdak_dev_qp *qp, struct gdak_dev_cqe *err)
{
	__shared__ int result;
	int rc;
	if (threadIdx.x == 0 && threadIdx.y == 0 && threadIdx.z == 0)
		result = gdak_dev_quiet(qp, err);
	__syncthreads();
	rc = result;
	__syncthreads();
	return rc;
}

#endif /* __CUDACC__ */
#endif /* GDAK_DEV_COOP_H */

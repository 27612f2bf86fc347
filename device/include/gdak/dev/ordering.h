/* SPDX-License-Identifier: MIT */
/*
 * gdak/dev/ordering.h - memory ordering for device code, named by intent.
 *
 * The "NIC" reading our WQEs and doorbell records is either a CPU thread (the
 * NIC model) or a PCIe device, and the queues live in host memory, so every
 * ordering here is at system scope: PTX .sys under CUDA, C11-model __atomic
 * builtins on the host (gcc, clang and nvcc's host compiler all accept them
 * on plain integer fields, in C11 and in C++17).
 *
 * Three barriers carry the mlx5 posting protocol:
 *   gdak_dev_barrier_wqe_to_dbrec()    WQE stores   -> doorbell record store
 *   gdak_dev_barrier_dbrec_to_db()     record store -> doorbell register store
 *   gdak_dev_barrier_cqe_after_owner() owner check  -> CQE body loads
 * (rdma-core calls them udma_to_device_barrier, mmio_wc_start and
 * udma_from_device_barrier.)  The rest are release/acquire/relaxed accessors
 * of 8..64-bit words, two atomics for shared queues, a back-off and a clock.
 */
#ifndef GDAK_DEV_ORDERING_H
#define GDAK_DEV_ORDERING_H

#include <stdint.h>

#ifndef GDAK_DEV
#if defined(__CUDACC__)
#define GDAK_DEV __device__ __forceinline__
#else
#define GDAK_DEV static inline __attribute__((always_inline, unused))
#endif
#endif

/* Code compiled for the GPU (nvcc's device pass). */
#if defined(__CUDA_ARCH__)
#define GDAK_DEV_ON_GPU 1
#else
#define GDAK_DEV_ON_GPU 0
#endif

#if GDAK_DEV_ON_GPU && __CUDA_ARCH__ < 700
#error "gdak device code needs sm_70 or newer (ld.acquire/st.release .sys, __nanosleep)"
#endif

#if !GDAK_DEV_ON_GPU
#include <time.h>
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif
#include <sched.h>
#endif

/*
 * ThreadSanitizer does not model stand-alone fences (gcc warns, -Wtsan).
 * Under it the host barriers below shrink to compiler barriers: every place
 * gdak relies on them is also a release store or an acquire load, which is
 * what TSan checks.
 */
#if defined(__SANITIZE_THREAD__)
#define GDAK_DEV_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define GDAK_DEV_TSAN 1
#endif
#endif
#ifndef GDAK_DEV_TSAN
#define GDAK_DEV_TSAN 0
#endif
#if GDAK_DEV_TSAN
#define GDAK_DEV_HOST_FENCE_(order) __atomic_signal_fence(order)
#else
#define GDAK_DEV_HOST_FENCE_(order) __atomic_thread_fence(order)
#endif

/* Error branches are cold on the hot path. */
#define gdak_dev_likely(x) __builtin_expect(!!(x), 1)
#define gdak_dev_unlikely(x) __builtin_expect(!!(x), 0)

/* ---- the three barriers of the posting protocol -------------------------- */

/*
 * Orders the stores that wrote WQEs (ring memory) before the store of the
 * send doorbell record: once the NIC sees the new producer index it may
 * fetch every WQE below it.  PRM "Send doorbell record"; rdma-core's
 * udma_to_device_barrier().
 */
GDAK_DEV void gdak_dev_barrier_wqe_to_dbrec(void)
{
#if GDAK_DEV_ON_GPU
	asm volatile("fence.acq_rel.sys;" ::: "memory");
#else
	GDAK_DEV_HOST_FENCE_(__ATOMIC_RELEASE);
#endif
}

/*
 * Orders the doorbell-record store before the doorbell-register write (UAR,
 * write-combining on real hardware): the NIC, woken by the register, must
 * find the record already advanced.  Full fence on the host (mfence also
 * drains write-combining buffers); fence.sc.sys under CUDA.
 */
GDAK_DEV void gdak_dev_barrier_dbrec_to_db(void)
{
#if GDAK_DEV_ON_GPU
	asm volatile("fence.sc.sys;" ::: "memory");
#else
	GDAK_DEV_HOST_FENCE_(__ATOMIC_SEQ_CST);
#endif
}

/*
 * Orders the load that found a CQE software-owned before the loads of the
 * CQE's other bytes (and of the data the completion vouches for): without
 * it a reader may see the new owner bit with a stale body.  rdma-core's
 * udma_from_device_barrier().  The owner loads below are already acquire
 * loads; this is for code that polled with relaxed loads.
 */
GDAK_DEV void gdak_dev_barrier_cqe_after_owner(void)
{
#if GDAK_DEV_ON_GPU
	asm volatile("fence.acq_rel.sys;" ::: "memory");
#else
	GDAK_DEV_HOST_FENCE_(__ATOMIC_ACQUIRE);
#endif
}

/*
 * Orders the doorbell-record store before the doorbell-register store on
 * the posting fast path.  Host threads: a full fence, as
 * gdak_dev_barrier_dbrec_to_db (real UAR pages are write-combining, and WC
 * stores may pass earlier write-back stores).  GPU: a fence.acq_rel.sys by
 * default.  The record's release store orders the WQE stores before the
 * record, but the PTX memory model promises nothing about a later MMIO
 * store to the register: without the fence a ConnectX may see the register
 * before the WQEs it announces (the NIC model would not notice - it works
 * to min(record, register)).  Code that knows its GPU orders them anyway
 * may build with -DGDAK_DEV_NO_RING_FENCE (one system-scope fence less per
 * post; docs/BENCHMARKS-CUDA.md has what it costs on write_lat).
 */
GDAK_DEV void gdak_dev_barrier_dbrec_to_ring(void)
{
#if !GDAK_DEV_ON_GPU
	GDAK_DEV_HOST_FENCE_(__ATOMIC_SEQ_CST);
#elif !defined(GDAK_DEV_NO_RING_FENCE)
	asm volatile("fence.acq_rel.sys;" ::: "memory");
#endif
}

/*
 * Shared QPs: before passing the doorbell turn to the next producer, push
 * this thread's write-combined register stores out (rdma-core's
 * mmio_flush_writes before unlocking the BlueFlame lock): otherwise the HCA
 * may receive the next producer's doorbell before this one.  Host: a full
 * fence (sfence on x86 drains the WC buffers).  GPU: MMIO stores are not
 * write-combined by the SM, but the system-scope fence also keeps the
 * register store ahead of the release of the turn.
 */
GDAK_DEV void gdak_dev_mmio_flush_writes(void)
{
#if GDAK_DEV_ON_GPU
	asm volatile("fence.acq_rel.sys;" ::: "memory");
#else
	GDAK_DEV_HOST_FENCE_(__ATOMIC_SEQ_CST);
#endif
}

/* ---- loads and stores ----------------------------------------------------- */

#if GDAK_DEV_ON_GPU
#define GDAK_DEV_LDST_(bits, cty, rc)                                                         \
	GDAK_DEV cty gdak_dev_load_acquire_u##bits(const cty *p)                              \
	{                                                                                     \
		uint##bits##_t v;                                                             \
		asm volatile("ld.acquire.sys.b" #bits " %0, [%1];"                            \
			     : "=" rc(v) : "l"(p) : "memory");                               \
		return v;                                                                     \
	}                                                                                     \
	GDAK_DEV cty gdak_dev_load_relaxed_u##bits(const cty *p)                              \
	{                                                                                     \
		uint##bits##_t v;                                                             \
		asm volatile("ld.relaxed.sys.b" #bits " %0, [%1];"                            \
			     : "=" rc(v) : "l"(p) : "memory");                               \
		return v;                                                                     \
	}                                                                                     \
	GDAK_DEV void gdak_dev_store_release_u##bits(cty *p, cty v)                           \
	{                                                                                     \
		asm volatile("st.release.sys.b" #bits " [%0], %1;" ::"l"(p), rc(v) : "memory"); \
	}                                                                                     \
	GDAK_DEV void gdak_dev_store_relaxed_u##bits(cty *p, cty v)                           \
	{                                                                                     \
		asm volatile("st.relaxed.sys.b" #bits " [%0], %1;" ::"l"(p), rc(v) : "memory"); \
	}
GDAK_DEV_LDST_(16, uint16_t, "h")
GDAK_DEV_LDST_(32, uint32_t, "r")
GDAK_DEV_LDST_(64, uint64_t, "l")
#undef GDAK_DEV_LDST_
/* PTX has no 8-bit register: load into a 16-bit one. */
GDAK_DEV uint8_t gdak_dev_load_acquire_u8(const uint8_t *p)
{
	uint16_t v;
	asm volatile("ld.acquire.sys.b8 %0, [%1];" : "=h"(v) : "l"(p) : "memory");
	return (uint8_t)v;
}
GDAK_DEV uint8_t gdak_dev_load_relaxed_u8(const uint8_t *p)
{
	uint16_t v;
	asm volatile("ld.relaxed.sys.b8 %0, [%1];" : "=h"(v) : "l"(p) : "memory");
	return (uint8_t)v;
}
#else
#define GDAK_DEV_LDST_(bits, cty)                                                             \
	GDAK_DEV cty gdak_dev_load_acquire_u##bits(const cty *p)                              \
	{                                                                                     \
		return __atomic_load_n(p, __ATOMIC_ACQUIRE);                                  \
	}                                                                                     \
	GDAK_DEV cty gdak_dev_load_relaxed_u##bits(const cty *p)                              \
	{                                                                                     \
		return __atomic_load_n(p, __ATOMIC_RELAXED);                                  \
	}                                                                                     \
	GDAK_DEV void gdak_dev_store_release_u##bits(cty *p, cty v)                           \
	{                                                                                     \
		__atomic_store_n(p, v, __ATOMIC_RELEASE);                                     \
	}                                                                                     \
	GDAK_DEV void gdak_dev_store_relaxed_u##bits(cty *p, cty v)                           \
	{                                                                                     \
		__atomic_store_n(p, v, __ATOMIC_RELAXED);                                     \
	}
GDAK_DEV_LDST_(8, uint8_t)
GDAK_DEV_LDST_(16, uint16_t)
GDAK_DEV_LDST_(32, uint32_t)
GDAK_DEV_LDST_(64, uint64_t)
#undef GDAK_DEV_LDST_
#endif

/*
 * 16 bytes (one WQE data segment, half a CQE tail) in one access: p is
 * 16-byte aligned.  A store of ring memory (weak: the doorbell record's
 * release store orders it), and a load at system scope for CQE bytes read
 * after the owner check (one PCIe read instead of one per field).  The two
 * halves are not one atomic access; callers never rely on that.
 */
GDAK_DEV void gdak_dev_store_16(void *p, uint64_t lo, uint64_t hi)
{
#if GDAK_DEV_ON_GPU
	asm volatile("st.v2.b64 [%0], {%1, %2};" ::"l"(p), "l"(lo), "l"(hi) : "memory");
#else
	uint64_t *q = (uint64_t *)p;
	q[0] = lo;
	q[1] = hi;
#endif
}

GDAK_DEV void gdak_dev_load_relaxed_16(const void *p, uint64_t *lo, uint64_t *hi)
{
#if GDAK_DEV_ON_GPU
	asm volatile("ld.relaxed.sys.v2.b64 {%0, %1}, [%2];"
		     : "=l"(*lo), "=l"(*hi) : "l"(p) : "memory");
#else
	*lo = __atomic_load_n((const uint64_t *)p, __ATOMIC_RELAXED);
	*hi = __atomic_load_n((const uint64_t *)p + 1, __ATOMIC_RELAXED);
#endif
}

/*
 * A store to the doorbell / BlueFlame register.  Under CUDA it is an MMIO
 * store (st.mmio: exactly one write reaches the device, never merged or
 * replayed) where the PTX ISA has it (8.2, CUDA 12.2), else a relaxed system
 * store; on the host an atomic release store (a plain 8-byte store on x86 and
 * a store-release on arm64, as rdma-core writes UAR pages; release so that a
 * NIC-model thread reading the register also sees what came before).
 */
GDAK_DEV void gdak_dev_mmio_store_u64(uint64_t *reg, uint64_t v)
{
#if GDAK_DEV_ON_GPU
#if defined(__CUDACC_VER_MAJOR__) &&                                                          \
	(__CUDACC_VER_MAJOR__ > 12 || (__CUDACC_VER_MAJOR__ == 12 && __CUDACC_VER_MINOR__ >= 2))
	asm volatile("st.mmio.relaxed.sys.global.b64 [%0], %1;" ::"l"(reg), "l"(v) : "memory");
#else
	asm volatile("st.relaxed.sys.b64 [%0], %1;" ::"l"(reg), "l"(v) : "memory");
#endif
#else
	__atomic_store_n(reg, v, __ATOMIC_RELEASE);
#endif
}

/* ---- atomics for shared queues --------------------------------------------- */

/* *p += v, returning the old value; acquire+release at system scope. */
GDAK_DEV uint64_t gdak_dev_fetch_add_u64(uint64_t *p, uint64_t v)
{
#if GDAK_DEV_ON_GPU
	uint64_t old;
	asm volatile("atom.acq_rel.sys.add.u64 %0, [%1], %2;"
		     : "=l"(old) : "l"(p), "l"(v) : "memory");
	return old;
#else
	return __atomic_fetch_add(p, v, __ATOMIC_ACQ_REL);
#endif
}

/* Compare-and-swap; returns the value found (== expect on success). */
GDAK_DEV uint32_t gdak_dev_cas_u32(uint32_t *p, uint32_t expect, uint32_t desired)
{
#if GDAK_DEV_ON_GPU
	uint32_t old;
	asm volatile("atom.acq_rel.sys.cas.b32 %0, [%1], %2, %3;"
		     : "=r"(old) : "l"(p), "r"(expect), "r"(desired) : "memory");
	return old;
#else
	__atomic_compare_exchange_n(p, &expect, desired, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
	return expect;
#endif
}

/* Raise *p to at least v (monotonic high-water marks). */
GDAK_DEV void gdak_dev_max_u64(uint64_t *p, uint64_t v)
{
#if GDAK_DEV_ON_GPU
	asm volatile("red.release.sys.max.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
#else
	uint64_t cur = __atomic_load_n(p, __ATOMIC_RELAXED);
	while (cur < v &&
	       !__atomic_compare_exchange_n(p, &cur, v, 1, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
		;
#endif
}

/* ---- waiting: back-off and a clock ------------------------------------------ */

/*
 * One step of a polite spin.  The NIC model is a CPU thread, and on a small
 * CI machine host threads playing the device share cores with it: after a
 * short burst of pause instructions, yield the CPU.  On the GPU, sleep a
 * little longer each time (capped) so a spinning warp leaves the SM's issue
 * slots to the lanes that make progress.
 */
/* One spin-wait hint to the CPU (pause, yield); nothing on the GPU.  The
 * host spinners (the NIC model's threads, gdak-perf) use it too. */
GDAK_DEV void gdak_dev_cpu_relax(void)
{
#if !GDAK_DEV_ON_GPU
#if defined(__x86_64__) || defined(__i386__)
	_mm_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield" ::: "memory");
#endif
#endif
}

GDAK_DEV void gdak_dev_backoff(uint32_t *spins)
{
	uint32_t n = (*spins)++;
#if GDAK_DEV_ON_GPU
	__nanosleep(n < 8 ? 32u : (n < 64 ? 256u : 1024u));
#else
	if (n < 64) {
		gdak_dev_cpu_relax();
	} else {
		sched_yield();
	}
#endif
}

/* Monotonic nanoseconds: %globaltimer on the GPU, CLOCK_MONOTONIC on the host
 * (C11's timespec_get where POSIX clocks are hidden by a strict -std=c11). */
GDAK_DEV uint64_t gdak_dev_now_ns(void)
{
#if GDAK_DEV_ON_GPU
	uint64_t t;
	asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
	return t;
#else
	struct timespec ts;
#ifdef CLOCK_MONOTONIC
	clock_gettime(CLOCK_MONOTONIC, &ts);
#else
	timespec_get(&ts, TIME_UTC);
#endif
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
#endif
}

/* Deadline for a bounded wait; timeout_ns == GDAK_DEV_FOREVER never expires. */
#define GDAK_DEV_FOREVER UINT64_MAX
GDAK_DEV uint64_t gdak_dev_deadline(uint64_t timeout_ns)
{
	if (timeout_ns == GDAK_DEV_FOREVER)
		return GDAK_DEV_FOREVER;
	return gdak_dev_now_ns() + timeout_ns;
}
/* Checked only every 256 spins: reading the clock costs more than a poll. */
GDAK_DEV int gdak_dev_expired(uint64_t deadline, uint32_t spins)
{
	if (deadline == GDAK_DEV_FOREVER || (spins & 255u) != 255u)
		return 0;
	return gdak_dev_now_ns() >= deadline;
}

#endif /* GDAK_DEV_ORDERING_H */

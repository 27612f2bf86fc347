/* SPDX-License-Identifier: MIT */
/*
 * gdak_mmio.h - CPU stores to device memory (internal to gdak).
 *
 * gdak_wc_flush: stores through a write-combining mapping (a ConnectX
 * doorbell / BlueFlame register, a GDRCopy mapping of GPU memory) pushed
 * out now, and ordered before the stores that follow (rdma-core's
 * mmio_flush_writes): sfence on x86, dsb st on aarch64.
 */
#ifndef GDAK_MMIO_H
#define GDAK_MMIO_H

#include <stdatomic.h>

static inline void gdak_wc_flush(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__asm__ __volatile__("sfence" ::: "memory");
#elif defined(__aarch64__)
	__asm__ __volatile__("dsb st" ::: "memory");
#elif defined(__SANITIZE_THREAD__)
	atomic_signal_fence(memory_order_seq_cst); /* TSan has no thread fence */
#else
	atomic_thread_fence(memory_order_seq_cst);
#endif
}

#endif

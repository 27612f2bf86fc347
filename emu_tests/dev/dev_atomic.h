/* SPDX-License-Identifier: MIT */
/*
 * dev_atomic.h - the 8-byte atomics of the device API's fake NICs
 * (dev_fake.h's loopback thread and dev_cuda.cu's), executed on local
 * memory as one host atomic each: host code only, so that nvcc can take it.
 */
#ifndef GDAK_DEV_ATOMIC_H
#define GDAK_DEV_ATOMIC_H

#include <stdint.h>

#include <gdak/mlx5.h>

/* FETCH_ADD adds sa; COMPARE_SWAP writes sa where cmp stands.  Returns the
 * value found at raddr, in host order (the NIC stores it big-endian). */
__attribute__((unused)) static uint64_t fake_atomic8(uint8_t opcode, uint64_t raddr, uint64_t sa,
						     uint64_t cmp)
{
	uint64_t old = cmp;

	if (opcode == MLX5_OPCODE_ATOMIC_FA)
		return __atomic_fetch_add((uint64_t *)(uintptr_t)raddr, sa, __ATOMIC_ACQ_REL);
	__atomic_compare_exchange_n((uint64_t *)(uintptr_t)raddr, &old, sa, 0, __ATOMIC_ACQ_REL,
				    __ATOMIC_ACQUIRE);
	return old;
}

#endif

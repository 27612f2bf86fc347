/* SPDX-License-Identifier: MIT */
/*
 * gdak_roce_test.h - for the tests that run the RoCE engine (roce.h) with
 * responders of their own: what those responders check of a memory key and
 * what they do with an extended (masked) atomic, the tests' own reading of
 * the semantics, apart from the NIC model's.
 */
#ifndef GDAK_ROCE_TEST_H
#define GDAK_ROCE_TEST_H

#include <stdint.h>
#include <string.h>

#include <gdak/mlx5.h>

#include "roce.h"

/* len bytes at offset va of a size-byte region under rkey, where rw is the
 * region's key for any access and ro its key for reads only (write 0):
 * 0, or the syndrome a responder answers, REMOTE_ACCESS_ERR. */
static inline int roce_test_key_check(uint32_t rkey, uint64_t va, uint64_t len, int write,
				      uint32_t rw, uint32_t ro, uint64_t size)
{
	if (rkey != rw && (rkey != ro || write))
		return MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR;
	if (va > size || len > size - va)
		return MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR;
	return 0;
}

/* x on the x->size bytes at t: MASKED_FETCH_ADD adds swap_add; the masked
 * compare-swap writes swap_add's bits under swap_mask where the bits under
 * cmp_mask equal cmp's.  The value found, in *orig. */
static inline void roce_test_xatomic(const struct roce_xatomic *x, uint8_t *t, uint64_t *orig)
{
	uint64_t v = 0;

	memcpy(&v, t, x->size);
	*orig = v;
	if (x->opcode == ROCE_XMASKED_FETCH_ADD)
		v += x->swap_add;
	else if (!((v ^ x->cmp) & x->cmp_mask))
		v = (v & ~x->swap_mask) | (x->swap_add & x->swap_mask);
	memcpy(t, &v, x->size);
}

#endif

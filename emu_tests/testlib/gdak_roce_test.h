/* SPDX-License-Identifier: MIT */
/*
 * gdak_roce_test.h - for the tests that run the RoCE engine (roce.h) with
 * responders of their own: what those responders do with an extended
 * (masked) atomic, the tests' own reading of the semantics, apart from the
 * NIC model's.
 */
#ifndef GDAK_ROCE_TEST_H
#define GDAK_ROCE_TEST_H

#include <stdint.h>
#include <string.h>

#include "roce.h"

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

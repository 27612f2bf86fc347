/* SPDX-License-Identifier: MIT */
/*
 * core_cqe_owner.c - the CQE ownership rule across many ring wraps.
 *
 * A producer (the "NIC") writes CQE number n into slot n & (ncqe-1) with the
 * owner bit gdak_mlx5_cqe_op_own() gives; a consumer at count c must see the
 * slot as software-owned exactly when the producer has written CQE c, never
 * when the slot still holds the previous pass's CQE (c - ncqe) or the fresh
 * ring's 0xf1.  Run in lock step and with the producer ahead by every
 * distance 0..ncqe, for several ring sizes and past 2^16 and 2^32 counts.
 */
#include <gdak/mlx5.h>
#include "gdak_test.h"

static unsigned failures_before;

static void check_ring(uint32_t ncqe, uint64_t start, unsigned passes)
{
	uint8_t *ring = malloc(ncqe);
	uint64_t prod, cons;

	REQUIRE(ring);
	/* A fresh ring: every entry INVALID with owner 1 (PRM: software
	 * initialises CQEs so the first pass is not mistaken for valid). */
	memset(ring, GDAK_MLX5_CQE_INVALID_OP_OWN, ncqe);
	/* Pretend the ring has already been used up to `start` (a multiple of
	 * ncqe): the stale entries carry the last pass's owner bit. */
	if (start) {
		for (uint64_t n = start - ncqe; n < start; n++)
			ring[n & (ncqe - 1)] = gdak_mlx5_cqe_op_own(MLX5_CQE_REQ, n, ncqe);
	} else {
		for (uint32_t i = 0; i < ncqe; i++)
			CHECK(!gdak_mlx5_cqe_is_sw_owned(ring[i], i, ncqe));
	}

	prod = cons = start;
	while (cons < start + (uint64_t)passes * ncqe) {
		/* the producer runs ahead by a varying distance, never more
		 * than the ring (the CQ-overrun rule) */
		uint64_t ahead = (cons * 2654435761u) % (ncqe + 1);

		while (prod < cons + ahead) {
			uint8_t op = (prod % 3) ? MLX5_CQE_REQ : MLX5_CQE_REQ_ERR;
			ring[prod & (ncqe - 1)] = gdak_mlx5_cqe_op_own(op, prod, ncqe);
			prod++;
		}
		/* every written, unconsumed CQE is visible ... */
		for (uint64_t c = cons; c < prod; c++)
			if (!gdak_mlx5_cqe_is_sw_owned(ring[c & (ncqe - 1)], c, ncqe))
				gdak_test_fail(__FILE__, __LINE__, "ncqe %u: CQE %llu written but not seen",
					       ncqe, (unsigned long long)c);
		/* ... and the next one is not, whatever is left in its slot */
		if (prod - cons < ncqe &&
		    gdak_mlx5_cqe_is_sw_owned(ring[prod & (ncqe - 1)], prod, ncqe))
			gdak_test_fail(__FILE__, __LINE__, "ncqe %u: CQE %llu seen before written",
				       ncqe, (unsigned long long)prod);
		gdak_test_passed++;
		cons = prod > cons ? cons + 1 + (prod - cons - 1) / 2 : cons;
		if (prod == cons) {
			ring[prod & (ncqe - 1)] = gdak_mlx5_cqe_op_own(MLX5_CQE_REQ, prod, ncqe);
			prod++;
		}
	}
	free(ring);
}

static void op_own_bits(void)
{
	/* opcode in bits 7:4, owner = wrap parity of n */
	CHECK_EQ(gdak_mlx5_cqe_op_own(MLX5_CQE_REQ, 0, 8), 0x00);
	CHECK_EQ(gdak_mlx5_cqe_op_own(MLX5_CQE_REQ, 7, 8), 0x00);
	CHECK_EQ(gdak_mlx5_cqe_op_own(MLX5_CQE_REQ, 8, 8), 0x01);
	CHECK_EQ(gdak_mlx5_cqe_op_own(MLX5_CQE_REQ_ERR, 15, 8), 0xd1);
	CHECK_EQ(gdak_mlx5_cqe_op_own(MLX5_CQE_RESP_SEND, 16, 8), 0x20);
	CHECK_EQ(gdak_mlx5_cqe_op_own(MLX5_CQE_RESP_ERR, (1ull << 32) + 8, 8), 0xe1);

	/* INVALID is never software's, whatever the owner bit */
	for (uint64_t n = 0; n < 64; n++) {
		CHECK(!gdak_mlx5_cqe_is_sw_owned(0xf0, n, 16));
		CHECK(!gdak_mlx5_cqe_is_sw_owned(0xf1, n, 16));
	}
	/* every valid opcode follows the parity rule */
	for (uint8_t op = 0; op < MLX5_CQE_INVALID; op++) {
		CHECK(gdak_mlx5_cqe_is_sw_owned((uint8_t)(op << 4), 3, 4));
		CHECK(!gdak_mlx5_cqe_is_sw_owned((uint8_t)(op << 4 | 1), 3, 4));
		CHECK(gdak_mlx5_cqe_is_sw_owned((uint8_t)(op << 4 | 1), 4, 4));
		CHECK(!gdak_mlx5_cqe_is_sw_owned((uint8_t)(op << 4), 4, 4));
	}
	/* a fresh ring's first pass finds nothing; its second pass finds
	 * nothing either, because 0xf1 is INVALID */
	CHECK(!gdak_mlx5_cqe_is_sw_owned(GDAK_MLX5_CQE_INVALID_OP_OWN, 0, 4));
	CHECK(!gdak_mlx5_cqe_is_sw_owned(GDAK_MLX5_CQE_INVALID_OP_OWN, 4, 4));
}

int main(void)
{
	static const uint32_t sizes[] = {2, 4, 8, 64, 256, 4096};

	op_own_bits();
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		failures_before = gdak_test_failed;
		check_ring(sizes[i], 0, 40);
		/* the consumer count is 64-bit; the parity bit must come from
		 * n & ncqe at any magnitude */
		check_ring(sizes[i], 1ull << 16, 8);
		check_ring(sizes[i], (1ull << 32) - 2ull * sizes[i], 8);
		CHECK_EQ(gdak_test_failed, failures_before);
	}
	return gdak_test_end();
}

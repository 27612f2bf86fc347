/* SPDX-License-Identifier: MIT */
/*
 * nm_rand.h - unpredictable identifiers of the NIC model (nm_rand.c):
 * QPNs, MR key bytes and first PSNs that a stranger on the wire cannot
 * guess, and that never repeat where a repeat would be a collision.
 */
#ifndef NM_RAND_H
#define NM_RAND_H

#include <stdint.h>

/* 64 bits from the kernel's random source (getrandom), buffered per thread.
 * Never fails: without getrandom it falls back to a clock-seeded generator
 * and logs once. */
uint64_t nm_rand_u64(void);

/* The sequences below are keyed permutations of a process-wide counter:
 * each value looks random to anybody without the key (drawn once per
 * process from getrandom), and no value comes twice before 2^24 draws. */
enum nm_rand_seq {
	NM_RAND_QPN = 0,
	NM_RAND_PSN = 1,
	NM_RAND_NSEQ
};
uint32_t nm_rand_seq24(enum nm_rand_seq seq);
/* The permutation itself (for the test that checks it is one). */
uint32_t nm_rand_perm24(enum nm_rand_seq seq, uint32_t x);

/* An 8-bit MR key variant: 1..255 (0 would make key 0 of slot 0 or
 * MLX5_INVALID_LKEY 0x100 of slot 1), never equal to prev. */
uint8_t nm_rand_key8(uint8_t prev);

#endif /* NM_RAND_H */

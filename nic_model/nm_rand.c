/* SPDX-License-Identifier: MIT */
/*
 * nm_rand.c - random identifiers (nm_rand.h).
 *
 * Why: a QP accepts RoCE packets from its connected peer only
 * (tr_udp.c), but the identifiers a packet must name - the destination
 * QPN, an rkey, the PSN the responder expects - are the second line:
 * counters starting at 0x100 let anybody on the host guess them, and a
 * first PSN computed once and reused after RESET lets stale packets of an
 * earlier connection through.  IBA (9.7.1) recommends a random starting
 * PSN.
 *
 * QPNs and PSNs come from a 24-bit balanced Feistel network (two 12-bit
 * halves, 6 rounds, round keys from getrandom at the first use) applied to
 * a counter: a permutation, so within a process no QPN or first PSN
 * repeats before 2^24 draws, which no random draw could promise.  Not
 * cryptographic - somebody who sees many of them on the wire could work
 * out the keys - but nothing a stranger without the wire can predict.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/random.h>

#include "nm_loc.h"
#include "nm_rand.h"

#define ROUNDS 6

static pthread_once_t key_once = PTHREAD_ONCE_INIT;
static uint64_t round_key[NM_RAND_NSEQ][ROUNDS];
static _Atomic uint32_t seq_ctr[NM_RAND_NSEQ];

static uint64_t mix64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ull;
	x ^= x >> 33;
	return x;
}

/* Fallback when getrandom is missing (old kernels, seccomp): a
 * clock-and-address-seeded generator, good enough to differ per run. */
static void weak_fill(void *buf, size_t len)
{
	static _Atomic uint64_t s;
	uint8_t *p = buf;

	if (!atomic_load(&s))
		atomic_store(&s, nm_now_ns() ^ (uint64_t)(uintptr_t)&s ^ 0x9e3779b97f4a7c15ull);
	while (len) {
		uint64_t v = mix64(atomic_fetch_add(&s, 0x9e3779b97f4a7c15ull));
		size_t n = len < 8 ? len : 8;

		memcpy(p, &v, n);
		p += n;
		len -= n;
	}
}

static void fill(void *buf, size_t len)
{
	static _Atomic int warned;
	uint8_t *p = buf;

	while (len) {
		ssize_t n = getrandom(p, len, 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			if (!atomic_exchange(&warned, 1))
				GDAK_WARN("nic", 0,
					  "getrandom: %s; identifiers from a weaker source",
					  strerror(errno));
			weak_fill(p, len);
			return;
		}
		p += n;
		len -= (size_t)n;
	}
}

uint64_t nm_rand_u64(void)
{
	static __thread uint64_t buf[32];
	static __thread unsigned left;

	if (!left) {
		fill(buf, sizeof(buf));
		left = 32;
	}
	return buf[--left];
}

static void keys_init(void)
{
	fill(round_key, sizeof(round_key));
	/* counters start at a random point too: the first QPN of a run says
	 * nothing about how many came before */
	for (int s = 0; s < NM_RAND_NSEQ; s++)
		atomic_store(&seq_ctr[s], (uint32_t)round_key[s][0] & 0xffffff);
}

uint32_t nm_rand_perm24(enum nm_rand_seq seq, uint32_t x)
{
	uint32_t l = (x >> 12) & 0xfff, r = x & 0xfff;

	pthread_once(&key_once, keys_init);
	for (int i = 0; i < ROUNDS; i++) {
		uint32_t f = (uint32_t)(mix64(round_key[seq][i] ^ r) >> 52) & 0xfff;
		uint32_t t = r;

		r = l ^ f;
		l = t;
	}
	return l << 12 | r;
}

uint32_t nm_rand_seq24(enum nm_rand_seq seq)
{
	pthread_once(&key_once, keys_init);
	return nm_rand_perm24(seq, atomic_fetch_add(&seq_ctr[seq], 1) & 0xffffff);
}

uint8_t nm_rand_key8(uint8_t prev)
{
	for (;;) {
		uint64_t v = nm_rand_u64();

		/* eight tries per draw; a byte is rejected with probability 2/256 */
		for (int i = 0; i < 8; i++, v >>= 8) {
			uint8_t k = (uint8_t)v;

			if (k && k != prev)
				return k;
		}
	}
}

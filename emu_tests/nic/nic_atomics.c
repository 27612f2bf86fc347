/* SPDX-License-Identifier: MIT */
/*
 * nic_atomics.c - 8-byte atomics through the NIC model, checked against
 * known vectors: ATOMIC_FA / ATOMIC_CS, and the masked forms with the mlx5
 * PRM semantics ("Masked Atomic Operations"):
 *   MASKED_FA: the word is a vector of fields; a bit set in the boundary
 *     mask (swap_add_mask) is a field's most significant bit; each field
 *     adds on its own and its carry out is lost.
 *   MASKED_CS: succeeds when the bits under compare_mask equal compare's;
 *     then the bits under swap_mask come from swap, the rest stays.
 * The fetched (original) value arrives big-endian, as ConnectX returns it.
 * Then random vectors against a field-by-field reference written without
 * SWAR tricks, and two NIC threads adding to the same byte fields
 * concurrently (the result is exact only if the masked add is atomic).
 */
#include <pthread.h>

#include "gdak_test.h"
#include "nic_util.h"

static struct gdak_ctx *ctx;
static uint64_t *word, *res;	/* target word (B's memory), fetched values (A's) */
static struct gdak_mr *mw, *mr;
static struct nu_qp a, b;

/* Reference masked FA: split into fields at the set bits, add each modulo
 * its width. */
static uint64_t ref_mfa(uint64_t old, uint64_t add, uint64_t boundary)
{
	uint64_t out = 0;
	unsigned lo = 0;

	for (unsigned bit = 0; bit < 64; bit++) {
		if (!(boundary >> bit & 1) && bit != 63)
			continue;
		{
			unsigned w = bit - lo + 1;
			uint64_t m = w == 64 ? ~0ull : ((1ull << w) - 1);
			uint64_t f = ((old >> lo & m) + (add >> lo & m)) & m;
			out |= f << lo;
		}
		lo = bit + 1;
	}
	return out;
}

static uint64_t ref_mcs(uint64_t old, uint64_t swap, uint64_t cmp, uint64_t smask, uint64_t cmask)
{
	for (unsigned bit = 0; bit < 64; bit++)
		if ((cmask >> bit & 1) && (old >> bit & 1) != (cmp >> bit & 1))
			return old;
	return (old & ~smask) | (swap & smask);
}

/* One masked atomic from A on *word; returns the fetched value (host order). */
static uint64_t masked(uint8_t opcode, uint64_t swap_add, uint64_t compare, uint64_t sa_mask,
		       uint64_t c_mask)
{
	struct gdak_mlx5_cqe_fields f;
	uint16_t idx;

	*res = 0x5a5a5a5a5a5a5a5aull;
	idx = nu_post_masked(&a, opcode, res, gdak_mr_lkey(mr), (uintptr_t)word, gdak_mr_rkey(mw),
			     swap_add, compare, sa_mask, c_mask, NU_SIG);
	nu_ring(&a);
	REQUIRE_EQ(nu_poll(&a, 0, &f, 5000), 0);
	CHECK_EQ(f.opcode, MLX5_CQE_REQ);
	CHECK_EQ(f.wqe_counter, idx);
	CHECK_EQ(f.byte_cnt, 8);
	return gdak_be64toh(*res);
}

struct mfa_vec {
	uint64_t old, add, boundary, want;
};

static void test_masked_fa_vectors(void)
{
	static const struct mfa_vec v[] = {
		/* two 32-bit counters: the low one wraps, its carry is lost */
		{0x00000000ffffffffull, 0x0000000100000001ull, 0x8000000080000000ull,
		 0x0000000100000000ull},
		/* eight byte counters, each + 1 */
		{0x01ff7f80fe0000ffull, 0x0101010101010101ull, 0x8080808080808080ull,
		 0x02008081ff010100ull},
		/* boundary 0: one 64-bit field, a plain add (wraps at 2^64) */
		{0xffffffffffffffffull, 2, 0, 1},
		{0x0123456789abcdefull, 0x1111111111111111ull, 0, 0x123456789abcdf00ull},
		/* irregular fields: bit 0 alone, bits 1..15, bits 16..63 */
		{0x000000000000ffffull, 3, 0x8001ull, 0},
		/* the top field ends at bit 63 even without its bit in the mask */
		{0x7fff0000ffff0000ull, 0x0001000000010000ull, 0x80000000ull,
		 0x8000000000000000ull},
		/* every bit its own field: an XOR */
		{0xf0f0f0f0f0f0f0f0ull, 0xff00ff00ff00ff00ull, ~0ull, 0x0ff00ff00ff00ff0ull},
		/* adding 0 changes nothing */
		{0x1234ull, 0, 0x8080808080808080ull, 0x1234ull},
	};

	for (unsigned i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		CHECK_EQ(ref_mfa(v[i].old, v[i].add, v[i].boundary), v[i].want);
		*word = v[i].old;
		CHECK_EQ(masked(MLX5_OPCODE_ATOMIC_MASKED_FA, v[i].add, 0, v[i].boundary, 0),
			 v[i].old);
		CHECK_EQ(*word, v[i].want);
	}
}

struct mcs_vec {
	uint64_t old, swap, cmp, smask, cmask, want;
};

static void test_masked_cs_vectors(void)
{
	static const struct mcs_vec v[] = {
		/* low 32 bits match; only the top 16 bits are swapped in */
		{0x1122334455667788ull, 0xaabbccdd00000000ull, 0x0000000055667788ull,
		 0xffff000000000000ull, 0x00000000ffffffffull, 0xaabb334455667788ull},
		/* bits outside compare_mask may differ */
		{0x1122334455667788ull, 0x99ull, 0xffffffff55667788ull, 0xffull, 0xffffffffull,
		 0x1122334455667799ull},
		/* mismatch under the mask: nothing written */
		{0x1122334455667788ull, ~0ull, 0x0000000055667789ull, ~0ull, 0xffull,
		 0x1122334455667788ull},
		/* compare_mask 0: always succeeds */
		{0xdeadbeefull, 0x0123456789abcdefull, 0x42ull, ~0ull, 0, 0x0123456789abcdefull},
		/* swap_mask 0: succeeds, writes nothing */
		{0xdeadbeefull, ~0ull, 0xdeadbeefull, 0, ~0ull, 0xdeadbeefull},
		/* full masks: the plain compare-swap */
		{7, 9, 7, ~0ull, ~0ull, 9},
		{7, 9, 8, ~0ull, ~0ull, 7},
		/* scattered bits */
		{0xa5a5a5a5a5a5a5a5ull, 0x5a5a5a5a5a5a5a5aull, 0x0000000000000005ull,
		 0x0f0f0f0f0f0f0f0full, 0x000000000000000full, 0xaaaaaaaaaaaaaaaaull},
	};

	for (unsigned i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		CHECK_EQ(ref_mcs(v[i].old, v[i].swap, v[i].cmp, v[i].smask, v[i].cmask), v[i].want);
		*word = v[i].old;
		CHECK_EQ(masked(MLX5_OPCODE_ATOMIC_MASKED_CS, v[i].swap, v[i].cmp, v[i].smask,
				v[i].cmask), v[i].old);
		CHECK_EQ(*word, v[i].want);
	}
}

/* Random operands against the references; masks of several densities. */
static void test_random(void)
{
	uint64_t s = 0x9e3779b97f4a7c15ull;

	for (unsigned i = 0; i < 300; i++) {
		uint64_t old = gdak_test_rand(&s), x = gdak_test_rand(&s), y = gdak_test_rand(&s);
		uint64_t m1 = gdak_test_rand(&s), m2 = gdak_test_rand(&s);

		if (i % 3 == 1)
			m1 &= gdak_test_rand(&s) & gdak_test_rand(&s); /* sparse boundaries */
		if (i % 4 == 2)
			y = (old & m2) | (y & ~m2); /* a compare that succeeds */
		*word = old;
		CHECK_EQ(masked(MLX5_OPCODE_ATOMIC_MASKED_FA, x, 0, m1, 0), old);
		CHECK_EQ(*word, ref_mfa(old, x, m1));
		*word = old;
		CHECK_EQ(masked(MLX5_OPCODE_ATOMIC_MASKED_CS, x, y, m1, m2), old);
		CHECK_EQ(*word, ref_mcs(old, x, y, m1, m2));
	}
}

/* The plain forms, for contrast: the full-word add carries across. */
static void test_plain(void)
{
	struct gdak_mlx5_cqe_fields f;

	*word = 0x00000000ffffffffull;
	nu_post_atomic(&a, MLX5_OPCODE_ATOMIC_FA, res, gdak_mr_lkey(mr), (uintptr_t)word,
		       gdak_mr_rkey(mw), 0x0000000100000001ull, 0, NU_SIG);
	nu_ring(&a);
	REQUIRE_EQ(nu_poll(&a, 0, &f, 5000), 0);
	CHECK_EQ(gdak_be64toh(*res), 0x00000000ffffffffull);
	CHECK_EQ(*word, 0x0000000200000000ull);
	nu_post_atomic(&a, MLX5_OPCODE_ATOMIC_CS, res, gdak_mr_lkey(mr), (uintptr_t)word,
		       gdak_mr_rkey(mw), 5, 0x0000000200000000ull, NU_SIG);
	nu_ring(&a);
	REQUIRE_EQ(nu_poll(&a, 0, &f, 5000), 0);
	CHECK_EQ(gdak_be64toh(*res), 0x0000000200000000ull);
	CHECK_EQ(*word, 5);
}

/* Two QPs on two NIC threads add 1 to each of eight byte fields of one word. */
#define CONC_ROUNDS 300
static struct nu_qp c[4];
static uint64_t *cres;

static void *adder(void *arg)
{
	unsigned k = (unsigned)(uintptr_t)arg;
	struct nu_qp *q = &c[2 * k];
	unsigned bad = 0;

	for (unsigned r = 0; r < CONC_ROUNDS; r++) {
		struct gdak_mlx5_cqe_fields f;

		nu_post_masked(q, MLX5_OPCODE_ATOMIC_MASKED_FA, &cres[k], gdak_mr_lkey(mr),
			       (uintptr_t)word, gdak_mr_rkey(mw), 0x0101010101010101ull, 0,
			       0x8080808080808080ull, 0, NU_SIG);
		nu_ring(q);
		if (nu_poll(q, 0, &f, 10000) || f.opcode != MLX5_CQE_REQ)
			bad++;
	}
	return (void *)(uintptr_t)bad;
}

static void test_concurrent(void)
{
	pthread_t t[2];
	uint64_t want = 0;

	for (unsigned k = 0; k < 2; k++) {
		struct gdak_qp_attr attr = {.sq_depth = 64, .nic_thread = (int)k};
		REQUIRE_EQ(nu_pair(ctx, &attr, &c[2 * k], &c[2 * k + 1]), 0);
	}
	*word = 0x00ff7f80fe0180ffull;
	for (unsigned i = 0; i < 8; i++) {
		uint64_t f = ((*word >> (8 * i)) + 2 * CONC_ROUNDS) & 0xff;
		want |= f << (8 * i);
	}
	for (unsigned k = 0; k < 2; k++)
		pthread_create(&t[k], NULL, adder, (void *)(uintptr_t)k);
	for (unsigned k = 0; k < 2; k++) {
		void *bad;
		pthread_join(t[k], &bad);
		CHECK_EQ((uintptr_t)bad, 0);
	}
	CHECK_EQ(*word, want);
	for (unsigned i = 0; i < 4; i++)
		nu_destroy(&c[i]);
}

int main(void)
{
	struct gdak_qp_attr attr = {.sq_depth = 64};
	uint8_t *mem;

	gdak_set_log_level(GDAK_LOG_ERROR);
	REQUIRE_EQ(gdak_nic_set_threads(2), 0);
	REQUIRE_EQ(gdak_open("emu", &ctx), 0);
	REQUIRE_EQ(gdak_mem_alloc(ctx, 8192, GDAK_MEM_HOST, (void **)&mem), 0);
	word = (uint64_t *)(void *)mem;
	res = (uint64_t *)(void *)(mem + 4096);
	cres = res + 1;
	REQUIRE_EQ(gdak_mr_reg(ctx, mem, 4096, GDAK_ACCESS_ALL, &mw), 0);
	REQUIRE_EQ(gdak_mr_reg(ctx, mem + 4096, 4096, GDAK_ACCESS_LOCAL_WRITE, &mr), 0);
	REQUIRE_EQ(nu_pair(ctx, &attr, &a, &b), 0);

	test_plain();
	test_masked_fa_vectors();
	test_masked_cs_vectors();
	test_random();
	nu_destroy(&a);
	nu_destroy(&b);
	test_concurrent();

	gdak_mr_dereg(mw);
	gdak_mr_dereg(mr);
	gdak_mem_free(ctx, mem);
	gdak_close(ctx);
	return gdak_test_end();
}

/* SPDX-License-Identifier: MIT */
/*
 * fid_atomic.c - extended atomics as NVSHMEM IBGDA posts them (its
 * ibgda_write_amo_* builders): ATOMIC_MASKED_FA / _CS with ctrl opmod 0x08
 * (4-byte operands, one 16-byte segment, a 4-byte local data segment, DS 4)
 * and opmod 0x09 (8-byte extended: FA with a 16-byte add/boundary segment,
 * DS 4; CS with the 32-byte segment, DS 5).  The target is a native word;
 * the fetched value comes back big-endian in the local buffer, in the
 * operand's size, as ConnectX returns it.  A 4-byte add never carries into
 * the neighbouring word.  Negative twins: an 8-byte local segment on a
 * 4-byte atomic (LOCAL_LENGTH_ERR, atomic_length), a target not 4-byte
 * aligned (REMOTE_INVAL_REQ_ERR, atomic_unaligned), an operand size the
 * model does not know (opmod 0x0a: LOCAL_QP_OP_ERR, atomic_opmod).  The
 * same positive cases again on the RoCE/UDP transport (gdak's ExtAtomicETH,
 * docs/UDP.md), and the unaligned twin there NAKed by the responder.  With
 * argument "verbs" (gdak.rxe.fid_atomic, in the rxe guest): a 4-byte atomic
 * on emu:verbs fails LOCAL_QP_OP_ERR, rule atomic_transport.
 */
#include "fid_util.h"

static struct gdak_ctx *ctx;
static uint32_t tgt[4] __attribute__((aligned(8)));
static uint8_t ret[64] __attribute__((aligned(8)));
static struct gdak_mr *mt, *mr;
static struct nu_qp a, b;
static uint64_t ncqe;

/* ibgda_write_amo_add_wqe (4 bytes) and its CS twin */
static uint64_t amo32(uint8_t opcode, void *target, uint32_t v0, uint32_t v1, uint32_t m0,
		      uint32_t m1, void *local, uint32_t local_len)
{
	uint8_t w[64];

	fid_ctrl(w, GDAK_MLX5_OPMOD_EXT_ATOMIC_4B, (uint16_t)a.pi, opcode, a.qpn, 4, FID_CQ_UPDATE,
		 0);
	fid_raddr(w + 16, (uintptr_t)target, gdak_mr_rkey(mt));
	fid_be32(w + 32, v0); /* FA: add        CS: swap */
	fid_be32(w + 36, v1); /* FA: boundary   CS: compare */
	fid_be32(w + 40, m0); /* FA: reserved   CS: swap mask */
	fid_be32(w + 44, m1); /* FA: reserved   CS: compare mask */
	fid_data(w + 48, local_len, gdak_mr_lkey(mr), local);
	return fid_put(&a, w, 4);
}

static uint64_t amo64_ext_fa(void *target, uint64_t add, uint64_t boundary, void *local)
{
	const uint64_t ops[2] = { add, boundary };

	return fid_atomic8(&a, GDAK_MLX5_OPMOD_EXT_ATOMIC_8B, MLX5_OPCODE_ATOMIC_MASKED_FA,
			   (uintptr_t)target, gdak_mr_rkey(mt), ops, 2, gdak_mr_lkey(mr), local,
			   FID_CQ_UPDATE);
}

static uint64_t amo64_ext_cs(void *target, uint64_t swap, uint64_t cmp, uint64_t sm, uint64_t cm,
			     void *local)
{
	const uint64_t ops[4] = { swap, cmp, sm, cm };

	return fid_atomic8(&a, GDAK_MLX5_OPMOD_EXT_ATOMIC_8B, MLX5_OPCODE_ATOMIC_MASKED_CS,
			   (uintptr_t)target, gdak_mr_rkey(mt), ops, 4, gdak_mr_lkey(mr), local,
			   FID_CQ_UPDATE);
}

/* The pair, both MRs and the context, as each run ends. */
static void close_all(void)
{
	nu_destroy(&a);
	nu_destroy(&b);
	gdak_mr_dereg(mt);
	gdak_mr_dereg(mr);
	gdak_close(ctx);
}

static const uint8_t *complete(uint64_t idx)
{
	const uint8_t *c;

	fid_submit_nvshmem(&a);
	c = fid_cqe_at(&a.d->scq, ncqe++, 5000);
	if (!c) {
		gdak_test_fail(__FILE__, __LINE__, "no CQE for WQE %llu", (unsigned long long)idx);
		return NULL;
	}
	CHECK_EQ(fid_get_be16(c + 60), (uint16_t)idx);
	fid_cq_consumed(&a.d->scq, ncqe);
	return c;
}

static void ok(uint64_t idx)
{
	const uint8_t *c = complete(idx);

	if (c)
		CHECK_EQ(c[63] >> 4, MLX5_CQE_REQ);
}

static void case_ok(void)
{
	uint64_t t64 __attribute__((aligned(8)));
	const uint8_t be_ffffffff[4] = { 0xff, 0xff, 0xff, 0xff };
	const uint8_t be_1[4] = { 0, 0, 0, 1 };
	const uint8_t be_12345678[4] = { 0x12, 0x34, 0x56, 0x78 };

	tgt[0] = 0xffffffffu;
	tgt[1] = 0x11111111u;
	tgt[2] = 5;
	tgt[3] = 0x12345678u;

	/* fetch-add 1 on the low word: wraps to 0, no carry into tgt[1] */
	ok(amo32(MLX5_OPCODE_ATOMIC_MASKED_FA, &tgt[0], 1, 0, 0, 0, ret, 4));
	CHECK_EQ(tgt[0], 0);
	CHECK_EQ(tgt[1], 0x11111111u);
	CHECK_MEM(ret, be_ffffffff, 4);
	CHECK_EQ(ret[4], 0xee); /* only 4 bytes written */

	/* the high word of an 8-byte pair */
	ok(amo32(MLX5_OPCODE_ATOMIC_MASKED_FA, &tgt[1], 0xeeeeeeefu, 0, 0, 0, ret + 8, 4));
	CHECK_EQ(tgt[1], 0);
	CHECK_EQ(tgt[0], 0);

	/* compare-swap (all masks): succeeds, then fails */
	ok(amo32(MLX5_OPCODE_ATOMIC_MASKED_CS, &tgt[2], 9, 5, ~0u, ~0u, ret + 16, 4));
	CHECK_EQ(tgt[2], 9);
	CHECK_MEM(ret + 16, ((const uint8_t[4]){ 0, 0, 0, 5 }), 4);
	ok(amo32(MLX5_OPCODE_ATOMIC_MASKED_CS, &tgt[2], 1, 5, ~0u, ~0u, ret + 16, 4));
	CHECK_EQ(tgt[2], 9);
	/* NVSHMEM's AMO_SET: compare mask 0 (always), swap mask all */
	ok(amo32(MLX5_OPCODE_ATOMIC_MASKED_CS, &tgt[3], 1, 0, ~0u, 0, ret + 24, 4));
	CHECK_EQ(tgt[3], 1);
	CHECK_MEM(ret + 24, be_12345678, 4);
	/* field boundaries: two 16-bit counters in one word */
	tgt[2] = 0x0001ffffu;
	ok(amo32(MLX5_OPCODE_ATOMIC_MASKED_FA, &tgt[2], 0x00010001u, 0x00008000u, 0, 0, ret + 32,
		 4));
	CHECK_EQ(tgt[2], 0x00020000u);
	CHECK_MEM(ret + 32, ((const uint8_t[4]){ 0x00, 0x01, 0xff, 0xff }), 4);
	(void)be_1;

	/* 8-byte extended forms */
	t64 = 0x00000000ffffffffull;
	memcpy(&tgt[0], &t64, 8);
	ok(amo64_ext_fa(&tgt[0], 1, 0, ret + 40));
	memcpy(&t64, &tgt[0], 8);
	CHECK_EQ(t64, 0x0000000100000000ull);
	CHECK_MEM(ret + 40, ((const uint8_t[8]){ 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff }), 8);
	ok(amo64_ext_cs(&tgt[0], 0xabcdull, 0x0000000100000000ull, ~0ull, ~0ull, ret + 48));
	memcpy(&t64, &tgt[0], 8);
	CHECK_EQ(t64, 0xabcdull);
	CHECK_EQ(fid_violations(&a) + fid_violations(&b), 0);
	CHECK_EQ(gdak_qp_state(a.qp), GDAK_QPS_RTS);
}

static void fails(uint64_t idx, uint8_t synd, const char *rule)
{
	const uint8_t *c = complete(idx);

	if (c) {
		CHECK_EQ(c[63] >> 4, MLX5_CQE_REQ_ERR);
		CHECK_EQ(c[55], synd);
	}
	FID_EXPECT_ERROR(&a, rule, synd);
}

static void fresh(void)
{
	struct gdak_qp_attr attr = { .sq_depth = 32, .cq_depth = 32 };

	nu_destroy(&a);
	nu_destroy(&b);
	REQUIRE_EQ(nu_pair(ctx, &attr, &a, &b), 0);
	ncqe = 0;
}

/* "verbs": emu:verbs on the guest's kernel rxe (gdak.rxe.fid_atomic): plain
 * verbs have 8-byte atomics only, so a 4-byte one fails where it is
 * posted, named.  77 without an rxe0. */
static int verbs_case(void)
{
	if (gdak_open("emu:verbs:rxe0", &ctx)) {
		fprintf(stderr, "SKIP: no emu:verbs:rxe0 here (the rxe guest has one)\n");
		return 77;
	}
	REQUIRE_EQ(gdak_mr_reg(ctx, tgt, sizeof(tgt), GDAK_ACCESS_ALL, &mt), 0);
	REQUIRE_EQ(gdak_mr_reg(ctx, ret, sizeof(ret), GDAK_ACCESS_ALL, &mr), 0);
	fresh();
	fails(amo32(MLX5_OPCODE_ATOMIC_MASKED_FA, &tgt[0], 1, 0, 0, 0, ret, 4),
	      MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR, "atomic_transport");
	CHECK_EQ(tgt[0], 0); /* nothing reached the target */
	close_all();
	return gdak_test_end();
}

int main(int argc, char **argv)
{
	uint8_t w[64];

	if (argc > 1 && !strcmp(argv[1], "verbs"))
		return verbs_case();

	REQUIRE_EQ(gdak_nic_set_strict(1), 0);
	REQUIRE_EQ(gdak_open("emu", &ctx), 0);
	REQUIRE_EQ(gdak_mr_reg(ctx, tgt, sizeof(tgt), GDAK_ACCESS_ALL, &mt), 0);
	REQUIRE_EQ(gdak_mr_reg(ctx, ret, sizeof(ret), GDAK_ACCESS_ALL, &mr), 0);
	memset(ret, 0xee, sizeof(ret));
	fresh();
	case_ok();

	fresh();
	fails(amo32(MLX5_OPCODE_ATOMIC_MASKED_FA, &tgt[0], 1, 0, 0, 0, ret, 8),
	      MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR, "atomic_length");
	fresh();
	fails(amo32(MLX5_OPCODE_ATOMIC_MASKED_FA, (uint8_t *)tgt + 2, 1, 0, 0, 0, ret, 4),
	      MLX5_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR, "atomic_unaligned");
	fresh();
	fid_ctrl(w, 0x0a, (uint16_t)a.pi, MLX5_OPCODE_ATOMIC_MASKED_FA, a.qpn, 4, FID_CQ_UPDATE, 0);
	fid_raddr(w + 16, (uintptr_t)tgt, gdak_mr_rkey(mt));
	memset(w + 32, 0, 16);
	fid_data(w + 48, 16, gdak_mr_lkey(mr), ret);
	fails(fid_put(&a, w, 4), MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR, "atomic_opmod");
	close_all();

	/* the packet transport carries them too (strict, no violations) */
	if (gdak_open("emu:udp:127.0.0.1", &ctx) == 0) {
		REQUIRE_EQ(gdak_mr_reg(ctx, tgt, sizeof(tgt), GDAK_ACCESS_ALL, &mt), 0);
		REQUIRE_EQ(gdak_mr_reg(ctx, ret, sizeof(ret), GDAK_ACCESS_ALL, &mr), 0);
		a.qp = b.qp = NULL;
		memset(ret, 0xee, sizeof(ret));
		fresh();
		case_ok();
		fresh();
		fails(amo32(MLX5_OPCODE_ATOMIC_MASKED_FA, (uint8_t *)tgt + 2, 1, 0, 0, 0, ret, 4),
		      MLX5_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR, "udp_remote_nak");
		close_all();
	}
	return gdak_test_end();
}

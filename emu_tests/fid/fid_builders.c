/* SPDX-License-Identifier: MIT */
/*
 * fid_builders.c - gdak's own device builders for what the stacks post
 * (<gdak/dev/wqe.h>: gdak_dev_wqe_wait_cq, _dump, _fetch_add32, _cas32;
 * <gdak/dev/db.h>: gdak_dev_db_value_pi, gdak_dev_sq_ring_pi) write the
 * same bytes as the stacks' builders spelled out in fid_util.h / here, and
 * run on the NIC model: WAIT then a 4-byte CAS on a companion QP behind a
 * DUMP on the main QP, rung with the producer-index doorbell.
 */
#include "fid_util.h"

#include <gdak/dev/db.h>

static struct gdak_ctx *ctx;
static uint32_t word __attribute__((aligned(8)));
static uint8_t buf[256] __attribute__((aligned(8)));
static struct gdak_mr *mw, *mb;

static void bytes(void)
{
	struct nu_qp a, b;
	struct gdak_qp_attr attr = { .sq_depth = 8, .cq_depth = 8 };
	uint8_t want[64], *got;
	uint64_t v;

	REQUIRE_EQ(nu_pair(ctx, &attr, &a, &b), 0);
	got = gdak_dev_wqe_ptr(a.d, 3);

	gdak_dev_wqe_wait_cq(a.d, 3, GDAK_DEV_WQE_SIGNAL, 0x123456, 0xabcdef01);
	fid_ctrl(want, 0, 3, GDAK_MLX5_OPCODE_WAIT, a.qpn, 2, FID_CQ_UPDATE, 0);
	memset(want + 16, 0, 8);
	fid_be32(want + 24, 0xabcdef01);
	fid_be32(want + 28, 0x123456);
	CHECK_MEM(got, want, 32);

	gdak_dev_wqe_dump(a.d, 3, GDAK_DEV_WQE_SIGNAL | GDAK_DEV_WQE_FENCE, 0x1122334455667788ull,
			  1, 0x4242);
	fid_ctrl(want, 0, 3, GDAK_MLX5_OPCODE_DUMP, a.qpn, 2, FID_CQ_UPDATE | MLX5_WQE_CTRL_FENCE,
		 0);
	fid_be32(want + 16, 1);
	fid_be32(want + 20, 0x4242);
	fid_be64(want + 24, 0x1122334455667788ull);
	CHECK_MEM(got, want, 32);

	gdak_dev_wqe_fetch_add32(a.d, 3, 0, 0x1000, 0x77, 5, 0x8000, 0x2000, 0x88);
	fid_ctrl(want, GDAK_MLX5_OPMOD_EXT_ATOMIC_4B, 3, MLX5_OPCODE_ATOMIC_MASKED_FA, a.qpn, 4, 0,
		 0);
	fid_raddr(want + 16, 0x1000, 0x77);
	fid_be32(want + 32, 5);
	fid_be32(want + 36, 0x8000);
	memset(want + 40, 0, 8);
	fid_data(want + 48, 4, 0x88, (const void *)(uintptr_t)0x2000);
	CHECK_MEM(got, want, 64);

	gdak_dev_wqe_cas32(a.d, 3, 0, 0x1000, 0x77, 9, 10, 0x2000, 0x88);
	fid_ctrl(want, GDAK_MLX5_OPMOD_EXT_ATOMIC_4B, 3, MLX5_OPCODE_ATOMIC_MASKED_CS, a.qpn, 4, 0,
		 0);
	fid_be32(want + 32, 10);
	fid_be32(want + 36, 9);
	fid_be32(want + 40, ~0u);
	fid_be32(want + 44, ~0u);
	CHECK_MEM(got, want, 64);

	v = gdak_dev_db_value_pi(a.d, 0x12345);
	CHECK_EQ(v, fid_db_value(a.qpn, 0x12345));
	nu_destroy(&a);
	nu_destroy(&b);
}

static void run(void)
{
	struct gdak_qp_attr attr = { .sq_depth = 16, .cq_depth = 16 };
	struct nu_qp a, b, c, d;
	const uint8_t *e;
	uint64_t i;

	REQUIRE_EQ(nu_pair(ctx, &attr, &a, &b), 0);
	REQUIRE_EQ(nu_pair(ctx, &attr, &c, &d), 0);
	word = 41;
	/* companion: wait for the main QP's CQE 0, then CAS 41 -> 42 */
	i = gdak_dev_sq_reserve(c.d, 1);
	gdak_dev_wqe_wait_cq(c.d, i, 0, a.d->scq.cqn, 0);
	i = gdak_dev_sq_reserve(c.d, 1);
	gdak_dev_wqe_cas32(c.d, i, GDAK_DEV_WQE_SIGNAL, (uintptr_t)&word, gdak_mr_rkey(mw), 41, 42,
			   (uintptr_t)buf, gdak_mr_lkey(mb));
	gdak_dev_sq_update_dbrec(c.d, i + 1);
	gdak_dev_sq_ring_pi(c.d, i + 1);
	/* main: a signalled DUMP */
	i = gdak_dev_sq_reserve(a.d, 1);
	gdak_dev_wqe_dump(a.d, i, GDAK_DEV_WQE_SIGNAL, (uintptr_t)buf, 8, gdak_mr_lkey(mb));
	gdak_dev_sq_submit(a.d, i, i + 1);
	REQUIRE(fid_cqe_at(&a.d->scq, 0, 5000) != NULL);
	e = fid_cqe_at(&c.d->scq, 0, 5000);
	REQUIRE(e != NULL);
	CHECK_EQ(e[63] >> 4, MLX5_CQE_REQ);
	CHECK_EQ(fid_get_be16(e + 60), 1);
	CHECK_EQ(word, 42);
	CHECK_MEM(buf, ((const uint8_t[4]){ 0, 0, 0, 41 }), 4);
	CHECK_EQ(fid_violations(&a) + fid_violations(&c), 0);
	nu_destroy(&a);
	nu_destroy(&b);
	nu_destroy(&c);
	nu_destroy(&d);
}

int main(void)
{
	REQUIRE_EQ(gdak_nic_set_strict(1), 0);
	REQUIRE_EQ(gdak_open("emu", &ctx), 0);
	REQUIRE_EQ(gdak_mr_reg(ctx, &word, sizeof(word), GDAK_ACCESS_ALL, &mw), 0);
	REQUIRE_EQ(gdak_mr_reg(ctx, buf, sizeof(buf), GDAK_ACCESS_ALL, &mb), 0);
	bytes();
	run();
	gdak_mr_dereg(mw);
	gdak_mr_dereg(mb);
	gdak_close(ctx);
	return gdak_test_end();
}

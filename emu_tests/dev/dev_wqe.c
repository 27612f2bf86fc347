/* SPDX-License-Identifier: MIT */
/*
 * dev_wqe.c - every WQE kind gdak/dev/wqe.h builds, decoded with the core/
 * tables and helpers and compared with rdma-core's own segment setters
 * (mlx5dv_set_ctrl_seg, mlx5dv_set_data_seg) where they exist.
 */
#include <infiniband/mlx5dv.h>

#include "gdak_case.h"
#include "gdak_test.h"
#include "dev_fake.h"

#define RADDR 0x7f00deadbeef1000ull
#define RKEY 0xa1b2c3d4u

static const struct gdak_dev_sge sge0 = {0x1122334455667788ull, 4096, 0x01020304u};
static const struct gdak_dev_sge sge1 = {0x0000100000002000ull, 17, 0x0a0b0c0du};

/* Ctrl checks shared by every kind: decode, table DS range, and byte
 * equality with rdma-core's setter. */
static void check_ctrl(struct dev_fake *f, uint64_t idx, uint8_t opcode, uint32_t ds,
		       uint8_t fm_ce_se, uint32_t imm_be)
{
	const struct gdak_mlx5_op_info *oi = gdak_mlx5_op_info(opcode);
	struct mlx5_wqe_ctrl_seg ref;
	struct gdak_mlx5_ctrl c;
	const void *w = gdak_dev_wqe_ptr(&f->qp, idx);

	gdak_mlx5_ctrl_decode((const struct mlx5_wqe_ctrl_seg *)w, &c);
	CHECK_EQ(c.opcode, opcode);
	CHECK_EQ(c.opmod, 0);
	CHECK_EQ(c.wqe_index, idx & 0xffff);
	CHECK_EQ(c.qpn, f->qp.qpn);
	CHECK_EQ(c.ds, ds);
	CHECK_EQ(c.fm_ce_se, fm_ce_se);
	CHECK_EQ(c.imm, imm_be);
	REQUIRE(oi != NULL);
	CHECK(c.ds >= oi->min_ds && c.ds <= oi->max_ds);

	memset(&ref, 0, sizeof(ref));
	mlx5dv_set_ctrl_seg(&ref, (uint16_t)idx, opcode, 0, f->qp.qpn, fm_ce_se, (uint8_t)ds, 0,
			    imm_be);
	CHECK_MEM(w, &ref, sizeof(ref));
}

static void check_data(const void *seg, const struct gdak_dev_sge *s)
{
	struct mlx5_wqe_data_seg ref;
	mlx5dv_set_data_seg(&ref, s->len, s->lkey, (uintptr_t)s->addr);
	CHECK_MEM(seg, &ref, sizeof(ref));
}

static void check_raddr(const void *seg, uint64_t raddr, uint32_t rkey)
{
	uint64_t a;
	uint32_t k;
	gdak_mlx5_raddr_decode((const struct mlx5_wqe_raddr_seg *)seg, &a, &k);
	CHECK_EQ(a, raddr);
	CHECK_EQ(k, rkey);
	CHECK_EQ(((const struct mlx5_wqe_raddr_seg *)seg)->reserved, 0);
}

static void test_sge_kinds(void)
{
	struct dev_fake *f = fake_new(6, 4, GDAK_DEV_DB_DB, GDAK_DEV_EXCLUSIVE);
	struct gdak_dev_qp *qp = &f->qp;
	struct gdak_dev_sge two[2] = {sge0, sge1};
	uint64_t idx = 0x2ffffull; /* low 16 bits 0xffff: the ctrl index truncates */
	uint8_t sig = MLX5_WQE_CTRL_CQ_UPDATE;

	/* RDMA_WRITE, 1 and 2 SGEs, signalled */
	CHECK_EQ(gdak_dev_wqe_write(qp, idx, GDAK_DEV_WQE_SIGNAL, RADDR, RKEY, &sge0, 1), 1);
	check_ctrl(f, idx, MLX5_OPCODE_RDMA_WRITE, 3, sig, 0);
	check_raddr(gdak_dev_wqe_ds(qp, idx, 1), RADDR, RKEY);
	check_data(gdak_dev_wqe_ds(qp, idx, 2), &sge0);
	CHECK_EQ(gdak_dev_wqe_bbs_sge(1, 1), 1);

	CHECK_EQ(gdak_dev_wqe_write(qp, idx + 1, 0, RADDR, RKEY, two, 2), 1);
	check_ctrl(f, idx + 1, MLX5_OPCODE_RDMA_WRITE, 4, 0, 0);
	check_data(gdak_dev_wqe_ds(qp, idx + 1, 2), &sge0);
	check_data(gdak_dev_wqe_ds(qp, idx + 1, 3), &sge1);
	CHECK_EQ(gdak_dev_wqe_bbs_at(qp, idx + 1), 1);

	/* RDMA_WRITE_IMM: imm travels big-endian in ctrl.imm */
	CHECK_EQ(gdak_dev_wqe_write_imm(qp, idx + 2, GDAK_DEV_WQE_SOLICITED, RADDR, RKEY, &sge1, 1,
					0xcafef00du), 1);
	check_ctrl(f, idx + 2, MLX5_OPCODE_RDMA_WRITE_IMM, 3, MLX5_WQE_CTRL_SOLICITED,
		   gdak_htobe32(0xcafef00du));
	check_data(gdak_dev_wqe_ds(qp, idx + 2, 2), &sge1);

	/* SEND / SEND_IMM: no raddr */
	CHECK_EQ(gdak_dev_wqe_send(qp, idx + 3, GDAK_DEV_WQE_SIGNAL, &sge0, 1), 1);
	check_ctrl(f, idx + 3, MLX5_OPCODE_SEND, 2, sig, 0);
	check_data(gdak_dev_wqe_ds(qp, idx + 3, 1), &sge0);
	CHECK_EQ(gdak_dev_wqe_send_imm(qp, idx + 4, 0, two, 2, 7), 1);
	check_ctrl(f, idx + 4, MLX5_OPCODE_SEND_IMM, 3, 0, gdak_htobe32(7));
	check_data(gdak_dev_wqe_ds(qp, idx + 4, 2), &sge1);

	/* RDMA_READ, fenced: gdak emits rdma-core's fence value */
	CHECK_EQ(gdak_dev_wqe_read(qp, idx + 5, GDAK_DEV_WQE_FENCE | GDAK_DEV_WQE_SIGNAL, RADDR,
				   RKEY, &sge1, 1), 1);
	check_ctrl(f, idx + 5, MLX5_OPCODE_RDMA_READ, 3, MLX5_WQE_CTRL_FENCE | sig, 0);
	check_raddr(gdak_dev_wqe_ds(qp, idx + 5, 1), RADDR, RKEY);
	check_data(gdak_dev_wqe_ds(qp, idx + 5, 2), &sge1);
	CHECK((gdak_dev_wqe_fm_ce_se(GDAK_DEV_WQE_FENCE) & GDAK_MLX5_FENCE_MASK) ==
	      GDAK_MLX5_FENCE_SMALL_AND_FENCE);
	CHECK_STR(gdak_mlx5_fence_name(MLX5_WQE_CTRL_FENCE),
		  gdak_mlx5_fence_name(GDAK_MLX5_FENCE_SMALL_AND_FENCE));
	/* a read needs somewhere to land */
	CHECK_EQ(gdak_dev_wqe_read(qp, idx + 6, 0, RADDR, RKEY, NULL, 0), 0);

	/* NOP */
	CHECK_EQ(gdak_dev_wqe_nop(qp, idx + 6, GDAK_DEV_WQE_SIGNAL), 1);
	check_ctrl(f, idx + 6, MLX5_OPCODE_NOP, 1, sig, 0);

	/* the table agrees on which opcodes carry a raddr segment */
	CHECK(gdak_mlx5_op_info(MLX5_OPCODE_RDMA_WRITE)->flags & GDAK_OPF_RADDR);
	CHECK(gdak_mlx5_op_info(MLX5_OPCODE_RDMA_READ)->flags & GDAK_OPF_RADDR);
	CHECK(!(gdak_mlx5_op_info(MLX5_OPCODE_SEND)->flags & GDAK_OPF_RADDR));

	/* too many SGEs for the 6-bit DS field: refused */
	CHECK_EQ(gdak_dev_wqe_write(qp, idx, 0, RADDR, RKEY, two, GDAK_DEV_WQE_MAX_SGE + 1), 0);
	fake_free(f);
}

static void test_atomics(void)
{
	struct dev_fake *f = fake_new(4, 4, GDAK_DEV_DB_DB, GDAK_DEV_EXCLUSIVE);
	struct gdak_dev_qp *qp = &f->qp;
	struct gdak_dev_sge res = {0x5000, 8, 0x99};
	uint64_t sa, cmp;
	const uint64_t *m;

	CHECK_EQ(gdak_dev_wqe_fetch_add(qp, 3, GDAK_DEV_WQE_SIGNAL, RADDR, RKEY, 0x0102030405060708ull,
					res.addr, res.lkey), 1);
	check_ctrl(f, 3, MLX5_OPCODE_ATOMIC_FA, 4, MLX5_WQE_CTRL_CQ_UPDATE, 0);
	check_raddr(gdak_dev_wqe_ds(qp, 3, 1), RADDR, RKEY);
	gdak_mlx5_atomic_decode((const struct mlx5_wqe_atomic_seg *)gdak_dev_wqe_ds(qp, 3, 2), &sa,
				&cmp);
	CHECK_EQ(sa, 0x0102030405060708ull);
	CHECK_EQ(cmp, 0);
	check_data(gdak_dev_wqe_ds(qp, 3, 3), &res);

	CHECK_EQ(gdak_dev_wqe_cas(qp, 4, 0, RADDR, RKEY, 11, 22, res.addr, res.lkey), 1);
	check_ctrl(f, 4, MLX5_OPCODE_ATOMIC_CS, 4, 0, 0);
	gdak_mlx5_atomic_decode((const struct mlx5_wqe_atomic_seg *)gdak_dev_wqe_ds(qp, 4, 2), &sa,
				&cmp);
	CHECK_EQ(sa, 22);  /* swap */
	CHECK_EQ(cmp, 11); /* compare */
	check_data(gdak_dev_wqe_ds(qp, 4, 3), &res);

	/* masked CS: 5 DS, 2 WQEBBs, starting in the ring's last slot (wraps) */
	CHECK_EQ(gdak_dev_wqe_masked_cas(qp, 15, 0, RADDR, RKEY, 1, 0xff, 2, 0xf0, res.addr,
					 res.lkey), 2);
	check_ctrl(f, 15, MLX5_OPCODE_ATOMIC_MASKED_CS, 5, 0, 0);
	m = (const uint64_t *)gdak_dev_wqe_ds(qp, 15, 2);
	CHECK(gdak_dev_wqe_ds(qp, 15, 4) == qp->sq_buf); /* DS 4 continues at slot 0 */
	CHECK_EQ(gdak_be64toh(m[0]), 2);
	CHECK_EQ(gdak_be64toh(m[1]), 1);
	CHECK_EQ(gdak_be64toh(m[2]), 0xf0);
	CHECK_EQ(gdak_be64toh(m[3]), 0xff);
	check_data(gdak_dev_wqe_ds(qp, 15, 4), &res);
	CHECK_EQ(gdak_dev_wqe_bbs_at(qp, 15), 2);

	CHECK_EQ(gdak_dev_wqe_masked_fetch_add(qp, 5, 0, RADDR, RKEY, 5, 0x80, res.addr, res.lkey),
		 2);
	check_ctrl(f, 5, MLX5_OPCODE_ATOMIC_MASKED_FA, 5, 0, 0);
	fake_free(f);
}

static void check_inline(struct dev_fake *f, uint64_t idx, uint32_t k, const uint8_t *data,
			 uint32_t len)
{
	uint32_t nds = gdak_mlx5_inline_ds(len), pos = 0;
	const struct mlx5_wqe_inl_data_seg *h =
		(const struct mlx5_wqe_inl_data_seg *)gdak_dev_wqe_ds(&f->qp, idx, k);
	CHECK_EQ(gdak_be32toh(h->byte_count), len | MLX5_INLINE_SEG);
	for (uint32_t d = 0; d < nds; d++) {
		const uint8_t *b = (const uint8_t *)gdak_dev_wqe_ds(&f->qp, idx, k + d);
		for (uint32_t i = 0; i < 16; i++, pos++) {
			if (pos < 4)
				continue;
			if (pos - 4 < len)
				CHECK_EQ(b[i], data[pos - 4]);
			else
				CHECK_EQ(b[i], 0); /* padding */
		}
	}
}

static void test_inline(void)
{
	struct dev_fake *f = fake_new(3, 3, GDAK_DEV_DB_DB, GDAK_DEV_EXCLUSIVE);
	struct gdak_dev_qp *qp = &f->qp;
	uint8_t data[256];
	uint32_t lens[] = {0, 1, 8, 12, 13, 28, 29, 44, 100, 220};
	gdak_test_fill(data, sizeof(data), 42);

	for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		uint32_t len = lens[i];
		/* start in the last slot so multi-WQEBB WQEs wrap */
		uint64_t idx = 7 + 8 * i;
		uint32_t ds = 2 + gdak_mlx5_inline_ds(len);
		memset(qp->sq_buf, 0xee, 64 * 8);
		CHECK_EQ(gdak_dev_wqe_write_inline(qp, idx, GDAK_DEV_WQE_SIGNAL, RADDR, RKEY, data,
						   len),
			 gdak_mlx5_wqebbs(ds));
		CHECK_EQ(gdak_dev_wqe_bbs_inline(1, len), gdak_mlx5_wqebbs(ds));
		check_ctrl(f, idx, MLX5_OPCODE_RDMA_WRITE, ds, MLX5_WQE_CTRL_CQ_UPDATE, 0);
		check_raddr(gdak_dev_wqe_ds(qp, idx, 1), RADDR, RKEY);
		check_inline(f, idx, 2, data, len);
		CHECK_EQ(gdak_dev_wqe_bbs_at(qp, idx), gdak_mlx5_wqebbs(ds));
		/* bytes beyond the WQE untouched */
		if (gdak_mlx5_wqebbs(ds) < 8)
			CHECK_EQ(((uint8_t *)gdak_dev_wqe_ds(qp, idx, gdak_mlx5_wqebbs(ds) * 4))[0],
				 0xee);
	}

	/* SEND inline, SEND_IMM inline, WRITE_IMM inline */
	CHECK_EQ(gdak_dev_wqe_send_inline(qp, 2, 0, data, 12), 1);
	check_ctrl(f, 2, MLX5_OPCODE_SEND, 2, 0, 0);
	check_inline(f, 2, 1, data, 12);
	CHECK_EQ(gdak_dev_wqe_send_imm_inline(qp, 3, 0, data, 30, 0x12345678u), 1);
	check_ctrl(f, 3, MLX5_OPCODE_SEND_IMM, 4, 0, gdak_htobe32(0x12345678u));
	check_inline(f, 3, 1, data, 30);
	CHECK_EQ(gdak_dev_wqe_write_imm_inline(qp, 4, 0, RADDR, RKEY, data, 5, 9), 1);
	check_ctrl(f, 4, MLX5_OPCODE_RDMA_WRITE_IMM, 3, 0, gdak_htobe32(9));
	check_inline(f, 4, 2, data, 5);

	/* over max_inline: refused, ring untouched */
	memset(qp->sq_buf, 0xee, 64 * 8);
	CHECK_EQ(gdak_dev_wqe_write_inline(qp, 0, 0, RADDR, RKEY, data, qp->max_inline + 1), 0);
	CHECK_EQ(((uint8_t *)qp->sq_buf)[0], 0xee);
	qp->max_inline = 1024;
	/* over the 63-DS WQE limit even when max_inline allows it */
	CHECK_EQ(gdak_dev_wqe_send_inline(qp, 0, 0, data, 63 * 16), 0);
	fake_free(f);
}

static void test_reserve(void)
{
	struct dev_fake *f = fake_new(4, 4, GDAK_DEV_DB_DB, GDAK_DEV_EXCLUSIVE);
	CHECK_EQ(gdak_dev_sq_free_bbs(&f->qp), 16);
	CHECK_EQ(gdak_dev_sq_reserve(&f->qp, 3), 0);
	CHECK_EQ(gdak_dev_sq_reserve(&f->qp, 2), 3);
	CHECK_EQ(gdak_dev_sq_free_bbs(&f->qp), 11);
	f->qp.sq_done = 4;
	CHECK_EQ(gdak_dev_sq_free_bbs(&f->qp), 15);
	CHECK(gdak_dev_wqe_ptr(&f->qp, 17) == (char *)f->qp.sq_buf + 64);
	CHECK(gdak_dev_wqe_ds(&f->qp, 15, 5) == (char *)f->qp.sq_buf + 16);
	fake_free(f);
}

static const struct gdak_case cases[] = { GDAK_CASE(test_sge_kinds), GDAK_CASE(test_atomics),
					  GDAK_CASE(test_inline), GDAK_CASE(test_reserve) };

int main(int argc, char **argv)
{
	return GDAK_TEST_CASES(argc, argv, cases);
}

/* SPDX-License-Identifier: MIT */
/*
 * core_codec.c - mlx5.h encoders and decoders: encode -> decode round trips
 * for every segment and every opcode in the table, plus the exact bytes the
 * encoders produce (the PRM's big-endian layouts, written out by hand here so
 * that a symmetric bug in encode and decode cannot pass).
 */
#include <gdak/gdak.h>
#include <gdak/mlx5.h>
#include "gdak_case.h"
#include "gdak_test.h"

static uint64_t rng = 0x1234567;

static void ctrl_bytes(void)
{
	struct mlx5_wqe_ctrl_seg seg;
	struct gdak_mlx5_ctrl c = {
		.opcode = MLX5_OPCODE_RDMA_WRITE, .opmod = 0xa5, .wqe_index = 0x1234,
		.qpn = 0xabcdef, .ds = 3, .fm_ce_se = MLX5_WQE_CTRL_CQ_UPDATE | GDAK_MLX5_FENCE_FENCE,
		.signature = 0x77, .imm = 0x11223344,
	};
	/* opmod_idx_opcode = be32(opmod<<24 | idx<<8 | opcode), qpn_ds = be32(qpn<<8 | ds) */
	static const uint8_t want[16] = {0xa5, 0x12, 0x34, 0x08, 0xab, 0xcd, 0xef, 0x03,
					 0x77, 0x00, 0x00, 0x48, 0x44, 0x33, 0x22, 0x11};

	memset(&seg, 0xee, sizeof(seg));
	gdak_mlx5_ctrl_encode(&seg, &c);
	CHECK_MEM(&seg, want, 16);

	/* ds is a 6-bit field: larger values must not spill into the qpn */
	c.ds = 0xff;
	gdak_mlx5_ctrl_encode(&seg, &c);
	CHECK_EQ(((uint8_t *)&seg)[6], 0xef);
	CHECK_EQ(((uint8_t *)&seg)[7], 0x3f);
}

static void ctrl_round_trip_every_opcode(void)
{
	size_t n;
	const struct gdak_mlx5_op_info *t = gdak_mlx5_op_table(&n);

	REQUIRE(t && n > 0);
	for (size_t i = 0; i < n; i++) {
		for (int k = 0; k < 64; k++) {
			struct mlx5_wqe_ctrl_seg seg;
			struct gdak_mlx5_ctrl in, out;
			uint64_t r = gdak_test_rand(&rng);

			in.opcode = t[i].opcode;
			in.opmod = (uint8_t)r;
			in.wqe_index = (uint16_t)(k == 0 ? 0 : k == 1 ? 0xffff : r >> 8);
			in.qpn = (uint32_t)(r >> 24) & 0xffffff;
			in.ds = (uint8_t)(t[i].min_ds + (r >> 48) % (t[i].max_ds - t[i].min_ds + 1));
			in.fm_ce_se = (uint8_t)(r >> 56);
			in.signature = (uint8_t)(r >> 40);
			in.imm = (uint32_t)gdak_test_rand(&rng);
			gdak_mlx5_ctrl_encode(&seg, &in);
			memset(&out, 0, sizeof(out));
			gdak_mlx5_ctrl_decode(&seg, &out);
			CHECK_EQ(out.opcode, in.opcode);
			CHECK_EQ(out.opmod, in.opmod);
			CHECK_EQ(out.wqe_index, in.wqe_index);
			CHECK_EQ(out.qpn, in.qpn);
			CHECK_EQ(out.ds, in.ds);
			CHECK_EQ(out.fm_ce_se, in.fm_ce_se);
			CHECK_EQ(out.signature, in.signature);
			CHECK_EQ(out.imm, in.imm);
			/* the opcode sits in the last byte of the first word */
			CHECK_EQ(((uint8_t *)&seg)[3], t[i].opcode);
		}
	}
}

static void raddr_data_atomic(void)
{
	struct mlx5_wqe_raddr_seg ra;
	struct mlx5_wqe_data_seg d;
	struct mlx5_wqe_atomic_seg a;
	static const uint8_t want_ra[16] = {0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08,
					    0xde, 0xad, 0xbe, 0xef, 0, 0, 0, 0};
	static const uint8_t want_d[16] = {0x00, 0x00, 0x10, 0x00, 0x0a, 0x0b, 0x0c, 0x0d,
					   0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88};
	static const uint8_t want_a[16] = {0, 0, 0, 0, 0, 0, 0, 0x05, 0xff, 0xee, 0xdd, 0xcc,
					   0xbb, 0xaa, 0x99, 0x88};

	memset(&ra, 0xee, sizeof(ra));
	gdak_mlx5_raddr_encode(&ra, 0x0102030405060708ull, 0xdeadbeef);
	CHECK_MEM(&ra, want_ra, 16);
	memset(&d, 0xee, sizeof(d));
	gdak_mlx5_data_encode(&d, 0x1122334455667788ull, 4096, 0x0a0b0c0d);
	CHECK_MEM(&d, want_d, 16);
	memset(&a, 0xee, sizeof(a));
	gdak_mlx5_atomic_encode(&a, 5, 0xffeeddccbbaa9988ull);
	CHECK_MEM(&a, want_a, 16);

	for (int k = 0; k < 1000; k++) {
		uint64_t x = gdak_test_rand(&rng), y = gdak_test_rand(&rng), o1, o2;
		uint32_t z = (uint32_t)gdak_test_rand(&rng), w = (uint32_t)(x ^ y), u1, u2;

		gdak_mlx5_raddr_encode(&ra, x, z);
		gdak_mlx5_raddr_decode(&ra, &o1, &u1);
		CHECK_EQ(o1, x);
		CHECK_EQ(u1, z);
		CHECK_EQ(ra.reserved, 0);

		gdak_mlx5_data_encode(&d, y, w, z);
		gdak_mlx5_data_decode(&d, &o1, &u1, &u2);
		CHECK_EQ(o1, y);
		CHECK_EQ(u1, w);
		CHECK_EQ(u2, z);

		gdak_mlx5_atomic_encode(&a, x, y);
		gdak_mlx5_atomic_decode(&a, &o1, &o2);
		CHECK_EQ(o1, x);
		CHECK_EQ(o2, y);
	}
}

static void inline_and_sizes(void)
{
	struct mlx5_wqe_inl_data_seg s;
	static const uint8_t want[4] = {0x80, 0x00, 0x00, 0x2c};

	gdak_mlx5_inline_encode(&s, 44);
	CHECK_MEM(&s, want, 4);
	for (uint32_t len = 0; len < 4096; len += 7) {
		gdak_mlx5_inline_encode(&s, len);
		CHECK_EQ(gdak_be32toh(s.byte_count), len | MLX5_INLINE_SEG);
		CHECK_EQ(gdak_be32toh(s.byte_count) & ~MLX5_INLINE_SEG, len);
	}
	/* 4-byte header + payload, in 16-byte units */
	CHECK_EQ(gdak_mlx5_inline_ds(0), 1);
	CHECK_EQ(gdak_mlx5_inline_ds(12), 1);
	CHECK_EQ(gdak_mlx5_inline_ds(13), 2);
	CHECK_EQ(gdak_mlx5_inline_ds(28), 2);
	CHECK_EQ(gdak_mlx5_inline_ds(29), 3);
	CHECK_EQ(gdak_mlx5_wqebbs(1), 1);
	CHECK_EQ(gdak_mlx5_wqebbs(3), 1); /* RDMA_WRITE, one SGE */
	CHECK_EQ(gdak_mlx5_wqebbs(4), 1); /* atomics */
	CHECK_EQ(gdak_mlx5_wqebbs(5), 2);
	CHECK_EQ(gdak_mlx5_wqebbs(63), 16);
}

static void doorbell_records(void)
{
	uint32_t v = gdak_mlx5_sq_dbrec_value(0x12345);
	const uint8_t *b = (const uint8_t *)&v;

	/* 16-bit producer counter, big-endian in the 32-bit record */
	CHECK_EQ(b[0], 0);
	CHECK_EQ(b[1], 0);
	CHECK_EQ(b[2], 0x23);
	CHECK_EQ(b[3], 0x45);
	CHECK_EQ(gdak_be32toh(gdak_mlx5_sq_dbrec_value(0x10000)), 0);
	v = gdak_mlx5_cq_dbrec_value(0x12345678);
	CHECK_EQ(b[0], 0);
	CHECK_EQ(b[1], 0x34);
	CHECK_EQ(b[2], 0x56);
	CHECK_EQ(b[3], 0x78);
}

static void cqe_decode_success(void)
{
	uint8_t cqe[64];
	struct gdak_mlx5_cqe_fields f;

	memset(cqe, 0, sizeof(cqe));
	cqe[36] = 0xca; cqe[37] = 0xfe; cqe[38] = 0xba; cqe[39] = 0xbe;	/* imm, as stored */
	cqe[44] = 0x00; cqe[45] = 0x01; cqe[46] = 0x02; cqe[47] = 0x03;	/* byte_cnt */
	cqe[56] = 0xff; cqe[57] = 0x12; cqe[58] = 0x34; cqe[59] = 0x56;	/* sop_drop_qpn */
	cqe[60] = 0xab; cqe[61] = 0xcd;					/* wqe_counter */
	cqe[63] = (uint8_t)(MLX5_CQE_RESP_SEND_IMM << 4 | 1);
	gdak_mlx5_cqe_decode(cqe, &f);
	CHECK_EQ(f.opcode, MLX5_CQE_RESP_SEND_IMM);
	CHECK_EQ(f.owner, 1);
	CHECK_EQ(f.wqe_counter, 0xabcd);
	CHECK_EQ(f.qpn, 0x123456); /* the top byte (sop/drop) is not part of the qpn */
	CHECK_EQ(f.byte_cnt, 0x00010203);
	CHECK_MEM(&f.imm, cqe + 36, 4);
	CHECK_EQ(f.syndrome, 0);
	CHECK_EQ(f.wqe_opcode, 0);
}

static void cqe_decode_error(void)
{
	uint8_t cqe[64];
	struct gdak_mlx5_cqe_fields f;
	struct gdak_mlx5_err_cqe *e = (struct gdak_mlx5_err_cqe *)cqe;

	for (int op = MLX5_CQE_REQ_ERR; op <= MLX5_CQE_RESP_ERR; op++) {
		memset(cqe, 0x5a, sizeof(cqe)); /* garbage everywhere else */
		cqe[54] = 0x99;				 /* vendor syndrome */
		cqe[55] = MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR;
		cqe[56] = MLX5_OPCODE_RDMA_READ;	 /* s_wqe_opcode */
		cqe[57] = 0x00; cqe[58] = 0x01; cqe[59] = 0x02; /* qpn */
		cqe[60] = 0x00; cqe[61] = 0x07;
		cqe[63] = (uint8_t)(op << 4);
		gdak_mlx5_cqe_decode(cqe, &f);
		CHECK_EQ(f.opcode, op);
		CHECK_EQ(f.owner, 0);
		CHECK_EQ(f.syndrome, MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR);
		CHECK_EQ(f.vendor_syndrome, 0x99);
		CHECK_EQ(f.wqe_opcode, MLX5_OPCODE_RDMA_READ);
		CHECK_EQ(f.qpn, 0x102);
		CHECK_EQ(f.wqe_counter, 7);
		CHECK_EQ(f.byte_cnt, 0); /* not meaningful in an error CQE */
		CHECK_EQ(e->syndrome, cqe[55]);
		CHECK_EQ(gdak_be16toh(e->wqe_counter), 7);
	}
}

/* Build a whole WQE for every supported opcode the way device code does and
 * read it back through the decoders and the table. */
static void whole_wqe_per_opcode(void)
{
	size_t n;
	const struct gdak_mlx5_op_info *t = gdak_mlx5_op_table(&n);

	for (size_t i = 0; i < n; i++) {
		const struct gdak_mlx5_op_info *oi = &t[i];
		uint8_t wqe[128];
		struct mlx5_wqe_ctrl_seg *ctrl = (void *)wqe;
		uint8_t *p = wqe + 16;
		struct gdak_mlx5_ctrl c = {.opcode = oi->opcode, .wqe_index = (uint16_t)(i * 3),
					   .qpn = 0x42, .fm_ce_se = MLX5_WQE_CTRL_CQ_UPDATE};
		struct gdak_mlx5_ctrl back;
		uint32_t ds = 1;

		if (!(oi->flags & GDAK_OPF_SUPPORTED))
			continue;
		memset(wqe, 0, sizeof(wqe));
		if (oi->flags & GDAK_OPF_RADDR) {
			gdak_mlx5_raddr_encode((void *)p, 0x1000 + i, 0x99);
			p += 16, ds++;
		}
		if (oi->flags & GDAK_OPF_ATOMIC) {
			gdak_mlx5_atomic_encode((void *)p, 1, 2);
			p += 16, ds++;
		}
		if (oi->flags & GDAK_OPF_MASKED) {
			struct gdak_mlx5_masked_atomic_seg *m = (void *)p;
			m->swap_add = gdak_htobe64(1);
			m->compare = gdak_htobe64(2);
			m->swap_add_mask = gdak_htobe64(~0ull);
			m->compare_mask = gdak_htobe64(~0ull);
			p += 32, ds += 2;
		}
		if (oi->opcode == GDAK_MLX5_OPCODE_WAIT) {
			struct gdak_mlx5_wait_seg *ws = (void *)p; /* CQ 0x44, index 9 */
			ws->max_index = gdak_htobe32(9);
			ws->qpn_cqn = gdak_htobe32(0x44);
			p += 16, ds++;
		}
		if (oi->flags & GDAK_OPF_DATA) {
			gdak_mlx5_data_encode((void *)p, 0x2000, oi->flags & GDAK_OPF_ATOMIC ? 8 : 64, 7);
			p += 16, ds++;
		}
		c.ds = (uint8_t)ds;
		gdak_mlx5_ctrl_encode(ctrl, &c);
		gdak_mlx5_ctrl_decode(ctrl, &back);
		CHECK_EQ(back.opcode, oi->opcode);
		CHECK_EQ(back.ds, ds);
		CHECK(back.ds >= oi->min_ds && back.ds <= oi->max_ds);
		CHECK_EQ((size_t)(p - wqe), ds * 16);
		CHECK(gdak_mlx5_op_info(back.opcode) == oi);
		if (oi->flags & GDAK_OPF_RADDR) {
			uint64_t ra;
			uint32_t rk;
			gdak_mlx5_raddr_decode((void *)(wqe + 16), &ra, &rk);
			CHECK_EQ(ra, 0x1000 + i);
			CHECK_EQ(rk, 0x99);
		}
	}
	/* DESIGN.md: RDMA_WRITE with one SGE = 3 DS, atomics = 4 DS */
	CHECK_EQ(gdak_mlx5_op_info(MLX5_OPCODE_ATOMIC_FA)->min_ds, 4);
	CHECK_EQ(gdak_mlx5_op_info(MLX5_OPCODE_ATOMIC_CS)->max_ds, 4);
	CHECK(gdak_mlx5_op_info(MLX5_OPCODE_RDMA_WRITE)->min_ds <= 3);
}

static void byte_order(void)
{
	uint16_t a = 0x1234;
	uint32_t b = 0x12345678;
	uint64_t c = 0x0102030405060708ull;

	CHECK_EQ(gdak_bswap16(a), 0x3412);
	CHECK_EQ(gdak_bswap32(b), 0x78563412);
	CHECK_EQ(gdak_bswap64(c), 0x0807060504030201ull);
	CHECK_EQ(gdak_be64toh(gdak_htobe64(c)), c);
	b = gdak_htobe32(0x01020304);
	CHECK_EQ(((uint8_t *)&b)[0], 1);
}

static const struct gdak_case cases[] = { GDAK_CASE(byte_order),
					  GDAK_CASE(ctrl_bytes),
					  GDAK_CASE(ctrl_round_trip_every_opcode),
					  GDAK_CASE(raddr_data_atomic),
					  GDAK_CASE(inline_and_sizes),
					  GDAK_CASE(doorbell_records),
					  GDAK_CASE(cqe_decode_success),
					  GDAK_CASE(cqe_decode_error),
					  GDAK_CASE(whole_wqe_per_opcode) };

int main(int argc, char **argv)
{
	return GDAK_TEST_CASES(argc, argv, cases);
}

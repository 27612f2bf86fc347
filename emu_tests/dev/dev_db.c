/* SPDX-License-Identifier: MIT */
/*
 * dev_db.c - the doorbell record / register sequence of gdak/dev/db.h, per
 * handler, against a fake descriptor in local memory: record bytes, the
 * 8-byte ctrl write (DB), the 64-byte WQE copy (BF, falling back to DB for
 * batches and multi-WQEBB WQEs), the published producer index (CPU_PROXY).
 */
#include "gdak_case.h"
#include "gdak_test.h"
#include "dev_fake.h"

static const struct gdak_dev_sge sge = {0x1000, 64, 0x42};

/* Record bytes as the NIC reads them: big-endian 16-bit counter in a be32. */
static void check_dbrec(struct dev_fake *f, uint64_t pi)
{
	const uint8_t *b = (const uint8_t *)&f->dbrec[MLX5_SND_DBR];
	CHECK_EQ(b[0], 0);
	CHECK_EQ(b[1], 0);
	CHECK_EQ(b[2], (pi >> 8) & 0xff);
	CHECK_EQ(b[3], pi & 0xff);
	CHECK_EQ(f->dbrec[MLX5_RCV_DBR], 0); /* the receive counter is not touched */
}

static void test_db(void)
{
	struct dev_fake *f = fake_new(4, 4, GDAK_DEV_DB_DB, GDAK_DEV_EXCLUSIVE);
	struct gdak_dev_qp *qp = &f->qp;
	uint64_t idx;

	/* start near the 16-bit wrap of the record */
	qp->sq_resv = qp->sq_ready = qp->sq_done = qp->sq_db = 0xfffe;
	idx = gdak_dev_sq_reserve(qp, 1);
	gdak_dev_wqe_write(qp, idx, 0, 0x2000, 7, &sge, 1);
	gdak_dev_sq_submit(qp, idx, idx + 1);
	check_dbrec(f, 0xffff);
	CHECK_MEM(&f->db_page[0], gdak_dev_wqe_ptr(qp, idx), 8);
	CHECK_EQ(f->db_page[1], 0);
	CHECK_EQ(qp->sq_ready, 0xffff);
	CHECK_EQ(qp->sq_db, 0xffff);
	CHECK_EQ(f->proxy_pi, 0);

	/* a batch of three: the doorbell carries the LAST WQE's ctrl; the
	 * record wraps to 0x0002 */
	for (int i = 0; i < 3; i++) {
		idx = gdak_dev_sq_reserve(qp, 1);
		gdak_dev_wqe_nop(qp, idx, i == 2 ? GDAK_DEV_WQE_SIGNAL : 0);
	}
	gdak_dev_sq_submit(qp, idx, idx + 1);
	check_dbrec(f, 0x10002);
	CHECK_EQ(idx, 0x10001);
	CHECK_MEM(&f->db_page[0], gdak_dev_wqe_ptr(qp, idx), 8);
	{
		struct gdak_mlx5_ctrl c;
		gdak_mlx5_ctrl_decode((const struct mlx5_wqe_ctrl_seg *)f->db_page, &c);
		CHECK_EQ(c.wqe_index, 0x0001);
		CHECK_EQ(c.qpn, qp->qpn);
		CHECK_EQ(c.opcode, MLX5_OPCODE_NOP);
	}
	fake_free(f);
}

static void test_bf(void)
{
	struct dev_fake *f = fake_new(3, 4, GDAK_DEV_DB_BF, GDAK_DEV_EXCLUSIVE);
	struct gdak_dev_qp *qp = &f->qp;
	uint8_t data[80];
	uint64_t idx, first;
	gdak_test_fill(data, sizeof(data), 3);

	/* one single-WQEBB WQE: the whole 64 bytes go to the register */
	idx = gdak_dev_sq_reserve(qp, 1);
	gdak_dev_wqe_write_inline(qp, idx, GDAK_DEV_WQE_SIGNAL, 0x3000, 9, data, 20);
	gdak_dev_sq_submit(qp, idx, idx + 1);
	check_dbrec(f, 1);
	CHECK_MEM(f->db_page, gdak_dev_wqe_ptr(qp, idx), 64);

	/* two WQEs in one doorbell: BF only covers one, so plain DB */
	memset(f->db_page, 0, sizeof(f->db_page));
	first = gdak_dev_sq_reserve(qp, 1);
	gdak_dev_wqe_nop(qp, first, 0);
	idx = gdak_dev_sq_reserve(qp, 1);
	gdak_dev_wqe_write(qp, idx, 0, 0x4000, 1, &sge, 1);
	gdak_dev_sq_submit(qp, idx, idx + 1);
	check_dbrec(f, 3);
	CHECK_MEM(f->db_page, gdak_dev_wqe_ptr(qp, idx), 8);
	for (int i = 1; i < 8; i++)
		CHECK_EQ(f->db_page[i], 0);

	/* one WQE of two WQEBBs (80 inline bytes: 8 DS): DB too */
	memset(f->db_page, 0, sizeof(f->db_page));
	idx = gdak_dev_sq_reserve(qp, gdak_dev_wqe_bbs_inline(1, 80));
	CHECK_EQ(gdak_dev_wqe_write_inline(qp, idx, 0, 0x5000, 2, data, 80), 2);
	gdak_dev_sq_submit(qp, idx, idx + 2);
	check_dbrec(f, 5);
	CHECK_MEM(f->db_page, gdak_dev_wqe_ptr(qp, idx), 8);
	CHECK_EQ(f->db_page[1], 0);
	fake_free(f);
}

static void test_proxy(void)
{
	struct dev_fake *f = fake_new(4, 4, GDAK_DEV_DB_CPU_PROXY, GDAK_DEV_EXCLUSIVE);
	struct gdak_dev_qp *qp = &f->qp;
	uint64_t idx;

	qp->sq_resv = qp->sq_ready = qp->sq_done = 0x123456789ull;
	idx = gdak_dev_sq_reserve(qp, 1);
	gdak_dev_wqe_write(qp, idx, 0, 0x2000, 7, &sge, 1);
	gdak_dev_sq_submit(qp, idx, idx + 1);
	/* the full 64-bit index for the proxy, the record as usual, no register */
	CHECK_EQ(f->proxy_pi, 0x12345678aull);
	check_dbrec(f, 0x678a);
	for (int i = 0; i < 8; i++)
		CHECK_EQ(f->db_page[i], 0);
	fake_free(f);
}

static const struct gdak_case cases[] = { GDAK_CASE(test_db), GDAK_CASE(test_bf),
					  GDAK_CASE(test_proxy) };

int main(int argc, char **argv)
{
	return GDAK_TEST_CASES(argc, argv, cases);
}

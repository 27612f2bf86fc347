/* SPDX-License-Identifier: MIT */
/*
 * dev_recv.c - the receive side of gdak/dev/recv.h: receive WQE bytes
 * (data segments, invalid-lkey terminator), the receive doorbell record, a
 * full RQ, receive-CQ polling across wraps (SEND, SEND_IMM, WRITE_IMM),
 * a RESP_ERR CQE (sticky) and -ETIMEDOUT.
 */
#include <infiniband/mlx5dv.h>

#include "gdak_case.h"
#include "gdak_test.h"
#include "dev_fake.h"

static void test_post(void)
{
	struct dev_fake *f = fake_new(4, 3, GDAK_DEV_DB_DB, GDAK_DEV_EXCLUSIVE);
	struct gdak_dev_qp *qp = &f->qp;
	struct gdak_dev_sge s[3] = {{0x1000, 100, 7}, {0x2000, 200, 8}, {0x3000, 300, 9}};
	const struct mlx5_wqe_data_seg *d;
	struct mlx5_wqe_data_seg ref;

	CHECK_EQ(gdak_dev_recv_post(qp, s, 1), -EINVAL); /* no RQ yet */
	fake_add_rq(f, 2, 6); /* 4 WQEs of 4 segments */
	CHECK_EQ(gdak_dev_rq_max_sge(qp), 4);

	CHECK_EQ(gdak_dev_recv_post(qp, s, 2), 0);
	d = (const struct mlx5_wqe_data_seg *)gdak_dev_rwqe_ptr(qp, 0);
	mlx5dv_set_data_seg(&ref, 100, 7, 0x1000);
	CHECK_MEM(&d[0], &ref, 16);
	mlx5dv_set_data_seg(&ref, 200, 8, 0x2000);
	CHECK_MEM(&d[1], &ref, 16);
	/* shorter than max_sge: terminated by an invalid-lkey segment */
	CHECK_EQ(gdak_be32toh(d[2].lkey), MLX5_INVALID_LKEY);
	CHECK_EQ(d[2].byte_count, 0);
	CHECK_EQ(f->dbrec[MLX5_RCV_DBR], gdak_htobe32(1));
	CHECK_EQ(f->dbrec[MLX5_SND_DBR], 0);

	CHECK_EQ(gdak_dev_recv_post(qp, s, 5), -EINVAL); /* more than max_sge */
	CHECK_EQ(qp->rq_pi, 1);
	CHECK_EQ(gdak_dev_recv_post(qp, s, 3), 0);
	CHECK_EQ(gdak_dev_recv_post(qp, s, 1), 0);
	CHECK_EQ(gdak_dev_recv_post(qp, s, 1), 0);
	CHECK_EQ(gdak_dev_recv_post(qp, s, 1), -ENOBUFS); /* 4 outstanding */
	CHECK_EQ(f->dbrec[MLX5_RCV_DBR], gdak_htobe32(4));
	fake_free(f);
}

static void test_poll(void)
{
	struct dev_fake *f = fake_new(4, 2, GDAK_DEV_DB_DB, GDAK_DEV_SHARED);
	struct gdak_dev_qp *qp = &f->qp;
	struct gdak_dev_sge s = {0x1000, 64, 7};
	struct gdak_dev_cqe c = {0};
	uint64_t n = 0, bad = 0;

	fake_add_rq(f, 3, 4); /* 8 WQEs of 1 segment */
	for (uint64_t i = 0; i < 70000; i++) {
		uint8_t op = i % 3 == 0 ? MLX5_CQE_RESP_SEND
			     : i % 3 == 1 ? MLX5_CQE_RESP_SEND_IMM : MLX5_CQE_RESP_WR_IMM;
		if (gdak_dev_recv_post(qp, &s, 1) != 0)
			bad++;
		fake_cqe(&qp->rcq, n++, op, (uint16_t)i, qp->qpn, 0, 0, 0, (uint32_t)i & 0xfff,
			 (uint32_t)i * 3);
		if (gdak_dev_recv_wait_timeout(qp, &c, 10000000000ull) != 0 || c.opcode != op ||
		    c.wqe_index != i || c.byte_cnt != ((uint32_t)i & 0xfff) ||
		    (op != MLX5_CQE_RESP_SEND && c.imm != (uint32_t)i * 3))
			bad++;
	}
	CHECK_EQ(bad, 0);
	CHECK_EQ(qp->rq_done, 70000);
	CHECK_EQ(f->rcq_dbrec[0], gdak_htobe32(70000));
	CHECK_EQ(f->dbrec[MLX5_RCV_DBR], gdak_htobe32(70000 & 0xffff));
	CHECK_EQ(qp->rq_lock, 0);

	/* nothing arrives: bounded wait */
	CHECK_EQ(gdak_dev_recv_poll(qp, &c), 0);
	CHECK_EQ(gdak_dev_recv_wait_timeout(qp, &c, 1000000), -ETIMEDOUT);

	/* a responder error (e.g. a SEND longer than the receive buffer) */
	CHECK_EQ(gdak_dev_recv_post(qp, &s, 1), 0);
	fake_cqe(&qp->rcq, n++, MLX5_CQE_RESP_ERR, (uint16_t)70000, qp->qpn,
		 MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR, 0x5, MLX5_OPCODE_SEND, 0, 0);
	memset(&c, 0, sizeof(c));
	CHECK_EQ(gdak_dev_recv_wait(qp, &c), -EIO);
	CHECK_EQ(c.opcode, MLX5_CQE_RESP_ERR);
	CHECK_EQ(c.syndrome, MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR);
	CHECK_EQ(c.wqe_index, 70000);
	/* sticky */
	memset(&c, 0, sizeof(c));
	CHECK_EQ(gdak_dev_recv_wait_timeout(qp, &c, 0), -EIO);
	CHECK_EQ(c.syndrome, MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR);
	fake_free(f);
}

static const struct gdak_case cases[] = { GDAK_CASE(test_post), GDAK_CASE(test_poll) };

int main(int argc, char **argv)
{
	return GDAK_TEST_CASES(argc, argv, cases);
}
